/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plugin's load-time ABI guard and its registration into libuct.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "uct_plugin.h"

extern "C" {
#include "uct_mlx5/strand_abi.h"
#include <uct/api/uct.h>
}

#include <dlfcn.h>
#include <cstdlib>
#include <string>

namespace {

strand_abi_info_t probed()
{
    strand_abi_info_t info;
    strand_abi_probe(&info);
    return info;
}

} // namespace

TEST(abi, installed_ucx_is_compatible)
{
    strand_abi_info_t info     = probed();
    char              why[256] = "";
    EXPECT_EQ(info.built_iface_size, info.runtime_iface_size);
    EXPECT_EQ(info.built_ep_size, info.runtime_ep_size);
    EXPECT_EQ(1, strand_abi_compatible(&info, why, sizeof(why))) << why;
}

TEST(abi, refuses_other_uct_base_iface_layout)
{
    /* What a UCX built with ENABLE_STATS looks like: a larger base iface. */
    strand_abi_info_t info     = probed();
    char              why[256] = "";
    info.runtime_iface_size += 8;
    EXPECT_EQ(0, strand_abi_compatible(&info, why, sizeof(why)));
    EXPECT_NE(std::string::npos, std::string(why).find("uct_base_iface_t"));
    /* the version it was built for, as configure found it */
    std::string built = "built for UCX " +
                        std::to_string(STRAND_UCX_BUILD_MAJOR) + "." +
                        std::to_string(STRAND_UCX_BUILD_MINOR);
    EXPECT_NE(std::string::npos, std::string(why).find(built)) << why;
}

TEST(abi, refuses_other_uct_base_ep_layout)
{
    strand_abi_info_t info     = probed();
    char              why[256] = "";
    info.runtime_ep_size -= 8;
    EXPECT_EQ(0, strand_abi_compatible(&info, why, sizeof(why)));
    EXPECT_NE(std::string::npos, std::string(why).find("uct_base_ep_t"));
}

TEST(abi, refuses_other_ucx_version)
{
    strand_abi_info_t info     = probed();
    char              why[256] = "";
    /* a release after the one it was built for */
    info.runtime_known = 1;
    info.runtime_major = STRAND_UCX_BUILD_MAJOR;
    info.runtime_minor = STRAND_UCX_BUILD_MINOR + 1;
    EXPECT_EQ(0, strand_abi_compatible(&info, why, sizeof(why)));
    std::string running = "running UCX is " +
                          std::to_string(STRAND_UCX_BUILD_MAJOR) + "." +
                          std::to_string(STRAND_UCX_BUILD_MINOR + 1);
    EXPECT_NE(std::string::npos, std::string(why).find(running)) << why;
}

TEST(abi, plugin_registers_component_strand)
{
    const char *path = strand_plugin_path();

    /* Never dlclose: UCX 1.13.1 cannot unregister a component. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    ASSERT_NE(nullptr, handle) << dlerror();
    auto is_registered = reinterpret_cast<int (*)()>(
            dlsym(handle, "strand_component_is_registered"));
    ASSERT_NE(nullptr, is_registered);
    EXPECT_EQ(1, is_registered());

    uct_component_h *components;
    unsigned         num_components;
    ASSERT_EQ(UCS_OK, uct_query_components(&components, &num_components));
    bool found = false;
    for (unsigned i = 0; i < num_components; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        ASSERT_EQ(UCS_OK, uct_component_query(components[i], &attr));
        found = found || (std::string(attr.name) == "strand");
    }
    uct_release_component_list(components);
    EXPECT_TRUE(found);
}

TEST(abi, plugin_exports_nothing_but_its_probe)
{
    /* Hidden visibility: a preloaded library comes first in symbol lookup,
     * so an exported UCX-like name would override UCX's own. */
    const char *path = strand_plugin_path();
    std::string cmd  = std::string("nm -D --defined-only ") + path +
                      " | awk '$2 ~ /[TDB]/ {print $3}' | grep -v "
                      "'^strand_component_is_registered$' | grep -v '^_' ";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(nullptr, p);
    char        line[256];
    std::string extra;
    while (fgets(line, sizeof(line), p) != nullptr) {
        extra += line;
    }
    pclose(p);
    EXPECT_EQ("", extra) << "exported: " << extra;
}
