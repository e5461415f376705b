/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's tables of queues: QPs and DCTs by number, objects by user
 * index. Every stage looks a QP up here; nothing here calls a stage. (The
 * lists the engine walks, of QPs with work in flight and of requesters
 * the completer handed work, are inline in sim.h: they are on the path
 * of every packet.)
 */
#include "sim.h"

int32_t sim_uidx_store(smlx5_context_t *ctx, void *obj)
{
    int32_t i;

    for (i = 0; i < SIM_MAX_UIDX; ++i) {
        if (ctx->uidx[i] == NULL) {
            ctx->uidx[i] = obj;
            return i;
        }
    }
    return -1;
}

void sim_uidx_clear(smlx5_context_t *ctx, uint32_t uidx)
{
    if (uidx < SIM_MAX_UIDX) {
        ctx->uidx[uidx] = NULL;
    }
}

smlx5_qp_t *sim_qp_lookup(smlx5_context_t *ctx, uint32_t qpn)
{
    uint32_t    idx = qpn & (SIM_MAX_QPS - 1);
    smlx5_qp_t *qp  = ctx->qps[idx];

    return ((qp != NULL) && (qp->qpn == qpn)) ? qp : NULL;
}

smlx5_qp_t *sim_dct_lookup(smlx5_context_t *ctx, uint32_t dctn)
{
    smlx5_qp_t *qp = sim_qp_lookup(ctx, dctn);

    return ((qp != NULL) && (qp->type == SMLX5_QPT_DCT) && (qp->dctn != 0)) ?
                   qp :
                   NULL;
}
