/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The adapters between the transport's version-neutral functions and the
 * signatures of the UCX it is built against (ucx_compat.h; configure.ac
 * finds which). Each adapter is the only place its difference is spelled.
 */
#include "ucx_compat.h"

#include <ucs/debug/log.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <ucs/type/param.h>
#include <string.h>

/* ----------------------------------------------- registration cache */

void strand_rcache_params(ucs_rcache_params_t          *params,
                          const strand_rcache_config_t *config)
{
#ifdef HAVE_UCT_MD_RCACHE_CONFIG_T
    uct_md_set_rcache_params(params, config);
#else
    ucs_rcache_set_params(params, config);
#endif
#ifdef HAVE_UCS_RCACHE_PARAMS_T_MAX_ALIGNMENT
    params->max_alignment = ucs_get_page_size();
#endif
}

double strand_rcache_overhead(const strand_rcache_config_t *config)
{
#ifdef HAVE_UCT_MD_RCACHE_CONFIG_T
    return uct_md_rcache_overhead(config);
#else
    /* UCX 1.13's value for "auto" on every CPU but Fujitsu's ARM */
    return (config->overhead == UCS_TIME_AUTO) ?
                   180e-9 :
                   ucs_time_to_sec(config->overhead);
#endif
}

ucs_status_t strand_rcache_get(ucs_rcache_t *rcache, void *address,
                               size_t length, int prot, void *arg,
                               ucs_rcache_region_t **region_p)
{
#ifdef HAVE_UCS_RCACHE_GET_ALIGNMENT
    return ucs_rcache_get(rcache, address, length, UCS_RCACHE_MIN_ALIGNMENT,
                          prot, arg, region_p);
#else
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}

/* ------------------------------------------------ configuration, topo */

ucs_status_t strand_config_fill_opts(void *opts, ucs_config_field_t *table,
                                     size_t size, const char *table_prefix,
                                     int ignore_errors)
{
#ifdef HAVE_UCS_CONFIG_FILL_OPTS_ENTRY
    ucs_config_global_list_entry_t entry = {.name   = "strand",
                                            .prefix = table_prefix,
                                            .table  = table,
                                            .size   = size};

    return ucs_config_parser_fill_opts(opts, &entry, UCS_DEFAULT_ENV_PREFIX,
                                       ignore_errors);
#else
    return ucs_config_parser_fill_opts(opts, table, UCS_DEFAULT_ENV_PREFIX,
                                       table_prefix, ignore_errors);
#endif
}

void strand_topo_set_device_name(ucs_sys_device_t sys_dev, const char *name)
{
#ifdef HAVE_UCS_TOPO_SET_NAME_PRIORITY
    /* the priority UCX's own IB devices name theirs with */
    (void)ucs_topo_sys_device_set_name(sys_dev, name, 10);
#else
    (void)ucs_topo_sys_device_set_name(sys_dev, name);
#endif
}

/* -------------------------------------------- the interface's tables */

/* UCX's entries carry no context of strand's, so the adapters find the
 * functions they adapt here, copied by the table's builder (one library:
 * the same functions for every interface and MD). */
static strand_compat_ep_funcs_t         strand_compat_ep;
static strand_compat_md_funcs_t         strand_compat_md;
static strand_compat_rkey_unpack_func_t strand_compat_unpack;

#ifdef HAVE_UCT_EP_INVALIDATE_PARAMS_T
static ucs_status_t
strand_compat_ep_invalidate(uct_ep_h                          ep,
                            const uct_ep_invalidate_params_t *params)
{
    return strand_compat_ep.invalidate(ep);
}
#else
static ucs_status_t strand_compat_ep_invalidate(uct_ep_h ep, unsigned flags)
{
    return strand_compat_ep.invalidate(ep);
}
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_IFACE_IS_REACHABLE_V2
/* Is dev_addr the device of tl_iface itself (reachability in the device
 * scope: UCP asks whether a peer shares this NIC)? */
static int strand_compat_same_device(uct_iface_h              tl_iface,
                                     const uct_device_addr_t *dev_addr)
{
    uint8_t own[256]; /* device addresses are a few bytes (strand: 11 or 17) */
    uct_iface_attr_t attr;

    return (tl_iface->ops.iface_query(tl_iface, &attr) == UCS_OK) &&
           (attr.device_addr_len <= sizeof(own)) &&
           (tl_iface->ops.iface_get_device_address(tl_iface,
                                                   (uct_device_addr_t *)own) ==
            UCS_OK) &&
           (memcmp(own, dev_addr, attr.device_addr_len) == 0);
}

/* The v2 reachability check: the transport's own (uct_iface_ops_t
 * iface_is_reachable) for the network scope, and the same device for the
 * device scope; what is wrong goes to the caller's info string. */
static int
strand_compat_is_reachable_v2(const uct_iface_h                      tl_iface,
                              const uct_iface_is_reachable_params_t *params)
{
    uct_iface_reachability_scope_t scope =
            UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, scope, SCOPE,
                            UCT_IFACE_REACHABILITY_SCOPE_NETWORK);
    const uct_iface_addr_t *iface_addr = UCS_PARAM_VALUE(
            UCT_IFACE_IS_REACHABLE_FIELD, params, iface_addr, IFACE_ADDR, NULL);

    if (!(params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) ||
        (params->device_addr == NULL)) {
        uct_iface_fill_info_str_buf(params, "no device address");
        return 0;
    }
    if (!tl_iface->ops.iface_is_reachable(tl_iface, params->device_addr,
                                          iface_addr)) {
        uct_iface_fill_info_str_buf(params, "another link layer, subnet, "
                                            "fabric or tag matching setting");
        return 0;
    }
    if ((scope == UCT_IFACE_REACHABILITY_SCOPE_DEVICE) &&
        !strand_compat_same_device(tl_iface, params->device_addr)) {
        uct_iface_fill_info_str_buf(params, "device address is different");
        return 0;
    }
    return 1;
}

static int
strand_compat_ep_is_connected(uct_ep_h                            ep,
                              const uct_ep_is_connected_params_t *params)
{
    UCT_EP_IS_CONNECTED_CHECK_DEV_IFACE_ADDRS(params);
    return strand_compat_ep.is_connected(ep, params->device_addr,
                                         params->iface_addr);
}
#endif

void strand_compat_internal_ops(uct_iface_internal_ops_t       *internal,
                                uct_iface_estimate_perf_func_t  estimate_perf,
                                uct_iface_vfs_refresh_func_t    vfs_refresh,
                                const strand_compat_ep_funcs_t *ep_funcs)
{
    strand_compat_ep = *ep_funcs;
    memset(internal, 0, sizeof(*internal));
    internal->iface_estimate_perf = estimate_perf;
    internal->iface_vfs_refresh   = vfs_refresh;
    internal->ep_query            = STRAND_UCX_UNSUPPORTED(uct_ep_query_func_t);
    internal->ep_invalidate       = strand_compat_ep_invalidate;
#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_IFACE_QUERY_V2
    internal->iface_query_v2 = uct_iface_base_query_v2;
#endif
#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_EP_CONNECT_TO_EP_V2
    /* both transports connect to an interface, never to an endpoint */
    internal->ep_connect_to_ep_v2 = STRAND_UCX_UNSUPPORTED(
            uct_ep_connect_to_ep_v2_func_t);
#endif
#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_IFACE_IS_REACHABLE_V2
    internal->iface_is_reachable_v2 = strand_compat_is_reachable_v2;
    internal->ep_is_connected       = strand_compat_ep_is_connected;
#endif
#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_EP_GET_DEVICE_EP
    /* device (GPU-initiated) endpoints: not strand's */
    internal->ep_get_device_ep = STRAND_UCX_UNSUPPORTED(
            uct_ep_get_device_ep_func_t);
#endif
#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_T_EP_PUT_SGL_ZCOPY
    internal->ep_put_sgl_zcopy = STRAND_UCX_UNSUPPORTED(
            uct_ep_put_sgl_zcopy_func_t);
#endif
}

/* -------------------------------------------------- the memory domain */

#ifdef HAVE_UCT_MD_QUERY_V2
static ucs_status_t strand_compat_md_query(uct_md_h md, uct_md_attr_v2_t *attr)
{
    strand_md_caps_t caps;

    strand_compat_md.query_caps(md, &caps);
    attr->flags            = caps.flags;
    attr->max_alloc        = caps.max_alloc;
    attr->max_reg          = caps.max_reg;
    attr->reg_mem_types    = caps.reg_mem_types;
    attr->access_mem_types = caps.access_mem_types;
    /* what UCP may keep registered in its own cache (as UCX's ib MD: all
     * it registers); UCP >= 1.18 asserts its zero-copy buffers come from
     * that cache (with none, UCX_STRAND_RCACHE=n aborted in UCP) */
    attr->cache_mem_types  = caps.reg_mem_types;
    attr->rkey_packed_size = caps.rkey_packed_size;
    attr->reg_cost         = caps.reg_cost;
    attr->local_cpus       = caps.local_cpus;
    attr->reg_alignment    = 1;
    return UCS_OK;
}
#else
static ucs_status_t strand_compat_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    strand_md_caps_t caps;

    strand_compat_md.query_caps(md, &caps);
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags = caps.flags;
    attr->cap.max_alloc = caps.max_alloc;
    attr->cap.max_reg = caps.max_reg;
    attr->cap.reg_mem_types = caps.reg_mem_types;
    attr->cap.access_mem_types = caps.access_mem_types;
    attr->rkey_packed_size = caps.rkey_packed_size;
    attr->reg_cost = caps.reg_cost;
    attr->local_cpus = caps.local_cpus;
    ucs_strncpy_zero(attr->component_name, md->component->name,
                     sizeof(attr->component_name));
    return UCS_OK;
}
#endif

#ifdef HAVE_UCT_MD_MEM_REG_PARAMS
static ucs_status_t
strand_compat_mem_reg(uct_md_h md, void *address, size_t length,
                      const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p)
{
    return strand_compat_md.mem_reg(md, address, length,
                                    UCT_MD_MEM_REG_FIELD_VALUE(params, flags,
                                                               FIELD_FLAGS, 0),
                                    memh_p);
}
#else
static ucs_status_t strand_compat_mem_reg(uct_md_h md, void *address,
                                          size_t length, unsigned flags,
                                          uct_mem_h *memh_p)
{
    return strand_compat_md.mem_reg(md, address, length, flags, memh_p);
}
#endif

#ifdef HAVE_UCT_MD_MKEY_PACK_ADDRESS
static ucs_status_t
strand_compat_mkey_pack(uct_md_h md, uct_mem_h memh, void *address,
                        size_t length, const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    /* the key covers the whole registration, whatever part is named */
    return strand_compat_md.mkey_pack(md, memh, params, rkey_buffer);
}
#else
static ucs_status_t
strand_compat_mkey_pack(uct_md_h md, uct_mem_h memh,
                        const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    return strand_compat_md.mkey_pack(md, memh, params, rkey_buffer);
}
#endif

void strand_compat_md_ops(uct_md_ops_t                   *md_ops,
                          const strand_compat_md_funcs_t *funcs)
{
    strand_compat_md = *funcs;
    /* what the MD does not do answers UNSUPPORTED, as UCX's ib MD does:
     * uct_md_* call each entry without checking */
    memset(md_ops, 0, sizeof(*md_ops));
    md_ops->close      = funcs->close;
    md_ops->query      = strand_compat_md_query;
    md_ops->mem_alloc  = STRAND_UCX_UNSUPPORTED(uct_md_mem_alloc_func_t);
    md_ops->mem_free   = STRAND_UCX_UNSUPPORTED(uct_md_mem_free_func_t);
    md_ops->mem_advise = STRAND_UCX_UNSUPPORTED(uct_md_mem_advise_func_t);
    md_ops->mem_reg    = strand_compat_mem_reg;
    md_ops->mem_dereg  = funcs->mem_dereg;
    md_ops->mem_query  = STRAND_UCX_UNSUPPORTED(uct_md_mem_query_func_t);
    md_ops->mkey_pack  = strand_compat_mkey_pack;
    md_ops->detect_memory_type = STRAND_UCX_UNSUPPORTED(
            uct_md_detect_memory_type_func_t);
#ifdef HAVE_UCT_MD_OPS_T_IS_SOCKADDR_ACCESSIBLE
    md_ops->is_sockaddr_accessible = ucs_empty_function_return_zero_int;
#endif
#ifdef HAVE_UCT_MD_OPS_T_MEM_ATTACH
    /* attaching to memory another process exported: not strand's */
    md_ops->mem_attach = STRAND_UCX_UNSUPPORTED(uct_md_mem_attach_func_t);
#endif
#ifdef HAVE_UCT_MD_OPS_T_MEM_ELEM_PACK
    md_ops->mem_elem_pack = STRAND_UCX_UNSUPPORTED(uct_md_mem_elem_pack_func_t);
#endif
}

#ifdef HAVE_UCT_RKEY_UNPACK_PARAMS
static ucs_status_t
strand_compat_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                          const uct_rkey_unpack_params_t *params,
                          uct_rkey_t *rkey_p, void **handle_p)
{
    return strand_compat_unpack(component, rkey_buffer, rkey_p, handle_p);
}
#else
static ucs_status_t
strand_compat_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                          uct_rkey_t *rkey_p, void **handle_p)
{
    return strand_compat_unpack(component, rkey_buffer, rkey_p, handle_p);
}
#endif

void strand_compat_component_rkey_ops(uct_component_t *component,
                                      strand_compat_rkey_unpack_func_t unpack)
{
    strand_compat_unpack   = unpack;
    component->rkey_unpack = strand_compat_rkey_unpack;
#ifdef HAVE_UCT_COMPONENT_T_RKEY_COMPARE
    /* keys are values (strand_rkey.h): equal values, equal keys */
    component->rkey_compare = uct_base_rkey_compare;
#endif
}
