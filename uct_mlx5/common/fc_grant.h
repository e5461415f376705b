/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver flow control (fc.h says the protocol): the credit table, the
 * receiver's side (requests in, grants out from endpoints of its own), the
 * requester's retry of an overdue grant. The request itself is sent from
 * the post path (ep_post.c).
 */
#ifndef STRAND_FC_GRANT_H_
#define STRAND_FC_GRANT_H_

#include "iface.h"

ucs_status_t strand_fc_init(struct strand_iface *iface, int enabled,
                            unsigned wnd_size, double soft_thresh,
                            double req_timeout);
void         strand_fc_cleanup(struct strand_iface *iface);

/* endpoint registration (its id travels in requests and grants) */
ucs_status_t strand_fc_ep_add(struct strand_iface *iface, struct strand_ep *ep);
void strand_fc_ep_remove(struct strand_iface *iface, struct strand_ep *ep);

/* eps out of credits whose grant is overdue ask again (cheap when none
 * waits: called from every progress) */
void strand_fc_check_slow(struct strand_iface *iface);
static inline void
strand_fc_progress(struct strand_iface *iface, strand_fc_t *fc)
{
    if (ucs_unlikely(fc->waiting > 0)) {
        strand_fc_check_slow(iface);
    }
}

/* an FC_REQUEST or FC_GRANT arrived (payload after the AM id byte) */
void strand_fc_handle(struct strand_iface *iface, uint8_t am_id,
                      const void *payload, size_t length);

#endif
