/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's connection manager: it connects the RC QP of a new endpoint
 * to a QP of the peer interface by itself, so that rc_strand connects to an
 * interface (UCT_IFACE_FLAG_CONNECT_TO_IFACE) and UCP runs on it without an
 * auxiliary transport (UCP 1.13 wires a CONNECT_TO_EP transport only through
 * one with asynchronous callbacks, as ud is for UCX's rc; strand has none).
 *
 * Its messages go over a companion dc_strand interface, whose DCT number is
 * the rc_strand interface address:
 *
 *   requester (uct_ep_create)                 peer interface
 *   RC QP made (INIT), ep posts nothing
 *   REQ {conn id, its QP, its device and
 *        manager addresses}          ------>  a responder QP of its own (no
 *                                             ep: receives land on the SRQ,
 *                                             READs and atomics answered),
 *                                             connected to the requester's
 *                                    <------  REP {conn id, responder QP}
 *   QP connected to it (RTS): pending
 *   requests go
 *   ...
 *   uct_ep_destroy: DISC {conn id, QP} ---->  responder QP destroyed
 *
 * An endpoint's QP carries its sends; the peer's answers come on the peer's
 * own endpoint, a QP pair of its own. A REQ that cannot be delivered (the
 * peer is gone) fails the endpoint as any operation to that peer would; a
 * REP refusing the connection fails it with the peer's status. Until the
 * REP the endpoint takes work: its WQEs wait in its QP with their
 * doorbells held (common/txq_pool.c, strand_sq_hold).
 *
 * Who runs it: the worker's async thread watches the manager interface's
 * channel and answers REQs itself (a peer's endpoint connects while this
 * process computes: UCX's tests drive one side only). It takes a REP in
 * too: it connects the QP and rings the doorbells the endpoint held, so
 * that what the user posted goes without this side's progress; the
 * worker posts under the post lock meanwhile (rc_locked.h), and an answer
 * that meets the lock held is left to the worker. A DISC fails
 * rendezvous of the user's, whose completions run user code: it is news
 * the worker's progress takes in (the async thread signals rc_strand's
 * event fd for a worker asleep in it, as it does when a REP scheduled
 * pending requests). Both hold the async context: everything here, and
 * the responder QPs' rendezvous, is touched under it
 * (strand_rc_cm_async). Without an async thread (signal mode, or
 * MLX5_SINGLE_THREADED=1) progress does it all, and what an endpoint
 * posted before its answer goes with the progress that takes it in.
 */
#ifndef STRAND_RC_CM_H_
#define STRAND_RC_CM_H_

#include "uct_mlx5/common/iface.h"

#include <ucs/async/async_fwd.h>
#include <ucs/datastruct/string_buffer.h>

struct strand_ep;
typedef struct strand_rc_cm strand_rc_cm_t;

/* The manager of iface (rc_strand), with its companion interface. */
ucs_status_t strand_rc_cm_open(strand_iface_t *iface, uct_worker_h worker,
                               const uct_iface_params_t    *params,
                               const uct_iface_config_t    *tl_config,
                               const strand_iface_config_t *rc_config,
                               strand_rc_cm_t             **cm_p);
/* The async thread no longer answers requests (before the interface's
 * rendezvous go); close stops it too. */
void strand_rc_cm_stop(strand_rc_cm_t *cm);
/* Responder QPs and the manager's endpoints go, then its interface. */
void strand_rc_cm_close(strand_rc_cm_t *cm);

/* The interface address of rc_strand (the companion's DCT), its size */
size_t strand_rc_cm_iface_addr_len(strand_rc_cm_t *cm);
ucs_status_t
    strand_rc_cm_iface_addr(strand_rc_cm_t *cm, uct_iface_addr_t *addr);
int strand_rc_cm_is_reachable(strand_rc_cm_t          *cm,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr);

/* Is ep's connection to the peer interface at dev_addr and iface_addr
 * (the address ep was made with)? A connection whose peer failed is to no
 * one. */
int strand_rc_cm_is_connected(strand_rc_cm_t *cm, const struct strand_ep *ep,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr);

/* ep (its QP made, not connected) asks the interface at dev_addr and
 * iface_addr for a QP; it posts once the answer connected it. */
ucs_status_t strand_rc_cm_connect(strand_rc_cm_t *cm, struct strand_ep *ep,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_iface_addr_t  *iface_addr);
/* ep is destroyed: the peer is told to drop its QP (now, or once it
 * answered). */
void strand_rc_cm_forget(strand_rc_cm_t *cm, struct strand_ep *ep);
/* uct_ep_check: a connected ep probes its peer as dc_strand's do; one
 * still connecting probes the path of its request */
ucs_status_t strand_rc_cm_check(strand_rc_cm_t *cm, struct strand_ep *ep,
                                uct_completion_t *comp);
/* messages in and out, failures of the manager's endpoints, news from the
 * async thread (the caller holds the async context, below) */
unsigned strand_rc_cm_progress(strand_rc_cm_t *cm);
/* The worker's async context: its thread answers requests, so everything
 * that touches the manager, or the responder QPs' rendezvous, holds it. */
ucs_async_context_t *strand_rc_cm_async(strand_rc_cm_t *cm);
/* Whether the async thread takes answers in (and connects endpoints):
 * then the worker posts under the post lock while a QP waits for one
 * (rc_locked.h) */
int strand_rc_cm_async_connects(strand_rc_cm_t *cm);
/* The answers the async thread left to the worker (it held the post
 * lock): run holds the async context, take takes it. */
void strand_rc_cm_answers_run(strand_rc_cm_t *cm);
void strand_rc_cm_answers_take(strand_rc_cm_t *cm);
/* rc_strand's event fd and arm: its channel's, and news of the manager */
ucs_status_t strand_rc_cm_event_fd(strand_rc_cm_t *cm, int *fd_p);
ucs_status_t strand_rc_cm_event_arm(strand_rc_cm_t *cm, unsigned events);
/* "connecting N connected N failed N responders N peers N": the VFS file
 * 'connections' */
void strand_rc_cm_show(strand_rc_cm_t *cm, ucs_string_buffer_t *strb);

#endif
