/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checksums of block signatures (sim_crc.h). Table-driven, with the SSE4.2
 * crc32 instruction for CRC32C where the CPU has it: a NIC checks blocks at
 * line rate, and the device should not make integrity look expensive.
 */
#include "sim_crc.h"

#include <pthread.h>
#include <string.h>

static uint32_t sim_crc32c_table[256];
static uint32_t sim_crc32_table[256];
/* [k][b]: the CRC16 of byte b followed by k zero bytes, from 0: eight
 * bytes are folded in with eight lookups (slicing-by-8), since the
 * guard's polynomial has no instruction to do it */
static uint16_t sim_crc16_table[8][256];
static int      sim_crc_have_sse42;
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
        sim_crc32c_table[i] = c32c;
        sim_crc32_table[i]  = c32;
        c16 = (uint16_t)(i << 8);
        for (j = 0; j < 8; ++j) {
            c16 = (uint16_t)((c16 & 0x8000) ? (c16 << 1) ^ 0x8BB7 : c16 << 1);
        }
        sim_crc16_table[0][i] = c16;
    }
    for (j = 1; j < 8; ++j) {
        for (i = 0; i < 256; ++i) {
            c16 = sim_crc16_table[j - 1][i];
            sim_crc16_table[j][i] = (uint16_t)((c16 << 8) ^
                                               sim_crc16_table[0][c16 >> 8]);
        }
    }
#if defined(__x86_64__)
    sim_crc_have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t sim_crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc, v;

    for (; len >= 8; len -= 8, p += 8) {
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

uint32_t sim_crc32c_update(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&sim_crc_once, sim_crc_init);
#if defined(__x86_64__)
    if (sim_crc_have_sse42) {
        return sim_crc32c_sse42(crc, p, len);
    }
#endif
    for (; len > 0; --len, ++p) {
        crc = sim_crc32c_table[(crc ^ *p) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

uint32_t sim_crc32_update(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&sim_crc_once, sim_crc_init);
    for (; len > 0; --len, ++p) {
        crc = sim_crc32_table[(crc ^ *p) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

uint16_t sim_crc16_t10_update(uint16_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&sim_crc_once, sim_crc_init);
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

uint32_t sim_csum_update(uint32_t sum, const void *data, size_t len,
                         size_t pos)
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
