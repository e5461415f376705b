/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send queue (a transport's QP: a DCI, an RC QP): building and posting
 * WQEs, tracking every outstanding WQE until its CQE (in any order across
 * lanes), and the state of its lanes. Which endpoint posts on which queue
 * and lane is the transport's business (strand_tl_ops_t); what happens
 * after an error CQE is recovery.c's.
 */
#ifndef STRAND_TXQ_H_
#define STRAND_TXQ_H_

#include "iface.h"
#include "mlx5/wqe.h"
#include "dev/dev_ring.h"
#include "mlx5/sq.h"
#include "mlx5/cqe.h"
#include "mlx5/wqe_dump.h"

#include <ucs/datastruct/queue_types.h>
#include <ucs/datastruct/string_buffer.h>

static UCS_F_ALWAYS_INLINE unsigned
strand_txq_outstanding(const strand_txq_t *txq)
{
    return txq->outstanding;
}

/* The free BBs of the SQ: from the producer index up to the oldest WQE
 * not retired (derived: a post counts none). */
static UCS_F_ALWAYS_INLINE uint32_t strand_txq_avail_bbs(const strand_txq_t *txq)
{
    return txq->sq.wqe_cnt - (txq->sq.cur_post - txq->sq_tail);
}

/* Room for one more WQE of any size: a WQE of the largest size fits in
 * the free BBs and the WQE count allows one more. */
static UCS_F_ALWAYS_INLINE int
strand_txq_has_room(const strand_iface_t *iface, const strand_txq_t *txq)
{
    return (strand_txq_avail_bbs(txq) >= iface->config.txq_max_bbs) &&
           (txq->outstanding < iface->config.tx_queue_len);
}

/* Where a WQE posted the fast way may end (its producer index after it)
 * at most: fast_end. room_pi is set where a WQE retires or the tail moves
 * (strand_txq_set_room) and stays right while WQEs are posted: each
 * takes a BB at least, so the count cannot pass the bound before the
 * index does. It is never too high; past it a post looks at the queue
 * (has_room). fast_end is the lower of room_pi + 1 and ring_end, the end
 * of the ring the producer index was in when a short post last looked (a
 * general one, or the queue's set up): a WQE that ends before it neither
 * lacks room nor wraps, so a short post checks both in one compare, which
 * also leaves the WQE's segments one block of memory. */
static UCS_F_ALWAYS_INLINE void strand_txq_fast_end_from_room(strand_txq_t *txq)
{
    uint32_t room = txq->room_pi + 1;

    txq->fast_end = ((int32_t)(txq->ring_end - room) < 0) ? txq->ring_end :
                                                            room;
}

/* The same with ring_end the end of the producer index's ring now. */
static UCS_F_ALWAYS_INLINE void strand_txq_set_fast_end(strand_txq_t *txq)
{
    txq->ring_end = (txq->sq.cur_post + txq->sq.wqe_cnt) &
                    ~(txq->sq.wqe_cnt - 1);
    strand_txq_fast_end_from_room(txq);
}

/* Whether a WQE at the producer index that ends at `end` may be posted
 * the fast way. The producer index may have passed the end of the ring
 * fast_end was set in since (by posts the general way): then no WQE
 * passes until a short post the general way sets it again (once a
 * ring). */
static UCS_F_ALWAYS_INLINE int
strand_txq_fast_room(const strand_txq_t *txq, uint32_t end)
{
    return (int32_t)(txq->fast_end - end) >= 0;
}

/* The endpoint's address vector behind the ctrl segment at ctrl (ctrl and
 * AV fit the first BB: never wrapped); av_ds 0: an RC QP, whose WQEs name
 * no destination. */
static UCS_F_ALWAYS_INLINE void
strand_txq_set_av(struct mlx5_wqe_ctrl_seg *ctrl, const struct mlx5_wqe_av *av,
                  unsigned av_ds)
{
    if (ucs_likely(av_ds == 1)) {
        memcpy(ctrl + 1, av, STRAND_AV_BASE_SIZE);
    } else if (av_ds == 3) {
        memcpy(ctrl + 1, av, STRAND_AV_FULL_SIZE);
    }
}

/* The ctrl segment of the next WQE, with the endpoint's address vector
 * right behind it. */
static UCS_F_ALWAYS_INLINE struct mlx5_wqe_ctrl_seg *
strand_txq_wqe_start(strand_txq_t *txq, const struct mlx5_wqe_av *av,
                     unsigned av_ds, void **next_seg)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_ctrl(&txq->sq);

    strand_txq_set_av(ctrl, av, av_ds);
    *next_seg = strand_sq_seg_next(&txq->sq, ctrl + 1, av_ds * STRAND_WQE_DS);
    return ctrl;
}

/* The WQE at ctrl in the trace log (UCX's TRACE_DATA level, as UCX's own
 * transports log what they post; compiled out where UCX's log level stops
 * below it, as with this UCX). */
static UCS_F_ALWAYS_INLINE void
strand_txq_log_tx(strand_txq_t *txq, const struct mlx5_wqe_ctrl_seg *ctrl,
                  unsigned av_ds)
{
    char buf[256];

    if (ucs_log_is_enabled(UCS_LOG_LEVEL_TRACE_DATA)) {
        ucs_trace_data("TX queue %u %s", txq->index,
                       strand_wqe_dump(ctrl, txq->sq.buf, txq->sq.end, av_ds,
                                       buf, sizeof(buf)));
    }
}

/* Ring the doorbell for everything up to the producer index (ctrl: the
 * last WQE, of bbs BBs, its bytes 0-7 as stored in head) and hand the SQ
 * to the device. */
static UCS_F_ALWAYS_INLINE void
strand_txq_ring_head(strand_txq_t *txq, struct mlx5_wqe_ctrl_seg *ctrl,
                     unsigned bbs, uint64_t head)
{
    strand_dev_qp_ring_head(&txq->qp, &txq->sq, ctrl, bbs, head);
}

/* The same as the last thing a post path does: returns UCS_OK, the kick
 * of a software device a jump (strand_dev_qp_ring_head_last; kick_db: a
 * path for queues that ring a plain doorbell and have a kick). */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_txq_ring_head_last(strand_txq_t *txq, struct mlx5_wqe_ctrl_seg *ctrl,
                          uint64_t head, int kick_db)
{
    strand_debug_assert(!kick_db || ((txq->sq.ring == STRAND_SQ_RING_DB) &&
                                     (txq->qp.kick != NULL)));
    return (ucs_status_t)strand_dev_qp_ring_head_last(&txq->qp, &txq->sq, ctrl,
                                                      head, kick_db);
}

static UCS_F_ALWAYS_INLINE void
strand_txq_ring(strand_txq_t *txq, struct mlx5_wqe_ctrl_seg *ctrl, unsigned bbs)
{
    uint64_t head;

    memcpy(&head, ctrl, sizeof(head));
    strand_txq_ring_head(txq, ctrl, bbs, head);
}

/* Where the WQE at the producer index goes: its ctrl segment and its
 * index. Taken once, before the WQE's bytes are written: the compiler
 * would read the queue's fields again after every byte stored. */
typedef struct strand_txq_slot {
    struct mlx5_wqe_ctrl_seg *ctrl;
    uint32_t                  pi;
} strand_txq_slot_t;

_Static_assert(sizeof(strand_op_t) == STRAND_WQE_BB,
               "an op record is as large as a BB");

static UCS_F_ALWAYS_INLINE void
strand_txq_slot(const strand_txq_t *txq, strand_txq_slot_t *slot)
{
    slot->pi   = txq->sq.cur_post;
    slot->ctrl = strand_sq_ctrl(&txq->sq);
}

/* The op record of the WQE in slot. */
static UCS_F_ALWAYS_INLINE strand_op_t *
strand_txq_slot_op(const strand_txq_t *txq, const strand_txq_slot_t *slot)
{
    return (strand_op_t *)((uintptr_t)slot->ctrl + txq->op_delta);
}

/* The WQE at the producer index pi (written by the caller) takes bbs BBs
 * of the SQ and counts as outstanding. */
static UCS_F_ALWAYS_INLINE void
strand_txq_take(strand_txq_t *txq, uint32_t pi, unsigned bbs)
{
    strand_sq_advance_from(&txq->sq, pi, bbs);
    txq->outstanding++;
}

/* The op record's lane, type, state and opcode as its kind word. */
static UCS_F_ALWAYS_INLINE uint32_t strand_op_kind(uint8_t lane, uint8_t type,
                                                   uint8_t state,
                                                   uint8_t opcode)
{
    strand_op_t op;

    op.lane   = lane;
    op.type   = type;
    op.state  = state;
    op.opcode = opcode;
    return op.kind;
}

/* The kind word of a posted short operation on lane (the ep's template
 * of it: opcode 0). */
static UCS_F_ALWAYS_INLINE uint32_t strand_op_light_kind(uint8_t lane,
                                                         uint8_t opcode)
{
    return strand_op_kind(lane, STRAND_OP_LIGHT, STRAND_OP_POSTED, opcode);
}

/* A WQE whose completion only counts: the head of its record; kind:
 * strand_op_light_kind(). */
static UCS_F_ALWAYS_INLINE void
strand_txq_claim_light(strand_txq_t *txq, const strand_txq_slot_t *slot,
                       unsigned bbs, struct strand_ep *ep, uint32_t kind)
{
    strand_op_t *op = strand_txq_slot_op(txq, slot);

    op->wqe_idx = (uint16_t)slot->pi;
    op->bbs     = bbs;
    op->kind    = kind;
    op->ep      = ep;
    strand_txq_take(txq, slot->pi, bbs);
}

/* A WQE with work at its completion: the whole record, from op_in (its
 * ep, stream, opcode and what to do), at the producer index. Returns the
 * op slot. */
static UCS_F_ALWAYS_INLINE strand_op_t *
strand_txq_claim(strand_txq_t *txq, unsigned bbs, const strand_op_t *op_in)
{
    strand_txq_slot_t slot;
    strand_op_t      *op;

    strand_txq_slot(txq, &slot);
    op          = strand_txq_slot_op(txq, &slot);
    *op         = *op_in;
    op->wqe_idx = (uint16_t)slot.pi;
    op->bbs     = bbs;
    op->state   = STRAND_OP_POSTED;
    strand_txq_take(txq, slot.pi, bbs);
    return op;
}

/* Whether the WQE being posted asks for a CQE: every tx_moderation-th
 * one; one that carries work for its completion always (moderation only
 * spares the CQEs no one waits for). A CQE retires every WQE before it
 * (CQEs come in SQ order), so an unsignaled WQE completes with the next
 * signaled one; the queue never fills up with unsignaled WQEs because
 * tx_moderation is at most a quarter of it. Counted down, so that the
 * common case is one decrement. */
static UCS_F_ALWAYS_INLINE uint8_t strand_txq_ce(strand_txq_t *txq, int must)
{
    if (must || (--txq->ce_countdown == 0)) {
        txq->ce_countdown = txq->moderation;
        return MLX5_WQE_CTRL_CQ_UPDATE;
    }
    return 0;
}

/* WQEs posted on txq since the last one that asked for a CQE. */
static UCS_F_ALWAYS_INLINE unsigned
strand_txq_unsignaled(const strand_txq_t *txq)
{
    return txq->moderation - txq->ce_countdown;
}

/* ------------------------------------------- an endpoint on its queue */

/* Ctrl bytes 8-15 of ep's WQEs on txq with fm_ce_se and imm (as the WQE
 * carries it, network order): ep's stream id, from its readiness when it
 * is ready. */
static UCS_F_ALWAYS_INLINE uint64_t strand_ep_ctrl_tail(const strand_ep_t  *ep,
                                                        const strand_txq_t *txq,
                                                        uint8_t  fm_ce_se,
                                                        uint32_t imm)
{
    return strand_ctrl_tail(txq->lanes[ep->lane].id, fm_ce_se, imm);
}

/* The send queue of ep's lease when it may post on it now: leased, room in
 * the SQ, its lane healthy, nothing of ep waiting to be posted again, not
 * moving to another queue, and its quota (the transport's, where it has
 * one) left while others wait. */
static UCS_F_ALWAYS_INLINE strand_txq_t *
strand_ep_txq_ready(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *txq;

    if (ucs_unlikely(ep->txq == STRAND_TXQ_NONE)) {
        return NULL;
    }
    txq = &iface->txqs[ep->txq];
    if (ucs_unlikely(!strand_txq_has_room(iface, txq) ||
                     (txq->lanes[ep->lane].state != STRAND_LANE_OK) ||
                     (txq->state != STRAND_TXQ_ACTIVE) || (ep->held > 0) ||
                     (ep->flags & STRAND_EP_FLAG_MOVING) ||
                     (iface->txq_wanted &&
                      (iface->tl->sq_quota_spent != NULL) &&
                      iface->tl->sq_quota_spent(iface, txq)))) {
        return NULL;
    }
    return txq;
}

#endif
