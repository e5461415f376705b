/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checksums of block signatures (mlx5dv_wr_set_mkey_sig_block(3)),
 * computed incrementally so a block can be checked as its bytes arrive:
 *   CRC32    IEEE 802.3 / FC-PH polynomial 0x04C11DB7, reflected
 *   CRC32C   Castagnoli polynomial 0x1EDC6F41, reflected (iSCSI)
 *   CRC16    T10-DIF guard, polynomial 0x8BB7, not reflected
 *   IP csum  T10-DIF guard alternative: 16-bit ones' complement sum
 * The CRC32s start from the seed and end XORed with 0xffffffff; the T10
 * CRC16 starts from the seed and has no final XOR (docs/software-device.md,
 * "Signature mkeys").
 */
#ifndef SIM_SIM_CRC_H_
#define SIM_SIM_CRC_H_

#include <stddef.h>
#include <stdint.h>

/* Running values: feed bytes with the _update calls, then _final. */
uint32_t sim_crc32c_update(uint32_t crc, const void *data, size_t len);
uint32_t sim_crc32_update(uint32_t crc, const void *data, size_t len);
uint16_t sim_crc16_t10_update(uint16_t crc, const void *data, size_t len);

/* Tests: 0 computes every checksum from the tables alone, as on a CPU
 * without the instructions; 1 goes back to what the CPU has. */
void sim_crc_use_instructions(int on);

static inline uint32_t sim_crc32_final(uint32_t crc)
{
    return crc ^ 0xffffffffu;
}

/* IP checksum: a 32-bit running sum of big-endian 16-bit words; `pos` is
 * the byte offset of `data` in the block (an odd offset continues a word). */
uint32_t
sim_csum_update(uint32_t sum, const void *data, size_t len, size_t pos);
uint16_t sim_csum_final(uint32_t sum);

#endif
