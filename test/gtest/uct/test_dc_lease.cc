/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which DCI an endpoint leases under the streams policy, seen from inside
 * the endpoint (white box: uct_mlx5/common/iface.h). A lease ends when the
 * endpoint's work is done, so a ping-pong leases once a message: among
 * empty DCIs equally suited, a destination takes the one it used last
 * (its home), rather than the next in round-robin order. Rotating, an MPI
 * ping-pong's messages went through seven DCIs in turn, and its first
 * 6500 round trips took 2.5 to 5 us each instead of 1.2.
 */
#include "dc_fixture.h"

#include <algorithm>

extern "C" {
#include "uct_mlx5/common/iface.h"
}

namespace {

/* The DCI ep holds a lease on now (STRAND_TXQ_NONE: none). */
unsigned leased_dci(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep, strand_ep_t)->txq;
}

} // namespace

/* One message at a time, each flushed (the lease ends with it): the same
 * DCI every time, of the interface's eight. */
TEST_F(dc_strand, a_destination_keeps_its_dci_between_messages)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_NUM_DCI", "8");
    open_pair();
    unsigned first = STRAND_TXQ_NONE;
    for (uint64_t seq = 0; seq < 40; ++seq) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, seq)) << seq;
        unsigned dci = leased_dci(m_ep);
        ASSERT_NE(STRAND_TXQ_NONE, dci) << seq;
        if (seq == 0) {
            first = dci;
        }
        EXPECT_EQ(first, dci) << "message " << seq;
        flush(m_ep);
        EXPECT_EQ(STRAND_TXQ_NONE, leased_dci(m_ep)) << "lease after flush";
    }
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 40; }));
    for (uint64_t seq = 0; seq < 40; ++seq) {
        uint64_t got;
        memcpy(&got, m_b.am.msgs[seq].data(), sizeof(got));
        EXPECT_EQ(seq, got);
    }
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* Two destinations sending in turn, one message each, flushed: each keeps
 * a DCI of its own (destinations stay apart, as before). */
TEST_F(dc_strand, two_destinations_keep_a_dci_each)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_NUM_DCI", "8");
    open_pair();
    iface_t c;
    ASSERT_EQ(UCS_OK, open_iface(c));
    uct_ep_h ep2 = connect(m_a, c.dev_addr, c.iface_addr);
    ASSERT_NE(nullptr, ep2);
    unsigned first[2] = {STRAND_TXQ_NONE, STRAND_TXQ_NONE};
    for (uint64_t seq = 0; seq < 20; ++seq) {
        uct_ep_h eps[2] = {m_ep, ep2};
        for (int e = 0; e < 2; ++e) {
            ASSERT_EQ(UCS_OK, am_short_retry(eps[e], seq)) << seq;
            unsigned dci = leased_dci(eps[e]);
            if (seq == 0) {
                first[e] = dci;
            }
            EXPECT_EQ(first[e], dci) << "ep " << e << " message " << seq;
            flush(eps[e]);
        }
    }
    EXPECT_NE(first[0], first[1]);
    ASSERT_TRUE(progress_until([&] {
        uct_iface_progress(c.iface);
        return (m_b.am.msgs.size() == 20) && (c.am.msgs.size() == 20);
    }));
    EXPECT_TRUE(m_a.err.errors.empty());
    flush(ep2);
    uct_ep_destroy(ep2);
    m_eps.erase(std::find(m_eps.begin(), m_eps.end(), ep2));
    uct_iface_close(c.iface);
}
