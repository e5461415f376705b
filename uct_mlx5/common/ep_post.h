/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How an operation of an endpoint gets onto a send queue: resources
 * (flow-control credits, a lease, a bounce buffer), the segments of an
 * iov, and the post itself (inline here; what is not, in ep_post.c, with
 * the transport's own messages and what a refused operation returns).
 * Shared by the endpoint's operations (ep_ops.c), its tagged ones (tag.c)
 * and integrity-checked GETs.
 */
#ifndef STRAND_EP_POST_H_
#define STRAND_EP_POST_H_

#include "txq_state.h"
#include "fc.h"
#include "stats.h"
#include "txq_pool.h"

#include <ucs/datastruct/mpool.inl>

/* ---------------------------------------------------------- resources */

/* whether a checked GET could start now (no integrity: always) */
static UCS_F_ALWAYS_INLINE int
strand_iface_integrity_can_start(const strand_iface_t *iface)
{
    return (iface->integrity.kind == STRAND_INTEGRITY_OFF) ||
           strand_integrity_piece_available(&iface->integrity);
}

static UCS_F_ALWAYS_INLINE int
strand_ep_can_send(strand_iface_t *iface, strand_ep_t *ep)
{
    if (ucs_unlikely(strand_ep_fc_wnd(ep) <= 0)) {
        return 0; /* waiting for a grant */
    }
    return iface->tl->sq_can_post(iface, ep);
}

/* The send queue to post on: the ep's lease, taken now if it holds none (the
 * transport's own messages come here directly). */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_take_txq(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t **txq_p)
{
    if (ucs_unlikely(ep->flags & STRAND_EP_FLAG_FAILED)) {
        return ep->status;
    }
    *txq_p = strand_ep_txq_ready(iface, ep);
    if (ucs_likely(*txq_p != NULL)) {
        strand_ep_tx_verify(iface, ep);
        return UCS_OK;
    }
    return strand_ep_lease(iface, ep, txq_p);
}

/* The send queue for a user's operation: while the ep has pending requests, only
 * they may send (a send from a completion callback must not overtake
 * them). */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_get_txq(strand_iface_t *iface,
                                                          strand_ep_t    *ep,
                                                          strand_txq_t  **txq_p)
{
    if (ucs_unlikely(!ucs_arbiter_group_is_empty(&ep->arb_group) &&
                     !(ep->flags & STRAND_EP_FLAG_IN_PENDING))) {
        return (ep->flags & STRAND_EP_FLAG_FAILED) ? ep->status :
                                                     UCS_ERR_NO_RESOURCE;
    }
    return strand_ep_take_txq(iface, ep, txq_p);
}

/* A lease taken for an operation that was then not posted goes back. */
static UCS_F_ALWAYS_INLINE void
strand_ep_unlease_if_idle(strand_iface_t *iface, strand_ep_t *ep)
{
    if ((ep->outstanding == 0) && (ep->held == 0)) {
        iface->tl->sq_release(iface, ep);
        strand_ep_tx_update(iface, ep);
    }
}

static UCS_F_ALWAYS_INLINE strand_tx_desc_t *
strand_ep_get_desc(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_tx_desc_t *desc = ucs_mpool_get_inline(&iface->tx_mp);

    if (ucs_unlikely(desc == NULL)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
        strand_ep_unlease_if_idle(iface, ep);
    }
    return desc;
}

/* A pack callback wrote `length` bytes where `max` fit
 * (UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN): the operation is refused, its
 * descriptor and lease go back. The descriptors have STRAND_TX_SLACK
 * bytes past the segment, so that a callback that overran by a little
 * wrote into nobody's memory. */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_check_packed(
        strand_iface_t *iface, strand_ep_t *ep, strand_tx_desc_t *desc,
        size_t length, size_t max, const char *what)
{
    if (ucs_likely(length <= max)) {
        return UCS_OK;
    }
    ucs_mpool_put_inline(desc);
    strand_ep_unlease_if_idle(iface, ep);
    ucs_error("%s: %s: invalid %s length %zu (max_bcopy %zu)",
              iface->dev->info.name, iface->tl_name, what, length, max);
    return UCS_ERR_INVALID_PARAM;
}

/* ep posts one more WQE on txq (its slot claimed). */
static UCS_F_ALWAYS_INLINE void
strand_ep_count(strand_ep_t *ep, strand_txq_t *txq)
{
    txq->wqes++;
    ep->outstanding++;
}

/* The WQE at ctrl (bbs BBs, its ctrl bytes 0-7 in head) is written and
 * counted: ring the doorbell and hand the SQ to the device (_last: as the
 * post path's last step, which returns what this returns, UCS_OK;
 * kick_db: strand_txq_ring_head_last). */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_ring_last(strand_ep_t *ep, strand_txq_t *txq,
                    struct mlx5_wqe_ctrl_seg *ctrl, uint64_t head, int kick_db)
{
    strand_txq_log_tx(txq, ctrl, ep->av_ds);
    return strand_txq_ring_head_last(txq, ctrl, head, kick_db);
}

static UCS_F_ALWAYS_INLINE void
strand_ep_ring(strand_ep_t *ep, strand_txq_t *txq,
               struct mlx5_wqe_ctrl_seg *ctrl, unsigned bbs, uint64_t head)
{
    strand_txq_log_tx(txq, ctrl, ep->av_ds);
    strand_txq_ring_head(txq, ctrl, bbs, head);
}

/*
 * Finish the WQE at ctrl, one whose completion has work to do (op: what,
 * and its type): it asks for a CQE. fm_se: fence mode and solicited bit;
 * imm: as the WQE carries it, network order.
 */
static UCS_F_ALWAYS_INLINE void
strand_ep_post_imm(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t *txq,
                   struct mlx5_wqe_ctrl_seg *ctrl, uint8_t opcode,
                   uint8_t opmod, unsigned ds, uint8_t fm_se, uint32_t imm,
                   strand_op_t *op)
{
    unsigned bbs  = strand_ds_to_bbs(ds);
    uint64_t head = strand_sq_ctrl_head(&txq->sq, txq->sq.cur_post, opmod,
                                        opcode, ds);
    uint8_t  fm   = fm_se | strand_txq_ce(txq, 1);

    strand_sq_write_ctrl(&txq->sq, ctrl, head,
                         strand_ep_ctrl_tail(ep, txq, fm, imm));
    op->ep     = ep;
    op->lane   = ep->lane;
    op->opcode = opcode;
    strand_txq_claim(txq, bbs, op);
    strand_ep_count(ep, txq);
    strand_ep_ring(ep, txq, ctrl, bbs, head);
    strand_ep_gate(iface, ep); /* a fence may be spent */
}

static UCS_F_ALWAYS_INLINE void
strand_ep_post(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t *txq,
               struct mlx5_wqe_ctrl_seg *ctrl, uint8_t opcode, uint8_t opmod,
               unsigned ds, uint8_t fm_se, strand_op_t *op)
{
    strand_ep_post_imm(iface, ep, txq, ctrl, opcode, opmod, ds, fm_se, 0, op);
}

/* The ctrl segment, the head of the op record and the counts of the WQE
 * in slot (bbs BBs; op_head: its opcode and ds, strand_ctrl_head_op), one
 * whose completion only counts (short operations): a CQE only every
 * tx_moderation WQEs (and, must, now). tail: its ctrl bytes 8-15 as
 * stored but for the CQE flag (the stream, fm_ce_se; strand_ep_ctrl_tail);
 * kind: its op record's kind word (strand_op_light_kind), both made of
 * the ready ep's templates on the fast path.
 * Its segments are written before or after; then strand_ep_ring() with
 * what this returns, the ctrl bytes 0-7. */
static UCS_F_ALWAYS_INLINE uint64_t strand_ep_claim_light(
        strand_ep_t *ep, strand_txq_t *txq, const strand_txq_slot_t *slot,
        uint64_t op_head, unsigned bbs, uint64_t tail, uint32_t kind, int must)
{
    uint64_t head = strand_sq_ctrl_head_with(&txq->sq, slot->pi, op_head);

    if (strand_txq_ce(txq, must)) {
        tail |= strand_ctrl_tail(0, MLX5_WQE_CTRL_CQ_UPDATE, 0);
    }
    strand_sq_write_ctrl(&txq->sq, slot->ctrl, head, tail);
    /* ep's count first: after the producer index is stored, a store to
     * ep (the compiler cannot tell it from the queue) would make the
     * doorbell read the index again */
    strand_ep_count(ep, txq);
    strand_txq_claim_light(txq, slot, bbs, ep, kind);
    return head;
}

/* Finish the WQE at ctrl (ds units), one whose completion only counts, on
 * the general path: a CQE also when an ep waits for a send queue (the send queues' work
 * must complete for one to be given back). */
static UCS_F_ALWAYS_INLINE void
strand_ep_post_light(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t *txq,
                     struct mlx5_wqe_ctrl_seg *ctrl, uint8_t opcode,
                     unsigned ds, uint8_t fm_se)
{
    strand_txq_slot_t slot;
    uint64_t          head;

    strand_txq_slot(txq, &slot);
    strand_debug_assert(slot.ctrl == ctrl);
    strand_sq_check((ds > 0) && (ds <= 0x3f), &txq->sq, "ds out of range");
    head = strand_ep_claim_light(ep, txq, &slot,
                                 strand_ctrl_head_op(0, opcode, ds),
                                 strand_ds_to_bbs(ds),
                                 strand_ep_ctrl_tail(ep, txq, fm_se, 0),
                                 strand_op_light_kind(ep->lane, opcode),
                                 iface->txq_wanted);
    strand_ep_ring(ep, txq, ctrl, strand_ds_to_bbs(ds), head);
    strand_ep_gate(iface, ep); /* a fence may be spent */
}

/* ------------------------------------------------------ the fast path */

/*
 * A short operation (am_short, put_short) is posted straight from its
 * entry point when there is nothing to decide: ep's gate is open (iface.h:
 * ready, no fence due, no ep waiting for a send queue, which would want a CQE and
 * the dcs quota checked), the send queue has room, an active message's window is
 * above ep->fc_limit (ep_post.c), and the WQE does not run over the end of
 * the send queue. Anything else goes the general way, to the same WQE
 * bytes through every check.
 */

/* The send queue for a short operation of ep whose WQE takes bbs BBs, and the
 * WQE's slot on it; NULL: the general path. */
static UCS_F_ALWAYS_INLINE strand_txq_t *
strand_ep_fast_txq(strand_iface_t *iface, strand_ep_t *ep, unsigned bbs,
                   strand_txq_slot_t *slot)
{
    strand_txq_t *txq;

    strand_ep_tx_verify(iface, ep);
    if (ucs_unlikely(ep->tx_gate != iface->tx_gate)) {
        return NULL;
    }
    txq      = ep->tx_txq; /* an open gate: ready */
    slot->pi = txq->sq.cur_post;
    if (ucs_unlikely(!strand_txq_fast_room(txq, slot->pi + bbs))) {
        return NULL;
    }
    strand_debug_assert(strand_txq_has_room(iface, txq));
    slot->ctrl = strand_sq_ctrl(&txq->sq);
    return txq;
}

/* ep's address vector (av_ds units: ep->av_ds, or the constant it is)
 * behind the ctrl segment of the WQE in slot; returns where the WQE's
 * segments go, all in one block (strand_txq_fast_room: no wrap). */
static UCS_F_ALWAYS_INLINE void *
strand_ep_fast_start(strand_ep_t *ep, const strand_txq_slot_t *slot,
                     unsigned av_ds)
{
    strand_txq_set_av(slot->ctrl, &ep->av, av_ds);
    return (uint8_t *)slot->ctrl + (1 + av_ds) * STRAND_WQE_DS;
}

/* Credits ran low: ask for more once; none left: no resource. */
ucs_status_t strand_ep_fc_low(strand_iface_t *iface, strand_ep_t *ep);

/* Flow control of an active message (a no-op when it is disabled: the
 * window never gets low): UCS_OK, or why it may not be sent now. */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_fc_check(strand_iface_t *iface, strand_ep_t *ep)
{
    if (ucs_unlikely(strand_ep_fc_wnd(ep) <= iface->fc.soft_thresh)) {
        return strand_ep_fc_low(iface, ep);
    }
    return UCS_OK;
}

/* The send queue for an active message: flow control first. */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_am_get_txq(
        strand_iface_t *iface, strand_ep_t *ep, strand_txq_t **txq_p)
{
    ucs_status_t status = strand_ep_fc_check(iface, ep);

    if (status != UCS_OK) {
        return status;
    }
    return strand_ep_get_txq(iface, ep, txq_p);
}

/* one credit spent (also when flow control is off: the window is then
 * filled up again long before it runs out, strand_ep_fc_low) */
static UCS_F_ALWAYS_INLINE void
strand_ep_am_sent(strand_iface_t *iface, strand_ep_t *ep)
{
    ep->fc_over--;
}

static UCS_F_ALWAYS_INLINE uint8_t strand_ep_fence_mode(strand_iface_t *iface,
                                                        strand_ep_t    *ep)
{
    /* an ep fence or an iface fence since the last WQE: the beats differ */
    if (ucs_unlikely(ep->fence_beat != iface->fence_beat)) {
        ep->fence_beat = iface->fence_beat;
        return STRAND_WQE_CTRL_FM_SMALL_FENCE;
    }
    return STRAND_WQE_CTRL_FM_NONE;
}

/* Active messages are solicited: a receiver waiting for UCT_EVENT_RECV_SIG
 * (a solicited-only arm) wakes up for them. */
static UCS_F_ALWAYS_INLINE uint8_t strand_ep_am_fm_se(strand_iface_t *iface,
                                                      strand_ep_t    *ep)
{
    return strand_ep_fence_mode(iface, ep) | MLX5_WQE_CTRL_SOLICITED;
}

/*
 * Local keys of an iov. Entries without a memory handle are registered here
 * (through the MD and its registration cache) and released when the WQE
 * retires.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_iov_lkeys(strand_iface_t *iface, const uct_iov_t *iov, size_t iovcnt,
                 uint32_t *lkeys, strand_tmp_reg_t **reg_p)
{
    strand_tmp_reg_t *reg = NULL;
    ucs_status_t      status;
    uct_mem_h         memh;
    size_t            i, len;

    for (i = 0; i < iovcnt; ++i) {
        len = uct_iov_get_length(&iov[i]);
        if (ucs_likely((iov[i].memh != UCT_MEM_HANDLE_NULL) || (len == 0))) {
            lkeys[i] = (len == 0) ?
                               0 :
                               ((const strand_md_memh_t *)iov[i].memh)->mr.lkey;
            continue;
        }
        if (reg == NULL) {
            reg = ucs_malloc(sizeof(*reg), "strand_tmp_reg");
            if (reg == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
            reg->count = 0;
        }
        status = uct_md_mem_reg(&iface->md->super, iov[i].buffer, len,
                                UCT_MD_MEM_ACCESS_LOCAL_READ |
                                        UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                                &memh);
        if (status != UCS_OK) {
            strand_tmp_reg_release(iface, reg);
            return status;
        }
        reg->memh[reg->count++] = memh;
        lkeys[i]                = ((const strand_md_memh_t *)memh)->mr.lkey;
    }
    *reg_p = reg;
    return UCS_OK;
}

/* Data segments for an iov; returns the count, *seg_p moves on. */
static UCS_F_ALWAYS_INLINE unsigned
strand_set_iov_segs(strand_txq_t *txq, void **seg_p, const uct_iov_t *iov,
                    size_t iovcnt, const uint32_t *lkeys)
{
    void    *seg = *seg_p;
    unsigned n   = 0;
    size_t   i, len;

    for (i = 0; i < iovcnt; ++i) {
        len = uct_iov_get_length(&iov[i]);
        if (len == 0) {
            continue;
        }
        strand_set_data_seg(seg, (uintptr_t)iov[i].buffer, len, lkeys[i]);
        seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_data_seg), txq->sq.buf,
                             txq->sq.end);
        ++n;
    }
    *seg_p = seg;
    return n;
}

/* a length check against an upper bound only (the lengths are unsigned) */
#define STRAND_CHECK_MAX(_length, _max, _name)                          \
    UCT_CHECK_PARAM((size_t)(_length) <= (size_t)(_max),                \
                    "Invalid %s length: %zu (expected: <= %zu)", _name, \
                    (size_t)(_length), (size_t)(_max))

/* the ep, its iface and the send queue to post on */
#define STRAND_EP_BASE_DECL(_tl_ep)                                          \
    strand_ep_t    *ep    = ucs_derived_of(_tl_ep, strand_ep_t);             \
    strand_iface_t *iface = ucs_derived_of((_tl_ep)->iface, strand_iface_t); \
    strand_txq_t   *txq   = NULL;                                            \
    ucs_status_t    status

/* ... and the WQE being built */
#define STRAND_EP_DECL(_tl_ep)          \
    STRAND_EP_BASE_DECL(_tl_ep);        \
    strand_op_t               op = {0}; \
    struct mlx5_wqe_ctrl_seg *ctrl;     \
    void                     *seg

/* A SEND from a bounce buffer: hdr, then what pack_cb writes. */
ssize_t strand_ep_send_hdr_bcopy(uct_ep_h tl_ep, const void *hdr,
                                 unsigned hdr_len, uct_pack_callback_t pack_cb,
                                 void *arg, uint8_t opcode, uint32_t imm_be);

/* A zero-copy SEND: hdr from a bounce buffer, then the iov (limits checked
 * by the caller); UCS_INPROGRESS and comp later, or an error. */
ucs_status_t strand_ep_send_hdr_zcopy(uct_ep_h tl_ep, const void *hdr,
                                      unsigned hdr_len, const uct_iov_t *iov,
                                      size_t iovcnt, uint8_t opcode,
                                      uint32_t imm_be, uct_completion_t *comp);

/* A SEND whose data (the AM id first) is written inline from `sge`. */
void strand_ep_post_inline_send(strand_iface_t *iface, strand_ep_t *ep,
                                strand_txq_t *txq, const struct ibv_sge *sge,
                                unsigned n, uint8_t fm_se);

/* an inline SEND of the transport's own (FC request/grant, keepalive):
 * no flow control; UCS_ERR_NO_RESOURCE when no send queue or room */
ucs_status_t strand_ep_send_ctrl(strand_ep_t *ep, uint8_t am_id,
                                 const void *msg, unsigned length);
/* a keepalive probe with a completion of its own: UCS_INPROGRESS (comp
 * with its outcome) or UCS_ERR_NO_RESOURCE */
ucs_status_t strand_ep_send_probe(strand_ep_t *ep, uct_completion_t *comp);
/* ask the peer of ep for credits (UCS_OK: request posted) */
ucs_status_t strand_fc_request(strand_iface_t *iface, strand_ep_t *ep);
/* ep waits for a grant (1) or not (0) any more */
void strand_fc_set_req(strand_iface_t *iface, strand_ep_t *ep, int on);

/* An operation ep did not post, for `status`: what it returns. An ep whose
 * failure its owner was not told yet (FAIL_PENDING) still takes work, as
 * UCX's mlx5 transports do until their error handler ran: nothing is
 * sent, UCS_OK, or UCS_INPROGRESS and `comp` completes with the failure
 * when the owner is told. Otherwise `status` itself. */
ucs_status_t strand_ep_refused(strand_iface_t *iface, strand_ep_t *ep,
                               ucs_status_t status, uct_completion_t *comp);
/* the same for an operation that returns a length (bcopy) */
static inline ssize_t strand_ep_refused_len(strand_iface_t *iface,
                                            strand_ep_t    *ep,
                                            ucs_status_t    status)
{
    status = strand_ep_refused(iface, ep, status, NULL);
    return (status == UCS_OK) ? 0 : (ssize_t)status;
}

#endif
