/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's send queues (rc_qp.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_qp.h"
#include "uct_mlx5/common/txq.h"
#include "uct_mlx5/common/ep_post.h"
#include "uct_mlx5/common/port_addr.h"
#include "uct_mlx5/common/ep_pending.h"
#include "uct_mlx5/common/iface_class.h"

#include <ucs/debug/log.h>

#include <errno.h>
#include <string.h>

void strand_rc_qp_attr(const strand_iface_t *iface, strand_dev_rc_attr_t *attr)
{
    const strand_dev_sq_attr_t *d = &iface->sq_attr;

    memset(attr, 0, sizeof(*attr));
    attr->td             = d->td;
    attr->path           = iface->path;
    attr->send_cq        = d->send_cq;
    attr->recv_cq        = (strand_dev_cq_t *)&iface->rx_cq;
    attr->srq            = (strand_dev_srq_t *)&iface->srq;
    attr->scatter_to_cqe = (uint8_t)iface->config.rx_inline;
    attr->max_send_wr    = d->max_send_wr;
    attr->max_send_sge   = d->max_send_sge;
    attr->max_inline     = d->max_inline;
    attr->timeout        = d->timeout;
    attr->retry_cnt      = d->retry_cnt;
    attr->rnr_retry      = d->rnr_retry;
    attr->max_rd_atomic  = d->max_rd_atomic;
    attr->min_rnr_timer  = iface->min_rnr_timer;
}

/* The lowest slot without a QP: slots below txq_hwm are set up, the next
 * one is set up now (MAX_EPS costs memory only as endpoints come). */
static ucs_status_t
strand_rc_qp_slot(strand_iface_t *iface, strand_txq_t **txq_p)
{
    ucs_status_t status;
    unsigned     i;

    for (i = 0; i < iface->txq_hwm; ++i) {
        if ((iface->txqs[i].qp.h == NULL) &&
            (iface->txqs[i].state == STRAND_TXQ_FREE)) {
            *txq_p = &iface->txqs[i];
            return UCS_OK;
        }
    }
    if (iface->txq_hwm == iface->num_txqs) {
        ucs_error("%s: %s: all %u endpoints of the interface are in use "
                  "(UCX_%sMAX_EPS)",
                  iface->dev->info.name, iface->tl_name, iface->num_txqs,
                  iface->cfg_prefix);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    *txq_p = &iface->txqs[iface->txq_hwm];
    status = strand_txq_slot_init(iface, *txq_p, iface->txq_hwm);
    if (status != UCS_OK) {
        return status;
    }
    ++iface->txq_hwm;
    return UCS_OK;
}

/* An endpoint's part: a QP of its own now, its doorbells held until the
 * connection manager connected it (rc/rc_iface.c asks it to). */
ucs_status_t strand_rc_qp_ep_init(strand_iface_t *iface, strand_ep_t *ep,
                                  const uct_ep_params_t *params)
{
    strand_dev_t        *dev = iface->dev;
    strand_dev_rc_attr_t attr;
    strand_txq_t        *txq;
    ucs_status_t         status;
    int                  err;

    UCT_CHECK_PARAM(!(params->field_mask & (UCT_EP_PARAM_FIELD_DEV_ADDR |
                                            UCT_EP_PARAM_FIELD_IFACE_ADDR)),
                    "an rc_strand QP is created without addresses");
    status = strand_rc_qp_slot(iface, &txq);
    if (status != UCS_OK) {
        return status;
    }
    strand_rc_qp_attr(iface, &attr);
    status = strand_iface_tx_cq_get(iface, txq->index, &attr.send_cq);
    if (status != UCS_OK) {
        return status;
    }
    err = strand_dev_create_rc(dev, &attr, &txq->qp);
    if (err != 0) {
        ucs_error("%s: failed to create an RC QP: %s", dev->info.name,
                  strerror(err));
        txq->qp.h = NULL;
        return UCS_ERR_IO_ERROR;
    }
    status = strand_txq_attach_qp(iface, txq);
    if (status == UCS_OK) {
        /* it posts at once, as on a QP wired when it was made (what UCX's
         * tests and UCP expect of a new endpoint) */
        status = strand_txq_hold(iface, txq);
    }
    if (status != UCS_OK) {
        strand_txq_detach_qp(iface, txq);
        return status;
    }
    txq->ep             = ep;
    txq->users          = 1;
    txq->lanes[0].users = 1;
    ep->txq             = txq->index;
    ep->lane            = 0;
    strand_txq_set_state(iface, txq, STRAND_TXQ_ACTIVE);
    strand_ep_tx_update(iface, ep);
    return UCS_OK;
}

void strand_rc_qp_abort(strand_iface_t *iface, strand_ep_t *ep)
{
    if (ep->txq != STRAND_TXQ_NONE) {
        strand_txq_held_abort(iface, &iface->txqs[ep->txq]);
    }
}

void strand_rc_qp_connected(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_held_go(iface, &iface->txqs[ep->txq]);
}

/* An ep whose QP was in error or never connected, or which had nothing
 * outstanding when it went: the QP goes now. */
void strand_rc_qp_idle(strand_iface_t *iface, strand_txq_t *txq)
{
    /* the QP of an ep destroyed with work on the wire goes once the work
     * is back (or with its recovery, strand_rc_qp_reset) */
    if ((txq->ep == NULL) && (txq->outstanding == 0) &&
        (txq->state != STRAND_TXQ_DRAINING)) {
        strand_txq_detach_qp(iface, txq);
        strand_txq_set_state(iface, txq, STRAND_TXQ_FREE);
    }
}

/* The ep goes: its QP now, or once its last WQE is back. */
void strand_rc_qp_ep_cleanup(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *txq;

    if (ep->txq == STRAND_TXQ_NONE) {
        return;
    }
    /* never connected: what it posted comes back flushed */
    strand_rc_qp_abort(iface, ep);
    txq                 = &iface->txqs[ep->txq];
    txq->ep             = NULL;
    txq->users          = 0;
    txq->lanes[0].users = 0;
    ep->txq             = STRAND_TXQ_NONE;
    strand_ep_tx_update(iface, ep);
    if (txq->state == STRAND_TXQ_BROKEN) {
        /* in error since: nothing more of it comes back */
        strand_txq_detach_qp(iface, txq);
        strand_txq_set_state(iface, txq, STRAND_TXQ_FREE);
        return;
    }
    if (txq->state == STRAND_TXQ_ACTIVE) {
        strand_txq_set_state(iface, txq, STRAND_TXQ_FREE);
    }
    strand_rc_qp_idle(iface, txq);
}

/* An RC QP in error is connected to nobody any more: its ep has failed,
 * and the QP goes with the ep (or now, if it is gone). */
int strand_rc_qp_reset(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_set_state(iface, txq, STRAND_TXQ_BROKEN);
    if (txq->ep == NULL) {
        strand_txq_detach_qp(iface, txq);
        strand_txq_set_state(iface, txq, STRAND_TXQ_FREE);
    }
    return ENOTCONN;
}

/* Its own QP: not connected yet, full, or in error; it waits. */
ucs_status_t strand_rc_qp_lease(strand_iface_t *iface, strand_ep_t *ep)
{
    return UCS_ERR_NO_RESOURCE;
}

/* The QP stays with its ep when it has nothing outstanding. */
void strand_rc_qp_release(strand_iface_t *iface, strand_ep_t *ep)
{
}

int strand_rc_qp_can_post(strand_iface_t *iface, strand_ep_t *ep)
{
    return strand_ep_txq_ready(iface, ep) != NULL;
}

/* the peer of ep for the log: the path to its QP as a DC address vector
 * names it (rc_cm.c sets it once connected) */
const char *strand_rc_qp_peer_str(strand_iface_t *iface, const strand_ep_t *ep,
                                  char *buf, size_t max)
{
    return strand_av_str(&ep->av, buf, max);
}

/* Its send queues come with its endpoints. */
ucs_status_t strand_rc_qp_open(strand_iface_t *iface)
{
    return UCS_OK;
}
