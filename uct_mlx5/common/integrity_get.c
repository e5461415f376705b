/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integrity-checked GETs (integrity_get.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "integrity_get.h"
#include "ep_post.h"
#include "recovery.h"
#include "ep_fail.h"
#include "ep_pending.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

ucs_status_t strand_iface_integrity_init(strand_iface_t              *iface,
                                         const strand_iface_config_t *config)
{
    strand_integrity_kind_t kind = (strand_integrity_kind_t)
                                           config->common.integrity;

    if ((kind != STRAND_INTEGRITY_OFF) && (iface->md->integrity != kind)) {
        /* the MD packs the signing keys: it read the same option from
         * the environment when it was opened */
        ucs_error("%s: UCX_DC_STRAND_INTEGRITY=%s, but the memory domain "
                  "signs with %s (it reads the option from the environment "
                  "when it opens)",
                  iface->dev->info.name, strand_integrity_kind_names[kind],
                  strand_integrity_kind_names[iface->md->integrity]);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((kind != STRAND_INTEGRITY_OFF) &&
        (config->common.integrity_read_size < STRAND_INTEGRITY_BLOCK)) {
        ucs_error("%s: UCX_DC_STRAND_INTEGRITY_READ_SIZE=%zu: at least one "
                  "block (%u bytes)",
                  iface->dev->info.name, config->common.integrity_read_size,
                  STRAND_INTEGRITY_BLOCK);
        return UCS_ERR_INVALID_PARAM;
    }
    /* as many pieces in flight as the send queues can have READs outstanding: a
     * piece never waits for a landing mkey longer than for a send slot */
    return strand_integrity_init(
            &iface->integrity, iface->dev, kind, iface->config.max_sge,
            ucs_min(1024, iface->num_txqs * iface->config.tx_queue_len),
            config->common.integrity_read_size,
            config->common.integrity_retries);
}

/* The GET is over: the user hears of it, its ep has one operation less. */
static void strand_iface_integrity_finish(strand_iface_t         *iface,
                                          strand_integrity_req_t *req)
{
    strand_ep_t      *ep     = req->ep;
    uct_completion_t *comp   = req->comp;
    ucs_status_t      status = req->status;
    uct_completion_t *last   = NULL;

    strand_integrity_req_finish(&iface->integrity, req);
    if (req->tmp_reg != NULL) {
        strand_tmp_reg_release(iface, req->tmp_reg);
    }
    ucs_free(req);
    if (ep == NULL) {
        return; /* its ep was destroyed: told then */
    }
    --ep->checked_gets;
    if ((--ep->outstanding == 0) && (ep->held == 0)) {
        last = strand_ep_idle(iface, ep);
    }
    if ((status != UCS_OK) && !(ep->flags & STRAND_EP_FLAG_FAILED)) {
        /* A GET that fails fails its ep, as every transport error does:
         * UCP takes a failed GET for a failed ep (its rendezvous then
         * sends the sender nothing, and only the ep's error tells
         * anyone); the owner hears of it once the completions are done */
        strand_ep_fail(iface, ep, status, "a checked GET failed");
    }
    strand_ep_schedule(iface, ep);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
    if (last != NULL) {
        uct_invoke_completion(last, UCS_OK);
    }
}

void strand_iface_integrity_cleanup(strand_iface_t *iface)
{
    strand_integrity_req_t *req;
    char                    buf[256];

    if (iface->integrity.kind == STRAND_INTEGRITY_OFF) {
        return;
    }
    /* GETs still waiting at close: their registrations go */
    while ((req = iface->integrity_queue) != NULL) {
        iface->integrity_queue = req->next;
        if (req->tmp_reg != NULL) {
            strand_tmp_reg_release(iface, req->tmp_reg);
        }
        ucs_free(req);
    }
    strand_integrity_summary(&iface->integrity, buf, sizeof(buf));
    ucs_info("%s: integrity %s", iface->dev->info.name, buf);
    strand_integrity_cleanup(&iface->integrity);
}

/* ---------------------------------------------------------- the queue */

static void strand_iface_integrity_enqueue(strand_iface_t         *iface,
                                           strand_integrity_req_t *req)
{
    strand_integrity_req_t **pp;

    if (req->queued) {
        return;
    }
    req->queued = 1;
    req->next   = NULL;
    for (pp = &iface->integrity_queue; *pp != NULL; pp = &(*pp)->next) {
    }
    *pp = req;
}

static void strand_iface_integrity_dequeue(strand_iface_t         *iface,
                                           strand_integrity_req_t *req)
{
    strand_integrity_req_t **pp;

    if (!req->queued) {
        return;
    }
    for (pp = &iface->integrity_queue; *pp != req; pp = &(*pp)->next) {
    }
    *pp         = req->next;
    req->queued = 0;
}

/* ------------------------------------------------------------ pieces */

/* The READ of a piece: its blocks from the sender's signing mkey into the
 * landing mkey (zero-based, the length on the wire), on ep's send queue. */
static void strand_iface_integrity_post(strand_iface_t *iface, strand_ep_t *ep,
                                        strand_txq_t             *txq,
                                        strand_integrity_piece_t *piece)
{
    strand_op_t               op = {0};
    struct mlx5_wqe_ctrl_seg *ctrl;
    void                     *seg;

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, piece->wire_off, piece->req->sig_rkey);
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), txq->sq.buf,
                         txq->sq.end);
    strand_set_data_seg(seg, 0, piece->wire_len, piece->mkey.key);
    op.type     = STRAND_OP_CHECKED;
    op.u.result = piece;
    strand_ep_post(iface, ep, txq, ctrl, MLX5_OPCODE_RDMA_READ, 0,
                   STRAND_EP_DS(ep) + 2, strand_ep_fence_mode(iface, ep), &op);
}

/* Post what req has to read while its ep has room and landing mkeys are
 * free; then it waits in the queue, or it is over. */
static void
strand_iface_integrity_issue(strand_iface_t *iface, strand_integrity_req_t *req)
{
    strand_ep_t              *ep = req->ep;
    strand_integrity_piece_t *piece;
    strand_txq_t             *txq = NULL;
    ucs_status_t              status;

    while ((ep != NULL) && !strand_integrity_req_done(req)) {
        if (ep->flags & STRAND_EP_FLAG_FAILED) {
            req->status = (req->status == UCS_OK) ? ep->status : req->status;
            break;
        }
        if (!strand_integrity_piece_available(&iface->integrity) &&
            (req->again == NULL)) {
            strand_iface_integrity_enqueue(iface, req);
            return;
        }
        status = strand_ep_take_txq(iface, ep, &txq);
        if (status == UCS_ERR_NO_RESOURCE) {
            strand_iface_integrity_enqueue(iface, req);
            return;
        }
        if (status != UCS_OK) {
            req->status = (req->status == UCS_OK) ? status : req->status;
            break;
        }
        status = strand_integrity_next_piece(&iface->integrity, req, &piece);
        if (status == UCS_ERR_NO_RESOURCE) {
            strand_iface_integrity_enqueue(iface, req);
            return;
        }
        if (status != UCS_OK) {
            break; /* nothing more to read now */
        }
        strand_iface_integrity_post(iface, ep, txq, piece);
    }
    strand_iface_integrity_dequeue(iface, req);
    if (strand_integrity_req_done(req)) {
        strand_iface_integrity_finish(iface, req);
    }
}

ucs_status_t
strand_ep_get_checked(strand_iface_t *iface, strand_ep_t *ep,
                      const uct_iov_t *iov, size_t iovcnt, uint64_t remote_addr,
                      const strand_rkey_sig_t *rk, uct_completion_t *comp)
{
    uint32_t                  lkeys[STRAND_MAX_SGE];
    strand_tmp_reg_t         *reg   = NULL;
    strand_integrity_req_t   *req   = NULL;
    strand_integrity_piece_t *piece = NULL;
    strand_txq_t             *txq   = NULL;
    ucs_status_t              status;

    /* taken only when its first piece can go now (UCP waits otherwise) */
    if (!strand_integrity_piece_available(&iface->integrity)) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = strand_ep_get_txq(iface, ep, &txq);
    if (status != UCS_OK) {
        return strand_ep_refused(iface, ep, status, comp);
    }
    status = strand_iov_lkeys(iface, iov, iovcnt, lkeys, &reg);
    if (status == UCS_OK) {
        req    = ucs_calloc(1, sizeof(*req), "strand_integrity_req");
        status = (req == NULL) ? UCS_ERR_NO_MEMORY :
                                 strand_integrity_req_init(&iface->integrity,
                                                           req, rk, remote_addr,
                                                           iov, iovcnt, lkeys);
    }
    if (status == UCS_OK) {
        /* its first piece goes now: nothing of it is reported before
         * this call returns */
        req->ep = ep;
        status  = strand_integrity_next_piece(&iface->integrity, req, &piece);
    }
    if (status != UCS_OK) {
        if (req != NULL) {
            req->ep = NULL;
            strand_integrity_req_finish(&iface->integrity, req);
        }
        ucs_free(req);
        if (reg != NULL) {
            strand_tmp_reg_release(iface, reg);
        }
        strand_ep_unlease_if_idle(iface, ep);
        return (status == UCS_ERR_NO_ELEM) ? UCS_ERR_IO_ERROR : status;
    }
    req->comp    = comp;
    req->tmp_reg = reg;
    ep->outstanding++; /* the GET itself, until its last piece is in */
    ep->checked_gets++;
    strand_iface_integrity_post(iface, ep, txq, piece);
    strand_iface_integrity_issue(iface, req);
    return UCS_INPROGRESS;
}

strand_integrity_req_t *strand_iface_integrity_op_done(strand_iface_t *iface,
                                                       strand_op_t    *op,
                                                       ucs_status_t    status)
{
    strand_integrity_piece_t *piece = op->u.result;
    strand_integrity_req_t   *req   = piece->req;

    strand_integrity_piece_done(&iface->integrity, piece, status);
    return req;
}

void strand_iface_integrity_kick(strand_iface_t         *iface,
                                 strand_integrity_req_t *req)
{
    if (req->ep == NULL) {
        if (strand_integrity_req_done(req)) {
            strand_iface_integrity_finish(iface, req);
        }
        return;
    }
    strand_iface_integrity_issue(iface, req);
}

unsigned strand_iface_integrity_progress(strand_iface_t *iface)
{
    strand_integrity_req_t *req;
    unsigned                n, count = 0;
    strand_ep_t            *ep;

    if (iface->integrity_starved &&
        strand_integrity_piece_available(&iface->integrity)) {
        /* a landing mkey is free again: pending requests that waited for
         * one try again (the eps' own send queues may have nothing to complete
         * that would wake them) */
        iface->integrity_starved = 0;
        ucs_list_for_each(ep, &iface->eps, list) {
            strand_ep_schedule(iface, ep);
        }
    }

    /* each waiting GET once, in order (one that has to wait again goes to
     * the end) */
    for (req = iface->integrity_queue, n = 0; req != NULL; req = req->next) {
        ++n;
    }
    while ((n-- > 0) && ((req = iface->integrity_queue) != NULL)) {
        strand_iface_integrity_dequeue(iface, req);
        strand_iface_integrity_issue(iface, req);
        ++count;
    }
    return count;
}

/* ep is gone: its GET ends for the user now, and for the transport when
 * its last piece is in. */
static void strand_iface_integrity_cancel(strand_iface_t         *iface,
                                          strand_integrity_req_t *req)
{
    uct_completion_t *comp = req->comp;

    req->ep   = NULL;
    req->comp = NULL;
    strand_iface_integrity_dequeue(iface, req);
    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_ERR_CANCELED);
    }
    if (strand_integrity_req_done(req)) {
        strand_iface_integrity_finish(iface, req);
    }
}

void strand_iface_integrity_orphan_op(strand_iface_t *iface, strand_op_t *op)
{
    strand_integrity_piece_t *piece = op->u.result;

    if (piece->req->ep != NULL) {
        strand_iface_integrity_cancel(iface, piece->req);
    }
}

void strand_iface_integrity_ep_gone(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_integrity_req_t *req, *next;

    for (req = iface->integrity_queue; req != NULL; req = next) {
        next = req->next;
        if (req->ep == ep) {
            strand_iface_integrity_cancel(iface, req);
        }
    }
}

void strand_iface_integrity_drop(strand_iface_t           *iface,
                                 strand_integrity_piece_t *piece,
                                 ucs_status_t              status)
{
    strand_integrity_req_t *req = piece->req;

    strand_integrity_piece_done(&iface->integrity, piece, status);
    strand_iface_integrity_kick(iface, req);
}
