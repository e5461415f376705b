/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider side of the software device: ibv_post_send / ibv_post_recv /
 * ibv_post_srq_recv as rdma-core's mlx5 provider does them (spec sections 1,
 * 2 and 4; seed page ibv_post_send.3). WQEs are built in place with the
 * data-path builders of src/mlx5, the doorbell is rung exactly as on
 * hardware, then the QP is handed to the device (smlx5_qp_doorbell).
 *
 * No lock is taken: like the hardware provider in single-thread mode, one
 * thread posts to a queue at a time. The device only reads WQEs below the
 * doorbell record.
 */
#include "sim.h"
#include "sim_rq.h"

#include "mlx5/doorbell.h"
#include "mlx5/wqe.h"

#include <errno.h>
#include <string.h>

/* ----------------------------------------------------------------- SQ */

typedef struct sim_post_op {
    uint8_t mlx5_opcode;
    uint8_t wc_opcode; /* enum ibv_wc_opcode */
    uint8_t has_raddr;
    uint8_t is_atomic;
} sim_post_op_t;

/* 0 when the ibv opcode is known, EINVAL otherwise. */
static int sim_post_op_lookup(enum ibv_wr_opcode op, sim_post_op_t *out)
{
    switch (op) {
    case IBV_WR_SEND:
        *out = (sim_post_op_t){MLX5_OPCODE_SEND, IBV_WC_SEND, 0, 0};
        return 0;
    case IBV_WR_SEND_WITH_IMM:
        *out = (sim_post_op_t){MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, 0, 0};
        return 0;
    case IBV_WR_SEND_WITH_INV:
        *out = (sim_post_op_t){MLX5_OPCODE_SEND_INVAL, IBV_WC_SEND, 0, 0};
        return 0;
    case IBV_WR_RDMA_WRITE:
        *out = (sim_post_op_t){MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE, 1, 0};
        return 0;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        *out = (sim_post_op_t){MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE, 1,
                               0};
        return 0;
    case IBV_WR_RDMA_READ:
        *out = (sim_post_op_t){MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ, 1, 0};
        return 0;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        *out = (sim_post_op_t){MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP, 1, 1};
        return 0;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        *out = (sim_post_op_t){MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD, 1, 1};
        return 0;
    default:
        return EINVAL;
    }
}

static int sim_post_atomic_supported(smlx5_qp_t *qp)
{
    smlx5_device_caps_t caps;

    if (smlx5_query_device(qp->ctx, &caps) != 0) {
        return 0;
    }
    return caps.attr.atomic_cap != IBV_ATOMIC_NONE;
}

/*
 * Post a list of send WRs. dc == NULL: RC layouts; otherwise DCI layouts
 * (ctrl, 48-byte AV, ...) with `stream_id` in the ctrl segment.
 */
static int sim_post_send_common(smlx5_qp_t *qp, struct ibv_send_wr *wr,
                                const smlx5_dc_target_t *dc, uint16_t stream_id,
                                struct ibv_send_wr **bad_wr)
{
    void                     *sq_buf = qp->sq.buf;
    void                     *sq_end = qp->sq.end;
    struct mlx5_wqe_ctrl_seg *ctrl, *last_ctrl = NULL;
    unsigned                  last_bbs  = 0;
    int                       atomic_ok = -1; /* not queried yet */
    sim_post_op_t             op;
    unsigned                  ds, nseg, bbs;
    uint64_t                  inl_len;
    uint32_t                  idx, imm;
    uint8_t                   fm_ce_se;
    int                       inl, err = 0;
    void                     *seg;

    for (; wr != NULL; wr = wr->next) {
        err = sim_post_op_lookup(wr->opcode, &op);
        if (err != 0) {
            break;
        }
        if (op.is_atomic) {
            if (atomic_ok < 0) {
                atomic_ok = sim_post_atomic_supported(qp);
            }
            if (!atomic_ok) {
                err = EOPNOTSUPP;
                break;
            }
        }
        if (wr->num_sge < 0) {
            err = EINVAL;
            break;
        }
        if (wr->num_sge > (int)qp->cap.max_send_sge) {
            err = ENOMEM;
            break;
        }

        /* WQE size, before anything is written */
        inl = (wr->send_flags & IBV_SEND_INLINE) && (wr->num_sge > 0);
        ds  = 1; /* ctrl */
        if (dc != NULL) {
            ds += STRAND_AV_FULL_SIZE / STRAND_WQE_DS; /* 48-byte AV */
        }
        if (op.has_raddr) {
            ds += 1;
        }
        if (op.is_atomic) {
            ds += 1;
        }
        if (inl) {
            inl_len = strand_sgl_bytes(wr->sg_list, wr->num_sge);
            if (inl_len > qp->cap.max_inline_data) {
                err = ENOMEM;
                break;
            }
            ds += strand_inline_ds((uint32_t)inl_len);
        } else {
            ds += strand_sgl_count(wr->sg_list, wr->num_sge);
        }
        bbs = strand_ds_to_bbs(ds);
        if ((qp->sq.cur_post - qp->sq_tail) + bbs > qp->sq.wqe_cnt) {
            err = ENOMEM;
            break;
        }

        /* flags */
        fm_ce_se = 0;
        if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all) {
            fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
        }
        if (wr->send_flags & IBV_SEND_SOLICITED) {
            fm_ce_se |= MLX5_WQE_CTRL_SOLICITED;
        }
        if (wr->send_flags & IBV_SEND_FENCE) {
            fm_ce_se |= MLX5_WQE_CTRL_FENCE;
        }
        /* IBV_SEND_IP_CSUM: meaningless for RC/DC, ignored */

        switch (wr->opcode) {
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            imm = wr->imm_data; /* already network order */
            break;
        case IBV_WR_SEND_WITH_INV:
            imm = htobe32(wr->invalidate_rkey);
            break;
        default:
            imm = 0;
            break;
        }

        /* build */
        ctrl = strand_sq_ctrl(&qp->sq);
        strand_sq_set_ctrl(&qp->sq, ctrl, 0, op.mlx5_opcode, ds, fm_ce_se, imm);
        seg = strand_sq_next(ctrl, sizeof(*ctrl), sq_buf, sq_end);

        if (dc != NULL) {
            strand_set_ctrl_stream(ctrl, stream_id);
            strand_set_av_full((struct mlx5_wqe_av *)seg, dc->dc_key, dc->dctn,
                               dc->dlid);
            seg = strand_sq_next(seg, STRAND_AV_FULL_SIZE, sq_buf, sq_end);
        }

        if (op.is_atomic) {
            strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg,
                                 wr->wr.atomic.remote_addr, wr->wr.atomic.rkey);
            seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), sq_buf,
                                 sq_end);
            if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
                strand_set_atomic_cs_seg((struct mlx5_wqe_atomic_seg *)seg,
                                         wr->wr.atomic.compare_add,
                                         wr->wr.atomic.swap);
            } else {
                strand_set_atomic_fa_seg((struct mlx5_wqe_atomic_seg *)seg,
                                         wr->wr.atomic.compare_add);
            }
            seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_atomic_seg),
                                 sq_buf, sq_end);
        } else if (op.has_raddr) {
            strand_set_raddr_seg((struct mlx5_wqe_raddr_seg *)seg,
                                 wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
            seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), sq_buf,
                                 sq_end);
        }

        if (inl) {
            /* As rdma-core: INLINE applies to whatever opcode carries it;
             * on READ/atomics the device rejects the WQE (LOC_QP_OP_ERR). */
            nseg = strand_set_inline_seg(seg, wr->sg_list, wr->num_sge, sq_buf,
                                         sq_end, &seg);
        } else {
            /* atomics: the local buffer gets the 8-byte original value */
            nseg = strand_set_data_sgl(seg, wr->sg_list, wr->num_sge,
                                       op.is_atomic ? 8 : 0, sq_buf, sq_end,
                                       &seg);
        }
        (void)nseg;

        /* provider bookkeeping, at the ctrl's BB */
        idx = qp->sq.cur_post & (qp->sq.wqe_cnt - 1);
        strand_sq_advance(&qp->sq, bbs);
        qp->sq_wrid[idx]     = wr->wr_id;
        qp->sq_wqe_head[idx] = qp->sq.cur_post;
        qp->sq_opcode[idx]   = op.wc_opcode;
        last_ctrl            = ctrl;
        last_bbs             = bbs;
    }

    if (err != 0) {
        *bad_wr = wr;
    }

    /* WRs before the failing one stay posted and are doorbelled */
    if (last_ctrl != NULL) {
        /* a register other QPs share: the provider serialises its own
         * writes (rdma-core's bf->lock); the device is told inside, so
         * the doorbell is still in the register then */
        if (qp->bfreg->shared) {
            pthread_mutex_lock(&qp->bfreg->lock);
        }
        strand_sq_ring(&qp->sq, last_ctrl, last_bbs);
        smlx5_qp_doorbell(qp);
        if (qp->bfreg->shared) {
            pthread_mutex_unlock(&qp->bfreg->lock);
        }
    }
    return err;
}

/* Before RTS nothing may be posted (ENOMEM, as rdma-core's mlx5 does);
 * SQD and ERR accept WQEs (SQD: held; ERR: flushed). */
static int sim_post_state_ok(const smlx5_qp_t *qp)
{
    switch (qp->state) {
    case IBV_QPS_RESET:
    case IBV_QPS_INIT:
    case IBV_QPS_RTR:
        return 0;
    default:
        return 1;
    }
}

int smlx5_post_send(smlx5_qp_t *qp, struct ibv_send_wr *wr,
                    struct ibv_send_wr **bad_wr)
{
    if (wr == NULL) {
        return 0;
    }
    if (qp->type != SMLX5_QPT_RC) {
        /* DCI: needs a target (smlx5_post_send_dc); DCT: no send queue */
        *bad_wr = wr;
        return EINVAL;
    }
    if (!sim_post_state_ok(qp)) {
        *bad_wr = wr;
        return ENOMEM;
    }
    return sim_post_send_common(qp, wr, NULL, 0, bad_wr);
}

int smlx5_post_send_dc(smlx5_qp_t *qp, struct ibv_send_wr *wr,
                       const smlx5_dc_target_t *dc, uint16_t stream_id,
                       struct ibv_send_wr **bad_wr)
{
    if (wr == NULL) {
        return 0;
    }
    if ((qp->type != SMLX5_QPT_DCI) || (dc == NULL)) {
        *bad_wr = wr;
        return EINVAL;
    }
    if (!sim_post_state_ok(qp)) {
        *bad_wr = wr;
        return ENOMEM;
    }
    return sim_post_send_common(qp, wr, dc, stream_id, bad_wr);
}

/* ----------------------------------------------------------------- RQ */

int smlx5_post_recv(smlx5_qp_t *qp, struct ibv_recv_wr *wr,
                    struct ibv_recv_wr **bad_wr)
{
    struct mlx5_wqe_data_seg *scat;
    unsigned                  max_gs, j;
    uint32_t                  idx;
    int                       i, nreq = 0, err = 0;

    /* A QP on an SRQ (and DCI/DCT) has no RQ: rq_wqe_cnt == 0, so the
     * overflow check below answers ENOMEM, as rdma-core does. */
    max_gs = (qp->rq_stride != 0) ? qp->rq_stride / sizeof(*scat) : 0;
    for (; wr != NULL; wr = wr->next, ++nreq) {
        if ((qp->rq_head - qp->rq_tail) + 1 > qp->rq_wqe_cnt) {
            err = ENOMEM;
            break;
        }
        if ((wr->num_sge < 0) || (wr->num_sge > (int)qp->cap.max_recv_sge)) {
            err = EINVAL;
            break;
        }
        idx  = qp->rq_head & (qp->rq_wqe_cnt - 1);
        scat = (struct mlx5_wqe_data_seg *)(qp->rq_buf +
                                            (size_t)idx * qp->rq_stride);
        for (i = 0, j = 0; i < wr->num_sge; ++i) {
            if (wr->sg_list[i].length == 0) {
                continue;
            }
            strand_set_data_seg(&scat[j++], wr->sg_list[i].addr,
                                wr->sg_list[i].length, wr->sg_list[i].lkey);
        }
        if (j < max_gs) {
            strand_set_data_seg_end(&scat[j]);
        }
        qp->rq_wrid[idx] = wr->wr_id;
        qp->rq_head++;
    }

    if (err != 0) {
        *bad_wr = wr;
    }
    if (nreq > 0) {
        strand_rq_ring_doorbell(qp->dbrec, qp->rq_head);
    }
    return err;
}

/* ---------------------------------------------------------------- SRQ */

int smlx5_post_srq_recv(smlx5_srq_t *srq, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad_wr)
{
    struct mlx5_wqe_srq_next_seg *next;
    struct mlx5_wqe_data_seg     *scat;
    unsigned                      max_gs;
    int                           i, nreq = 0, err = 0;

    max_gs = (srq->stride - sizeof(*next)) / sizeof(*scat);
    for (; wr != NULL; wr = wr->next, ++nreq) {
        if ((wr->num_sge < 0) || (wr->num_sge > (int)srq->max_sge)) {
            err = EINVAL;
            break;
        }
        if (srq->head == srq->tail) {
            err = ENOMEM;
            break;
        }
        srq->wrid[srq->head] = wr->wr_id;
        next                 = sim_srq_wqe(srq, srq->head);
        srq->head            = be16toh(next->next_wqe_index);
        scat                 = (struct mlx5_wqe_data_seg *)(next + 1);
        for (i = 0; i < wr->num_sge; ++i) {
            strand_set_data_seg(&scat[i], wr->sg_list[i].addr,
                                wr->sg_list[i].length, wr->sg_list[i].lkey);
        }
        if ((unsigned)i < max_gs) {
            strand_set_data_seg_end(&scat[i]);
        }
    }

    if (err != 0) {
        *bad_wr = wr;
    }
    if (nreq > 0) {
        srq->posted += (uint16_t)nreq;
        strand_srq_ring_doorbell(srq->dbrec, srq->posted);
        smlx5_srq_doorbell(srq);
    }
    return err;
}
