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

#include "rc_iface.h"

/* rc_strand's part of the shared code */
extern const strand_tl_ops_t strand_rc_tl_ops;

/* how the interface's RC QPs are made (the endpoints' and the connection
 * manager's responder QPs) */
void strand_rc_qp_attr(const strand_iface_t *iface,
                       strand_dev_rc_attr_t *attr);
/* the QP of ep was connected: what ep posted since it was made goes to
 * the device, its pending requests go */
void strand_rc_qp_connected(strand_iface_t *iface, strand_ep_t *ep);
/* the QP of ep will not be connected (refused, its peer gone): to ERR,
 * every WQE posted comes back flushed */
void strand_rc_qp_abort(strand_iface_t *iface, strand_ep_t *ep);

#endif
