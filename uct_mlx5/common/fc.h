/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver flow control of dc_strand active messages (credits, as UCX's
 * DC FC). Every endpoint may have FC_WND_SIZE active messages in flight
 * towards a peer before the peer's progress hands it new credits:
 *
 *   sender                                    receiver
 *   AM, AM, ... (window down to SOFT_THRESH)
 *   FC_REQ {ep id, my DCT, my device address} -> handled on its progress: the
 *   AM, AM, ... (window down to 0: stop)      SRQ is being drained
 *                                   <-------  FC_GRANT {ep id}, sent by an
 *   window = FC_WND_SIZE, pending resumes     internal endpoint to the
 *                                             sender's DCT
 *
 * A sender whose receiver does not progress therefore stops after a window
 * instead of hammering the receiver's empty SRQ with RNR retries.
 *
 * Requests carry a sequence number that the grant echoes. A sender whose
 * window is empty and whose grant has not come within FC_HARD_REQ_TIMEOUT
 * asks again: a receiver that died after taking the request is then found
 * out (the new request fails like any operation to a dead peer) instead of
 * stalling the endpoint for ever; a grant for an older request of the same
 * wait is as good as any, one for a wait that is over is ignored.
 * PUT/GET/atomics do not consume receive buffers and are not limited.
 */
#ifndef STRAND_FC_H_
#define STRAND_FC_H_

#include <ucs/type/status.h>
#include <ucs/time/time.h>
#include <ucs/datastruct/khash.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* internal active message ids: above the user's range (UCT_AM_ID_MAX) */
#define STRAND_AM_FC_GRANT    0xfd
#define STRAND_AM_FC_REQUEST  0xfe
#define STRAND_AM_KEEPALIVE   0xff

struct strand_ep;
struct strand_iface;

/* A requester as its FC_REQUEST names it: its interface and device
 * addresses, zero-padded. */
#define STRAND_FC_PEER_LEN 24
typedef struct strand_fc_peer {
    uint8_t bytes[STRAND_FC_PEER_LEN];
} strand_fc_peer_t;

static inline khint32_t strand_fc_peer_hash(strand_fc_peer_t peer)
{
    khint32_t h = 2166136261u; /* FNV-1a */
    unsigned i;

    for (i = 0; i < STRAND_FC_PEER_LEN; ++i) {
        h = (h ^ peer.bytes[i]) * 16777619u;
    }
    return h;
}

#define strand_fc_peer_equal(_a, _b) \
    (!memcmp((_a).bytes, (_b).bytes, STRAND_FC_PEER_LEN))

KHASH_MAP_INIT_INT(strand_fc_eps, struct strand_ep*)
KHASH_INIT(strand_fc_grant_eps, strand_fc_peer_t, struct strand_ep*,
           1, strand_fc_peer_hash, strand_fc_peer_equal)

typedef struct strand_fc {
    int                              enabled;
    int32_t                          wnd_size;
    int32_t                          soft_thresh;  /* ask for credits here */
    uint32_t                         next_id;
    unsigned                         waiting;      /* eps that asked and
                                                      have no grant yet */
    ucs_time_t                       req_timeout;  /* ask again after */
    ucs_time_t                       next_check;
    khash_t(strand_fc_eps)        eps;          /* id -> user ep */
    khash_t(strand_fc_grant_eps)  grant_eps;    /* requester -> internal
                                                      ep sending grants */
} strand_fc_t;

ucs_status_t strand_fc_init(struct strand_iface *iface, int enabled,
                               unsigned wnd_size, double soft_thresh,
                               double req_timeout);
void strand_fc_cleanup(struct strand_iface *iface);

/* endpoint registration (its id travels in requests and grants) */
ucs_status_t strand_fc_ep_add(struct strand_iface *iface,
                                 struct strand_ep *ep);
void strand_fc_ep_remove(struct strand_iface *iface,
                            struct strand_ep *ep);

/* ask the peer of ep for credits (UCS_OK: request posted) */
ucs_status_t strand_fc_request(struct strand_iface *iface,
                                  struct strand_ep *ep);

/* eps out of credits whose grant is overdue ask again (cheap when none
 * waits: called from every progress) */
void strand_fc_check_slow(struct strand_iface *iface);
static inline void strand_fc_progress(struct strand_iface *iface,
                                         strand_fc_t *fc)
{
    if (ucs_unlikely(fc->waiting > 0)) {
        strand_fc_check_slow(iface);
    }
}

/* an FC_REQUEST or FC_GRANT arrived (payload after the AM id byte) */
void strand_fc_handle(struct strand_iface *iface, uint8_t am_id,
                         const void *payload, size_t length);

#endif
