/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared endpoint: its state (the readiness its post path checks, its
 * lease of a send queue, flow control, failure). What it does is in
 * ep_ops.c (the UCT operations), ep_post.h (how an operation gets onto a
 * send queue), txq_state.c, ep_pending.c and ep_fail.c.
 */
#ifndef STRAND_EP_H_
#define STRAND_EP_H_

#include "iface.h"

/* ds units of the ctrl segment and the address vector */
#define STRAND_EP_DS(_ep) (1u + (_ep)->av_ds)

/* ep takes work without sending it (above) */
static inline int strand_ep_is_failing(const strand_ep_t *ep)
{
    return (ep->flags &
            (STRAND_EP_FLAG_FAILED | STRAND_EP_FLAG_FAIL_PENDING)) ==
           (STRAND_EP_FLAG_FAILED | STRAND_EP_FLAG_FAIL_PENDING);
}

#endif
