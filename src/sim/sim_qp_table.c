/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's tables of queues: QPs and DCTs by number, objects by user
 * index, and the requester queue the completer hands work through (the
 * list of QPs with work in flight is sim.h's sim_qp_activate, inline).
 * Every stage looks a QP up here; nothing here calls a stage.
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
    uint32_t idx = qpn & (SIM_MAX_QPS - 1);
    smlx5_qp_t *qp = ctx->qps[idx];

    return ((qp != NULL) && (qp->qpn == qpn)) ? qp : NULL;
}

smlx5_qp_t *sim_dct_lookup(smlx5_context_t *ctx, uint32_t dctn)
{
    smlx5_qp_t *qp = sim_qp_lookup(ctx, dctn);

    return ((qp != NULL) && (qp->type == SMLX5_QPT_DCT) && (qp->dctn != 0)) ?
           qp : NULL;
}

/* The requester's queue. The completer never runs the requester itself:
 * when an ACK opens a flow's window, a NAK or a timer asks for go-back-N,
 * or a failure restarts a flow, it adds the QP here (rxe's completer
 * schedules its requester task the same way), and the engine runs the
 * queued requesters as soon as the completer is done with the packet or
 * the timer. */
void sim_req_queue_add(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;

    if (qp->req_queued) {
        return;
    }
    qp->req_queued = true;
    qp->req_next   = NULL;
    if (ctx->req_tail != NULL) {
        ctx->req_tail->req_next = qp;
    } else {
        ctx->req_head = qp;
    }
    ctx->req_tail = qp;
}

smlx5_qp_t *sim_req_queue_take(smlx5_context_t *ctx)
{
    smlx5_qp_t *qp = ctx->req_head;

    if (qp != NULL) {
        ctx->req_head = qp->req_next;
        if (ctx->req_head == NULL) {
            ctx->req_tail = NULL;
        }
        qp->req_queued = false;
    }
    return qp;
}

void sim_req_queue_drop(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;
    smlx5_qp_t **link    = &ctx->req_head;
    smlx5_qp_t *prev     = NULL;

    if (!qp->req_queued) {
        return;
    }
    while (*link != qp) {
        prev = *link;
        link = &prev->req_next;
    }
    *link = qp->req_next;
    if (ctx->req_tail == qp) {
        ctx->req_tail = prev;
    }
    qp->req_queued = false;
}
