/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ringing a device QP's doorbell: the mlx5 doorbell record and register
 * (mlx5/sq.h), then the QP's kick, which makes the software device run the
 * send queue now (a NIC watches its doorbells itself: no kick there). One
 * place for the pair, so that no post path forgets the second half.
 */
#ifndef STRAND_DEV_RING_H_
#define STRAND_DEV_RING_H_

#include "dev/dev.h"
#include "mlx5/sq.h"

/* Whether every send queue a device makes with this MMIO mode rings a
 * plain doorbell and has a kick: the software device's, whose BlueFlame
 * register takes no copy (a held queue's kick is then
 * strand_dev_qp_kick_none, never NULL). */
static inline int
strand_dev_qp_kick_db(const strand_dev_t *dev, strand_mmio_mode_t mmio_mode)
{
    return (dev->info.kind == STRAND_DEV_KIND_SIM) &&
           (mmio_mode == STRAND_MMIO_MODE_DB);
}

/* A kick that does nothing: a queue whose doorbell goes nowhere yet. */
int8_t strand_dev_qp_kick_none(void *arg);

/* The software device's kick only (after strand_sq_release, which rings
 * itself). */
static inline __attribute__((always_inline)) void
strand_dev_qp_kick(const strand_dev_qp_t *qp)
{
    if (qp->kick != NULL) {
        qp->kick(qp->kick_arg);
    }
}

/* Everything up to the producer index: ctrl is the last WQE, of bbs BBs,
 * head its bytes 0-7 as stored (the hot path has them in a register). */
static inline __attribute__((always_inline)) void
strand_dev_qp_ring_head(const strand_dev_qp_t *qp, strand_sq_t *sq,
                        const struct mlx5_wqe_ctrl_seg *ctrl, unsigned bbs,
                        uint64_t head)
{
    strand_sq_ring_head(sq, ctrl, bbs, head);
    strand_dev_qp_kick(qp);
}

/* What strand_dev_qp_ring_head_last does after the doorbell record when
 * the queue's doorbell is not a plain one (a BlueFlame copy, the record
 * only): the register, the flip, the kick. Out of line (dev.c), so that
 * the post path keeps no register for its loop. */
int8_t strand_dev_qp_ring_other(const strand_dev_qp_t *qp, strand_sq_t *sq,
                                const struct mlx5_wqe_ctrl_seg *ctrl,
                                uint64_t                        head);

/* The same as the last thing a post path does: what the kick returns (0)
 * is returned, so that the kick is a jump there (nothing lives across a
 * call: the path keeps fewer registers). kick_db: the queue is known to
 * ring a plain doorbell and to have a kick (strand_dev_qp_kick_db: a post
 * path made for it, chosen at set up), so neither is tested. */
static inline __attribute__((always_inline)) int8_t
strand_dev_qp_ring_head_last(const strand_dev_qp_t *qp, strand_sq_t *sq,
                             const struct mlx5_wqe_ctrl_seg *ctrl,
                             uint64_t head, int kick_db)
{
    strand_sq_ring_record(sq);
    if (kick_db) {
        sq->rung = sq->cur_post;
        strand_sq_doorbell_head(sq->bf->cur, head);
        strand_bf_flip(sq->bf);
        return qp->kick(qp->kick_arg);
    }
    if (__builtin_expect(sq->ring != STRAND_SQ_RING_DB, 0)) {
        return strand_dev_qp_ring_other(qp, sq, ctrl, head);
    }
    sq->rung = sq->cur_post;
    strand_sq_doorbell_head(sq->bf->cur, head);
    strand_bf_flip(sq->bf);
    return (qp->kick != NULL) ? qp->kick(qp->kick_arg) : 0;
}

/* The same, the head read from ctrl. */
static inline __attribute__((always_inline)) void
strand_dev_qp_ring(const strand_dev_qp_t *qp, strand_sq_t *sq,
                   const struct mlx5_wqe_ctrl_seg *ctrl, unsigned bbs)
{
    strand_sq_ring(sq, ctrl, bbs);
    strand_dev_qp_kick(qp);
}

#endif
