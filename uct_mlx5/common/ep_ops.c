/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared endpoint's UCT operations: active messages (SEND), PUT (RDMA
 * WRITE), GET (RDMA READ), device atomics (standard and masked), flush,
 * fence, keepalive, and its class. Every WQE goes through the src/mlx5
 * builders.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ep_post.h"
#include "ep_short.h"
#include "txq.h"
#include "recovery.h"
#include "tag.h"
#include "integrity_get.h"
#include "ep_ops.h"
#include "ep_fail.h"
#include "ep_pending.h"
#include "fc_grant.h"
#include "op_done.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>

#include <string.h>

/* ------------------------------------------------------------ readiness */

/* ------------------------------------------------------ active messages */

/* An inline SEND of hdr (hdr_len bytes: a constant where this is inlined,
 * so the header copy is a few moves, not a memcpy call) and the payload. */
static UCS_F_ALWAYS_INLINE void
strand_ep_am_short_post(strand_iface_t *iface, strand_ep_t *ep,
                        strand_txq_t *txq, const void *hdr, unsigned hdr_len,
                        const void *payload, unsigned length)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    struct ibv_sge            sge[2];
    unsigned                  ds;
    void                     *seg;

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    if (ucs_likely(strand_inline_fits(seg, hdr_len + length, txq->sq.end))) {
        ds = STRAND_EP_DS(ep) +
             strand_set_inline_hdr_data(seg, hdr, hdr_len, payload, length);
        strand_ep_post_light(iface, ep, txq, ctrl, MLX5_OPCODE_SEND, ds,
                             strand_ep_am_fm_se(iface, ep));
    } else { /* the data wraps around the end of the send queue */
        sge[0].addr   = (uintptr_t)hdr;
        sge[0].length = hdr_len;
        sge[1].addr   = (uintptr_t)payload;
        sge[1].length = length;
        strand_ep_post_inline_send(iface, ep, txq, sge, 2,
                                   strand_ep_am_fm_se(iface, ep));
    }
}

/* An am_short the general way: its length, flow control, the
 * pending requests, a lease, room; the data may wrap around the end of
 * the send queue. */
UCS_F_NOINLINE ucs_status_t strand_ep_am_short_general(uct_ep_h tl_ep,
                                                       uint8_t id, uint64_t hdr,
                                                       const void *payload,
                                                       unsigned    length)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    strand_txq_t   *txq   = NULL;
    ucs_status_t    status;
    struct {
        struct ibv_tmh tmh; /* tag matching: NO_TAG (zeroes) */
        uint8_t        id;
        uint64_t       hdr;
    } UCS_S_PACKED am_hdr;

    UCT_CHECK_AM_ID(id);
    STRAND_CHECK_MAX(length, iface->config.am_short_payload,
                     "am_short payload");
    if (ep->refused_beat == iface->tx_beat) {
        return UCS_ERR_NO_RESOURCE; /* nothing changed since */
    }

    status = strand_ep_am_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused_short(iface, ep,
                                       strand_ep_refused(iface, ep, status,
                                                         NULL));
    }

    am_hdr.id  = id;
    am_hdr.hdr = hdr;
    if (ucs_likely(iface->config.am_tmh == 0)) {
        strand_ep_am_short_post(iface, ep, txq, &am_hdr.id,
                                sizeof(am_hdr) - sizeof(am_hdr.tmh), payload,
                                length);
    } else {
        memset(&am_hdr.tmh, 0, sizeof(am_hdr.tmh));
        strand_ep_am_short_post(iface, ep, txq, &am_hdr, sizeof(am_hdr),
                                payload, length);
    }
    strand_ep_am_sent(iface, ep);
    /* the producer index may be in the next ring now: where the fast
     * path's posts may end (strand_txq_fast_room) */
    strand_txq_set_fast_end(txq);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
    return UCS_OK;
}

ucs_status_t strand_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                    const uct_iov_t *iov, size_t iovcnt)
{
    STRAND_EP_BASE_DECL(tl_ep);
    struct ibv_sge sge[1 + STRAND_MAX_SGE];
    uint8_t        am_hdr[STRAND_AM_HDR_MAX];
    unsigned       n = 1;
    size_t         i, total;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)STRAND_MAX_SGE, "am_short_iov");
    total         = strand_am_hdr_pack(iface, am_hdr, id);
    sge[0].addr   = (uintptr_t)am_hdr;
    sge[0].length = (uint32_t)total;
    for (i = 0; i < iovcnt; ++i) {
        sge[n].addr   = (uintptr_t)iov[i].buffer;
        sge[n].length = uct_iov_get_length(&iov[i]);
        total += sge[n].length;
        ++n;
    }
    STRAND_CHECK_MAX(total, iface->config.max_inline, "am_short_iov");
    status = strand_ep_am_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused(iface, ep, status, NULL);
    }
    strand_ep_post_inline_send(iface, ep, txq, sge, n,
                               strand_ep_am_fm_se(iface, ep));
    strand_ep_am_sent(iface, ep);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
    return UCS_OK;
}

ssize_t strand_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           unsigned flags)
{
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    uint8_t         hdr[STRAND_AM_HDR_MAX];

    ssize_t ret;

    UCT_CHECK_AM_ID(id);
    ret = strand_ep_send_hdr_bcopy(tl_ep, hdr,
                                   strand_am_hdr_pack(iface, hdr, id), pack_cb,
                                   arg, MLX5_OPCODE_SEND, 0);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(ret, ucs_derived_of(tl_ep, uct_base_ep_t), AM,
                                 BCOPY, ret);
    return ret;
}

ucs_status_t strand_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp)
{
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    uint8_t         hdr[STRAND_AM_HDR_MAX + STRAND_AM_MAX_HDR];
    ucs_status_t    status;
    unsigned        hdr_len;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_sge - 1, "am_zcopy");
    STRAND_CHECK_MAX(header_length, STRAND_AM_MAX_HDR, "am_zcopy header");
    STRAND_CHECK_MAX(strand_am_hdr_len(iface) + header_length +
                             uct_iov_total_length(iov, iovcnt),
                     iface->config.seg_size, "am_zcopy");
    hdr_len = strand_am_hdr_pack(iface, hdr, id);
    if (header_length > 0) { /* a NULL header with length 0 is allowed */
        memcpy(hdr + hdr_len, header, header_length);
    }
    status = strand_ep_send_hdr_zcopy(tl_ep, hdr, hdr_len + header_length, iov,
                                      iovcnt, MLX5_OPCODE_SEND, 0, comp);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 AM, ZCOPY,
                                 header_length +
                                         uct_iov_total_length(iov, iovcnt));
    return status;
}

/* ---------------------------------------------------------------- RMA */

/* A put_short the general way: its length, the pending requests,
 * a lease, room, a signing key; the data may wrap around the end of the
 * send queue, and no data is no inline segment. */
UCS_F_NOINLINE ucs_status_t strand_ep_put_short_general(uct_ep_h    tl_ep,
                                                        const void *buffer,
                                                        unsigned    length,
                                                        uint64_t    remote_addr,
                                                        uct_rkey_t  rkey)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    strand_txq_t   *txq   = NULL;
    struct mlx5_wqe_ctrl_seg *ctrl;
    ucs_status_t              status;
    struct ibv_sge            sge;
    unsigned                  ds;
    void                     *seg;

    STRAND_CHECK_MAX(length, iface->config.max_inline, "put_short");
    if (ep->refused_beat == iface->tx_beat) {
        return UCS_ERR_NO_RESOURCE; /* nothing changed since */
    }

    status = strand_ep_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused_short(iface, ep,
                                       strand_ep_refused(iface, ep, status,
                                                         NULL));
    }
    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), txq->sq.buf,
                         txq->sq.end);
    if (ucs_likely((length > 0) &&
                   strand_inline_fits(seg, length, txq->sq.end))) {
        ds = STRAND_EP_DS(ep) + 1 +
             strand_set_inline_hdr_data(seg, NULL, 0, buffer, length);
    } else {
        sge.addr   = (uintptr_t)buffer;
        sge.length = length;
        sge.lkey   = 0;
        ds         = STRAND_EP_DS(ep) + 1 +
             strand_set_inline_seg(seg, &sge, 1, txq->sq.buf, txq->sq.end,
                                   NULL);
    }
    strand_ep_post_light(iface, ep, txq, ctrl, MLX5_OPCODE_RDMA_WRITE, ds,
                         strand_ep_fence_mode(iface, ep));
    strand_txq_set_fast_end(txq); /* as am_short's */
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    return UCS_OK;
}

ssize_t strand_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                            void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    STRAND_EP_DECL(tl_ep);
    strand_tx_desc_t *desc;
    unsigned          ds = STRAND_EP_DS(ep) + 1;
    size_t            length;

    status = strand_ep_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused_len(iface, ep, status);
    }
    desc = strand_ep_get_desc(iface, ep);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    length = pack_cb(desc->data, arg);
    status = strand_ep_check_packed(iface, ep, desc, length,
                                    iface->config.seg_size, "put_bcopy");
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    if (length > 0) {
        seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg),
                             txq->sq.buf, txq->sq.end);
        strand_set_data_seg(seg, (uintptr_t)desc->data, length, desc->lkey);
        ++ds;
    }
    op.type = STRAND_OP_DESC;
    op.desc = desc;
    strand_ep_post(iface, ep, txq, ctrl, MLX5_OPCODE_RDMA_WRITE, 0, ds,
                   strand_ep_fence_mode(iface, ep), &op);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_rdma_zcopy(
        uct_ep_h tl_ep, uint8_t opcode, const uct_iov_t *iov, size_t iovcnt,
        uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    STRAND_EP_DECL(tl_ep);
    uint32_t lkeys[STRAND_MAX_SGE];
    unsigned ds;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_sge,
                       (opcode == MLX5_OPCODE_RDMA_READ) ? "get_zcopy" :
                                                           "put_zcopy");
    status = strand_iov_lkeys(iface, iov, iovcnt, lkeys, &op.tmp_reg);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = strand_ep_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        if (op.tmp_reg != NULL) {
            strand_tmp_reg_release(iface, op.tmp_reg);
        }
        return strand_ep_refused(iface, ep, status, comp);
    }
    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), txq->sq.buf,
                         txq->sq.end);
    ds  = STRAND_EP_DS(ep) + 1 +
         strand_set_iov_segs(txq, &seg, iov, iovcnt, lkeys);
    op.type = STRAND_OP_PLAIN;
    op.comp = comp;
    strand_ep_post(iface, ep, txq, ctrl, opcode, 0, ds,
                   strand_ep_fence_mode(iface, ep), &op);
    if (opcode == MLX5_OPCODE_RDMA_READ) {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    } else {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    return UCS_INPROGRESS;
}

ucs_status_t strand_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    return strand_ep_rdma_zcopy(tl_ep, MLX5_OPCODE_RDMA_WRITE, iov, iovcnt,
                                remote_addr, rkey, comp);
}

ucs_status_t strand_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    strand_iface_t   *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    strand_rkey_sig_t rk;

    UCT_CHECK_LENGTH(uct_iov_total_length(iov, iovcnt), 1, STRAND_MAX_ZCOPY,
                     "get_zcopy");
    if (ucs_unlikely(iface->integrity.kind != STRAND_INTEGRITY_OFF)) {
        if (strand_rkey_is_sig(rkey)) {
            /* a key that says it is signed but names no signing key this
             * process unpacked: refused, never read unchecked */
            if (strand_rkey_sig_get(rkey, &rk) != UCS_OK) {
                ucs_error("%s: get_zcopy: remote key 0x%" PRIx64 " names no "
                          "signing key unpacked here (released, or not a "
                          "key)",
                          iface->dev->info.name, (uint64_t)rkey);
                return UCS_ERR_INVALID_PARAM;
            }
            UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_sge,
                               "get_zcopy");
            return strand_ep_get_checked(iface,
                                         ucs_derived_of(tl_ep, strand_ep_t),
                                         iov, iovcnt, remote_addr, &rk, comp);
        }
        /* the peer signs nothing: read as it is, and say so once */
        if (iface->integrity.unchecked++ == 0) {
            ucs_warn("%s: a peer's memory is read without integrity checks "
                     "(its keys carry no signing mkey: UCX_DC_STRAND_"
                     "INTEGRITY is off there)",
                     iface->dev->info.name);
        }
    }
    return strand_ep_rdma_zcopy(tl_ep, MLX5_OPCODE_RDMA_READ, iov, iovcnt,
                                remote_addr, rkey, comp);
}

ucs_status_t strand_ep_get_bcopy(uct_ep_h              tl_ep,
                                 uct_unpack_callback_t unpack_cb, void *arg,
                                 size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    STRAND_EP_DECL(tl_ep);
    strand_tx_desc_t *desc;
    strand_rkey_sig_t rk;
    unsigned          ds = STRAND_EP_DS(ep) + 1;

    UCT_CHECK_LENGTH(length, 0, iface->config.seg_size, "get_bcopy");
    if (ucs_unlikely(strand_rkey_is_sig(rkey)) &&
        (iface->integrity.kind != STRAND_INTEGRITY_OFF) &&
        (strand_rkey_sig_get(rkey, &rk) == UCS_OK)) {
        return UCS_ERR_UNSUPPORTED; /* checked GETs are zero-copy only */
    }
    status = strand_ep_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused(iface, ep, status, comp);
    }
    desc = strand_ep_get_desc(iface, ep);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    if (length > 0) { /* a zero-length READ has no data segment */
        seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg),
                             txq->sq.buf, txq->sq.end);
        strand_set_data_seg(seg, (uintptr_t)desc->data, length, desc->lkey);
        ++ds;
    }
    op.type            = STRAND_OP_GET_BCOPY;
    op.desc            = desc;
    op.comp            = comp;
    op.u.unpack.cb     = unpack_cb;
    op.u.unpack.arg    = arg;
    op.u.unpack.length = length;
    strand_ep_post(iface, ep, txq, ctrl, MLX5_OPCODE_RDMA_READ, 0, ds,
                   strand_ep_fence_mode(iface, ep), &op);
    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_INPROGRESS;
}

/* ------------------------------------------------------------ atomics */

/*
 * One atomic WQE: ctrl, AV, raddr, atomic segment(s), data (the local
 * landing zone of the original value). 64-bit add and compare-and-swap use
 * the standard opcodes; everything else the masked ones:
 *   and:  masked CS, compare_mask 0, swap = v, swap_mask = ~v
 *   or:   masked CS, compare_mask 0, swap = v, swap_mask = v
 *   swap: masked CS, compare_mask 0, swap_mask = ~0
 *   xor:  masked FA, field_boundary ~0 (no carries)
 *   add32 masked FA, field_boundary 0; cswap32 masked CS, masks ~0
 */
typedef struct strand_atomic_plan {
    uint8_t  opcode;     /* MLX5_OPCODE_ATOMIC_* */
    uint64_t value;      /* FA: the addend; CS: swap */
    uint64_t compare;    /* CS: compare */
    uint64_t value_mask; /* masked FA: field boundary; masked CS: swap mask */
    uint64_t cmp_mask;   /* masked CS */
} strand_atomic_plan_t;

/* The WQE an atomic of `size` bytes is: UCS_ERR_UNSUPPORTED for an
 * operation the interface does not have. */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_atomic_plan(const strand_iface_t *iface, unsigned uct_op, unsigned size,
                   uint64_t value, uint64_t compare, strand_atomic_plan_t *plan)
{
    uint64_t mask = (size == 8) ? UINT64_MAX : UINT32_MAX;

    /* without masked atomics the device has the 64-bit add and
     * compare-and-swap only (what iface_query advertises) */
    if (ucs_unlikely(!iface->config.masked_atomics &&
                     ((size != 8) || ((uct_op != UCT_ATOMIC_OP_ADD) &&
                                      (uct_op != UCT_ATOMIC_OP_CSWAP))))) {
        return UCS_ERR_UNSUPPORTED;
    }
    plan->value      = value & mask;
    plan->compare    = 0;
    plan->value_mask = mask;
    plan->cmp_mask   = 0;
    switch (uct_op) {
    case UCT_ATOMIC_OP_ADD:
        plan->opcode     = (size == 8) ? MLX5_OPCODE_ATOMIC_FA :
                                         MLX5_OPCODE_ATOMIC_MASKED_FA;
        plan->value_mask = 0; /* carries everywhere */
        return UCS_OK;
    case UCT_ATOMIC_OP_XOR:
        plan->opcode = MLX5_OPCODE_ATOMIC_MASKED_FA;
        return UCS_OK;
    case UCT_ATOMIC_OP_CSWAP:
        plan->opcode   = (size == 8) ? MLX5_OPCODE_ATOMIC_CS :
                                       MLX5_OPCODE_ATOMIC_MASKED_CS;
        plan->compare  = compare & mask;
        plan->cmp_mask = mask;
        return UCS_OK;
    case UCT_ATOMIC_OP_AND:
        plan->opcode     = MLX5_OPCODE_ATOMIC_MASKED_CS;
        plan->value_mask = ~value & mask;
        return UCS_OK;
    case UCT_ATOMIC_OP_OR:
        plan->opcode     = MLX5_OPCODE_ATOMIC_MASKED_CS;
        plan->value_mask = value & mask;
        return UCS_OK;
    case UCT_ATOMIC_OP_SWAP:
        plan->opcode = MLX5_OPCODE_ATOMIC_MASKED_CS;
        return UCS_OK;
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

/* The atomic segment(s) of plan at seg, then the data segment of the
 * landing zone; the ds units they take. */
static UCS_F_ALWAYS_INLINE unsigned
strand_atomic_segs(const strand_txq_t *txq, void *seg,
                   const strand_atomic_plan_t *plan, unsigned size,
                   void *landing, uint32_t lkey)
{
    unsigned ds = 1;
    void    *seg2;

    switch (plan->opcode) {
    case MLX5_OPCODE_ATOMIC_FA:
        strand_set_atomic_fa_seg(seg, plan->value);
        break;
    case MLX5_OPCODE_ATOMIC_CS:
        strand_set_atomic_cs_seg(seg, plan->compare, plan->value);
        break;
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
        if (size == 8) {
            strand_set_masked_fa64_seg(seg, plan->value, plan->value_mask);
        } else {
            strand_set_masked_fa32_seg(seg, plan->value,
                                       (uint32_t)plan->value_mask);
        }
        break;
    default: /* MLX5_OPCODE_ATOMIC_MASKED_CS */
        if (size == 8) {
            seg2 = strand_sq_next(seg, sizeof(struct mlx5_wqe_atomic_seg),
                                  txq->sq.buf, txq->sq.end);
            strand_set_masked_cs64_segs(seg, seg2, plan->value, plan->compare,
                                        plan->value_mask, plan->cmp_mask);
            seg = seg2;
            ++ds;
        } else {
            strand_set_masked_cs32_seg(seg, plan->value, plan->compare,
                                       plan->value_mask, plan->cmp_mask);
        }
        break;
    }
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_atomic_seg), txq->sq.buf,
                         txq->sq.end);
    strand_set_data_seg(seg, (uintptr_t)landing, size, lkey);
    return ds + 1;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_atomic(uct_ep_h tl_ep, unsigned uct_op, unsigned size, uint64_t value,
                 uint64_t compare, void *result, uint64_t remote_addr,
                 uct_rkey_t rkey, uct_completion_t *comp)
{
    STRAND_EP_DECL(tl_ep);
    strand_atomic_plan_t plan;
    strand_tx_desc_t    *desc;
    uint8_t              opmod = 0;
    void                *landing;
    uint32_t             lkey;
    unsigned             ds;

    status = strand_atomic_plan(iface, uct_op, size, value, compare, &plan);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = strand_ep_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused(iface, ep, status, comp);
    }
    if (result != NULL) {
        desc = strand_ep_get_desc(iface, ep);
        if (ucs_unlikely(desc == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
        op.type     = (size == 8) ? STRAND_OP_FETCH64 : STRAND_OP_FETCH32;
        op.desc     = desc;
        op.u.result = result;
        landing     = desc->data;
        lkey        = desc->lkey;
    } else {
        op.type = STRAND_OP_PLAIN;
        landing = iface->scratch->data;
        lkey    = iface->scratch->lkey;
    }
    op.comp = comp;

    ctrl = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), txq->sq.buf,
                         txq->sq.end);
    ds  = STRAND_EP_DS(ep) + 1 +
         strand_atomic_segs(txq, seg, &plan, size, landing, lkey);
    if ((plan.opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) ||
        (plan.opcode == MLX5_OPCODE_ATOMIC_MASKED_FA)) {
        opmod = STRAND_MASKED_ATOMIC_OPMOD(size);
    }
    strand_ep_post(iface, ep, txq, ctrl, plan.opcode, opmod, ds,
                   strand_ep_fence_mode(iface, ep), &op);
    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t strand_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint32_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    return strand_ep_atomic(tl_ep, opcode, 4, value, 0, NULL, remote_addr, rkey,
                            NULL);
}

ucs_status_t strand_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint64_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    return strand_ep_atomic(tl_ep, opcode, 8, value, 0, NULL, remote_addr, rkey,
                            NULL);
}

ucs_status_t strand_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint32_t value, uint32_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    return strand_ep_atomic(tl_ep, opcode, 4, value, 0, result, remote_addr,
                            rkey, comp);
}

ucs_status_t strand_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint64_t value, uint64_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    return strand_ep_atomic(tl_ep, opcode, 8, value, 0, result, remote_addr,
                            rkey, comp);
}

ucs_status_t strand_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                      uint32_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint32_t *result,
                                      uct_completion_t *comp)
{
    return strand_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, 4, swap, compare,
                            result, remote_addr, rkey, comp);
}

ucs_status_t strand_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                      uint64_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint64_t *result,
                                      uct_completion_t *comp)
{
    return strand_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, 8, swap, compare,
                            result, remote_addr, rkey, comp);
}

/* -------------------------------------------------------- flush / fence */

/* uct.h: "the library will make a best effort attempt to cancel all
 * uncompleted operations"; afterwards the ep is in error state (every
 * operation returns UCS_ERR_CANCELED; its owner's error handler is not
 * called, as with UCX's own DC). */
static ucs_status_t strand_ep_flush_cancel(strand_iface_t   *iface,
                                           strand_ep_t      *ep,
                                           uct_completion_t *comp)
{
    if (!(ep->flags & STRAND_EP_FLAG_FAILED)) {
        ep->flags |= STRAND_EP_FLAG_FAILED;
        ep->status = UCS_ERR_CANCELED;
        strand_ep_tx_update(iface, ep);
    }
    strand_recovery_cancel(iface, ep);
    if (ep->outstanding == 0) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    if (ep->cancel_comp != NULL) {
        return UCS_ERR_NO_RESOURCE; /* one waits already: ask again later */
    }
    ep->cancel_comp = comp;
    return UCS_INPROGRESS;
}

static ucs_status_t strand_ep_invalidate(uct_ep_h tl_ep)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);

    if (!(ep->flags & STRAND_EP_FLAG_FAILED)) {
        strand_recovery_invalidate(iface, ep);
    }
    return UCS_OK;
}

static int strand_ep_is_connected(uct_ep_h                 tl_ep,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_iface_addr_t  *iface_addr)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);

    return iface->tl->ep_is_connected(iface, ep, dev_addr, iface_addr);
}

const strand_compat_ep_funcs_t strand_ep_funcs = {
        .invalidate   = strand_ep_invalidate,
        .is_connected = strand_ep_is_connected};

ucs_status_t
strand_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    STRAND_EP_DECL(tl_ep);

    if (ucs_unlikely(flags & UCT_FLUSH_FLAG_CANCEL)) {
        return strand_ep_flush_cancel(iface, ep, comp);
    }
    if (ucs_unlikely(ep->flags & STRAND_EP_FLAG_FAILED)) {
        /* its operations complete with its error; while its owner is
         * still to be told, the flush completes with them */
        return strand_ep_is_failing(ep) ?
                       strand_ep_refused(iface, ep, ep->status, comp) :
                       UCS_OK;
    }
    UCT_TL_EP_STAT_FLUSH(&ep->super);
    /* pending requests go first; a flush that is itself the pending
     * request being dispatched has everything before it posted */
    if (!(ep->flags & STRAND_EP_FLAG_IN_PENDING) &&
        !ucs_arbiter_group_is_empty(&ep->arb_group)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if ((ep->outstanding == 0) && (ep->held == 0)) {
        return UCS_OK;
    }
    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    if ((comp != NULL) && (ep->checked_gets > 0)) {
        /* a piece found bad is read again behind the NOP, which would
         * complete the flush before the GET: the flush waits in pending
         * (its last GET schedules the ep; nothing new goes before it) */
        return UCS_ERR_NO_RESOURCE;
    }
    if (comp == NULL) {
        /* its last WQEs may not have asked for a CQE: a NOP behind them
         * does (the caller comes back until this returns UCS_OK) */
        if (ep->txq != STRAND_TXQ_NONE) {
            (void)strand_txq_signal_tail(iface, &iface->txqs[ep->txq]);
        }
        return UCS_INPROGRESS;
    }
    /* behind its held work too: the NOP must come after it */
    txq = strand_ep_txq_ready(iface, ep);
    if (txq == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* a signaled NOP retires after everything posted before it */
    ctrl    = strand_txq_wqe_start(txq, &ep->av, ep->av_ds, &seg);
    op.type = STRAND_OP_PLAIN;
    op.comp = comp;
    strand_ep_post(iface, ep, txq, ctrl, MLX5_OPCODE_NOP, 0, 1 + ep->av_ds, 0,
                   &op);
    (void)status;
    return UCS_INPROGRESS;
}

ucs_status_t strand_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);

    /* the next WQE is fenced: its beat differs from the iface's */
    ep->fence_beat = iface->fence_beat - 1;
    strand_ep_gate(iface, ep);
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

/* Keepalive: a SEND with an AM id the receiver drops. A dead peer makes it
 * fail (transport retries exceeded) and the ep error handler runs. With a
 * completion (UCX >= 1.22 allows one) the probe is posted whatever else is
 * outstanding and comp follows its own completion: UCS_INPROGRESS, then
 * comp with UCS_OK or the endpoint's error. */
ucs_status_t
strand_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    strand_ep_t *ep = ucs_derived_of(tl_ep, strand_ep_t);
    ucs_status_t status;

    STRAND_EP_CHECK_PARAMS(flags, comp);
    if (ep->flags & STRAND_EP_FLAG_FAILED) {
        return UCS_OK; /* already reported */
    }
    if (comp != NULL) {
        return strand_ep_send_probe(ep, comp);
    }
    if (ep->outstanding > 0) {
        return UCS_OK; /* outstanding work will tell */
    }
    status = strand_ep_send_ctrl(ep, STRAND_AM_KEEPALIVE, NULL, 0);
    return (status == UCS_ERR_NO_RESOURCE) ? UCS_OK : status;
}

/* ----------------------------------------------------- create / destroy */

/* The shared part of an endpoint, then its transport's (iface->tl). */
UCS_CLASS_INIT_FUNC(strand_ep_t, const uct_ep_params_t *params)
{
    strand_iface_t *iface = ucs_derived_of(params->iface, strand_iface_t);
    ucs_status_t    status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    /* no address vector, no destination until the transport's part
     * says (a connected QP's WQEs name none) */
    memset(&self->av, 0, sizeof(self->av));
    self->dest         = 0;
    self->av_ds        = 0;
    self->dest_key     = 0;
    self->tx_txq       = NULL;
    self->pending      = 0;
    self->tx_gate      = iface->tx_gate - 1;
    self->refused_beat = iface->tx_beat - 1;
    self->txq          = STRAND_TXQ_NONE;
    self->lane         = 0;
    self->held         = 0;
    self->checked_gets = 0;
    self->outstanding  = 0;
    self->flags        = 0;
    self->fence_beat   = iface->fence_beat;
    self->status       = UCS_OK;
    self->cancel_comp  = NULL;
    self->taken        = NULL;
    self->num_taken    = 0;
    self->max_taken    = 0;
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_head_init(&self->txq_wait);
    status = UCS_STATS_NODE_ALLOC(&self->stats, iface->tl->ep_stats,
                                  self->super.stats, "");
    if (status != UCS_OK) {
        return status;
    }
    status = iface->tl->ep_init(iface, self, params);
    if (status != UCS_OK) {
        UCS_STATS_NODE_FREE(self->stats);
        return status;
    }
    status = strand_fc_ep_add(iface, self);
    if (status != UCS_OK) {
        iface->tl->ep_cleanup(iface, self);
        UCS_STATS_NODE_FREE(self->stats);
        return status;
    }
    ucs_list_add_tail(&iface->eps, &self->list);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(strand_ep_t)
{
    strand_iface_t *iface = ucs_derived_of(self->super.super.iface,
                                           strand_iface_t);
    strand_fc_ep_remove(iface, self);
    ucs_list_del(&self->list);
    UCS_STATS_NODE_FREE(self->stats);

    strand_ep_pending_drop(iface, self);
    ucs_arbiter_group_cleanup(&self->arb_group);
    ucs_list_del(&self->txq_wait);
    /* work still outstanding: its completions are cancelled now (the user
     * must not hear of this ep later); the send queue finishes the WQEs and its
     * lease ends */
    strand_recovery_orphan(iface, self);
    strand_iface_integrity_ep_gone(iface, self);
    strand_tag_ep_purge(iface, self, UCS_ERR_CANCELED);
    if (self->txq != STRAND_TXQ_NONE) {
        strand_txq_orphan(iface, &iface->txqs[self->txq], self);
    }
    iface->tl->ep_cleanup(iface, self);
    if (self->cancel_comp != NULL) {
        uct_invoke_completion(self->cancel_comp, UCS_ERR_CANCELED);
    }
    strand_ep_complete_taken(self, UCS_ERR_CANCELED);
    ucs_free(self->taken);
}

UCS_CLASS_DEFINE(strand_ep_t, uct_base_ep_t);
