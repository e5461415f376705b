/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues (mlx5 linked-list SRQ) and the device side of
 * receive queues: which receive WQE the next inbound SEND lands in.
 */
#include "sim.h"
#include "sim_rq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t sim_pow2(uint32_t x)
{
    uint32_t r = 1;

    while (r < x) {
        r <<= 1;
    }
    return r;
}

smlx5_srq_t *smlx5_create_srq(smlx5_pd_t *pd, smlx5_srq_init_attr_t *attr)
{
    smlx5_context_t *ctx = pd->ctx;
    smlx5_srq_t     *srq;
    uint32_t         i, desc;

    if ((attr->max_wr == 0) || (attr->max_wr > (1u << 15)) ||
        (attr->max_sge == 0) || (attr->max_sge > ctx->cfg.max_sge) ||
        ((attr->max_num_tags > 0) &&
         ((attr->cq == NULL) ||
          (attr->max_num_tags > ctx->cfg.tm_max_num_tags) ||
          (attr->max_ops == 0) || (attr->max_ops > SIM_TM_MAX_OPS)))) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    desc = sizeof(struct mlx5_wqe_srq_next_seg) +
           attr->max_sge * sizeof(struct mlx5_wqe_data_seg);
    srq->stride  = sim_pow2(desc < 32 ? 32 : desc);
    srq->max_sge = (srq->stride - sizeof(struct mlx5_wqe_srq_next_seg)) /
                   sizeof(struct mlx5_wqe_data_seg);
    /* one WQE more than asked: the list keeps a sentinel at its tail */
    srq->wqe_cnt = sim_pow2(attr->max_wr + 1);
    if ((posix_memalign((void **)&srq->buf, 4096, srq->wqe_cnt * srq->stride) !=
         0) ||
        (posix_memalign((void **)&srq->dbrec, 64, 64) != 0)) {
        goto err;
    }
    memset(srq->buf, 0, srq->wqe_cnt * srq->stride);
    memset(srq->dbrec, 0, 64);
    srq->wrid = calloc(srq->wqe_cnt, sizeof(*srq->wrid));
    if (srq->wrid == NULL) {
        goto err;
    }
    srq->ctx          = ctx;
    srq->pd           = pd;
    srq->user_index   = 0xffffff;
    srq->max_num_tags = attr->max_num_tags;
    srq->tm_cq        = attr->cq;
    srq->dev_head     = 0;
    sim_srq_init_list(srq);

    pthread_mutex_lock(&ctx->lock);
    for (i = 1; i < SIM_MAX_SRQS; ++i) {
        if (ctx->srqs[i] == NULL) {
            break;
        }
    }
    if (i == SIM_MAX_SRQS) {
        pthread_mutex_unlock(&ctx->lock);
        goto err;
    }
    if (srq->max_num_tags > 0) {
        /* ibv_create_srq_ex (tag matching) takes a user index; an
         * ordinary SRQ does not */
        int32_t uidx = sim_uidx_store(ctx, srq);
        if (uidx < 0) {
            pthread_mutex_unlock(&ctx->lock);
            goto err;
        }
        srq->user_index = (uint32_t)uidx;
    }
    srq->srqn    = i;
    ctx->srqs[i] = srq;
    atomic_fetch_add(&pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);

    if ((srq->max_num_tags > 0) &&
        (sim_tm_create(srq, attr->max_ops, attr->td) != 0)) {
        smlx5_destroy_srq(srq);
        errno = ENOMEM;
        return NULL;
    }
    attr->max_wr  = srq->wqe_cnt - 1;
    attr->max_sge = srq->max_sge;
    return srq;

err:
    free(srq->buf);
    free(srq->dbrec);
    free(srq->wrid);
    free(srq);
    errno = ENOMEM;
    return NULL;
}

int smlx5_destroy_srq(smlx5_srq_t *srq)
{
    smlx5_context_t *ctx = srq->ctx;

    if (atomic_load(&srq->refs) != 0) {
        return EBUSY;
    }
    sim_tm_destroy(srq);
    pthread_mutex_lock(&ctx->lock);
    ctx->srqs[srq->srqn] = NULL;
    if (srq->max_num_tags > 0) {
        sim_uidx_clear(ctx, srq->user_index);
    }
    atomic_fetch_sub(&srq->pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    free(srq->buf);
    free(srq->dbrec);
    free(srq->wrid);
    free(srq);
    return 0;
}

int smlx5_srq_dv(smlx5_srq_t *srq, struct mlx5dv_srq *out)
{
    memset(out, 0, sizeof(*out));
    out->buf       = srq->buf;
    out->dbrec     = srq->dbrec;
    out->stride    = srq->stride;
    out->head      = srq->head;
    out->tail      = srq->tail;
    out->comp_mask = MLX5DV_SRQ_MASK_SRQN;
    out->srqn      = srq->srqn;
    return 0;
}
