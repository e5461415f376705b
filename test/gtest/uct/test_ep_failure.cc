/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint failure in the shared core, on both transports
 * (dc_strand/ep_failure.*, rc_strand/ep_failure.*): a peer that is not
 * there, a bad remote key, a key out of bounds fail exactly their
 * endpoint, whose owner is told once; the other endpoints and the memory
 * are untouched.
 */
#include "uct_fixture.h"

class ep_failure : public strand_uct_tl {};

TEST_P(ep_failure, peer_failure_fails_only_that_ep)
{
    set_env("STRAND_SIM_TIMEOUT_NS", "2000000");
    set_tl_env("RETRY_COUNT", "1");
    open_pair();
    /* an ep to an interface address nobody has: a DCT number (dc_strand;
     * rc_strand: of its connection manager's DC interface) */
    std::vector<uint8_t> dead = m_b.iface_addr;
    dead[2] ^= 0x40;
    uct_ep_h bad = connect(m_a, m_b.dev_addr, dead);
    ASSERT_NE(nullptr, bad);

    test_comp c;
    comp_init(&c);
    auto      data = pattern(64, 10);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, data.data(), data.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {data.data(), data.size(), dm, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_am_zcopy(bad, 5, nullptr, 0, &iov, 1, 0, &c.uct));
    /* the good ep keeps working meanwhile */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 77, nullptr, 0));
    ASSERT_TRUE(
            progress_until([&] { return c.done && !m_a.err.errors.empty(); },
                           30));
    EXPECT_NE(UCS_OK, c.status);
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(bad, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_a.err.errors[0].second);

    /* the send queue came back (a shared DCI): the good ep still sends */
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1000 + i));
    }
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 101; }));
    EXPECT_EQ(1099u, *(uint64_t *)m_b.am.msgs.back().data());
    EXPECT_EQ(1u, m_a.err.errors.size());
    uct_md_mem_dereg(m_md, dm);
}

/* A PUT with a wrong rkey and a GET beyond the registered range: remote
 * access errors that fail exactly that ep (its later ops too), reach its
 * error handler once, and leave the other ep and the target memory alone. */
TEST_P(ep_failure, bad_rkey_fails_only_that_ep)
{
    open_pair();
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep2);
    region r;
    reg(r, 4096);
    auto      data = pattern(256, 11);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, data.data(), data.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {data.data(), data.size(), dm, 0, 1};

    test_comp c1, c2;
    comp_init(&c1);
    comp_init(&c2);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep, &iov, 1, addr(r),
                                               r.rkey.rkey ^ 0x5a00, &c1.uct));
    ASSERT_TRUE(
            progress_until([&] { return c1.done && !m_a.err.errors.empty(); }));
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
    ASSERT_TRUE(progress_until(
            [&] { return c2.done && (m_a.err.errors.size() == 2); }));
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

/* A connected peer goes away: the ep's next operation fails, its owner
 * is told, and uct_ep_check finds it on an idle ep too. */
TEST_P(ep_failure, connected_peer_goes_away)
{
    ASSERT_NO_FATAL_FAILURE(open_pair_exchanged());
    close_b();

    ASSERT_EQ(UCS_OK, uct_ep_check(m_ep, 0, nullptr));
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }, 20));
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_TRUE(UCS_IS_ENDPOINT_ERROR(m_a.err.errors[0].second))
            << ucs_status_string(m_a.err.errors[0].second);
}

STRAND_UCT_INSTANTIATE(ep_failure);
