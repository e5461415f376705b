/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5 send/receive WQE segment builders: one small inline function per
 * segment. Layouts are the ones of <infiniband/mlx5dv.h>; every multi-byte
 * field is big-endian. Plain C, no UCX or software-device types, so the
 * transport (uct_mlx5) and the software device's provider (src/sim) build
 * exactly the same bytes.
 *
 * Send queue geometry: an array of wqe_cnt (a power of two) 64-byte basic
 * blocks (BB). The producer index is a free-running BB counter; a WQE starts
 * at BB (pi & (wqe_cnt - 1)) and one that runs over the end of the buffer
 * continues at BB 0. Segments are 16-byte aligned, so a segment never
 * straddles the end; inline data may.
 */
#ifndef STRAND_MLX5_WQE_H_
#define STRAND_MLX5_WQE_H_

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STRAND_WQE_BB                  64u /* MLX5_SEND_WQE_BB */
#define STRAND_WQE_DS                  16u /* one "ds" unit */
#define STRAND_AV_BASE_SIZE            16u /* AV with ext = 0 (bytes 0-15) */
#define STRAND_AV_FULL_SIZE            ((unsigned)sizeof(struct mlx5_wqe_av)) /* 48 */
#define STRAND_WQE_CTRL_FM_NONE        0x00
#define STRAND_WQE_CTRL_FM_SMALL       0x20 /* initiator small fence */
#define STRAND_WQE_CTRL_FM_FENCE       0x40
#define STRAND_WQE_CTRL_FM_STRONG      0x60
#define STRAND_WQE_CTRL_FM_SMALL_FENCE 0x80 /* = MLX5_WQE_CTRL_FENCE */
/* opmod of masked atomics: 0x08 | (log2(size) - 2) */
#define STRAND_MASKED_ATOMIC_OPMOD(_size) \
    ((uint8_t)(0x08 | (((_size) == 8) ? 1 : 0)))

/* ------------------------------------------------------------ geometry */

/* Address of BB n (n is free-running, masked here). */
static inline void *strand_sq_bb(void *sq_buf, uint32_t wqe_cnt, uint32_t n)
{
    return (uint8_t *)sq_buf + ((size_t)(n & (wqe_cnt - 1)) * STRAND_WQE_BB);
}

/* One past the last byte of the SQ buffer. */
static inline void *strand_sq_end(void *sq_buf, uint32_t wqe_cnt)
{
    return (uint8_t *)sq_buf + ((size_t)wqe_cnt * STRAND_WQE_BB);
}

/* A segment pointer that reached the end of the SQ continues at BB 0. */
static inline void *strand_sq_wrap(void *seg, void *sq_buf, void *sq_end)
{
    if ((uint8_t *)seg >= (uint8_t *)sq_end) {
        return (uint8_t *)sq_buf + ((uint8_t *)seg - (uint8_t *)sq_end);
    }
    return seg;
}

/* Advance past a segment of `size` bytes, wrapping at the SQ end. */
static inline void *
strand_sq_next(void *seg, size_t size, void *sq_buf, void *sq_end)
{
    return strand_sq_wrap((uint8_t *)seg + size, sq_buf, sq_end);
}

/* Number of BBs a WQE of `ds` 16-byte units (at most 63) takes. */
static inline unsigned strand_ds_to_bbs(unsigned ds)
{
    return (ds + (STRAND_WQE_BB / STRAND_WQE_DS) - 1) /
           (STRAND_WQE_BB / STRAND_WQE_DS);
}

/* ds units of an inline segment carrying `len` bytes (0 when len is 0:
 * no segment is emitted). */
static inline unsigned strand_inline_ds(uint32_t len)
{
    if (len == 0) {
        return 0;
    }
    return (len + (unsigned)sizeof(struct mlx5_wqe_inl_data_seg) +
            STRAND_WQE_DS - 1) /
           STRAND_WQE_DS;
}

/* ---------------------------------------------------------------- ctrl */

/*
 * The ctrl segment in two 8-byte words, as they are stored (a hot post
 * writes each with one store; the doorbell sends the first again):
 *   head  bytes 0-7: opmod, WQE index, opcode, QP number, ds;
 *   tail  bytes 8-15: signature 0, DCI stream id, fm_ce_se, imm (as
 *         given: already BE).
 * Each is built as a big-endian 64-bit number and swapped once, so that
 * a constant part (an endpoint's stream, an operation's opcode) folds.
 */
/* the QP number's part of a head (a queue keeps it: a post adds the rest) */
static inline uint64_t strand_ctrl_head_qpn(uint32_t qpn)
{
    return (uint64_t)(qpn & 0xffffff) << 8;
}

/* ... of a ds already checked to be at most 0x3f (strand_sq_ctrl_head);
 * opmod and opcode, constants where a post is inlined, are swapped apart
 * (the compiler folds their swap). */
static inline uint64_t strand_ctrl_head_of(uint64_t head_qpn, uint8_t opmod,
                                           uint16_t wqe_idx, uint8_t opcode,
                                           unsigned ds)
{
    return htobe64(((uint64_t)wqe_idx << 40) | head_qpn | ds) |
           htobe64(((uint64_t)opmod << 56) | ((uint64_t)opcode << 32));
}

/* A head in two parts ORed: what the operation decides (opmod, opcode and
 * a ds of at most 0x3f), which a post may have at hand ready-made, and
 * what the queue does (the WQE index and the QP number). */
static inline uint64_t
strand_ctrl_head_op(uint8_t opmod, uint8_t opcode, unsigned ds)
{
    return htobe64(((uint64_t)opmod << 56) | ((uint64_t)opcode << 32) | ds);
}

static inline uint64_t strand_ctrl_head_idx(uint64_t head_qpn, uint16_t wqe_idx)
{
    return htobe64(((uint64_t)wqe_idx << 40) | head_qpn);
}

static inline uint64_t strand_ctrl_head(uint8_t opmod, uint16_t wqe_idx,
                                        uint8_t opcode, uint32_t qpn,
                                        unsigned ds)
{
    return strand_ctrl_head_of(strand_ctrl_head_qpn(qpn), opmod, wqe_idx,
                               opcode, ds & 0x3f);
}

static inline uint64_t
strand_ctrl_tail(uint16_t stream_id, uint8_t fm_ce_se, uint32_t imm_be)
{
    return htobe64(((uint64_t)stream_id << 40) | ((uint64_t)fm_ce_se << 32) |
                   be32toh(imm_be));
}

static inline void strand_set_ctrl_words(struct mlx5_wqe_ctrl_seg *ctrl,
                                         uint64_t head, uint64_t tail)
{
    memcpy(ctrl, &head, sizeof(head));
    memcpy((uint8_t *)ctrl + sizeof(head), &tail, sizeof(tail));
}

/*
 * Ctrl segment. `wqe_idx` is the 16-bit WQE index (producer BB counter,
 * not masked to the SQ size); `imm` is stored as given (already BE: for
 * *_WITH_IMM it is the user's imm_data; for SEND_WITH_INV pass
 * htobe32(rkey)). The DCI stream id is cleared; set it afterwards with
 * strand_set_ctrl_stream().
 */
static inline void
strand_set_ctrl_seg(struct mlx5_wqe_ctrl_seg *ctrl, uint8_t opmod,
                    uint16_t wqe_idx, uint8_t opcode, uint32_t qpn, unsigned ds,
                    uint8_t fm_ce_se, uint32_t imm_be)
{
    strand_set_ctrl_words(ctrl,
                          strand_ctrl_head(opmod, wqe_idx, opcode, qpn, ds),
                          strand_ctrl_tail(0, fm_ce_se, imm_be));
}

/* DCI stream id: ctrl bytes 9-10, BE16 (0: no stream). */
static inline void
strand_set_ctrl_stream(struct mlx5_wqe_ctrl_seg *ctrl, uint16_t stream_id)
{
    ctrl->dci_stream_channel_id = htobe16(stream_id);
}

/* A WQE posted again at another place of the SQ: only its index changes. */
static inline void
strand_set_ctrl_wqe_idx(struct mlx5_wqe_ctrl_seg *ctrl, uint16_t wqe_idx)
{
    uint32_t v = be32toh(ctrl->opmod_idx_opcode);

    ctrl->opmod_idx_opcode = htobe32((v & 0xff0000ffu) |
                                     ((uint32_t)wqe_idx << 8));
}

/* Rewrite only the ds field (when it is known after the segments). */
/* A WQE cancelled in place before the device executed it (what
 * mlx5dv_qp_cancel_posted_send_wrs(3) does in SQD): a NOP, opcode and
 * opmod cleared, its index, ds, fence and signaling kept. */
static inline void strand_set_ctrl_nop(struct mlx5_wqe_ctrl_seg *ctrl)
{
    uint32_t v = be32toh(ctrl->opmod_idx_opcode);

    ctrl->opmod_idx_opcode = htobe32((v & 0x00ffff00u) | MLX5_OPCODE_NOP);
}

static inline void
strand_set_ctrl_ds(struct mlx5_wqe_ctrl_seg *ctrl, unsigned ds)
{
    ctrl->qpn_ds = htobe32((be32toh(ctrl->qpn_ds) & ~0x3fu) | (ds & 0x3f));
}

/* The name of a WQE opcode (spec section 1), for messages. */
static inline const char *strand_wqe_opcode_str(uint8_t opcode)
{
    switch (opcode) {
    case MLX5_OPCODE_NOP:
        return "NOP";
    case MLX5_OPCODE_SEND_INVAL:
        return "SEND_INVAL";
    case MLX5_OPCODE_RDMA_WRITE:
        return "RDMA_WRITE";
    case MLX5_OPCODE_RDMA_WRITE_IMM:
        return "RDMA_WRITE_IMM";
    case MLX5_OPCODE_SEND:
        return "SEND";
    case MLX5_OPCODE_SEND_IMM:
        return "SEND_IMM";
    case MLX5_OPCODE_RDMA_READ:
        return "RDMA_READ";
    case MLX5_OPCODE_ATOMIC_CS:
        return "ATOMIC_CS";
    case MLX5_OPCODE_ATOMIC_FA:
        return "ATOMIC_FA";
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
        return "ATOMIC_MASKED_CS";
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
        return "ATOMIC_MASKED_FA";
    case MLX5_OPCODE_UMR:
        return "UMR";
    case MLX5_OPCODE_SET_PSV:
        return "SET_PSV";
    case MLX5_OPCODE_TAG_MATCHING:
        return "TAG_MATCHING";
    default:
        return "unknown opcode";
    }
}

static inline uint8_t strand_ctrl_opcode(const struct mlx5_wqe_ctrl_seg *c)
{
    return (uint8_t)(be32toh(c->opmod_idx_opcode) & 0xff);
}

static inline uint8_t strand_ctrl_opmod(const struct mlx5_wqe_ctrl_seg *c)
{
    return (uint8_t)(be32toh(c->opmod_idx_opcode) >> 24);
}

static inline uint16_t strand_ctrl_wqe_idx(const struct mlx5_wqe_ctrl_seg *c)
{
    return (uint16_t)((be32toh(c->opmod_idx_opcode) >> 8) & 0xffff);
}

static inline unsigned strand_ctrl_ds(const struct mlx5_wqe_ctrl_seg *c)
{
    return be32toh(c->qpn_ds) & 0x3f;
}

static inline uint32_t strand_ctrl_qpn(const struct mlx5_wqe_ctrl_seg *c)
{
    return be32toh(c->qpn_ds) >> 8;
}

static inline uint16_t strand_ctrl_stream(const struct mlx5_wqe_ctrl_seg *c)
{
    return be16toh(c->dci_stream_channel_id);
}

/* ---------------------------------------------------- address vector */

/*
 * Base 16-byte AV (ext = 0), as UCX writes for DC: key, DCT number, LID.
 * ctrl + base AV = 32 bytes.
 */
static inline void strand_set_av_base(struct mlx5_wqe_av *av, uint64_t dc_key,
                                      uint32_t dctn, uint16_t rlid)
{
    av->key.dc_key   = htobe64(dc_key);
    av->dqp_dct      = htobe32(dctn & 0xffffff);
    av->stat_rate_sl = 0;
    av->fl_mlid      = 0;
    av->rlid         = htobe16(rlid);
}

/*
 * Full 48-byte AV (ext bit 31 of dqp_dct set), no GRH.
 * ctrl + full AV fill one BB exactly.
 */
static inline void strand_set_av_full(struct mlx5_wqe_av *av, uint64_t dc_key,
                                      uint32_t dctn, uint16_t rlid)
{
    memset(av, 0, sizeof(*av));
    av->key.dc_key = htobe64(dc_key);
    av->dqp_dct    = htobe32(MLX5_EXTENDED_UD_AV | (dctn & 0xffffff));
    av->rlid       = htobe16(rlid);
}

/* ------------------------------------------------------ remote / atomic */

static inline void strand_set_raddr_seg(struct mlx5_wqe_raddr_seg *raddr,
                                        uint64_t remote_addr, uint32_t rkey)
{
    raddr->raddr    = htobe64(remote_addr);
    raddr->rkey     = htobe32(rkey);
    raddr->reserved = 0;
}

/* Compare-and-swap: swap in swap_add, compare in compare. */
static inline void strand_set_atomic_cs_seg(struct mlx5_wqe_atomic_seg *seg,
                                            uint64_t compare, uint64_t swap)
{
    seg->swap_add = htobe64(swap);
    seg->compare  = htobe64(compare);
}

/* Fetch-and-add: the addend in swap_add, compare unused (0). */
static inline void
strand_set_atomic_fa_seg(struct mlx5_wqe_atomic_seg *seg, uint64_t add)
{
    seg->swap_add = htobe64(add);
    seg->compare  = 0;
}

/* Masked CS, 32 bit: one 16-byte segment {swap, compare, swap_mask,
 * compare_mask}, each BE32. */
static inline void
strand_set_masked_cs32_seg(void *seg, uint32_t swap, uint32_t compare,
                           uint32_t swap_mask, uint32_t compare_mask)
{
    __be32 *p = (__be32 *)seg;

    p[0] = htobe32(swap);
    p[1] = htobe32(compare);
    p[2] = htobe32(swap_mask);
    p[3] = htobe32(compare_mask);
}

/* Masked CS, 64 bit: two 16-byte segments {swap, compare}
 * {swap_mask, compare_mask}. seg2 is the segment after seg (the caller
 * wraps it with strand_sq_next()). */
static inline void strand_set_masked_cs64_segs(struct mlx5_wqe_atomic_seg *seg,
                                               struct mlx5_wqe_atomic_seg *seg2,
                                               uint64_t swap, uint64_t compare,
                                               uint64_t swap_mask,
                                               uint64_t compare_mask)
{
    seg->swap_add  = htobe64(swap);
    seg->compare   = htobe64(compare);
    seg2->swap_add = htobe64(swap_mask);
    seg2->compare  = htobe64(compare_mask);
}

/* Masked FA, 32 bit: one segment {add, field_boundary, 0, 0} as BE32. */
static inline void
strand_set_masked_fa32_seg(void *seg, uint32_t add, uint32_t field_boundary)
{
    __be32 *p = (__be32 *)seg;

    p[0] = htobe32(add);
    p[1] = htobe32(field_boundary);
    p[2] = 0;
    p[3] = 0;
}

/* Masked FA, 64 bit: one segment {add, field_boundary} as BE64. */
static inline void strand_set_masked_fa64_seg(struct mlx5_wqe_atomic_seg *seg,
                                              uint64_t                    add,
                                              uint64_t field_boundary)
{
    seg->swap_add = htobe64(add);
    seg->compare  = htobe64(field_boundary);
}

/* ------------------------------------------------------------ data */

static inline void strand_set_data_seg(struct mlx5_wqe_data_seg *dseg,
                                       uint64_t addr, uint32_t length,
                                       uint32_t lkey)
{
    dseg->byte_count = htobe32(length);
    dseg->lkey       = htobe32(lkey);
    dseg->addr       = htobe64(addr);
}

/* Receive-list terminator: byte_count 0, MLX5_INVALID_LKEY, addr 0. */
static inline void strand_set_data_seg_end(struct mlx5_wqe_data_seg *dseg)
{
    dseg->byte_count = 0;
    dseg->lkey       = htobe32(MLX5_INVALID_LKEY);
    dseg->addr       = 0;
}

/* Number of non-empty entries of an SGE list (the data segments a send
 * WQE will carry). */
static inline unsigned strand_sgl_count(const struct ibv_sge *sgl, int num)
{
    unsigned n = 0;
    int      i;

    for (i = 0; i < num; ++i) {
        n += (sgl[i].length != 0);
    }
    return n;
}

/* Total bytes of an SGE list. */
static inline uint64_t strand_sgl_bytes(const struct ibv_sge *sgl, int num)
{
    uint64_t total = 0;
    int      i;

    for (i = 0; i < num; ++i) {
        total += sgl[i].length;
    }
    return total;
}

/*
 * Data segments for an SGE list starting at `seg`; zero-length entries are
 * skipped. `byte_count_override` != 0 forces the byte count (atomics: 8).
 * Returns the number of segments (= ds units) written; *next_seg is where
 * the next segment goes.
 */
static inline unsigned
strand_set_data_sgl(void *seg, const struct ibv_sge *sgl, int num,
                    uint32_t byte_count_override, void *sq_buf, void *sq_end,
                    void **next_seg)
{
    unsigned n = 0;
    int      i;

    for (i = 0; i < num; ++i) {
        if (sgl[i].length == 0) {
            continue;
        }
        strand_set_data_seg((struct mlx5_wqe_data_seg *)seg, sgl[i].addr,
                            byte_count_override ? byte_count_override :
                                                  sgl[i].length,
                            sgl[i].lkey);
        seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_data_seg), sq_buf,
                             sq_end);
        ++n;
    }
    if (next_seg != NULL) {
        *next_seg = seg;
    }
    return n;
}

/* ---------------------------------------------------------- inline */

/*
 * Inline segment: BE32(len | MLX5_INLINE_SEG) then the bytes of the SGE
 * list, zero-padded to 16 bytes; the data may run over the end of the SQ
 * and continue at BB 0. Nothing is written when the total is 0.
 * Returns the ds units used (strand_inline_ds(total)).
 */
/*
 * The hot case of an inline segment: a small header (hdr_len bytes, a
 * constant at the call site) and a payload that end before the end of the
 * SQ (the caller checks: strand_inline_fits()). The unused tail of the
 * last 16-byte unit is left as it is: the device reads byte_count bytes.
 * Returns the segment's ds units.
 */
static inline int
strand_inline_fits(const void *seg, uint32_t len, const void *sq_end)
{
    return (const uint8_t *)seg + sizeof(struct mlx5_wqe_inl_data_seg) + len <=
           (const uint8_t *)sq_end;
}

/* A copy of inline data without a call: short messages are mostly 0-16
 * bytes, where a libc memcpy call costs several times the copy (and makes
 * its caller keep everything in callee-saved registers around it);
 * inline data is never long. Nothing (an active message whose header
 * is all of it) and 8..16 bytes (a UCP header, a word) are tested first;
 * longer ones go in 16-byte steps, then moves that overlap at the end. */
static inline void strand_copy_small(void *dst, const void *src, uint32_t len)
{
    uint8_t       *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    uint64_t       a, b;
    uint32_t       x, y;

    if (len == 0) {
        return;
    }
    if (__builtin_expect(len - 8 <= 8, 1)) {
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + len - 8, &b, 8);
    } else if (len > 16) {
        /* 16-byte steps up to the last 16 bytes, then those (they overlap
         * the last step: never a byte outside either buffer). Three
         * values in the loop: a caller that inlines it keeps its own in
         * registers around it. */
        const uint8_t *last = s + len - 16;

        do {
            memcpy(d, s, 16);
            d += 16;
            s += 16;
        } while (s < last);
        memcpy(d - (s - last), last, 16);
    } else if (len >= 4) {
        memcpy(&x, s, 4);
        memcpy(&y, s + len - 4, 4);
        memcpy(d, &x, 4);
        memcpy(d + len - 4, &y, 4);
    } else {
        /* 1..3 bytes: the first, the middle and the last */
        d[0]        = s[0];
        d[len >> 1] = s[len >> 1];
        d[len - 1]  = s[len - 1];
    }
}

static inline unsigned
strand_set_inline_hdr_data(void *seg, const void *hdr, unsigned hdr_len,
                           const void *data, uint32_t len)
{
    struct mlx5_wqe_inl_data_seg *inl   = (struct mlx5_wqe_inl_data_seg *)seg;
    uint8_t                      *dst   = (uint8_t *)(inl + 1);
    uint32_t                      total = hdr_len + len;

    inl->byte_count = htobe32(total | MLX5_INLINE_SEG);
    if (hdr_len > 0) {
        memcpy(dst, hdr, hdr_len);
    }
    strand_copy_small(dst + hdr_len, data, len);
    return (total + (unsigned)sizeof(*inl) + STRAND_WQE_DS - 1) / STRAND_WQE_DS;
}

static inline unsigned
strand_set_inline_seg(void *seg, const struct ibv_sge *sgl, int num,
                      void *sq_buf, void *sq_end, void **next_seg)
{
    struct mlx5_wqe_inl_data_seg *hdr = (struct mlx5_wqe_inl_data_seg *)seg;
    uint8_t                      *dst = (uint8_t *)(hdr + 1);
    uint8_t                      *end = (uint8_t *)sq_end;
    uint32_t                      len = 0;
    unsigned                      ds, pad;
    size_t                        chunk, left;
    const uint8_t                *src;
    int                           i;

    for (i = 0; i < num; ++i) {
        src  = (const uint8_t *)(uintptr_t)sgl[i].addr;
        left = sgl[i].length;
        len += sgl[i].length;
        while (left > 0) {
            if (dst >= end) {
                dst = (uint8_t *)sq_buf;
            }
            chunk = (size_t)(end - dst);
            if (chunk > left) {
                chunk = left;
            }
            memcpy(dst, src, chunk);
            dst += chunk;
            src += chunk;
            left -= chunk;
        }
    }

    if (len == 0) {
        if (next_seg != NULL) {
            *next_seg = seg;
        }
        return 0;
    }

    hdr->byte_count = htobe32(len | MLX5_INLINE_SEG);
    ds              = strand_inline_ds(len);
    pad             = ds * STRAND_WQE_DS - (len + (unsigned)sizeof(*hdr));
    /* pad never crosses the end: the segment ends 16-byte aligned */
    if (dst >= end) {
        dst = (uint8_t *)sq_buf;
    }
    memset(dst, 0, pad);
    if (next_seg != NULL) {
        *next_seg = strand_sq_wrap(dst + pad, sq_buf, sq_end);
    }
    return ds;
}

#endif
