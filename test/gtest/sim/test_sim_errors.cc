/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error paths of the software device (spec sections 3, 5, 7, 8): the right
 * syndrome for each cause, QP to ERR with everything flushed in order, DC
 * key mismatch, DCI stream isolation and reset, RNR and transport retries.
 */
#include "sim_fixture.h"
#include "mlx5/doorbell.h"

#include <map>
#include <vector>
#include <poll.h>
#include <sys/mman.h>

class sim_errors : public sim_fixture {
protected:
    void SetUp() override
    {
        /* fast timers: 2 ms transport timeout, 100 us RNR back-off */
        setenv("STRAND_SIM_TIMEOUT_NS", "2000000", 1);
        setenv("STRAND_SIM_RNR_NS", "100000", 1);
        sim_fixture::SetUp();
    }

    void TearDown() override
    {
        sim_fixture::TearDown();
        unsetenv("STRAND_SIM_TIMEOUT_NS");
        unsetenv("STRAND_SIM_RNR_NS");
    }

    void post(smlx5_qp_t *qp, struct ibv_send_wr *wr)
    {
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, wr, &bad));
    }

    void write_wr(struct ibv_send_wr *wr, struct ibv_sge *s, uint64_t wr_id,
                  uint64_t raddr, uint32_t rk)
    {
        *wr                     = make_wr(IBV_WR_RDMA_WRITE, wr_id, s, 1);
        wr->wr.rdma.remote_addr = raddr;
        wr->wr.rdma.rkey        = rk;
    }

    enum ibv_qp_state state(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        EXPECT_EQ(0, smlx5_query_qp(qp, &a, IBV_QP_STATE, nullptr));
        return a.qp_state;
    }

    /* waits for an async event of type (kept in *found when asked) */
    bool wait_async(enum ibv_event_type  type,
                    smlx5_async_event_t *found = nullptr, int ms = 2000)
    {
        smlx5_async_event_t ev;
        for (int i = 0; i < ms; ++i) {
            smlx5_progress(m_ctx);
            while (smlx5_get_async_event(m_ctx, &ev) == 0) {
                if (ev.type == type) {
                    if (found != nullptr) {
                        *found = ev;
                    }
                    return true;
                }
            }
            usleep(1000);
        }
        return false;
    }

    /* A WRITE to a peer that never answers, sent once; then its buffer's
     * page is unmapped (deregistered first, or not: UCX's registration
     * cache keeps a registration after its user let go) while the device
     * still retransmits it: the next retry fails the WQE with a local
     * protection error and the QP goes to ERR; the process never reads
     * memory that is gone. */
    void retransmit_from_unmapped_page(bool dereg_first)
    {
        smlx5_qp_t *q = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
        ASSERT_NE(nullptr, q);
        m_extra_qps.push_back(q);
        ASSERT_NO_FATAL_FAILURE(connect_rc(q, 0xabcde)); /* nobody answers */
        const size_t len  = 4096;
        void        *page = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, page);
        smlx5_mr_t *mr = smlx5_reg_mr(m_pd, page, len, access_all());
        ASSERT_NE(nullptr, mr);
        struct ibv_sge     s = {(uintptr_t)page, 1024, smlx5_mr_lkey(mr)};
        struct ibv_send_wr wr;
        write_wr(&wr, &s, 9, addr(RESP), rkey(RESP));
        post(q, &wr);
        for (int i = 0; i < 5; ++i) {
            smlx5_progress(m_ctx);
        }
        if (dereg_first) {
            ASSERT_EQ(0, smlx5_dereg_mr(mr));
        }
        ASSERT_EQ(0, munmap(page, len));
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
        EXPECT_EQ(9u, wc.wr_id);
        EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
        EXPECT_EQ(IBV_QPS_ERR, state(q));
        if (!dereg_first) {
            ASSERT_EQ(0, smlx5_dereg_mr(mr));
        }
    }
};

TEST_F(sim_errors, bad_rkey_is_rem_access_err_then_qp_err_and_flush)
{
    struct ibv_sge     s = sge(REQ, 0, 64);
    struct ibv_send_wr wr[3];
    for (int i = 0; i < 3; ++i) {
        write_wr(&wr[i], &s, 100 + i, addr(RESP), rkey(RESP) ^ 0x5500);
    }
    wr[0].next = &wr[1];
    post(m_qp[REQ], &wr[0]);

    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(100u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(101u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, state(m_qp[REQ]));

    /* posted while in ERR: flushed too, one CQE each even if unsignaled */
    wr[2].send_flags = 0;
    post(m_qp[REQ], &wr[2]);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(102u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);

    /* the RC responder goes to ERR with an access-error event */
    EXPECT_TRUE(wait_async(IBV_EVENT_QP_ACCESS_ERR));
    EXPECT_EQ(IBV_QPS_ERR, state(m_qp[RESP]));
}

/* An async event names its QP by number too: the reader of an event may
 * see its QP destroyed before it looks at it (strand's async thread read
 * a freed QP through the pointer when an interface closed meanwhile). */
TEST_F(sim_errors, async_event_names_its_qp_by_number_after_destroy)
{
    struct ibv_sge     s = sge(REQ, 0, 64);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 100, addr(RESP), rkey(RESP) ^ 0x5500);
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);

    uint32_t            qpn = smlx5_qp_num(m_qp[RESP]);
    smlx5_async_event_t ev;
    ASSERT_TRUE(wait_async(IBV_EVENT_QP_ACCESS_ERR, &ev));
    smlx5_destroy_qp(m_qp[RESP]);
    m_qp[RESP] = nullptr;
    EXPECT_EQ(qpn, ev.qp_num);
}

TEST_F(sim_errors, write_out_of_bounds_is_rem_access_err)
{
    struct ibv_sge     s = sge(REQ, 0, 128);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 7, addr(RESP, BUF_SIZE - 64), rkey(RESP));
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    /* nothing of the refused WRITE landed */
    for (size_t i = BUF_SIZE - 64; i < BUF_SIZE; ++i) {
        ASSERT_EQ(0, *buf(RESP, i));
    }
}

TEST_F(sim_errors, bad_lkey_is_loc_prot_err)
{
    struct ibv_sge s = sge(REQ, 0, 64);
    s.lkey ^= 0x3300;
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 9, addr(RESP), rkey(RESP));
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, state(m_qp[REQ]));
}

TEST_F(sim_errors, error_cqe_bytes_follow_mlx5_err_cqe)
{
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP), 0xdead00);
    post(m_qp[REQ], &wr);

    struct mlx5dv_cq dv;
    ASSERT_EQ(0, smlx5_cq_dv(m_scq[REQ], &dv));
    struct mlx5_cqe64 *cqe = nullptr;
    for (int i = 0; (i < 5000) && (cqe == nullptr); ++i) {
        smlx5_progress(m_ctx);
        cqe = strand_cqe_get(dv.buf, dv.cqe_cnt, strand_cqe_shift(dv.cqe_size),
                             0);
        usleep(1000);
    }
    ASSERT_NE(nullptr, cqe);
    auto *e = reinterpret_cast<struct mlx5_err_cqe *>(cqe);
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe->op_own >> 4);
    EXPECT_EQ(0, cqe->op_own & 1); /* first pass */
    EXPECT_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, e->syndrome);
    EXPECT_EQ(smlx5_qp_num(m_qp[REQ]), be32toh(e->s_wqe_opcode_qpn) & 0xffffff);
    EXPECT_EQ(MLX5_OPCODE_RDMA_WRITE, be32toh(e->s_wqe_opcode_qpn) >> 24);
    EXPECT_EQ(0, be16toh(e->wqe_counter));
}

TEST_F(sim_errors, receive_buffer_too_small_is_loc_len_and_rem_inv_req)
{
    /* 128 bytes: more than any CQE holds, so the buffer is used */
    post_recv(RESP, 0, 16, 55);
    struct ibv_sge     s  = sge(REQ, 0, 128);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 5, &s, 1);
    post(m_qp[REQ], &wr);

    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(55u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
}

TEST_F(sim_errors, misaligned_atomic_is_rem_inv_req)
{
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 4);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = 1;
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
}

TEST_F(sim_errors, rnr_retries_exhausted_is_rnr_retry_exc_err)
{
    /* a fresh pair whose requester gives up after 2 RNR retries */
    struct ibv_qp_attr a;
    smlx5_qp_t        *q[2];
    for (int i = 0; i < 2; ++i) {
        q[i] = create_rc_qp(m_scq[i], m_rcq[i]);
        ASSERT_NE(nullptr, q[i]);
        m_extra_qps.push_back(q[i]);
    }
    for (int i = 0; i < 2; ++i) {
        ASSERT_NO_FATAL_FAILURE(rc_to_init(q[i]));
        ASSERT_NO_FATAL_FAILURE(rc_to_rtr(q[i], smlx5_qp_num(q[1 - i])));
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.max_rd_atomic = 1;
    a.retry_cnt     = 7;
    a.rnr_retry     = 2;
    a.timeout       = 14;
    ASSERT_EQ(0, smlx5_modify_qp(q[0], &a,
                                 IBV_QP_STATE | IBV_QP_SQ_PSN |
                                         IBV_QP_MAX_QP_RD_ATOMIC |
                                         IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                         IBV_QP_TIMEOUT));

    struct ibv_sge     s  = sge(REQ, 0, 32);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 77, &s, 1);
    post(q[0], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(77u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
}

TEST_F(sim_errors, rnr_then_receive_posted_completes)
{
    struct ibv_sge s = sge(REQ, 0, 32);
    memset(buf(REQ), 0xab, 32);
    struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 8, &s, 1);
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ], 20)); /* RNR back-off loop */
    post_recv(RESP, 256, 64, 88);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(88u, wc.wr_id);
    EXPECT_EQ(32u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 256), 32));
}

/* A signaled NOP at the send queue's producer index (read from its
 * doorbell record: the WRs before it were posted with smlx5_post_send),
 * on DCI stream `stream`, and the doorbell. On a DCI with a base address
 * vector (every DCI WQE carries one, a NOP included) unless `no_av`. */
static void post_raw_nop(smlx5_qp_t *qp, uint16_t stream = 0, bool dci = false,
                         bool no_av = false)
{
    struct mlx5dv_qp dv;
    ASSERT_EQ(0, smlx5_qp_dv(qp, &dv));
    uint32_t pi   = be32toh(dv.dbrec[MLX5_SND_DBR]);
    auto    *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(dv.sq.buf,
                                                             dv.sq.wqe_cnt, pi);
    unsigned ds   = 1;
    if (dci && !no_av) {
        struct mlx5_wqe_av *av = (struct mlx5_wqe_av *)(ctrl + 1);
        memset(av, 0, 16); /* a base AV (no DCT: a NOP goes nowhere) */
        ds += 1;
    } else if (dci) {
        memset(ctrl + 1, 0, 48); /* nothing of an AV after the ctrl */
    }
    strand_set_ctrl_seg(ctrl, 0, pi & 0xffff, MLX5_OPCODE_NOP, smlx5_qp_num(qp),
                        ds, MLX5_WQE_CTRL_CQ_UPDATE, 0);
    strand_set_ctrl_stream(ctrl, stream);
    strand_bf_ring_doorbell(dv.dbrec, smlx5_qp_bf(qp), pi + 1, ctrl);
    smlx5_qp_doorbell(qp);
}

TEST_F(sim_errors, nop_behind_a_failed_write_is_flushed)
{
    smlx5_qp_t *q = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, q);
    m_extra_qps.push_back(q);
    ASSERT_NO_FATAL_FAILURE(connect_rc(q, 0xabcde));
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 4, addr(RESP), rkey(RESP));
    post(q, &wr);
    ASSERT_NO_FATAL_FAILURE(post_raw_nop(q));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) << "the NOP";
    EXPECT_FALSE(poll_one(m_scq[REQ], &wc, 50));
}

TEST_F(sim_errors, peer_absent_is_retry_exc_err_after_timeout)
{
    smlx5_qp_t *q = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, q);
    m_extra_qps.push_back(q);
    /* a destination QP number that does not exist */
    ASSERT_NO_FATAL_FAILURE(connect_rc(q, 0xabcde));
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 4, addr(RESP), rkey(RESP));
    auto t0 = std::chrono::steady_clock::now();
    post(q, &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_GE(ms, 7 * 2); /* 1 + retry_cnt timeouts of 2 ms */
    EXPECT_EQ(IBV_QPS_ERR, state(q));
}

/* A WQE's buffer deregistered and unmapped while the WQE is still being
 * retransmitted: the device reads it again for each retry through its
 * lkey, which names nothing any more (it crashed the process). */
TEST_F(sim_errors, buffer_deregistered_during_retransmission_is_loc_prot_err)
{
    retransmit_from_unmapped_page(true);
}

/* The page unmapped while its registration stays (UCX's uct suite,
 * destroy_entity_after_send on rc_strand, crashed the device thread): a
 * NIC would read the pinned pages; the device cannot, and says so with
 * the same error. */
TEST_F(sim_errors, buffer_unmapped_under_its_registration_is_loc_prot_err)
{
    retransmit_from_unmapped_page(false);
}

TEST_F(sim_errors, dc_wrong_key_is_dropped_and_ends_in_retry_exc)
{
    smlx5_srq_t *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, 0x1234);
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci);
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 12, addr(RESP), rkey(RESP));
    smlx5_dc_target_t   dc = {m_lid, smlx5_dct_num(dct), 0x9999};
    struct ibv_send_wr *bad;
    memset(buf(RESP), 0, 8);
    memset(buf(REQ), 0x77, 8);
    ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, 0, &bad));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(0, *buf(RESP));
    EXPECT_EQ(IBV_QPS_RTR, state(dct)); /* the DCT is unaffected */
}

TEST_F(sim_errors, modify_qp_missing_or_extra_attribute_is_einval)
{
    smlx5_qp_t *q = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, q);
    m_extra_qps.push_back(q);
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = SMLX5_PORT_NUM;
    /* missing ACCESS_FLAGS */
    EXPECT_EQ(EINVAL,
              smlx5_modify_qp(q, &a,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT));
    /* extra SQ_PSN */
    EXPECT_EQ(EINVAL,
              smlx5_modify_qp(q, &a,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                      IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN));
    EXPECT_EQ(IBV_QPS_RESET, state(q)); /* nothing changed */
    /* RESET -> RTS is no transition */
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(EINVAL, smlx5_modify_qp(q, &a, IBV_QP_STATE));
    /* wrong cur_qp_state */
    a.qp_state     = IBV_QPS_ERR;
    a.cur_qp_state = IBV_QPS_RTS;
    EXPECT_EQ(EINVAL, smlx5_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_CUR_STATE));
    EXPECT_EQ(0, smlx5_modify_qp(q, &a, IBV_QP_STATE));
    EXPECT_EQ(IBV_QPS_ERR, state(q));
}

TEST_F(sim_errors, dct_number_assigned_at_init_to_rtr)
{
    smlx5_srq_t         *srq = create_srq(4, 1);
    smlx5_qp_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.type       = SMLX5_QPT_DCT;
    attr.send_cq    = m_scq[RESP];
    attr.recv_cq    = m_rcq[RESP];
    attr.srq        = srq;
    smlx5_qp_t *dct = smlx5_create_qp(m_pd, &attr);
    ASSERT_NE(nullptr, dct);
    m_extra_qps.push_back(dct);
    EXPECT_EQ(0u, smlx5_dct_num(dct));
    attr.srq = nullptr;
    EXPECT_EQ(nullptr, smlx5_create_qp(m_pd, &attr)); /* DCT needs an SRQ */
    EXPECT_EQ(EINVAL, errno);
}

/* Seed page mlx5dv_dci_stream_id_reset.3, device side. */
class sim_dci_streams : public sim_errors {
protected:
    void SetUp() override
    {
        sim_errors::SetUp();
        m_srq = create_srq(64, 1);
        m_dct = create_dct(m_srq, SMLX5_DC_KEY_DEFAULT);
        ASSERT_NE(nullptr, m_dct);
    }

    /* a WRITE of 8 bytes at `off`; to `dctn` (a DCT nobody has: the
     * requester retries until RETRY_EXC_ERR), or to m_dct */
    void post_dc(smlx5_qp_t *dci, uint16_t stream, uint64_t wr_id, uint32_t rk,
                 size_t off = 0, uint32_t dctn = 0)
    {
        struct ibv_sge     s = sge(REQ, off, 8);
        struct ibv_send_wr wr;
        write_wr(&wr, &s, wr_id, addr(RESP, off), rk);
        smlx5_dc_target_t   dc = {m_lid, dctn ? dctn : smlx5_dct_num(m_dct),
                                  SMLX5_DC_KEY_DEFAULT};
        struct ibv_send_wr *bad;
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, stream, &bad));
    }

    /* A DCI with 4 channels and 2 errored streams allowed: WR 1 of
     * `stream_a` goes to a DCT nobody has (it ends in RETRY_EXC_ERR after
     * the retries), then WR 2 of `stream_b` writes `fill` to RESP at 64. */
    smlx5_qp_t *
    post_stalled_then(uint16_t stream_a, uint16_t stream_b, uint8_t fill)
    {
        smlx5_qp_t *dci = create_dci(2, 1);
        if (dci == nullptr) {
            return nullptr;
        }
        memset(buf(REQ, 64), fill, 8);
        memset(buf(RESP, 64), 0, 8);
        post_dc(dci, stream_a, 1, rkey(RESP), 0, smlx5_dct_num(m_dct) + 1000);
        post_dc(dci, stream_b, 2, rkey(RESP), 64);
        return dci;
    }

    smlx5_srq_t *m_srq = nullptr;
    smlx5_qp_t  *m_dct = nullptr;
};

TEST_F(sim_dci_streams, stream_error_flushes_only_that_stream_dci_stays_rts)
{
    smlx5_qp_t *dci = create_dci(2, 1);
    ASSERT_NE(nullptr, dci);
    post_dc(dci, 3, 1, rkey(RESP) ^ 0x4400); /* stream 3: bad rkey */
    post_dc(dci, 3, 2, rkey(RESP));          /* stream 3: flushed */
    post_dc(dci, 0, 3, rkey(RESP), 64);      /* stream 0: goes on */

    std::map<uint64_t, ibv_wc_status> st;
    struct ibv_wc                     wc;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
        st[wc.wr_id] = wc.status;
    }
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st[1]);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, st[2]);
    EXPECT_EQ(IBV_WC_SUCCESS, st[3]);
    EXPECT_EQ(IBV_QPS_RTS, state(dci));

    /* WRs posted to the errored stream before its reset are flushed */
    post_dc(dci, 3, 4, rkey(RESP));
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(4u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);

    /* after the reset the stream accepts work again */
    EXPECT_EQ(0, smlx5_dci_stream_id_reset(dci, 3));
    memset(buf(REQ, 128), 0x5c, 8);
    post_dc(dci, 3, 6, rkey(RESP), 128);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(6u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(buf(REQ, 128), buf(RESP, 128), 8));
}

TEST_F(sim_dci_streams,
       errored_streams_reaching_log_num_errored_moves_dci_to_err)
{
    smlx5_qp_t *dci = create_dci(2, 1); /* 2^1 = 2 errored streams allowed */
    ASSERT_NE(nullptr, dci);
    post_dc(dci, 1, 1, rkey(RESP) ^ 0x100);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_QPS_RTS, state(dci));
    post_dc(dci, 2, 2, rkey(RESP) ^ 0x100);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, state(dci));
}

/* The same on a DCI stream: the NOP on the failed stream is flushed, one
 * on another stream completes (the seed page: only the failed stream's
 * work is flushed). */
TEST_F(sim_dci_streams, nop_behind_a_failed_stream_write_is_flushed)
{
    smlx5_qp_t *dci = create_dci(2, 1);
    ASSERT_NE(nullptr, dci);
    post_dc(dci, 1, 1, rkey(RESP), 0, smlx5_dct_num(m_dct) + 1000);
    ASSERT_NO_FATAL_FAILURE(post_raw_nop(dci, 1, true));
    ASSERT_NO_FATAL_FAILURE(post_raw_nop(dci, 2, true));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) << "the NOP of stream 1";
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << "the NOP of stream 2";
    EXPECT_EQ(IBV_QPS_RTS, state(dci));
}

/* Spec section 9: every WQE of a DCI carries its address vector, a NOP
 * included, and its ds counts it. A NOP of ds 1 on a DCI is a malformed
 * WQE: LOC_QP_OP_ERR (the syndrome of a WQE the NIC cannot parse), and
 * the DCI goes to ERR (a NIC does not tell a stream's from such an
 * error). */
TEST_F(sim_dci_streams, a_nop_without_its_address_vector_fails_the_dci)
{
    smlx5_qp_t *dci = create_dci(2, 1);
    ASSERT_NE(nullptr, dci);
    ASSERT_NO_FATAL_FAILURE(post_raw_nop(dci, 1, true, true));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 5000));
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, state(dci));
}

/* Spec section 5: "2^log_num_concurent streams are processed in
 * parallel": stream 1 waits on a peer that never answers, stream 2 (another
 * channel) executes meanwhile; CQEs still come in SQ order. */
TEST_F(sim_dci_streams, stalled_stream_does_not_block_another_channel)
{
    smlx5_qp_t *dci = post_stalled_then(1, 2, 0x2a);
    ASSERT_NE(nullptr, dci);

    auto t0 = std::chrono::steady_clock::now();
    while ((memcmp(buf(REQ, 64), buf(RESP, 64), 8) != 0) &&
           (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))) {
        sched_yield();
    }
    EXPECT_EQ(0, memcmp(buf(REQ, 64), buf(RESP, 64), 8))
            << "stream 2 waited for stream 1";
    struct ibv_wc wc;
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ], 0))
            << "stream 1 failed before stream 2 ran: the test proves nothing";
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_QPS_RTS, state(dci));
}

/* "WRs of one stream are processed in order", also across destinations:
 * the second WR of a stream does not run at another DCT while the first
 * is unresolved, and is flushed, never executed, when the first fails
 * (as on the wire: a channel connects to one DCT at a time). */
TEST_F(sim_dci_streams,
       stream_in_order_across_destinations_flushed_not_executed)
{
    smlx5_qp_t *dci = post_stalled_then(1, 1, 0x3b);
    ASSERT_NE(nullptr, dci);

    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    uint8_t zero[8] = {0};
    EXPECT_EQ(0, memcmp(zero, buf(RESP, 64), 8)) << "a flushed WR executed";
}

/* Spec section 9: stream ids are the channel ids 0 .. 2^log_num_concurent
 * - 1. An id outside that range is a malformed WQE: its own error CQE
 * (LOC_QP_OP_ERR) and the DCI in ERR, as for any WQE the hardware cannot
 * parse; the last id of the range is a stream like any other. A DCI
 * without streams takes id 0 only. */
TEST_F(sim_dci_streams, stream_id_outside_the_channel_range_is_refused)
{
    smlx5_qp_t *dci = create_dci(2, 1); /* channels 0 .. 3 */
    ASSERT_NE(nullptr, dci);
    struct ibv_wc wc;
    memset(buf(REQ, 64), 0x6d, 8);
    post_dc(dci, 3, 1, rkey(RESP), 64); /* the last channel */
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(buf(REQ, 64), buf(RESP, 64), 8));

    memset(buf(REQ, 128), 0x7e, 8);
    memset(buf(RESP, 128), 0, 8);
    post_dc(dci, 4, 2, rkey(RESP), 128); /* one past it */
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, state(dci));
    uint8_t zero[8] = {0};
    EXPECT_EQ(0, memcmp(zero, buf(RESP, 128), 8)) << "a refused WQE wrote";
    /* the reset of an id that is no channel: the firmware's bad parameter */
    smlx5_qp_t *other = create_dci(2, 1);
    ASSERT_NE(nullptr, other);
    EXPECT_EQ(EINVAL, smlx5_dci_stream_id_reset(other, 4));
    EXPECT_EQ(0, smlx5_dci_stream_id_reset(other, 3));

    smlx5_qp_t *plain = create_dci(0, 0); /* no streams: id 0 only */
    ASSERT_NE(nullptr, plain);
    post_dc(plain, 1, 3, rkey(RESP), 128);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
}

TEST_F(sim_dci_streams,
       reset_returns_einval_for_non_dci_eopnotsupp_without_errored)
{
    EXPECT_EQ(EINVAL, smlx5_dci_stream_id_reset(m_qp[REQ], 1));
    smlx5_qp_t *plain = create_dci(2, 0);
    ASSERT_NE(nullptr, plain);
    EXPECT_EQ(EOPNOTSUPP, smlx5_dci_stream_id_reset(plain, 1));
}

TEST_F(sim_errors, cq_arm_fires_completion_channel)
{
    smlx5_channel_t *ch = smlx5_create_comp_channel(m_ctx);
    ASSERT_NE(nullptr, ch);
    smlx5_cq_t *cq = smlx5_create_cq(m_ctx, 16, ch);
    ASSERT_NE(nullptr, cq);
    smlx5_qp_t *q = create_rc_qp(cq, m_rcq[REQ]);
    ASSERT_NE(nullptr, q);
    ASSERT_NO_FATAL_FAILURE(connect_rc(q, smlx5_qp_num(m_qp[RESP])));
    ASSERT_EQ(0, smlx5_req_notify_cq(cq, 0));

    struct pollfd pfd = {smlx5_channel_fd(ch), POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 10)); /* nothing yet */

    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP), rkey(RESP));
    post(q, &wr);
    EXPECT_EQ(1, poll(&pfd, 1, 2000)); /* the progress thread completes it */
    smlx5_cq_t *fired = nullptr;
    EXPECT_EQ(0, smlx5_get_cq_event(ch, &fired));
    EXPECT_EQ(cq, fired);
    EXPECT_EQ(EAGAIN, smlx5_get_cq_event(ch, &fired));

    smlx5_destroy_qp(q);
    EXPECT_EQ(0, smlx5_destroy_cq(cq));
    EXPECT_EQ(0, smlx5_destroy_comp_channel(ch));
}

/* IB spec C9-88 (and rxe's check_rkey): a zero-length RDMA WRITE or READ
 * carries no key the responder checks, so it completes OK with any rkey
 * (UCT_INVALID_RKEY's low word, a made-up one); the same key on a transfer
 * of one byte is refused with REM_ACCESS_ERR. */
TEST_F(sim_errors, zero_length_rdma_carries_no_key_the_responder_checks)
{
    const uint32_t keys[] = {0xffffffffu, rkey(RESP) ^ 0x5500, 0};
    struct ibv_wc  wc;
    uint64_t       id = 1;
    for (uint32_t k : keys) {
        for (auto op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ}) {
            struct ibv_send_wr wr  = make_wr(op, id, nullptr, 0);
            wr.wr.rdma.remote_addr = 0x1000;
            wr.wr.rdma.rkey        = k;
            post(m_qp[REQ], &wr);
            ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
            EXPECT_EQ(id, wc.wr_id);
            EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
                    << "zero-length "
                    << (op == IBV_WR_RDMA_READ ? "READ" : "WRITE")
                    << " with key 0x" << std::hex << k;
            ++id;
        }
    }
    EXPECT_EQ(IBV_QPS_RTS, state(m_qp[REQ]));
    struct ibv_sge     s = sge(REQ, 0, 1);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, id, addr(RESP), 0xffffffffu);
    post(m_qp[REQ], &wr);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
}

TEST_F(sim_errors, fault_fail_rkey_gives_rem_access_err)
{
    char spec[64];
    snprintf(spec, sizeof(spec), "fail_rkey=0x%x", rkey(RESP));
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, spec));
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP), rkey(RESP));
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(EINVAL, smlx5_set_faults(m_ctx, "bogus=1"));
    EXPECT_EQ(EINVAL, smlx5_set_faults(m_ctx, "drop"));
}

TEST_F(sim_errors, fault_cut_peer_ends_in_retry_exc_err)
{
    char spec[64];
    snprintf(spec, sizeof(spec), "cut=%u", m_lid);
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, spec));
    struct ibv_sge     s = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP), rkey(RESP));
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, ""));
}

/* A 256-byte MTU: messages of many packets in both directions. */
class sim_small_mtu : public sim_errors {
protected:
    void SetUp() override
    {
        setenv("STRAND_SIM_MTU", "256", 1);
        sim_errors::SetUp();
    }
    void TearDown() override
    {
        sim_errors::TearDown();
        unsetenv("STRAND_SIM_MTU");
    }

    /* two connected RC QPs with a 256-byte path MTU (q[1] receives from
     * `srq` when given) */
    void small_mtu_pair(smlx5_qp_t *q[2], smlx5_srq_t *srq = nullptr)
    {
        for (int i = 0; i < 2; ++i) {
            q[i] = create_rc_qp(m_scq[i], m_rcq[i], (i == 1) ? srq : nullptr);
            ASSERT_NE(nullptr, q[i]);
            m_extra_qps.push_back(q[i]);
            ASSERT_NO_FATAL_FAILURE(rc_to_init(q[i]));
        }
        for (int i = 0; i < 2; ++i) {
            struct ibv_qp_attr a;
            memset(&a, 0, sizeof(a));
            a.qp_state           = IBV_QPS_RTR;
            a.path_mtu           = IBV_MTU_256;
            a.dest_qp_num        = smlx5_qp_num(q[1 - i]);
            a.max_dest_rd_atomic = 4;
            a.min_rnr_timer      = 1;
            a.ah_attr.dlid       = m_lid;
            a.ah_attr.port_num   = SMLX5_PORT_NUM;
            ASSERT_EQ(0,
                      smlx5_modify_qp(q[i], &a,
                                      IBV_QP_STATE | IBV_QP_AV |
                                              IBV_QP_PATH_MTU |
                                              IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                              IBV_QP_MAX_DEST_RD_ATOMIC |
                                              IBV_QP_MIN_RNR_TIMER));
            ASSERT_NO_FATAL_FAILURE(rc_to_rts(q[i]));
        }
    }
};

TEST_F(sim_small_mtu, send_write_read_of_many_packets)
{
    struct ibv_port_attr pa;
    ASSERT_EQ(0, smlx5_query_port(m_ctx, SMLX5_PORT_NUM, &pa));
    EXPECT_EQ(IBV_MTU_256, pa.active_mtu);
    /* the fixture asked for a 4096 path MTU: above the port's, refused */
    smlx5_qp_t *q[2];
    ASSERT_NO_FATAL_FAILURE(small_mtu_pair(q));
    for (size_t i = 0; i < 8192; ++i) {
        *buf(REQ, i) = (uint8_t)(i * 13 + 1);
    }
    struct ibv_sge     s = sge(REQ, 0, 5000);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP, 1000), rkey(RESP));
    post(q[0], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 1000), 5000));

    struct ibv_sge r       = sge(REQ, 10000, 5000);
    wr                     = make_wr(IBV_WR_RDMA_READ, 2, &r, 1);
    wr.wr.rdma.remote_addr = addr(RESP, 1000);
    wr.wr.rdma.rkey        = rkey(RESP);
    post(q[0], &wr);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5000u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(REQ, 10000), 5000));

    struct ibv_sge     rs = sge(RESP, 20000, 8000);
    struct ibv_recv_wr rwr, *rbad;
    memset(&rwr, 0, sizeof(rwr));
    rwr.wr_id   = 9;
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    ASSERT_EQ(0, smlx5_post_recv(q[1], &rwr, &rbad));
    wr = make_wr(IBV_WR_SEND, 3, &s, 1);
    post(q[0], &wr);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(5000u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 20000), 5000));
}

/* "An idle process uses no CPU" as device state, not CPU time: with no
 * traffic and no timer the progress thread sits in a futex wait with no
 * time limit (smlx5_progress_stats, a test/observability hook). */
TEST_F(sim_errors, idle_progress_thread_sleeps_with_no_time_limit)
{
    smlx5_progress_stats_t st;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        ASSERT_EQ(0, smlx5_progress_stats(m_ctx, &st));
        if (st.asleep_untimed) {
            break;
        }
        usleep(1000);
    } while (std::chrono::steady_clock::now() < deadline);
    ASSERT_TRUE(st.asleep_untimed) << "the progress thread never slept "
                                      "without a timer";
    EXPECT_GE(st.untimed_sleeps, 1u);
    EXPECT_GE(st.sleeps, st.untimed_sleeps);
    EXPECT_GE(st.loops, 1u);

    /* traffic wakes it: a WRITE completes, the thread ran again */
    uint64_t           loops = st.loops;
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr;
    write_wr(&wr, &s, 1, addr(RESP), rkey(RESP));
    post(m_qp[REQ], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        ASSERT_EQ(0, smlx5_progress_stats(m_ctx, &st));
        if (st.asleep_untimed && (st.loops > loops)) {
            break;
        }
        usleep(1000);
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_GT(st.loops, loops);
    EXPECT_TRUE(st.asleep_untimed) << "idle again, asleep again";
}

TEST_F(sim_errors, no_memory_key_is_the_invalid_lkey)
{
    /* 0x100 ends a receive scatter list: a key must never take it */
    for (int i = 0; i < 600; ++i) {
        smlx5_mr_t *mr = smlx5_reg_mr(m_pd, buf(REQ), 64, access_all());
        ASSERT_NE(nullptr, mr);
        ASSERT_NE((uint32_t)MLX5_INVALID_LKEY, smlx5_mr_lkey(mr));
        ASSERT_EQ(0, smlx5_dereg_mr(mr));
    }
}

/* Fault injection loses only the packets it is asked to: a full ring is
 * still the link's back-pressure (InfiniBand is lossless). A READ of 782
 * responses at a 256-byte MTU overfills the requester's ring of 256 (here
 * requester and responder share the process's port); with a fault
 * configured that never fires (a cut of a LID nobody has), the responses
 * that do not fit wait for room, as they do without faults: the READ
 * completes with every byte and nothing is asked for again. (The fault
 * path dropped them: the requester re-requested from each gap.) */
class sim_small_mtu_ring : public sim_small_mtu {
protected:
    void SetUp() override
    {
        setenv("STRAND_SIM_ONECOPY", "0", 1); /* every byte in the ring */
        sim_small_mtu::SetUp();
    }
    void TearDown() override
    {
        sim_small_mtu::TearDown();
        unsetenv("STRAND_SIM_ONECOPY");
    }
};

TEST_F(sim_small_mtu_ring, faults_keep_a_full_ring_lossless)
{
    const size_t len = 200000;
    smlx5_qp_t  *q[2];
    ASSERT_NO_FATAL_FAILURE(small_mtu_pair(q));
    std::vector<uint8_t> src(len), dst(len, 0);
    for (size_t i = 0; i < len; ++i) {
        src[i] = (uint8_t)(i * 7 + (i >> 9));
    }
    smlx5_mr_t *smr = smlx5_reg_mr(m_pd, src.data(), len, access_all());
    smlx5_mr_t *dmr = smlx5_reg_mr(m_pd, dst.data(), len, access_all());
    ASSERT_NE(nullptr, smr);
    ASSERT_NE(nullptr, dmr);
    char spec[64];
    snprintf(spec, sizeof(spec), "cut=%u", (unsigned)(m_lid + 1));
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, spec));

    smlx5_qp_stats_t before, after;
    ASSERT_EQ(0, smlx5_qp_stats(q[0], &before));
    struct ibv_sge     r   = {(uintptr_t)dst.data(), (uint32_t)len,
                              smlx5_mr_lkey(dmr)};
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_READ, 5, &r, 1);
    wr.wr.rdma.remote_addr = (uintptr_t)src.data();
    wr.wr.rdma.rkey        = smlx5_mr_rkey(smr);
    post(q[0], &wr);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(len, wc.byte_len);
    EXPECT_EQ(0, memcmp(src.data(), dst.data(), len));
    ASSERT_EQ(0, smlx5_qp_stats(q[0], &after));
    EXPECT_EQ(0u, after.pkts_resent - before.pkts_resent)
            << "READ responses were lost to a full ring";
    EXPECT_EQ(1u, after.pkts_sent - before.pkts_sent);

    ASSERT_EQ(0, smlx5_set_faults(m_ctx, ""));
    EXPECT_EQ(0, smlx5_dereg_mr(smr));
    EXPECT_EQ(0, smlx5_dereg_mr(dmr));
}

/* The responder side of a QP that leaves (spec section 7: "RC QPs leave
 * through ERR"): the device runs no thread here, so the test steps it and
 * stops it in the middle of a message of 400 packets (one engine pass
 * takes a ring's worth, 256). */
class sim_recv_flush : public sim_small_mtu {
protected:
    static constexpr uint32_t MSG_LEN = 400 * 256;

    void SetUp() override
    {
        setenv("STRAND_SIM_PROGRESS_THREAD", "0", 1);
        sim_small_mtu::SetUp();
        m_src.resize(MSG_LEN);
        m_dst.assign(2 * MSG_LEN, 0);
        for (uint32_t i = 0; i < MSG_LEN; ++i) {
            m_src[i] = (uint8_t)(i * 7 + (i >> 8) + 3);
        }
        m_smr = smlx5_reg_mr(m_pd, m_src.data(), m_src.size(), access_all());
        m_dmr = smlx5_reg_mr(m_pd, m_dst.data(), m_dst.size(), access_all());
        ASSERT_NE(nullptr, m_smr);
        ASSERT_NE(nullptr, m_dmr);
    }
    void TearDown() override
    {
        for (smlx5_qp_t *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        m_extra_qps.clear();
        if (m_smr != nullptr) {
            smlx5_dereg_mr(m_smr);
        }
        if (m_dmr != nullptr) {
            smlx5_dereg_mr(m_dmr);
        }
        sim_small_mtu::TearDown();
        unsetenv("STRAND_SIM_PROGRESS_THREAD");
    }

    /* receive buffer `n` (0, 1) for a message of up to MSG_LEN bytes */
    struct ibv_sge dst_sge(int n)
    {
        struct ibv_sge s = {(uintptr_t)&m_dst[n * MSG_LEN], MSG_LEN,
                            smlx5_mr_lkey(m_dmr)};
        return s;
    }

    void post_recv_to(smlx5_qp_t *qp, smlx5_srq_t *srq, int n, uint64_t wr_id)
    {
        struct ibv_sge     s  = dst_sge(n);
        struct ibv_recv_wr wr = make_recv_wr(&s, wr_id), *bad = nullptr;
        ASSERT_EQ(0, (srq != nullptr) ? smlx5_post_srq_recv(srq, &wr, &bad) :
                                        smlx5_post_recv(qp, &wr, &bad));
    }

    /* A SEND of `len` bytes from q[0], and the device stepped until the
     * first bytes are in receive buffer `n`; with the whole message that
     * is all; with more than a pass takes, the responder holds that
     * receive WQE and the message is not complete. */
    void send_until_started(smlx5_qp_t *q[2], int n, uint32_t len = MSG_LEN)
    {
        const uint8_t *dst = &m_dst[n * MSG_LEN];
        struct ibv_sge s = {(uintptr_t)m_src.data(), len, smlx5_mr_lkey(m_smr)};
        struct ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, &s, 1);
        post(q[0], &wr);
        for (int i = 0; (i < 100) && (dst[0] != m_src[0]); ++i) {
            smlx5_progress(m_ctx);
        }
        ASSERT_EQ(m_src[0], dst[0]) << "the message did not start";
        if (len == MSG_LEN) {
            ASSERT_NE(m_src[len - 1], dst[len - 1])
                    << "the message is complete already";
        }
    }

    void to_err(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(0, smlx5_modify_qp(qp, &a, IBV_QP_STATE));
    }

    std::vector<uint8_t> m_src, m_dst;
    smlx5_mr_t          *m_smr = nullptr, *m_dmr = nullptr;
};

/* The SRQ's receive WQE a message had started comes back with a flush
 * error when its QP enters ERR (UCX's rc transports count on it: they
 * return such WQEs to their SRQ from the CQ before destroying the QP);
 * the one no message touched stays the SRQ's; then the QP's Last WQE
 * Reached event. A QP destroyed from RTS would lose the first. */
TEST_F(sim_recv_flush, an_srq_receive_a_message_started_is_flushed)
{
    smlx5_srq_t *srq = create_srq(4, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *q[2];
    ASSERT_NO_FATAL_FAILURE(small_mtu_pair(q, srq));
    ASSERT_NO_FATAL_FAILURE(post_recv_to(nullptr, srq, 0, 21));
    ASSERT_NO_FATAL_FAILURE(post_recv_to(nullptr, srq, 1, 22));
    ASSERT_NO_FATAL_FAILURE(send_until_started(q, 0));

    ASSERT_NO_FATAL_FAILURE(to_err(q[1]));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc, 1000))
            << "the receive WQE the message had is lost";
    EXPECT_EQ(21u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(smlx5_qp_num(q[1]), wc.qp_num);
    EXPECT_TRUE(cq_stays_empty(m_rcq[RESP])) << "wr_id " << wc.wr_id;
    smlx5_async_event_t ev;
    ASSERT_TRUE(wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, &ev));
    EXPECT_EQ(smlx5_qp_num(q[1]), ev.qp_num);

    /* the SRQ still has the other one: a new QP's message takes it */
    smlx5_qp_t *r[2];
    ASSERT_NO_FATAL_FAILURE(small_mtu_pair(r, srq));
    ASSERT_NO_FATAL_FAILURE(send_until_started(r, 1, 1000));
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(22u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(1000u, wc.byte_len);
    EXPECT_EQ(0, memcmp(m_src.data(), &m_dst[MSG_LEN], 1000));
}

/* On a QP's own receive queue the WQE a message had started is flushed
 * first, then the untouched ones, in order; no Last WQE Reached (no SRQ). */
TEST_F(sim_recv_flush, an_rq_receive_a_message_started_is_flushed_first)
{
    smlx5_qp_t *q[2];
    ASSERT_NO_FATAL_FAILURE(small_mtu_pair(q));
    ASSERT_NO_FATAL_FAILURE(post_recv_to(q[1], nullptr, 0, 31));
    ASSERT_NO_FATAL_FAILURE(post_recv_to(q[1], nullptr, 1, 32));
    ASSERT_NO_FATAL_FAILURE(send_until_started(q, 0));

    ASSERT_NO_FATAL_FAILURE(to_err(q[1]));
    struct ibv_wc wc;
    for (uint64_t id : {31u, 32u}) {
        ASSERT_TRUE(poll_one(m_rcq[RESP], &wc, 1000)) << "wr_id " << id;
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    }
    EXPECT_TRUE(cq_stays_empty(m_rcq[RESP]));
    EXPECT_FALSE(wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, nullptr, 20));
}
