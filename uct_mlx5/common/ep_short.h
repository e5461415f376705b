/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The short operations' fast path (am_short, put_short), inlined into the
 * entry points each transport makes for its WQEs' address part
 * (STRAND_EP_SHORT_ENTRY_POINTS: dc/dc_ep.c, rc/rc_iface.c), so that every
 * offset in the WQE folds. What does not fit the fast path goes the
 * general way (ep_ops.c).
 */
#ifndef STRAND_EP_SHORT_H_
#define STRAND_EP_SHORT_H_

#include "ep_post.h"

/* The general ways (ep_ops.c): they check the length and the AM id,
 * answer a refusal again while nothing changed (iface.h, refusals; the
 * fast path answers it first for a length it takes), and take the entry
 * points' own arguments, so that the fast path hands over to them with
 * the arguments where they came in (no register moved, none saved for
 * them). */
ucs_status_t strand_ep_am_short_general(uct_ep_h tl_ep, uint8_t id,
                                        uint64_t hdr, const void *payload,
                                        unsigned length);
ucs_status_t strand_ep_put_short_general(uct_ep_h tl_ep, const void *buffer,
                                         unsigned length, uint64_t remote_addr,
                                         uct_rkey_t rkey);

/* The ctrl segment, op record and counts of a short operation's WQE in
 * slot on ep's ready send queue txq, its segments written, of the given
 * shape (tail and kind: the operation's templates in the ep, ep.h); then
 * the doorbell (kick_db: strand_txq_ring_head_last). */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_short_finish(
        strand_ep_t *ep, strand_txq_t *txq, const strand_txq_slot_t *slot,
        const strand_short_shape_t *shape, uint64_t tail, uint32_t kind,
        int kick_db)
{
    uint64_t head;

    head = strand_ep_claim_light(ep, txq, slot, shape->head, shape->bbs, tail,
                                 kind, 0);
    return strand_ep_ring_last(ep, txq, slot->ctrl, head, kick_db);
}

/* The inline segment of an am_short at seg, its byte count as stored
 * (inl_be): [TMH: tmh_len zeroes][id][hdr][payload], written in place (no
 * header on the stack). */
static UCS_F_ALWAYS_INLINE void
strand_am_short_inline(void *seg, uint32_t inl_be, unsigned tmh_len, uint8_t id,
                       uint64_t hdr, const void *payload, unsigned length)
{
    struct mlx5_wqe_inl_data_seg *inl = (struct mlx5_wqe_inl_data_seg *)seg;
    uint8_t                      *dst = (uint8_t *)(inl + 1) + tmh_len;

    inl->byte_count = inl_be;
    memset(inl + 1, 0, tmh_len);
    dst[0] = id;
    memcpy(dst + STRAND_AM_HDR_SIZE, &hdr, sizeof(hdr));
    strand_copy_small(dst + STRAND_AM_HDR_SIZE + sizeof(hdr), payload, length);
}

/* The shape of ep's short WQE of `length` is the one the interface keeps
 * (a debug build checks it against the WQE's own arithmetic). */
#define strand_ep_shape_verify(_shape, _av_ds, _seg_bytes, _data)           \
    strand_debug_assert(                                                    \
            ((_shape)->bbs ==                                               \
             strand_ds_to_bbs(1 + (_av_ds) + (_seg_bytes) / STRAND_WQE_DS + \
                              strand_inline_ds(_data))) &&                  \
            ((_shape)->inl == htobe32((_data) | MLX5_INLINE_SEG)))

/* am_short of an ep whose WQEs carry av_ds units of address vector, on
 * an interface whose active messages start with a TMH of tmh_len bytes. */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_am_short_fast(
        uct_ep_h tl_ep, unsigned av_ds, unsigned tmh_len, int kick_db,
        uint8_t id, uint64_t hdr, const void *payload, unsigned length)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    const strand_short_shape_t *shape;
    strand_txq_slot_t           slot;
    strand_txq_t               *txq;
    unsigned                    bbs;
    void                       *seg;

    strand_debug_assert((iface->config.am_tmh == tmh_len) &&
                        (ep->av_ds == av_ds));
    /* a payload longer than the interface takes has a shape that never
     * fits (STRAND_SHORT_NONE): the general path says what is wrong, as
     * with an AM id out of range (no call here: the path keeps no
     * register for one) */
    if (ucs_unlikely((id >= UCT_AM_ID_MAX) || (length > STRAND_MAX_INLINE))) {
        return strand_ep_am_short_general(tl_ep, id, hdr, payload, length);
    }
    shape = &iface->am_shape[length];
    strand_ep_shape_verify(shape, av_ds, 0,
                           tmh_len + STRAND_AM_HDR_SIZE + sizeof(hdr) + length);
    bbs = shape->bbs;
    /* the window above its limit: one compare (ep.h, fc_over) */
    if (ucs_unlikely(
                (ep->fc_over <= 0) ||
                ((txq = strand_ep_fast_txq(iface, ep, bbs, &slot)) == NULL))) {
        goto general;
    }
    seg = strand_ep_fast_start(ep, &slot, av_ds);
    strand_ep_am_sent(iface, ep);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
    strand_am_short_inline(seg, shape->inl, tmh_len, id, hdr, payload, length);
    return strand_ep_short_finish(ep, txq, &slot, shape, ep->tx_am_tail,
                                  ep->tx_am_kind, kick_db);

general:
    if ((ep->refused_beat == iface->tx_beat) &&
        (length <= iface->config.am_short_payload)) {
        return UCS_ERR_NO_RESOURCE; /* nothing changed since */
    }
    return strand_ep_am_short_general(tl_ep, id, hdr, payload, length);
}

/* put_short of an ep whose WQEs carry av_ds units of address vector */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_put_short_fast(
        uct_ep_h tl_ep, unsigned av_ds, int kick_db, const void *buffer,
        unsigned length, uint64_t remote_addr, uct_rkey_t rkey)
{
    strand_ep_t    *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    const strand_short_shape_t   *shape;
    struct mlx5_wqe_inl_data_seg *inl;
    strand_txq_slot_t             slot;
    strand_txq_t                 *txq;
    unsigned                      bbs;
    void                         *seg;

    /* no data (no inline segment) and more than the interface takes have
     * shapes that never fit (STRAND_SHORT_NONE): the general path posts
     * the one and refuses the other */
    if (ucs_unlikely(length > STRAND_MAX_INLINE)) {
        return strand_ep_put_short_general(tl_ep, buffer, length, remote_addr,
                                           rkey);
    }
    strand_debug_assert(ep->av_ds == av_ds);
    shape = &iface->put_shape[length];
    bbs   = shape->bbs;
    txq   = strand_ep_fast_txq(iface, ep, bbs, &slot);
    if (ucs_unlikely(txq == NULL)) {
        if ((ep->refused_beat == iface->tx_beat) &&
            (length <= iface->config.max_inline)) {
            return UCS_ERR_NO_RESOURCE; /* nothing changed since */
        }
        return strand_ep_put_short_general(tl_ep, buffer, length, remote_addr,
                                           rkey);
    }
    strand_ep_shape_verify(shape, av_ds, sizeof(struct mlx5_wqe_raddr_seg),
                           length);
    if (length == 0) {
        __builtin_unreachable(); /* its shape never fits: the copy need
                                    not look for it */
    }
    seg = strand_ep_fast_start(ep, &slot, av_ds);
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    inl = UCS_PTR_BYTE_OFFSET(seg, sizeof(struct mlx5_wqe_raddr_seg));
    inl->byte_count = shape->inl;
    strand_copy_small(inl + 1, buffer, length);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    return strand_ep_short_finish(ep, txq, &slot, shape, ep->tx_put_tail,
                                  ep->tx_put_kind, kick_db);
}

/* The shapes of the short WQEs of an interface whose WQEs carry av_ds
 * units of address vector (the entry points' constant), for every length
 * its am_short and put_short take. */
void strand_ep_short_shapes(strand_iface_t *iface, unsigned av_ds);

/* A transport's short entry points of one kind (STRAND_EP_SHORT_ENTRY_POINTS)
 * to choose from at set up. */
typedef struct strand_ep_short_entry {
    uct_ep_am_short_func_t  am_short;
    uct_ep_am_short_func_t  am_short_tmh;
    uct_ep_put_short_func_t put_short;
} strand_ep_short_entry_t;

/* Sets ops' am_short and put_short from one of them: kick_db when the
 * interface's queues ring plain doorbells with a kick
 * (strand_dev_qp_kick_db), tmh with tag matching. */
static inline void
strand_ep_short_ops_set(uct_iface_ops_t               *ops,
                        const strand_ep_short_entry_t *any,
                        const strand_ep_short_entry_t *kick_db,
                        const strand_iface_t          *iface)
{
    const strand_ep_short_entry_t *e =
            strand_dev_qp_kick_db(iface->dev,
                                  (strand_mmio_mode_t)iface->md->mmio_mode) ?
                    kick_db :
                    any;

    ops->ep_am_short  = (iface->config.am_tmh != 0) ? e->am_short_tmh :
                                                      e->am_short;
    ops->ep_put_short = e->put_short;
}

/* One kind of entry points: _name##_am_short, _am_short_tmh and
 * _put_short (static), and _name##_entry, the three. */
#define STRAND_EP_SHORT_ENTRY_KIND(_name, _av_ds, _kick_db)                   \
    static ucs_status_t _name##_am_short(uct_ep_h tl_ep, uint8_t id,          \
                                         uint64_t hdr, const void *payload,   \
                                         unsigned length)                     \
    {                                                                         \
        return strand_ep_am_short_fast(tl_ep, _av_ds, 0, _kick_db, id, hdr,   \
                                       payload, length);                      \
    }                                                                         \
                                                                              \
    static ucs_status_t _name##_am_short_tmh(uct_ep_h tl_ep, uint8_t id,      \
                                             uint64_t    hdr,                 \
                                             const void *payload,             \
                                             unsigned    length)              \
    {                                                                         \
        return strand_ep_am_short_fast(tl_ep, _av_ds, STRAND_TMH_SIZE,        \
                                       _kick_db, id, hdr, payload, length);   \
    }                                                                         \
                                                                              \
    static ucs_status_t _name##_put_short(uct_ep_h tl_ep, const void *buffer, \
                                          unsigned   length,                  \
                                          uint64_t   remote_addr,             \
                                          uct_rkey_t rkey)                    \
    {                                                                         \
        return strand_ep_put_short_fast(tl_ep, _av_ds, _kick_db, buffer,      \
                                        length, remote_addr, rkey);           \
    }                                                                         \
                                                                              \
    static const strand_ep_short_entry_t _name##_entry = {                    \
            _name##_am_short, _name##_am_short_tmh, _name##_put_short};

/*
 * The entry points of the short operations of eps whose WQEs carry av_ds
 * units of address vector, a constant of the interface (the path kind is
 * the device's: the base AV of InfiniBand DC, RoCE's with a GRH, none on
 * a connected QP), so that every offset in the WQE folds; with tag matching
 * (_tmh) every active message starts with a TMH. Two kinds: _name for any
 * queue, _name##_kick for queues that ring a plain doorbell with a kick
 * (the software device's: strand_dev_qp_kick_db). Makes _name##_entry and
 * _name##_kick_entry (strand_ep_short_ops_set).
 */
#define STRAND_EP_SHORT_ENTRY_POINTS(_name, _av_ds) \
    STRAND_EP_SHORT_ENTRY_KIND(_name, _av_ds, 0)    \
    STRAND_EP_SHORT_ENTRY_KIND(_name##_kick, _av_ds, 1)

#endif
