/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion events: the interface's own completion channel, and
 * arming its CQs the way a direct-verbs user must (spec section 9): the arm
 * doorbell carries the transport's consumer index and an arm sequence number
 * that moves on with every event received; ibv_req_notify_cq would use
 * rdma-core's consumer index, which never moves here.
 *
 * Who wakes whom:
 *   SEND_COMP  arms the send CQ, and the receive CQ for solicited CQEs: a
 *              sender waiting for a flow-control grant must wake when it
 *              arrives (grants are sent solicited).
 *   RECV       arms the receive CQ for every CQE.
 *   RECV_SIG   arms the receive CQ for solicited CQEs: active messages and
 *              flow-control requests are sent solicited; keepalive probes
 *              are not.
 * rc_strand's connection manager (a DC interface of its own, rc/rc_cm.c)
 * is driven by the worker's async thread from its own channel: it wakes
 * the worker itself when it has news for it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface.h"
#include "mlx5/cqe.h"
#include "event.h"

#include <ucs/datastruct/arbiter.h>

ucs_status_t strand_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    *fd_p = iface->chan->fd;
    return UCS_OK;
}

static int
strand_iface_cq_has_work(strand_dev_cq_t *cq, unsigned cqe_shift, uint32_t ci)
{
    return strand_cqe_get(cq->dv.buf, cq->dv.cqe_cnt, cqe_shift, ci) != NULL;
}

static void
strand_iface_cq_arm(strand_dev_cq_t *cq, uint8_t sn, uint32_t ci, int solicited)
{
    strand_cq_arm(cq->dv.dbrec, cq->dv.cq_uar, cq->dv.cqn, sn, ci, solicited);
    if (cq->arm_kick != NULL) {
        cq->arm_kick(cq->arm_kick_arg);
    }
}

/* An event of cq consumed an arm of it: its sequence number moves on.
 * Returns 0 when cq is not iface's. */
static int strand_iface_count_event(strand_iface_t *iface, strand_dev_cq_t *cq)
{
    unsigned i;

    for (i = 0; i < iface->num_tx_cqs; ++i) {
        if (cq == &iface->tx_cqs[i].cq) {
            ++iface->tx_cqs[i].arm_sn;
            return 1;
        }
    }
    if (cq == &iface->rx_cq) {
        ++iface->rx_arm_sn;
    } else {
        return 0;
    }
    return 1;
}

/* Take the events that woke us off the channel. */
static void strand_iface_ack_events(strand_iface_t *iface)
{
    strand_dev_t    *dev = iface->dev;
    strand_dev_cq_t *cq;

    while (dev->ops->get_cq_event(dev, iface->chan, &cq) == 0) {
        strand_iface_count_event(iface, cq);
    }
}

static int strand_iface_tx_has_work(strand_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_tx_cqs; ++i) {
        if (strand_iface_cq_has_work(&iface->tx_cqs[i].cq, iface->tx_cqe_shift,
                                     iface->tx_cqs[i].ci)) {
            return 1;
        }
    }
    return 0;
}

static int strand_iface_has_work(strand_iface_t *iface, int tx, int rx)
{
    return !ucs_arbiter_is_empty(&iface->arbiter) ||
           (tx && strand_iface_tx_has_work(iface)) ||
           (rx && strand_iface_cq_has_work(&iface->rx_cq, iface->rx_cqe_shift,
                                           iface->rx_ci));
}

void strand_tx_cq_arm(strand_tx_cq_t *tx)
{
    strand_iface_cq_arm(&tx->cq, tx->arm_sn, tx->ci, 0);
}

static void
strand_iface_arm_cqs(strand_iface_t *iface, int tx, int rx, int rx_sol)
{
    unsigned i;

    for (i = 0; tx && (i < iface->num_tx_cqs); ++i) {
        strand_tx_cq_arm(&iface->tx_cqs[i]);
    }
    if (rx) {
        strand_iface_cq_arm(&iface->rx_cq, iface->rx_arm_sn, iface->rx_ci,
                            rx_sol);
    }
}

ucs_status_t strand_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    strand_iface_t *iface  = ucs_derived_of(tl_iface, strand_iface_t);
    int             tx     = !!(events & UCT_EVENT_SEND_COMP);
    int             rx     = !!(events &
                (UCT_EVENT_SEND_COMP | UCT_EVENT_RECV | UCT_EVENT_RECV_SIG));
    int             rx_sol = !(events & UCT_EVENT_RECV);

    strand_iface_ack_events(iface);
    if (strand_iface_has_work(iface, tx, rx)) {
        return UCS_ERR_BUSY;
    }
    strand_iface_arm_cqs(iface, tx, rx, rx_sol);
    return UCS_OK;
}
