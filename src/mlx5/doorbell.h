/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send doorbell (spec section 1): make the WQEs visible, publish the
 * producer index in the doorbell record, then write the first 8 bytes of
 * the last WQE's ctrl segment to the BlueFlame/doorbell register and flip
 * to the other half of the BF buffer.
 */
#ifndef STRAND_MLX5_DOORBELL_H_
#define STRAND_MLX5_DOORBELL_H_

#include "mlx5/barrier.h"

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

/* Steps 1-3: the WQE stores before the doorbell record, the producer
 * index (BBs), the record before a register write (WC memory). */
static inline void strand_sq_doorbell_record(__be32 *dbrec, uint32_t cur_post)
{
    strand_dma_wmb();
    *(volatile __be32 *)&dbrec[MLX5_SND_DBR] = htobe32(cur_post & 0xffff);
    strand_mmio_wmb();
}

/* Step 4 as a plain doorbell: one 8-byte store of ctrl bytes 0-7 (head,
 * as stored) to the register, flushed. By value: a post path that takes
 * no local's address can end in a jump (the software device's kick). */
static inline void strand_sq_doorbell_head(void *reg, uint64_t head)
{
    *(volatile uint64_t *)reg = head;
    strand_mmio_wmb();
}

/* The same from the ctrl segment's bytes. */
static inline void
strand_sq_doorbell_mmio8(void *bf_reg, uint32_t bf_offset, const void *ctrl)
{
    uint64_t ctrl8;

    memcpy(&ctrl8, ctrl, sizeof(ctrl8));
    strand_sq_doorbell_head((uint8_t *)bf_reg + bf_offset, ctrl8);
}

/* Receive queue doorbell record: [MLX5_RCV_DBR] = BE32(head & 0xffff). */
static inline void strand_rq_ring_doorbell(__be32 *dbrec, uint32_t rq_head)
{
    strand_dma_wmb();
    *(volatile __be32 *)&dbrec[MLX5_RCV_DBR] = htobe32(rq_head & 0xffff);
}

/* SRQ doorbell record: [0] = BE32(16-bit count of WQEs ever posted). */
static inline void strand_srq_ring_doorbell(__be32 *dbrec, uint16_t counter)
{
    strand_dma_wmb();
    *(volatile __be32 *)&dbrec[0] = htobe32(counter);
}

#endif
