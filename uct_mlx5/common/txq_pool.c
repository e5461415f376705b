/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send queues' mechanics (txq_pool.h): slots, their QPs, held
 * doorbells, geometry and moderation, the NOP that asks for a CQE, the
 * state shown in the VFS. Leases are the transport's (strand_tl_ops_t),
 * completions tx_cqe.c's and op_done.c's, errors recovery.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "txq_pool.h"
#include "txq_state.h"

#include <inttypes.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/datastruct/queue.h>
#include <ucs/arch/bitops.h>

#include <string.h>

void strand_txq_geometry(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_sq_init(&txq->sq, &txq->qp.dv, txq->qp.qpn,
                   (strand_mmio_mode_t)iface->md->mmio_mode, txq->qp.bf);
    txq->op_delta     = (uintptr_t)txq->ops - (uintptr_t)txq->sq.buf;
    txq->sq_tail      = 0;
    txq->moderation   = iface->tx_moderation;
    txq->ce_countdown = txq->moderation;
    txq->outstanding  = 0;
    txq->ring_end     = txq->sq.wqe_cnt;
    strand_txq_set_room(iface, txq);
}

/* A queue of wqe_cnt BBs came: unsignaled WQEs of the largest size fill
 * at most a quarter of it. If that lowers the interface's moderation, the
 * countdown of each queue is what the WQEs it posted since its last CQE
 * leave of the new one (at least one more). */
static void strand_txq_moderation_fit(strand_iface_t *iface, uint32_t wqe_cnt)
{
    unsigned      m = ucs_max(1, ucs_min(iface->tx_moderation,
                                         wqe_cnt / (4 * iface->config.txq_max_bbs)));
    strand_txq_t *txq;
    unsigned      i, unsignaled;

    if (m == iface->tx_moderation) {
        return;
    }
    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        if (txq->qp.h == NULL) {
            continue;
        }
        unsignaled        = strand_txq_unsignaled(txq);
        txq->moderation   = m;
        txq->ce_countdown = (unsignaled < m) ? m - unsignaled : 1;
    }
    iface->tx_moderation = m;
}

/* A slot of the pool: streams, no QP yet. */
ucs_status_t
strand_txq_slot_init(strand_iface_t *iface, strand_txq_t *txq, unsigned i)
{
    unsigned s;

    txq->index = i;
    ucs_list_head_init(&txq->waiters);
    txq->state = STRAND_TXQ_FREE;
    txq->lanes = ucs_calloc(iface->config.num_lanes, sizeof(*txq->lanes),
                            "strand_lanes");
    if (txq->lanes == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (s = 0; s < iface->config.num_lanes; ++s) {
        /* the stream ids are the send queue's channels 0 .. 2^log_concurent - 1,
         * as UCX numbers them: the hardware maps an id onto its channel
         * and refuses one outside the range (spec section 9). Without
         * streams the one slot writes 0, what a send queue without streams takes.
         * Whether an ep has a stream is its own state (ep->txq), never an
         * id. */
        txq->lanes[s].id = (uint16_t)s;
        ucs_queue_head_init(&txq->lanes[s].held);
    }
    return UCS_OK;
}

ucs_status_t strand_txq_attach_qp(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_dev_t *dev = iface->dev;
    khiter_t      it;
    int           ret;

    it = kh_put(strand_txq_qpn, &iface->txq_by_qpn, txq->qp.qpn, &ret);
    if (ret <= 0) {
        ucs_error("%s: send queue %u: QP number 0x%x is not unique",
                  dev->info.name, txq->index, txq->qp.qpn);
        return UCS_ERR_IO_ERROR;
    }
    kh_value(&iface->txq_by_qpn, it)                     = txq->index;
    iface->txq_hints[txq->qp.qpn % STRAND_TXQ_HINTS].qpn = txq->qp.qpn;
    iface->txq_hints[txq->qp.qpn % STRAND_TXQ_HINTS].txq = txq;
    strand_txq_geometry(iface, txq);
    if (txq->sq.wqe_cnt < iface->config.txq_max_bbs) {
        ucs_error("%s: send queue of %u BBs is too small", dev->info.name,
                  txq->sq.wqe_cnt);
        return UCS_ERR_INVALID_PARAM;
    }
    strand_txq_moderation_fit(iface, txq->sq.wqe_cnt);
    txq->ops = ucs_calloc(txq->sq.wqe_cnt, sizeof(*txq->ops), "strand_ops");
    txq->op_delta = (uintptr_t)txq->ops - (uintptr_t)txq->sq.buf;
    return (txq->ops == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

void strand_txq_detach_qp(strand_iface_t *iface, strand_txq_t *txq)
{
    khiter_t it;

    if (txq->qp.h == NULL) {
        return;
    }
    it = kh_get(strand_txq_qpn, &iface->txq_by_qpn, txq->qp.qpn);
    if (it != kh_end(&iface->txq_by_qpn)) {
        kh_del(strand_txq_qpn, &iface->txq_by_qpn, it);
    }
    if (iface->txq_hints[txq->qp.qpn % STRAND_TXQ_HINTS].qpn == txq->qp.qpn) {
        iface->txq_hints[txq->qp.qpn % STRAND_TXQ_HINTS].qpn =
                STRAND_TXQ_HINT_NONE;
    }
    /* through ERR, as UCX's rc QPs leave: it has nothing outstanding and
     * takes no receives (rc_strand's requester QPs; the responder QPs,
     * which take them, wait for their flushes: rc/rc_retire.h), and the
     * device stops whatever is on the wire for it */
    strand_dev_qp_to_err(iface->dev, &txq->qp);
    iface->dev->ops->destroy_qp(iface->dev, &txq->qp);
    txq->qp.h = NULL;
    ucs_free(txq->ops);
    txq->ops = NULL;
    if (txq->held_db != NULL) {
        --iface->held_txqs;
        ucs_free(txq->held_db);
        txq->held_db = NULL;
    }
}

/* ------------------------------------------------ held doorbells */

/* A QP's doorbells while held: the scratch record and register its WQEs
 * ring, where the device's were, and the QP's kick (the device is not told
 * meanwhile). */
typedef struct strand_txq_held {
    uint8_t              scratch[STRAND_SQ_HOLD_SIZE]; /* 64-byte aligned */
    strand_sq_held_t     sq;
    strand_dev_qp_kick_t kick;
} strand_txq_held_t;

ucs_status_t strand_txq_hold(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_held_t *held;

    if (ucs_posix_memalign((void **)&held, 64, sizeof(*held),
                           "strand_sq_held") != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    strand_sq_hold(&txq->sq, &held->sq, held->scratch);
    held->kick   = txq->qp.kick;
    txq->qp.kick = (txq->qp.kick != NULL) ? strand_dev_qp_kick_none : NULL;
    txq->held_db = held;
    ++iface->held_txqs;
    return UCS_OK;
}

/* The device hears of every WQE held (a connected QP executes them, one
 * in ERR flushes them). */
void strand_txq_unhold(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_held_t *held = txq->held_db;

    if (held == NULL) {
        return;
    }
    ucs_assert(iface->held_txqs > 0);
    --iface->held_txqs;
    txq->qp.kick = held->kick;
    if (strand_sq_release(&txq->sq, &held->sq)) {
        strand_dev_qp_kick(&txq->qp);
    }
    ucs_free(held);
    txq->held_db = NULL;
}

ucs_status_t strand_txq_pool_init(strand_iface_t *iface)
{
    unsigned i;

    kh_init_inplace(strand_txq_qpn, &iface->txq_by_qpn);
    for (i = 0; i < STRAND_TXQ_HINTS; ++i) {
        iface->txq_hints[i].qpn = STRAND_TXQ_HINT_NONE;
    }
    iface->txqs = ucs_calloc(iface->num_txqs, sizeof(*iface->txqs),
                             "strand_txqs");
    if (iface->txqs == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    /* the transport's queues at open (dc_strand: every DCI; rc_strand's
     * come with its endpoints) */
    return iface->tl->sq_open(iface);
}

void strand_tmp_reg_release(strand_iface_t *iface, strand_tmp_reg_t *reg)
{
    unsigned i;

    for (i = 0; i < reg->count; ++i) {
        uct_md_mem_dereg(&iface->md->super, reg->memh[i]);
    }
    ucs_free(reg);
}

void strand_op_release(strand_iface_t *iface, strand_op_t *op)
{
    if (op->type == STRAND_OP_LIGHT) {
        return;
    }
    if (ucs_unlikely(op->tmp_reg != NULL)) {
        strand_tmp_reg_release(iface, op->tmp_reg);
        op->tmp_reg = NULL;
    }
    if (op->desc != NULL) {
        ucs_mpool_put_inline(op->desc);
        op->desc = NULL;
    }
}

void strand_txq_pool_cleanup(strand_iface_t *iface)
{
    strand_txq_t *txq;
    uint32_t      bb;
    unsigned      i;

    if (iface->txqs == NULL) {
        return;
    }
    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        if (txq->ops != NULL) {
            /* descriptors of work still on the wire at close */
            for (bb = txq->sq_tail; bb != txq->sq.cur_post; ++bb) {
                strand_op_release(iface, &txq->ops[bb & (txq->sq.wqe_cnt - 1)]);
            }
        }
        if (txq->qp.h != NULL) {
            iface->dev->ops->destroy_qp(iface->dev, &txq->qp);
        }
        ucs_free(txq->ops);
        ucs_free(txq->lanes);
    }
    if (iface->tl->sq_close != NULL) {
        iface->tl->sq_close(iface);
    }
    ucs_free(iface->txqs);
    ucs_free(iface->failed);
    iface->failed     = NULL;
    iface->num_failed = iface->max_failed = 0;
    kh_destroy_inplace(strand_txq_qpn, &iface->txq_by_qpn);
    iface->txqs = NULL;
}

int strand_txq_pool_busy(strand_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->txq_hwm; ++i) {
        if (iface->txqs[i].outstanding > 0) {
            return 1;
        }
    }
    return 0;
}

unsigned strand_txq_lane_outstanding(const strand_txq_t *txq, unsigned stream)
{
    const strand_op_t *op;
    unsigned           count = 0;
    uint32_t           bb;

    for (bb = txq->sq_tail; bb != txq->sq.cur_post; ++bb) {
        op = &txq->ops[bb & (txq->sq.wqe_cnt - 1)];
        count += (op->state != STRAND_OP_FREE) && (op->lane == stream);
    }
    return count;
}

void strand_txq_advance_tail(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_advance_tail_inline(iface, txq);
}

void strand_txq_log_wqe(strand_txq_t *txq, uint16_t wqe_idx)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(txq->sq.buf, txq->sq.wqe_cnt,
                                                  wqe_idx);
    const uint32_t           *u;
    unsigned                  i, ds = strand_ctrl_ds(ctrl);

    for (i = 0; i < ds; ++i) {
        u = strand_sq_wrap((uint8_t *)ctrl + i * STRAND_WQE_DS, txq->sq.buf,
                           txq->sq.end);
        ucs_debug("  wqe[%u]: %08x %08x %08x %08x", i, be32toh(u[0]),
                  be32toh(u[1]), be32toh(u[2]), be32toh(u[3]));
    }
}

ucs_status_t strand_txq_signal_tail(strand_iface_t *iface, strand_txq_t *txq)
{
    strand_txq_slot_t slot;
    unsigned          i;

    if ((strand_txq_unsignaled(txq) == 0) || (txq->outstanding == 0)) {
        return UCS_OK; /* a CQE is due for every WQE posted */
    }
    if ((txq->state != STRAND_TXQ_ACTIVE) || !strand_txq_has_room(iface, txq)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* on a healthy stream, else it would only come back flushed */
    for (i = 0; i < iface->config.num_lanes; ++i) {
        if (txq->lanes[i].state == STRAND_LANE_OK) {
            break;
        }
    }
    if (i == iface->config.num_lanes) {
        return UCS_ERR_NO_RESOURCE;
    }
    strand_txq_slot(txq, &slot);
    /* with an address part where the queue's WQEs carry one (a send queue's
     * every WQE must: a NIC fails one without) */
    strand_txq_set_av(slot.ctrl, &iface->nop_av, iface->nop_av_ds);
    strand_sq_set_ctrl(&txq->sq, slot.ctrl, 0, MLX5_OPCODE_NOP,
                       1 + iface->nop_av_ds, strand_txq_ce(txq, 1), 0);
    strand_set_ctrl_stream(slot.ctrl, txq->lanes[i].id);
    STRAND_IFACE_STAT(iface, TX_TAIL_NOP, 1);
    strand_txq_log_tx(txq, slot.ctrl, iface->nop_av_ds);
    /* nobody's: it only retires the WQEs before it */
    strand_txq_claim_light(txq, &slot, 1, NULL,
                           strand_op_light_kind(i, MLX5_OPCODE_NOP));
    strand_txq_ring(txq, slot.ctrl, 1);
    return UCS_OK;
}

void strand_txq_signal_tails(strand_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->txq_hwm; ++i) {
        (void)strand_txq_signal_tail(iface, &iface->txqs[i]);
    }
}

/* ---------------------------------------------------------------- VFS */

static const char *strand_txq_state_str(uint8_t state)
{
    switch (state) {
    case STRAND_TXQ_FREE:
        return "free";
    case STRAND_TXQ_ACTIVE:
        return "active";
    case STRAND_TXQ_DRAINING:
        return "draining";
    default:
        return "broken";
    }
}

/* The invariants: a FREE send queue is idle and unleased; outstanding
 * counts add up over the lanes and the slots. */
static int strand_txq_pool_consistent(strand_iface_t *iface)
{
    uint32_t      bb, posted, flushed, per_lane;
    strand_txq_t *txq;
    unsigned      i, j;
    uint8_t       state;

    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        if ((txq->state == STRAND_TXQ_FREE) &&
            ((txq->users > 0) || (txq->outstanding > 0))) {
            return 0;
        }
        for (posted = 0, flushed = 0, bb = txq->sq_tail; bb != txq->sq.cur_post;
             ++bb) {
            state = txq->ops[bb & (txq->sq.wqe_cnt - 1)].state;
            posted += (state != STRAND_OP_FREE);
            flushed += (state == STRAND_OP_FLUSHED);
        }
        for (per_lane = 0, j = 0; j < iface->config.num_lanes; ++j) {
            per_lane += strand_txq_lane_outstanding(txq, j);
        }
        if ((posted != txq->outstanding) || (per_lane != posted) ||
            (flushed != txq->flushed)) {
            return 0;
        }
    }
    return 1;
}

void strand_txq_pool_show(strand_iface_t *iface, ucs_string_buffer_t *strb)
{
    strand_txq_t *txq;
    unsigned      i, j, outstanding;
    int           tl_ok;

    /* the transport's lines first (dc_strand: its policy, the free
     * stack), and whether its invariants hold */
    tl_ok = (iface->tl->sq_show == NULL) || iface->tl->sq_show(iface, strb);
    for (i = 0; i < iface->txq_hwm; ++i) {
        txq = &iface->txqs[i];
        ucs_string_buffer_appendf(
                strb,
                "%s %u qpn 0x%x state %s "
                "outstanding %u users %u errored %u "
                "flushed %u resets %u cqes %" PRIu64 " unsignaled %u\n",
                iface->tl->names.sq_vfs, i, txq->qp.qpn,
                strand_txq_state_str(txq->state), txq->outstanding, txq->users,
                txq->errored, txq->flushed, txq->resets, txq->cqes,
                (txq->qp.h != NULL) ? strand_txq_unsignaled(txq) : 0);
        for (j = 0; j < iface->config.num_lanes; ++j) {
            outstanding = strand_txq_lane_outstanding(txq, j);
            if ((txq->lanes[j].users == 0) && (outstanding == 0) &&
                (txq->lanes[j].state == STRAND_LANE_OK) &&
                (txq->lanes[j].resets == 0) && (txq->lanes[j].leases == 0) &&
                ucs_queue_is_empty(&txq->lanes[j].held)) {
                continue;
            }
            ucs_string_buffer_appendf(strb,
                                      "  stream %u %s outstanding %u "
                                      "users %u held %zu resets %u "
                                      "leases %u",
                                      txq->lanes[j].id,
                                      (txq->lanes[j].state == STRAND_LANE_OK) ?
                                              "ok" :
                                              "draining",
                                      outstanding, txq->lanes[j].users,
                                      ucs_queue_length(&txq->lanes[j].held),
                                      txq->lanes[j].resets,
                                      txq->lanes[j].leases);
            if (iface->tl->lane_show != NULL) {
                iface->tl->lane_show(iface, txq, j, strb);
            }
            ucs_string_buffer_appendf(strb, "\n");
        }
    }
    ucs_string_buffer_appendf(strb, "consistent %s\n",
                              (tl_ok && strand_txq_pool_consistent(iface)) ?
                                      "yes" :
                                      "no");
}
