/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error completions: which endpoints fail, which flushed WQEs are held and
 * posted again, and when a stream or a send queue is reset (recovery.h,
 * docs/errors.md).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "recovery.h"
#include "uct_mlx5/common/status.h"
#include "ep.h"
#include "integrity_get.h"
#include "ep_fail.h"
#include "ep_pending.h"
#include "txq_state.h"
#include "op_done.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/queue.h>

#include <string.h>

/* A flushed WQE of a healthy endpoint, kept out of the SQ (its slot may be
 * needed before the stream or send queue is back) until it is posted again. */
typedef struct strand_held {
    ucs_queue_elem_t queue;
    uint32_t         closure; /* its stream's closures when it came */
    strand_op_t      op;
    uint8_t          wqe[]; /* op.bbs basic blocks, as posted */
} strand_held_t;

/* The destination is gone or refuses everyone: every ep to it fails. */
static int strand_syndrome_peer_wide(uint8_t syndrome)
{
    return (syndrome == MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR) ||
           (syndrome == MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
}

static int strand_ep_same_dest(const strand_ep_t *a, const strand_ep_t *b)
{
    return a->dest == b->dest;
}

static void strand_failure_init(strand_failure_t *f, strand_iface_t *iface,
                                strand_txq_t *txq, strand_op_t *op,
                                struct mlx5_cqe64 *cqe, int txq_error)
{
    uint8_t                   syndrome = strand_cqe_syndrome(cqe);
    struct mlx5_wqe_ctrl_seg *ctrl;

    ctrl        = strand_sq_bb(txq->sq.buf, txq->sq.wqe_cnt, op->wqe_idx);
    f->status   = strand_syndrome_status(syndrome);
    f->syndrome = syndrome;
    snprintf(f->detail, sizeof(f->detail),
             "%s (syndrome 0x%x vendor 0x%x) on %s %u qpn 0x%x stream %u, "
             "WQE %u %s%s%s%s",
             strand_cqe_syndrome_str(syndrome), syndrome,
             strand_cqe_vendor_syndrome(cqe), iface->tl->names.sq, txq->index,
             txq->qp.qpn, txq->lanes[op->lane].id, op->wqe_idx,
             strand_wqe_opcode_str(strand_ctrl_opcode(ctrl)),
             txq_error ? ", " : "", txq_error ? iface->tl->names.sq : "",
             txq_error ? " in error" : "");
    ucs_debug("%s: ep %p: %s: %s", iface->dev->info.name, op->ep, f->detail,
              ucs_status_string(f->status));
}

/* The endpoints this failure belongs to: the poster; when the destination
 * is gone (no answer through every retry, or never ready for one), also
 * every other ep of the iface to that destination (NIC and DCT), on any
 * send queue or stream, busy or idle: each would otherwise find out through its
 * own full timeout, one after the other where they share a stream or a
 * send queue, and a sender retrying a busy send queue would never find out at all. */
static void strand_failure_scope(strand_iface_t         *iface,
                                 const strand_failure_t *f, strand_op_t *op)
{
    strand_ep_t *ep;

    strand_ep_fail_add(iface, f, op->ep);
    if ((op->ep == NULL) || !strand_syndrome_peer_wide(f->syndrome)) {
        return;
    }
    ucs_list_for_each(ep, &iface->eps, list) {
        if (strand_ep_same_dest(ep, op->ep)) {
            strand_ep_fail_add(iface, f, ep);
        }
    }
}

/* ------------------------------------------------------------ holding */

/* Copy the WQE of op out of the SQ and free its slot: it is posted again
 * once its stream (or send queue) is back. */
/* Held WQEs are posted again from the front while the stream takes work
 * (room permitting); if it fails again meanwhile, the ones that come back
 * flushed were posted before those still waiting, so they go in front of
 * those: of each entry kept since an earlier failure (in the order they
 * come back, SQ order). An ep's work keeps its order through repeated
 * errors. (Appended, the 4-peer dc_peers run delivered message 4 of a
 * healthy ep when 2 was next.) */
static void strand_held_insert(strand_lane_t *s, strand_held_t *h)
{
    ucs_queue_iter_t iter;
    strand_held_t   *old;

    h->closure = s->closures;
    ucs_queue_for_each_safe(old, iter, &s->held, queue) {
        if (old->closure != s->closures) {
            h->queue.next = *iter;
            *iter         = &h->queue;
            return;
        }
    }
    ucs_queue_push(&s->held, &h->queue);
}

static void
strand_recovery_hold(strand_iface_t *iface, strand_txq_t *txq, strand_op_t *op)
{
    strand_lane_t *s = &txq->lanes[op->lane];
    strand_held_t *h;
    unsigned       i;

    h = ucs_malloc(sizeof(*h) + op->bbs * STRAND_WQE_BB, "strand_held");
    if (h == NULL) {
        ucs_error("%s: no memory to keep a flushed WQE: its ep fails",
                  iface->dev->info.name);
        strand_failure_t f = {.status = UCS_ERR_NO_MEMORY,
                              .detail = "no memory to keep a flushed WQE"};
        strand_ep_fail_add(iface, &f, op->ep);
        strand_op_complete(iface, txq, op, UCS_ERR_NO_MEMORY);
        return;
    }
    for (i = 0; i < op->bbs; ++i) {
        memcpy(h->wqe + i * STRAND_WQE_BB,
               strand_sq_bb(txq->sq.buf, txq->sq.wqe_cnt, op->wqe_idx + i),
               STRAND_WQE_BB);
    }
    h->op = *op;
    strand_held_insert(s, h);
    op->ep->held++;
    strand_ep_tx_update(iface, op->ep);
    op->desc    = NULL; /* now the held copy's */
    op->tmp_reg = NULL;
    op->comp    = NULL;
    op->ep      = NULL;
    op->type    = STRAND_OP_PLAIN;
    strand_op_complete(iface, txq, op, UCS_OK); /* frees the slot only */
    iface->repost_pending = 1;
}

/* Post the held WQE h again at the producer index. */
static void strand_recovery_repost_one(strand_iface_t *iface, strand_txq_t *txq,
                                       strand_held_t             *h,
                                       struct mlx5_wqe_ctrl_seg **ctrl_p)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    strand_ep_t              *ep = h->op.ep;
    unsigned                  i;

    ctrl = strand_sq_bb(txq->sq.buf, txq->sq.wqe_cnt, txq->sq.cur_post);
    for (i = 0; i < h->op.bbs; ++i) {
        memcpy(strand_sq_bb(txq->sq.buf, txq->sq.wqe_cnt, txq->sq.cur_post + i),
               h->wqe + i * STRAND_WQE_BB, STRAND_WQE_BB);
    }
    strand_set_ctrl_wqe_idx(ctrl, (uint16_t)txq->sq.cur_post);
    /* still outstanding for its ep all along: only the slot is new */
    strand_txq_claim(txq, h->op.bbs, &h->op);
    ep->held--;
    strand_ep_tx_update(iface, ep);
    *ctrl_p = ctrl;
}

static void
strand_held_drop(strand_iface_t *iface, strand_held_t *h, ucs_status_t status)
{
    strand_op_t *op = &h->op;

    if (op->type == STRAND_OP_LIGHT) {
        ucs_free(h);
        return;
    }
    if (op->type == STRAND_OP_CHECKED) {
        strand_iface_integrity_drop(iface, op->u.result, status);
        ucs_free(h);
        return;
    }
    if (op->tmp_reg != NULL) {
        strand_tmp_reg_release(iface, op->tmp_reg);
    }
    if (op->desc != NULL) {
        ucs_mpool_put_inline(op->desc);
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_free(h);
}

/* A held WQE of an ep that failed since: it completes with the ep's
 * error instead of being posted again. */
static void strand_recovery_held_fail(strand_iface_t *iface, strand_ep_t *ep,
                                      strand_held_t *h)
{
    uct_completion_t *last = NULL;

    ep->held--;
    ep->outstanding--;
    strand_ep_tx_update(iface, ep);
    strand_held_drop(iface, h, ep->status);
    if ((ep->outstanding == 0) && (ep->held == 0)) {
        last = strand_ep_idle(iface, ep);
    }
    if (last != NULL) {
        uct_invoke_completion(last, UCS_OK);
    }
}

/* Every held WQE of ep completes with its error now. */
static void strand_recovery_fail_held(strand_iface_t *iface, strand_ep_t *ep)
{
    ucs_queue_iter_t iter;
    strand_held_t   *h;
    strand_txq_t    *txq;
    unsigned         i, j;

    for (i = 0; (i < iface->txq_hwm) && (ep->held > 0); ++i) {
        txq = &iface->txqs[i];
        for (j = 0; j < iface->config.num_lanes; ++j) {
            ucs_queue_for_each_safe(h, iter, &txq->lanes[j].held, queue) {
                if (h->op.ep == ep) {
                    ucs_queue_del_iter(&txq->lanes[j].held, iter);
                    strand_recovery_held_fail(iface, ep, h);
                }
            }
        }
    }
}

/* The held WQEs of stream s, in their order, while there is room. */
static unsigned strand_recovery_repost(strand_iface_t *iface, strand_txq_t *txq,
                                       strand_lane_t *s)
{
    struct mlx5_wqe_ctrl_seg *ctrl = NULL;
    strand_held_t            *h;
    strand_ep_t              *ep;
    unsigned                  count = 0;

    while (!ucs_queue_is_empty(&s->held) && strand_txq_has_room(iface, txq)) {
        h  = ucs_queue_pull_elem_non_empty(&s->held, strand_held_t, queue);
        ep = h->op.ep;
        if (ep->flags & STRAND_EP_FLAG_FAILED) {
            /* its destination failed on another stream meanwhile */
            strand_recovery_held_fail(iface, ep, h);
            continue;
        }
        strand_recovery_repost_one(iface, txq, h, &ctrl);
        ucs_free(h);
        ++count;
        STRAND_IFACE_STAT(iface, REPOST, 1);
        if (ep->held == 0) {
            strand_ep_schedule(iface, ep);
        }
    }
    if (ctrl != NULL) {
        /* the held WQEs may not have asked for CQEs: the last one asks,
         * so that they all complete */
        ctrl->fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
        txq->ce_countdown = txq->moderation;
        strand_txq_ring(txq, ctrl, strand_ds_to_bbs(strand_ctrl_ds(ctrl)));
    }
    return count;
}

unsigned strand_recovery_progress(strand_iface_t *iface)
{
    strand_txq_t *txq;
    unsigned      i, j, count = 0;
    int           pending = 0;

    iface->repost_pending = 0;
    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        if (txq->state != STRAND_TXQ_ACTIVE) {
            pending |= (txq->state == STRAND_TXQ_DRAINING);
            continue;
        }
        for (j = 0; j < iface->config.num_lanes; ++j) {
            if (txq->lanes[j].state != STRAND_LANE_OK) {
                pending = 1;
                continue;
            }
            count += strand_recovery_repost(iface, txq, &txq->lanes[j]);
            pending |= !ucs_queue_is_empty(&txq->lanes[j].held);
        }
    }
    iface->repost_pending = pending;
    return count;
}

/* --------------------------------------------------------- resetting */

static void strand_recovery_txq_done(strand_iface_t *iface, strand_txq_t *txq);
static void strand_recovery_settle(strand_iface_t *iface, strand_txq_t *txq);

/* Every WQE of the errored stream s is back: reset it and post the held
 * ones again (seed page: "Once all stream_id WR's are flushed, application
 * should reset the errored stream_id"). */
static void strand_recovery_stream_done(strand_iface_t *iface,
                                        strand_txq_t *txq, strand_lane_t *s)
{
    strand_dev_t *dev = iface->dev;
    int           err;

    err = iface->tl->lane_reset(iface, txq, s - txq->lanes);
    if (err != 0) {
        /* the send queue itself went to ERR meanwhile: it is reset instead, once
         * its last flush is back */
        ucs_debug("%s: %s %u: stream %u reset: %s", dev->info.name,
                  iface->tl->names.sq, txq->index, s->id, strerror(err));
        strand_txq_set_state(iface, txq, STRAND_TXQ_DRAINING);
        if (txq->outstanding == txq->flushed) {
            strand_recovery_settle(iface, txq);
            strand_recovery_txq_done(iface, txq);
        }
        return;
    }
    strand_lane_set_state(iface, txq, s, STRAND_LANE_OK);
    s->resets++;
    STRAND_IFACE_STAT(iface, STREAM_RESET, 1);
    txq->errored--;
    strand_recovery_repost(iface, txq, s);
    iface->repost_pending = 1;
}

/* Every WQE of the send queue in ERR is back: reset it, post the held ones. */
static void strand_recovery_txq_done(strand_iface_t *iface, strand_txq_t *txq)
{
    unsigned i;

    if (iface->tl->sq_reset(iface, txq) != 0) {
        return; /* broken: its held WQEs fail at close */
    }
    /* the streams first: setting the send queue's state tells its eps */
    for (i = 0; i < iface->config.num_lanes; ++i) {
        txq->lanes[i].state = STRAND_LANE_OK;
    }
    txq->errored = 0;
    strand_txq_set_state(iface, txq, STRAND_TXQ_ACTIVE);
    txq->resets++;
    STRAND_IFACE_STAT(iface, TXQ_RESET, 1);
    iface->tl->sq_idle(iface, txq);
    iface->repost_pending = 1;
    strand_recovery_progress(iface);
}

static void strand_recovery_check_done(strand_iface_t *iface, strand_txq_t *txq,
                                       strand_lane_t *s)
{
    if (txq->state == STRAND_TXQ_DRAINING) {
        if (txq->outstanding == txq->flushed) {
            strand_recovery_settle(iface, txq);
            ucs_assert(txq->outstanding == 0);
            strand_recovery_txq_done(iface, txq);
        }
    } else if ((s->state == STRAND_LANE_DRAINING) &&
               (strand_txq_lane_outstanding(txq, s - txq->lanes) == 0)) {
        strand_recovery_stream_done(iface, txq, s);
    }
}

/* ----------------------------------------------------- error and flush */

/* Whether running op twice does no harm: a READ reads again, a NOP does
 * nothing. (A WRITE is not: its peer may have seen it land and reused the
 * memory since; an active message or atomic would run twice.) */
static int strand_op_rerunnable(const strand_op_t *op)
{
    return (op->opcode == MLX5_OPCODE_RDMA_READ) ||
           (op->opcode == MLX5_OPCODE_NOP);
}

static int strand_txq_in_error(strand_iface_t *iface, strand_txq_t *txq)
{
    enum ibv_qp_state state = IBV_QPS_ERR;

    if (!iface->config.lanes_fail_alone) {
        return 1; /* every error puts the send queue in ERR */
    }
    /* the seed page's way: query the QP after an error completion */
    if (iface->dev->ops->qp_state(iface->dev, &txq->qp, &state) != 0) {
        return 1;
    }
    return state != IBV_QPS_RTS;
}

/* op failed at its peer (or on its way there): the eps the failure belongs
 * to fail, its stream is in error until reset. */
static void strand_recovery_failed(strand_iface_t *iface, strand_txq_t *txq,
                                   strand_op_t *op, struct mlx5_cqe64 *cqe)
{
    strand_lane_t   *s = &txq->lanes[op->lane];
    strand_failure_t f;

    strand_failure_init(&f, iface, txq, op, cqe,
                        txq->state == STRAND_TXQ_DRAINING);
    if (ucs_log_is_enabled(UCS_LOG_LEVEL_DEBUG)) {
        strand_txq_log_wqe(txq, op->wqe_idx);
    }
    strand_failure_scope(iface, &f, op);
    if (s->state == STRAND_LANE_OK) {
        strand_lane_set_state(iface, txq, s, STRAND_LANE_DRAINING);
        txq->errored++;
    }
    strand_op_complete(iface, txq, op, f.status);
}

/* Every CQE of the send queue in ERR is back: decide the fate of each flushed
 * WQE, in SQ order. The device puts a send queue in ERR when as many streams as
 * it may have errored are in error (or for an error that is not a
 * stream's); work that came after a failure on its own stream was not
 * executed (a stream runs in order) and is posted again. Work of a stream
 * that did not fail may have run at its peer; the policy keeps that from
 * happening for remote failures (no more streams than errored ones), so
 * only a queue-wide error gets here: such work is posted again only if
 * running it twice is harmless, else its ep fails. */
static void strand_recovery_settle(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_failure_t f = {.status = UCS_ERR_IO_ERROR};
    uint32_t         bb, end = txq->sq.cur_post;
    strand_op_t     *op;
    unsigned         bbs;

    for (bb = txq->sq_tail; bb != end; bb += bbs) {
        op  = &txq->ops[bb & (txq->sq.wqe_cnt - 1)];
        bbs = op->bbs ? op->bbs : 1;
        if (op->state != STRAND_OP_FLUSHED) {
            continue;
        }
        if (op->ep == NULL) {
            strand_op_complete(iface, txq, op, UCS_ERR_CANCELED);
        } else if (op->ep->flags & STRAND_EP_FLAG_FAILED) {
            strand_op_complete(iface, txq, op, op->ep->status);
        } else if ((txq->lanes[op->lane].state != STRAND_LANE_OK) ||
                   strand_op_rerunnable(op)) {
            strand_recovery_hold(iface, txq, op);
        } else {
            snprintf(f.detail, sizeof(f.detail),
                     "%s %u qpn 0x%x went to "
                     "error with WQE %u %s in flight on stream %u, which did "
                     "not fail: it may have run at its peer, so it is not "
                     "posted again",
                     iface->tl->names.sq, txq->index, txq->qp.qpn, op->wqe_idx,
                     strand_wqe_opcode_str(op->opcode),
                     txq->lanes[op->lane].id);
            strand_ep_fail_add(iface, &f, op->ep);
            strand_op_complete(iface, txq, op, f.status);
        }
    }
}

void strand_recovery_error(strand_iface_t *iface, strand_txq_t *txq,
                           strand_op_t *op, struct mlx5_cqe64 *cqe)
{
    if (strand_txq_in_error(iface, txq)) {
        strand_txq_set_state(iface, txq, STRAND_TXQ_DRAINING);
    }
    strand_recovery_flush(iface, txq, op, cqe);
}

void strand_recovery_flush(strand_iface_t *iface, strand_txq_t *txq,
                           strand_op_t *op, struct mlx5_cqe64 *cqe)
{
    strand_lane_t *s  = &txq->lanes[op->lane];
    strand_ep_t   *ep = op->ep;

    if (!strand_cqe_is_error(cqe)) {
        /* done before the failure: a success like any other */
        strand_op_complete(iface, txq, op, UCS_OK);
    } else if (strand_cqe_syndrome(cqe) != MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
        strand_recovery_failed(iface, txq, op, cqe);
    } else if ((ep == NULL) || (ep->flags & STRAND_EP_FLAG_FAILED)) {
        strand_op_complete(iface, txq, op,
                           (ep == NULL) ? UCS_ERR_CANCELED : ep->status);
    } else if (txq->state == STRAND_TXQ_DRAINING) {
        /* which streams failed is known only once all CQEs are back */
        op->state = STRAND_OP_FLUSHED;
        txq->flushed++;
    } else {
        /* its stream failed before it: it did not run */
        if (s->state == STRAND_LANE_OK) {
            /* a flush whose stream's error CQE we have not seen: the
             * stream is in error all the same */
            strand_lane_set_state(iface, txq, s, STRAND_LANE_DRAINING);
            txq->errored++;
        }
        strand_recovery_hold(iface, txq, op);
    }
    strand_recovery_check_done(iface, txq, s);
    strand_ep_fail_notify(iface);
}

/* ---------------------------------------------- cancel, destroy, close */

/* Whether every WQE outstanding on txq is ep's (or nobody's). */
static int strand_txq_only_of(strand_txq_t *txq, strand_ep_t *ep)
{
    strand_op_t *op;
    uint32_t     bb;

    for (bb = txq->sq_tail; bb != txq->sq.cur_post; ++bb) {
        op = &txq->ops[bb & (txq->sq.wqe_cnt - 1)];
        if ((op->state != STRAND_OP_FREE) && (op->ep != NULL) &&
            (op->ep != ep)) {
            return 0;
        }
    }
    return 1;
}

void strand_recovery_cancel(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_dev_t *dev = iface->dev;
    strand_txq_t *txq;
    int           err;

    ucs_assert(ep->flags & STRAND_EP_FLAG_FAILED);
    strand_recovery_fail_held(iface, ep);
    if ((ep->outstanding == 0) || (ep->txq == STRAND_TXQ_NONE)) {
        return;
    }
    txq = &iface->txqs[ep->txq];
    if (txq->held_db != NULL) {
        /* its doorbells held (rc_strand, not connected yet): nothing ran;
         * to ERR, and the device told of every WQE, each comes back
         * flushed */
        strand_txq_held_abort(iface, txq);
        return;
    }
    if ((txq->state != STRAND_TXQ_ACTIVE) || !strand_txq_only_of(txq, ep)) {
        /* shared: a WQE on the wire cannot be taken back without failing
         * the others' work; ep's complete as the device returns them */
        return;
    }
    /* the send queue is reset once the CQE of its last WQE is in; a WQE without
     * a CQE request that already ran gives none, flushed or not: a
     * signaled NOP behind it does (success or flush). Without room for
     * one, the WQEs complete as the device returns them. */
    if (strand_txq_signal_tail(iface, txq) != UCS_OK) {
        return;
    }
    err = strand_dev_qp_to_err(dev, &txq->qp);
    if (err != 0) {
        ucs_debug("%s: %s %u: to ERR to cancel the work of ep %p: %s",
                  dev->info.name, iface->tl->names.sq, txq->index, ep,
                  strerror(err));
        return;
    }
    /* every WQE comes back flushed, completes with the ep's status, and
     * the send queue is reset after the last (strand_recovery_flush) */
    strand_txq_set_state(iface, txq, STRAND_TXQ_DRAINING);
}

void strand_recovery_invalidate(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_failure_t f = {.status = UCS_ERR_CANCELED};

    snprintf(f.detail, sizeof(f.detail),
             "invalidated by its user "
             "(uct_ep_invalidate), %u operations outstanding",
             ep->outstanding);
    strand_ep_fail_add(iface, &f, ep);
    strand_recovery_cancel(iface, ep);
}

void strand_recovery_orphan(strand_iface_t *iface, strand_ep_t *ep)
{
    ucs_queue_iter_t iter;
    strand_held_t   *h;
    strand_txq_t    *txq;
    unsigned         i, j;

    strand_ep_fail_forget(iface, ep);
    if (ep->held == 0) {
        return;
    }
    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        for (j = 0; j < iface->config.num_lanes; ++j) {
            ucs_queue_for_each_safe(h, iter, &txq->lanes[j].held, queue) {
                if (h->op.ep == ep) {
                    ucs_queue_del_iter(&txq->lanes[j].held, iter);
                    ep->held--;
                    strand_ep_tx_update(iface, ep);
                    strand_held_drop(iface, h, UCS_ERR_CANCELED);
                }
            }
        }
    }
}

void strand_recovery_cleanup(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_held_t *h;
    unsigned       j;

    if (txq->lanes == NULL) {
        return;
    }
    for (j = 0; j < iface->config.num_lanes; ++j) {
        while (!ucs_queue_is_empty(&txq->lanes[j].held)) {
            h = ucs_queue_pull_elem_non_empty(&txq->lanes[j].held,
                                              strand_held_t, queue);
            if (h->op.type != STRAND_OP_LIGHT) {
                h->op.comp = NULL; /* the iface is closing */
            }
            strand_held_drop(iface, h, UCS_ERR_CANCELED);
        }
    }
}

void strand_recovery_cleanup_all(strand_iface_t *iface)
{
    unsigned i;

    for (i = 0; (iface->txqs != NULL) && (i < iface->txq_hwm); ++i) {
        strand_recovery_cleanup(iface, &iface->txqs[i]);
    }
}
