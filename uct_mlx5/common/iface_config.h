/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The options both transports have (UCX_DC_STRAND_* and UCX_RC_STRAND_*):
 * defined once here, embedded in each transport's table (UCX's
 * UCS_CONFIG_TYPE_TABLE with an empty prefix, so the names stay the
 * transport's); a transport changes a default in the default string of
 * that entry.
 */
#ifndef STRAND_COMMON_IFACE_CONFIG_H_
#define STRAND_COMMON_IFACE_CONFIG_H_

#include <uct/base/uct_iface.h>
#include <ucs/config/parser.h>

typedef struct strand_iface_common_config {
    unsigned                 tx_queue_len;
    unsigned                 tx_cq_moderation;
    unsigned                 rx_queue_len;
    unsigned long            rx_max_poll;
    unsigned long            tx_max_poll;
    uct_iface_mpool_config_t tx_mp; /* TX_MAX_BUFS, TX_BUFS_GROW */
    uct_iface_mpool_config_t rx_mp; /* RX_MAX_BUFS, RX_BUFS_GROW */
    size_t                   seg_size;
    double                   timeout;
    unsigned                 retry_count;
    double                   rnr_timeout;
    unsigned                 rnr_retry_count;
    unsigned long            traffic_class; /* UCS_ULUNITS_AUTO: the port's */
    unsigned long            sl;            /* UCS_ULUNITS_AUTO: 0 */
    size_t                   max_inline;
    unsigned                 tx_cq_len;
    unsigned                 rx_cq_len;
    int                      rx_inline;
    int                      tm_enable; /* ucs_ternary_auto_value_t */
    unsigned                 tm_list_size;
    unsigned                 tm_rndv_ops;
    int                      integrity; /* strand_integrity_kind_t */
    unsigned                 integrity_retries;
    size_t                   integrity_read_size;
} strand_iface_common_config_t;

extern ucs_config_field_t strand_iface_common_config_table[];

#endif
