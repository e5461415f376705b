/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's send queues: an RC QP per endpoint, in a slot of the shared
 * code's send queues, the endpoint's for good (its part of the shared code,
 * strand_tl_ops_t, is here). A new endpoint posts at once: its WQEs wait in
 * the QP with their doorbells held until the connection manager connected
 * it (rc_cm.h), or come back flushed if it never is. A QP in error is
 * connected to nobody any more: it is not reset, it goes with its
 * endpoint.
 */
#ifndef STRAND_RC_QP_H_
#define STRAND_RC_QP_H_

#include "rc.h"
#include "uct_mlx5/common/txq.h"

/* rc_strand's part of the shared code (strand_tl_ops_t, whose table
 * rc_iface.c makes): its send queues come with its endpoints (open: none);
 * an endpoint's QP now (ep_init), gone with it (ep_cleanup); a QP has no
 * lease to take or give (lease: it waits; release: nothing); idle: the QP
 * of an ep gone goes once its last WQE is back; reset: none, a QP in error
 * is connected to nobody and goes with its ep */
ucs_status_t strand_rc_qp_open(strand_iface_t *iface);
ucs_status_t strand_rc_qp_ep_init(strand_iface_t *iface, strand_ep_t *ep,
                                  const uct_ep_params_t *params);
void         strand_rc_qp_ep_cleanup(strand_iface_t *iface, strand_ep_t *ep);
const char  *strand_rc_qp_peer_str(strand_iface_t *iface, const strand_ep_t *ep,
                                   char *buf, size_t max);
ucs_status_t strand_rc_qp_lease(strand_iface_t *iface, strand_ep_t *ep);
void         strand_rc_qp_release(strand_iface_t *iface, strand_ep_t *ep);
int          strand_rc_qp_can_post(strand_iface_t *iface, strand_ep_t *ep);
void         strand_rc_qp_idle(strand_iface_t *iface, strand_txq_t *txq);
int          strand_rc_qp_reset(strand_iface_t *iface, strand_txq_t *txq);

/* how the interface's RC QPs are made (the endpoints' and the connection
 * manager's responder QPs) */
void strand_rc_qp_attr(const strand_iface_t *iface, strand_dev_rc_attr_t *attr);
/* the QP of ep was connected: what ep posted since it was made goes to
 * the device, its pending requests go */
void strand_rc_qp_connected(strand_iface_t *iface, strand_ep_t *ep);
/* the QP of ep will not be connected (refused, its peer gone): to ERR,
 * every WQE posted comes back flushed */
void strand_rc_qp_abort(strand_iface_t *iface, strand_ep_t *ep);

#endif
