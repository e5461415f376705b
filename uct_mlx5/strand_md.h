/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strand memory domain: one per (hardware or software) mlx5 device.
 * Registers memory through the device layer, with UCX's registration cache
 * in front, and packs remote keys for DC peers.
 */
#ifndef STRAND_MD_H_
#define STRAND_MD_H_

#include "dev/dev.h"
#include "strand_async.h"

#include <ucs/memory/rcache.h>
#include <uct/base/uct_md.h>
#include "ucx_compat.h"

#include "mlx5/sq.h"
#include "uct_mlx5/strand_sig.h"

#include <pthread.h>

#define STRAND_COMPONENT_NAME "strand"

/* Which device backend the MD opens (UCX_STRAND_DEVICE_TYPE). */
typedef enum strand_dev_type {
    STRAND_DEV_TYPE_AUTO, /* hardware mlx5 when present, else software */
    STRAND_DEV_TYPE_HW,
    STRAND_DEV_TYPE_SIM,
    STRAND_DEV_TYPE_LAST
} strand_dev_type_t;

typedef struct strand_md_config {
    uct_md_config_t          super;
    strand_dev_type_t        dev_type;
    ucs_ternary_auto_value_t rcache_enable;
    strand_rcache_config_t   rcache;
    double                   reg_cost_overhead; /* seconds */
    double                   reg_cost_growth;   /* seconds per byte */
    int                      mmio_mode;         /* strand_mmio_mode_t */
    ucs_ternary_auto_value_t fork_init;
} strand_md_config_t;

/* A registration: the device's keys; with integrity, the mkey that signs
 * what peers read of it (made when its key is first packed). In the cache
 * it follows the region. */
typedef struct strand_md_memh {
    strand_dev_mr_t   mr;
    uint64_t          addr;
    uint64_t          length;
    strand_dev_mkey_t sig;
    int               have_sig;
} strand_md_memh_t;

typedef struct strand_md_rcache_region {
    ucs_rcache_region_t super;
    strand_md_memh_t    memh;
} strand_md_rcache_region_t;

/* The packed remote key: what a peer needs to reach registered memory; 64
 * bits as UCX's ib MD packs them (the key for RDMA, the key for atomics:
 * the same MR here). */
typedef struct strand_md_packed_rkey {
    uint32_t rkey;
    uint32_t atomic_rkey;
} UCS_S_PACKED strand_md_packed_rkey_t;

/* With integrity (a transport's INTEGRITY option set) the packed key goes
 * on with the signing mkey of the registration: rkey_packed_size grows
 * from 8 to 32 bytes. */
typedef struct strand_md_packed_rkey_sig {
    strand_md_packed_rkey_t plain;
    uint32_t                sig_rkey; /* 0: the registration is not signed */
    uint8_t                 kind;     /* strand_integrity_kind_t */
    uint8_t                 reserved[3];
    uint64_t                base; /* the registration the signing mkey covers */
    uint64_t                length;
} UCS_S_PACKED strand_md_packed_rkey_sig_t;

typedef struct strand_md {
    uct_md_t          super;
    strand_dev_t     *dev;
    ucs_rcache_t     *rcache; /* NULL: register every time */
    ucs_linear_func_t reg_cost;
    ucs_cpu_set_t     local_cpus;
    strand_async_t    async;     /* the device's async events */
    uint8_t           mmio_mode; /* how every send queue of the MD
                                    rings (strand_mmio_mode_t,
                                    resolved for the device) */
    /* what the transports' INTEGRITY options ask for: remote keys carry
     * a signing mkey of this kind */
    strand_integrity_kind_t integrity;
    pthread_mutex_t         sig_lock; /* signing mkeys made at pack time */
} strand_md_t;

/* A packed remote key (len bytes of it at hand) read without unpacking:
 * the plain key, and 1 with the signing mkey behind it (0: none). */
int strand_md_rkey_parse(const void *rkey_buffer, size_t len,
                         strand_rkey_sig_t *rk);
/* the bytes mkey_pack writes for the MD's keys */
static inline size_t strand_md_rkey_packed_size(const strand_md_t *md)
{
    return (md->integrity != STRAND_INTEGRITY_OFF) ?
                   sizeof(strand_md_packed_rkey_sig_t) :
                   sizeof(strand_md_packed_rkey_t);
}

extern uct_component_t    strand_component;
extern ucs_config_field_t strand_md_config_table[];

/* Devices this configuration selects (UCX_STRAND_DEVICE_TYPE): auto =
 * hardware when there is any, else the software device. */
int strand_md_select_devices(strand_dev_type_t type, strand_dev_info_t *out,
                             int max);

#endif
