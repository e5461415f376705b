/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events: the device raises them from any stage (a QP to
 * ERR, a CQ overrun, SQ drained); the application reads them through the
 * context's eventfd. A queue of their own, so that raising one calls
 * nothing back.
 */
#include "sim.h"

#include <unistd.h>

void sim_async_push(smlx5_context_t *ctx, enum ibv_event_type type,
                    void *element)
{
    sim_async_queue_t   *q = &ctx->async;
    smlx5_async_event_t *ev;
    uint64_t             one = 1;

    if (q->tail - q->head >= 256) {
        return; /* queue full: the oldest events are kept */
    }
    ev         = &q->ev[q->tail++ % 256];
    ev->type   = type;
    ev->qp_num = 0;
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        ev->element.cq = element;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        ev->element.srq = element;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
        ev->element.port_num = SMLX5_PORT_NUM;
        break;
    default:
        ev->element.qp = element;
        ev->qp_num     = ((const smlx5_qp_t *)element)->qpn;
        break;
    }
    if (write(ctx->async_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: readers still find the queued event */
    }
}

void sim_async_drop_qp(smlx5_context_t *ctx, const smlx5_qp_t *qp)
{
    sim_async_queue_t   *q = &ctx->async;
    smlx5_async_event_t *ev;
    uint32_t             i;

    for (i = q->head; i != q->tail; ++i) {
        ev = &q->ev[i % 256];
        if (ev->type == SIM_ASYNC_DROPPED) {
            continue;
        }
        switch (ev->type) {
        case IBV_EVENT_CQ_ERR:
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED:
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
            break;
        default:
            if (ev->element.qp == qp) {
                ev->type = SIM_ASYNC_DROPPED;
            }
            break;
        }
    }
}

int smlx5_async_fd(smlx5_context_t *ctx)
{
    return ctx->async_fd;
}

int smlx5_get_async_event(smlx5_context_t *ctx, smlx5_async_event_t *ev)
{
    sim_async_queue_t *q = &ctx->async;
    uint64_t           cnt;
    int                ret = EAGAIN;

    pthread_mutex_lock(&ctx->lock);
    while ((ret != 0) && (q->head != q->tail)) {
        *ev = q->ev[q->head++ % 256];
        if (ev->type != SIM_ASYNC_DROPPED) {
            ret = 0;
        }
    }
    if (q->head == q->tail) {
        if (read(ctx->async_fd, &cnt, sizeof(cnt)) < 0) {
            /* nothing to clear */
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return ret;
}
