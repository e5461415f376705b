/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software device's tag-matching SRQ at the WQE/CQE level (spec
 * section 4, seed page ibv_post_srq_ops.3): list operations built by hand
 * on the command QP, as the transport builds them, and the CQE bytes they
 * produce. Matching, rendezvous and phase run end to end in
 * test/gtest/uct/test_dc_tag.cc.
 */
#include "sim_fixture.h"
#include "sim_dv_util.h"

extern "C" {
#include "mlx5/tm.h"
#include "mlx5/doorbell.h"
}

class sim_tm : public sim_fixture {
protected:
    void SetUp() override
    {
        sim_fixture::SetUp();
        m_cq = smlx5_create_cq(m_ctx, 256, nullptr);
        ASSERT_NE(nullptr, m_cq);
        m_dvcq.init(m_cq);
    }

    void TearDown() override
    {
        /* QPs on the SRQ (a DCT) go first: an SRQ in use is not destroyed */
        for (auto *qp : m_extra_qps) {
            EXPECT_EQ(0, smlx5_destroy_qp(qp));
        }
        m_extra_qps.clear();
        if (m_srq != nullptr) {
            EXPECT_EQ(0, smlx5_destroy_srq(m_srq));
        }
        smlx5_destroy_cq(m_cq);
        if (m_cq128 != nullptr) {
            smlx5_destroy_cq(m_cq128);
        }
        sim_fixture::TearDown();
    }

    smlx5_srq_t *create(uint32_t tags, uint32_t ops, smlx5_cq_t *cq)
    {
        smlx5_srq_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.max_wr       = 16;
        attr.max_sge      = 1;
        attr.max_num_tags = tags;
        attr.max_ops      = ops;
        attr.cq           = cq;
        return smlx5_create_srq(m_pd, &attr);
    }

    /* cq: where the SRQ's completions go (list operations, tags, and for
     * DCTs on it their receives): the fixture's own, or the RESP side's */
    void open_srq(smlx5_cq_t *cq = nullptr)
    {
        if (cq != nullptr) {
            m_dvcq = dv_cq();
            m_dvcq.init(cq);
        }
        m_srq = create(7, 16, (cq != nullptr) ? cq : m_cq);
        ASSERT_NE(nullptr, m_srq);
        m_cmd = smlx5_srq_cmd_qp(m_srq);
        ASSERT_NE(nullptr, m_cmd);
        ASSERT_EQ(0, smlx5_qp_dv(m_cmd, &m_dv));
    }

    /* one list operation, one BB: ctrl + tm segment (+ data segment) */
    void post(unsigned op, uint8_t flags, uint16_t index, uint16_t sw_cnt,
              uint64_t tag = 0, uint64_t mask = 0, unsigned ds = 0,
              uint8_t opcode = MLX5_OPCODE_TAG_MATCHING, uint32_t len = 64)
    {
        auto *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(m_dv.sq.buf,
                                                              m_dv.sq.wqe_cnt,
                                                              m_cur);
        auto *seg  = (struct mlx5_wqe_tm_seg *)(ctrl + 1);
        strand_set_tm_seg(seg, op, flags, index, sw_cnt, tag, mask);
        if (ds == 0) {
            ds = (op == STRAND_TM_OP_APPEND) ? 4 : 3;
        }
        if (op == STRAND_TM_OP_APPEND) {
            strand_set_data_seg((struct mlx5_wqe_data_seg *)(seg + 1),
                                (uintptr_t)m_buf[0], len,
                                smlx5_mr_lkey(m_mr[0]));
        }
        strand_set_ctrl_seg(ctrl, 0, (uint16_t)m_cur, opcode,
                            smlx5_qp_num(m_cmd), ds, 0, 0);
        ++m_cur;
        strand_bf_ring_doorbell(m_dv.dbrec, smlx5_qp_bf(m_cmd), m_cur, ctrl);
        smlx5_qp_doorbell(m_cmd);
    }

    /* A SEND with a TMH (EAGER, `tag`) and `len` payload bytes from REQ
     * memory at offset 1024, over a DCI to `dct`. */
    void send_tmh(smlx5_qp_t *dci, smlx5_qp_t *dct, uint64_t tag, uint32_t len,
                  uint8_t seed)
    {
        auto *tmh = reinterpret_cast<struct ibv_tmh *>(buf(REQ, 1024));
        memset(tmh, 0, sizeof(*tmh));
        tmh->opcode  = IBV_TMH_EAGER;
        tmh->app_ctx = htobe32(0x1234);
        tmh->tag     = htobe64(tag);
        for (uint32_t i = 0; i < len; ++i) {
            buf(REQ, 1024 + STRAND_TMH_SIZE)[i] = (uint8_t)(seed * 31 + i);
        }
        smlx5_dc_target_t  dc = {m_lid, smlx5_dct_num(dct),
                                 SMLX5_DC_KEY_DEFAULT};
        struct ibv_sge     s  = sge(REQ, 1024, STRAND_TMH_SIZE + len);
        struct ibv_send_wr wr = make_wr(IBV_WR_SEND, tag, &s, 1), *bad;
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, 0, &bad));
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ(tag, wc.wr_id);
    }

    smlx5_cq_t      *m_cq    = nullptr;
    smlx5_cq_t      *m_cq128 = nullptr; /* 128-byte CQEs, as asked */
    dv_cq            m_dvcq;
    smlx5_srq_t     *m_srq = nullptr;
    smlx5_qp_t      *m_cmd = nullptr;
    struct mlx5dv_qp m_dv;
    uint32_t         m_cur = 0;
};

/* spec section 4: "Requires an extended CQ (else EINVAL)"; the tag list is
 * limited by max_num_tags, list operations in flight by max_ops */
TEST_F(sim_tm, create_checks_cq_tags_and_ops)
{
    errno = 0;
    EXPECT_EQ(nullptr, create(7, 16, nullptr));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr, create(m_caps.tm_max_num_tags + 1, 16, m_cq));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr, create(7, 0, m_cq));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr, create(7, m_caps.tm_max_ops + 1, m_cq));
    EXPECT_EQ(EINVAL, errno);
    /* an ordinary SRQ has no command QP */
    smlx5_srq_t *plain = create(0, 0, nullptr);
    ASSERT_NE(nullptr, plain);
    EXPECT_EQ(nullptr, smlx5_srq_cmd_qp(plain));
    smlx5_destroy_srq(plain);
}

/* seed: "To request WC for tag list operations IBV_OPS_SIGNALED flags
 * should be passed"; spec: ADD/DEL/SYNC done are NO_PACKET CQEs with
 * app 1, app_op 5/6/7, tm_cqe success and hw_phase_cnt */
TEST_F(sim_tm, list_operations_complete_only_when_asked)
{
    open_srq();
    post(STRAND_TM_OP_APPEND, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 1, 0,
         0x1234, ~0ull);
    struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_NO_PACKET, strand_cqe_opcode(cqe));
    EXPECT_EQ(STRAND_CQE_APP_TM, cqe->app);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_APPEND, cqe->app_op);
    EXPECT_TRUE(be32toh(cqe->tm_cqe.success) & STRAND_TM_CQE_SUCCESS);
    EXPECT_EQ(0, be16toh(cqe->tm_cqe.hw_phase_cnt));
    EXPECT_EQ(0, strand_cqe_wqe_counter(cqe));
    EXPECT_EQ(smlx5_qp_num(m_cmd), strand_cqe_qpn(cqe));

    /* unsignaled: no CQE */
    post(STRAND_TM_OP_APPEND, 0, 2, 0, 0x5678, ~0ull);
    EXPECT_EQ(nullptr, m_dvcq.wait(m_ctx, m_dvcq.ci, 100));

    /* seed: "IBV_WR_TAG_SYNC may be used if no changes to matching list
     * required, just to updated unexpected messages counter" */
    post(STRAND_TM_OP_NOP, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 0, 0);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_NOOP, cqe->app_op);
    EXPECT_EQ(2, strand_cqe_wqe_counter(cqe));
}

/* seed: "Opcode IBV_WR_TAG_DEL removes previously added tag entry ...
 * Operation may fail due to concurrent tag consumption - in this case
 * IBV_WC_TM_ERR status will be returned": a REMOVE of an entry that is no
 * longer in the list reports success clear */
TEST_F(sim_tm, remove_of_an_entry_no_longer_listed_reports_failure)
{
    open_srq();
    post(STRAND_TM_OP_APPEND, 0, 1, 0, 7, ~0ull); /* slot 0 */
    post(STRAND_TM_OP_REMOVE, STRAND_TM_FLAG_CQE, 0, 0);
    struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_REMOVE, cqe->app_op);
    EXPECT_TRUE(be32toh(cqe->tm_cqe.success) & STRAND_TM_CQE_SUCCESS);
    post(STRAND_TM_OP_REMOVE, STRAND_TM_FLAG_CQE, 0, 0);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_REMOVE, cqe->app_op);
    EXPECT_FALSE(be32toh(cqe->tm_cqe.success) & STRAND_TM_CQE_SUCCESS);
}

/* A malformed list operation (an APPEND into an entry that is in the
 * list, a wrong size, another opcode) fails like any malformed WQE:
 * LOC_QP_OP_ERR, and the command QP goes to error. */
TEST_F(sim_tm, malformed_list_operation_is_a_local_qp_operation_error)
{
    open_srq();
    post(STRAND_TM_OP_APPEND, 0, 1, 0, 7, ~0ull); /* slot 0, next 1 */
    post(STRAND_TM_OP_APPEND, 0, 0, 0, 8, ~0ull); /* slot 1, next 0 */
    post(STRAND_TM_OP_APPEND, STRAND_TM_FLAG_CQE, 2, 0, 9, ~0ull); /* 0 */
    struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
    EXPECT_EQ(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, strand_cqe_syndrome(cqe));
    struct ibv_qp_attr      attr;
    struct ibv_qp_init_attr init;
    ASSERT_EQ(0, smlx5_query_qp(m_cmd, &attr, IBV_QP_STATE, &init));
    EXPECT_EQ(IBV_QPS_ERR, attr.qp_state);
    /* what is posted after it is flushed, one CQE each, signaled or not */
    post(STRAND_TM_OP_NOP, 0, 0, 0);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
    EXPECT_EQ(MLX5_CQE_SYNDROME_WR_FLUSH_ERR, strand_cqe_syndrome(cqe));
    EXPECT_EQ(3, strand_cqe_wqe_counter(cqe));
}

/* seed: "This process considered coherent only if all unexpected messages
 * received by HW is completely processed in SW. To pass to hardware number
 * of processed unexpected messages unexpected_cnt field should be used and
 * IBV_OPS_TM_SYNC flag should be set"; spec section 4: after an unexpected
 * message the device stops matching until software reports the count;
 * the unexpected CQE carries the whole message with its TMH (app_op
 * UNEXPECTED, byte count with the TMH), a matched eager message lands in
 * the tag's buffer (CONSUMED_MSG, TMH in the CQE, app_info = the handle,
 * byte count without the TMH). */
TEST_F(sim_tm, matching_stops_after_an_unexpected_message_until_synced)
{
    open_srq(m_rcq[RESP]);
    smlx5_qp_t *dct = create_dct(m_srq, SMLX5_DC_KEY_DEFAULT);
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci);
    for (unsigned i = 0; i < 4; ++i) {
        post_srq_recv(m_srq, RESP, 256 * i, 256, 100 + i);
    }
    post(STRAND_TM_OP_APPEND, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 1, 0,
         5, ~0ull); /* handle 0: tag 5 */
    struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_APPEND, cqe->app_op);

    /* tag 9 matches nothing: unexpected, in an SRQ buffer, TMH and all */
    send_tmh(dci, dct, 9, 32, 1);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe));
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_UNEXPECTED, cqe->app_op);
    EXPECT_EQ(STRAND_TMH_SIZE + 32u, be32toh(cqe->byte_cnt));
    EXPECT_EQ(0, strand_cqe_wqe_counter(cqe));
    auto *tmh = reinterpret_cast<struct ibv_tmh *>(buf(RESP));
    EXPECT_EQ(IBV_TMH_EAGER, tmh->opcode);
    EXPECT_EQ(9u, be64toh(tmh->tag));
    EXPECT_EQ(0, memcmp(buf(RESP, STRAND_TMH_SIZE), buf(REQ, 1024 + 16), 32));

    /* tag 5 is listed, but software has not reported the unexpected one:
     * not matched */
    send_tmh(dci, dct, 5, 32, 2);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_UNEXPECTED, cqe->app_op);
    EXPECT_EQ(1, strand_cqe_wqe_counter(cqe));

    /* seed: "IBV_WR_TAG_SYNC may be used if no changes to matching list
     * required, just to updated unexpected messages counter" */
    post(STRAND_TM_OP_NOP, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 0, 2);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_NOOP, cqe->app_op);
    EXPECT_EQ(2, be16toh(cqe->tm_cqe.hw_phase_cnt));

    /* in phase again: tag 5 lands in its buffer */
    memset(buf(REQ), 0, 64);
    send_tmh(dci, dct, 5, 40, 3);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe));
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_CONSUMED_MSG, cqe->app_op);
    EXPECT_EQ(0, be16toh(cqe->app_info)); /* the handle */
    EXPECT_EQ(40u, be32toh(cqe->byte_cnt));
    EXPECT_EQ(5u,
              be64toh(reinterpret_cast<const struct ibv_tmh *>(&cqe->tmh)->tag));
    EXPECT_EQ(0, memcmp(buf(REQ), buf(REQ, 1024 + 16), 40));
}

/* Scatter-to-CQE on a tag-matching SRQ whose CQ has 128-byte CQEs and a DCT
 * that scatters (cs_res 64): a matched eager message of up to 64 bytes
 * after its TMH comes in the CQE's first half (INLINE_SCATTER_64) and the
 * tag's buffer is not written, as UCX's expected path reads it (a
 * rendezvous request in the buffer could be written over by an earlier
 * transfer into it); 65 bytes go to the buffer; an unexpected message of up
 * to 64 bytes with its TMH comes in the CQE, its SRQ buffer untouched. */
TEST_F(sim_tm, small_tagged_messages_come_in_a_128_byte_cqe)
{
    m_cq128 = smlx5_create_cq_size(m_ctx, 256, nullptr, 128);
    ASSERT_NE(nullptr, m_cq128);
    open_srq(m_cq128);
    smlx5_qp_t *dct = create_dct(m_srq, SMLX5_DC_KEY_DEFAULT, m_cq128);
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci);
    memset(buf(RESP), 0, 512);
    post_srq_recv(m_srq, RESP, 0, 256, 100);
    post(STRAND_TM_OP_APPEND, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 1, 0,
         5, ~0ull, 0, MLX5_OPCODE_TAG_MATCHING, 128); /* 0: tag 5 */
    post(STRAND_TM_OP_APPEND, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT, 2, 0,
         6, ~0ull, 0, MLX5_OPCODE_TAG_MATCHING, 128); /* 1: tag 6 */
    for (int i = 0; i < 2; ++i) {
        struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
        ASSERT_NE(nullptr, cqe);
        EXPECT_EQ(STRAND_CQE_APP_OP_TM_APPEND, cqe->app_op);
    }

    /* 64 bytes after the TMH: in the CQE */
    memset(buf(REQ), 0xee, 128);
    send_tmh(dci, dct, 5, 64, 3);
    struct mlx5_cqe64 *cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_CONSUMED_MSG, cqe->app_op);
    EXPECT_EQ(0, be16toh(cqe->app_info));
    EXPECT_EQ(64u, be32toh(cqe->byte_cnt));
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64);
    EXPECT_EQ(5u,
              be64toh(reinterpret_cast<const struct ibv_tmh *>(&cqe->tmh)->tag));
    const void *in_cqe = strand_cqe_inline_data(cqe);
    ASSERT_EQ((const void *)(cqe - 1), in_cqe);
    EXPECT_EQ(0, memcmp(in_cqe, buf(REQ, 1024 + 16), 64));
    EXPECT_TRUE(std::all_of(buf(REQ), buf(REQ) + 128, [](uint8_t x) {
        return x == 0xee;
    })) << "the tag's buffer was written";

    /* 65: to the buffer */
    send_tmh(dci, dct, 6, 65, 4);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_CONSUMED_MSG, cqe->app_op);
    EXPECT_EQ(1, be16toh(cqe->app_info));
    EXPECT_EQ(65u, be32toh(cqe->byte_cnt));
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(REQ), buf(REQ, 1024 + 16), 65));

    /* unexpected, 16 + 48 bytes: in the CQE, TMH and all */
    send_tmh(dci, dct, 9, 48, 5);
    cqe = m_dvcq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(STRAND_CQE_APP_OP_TM_UNEXPECTED, cqe->app_op);
    EXPECT_EQ(STRAND_TMH_SIZE + 48u, be32toh(cqe->byte_cnt));
    EXPECT_EQ(0, strand_cqe_wqe_counter(cqe));
    in_cqe = strand_cqe_inline_data(cqe);
    ASSERT_NE(nullptr, in_cqe);
    EXPECT_EQ(0, memcmp(in_cqe, buf(REQ, 1024), STRAND_TMH_SIZE + 48));
    EXPECT_TRUE(std::all_of(buf(RESP), buf(RESP) + 256, [](uint8_t x) {
        return x == 0;
    })) << "the SRQ buffer was written";
}
