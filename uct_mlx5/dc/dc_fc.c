/*
 * Receiver flow control of dc_strand: credit requests and grants (see
 * dc_fc.h for the protocol).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_fc.h"
#include "dc_iface.h"
#include "dc_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>

/* FC_REQUEST payload: where to send the grant, and for which ep */
typedef struct strand_dc_fc_request {
    uint16_t lid;
    uint32_t dctn;
    uint32_t ep_id;
} UCS_S_PACKED strand_dc_fc_request_t;

/* FC_GRANT payload */
typedef struct strand_dc_fc_grant {
    uint32_t ep_id;
} UCS_S_PACKED strand_dc_fc_grant_t;

/* a grant that found no send resources: waits on the internal ep */
typedef struct strand_dc_fc_grant_req {
    uct_pending_req_t super;
    strand_dc_ep_t   *ep;
    uint32_t          ep_id;
} strand_dc_fc_grant_req_t;

ucs_status_t strand_dc_fc_init(strand_dc_iface_t *iface, int enabled,
                               unsigned wnd_size, double soft_thresh)
{
    strand_dc_fc_t *fc = &iface->fc;

    fc->enabled     = enabled;
    fc->wnd_size    = enabled ? (int32_t)wnd_size : INT32_MAX;
    fc->soft_thresh = enabled ? (int32_t)(wnd_size * soft_thresh) : 0;
    fc->next_id     = 1;
    kh_init_inplace(strand_dc_fc_eps, &fc->eps);
    kh_init_inplace(strand_dc_fc_grant_eps, &fc->grant_eps);
    return UCS_OK;
}

static void strand_dc_fc_grant_purge_cb(uct_pending_req_t *self, void *arg)
{
    ucs_free(ucs_derived_of(self, strand_dc_fc_grant_req_t));
}

static void strand_dc_fc_grant_ep_destroy(strand_dc_ep_t *ep)
{
    strand_dc_ep_pending_purge(&ep->super.super, strand_dc_fc_grant_purge_cb,
                               NULL);
    UCS_CLASS_DELETE(strand_dc_ep_t, ep);
}

void strand_dc_fc_cleanup(strand_dc_iface_t *iface)
{
    strand_dc_fc_t *fc = &iface->fc;
    strand_dc_ep_t *ep;

    kh_foreach_value(&fc->grant_eps, ep, {
        strand_dc_fc_grant_ep_destroy(ep);
    });
    kh_destroy_inplace(strand_dc_fc_grant_eps, &fc->grant_eps);
    kh_destroy_inplace(strand_dc_fc_eps, &fc->eps);
}

ucs_status_t strand_dc_fc_ep_add(strand_dc_iface_t *iface, strand_dc_ep_t *ep)
{
    strand_dc_fc_t *fc = &iface->fc;
    khiter_t it;
    int ret;

    ep->fc_wnd = fc->wnd_size;
    if (!fc->enabled) {
        ep->fc_id = 0;
        return UCS_OK;
    }
    do { /* ids wrap after 2^32 endpoints: skip ones still in use */
        ep->fc_id = fc->next_id++;
        it        = kh_put(strand_dc_fc_eps, &fc->eps, ep->fc_id, &ret);
    } while ((ret == 0) || (ep->fc_id == 0));
    if (ret < 0) {
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&fc->eps, it) = ep;
    return UCS_OK;
}

void strand_dc_fc_ep_remove(strand_dc_iface_t *iface, strand_dc_ep_t *ep)
{
    khiter_t it;

    if (ep->fc_id == 0) {
        return;
    }
    it = kh_get(strand_dc_fc_eps, &iface->fc.eps, ep->fc_id);
    if (it != kh_end(&iface->fc.eps)) {
        kh_del(strand_dc_fc_eps, &iface->fc.eps, it);
    }
    ep->fc_id = 0;
}

static ucs_status_t strand_dc_fc_send_grant(strand_dc_ep_t *ep,
                                            uint32_t ep_id)
{
    strand_dc_fc_grant_t grant = {.ep_id = ep_id};
    ucs_status_t status;

    status = strand_dc_ep_send_ctrl(ep, STRAND_DC_AM_FC_GRANT, &grant,
                                    sizeof(grant));
    if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
        /* the requester is gone: nobody waits for this grant any more */
        ucs_debug("dc_strand: credit grant to lid %u dct 0x%x dropped: %s",
                  ep->dlid, ep->dctn, ucs_status_string(status));
        return UCS_OK;
    }
    return status;
}

static ucs_status_t strand_dc_fc_grant_progress(uct_pending_req_t *self)
{
    strand_dc_fc_grant_req_t *req = ucs_derived_of(self,
                                                   strand_dc_fc_grant_req_t);
    ucs_status_t status           = strand_dc_fc_send_grant(req->ep,
                                                            req->ep_id);

    if (status == UCS_OK) {
        ucs_free(req);
    }
    return status;
}

/* The internal endpoint that sends grants to lid:dctn (a failed one is
 * replaced: its peer may be a new process on a reused address). */
static strand_dc_ep_t *strand_dc_fc_grant_ep(strand_dc_iface_t *iface,
                                             uint16_t lid, uint32_t dctn)
{
    strand_dc_fc_t *fc = &iface->fc;
    uint64_t key       = ((uint64_t)lid << 32) | dctn;
    strand_dc_device_addr_t dev_addr = {.lid = lid,
                                        .fabric_id = iface->fabric_id};
    strand_dc_iface_addr_t iface_addr = {{dctn & 0xff, (dctn >> 8) & 0xff,
                                          (dctn >> 16) & 0xff}};
    uct_ep_params_t params;
    strand_dc_ep_t *ep;
    ucs_status_t status;
    khiter_t it;
    int ret;

    it = kh_get(strand_dc_fc_grant_eps, &fc->grant_eps, key);
    if (it != kh_end(&fc->grant_eps)) {
        ep = kh_value(&fc->grant_eps, it);
        if (!(ep->flags & STRAND_DC_EP_FLAG_FAILED) ||
            (ep->dci != STRAND_DC_DCI_NONE)) {
            return ep;
        }
        kh_del(strand_dc_fc_grant_eps, &fc->grant_eps, it);
        strand_dc_fc_grant_ep_destroy(ep);
    }

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &iface->super.super;
    params.dev_addr   = (const uct_device_addr_t*)&dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)&iface_addr;
    status = UCS_CLASS_NEW(strand_dc_ep_t, &ep, &params);
    if (status != UCS_OK) {
        return NULL;
    }
    strand_dc_fc_ep_remove(iface, ep); /* nobody grants to a grant ep */
    ep->flags |= STRAND_DC_EP_FLAG_INTERNAL;
    ep->fc_wnd = INT32_MAX;
    it = kh_put(strand_dc_fc_grant_eps, &fc->grant_eps, key, &ret);
    if (ret < 0) {
        UCS_CLASS_DELETE(strand_dc_ep_t, ep);
        return NULL;
    }
    kh_value(&fc->grant_eps, it) = ep;
    return ep;
}

static void strand_dc_fc_handle_request(strand_dc_iface_t *iface,
                                        const strand_dc_fc_request_t *req)
{
    strand_dc_fc_grant_req_t *pending;
    strand_dc_ep_t *ep;

    ep = strand_dc_fc_grant_ep(iface, req->lid, req->dctn);
    if (ep == NULL) {
        ucs_error("%s: no endpoint for a credit grant to lid %u dct 0x%x",
                  iface->dev->info.name, req->lid, req->dctn);
        return;
    }
    if (ucs_arbiter_group_is_empty(&ep->arb_group) &&
        (strand_dc_fc_send_grant(ep, req->ep_id) == UCS_OK)) {
        return;
    }
    /* grants keep their order behind earlier ones */
    pending = ucs_malloc(sizeof(*pending), "strand_dc_fc_grant");
    if (pending == NULL) {
        ucs_error("%s: out of memory for a credit grant",
                  iface->dev->info.name);
        return;
    }
    pending->super.func = strand_dc_fc_grant_progress;
    pending->ep         = ep;
    pending->ep_id      = req->ep_id;
    uct_pending_req_arb_group_push(&ep->arb_group, &pending->super);
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
}

static void strand_dc_fc_handle_grant(strand_dc_iface_t *iface,
                                      const strand_dc_fc_grant_t *grant)
{
    khiter_t it = kh_get(strand_dc_fc_eps, &iface->fc.eps, grant->ep_id);
    strand_dc_ep_t *ep;

    if (it == kh_end(&iface->fc.eps)) {
        return; /* the ep was destroyed meanwhile */
    }
    ep          = kh_value(&iface->fc.eps, it);
    ep->fc_wnd  = iface->fc.wnd_size;
    ep->flags  &= ~STRAND_DC_EP_FLAG_FC_REQ;
    strand_dc_ep_schedule(iface, ep);
}

void strand_dc_fc_handle(strand_dc_iface_t *iface, uint8_t am_id,
                         const void *payload, size_t length)
{
    if ((am_id == STRAND_DC_AM_FC_REQUEST) &&
        (length == sizeof(strand_dc_fc_request_t))) {
        strand_dc_fc_handle_request(iface, payload);
    } else if ((am_id == STRAND_DC_AM_FC_GRANT) &&
               (length == sizeof(strand_dc_fc_grant_t))) {
        strand_dc_fc_handle_grant(iface, payload);
    } else if (am_id != STRAND_DC_AM_KEEPALIVE) {
        ucs_debug("%s: dropped internal message 0x%x of %zu bytes",
                  iface->dev->info.name, am_id, length);
    }
}

/* Ask the peer of ep for credits (posted on dci, which has room). */
ucs_status_t strand_dc_fc_request(strand_dc_iface_t *iface,
                                  strand_dc_ep_t *ep)
{
    strand_dc_fc_request_t req = {
        .lid   = iface->dev->caps.lid,
        .dctn  = iface->dct.qpn,
        .ep_id = ep->fc_id
    };
    ucs_status_t status = strand_dc_ep_send_ctrl(ep, STRAND_DC_AM_FC_REQUEST,
                                                 &req, sizeof(req));

    if (status == UCS_OK) {
        ep->flags |= STRAND_DC_EP_FLAG_FC_REQ;
    }
    return status;
}
