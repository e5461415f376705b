/*
 * rc_strand: the RC transport of the strand component. An endpoint has an
 * RC queue pair of its own, which the transport connects to a QP of the
 * peer interface (UCT_IFACE_FLAG_CONNECT_TO_IFACE: uct_ep_create with the
 * peer's device and interface addresses; rc_cm.h says how); receives land
 * on the interface's shared receive queue.
 *
 * The data path is dc_strand's, not a copy: the same WQE building, send
 * queue tracking, completions, receive ring, recovery and integrity
 * checks, the QP of an endpoint held in a DCI slot as a DCI it never gives
 * back, its WQEs without address vector. What is RC's alone is here:
 * configuration, addresses and connection (rc_cm.h), and the rendezvous of
 * tag matching, which the transport reads itself on the responder QPs, its
 * FIN pipelined behind the READ (rc_rndv.h).
 */
#ifndef STRAND_RC_IFACE_H_
#define STRAND_RC_IFACE_H_

#include "uct_mlx5/dc/dc_iface.h"

typedef struct strand_rc_iface_config {
    uct_iface_config_t super;
    unsigned           tx_queue_len;
    unsigned           tx_cq_moderation;
    unsigned           rx_queue_len;
    unsigned long      rx_max_poll;
    unsigned long      tx_max_poll;
    uct_iface_mpool_config_t tx_mp;     /* TX_MAX_BUFS, TX_BUFS_GROW */
    uct_iface_mpool_config_t rx_mp;     /* RX_MAX_BUFS, RX_BUFS_GROW */
    size_t             seg_size;
    unsigned           max_eps;
    double             timeout;
    unsigned           retry_count;
    double             rnr_timeout;
    unsigned           rnr_retry_count;
    size_t             max_inline;
    unsigned           tx_cq_len;
    unsigned           rx_cq_len;
    int                integrity;       /* strand_integrity_kind_t */
    unsigned           integrity_retries;
    size_t             integrity_read_size;
    int                integrity_pipeline; /* ucs_ternary_auto_value_t */
    int                tm_enable;          /* ucs_ternary_auto_value_t */
    unsigned           tm_list_size;
    unsigned           tm_rndv_ops;
} strand_rc_iface_config_t;

extern uct_tl_t uct_rc_strand_tl;

#endif
