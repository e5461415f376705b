/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TX policy of dc_strand: on which DCI, and which of its streams, an
 * endpoint posts (UCX_DC_STRAND_TX_POLICY).
 *
 * An endpoint leases a (DCI, stream) at its first operation and gives it
 * back when its last one retired, so that its operations stay in order on
 * one stream while any is outstanding:
 *   dcs        a DCI of its own (stream 0), from a stack of free DCIs;
 *   dcs_quota  the same, but once another endpoint waits for a DCI the
 *              holder's lease ends at QUOTA operations (lease_wqes);
 *   streams    any DCI, shared with other endpoints, each on a stream of
 *              its own (STREAM_MAP=ep) or shared by the endpoints to one
 *              peer NIC (STREAM_MAP=peer). An error fails the endpoints its
 *              stream's failure belongs to; the others' flushed work is
 *              posted again (common/recovery.c).
 */
#ifndef STRAND_DC_POLICY_H_
#define STRAND_DC_POLICY_H_

#include "dc.h"
#include "uct_mlx5/common/ep_post.h"

/* the names of the policies and stream maps (UCX_DC_STRAND_TX_POLICY,
 * UCX_DC_STRAND_STREAM_MAP) */
extern const char *strand_dc_stream_map_names[];
extern const char *strand_dc_tx_policy_names[];

/* Lease a (DCI, stream) for ep: UCS_OK, or UCS_ERR_NO_RESOURCE when none
 * can be had now (none free, no room, recovering). */
ucs_status_t strand_dc_policy_lease(strand_iface_t *iface, strand_ep_t *ep);
/* ep has nothing outstanding any more: give its lease back. */
void strand_dc_policy_release(strand_iface_t *iface, strand_ep_t *ep);
/* Whether ep could post now, without changing anything. */
int strand_dc_policy_can_post(strand_iface_t *iface, strand_ep_t *ep);
/* dcs_quota: the lessee of dci posted QUOTA WQEs since its lease began */
int strand_dc_policy_quota_spent(strand_iface_t     *iface,
                                 const strand_txq_t *dci);
/* The configuration of the DCIs the policy needs (streams, errored). */
void strand_dc_policy_dci_attr(strand_dc_iface_t    *iface,
                               strand_dev_sq_attr_t *attr);
/* The policy's part of the pool: the free stack. */
void strand_dc_policy_init(strand_dc_iface_t *iface);
/* a DCI whose lessee is gone (dcs) may go back once idle */
void strand_dc_policy_dci_idle(strand_iface_t *iface, strand_txq_t *dci);

#endif
