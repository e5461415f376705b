/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ABI guard: the plugin is compiled against the internal headers of one UCX
 * version and must refuse to register into any other one.
 */
#ifndef STRAND_ABI_H_
#define STRAND_ABI_H_

#include <stddef.h>

typedef struct strand_abi_info {
    unsigned built_major, built_minor; /* UCX version compiled against */
    size_t   built_iface_size;         /* sizeof(uct_base_iface_t) here */
    size_t   built_ep_size;            /* sizeof(uct_base_ep_t) here */
    int      runtime_known;            /* runtime version could be read */
    unsigned runtime_major, runtime_minor, runtime_release;
    size_t   runtime_iface_size; /* uct_base_iface_t_class.size */
    size_t   runtime_ep_size;    /* uct_base_ep_t_class.size */
} strand_abi_info_t;

/* Fill @info from the build and from the UCX loaded in this process. */
void strand_abi_probe(strand_abi_info_t *info);

/*
 * Returns 1 when @info describes a compatible UCX; otherwise 0 and a one-line
 * explanation in @why (may be NULL).
 */
int strand_abi_compatible(const strand_abi_info_t *info, char *why,
                          size_t why_len);

#endif
