/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Folding the T10-DIF CRC16 with carry-less multiplication (sim_crc_fold.h).
 *
 * The CRC is not reflected, so a chunk of 16 bytes is read big-endian
 * into a 128-bit polynomial X (bit i: the coefficient of x^i; the first
 * byte's top bit is x^127), and the running CRC goes into the top 16 bits
 * of the first chunk (the CRC of crc followed by D is the CRC from 0 of D
 * with crc XORed into its first two bytes). Moving X forward over d more
 * bits is X * x^d; with X = H * x^64 + L that is congruent, modulo the
 * polynomial P, to H * (x^(d+64) mod P) + L * (x^d mod P): two carry-less
 * products of a 64-bit half and a 16-bit constant, 80 bits at most, so
 * the result is again a 128-bit value congruent to what it stands for.
 * Four accumulators take 64 bytes a round (d = 512) to keep the
 * multiplier busy, then fold into one (d = 384, 256, 128), and single
 * chunks follow (d = 128). What is left is congruent to the data: its
 * CRC16 (the table's, over 16 bytes) is the data's.
 */
#include "sim_crc_fold.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

/* the guard's polynomial, x^16 + 0x8BB7 */
#define SIM_CRC16_POLY 0x18BB7u

/* [i]: x^(128 * (i + 1)) mod P in the low half, x^(128 * (i + 1) + 64)
 * mod P in the high half (d = 128, 256, 384, 512) */
static uint64_t       sim_crc16_fold_k[4][2];
static int            sim_crc16_fold_cpu;
static pthread_once_t sim_crc16_fold_once = PTHREAD_ONCE_INIT;

/* x^n mod P */
static uint64_t sim_crc16_xpow(unsigned n)
{
    uint32_t r = 1;

    while (n-- > 0) {
        r <<= 1;
        if (r & 0x10000u) {
            r ^= SIM_CRC16_POLY;
        }
    }
    return r;
}

static void sim_crc16_fold_init(void)
{
    unsigned i;

    for (i = 0; i < 4; ++i) {
        sim_crc16_fold_k[i][0] = sim_crc16_xpow(128 * (i + 1));
        sim_crc16_fold_k[i][1] = sim_crc16_xpow(128 * (i + 1) + 64);
    }
    sim_crc16_fold_cpu = __builtin_cpu_supports("pclmul") &&
                         __builtin_cpu_supports("ssse3");
}

bool sim_crc16_fold_usable(void)
{
    pthread_once(&sim_crc16_fold_once, sim_crc16_fold_init);
    return sim_crc16_fold_cpu;
}

/* 16 bytes at p as a polynomial: byte 0 on top */
__attribute__((target("pclmul,ssse3"))) static inline __m128i
sim_crc16_load(const uint8_t *p, __m128i swap)
{
    return _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p), swap);
}

/* x moved forward over d bits (k: the constants of d) */
__attribute__((target("pclmul,ssse3"))) static inline __m128i
sim_crc16_fold1(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                         _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,ssse3"))) static inline __m128i
sim_crc16_k(unsigned i)
{
    return _mm_set_epi64x((long long)sim_crc16_fold_k[i][1],
                          (long long)sim_crc16_fold_k[i][0]);
}

__attribute__((target("pclmul,ssse3"))) size_t
sim_crc16_t10_fold(uint16_t crc, const uint8_t *p, size_t len, uint8_t out[16])
{
    const __m128i swap = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
                                       3, 2, 1, 0);
    __m128i       x0, x1, x2, x3, k;
    size_t        n = len & ~(size_t)15, i = 16;

    x0 = _mm_xor_si128(sim_crc16_load(p, swap),
                       _mm_set_epi64x((long long)((uint64_t)crc << 48), 0));
    if (n >= 128) {
        x1 = sim_crc16_load(p + 16, swap);
        x2 = sim_crc16_load(p + 32, swap);
        x3 = sim_crc16_load(p + 48, swap);
        k  = sim_crc16_k(3);
        for (i = 64; i + 64 <= n; i += 64) {
            x0 = _mm_xor_si128(sim_crc16_fold1(x0, k),
                               sim_crc16_load(p + i, swap));
            x1 = _mm_xor_si128(sim_crc16_fold1(x1, k),
                               sim_crc16_load(p + i + 16, swap));
            x2 = _mm_xor_si128(sim_crc16_fold1(x2, k),
                               sim_crc16_load(p + i + 32, swap));
            x3 = _mm_xor_si128(sim_crc16_fold1(x3, k),
                               sim_crc16_load(p + i + 48, swap));
        }
        x0 = _mm_xor_si128(_mm_xor_si128(sim_crc16_fold1(x0, sim_crc16_k(2)),
                                         sim_crc16_fold1(x1, sim_crc16_k(1))),
                           _mm_xor_si128(sim_crc16_fold1(x2, sim_crc16_k(0)),
                                         x3));
    }
    k = sim_crc16_k(0);
    for (; i + 16 <= n; i += 16) {
        x0 = _mm_xor_si128(sim_crc16_fold1(x0, k), sim_crc16_load(p + i, swap));
    }
    _mm_storeu_si128((__m128i *)out, _mm_shuffle_epi8(x0, swap));
    return i;
}

#else /* no carry-less multiply here: the table does it all */

bool sim_crc16_fold_usable(void)
{
    return false;
}

size_t
sim_crc16_t10_fold(uint16_t crc, const uint8_t *p, size_t len, uint8_t out[16])
{
    (void)crc;
    (void)p;
    (void)len;
    (void)out;
    return 0;
}

#endif
