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

/* the general ways (ep_ops.c): their parameters checked */
ucs_status_t strand_ep_am_short_general(strand_iface_t *iface, strand_ep_t *ep,
                                        uint8_t id, uint64_t hdr,
                                        const void *payload, unsigned length);
ucs_status_t strand_ep_put_short_general(strand_iface_t *iface,
                                         strand_ep_t *ep, const void *buffer,
                                         unsigned length, uint64_t remote_addr,
                                         uct_rkey_t rkey);

/* The inline segment of an am_short at seg, total bytes of data:
 * [TMH: tmh_len zeroes][id][hdr][payload], written in place (no header on
 * the stack). */
static UCS_F_ALWAYS_INLINE void
strand_am_short_inline(void *seg, uint32_t total, unsigned tmh_len,
                          uint8_t id, uint64_t hdr, const void *payload,
                          unsigned length)
{
    struct mlx5_wqe_inl_data_seg *inl = (struct mlx5_wqe_inl_data_seg*)seg;
    uint8_t *dst                      = (uint8_t*)(inl + 1) + tmh_len;

    inl->byte_count = htobe32(total | MLX5_INLINE_SEG);
    memset(inl + 1, 0, tmh_len);
    dst[0] = id;
    memcpy(dst + STRAND_AM_HDR_SIZE, &hdr, sizeof(hdr));
    strand_copy_small(dst + STRAND_AM_HDR_SIZE + sizeof(hdr), payload,
                      length);
}

/* am_short of an ep whose WQEs carry av_ds units of address vector, on
 * an interface whose active messages start with a TMH of tmh_len bytes. */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_am_short_fast(uct_ep_h tl_ep, unsigned av_ds, unsigned tmh_len,
                           uint8_t id, uint64_t hdr, const void *payload,
                           unsigned length)
{
    strand_ep_t *ep       = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                              strand_iface_t);
    uint32_t total           = tmh_len + STRAND_AM_HDR_SIZE +
                               sizeof(hdr) + length;
    strand_txq_slot_t slot;
    strand_txq_t *dci;
    unsigned ds;
    uint64_t head;
    void *seg;

    UCT_CHECK_AM_ID(id);
    STRAND_CHECK_MAX(length, iface->config.am_short_payload,
                        "am_short payload");
    strand_debug_assert((iface->config.am_tmh == tmh_len) &&
                           (ep->av_ds == av_ds));
    dci = strand_ep_fast_dci(iface, ep);
    if (ucs_unlikely((dci == NULL) || (ep->fc_wnd <= ep->fc_limit) ||
                     !strand_ep_fast_start(
                             ep, dci, av_ds,
                             sizeof(struct mlx5_wqe_inl_data_seg) + total,
                             &slot, &seg))) {
        if (ep->refused_beat == iface->tx_beat) {
            return UCS_ERR_NO_RESOURCE; /* nothing changed since */
        }
        return strand_ep_am_short_general(iface, ep, id, hdr, payload,
                                             length);
    }
    strand_ep_am_sent(iface, ep);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
    strand_am_short_inline(seg, total, tmh_len, id, hdr, payload, length);
    ds   = 1 + av_ds + strand_inline_ds(total);
    head = strand_ep_fast_claim(ep, dci, &slot, MLX5_OPCODE_SEND, ds,
                                   MLX5_WQE_CTRL_SOLICITED);
    strand_ep_ring(ep, dci, slot.ctrl, strand_ds_to_bbs(ds), head);
    return UCS_OK;
}

/* put_short of an ep whose WQEs carry av_ds units of address vector */
static UCS_F_ALWAYS_INLINE ucs_status_t
strand_ep_put_short_fast(uct_ep_h tl_ep, unsigned av_ds,
                            const void *buffer, unsigned length,
                            uint64_t remote_addr, uct_rkey_t rkey)
{
    strand_ep_t *ep       = ucs_derived_of(tl_ep, strand_ep_t);
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                              strand_iface_t);
    strand_txq_slot_t slot;
    strand_txq_t *dci;
    unsigned ds;
    uint64_t head;
    void *seg;

    /* 1 .. max_inline bytes in one compare; no data goes the general way
     * (no inline segment), too much is the error */
    if (ucs_unlikely((size_t)length - 1 >= iface->config.max_inline)) {
        STRAND_CHECK_MAX(length, iface->config.max_inline, "put_short");
        return strand_ep_put_short_general(iface, ep, buffer, length,
                                              remote_addr, rkey);
    }
    strand_debug_assert(ep->av_ds == av_ds);
    dci = strand_ep_fast_dci(iface, ep);
    if (ucs_unlikely((dci == NULL) ||
                     !strand_ep_fast_start(
                             ep, dci, av_ds,
                             sizeof(struct mlx5_wqe_raddr_seg) +
                             sizeof(struct mlx5_wqe_inl_data_seg) + length,
                             &slot, &seg))) {
        if (ep->refused_beat == iface->tx_beat) {
            return UCS_ERR_NO_RESOURCE; /* nothing changed since */
        }
        return strand_ep_put_short_general(iface, ep, buffer, length,
                                              remote_addr, rkey);
    }
    strand_set_raddr_seg(seg, remote_addr, strand_rkey_plain(rkey));
    ds   = 1 + av_ds + 1 +
           strand_set_inline_hdr_data(UCS_PTR_BYTE_OFFSET(seg,
                                          sizeof(struct mlx5_wqe_raddr_seg)),
                                      NULL, 0, buffer, length);
    head = strand_ep_fast_claim(ep, dci, &slot, MLX5_OPCODE_RDMA_WRITE, ds,
                                   STRAND_WQE_CTRL_FM_NONE);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    strand_ep_ring(ep, dci, slot.ctrl, strand_ds_to_bbs(ds), head);
    return UCS_OK;
}

/*
 * The entry points of the short operations of eps whose WQEs carry av_ds
 * units of address vector, a constant of the interface (the path kind is
 * the device's: the base AV of InfiniBand DC, RoCE's with a GRH, none on
 * a connected QP), so that every offset in the WQE folds; with tag matching
 * (_tmh) every active message starts with a TMH. Makes _name##_am_short,
 * _name##_am_short_tmh (static) and _name##_put_short.
 */
#define STRAND_EP_SHORT_ENTRY_POINTS(_name, _av_ds) \
    ucs_status_t _name##_am_short(uct_ep_h tl_ep, uint8_t id, \
                                              uint64_t hdr, \
                                              const void *payload, \
                                              unsigned length) \
    { \
        return strand_ep_am_short_fast(tl_ep, _av_ds, 0, id, hdr, \
                                          payload, length); \
    } \
    \
    static ucs_status_t \
    _name##_am_short_tmh(uct_ep_h tl_ep, uint8_t id, \
                                       uint64_t hdr, const void *payload, \
                                       unsigned length) \
    { \
        return strand_ep_am_short_fast(tl_ep, _av_ds, STRAND_TMH_SIZE, \
                                          id, hdr, payload, length); \
    } \
    \
    ucs_status_t _name##_put_short(uct_ep_h tl_ep, \
                                               const void *buffer, \
                                               unsigned length, \
                                               uint64_t remote_addr, \
                                               uct_rkey_t rkey) \
    { \
        return strand_ep_put_short_fast(tl_ep, _av_ds, buffer, length, \
                                           remote_addr, rkey); \
    }

#endif
