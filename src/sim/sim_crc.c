/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checksums of block signatures (sim_crc.h). Table-driven, with the SSE4.2
 * crc32 instruction for CRC32C and carry-less multiplication for the T10
 * CRC16 (sim_crc_fold.c) where the CPU has them: a NIC checks blocks at
 * line rate, and the device should not make integrity look expensive.
 */
#include "sim_crc.h"
#include "sim_crc_fold.h"

#include <endian.h>
#include <pthread.h>
#include <string.h>
#include <isa-l/crc.h>

/* [k][b]: the (reflected) CRC32C / CRC32 register of byte b followed by k
 * zero bytes: eight bytes at a time from eight lookups (slicing-by-8)
 * where the CPU has no instruction for them */
static uint32_t sim_crc32c_table[8][256];
static uint32_t sim_crc32_table[8][256];
/* [k][b]: the CRC16 of byte b followed by k zero bytes, from 0: eight
 * bytes are folded in with eight lookups (slicing-by-8), since the
 * guard's polynomial has no instruction to do it */
static uint16_t sim_crc16_table[8][256];
static int      sim_crc_have_sse42;
/* the T10-DIF CRC16 of this many bytes and more is folded with carry-less
 * multiplication where the CPU has it (sim_crc_fold.c): below, the table's
 * two steps that end a fold cost as much as they save */
#define SIM_CRC16_FOLD_MIN 64
static int sim_crc_have_clmul;
/*
 * Three streams at once. The crc32 instruction takes 3 cycles and can
 * start one a cycle: a single chain of them runs at a third of the
 * instruction's rate. A run of 3 * n bytes is taken as three chunks whose
 * CRCs are computed interleaved (the second and third from 0), then
 * joined: the CRC of a chunk followed by n more bytes is its register
 * "shifted" over n zero bytes (a linear map of the 32-bit register, four
 * table lookups, sim_crc32c_shift) XORed with the CRC of those bytes.
 * Two chunk sizes: SIM_CRC_LONG for long buffers, SIM_CRC_SHORT for a
 * 512-byte signature block (3 * 168 = 504 of its bytes).
 */
#define SIM_CRC_LONG  2048
#define SIM_CRC_SHORT 168
static uint32_t       sim_crc32c_shift_long[4][256];
static uint32_t       sim_crc32c_shift_short[4][256];
static void           sim_crc32c_shift_init(uint32_t table[4][256], size_t n);
static pthread_once_t sim_crc_once = PTHREAD_ONCE_INIT;

static void sim_crc_init(void)
{
    uint32_t i, j, c32c, c32;
    uint16_t c16;

    for (i = 0; i < 256; ++i) {
        c32c = c32 = i;
        for (j = 0; j < 8; ++j) {
            c32c = (c32c >> 1) ^ ((c32c & 1) ? 0x82F63B78u : 0);
            c32  = (c32 >> 1) ^ ((c32 & 1) ? 0xEDB88320u : 0);
        }
        sim_crc32c_table[0][i] = c32c;
        sim_crc32_table[0][i]  = c32;
        c16                    = (uint16_t)(i << 8);
        for (j = 0; j < 8; ++j) {
            c16 = (uint16_t)((c16 & 0x8000) ? (c16 << 1) ^ 0x8BB7 : c16 << 1);
        }
        sim_crc16_table[0][i] = c16;
    }
    for (j = 1; j < 8; ++j) {
        for (i = 0; i < 256; ++i) {
            c16                   = sim_crc16_table[j - 1][i];
            sim_crc16_table[j][i] = (uint16_t)((c16 << 8) ^
                                               sim_crc16_table[0][c16 >> 8]);
        }
    }
    for (j = 1; j < 8; ++j) {
        for (i = 0; i < 256; ++i) {
            c32c                   = sim_crc32c_table[j - 1][i];
            c32                    = sim_crc32_table[j - 1][i];
            sim_crc32c_table[j][i] = (c32c >> 8) ^
                                     sim_crc32c_table[0][c32c & 0xff];
            sim_crc32_table[j][i] = (c32 >> 8) ^ sim_crc32_table[0][c32 & 0xff];
        }
    }
    sim_crc32c_shift_init(sim_crc32c_shift_long, SIM_CRC_LONG);
    sim_crc32c_shift_init(sim_crc32c_shift_short, SIM_CRC_SHORT);
#if defined(__x86_64__)
    sim_crc_have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
    sim_crc_have_clmul = sim_crc16_fold_usable();
}

/* the raw CRC32C register `crc` run over n zero bytes (the table method) */
static uint32_t sim_crc32c_zeros(uint32_t crc, size_t n)
{
    for (; n > 0; --n) {
        crc = sim_crc32c_table[0][crc & 0xff] ^ (crc >> 8);
    }
    return crc;
}

/* table[i][v]: the register (v << 8i) shifted over n zero bytes, from the
 * 32 single bits (the map is linear) */
static void sim_crc32c_shift_init(uint32_t table[4][256], size_t n)
{
    uint32_t bit[32];
    unsigned i, v, j;

    for (j = 0; j < 32; ++j) {
        bit[j] = sim_crc32c_zeros(1u << j, n);
    }
    for (i = 0; i < 4; ++i) {
        for (v = 0; v < 256; ++v) {
            table[i][v] = 0;
            for (j = 0; j < 8; ++j) {
                if (v & (1u << j)) {
                    table[i][v] ^= bit[8 * i + j];
                }
            }
        }
    }
}

static inline uint32_t sim_crc32c_shift(uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^
           table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

#if defined(__x86_64__)
/* 3 * n bytes at p from register crc, n a multiple of 8 */
__attribute__((target("sse4.2"))) static inline uint32_t
sim_crc32c_3way(uint32_t crc, const uint8_t *p, size_t n,
                uint32_t table[4][256])
{
    uint64_t       c0 = crc, c1 = 0, c2 = 0, v0, v1, v2;
    const uint8_t *end = p + n;

    for (; p < end; p += 8) {
        memcpy(&v0, p, sizeof(v0));
        memcpy(&v1, p + n, sizeof(v1));
        memcpy(&v2, p + 2 * n, sizeof(v2));
        c0 = __builtin_ia32_crc32di(c0, v0);
        c1 = __builtin_ia32_crc32di(c1, v1);
        c2 = __builtin_ia32_crc32di(c2, v2);
    }
    crc = sim_crc32c_shift(table, (uint32_t)c0) ^ (uint32_t)c1;
    return sim_crc32c_shift(table, crc) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t
sim_crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c, v;

    for (; len >= 3 * SIM_CRC_LONG;
         len -= 3 * SIM_CRC_LONG, p += 3 * SIM_CRC_LONG) {
        crc = sim_crc32c_3way(crc, p, SIM_CRC_LONG, sim_crc32c_shift_long);
    }
    for (; len >= 3 * SIM_CRC_SHORT;
         len -= 3 * SIM_CRC_SHORT, p += 3 * SIM_CRC_SHORT) {
        crc = sim_crc32c_3way(crc, p, SIM_CRC_SHORT, sim_crc32c_shift_short);
    }
    for (c = crc; len >= 8; len -= 8, p += 8) {
        memcpy(&v, p, sizeof(v));
        c = __builtin_ia32_crc32di(c, v);
    }
    crc = (uint32_t)c;
    for (; len > 0; --len, ++p) {
        crc = __builtin_ia32_crc32qi(crc, *p);
    }
    return crc;
}
#endif

/* A reflected CRC32 from its slicing tables: the register folds into the
 * first four bytes of each eight (read little-endian) */
static uint32_t sim_crc32_slice8(const uint32_t t[8][256], uint32_t crc,
                                 const uint8_t *p, size_t len)
{
    uint64_t v;

    for (; len >= 8; len -= 8, p += 8) {
        memcpy(&v, p, sizeof(v));
        v   = le64toh(v) ^ crc;
        crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
              t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^
              t[2][(v >> 40) & 0xff] ^ t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
    }
    for (; len > 0; --len, ++p) {
        crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

uint32_t sim_crc32c_update(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&sim_crc_once, sim_crc_init);
#if defined(__x86_64__)
    if (sim_crc_have_sse42) {
        return sim_crc32c_sse42(crc, p, len);
    }
#endif
    return sim_crc32_slice8(sim_crc32c_table, crc, p, len);
}

uint32_t sim_crc32_update(uint32_t crc, const void *data, size_t len)
{
    /* ISA-L's crc32_gzip_refl is this CRC (IEEE, reflected, zlib's) with
     * the running value taken and given without its inversion, folded
     * with PCLMULQDQ: 30 times the table's speed, and every datagram
     * between hosts carries one over its whole length, computed by its
     * sender and its receiver */
    return ~crc32_gzip_refl(~crc, data, len);
}

/* slicing-by-8 */
static uint16_t sim_crc16_t10_table(uint16_t crc, const uint8_t *p, size_t len)
{
    /* the running CRC folds into the first two bytes of each eight */
    for (; len >= 8; len -= 8, p += 8) {
        crc = sim_crc16_table[7][p[0] ^ (crc >> 8)] ^
              sim_crc16_table[6][p[1] ^ (crc & 0xff)] ^
              sim_crc16_table[5][p[2]] ^ sim_crc16_table[4][p[3]] ^
              sim_crc16_table[3][p[4]] ^ sim_crc16_table[2][p[5]] ^
              sim_crc16_table[1][p[6]] ^ sim_crc16_table[0][p[7]];
    }
    for (; len > 0; --len, ++p) {
        crc = (uint16_t)((crc << 8) ^
                         sim_crc16_table[0][((crc >> 8) ^ *p) & 0xff]);
    }
    return crc;
}

uint16_t sim_crc16_t10_update(uint16_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint8_t        rest[16];
    size_t         n;

    pthread_once(&sim_crc_once, sim_crc_init);
    if (sim_crc_have_clmul && (len >= SIM_CRC16_FOLD_MIN)) {
        /* folded to 16 bytes congruent to them, which the table ends */
        n   = sim_crc16_t10_fold(crc, p, len, rest);
        crc = sim_crc16_t10_table(0, rest, sizeof(rest));
        p += n;
        len -= n;
    }
    return sim_crc16_t10_table(crc, p, len);
}

void sim_crc_use_instructions(int on)
{
    pthread_once(&sim_crc_once, sim_crc_init);
#if defined(__x86_64__)
    sim_crc_have_sse42 = on && __builtin_cpu_supports("sse4.2");
#endif
    sim_crc_have_clmul = on && sim_crc16_fold_usable();
}

uint32_t sim_csum_update(uint32_t sum, const void *data, size_t len, size_t pos)
{
    const uint8_t *p = data;

    for (; len > 0; --len, ++p, ++pos) {
        sum += (pos & 1) ? *p : ((uint32_t)*p << 8);
        if (sum & 0x80000000u) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    return sum;
}

uint16_t sim_csum_final(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}
