/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send queue of one QP as the poster sees it: geometry, producer index,
 * ctrl segment, doorbell record and the MMIO write that tells the device.
 * Every queue that posts uses it: the transport's DCIs and tag-matching
 * command QP, and the software device's own verbs-like provider (its
 * ibv_post_send and its rendezvous DCI). Plain C, no UCX or software-device
 * types.
 *
 * Geometry (spec section 1): wqe_cnt (a power of two) 64-byte basic blocks
 * (BB); the producer index is a free-running BB counter; a WQE starts at BB
 * (pi & (wqe_cnt - 1)), its ctrl segment (and a DC address vector) never
 * wrap, later segments may continue at BB 0.
 *
 * MMIO (how the doorbell reaches the device, as UCX's UCX_IB_MLX5_MMIO_MODE):
 *   db       the doorbell record, then one 8-byte store of the last WQE's
 *            ctrl bytes 0-7 to the BlueFlame register (a plain doorbell);
 *   bf_post  the doorbell record, then the last WQE itself copied into the
 *            BlueFlame buffer when it is the only one since the last
 *            doorbell and at most a half's size (the device can take it
 *            without reading host memory; with more, it must read them:
 *            rdma-core copies only then too), else as db;
 * either way the next doorbell, of whichever QP, goes to the register's
 * other half: the halves belong to the register (strand_bf_t), which every
 * QP that rings it shares, as rdma-core's struct mlx5_bf and UCX's mmio
 * register object are. Without a register (bf NULL) only the record is
 * written.
 *
 * A debug build (STRAND_DEBUG) checks the queue's state on every post and
 * doorbell: a WQE whose index is not the producer index, a ds out of range,
 * more BBs posted than the queue holds, a doorbell with nothing new.
 */
#ifndef STRAND_MLX5_SQ_H_
#define STRAND_MLX5_SQ_H_

#include "mlx5/barrier.h"
#include "mlx5/doorbell.h"
#include "mlx5/wqe.h"

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef STRAND_DEBUG
#include <stdio.h>
#include <stdlib.h>
#endif

typedef enum strand_mmio_mode {
    STRAND_MMIO_MODE_DB,      /* 8-byte doorbell write */
    STRAND_MMIO_MODE_BF_POST, /* small WQEs copied to the BF buffer */
    STRAND_MMIO_MODE_AUTO,    /* resolved at init: BF_POST where there is
                                 a register of at least one BB */
    STRAND_MMIO_MODE_LAST
} strand_mmio_mode_t;

/* How strand_sq_ring reaches the device, resolved from the MMIO mode and
 * the register at init (one compare on the hot path). */
enum {
    STRAND_SQ_RING_DB,      /* record, 8-byte register write */
    STRAND_SQ_RING_BF_POST, /* record, the WQE into the BF buffer */
    STRAND_SQ_RING_RECORD   /* no register: the record only */
};

/*
 * A BlueFlame register as every QP that rings it shares it: its two halves
 * alternate per register, whichever QP writes (a half is written again
 * only after the other was: the device may still be reading it). Whoever
 * rings it serialises (one thread per register, as a thread domain gives;
 * rdma-core locks a shared one).
 */
typedef struct strand_bf {
    void     *reg;  /* the register: two halves of `size` bytes */
    void     *cur;  /* the half the next doorbell goes to */
    uintptr_t flip; /* cur ^ flip: the other half */
    uint32_t  size;
} strand_bf_t;

static inline void strand_bf_init(strand_bf_t *bf, void *reg, uint32_t size)
{
    bf->reg  = reg;
    bf->cur  = reg;
    bf->size = size;
    bf->flip = (uintptr_t)reg ^ ((uintptr_t)reg + size);
}

/* The offset of the half the next doorbell goes to: 0 or size. */
static inline uint32_t strand_bf_offset(const strand_bf_t *bf)
{
    return (uint32_t)((uintptr_t)bf->cur - (uintptr_t)bf->reg);
}

/* The doorbell's last step: the register's next one goes to the other
 * half. */
static inline void strand_bf_flip(strand_bf_t *bf)
{
    bf->cur = (void *)((uintptr_t)bf->cur ^ bf->flip);
}

/* The whole sequence with a plain doorbell through the register bf (what
 * the send queue object does; tests that build WQEs by hand use this): the
 * producer index cur_post into the record, ctrl bytes 0-7 into the
 * register's half, the flip. bf NULL: the record only. */
static inline void strand_bf_ring_doorbell(__be32 *dbrec, strand_bf_t *bf,
                                           uint32_t cur_post, const void *ctrl)
{
    uint64_t head;

    strand_sq_doorbell_record(dbrec, cur_post);
    if (bf != NULL) {
        memcpy(&head, ctrl, sizeof(head));
        strand_sq_doorbell_head(bf->cur, head);
        strand_bf_flip(bf);
    }
}

typedef struct strand_sq {
    void        *buf;      /* BB 0 */
    void        *end;      /* one past the last BB */
    uint32_t     wqe_cnt;  /* BBs, a power of two */
    uint32_t     buf_mask; /* wqe_cnt * 64 - 1: (pi * 64) & buf_mask is
                              where BB pi starts */
    uint32_t     cur_post; /* producer index: free-running BB counter */
    uint32_t     qpn;
    uint32_t     rung;      /* cur_post at the last doorbell */
    uint64_t     head_qpn;  /* strand_ctrl_head_qpn(qpn) */
    uint8_t      mmio_mode; /* STRAND_MMIO_MODE_DB or _BF_POST */
    uint8_t      ring;      /* STRAND_SQ_RING_* */
    __be32      *dbrec;     /* [MLX5_SND_DBR] is the producer index */
    strand_bf_t *bf;        /* its register, shared with the QPs that ring
                               it; NULL: record only */
} strand_sq_t;

#ifdef STRAND_DEBUG
#define strand_sq_check(_cond, _sq, _what)                               \
    do {                                                                 \
        if (!(_cond)) {                                                  \
            fprintf(stderr,                                              \
                    "strand: send queue of QP 0x%x: %s "                 \
                    "(producer index %u, %u BBs)\n",                     \
                    (_sq)->qpn, _what, (_sq)->cur_post, (_sq)->wqe_cnt); \
            abort();                                                     \
        }                                                                \
    } while (0)
#else
#define strand_sq_check(_cond, _sq, _what) \
    do {                                   \
    } while (0)
#endif

/*
 * Take over the queue rdma-core (or the software device) describes in dv,
 * at producer index 0 (a fresh QP, or one back from RESET: the device
 * starts again at WQE 0), ringing the register bf (the one dv names, as
 * its owner shares it: dv->bf.reg; NULL when dv has none).
 */
static inline void strand_sq_init(strand_sq_t *sq, const struct mlx5dv_qp *dv,
                                  uint32_t qpn, strand_mmio_mode_t mode,
                                  strand_bf_t *bf)
{
    sq->buf      = dv->sq.buf;
    sq->wqe_cnt  = dv->sq.wqe_cnt;
    sq->buf_mask = dv->sq.wqe_cnt * STRAND_WQE_BB - 1;
    sq->end      = strand_sq_end(sq->buf, sq->wqe_cnt);
    sq->cur_post = 0;
    sq->rung     = 0;
    sq->qpn      = qpn;
    sq->head_qpn = strand_ctrl_head_qpn(qpn);
    sq->dbrec    = dv->dbrec;
    sq->bf       = (dv->bf.reg != NULL) ? bf : NULL;
    if (mode == STRAND_MMIO_MODE_AUTO) {
        mode = ((sq->bf != NULL) && (sq->bf->size >= STRAND_WQE_BB)) ?
                       STRAND_MMIO_MODE_BF_POST :
                       STRAND_MMIO_MODE_DB;
    }
    sq->mmio_mode = (uint8_t)mode;
    if (sq->bf == NULL) {
        sq->ring = STRAND_SQ_RING_RECORD;
    } else {
        sq->ring = (mode == STRAND_MMIO_MODE_BF_POST) ? STRAND_SQ_RING_BF_POST :
                                                        STRAND_SQ_RING_DB;
    }
}

/* The offset in the register of the next doorbell: 0 or the half's size
 * (0 without a register). */
static inline uint32_t strand_sq_bf_offset(const strand_sq_t *sq)
{
    return (sq->bf != NULL) ? strand_bf_offset(sq->bf) : 0;
}

/* The ctrl segment of the next WQE (at the producer index). */
static inline struct mlx5_wqe_ctrl_seg *strand_sq_ctrl(const strand_sq_t *sq)
{
    return (struct mlx5_wqe_ctrl_seg *)((uint8_t *)sq->buf +
                                        (((size_t)sq->cur_post * STRAND_WQE_BB) &
                                         sq->buf_mask));
}

/* BB n of the queue (n free-running). */
static inline void *strand_sq_at(const strand_sq_t *sq, uint32_t n)
{
    return strand_sq_bb(sq->buf, sq->wqe_cnt, n);
}

/* The segment after one of `size` bytes at seg, wrapping at the end. */
static inline void *
strand_sq_seg_next(const strand_sq_t *sq, void *seg, size_t size)
{
    return strand_sq_next(seg, size, sq->buf, sq->end);
}

/* Ctrl bytes 0-7 of the WQE at the producer index pi, as stored
 * (strand_ctrl_head: its index, the QP number; ds in range, checked by
 * debug builds). */
static inline uint64_t strand_sq_ctrl_head(const strand_sq_t *sq, uint32_t pi,
                                           uint8_t opmod, uint8_t opcode,
                                           unsigned ds)
{
    strand_sq_check((ds > 0) && (ds <= 0x3f), sq, "ds out of range");
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    return strand_ctrl_head_of(sq->head_qpn, opmod, (uint16_t)pi, opcode, ds);
}

/* The same from the operation's part made beforehand
 * (strand_ctrl_head_op). */
static inline uint64_t
strand_sq_ctrl_head_with(const strand_sq_t *sq, uint32_t pi, uint64_t op_head)
{
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    return strand_ctrl_head_idx(sq->head_qpn, (uint16_t)pi) | op_head;
}

/* The ctrl segment of the WQE at ctrl, the producer index's, from its
 * two words (strand_sq_ctrl_head, strand_ctrl_tail). */
static inline void strand_sq_write_ctrl(const strand_sq_t        *sq,
                                        struct mlx5_wqe_ctrl_seg *ctrl,
                                        uint64_t head, uint64_t tail)
{
    strand_sq_check(ctrl == strand_sq_ctrl(sq), sq,
                    "WQE not at the producer index");
    strand_set_ctrl_words(ctrl, head, tail);
}

/* The ctrl segment of the WQE at the producer index (its index, the QP
 * number, ds, fence/completion/solicited flags, immediate as given; DCI
 * stream 0). */
static inline void
strand_sq_set_ctrl(const strand_sq_t *sq, struct mlx5_wqe_ctrl_seg *ctrl,
                   uint8_t opmod, uint8_t opcode, unsigned ds, uint8_t fm_ce_se,
                   uint32_t imm_be)
{
    strand_sq_write_ctrl(sq, ctrl,
                         strand_sq_ctrl_head(sq, sq->cur_post, opmod, opcode,
                                             ds),
                         strand_ctrl_tail(0, fm_ce_se, imm_be));
}

/* The WQE at the producer index pi (the caller has it at hand) is
 * written: it takes its BBs. */
static inline void
strand_sq_advance_from(strand_sq_t *sq, uint32_t pi, unsigned bbs)
{
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    /* ds <= 63: a WQE is at most 16 BBs */
    strand_sq_check((bbs > 0) && (bbs <= 16), sq, "WQE of more than 16 BBs");
    sq->cur_post = pi + bbs;
    strand_sq_check(sq->cur_post - sq->rung <= sq->wqe_cnt, sq,
                    "more BBs posted since the last doorbell than the queue "
                    "holds");
}

static inline void strand_sq_advance(strand_sq_t *sq, unsigned bbs)
{
    strand_sq_advance_from(sq, sq->cur_post, bbs);
}

/* Copy the WQE at ctrl (bbs BBs, wrapping) to the register's half in
 * 8-byte stores, as write-combining memory takes them. */
static inline void strand_sq_bf_copy(const strand_sq_t              *sq,
                                     const struct mlx5_wqe_ctrl_seg *ctrl,
                                     unsigned                        bbs)
{
    volatile uint64_t *dst = (volatile uint64_t *)sq->bf->cur;
    const uint8_t     *src = (const uint8_t *)(const void *)ctrl;
    unsigned           i, n;
    uint64_t           v;

    for (n = 0; n < bbs; ++n) {
        for (i = 0; i < STRAND_WQE_BB; i += sizeof(v)) {
            memcpy(&v, src + i, sizeof(v));
            *dst++ = v;
        }
        src = (const uint8_t *)strand_sq_wrap((uint8_t *)src + STRAND_WQE_BB,
                                              sq->buf, sq->end);
    }
}

/* The doorbell's first steps: the producer index into the record. */
static inline void strand_sq_ring_record(strand_sq_t *sq)
{
    strand_sq_check(sq->cur_post != sq->rung, sq, "doorbell with no new WQE");
    strand_sq_doorbell_record(sq->dbrec, sq->cur_post);
}

/* The doorbell covers every WQE up to the producer index; whether the
 * last one (last_bbs BBs) is the only one since the last doorbell (then a
 * BlueFlame copy may carry it). */
static inline int strand_sq_rung(strand_sq_t *sq, unsigned last_bbs)
{
    int single = (sq->cur_post - sq->rung) == last_bbs;

    sq->rung = sq->cur_post;
    return single;
}

/* The doorbell other than a plain one: the WQE into the register (when it
 * is the only new one and fits a half, else as a plain one), or no
 * register at all. The half flips. */
static inline void strand_sq_ring_bf(strand_sq_t                    *sq,
                                     const struct mlx5_wqe_ctrl_seg *ctrl,
                                     unsigned last_bbs, uint64_t head)
{
    int single = strand_sq_rung(sq, last_bbs);

    if (sq->ring == STRAND_SQ_RING_RECORD) {
        return;
    }
    if (single && (last_bbs * STRAND_WQE_BB <= sq->bf->size)) {
        strand_sq_bf_copy(sq, ctrl, last_bbs);
        strand_mmio_wmb();
    } else {
        strand_sq_doorbell_head(sq->bf->cur, head);
    }
    strand_bf_flip(sq->bf);
}

/*
 * Tell the device about every WQE up to the producer index; ctrl is the
 * last one's, last_bbs its size, head its bytes 0-7 as stored (what a
 * plain doorbell writes: the caller has them in a register). Order (spec
 * section 1): the WQE stores before the doorbell record, the record
 * before the register write.
 */
static inline void strand_sq_ring_head(strand_sq_t                    *sq,
                                       const struct mlx5_wqe_ctrl_seg *ctrl,
                                       unsigned last_bbs, uint64_t head)
{
    strand_sq_ring_record(sq);
    if (__builtin_expect(!sq->ring, 1)) { /* STRAND_SQ_RING_DB */
        sq->rung = sq->cur_post;
        strand_sq_doorbell_head(sq->bf->cur, head);
        strand_bf_flip(sq->bf);
    } else {
        strand_sq_ring_bf(sq, ctrl, last_bbs, head);
    }
}

/*
 * A queue whose device does not take work yet (an RC QP before it is
 * connected): WQEs are written and "rung" as always, but the doorbell
 * record and the register writes go to `held` (its scratch record and
 * register, STRAND_SQ_HOLD_SIZE bytes, 64-byte aligned), so the device
 * hears of nothing. strand_sq_release then points the queue back at the
 * device's record and the shared register and rings once for every WQE
 * held: 1 when there were any (a software device is then kicked), else 0.
 */
#define STRAND_SQ_HOLD_SIZE (64 + 2 * 64)

typedef struct strand_sq_held {
    strand_bf_t  bf;     /* the scratch register */
    __be32      *dbrec;  /* the device's record */
    strand_bf_t *dev_bf; /* the device's register */
} strand_sq_held_t;

static inline void
strand_sq_hold(strand_sq_t *sq, strand_sq_held_t *held, void *scratch)
{
    memset(scratch, 0, STRAND_SQ_HOLD_SIZE);
    held->dbrec  = sq->dbrec;
    held->dev_bf = sq->bf;
    sq->dbrec    = (__be32 *)scratch;
    if (sq->bf != NULL) {
        strand_bf_init(&held->bf, (uint8_t *)scratch + 64, 64);
        sq->bf = &held->bf;
    }
}

static inline int strand_sq_release(strand_sq_t *sq, strand_sq_held_t *held)
{
    uint64_t head = 0;
    int      any  = (sq->dbrec[MLX5_SND_DBR] != 0);

    if (any && (sq->bf != NULL)) {
        /* the last doorbell's head: in the half before the current one */
        memcpy(&head, (void *)((uintptr_t)sq->bf->cur ^ sq->bf->flip),
               sizeof(head));
    }
    sq->dbrec = held->dbrec;
    sq->bf    = held->dev_bf;
    if (!any) {
        return 0;
    }
    sq->rung = sq->cur_post;
    strand_sq_doorbell_record(sq->dbrec, sq->cur_post);
    if (sq->bf != NULL) {
        strand_sq_doorbell_head(sq->bf->cur, head);
        strand_bf_flip(sq->bf);
    }
    return 1;
}

/* The same, the head read from ctrl. */
static inline void strand_sq_ring(strand_sq_t                    *sq,
                                  const struct mlx5_wqe_ctrl_seg *ctrl,
                                  unsigned                        last_bbs)
{
    uint64_t head;

    memcpy(&head, ctrl, sizeof(head));
    strand_sq_ring_head(sq, ctrl, last_bbs, head);
}

#endif
