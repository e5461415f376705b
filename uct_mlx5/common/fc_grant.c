/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver flow control: credit requests and grants (see fc.h for the
 * protocol).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "fc.h"
#include "iface.h"
#include "ep.h"
#include "fc_grant.h"
#include "ep_pending.h"
#include "ep_post.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>

/* FC_GRANT payload */
typedef struct strand_fc_grant {
    uint32_t ep_id;
    uint16_t seq; /* of the request it answers */
} UCS_S_PACKED strand_fc_grant_t;

/* a grant that found no send resources: waits on the internal ep */
typedef struct strand_fc_grant_req {
    uct_pending_req_t super;
    strand_ep_t      *ep;
    strand_fc_grant_t grant;
} strand_fc_grant_req_t;

ucs_status_t strand_fc_init(strand_iface_t *iface, int enabled,
                            unsigned wnd_size, double soft_thresh,
                            double req_timeout)
{
    strand_fc_t *fc = &iface->fc;

    fc->waiting     = 0;
    fc->req_timeout = ucs_time_from_sec(req_timeout);
    fc->next_check  = 0;
    fc->enabled     = enabled;
    fc->wnd_size    = enabled ? (int32_t)wnd_size : INT32_MAX;
    /* off: an endpoint's window is never short, but every message spends
     * a credit all the same (the post path subtracts a constant); it is
     * filled up again half way (strand_ep_fc_low) */
    fc->soft_thresh = enabled ? (int32_t)(wnd_size * soft_thresh) :
                                INT32_MAX / 2;
    fc->next_id     = 1;
    kh_init_inplace(strand_fc_eps, &fc->eps);
    kh_init_inplace(strand_fc_grant_eps, &fc->grant_eps);
    return UCS_OK;
}

static void strand_fc_grant_purge_cb(uct_pending_req_t *self, void *arg)
{
    ucs_free(ucs_derived_of(self, strand_fc_grant_req_t));
}

static void strand_fc_grant_ep_destroy(strand_ep_t *ep)
{
    strand_ep_pending_purge(&ep->super.super, strand_fc_grant_purge_cb, NULL);
    uct_ep_destroy(&ep->super.super);
}

void strand_fc_cleanup(strand_iface_t *iface)
{
    strand_fc_t *fc = &iface->fc;
    strand_ep_t *ep;

    kh_foreach_value(&fc->grant_eps, ep, { strand_fc_grant_ep_destroy(ep); })
        ;
    kh_destroy_inplace(strand_fc_grant_eps, &fc->grant_eps);
    kh_destroy_inplace(strand_fc_eps, &fc->eps);
}

ucs_status_t strand_fc_ep_add(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_fc_t *fc = &iface->fc;
    khiter_t     it;
    int          ret;

    ep->fc_limit = 0;
    ep->fc_over  = 0;
    strand_fc_set_req(iface, ep, 0);
    strand_ep_fc_set_wnd(ep, fc->wnd_size);
    ep->fc_seq       = 0; /* the first request is 1 */
    ep->fc_seq_first = 0;
    ep->fc_req_time  = 0;
    if (!fc->enabled) {
        ep->fc_id = 0;
        return UCS_OK;
    }
    do { /* ids wrap after 2^32 endpoints: skip ones still in use */
        ep->fc_id = fc->next_id++;
        it        = kh_put(strand_fc_eps, &fc->eps, ep->fc_id, &ret);
    } while ((ret == 0) || (ep->fc_id == 0));
    if (ret < 0) {
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&fc->eps, it) = ep;
    return UCS_OK;
}

void strand_fc_ep_remove(strand_iface_t *iface, strand_ep_t *ep)
{
    khiter_t it;

    if (ep->flags & STRAND_EP_FLAG_FC_REQ) {
        strand_fc_set_req(iface, ep, 0);
        iface->fc.waiting--;
    }
    if (ep->fc_id == 0) {
        return;
    }
    it = kh_get(strand_fc_eps, &iface->fc.eps, ep->fc_id);
    if (it != kh_end(&iface->fc.eps)) {
        kh_del(strand_fc_eps, &iface->fc.eps, it);
    }
    ep->fc_id = 0;
}

static ucs_status_t
strand_fc_send_grant(strand_ep_t *ep, const strand_fc_grant_t *grant)
{
    strand_iface_t *iface = ucs_derived_of(ep->super.super.iface,
                                           strand_iface_t);
    ucs_status_t    status;

    status = strand_ep_send_ctrl(ep, STRAND_AM_FC_GRANT, grant, sizeof(*grant));
    if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
        /* the requester is gone: nobody waits for this grant any more */
        char peer[96];

        ucs_debug("%s: credit grant to %s dropped: %s", iface->tl->names.tl,
                  iface->tl->ep_peer_str(iface, ep, peer, sizeof(peer)),
                  ucs_status_string(status));
        return UCS_OK;
    }
    return status;
}

static ucs_status_t strand_fc_grant_progress(uct_pending_req_t *self)
{
    strand_fc_grant_req_t *req    = ucs_derived_of(self, strand_fc_grant_req_t);
    ucs_status_t           status = strand_fc_send_grant(req->ep, &req->grant);

    if (status == UCS_OK) {
        ucs_free(req);
    }
    return status;
}

/* The internal endpoint that sends grants to the requester of req (a failed
 * one is replaced: its peer may be a new process on a reused address). */
static strand_ep_t *
strand_fc_grant_ep(strand_iface_t *iface, const strand_fc_request_t *req)
{
    strand_fc_t     *fc = &iface->fc;
    strand_fc_peer_t key;
    uct_ep_params_t  params;
    strand_ep_t     *ep;
    uct_ep_h         uct_ep;
    ucs_status_t     status;
    khiter_t         it;
    int              ret;

    memset(&key, 0, sizeof(key));
    memcpy(key.bytes, req->addr, strand_iface_reply_addr_len(iface));
    it = kh_get(strand_fc_grant_eps, &fc->grant_eps, key);
    if (it != kh_end(&fc->grant_eps)) {
        ep = kh_value(&fc->grant_eps, it);
        if (!(ep->flags & STRAND_EP_FLAG_FAILED) ||
            (ep->txq != STRAND_TXQ_NONE)) {
            return ep;
        }
        kh_del(strand_fc_grant_eps, &fc->grant_eps, it);
        strand_fc_grant_ep_destroy(ep);
    }

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &iface->super.super;
    params.dev_addr   = (const uct_device_addr_t *)(req->addr +
                                                  iface->config.iface_addr_len);
    params.iface_addr = (const uct_iface_addr_t *)req->addr;
    /* an endpoint of this interface's transport, as uct_ep_create makes
     * one */
    status = uct_ep_create(&params, &uct_ep);
    if (status != UCS_OK) {
        return NULL;
    }
    ep = ucs_derived_of(uct_ep, strand_ep_t);
    strand_fc_ep_remove(iface, ep); /* nobody grants to a grant ep */
    ep->flags |= STRAND_EP_FLAG_INTERNAL;
    strand_ep_fc_set_wnd(ep, INT32_MAX);
    it = kh_put(strand_fc_grant_eps, &fc->grant_eps, key, &ret);
    if (ret < 0) {
        uct_ep_destroy(uct_ep);
        return NULL;
    }
    kh_value(&fc->grant_eps, it) = ep;
    return ep;
}

static void
strand_fc_handle_request(strand_iface_t *iface, const strand_fc_request_t *req)
{
    strand_fc_grant_t      grant = {.ep_id = req->ep_id, .seq = req->seq};
    strand_fc_grant_req_t *pending;
    strand_ep_t           *ep;

    ep = strand_fc_grant_ep(iface, req);
    if (ep == NULL) {
        ucs_error("%s: no endpoint for a credit grant to the requester "
                  "of ep id %u",
                  iface->dev->info.name, req->ep_id);
        return;
    }
    if (ucs_arbiter_group_is_empty(&ep->arb_group) &&
        (strand_fc_send_grant(ep, &grant) == UCS_OK)) {
        return;
    }
    /* grants keep their order behind earlier ones */
    pending = ucs_malloc(sizeof(*pending), "strand_fc_grant");
    if (pending == NULL) {
        ucs_error("%s: out of memory for a credit grant",
                  iface->dev->info.name);
        return;
    }
    pending->super.func = strand_fc_grant_progress;
    pending->ep         = ep;
    pending->grant      = grant;
    strand_ep_pending_push(iface, ep, &pending->super);
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
}

static void
strand_fc_handle_grant(strand_iface_t *iface, const strand_fc_grant_t *grant)
{
    khiter_t     it = kh_get(strand_fc_eps, &iface->fc.eps, grant->ep_id);
    strand_ep_t *ep;

    if (it == kh_end(&iface->fc.eps)) {
        return; /* the ep was destroyed meanwhile */
    }
    ep = kh_value(&iface->fc.eps, it);
    /* an answer to a request of the current wait (not one that is over:
     * the credits of that grant were given already) */
    if (!(ep->flags & STRAND_EP_FLAG_FC_REQ) ||
        ((int16_t)(grant->seq - ep->fc_seq_first) < 0) ||
        ((int16_t)(ep->fc_seq - grant->seq) < 0)) {
        return;
    }
    strand_ep_fc_set_wnd(ep, iface->fc.wnd_size);
    strand_fc_set_req(iface, ep, 0);
    strand_iface_tx_beat(iface);
    iface->fc.waiting--;
    strand_ep_schedule(iface, ep);
}

void strand_fc_handle(strand_iface_t *iface, uint8_t am_id, const void *payload,
                      size_t length)
{
    if ((am_id == STRAND_AM_FC_REQUEST) &&
        (length == STRAND_FC_REQUEST_LEN(strand_iface_reply_addr_len(iface)))) {
        strand_fc_handle_request(iface, payload);
    } else if ((am_id == STRAND_AM_FC_GRANT) &&
               (length == sizeof(strand_fc_grant_t))) {
        strand_fc_handle_grant(iface, payload);
    } else if (am_id != STRAND_AM_KEEPALIVE) {
        ucs_debug("%s: dropped internal message 0x%x of %zu bytes",
                  iface->dev->info.name, am_id, length);
    }
}

void strand_fc_check_slow(strand_iface_t *iface)
{
    strand_fc_t *fc  = &iface->fc;
    ucs_time_t   now = ucs_get_time();
    strand_ep_t *ep;

    if (now < fc->next_check) {
        return;
    }
    fc->next_check = now + fc->req_timeout / 4;
    kh_foreach_value(&fc->eps, ep, {
        if ((ep->flags & STRAND_EP_FLAG_FC_REQ) &&
            !(ep->flags & STRAND_EP_FLAG_FAILED) &&
            (strand_ep_fc_wnd(ep) <= 0) &&
            (now - ep->fc_req_time >= fc->req_timeout)) {
            ucs_debug("%s: ep %p: no credit grant %.3f s after request %u: "
                      "asking again",
                      iface->dev->info.name, ep,
                      ucs_time_to_sec(now - ep->fc_req_time), ep->fc_seq);
            /* no resources now: at the next check */
            strand_fc_request(iface, ep);
        }
    })
        ;
}
