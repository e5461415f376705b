/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Masked atomics (spec section 1), driven the way the transport drives the
 * device: WQEs built in place with the src/mlx5 builders, the doorbell rung,
 * CQEs parsed from the CQ buffer.
 */
#include "sim_fixture.h"

extern "C" {
#include "mlx5/doorbell.h"
}

class sim_masked_atomics : public sim_fixture {
protected:
    void SetUp() override
    {
        sim_fixture::SetUp();
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_NO_FATAL_FAILURE(create_connected_pair(m_cap, 0, m_p));
        m_dv = qp_dv(m_p[REQ]);
        ASSERT_EQ(0, smlx5_cq_dv(m_scq[REQ], &m_cq));
    }

    /* ctrl + raddr + atomic segment(s) + one data segment; returns the
     * fetched value, read in the byte order the HCA's endianness mode
     * gives each size (spec section 9). */
    uint64_t masked(uint8_t opcode, unsigned size, uint64_t remote_off,
                    uint64_t a, uint64_t b, uint64_t c, uint64_t d)
    {
        post_masked(opcode, size, remote_off, a, b, c, d);
        if (size == 4) {
            uint32_t v;
            memcpy(&v, buf(REQ, 512), 4);
            return be32toh(v);
        }
        uint64_t v;
        memcpy(&v, buf(REQ, 512), 8);
        return m_caps.atomic_mode8b ? v : be64toh(v);
    }

    /* the WQE of masked(), its completion polled; the fetched value is in
     * REQ at 512 as the device wrote it */
    void post_masked(uint8_t opcode, unsigned size, uint64_t remote_off,
                     uint64_t a, uint64_t b, uint64_t c, uint64_t d)
    {
        void *sq   = m_dv.sq.buf;
        void *end  = strand_sq_end(sq, m_dv.sq.wqe_cnt);
        auto *ctrl = (struct mlx5_wqe_ctrl_seg *)strand_sq_bb(sq,
                                                              m_dv.sq.wqe_cnt,
                                                              m_pi);
        void *seg  = strand_sq_next(ctrl, sizeof(*ctrl), sq, end);
        strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg,
                             addr(RESP, remote_off), rkey(RESP));
        seg         = strand_sq_next(seg, 16, sq, end);
        unsigned ds = 3;
        if ((opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) && (size == 8)) {
            void *seg2 = strand_sq_next(seg, 16, sq, end);
            strand_set_masked_cs64_segs((struct mlx5_wqe_atomic_seg *)seg,
                                        (struct mlx5_wqe_atomic_seg *)seg2, a,
                                        b, c, d);
            seg = strand_sq_next(seg2, 16, sq, end);
            ds  = 4;
        } else {
            if (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) {
                strand_set_masked_cs32_seg(seg, a, b, c, d);
            } else if (size == 4) {
                strand_set_masked_fa32_seg(seg, a, b);
            } else {
                strand_set_masked_fa64_seg((struct mlx5_wqe_atomic_seg *)seg, a,
                                           b);
            }
            seg = strand_sq_next(seg, 16, sq, end);
        }
        strand_set_data_seg((struct mlx5_wqe_data_seg *)seg, addr(REQ, 512),
                            size, lkey(REQ));
        ds += 1;
        uint8_t opmod = 0x08 | (size == 8 ? 1 : 0);
        strand_set_ctrl_seg(ctrl, opmod, m_pi & 0xffff, opcode,
                            smlx5_qp_num(m_p[REQ]), ds, MLX5_WQE_CTRL_CQ_UPDATE,
                            0);
        m_pi += strand_ds_to_bbs(ds);
        strand_bf_ring_doorbell(m_dv.dbrec, smlx5_qp_bf(m_p[REQ]), m_pi, ctrl);
        smlx5_qp_doorbell(m_p[REQ]);

        struct mlx5_cqe64 *cqe = nullptr;
        for (int i = 0; (i < 1000000) && !cqe; ++i) {
            cqe = strand_cqe_get(m_cq.buf, m_cq.cqe_cnt,
                                 strand_cqe_shift(m_cq.cqe_size), m_ci);
            if (!cqe) {
                smlx5_progress(m_ctx);
            }
        }
        EXPECT_NE(nullptr, cqe);
        if (cqe == nullptr) {
            return;
        }
        EXPECT_EQ(MLX5_CQE_REQ, strand_cqe_opcode(cqe));
        EXPECT_EQ(opcode, be32toh(cqe->sop_drop_qpn) >> 24);
        EXPECT_EQ(size, be32toh(cqe->byte_cnt));
        strand_cq_update_ci(m_cq.dbrec, ++m_ci);
    }

    uint32_t &r32(size_t off)
    {
        return *reinterpret_cast<uint32_t *>(buf(RESP, off));
    }
    uint64_t &r64(size_t off)
    {
        return *reinterpret_cast<uint64_t *>(buf(RESP, off));
    }

    smlx5_qp_t      *m_p[2];
    struct mlx5dv_qp m_dv;
    struct mlx5dv_cq m_cq;
    uint32_t         m_pi = 0, m_ci = 0;
};

TEST_F(sim_masked_atomics, cs32_swaps_masked_bits_when_masked_compare_matches)
{
    r32(0) = 0x12345678;
    /* compare only the low byte (0x78): matches; swap the high half */
    EXPECT_EQ(0x12345678u,
              masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, 0, 0xabcd0000, 0x00000078,
                     0xffff0000, 0x000000ff));
    EXPECT_EQ(0xabcd5678u, r32(0));
    /* compare mismatch: unchanged */
    EXPECT_EQ(0xabcd5678u, masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, 0, 0,
                                  0x00000011, 0xffffffff, 0x000000ff));
    EXPECT_EQ(0xabcd5678u, r32(0));
}

TEST_F(sim_masked_atomics, cs64_and_or_swap_built_from_masked_cs)
{
    r64(8) = 0x00ff00ff00ff00ffull;
    /* OR 0xf000...: swap = ~0 under mask = operand, compare_mask = 0 */
    masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, 8, ~0ull, 0, 0xf000000000000000ull,
           0);
    EXPECT_EQ(0xf0ff00ff00ff00ffull, r64(8));
    /* AND 0x0f0f...: swap = 0 under mask = ~operand */
    masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, 8, 0, 0, ~0x0f0f0f0f0f0f0f0full, 0);
    EXPECT_EQ(0x000f000f000f000full, r64(8));
    /* SWAP: full mask, no compare */
    EXPECT_EQ(0x000f000f000f000full,
              masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, 8, 42, 0, ~0ull, 0));
    EXPECT_EQ(42ull, r64(8));
}

TEST_F(sim_masked_atomics, fa_field_boundary_stops_carry)
{
    /* two 16-bit fields in 32 bits: bit 15 is a boundary */
    r32(16) = 0x0001ffff;
    EXPECT_EQ(0x0001ffffu, masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 4, 16,
                                  0x00010001, 0x00008000, 0, 0));
    EXPECT_EQ(0x00020000u, r32(16)); /* low field wrapped, no carry up */
    /* all ones boundary = XOR */
    r64(24) = 0xff00ff00ff00ff00ull;
    masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 8, 24, 0x0ff00ff00ff00ff0ull, ~0ull, 0,
           0);
    EXPECT_EQ(0xf0f0f0f0f0f0f0f0ull, r64(24));
    /* no boundary = plain 64-bit add */
    r64(32) = 0xffffffffull;
    masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 8, 32, 1, 0, 0, 0);
    EXPECT_EQ(0x100000000ull, r64(32));
}

/* Spec section 9 (atomic reply endianness per size): the HCA's 8-byte mode
 * (STRAND_SIM_CAPS atomic_mode8b) decides how 64-bit replies land, masked
 * ones included: big-endian in mode 0, host order in mode 1; a 32-bit
 * masked reply is big-endian in either mode. The bytes as the device
 * wrote them, in both modes. */
class sim_atomic_modes : public sim_masked_atomics,
                         public ::testing::WithParamInterface<int> {
protected:
    void SetUp() override
    {
        std::string caps = "atomic_mode8b=" + std::to_string(GetParam());
        setenv("STRAND_SIM_CAPS", caps.c_str(), 1);
        sim_masked_atomics::SetUp();
    }

    void TearDown() override
    {
        sim_masked_atomics::TearDown();
        unsetenv("STRAND_SIM_CAPS");
    }
};

TEST_P(sim_atomic_modes, reply_bytes_per_size_and_mode)
{
    ASSERT_EQ(GetParam(), m_caps.atomic_mode8b);
    /* verbs' atomic_cap as mlx5_ib has it: HCA only in host mode */
    EXPECT_EQ(GetParam() ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE,
              m_caps.attr.atomic_cap);
    EXPECT_TRUE(m_caps.flags & SMLX5_CAP_ATOMICS);

    r32(0) = 0x11223344;
    post_masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 4, 0, 1, 0, 0, 0);
    const uint8_t be32[4] = {0x11, 0x22, 0x33, 0x44};
    EXPECT_EQ(0, memcmp(buf(REQ, 512), be32, 4)) << "32-bit reply";
    EXPECT_EQ(0x11223345u, r32(0));

    const uint64_t v = 0x0102030405060708ull;
    uint8_t        want[8];
    for (int i = 0; i < 8; ++i) {
        want[i] = GetParam() ? (uint8_t)(v >> (8 * i)) : /* host (LE) */
                               (uint8_t)(v >> (56 - 8 * i));  /* network */
    }
    r64(8) = v;
    post_masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 8, 8, 1, 0, 0, 0);
    EXPECT_EQ(0, memcmp(buf(REQ, 512), want, 8)) << "64-bit masked reply";
    r64(16) = v;
    post_masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, 16, 0, 0, 0, 0);
    EXPECT_EQ(0, memcmp(buf(REQ, 512), want, 8)) << "64-bit masked CS reply";
    EXPECT_EQ(v, r64(16)); /* empty masks: nothing swapped */
}

INSTANTIATE_TEST_SUITE_P(mode8b, sim_atomic_modes, ::testing::Values(0, 1));
