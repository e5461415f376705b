/*
 * The TX policy of dc_strand: on which DCI, and which of its streams, an
 * endpoint posts (UCX_DC_STRAND_TX_POLICY).
 *
 * An endpoint leases a (DCI, stream) at its first operation and gives it
 * back when its last one retired, so that its operations stay in order on
 * one stream while any is outstanding:
 *   dcs        a DCI of its own (stream 0), from a stack of free DCIs;
 *   dcs_quota  the same, but while another endpoint waits for a DCI the
 *              holder posts at most QUOTA more operations;
 *   streams    any DCI, shared with other endpoints, each on a stream of
 *              its own (STREAM_MAP=ep) or shared by the endpoints to one
 *              peer NIC (STREAM_MAP=peer). An error fails the endpoints its
 *              stream's failure belongs to; the others' flushed work is
 *              posted again (dc_recovery.c).
 */
#ifndef STRAND_DC_POLICY_H_
#define STRAND_DC_POLICY_H_

#include "dc_dci.h"
#include "dc_ep.h"

/* Lease a (DCI, stream) for ep: UCS_OK, or UCS_ERR_NO_RESOURCE when none
 * can be had now (none free, no room, recovering). */
ucs_status_t strand_dc_policy_lease(strand_dc_iface_t *iface,
                                    strand_dc_ep_t *ep);
/* ep has nothing outstanding any more: give its lease back. */
void strand_dc_policy_release(strand_dc_iface_t *iface, strand_dc_ep_t *ep);
/* Whether ep could post now, without changing anything. */
int strand_dc_policy_can_post(strand_dc_iface_t *iface, strand_dc_ep_t *ep);
/* The configuration of the DCIs the policy needs (streams, errored). */
void strand_dc_policy_dci_attr(strand_dc_iface_t *iface,
                               strand_dev_dci_attr_t *attr);
/* The policy's part of the pool (free stack) and its invariants. */
ucs_status_t strand_dc_policy_init(strand_dc_iface_t *iface);
void strand_dc_policy_cleanup(strand_dc_iface_t *iface);
/* a DCI whose lessee is gone (dcs) may go back once idle */
void strand_dc_policy_dci_idle(strand_dc_iface_t *iface,
                               strand_dc_dci_t *dci);

/* The DCI of ep's lease when it may post on it now: leased, room in the
 * SQ, its stream healthy, nothing of ep waiting to be posted again, not
 * moving to another DCI, and (dcs_quota) its quota left while others
 * wait. */
static UCS_F_ALWAYS_INLINE strand_dc_dci_t *
strand_dc_policy_ready(strand_dc_iface_t *iface, strand_dc_ep_t *ep)
{
    strand_dc_dci_t *dci;

    if (ucs_unlikely(ep->dci == STRAND_DC_DCI_NONE)) {
        return NULL;
    }
    dci = &iface->dcis[ep->dci];
    if (ucs_unlikely(!strand_dc_dci_has_room(iface, dci) ||
                     (dci->streams[ep->stream].state !=
                      STRAND_DC_STREAM_OK) ||
                     (dci->state != STRAND_DC_DCI_ACTIVE) ||
                     (ep->held > 0) ||
                     (ep->flags & STRAND_DC_EP_FLAG_MOVING) ||
                     (iface->dci_wanted &&
                      (dci->posts >= iface->config.quota)))) {
        return NULL;
    }
    return dci;
}

#endif
