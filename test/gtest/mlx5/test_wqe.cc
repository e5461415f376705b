/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/mlx5 data-path primitives against hand-computed bytes (spec sections
 * 1 and 3): WQE segment builders, SQ geometry, doorbell, CQE parsing.
 */
#include <gtest/gtest.h>

#include <infiniband/mlx5dv.h>

extern "C" {
#include "mlx5/cqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/sq.h"
#include "mlx5/wqe_dump.h"
#include "mlx5/wqe.h"
}

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

/* An SQ of `cnt` BBs, 64-byte aligned, filled with 0xee. */
struct test_sq {
    explicit test_sq(uint32_t cnt) : wqe_cnt(cnt)
    {
        buf = static_cast<uint8_t *>(aligned_alloc(64, cnt * 64));
        memset(buf, 0xee, cnt * 64);
    }
    ~test_sq()
    {
        free(buf);
    }
    void *end()
    {
        return strand_sq_end(buf, wqe_cnt);
    }

    uint8_t *buf;
    uint32_t wqe_cnt;
};

std::vector<uint8_t> bytes(const void *p, size_t len)
{
    const uint8_t *b = static_cast<const uint8_t *>(p);
    return std::vector<uint8_t>(b, b + len);
}

} // namespace

/* ------------------------------------------------------------ geometry */

TEST(wqe, bb_address_masks_free_running_index)
{
    test_sq sq(8);
    EXPECT_EQ(sq.buf, strand_sq_bb(sq.buf, 8, 0));
    EXPECT_EQ(sq.buf + 3 * 64, strand_sq_bb(sq.buf, 8, 3));
    EXPECT_EQ(sq.buf + 3 * 64, strand_sq_bb(sq.buf, 8, 11));
    EXPECT_EQ(sq.buf + 7 * 64, strand_sq_bb(sq.buf, 8, 0xffffffffu));
    EXPECT_EQ(sq.buf + 8 * 64, strand_sq_end(sq.buf, 8));
}

TEST(wqe, segment_pointer_wraps_to_bb0_at_sq_end)
{
    test_sq  sq(4);
    uint8_t *last = sq.buf + 3 * 64;
    EXPECT_EQ(last + 48, strand_sq_next(last + 32, 16, sq.buf, sq.end()));
    EXPECT_EQ(sq.buf, strand_sq_next(last + 48, 16, sq.buf, sq.end()));
    EXPECT_EQ(sq.buf + 16, strand_sq_next(last + 48, 32, sq.buf, sq.end()));
    EXPECT_EQ(sq.buf + 5,
              strand_sq_wrap(sq.buf + 4 * 64 + 5, sq.buf, sq.end()));
}

TEST(wqe, bb_count_for_ds)
{
    EXPECT_EQ(1u, strand_ds_to_bbs(1));
    EXPECT_EQ(1u, strand_ds_to_bbs(4));
    EXPECT_EQ(2u, strand_ds_to_bbs(5));
    EXPECT_EQ(2u, strand_ds_to_bbs(8));
    EXPECT_EQ(3u, strand_ds_to_bbs(9));
    EXPECT_EQ(16u, strand_ds_to_bbs(63));
}

/* ---------------------------------------------------------------- ctrl */

TEST(wqe, ctrl_fields_are_big_endian)
{
    struct mlx5_wqe_ctrl_seg c;
    memset(&c, 0xee, sizeof(c));
    strand_set_ctrl_seg(&c, 0x09, 0x1234, MLX5_OPCODE_SEND, 0xabcdef, 5, 0x8a,
                        htobe32(0x11223344));
    const uint8_t expect[16] = {0x09, 0x12, 0x34, 0x0a,  /* opmod idx opcode */
                                0xab, 0xcd, 0xef, 0x05,  /* qpn ds */
                                0x00,                    /* signature */
                                0x00, 0x00,              /* stream id */
                                0x8a,                    /* fm_ce_se */
                                0x11, 0x22, 0x33, 0x44}; /* imm as given */
    EXPECT_EQ(bytes(expect, 16), bytes(&c, 16));
    EXPECT_EQ(16u, sizeof(c));
}

TEST(wqe, ctrl_imm_stored_as_given)
{
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0, 0, MLX5_OPCODE_SEND_IMM, 1, 2, 0, 0x04030201);
    uint32_t imm;
    memcpy(&imm, reinterpret_cast<uint8_t *>(&c) + 12, 4);
    EXPECT_EQ(0x04030201u, imm);
}

TEST(wqe, ctrl_stream_id_at_bytes_9_10)
{
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0, 7, MLX5_OPCODE_RDMA_WRITE, 0x42, 3,
                        MLX5_WQE_CTRL_CQ_UPDATE, 0);
    strand_set_ctrl_stream(&c, 0xbeef);
    const uint8_t *b = reinterpret_cast<const uint8_t *>(&c);
    EXPECT_EQ(0x00, b[8]);
    EXPECT_EQ(0xbe, b[9]);
    EXPECT_EQ(0xef, b[10]);
    EXPECT_EQ(0x08, b[11]);
    EXPECT_EQ(0xbeef, strand_ctrl_stream(&c));
}

TEST(wqe, ctrl_wqe_index_is_16_bits_of_producer)
{
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0, (uint16_t)(0x12345u & 0xffff), MLX5_OPCODE_NOP,
                        1, 1, 0, 0);
    EXPECT_EQ(0x2345, strand_ctrl_wqe_idx(&c));
    const uint8_t *b = reinterpret_cast<const uint8_t *>(&c);
    EXPECT_EQ(0x23, b[1]);
    EXPECT_EQ(0x45, b[2]);
}

TEST(wqe, ctrl_accessors_roundtrip)
{
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0x08, 0xfffe, MLX5_OPCODE_ATOMIC_MASKED_CS,
                        0xffffff, 63, 0x80, 0);
    EXPECT_EQ(0x08, strand_ctrl_opmod(&c));
    EXPECT_EQ(0xfffe, strand_ctrl_wqe_idx(&c));
    EXPECT_EQ(MLX5_OPCODE_ATOMIC_MASKED_CS, strand_ctrl_opcode(&c));
    EXPECT_EQ(0xffffffu, strand_ctrl_qpn(&c));
    EXPECT_EQ(63u, strand_ctrl_ds(&c));
    strand_set_ctrl_ds(&c, 4);
    EXPECT_EQ(4u, strand_ctrl_ds(&c));
    EXPECT_EQ(0xffffffu, strand_ctrl_qpn(&c));
}

TEST(wqe, fm_ce_se_constants)
{
    EXPECT_EQ(0x08, MLX5_WQE_CTRL_CQ_UPDATE);
    EXPECT_EQ(0x02, MLX5_WQE_CTRL_SOLICITED);
    EXPECT_EQ(0x80, MLX5_WQE_CTRL_FENCE);
    EXPECT_EQ(0x80, STRAND_WQE_CTRL_FM_SMALL_FENCE);
    EXPECT_EQ(0x40, STRAND_WQE_CTRL_FM_FENCE);
}

/* ------------------------------------------------------------ segments */

TEST(wqe, raddr_seg)
{
    struct mlx5_wqe_raddr_seg r;
    memset(&r, 0xee, sizeof(r));
    strand_set_raddr_seg(&r, 0x0102030405060708ull, 0xa1b2c3d4);
    const uint8_t expect[16] = {1,    2,    3,    4,    5, 6, 7, 8,
                                0xa1, 0xb2, 0xc3, 0xd4, 0, 0, 0, 0};
    EXPECT_EQ(bytes(expect, 16), bytes(&r, 16));
}

TEST(wqe, atomic_cs_seg_swap_then_compare)
{
    struct mlx5_wqe_atomic_seg a;
    strand_set_atomic_cs_seg(&a, /*compare*/ 0x1111111122222222ull,
                             /*swap*/ 0x3333333344444444ull);
    const uint8_t expect[16] = {0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44,
                                0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22};
    EXPECT_EQ(bytes(expect, 16), bytes(&a, 16));
}

TEST(wqe, atomic_fa_seg_add_in_swap_add)
{
    struct mlx5_wqe_atomic_seg a;
    memset(&a, 0xee, sizeof(a));
    strand_set_atomic_fa_seg(&a, 0x0807060504030201ull);
    const uint8_t expect[16] = {8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(bytes(expect, 16), bytes(&a, 16));
}

TEST(wqe, masked_cs32_one_segment_be32)
{
    uint8_t seg[16];
    memset(seg, 0xee, sizeof(seg));
    strand_set_masked_cs32_seg(seg, 0x01020304, 0x05060708, 0x090a0b0c,
                               0x0d0e0f10);
    const uint8_t expect[16] = {1, 2,  3,  4,  5,  6,  7,  8,
                                9, 10, 11, 12, 13, 14, 15, 16};
    EXPECT_EQ(bytes(expect, 16), bytes(seg, 16));
    EXPECT_EQ(0x08, STRAND_MASKED_ATOMIC_OPMOD(4));
}

TEST(wqe, masked_cs64_two_segments)
{
    struct mlx5_wqe_atomic_seg s[2];
    memset(s, 0xee, sizeof(s));
    strand_set_masked_cs64_segs(&s[0], &s[1], 0x1ull, 0x2ull, 0x3ull, 0x4ull);
    std::vector<uint8_t> expect(32, 0);
    expect[7]  = 1;
    expect[15] = 2;
    expect[23] = 3;
    expect[31] = 4;
    EXPECT_EQ(expect, bytes(s, 32));
    EXPECT_EQ(0x09, STRAND_MASKED_ATOMIC_OPMOD(8));
}

TEST(wqe, masked_cs64_second_segment_may_wrap)
{
    test_sq sq(1);
    auto   *first = reinterpret_cast<struct mlx5_wqe_atomic_seg *>(sq.buf + 48);
    auto   *second = static_cast<struct mlx5_wqe_atomic_seg *>(
            strand_sq_next(first, 16, sq.buf, sq.end()));
    ASSERT_EQ(reinterpret_cast<void *>(sq.buf), second);
    strand_set_masked_cs64_segs(first, second, 0xa, 0xb, 0xc, 0xd);
    EXPECT_EQ(0x0c, sq.buf[7]);
    EXPECT_EQ(0x0d, sq.buf[15]);
    EXPECT_EQ(0x0a, sq.buf[48 + 7]);
    EXPECT_EQ(0x0b, sq.buf[48 + 15]);
}

TEST(wqe, masked_fa32_and_fa64)
{
    uint8_t seg[16];
    memset(seg, 0xee, sizeof(seg));
    strand_set_masked_fa32_seg(seg, 0x01020304, 0x80000000);
    const uint8_t e32[16] = {1, 2, 3, 4, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(bytes(e32, 16), bytes(seg, 16));

    struct mlx5_wqe_atomic_seg a;
    strand_set_masked_fa64_seg(&a, 0x5, 0xffffffffffffffffull);
    std::vector<uint8_t> e64(16, 0xff);
    for (int i = 0; i < 8; ++i) {
        e64[i] = 0;
    }
    e64[7] = 5;
    EXPECT_EQ(e64, bytes(&a, 16));
}

TEST(wqe, data_seg_layout)
{
    struct mlx5_wqe_data_seg d;
    strand_set_data_seg(&d, 0x1122334455667788ull, 0x100, 0xcafe);
    const uint8_t expect[16] = {0,    0,    1,    0,    0,    0,    0xca, 0xfe,
                                0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    EXPECT_EQ(bytes(expect, 16), bytes(&d, 16));
}

TEST(wqe, data_seg_end_is_invalid_lkey)
{
    struct mlx5_wqe_data_seg d;
    memset(&d, 0xee, sizeof(d));
    strand_set_data_seg_end(&d);
    const uint8_t expect[16] = {0, 0, 0, 0, 0, 0, 0x01, 0x00,
                                0, 0, 0, 0, 0, 0, 0,    0};
    EXPECT_EQ(bytes(expect, 16), bytes(&d, 16));
}

TEST(wqe, data_sgl_skips_zero_length)
{
    test_sq        sq(2);
    struct ibv_sge sgl[4] = {{0x1000, 8, 1},
                             {0x2000, 0, 2},
                             {0x3000, 16, 3},
                             {0x4000, 0, 4}};
    void          *next   = nullptr;
    EXPECT_EQ(2u, strand_sgl_count(sgl, 4));
    EXPECT_EQ(24u, strand_sgl_bytes(sgl, 4));
    EXPECT_EQ(2u,
              strand_set_data_sgl(sq.buf, sgl, 4, 0, sq.buf, sq.end(), &next));
    EXPECT_EQ(sq.buf + 32, next);
    auto *d = reinterpret_cast<struct mlx5_wqe_data_seg *>(sq.buf);
    EXPECT_EQ(8u, be32toh(d[0].byte_count));
    EXPECT_EQ(1u, be32toh(d[0].lkey));
    EXPECT_EQ(0x1000u, be64toh(d[0].addr));
    EXPECT_EQ(16u, be32toh(d[1].byte_count));
    EXPECT_EQ(3u, be32toh(d[1].lkey));
    EXPECT_EQ(0x3000u, be64toh(d[1].addr));
    EXPECT_EQ(0xee, sq.buf[32]); /* nothing written after */
}

TEST(wqe, data_sgl_byte_count_override_for_atomics)
{
    test_sq        sq(1);
    struct ibv_sge sgl = {0x1000, 64, 9};
    EXPECT_EQ(1u, strand_set_data_sgl(sq.buf, &sgl, 1, 8, sq.buf, sq.end(),
                                      nullptr));
    EXPECT_EQ(8u, be32toh(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq.buf)
                                  ->byte_count));
}

TEST(wqe, data_sgl_wraps_across_sq_end)
{
    test_sq        sq(1);
    struct ibv_sge sgl[2] = {{0xa, 1, 1}, {0xb, 2, 2}};
    void          *next   = nullptr;
    strand_set_data_sgl(sq.buf + 48, sgl, 2, 0, sq.buf, sq.end(), &next);
    EXPECT_EQ(sq.buf + 16, next);
    EXPECT_EQ(0xbu, be64toh(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq.buf)
                                    ->addr));
    EXPECT_EQ(0xau,
              be64toh(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq.buf + 48)
                              ->addr));
}

/* ------------------------------------------------------------- inline */

/* Inline data is copied without a libc call (strand_copy_small): every
 * length from 0 to 200 bytes, source and destination each ending at a
 * page whose neighbour is inaccessible, so a byte read or written past
 * either end faults; the bytes before the destination stay as they were.
 * (It read and wrote up to 7 bytes past both for 17..23, 33..39, ...
 * bytes: past the user's buffer, and past the send queue's end.) */
TEST(wqe, small_copy_stays_inside_both_buffers)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    uint8_t     *map  = static_cast<uint8_t *>(
            mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(MAP_FAILED, static_cast<void *>(map));
    /* pages: source, guard, destination, guard */
    ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
    ASSERT_EQ(0, mprotect(map + 3 * page, page, PROT_NONE));
    uint8_t *src_end = map + page, *dst_end = map + 3 * page;
    for (uint32_t len = 0; len <= 200; ++len) {
        uint8_t *src = src_end - len, *dst = dst_end - len;
        for (uint32_t i = 0; i < len; ++i) {
            src[i] = static_cast<uint8_t>(len * 7 + i * 13 + 1);
        }
        memset(dst_end - 256, 0xee, 256);
        strand_copy_small(dst, src, len);
        ASSERT_EQ(0, memcmp(dst, src, len)) << len << " bytes";
        for (uint8_t *p = dst_end - 256; p < dst; ++p) {
            ASSERT_EQ(0xee, *p) << len << " bytes: written before the copy";
        }
    }
    munmap(map, 4 * page);
}

TEST(wqe, inline_header_and_padding)
{
    test_sq        sq(2);
    uint8_t        data[5] = {1, 2, 3, 4, 5};
    struct ibv_sge sgl     = {reinterpret_cast<uintptr_t>(data), 5, 0};
    void          *next    = nullptr;
    EXPECT_EQ(1u, strand_inline_ds(5));
    EXPECT_EQ(1u,
              strand_set_inline_seg(sq.buf, &sgl, 1, sq.buf, sq.end(), &next));
    const uint8_t expect[16] = {0x80, 0, 0, 5, 1, 2, 3, 4,
                                5,    0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(bytes(expect, 16), bytes(sq.buf, 16));
    EXPECT_EQ(sq.buf + 16, next);
    EXPECT_EQ(0xee, sq.buf[16]);
}

TEST(wqe, inline_ds_is_align_len_plus_4_to_16)
{
    EXPECT_EQ(0u, strand_inline_ds(0));
    EXPECT_EQ(1u, strand_inline_ds(1));
    EXPECT_EQ(1u, strand_inline_ds(12));
    EXPECT_EQ(2u, strand_inline_ds(13));
    EXPECT_EQ(2u, strand_inline_ds(28));
    EXPECT_EQ(3u, strand_inline_ds(29));
    EXPECT_EQ(52u, strand_inline_ds(828));
}

TEST(wqe, inline_exact_fit_has_no_padding)
{
    test_sq sq(1);
    uint8_t data[12];
    for (int i = 0; i < 12; ++i) {
        data[i] = (uint8_t)(0x10 + i);
    }
    struct ibv_sge sgl = {reinterpret_cast<uintptr_t>(data), 12, 0};
    EXPECT_EQ(1u, strand_set_inline_seg(sq.buf, &sgl, 1, sq.buf, sq.end(),
                                        nullptr));
    EXPECT_EQ(0x8000000cu, be32toh(*reinterpret_cast<uint32_t *>(sq.buf)));
    EXPECT_EQ(0, memcmp(sq.buf + 4, data, 12));
    EXPECT_EQ(0xee, sq.buf[16]);
}

TEST(wqe, inline_concatenates_sges)
{
    test_sq        sq(1);
    uint8_t        a[3] = {1, 2, 3}, b[2] = {4, 5};
    struct ibv_sge sgl[3] = {{reinterpret_cast<uintptr_t>(a), 3, 0},
                             {0, 0, 0},
                             {reinterpret_cast<uintptr_t>(b), 2, 0}};
    EXPECT_EQ(1u,
              strand_set_inline_seg(sq.buf, sgl, 3, sq.buf, sq.end(), nullptr));
    const uint8_t expect[16] = {0x80, 0, 0, 5, 1, 2, 3, 4,
                                5,    0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(bytes(expect, 16), bytes(sq.buf, 16));
}

TEST(wqe, inline_zero_length_emits_nothing)
{
    test_sq        sq(1);
    struct ibv_sge sgl  = {0, 0, 0};
    void          *next = nullptr;
    EXPECT_EQ(0u, strand_set_inline_seg(sq.buf + 16, &sgl, 1, sq.buf, sq.end(),
                                        &next));
    EXPECT_EQ(sq.buf + 16, next);
    EXPECT_EQ(0xee, sq.buf[16]);
}

TEST(wqe, inline_data_wraps_across_sq_end)
{
    test_sq sq(2);
    uint8_t data[40];
    for (int i = 0; i < 40; ++i) {
        data[i] = (uint8_t)(i + 1);
    }
    struct ibv_sge sgl  = {reinterpret_cast<uintptr_t>(data), 40, 0};
    uint8_t       *seg  = sq.buf + 64 + 32; /* 32 bytes before the end */
    void          *next = nullptr;
    /* 4 + 40 = 44 -> 48 bytes, ds 3 */
    EXPECT_EQ(3u, strand_set_inline_seg(seg, &sgl, 1, sq.buf, sq.end(), &next));
    EXPECT_EQ(0x80000028u, be32toh(*reinterpret_cast<uint32_t *>(seg)));
    EXPECT_EQ(0, memcmp(seg + 4, data, 28));     /* up to the end */
    EXPECT_EQ(0, memcmp(sq.buf, data + 28, 12)); /* continues at BB 0 */
    const uint8_t zero[4] = {0, 0, 0, 0};
    EXPECT_EQ(0, memcmp(sq.buf + 12, zero, 4)); /* padding */
    EXPECT_EQ(sq.buf + 16, next);
    EXPECT_EQ(0xee, sq.buf[16]);
}

TEST(wqe, inline_ending_at_sq_end_continues_at_bb0)
{
    test_sq        sq(1);
    uint8_t        data[12] = {0};
    struct ibv_sge sgl      = {reinterpret_cast<uintptr_t>(data), 12, 0};
    void          *next     = nullptr;
    EXPECT_EQ(1u, strand_set_inline_seg(sq.buf + 48, &sgl, 1, sq.buf, sq.end(),
                                        &next));
    EXPECT_EQ(sq.buf, next);
}

/* ----------------------------------------------------------------- AV */

TEST(wqe, av_base_is_16_bytes_ext_clear)
{
    uint8_t av[48];
    memset(av, 0xee, sizeof(av));
    strand_set_av_base(reinterpret_cast<struct mlx5_wqe_av *>(av),
                       0x1ee7a330ull, 0x123456, 0x0102);
    const uint8_t expect[16] = {0,    0,    0,    0,
                                0x1e, 0xe7, 0xa3, 0x30, /* key */
                                0x00, 0x12, 0x34, 0x56, /* dct */
                                0,    0,                /* sl, mlid */
                                0x01, 0x02};            /* rlid */
    EXPECT_EQ(bytes(expect, 16), bytes(av, 16));
    EXPECT_EQ(std::vector<uint8_t>(32, 0xee), bytes(av + 16, 32));
}

TEST(wqe, av_full_is_48_bytes_ext_set)
{
    uint8_t av[64];
    memset(av, 0xee, sizeof(av));
    EXPECT_EQ(48u, STRAND_AV_FULL_SIZE);
    strand_set_av_full(reinterpret_cast<struct mlx5_wqe_av *>(av),
                       0x0102030405060708ull, 0xabcdef, 0x7f01);
    std::vector<uint8_t> expect(48, 0);
    const uint8_t        head[16] = {1,    2,    3,    4,    5, 6, 7,    8,
                                     0x80, 0xab, 0xcd, 0xef, 0, 0, 0x7f, 0x01};
    memcpy(expect.data(), head, 16);
    EXPECT_EQ(expect, bytes(av, 48));
    EXPECT_EQ(0xee, av[48]);
}

/* ----------------------------------------------------------- doorbell */

TEST(wqe_doorbell, record_then_8_bytes_of_ctrl_then_offset_flips)
{
    __be32              dbrec[2] = {htobe32(0xdead), 0};
    alignas(64) uint8_t bf[512];
    memset(bf, 0, sizeof(bf));
    strand_bf_t reg;
    strand_bf_init(&reg, bf, 256);
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0, 0x0005, MLX5_OPCODE_SEND, 0x000abc, 2, 0x08, 0);

    strand_bf_ring_doorbell(dbrec, &reg, 0x10006, &c);
    EXPECT_EQ(htobe32(0xdead), dbrec[MLX5_RCV_DBR]); /* untouched */
    EXPECT_EQ(htobe32(0x0006), dbrec[MLX5_SND_DBR]); /* cur_post & 0xffff */
    EXPECT_EQ(0, memcmp(bf, &c, 8));
    EXPECT_EQ(std::vector<uint8_t>(8, 0), bytes(bf + 8, 8)); /* 8 bytes only */
    EXPECT_EQ(256u, strand_bf_offset(&reg));

    strand_set_ctrl_seg(&c, 0, 0x0006, MLX5_OPCODE_RDMA_WRITE, 0x000abc, 3, 0,
                        0);
    strand_bf_ring_doorbell(dbrec, &reg, 0x10007, &c);
    EXPECT_EQ(htobe32(0x0007), dbrec[MLX5_SND_DBR]);
    EXPECT_EQ(0, memcmp(bf + 256, &c, 8));
    EXPECT_EQ(0u, strand_bf_offset(&reg));
}

TEST(wqe_doorbell, no_bf_register_writes_record_only)
{
    __be32                   dbrec[2] = {0, 0};
    struct mlx5_wqe_ctrl_seg c;
    strand_set_ctrl_seg(&c, 0, 1, MLX5_OPCODE_SEND, 1, 2, 0, 0);
    strand_bf_ring_doorbell(dbrec, nullptr, 2, &c);
    EXPECT_EQ(htobe32(2), dbrec[MLX5_SND_DBR]);
}

/* ------------------------------------------------- send-queue object */

namespace {

struct sq_fixture {
    alignas(64) uint8_t buf[4 * 64]; /* 4 BBs */
    alignas(64) uint8_t bf[512];
    __be32           dbrec[2] = {htobe32(0xdead), 0};
    struct mlx5dv_qp dv;
    strand_bf_t      reg; /* the register's shared state */
    strand_sq_t      sq;

    sq_fixture(strand_mmio_mode_t mode, bool with_bf = true)
    {
        memset(buf, 0, sizeof(buf));
        memset(bf, 0, sizeof(bf));
        memset(&dv, 0, sizeof(dv));
        dv.dbrec      = dbrec;
        dv.sq.buf     = buf;
        dv.sq.wqe_cnt = 4;
        dv.sq.stride  = 64;
        dv.bf.reg     = with_bf ? bf : nullptr;
        dv.bf.size    = 256;
        strand_bf_init(&reg, bf, 256);
        strand_sq_init(&sq, &dv, 0xabc, mode, &reg);
    }

    /* a WQE of `bbs` BBs filled with `fill` after its ctrl segment */
    struct mlx5_wqe_ctrl_seg *post(unsigned bbs, uint8_t fill)
    {
        struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_ctrl(&sq);
        uint8_t                  *p    = reinterpret_cast<uint8_t *>(ctrl + 1);

        for (unsigned i = 16; i < bbs * 64; ++i, ++p) {
            p  = static_cast<uint8_t *>(strand_sq_wrap(p, buf, buf + 256));
            *p = fill;
        }
        strand_sq_set_ctrl(&sq, ctrl, 0, MLX5_OPCODE_SEND, bbs * 4,
                           MLX5_WQE_CTRL_CQ_UPDATE, 0);
        strand_sq_advance(&sq, bbs);
        return ctrl;
    }
};

} // namespace

TEST(wqe_sq, ctrl_carries_the_producer_index_and_qpn)
{
    sq_fixture f(STRAND_MMIO_MODE_DB);
    EXPECT_EQ(STRAND_MMIO_MODE_DB, f.sq.mmio_mode);
    struct mlx5_wqe_ctrl_seg *c0 = f.post(1, 0x11);
    EXPECT_EQ(static_cast<void *>(f.buf), static_cast<void *>(c0));
    EXPECT_EQ(0u, strand_ctrl_wqe_idx(c0));
    EXPECT_EQ(0xabcu, strand_ctrl_qpn(c0));
    struct mlx5_wqe_ctrl_seg *c1 = f.post(2, 0x22);
    EXPECT_EQ(static_cast<void *>(f.buf + 64), static_cast<void *>(c1));
    EXPECT_EQ(1u, strand_ctrl_wqe_idx(c1));
    EXPECT_EQ(3u, f.sq.cur_post);
}

TEST(wqe_sq, db_mode_writes_the_record_then_8_bytes_and_flips)
{
    sq_fixture                f(STRAND_MMIO_MODE_DB);
    struct mlx5_wqe_ctrl_seg *c = f.post(2, 0x33);
    strand_sq_ring(&f.sq, c, 2);
    EXPECT_EQ(htobe32(0xdead), f.dbrec[MLX5_RCV_DBR]);
    EXPECT_EQ(htobe32(2), f.dbrec[MLX5_SND_DBR]);
    EXPECT_EQ(bytes(c, 8), bytes(f.bf, 8));
    EXPECT_EQ(std::vector<uint8_t>(8, 0), bytes(f.bf + 8, 8));
    EXPECT_EQ(256u, strand_sq_bf_offset(&f.sq));
    c = f.post(1, 0x44);
    strand_sq_ring(&f.sq, c, 1);
    EXPECT_EQ(htobe32(3), f.dbrec[MLX5_SND_DBR]);
    EXPECT_EQ(bytes(c, 8), bytes(f.bf + 256, 8));
    EXPECT_EQ(0u, strand_sq_bf_offset(&f.sq));
}

/* bf_post: the whole WQE goes to the BlueFlame buffer, also one that
 * wraps around the end of the queue; a WQE larger than the buffer gets a
 * plain doorbell. */
TEST(wqe_sq, bf_post_copies_the_wqe_across_the_wrap)
{
    sq_fixture f(STRAND_MMIO_MODE_BF_POST);
    strand_sq_ring(&f.sq, f.post(3, 0x55), 3); /* BBs 0-2 */
    EXPECT_EQ(bytes(f.buf, 192), bytes(f.bf, 192));
    struct mlx5_wqe_ctrl_seg *c = f.post(2, 0x66); /* BB 3, then BB 0 */
    EXPECT_EQ(static_cast<void *>(f.buf + 192), static_cast<void *>(c));
    strand_sq_ring(&f.sq, c, 2);
    EXPECT_EQ(bytes(f.buf + 192, 64), bytes(f.bf + 256, 64));
    EXPECT_EQ(bytes(f.buf, 64), bytes(f.bf + 320, 64));
    EXPECT_EQ(0x66, f.buf[0]); /* it did wrap */
    EXPECT_EQ(htobe32(5), f.dbrec[MLX5_SND_DBR]);

    sq_fixture g(STRAND_MMIO_MODE_BF_POST);
    g.dv.bf.size = 64;
    strand_bf_init(&g.reg, g.bf, 64);
    strand_sq_init(&g.sq, &g.dv, 0xabc, STRAND_MMIO_MODE_BF_POST, &g.reg);
    c = g.post(2, 0x77);
    strand_sq_ring(&g.sq, c, 2);
    EXPECT_EQ(bytes(c, 8), bytes(g.bf, 8));
    EXPECT_EQ(std::vector<uint8_t>(56, 0), bytes(g.bf + 8, 56));
}

#ifdef STRAND_DEBUG
/* A debug build (--enable-debug) stops a queue whose state went wrong. */
TEST(wqe_sq, debug_build_checks_the_queue_state)
{
    sq_fixture                f(STRAND_MMIO_MODE_DB);
    struct mlx5_wqe_ctrl_seg *c = f.post(1, 0x11);
    EXPECT_DEATH(strand_sq_set_ctrl(&f.sq, c, 0, MLX5_OPCODE_SEND, 2, 0, 0),
                 "WQE not at the producer index");
    EXPECT_DEATH(strand_sq_set_ctrl(&f.sq, strand_sq_ctrl(&f.sq), 0,
                                    MLX5_OPCODE_SEND, 0, 0, 0),
                 "ds out of range");
    strand_sq_ring(&f.sq, c, 1);
    EXPECT_DEATH(strand_sq_ring(&f.sq, c, 1), "doorbell with no new WQE");
    EXPECT_DEATH(
            {
                for (int i = 0; i < 5; ++i) {
                    f.post(1, 0x22);
                }
            },
            "more BBs posted since the last doorbell");
}
#endif

TEST(wqe_sq, auto_mode_and_no_register)
{
    sq_fixture f(STRAND_MMIO_MODE_AUTO);
    EXPECT_EQ(STRAND_MMIO_MODE_BF_POST, f.sq.mmio_mode);
    sq_fixture g(STRAND_MMIO_MODE_AUTO, false);
    EXPECT_EQ(STRAND_MMIO_MODE_DB, g.sq.mmio_mode);
    strand_sq_ring(&g.sq, g.post(1, 0x12), 1);
    EXPECT_EQ(htobe32(1), g.dbrec[MLX5_SND_DBR]);
    EXPECT_EQ(0u, strand_sq_bf_offset(&g.sq)); /* no register, no halves */
}

/* The halves belong to the register (spec section 9): two send queues that
 * ring one register alternate them between them, whichever rings (each
 * starting at half 0 of its own, the second queue's first doorbell would
 * go to the half the first one's just went to). */
TEST(wqe_sq, queues_of_one_register_alternate_its_halves)
{
    sq_fixture a(STRAND_MMIO_MODE_DB);
    sq_fixture b(STRAND_MMIO_MODE_DB);
    b.dv.bf.reg = a.bf;
    strand_sq_init(&b.sq, &b.dv, 0xabd, STRAND_MMIO_MODE_DB, &a.reg);
    struct mlx5_wqe_ctrl_seg *c = a.post(1, 0x11);
    strand_sq_ring(&a.sq, c, 1);
    EXPECT_EQ(bytes(c, 8), bytes(a.bf, 8));
    c = b.post(1, 0x22);
    strand_sq_ring(&b.sq, c, 1);
    EXPECT_EQ(bytes(c, 8), bytes(a.bf + 256, 8)) << "b wrote a's half";
    c = a.post(1, 0x33);
    strand_sq_ring(&a.sq, c, 1);
    EXPECT_EQ(bytes(c, 8), bytes(a.bf, 8));
    EXPECT_EQ(256u, strand_sq_bf_offset(&b.sq));
}

/* bf_post copies a WQE only when it is the only one since the last
 * doorbell (rdma-core's rule): with two posted, the device must read both
 * from the queue, and the doorbell is a plain one. */
TEST(wqe_sq, bf_post_copies_only_a_single_new_wqe)
{
    sq_fixture f(STRAND_MMIO_MODE_BF_POST);
    f.post(1, 0x11);
    struct mlx5_wqe_ctrl_seg *c = f.post(1, 0x22);
    strand_sq_ring(&f.sq, c, 1);
    EXPECT_EQ(bytes(c, 8), bytes(f.bf, 8));
    EXPECT_EQ(std::vector<uint8_t>(56, 0), bytes(f.bf + 8, 56))
            << "a BlueFlame copy of the last of two new WQEs";
    c = f.post(1, 0x33);
    strand_sq_ring(&f.sq, c, 1);
    EXPECT_EQ(bytes(c, 64), bytes(f.bf + 256, 64)); /* one: copied */
}

/* The trace line of a WQE says what its bytes say. */
TEST(wqe_dump, write_with_av_raddr_and_inline_data)
{
    alignas(64) uint8_t sq[256];
    memset(sq, 0, sizeof(sq));
    auto *ctrl = reinterpret_cast<struct mlx5_wqe_ctrl_seg *>(sq);
    strand_set_av_base(reinterpret_cast<struct mlx5_wqe_av *>(ctrl + 1),
                       0x1ee7a330, 0x1234, 7);
    strand_set_raddr_seg(reinterpret_cast<struct mlx5_wqe_raddr_seg *>(sq + 32),
                         0x7f0000001000ull, 0xabcd);
    const uint64_t v   = 5;
    unsigned       ids = strand_set_inline_hdr_data(sq + 48, nullptr, 0, &v, 8);
    strand_set_ctrl_seg(ctrl, 0, 17, MLX5_OPCODE_RDMA_WRITE, 0x2002, 3 + ids,
                        MLX5_WQE_CTRL_CQ_UPDATE, 0);
    strand_set_ctrl_stream(ctrl, 3);
    char buf[256];
    EXPECT_STREQ("RDMA_WRITE idx 17 qp 0x2002 ds 4 -s- stream 3 "
                 "[dct 0x1234 lid 7] [va 0x7f0000001000 rkey 0xabcd] "
                 "[inline 8]",
                 strand_wqe_dump(ctrl, sq, sq + sizeof(sq), 1, buf,
                                 sizeof(buf)));
}

TEST(wqe_dump, send_with_a_data_segment_across_the_wrap_and_a_short_buffer)
{
    alignas(64) uint8_t sq[128];
    memset(sq, 0, sizeof(sq));
    auto *ctrl = reinterpret_cast<struct mlx5_wqe_ctrl_seg *>(sq + 64);
    strand_set_av_base(reinterpret_cast<struct mlx5_wqe_av *>(ctrl + 1),
                       0x1ee7a330, 0x99, 3);
    /* ctrl + AV fill 32 bytes, two data segments: the second wraps */
    strand_set_data_seg(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq + 96),
                        0x1000, 64, 0x11);
    strand_set_data_seg(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq + 112),
                        0x2000, 32, 0x22);
    strand_set_data_seg(reinterpret_cast<struct mlx5_wqe_data_seg *>(sq),
                        0x3000, 16, 0x33);
    strand_set_ctrl_seg(ctrl, 0, 1, MLX5_OPCODE_SEND, 0x10, 5,
                        MLX5_WQE_CTRL_SOLICITED | 0x80, 0);
    char buf[256];
    EXPECT_STREQ("SEND idx 1 qp 0x10 ds 5 f-e [dct 0x99 lid 3] "
                 "[va 0x1000 len 64 lkey 0x11] [va 0x2000 len 32 lkey 0x22] "
                 "[va 0x3000 len 16 lkey 0x33]",
                 strand_wqe_dump(ctrl, sq, sq + sizeof(sq), 1, buf,
                                 sizeof(buf)));
    char small[12];
    EXPECT_STREQ("SEND idx 1 ", strand_wqe_dump(ctrl, sq, sq + sizeof(sq), 1,
                                                small, sizeof(small)));
}

TEST(wqe_doorbell, rq_and_srq_records)
{
    __be32 dbrec[2] = {0, htobe32(77)};
    strand_rq_ring_doorbell(dbrec, 0x12345);
    EXPECT_EQ(htobe32(0x2345), dbrec[MLX5_RCV_DBR]);
    EXPECT_EQ(htobe32(77), dbrec[MLX5_SND_DBR]);
    __be32 srq_db[1] = {0};
    strand_srq_ring_doorbell(srq_db, 0xfffe);
    EXPECT_EQ(htobe32(0xfffe), srq_db[0]);
}

/* ---------------------------------------------------------------- CQE */

namespace {

/* The device's side: write CQE at producer index pi with owner (pi/cnt)&1. */
void dev_write_cqe(struct mlx5_cqe64 *ring, uint32_t cnt, uint32_t pi,
                   uint8_t opcode)
{
    struct mlx5_cqe64 *cqe = &ring[pi & (cnt - 1)];
    memset(cqe, 0, sizeof(*cqe));
    cqe->wqe_counter = htobe16((uint16_t)pi);
    cqe->op_own      = (uint8_t)((opcode << 4) | ((pi / cnt) & 1));
}

} // namespace

TEST(wqe_cqe, ownership_rule_across_wrap)
{
    const uint32_t    cnt = 4;
    struct mlx5_cqe64 ring[cnt];
    for (uint32_t i = 0; i < cnt; ++i) {
        memset(&ring[i], 0, sizeof(ring[i]));
        ring[i].op_own = 0xf0; /* INVALID, owner 0 */
    }
    for (uint32_t ci = 0; ci < cnt; ++ci) {
        EXPECT_EQ(nullptr, strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, ci))
                << ci;
    }
    /* first pass: owner 0 */
    for (uint32_t pi = 0; pi < cnt; ++pi) {
        dev_write_cqe(ring, cnt, pi, MLX5_CQE_REQ);
    }
    for (uint32_t ci = 0; ci < cnt; ++ci) {
        ASSERT_EQ(&ring[ci], strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, ci))
                << ci;
    }
    /* ci = 4 looks at slot 0 again, which still has owner 0: not ours */
    EXPECT_EQ(nullptr, strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, cnt));
    EXPECT_EQ(nullptr, strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, cnt + 1));
    /* second pass writes owner 1 */
    dev_write_cqe(ring, cnt, cnt, MLX5_CQE_RESP_SEND);
    struct mlx5_cqe64 *cqe = strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64,
                                            cnt);
    ASSERT_EQ(&ring[0], cqe);
    EXPECT_EQ(MLX5_CQE_RESP_SEND, strand_cqe_opcode(cqe));
    EXPECT_EQ(cnt, strand_cqe_wqe_counter(cqe));
    EXPECT_EQ(nullptr, strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, cnt + 1));
    /* third pass (ci 8..11) expects owner 0 again */
    dev_write_cqe(ring, cnt, 2 * cnt, MLX5_CQE_REQ);
    EXPECT_EQ(&ring[0],
              strand_cqe_get(ring, cnt, STRAND_CQE_SHIFT_64, 2 * cnt));
}

TEST(wqe_cqe, invalid_opcode_is_never_software_owned)
{
    struct mlx5_cqe64 ring[2];
    memset(ring, 0, sizeof(ring));
    ring[0].op_own = 0xf0;
    ring[1].op_own = 0xf1;
    EXPECT_EQ(nullptr, strand_cqe_get(ring, 2, STRAND_CQE_SHIFT_64, 0));
    EXPECT_EQ(nullptr, strand_cqe_get(ring, 2, STRAND_CQE_SHIFT_64, 3));
}

TEST(wqe_cqe, field_extractors_at_spec_offsets)
{
    uint8_t raw[64];
    memset(raw, 0, sizeof(raw));
    const uint8_t uidx[4] = {0xff, 0x12, 0x34, 0x56}; /* @32 */
    memcpy(raw + 32, uidx, 4);
    const uint8_t imm[4] = {0xde, 0xad, 0xbe, 0xef}; /* @36 */
    memcpy(raw + 36, imm, 4);
    const uint8_t bc[4] = {0x00, 0x01, 0x00, 0x02}; /* @44 */
    memcpy(raw + 44, bc, 4);
    raw[54]              = 0x99;                     /* vendor syndrome */
    raw[55]              = 0x13;                     /* syndrome */
    const uint8_t sop[4] = {0x0a, 0xab, 0xcd, 0xef}; /* @56 */
    memcpy(raw + 56, sop, 4);
    raw[60]   = 0xbe; /* wqe_counter */
    raw[61]   = 0xef;
    raw[63]   = (MLX5_CQE_REQ_ERR << 4) | 0x2 | 0x1;
    auto *cqe = reinterpret_cast<struct mlx5_cqe64 *>(raw);

    EXPECT_EQ(MLX5_CQE_REQ_ERR, strand_cqe_opcode(cqe));
    EXPECT_TRUE(strand_cqe_is_error(cqe));
    EXPECT_EQ(1, strand_cqe_se(cqe));
    EXPECT_EQ(0x13, strand_cqe_syndrome(cqe));
    EXPECT_EQ(0x99, strand_cqe_vendor_syndrome(cqe));
    EXPECT_EQ(0xbeef, strand_cqe_wqe_counter(cqe));
    EXPECT_EQ(0x10002u, strand_cqe_byte_cnt(cqe));
    EXPECT_EQ(0xabcdefu, strand_cqe_qpn(cqe));
    EXPECT_EQ(0x0a, strand_cqe_wqe_opcode(cqe));
    EXPECT_EQ(0x123456u, strand_cqe_user_index(cqe));
    EXPECT_EQ(htobe32(0xdeadbeef), strand_cqe_imm(cqe));
}

TEST(wqe_cqe, consumer_doorbell_is_24_bits_be)
{
    __be32 dbrec[2] = {0, htobe32(0x5a5a)};
    strand_cq_update_ci(dbrec, 0x1234567);
    EXPECT_EQ(htobe32(0x234567), dbrec[0]);
    EXPECT_EQ(htobe32(0x5a5a), dbrec[1]);
}

/* ------------------------------------------------------------ CQ cursor */
/* A ring of cnt slots of 1 << shift bytes, marked hardware-owned; "the
 * device" writes CQE ci (owner bit of its pass, opcode REQ, the low byte
 * of ci in wqe_counter). */
struct test_cq {
    test_cq(uint32_t cnt, unsigned shift)
        : cnt(cnt), shift(shift), buf((size_t)cnt << shift)
    {
        strand_cq_mark_hw_owned(buf.data(), cnt, 1u << shift);
    }
    void complete(uint32_t ci)
    {
        struct mlx5_cqe64 *cqe = strand_cqe_at(buf.data(), cnt, shift, ci);
        cqe->wqe_counter       = htobe16((uint16_t)ci);
        cqe->op_own            = (MLX5_CQE_REQ << 4) | !!(ci & cnt);
    }
    uint32_t             cnt;
    unsigned             shift;
    std::vector<uint8_t> buf;
};

/* the cursor finds exactly the CQEs the device wrote, in order, across
 * passes (the owner bit flips at each wrap), says where each run of 4
 * starts, and stops at the first slot the device has not written; the
 * device is never more than the ring ahead */
static void walk_cq_cursor(unsigned shift)
{
    test_cq            cq(8, shift);
    strand_cq_cursor_t cur;
    struct mlx5_cqe64 *cqe;
    uint32_t           ci = 5, written = 5, n;
    uint8_t            op_own;

    strand_cq_cursor_init(&cur, cq.buf.data(), cq.cnt, shift, ci, 4);
    for (uint32_t burst : {0u, 8u, 3u, 8u, 5u}) {
        for (n = 0; n < burst; ++n) {
            cq.complete(written++);
        }
        while ((cqe = strand_cq_cursor_get(&cur, &op_own)) != NULL) {
            ASSERT_EQ(strand_cqe_at(cq.buf.data(), cq.cnt, shift, ci), cqe);
            EXPECT_EQ((uint16_t)ci, be16toh(cqe->wqe_counter));
            EXPECT_EQ(cqe->op_own, op_own);
            ++ci;
            EXPECT_EQ((ci % 4) == 0, strand_cq_cursor_step(&cur) != 0) << ci;
            ASSERT_LE(ci, written);
        }
        EXPECT_EQ(written, ci);
    }
    EXPECT_EQ(29u, ci); /* three passes and more */
}

TEST(cqe_cursor, walks_passes_and_runs_64)
{
    walk_cq_cursor(6);
}
TEST(cqe_cursor, walks_passes_and_runs_128)
{
    walk_cq_cursor(7);
}

/* a run longer than the ring is the ring: a step tells every wrap */
TEST(cqe_cursor, run_capped_at_the_ring)
{
    test_cq            cq(4, 6);
    strand_cq_cursor_t cur;
    uint8_t            op_own;

    strand_cq_cursor_init(&cur, cq.buf.data(), cq.cnt, 6, 0, 64);
    for (uint32_t ci = 0; ci < 10; ++ci) {
        EXPECT_EQ(nullptr, strand_cq_cursor_get(&cur, &op_own)) << ci;
        cq.complete(ci);
        ASSERT_NE(nullptr, strand_cq_cursor_get(&cur, &op_own)) << ci;
        EXPECT_EQ(((ci + 1) % 4) == 0, strand_cq_cursor_step(&cur) != 0);
    }
}
