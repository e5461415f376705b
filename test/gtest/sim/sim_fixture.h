/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gtest fixture for the software device: one context, a PD, and an RC QP
 * pair in this process connected to each other (QP 0 is the requester,
 * QP 1 the responder), each with its own send and receive CQ, plus
 * registered buffers on both sides.
 *
 * Derived fixtures change `m_cap` / `m_sq_sig_all` in their constructor
 * before SetUp() runs.
 */
#ifndef STRAND_TEST_SIM_FIXTURE_H_
#define STRAND_TEST_SIM_FIXTURE_H_

#include <gtest/gtest.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

extern "C" {
#include "sim/smlx5.h"
#include "mlx5/wqe.h"
#include "mlx5/cqe.h"
}

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

class sim_fixture : public ::testing::Test {
public:
    static const size_t BUF_SIZE = 65536;
    enum {
        REQ  = 0,
        RESP = 1
    };

protected:
    sim_fixture()
    {
        m_cap.max_send_wr     = 64;
        m_cap.max_recv_wr     = 64;
        m_cap.max_send_sge    = 4;
        m_cap.max_recv_sge    = 4;
        m_cap.max_inline_data = 256;
    }

    void SetUp() override
    {
        static std::atomic<int> counter{0};
        std::string fabric = "strand_gtest_" + std::to_string(getpid()) + "_" +
                             std::to_string(counter++);

        setenv("STRAND_SIM_FABRIC", fabric.c_str(), 1);
        m_ctx = smlx5_open_device(SMLX5_DEV_NAME);
        ASSERT_NE(nullptr, m_ctx) << "smlx5_open_device: " << strerror(errno);
        ASSERT_EQ(0, smlx5_query_device(m_ctx, &m_caps));
        struct ibv_port_attr pattr;
        memset(&pattr, 0, sizeof(pattr));
        ASSERT_EQ(0, smlx5_query_port(m_ctx, SMLX5_PORT_NUM, &pattr));
        m_lid        = pattr.lid;
        m_mtu        = pattr.active_mtu;
        m_link_layer = pattr.link_layer;
        m_gid_index  = pattr.gid_tbl_len - 1;
        ASSERT_EQ(0,
                  smlx5_query_gid(m_ctx, SMLX5_PORT_NUM, m_gid_index, &m_gid));

        m_pd = smlx5_alloc_pd(m_ctx);
        ASSERT_NE(nullptr, m_pd);

        for (int i = 0; i < 2; ++i) {
            m_scq[i] = smlx5_create_cq(m_ctx, 256, nullptr);
            m_rcq[i] = smlx5_create_cq(m_ctx, 256, nullptr);
            ASSERT_NE(nullptr, m_scq[i]);
            ASSERT_NE(nullptr, m_rcq[i]);
            m_buf[i] = aligned_alloc(4096, BUF_SIZE);
            ASSERT_NE(nullptr, m_buf[i]);
            memset(m_buf[i], 0, BUF_SIZE);
            m_mr[i] = smlx5_reg_mr(m_pd, m_buf[i], BUF_SIZE, access_all());
            ASSERT_NE(nullptr, m_mr[i]);
        }
        for (int i = 0; i < 2; ++i) {
            m_qp[i] = create_rc_qp(m_scq[i], m_rcq[i]);
            ASSERT_NE(nullptr, m_qp[i]) << strerror(errno);
        }
        ASSERT_NO_FATAL_FAILURE(connect_rc(m_qp[0], smlx5_qp_num(m_qp[1])));
        ASSERT_NO_FATAL_FAILURE(connect_rc(m_qp[1], smlx5_qp_num(m_qp[0])));
    }

    void TearDown() override
    {
        for (smlx5_qp_t *qp : m_extra_qps) {
            smlx5_destroy_qp(qp);
        }
        for (smlx5_srq_t *srq : m_extra_srqs) {
            smlx5_destroy_srq(srq);
        }
        for (int i = 0; i < 2; ++i) {
            if (m_qp[i] != nullptr) {
                smlx5_destroy_qp(m_qp[i]);
            }
        }
        for (int i = 0; i < 2; ++i) {
            if (m_mr[i] != nullptr) {
                smlx5_dereg_mr(m_mr[i]);
            }
            if (m_scq[i] != nullptr) {
                smlx5_destroy_cq(m_scq[i]);
            }
            if (m_rcq[i] != nullptr) {
                smlx5_destroy_cq(m_rcq[i]);
            }
            free(m_buf[i]);
        }
        if (m_pd != nullptr) {
            smlx5_dealloc_pd(m_pd);
        }
        if (m_ctx != nullptr) {
            smlx5_close_device(m_ctx);
        }
    }

    static int access_all()
    {
        return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    }

    /* sq_sig_all < 0: the fixture's m_sq_sig_all */
    smlx5_qp_t *create_rc_qp(smlx5_cq_t *scq, smlx5_cq_t *rcq,
                             smlx5_srq_t *srq = nullptr, uint32_t flags = 0,
                             int sq_sig_all = -1)
    {
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type         = SMLX5_QPT_RC;
        attr.send_cq      = scq;
        attr.recv_cq      = rcq;
        attr.srq          = srq;
        attr.cap          = m_cap;
        attr.create_flags = flags;
        attr.sq_sig_all   = (sq_sig_all < 0) ? m_sq_sig_all : sq_sig_all;
        return smlx5_create_qp(m_pd, &attr);
    }

    /* A path to this process's own port: by LID on InfiniBand; on
     * Ethernet (RoCE) by GID, with the GRH every RoCE AV carries. */
    void set_own_av(struct ibv_ah_attr *ah) const
    {
        memset(ah, 0, sizeof(*ah));
        ah->port_num = SMLX5_PORT_NUM;
        ah->dlid     = m_lid;
        if (m_link_layer == IBV_LINK_LAYER_ETHERNET) {
            ah->is_global      = 1;
            ah->grh.dgid       = m_gid;
            ah->grh.sgid_index = (uint8_t)m_gid_index;
            ah->grh.hop_limit  = 64;
        }
    }

    /* Spec section 7, RC. */
    void rc_to_init(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state        = IBV_QPS_INIT;
        a.pkey_index      = 0;
        a.port_num        = SMLX5_PORT_NUM;
        a.qp_access_flags = access_all() & ~IBV_ACCESS_LOCAL_WRITE;
        ASSERT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                          IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    }

    void rc_to_rtr(smlx5_qp_t *qp, uint32_t dest_qpn)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state           = IBV_QPS_RTR;
        a.path_mtu           = m_mtu;
        a.dest_qp_num        = dest_qpn;
        a.rq_psn             = 0;
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer      = 1;
        set_own_av(&a.ah_attr);
        ASSERT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                          IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC |
                                          IBV_QP_MIN_RNR_TIMER));
    }

    void rc_to_rts(smlx5_qp_t *qp, uint8_t rnr_retry = 7)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTS;
        a.sq_psn        = 0;
        a.max_rd_atomic = 4;
        a.retry_cnt     = 7;
        a.rnr_retry     = rnr_retry;
        a.timeout       = 14;
        ASSERT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_SQ_PSN |
                                          IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_TIMEOUT));
    }

    void connect_rc(smlx5_qp_t *qp, uint32_t dest_qpn)
    {
        ASSERT_NO_FATAL_FAILURE(rc_to_init(qp));
        ASSERT_NO_FATAL_FAILURE(rc_to_rtr(qp, dest_qpn));
        ASSERT_NO_FATAL_FAILURE(rc_to_rts(qp));
    }

    /* Two extra RC QPs with `cap` connected to each other (share the
     * fixture's CQs: out[0] on the REQ CQs, out[1] on the RESP CQs). */
    void create_connected_pair(const struct ibv_qp_cap &cap, int sq_sig_all,
                               smlx5_qp_t *out[2])
    {
        struct ibv_qp_cap saved_cap = m_cap;
        int               saved_sig = m_sq_sig_all;
        m_cap                       = cap;
        m_sq_sig_all                = sq_sig_all;
        for (int i = 0; i < 2; ++i) {
            out[i] = create_rc_qp(m_scq[i], m_rcq[i]);
            ASSERT_NE(nullptr, out[i]) << strerror(errno);
            m_extra_qps.push_back(out[i]);
        }
        m_cap        = saved_cap;
        m_sq_sig_all = saved_sig;
        ASSERT_NO_FATAL_FAILURE(connect_rc(out[0], smlx5_qp_num(out[1])));
        ASSERT_NO_FATAL_FAILURE(connect_rc(out[1], smlx5_qp_num(out[0])));
    }

    /* What the QP really holds (after rounding by create). */
    static struct ibv_qp_cap qp_cap(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr      attr;
        struct ibv_qp_init_attr init;
        memset(&init, 0, sizeof(init));
        EXPECT_EQ(0, smlx5_query_qp(qp, &attr, 0, &init));
        return init.cap;
    }

    /* A DCI in RTS (spec section 7, DCI). */
    smlx5_qp_t *create_dci(uint8_t log_num_concurent = 0,
                           uint8_t log_num_errored = 0, uint8_t rnr_retry = 7)
    {
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type              = SMLX5_QPT_DCI;
        attr.send_cq           = m_scq[REQ];
        attr.recv_cq           = m_rcq[REQ];
        attr.cap               = m_cap;
        attr.cap.max_recv_wr   = 0;
        attr.cap.max_recv_sge  = 0;
        attr.log_num_concurent = log_num_concurent;
        attr.log_num_errored   = log_num_errored;
        smlx5_qp_t *qp         = smlx5_create_qp(m_pd, &attr);
        EXPECT_NE(nullptr, qp) << strerror(errno);
        if (qp == nullptr) {
            return nullptr;
        }
        m_extra_qps.push_back(qp);

        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state   = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num   = SMLX5_PORT_NUM;
        EXPECT_EQ(0, smlx5_modify_qp(qp, &a,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                             IBV_QP_PORT));
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = m_mtu;
        EXPECT_EQ(0, smlx5_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU));
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTS;
        a.timeout       = 14;
        a.retry_cnt     = 7;
        a.rnr_retry     = rnr_retry;
        a.max_rd_atomic = 4;
        a.sq_psn        = 0;
        EXPECT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_TIMEOUT |
                                          IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_SQ_PSN));
        return qp;
    }

    smlx5_srq_t *create_srq(uint32_t max_wr, uint32_t max_sge)
    {
        smlx5_srq_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.max_wr      = max_wr;
        attr.max_sge     = max_sge;
        smlx5_srq_t *srq = smlx5_create_srq(m_pd, &attr);
        EXPECT_NE(nullptr, srq) << strerror(errno);
        if (srq != nullptr) {
            m_extra_srqs.push_back(srq);
        }
        return srq;
    }

    /* A DCT in RTR on `srq` (spec section 7, DCT). */
    smlx5_qp_t *
    create_dct(smlx5_srq_t *srq, uint64_t key, smlx5_cq_t *rcq = nullptr)
    {
        smlx5_qp_init_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.type          = SMLX5_QPT_DCT;
        attr.send_cq       = m_scq[RESP];
        attr.recv_cq       = (rcq != nullptr) ? rcq : m_rcq[RESP];
        attr.srq           = srq;
        attr.dc_access_key = key;
        smlx5_qp_t *qp     = smlx5_create_qp(m_pd, &attr);
        EXPECT_NE(nullptr, qp) << strerror(errno);
        if (qp == nullptr) {
            return nullptr;
        }
        m_extra_qps.push_back(qp);

        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state        = IBV_QPS_INIT;
        a.pkey_index      = 0;
        a.port_num        = SMLX5_PORT_NUM;
        a.qp_access_flags = access_all() & ~IBV_ACCESS_LOCAL_WRITE;
        EXPECT_EQ(0,
                  smlx5_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                          IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTR;
        a.min_rnr_timer = 1;
        a.path_mtu      = m_mtu;
        set_own_av(&a.ah_attr);
        EXPECT_EQ(0, smlx5_modify_qp(qp, &a,
                                     IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                                             IBV_QP_AV | IBV_QP_PATH_MTU));
        return qp;
    }

    /* ------------------------------------------------------- buffers */
    uint8_t *buf(int side, size_t off = 0)
    {
        return static_cast<uint8_t *>(m_buf[side]) + off;
    }

    uint64_t addr(int side, size_t off = 0)
    {
        return reinterpret_cast<uintptr_t>(buf(side, off));
    }

    uint32_t lkey(int side)
    {
        return smlx5_mr_lkey(m_mr[side]);
    }
    uint32_t rkey(int side)
    {
        return smlx5_mr_rkey(m_mr[side]);
    }

    struct ibv_sge sge(int side, size_t off, uint32_t len)
    {
        struct ibv_sge s;
        s.addr   = addr(side, off);
        s.length = len;
        s.lkey   = lkey(side);
        return s;
    }

    /* ------------------------------------------------------ SQ bytes */
    struct mlx5dv_qp qp_dv(smlx5_qp_t *qp)
    {
        struct mlx5dv_qp dv;
        memset(&dv, 0, sizeof(dv));
        EXPECT_EQ(0, smlx5_qp_dv(qp, &dv));
        return dv;
    }

    /* Byte `off` of the WQE whose ctrl is at BB `bb`, modulo the SQ. */
    static uint8_t sq_byte(const struct mlx5dv_qp &dv, uint32_t bb, size_t off)
    {
        size_t size = (size_t)dv.sq.wqe_cnt * dv.sq.stride;
        size_t pos = ((size_t)(bb & (dv.sq.wqe_cnt - 1)) * dv.sq.stride + off) %
                     size;
        return static_cast<const uint8_t *>(dv.sq.buf)[pos];
    }

    /* Copy `len` WQE bytes starting at BB `bb` (wrapping) into a vector. */
    static std::vector<uint8_t>
    sq_bytes(const struct mlx5dv_qp &dv, uint32_t bb, size_t len)
    {
        std::vector<uint8_t> v(len);
        for (size_t i = 0; i < len; ++i) {
            v[i] = sq_byte(dv, bb, i);
        }
        return v;
    }

    static uint32_t be32_at(const std::vector<uint8_t> &v, size_t off)
    {
        uint32_t x;
        memcpy(&x, &v[off], 4);
        return be32toh(x);
    }

    static uint16_t be16_at(const std::vector<uint8_t> &v, size_t off)
    {
        uint16_t x;
        memcpy(&x, &v[off], 2);
        return be16toh(x);
    }

    static uint64_t be64_at(const std::vector<uint8_t> &v, size_t off)
    {
        uint64_t x;
        memcpy(&x, &v[off], 8);
        return be64toh(x);
    }

    /* Producer index as published in the doorbell record. */
    static uint32_t sq_dbrec(const struct mlx5dv_qp &dv)
    {
        return be32toh(dv.dbrec[MLX5_SND_DBR]);
    }

    /* ------------------------------------------------- completions */
    /* Poll until one completion arrives (or `timeout_ms`). */
    bool poll_one(smlx5_cq_t *cq, struct ibv_wc *wc, int timeout_ms = 5000)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(timeout_ms);
        do {
            int n = smlx5_poll_cq(cq, 1, wc);
            if (n < 0) {
                ADD_FAILURE() << "smlx5_poll_cq: " << n;
                return false;
            }
            if (n == 1) {
                return true;
            }
            smlx5_progress(m_ctx);
        } while (std::chrono::steady_clock::now() < deadline);
        return false;
    }

    /* Nothing more shows up on `cq` for `ms` milliseconds. */
    bool cq_stays_empty(smlx5_cq_t *cq, int ms = 50)
    {
        struct ibv_wc wc;
        return !poll_one(cq, &wc, ms);
    }

    /* one receive buffer of `side`, on a QP's RQ or on an SRQ */
    static struct ibv_recv_wr make_recv_wr(struct ibv_sge *s, uint64_t wr_id)
    {
        struct ibv_recv_wr wr;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = s;
        wr.num_sge = 1;
        return wr;
    }

    void post_recv_on(smlx5_qp_t *qp, int side, size_t off, uint32_t len,
                      uint64_t wr_id)
    {
        struct ibv_sge     s  = sge(side, off, len);
        struct ibv_recv_wr wr = make_recv_wr(&s, wr_id), *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_recv(qp, &wr, &bad));
    }

    void post_recv(int side, size_t off, uint32_t len, uint64_t wr_id)
    {
        post_recv_on(m_qp[side], side, off, len, wr_id);
    }

    void post_srq_recv(smlx5_srq_t *srq, int side, size_t off, uint32_t len,
                       uint64_t wr_id)
    {
        struct ibv_sge     s  = sge(side, off, len);
        struct ibv_recv_wr wr = make_recv_wr(&s, wr_id), *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_srq_recv(srq, &wr, &bad));
    }

    static struct ibv_send_wr make_wr(enum ibv_wr_opcode op, uint64_t wr_id,
                                      struct ibv_sge *sgl, int num_sge,
                                      unsigned flags = IBV_SEND_SIGNALED)
    {
        struct ibv_send_wr wr;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id      = wr_id;
        wr.opcode     = op;
        wr.sg_list    = sgl;
        wr.num_sge    = num_sge;
        wr.send_flags = flags;
        return wr;
    }

    smlx5_context_t           *m_ctx = nullptr;
    smlx5_device_caps_t        m_caps;
    uint16_t                   m_lid        = 0;
    uint8_t                    m_link_layer = IBV_LINK_LAYER_INFINIBAND;
    int                        m_gid_index  = 0;
    union ibv_gid              m_gid; /* the port's GID at m_gid_index */
    enum ibv_mtu               m_mtu = IBV_MTU_4096; /* the port's active MTU */
    smlx5_pd_t                *m_pd  = nullptr;
    smlx5_cq_t                *m_scq[2] = {nullptr, nullptr};
    smlx5_cq_t                *m_rcq[2] = {nullptr, nullptr};
    smlx5_qp_t                *m_qp[2]  = {nullptr, nullptr};
    void                      *m_buf[2] = {nullptr, nullptr};
    smlx5_mr_t                *m_mr[2]  = {nullptr, nullptr};
    struct ibv_qp_cap          m_cap;
    int                        m_sq_sig_all = 0;
    std::vector<smlx5_qp_t *>  m_extra_qps;
    std::vector<smlx5_srq_t *> m_extra_srqs;
};

#endif
