/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow control's window seen from inside the endpoint (white box: the
 * transport's own headers, uct_mlx5/common/iface.h): what a test cannot
 * reach by sending, such as the end of a window of 2^31 credits. On
 * dc_strand: rc_strand has no flow control (its QP's own does it).
 */
#include "dc_fixture.h"

extern "C" {
#include "uct_mlx5/common/iface.h"
}

/* With flow control off a message still spends a credit (the fast path
 * checks the window in one compare, ep.h fc_over); where the window
 * reaches its limit it is filled again, nothing asked of the peer: every
 * message goes, in order, and the window is full again after. White box:
 * the window is set just above its limit rather than sent down from 2^31. */
TEST_F(dc_strand, flow_control_off_fills_the_window_again)
{
    set_env("UCX_DC_STRAND_FC_ENABLE", "n");
    open_pair();
    strand_ep_t  *ep   = ucs_derived_of(m_ep, strand_ep_t);
    const int32_t full = strand_ep_fc_wnd(ep);
    EXPECT_EQ(INT32_MAX, full);
    strand_ep_fc_set_wnd(ep, ep->fc_limit + 3);
    for (uint64_t seq = 0; seq < 10; ++seq) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, seq)) << seq;
    }
    EXPECT_GT(strand_ep_fc_wnd(ep), full - 10);
    EXPECT_GT(strand_ep_fc_wnd(ep), ep->fc_limit);
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 10; }));
    for (uint64_t seq = 0; seq < 10; ++seq) {
        uint64_t got;
        memcpy(&got, m_b.am.msgs[seq].data(), sizeof(got));
        EXPECT_EQ(seq, got);
    }
    EXPECT_TRUE(m_a.err.errors.empty());
}
