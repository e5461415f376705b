/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Verbs-like polling (smlx5_poll_cq): CQEs read back as ibv_wc, as
 * rdma-core's provider reads them. An entry point of the application:
 * a poll that finds nothing runs the device (smlx5_progress), so it
 * stands above the engine, while the CQ itself (sim_cq.c) is written by
 * the stages below it.
 */
#include "sim.h"
#include "sim_rq.h"
#include "sim_sig.h"

#include "mlx5/cqe.h"

#include <string.h>

static enum ibv_wc_status sim_wc_status(uint8_t syndrome)
{
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
        return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
        return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
        return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
        return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:
        return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
        return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
        return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
        return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
        return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
        return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
        return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
        return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
        return IBV_WC_REM_ABORT_ERR;
    default:
        return IBV_WC_GENERAL_ERR;
    }
}

/* Scatter-to-CQE data into a receive WQE's list, as rdma-core's poll
 * copies it (no key checks: the buffers were posted by this process). */
static enum ibv_wc_status sim_wc_copy_to_sges(struct mlx5_wqe_data_seg *seg,
                                              unsigned max, const uint8_t *src,
                                              uint32_t len)
{
    uint32_t n;
    unsigned i;

    for (i = 0; (i < max) && (len > 0); ++i) {
        if (be32toh(seg[i].lkey) == MLX5_INVALID_LKEY) {
            break;
        }
        n = be32toh(seg[i].byte_count);
        n = (n < len) ? n : len;
        memcpy((void *)(uintptr_t)be64toh(seg[i].addr), src, n);
        src += n;
        len -= n;
    }
    return (len > 0) ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

static void
sim_wc_recv(smlx5_qp_t *qp, const struct mlx5_cqe64 *cqe, struct ibv_wc *wc)
{
    uint16_t                  idx = be16toh(cqe->wqe_counter);
    const uint8_t            *inl = strand_cqe_inline_data(cqe);
    struct mlx5_wqe_data_seg *segs;
    unsigned                  max;

    if (qp->srq != NULL) {
        idx &= qp->srq->wqe_cnt - 1;
        wc->wr_id = qp->srq->wrid[idx];
        segs      = (void *)(qp->srq->buf + (size_t)idx * qp->srq->stride +
                        sizeof(struct mlx5_wqe_srq_next_seg));
        max       = qp->srq->max_sge;
        sim_srq_free_wqe(qp->srq, idx);
    } else {
        idx       = qp->rq_tail & (qp->rq_wqe_cnt - 1);
        wc->wr_id = qp->rq_wrid[idx];
        segs      = (void *)(qp->rq_buf + (size_t)idx * qp->rq_stride);
        max       = qp->rq_stride / sizeof(*segs);
        qp->rq_tail++;
    }
    if ((inl != NULL) && (strand_cqe_opcode(cqe) != MLX5_CQE_RESP_ERR)) {
        wc->status = sim_wc_copy_to_sges(segs, max, inl,
                                         be32toh(cqe->byte_cnt));
    }
}

/* Units of the segments between ctrl and the local scatter list of a
 * READ / atomic WQE: the AV (DCI), raddr, atomic operands. */
static uint32_t sim_send_wqe_scatter_unit(const smlx5_qp_t *qp, uint32_t bb)
{
    const struct mlx5_wqe_ctrl_seg *ctrl = sim_sq_unit(qp, bb, 0);
    uint32_t opmod_idx_opcode            = be32toh(ctrl->opmod_idx_opcode);
    uint8_t  opcode                      = opmod_idx_opcode & 0xff;
    const struct mlx5_wqe_av *av;
    uint32_t                  unit = 2; /* ctrl, raddr */

    if (qp->type == SMLX5_QPT_DCI) {
        av = sim_sq_unit(qp, bb, 1);
        unit += (be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) ? 3 : 1;
    }
    if ((opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) &&
        (((opmod_idx_opcode >> 24) & 0x7) == 1)) {
        unit += 2; /* 64-bit masked CS: operands and masks */
    } else if (opcode != MLX5_OPCODE_RDMA_READ) {
        unit += 1;
    }
    return unit;
}

/* Requester scatter-to-CQE, as rdma-core's mlx5_copy_to_send_wqe: the
 * response data into the local scatter list read back from the WQE. */
static enum ibv_wc_status
sim_wc_copy_to_send_wqe(const smlx5_qp_t *qp, uint32_t bb, const uint8_t *src,
                        uint32_t len)
{
    const struct mlx5_wqe_ctrl_seg *ctrl = sim_sq_unit(qp, bb, 0);
    uint32_t                        ds   = be32toh(ctrl->qpn_ds) & 0x3f;
    const struct mlx5_wqe_data_seg *seg;
    uint32_t                        unit, n;

    for (unit = sim_send_wqe_scatter_unit(qp, bb); (unit < ds) && (len > 0);
         ++unit) {
        seg = sim_sq_unit(qp, bb, unit);
        n   = be32toh(seg->byte_count);
        n   = (n < len) ? n : len;
        memcpy((void *)(uintptr_t)be64toh(seg->addr), src, n);
        src += n;
        len -= n;
    }
    return (len > 0) ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

static void
sim_wc_send(smlx5_qp_t *qp, const struct mlx5_cqe64 *cqe, struct ibv_wc *wc)
{
    uint32_t       idx = be16toh(cqe->wqe_counter) & (qp->sq_wqe_cnt - 1);
    const uint8_t *inl = strand_cqe_inline_data(cqe);

    wc->wr_id   = qp->sq_wrid[idx];
    wc->opcode  = (enum ibv_wc_opcode)qp->sq_opcode[idx];
    qp->sq_tail = qp->sq_wqe_head[idx];
    if ((inl != NULL) && (strand_cqe_opcode(cqe) == MLX5_CQE_REQ)) {
        wc->status = sim_wc_copy_to_send_wqe(qp, idx, inl,
                                             be32toh(cqe->byte_cnt));
    }
}

static int sim_poll_one(smlx5_cq_t *cq, struct ibv_wc *wc)
{
    struct mlx5_cqe64   *cqe = strand_cqe_get(cq->buf, cq->nent, cq->cqe_shift,
                                              cq->poll_ci);
    struct mlx5_err_cqe *ecqe;
    smlx5_qp_t          *qp;
    uint8_t              opcode;
    uint32_t             qpn;

    /* a signature error is the provider's: it marks the mkey (as
     * rdma-core's mlx5_parse_cqe) and polling goes on */
    while ((cqe != NULL) && (strand_cqe_opcode(cqe) == MLX5_CQE_SIG_ERR)) {
        sim_mkey_take_sigerr(cq->ctx, cqe);
        cq->poll_ci++;
        strand_cq_update_ci(cq->dbrec, cq->poll_ci);
        cqe = strand_cqe_get(cq->buf, cq->nent, cq->cqe_shift, cq->poll_ci);
    }
    if (cqe == NULL) {
        return 0;
    }
    opcode = strand_cqe_opcode(cqe);

    memset(wc, 0, sizeof(*wc));
    qpn        = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    qp         = sim_qp_lookup(cq->ctx, qpn);
    wc->qp_num = qpn;
    wc->status = IBV_WC_SUCCESS;

    switch (opcode) {
    case MLX5_CQE_REQ:
        if (qp != NULL) {
            sim_wc_send(qp, cqe, wc);
        }
        wc->byte_len = be32toh(cqe->byte_cnt);
        break;
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV:
        if (qp != NULL) {
            sim_wc_recv(qp, cqe, wc);
        }
        wc->opcode   = (opcode == MLX5_CQE_RESP_WR_IMM) ?
                               IBV_WC_RECV_RDMA_WITH_IMM :
                               IBV_WC_RECV;
        wc->byte_len = be32toh(cqe->byte_cnt);
        wc->src_qp   = be32toh(cqe->flags_rqpn) & 0xffffff;
        wc->slid     = be16toh(cqe->slid);
        if ((opcode == MLX5_CQE_RESP_SEND_IMM) ||
            (opcode == MLX5_CQE_RESP_WR_IMM)) {
            wc->wc_flags |= IBV_WC_WITH_IMM;
            wc->imm_data = cqe->imm_inval_pkey;
        } else if (opcode == MLX5_CQE_RESP_SEND_INV) {
            wc->wc_flags |= IBV_WC_WITH_INV;
            wc->invalidated_rkey = be32toh(cqe->imm_inval_pkey);
        }
        break;
    case MLX5_CQE_REQ_ERR:
    case MLX5_CQE_RESP_ERR:
        ecqe           = (struct mlx5_err_cqe *)cqe;
        wc->status     = sim_wc_status(ecqe->syndrome);
        wc->vendor_err = ecqe->vendor_err_synd;
        qpn            = be32toh(ecqe->s_wqe_opcode_qpn) & 0xffffff;
        qp             = sim_qp_lookup(cq->ctx, qpn);
        wc->qp_num     = qpn;
        if (qp != NULL) {
            if (opcode == MLX5_CQE_REQ_ERR) {
                sim_wc_send(qp, cqe, wc);
            } else {
                sim_wc_recv(qp, cqe, wc);
            }
        }
        break;
    default:
        wc->status = IBV_WC_GENERAL_ERR;
        break;
    }

    cq->poll_ci++;
    strand_cq_update_ci(cq->dbrec, cq->poll_ci);
    return 1;
}

int smlx5_poll_cq(smlx5_cq_t *cq, int n, struct ibv_wc *wc)
{
    int count = 0;

    while ((count < n) && sim_poll_one(cq, &wc[count])) {
        ++count;
    }
    if (count == 0) {
        /* Inline progress: the device runs when its owner polls. */
        smlx5_progress(cq->ctx);
        while ((count < n) && sim_poll_one(cq, &wc[count])) {
            ++count;
        }
    }
    return count;
}
