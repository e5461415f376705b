/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Load-time registration of the strand UCT component.
 *
 * UCX 1.13.1 loads only its compiled-in modules, so this library is preloaded
 * (strand-run) or found on UCX_PLUGIN_PATH by newer UCX. Either way the
 * constructor below runs before ucp_init()/uct_query_components() and adds the
 * component to UCX's global list. The library must never be unloaded: UCX
 * 1.13.1 cannot take a component off its list again.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_abi.h"
#include "strand_md.h"
#include "dc/dc_iface.h"
#include "rc/rc_iface.h"

#include <stdio.h>
#include <stdlib.h>

/* Set once registration happened; read by tests through the symbol below. */
static int strand_registered;

int strand_component_is_registered(void) __attribute__((visibility("default")));

int strand_component_is_registered(void)
{
    return strand_registered;
}

static void __attribute__((constructor)) strand_component_init(void)
{
    strand_abi_info_t info;
    char              why[512];

    strand_abi_probe(&info);
    if (!strand_abi_compatible(&info, why, sizeof(why))) {
        fprintf(stderr, "%s\n", why);
        return;
    }

    uct_tl_register(&strand_component, &uct_dc_strand_tl);
    uct_tl_register(&strand_component, &uct_rc_strand_tl);
    uct_component_register(&strand_component);
    strand_registered = 1;
}
