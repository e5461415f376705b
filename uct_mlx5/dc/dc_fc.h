/*
 * Receiver flow control of dc_strand active messages (credits, as UCX's
 * DC FC). Every endpoint may have FC_WND_SIZE active messages in flight
 * towards a peer before the peer's progress hands it new credits:
 *
 *   sender                                    receiver
 *   AM, AM, ... (window down to SOFT_THRESH)
 *   FC_REQ {my LID, my DCT, ep id}  ------->  handled on its progress: the
 *   AM, AM, ... (window down to 0: stop)      SRQ is being drained
 *                                   <-------  FC_GRANT {ep id}, sent by an
 *   window = FC_WND_SIZE, pending resumes     internal endpoint to the
 *                                             sender's DCT
 *
 * A sender whose receiver does not progress therefore stops after a window
 * instead of hammering the receiver's empty SRQ with RNR retries.
 * PUT/GET/atomics do not consume receive buffers and are not limited.
 */
#ifndef STRAND_DC_FC_H_
#define STRAND_DC_FC_H_

#include <ucs/type/status.h>
#include <ucs/datastruct/khash.h>
#include <stddef.h>
#include <stdint.h>

/* internal active message ids: above the user's range (UCT_AM_ID_MAX) */
#define STRAND_DC_AM_FC_GRANT    0xfd
#define STRAND_DC_AM_FC_REQUEST  0xfe
#define STRAND_DC_AM_KEEPALIVE   0xff

struct strand_dc_ep;
struct strand_dc_iface;

KHASH_MAP_INIT_INT(strand_dc_fc_eps, struct strand_dc_ep*)
KHASH_MAP_INIT_INT64(strand_dc_fc_grant_eps, struct strand_dc_ep*)

typedef struct strand_dc_fc {
    int                              enabled;
    int32_t                          wnd_size;
    int32_t                          soft_thresh;  /* ask for credits here */
    uint32_t                         next_id;
    khash_t(strand_dc_fc_eps)        eps;          /* id -> user ep */
    khash_t(strand_dc_fc_grant_eps)  grant_eps;    /* LID:DCT -> internal */
} strand_dc_fc_t;

ucs_status_t strand_dc_fc_init(struct strand_dc_iface *iface, int enabled,
                               unsigned wnd_size, double soft_thresh);
void strand_dc_fc_cleanup(struct strand_dc_iface *iface);

/* endpoint registration (its id travels in requests and grants) */
ucs_status_t strand_dc_fc_ep_add(struct strand_dc_iface *iface,
                                 struct strand_dc_ep *ep);
void strand_dc_fc_ep_remove(struct strand_dc_iface *iface,
                            struct strand_dc_ep *ep);

/* ask the peer of ep for credits (UCS_OK: request posted) */
ucs_status_t strand_dc_fc_request(struct strand_dc_iface *iface,
                                  struct strand_dc_ep *ep);

/* an FC_REQUEST or FC_GRANT arrived (payload after the AM id byte) */
void strand_dc_fc_handle(struct strand_dc_iface *iface, uint8_t am_id,
                         const void *payload, size_t length);

#endif
