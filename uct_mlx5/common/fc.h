/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver flow control of active messages (dc_strand's; credits, as UCX's
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
#define STRAND_AM_FC_GRANT   0xfd
#define STRAND_AM_FC_REQUEST 0xfe
#define STRAND_AM_KEEPALIVE  0xff

/* A requester as its FC_REQUEST names it: its interface and device
 * addresses, zero-padded. */
#define STRAND_FC_PEER_LEN 24
typedef struct strand_fc_peer {
    uint8_t bytes[STRAND_FC_PEER_LEN];
} strand_fc_peer_t;

static inline khint32_t strand_fc_peer_hash(strand_fc_peer_t peer)
{
    khint32_t h = 2166136261u; /* FNV-1a */
    unsigned  i;

    for (i = 0; i < STRAND_FC_PEER_LEN; ++i) {
        h = (h ^ peer.bytes[i]) * 16777619u;
    }
    return h;
}

#define strand_fc_peer_equal(_a, _b) \
    (!memcmp((_a).bytes, (_b).bytes, STRAND_FC_PEER_LEN))

/* FC_REQUEST payload: for which ep, and where to send the grant: the
 * requester's interface address, then its device address (as long as the
 * link layer makes it), as its UCT operations give them */
typedef struct strand_fc_request {
    uint32_t ep_id;
    uint16_t seq;
    uint8_t  addr[STRAND_FC_PEER_LEN];
} UCS_S_PACKED strand_fc_request_t;

/* the length of a request whose addresses take _addr_len bytes */
#define STRAND_FC_REQUEST_LEN(_addr_len) \
    (ucs_offsetof(strand_fc_request_t, addr) + (_addr_len))

#endif
