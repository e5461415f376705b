/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Statistics of both transports: UCS statistics counters, built in only when UCX
 * is built with statistics (ENABLE_STATS); otherwise every update below is
 * compiled out and costs nothing. Each endpoint also counts its operations
 * in UCX's own uct_ep counters (UCT_TL_EP_STAT_OP and friends, bytes per
 * AM / PUT / GET, atomics, flushes, fences, pending requests), as UCX's
 * transports do; these are what strand adds.
 */
#ifndef STRAND_STATS_H_
#define STRAND_STATS_H_

#include <ucs/stats/stats.h>

/* per interface */
enum {
    STRAND_IFACE_STAT_TX_CQE,       /* send CQEs consumed */
    STRAND_IFACE_STAT_TX_CQE_ERROR, /* of those, errors and flushes */
    STRAND_IFACE_STAT_TX_TAIL_NOP,  /* signaled NOPs behind unsignaled
                                       WQEs (flush, send queue wanted) */
    STRAND_IFACE_STAT_RX_CQE,       /* receive CQEs consumed */
    STRAND_IFACE_STAT_REPOST,       /* flushed WQEs posted again */
    STRAND_IFACE_STAT_STREAM_RESET, /* send queue streams reset after errors */
    STRAND_IFACE_STAT_TXQ_RESET,    /* send queues back from ERR */
    STRAND_IFACE_STAT_LAST
};

/* per endpoint */
enum {
    STRAND_EP_STAT_FC_WAIT,  /* refused: no flow-control credits */
    STRAND_EP_STAT_TXQ_WAIT, /* refused: no send queue, or no room on it */
    STRAND_EP_STAT_ERROR,    /* failed (once) */
    STRAND_EP_STAT_LAST
};

/* The classes of a transport _tl ("dc_strand") whose send queues are
 * called _sq ("dci") in UCX's statistics tree: each transport defines
 * its own pair (its tl ops point at them), so that an rc_strand
 * interface is not shown as a dc_strand one. */
#ifdef ENABLE_STATS
#define STRAND_STATS_CLASSES_DEFINE(_iface_class, _ep_class, _tl, _sq) \
    static ucs_stats_class_t _iface_class = {                          \
            .name          = _tl "_iface",                             \
            .num_counters  = STRAND_IFACE_STAT_LAST,                   \
            .class_id      = UCS_STATS_CLASS_ID_INVALID,               \
            .counter_names = {                                         \
                    [STRAND_IFACE_STAT_TX_CQE]       = "tx_cqe",       \
                    [STRAND_IFACE_STAT_TX_CQE_ERROR] = "tx_cqe_error", \
                    [STRAND_IFACE_STAT_TX_TAIL_NOP]  = "tx_tail_nop",  \
                    [STRAND_IFACE_STAT_RX_CQE]       = "rx_cqe",       \
                    [STRAND_IFACE_STAT_REPOST]       = "repost",       \
                    [STRAND_IFACE_STAT_STREAM_RESET] = "stream_reset", \
                    [STRAND_IFACE_STAT_TXQ_RESET]    = _sq "_reset"}};    \
    static ucs_stats_class_t _ep_class = {                             \
            .name          = _tl "_ep",                                \
            .num_counters  = STRAND_EP_STAT_LAST,                      \
            .class_id      = UCS_STATS_CLASS_ID_INVALID,               \
            .counter_names = {[STRAND_EP_STAT_FC_WAIT]  = "fc_wait",   \
                              [STRAND_EP_STAT_TXQ_WAIT] = _sq "_wait", \
                              [STRAND_EP_STAT_ERROR]    = "error"}}
#define STRAND_STATS_CLASS_PTR(_class) (&(_class))
#else
#define STRAND_STATS_CLASSES_DEFINE(_iface_class, _ep_class, _tl, _sq) \
    typedef int _iface_class##_unused_t
#define STRAND_STATS_CLASS_PTR(_class) NULL
#endif

#define STRAND_IFACE_STAT(_iface, _counter, _delta)                         \
    UCS_STATS_UPDATE_COUNTER((_iface)->stats, STRAND_IFACE_STAT_##_counter, \
                             _delta)

#define STRAND_EP_STAT(_ep, _counter) \
    UCS_STATS_UPDATE_COUNTER((_ep)->stats, STRAND_EP_STAT_##_counter, 1)

#endif
