/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand through UCX's public UCT API: an interface address and
 * endpoints the transport connects itself (a QP per endpoint, a responder
 * QP at the peer), traffic that waits for the connection, AM / PUT / GET /
 * atomics byte for byte, disconnects, peers that are not there, limits,
 * wakeup by the connection manager's messages, and integrity-checked GETs.
 */
#include "dc_fixture.h"

#include <cinttypes>
#include <regex>

class rc_strand : public dc_strand {
protected:
    void SetUp() override
    {
        m_tl = "rc_strand";
        dc_strand::SetUp();
    }

    /* "connecting N connected N failed N responders N peers N" of i's
     * VFS file */
    struct conns {
        unsigned connecting = ~0u, connected = ~0u, failed = ~0u;
        unsigned responders = ~0u, peers = ~0u;
    };

    conns connections(const iface_t &i)
    {
        conns c;
        std::string text = vfs_read(i, "connections");
        sscanf(text.c_str(), "connecting %u connected %u failed %u "
               "responders %u peers %u", &c.connecting, &c.connected,
               &c.failed, &c.responders, &c.peers);
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
        return progress_with_until([this] {
            uct_worker_progress(m_worker);
            uct_worker_progress(m_worker_b);
        }, cond, 10);
    }

    /* wait for a zero-copy / fetching op's completion */
    ucs_status_t wait(ucs_status_t status, test_comp &c)
    {
        if (status != UCS_INPROGRESS) {
            return status;
        }
        if (!progress_until([&] { return c.done != 0; })) {
            return UCS_ERR_TIMED_OUT;
        }
        return c.status;
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
    EXPECT_EQ(65535u, m_a.attr.max_num_eps);  /* MAX_EPS */
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

TEST_F(rc_strand, active_messages_byte_for_byte)
{
    open_pair();
    auto small = pattern(100, 1);
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 7, small.data(), small.size()));

    auto mid = pattern(4000, 2);
    ssize_t len;
    ASSERT_TRUE(progress_until([&] {
        len = uct_ep_am_bcopy(m_ep, 5, pack_cb, &mid, 0);
        return len != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ((ssize_t)mid.size(), len);

    region z;
    ASSERT_NO_FATAL_FAILURE(reg(z, 8000));
    auto zdata = pattern(8000, 3);
    memcpy(z.buf.data(), zdata.data(), zdata.size()); /* registered buffer */
    uct_iov_t iov = {z.buf.data(), z.buf.size(), z.memh, 0, 1};
    uint64_t zhdr = 0x1122334455667788ull;
    test_comp c;
    comp_init(&c);
    ucs_status_t status = retry([&] {
        return uct_ep_am_zcopy(m_ep, 5, &zhdr, sizeof(zhdr), &iov, 1, 0,
                               &c.uct);
    });
    ASSERT_EQ(UCS_OK, wait(status, c));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 3; }));

    std::vector<uint8_t> want(8, 0);
    uint64_t seven = 7;
    memcpy(want.data(), &seven, 8);
    want.insert(want.end(), small.begin(), small.end());
    EXPECT_EQ(want, m_b.am.msgs[0]);
    EXPECT_EQ(mid, m_b.am.msgs[1]);
    want.assign((uint8_t*)&zhdr, (uint8_t*)&zhdr + sizeof(zhdr));
    want.insert(want.end(), z.buf.begin(), z.buf.end());
    EXPECT_EQ(want, m_b.am.msgs[2]);
    unreg(z);
}

TEST_F(rc_strand, small_active_messages_come_in_the_cqe)
{
    check_am_in_cqe("UCX_RC_STRAND_");
}

TEST_F(rc_strand, short_posts_of_every_length_across_the_ring_end)
{
    check_short_posts("UCX_RC_STRAND_");
}

TEST_F(rc_strand, put_and_get_byte_for_byte)
{
    open_pair();
    region target, local;
    ASSERT_NO_FATAL_FAILURE(reg(target, 256 * 1024));
    ASSERT_NO_FATAL_FAILURE(reg(local, 256 * 1024));

    /* short at 0, bcopy at 1 KiB, zcopy of 200 KiB at 8 KiB */
    auto a = pattern(64, 4), b = pattern(4096, 5);
    ASSERT_EQ(UCS_OK, retry([&] {
        return uct_ep_put_short(m_ep, a.data(), a.size(), addr(target),
                                target.rkey.rkey);
    }));
    ssize_t len;
    ASSERT_TRUE(progress_until([&] {
        len = uct_ep_put_bcopy(m_ep, pack_cb, &b, addr(target, 1024),
                               target.rkey.rkey);
        return len != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ((ssize_t)b.size(), len);
    auto big = pattern(200 * 1024, 6);
    memcpy(local.buf.data(), big.data(), big.size());
    uct_iov_t iov = {local.buf.data(), big.size(), local.memh, 0, 1};
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_put_zcopy(m_ep, &iov, 1, addr(target, 8192),
                                target.rkey.rkey, &c.uct);
    }), c));
    flush(m_ep);
    EXPECT_EQ(0, memcmp(target.buf.data(), a.data(), a.size()));
    EXPECT_EQ(0, memcmp(target.buf.data() + 1024, b.data(), b.size()));
    EXPECT_EQ(0, memcmp(target.buf.data() + 8192, big.data(), big.size()));

    /* and read back: bcopy 4 KiB, zcopy 200 KiB into a zeroed buffer */
    std::vector<uint8_t> got;
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_get_bcopy(m_ep, unpack_cb, &got, b.size(),
                                addr(target, 1024), target.rkey.rkey, &c.uct);
    }), c));
    EXPECT_EQ(b, got);
    memset(local.buf.data(), 0, local.buf.size());
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_get_zcopy(m_ep, &iov, 1, addr(target, 8192),
                                target.rkey.rkey, &c.uct);
    }), c));
    EXPECT_EQ(0, memcmp(local.buf.data(), big.data(), big.size()));
    unreg(local);
    unreg(target);
}

TEST_F(rc_strand, atomics)
{
    open_pair();
    region target;
    ASSERT_NO_FATAL_FAILURE(reg(target, 64));
    uint64_t v64 = 1000;
    uint32_t v32 = 50;
    memcpy(target.buf.data(), &v64, 8);
    memcpy(target.buf.data() + 8, &v32, 4);

    ASSERT_EQ(UCS_OK, retry([&] {
        return uct_ep_atomic64_post(m_ep, UCT_ATOMIC_OP_ADD, 5, addr(target),
                                    target.rkey.rkey);
    }));
    uint64_t old64 = 0;
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 10, &old64,
                                     addr(target), target.rkey.rkey, &c.uct);
    }), c));
    EXPECT_EQ(1005u, old64);
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_atomic_cswap64(m_ep, 1015, 7, addr(target),
                                     target.rkey.rkey, &old64, &c.uct);
    }), c));
    EXPECT_EQ(1015u, old64);
    uint32_t old32 = 0;
    comp_init(&c);
    ASSERT_EQ(UCS_OK, wait(retry([&] {
        return uct_ep_atomic32_fetch(m_ep, UCT_ATOMIC_OP_SWAP, 99, &old32,
                                     addr(target, 8), target.rkey.rkey,
                                     &c.uct);
    }), c));
    EXPECT_EQ(50u, old32);
    flush(m_ep);
    memcpy(&v64, target.buf.data(), 8);
    memcpy(&v32, target.buf.data() + 8, 4);
    EXPECT_EQ(7u, v64);
    EXPECT_EQ(99u, v32);
    unreg(target);
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
    })) << vfs_read(m_a, "connections") << vfs_read(m_b, "connections");
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
    uct_ep_params_t params;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_a.iface;
    params.dev_addr   = (const uct_device_addr_t*)m_b.dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)m_b.iface_addr.data();
    uct_ep_h ep5      = nullptr;
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, uct_ep_create(&params, &ep5));
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
    uct_ep_params_t params;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_a.iface;
    params.dev_addr   = (const uct_device_addr_t*)dev.data();
    params.iface_addr = (const uct_iface_addr_t*)m_a.iface_addr.data();
    uct_ep_h ep       = nullptr;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));
    /* no addresses at all */
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
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
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 5, nullptr, 0, &iov, 1,
                                              0, &z.uct));
    ASSERT_TRUE(progress_until([&] {
        return !m_a.err.errors.empty() && z.done;
    }, 20));
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
    uct_iov_t iov = {local.buf.data(), 64, local.memh, 0, 1};
    std::vector<test_comp> z(4);
    for (auto &c : z) {
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 5, nullptr, 0, &iov,
                                                  1, 0, &c.uct));
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

/* A connected peer goes away: the ep's next operation fails, its owner
 * is told, and uct_ep_check finds it on an idle ep too. */
TEST_F(rc_strand, connected_peer_goes_away)
{
    set_env("UCX_RC_STRAND_TIMEOUT", "5ms");
    set_env("UCX_RC_STRAND_RETRY_COUNT", "1");
    open_pair();
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
    flush(m_ep);
    uct_iface_close(m_b.iface);
    m_b.iface = nullptr;

    ASSERT_EQ(UCS_OK, uct_ep_check(m_ep, 0, nullptr));
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }, 20));
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_TRUE(UCS_IS_ENDPOINT_ERROR(m_a.err.errors[0].second))
        << ucs_status_string(m_a.err.errors[0].second);
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
    std::vector<uint8_t> big = pattern(120 * 256, 3);
    size_t expect = 0;

    for (unsigned round = 0; round < rounds; ++round) {
        uct_ep_h ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, ep);
        ASSERT_EQ(UCS_OK, am_short_retry(ep, round));
        ++expect;
        ASSERT_TRUE(progress_until([&] {
            return m_b.am.msgs.size() == expect;
        })) << "round " << round << ": " << m_b.am.msgs.size() << " of "
            << expect << " arrived";
        ASSERT_EQ((ssize_t)big.size(), uct_ep_am_bcopy(ep, 5, pack_cb, &big,
                                                        0));
        test_comp c;
        comp_init(&c);
        ucs_status_t status = uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL,
                                           &c.uct);
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
    EXPECT_TRUE(progress_until([&] {
        return m_b.am.msgs.size() == rounds + 2 * (rx_queue + 1);
    }, 5)) << m_b.am.msgs.size() - rounds << " of " << 2 * (rx_queue + 1)
           << " arrived after " << rounds << " rounds";
}

TEST_F(rc_strand, ep_check_with_a_completion)
{
    check_ep_check_completion("UCX_RC_STRAND_");
}

TEST_F(rc_strand, flush_behind_a_send_to_a_gone_peer_fails)
{
    check_flush_after_failed_probe("UCX_RC_STRAND_");
}

/* A peer whose worker never progresses still answers a connection
 * request (from its async thread, as UCX's rc answers through ud's): a
 * PUT lands in its memory, a flush completes; its event fd stays quiet
 * until the message that is for it arrives. */
TEST_F(rc_strand, connection_request_is_answered_while_the_peer_sleeps)
{
    ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                        &m_worker_b));
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
        return uct_ep_put_short(m_ep, data.data(), data.size(), addr(target),
                                target.rkey.rkey);
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
    ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                        &m_worker_b));
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
    progress_until([&] {
        woke = poll(&pfd, 1, 0);
        return woke > 0;
    }, 10);
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

/* Integrity-checked GETs on rc_strand (UCX_RC_STRAND_INTEGRITY): damage
 * on the wire is found and read again, the data comes out right. */
TEST_F(rc_strand, integrity_checked_get)
{
    set_env("UCX_RC_STRAND_INTEGRITY", "crc32c");
    set_env("STRAND_SIM_FAULTS", "sdc=0.01,seed=5");
    ASSERT_EQ(UCS_OK, open_md()); /* the MD reads both when it opens */
    open_pair();
    region target, local;
    ASSERT_NO_FATAL_FAILURE(reg(target, 1 << 20));
    ASSERT_NO_FATAL_FAILURE(reg(local, 1 << 20));
    auto data = pattern(1 << 20, 9);
    memcpy(target.buf.data(), data.data(), data.size());
    uct_iov_t iov = {local.buf.data(), data.size(), local.memh, 0, 1};
    for (int round = 0; round < 4; ++round) {
        memset(local.buf.data(), 0, local.buf.size());
        test_comp c;
        comp_init(&c);
        ASSERT_EQ(UCS_OK, wait(retry([&] {
            return uct_ep_get_zcopy(m_ep, &iov, 1, addr(target),
                                    target.rkey.rkey, &c.uct);
        }), c));
        ASSERT_EQ(0, memcmp(local.buf.data(), data.data(), data.size()))
            << "round " << round;
    }
    std::string text = vfs_read(m_a, "integrity");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex(
        "(\\d+) checked, \\d+ pieces read, (\\d+) bad reads"))) << text;
    EXPECT_EQ(4u, std::stoul(m[1]));
    EXPECT_GT(std::stoul(m[2]), 0u) << "the damage was never found";
    unreg(local);
    unreg(target);
}

/* Spec 9 (atomic reply endianness per size), as dc_strand_atomic_modes:
 * every fetching atomic of both sizes, and cswap, in both 8-byte modes. */
class rc_strand_atomic_modes : public atomic_modes<rc_strand> {
};

TEST_P(rc_strand_atomic_modes, every_fetching_atomic_of_both_sizes)
{
    open_pair();
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1)); /* connected */
    check_all_atomics();
}

INSTANTIATE_TEST_SUITE_P(mode8b, rc_strand_atomic_modes,
                         ::testing::Values(0, 1));

/* One progress call hands over 16 waiting messages (UCX_IB_RX_MAX_POLL's
 * default), and what RX_MAX_POLL says. */
TEST_F(rc_strand, one_progress_call_handles_at_most_rx_max_poll)
{
    check_rx_bound(1000, 16);
}

TEST_F(rc_strand, rx_max_poll_sets_the_bound)
{
    set_env("UCX_RC_STRAND_RX_MAX_POLL", "100");
    check_rx_bound(1000, 100);
}

/* UCX's invalid_am_bcopy_length / invalid_put_bcopy_length */
TEST_F(rc_strand, bcopy_that_packs_too_much_is_refused)
{
    check_bcopy_overrun();
}
