/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices the software NIC can look like (spec section 9: "capabilities
 * come from the device, never constants"; "link layer"):
 * - STRAND_SIM_CAPS: reported by smlx5_query_device and enforced;
 * - STRAND_SIM_LINK_LAYER: InfiniBand or Ethernet (RoCE) port, GID tables
 *   that carry the fabric's identity, address vectors built as rdma-core's
 *   mlx5_create_ah + mlx5dv_init_obj(AH) build them (providers/mlx5/
 *   verbs.c), and the RoCE rules of the kernel's mlx5_set_path (GRH
 *   required).
 */
#include "sim_dv_util.h"

extern "C" {
#include "mlx5/doorbell.h"
}

#include <functional>

namespace {

std::string fresh_fabric()
{
    static std::atomic<int> counter{0};
    return "strand_pers_" + std::to_string(getpid()) + "_" +
           std::to_string(counter++);
}

/* smlx5_open_device under `env` (name=value pairs); the errno of a failed
 * open and what it said on stderr. */
struct open_result {
    smlx5_context_t *ctx;
    int              err;
    std::string      err_text;
};

open_result
open_with(std::initializer_list<std::pair<const char *, const char *>> env)
{
    std::vector<std::unique_ptr<scoped_env>> set;
    set.emplace_back(
            new scoped_env("STRAND_SIM_FABRIC", fresh_fabric().c_str()));
    for (auto &kv : env) {
        set.emplace_back(new scoped_env(kv.first, kv.second));
    }
    testing::internal::CaptureStderr();
    errno = 0;
    open_result r;
    r.ctx      = smlx5_open_device(SMLX5_DEV_NAME);
    r.err      = errno;
    r.err_text = testing::internal::GetCapturedStderr();
    return r;
}

} // namespace

/* ----------------------------------------------------- STRAND_SIM_CAPS */

TEST(sim_caps, bad_keys_and_values_fail_the_open_with_einval)
{
    struct {
        const char *caps, *says;
    } bad[] = {
            {"colour=blue", "colour"},
            {"max_sge=31", "1..30"},
            {"max_sge=0", "max_sge"},
            {"max_inline=829", "0..828"},
            {"masked_atomics=2", "0..1"},
            {"dci_log_concurent=5", "0..4"},
            {"dci_log_errored=4", "0..3"},
            {"dci_log_concurent=1,dci_log_errored=2", "dci_log_errored"},
            {"max_sge=", "max_sge"},
            {"max_sge=2x", "max_sge"},
            {"scatter_dct", "scatter_dct"},
    };
    for (auto &b : bad) {
        open_result r = open_with({{"STRAND_SIM_CAPS", b.caps}});
        EXPECT_EQ(nullptr, r.ctx) << b.caps;
        EXPECT_EQ(EINVAL, r.err) << b.caps;
        EXPECT_NE(std::string::npos, r.err_text.find(b.says))
                << b.caps << ": " << r.err_text;
        EXPECT_EQ(1, std::count(r.err_text.begin(), r.err_text.end(), '\n'))
                << "one line: " << r.err_text;
        if (r.ctx != nullptr) {
            smlx5_close_device(r.ctx);
        }
    }
}

TEST(sim_caps, bad_link_layer_fails_the_open_with_einval)
{
    open_result r = open_with({{"STRAND_SIM_LINK_LAYER", "token-ring"}});
    EXPECT_EQ(nullptr, r.ctx);
    EXPECT_EQ(EINVAL, r.err);
    EXPECT_NE(std::string::npos, r.err_text.find("STRAND_SIM_LINK_LAYER"));
    if (r.ctx != nullptr) {
        smlx5_close_device(r.ctx);
    }
    for (const char *ok : {"ib", "infiniband", "ethernet", "eth", "roce"}) {
        r = open_with({{"STRAND_SIM_LINK_LAYER", ok}});
        ASSERT_NE(nullptr, r.ctx) << ok;
        struct ibv_port_attr pa;
        ASSERT_EQ(0, smlx5_query_port(r.ctx, SMLX5_PORT_NUM, &pa));
        EXPECT_EQ((ok[0] == 'i') ? IBV_LINK_LAYER_INFINIBAND :
                                   IBV_LINK_LAYER_ETHERNET,
                  pa.link_layer)
                << ok;
        smlx5_close_device(r.ctx);
    }
}

/* Signature offload without signature pipelining (a kernel or firmware
 * that allows no SQD->RTS): the capability is not reported, and an RC QP
 * asking for SIG_PIPELINING is EINVAL, as with no signature offload. */
TEST(sim_caps, signature_without_pipelining)
{
    open_result r = open_with({{"STRAND_SIM_CAPS", "sig_pipelining=0"}});
    ASSERT_NE(nullptr, r.ctx) << r.err_text;
    smlx5_device_caps_t caps;
    ASSERT_EQ(0, smlx5_query_device(r.ctx, &caps));
    EXPECT_FALSE(caps.flags & SMLX5_CAP_SIG_PIPELINING);
    EXPECT_NE(0u, caps.sig_caps.block_prot);
    smlx5_pd_t *pd = smlx5_alloc_pd(r.ctx);
    smlx5_cq_t *cq = smlx5_create_cq(r.ctx, 16, nullptr);
    ASSERT_NE(nullptr, pd);
    ASSERT_NE(nullptr, cq);
    smlx5_qp_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.type             = SMLX5_QPT_RC;
    attr.send_cq          = cq;
    attr.recv_cq          = cq;
    attr.cap.max_send_wr  = 8;
    attr.cap.max_recv_wr  = 8;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.create_flags     = MLX5DV_QP_CREATE_SIG_PIPELINING;
    errno                 = 0;
    EXPECT_EQ(nullptr, smlx5_create_qp(pd, &attr));
    EXPECT_EQ(EINVAL, errno);
    attr.create_flags = 0;
    smlx5_qp_t *qp    = smlx5_create_qp(pd, &attr);
    EXPECT_NE(nullptr, qp) << "without the flag it is an RC QP as any";
    if (qp != nullptr) {
        smlx5_destroy_qp(qp);
    }
    smlx5_destroy_cq(cq);
    smlx5_dealloc_pd(pd);
    smlx5_close_device(r.ctx);
}

/* A device with a smaller profile: every cap reported and enforced. */
class sim_caps_profile : public sim_fixture {
protected:
    sim_caps_profile()
    {
        m_cap.max_send_sge    = 2;
        m_cap.max_recv_sge    = 2;
        m_cap.max_inline_data = 64;
    }

    void SetUp() override
    {
        setenv("STRAND_SIM_CAPS",
               "masked_atomics=0,atomic_mode8b=1,"
               "max_inline=64,max_sge=2,dci_log_concurent=2,"
               "dci_log_errored=1,scatter_dct=0",
               1);
        sim_fixture::SetUp();
    }

    void TearDown() override
    {
        sim_fixture::TearDown();
        unsetenv("STRAND_SIM_CAPS");
    }

    smlx5_qp_t *try_create(smlx5_qp_type_t type, struct ibv_qp_cap cap,
                           uint8_t log_conc = 0, uint8_t log_err = 0)
    {
        smlx5_qp_init_attr_t a;
        memset(&a, 0, sizeof(a));
        a.type              = type;
        a.send_cq           = m_scq[REQ];
        a.recv_cq           = m_rcq[REQ];
        a.cap               = cap;
        a.log_num_concurent = log_conc;
        a.log_num_errored   = log_err;
        errno               = 0;
        smlx5_qp_t *qp      = smlx5_create_qp(m_pd, &a);
        if (qp != nullptr) {
            m_extra_qps.push_back(qp);
        }
        return qp;
    }
};

TEST_F(sim_caps_profile, query_device_reports_the_profile)
{
    EXPECT_EQ(64u, m_caps.max_inline_data);
    EXPECT_EQ(2, m_caps.attr.max_sge);
    EXPECT_EQ(2, m_caps.attr.max_srq_sge);
    EXPECT_EQ(2, m_caps.dci_max_log_num_concurent);
    EXPECT_EQ(1, m_caps.dci_max_log_num_errored);
    EXPECT_FALSE(m_caps.flags & SMLX5_CAP_MASKED_ATOMICS);
    EXPECT_TRUE(m_caps.flags & SMLX5_CAP_ATOMICS);
    EXPECT_EQ(1, m_caps.atomic_mode8b);
    EXPECT_FALSE(m_caps.flags & SMLX5_CAP_SCATTER_TO_CQE_DCT);
    EXPECT_EQ(IBV_ATOMIC_HCA, m_caps.attr.atomic_cap);
}

TEST_F(sim_caps_profile, qp_creation_above_the_caps_is_einval)
{
    struct ibv_qp_cap cap = m_cap;
    cap.max_inline_data   = 65;
    EXPECT_EQ(nullptr, try_create(SMLX5_QPT_RC, cap));
    EXPECT_EQ(EINVAL, errno);
    cap              = m_cap;
    cap.max_send_sge = 3;
    EXPECT_EQ(nullptr, try_create(SMLX5_QPT_RC, cap));
    EXPECT_EQ(EINVAL, errno);
    cap              = m_cap;
    cap.max_recv_sge = 3;
    EXPECT_EQ(nullptr, try_create(SMLX5_QPT_RC, cap));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_NE(nullptr, try_create(SMLX5_QPT_RC, m_cap));

    cap              = m_cap;
    cap.max_recv_wr  = 0;
    cap.max_recv_sge = 0;
    EXPECT_EQ(nullptr, try_create(SMLX5_QPT_DCI, cap, 3, 0));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr, try_create(SMLX5_QPT_DCI, cap, 2, 2));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_NE(nullptr, try_create(SMLX5_QPT_DCI, cap, 2, 1));

    smlx5_srq_init_attr_t sa;
    memset(&sa, 0, sizeof(sa));
    sa.max_wr  = 4;
    sa.max_sge = 3;
    errno      = 0;
    EXPECT_EQ(nullptr, smlx5_create_srq(m_pd, &sa));
    EXPECT_EQ(EINVAL, errno);
}

/* A masked atomic WQE on a device without masked atomics: LOC_QP_OP_ERR. */
TEST_F(sim_caps_profile, masked_atomic_without_the_cap_is_loc_qp_op_err)
{
    struct mlx5dv_qp dv  = qp_dv(m_qp[REQ]);
    void            *sq  = dv.sq.buf;
    void            *end = strand_sq_end(sq, dv.sq.wqe_cnt);
    auto *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(sq, dv.sq.wqe_cnt, 0);
    void *seg  = strand_sq_next(ctrl, sizeof(*ctrl), sq, end);
    strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg, addr(RESP),
                         rkey(RESP));
    seg = strand_sq_next(seg, 16, sq, end);
    strand_set_masked_fa64_seg((struct mlx5_wqe_atomic_seg *)seg, 1, 0);
    seg = strand_sq_next(seg, 16, sq, end);
    strand_set_data_seg((struct mlx5_wqe_data_seg *)seg, addr(REQ), 8,
                        lkey(REQ));
    strand_set_ctrl_seg(ctrl, 0x09, 0, MLX5_OPCODE_ATOMIC_MASKED_FA,
                        smlx5_qp_num(m_qp[REQ]), 4, MLX5_WQE_CTRL_CQ_UPDATE, 0);
    strand_bf_ring_doorbell(dv.dbrec, smlx5_qp_bf(m_qp[REQ]), 1, ctrl);
    smlx5_qp_doorbell(m_qp[REQ]);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
    uint64_t untouched = 0;
    EXPECT_EQ(0, memcmp(buf(RESP), &untouched, 8));
}

/* atomic_mode8b=1: the fetched 64-bit value lands in host order. */
TEST_F(sim_caps_profile, fetched_atomic_value_in_host_order)
{
    uint64_t v = 0x0102030405060708ull;
    memcpy(buf(RESP), &v, 8);
    struct ibv_sge     s     = sge(REQ, 64, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 1, &s, 1);
    wr.wr.atomic.remote_addr = addr(RESP);
    wr.wr.atomic.rkey        = rkey(RESP);
    wr.wr.atomic.compare_add = 1;
    struct ibv_send_wr *bad;
    ASSERT_EQ(0, smlx5_post_send(m_qp[REQ], &wr, &bad));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    uint64_t fetched;
    memcpy(&fetched, buf(REQ, 64), 8);
    EXPECT_EQ(v, fetched);
    memcpy(&fetched, buf(RESP), 8);
    EXPECT_EQ(v + 1, fetched);
}

/* ------------------------------------------------ fabric identity: IB */

static union ibv_gid gid_on(const std::string &fabric, smlx5_context_t **keep,
                            uint16_t *lid = nullptr)
{
    scoped_env    env("STRAND_SIM_FABRIC", fabric.c_str());
    union ibv_gid gid;
    memset(&gid, 0, sizeof(gid));
    smlx5_context_t *ctx = smlx5_open_device(SMLX5_DEV_NAME);
    EXPECT_NE(nullptr, ctx);
    if (ctx == nullptr) {
        return gid;
    }
    EXPECT_EQ(0, smlx5_query_gid(ctx, SMLX5_PORT_NUM, 0, &gid));
    struct ibv_port_attr pa;
    EXPECT_EQ(0, smlx5_query_port(ctx, SMLX5_PORT_NUM, &pa));
    if (lid != nullptr) {
        *lid = pa.lid;
    }
    *keep = ctx;
    return gid;
}

/* InfiniBand: one GID of type IB; subnet prefix fe80::/16 with 48 bits of
 * the fabric's identity, interface id encoding the LID. The identity is
 * the segment's (random when it is made): every port of one fabric has
 * it, two fabrics differ, and a fabric made again under the same name
 * (another host's, another container's) is another subnet. */
TEST(sim_ib_port, gid_carries_the_fabric_and_the_lid)
{
    std::string      fa = fresh_fabric(), fb = fresh_fabric();
    smlx5_context_t *ctx = nullptr, *peer = nullptr;
    uint16_t         lid = 0, peer_lid = 0;
    union ibv_gid    a = gid_on(fa, &ctx, &lid);
    ASSERT_NE(nullptr, ctx);
    struct ibv_port_attr pa;
    ASSERT_EQ(0, smlx5_query_port(ctx, SMLX5_PORT_NUM, &pa));
    EXPECT_EQ(IBV_LINK_LAYER_INFINIBAND, pa.link_layer);
    EXPECT_EQ(1, pa.gid_tbl_len);
    EXPECT_EQ(0xfe80u, be64toh(a.global.subnet_prefix) >> 48);
    EXPECT_NE(0u, be64toh(a.global.subnet_prefix) & 0x0000ffffffffffffull);
    EXPECT_EQ(lid, be64toh(a.global.interface_id) & 0xffff);
    struct ibv_gid_entry e;
    ASSERT_EQ(0, smlx5_query_gid_ex(ctx, SMLX5_PORT_NUM, 0, &e));
    EXPECT_EQ((uint32_t)IBV_GID_TYPE_IB, e.gid_type);
    EXPECT_EQ(0, memcmp(e.gid.raw, a.raw, 16));
    EXPECT_EQ(EINVAL, smlx5_query_gid_ex(ctx, SMLX5_PORT_NUM, 1, &e));
    EXPECT_EQ(EINVAL, smlx5_query_gid_ex(ctx, 2, 0, &e));
    union ibv_gid g;
    EXPECT_EQ(EINVAL, smlx5_query_gid(ctx, SMLX5_PORT_NUM, 1, &g));
    EXPECT_EQ(EINVAL, smlx5_query_gid(ctx, SMLX5_PORT_NUM, -1, &g));

    /* opened again on the same fabric: the same subnet */
    union ibv_gid a2 = gid_on(fa, &peer, &peer_lid);
    ASSERT_NE(nullptr, peer);
    EXPECT_EQ(a.global.subnet_prefix, a2.global.subnet_prefix);
    smlx5_close_device(peer);
    smlx5_close_device(ctx); /* the last one: the segment goes */

    union ibv_gid b = gid_on(fb, &ctx);
    ASSERT_NE(nullptr, ctx);
    EXPECT_NE(a.global.subnet_prefix, b.global.subnet_prefix)
            << "two fabrics, one subnet prefix";
    smlx5_close_device(ctx);

    /* the name again, a new segment: a new subnet */
    union ibv_gid again = gid_on(fa, &ctx);
    ASSERT_NE(nullptr, ctx);
    EXPECT_NE(a.global.subnet_prefix, again.global.subnet_prefix)
            << "a fabric made again under its name took the old one's subnet";
    smlx5_close_device(ctx);
}

/* mlx5_create_ah on InfiniBand: rlid, fl_mlid, SL and rate; GRH bit 30
 * when global; never the extended-AV bit or a DCT number. */
class sim_ib_av : public sim_fixture {};

TEST_F(sim_ib_av, av_follows_mlx5_create_ah)
{
    struct ibv_ah_attr ah;
    memset(&ah, 0, sizeof(ah));
    ah.port_num      = SMLX5_PORT_NUM;
    ah.dlid          = 0x1234;
    ah.sl            = 0xb;
    ah.src_path_bits = 0xff;
    ah.static_rate   = IBV_RATE_40_GBPS;
    struct mlx5_wqe_av av;
    memset(&av, 0xee, sizeof(av));
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
    EXPECT_EQ(0x1234, be16toh(av.rlid));
    EXPECT_EQ(0x7f, av.fl_mlid);
    EXPECT_EQ((12 << 4) | 0xb, av.stat_rate_sl);
    EXPECT_EQ(0u, be32toh(av.dqp_dct));
    EXPECT_EQ(0u, av.grh_gid_fl);

    ah.is_global         = 1;
    ah.grh.dgid          = m_gid;
    ah.grh.sgid_index    = 0;
    ah.grh.flow_label    = 0xabcde;
    ah.grh.hop_limit     = 7;
    ah.grh.traffic_class = 0x20;
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
    EXPECT_EQ((1u << 30) | 0xabcde, be32toh(av.grh_gid_fl));
    EXPECT_EQ(7, av.hop_limit);
    EXPECT_EQ(0x20, av.tclass);
    EXPECT_EQ(0, memcmp(av.rgid, m_gid.raw, 16));
    EXPECT_EQ(0u, be32toh(av.dqp_dct));

    ah.grh.sgid_index = 1; /* the IB table has one entry */
    EXPECT_EQ(EINVAL, smlx5_create_av(m_pd, &ah, &av));
    ah.grh.sgid_index = 0;
    ah.port_num       = 2;
    EXPECT_EQ(EINVAL, smlx5_create_av(m_pd, &ah, &av));
}

/* ---------------------------------------------------- RoCE personality */

class sim_roce : public sim_fixture {
protected:
    void SetUp() override
    {
        setenv("STRAND_SIM_LINK_LAYER", "ethernet", 1);
        setenv("STRAND_SIM_TIMEOUT_NS", "2000000", 1);
        sim_fixture::SetUp();
        m_fabric = getenv("STRAND_SIM_FABRIC");
    }

    void TearDown() override
    {
        sim_fixture::TearDown();
        unsetenv("STRAND_SIM_LINK_LAYER");
        unsetenv("STRAND_SIM_TIMEOUT_NS");
    }

    struct ibv_gid_entry gid_entry(uint32_t index)
    {
        struct ibv_gid_entry e;
        memset(&e, 0, sizeof(e));
        EXPECT_EQ(0, smlx5_query_gid_ex(m_ctx, SMLX5_PORT_NUM, index, &e));
        return e;
    }

    /* The MAC behind an EUI-64 interface id (RFC 4291 appendix A). */
    static std::vector<uint8_t> mac_of(const union ibv_gid &gid)
    {
        const uint8_t *iid = gid.raw + 8;
        return {(uint8_t)(iid[0] ^ 2), iid[1], iid[2], iid[5], iid[6], iid[7]};
    }

    struct ibv_ah_attr global_ah(const union ibv_gid &dgid, uint8_t sgid)
    {
        struct ibv_ah_attr ah;
        memset(&ah, 0, sizeof(ah));
        ah.port_num       = SMLX5_PORT_NUM;
        ah.is_global      = 1;
        ah.grh.dgid       = dgid;
        ah.grh.sgid_index = sgid;
        ah.grh.hop_limit  = 64;
        return ah;
    }

    /* A DCI WRITE of 8 bytes to `dct` through the AV `av` (built by the
     * caller), WQE written by hand: ctrl, AV (48 bytes when extended,
     * else the 16-byte base AV), raddr, data. */
    void dci_write(smlx5_qp_t *dci, smlx5_qp_t *dct, struct mlx5_wqe_av av,
                   bool extended)
    {
        struct mlx5dv_qp dv  = qp_dv(dci);
        void            *sq  = dv.sq.buf;
        void            *end = strand_sq_end(sq, dv.sq.wqe_cnt);
        auto *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(sq, dv.sq.wqe_cnt,
                                                              m_dci_pi);
        void *seg  = strand_sq_next(ctrl, sizeof(*ctrl), sq, end);
        av.key.dc_key = htobe64(SMLX5_DC_KEY_DEFAULT);
        av.dqp_dct = htobe32((extended ? (uint32_t)MLX5_EXTENDED_UD_AV : 0u) |
                             smlx5_dct_num(dct));
        size_t av_size = extended ? sizeof(av) : STRAND_AV_BASE_SIZE;
        memcpy(seg, &av, av_size);
        seg = strand_sq_next(seg, av_size, sq, end);
        strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg, addr(RESP, 64),
                             rkey(RESP));
        seg = strand_sq_next(seg, 16, sq, end);
        strand_set_data_seg((struct mlx5_wqe_data_seg *)seg, addr(REQ, 64), 8,
                            lkey(REQ));
        unsigned ds = 1 + (unsigned)(av_size / 16) + 2;
        strand_set_ctrl_seg(ctrl, 0, m_dci_pi & 0xffff, MLX5_OPCODE_RDMA_WRITE,
                            smlx5_qp_num(dci), ds, MLX5_WQE_CTRL_CQ_UPDATE, 0);
        m_dci_pi += strand_ds_to_bbs(ds);
        strand_bf_ring_doorbell(dv.dbrec, smlx5_qp_bf(dci), m_dci_pi, ctrl);
        smlx5_qp_doorbell(dci);
    }

    smlx5_qp_t *dct_on_own_port()
    {
        smlx5_srq_t *srq = create_srq(8, 1);
        return (srq != nullptr) ? create_dct(srq, SMLX5_DC_KEY_DEFAULT) :
                                  nullptr;
    }

    std::string m_fabric;
    uint32_t    m_dci_pi = 0;

    /* A DCI WRITE whose AV (made by smlx5_create_av, then damaged) names no
     * port: the packet goes nowhere, the requester ends in RETRY_EXC_ERR and
     * nothing is written. */
    void
    expect_av_goes_nowhere(void (*damage)(struct mlx5_wqe_av &), bool extended)
    {
        smlx5_qp_t *dct = dct_on_own_port();
        smlx5_qp_t *dci = create_dci();
        ASSERT_NE(nullptr, dct);
        ASSERT_NE(nullptr, dci);
        struct ibv_ah_attr ah = global_ah(m_gid, 3);
        struct mlx5_wqe_av av;
        ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
        damage(av);
        dci_write(dci, dct, av, extended);
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
        EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
        EXPECT_EQ(0, *buf(RESP, 64));
    }
};

/* query_port and the 4-entry GID table: [0] fe80::iid v1, [1] v2, [2]
 * <ULA of the fabric>::iid v1, [3] v2; lid 0; iid = EUI-64 of the MAC. */
TEST_F(sim_roce, port_has_no_lid_and_a_four_entry_gid_table)
{
    struct ibv_port_attr pa;
    ASSERT_EQ(0, smlx5_query_port(m_ctx, SMLX5_PORT_NUM, &pa));
    EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
    EXPECT_EQ(0, pa.lid);
    ASSERT_EQ(4, pa.gid_tbl_len);
    const uint32_t       types[4] = {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2,
                                     IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2};
    struct ibv_gid_entry e[4];
    for (uint32_t i = 0; i < 4; ++i) {
        e[i] = gid_entry(i);
        EXPECT_EQ(types[i], e[i].gid_type) << i;
        EXPECT_EQ(i, e[i].gid_index);
        EXPECT_EQ(e[0].gid.global.interface_id, e[i].gid.global.interface_id);
        union ibv_gid g;
        ASSERT_EQ(0, smlx5_query_gid(m_ctx, SMLX5_PORT_NUM, i, &g));
        EXPECT_EQ(0, memcmp(g.raw, e[i].gid.raw, 16));
    }
    EXPECT_EQ(0xfe80000000000000ull, be64toh(e[0].gid.global.subnet_prefix));
    EXPECT_EQ(0xfe80000000000000ull, be64toh(e[1].gid.global.subnet_prefix));
    /* the ULA /64 of the fabric's identity (fd00::/8) */
    const uint64_t ula = be64toh(e[2].gid.global.subnet_prefix);
    EXPECT_EQ(0xfdu, ula >> 56);
    EXPECT_NE(0u, ula & 0x00ffffffffffffffull);
    EXPECT_EQ(ula, be64toh(e[3].gid.global.subnet_prefix));
    /* EUI-64: ff:fe in the middle, a locally administered unicast MAC */
    EXPECT_EQ(0xff, e[0].gid.raw[11]);
    EXPECT_EQ(0xfe, e[0].gid.raw[12]);
    std::vector<uint8_t> mac = mac_of(e[0].gid);
    EXPECT_EQ(0x02, mac[0] & 0x03);
    struct ibv_gid_entry x;
    EXPECT_EQ(EINVAL, smlx5_query_gid_ex(m_ctx, SMLX5_PORT_NUM, 4, &x));
}

/* mlx5_create_ah on Ethernet. */
TEST_F(sim_roce, av_needs_a_grh_and_resolves_the_mac)
{
    struct ibv_gid_entry v2 = gid_entry(3), v1 = gid_entry(2);
    struct mlx5_wqe_av   av;
    struct ibv_ah_attr   ah = global_ah(v2.gid, 3);
    ah.grh.flow_label       = 0x12345;
    ah.grh.traffic_class    = 0x48;
    ah.sl                   = 5;
    ah.static_rate          = IBV_RATE_100_GBPS;
    memset(&av, 0xee, sizeof(av));
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
    EXPECT_EQ(ibv_flow_label_to_udp_sport(0x12345), be16toh(av.rlid));
    EXPECT_EQ(mac_of(v2.gid), std::vector<uint8_t>(av.rmac, av.rmac + 6));
    EXPECT_EQ((15 << 4) | (5 << 1), av.stat_rate_sl);
    EXPECT_EQ((3u << 20) | 0x12345, be32toh(av.grh_gid_fl)); /* no bit 30 */
    EXPECT_EQ(0x48, av.tclass);
    EXPECT_EQ(64, av.hop_limit);
    EXPECT_EQ(0, memcmp(av.rgid, v2.gid.raw, 16));
    EXPECT_EQ(0u, be32toh(av.dqp_dct));
    EXPECT_EQ(0, av.fl_mlid);

    ah.grh.flow_label = 0; /* v2 without a flow label: a random port */
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
    EXPECT_GE(be16toh(av.rlid), IB_ROCE_UDP_ENCAP_VALID_PORT_MIN);
    ah = global_ah(v1.gid, 2); /* RoCE v1: no UDP */
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));
    EXPECT_EQ(0, av.rlid);
    EXPECT_EQ(mac_of(v1.gid), std::vector<uint8_t>(av.rmac, av.rmac + 6));

    ah.is_global = 0;
    EXPECT_EQ(EINVAL, smlx5_create_av(m_pd, &ah, &av));
    ah = global_ah(v2.gid, 4);
    EXPECT_EQ(EINVAL, smlx5_create_av(m_pd, &ah, &av));
    ah          = global_ah(v2.gid, 3);
    ah.port_num = 2;
    EXPECT_EQ(EINVAL, smlx5_create_av(m_pd, &ah, &av));
    union ibv_gid nobody = v2.gid;
    nobody.raw[15] ^= 0x40; /* a LID no live port has */
    ah = global_ah(nobody, 3);
    EXPECT_EQ(EHOSTUNREACH, smlx5_create_av(m_pd, &ah, &av));
    union ibv_gid other_fabric = v2.gid;
    other_fabric.raw[7] ^= 1;
    ah = global_ah(other_fabric, 3);
    EXPECT_EQ(EHOSTUNREACH, smlx5_create_av(m_pd, &ah, &av));
}

/* mlx5_set_path on RoCE: an AV without GRH, a bad sgid index or a dgid
 * nobody owns is EINVAL; the fixture's RC pair (connected by GID) moves
 * data. */
TEST_F(sim_roce, modify_qp_needs_a_global_av_and_a_known_dgid)
{
    smlx5_qp_t *qp = create_rc_qp(m_scq[REQ], m_rcq[REQ]);
    ASSERT_NE(nullptr, qp);
    m_extra_qps.push_back(qp);
    ASSERT_NO_FATAL_FAILURE(rc_to_init(qp));
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = m_mtu;
    a.dest_qp_num        = smlx5_qp_num(m_qp[RESP]);
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer      = 1;
    const int mask       = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    a.ah_attr.port_num = SMLX5_PORT_NUM;
    a.ah_attr.dlid     = 1;
    EXPECT_EQ(EINVAL, smlx5_modify_qp(qp, &a, mask)); /* no GRH */
    a.ah_attr = global_ah(m_gid, 4);
    EXPECT_EQ(EINVAL, smlx5_modify_qp(qp, &a, mask)); /* bad sgid index */
    union ibv_gid nobody = m_gid;
    nobody.raw[15] ^= 0x40;
    a.ah_attr = global_ah(nobody, 3);
    EXPECT_EQ(EINVAL, smlx5_modify_qp(qp, &a, mask)); /* nobody owns it */
    struct ibv_qp_attr q;
    ASSERT_EQ(0, smlx5_query_qp(qp, &q, IBV_QP_STATE, nullptr));
    EXPECT_EQ(IBV_QPS_INIT, q.qp_state);

    memset(buf(REQ), 0x5a, 16);
    struct ibv_sge     s   = sge(REQ, 0, 16);
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, &s, 1);
    wr.wr.rdma.remote_addr = addr(RESP, 512);
    wr.wr.rdma.rkey        = rkey(RESP);
    struct ibv_send_wr *bad;
    ASSERT_EQ(0, smlx5_post_send(m_qp[REQ], &wr, &bad));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP, 512), 16));
}

TEST_F(sim_roce, dc_transitions_need_a_global_av)
{
    smlx5_srq_t *srq = create_srq(4, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.type       = SMLX5_QPT_DCT;
    attr.send_cq    = m_scq[RESP];
    attr.recv_cq    = m_rcq[RESP];
    attr.srq        = srq;
    smlx5_qp_t *dct = smlx5_create_qp(m_pd, &attr);
    ASSERT_NE(nullptr, dct);
    m_extra_qps.push_back(dct);
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = SMLX5_PORT_NUM;
    ASSERT_EQ(0, smlx5_modify_qp(dct, &a,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                         IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    memset(&a, 0, sizeof(a));
    a.qp_state         = IBV_QPS_RTR;
    a.path_mtu         = m_mtu;
    a.min_rnr_timer    = 1;
    a.ah_attr.port_num = SMLX5_PORT_NUM;
    const int dct_mask = IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                         IBV_QP_PATH_MTU;
    EXPECT_EQ(EINVAL, smlx5_modify_qp(dct, &a, dct_mask));
    a.ah_attr = global_ah(m_gid, 1);
    EXPECT_EQ(0, smlx5_modify_qp(dct, &a, dct_mask));

    struct ibv_qp_cap cap = m_cap;
    cap.max_recv_wr = cap.max_recv_sge = 0;
    attr.type                          = SMLX5_QPT_DCI;
    attr.srq                           = nullptr;
    attr.cap                           = cap;
    attr.send_cq                       = m_scq[REQ];
    smlx5_qp_t *dci                    = smlx5_create_qp(m_pd, &attr);
    ASSERT_NE(nullptr, dci);
    m_extra_qps.push_back(dci);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = SMLX5_PORT_NUM;
    ASSERT_EQ(0,
              smlx5_modify_qp(dci, &a,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT));
    memset(&a, 0, sizeof(a));
    a.qp_state         = IBV_QPS_RTR;
    a.path_mtu         = m_mtu;
    a.ah_attr.port_num = SMLX5_PORT_NUM;
    EXPECT_EQ(EINVAL,
              smlx5_modify_qp(dci, &a,
                              IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV));
    EXPECT_EQ(0, smlx5_modify_qp(dci, &a, IBV_QP_STATE | IBV_QP_PATH_MTU));
}

/* A DCI on RoCE goes where its extended AV says (rgid of a live port and
 * that port's MAC); a base AV, a wrong MAC or an unknown GID goes nowhere
 * and the requester ends in RETRY_EXC_ERR. */
TEST_F(sim_roce, dci_routes_by_rgid_and_rmac_of_the_extended_av)
{
    smlx5_qp_t *dct = dct_on_own_port();
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci);
    struct ibv_ah_attr ah = global_ah(m_gid, 3);
    struct mlx5_wqe_av av;
    ASSERT_EQ(0, smlx5_create_av(m_pd, &ah, &av));

    memset(buf(REQ, 64), 0x77, 8);
    dci_write(dci, dct, av, true);
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(buf(REQ, 64), buf(RESP, 64), 8));
}

TEST_F(sim_roce, dci_with_a_base_av_ends_in_retry_exc)
{
    expect_av_goes_nowhere([](struct mlx5_wqe_av &) {}, false);
}

TEST_F(sim_roce, dci_with_a_wrong_mac_ends_in_retry_exc)
{
    expect_av_goes_nowhere([](struct mlx5_wqe_av &av) { av.rmac[5] ^= 0x01; },
                           true);
}

TEST_F(sim_roce, dci_to_an_unknown_gid_ends_in_retry_exc)
{
    expect_av_goes_nowhere(
            [](struct mlx5_wqe_av &av) {
                av.rgid[7] ^= 1; /* another fabric's prefix */
            },
            true);
}
