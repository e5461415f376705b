/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand: the RC transport of the strand component. An endpoint has an
 * RC queue pair of its own, which the transport connects to a QP of the
 * peer interface (UCT_IFACE_FLAG_CONNECT_TO_IFACE: uct_ep_create with the
 * peer's device and interface addresses; rc_cm.h says how); receives land
 * on the interface's shared receive queue.
 *
 * The data path is the shared one (uct_mlx5/common): the same WQE
 * building, send queue tracking, completions, receive ring, recovery and
 * integrity checks; an endpoint's QP is a send queue of its own for good
 * (rc_qp.h), its WQEs without address vector. What is RC's alone is here:
 * configuration, its QPs, addresses and connection (rc_cm.h), and the
 * rendezvous of tag matching, which the transport reads itself on the
 * responder QPs, its FIN pipelined behind the READ (rc_rndv.h). This
 * header has its types; rc_iface.h the interface's class and tables.
 */
#ifndef STRAND_RC_H_
#define STRAND_RC_H_

#include "uct_mlx5/common/iface.h"
#include "uct_mlx5/common/ep.h"

#include <ucs/datastruct/list.h>
#include <ucs/type/spinlock.h>

#define STRAND_RC_TL_NAME       "rc_strand"
#define STRAND_RC_CONFIG_PREFIX "RC_STRAND_"
#define STRAND_RC_MAX_EPS \
    65535                        /* RC QPs of an interface
                                    (STRAND_TXQ_NONE: none) */
#define STRAND_RC_EPS_PER_CQ 256 /* RC QPs sharing a send CQ */

/* The interface: the shared one (its transport's part rc_qp.c), the
 * connection manager and, with tag matching, the rendezvous it reads on
 * the manager's responder QPs (their send CQEs come on its first send
 * CQ). */
typedef struct strand_rc_iface {
    strand_iface_t         super;
    struct strand_rc_cm   *cm;
    struct strand_rc_rndv *rndv;
    /* while an endpoint waits for its connection (rc_locked.h) */
    uct_iface_ops_t          direct_ops;  /* the operations, without lock */
    ucs_recursive_spinlock_t post_lock;   /* the worker's while it posts,
                                             the async thread's while it
                                             rings held doorbells */
    uint8_t                  locked_ops;  /* the locked operations are
                                             installed */
    uint8_t                  in_progress; /* progress runs without the
                                             lock now */
    uint8_t                  adopted;     /* ... and holds it from an
                                             endpoint made meanwhile on */
    int                      rep_waiting; /* answers the async thread
                                             left to the worker */
    ucs_list_link_t          retiring;    /* responder QPs leaving
                                             through ERR (rc_retire.h) */
} strand_rc_iface_t;

/* An endpoint: the shared one, its connection (rc_cm.c) */
typedef struct strand_rc_ep {
    strand_ep_t            super;
    struct strand_rc_conn *conn;
} strand_rc_ep_t;

static inline strand_rc_iface_t *strand_rc_iface(strand_iface_t *iface)
{
    return ucs_derived_of(iface, strand_rc_iface_t);
}

static inline strand_rc_ep_t *strand_rc_ep(strand_ep_t *ep)
{
    return ucs_derived_of(ep, strand_rc_ep_t);
}

typedef struct strand_rc_iface_config {
    uct_iface_config_t           super;
    strand_iface_common_config_t common; /* the options dc_strand has too */
    unsigned                     max_eps;
    int                          integrity_pipeline; /* ternary */
} strand_rc_iface_config_t;

#endif
