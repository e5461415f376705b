/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strand's UCT component (uct_loader.h).
 */
#include "uct_loader.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static uct_component_h strand_uct_component_find(void)
{
    uct_component_h     *components, found = NULL;
    uct_component_attr_t attr;
    unsigned             i, num;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return NULL;
    }
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "strand")) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
}

uct_component_h strand_uct_component(void)
{
    uct_component_h c      = strand_uct_component_find();
    const char     *plugin = getenv("STRAND_PLUGIN");

    /* never unloaded: UCX 1.13 keeps a registered component for good */
    if ((c == NULL) && (plugin != NULL) &&
        (dlopen(plugin, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != NULL)) {
        c = strand_uct_component_find();
    }
    return c;
}
