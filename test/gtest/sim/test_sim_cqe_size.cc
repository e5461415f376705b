/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQE size and scatter-to-CQE (spec section 9):
 * - MLX5_CQE_SIZE is read as rdma-core's get_cqe_size does (providers/
 *   mlx5/verbs.c): unset 64, "64" or "128", anything else EINVAL; in a
 *   128-byte CQE the struct mlx5_cqe64 is the last 64 bytes of the slot;
 * - responder scatter-to-CQE as the Linux driver configures it (cs_res)
 *   and rdma-core polls it (cq.c: MLX5_INLINE_SCATTER_32 / _64,
 *   mlx5_copy_to_recv_wqe / _srq); MLX5_SCATTER_TO_CQE=0 and
 *   MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE turn it off (verbs.c
 *   use_scatter_to_cqe, mlx5_create_qp).
 */
#include "sim_dv_util.h"

class sim_cqe_size : public sim_fixture {
protected:
    void TearDown() override
    {
        for (smlx5_qp_t *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        m_extra_qps.clear();
        for (smlx5_srq_t *srq : m_extra_srqs) {
            smlx5_destroy_srq(srq);
        }
        m_extra_srqs.clear();
        for (smlx5_cq_t *cq : m_cqs) {
            EXPECT_EQ(0, smlx5_destroy_cq(cq));
        }
        sim_fixture::TearDown();
    }

    /* A CQ of `cqe_size` bytes per CQE, chosen as an rdma-core user does. */
    smlx5_cq_t *cq_of(const char *cqe_size)
    {
        scoped_env  env("MLX5_CQE_SIZE", cqe_size);
        smlx5_cq_t *cq = smlx5_create_cq(m_ctx, 64, nullptr);
        EXPECT_NE(nullptr, cq) << strerror(errno);
        if (cq != nullptr) {
            m_cqs.push_back(cq);
        }
        return cq;
    }

    smlx5_qp_t *rc_on(smlx5_cq_t *scq, smlx5_cq_t *rcq, uint32_t flags = 0,
                      smlx5_srq_t *srq = nullptr, int sq_sig_all = 0)
    {
        smlx5_qp_t *qp = create_rc_qp(scq, rcq, srq, flags, sq_sig_all);
        EXPECT_NE(nullptr, qp) << strerror(errno);
        if (qp != nullptr) {
            m_extra_qps.push_back(qp);
        }
        return qp;
    }

    /* A receiver on `rcq` connected to a fresh sender; returns the sender. */
    smlx5_qp_t *pair_into(smlx5_cq_t *rcq, uint32_t flags = 0)
    {
        m_rx           = rc_on(m_scq[RESP], rcq, flags);
        smlx5_qp_t *tx = rc_on(m_scq[REQ], m_rcq[REQ]);
        if ((m_rx == nullptr) || (tx == nullptr)) {
            return nullptr;
        }
        connect_rc(tx, smlx5_qp_num(m_rx));
        connect_rc(m_rx, smlx5_qp_num(tx));
        return tx;
    }

    void recv_on(smlx5_qp_t *qp, size_t off, uint32_t len, uint64_t wr_id)
    {
        struct ibv_sge     s = sge(RESP, off, len);
        struct ibv_recv_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        ASSERT_EQ(0, smlx5_post_recv(qp, &wr, &bad));
    }

    /* SEND `len` pattern bytes from REQ offset 0. */
    void send(smlx5_qp_t *qp, uint32_t len, uint64_t wr_id = 1)
    {
        for (uint32_t i = 0; i < len; ++i) {
            *buf(REQ, i) = (uint8_t)(0xa0 + i);
        }
        struct ibv_sge      s   = sge(REQ, 0, len);
        struct ibv_send_wr  wr  = make_wr(IBV_WR_SEND, wr_id, &s, 1);
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    }

    /* Send `len` bytes into a fresh receive buffer at RESP offset 4096;
     * returns the receive CQE, parsed from the CQ buffer. */
    struct mlx5_cqe64 *deliver(dv_cq &rcq, smlx5_qp_t *tx, uint32_t len)
    {
        memset(buf(RESP, 4096), 0, 256);
        recv_on(m_rx, 4096, 256, 7);
        send(tx, len);
        return rcq.next(m_ctx);
    }

    bool rx_buffer_untouched(size_t len)
    {
        for (size_t i = 0; i < len; ++i) {
            if (*buf(RESP, 4096 + i) != 0) {
                return false;
            }
        }
        return true;
    }

    std::vector<smlx5_cq_t *> m_cqs;
    smlx5_qp_t               *m_rx = nullptr;
};

TEST_F(sim_cqe_size, mlx5_cqe_size_is_read_like_get_cqe_size)
{
    struct mlx5dv_cq dv;
    smlx5_cq_t      *cq = cq_of(nullptr);
    ASSERT_NE(nullptr, cq);
    ASSERT_EQ(0, smlx5_cq_dv(cq, &dv));
    EXPECT_EQ(64u, dv.cqe_size);
    cq = cq_of("64");
    ASSERT_NE(nullptr, cq);
    ASSERT_EQ(0, smlx5_cq_dv(cq, &dv));
    EXPECT_EQ(64u, dv.cqe_size);
    cq = cq_of("128");
    ASSERT_NE(nullptr, cq);
    ASSERT_EQ(0, smlx5_cq_dv(cq, &dv));
    EXPECT_EQ(128u, dv.cqe_size);
    for (const char *bad : {"32", "256", "", "big", "0"}) {
        scoped_env env("MLX5_CQE_SIZE", bad);
        errno = 0;
        EXPECT_EQ(nullptr, smlx5_create_cq(m_ctx, 64, nullptr)) << bad;
        EXPECT_EQ(EINVAL, errno) << bad;
    }
}

/* Every slot's cqe64 is its last 64 bytes, initialised INVALID there. */
TEST_F(sim_cqe_size, cqe128_keeps_the_cqe64_in_the_last_64_bytes)
{
    smlx5_cq_t *cq = cq_of("128");
    ASSERT_NE(nullptr, cq);
    dv_cq c;
    ASSERT_NO_FATAL_FAILURE(c.init(cq));
    for (uint32_t i = 0; i < c.dv.cqe_cnt; ++i) {
        ASSERT_EQ(MLX5_CQE_INVALID << 4, c.slot(i)[127]) << i;
        ASSERT_EQ(0, c.slot(i)[63]) << i;
    }
    smlx5_qp_t *qp   = rc_on(cq, m_rcq[REQ]);
    smlx5_qp_t *peer = rc_on(m_scq[RESP], m_rcq[RESP]);
    ASSERT_NE(nullptr, qp);
    ASSERT_NE(nullptr, peer);
    ASSERT_NO_FATAL_FAILURE(connect_rc(qp, smlx5_qp_num(peer)));
    ASSERT_NO_FATAL_FAILURE(connect_rc(peer, smlx5_qp_num(qp)));
    struct ibv_sge     s   = sge(REQ, 0, 8);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, &s, 1);
    wr.wr.rdma.remote_addr = addr(RESP);
    wr.wr.rdma.rkey        = rkey(RESP);
    struct ibv_send_wr *bad;
    ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    ASSERT_NE(nullptr, c.wait(m_ctx, 0));
    const uint8_t *slot = c.slot(0);
    uint32_t       sop_drop_qpn;
    memcpy(&sop_drop_qpn, slot + 64 + 56, 4);
    EXPECT_EQ(MLX5_CQE_REQ, slot[127] >> 4);
    EXPECT_EQ(smlx5_qp_num(qp), be32toh(sop_drop_qpn) & 0xffffff);
}

/* smlx5_poll_cq and the driver's clean on reset with 128-byte CQEs. */
TEST_F(sim_cqe_size, cqe128_poll_and_clean)
{
    smlx5_cq_t *cq = cq_of("128");
    ASSERT_NE(nullptr, cq);
    smlx5_qp_t *a = rc_on(cq, m_rcq[REQ]), *b = rc_on(cq, m_rcq[REQ]);
    ASSERT_NE(nullptr, a);
    ASSERT_NE(nullptr, b);
    for (smlx5_qp_t *qp : {a, b}) {
        ASSERT_NO_FATAL_FAILURE(rc_to_init(qp));
        ASSERT_NO_FATAL_FAILURE(rc_to_rtr(qp, 0xabcde)); /* nobody */
        ASSERT_NO_FATAL_FAILURE(rc_to_rts(qp));
    }
    struct ibv_sge      s = sge(REQ, 0, 8);
    struct ibv_send_wr *bad;
    for (uint64_t id = 1; id <= 4; ++id) {
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, id, &s, 1);
        wr.wr.rdma.remote_addr = addr(RESP);
        wr.wr.rdma.rkey        = rkey(RESP);
        ASSERT_EQ(0, smlx5_post_send((id & 1) ? a : b, &wr, &bad));
    }
    struct ibv_qp_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, smlx5_modify_qp(a, &attr, IBV_QP_STATE));
    ASSERT_EQ(0, smlx5_modify_qp(b, &attr, IBV_QP_STATE));
    attr.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, smlx5_modify_qp(a, &attr, IBV_QP_STATE));
    struct ibv_wc wc;
    for (uint64_t id : {2, 4}) {
        ASSERT_TRUE(poll_one(cq, &wc));
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
        EXPECT_EQ(smlx5_qp_num(b), wc.qp_num);
    }
    EXPECT_TRUE(cq_stays_empty(cq, 10));
}

/* ----------------------------------------------------- scatter to CQE */

/* RC, 64-byte CQE: up to 32 bytes land in bytes 0-31 of the cqe64. */
TEST_F(sim_cqe_size, rc_scatters_32_bytes_into_a_64_byte_cqe)
{
    dv_cq rcq;
    ASSERT_NO_FATAL_FAILURE(rcq.init(cq_of("64")));
    smlx5_qp_t *tx = pair_into(rcq.cq);
    ASSERT_NE(nullptr, tx);
    struct mlx5_cqe64 *cqe = deliver(rcq, tx, 32);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe));
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_32);
    EXPECT_EQ(32u, strand_cqe_byte_cnt(cqe));
    EXPECT_EQ(0, strand_cqe_wqe_counter(cqe)); /* the WQE is consumed */
    EXPECT_EQ(0, memcmp(cqe, buf(REQ), 32));
    EXPECT_EQ((const void *)cqe, strand_cqe_inline_data(cqe));
    EXPECT_TRUE(rx_buffer_untouched(32));

    cqe = deliver(rcq, tx, 33); /* too big: the buffer */
    ASSERT_NE(nullptr, cqe);
    EXPECT_FALSE(cqe->op_own &
                 (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64));
    EXPECT_EQ(1, strand_cqe_wqe_counter(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 33));
}

/* RC, 128-byte CQE: up to 64 bytes in the first half of the slot. */
TEST_F(sim_cqe_size, rc_scatters_64_bytes_into_a_128_byte_cqe)
{
    dv_cq rcq;
    ASSERT_NO_FATAL_FAILURE(rcq.init(cq_of("128")));
    smlx5_qp_t *tx = pair_into(rcq.cq);
    ASSERT_NE(nullptr, tx);
    struct mlx5_cqe64 *cqe = deliver(rcq, tx, 64);
    ASSERT_NE(nullptr, cqe);
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64);
    EXPECT_EQ(64u, strand_cqe_byte_cnt(cqe));
    EXPECT_EQ(0, memcmp(rcq.slot(0), buf(REQ), 64));
    EXPECT_EQ((const void *)rcq.slot(0), strand_cqe_inline_data(cqe));
    EXPECT_TRUE(rx_buffer_untouched(64));

    cqe = deliver(rcq, tx, 65);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 65));
}

TEST_F(sim_cqe_size, disable_flag_and_env_turn_scatter_off)
{
    dv_cq rcq;
    ASSERT_NO_FATAL_FAILURE(rcq.init(cq_of("128")));
    smlx5_qp_t *tx = pair_into(rcq.cq, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE);
    ASSERT_NE(nullptr, tx);
    struct mlx5_cqe64 *cqe = deliver(rcq, tx, 8);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 8));

    {
        scoped_env env("MLX5_SCATTER_TO_CQE", "0"); /* read at creation */
        tx = pair_into(rcq.cq);
    }
    ASSERT_NE(nullptr, tx);
    cqe = deliver(rcq, tx, 8);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 8));
}

TEST_F(sim_cqe_size, disable_with_allow_scatter_is_einval)
{
    smlx5_qp_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.type         = SMLX5_QPT_RC;
    attr.send_cq      = m_scq[REQ];
    attr.recv_cq      = m_rcq[REQ];
    attr.cap          = m_cap;
    attr.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
                        MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
    errno = 0;
    EXPECT_EQ(nullptr, smlx5_create_qp(m_pd, &attr));
    EXPECT_EQ(EINVAL, errno);
}

/* rdma-core's poll copies scattered data into the consumed WQE's
 * buffers, or reports IBV_WC_LOC_LEN_ERR when they are too small. */
TEST_F(sim_cqe_size, poll_copies_scattered_data_to_the_receive_buffer)
{
    smlx5_cq_t *rcq = cq_of("128");
    ASSERT_NE(nullptr, rcq);
    smlx5_qp_t *tx = pair_into(rcq);
    ASSERT_NE(nullptr, tx);
    memset(buf(RESP, 4096), 0, 256);
    recv_on(m_rx, 4096, 64, 7);
    send(tx, 48);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(rcq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(48u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 48));

    recv_on(m_rx, 8192, 16, 8); /* too small for 48 bytes */
    send(tx, 48, 2);
    ASSERT_TRUE(poll_one(rcq, &wc));
    EXPECT_EQ(8u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc)); /* the sender saw success */
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* A QP on an SRQ: wqe_counter names the consumed SRQ WQE. */
TEST_F(sim_cqe_size, srq_receive_scatters_and_names_the_wqe)
{
    dv_cq rcq;
    ASSERT_NO_FATAL_FAILURE(rcq.init(cq_of("64")));
    smlx5_srq_t *srq = create_srq(8, 1);
    ASSERT_NE(nullptr, srq);
    m_rx           = rc_on(m_scq[RESP], rcq.cq, 0, srq);
    smlx5_qp_t *tx = rc_on(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, m_rx);
    ASSERT_NE(nullptr, tx);
    ASSERT_NO_FATAL_FAILURE(connect_rc(tx, smlx5_qp_num(m_rx)));
    ASSERT_NO_FATAL_FAILURE(connect_rc(m_rx, smlx5_qp_num(tx)));
    for (int i = 0; i < 2; ++i) {
        struct ibv_sge     s = sge(RESP, 4096 + 256 * i, 64);
        struct ibv_recv_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.sg_list = &s;
        wr.num_sge = 1;
        ASSERT_EQ(0, smlx5_post_srq_recv(srq, &wr, &bad));
    }
    memset(buf(RESP, 4096), 0, 512);
    send(tx, 16);
    send(tx, 16, 2);
    for (uint16_t i = 0; i < 2; ++i) {
        struct mlx5_cqe64 *cqe = rcq.next(m_ctx);
        ASSERT_NE(nullptr, cqe);
        EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_32);
        EXPECT_EQ(i, strand_cqe_wqe_counter(cqe));
        EXPECT_EQ(0, memcmp(cqe, buf(REQ), 16));
    }
    EXPECT_TRUE(rx_buffer_untouched(512));
}

/* A DCT scatters only into 128-byte receive CQEs, and only on a device
 * with SMLX5_CAP_SCATTER_TO_CQE_DCT (on by default). */
class sim_dct_scatter : public sim_cqe_size {
protected:
    struct mlx5_cqe64 *dc_send(const char *cqe_size, dv_cq &rcq, uint32_t len)
    {
        smlx5_cq_t *cq = cq_of(cqe_size);
        EXPECT_NE(nullptr, cq);
        if (cq == nullptr) {
            return nullptr;
        }
        rcq.init(cq);
        smlx5_srq_t         *srq = create_srq(8, 1);
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type          = SMLX5_QPT_DCT;
        attr.send_cq       = m_scq[RESP];
        attr.recv_cq       = cq;
        attr.srq           = srq;
        attr.dc_access_key = SMLX5_DC_KEY_DEFAULT;
        smlx5_qp_t *dct    = smlx5_create_qp(m_pd, &attr);
        EXPECT_NE(nullptr, dct);
        if ((dct == nullptr) || (srq == nullptr)) {
            return nullptr;
        }
        m_extra_qps.push_back(dct);
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state        = IBV_QPS_INIT;
        a.port_num        = SMLX5_PORT_NUM;
        a.qp_access_flags = access_all() & ~IBV_ACCESS_LOCAL_WRITE;
        EXPECT_EQ(0,
                  smlx5_modify_qp(dct, &a,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                          IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        memset(&a, 0, sizeof(a));
        a.qp_state         = IBV_QPS_RTR;
        a.min_rnr_timer    = 1;
        a.path_mtu         = m_mtu;
        a.ah_attr.port_num = SMLX5_PORT_NUM;
        EXPECT_EQ(0, smlx5_modify_qp(dct, &a,
                                     IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                                             IBV_QP_AV | IBV_QP_PATH_MTU));
        struct ibv_sge     rs = sge(RESP, 4096, 128);
        struct ibv_recv_wr rwr, *rbad;
        memset(&rwr, 0, sizeof(rwr));
        rwr.sg_list = &rs;
        rwr.num_sge = 1;
        EXPECT_EQ(0, smlx5_post_srq_recv(srq, &rwr, &rbad));
        memset(buf(RESP, 4096), 0, 128);

        smlx5_qp_t *dci = create_dci();
        if (dci == nullptr) {
            return nullptr;
        }
        for (uint32_t i = 0; i < len; ++i) {
            *buf(REQ, i) = (uint8_t)(0x30 + i);
        }
        struct ibv_sge      s  = sge(REQ, 0, len);
        struct ibv_send_wr  wr = make_wr(IBV_WR_SEND, 1, &s, 1);
        smlx5_dc_target_t   dc = {m_lid, smlx5_dct_num(dct),
                                  SMLX5_DC_KEY_DEFAULT};
        struct ibv_send_wr *bad;
        EXPECT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, 0, &bad));
        return rcq.next(m_ctx);
    }
};

TEST_F(sim_dct_scatter, dct_scatters_only_into_128_byte_cqes)
{
    dv_cq              rcq64, rcq128;
    struct mlx5_cqe64 *cqe = dc_send("64", rcq64, 8);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 8));

    EXPECT_TRUE(m_caps.flags & SMLX5_CAP_SCATTER_TO_CQE_DCT);
    cqe = dc_send("128", rcq128, 64);
    ASSERT_NE(nullptr, cqe);
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64);
    EXPECT_EQ(0, memcmp(rcq128.slot(0), buf(REQ), 64));
    EXPECT_TRUE(rx_buffer_untouched(64));
}

class sim_dct_scatter_off : public sim_dct_scatter {
protected:
    void SetUp() override
    {
        setenv("STRAND_SIM_CAPS", "scatter_dct=0", 1);
        sim_dct_scatter::SetUp();
    }
    void TearDown() override
    {
        sim_dct_scatter::TearDown();
        unsetenv("STRAND_SIM_CAPS");
    }
};

TEST_F(sim_dct_scatter_off, without_the_capability_a_dct_never_scatters)
{
    EXPECT_FALSE(m_caps.flags & SMLX5_CAP_SCATTER_TO_CQE_DCT);
    dv_cq              rcq;
    struct mlx5_cqe64 *cqe = dc_send("128", rcq, 8);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(RESP, 4096), buf(REQ), 8));
}

/* ------------------------------------------ requester scatter to CQE */

/* cs_req as the Linux driver sets it: READ / atomic response data into the
 * send CQE of a QP with sq_sig_all or ALLOW_SCATTER_TO_CQE; rdma-core's
 * poll copies it into the WQE's local buffers (mlx5_copy_to_send_wqe). */
class sim_req_scatter : public sim_cqe_size {
protected:
    /* An RC requester on `scq` connected to a fresh responder. */
    smlx5_qp_t *requester(smlx5_cq_t *scq, uint32_t flags, int sq_sig_all)
    {
        smlx5_qp_t *tx = rc_on(scq, m_rcq[REQ], flags, nullptr, sq_sig_all);
        smlx5_qp_t *rx = rc_on(m_scq[RESP], m_rcq[RESP]);
        if ((tx == nullptr) || (rx == nullptr)) {
            return nullptr;
        }
        connect_rc(tx, smlx5_qp_num(rx));
        connect_rc(rx, smlx5_qp_num(tx));
        return tx;
    }

    /* A signaled READ of `len` pattern bytes into REQ offset 8192. */
    void read(smlx5_qp_t *qp, uint32_t len)
    {
        for (uint32_t i = 0; i < len; ++i) {
            *buf(RESP, 1024 + i) = (uint8_t)(0x51 + 3 * i);
        }
        memset(buf(REQ, 8192), 0, 256);
        struct ibv_sge     s   = sge(REQ, 8192, len);
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_READ, len, &s, 1);
        wr.wr.rdma.remote_addr = addr(RESP, 1024);
        wr.wr.rdma.rkey        = rkey(RESP);
        struct ibv_send_wr *bad;
        ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    }

    bool local_untouched(uint32_t len)
    {
        for (uint32_t i = 0; i < len; ++i) {
            if (*buf(REQ, 8192 + i) != 0) {
                return false;
            }
        }
        return true;
    }
};

TEST_F(sim_req_scatter, sq_sig_all_read_of_32_bytes_lands_in_a_64_byte_cqe)
{
    dv_cq scq;
    ASSERT_NO_FATAL_FAILURE(scq.init(cq_of("64")));
    smlx5_qp_t *qp = requester(scq.cq, 0, 1);
    ASSERT_NE(nullptr, qp);
    read(qp, 32);
    struct mlx5_cqe64 *cqe = scq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_32);
    EXPECT_EQ(32u, strand_cqe_byte_cnt(cqe));
    EXPECT_EQ(0, memcmp(cqe, buf(RESP, 1024), 32));
    EXPECT_TRUE(local_untouched(32));

    read(qp, 33); /* too big: the local buffer */
    cqe = scq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(REQ, 8192), buf(RESP, 1024), 33));

    /* an atomic's fetched value, as it would land in memory (in the
     * byte order of the device's 8-byte endianness mode) */
    uint64_t orig = 0x1122334455667788ull;
    uint64_t v    = m_caps.atomic_mode8b ? orig : htobe64(orig);
    memcpy(buf(RESP, 2048), &orig, 8);
    struct ibv_sge     s     = sge(REQ, 8192, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 9, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP, 2048);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = 1;
    memset(buf(REQ, 8192), 0, 8);
    struct ibv_send_wr *bad;
    ASSERT_EQ(0, smlx5_post_send(qp, &wr, &bad));
    cqe = scq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_32);
    EXPECT_EQ(8u, strand_cqe_byte_cnt(cqe));
    EXPECT_EQ(0, memcmp(cqe, &v, 8));
    EXPECT_TRUE(local_untouched(8));
}

TEST_F(sim_req_scatter, allow_flag_read_of_64_bytes_lands_in_a_128_byte_cqe)
{
    dv_cq scq;
    ASSERT_NO_FATAL_FAILURE(scq.init(cq_of("128")));
    smlx5_qp_t *qp = requester(scq.cq, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE,
                               0);
    ASSERT_NE(nullptr, qp);
    read(qp, 64);
    struct mlx5_cqe64 *cqe = scq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64);
    EXPECT_EQ(0, memcmp(scq.slot(0), buf(RESP, 1024), 64));
    EXPECT_TRUE(local_untouched(64));
}

TEST_F(sim_req_scatter, neither_sq_sig_all_nor_allow_keeps_the_buffer)
{
    dv_cq scq;
    ASSERT_NO_FATAL_FAILURE(scq.init(cq_of("128")));
    smlx5_qp_t *qp = requester(scq.cq, 0, 0);
    ASSERT_NE(nullptr, qp);
    read(qp, 16);
    struct mlx5_cqe64 *cqe = scq.next(m_ctx);
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
    EXPECT_EQ(0, memcmp(buf(REQ, 8192), buf(RESP, 1024), 16));
}

TEST_F(sim_req_scatter, poll_copies_response_data_to_the_local_buffers)
{
    smlx5_cq_t *scq = cq_of("128");
    ASSERT_NE(nullptr, scq);
    smlx5_qp_t *qp = requester(scq, 0, 1);
    ASSERT_NE(nullptr, qp);
    read(qp, 40);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(40u, wc.wr_id);
    EXPECT_EQ(40u, wc.byte_len);
    EXPECT_EQ(0, memcmp(buf(REQ, 8192), buf(RESP, 1024), 40));
}

/* A DCI scatters only into 128-byte send CQEs (no DC requester scatter
 * into 64-byte CQEs on this device). */
TEST_F(sim_req_scatter, dci_scatters_only_into_128_byte_cqes)
{
    for (const char *size : {"64", "128"}) {
        dv_cq scq;
        ASSERT_NO_FATAL_FAILURE(scq.init(cq_of(size)));
        smlx5_srq_t *srq = create_srq(8, 1);
        smlx5_qp_t  *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
        ASSERT_NE(nullptr, dct);
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type            = SMLX5_QPT_DCI;
        attr.send_cq         = scq.cq;
        attr.recv_cq         = m_rcq[REQ];
        attr.cap             = m_cap;
        attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
        attr.sq_sig_all                              = 1;
        smlx5_qp_t *dci = smlx5_create_qp(m_pd, &attr);
        ASSERT_NE(nullptr, dci);
        m_extra_qps.push_back(dci);
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_INIT;
        a.port_num = SMLX5_PORT_NUM;
        ASSERT_EQ(0, smlx5_modify_qp(dci, &a,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                             IBV_QP_PORT));
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = m_mtu;
        ASSERT_EQ(0, smlx5_modify_qp(dci, &a, IBV_QP_STATE | IBV_QP_PATH_MTU));
        a.qp_state      = IBV_QPS_RTS;
        a.timeout       = 14;
        a.retry_cnt     = 7;
        a.rnr_retry     = 7;
        a.max_rd_atomic = 4;
        ASSERT_EQ(0,
                  smlx5_modify_qp(dci, &a,
                                  IBV_QP_STATE | IBV_QP_TIMEOUT |
                                          IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_SQ_PSN));
        for (uint32_t i = 0; i < 16; ++i) {
            *buf(RESP, 1024 + i) = (uint8_t)(0x61 + i);
        }
        memset(buf(REQ, 8192), 0, 16);
        struct ibv_sge     s   = sge(REQ, 8192, 16);
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_READ, 1, &s, 1);
        wr.wr.rdma.remote_addr = addr(RESP, 1024);
        wr.wr.rdma.rkey        = rkey(RESP);
        smlx5_dc_target_t   dc = {m_lid, smlx5_dct_num(dct),
                                  SMLX5_DC_KEY_DEFAULT};
        struct ibv_send_wr *bad;
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, 0, &bad));
        struct mlx5_cqe64 *cqe = scq.next(m_ctx);
        ASSERT_NE(nullptr, cqe);
        EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe)) << size;
        if (!strcmp(size, "64")) {
            EXPECT_EQ(nullptr, strand_cqe_inline_data(cqe));
            EXPECT_EQ(0, memcmp(buf(REQ, 8192), buf(RESP, 1024), 16));
        } else {
            EXPECT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64);
            EXPECT_EQ(0, memcmp(scq.slot(0), buf(RESP, 1024), 16));
            EXPECT_TRUE(local_untouched(16));
        }
    }
}
