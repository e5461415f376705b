/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared core where a real ConnectX and rdma-core are less forgiving
 * than a naive device (spec section 9), on both transports
 * (dc_strand/hw_truth.*, rc_strand/hw_truth.*): 128-byte CQEs with
 * scatter-to-CQE, devices without masked atomics, RoCE ports. What DCIs
 * meet there is in test_dc_hw_truth.cc, the events in test_events.cc.
 */
#include "uct_fixture.h"

class hw_truth : public strand_uct_tl {
protected:
    /* An active message of `len` bytes, retried while no resource. */
    ucs_status_t am_bytes(uct_ep_h ep, const std::vector<uint8_t> &v)
    {
        std::vector<uint8_t> copy = v;
        ssize_t              ret  = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            ret = uct_ep_am_bcopy(ep, 5, pack_cb, &copy, 0);
            return ret != UCS_ERR_NO_RESOURCE;
        });
        return (ret >= 0) ? UCS_OK : (ucs_status_t)ret;
    }

    void check_am_roundtrip(unsigned max_len)
    {
        for (unsigned len = 0; len <= max_len; len += (len < 80) ? 1 : 37) {
            auto v = pattern(len, len);
            ASSERT_EQ(UCS_OK, am_bytes(m_ep, v)) << len;
            ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }))
                    << len;
            EXPECT_EQ(v, m_b.am.msgs[0]) << "AM of " << len << " bytes";
            m_b.am.msgs.clear();
        }
    }
};

/* Spec 9 (CQE size): with MLX5_CQE_SIZE=128 the 64-byte CQE is the second
 * half of each entry and small messages may be scattered into the first
 * half; both with the transport taking them (RX_INLINE) and not. */
TEST_P(hw_truth, active_messages_with_128_byte_cqes)
{
    set_env("MLX5_CQE_SIZE", "128");
    for (const char *rx_inline : {"y", "n"}) {
        set_tl_env("RX_INLINE", rx_inline);
        open_pair();
        check_am_roundtrip(300);
        region r;
        reg(r, 4096);
        auto data = pattern(100, 5);
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, data.data(), data.size(),
                                           addr(r), r.rkey.rkey));
        std::vector<uint8_t> back;
        test_comp            c;
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_get_bcopy(m_ep, unpack_cb, &back, 24, addr(r, 8),
                                   r.rkey.rkey, &c.uct));
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(std::vector<uint8_t>(data.begin() + 8, data.begin() + 32),
                  back)
                << "RX_INLINE=" << rx_inline;
        unreg(r);
        close_pair();
    }
}

/* Spec 9 (capabilities): a device without masked atomics has the standard
 * 64-bit fetch-and-add and compare-and-swap only; the interface says so and
 * they work. */
TEST_P(hw_truth, device_without_masked_atomics)
{
    set_env("STRAND_SIM_CAPS", "masked_atomics=0");
    ASSERT_EQ(UCS_OK, open_md());
    open_pair();
    const uct_iface_attr_t &a = m_a.attr;
    ASSERT_TRUE(a.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);
    EXPECT_EQ(0u, a.cap.atomic32.op_flags);
    EXPECT_EQ(0u, a.cap.atomic32.fop_flags);
    EXPECT_EQ(UCS_BIT(UCT_ATOMIC_OP_ADD), a.cap.atomic64.op_flags);
    EXPECT_EQ(UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_CSWAP),
              a.cap.atomic64.fop_flags);

    region r;
    reg(r, 64);
    uint64_t *target = reinterpret_cast<uint64_t *>(r.buf.data());
    *target          = 40;
    ASSERT_EQ(UCS_OK, uct_ep_atomic64_post(m_ep, UCT_ATOMIC_OP_ADD, 2, addr(r),
                                           r.rkey.rkey));
    uint64_t  old = 0;
    test_comp c;
    comp_init(&c);
    ucs_status_t s = uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 10, &old,
                                           addr(r), r.rkey.rkey, &c.uct);
    ASSERT_EQ(UCS_INPROGRESS, s);
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(42u, old);
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_atomic_cswap64(m_ep, 52, 7, addr(r),
                                                    r.rkey.rkey, &old, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(52u, old);
    EXPECT_EQ(7u, *target);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_atomic64_post(m_ep, UCT_ATOMIC_OP_XOR, 1, addr(r),
                                   r.rkey.rkey));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_atomic32_post(m_ep, UCT_ATOMIC_OP_ADD, 1, addr(r),
                                   r.rkey.rkey));
    EXPECT_TRUE(m_a.err.errors.empty());
    unreg(r);
}

/* Spec 9 (link layer): on a RoCE port the device address is a GID, every
 * WQE carries a GRH with the MAC the device resolved, and reachability
 * goes by address family and prefix. */
TEST_P(hw_truth, roce_port)
{
    set_env("STRAND_SIM_LINK_LAYER", "ethernet");
    ASSERT_EQ(UCS_OK, open_md());
    open_pair();
    EXPECT_EQ(17u, m_a.attr.device_addr_len) << "flags + GID";
    EXPECT_EQ(1, m_b.dev_addr[0] & 1) << "the Ethernet flag";
    check_am_roundtrip(200);
    region r;
    reg(r, 4096);
    auto data = pattern(2000, 8);
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(m_ep, data.data(), 100, addr(r), r.rkey.rkey));
    flush(m_ep);
    EXPECT_EQ(0, memcmp(r.buf.data(), data.data(), 100));
    unreg(r);

    /* another fabric: another /64 prefix */
    std::vector<uint8_t> other = m_b.dev_addr;
    other[3] ^= 0x11;
    EXPECT_FALSE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t *)other.data(),
            (const uct_iface_addr_t *)m_b.iface_addr.data()));
    /* an InfiniBand address is not reachable from a RoCE port */
    other    = m_b.dev_addr;
    other[0] = 0;
    EXPECT_FALSE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t *)other.data(),
            (const uct_iface_addr_t *)m_b.iface_addr.data()));
    /* the same prefix but nobody owns the GID: no MAC, no endpoint */
    other = m_b.dev_addr;
    other[16] ^= 0x77;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, create_ep(m_a, other, m_b.iface_addr));
}
STRAND_UCT_INSTANTIATE(hw_truth);
