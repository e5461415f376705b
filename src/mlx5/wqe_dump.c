/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send WQE in one line, for trace logs (wqe_dump.h).
 */
#include "mlx5/wqe_dump.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static void strand_wqe_dump_append(char **p, char *end, const char *fmt, ...)
{
    va_list ap;
    int     n;

    if (*p >= end) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(*p, end - *p, fmt, ap);
    va_end(ap);
    *p += (n < 0) ? 0 : ((n < end - *p) ? n : end - *p);
}

const char *strand_wqe_dump(const struct mlx5_wqe_ctrl_seg *ctrl, void *sq_buf,
                            void *sq_end, unsigned av_ds, char *buf,
                            size_t size)
{
    uint8_t                           opcode = strand_ctrl_opcode(ctrl);
    unsigned                          ds = strand_ctrl_ds(ctrl), unit = 1;
    char                             *p = buf, *end = buf + size;
    const struct mlx5_wqe_av         *av;
    const struct mlx5_wqe_raddr_seg  *raddr;
    const struct mlx5_wqe_atomic_seg *atomic;
    const struct mlx5_wqe_data_seg   *dseg;
    uint32_t                          bc;
    void                             *seg;

    if (size == 0) {
        return buf;
    }
    buf[0] = '\0';
    strand_wqe_dump_append(
            &p, end, "%s idx %u qp 0x%x ds %u %c%c%c",
            strand_wqe_opcode_str(opcode), strand_ctrl_wqe_idx(ctrl),
            strand_ctrl_qpn(ctrl), ds, (ctrl->fm_ce_se & 0xe0) ? 'f' : '-',
            (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) ? 's' : '-',
            (ctrl->fm_ce_se & MLX5_WQE_CTRL_SOLICITED) ? 'e' : '-');
    if (strand_ctrl_stream(ctrl) != 0) {
        strand_wqe_dump_append(&p, end, " stream %u", strand_ctrl_stream(ctrl));
    }
    if ((opcode == MLX5_OPCODE_NOP) || (ds <= 1)) {
        return buf;
    }
    seg = strand_sq_next((void *)(ctrl + 1), 0, sq_buf, sq_end);
    if ((av_ds > 0) && (unit + av_ds <= ds)) {
        av = (const struct mlx5_wqe_av *)seg;
        strand_wqe_dump_append(&p, end, " [dct 0x%x lid %u]",
                               be32toh(av->dqp_dct) & 0xffffff,
                               be16toh(av->rlid));
        seg = strand_sq_next(seg, av_ds * STRAND_WQE_DS, sq_buf, sq_end);
        unit += av_ds;
    }
    if ((unit < ds) && ((opcode == MLX5_OPCODE_RDMA_WRITE) ||
                        (opcode == MLX5_OPCODE_RDMA_WRITE_IMM) ||
                        (opcode == MLX5_OPCODE_RDMA_READ) ||
                        (opcode == MLX5_OPCODE_ATOMIC_CS) ||
                        (opcode == MLX5_OPCODE_ATOMIC_FA) ||
                        (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) ||
                        (opcode == MLX5_OPCODE_ATOMIC_MASKED_FA))) {
        raddr = (const struct mlx5_wqe_raddr_seg *)seg;
        strand_wqe_dump_append(&p, end, " [va 0x%" PRIx64 " rkey 0x%x]",
                               (uint64_t)be64toh(raddr->raddr),
                               be32toh(raddr->rkey));
        seg = strand_sq_next(seg, STRAND_WQE_DS, sq_buf, sq_end);
        ++unit;
    }
    if ((unit < ds) && ((opcode == MLX5_OPCODE_ATOMIC_CS) ||
                        (opcode == MLX5_OPCODE_ATOMIC_FA))) {
        atomic = (const struct mlx5_wqe_atomic_seg *)seg;
        strand_wqe_dump_append(&p, end,
                               " [swap_add 0x%" PRIx64 " compare 0x%" PRIx64
                               "]",
                               (uint64_t)be64toh(atomic->swap_add),
                               (uint64_t)be64toh(atomic->compare));
        seg = strand_sq_next(seg, STRAND_WQE_DS, sq_buf, sq_end);
        ++unit;
    }
    if ((unit + 1 < ds) && ((opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) ||
                            (opcode == MLX5_OPCODE_ATOMIC_MASKED_FA))) {
        /* operands and masks in one or two segments, then the data */
        strand_wqe_dump_append(&p, end, " [masked operands]");
        while (unit + 1 < ds) {
            seg = strand_sq_next(seg, STRAND_WQE_DS, sq_buf, sq_end);
            ++unit;
        }
    }
    while (unit < ds) {
        dseg = (const struct mlx5_wqe_data_seg *)seg;
        bc   = be32toh(dseg->byte_count);
        if (bc & MLX5_INLINE_SEG) {
            strand_wqe_dump_append(&p, end, " [inline %u]",
                                   bc & ~MLX5_INLINE_SEG);
            break; /* inline data fill the rest */
        }
        strand_wqe_dump_append(&p, end, " [va 0x%" PRIx64 " len %u lkey 0x%x]",
                               (uint64_t)be64toh(dseg->addr), bc,
                               be32toh(dseg->lkey));
        seg = strand_sq_next(seg, STRAND_WQE_DS, sq_buf, sq_end);
        ++unit;
    }
    return buf;
}
