/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send queue of one QP as the poster sees it: geometry, producer index,
 * ctrl segment, doorbell record and the MMIO write that tells the device.
 * Every queue that posts uses it: the transport's DCIs and tag-matching
 * command QP, and the software device's own verbs-like provider (its
 * ibv_post_send and its rendezvous DCI). Plain C, no UCX or software-device
 * types.
 *
 * Geometry (spec section 1): wqe_cnt (a power of two) 64-byte basic blocks
 * (BB); the producer index is a free-running BB counter; a WQE starts at BB
 * (pi & (wqe_cnt - 1)), its ctrl segment (and a DC address vector) never
 * wrap, later segments may continue at BB 0.
 *
 * MMIO (how the doorbell reaches the device, as UCX's UCX_IB_MLX5_MMIO_MODE):
 *   db       the doorbell record, then one 8-byte store of the last WQE's
 *            ctrl bytes 0-7 to the BlueFlame register (a plain doorbell);
 *   bf_post  the doorbell record, then the last WQE itself copied into the
 *            BlueFlame buffer when it is at most bf_size bytes (the device
 *            can take it without reading host memory), else as db;
 * either way the next doorbell goes to the other half of the BF buffer.
 * Without a register (bf_reg NULL) only the record is written.
 *
 * A debug build (STRAND_DEBUG) checks the queue's state on every post and
 * doorbell: a WQE whose index is not the producer index, a ds out of range,
 * more BBs posted than the queue holds, a doorbell with nothing new.
 */
#ifndef STRAND_MLX5_SQ_H_
#define STRAND_MLX5_SQ_H_

#include "mlx5/barrier.h"
#include "mlx5/doorbell.h"
#include "mlx5/wqe.h"

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef STRAND_DEBUG
#include <stdio.h>
#include <stdlib.h>
#endif

typedef enum strand_mmio_mode {
    STRAND_MMIO_MODE_DB,       /* 8-byte doorbell write */
    STRAND_MMIO_MODE_BF_POST,  /* small WQEs copied to the BF buffer */
    STRAND_MMIO_MODE_AUTO,     /* resolved at init: BF_POST where there is
                                  a register of at least one BB */
    STRAND_MMIO_MODE_LAST
} strand_mmio_mode_t;

/* How strand_sq_ring reaches the device, resolved from the MMIO mode and
 * the register at init (one compare on the hot path). */
enum {
    STRAND_SQ_RING_DB,         /* record, 8-byte register write */
    STRAND_SQ_RING_BF_POST,    /* record, the WQE into the BF buffer */
    STRAND_SQ_RING_RECORD      /* no register: the record only */
};

typedef struct strand_sq {
    void     *buf;        /* BB 0 */
    void     *end;        /* one past the last BB */
    uint32_t  wqe_cnt;    /* BBs, a power of two */
    uint32_t  buf_mask;   /* wqe_cnt * 64 - 1: (pi * 64) & buf_mask is
                             where BB pi starts */
    uint32_t  cur_post;   /* producer index: free-running BB counter */
    uint32_t  qpn;
    uint32_t  bf_size;
    uint64_t  head_qpn;   /* strand_ctrl_head_qpn(qpn) */
    uint8_t   mmio_mode;  /* STRAND_MMIO_MODE_DB or _BF_POST */
    uint8_t   ring;       /* STRAND_SQ_RING_* */
    __be32   *dbrec;      /* [MLX5_SND_DBR] is the producer index */
    void     *bf_reg;     /* BlueFlame register page; NULL: record only */
    void     *bf_cur;     /* the half of the BF buffer the next doorbell
                             goes to (bf_reg + 0 or + bf_size) */
    uintptr_t bf_flip;    /* bf_cur ^ bf_flip: the other half */
#ifdef STRAND_DEBUG
    uint32_t  rung;       /* cur_post at the last doorbell */
#endif
} strand_sq_t;

#ifdef STRAND_DEBUG
#define strand_sq_check(_cond, _sq, _what) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "strand: send queue of QP 0x%x: %s " \
                    "(producer index %u, %u BBs)\n", (_sq)->qpn, _what, \
                    (_sq)->cur_post, (_sq)->wqe_cnt); \
            abort(); \
        } \
    } while (0)
#else
#define strand_sq_check(_cond, _sq, _what) do { } while (0)
#endif

/*
 * Take over the queue rdma-core (or the software device) describes in dv,
 * at producer index 0 (a fresh QP, or one back from RESET: the device
 * starts again at WQE 0 and BF offset 0).
 */
static inline void strand_sq_init(strand_sq_t *sq, const struct mlx5dv_qp *dv,
                                  uint32_t qpn, strand_mmio_mode_t mode)
{
    sq->buf       = dv->sq.buf;
    sq->wqe_cnt   = dv->sq.wqe_cnt;
    sq->buf_mask  = dv->sq.wqe_cnt * STRAND_WQE_BB - 1;
    sq->end       = strand_sq_end(sq->buf, sq->wqe_cnt);
    sq->cur_post  = 0;
    sq->qpn       = qpn;
    sq->head_qpn  = strand_ctrl_head_qpn(qpn);
    sq->bf_size   = dv->bf.size;
    sq->dbrec     = dv->dbrec;
    sq->bf_reg    = dv->bf.reg;
    if (mode == STRAND_MMIO_MODE_AUTO) {
        mode = ((sq->bf_reg != NULL) && (sq->bf_size >= STRAND_WQE_BB)) ?
               STRAND_MMIO_MODE_BF_POST : STRAND_MMIO_MODE_DB;
    }
    sq->mmio_mode = (uint8_t)mode;
    if (sq->bf_reg == NULL) {
        sq->ring = STRAND_SQ_RING_RECORD;
    } else {
        sq->ring = (mode == STRAND_MMIO_MODE_BF_POST) ?
                   STRAND_SQ_RING_BF_POST : STRAND_SQ_RING_DB;
    }
    /* the halves alternate even without a register (bf_cur is then only
     * the offset, never written through) */
    sq->bf_cur    = sq->bf_reg;
    sq->bf_flip   = (uintptr_t)sq->bf_reg ^
                    ((uintptr_t)sq->bf_reg + sq->bf_size);
#ifdef STRAND_DEBUG
    sq->rung      = 0;
#endif
}

/* The offset in the BF buffer of the next doorbell: 0 or bf_size. */
static inline uint32_t strand_sq_bf_offset(const strand_sq_t *sq)
{
    return (uint32_t)((uintptr_t)sq->bf_cur - (uintptr_t)sq->bf_reg);
}

/* The ctrl segment of the next WQE (at the producer index). */
static inline struct mlx5_wqe_ctrl_seg *strand_sq_ctrl(const strand_sq_t *sq)
{
    return (struct mlx5_wqe_ctrl_seg*)((uint8_t*)sq->buf +
                                       (((size_t)sq->cur_post *
                                         STRAND_WQE_BB) & sq->buf_mask));
}

/* BB n of the queue (n free-running). */
static inline void *strand_sq_at(const strand_sq_t *sq, uint32_t n)
{
    return strand_sq_bb(sq->buf, sq->wqe_cnt, n);
}

/* The segment after one of `size` bytes at seg, wrapping at the end. */
static inline void *strand_sq_seg_next(const strand_sq_t *sq, void *seg,
                                       size_t size)
{
    return strand_sq_next(seg, size, sq->buf, sq->end);
}

/* Ctrl bytes 0-7 of the WQE at the producer index pi, as stored
 * (strand_ctrl_head: its index, the QP number; ds in range, checked by
 * debug builds). */
static inline uint64_t strand_sq_ctrl_head(const strand_sq_t *sq, uint32_t pi,
                                           uint8_t opmod, uint8_t opcode,
                                           unsigned ds)
{
    strand_sq_check((ds > 0) && (ds <= 0x3f), sq, "ds out of range");
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    return strand_ctrl_head_of(sq->head_qpn, opmod, (uint16_t)pi, opcode,
                               ds);
}

/* The same from the operation's part made beforehand
 * (strand_ctrl_head_op). */
static inline uint64_t strand_sq_ctrl_head_with(const strand_sq_t *sq,
                                                uint32_t pi, uint64_t op_head)
{
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    return strand_ctrl_head_idx(sq->head_qpn, (uint16_t)pi) | op_head;
}

/* The ctrl segment of the WQE at ctrl, the producer index's, from its
 * two words (strand_sq_ctrl_head, strand_ctrl_tail). */
static inline void strand_sq_write_ctrl(const strand_sq_t *sq,
                                        struct mlx5_wqe_ctrl_seg *ctrl,
                                        uint64_t head, uint64_t tail)
{
    strand_sq_check(ctrl == strand_sq_ctrl(sq), sq,
                    "WQE not at the producer index");
    strand_set_ctrl_words(ctrl, head, tail);
}

/* The ctrl segment of the WQE at the producer index (its index, the QP
 * number, ds, fence/completion/solicited flags, immediate as given; DCI
 * stream 0). */
static inline void strand_sq_set_ctrl(const strand_sq_t *sq,
                                      struct mlx5_wqe_ctrl_seg *ctrl,
                                      uint8_t opmod, uint8_t opcode,
                                      unsigned ds, uint8_t fm_ce_se,
                                      uint32_t imm_be)
{
    strand_sq_write_ctrl(sq, ctrl,
                         strand_sq_ctrl_head(sq, sq->cur_post, opmod, opcode,
                                             ds),
                         strand_ctrl_tail(0, fm_ce_se, imm_be));
}

/* The WQE at the producer index pi (the caller has it at hand) is
 * written: it takes its BBs. */
static inline void strand_sq_advance_from(strand_sq_t *sq, uint32_t pi,
                                          unsigned bbs)
{
    strand_sq_check(pi == sq->cur_post, sq, "WQE not at the producer index");
    /* ds <= 63: a WQE is at most 16 BBs */
    strand_sq_check((bbs > 0) && (bbs <= 16), sq, "WQE of more than 16 BBs");
    sq->cur_post = pi + bbs;
#ifdef STRAND_DEBUG
    strand_sq_check(sq->cur_post - sq->rung <= sq->wqe_cnt, sq,
                    "more BBs posted since the last doorbell than the queue "
                    "holds");
#endif
}

static inline void strand_sq_advance(strand_sq_t *sq, unsigned bbs)
{
    strand_sq_advance_from(sq, sq->cur_post, bbs);
}

/* Copy the WQE at ctrl (bbs BBs, wrapping) to the BF buffer in 8-byte
 * stores, as write-combining memory takes them. */
static inline void strand_sq_bf_copy(const strand_sq_t *sq,
                                     const struct mlx5_wqe_ctrl_seg *ctrl,
                                     unsigned bbs)
{
    volatile uint64_t *dst = (volatile uint64_t*)sq->bf_cur;
    const uint8_t *src     = (const uint8_t*)(const void*)ctrl;
    unsigned i, n;
    uint64_t v;

    for (n = 0; n < bbs; ++n) {
        for (i = 0; i < STRAND_WQE_BB; i += sizeof(v)) {
            memcpy(&v, src + i, sizeof(v));
            *dst++ = v;
        }
        src = (const uint8_t*)strand_sq_wrap((uint8_t*)src + STRAND_WQE_BB,
                                             sq->buf, sq->end);
    }
}

/* The doorbell other than a plain one: the WQE into the BF buffer (when
 * it fits, else as a plain one), or no register at all. */
static inline void strand_sq_ring_bf(strand_sq_t *sq,
                                     const struct mlx5_wqe_ctrl_seg *ctrl,
                                     unsigned last_bbs, uint64_t head)
{
    if (sq->ring == STRAND_SQ_RING_RECORD) {
        return;
    }
    if (last_bbs * STRAND_WQE_BB <= sq->bf_size) {
        strand_sq_bf_copy(sq, ctrl, last_bbs);
        strand_wc_wmb();
    } else {
        strand_sq_doorbell_head(sq->bf_cur, head);
    }
}

/* The doorbell's first steps: the producer index into the record. */
static inline void strand_sq_ring_record(strand_sq_t *sq)
{
#ifdef STRAND_DEBUG
    strand_sq_check(sq->cur_post != sq->rung, sq, "doorbell with no new WQE");
    sq->rung = sq->cur_post;
#endif
    strand_sq_doorbell_record(sq->dbrec, sq->cur_post);
}

/* The doorbell's last step: the next one goes to the other half of the BF
 * buffer. */
static inline void strand_sq_flip(strand_sq_t *sq)
{
    sq->bf_cur = (void*)((uintptr_t)sq->bf_cur ^ sq->bf_flip);
}

/*
 * Tell the device about every WQE up to the producer index; ctrl is the
 * last one's, last_bbs its size, head its bytes 0-7 as stored (what a
 * plain doorbell writes: the caller has them in a register). Order (spec
 * section 1): the WQE stores before the doorbell record, the record
 * before the register write.
 */
static inline void strand_sq_ring_head(strand_sq_t *sq,
                                       const struct mlx5_wqe_ctrl_seg *ctrl,
                                       unsigned last_bbs, uint64_t head)
{
    strand_sq_ring_record(sq);
    if (__builtin_expect(!sq->ring, 1)) { /* STRAND_SQ_RING_DB */
        strand_sq_doorbell_head(sq->bf_cur, head);
    } else {
        strand_sq_ring_bf(sq, ctrl, last_bbs, head);
    }
    strand_sq_flip(sq);
}

/*
 * A queue whose device does not take work yet (an RC QP before it is
 * connected): WQEs are written and "rung" as always, but the doorbell
 * record and the register writes go to `scratch` (STRAND_SQ_HOLD_SIZE
 * bytes, 64-byte aligned), so the device hears of nothing.
 * strand_sq_release then points the queue back at the device (dv) and
 * rings once for every WQE held: 1 when there were any (a software device
 * is then kicked), else 0.
 */
#define STRAND_SQ_HOLD_SIZE(_bf_size)  (64 + 2 * (_bf_size))

static inline void strand_sq_hold(strand_sq_t *sq, void *scratch)
{
    uintptr_t off = (uintptr_t)sq->bf_cur - (uintptr_t)sq->bf_reg;

    memset(scratch, 0, STRAND_SQ_HOLD_SIZE(sq->bf_size));
    sq->dbrec = (__be32*)scratch;
    if (sq->bf_reg != NULL) {
        sq->bf_reg  = (uint8_t*)scratch + 64;
        sq->bf_cur  = (uint8_t*)sq->bf_reg + off;
        sq->bf_flip = (uintptr_t)sq->bf_reg ^
                      ((uintptr_t)sq->bf_reg + sq->bf_size);
    }
}

static inline int strand_sq_release(strand_sq_t *sq,
                                    const struct mlx5dv_qp *dv)
{
    uintptr_t off = (uintptr_t)sq->bf_cur - (uintptr_t)sq->bf_reg;
    uint64_t head = 0;
    int held      = (sq->dbrec[MLX5_SND_DBR] != 0);

    if (held && (sq->bf_reg != NULL)) {
        /* the last doorbell's head: in the half before the current one */
        memcpy(&head, (uint8_t*)sq->bf_reg + (off ^ sq->bf_size),
               sizeof(head));
    }
    sq->dbrec = dv->dbrec;
    if (sq->bf_reg != NULL) {
        sq->bf_reg  = dv->bf.reg;
        sq->bf_cur  = (uint8_t*)sq->bf_reg + off;
        sq->bf_flip = (uintptr_t)sq->bf_reg ^
                      ((uintptr_t)sq->bf_reg + sq->bf_size);
    }
    if (!held) {
        return 0;
    }
    strand_sq_doorbell_record(sq->dbrec, sq->cur_post);
    if (sq->bf_reg != NULL) {
        strand_sq_doorbell_head(sq->bf_cur, head);
        sq->bf_cur = (void*)((uintptr_t)sq->bf_cur ^ sq->bf_flip);
    }
    return 1;
}

/* The same, the head read from ctrl. */
static inline void strand_sq_ring(strand_sq_t *sq,
                                  const struct mlx5_wqe_ctrl_seg *ctrl,
                                  unsigned last_bbs)
{
    uint64_t head;

    memcpy(&head, ctrl, sizeof(head));
    strand_sq_ring_head(sq, ctrl, last_bbs, head);
}

#endif
