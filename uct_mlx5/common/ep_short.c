/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shapes of the short operations' WQEs (ep_short.h): what of a WQE
 * follows from the operation's length alone, written for every length
 * when the interface's entry points are chosen.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ep_short.h"

/* The shape of a WQE of ctrl and address vector (av_ds units), seg_bytes
 * of segments before the inline one, and `data` bytes inline. */
static void strand_short_shape_set(strand_short_shape_t *shape, uint8_t opcode,
                                   unsigned av_ds, unsigned seg_bytes,
                                   uint32_t data)
{
    unsigned ds = 1 + av_ds + (seg_bytes / STRAND_WQE_DS) +
                  strand_inline_ds(data);

    shape->head = strand_ctrl_head_op(0, opcode, ds);
    shape->inl  = htobe32(data | MLX5_INLINE_SEG);
    shape->bbs  = strand_ds_to_bbs(ds);
}

void strand_ep_short_shapes(strand_iface_t *iface, unsigned av_ds)
{
    size_t length;

    ucs_assert(iface->config.max_inline <= STRAND_MAX_INLINE);
    for (length = 0; length <= STRAND_MAX_INLINE; ++length) {
        iface->am_shape[length].bbs  = STRAND_SHORT_NONE;
        iface->put_shape[length].bbs = STRAND_SHORT_NONE;
    }
    for (length = 0; length <= iface->config.am_short_payload; ++length) {
        strand_short_shape_set(&iface->am_shape[length], MLX5_OPCODE_SEND,
                               av_ds, 0,
                               iface->config.am_tmh + STRAND_AM_HDR_SIZE +
                                       sizeof(uint64_t) + length);
    }
    /* from 1 byte: no data is no inline segment */
    for (length = 1; length <= iface->config.max_inline; ++length) {
        strand_short_shape_set(&iface->put_shape[length],
                               MLX5_OPCODE_RDMA_WRITE, av_ds,
                               sizeof(struct mlx5_wqe_raddr_seg), length);
    }
}
