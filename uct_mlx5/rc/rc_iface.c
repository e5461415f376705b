/*
 * rc_strand: configuration, capabilities, addresses, and endpoints whose QP
 * the connection manager connects (rc_iface.h, rc_cm.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_iface.h"
#include "rc_cm.h"
#include "rc_rndv.h"
#include "uct_mlx5/dc/dc_addr.h"
#include "uct_mlx5/dc/dc_dci.h"
#include "uct_mlx5/dc/dc_ep.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/vfs/base/vfs_obj.h>
#include <ucs/sys/stubs.h>

#include <arpa/inet.h>
#include <string.h>

static ucs_config_field_t strand_rc_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(strand_rc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"", "", NULL, ucs_offsetof(strand_rc_iface_config_t, common),
     UCS_CONFIG_TYPE_TABLE(strand_iface_common_config_table)},

    {"MAX_EPS", "65535",
     "Endpoints (each with a QP of its own) of the interface at once "
     "(1 .. 65535). Memory goes with the endpoints made, not with this "
     "bound.",
     ucs_offsetof(strand_rc_iface_config_t, max_eps),
     UCS_CONFIG_TYPE_UINT},

    {"INTEGRITY_PIPELINE", "try",
     "Tag matching with integrity: how the FIN of a rendezvous the "
     "transport read goes to the sender. y: in the same doorbell as the "
     "READ, fenced behind it, on responder QPs that stop in SQD after a bad "
     "block (signature pipelining); the transport then cancels the FIN, "
     "reads the bad pieces again and sends it after them (the interface "
     "fails to open on a device without signature pipelining). n: once "
     "the READ came back with every block good. try: y where the device "
     "has signature pipelining.",
     ucs_offsetof(strand_rc_iface_config_t, integrity_pipeline),
     UCS_CONFIG_TYPE_TERNARY},

    {NULL}
};

/* The configuration as the shared code reads it: what rc_strand has no
 * option for is fixed (no DCI policy, streams or flow control: an RC
 * receiver that runs out of buffers is covered by receiver-not-ready
 * retries). */
static void strand_rc_config_to_dc(const strand_rc_iface_config_t *rc,
                                   strand_dc_iface_config_t *dc)
{
    memset(dc, 0, sizeof(*dc));
    dc->super               = rc->super;
    dc->common              = rc->common;
    dc->num_dci             = rc->max_eps;
    dc->tx_policy           = STRAND_DC_TX_POLICY_DCS;
    dc->quota               = UINT_MAX;
    dc->stream_map          = STRAND_DC_STREAM_MAP_EP;
    dc->fc_enable           = 0;
    dc->fc_wnd_size         = 512;
    dc->fc_soft_thresh      = 0.5;
    dc->fc_hard_req_timeout = UCS_TIME_INFINITY;
    dc->rx_inline           = 0;
    dc->integrity_pipeline  = rc->integrity_pipeline;
}

static uct_iface_ops_t strand_rc_iface_ops;

static void strand_rc_iface_vfs_show_connections(void *obj,
                                                 ucs_string_buffer_t *strb,
                                                 void *arg_ptr,
                                                 uint64_t arg_u64)
{
    strand_dc_iface_t *iface = obj;

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->rc_cm));
    strand_rc_cm_show(iface->rc_cm, strb);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->rc_cm));
}

static void strand_rc_iface_vfs_show_rendezvous(void *obj,
                                                ucs_string_buffer_t *strb,
                                                void *arg_ptr,
                                                uint64_t arg_u64)
{
    strand_dc_iface_t *iface = obj;

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->rc_cm));
    strand_rc_rndv_show(iface->rc_rndv, strb);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->rc_cm));
}

/* dc_strand's files, the connection manager's and the rendezvous' */
static void strand_rc_iface_vfs_refresh(uct_iface_h tl_iface)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    strand_dc_iface_vfs_refresh(tl_iface);
    ucs_vfs_obj_add_ro_file(tl_iface, strand_rc_iface_vfs_show_connections,
                            NULL, 0, "connections");
    if (iface->rc_rndv != NULL) {
        ucs_vfs_obj_add_ro_file(tl_iface, strand_rc_iface_vfs_show_rendezvous,
                                NULL, 0, "rendezvous");
    }
}

/* Before the connection manager's responder QPs go: their transfers are
 * dropped without a word to the user (nothing is called from a closing
 * interface). */
static void strand_rc_iface_rndv_cleanup(strand_dc_iface_t *iface)
{
    strand_rc_rndv_cleanup(iface->rc_rndv);
    iface->rc_rndv      = NULL;
    iface->tx_cqe_other = NULL;
}

static uct_iface_internal_ops_t strand_rc_iface_internal_ops = {
    .iface_estimate_perf = strand_dc_iface_estimate_perf,
    .iface_vfs_refresh   = strand_rc_iface_vfs_refresh,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = strand_dc_ep_invalidate
};

static ucs_status_t strand_rc_iface_open(uct_md_h md, uct_worker_h worker,
                                         const uct_iface_params_t *params,
                                         const uct_iface_config_t *tl_config,
                                         uct_iface_h *iface_p)
{
    strand_dc_iface_config_t config;
    strand_dc_iface_t *iface;
    uct_iface_h tl_iface;
    ucs_status_t status;

    strand_rc_config_to_dc(ucs_derived_of(tl_config,
                                          strand_rc_iface_config_t),
                           &config);
    status = strand_dc_iface_create(md, worker, params, tl_config, &config, 1,
                                    &strand_rc_iface_ops, &tl_iface);
    if (status != UCS_OK) {
        return status;
    }
    iface  = ucs_derived_of(tl_iface, strand_dc_iface_t);
    iface->super.internal_ops = &strand_rc_iface_internal_ops;
    if (iface->have_tm) {
        /* its rendezvous read on the responder QPs the manager makes */
        status = strand_rc_rndv_init(iface, config.integrity_pipeline,
                                     &iface->rc_rndv);
        if (status != UCS_OK) {
            UCS_CLASS_DELETE_FUNC_NAME(strand_dc_iface_t)(&iface->super.super);
            return status;
        }
        iface->tx_cqe_other = strand_rc_rndv_cqe;
    }
    status = strand_rc_cm_open(iface, worker, params, tl_config, &config,
                               &iface->rc_cm);
    if (status != UCS_OK) {
        strand_rc_iface_rndv_cleanup(iface);
        UCS_CLASS_DELETE_FUNC_NAME(strand_dc_iface_t)(&iface->super.super);
        return status;
    }
    *iface_p = tl_iface;
    return UCS_OK;
}

static void strand_rc_iface_close(uct_iface_h tl_iface)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    strand_rc_cm_stop(iface->rc_cm);
    strand_rc_iface_rndv_cleanup(iface);
    strand_rc_cm_close(iface->rc_cm);
    iface->rc_cm = NULL;
    UCS_CLASS_DELETE_FUNC_NAME(strand_dc_iface_t)(&iface->super.super);
}

static ucs_status_t strand_rc_iface_query(uct_iface_h tl_iface,
                                          uct_iface_attr_t *attr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    ucs_status_t status      = strand_dc_iface_query(tl_iface, attr);

    if (status != UCS_OK) {
        return status;
    }
    /* connected to an interface: the transport wires its QPs itself */
    attr->cap.flags      |= UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    attr->cap.flags      &= ~UCT_IFACE_FLAG_CONNECT_TO_EP;
    attr->iface_addr_len  = strand_rc_cm_iface_addr_len();
    attr->ep_addr_len     = 0;
    attr->max_num_eps     = iface->num_dci;
    /* a QP per peer: each one costs the NIC a context (as UCX's rc) */
    attr->latency.m       = 1e-9;
    return UCS_OK;
}

static ucs_status_t strand_rc_iface_get_address(uct_iface_h tl_iface,
                                                uct_iface_addr_t *addr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    return strand_rc_cm_iface_addr(iface->rc_cm, addr);
}

static int strand_rc_iface_is_reachable(const uct_iface_h tl_iface,
                                        const uct_device_addr_t *dev_addr,
                                        const uct_iface_addr_t *iface_addr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    return strand_rc_cm_is_reachable(iface->rc_cm, dev_addr, iface_addr);
}

/* The async thread answers connection requests (rc_cm.h): it makes
 * responder QPs and adds them to the rendezvous that the receive and send
 * completions look up, so with tag matching the whole of progress holds
 * the async context; without, the manager's part only. */
static unsigned strand_rc_iface_progress(uct_iface_h tl_iface)
{
    strand_dc_iface_t *iface    = ucs_derived_of(tl_iface, strand_dc_iface_t);
    ucs_async_context_t *async = strand_rc_cm_async(iface->rc_cm);
    unsigned count             = 0;

    if (iface->rc_rndv == NULL) {
        count += strand_dc_iface_progress(tl_iface);
    }
    UCS_ASYNC_BLOCK(async);
    if (iface->rc_rndv != NULL) {
        count += strand_dc_iface_progress(tl_iface) +
                 strand_rc_rndv_progress(iface->rc_rndv);
    }
    count += strand_rc_cm_progress(iface->rc_cm);
    UCS_ASYNC_UNBLOCK(async);
    /* an event the async thread met while we held it */
    ucs_async_check_miss(async);
    return count;
}

static ucs_status_t strand_rc_iface_event_fd_get(uct_iface_h tl_iface,
                                                 int *fd_p)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    return strand_rc_cm_event_fd(iface->rc_cm, fd_p);
}

static ucs_status_t strand_rc_iface_event_arm(uct_iface_h tl_iface,
                                              unsigned events)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    ucs_status_t status      = strand_rc_cm_event_arm(iface->rc_cm, events);

    return (status != UCS_OK) ? status :
           strand_dc_iface_event_arm(tl_iface, events);
}

/* ----------------------------------------------------------- endpoints */

/* An ep: its QP now, connected by the connection manager (rc_cm.h); it
 * posts once the peer answered. */
static ucs_status_t strand_rc_ep_create(const uct_ep_params_t *params,
                                        uct_ep_h *ep_p)
{
    strand_dc_iface_t *iface;
    uct_ep_params_t qp_params;
    strand_dc_ep_t *ep;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    iface = ucs_derived_of(params->iface, strand_dc_iface_t);
    if (!strand_rc_cm_is_reachable(iface->rc_cm, params->dev_addr,
                                   params->iface_addr)) {
        ucs_error("%s: rc_strand: the peer's address is not reachable from "
                  "here (another link layer, subnet or fabric, or a "
                  "malformed address)", iface->dev->info.name);
        return UCS_ERR_UNREACHABLE;
    }
    qp_params             = *params;
    qp_params.field_mask &= ~(UCT_EP_PARAM_FIELD_DEV_ADDR |
                              UCT_EP_PARAM_FIELD_IFACE_ADDR);
    status = UCS_CLASS_NEW(strand_dc_ep_t, &ep, &qp_params);
    if (status != UCS_OK) {
        return status;
    }
    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->rc_cm));
    status = strand_rc_cm_connect(iface->rc_cm, ep, params->dev_addr,
                                  params->iface_addr);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->rc_cm));
    if (status != UCS_OK) {
        UCS_CLASS_DELETE(strand_dc_ep_t, ep);
        return status;
    }
    *ep_p = &ep->super.super;
    return UCS_OK;
}

static void strand_rc_ep_destroy(uct_ep_h tl_ep)
{
    strand_dc_ep_t *ep       = ucs_derived_of(tl_ep, strand_dc_ep_t);
    strand_dc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                              strand_dc_iface_t);

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->rc_cm));
    strand_rc_cm_forget(iface->rc_cm, ep);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->rc_cm));
    UCS_CLASS_DELETE(strand_dc_ep_t, ep);
}

static ucs_status_t strand_rc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                       uct_completion_t *comp)
{
    strand_dc_ep_t *ep       = ucs_derived_of(tl_ep, strand_dc_ep_t);
    strand_dc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                              strand_dc_iface_t);
    ucs_status_t status;

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->rc_cm));
    status = strand_rc_cm_check(iface->rc_cm, ep);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->rc_cm));
    return status;
}

/* ------------------------------------------------------------ the tl */

/* dc_strand's operations, but for endpoints that connect themselves, the
 * connection manager's progress, addresses and lifetime */
UCS_STATIC_INIT
{
    strand_rc_iface_ops                    = strand_dc_iface_ops;
    strand_rc_iface_ops.ep_check           = strand_rc_ep_check;
    strand_rc_iface_ops.ep_create          = strand_rc_ep_create;
    strand_rc_iface_ops.ep_destroy         = strand_rc_ep_destroy;
    strand_rc_iface_ops.iface_progress     = strand_rc_iface_progress;
    strand_rc_iface_ops.iface_event_fd_get = strand_rc_iface_event_fd_get;
    strand_rc_iface_ops.iface_event_arm    = strand_rc_iface_event_arm;
    strand_rc_iface_ops.iface_close        = strand_rc_iface_close;
    strand_rc_iface_ops.iface_query        = strand_rc_iface_query;
    strand_rc_iface_ops.iface_get_address  = strand_rc_iface_get_address;
    strand_rc_iface_ops.iface_is_reachable = strand_rc_iface_is_reachable;
    strand_rc_iface_ops.ep_tag_rndv_zcopy  = strand_rc_ep_tag_rndv_zcopy;
}

uct_tl_t uct_rc_strand_tl = {
    .name          = STRAND_RC_TL_NAME,
    .query_devices = strand_dc_query_devices,
    .iface_open    = strand_rc_iface_open,
    .config = {
        .name   = STRAND_RC_TL_NAME " transport",
        .prefix = STRAND_RC_CONFIG_PREFIX,
        .table  = strand_rc_iface_config_table,
        .size   = sizeof(strand_rc_iface_config_t),
    }
};
