/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The contract rdma-core keeps with a direct-verbs user about completion
 * queues (spec sections 3, 7 and 9), checked on CQ bytes:
 * - DV-owned CQs: mlx5dv_init_obj marks a CQ MLX5_CQ_FLAGS_DV_OWNED and
 *   __mlx5_cq_clean then leaves it alone, so a reset or destroyed QP's CQEs
 *   stay in it (providers/mlx5/mlx5.c mlx5dv_get_cq, cq.c __mlx5_cq_clean);
 * - flushing on ERR (spec section 7);
 * - arming: ibv_req_notify_cq from rdma-core's cons_index and arm_sn
 *   (cq.c mlx5_arm_cq), arm_sn advanced by ibv_get_cq_event (mlx5_cq_event),
 *   and the DV user's own arm doorbell.
 */
#include "sim_dv_util.h"

class sim_dv_cq : public sim_fixture {
protected:
    void TearDown() override
    {
        for (smlx5_qp_t *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        m_extra_qps.clear();
        for (smlx5_cq_t *cq : m_cqs) {
            EXPECT_EQ(0, smlx5_destroy_cq(cq));
        }
        if (m_ch != nullptr) {
            EXPECT_EQ(0, smlx5_destroy_comp_channel(m_ch));
        }
        sim_fixture::TearDown();
    }

    smlx5_cq_t *new_cq(smlx5_channel_t *ch = nullptr, int cqe = 64)
    {
        smlx5_cq_t *cq = smlx5_create_cq(m_ctx, cqe, ch);
        EXPECT_NE(nullptr, cq) << strerror(errno);
        if (cq != nullptr) {
            m_cqs.push_back(cq);
        }
        return cq;
    }

    smlx5_channel_t *channel()
    {
        if (m_ch == nullptr) {
            m_ch = smlx5_create_comp_channel(m_ctx);
            EXPECT_NE(nullptr, m_ch);
        }
        return m_ch;
    }

    /* A connected RC QP sending into a new DV-parsed CQ with a channel. */
    smlx5_qp_t *rc_on_dv_cq(dv_cq &cq)
    {
        cq.init(new_cq(channel()));
        smlx5_qp_t *qp = extra_rc(cq.cq, m_rcq[REQ]);
        EXPECT_NE(nullptr, qp);
        if (qp != nullptr) {
            reconnect(qp);
        }
        return qp;
    }

    smlx5_qp_t *extra_rc(smlx5_cq_t *scq, smlx5_cq_t *rcq)
    {
        smlx5_qp_t *qp = create_rc_qp(scq, rcq);
        EXPECT_NE(nullptr, qp) << strerror(errno);
        if (qp != nullptr) {
            m_extra_qps.push_back(qp);
        }
        return qp;
    }

    /* A requester whose peer never answers: its WQEs stay outstanding
     * (a QP number nobody owns; a transport timeout of seconds). */
    smlx5_qp_t *requester_to_nowhere(smlx5_cq_t *scq)
    {
        smlx5_qp_t *qp = extra_rc(scq, m_rcq[REQ]);
        if (qp == nullptr) {
            return nullptr;
        }
        rc_to_init(qp);
        rc_to_rtr(qp, 0xabcde);
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTS;
        a.max_rd_atomic = 4;
        a.retry_cnt     = 7;
        a.rnr_retry     = 7;
        a.timeout       = 20; /* 4.3 s */
        EXPECT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_SQ_PSN |
                                          IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_TIMEOUT));
        return qp;
    }

    void
    post_write(smlx5_qp_t *qp, uint64_t wr_id, unsigned flags, size_t off = 0)
    {
        struct ibv_sge     s  = sge(REQ, off, 8);
        struct ibv_send_wr wr = make_wr(IBV_WR_RDMA_WRITE, wr_id, &s, 1, flags);
        wr.wr.rdma.remote_addr  = addr(RESP, off);
        wr.wr.rdma.rkey         = rkey(RESP);
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    }

    void post_send_msg(smlx5_qp_t *qp, uint64_t wr_id, unsigned flags)
    {
        struct ibv_sge      s   = sge(REQ, 0, 8);
        struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, wr_id, &s, 1, flags);
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    }

    void set_state(smlx5_qp_t *qp, enum ibv_qp_state st)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state = st;
        ASSERT_EQ(0, smlx5_modify_qp(qp, &a, IBV_QP_STATE));
    }

    /* Everything the device engine does happens under its lock: once a
     * call that takes the lock returned, a CQE write seen in the buffer
     * has also done its event. */
    void engine_barrier(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        ASSERT_EQ(0, smlx5_query_qp(qp, &a, IBV_QP_STATE, nullptr));
    }

    static void expect_flush(const struct mlx5_cqe64 *cqe, uint32_t qpn,
                             uint16_t wqe_counter)
    {
        ASSERT_NE(nullptr, cqe);
        auto *e = reinterpret_cast<const struct mlx5_err_cqe *>(cqe);
        EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
        EXPECT_EQ(MLX5_CQE_SYNDROME_WR_FLUSH_ERR, e->syndrome);
        EXPECT_EQ(qpn, be32toh(e->s_wqe_opcode_qpn) & 0xffffff);
        EXPECT_EQ(wqe_counter, be16toh(e->wqe_counter));
    }

    /* Three WRITEs outstanding (signaled, unsignaled, unsignaled), the QP
     * to ERR, one more unsignaled WRITE: four flushes at CQ indexes 0-3. */
    void flush_four(smlx5_qp_t *qp, dv_cq &cq)
    {
        post_write(qp, 1, IBV_SEND_SIGNALED);
        post_write(qp, 2, 0);
        post_write(qp, 3, 0);
        EXPECT_EQ(nullptr, cq.peek(0)); /* nothing answered them */
        set_state(qp, IBV_QPS_ERR);
        post_write(qp, 4, 0);
        for (uint16_t i = 0; i < 4; ++i) {
            expect_flush(cq.wait(m_ctx, i), smlx5_qp_num(qp), i);
        }
        EXPECT_EQ(nullptr, cq.peek(4)); /* one each, no more */
    }

    /* RESET -> RTS towards a fresh responder of its own. */
    void reconnect(smlx5_qp_t *qp)
    {
        smlx5_qp_t *peer = extra_rc(m_scq[RESP], m_rcq[RESP]);
        ASSERT_NE(nullptr, peer);
        ASSERT_NO_FATAL_FAILURE(connect_rc(qp, smlx5_qp_num(peer)));
        ASSERT_NO_FATAL_FAILURE(connect_rc(peer, smlx5_qp_num(qp)));
    }

    std::vector<smlx5_cq_t *> m_cqs;
    smlx5_channel_t          *m_ch = nullptr;
};

/* Spec section 7 "Entering ERR": one WR_FLUSH_ERR per outstanding WQE, in
 * SQ order, whatever CE said, and one for each WQE posted afterwards. */
TEST_F(sim_dv_cq, err_flushes_each_outstanding_and_later_wqe_in_sq_order)
{
    dv_cq cq;
    ASSERT_NO_FATAL_FAILURE(cq.init(new_cq()));
    smlx5_qp_t *qp = requester_to_nowhere(cq.cq);
    ASSERT_NE(nullptr, qp);
    ASSERT_NO_FATAL_FAILURE(flush_four(qp, cq));
}

/* rdma-core __mlx5_cq_clean returns at once for a DV-owned CQ: after
 * RESET the flushed CQEs are still there (stale), and once the QP is back
 * in RTS its new CQEs come after them, with the same QP number. */
TEST_F(sim_dv_cq, reset_leaves_stale_cqes_in_a_dv_owned_cq)
{
    dv_cq cq;
    ASSERT_NO_FATAL_FAILURE(cq.init(new_cq()));
    smlx5_qp_t *qp = requester_to_nowhere(cq.cq);
    ASSERT_NE(nullptr, qp);
    ASSERT_NO_FATAL_FAILURE(flush_four(qp, cq));

    set_state(qp, IBV_QPS_RESET);
    for (uint16_t i = 0; i < 4; ++i) {
        expect_flush(cq.peek(i), smlx5_qp_num(qp), i);
    }
    ASSERT_NO_FATAL_FAILURE(reconnect(qp));
    memset(buf(REQ, 256), 0x6b, 8);
    post_write(qp, 5, IBV_SEND_SIGNALED, 256);
    struct mlx5_cqe64 *cqe = cq.wait(m_ctx, 4);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
    EXPECT_EQ(smlx5_qp_num(qp), strand_cqe_qpn(cqe));
    EXPECT_EQ(0, strand_cqe_wqe_counter(cqe)); /* the SQ starts again */
    EXPECT_EQ(0, memcmp(buf(REQ, 256), buf(RESP, 256), 8));
}

TEST_F(sim_dv_cq, destroy_leaves_the_qps_cqes_in_a_dv_owned_cq)
{
    dv_cq cq;
    ASSERT_NO_FATAL_FAILURE(cq.init(new_cq()));
    smlx5_qp_t *qp = requester_to_nowhere(cq.cq);
    ASSERT_NE(nullptr, qp);
    ASSERT_NO_FATAL_FAILURE(flush_four(qp, cq));
    uint32_t qpn = smlx5_qp_num(qp);
    m_extra_qps.pop_back();
    ASSERT_EQ(0, smlx5_destroy_qp(qp));
    for (uint16_t i = 0; i < 4; ++i) {
        expect_flush(cq.peek(i), qpn, i);
    }
}

/* A CQ never handed out through smlx5_cq_dv is the driver's: the reset
 * QP's CQEs leave it, other QPs' CQEs stay in order. */
TEST_F(sim_dv_cq, verbs_cq_is_cleaned_on_reset)
{
    smlx5_cq_t *cq = new_cq();
    ASSERT_NE(nullptr, cq);
    smlx5_qp_t *gone = requester_to_nowhere(cq);
    smlx5_qp_t *kept = requester_to_nowhere(cq);
    ASSERT_NE(nullptr, gone);
    ASSERT_NE(nullptr, kept);
    post_write(gone, 1, IBV_SEND_SIGNALED);
    post_write(kept, 2, IBV_SEND_SIGNALED);
    post_write(gone, 3, IBV_SEND_SIGNALED);
    set_state(gone, IBV_QPS_ERR);
    set_state(kept, IBV_QPS_ERR);
    set_state(gone, IBV_QPS_RESET);

    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(cq, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(smlx5_qp_num(kept), wc.qp_num);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_TRUE(cq_stays_empty(cq, 10));

    ASSERT_NO_FATAL_FAILURE(reconnect(gone));
    post_write(gone, 4, IBV_SEND_SIGNALED);
    ASSERT_TRUE(poll_one(cq, &wc));
    EXPECT_EQ(4u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* ------------------------------------------------------------- arming */

/* ibv_req_notify_cq arms with rdma-core's cons_index, which a DV user who
 * parses the CQ itself never moves: every such arm fires at once, however
 * far the application's own ci is. This is why a DV user arms itself. */
TEST_F(sim_dv_cq, req_notify_by_a_dv_poller_fires_at_once_every_time)
{
    dv_cq       cq;
    smlx5_qp_t *qp;
    ASSERT_NO_FATAL_FAILURE(qp = rc_on_dv_cq(cq));
    ASSERT_NE(nullptr, qp);
    post_write(qp, 1, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.next(m_ctx)); /* consumed: dbrec[0] = 1 */

    for (int round = 0; round < 3; ++round) {
        ASSERT_EQ(0, smlx5_req_notify_cq(cq.cq, 0));
        ASSERT_TRUE(channel_ready(m_ch)) << "round " << round;
        smlx5_cq_t *fired = nullptr;
        ASSERT_EQ(0, smlx5_get_cq_event(m_ch, &fired));
        EXPECT_EQ(cq.cq, fired);
    }
}

/* The DV arm (own ci, own sn): no event until a CQE at or past ci. */
TEST_F(sim_dv_cq, dv_arm_with_own_ci_waits_for_the_next_cqe)
{
    dv_cq       cq;
    smlx5_qp_t *qp;
    ASSERT_NO_FATAL_FAILURE(qp = rc_on_dv_cq(cq));
    ASSERT_NE(nullptr, qp);
    post_write(qp, 1, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.next(m_ctx));

    cq.arm(0, 0, cq.ci);
    EXPECT_FALSE(channel_ready(m_ch));
    post_write(qp, 2, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.wait(m_ctx, cq.ci));
    EXPECT_TRUE(channel_ready(m_ch, 5000));
    smlx5_cq_t *fired = nullptr;
    EXPECT_EQ(0, smlx5_get_cq_event(m_ch, &fired));
    EXPECT_EQ(cq.cq, fired);
}

/* An arm whose sn is the one of the arm that last fired is stale: it is
 * ignored (UNSURE, strict choice); the next sn arms again. */
TEST_F(sim_dv_cq, arm_with_a_stale_sn_never_fires)
{
    dv_cq       cq;
    smlx5_qp_t *qp;
    ASSERT_NO_FATAL_FAILURE(qp = rc_on_dv_cq(cq));
    ASSERT_NE(nullptr, qp);
    smlx5_cq_t *fired = nullptr;

    cq.arm(2, 0, cq.ci); /* sn 2 fires ... */
    post_write(qp, 1, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.next(m_ctx));
    ASSERT_TRUE(channel_ready(m_ch, 5000));
    ASSERT_EQ(0, smlx5_get_cq_event(m_ch, &fired));

    cq.arm(2, 0, cq.ci); /* ... so sn 2 is stale */
    post_write(qp, 2, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.wait(m_ctx, cq.ci));
    engine_barrier(qp);
    EXPECT_FALSE(channel_ready(m_ch));
    EXPECT_EQ(EAGAIN, smlx5_get_cq_event(m_ch, &fired));

    cq.arm(3, 0, cq.ci); /* the CQE is there: now */
    EXPECT_TRUE(channel_ready(m_ch));
}

/* The UAR word names the CQ: a doorbell for another CQN arms nothing. */
TEST_F(sim_dv_cq, arm_doorbell_for_another_cqn_is_ignored)
{
    dv_cq       cq;
    smlx5_qp_t *qp;
    ASSERT_NO_FATAL_FAILURE(qp = rc_on_dv_cq(cq));
    ASSERT_NE(nullptr, qp);
    strand_cq_arm(cq.dv.dbrec, cq.dv.cq_uar, cq.dv.cqn + 1, 0, 0, 0);
    smlx5_cq_arm_doorbell(cq.cq);
    post_write(qp, 1, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, cq.wait(m_ctx, 0));
    engine_barrier(qp);
    EXPECT_FALSE(channel_ready(m_ch));
}

/* Solicited-only arm (cmd 1 << 24): the first solicited or error CQE at or
 * past ci, one already in the CQ included. */
TEST_F(sim_dv_cq, solicited_arm_fires_for_an_already_present_solicited_cqe)
{
    dv_cq rcq;
    ASSERT_NO_FATAL_FAILURE(rcq.init(new_cq(channel())));
    smlx5_qp_t *rq = extra_rc(m_scq[RESP], rcq.cq);
    smlx5_qp_t *sq = extra_rc(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, rq);
    ASSERT_NE(nullptr, sq);
    ASSERT_NO_FATAL_FAILURE(connect_rc(sq, smlx5_qp_num(rq)));
    ASSERT_NO_FATAL_FAILURE(connect_rc(rq, smlx5_qp_num(sq)));
    for (int i = 0; i < 3; ++i) {
        struct ibv_sge     s = sge(RESP, 1024 * i, 64);
        struct ibv_recv_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        ASSERT_EQ(0, smlx5_post_recv(rq, &wr, &bad));
    }

    post_send_msg(sq, 1, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    struct mlx5_cqe64 *cqe = rcq.wait(m_ctx, 0);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(1, strand_cqe_se(cqe));
    rcq.arm(0, 1, 0);
    EXPECT_TRUE(channel_ready(m_ch)) << "a solicited CQE was already there";
    smlx5_cq_t *fired = nullptr;
    ASSERT_EQ(0, smlx5_get_cq_event(m_ch, &fired));

    /* past it: an unsolicited CQE does not fire, a solicited one does */
    rcq.arm(1, 1, 1);
    post_send_msg(sq, 2, IBV_SEND_SIGNALED);
    ASSERT_NE(nullptr, rcq.wait(m_ctx, 1));
    engine_barrier(rq);
    EXPECT_FALSE(channel_ready(m_ch));
    post_send_msg(sq, 3, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    ASSERT_NE(nullptr, rcq.wait(m_ctx, 2));
    EXPECT_TRUE(channel_ready(m_ch, 5000));
}

/* The verbs cycle (rdma-core): arm, event, ibv_get_cq_event (arm_sn + 1),
 * poll everything, arm again: no event until the next CQE. */
TEST_F(sim_dv_cq, verbs_arm_poll_rearm_cycle)
{
    smlx5_cq_t *cq = new_cq(channel());
    ASSERT_NE(nullptr, cq);
    smlx5_qp_t *qp = extra_rc(cq, m_rcq[REQ]);
    ASSERT_NE(nullptr, qp);
    ASSERT_NO_FATAL_FAILURE(reconnect(qp));
    struct ibv_wc wc;
    for (uint64_t round = 1; round <= 3; ++round) {
        ASSERT_EQ(0, smlx5_req_notify_cq(cq, 0));
        EXPECT_FALSE(channel_ready(m_ch));
        post_write(qp, round, IBV_SEND_SIGNALED);
        ASSERT_TRUE(channel_ready(m_ch, 5000));
        smlx5_cq_t *fired = nullptr;
        ASSERT_EQ(0, smlx5_get_cq_event(m_ch, &fired));
        EXPECT_EQ(cq, fired);
        ASSERT_TRUE(poll_one(cq, &wc));
        EXPECT_EQ(round, wc.wr_id);
    }
}
