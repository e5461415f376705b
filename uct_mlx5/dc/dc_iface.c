/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's interface: its configuration, class, addresses, queries and
 * the operations tables (its part of the shared code: strand_dc_tl_ops).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_iface.h"
#include "dc_addr.h"
#include "dc_dci.h"
#include "dc_ep.h"
#include "dc_policy.h"
#include "uct_mlx5/common/ep_ops.h"
#include "uct_mlx5/common/iface_class.h"
#include "uct_mlx5/common/stats.h"

#include <ucs/debug/log.h>

#include <limits.h>
#include <string.h>

ucs_config_field_t strand_dc_iface_config_table[] = {
        {"", "", NULL, ucs_offsetof(strand_dc_iface_config_t, super.super),
         UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

        {"", "", NULL, ucs_offsetof(strand_dc_iface_config_t, super.common),
         UCS_CONFIG_TYPE_TABLE(strand_iface_common_config_table)},

        {"NUM_DCI", "8",
         "Number of DC initiators (DCIs) of the interface. An endpoint holds "
         "one "
         "while it has outstanding operations (see TX_POLICY), so this is how "
         "many endpoints can transmit at the same time (1 .. 128).",
         ucs_offsetof(strand_dc_iface_config_t, super.num_txqs),
         UCS_CONFIG_TYPE_UINT},

        {"TX_POLICY", "auto",
         "How endpoints share the DCIs:\n"
         " dcs       - an endpoint takes a DCI at its first operation and "
         "keeps\n"
         "             it until all its operations completed\n"
         " dcs_quota - the same, but while another endpoint waits for a DCI "
         "the\n"
         "             holder's lease ends at QUOTA operations, so that "
         "DCIs\n"
         "             rotate among many busy endpoints\n"
         " streams   - endpoints share DCIs, each posting on a DCI stream "
         "(see\n"
         "             DCI_STREAMS, STREAM_MAP): an error fails the endpoints "
         "it\n"
         "             belongs to, the stream is reset, the others go on (the\n"
         "             reset is a DEVX command: refused without DEVX)\n"
         " auto      - streams where the device has DCI streams and DEVX to "
         "reset\n"
         "             them, else dcs_quota",
         ucs_offsetof(strand_dc_iface_config_t, tx_policy),
         UCS_CONFIG_TYPE_ENUM(strand_dc_tx_policy_names)},

        {"DCI_STREAMS", "0",
         "streams: streams per DCI (1 .. 255), at most DCI_STREAMS_ERRORED: a "
         "DCI then goes to error only when all its streams failed, and all "
         "work "
         "it flushes provably did not run, so healthy endpoints' work is "
         "posted "
         "again. 0: as many as the device runs concurrently, up to that limit.",
         ucs_offsetof(strand_dc_iface_config_t, dci_streams),
         UCS_CONFIG_TYPE_UINT},

        {"DCI_STREAMS_ERRORED", "0",
         "streams: errored streams at which the device puts a DCI in error "
         "(a power of two up to the device's limit; mlx5dv 2^log_num_errored; "
         "1: at the first error). 0: the device's limit.",
         ucs_offsetof(strand_dc_iface_config_t, errored_streams),
         UCS_CONFIG_TYPE_UINT},

        {"STREAM_MAP", "ep",
         "streams: which endpoints share a stream:\n"
         " ep   - a stream per endpoint (most isolation: a failure on a "
         "stream\n"
         "        touches one endpoint's work)\n"
         " peer - a stream per peer NIC (a NIC that dies errors one stream "
         "per\n"
         "        DCI, not one per rank behind it)",
         ucs_offsetof(strand_dc_iface_config_t, stream_map),
         UCS_CONFIG_TYPE_ENUM(strand_dc_stream_map_names)},

        {"QUOTA", "32",
         "dcs_quota: operations an endpoint may post in one lease of a DCI "
         "once another endpoint waits for one, those before the wait counted "
         "(>= 1; at most TX_QUEUE_LEN take effect).",
         ucs_offsetof(strand_dc_iface_config_t, quota), UCS_CONFIG_TYPE_UINT},

        {"FC_ENABLE", "y",
         "Receiver flow control of active messages: an endpoint sends at most "
         "FC_WND_SIZE active messages until the receiver, progressing, grants "
         "more; without it a sender facing a busy receiver keeps its DCI in "
         "receiver-not-ready retries.",
         ucs_offsetof(strand_dc_iface_config_t, super.fc_enable),
         UCS_CONFIG_TYPE_BOOL},

        {"RC_FC_ENABLE", "y",
         "FC_ENABLE under the name UCX's rc and dc transports give it "
         "(UCX_DC_MLX5_RC_FC_ENABLE): either sets it.",
         ucs_offsetof(strand_dc_iface_config_t, super.fc_enable),
         UCS_CONFIG_TYPE_BOOL},

        {"FC_WND_SIZE", "512",
         "Flow control window: active messages an endpoint may send before it "
         "needs a grant from the receiver (1 .. 1048576).",
         ucs_offsetof(strand_dc_iface_config_t, super.fc_wnd_size),
         UCS_CONFIG_TYPE_UINT},

        {"FC_SOFT_THRESH", "0.5",
         "Fraction of the window left when the endpoint asks for the next "
         "grant "
         "(0 .. 1; the grant usually arrives before the window is empty).",
         ucs_offsetof(strand_dc_iface_config_t, super.fc_soft_thresh),
         UCS_CONFIG_TYPE_DOUBLE},

        {"FC_HARD_REQ_TIMEOUT", "auto",
         "An endpoint out of credits asks its receiver again when the grant "
         "has "
         "not come after this long (a receiver that died after taking the "
         "request is then found out). auto: the time the device takes to give "
         "up on a peer (TIMEOUT, rounded up as the device does, times "
         "RETRY_COUNT + 1); inf: never.",
         ucs_offsetof(strand_dc_iface_config_t, super.fc_hard_req_timeout),
         UCS_CONFIG_TYPE_TIME_UNITS},

        {NULL}};

/* ------------------------------------------------------------ policy */

/* auto: streams where the device has them, with errored-stream support
 * and DEVX to reset one that failed (without either every error would
 * reset a DCI shared by many endpoints: dcs_quota isolates better then) */
static strand_dc_tx_policy_t
strand_dc_iface_auto_policy(strand_dc_iface_t *iface)
{
    const strand_dev_caps_t *caps         = &iface->super.dev->caps;
    int                      have_streams = caps->dci_max_log_num_concurent > 0;

    if (have_streams && !caps->devx) {
        iface->no_devx = 1;
        ucs_info("%s: dc_strand: TX policy dcs_quota: the device has DCI "
                 "streams, but no DEVX to reset one that failed "
                 "(mlx5dv_dci_stream_id_reset)",
                 iface->super.dev->info.name);
    }
    return (have_streams && caps->devx && (caps->dci_max_log_num_errored > 0)) ?
                   STRAND_DC_TX_POLICY_STREAMS :
                   STRAND_DC_TX_POLICY_DCS_QUOTA;
}

/* The TX policy and, for streams, how many per DCI and how many errored
 * ones the DCI tolerates (what the device allows, what was asked). */
static ucs_status_t
strand_dc_iface_resolve_policy(strand_dc_iface_t              *iface,
                               const strand_dc_iface_config_t *config)
{
    const strand_dev_caps_t *caps = &iface->super.dev->caps;
    unsigned max_concurent        = 1u << caps->dci_max_log_num_concurent;
    /* a DCI created with log_num_errored = 0 goes to ERR at its first
     * error: every device with streams can be given one errored stream */
    unsigned max_errored = 1u << caps->dci_max_log_num_errored;
    unsigned errored, streams;

    iface->tx_policy              = config->tx_policy;
    iface->super.config.num_lanes = 1;
    iface->config.log_concurent   = 0;
    iface->config.log_errored     = 0;
    if (iface->tx_policy == STRAND_DC_TX_POLICY_AUTO) {
        iface->tx_policy = strand_dc_iface_auto_policy(iface);
    }
    if (iface->tx_policy != STRAND_DC_TX_POLICY_STREAMS) {
        return UCS_OK;
    }
    if (caps->dci_max_log_num_concurent == 0) {
        ucs_error("%s: dc_strand: UCX_DC_STRAND_TX_POLICY=streams: the device "
                  "has no DCI streams",
                  iface->super.dev->info.name);
        return UCS_ERR_UNSUPPORTED;
    }
    if (!caps->devx) {
        /* a stream in error is reset with mlx5dv_dci_stream_id_reset, a
         * DEVX command (MODIFY_QP with the stream's id): without DEVX
         * every stream error would drain and reset the whole DCI */
        ucs_error("%s: dc_strand: UCX_DC_STRAND_TX_POLICY=streams: a DCI "
                  "stream that failed is reset with a DEVX command "
                  "(mlx5dv_dci_stream_id_reset), and DEVX is not available "
                  "on this device (the kernel or the user's permissions "
                  "refused mlx5dv_open_device with DEVX); use dcs_quota or "
                  "auto",
                  iface->super.dev->info.name);
        return UCS_ERR_UNSUPPORTED;
    }
    errored = config->errored_streams ? config->errored_streams : max_errored;
    if ((errored > max_errored) || (errored & (errored - 1))) {
        ucs_error("%s: dc_strand: invalid configuration: "
                  "UCX_DC_STRAND_DCI_STREAMS_ERRORED=%u (valid: a power of two "
                  "up to %u)",
                  iface->super.dev->info.name, errored, max_errored);
        return UCS_ERR_INVALID_PARAM;
    }
    /* No more streams than errored ones: the device puts a DCI in ERR only
     * when that many streams are in error at once, so then every stream
     * with work on it failed, and everything flushed came after a failure
     * on its own stream: provably not executed (docs/errors.md). */
    streams = config->dci_streams ? config->dci_streams :
                                    ucs_min(max_concurent, errored);
    if ((streams > errored) || (streams > 255)) {
        ucs_error("%s: dc_strand: invalid configuration: "
                  "UCX_DC_STRAND_DCI_STREAMS=%u (valid: 1 .. %u, no more than "
                  "UCX_DC_STRAND_DCI_STREAMS_ERRORED: else a DCI in error "
                  "could have work in flight on streams that did not fail, "
                  "and whether that work ran at its peer could not be known)",
                  iface->super.dev->info.name, streams, ucs_min(errored, 255));
        return UCS_ERR_INVALID_PARAM;
    }
    iface->super.config.num_lanes = streams;
    iface->config.log_errored     = ucs_ilog2(errored);
    /* at least one concurrent stream, and no fewer than errored ones */
    iface->config.log_concurent =
            ucs_min(caps->dci_max_log_num_concurent,
                    ucs_max(ucs_max(1, ucs_ilog2(strand_roundup_pow2(streams))),
                            iface->config.log_errored));
    iface->config.stream_per_peer = (config->stream_map ==
                                     STRAND_DC_STREAM_MAP_PEER);
    return UCS_OK;
}

/* strand_tl_ops_t iface_config: the policy, its streams and quota */
static ucs_status_t strand_dc_iface_config(strand_iface_t *tl_iface,
                                           const strand_iface_config_t *cfg)
{
    strand_dc_iface_t              *iface = strand_dc_iface(tl_iface);
    const strand_dc_iface_config_t *config =
            ucs_derived_of(cfg, strand_dc_iface_config_t);
    ucs_status_t status;

    /* nothing of its own exists yet (the release path looks) */
    memset(UCS_PTR_BYTE_OFFSET(iface, sizeof(iface->super)), 0,
           sizeof(*iface) - sizeof(iface->super));
    if (config->quota < 1) {
        ucs_error("%s: dc_strand: invalid configuration: "
                  "UCX_DC_STRAND_QUOTA=%u (valid: >= 1)",
                  tl_iface->dev->info.name, config->quota);
        return UCS_ERR_INVALID_PARAM;
    }
    status = strand_dc_iface_resolve_policy(iface, config);
    if (status != UCS_OK) {
        return status;
    }
    /* what a credit request carries for the grant to come back (fc.h) */
    tl_iface->config.iface_addr_len   = sizeof(strand_dc_iface_addr_t);
    tl_iface->config.dev_addr_len     = strand_port_addr_len(tl_iface);
    tl_iface->config.lanes_fail_alone = (iface->config.log_errored > 0);
    iface->config.quota = (iface->tx_policy == STRAND_DC_TX_POLICY_DCS_QUOTA) ?
                                  ucs_min(config->quota,
                                          cfg->common.tx_queue_len) :
                                  UINT_MAX;
    return UCS_OK;
}

/* ------------------------------------------------------------ queries */

/* what the shared interface has, dc_strand's addresses, and the cost of a
 * DC connect */
static ucs_status_t
strand_dc_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    strand_iface_t *iface  = ucs_derived_of(tl_iface, strand_iface_t);
    ucs_status_t    status = strand_iface_query(iface, attr);

    if (status != UCS_OK) {
        return status;
    }
    attr->device_addr_len = strand_port_addr_len(iface);
    attr->iface_addr_len  = sizeof(strand_dc_iface_addr_t);
    /* a DCI that changes its target sends a DC connect packet first (and
     * the DCT answers it): UCX's dc_mlx5 counts 60 ns for it; an RC QP
     * has no such cost, so UCP prefers rc_strand at small scale */
    attr->latency.c += STRAND_DC_CONNECT_LATENCY;
    return UCS_OK;
}

/* ---------------------------------------------------------- addresses */

static ucs_status_t
strand_dc_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    strand_dc_addr_pack_iface(iface, (strand_dc_iface_addr_t *)addr);
    return UCS_OK;
}

int strand_dc_iface_is_reachable(const uct_iface_h        tl_iface,
                                 const uct_device_addr_t *dev_addr,
                                 const uct_iface_addr_t  *iface_addr)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    return strand_port_addr_is_reachable(iface, (const void *)dev_addr) &&
           ((iface_addr == NULL) ||
            strand_dc_addr_iface_compatible(iface, (const void *)iface_addr));
}

/* ------------------------------------------------------------ the class */

static UCS_CLASS_INIT_FUNC(strand_dc_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const strand_dc_iface_config_t *config =
            ucs_derived_of(tl_config, strand_dc_iface_config_t);

    UCS_CLASS_CALL_SUPER_INIT(strand_iface_t, md, worker, params, tl_config,
                              &config->super, &strand_dc_tl_ops,
                              &strand_dc_iface_ops);
    /* the entry points of am_short and put_short for its address vector
     * and TMH (constants there) */
    strand_dc_ep_short_ops(&self->super, &self->super.super.super.ops);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(strand_dc_iface_t)
{
}

UCS_CLASS_DEFINE(strand_dc_iface_t, strand_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(strand_dc_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t *,
                          const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(strand_dc_iface_t, uct_iface_t);

/* ------------------------------------------------------------ tables */

uct_iface_ops_t strand_dc_iface_ops;

/* the shared operations, and dc_strand's own */
UCS_STATIC_INIT
{
    strand_dc_iface_ops            = strand_iface_ops;
    strand_dc_iface_ops.ep_create  = UCS_CLASS_NEW_FUNC_NAME(strand_dc_ep_t);
    strand_dc_iface_ops.ep_destroy = UCS_CLASS_DELETE_FUNC_NAME(strand_dc_ep_t);
    strand_dc_iface_ops.ep_tag_rndv_zcopy = strand_dc_ep_tag_rndv_zcopy;
    strand_dc_iface_ops.iface_close       = UCS_CLASS_DELETE_FUNC_NAME(
                  strand_dc_iface_t);
    strand_dc_iface_ops.iface_query        = strand_dc_iface_query;
    strand_dc_iface_ops.iface_get_address  = strand_dc_iface_get_address;
    strand_dc_iface_ops.iface_is_reachable = strand_dc_iface_is_reachable;
}

STRAND_STATS_CLASSES_DEFINE(strand_dc_iface_stats, strand_dc_ep_stats,
                            STRAND_DC_TL_NAME, "dci");

/* dc_strand's part of the shared code: a pool of DCIs, leased by the TX
 * policy (dc_policy.c), reset after an error (dc_dci.c); endpoints with an
 * address vector to the peer's DCT. */
const strand_tl_ops_t strand_dc_tl_ops = {
        .names = {STRAND_DC_TL_NAME, STRAND_DC_CONFIG_PREFIX, "NUM_DCI", "DCIs",
                  "NUM_DCI", "DCI", "dci"},
        .iface_stats     = STRAND_STATS_CLASS_PTR(strand_dc_iface_stats),
        .ep_stats        = STRAND_STATS_CLASS_PTR(strand_dc_ep_stats),
        .max_sqs         = STRAND_DC_MAX_DCI,
        .sqs_per_cq      = STRAND_DC_MAX_DCI,
        .rndv_hdr_len    = STRAND_DC_RNDV_HDR_LEN,
        .iface_config    = strand_dc_iface_config,
        .sq_open         = strand_dc_sq_open,
        .sq_close        = strand_dc_sq_close,
        .ep_init         = strand_dc_ep_addr_init,
        .ep_cleanup      = strand_dc_policy_release,
        .ep_peer_str     = strand_dc_ep_peer_str,
        .ep_is_connected = strand_dc_ep_is_connected,
        .sq_lease        = strand_dc_policy_lease,
        .sq_release      = strand_dc_policy_release,
        .sq_quota_spent  = strand_dc_policy_quota_spent,
        .sq_can_post     = strand_dc_policy_can_post,
        .sq_idle         = strand_dc_policy_dci_idle,
        .lane_reset      = strand_dc_stream_reset,
        .sq_reset        = strand_dc_dci_reset,
        .sq_show         = strand_dc_dci_pool_show,
        .lane_show       = strand_dc_lane_show};

uct_tl_t uct_dc_strand_tl = {.name          = STRAND_DC_TL_NAME,
                             .query_devices = strand_query_devices,
                             .iface_open    = UCS_CLASS_NEW_FUNC_NAME(
                                        strand_dc_iface_t),
                             .config = {
                                     .name   = STRAND_DC_TL_NAME " transport",
                                     .prefix = STRAND_DC_CONFIG_PREFIX,
                                     .table  = strand_dc_iface_config_table,
                                     .size   = sizeof(strand_dc_iface_config_t),
                             }};
