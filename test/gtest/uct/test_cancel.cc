/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Taking work back: uct_ep_invalidate and uct_ep_flush(UCT_FLUSH_FLAG_CANCEL)
 * (uct.h; docs/errors.md "Cancelling"). An endpoint toward a peer that
 * does not answer is given up at once, not after the device's retries;
 * its operations complete, other endpoints are untouched. On both
 * transports (dc_strand/cancel.TEST/dcs and .../streams: two TX policies;
 * rc_strand/cancel.TEST/rc_strand).
 */
#include "uct_fixture.h"

#include <algorithm>
#include <regex>

extern "C" ucs_status_t uct_ep_invalidate(uct_ep_h ep, unsigned flags);

namespace {

/* the device's retries take over a minute: a test that waits for them
 * fails its 5 s deadlines */
const double k_quick = 5;

} // namespace

/* The parameter: "dc_strand:<TX policy>" or "rc_strand" */
class cancel : public strand_uct_tl {
protected:
    void SetUp() override
    {
        std::string param = GetParam();
        size_t      colon = param.find(':');
        m_tl              = param.substr(0, colon);
        strand_uct::SetUp(); /* m_tl is the parameter's first part */
        if (colon != std::string::npos) {
            set_tl_env("TX_POLICY", param.substr(colon + 1).c_str());
            /* the live ep on a DCI of its own: a DCI completes in
             * send-queue order, so with one DCI (mode num_dci1) the live
             * ep's work would wait behind the dead peer's, as on a NIC */
            set_tl_env("NUM_DCI", "2");
        }
        set_tl_env("TIMEOUT", "5s");
        set_tl_env("RETRY_COUNT", "7");
        open_pair();
        /* an ep to a DCT number nobody has (rc_strand: of its connection
         * manager's DC interface): nothing ever answers it */
        std::vector<uint8_t> dead = m_b.iface_addr;
        dead[2] ^= 0x40;
        m_dead = connect(m_a, m_b.dev_addr, dead);
        ASSERT_NE(nullptr, m_dead);
        m_data = pattern(64, 3);
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, m_data.data(), m_data.size(),
                                         UCT_MD_MEM_ACCESS_ALL, &m_memh));
    }

    void TearDown() override
    {
        if (m_memh != nullptr) {
            uct_md_mem_dereg(m_md, m_memh);
        }
        strand_uct_tl::TearDown();
    }

    /* an active message to the dead peer, outstanding */
    void post_to_dead(test_comp &c)
    {
        comp_init(&c);
        uct_iov_t iov = {m_data.data(), m_data.size(), m_memh, 0, 1};
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_am_zcopy(m_dead, 5, nullptr, 0, &iov, 1, 0, &c.uct));
    }

    /* the live ep sends n more messages, all delivered in order */
    void live_ep_still_sends(uint64_t first, unsigned n)
    {
        size_t before = m_b.am.msgs.size();
        for (unsigned i = 0; i < n; ++i) {
            ASSERT_EQ(UCS_OK, am_short_retry(m_ep, first + i));
        }
        flush(m_ep);
        ASSERT_TRUE(progress_until(
                [&] { return m_b.am.msgs.size() == before + n; }));
        for (unsigned i = 0; i < n; ++i) {
            uint64_t hdr;
            memcpy(&hdr, m_b.am.msgs[before + i].data(), sizeof(hdr));
            ASSERT_EQ(first + i, hdr);
        }
    }

    uct_ep_h             m_dead = nullptr;
    std::vector<uint8_t> m_data;
    uct_mem_h            m_memh = nullptr;
};

/* uct_ep_invalidate on an idle ep: UCS_OK, the owner's error handler runs
 * once from progress (never inside the call) with UCS_ERR_CANCELED, every
 * later operation of that ep fails, a second invalidate changes nothing,
 * and another ep to the same peer goes on. */
TEST_P(cancel, invalidate_idle_ep_fails_it_from_progress)
{
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_EQ(UCS_OK, am_short_retry(ep2, 1));
    flush(ep2);

    ASSERT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    EXPECT_TRUE(m_a.err.errors.empty());
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }));
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(ep2, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_CANCELED, m_a.err.errors[0].second);

    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(ep2, 5, 2, nullptr, 0));
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_put_short(ep2, m_data.data(), 8, 0, 0));
    EXPECT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    live_ep_still_sends(100, 50);
    EXPECT_EQ(1u, m_a.err.errors.size());
}

/* Work outstanding toward a peer that never answers: invalidate completes
 * it (UCS_ERR_CANCELED) and reports the ep within moments, where the
 * device would take over a minute; the DCI comes back for the others. */
TEST_P(cancel, invalidate_cancels_work_toward_a_dead_peer_at_once)
{
    test_comp c;
    post_to_dead(c);
    live_ep_still_sends(1, 10);
    EXPECT_FALSE(c.done);

    ASSERT_EQ(UCS_OK, uct_ep_invalidate(m_dead, 0));
    ASSERT_TRUE(
            progress_until([&] { return c.done && !m_a.err.errors.empty(); },
                           k_quick));
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(m_dead, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_CANCELED, m_a.err.errors[0].second);
    live_ep_still_sends(1000, 100);
    /* a DCI moved to ERR by its user raises no async event; an RC QP,
     * which receives from the SRQ, raises "last WQE reached" on its way
     * to ERR as any QP of an SRQ does, and no error */
    std::string events = vfs_read(m_a, "async_events");
    if (!is_dc()) {
        std::regex last_wqe("(^|\n)last WQE reached [^\n]*\n");
        events = std::regex_replace(events, last_wqe, "$1");
    }
    EXPECT_EQ("", events);
}

/* flush(CANCEL) toward a dead peer: its operations complete as cancelled
 * and the flush completes within moments; the ep is in error state
 * (UCS_ERR_CANCELED from every call) but its owner's error handler is not
 * called (uct.h; UCX's DC does the same); a second flush(CANCEL) returns
 * UCS_OK at once. */
TEST_P(cancel, flush_cancel_toward_a_dead_peer_completes_at_once)
{
    test_comp c, f;
    post_to_dead(c);
    comp_init(&f);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_flush(m_dead, UCT_FLUSH_FLAG_CANCEL, &f.uct));
    ASSERT_TRUE(progress_until([&] { return f.done != 0; }, k_quick));
    EXPECT_TRUE(c.done);
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    EXPECT_EQ(UCS_OK, f.status);
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(m_dead, 5, 2, nullptr, 0));
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_dead, UCT_FLUSH_FLAG_CANCEL, nullptr));
    live_ep_still_sends(1, 100);
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* flush(CANCEL) of an idle ep is UCS_OK at once, and the ep refuses work */
TEST_P(cancel, flush_cancel_idle_ep)
{
    test_comp f;
    comp_init(&f);
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_dead, UCT_FLUSH_FLAG_CANCEL, &f.uct));
    EXPECT_FALSE(f.done);
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(m_dead, 5, 2, nullptr, 0));
    live_ep_still_sends(1, 10);
}

/* An ep destroyed while its flush(CANCEL) waits: the flush's completion
 * and the operation's complete (UCS_ERR_CANCELED) during the destroy; the
 * DCI still comes back for the others. */
TEST_P(cancel, destroy_while_flush_cancel_waits)
{
    test_comp c, f;
    post_to_dead(c);
    comp_init(&f);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_flush(m_dead, UCT_FLUSH_FLAG_CANCEL, &f.uct));
    uct_ep_destroy(m_dead);
    m_eps.erase(std::find(m_eps.begin(), m_eps.end(), m_dead));
    EXPECT_TRUE(f.done);
    EXPECT_EQ(UCS_ERR_CANCELED, f.status);
    EXPECT_TRUE(c.done);
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    live_ep_still_sends(1, 100);
    EXPECT_TRUE(m_a.err.errors.empty());
}

/* uct_ep_invalidate as UCX's mlx5 transports have it (UCX's uct suite:
 * test_uct_peer_failure): until its owner's error handler ran from
 * progress the ep still takes work (UCS_OK, UCS_INPROGRESS, pending
 * requests), which is never sent and completes with the error; the
 * handler runs once, its pending requests are the owner's to purge there;
 * the interface's flush completes; afterwards every operation fails. */
TEST_P(cancel, invalidated_ep_takes_work_until_its_failure_is_reported)
{
    uct_ep_h ep2 = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_EQ(UCS_OK, am_short_retry(ep2, 1));
    flush(ep2);
    size_t before = m_b.am.msgs.size();

    ASSERT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(ep2, nullptr, 0, 0, 0));
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep2, 5, 3, nullptr, 0));
    EXPECT_EQ(0, uct_ep_am_bcopy(ep2, 5, pack_cb, &m_data, 0));
    test_comp c;
    comp_init(&c);
    uct_iov_t iov = {m_data.data(), m_data.size(), m_memh, 0, 1};
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_am_zcopy(ep2, 5, nullptr, 0, &iov, 1, 0, &c.uct));
    am_short_pending p;
    p.ep = ep2;
    EXPECT_EQ(UCS_OK, uct_ep_pending_add(ep2, &p.uct, 0));
    EXPECT_TRUE(m_a.err.errors.empty()) << "told inside the calls";

    ASSERT_TRUE(
            progress_until([&] { return !m_a.err.errors.empty() && c.done; },
                           k_quick));
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(UCS_ERR_CANCELED, m_a.err.errors[0].second);
    EXPECT_EQ(0, p.done) << "a pending request of a failing ep ran";
    unsigned purged = 0;
    uct_ep_pending_purge(
            ep2,
            [](uct_pending_req_t *, void *arg) {
                ++*static_cast<unsigned *>(arg);
            },
            &purged);
    EXPECT_EQ(1u, purged);
    ASSERT_TRUE(progress_until(
            [&] { return uct_iface_flush(m_a.iface, 0, nullptr) == UCS_OK; },
            k_quick))
            << "the interface's flush never completed";
    EXPECT_EQ(UCS_ERR_CANCELED, uct_ep_am_short(ep2, 5, 4, nullptr, 0));
    live_ep_still_sends(100, 10);
    for (size_t i = before; i < m_b.am.msgs.size(); ++i) {
        uint64_t hdr;
        memcpy(&hdr, m_b.am.msgs[i].data(), sizeof(hdr));
        EXPECT_GE(hdr, 100u) << "an operation of the invalidated ep was sent";
    }
}

/* An ep whose last WQE asked for no CQE (moderation) and has run: moving
 * its DCI to ERR flushes nothing, so no CQE would ever tell the DCI is
 * empty; a signaled NOP goes first. The interface's flush completes, the
 * DCI comes back (UCX's uct test_uct_peer_failure.peer_failure hung in the
 * flush after uct_ep_invalidate). */
TEST_P(cancel, invalidate_after_an_unsignaled_wqe_ran_lets_flush_complete)
{
    uct_ep_h ep2    = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    size_t   before = m_b.am.msgs.size();
    ASSERT_EQ(UCS_OK, am_short_retry(ep2, 1));
    ASSERT_TRUE(
            progress_until([&] { return m_b.am.msgs.size() == before + 1; }));
    /* and the device has its ACK (no CQE: none was asked for) */
    progress_until([] { return false; }, 0.1);
    ASSERT_EQ(UCS_OK, uct_ep_invalidate(ep2, 0));
    /* (with every WQE signaled, mode signaled, the ep is idle by now: its
     * handler runs from a progress call after the flush may be OK) */
    ASSERT_TRUE(progress_until(
            [&] {
                return (uct_iface_flush(m_a.iface, 0, nullptr) == UCS_OK) &&
                       !m_a.err.errors.empty();
            },
            k_quick))
            << vfs_read(m_a, pool_file());
    ASSERT_EQ(1u, m_a.err.errors.size());
    live_ep_still_sends(100, 10);
}

/* dc_strand/cancel.TEST/dcs, .../streams; rc_strand/cancel.TEST/rc_strand */
static std::string
cancel_name(const ::testing::TestParamInfo<const char *> &info)
{
    std::string param = info.param;
    size_t      colon = param.find(':');
    return (colon == std::string::npos) ? param : param.substr(colon + 1);
}

INSTANTIATE_TEST_SUITE_P(dc_strand, cancel,
                         ::testing::Values("dc_strand:dcs",
                                           "dc_strand:streams"),
                         cancel_name);
INSTANTIATE_TEST_SUITE_P(rc_strand, cancel, ::testing::Values("rc_strand"),
                         cancel_name);
