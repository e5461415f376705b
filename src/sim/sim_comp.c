/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer: ACKs, NAKs, read and atomic responses -> WQE results; timers
 * and retries; error policy (QP to ERR, or only the DCI stream); CQEs in SQ
 * order. It never runs the requester: the go-back-N passes it decides on
 * and the windows it opens wait in the requester queue for the engine
 * (sim_comp_ask_resend, sim_req_queue_add).
 */
#include "sim.h"
#include "sim_parse.h"
#include "sim_onecopy.h"
#include "sim_sig.h"

#include <string.h>

#define SIM_NO_EVENT ((enum ibv_event_type) - 1)

static inline sim_wqe_t *sim_wqe_at(smlx5_qp_t *qp, uint32_t bb)
{
    return &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
}

static void sim_flow_update_timer(smlx5_qp_t *qp, sim_flow_t *f)
{
    if (f->rnr_state == SIM_RNR_WAITING) {
        return; /* the deadline is the RNR timer */
    }
    if ((f->outstanding == 0) || (f->una_psn == f->next_psn)) {
        f->deadline_ns = 0;
        return;
    }
    f->deadline_ns = sim_now_ns() + sim_timeout_ns(qp);
    sim_timer_schedule(qp->ctx, f->deadline_ns);
}

/* Everything of the flow before `psn` is acknowledged (psn is past
 * una_psn). Forward progress resets the transport retries; once the PSN an
 * RNR NAK named is taken, the back-off is over and new packets may go. */
static void sim_flow_advance(sim_flow_t *f, uint32_t psn)
{
    f->una_psn = psn;
    f->retries = 0;
    if ((f->rnr_state != SIM_RNR_NONE) && ((int32_t)(psn - f->rnr_psn) > 0)) {
        f->rnr_state = SIM_RNR_NONE;
    }
}

/* A WQE in SENT state leaves the flow's accounting, a deferred one the
 * count of those. */
static void sim_wqe_finish(smlx5_qp_t *qp, sim_wqe_t *w, uint8_t status)
{
    if (w->state == SIM_WQE_SENT) {
        if (--qp->flows[w->flow].outstanding == 0) {
            qp->chan_flow[qp->flows[w->flow].chan] = 0;
        }
        if (w->needs_response) {
            qp->rd_atomic_inflight--;
        }
    } else if (w->state == SIM_WQE_DEFERRED) {
        qp->num_deferred--;
    }
    w->state  = SIM_WQE_DONE;
    w->status = status;
}

/* Everything of flow `fi` before `psn` is acknowledged. A READ/atomic
 * WQE is complete only when its responses are in: an ACK (or a response)
 * for a later PSN never moves the flow into or past its response range
 * (its lost responses are requested again when the timer fires). */
static void sim_comp_ack_upto(smlx5_qp_t *qp, int fi, uint32_t psn)
{
    sim_flow_t *f = &qp->flows[fi];
    uint32_t    bb;
    sim_wqe_t  *w;

    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
        w = sim_wqe_at(qp, bb);
        if ((w->state != SIM_WQE_SENT) || (w->flow != fi)) {
            continue;
        }
        if ((int32_t)(w->first_psn - psn) >= 0) {
            break;
        }
        if (w->needs_response) {
            /* at most up to the response the flow waits for */
            psn = ((int32_t)(f->una_psn - w->first_psn) > 0) ? f->una_psn :
                                                               w->first_psn;
            break;
        }
        if (((int32_t)(w->last_psn - psn) >= 0) || (bb == qp->req_bb)) {
            break; /* partly acknowledged, or still transmitting */
        }
        sim_wqe_finish(qp, w, 0);
    }
    if ((int32_t)(psn - f->una_psn) > 0) {
        sim_flow_advance(f, psn);
    }
    sim_flow_update_timer(qp, f);
}

static sim_wqe_t *sim_comp_find_wqe(smlx5_qp_t *qp, int fi, uint32_t psn)
{
    uint32_t   bb;
    sim_wqe_t *w;

    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
        w = sim_wqe_at(qp, bb);
        if ((w->state == SIM_WQE_SENT) && (w->flow == fi) &&
            ((int32_t)(psn - w->first_psn) >= 0) &&
            ((int32_t)(w->last_psn - psn) >= 0)) {
            return w;
        }
    }
    return NULL;
}

static bool sim_stream_add_errored(smlx5_qp_t *qp, uint16_t stream)
{
    unsigned i;

    for (i = 0; i < qp->num_errored; ++i) {
        if (qp->errored_streams[i] == stream) {
            return true;
        }
    }
    if (qp->num_errored >= (1u << qp->log_num_errored)) {
        return false;
    }
    qp->errored_streams[qp->num_errored++] = stream;
    return qp->num_errored < (1u << qp->log_num_errored);
}

/* Ask the requester for a go-back-N pass of flow `fi` from `from_psn`
 * (of two asked before it runs, the earlier PSN: its pass covers the
 * other). It makes the pass before it sends anything new. */
static void sim_comp_ask_resend(smlx5_qp_t *qp, int fi, uint32_t from_psn)
{
    sim_flow_t *f   = &qp->flows[fi];
    uint64_t    bit = 1ull << fi;

    if (!(qp->resend_flows & bit) ||
        ((int32_t)(from_psn - f->resend_psn) < 0)) {
        f->resend_psn = from_psn;
    }
    qp->resend_flows |= bit;
    sim_req_queue_add(qp);
}

/* The responder discarded everything of flow `fi` after the failed PSN:
 * the flow reconnects with fresh PSNs and its other WQEs go again. */
static void sim_flow_restart(smlx5_qp_t *qp, int fi)
{
    sim_flow_t *f = &qp->flows[fi];
    uint32_t    bb, n;
    sim_wqe_t  *w;

    f->start_psn = f->next_psn = f->una_psn = qp->next_flow_psn;
    qp->next_flow_psn += 1u << 16;
    f->retries = f->rnr_retries = 0;
    f->rnr_state                = SIM_RNR_NONE;
    f->deadline_ns              = 0;
    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
        w = sim_wqe_at(qp, bb);
        if ((w->state != SIM_WQE_SENT) || (w->flow != fi)) {
            continue;
        }
        n            = w->last_psn - w->first_psn + 1;
        w->first_psn = f->next_psn;
        w->last_psn  = f->next_psn + n - 1;
        f->next_psn += n;
        if (bb == qp->req_bb) {
            qp->req_psn = w->first_psn;
        }
    }
    if (f->outstanding > 0) {
        sim_comp_ask_resend(qp, fi, f->start_psn);
    }
}

/* WQEs behind the failed w (on its stream, or on the whole QP) that
 * were done already but whose CQE would come after w's: a NOP, which
 * the device finishes when it fetches it. A NIC reports completions in
 * send-queue order, so it has reported none of them yet, and the error
 * flushes them: a flush's NOP behind a SEND that failed says so. */
static void
sim_comp_flush_done_after(smlx5_qp_t *qp, const sim_wqe_t *w, bool stream_only)
{
    bool       after = false;
    uint32_t   bb;
    sim_wqe_t *o;

    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += o->bbs) {
        o = sim_wqe_at(qp, bb);
        if (o == w) {
            after = true;
        } else if (after && (o->state == SIM_WQE_DONE) && (o->status == 0) &&
                   (!stream_only || (o->stream == w->stream))) {
            o->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
        }
    }
}

void sim_comp_wqe_failed(smlx5_qp_t *qp, sim_wqe_t *w)
{
    /* a stream error fails only its stream; a WQE whose id is no channel
     * of the DCI has no stream to fail, and a malformed one (no room for
     * its address vector, say) is no error of a transfer: the DCI fails
     * as a whole */
    uint8_t status = w->status;
    bool streams   = (qp->type == SMLX5_QPT_DCI) && (qp->log_num_errored > 0) &&
                   ((w->stream >> qp->log_num_concurent) == 0) &&
                   (status != MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    bool       was_sent = (w->state == SIM_WQE_SENT);
    int        fi       = w->flow;
    uint32_t   bb;
    sim_wqe_t *o;

    sim_wqe_finish(qp, w, status);
    sim_comp_flush_done_after(qp, w, streams);
    if (!streams) {
        sim_qp_to_err(qp, SIM_NO_EVENT);
        return;
    }
    if (!sim_stream_add_errored(qp, w->stream)) {
        /* as many errored streams as log_num_errored allows: the DCI
         * stops operating */
        sim_qp_to_err(qp, IBV_EVENT_QP_FATAL);
        return;
    }
    /* flush the stream's other work, in order; other streams go on */
    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += o->bbs) {
        o = sim_wqe_at(qp, bb);
        if ((o != w) &&
            ((o->state == SIM_WQE_SENT) || (o->state == SIM_WQE_DEFERRED)) &&
            (o->stream == w->stream)) {
            if (bb == qp->req_bb) {
                qp->req_bb = qp->sq_fetched;
            }
            sim_wqe_finish(qp, o, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
        }
    }
    if (was_sent) {
        sim_flow_restart(qp, fi);
    }
}

static void sim_comp_fail(smlx5_qp_t *qp, sim_wqe_t *w, uint8_t syndrome)
{
    w->status = syndrome;
    sim_comp_wqe_failed(qp, w);
}

static int sim_comp_find_flow(smlx5_qp_t *qp, const sim_pkt_t *pkt)
{
    uint64_t m;
    int      i;

    sim_for_each_flow(qp, i, m) {
        if ((qp->flows[i].dlid == pkt->slid) &&
            (qp->flows[i].dqpn == pkt->sqpn) &&
            (qp->flows[i].chan == pkt->chan)) {
            return i;
        }
        if (qp->type == SMLX5_QPT_RC) {
            break;
        }
    }
    return -1;
}

static uint8_t sim_nak_syndrome(uint8_t aeth)
{
    switch (aeth) {
    case SIM_AETH_NAK_INV_REQ:
        return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
    case SIM_AETH_NAK_ACCESS:
        return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
    default:
        return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
    }
}

/* An RNR NAK: the flow waits the responder's RNR timer (the packet carries
 * its min_rnr_timer), then sim_comp_rnr_retry goes back to the NAKed PSN;
 * after rnr_retry of them (7: for ever) the WQE ends in RNR_RETRY_EXC_ERR. */
static void sim_comp_rnr_nak(smlx5_qp_t *qp, int fi, const sim_pkt_t *pkt)
{
    sim_flow_t *f = &qp->flows[fi];
    sim_wqe_t  *w;

    qp->stats.rnr_naks_rcvd++;
    sim_comp_ack_upto(qp, fi, pkt->psn);
    if (f->rnr_state == SIM_RNR_WAITING) {
        /* the flow has sent nothing since its wait began: this answers an
         * older packet (a duplicate), and the retry is planned already */
        return;
    }
    w = sim_comp_find_wqe(qp, fi, pkt->psn);
    if (w == NULL) {
        return;
    }
    if ((qp->rnr_retry != 7) && (++f->rnr_retries > qp->rnr_retry)) {
        sim_comp_fail(qp, w, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
        return;
    }
    f->rnr_state   = SIM_RNR_WAITING;
    f->rnr_psn     = pkt->psn;
    f->deadline_ns = sim_now_ns() + sim_rnr_timer_ns(qp->ctx, pkt->atomic_op);
    sim_timer_schedule(qp->ctx, f->deadline_ns);
}

/* The RNR timer expired: one go-back-N pass from the NAKed PSN. New packets
 * wait until the responder takes it (sim_flow_advance), so a receiver that
 * stays not ready costs that pass and one NAK per timer period. */
static void sim_comp_rnr_retry(smlx5_qp_t *qp, int fi)
{
    sim_flow_t *f = &qp->flows[fi];

    f->rnr_state = SIM_RNR_RETRYING;
    qp->stats.rnr_retries++;
    sim_comp_ask_resend(qp, fi, f->una_psn);
}

static void sim_comp_ack(smlx5_qp_t *qp, int fi, const sim_pkt_t *pkt)
{
    sim_flow_t *f = &qp->flows[fi];
    sim_wqe_t  *w;

    switch (pkt->syndrome) {
    case SIM_AETH_ACK:
        sim_comp_ack_upto(qp, fi, pkt->psn + 1);
        break;
    case SIM_AETH_RNR_NAK:
        sim_comp_rnr_nak(qp, fi, pkt);
        break;
    case SIM_AETH_NAK_PSN_SEQ:
        /* a real gap: go back at once (not while an RNR timer runs: the
         * retry after it goes back to the same PSN) */
        qp->stats.seq_naks_rcvd++;
        sim_comp_ack_upto(qp, fi, pkt->psn);
        if (f->una_psn == pkt->psn) {
            sim_comp_ask_resend(qp, fi, pkt->psn);
        }
        break;
    default:
        sim_comp_ack_upto(qp, fi, pkt->psn);
        w = sim_comp_find_wqe(qp, fi, pkt->psn);
        if (w != NULL) {
            sim_comp_fail(qp, w, sim_nak_syndrome(pkt->syndrome));
        }
        break;
    }
}

/* Response data of a READ / atomic at message offset `off`: into the
 * WQE's local buffers, or kept for its CQE (requester scatter-to-CQE).
 * False: the buffers were deregistered meanwhile, the WQE failed. */
static bool sim_comp_deliver(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t off,
                             const void *data, uint32_t len)
{
    const sim_sig_report_t rep = {qp->send_cq, qp};
    smlx5_mkey_t          *mk;

    if (w->via_mkey) {
        /* checked block by block as the responses come, in order */
        mk = sim_mkey_lookup(qp->ctx, w->sge[0].lkey);
        if (mk != NULL) {
            sim_sig_rx(mk, &w->sig_rx, w->sge[0].addr + off, data, len, &rep);
        }
    } else if (w->to_cqe) {
        memcpy(w->cqe_data + off, data, len);
    } else if (sim_wqe_local_valid(qp, w)) {
        sim_wqe_sge_copy(w, off, (void *)data, len, true);
    } else {
        sim_comp_fail(qp, w, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
        return false;
    }
    return true;
}

/* The fetched value of an atomic, in the byte order of the HCA's
 * endianness mode (spec section 9, as UCX reads it): 8-byte replies
 * big-endian in mode 0, in host order in mode 1; 32-bit (masked) replies
 * big-endian in either mode. */
static bool sim_comp_atomic_reply(smlx5_qp_t *qp, sim_wqe_t *w, uint64_t v)
{
    uint32_t v32;
    uint64_t v64;

    if (w->atomic_size == 4) {
        v32 = htobe32((uint32_t)v);
        return sim_comp_deliver(qp, w, 0, &v32, sizeof(v32));
    }
    v64 = qp->ctx->cfg.atomic_mode8b ? v : htobe64(v);
    return sim_comp_deliver(qp, w, 0, &v64, sizeof(v64));
}

/* Fault injection (sdc): the data a one-copy READ placed. */
static void sim_comp_sdc_sges(smlx5_qp_t *qp, const sim_wqe_t *w)
{
    uint32_t i, left = w->length, n;

    for (i = 0; (i < w->num_sge) && (left > 0); ++i) {
        n = (w->sge[i].len < left) ? w->sge[i].len : left;
        sim_fault_sdc(qp->ctx, (uint8_t *)(uintptr_t)w->sge[i].addr, n, true);
        left -= n;
    }
}

static void sim_comp_response(smlx5_qp_t *qp, int fi, const sim_pkt_t *pkt,
                              const uint8_t *payload)
{
    sim_flow_t *f = &qp->flows[fi];
    sim_wqe_t  *w = sim_comp_find_wqe(qp, fi, pkt->psn);
    uint32_t    off;
    int         err;

    if ((int32_t)(pkt->psn - f->una_psn) > 0) {
        /* responses come in order: a gap means the one awaited was lost;
         * ask again at once (once per gap) rather than at the timeout */
        if (!f->gap_valid || (f->gap_psn != f->una_psn)) {
            f->gap_valid = true;
            f->gap_psn   = f->una_psn;
            sim_comp_ask_resend(qp, fi, f->una_psn);
        }
        return;
    }
    if ((w == NULL) || !w->needs_response || (pkt->psn != f->una_psn)) {
        return; /* a duplicate */
    }
    if ((pkt->op == SIM_PKT_READ_RESP) && w->onecopy) {
        if (!(pkt->xflags & SIM_PKT_X_ONECOPY)) {
            return; /* not the answer to this request */
        }
        err = sim_onecopy_read_fetch(w, pkt->imm);
        if (err != 0) {
            /* the responder checked its key; its memory is gone (or the
             * host forbids the copy): a remote operation error, as a NAK
             * would report it */
            sim_comp_fail(qp, w, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
            return;
        }
        sim_comp_sdc_sges(qp, w);
    } else if (pkt->op == SIM_PKT_READ_RESP) {
        off = (pkt->psn - w->first_psn) * qp->path_mtu;
        if ((off + pkt->payload_len <= w->length) &&
            !sim_comp_deliver(qp, w, off, payload, pkt->payload_len)) {
            return;
        }
    } else if (pkt->op == SIM_PKT_ATOMIC_RESP) {
        w->fetched = pkt->swap_add;
        if (!sim_comp_atomic_reply(qp, w, pkt->swap_add)) {
            return;
        }
    } else {
        return;
    }
    sim_flow_advance(f, pkt->psn + 1);
    if (pkt->psn == w->last_psn) {
        sim_wqe_finish(qp, w, 0);
    }
    sim_flow_update_timer(qp, f);
}

void sim_comp_packet(smlx5_context_t *ctx, const sim_pkt_t *pkt,
                     const uint8_t *payload)
{
    smlx5_qp_t *qp = sim_qp_lookup(ctx, pkt->dqpn);
    int         fi;

    if ((qp == NULL) || (qp->type == SMLX5_QPT_DCT) ||
        ((qp->state != IBV_QPS_RTS) && (qp->state != IBV_QPS_SQD))) {
        return;
    }
    fi = sim_comp_find_flow(qp, pkt);
    if (fi < 0) {
        return;
    }
    if (pkt->op == SIM_PKT_ACK) {
        sim_comp_ack(qp, fi, pkt);
    } else {
        /* a response implicitly acknowledges what came before it */
        sim_comp_ack_upto(qp, fi, pkt->psn);
        sim_comp_response(qp, fi, pkt, payload);
    }
    sim_comp_retire(qp);
    sim_req_queue_add(qp); /* what the window lets go now */
}

/* ------------------------------------------------------------- CQEs */

static void sim_cqe_req(smlx5_qp_t *qp, const sim_wqe_t *w)
{
    struct mlx5_cqe64 cqe;

    memset(&cqe, 0, sizeof(cqe));
    cqe.srqn_uidx    = htobe32(qp->user_index & 0xffffff);
    cqe.sop_drop_qpn = htobe32(((uint32_t)w->opcode << 24) | qp->qpn);
    cqe.wqe_counter  = htobe16((uint16_t)w->wqe_idx);
    if (w->opcode == MLX5_OPCODE_RDMA_READ) {
        cqe.byte_cnt = htobe32(w->length);
    } else if (w->needs_response) {
        cqe.byte_cnt = htobe32(w->atomic_size);
    }
    cqe.op_own = MLX5_CQE_REQ << 4;
    if (w->to_cqe) {
        sim_cq_push_scatter(qp->send_cq, &cqe, w->cqe_data, w->length);
    } else {
        sim_cq_push(qp->send_cq, &cqe);
    }
}

void sim_comp_retire(smlx5_qp_t *qp)
{
    sim_wqe_t *w;

    while (qp->sq_completed != qp->sq_fetched) {
        w = sim_wqe_at(qp, qp->sq_completed);
        if (w->state != SIM_WQE_DONE) {
            break;
        }
        if (qp->tm_rndv != NULL) {
            /* the device's own rendezvous DCI: its completions are the
             * device's business */
            sim_tm_rndv_retired(qp, w);
        } else if (w->status != 0) {
            /* errors and flushes: one CQE each, whatever CE said */
            sim_cqe_error(qp->send_cq, MLX5_CQE_REQ_ERR, qp->qpn, w->opcode,
                          (uint16_t)w->wqe_idx, w->status, qp->user_index);
        } else if (w->signaled) {
            sim_cqe_req(qp, w);
        }
        qp->sq_completed += w->bbs;
        w->state = SIM_WQE_FREE;
    }
    if ((qp->state == IBV_QPS_SQD) && qp->sqd_notify &&
        (qp->sq_completed == qp->sq_fetched)) {
        qp->sqd_notify = false;
        sim_async_push(qp->ctx, IBV_EVENT_SQ_DRAINED, qp);
    }
}

/* Everything posted to a QP in error is flushed, in order, each WQE with
 * its CQE: parsed for what the CQE says of it (opcode, index, size),
 * never executed. */
void sim_comp_flush_posted(smlx5_qp_t *qp)
{
    uint32_t db  = __atomic_load_n(&qp->db_pi, __ATOMIC_ACQUIRE);
    uint32_t end = qp->sq_fetched + (uint16_t)(db - qp->sq_fetched);

    while (qp->sq_fetched != end) {
        sim_wqe_t        *w = &qp->wqes[qp->sq_fetched & (qp->sq_wqe_cnt - 1)];
        smlx5_dc_target_t dc;
        sim_parse_wqe(qp, qp->sq_fetched, w, &dc);
        w->state  = SIM_WQE_DONE;
        w->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
        qp->sq_fetched += w->bbs;
    }
    qp->req_bb = qp->sq_fetched;
    sim_comp_retire(qp);
}

/* Receive WQEs a message was being written into when the QP entered ERR
 * (the IB spec: a WQE partly done completes with a flush error): the
 * SRQ's WQE goes back to its owner with its index in the CQE, the RQ's
 * comes first of the RQ's flushed ones. A tag-matched message writes into
 * a tagged buffer, not a receive WQE: nothing to flush here. */
static void sim_comp_flush_recvs_in_progress(smlx5_qp_t *qp)
{
    sim_resp_ctx_t *c;
    unsigned        i;

    for (i = 0; i < qp->num_resp; ++i) {
        c = &qp->resp[i];
        if (!c->used || !c->recv_active || c->tm_matched) {
            continue;
        }
        sim_cqe_error(qp->recv_cq, MLX5_CQE_RESP_ERR, qp->qpn, 0,
                      (uint16_t)c->recv_wqe, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
                      qp->user_index);
        c->recv_active = false;
    }
}

/* The QP entered ERR: everything outstanding completes, in order, with
 * WR_FLUSH_ERR; receive WQEs too: the RQ's, and of an SRQ the ones a
 * message was being written into (the others stay the SRQ's). A QP on an
 * SRQ then tells that it takes no more of its WQEs (the IB spec's
 * Last WQE Reached event, which UCX's rc transports wait for before they
 * destroy such a QP). A QP destroyed without passing ERR writes none of
 * this: a receive WQE a message had started is lost, as on a NIC. */
void sim_comp_flush_qp(smlx5_qp_t *qp)
{
    uint32_t   bb;
    sim_wqe_t *w;
    uint16_t   posted;

    if (qp->sq_buf != NULL) {
        for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
            w = sim_wqe_at(qp, bb);
            if (w->state != SIM_WQE_DONE) {
                w->state  = SIM_WQE_DONE;
                w->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
            }
        }
        memset(qp->flows, 0, sizeof(qp->flows));
        qp->flows_used         = 0;
        qp->resend_flows       = 0;
        qp->rd_atomic_inflight = 0;
        qp->num_deferred       = 0;
        memset(qp->chan_flow, 0, sizeof(qp->chan_flow));
        qp->req_bb = qp->sq_fetched;
        /* and what is posted but not fetched */
        if (qp->tm_cmd != NULL) {
            (void)sim_tm_cmd_process(qp); /* in ERR: flushes, never fails */
        } else {
            sim_comp_flush_posted(qp);
        }
    }

    if (qp->resp != NULL) {
        sim_comp_flush_recvs_in_progress(qp);
    }
    if ((qp->rq_buf != NULL) && (qp->srq == NULL)) {
        posted = (uint16_t)be32toh(qp->dbrec[MLX5_RCV_DBR]);
        while ((uint16_t)(posted - qp->rq_consumed) != 0) {
            sim_cqe_error(qp->recv_cq, MLX5_CQE_RESP_ERR, qp->qpn, 0,
                          qp->rq_consumed, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
                          qp->user_index);
            qp->rq_consumed++;
        }
    }
    if (qp->resp != NULL) {
        memset(qp->resp, 0, qp->num_resp * sizeof(*qp->resp));
    }
    if ((qp->srq != NULL) && (qp->type != SMLX5_QPT_DCT)) {
        sim_async_push(qp->ctx, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
    }
}

/* Enter ERR from inside the device (a fatal error on this QP): the
 * completer flushes what the QP had, as rxe's completer does. */
void sim_qp_to_err(smlx5_qp_t *qp, enum ibv_event_type ev)
{
    if (qp->state == IBV_QPS_ERR) {
        return;
    }
    qp->state = IBV_QPS_ERR;
    sim_comp_flush_qp(qp);
    sim_async_push(qp->ctx, ev, qp);
}

/* ----------------------------------------------------------- timers */

/* The flows' timers of one QP that are due at `now`: transport timeouts
 * (go back N, or RETRY_EXC_ERR after retry_cnt) and RNR back-offs. */
void sim_comp_qp_timers(smlx5_qp_t *qp, uint64_t now)
{
    sim_flow_t *f;
    sim_wqe_t  *w;
    uint64_t    m;
    int         i;

    sim_for_each_flow(qp, i, m) {
        f = &qp->flows[i];
        if ((f->deadline_ns == 0) || (f->deadline_ns > now)) {
            continue;
        }
        f->deadline_ns = 0;
        if (f->rnr_state == SIM_RNR_WAITING) {
            sim_comp_rnr_retry(qp, i);
            continue;
        }
        if (f->outstanding == 0) {
            continue;
        }
        if (++f->retries > qp->retry_cnt) {
            w = sim_comp_find_wqe(qp, i, f->una_psn);
            if (w != NULL) {
                sim_comp_fail(qp, w, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
            }
            if (qp->state != IBV_QPS_RTS) {
                return;
            }
            continue;
        }
        sim_comp_ask_resend(qp, i, f->una_psn);
    }
    sim_comp_retire(qp);
    sim_req_queue_add(qp); /* what the window lets go now */
}
