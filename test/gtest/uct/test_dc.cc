/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand through UCX's public UCT API: active messages, PUT, GET and
 * device atomics checked byte for byte; flush, pending, reachability,
 * configuration errors, and peer failure confined to one ep.
 */
#include "dc_fixture.h"

#include <algorithm>

#include <infiniband/verbs.h>

extern "C" ucs_status_t uct_ep_invalidate(uct_ep_h ep, unsigned flags);

TEST_F(dc_strand, capabilities_and_addresses)
{
    open_pair();
    const uct_iface_attr_t &a = m_a.attr;
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_CB_SYNC);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    EXPECT_EQ(185u, a.cap.am.max_short);
    EXPECT_EQ(8255u, a.cap.am.max_bcopy);
    /* flags, then LID and subnet prefix on InfiniBand, the GID on RoCE
     * (the mode the device runs in) */
    ASSERT_FALSE(m_a.dev_addr.empty());
    EXPECT_EQ((m_a.dev_addr[0] & 1) ? 17u : 11u, a.device_addr_len);
    /* the DCT number and flags (tag matching: off) */
    EXPECT_EQ(4u, a.iface_addr_len);
    EXPECT_EQ(0, m_a.iface_addr[3]);
    EXPECT_NE(m_a.iface_addr, m_b.iface_addr); /* two DCTs */
    EXPECT_TRUE(uct_iface_is_reachable(m_a.iface,
                (const uct_device_addr_t*)m_b.dev_addr.data(),
                (const uct_iface_addr_t*)m_b.iface_addr.data()));
    /* another fabric: a different subnet prefix (IB) or GID prefix (RoCE):
     * the software device puts its fabric there */
    std::vector<uint8_t> other = m_b.dev_addr;
    other[5] ^= 0x5a;
    EXPECT_FALSE(uct_iface_is_reachable(m_a.iface,
                 (const uct_device_addr_t*)other.data(),
                 (const uct_iface_addr_t*)m_b.iface_addr.data()));
}

TEST_F(dc_strand, am_short_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    /* short: header + payload up to the limit */
    uint64_t hdr = 0x0123456789abcdefull;
    auto small   = pattern(m_a.attr.cap.am.max_short - sizeof(hdr), 1);
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
    for (size_t len : {(size_t)1, (size_t)4000, (size_t)m_a.attr.cap.am.max_bcopy}) {
        auto data = pattern(len, 2);
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
    auto h  = pattern(40, 3);
    auto d1 = pattern(3000, 4), d2 = pattern(5000, 5);
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
    })) << "done " << c.done << " msgs " << m_b.am.msgs.size();
    std::vector<uint8_t> expect = h;
    expect.insert(expect.end(), d1.begin(), d1.end());
    expect.insert(expect.end(), d2.begin(), d2.end());
    EXPECT_EQ(expect, m_b.am.msgs[0]);
    /* an iov without a memory handle: the transport registers it */
    uct_iov_t iov_nomemh = {d1.data(), d1.size(), UCT_MEM_HANDLE_NULL, 0, 1};
    comp_init(&c);
    m_b.am.msgs.clear();
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 5, h.data(), 8,
                                              &iov_nomemh, 1, 0, &c.uct));
    ASSERT_TRUE(progress_until([&] {
        return c.done && (m_b.am.msgs.size() == 1);
    }));
    EXPECT_EQ(0, memcmp(m_b.am.msgs[0].data() + 8, d1.data(), d1.size()));
    uct_md_mem_dereg(m_md, m1);
    uct_md_mem_dereg(m_md, m2);
}

TEST_F(dc_strand, small_active_messages_come_in_the_cqe)
{
    check_am_in_cqe("UCX_DC_STRAND_");
}

TEST_F(dc_strand, short_posts_of_every_length_across_the_ring_end)
{
    check_short_posts("UCX_DC_STRAND_");
    /* one DCI takes every post: its ring wraps again and again */
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    check_short_posts("UCX_DC_STRAND_");
}

TEST_F(dc_strand, put_short_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    region r;
    reg(r, 1 << 20);

    auto s = pattern(m_a.attr.cap.put.max_short, 6);
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, s.data(), s.size(), addr(r, 8),
                                       r.rkey.rkey));
    auto b = pattern(m_a.attr.cap.put.max_bcopy, 7);
    ssize_t ret = uct_ep_put_bcopy(m_ep, pack_cb, &b, addr(r, 4096),
                                   r.rkey.rkey);
    ASSERT_EQ((ssize_t)b.size(), ret);
    auto z = pattern(300000, 8);
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
TEST_F(dc_strand, short_operations_around_fences)
{
    const uint64_t n = 300;
    ucs_status_t status;
    region r;

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

/* An ep invalidated while its short operations are outstanding on a DCI
 * it shares (the DCI stays up: another ep's work is on it, so nothing but
 * the ep's own failure changes): its very next operations are taken
 * (UCS_OK, as UCX's mlx5 transports take them until the error handler
 * ran) but never posted; the handler runs from progress; the other ep
 * goes on. */
TEST_F(dc_strand, invalidate_takes_the_next_short_posts_without_sending_them)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);
    uint64_t v = 7;
    region r;
    reg(r, 64);

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 1, nullptr, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep2, 5, 2, nullptr, 0));
    ASSERT_EQ(UCS_OK, uct_ep_put_short(ep2, &v, sizeof(v), addr(r),
                                       r.rkey.rkey));
    ASSERT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    uint64_t w = 8;
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep2, 5, 3, nullptr, 0));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(ep2, &w, sizeof(w), addr(r),
                                       r.rkey.rkey));
    EXPECT_TRUE(m_a.err.errors.empty()) << "told inside a call";
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }));
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(ep2, 5, 3, nullptr, 0))
            << "told: every operation fails";
    EXPECT_EQ(ep2, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_CANCELED, m_a.err.errors[0].second);
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 4));
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] {
        return std::count_if(m_b.am.msgs.begin(), m_b.am.msgs.end(),
                             [](const std::vector<uint8_t> &m) {
                                 return m[0] == 1 || m[0] == 4;
                             }) == 2;
    }));
    for (auto &m : m_b.am.msgs) {
        EXPECT_NE(3, m[0]) << "an operation of the invalidated ep was sent";
    }
    uint64_t got;
    memcpy(&got, r.buf.data(), sizeof(got));
    EXPECT_NE(w, got) << "a PUT of the invalidated ep landed";
    EXPECT_EQ(1u, m_a.err.errors.size());
    unreg(r);
}

TEST_F(dc_strand, get_bcopy_zcopy_byte_for_byte)
{
    open_pair();
    region r;
    reg(r, 1 << 20);
    auto src = pattern(r.buf.size(), 9);
    r.buf    = src; /* same storage size: the registration stays valid */

    std::vector<uint8_t> got;
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(m_ep, unpack_cb, &got, 8000, addr(r, 123),
                               r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    ASSERT_EQ(8000u, got.size());
    EXPECT_EQ(0, memcmp(got.data(), src.data() + 123, 8000));

    std::vector<uint8_t> dst(500000, 0);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, dst.data(), dst.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov[2] = {{dst.data(), 1000, dm, 0, 1},
                        {dst.data() + 2000, 400000, dm, 0, 1}};
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep, iov, 2, addr(r, 7),
                                               r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp(dst.data(), src.data() + 7, 1000));
    EXPECT_EQ(0, memcmp(dst.data() + 2000, src.data() + 1007, 400000));
    EXPECT_EQ(0, dst[1000]);
    EXPECT_EQ(0, dst[1999]);
    uct_md_mem_dereg(m_md, dm);
    unreg(r);
}

TEST_F(dc_strand, atomics_32_and_64)
{
    open_pair();
    check_all_atomics();
}

TEST_F(dc_strand, pending_and_flush_with_one_dci_and_a_short_queue)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_TX_QUEUE_LEN", "16");
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    /* fill the one DCI from ep 1: ep 2 gets no resource, goes pending */
    uint64_t hdr = 1;
    int sent     = 0;
    ucs_status_t status;
    while ((status = uct_ep_am_short(m_ep, 5, hdr, nullptr, 0)) == UCS_OK) {
        ++sent;
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    EXPECT_GE(sent, 1);
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep2, 5, 2, nullptr, 0));

    am_short_pending p;
    p.ep  = ep2;
    p.seq = 2;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep2, &p.uct, 0));
    ASSERT_TRUE(progress_until([&] { return p.done != 0; }));
    flush(ep2);
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] {
        return m_b.am.msgs.size() == (size_t)sent + 1;
    }));
    EXPECT_EQ(2u, *(uint64_t*)m_b.am.msgs.back().data());
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_a.iface, 0, nullptr));
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* UCP flushes from a pending request: the flush must not wait for the
 * pending queue that holds the very request calling it */
TEST_F(dc_strand, flush_called_from_a_pending_request)
{
    set_env("UCX_DC_STRAND_TX_QUEUE_LEN", "16");
    open_pair();
    int sent = 0;
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
    } p = {};
    p.ep = m_ep;
    comp_init(&p.comp);
    p.uct.func = [](uct_pending_req_t *self) -> ucs_status_t {
        auto *pp = ucs_container_of(self, pend, uct);
        ucs_status_t s = uct_ep_flush(pp->ep, 0, &pp->comp.uct);
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
    ASSERT_TRUE(progress_until([&] {
        return m_b.am.msgs.size() == (size_t)sent;
    }));
    EXPECT_EQ((uint64_t)sent - 1, *(uint64_t*)m_b.am.msgs.back().data());
}

/* Receiver flow control: without the receiver's progress a sender stops
 * after one window of active messages; the receiver's progress grants the
 * next window, and a request left pending meanwhile runs then. */
TEST_F(dc_strand, flow_control_window_and_grant)
{
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "64");
    open_pair_own_workers();

    /* only the sender progresses: exactly one window goes out */
    uint64_t seq = 0;
    ucs_status_t status;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < deadline) {
        status = uct_ep_am_short(m_ep, 5, seq, nullptr, 0);
        if (status == UCS_OK) {
            ++seq;
        } else {
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
        }
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ(64u, seq);
    EXPECT_TRUE(m_b.am.msgs.empty());

    /* a request waits for credits, not for a DCI */
    am_short_pending p;
    p.ep  = m_ep;
    p.seq = seq;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &p.uct, 0));

    /* the receiver drains its queue and grants: the request goes out */
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return p.done && (m_b.am.msgs.size() == seq + 1);
    }));
    for (uint64_t i = 0; i <= seq; ++i) {
        EXPECT_EQ(i, *(uint64_t*)m_b.am.msgs[i].data());
    }
    /* and the next window is open */
    EXPECT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, seq + 1, nullptr, 0));
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == seq + 2;
    }));
    EXPECT_TRUE(m_a.err.errors.empty());
    EXPECT_TRUE(m_b.err.errors.empty());
}

/* Two ifaces with one DCI each flood each other through pending queues
 * with a tiny credit window: an ep waiting for credits must not hold up
 * the grant its peer waits for (a deadlock otherwise). */
TEST_F(dc_strand, flow_control_both_ways_with_one_dci)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "4");
    open_pair();
    uct_ep_h back = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    ASSERT_NE(nullptr, back);

    const int n = 300;
    std::vector<am_short_pending> reqs(2 * n);
    int queued = 0;
    for (int i = 0; i < 2 * n; ++i) {
        am_short_pending &p = reqs[i];
        p.ep  = (i % 2) ? back : m_ep;
        p.seq = i;
        ucs_status_t status = uct_ep_am_short(p.ep, 5, p.seq, nullptr, 0);
        if (status == UCS_OK) {
            p.done = 1;
        } else {
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
            /* the pending queue keeps the order behind earlier requests */
            status = uct_ep_pending_add(p.ep, &p.uct, 0);
            if (status == UCS_ERR_BUSY) {
                ASSERT_TRUE(progress_until([&] {
                    ucs_status_t s = uct_ep_am_short(p.ep, 5, p.seq, nullptr,
                                                     0);
                    p.done = (s == UCS_OK);
                    return s != UCS_ERR_NO_RESOURCE;
                }));
            } else {
                ASSERT_EQ(UCS_OK, status);
                ++queued;
            }
        }
    }
    ASSERT_TRUE(progress_until([&] {
        return (m_a.am.msgs.size() == (size_t)n) &&
               (m_b.am.msgs.size() == (size_t)n);
    }, 20)) << "a got " << m_a.am.msgs.size() << ", b got "
            << m_b.am.msgs.size() << " of " << n << " (" << queued
            << " went pending)";
    EXPECT_GT(queued, 0);
    EXPECT_TRUE(m_a.err.errors.empty());
    EXPECT_TRUE(m_b.err.errors.empty());
}

/* With flow control off, the same sender is limited by its send queue
 * only: well past a window while the receiver does not progress. */
TEST_F(dc_strand, flow_control_off)
{
    set_env("UCX_DC_STRAND_FC_ENABLE", "n");
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "16");
    open_pair_own_workers();
    uint64_t seq = 0;
    for (; seq < 100; ++seq) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, seq, nullptr, 0, 2))
            << "stuck after " << seq;
    }
    EXPECT_TRUE(m_b.am.msgs.empty());
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == seq;
    }));
}

/* Event fd: armed for receives, it wakes on an arriving message; armed
 * for send completions, on the completion; arming with unprocessed
 * completions says busy. */
TEST_F(dc_strand, event_fd_and_arm)
{
    open_pair_own_workers();
    ASSERT_TRUE(m_b.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV);
    ASSERT_TRUE(m_a.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_SEND_COMP);
    ASSERT_TRUE(m_a.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);

    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "an event before anything was sent";

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 42, nullptr, 0));
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no receive event";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 1;
    }));
    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "a stale event after re-arming";
    flush(m_ep);

    /* send completion of a zero-copy PUT */
    region r;
    reg(r, 4096);
    std::vector<uint8_t> src = pattern(4096, 9);
    uct_mem_h sm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, src.data(), src.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &sm));
    uct_iov_t iov = {src.data(), src.size(), sm, 0, 1};
    test_comp c;
    comp_init(&c);
    /* every interface has a channel of its own */
    int fd_a;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_a.iface, &fd_a));
    EXPECT_NE(fd, fd_a);
    struct pollfd pfd_a = {fd_a, POLLIN, 0};
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_a.iface, UCT_EVENT_SEND_COMP));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep, &iov, 1, addr(r),
                                               r.rkey.rkey, &c.uct));
    ASSERT_EQ(1, poll(&pfd_a, 1, 5000)) << "no send completion event";
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "the receiver woke for a send event";
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(0, memcmp(r.buf.data(), src.data(), src.size()));
    uct_md_mem_dereg(m_md, sm);
    unreg(r);

}

/* A large GET through a lossy fabric: a lost response makes the DCI ask
 * again for the rest of the READ only, so it completes (asking for all of
 * it again would lose some response every time). */
TEST_F(dc_strand, large_get_through_packet_loss)
{
    set_env("STRAND_SIM_FAULTS", "drop=0.02,seed=5");
    set_env("UCX_DC_STRAND_TIMEOUT", "20ms");
    ASSERT_EQ(UCS_OK, open_md());
    open_pair();

    region r;
    reg(r, 4 << 20);
    auto src = pattern(r.buf.size(), 12);
    memcpy(r.buf.data(), src.data(), src.size());
    std::vector<uint8_t> dst(r.buf.size(), 0);
    uct_mem_h dm;
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

/* Two senders into one DCT through a fabric that delays packets: a long
 * SEND holding an earlier receive WQE completes after a short one that took
 * a later WQE, so receive WQEs come back out of order; every message still
 * arrives once, intact and in order per sender. */
TEST_F(dc_strand, receive_wqes_completing_out_of_order)
{
    set_env("STRAND_SIM_FAULTS", "delay=0.2:30000,seed=9");
    ASSERT_EQ(UCS_OK, open_md());
    set_env("UCX_DC_STRAND_RX_QUEUE_LEN", "127"); /* a full list: 128 WQEs */
    open_pair();
    iface_t a2;
    ASSERT_EQ(UCS_OK, open_iface(a2));
    uct_ep_h ep2 = connect(a2, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    const int rounds = 300;
    for (int i = 0; i < rounds; ++i) {
        auto big = pattern(8000, i);
        big[0] = 1; /* sender 1 */
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
    ASSERT_TRUE(progress_until([&] {
        return m_b.am.msgs.size() == 2u * rounds;
    }, 60)) << m_b.am.msgs.size() << " of " << 2 * rounds;
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

TEST_F(dc_strand, peer_failure_fails_only_that_ep)
{
    set_env("STRAND_SIM_TIMEOUT_NS", "2000000");
    set_env("UCX_DC_STRAND_RETRY_COUNT", "1");
    open_pair();
    /* an ep to a DCT number nobody has */
    std::vector<uint8_t> dead = m_b.iface_addr;
    dead[2] ^= 0x40;
    uct_ep_h bad = connect(m_a, m_b.dev_addr, dead);
    ASSERT_NE(nullptr, bad);

    test_comp c;
    comp_init(&c);
    auto data = pattern(64, 10);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, data.data(), data.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {data.data(), data.size(), dm, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(bad, 5, nullptr, 0, &iov, 1, 0,
                                              &c.uct));
    /* the good ep keeps working meanwhile */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 77, nullptr, 0));
    ASSERT_TRUE(progress_until([&] {
        return c.done && !m_a.err.errors.empty();
    }, 30));
    EXPECT_NE(UCS_OK, c.status);
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(bad, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_a.err.errors[0].second);

    /* the DCI came back: the good ep still sends */
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1000 + i));
    }
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 101; }));
    EXPECT_EQ(1099u, *(uint64_t*)m_b.am.msgs.back().data());
    EXPECT_EQ(1u, m_a.err.errors.size());
    uct_md_mem_dereg(m_md, dm);
}

/* Streams over two DCIs and a timeout of about 4 s, the pair opened, and a
 * destination that never answers (a DCT number nobody has). */
class dc_strand_dead_dest : public dc_strand {
protected:
    void open_with_dead_destination()
    {
        set_env("UCX_DC_STRAND_TX_POLICY", "streams");
        set_env("UCX_DC_STRAND_NUM_DCI", "2");
        set_env("UCX_DC_STRAND_TIMEOUT", "1s");
        set_env("UCX_DC_STRAND_RETRY_COUNT", "3");
        open_pair();
        m_dead_addr = m_b.iface_addr;
        m_dead_addr[2] ^= 0x40;
    }

    /* the eps to the dead destination fail, and nothing else does */
    void expect_only_dead_eps_fail(const uct_ep_h *dead, size_t count)
    {
        ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); },
                                   30)) << vfs_read(m_a, "dci_pool");
        for (auto &e : m_a.err.errors) {
            EXPECT_NE(dead + count, std::find(dead, dead + count, e.first));
            EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, e.second);
        }
    }

    std::vector<uint8_t> m_dead_addr;
};

/* A DCI completes in send-queue order, so a WQE to a destination that
 * does not answer holds back the completions of every later WQE on its DCI
 * until it times out. Under streams, eps of one destination keep to DCIs
 * of their own where they can: leased in the order dead, good, good, dead
 * over two DCIs, the good eps share one DCI (the least-leased rule alone
 * put the second good ep next to the first dead one) and complete all
 * their work while the dead destination's eps are still retrying. */
TEST_F(dc_strand_dead_dest, a_dead_destination_holds_only_its_own_dci)
{
    open_with_dead_destination();
    uct_ep_h dead[2], good[2];
    dead[0] = connect(m_a, m_b.dev_addr, m_dead_addr);
    good[0] = m_ep;
    good[1] = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    dead[1] = connect(m_a, m_b.dev_addr, m_dead_addr);
    for (auto ep : {dead[0], good[0], good[1], dead[1]}) {
        ASSERT_NE(nullptr, ep);
        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, 5, 1, nullptr, 0));
    }
    for (uint64_t i = 0; i < 20; ++i) {
        for (auto ep : good) {
            ASSERT_EQ(UCS_OK, am_short_retry(ep, 100 + i));
        }
    }
    for (auto ep : good) {
        flush(ep);
    }
    /* every message of the good eps arrived, and their flushes completed
     * before the dead destination's eps failed (about 4 s) */
    EXPECT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 42; }, 1))
            << m_b.am.msgs.size() << " of 42 messages";
    EXPECT_TRUE(m_a.err.errors.empty())
            << "the good eps waited for the dead destination's timeout";
    expect_only_dead_eps_fail(dead, 2);
}

/* A DCI left empty by a destination whose eps went quiet stays that
 * destination's: an ep of another destination whose own DCI is full waits
 * for room there instead of taking it, so when the quiet destination
 * sends again it finds its DCI free of the other's (here: dead) traffic. */
TEST_F(dc_strand_dead_dest, a_quiet_destination_keeps_its_dci)
{
    set_env("UCX_DC_STRAND_TX_QUEUE_LEN", "16");
    open_with_dead_destination();
    uct_ep_h dead[2];
    dead[0] = connect(m_a, m_b.dev_addr, m_dead_addr);
    dead[1] = connect(m_a, m_b.dev_addr, m_dead_addr);
    ASSERT_NE(nullptr, dead[0]);
    ASSERT_NE(nullptr, dead[1]);

    /* the good destination's DCI, then quiet: empty */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 1, nullptr, 0));
    flush(m_ep);
    /* the dead destination fills the other DCI */
    unsigned sent = 0;
    while (uct_ep_am_short(dead[0], 5, 2, nullptr, 0) == UCS_OK) {
        ASSERT_LT(++sent, 100u);
    }
    EXPECT_GT(sent, 0u);
    /* its second ep waits for that DCI's room */
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(dead[1], 5, 3, nullptr, 0));
    /* the good destination finds its DCI as it left it */
    for (uint64_t i = 0; i < 20; ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 100 + i));
    }
    flush(m_ep);
    EXPECT_TRUE(m_a.err.errors.empty())
            << "the good ep waited for the dead destination's timeout";
    EXPECT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 21; }, 1))
            << m_b.am.msgs.size() << " of 21 messages";
    expect_only_dead_eps_fail(dead, 2);
}

/* A DCI whose errored streams reach 2^log_num_errored goes to ERR and
 * raises IBV_EVENT_QP_FATAL (spec section 5); the transport reads it
 * (rdma-core wants every async event read and acknowledged) and counts it
 * against the DCI's QPN, and recovers the DCI from its CQEs all the same.
 * Two streams, two errored allowed, two dead destinations. */
TEST_F(dc_strand, dci_in_error_raises_an_async_event_that_is_read)
{
    set_env("UCX_DC_STRAND_TIMEOUT", "20ms");
    set_env("UCX_DC_STRAND_RETRY_COUNT", "1");
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_DCI_STREAMS", "2");
    set_env("UCX_DC_STRAND_DCI_STREAMS_ERRORED", "2");
    open_pair();
    EXPECT_EQ("", vfs_read(m_a, "async_events"));
    std::vector<uint8_t> dead1 = m_b.iface_addr, dead2 = m_b.iface_addr;
    dead1[2] ^= 0x40;
    dead2[2] ^= 0x20;
    uct_ep_h bad1 = connect(m_a, m_b.dev_addr, dead1);
    uct_ep_h bad2 = connect(m_a, m_b.dev_addr, dead2);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(bad1, 5, 1, nullptr, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(bad2, 5, 1, nullptr, 0));
    /* no progress while both time out in the device (its own thread runs
     * the timers; 2 tries of 20 ms rounded up to 33.6 ms): were the first
     * stream reset before the second failed, the DCI would never have two
     * errored streams at once */
    usleep(500000);
    ASSERT_TRUE(progress_until([&] { return m_a.err.errors.size() == 2; },
                               30));

    unsigned qpn = 0, resets = 0;
    std::string pool = vfs_read(m_a, "dci_pool");
    ASSERT_EQ(2, sscanf(strstr(pool.c_str(), "dci 0 ") ?: "",
                        "dci 0 qpn %x state %*s outstanding %*u users %*u "
                        "errored %*u flushed %*u resets %u", &qpn, &resets))
            << pool;
    EXPECT_EQ(1u, resets) << pool;
    /* asynchronous: it may come a moment after the error CQEs */
    std::string events;
    progress_until([&] {
        return !(events = vfs_read(m_a, "async_events")).empty();
    }, 5);
    char expect[128];
    snprintf(expect, sizeof(expect), "%s 1 qpn 0x%x\n",
             ibv_event_type_str(IBV_EVENT_QP_FATAL), qpn);
    EXPECT_EQ(expect, events);
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 7));
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
}

/* A PUT with a wrong rkey and a GET beyond the registered range: remote
 * access errors that fail exactly that ep (its later ops too), reach its
 * error handler once, and leave the other ep and the target memory alone. */
TEST_F(dc_strand, bad_rkey_fails_only_that_ep)
{
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);
    region r;
    reg(r, 4096);
    auto data = pattern(256, 11);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, data.data(), data.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {data.data(), data.size(), dm, 0, 1};

    test_comp c1, c2;
    comp_init(&c1);
    comp_init(&c2);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep, &iov, 1, addr(r),
                                               r.rkey.rkey ^ 0x5a00,
                                               &c1.uct));
    ASSERT_TRUE(progress_until([&] {
        return c1.done && !m_a.err.errors.empty();
    }));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, c1.status);
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_EQ(std::vector<uint8_t>(4096, 0), r.buf) << "memory was written";
    /* the failed ep refuses further work with its error */
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_am_short(m_ep, 5, 1, nullptr, 0));

    /* out of bounds through the other ep: its own error */
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(ep2, &iov, 1, addr(r, 4000),
                                               r.rkey.rkey, &c2.uct));
    ASSERT_TRUE(progress_until([&] {
        return c2.done && (m_a.err.errors.size() == 2);
    }));
    EXPECT_NE(UCS_OK, c2.status);
    EXPECT_EQ(ep2, m_a.err.errors[1].first);

    /* a fresh ep to the same peer works: nothing else was hurt */
    uct_ep_h ep3 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep3);
    ASSERT_EQ(UCS_OK, uct_ep_put_short(ep3, data.data(), 64, addr(r, 128),
                                       r.rkey.rkey));
    flush(ep3);
    EXPECT_EQ(0, memcmp(r.buf.data() + 128, data.data(), 64));
    EXPECT_EQ(2u, m_a.err.errors.size());
    uct_md_mem_dereg(m_md, dm);
    unreg(r);
}

TEST_F(dc_strand, bad_configuration_is_a_clear_error)
{
    uct_iface_config_t *config;
    set_env("UCX_DC_STRAND_NUM_DCI", "0");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_env("UCX_DC_STRAND_NUM_DCI", "8");
    set_env("UCX_DC_STRAND_MAX_INLINE", "100000");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_env("UCX_DC_STRAND_MAX_INLINE", "186");
    set_env("UCX_DC_STRAND_TIMEOUT", "not-a-time");
    EXPECT_NE(UCS_OK, uct_md_iface_config_read(m_md, "dc_strand", nullptr,
                                               nullptr, &config));
    unsetenv("UCX_DC_STRAND_TIMEOUT");
    EXPECT_EQ(UCS_OK, open_iface(m_a));
}
