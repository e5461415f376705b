/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive queues as the device and the provider share them: the responder
 * takes the next receive WQE (an RQ's, or an SRQ's from its free list);
 * a polled or cleaned receive completion gives an SRQ WQE back to the
 * list. Below the responder, the CQ and the posting code alike.
 */
#include "sim.h"
#include "sim_rq.h"

#include <string.h>

/*
 * Free list, as rdma-core's mlx5 provider keeps it: the WQEs form a linked
 * list through next_wqe_index; `head` is the next WQE to fill, `tail` the
 * last one on the list. The tail is a sentinel: it is never filled, so the
 * device, which follows the same list from WQE 0 and stops at the count in
 * the doorbell record, never runs into a WQE whose link is about to
 * change. Full when head == tail (wqe_cnt - 1 usable WQEs). A retired WQE
 * is linked after the tail and becomes the new sentinel.
 */
void sim_srq_init_list(smlx5_srq_t *srq)
{
    uint32_t i;

    for (i = 0; i < srq->wqe_cnt; ++i) {
        memset(sim_srq_wqe(srq, i), 0, sizeof(struct mlx5_wqe_srq_next_seg));
        sim_srq_wqe(srq, i)->next_wqe_index = htobe16(
                (uint16_t)((i + 1) & (srq->wqe_cnt - 1)));
    }
    srq->head   = 0;
    srq->tail   = srq->wqe_cnt - 1;
    srq->posted = 0;
}

void sim_srq_free_wqe(smlx5_srq_t *srq, uint32_t idx)
{
    sim_srq_wqe(srq, srq->tail)->next_wqe_index = htobe16((uint16_t)idx);
    srq->tail                                   = idx;
}

static int sim_srq_take(smlx5_srq_t *srq, struct mlx5_wqe_data_seg **sges,
                        unsigned *num_sge)
{
    uint16_t posted = (uint16_t)be32toh(srq->dbrec[MLX5_RCV_DBR]);
    struct mlx5_wqe_srq_next_seg *next;
    uint32_t                      idx;

    if ((uint16_t)(posted - srq->consumed) == 0) {
        return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    idx           = srq->dev_head;
    next          = (void *)(srq->buf + idx * srq->stride);
    srq->dev_head = be16toh(next->next_wqe_index) & (srq->wqe_cnt - 1);
    srq->consumed++;
    *sges    = (struct mlx5_wqe_data_seg *)(next + 1);
    *num_sge = srq->max_sge;
    return (int)idx;
}

int sim_rq_take(smlx5_qp_t *qp, struct mlx5_wqe_data_seg **sges,
                unsigned *num_sge, smlx5_srq_t **srq_p)
{
    uint16_t posted;
    uint32_t idx;

    *srq_p = qp->srq;
    if (qp->srq != NULL) {
        return sim_srq_take(qp->srq, sges, num_sge);
    }
    if (qp->rq_buf == NULL) {
        return -1;
    }
    posted = (uint16_t)be32toh(qp->dbrec[MLX5_RCV_DBR]);
    if ((uint16_t)(posted - qp->rq_consumed) == 0) {
        return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    idx      = qp->rq_consumed & (qp->rq_wqe_cnt - 1);
    *sges    = (struct mlx5_wqe_data_seg *)(qp->rq_buf + idx * qp->rq_stride);
    *num_sge = qp->rq_stride / sizeof(struct mlx5_wqe_data_seg);
    return (int)(qp->rq_consumed++ & 0xffff);
}
