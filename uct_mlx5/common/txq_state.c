/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's readiness (ep.h): what its post path checks, kept up to
 * date where its state, its lease's or its send queue's change.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "txq_state.h"
#include "stats.h"

#include <ucs/debug/assert.h>

/* What ep's readiness is (iface.h, endpoints), from its state; pending: whether
 * requests wait in its group. */
static strand_txq_t *
strand_ep_tx_state(strand_iface_t *iface, const strand_ep_t *ep, int pending)
{
    strand_txq_t *txq;

    if ((ep->txq == STRAND_TXQ_NONE) || pending || (ep->held > 0) ||
        (ep->flags & (STRAND_EP_FLAG_FAILED | STRAND_EP_FLAG_MOVING))) {
        return NULL;
    }
    txq = &iface->txqs[ep->txq];
    if ((txq->state != STRAND_TXQ_ACTIVE) ||
        (txq->lanes[ep->lane].state != STRAND_LANE_OK)) {
        return NULL;
    }
    return txq;
}

void strand_ep_tx_update(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *txq = strand_ep_tx_state(iface, ep, ep->pending > 0);

    strand_iface_tx_beat(iface);
    ep->tx_txq = txq;
    if (txq != NULL) {
        ep->tx_am_tail  = strand_ep_ctrl_tail(ep, txq, MLX5_WQE_CTRL_SOLICITED,
                                              0);
        ep->tx_put_tail = strand_ep_ctrl_tail(ep, txq, STRAND_WQE_CTRL_FM_NONE,
                                              0);
        ep->tx_am_kind  = strand_op_light_kind(ep->lane, MLX5_OPCODE_SEND);
        ep->tx_put_kind = strand_op_light_kind(ep->lane,
                                               MLX5_OPCODE_RDMA_WRITE);
    }
    strand_ep_gate(iface, ep);
}

void strand_ep_gate(strand_iface_t *iface, strand_ep_t *ep)
{
    ep->tx_gate = ((ep->tx_txq != NULL) &&
                   (ep->fence_beat == iface->fence_beat) &&
                   !iface->txq_wanted) ?
                          iface->tx_gate :
                          iface->tx_gate - 1;
}

void strand_ep_tx_update_txq(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_ep_t *ep;

    if (txq->users == 0) {
        return;
    }
    if ((txq->ep != NULL) && (txq->users == 1)) {
        /* dcs, rc_strand: its one lessee */
        strand_ep_tx_update(iface, txq->ep);
        return;
    }
    ucs_list_for_each(ep, &iface->eps, list) {
        if (ep->txq == txq->index) {
            strand_ep_tx_update(iface, ep);
        }
    }
}

#ifdef STRAND_DEBUG
void strand_ep_tx_verify(strand_iface_t *iface, strand_ep_t *ep)
{
    int           pending = !ucs_arbiter_group_is_empty(&ep->arb_group);
    strand_txq_t *txq     = strand_ep_tx_state(iface, ep, pending);

    ucs_assertv_always(pending == (ep->pending > 0),
                       "ep %p: pending requests %d, counted %u", ep, pending,
                       ep->pending);
    ucs_assertv_always(ep->tx_txq == txq,
                       "ep %p: cached readiness %p, its state says %p (txq "
                       "%u stream %u flags 0x%x held %u)",
                       ep, ep->tx_txq, txq, ep->txq, ep->lane, ep->flags,
                       ep->held);
    ucs_assertv_always(
            (txq == NULL) ||
                    ((ep->tx_am_tail ==
                      strand_ep_ctrl_tail(ep, txq, MLX5_WQE_CTRL_SOLICITED,
                                          0)) &&
                     (ep->tx_put_tail ==
                      strand_ep_ctrl_tail(ep, txq, STRAND_WQE_CTRL_FM_NONE,
                                          0)) &&
                     (ep->tx_am_kind ==
                      strand_op_light_kind(ep->lane, MLX5_OPCODE_SEND)) &&
                     (ep->tx_put_kind ==
                      strand_op_light_kind(ep->lane, MLX5_OPCODE_RDMA_WRITE))),
            "ep %p: templates of another stream", ep);
    ucs_assertv_always((ep->tx_gate != iface->tx_gate) ||
                               ((txq != NULL) &&
                                (ep->fence_beat == iface->fence_beat) &&
                                !iface->txq_wanted),
                       "ep %p: gate open, ready %p, fence beat %u/%u, queue "
                       "wanted %u",
                       ep, txq, ep->fence_beat, iface->fence_beat,
                       iface->txq_wanted);
}
#endif

/* Whether s takes work: its held WQEs are posted again only then. */
static int strand_lane_open(const strand_txq_t *txq, const strand_lane_t *s)
{
    return (txq->state == STRAND_TXQ_ACTIVE) && (s->state == STRAND_LANE_OK);
}

void strand_txq_set_state(strand_iface_t *iface, strand_txq_t *txq,
                          strand_txq_state_t state)
{
    unsigned i;

    if (txq->state == state) {
        return;
    }
    for (i = 0; (state != STRAND_TXQ_ACTIVE) && (i < iface->config.num_lanes);
         ++i) {
        txq->lanes[i].closures += strand_lane_open(txq, &txq->lanes[i]);
    }
    txq->state = state;
    strand_iface_tx_beat(iface); /* a lease may be free now */
    strand_ep_tx_update_txq(iface, txq);
}

void strand_lane_set_state(strand_iface_t *iface, strand_txq_t *txq,
                           strand_lane_t *s, strand_lane_state_t state)
{
    if (s->state != state) {
        s->closures += (state != STRAND_LANE_OK) && strand_lane_open(txq, s);
        s->state = state;
        strand_iface_tx_beat(iface);
        strand_ep_tx_update_txq(iface, txq);
    }
}

ucs_status_t
strand_ep_lease(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t **txq_p)
{
    ucs_status_t status;

    strand_ep_tx_verify(iface, ep);
    /* the transport answers (a lease, or why not); the ep's readiness is
     * its own to update */
    status = iface->tl->sq_lease(iface, ep);
    strand_ep_tx_update(iface, ep);
    if (status == UCS_OK) {
        *txq_p = strand_ep_txq_ready(iface, ep);
        if (*txq_p != NULL) {
            return UCS_OK;
        }
        status = UCS_ERR_NO_RESOURCE;
    }
    if (status == UCS_ERR_NO_RESOURCE) {
        STRAND_EP_STAT(ep, TXQ_WAIT);
    }
    return status;
}
