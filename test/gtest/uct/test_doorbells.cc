/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Doorbells as a ConnectX takes them (spec section 9), on both transports
 * (dc_strand/doorbells.*, rc_strand/doorbells.*): every send queue of an
 * interface rings the one BlueFlame register of its thread domain, and
 * the register's two halves alternate between all of them (a doorbell in
 * the half the register's last one went to is lost: the software device
 * takes nothing from it, as a NIC may still be reading that half); a
 * BlueFlame copy carries a WQE only when it is the only one since the
 * last doorbell.
 */
#include "uct_fixture.h"

class doorbells : public strand_uct_tl {
protected:
    /* two endpoints to B on two send queues (rc_strand: a QP each;
     * dc_strand: the dcs policy gives each its own DCI while it has work),
     * connected; messages posted on them in turn, and no other post
     * after: every one arrives, in order per endpoint */
    void two_queues_in_turn(const char *mmio_mode)
    {
        set_env("UCX_STRAND_MMIO_MODE", mmio_mode);
        ASSERT_EQ(UCS_OK, open_md());
        if (is_dc()) {
            set_env("UCX_DC_STRAND_TX_POLICY", "dcs");
        }
        /* every WQE asks for a CQE: a queue keeps no WQE back */
        set_tl_env("TX_CQ_MODERATION", "1");
        open_pair();
        uct_ep_h second = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, second);
        uct_ep_h eps[2] = {m_ep, second};
        for (unsigned i = 0; i < 2; ++i) { /* rc_strand: both connected */
            ASSERT_EQ(UCS_OK, am_short_retry(eps[i], 1000 + i));
        }
        ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 2; }));
        flush(eps[0]);
        flush(eps[1]);
        m_b.am.msgs.clear();

        const unsigned n = 40;
        for (unsigned i = 0; i < n; ++i) {
            /* in turn, while both hold work (dc_strand: a DCI each) */
            ASSERT_EQ(UCS_OK, am_short_retry(eps[i % 2], i));
        }
        EXPECT_TRUE(progress_until([&] { return m_b.am.msgs.size() == n; }, 5))
                << m_b.am.msgs.size() << " of " << n
                << " arrived: a doorbell "
                   "was lost (two queues wrote one half of the register in "
                   "turn)";
        uint64_t next[2] = {0, 1};
        for (auto &m : m_b.am.msgs) {
            uint64_t hdr;
            memcpy(&hdr, m.data(), sizeof(hdr));
            EXPECT_EQ(next[hdr % 2], hdr);
            next[hdr % 2] = hdr + 2;
        }
        flush(second); /* the fixture destroys both */
    }
};

TEST_P(doorbells, two_queues_ring_one_register_in_turn)
{
    two_queues_in_turn("db");
}

TEST_P(doorbells, two_queues_ring_one_register_in_turn_bf_post)
{
    two_queues_in_turn("bf_post");
}

STRAND_UCT_INSTANTIATE(doorbells);
