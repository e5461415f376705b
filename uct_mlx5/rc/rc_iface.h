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
    uct_iface_config_t           super;
    strand_iface_common_config_t common; /* the options dc_strand has too */
    unsigned                     max_eps;
    int                          integrity_pipeline; /* ternary */
} strand_rc_iface_config_t;

extern uct_tl_t uct_rc_strand_tl;

#endif
