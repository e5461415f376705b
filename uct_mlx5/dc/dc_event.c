/*
 * dc_strand completion events: the interface's own completion channel, and
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
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_iface.h"
#include "mlx5/cqe.h"

#include <ucs/datastruct/arbiter.h>

ucs_status_t strand_dc_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    *fd_p = iface->channel.fd;
    return UCS_OK;
}

static int strand_dc_cq_has_work(strand_dev_cq_t *cq, unsigned cqe_shift,
                                 uint32_t ci)
{
    return strand_cqe_get(cq->dv.buf, cq->dv.cqe_cnt, cqe_shift, ci) != NULL;
}

static void strand_dc_cq_arm(strand_dev_cq_t *cq, uint8_t sn, uint32_t ci,
                             int solicited)
{
    strand_cq_arm(cq->dv.dbrec, cq->dv.cq_uar, cq->dv.cqn, sn, ci, solicited);
    if (cq->arm_kick != NULL) {
        cq->arm_kick(cq->arm_kick_arg);
    }
}

/* Take the events that woke us off the channel: each one consumed an arm of
 * its CQ, so that CQ's sequence number moves on. */
static void strand_dc_iface_ack_events(strand_dc_iface_t *iface)
{
    strand_dev_t *dev = iface->dev;
    strand_dev_cq_t *cq;

    while (dev->ops->get_cq_event(dev, &iface->channel, &cq) == 0) {
        if (cq == &iface->tx_cq) {
            ++iface->tx_arm_sn;
        } else if (cq == &iface->rx_cq) {
            ++iface->rx_arm_sn;
        }
    }
}

static int strand_dc_iface_has_work(strand_dc_iface_t *iface, int tx, int rx)
{
    return (tx && strand_dc_cq_has_work(&iface->tx_cq, iface->tx_cqe_shift,
                                        iface->tx_ci)) ||
           (rx && strand_dc_cq_has_work(&iface->rx_cq, iface->rx_cqe_shift,
                                        iface->rx_ci));
}

ucs_status_t strand_dc_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    int tx        = !!(events & UCT_EVENT_SEND_COMP);
    int rx        = !!(events & (UCT_EVENT_SEND_COMP | UCT_EVENT_RECV |
                                 UCT_EVENT_RECV_SIG));
    int rx_sol    = !(events & UCT_EVENT_RECV);

    strand_dc_iface_ack_events(iface);
    if (!ucs_arbiter_is_empty(&iface->arbiter) ||
        strand_dc_iface_has_work(iface, tx, rx)) {
        return UCS_ERR_BUSY;
    }
    if (tx) {
        strand_dc_cq_arm(&iface->tx_cq, iface->tx_arm_sn, iface->tx_ci, 0);
    }
    if (rx) {
        strand_dc_cq_arm(&iface->rx_cq, iface->rx_arm_sn, iface->rx_ci,
                         rx_sol);
    }
    return UCS_OK;
}
