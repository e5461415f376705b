/* SPDX-License-Identifier: BSD-3-Clause */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_abi.h"

#include <uct/base/uct_iface.h>

#include <dlfcn.h>
#include <stdio.h>

void strand_abi_probe(strand_abi_info_t *info)
{
    void (*get_version)(unsigned *, unsigned *, unsigned *);

    info->built_major        = STRAND_UCX_BUILD_MAJOR;
    info->built_minor        = STRAND_UCX_BUILD_MINOR;
    info->built_iface_size   = sizeof(uct_base_iface_t);
    info->built_ep_size      = sizeof(uct_base_ep_t);
    info->runtime_iface_size = uct_base_iface_t_class.size;
    info->runtime_ep_size    = uct_base_ep_t_class.size;

    /* libuct has no version query of its own in 1.13; libucp (same release)
     * is loaded in every UCP process and in ucx_info/ucx_perftest. */
    *(void **)&get_version = dlsym(RTLD_DEFAULT, "ucp_get_version");
    info->runtime_known    = (get_version != NULL);
    if (get_version != NULL) {
        get_version(&info->runtime_major, &info->runtime_minor,
                    &info->runtime_release);
    }
}

int strand_abi_compatible(const strand_abi_info_t *info, char *why,
                          size_t why_len)
{
    const char *reason = NULL;
    char        buf[256];

    if (info->runtime_known && ((info->runtime_major != info->built_major) ||
                                (info->runtime_minor != info->built_minor))) {
        snprintf(buf, sizeof(buf), "the running UCX is %u.%u",
                 info->runtime_major, info->runtime_minor);
        reason = buf;
    } else if (info->runtime_iface_size != info->built_iface_size) {
        snprintf(buf, sizeof(buf),
                 "uct_base_iface_t is %zu bytes in the running UCX, %zu here",
                 info->runtime_iface_size, info->built_iface_size);
        reason = buf;
    } else if (info->runtime_ep_size != info->built_ep_size) {
        snprintf(buf, sizeof(buf),
                 "uct_base_ep_t is %zu bytes in the running UCX, %zu here",
                 info->runtime_ep_size, info->built_ep_size);
        reason = buf;
    }

    if (reason == NULL) {
        return 1;
    }
    if (why != NULL) {
        snprintf(why, why_len,
                 "strand: not loaded: built for UCX %u.%u (%s); rebuild "
                 "strand against this UCX",
                 info->built_major, info->built_minor, reason);
    }
    return 0;
}
