/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's endpoints (rc_ep.c): their class and UCT operations of
 * their own.
 */
#ifndef STRAND_RC_EP_H_
#define STRAND_RC_EP_H_

#include "rc.h"

ucs_status_t strand_rc_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void         strand_rc_ep_destroy(uct_ep_h tl_ep);
ucs_status_t
strand_rc_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_ptr_t
strand_rc_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags,
                            uct_completion_t *comp);

#endif
