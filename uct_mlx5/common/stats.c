/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters of an interface and an endpoint (stats.h): UCX's statistics
 * tree shows them by these names where UCX is built with statistics.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "stats.h"

#ifdef ENABLE_STATS
ucs_stats_class_t strand_iface_stats_class = {
        .name          = "dc_strand_iface",
        .num_counters  = STRAND_IFACE_STAT_LAST,
        .class_id      = UCS_STATS_CLASS_ID_INVALID,
        .counter_names = {[STRAND_IFACE_STAT_TX_CQE]       = "tx_cqe",
                          [STRAND_IFACE_STAT_TX_CQE_ERROR] = "tx_cqe_error",
                          [STRAND_IFACE_STAT_TX_TAIL_NOP]  = "tx_tail_nop",
                          [STRAND_IFACE_STAT_RX_CQE]       = "rx_cqe",
                          [STRAND_IFACE_STAT_REPOST]       = "repost",
                          [STRAND_IFACE_STAT_STREAM_RESET] = "stream_reset",
                          [STRAND_IFACE_STAT_TXQ_RESET]    = "dci_reset"}};

ucs_stats_class_t strand_ep_stats_class = {
        .name          = "dc_strand_ep",
        .num_counters  = STRAND_EP_STAT_LAST,
        .class_id      = UCS_STATS_CLASS_ID_INVALID,
        .counter_names = {[STRAND_EP_STAT_FC_WAIT]  = "fc_wait",
                          [STRAND_EP_STAT_TXQ_WAIT] = "dci_wait",
                          [STRAND_EP_STAT_ERROR]    = "error"}};
#endif
