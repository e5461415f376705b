/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What gets an operation onto a send queue and is not inline (ep_post.h):
 * flow-control credits running low and the credit request, a SEND whose
 * data is written inline from pieces, the transport's own messages, and
 * what an operation not posted returns.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ep_post.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <string.h>

/* Credits ran low: ask for more once; none left: no resource. */
ucs_status_t strand_ep_fc_low(strand_iface_t *iface, strand_ep_t *ep)
{
    ucs_status_t status;

    if (!iface->fc.enabled) {
        strand_ep_fc_set_wnd(ep, iface->fc.wnd_size); /* spent only to be
                                                         counted */
        return UCS_OK;
    }
    if (!(ep->flags & STRAND_EP_FLAG_FC_REQ)) {
        status = strand_fc_request(iface, ep);
        if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
            return status;
        }
    }
    if (strand_ep_fc_wnd(ep) > 0) {
        return UCS_OK;
    }
    STRAND_EP_STAT(ep, FC_WAIT);
    return UCS_ERR_NO_RESOURCE;
}

/* A SEND whose data (the AM id first) is written inline from `sge`. */
void strand_ep_post_inline_send(strand_iface_t *iface, strand_ep_t *ep,
                                strand_txq_t *txq, const struct ibv_sge *sge,
                                unsigned n, uint8_t fm_se)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    unsigned                  ds;
    void                     *seg;

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    ds   = STRAND_EP_DS(ep) +
         strand_set_inline_seg(seg, sge, n, txq->sq.buf, txq->sq.end, NULL);
    strand_ep_post_light(iface, ep, txq, ctrl, MLX5_OPCODE_SEND, ds, fm_se);
}

/* The keepalive probe whose own completion comp follows: UCS_OK when the
 * peer took it, the endpoint's error when it failed (uct_ep_check with a
 * completion). */
ucs_status_t strand_ep_send_probe(strand_ep_t *ep, uct_completion_t *comp)
{
    strand_iface_t           *iface = ucs_derived_of(ep->super.super.iface,
                                                     strand_iface_t);
    strand_txq_t             *txq   = NULL;
    uint8_t                   am_hdr[STRAND_AM_HDR_MAX];
    struct ibv_sge            sge;
    struct mlx5_wqe_ctrl_seg *ctrl;
    strand_op_t               op = {.type = STRAND_OP_PLAIN, .comp = comp};
    ucs_status_t              status;
    void                     *seg;
    unsigned                  ds;

    status = strand_ep_take_txq(iface, ep, &txq);
    if (status != UCS_OK) {
        return status;
    }
    sge.addr   = (uintptr_t)am_hdr;
    sge.length = strand_am_hdr_pack(iface, am_hdr, STRAND_AM_KEEPALIVE);
    ctrl       = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    ds         = STRAND_EP_DS(ep) +
         strand_set_inline_seg(seg, &sge, 1, txq->sq.buf, txq->sq.end, NULL);
    strand_ep_post(iface, ep, txq, ctrl, MLX5_OPCODE_SEND, 0, ds, 0, &op);
    return UCS_INPROGRESS;
}

/* An inline SEND of the transport's own: [TMH][am_id][msg]. */
ucs_status_t strand_ep_send_ctrl(strand_ep_t *ep, uint8_t am_id,
                                 const void *msg, unsigned length)
{
    strand_iface_t *iface = ucs_derived_of(ep->super.super.iface,
                                           strand_iface_t);
    strand_txq_t   *txq   = NULL;
    uint8_t         am_hdr[STRAND_AM_HDR_MAX];
    struct ibv_sge  sge[2];
    ucs_status_t    status;

    status = strand_ep_take_txq(iface, ep, &txq);
    if (status != UCS_OK) {
        return status;
    }
    sge[0].addr   = (uintptr_t)am_hdr;
    sge[0].length = strand_am_hdr_pack(iface, am_hdr, am_id);
    sge[1].addr   = (uintptr_t)msg;
    sge[1].length = length;
    /* flow-control requests and grants wake a waiting peer; keepalive
     * probes need not */
    strand_ep_post_inline_send(iface, ep, txq, sge, 2,
                               (am_id == STRAND_AM_KEEPALIVE) ?
                                       0 :
                                       MLX5_WQE_CTRL_SOLICITED);
    return UCS_OK;
}

ucs_status_t strand_ep_refused(strand_iface_t *iface, strand_ep_t *ep,
                               ucs_status_t status, uct_completion_t *comp)
{
    uct_completion_t **taken;
    uint32_t           max;

    if ((status != ep->status) || !strand_ep_is_failing(ep)) {
        return status;
    }
    if (comp == NULL) {
        return UCS_OK;
    }
    if (ep->num_taken == ep->max_taken) {
        max   = ucs_max(8, ep->max_taken * 2);
        taken = ucs_realloc(ep->taken, max * sizeof(*taken), "strand_ep_taken");
        if (taken == NULL) {
            return status;
        }
        ep->taken     = taken;
        ep->max_taken = max;
    }
    ep->taken[ep->num_taken++] = comp;
    return UCS_INPROGRESS;
}

/* ep asked for credits and waits for the grant (FC_REQ), or not. What an
 * active message compares its window with follows: while ep waits it may
 * spend the rest (0), else it asks first below the soft threshold
 * (strand_ep_fc_check; the fast path's fc_over counts down to it). The
 * window stays what it is. */
void strand_fc_set_req(strand_iface_t *iface, strand_ep_t *ep, int req)
{
    int32_t wnd = strand_ep_fc_wnd(ep);

    if (req) {
        ep->flags |= STRAND_EP_FLAG_FC_REQ;
        ep->fc_limit = 0;
    } else {
        ep->flags &= ~STRAND_EP_FLAG_FC_REQ;
        ep->fc_limit = iface->fc.soft_thresh;
    }
    strand_ep_fc_set_wnd(ep, wnd);
}

/* Ask the peer of ep for credits (posted on txq, which has room). */
ucs_status_t strand_fc_request(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_fc_request_t req;
    ucs_status_t        status;

    req.ep_id = ep->fc_id;
    req.seq   = ep->fc_seq + 1;
    uct_iface_get_address(&iface->super.super, (uct_iface_addr_t *)req.addr);
    uct_iface_get_device_address(
            &iface->super.super,
            (uct_device_addr_t *)(req.addr + iface->config.iface_addr_len));
    status = strand_ep_send_ctrl(ep, STRAND_AM_FC_REQUEST, &req,
                                 STRAND_FC_REQUEST_LEN(
                                         strand_iface_reply_addr_len(iface)));
    if (status != UCS_OK) {
        return status;
    }
    ep->fc_seq      = req.seq;
    ep->fc_req_time = ucs_get_time();
    if (!(ep->flags & STRAND_EP_FLAG_FC_REQ)) {
        strand_fc_set_req(iface, ep, 1);
        ep->fc_seq_first = req.seq;
        iface->fc.waiting++;
    }
    return UCS_OK;
}

/* A SEND from a bounce buffer: `hdr` (hdr_len bytes), then what pack_cb
 * writes; returns the packed length or an error. */
ssize_t strand_ep_send_hdr_bcopy(uct_ep_h tl_ep, const void *hdr,
                                 unsigned hdr_len, uct_pack_callback_t pack_cb,
                                 void *arg, uint8_t opcode, uint32_t imm_be)
{
    STRAND_EP_DECL(tl_ep);
    strand_tx_desc_t *desc;
    size_t            length;

    status = strand_ep_am_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused_len(iface, ep, status);
    }
    desc = strand_ep_get_desc(iface, ep);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(desc->data, hdr, hdr_len);
    length = pack_cb(desc->data + hdr_len, arg);
    status = strand_ep_check_packed(iface, ep, desc, length,
                                    iface->config.seg_size - hdr_len,
                                    "bcopy send");
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_data_seg(seg, (uintptr_t)desc->data, length + hdr_len,
                        desc->lkey);
    op.type = STRAND_OP_DESC;
    op.desc = desc;
    strand_ep_post_imm(iface, ep, txq, ctrl, opcode, 0, STRAND_EP_DS(ep) + 1,
                       strand_ep_am_fm_se(iface, ep), imm_be, &op);
    strand_ep_am_sent(iface, ep);
    return length;
}

/* A zero-copy SEND: `hdr` (hdr_len bytes) goes from a registered bounce
 * buffer (an inline segment followed by data segments is not used: one
 * kind per WQE), the iov from the user's memory. */
ucs_status_t strand_ep_send_hdr_zcopy(uct_ep_h tl_ep, const void *hdr,
                                      unsigned hdr_len, const uct_iov_t *iov,
                                      size_t iovcnt, uint8_t opcode,
                                      uint32_t imm_be, uct_completion_t *comp)
{
    STRAND_EP_DECL(tl_ep);
    strand_tx_desc_t *desc;
    uint32_t          lkeys[STRAND_MAX_SGE];
    unsigned          ds;

    status = strand_iov_lkeys(iface, iov, iovcnt, lkeys, &op.tmp_reg);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = strand_ep_am_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        goto err;
    }
    desc = strand_ep_get_desc(iface, ep);
    if (ucs_unlikely(desc == NULL)) {
        status = UCS_ERR_NO_RESOURCE;
        goto err;
    }
    memcpy(desc->data, hdr, hdr_len);

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_data_seg(seg, (uintptr_t)desc->data, hdr_len, desc->lkey);
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_data_seg), txq->sq.buf,
                         txq->sq.end);
    ds  = STRAND_EP_DS(ep) + 1 +
         strand_set_iov_segs(txq, &seg, iov, iovcnt, lkeys);
    op.type = STRAND_OP_DESC;
    op.desc = desc;
    op.comp = comp;
    strand_ep_post_imm(iface, ep, txq, ctrl, opcode, 0, ds,
                       strand_ep_am_fm_se(iface, ep), imm_be, &op);
    strand_ep_am_sent(iface, ep);
    return UCS_INPROGRESS;

err:
    if (op.tmp_reg != NULL) {
        strand_tmp_reg_release(iface, op.tmp_reg);
    }
    return strand_ep_refused(iface, ep, status, comp);
}
