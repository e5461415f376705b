/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device layer as the transport drives it: discovery, a DCI and a DCT
 * on an SRQ through the `sim` backend, WQEs built with src/mlx5, the
 * doorbell and the kick, CQEs parsed from the CQ buffer, DCI recovery, CQ
 * arming by the data path; and the `hw` backend on whatever hardware the
 * machine has (skipped where it has none).
 */
#include <gtest/gtest.h>

extern "C" {
#include "dev/dev.h"
#include "mlx5/cqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/wqe.h"
}

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <string>
#include <unistd.h>

class dev_sim : public ::testing::Test {
protected:
    void SetUp() override
    {
        static std::atomic<int> counter{0};
        std::string fabric = "strand_dev_" + std::to_string(getpid()) + "_" +
                             std::to_string(counter++);
        setenv("STRAND_SIM_FABRIC", fabric.c_str(), 1);
        setenv("STRAND_SIM_TIMEOUT_NS", "2000000", 1);
        strand_dev_info_t info;
        ASSERT_EQ(1, strand_dev_list(1u << STRAND_DEV_KIND_SIM, &info, 1));
        ASSERT_EQ(0, strand_dev_open(&info, &m_dev));
        m_ops = m_dev->ops;
        ASSERT_EQ(0, m_ops->create_channel(m_dev, &m_ch));
        ASSERT_EQ(0, m_ops->create_cq(m_dev, 256, 0, &m_ch, &m_cq));
        ASSERT_EQ(0, m_ops->create_srq(m_dev, 16, 1, &m_srq));
        strand_dev_dct_attr_t dct = {&m_cq, &m_srq, 0x1ee7a330, 1};
        ASSERT_EQ(0, strand_dev_create_dct(m_dev, &dct, &m_dct));
        ASSERT_EQ(0, posix_memalign(&m_buf, 4096, 65536));
        memset(m_buf, 0, 65536);
        ASSERT_EQ(0, m_ops->reg_mr(m_dev, m_buf, 65536,
                                   IBV_ACCESS_LOCAL_WRITE |
                                           IBV_ACCESS_REMOTE_WRITE |
                                           IBV_ACCESS_REMOTE_READ,
                                   &m_mr));
    }

    void TearDown() override
    {
        if (m_dci_up) {
            m_ops->destroy_qp(m_dev, &m_dci);
        }
        m_ops->destroy_qp(m_dev, &m_dct);
        m_ops->destroy_srq(m_dev, &m_srq);
        m_ops->dereg_mr(m_dev, &m_mr);
        m_ops->destroy_cq(m_dev, &m_cq);
        m_ops->destroy_channel(m_dev, &m_ch);
        m_ops->close(m_dev);
        free(m_buf);
        unsetenv("STRAND_SIM_TIMEOUT_NS");
    }

    void create_dci(uint8_t log_streams = 0, uint8_t log_errored = 0)
    {
        m_attr = {nullptr,     &m_cq, 64, 1, 64, log_streams,
                  log_errored, 14,    7,  7, 1};
        ASSERT_EQ(0, strand_dev_create_dci(m_dev, &m_attr, &m_dci));
        m_dci_up = true;
        m_pi     = 0;
    }

    uint8_t *buf(size_t off)
    {
        return static_cast<uint8_t *>(m_buf) + off;
    }

    /* ctrl + 48-byte AV [+ raddr] + data, rung and kicked; returns BB. */
    uint32_t post(uint8_t opcode, size_t local, uint32_t len, size_t remote,
                  uint32_t rkey, uint16_t stream = 0)
    {
        void *sq   = m_dci.dv.sq.buf;
        void *end  = strand_sq_end(sq, m_dci.dv.sq.wqe_cnt);
        auto *ctrl = (struct mlx5_wqe_ctrl_seg *)
                strand_sq_bb(sq, m_dci.dv.sq.wqe_cnt, m_pi);
        void *seg = strand_sq_next(ctrl, 16, sq, end);
        strand_set_av_full((struct mlx5_wqe_av *)seg, 0x1ee7a330, m_dct.qpn,
                           m_dev->caps.lid);
        seg         = strand_sq_next(seg, 48, sq, end);
        unsigned ds = 4;
        if (opcode != MLX5_OPCODE_SEND) {
            strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg,
                                 (uintptr_t)buf(remote), rkey);
            seg = strand_sq_next(seg, 16, sq, end);
            ++ds;
        }
        strand_set_data_seg((struct mlx5_wqe_data_seg *)seg,
                            (uintptr_t)buf(local), len, m_mr.lkey);
        ++ds;
        uint32_t bb = m_pi;
        strand_set_ctrl_seg(ctrl, 0, bb & 0xffff, opcode, m_dci.qpn, ds,
                            MLX5_WQE_CTRL_CQ_UPDATE, 0);
        strand_set_ctrl_stream(ctrl, stream);
        m_pi += strand_ds_to_bbs(ds);
        strand_bf_ring_doorbell(m_dci.dv.dbrec, m_dci.bf, m_pi, ctrl);
        if (m_dci.kick != nullptr) {
            m_dci.kick(m_dci.kick_arg);
        }
        return bb;
    }

    struct mlx5_cqe64 *next_cqe()
    {
        struct mlx5_cqe64 *cqe = nullptr;
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while ((cqe == nullptr) && (std::chrono::steady_clock::now() < end)) {
            cqe = strand_cqe_get(m_cq.dv.buf, m_cq.dv.cqe_cnt,
                                 strand_cqe_shift(m_cq.dv.cqe_size), m_ci);
            if ((cqe == nullptr) && (m_ops->progress != nullptr)) {
                m_ops->progress(m_dev);
            }
        }
        if (cqe != nullptr) {
            strand_cq_update_ci(m_cq.dv.dbrec, ++m_ci);
        }
        return cqe;
    }

    void post_srq(size_t off, uint32_t len)
    {
        /* the next free WQE of the list, as the provider keeps it */
        auto *wqe = static_cast<uint8_t *>(m_srq.dv.buf) +
                    m_srq_head * m_srq.dv.stride;
        auto *next = (struct mlx5_wqe_srq_next_seg *)wqe;
        strand_set_data_seg((struct mlx5_wqe_data_seg *)(next + 1),
                            (uintptr_t)buf(off), len, m_mr.lkey);
        m_srq_head = be16toh(next->next_wqe_index);
        strand_srq_ring_doorbell(m_srq.dv.dbrec, ++m_srq_posted);
    }

    strand_dev_t           *m_dev = nullptr;
    const strand_dev_ops_t *m_ops = nullptr;
    strand_dev_channel_t    m_ch;
    strand_dev_cq_t         m_cq;
    strand_dev_srq_t        m_srq;
    strand_dev_qp_t         m_dct, m_dci;
    strand_dev_sq_attr_t    m_attr;
    strand_dev_mr_t         m_mr;
    void                   *m_buf    = nullptr;
    bool                    m_dci_up = false;
    uint32_t                m_pi = 0, m_ci = 0;
    uint16_t                m_srq_head = 0, m_srq_posted = 0;
};

TEST_F(dev_sim, caps_describe_the_software_device)
{
    EXPECT_STREQ("smlx5_0", m_dev->info.name);
    EXPECT_EQ(STRAND_DEV_KIND_SIM, m_dev->info.kind);
    EXPECT_NE(0, m_dev->caps.lid);
    EXPECT_EQ(4096u, m_dev->caps.mtu);
    EXPECT_GT(m_dev->caps.max_inline, 0u);
    EXPECT_TRUE(m_dev->caps.atomics);
    /* the default HCA answers 8-byte atomics in host order (mlx5_core's
     * mode where the HCA has it), 32-bit masked ones big-endian */
    EXPECT_FALSE(m_dev->caps.atomic_reply_be64);
    EXPECT_TRUE(m_dev->caps.atomic_reply_be32);
    EXPECT_GT(m_dev->caps.dci_max_log_num_concurent, 0);
    EXPECT_GE(m_ch.fd, 0);
    EXPECT_EQ(1, m_dev->caps.port_num);
    EXPECT_EQ(IBV_LINK_LAYER_INFINIBAND, m_dev->caps.link_layer);
    EXPECT_EQ(0xfe80, be64toh(m_dev->caps.gid.global.subnet_prefix) >> 48);
    EXPECT_EQ(-1, m_dev->locality.numa_node);
    EXPECT_STREQ("", m_dev->locality.pci_bdf);
    EXPECT_TRUE(strand_dev_cpu_isset(&m_dev->locality, 0));
    EXPECT_GE(m_dev->async_fd, 0);
    EXPECT_NE(0u, m_dct.qpn); /* the DCT number, known in RTR */
    strand_dev_event_t ev;
    EXPECT_EQ(EAGAIN, m_ops->get_async_event(m_dev, &ev));
}

TEST_F(dev_sim, write_and_send_through_dci_to_dct)
{
    ASSERT_NO_FATAL_FAILURE(create_dci());
    for (int i = 0; i < 256; ++i) {
        *buf(i) = (uint8_t)(i + 1);
    }
    uint32_t bb = post(MLX5_OPCODE_RDMA_WRITE, 0, 256, 4096, m_mr.rkey);
    struct mlx5_cqe64 *cqe = next_cqe();
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
    EXPECT_EQ(bb & 0xffff, be16toh(cqe->wqe_counter));
    EXPECT_EQ(m_dci.qpn, be32toh(cqe->sop_drop_qpn) & 0xffffff);
    /* the provider's user index: the DCT, created first, took 0 (spec 9) */
    EXPECT_EQ(1u, be32toh(cqe->srqn_uidx) & 0xffffff);
    EXPECT_EQ(0, memcmp(buf(0), buf(4096), 256));

    post_srq(8192, 512);
    post(MLX5_OPCODE_SEND, 0, 100, 0, 0);
    int got_req = 0, got_resp = 0;
    for (int i = 0; i < 2; ++i) {
        cqe = next_cqe();
        ASSERT_NE(nullptr, cqe);
        if (strand_cqe_opcode(cqe) == MLX5_CQE_REQ) {
            ++got_req;
        } else {
            ASSERT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe));
            EXPECT_EQ(100u, be32toh(cqe->byte_cnt));
            EXPECT_EQ(m_dct.qpn, be32toh(cqe->sop_drop_qpn) & 0xffffff);
            EXPECT_EQ(0, be16toh(cqe->wqe_counter)); /* SRQ WQE 0 */
            ++got_resp;
        }
    }
    EXPECT_EQ(1, got_req);
    EXPECT_EQ(1, got_resp);
    EXPECT_EQ(0, memcmp(buf(0), buf(8192), 100));
}

TEST_F(dev_sim, dci_error_then_reset_dci_recovers)
{
    ASSERT_NO_FATAL_FAILURE(create_dci());
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey ^ 0x4400);
    struct mlx5_cqe64 *cqe = next_cqe();
    ASSERT_NE(nullptr, cqe);
    ASSERT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
    EXPECT_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, strand_cqe_syndrome(cqe));
    enum ibv_qp_state st;
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &m_dci, &st));
    EXPECT_EQ(IBV_QPS_ERR, st);

    ASSERT_EQ(0, strand_dev_reset_dci(m_dev, &m_dci, &m_attr));
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &m_dci, &st));
    EXPECT_EQ(IBV_QPS_RTS, st);
    m_pi    = 0; /* the queue starts over after a reset */
    *buf(0) = 0x42;
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey);
    cqe = next_cqe();
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
    EXPECT_EQ(0x42, *buf(4096));
}

TEST_F(dev_sim, stream_error_keeps_dci_in_rts_and_stream_resets)
{
    ASSERT_NO_FATAL_FAILURE(create_dci(2, 1));
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey ^ 0x4400, 3);
    struct mlx5_cqe64 *cqe = next_cqe();
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
    enum ibv_qp_state st;
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &m_dci, &st));
    EXPECT_EQ(IBV_QPS_RTS, st);
    EXPECT_EQ(0, m_ops->dci_stream_id_reset(m_dev, &m_dci, 3));
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey, 3);
    cqe = next_cqe();
    ASSERT_NE(nullptr, cqe);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
}

/* Spec 9: the user index of a QP is the provider's, the first free slot
 * of one table per context (the DCT took 0): a send CQE carries it, and a
 * slot freed by a destroyed QP is taken by the next one. */
TEST_F(dev_sim, user_index_is_the_first_free_slot)
{
    ASSERT_NO_FATAL_FAILURE(create_dci());
    strand_dev_qp_t first = m_dci, second;
    ASSERT_EQ(0, strand_dev_create_dci(m_dev, &m_attr, &second));
    auto uidx_of_a_write = [&](const strand_dev_qp_t &qp) {
        m_dci = qp;
        m_pi  = 0;
        post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey);
        struct mlx5_cqe64 *cqe = next_cqe();
        EXPECT_NE(nullptr, cqe);
        return (cqe == nullptr) ? ~0u : strand_cqe_user_index(cqe);
    };
    EXPECT_EQ(1u, uidx_of_a_write(first));
    EXPECT_EQ(2u, uidx_of_a_write(second));
    ASSERT_EQ(0, m_ops->destroy_qp(m_dev, &first));
    strand_dev_qp_t third;
    ASSERT_EQ(0, strand_dev_create_dci(m_dev, &m_attr, &third));
    EXPECT_EQ(1u, uidx_of_a_write(third)) << "the freed slot is reused";
    ASSERT_EQ(0, m_ops->destroy_qp(m_dev, &second));
    m_dci = third; /* TearDown destroys it */
}

/* The data path arms the CQ itself (spec section 9): doorbell record and
 * UAR word with its own consumer index, then the device's kick. */
TEST_F(dev_sim, cq_armed_by_the_data_path_fires_its_channel)
{
    ASSERT_NO_FATAL_FAILURE(create_dci());
    strand_cq_arm(m_cq.dv.dbrec, m_cq.dv.cq_uar, m_cq.dv.cqn, 0, m_ci, 0);
    ASSERT_NE(nullptr, m_cq.arm_kick);
    m_cq.arm_kick(m_cq.arm_kick_arg);
    struct pollfd pfd = {m_ch.fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0)); /* nothing happened yet */
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 4096, m_mr.rkey);
    ASSERT_EQ(1, poll(&pfd, 1, 2000));
    strand_dev_cq_t *cq = nullptr;
    EXPECT_EQ(0, m_ops->get_cq_event(m_dev, &m_ch, &cq));
    EXPECT_EQ(&m_cq, cq);
    EXPECT_EQ(EAGAIN, m_ops->get_cq_event(m_dev, &m_ch, &cq));
    EXPECT_NE(nullptr, next_cqe());
}

/* Hardware discovery lists what the machine has: nothing is assumed. */
TEST(dev_hw, discovery_lists_hardware_before_the_software_device)
{
    strand_dev_info_t infos[16];
    int num_hw = strand_dev_list(1u << STRAND_DEV_KIND_HW, infos, 16);
    ASSERT_GE(num_hw, 0);
    int n = strand_dev_list((1u << STRAND_DEV_KIND_HW) |
                                    (1u << STRAND_DEV_KIND_SIM),
                            infos, 16);
    ASSERT_EQ(num_hw + 1, n);
    for (int i = 0; i < num_hw; ++i) {
        EXPECT_EQ(STRAND_DEV_KIND_HW, infos[i].kind) << infos[i].name;
    }
    EXPECT_STREQ("smlx5_0", infos[num_hw].name);
    EXPECT_EQ(STRAND_DEV_KIND_SIM, infos[num_hw].kind);
}

/* Every mlx5 device of the machine opens and reports queried
 * capabilities: a port, a GID, an MTU, the inline size a DCI gets. */
TEST(dev_hw, every_device_reports_queried_capabilities)
{
    strand_dev_info_t infos[16];
    int num_hw = strand_dev_list(1u << STRAND_DEV_KIND_HW, infos, 16);
    if (num_hw == 0) {
        GTEST_SKIP() << "no mlx5 device on this machine";
    }
    for (int i = 0; i < num_hw; ++i) {
        strand_dev_t *dev = nullptr;
        int           err = strand_dev_open(&infos[i], &dev);
        if (err == ENETDOWN) {
            continue; /* port not active: nothing to check */
        }
        ASSERT_EQ(0, err) << infos[i].name << ": " << strerror(err);
        EXPECT_EQ(1, dev->caps.port_num);
        EXPECT_GE(dev->caps.mtu, 256u);
        EXPECT_GT(dev->caps.max_inline, 0u);
        if (dev->caps.link_layer == IBV_LINK_LAYER_ETHERNET) {
            EXPECT_EQ(0, dev->caps.lid);
        } else {
            EXPECT_NE(0, dev->caps.lid);
        }
        union ibv_gid zero;
        memset(&zero, 0, sizeof(zero));
        EXPECT_NE(0, memcmp(&zero, &dev->caps.gid, sizeof(zero)));
        dev->ops->close(dev);
    }
}

TEST(dev_hw, opening_an_absent_device_is_enodev)
{
    strand_dev_info_t info;
    memset(&info, 0, sizeof(info));
    strcpy(info.name, "mlx5_nosuch");
    info.kind         = STRAND_DEV_KIND_HW;
    strand_dev_t *dev = nullptr;
    EXPECT_EQ(ENODEV, strand_dev_open(&info, &dev));
    EXPECT_EQ(nullptr, dev);
    strcpy(info.name, "nosuch");
    info.kind = STRAND_DEV_KIND_SIM;
    EXPECT_EQ(ENODEV, strand_dev_open(&info, &dev));
}

/* The backend's QP is made in RESET and moves one state at a time, as
 * ibv_modify_qp: the device refuses a step out of order, and the states
 * the device layer takes it through (dev_qp.c) end in RTS with a view to
 * post on. */
TEST_F(dev_sim, a_qp_is_made_in_reset_and_moves_through_its_states_in_order)
{
    strand_dev_qp_init_t init;
    strand_dev_qp_t      qp;
    struct ibv_qp_attr   a;
    enum ibv_qp_state    state;

    memset(&init, 0, sizeof(init));
    init.type         = STRAND_DEV_QPT_DCI;
    init.send_cq      = &m_cq;
    init.recv_cq      = &m_cq;
    init.max_send_wr  = 16;
    init.max_send_sge = 1;
    init.max_inline   = 64;
    memset(&qp, 0, sizeof(qp));
    ASSERT_EQ(0, m_ops->create_qp(m_dev, &init, &qp));
    EXPECT_EQ(STRAND_DEV_QPT_DCI, qp.type);
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &qp, &state));
    EXPECT_EQ(IBV_QPS_RESET, state);

    /* RESET -> RTS skips two states: refused, the QP stays in RESET */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    EXPECT_NE(0, m_ops->modify_qp(m_dev, &qp, &a, IBV_QP_STATE));
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &qp, &state));
    EXPECT_EQ(IBV_QPS_RESET, state);

    ASSERT_EQ(0, strand_dev_qp_to_init(m_dev, &qp, 0));
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &qp, &state));
    EXPECT_EQ(IBV_QPS_INIT, state);
    /* the device layer's reset goes through RESET and back up to RTS */
    strand_dev_sq_attr_t attr = {nullptr, &m_cq, 16, 1, 64, 0, 0, 14, 7, 7, 1};
    ASSERT_EQ(0, strand_dev_reset_dci(m_dev, &qp, &attr));
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &qp, &state));
    EXPECT_EQ(IBV_QPS_RTS, state);
    EXPECT_NE(nullptr, qp.dv.sq.buf);
    EXPECT_EQ(0, strand_dev_qp_to_err(m_dev, &qp));
    ASSERT_EQ(0, m_ops->qp_state(m_dev, &qp, &state));
    EXPECT_EQ(IBV_QPS_ERR, state);
    EXPECT_EQ(0, m_ops->destroy_qp(m_dev, &qp));
}
