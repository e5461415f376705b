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

#include "tx_done.h"
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
static UCS_F_ALWAYS_INLINE int strand_op_retire_light(strand_txq_t *dci,
                                                      strand_op_t *op)
{
    strand_ep_t *ep = op->ep;

    if (ucs_unlikely((op->type != STRAND_OP_LIGHT) || (ep == NULL) ||
                     (ep->outstanding <= 1) ||
                     !ucs_arbiter_group_is_empty(&ep->arb_group))) {
        return 0;
    }
    op->state = STRAND_OP_FREE;
    op->ep    = NULL;
    dci->outstanding--;
    ep->outstanding--;
    return 1;
}

/* op retired, one way or the other */
static UCS_F_ALWAYS_INLINE void strand_op_retire(strand_iface_t *iface,
                                                 strand_txq_t *dci,
                                                 strand_op_t *op)
{
    if (!strand_op_retire_light(dci, op)) {
        strand_op_complete(iface, dci, op, UCS_OK);
    }
}

/* after light retirements: the tail moves over the freed slots, the eps
 * waiting for room on the queue are woken */
static UCS_F_ALWAYS_INLINE void strand_txq_settle(strand_iface_t *iface,
                                                  strand_txq_t *dci)
{
    strand_txq_advance_tail_inline(iface, dci);
    if (ucs_unlikely(!ucs_list_is_empty(&dci->waiters))) {
        strand_txq_wake_waiters(iface, dci);
    }
}

/* The WQEs before op that asked for no CQE completed (CQEs come in SQ
 * order, also across streams: an error or a flush CQE too comes only
 * after every WQE before its own is done). Those still posted succeeded:
 * the ones that failed or were flushed had CQEs of their own. */
static void strand_txq_retire_before(strand_iface_t *iface,
                                        strand_txq_t *dci,
                                        const strand_op_t *op)
{
    uint32_t bb  = dci->sq_tail;
    uint32_t end = bb + (uint16_t)(op->wqe_idx - (uint16_t)bb);
    strand_op_t *prev;

    while (bb != end) {
        prev = &dci->ops[bb & (dci->sq.wqe_cnt - 1)];
        bb  += prev->bbs;
        if (prev->state == STRAND_OP_POSTED) {
            strand_op_retire(iface, dci, prev);
        }
    }
}

/* One send CQE. A DCI or stream in error takes its CQEs to recovery. */
static void strand_txq_cqe(strand_iface_t *iface, strand_txq_t *dci,
                              struct mlx5_cqe64 *cqe)
{
    uint16_t wqe_counter = strand_cqe_wqe_counter(cqe);
    strand_op_t *op   = strand_txq_op(dci, wqe_counter);

    if (ucs_unlikely(op == NULL)) {
        ucs_error("%s: CQE for WQE %u, which DCI %u has not outstanding",
                  iface->dev->info.name, wqe_counter, dci->index);
        return;
    }
    if ((uint16_t)dci->sq_tail != wqe_counter) {
        strand_txq_retire_before(iface, dci, op);
    }
    if (ucs_unlikely((dci->state == STRAND_TXQ_DRAINING) ||
                     (dci->lanes[op->lane].state !=
                      STRAND_LANE_OK))) {
        strand_txq_settle(iface, dci);
        strand_recovery_flush(iface, dci, op, cqe);
    } else if (ucs_unlikely(strand_cqe_is_error(cqe))) {
        strand_txq_settle(iface, dci);
        strand_recovery_error(iface, dci, op, cqe);
    } else {
        strand_op_retire(iface, dci, op);
        strand_txq_settle(iface, dci);
    }
}

/* The CQEs of one send CQ, until `*budget` sends were completed (a CQE
 * completes every unsignaled WQE before it too); the CQEs consumed. */
static unsigned strand_txq_tx_poll(strand_iface_t *iface,
                                      strand_tx_cq_t *tx, int *budget)
{
    strand_dev_cq_t *cq = &tx->cq;
    strand_txq_t *dci;
    struct mlx5_cqe64 *cqe;
    unsigned count = 0;
    uint32_t before;
    uint32_t qpn;
    int index;

    /* The consumer index is written once per poll (and every
     * tx_ci_batch CQEs of a long one: completions post, and the CQ has
     * room for what can be outstanding plus one batch), and before a
     * CQE whose handling may reset its DCI (an error, a DCI draining). */
    while ((*budget > 0) &&
           ((cqe = strand_cqe_get(cq->dv.buf, cq->dv.cqe_cnt,
                                  iface->tx_cqe_shift, tx->ci)) != NULL)) {
        ++tx->ci;
        ++count;
        if (ucs_unlikely(strand_cqe_opcode(cqe) == MLX5_CQE_SIG_ERR)) {
            /* a checked GET had a bad block; its READ's own CQE follows */
            if (strand_integrity_sigerr(&iface->integrity, cqe) != 0) {
                ucs_warn("%s: signature error CQE for mkey 0x%x, which "
                         "lands no GET", iface->dev->info.name,
                         strand_sigerr_cqe_mkey(cqe));
            }
            continue;
        }
        qpn   = strand_cqe_qpn(cqe);
        index = strand_txq_by_qpn(iface, qpn);
        if (ucs_unlikely(index < 0)) {
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
            /* no send queue's: the transport's own (rc_strand's QPs that
             * read rendezvous) */
            if ((iface->tl->tx_cqe_other == NULL) ||
                (iface->tl->tx_cqe_other(iface, cqe) != 0)) {
                ucs_error("%s: send CQE of unknown QP 0x%x",
                          iface->dev->info.name, qpn);
            }
            continue;
        }
        dci = &iface->txqs[index];
        dci->cqes++;
        STRAND_IFACE_STAT(iface, TX_CQE, 1);
        if (ucs_unlikely(strand_cqe_is_error(cqe))) {
            STRAND_IFACE_STAT(iface, TX_CQE_ERROR, 1);
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
        } else if (ucs_unlikely((dci->state != STRAND_TXQ_ACTIVE) ||
                                ((count % iface->tx_ci_batch) == 0))) {
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
        }
        before = dci->outstanding;
        strand_txq_cqe(iface, dci, cqe);
        /* (a completion callback may have posted again) */
        *budget -= ucs_max(1, (int)before - (int)dci->outstanding);
    }
    if (count > 0) {
        strand_cq_update_ci(cq->dv.dbrec, tx->ci);
    }
    return count;
}

unsigned strand_txq_tx_progress(strand_iface_t *iface)
{
    return strand_txq_tx_poll_max(iface, iface->config.tx_max_poll);
}

unsigned strand_txq_tx_poll_max(strand_iface_t *iface, unsigned max)
{
    int budget = (int)ucs_min(max, INT_MAX);
    unsigned count, k, n;

    if (ucs_likely(iface->num_tx_cqs == 1)) {
        count = strand_txq_tx_poll(iface, &iface->tx_cqs[0], &budget);
    } else {
        /* rc_strand's CQs of many endpoints: each in turn polled first,
         * so that the bound starves none */
        n = iface->num_tx_cqs;
        for (count = 0, k = 0; (k < n) && (budget > 0); ++k) {
            count += strand_txq_tx_poll(iface,
                                           &iface->tx_cqs[(iface->tx_cq_next +
                                                           k) % n],
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
