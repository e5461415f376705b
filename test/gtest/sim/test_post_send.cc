/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smlx5_post_send / smlx5_post_send_dc / smlx5_post_recv /
 * smlx5_post_srq_recv, statement by statement: the seed page
 * ibv_post_send.3 and spec sections 1, 2 and 4 (ordinary SRQ).
 *
 * WQE bytes are read from the SQ through the mlx5dv_qp view
 * (smlx5_qp_dv), never through device internals. The data-movement tests
 * need the device engine (requester/responder/completer).
 */
#include "sim_fixture.h"

#include <cerrno>

namespace {

const uint32_t CTRL_OFF = 0;
const uint32_t SEG1_OFF = 16;
const uint32_t SEG2_OFF = 32;
const uint32_t SEG3_OFF = 48;

} // namespace

class ibv_post_send : public sim_fixture {
protected:
    smlx5_qp_t *req()
    {
        return m_qp[REQ];
    }
    smlx5_qp_t *resp()
    {
        return m_qp[RESP];
    }

    /* SQ producer index as published (dbrec[MLX5_SND_DBR]). */
    uint32_t pi(smlx5_qp_t *qp)
    {
        return sq_dbrec(qp_dv(qp));
    }

    /* Post one WR that must succeed; returns the BB of its ctrl. */
    uint32_t post_ok(smlx5_qp_t *qp, struct ibv_send_wr *wr)
    {
        uint32_t            bb  = pi(qp);
        struct ibv_send_wr *bad = nullptr;
        EXPECT_EQ(0, smlx5_post_send(qp, wr, &bad));
        EXPECT_EQ(nullptr, bad);
        return bb;
    }

    /* `len` bytes of the WQE at BB `bb` of `qp`. */
    std::vector<uint8_t> wqe(smlx5_qp_t *qp, uint32_t bb, size_t len = 64)
    {
        return sq_bytes(qp_dv(qp), bb, len);
    }

    void expect_send_cqe(smlx5_cq_t *cq, uint64_t wr_id, enum ibv_wc_opcode op,
                         struct ibv_wc *out = nullptr)
    {
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(cq, &wc)) << "no completion for wr_id " << wr_id;
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(wr_id, wc.wr_id);
        EXPECT_EQ(op, wc.opcode);
        if (out != nullptr) {
            *out = wc;
        }
    }

    /* A 64-bit atomic's reply as the device's endianness mode has it. */
    uint64_t atomic_reply(const void *p)
    {
        uint64_t v;
        memcpy(&v, p, 8);
        return m_caps.atomic_mode8b ? v : be64toh(v);
    }

    void fill(int side, size_t off, size_t len, uint8_t seed)
    {
        for (size_t i = 0; i < len; ++i) {
            buf(side, off)[i] = (uint8_t)(seed + i * 7);
        }
    }

    /* A small RC pair: 8-BB SQ (spec minimum of the device). */
    void small_pair(smlx5_qp_t *out[2], uint32_t max_inline = 0)
    {
        struct ibv_qp_cap cap;
        memset(&cap, 0, sizeof(cap));
        cap.max_send_wr     = 1;
        cap.max_recv_wr     = 16;
        cap.max_send_sge    = 1;
        cap.max_recv_sge    = 1;
        cap.max_inline_data = max_inline;
        ASSERT_NO_FATAL_FAILURE(create_connected_pair(cap, 0, out));
        ASSERT_EQ(8u, qp_dv(out[0]).sq.wqe_cnt)
                << "test assumes the device's minimum SQ of 8 BBs";
    }
};

/* ============================================ seed page: DESCRIPTION */

TEST_F(ibv_post_send, posts_the_linked_list_starting_with_wr)
{
    struct ibv_sge     s[3] = {sge(REQ, 0, 8), sge(REQ, 8, 8), sge(REQ, 16, 8)};
    struct ibv_send_wr wr[3];
    for (int i = 0; i < 3; ++i) {
        wr[i] = make_wr(IBV_WR_RDMA_WRITE, 100 + i, &s[i], 1);
        wr[i].wr.rdma.remote_addr = addr(RESP, 8 * i);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < 2) ? &wr[i + 1] : nullptr;
    }
    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(0, smlx5_post_send(req(), &wr[0], &bad));
    EXPECT_EQ(start + 3, pi(req())); /* 3 one-BB WQEs */
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(i + start, be32_at(wqe(req(), start + i), 0) >> 8 & 0xffff);
        expect_send_cqe(m_scq[REQ], 100 + i, IBV_WC_RDMA_WRITE);
    }
}

TEST_F(ibv_post_send, stops_at_first_failure_and_returns_it_in_bad_wr)
{
    struct ibv_sge s[8];
    for (int i = 0; i < 8; ++i) {
        s[i] = sge(REQ, 64 * i, 8);
    }
    struct ibv_send_wr wr[3];
    for (int i = 0; i < 3; ++i) {
        wr[i]                     = make_wr(IBV_WR_RDMA_WRITE, 200 + i, s, 1);
        wr[i].wr.rdma.remote_addr = addr(RESP);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < 2) ? &wr[i + 1] : nullptr;
    }
    wr[1].num_sge = qp_cap(req()).max_send_sge + 1; /* fails: ENOMEM */

    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(req(), &wr[0], &bad));
    EXPECT_EQ(&wr[1], bad);
    EXPECT_EQ(start + 1, pi(req())); /* wr[2] was not posted */
    expect_send_cqe(m_scq[REQ], 200, IBV_WC_RDMA_WRITE);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
}

TEST_F(ibv_post_send, earlier_wrs_stay_posted)
{
    struct ibv_sge s = sge(REQ, 0, 16);
    fill(REQ, 0, 16, 3);
    struct ibv_send_wr wr[3];
    for (int i = 0; i < 3; ++i) {
        wr[i]                     = make_wr(IBV_WR_RDMA_WRITE, 300 + i, &s, 1);
        wr[i].wr.rdma.remote_addr = addr(RESP, 16 * i);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < 2) ? &wr[i + 1] : nullptr;
    }
    wr[2].opcode = (enum ibv_wr_opcode)77;

    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send(req(), &wr[0], &bad));
    EXPECT_EQ(&wr[2], bad);
    /* both earlier WRs are in the SQ and the doorbell record covers them */
    EXPECT_EQ(start + 2, pi(req()));
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, wqe(req(), start)[3]);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, wqe(req(), start + 1)[3]);
    /* ... and execute */
    expect_send_cqe(m_scq[REQ], 300, IBV_WC_RDMA_WRITE);
    expect_send_cqe(m_scq[REQ], 301, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 0), 16));
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 16), 16));
}

TEST_F(ibv_post_send, failing_first_wr_posts_nothing)
{
    struct ibv_send_wr  wr    = make_wr((enum ibv_wr_opcode)77, 1, nullptr, 0);
    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send(req(), &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(start, pi(req()));
}

TEST_F(ibv_post_send, empty_list_returns_zero)
{
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(0, smlx5_post_send(req(), nullptr, &bad));
}

/* ===================================== seed page: opcode/QP type table */

TEST_F(ibv_post_send, rc_allows_every_opcode_of_the_table)
{
    const enum ibv_wr_opcode ops[] = {IBV_WR_SEND,
                                      IBV_WR_SEND_WITH_IMM,
                                      IBV_WR_RDMA_WRITE,
                                      IBV_WR_RDMA_WRITE_WITH_IMM,
                                      IBV_WR_RDMA_READ,
                                      IBV_WR_ATOMIC_CMP_AND_SWP,
                                      IBV_WR_ATOMIC_FETCH_AND_ADD};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        if ((ops[i] == IBV_WR_SEND) || (ops[i] == IBV_WR_SEND_WITH_IMM) ||
            (ops[i] == IBV_WR_RDMA_WRITE_WITH_IMM)) {
            post_recv(RESP, 4096, 64, 1000 + i);
        }
        struct ibv_sge     s   = sge(REQ, 64 * i, 8);
        struct ibv_send_wr wr  = make_wr(ops[i], i, &s, 1);
        wr.wr.rdma.remote_addr = addr(RESP, 64 * i);
        wr.wr.rdma.rkey        = rkey(RESP);
        if ((ops[i] == IBV_WR_ATOMIC_CMP_AND_SWP) ||
            (ops[i] == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
            wr.wr.atomic.remote_addr = addr(RESP, 64 * i);
            wr.wr.atomic.rkey        = rkey(RESP);
        }
        post_ok(req(), &wr);
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc)) << i;
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << i;
        EXPECT_EQ(i, wc.wr_id);
    }
}

TEST_F(ibv_post_send, unknown_opcode_einval)
{
    const int bogus[] = {77, IBV_WR_TSO, IBV_WR_DRIVER1, -1};
    for (int op : bogus) {
        struct ibv_send_wr  wr = make_wr((enum ibv_wr_opcode)op, 1, nullptr, 0);
        struct ibv_send_wr *bad = nullptr;
        EXPECT_EQ(EINVAL, smlx5_post_send(req(), &wr, &bad)) << op;
        EXPECT_EQ(&wr, bad);
    }
}

TEST_F(ibv_post_send, post_send_on_dci_einval)
{
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dci);
    struct ibv_send_wr  wr  = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0);
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send(dci, &wr, &bad));
    EXPECT_EQ(&wr, bad);
}

TEST_F(ibv_post_send, post_send_on_dct_einval)
{
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, dct);
    struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, 1, nullptr, 0);
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send(dct, &wr, &bad));
    EXPECT_EQ(&wr, bad);
    smlx5_dc_target_t t = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
    bad                 = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send_dc(dct, &wr, &t, 0, &bad));
    EXPECT_EQ(&wr, bad);
}

TEST_F(ibv_post_send, post_send_dc_on_rc_einval)
{
    struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, 1, nullptr, 0);
    smlx5_dc_target_t   t   = {m_lid, 1, SMLX5_DC_KEY_DEFAULT};
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send_dc(req(), &wr, &t, 0, &bad));
    EXPECT_EQ(&wr, bad);
}

TEST_F(ibv_post_send, post_send_dc_without_target_einval)
{
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dci);
    struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, 1, nullptr, 0);
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(EINVAL, smlx5_post_send_dc(dci, &wr, nullptr, 0, &bad));
    EXPECT_EQ(&wr, bad);
}

/* ================================================ seed page: send_flags */

TEST_F(ibv_post_send, signaled_sets_ce)
{
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0,
                                     IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    EXPECT_EQ(MLX5_WQE_CTRL_CQ_UPDATE, wqe(req(), bb)[11] & 0x0c);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, unsignaled_leaves_ce_clear_and_gives_no_cqe)
{
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0, 0);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    EXPECT_EQ(0, wqe(req(), bb)[11] & 0x0c);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
}

TEST_F(ibv_post_send, sq_sig_all_sets_ce)
{
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(create_connected_pair(m_cap, 1, qp));
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 7, nullptr, 0, 0);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(qp[0], &wr);
    EXPECT_EQ(MLX5_WQE_CTRL_CQ_UPDATE, wqe(qp[0], bb)[11] & 0x0c);
    expect_send_cqe(m_scq[REQ], 7, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, one_signaled_cqe_retires_earlier_unsignaled_wrs)
{
    struct ibv_send_wr wr[4];
    for (int i = 0; i < 4; ++i) {
        wr[i] = make_wr(IBV_WR_RDMA_WRITE, 40 + i, nullptr, 0,
                        (i == 3) ? IBV_SEND_SIGNALED : 0);
        wr[i].wr.rdma.remote_addr = addr(RESP);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < 3) ? &wr[i + 1] : nullptr;
    }
    struct ibv_send_wr *bad = nullptr;
    ASSERT_EQ(0, smlx5_post_send(req(), wr, &bad));
    expect_send_cqe(m_scq[REQ], 43, IBV_WC_RDMA_WRITE);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
}

TEST_F(ibv_post_send, solicited_sets_se)
{
    post_recv(RESP, 0, 64, 1);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND_WITH_IMM, 1, nullptr, 0,
                                    IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    uint32_t           bb = post_ok(req(), &wr);
    EXPECT_EQ(MLX5_WQE_CTRL_SOLICITED, wqe(req(), bb)[11] & 0x02);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);

    struct ibv_send_wr wr2  = make_wr(IBV_WR_RDMA_WRITE, 2, nullptr, 0);
    wr2.wr.rdma.remote_addr = addr(RESP);
    wr2.wr.rdma.rkey        = rkey(RESP);
    bb                      = post_ok(req(), &wr2);
    EXPECT_EQ(0, wqe(req(), bb)[11] & 0x02);
}

TEST_F(ibv_post_send, fence_sets_fm_0x80)
{
    struct ibv_sge     s   = sge(REQ, 0, 8);
    struct ibv_send_wr rd  = make_wr(IBV_WR_RDMA_READ, 1, &s, 1);
    rd.wr.rdma.remote_addr = addr(RESP);
    rd.wr.rdma.rkey        = rkey(RESP);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 2, nullptr, 0,
                                     IBV_SEND_SIGNALED | IBV_SEND_FENCE);
    wr.wr.rdma.remote_addr = addr(RESP, 64);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb0           = post_ok(req(), &rd);
    uint32_t bb1           = post_ok(req(), &wr);
    EXPECT_EQ(0x00, wqe(req(), bb0)[11] & 0xe0);
    EXPECT_EQ(0x80, wqe(req(), bb1)[11] & 0xe0);
    EXPECT_EQ(0x88, wqe(req(), bb1)[11]);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_RDMA_READ);
    expect_send_cqe(m_scq[REQ], 2, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, ip_csum_is_ignored)
{
    post_recv(RESP, 0, 64, 1);
    struct ibv_sge     s  = sge(REQ, 0, 16);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, &s, 1,
                                    IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM);
    uint32_t           bb = post_ok(req(), &wr);
    auto               w  = wqe(req(), bb);
    EXPECT_EQ(0x08, w[11]);
    EXPECT_EQ(2u, be32_at(w, 4) & 0x3f);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
}

TEST_F(ibv_post_send, inline_copies_sge_data_into_the_wqe)
{
    post_recv(RESP, 0, 128, 1);
    fill(REQ, 0, 40, 11);
    struct ibv_sge s[2]   = {sge(REQ, 0, 30), sge(REQ, 30, 10)};
    s[0].lkey             = 0xdeadbeef; /* "The L_Key will not be checked" */
    s[1].lkey             = 0xdeadbeef;
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, s, 2,
                                    IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    uint32_t           bb = post_ok(req(), &wr);
    auto               w  = wqe(req(), bb, 64);
    EXPECT_EQ(MLX5_OPCODE_SEND, w[3]);
    EXPECT_EQ(1u + 3u, be32_at(w, 4) & 0x3f); /* align(4 + 40, 16) / 16 */
    EXPECT_EQ(0x80000000u | 40u, be32_at(w, SEG1_OFF));
    EXPECT_EQ(0, memcmp(&w[SEG1_OFF + 4], buf(REQ), 40));
    for (int i = SEG1_OFF + 44; i < 64; ++i) {
        EXPECT_EQ(0, w[i]) << "padding byte " << i;
    }
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(40u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 40));
}

TEST_F(ibv_post_send, inline_buffer_reusable_after_return)
{
    post_recv(RESP, 0, 128, 1);
    uint8_t src[64];
    for (int i = 0; i < 64; ++i) {
        src[i] = (uint8_t)(0xa0 + i);
    }
    uint8_t expect[64];
    memcpy(expect, src, sizeof(src));
    struct ibv_sge     s  = {reinterpret_cast<uintptr_t>(src), 64, 0};
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 5, &s, 1,
                                    IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    post_ok(req(), &wr);
    memset(src, 0, sizeof(src)); /* reused right after the call */
    expect_send_cqe(m_scq[REQ], 5, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(64u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP), expect, 64));
}

TEST_F(ibv_post_send, inline_rdma_write_delivers_data)
{
    fill(REQ, 0, 100, 5);
    struct ibv_sge     s   = sge(REQ, 0, 100);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 3, &s, 1,
                                     IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    wr.wr.rdma.remote_addr = addr(RESP, 512);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    auto     w             = wqe(req(), bb, 128);
    EXPECT_EQ(2u + 7u, be32_at(w, 4) & 0x3f); /* ctrl, raddr, 104 -> 112 */
    EXPECT_EQ(0x80000000u | 100u, be32_at(w, SEG2_OFF));
    expect_send_cqe(m_scq[REQ], 3, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(0, memcmp(buf(RESP, 512), buf(REQ), 100));
}

TEST_F(ibv_post_send, inline_longer_than_max_enomem)
{
    uint32_t max = qp_cap(req()).max_inline_data;
    ASSERT_GT(max, 1u);
    struct ibv_sge      s[2]  = {sge(REQ, 0, max / 2),
                                 sge(REQ, 4096, max - max / 2 + 1)};
    struct ibv_send_wr  wr    = make_wr(IBV_WR_SEND, 1, s, 2,
                                        IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(req(), &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(start, pi(req()));

    /* exactly max is fine */
    post_recv(RESP, 0, 4096, 1);
    s[1].length = max - max / 2;
    post_ok(req(), &wr);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
}

TEST_F(ibv_post_send, inline_zero_length_has_no_inline_segment)
{
    post_recv(RESP, 0, 64, 1);
    struct ibv_sge     s  = sge(REQ, 0, 0);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, &s, 1,
                                    IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    uint32_t           bb = post_ok(req(), &wr);
    EXPECT_EQ(1u, be32_at(wqe(req(), bb), 4) & 0x3f);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
}

/* ============================================= seed page: imm_data */

TEST_F(ibv_post_send, imm_copied_as_given)
{
    post_recv(RESP, 0, 64, 1);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND_WITH_IMM, 1, nullptr, 0);
    wr.imm_data           = htobe32(0x12345678);
    uint32_t bb           = post_ok(req(), &wr);
    auto     w            = wqe(req(), bb);
    EXPECT_EQ(0x12, w[12]);
    EXPECT_EQ(0x34, w[13]);
    EXPECT_EQ(0x56, w[14]);
    EXPECT_EQ(0x78, w[15]);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0x12345678), wc.imm_data);
}

TEST_F(ibv_post_send, send_with_inv_imm_is_be32_rkey)
{
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND_WITH_INV, 1, nullptr, 0);
    wr.invalidate_rkey    = 0xaabbccdd;
    /* bytes only: what the responder does with the rkey is the device's */
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(create_connected_pair(m_cap, 0, qp));
    post_recv_on(qp[1], RESP, 0, 64, 1);
    uint32_t bb = post_ok(qp[0], &wr);
    auto     w  = wqe(qp[0], bb);
    EXPECT_EQ(MLX5_OPCODE_SEND_INVAL, w[3]);
    EXPECT_EQ(0xaa, w[12]);
    EXPECT_EQ(0xbb, w[13]);
    EXPECT_EQ(0xcc, w[14]);
    EXPECT_EQ(0xdd, w[15]);
}

TEST_F(ibv_post_send, non_imm_opcodes_have_zero_imm)
{
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0);
    wr.imm_data            = 0xffffffff;
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    EXPECT_EQ(0u, be32_at(wqe(req(), bb), 12));
}

/* ========================================== spec 2: errors (ENOMEM...) */

TEST_F(ibv_post_send, sq_overflow_enomem)
{
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(small_pair(qp));
    const uint32_t cnt = qp_dv(qp[0]).sq.wqe_cnt;
    /* cnt one-BB WQEs fill the SQ, the next one does not fit */
    std::vector<struct ibv_send_wr> wr(cnt + 1);
    for (uint32_t i = 0; i <= cnt; ++i) {
        wr[i] = make_wr(IBV_WR_RDMA_WRITE, i, nullptr, 0, 0);
        wr[i].wr.rdma.remote_addr = addr(RESP);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < cnt) ? &wr[i + 1] : nullptr;
    }
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(qp[0], &wr[0], &bad));
    EXPECT_EQ(&wr[cnt], bad);
    EXPECT_EQ(cnt, pi(qp[0]));
    /* still full: nothing was retired by a polled CQE */
    bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(qp[0], &wr[cnt], &bad));
    EXPECT_EQ(&wr[cnt], bad);
}

TEST_F(ibv_post_send, sq_overflow_counts_bbs_of_the_wqe)
{
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(small_pair(qp, 100));
    const uint32_t                  cnt = qp_dv(qp[0]).sq.wqe_cnt;
    std::vector<struct ibv_send_wr> wr(cnt - 1);
    for (uint32_t i = 0; i < cnt - 1; ++i) {
        wr[i] = make_wr(IBV_WR_RDMA_WRITE, i, nullptr, 0, 0);
        wr[i].wr.rdma.remote_addr = addr(RESP);
        wr[i].wr.rdma.rkey        = rkey(RESP);
        wr[i].next                = (i < cnt - 2) ? &wr[i + 1] : nullptr;
    }
    struct ibv_send_wr *bad = nullptr;
    ASSERT_EQ(0, smlx5_post_send(qp[0], &wr[0], &bad));
    /* one BB left; a 2-BB inline WQE does not fit */
    struct ibv_sge     s    = sge(REQ, 0, 100);
    struct ibv_send_wr big  = make_wr(IBV_WR_RDMA_WRITE, 99, &s, 1,
                                      IBV_SEND_INLINE);
    big.wr.rdma.remote_addr = addr(RESP);
    big.wr.rdma.rkey        = rkey(RESP);
    EXPECT_EQ(ENOMEM, smlx5_post_send(qp[0], &big, &bad));
    EXPECT_EQ(&big, bad);
    /* a 1-BB one does */
    struct ibv_send_wr small  = make_wr(IBV_WR_RDMA_WRITE, 98, nullptr, 0, 0);
    small.wr.rdma.remote_addr = addr(RESP);
    small.wr.rdma.rkey        = rkey(RESP);
    EXPECT_EQ(0, smlx5_post_send(qp[0], &small, &bad));
}

TEST_F(ibv_post_send, num_sge_over_max_enomem)
{
    uint32_t                    max = qp_cap(req()).max_send_sge;
    std::vector<struct ibv_sge> s(max + 1);
    for (uint32_t i = 0; i <= max; ++i) {
        s[i] = sge(REQ, 8 * i, 8);
    }
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, s.data(), max + 1);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t            start = pi(req());
    struct ibv_send_wr *bad   = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(req(), &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(start, pi(req()));
    /* max itself is fine */
    wr.num_sge = max;
    post_ok(req(), &wr);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, post_before_rts_enomem)
{
    smlx5_qp_t *qp = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, qp);
    m_extra_qps.push_back(qp);
    smlx5_qp_t *peer = create_rc_qp(m_scq[RESP], m_rcq[RESP]);
    ASSERT_NE(nullptr, peer);
    m_extra_qps.push_back(peer);
    ASSERT_NO_FATAL_FAILURE(connect_rc(peer, smlx5_qp_num(qp)));

    struct ibv_send_wr wr   = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0);
    wr.wr.rdma.remote_addr  = addr(RESP);
    wr.wr.rdma.rkey         = rkey(RESP);
    struct ibv_send_wr *bad = nullptr;

    EXPECT_EQ(ENOMEM, smlx5_post_send(qp, &wr, &bad)) << "RESET";
    EXPECT_EQ(&wr, bad);
    ASSERT_NO_FATAL_FAILURE(rc_to_init(qp));
    bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(qp, &wr, &bad)) << "INIT";
    EXPECT_EQ(&wr, bad);
    ASSERT_NO_FATAL_FAILURE(rc_to_rtr(qp, smlx5_qp_num(peer)));
    bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_send(qp, &wr, &bad)) << "RTR";
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(0u, pi(qp));
    ASSERT_NO_FATAL_FAILURE(rc_to_rts(qp));
    post_ok(qp, &wr);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_RDMA_WRITE);
}

/* A device configured without atomics (STRAND_SIM_ATOMICS=0). */
class ibv_post_send_no_atomics : public ibv_post_send {
protected:
    void SetUp() override
    {
        setenv("STRAND_SIM_ATOMICS", "0", 1);
        ibv_post_send::SetUp();
    }

    void TearDown() override
    {
        ibv_post_send::TearDown();
        unsetenv("STRAND_SIM_ATOMICS");
    }
};

TEST_F(ibv_post_send_no_atomics, atomics_without_capability_eopnotsupp)
{
    ASSERT_EQ(IBV_ATOMIC_NONE, m_caps.attr.atomic_cap);
    struct ibv_sge      s   = sge(REQ, 0, 8);
    struct ibv_send_wr  wr  = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 1, &s, 1);
    struct ibv_send_wr *bad = nullptr;
    EXPECT_EQ(EOPNOTSUPP, smlx5_post_send(req(), &wr, &bad));
    EXPECT_EQ(&wr, bad);
}

/* ==================================== spec 1/2: WQE layout per opcode */

TEST_F(ibv_post_send, send_wqe_layout)
{
    post_recv(RESP, 0, 256, 1);
    struct ibv_sge s[3] = {sge(REQ, 0, 10), sge(REQ, 64, 0), sge(REQ, 128, 20)};
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, s, 3);
    uint32_t           bb = post_ok(req(), &wr);
    auto               w  = wqe(req(), bb);
    EXPECT_EQ(0x00, w[0]);                 /* opmod */
    EXPECT_EQ(bb & 0xffff, be16_at(w, 1)); /* WQE index */
    EXPECT_EQ(MLX5_OPCODE_SEND, w[3]);
    EXPECT_EQ(smlx5_qp_num(req()), be32_at(w, 4) >> 8);
    EXPECT_EQ(3u, be32_at(w, 4) & 0x3f); /* ctrl + 2 data */
    EXPECT_EQ(0, w[8]);
    EXPECT_EQ(0u, be16_at(w, 9));
    EXPECT_EQ(10u, be32_at(w, SEG1_OFF));
    EXPECT_EQ(lkey(REQ), be32_at(w, SEG1_OFF + 4));
    EXPECT_EQ(addr(REQ, 0), be64_at(w, SEG1_OFF + 8));
    EXPECT_EQ(20u, be32_at(w, SEG2_OFF)); /* zero-length skipped */
    EXPECT_EQ(addr(REQ, 128), be64_at(w, SEG2_OFF + 8));
    fill(REQ, 0, 10, 1);
    fill(REQ, 128, 20, 2);
    /* (filled after posting: not inline, so the device reads at execution
     * time; the data check below only compares after completion) */
}

TEST_F(ibv_post_send, send_delivers_data)
{
    post_recv(RESP, 256, 256, 77);
    fill(REQ, 0, 10, 1);
    fill(REQ, 128, 20, 2);
    struct ibv_sge s[3] = {sge(REQ, 0, 10), sge(REQ, 64, 0), sge(REQ, 128, 20)};
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, s, 3);
    post_ok(req(), &wr);
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(77u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(30u, wc.byte_len);
    EXPECT_EQ(smlx5_qp_num(resp()), wc.qp_num);
    EXPECT_EQ(0, memcmp(buf(RESP, 256), buf(REQ, 0), 10));
    EXPECT_EQ(0, memcmp(buf(RESP, 266), buf(REQ, 128), 20));
}

TEST_F(ibv_post_send, send_with_imm_wqe_layout)
{
    post_recv(RESP, 0, 64, 1);
    struct ibv_sge     s  = sge(REQ, 0, 8);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND_WITH_IMM, 1, &s, 1);
    wr.imm_data           = htobe32(0xcafe);
    uint32_t bb           = post_ok(req(), &wr);
    auto     w            = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_SEND_IMM, w[3]);
    EXPECT_EQ(2u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(0xcafeu, be32_at(w, 12));
    EXPECT_EQ(8u, be32_at(w, SEG1_OFF));
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0xcafe), wc.imm_data);
}

TEST_F(ibv_post_send, send_with_inv_wqe_layout)
{
    /* A separate MR on the responder whose rkey the SEND invalidates. */
    smlx5_mr_t *mr = smlx5_reg_mr(m_pd, buf(RESP, 8192), 4096, access_all());
    ASSERT_NE(nullptr, mr);
    post_recv(RESP, 0, 64, 1);
    struct ibv_sge     s  = sge(REQ, 0, 8);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND_WITH_INV, 1, &s, 1);
    wr.invalidate_rkey    = smlx5_mr_rkey(mr);
    uint32_t bb           = post_ok(req(), &wr);
    auto     w            = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_SEND_INVAL, w[3]);
    EXPECT_EQ(2u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(smlx5_mr_rkey(mr), be32_at(w, 12));
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
    EXPECT_EQ(smlx5_mr_rkey(mr), wc.invalidated_rkey);
    smlx5_dereg_mr(mr);
}

TEST_F(ibv_post_send, rdma_write_wqe_layout)
{
    struct ibv_sge     s   = sge(REQ, 0, 32);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, &s, 1);
    wr.wr.rdma.remote_addr = addr(RESP, 1024);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    auto     w             = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, w[3]);
    EXPECT_EQ(3u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(addr(RESP, 1024), be64_at(w, SEG1_OFF));
    EXPECT_EQ(rkey(RESP), be32_at(w, SEG1_OFF + 8));
    EXPECT_EQ(0u, be32_at(w, SEG1_OFF + 12));
    EXPECT_EQ(32u, be32_at(w, SEG2_OFF));
    EXPECT_EQ(lkey(REQ), be32_at(w, SEG2_OFF + 4));
    EXPECT_EQ(addr(REQ), be64_at(w, SEG2_OFF + 8));
}

TEST_F(ibv_post_send, rdma_write_delivers_data)
{
    fill(REQ, 0, 5000, 9);
    struct ibv_sge     s   = sge(REQ, 0, 5000); /* more than one MTU */
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 11, &s, 1);
    wr.wr.rdma.remote_addr = addr(RESP, 1024);
    wr.wr.rdma.rkey        = rkey(RESP);
    post_ok(req(), &wr);
    expect_send_cqe(m_scq[REQ], 11, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(0, memcmp(buf(RESP, 1024), buf(REQ), 5000));
    EXPECT_TRUE(cq_stays_empty(m_rcq[RESP])); /* no receive consumed */
}

TEST_F(ibv_post_send, rdma_write_with_imm_wqe_layout_and_delivery)
{
    post_recv(RESP, 0, 64, 21);
    fill(REQ, 0, 48, 4);
    struct ibv_sge     s   = sge(REQ, 0, 48);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 12, &s, 1);
    wr.imm_data            = htobe32(0x01020304);
    wr.wr.rdma.remote_addr = addr(RESP, 2048);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    auto     w             = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE_IMM, w[3]);
    EXPECT_EQ(3u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(0x01020304u, be32_at(w, 12));
    EXPECT_EQ(addr(RESP, 2048), be64_at(w, SEG1_OFF));
    EXPECT_EQ(48u, be32_at(w, SEG2_OFF));

    expect_send_cqe(m_scq[REQ], 12, IBV_WC_RDMA_WRITE);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(21u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0x01020304), wc.imm_data);
    EXPECT_EQ(48u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP, 2048), buf(REQ), 48));
}

TEST_F(ibv_post_send, rdma_read_wqe_layout_and_data)
{
    fill(RESP, 4096, 6000, 13);
    struct ibv_sge     s[2] = {sge(REQ, 0, 1000), sge(REQ, 8192, 5000)};
    struct ibv_send_wr wr   = make_wr(IBV_WR_RDMA_READ, 13, s, 2);
    wr.wr.rdma.remote_addr  = addr(RESP, 4096);
    wr.wr.rdma.rkey         = rkey(RESP);
    uint32_t bb             = post_ok(req(), &wr);
    auto     w              = wqe(req(), bb, 64);
    EXPECT_EQ(MLX5_OPCODE_RDMA_READ, w[3]);
    EXPECT_EQ(4u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(addr(RESP, 4096), be64_at(w, SEG1_OFF));
    EXPECT_EQ(rkey(RESP), be32_at(w, SEG1_OFF + 8));
    EXPECT_EQ(1000u, be32_at(w, SEG2_OFF)); /* local scatter */
    EXPECT_EQ(addr(REQ, 0), be64_at(w, SEG2_OFF + 8));
    EXPECT_EQ(5000u, be32_at(w, SEG3_OFF));
    EXPECT_EQ(addr(REQ, 8192), be64_at(w, SEG3_OFF + 8));

    struct ibv_wc wc;
    expect_send_cqe(m_scq[REQ], 13, IBV_WC_RDMA_READ, &wc);
    EXPECT_EQ(6000u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(REQ, 0), buf(RESP, 4096), 1000));
    EXPECT_EQ(0, memcmp(buf(REQ, 8192), buf(RESP, 5096), 5000));
}

TEST_F(ibv_post_send, atomic_cmp_and_swp_wqe_layout)
{
    uint64_t orig = 0x1111222233334444ull;
    memcpy(buf(RESP, 64), &orig, 8);
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_CMP_AND_SWP, 14, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 64);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = orig;
    wr.wr.atomic.swap        = 0x5555666677778888ull;
    uint32_t bb              = post_ok(req(), &wr);
    auto     w               = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_ATOMIC_CS, w[3]);
    EXPECT_EQ(4u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(addr(RESP, 64), be64_at(w, SEG1_OFF));
    EXPECT_EQ(rkey(RESP), be32_at(w, SEG1_OFF + 8));
    EXPECT_EQ(0x5555666677778888ull, be64_at(w, SEG2_OFF)); /* swap */
    EXPECT_EQ(orig, be64_at(w, SEG2_OFF + 8));              /* compare */
    EXPECT_EQ(8u, be32_at(w, SEG3_OFF));
    EXPECT_EQ(lkey(REQ), be32_at(w, SEG3_OFF + 4));
    EXPECT_EQ(addr(REQ), be64_at(w, SEG3_OFF + 8));
}

TEST_F(ibv_post_send, atomic_cmp_and_swp_returns_original_and_swaps)
{
    uint64_t orig = 0x1111222233334444ull, now;
    memcpy(buf(RESP, 64), &orig, 8);
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_CMP_AND_SWP, 14, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 64);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = orig;
    wr.wr.atomic.swap        = 0x5555666677778888ull;
    post_ok(req(), &wr);
    struct ibv_wc wc;
    expect_send_cqe(m_scq[REQ], 14, IBV_WC_COMP_SWAP, &wc);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(orig, atomic_reply(buf(REQ)));
    memcpy(&now, buf(RESP, 64), 8);
    EXPECT_EQ(0x5555666677778888ull, now);

    /* compare mismatch: no swap, original returned */
    wr.wr_id = 15;
    post_ok(req(), &wr);
    expect_send_cqe(m_scq[REQ], 15, IBV_WC_COMP_SWAP);
    EXPECT_EQ(0x5555666677778888ull, atomic_reply(buf(REQ)));
    memcpy(&now, buf(RESP, 64), 8);
    EXPECT_EQ(0x5555666677778888ull, now);
}

TEST_F(ibv_post_send, atomic_fetch_and_add_wqe_layout)
{
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 16, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 128);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = 0x10;
    wr.wr.atomic.swap        = 0xffffffffull; /* ignored by FA */
    uint32_t bb              = post_ok(req(), &wr);
    auto     w               = wqe(req(), bb);
    EXPECT_EQ(MLX5_OPCODE_ATOMIC_FA, w[3]);
    EXPECT_EQ(4u, be32_at(w, 4) & 0x3f);
    EXPECT_EQ(addr(RESP, 128), be64_at(w, SEG1_OFF));
    EXPECT_EQ(0x10u, be64_at(w, SEG2_OFF)); /* add */
    EXPECT_EQ(0u, be64_at(w, SEG2_OFF + 8));
    EXPECT_EQ(8u, be32_at(w, SEG3_OFF));
}

TEST_F(ibv_post_send, atomic_fetch_and_add_returns_original_and_adds)
{
    uint64_t orig = 1000, now;
    memcpy(buf(RESP, 128), &orig, 8);
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 16, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 128);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = 0x10;
    post_ok(req(), &wr);
    struct ibv_wc wc;
    expect_send_cqe(m_scq[REQ], 16, IBV_WC_FETCH_ADD, &wc);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(orig, atomic_reply(buf(REQ)));
    memcpy(&now, buf(RESP, 128), 8);
    EXPECT_EQ(orig + 0x10, now);
}

TEST_F(ibv_post_send, zero_length_sge_not_emitted)
{
    struct ibv_sge     s[2] = {sge(REQ, 0, 0), sge(REQ, 0, 0)};
    struct ibv_send_wr wr   = make_wr(IBV_WR_RDMA_WRITE, 1, s, 2);
    wr.wr.rdma.remote_addr  = addr(RESP);
    wr.wr.rdma.rkey         = rkey(RESP);
    uint32_t bb             = post_ok(req(), &wr);
    EXPECT_EQ(2u, be32_at(wqe(req(), bb), 4) & 0x3f); /* ctrl + raddr */
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_RDMA_WRITE);
}

/* ===================================================== spec 1: geometry */

TEST_F(ibv_post_send, wqe_index_is_the_producer_bb_counter)
{
    struct ibv_sge     s      = sge(REQ, 0, 100);
    struct ibv_send_wr big    = make_wr(IBV_WR_SEND, 1, &s, 1,
                                        IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    struct ibv_send_wr small  = make_wr(IBV_WR_RDMA_WRITE, 2, nullptr, 0);
    small.wr.rdma.remote_addr = addr(RESP);
    small.wr.rdma.rkey        = rkey(RESP);
    post_recv(RESP, 0, 128, 1);
    uint32_t bb0 = post_ok(req(), &big); /* 1 + 7 ds = 2 BBs */
    uint32_t bb1 = post_ok(req(), &small);
    EXPECT_EQ(bb0 + 2, bb1);
    EXPECT_EQ(bb1 & 0xffff, be16_at(wqe(req(), bb1), 1));
    EXPECT_EQ(bb1 + 1, pi(req()));
    expect_send_cqe(m_scq[REQ], 1, IBV_WC_SEND);
    expect_send_cqe(m_scq[REQ], 2, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, wqe_index_not_masked_to_sq_size)
{
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(small_pair(qp));
    const uint32_t cnt = qp_dv(qp[0]).sq.wqe_cnt;
    for (uint32_t i = 0; i < cnt + 3; ++i) {
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, i, nullptr, 0);
        wr.wr.rdma.remote_addr = addr(RESP);
        wr.wr.rdma.rkey        = rkey(RESP);
        uint32_t bb            = post_ok(qp[0], &wr);
        ASSERT_EQ(i, bb);
        auto w = wqe(qp[0], bb, 16);
        /* BB i & (cnt-1), index i */
        EXPECT_EQ(i, be16_at(w, 1)) << i;
        expect_send_cqe(m_scq[REQ], i, IBV_WC_RDMA_WRITE);
    }
    EXPECT_EQ(cnt + 3, pi(qp[0]));
}

TEST_F(ibv_post_send, multi_bb_wqe_wraps_to_bb0)
{
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(small_pair(qp, 100));
    struct mlx5dv_qp dv  = qp_dv(qp[0]);
    const uint32_t   cnt = dv.sq.wqe_cnt;
    /* move the producer to the last BB */
    for (uint32_t i = 0; i < cnt - 1; ++i) {
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, i, nullptr, 0);
        wr.wr.rdma.remote_addr = addr(RESP);
        wr.wr.rdma.rkey        = rkey(RESP);
        post_ok(qp[0], &wr);
        expect_send_cqe(m_scq[REQ], i, IBV_WC_RDMA_WRITE);
    }
    ASSERT_EQ(cnt - 1, pi(qp[0]));
    post_recv_on(qp[1], RESP, 0, 256, 500);
    fill(REQ, 0, 100, 17);
    struct ibv_sge     s  = sge(REQ, 0, 100);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 99, &s, 1,
                                    IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    uint32_t           bb = post_ok(qp[0], &wr);
    ASSERT_EQ(cnt - 1, bb);
    EXPECT_EQ(cnt + 1, pi(qp[0])); /* 2 BBs */
    const uint8_t *sq   = static_cast<const uint8_t *>(dv.sq.buf);
    const uint8_t *last = sq + (cnt - 1) * 64;
    EXPECT_EQ(MLX5_OPCODE_SEND, last[3]);
    EXPECT_EQ(8u,
              be32toh(*reinterpret_cast<const uint32_t *>(last + 4)) & 0x3f);
    EXPECT_EQ(0x80000000u | 100u,
              be32toh(*reinterpret_cast<const uint32_t *>(last + 16)));
    EXPECT_EQ(0, memcmp(last + 20, buf(REQ), 44)); /* to the end */
    EXPECT_EQ(0, memcmp(sq, buf(REQ, 44), 56));    /* continues at BB 0 */
    for (int i = 56; i < 64; ++i) {
        EXPECT_EQ(0, sq[i]) << "padding " << i;
    }
    expect_send_cqe(m_scq[REQ], 99, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(500u, wc.wr_id);
    EXPECT_EQ(100u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 100));
}

TEST_F(ibv_post_send, doorbell_record_and_bf_register_written)
{
    struct mlx5dv_qp   dv  = qp_dv(req());
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, nullptr, 0);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    uint32_t bb            = post_ok(req(), &wr);
    EXPECT_EQ(bb + 1, sq_dbrec(dv));
    if ((dv.bf.reg != nullptr) && (dv.bf.size != 0)) {
        /* first doorbell at offset 0, the next at bf.size */
        EXPECT_EQ(0, memcmp(dv.bf.reg, wqe(req(), bb, 8).data(), 8));
        uint32_t bb2 = post_ok(req(), &wr);
        EXPECT_EQ(0, memcmp(static_cast<uint8_t *>(dv.bf.reg) + dv.bf.size,
                            wqe(req(), bb2, 8).data(), 8));
    }
}

/* ============================================================== DCI */

TEST_F(ibv_post_send, dci_wqe_has_48_byte_av_and_stream_id)
{
    uint8_t     log_streams = m_caps.dci_max_log_num_concurent ? 2 : 0;
    uint8_t     log_errored = m_caps.dci_max_log_num_errored ? 1 : 0;
    smlx5_qp_t *dci         = create_dci(log_streams, log_errored);
    ASSERT_NE(nullptr, dci);
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(0u, smlx5_dct_num(dct));

    fill(REQ, 0, 64, 21);
    struct ibv_sge     s   = sge(REQ, 0, 64);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 31, &s, 1);
    wr.wr.rdma.remote_addr = addr(RESP, 4096);
    wr.wr.rdma.rkey        = rkey(RESP);
    smlx5_dc_target_t   t  = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
    uint16_t            stream = log_streams ? 3 : 0;
    uint32_t            bb     = pi(dci);
    struct ibv_send_wr *bad    = nullptr;
    ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &t, stream, &bad));
    EXPECT_EQ(bb + 2, pi(dci)); /* 6 ds */

    auto w = wqe(dci, bb, 128);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, w[3]);
    EXPECT_EQ(smlx5_qp_num(dci), be32_at(w, 4) >> 8);
    EXPECT_EQ(6u, be32_at(w, 4) & 0x3f); /* ctrl 1 + AV 3 + 1 + 1 */
    EXPECT_EQ(stream, be16_at(w, 9));    /* bytes 9-10 */
    /* full AV at 16..63 */
    EXPECT_EQ(SMLX5_DC_KEY_DEFAULT, be64_at(w, 16));
    EXPECT_EQ(0x80000000u | smlx5_dct_num(dct), be32_at(w, 24));
    EXPECT_EQ(m_lid, be16_at(w, 30));
    for (int i = 32; i < 64; ++i) {
        EXPECT_EQ(0, w[i]) << "AV byte " << i - 16;
    }
    /* raddr starts in the next BB */
    EXPECT_EQ(addr(RESP, 4096), be64_at(w, 64));
    EXPECT_EQ(rkey(RESP), be32_at(w, 72));
    EXPECT_EQ(64u, be32_at(w, 80));
    EXPECT_EQ(addr(REQ), be64_at(w, 88));

    expect_send_cqe(m_scq[REQ], 31, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 64));
}

TEST_F(ibv_post_send, dci_raddr_after_av_wraps_to_bb0)
{
    m_cap.max_send_wr = 2; /* a short SQ */
    smlx5_qp_t *dci   = create_dci();
    ASSERT_NE(nullptr, dci);
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, dct);
    smlx5_dc_target_t t   = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
    struct mlx5dv_qp  dv  = qp_dv(dci);
    const uint32_t    cnt = dv.sq.wqe_cnt;

    /* ctrl + AV alone (a SEND without data) is 1 BB, a WRITE without data
     * 2 BBs: one SEND, then WRITEs until the producer sits on the last BB */
    struct ibv_recv_wr rwr, *rbad = nullptr;
    memset(&rwr, 0, sizeof(rwr));
    ASSERT_EQ(0, smlx5_post_srq_recv(srq, &rwr, &rbad));
    struct ibv_send_wr  snd = make_wr(IBV_WR_SEND, 1000, nullptr, 0);
    struct ibv_send_wr *bad = nullptr;
    ASSERT_EQ(0, smlx5_post_send_dc(dci, &snd, &t, 0, &bad));
    ASSERT_EQ(1u, pi(dci));
    expect_send_cqe(m_scq[REQ], 1000, IBV_WC_SEND);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 0, nullptr, 0);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    while (pi(dci) % cnt != cnt - 1) {
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &t, 0, &bad));
        expect_send_cqe(m_scq[REQ], wr.wr_id, IBV_WC_RDMA_WRITE);
        wr.wr_id++;
    }
    uint32_t bb            = pi(dci);
    wr.wr_id               = 2000;
    wr.wr.rdma.remote_addr = addr(RESP, 1234);
    ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &t, 0, &bad));
    const uint8_t *sq = static_cast<const uint8_t *>(dv.sq.buf);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, sq[(cnt - 1) * 64 + 3]);
    EXPECT_EQ(addr(RESP, 1234),
              be64toh(*reinterpret_cast<const uint64_t *>(sq)));
    EXPECT_EQ(bb + 2, pi(dci));
    expect_send_cqe(m_scq[REQ], 2000, IBV_WC_RDMA_WRITE);
}

TEST_F(ibv_post_send, dci_send_reaches_dct_srq)
{
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dci);
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, dct);
    post_srq_recv(srq, RESP, 0, 256, 55);

    fill(REQ, 0, 200, 3);
    struct ibv_sge      s   = sge(REQ, 0, 200);
    struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, 56, &s, 1);
    smlx5_dc_target_t   t   = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
    struct ibv_send_wr *bad = nullptr;
    uint32_t            bb  = pi(dci);
    ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &t, 0, &bad));
    auto w = wqe(dci, bb, 80);
    EXPECT_EQ(MLX5_OPCODE_SEND, w[3]);
    EXPECT_EQ(5u, be32_at(w, 4) & 0x3f); /* ctrl + AV + data */
    EXPECT_EQ(200u, be32_at(w, 64));

    expect_send_cqe(m_scq[REQ], 56, IBV_WC_SEND);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(55u, wc.wr_id);
    EXPECT_EQ(200u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 200));
}

/* ======================================================= post_recv */

class ibv_post_recv : public ibv_post_send {};

TEST_F(ibv_post_recv, wqe_has_data_segs_and_invalid_lkey_terminator)
{
    struct mlx5dv_qp dv = qp_dv(resp());
    ASSERT_GE(dv.rq.stride, 32u);
    struct ibv_sge     s[2] = {sge(RESP, 0, 0), sge(RESP, 64, 100)};
    struct ibv_recv_wr wr, *bad = nullptr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = 1;
    wr.sg_list = s;
    wr.num_sge = 2;
    ASSERT_EQ(0, smlx5_post_recv(resp(), &wr, &bad));
    EXPECT_EQ(htobe32(1), dv.dbrec[MLX5_RCV_DBR]);
    auto *d = static_cast<struct mlx5_wqe_data_seg *>(dv.rq.buf);
    EXPECT_EQ(100u, be32toh(d[0].byte_count)); /* zero length skipped */
    EXPECT_EQ(lkey(RESP), be32toh(d[0].lkey));
    EXPECT_EQ(addr(RESP, 64), be64toh(d[0].addr));
    EXPECT_EQ(0u, be32toh(d[1].byte_count));
    EXPECT_EQ((uint32_t)MLX5_INVALID_LKEY, be32toh(d[1].lkey));
    EXPECT_EQ(0u, be64toh(d[1].addr));
}

TEST_F(ibv_post_recv, num_sge_over_max_einval)
{
    uint32_t                    max = qp_cap(resp()).max_recv_sge;
    std::vector<struct ibv_sge> s(max + 1, sge(RESP, 0, 8));
    struct ibv_recv_wr          wr, *bad = nullptr;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = s.data();
    wr.num_sge = max + 1;
    EXPECT_EQ(EINVAL, smlx5_post_recv(resp(), &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(0u, be32toh(qp_dv(resp()).dbrec[MLX5_RCV_DBR]));
}

TEST_F(ibv_post_recv, full_enomem_and_earlier_wrs_stay_posted)
{
    uint32_t                        cnt = qp_dv(resp()).rq.wqe_cnt;
    std::vector<struct ibv_recv_wr> wr(cnt + 1);
    struct ibv_sge                  s = sge(RESP, 0, 8);
    for (uint32_t i = 0; i <= cnt; ++i) {
        memset(&wr[i], 0, sizeof(wr[i]));
        wr[i].wr_id   = i;
        wr[i].sg_list = &s;
        wr[i].num_sge = 1;
        wr[i].next    = (i < cnt) ? &wr[i + 1] : nullptr;
    }
    struct ibv_recv_wr *bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_recv(resp(), &wr[0], &bad));
    EXPECT_EQ(&wr[cnt], bad);
    EXPECT_EQ(htobe32(cnt & 0xffff), qp_dv(resp()).dbrec[MLX5_RCV_DBR]);
}

TEST_F(ibv_post_recv, qp_on_srq_has_no_rq)
{
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *qp = create_rc_qp(m_scq[RESP], m_rcq[RESP], srq);
    ASSERT_NE(nullptr, qp);
    m_extra_qps.push_back(qp);
    struct ibv_sge     s = sge(RESP, 0, 8);
    struct ibv_recv_wr wr, *bad = nullptr;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &s;
    wr.num_sge = 1;
    EXPECT_EQ(ENOMEM, smlx5_post_recv(qp, &wr, &bad));
    EXPECT_EQ(&wr, bad);
}

/* =================================================== post_srq_recv */

class ibv_post_srq_recv : public ibv_post_send {};

TEST_F(ibv_post_srq_recv, wqe_is_next_segment_plus_data_segs)
{
    smlx5_srq_t *srq = create_srq(4, 2);
    ASSERT_NE(nullptr, srq);
    struct mlx5dv_srq dv;
    ASSERT_EQ(0, smlx5_srq_dv(srq, &dv));
    ASSERT_EQ(64u, dv.stride); /* roundup_pow2(max(32, 16 + 2 * 16)) */
    EXPECT_EQ(0u, dv.head);

    struct ibv_sge     s = sge(RESP, 128, 77);
    struct ibv_recv_wr wr, *bad = nullptr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = 9;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ASSERT_EQ(0, smlx5_post_srq_recv(srq, &wr, &bad));
    EXPECT_EQ(htobe32(1), dv.dbrec[0]);
    const uint8_t *w0 = static_cast<const uint8_t *>(dv.buf);
    auto *next = reinterpret_cast<const struct mlx5_wqe_srq_next_seg *>(w0);
    EXPECT_EQ(1u, be16toh(next->next_wqe_index));
    auto *d = reinterpret_cast<const struct mlx5_wqe_data_seg *>(w0 + 16);
    EXPECT_EQ(77u, be32toh(d[0].byte_count));
    EXPECT_EQ(lkey(RESP), be32toh(d[0].lkey));
    EXPECT_EQ(addr(RESP, 128), be64toh(d[0].addr));
    EXPECT_EQ((uint32_t)MLX5_INVALID_LKEY, be32toh(d[1].lkey)); /* terminator */
    EXPECT_EQ(0u, be32toh(d[1].byte_count));
}

TEST_F(ibv_post_srq_recv, full_enomem_sentinel_kept)
{
    smlx5_srq_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.max_wr      = 7;
    attr.max_sge     = 1;
    smlx5_srq_t *srq = smlx5_create_srq(m_pd, &attr);
    ASSERT_NE(nullptr, srq);
    m_extra_srqs.push_back(srq);
    uint32_t usable = attr.max_wr; /* as reported back */
    ASSERT_GE(usable, 7u);

    std::vector<struct ibv_recv_wr> wr(usable + 1);
    struct ibv_sge                  s = sge(RESP, 0, 8);
    for (uint32_t i = 0; i <= usable; ++i) {
        memset(&wr[i], 0, sizeof(wr[i]));
        wr[i].wr_id   = i;
        wr[i].sg_list = &s;
        wr[i].num_sge = 1;
        wr[i].next    = (i < usable) ? &wr[i + 1] : nullptr;
    }
    struct ibv_recv_wr *bad = nullptr;
    EXPECT_EQ(ENOMEM, smlx5_post_srq_recv(srq, &wr[0], &bad));
    EXPECT_EQ(&wr[usable], bad);
    struct mlx5dv_srq dv;
    ASSERT_EQ(0, smlx5_srq_dv(srq, &dv));
    EXPECT_EQ(htobe32(usable), dv.dbrec[0]);
    EXPECT_EQ(dv.head, dv.tail);
}

TEST_F(ibv_post_srq_recv, num_sge_over_max_einval)
{
    smlx5_srq_t *srq = create_srq(4, 1);
    ASSERT_NE(nullptr, srq);
    struct mlx5dv_srq dv;
    ASSERT_EQ(0, smlx5_srq_dv(srq, &dv));
    int                         over = (int)((dv.stride - 16) / 16) + 1;
    std::vector<struct ibv_sge> s(over, sge(RESP, 0, 8));
    struct ibv_recv_wr          wr, *bad = nullptr;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = s.data();
    wr.num_sge = over;
    EXPECT_EQ(EINVAL, smlx5_post_srq_recv(srq, &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(0u, dv.dbrec[0]);
}

TEST_F(ibv_post_srq_recv, doorbell_counts_wqes_ever_posted)
{
    smlx5_srq_t *srq = create_srq(4, 1);
    ASSERT_NE(nullptr, srq);
    struct mlx5dv_srq dv;
    ASSERT_EQ(0, smlx5_srq_dv(srq, &dv));
    struct ibv_sge     s = sge(RESP, 0, 8);
    struct ibv_recv_wr wr[3], *bad = nullptr;
    for (int i = 0; i < 3; ++i) {
        memset(&wr[i], 0, sizeof(wr[i]));
        wr[i].sg_list = &s;
        wr[i].num_sge = 1;
        wr[i].next    = (i < 2) ? &wr[i + 1] : nullptr;
    }
    ASSERT_EQ(0, smlx5_post_srq_recv(srq, wr, &bad));
    EXPECT_EQ(htobe32(3), dv.dbrec[0]);
    wr[0].next = nullptr;
    ASSERT_EQ(0, smlx5_post_srq_recv(srq, wr, &bad));
    EXPECT_EQ(htobe32(4), dv.dbrec[0]);
}

TEST_F(ibv_post_srq_recv, retired_wqes_are_reused)
{
    smlx5_srq_t *srq = create_srq(2, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *qp[2];
    qp[0] = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    qp[1] = create_rc_qp(m_scq[RESP], m_rcq[RESP], srq);
    ASSERT_NE(nullptr, qp[0]);
    ASSERT_NE(nullptr, qp[1]);
    m_extra_qps.push_back(qp[0]);
    m_extra_qps.push_back(qp[1]);
    ASSERT_NO_FATAL_FAILURE(connect_rc(qp[0], smlx5_qp_num(qp[1])));
    ASSERT_NO_FATAL_FAILURE(connect_rc(qp[1], smlx5_qp_num(qp[0])));

    /* more messages than the SRQ holds: each polled receive frees its WQE */
    for (int i = 0; i < 10; ++i) {
        struct ibv_sge     rs = sge(RESP, 64 * i, 64);
        struct ibv_recv_wr rwr, *rbad = nullptr;
        memset(&rwr, 0, sizeof(rwr));
        rwr.wr_id   = 100 + i;
        rwr.sg_list = &rs;
        rwr.num_sge = 1;
        ASSERT_EQ(0, smlx5_post_srq_recv(srq, &rwr, &rbad)) << i;
        fill(REQ, 64 * i, 16, (uint8_t)i);
        struct ibv_sge      s   = sge(REQ, 64 * i, 16);
        struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, i, &s, 1);
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp[0], &wr, &bad));
        expect_send_cqe(m_scq[REQ], i, IBV_WC_SEND);
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_rcq[RESP], &wc)) << i;
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ(100u + i, wc.wr_id);
        EXPECT_EQ(0, memcmp(buf(RESP, 64 * i), buf(REQ, 64 * i), 16));
    }
}
