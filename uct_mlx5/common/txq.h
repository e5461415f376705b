/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send queue (a transport's QP: a DCI, an RC QP): building and posting
 * WQEs, tracking every outstanding WQE until its CQE (in any order across
 * lanes), and the state of its lanes. Which endpoint posts on which queue
 * and lane is the transport's business (strand_tl_ops_t); what happens
 * after an error CQE is recovery.c's.
 */
#ifndef STRAND_TXQ_H_
#define STRAND_TXQ_H_

#include "iface.h"
#include "mlx5/wqe.h"
#include "dev/dev_ring.h"
#include "mlx5/sq.h"
#include "mlx5/cqe.h"
#include "mlx5/wqe_dump.h"

#include <ucs/datastruct/queue_types.h>
#include <ucs/datastruct/string_buffer.h>

struct strand_ep;

/* What to do when an outstanding WQE retires. */
enum {
    STRAND_OP_PLAIN,      /* completion only */
    STRAND_OP_DESC,       /* release the tx descriptor */
    STRAND_OP_GET_BCOPY,  /* unpack from the descriptor, release it */
    STRAND_OP_FETCH32,    /* copy the fetched value, release */
    STRAND_OP_FETCH64,
    STRAND_OP_CHECKED,    /* the READ of a piece of an integrity-
                                checked GET: u.result is the
                                strand_integrity_piece_t (dc_integrity.c) */
    STRAND_OP_LIGHT       /* nothing to do but count it (short ops, a
                                NOP): only the head of the record is
                                written, comp .. u are not valid */
};

/* Where an operation stands (strand_op_t.state). */
enum {
    STRAND_OP_FREE,       /* the slot holds no WQE */
    STRAND_OP_POSTED,     /* on the wire, its CQE to come */
    STRAND_OP_FLUSHED     /* flushed by a DCI in error: its fate is
                                decided once every CQE of the DCI is back
                                (dc_recovery.c) */
};

/* Registrations the transport made itself for an iov passed without a
 * memory handle (an MD without UCT_MD_FLAG_NEED_MEMH lets UCP do that). */
typedef struct strand_tmp_reg {
    unsigned  count;
    uct_mem_h memh[STRAND_MAX_SGE];
} strand_tmp_reg_t;

/* One outstanding WQE, in the slot of its first basic block. The head
 * (wqe_idx .. ep, 16 bytes) is written for every WQE: it is what an error
 * or flush CQE needs to find the endpoint and stream the WQE belongs to;
 * the rest only for WQEs whose completion has work to do. */
typedef struct strand_op {
    uint16_t              wqe_idx;  /* WQE index in the ctrl segment */
    uint8_t               bbs;
    uint8_t               reserved;
    union {
        struct {
            uint8_t       lane;     /* index in txq->lanes */
            uint8_t       type;     /* STRAND_OP_PLAIN, ... */
            uint8_t       state;    /* STRAND_OP_FREE, ... */
            uint8_t       opcode;   /* MLX5_OPCODE_* (for recovery) */
        };
        uint32_t          kind;     /* the four in one word: what a short
                                       operation of an ep writes, from the
                                       ep's template (strand_op_kind) */
    };
    struct strand_ep  *ep;       /* NULL: the ep is gone */
    /* type != STRAND_OP_LIGHT only */
    uct_completion_t     *comp;
    strand_tx_desc_t  *desc;
    strand_tmp_reg_t  *tmp_reg;  /* NULL almost always */
    union {
        struct {
            uct_unpack_callback_t cb;
            void                 *arg;
            size_t                length;
        } unpack;
        void *result;
    } u;
} strand_op_t;

/* A DCI stream (hardware stream channel: ctrl bytes 9-10). */
typedef enum strand_lane_state {
    STRAND_LANE_OK,
    STRAND_LANE_DRAINING   /* errored: its later WQEs come back
                                   flushed, then it is reset */
} strand_lane_state_t;

typedef struct strand_lane {
    uint16_t  id;                /* the stream id in WQEs */
    uint8_t   state;             /* strand_lane_state_t */
    uint32_t  users;             /* eps that lease it */
    uint64_t  peer;              /* per-peer mapping: the peer's key */
    uint64_t  dest;              /* its first user's destination */
    uint8_t   mixed;             /* users of more than one destination */
    uint32_t  resets;            /* mlx5dv_dci_stream_id_reset calls */
    uint32_t  leases;            /* eps that took it, ever */
    ucs_queue_head_t held;       /* flushed WQEs to post again, in order */
    uint32_t  closures;          /* times it stopped taking work (it or
                                    its DCI in error): orders the held */
} strand_lane_t;

/* Life of a DCI. An error that puts the DCI in ERR (a non-stream error, or
 * too many errored streams) moves it to DRAINING: the device completes
 * every outstanding WQE with a flush CQE; those stay in the CQ even across
 * a reset (spec section 9), so the DCI is reset only once the flush CQE of
 * its last WQE was consumed. */
typedef enum strand_txq_state {
    STRAND_TXQ_FREE,       /* dcs: in the pool; streams: no lessee */
    STRAND_TXQ_ACTIVE,     /* leased */
    STRAND_TXQ_DRAINING,   /* in ERR: flush CQEs still to come */
    STRAND_TXQ_BROKEN      /* could not be reset: never used again */
} strand_txq_state_t;

typedef struct strand_txq {
    strand_dev_qp_t       qp;
    strand_sq_t           sq;
    uint32_t              sq_tail;     /* BB counter of the oldest WQE not
                                          retired (== sq.cur_post: none) */
    uint32_t              room_pi;     /* the last producer index at which
                                          a post needs no look at the queue
                                          (strand_txq_fast_room) */
    uint32_t              posts;       /* WQEs since its ep took it (dcs) */
    uint32_t              ce_countdown;/* WQEs to post until one asks for
                                          a CQE (moderation after one that
                                          asked) */
    uint32_t              moderation;  /* the interface's tx_moderation,
                                          here for the post path */
    uint32_t              outstanding; /* WQEs posted and not retired */
    uint32_t              flushed;     /* of those, FLUSHED */
    strand_op_t       *ops;         /* by BB slot of the ctrl segment */
    uintptr_t             op_delta;    /* a WQE's op record is at its ctrl
                                          segment + this (strand_txq_slot_op):
                                          BBs and records are 64 bytes */
    strand_lane_t        *lanes;
    uint32_t              users;       /* eps leasing it */
    uint64_t              home;        /* streams: the destination of the
                                          first ep that leased it empty
                                          (kept while it is empty) */
    struct strand_ep  *ep;          /* dcs: the lessee */
    ucs_list_link_t       waiters;     /* eps whose pending requests wait
                                          for room in this SQ, in order */
    uint16_t              index;
    uint8_t               state;       /* strand_txq_state_t */
    uint8_t               errored;     /* streams in error now */
    uint32_t              resets;      /* back from ERR to RTS */
    uint64_t              cqes;        /* send CQEs consumed, ever */
    void                 *held_db;     /* its doorbells held (a QP not
                                          connected yet, rc_strand): the
                                          scratch doorbell its WQEs ring
                                          (strand_sq_hold); NULL: the
                                          device's */
    strand_dev_kick_t     held_kick;   /* the QP's kick while held (the
                                          device is not told meanwhile) */
} strand_txq_t;

ucs_status_t strand_txq_pool_init(strand_iface_t *iface);
void strand_txq_pool_cleanup(strand_iface_t *iface);
/* Send completions: CQEs until TX_MAX_POLL sends completed (progress), or
 * max of them (UINT_MAX: the CQs polled empty); the CQEs consumed */
unsigned strand_txq_tx_progress(strand_iface_t *iface);
unsigned strand_txq_tx_poll_max(strand_iface_t *iface, unsigned max);
void strand_tmp_reg_release(strand_iface_t *iface,
                               strand_tmp_reg_t *reg);
int strand_txq_pool_busy(strand_iface_t *iface);
/* The pool's state, one line per DCI and the free stack, and whether its
 * invariants hold (VFS file dci_pool; tests read it). */
void strand_txq_pool_show(strand_iface_t *iface,
                             ucs_string_buffer_t *strb);

/* A slot of the pool, index i: streams, no QP yet. */
ucs_status_t strand_txq_slot_init(strand_iface_t *iface,
                                     strand_txq_t *dci, unsigned i);

/* Doorbells held: WQEs posted on dci wait in its queue, the device not
 * told (a QP whose connection is not made yet). go: the device hears of
 * them, dci takes work (ACTIVE), its waiters and its lessee are
 * scheduled. abort: they will not run: to ERR, each comes back flushed. */
ucs_status_t strand_txq_hold(strand_txq_t *dci);
void strand_txq_held_go(strand_iface_t *iface, strand_txq_t *dci);
void strand_txq_held_abort(strand_iface_t *iface, strand_txq_t *dci);

/* A QP the slot dci holds (dci->qp, created by the caller): known by its
 * number, its send queue taken over; detach destroys it. */
ucs_status_t strand_txq_attach_qp(strand_iface_t *iface,
                                     strand_txq_t *dci);
void strand_txq_detach_qp(strand_iface_t *iface, strand_txq_t *dci);

/* dci, or its stream s, goes to state: the readiness of the eps leasing
 * it follows at once (before anything else can post) */
void strand_txq_set_state(strand_iface_t *iface, strand_txq_t *dci,
                             strand_txq_state_t state);
void strand_lane_set_state(strand_iface_t *iface,
                                strand_txq_t *dci, strand_lane_t *s,
                                strand_lane_state_t state);
/* the SQ geometry of a fresh (or reset) DCI */
void strand_txq_geometry(strand_iface_t *iface, strand_txq_t *dci);
/* complete an operation (status UCS_OK: unpack / copy results) and free
 * its slot; the ep's count of outstanding operations goes down */
void strand_op_complete(strand_iface_t *iface, strand_txq_t *dci,
                           strand_op_t *op, ucs_status_t status);
/* ep is destroyed: the completions of its outstanding operations on dci
 * are called now with UCS_ERR_CANCELED, nothing is written to its buffers
 * later; the WQEs retire (and free their descriptors) as usual */
void strand_txq_orphan(strand_iface_t *iface, strand_txq_t *dci,
                          struct strand_ep *ep);
/* the WQE at wqe_idx in the debug log */
void strand_txq_log_wqe(strand_txq_t *dci, uint16_t wqe_idx);
/* the operation of WQE index wqe_idx (NULL: none outstanding there) */
strand_op_t *strand_txq_op(strand_txq_t *dci, uint16_t wqe_idx);

static UCS_F_ALWAYS_INLINE unsigned
strand_txq_outstanding(const strand_txq_t *dci)
{
    return dci->outstanding;
}

/* The free BBs of the SQ: from the producer index up to the oldest WQE
 * not retired (derived: a post counts none). */
static UCS_F_ALWAYS_INLINE uint32_t
strand_txq_avail_bbs(const strand_txq_t *dci)
{
    return dci->sq.wqe_cnt - (dci->sq.cur_post - dci->sq_tail);
}

/* Room for one more WQE of any size: a WQE of the largest size fits in
 * the free BBs and the WQE count allows one more. */
static UCS_F_ALWAYS_INLINE int
strand_txq_has_room(const strand_iface_t *iface,
                       const strand_txq_t *dci)
{
    return (strand_txq_avail_bbs(dci) >= iface->config.txq_max_bbs) &&
           (dci->outstanding < iface->config.tx_queue_len);
}

/* The same from the producer index pi alone (the fast path): up to
 * room_pi both hold. room_pi is set where a WQE retires or the tail moves
 * (strand_txq_set_room) and stays right while WQEs are posted: each
 * takes a BB at least, so the count cannot pass the bound before the
 * index does. It is never too high; past it a post looks at the queue
 * (has_room). */
static UCS_F_ALWAYS_INLINE int
strand_txq_fast_room(const strand_txq_t *dci, uint32_t pi)
{
    return (int32_t)(dci->room_pi - pi) >= 0;
}

/* The endpoint's address vector behind the ctrl segment at ctrl (ctrl and
 * AV fit the first BB: never wrapped); av_ds 0: an RC QP, whose WQEs name
 * no destination. */
static UCS_F_ALWAYS_INLINE void
strand_txq_set_av(struct mlx5_wqe_ctrl_seg *ctrl,
                     const struct mlx5_wqe_av *av, unsigned av_ds)
{
    if (ucs_likely(av_ds == 1)) {
        memcpy(ctrl + 1, av, STRAND_AV_BASE_SIZE);
    } else if (av_ds == 3) {
        memcpy(ctrl + 1, av, STRAND_AV_FULL_SIZE);
    }
}

/* The ctrl segment of the next WQE, with the endpoint's address vector
 * right behind it. */
static UCS_F_ALWAYS_INLINE struct mlx5_wqe_ctrl_seg *
strand_txq_wqe_start(strand_txq_t *dci, const struct mlx5_wqe_av *av,
                        unsigned av_ds, void **next_seg)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_ctrl(&dci->sq);

    strand_txq_set_av(ctrl, av, av_ds);
    *next_seg = strand_sq_seg_next(&dci->sq, ctrl + 1, av_ds * STRAND_WQE_DS);
    return ctrl;
}

/* The WQE at ctrl in the trace log (UCX's TRACE_DATA level, as UCX's own
 * transports log what they post; compiled out where UCX's log level stops
 * below it, as with this UCX). */
static UCS_F_ALWAYS_INLINE void
strand_txq_log_tx(strand_txq_t *dci,
                     const struct mlx5_wqe_ctrl_seg *ctrl, unsigned av_ds)
{
    char buf[256];

    if (ucs_log_is_enabled(UCS_LOG_LEVEL_TRACE_DATA)) {
        ucs_trace_data("TX DCI %u %s", dci->index,
                       strand_wqe_dump(ctrl, dci->sq.buf, dci->sq.end, av_ds,
                                       buf, sizeof(buf)));
    }
}

/* Ring the doorbell for everything up to the producer index (ctrl: the
 * last WQE, of bbs BBs, its bytes 0-7 as stored in head) and hand the SQ
 * to the device. */
static UCS_F_ALWAYS_INLINE void
strand_txq_ring_head(strand_txq_t *dci, struct mlx5_wqe_ctrl_seg *ctrl,
                        unsigned bbs, uint64_t head)
{
    strand_dev_qp_ring_head(&dci->qp, &dci->sq, ctrl, bbs, head);
}

static UCS_F_ALWAYS_INLINE void
strand_txq_ring(strand_txq_t *dci, struct mlx5_wqe_ctrl_seg *ctrl,
                   unsigned bbs)
{
    uint64_t head;

    memcpy(&head, ctrl, sizeof(head));
    strand_txq_ring_head(dci, ctrl, bbs, head);
}

/* Where the WQE at the producer index goes: its ctrl segment and its
 * index. Taken once, before the WQE's bytes are written: the compiler
 * would read the queue's fields again after every byte stored. */
typedef struct strand_txq_slot {
    struct mlx5_wqe_ctrl_seg *ctrl;
    uint32_t                  pi;
} strand_txq_slot_t;

_Static_assert(sizeof(strand_op_t) == STRAND_WQE_BB,
               "an op record is as large as a BB");

static UCS_F_ALWAYS_INLINE void
strand_txq_slot(const strand_txq_t *dci, strand_txq_slot_t *slot)
{
    slot->pi   = dci->sq.cur_post;
    slot->ctrl = strand_sq_ctrl(&dci->sq);
}

/* The op record of the WQE in slot. */
static UCS_F_ALWAYS_INLINE strand_op_t *
strand_txq_slot_op(const strand_txq_t *dci, const strand_txq_slot_t *slot)
{
    return (strand_op_t*)((uintptr_t)slot->ctrl + dci->op_delta);
}

/* The WQE at the producer index pi (written by the caller) takes bbs BBs
 * of the SQ and counts as outstanding. */
static UCS_F_ALWAYS_INLINE void
strand_txq_take(strand_txq_t *dci, uint32_t pi, unsigned bbs)
{
    strand_sq_advance_from(&dci->sq, pi, bbs);
    dci->outstanding++;
}

/* The op record's lane, type, state and opcode as its kind word. */
static UCS_F_ALWAYS_INLINE uint32_t
strand_op_kind(uint8_t lane, uint8_t type, uint8_t state, uint8_t opcode)
{
    strand_op_t op;

    op.lane   = lane;
    op.type   = type;
    op.state  = state;
    op.opcode = opcode;
    return op.kind;
}

/* The kind word of a posted short operation on lane (the ep's template
 * of it: opcode 0). */
static UCS_F_ALWAYS_INLINE uint32_t
strand_op_light_kind(uint8_t lane, uint8_t opcode)
{
    return strand_op_kind(lane, STRAND_OP_LIGHT, STRAND_OP_POSTED,
                             opcode);
}

/* A WQE whose completion only counts: the head of its record; kind:
 * strand_op_light_kind(). */
static UCS_F_ALWAYS_INLINE void
strand_txq_claim_light(strand_txq_t *dci, const strand_txq_slot_t *slot,
                          unsigned bbs, struct strand_ep *ep, uint32_t kind)
{
    strand_op_t *op = strand_txq_slot_op(dci, slot);

    op->wqe_idx = (uint16_t)slot->pi;
    op->bbs     = bbs;
    op->kind    = kind;
    op->ep      = ep;
    strand_txq_take(dci, slot->pi, bbs);
}

/* A WQE with work at its completion: the whole record, from op_in (its
 * ep, stream, opcode and what to do), at the producer index. Returns the
 * op slot. */
static UCS_F_ALWAYS_INLINE strand_op_t *
strand_txq_claim(strand_txq_t *dci, unsigned bbs,
                    const strand_op_t *op_in)
{
    strand_txq_slot_t slot;
    strand_op_t *op;

    strand_txq_slot(dci, &slot);
    op          = strand_txq_slot_op(dci, &slot);
    *op         = *op_in;
    op->wqe_idx = (uint16_t)slot.pi;
    op->bbs     = bbs;
    op->state   = STRAND_OP_POSTED;
    strand_txq_take(dci, slot.pi, bbs);
    return op;
}

/* Whether the WQE being posted asks for a CQE: every tx_moderation-th
 * one; one that carries work for its completion always (moderation only
 * spares the CQEs no one waits for). A CQE retires every WQE before it
 * (CQEs come in SQ order), so an unsignaled WQE completes with the next
 * signaled one; the queue never fills up with unsignaled WQEs because
 * tx_moderation is at most a quarter of it. Counted down, so that the
 * common case is one decrement. */
static UCS_F_ALWAYS_INLINE uint8_t
strand_txq_ce(strand_txq_t *dci, int must)
{
    if (must || (--dci->ce_countdown == 0)) {
        dci->ce_countdown = dci->moderation;
        return MLX5_WQE_CTRL_CQ_UPDATE;
    }
    return 0;
}

/* WQEs posted on dci since the last one that asked for a CQE. */
static UCS_F_ALWAYS_INLINE unsigned
strand_txq_unsignaled(const strand_txq_t *dci)
{
    return dci->moderation - dci->ce_countdown;
}

/* WQEs of stream `stream` outstanding on dci (a walk over the SQ: only
 * recovery and the VFS ask, the post path counts per DCI only). */
unsigned strand_txq_lane_outstanding(const strand_txq_t *dci,
                                          unsigned stream);

/* The last WQE posted on dci asked for no CQE, and something waits for
 * the WQEs before it (a flush, an endpoint wanting a DCI): post a
 * signaled NOP behind them. UCS_OK, or UCS_ERR_NO_RESOURCE when the DCI
 * cannot take it now (full: its CQEs are due anyway; recovering). */
ucs_status_t strand_txq_signal_tail(strand_iface_t *iface,
                                       strand_txq_t *dci);
/* The same for every DCI (an iface flush, eps waiting for a DCI): a DCI
 * that is full or recovering has CQEs to come anyway. */
void strand_txq_signal_tails(strand_iface_t *iface);

#endif
