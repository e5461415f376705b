/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What rc_strand alone does, through UCX's public UCT API: an interface
 * address and endpoints the transport connects itself (a QP per endpoint,
 * a responder QP at the peer), traffic that waits for the connection,
 * disconnects, peers that are not there, limits, wakeup by the connection
 * manager's messages. What both transports do is tested on both
 * (test_ep_ops.cc, test_ep_failure.cc, test_uct_contract.cc, ...).
 */
#include "uct_fixture.h"

/* strand_uct on rc_strand, and its connections */
class rc_strand : public strand_uct {
protected:
    void SetUp() override
    {
        m_tl = "rc_strand";
        strand_uct::SetUp();
    }

    /* "connecting N connected N failed N responders N peers N" of i's
     * VFS file */
    struct conns {
        unsigned connecting = ~0u, connected = ~0u, failed = ~0u;
        unsigned responders = ~0u, peers = ~0u;
    };

    conns connections(const iface_t &i)
    {
        conns       c;
        std::string text = vfs_read(i, "connections");
        sscanf(text.c_str(),
               "connecting %u connected %u failed %u "
               "responders %u peers %u",
               &c.connecting, &c.connected, &c.failed, &c.responders, &c.peers);
        return c;
    }

    bool connected(const iface_t &i, unsigned n)
    {
        return connections(i).connected == n;
    }

    /* B on a worker of its own whose interface answers connection
     * requests from its progress only (no async thread: as with
     * MLX5_SINGLE_THREADED=1), and an ep of A to it: it stays connecting
     * until B progresses */
    void open_pair_b_answers_when_progressed()
    {
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker_b));
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        set_env("MLX5_SINGLE_THREADED", "1");
        ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
        set_env("MLX5_SINGLE_THREADED", "0");
        m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, m_ep);
    }

    /* both workers */
    bool progress_both_until(const std::function<bool()> &cond)
    {
        return progress_with_until(
                [this] {
                    uct_worker_progress(m_worker);
                    uct_worker_progress(m_worker_b);
                },
                cond, 10);
    }
};

/* What UCP reads to wire it: an interface address, no endpoint address. */
TEST_F(rc_strand, connects_to_an_interface)
{
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    uint64_t flags = m_a.attr.cap.flags;
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_FALSE(flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    EXPECT_EQ(4u, m_a.attr.iface_addr_len);
    EXPECT_EQ(0u, m_a.attr.ep_addr_len);
    EXPECT_EQ(65535u, m_a.attr.max_num_eps); /* MAX_EPS */
    EXPECT_DOUBLE_EQ(1e-9, m_a.attr.latency.m);
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_AM_SHORT);
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_GET_ZCOPY);
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    EXPECT_TRUE(flags & UCT_IFACE_FLAG_EP_CHECK);
    EXPECT_FALSE(flags & UCT_IFACE_FLAG_TAG_EAGER_SHORT); /* no offload */

    /* dc_strand on the same device counts a DC connect packet more: UCP
     * prefers rc_strand where both are enabled */
    m_tl = "dc_strand";
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    EXPECT_NEAR(m_b.attr.latency.c - m_a.attr.latency.c, 60e-9, 1e-12);
}

/* A new ep takes work at once, as a QP wired when it was made would (what
 * UCX's uct suite and UCP expect of a new endpoint): the WQEs wait in its
 * queue, their doorbells held, until the connection manager has the
 * peer's QP; then A's async thread connects the QP and rings them, in
 * order, without A's progress (B is progressed alone: it answers the
 * request and receives). The peer made a responder QP for it. */
TEST_F(rc_strand, sends_go_before_the_connection_is_made)
{
    open_pair_b_answers_when_progressed();
    for (uint64_t seq = 1; seq <= 100; ++seq) {
        ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, seq, nullptr, 0));
    }
    conns c = connections(m_a);
    EXPECT_EQ(1u, c.connecting);
    EXPECT_EQ(0u, c.connected);
    ASSERT_TRUE(progress_with_until([&] { uct_worker_progress(m_worker_b); },
                                    [&] { return m_b.am.msgs.size() == 100; },
                                    10))
            << m_b.am.msgs.size() << " of 100 arrived without A's progress";
    for (uint64_t seq = 1; seq <= 100; ++seq) {
        uint64_t hdr;
        memcpy(&hdr, m_b.am.msgs[seq - 1].data(), sizeof(hdr));
        EXPECT_EQ(seq, hdr);
    }
    c = connections(m_a);
    EXPECT_EQ(0u, c.connecting);
    EXPECT_EQ(1u, c.connected);
    EXPECT_EQ(1u, c.peers);
    EXPECT_EQ(1u, connections(m_b).responders);
    EXPECT_EQ(0u, connections(m_b).connected); /* B has no ep of its own */
}

/* UCX's pending_ucs_ok_dc_arbiter_bug makes 128 eps in a row: while the
 * worker makes one (its QP held from the start), the async thread lets
 * the earlier ones' held QPs go as their answers come. Both count the
 * interface's held QPs (an assertion, once a lost update); each ep's
 * message, sent before its connection is made, arrives; once every one
 * is connected the interface is back on its direct operations (a count
 * left above 0 would keep the locked ones for good). */
TEST_F(rc_strand, eps_made_while_the_async_thread_connects_others)
{
    const unsigned n = 200;
    ASSERT_EQ(UCS_OK,
              uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker_b));
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
    auto direct = m_a.iface->ops.ep_am_short;

    for (uint64_t i = 0; i < n; ++i) {
        uct_ep_h ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, ep) << "ep " << i;
        ASSERT_EQ(UCS_OK,
                  retry([&] { return uct_ep_am_short(ep, 5, i, nullptr, 0); }))
                << "ep " << i;
    }
    ASSERT_TRUE(progress_both_until([&] {
        return (m_b.am.msgs.size() == n) && connected(m_a, n);
    })) << m_b.am.msgs.size()
        << " of " << n << " arrived, " << connections(m_a).connected
        << " connected";
    std::vector<bool> seen(n);
    for (auto &m : m_b.am.msgs) {
        uint64_t hdr;
        memcpy(&hdr, m.data(), sizeof(hdr));
        ASSERT_LT(hdr, n);
        EXPECT_FALSE(seen[hdr]) << "ep " << hdr << "'s message twice";
        seen[hdr] = true;
    }
    EXPECT_TRUE(progress_until([&] {
        return m_a.iface->ops.ep_am_short == direct;
    })) << "the interface keeps its locked operations";
}

/* Each direction has its own QP pair: both sides' eps, one responder each;
 * a destroyed ep's responder goes at the peer (DISC), the other stays. */
TEST_F(rc_strand, both_directions_and_disconnect)
{
    open_pair();
    uct_ep_h back = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    ASSERT_NE(nullptr, back);
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1));
    ASSERT_EQ(UCS_OK, am_short_retry(back, 2));
    ASSERT_TRUE(progress_until([&] {
        return (m_a.am.msgs.size() == 1) && (m_b.am.msgs.size() == 1);
    }));
    EXPECT_EQ(1u, connections(m_a).responders);
    EXPECT_EQ(1u, connections(m_b).responders);

    flush(m_ep);
    uct_ep_destroy(m_ep);
    m_eps.erase(m_eps.begin());
    m_ep = nullptr;
    EXPECT_TRUE(progress_until([&] {
        return connections(m_b).responders == 0;
    })) << vfs_read(m_b, "connections");
    EXPECT_EQ(1u, connections(m_a).responders); /* B's ep to A stays */
    ASSERT_EQ(UCS_OK, am_short_retry(back, 3));
    ASSERT_TRUE(progress_until([&] { return m_a.am.msgs.size() == 2; }));
}

/* An ep destroyed before the answer came: the answer disconnects it, and
 * the peer's responder goes too. */
TEST_F(rc_strand, destroyed_while_connecting)
{
    open_pair_b_answers_when_progressed();
    EXPECT_EQ(1u, connections(m_a).connecting);
    uct_ep_destroy(m_ep);
    m_eps.clear();
    m_ep = nullptr;
    EXPECT_EQ(1u, connections(m_a).connecting); /* waits for the answer */
    auto both = [&] {
        uct_worker_progress(m_worker_b);
        return (connections(m_a).connecting == 0) &&
               (connections(m_b).responders == 0);
    };
    /* B makes its responder and answers, A disconnects it, B drops it */
    bool made = false;
    EXPECT_TRUE(progress_until([&] {
        made |= connections(m_b).responders == 1;
        return both();
    })) << vfs_read(m_a, "connections")
        << vfs_read(m_b, "connections");
    EXPECT_TRUE(made);
}

/* Many eps to one peer: one manager endpoint carries all their requests;
 * MAX_EPS eps at most, the next one is refused with a readable status. */
TEST_F(rc_strand, max_eps)
{
    set_env("UCX_RC_STRAND_MAX_EPS", "4");
    open_pair();
    EXPECT_EQ(4u, m_a.attr.max_num_eps);
    for (int i = 0; i < 3; ++i) {
        ASSERT_NE(nullptr, connect(m_a, m_b.dev_addr, m_b.iface_addr));
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              create_ep(m_a, m_b.dev_addr, m_b.iface_addr));
    for (size_t i = 0; i < m_eps.size(); ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_eps[i], i));
    }
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 4; }));
    conns c = connections(m_a);
    EXPECT_EQ(4u, c.connected);
    EXPECT_EQ(1u, c.peers);
    EXPECT_EQ(4u, connections(m_b).responders);
}

TEST_F(rc_strand, bad_configuration_and_addresses)
{
    set_env("UCX_RC_STRAND_MAX_EPS", "0");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_env("UCX_RC_STRAND_MAX_EPS", "65536");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_env("UCX_RC_STRAND_MAX_EPS", "256");
    ASSERT_EQ(UCS_OK, open_iface(m_a));

    /* a device address of another fabric (subnet prefix) */
    std::vector<uint8_t> dev = m_a.dev_addr;
    dev.back() ^= 0xff;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, create_ep(m_a, dev, m_a.iface_addr));
    /* no addresses at all */
    uct_ep_params_t params;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = m_a.iface;
    uct_ep_h ep       = nullptr;
    EXPECT_NE(UCS_OK, uct_ep_create(&params, &ep));
}

/* Nobody at the address (an interface that was closed): the connection
 * request is not delivered, the ep fails with the transport's status and
 * its pending request sees the failure; nothing hangs. */
TEST_F(rc_strand, peer_not_there)
{
    set_env("UCX_RC_STRAND_TIMEOUT", "5ms");
    set_env("UCX_RC_STRAND_RETRY_COUNT", "1");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    std::vector<uint8_t> dev = m_b.dev_addr, addr = m_b.iface_addr;
    uct_iface_close(m_b.iface);
    m_b.iface = nullptr;

    m_ep = connect(m_a, dev, addr);
    ASSERT_NE(nullptr, m_ep);
    /* taken while it connects; it never goes, and completes failed */
    region local;
    reg(local, 64);
    test_comp z;
    comp_init(&z);
    uct_iov_t iov = {local.buf.data(), 64, local.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_am_zcopy(m_ep, 5, nullptr, 0, &iov, 1, 0, &z.uct));
    ASSERT_TRUE(
            progress_until([&] { return !m_a.err.errors.empty() && z.done; },
                           20));
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_TRUE(UCS_IS_ENDPOINT_ERROR(m_a.err.errors[0].second) ||
                (m_a.err.errors[0].second == UCS_ERR_ENDPOINT_TIMEOUT))
            << ucs_status_string(m_a.err.errors[0].second);
    EXPECT_NE(UCS_OK, z.status);
    EXPECT_NE(UCS_OK, uct_ep_am_short(m_ep, 5, 0, nullptr, 0));
    unreg(local);
    conns c = connections(m_a);
    EXPECT_EQ(0u, c.connecting);
    EXPECT_EQ(1u, c.failed);
    EXPECT_EQ(0u, c.peers); /* its manager endpoint is gone too */
}

/* UCX's uct_cancel_test on an ep still connecting: flush with
 * UCT_FLUSH_FLAG_CANCEL takes back what it holds (its WQEs never went:
 * each completes cancelled), the flush completes, the owner is not told
 * of an error; the peer's answer that comes after is not connected to
 * (no error), and the peer's QP for it goes. */
TEST_F(rc_strand, flush_cancel_while_connecting_takes_everything_back)
{
    open_pair_b_answers_when_progressed();
    region local;
    reg(local, 64);
    uct_iov_t              iov = {local.buf.data(), 64, local.memh, 0, 1};
    std::vector<test_comp> z(4);
    for (auto &c : z) {
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_am_zcopy(m_ep, 5, nullptr, 0, &iov, 1, 0, &c.uct));
    }
    EXPECT_EQ(1u, connections(m_a).connecting);
    test_comp f;
    comp_init(&f);
    scoped_log_capture logs;
    ucs_status_t status = uct_ep_flush(m_ep, UCT_FLUSH_FLAG_CANCEL, &f.uct);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
            << ucs_status_string(status);
    ASSERT_TRUE(progress_until([&] {
        for (auto &c : z) {
            if (!c.done) {
                return false;
            }
        }
        return (status == UCS_OK) || f.done;
    }));
    for (auto &c : z) {
        EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    }
    /* B answers, the answer is not connected to, and its QP is given
     * back */
    ASSERT_TRUE(progress_both_until([&] {
        return (connections(m_a).connecting == 0) &&
               (connections(m_b).responders == 0);
    }));
    EXPECT_EQ(0u, logs.count(""));
    EXPECT_TRUE(m_a.err.errors.empty());
    EXPECT_TRUE(m_b.am.msgs.empty());
    unreg(local);
}

/* A peer's endpoint cancelled in the middle of a message (its QP to ERR
 * with the first packets of the message at B, the rest never sent) and
 * destroyed: B's responder QP held one of the SRQ's receive WQEs for that
 * message. It leaves through ERR (uct_mlx5/rc/rc_retire.h), its flush CQE
 * gives the WQE back, and after more such rounds than the SRQ has WQEs B
 * still receives. Destroyed straight from RTS, each round took a WQE with
 * it: B ran dry and every later message waited on RNR for ever. Every
 * packet is held back 200 us on its way: the cancel stops the QP while the
 * message's first packets are on the wire (the requester's window: 64 of
 * its 120 packets of 256 bytes), so B takes them and waits for the rest. */
TEST_F(rc_strand, a_peer_gone_mid_message_leaves_the_srq_whole)
{
    const unsigned rx_queue = 31, rounds = 2 * (rx_queue + 1);
    set_env("STRAND_SIM_MTU", "256");
    set_env("STRAND_SIM_FAULTS", "delay=1:200000");
    set_env("UCX_RC_STRAND_SEG_SIZE", "32k");
    set_env("UCX_RC_STRAND_RX_QUEUE_LEN", std::to_string(rx_queue).c_str());
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    std::vector<uint8_t> big    = pattern(120 * 256, 3);
    size_t               expect = 0;

    for (unsigned round = 0; round < rounds; ++round) {
        uct_ep_h ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, ep);
        ASSERT_EQ(UCS_OK, am_short_retry(ep, round));
        ++expect;
        ASSERT_TRUE(progress_until([&] {
            return m_b.am.msgs.size() == expect;
        })) << "round "
            << round << ": " << m_b.am.msgs.size() << " of " << expect
            << " arrived";
        ASSERT_EQ((ssize_t)big.size(),
                  uct_ep_am_bcopy(ep, 5, pack_cb, &big, 0));
        test_comp c;
        comp_init(&c);
        ucs_status_t status = uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL, &c.uct);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        }
        uct_ep_destroy(ep);
        m_eps.pop_back();
        ASSERT_TRUE(progress_until([&] {
            return connections(m_b).responders == 0;
        })) << vfs_read(m_b, "connections");
    }
    EXPECT_EQ(rounds, m_b.am.msgs.size()) << "a cancelled message arrived";

    /* B's SRQ is whole: twice its WQEs in messages arrive */
    uct_ep_h ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep);
    for (unsigned i = 0; i < 2 * (rx_queue + 1); ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(ep, 1000 + i)) << i;
    }
    EXPECT_TRUE(progress_until(
            [&] { return m_b.am.msgs.size() == rounds + 2 * (rx_queue + 1); },
            5))
            << m_b.am.msgs.size() - rounds << " of " << 2 * (rx_queue + 1)
            << " arrived after " << rounds << " rounds";
}

/* A peer whose worker never progresses still answers a connection
 * request (from its async thread, as UCX's rc answers through ud's): a
 * PUT lands in its memory, a flush completes; its event fd stays quiet
 * until the message that is for it arrives. */
TEST_F(rc_strand, connection_request_is_answered_while_the_peer_sleeps)
{
    ASSERT_EQ(UCS_OK,
              uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker_b));
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
    region target;
    ASSERT_NO_FATAL_FAILURE(reg(target, 4096));
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    struct pollfd pfd = {fd, POLLIN, 0};

    m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, m_ep);
    auto data = pattern(64, 3);
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ep, data.data(), data.size(),
                                          addr(target), target.rkey.rkey);
              }));
    flush(m_ep);
    EXPECT_EQ(0, memcmp(target.buf.data(), data.data(), data.size()));
    EXPECT_EQ(1u, connections(m_a).connected);
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "a request woke B's worker";

    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1));
    ASSERT_TRUE(progress_until([&] { return poll(&pfd, 1, 0) > 0; }, 10))
            << "B's event fd never became readable";
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 1;
    }));
    unreg(target);
}

/* Without an async thread to answer (the application told rdma-core that
 * one thread uses the device), a request wakes a worker asleep on
 * rc_strand's event fd, whose progress answers it. */
TEST_F(rc_strand, without_an_async_thread_the_request_wakes_the_peer)
{
    set_env("MLX5_SINGLE_THREADED", "1");
    ASSERT_EQ(UCS_OK,
              uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker_b));
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    struct pollfd pfd = {fd, POLLIN, 0};
    ASSERT_EQ(0, poll(&pfd, 1, 0));

    /* B sleeps; A's progress alone cannot connect: the request wakes B */
    m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, m_ep);
    int woke = 0;
    progress_until(
            [&] {
                woke = poll(&pfd, 1, 0);
                return woke > 0;
            },
            10);
    EXPECT_EQ(1, woke) << "B's event fd never became readable";
    EXPECT_EQ(1u, connections(m_a).connecting);
    /* B runs: A connects and its message arrives */
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return uct_ep_am_short(m_ep, 5, 42, nullptr, 0) == UCS_OK;
    }));
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 1;
    }));
}
