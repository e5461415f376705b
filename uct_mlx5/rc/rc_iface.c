/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand: configuration, capabilities, addresses, and endpoints whose QP
 * the connection manager connects (rc.h, rc_cm.h, rc_ep.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_iface.h"
#include "rc_ep.h"
#include "rc_cm.h"
#include "rc_qp.h"
#include "rc_rndv.h"
#include "rc_locked.h"
#include "rc_retire.h"
#include "uct_mlx5/common/ep_short.h"
#include "uct_mlx5/common/stats.h"
#include "uct_mlx5/common/port_addr.h"
#include "uct_mlx5/common/ep_ops.h"
#include "uct_mlx5/common/event.h"
#include "uct_mlx5/common/iface_class.h"

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
         ucs_offsetof(strand_rc_iface_config_t, max_eps), UCS_CONFIG_TYPE_UINT},

        {"INTEGRITY_PIPELINE", "try",
         "Tag matching with integrity: how the FIN of a rendezvous the "
         "transport read goes to the sender. y: in the same doorbell as the "
         "READ, fenced behind it, on responder QPs that stop in SQD after a "
         "bad "
         "block (signature pipelining); the transport then cancels the FIN, "
         "reads the bad pieces again and sends it after them (the interface "
         "fails to open on a device without signature pipelining). n: once "
         "the READ came back with every block good. try: y where the device "
         "has signature pipelining.",
         ucs_offsetof(strand_rc_iface_config_t, integrity_pipeline),
         UCS_CONFIG_TYPE_TERNARY},

        {NULL}};

/* The configuration as the shared code reads it: what rc_strand has no
 * option for is fixed (no send queue policy, streams or flow control: an RC
 * receiver that runs out of buffers is covered by receiver-not-ready
 * retries). */
static void strand_rc_config_to_shared(const strand_rc_iface_config_t *rc,
                                       strand_iface_config_t          *config)
{
    memset(config, 0, sizeof(*config));
    config->super               = rc->super;
    config->common              = rc->common;
    config->num_txqs            = rc->max_eps;
    config->fc_enable           = 0;
    config->fc_wnd_size         = 512;
    config->fc_soft_thresh      = 0.5;
    config->fc_hard_req_timeout = UCS_TIME_INFINITY;
    config->integrity_pipeline  = rc->integrity_pipeline;
}

static uct_iface_ops_t       strand_rc_iface_ops;
static const strand_tl_ops_t strand_rc_tl_ops;
static void strand_rc_ep_short_ops(strand_iface_t *iface, uct_iface_ops_t *ops);

static void
strand_rc_iface_vfs_show_connections(void *obj, ucs_string_buffer_t *strb,
                                     void *arg_ptr, uint64_t arg_u64)
{
    strand_rc_iface_t *iface = obj;

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->cm));
    strand_rc_cm_show(iface->cm, strb);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->cm));
}

static void strand_rc_iface_vfs_show_rendezvous(void                *obj,
                                                ucs_string_buffer_t *strb,
                                                void *arg_ptr, uint64_t arg_u64)
{
    strand_rc_iface_t *iface = obj;

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->cm));
    strand_rc_rndv_show(iface->rndv, strb);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->cm));
}

/* dc_strand's files, the connection manager's and the rendezvous' */
static void strand_rc_iface_vfs_refresh(uct_iface_h tl_iface)
{
    strand_rc_iface_t *iface = ucs_derived_of(tl_iface, strand_rc_iface_t);

    strand_iface_vfs_refresh(tl_iface);
    ucs_vfs_obj_add_ro_file(tl_iface, strand_rc_iface_vfs_show_connections,
                            NULL, 0, "connections");
    if (iface->rndv != NULL) {
        ucs_vfs_obj_add_ro_file(tl_iface, strand_rc_iface_vfs_show_rendezvous,
                                NULL, 0, "rendezvous");
    }
}

static int strand_rc_iface_tx_cqe_other(strand_iface_t          *iface,
                                        const struct mlx5_cqe64 *cqe)
{
    strand_rc_rndv_t *rndv = strand_rc_iface(iface)->rndv;

    if ((rndv != NULL) && (strand_rc_rndv_cqe(rndv, cqe) == 0)) {
        return 0;
    }
    /* a flush of a responder QP that leaves: its work failed already */
    return strand_rc_retire_has(strand_rc_iface(iface), strand_cqe_qpn(cqe)) ?
                   0 :
                   -1;
}

/* Before the connection manager's responder QPs go: their transfers are
 * dropped without a word to the user (nothing is called from a closing
 * interface). */
static void strand_rc_iface_rndv_cleanup(strand_rc_iface_t *iface)
{
    if (iface->rndv != NULL) {
        strand_rc_rndv_cleanup(iface->rndv);
        iface->rndv = NULL;
    }
}

static uct_iface_internal_ops_t strand_rc_iface_internal_ops;

/* The shared interface with rc_strand's part (rc_qp.c), then the
 * rendezvous it reads and its connection manager. */
static UCS_CLASS_INIT_FUNC(strand_rc_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    strand_iface_config_t config;
    ucs_status_t          status;

    strand_rc_config_to_shared(ucs_derived_of(tl_config,
                                              strand_rc_iface_config_t),
                               &config);
    UCS_CLASS_CALL_SUPER_INIT(strand_iface_t, md, worker, params, tl_config,
                              &config, &strand_rc_tl_ops, &strand_rc_iface_ops);
    self->cm   = NULL;
    self->rndv = NULL;
    strand_rc_retire_init(self);
    self->super.super.internal_ops = &strand_rc_iface_internal_ops;
    /* its short entry points: WQEs without address vector */
    strand_rc_ep_short_ops(&self->super, &self->super.super.super.ops);
    /* its operations as they are; locked ones while an ep connects */
    status = strand_rc_locked_init(self);
    if (status != UCS_OK) {
        return status;
    }
    if (self->super.have_tm) {
        /* its rendezvous read on the responder QPs the manager makes */
        status = strand_rc_rndv_init(&self->super, config.integrity_pipeline,
                                     &self->rndv);
        if (status != UCS_OK) {
            strand_rc_locked_cleanup(self);
            return status;
        }
    }
    status = strand_rc_cm_open(&self->super, worker, params, tl_config, &config,
                               &self->cm);
    if (status != UCS_OK) {
        strand_rc_iface_rndv_cleanup(self);
        strand_rc_locked_cleanup(self);
        return status;
    }
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(strand_rc_iface_t)
{
    strand_rc_cm_stop(self->cm);
    strand_rc_iface_rndv_cleanup(self);
    strand_rc_cm_close(self->cm);
    self->cm = NULL;
    strand_rc_retire_cleanup(self);
    strand_rc_locked_cleanup(self);
}

UCS_CLASS_DEFINE(strand_rc_iface_t, strand_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(strand_rc_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t *,
                                 const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(strand_rc_iface_t, uct_iface_t);

static ucs_status_t
strand_rc_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    strand_rc_iface_t *iface  = ucs_derived_of(tl_iface, strand_rc_iface_t);
    ucs_status_t       status = strand_iface_query(&iface->super, attr);

    if (status != UCS_OK) {
        return status;
    }
    /* connected to an interface: the transport wires its QPs itself */
    attr->cap.flags |= UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    attr->cap.flags &= ~UCT_IFACE_FLAG_CONNECT_TO_EP;
    attr->device_addr_len = strand_port_addr_len(&iface->super);
    attr->iface_addr_len  = strand_rc_cm_iface_addr_len(iface->cm);
    attr->ep_addr_len     = 0;
    attr->max_num_eps     = iface->super.num_txqs;
    /* a QP per peer: each one costs the NIC a context (as UCX's rc) */
    attr->latency.m = 1e-9;
    return UCS_OK;
}

static ucs_status_t
strand_rc_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    strand_rc_iface_t *iface = ucs_derived_of(tl_iface, strand_rc_iface_t);

    return strand_rc_cm_iface_addr(iface->cm, addr);
}

static int strand_rc_iface_is_reachable(const uct_iface_h        tl_iface,
                                        const uct_device_addr_t *dev_addr,
                                        const uct_iface_addr_t  *iface_addr)
{
    strand_rc_iface_t *iface = ucs_derived_of(tl_iface, strand_rc_iface_t);

    return strand_rc_cm_is_reachable(iface->cm, dev_addr, iface_addr);
}

/* the connection manager knows whom ep's connection is to (its state
 * changes on the async thread) */
static int strand_rc_iface_ep_is_connected(strand_iface_t          *tl_iface,
                                           const strand_ep_t       *ep,
                                           const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t  *iface_addr)
{
    strand_rc_cm_t *cm = strand_rc_iface(tl_iface)->cm;
    int             connected;

    UCS_ASYNC_BLOCK(strand_rc_cm_async(cm));
    connected = strand_rc_cm_is_connected(cm, ep, dev_addr, iface_addr);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(cm));
    return connected;
}

/* The data path's progress (rc_locked.c holds the post lock around it
 * while an endpoint waits for its connection). */
static unsigned strand_rc_iface_progress_data(strand_rc_iface_t *iface)
{
    unsigned count = strand_iface_progress(&iface->super.super.super);

    if (iface->rndv != NULL) {
        count += strand_rc_rndv_progress(iface->rndv);
    }
    return count;
}

/* The async thread answers connection requests (rc_cm.h): it makes
 * responder QPs and adds them to the rendezvous that the receive and send
 * completions look up, so with tag matching the whole of progress holds
 * the async context; without, the manager's part only. */
static unsigned strand_rc_iface_progress(uct_iface_h tl_iface)
{
    strand_rc_iface_t   *iface = ucs_derived_of(tl_iface, strand_rc_iface_t);
    ucs_async_context_t *async = strand_rc_cm_async(iface->cm);
    unsigned             count;

    if (iface->rndv == NULL) {
        count = strand_rc_locked_progress(iface, strand_rc_iface_progress_data);
        UCS_ASYNC_BLOCK(async);
    } else {
        UCS_ASYNC_BLOCK(async);
        count = strand_rc_locked_progress(iface, strand_rc_iface_progress_data);
    }
    count += strand_rc_cm_progress(iface->cm);
    count += strand_rc_retire_progress(iface);
    UCS_ASYNC_UNBLOCK(async);
    /* an event the async thread met while we held it */
    ucs_async_check_miss(async);
    return count;
}

static ucs_status_t
strand_rc_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    strand_rc_iface_t *iface = ucs_derived_of(tl_iface, strand_rc_iface_t);

    return strand_rc_cm_event_fd(iface->cm, fd_p);
}

static ucs_status_t
strand_rc_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    strand_rc_iface_t *iface  = ucs_derived_of(tl_iface, strand_rc_iface_t);
    ucs_status_t       status = strand_rc_cm_event_arm(iface->cm, events);

    if (status != UCS_OK) {
        return status;
    }
    /* what waits (pending requests, CQEs) may change under the async
     * thread while an ep connects */
    strand_rc_post_lock(iface);
    status = strand_iface_event_arm(tl_iface, events);
    strand_rc_post_unlock(iface);
    return status;
}

/* ------------------------------------------------------------ the tl */

STRAND_EP_SHORT_ENTRY_POINTS(strand_rc_ep, 0)

static void strand_rc_ep_short_ops(strand_iface_t *iface, uct_iface_ops_t *ops)
{
    strand_ep_short_ops_set(ops, &strand_rc_ep_entry, &strand_rc_ep_kick_entry,
                            iface);
    strand_ep_short_shapes(iface, 0);
}

/* dc_strand's operations, but for endpoints that connect themselves, the
 * connection manager's progress, addresses and lifetime */
UCS_STATIC_INIT
{
    strand_rc_iface_ops = strand_iface_ops;
    strand_compat_internal_ops(&strand_rc_iface_internal_ops,
                               strand_iface_estimate_perf,
                               strand_rc_iface_vfs_refresh, &strand_ep_funcs);
    strand_rc_iface_ops.ep_check           = strand_rc_ep_check;
    strand_rc_iface_ops.ep_create          = strand_rc_ep_create;
    strand_rc_iface_ops.ep_destroy         = strand_rc_ep_destroy;
    strand_rc_iface_ops.iface_progress     = strand_rc_iface_progress;
    strand_rc_iface_ops.iface_event_fd_get = strand_rc_iface_event_fd_get;
    strand_rc_iface_ops.iface_event_arm    = strand_rc_iface_event_arm;
    strand_rc_iface_ops.iface_close        = UCS_CLASS_DELETE_FUNC_NAME(
                   strand_rc_iface_t);
    strand_rc_iface_ops.iface_query        = strand_rc_iface_query;
    strand_rc_iface_ops.iface_get_address  = strand_rc_iface_get_address;
    strand_rc_iface_ops.iface_is_reachable = strand_rc_iface_is_reachable;
    strand_rc_iface_ops.ep_tag_rndv_zcopy  = strand_rc_ep_tag_rndv_zcopy;
}

STRAND_STATS_CLASSES_DEFINE(strand_rc_iface_stats, strand_rc_ep_stats,
                            STRAND_RC_TL_NAME, "qp");

/* rc_strand's part of the shared code: a QP per endpoint (rc_qp.c), the
 * responder QPs' send CQEs of its rendezvous */
static const strand_tl_ops_t strand_rc_tl_ops = {
        .names       = {STRAND_RC_TL_NAME, STRAND_RC_CONFIG_PREFIX, "MAX_EPS",
                        "QP slots", "min(MAX_EPS, 256)", "QP", "qp"},
        .iface_stats = STRAND_STATS_CLASS_PTR(strand_rc_iface_stats),
        .ep_stats    = STRAND_STATS_CLASS_PTR(strand_rc_ep_stats),
        .max_sqs     = STRAND_RC_MAX_EPS,
        .sqs_per_cq  = STRAND_RC_EPS_PER_CQ,
        .tm_tx_extra = STRAND_RC_RNDV_MAX_WQES,
        .own_rndv    = 1,
        .sq_open     = strand_rc_qp_open,
        .ep_init     = strand_rc_qp_ep_init,
        .ep_cleanup  = strand_rc_qp_ep_cleanup,
        .ep_peer_str = strand_rc_qp_peer_str,
        .ep_is_connected = strand_rc_iface_ep_is_connected,
        .sq_lease        = strand_rc_qp_lease,
        .sq_release      = strand_rc_qp_release,
        .sq_can_post     = strand_rc_qp_can_post,
        .sq_idle         = strand_rc_qp_idle,
        .sq_reset        = strand_rc_qp_reset,
        .tx_cqe_other    = strand_rc_iface_tx_cqe_other};

uct_tl_t uct_rc_strand_tl = {.name          = STRAND_RC_TL_NAME,
                             .query_devices = strand_query_devices,
                             .iface_open    = UCS_CLASS_NEW_FUNC_NAME(
                                        strand_rc_iface_t),
                             .config = {
                                     .name   = STRAND_RC_TL_NAME " transport",
                                     .prefix = STRAND_RC_CONFIG_PREFIX,
                                     .table  = strand_rc_iface_config_table,
                                     .size   = sizeof(strand_rc_iface_config_t),
                             }};
