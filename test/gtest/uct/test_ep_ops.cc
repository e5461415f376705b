/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint operations of the shared core through UCX's public UCT API,
 * on both transports (dc_strand/ep_ops.*, rc_strand/ep_ops.*): active
 * messages, PUT, GET and device atomics checked byte for byte; short posts
 * of every length and around fences; flush from a pending request; a
 * lossy fabric; receive WQEs completing out of order.
 */
#include "uct_fixture.h"

class ep_ops : public strand_uct_tl {};

TEST_P(ep_ops, am_short_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    /* short: header + payload up to the limit */
    uint64_t hdr   = 0x0123456789abcdefull;
    auto     small = pattern(m_a.attr.cap.am.max_short - sizeof(hdr), 1);
    for (size_t len : {(size_t)0, (size_t)1, (size_t)55, small.size()}) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, hdr, small.data(), len));
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(m_ep, 5, hdr, small.data(), small.size() + 1));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 4; }));
    size_t lens[] = {0, 1, 55, small.size()};
    for (int i = 0; i < 4; ++i) {
        auto &m = m_b.am.msgs[i];
        ASSERT_EQ(sizeof(hdr) + lens[i], m.size());
        EXPECT_EQ(0, memcmp(&hdr, m.data(), sizeof(hdr)));
        EXPECT_EQ(0, memcmp(small.data(), m.data() + sizeof(hdr), lens[i]));
    }
    m_b.am.msgs.clear();

    /* bcopy: up to max_bcopy */
    for (size_t len :
         {(size_t)1, (size_t)4000, (size_t)m_a.attr.cap.am.max_bcopy}) {
        auto    data = pattern(len, 2);
        ssize_t ret;
        ASSERT_TRUE(progress_until([&] {
            ret = uct_ep_am_bcopy(m_ep, 5, pack_cb, &data, 0);
            return ret != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ((ssize_t)len, ret);
        ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
        EXPECT_EQ(data, m_b.am.msgs[0]);
        m_b.am.msgs.clear();
    }

    /* zcopy: header + two registered iov entries */
    auto      h  = pattern(40, 3);
    auto      d1 = pattern(3000, 4), d2 = pattern(5000, 5);
    uct_mem_h m1, m2;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, d1.data(), d1.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, d2.data(), d2.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &m2));
    uct_iov_t iov[2] = {{d1.data(), d1.size(), m1, 0, 1},
                        {d2.data(), d2.size(), m2, 0, 1}};
    test_comp c;
    comp_init(&c);
    ucs_status_t status = uct_ep_am_zcopy(m_ep, 5, h.data(), h.size(), iov, 2,
                                          0, &c.uct);
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(progress_until([&] {
        return c.done && (m_b.am.msgs.size() == 1);
    })) << "done "
        << c.done << " msgs " << m_b.am.msgs.size();
    std::vector<uint8_t> expect = h;
    expect.insert(expect.end(), d1.begin(), d1.end());
    expect.insert(expect.end(), d2.begin(), d2.end());
    EXPECT_EQ(expect, m_b.am.msgs[0]);
    /* an iov without a memory handle: the transport registers it */
    uct_iov_t iov_nomemh = {d1.data(), d1.size(), UCT_MEM_HANDLE_NULL, 0, 1};
    comp_init(&c);
    m_b.am.msgs.clear();
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_am_zcopy(m_ep, 5, h.data(), 8, &iov_nomemh, 1, 0, &c.uct));
    ASSERT_TRUE(progress_until(
            [&] { return c.done && (m_b.am.msgs.size() == 1); }));
    EXPECT_EQ(0, memcmp(m_b.am.msgs[0].data() + 8, d1.data(), d1.size()));
    uct_md_mem_dereg(m_md, m1);
    uct_md_mem_dereg(m_md, m2);
}

TEST_P(ep_ops, small_active_messages_come_in_the_cqe)
{
    check_am_in_cqe();
}

TEST_P(ep_ops, short_posts_of_every_length_across_the_ring_end)
{
    check_short_posts();
}

TEST_P(ep_ops, put_short_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    region r;
    reg(r, 1 << 20);

    auto s = pattern(m_a.attr.cap.put.max_short, 6);
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, s.data(), s.size(), addr(r, 8),
                                       r.rkey.rkey));
    auto    b   = pattern(m_a.attr.cap.put.max_bcopy, 7);
    ssize_t ret = uct_ep_put_bcopy(m_ep, pack_cb, &b, addr(r, 4096),
                                   r.rkey.rkey);
    ASSERT_EQ((ssize_t)b.size(), ret);
    auto      z = pattern(300000, 8);
    uct_mem_h zm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, z.data(), z.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &zm));
    uct_iov_t iov = {z.data(), z.size(), zm, 0, 1};
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep, &iov, 1, addr(r, 65536),
                                               r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    flush(m_ep);

    EXPECT_EQ(0, memcmp(r.buf.data() + 8, s.data(), s.size()));
    EXPECT_EQ(0, memcmp(r.buf.data() + 4096, b.data(), b.size()));
    EXPECT_EQ(0, memcmp(r.buf.data() + 65536, z.data(), z.size()));
    EXPECT_EQ(0, r.buf[7]);
    EXPECT_EQ(0, r.buf[65536 + z.size()]);
    uct_md_mem_dereg(m_md, zm);
    unreg(r);
}

/* Short operations around ep and iface fences: a fence closes the fast
 * path to the ep's next post (it goes the general way and is fenced), the
 * ones after go fast again. Every PUT lands and every active message comes,
 * in order (a debug build checks each post's readiness and gate too). */
TEST_P(ep_ops, short_operations_around_fences)
{
    const uint64_t n = 300;
    ucs_status_t   status;
    region         r;

    open_pair();
    reg(r, 64 * sizeof(uint64_t));
    for (uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(progress_until([&] {
            status = uct_ep_put_short(m_ep, &i, sizeof(i),
                                      addr(r, sizeof(i) * (i % 64)),
                                      r.rkey.rkey);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, status);
        if ((i % 3) == 0) {
            ASSERT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
        }
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, i));
        if ((i % 7) == 0) {
            ASSERT_EQ(UCS_OK, uct_iface_fence(m_a.iface, 0));
        }
    }
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == n; }));
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t hdr;
        ASSERT_EQ(sizeof(hdr), m_b.am.msgs[i].size());
        memcpy(&hdr, m_b.am.msgs[i].data(), sizeof(hdr));
        EXPECT_EQ(i, hdr);
    }
    for (uint64_t s = 0; s < 64; ++s) {
        uint64_t v, last = s + ((n - 1 - s) / 64) * 64;
        memcpy(&v, r.buf.data() + sizeof(v) * s, sizeof(v));
        EXPECT_EQ(last, v) << "slot " << s;
    }
    unreg(r);
}

TEST_P(ep_ops, get_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    region r;
    reg(r, 1 << 20);
    auto src = pattern(r.buf.size(), 9);
    r.buf    = src; /* same storage size: the registration stays valid */

    std::vector<uint8_t> got;
    test_comp            c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(m_ep, unpack_cb, &got, 8000, addr(r, 123),
                               r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    ASSERT_EQ(8000u, got.size());
    EXPECT_EQ(0, memcmp(got.data(), src.data() + 123, 8000));

    std::vector<uint8_t> dst(500000, 0);
    uct_mem_h            dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, dst.data(), dst.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov[2] = {{dst.data(), 1000, dm, 0, 1},
                        {dst.data() + 2000, 400000, dm, 0, 1}};
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(m_ep, iov, 2, addr(r, 7), r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp(dst.data(), src.data() + 7, 1000));
    EXPECT_EQ(0, memcmp(dst.data() + 2000, src.data() + 1007, 400000));
    EXPECT_EQ(0, dst[1000]);
    EXPECT_EQ(0, dst[1999]);
    uct_md_mem_dereg(m_md, dm);
    unreg(r);
}

TEST_P(ep_ops, atomics_32_and_64)
{
    open_pair();
    check_all_atomics();
}

/* UCP flushes from a pending request: the flush must not wait for the
 * pending queue that holds the very request calling it */
TEST_P(ep_ops, flush_called_from_a_pending_request)
{
    set_tl_env("TX_QUEUE_LEN", "16");
    open_pair();
    int          sent = 0;
    ucs_status_t status;
    while ((status = uct_ep_am_short(m_ep, 5, sent, nullptr, 0)) == UCS_OK) {
        ++sent;
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);

    struct pend {
        uct_pending_req_t uct;
        uct_ep_h          ep;
        test_comp         comp;
        int               posted;
    } p  = {};
    p.ep = m_ep;
    comp_init(&p.comp);
    p.uct.func = [](uct_pending_req_t *self) -> ucs_status_t {
        auto        *pp = ucs_container_of(self, pend, uct);
        ucs_status_t s  = uct_ep_flush(pp->ep, 0, &pp->comp.uct);
        if (s == UCS_OK) {
            pp->comp.done = 1;
        }
        pp->posted |= (s != UCS_ERR_NO_RESOURCE);
        return (s == UCS_ERR_NO_RESOURCE) ? s : UCS_OK;
    };
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &p.uct, 0));
    ASSERT_TRUE(progress_until([&] { return p.comp.done != 0; }, 5));
    EXPECT_EQ(UCS_OK, p.comp.status);
    /* everything posted before the flush arrived first */
    ASSERT_TRUE(
            progress_until([&] { return m_b.am.msgs.size() == (size_t)sent; }));
    EXPECT_EQ((uint64_t)sent - 1, *(uint64_t *)m_b.am.msgs.back().data());
}

/* A large GET through a lossy fabric: a lost response makes the send
 * queue (a DCI, an RC QP) ask again for the rest of the READ only, so it
 * completes (asking for all of it again would lose some response every
 * time). */
TEST_P(ep_ops, large_get_through_packet_loss)
{
    set_env("STRAND_SIM_FAULTS", "drop=0.02,seed=5");
    set_tl_env("TIMEOUT", "20ms");
    ASSERT_EQ(UCS_OK, open_md());
    open_pair();

    region r;
    reg(r, 4 << 20);
    auto src = pattern(r.buf.size(), 12);
    memcpy(r.buf.data(), src.data(), src.size());
    std::vector<uint8_t> dst(r.buf.size(), 0);
    uct_mem_h            dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, dst.data(), dst.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {dst.data(), dst.size(), dm, 0, 1};
    for (int round = 0; round < 3; ++round) {
        test_comp c;
        comp_init(&c);
        memset(dst.data(), 0, dst.size());
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep, &iov, 1, addr(r),
                                                   r.rkey.rkey, &c.uct));
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }, 30));
        ASSERT_EQ(UCS_OK, c.status) << "round " << round;
        EXPECT_EQ(src, dst) << "round " << round;
    }
    uct_md_mem_dereg(m_md, dm);
    unreg(r);
}

/* Two senders into one interface through a fabric that delays packets: a long
 * SEND holding an earlier receive WQE completes after a short one that took
 * a later WQE, so receive WQEs come back out of order; every message still
 * arrives once, intact and in order per sender. */
TEST_P(ep_ops, receive_wqes_completing_out_of_order)
{
    set_env("STRAND_SIM_FAULTS", "delay=0.2:30000,seed=9");
    ASSERT_EQ(UCS_OK, open_md());
    set_tl_env("RX_QUEUE_LEN", "127"); /* a full list: 128 WQEs */
    open_pair();
    iface_t a2;
    ASSERT_EQ(UCS_OK, open_iface(a2));
    uct_ep_h ep2 = connect(a2, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    const int rounds = 300;
    for (int i = 0; i < rounds; ++i) {
        auto big = pattern(8000, i);
        big[0]   = 1; /* sender 1 */
        memcpy(&big[1], &i, sizeof(i));
        ssize_t ret;
        ASSERT_TRUE(progress_until([&] {
            ret = uct_ep_am_bcopy(m_ep, 5, pack_cb, &big, 0);
            return ret != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ((ssize_t)big.size(), ret);
        uint64_t hdr = (2ull << 56) | i; /* sender 2 */
        ASSERT_EQ(UCS_OK, am_short_retry(ep2, hdr));
    }
    ASSERT_TRUE(
            progress_until([&] { return m_b.am.msgs.size() == 2u * rounds; },
                           60))
            << m_b.am.msgs.size() << " of " << 2 * rounds;
    int next1 = 0, next2 = 0;
    for (auto &m : m_b.am.msgs) {
        if (m.size() == 8000) {
            int seq;
            memcpy(&seq, &m[1], sizeof(seq));
            ASSERT_EQ(next1, seq);
            auto expect = pattern(8000, seq);
            EXPECT_EQ(0, memcmp(expect.data() + 5, m.data() + 5, 8000 - 5))
                    << "message " << seq;
            ++next1;
        } else {
            ASSERT_EQ(8u, m.size());
            uint64_t hdr;
            memcpy(&hdr, m.data(), sizeof(hdr));
            ASSERT_EQ((2ull << 56) | next2, hdr);
            ++next2;
        }
    }
    EXPECT_EQ(rounds, next1);
    EXPECT_EQ(rounds, next2);
    uct_ep_destroy(ep2);
    m_eps.pop_back();
    uct_iface_close(a2.iface);
}

STRAND_UCT_INSTANTIATE(ep_ops);

/*
 * Spec 9 (atomic reply endianness per size): the HCA's 8-byte mode decides
 * how 64-bit replies land; 32-bit masked replies are big-endian in either
 * mode. Every fetching atomic of both sizes, and cswap, in both modes. A
 * transport that applies the 8-byte mode to both sizes reads every 32-bit
 * reply byte-swapped in host mode (the default of ConnectX and of the
 * software device).
 * The parameter: the transport, the mode (STRAND_SIM_CAPS atomic_mode8b).
 */
class atomic_modes
    : public strand_uct,
      public ::testing::WithParamInterface<std::tuple<const char *, int>> {
protected:
    void SetUp() override
    {
        m_tl = std::get<0>(GetParam());
        /* the device reads its capabilities when the MD opens it */
        m_caps = "atomic_mode8b=" + std::to_string(std::get<1>(GetParam()));
        set_env("STRAND_SIM_CAPS", m_caps.c_str());
        strand_uct::SetUp();
    }

    std::string m_caps;
};

TEST_P(atomic_modes, every_fetching_atomic_of_both_sizes)
{
    open_pair();
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1)); /* rc_strand: connected */
    check_all_atomics();
}

static std::string atomic_mode_name(
        const ::testing::TestParamInfo<std::tuple<const char *, int>> &info)
{
    return std::string(std::get<0>(info.param)) + "_mode8b_" +
           std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(dc_strand, atomic_modes,
                         ::testing::Combine(::testing::Values("dc_strand"),
                                            ::testing::Values(0, 1)),
                         atomic_mode_name);
INSTANTIATE_TEST_SUITE_P(rc_strand, atomic_modes,
                         ::testing::Combine(::testing::Values("rc_strand"),
                                            ::testing::Values(0, 1)),
                         atomic_mode_name);
