/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware tag matching, the transport's side: see tm_list.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "tm_list.h"
#include "status.h"
#include "mlx5/wqe.h"
#include "mlx5/cqe.h"
#include "mlx5/doorbell.h"
#include "uct_mlx5/strand_md.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_iov.inl>
#include <ucs/algorithm/crc.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <inttypes.h>
#include <string.h>

#define STRAND_TM_NONE UINT32_MAX

/* An entry of the tag list. */
enum {
    STRAND_TM_ENTRY_RNDV     = UCS_BIT(0), /* CONSUMED: the device reads */
    STRAND_TM_ENTRY_CANCEL   = UCS_BIT(1), /* a REMOVE is posted or waits */
    STRAND_TM_ENTRY_REPORTED = UCS_BIT(2), /* the user was told the end */
    STRAND_TM_ENTRY_BOUNCE   = UCS_BIT(3)  /* posted as its bounce slot */
};

struct strand_tm_entry {
    uct_tag_context_t *ctx;    /* NULL once the user may reuse it */
    void              *buffer; /* in tm->bufs while the user owns it */
    uint32_t           lkey;
    uint32_t           next; /* free list */
    uint8_t            cqes; /* completions still to come */
    uint8_t            flags;
};

struct strand_tm_rndv_op {
    void             *owner; /* NULL: free */
    uct_completion_t *comp;
    uint32_t          next; /* free list */
    uint16_t          gen;  /* in app_ctx: a late FIN of an operation
                               cancelled meanwhile is not taken for
                               the next one in this slot */
};

static inline strand_tm_ctx_priv_t *strand_tm_priv(uct_tag_context_t *ctx)
{
    UCS_STATIC_ASSERT(sizeof(strand_tm_ctx_priv_t) <= UCT_TAG_PRIV_LEN);
    return (strand_tm_ctx_priv_t *)ctx->priv;
}

/* Where a message matched to entry idx landed: its bounce slot, or the
 * user's buffer. */
static inline void *strand_tm_landed(const strand_tm_t *tm, uint32_t idx)
{
    const strand_tm_entry_t *e = &tm->entries[idx];

    return (e->flags & STRAND_TM_ENTRY_BOUNCE) ?
                   tm->bounce + (size_t)idx * tm->min_recv :
                   e->buffer;
}

/* Where the data of a message matched to entry idx is: the CQE when the
 * device scattered it there (its buffer untouched), else where it landed. */
static inline void *strand_tm_msg_data(const strand_tm_t *tm, uint32_t idx,
                                       const struct mlx5_cqe64 *cqe)
{
    const void *in_cqe = strand_cqe_inline_data(cqe);

    return (in_cqe != NULL) ? (void *)in_cqe : strand_tm_landed(tm, idx);
}

/* ------------------------------------------------------- command QP */

static inline int strand_tm_cmd_room(const strand_tm_t *tm)
{
    return (tm->cmd_sq.cur_post - tm->cmd_done) < tm->cmd_max;
}

/* One list operation (every one fits one basic block: ctrl, tm segment
 * and, for APPEND, one data segment), signaled, with the count of
 * unexpected messages handled so far. */
static void strand_tm_cmd_post(strand_tm_t *tm, unsigned op, uint32_t entry,
                               uint16_t index, uint64_t tag, uint64_t mask,
                               const void *buffer, uint32_t length,
                               uint32_t lkey)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    struct mlx5_wqe_tm_seg   *seg;
    struct mlx5_wqe_data_seg *dseg;
    strand_tm_cmd_t          *cmd;
    unsigned                  ds = 3;

    ucs_assert(strand_tm_cmd_room(tm));
    ctrl = strand_sq_ctrl(&tm->cmd_sq);
    seg  = (struct mlx5_wqe_tm_seg *)(ctrl + 1);
    strand_set_tm_seg(seg, op, STRAND_TM_FLAG_CQE | STRAND_TM_FLAG_SW_CNT,
                      index, tm->unexp_cnt, tag, mask);
    if (op == STRAND_TM_OP_APPEND) {
        dseg = (struct mlx5_wqe_data_seg *)(seg + 1);
        if (length > 0) {
            strand_set_data_seg(dseg, (uintptr_t)buffer, length, lkey);
        } else {
            strand_set_data_seg_end(dseg); /* an empty receive */
        }
        ds = 4;
    }
    strand_sq_set_ctrl(&tm->cmd_sq, ctrl, 0, MLX5_OPCODE_TAG_MATCHING, ds, 0,
                       0);

    cmd         = &tm->cmds[tm->cmd_sq.cur_post & (tm->cmd_sq.wqe_cnt - 1)];
    cmd->entry  = entry;
    cmd->op     = (uint8_t)op;
    cmd->sw_cnt = tm->unexp_cnt;
    tm->unexp_reported = tm->unexp_cnt;
    strand_sq_advance(&tm->cmd_sq, 1);
    strand_dev_qp_ring(tm->cmd_qp, &tm->cmd_sq, ctrl, 1);
}

/* ------------------------------------------------------------- list */

/* The user may reuse the tag's context and buffer from now on. */
static uct_tag_context_t *
strand_tm_entry_detach(strand_tm_t *tm, strand_tm_entry_t *e)
{
    uct_tag_context_t *ctx = e->ctx;
    khiter_t           it;

    if (e->buffer != NULL) {
        it = kh_get(strand_tm_bufs, &tm->bufs, (uintptr_t)e->buffer);
        if (it != kh_end(&tm->bufs)) {
            kh_del(strand_tm_bufs, &tm->bufs, it);
        }
        e->buffer = NULL;
    }
    e->ctx = NULL;
    e->flags |= STRAND_TM_ENTRY_REPORTED;
    return ctx;
}

static void strand_tm_entry_release(strand_tm_t *tm, uint32_t idx)
{
    strand_tm_entry_t *e = &tm->entries[idx];

    strand_tm_entry_detach(tm, e);
    e->flags                   = 0;
    e->next                    = STRAND_TM_NONE;
    tm->entries[tm->tail].next = idx;
    tm->tail                   = idx;
    --tm->tags_used;
}

/* One completion of entry idx came: the last one frees it. */
static void strand_tm_entry_cqe(strand_tm_t *tm, uint32_t idx, unsigned n)
{
    strand_tm_entry_t *e = &tm->entries[idx];

    ucs_assertv(e->cqes >= n, "entry %u cqes %u n %u", idx, e->cqes, n);
    e->cqes -= n;
    if (e->cqes == 0) {
        strand_tm_entry_release(tm, idx);
    }
}

ucs_status_t strand_tm_recv_zcopy(strand_tm_t *tm, uct_tag_t tag,
                                  uct_tag_t tag_mask, const uct_iov_t *iov,
                                  size_t iovcnt, uct_tag_context_t *ctx)
{
    strand_tm_ctx_priv_t *priv   = strand_tm_priv(ctx);
    size_t                length = uct_iov_total_length(iov, iovcnt);
    void                 *buffer = (iovcnt > 0) ? iov[0].buffer : NULL;
    uint32_t              lkey   = 0;
    strand_tm_entry_t    *e;
    uint32_t              idx;

    UCT_CHECK_PARAM(iovcnt <= 1, "tag_recv_zcopy: iovcnt %zu (max 1)", iovcnt);
    UCT_CHECK_PARAM(length <= UINT32_MAX, "tag_recv_zcopy: %zu bytes", length);
    if (length > 0) {
        UCT_CHECK_PARAM(iov[0].memh != UCT_MEM_HANDLE_NULL,
                        "tag_recv_zcopy: the buffer needs a memory handle");
        lkey = ((const strand_md_memh_t *)iov[0].memh)->mr.lkey;
    }
    if (tm->tags_used >= tm->max_tags) {
        ++tm->stats.list_full;
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (!strand_tm_cmd_room(tm)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (length > 0) {
        int ret;
        kh_put(strand_tm_bufs, &tm->bufs, (uintptr_t)buffer, &ret);
        if (ret == 0) {
            return UCS_ERR_ALREADY_EXISTS;
        }
    }

    /* the free list's head is where the device appends; the APPEND tells
     * it the next one */
    idx = tm->head;
    e   = &tm->entries[idx];
    ucs_assert(e->next != STRAND_TM_NONE);
    tm->head  = e->next;
    e->next   = STRAND_TM_NONE;
    e->ctx    = ctx;
    e->buffer = (length > 0) ? buffer : NULL;
    e->lkey   = lkey;
    e->flags  = (length < tm->min_recv) ? STRAND_TM_ENTRY_BOUNCE : 0;
    e->cqes   = 2; /* the APPEND's, and the one that ends the tag */
    ++tm->tags_used;

    priv->tag    = tag; /* the match replaces it with the sender's */
    priv->buffer = buffer;
    priv->length = (uint32_t)length;
    priv->entry  = idx;
    if (e->flags & STRAND_TM_ENTRY_BOUNCE) {
        /* too small for a rendezvous request: the device puts what
         * matches into the entry's bounce slot */
        strand_tm_cmd_post(tm, STRAND_TM_OP_APPEND, idx, (uint16_t)tm->head,
                           tag, tag_mask, strand_tm_landed(tm, idx),
                           tm->min_recv, tm->bounce_mr.lkey);
    } else {
        strand_tm_cmd_post(tm, STRAND_TM_OP_APPEND, idx, (uint16_t)tm->head,
                           tag, tag_mask, buffer, (uint32_t)length, lkey);
    }
    ++tm->stats.tags_posted;
    return UCS_OK;
}

ucs_status_t
strand_tm_recv_cancel(strand_tm_t *tm, uct_tag_context_t *ctx, int force)
{
    uint32_t           idx = strand_tm_priv(ctx)->entry;
    strand_tm_entry_t *e;

    if ((idx >= tm->num_entries) || (tm->entries[idx].ctx != ctx)) {
        /* already completed: nothing of the transport's left */
        return UCS_OK;
    }
    e = &tm->entries[idx];
    if (force) {
        /* the user forgets it now: what the device still reports for this
         * entry only frees it */
        strand_tm_entry_detach(tm, e);
    }
    if (e->flags & (STRAND_TM_ENTRY_CANCEL | STRAND_TM_ENTRY_RNDV)) {
        /* a REMOVE is on its way, or the device reads into it already */
        return UCS_OK;
    }
    e->flags |= STRAND_TM_ENTRY_CANCEL;
    ++e->cqes; /* the REMOVE's */
    if (strand_tm_cmd_room(tm) && (tm->num_cancel_wait == 0)) {
        strand_tm_cmd_post(tm, STRAND_TM_OP_REMOVE, idx, (uint16_t)idx, 0, 0,
                           NULL, 0, 0);
    } else {
        tm->cancel_wait[tm->num_cancel_wait++] = idx;
    }
    return UCS_OK;
}

/* ------------------------------------------------------- completions */

/* inline_data: the message when the device put it into the CQE (the
 * buffer untouched), for the user to copy out in the callback. */
static void strand_tm_report_data(strand_tm_t *tm, uint32_t idx, uint64_t stag,
                                  uint64_t imm, size_t length,
                                  void *inline_data, ucs_status_t status)
{
    strand_tm_entry_t *e = &tm->entries[idx];
    uct_tag_context_t *ctx;

    if (e->flags & STRAND_TM_ENTRY_REPORTED) {
        return;
    }
    ctx = strand_tm_entry_detach(tm, e);
    if (ctx != NULL) {
        ctx->completed_cb(ctx, stag, imm, length, inline_data, status);
    }
}

static void strand_tm_report(strand_tm_t *tm, uint32_t idx, uint64_t stag,
                             uint64_t imm, size_t length, ucs_status_t status)
{
    strand_tm_report_data(tm, idx, stag, imm, length, NULL, status);
}

/* A receive removed before a match ends with what was posted, as UCX's
 * own transports report it: its tag and its buffer's length. */
static void strand_tm_report_canceled(strand_tm_t *tm, uint32_t idx)
{
    uct_tag_context_t *ctx = tm->entries[idx].ctx;

    strand_tm_report(tm, idx, (ctx != NULL) ? strand_tm_priv(ctx)->tag : 0, 0,
                     (ctx != NULL) ? strand_tm_priv(ctx)->length : 0,
                     UCS_ERR_CANCELED);
}

/* The device took the tag: software must not match it any more. */
static void strand_tm_consumed(strand_tm_t *tm, uint32_t idx)
{
    strand_tm_entry_t *e = &tm->entries[idx];

    if (!(e->flags & STRAND_TM_ENTRY_REPORTED) && (e->ctx != NULL)) {
        e->ctx->tag_consumed_cb(e->ctx);
    }
}

/* A rendezvous request the transport reads itself landed in the tag's
 * buffer: the tag stays the transport's (one completion more to come,
 * strand_tm_rts_done) while it reads the data over it. */
static void strand_tm_rts_matched(strand_tm_t *tm, uint32_t idx,
                                  const struct mlx5_cqe64 *cqe)
{
    strand_tm_entry_t    *e = &tm->entries[idx];
    uint8_t               rts[STRAND_TM_RTS_MAX];
    strand_tm_rts_match_t m;
    uint32_t              len = strand_cqe_byte_cnt(cqe);

    e->flags |= STRAND_TM_ENTRY_RNDV; /* a REMOVE can no longer win */
    e->cqes++;
    strand_tm_consumed(tm, idx);
    strand_tm_entry_cqe(tm, idx, 1);

    m.entry      = idx;
    m.taken      = (e->ctx != NULL) && !(e->flags & STRAND_TM_ENTRY_REPORTED);
    m.stag       = be64toh(cqe->tmh.tag);
    m.app_ctx_be = cqe->tmh.app_ctx;
    m.qpn        = strand_cqe_qpn(cqe);
    m.buffer     = e->buffer;
    m.length     = m.taken ? strand_tm_priv(e->ctx)->length : 0;
    m.lkey       = e->lkey;
    if (m.taken) {
        strand_tm_priv(e->ctx)->tag = m.stag;
    }
    /* copied out: the READ writes over it */
    len = ucs_min(len, sizeof(rts));
    if (m.taken && (len > 0)) {
        memcpy(rts, strand_tm_msg_data(tm, idx, cqe), len);
    } else {
        len = 0; /* nothing to read it from: the transport answers */
    }
    tm->rts_cb(tm->rts_arg, &m, rts, len);
}

void strand_tm_rts_done(strand_tm_t *tm, uint32_t idx, size_t length,
                        ucs_status_t status)
{
    strand_tm_entry_t *e = &tm->entries[idx];

    ucs_assert((idx < tm->num_entries) && (e->cqes > 0));
    if (status == UCS_OK) {
        ++tm->stats.exp_rts;
    } else {
        ++tm->stats.tag_errors;
    }
    strand_tm_report(tm, idx,
                     (e->ctx != NULL) ? strand_tm_priv(e->ctx)->tag : 0, 0,
                     length, status);
    strand_tm_entry_cqe(tm, idx, 1);
}

/* A software rendezvous request matched the tag: its header is in the CQE
 * (scatter-to-CQE, UCT_TAG_RECV_CB_INLINE_DATA) or in the buffer. Only the
 * CQE keeps it safe from a rendezvous of the buffer's previous receive
 * still writing there (UCP posts one buffer for several receives), as on
 * a NIC with UCX's own transports. */
static void strand_tm_sw_rndv(strand_tm_t *tm, uint32_t idx, uint64_t stag,
                              uint32_t length, void *in_cqe)
{
    strand_tm_entry_t *e = &tm->entries[idx];
    void *header = (in_cqe != NULL) ? in_cqe : strand_tm_landed(tm, idx);
    uct_tag_context_t *ctx;

    if ((in_cqe == NULL) && (e->flags & STRAND_TM_ENTRY_BOUNCE) &&
        (length > 0)) {
        /* where the device puts it when the buffer is posted itself: the
         * posted buffer holds the header too */
        memcpy(e->buffer, header,
               ucs_min(length, strand_tm_priv(e->ctx)->length));
    }
    ctx = strand_tm_entry_detach(tm, e); /* found the header before */
    ++tm->stats.exp_sw_rndv;
    ctx->rndv_cb(ctx, stag, header, length, UCS_OK,
                 (in_cqe != NULL) ? UCT_TAG_RECV_CB_INLINE_DATA : 0);
    strand_tm_entry_cqe(tm, idx, 1);
}

/* An eager message (or a software rendezvous request) matched the tag: in
 * its buffer, its bounce slot or the CQE. */
static void strand_tm_handle_consumed_msg(strand_tm_t *tm, uint32_t idx,
                                          const struct mlx5_cqe64 *cqe)
{
    strand_tm_entry_t *e      = &tm->entries[idx];
    uint64_t           stag   = be64toh(cqe->tmh.tag);
    uint32_t           length = strand_cqe_byte_cnt(cqe);
    void              *in_cqe = (void *)strand_cqe_inline_data(cqe);
    uint64_t           imm    = 0;

    if ((cqe->tmh.reserved[0] & STRAND_TMH_RTS) && (tm->rts_cb != NULL)) {
        strand_tm_rts_matched(tm, idx, cqe);
        return;
    }
    strand_tm_consumed(tm, idx);
    if (strand_cqe_opcode(cqe) == MLX5_CQE_RESP_SEND_IMM) {
        imm = ((uint64_t)be32toh(cqe->tmh.app_ctx) << 32) |
              be32toh(strand_cqe_imm(cqe));
        if ((imm == 0) && !(e->flags & STRAND_TM_ENTRY_REPORTED) &&
            (e->ctx != NULL)) {
            strand_tm_sw_rndv(tm, idx, stag, length, in_cqe);
            return;
        }
    }
    ++tm->stats.exp_eager;
    if ((e->flags & STRAND_TM_ENTRY_BOUNCE) && (e->ctx != NULL) &&
        !(e->flags & STRAND_TM_ENTRY_REPORTED)) {
        if (length > strand_tm_priv(e->ctx)->length) {
            /* the device took it into the larger bounce slot */
            strand_tm_report(tm, idx, stag, imm, 0, UCS_ERR_MESSAGE_TRUNCATED);
            strand_tm_entry_cqe(tm, idx, 1);
            return;
        }
        if (length > 0) {
            memcpy(e->buffer, strand_tm_msg_data(tm, idx, cqe), length);
        }
        in_cqe = NULL; /* the user's buffer has it, as a bounce slot's */
    }
    strand_tm_report_data(tm, idx, stag, imm, length, in_cqe, UCS_OK);
    strand_tm_entry_cqe(tm, idx, 1);
}

static void
strand_tm_handle_list_op(strand_tm_t *tm, const struct mlx5_cqe64 *cqe)
{
    strand_tm_cmd_t *cmd = &tm->cmds[tm->cmd_done & (tm->cmd_sq.wqe_cnt - 1)];
    uint16_t         hw_cnt = be16toh(cqe->tm_cqe.hw_phase_cnt);
    int success = !!(be32toh(cqe->tm_cqe.success) & STRAND_TM_CQE_SUCCESS);
    strand_tm_entry_t *e;

    if (tm->cmd_done == tm->cmd_sq.cur_post) {
        ucs_error("%s: tag list operation completed but none posted", tm->name);
        return;
    }
    ++tm->cmd_done;
    if (hw_cnt != cmd->sw_cnt) {
        /* the device saw unexpected messages software had not handled
         * when it posted this (rdma-core: IBV_WC_TM_SYNC_REQ) */
        ++tm->stats.sync_requests;
        tm->sync_wanted = 1;
    }
    if (cmd->entry == STRAND_TM_NONE) {
        return; /* a NOP */
    }
    e = &tm->entries[cmd->entry];
    switch (cmd->op) {
    case STRAND_TM_OP_APPEND:
        strand_tm_entry_cqe(tm, cmd->entry, 1);
        break;
    case STRAND_TM_OP_REMOVE:
        if (success) {
            /* removed before a match: nothing else will come for it */
            ++tm->stats.tags_canceled;
            strand_tm_report_canceled(tm, cmd->entry);
            strand_tm_entry_cqe(tm, cmd->entry, 2);
        } else {
            /* lost to a match: its consumption completes the tag */
            ucs_assert(e->cqes > 0);
            strand_tm_entry_cqe(tm, cmd->entry, 1);
        }
        break;
    }
}

void strand_tm_handle_cqe(strand_tm_t *tm, const struct mlx5_cqe64 *cqe)
{
    uint32_t           idx = strand_cqe_tm_handle(cqe);
    strand_tm_entry_t *e;
    ucs_status_t       status;

    switch (cqe->app_op) {
    case STRAND_CQE_APP_OP_TM_APPEND:
    case STRAND_CQE_APP_OP_TM_REMOVE:
    case STRAND_CQE_APP_OP_TM_NOOP:
        if (strand_cqe_is_error(cqe)) {
            ucs_error("%s: tag list operation failed: %s", tm->name,
                      strand_cqe_syndrome_str(strand_cqe_syndrome(cqe)));
        }
        strand_tm_handle_list_op(tm, cqe);
        return;
    default:
        break;
    }

    if ((idx >= tm->num_entries) || (tm->entries[idx].cqes == 0)) {
        ucs_error("%s: tag completion (app_op 0x%x) for entry %u not in use",
                  tm->name, cqe->app_op, idx);
        return;
    }
    e = &tm->entries[idx];
    if (ucs_unlikely(strand_cqe_is_error(cqe))) {
        /* a matched tag that failed: a message longer than the buffer, or
         * the rendezvous READ (bad key, the sender gone) */
        status = strand_syndrome_status(strand_cqe_syndrome(cqe));
        ucs_debug("%s: tag entry %u failed: %s", tm->name, idx,
                  strand_cqe_syndrome_str(strand_cqe_syndrome(cqe)));
        ++tm->stats.tag_errors;
        strand_tm_consumed(tm, idx);
        strand_tm_report(tm, idx, 0, 0, 0, status);
        strand_tm_entry_cqe(tm, idx, 1);
        return;
    }

    switch (cqe->app_op) {
    case STRAND_CQE_APP_OP_TM_CONSUMED_MSG:
        strand_tm_handle_consumed_msg(tm, idx, cqe);
        break;
    case STRAND_CQE_APP_OP_TM_CONSUMED:
        /* a rendezvous matched: the device reads the data now */
        e->flags |= STRAND_TM_ENTRY_RNDV;
        if (e->ctx != NULL) {
            strand_tm_priv(e->ctx)->tag = be64toh(cqe->tmh.tag);
        }
        strand_tm_consumed(tm, idx);
        break;
    case STRAND_CQE_APP_OP_TM_EXPECTED:
        ++tm->stats.exp_rndv;
        strand_tm_report(tm, idx,
                         (e->ctx != NULL) ? strand_tm_priv(e->ctx)->tag : 0, 0,
                         strand_cqe_byte_cnt(cqe), UCS_OK);
        strand_tm_entry_cqe(tm, idx, 1);
        break;
    default:
        ucs_error("%s: unknown tag-matching completion app_op 0x%x", tm->name,
                  cqe->app_op);
        break;
    }
}

/* An unexpected rendezvous: hand the sender's buffer to the user, who
 * reads it and tells the sender in software. tmh: an aligned copy of the
 * message's TMH (msg). */
static ucs_status_t strand_tm_unexp_rndv(strand_tm_t          *tm,
                                         const struct ibv_tmh *tmh,
                                         const void *msg, uint32_t length)
{
    const uint8_t *rest = (const uint8_t *)msg + STRAND_TMH_SIZE +
                          tm->rndv_hdr_len;
    uint8_t                 header[STRAND_TM_RNDV_PRIV_MAX + 256];
    struct ibv_rvh          rvh_copy, *rvh = &rvh_copy;
    strand_md_packed_rkey_t rkey;
    unsigned                priv_len = tmh->reserved[0];
    unsigned                rest_len;

    if ((length < STRAND_TMH_SIZE + tm->rndv_hdr_len) ||
        (priv_len > STRAND_TM_RNDV_PRIV_MAX)) {
        ucs_error("%s: malformed rendezvous request (%u bytes)", tm->name,
                  length);
        return UCS_OK;
    }
    rest_len = length - STRAND_TMH_SIZE - tm->rndv_hdr_len;
    if (rest_len > sizeof(header) - priv_len) {
        ucs_error("%s: rendezvous header of %u bytes", tm->name, rest_len);
        return UCS_OK;
    }
    memcpy(rvh, (const uint8_t *)msg + STRAND_TMH_SIZE, sizeof(*rvh));
    memcpy(header, &tmh->reserved[1], priv_len);
    memcpy(header + priv_len, rest, rest_len);
    rkey.rkey        = be32toh(rvh->rkey);
    rkey.atomic_rkey = rkey.rkey;
    ++tm->stats.unexp_rndv;
    return tm->rndv_cb(tm->rndv_arg, 0, be64toh(tmh->tag), header,
                       priv_len + rest_len, be64toh(rvh->va), be32toh(rvh->len),
                       &rkey);
}

/* An unexpected rendezvous request the transport would have read itself:
 * the user reads it (as any unexpected rendezvous), with the sender's
 * packed key. */
static ucs_status_t strand_tm_unexp_rts(strand_tm_t          *tm,
                                        const struct ibv_tmh *tmh,
                                        const void *data, uint32_t length)
{
    const void     *rkey, *header;
    strand_tm_rts_t rts;

    if (strand_tm_rts_parse(data, length, tmh->app_ctx, be64toh(tmh->tag), &rts,
                            &rkey, &header) != UCS_OK) {
        ucs_error("%s: malformed rendezvous request (%u bytes)", tm->name,
                  length);
        return UCS_OK;
    }
    ++tm->stats.unexp_rndv;
    return tm->rndv_cb(tm->rndv_arg, 0, be64toh(tmh->tag), header, rts.hdr_len,
                       be64toh(rts.va), be32toh(rts.length), rkey);
}

ucs_status_t strand_tm_handle_unexp(strand_tm_t             *tm,
                                    const struct mlx5_cqe64 *cqe, void *msg,
                                    uint32_t length)
{
    void          *data    = (uint8_t *)msg + STRAND_TMH_SIZE;
    uint64_t       imm     = 0;
    void          *context = NULL; /* for messages in fragments: none */
    struct ibv_tmh tmh_copy, *tmh = &tmh_copy;

    /* whatever it is, the device counted it */
    ++tm->unexp_cnt;
    tm->sync_wanted = 1;
    if (ucs_unlikely(length < STRAND_TMH_SIZE)) {
        ucs_error("%s: unexpected message of %u bytes", tm->name, length);
        return UCS_OK;
    }
    /* the TMH follows whatever headroom the receive buffer has: it need
     * not be aligned */
    memcpy(tmh, msg, sizeof(*tmh));
    if (tmh->opcode == IBV_TMH_RNDV) {
        return strand_tm_unexp_rndv(tm, tmh, msg, length);
    }
    if (tmh->opcode != IBV_TMH_EAGER) {
        ucs_error("%s: unexpected message with TMH opcode %u", tm->name,
                  tmh->opcode);
        return UCS_OK;
    }
    if (tmh->reserved[0] & STRAND_TMH_RTS) {
        return strand_tm_unexp_rts(tm, tmh, data, length - STRAND_TMH_SIZE);
    }
    if (strand_cqe_opcode(cqe) == MLX5_CQE_RESP_SEND_IMM) {
        imm = ((uint64_t)be32toh(tmh->app_ctx) << 32) |
              be32toh(strand_cqe_imm(cqe));
        if (imm == 0) {
            /* a software rendezvous request (uct_ep_tag_rndv_request) */
            ++tm->stats.unexp_sw_rndv;
            return tm->rndv_cb(tm->rndv_arg, 0, be64toh(tmh->tag), data,
                               length - STRAND_TMH_SIZE, 0, 0, NULL);
        }
    }
    ++tm->stats.unexp_eager;
    return tm->eager_cb(tm->eager_arg, data, length - STRAND_TMH_SIZE,
                        UCT_CB_PARAM_FLAG_DESC | UCT_CB_PARAM_FLAG_FIRST,
                        be64toh(tmh->tag), imm, &context);
}

void strand_tm_progress(strand_tm_t *tm)
{
    unsigned i, n = 0;

    while ((n < tm->num_cancel_wait) && strand_tm_cmd_room(tm)) {
        strand_tm_cmd_post(tm, STRAND_TM_OP_REMOVE, tm->cancel_wait[n],
                           (uint16_t)tm->cancel_wait[n], 0, 0, NULL, 0, 0);
        ++n;
    }
    if (n > 0) {
        for (i = n; i < tm->num_cancel_wait; ++i) {
            tm->cancel_wait[i - n] = tm->cancel_wait[i];
        }
        tm->num_cancel_wait -= n;
    }
    if (tm->sync_wanted && strand_tm_cmd_room(tm)) {
        tm->sync_wanted = 0;
        if (tm->unexp_reported != tm->unexp_cnt) {
            strand_tm_cmd_post(tm, STRAND_TM_OP_NOP, STRAND_TM_NONE, 0, 0, 0,
                               NULL, 0, 0);
            ++tm->stats.syncs;
        }
    }
}

void strand_tm_show(const strand_tm_t *tm, ucs_string_buffer_t *strb)
{
    const strand_tm_stats_t *s = &tm->stats;

    ucs_string_buffer_appendf(
            strb,
            "tags %u/%u list_ops_in_flight %u unexpected_count %u "
            "reported %u\n",
            tm->tags_used, tm->max_tags, tm->cmd_sq.cur_post - tm->cmd_done,
            tm->unexp_cnt, tm->unexp_reported);
    ucs_string_buffer_appendf(
            strb,
            "tags_posted %" PRIu64 "\ntags_canceled %" PRIu64 "\n"
            "exp_eager %" PRIu64 "\nexp_rndv %" PRIu64 "\n"
            "exp_sw_rndv %" PRIu64 "\nexp_rts %" PRIu64 "\n"
            "tag_errors %" PRIu64 "\n"
            "unexp_eager %" PRIu64 "\nunexp_rndv %" PRIu64 "\n"
            "unexp_sw_rndv %" PRIu64 "\nrndv_sent %" PRIu64 "\n"
            "rndv_fin %" PRIu64 "\nsyncs %" PRIu64 "\n"
            "sync_requests %" PRIu64 "\nlist_full %" PRIu64 "\n"
            "buf_busy %" PRIu64 "\ndropped %" PRIu64 "\n",
            s->tags_posted, s->tags_canceled, s->exp_eager, s->exp_rndv,
            s->exp_sw_rndv, s->exp_rts, s->tag_errors, s->unexp_eager,
            s->unexp_rndv, s->unexp_sw_rndv, s->rndv_sent, s->rndv_fin,
            s->syncs, s->sync_requests, s->list_full, s->buf_busy, s->dropped);
}

void strand_tm_log_summary(const strand_tm_t *tm)
{
    const strand_tm_stats_t *s = &tm->stats;

    ucs_info("%s: tag matching: tags_posted %" PRIu64 " exp_eager %" PRIu64
             " exp_rndv %" PRIu64 " exp_sw_rndv %" PRIu64 " exp_rts %" PRIu64
             " unexp_eager %" PRIu64 " unexp_rndv %" PRIu64
             " unexp_sw_rndv %" PRIu64 " tags_canceled %" PRIu64
             " rndv_sent %" PRIu64 " rndv_fin %" PRIu64 " syncs %" PRIu64
             " list_full %" PRIu64 " buf_busy %" PRIu64,
             tm->name, s->tags_posted, s->exp_eager, s->exp_rndv,
             s->exp_sw_rndv, s->exp_rts, s->unexp_eager, s->unexp_rndv,
             s->unexp_sw_rndv, s->tags_canceled, s->rndv_sent, s->rndv_fin,
             s->syncs, s->list_full, s->buf_busy);
}

/* --------------------------------------------------------- rendezvous */

static inline uint32_t
strand_tm_rndv_id(const strand_tm_t *tm, const strand_tm_rndv_op_t *op)
{
    return (uint32_t)(op - tm->rndv_ops) | ((uint32_t)op->gen << 16);
}

strand_tm_rndv_op_t *strand_tm_rndv_get(strand_tm_t *tm, void *owner,
                                        uct_completion_t *comp,
                                        uint32_t         *app_ctx_p)
{
    strand_tm_rndv_op_t *op;

    if (tm->rndv_free == STRAND_TM_NONE) {
        return NULL;
    }
    op            = &tm->rndv_ops[tm->rndv_free];
    tm->rndv_free = op->next;
    op->owner     = owner;
    op->comp      = comp;
    ++op->gen;
    *app_ctx_p = htobe32(strand_tm_rndv_id(tm, op));
    return op;
}

void strand_tm_rndv_put(strand_tm_t *tm, strand_tm_rndv_op_t *op)
{
    op->owner     = NULL;
    op->comp      = NULL;
    op->next      = tm->rndv_free;
    tm->rndv_free = (uint32_t)(op - tm->rndv_ops);
}

ucs_status_t strand_tm_rndv_cancel(strand_tm_t *tm, void *owner, void *op_h)
{
    strand_tm_rndv_op_t *op = op_h;

    if ((op < tm->rndv_ops) || (op >= tm->rndv_ops + tm->num_rndv_ops) ||
        (op->owner != owner)) {
        return UCS_ERR_INVALID_PARAM;
    }
    strand_tm_rndv_put(tm, op);
    return UCS_OK;
}

void strand_tm_rndv_fin(strand_tm_t *tm, uint32_t app_ctx_be,
                        ucs_status_t status)
{
    uint32_t             id  = be32toh(app_ctx_be);
    uint32_t             idx = strand_tm_rndv_slot(app_ctx_be);
    strand_tm_rndv_op_t *op;
    uct_completion_t    *comp;

    if (idx >= tm->num_rndv_ops) {
        ucs_error("%s: FIN for rendezvous %u of %u", tm->name, idx,
                  tm->num_rndv_ops);
        return;
    }
    op = &tm->rndv_ops[idx];
    if ((op->owner == NULL) || (op->gen != (uint16_t)(id >> 16))) {
        return; /* cancelled meanwhile */
    }
    comp = op->comp;
    strand_tm_rndv_put(tm, op);
    ++tm->stats.rndv_fin;
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/* the check of an RTS (total bytes, its check field as 0): a CRC32 of
 * it, the app_ctx and the tag (UCS's) */
static uint32_t strand_tm_rts_check(const strand_tm_rts_t *rts, size_t total,
                                    uint32_t app_ctx_be, uint64_t tag)
{
    strand_tm_rts_t head = *rts;
    uint32_t        h;

    head.check = 0;
    h          = ucs_crc32(0, &head, sizeof(head));
    h          = ucs_crc32(h, rts + 1, total - sizeof(head));
    h          = ucs_crc32(h, &app_ctx_be, sizeof(app_ctx_be));
    return ucs_crc32(h, &tag, sizeof(tag));
}

size_t strand_tm_rts_pack(void *buf, uint64_t va, uint32_t length,
                          const void *rkey, unsigned rkey_len,
                          const void *header, unsigned header_length,
                          uint32_t app_ctx_be, uint64_t tag)
{
    strand_tm_rts_t *rts   = buf;
    size_t           total = sizeof(*rts) + rkey_len + header_length;

    if ((total > STRAND_TM_RTS_MAX) || (rkey_len > UINT8_MAX) ||
        (header_length > UINT8_MAX)) {
        return 0;
    }
    rts->va       = htobe64(va);
    rts->length   = htobe32(length);
    rts->rkey_len = (uint8_t)rkey_len;
    rts->hdr_len  = (uint8_t)header_length;
    rts->reserved = 0;
    memcpy(rts + 1, rkey, rkey_len);
    if (header_length > 0) {
        memcpy((uint8_t *)(rts + 1) + rkey_len, header, header_length);
    }
    rts->check = htobe32(strand_tm_rts_check(rts, total, app_ctx_be, tag));
    return total;
}

ucs_status_t strand_tm_rts_parse(const void *data, uint32_t len,
                                 uint32_t app_ctx_be, uint64_t tag,
                                 strand_tm_rts_t *rts, const void **rkey_p,
                                 const void **header_p)
{
    uint8_t copy[STRAND_TM_RTS_MAX];
    size_t  total;

    if (len < sizeof(*rts)) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(rts, data, sizeof(*rts));
    total = sizeof(*rts) + rts->rkey_len + rts->hdr_len;
    if ((rts->rkey_len < sizeof(uint32_t)) || (total > len) ||
        (total > sizeof(copy))) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(copy, data, total); /* aligned */
    if (be32toh(rts->check) !=
        strand_tm_rts_check((const strand_tm_rts_t *)copy, total, app_ctx_be,
                            tag)) {
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p   = (const uint8_t *)data + sizeof(*rts);
    *header_p = (const uint8_t *)data + sizeof(*rts) + rts->rkey_len;
    return UCS_OK;
}

void strand_tm_rndv_purge(strand_tm_t *tm, void *owner, ucs_status_t status)
{
    uct_completion_t *comp;
    uint32_t          i;

    for (i = 0; i < tm->num_rndv_ops; ++i) {
        if (tm->rndv_ops[i].owner != owner) {
            continue;
        }
        comp = tm->rndv_ops[i].comp;
        strand_tm_rndv_put(tm, &tm->rndv_ops[i]);
        if (comp != NULL) {
            uct_invoke_completion(comp, status);
        }
    }
}

unsigned strand_tm_rndv_priv_pack(struct ibv_tmh *tmh, const void *header,
                                  unsigned header_length,
                                  unsigned max_rndv_data)
{
    unsigned priv = (header_length > max_rndv_data) ?
                            header_length - max_rndv_data :
                            0;

    ucs_assert(priv <= STRAND_TM_RNDV_PRIV_MAX);
    tmh->reserved[0] = (uint8_t)priv;
    if (priv > 0) {
        memcpy(&tmh->reserved[1], header, priv); /* header may be NULL */
    }
    return priv;
}

/* The unexpected-message callbacks of an interface opened without them:
 * the message is dropped and said so (its sender saw it delivered; a
 * rendezvous' sender waits until its ep is flushed with cancel or goes). */
static ucs_status_t strand_tm_dropped(strand_tm_t *tm, const char *what,
                                      uint64_t stag, size_t length)
{
    ++tm->stats.dropped;
    ucs_error("%s: an unexpected %s (tag 0x%" PRIx64 ", %zu bytes) was "
              "dropped: the interface was opened without unexpected-message "
              "callbacks",
              tm->name, what, stag, length);
    return UCS_OK;
}

static ucs_status_t strand_tm_drop_eager(void *arg, void *data, size_t length,
                                         unsigned flags, uct_tag_t stag,
                                         uint64_t imm, void **context)
{
    return strand_tm_dropped(arg, "tagged message", stag, length);
}

static ucs_status_t
strand_tm_drop_rndv(void *arg, unsigned flags, uint64_t stag,
                    const void *header, unsigned header_length,
                    uint64_t remote_addr, size_t length, const void *rkey_buf)
{
    return strand_tm_dropped(arg, "rendezvous request", stag, length);
}

/* -------------------------------------------------------- life cycle */

ucs_status_t
strand_tm_init(strand_tm_t *tm, const char *name, strand_dev_qp_t *cmd_qp,
               uint8_t mmio_mode, uint32_t max_tags, uint32_t max_ops,
               unsigned rndv_hdr_len, unsigned max_rndv_hdr_size,
               uint32_t max_rndv_ops, const uct_iface_params_t *params)
{
    uint32_t i;

    memset(tm, 0, sizeof(*tm));
    kh_init_inplace(strand_tm_bufs, &tm->bufs);
    tm->name   = name;
    tm->cmd_qp = cmd_qp;
    strand_sq_init(&tm->cmd_sq, &cmd_qp->dv, cmd_qp->qpn,
                   (strand_mmio_mode_t)mmio_mode, cmd_qp->bf);
    tm->cmd_max      = ucs_min(max_ops, tm->cmd_sq.wqe_cnt);
    tm->rndv_hdr_len = rndv_hdr_len;
    if (max_rndv_hdr_size < STRAND_TMH_SIZE + rndv_hdr_len) {
        ucs_error("%s: rendezvous headers of %u bytes do not fit the "
                  "device's %u",
                  name, STRAND_TMH_SIZE + rndv_hdr_len, max_rndv_hdr_size);
        return UCS_ERR_UNSUPPORTED;
    }
    tm->max_rndv_data = max_rndv_hdr_size - STRAND_TMH_SIZE - rndv_hdr_len;

    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB) &&
        (params->field_mask & UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB) &&
        (params->eager_cb != NULL) && (params->rndv_cb != NULL)) {
        tm->eager_cb  = params->eager_cb;
        tm->eager_arg = UCT_IFACE_PARAM_VALUE(params, eager_arg,
                                              HW_TM_EAGER_ARG, NULL);
        tm->rndv_cb   = params->rndv_cb;
        tm->rndv_arg  = UCT_IFACE_PARAM_VALUE(params, rndv_arg, HW_TM_RNDV_ARG,
                                              NULL);
    } else {
        /* opened without them (tag matching asked for by configuration):
         * an unexpected tagged message has nobody to go to */
        tm->eager_cb  = strand_tm_drop_eager;
        tm->eager_arg = tm;
        tm->rndv_cb   = strand_tm_drop_rndv;
        tm->rndv_arg  = tm;
    }

    tm->num_entries  = max_tags + 1;
    tm->max_tags     = max_tags;
    tm->entries      = ucs_calloc(tm->num_entries, sizeof(*tm->entries),
                                  "strand_tm_entries");
    tm->cancel_wait  = ucs_calloc(tm->num_entries, sizeof(*tm->cancel_wait),
                                  "strand_tm_cancel_wait");
    tm->cmds         = ucs_calloc(tm->cmd_sq.wqe_cnt, sizeof(*tm->cmds),
                                  "strand_tm_cmds");
    tm->num_rndv_ops = ucs_min(max_rndv_ops, 0x10000);
    tm->rndv_ops     = ucs_calloc(tm->num_rndv_ops, sizeof(*tm->rndv_ops),
                                  "strand_tm_rndv_ops");
    if ((tm->entries == NULL) || (tm->cancel_wait == NULL) ||
        (tm->cmds == NULL) || (tm->rndv_ops == NULL)) {
        strand_tm_cleanup(tm);
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < tm->num_entries; ++i) {
        tm->entries[i].next = (i + 1 < tm->num_entries) ? i + 1 :
                                                          STRAND_TM_NONE;
    }
    tm->head      = 0; /* where the device appends first */
    tm->tail      = tm->num_entries - 1;
    tm->rndv_free = STRAND_TM_NONE;
    for (i = tm->num_rndv_ops; i-- > 0;) {
        tm->rndv_ops[i].next = tm->rndv_free;
        tm->rndv_free        = i;
    }
    return UCS_OK;
}

ucs_status_t
strand_tm_bounce_init(strand_tm_t *tm, strand_dev_t *dev, uint32_t min_recv)
{
    size_t size = (size_t)tm->num_entries * min_recv;
    int    err;

    tm->bounce = ucs_malloc(size, "strand_tm_bounce");
    if (tm->bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    err = dev->ops->reg_mr(dev, tm->bounce, size, IBV_ACCESS_LOCAL_WRITE,
                           &tm->bounce_mr);
    if (err != 0) {
        ucs_error("%s: failed to register %zu bytes of tag bounce slots: %s",
                  tm->name, size, strerror(err));
        ucs_free(tm->bounce);
        tm->bounce = NULL;
        return UCS_ERR_IO_ERROR;
    }
    tm->dev      = dev;
    tm->min_recv = min_recv;
    return UCS_OK;
}

void strand_tm_cleanup(strand_tm_t *tm)
{
    if (tm->bounce != NULL) {
        tm->dev->ops->dereg_mr(tm->dev, &tm->bounce_mr);
        ucs_free(tm->bounce);
        tm->bounce = NULL;
    }
    /* receives still posted are the user's to forget: UCT calls nothing
     * from a closing interface */
    kh_destroy_inplace(strand_tm_bufs, &tm->bufs);
    ucs_free(tm->entries);
    ucs_free(tm->cancel_wait);
    ucs_free(tm->cmds);
    ucs_free(tm->rndv_ops);
    tm->entries     = NULL;
    tm->cancel_wait = NULL;
    tm->cmds        = NULL;
    tm->rndv_ops    = NULL;
}
