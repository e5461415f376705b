/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pending requests (uct_ep_pending_add): one arbiter group per endpoint,
 * dispatched from progress; the waiters of a full send queue, woken in
 * the order they came when it has room.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ep_pending.h"
#include "ep_post.h"
#include "integrity_get.h"
#include "txq_pool.h"

typedef struct {
    uct_pending_purge_callback_t cb;
    void                        *arg;
} strand_purge_args_t;

void strand_ep_pending_push(strand_iface_t *iface, strand_ep_t *ep,
                            uct_pending_req_t *req)
{
    uct_pending_req_arb_group_push(&ep->arb_group, req);
    if (ep->pending++ == 0) {
        strand_ep_tx_update(iface, ep);
    }
}

/* count pending requests of ep leave its group */
void strand_ep_pending_gone(strand_iface_t *iface, strand_ep_t *ep,
                            uint32_t count)
{
    ep->pending -= count;
    if (ep->pending == 0) {
        strand_ep_tx_update(iface, ep);
    }
}

/* ep waits for room on its leased send queue, behind the eps waiting there
 * already (the queue's room wakes them in order, op_done.c) */
static void strand_ep_join_waiters(strand_iface_t *iface, strand_ep_t *ep)
{
    if (ucs_list_is_empty(&ep->txq_wait)) {
        ucs_list_add_tail(&iface->txqs[ep->txq].waiters, &ep->txq_wait);
    }
}

ucs_status_t
strand_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);

    /* behind requests already pending it always queues (a send would
     * return NO_RESOURCE to keep their order); so does one that may be a
     * checked GET while no landing mkey is free (BUSY would have the
     * caller retry it at once, for ever) */
    /* a failing ep (its owner still to be told) queues it: the owner
     * purges it when told; once told, it takes no more */
    /* and so does a flush that waits for checked GETs (strand_ep_flush) */
    if (!strand_ep_is_failing(ep) &&
        ucs_arbiter_group_is_empty(&ep->arb_group) &&
        ((strand_ep_can_send(iface, ep) &&
          strand_iface_integrity_can_start(iface) && (ep->checked_gets == 0)) ||
         (ep->flags & STRAND_EP_FLAG_FAILED))) {
        ep->refused_beat = iface->tx_beat - 1; /* its post looks again */
        return UCS_ERR_BUSY;
    }
    if ((strand_ep_fc_wnd(ep) <= 0) && !(ep->flags & STRAND_EP_FLAG_FC_REQ)) {
        strand_fc_request(iface, ep); /* or from the pending dispatch */
    }
    strand_ep_pending_push(iface, ep, req);
    UCT_TL_EP_STAT_PEND(&ep->super);
    if ((strand_ep_fc_wnd(ep) > 0) && (ep->txq != STRAND_TXQ_NONE) &&
        (iface->txqs[ep->txq].state == STRAND_TXQ_ACTIVE) &&
        !strand_txq_has_room(iface, &iface->txqs[ep->txq])) {
        /* its send queue is full: it waits behind the eps already waiting for
         * room there (scheduled now, it would go before them: with CQEs
         * that free many slots at once, the eps that just sent would
         * take them again and again) */
        strand_ep_join_waiters(iface, ep);
        return UCS_OK;
    }
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    return UCS_OK;
}

/* A pending ep out of credits: once its request is out, the grant
 * reschedules it; until then it is retried after the other eps. */
static ucs_arbiter_cb_result_t
strand_ep_pending_no_credits(strand_iface_t *iface, strand_ep_t *ep)
{
    if (!(ep->flags & STRAND_EP_FLAG_FC_REQ) &&
        (strand_fc_request(iface, ep) != UCS_OK)) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }
    return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
}

/* A pending ep whose leased send queue is full (or its stream not ready): it
 * waits in the send queue's queue, and room made by anyone's completion wakes the
 * waiters in the order they came (not only the eps whose own work
 * completed: an ep with nothing outstanding would never run again, and one
 * with much outstanding would run more often than the others). */
static ucs_arbiter_cb_result_t
strand_ep_wait_room(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_ep_join_waiters(iface, ep);
    return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
}

/* An ep without a lease that waits for room on one send queue (the
 * transport chose it: dc_strand's policy keeps an ep on its destination's
 * send queue), not for any: it is in that queue's waiters. */
static int strand_ep_lease_waits(strand_iface_t *iface, strand_ep_t *ep)
{
    iface->tl->sq_lease(iface, ep); /* joins the waiters, or leases */
    strand_ep_tx_update(iface, ep);
    return (ep->txq == STRAND_TXQ_NONE) && !ucs_list_is_empty(&ep->txq_wait);
}

static ucs_arbiter_cb_result_t
strand_ep_pending_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                     ucs_arbiter_elem_t *elem, void *arg)
{
    strand_iface_t    *iface = arg;
    strand_ep_t       *ep    = ucs_container_of(group, strand_ep_t, arb_group);
    uct_pending_req_t *req   = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t       status;

    if (strand_ep_is_failing(ep)) {
        /* its owner purges them when told of the failure */
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    if (!(ep->flags & STRAND_EP_FLAG_FAILED)) {
        if (strand_ep_fc_wnd(ep) <= 0) {
            /* waiting for credits, not for a send queue: the others go on (one of
             * them may be the grant its peer waits for) */
            return strand_ep_pending_no_credits(iface, ep);
        }
        if (!strand_ep_can_send(iface, ep)) {
            if (ep->txq != STRAND_TXQ_NONE) {
                return strand_ep_wait_room(iface, ep);
            }
            if (strand_ep_lease_waits(iface, ep)) {
                /* for room on its destination's send queue: the others go on */
                return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
            }
            /* waiting for a send queue: everybody after waits too, and the eps
             * holding one give it back after their quota */
            strand_iface_want_txq(iface);
            return UCS_ARBITER_CB_RESULT_STOP;
        }
    }
    ep->flags |= STRAND_EP_FLAG_IN_PENDING;
    status = req->func(req);
    ep->flags &= ~STRAND_EP_FLAG_IN_PENDING;
    if (status == UCS_OK) {
        /* the arbiter takes it out once this returns: nothing posts
         * before (its callback may have freed it already) */
        strand_ep_pending_gone(iface, ep, 1);
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    } else if ((status == UCS_ERR_NO_RESOURCE) && (strand_ep_fc_wnd(ep) <= 0)) {
        return strand_ep_pending_no_credits(iface, ep);
    } else if ((status == UCS_ERR_NO_RESOURCE) && (ep->checked_gets > 0)) {
        /* a flush behind checked GETs: the last of them schedules it */
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    } else if ((status == UCS_ERR_NO_RESOURCE) &&
               (ep->txq == STRAND_TXQ_NONE)) {
        if (!ucs_list_is_empty(&ep->txq_wait)) {
            /* the send's lease attempt put it in its send queue's waiters */
            return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
        }
        strand_iface_want_txq(iface);
        return UCS_ARBITER_CB_RESULT_STOP;
    } else if ((status == UCS_ERR_NO_RESOURCE) &&
               !strand_iface_integrity_can_start(iface)) {
        /* a checked GET without a landing mkey: scheduled again when one
         * is free (strand_iface_integrity_progress) */
        iface->integrity_starved = 1;
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    } else if (status == UCS_ERR_NO_RESOURCE) {
        return strand_ep_wait_room(iface, ep);
    }
    return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
}

void strand_ep_dispatch_pending(strand_iface_t *iface)
{
    /* whoever still waits for a send queue says so again (and a post refused
     * before looks again) */
    iface->txq_wanted = 0;
    strand_iface_tx_beat(iface);
    ucs_arbiter_dispatch(&iface->arbiter, 1, strand_ep_pending_cb, iface);
    if (ucs_unlikely(iface->txq_wanted)) {
        /* a send queue goes back once its WQEs completed */
        strand_txq_signal_tails(iface);
    }
}

void strand_ep_schedule(strand_iface_t *iface, strand_ep_t *ep)
{
    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    }
}

static ucs_arbiter_cb_result_t
strand_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                   ucs_arbiter_elem_t *elem, void *arg)
{
    strand_purge_args_t *args = arg;
    uct_pending_req_t   *req  = ucs_container_of(elem, uct_pending_req_t, priv);

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void strand_ep_pending_drop(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_purge_args_t args = {NULL, NULL};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group, strand_ep_purge_cb,
                            &args);
}

void strand_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                             void *arg)
{
    strand_ep_t        *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t     *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    strand_purge_args_t args  = {cb, arg};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group, strand_ep_purge_cb,
                            &args);
    strand_ep_pending_gone(iface, ep, ep->pending);
}

/* Room again: the eps waiting for it go back to the pending dispatch. */
void strand_txq_wake_waiters(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_ep_t *ep;

    if (ucs_likely(ucs_list_is_empty(&txq->waiters)) ||
        !strand_txq_has_room(iface, txq)) {
        return;
    }
    while (!ucs_list_is_empty(&txq->waiters)) {
        ep = ucs_list_extract_head(&txq->waiters, strand_ep_t, txq_wait);
        ucs_list_head_init(&ep->txq_wait);
        strand_ep_schedule(iface, ep);
    }
}

void strand_txq_held_go(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_unhold(iface, txq);
    strand_txq_set_state(iface, txq, STRAND_TXQ_ACTIVE);
    strand_txq_wake_waiters(iface, txq);
    if (txq->ep != NULL) {
        strand_ep_schedule(iface, txq->ep);
    }
}

void strand_txq_held_abort(strand_iface_t *iface, strand_txq_t *txq)
{
    int err;

    if (txq->held_db == NULL) {
        return; /* released: its own errors tell */
    }
    if (txq->outstanding > 0) {
        /* nothing held ran: ERR flushes each, a CQE apiece */
        err = strand_dev_qp_to_err(iface->dev, &txq->qp);
        if (err == 0) {
            strand_txq_set_state(iface, txq, STRAND_TXQ_DRAINING);
        } else {
            ucs_error("%s: QP 0x%x whose doorbells were held: to ERR: %s",
                      iface->dev->info.name, txq->qp.qpn, strerror(err));
            strand_txq_set_state(iface, txq, STRAND_TXQ_BROKEN);
        }
    }
    strand_txq_unhold(iface, txq);
}
