/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand where a real ConnectX and rdma-core are less forgiving than a
 * naive device (spec section 9): send completions found by QP number, the
 * flush CQEs of a failed DCI left in the CQ, a credit grant waking a sender,
 * DCI streams. What both transports meet there is tested on both
 * (test_hw_truth.cc, test_events.cc).
 */
#include "dc_fixture.h"

#include <algorithm>
#include <sstream>

namespace {

/* The DCI pool as the transport shows it in its VFS file "dci_pool". */
struct dci_pool_view {
    std::string              policy;
    std::vector<unsigned>    free;
    std::vector<std::string> state;       /* per DCI */
    std::vector<unsigned>    outstanding; /* per DCI */
    std::vector<unsigned>    users;       /* per DCI */
    bool                     consistent = false;

    explicit dci_pool_view(const std::string &text)
    {
        std::istringstream in(text);
        std::string        line, word;
        while (std::getline(in, line)) {
            std::istringstream l(line);
            l >> word;
            if (word == "policy") {
                l >> policy;
            } else if (word == "free") {
                unsigned i;
                while (l >> i) {
                    free.push_back(i);
                }
            } else if (word == "dci") {
                std::string key, value;
                unsigned    idx;
                l >> idx;
                state.resize(idx + 1);
                outstanding.resize(idx + 1);
                users.resize(idx + 1);
                while (l >> key >> value) {
                    if (key == "state") {
                        state[idx] = value;
                    } else if (key == "outstanding") {
                        outstanding[idx] = std::stoul(value);
                    } else if (key == "users") {
                        users[idx] = std::stoul(value);
                    }
                }
            } else if (word == "consistent") {
                l >> word;
                consistent = (word == "yes");
            }
        }
    }

    bool idle() const
    {
        for (size_t i = 0; i < state.size(); ++i) {
            if ((outstanding[i] != 0) || (users[i] != 0)) {
                return false;
            }
        }
        return true;
    }

    /* the invariants, checked here rather than trusted: every DCI idle,
     * unleased and free; with a dcs policy each on the free stack once */
    void expect_all_free(unsigned num_dci) const
    {
        EXPECT_TRUE(consistent);
        ASSERT_EQ(num_dci, state.size());
        for (unsigned i = 0; i < num_dci; ++i) {
            EXPECT_EQ("free", state[i]) << "DCI " << i;
            EXPECT_EQ(0u, outstanding[i]) << "DCI " << i;
            EXPECT_EQ(0u, users[i]) << "DCI " << i;
        }
        if (policy == "streams") {
            EXPECT_TRUE(free.empty());
            return;
        }
        std::vector<unsigned> sorted = free;
        std::sort(sorted.begin(), sorted.end());
        for (unsigned i = 0; i < num_dci; ++i) {
            ASSERT_LT(i, sorted.size());
            EXPECT_EQ(i, sorted[i]) << "free stack holds DCI " << i << " once";
        }
        EXPECT_EQ(num_dci, free.size());
    }
};

/* A completion that records, when it fires, whether the data it announces
 * is already where it should be. */
struct landed_comp {
    uct_completion_t uct;
    const uint8_t   *dst = nullptr, *src = nullptr;
    size_t           len    = 0;
    int              calls  = 0;
    bool             landed = false;
    ucs_status_t     status = UCS_OK;

    landed_comp()
    {
        uct.func   = cb;
        uct.count  = 1;
        uct.status = UCS_OK;
    }

    static void cb(uct_completion_t *self)
    {
        auto *c = ucs_container_of(self, landed_comp, uct);
        c->calls++;
        c->status = self->status;
        c->landed = (c->len > 0) && !memcmp(c->dst, c->src, c->len);
    }
};

} // namespace

class dc_strand_hw_truth : public dc_strand {};

/*
 * Spec 9 (user index): rdma-core gives every QP/DCT/SRQ its own user index
 * (the DCT took the first), so a transport that picks the DCI of a send CQE
 * by a user index it chose never completes anything with one DCI.
 */
TEST_F(dc_strand_hw_truth, send_completions_with_one_dci)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    open_pair();
    region r;
    reg(r, 4096);
    auto data = pattern(512, 3);
    for (unsigned i = 0; i < 64; ++i) {
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, i));
    }
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(m_ep, data.data(), 128, addr(r), r.rkey.rkey));
    flush(m_ep);
    EXPECT_EQ(0, memcmp(r.buf.data(), data.data(), 128));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 64; }));
    std::vector<uint8_t> back;
    test_comp            c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_bcopy(m_ep, unpack_cb, &back, 128,
                                               addr(r), r.rkey.rkey, &c.uct));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.begin() + 128), back);
    dci_pool_view(vfs_read(m_a, "dci_pool")).expect_all_free(1);
    unreg(r);
}

/*
 * Spec 7 and 9 (CQ clean): a DCI that fails with several WQEs outstanding
 * leaves one flush CQE per WQE in the CQ, also across its reset. Exactly one
 * endpoint fails; nothing completes as OK before its data arrived; the next
 * endpoint on the same (reset) DCI is not hit by the stale flushes; the pool
 * stays consistent.
 */
TEST_F(dc_strand_hw_truth, error_with_outstanding_wqes_fails_one_ep_only)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    open_pair();
    uct_ep_h ep_b = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, ep_b);
    region r;
    reg(r, 16 * 4096);
    auto      data = pattern(4096, 21);
    uct_mem_h dm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, data.data(), data.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &dm));
    uct_iov_t iov = {data.data(), data.size(), dm, 0, 1};

    /* ep A: one good PUT, one to a bad key, then four more */
    const unsigned num_a = 6, bad = 1;
    landed_comp    ca[num_a];
    for (unsigned i = 0; i < num_a; ++i) {
        ca[i].dst       = r.buf.data() + i * 4096;
        ca[i].src       = data.data();
        ca[i].len       = data.size();
        uct_rkey_t rkey = (i == bad) ? (r.rkey.rkey ^ 0x5a00) : r.rkey.rkey;
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_put_zcopy(m_ep, &iov, 1, addr(r, i * 4096), rkey,
                                   &ca[i].uct))
                << i;
    }
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }));
    ASSERT_TRUE(progress_until([&] {
        for (auto &c : ca) {
            if (c.calls == 0) {
                return false;
            }
        }
        return true;
    }));

    /* ep B on the same DCI once it is back (NO_RESOURCE until then) */
    const unsigned num_b = 6;
    landed_comp    cb[num_b];
    for (unsigned i = 0; i < num_b; ++i) {
        cb[i].dst           = r.buf.data() + (8 + i) * 4096;
        cb[i].src           = data.data();
        cb[i].len           = data.size();
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            status = uct_ep_put_zcopy(ep_b, &iov, 1, addr(r, (8 + i) * 4096),
                                      r.rkey.rkey, &cb[i].uct);
            return status != UCS_ERR_NO_RESOURCE;
        })) << i;
        ASSERT_EQ(UCS_INPROGRESS, status) << i;
    }
    flush(ep_b);
    /* let any stale CQE show itself */
    ASSERT_TRUE(progress_until(
            [&] { return dci_pool_view(vfs_read(m_a, "dci_pool")).idle(); }));

    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_a.err.errors[0].second);
    for (unsigned i = 0; i < num_a; ++i) {
        EXPECT_EQ(1, ca[i].calls) << "A op " << i;
        if (i < bad) {
            EXPECT_EQ(UCS_OK, ca[i].status) << "A op " << i;
            EXPECT_TRUE(ca[i].landed) << "A op " << i;
        } else {
            EXPECT_NE(UCS_OK, ca[i].status) << "A op " << i;
        }
    }
    for (unsigned i = 0; i < num_b; ++i) {
        EXPECT_EQ(1, cb[i].calls) << "B op " << i;
        EXPECT_EQ(UCS_OK, cb[i].status) << "B op " << i;
        EXPECT_TRUE(cb[i].landed) << "B op " << i
                                  << " completed before "
                                     "its data arrived";
    }
    dci_pool_view(vfs_read(m_a, "dci_pool")).expect_all_free(1);
    uct_md_mem_dereg(m_md, dm);
    unreg(r);
}

/* A sender out of credits that sleeps on UCT_EVENT_SEND_COMP must wake when
 * the receiver's grant arrives: arming for send completions arms the
 * receive CQ too (for solicited CQEs, and grants are solicited). */
TEST_F(dc_strand_hw_truth, send_comp_arm_wakes_up_for_a_credit_grant)
{
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "4");
    open_pair_own_workers();
    unsigned sent = 0;
    while (uct_ep_am_short(m_ep, 5, sent, nullptr, 0) == UCS_OK) {
        ++sent;
    }
    ASSERT_EQ(4u, sent) << "the window";
    flush(m_ep); /* every send CQE consumed: nothing to wake for */

    int fd_a;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_a.iface, &fd_a));
    struct pollfd pfd = {fd_a, POLLIN, 0};
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_a.iface, UCT_EVENT_SEND_COMP));
    EXPECT_EQ(0, poll(&pfd, 1, 0));

    /* the receiver takes the messages and answers the credit request */
    auto end  = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int  woke = 0;
    while (!woke && (std::chrono::steady_clock::now() < end)) {
        uct_worker_progress(m_worker_b);
        woke = poll(&pfd, 1, 0);
    }
    ASSERT_EQ(1, woke) << "the grant did not wake the sender";
    EXPECT_EQ(4u, m_b.am.msgs.size());
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 100)) << "no credits after all";
}

/*
 * Spec 9 (DCI stream ids): the ids are the DCI's channels 0 ..
 * 2^log_num_concurent - 1, and the device refuses any other. One DCI with
 * as many streams as it has channels (the default on the software device:
 * 8 of 8), an endpoint on each: every stream's PUTs land and no endpoint
 * fails. Numbering the streams from 1 gives the last one an id one past
 * the range: the device fails that WQE and the DCI.
 */
TEST_F(dc_strand_hw_truth, every_stream_id_is_a_channel_of_the_dci)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    set_env("UCX_DC_STRAND_DCI_STREAMS", "8");
    set_env("UCX_DC_STRAND_DCI_STREAMS_ERRORED", "8");
    open_pair();
    const unsigned        n   = 8;
    std::vector<uct_ep_h> eps = {m_ep};
    while (eps.size() < n) {
        eps.push_back(connect(m_a, m_b.dev_addr, m_b.iface_addr));
        ASSERT_NE(nullptr, eps.back());
    }
    region r;
    reg(r, n * 64);
    for (unsigned round = 0; round < 4; ++round) {
        std::vector<std::vector<uint8_t>> data;
        for (unsigned i = 0; i < n; ++i) {
            data.push_back(pattern(64, 16 * round + i));
            ucs_status_t status = UCS_ERR_NO_RESOURCE;
            ASSERT_TRUE(progress_until([&] {
                status = uct_ep_put_short(eps[i], data[i].data(), 64,
                                          addr(r, 64 * i), r.rkey.rkey);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ(UCS_OK, status) << "ep " << i;
        }
        for (unsigned i = 0; i < n; ++i) {
            flush(eps[i]);
            EXPECT_EQ(0, memcmp(r.buf.data() + 64 * i, data[i].data(), 64))
                    << "round " << round << " ep " << i;
        }
    }
    EXPECT_TRUE(m_a.err.errors.empty())
            << m_a.err.errors.size() << " endpoints failed";
    /* the pool's own view: the streams in use are 0 .. 7 */
    std::string pool = vfs_read(m_a, "dci_pool");
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_NE(std::string::npos,
                  pool.find("stream " + std::to_string(i) + " ok"))
                << "stream " << i << " in\n"
                << pool;
    }
    EXPECT_EQ(std::string::npos, pool.find("stream 8 ")) << pool;
    unreg(r);
}

/*
 * Spec 9 (DCI streams need DEVX): a failed stream is reset with
 * mlx5dv_dci_stream_id_reset, a DEVX command. On a device with streams but
 * without DEVX (STRAND_SIM_CAPS devx=0: the software device then refuses
 * the reset as rdma-core does), auto takes dcs_quota and says why in
 * dci_pool ("auto no_devx"), and streams asked for by name refuse to open
 * with a message that names DEVX; with DEVX, auto takes streams. Before,
 * auto took streams from the stream capability alone: every stream error
 * then drained and reset the whole DCI.
 */
TEST_F(dc_strand_hw_truth, streams_only_where_their_reset_works)
{
    /* what auto picks: the test modes may name a policy in the environment */
    set_env("UCX_DC_STRAND_TX_POLICY", "auto");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    EXPECT_EQ("streams", dci_pool_view(vfs_read(m_a, "dci_pool")).policy);
    uct_iface_close(m_a.iface);
    m_a.iface = nullptr;

    set_env("STRAND_SIM_CAPS", "devx=0");
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    std::string pool = vfs_read(m_a, "dci_pool");
    EXPECT_EQ("dcs_quota", dci_pool_view(pool).policy) << pool;
    EXPECT_NE(std::string::npos, pool.find("\nauto no_devx\n")) << pool;
    uct_iface_close(m_a.iface);
    m_a.iface = nullptr;

    set_env("UCX_DC_STRAND_TX_POLICY", "streams");
    {
        scoped_log_capture logs;
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, open_iface(m_a));
        EXPECT_EQ(1u, logs.count("DEVX"));
    }
    set_env("UCX_DC_STRAND_TX_POLICY", "dcs");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    pool = vfs_read(m_a, "dci_pool");
    EXPECT_EQ("dcs", dci_pool_view(pool).policy);
    EXPECT_EQ(std::string::npos, pool.find("no_devx")) << pool;
}
