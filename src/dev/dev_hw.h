/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals of the `hw` device backend shared by its files (rdma-core).
 */
#ifndef STRAND_DEV_HW_H_
#define STRAND_DEV_HW_H_

#include "dev.h"

#include <pthread.h>

#define DEV_HW_PORT 1

/* The configuration QP: an RC QP of the device layer, connected to itself,
 * on which mkey_configure posts its UMR WQEs (mlx5dv_wr_mkey_configure) and
 * polls their completion in its own (verbs-polled) CQ. Created on first
 * use, destroyed and created again after an error or a lost completion. */
typedef struct dev_hw_cfg_qp {
    pthread_mutex_t      lock; /* callers may configure from any thread */
    struct ibv_cq       *cq;
    struct ibv_qp       *qp; /* NULL: not created (yet, or any more) */
    struct ibv_qp_ex    *qpx;
    struct mlx5dv_qp_ex *mqpx;
    uint32_t             max_inline; /* what rdma-core gave: bounds a layout */
    uint64_t             seq;        /* wr_id of the last configuration */
} dev_hw_cfg_qp_t;

typedef struct dev_hw {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    int                 devx; /* opened with DEVX: PRM queries work */
    strand_dev_perf_t   perf; /* from the port, at open */
    dev_hw_cfg_qp_t     cfg;  /* mkey configuration QP */
} dev_hw_t;

/* Fill dev->caps from the device: verbs, mlx5dv, the port, its GID table,
 * atomic capabilities (DEVX when the context has it, else the conservative
 * verbs view) and the inline size a DCI really gets. 0 or errno. */
int strand_dev_hw_query_caps(strand_dev_t *dev);

/* PCI address, NUMA node and close CPUs (hwloc, else sysfs). */
void strand_dev_hw_locality(const strand_dev_info_t *info,
                            strand_dev_locality_t   *loc);

#endif
