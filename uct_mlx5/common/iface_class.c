/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared interface (iface.h): open/close and its operations table;
 * its transport's part comes through iface->tl. Query, progress and VFS
 * are iface_query.c, iface_progress.c and iface_vfs.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface_class.h"
#include "ep_ops.h"
#include "ep_pending.h"
#include "event.h"
#include "fc_grant.h"
#include "integrity_get.h"
#include "port_addr.h"
#include "recovery.h"
#include "rx.h"
#include "tag.h"
#include "txq_pool.h"

#include <ucs/arch/bitops.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

/* IBA transport timeout: 4.096us * 2^t, t in 0..31 (0 = infinite on some
 * devices: we never pick it for a finite timeout). */
static uint8_t strand_timeout_code(double seconds)
{
    double t    = seconds / 4.096e-6;
    int    code = 1;

    while ((code < 31) && ((double)(1ull << code) < t)) {
        ++code;
    }
    return (uint8_t)code;
}

/* How long an endpoint out of credits waits for a grant before it asks
 * again (seconds; a huge value for "inf"). */
static double strand_fc_req_timeout(const strand_iface_config_t *config)
{
    if (config->fc_hard_req_timeout == UCS_TIME_INFINITY) {
        return 1e9; /* 30 years */
    }
    if (config->fc_hard_req_timeout == UCS_TIME_AUTO) {
        return 4.096e-6 *
               (double)(1ull << strand_timeout_code(config->common.timeout)) *
               (config->common.retry_count + 1);
    }
    return ucs_time_to_sec(config->fc_hard_req_timeout);
}

/* IBA RNR NAK timer encoding (milliseconds per code; code 0 = 655.36). */
static uint8_t strand_rnr_code(double seconds)
{
    static const double ms[32] = {655.36, 0.01,  0.02,  0.03,   0.04,   0.06,
                                  0.08,   0.12,  0.16,  0.24,   0.32,   0.48,
                                  0.64,   0.96,  1.28,  1.92,   2.56,   3.84,
                                  5.12,   7.68,  10.24, 15.36,  20.48,  30.72,
                                  40.96,  61.44, 81.92, 122.88, 163.84, 245.76,
                                  327.68, 491.52};
    double              want   = seconds * 1e3;
    int                 code;

    for (code = 1; code < 32; ++code) {
        if (ms[code] >= want - 1e-9) {
            return (uint8_t)code;
        }
    }
    return 0;
}

ucs_status_t strand_errno_status(int err)
{
    switch (err) {
    case 0:
        return UCS_OK;
    case ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case EINVAL:
        return UCS_ERR_INVALID_PARAM;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* ------------------------------------------------------------ open/close */

static void strand_tx_desc_init(uct_iface_h tl_iface, void *obj, uct_mem_h memh)
{
    strand_tx_desc_t *desc = obj;

    desc->lkey = ((strand_md_memh_t *)memh)->mr.lkey;
}

/* Send queues sharing a send CQ: all of them, or (rc_strand's endpoints)
 * groups, so that a CQ of each group made as endpoints come bounds the
 * memory of few endpoints, not what MAX_EPS of them could need. */
static unsigned strand_iface_tx_cq_txqs(const strand_iface_t        *iface,
                                        const strand_iface_config_t *config)
{
    return ucs_min(config->num_txqs, iface->tl->sqs_per_cq);
}

/* the highest service level of the port: 15 on InfiniBand, a priority
 * (0 .. 7) on RoCE */
static unsigned strand_iface_max_sl(const strand_iface_t *iface)
{
    return (iface->dev->caps.link_layer == IBV_LINK_LAYER_ETHERNET) ? 7 : 15;
}

/* What the interface's packets carry for QoS (TRAFFIC_CLASS, SL; auto:
 * the port's configured traffic class, else 106 on RoCE and 0 on
 * InfiniBand, as UCX; SL 0); a value the port cannot carry is refused. */
static ucs_status_t strand_iface_path_init(strand_iface_t              *iface,
                                           const strand_iface_config_t *config)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    int eth = (caps->link_layer == IBV_LINK_LAYER_ETHERNET);

    if ((config->common.traffic_class != UCS_ULUNITS_AUTO) &&
        (config->common.traffic_class > 255)) {
        ucs_error("%s: %s: invalid configuration: UCX_%sTRAFFIC_CLASS=%lu "
                  "(valid: auto, 0 .. 255)",
                  iface->dev->info.name, iface->tl_name, iface->cfg_prefix,
                  config->common.traffic_class);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->common.sl != UCS_ULUNITS_AUTO) &&
        (config->common.sl > strand_iface_max_sl(iface))) {
        ucs_error("%s: %s: invalid configuration: UCX_%sSL=%lu (valid: "
                  "auto, 0 .. %u on %s)",
                  iface->dev->info.name, iface->tl_name, iface->cfg_prefix,
                  config->common.sl, strand_iface_max_sl(iface),
                  eth ? "RoCE" : "InfiniBand");
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->common.traffic_class != UCS_ULUNITS_AUTO) {
        iface->path.tclass = (uint8_t)config->common.traffic_class;
    } else if (caps->port_tclass >= 0) {
        iface->path.tclass = (uint8_t)caps->port_tclass;
    } else {
        iface->path.tclass = eth ? STRAND_ROCE_DEFAULT_TCLASS : 0;
    }
    iface->path.sl = (config->common.sl == UCS_ULUNITS_AUTO) ?
                             0 :
                             (uint8_t)config->common.sl;
    return UCS_OK;
}

/* An option out of its range: the interface does not open (the message
 * names the variable as the user sets it). */
#define STRAND_IFACE_CHECK(_cond, _fmt, ...)                                \
    if (!(_cond)) {                                                         \
        ucs_error("%s: %s: invalid configuration: UCX_%s" _fmt,             \
                  iface->dev->info.name, iface->tl_name, iface->cfg_prefix, \
                  ##__VA_ARGS__);                                           \
        return UCS_ERR_INVALID_PARAM;                                       \
    }

/* the queues' sizes and the progress budgets */
static ucs_status_t
strand_iface_check_queues(strand_iface_t              *iface,
                          const strand_iface_config_t *config)
{
    const strand_dev_caps_t *caps   = &iface->dev->caps;
    unsigned                 max_wr = caps->max_qp_wr ? caps->max_qp_wr : 32768;
    unsigned                 max_txqs = iface->tl->max_sqs;

    STRAND_IFACE_CHECK((config->common.tx_queue_len >= 8) &&
                               (config->common.tx_queue_len <= max_wr),
                       "TX_QUEUE_LEN=%u (valid: 8 .. %u)",
                       config->common.tx_queue_len, max_wr);
    STRAND_IFACE_CHECK(config->common.tx_cq_moderation >= 1,
                       "TX_CQ_MODERATION=0 (valid: 1 .. inf)");
    STRAND_IFACE_CHECK((config->common.rx_queue_len >= 1) &&
                               (config->common.rx_queue_len <= 32767),
                       "RX_QUEUE_LEN=%u (valid: 1 .. 32767)",
                       config->common.rx_queue_len);
    STRAND_IFACE_CHECK(config->common.rx_max_poll >= 1,
                       "RX_MAX_POLL=%lu (valid: 1 .. inf)",
                       config->common.rx_max_poll);
    STRAND_IFACE_CHECK(config->common.tx_max_poll >= 1,
                       "TX_MAX_POLL=%lu (valid: 1 .. inf)",
                       config->common.tx_max_poll);
    STRAND_IFACE_CHECK((config->common.seg_size >= 64) &&
                               (config->common.seg_size <= UCS_MBYTE),
                       "SEG_SIZE=%zu (valid: 64 .. 1048576)",
                       config->common.seg_size);
    STRAND_IFACE_CHECK((config->num_txqs >= 1) &&
                               (config->num_txqs <= max_txqs),
                       "%s=%u (valid: 1 .. %u)", iface->tl->names.sqs_option,
                       config->num_txqs, max_txqs);
    return UCS_OK;
}

/* the transport's timers and retries, inline size, CQ lengths, credits */
static ucs_status_t
strand_iface_check_transport(strand_iface_t              *iface,
                             const strand_iface_config_t *config)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;

    STRAND_IFACE_CHECK((config->common.timeout > 0) &&
                               (config->common.timeout <= 8796.0),
                       "TIMEOUT=%gs (valid: > 0 .. 8796s)",
                       config->common.timeout);
    STRAND_IFACE_CHECK(config->common.retry_count <= 7,
                       "RETRY_COUNT=%u (valid: 0 .. 7)",
                       config->common.retry_count);
    STRAND_IFACE_CHECK((config->common.rnr_timeout >= 0) &&
                               (config->common.rnr_timeout <= 0.49152),
                       "RNR_TIMEOUT=%gs (valid: 0 .. 491.52ms)",
                       config->common.rnr_timeout);
    STRAND_IFACE_CHECK(config->common.rnr_retry_count <= 7,
                       "RNR_RETRY_COUNT=%u (valid: 0 .. 7)",
                       config->common.rnr_retry_count);
    STRAND_IFACE_CHECK((config->common.max_inline >= 16) &&
                               (config->common.max_inline <=
                                ucs_min(caps->max_inline, 800)),
                       "MAX_INLINE=%zu (valid: 16 .. %u)",
                       config->common.max_inline,
                       ucs_min(caps->max_inline, 800));
    STRAND_IFACE_CHECK((config->common.tx_cq_len == 0) ||
                               (config->common.tx_cq_len >=
                                strand_iface_tx_cq_txqs(iface, config) *
                                        config->common.tx_queue_len),
                       "TX_CQ_LEN=%u (must be 0 or >= %s * "
                       "TX_QUEUE_LEN = %u)",
                       config->common.tx_cq_len, iface->tl->names.sqs_per_cq,
                       strand_iface_tx_cq_txqs(iface, config) *
                               config->common.tx_queue_len);
    STRAND_IFACE_CHECK((config->common.rx_cq_len == 0) ||
                               (config->common.rx_cq_len >
                                config->common.rx_queue_len),
                       "RX_CQ_LEN=%u (must be 0 or > RX_QUEUE_LEN "
                       "= %u)",
                       config->common.rx_cq_len, config->common.rx_queue_len);
    STRAND_IFACE_CHECK((config->fc_wnd_size >= 1) &&
                               (config->fc_wnd_size <= (1u << 20)),
                       "FC_WND_SIZE=%u (valid: 1 .. 1048576)",
                       config->fc_wnd_size);
    STRAND_IFACE_CHECK((config->fc_soft_thresh >= 0) &&
                               (config->fc_soft_thresh <= 1),
                       "FC_SOFT_THRESH=%g (valid: 0 .. 1)",
                       config->fc_soft_thresh);
    return UCS_OK;
}
#undef STRAND_IFACE_CHECK

static ucs_status_t
strand_iface_check_config(strand_iface_t              *iface,
                          const strand_iface_config_t *config)
{
    ucs_status_t status = strand_iface_check_queues(iface, config);

    return (status == UCS_OK) ? strand_iface_check_transport(iface, config) :
                                status;
}

ucs_status_t strand_iface_tx_cq_get(strand_iface_t *iface, unsigned txq_index,
                                    strand_dev_cq_t **cq_p)
{
    unsigned        n   = txq_index / iface->tx_cq_txqs;
    strand_dev_t   *dev = iface->dev;
    strand_tx_cq_t *tx;
    int             err;

    ucs_assert(n < iface->max_tx_cqs);
    /* slots are taken lowest first: the CQs made are those below n */
    while (iface->num_tx_cqs <= n) {
        tx  = &iface->tx_cqs[iface->num_tx_cqs];
        err = dev->ops->create_cq(dev, iface->tx_cq_len, 0, iface->chan,
                                  &tx->cq);
        if (err != 0) {
            ucs_error("%s: failed to create send CQ of %u: %s", dev->info.name,
                      iface->tx_cq_len, strerror(err));
            return strand_errno_status(err);
        }
        strand_cq_mark_hw_owned(tx->cq.dv.buf, tx->cq.dv.cqe_cnt,
                                tx->cq.dv.cqe_size);
        tx->ci = 0;
        if (strand_cqe_shift(tx->cq.dv.cqe_size) != 0) { /* (else refused) */
            strand_cq_cursor_init(&tx->cur, tx->cq.dv.buf, tx->cq.dv.cqe_cnt,
                                  strand_cqe_shift(tx->cq.dv.cqe_size), 0,
                                  iface->tx_ci_batch);
        }
        tx->arm_sn = 0;
        ++iface->num_tx_cqs;
        if (n > 0) {
            /* armed at once: a worker that armed the others before this
             * endpoint came may sleep (a spurious wake-up at most) */
            strand_tx_cq_arm(tx);
        }
    }
    *cq_p = &iface->tx_cqs[n].cq;
    return UCS_OK;
}

static void strand_iface_release(strand_iface_t *iface)
{
    strand_dev_t *dev = iface->dev;

    UCS_STATS_NODE_FREE(iface->stats);

    if (iface->have_fc) {
        strand_fc_cleanup(iface); /* its endpoints hold send queues */
        iface->have_fc = 0;
    }
    ucs_arbiter_cleanup(&iface->arbiter);
    strand_recovery_cleanup_all(iface);
    strand_txq_pool_cleanup(iface);
    strand_iface_integrity_cleanup(iface);
    strand_rx_cleanup(iface);
    strand_tag_cleanup(iface);
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

/* UCX's internal operations, as this UCX spells them (ucx_compat.c) */
uct_iface_internal_ops_t strand_iface_internal_ops;

UCS_STATIC_INIT
{
    strand_compat_internal_ops(&strand_iface_internal_ops,
                               strand_iface_estimate_perf,
                               strand_iface_vfs_refresh, &strand_ep_funcs);
}

/* The open mode and device asked for are this interface's. */
static ucs_status_t strand_iface_check_params(const strand_dev_t       *dev,
                                              const char               *tl_name,
                                              const uct_iface_params_t *params)
{
    char dev_name[UCT_DEVICE_NAME_MAX];

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("%s supports only UCT_IFACE_OPEN_MODE_DEVICE", tl_name);
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_snprintf_zero(dev_name, sizeof(dev_name), "%s:%d", dev->info.name,
                      STRAND_PORT);
    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) &&
        strcmp(params->mode.device.dev_name, dev_name)) {
        ucs_error("%s: no device '%s' on memory domain %s (it has %s)", tl_name,
                  params->mode.device.dev_name, dev->info.name, dev_name);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

/* The largest WQE built: ctrl + AV + raddr + data segments, or + inline
 * data, or the masked 64-bit CS (raddr, two atomic segments, data). */
static unsigned strand_iface_max_bbs(const strand_iface_t *iface)
{
    unsigned av_ds  = iface->config.av_size / STRAND_WQE_DS;
    unsigned max_ds = 2 + av_ds +
                      ucs_max(iface->config.max_sge,
                              strand_inline_ds(iface->config.max_inline));

    return strand_ds_to_bbs(ucs_max(max_ds, 1 + av_ds + 4));
}

/* The send CQs' geometry: what can be outstanding on one, and a batch
 * consumed before the consumer index is written (tx_cqe.c). */
static void strand_iface_tx_cq_geometry(strand_iface_t              *iface,
                                        const strand_iface_config_t *config)
{
    unsigned tx_outstanding;

    iface->tx_cq_txqs = strand_iface_tx_cq_txqs(iface, config);
    iface->max_tx_cqs = ucs_div_round_up(config->num_txqs, iface->tx_cq_txqs);
    tx_outstanding    = iface->tx_cq_txqs * config->common.tx_queue_len +
                     (iface->config.am_tmh ? iface->tl->tm_tx_extra : 0);
    iface->tx_cq_len = config->common.tx_cq_len ? config->common.tx_cq_len :
                                                  tx_outstanding + 64;
    /* a power of two: the poll tells the CQ at multiples of it */
    iface->tx_ci_batch = 1u << ucs_ilog2(ucs_max(
                                 1, ucs_min(64, (int)iface->tx_cq_len -
                                                        (int)tx_outstanding)));
}

/* What the configuration, the device and the transport make of the
 * interface, before anything is created. */
static ucs_status_t strand_iface_configure(strand_iface_t              *iface,
                                           const strand_iface_config_t *config,
                                           const uct_iface_params_t    *params)
{
    const strand_dev_caps_t            *caps   = &iface->dev->caps;
    const strand_iface_common_config_t *common = &config->common;
    ucs_status_t                        status;

    status = strand_iface_check_config(iface, config);
    if (status == UCS_OK) {
        status = strand_iface_path_init(iface, config);
    }
    if (status != UCS_OK) {
        return status;
    }
    iface->num_txqs            = config->num_txqs;
    iface->config.tx_queue_len = common->tx_queue_len;
    /* a signaled WQE among any quarter of the queue: a full queue always
     * has a CQE to come (the queues' geometry may lower it further) */
    iface->tx_moderation = ucs_max(1, ucs_min(common->tx_cq_moderation,
                                              common->tx_queue_len / 4));
    /* what the transport decides: its lanes, a quota */
    iface->config.num_lanes = 1;
    if (iface->tl->iface_config != NULL) {
        status = iface->tl->iface_config(iface, config);
        if (status != UCS_OK) {
            return status;
        }
    }
    iface->config.rx_queue_len = common->rx_queue_len;
    iface->config.rx_inline    = common->rx_inline;
    iface->config.rx_max_poll  = (common->rx_max_poll >= UINT_MAX) ?
                                         UINT_MAX :
                                         (unsigned)common->rx_max_poll;
    iface->config.rx_mp        = common->rx_mp;
    if (iface->config.rx_mp.bufs_grow == 0) {
        iface->config.rx_mp.bufs_grow = 256;
    }
    iface->config.tx_max_poll       = (common->tx_max_poll >= UINT_MAX) ?
                                              UINT_MAX :
                                              (unsigned)common->tx_max_poll;
    iface->config.seg_size          = common->seg_size;
    iface->config.max_inline        = common->max_inline;
    iface->config.max_sge           = ucs_min(STRAND_MAX_SGE, caps->max_sge);
    iface->config.atomic_reply_be32 = caps->atomic_reply_be32;
    iface->config.atomic_reply_be64 = caps->atomic_reply_be64;
    iface->config.masked_atomics    = caps->masked_atomics;
    iface->config.av_size     = (caps->link_layer == IBV_LINK_LAYER_ETHERNET) ?
                                        STRAND_AV_FULL_SIZE :
                                        STRAND_AV_BASE_SIZE;
    iface->config.txq_max_bbs = strand_iface_max_bbs(iface);
    iface->min_rnr_timer      = strand_rnr_code(common->rnr_timeout);

    status = strand_tag_resolve(iface, config, params);
    if (status != UCS_OK) {
        return status;
    }
    /* the payload of an am_short: its 8-byte header and the AM id (and a
     * TMH) go inline before it */
    iface->config.am_short_payload = iface->config.max_inline -
                                     (sizeof(uint64_t) +
                                      strand_am_hdr_len(iface));
    strand_iface_tx_cq_geometry(iface, config);
    return UCS_OK;
}

/* A completion channel of its own (events of other interfaces on the same
 * device never wake, or get drained by, this one), the first send CQ and
 * the receive CQ. */
static ucs_status_t strand_iface_open_cqs(strand_iface_t              *iface,
                                          const strand_iface_config_t *config,
                                          strand_dev_cq_t            **tx_cq_p)
{
    strand_dev_t *dev       = iface->dev;
    unsigned      rx_cq_len = config->common.rx_cq_len ?
                                      config->common.rx_cq_len :
                                      config->common.rx_queue_len + 1 +
                                         strand_tag_rx_cq_extra(iface, config);
    ucs_status_t  status;
    int           err;

    err = dev->ops->create_channel(dev, &iface->channel);
    if (err != 0) {
        ucs_error("%s: failed to create a completion channel: %s",
                  dev->info.name, strerror(err));
        return strand_errno_status(err);
    }
    iface->have_channel = 1;
    iface->chan         = &iface->channel;
    iface->tx_cqs       = ucs_calloc(iface->max_tx_cqs, sizeof(*iface->tx_cqs),
                                     "strand_tx_cqs");
    if (iface->tx_cqs == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = strand_iface_tx_cq_get(iface, 0, tx_cq_p);
    if (status != UCS_OK) {
        return status;
    }
    /* scatter-to-CQE takes up to 64 bytes in a 128-byte CQE only (a DCT
     * scatters into nothing smaller), as UCX's RX_INLINE=64 asks */
    err = dev->ops->create_cq(dev, rx_cq_len, iface->config.rx_inline ? 128 : 0,
                              iface->chan, &iface->rx_cq);
    if (err != 0) {
        ucs_error("%s: failed to create receive CQ of %u: %s", dev->info.name,
                  rx_cq_len, strerror(err));
        return strand_errno_status(err);
    }
    iface->have_rx_cq = 1;
    strand_cq_mark_hw_owned(iface->rx_cq.dv.buf, iface->rx_cq.dv.cqe_cnt,
                            iface->rx_cq.dv.cqe_size);
    iface->tx_cqe_shift = strand_cqe_shift((*tx_cq_p)->dv.cqe_size);
    iface->rx_cqe_shift = strand_cqe_shift(iface->rx_cq.dv.cqe_size);
    if ((iface->tx_cqe_shift == 0) || (iface->rx_cqe_shift == 0)) {
        ucs_error("%s: CQEs of %u/%u bytes are not supported (64 or 128)",
                  dev->info.name, (*tx_cq_p)->dv.cqe_size,
                  iface->rx_cq.dv.cqe_size);
        return UCS_ERR_UNSUPPORTED;
    }
    strand_cq_cursor_init(&iface->rx_cur, iface->rx_cq.dv.buf,
                          iface->rx_cq.dv.cqe_cnt, iface->rx_cqe_shift,
                          iface->rx_ci, STRAND_RX_CI_BATCH);
    return UCS_OK;
}

/* The thread domain every send queue is made on: without one this
 * interface's doorbells could share a BlueFlame register with another
 * thread's (torn WQEs on a NIC). */
static ucs_status_t strand_iface_open_td(strand_iface_t *iface)
{
    int err = iface->dev->ops->create_td(iface->dev, &iface->td);

    if (err != 0) {
        ucs_error("%s: failed to allocate a thread domain (ibv_alloc_td: "
                  "%s): %s needs a BlueFlame register per interface",
                  iface->dev->info.name, strerror(err), iface->tl_name);
        return strand_errno_status(err);
    }
    iface->have_td = 1;
    return UCS_OK;
}

/* The send buffers, and the landing zone of non-fetching atomics. */
static ucs_status_t
strand_iface_open_tx_pool(strand_iface_t              *iface,
                          const strand_iface_config_t *config)
{
    uct_iface_mpool_config_t mp_config = config->common.tx_mp;
    ucs_status_t             status;

    if (mp_config.bufs_grow == 0) {
        mp_config.bufs_grow = 128;
    }
    status = uct_iface_mpool_init(&iface->super, &iface->tx_mp,
                                  sizeof(strand_tx_desc_t) +
                                          config->common.seg_size +
                                          STRAND_TX_SLACK,
                                  sizeof(strand_tx_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &mp_config,
                                  mp_config.bufs_grow, strand_tx_desc_init,
                                  "strand_tx");
    if (status != UCS_OK) {
        return status;
    }
    iface->have_tx_mp = 1;
    iface->scratch    = ucs_mpool_get(&iface->tx_mp);
    return (iface->scratch == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

/* How the send queues are made (the transport adds its own attributes:
 * a send queue's streams). */
static void strand_iface_sq_attr(strand_iface_t              *iface,
                                 const strand_iface_config_t *config,
                                 strand_dev_cq_t             *tx_cq)
{
    strand_dev_sq_attr_t *attr = &iface->sq_attr;

    memset(attr, 0, sizeof(*attr));
    attr->td            = &iface->td;
    attr->path          = iface->path;
    attr->send_cq       = tx_cq;
    attr->max_send_wr   = config->common.tx_queue_len;
    attr->max_send_sge  = iface->config.max_sge;
    attr->max_inline    = config->common.max_inline;
    attr->timeout       = strand_timeout_code(config->common.timeout);
    attr->retry_cnt     = config->common.retry_count;
    attr->rnr_retry     = config->common.rnr_retry_count;
    attr->max_rd_atomic = ucs_max(1,
                                  ucs_min(iface->dev->caps.max_rd_atomic, 16));
}

/* The shared interface of a transport (tl: its part, ops: its UCT
 * operations): the receive side, the send CQs and send queue slots,
 * endpoint operations and recovery. `config` is the transport's
 * configuration as the shared code reads it. */
UCS_CLASS_INIT_FUNC(strand_iface_t, uct_md_h uct_md, uct_worker_h worker,
                    const uct_iface_params_t    *params,
                    const uct_iface_config_t    *tl_config,
                    const strand_iface_config_t *config,
                    const strand_tl_ops_t *tl, uct_iface_ops_t *ops)
{
    strand_md_t     *md = ucs_derived_of(uct_md, strand_md_t);
    strand_dev_cq_t *tx_cq;
    ucs_status_t     status;

    status = strand_iface_check_params(md->dev, tl->names.tl, params);
    if (status != UCS_OK) {
        return status;
    }
    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops, &strand_iface_internal_ops,
                              uct_md, worker, params,
                              tl_config UCS_STATS_ARG(
                                      (params->field_mask &
                                       UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                              params->stats_root :
                                              NULL)
                                      UCS_STATS_ARG(tl->names.tl));

    /* UCS_CLASS_NEW hands out malloc'ed memory: every field below the
     * superclass starts at zero, so that the release path knows what
     * exists and counters start where the device starts */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));
    self->md         = md;
    self->dev        = md->dev;
    self->tl         = tl;
    self->tl_name    = tl->names.tl;
    self->cfg_prefix = tl->names.cfg_prefix;
    ucs_arbiter_init(&self->arbiter);
    ucs_list_head_init(&self->eps);

    status = strand_iface_configure(self, config, params);
    if (status != UCS_OK) {
        return status;
    }
    status = UCS_STATS_NODE_ALLOC(&self->stats, tl->iface_stats,
                                  self->super.stats, "-%p", self);
    if (status != UCS_OK) {
        return status;
    }
    status = strand_iface_open_cqs(self, config, &tx_cq);
    if (status == UCS_OK) {
        status = strand_iface_open_td(self);
    }
    if (status == UCS_OK) {
        status = strand_tag_create_srq(self, config, params);
    }
    if (status == UCS_OK) {
        status = strand_rx_init(self, params);
    }
    if (status == UCS_OK) {
        status = strand_iface_open_tx_pool(self, config);
    }
    if (status != UCS_OK) {
        goto err;
    }
    strand_iface_sq_attr(self, config, tx_cq);
    status = strand_txq_pool_init(self);
    if (status == UCS_OK) {
        status = strand_iface_integrity_init(self, config);
    }
    if (status == UCS_OK) {
        status = strand_fc_init(self, config->fc_enable, config->fc_wnd_size,
                                config->fc_soft_thresh,
                                strand_fc_req_timeout(config));
    }
    if (status != UCS_OK) {
        goto err;
    }
    self->have_fc = 1;

    ucs_debug("%s: %s iface %p: lid %u, %u %s, seg %zu", self->dev->info.name,
              tl->names.tl, self, self->dev->caps.lid, self->num_txqs,
              tl->names.sqs, self->config.seg_size);
    return UCS_OK;

err:
    strand_iface_release(self);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(strand_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    strand_iface_release(self);
}

UCS_CLASS_DEFINE(strand_iface_t, uct_base_iface_t);

/* The device address both transports give: the port's (port_addr.h) */
static ucs_status_t
strand_iface_get_device_address(uct_iface_h tl_iface, uct_device_addr_t *addr)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    strand_port_addr_pack(iface, (strand_port_addr_t *)addr);
    return UCS_OK;
}

/* What both transports' endpoints and interfaces do alike; each transport
 * copies it and adds its own (dc/dc_iface.c, rc/rc_iface.c): endpoint
 * creation, close, query, interface addresses, the short entry points for its WQEs'
 * address part (strand_ep_short_ops) and the rendezvous. */
const uct_iface_ops_t strand_iface_ops = {
        .ep_am_short_iov          = strand_ep_am_short_iov,
        .ep_am_bcopy              = strand_ep_am_bcopy,
        .ep_am_zcopy              = strand_ep_am_zcopy,
        .ep_put_bcopy             = strand_ep_put_bcopy,
        .ep_put_zcopy             = strand_ep_put_zcopy,
        .ep_get_bcopy             = strand_ep_get_bcopy,
        .ep_get_zcopy             = strand_ep_get_zcopy,
        .ep_atomic_cswap64        = strand_ep_atomic_cswap64,
        .ep_atomic_cswap32        = strand_ep_atomic_cswap32,
        .ep_atomic64_post         = strand_ep_atomic64_post,
        .ep_atomic32_post         = strand_ep_atomic32_post,
        .ep_atomic64_fetch        = strand_ep_atomic64_fetch,
        .ep_atomic32_fetch        = strand_ep_atomic32_fetch,
        .ep_pending_add           = strand_ep_pending_add,
        .ep_pending_purge         = strand_ep_pending_purge,
        .ep_flush                 = strand_ep_flush,
        .ep_fence                 = strand_ep_fence,
        .ep_check                 = strand_ep_check,
        .iface_flush              = strand_iface_flush,
        .iface_fence              = strand_iface_fence,
        .iface_progress_enable    = uct_base_iface_progress_enable,
        .iface_progress_disable   = uct_base_iface_progress_disable,
        .iface_progress           = strand_iface_progress,
        .iface_event_fd_get       = strand_iface_event_fd_get,
        .iface_event_arm          = strand_iface_event_arm,
        .iface_get_device_address = strand_iface_get_device_address,
        .ep_tag_eager_short       = strand_ep_tag_eager_short,
        .ep_tag_eager_bcopy       = strand_ep_tag_eager_bcopy,
        .ep_tag_eager_zcopy       = strand_ep_tag_eager_zcopy,
        .ep_tag_rndv_cancel       = strand_ep_tag_rndv_cancel,
        .ep_tag_rndv_request      = strand_ep_tag_rndv_request,
        .iface_tag_recv_zcopy     = strand_iface_tag_recv_zcopy,
        .iface_tag_recv_cancel    = strand_iface_tag_recv_cancel};
