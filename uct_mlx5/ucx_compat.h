/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the UCX versions strand builds against (1.13 to
 * 1.22), in one place. configure.ac tests UCX's internal API itself (a
 * member, a type, a function's signature; never the version number) and
 * defines HAVE_*; this header turns each answer into one name the transport
 * uses on every version, and ucx_compat.c holds the adapters whose
 * signature follows UCX's. docs/ucx-versions.md lists every difference and
 * why it matters.
 */
#ifndef STRAND_UCX_COMPAT_H_
#define STRAND_UCX_COMPAT_H_

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
#include <ucs/memory/rcache.h>
#include <ucs/config/parser.h>

#include <stdio.h>

/* ----------------------------------------------- registration cache */

/* 1.13: the MD layer's rcache options ("RCACHE_" + its table's names);
 * later: ucs's own table, whose names carry the "RCACHE_" themselves, and
 * no lookup-overhead helper (UCP estimates it) */
#ifdef HAVE_UCT_MD_RCACHE_CONFIG_T
typedef uct_md_rcache_config_t strand_rcache_config_t;
#define STRAND_RCACHE_CONFIG_PREFIX "RCACHE_"
#define STRAND_RCACHE_CONFIG_TABLE  uct_md_config_rcache_table
#else
typedef ucs_rcache_config_t strand_rcache_config_t;
#define STRAND_RCACHE_CONFIG_PREFIX ""
#define STRAND_RCACHE_CONFIG_TABLE  ucs_config_rcache_table
#endif

/* later versions tell the MD when a new region swallows an old one: an
 * MD whose regions carry nothing but their registration has nothing to do
 * (the entry must be set: UCX calls it unchecked) */
#ifdef HAVE_UCS_RCACHE_OPS_T_MERGE
#define STRAND_RCACHE_OPS_MERGE                        \
    .merge = (void (*)(void *, ucs_rcache_t *, void *, \
                       ucs_rcache_region_t *))(        \
            void (*)(void))ucs_empty_function,
#else
#define STRAND_RCACHE_OPS_MERGE
#endif

/* rcache parameters from the configuration; page-aligned regions at most */
void strand_rcache_params(ucs_rcache_params_t          *params,
                          const strand_rcache_config_t *config);

/* seconds a lookup costs, as the configuration says ("auto": 180 ns) */
double strand_rcache_overhead(const strand_rcache_config_t *config);

/* ucs_rcache_get: later versions take the region's alignment */
ucs_status_t strand_rcache_get(ucs_rcache_t *rcache, void *address,
                               size_t length, int prot, void *arg,
                               ucs_rcache_region_t **region_p);

/* an entry that answers UNSUPPORTED, whatever the entry's signature (the
 * cast through a plain function pointer says the mismatch is meant) */
#define STRAND_UCX_UNSUPPORTED(_func_type) \
    ((_func_type)(void (*)(void))ucs_empty_function_return_unsupported)

/* ------------------------------------------------ configuration, topo */

/* fills opts from table with the variables UCX_<table_prefix><NAME>
 * (1.13 takes the table, later versions a list entry naming it) */
ucs_status_t strand_config_fill_opts(void *opts, ucs_config_field_t *table,
                                     size_t size, const char *table_prefix,
                                     int ignore_errors);

/* uct_config_modify of the option NAME of a table read with prefix
 * table_prefix ("DC_STRAND_"): 1.13 names the table's own options without
 * the prefix, later versions with it (options of embedded tables either
 * way); both are tried, in that order */
static inline ucs_status_t
strand_config_modify(void *config, const char *table_prefix, const char *name,
                     const char *value)
{
    char         full[128];
    ucs_status_t status;

    status = uct_config_modify(config, name, value);
    if (status != UCS_ERR_NO_ELEM) {
        return status;
    }
    snprintf(full, sizeof(full), "%s%s", table_prefix, name);
    return uct_config_modify(config, full, value);
}

/* gives a system device a name (later versions rank names by priority) */
void strand_topo_set_device_name(ucs_sys_device_t sys_dev, const char *name);

/* the memory pool options of an interface (later versions add a chunk
 * size and a growth factor: UCX's defaults for them) */
#ifdef HAVE_UCT_IFACE_MPOOL_CONFIG_T_MAX_CHUNK_SIZE
#define STRAND_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, _name, _offset, \
                                         _desc)                                \
    UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, inf, 1.0, _name,       \
                                  _offset, _desc)
#else
#define STRAND_IFACE_MPOOL_CONFIG_FIELDS UCT_IFACE_MPOOL_CONFIG_FIELDS
#endif

/* uct_md_mem_alloc of host memory near no device in particular (later
 * versions name the device) */
#ifdef HAVE_UCT_MD_MEM_ALLOC_SYS_DEV
#define STRAND_MD_MEM_ALLOC_HOST(_md, _length_p, _address_p, _flags, _name, \
                                 _memh_p)                                   \
    uct_md_mem_alloc(_md, _length_p, _address_p, UCS_MEMORY_TYPE_HOST,      \
                     UCS_SYS_DEVICE_ID_UNKNOWN, _flags, _name, _memh_p)
#else
#define STRAND_MD_MEM_ALLOC_HOST(_md, _length_p, _address_p, _flags, _name,    \
                                 _memh_p)                                      \
    uct_md_mem_alloc(_md, _length_p, _address_p, UCS_MEMORY_TYPE_HOST, _flags, \
                     _name, _memh_p)
#endif

/* a transport that reaches other nodes says so (UCX >= 1.18: UCP tells
 * intra- from inter-node endpoints by it, and packs only such transports
 * into a worker address meant for the network) */
#ifdef UCT_IFACE_FLAG_INTER_NODE
#define STRAND_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#define STRAND_IFACE_FLAG_INTER_NODE 0
#endif
/* how both transports connect: to a peer interface, on any node */
#define STRAND_IFACE_FLAGS_CONNECT \
    (UCT_IFACE_FLAG_CONNECT_TO_IFACE | STRAND_IFACE_FLAG_INTER_NODE)

/* the least power of two >= n (UCX 1.13's ucs_roundup_pow2, gone later) */
static inline size_t strand_roundup_pow2(size_t n)
{
    size_t p = 1;

    while (p < n) {
        p <<= 1;
    }
    return p;
}

/* uct_ep_check's arguments: no flags; a completion where UCX's API allows
 * one (1.22: UCX's own check takes only the flags) */
#ifdef HAVE_UCT_EP_CHECK_COMPLETION
#define STRAND_EP_CHECK_PARAMS(_flags, _comp) \
    UCT_CHECK_PARAM((_flags) == 0, "Unsupported flags: %x", (_flags))
#else
#define STRAND_EP_CHECK_PARAMS(_flags, _comp)                               \
    UCT_CHECK_PARAM((_comp) == NULL, "Unsupported completion on ep_check"); \
    UCT_CHECK_PARAM((_flags) == 0, "Unsupported flags: %x", (_flags))
#endif

/* -------------------------------------------- the interface's tables */

/* What the transport implements once, in a signature of no particular
 * version (common/ep_ops.c), handed to the table's builder: the adapters
 * here call them, and this file calls nothing of the transport's own. */
typedef struct strand_compat_ep_funcs {
    ucs_status_t (*invalidate)(uct_ep_h ep);
    /* is ep's peer the interface at dev_addr and iface_addr? */
    int (*is_connected)(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                        const uct_iface_addr_t *iface_addr);
} strand_compat_ep_funcs_t;

/* UCX's internal operations table: every entry this UCX has is set (what
 * strand does not do answers UNSUPPORTED; v2 reachability through the
 * interface's uct_iface_ops_t iface_is_reachable) */
void strand_compat_internal_ops(uct_iface_internal_ops_t       *internal,
                                uct_iface_estimate_perf_func_t  estimate_perf,
                                uct_iface_vfs_refresh_func_t    vfs_refresh,
                                const strand_compat_ep_funcs_t *ep_funcs);

/* -------------------------------------------------- the memory domain */

/* What the MD says of itself, whichever attribute struct UCX asks with. */
typedef struct strand_md_caps {
    uint64_t          flags; /* UCT_MD_FLAG_* */
    size_t            max_alloc;
    size_t            max_reg;
    uint64_t          reg_mem_types;
    uint64_t          access_mem_types;
    size_t            rkey_packed_size;
    ucs_linear_func_t reg_cost;
    ucs_cpu_set_t     local_cpus;
} strand_md_caps_t;

/* What the MD implements once (strand_md.c), handed to the table's
 * builder as the transport's endpoint functions are. */
typedef struct strand_compat_md_funcs {
    void (*query_caps)(uct_md_h md, strand_md_caps_t *caps);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p);
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh,
                              const uct_md_mkey_pack_params_t *params,
                              void                            *rkey_buffer);
    uct_md_close_func_t     close;
    uct_md_mem_dereg_func_t mem_dereg;
} strand_compat_md_funcs_t;

/* UCX's MD operations table: close and dereg as given, the rest through
 * the adapters, every entry this UCX has set */
void strand_compat_md_ops(uct_md_ops_t                   *md_ops,
                          const strand_compat_md_funcs_t *funcs);

/* the component's rkey entries: unpack through its adapter (compare
 * where UCX has it) */
typedef ucs_status_t (*strand_compat_rkey_unpack_func_t)(
        uct_component_t *component, const void *rkey_buffer, uct_rkey_t *rkey_p,
        void **handle_p);
void strand_compat_component_rkey_ops(uct_component_t *component,
                                      strand_compat_rkey_unpack_func_t unpack);

#endif
