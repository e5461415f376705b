/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send queues of an interface (txq.h): slots set up, QPs attached and
 * detached, doorbells held, geometry and moderation, the NOP that asks for
 * a CQE, the state shown in the VFS. Completions are tx_cqe.c's and
 * op_done.c's, states txq_state.c's (the eps leasing a queue follow them).
 */
#ifndef STRAND_TXQ_POOL_H_
#define STRAND_TXQ_POOL_H_

#include "txq.h"

ucs_status_t strand_txq_pool_init(strand_iface_t *iface);
void         strand_txq_pool_cleanup(strand_iface_t *iface);
void strand_tmp_reg_release(strand_iface_t *iface, strand_tmp_reg_t *reg);
int  strand_txq_pool_busy(strand_iface_t *iface);
/* The pool's state, one line per send queue and the free stack, and whether its
 * invariants hold (VFS file dci_pool or qp_pool, names.sq_vfs; tests
 * read it). */
void strand_txq_pool_show(strand_iface_t *iface, ucs_string_buffer_t *strb);

/* A slot of the pool, index i: streams, no QP yet. */
ucs_status_t
strand_txq_slot_init(strand_iface_t *iface, strand_txq_t *txq, unsigned i);

/* Doorbells held: WQEs posted on txq wait in its queue, the device not
 * told (a QP whose connection is not made yet); abort: they will not run,
 * to ERR, each comes back flushed (go, abort: ep_pending.h). */
ucs_status_t strand_txq_hold(strand_iface_t *iface, strand_txq_t *txq);
/* the device hears of every WQE held (a connected QP executes them, one in
 * ERR flushes them) */
void strand_txq_unhold(strand_iface_t *iface, strand_txq_t *txq);

/* A QP the slot txq holds (txq->qp, created by the caller): known by its
 * number, its send queue taken over; detach destroys it. */
ucs_status_t strand_txq_attach_qp(strand_iface_t *iface, strand_txq_t *txq);
void         strand_txq_detach_qp(strand_iface_t *iface, strand_txq_t *txq);

/* the SQ geometry of a fresh (or reset) send queue */
void strand_txq_geometry(strand_iface_t *iface, strand_txq_t *txq);
/* the WQE at wqe_idx in the debug log */
void strand_txq_log_wqe(strand_txq_t *txq, uint16_t wqe_idx);
/* the operation of WQE index wqe_idx (NULL: none outstanding there) */
static UCS_F_ALWAYS_INLINE strand_op_t *
strand_txq_op(strand_txq_t *txq, uint16_t wqe_idx)
{
    strand_op_t *op = &txq->ops[wqe_idx & (txq->sq.wqe_cnt - 1)];

    return ((op->state == STRAND_OP_POSTED) && (op->wqe_idx == wqe_idx)) ? op :
                                                                           NULL;
}

/* The send queue of QP number qpn (NULL: none of this interface's): the
 * direct-mapped hints first, then the hash. */
static UCS_F_ALWAYS_INLINE strand_txq_t *
strand_txq_by_qpn(strand_iface_t *iface, uint32_t qpn)
{
    const strand_txq_hint_t *hint = &iface->txq_hints[qpn % STRAND_TXQ_HINTS];
    khiter_t                 it;

    if (ucs_likely(hint->qpn == qpn)) {
        return hint->txq;
    }
    it = kh_get(strand_txq_qpn, &iface->txq_by_qpn, qpn);
    return (it == kh_end(&iface->txq_by_qpn)) ?
                   NULL :
                   &iface->txqs[kh_value(&iface->txq_by_qpn, it)];
}

/* WQEs of stream `stream` outstanding on txq (a walk over the SQ: only
 * recovery and the VFS ask, the post path counts per send queue only). */
unsigned strand_txq_lane_outstanding(const strand_txq_t *txq, unsigned stream);

/* The last WQE posted on txq asked for no CQE, and something waits for
 * the WQEs before it (a flush, an endpoint wanting a send queue): post a
 * signaled NOP behind them. UCS_OK, or UCS_ERR_NO_RESOURCE when the send queue
 * cannot take it now (full: its CQEs are due anyway; recovering). */
ucs_status_t strand_txq_signal_tail(strand_iface_t *iface, strand_txq_t *txq);
/* The same for every send queue (an iface flush, eps waiting for a send queue): a send queue
 * that is full or recovering has CQEs to come anyway. */
void strand_txq_signal_tails(strand_iface_t *iface);

/* room_pi (and fast_end: strand_txq_fast_room): the last producer index at which a
 * WQE of the largest size fits, and at which the WQEs posted from now on
 * (a BB each at least) leave the count below tx_queue_len. */
static UCS_F_ALWAYS_INLINE void
strand_txq_set_room(strand_iface_t *iface, strand_txq_t *txq)
{
    uint32_t bbs_pi = txq->sq_tail + txq->sq.wqe_cnt -
                      iface->config.txq_max_bbs;
    uint32_t wqes_pi = txq->sq.cur_post +
                       (iface->config.tx_queue_len - txq->outstanding) - 1;

    txq->room_pi = ((int32_t)(wqes_pi - bbs_pi) < 0) ? wqes_pi : bbs_pi;
    strand_txq_fast_end_from_room(txq);
    strand_iface_tx_beat(iface);
}

/* The SQ's free space grows only from its oldest WQE: retired slots after
 * a WQE still outstanding (another stream) wait for it. */
static UCS_F_ALWAYS_INLINE void
strand_txq_advance_tail_inline(strand_iface_t *iface, strand_txq_t *txq)
{
    uint32_t           tail = txq->sq_tail;
    const strand_op_t *op;

    while (tail != txq->sq.cur_post) {
        op = &txq->ops[tail & (txq->sq.wqe_cnt - 1)];
        if (op->state != STRAND_OP_FREE) {
            break;
        }
        tail += op->bbs;
    }
    txq->sq_tail = tail;
    strand_txq_set_room(iface, txq);
}

/* what a retired operation holds goes back (descriptor, registrations) */
void strand_op_release(strand_iface_t *iface, strand_op_t *op);
/* the oldest WQE not retired moved: room up to the new tail */
void strand_txq_advance_tail(strand_iface_t *iface, strand_txq_t *txq);

#endif
