/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The WQE parser (sim_parse.c), and the pieces of it the requester's fast
 * path reads a WQE with (inline here, so that the fast path costs no call
 * more than when both lived in one file).
 */
#ifndef SIM_SIM_PARSE_H_
#define SIM_SIM_PARSE_H_

#include "sim.h"

/* The WQE at BB `bb` parsed into `w`: 0 or a syndrome; on a syndrome
 * w->bbs is still set so the SQ can move past the WQE. */
int sim_parse_wqe(smlx5_qp_t *qp, uint32_t bb, sim_wqe_t *w,
                  smlx5_dc_target_t *dc);

/* The segment at `unit` of the WQE at BB `bb` is an inline segment. */
static inline bool
sim_unit_is_inline(const smlx5_qp_t *qp, uint32_t bb, uint32_t unit)
{
    const struct mlx5_wqe_inl_data_seg *inl = sim_sq_unit(qp, bb, unit);

    return (be32toh(inl->byte_count) & MLX5_INLINE_SEG) != 0;
}

/* The inline segment at `unit`: its bytes stay in the SQ, where the
 * packets take them from. Returns 0 or a syndrome. */
static inline int sim_parse_inline(const smlx5_qp_t *qp, sim_wqe_t *w,
                                   uint32_t unit, uint32_t ds, int access)
{
    const struct mlx5_wqe_inl_data_seg *inl = sim_sq_unit(qp, w->bb, unit);
    uint32_t bc = be32toh(inl->byte_count) & ~MLX5_INLINE_SEG;

    if ((access & IBV_ACCESS_LOCAL_WRITE) || ((4 + bc + 15) / 16 > ds - unit)) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    w->is_inline  = true;
    w->inline_off = (w->bb * 64u + unit * 16u + 4u) &
                    (qp->sq_wqe_cnt * 64u - 1);
    w->length = bc;
    return 0;
}

/* The ctrl segment of the WQE at BB `bb` into the head of `w` (which the
 * caller cleared), its size in 16-byte units into *ds_p. Returns 0 or a
 * syndrome; w->bbs is set either way, so the SQ can move past a malformed
 * WQE. */
static inline int
sim_parse_ctrl(const smlx5_qp_t *qp, uint32_t bb, sim_wqe_t *w, uint32_t *ds_p)
{
    const struct mlx5_wqe_ctrl_seg *ctrl = sim_sq_unit(qp, bb, 0);
    uint32_t opmod_idx_opcode            = be32toh(ctrl->opmod_idx_opcode);
    uint32_t qpn_ds                      = be32toh(ctrl->qpn_ds);
    uint32_t ds                          = qpn_ds & 0x3f;

    w->bb       = bb;
    w->opcode   = opmod_idx_opcode & 0xff;
    w->wqe_idx  = (opmod_idx_opcode >> 8) & 0xffff;
    w->opmod    = opmod_idx_opcode >> 24;
    w->fm_ce_se = ctrl->fm_ce_se;
    w->imm      = ctrl->imm;
    w->stream   = be16toh(ctrl->dci_stream_channel_id);
    w->signaled = (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
    w->fenced   = (ctrl->fm_ce_se & 0xe0) != 0;
    w->bbs      = (ds == 0) ? 1 : (ds * 16 + 63) / 64;
    *ds_p       = ds;

    if ((ds == 0) || ((qpn_ds >> 8) != qp->qpn) || (w->bbs > qp->sq_wqe_cnt)) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    /* a DCI's stream id is one of its channels, 0 .. 2^log_num_concurent
     * - 1 (0 alone without streams): the hardware maps ids onto channels,
     * and one outside the range it was created with is a malformed WQE */
    if ((qp->type == SMLX5_QPT_DCI) &&
        ((w->stream >> qp->log_num_concurent) != 0)) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    return 0;
}

static inline void
sim_parse_raddr(const smlx5_qp_t *qp, sim_wqe_t *w, uint32_t unit)
{
    const struct mlx5_wqe_raddr_seg *raddr = sim_sq_unit(qp, w->bb, unit);

    w->raddr = be64toh(raddr->raddr);
    w->rkey  = be32toh(raddr->rkey);
}

#endif
