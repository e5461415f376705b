/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching of the software device (spec section 4, seed page
 * ibv_post_srq_ops.3): a tag-matching SRQ keeps a list of tags, changed by
 * list operations (APPEND, REMOVE, NOP) that software posts as
 * TAG_MATCHING WQEs on the SRQ's command QP; a SEND whose TMH says EAGER or
 * RNDV is matched against the first valid entry in append order with
 * (tag & mask) == entry tag. An eager message lands in the tag's buffer; a
 * rendezvous is read by this device from the sender (RDMA READ on a DCI of
 * the device's own, to the DCT the RAVH names) and answered with a FIN.
 * Messages that match nothing, or arrive while software has not reported
 * every unexpected message yet (phase), go to an ordinary SRQ WQE.
 * This file is the list and the matching; the device's own queues and the
 * posting of the rendezvous READs and FINs are sim_tm_dci.c's.
 */
#include "sim.h"
#include "sim_tm.h"

#include "mlx5/tm.h"
#include "mlx5/wqe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- the list */

static void sim_tm_unlink(sim_tm_t *tm, uint32_t i)
{
    sim_tm_slot_t *s = &tm->slots[i];

    if (s->prev != SIM_TM_NONE) {
        tm->slots[s->prev].next = s->next;
    } else {
        tm->head = s->next;
    }
    if (s->next != SIM_TM_NONE) {
        tm->slots[s->next].prev = s->prev;
    } else {
        tm->tail = s->prev;
    }
    s->valid = false;
}

static void sim_tm_link(sim_tm_t *tm, uint32_t i)
{
    sim_tm_slot_t *s = &tm->slots[i];

    s->valid = true;
    s->next  = SIM_TM_NONE;
    s->prev  = tm->tail;
    if (tm->tail != SIM_TM_NONE) {
        tm->slots[tm->tail].next = i;
    } else {
        tm->head = i;
    }
    tm->tail = i;
}

/* ---------------------------------------------------------- CQEs */

static void sim_tm_cqe_init(const sim_tm_t *tm, struct mlx5_cqe64 *cqe,
                            uint8_t opcode, uint8_t app_op, uint32_t qpn)
{
    memset(cqe, 0, sizeof(*cqe));
    cqe->srqn_uidx    = htobe32(tm->srq->user_index & 0xffffff);
    cqe->app          = STRAND_CQE_APP_TM;
    cqe->app_op       = app_op;
    cqe->sop_drop_qpn = htobe32(qpn & 0xffffff);
    cqe->op_own       = (uint8_t)(opcode << 4);
}

/* A matched tag that failed (too long, the READ refused or unanswered):
 * an error CQE naming the tag. UNSURE (spec section 4): mlx5_err_cqe keeps
 * bytes 40-43 reserved; the device puts app, app_op EXPECTED and the tag
 * handle there, as in the tag's other completions. */
static void sim_tm_cqe_tag_error(sim_tm_t *tm, uint32_t slot, uint8_t syndrome)
{
    struct mlx5_cqe64 cqe;

    sim_tm_cqe_init(tm, &cqe, MLX5_CQE_RESP_ERR, STRAND_CQE_APP_OP_TM_EXPECTED,
                    0);
    cqe.app_info                            = htobe16((uint16_t)slot);
    ((struct mlx5_err_cqe *)&cqe)->syndrome = syndrome;
    sim_cq_push(tm->srq->tm_cq, &cqe);
}

/* --------------------------------------------------- list operations */

static int sim_tm_list_op(sim_tm_t *tm, const struct mlx5_wqe_tm_seg *seg,
                          unsigned ds, bool *success)
{
    unsigned                        op    = seg->opcode >> 4;
    uint32_t                        index = be16toh(seg->index);
    const struct mlx5_wqe_data_seg *d;
    sim_tm_slot_t                  *s;

    *success = true;
    if (seg->flags & STRAND_TM_FLAG_SW_CNT) {
        tm->sw_cnt = be16toh(seg->sw_cnt);
    }
    switch (op) {
    case STRAND_TM_OP_NOP:
        return (ds == 3) ? 0 : -1;
    case STRAND_TM_OP_APPEND:
        if ((ds != 4) || (index >= tm->num_slots) ||
            tm->slots[tm->append_ptr].valid) {
            return -1;
        }
        s       = &tm->slots[tm->append_ptr];
        d       = (const struct mlx5_wqe_data_seg *)(seg + 1);
        s->tag  = be64toh(seg->append_tag);
        s->mask = be64toh(seg->append_mask);
        s->addr = be64toh(d->addr);
        s->lkey = be32toh(d->lkey);
        s->len  = (s->lkey == MLX5_INVALID_LKEY) ? 0 : be32toh(d->byte_count);
        sim_tm_link(tm, tm->append_ptr);
        tm->append_ptr = index;
        return 0;
    case STRAND_TM_OP_REMOVE:
        if ((ds != 3) || (index >= tm->num_slots)) {
            return -1;
        }
        if (tm->slots[index].valid) {
            sim_tm_unlink(tm, index);
        } else {
            *success = false; /* consumed meanwhile */
        }
        return 0;
    default:
        return -1;
    }
}

/* The command QP's doorbell: list operations execute in order, each one
 * BB (ctrl, tm segment, data segment for APPEND). False: a malformed one
 * failed the command QP, which its caller puts in ERR (this stage sits
 * below the completer that flushes it). */
bool sim_tm_cmd_process(smlx5_qp_t *qp)
{
    sim_tm_t *tm = qp->tm_cmd;
    uint16_t  db = (uint16_t)__atomic_load_n(&qp->db_pi, __ATOMIC_ACQUIRE);
    const struct mlx5_wqe_ctrl_seg *ctrl;
    struct mlx5_cqe64               cqe;
    unsigned                        ds, op;
    bool                            success;
    int                             ret;

    while ((uint16_t)qp->sq_fetched != db) {
        ctrl = (const void *)(qp->sq_buf +
                              (size_t)(qp->sq_fetched & (qp->sq_wqe_cnt - 1)) *
                                      STRAND_WQE_BB);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (qp->state == IBV_QPS_ERR) {
            /* posted after the error: flushed, each with its CQE */
            sim_cqe_error(tm->srq->tm_cq, MLX5_CQE_REQ_ERR, qp->qpn,
                          strand_ctrl_opcode(ctrl), strand_ctrl_wqe_idx(ctrl),
                          MLX5_CQE_SYNDROME_WR_FLUSH_ERR, qp->user_index);
            qp->sq_completed = ++qp->sq_fetched;
            continue;
        }
        if (qp->state != IBV_QPS_RTS) {
            return true;
        }
        ds  = strand_ctrl_ds(ctrl);
        ret = -1;
        if ((strand_ctrl_opcode(ctrl) == MLX5_OPCODE_TAG_MATCHING) &&
            (strand_ctrl_qpn(ctrl) == qp->qpn) && (ds >= 3) && (ds <= 4)) {
            ret = sim_tm_list_op(tm, (const void *)(ctrl + 1), ds, &success);
        }
        if (ret != 0) {
            /* a malformed list operation: the command QP goes to error */
            sim_cqe_error(tm->srq->tm_cq, MLX5_CQE_REQ_ERR, qp->qpn,
                          strand_ctrl_opcode(ctrl), strand_ctrl_wqe_idx(ctrl),
                          MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, qp->user_index);
            qp->sq_completed = ++qp->sq_fetched;
            return false; /* the caller puts the QP in ERR */
        }
        op = ((const struct mlx5_wqe_tm_seg *)(ctrl + 1))->opcode >> 4;
        if (((const struct mlx5_wqe_tm_seg *)(ctrl + 1))->flags &
            STRAND_TM_FLAG_CQE) {
            sim_tm_cqe_init(tm, &cqe, MLX5_CQE_NO_PACKET,
                            (op == STRAND_TM_OP_APPEND) ?
                                    STRAND_CQE_APP_OP_TM_APPEND :
                            (op == STRAND_TM_OP_REMOVE) ?
                                    STRAND_CQE_APP_OP_TM_REMOVE :
                                    STRAND_CQE_APP_OP_TM_NOOP,
                            qp->qpn);
            cqe.tm_cqe.success = htobe32(success ? STRAND_TM_CQE_SUCCESS : 0);
            cqe.tm_cqe.hw_phase_cnt = htobe16(tm->hw_unexp);
            cqe.wqe_counter         = htobe16(strand_ctrl_wqe_idx(ctrl));
            sim_cq_push(tm->srq->tm_cq, &cqe);
        }
        ++qp->sq_fetched;
        qp->sq_completed = qp->sq_fetched;
    }
    return true;
}

/* ------------------------------------------------------- matching */

static uint32_t sim_tm_match(const sim_tm_t *tm, uint64_t tag)
{
    uint32_t i;

    for (i = tm->head; i != SIM_TM_NONE; i = tm->slots[i].next) {
        if ((tag & tm->slots[i].mask) == tm->slots[i].tag) {
            return i;
        }
    }
    return SIM_TM_NONE;
}

void sim_tm_work(sim_tm_t *tm, bool on)
{
    if (tm->work != on) {
        tm->work = on;
        if (on) {
            ++tm->srq->ctx->tm_work;
        } else {
            --tm->srq->ctx->tm_work;
        }
    }
}

static void sim_tm_rndv_queue(sim_tm_t *tm, const sim_tm_rndv_t *r)
{
    /* the ring holds one per slot: at most num_slots rendezvous exist */
    tm->pending[tm->pend_tail++ % tm->pend_size] = *r;
    sim_tm_work(tm, true);
}

static int sim_tm_rndv_match(smlx5_qp_t *qp, sim_tm_t *tm, uint32_t slot,
                             const sim_pkt_t *pkt, const uint8_t *payload)
{
    const struct ibv_tmh     *tmh = (const void *)payload;
    const struct ibv_rvh     *rvh = (const void *)(tmh + 1);
    const struct strand_ravh *a   = (const void *)(rvh + 1);
    struct mlx5_cqe64         cqe;
    sim_tm_rndv_t             r;

    sim_tm_unlink(tm, slot);
    sim_tm_cqe_init(tm, &cqe, MLX5_CQE_NO_PACKET, STRAND_CQE_APP_OP_TM_CONSUMED,
                    sim_qp_number(qp));
    memcpy(&cqe.tmh, tmh, sizeof(cqe.tmh));
    cqe.app_info = htobe16((uint16_t)slot);
    sim_cq_push(tm->srq->tm_cq, &cqe);

    memset(&r, 0, sizeof(r));
    r.slot    = slot;
    r.lid     = pkt->slid;
    r.dctn    = be32toh(a->sl_dct) & 0xffffff;
    r.key     = be64toh(a->dc_access_key);
    r.va      = be64toh(rvh->va);
    r.rkey    = be32toh(rvh->rkey);
    r.len     = be32toh(rvh->len);
    r.app_ctx = tmh->app_ctx;
    r.tag     = tmh->tag;
    if (r.len > tm->slots[slot].len) {
        sim_tm_cqe_tag_error(tm, slot, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
        return SIM_TM_RECV_DONE;
    }
    /* the engine posts it once this pass's packets are in (sim_tm_dci.c) */
    sim_tm_rndv_queue(tm, &r);
    return SIM_TM_RECV_DONE;
}

int sim_tm_recv_first(smlx5_qp_t *qp, sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                      const uint8_t *payload)
{
    sim_tm_t             *tm  = qp->srq->tm;
    const struct ibv_tmh *tmh = (const void *)payload;
    uint32_t              slot;

    c->tm_matched = false;
    c->tm_trunc   = false;
    c->tm_app_op  = STRAND_CQE_APP_OP_TM_NO_TAG;
    if ((pkt->payload_len < STRAND_TMH_SIZE) ||
        ((tmh->opcode != IBV_TMH_EAGER) && (tmh->opcode != IBV_TMH_RNDV))) {
        return SIM_TM_RECV_BUFFER; /* NO_TAG, FIN */
    }
    c->tm_app_op = STRAND_CQE_APP_OP_TM_UNEXPECTED;
    if (tm->sw_cnt != tm->hw_unexp) {
        /* software has not seen every unexpected message yet: a tag it
         * posted may not be matched past them (phase) */
        return SIM_TM_RECV_BUFFER;
    }
    slot = sim_tm_match(tm, be64toh(tmh->tag));
    if (slot == SIM_TM_NONE) {
        return SIM_TM_RECV_BUFFER;
    }
    if (tmh->opcode == IBV_TMH_RNDV) {
        if (pkt->payload_len <
            STRAND_TMH_SIZE + STRAND_RVH_SIZE + STRAND_RAVH_SIZE) {
            return SIM_TM_RECV_BUFFER; /* not a DC rendezvous */
        }
        return sim_tm_rndv_match(qp, tm, slot, pkt, payload);
    }
    sim_tm_unlink(tm, slot);
    c->tm_matched = true;
    c->tm_slot    = slot;
    memcpy(c->tm_tmh, tmh, sizeof(c->tm_tmh));
    return SIM_TM_RECV_TAG;
}

void sim_tm_recv_buffer_taken(smlx5_qp_t *qp, sim_resp_ctx_t *c)
{
    if (c->tm_app_op == STRAND_CQE_APP_OP_TM_UNEXPECTED) {
        ++qp->srq->tm->hw_unexp;
    }
}

void sim_tm_cqe_app(const smlx5_qp_t *qp, const sim_resp_ctx_t *c,
                    struct mlx5_cqe64 *cqe)
{
    if ((qp->srq != NULL) && (qp->srq->tm != NULL)) {
        cqe->app    = STRAND_CQE_APP_TM;
        cqe->app_op = c->tm_app_op;
    }
}

/* Scatter-to-CQE of a message matched to a tag: a one-packet message of
 * 1..64 bytes after its TMH, on a QP / DCT that scatters (cs_res), into a
 * 128-byte CQE; the tag's buffer is not written (UCX's expected path reads
 * such data from the CQE's first half only). */
static bool sim_tm_tag_to_cqe(const smlx5_qp_t *qp, const sim_pkt_t *pkt,
                              uint32_t len, bool last)
{
    return last && (pkt->offset == 0) && (len > 0) && (len <= qp->cs_res) &&
           (qp->srq->tm_cq->cqe_size == 128);
}

/* An eager message matched to a tag: its data (after the TMH) goes to the
 * tag's buffer at offset 0, or into the CQE; the last packet completes the
 * tag. */
void sim_tm_recv_tag_data(smlx5_qp_t *qp, sim_resp_ctx_t *c,
                          const sim_pkt_t *pkt, const uint8_t *payload,
                          bool last)
{
    sim_tm_t            *tm  = qp->srq->tm;
    const sim_tm_slot_t *s   = &tm->slots[c->tm_slot];
    uint32_t             off = pkt->offset, len = pkt->payload_len;
    struct mlx5_cqe64    cqe;
    bool                 to_cqe;

    if (off < STRAND_TMH_SIZE) { /* the first packet: skip the TMH */
        payload += STRAND_TMH_SIZE - off;
        len -= STRAND_TMH_SIZE - off;
        off = STRAND_TMH_SIZE;
    }
    off -= STRAND_TMH_SIZE;
    to_cqe = sim_tm_tag_to_cqe(qp, pkt, len, last);
    if (!c->tm_trunc && (len > 0)) {
        if ((uint64_t)off + len > s->len) {
            c->tm_trunc = true;
        } else if (sim_mr_check_local(qp->ctx, tm->srq->pd, s->lkey,
                                      s->addr + off, len,
                                      IBV_ACCESS_LOCAL_WRITE) != 0) {
            c->tm_trunc = true; /* reported as a length error */
        } else if (!to_cqe) {
            memcpy((void *)(uintptr_t)(s->addr + off), payload, len);
        }
    }
    if (!last) {
        return;
    }
    c->recv_active = false;
    if (c->tm_trunc) {
        sim_tm_cqe_tag_error(tm, c->tm_slot,
                             MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
        return;
    }
    sim_tm_cqe_init(tm, &cqe,
                    (pkt->flags & SIM_PKT_F_IMM) ? MLX5_CQE_RESP_SEND_IMM :
                                                   MLX5_CQE_RESP_SEND,
                    STRAND_CQE_APP_OP_TM_CONSUMED_MSG, sim_qp_number(qp));
    memcpy(&cqe.tmh, c->tm_tmh, sizeof(cqe.tmh));
    cqe.app_info       = htobe16((uint16_t)c->tm_slot);
    cqe.byte_cnt       = htobe32(off + len);
    cqe.imm_inval_pkey = pkt->imm;
    cqe.op_own |= (pkt->flags & SIM_PKT_F_SE) ? 0x2 : 0;
    if (to_cqe) {
        sim_cq_push_scatter(tm->srq->tm_cq, &cqe, payload, len);
    } else {
        sim_cq_push(tm->srq->tm_cq, &cqe);
    }
}

/* ------------------------------------------------------ rendezvous */

/* A WQE of the device's DCI retired (in SQ order). */
void sim_tm_rndv_retired(smlx5_qp_t *dci, sim_wqe_t *w)
{
    sim_tm_t         *tm = dci->tm_rndv;
    sim_tm_rndv_t    *r  = &tm->by_bb[w->bb & (dci->sq_wqe_cnt - 1)];
    struct mlx5_cqe64 cqe;
    sim_tm_rndv_t     next;

    if (r->read_done) {
        return; /* a FIN: the receiver's part was done at the READ */
    }
    if (w->status == MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
        /* flushed behind another rendezvous' failure: it never ran, and
         * goes again once the DCI is back */
        sim_tm_rndv_queue(tm, r);
        return;
    }
    if (w->status != 0) {
        sim_tm_cqe_tag_error(tm, r->slot, w->status);
        return;
    }
    sim_tm_cqe_init(tm, &cqe, MLX5_CQE_RESP_SEND, STRAND_CQE_APP_OP_TM_EXPECTED,
                    dci->qpn);
    cqe.app_info = htobe16((uint16_t)r->slot);
    cqe.byte_cnt = htobe32(r->len);
    sim_cq_push(tm->srq->tm_cq, &cqe);
    /* the FIN goes out after the data is in place */
    next           = *r;
    next.read_done = true;
    sim_tm_rndv_queue(tm, &next);
}
