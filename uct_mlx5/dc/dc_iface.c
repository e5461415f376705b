/*
 * dc_strand interface: configuration, open/close, capabilities, addresses,
 * progress, events, flush and fence.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_iface.h"
#include "dc_integrity.h"
#include "dc_addr.h"
#include "dc_dci.h"
#include "dc_ep.h"
#include "dc_policy.h"
#include "dc_tag.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/vfs/base/vfs_obj.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STRAND_DC_PORT 1

const char *strand_dc_tx_policy_names[] = {
    [STRAND_DC_TX_POLICY_DCS]       = "dcs",
    [STRAND_DC_TX_POLICY_DCS_QUOTA] = "dcs_quota",
    [STRAND_DC_TX_POLICY_STREAMS]   = "streams",
    [STRAND_DC_TX_POLICY_AUTO]      = "auto",
    [STRAND_DC_TX_POLICY_LAST]      = NULL
};

const char *strand_dc_stream_map_names[] = {
    [STRAND_DC_STREAM_MAP_EP]   = "ep",
    [STRAND_DC_STREAM_MAP_PEER] = "peer",
    [STRAND_DC_STREAM_MAP_LAST] = NULL
};

#ifdef ENABLE_STATS
ucs_stats_class_t strand_dc_iface_stats_class = {
    .name          = "dc_strand_iface",
    .num_counters  = STRAND_DC_IFACE_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
        [STRAND_DC_IFACE_STAT_TX_CQE]       = "tx_cqe",
        [STRAND_DC_IFACE_STAT_TX_CQE_ERROR] = "tx_cqe_error",
        [STRAND_DC_IFACE_STAT_TX_TAIL_NOP]  = "tx_tail_nop",
        [STRAND_DC_IFACE_STAT_RX_CQE]       = "rx_cqe",
        [STRAND_DC_IFACE_STAT_REPOST]       = "repost",
        [STRAND_DC_IFACE_STAT_STREAM_RESET] = "stream_reset",
        [STRAND_DC_IFACE_STAT_DCI_RESET]    = "dci_reset"
    }
};

ucs_stats_class_t strand_dc_ep_stats_class = {
    .name          = "dc_strand_ep",
    .num_counters  = STRAND_DC_EP_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
        [STRAND_DC_EP_STAT_FC_WAIT]  = "fc_wait",
        [STRAND_DC_EP_STAT_DCI_WAIT] = "dci_wait",
        [STRAND_DC_EP_STAT_ERROR]    = "error"
    }
};
#endif

ucs_config_field_t strand_dc_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(strand_dc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"", "", NULL, ucs_offsetof(strand_dc_iface_config_t, common),
     UCS_CONFIG_TYPE_TABLE(strand_iface_common_config_table)},

    {"NUM_DCI", "8",
     "Number of DC initiators (DCIs) of the interface. An endpoint holds one "
     "while it has outstanding operations (see TX_POLICY), so this is how "
     "many endpoints can transmit at the same time (1 .. 128).",
     ucs_offsetof(strand_dc_iface_config_t, num_dci),
     UCS_CONFIG_TYPE_UINT},

    {"TX_POLICY", "auto",
     "How endpoints share the DCIs:\n"
     " dcs       - an endpoint takes a DCI at its first operation and keeps\n"
     "             it until all its operations completed\n"
     " dcs_quota - the same, but while another endpoint waits for a DCI the\n"
     "             holder posts at most QUOTA more operations, so that DCIs\n"
     "             rotate among many busy endpoints\n"
     " streams   - endpoints share DCIs, each posting on a DCI stream (see\n"
     "             DCI_STREAMS, STREAM_MAP): an error fails the endpoints it\n"
     "             belongs to, the stream is reset, the others go on\n"
     " auto      - streams where the device has DCI streams, else dcs_quota",
     ucs_offsetof(strand_dc_iface_config_t, tx_policy),
     UCS_CONFIG_TYPE_ENUM(strand_dc_tx_policy_names)},

    {"DCI_STREAMS", "0",
     "streams: streams per DCI (1 .. 255), at most DCI_STREAMS_ERRORED: a "
     "DCI then goes to error only when all its streams failed, and all work "
     "it flushes provably did not run, so healthy endpoints' work is posted "
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
     " ep   - a stream per endpoint (most isolation: a failure on a stream\n"
     "        touches one endpoint's work)\n"
     " peer - a stream per peer NIC (a NIC that dies errors one stream per\n"
     "        DCI, not one per rank behind it)",
     ucs_offsetof(strand_dc_iface_config_t, stream_map),
     UCS_CONFIG_TYPE_ENUM(strand_dc_stream_map_names)},

    {"QUOTA", "32",
     "dcs_quota: operations an endpoint may post on its DCI while another "
     "endpoint waits for one (>= 1; at most TX_QUEUE_LEN take effect).",
     ucs_offsetof(strand_dc_iface_config_t, quota),
     UCS_CONFIG_TYPE_UINT},

    {"FC_ENABLE", "y",
     "Receiver flow control of active messages: an endpoint sends at most "
     "FC_WND_SIZE active messages until the receiver, progressing, grants "
     "more; without it a sender facing a busy receiver keeps its DCI in "
     "receiver-not-ready retries.",
     ucs_offsetof(strand_dc_iface_config_t, fc_enable),
     UCS_CONFIG_TYPE_BOOL},

    {"RC_FC_ENABLE", "y",
     "FC_ENABLE under the name UCX's rc and dc transports give it "
     "(UCX_DC_MLX5_RC_FC_ENABLE): either sets it.",
     ucs_offsetof(strand_dc_iface_config_t, fc_enable),
     UCS_CONFIG_TYPE_BOOL},

    {"FC_WND_SIZE", "512",
     "Flow control window: active messages an endpoint may send before it "
     "needs a grant from the receiver (1 .. 1048576).",
     ucs_offsetof(strand_dc_iface_config_t, fc_wnd_size),
     UCS_CONFIG_TYPE_UINT},

    {"RX_INLINE", "y",
     "Let the device deliver small active messages inside the receive "
     "completion (scatter-to-CQE, with 128-byte CQEs) instead of the receive "
     "buffer; the transport copies them out. n: the data always goes to the "
     "buffer.",
     ucs_offsetof(strand_dc_iface_config_t, rx_inline),
     UCS_CONFIG_TYPE_BOOL},

    {"FC_SOFT_THRESH", "0.5",
     "Fraction of the window left when the endpoint asks for the next grant "
     "(0 .. 1; the grant usually arrives before the window is empty).",
     ucs_offsetof(strand_dc_iface_config_t, fc_soft_thresh),
     UCS_CONFIG_TYPE_DOUBLE},

    {"FC_HARD_REQ_TIMEOUT", "auto",
     "An endpoint out of credits asks its receiver again when the grant has "
     "not come after this long (a receiver that died after taking the "
     "request is then found out). auto: the time the device takes to give "
     "up on a peer (TIMEOUT, rounded up as the device does, times "
     "RETRY_COUNT + 1); inf: never.",
     ucs_offsetof(strand_dc_iface_config_t, fc_hard_req_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {NULL}
};

/* ------------------------------------------------------------- helpers */

/* IBA transport timeout: 4.096us * 2^t, t in 0..31 (0 = infinite on some
 * devices: we never pick it for a finite timeout). */
static uint8_t strand_dc_timeout_code(double seconds)
{
    double t = seconds / 4.096e-6;
    int code = 1;

    while ((code < 31) && ((double)(1ull << code) < t)) {
        ++code;
    }
    return (uint8_t)code;
}

/* How long an endpoint out of credits waits for a grant before it asks
 * again (seconds; a huge value for "inf"). */
static double
strand_dc_fc_req_timeout(const strand_dc_iface_config_t *config)
{
    if (config->fc_hard_req_timeout == UCS_TIME_INFINITY) {
        return 1e9; /* 30 years */
    }
    if (config->fc_hard_req_timeout == UCS_TIME_AUTO) {
        return 4.096e-6 * (double)(1ull << strand_dc_timeout_code(
                                   config->common.timeout)) *
               (config->common.retry_count + 1);
    }
    return ucs_time_to_sec(config->fc_hard_req_timeout);
}

/* IBA RNR NAK timer encoding (milliseconds per code; code 0 = 655.36). */
static uint8_t strand_dc_rnr_code(double seconds)
{
    static const double ms[32] = {
        655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32,
        0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36,
        20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68,
        491.52
    };
    double want = seconds * 1e3;
    int code;

    for (code = 1; code < 32; ++code) {
        if (ms[code] >= want - 1e-9) {
            return (uint8_t)code;
        }
    }
    return 0;
}

static ucs_status_t strand_dc_errno_status(int err)
{
    switch (err) {
    case 0:      return UCS_OK;
    case ENOMEM: return UCS_ERR_NO_MEMORY;
    case EINVAL: return UCS_ERR_INVALID_PARAM;
    default:     return UCS_ERR_IO_ERROR;
    }
}

/* ------------------------------------------------------------- devices */

/* The PCI device of a hardware NIC (from the device layer's locality), so
 * that UCP ranks devices by distance; a software device has none. */
static ucs_sys_device_t strand_dc_sys_device(const strand_dev_t *dev)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;

    if ((dev->locality.pci_bdf[0] == '\0') ||
        (ucs_topo_find_device_by_bdf_name(dev->locality.pci_bdf, &sys_dev) !=
         UCS_OK)) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    ucs_topo_sys_device_set_name(sys_dev, dev->info.name);
    return sys_dev;
}

ucs_status_t
strand_dc_query_devices(uct_md_h uct_md, uct_tl_device_resource_t **devices_p,
                        unsigned *num_devices_p)
{
    strand_md_t *md = ucs_derived_of(uct_md, strand_md_t);
    char name[UCT_DEVICE_NAME_MAX];

    ucs_snprintf_zero(name, sizeof(name), "%s:%d", md->dev->info.name,
                      STRAND_DC_PORT);
    return uct_single_device_resource(uct_md, name, UCT_DEVICE_TYPE_NET,
                                      strand_dc_sys_device(md->dev),
                                      devices_p, num_devices_p);
}

/* --------------------------------------------------------------- query */

static ucs_status_t strand_dc_iface_perf(strand_dc_iface_t *iface,
                                         strand_dev_perf_t *perf)
{
    int ret = iface->dev->ops->query_perf(iface->dev, perf);

    if (ret != 0) {
        ucs_error("%s: cannot get the device's performance estimates: %s",
                  iface->dev->info.name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    if (perf->source == STRAND_DEV_PERF_PORT_GUESS) {
        ucs_diag("%s: port speed not known, estimates assume %s",
                 iface->dev->info.name, perf->what);
    }
    ucs_trace("%s: estimates (%s): latency %.0f ns, bandwidth %.0f MB/s, "
              "overhead %.0f/%.0f ns", iface->dev->info.name, perf->what,
              perf->latency * 1e9, perf->bandwidth / 1e6,
              perf->send_overhead * 1e9, perf->recv_overhead * 1e9);
    return UCS_OK;
}

ucs_status_t strand_dc_iface_query(uct_iface_h tl_iface,
                                          uct_iface_attr_t *attr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    size_t seg_size          = iface->config.seg_size;
    uint64_t amo             = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                               UCS_BIT(UCT_ATOMIC_OP_AND) |
                               UCS_BIT(UCT_ATOMIC_OP_OR)  |
                               UCS_BIT(UCT_ATOMIC_OP_XOR);
    uint64_t famo            = amo | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                               UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    strand_dev_perf_t perf;
    ucs_status_t status;

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PUT_SHORT |
                      UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      /* a bad local or remote buffer fails its ep, not the
                       * process (the device's protection and access
                       * errors); a pack callback that wrote too much is
                       * refused (strand_dc_ep_check_packed) */
                      UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF |
                      UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM |
                      UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN |
                      UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_RECV_SIG |
                            UCT_IFACE_FLAG_EVENT_FD;

    if (iface->dev->caps.atomics && iface->config.masked_atomics) {
        /* masked atomics build every operation, 32 and 64 bit */
        attr->cap.flags             |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        attr->cap.atomic32.op_flags  = amo;
        attr->cap.atomic32.fop_flags = famo;
        attr->cap.atomic64.op_flags  = amo;
        attr->cap.atomic64.fop_flags = famo;
    } else if (iface->dev->caps.atomics) {
        /* the standard 64-bit fetch-and-add and compare-and-swap only */
        attr->cap.flags             |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        attr->cap.atomic64.op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD);
        attr->cap.atomic64.fop_flags = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                       UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }

    attr->cap.am.max_short       = iface->config.max_inline -
                                   strand_dc_am_hdr_len(iface);
    attr->cap.am.max_bcopy       = seg_size - strand_dc_am_hdr_len(iface);
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = seg_size - strand_dc_am_hdr_len(iface);
    attr->cap.am.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu       = iface->dev->caps.mtu;
    attr->cap.am.max_hdr         = STRAND_DC_AM_MAX_HDR;
    attr->cap.am.max_iov         = iface->config.max_sge - 1;

    attr->cap.put.max_short       = iface->config.max_inline;
    attr->cap.put.max_bcopy       = seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = STRAND_DC_MAX_ZCOPY;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = iface->dev->caps.mtu;
    attr->cap.put.max_iov         = iface->config.max_sge;

    attr->cap.get.max_bcopy       = seg_size;
    if (iface->integrity.kind != STRAND_INTEGRITY_OFF) {
        /* every GET lands through a checking mkey: zero-copy only */
        attr->cap.flags         &= ~UCT_IFACE_FLAG_GET_BCOPY;
        attr->cap.get.max_bcopy  = 0;
    }
    attr->cap.get.min_zcopy       = 1;
    attr->cap.get.max_zcopy       = STRAND_DC_MAX_ZCOPY;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = iface->dev->caps.mtu;
    attr->cap.get.max_iov         = iface->config.max_sge;

    strand_dc_tag_query(iface, attr);

    attr->device_addr_len = strand_dc_addr_device_len(iface);
    attr->iface_addr_len  = sizeof(strand_dc_iface_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->dev_num_paths   = 1;
    attr->max_num_eps     = SIZE_MAX;

    /* what the device says it is worth (src/dev: the port's speed on a
     * NIC, measured costs on the software device): the link is shared by
     * every process on the port */
    status = strand_dc_iface_perf(iface, &perf);
    if (status != UCS_OK) {
        return status;
    }
    /* a DCI that changes its target sends a DC connect packet first (and
     * the DCT answers it): UCX's dc_mlx5 counts 60 ns for it; an RC QP
     * has no such cost, so UCP prefers rc_strand at small scale */
    attr->latency             = ucs_linear_func_make(perf.latency +
                                                     (iface->tl->connected ?
                                                      0 :
                                                      STRAND_DC_CONNECT_LATENCY),
                                                     perf.latency_per_ep);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = perf.bandwidth;
    attr->overhead            = perf.send_overhead;
    attr->priority            = 0;
    return UCS_OK;
}

/* UCP's protocol selection asks for the send and receive overheads apart
 * (uct_iface_estimate_perf); the rest is what iface_query reports. */
ucs_status_t strand_dc_iface_estimate_perf(uct_iface_h tl_iface,
                                           uct_perf_attr_t *perf_attr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    strand_dev_perf_t perf;
    ucs_status_t status;

    status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
    if ((status != UCS_OK) ||
        !(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD)) {
        return status;
    }
    status = strand_dc_iface_perf(iface, &perf);
    if (status == UCS_OK) {
        perf_attr->recv_overhead = perf.recv_overhead;
    }
    return status;
}

/* ------------------------------------------------------------ addresses */

ucs_status_t strand_dc_iface_get_device_address(uct_iface_h tl_iface,
                                                       uct_device_addr_t *addr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    strand_dc_addr_pack_device(iface, (strand_dc_device_addr_t*)addr);
    return UCS_OK;
}

static ucs_status_t strand_dc_iface_get_address(uct_iface_h tl_iface,
                                                uct_iface_addr_t *addr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    strand_dc_addr_pack_iface(iface, (strand_dc_iface_addr_t*)addr);
    return UCS_OK;
}

int strand_dc_iface_is_reachable(const uct_iface_h tl_iface,
                                        const uct_device_addr_t *dev_addr,
                                        const uct_iface_addr_t *iface_addr)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    return strand_dc_addr_is_reachable(iface, (const void*)dev_addr) &&
           ((iface_addr == NULL) ||
            strand_dc_addr_iface_compatible(iface, (const void*)iface_addr));
}

/* ------------------------------------------------------------- progress */

unsigned strand_dc_iface_progress(uct_iface_h tl_iface)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);
    unsigned count;

    if (ucs_unlikely((iface->integrity_queue != NULL) ||
                     iface->integrity_starved)) {
        strand_dc_integrity_progress(iface);
    }

    count  = strand_dc_rx_progress(iface);
    count += strand_dc_dci_tx_progress(iface);
    if (count == 0) {
        if (iface->dev->ops->progress != NULL) {
            iface->dev->ops->progress(iface->dev);
        }
        count  = strand_dc_rx_progress(iface);
        count += strand_dc_dci_tx_progress(iface);
    } else if (iface->srq_missing > 0) {
        strand_dc_rx_refill(iface);
    }
    strand_dc_fc_progress(iface, &iface->fc);
    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        strand_dc_ep_dispatch_pending(iface);
    }
    return count;
}

ucs_status_t strand_dc_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    if (!strand_dc_dci_pool_busy(iface)) {
        return UCS_OK;
    }
    UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    strand_dc_dci_signal_tails(iface);
    return UCS_INPROGRESS;
}

ucs_status_t strand_dc_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    ++iface->fence_beat; /* every ep fences its next WQE */
    ++iface->tx_gate;    /* on the general path */
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

/* ------------------------------------------------------------ open/close */

static void strand_dc_tx_desc_init(uct_iface_h tl_iface, void *obj,
                                   uct_mem_h memh)
{
    strand_dc_tx_desc_t *desc = obj;

    desc->lkey = ((strand_md_memh_t*)memh)->mr.lkey;
}

/* Send queues sharing a send CQ: all of them, or (rc_strand's endpoints)
 * groups, so that a CQ of each group made as endpoints come bounds the
 * memory of few endpoints, not what MAX_EPS of them could need. */
static unsigned
strand_dc_iface_tx_cq_dcis(const strand_dc_iface_t *iface,
                           const strand_dc_iface_config_t *config)
{
    return ucs_min(config->num_dci, iface->tl->sqs_per_cq);
}

static ucs_status_t
strand_dc_iface_check_config(strand_dc_iface_t *iface,
                             const strand_dc_iface_config_t *config)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    const char *dev_name          = iface->dev->info.name;
    unsigned max_wr               = caps->max_qp_wr ? caps->max_qp_wr : 32768;
    unsigned max_dci              = iface->tl->max_sqs;

#define STRAND_DC_CHECK(_cond, _fmt, ...) \
    if (!(_cond)) { \
        ucs_error("%s: %s: invalid configuration: UCX_%s" _fmt, dev_name, \
                  iface->tl_name, iface->cfg_prefix, ## __VA_ARGS__); \
        return UCS_ERR_INVALID_PARAM; \
    }

    STRAND_DC_CHECK((config->common.tx_queue_len >= 8) &&
                    (config->common.tx_queue_len <= max_wr),
                    "TX_QUEUE_LEN=%u (valid: 8 .. %u)",
                    config->common.tx_queue_len, max_wr);
    STRAND_DC_CHECK(config->common.tx_cq_moderation >= 1,
                    "TX_CQ_MODERATION=0 (valid: 1 .. inf)");
    STRAND_DC_CHECK((config->common.rx_queue_len >= 1) &&
                    (config->common.rx_queue_len <= 32767),
                    "RX_QUEUE_LEN=%u (valid: 1 .. 32767)",
                    config->common.rx_queue_len);
    STRAND_DC_CHECK(config->common.rx_max_poll >= 1,
                    "RX_MAX_POLL=%lu (valid: 1 .. inf)",
                    config->common.rx_max_poll);
    STRAND_DC_CHECK(config->common.tx_max_poll >= 1,
                    "TX_MAX_POLL=%lu (valid: 1 .. inf)",
                    config->common.tx_max_poll);
    STRAND_DC_CHECK((config->common.seg_size >= 64) &&
                    (config->common.seg_size <= UCS_MBYTE),
                    "SEG_SIZE=%zu (valid: 64 .. 1048576)",
                    config->common.seg_size);
    STRAND_DC_CHECK((config->num_dci >= 1) &&
                    (config->num_dci <= max_dci),
                    "%s=%u (valid: 1 .. %u)", iface->tl->sqs_option,
                    config->num_dci, max_dci);
    STRAND_DC_CHECK(config->quota >= 1,
                    "QUOTA=%u (valid: >= 1)", config->quota);
    STRAND_DC_CHECK((config->common.timeout > 0) && (config->common.timeout <= 8796.0),
                    "TIMEOUT=%gs (valid: > 0 .. 8796s)",
                    config->common.timeout);
    STRAND_DC_CHECK(config->common.retry_count <= 7,
                    "RETRY_COUNT=%u (valid: 0 .. 7)",
                    config->common.retry_count);
    STRAND_DC_CHECK((config->common.rnr_timeout >= 0) &&
                    (config->common.rnr_timeout <= 0.49152),
                    "RNR_TIMEOUT=%gs (valid: 0 .. 491.52ms)",
                    config->common.rnr_timeout);
    STRAND_DC_CHECK(config->common.rnr_retry_count <= 7,
                    "RNR_RETRY_COUNT=%u (valid: 0 .. 7)",
                    config->common.rnr_retry_count);
    STRAND_DC_CHECK((config->common.max_inline >= 16) &&
                    (config->common.max_inline <= ucs_min(caps->max_inline, 800)),
                    "MAX_INLINE=%zu (valid: 16 .. %u)",
                    config->common.max_inline, ucs_min(caps->max_inline, 800));
    STRAND_DC_CHECK((config->common.tx_cq_len == 0) ||
                    (config->common.tx_cq_len >=
                     strand_dc_iface_tx_cq_dcis(iface, config) *
                     config->common.tx_queue_len),
                    "TX_CQ_LEN=%u (must be 0 or >= %s * "
                    "TX_QUEUE_LEN = %u)", config->common.tx_cq_len,
                    iface->tl->sqs_per_cq_text,
                    strand_dc_iface_tx_cq_dcis(iface, config) *
                    config->common.tx_queue_len);
    STRAND_DC_CHECK((config->common.rx_cq_len == 0) ||
                    (config->common.rx_cq_len > config->common.rx_queue_len),
                    "RX_CQ_LEN=%u (must be 0 or > RX_QUEUE_LEN "
                    "= %u)", config->common.rx_cq_len, config->common.rx_queue_len);
    STRAND_DC_CHECK((config->fc_wnd_size >= 1) &&
                    (config->fc_wnd_size <= (1u << 20)),
                    "FC_WND_SIZE=%u (valid: 1 .. 1048576)",
                    config->fc_wnd_size);
    STRAND_DC_CHECK((config->fc_soft_thresh >= 0) &&
                    (config->fc_soft_thresh <= 1),
                    "FC_SOFT_THRESH=%g (valid: 0 .. 1)",
                    config->fc_soft_thresh);
#undef STRAND_DC_CHECK
    return UCS_OK;
}

/* The TX policy and, for streams, how many per DCI and how many errored
 * ones the DCI tolerates (what the device allows, what was asked). */
static ucs_status_t
strand_dc_iface_resolve_policy(strand_dc_iface_t *iface,
                               const strand_dc_iface_config_t *config)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    unsigned max_concurent        = 1u << caps->dci_max_log_num_concurent;
    /* a DCI created with log_num_errored = 0 goes to ERR at its first
     * error: every device with streams can be given one errored stream */
    unsigned max_errored          = 1u << caps->dci_max_log_num_errored;
    unsigned errored, streams;
    int have_streams              = caps->dci_max_log_num_concurent > 0;

    iface->tx_policy          = config->tx_policy;
    iface->config.num_streams = 1;
    iface->config.log_concurent = 0;
    iface->config.log_errored   = 0;
    if (iface->tx_policy == STRAND_DC_TX_POLICY_AUTO) {
        /* without errored-stream support every error would reset a DCI
         * shared by many endpoints: dcs_quota isolates better then */
        iface->tx_policy = (have_streams &&
                            (caps->dci_max_log_num_errored > 0)) ?
                           STRAND_DC_TX_POLICY_STREAMS :
                           STRAND_DC_TX_POLICY_DCS_QUOTA;
    }
    if (iface->tx_policy != STRAND_DC_TX_POLICY_STREAMS) {
        return UCS_OK;
    }
    if (!have_streams) {
        ucs_error("%s: dc_strand: UCX_DC_STRAND_TX_POLICY=streams: the device "
                  "has no DCI streams", iface->dev->info.name);
        return UCS_ERR_UNSUPPORTED;
    }
    errored = config->errored_streams ? config->errored_streams : max_errored;
    if ((errored > max_errored) || (errored & (errored - 1))) {
        ucs_error("%s: dc_strand: invalid configuration: "
                  "UCX_DC_STRAND_DCI_STREAMS_ERRORED=%u (valid: a power of two "
                  "up to %u)", iface->dev->info.name, errored, max_errored);
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
                  iface->dev->info.name, streams, ucs_min(errored, 255));
        return UCS_ERR_INVALID_PARAM;
    }
    iface->config.num_streams     = streams;
    iface->config.log_errored     = ucs_ilog2(errored);
    /* at least one concurrent stream, and no fewer than errored ones */
    iface->config.log_concurent   = ucs_min(caps->dci_max_log_num_concurent,
                                            ucs_max(ucs_max(1,
                                                    ucs_ilog2(ucs_roundup_pow2(
                                                    streams))),
                                                    iface->config.log_errored));
    iface->config.stream_per_peer = (config->stream_map ==
                                     STRAND_DC_STREAM_MAP_PEER);
    return UCS_OK;
}

ucs_status_t strand_dc_iface_tx_cq_get(strand_dc_iface_t *iface,
                                       unsigned dci_index,
                                       strand_dev_cq_t **cq_p)
{
    unsigned n       = dci_index / iface->tx_cq_dcis;
    strand_dev_t *dev = iface->dev;
    strand_dc_tx_cq_t *tx;
    int err;

    ucs_assert(n < iface->max_tx_cqs);
    /* slots are taken lowest first: the CQs made are those below n */
    while (iface->num_tx_cqs <= n) {
        tx  = &iface->tx_cqs[iface->num_tx_cqs];
        err = dev->ops->create_cq(dev, iface->tx_cq_len, iface->chan,
                                  &tx->cq);
        if (err != 0) {
            ucs_error("%s: failed to create send CQ of %u: %s",
                      dev->info.name, iface->tx_cq_len, strerror(err));
            return strand_dc_errno_status(err);
        }
        tx->ci     = 0;
        tx->arm_sn = 0;
        ++iface->num_tx_cqs;
        if (n > 0) {
            /* armed at once: a worker that armed the others before this
             * endpoint came may sleep (a spurious wake-up at most) */
            strand_dc_tx_cq_arm(tx);
        }
    }
    *cq_p = &iface->tx_cqs[n].cq;
    return UCS_OK;
}

static void strand_dc_iface_release(strand_dc_iface_t *iface)
{
    strand_dev_t *dev = iface->dev;

    UCS_STATS_NODE_FREE(iface->stats);

    if (iface->have_fc) {
        strand_dc_fc_cleanup(iface); /* its endpoints hold DCIs */
        iface->have_fc = 0;
    }
    ucs_arbiter_cleanup(&iface->arbiter);
    strand_dc_dci_pool_cleanup(iface);
    strand_dc_integrity_cleanup(iface);
    if (iface->have_dct) {
        dev->ops->destroy_qp(dev, &iface->dct);
        iface->have_dct = 0;
    }
    strand_dc_rx_cleanup(iface);
    strand_dc_tag_cleanup(iface);
    if (iface->scratch != NULL) {
        ucs_mpool_put_inline(iface->scratch);
        iface->scratch = NULL;
    }
    if (iface->have_tx_mp) {
        ucs_mpool_cleanup(&iface->tx_mp, 1);
        iface->have_tx_mp = 0;
    }
    if (iface->have_srq) {
        dev->ops->destroy_srq(dev, &iface->srq);
        iface->have_srq = 0;
    }
    if (iface->have_td) { /* after every QP made on it */
        dev->ops->destroy_td(dev, &iface->td);
        iface->have_td = 0;
    }
    if (iface->have_rx_cq) {
        dev->ops->destroy_cq(dev, &iface->rx_cq);
        iface->have_rx_cq = 0;
    }
    while (iface->num_tx_cqs > 0) {
        --iface->num_tx_cqs;
        dev->ops->destroy_cq(dev, &iface->tx_cqs[iface->num_tx_cqs].cq);
    }
    ucs_free(iface->tx_cqs);
    iface->tx_cqs = NULL;
    if (iface->have_channel) {
        dev->ops->destroy_channel(dev, &iface->channel);
        iface->have_channel = 0;
    }
}


static void strand_dc_iface_vfs_show_dci_pool(void *obj,
                                              ucs_string_buffer_t *strb,
                                              void *arg_ptr, uint64_t arg_u64)
{
    strand_dc_dci_pool_show(obj, strb);
}

/* The device's async events so far: "<event> <count> qpn 0x<last>". */
static void strand_dc_iface_vfs_show_async(void *obj,
                                           ucs_string_buffer_t *strb,
                                           void *arg_ptr, uint64_t arg_u64)
{
    strand_dc_iface_t *iface = obj;
    strand_md_t *md = ucs_derived_of(iface->super.md, strand_md_t);
    uint64_t count;
    uint32_t qpn;
    unsigned t;

    strand_async_drain(&md->async);
    for (t = 0; t < STRAND_ASYNC_MAX_TYPE; ++t) {
        count = strand_async_count(&md->async, (enum ibv_event_type)t, &qpn);
        if (count > 0) {
            ucs_string_buffer_appendf(strb, "%s %" PRIu64 " qpn 0x%x\n",
                                      ibv_event_type_str(
                                              (enum ibv_event_type)t),
                                      count, qpn);
        }
    }
}

/* Tag matching: the list, the phase, and which path messages took. */
static void strand_dc_iface_vfs_show_integrity(void *obj,
                                               ucs_string_buffer_t *strb,
                                               void *arg_ptr,
                                               uint64_t arg_u64)
{
    strand_dc_iface_t *iface = obj;
    char buf[256];

    strand_integrity_summary(&iface->integrity, buf, sizeof(buf));
    ucs_string_buffer_appendf(strb, "%s\n", buf);
}

static void strand_dc_iface_vfs_show_tm(void *obj, ucs_string_buffer_t *strb,
                                        void *arg_ptr, uint64_t arg_u64)
{
    strand_dc_iface_t *iface = obj;

    strand_tm_show(&iface->tm, strb);
}

/* What UCX's VFS (and tests) can read: the DCI pool, async events, tag
 * matching. */
void strand_dc_iface_vfs_refresh(uct_iface_h tl_iface)
{
    strand_dc_iface_t *iface = ucs_derived_of(tl_iface, strand_dc_iface_t);

    ucs_vfs_obj_add_ro_file(iface, strand_dc_iface_vfs_show_dci_pool, NULL, 0,
                            "dci_pool");
    ucs_vfs_obj_add_ro_file(iface, strand_dc_iface_vfs_show_async, NULL, 0,
                            "async_events");
    if (iface->integrity.kind != STRAND_INTEGRITY_OFF) {
        ucs_vfs_obj_add_ro_file(iface, strand_dc_iface_vfs_show_integrity,
                                NULL, 0, "integrity");
    }
    if (iface->have_tm) {
        ucs_vfs_obj_add_ro_file(iface, strand_dc_iface_vfs_show_tm, NULL, 0,
                                "tag_matching");
    }
}

static uct_iface_internal_ops_t strand_dc_iface_internal_ops = {
    .iface_estimate_perf = strand_dc_iface_estimate_perf,
    .iface_vfs_refresh   = strand_dc_iface_vfs_refresh,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = strand_dc_ep_invalidate
};

/* The interface of dc_strand, or (rc != 0) of rc_strand: the same
 * receive side, send queues, endpoint operations and recovery; rc_strand
 * has no DCT, and each of its endpoints a QP of its own in the DCI slots
 * (rc/rc_iface.c). `config` is the transport's configuration as the
 * shared code reads it (rc_strand fills in what it has no option for). */
UCS_CLASS_INIT_FUNC(strand_dc_iface_t, uct_md_h uct_md, uct_worker_h worker,
                    const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config,
                    const strand_dc_iface_config_t *config,
                    const strand_tl_ops_t *tl, uct_iface_ops_t *ops)
{
    strand_md_t *md = ucs_derived_of(uct_md, strand_md_t);
    const char *tl_name = tl->name;
    uct_iface_mpool_config_t mp_config = config->common.tx_mp;
    strand_dev_t *dev = md->dev;
    char dev_name[UCT_DEVICE_NAME_MAX];
    ucs_status_t status;
    unsigned tx_cq_len, rx_cq_len, max_ds, av_ds, tx_outstanding;
    strand_dev_cq_t *tx_cq;
    int err;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("%s supports only UCT_IFACE_OPEN_MODE_DEVICE", tl_name);
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_snprintf_zero(dev_name, sizeof(dev_name), "%s:%d", dev->info.name,
                      STRAND_DC_PORT);
    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) &&
        strcmp(params->mode.device.dev_name, dev_name)) {
        ucs_error("%s: no device '%s' on memory domain %s (it has %s)",
                  tl_name, params->mode.device.dev_name, dev->info.name,
                  dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops,
                              &strand_dc_iface_internal_ops, uct_md, worker,
                              params, tl_config
                              UCS_STATS_ARG((params->field_mask &
                                             UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                            params->stats_root : NULL)
                              UCS_STATS_ARG(tl_name));

    /* UCS_CLASS_NEW hands out malloc'ed memory: every field below the
     * superclass starts at zero, so that the release path knows what
     * exists and counters start where the device starts */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));
    self->md         = md;
    self->dev        = dev;
    self->tl         = tl;
    self->tl_name    = tl_name;
    self->cfg_prefix = tl->cfg_prefix;
    ucs_arbiter_init(&self->arbiter);
    ucs_list_head_init(&self->eps);

    status = strand_dc_iface_check_config(self, config);
    if (status != UCS_OK) {
        return status;
    }

    self->num_dci                = config->num_dci;
    self->config.tx_queue_len    = config->common.tx_queue_len;
    /* a signaled WQE among any quarter of the queue: a full queue always
     * has a CQE to come (the DCIs' geometry may lower it further) */
    self->tx_moderation          = ucs_max(1, ucs_min(config->common.tx_cq_moderation,
                                                      config->common.tx_queue_len /
                                                      4));
    status = strand_dc_iface_resolve_policy(self, config);
    if (status != UCS_OK) {
        return status;
    }
    self->config.quota           = (self->tx_policy ==
                                    STRAND_DC_TX_POLICY_DCS_QUOTA) ?
                                   ucs_min(config->quota,
                                           config->common.tx_queue_len) : UINT_MAX;
    self->config.rx_queue_len    = config->common.rx_queue_len;
    self->config.rx_max_poll     = (config->common.rx_max_poll >= UINT_MAX) ?
                                   UINT_MAX : (unsigned)config->common.rx_max_poll;
    self->config.rx_mp           = config->common.rx_mp;
    if (self->config.rx_mp.bufs_grow == 0) {
        self->config.rx_mp.bufs_grow = 256;
    }
    if (mp_config.bufs_grow == 0) {
        mp_config.bufs_grow = 128;
    }
    self->config.tx_max_poll     = (config->common.tx_max_poll >= UINT_MAX) ?
                                   UINT_MAX : (unsigned)config->common.tx_max_poll;
    self->config.seg_size        = config->common.seg_size;
    self->config.max_inline      = config->common.max_inline;
    self->config.max_sge         = ucs_min(STRAND_DC_MAX_SGE,
                                           dev->caps.max_sge);
    self->config.atomic_reply_be32 = dev->caps.atomic_reply_be32;
    self->config.atomic_reply_be64 = dev->caps.atomic_reply_be64;
    self->config.masked_atomics  = dev->caps.masked_atomics;
    self->config.av_size         = (dev->caps.link_layer ==
                                    IBV_LINK_LAYER_ETHERNET) ?
                                   STRAND_AV_FULL_SIZE : STRAND_AV_BASE_SIZE;
    /* largest WQE: ctrl + AV + raddr + data segments, or + inline data,
     * or the masked 64-bit CS (raddr, two atomic segments, data) */
    av_ds  = self->config.av_size / STRAND_WQE_DS;
    max_ds = 2 + av_ds + ucs_max(self->config.max_sge,
                                 strand_inline_ds(config->common.max_inline));
    max_ds = ucs_max(max_ds, 1 + av_ds + 4);
    self->config.dci_max_bbs = strand_ds_to_bbs(max_ds);

    status = strand_dc_tag_resolve(self, config, params);
    if (status != UCS_OK) {
        return status;
    }
    /* the entry points of am_short and put_short for its address vector
     * and TMH (constants there) */
    strand_dc_ep_short_ops(self, &self->super.super.ops);
    /* the payload of an am_short: its 8-byte header and the AM id (and a
     * TMH) go inline before it */
    self->config.am_short_payload = self->config.max_inline -
                                    (sizeof(uint64_t) +
                                     strand_dc_am_hdr_len(self));
    /* what can be outstanding, and a batch consumed before the consumer
     * index is written (dc_dci.c) */
    self->tx_cq_dcis = strand_dc_iface_tx_cq_dcis(self, config);
    self->max_tx_cqs = ucs_div_round_up(config->num_dci, self->tx_cq_dcis);
    tx_outstanding   = self->tx_cq_dcis * config->common.tx_queue_len +
                       (self->config.am_tmh ? tl->tm_tx_extra : 0);
    tx_cq_len = config->common.tx_cq_len ? config->common.tx_cq_len : tx_outstanding + 64;
    self->tx_cq_len   = tx_cq_len;
    self->tx_ci_batch = ucs_max(1, ucs_min(64, (int)tx_cq_len -
                                               (int)tx_outstanding));
    rx_cq_len = config->common.rx_cq_len ? config->common.rx_cq_len :
                config->common.rx_queue_len + 1 +
                strand_dc_tag_rx_cq_extra(self, config);

    status = UCS_STATS_NODE_ALLOC(&self->stats, &strand_dc_iface_stats_class,
                                  self->super.stats, "-%p", self);
    if (status != UCS_OK) {
        return status;
    }

    /* a channel of its own: events of other interfaces on the same device
     * never wake (or get drained by) this one */
    err = dev->ops->create_channel(dev, &self->channel);
    if (err != 0) {
        ucs_error("%s: failed to create a completion channel: %s",
                  dev->info.name, strerror(err));
        status = strand_dc_errno_status(err);
        goto err;
    }
    self->have_channel = 1;
    self->chan         = &self->channel;

    self->tx_cqs = ucs_calloc(self->max_tx_cqs, sizeof(*self->tx_cqs),
                              "strand_dc_tx_cqs");
    if (self->tx_cqs == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }
    status = strand_dc_iface_tx_cq_get(self, 0, &tx_cq);
    if (status != UCS_OK) {
        goto err;
    }
    err = dev->ops->create_cq(dev, rx_cq_len, self->chan, &self->rx_cq);
    if (err != 0) {
        ucs_error("%s: failed to create receive CQ of %u: %s",
                  dev->info.name, rx_cq_len, strerror(err));
        status = strand_dc_errno_status(err);
        goto err;
    }
    self->have_rx_cq = 1;
    self->tx_cqe_shift = strand_cqe_shift(tx_cq->dv.cqe_size);
    self->rx_cqe_shift = strand_cqe_shift(self->rx_cq.dv.cqe_size);
    if ((self->tx_cqe_shift == 0) || (self->rx_cqe_shift == 0)) {
        ucs_error("%s: CQEs of %u/%u bytes are not supported (64 or 128)",
                  dev->info.name, tx_cq->dv.cqe_size,
                  self->rx_cq.dv.cqe_size);
        status = UCS_ERR_UNSUPPORTED;
        goto err;
    }

    err = dev->ops->create_td(dev, &self->td);
    if (err != 0) {
        /* without one this interface's doorbells could share a BlueFlame
         * register with another thread's: torn WQEs on a NIC */
        ucs_error("%s: failed to allocate a thread domain (ibv_alloc_td: "
                  "%s): %s needs a BlueFlame register per interface",
                  dev->info.name, strerror(err), tl_name);
        status = strand_dc_errno_status(err);
        goto err;
    }
    self->have_td = 1;

    status = strand_dc_tag_create_srq(self, config, params);
    if (status != UCS_OK) {
        goto err;
    }

    status = strand_dc_rx_init(self, params);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_iface_mpool_init(&self->super, &self->tx_mp,
                                  sizeof(strand_dc_tx_desc_t) +
                                  config->common.seg_size + STRAND_DC_TX_SLACK,
                                  sizeof(strand_dc_tx_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &mp_config,
                                  mp_config.bufs_grow, strand_dc_tx_desc_init,
                                  "strand_dc_tx");
    if (status != UCS_OK) {
        goto err;
    }
    self->have_tx_mp = 1;
    self->scratch    = ucs_mpool_get(&self->tx_mp);
    if (self->scratch == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    self->min_rnr_timer    = strand_dc_rnr_code(config->common.rnr_timeout);
    self->config.rx_inline = config->rx_inline;

    memset(&self->dci_attr, 0, sizeof(self->dci_attr));
    self->dci_attr.td            = &self->td;
    self->dci_attr.send_cq       = tx_cq;
    self->dci_attr.max_send_wr   = config->common.tx_queue_len;
    self->dci_attr.max_send_sge  = self->config.max_sge;
    self->dci_attr.max_inline    = config->common.max_inline;
    self->dci_attr.timeout       = strand_dc_timeout_code(config->common.timeout);
    self->dci_attr.retry_cnt     = config->common.retry_count;
    self->dci_attr.rnr_retry     = config->common.rnr_retry_count;
    self->dci_attr.max_rd_atomic = ucs_max(1, ucs_min(dev->caps.max_rd_atomic,
                                                      16));
    strand_dc_policy_dci_attr(self, &self->dci_attr);
    status = strand_dc_dci_pool_init(self);
    if (status != UCS_OK) {
        goto err;
    }
    status = strand_dc_integrity_init(self, config);
    if (status != UCS_OK) {
        goto err;
    }
    status = strand_dc_fc_init(self, config->fc_enable, config->fc_wnd_size,
                               config->fc_soft_thresh,
                               strand_dc_fc_req_timeout(config));
    if (status != UCS_OK) {
        goto err;
    }
    self->have_fc = 1;

    ucs_debug("%s: %s iface %p: lid %u dct 0x%x, %u %s, seg %zu",
              dev->info.name, tl_name, self, dev->caps.lid, self->dct.qpn,
              self->num_dci, tl->connected ? "QP slots" : "DCIs",
              self->config.seg_size);
    return UCS_OK;

err:
    strand_dc_iface_release(self);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(strand_dc_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    strand_dc_iface_release(self);
}

UCS_CLASS_DEFINE(strand_dc_iface_t, uct_base_iface_t);

UCS_CLASS_DEFINE_DELETE_FUNC(strand_dc_iface_t, uct_iface_t);

/* dc_strand's DCT, on the interface's SRQ and receive CQ (the DCIs come
 * with the pool, dc_dci.c) */
ucs_status_t strand_dc_iface_dct_open(strand_dc_iface_t *iface)
{
    strand_dev_t *dev = iface->dev;
    strand_dev_dct_attr_t dct_attr;
    int err;

    memset(&dct_attr, 0, sizeof(dct_attr));
    dct_attr.cq             = &iface->rx_cq;
    dct_attr.srq            = &iface->srq;
    dct_attr.access_key     = STRAND_DC_ACCESS_KEY;
    dct_attr.min_rnr_timer  = iface->min_rnr_timer;
    dct_attr.scatter_to_cqe = iface->config.rx_inline;
    err = dev->ops->create_dct(dev, &dct_attr, &iface->dct);
    if (err != 0) {
        ucs_error("%s: failed to create DCT: %s", dev->info.name,
                  strerror(err));
        return strand_dc_errno_status(err);
    }
    iface->have_dct = 1;
    return UCS_OK;
}

static ucs_status_t strand_dc_iface_open(uct_md_h md, uct_worker_h worker,
                                         const uct_iface_params_t *params,
                                         const uct_iface_config_t *tl_config,
                                         uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW(strand_dc_iface_t, iface_p, md, worker, params,
                         tl_config,
                         ucs_derived_of(tl_config, strand_dc_iface_config_t),
                         &strand_dc_tl_ops, &strand_dc_iface_ops);
}

uct_iface_ops_t strand_dc_iface_ops = {
    .ep_am_short              = strand_dc_ep_am_short,
    .ep_am_short_iov          = strand_dc_ep_am_short_iov,
    .ep_am_bcopy              = strand_dc_ep_am_bcopy,
    .ep_am_zcopy              = strand_dc_ep_am_zcopy,
    .ep_put_short             = strand_dc_ep_put_short,
    .ep_put_bcopy             = strand_dc_ep_put_bcopy,
    .ep_put_zcopy             = strand_dc_ep_put_zcopy,
    .ep_get_bcopy             = strand_dc_ep_get_bcopy,
    .ep_get_zcopy             = strand_dc_ep_get_zcopy,
    .ep_atomic_cswap64        = strand_dc_ep_atomic_cswap64,
    .ep_atomic_cswap32        = strand_dc_ep_atomic_cswap32,
    .ep_atomic64_post         = strand_dc_ep_atomic64_post,
    .ep_atomic32_post         = strand_dc_ep_atomic32_post,
    .ep_atomic64_fetch        = strand_dc_ep_atomic64_fetch,
    .ep_atomic32_fetch        = strand_dc_ep_atomic32_fetch,
    .ep_pending_add           = strand_dc_ep_pending_add,
    .ep_pending_purge         = strand_dc_ep_pending_purge,
    .ep_flush                 = strand_dc_ep_flush,
    .ep_fence                 = strand_dc_ep_fence,
    .ep_check                 = strand_dc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(strand_dc_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(strand_dc_ep_t),
    .iface_flush              = strand_dc_iface_flush,
    .iface_fence              = strand_dc_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = strand_dc_iface_progress,
    .iface_event_fd_get       = strand_dc_iface_event_fd_get,
    .iface_event_arm          = strand_dc_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(strand_dc_iface_t),
    .iface_query              = strand_dc_iface_query,
    .iface_get_device_address = strand_dc_iface_get_device_address,
    .iface_get_address        = strand_dc_iface_get_address,
    .iface_is_reachable       = strand_dc_iface_is_reachable,
    .ep_tag_eager_short       = strand_dc_ep_tag_eager_short,
    .ep_tag_eager_bcopy       = strand_dc_ep_tag_eager_bcopy,
    .ep_tag_eager_zcopy       = strand_dc_ep_tag_eager_zcopy,
    .ep_tag_rndv_zcopy        = strand_dc_ep_tag_rndv_zcopy,
    .ep_tag_rndv_cancel       = strand_dc_ep_tag_rndv_cancel,
    .ep_tag_rndv_request      = strand_dc_ep_tag_rndv_request,
    .iface_tag_recv_zcopy     = strand_dc_iface_tag_recv_zcopy,
    .iface_tag_recv_cancel    = strand_dc_iface_tag_recv_cancel
};

/* dc_strand's part of the shared code: a pool of DCIs, leased by the TX
 * policy (dc_policy.c), reset after an error (dc_recovery.c); endpoints
 * with an address vector to the peer's DCT. */
const strand_tl_ops_t strand_dc_tl_ops = {
    .name            = STRAND_DC_TL_NAME,
    .cfg_prefix      = STRAND_DC_CONFIG_PREFIX,
    .sqs_option      = "NUM_DCI",
    .max_sqs         = STRAND_DC_MAX_DCI,
    .sqs_per_cq      = STRAND_DC_MAX_DCI,
    .sqs_per_cq_text = "NUM_DCI",
    .tm_tx_extra     = 0,
    .connected       = 0,
    .own_rndv        = 0,
    .sq_open         = strand_dc_sq_open,
    .ep_init         = strand_dc_ep_addr_init,
    .ep_cleanup      = strand_dc_policy_release,
    .sq_lease        = strand_dc_policy_lease,
    .sq_release      = strand_dc_policy_release,
    .sq_can_post     = strand_dc_policy_can_post,
    .sq_idle         = strand_dc_policy_dci_idle,
    .sq_reset        = strand_dc_dci_reset,
    .tx_cqe_other    = NULL
};

uct_tl_t uct_dc_strand_tl = {
    .name          = STRAND_DC_TL_NAME,
    .query_devices = strand_dc_query_devices,
    .iface_open    = strand_dc_iface_open,
    .config = {
        .name   = STRAND_DC_TL_NAME " transport",
        .prefix = STRAND_DC_CONFIG_PREFIX,
        .table  = strand_dc_iface_config_table,
        .size   = sizeof(strand_dc_iface_config_t),
    }
};
