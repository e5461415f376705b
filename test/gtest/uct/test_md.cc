/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strand memory domain through UCX's public API: discovery of the
 * software device, registration (with and without the registration cache),
 * remote keys, configuration errors.
 */
#include "uct_plugin.h"
#include "log_capture.h"

extern "C" {
#include "dev/dev.h"
#include <uct/base/uct_md.h>
#include "uct_mlx5/ucx_compat.h"
}

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <unistd.h>
#include <vector>

class strand_md : public ::testing::Test {
protected:
    void SetUp() override
    {
        static std::atomic<int> counter{0};
        std::string fabric = "strand_md_" + std::to_string(getpid()) + "_" +
                             std::to_string(counter++);
        setenv("STRAND_SIM_FABRIC", fabric.c_str(), 1);
        m_component = strand_component_find();
        ASSERT_NE(nullptr, m_component) << dlerror();
    }

    void TearDown() override
    {
        if (m_md != nullptr) {
            uct_md_close(m_md);
        }
        unsetenv("UCX_STRAND_RCACHE");
        unsetenv("UCX_STRAND_DEVICE_TYPE");
    }

    std::vector<std::string> md_names()
    {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        EXPECT_EQ(UCS_OK, uct_component_query(m_component, &attr));
        std::vector<uct_md_resource_desc_t> res(attr.md_resource_count + 1);
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = res.data();
        EXPECT_EQ(UCS_OK, uct_component_query(m_component, &attr));
        std::vector<std::string> names;
        for (unsigned i = 0; i < attr.md_resource_count; ++i) {
            names.push_back(res[i].md_name);
        }
        return names;
    }

    ucs_status_t open(const char *name)
    {
        uct_md_config_t *config;
        ucs_status_t status = uct_md_config_read(m_component, nullptr, nullptr,
                                                 &config);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_md_open(m_component, name, config, &m_md);
        uct_config_release(config);
        return status;
    }

    uct_component_h m_component = nullptr;
    uct_md_h        m_md        = nullptr;
};

/* auto: hardware when the machine has any, else the software device;
 * nothing assumes either */
TEST_F(strand_md, device_type_selects_the_memory_domains)
{
    strand_dev_info_t hw[16];
    int  num_hw = strand_dev_list(1u << STRAND_DEV_KIND_HW, hw, 16);
    auto names  = md_names();
    if (num_hw == 0) {
        ASSERT_EQ(1u, names.size());
        EXPECT_EQ("smlx5_0", names[0]);
    } else {
        ASSERT_EQ((size_t)num_hw, names.size());
        for (int i = 0; i < num_hw; ++i) {
            EXPECT_EQ(hw[i].name, names[i]);
        }
    }
    setenv("UCX_STRAND_DEVICE_TYPE", "hw", 1);
    EXPECT_EQ((size_t)num_hw, md_names().size());
    setenv("UCX_STRAND_DEVICE_TYPE", "sim", 1);
    names = md_names();
    ASSERT_EQ(1u, names.size());
    EXPECT_EQ("smlx5_0", names[0]);
}

TEST_F(strand_md, query_reports_registration_and_rkey_size)
{
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    /* zero-copy posts need the lkey: UCP must hand over a memory handle */
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_MEMH);
    EXPECT_EQ(8u, attr.rkey_packed_size);
    EXPECT_STREQ("strand", attr.component_name);
    EXPECT_TRUE(attr.cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
}

TEST_F(strand_md, register_pack_unpack_deregister)
{
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    std::vector<char> buf(1 << 20);
    uct_mem_h         memh;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    uint32_t packed[4] = {0, 0, 0, 0};
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed));
    EXPECT_NE(0u, packed[0]);
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed, &rkey));
    EXPECT_EQ(packed[0], (uint32_t)rkey.rkey);
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rkey));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(strand_md, registration_cache_returns_the_same_region)
{
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    std::vector<char> buf(1 << 16);
    uct_mem_h         a, b;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &a));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data() + 4096, 4096,
                                     UCT_MD_MEM_ACCESS_ALL, &b));
    EXPECT_EQ(a, b);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, b));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, a));
}

TEST_F(strand_md, without_cache_each_registration_is_its_own)
{
    setenv("UCX_STRAND_RCACHE", "no", 1);
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    std::vector<char> buf(1 << 16);
    uct_mem_h         a, b;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &a));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &b));
    EXPECT_NE(a, b);
    uint64_t ka, kb;
    uct_md_mkey_pack(m_md, a, &ka);
    uct_md_mkey_pack(m_md, b, &kb);
    EXPECT_NE((uint32_t)ka, (uint32_t)kb);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, a));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, b));
}

TEST_F(strand_md, bad_input_is_a_clear_error)
{
    EXPECT_EQ(UCS_ERR_NO_DEVICE, open("mlx5_99"));
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    char      c;
    uct_mem_h memh;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_mem_reg(m_md, &c, 0, UCT_MD_MEM_ACCESS_ALL, &memh));
    setenv("UCX_STRAND_DEVICE_TYPE", "bogus", 1);
    uct_md_config_t *config;
    EXPECT_NE(UCS_OK,
              uct_md_config_read(m_component, nullptr, nullptr, &config));
}

/* UCX_STRAND_FORK_INIT (UCX's UCX_IB_FORK_INIT): yes, no and try open the
 * software device, which needs no fork protection (its backend has none to
 * call); the hardware backend's is rdma-core's ibv_fork_init, which works
 * without a NIC; a value that is none of them is refused, naming it. */
TEST_F(strand_md, fork_init_values)
{
    EXPECT_EQ(ENOTSUP, strand_dev_fork_init(STRAND_DEV_KIND_SIM));
    EXPECT_EQ(0, strand_dev_fork_init(STRAND_DEV_KIND_HW));
    for (const char *v : {"yes", "no", "try"}) {
        setenv("UCX_STRAND_FORK_INIT", v, 1);
        EXPECT_EQ(UCS_OK, open("smlx5_0")) << v;
        uct_md_close(m_md);
        m_md = nullptr;
    }
    setenv("UCX_STRAND_FORK_INIT", "sometimes", 1);
    uct_md_config_t *config = nullptr;
    {
        scoped_log_capture logs;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_md_config_read(m_component, nullptr, nullptr, &config));
        EXPECT_EQ(1u, logs.count("FORK_INIT"));
    }
    unsetenv("UCX_STRAND_FORK_INIT");
}

/* uct_md_* call every operation of the MD's table without checking: what
 * strand's MD does not do answers (UNSUPPORTED, or "not accessible"), it
 * never calls a NULL pointer (UCX's test_md.sockaddr_accessibility crashed
 * the process). */
TEST_F(strand_md, operations_it_does_not_have_answer_instead_of_crashing)
{
    ASSERT_EQ(UCS_OK, open("smlx5_0"));
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ucs_sock_addr_t sa  = {reinterpret_cast<struct sockaddr *>(&sin),
                           sizeof(sin)};
    EXPECT_EQ(0,
              uct_md_is_sockaddr_accessible(m_md, &sa, UCT_SOCKADDR_ACC_LOCAL));
    std::vector<uint8_t> buf(4096);
    uct_md_mem_attr_t    attr;
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_query(m_md, buf.data(), buf.size(), &attr));
    size_t    length  = 4096;
    void     *address = nullptr;
    uct_mem_h memh;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              STRAND_MD_MEM_ALLOC_HOST(m_md, &length, &address, 0, "test",
                                       &memh));
}
