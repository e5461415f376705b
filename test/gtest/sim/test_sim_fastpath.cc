/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester's fast path for single-packet inline WRITEs and SENDs
 * (src/sim/sim_req.c, docs/software-device.md "Fast path"): the same WQE
 * posted on the same queues, once with the fast path and once without
 * (smlx5_set_fastpath; the queues are reset in between so that the WQE
 * lands at the same index), must give the same bytes in memory and the
 * same CQE bytes, and every rule the general path keeps still holds: SQ
 * order behind a WQE that waits, a bad rkey's error CQE and QP states,
 * flushes, receiver-not-ready, SRQ consumption, scatter-to-CQE, CQE
 * moderation, retransmission under fault injection. The QP statistics say
 * which path a WQE took, so no test passes because the fast path was
 * quietly not taken.
 */
#include "sim_dv_util.h"

#include <algorithm>
#include <functional>
#include <tuple>

namespace {

/* What a run left behind: CQE slots (whole, cqe_size bytes each) in the
 * order they came, the responder's buffer, both QP states and how many
 * WQEs the fast path took. */
struct run_result {
    std::vector<std::vector<uint8_t>> send_cqes, recv_cqes;
    std::vector<uint8_t>              resp_mem;
    enum ibv_qp_state                 req_state, resp_state;
    uint64_t                          fast_wqes;
};

const size_t MEM_CMP = 4096; /* responder bytes a run compares */

} // namespace

/* Parameter: the CQE size (MLX5_CQE_SIZE), "64" or "128". */
class sim_fastpath : public sim_fixture,
                     public ::testing::WithParamInterface<const char *> {
protected:
    void SetUp() override
    {
        /* fast timers: 2 ms transport timeout, 100 us RNR back-off */
        setenv("STRAND_SIM_TIMEOUT_NS", "2000000", 1);
        setenv("STRAND_SIM_RNR_NS", "100000", 1);
        ASSERT_NO_FATAL_FAILURE(sim_fixture::SetUp());
        for (int i = 0; i < 2; ++i) {
            scoped_env env("MLX5_CQE_SIZE", cqe_size());
            m_fcq_s[i] = smlx5_create_cq(m_ctx, 256, nullptr);
            m_fcq_r[i] = smlx5_create_cq(m_ctx, 256, nullptr);
            ASSERT_NE(nullptr, m_fcq_s[i]);
            ASSERT_NE(nullptr, m_fcq_r[i]);
            ASSERT_NO_FATAL_FAILURE(m_scqe[i].init(m_fcq_s[i]));
            ASSERT_NO_FATAL_FAILURE(m_rcqe[i].init(m_fcq_r[i]));
        }
        ASSERT_NO_FATAL_FAILURE(create_pair(nullptr));
    }

    void TearDown() override
    {
        for (int i = 0; i < 2; ++i) {
            if (m_fqp[i] != nullptr) {
                smlx5_destroy_qp(m_fqp[i]);
            }
        }
        for (smlx5_qp_t *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        m_extra_qps.clear();
        for (smlx5_srq_t *srq : m_extra_srqs) {
            smlx5_destroy_srq(srq);
        }
        m_extra_srqs.clear();
        for (int i = 0; i < 2; ++i) {
            if (m_fcq_s[i] != nullptr) {
                smlx5_destroy_cq(m_fcq_s[i]);
            }
            if (m_fcq_r[i] != nullptr) {
                smlx5_destroy_cq(m_fcq_r[i]);
            }
        }
        sim_fixture::TearDown();
        unsetenv("STRAND_SIM_TIMEOUT_NS");
        unsetenv("STRAND_SIM_RNR_NS");
    }

    virtual const char *cqe_size() const
    {
        return GetParam();
    }

    /* The requester and responder QPs of the runs (the responder on
     * `srq` when given), on CQs of the parameter's CQE size. */
    void create_pair(smlx5_srq_t *srq)
    {
        for (int i = 0; i < 2; ++i) {
            if (m_fqp[i] != nullptr) {
                smlx5_destroy_qp(m_fqp[i]);
            }
            m_fqp[i] = create_rc_qp(m_fcq_s[i], m_fcq_r[i],
                                    (i == RESP) ? srq : nullptr);
            ASSERT_NE(nullptr, m_fqp[i]) << strerror(errno);
        }
        m_srq = srq;
    }

    /* Both QPs through RESET to RTS, with PSNs no earlier run used (a
     * packet of an earlier run still on the wire is then out of
     * sequence, never taken for one of this run). */
    void reconnect(uint8_t rnr_retry = 7)
    {
        m_psn += 0x10000;
        for (int i = 0; i < 2; ++i) {
            struct ibv_qp_attr a;
            memset(&a, 0, sizeof(a));
            a.qp_state = IBV_QPS_RESET;
            ASSERT_EQ(0, smlx5_modify_qp(m_fqp[i], &a, IBV_QP_STATE));
        }
        for (int i = 0; i < 2; ++i) {
            smlx5_qp_t *qp = m_fqp[i];
            ASSERT_NO_FATAL_FAILURE(rc_to_init(qp));
            struct ibv_qp_attr a;
            memset(&a, 0, sizeof(a));
            a.qp_state           = IBV_QPS_RTR;
            a.path_mtu           = m_mtu;
            a.dest_qp_num        = smlx5_qp_num(m_fqp[1 - i]);
            a.rq_psn             = m_psn;
            a.max_dest_rd_atomic = 4;
            a.min_rnr_timer      = 1;
            set_own_av(&a.ah_attr);
            ASSERT_EQ(0,
                      smlx5_modify_qp(qp, &a,
                                      IBV_QP_STATE | IBV_QP_AV |
                                              IBV_QP_PATH_MTU |
                                              IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                              IBV_QP_MAX_DEST_RD_ATOMIC |
                                              IBV_QP_MIN_RNR_TIMER));
            memset(&a, 0, sizeof(a));
            a.qp_state      = IBV_QPS_RTS;
            a.sq_psn        = m_psn;
            a.max_rd_atomic = 4;
            a.retry_cnt     = 7;
            a.rnr_retry     = rnr_retry;
            a.timeout       = 14;
            ASSERT_EQ(0, smlx5_modify_qp(qp, &a,
                                         IBV_QP_STATE | IBV_QP_SQ_PSN |
                                                 IBV_QP_MAX_QP_RD_ATOMIC |
                                                 IBV_QP_RETRY_CNT |
                                                 IBV_QP_RNR_RETRY |
                                                 IBV_QP_TIMEOUT));
        }
    }

    smlx5_qp_t *req()
    {
        return m_fqp[REQ];
    }
    smlx5_qp_t *resp()
    {
        return m_fqp[RESP];
    }

    uint64_t fast_wqes(smlx5_qp_t *qp)
    {
        smlx5_qp_stats_t st;
        EXPECT_EQ(0, smlx5_qp_stats(qp, &st));
        return st.fast_wqes;
    }

    smlx5_qp_stats_t stats(smlx5_qp_t *qp)
    {
        smlx5_qp_stats_t st;
        EXPECT_EQ(0, smlx5_qp_stats(qp, &st));
        return st;
    }

    enum ibv_qp_state state(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        EXPECT_EQ(0, smlx5_query_qp(qp, &a, IBV_QP_STATE, nullptr));
        return a.qp_state;
    }

    void post(smlx5_qp_t *qp, struct ibv_send_wr *wr)
    {
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, wr, &bad));
    }

    /* The next CQE of `cq`, the whole slot (fails the test after 5 s),
     * owner bit cleared: it tells where in the CQ the CQE is, which two
     * runs need not share. */
    std::vector<uint8_t> take(dv_cq &cq)
    {
        std::vector<uint8_t> slot;
        uint32_t             idx = cq.ci;
        if (cq.next(m_ctx) == nullptr) {
            ADD_FAILURE() << "no CQE at index " << idx;
            return slot;
        }
        slot.assign(cq.slot(idx), cq.slot(idx) + cq.dv.cqe_size);
        slot.back() &= ~MLX5_CQE_OWNER_MASK;
        return slot;
    }

    /* Nothing more in `cq` for a while (the device keeps running). */
    bool stays_empty(dv_cq &cq, int ms = 5)
    {
        return cq.wait(m_ctx, cq.ci, ms) == nullptr;
    }

    /* Run `scenario` on fresh queues with the fast path on (result[1]) and
     * off (result[0]). The scenario posts and takes the CQEs it expects
     * into the result; the responder's buffer and the QP states are
     * recorded after it, once the device has settled. */
    void run_both(const std::function<void(run_result &)> &scenario,
                  run_result result[2], uint8_t rnr_retry = 7)
    {
        for (int fast = 1; fast >= 0; --fast) {
            SCOPED_TRACE(fast ? "fast path on" : "fast path off");
            ASSERT_EQ(0, smlx5_set_fastpath(m_ctx, fast));
            ASSERT_NO_FATAL_FAILURE(reconnect(rnr_retry));
            memset(buf(RESP), 0, BUF_SIZE);
            uint64_t    before = fast_wqes(req());
            run_result &r      = result[fast];
            scenario(r);
            EXPECT_TRUE(stays_empty(m_scqe[REQ]));
            EXPECT_TRUE(stays_empty(m_rcqe[RESP]));
            r.resp_mem.assign(buf(RESP), buf(RESP) + MEM_CMP);
            r.req_state  = state(req());
            r.resp_state = state(resp());
            r.fast_wqes  = fast_wqes(req()) - before;
        }
        ASSERT_EQ(0, smlx5_set_fastpath(m_ctx, 1));
    }

    /* The two runs left the same bytes everywhere. */
    static void expect_same(const run_result r[2])
    {
        EXPECT_EQ(r[0].send_cqes, r[1].send_cqes);
        EXPECT_EQ(r[0].recv_cqes, r[1].recv_cqes);
        EXPECT_EQ(r[0].resp_mem, r[1].resp_mem);
        EXPECT_EQ(r[0].req_state, r[1].req_state);
        EXPECT_EQ(r[0].resp_state, r[1].resp_state);
        EXPECT_EQ(0u, r[0].fast_wqes);
    }

    /* The cqe64 of a slot taken by take(): its last 64 bytes (a zeroed
     * one when take() found nothing: the failure is reported already). */
    static const struct mlx5_cqe64 *cqe64(const std::vector<uint8_t> &slot)
    {
        static const struct mlx5_cqe64 none = {};

        if (slot.size() < sizeof(struct mlx5_cqe64)) {
            return &none;
        }
        return reinterpret_cast<const struct mlx5_cqe64 *>(
                slot.data() + slot.size() - sizeof(struct mlx5_cqe64));
    }

    /* `len` bytes of a recognisable pattern in the requester's buffer at
     * `off` (inline WRs copy them at post time). */
    void fill_pattern(size_t off, uint32_t len, uint8_t seed)
    {
        for (uint32_t i = 0; i < len; ++i) {
            buf(REQ)[off + i] = (uint8_t)(seed + 7 * i);
        }
    }

    struct ibv_send_wr inline_wr(enum ibv_wr_opcode op, uint64_t wr_id,
                                 struct ibv_sge *s, size_t resp_off,
                                 unsigned flags = IBV_SEND_SIGNALED)
    {
        struct ibv_send_wr wr  = make_wr(op, wr_id, s, 1,
                                         flags | IBV_SEND_INLINE);
        wr.wr.rdma.remote_addr = addr(RESP, resp_off);
        wr.wr.rdma.rkey        = rkey(RESP);
        wr.imm_data            = htobe32(0xfeed0000u | (uint32_t)wr_id);
        if (op == IBV_WR_SEND_WITH_INV) {
            wr.invalidate_rkey = 0x1234;
        }
        return wr;
    }

    smlx5_cq_t  *m_fcq_s[2] = {nullptr, nullptr};
    smlx5_cq_t  *m_fcq_r[2] = {nullptr, nullptr};
    dv_cq        m_scqe[2], m_rcqe[2];
    smlx5_qp_t  *m_fqp[2] = {nullptr, nullptr};
    smlx5_srq_t *m_srq    = nullptr;
    uint32_t     m_psn    = 0;
};

/* ------------------------------------------------------------------ */

/* Every opcode the fast path takes, lengths around the scatter-to-CQE
 * limits (32 bytes in a 64-byte CQE, 64 in a 128-byte one): the same
 * bytes in memory (or in the CQE), the same send and receive CQEs. */
TEST_P(sim_fastpath,
       every_fast_opcode_gives_the_bytes_and_cqes_of_the_general_path)
{
    const enum ibv_wr_opcode ops[]  = {IBV_WR_RDMA_WRITE,
                                       IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
                                       IBV_WR_SEND_WITH_IMM,
                                       IBV_WR_SEND_WITH_INV};
    const uint32_t           lens[] = {1, 8, 32, 33, 64, 65, 200};

    for (enum ibv_wr_opcode op : ops) {
        for (uint32_t len : lens) {
            SCOPED_TRACE("opcode " + std::to_string(op) + ", " +
                         std::to_string(len) + " bytes");
            bool write = (op == IBV_WR_RDMA_WRITE) ||
                         (op == IBV_WR_RDMA_WRITE_WITH_IMM);
            bool       recv = (op != IBV_WR_RDMA_WRITE);
            run_result r[2];
            ASSERT_NO_FATAL_FAILURE(run_both(
                    [&](run_result &out) {
                        if (recv) {
                            post_recv_on(resp(), RESP, 1024, 512, 77);
                        }
                        fill_pattern(0, len, (uint8_t)(op + len));
                        struct ibv_sge     s = sge(REQ, 0, len);
                        struct ibv_send_wr w = inline_wr(op, 5, &s, 100);
                        post(req(), &w);
                        out.send_cqes.push_back(take(m_scqe[REQ]));
                        if (recv) {
                            out.recv_cqes.push_back(take(m_rcqe[RESP]));
                        }
                    },
                    r));
            expect_same(r);
            EXPECT_EQ(1u, r[1].fast_wqes);

            /* and what is there is what the WQE said */
            const struct mlx5_cqe64 *scqe = cqe64(r[1].send_cqes.at(0));
            EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(scqe));
            EXPECT_EQ(0, strand_cqe_wqe_counter(scqe));
            EXPECT_EQ(smlx5_qp_num(req()), strand_cqe_qpn(scqe));
            if (write) {
                EXPECT_EQ(0, memcmp(&r[1].resp_mem[100], buf(REQ), len));
            }
            if (!recv) {
                continue;
            }
            const struct mlx5_cqe64 *rcqe = cqe64(r[1].recv_cqes.at(0));
            EXPECT_EQ(len, strand_cqe_byte_cnt(rcqe));
            if (!(rcqe->op_own & MLX5_INLINE_SCATTER_32)) {
                /* (32 scattered bytes cover it) */
                EXPECT_EQ(smlx5_qp_num(req()),
                          be32toh(rcqe->flags_rqpn) & 0xffffff);
            }
            EXPECT_EQ(write                        ? MLX5_CQE_RESP_WR_IMM :
                      (op == IBV_WR_SEND_WITH_IMM) ? MLX5_CQE_RESP_SEND_IMM :
                      (op == IBV_WR_SEND_WITH_INV) ? MLX5_CQE_RESP_SEND_INV :
                                                     MLX5_CQE_RESP_SEND,
                      strand_cqe_opcode(rcqe));
            if ((op == IBV_WR_SEND_WITH_IMM) || write) {
                EXPECT_EQ(htobe32(0xfeed0005u), rcqe->imm_inval_pkey);
            }
            if (write) {
                continue;
            }
            /* a SEND: in the CQE when it fits (the start of the slot in
             * either CQE size), else in the buffer */
            const void *inl  = strand_cqe_inline_data(rcqe);
            uint32_t    fits = (r[1].recv_cqes[0].size() == 128) ? 64 : 32;
            if (len <= fits) {
                EXPECT_NE(nullptr, inl);
                EXPECT_EQ(0, memcmp(r[1].recv_cqes[0].data(), buf(REQ), len));
                EXPECT_EQ(std::vector<uint8_t>(len, 0),
                          std::vector<uint8_t>(&r[1].resp_mem[1024],
                                               &r[1].resp_mem[1024 + len]));
            } else {
                EXPECT_EQ(nullptr, inl);
                EXPECT_EQ(0, memcmp(&r[1].resp_mem[1024], buf(REQ), len));
            }
        }
    }
}

/* CQE moderation: unsignaled fast WQEs are retired by the one signaled
 * WQE after them: one CQE, its index. */
TEST_P(sim_fastpath, one_cqe_retires_unsignaled_fast_wqes)
{
    run_result r[2];
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                struct ibv_sge     s[6];
                struct ibv_send_wr w[6];
                for (int i = 0; i < 6; ++i) {
                    fill_pattern(64 * i, 8, (uint8_t)(i + 1));
                    s[i]      = sge(REQ, 64 * i, 8);
                    w[i]      = inline_wr(IBV_WR_RDMA_WRITE, i, &s[i], 64 * i,
                                     (i == 5) ? IBV_SEND_SIGNALED : 0);
                    w[i].next = (i < 5) ? &w[i + 1] : nullptr;
                }
                post(req(), &w[0]);
                out.send_cqes.push_back(take(m_scqe[REQ]));
            },
            r));
    expect_same(r);
    EXPECT_EQ(6u, r[1].fast_wqes);
    EXPECT_EQ(5, strand_cqe_wqe_counter(cqe64(r[1].send_cqes.at(0))));
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(0, memcmp(&r[1].resp_mem[64 * i], buf(REQ, 64 * i), 8));
    }
}

/* A fast WQE behind a WQE that waits stays behind it: a READ is in
 * flight, a fenced WRITE waits for it (fenced WQEs are not fast), a fast
 * WRITE to the same address comes next. Had the fast one passed the
 * fenced one, the fenced WRITE would land last. */
TEST_P(sim_fastpath, fast_wqe_never_passes_a_fenced_wqe_that_waits)
{
    run_result r[2];
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                memset(buf(RESP, 2048), 0x5a, 512);
                fill_pattern(0, 8, 0x10);  /* the fenced WRITE's value */
                fill_pattern(64, 8, 0x20); /* the fast WRITE's value */
                struct ibv_sge rs = sge(REQ, 4096, 512), s1 = sge(REQ, 0, 8),
                               s2 = sge(REQ, 64, 8);
                struct ibv_send_wr w[3];
                w[0]                     = make_wr(IBV_WR_RDMA_READ, 0, &rs, 1);
                w[0].wr.rdma.remote_addr = addr(RESP, 2048);
                w[0].wr.rdma.rkey        = rkey(RESP);
                w[1]      = inline_wr(IBV_WR_RDMA_WRITE, 1, &s1, 8,
                                      IBV_SEND_SIGNALED | IBV_SEND_FENCE);
                w[2]      = inline_wr(IBV_WR_RDMA_WRITE, 2, &s2, 8);
                w[0].next = &w[1];
                w[1].next = &w[2];
                post(req(), &w[0]);
                for (int i = 0; i < 3; ++i) {
                    out.send_cqes.push_back(take(m_scqe[REQ]));
                }
            },
            r));
    expect_same(r);
    /* the first READ is not fast, the fenced WRITE is not: the last is */
    EXPECT_EQ(1u, r[1].fast_wqes);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(i, strand_cqe_wqe_counter(cqe64(r[1].send_cqes.at(i))));
    }
    EXPECT_EQ(0, memcmp(&r[1].resp_mem[8], buf(REQ, 64), 8));
}

/* A bad rkey on the fast path: REM_ACCESS_ERR for that WQE, the next one
 * flushed, both QPs in ERR, exactly as on the general path. */
TEST_P(sim_fastpath,
       bad_rkey_gives_the_error_cqe_flush_and_qp_states_of_the_general_path)
{
    run_result r[2];
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                fill_pattern(0, 16, 0x33);
                struct ibv_sge     s1 = sge(REQ, 0, 8), s2 = sge(REQ, 8, 8);
                struct ibv_send_wr w[2];
                w[0] = inline_wr(IBV_WR_RDMA_WRITE, 0, &s1, 0);
                w[0].wr.rdma.rkey ^= 0x5500;
                w[1]      = inline_wr(IBV_WR_RDMA_WRITE, 1, &s2, 8);
                w[0].next = &w[1];
                post(req(), &w[0]);
                out.send_cqes.push_back(take(m_scqe[REQ]));
                out.send_cqes.push_back(take(m_scqe[REQ]));
            },
            r));
    expect_same(r);
    EXPECT_EQ(2u, r[1].fast_wqes);
    const struct mlx5_cqe64 *e0 = cqe64(r[1].send_cqes.at(0));
    const struct mlx5_cqe64 *e1 = cqe64(r[1].send_cqes.at(1));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(e0));
    EXPECT_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, strand_cqe_syndrome(e0));
    EXPECT_EQ(0, strand_cqe_wqe_counter(e0));
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, strand_cqe_wqe_opcode(e0));
    EXPECT_EQ(MLX5_CQE_SYNDROME_WR_FLUSH_ERR, strand_cqe_syndrome(e1));
    EXPECT_EQ(1, strand_cqe_wqe_counter(e1));
    EXPECT_EQ(IBV_QPS_ERR, r[1].req_state);
    EXPECT_EQ(IBV_QPS_ERR, r[1].resp_state);
    EXPECT_EQ(std::vector<uint8_t>(MEM_CMP, 0), r[1].resp_mem);
}

/* Receiver not ready: a fast SEND with no receive posted is NAKed and
 * retried (rnr_retry 7: for ever) until one is posted, then lands. */
TEST_P(sim_fastpath, rnr_nak_retries_a_fast_send_until_a_receive_is_posted)
{
    run_result            r[2];
    std::vector<uint64_t> naks; /* per run: fast, then general */
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                uint64_t naks_before = stats(req()).rnr_naks_rcvd;
                fill_pattern(0, 40, 0x44);
                struct ibv_sge     s = sge(REQ, 0, 40);
                struct ibv_send_wr w = inline_wr(IBV_WR_SEND, 9, &s, 0);
                post(req(), &w);
                auto deadline = std::chrono::steady_clock::now() +
                                std::chrono::seconds(5);
                while ((stats(req()).rnr_naks_rcvd == naks_before) &&
                       (std::chrono::steady_clock::now() < deadline)) {
                    smlx5_progress(m_ctx);
                }
                EXPECT_TRUE(stays_empty(m_scqe[REQ]));
                post_recv_on(resp(), RESP, 1024, 512, 3);
                out.send_cqes.push_back(take(m_scqe[REQ]));
                out.recv_cqes.push_back(take(m_rcqe[RESP]));
                naks.push_back(stats(req()).rnr_naks_rcvd - naks_before);
            },
            r));
    expect_same(r);
    EXPECT_EQ(1u, r[1].fast_wqes);
    ASSERT_EQ(2u, naks.size());
    EXPECT_LT(0u, naks[0]);
    EXPECT_LT(0u, naks[1]);
    const std::vector<uint8_t> &slot = r[1].recv_cqes.at(0);
    EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe64(slot)));
    EXPECT_EQ(40u, strand_cqe_byte_cnt(cqe64(slot)));
    /* 40 bytes: in a 128-byte CQE, or in the buffer after a 64-byte one */
    EXPECT_EQ(0,
              memcmp((slot.size() == 128) ? slot.data() : &r[1].resp_mem[1024],
                     buf(REQ), 40));
}

/* rnr_retry 0: the first RNR NAK ends the fast SEND in RNR_RETRY_EXC_ERR. */
TEST_P(sim_fastpath, rnr_retry_exceeded_on_a_fast_send)
{
    run_result r[2];
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                fill_pattern(0, 8, 0x55);
                struct ibv_sge     s = sge(REQ, 0, 8);
                struct ibv_send_wr w = inline_wr(IBV_WR_SEND, 4, &s, 0);
                post(req(), &w);
                out.send_cqes.push_back(take(m_scqe[REQ]));
            },
            r, 0));
    expect_same(r);
    EXPECT_EQ(1u, r[1].fast_wqes);
    const struct mlx5_cqe64 *e = cqe64(r[1].send_cqes.at(0));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(e));
    EXPECT_EQ(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, strand_cqe_syndrome(e));
    EXPECT_EQ(IBV_QPS_ERR, r[1].req_state);
}

/* A responder on an SRQ: a fast SEND consumes the SRQ's next WQE (named
 * in the CQE), in the CQE or in its buffer by size. */
TEST_P(sim_fastpath, fast_sends_consume_srq_wqes_in_order)
{
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    ASSERT_NO_FATAL_FAILURE(create_pair(srq));
    run_result r[2];
    ASSERT_NO_FATAL_FAILURE(run_both(
            [&](run_result &out) {
                /* the SRQ is not reset with the QPs: each run consumes the WQEs
         * it posted, the next ones on the list */
                for (int i = 0; i < 3; ++i) {
                    post_srq_recv(srq, RESP, 1024 + 256 * i, 256, i);
                }
                const uint32_t lens[3] = {8, 100, 16};
                for (int i = 0; i < 3; ++i) {
                    fill_pattern(256 * i, lens[i], (uint8_t)(0x60 + i));
                    struct ibv_sge     s = sge(REQ, 256 * i, lens[i]);
                    struct ibv_send_wr w = inline_wr(IBV_WR_SEND, i, &s, 0);
                    post(req(), &w);
                    out.send_cqes.push_back(take(m_scqe[REQ]));
                    out.recv_cqes.push_back(take(m_rcqe[RESP]));
                }
            },
            r));
    EXPECT_EQ(3u, r[1].fast_wqes);
    EXPECT_EQ(0u, r[0].fast_wqes);
    EXPECT_EQ(r[0].send_cqes, r[1].send_cqes);
    for (int i = 0; i < 3; ++i) {
        const struct mlx5_cqe64 *f = cqe64(r[1].recv_cqes.at(i));
        const struct mlx5_cqe64 *g = cqe64(r[0].recv_cqes.at(i));
        EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(f));
        EXPECT_EQ(strand_cqe_byte_cnt(g), strand_cqe_byte_cnt(f));
        EXPECT_EQ(g->op_own, f->op_own);
        /* consumed in list order: this run's WQEs one after the other */
        EXPECT_EQ(strand_cqe_wqe_counter(cqe64(r[1].recv_cqes.at(0))) + i,
                  strand_cqe_wqe_counter(f));
    }
    EXPECT_EQ(0, memcmp(&r[1].resp_mem[1024 + 256], buf(REQ, 256), 100));
    EXPECT_EQ(r[0].resp_mem, r[1].resp_mem);
}

/* Fault injection applies to fast WQEs: with packets dropped, duplicated,
 * corrupted and delayed, every WRITE still lands once, and some were
 * retransmitted. (The fixture's own pair, polled through verbs: more WQEs
 * than the SQ holds go through it.) */
TEST_P(sim_fastpath, faults_retransmit_fast_wqes_and_every_write_lands)
{
    smlx5_qp_t *qp = m_qp[REQ];
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, "drop=0.1,dup=0.05,corrupt=0.05,"
                                         "delay=0.05:20000,seed=11"));
    const int        n           = 256;
    uint64_t         fast_before = fast_wqes(qp);
    smlx5_qp_stats_t before      = stats(qp);
    for (int i = 0; i < n; ++i) {
        uint64_t v = 0x1000000000000000ull | (uint64_t)i;
        memcpy(buf(REQ, 8 * i), &v, 8);
        struct ibv_sge     s        = sge(REQ, 8 * i, 8);
        bool               signaled = (i % 16) == 15;
        struct ibv_send_wr w        = inline_wr(IBV_WR_RDMA_WRITE, i, &s, 8 * i,
                                         signaled ? IBV_SEND_SIGNALED : 0);
        post(qp, &w);
        if (signaled) {
            struct ibv_wc wc;
            ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
            EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
            EXPECT_EQ((uint64_t)i, wc.wr_id);
        }
    }
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, ""));
    smlx5_qp_stats_t after = stats(qp);
    EXPECT_EQ((uint64_t)n, fast_wqes(qp) - fast_before);
    EXPECT_LT(0u, after.pkts_resent - before.pkts_resent);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 8 * n));
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ], 10));
}

/* The fast path fills only the head of a WQE's record: a fast WQE in a
 * slot that a READ or an atomic used before must not inherit anything of
 * it (what it waits for, its CQE's byte count). Every WQE signaled and
 * polled, three times around the SQ. (The fixture's own pair, polled
 * through verbs, so that the SQ wraps.) */
TEST_P(sim_fastpath, fast_wqes_reuse_the_records_of_reads_and_atomics)
{
    smlx5_qp_t *qp = m_qp[REQ];
    /* every WQE here is one BB: slot i % cnt; the kind rotates with each
     * trip around the SQ, so every slot holds all three kinds in turn */
    const int cnt = (int)qp_dv(qp).sq.wqe_cnt, n = 3 * cnt;
    uint64_t  fast_before = fast_wqes(qp);
    uint64_t  counter = 0, adds = 0, fast = 0;
    memcpy(buf(RESP, 4096), &counter, 8);
    for (int i = 0; i < n; ++i) {
        int                kind = ((i % cnt) + (i / cnt)) % 3;
        struct ibv_sge     s;
        struct ibv_send_wr w;
        struct ibv_wc      wc;
        adds += (kind == 0);
        fast += (kind == 2);
        switch (kind) {
        case 0:
            s = sge(REQ, 8192, 8);
            w = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, i, &s, 1);
            w.wr.atomic.remote_addr = addr(RESP, 4096);
            w.wr.atomic.rkey        = rkey(RESP);
            w.wr.atomic.compare_add = 1;
            break;
        case 1:
            s                     = sge(REQ, 2048, 32);
            w                     = make_wr(IBV_WR_RDMA_READ, i, &s, 1);
            w.wr.rdma.remote_addr = addr(RESP, 1024);
            w.wr.rdma.rkey        = rkey(RESP);
            break;
        default:
            fill_pattern(64 * (i % 16), 8, (uint8_t)i);
            s = sge(REQ, 64 * (i % 16), 8);
            w = inline_wr(IBV_WR_RDMA_WRITE, i, &s, 64 * (i % 16));
            break;
        }
        post(qp, &w);
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc)) << "WQE " << i;
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "WQE " << i;
        EXPECT_EQ((uint64_t)i, wc.wr_id);
        EXPECT_EQ((kind == 0) ? 8u :
                  (kind == 1) ? 32u :
                                0u,
                  wc.byte_len)
                << "WQE " << i;
        if (kind == 2) {
            EXPECT_EQ(0, memcmp(buf(RESP, 64 * (i % 16)),
                                buf(REQ, 64 * (i % 16)), 8));
        }
    }
    memcpy(&counter, buf(RESP, 4096), 8);
    EXPECT_EQ(adds, counter);
    EXPECT_EQ(fast, fast_wqes(qp) - fast_before);
}

INSTANTIATE_TEST_SUITE_P(cqe, sim_fastpath, ::testing::Values("64", "128"));

/* ------------------------------------------------------------------ */

/* What the fast path does not take goes the general way, intact: an
 * inline WQE longer than one packet (256-byte MTU), a WRITE from a
 * registered buffer, a zero-length SEND, a READ. */
class sim_fastpath_not_taken : public sim_fastpath {
protected:
    sim_fastpath_not_taken()
    {
        m_cap.max_inline_data = 512;
    }

    void SetUp() override
    {
        /* small packets, all through the ring (no one-copy WRITE) */
        setenv("STRAND_SIM_MTU", "256", 1);
        setenv("STRAND_SIM_ONECOPY", "0", 1);
        sim_fastpath::SetUp();
    }

    void TearDown() override
    {
        sim_fastpath::TearDown();
        unsetenv("STRAND_SIM_MTU");
        unsetenv("STRAND_SIM_ONECOPY");
    }

    const char *cqe_size() const override
    {
        return "64";
    }
};

TEST_F(sim_fastpath_not_taken, general_wqes_go_the_general_way)
{
    ASSERT_NO_FATAL_FAILURE(reconnect());
    uint64_t fast_before = fast_wqes(req());
    fill_pattern(0, 300, 0x70);

    /* two packets of inline data */
    struct ibv_sge     s1 = sge(REQ, 0, 300);
    struct ibv_send_wr w1 = inline_wr(IBV_WR_RDMA_WRITE, 1, &s1, 0);
    post(req(), &w1);
    take(m_scqe[REQ]);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 300));

    /* a data segment, not inline */
    struct ibv_send_wr w2  = make_wr(IBV_WR_RDMA_WRITE, 2, &s1, 1);
    w2.wr.rdma.remote_addr = addr(RESP, 512);
    w2.wr.rdma.rkey        = rkey(RESP);
    s1.length              = 16;
    post(req(), &w2);
    take(m_scqe[REQ]);
    EXPECT_EQ(0, memcmp(buf(RESP, 512), buf(REQ), 16));

    /* zero bytes: no inline segment at all */
    post_recv_on(resp(), RESP, 1024, 64, 1);
    struct ibv_sge     s0 = sge(REQ, 0, 0);
    struct ibv_send_wr w3 = inline_wr(IBV_WR_SEND, 3, &s0, 0);
    post(req(), &w3);
    take(m_scqe[REQ]);
    EXPECT_EQ(0u, strand_cqe_byte_cnt(cqe64(take(m_rcqe[RESP]))));

    /* a READ */
    struct ibv_sge     rs  = sge(REQ, 2048, 64);
    struct ibv_send_wr w4  = make_wr(IBV_WR_RDMA_READ, 4, &rs, 1);
    w4.wr.rdma.remote_addr = addr(RESP);
    w4.wr.rdma.rkey        = rkey(RESP);
    post(req(), &w4);
    take(m_scqe[REQ]);
    EXPECT_EQ(0, memcmp(buf(REQ, 2048), buf(RESP), 64));

    EXPECT_EQ(0u, fast_wqes(req()) - fast_before);
}

/* A fast WRITE behind a WRITE of many packets that the flow's window holds
 * back (the transmitter is still inside it) waits until all of it is out:
 * both to the same last bytes, the fast one lands last. */
TEST_F(sim_fastpath_not_taken, fast_wqe_waits_behind_a_long_write_in_flight)
{
    ASSERT_NO_FATAL_FAILURE(reconnect());
    const uint32_t big = 40000; /* 157 packets of 256 bytes: > the window */
    fill_pattern(0, big, 0x01);
    fill_pattern(big, 8, 0x90);
    struct ibv_sge     s1 = sge(REQ, 0, big), s2 = sge(REQ, big, 8);
    struct ibv_send_wr w[2];
    w[0]                     = make_wr(IBV_WR_RDMA_WRITE, 0, &s1, 1, 0);
    w[0].wr.rdma.remote_addr = addr(RESP);
    w[0].wr.rdma.rkey        = rkey(RESP);
    w[1]                     = inline_wr(IBV_WR_RDMA_WRITE, 1, &s2, big - 8);
    w[0].next                = &w[1];
    smlx5_qp_stats_t before  = stats(req());
    post(req(), &w[0]);
    EXPECT_EQ(1, strand_cqe_wqe_counter(cqe64(take(m_scqe[REQ]))));
    smlx5_qp_stats_t after = stats(req());
    EXPECT_EQ(1u, after.fast_wqes - before.fast_wqes);
    /* nothing was lost: had the fast packet gone out with packets of the
     * long WRITE still to send, it would have been NAKed out of sequence
     * and gone again */
    EXPECT_EQ(0u, after.seq_naks_rcvd - before.seq_naks_rcvd);
    EXPECT_EQ(0u, after.pkts_resent - before.pkts_resent);
    EXPECT_EQ(158u, after.pkts_sent - before.pkts_sent);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), big - 8));
    EXPECT_EQ(0, memcmp(buf(RESP, big - 8), buf(REQ, big), 8));
}

/* A DCI's single-packet inline WRITEs and SENDs are fast too. Two
 * channels, two DCTs: a channel's WQE for the DCT its channel is not busy
 * at goes fast; one for another DCT while the channel is busy waits its
 * turn the general way. With the fast path on and off: the same send
 * completions in posting order, the same receives, the same memory. */
class sim_fastpath_dci : public sim_fastpath_not_taken {
protected:
    struct outcome {
        std::vector<std::tuple<uint64_t, int, int>> sends; /* wr_id, status,
                                                              opcode */
        std::vector<std::tuple<uint64_t, int, uint32_t, uint32_t>> recvs;
        std::vector<uint8_t>                                       mem;
        uint64_t                                                   fast = 0;
    };

    void post_dc(smlx5_qp_t *dci, smlx5_qp_t *dct, uint16_t stream,
                 enum ibv_wr_opcode op, uint64_t wr_id, size_t off,
                 uint32_t len, uint32_t rk = 0)
    {
        fill_pattern(off, len, (uint8_t)(wr_id * 3));
        struct ibv_sge     s = sge(REQ, off, len);
        struct ibv_send_wr w = inline_wr(op, wr_id, &s, off);
        if (rk != 0) {
            w.wr.rdma.rkey = rk;
        }
        smlx5_dc_target_t t = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &w, &t, stream, &bad));
    }

    void scenario(outcome &out)
    {
        smlx5_srq_t *srq = create_srq(16, 1);
        ASSERT_NE(nullptr, srq);
        smlx5_qp_t *dct_a = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
        smlx5_qp_t *dct_b = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
        smlx5_qp_t *dci   = create_dci(1); /* two channels */
        ASSERT_NE(nullptr, dct_a);
        ASSERT_NE(nullptr, dct_b);
        ASSERT_NE(nullptr, dci);
        memset(buf(RESP), 0, 4096);
        for (int i = 0; i < 4; ++i) {
            post_srq_recv(srq, RESP, 2048 + 256 * i, 256, 100 + i);
        }
        uint64_t before = fast_wqes(dci);
        /* stream 0 (channel 0) at A, then at B; stream 1 (channel 1) at
         * B, then at A; every WQE signaled */
        post_dc(dci, dct_a, 0, IBV_WR_RDMA_WRITE, 1, 0, 8);
        post_dc(dci, dct_b, 0, IBV_WR_SEND, 2, 64, 40);
        post_dc(dci, dct_b, 1, IBV_WR_SEND_WITH_IMM, 3, 128, 24);
        post_dc(dci, dct_a, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 4, 256, 100);
        post_dc(dci, dct_a, 0, IBV_WR_RDMA_WRITE, 5, 512, 200);
        struct ibv_wc wc;
        for (int i = 0; i < 5; ++i) {
            ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
            out.sends.emplace_back(wc.wr_id, wc.status, wc.opcode);
        }
        for (int i = 0; i < 3; ++i) {
            ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
            EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
            out.recvs.emplace_back(wc.wr_id, wc.opcode, wc.byte_len,
                                   be32toh(wc.imm_data));
        }
        EXPECT_TRUE(stays_quiet(m_rcq[RESP], 50));
        std::sort(out.recvs.begin(), out.recvs.end());
        out.mem.assign(buf(RESP), buf(RESP) + 4096);
        out.fast = fast_wqes(dci) - before;
    }

    bool stays_quiet(smlx5_cq_t *cq, int ms)
    {
        struct ibv_wc wc;
        return !poll_one(cq, &wc, ms);
    }
};

TEST_F(sim_fastpath_dci,
       inline_wqes_are_fast_and_give_what_the_general_path_gives)
{
    outcome r[2];
    for (int fast = 1; fast >= 0; --fast) {
        SCOPED_TRACE(fast ? "fast path on" : "fast path off");
        ASSERT_EQ(0, smlx5_set_fastpath(m_ctx, fast));
        ASSERT_NO_FATAL_FAILURE(scenario(r[fast]));
    }
    ASSERT_EQ(0, smlx5_set_fastpath(m_ctx, 1));

    EXPECT_EQ(r[0].sends, r[1].sends);
    EXPECT_EQ(r[0].recvs, r[1].recvs);
    EXPECT_EQ(r[0].mem, r[1].mem);
    EXPECT_EQ(0u, r[0].fast);
    /* WR 1 and 3 find their channels free; 2 and 4 wait for theirs (fast
     * only if the first one completed meanwhile) */
    EXPECT_GE(r[1].fast, 2u);
    EXPECT_LE(r[1].fast, 5u);

    /* in posting order, all good */
    for (uint64_t i = 0; i < 5; ++i) {
        EXPECT_EQ(i + 1, std::get<0>(r[1].sends.at(i)));
        EXPECT_EQ(IBV_WC_SUCCESS, std::get<1>(r[1].sends.at(i)));
    }
    /* what arrived is what was sent */
    EXPECT_EQ(0, memcmp(&r[1].mem[0], buf(REQ, 0), 8));
    EXPECT_EQ(0, memcmp(&r[1].mem[256], buf(REQ, 256), 100));
    EXPECT_EQ(0, memcmp(&r[1].mem[512], buf(REQ, 512), 200));
    EXPECT_EQ(0, memcmp(&r[1].mem[2048], buf(REQ, 64), 40)); /* WR 2 */
    EXPECT_EQ(0, memcmp(&r[1].mem[2048 + 256], buf(REQ, 128), 24));
    ASSERT_EQ(3u, r[1].recvs.size());
    EXPECT_EQ(std::make_tuple((uint64_t)100, (int)IBV_WC_RECV, 40u, 0u),
              r[1].recvs[0]);
    EXPECT_EQ(std::make_tuple((uint64_t)101, (int)IBV_WC_RECV, 24u,
                              0xfeed0003u),
              r[1].recvs[1]);
    EXPECT_EQ(std::make_tuple((uint64_t)102, (int)IBV_WC_RECV_RDMA_WITH_IMM,
                              100u, 0xfeed0004u),
              r[1].recvs[2]);
}

/* Streams keep their meaning on the fast path: after a stream's error its
 * inline WRITE is flushed (not fast), another stream's goes fast, and
 * after the reset the stream is fast again. */
TEST_F(sim_fastpath_dci, failed_stream_flushes_while_other_streams_go_fast)
{
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    smlx5_qp_t *dci = create_dci(2, 1);
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci);
    struct ibv_wc wc;

    post_dc(dci, dct, 3, IBV_WR_RDMA_WRITE, 1, 0, 8, rkey(RESP) ^ 0x4400);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_RTS, state(dci));

    uint64_t before = fast_wqes(dci);
    post_dc(dci, dct, 3, IBV_WR_RDMA_WRITE, 2, 64, 8);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(before, fast_wqes(dci));

    post_dc(dci, dct, 0, IBV_WR_RDMA_WRITE, 3, 128, 8);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(before + 1, fast_wqes(dci));
    EXPECT_EQ(0, memcmp(buf(RESP, 128), buf(REQ, 128), 8));

    EXPECT_EQ(0, smlx5_dci_stream_id_reset(dci, 3));
    post_dc(dci, dct, 3, IBV_WR_RDMA_WRITE, 4, 192, 8);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(4u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(before + 2, fast_wqes(dci));
    EXPECT_EQ(0, memcmp(buf(RESP, 192), buf(REQ, 192), 8));
    EXPECT_NE(0, memcmp(buf(RESP, 64), buf(REQ, 64), 8)); /* flushed */
}

/* ------------------------------------------------------------------ */

/* One thread owns the context (MLX5_SINGLE_THREADED=1, as rdma-core reads
 * it, and no progress thread): doorbells and polls run the engine without
 * its lock, and WRITEs, SENDs, READs and errors behave as ever. */
class sim_single_thread : public sim_fastpath {
protected:
    void SetUp() override
    {
        setenv("MLX5_SINGLE_THREADED", "1", 1);
        setenv("STRAND_SIM_PROGRESS_THREAD", "0", 1);
        sim_fastpath::SetUp();
    }

    void TearDown() override
    {
        sim_fastpath::TearDown();
        unsetenv("MLX5_SINGLE_THREADED");
        unsetenv("STRAND_SIM_PROGRESS_THREAD");
    }

    const char *cqe_size() const override
    {
        return "64";
    }

    int engine_unlocked()
    {
        smlx5_progress_stats_t st;
        EXPECT_EQ(0, smlx5_progress_stats(m_ctx, &st));
        return st.engine_unlocked;
    }
};

TEST_F(sim_single_thread, engine_runs_unlocked_and_keeps_every_semantic)
{
    EXPECT_EQ(1, engine_unlocked());
    ASSERT_NO_FATAL_FAILURE(reconnect());
    uint64_t fast_before = fast_wqes(req());

    fill_pattern(0, 64, 0x21);
    post_recv_on(resp(), RESP, 1024, 64, 1);
    struct ibv_sge     s = sge(REQ, 0, 24), rs = sge(REQ, 512, 24);
    struct ibv_send_wr w[3];
    w[0]                     = inline_wr(IBV_WR_RDMA_WRITE, 0, &s, 0, 0);
    w[1]                     = inline_wr(IBV_WR_SEND_WITH_IMM, 1, &s, 0, 0);
    w[2]                     = make_wr(IBV_WR_RDMA_READ, 2, &rs, 1);
    w[2].wr.rdma.remote_addr = addr(RESP);
    w[2].wr.rdma.rkey        = rkey(RESP);
    w[0].next                = &w[1];
    w[1].next                = &w[2];
    post(req(), &w[0]);
    EXPECT_EQ(2, strand_cqe_wqe_counter(cqe64(take(m_scqe[REQ]))));
    const std::vector<uint8_t> rslot = take(m_rcqe[RESP]);
    EXPECT_EQ(MLX5_CQE_RESP_SEND_IMM, strand_cqe_opcode(cqe64(rslot)));
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 24));
    EXPECT_EQ(0, memcmp(buf(REQ, 512), buf(REQ), 24)); /* read back */
    EXPECT_EQ(2u, fast_wqes(req()) - fast_before);

    /* an error: the bad rkey's CQE, the QP in ERR */
    struct ibv_send_wr bad = inline_wr(IBV_WR_RDMA_WRITE, 9, &s, 0);
    bad.wr.rdma.rkey ^= 0x5500;
    post(req(), &bad);
    const std::vector<uint8_t> eslot = take(m_scqe[REQ]);
    EXPECT_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
              strand_cqe_syndrome(cqe64(eslot)));
    EXPECT_EQ(IBV_QPS_ERR, state(req()));
}

/* Either condition alone is not enough: an application thread and the
 * progress thread, or an application that did not say it is alone. */
class sim_single_thread_app_only : public sim_single_thread {
protected:
    void SetUp() override
    {
        setenv("MLX5_SINGLE_THREADED", "1", 1);
        sim_fastpath::SetUp();
    }
};

TEST_F(sim_single_thread_app_only, progress_thread_keeps_the_lock)
{
    EXPECT_EQ(0, engine_unlocked());
}

class sim_single_thread_no_promise : public sim_single_thread {
protected:
    void SetUp() override
    {
        setenv("MLX5_SINGLE_THREADED", "yes", 1); /* only "1" counts */
        setenv("STRAND_SIM_PROGRESS_THREAD", "0", 1);
        sim_fastpath::SetUp();
    }
};

TEST_F(sim_single_thread_no_promise, without_the_promise_the_lock_stays)
{
    EXPECT_EQ(0, engine_unlocked());
}
