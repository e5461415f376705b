/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Signature mkeys and signature pipelining on the software device.
 *
 * Seed page mlx5dv_qp_cancel_posted_send_wrs.3 (tests named seed_*, each
 * citing its sentence), and the man pages it points to:
 * mlx5dv_create_mkey(3), mlx5dv_wr_mkey_configure(3),
 * mlx5dv_wr_set_mkey_sig_block(3), mlx5dv_mkey_check(3). What the device
 * chose where they are silent: docs/software-device.md, "Signature mkeys".
 *
 * The bytes on the wire are checked against checksums computed here, bit
 * by bit, independently of the device's tables.
 */
#include "sim_fixture.h"
extern "C" {
#include "sim/sim_crc.h"
}

#include <algorithm>
#include <map>

namespace {

/* reference checksums, one bit at a time */
uint32_t ref_crc32c(const uint8_t *p, size_t n, uint32_t seed = 0xffffffffu)
{
    uint32_t c = seed;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int b = 0; b < 8; ++b) {
            c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
        }
    }
    return c ^ 0xffffffffu;
}

uint32_t ref_crc32(const uint8_t *p, size_t n, uint32_t seed = 0xffffffffu)
{
    uint32_t c = seed;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int b = 0; b < 8; ++b) {
            c = (c >> 1) ^ ((c & 1) ? 0xEDB88320u : 0);
        }
    }
    return c ^ 0xffffffffu;
}

uint16_t ref_crc16_t10(const uint8_t *p, size_t n, uint16_t seed = 0)
{
    uint16_t c = seed;
    for (size_t i = 0; i < n; ++i) {
        c ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; ++b) {
            c = (uint16_t)((c & 0x8000) ? (c << 1) ^ 0x8BB7 : c << 1);
        }
    }
    return c;
}

uint16_t ref_ip_csum(const uint8_t *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; ++i) {
        s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
    }
    while (s >> 16) {
        s = (s & 0xffff) + (s >> 16);
    }
    return (uint16_t)~s;
}

uint32_t rd_be32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return be32toh(v);
}

uint16_t rd_be16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return be16toh(v);
}

} // namespace

TEST(sim_sig_ref, checksums_have_their_published_check_values)
{
    const uint8_t s[] = "123456789";
    EXPECT_EQ(0xE3069283u, ref_crc32c(s, 9));
    EXPECT_EQ(0xCBF43926u, ref_crc32(s, 9));
    EXPECT_EQ(0xD0DB, ref_crc16_t10(s, 9));
}

/* The device's own checksums fed in pieces as packets bring them (any
 * split, any seed) equal the bitwise references: the device folds eight
 * bytes at a time (CRC32C 3 x 8 with its instruction, the T10 CRC16 64 and
 * 16 at a time with carry-less multiplication) and must not lose the
 * running value at a piece's end.
 * Both with the CPU's instructions and from the tables alone. */
class sim_sig_crc : public ::testing::TestWithParam<int> {
protected:
    void TearDown() override
    {
        sim_crc_use_instructions(1);
    }
};

TEST_P(sim_sig_crc, device_checksums_in_any_pieces_equal_the_references)
{
    sim_crc_use_instructions(GetParam());
    std::vector<uint8_t> b(20000);
    for (size_t i = 0; i < b.size(); ++i) {
        b[i] = (uint8_t)(i * 131 + (i >> 7));
    }
    const uint8_t s[] = "123456789";
    EXPECT_EQ(0xD0DB, sim_crc16_t10_update(0, s, 9));
    EXPECT_EQ(0xE3069283u,
              sim_crc32_final(sim_crc32c_update(0xffffffffu, s, 9)));
    EXPECT_EQ(0xCBF43926u,
              sim_crc32_final(sim_crc32_update(0xffffffffu, s, 9)));
    /* CRC32C takes runs of 3 x 168 and 3 x 2048 bytes three at a time,
     * the CRC16 runs of 64 and 16 from 64 bytes on: sizes below, at and
     * past those */
    for (size_t n : {0,   1,   7,    8,    9,    17,   63,   64,   65,   79,
                     80,  127, 128,  129,  143,  191,  192,  503,  504,  505,
                     512, 520, 4096, 4160, 6143, 6144, 6152, 6648, 20000}) {
        for (size_t cut : {(size_t)0, (size_t)1, n / 3, n / 2 + 3, n}) {
            cut = std::min(cut, n);
            for (uint16_t seed : {0, 0xffff, 0x1234}) {
                uint16_t c = sim_crc16_t10_update(seed, b.data(), cut);
                c          = sim_crc16_t10_update(c, b.data() + cut, n - cut);
                EXPECT_EQ(ref_crc16_t10(b.data(), n, seed), c)
                        << n << " bytes cut at " << cut;
            }
            uint32_t c32 = sim_crc32c_update(0xffffffffu, b.data(), cut);
            c32          = sim_crc32c_update(c32, b.data() + cut, n - cut);
            EXPECT_EQ(ref_crc32c(b.data(), n), sim_crc32_final(c32)) << n;
            c32 = sim_crc32_update(0xffffffffu, b.data(), cut);
            c32 = sim_crc32_update(c32, b.data() + cut, n - cut);
            EXPECT_EQ(ref_crc32(b.data(), n), sim_crc32_final(c32)) << n;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(insn, sim_sig_crc, ::testing::Values(1, 0),
                         [](const ::testing::TestParamInfo<int> &p) {
                             return p.param ? "instructions" : "tables";
                         });

class sim_sig : public sim_fixture {
protected:
    static const uint32_t BS = 512;

    /* a domain description that outlives the call */
    struct domain {
        struct mlx5dv_sig_block_domain d;
        struct mlx5dv_sig_crc          crc;
        struct mlx5dv_sig_t10dif       dif;
    };

    void SetUp() override
    {
        sim_fixture::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        /* a pipelining requester (REQ side CQs) and a plain responder */
        m_pq = create_rc_qp(m_scq[REQ], m_rcq[REQ], nullptr,
                            MLX5DV_QP_CREATE_SIG_PIPELINING);
        ASSERT_NE(nullptr, m_pq) << strerror(errno);
        m_pr = create_rc_qp(m_scq[RESP], m_rcq[RESP]);
        ASSERT_NE(nullptr, m_pr);
        m_extra_qps.push_back(m_pq);
        m_extra_qps.push_back(m_pr);
        ASSERT_NO_FATAL_FAILURE(connect_rc(m_pq, smlx5_qp_num(m_pr)));
        ASSERT_NO_FATAL_FAILURE(connect_rc(m_pr, smlx5_qp_num(m_pq)));
        for (size_t i = 0; i < BUF_SIZE; ++i) {
            buf(RESP)[i] = (uint8_t)(i * 7 + 3);
        }
    }

    void TearDown() override
    {
        for (smlx5_mkey_t *mk : m_mkeys) {
            smlx5_destroy_mkey(mk);
        }
        sim_fixture::TearDown();
    }

    static domain crc_domain(enum mlx5dv_sig_crc_type type,
                             enum mlx5dv_block_size bs = MLX5DV_BLOCK_SIZE_512,
                             uint64_t               seed = 0xffffffffu)
    {
        domain x;
        memset(&x, 0, sizeof(x));
        x.crc.type     = type;
        x.crc.seed     = seed;
        x.d.sig_type   = MLX5DV_SIG_TYPE_CRC;
        x.d.block_size = bs;
        return x;
    }

    static domain dif_domain(enum mlx5dv_sig_t10dif_bg_type bg, uint16_t app,
                             uint32_t ref, uint16_t flags,
                             enum mlx5dv_block_size bs = MLX5DV_BLOCK_SIZE_512)
    {
        domain x;
        memset(&x, 0, sizeof(x));
        x.dif.bg_type  = bg;
        x.dif.app_tag  = app;
        x.dif.ref_tag  = ref;
        x.dif.flags    = flags;
        x.d.sig_type   = MLX5DV_SIG_TYPE_T10DIF;
        x.d.block_size = bs;
        return x;
    }

    /* the pointers of a domain copy point into it */
    static const struct mlx5dv_sig_block_domain *bind(domain *x)
    {
        if (x == nullptr) {
            return nullptr;
        }
        if (x->d.sig_type == MLX5DV_SIG_TYPE_CRC) {
            x->d.sig.crc = &x->crc;
        } else {
            x->d.sig.dif = &x->dif;
        }
        return &x->d;
    }

    smlx5_mkey_t *new_mkey(uint16_t max_entries = 4)
    {
        smlx5_mkey_t *mk = smlx5_create_mkey(
                m_pd,
                MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                        MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE,
                max_entries);
        EXPECT_NE(nullptr, mk) << strerror(errno);
        if (mk != nullptr) {
            m_mkeys.push_back(mk);
        }
        return mk;
    }

    /* an mkey over [off, off + len) of `side`'s buffer with the given
     * memory and wire domains (nullptr: none) */
    smlx5_mkey_t *sig_mkey(int side, size_t off, uint32_t len, domain *mem,
                           domain *wire, uint8_t check_mask = 0xff)
    {
        smlx5_mkey_t                *mk = new_mkey();
        struct ibv_sge               s  = sge(side, off, len);
        struct mlx5dv_sig_block_attr sa;
        smlx5_mkey_conf_t            c;

        memset(&sa, 0, sizeof(sa));
        sa.mem        = bind(mem);
        sa.wire       = bind(wire);
        sa.check_mask = check_mask;
        memset(&c, 0, sizeof(c));
        c.set_access   = 1;
        c.access_flags = access_all();
        c.num_sges     = 1;
        c.sge          = &s;
        c.sig          = &sa;
        EXPECT_EQ(0, smlx5_mkey_configure(mk, &c));
        return mk;
    }

    /* the generating mkey of a sender (memory plain, wire CRC32C) and the
     * checking one of a receiver */
    smlx5_mkey_t *gen_crc32c(int side, size_t off, uint32_t len)
    {
        domain w = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
        return sig_mkey(side, off, len, nullptr, &w, MLX5DV_SIG_MASK_CRC32C);
    }

    static uint32_t wire_len(uint32_t len, uint32_t bs = BS, uint32_t sz = 4)
    {
        return len + ((len + bs - 1) / bs) * sz;
    }

    void post(smlx5_qp_t *qp, struct ibv_send_wr *wr)
    {
        struct ibv_send_wr *bad = nullptr;
        ASSERT_EQ(0, smlx5_post_send(qp, wr, &bad));
    }

    /* RDMA READ of `wlen` wire bytes from (raddr, rkey) into (laddr, lkey) */
    void post_read(smlx5_qp_t *qp, uint64_t wr_id, uint64_t laddr,
                   uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t wlen,
                   unsigned flags = IBV_SEND_SIGNALED)
    {
        struct ibv_sge     s   = {laddr, wlen, lkey};
        struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_READ, wr_id, &s, 1, flags);
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey        = rkey;
        post(qp, &wr);
    }

    /* a FIN: an inline SEND of 8 bytes (its wr_id), fenced */
    void post_fin(smlx5_qp_t *qp, uint64_t wr_id,
                  unsigned flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE)
    {
        uint64_t           v  = wr_id;
        struct ibv_sge     s  = {(uintptr_t)&v, sizeof(v), 0};
        struct ibv_send_wr wr = make_wr(IBV_WR_SEND, wr_id, &s, 1,
                                        flags | IBV_SEND_INLINE);
        post(qp, &wr);
    }

    void expect_wc(smlx5_cq_t *cq, uint64_t wr_id, enum ibv_wc_status st,
                   enum ibv_wc_opcode op)
    {
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(cq, &wc)) << "no completion for " << wr_id;
        EXPECT_EQ(wr_id, wc.wr_id);
        EXPECT_EQ(st, wc.status) << ibv_wc_status_str(wc.status);
        if (st == IBV_WC_SUCCESS) {
            EXPECT_EQ(op, wc.opcode);
        }
    }

    /* wait for the QP to reach `state` */
    bool
    wait_state(smlx5_qp_t *qp, enum ibv_qp_state state, int timeout_ms = 5000)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(timeout_ms);
        struct ibv_qp_attr      a;
        struct ibv_qp_init_attr ia;
        do {
            smlx5_progress(m_ctx);
            smlx5_query_qp(qp, &a, IBV_QP_STATE, &ia);
            if (a.qp_state == state) {
                return true;
            }
        } while (std::chrono::steady_clock::now() < deadline);
        return false;
    }

    /* the async events seen so far, by type */
    std::map<int, int> async_events()
    {
        std::map<int, int>  m;
        smlx5_async_event_t ev;
        while (smlx5_get_async_event(m_ctx, &ev) == 0) {
            m[ev.type]++;
        }
        return m;
    }

    bool wait_event(enum ibv_event_type type, int timeout_ms = 5000)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(timeout_ms);
        smlx5_async_event_t ev;
        do {
            smlx5_progress(m_ctx);
            while (smlx5_get_async_event(m_ctx, &ev) == 0) {
                if (ev.type == type) {
                    return true;
                }
            }
        } while (std::chrono::steady_clock::now() < deadline);
        return false;
    }

    void to_rts_from_sqd(smlx5_qp_t *qp)
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state     = IBV_QPS_RTS;
        a.cur_qp_state = IBV_QPS_SQD;
        ASSERT_EQ(0, smlx5_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE));
    }

    int sqd_index(smlx5_qp_t *qp)
    {
        uint32_t idx = 0;
        int      ret = smlx5_qp_query_sqd(qp, &idx);
        return (ret == 0) ? (int)idx : -ret;
    }

    struct mlx5dv_mkey_err mkey_err(smlx5_mkey_t *mk)
    {
        struct mlx5dv_mkey_err e;
        memset(&e, 0, sizeof(e));
        EXPECT_EQ(0, smlx5_mkey_check(mk, &e));
        return e;
    }

    smlx5_qp_t                 *m_pq = nullptr; /* SIG_PIPELINING requester */
    smlx5_qp_t                 *m_pr = nullptr; /* its responder */
    std::vector<smlx5_mkey_t *> m_mkeys;
};

/* ------------------------------------------------------------ objects */

TEST_F(sim_sig, caps_report_signature_offload)
{
    EXPECT_TRUE(m_caps.flags & SMLX5_CAP_SIG_PIPELINING);
    EXPECT_EQ((uint32_t)(MLX5DV_SIG_PROT_CAP_T10DIF | MLX5DV_SIG_PROT_CAP_CRC),
              m_caps.sig_caps.block_prot);
    EXPECT_TRUE(m_caps.sig_caps.crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC32C);
    EXPECT_FALSE(m_caps.sig_caps.crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC64_XP10);
    EXPECT_TRUE(m_caps.sig_caps.block_size & MLX5DV_BLOCK_SIZE_CAP_4096);
}

/* Spec section 9 (keys): mlx5dv_create_mkey leaves the key byte 0 (its
 * CREATE_MKEY sets no mkey_7_0), so a key of a destroyed mkey names the
 * next mkey made on its index; one made with a byte of its own (a DEVX
 * CREATE_MKEY as UCX's, smlx5_create_mkey_variant) does not. */
TEST_F(sim_sig, a_destroyed_mkeys_key_names_the_next_one_unless_the_byte_moves)
{
    const uint32_t flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
    smlx5_mkey_t  *a     = smlx5_create_mkey(m_pd, flags, 4);
    ASSERT_NE(nullptr, a);
    uint32_t key = smlx5_mkey_key(a);
    EXPECT_EQ(0u, key & 0xff) << "rdma-core's key byte";
    ASSERT_EQ(0, smlx5_destroy_mkey(a));
    smlx5_mkey_t *b = smlx5_create_mkey(m_pd, flags, 4);
    ASSERT_NE(nullptr, b);
    EXPECT_EQ(key, smlx5_mkey_key(b)) << "the index is taken again";
    ASSERT_EQ(0, smlx5_destroy_mkey(b));
    smlx5_mkey_t *c = smlx5_create_mkey_variant(m_pd, flags, 4, 0x5a);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(key >> 8, smlx5_mkey_key(c) >> 8);
    EXPECT_EQ(0x5au, smlx5_mkey_key(c) & 0xff);
    EXPECT_NE(key, smlx5_mkey_key(c)) << "the stale key names it";
    ASSERT_EQ(0, smlx5_destroy_mkey(c));
}

TEST_F(sim_sig, create_mkey_checks_its_flags)
{
    errno = 0;
    EXPECT_EQ(nullptr, smlx5_create_mkey(m_pd, 0, 4));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr,
              smlx5_create_mkey(m_pd,
                                MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                                        MLX5DV_MKEY_INIT_ATTR_FLAGS_CRYPTO,
                                4));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr,
              smlx5_create_mkey(m_pd, MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT, 0));
    smlx5_mkey_t *mk = new_mkey();
    ASSERT_NE(nullptr, mk);
    /* its key comes from the memory region table: neither an MR's key
     * nor the invalid lkey */
    EXPECT_NE(lkey(REQ), smlx5_mkey_key(mk));
    EXPECT_NE(0x100u, smlx5_mkey_key(mk));
}

TEST_F(sim_sig, configure_refuses_what_the_device_does_not_have)
{
    smlx5_mkey_t                *mk   = new_mkey(2);
    struct ibv_sge               s[3] = {sge(REQ, 0, 512), sge(REQ, 512, 512),
                                         sge(REQ, 1024, 512)};
    struct mlx5dv_sig_block_attr sa;
    smlx5_mkey_conf_t            c;
    domain                       w = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);

    memset(&c, 0, sizeof(c));
    c.num_sges = 3; /* more than max_entries */
    c.sge      = s;
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c));
    c.num_sges = 1;
    s[0].addr  = addr(REQ, BUF_SIZE - 100); /* past the region */
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c));
    s[0]      = sge(REQ, 0, 512);
    s[0].lkey = smlx5_mkey_key(mk); /* an mkey in its own layout */
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c));
    s[0] = sge(REQ, 0, 512);

    memset(&sa, 0, sizeof(sa));
    c.sig = &sa;
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c)) << "no domain at all";
    sa.wire    = bind(&w);
    w.crc.type = MLX5DV_SIG_CRC_TYPE_CRC64_XP10;
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c)) << "CRC64 not in caps";
    w.crc.type = MLX5DV_SIG_CRC_TYPE_CRC32C;
    w.crc.seed = 0x1234;
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c)) << "seed 0 or all ones";
    w.crc.seed = 0;
    sa.flags   = MLX5DV_SIG_BLOCK_ATTR_FLAG_COPY_MASK;
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c)) << "copy_mask";
    sa.flags = 0;
    domain m = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C, MLX5DV_BLOCK_SIZE_4096);
    sa.mem   = bind(&m);
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(mk, &c)) << "block sizes differ";
    sa.mem = nullptr;
    EXPECT_EQ(0, smlx5_mkey_configure(mk, &c));

    /* "MKEY must be created with MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE
     * flag" (mlx5dv_wr_set_mkey_sig_block(3)) */
    smlx5_mkey_t *plain =
            smlx5_create_mkey(m_pd, MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT, 2);
    ASSERT_NE(nullptr, plain);
    EXPECT_EQ(EINVAL, smlx5_mkey_configure(plain, &c));
    struct mlx5dv_mkey_err e;
    EXPECT_EQ(EINVAL, smlx5_mkey_check(plain, &e));
    smlx5_destroy_mkey(plain);
}

/* ------------------------------------------------- bytes on the wire */

/* "Memory signature domain is configured for no signature. Wire signature
 * domain is configured for T10DIF every 4K block. The MKEY is sent to a
 * remote node that issues a RDMA_READ to this MKEY. Result: device will
 * gather the data from the MKEY ..., transmit it to the wire while
 * generating an additional T10DIF field every 4K of data."
 * (mlx5dv_wr_set_mkey_sig_block(3), example 2; here CRC32C every 512 B).
 * A READ into a plain buffer shows the wire: each block, then its CRC. */
TEST_F(sim_sig, read_of_a_generating_mkey_carries_crc32c_per_block)
{
    const uint32_t len = 3 * BS + 100, wlen = wire_len(len);
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);

    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 0, smlx5_mkey_key(gen), wlen);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    const uint8_t *w = buf(REQ), *d = buf(RESP);
    for (uint32_t k = 0; k < 4; ++k) {
        uint32_t blen = (k < 3) ? BS : 100;
        ASSERT_EQ(0, memcmp(w, d, blen)) << "data of block " << k;
        EXPECT_EQ(ref_crc32c(d, blen), rd_be32(w + blen)) << "CRC of " << k;
        w += blen + 4;
        d += blen;
    }
}

TEST_F(sim_sig, read_of_a_t10dif_mkey_carries_guard_app_and_ref_tags)
{
    const uint32_t len = 4 * BS, wlen = wire_len(len, BS, 8);
    domain         w   = dif_domain(MLX5DV_SIG_T10DIF_CRC, 0xbeef, 1000,
                                    MLX5DV_SIG_T10DIF_FLAG_REF_REMAP);
    smlx5_mkey_t  *gen = sig_mkey(RESP, 0, len, nullptr, &w);

    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 0, smlx5_mkey_key(gen), wlen);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    for (uint32_t k = 0; k < 4; ++k) {
        const uint8_t *f = buf(REQ, k * (BS + 8) + BS);
        EXPECT_EQ(ref_crc16_t10(buf(RESP, k * BS), BS), rd_be16(f));
        EXPECT_EQ(0xbeef, rd_be16(f + 2));
        EXPECT_EQ(1000 + k, rd_be32(f + 4)) << "REF_REMAP: one more a block";
    }
}

TEST_F(sim_sig, ip_checksum_guard_and_crc32)
{
    domain        w1 = dif_domain(MLX5DV_SIG_T10DIF_CSUM, 7, 9, 0);
    domain        w2 = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32);
    smlx5_mkey_t *g1 = sig_mkey(RESP, 0, BS, nullptr, &w1);
    smlx5_mkey_t *g2 = sig_mkey(RESP, 0, BS, nullptr, &w2);

    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 0, smlx5_mkey_key(g1),
              BS + 8);
    post_read(m_qp[REQ], 2, addr(REQ, 4096), lkey(REQ), 0, smlx5_mkey_key(g2),
              BS + 4);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(ref_ip_csum(buf(RESP), BS), rd_be16(buf(REQ, BS)));
    EXPECT_EQ(9u, rd_be32(buf(REQ, BS + 4))) << "no REF_REMAP: fixed";
    EXPECT_EQ(ref_crc32(buf(RESP), BS), rd_be32(buf(REQ, 4096 + BS)));
}

/* "Example 2.1: ... remote node issues a RDMA_WRITE to this MKEY. Result:
 * Device will receive the data from the wire, validate each T10DIF field
 * against the previous 4K of data, strip the T10DIF field, and scatter the
 * data alone to the MKEY" -- and example 1.1 on the other side: a memory
 * domain with a signature gets it generated. */
TEST_F(sim_sig, write_from_generating_to_checking_mkey_strips_and_regenerates)
{
    const uint32_t len = 2 * BS, wlen = wire_len(len);
    domain         wg = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    domain         wc = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    domain         mc = dif_domain(MLX5DV_SIG_T10DIF_CRC, 1, 2, 0);
    for (uint32_t i = 0; i < len; ++i) {
        buf(REQ)[i] = (uint8_t)(i ^ 0x5a);
    }
    smlx5_mkey_t *src = sig_mkey(REQ, 0, len, nullptr, &wg);
    /* the receiver's memory: each block followed by its T10-DIF field */
    smlx5_mkey_t      *dst = sig_mkey(RESP, 8192, len + 2 * 8, &mc, &wc,
                                      MLX5DV_SIG_MASK_CRC32C);
    struct ibv_sge     s   = {0, wlen, smlx5_mkey_key(src)};
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_WRITE, 1, &s, 1);
    wr.wr.rdma.remote_addr = 0;
    wr.wr.rdma.rkey        = smlx5_mkey_key(dst);
    post(m_qp[REQ], &wr);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    for (uint32_t k = 0; k < 2; ++k) {
        const uint8_t *b = buf(RESP, 8192 + k * (BS + 8));
        ASSERT_EQ(0, memcmp(b, buf(REQ, k * BS), BS));
        EXPECT_EQ(ref_crc16_t10(b, BS), rd_be16(b + BS));
        EXPECT_EQ(1, rd_be16(b + BS + 2));
        EXPECT_EQ(2u, rd_be32(b + BS + 4));
    }
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(dst).err_type);
}

/* A READ from a generating mkey into a checking one delivers the data
 * alone, for every checksum and for whole and short last blocks. */
struct sig_case {
    const char            *name;
    int                    kind; /* 0 CRC32C, 1 CRC32, 2 T10-DIF CRC, 3 CSUM */
    enum mlx5dv_block_size bs;
    uint32_t               bs_bytes;
    uint32_t               len;
};

class sim_sig_roundtrip : public sim_sig,
                          public ::testing::WithParamInterface<sig_case> {};

TEST_P(sim_sig_roundtrip, read_delivers_the_data_and_finds_no_error)
{
    const sig_case &p = GetParam();
    domain          w;
    uint32_t        sz;
    switch (p.kind) {
    case 0:
        w  = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C, p.bs);
        sz = 4;
        break;
    case 1:
        w  = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32, p.bs, 0);
        sz = 4;
        break;
    case 2:
        w  = dif_domain(MLX5DV_SIG_T10DIF_CRC, 0, 0,
                        MLX5DV_SIG_T10DIF_FLAG_REF_REMAP, p.bs);
        sz = 8;
        break;
    default:
        w  = dif_domain(MLX5DV_SIG_T10DIF_CSUM, 3, 4, 0, p.bs);
        sz = 8;
    }
    domain        w2   = w;
    smlx5_mkey_t *gen  = sig_mkey(RESP, 0, p.len, nullptr, &w);
    smlx5_mkey_t *chk  = sig_mkey(REQ, 100, p.len, nullptr, &w2);
    uint32_t      wlen = wire_len(p.len, p.bs_bytes, sz);

    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wlen);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(0, memcmp(buf(REQ, 100), buf(RESP), p.len));
    EXPECT_EQ(0, *buf(REQ, 100 + p.len)) << "nothing past the data";
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk).err_type);
}

INSTANTIATE_TEST_SUITE_P(
        kinds, sim_sig_roundtrip,
        ::testing::Values(
                sig_case{"crc32c_512", 0, MLX5DV_BLOCK_SIZE_512, 512, 8 * 512},
                sig_case{"crc32c_short_last", 0, MLX5DV_BLOCK_SIZE_512, 512,
                         5000},
                sig_case{"crc32c_4096", 0, MLX5DV_BLOCK_SIZE_4096, 4096, 40000},
                sig_case{"crc32_520", 1, MLX5DV_BLOCK_SIZE_520, 520,
                         3 * 520 + 8},
                sig_case{"t10dif_crc_4160", 2, MLX5DV_BLOCK_SIZE_4160, 4160,
                         9000},
                sig_case{"t10dif_csum_4048", 3, MLX5DV_BLOCK_SIZE_4048, 4048,
                         4049}),
        [](const ::testing::TestParamInfo<sig_case> &i) {
            return std::string(i.param.name);
        });

/* ------------------------------------------------------------- errors */

/* "While the transfer operation itself may be completed successfully ...,
 * there still may be errors related to the integrity of the data. The
 * first of these errors is reported to the MKEY and kept there until
 * application software queries it" (mlx5dv_mkey_check(3)). */
TEST_F(sim_sig, a_bad_block_completes_the_read_and_is_reported_on_the_mkey)
{
    const uint32_t len = 6 * BS;
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t  *chk = gen_crc32c(REQ, 0, len);

    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 4, SMLX5_CORRUPT_WIRE));
    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(len));
    /* the SIG_ERR CQE is the provider's: polling returns the READ */
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));

    struct mlx5dv_mkey_err e = mkey_err(chk);
    ASSERT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, e.err_type);
    /* "offset: The offset within the transfer where the error happened.
     * In block signature, this is guaranteed to be a block boundary" */
    EXPECT_EQ(4u * BS, e.err.sig.offset);
    /* expected: what the field says (the sender's CRC of the good data);
     * actual: what the data that arrived gives */
    EXPECT_EQ(ref_crc32c(buf(RESP, 4 * BS), BS), e.err.sig.expected_value);
    EXPECT_EQ(ref_crc32c(buf(REQ, 4 * BS), BS), e.err.sig.actual_value);
    EXPECT_NE(e.err.sig.expected_value, e.err.sig.actual_value);
    /* the data was delivered, the damage with it */
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP), 4 * BS));
    EXPECT_NE(0, memcmp(buf(REQ, 4 * BS), buf(RESP, 4 * BS), BS));
    /* the query cleared it */
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk).err_type);
}

TEST_F(sim_sig, the_sigerr_cqe_names_the_mkey_for_a_data_path_that_polls_itself)
{
    const uint32_t   len = 2 * BS;
    smlx5_mkey_t    *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t    *chk = gen_crc32c(REQ, 0, len);
    struct mlx5dv_cq dv;

    ASSERT_EQ(0, smlx5_cq_dv(m_scq[REQ], &dv));
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 1, SMLX5_CORRUPT_WIRE));
    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(len));
    const struct mlx5_cqe64 *cqe = nullptr;
    for (int i = 0; (i < 100000) && (cqe == nullptr); ++i) {
        smlx5_progress(m_ctx);
        cqe = strand_cqe_get(dv.buf, dv.cqe_cnt, strand_cqe_shift(dv.cqe_size),
                             0);
    }
    ASSERT_NE(nullptr, cqe);
    ASSERT_EQ(MLX5_CQE_SIG_ERR, strand_cqe_opcode(cqe));
    const struct strand_sigerr_cqe *se =
            reinterpret_cast<const struct strand_sigerr_cqe *>(cqe);
    EXPECT_EQ(smlx5_mkey_key(chk), be32toh(se->mkey));
    EXPECT_EQ(STRAND_SIGERR_SYNDROME_GUARD, be16toh(se->syndrome));
    EXPECT_EQ(STRAND_SIGERR_DOMAIN_WIRE, se->domain);
    EXPECT_EQ(STRAND_SIGERR_TYPE_BLOCK, se->sig_type);
    EXPECT_EQ((uint64_t)BS, be64toh(se->sig_err_offset));
    /* then the READ's own completion */
    const struct mlx5_cqe64 *next = nullptr;
    for (int i = 0; (i < 100000) && (next == nullptr); ++i) {
        smlx5_progress(m_ctx);
        next = strand_cqe_get(dv.buf, dv.cqe_cnt, strand_cqe_shift(dv.cqe_size),
                              1);
    }
    ASSERT_NE(nullptr, next);
    EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(next));
    /* nobody polled through the provider: mkey_check knows nothing, as
     * with rdma-core when the application owns the CQ */
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk).err_type);
}

TEST_F(sim_sig, only_the_first_error_is_reported_until_the_mkey_is_configured)
{
    const uint32_t len = 4 * BS;
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t  *chk = gen_crc32c(REQ, 0, len);

    for (int round = 0; round < 2; ++round) {
        ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 1, SMLX5_CORRUPT_WIRE));
        post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
                  wire_len(len));
        expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
        ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 3, SMLX5_CORRUPT_WIRE));
        post_read(m_qp[REQ], 2, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
                  wire_len(len));
        expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
        struct mlx5dv_mkey_err e = mkey_err(chk);
        ASSERT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, e.err_type);
        EXPECT_EQ(1u * BS, e.err.sig.offset) << "round " << round;
        EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk).err_type)
                << "the second bad transfer was not reported";
        /* configuring it again re-arms the report */
        struct ibv_sge    s = sge(REQ, 0, len);
        smlx5_mkey_conf_t c;
        memset(&c, 0, sizeof(c));
        c.num_sges = 1;
        c.sge      = &s;
        ASSERT_EQ(0, smlx5_mkey_configure(chk, &c));
    }
}

/*
 * Spec section 9 (signature error re-arm), as a data path that parses its
 * CQ itself meets it: the provider never sees the SIG_ERR CQE, so a
 * configuration through it writes no new error count, and the mkey stays
 * silent: a second bad block through it passes as good, its damage
 * delivered. A new mkey reports again. On a plain QP and on a pipelining
 * one (which then does not stop either).
 */
class sim_sig_dv : public sim_sig {
protected:
    void SetUp() override
    {
        sim_sig::SetUp();
        ASSERT_EQ(0, smlx5_cq_dv(m_scq[REQ], &m_dv));
    }

    /* the opcode of the next CQE of the requester's CQ (0: none came) */
    uint8_t next_cqe(const struct mlx5_cqe64 **cqe_p = nullptr)
    {
        const struct mlx5_cqe64 *cqe = nullptr;
        for (int i = 0; (i < 200000) && (cqe == nullptr); ++i) {
            smlx5_progress(m_ctx);
            cqe = strand_cqe_get(m_dv.buf, m_dv.cqe_cnt,
                                 strand_cqe_shift(m_dv.cqe_size), m_ci);
        }
        if (cqe == nullptr) {
            return 0;
        }
        ++m_ci;
        strand_cq_update_ci(m_dv.dbrec, m_ci);
        if (cqe_p != nullptr) {
            *cqe_p = cqe;
        }
        return strand_cqe_opcode(cqe);
    }

    /* a READ of `len` bytes through chk from gen with block `bad` damaged
     * on the wire, and a fenced FIN (on a pipelining QP), the CQEs parsed
     * here; true when a SIG_ERR CQE named chk */
    bool damaged_read(smlx5_qp_t *qp, smlx5_mkey_t *gen, smlx5_mkey_t *chk,
                      uint32_t len, unsigned bad, uint64_t id)
    {
        bool                     sigerr = false;
        const struct mlx5_cqe64 *cqe;
        EXPECT_EQ(0, smlx5_mkey_corrupt_block(gen, bad, SMLX5_CORRUPT_WIRE));
        post_read(qp, id, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
                  wire_len(len));
        uint8_t op = next_cqe(&cqe);
        if (op == MLX5_CQE_SIG_ERR) {
            const auto *se = reinterpret_cast<const struct strand_sigerr_cqe *>(
                    cqe);
            EXPECT_EQ(smlx5_mkey_key(chk), be32toh(se->mkey));
            EXPECT_EQ((uint64_t)bad * BS, be64toh(se->sig_err_offset));
            sigerr = true;
            op     = next_cqe();
        }
        EXPECT_EQ(MLX5_CQE_REQ, op) << "the READ's completion";
        return sigerr;
    }

    void reconfigure(smlx5_mkey_t *chk, uint32_t len)
    {
        struct ibv_sge    s = sge(REQ, 0, len);
        smlx5_mkey_conf_t c;
        memset(&c, 0, sizeof(c));
        c.num_sges = 1;
        c.sge      = &s;
        ASSERT_EQ(0, smlx5_mkey_configure(chk, &c));
    }

    struct mlx5dv_cq m_dv;
    uint32_t         m_ci = 0;
};

TEST_F(sim_sig_dv, a_reported_mkey_stays_silent_until_replaced)
{
    const uint32_t len = 4 * BS;
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t  *chk = gen_crc32c(REQ, 0, len);

    EXPECT_TRUE(damaged_read(m_qp[REQ], gen, chk, len, 1, 1));
    ASSERT_NO_FATAL_FAILURE(reconfigure(chk, len));
    memset(buf(REQ), 0, len);
    EXPECT_FALSE(damaged_read(m_qp[REQ], gen, chk, len, 2, 2))
            << "a configuration without the error count re-armed the mkey";
    EXPECT_EQ(0, memcmp(buf(REQ, 3 * BS), buf(RESP, 3 * BS), BS));
    EXPECT_NE(0, memcmp(buf(REQ, 2 * BS), buf(RESP, 2 * BS), BS))
            << "the bad block landed as if good";
    /* nobody polled through the provider: it has nothing to tell */
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk).err_type);

    smlx5_mkey_t *fresh = gen_crc32c(REQ, 0, len);
    EXPECT_TRUE(damaged_read(m_qp[REQ], gen, fresh, len, 3, 3));
}

TEST_F(sim_sig_dv, a_pipelining_qp_stops_only_for_an_armed_mkey)
{
    const uint32_t len = 2 * BS;
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t  *chk = gen_crc32c(REQ, 0, len);
    for (int i = 0; i < 4; ++i) {
        post_recv_on(m_pr, RESP, 16384 + 64 * i, 64, 100 + i);
    }

    /* armed: the QP stops in SQD before the fenced FIN */
    post_fin(m_pq, 10); /* (before the READ: runs) */
    EXPECT_EQ(MLX5_CQE_REQ, next_cqe());
    EXPECT_TRUE(damaged_read(m_pq, gen, chk, len, 0, 1));
    post_fin(m_pq, 11);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    to_rts_from_sqd(m_pq);
    EXPECT_EQ(MLX5_CQE_REQ, next_cqe()) << "the FIN after the return to RTS";

    /* configured again without the count: silent, no stop */
    ASSERT_NO_FATAL_FAILURE(reconfigure(chk, len));
    EXPECT_FALSE(damaged_read(m_pq, gen, chk, len, 1, 2));
    post_fin(m_pq, 12);
    EXPECT_EQ(MLX5_CQE_REQ, next_cqe()) << "the FIN ran: nothing stopped it";
    EXPECT_FALSE(wait_state(m_pq, IBV_QPS_SQD, 50));

    /* a new mkey: reported, stopped */
    smlx5_mkey_t *fresh = gen_crc32c(REQ, 0, len);
    EXPECT_TRUE(damaged_read(m_pq, gen, fresh, len, 1, 3));
    post_fin(m_pq, 13);
    EXPECT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
}

TEST_F(sim_sig, t10dif_reports_the_first_bad_part_in_guard_app_ref_order)
{
    domain        wg  = dif_domain(MLX5DV_SIG_T10DIF_CRC, 0x1111, 50, 0);
    domain        wc  = dif_domain(MLX5DV_SIG_T10DIF_CRC, 0x2222, 60, 0);
    smlx5_mkey_t *gen = sig_mkey(RESP, 0, BS, nullptr, &wg);
    /* checks application and reference tags only */
    smlx5_mkey_t *chk = sig_mkey(REQ, 0, BS, nullptr, &wc,
                                 MLX5DV_SIG_MASK_T10DIF_APPTAG |
                                         MLX5DV_SIG_MASK_T10DIF_REFTAG);
    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              BS + 8);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    struct mlx5dv_mkey_err e = mkey_err(chk);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_APPTAG, e.err_type);
    EXPECT_EQ(0x1111u, e.err.sig.expected_value);
    EXPECT_EQ(0x2222u, e.err.sig.actual_value);

    /* reference tag only */
    smlx5_mkey_t *chk2 = sig_mkey(REQ, 0, BS, nullptr, &wc,
                                  MLX5DV_SIG_MASK_T10DIF_REFTAG);
    post_read(m_qp[REQ], 2, 0, smlx5_mkey_key(chk2), 0, smlx5_mkey_key(gen),
              BS + 8);
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    e = mkey_err(chk2);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_REFTAG, e.err_type);
    EXPECT_EQ(50u, e.err.sig.expected_value);
    EXPECT_EQ(60u, e.err.sig.actual_value);

    /* nothing checked: nothing found */
    smlx5_mkey_t *chk3 = sig_mkey(REQ, 0, BS, nullptr, &wc, 0);
    post_read(m_qp[REQ], 3, 0, smlx5_mkey_key(chk3), 0, smlx5_mkey_key(gen),
              BS + 8);
    expect_wc(m_scq[REQ], 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk3).err_type);
}

/* Memory corruption under a memory signature is found when the data
 * leaves; it is reported on the sender's side (its receive CQ). Without a
 * memory signature it travels signed and nobody can tell. */
TEST_F(sim_sig, memory_corruption_is_caught_by_a_memory_signature_only)
{
    domain mem = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    domain w2  = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    /* the sender's memory: 2 blocks, each with its CRC32C behind it */
    for (uint32_t k = 0; k < 2; ++k) {
        uint32_t v = htobe32(ref_crc32c(buf(RESP, k * (BS + 4)), BS));
        memcpy(buf(RESP, k * (BS + 4) + BS), &v, 4);
    }
    smlx5_mkey_t *gen = sig_mkey(RESP, 0, 2 * (BS + 4), &mem, nullptr,
                                 MLX5DV_SIG_MASK_CRC32C);
    /* memory CRC32C, no wire signature: the data alone travels */
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 1, SMLX5_CORRUPT_MEMORY));
    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 0, smlx5_mkey_key(gen),
              2 * BS);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    struct ibv_wc wc;
    EXPECT_FALSE(poll_one(m_rcq[RESP], &wc, 200)) << "SIG_ERR is no wc";
    struct mlx5dv_mkey_err e = mkey_err(gen);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, e.err_type);
    EXPECT_EQ(1u * BS, e.err.sig.offset);
    /* the strip: the data of both blocks, no CRCs between them */
    EXPECT_EQ(0, memcmp(buf(REQ), buf(RESP), BS));

    smlx5_mkey_t *plain = sig_mkey(RESP, 8192, 2 * BS, nullptr, &w2);
    smlx5_mkey_t *chk2  = gen_crc32c(REQ, 8192, 2 * BS);
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(plain, 1, SMLX5_CORRUPT_MEMORY));
    post_read(m_qp[REQ], 2, 0, smlx5_mkey_key(chk2), 0, smlx5_mkey_key(plain),
              wire_len(2 * BS));
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk2).err_type);
    EXPECT_NE(0, memcmp(buf(REQ, 8192 + BS), buf(RESP, 8192 + BS), BS));
}

/* -------------------------------------------- operations through mkeys */

TEST_F(sim_sig, transfers_cover_whole_blocks)
{
    const uint32_t len = 4 * BS;
    smlx5_mkey_t  *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t  *chk = gen_crc32c(REQ, 0, len);

    /* the second block and the third, whole: fine */
    post_read(m_qp[REQ], 1, BS + 4, smlx5_mkey_key(chk), BS + 4,
              smlx5_mkey_key(gen), 2 * (BS + 4));
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(0, memcmp(buf(REQ, BS), buf(RESP, BS), 2 * BS));
    /* a local start inside a block: the WQE is malformed */
    post_read(m_qp[REQ], 2, 10, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              BS + 4);
    expect_wc(m_scq[REQ], 2, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RDMA_READ);
}

TEST_F(sim_sig, a_remote_start_inside_a_block_is_an_invalid_request)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, 4 * BS);
    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 8, smlx5_mkey_key(gen),
              BS + 4);
    expect_wc(m_scq[REQ], 1, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RDMA_READ);
}

TEST_F(sim_sig, bounds_access_and_atomics_through_mkeys)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, 2 * BS);
    /* past the wire length */
    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), 0, smlx5_mkey_key(gen),
              wire_len(2 * BS) + 4);
    expect_wc(m_scq[REQ], 1, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_READ);

    /* an atomic's target is memory, not an mkey */
    smlx5_qp_t *pair[2];
    create_connected_pair(m_cap, 0, pair);
    struct ibv_sge     s     = sge(REQ, 0, 8);
    struct ibv_send_wr wr    = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 2, &s, 1);
    wr.wr.atomic.remote_addr = 0;
    wr.wr.atomic.rkey        = smlx5_mkey_key(gen);
    wr.wr.atomic.compare_add = 1;
    post(pair[0], &wr);
    expect_wc(m_scq[REQ], 2, IBV_WC_REM_ACCESS_ERR, IBV_WC_FETCH_ADD);
}

TEST_F(sim_sig, an_mkey_is_the_only_data_segment_of_its_wqe)
{
    smlx5_mkey_t  *gen  = gen_crc32c(RESP, 0, BS);
    smlx5_mkey_t  *chk  = gen_crc32c(REQ, 0, BS);
    struct ibv_sge s[2] = {{0, BS + 4, smlx5_mkey_key(chk)}, sge(REQ, 8192, 8)};
    struct ibv_send_wr wr  = make_wr(IBV_WR_RDMA_READ, 1, s, 2);
    wr.wr.rdma.remote_addr = 0;
    wr.wr.rdma.rkey        = smlx5_mkey_key(gen);
    post(m_qp[REQ], &wr);
    expect_wc(m_scq[REQ], 1, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RDMA_READ);
}

TEST_F(sim_sig, large_reads_through_mkeys_bypass_one_copy_and_stay_checked)
{
    const uint32_t       len = 48 * 1024; /* above the one-copy threshold */
    std::vector<uint8_t> src(len), dst(len + 4096);
    for (uint32_t i = 0; i < len; ++i) {
        src[i] = (uint8_t)(i * 13);
    }
    smlx5_mr_t *ms = smlx5_reg_mr(m_pd, src.data(), len, access_all());
    smlx5_mr_t *md = smlx5_reg_mr(m_pd, dst.data(), dst.size(), access_all());
    ASSERT_NE(nullptr, ms);
    ASSERT_NE(nullptr, md);
    domain         w1  = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    domain         w2  = crc_domain(MLX5DV_SIG_CRC_TYPE_CRC32C);
    smlx5_mkey_t  *gen = new_mkey(), *chk = new_mkey();
    struct ibv_sge s1 = {(uintptr_t)src.data(), len, smlx5_mr_lkey(ms)};
    struct ibv_sge s2 = {(uintptr_t)dst.data(), len, smlx5_mr_lkey(md)};
    struct mlx5dv_sig_block_attr a1, a2;
    memset(&a1, 0, sizeof(a1));
    memset(&a2, 0, sizeof(a2));
    a1.wire              = bind(&w1);
    a2.wire              = bind(&w2);
    a2.check_mask        = MLX5DV_SIG_MASK_CRC32C;
    smlx5_mkey_conf_t c1 = {0, 1, (uint32_t)access_all(), 1, &s1, &a1};
    smlx5_mkey_conf_t c2 = {0, 1, (uint32_t)access_all(), 1, &s2, &a2};
    ASSERT_EQ(0, smlx5_mkey_configure(gen, &c1));
    ASSERT_EQ(0, smlx5_mkey_configure(chk, &c2));
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 77, SMLX5_CORRUPT_WIRE));
    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(len));
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    struct mlx5dv_mkey_err e = mkey_err(chk);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, e.err_type);
    EXPECT_EQ(77u * BS, e.err.sig.offset);
    EXPECT_EQ(0, memcmp(dst.data(), src.data(), 77 * BS));
    EXPECT_EQ(0, memcmp(dst.data() + 78 * BS, src.data() + 78 * BS,
                        len - 78 * BS));
    smlx5_destroy_mkey(gen);
    smlx5_destroy_mkey(chk);
    m_mkeys.clear();
    smlx5_dereg_mr(ms);
    smlx5_dereg_mr(md);
}

/* -------------------------------------------------- the seed page */

/* "To enable this feature, a QP must be created with the
 * MLX5DV_QP_CREATE_SIG_PIPELINING creation flag. Such QP will stop after
 * a transfer operation that failed signature validation in SQD state.
 * IBV_EVENT_SQ_DRAINED is generated to inform about the new state." */
TEST_F(sim_sig, seed_a_failed_transfer_stops_the_qp_in_sqd_with_sq_drained)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, 2 * BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, 2 * BS);
    post_recv_on(m_pr, RESP, 16384, 64, 100);
    async_events();

    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_pq, 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(2 * BS));
    post_fin(m_pq, 2);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    EXPECT_TRUE(wait_event(IBV_EVENT_SQ_DRAINED));
    /* the FIN was not executed: nothing arrived, no completion */
    struct ibv_wc wc;
    EXPECT_FALSE(poll_one(m_rcq[RESP], &wc, 100));
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, mkey_err(chk).err_type);
}

/* The same on a QP without the flag: no stop, the check result is on the
 * mkey only (spec section 6: "On a normal QP a signature error still
 * delivers the data and completes successfully"). */
TEST_F(sim_sig, seed_without_sig_pipelining_the_qp_does_not_stop)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, 2 * BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, 2 * BS);
    post_recv(RESP, 16384, 64, 100);
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_qp[REQ], 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(2 * BS));
    post_fin(m_qp[REQ], 2);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(m_rcq[RESP], 100, IBV_WC_SUCCESS, IBV_WC_RECV);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, mkey_err(chk).err_type);
}

TEST_F(sim_sig, seed_sig_pipelining_is_for_rc_qps_on_a_device_that_has_it)
{
    smlx5_qp_init_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.type            = SMLX5_QPT_DCI;
    attr.send_cq         = m_scq[REQ];
    attr.cap             = m_cap;
    attr.cap.max_recv_wr = 0;
    attr.create_flags    = MLX5DV_QP_CREATE_SIG_PIPELINING;
    errno                = 0;
    EXPECT_EQ(nullptr, smlx5_create_qp(m_pd, &attr));
    EXPECT_EQ(EINVAL, errno);
}

/* "The SEND operation that might need to be canceled due to a bad
 * signature of a previous operation must be posted with the
 * IBV_SEND_FENCE option" -- an unfenced one is not a place to stop. "It is
 * guaranteed that the QP has stopped somewhere between the WQE that
 * generated the signature error, and the next WQE that has IBV_SEND_FENCE
 * on it." */
TEST_F(sim_sig, seed_the_qp_stops_before_the_next_fenced_wqe)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, BS);
    post_recv_on(m_pr, RESP, 16384, 64, 100);
    post_recv_on(m_pr, RESP, 16448, 64, 101);
    struct mlx5dv_qp dv  = qp_dv(m_pq);
    uint32_t         pi0 = sq_dbrec(dv);

    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_pq, 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen), BS + 4);
    post_fin(m_pq, 2, IBV_SEND_SIGNALED); /* not fenced */
    uint32_t fenced_at = sq_dbrec(qp_dv(m_pq));
    post_fin(m_pq, 3); /* fenced */
    post_fin(m_pq, 4);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(m_rcq[RESP], 100, IBV_WC_SUCCESS, IBV_WC_RECV);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    /* the stop index is the fenced FIN's, and nothing after it ran */
    EXPECT_EQ((int)(fenced_at & 0xffff), sqd_index(m_pq));
    EXPECT_NE(pi0, fenced_at);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
}

/* "When QP stopped at SQD, it means that at least one WR caused signature
 * error. It may not be the last WR. It may be that more than one WRs cause
 * signature errors by the time the QP finally stopped." */
TEST_F(sim_sig, seed_more_than_one_bad_transfer_before_the_stop)
{
    smlx5_mkey_t *gen[3], *chk[3];
    for (int i = 0; i < 3; ++i) {
        gen[i] = gen_crc32c(RESP, i * 4096, BS);
        chk[i] = gen_crc32c(REQ, i * 4096, BS);
    }
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen[0], 0, SMLX5_CORRUPT_WIRE));
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen[2], 0, SMLX5_CORRUPT_WIRE));
    for (int i = 0; i < 3; ++i) {
        post_read(m_pq, 1 + i, 0, smlx5_mkey_key(chk[i]), 0,
                  smlx5_mkey_key(gen[i]), BS + 4);
    }
    post_fin(m_pq, 10);
    for (int i = 0; i < 3; ++i) {
        expect_wc(m_scq[REQ], 1 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    }
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, mkey_err(chk[0]).err_type);
    EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk[1]).err_type);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, mkey_err(chk[2]).err_type);
}

/* "A work request can only be canceled when the QP is in SQD state."
 * "RETURN VALUE: Number of work requests that were canceled, or -errno on
 * error." */
TEST_F(sim_sig, seed_cancel_outside_sqd_is_einval)
{
    EXPECT_EQ(-EINVAL, smlx5_qp_cancel_posted_send_wrs(m_pq, 1));
    uint32_t idx;
    EXPECT_EQ(EINVAL, smlx5_qp_query_sqd(m_pq, &idx));
}

/* "The canceled work requests are replaced with NOPs (no operation), and
 * will generate good completions according to the signaling originally
 * requested in the send flags" -- and the count of cancelled WRs is
 * returned: every WR with the wr_id, none of another. */
TEST_F(sim_sig, seed_cancelled_wrs_become_nops_completing_as_signaled)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, BS);
    for (int i = 0; i < 4; ++i) {
        post_recv_on(m_pr, RESP, 16384 + 64 * i, 64, 100 + i);
    }
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_pq, 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen), BS + 4);
    post_fin(m_pq, 7);                 /* signaled */
    post_fin(m_pq, 7, IBV_SEND_FENCE); /* unsignaled */
    post_fin(m_pq, 8);                 /* kept */
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));

    EXPECT_EQ(0, smlx5_qp_cancel_posted_send_wrs(m_pq, 12345));
    EXPECT_EQ(2, smlx5_qp_cancel_posted_send_wrs(m_pq, 7));
    ASSERT_NO_FATAL_FAILURE(to_rts_from_sqd(m_pq));
    /* the signaled NOP completes as what it was, the unsignaled one
     * silently, the third WR is executed */
    expect_wc(m_scq[REQ], 7, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(m_scq[REQ], 8, IBV_WC_SUCCESS, IBV_WC_SEND);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
    /* the responder got the one FIN that was not cancelled */
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    uint64_t got;
    memcpy(&got, buf(RESP, 16384), sizeof(got));
    EXPECT_EQ(8u, got);
    EXPECT_FALSE(poll_one(m_rcq[RESP], &wc, 100));
}

/* "... or "flushed" completions in case the QP goes to error." */
TEST_F(sim_sig, seed_cancelled_wrs_are_flushed_when_the_qp_goes_to_error)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, BS);
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_pq, 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen), BS + 4);
    post_fin(m_pq, 2);
    post_fin(m_pq, 3);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    EXPECT_EQ(1, smlx5_qp_cancel_posted_send_wrs(m_pq, 2));
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, smlx5_modify_qp(m_pq, &a, IBV_QP_STATE));
    expect_wc(m_scq[REQ], 2, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
    expect_wc(m_scq[REQ], 3, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
}

/* Posting in SQD is allowed; nothing runs until "4. Modify the QP back to
 * RTS state." */
TEST_F(sim_sig, seed_work_posted_in_sqd_waits_for_rts)
{
    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, BS);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, BS);
    post_recv_on(m_pr, RESP, 16384, 64, 100);
    post_recv_on(m_pr, RESP, 16448, 64, 101);
    ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen, 0, SMLX5_CORRUPT_WIRE));
    post_read(m_pq, 1, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen), BS + 4);
    post_fin(m_pq, 2);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    ASSERT_TRUE(wait_state(m_pq, IBV_QPS_SQD));
    post_fin(m_pq, 3, IBV_SEND_SIGNALED);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state     = IBV_QPS_RTS;
    a.cur_qp_state = IBV_QPS_RTS; /* not what it is: refused */
    EXPECT_EQ(EINVAL,
              smlx5_modify_qp(m_pq, &a, IBV_QP_STATE | IBV_QP_CUR_STATE));
    ASSERT_NO_FATAL_FAILURE(to_rts_from_sqd(m_pq));
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(m_scq[REQ], 3, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* A user's own RTS -> SQD with async notify: SQ_DRAINED once what was
 * started completed. */
TEST_F(sim_sig, modify_to_sqd_drains_and_notifies)
{
    post_recv(RESP, 16384, 64, 100);
    async_events();
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state            = IBV_QPS_SQD;
    a.en_sqd_async_notify = 1;
    ASSERT_EQ(0, smlx5_modify_qp(m_qp[REQ], &a,
                                 IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY));
    EXPECT_TRUE(wait_event(IBV_EVENT_SQ_DRAINED));
    uint32_t idx = 1;
    EXPECT_EQ(0, smlx5_qp_query_sqd(m_qp[REQ], &idx));
    EXPECT_EQ(0u, idx);
    post_fin(m_qp[REQ], 5, IBV_SEND_SIGNALED);
    EXPECT_TRUE(cq_stays_empty(m_scq[REQ]));
    ASSERT_NO_FATAL_FAILURE(to_rts_from_sqd(m_qp[REQ]));
    expect_wc(m_scq[REQ], 5, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* The seed page's four steps, end to end (issue acceptance 1): eight
 * transfers in flight on one pipelining QP, each a READ through a
 * checking mkey with its FIN fenced right behind it; two of them are
 * damaged on the wire. Software handles every SQD event as the page says:
 *   1. poll everything on the CQ,
 *   2. check the mkeys of the open transfers and find the bad ones,
 *   3. cancel their FINs by wr_id,
 *   4. modify the QP back to RTS
 * and reads the bad ones again (with a FIN of their own). Both are found,
 * both FINs cancelled, both re-read; every other FIN reaches the peer
 * once, in order, with every completion. */
TEST_F(sim_sig, seed_four_steps_two_bad_transfers_found_cancelled_and_reread)
{
    const int              N   = 8;
    const uint32_t         len = 4 * BS, wlen = wire_len(len);
    const std::vector<int> bad = {2, 5};
    smlx5_mkey_t          *gen[N], *chk[N];

    for (int i = 0; i < N; ++i) {
        gen[i] = gen_crc32c(RESP, i * 4096, len);
        chk[i] = gen_crc32c(REQ, i * 4096, len);
        post_recv_on(m_pr, RESP, 40000 + 64 * i, 64, 1000 + i);
    }
    for (int i : bad) {
        ASSERT_EQ(0, smlx5_mkey_corrupt_block(gen[i], 1 + i % 3,
                                              SMLX5_CORRUPT_WIRE));
    }
    /* transfer i: READ wr_id 100+i (unsignaled), FIN wr_id 200+i
     * (signaled, fenced) */
    for (int i = 0; i < N; ++i) {
        post_read(m_pq, 100 + i, 0, smlx5_mkey_key(chk[i]), 0,
                  smlx5_mkey_key(gen[i]), wlen, 0);
        post_fin(m_pq, 200 + i);
    }

    std::vector<uint64_t> fins_done;
    std::vector<int>      reread;
    std::vector<int>      open(N);
    for (int i = 0; i < N; ++i) {
        open[i] = i;
    }
    int  sqd_events = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((fins_done.size() < (size_t)N) &&
           (std::chrono::steady_clock::now() < deadline)) {
        struct ibv_wc wc;
        if (smlx5_poll_cq(m_scq[REQ], 1, &wc) == 1) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << wc.wr_id;
            if (wc.wr_id >= 200) {
                fins_done.push_back(wc.wr_id);
                int i = (int)(wc.wr_id - 200);
                open.erase(std::find(open.begin(), open.end(), i));
            }
            continue;
        }
        smlx5_async_event_t ev;
        if ((smlx5_get_async_event(m_ctx, &ev) == 0) &&
            (ev.type == IBV_EVENT_SQ_DRAINED)) {
            ++sqd_events;
            /* 1. poll everything (polling until 0 once) */
            while (smlx5_poll_cq(m_scq[REQ], 1, &wc) == 1) {
                ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
                if (wc.wr_id >= 200) {
                    fins_done.push_back(wc.wr_id);
                    open.erase(std::find(open.begin(), open.end(),
                                         (int)(wc.wr_id - 200)));
                }
            }
            /* 2. check the open transactions' mkeys */
            for (int i : std::vector<int>(open)) {
                if (mkey_err(chk[i]).err_type == MLX5DV_MKEY_NO_ERR) {
                    continue;
                }
                /* 3. cancel its FIN */
                EXPECT_EQ(1, smlx5_qp_cancel_posted_send_wrs(m_pq, 200 + i));
                reread.push_back(i);
                /* read it again, with a FIN of its own behind it (posting
                 * in SQD is allowed) */
                struct ibv_sge    cfg = sge(REQ, i * 4096, len);
                smlx5_mkey_conf_t c;
                memset(&c, 0, sizeof(c));
                c.num_sges = 1;
                c.sge      = &cfg;
                ASSERT_EQ(0, smlx5_mkey_configure(chk[i], &c));
                post_read(m_pq, 300 + i, 0, smlx5_mkey_key(chk[i]), 0,
                          smlx5_mkey_key(gen[i]), wlen, 0);
                post_fin(m_pq, 200 + i);
            }
            /* 4. back to RTS */
            ASSERT_NO_FATAL_FAILURE(to_rts_from_sqd(m_pq));
            continue;
        }
        smlx5_progress(m_ctx);
    }
    ASSERT_EQ((size_t)N, fins_done.size()) << "SQD events " << sqd_events;
    /* the cancelled FINs completed too (good NOPs, signaled as posted):
     * their wr_id shows up twice; the peer got each FIN exactly once */
    std::sort(reread.begin(), reread.end());
    EXPECT_EQ(bad, reread);
    EXPECT_GE(sqd_events, 1);
    std::vector<uint64_t> at_peer;
    struct ibv_wc         wc;
    while (poll_one(m_rcq[RESP], &wc, 200)) {
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        uint64_t v;
        memcpy(&v, buf(RESP, 40000 + 64 * (wc.wr_id - 1000)), sizeof(v));
        at_peer.push_back(v);
    }
    std::vector<uint64_t> sorted = at_peer;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> want;
    for (int i = 0; i < N; ++i) {
        want.push_back(200 + i);
    }
    EXPECT_EQ(want, sorted) << "each FIN once at the peer";
    /* the good ones kept their order */
    std::vector<uint64_t> good_order;
    for (uint64_t v : at_peer) {
        if (std::find(bad.begin(), bad.end(), (int)(v - 200)) == bad.end()) {
            good_order.push_back(v);
        }
    }
    EXPECT_TRUE(std::is_sorted(good_order.begin(), good_order.end()));
    /* every byte of every transfer is right in the end */
    for (int i = 0; i < N; ++i) {
        EXPECT_EQ(0, memcmp(buf(REQ, i * 4096), buf(RESP, i * 4096), len))
                << "transfer " << i;
        EXPECT_EQ(MLX5DV_MKEY_NO_ERR, mkey_err(chk[i]).err_type);
    }
}

/* ---------------------------------------------- silent data corruption */

/* STRAND_SIM_FAULTS sdc=P damages RDMA data past the link CRC: a plain
 * READ delivers it damaged and says nothing; through signature mkeys the
 * same damage is found. */
TEST_F(sim_sig, sdc_corrupts_plain_reads_and_signature_reads_catch_it)
{
    const uint32_t len = 32 * BS;
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, "sdc=0.2,seed=7"));
    post_read(m_qp[REQ], 1, addr(REQ), lkey(REQ), addr(RESP), rkey(RESP), len);
    expect_wc(m_scq[REQ], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_NE(0, memcmp(buf(REQ), buf(RESP), len)) << "damage went through";

    smlx5_mkey_t *gen = gen_crc32c(RESP, 0, len);
    smlx5_mkey_t *chk = gen_crc32c(REQ, 0, len);
    post_read(m_qp[REQ], 2, 0, smlx5_mkey_key(chk), 0, smlx5_mkey_key(gen),
              wire_len(len));
    expect_wc(m_scq[REQ], 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    EXPECT_EQ(MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD, mkey_err(chk).err_type);
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, ""));
}
