/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQE moderation (UCX_DC_STRAND_TX_CQ_MODERATION, UCX_RC_STRAND_...), on
 * both transports (dc_strand/moderation.*, rc_strand/moderation.*): short
 * operations ask for a CQE only every N WQEs, a CQE completes every WQE
 * before it, and an error in the middle of a run of unsignaled WQEs still
 * fails exactly the endpoint whose WQE failed (its error CQE's WQE counter
 * locates it).
 */
#include "uct_fixture.h"

#include <sstream>

namespace {

/* Send CQEs the iface consumed, over all its send queues (VFS file
 * dci_pool or qp_pool: a line opened by word for each, a DCI or an RC
 * QP). */
uint64_t tx_cqes(const std::string &pool, const std::string &word)
{
    std::istringstream in(pool);
    std::string        line, key, value;
    uint64_t           total = 0;

    while (std::getline(in, line)) {
        std::istringstream l(line);
        unsigned           index;
        if (!(l >> key >> index) || (key != word)) {
            continue;
        }
        while (l >> key >> value) {
            if (key == "cqes") {
                total += std::stoull(value);
            }
        }
    }
    return total;
}

} // namespace

class moderation : public strand_uct_tl {
protected:
    /* count PUTs of 8 bytes each to r (at 8 * i), flushed; the CQEs this
     * took */
    uint64_t put_run(region &r, unsigned count)
    {
        uint64_t before = tx_cqes(vfs_read(m_a, pool_file()), sq_word());

        for (unsigned i = 0; i < count; ++i) {
            uint64_t     v = 0x1000 + i;
            ucs_status_t st;
            while ((st = uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * i),
                                          r.rkey.rkey)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_worker);
            }
            EXPECT_EQ(UCS_OK, st);
        }
        flush(m_ep);
        for (unsigned i = 0; i < count; ++i) {
            uint64_t v;
            memcpy(&v, r.buf.data() + 8 * i, sizeof(v));
            EXPECT_EQ(0x1000u + i, v) << "PUT " << i;
        }
        return tx_cqes(vfs_read(m_a, pool_file()), sq_word()) - before;
    }
};

/* The VFS file of the send queues speaks the transport's word: dc_strand
 * its dci_pool with a "dci N qpn ..." line per DCI, rc_strand its qp_pool
 * with a "qp N qpn ..." line per QP; the other's file does not exist. The
 * line of the queue the PUTs went through counts their CQEs. */
TEST_P(moderation, the_pool_file_names_the_queues_in_the_transports_word)
{
    const std::string other = (sq_word() == "dci") ? "qp_pool" : "dci_pool";

    set_tl_env("TX_CQ_MODERATION", "1");
    open_pair();
    region r;
    reg(r, 8 * 4);
    uint64_t cqes = put_run(r, 4); /* and the flush's NOP, maybe */
    EXPECT_GE(cqes, 4u);
    EXPECT_LE(cqes, 5u);
    std::string        pool = vfs_read(m_a, pool_file());
    std::istringstream in(pool);
    std::string        line;
    unsigned           lines = 0, index, qpn;
    while (std::getline(in, line)) {
        if (line.compare(0, sq_word().size() + 1, sq_word() + " ") == 0) {
            EXPECT_EQ(2, sscanf(line.c_str() + sq_word().size(), " %u qpn 0x%x",
                                &index, &qpn))
                    << line;
            EXPECT_EQ(lines++, index) << pool;
        }
    }
    EXPECT_LT(0u, lines) << "no line of a " << sq_word() << ":\n" << pool;
    EXPECT_EQ("", vfs_read(m_a, other.c_str()));
    unreg(r);
}

/* A CQE per N WQEs with moderation on; the data of every WQE lands, and
 * the flush completes the unsignaled ones. */
TEST_P(moderation, a_cqe_per_n_wqes_with_moderation_on)
{
    const unsigned count = 640, n = 16;

    set_tl_env("TX_CQ_MODERATION", std::to_string(n).c_str());
    open_pair();
    region r;
    reg(r, 8 * count);
    uint64_t cqes = put_run(r, count);
    /* every 16th asks (640 / 16 = 40), and a flush may add a NOP that
     * asks for the few after the last one that did */
    EXPECT_GE(cqes, count / n);
    EXPECT_LE(cqes, count / n + 1) << vfs_read(m_a, pool_file());
    unreg(r);
}

/* ... and one per WQE with it off. */
TEST_P(moderation, a_cqe_per_wqe_with_moderation_off)
{
    const unsigned count = 640;

    set_tl_env("TX_CQ_MODERATION", "1");
    open_pair();
    region r;
    reg(r, 8 * count);
    /* the flush's own NOP when its last PUTs are not completed yet (a
     * progress call completes TX_MAX_POLL of them) */
    uint64_t cqes = put_run(r, count);
    EXPECT_GE(cqes, count);
    EXPECT_LE(cqes, count + 1) << vfs_read(m_a, pool_file());
    unreg(r);
}

/* Flush without a completion (the caller polls it) comes back UCS_OK
 * although the last WQEs asked for no CQE: a NOP behind them does. */
TEST_P(moderation, polled_flush_completes_an_unsignaled_tail)
{
    set_tl_env("TX_CQ_MODERATION", "32");
    open_pair();
    region r;
    reg(r, 64);
    uint64_t v = 42;
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(m_ep, &v, sizeof(v), addr(r), r.rkey.rkey));
    ASSERT_TRUE(progress_until(
            [&] { return uct_ep_flush(m_ep, 0, nullptr) == UCS_OK; }));
    EXPECT_EQ(0, memcmp(r.buf.data(), &v, sizeof(v)));
    ASSERT_TRUE(progress_until(
            [&] { return uct_iface_flush(m_a.iface, 0, nullptr) == UCS_OK; }));
    unreg(r);
}

/* Two eps to one peer post unsignaled PUTs and active messages, the
 * second one a PUT with a bad rkey in the middle of the run: exactly the
 * second ep fails (its WQEs after the bad one too: nothing of it lands),
 * every operation of the first completes and lands, and the first ep
 * goes on working. */
TEST_P(moderation, an_error_amid_unsignaled_wqes_fails_only_its_ep)
{
    const unsigned before = 10, after = 10;

    set_tl_env("TX_CQ_MODERATION", "64");
    open_pair();
    uct_ep_h bad = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, bad);
    region r;
    reg(r, 4096);

    uint64_t v;
    for (unsigned i = 0; i < before; ++i) {
        v = 0x100 + i;
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * i),
                                           r.rkey.rkey));
    }
    v = 0xbad;
    ASSERT_EQ(UCS_OK, uct_ep_put_short(bad, &v, sizeof(v), addr(r, 2048),
                                       r.rkey.rkey ^ 0x5a00));
    v = 0xbad2;
    EXPECT_EQ(UCS_OK,
              uct_ep_put_short(bad, &v, sizeof(v), addr(r, 2056), r.rkey.rkey));
    for (unsigned i = before; i < before + after; ++i) {
        v = 0x100 + i;
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 8 * i),
                                           r.rkey.rkey));
    }
    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 77));

    /* the good ep's flush completes with success */
    test_comp c;
    comp_init(&c);
    ucs_status_t st;
    ASSERT_TRUE(progress_until([&] {
        st = uct_ep_flush(m_ep, 0, &c.uct);
        return st != UCS_ERR_NO_RESOURCE;
    }));
    if (st == UCS_INPROGRESS) {
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(UCS_OK, c.status);
    } else {
        EXPECT_EQ(UCS_OK, st);
    }
    ASSERT_TRUE(progress_until([&] {
        return !m_a.err.errors.empty() && (m_b.am.msgs.size() == 1);
    }));
    ASSERT_EQ(1u, m_a.err.errors.size());
    EXPECT_EQ(bad, m_a.err.errors[0].first);
    for (unsigned i = 0; i < before + after; ++i) {
        memcpy(&v, r.buf.data() + 8 * i, sizeof(v));
        EXPECT_EQ(0x100u + i, v) << "PUT " << i << " of the good ep";
    }
    EXPECT_EQ(std::vector<uint8_t>(16, 0),
              std::vector<uint8_t>(r.buf.begin() + 2048, r.buf.begin() + 2064))
            << "the failed ep's PUTs landed";
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_put_short(bad, &v, sizeof(v), addr(r), r.rkey.rkey));

    /* the good ep goes on */
    v = 0x5555;
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, &v, sizeof(v), addr(r, 1024),
                                       r.rkey.rkey));
    flush(m_ep);
    EXPECT_EQ(0, memcmp(r.buf.data() + 1024, &v, sizeof(v)));
    EXPECT_EQ(1u, m_a.err.errors.size());
    unreg(r);
}

STRAND_UCT_INSTANTIATE(moderation);
