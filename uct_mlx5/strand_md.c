/* SPDX-License-Identifier: BSD-3-Clause */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_md.h"

#include <inttypes.h>
#include <ucm/api/ucm.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STRAND_MD_MAX_DEVICES 16

static const char *strand_dev_type_names[] = {[STRAND_DEV_TYPE_AUTO] = "auto",
                                              [STRAND_DEV_TYPE_HW]   = "hw",
                                              [STRAND_DEV_TYPE_SIM]  = "sim",
                                              [STRAND_DEV_TYPE_LAST] = NULL};

static const char *strand_mmio_mode_names[] = {[STRAND_MMIO_MODE_DB] = "db",
                                               [STRAND_MMIO_MODE_BF_POST] =
                                                       "bf_post",
                                               [STRAND_MMIO_MODE_AUTO] = "auto",
                                               [STRAND_MMIO_MODE_LAST] = NULL};

ucs_config_field_t strand_md_config_table[] = {
        {"", "", NULL, ucs_offsetof(strand_md_config_t, super),
         UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

        {"DEVICE_TYPE", "auto",
         "Which mlx5 devices strand opens:\n"
         " auto - hardware mlx5 devices when present, else the software "
         "device\n"
         " hw   - only hardware mlx5 devices (rdma-core libibverbs + mlx5dv)\n"
         " sim  - only the software mlx5 device (no NIC needed)",
         ucs_offsetof(strand_md_config_t, dev_type),
         UCS_CONFIG_TYPE_ENUM(strand_dev_type_names)},

        {"RCACHE", "try",
         "Put UCX's memory registration cache in front of the device: "
         "yes, no, or try (use it when it can be created).",
         ucs_offsetof(strand_md_config_t, rcache_enable),
         UCS_CONFIG_TYPE_TERNARY},

        {STRAND_RCACHE_CONFIG_PREFIX, "", NULL,
         ucs_offsetof(strand_md_config_t, rcache),
         UCS_CONFIG_TYPE_TABLE(STRAND_RCACHE_CONFIG_TABLE)},

        {"REG_COST_OVERHEAD", "16us",
         "Estimated fixed cost of a memory registration (used by UCP to choose "
         "between copy and zero-copy protocols).",
         ucs_offsetof(strand_md_config_t, reg_cost_overhead),
         UCS_CONFIG_TYPE_TIME},

        {"REG_COST_GROWTH", "0.06ns",
         "Estimated memory registration cost per byte.",
         ucs_offsetof(strand_md_config_t, reg_cost_growth),
         UCS_CONFIG_TYPE_TIME},

        {"FORK_INIT", "try",
         "Protect registered memory across fork() with ibv_fork_init() before "
         "the first registration (as UCX's UCX_IB_FORK_INIT): yes (failing is "
         "an error), no, or try (a failure is logged and fork() may then be "
         "unsafe). Before Linux 5.13 a fork after registration makes "
         "registered "
         "pages copy-on-write: the NIC reads and writes pages the parent no "
         "longer has. The software device needs none: nothing the kernel pins.",
         ucs_offsetof(strand_md_config_t, fork_init), UCS_CONFIG_TYPE_TERNARY},

        {"MMIO_MODE", "auto",
         "How a send queue's doorbell reaches the device (as UCX's "
         "UCX_IB_MLX5_MMIO_MODE):\n"
         " bf_post - the last WQE posted is copied to the BlueFlame buffer "
         "when "
         "it fits (the NIC takes it without reading host memory)\n"
         " db      - 8 bytes of its ctrl segment are written to the doorbell "
         "register (the NIC then reads the WQEs)\n"
         " auto    - bf_post on a NIC with a BlueFlame register, db on the "
         "software device (which reads the queue in any case)",
         ucs_offsetof(strand_md_config_t, mmio_mode),
         UCS_CONFIG_TYPE_ENUM(strand_mmio_mode_names)},

        {NULL}};

/* ----------------------------------------------------------- devices */

int strand_md_select_devices(strand_dev_type_t type, strand_dev_info_t *out,
                             int max)
{
    const unsigned hw  = 1u << STRAND_DEV_KIND_HW;
    const unsigned sim = 1u << STRAND_DEV_KIND_SIM;
    int            n;

    switch (type) {
    case STRAND_DEV_TYPE_HW:
        return strand_dev_list(hw, out, max);
    case STRAND_DEV_TYPE_SIM:
        return strand_dev_list(sim, out, max);
    default:
        n = strand_dev_list(hw, out, max);
        return (n > 0) ? n : strand_dev_list(sim, out, max);
    }
}

/* The device type as configured (query_md_resources gets no config: read
 * it through UCX's parser, so that the environment, prefixes and config
 * files count as for every other option; a bad value is reported by
 * md_open). */
static strand_dev_type_t strand_md_config_dev_type(uct_component_t *component)
{
    strand_dev_type_t type = STRAND_DEV_TYPE_AUTO;
    uct_md_config_t  *config;

    if (uct_md_config_read(component, NULL, NULL, &config) == UCS_OK) {
        type = ucs_derived_of(config, strand_md_config_t)->dev_type;
        uct_config_release(config);
    }
    return type;
}

/* A user who asked for hardware and gets no device is told why (auto
 * falls back to the software device, sim never looks for hardware): else
 * ucx_info -d and UCP would just not list strand. Once per process: UCX
 * asks for the resources twice (their count, then the list). */
static pthread_once_t strand_md_no_hw_once = PTHREAD_ONCE_INIT;

static void strand_md_warn_no_hw(void)
{
    char why[256];

    strand_dev_hw_why_none(why, sizeof(why));
    ucs_warn("strand: UCX_STRAND_DEVICE_TYPE=hw, but no hardware mlx5 "
             "device: %s; sim (or auto) uses the software device smlx5_0",
             why);
}

static ucs_status_t
strand_md_query_resources(uct_component_t         *component,
                          uct_md_resource_desc_t **resources_p,
                          unsigned                *num_resources_p)
{
    strand_dev_type_t       type = strand_md_config_dev_type(component);
    strand_dev_info_t       infos[STRAND_MD_MAX_DEVICES];
    uct_md_resource_desc_t *res;
    int                     i, n;

    n = strand_md_select_devices(type, infos, STRAND_MD_MAX_DEVICES);
    if (n <= 0) {
        if (type == STRAND_DEV_TYPE_HW) {
            pthread_once(&strand_md_no_hw_once, strand_md_warn_no_hw);
        }
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }
    res = ucs_calloc(n, sizeof(*res), "strand_md_resources");
    if (res == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; ++i) {
        ucs_strncpy_zero(res[i].md_name, infos[i].name, sizeof(res[i].md_name));
    }
    *resources_p     = res;
    *num_resources_p = n;
    return UCS_OK;
}

/* -------------------------------------------------------- integrity */

/* The transports' INTEGRITY options (UCX_DC_STRAND_INTEGRITY,
 * UCX_RC_STRAND_INTEGRITY), read here through UCX's parser with their own
 * prefixes: the MD packs remote keys before any interface is open, and
 * their size (md_query) must say already whether they carry a signing
 * key. */
typedef struct strand_md_tl_integrity {
    int kind;
} strand_md_tl_integrity_t;

static ucs_config_field_t strand_md_tl_integrity_table[] = {
        {"INTEGRITY", "off", "(read by the MD; documented with the transport)",
         ucs_offsetof(strand_md_tl_integrity_t, kind),
         UCS_CONFIG_TYPE_ENUM(strand_integrity_kind_names)},
        {NULL}};

static ucs_status_t strand_md_read_integrity(strand_md_t *md)
{
    static const char       *prefixes[] = {"DC_STRAND_", "RC_STRAND_"};
    strand_md_tl_integrity_t opts;
    unsigned                 i;

    md->integrity = STRAND_INTEGRITY_OFF;
    for (i = 0; i < ucs_static_array_size(prefixes); ++i) {
        if (strand_config_fill_opts(&opts, strand_md_tl_integrity_table,
                                    sizeof(opts), prefixes[i], 1) != UCS_OK) {
            continue; /* a bad value: the transport's own parse says so */
        }
        ucs_config_parser_release_opts(&opts, strand_md_tl_integrity_table);
        if (opts.kind == STRAND_INTEGRITY_OFF) {
            continue;
        }
        if ((md->integrity != STRAND_INTEGRITY_OFF) &&
            (md->integrity != opts.kind)) {
            ucs_error("%s: UCX_DC_STRAND_INTEGRITY and "
                      "UCX_RC_STRAND_INTEGRITY ask for different signatures "
                      "(%s, %s)",
                      md->dev->info.name,
                      strand_integrity_kind_names[md->integrity],
                      strand_integrity_kind_names[opts.kind]);
            return UCS_ERR_INVALID_PARAM;
        }
        md->integrity = (strand_integrity_kind_t)opts.kind;
    }
    if ((md->integrity != STRAND_INTEGRITY_OFF) &&
        !strand_integrity_supported(&md->dev->caps, md->integrity)) {
        ucs_error("%s: integrity %s asked for, but the device has no block "
                  "signature offload of that kind",
                  md->dev->info.name,
                  strand_integrity_kind_names[md->integrity]);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

/* The mkey that signs what peers read of memh: its layout the whole
 * registration, memory plain, every 512-byte block signed on the wire. */
static ucs_status_t strand_md_memh_sign(strand_md_t *md, strand_md_memh_t *memh)
{
    strand_integrity_sig_t sig;
    struct ibv_sge         sge;
    int                    err;

    pthread_mutex_lock(&md->sig_lock);
    if (memh->have_sig) {
        pthread_mutex_unlock(&md->sig_lock);
        return UCS_OK;
    }
    err = md->dev->ops->create_mkey(md->dev, 1, 1,
                                    strand_dev_mkey_variant(md->dev),
                                    &memh->sig);
    if (err == 0) {
        strand_integrity_sig_init(&sig, md->integrity);
        sge.addr   = memh->addr;
        sge.length = (uint32_t)memh->length;
        sge.lkey   = memh->mr.lkey;
        err        = (memh->length > UINT32_MAX) ?
                             EINVAL :
                             md->dev->ops->mkey_configure(md->dev, &memh->sig, &sge, 1,
                                                          IBV_ACCESS_REMOTE_READ,
                                                          &sig.attr);
        if (err != 0) {
            md->dev->ops->destroy_mkey(md->dev, &memh->sig);
        }
    }
    memh->have_sig = (err == 0);
    pthread_mutex_unlock(&md->sig_lock);
    if (err != 0) {
        ucs_error("%s: failed to make the signing mkey of %p length %" PRIu64
                  ": %s",
                  md->dev->info.name, (void *)(uintptr_t)memh->addr,
                  memh->length, strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static void strand_md_memh_unsign(strand_md_t *md, strand_md_memh_t *memh)
{
    if (memh->have_sig) {
        md->dev->ops->destroy_mkey(md->dev, &memh->sig);
        memh->have_sig = 0;
    }
}

/* ----------------------------------------------------- registration */

static ucs_status_t strand_md_errno_status(int err)
{
    switch (err) {
    case 0:
        return UCS_OK;
    case ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case EINVAL:
        return UCS_ERR_INVALID_PARAM;
    case EFAULT:
        return UCS_ERR_INVALID_ADDR;
    case ENODEV:
        return UCS_ERR_NO_DEVICE;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

static const int strand_md_access = IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ |
                                    IBV_ACCESS_REMOTE_ATOMIC;

static ucs_status_t strand_md_reg(strand_md_t *md, void *address, size_t length,
                                  unsigned flags, strand_md_memh_t *memh)
{
    int err = md->dev->ops->reg_mr(md->dev, address, length, strand_md_access,
                                   &memh->mr);

    memh->addr     = (uintptr_t)address;
    memh->length   = length;
    memh->have_sig = 0;
    if (err != 0) {
        ucs_log((flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ? UCS_LOG_LEVEL_DEBUG :
                                                        UCS_LOG_LEVEL_ERROR,
                "%s: failed to register %p length %zu: %s", md->dev->info.name,
                address, length, strerror(err));
    }
    return strand_md_errno_status(err);
}

static ucs_status_t
strand_md_rcache_mem_reg(void *context, ucs_rcache_t *rcache, void *arg,
                         ucs_rcache_region_t *rregion, uint16_t rflags)
{
    strand_md_rcache_region_t *region =
            ucs_derived_of(rregion, strand_md_rcache_region_t);
    unsigned flags = *(const unsigned *)arg;

    if (rflags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        flags |= UCT_MD_MEM_FLAG_HIDE_ERRORS;
    }
    return strand_md_reg(context, (void *)region->super.super.start,
                         region->super.super.end - region->super.super.start,
                         flags, &region->memh);
}

static void strand_md_rcache_mem_dereg(void *context, ucs_rcache_t *rcache,
                                       ucs_rcache_region_t *rregion)
{
    strand_md_t               *md = context;
    strand_md_rcache_region_t *region =
            ucs_derived_of(rregion, strand_md_rcache_region_t);

    strand_md_memh_unsign(md, &region->memh);
    md->dev->ops->dereg_mr(md->dev, &region->memh.mr);
}

static void strand_md_rcache_dump(void *context, ucs_rcache_t *rcache,
                                  ucs_rcache_region_t *rregion, char *buf,
                                  size_t max)
{
    strand_md_rcache_region_t *region =
            ucs_derived_of(rregion, strand_md_rcache_region_t);

    snprintf(buf, max, "lkey 0x%x rkey 0x%x", region->memh.mr.lkey,
             region->memh.mr.rkey);
}

static const ucs_rcache_ops_t strand_md_rcache_ops = {
        .mem_reg     = strand_md_rcache_mem_reg,
        .mem_dereg   = strand_md_rcache_mem_dereg,
        .dump_region = strand_md_rcache_dump,
        STRAND_RCACHE_OPS_MERGE};

static ucs_status_t strand_md_mem_reg(uct_md_h uct_md, void *address,
                                      size_t length, unsigned flags,
                                      uct_mem_h *memh_p)
{
    strand_md_t         *md = ucs_derived_of(uct_md, strand_md_t);
    ucs_rcache_region_t *rregion;
    strand_md_memh_t    *memh;
    ucs_status_t         status;

    if (length == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (md->rcache != NULL) {
        status = strand_rcache_get(md->rcache, address, length,
                                   PROT_READ | PROT_WRITE, &flags, &rregion);
        if (status != UCS_OK) {
            return status;
        }
        *memh_p = &ucs_derived_of(rregion, strand_md_rcache_region_t)->memh;
        return UCS_OK;
    }

    memh = ucs_malloc(sizeof(*memh), "strand_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = strand_md_reg(md, address, length, flags, memh);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
strand_md_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
{
    strand_md_t      *md = ucs_derived_of(uct_md, strand_md_t);
    strand_md_memh_t *memh;
    int               err;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    memh = params->memh;

    if (md->rcache != NULL) {
        ucs_rcache_region_put(
                md->rcache,
                &ucs_container_of(memh, strand_md_rcache_region_t, memh)->super);
        return UCS_OK;
    }
    strand_md_memh_unsign(md, memh);
    err = md->dev->ops->dereg_mr(md->dev, &memh->mr);
    ucs_free(memh);
    return strand_md_errno_status(err);
}

static ucs_status_t strand_md_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh,
                                        const uct_md_mkey_pack_params_t *params,
                                        void *rkey_buffer)
{
    strand_md_t                 *md     = ucs_derived_of(uct_md, strand_md_t);
    strand_md_memh_t            *memh   = uct_memh;
    strand_md_packed_rkey_sig_t *packed = rkey_buffer;
    ucs_status_t                 status;

    packed->plain.rkey        = memh->mr.rkey;
    packed->plain.atomic_rkey = memh->mr.rkey;
    if (md->integrity == STRAND_INTEGRITY_OFF) {
        return UCS_OK;
    }
    status = strand_md_memh_sign(md, memh);
    if (status != UCS_OK) {
        return status;
    }
    /* the second word says what follows (strand_md_rkey_unpack) */
    packed->plain.atomic_rkey = ~memh->mr.rkey;
    memset(packed->reserved, 0, sizeof(packed->reserved));
    packed->sig_rkey = memh->sig.key;
    packed->kind     = (uint8_t)md->integrity;
    packed->base     = memh->addr;
    packed->length   = memh->length;
    return UCS_OK;
}

int strand_md_rkey_parse(const void *rkey_buffer, size_t len,
                         strand_rkey_sig_t *rk)
{
    const strand_md_packed_rkey_sig_t *packed = rkey_buffer;

    memset(rk, 0, sizeof(*rk));
    rk->rkey = packed->plain.rkey;
    /* the second word says what follows: plain keys repeat the key there,
     * keys with a signing mkey behind them carry its complement */
    if ((len < sizeof(*packed)) ||
        (packed->plain.atomic_rkey != ~packed->plain.rkey)) {
        return 0;
    }
    /* a key from a peer: what it says of its registration must hold
     * together, else it is read as the plain key it starts with (no
     * signing mkey: a checked GET of it fails, strand_integrity_req_init) */
    if ((packed->sig_rkey == 0) || (packed->kind == STRAND_INTEGRITY_OFF) ||
        (packed->kind >= STRAND_INTEGRITY_LAST) || (packed->length == 0) ||
        (packed->base + packed->length < packed->base)) {
        ucs_debug("strand: a remote key's signing part does not hold "
                  "together (mkey 0x%x, kind %u, [0x%" PRIx64 ", +%" PRIu64
                  ")): read as a plain key",
                  packed->sig_rkey, packed->kind, packed->base, packed->length);
        return 0;
    }
    rk->sig_rkey = packed->sig_rkey;
    rk->kind     = packed->kind;
    rk->base     = packed->base;
    rk->length   = packed->length;
    return 1;
}

/* The component cannot know how large the peer's key is (its INTEGRITY
 * options decide): the second word tells (strand_md_rkey_parse). Keys are
 * values (strand_rkey.h): a plain key is its 32 bits, one with a signing
 * mkey names an entry of the process's table of unpacked signing keys. */
static ucs_status_t strand_md_rkey_unpack(uct_component_t *component,
                                          const void      *rkey_buffer,
                                          uct_rkey_t *rkey_p, void **handle_p)
{
    const strand_md_packed_rkey_t *packed = rkey_buffer;
    strand_rkey_sig_t              parsed;

    *handle_p = NULL;
    /* (a plain key is only 8 bytes: the parse reads past its second word
     * only for a key that says more follows) */
    if (!strand_md_rkey_parse(rkey_buffer, sizeof(strand_md_packed_rkey_sig_t),
                              &parsed)) {
        *rkey_p = packed->rkey;
        return UCS_OK;
    }
    return strand_rkey_sig_add(&parsed, rkey_p);
}

static ucs_status_t strand_md_rkey_release(uct_component_t *component,
                                           uct_rkey_t rkey, void *handle)
{
    strand_rkey_sig_remove(rkey); /* nothing for a plain key */
    return UCS_OK;
}

/* ------------------------------------------------------------ query */

static void strand_md_query_caps(uct_md_h uct_md, strand_md_caps_t *attr)
{
    strand_md_t *md = ucs_derived_of(uct_md, strand_md_t);

    memset(attr, 0, sizeof(*attr));
    /* NEED_MEMH: zero-copy operations take the memory handle of the local
     * buffer (its lkey); without the flag UCP passes whatever its request
     * held before instead of registering */
    attr->flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY |
                  UCT_MD_FLAG_NEED_MEMH;
    /* as UCX's ib MD: it allocates nothing (no ALLOC flag, no alloc memory
     * types) and puts no bound on allocations; registrations are bounded
     * by what the device says */
    attr->max_alloc        = ULONG_MAX;
    attr->max_reg          = (md->dev->caps.max_mr_size_log2 >= 63) ?
                                     ULONG_MAX :
                                     (1ul << md->dev->caps.max_mr_size_log2);
    attr->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->rkey_packed_size = strand_md_rkey_packed_size(md);
    attr->reg_cost         = md->reg_cost;
    attr->local_cpus       = md->local_cpus;
}

/* CPUs near the device, as the device layer found them. */
static void strand_md_local_cpus(const strand_dev_t *dev, ucs_cpu_set_t *cpus)
{
    unsigned c;

    UCS_CPU_ZERO(cpus);
    for (c = 0; (c < UCS_CPU_SETSIZE) && (c < STRAND_DEV_MAX_CPUS); ++c) {
        if (strand_dev_cpu_isset(&dev->locality, c)) {
            UCS_CPU_SET(c, cpus);
        }
    }
}

/* ------------------------------------------------------ open / close */

/* What an open MD holds but its registration cache (an open that fails
 * after its device and async handling were set up ends here too). */
static void strand_md_release(strand_md_t *md)
{
    pthread_mutex_destroy(&md->sig_lock);
    strand_async_cleanup(&md->async);
    md->dev->ops->close(md->dev);
    ucs_free(md);
}

static void strand_md_close(uct_md_h uct_md)
{
    strand_md_t *md = ucs_derived_of(uct_md, strand_md_t);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
    strand_md_release(md);
}

static ucs_status_t
strand_md_create_rcache(strand_md_t *md, const strand_md_config_t *config)
{
    ucs_rcache_params_t params;

    strand_rcache_params(&params, &config->rcache);
    params.region_struct_size = sizeof(strand_md_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = md;
    params.ops                = &strand_md_rcache_ops;
    params.flags |= UCS_RCACHE_FLAG_PURGE_ON_FORK;
    return ucs_rcache_create(&params, md->dev->info.name, NULL, &md->rcache);
}

/* UCX's tables, as this UCX spells them (ucx_compat.c) */
static uct_md_ops_t strand_md_ops;

UCS_STATIC_INIT
{
    static const strand_compat_md_funcs_t funcs = {
            .query_caps = strand_md_query_caps,
            .mem_reg    = strand_md_mem_reg,
            .mkey_pack  = strand_md_mkey_pack,
            .close      = strand_md_close,
            .mem_dereg  = strand_md_mem_dereg};

    strand_compat_md_ops(&strand_md_ops, &funcs);
    strand_compat_component_rkey_ops(&strand_component, strand_md_rkey_unpack);
}

/* The registration cache, as asked (UCX_STRAND_RCACHE): try (the default)
 * goes without one when it cannot be made. */
static ucs_status_t
strand_md_open_rcache(strand_md_t *md, const strand_md_config_t *config)
{
    ucs_status_t status;

    if (config->rcache_enable == UCS_NO) {
        return UCS_OK;
    }
    status = strand_md_create_rcache(md, config);
    if (status == UCS_OK) {
        md->reg_cost = ucs_linear_func_make(strand_rcache_overhead(
                                                    &config->rcache),
                                            0);
        return UCS_OK;
    }
    if (config->rcache_enable == UCS_YES) {
        ucs_error("%s: failed to create the registration cache: %s",
                  md->dev->info.name, ucs_status_string(status));
        return status;
    }
    ucs_debug("%s: registration cache disabled: %s", md->dev->info.name,
              ucs_status_string(status));
    return UCS_OK;
}

/* Fork protection for the device's backend, before it registers anything
 * (UCX calls ibv_fork_init where it opens its IB memory domains too). */
static ucs_status_t strand_md_fork_init(const strand_md_config_t *config,
                                        const strand_dev_info_t  *info)
{
    int err;

    if (config->fork_init == UCS_NO) {
        return UCS_OK;
    }
    err = strand_dev_fork_init(info->kind);
    if (err == ENOTSUP) {
        ucs_debug("%s: UCX_STRAND_FORK_INIT: the software device needs no "
                  "fork protection",
                  info->name);
    } else if (err == 0) {
        ucs_debug("%s: ibv_fork_init: registered memory is fork-safe",
                  info->name);
    } else if (config->fork_init == UCS_YES) {
        ucs_error("%s: UCX_STRAND_FORK_INIT=yes, but ibv_fork_init failed: "
                  "%s",
                  info->name, strerror(err));
        return UCS_ERR_IO_ERROR;
    } else {
        ucs_debug("%s: ibv_fork_init failed: %s; fork() after a "
                  "registration may be unsafe",
                  info->name, strerror(err));
    }
    return UCS_OK;
}

static ucs_status_t
strand_md_open(uct_component_t *component, const char *md_name,
               const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const strand_md_config_t *config = ucs_derived_of(uct_config,
                                                      strand_md_config_t);
    strand_dev_info_t         infos[STRAND_MD_MAX_DEVICES];
    strand_md_t              *md;
    ucs_status_t              status;
    int                       i, n, err;

    n = strand_md_select_devices(config->dev_type, infos,
                                 STRAND_MD_MAX_DEVICES);
    for (i = 0; (i < n) && strcmp(infos[i].name, md_name); ++i) {
    }
    if (i >= n) {
        ucs_error("strand: no device '%s' (UCX_STRAND_DEVICE_TYPE=%s)", md_name,
                  strand_dev_type_names[config->dev_type]);
        return UCS_ERR_NO_DEVICE;
    }

    status = strand_md_fork_init(config, &infos[i]);
    if (status != UCS_OK) {
        return status;
    }
    md = ucs_calloc(1, sizeof(*md), "strand_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    err = strand_dev_open(&infos[i], &md->dev);
    if (err != 0) {
        ucs_error("strand: failed to open %s: %s", md_name, strerror(err));
        ucs_free(md);
        return strand_md_errno_status(err);
    }

    status = strand_async_init(&md->async, md->dev);
    if (status != UCS_OK) {
        md->dev->ops->close(md->dev);
        ucs_free(md);
        return status;
    }
    pthread_mutex_init(&md->sig_lock, NULL);
    status = strand_md_read_integrity(md);
    if (status != UCS_OK) {
        strand_md_release(md);
        return status;
    }
    md->super.ops       = &strand_md_ops;
    md->super.component = component;
    md->reg_cost        = ucs_linear_func_make(config->reg_cost_overhead,
                                               config->reg_cost_growth);
    md->mmio_mode       = config->mmio_mode;
    if (md->mmio_mode == STRAND_MMIO_MODE_AUTO) {
        md->mmio_mode = (md->dev->info.kind == STRAND_DEV_KIND_SIM) ?
                                STRAND_MMIO_MODE_DB :
                                STRAND_MMIO_MODE_AUTO;
    }
    strand_md_local_cpus(md->dev, &md->local_cpus);
    status = strand_md_open_rcache(md, config);
    if (status != UCS_OK) {
        strand_md_release(md);
        return status;
    }
    *md_p = &md->super;
    return UCS_OK;
}

uct_component_t strand_component = {
        .query_md_resources = strand_md_query_resources,
        .md_open            = strand_md_open,
        .cm_open      = STRAND_UCX_UNSUPPORTED(uct_component_cm_open_func_t),
        .rkey_ptr     = STRAND_UCX_UNSUPPORTED(uct_component_rkey_ptr_func_t),
        .rkey_release = strand_md_rkey_release,
        .name         = STRAND_COMPONENT_NAME,
        .md_config =
                {
                        .name   = "strand memory domain",
                        .prefix = "STRAND_",
                        .table  = strand_md_config_table,
                        .size   = sizeof(strand_md_config_t),
                },
        .cm_config   = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
        .tl_list     = UCT_COMPONENT_TL_LIST_INITIALIZER(&strand_component),
        .flags       = 0,
        .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function};
