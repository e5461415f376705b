/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pending requests and the waiters of a send queue (ep_pending.c).
 */
#ifndef STRAND_EP_PENDING_H_
#define STRAND_EP_PENDING_H_

#include "ep.h"
#include "txq.h"

ucs_status_t
strand_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags);
void strand_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                             void *arg);
/* ep goes: its pending requests are dropped, no callback runs */
void strand_ep_pending_drop(strand_iface_t *iface, strand_ep_t *ep);
/* queue a pending request of ep (uct_ep_pending_add, the transport's own
 * grants): it waits behind the ep's others */
void strand_ep_pending_push(strand_iface_t *iface, strand_ep_t *ep,
                            uct_pending_req_t *req);
/* count pending requests of ep left its group */
void strand_ep_pending_gone(strand_iface_t *iface, strand_ep_t *ep,
                            uint32_t count);
/* dispatch the pending requests of the iface (from progress) */
void strand_ep_dispatch_pending(strand_iface_t *iface);
/* the send queue of ep retired work: give its pending requests a chance */
void strand_ep_schedule(strand_iface_t *iface, strand_ep_t *ep);
/* txq has room: the eps waiting for it are scheduled, in order */
void strand_txq_wake_waiters(strand_iface_t *iface, strand_txq_t *txq);
/* the doorbells txq held go to the device (strand_txq_hold): it takes
 * work (ACTIVE), its waiters and its lessee are scheduled */
void strand_txq_held_go(strand_iface_t *iface, strand_txq_t *txq);
/* ... or they will not run: to ERR, each comes back flushed */
void strand_txq_held_abort(strand_iface_t *iface, strand_txq_t *txq);

#endif
