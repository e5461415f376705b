/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side: the SRQ (behind dc_strand's DCT, rc_strand's QPs),
 * receive buffers from a registered memory pool, and active message
 * dispatch.
 *
 * The SRQ is the mlx5 linked list: the device takes posted WQEs in list
 * order, following next_wqe_index. Messages of different senders complete
 * out of order (a long SEND may finish after a short one that took a later
 * WQE), so a consumed WQE goes back to the tail of the free list (as
 * rdma-core's mlx5 provider does), not to a ring position.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface.h"
#include "tag.h"
#include "mlx5/wqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/cqe.h"
#include "rx.h"
#include "fc_grant.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/arch/bitops.h>

#include <string.h>

static void strand_rx_desc_init(uct_iface_h tl_iface, void *obj, uct_mem_h memh)
{
    strand_rx_desc_t *desc = obj;

    desc->lkey = ((strand_md_memh_t *)memh)->mr.lkey;
}

/* The uct_recv_desc_t release callback: `desc` is the payload pointer
 * handed to the AM handler (one byte after the AM id). */
static void strand_rx_release_desc(uct_recv_desc_t *self, void *desc)
{
    strand_iface_t *iface = ucs_container_of(self, strand_iface_t,
                                             release_desc);

    ucs_mpool_put_inline(
            UCS_PTR_BYTE_OFFSET(desc,
                                -(ptrdiff_t)iface->config.rx_headroom_offset));
}

/* The uct_recv_desc_t release callback of an unexpected tagged message:
 * its data starts one byte earlier than an active message's payload (the
 * TMH in front of it is one byte shorter than TMH + AM id). */
static void strand_rx_release_tm_desc(uct_recv_desc_t *self, void *desc)
{
    strand_iface_t *iface = ucs_container_of(self, strand_iface_t,
                                             release_tm_desc);

    ucs_mpool_put_inline(
            UCS_PTR_BYTE_OFFSET(desc,
                                -(ptrdiff_t)(iface->config.rx_headroom_offset -
                                             STRAND_AM_HDR_SIZE)));
}

/* The AM id byte, right before the payload. */
static inline uint8_t *
strand_rx_am_hdr(strand_iface_t *iface, strand_rx_desc_t *desc)
{
    return (uint8_t *)desc + iface->config.rx_payload_offset -
           STRAND_AM_HDR_SIZE;
}

/* Where the SRQ WQE points: the AM id, or with tag matching the TMH
 * before it (every message to a tag-matching SRQ starts with one). */
static inline uint8_t *
strand_rx_wqe_data(strand_iface_t *iface, strand_rx_desc_t *desc)
{
    return strand_rx_am_hdr(iface, desc) - iface->config.am_tmh;
}

static inline struct mlx5_wqe_srq_next_seg *
strand_rx_srq_wqe(strand_iface_t *iface, uint32_t idx)
{
    return (struct mlx5_wqe_srq_next_seg *)((uint8_t *)iface->srq.dv.buf +
                                            (size_t)idx * iface->srq.dv.stride);
}

/*
 * A receive buffer stays bound to its SRQ WQE (srq_descs[idx], the WQE's
 * data segment pointing at it) for as long as the transport has it back
 * after each message: posting that WQE again is then only a step of the
 * free list's head, no data segment written. A WQE whose buffer the user
 * kept (UCT_CB_PARAM_FLAG_DESC) loses it (NULL) and gets one from the
 * pool when it is posted next.
 *
 * The WQE at the head of the free list posted (the tail WQE stays as the
 * list's sentinel: the caller saw head != tail), with its bound buffer or
 * one from the pool; 0 when the pool has none. The doorbell is the
 * caller's.
 */
static inline int strand_rx_post_head(strand_iface_t *iface)
{
    uint32_t                      idx  = iface->srq_head;
    struct mlx5_wqe_srq_next_seg *wqe  = strand_rx_srq_wqe(iface, idx);
    strand_rx_desc_t             *desc = iface->srq_descs[idx];

    if (ucs_unlikely(desc == NULL)) {
        desc = ucs_mpool_get_inline(&iface->rx_mp);
        if (desc == NULL) {
            return 0; /* try again on the next progress */
        }
        strand_set_data_seg((struct mlx5_wqe_data_seg *)(wqe + 1),
                            (uintptr_t)strand_rx_wqe_data(iface, desc),
                            iface->config.seg_size, desc->lkey);
        iface->srq_descs[idx] = desc;
    }
    iface->srq_head = be16toh(wqe->next_wqe_index) & iface->srq_mask;
    ++iface->srq_posted;
    --iface->srq_missing;
    return 1;
}

void strand_rx_refill(strand_iface_t *iface)
{
    uint16_t posted = iface->srq_posted;

    while ((iface->srq_missing > 0) && (iface->srq_head != iface->srq_tail) &&
           strand_rx_post_head(iface)) {
    }
    if (iface->srq_posted != posted) {
        strand_srq_ring_doorbell(iface->srq.dv.dbrec, iface->srq_posted);
    }
}

/* A consumed WQE goes back to the tail of the free list, its buffer still
 * bound to it. */
static inline void strand_rx_srq_free(strand_iface_t *iface, uint32_t idx)
{
    strand_rx_srq_wqe(iface, iface->srq_tail)->next_wqe_index = htobe16(
            (uint16_t)idx);
    iface->srq_tail = idx;
}

/* The WQE `idx` consumed by a message whose buffer the transport has back
 * (or never wrote): back on the free list, and the head posted in its
 * place. The head's buffer is usually bound to it already; the step is
 * then all there is to it. */
static UCS_F_ALWAYS_INLINE void
strand_rx_srq_recycle(strand_iface_t *iface, uint32_t idx)
{
    uint32_t head = iface->srq_head;

    strand_rx_srq_free(iface, idx);
    if (ucs_likely(iface->srq_descs[head] != NULL)) {
        iface->srq_head =
                be16toh(strand_rx_srq_wqe(iface, head)->next_wqe_index) &
                iface->srq_mask;
        ++iface->srq_posted;
    } else {
        ++iface->srq_missing;
        strand_rx_post_head(iface); /* (head != tail: idx is the tail now) */
    }
}

/*
 * The layout of a receive buffer: [descriptor][recv_desc pointer and the
 * user's rx_headroom][TMH (tag matching)][AM id][payload]; the headroom
 * overlaps the headers, which are parsed before the user gets the buffer
 * (and it has one byte more for an unexpected tagged message, whose data
 * follows the TMH). The payload of every active
 * message where the user asked (uct_iface_params_t am_alignment /
 * am_align_offset: payload + offset aligned; by default the payload is
 * cache-line aligned). UCX's own helper checks the parameters (and the
 * memory pool refuses an alignment that is 0 or not a power of two). The
 * room before the payload is padded so that elements, and the pool's and
 * our headers at their start, stay 8-byte aligned whatever the offset.
 */
static ucs_status_t strand_rx_layout(strand_iface_t           *iface,
                                     const uct_iface_params_t *params,
                                     size_t *align_p, size_t *align_offset_p)
{
    size_t rx_headroom = UCT_IFACE_PARAM_VALUE(params, rx_headroom, RX_HEADROOM,
                                               0);
    size_t hdr_len     = STRAND_AM_HDR_SIZE + iface->config.am_tmh;
    size_t base        = sizeof(strand_rx_desc_t) +
                  ucs_max(sizeof(uct_recv_desc_t *) + rx_headroom +
                                  (iface->config.am_tmh ? STRAND_AM_HDR_SIZE :
                                                          0),
                          hdr_len);
    size_t       align, user_offset;
    ucs_status_t status;

    status = uct_iface_param_am_alignment(params, iface->config.seg_size, 0, 0,
                                          &align, &user_offset);
    if (status != UCS_OK) {
        return status;
    }
    if ((align == 0) || !ucs_is_pow2(align)) {
        /* what the memory pool would say about it */
        ucs_error("%s: dc_strand: invalid AM alignment %zu (a power of two)",
                  iface->dev->info.name, align);
        return UCS_ERR_INVALID_PARAM;
    }
    iface->config.rx_payload_offset = base +
                                      ((8 - ((base + user_offset) % 8)) % 8);
    iface->config.rx_headroom_offset = iface->config.rx_payload_offset -
                                       rx_headroom;
    *align_p        = ucs_max(align, 8);
    *align_offset_p = iface->config.rx_payload_offset + user_offset;
    return UCS_OK;
}

ucs_status_t
strand_rx_init(strand_iface_t *iface, const uct_iface_params_t *params)
{
    uct_iface_mpool_config_t mp_config = iface->config.rx_mp;
    size_t                   align, align_offset;
    ucs_status_t             status;
    uint32_t                 slots;

    status = strand_rx_layout(iface, params, &align, &align_offset);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_mpool_init(&iface->super, &iface->rx_mp,
                                  iface->config.rx_payload_offset -
                                          STRAND_AM_HDR_SIZE -
                                          iface->config.am_tmh +
                                          iface->config.seg_size,
                                  align_offset, align, &mp_config,
                                  mp_config.bufs_grow, strand_rx_desc_init,
                                  "strand_rx");
    if (status != UCS_OK) {
        return status;
    }
    iface->have_rx_mp = 1;

    iface->release_desc.cb    = strand_rx_release_desc;
    iface->release_tm_desc.cb = strand_rx_release_tm_desc;

    /* the SRQ list has wqe_cnt WQEs; its tail one is a sentinel */
    slots            = strand_roundup_pow2(iface->srq.wqe_cnt);
    iface->srq_mask  = slots - 1;
    iface->srq_head  = iface->srq.dv.head;
    iface->srq_tail  = iface->srq.dv.tail;
    iface->srq_descs = ucs_calloc(slots, sizeof(*iface->srq_descs),
                                  "strand_srq_descs");
    if (iface->srq_descs == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    iface->srq_posted   = 0;
    iface->rx_am_in_cqe = (iface->config.am_tmh > 0) ?
                                  1 :
                                  ((MLX5_CQE_RESP_SEND << 4) |
                                   MLX5_INLINE_SCATTER_64);
    /* RX_MAX_BUFS below RX_QUEUE_LEN: the queue holds what the pool has */
    iface->srq_missing = ucs_min(ucs_min(iface->config.rx_queue_len, slots - 1),
                                 iface->config.rx_mp.max_bufs);
    strand_rx_refill(iface);
    if (iface->srq_missing > 0) {
        ucs_error("%s: could not post %u receive buffers",
                  iface->dev->info.name, iface->srq_missing);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

void strand_rx_cleanup(strand_iface_t *iface)
{
    uint32_t i;

    if (iface->srq_descs != NULL) {
        for (i = 0; i <= iface->srq_mask; ++i) {
            if (iface->srq_descs[i] != NULL) {
                ucs_mpool_put_inline(iface->srq_descs[i]);
            }
        }
        ucs_free(iface->srq_descs);
        iface->srq_descs = NULL;
    }
    if (iface->have_rx_mp) {
        ucs_mpool_cleanup(&iface->rx_mp, 0);
        iface->have_rx_mp = 0;
    }
}

/* uct_recv_desc(data) = release, for a data pointer at any address (an odd
 * AM alignment offset puts it there) */
static inline void strand_rx_set_release(void *data, uct_recv_desc_t *release)
{
    memcpy(UCS_PTR_BYTE_OFFSET(data, -(ptrdiff_t)sizeof(release)), &release,
           sizeof(release));
}

/* One received message (`length` bytes, a good CQE) handed to its taker
 * (tag matching, the transport's own, the user's handler); 1 when its
 * buffer is free again, 0 when the user keeps it (uct_iface_release_desc
 * gives it back). */
static UCS_F_ALWAYS_INLINE int
strand_rx_handle(strand_iface_t *iface, struct mlx5_cqe64 *cqe,
                 strand_rx_desc_t *desc, uint32_t length)
{
    uct_recv_desc_t *release = &iface->release_desc;
    ucs_status_t     status;
    uint8_t          am_id;
    void            *payload;

    if (ucs_unlikely(iface->config.am_tmh > 0)) {
        switch (strand_tag_rx(iface, cqe, strand_rx_wqe_data(iface, desc),
                              length)) {
        case STRAND_TAG_RX_KEPT:
            /* the user keeps it: uct_iface_release_desc() on the pointer
             * rx_headroom before the data (after the TMH) */
            strand_rx_set_release(
                    UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_headroom_offset -
                                                      STRAND_AM_HDR_SIZE),
                    &iface->release_tm_desc);
            return 0;
        case STRAND_TAG_RX_DONE:
            return 1;
        default: /* an active message after its TMH */
            break;
        }
        length = (length >= iface->config.am_tmh) ?
                         length - iface->config.am_tmh :
                         0;
    }
    if (ucs_unlikely(length < STRAND_AM_HDR_SIZE)) {
        return 1;
    }
    am_id   = *strand_rx_am_hdr(iface, desc);
    payload = (uint8_t *)desc + iface->config.rx_payload_offset;
    if (ucs_unlikely(am_id >= UCT_AM_ID_MAX)) {
        /* the transport's own: flow control, keepalive probes */
        strand_fc_handle(iface, am_id, payload, length - STRAND_AM_HDR_SIZE);
        return 1;
    }

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id, payload,
                       length - STRAND_AM_HDR_SIZE, "RX: AM");
    status = uct_iface_invoke_am(&iface->super, am_id, payload,
                                 length - STRAND_AM_HDR_SIZE,
                                 UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_OK) {
        return 1;
    }
    /* the user keeps it and gives it back with uct_iface_release_desc()
     * on the pointer rx_headroom before the payload */
    strand_rx_set_release(UCS_PTR_BYTE_OFFSET(desc,
                                              iface->config.rx_headroom_offset),
                          release);
    return 0;
}

/* Scatter-to-CQE (RX_INLINE) off the common way (strand_rx_am_in_cqe): a
 * small message came inside the CQE (a good one: op_own says where) and its
 * receive buffer was left untouched; it goes where the buffer's data would
 * be, for tag matching to parse and for a message in a 64-byte CQE's first
 * half. 0 when it is longer than the CQE holds. */
static UCS_F_ALWAYS_INLINE int
strand_rx_take_inline(strand_iface_t *iface, const struct mlx5_cqe64 *cqe,
                      uint8_t op_own, uint32_t length, strand_rx_desc_t *desc)
{
    uint8_t *dst = strand_rx_wqe_data(iface, desc);

    /* the whole inline area, a fixed size (a few moves, no length
     * branches): the buffer has seg_size >= 64 bytes */
    if (op_own & MLX5_INLINE_SCATTER_32) {
        if (ucs_unlikely(length > 32)) {
            return 0;
        }
        memcpy(dst, cqe, 32);
    } else {
        if (ucs_unlikely(length > STRAND_CQE_INLINE_MAX)) {
            return 0;
        }
        memcpy(dst, cqe - 1, STRAND_CQE_INLINE_MAX);
    }
    return 1;
}

/* One receive CQE that comes with a buffer: the message handled, the
 * WQE back on the free list and, when the buffer came back too, posted
 * again at the head (usually a WQE whose buffer is bound to it). */
static UCS_F_ALWAYS_INLINE void
strand_rx_cqe(strand_iface_t *iface, struct mlx5_cqe64 *cqe, uint8_t op_own)
{
    uint32_t          idx    = strand_cqe_wqe_counter(cqe) & iface->srq_mask;
    strand_rx_desc_t *desc   = iface->srq_descs[idx];
    uint32_t          length = strand_cqe_byte_cnt(cqe);

    if (ucs_unlikely(desc == NULL)) {
        ucs_error("%s: receive CQE for SRQ WQE %u, which has no buffer",
                  iface->dev->info.name, idx);
        return;
    }
    if (ucs_unlikely((op_own >> 4) >= MLX5_CQE_REQ_ERR)) {
        ucs_debug("%s: receive error syndrome 0x%x", iface->dev->info.name,
                  strand_cqe_syndrome(cqe));
    } else if ((op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64)) &&
               ucs_unlikely(!strand_rx_take_inline(iface, cqe, op_own, length,
                                                   desc))) {
        ucs_error("%s: %u bytes scattered to a CQE", iface->dev->info.name,
                  length);
    } else if (ucs_unlikely(!strand_rx_handle(iface, cqe, desc, length))) {
        iface->srq_descs[idx] = NULL; /* the user keeps it */
        ++iface->srq_missing;
        strand_rx_srq_free(iface, idx);
        strand_rx_post_head(iface);
        return;
    }
    strand_rx_srq_recycle(iface, idx);
}

/*
 * The common receive CQE (its op_own is iface->rx_am_in_cqe: no tag
 * matching): an active message of up to 64 bytes scattered into the
 * CQE's first half. The handler gets the CQE's own bytes without
 * UCT_CB_PARAM_FLAG_DESC, as UCX's mlx5 transports give them (uct.h: only
 * data in a descriptor is aligned, am_alignment; a user who keeps the
 * data copies it), so the receive buffer, never written, stays bound to
 * its WQE and nothing is copied. The consumer index has not passed the
 * CQE while the handler runs, so the device does not write over it.
 * 0 for what the general path handles: no bytes or more than the CQE
 * holds (an error it reports), the transport's own messages (flow
 * control, keepalive: they read their fields aligned from a buffer).
 */
static UCS_F_ALWAYS_INLINE int
strand_rx_am_in_cqe(strand_iface_t *iface, struct mlx5_cqe64 *cqe)
{
    const uint8_t *data   = (const uint8_t *)(cqe - 1);
    uint32_t       length = strand_cqe_byte_cnt(cqe) - STRAND_AM_HDR_SIZE;
    uint8_t        am_id  = data[0];
    uint32_t       idx;

    if (ucs_unlikely((length >= STRAND_CQE_INLINE_MAX) ||
                     (am_id >= UCT_AM_ID_MAX))) {
        return 0;
    }
    idx = strand_cqe_wqe_counter(cqe) & iface->srq_mask;
    if (ucs_unlikely(iface->srq_descs[idx] == NULL)) {
        return 0; /* not a WQE the device has: the general path says so */
    }
    strand_rx_srq_recycle(iface, idx);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id,
                       (void *)(data + STRAND_AM_HDR_SIZE), length,
                       "RX: AM in CQE");
    uct_iface_invoke_am(&iface->super, am_id,
                        (void *)(data + STRAND_AM_HDR_SIZE), length, 0);
    return 1;
}

unsigned strand_rx_progress(strand_iface_t *iface)
{
    const uint32_t     start  = iface->rx_ci;
    const uint16_t     posted = iface->srq_posted;
    uint32_t           end    = start + iface->config.rx_max_poll;
    uint32_t           ci     = start;
    strand_cq_cursor_t cur    = iface->rx_cur; /* (it and rx_ci written back
                                                  at the end: handlers do
                                                  not poll) */
    struct mlx5_cqe64 *cqe;
    uint8_t            op_own;

    while ((ci != end) &&
           ((cqe = strand_cq_cursor_get(&cur, &op_own)) != NULL)) {
        ++ci;
        if (ucs_unlikely(strand_cq_cursor_step(&cur))) {
            /* the CQEs before this one are handled */
            strand_cq_update_ci(iface->rx_cq.dv.dbrec, ci - 1);
        }
        if (ucs_likely((op_own & STRAND_CQE_OP_FORMAT_MASK) ==
                       iface->rx_am_in_cqe) &&
            ucs_likely(strand_rx_am_in_cqe(iface, cqe))) {
            continue;
        }
        if (ucs_unlikely((op_own >> 4) == MLX5_CQE_SIG_ERR)) {
            /* a responder's check (no mkey of ours checks what peers
             * write or read: the sender signs, the reader checks) */
            ucs_warn("%s: signature error CQE on the receive CQ for mkey "
                     "0x%x",
                     iface->dev->info.name, strand_sigerr_cqe_mkey(cqe));
        } else if (ucs_unlikely(!strand_tm_cqe_has_buffer(cqe))) {
            /* tag matching: a list operation or a matched tag */
            strand_tm_handle_cqe(&iface->tm, cqe);
        } else {
            strand_rx_cqe(iface, cqe, op_own);
        }
    }
    if (ci != start) {
        iface->rx_ci  = ci;
        iface->rx_cur = cur;
        strand_cq_update_ci(iface->rx_cq.dv.dbrec, ci);
        STRAND_IFACE_STAT(iface, RX_CQE, ci - start);
    }
    if (iface->srq_posted != posted) {
        strand_srq_ring_doorbell(iface->srq.dv.dbrec, iface->srq_posted);
    }
    if (ucs_unlikely(iface->srq_missing > 0)) {
        strand_rx_refill(iface);
    }
    if (iface->config.am_tmh > 0) {
        strand_tm_progress(&iface->tm);
    }
    return ci - start;
}
