/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The T10-DIF CRC16 with carry-less multiplication (sim_crc_fold.c), for
 * sim_crc.c: the guard's polynomial has no instruction of its own, so
 * long runs are folded 16 bytes at a time with PCLMULQDQ down to one
 * 16-byte remainder, which the table finishes.
 */
#ifndef SIM_SIM_CRC_FOLD_H_
#define SIM_SIM_CRC_FOLD_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this CPU can fold (PCLMULQDQ and SSSE3); the constants are made
 * on the first call. */
bool sim_crc16_fold_usable(void);

/* The whole 16-byte chunks of [p, p + len) (len >= 16) after a running
 * CRC16 `crc`, folded into out: 16 bytes whose CRC16 from 0 is the CRC16
 * of crc followed by the chunks. Returns the bytes taken (a multiple of
 * 16, at most len). */
size_t
sim_crc16_t10_fold(uint16_t crc, const uint8_t *p, size_t len, uint8_t out[16]);

#endif
