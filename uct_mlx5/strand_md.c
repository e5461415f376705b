#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_md.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

static const char *strand_dev_type_names[] = {
    [STRAND_DEV_TYPE_AUTO] = "auto",
    [STRAND_DEV_TYPE_HW]   = "hw",
    [STRAND_DEV_TYPE_SIM]  = "sim",
    [STRAND_DEV_TYPE_LAST] = NULL
};

ucs_config_field_t strand_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(strand_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"DEVICE_TYPE", "auto",
     "Which mlx5 devices strand opens:\n"
     " auto - hardware mlx5 devices when present, else the software device\n"
     " hw   - only hardware mlx5 devices (rdma-core libibverbs + mlx5dv)\n"
     " sim  - only the software mlx5 device (no NIC needed)",
     ucs_offsetof(strand_md_config_t, dev_type),
     UCS_CONFIG_TYPE_ENUM(strand_dev_type_names)},

    {NULL}
};

static void strand_md_close(uct_md_h uct_md)
{
    ucs_free(ucs_derived_of(uct_md, strand_md_t));
}

static ucs_status_t strand_md_query(uct_md_h uct_md, uct_md_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    ucs_strncpy_zero(attr->component_name, STRAND_COMPONENT_NAME,
                     sizeof(attr->component_name));
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t
strand_md_open(uct_component_t *component, const char *md_name,
               const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const strand_md_config_t *config = ucs_derived_of(uct_config,
                                                      strand_md_config_t);
    static uct_md_ops_t ops = {
        .close              = strand_md_close,
        .query              = strand_md_query,
        .detect_memory_type = (uct_md_detect_memory_type_func_t)
                              ucs_empty_function_return_unsupported,
    };
    strand_md_t *md;

    md = ucs_calloc(1, sizeof(*md), "strand_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &ops;
    md->super.component = component;
    md->dev_type        = config->dev_type;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t
strand_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                   uct_rkey_t *rkey_p, void **handle_p)
{
    return UCS_ERR_UNSUPPORTED; /* no memory registration in this build */
}

uct_component_t strand_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = strand_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                          ucs_empty_function_return_unsupported,
    .rkey_unpack        = strand_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                          ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                          ucs_empty_function_return_success,
    .name               = STRAND_COMPONENT_NAME,
    .md_config          = {
        .name           = "strand memory domain",
        .prefix         = "STRAND_",
        .table          = strand_md_config_table,
        .size           = sizeof(strand_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&strand_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                          ucs_empty_function
};
