/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Refused short posts (iface.h, "Refusals"): a put_short or am_short the
 * general path refused is refused again from the entry point until
 * something changes that may let it through. These tests drive what must
 * change the answer: completions, a lease given back, a pending request's
 * turn, a credit grant, the ep's failure; a refusal that outlived its
 * cause would hang each of them (make bench-compare counts what a refusal
 * costs).
 */
#include "uct_fixture.h"

#include <functional>
#include <memory>

extern "C" ucs_status_t uct_ep_invalidate(uct_ep_h ep, unsigned flags);

class refused : public strand_uct_tl {
protected:
    /* 8-byte put_shorts of values base + i to r (at 8 * i) until the send
     * queue refuses one, nothing progressed; how many went */
    unsigned fill(uct_ep_h ep, region &r, uint64_t base, unsigned max)
    {
        unsigned i;
        for (i = 0; i < max; ++i) {
            uint64_t     v  = base + i;
            ucs_status_t st = uct_ep_put_short(ep, &v, sizeof(v),
                                               addr(r, 8 * i), r.rkey.rkey);
            if (st == UCS_ERR_NO_RESOURCE) {
                break;
            }
            EXPECT_EQ(UCS_OK, st);
        }
        return i;
    }

    /* a pair, r registered for max_fill values, m_ep's send queue filled
     * with put_shorts of base + i to it; how many went (0: it never
     * filled, a failure) */
    static constexpr unsigned max_fill = 4096;

    unsigned open_and_fill(region &r, uint64_t base)
    {
        open_pair();
        reg(r, 8 * (max_fill + 1));
        unsigned n = fill(m_ep, r, base, max_fill);
        EXPECT_GT(n, 0u);
        EXPECT_LT(n, max_fill) << "the send queue never filled";
        return (n < max_fill) ? n : 0;
    }

    /* the put_short of base + n that the full queue refused goes once
     * there is room; then all n + 1 values have landed */
    void put_last_and_check(region &r, uint64_t base, unsigned n)
    {
        uint64_t v = base + n;
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_ep, &v, sizeof(v),
                                              addr(r, 8 * n), r.rkey.rkey);
                  }));
        flush(m_ep);
        for (unsigned i = 0; i <= n; ++i) {
            uint64_t got;
            memcpy(&got, r.buf.data() + 8 * i, sizeof(got));
            ASSERT_EQ(base + i, got) << "PUT " << i;
        }
    }
};

/* A full send queue refuses every put_short and am_short, again and again
 * while nothing completes; the first completions let the next one through,
 * and every PUT before and after lands. */
TEST_P(refused, a_full_queue_refuses_until_its_wqes_complete)
{
    region   r;
    unsigned n = open_and_fill(r, 0x5000);
    ASSERT_GT(n, 0u);
    uint64_t v = 0x5000 + n;
    for (unsigned k = 0; k < 1000; ++k) {
        ASSERT_EQ(UCS_ERR_NO_RESOURCE,
                  uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                                   r.rkey.rkey))
                << "call " << k;
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(m_ep, 5, k, nullptr, 0))
                << "call " << k;
    }
    put_last_and_check(r, 0x5000, n);
    EXPECT_TRUE(m_b.am.msgs.empty()) << "a refused am_short was sent";
    EXPECT_TRUE(m_a.err.errors.empty());
    unreg(r);
}

/* A refused ep still hears what is wrong with an operation: an AM id or
 * a length out of range is UCS_ERR_INVALID_PARAM, not a refusal (the
 * refusal is answered before the general path, which checks them), and
 * the refusal stands after them. */
TEST_P(refused, bad_parameters_are_not_refusals)
{
    region   r;
    unsigned n = open_and_fill(r, 0x6000);
    ASSERT_GT(n, 0u);
    uint64_t v = 0x6000 + n;
    ASSERT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                               r.rkey.rkey));
    std::vector<uint8_t> big(4096);
    {
        scoped_log_capture logs;
        for (size_t len :
             {(size_t)m_a.attr.cap.put.max_short + 1, big.size()}) {
            EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_ep_put_short(m_ep, big.data(), len, addr(r, 0),
                                       r.rkey.rkey))
                    << len;
        }
        for (size_t len :
             {(size_t)m_a.attr.cap.am.max_short - 8 + 1, big.size()}) {
            EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_ep_am_short(m_ep, 5, 0, big.data(), len))
                    << len;
        }
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_am_short(m_ep, UCT_AM_ID_MAX, 0, nullptr, 0));
        EXPECT_EQ(5u, logs.count("nvalid"));
    }
    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                               r.rkey.rkey));
    put_last_and_check(r, 0x6000, n);
    EXPECT_TRUE(m_b.am.msgs.empty()) << "an invalid am_short was sent";
    unreg(r);
}

/* A refused ep that fails: its next post is taken (as after any failure,
 * until its owner is told), then fails with the ep's status; nothing of it
 * is sent after the failure. */
TEST_P(refused, a_refused_ep_that_fails_reports_its_failure)
{
    const unsigned max = 4096;
    open_pair();
    region r;
    reg(r, 8 * (max + 1));

    unsigned n = fill(m_ep, r, 0x7000, max);
    ASSERT_LT(n, max);
    uint64_t v = 1;
    ASSERT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                               r.rkey.rkey));
    ASSERT_EQ(UCS_OK, uct_ep_invalidate(m_ep, 0));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                                       r.rkey.rkey))
            << "refused still: the failure did not reach the entry point";
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }));
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_put_short(m_ep, &v, sizeof(v),
                                                 addr(r, 8 * n), r.rkey.rkey));
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(m_ep, 5, 0, nullptr, 0));
    uint64_t got;
    memcpy(&got, r.buf.data() + 8 * n, sizeof(got));
    EXPECT_EQ(0u, got) << "a PUT taken after the failure was sent";
    unreg(r);
}

STRAND_UCT_INSTANTIATE(refused);

/* What only dc_strand's DCIs and credits refuse (a DCI held by another
 * endpoint, credits spent, an endpoint moving off a DCI): on dc_strand */
class dc_strand_refused : public refused {};

/* One DCI, held by an ep (dcs): the other ep is refused until the holder's
 * work completes and the DCI goes back; a request it queued then goes out
 * from the pending dispatch, and its next post from the entry point. */
TEST_P(dc_strand_refused, an_ep_without_a_dci_posts_once_the_lease_is_free)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "dcs");
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 1, nullptr, 0));
    for (unsigned k = 0; k < 100; ++k) {
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep2, 5, 2, nullptr, 0))
                << "call " << k;
    }
    am_short_pending p;
    p.ep  = ep2;
    p.seq = 2;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep2, &p.uct, 0));
    ASSERT_TRUE(progress_until([&] { return p.done != 0; }));
    ASSERT_EQ(UCS_OK,
              retry([&] { return uct_ep_am_short(ep2, 5, 3, nullptr, 0); }));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 3; }));
    EXPECT_EQ(1u, *(uint64_t *)m_b.am.msgs[0].data());
    EXPECT_EQ(2u, *(uint64_t *)m_b.am.msgs[1].data());
    EXPECT_EQ(3u, *(uint64_t *)m_b.am.msgs[2].data());
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* dcs_quota (QUOTA 4, one DCI): the holder posts freely while no one
 * waits; once another ep is refused for want of a DCI, the holder's posts
 * of its lease stop at QUOTA, its DCI drains and goes to the waiter, and
 * every PUT lands. The quota is counted by the DCI's WQEs since the lease
 * began (dc_policy.c), not by the shared queue. */
TEST_P(dc_strand_refused, dcs_quota_ends_a_lease_once_another_ep_waits)
{
    const unsigned quota = 4;
    set_env("UCX_DC_STRAND_TX_POLICY", "dcs_quota");
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_QUOTA", std::to_string(quota).c_str());
    open_pair();
    region r;
    reg(r, 8 * 64);
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);

    /* nobody waits: more than the quota in one lease */
    unsigned n = fill(m_ep, r, 0x100, 2 * quota);
    EXPECT_EQ(2 * quota, n) << "refused with no other ep waiting";
    flush(m_ep); /* the lease ends with its work */

    /* a new lease: 1 post, then ep2 waits, then quota - 1 more at most */
    uint64_t v = 0x200;
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * 16),
                                       r.rkey.rkey));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_short(ep2, &v, sizeof(v), addr(r, 8 * 40),
                               r.rkey.rkey));
    unsigned more = 0;
    for (; more < 2 * quota; ++more) {
        uint64_t w = 0x201 + more;
        if (uct_ep_put_short(m_ep, &w, sizeof(w), addr(r, 8 * (17 + more)),
                             r.rkey.rkey) != UCS_OK) {
            break;
        }
    }
    EXPECT_EQ(quota - 1, more) << vfs_read(m_a, pool_file());

    /* the waiter gets the DCI once the holder's WQEs complete */
    uint64_t w2 = 0x300;
    EXPECT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(ep2, &w2, sizeof(w2), addr(r, 8 * 40),
                                          r.rkey.rkey);
              }));
    flush(ep2);
    flush(m_ep);
    for (unsigned i = 0; i < 2 * quota; ++i) {
        EXPECT_EQ(0x100u + i, *(uint64_t *)(r.buf.data() + 8 * i)) << i;
    }
    for (unsigned i = 0; i < quota; ++i) {
        EXPECT_EQ(0x200u + i, *(uint64_t *)(r.buf.data() + 8 * (16 + i))) << i;
    }
    EXPECT_EQ(0x300u, *(uint64_t *)(r.buf.data() + 8 * 40));
    EXPECT_TRUE(m_a.err.errors.empty());
    unreg(r);
}

/* An ep out of credits is refused until the receiver's grant arrives;
 * then its active messages go out in order. */
TEST_P(dc_strand_refused, an_ep_out_of_credits_posts_once_granted)
{
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "4");
    open_pair_own_workers();
    uint64_t seq = 0;
    while (uct_ep_am_short(m_ep, 5, seq, nullptr, 0) == UCS_OK) {
        ++seq;
        ASSERT_LT(seq, 100u) << "no flow control";
    }
    for (unsigned k = 0; k < 100; ++k) {
        ASSERT_EQ(UCS_ERR_NO_RESOURCE,
                  uct_ep_am_short(m_ep, 5, seq, nullptr, 0));
        uct_worker_progress(m_worker); /* the sender's only: no grant */
    }
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return uct_ep_am_short(m_ep, 5, seq, nullptr, 0) == UCS_OK;
    }));
    ++seq;
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == seq;
    }));
    for (uint64_t i = 0; i < seq; ++i) {
        EXPECT_EQ(i, *(uint64_t *)m_b.am.msgs[i].data());
    }
}

/* Streams: an ep on a DCI that filled while the other DCI emptied decides
 * to move (dc_policy.c, consider_move) and posts nothing more there until
 * its WQEs complete; the last of those asked for no CQE (moderation), so
 * its refused posts must have the DCI ask for it (a signaled NOP behind
 * them). Without that nobody posts on the DCI again and the ep is refused
 * forever (dc_peers peer_kill hung so, about one run in ten). */
TEST_P(dc_strand_refused, an_ep_moving_off_a_full_dci_gets_its_last_cqe)
{
    const unsigned max = 4096;
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_NUM_DCI", "2");
    /* moderation on whatever the mode (signaled sets 1): unsignaled WQEs
     * are what this is about */
    set_env("UCX_DC_STRAND_TX_CQ_MODERATION", "32");
    open_pair();
    uct_ep_h e2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    uct_ep_h e3 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, e2);
    ASSERT_NE(nullptr, e3);
    region r;
    reg(r, 8 * (max + 8));
    /* deregistered however the test ends (a failed assertion returns
     * early: the MD must not be closed with the region in use) */
    std::unique_ptr<region, std::function<void(region *)>> dereg(
            &r, [this](region *p) { unreg(*p); });

    /* m_ep on DCI 0, e2 on DCI 1, e3 on DCI 0 (the tie goes round from
     * the DCI after the last lease); their WQEs ask for no CQE, which
     * keeps the leases of m_ep and e3 while e2's flush empties DCI 1 */
    uint64_t v = 1;
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 0), r.rkey.rkey));
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(e2, &v, sizeof(v), addr(r, 8), r.rkey.rkey));
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(e3, &v, sizeof(v), addr(r, 16), r.rkey.rkey));
    flush(e2);
    std::string pool = vfs_read(m_a, "dci_pool");
    ASSERT_NE(std::string::npos, pool.find("users 2"))
            << "m_ep and e3 do not share a DCI:\n"
            << pool;

    /* e3's flush: a signaled NOP on DCI 0, which restarts the count of
     * WQEs to the next signaled one; then m_ep fills the queue, nothing
     * progressed, so that its last WQEs are unsignaled, and is refused
     * (it decides to move: DCI 1 is empty) */
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(e3, 0, &c.uct));
    unsigned n = fill(m_ep, r, 0x9000, max);
    ASSERT_LT(n, max) << "the send queue never filled";
    ASSERT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * n),
                               r.rkey.rkey));
    pool                   = vfs_read(m_a, "dci_pool");
    unsigned    unsignaled = 0;
    const char *u          = strstr(pool.c_str(), "unsignaled ");
    ASSERT_NE(nullptr, u) << pool;
    ASSERT_EQ(1, sscanf(u, "unsignaled %u", &unsignaled)) << pool;
    ASSERT_GT(unsignaled, 0u) << "the queue's last WQE asked for a CQE:\n"
                              << pool;

    /* e3's work completes (its WQEs are before the signaled ones); m_ep
     * gets through once the tail's CQE was asked for, on DCI 1 */
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    uint64_t a = 0xa000;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ep, &a, sizeof(a),
                                          addr(r, 8 * (max + 1)), r.rkey.rkey);
              }))
            << vfs_read(m_a, "dci_pool");
    flush(m_ep);
    for (unsigned i = 0; i < n; ++i) {
        uint64_t got;
        memcpy(&got, r.buf.data() + 8 * i, sizeof(got));
        ASSERT_EQ(0x9000u + i, got) << "PUT " << i;
    }
    uint64_t got_a;
    memcpy(&got_a, r.buf.data() + 8 * (max + 1), sizeof(got_a));
    EXPECT_EQ(a, got_a);
    EXPECT_TRUE(m_a.err.errors.empty());
}

INSTANTIATE_TEST_SUITE_P(dc_strand, dc_strand_refused,
                         ::testing::Values("dc_strand"), strand_tl_name);
