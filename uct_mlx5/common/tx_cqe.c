/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send completions: the send CQs polled, each CQE matched to its send
 * queue by QP number and to its WQE by counter (CQEs of different lanes
 * may come in any order), the WQEs before it retired, an error handed to
 * recovery.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "tx_cqe.h"
#include "op_done.h"
#include "ep_fail.h"
#include "ep_pending.h"
#include "recovery.h"
#include "event.h"
#include "stats.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>

/*
 * The common retirement, inline (op_done.c's strand_op_complete does the
 * same for every kind): an operation with nothing to deliver and no
 * completion to call (LIGHT), whose ep stays busy after it and has no
 * requests pending. Its slot is freed and the counts taken; the tail,
 * the room and the waiters of its queue are settled once per CQE
 * (strand_txq_settle). 0 when op is not of that kind.
 */
static UCS_F_ALWAYS_INLINE int
strand_op_retire_light(strand_txq_t *txq, strand_op_t *op)
{
    strand_ep_t *ep = op->ep;

    if (ucs_unlikely((op->type != STRAND_OP_LIGHT) || (ep == NULL) ||
                     (ep->outstanding <= 1) ||
                     !ucs_arbiter_group_is_empty(&ep->arb_group))) {
        return 0;
    }
    op->state = STRAND_OP_FREE;
    op->ep    = NULL;
    txq->outstanding--;
    ep->outstanding--;
    return 1;
}

/* op retired, one way or the other */
static UCS_F_ALWAYS_INLINE void
strand_op_retire(strand_iface_t *iface, strand_txq_t *txq, strand_op_t *op)
{
    if (!strand_op_retire_light(txq, op)) {
        strand_op_complete(iface, txq, op, UCS_OK);
    }
}

/* after light retirements: the tail moves over the freed slots, the eps
 * waiting for room on the queue are woken */
static UCS_F_ALWAYS_INLINE void
strand_txq_settle(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_advance_tail_inline(iface, txq);
    if (ucs_unlikely(!ucs_list_is_empty(&txq->waiters))) {
        strand_txq_wake_waiters(iface, txq);
    }
}

/* The WQEs before op that asked for no CQE completed (CQEs come in SQ
 * order, also across streams: an error or a flush CQE too comes only
 * after every WQE before its own is done). Those still posted succeeded:
 * the ones that failed or were flushed had CQEs of their own. 1 when
 * every one of them retired light (strand_op_retire_light). */
static UCS_F_ALWAYS_INLINE int strand_txq_retire_before(strand_iface_t *iface,
                                                        strand_txq_t   *txq,
                                                        const strand_op_t *op)
{
    uint32_t     bb  = txq->sq_tail;
    uint32_t     end = bb + (uint16_t)(op->wqe_idx - (uint16_t)bb);
    strand_op_t *prev;
    int          light = 1;

    while (bb != end) {
        prev = &txq->ops[bb & (txq->sq.wqe_cnt - 1)];
        bb += prev->bbs;
        if ((prev->state == STRAND_OP_POSTED) &&
            !strand_op_retire_light(txq, prev)) {
            strand_op_complete(iface, txq, prev, UCS_OK);
            light = 0;
        }
    }
    return light;
}

/* One send CQE, any kind. A send queue or stream in error takes its CQEs to
 * recovery. */
static void
strand_txq_cqe(strand_iface_t *iface, strand_txq_t *txq, struct mlx5_cqe64 *cqe)
{
    uint16_t     wqe_counter = strand_cqe_wqe_counter(cqe);
    strand_op_t *op          = strand_txq_op(txq, wqe_counter);

    if (ucs_unlikely(op == NULL)) {
        ucs_error("%s: CQE for WQE %u, which %s %u has not outstanding",
                  iface->dev->info.name, wqe_counter, iface->tl->names.sq,
                  txq->index);
        return;
    }
    if ((uint16_t)txq->sq_tail != wqe_counter) {
        strand_txq_retire_before(iface, txq, op);
    }
    if (ucs_unlikely((txq->state == STRAND_TXQ_DRAINING) ||
                     (txq->lanes[op->lane].state != STRAND_LANE_OK))) {
        strand_txq_settle(iface, txq);
        strand_recovery_flush(iface, txq, op, cqe);
    } else if (ucs_unlikely(strand_cqe_is_error(cqe))) {
        strand_txq_settle(iface, txq);
        strand_recovery_error(iface, txq, op, cqe);
    } else {
        strand_op_retire(iface, txq, op);
        strand_txq_settle(iface, txq);
    }
}

/*
 * The common send CQE, the one the completion loop is shaped for: a good
 * completion (opcode REQ, which also rules out errors and signature
 * errors) of an active send queue with no stream in error, its WQE outstanding.
 * The WQEs up to it retire; when all of them retired light, the tail
 * moves over them here and the rest of the queue's settling (free slots
 * retired out of order after it, the room, the waiters) is left to the
 * caller, once per poll and queue (strand_txq_settle): a post made
 * meanwhile sees less room than there is, never more. *settled says
 * whether the queue was settled here after all (an operation had work to
 * deliver, or its ep went idle). The sends completed (at least 1); 0 when
 * the CQE is not of this kind (nothing was done).
 */
static UCS_F_ALWAYS_INLINE int
strand_txq_cqe_fast(strand_iface_t *iface, strand_txq_t *txq,
                    const struct mlx5_cqe64 *cqe, int *settled)
{
    uint16_t     wqe_counter = strand_cqe_wqe_counter(cqe);
    uint32_t     tail        = txq->sq_tail;
    strand_op_t *op;
    uint32_t     before;

    if (ucs_unlikely((txq->state != STRAND_TXQ_ACTIVE) ||
                     (txq->errored != 0))) {
        return 0;
    }
    op = strand_txq_op(txq, wqe_counter);
    if (ucs_unlikely(op == NULL)) {
        return 0;
    }
    if (ucs_likely((uint16_t)tail == wqe_counter) &&
        strand_op_retire_light(txq, op)) {
        /* the one at the tail: the usual CQE per signaled WQE */
        txq->sq_tail = tail + op->bbs;
        *settled     = 0;
        return 1;
    }
    before = txq->outstanding;
    if (((uint16_t)tail != wqe_counter) &&
        strand_txq_retire_before(iface, txq, op) &&
        strand_op_retire_light(txq, op)) {
        txq->sq_tail = tail + (uint16_t)(wqe_counter - (uint16_t)tail) +
                       op->bbs;
        *settled = 0;
    } else {
        if (op->state == STRAND_OP_POSTED) {
            strand_op_complete(iface, txq, op, UCS_OK);
        }
        strand_txq_settle(iface, txq);
        *settled = 1;
    }
    /* (a completion callback may have posted again) */
    return ucs_max(1, (int)before - (int)txq->outstanding);
}

/* A send CQE of send queue txq the common path does not take (an error,
 * a flush, a send queue not active): the CQ's consumer index told first when its
 * handling may reset the send queue; the sends completed. */
static int strand_txq_cqe_slow(strand_iface_t *iface, strand_tx_cq_t *tx,
                               strand_txq_t *txq, struct mlx5_cqe64 *cqe)
{
    uint32_t before = txq->outstanding;

    if (ucs_unlikely(strand_cqe_is_error(cqe))) {
        STRAND_IFACE_STAT(iface, TX_CQE_ERROR, 1);
        strand_cq_update_ci(tx->cq.dv.dbrec, tx->ci);
    } else if (txq->state != STRAND_TXQ_ACTIVE) {
        strand_cq_update_ci(tx->cq.dv.dbrec, tx->ci);
    }
    strand_txq_cqe(iface, txq, cqe);
    return ucs_max(1, (int)before - (int)txq->outstanding);
}

/* A send CQE that is not a good completion of a known send queue (txq,
 * NULL if none): a signature error, an error or flush, a CQE of one of
 * the transport's own QPs; the sends completed. */
static int strand_txq_cqe_other(strand_iface_t *iface, strand_tx_cq_t *tx,
                                struct mlx5_cqe64 *cqe, strand_txq_t *txq)
{
    if (strand_cqe_opcode(cqe) == MLX5_CQE_SIG_ERR) {
        /* a checked GET had a bad block; its READ's own CQE follows */
        if (strand_integrity_sigerr(&iface->integrity, cqe) != 0) {
            ucs_warn("%s: signature error CQE for mkey 0x%x, which lands "
                     "no GET",
                     iface->dev->info.name, strand_sigerr_cqe_mkey(cqe));
        }
        return 0;
    }
    if (txq != NULL) {
        txq->cqes++;
        STRAND_IFACE_STAT(iface, TX_CQE, 1);
        return strand_txq_cqe_slow(iface, tx, txq, cqe);
    }
    strand_cq_update_ci(tx->cq.dv.dbrec, tx->ci);
    /* no send queue's: the transport's own (rc_strand's QPs that read
     * rendezvous) */
    if ((iface->tl->tx_cqe_other == NULL) ||
        (iface->tl->tx_cqe_other(iface, cqe) != 0)) {
        ucs_error("%s: send CQE of unknown QP 0x%x", iface->dev->info.name,
                  strand_cqe_qpn(cqe));
    }
    return 0;
}

static unsigned
strand_txq_tx_poll(strand_iface_t *iface, strand_tx_cq_t *tx, int *budget)
{
    const uint32_t     start     = tx->ci;
    uint32_t           ci        = start;
    uint32_t           last_qpn  = UINT32_MAX; /* no QPN's (24 bits) */
    strand_txq_t      *txq       = NULL;       /* last_qpn's */
    int                unsettled = 0;          /* txq left to settle by
                                                  strand_txq_cqe_fast */
    int                left      = *budget;
    strand_cq_cursor_t cur       = tx->cur;
    struct mlx5_cqe64 *cqe;
    uint8_t            op_own;
    int                done, settled;

    /* The consumer index is written once per poll (and at every multiple
     * of tx_ci_batch in a long one: completions post, and the CQ has room
     * for what can be outstanding plus one batch), and before a CQE whose
     * handling may reset its send queue (an error, a send queue draining). Consecutive
     * CQEs of one send queue (the usual run) look it up once; any
     * handling other than a light retirement forgets it (a callback may
     * destroy QPs). tx->ci is written where something reads it: the
     * slow paths tell the CQ, and the end of the poll (handlers do not
     * poll). */
    while ((left > 0) &&
           ((cqe = strand_cq_cursor_get(&cur, &op_own)) != NULL)) {
        ++ci;
        if (ucs_unlikely(strand_cq_cursor_step(&cur))) {
            strand_cq_update_ci(tx->cq.dv.dbrec, ci);
        }
        if (ucs_unlikely(cqe->sop_drop_qpn != last_qpn) ||
            ucs_unlikely((op_own >> 4) != MLX5_CQE_REQ)) {
            if (unsettled) {
                strand_txq_settle(iface, txq);
                unsettled = 0;
            }
            txq      = strand_txq_by_qpn(iface, strand_cqe_qpn(cqe));
            last_qpn = cqe->sop_drop_qpn; /* (the WQE's opcode too: a
                                             change costs a lookup) */
            if (ucs_unlikely(txq == NULL) ||
                ucs_unlikely((op_own >> 4) != MLX5_CQE_REQ)) {
                tx->ci = ci;
                left -= strand_txq_cqe_other(iface, tx, cqe, txq);
                last_qpn = UINT32_MAX;
                continue;
            }
        }
        txq->cqes++;
        STRAND_IFACE_STAT(iface, TX_CQE, 1);
        done = strand_txq_cqe_fast(iface, txq, cqe, &settled);
        if (ucs_likely(done > 0) && ucs_likely(!settled)) {
            unsettled = 1;
        } else {
            if (done == 0) {
                if (unsettled) {
                    strand_txq_settle(iface, txq);
                }
                tx->ci = ci;
                done   = strand_txq_cqe_slow(iface, tx, txq, cqe);
            }
            unsettled = 0;
            last_qpn  = UINT32_MAX;
        }
        left -= done;
    }
    if (unsettled) {
        strand_txq_settle(iface, txq);
    }
    if (ci != start) {
        tx->ci  = ci;
        tx->cur = cur;
        strand_cq_update_ci(tx->cq.dv.dbrec, ci);
    }
    *budget = left;
    return ci - start;
}

unsigned strand_txq_tx_progress(strand_iface_t *iface)
{
    return strand_txq_tx_poll_max(iface, iface->config.tx_max_poll);
}

unsigned strand_txq_tx_poll_max(strand_iface_t *iface, unsigned max)
{
    int      budget = (int)ucs_min(max, INT_MAX);
    unsigned count, k, n;

    if (ucs_likely(iface->num_tx_cqs == 1)) {
        count = strand_txq_tx_poll(iface, &iface->tx_cqs[0], &budget);
    } else {
        /* rc_strand's CQs of many endpoints: each in turn polled first,
         * so that the bound starves none */
        n = iface->num_tx_cqs;
        for (count = 0, k = 0; (k < n) && (budget > 0); ++k) {
            count += strand_txq_tx_poll(
                    iface, &iface->tx_cqs[(iface->tx_cq_next + k) % n],
                    &budget);
        }
        iface->tx_cq_next = (iface->tx_cq_next + 1) % n;
    }
    if (ucs_unlikely(iface->repost_pending)) {
        count += strand_recovery_progress(iface);
    }
    if (ucs_unlikely(iface->num_failed > 0)) {
        /* failed outside completion handling (uct_ep_invalidate) */
        strand_ep_fail_notify(iface);
    }
    return count;
}
