/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dc_strand alone does, through UCX's public UCT API: its addresses
 * (the DCT), its configuration, DCIs shared by endpoints and their TX
 * policies, flow control (rc_strand has none), destinations that do not
 * answer holding only their own DCI, a DCI in error. What both transports
 * do is tested on both (test_ep_ops.cc, test_ep_failure.cc).
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
    EXPECT_TRUE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t *)m_b.dev_addr.data(),
            (const uct_iface_addr_t *)m_b.iface_addr.data()));
    /* another fabric: a different subnet prefix (IB) or GID prefix (RoCE):
     * the software device puts its fabric there */
    std::vector<uint8_t> other = m_b.dev_addr;
    other[5] ^= 0x5a;
    EXPECT_FALSE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t *)other.data(),
            (const uct_iface_addr_t *)m_b.iface_addr.data()));
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
    region   r;
    reg(r, 64);

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 1, nullptr, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep2, 5, 2, nullptr, 0));
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(ep2, &v, sizeof(v), addr(r), r.rkey.rkey));
    ASSERT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    uint64_t w = 8;
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep2, 5, 3, nullptr, 0));
    EXPECT_EQ(UCS_OK,
              uct_ep_put_short(ep2, &w, sizeof(w), addr(r), r.rkey.rkey));
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

TEST_F(dc_strand, pending_and_flush_with_one_dci_and_a_short_queue)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_TX_QUEUE_LEN", "16");
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    /* fill the one DCI from ep 1: ep 2 gets no resource, goes pending */
    uint64_t     hdr  = 1;
    int          sent = 0;
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
    ASSERT_TRUE(progress_until(
            [&] { return m_b.am.msgs.size() == (size_t)sent + 1; }));
    EXPECT_EQ(2u, *(uint64_t *)m_b.am.msgs.back().data());
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_a.iface, 0, nullptr));
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* Receiver flow control: without the receiver's progress a sender stops
 * after one window of active messages; the receiver's progress grants the
 * next window, and a request left pending meanwhile runs then. */
TEST_F(dc_strand, flow_control_window_and_grant)
{
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "64");
    open_pair_own_workers();

    /* only the sender progresses: exactly one window goes out */
    uint64_t     seq = 0;
    ucs_status_t status;
    auto         deadline = std::chrono::steady_clock::now() +
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
        EXPECT_EQ(i, *(uint64_t *)m_b.am.msgs[i].data());
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

    const int                     n = 300;
    std::vector<am_short_pending> reqs(2 * n);
    int                           queued = 0;
    for (int i = 0; i < 2 * n; ++i) {
        am_short_pending &p = reqs[i];
        p.ep                = (i % 2) ? back : m_ep;
        p.seq               = i;
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
                    p.done         = (s == UCS_OK);
                    return s != UCS_ERR_NO_RESOURCE;
                }));
            } else {
                ASSERT_EQ(UCS_OK, status);
                ++queued;
            }
        }
    }
    ASSERT_TRUE(progress_until(
            [&] {
                return (m_a.am.msgs.size() == (size_t)n) &&
                       (m_b.am.msgs.size() == (size_t)n);
            },
            20))
            << "a got " << m_a.am.msgs.size() << ", b got "
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
        ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }, 30))
                << vfs_read(m_a, "dci_pool");
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
    ASSERT_TRUE(progress_until([&] { return m_a.err.errors.size() == 2; }, 30));

    unsigned    qpn = 0, resets = 0;
    std::string pool = vfs_read(m_a, "dci_pool");
    ASSERT_EQ(2, sscanf(strstr(pool.c_str(), "dci 0 ") ?: "",
                        "dci 0 qpn %x state %*s outstanding %*u users %*u "
                        "errored %*u flushed %*u resets %u",
                        &qpn, &resets))
            << pool;
    EXPECT_EQ(1u, resets) << pool;
    /* asynchronous: it may come a moment after the error CQEs */
    std::string events;
    progress_until(
            [&] { return !(events = vfs_read(m_a, "async_events")).empty(); },
            5);
    char expect[128];
    snprintf(expect, sizeof(expect), "%s 1 qpn 0x%x\n",
             ibv_event_type_str(IBV_EVENT_QP_FATAL), qpn);
    EXPECT_EQ(expect, events);
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 7));
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
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

/* ep_ops.short_posts_of_every_length_across_the_ring_end through one DCI
 * that takes every post: its ring wraps again and again */
TEST_F(dc_strand, short_posts_of_every_length_through_one_dci)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    check_short_posts();
}
