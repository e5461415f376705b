/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BlueFlame registers (spec section 9, docs/software-device.md "BlueFlame
 * registers"): QPs without a thread domain share the context's registers,
 * as rdma-core's; a thread domain has one of its own. A data path that
 * writes BlueFlame itself takes no lock, so two threads ringing QPs of one
 * register at once is an error the device flags (a NIC would take torn
 * WQEs); the provider's own posts lock a shared register, as rdma-core's.
 */
#include "sim_fixture.h"

extern "C" {
#include "mlx5/sq.h"
}

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <climits>

class sim_bf : public sim_fixture {
protected:
    /* an RC QP on `td` (nullptr: none) connected to itself, in RTS, its
     * send completions to `scq` (the fixture's by default) */
    smlx5_qp_t *loop_qp(smlx5_td_t *td, smlx5_cq_t *scq = nullptr)
    {
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type      = SMLX5_QPT_RC;
        attr.send_cq   = (scq != nullptr) ? scq : m_scq[REQ];
        attr.recv_cq   = m_rcq[REQ];
        attr.cap       = m_cap;
        attr.td        = td;
        smlx5_qp_t *qp = smlx5_create_qp(m_pd, &attr);
        EXPECT_NE(nullptr, qp) << strerror(errno);
        if (qp != nullptr) {
            m_extra_qps.push_back(qp);
            connect_rc(qp, smlx5_qp_num(qp));
        }
        return qp;
    }

    smlx5_td_t *td()
    {
        smlx5_td_t *t = smlx5_alloc_td(m_ctx);
        EXPECT_NE(nullptr, t);
        m_tds.push_back(t);
        return t;
    }

    void TearDown() override
    {
        /* QPs first: a domain in use cannot go */
        for (auto *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        m_extra_qps.clear();
        for (auto *t : m_tds) {
            EXPECT_EQ(0, smlx5_dealloc_td(t));
        }
        sim_fixture::TearDown();
    }

    /* n unsignaled NOPs on qp, each rung as a data path rings: WQE, the
     * doorbell record, the ctrl head into the register, then the device
     * told; stops early when *stop */
    static void ring_nops(smlx5_qp_t *qp, unsigned n, std::atomic<bool> *stop)
    {
        struct mlx5dv_qp dv;
        ASSERT_EQ(0, smlx5_qp_dv(qp, &dv));
        uint32_t pi = 0;
        for (unsigned i = 0; (i < n) && !*stop; ++i) {
            auto *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(dv.sq.buf,
                                                                  dv.sq.wqe_cnt,
                                                                  pi);
            strand_set_ctrl_seg(ctrl, 0, pi & 0xffff, MLX5_OPCODE_NOP,
                                smlx5_qp_num(qp), 1, 0, 0);
            ++pi;
            strand_bf_ring_doorbell(dv.dbrec, smlx5_qp_bf(qp), pi, ctrl);
            smlx5_qp_doorbell(qp);
        }
    }

    /* two threads ring a and b until a conflict or `budget` of time (not
     * a count of doorbells: on a loaded machine one thread may finish a
     * fixed count before the other is scheduled at all) */
    uint64_t race(smlx5_qp_t *a, smlx5_qp_t *b, double budget)
    {
        std::atomic<bool> stop{false};
        uint64_t          before = smlx5_bf_conflicts(m_ctx);
        auto run = [&](smlx5_qp_t *qp) { ring_nops(qp, UINT_MAX, &stop); };
        std::thread ta(run, a), tb(run, b);
        auto        end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(budget);
        while ((smlx5_bf_conflicts(m_ctx) == before) &&
               (std::chrono::steady_clock::now() < end)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        stop = true;
        ta.join();
        tb.join();
        return smlx5_bf_conflicts(m_ctx) - before;
    }

    std::vector<smlx5_td_t *> m_tds;
};

TEST_F(sim_bf, qps_share_registers_unless_a_thread_domain_has_its_own)
{
    std::set<void *> shared;
    for (int i = 0; i < SMLX5_BF_SHARED + 1; ++i) {
        smlx5_qp_t *qp = loop_qp(nullptr);
        ASSERT_NE(nullptr, qp);
        shared.insert(qp_dv(qp).bf.reg);
    }
    EXPECT_EQ((size_t)SMLX5_BF_SHARED, shared.size())
            << "QPs without a thread domain share the context's registers";

    smlx5_td_t *t1 = td(), *t2 = td();
    smlx5_qp_t *a = loop_qp(t1), *b = loop_qp(t1), *c = loop_qp(t2);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(qp_dv(a).bf.reg, qp_dv(b).bf.reg) << "one domain, one register";
    EXPECT_NE(qp_dv(a).bf.reg, qp_dv(c).bf.reg);
    EXPECT_EQ(0u, shared.count(qp_dv(a).bf.reg));
    EXPECT_EQ(0u, shared.count(qp_dv(c).bf.reg));
    EXPECT_EQ(EBUSY, smlx5_dealloc_td(t1)) << "in use by a and b";
}

/* Two threads, each ringing its own QP, the QPs on one shared register:
 * sooner or later one doorbell meets the other's write, and the device
 * says so. Each QP on a thread domain of its own: the same traffic, no
 * conflict. */
TEST_F(sim_bf, two_threads_on_one_register_are_flagged)
{
    if (getenv("STRAND_UNDER_VALGRIND") != nullptr) {
        GTEST_SKIP() << "valgrind runs one thread at a time: two threads "
                        "never write a register at once";
    }
    smlx5_qp_t *q[SMLX5_BF_SHARED + 1];
    for (auto &qp : q) {
        qp = loop_qp(nullptr);
        ASSERT_NE(nullptr, qp);
    }
    /* round-robin: the first and the last share a register */
    ASSERT_EQ(qp_dv(q[0]).bf.reg, qp_dv(q[SMLX5_BF_SHARED]).bf.reg);
    EXPECT_GT(race(q[0], q[SMLX5_BF_SHARED], 20), 0u);

    smlx5_qp_t *a = loop_qp(td()), *b = loop_qp(td());
    ASSERT_NE(nullptr, b);
    EXPECT_EQ(0u, race(a, b, 1)) << "registers of their own conflicted";
}

/* The provider's own posts (ibv_post_send) lock a shared register, as
 * rdma-core's do: two threads posting through it never conflict. */
TEST_F(sim_bf, the_providers_posts_lock_a_shared_register)
{
    smlx5_cq_t *cq[2];
    smlx5_qp_t *q[SMLX5_BF_SHARED + 1];
    for (auto &c : cq) {
        c = smlx5_create_cq(m_ctx, 64, nullptr);
        ASSERT_NE(nullptr, c);
    }
    for (int i = 0; i <= SMLX5_BF_SHARED; ++i) {
        q[i] = loop_qp(nullptr, (i == SMLX5_BF_SHARED) ? cq[1] : cq[0]);
        ASSERT_NE(nullptr, q[i]);
    }
    ASSERT_EQ(qp_dv(q[0]).bf.reg, qp_dv(q[SMLX5_BF_SHARED]).bf.reg);
    uint64_t         before = smlx5_bf_conflicts(m_ctx);
    std::atomic<int> failed{0};
    auto             post_writes = [&](smlx5_qp_t *qp, smlx5_cq_t *c) {
        for (int i = 0; i < 20000; ++i) {
            struct ibv_send_wr wr = make_wr(IBV_WR_RDMA_WRITE, i, nullptr, 0);
            wr.wr.rdma.remote_addr = addr(REQ);
            wr.wr.rdma.rkey        = rkey(REQ);
            struct ibv_send_wr *bad;
            struct ibv_wc       wc;
            int                 n = 0;
            if (smlx5_post_send(qp, &wr, &bad) != 0) {
                ++failed;
                return;
            }
            for (int k = 0; (k < 1000000) && (n == 0); ++k) {
                n = smlx5_poll_cq(c, 1, &wc);
            }
            if ((n != 1) || (wc.status != IBV_WC_SUCCESS)) {
                ++failed;
                return;
            }
        }
    };
    std::thread ta(post_writes, q[0], cq[0]);
    std::thread tb(post_writes, q[SMLX5_BF_SHARED], cq[1]);
    ta.join();
    tb.join();
    EXPECT_EQ(0, failed.load());
    EXPECT_EQ(before, smlx5_bf_conflicts(m_ctx));
    for (auto *qp : m_extra_qps) {
        smlx5_destroy_qp(qp);
    }
    m_extra_qps.clear();
    for (auto &c : cq) {
        EXPECT_EQ(0, smlx5_destroy_cq(c));
    }
}
