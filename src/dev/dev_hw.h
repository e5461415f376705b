/*
 * Internals of the `hw` device backend shared by its files (rdma-core).
 */
#ifndef STRAND_DEV_HW_H_
#define STRAND_DEV_HW_H_

#include "dev.h"

#define DEV_HW_PORT 1

typedef struct dev_hw {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    int                 devx;     /* opened with DEVX: PRM queries work */
    strand_dev_perf_t   perf;     /* from the port, at open */
} dev_hw_t;

/* Fill dev->caps from the device: verbs, mlx5dv, the port, its GID table,
 * atomic capabilities (DEVX when the context has it, else the conservative
 * verbs view) and the inline size a DCI really gets. 0 or errno. */
int  strand_dev_hw_query_caps(strand_dev_t *dev);

/* PCI address, NUMA node and close CPUs (hwloc, else sysfs). */
void strand_dev_hw_locality(const strand_dev_info_t *info,
                            strand_dev_locality_t *loc);

#endif
