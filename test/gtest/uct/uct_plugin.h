/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strand module as UCX sees it: loaded into this process (never
 * unloaded: UCX 1.13.1 cannot unregister a component) and found through
 * uct_query_components().
 */
#ifndef STRAND_TEST_UCT_PLUGIN_H_
#define STRAND_TEST_UCT_PLUGIN_H_

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
}

#include <dlfcn.h>
#include <cstdlib>
#include <string>

/* the build tree's module (test/gtest/build_paths.cc) */
extern const char strand_build_plugin[];

/* make check names the module; run by hand, the build tree's. */
static inline const char *strand_plugin_path()
{
    const char *path = getenv("STRAND_PLUGIN");
    return path ? path : strand_build_plugin;
}

static inline void *strand_plugin_load()
{
    return dlopen(strand_plugin_path(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
}

/* The "strand" component, or nullptr. */
static inline uct_component_h strand_component_find()
{
    if (strand_plugin_load() == nullptr) {
        return nullptr;
    }
    uct_component_h *components, found = nullptr;
    unsigned         num;
    if (uct_query_components(&components, &num) != UCS_OK) {
        return nullptr;
    }
    for (unsigned i = 0; i < num; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            (std::string(attr.name) == "strand")) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
}

#endif
