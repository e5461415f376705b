/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An operation that retires: what its completion delivers (unpacked data,
 * a fetched value), its slot freed, its endpoint idle or scheduled again;
 * and the operations of an endpoint that is destroyed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "op_done.h"
#include "ep_fail.h"
#include "ep_pending.h"
#include "integrity_get.h"
#include "txq_pool.h"

#include <ucs/datastruct/mpool.inl>

#include <endian.h>

static void strand_op_deliver(strand_iface_t *iface, strand_op_t *op)
{
    switch (op->type) {
    case STRAND_OP_GET_BCOPY:
        op->u.unpack.cb(op->u.unpack.arg, op->desc->data, op->u.unpack.length);
        break;
    case STRAND_OP_FETCH32: {
        uint32_t v;
        memcpy(&v, op->desc->data, sizeof(v));
        *(uint32_t *)op->u.result = iface->config.atomic_reply_be32 ?
                                            be32toh(v) :
                                            v;
        break;
    }
    case STRAND_OP_FETCH64: {
        uint64_t v;
        memcpy(&v, op->desc->data, sizeof(v));
        *(uint64_t *)op->u.result = iface->config.atomic_reply_be64 ?
                                            be64toh(v) :
                                            v;
        break;
    }
    default:
        break;
    }
}

void strand_op_complete(strand_iface_t *iface, strand_txq_t *txq,
                        strand_op_t *op, ucs_status_t status)
{
    uct_completion_t       *comp = NULL;
    uct_completion_t       *last = NULL;
    strand_ep_t            *ep   = op->ep;
    strand_integrity_req_t *get  = NULL;

    if (op->type != STRAND_OP_LIGHT) {
        comp = op->comp;
        if (ucs_unlikely(op->type == STRAND_OP_CHECKED)) {
            get = strand_iface_integrity_op_done(iface, op, status);
        } else if (status == UCS_OK) {
            strand_op_deliver(iface, op);
        }
        strand_op_release(iface, op);
        op->comp = NULL;
    }
    if (op->state == STRAND_OP_FLUSHED) {
        txq->flushed--;
    }
    op->state = STRAND_OP_FREE;
    op->ep    = NULL;
    txq->outstanding--;
    strand_txq_advance_tail(iface, txq);
    strand_txq_wake_waiters(iface, txq);
    if (ep != NULL) {
        if ((--ep->outstanding == 0) && (ep->held == 0)) {
            last = strand_ep_idle(iface, ep);
        }
        strand_ep_schedule(iface, ep);
    } else {
        iface->tl->sq_idle(iface, txq);
    }
    if (ucs_unlikely(get != NULL)) {
        /* a piece of a checked GET: the next ones, this one again, or the
         * GET's end (its ep counts the GET until then) */
        strand_iface_integrity_kick(iface, get);
    }
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
    if (ucs_unlikely(last != NULL)) {
        uct_invoke_completion(last, UCS_OK);
    }
}

void strand_txq_orphan(strand_iface_t *iface, strand_txq_t *txq,
                       strand_ep_t *ep)
{
    uct_completion_t *comp;
    strand_op_t      *op;
    uint32_t          bb;

    for (bb = txq->sq_tail; bb != txq->sq.cur_post; ++bb) {
        op = &txq->ops[bb & (txq->sq.wqe_cnt - 1)];
        /* flushed ones too: a send queue in error settles them later, and an ep
         * that failed (and was destroyed, as UCP does) is gone by then */
        if ((op->state == STRAND_OP_FREE) || (op->ep != ep)) {
            continue;
        }
        op->ep = NULL;
        ep->outstanding--;
        if (op->type == STRAND_OP_LIGHT) {
            continue;
        }
        if (op->type == STRAND_OP_CHECKED) {
            strand_iface_integrity_orphan_op(iface, op);
            continue;
        }
        comp     = op->comp;
        op->comp = NULL;
        /* no unpacking or fetched value into the user's memory later */
        op->type = STRAND_OP_PLAIN;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_ERR_CANCELED);
        }
    }
}
