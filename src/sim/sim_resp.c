/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder: request packets -> memory, receive WQEs and CQEs; answers with
 * ACK, NAK (RNR, PSN sequence, invalid request, remote access), read
 * responses and atomic responses. Requests of one requester execute in PSN
 * order; duplicates are answered again without executing twice.
 */
#include "sim.h"
#include "sim_onecopy.h"
#include "sim_sig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <unistd.h>

/* A coalesced ACK leaves at the latest this long after the request. */
#define SIM_ACK_DELAY_NS 10000ull

static void sim_resp_reply(smlx5_context_t *ctx, const smlx5_qp_t *qp,
                           const sim_pkt_t *req, sim_pkt_t *rsp,
                           const void *payload, uint32_t len)
{
    rsp->dqpn        = req->sqpn;
    rsp->sqpn        = sim_qp_number(qp);
    rsp->sl          = qp->path_sl;
    rsp->tclass      = qp->path_tclass;
    rsp->chan        = req->chan;
    rsp->payload_len = (uint16_t)len;
    sim_send_pkt(ctx, req->slid, rsp, payload, len);
}

static void sim_resp_ack(smlx5_context_t *ctx, smlx5_qp_t *qp,
                         const sim_pkt_t *req, uint8_t syndrome, uint32_t psn)
{
    sim_pkt_t ack;

    if (syndrome == SIM_AETH_RNR_NAK) {
        qp->stats.rnr_naks_sent++;
    } else if (syndrome == SIM_AETH_NAK_PSN_SEQ) {
        qp->stats.seq_naks_sent++;
    }

    memset(&ack, 0, sizeof(ack));
    ack.op        = SIM_PKT_ACK;
    ack.syndrome  = syndrome;
    ack.psn       = psn;
    ack.atomic_op = qp->min_rnr_timer; /* RNR NAK carries the timer */
    sim_resp_reply(ctx, qp, req, &ack, NULL, 0);
}

static void sim_resp_ack_later(smlx5_context_t *ctx, smlx5_qp_t *qp,
                               sim_resp_ctx_t *c, const sim_pkt_t *pkt);

/* ----------------------------------------------------- context lookup */

/* A new requester and no context free: the least recently used one goes
 * only when it has been idle long enough that its requester cannot still
 * be in the middle of its association (a requester that waits out
 * timeouts, or a process the scheduler left aside, sends its next packet
 * without a new connect, and a context taken meanwhile would drop it
 * silently: its requester would fail for nothing). Else the table grows,
 * up to SIM_RESP_CTX_CAP. Returns the context to take. */
static sim_resp_ctx_t *
sim_resp_ctx_victim(smlx5_qp_t *qp, sim_resp_ctx_t *victim)
{
    unsigned        n = qp->num_resp;
    sim_resp_ctx_t *grown;

    if (!victim->used || (n >= SIM_RESP_CTX_CAP) ||
        (sim_now_ns() - victim->last_used_ns >= SIM_RESP_CTX_IDLE_NS)) {
        return victim;
    }
    grown = realloc(qp->resp, 2 * n * sizeof(*qp->resp));
    if (grown == NULL) {
        return victim;
    }
    memset(grown + n, 0, n * sizeof(*grown));
    qp->resp     = grown;
    qp->num_resp = 2 * n;
    return &grown[n];
}

static bool sim_resp_ctx_is(const sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    return c->used && (c->slid == pkt->slid) && (c->sqpn == pkt->sqpn) &&
           (c->chan == pkt->chan);
}

/* a DCT's hint slot of the requester that sent pkt */
static uint16_t *sim_resp_hint(smlx5_qp_t *qp, const sim_pkt_t *pkt)
{
    uint32_t h = (pkt->sqpn * 0x9e3779b1u) ^ ((uint32_t)pkt->slid << 7) ^
                 pkt->chan;

    return &qp->resp_hint[(h ^ (h >> 16)) % SIM_RESP_HINTS];
}

/* A DCT's context of pkt's requester (NULL: none): its hint, else a scan
 * of the table, which also picks the context a new one would take. */
static sim_resp_ctx_t *sim_resp_ctx_find(smlx5_qp_t *qp, const sim_pkt_t *pkt,
                                         sim_resp_ctx_t **victim_p)
{
    uint16_t       *hint = sim_resp_hint(qp, pkt);
    sim_resp_ctx_t *c, *victim = NULL;
    unsigned        i;

    if ((*hint != 0) && (*hint <= qp->num_resp) &&
        sim_resp_ctx_is(&qp->resp[*hint - 1], pkt)) {
        *victim_p = NULL;
        return &qp->resp[*hint - 1];
    }
    for (i = 0; i < qp->num_resp; ++i) {
        c = &qp->resp[i];
        if (c->used && (c->slid == pkt->slid) && (c->sqpn == pkt->sqpn) &&
            (c->chan == pkt->chan)) {
            break;
        }
        if (!c->used) {
            if (victim == NULL || victim->used) {
                victim = c;
            }
        } else if ((victim == NULL) ||
                   (victim->used && (c->last_used_ns < victim->last_used_ns))) {
            victim = c;
        }
    }
    *victim_p = victim;
    if (i == qp->num_resp) {
        return NULL;
    }
    *hint = (uint16_t)(i + 1);
    return c;
}

static sim_resp_ctx_t *sim_resp_ctx_get(smlx5_qp_t *qp, const sim_pkt_t *pkt)
{
    sim_resp_ctx_t *c, *victim;

    if (qp->type == SMLX5_QPT_RC) {
        c = &qp->resp[0];
        return (c->used && (c->slid == pkt->slid) && (c->sqpn == pkt->sqpn)) ?
                       c :
                       NULL;
    }

    c = sim_resp_ctx_find(qp, pkt, &victim);
    if (pkt->flags & SIM_PKT_F_CONNECT) {
        if ((c != NULL) && (c->connect_psn == pkt->psn)) {
            return c; /* a retransmitted connect: same association */
        }
        if (c == NULL) {
            c                       = sim_resp_ctx_victim(qp, victim);
            *sim_resp_hint(qp, pkt) = (uint16_t)(c - qp->resp + 1);
        }
        memset(c, 0, sizeof(*c));
        c->used        = true;
        c->slid        = pkt->slid;
        c->sqpn        = pkt->sqpn;
        c->chan        = pkt->chan;
        c->epsn        = pkt->psn;
        c->connect_psn = pkt->psn;
    }
    return c;
}

/* --------------------------------------------------------- errors */

static void sim_resp_error(smlx5_context_t *ctx, smlx5_qp_t *qp,
                           sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                           uint8_t aeth)
{
    sim_resp_ack(ctx, qp, pkt, aeth, pkt->psn);
    if (qp->type == SMLX5_QPT_DCT) {
        /* the DCT stays RTR; this association waits for a new connect */
        c->errored = true;
        return;
    }
    sim_qp_to_err(qp, (aeth == SIM_AETH_NAK_ACCESS) ? IBV_EVENT_QP_ACCESS_ERR :
                                                      IBV_EVENT_QP_REQ_ERR);
}

/* --------------------------------------------------------- receive */

/* The receive CQE; `data` (byte_cnt bytes) is scattered to the CQE, or
 * NULL when the message went to the receive buffer. */
static void sim_resp_cqe_recv(smlx5_qp_t *qp, sim_resp_ctx_t *c,
                              const sim_pkt_t *pkt, uint8_t opcode,
                              uint32_t byte_cnt, const void *data)
{
    struct mlx5_cqe64 cqe;

    memset(&cqe, 0, sizeof(cqe));
    cqe.srqn_uidx      = htobe32(qp->user_index & 0xffffff);
    cqe.byte_cnt       = htobe32(byte_cnt);
    cqe.imm_inval_pkey = pkt->imm; /* as the WQE carried it (big-endian) */
    cqe.sop_drop_qpn   = htobe32(sim_qp_number(qp));
    cqe.flags_rqpn     = htobe32(pkt->sqpn & 0xffffff);
    cqe.slid           = htobe16(pkt->slid);
    cqe.wqe_counter    = htobe16((uint16_t)c->recv_wqe);
    cqe.op_own = (opcode << 4) | ((pkt->flags & SIM_PKT_F_SE) ? 0x2 : 0);
    sim_tm_cqe_app(qp, c, &cqe);
    if (data != NULL) {
        sim_cq_push_scatter(qp->recv_cq, &cqe, data, byte_cnt);
    } else {
        sim_cq_push(qp->recv_cq, &cqe);
    }
}

/* Scatter-to-CQE (cs_res): a whole message small enough for the receive
 * CQE goes there; the receive WQE is consumed, its buffer not written.
 * On a tag-matching SRQ too (an unexpected or untagged message, TMH
 * included), as UCX's receive path for either expects. */
static bool sim_resp_to_cqe(const smlx5_qp_t *qp, const sim_pkt_t *pkt)
{
    return (pkt->op == SIM_PKT_SEND_ONLY) && (pkt->payload_len > 0) &&
           (pkt->payload_len <= qp->cs_res);
}

/* Scatter into the receive WQE's list; returns 0 or a syndrome. */
static int sim_resp_scatter(smlx5_qp_t *qp, sim_resp_ctx_t *c, uint32_t off,
                            const uint8_t *src, uint32_t len)
{
    struct mlx5_wqe_data_seg *sges;
    unsigned                  num, i;
    uint32_t                  bc, n;
    smlx5_pd_t               *pd;
    int                       ret;

    if (c->recv_srq != NULL) {
        sges = (void *)(c->recv_srq->buf + c->recv_wqe * c->recv_srq->stride +
                        sizeof(struct mlx5_wqe_srq_next_seg));
        num  = c->recv_srq->max_sge;
        pd   = c->recv_srq->pd;
    } else {
        sges = (void *)(qp->rq_buf +
                        (c->recv_wqe & (qp->rq_wqe_cnt - 1)) * qp->rq_stride);
        num  = qp->rq_stride / sizeof(*sges);
        pd   = qp->pd;
    }
    for (i = 0; (i < num) && (len > 0); ++i) {
        if (be32toh(sges[i].lkey) == MLX5_INVALID_LKEY) {
            break;
        }
        bc = be32toh(sges[i].byte_count);
        if (off >= bc) {
            off -= bc;
            continue;
        }
        n = bc - off;
        if (n > len) {
            n = len;
        }
        ret = sim_mr_check_local(qp->ctx, pd, be32toh(sges[i].lkey),
                                 be64toh(sges[i].addr) + off, n,
                                 IBV_ACCESS_LOCAL_WRITE);
        if (ret != 0) {
            return ret;
        }
        memcpy((void *)(uintptr_t)(be64toh(sges[i].addr) + off), src, n);
        src += n;
        len -= n;
        off = 0;
    }
    return (len > 0) ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : 0;
}

/* Returns false when the packet must not advance the PSN (RNR). */
static bool sim_resp_take_recv(smlx5_context_t *ctx, smlx5_qp_t *qp,
                               sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    struct mlx5_wqe_data_seg *sges;
    unsigned                  num;
    int                       idx;

    idx = sim_rq_take(qp, &sges, &num, &c->recv_srq);
    if (idx < 0) {
        /* the flow stops here: what follows this PSN is not executed,
         * and not answered either, until the requester comes back to it
         * after its RNR timer (sim_resp_out_of_sequence) */
        sim_resp_ack(ctx, qp, pkt, SIM_AETH_RNR_NAK, pkt->psn);
        c->nak_outstanding = true;
        return false;
    }
    c->recv_active = true;
    c->recv_wqe    = (uint32_t)idx;
    if ((qp->srq != NULL) && (qp->srq->tm != NULL)) {
        sim_tm_recv_buffer_taken(qp, c);
    }
    return true;
}

static void sim_resp_recv_error(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                                int syndrome)
{
    uint32_t qpn = sim_qp_number(qp);

    sim_cqe_error(qp->recv_cq, MLX5_CQE_RESP_ERR, qpn, 0, (uint16_t)c->recv_wqe,
                  (uint8_t)syndrome, qp->user_index);
    c->recv_active = false;
    sim_resp_error(ctx, qp, c, pkt,
                   (syndrome == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR) ?
                           SIM_AETH_NAK_INV_REQ :
                           SIM_AETH_NAK_OP);
}

static bool sim_resp_send(smlx5_context_t *ctx, smlx5_qp_t *qp,
                          sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                          const uint8_t *payload)
{
    bool first = (pkt->op == SIM_PKT_SEND_FIRST) ||
                 (pkt->op == SIM_PKT_SEND_ONLY);
    bool last = (pkt->op == SIM_PKT_SEND_LAST) ||
                (pkt->op == SIM_PKT_SEND_ONLY);
    uint8_t opcode;
    bool    to_cqe;
    int     ret;

    if (first) {
        c->tm_matched = false;
        c->tm_app_op  = 0;
        if ((qp->srq != NULL) && (qp->srq->tm != NULL)) {
            switch (sim_tm_recv_first(qp, c, pkt, payload)) {
            case SIM_TM_RECV_DONE:
                c->recv_active = false;
                return true; /* a rendezvous: the device reads it */
            case SIM_TM_RECV_TAG:
                c->recv_active = true;
                break;
            default:
                break;
            }
        }
        if (!c->tm_matched && !sim_resp_take_recv(ctx, qp, c, pkt)) {
            return false;
        }
    }
    if (!c->recv_active) {
        return true; /* middle of a message whose start failed */
    }
    if (c->tm_matched) {
        sim_tm_recv_tag_data(qp, c, pkt, payload, last);
        return true;
    }
    to_cqe = sim_resp_to_cqe(qp, pkt);
    if (!to_cqe) {
        ret = sim_resp_scatter(qp, c, pkt->offset, payload, pkt->payload_len);
        if (ret != 0) {
            sim_resp_recv_error(ctx, qp, c, pkt, ret);
            return false;
        }
    }
    if (last) {
        opcode = (pkt->flags & SIM_PKT_F_IMM) ? MLX5_CQE_RESP_SEND_IMM :
                 (pkt->flags & SIM_PKT_F_INV) ? MLX5_CQE_RESP_SEND_INV :
                                                MLX5_CQE_RESP_SEND;
        sim_resp_cqe_recv(qp, c, pkt, opcode, pkt->offset + pkt->payload_len,
                          to_cqe ? payload : NULL);
        c->recv_active = false;
    }
    return true;
}

/* --------------------------------------------------- RDMA and atomics */

static int sim_resp_qp_access(const smlx5_qp_t *qp)
{
    return qp->access_flags;
}

/* The rkey, address and length of a READ or WRITE: a memory region, or an
 * mkey (zero-based; never in one copy, its data is transformed on the
 * way). 0, or the NAK (SIM_AETH_*) that refuses it. */
static uint8_t sim_resp_rkey_mk(smlx5_context_t *ctx, const smlx5_qp_t *qp,
                                const sim_pkt_t *pkt, smlx5_mkey_t *mk,
                                int access)
{
    int ret;

    if (mk == NULL) {
        return sim_mr_check_remote(ctx, qp->pd, pkt->rkey, pkt->va,
                                   pkt->dma_len, access) ?
                       SIM_AETH_NAK_ACCESS :
                       0;
    }
    if (pkt->xflags & SIM_PKT_X_ONECOPY) {
        return SIM_AETH_NAK_INV_REQ;
    }
    if (sim_fault_rkey(ctx, pkt->rkey)) {
        return SIM_AETH_NAK_ACCESS;
    }
    ret = sim_mkey_check_op(ctx, qp->pd, mk, pkt->va, pkt->dma_len, access,
                            true);
    return (ret == 0) ? 0 :
           (ret == MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR) ?
                        SIM_AETH_NAK_INV_REQ :
                        SIM_AETH_NAK_ACCESS;
}

static uint8_t sim_resp_rkey(smlx5_context_t *ctx, const smlx5_qp_t *qp,
                             const sim_pkt_t *pkt, int access)
{
    return sim_resp_rkey_mk(ctx, qp, pkt, sim_mkey_lookup(ctx, pkt->rkey),
                            access);
}

/* A WRITE's data into an mkey: checked as it streams in (the packets of a
 * requester arrive in PSN order, each once). */
static void sim_resp_write_mkey(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                                const uint8_t *payload)
{
    const sim_sig_report_t rep = {qp->recv_cq, NULL};
    smlx5_mkey_t          *mk  = sim_mkey_lookup(ctx, pkt->rkey);

    if ((pkt->op == SIM_PKT_WRITE_FIRST) || (pkt->op == SIM_PKT_WRITE_ONLY)) {
        sim_sig_rx_start(&c->sig_rx, pkt->va);
    }
    sim_sig_rx(mk, &c->sig_rx, pkt->va + pkt->offset, payload, pkt->payload_len,
               &rep);
}

/* The data of a one-copy WRITE (key and bounds checked) into place. A
 * requester that is gone gets no answer, as on a wire; a descriptor that
 * makes no sense is an invalid request; a copy the host refuses or whose
 * source is not there, a remote operation error. */
static bool sim_resp_write_onecopy(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                   sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                                   const uint8_t *payload)
{
    static bool warned;
    int         err;

    err = sim_onecopy_write_place(payload, pkt->payload_len, pkt->va,
                                  pkt->dma_len);
    if (err == 0) {
        sim_fault_sdc(ctx, (uint8_t *)(uintptr_t)pkt->va, pkt->dma_len, false);
        return true;
    }
    if (err == ESRCH) {
        return false;
    }
    if ((err == EPERM) && !warned) {
        warned = true;
        fprintf(stderr,
                "smlx5: this host does not let the device copy "
                "between processes (process_vm_readv: %s); set "
                "STRAND_SIM_ONECOPY=0\n",
                strerror(err));
    }
    sim_resp_error(ctx, qp, c, pkt,
                   (err == EINVAL) ? SIM_AETH_NAK_INV_REQ : SIM_AETH_NAK_OP);
    return false;
}

static bool sim_resp_write(smlx5_context_t *ctx, smlx5_qp_t *qp,
                           sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                           const uint8_t *payload)
{
    bool last = (pkt->op == SIM_PKT_WRITE_LAST) ||
                (pkt->op == SIM_PKT_WRITE_ONLY);
    bool          onecopy = (pkt->xflags & SIM_PKT_X_ONECOPY) != 0;
    smlx5_mkey_t *mk;
    uint8_t       nak;

    if (pkt->dma_len > 0) {
        mk  = sim_mkey_lookup(ctx, pkt->rkey);
        nak = !(sim_resp_qp_access(qp) & IBV_ACCESS_REMOTE_WRITE) ?
                      SIM_AETH_NAK_ACCESS :
                      sim_resp_rkey_mk(ctx, qp, pkt, mk,
                                       IBV_ACCESS_REMOTE_WRITE);
        if ((nak == 0) && !onecopy &&
            (pkt->offset + pkt->payload_len > pkt->dma_len)) {
            nak = SIM_AETH_NAK_ACCESS;
        }
        if (nak != 0) {
            sim_resp_error(ctx, qp, c, pkt, nak);
            return false;
        }
        if (mk != NULL) {
            sim_resp_write_mkey(ctx, qp, c, pkt, payload);
        } else if (onecopy) {
            if (!sim_resp_write_onecopy(ctx, qp, c, pkt, payload)) {
                return false;
            }
        } else {
            memcpy((void *)(uintptr_t)(pkt->va + pkt->offset), payload,
                   pkt->payload_len);
        }
    }
    if (last && (pkt->flags & SIM_PKT_F_IMM)) {
        if (!sim_resp_take_recv(ctx, qp, c, pkt)) {
            return false;
        }
        sim_resp_cqe_recv(qp, c, pkt, MLX5_CQE_RESP_WR_IMM, pkt->dma_len, NULL);
        c->recv_active = false;
    }
    return true;
}

/* Read responses held back by a full ring of the requester, in order. */
typedef struct sim_read_job {
    sim_pkt_t pkt;  /* the READ request */
    uint32_t  next; /* index of the next response to send */
} sim_read_job_t;

/* The data of one READ response: in place in a memory region, or made
 * (signed, checked) from an mkey into buf. */
static const void *sim_resp_read_data(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                      const sim_pkt_t *pkt, uint32_t off,
                                      uint32_t len, uint8_t *buf)
{
    const sim_sig_report_t rep = {qp->recv_cq, NULL};
    smlx5_mkey_t          *mk;

    if ((len == 0) || ((mk = sim_mkey_lookup(ctx, pkt->rkey)) == NULL)) {
        return (const void *)(uintptr_t)(pkt->va + off);
    }
    sim_sig_tx(mk, pkt->va + off, buf, len, &rep);
    return buf;
}

/* Send the responses of a READ from index `i` on; the index of the first
 * one the requester's ring had no room for, or the count when all went. */
static uint32_t sim_resp_read_send(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                   const sim_pkt_t *pkt, uint32_t i)
{
    uint32_t  mtu = 1u << pkt->log_mtu, n, off, len;
    uint8_t   buf[4096];
    sim_pkt_t rsp;

    n = sim_pkt_read_npkts(pkt);
    for (; i < n; ++i) {
        off = i * mtu;
        len = (pkt->dma_len - off < mtu) ? pkt->dma_len - off : mtu;
        memset(&rsp, 0, sizeof(rsp));
        if ((pkt->dma_len == 0) || (pkt->xflags & SIM_PKT_X_ONECOPY)) {
            len = 0;
        }
        if (pkt->xflags & SIM_PKT_X_ONECOPY) {
            /* its one response carries no data but who answers: the
             * requester reads the data in place */
            rsp.xflags = SIM_PKT_X_ONECOPY;
            rsp.imm    = (uint32_t)getpid();
        }
        rsp.op          = SIM_PKT_READ_RESP;
        rsp.psn         = pkt->psn + i;
        rsp.offset      = off;
        rsp.dma_len     = pkt->dma_len; /* the whole READ: the wire names
                                           first, middle, last (sim_wire.c) */
        rsp.dqpn        = pkt->sqpn;
        rsp.sqpn        = sim_qp_number(qp);
        rsp.sl          = qp->path_sl;
        rsp.tclass      = qp->path_tclass;
        rsp.chan        = pkt->chan;
        rsp.payload_len = (uint16_t)len;
        if (sim_send_pkt(ctx, pkt->slid, &rsp,
                         sim_resp_read_data(ctx, qp, pkt, off, len, buf),
                         len) == -EAGAIN) {
            return i;
        }
    }
    return n;
}

static bool sim_resp_read_queue(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                const sim_pkt_t *pkt, uint32_t next)
{
    sim_read_job_t *jobs;
    uint32_t        cap, i, n;

    if (qp->rjob_tail - qp->rjob_head == qp->rjob_cap) {
        cap  = qp->rjob_cap ? qp->rjob_cap * 2 : 16;
        jobs = malloc(cap * sizeof(*jobs));
        if (jobs == NULL) {
            return false; /* dropped: the requester asks again */
        }
        n = qp->rjob_tail - qp->rjob_head;
        for (i = 0; i < n; ++i) {
            jobs[i] = qp->rjobs[(qp->rjob_head + i) & (qp->rjob_cap - 1)];
        }
        free(qp->rjobs);
        qp->rjobs     = jobs;
        qp->rjob_cap  = cap;
        qp->rjob_head = 0;
        qp->rjob_tail = n;
    }
    jobs            = &qp->rjobs[qp->rjob_tail++ & (qp->rjob_cap - 1)];
    jobs->pkt       = *pkt;
    jobs->next      = next;
    ctx->tx_backlog = true;
    sim_qp_activate(qp);
    return true;
}

void sim_resp_resume_reads(smlx5_context_t *ctx, smlx5_qp_t *qp)
{
    sim_read_job_t *job;
    uint32_t        n;

    while (qp->rjob_head != qp->rjob_tail) {
        job = &qp->rjobs[qp->rjob_head & (qp->rjob_cap - 1)];
        if ((job->pkt.dma_len > 0) &&
            sim_resp_rkey(ctx, qp, &job->pkt, IBV_ACCESS_REMOTE_READ)) {
            /* deregistered while its responses waited: the rest is not
             * read (the requester's retry will be refused) */
            ++qp->rjob_head;
            continue;
        }
        n         = sim_pkt_read_npkts(&job->pkt);
        job->next = sim_resp_read_send(ctx, qp, &job->pkt, job->next);
        if (job->next < n) {
            ctx->tx_backlog = true;
            return;
        }
        ++qp->rjob_head;
    }
}

void sim_resp_drop_reads(smlx5_qp_t *qp)
{
    free(qp->rjobs);
    qp->rjobs     = NULL;
    qp->rjob_cap  = 0;
    qp->rjob_head = qp->rjob_tail = 0;
}

/* Answer a READ from response `from_psn` on; behind responses still held
 * back (responses of one QP leave in order). */
static void sim_resp_read(smlx5_context_t *ctx, smlx5_qp_t *qp,
                          sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                          uint32_t from_psn)
{
    uint32_t first = ((int32_t)(from_psn - pkt->psn) > 0) ?
                             from_psn - pkt->psn :
                             0;
    uint32_t n     = sim_pkt_read_npkts(pkt), next;

    (void)c;
    if (qp->rjob_head != qp->rjob_tail) {
        sim_resp_read_queue(ctx, qp, pkt, first);
        return;
    }
    next = sim_resp_read_send(ctx, qp, pkt, first);
    if (next < n) {
        sim_resp_read_queue(ctx, qp, pkt, next);
    }
}

static uint64_t sim_atomic_apply(const sim_pkt_t *pkt, uint64_t orig)
{
    uint64_t mask = (pkt->atomic_size == 4) ? 0xffffffffull : ~0ull;
    uint64_t sum, carry_stop, r, bit, a, b, c;
    unsigned i;

    switch (pkt->atomic_op) {
    case SIM_ATOMIC_CS:
        return (orig == pkt->compare) ? pkt->swap_add : orig;
    case SIM_ATOMIC_FA:
        return orig + pkt->swap_add;
    case SIM_ATOMIC_MASKED_CS:
        if (((orig ^ pkt->compare) & pkt->compare_mask & mask) != 0) {
            return orig;
        }
        return (orig & ~pkt->swap_mask) | (pkt->swap_add & pkt->swap_mask);
    case SIM_ATOMIC_MASKED_FA:
        /* a 1 bit in the field boundary stops the carry out of that bit */
        carry_stop = pkt->swap_mask;
        r          = 0;
        c          = 0;
        for (i = 0; i < pkt->atomic_size * 8u; ++i) {
            a   = (orig >> i) & 1;
            b   = (pkt->swap_add >> i) & 1;
            sum = a ^ b ^ c;
            r |= sum << i;
            bit = (a & b) | (a & c) | (b & c);
            c   = ((carry_stop >> i) & 1) ? 0 : bit;
        }
        return r;
    default:
        return orig;
    }
}

static bool sim_resp_atomic(smlx5_context_t *ctx, smlx5_qp_t *qp,
                            sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    uint64_t  orig, val;
    sim_pkt_t rsp;

    if ((pkt->atomic_size != 4) && (pkt->atomic_size != 8)) {
        sim_resp_error(ctx, qp, c, pkt, SIM_AETH_NAK_INV_REQ);
        return false;
    }
    if (pkt->va & (pkt->atomic_size - 1)) {
        sim_resp_error(ctx, qp, c, pkt, SIM_AETH_NAK_INV_REQ);
        return false;
    }
    if (!(sim_resp_qp_access(qp) & IBV_ACCESS_REMOTE_ATOMIC) ||
        sim_mr_check_remote(ctx, qp->pd, pkt->rkey, pkt->va, pkt->atomic_size,
                            IBV_ACCESS_REMOTE_ATOMIC)) {
        sim_resp_error(ctx, qp, c, pkt, SIM_AETH_NAK_ACCESS);
        return false;
    }

    /* atomic with respect to the target's own CPU atomics */
    if (pkt->atomic_size == 8) {
        uint64_t *p = (uint64_t *)(uintptr_t)pkt->va;
        orig        = __atomic_load_n(p, __ATOMIC_ACQUIRE);
        do {
            val = sim_atomic_apply(pkt, orig);
        } while (!__atomic_compare_exchange_n(p, &orig, val, false,
                                              __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE));
    } else {
        uint32_t *p = (uint32_t *)(uintptr_t)pkt->va, o32, v32;
        o32         = __atomic_load_n(p, __ATOMIC_ACQUIRE);
        do {
            v32 = (uint32_t)sim_atomic_apply(pkt, o32);
        } while (!__atomic_compare_exchange_n(p, &o32, v32, false,
                                              __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE));
        orig = o32;
    }

    c->atomic_hist[c->atomic_next].valid = true;
    c->atomic_hist[c->atomic_next].psn   = pkt->psn;
    c->atomic_hist[c->atomic_next].orig  = orig;
    c->atomic_next = (c->atomic_next + 1) % SIM_MAX_RD_ATOMIC;
    memset(&rsp, 0, sizeof(rsp));
    rsp.op       = SIM_PKT_ATOMIC_RESP;
    rsp.psn      = pkt->psn;
    rsp.swap_add = orig;
    sim_resp_reply(ctx, qp, pkt, &rsp, NULL, 0);
    return true;
}

/* ------------------------------------------------------ duplicates */

/* A READ of this requester whose responses wait in the queue (the
 * requester's ring was full) already covers `pkt`, a retry of it. */
static bool sim_resp_read_queued(const smlx5_qp_t *qp, const sim_pkt_t *pkt)
{
    const sim_read_job_t *job;
    uint32_t              i, n;

    for (i = qp->rjob_head; i != qp->rjob_tail; ++i) {
        job = &qp->rjobs[i & (qp->rjob_cap - 1)];
        n   = sim_pkt_read_npkts(&job->pkt);
        if ((job->pkt.slid == pkt->slid) && (job->pkt.sqpn == pkt->sqpn) &&
            (job->pkt.chan == pkt->chan) &&
            ((uint32_t)(pkt->psn - job->pkt.psn) < n)) {
            return true;
        }
    }
    return false;
}

static void sim_resp_duplicate(smlx5_context_t *ctx, smlx5_qp_t *qp,
                               sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    sim_pkt_t rsp;

    switch (pkt->op) {
    case SIM_PKT_READ_REQ:
        /* reads are idempotent: answer again (a retry asks for the rest
         * of a READ: its own address and length, checked again). Not
         * while its responses still wait in the queue: they reach the
         * requester in order, and a second job could outlive the READ,
         * reading memory the application freed once it completed (a
         * NIC reads pinned pages; this device reads the process's). */
        if (sim_resp_read_queued(qp, pkt)) {
            break;
        }
        if ((pkt->dma_len == 0) ||
            !sim_resp_rkey(ctx, qp, pkt, IBV_ACCESS_REMOTE_READ)) {
            sim_resp_read(ctx, qp, c, pkt, pkt->psn);
        }
        break;
    case SIM_PKT_ATOMIC_REQ:
        for (unsigned i = 0; i < SIM_MAX_RD_ATOMIC; ++i) {
            if (c->atomic_hist[i].valid &&
                (c->atomic_hist[i].psn == pkt->psn)) {
                memset(&rsp, 0, sizeof(rsp));
                rsp.op       = SIM_PKT_ATOMIC_RESP;
                rsp.psn      = pkt->psn;
                rsp.swap_add = c->atomic_hist[i].orig;
                sim_resp_reply(ctx, qp, pkt, &rsp, NULL, 0);
                break;
            }
        }
        break;
    default:
        if (pkt->flags & SIM_PKT_F_ACKREQ) {
            sim_resp_ack(ctx, qp, pkt, SIM_AETH_ACK, c->epsn - 1);
        }
        break;
    }
}

/* ------------------------------------------------------------ entry */

/* A request past the expected PSN. The first one after a gap gets a
 * PSN-sequence NAK naming epsn. While a NAK for epsn is outstanding (that
 * one, or an RNR NAK) the rest are dropped without an answer: the requester
 * goes back to epsn anyway, and a NAK for each of them would send it back
 * once per packet. */
static void sim_resp_out_of_sequence(smlx5_context_t *ctx, smlx5_qp_t *qp,
                                     sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    if (c->nak_outstanding) {
        qp->stats.reqs_discarded++;
        return;
    }
    c->nak_outstanding = true;
    sim_resp_ack(ctx, qp, pkt, SIM_AETH_NAK_PSN_SEQ, c->epsn);
}

void sim_resp_packet(smlx5_context_t *ctx, const sim_pkt_t *pkt,
                     const uint8_t *payload)
{
    smlx5_qp_t     *qp = sim_qp_lookup(ctx, pkt->dqpn);
    sim_resp_ctx_t *c;
    int32_t         d;
    bool            advance;
    uint8_t         nak;

    if (qp == NULL) {
        return; /* no such QP: silently dropped, the requester times out */
    }
    if (qp->type == SMLX5_QPT_DCT) {
        if ((qp->state != IBV_QPS_RTR) || (qp->dctn != pkt->dqpn) ||
            !(pkt->flags & SIM_PKT_F_DC) || (pkt->dc_key != qp->dc_key)) {
            return; /* wrong DC key: dropped */
        }
    } else if ((qp->type != SMLX5_QPT_RC) ||
               ((qp->state != IBV_QPS_RTR) && (qp->state != IBV_QPS_RTS) &&
                (qp->state != IBV_QPS_SQD))) {
        return;
    }
    c = sim_resp_ctx_get(qp, pkt);
    if (c == NULL) {
        return;
    }
    if (qp->type == SMLX5_QPT_DCT) {
        /* which context a new requester may take (an RC QP has one) */
        c->last_used_ns = sim_now_ns();
    }

    d = (int32_t)(pkt->psn - c->epsn);
    if (d < 0) {
        sim_resp_duplicate(ctx, qp, c, pkt);
        return;
    }
    if (c->errored) {
        return; /* after an error NAK: discard until a new connect */
    }
    if (d > 0) {
        sim_resp_out_of_sequence(ctx, qp, c, pkt);
        return;
    }
    c->nak_outstanding = false;

    switch (pkt->op) {
    case SIM_PKT_SEND_FIRST:
    case SIM_PKT_SEND_MIDDLE:
    case SIM_PKT_SEND_LAST:
    case SIM_PKT_SEND_ONLY:
        advance = sim_resp_send(ctx, qp, c, pkt, payload);
        break;
    case SIM_PKT_WRITE_FIRST:
    case SIM_PKT_WRITE_MIDDLE:
    case SIM_PKT_WRITE_LAST:
    case SIM_PKT_WRITE_ONLY:
        advance = sim_resp_write(ctx, qp, c, pkt, payload);
        break;
    case SIM_PKT_READ_REQ:
        nak = !(sim_resp_qp_access(qp) & IBV_ACCESS_REMOTE_READ) ?
                      SIM_AETH_NAK_ACCESS :
              (pkt->dma_len > 0) ?
                      sim_resp_rkey(ctx, qp, pkt, IBV_ACCESS_REMOTE_READ) :
                      0;
        if (nak != 0) {
            sim_resp_error(ctx, qp, c, pkt, nak);
            return;
        }
        sim_resp_read(ctx, qp, c, pkt, pkt->psn);
        c->epsn = pkt->psn + sim_pkt_read_npkts(pkt);
        return;
    case SIM_PKT_ATOMIC_REQ:
        if (sim_resp_atomic(ctx, qp, c, pkt)) {
            c->epsn = pkt->psn + 1;
        }
        return;
    default:
        return;
    }

    if (!advance) {
        return;
    }
    c->epsn = pkt->psn + 1;
    sim_resp_ack_later(ctx, qp, c, pkt);
}

/* Acknowledge now when asked to, else within SIM_ACK_DELAY_NS (coalesced
 * with what follows, as IB responders do). */
static void sim_resp_ack_later(smlx5_context_t *ctx, smlx5_qp_t *qp,
                               sim_resp_ctx_t *c, const sim_pkt_t *pkt)
{
    if (pkt->flags & SIM_PKT_F_ACKREQ) {
        if (c->ack_pending) {
            c->ack_pending = false;
            qp->acks_pending--;
        }
        sim_resp_ack(ctx, qp, pkt, SIM_AETH_ACK, pkt->psn);
        return;
    }
    c->ack_psn = pkt->psn;
    if (!c->ack_pending) {
        c->ack_pending = true;
        c->ack_due_ns  = sim_now_ns() + SIM_ACK_DELAY_NS;
        qp->acks_pending++;
        sim_qp_activate(qp);
        sim_timer_schedule(ctx, c->ack_due_ns);
    }
}

uint64_t sim_resp_ack_timers(smlx5_qp_t *qp, uint64_t now)
{
    uint64_t        next = 0;
    sim_resp_ctx_t *c;
    sim_pkt_t       req;
    unsigned        i;

    for (i = 0; (i < qp->num_resp) && (qp->acks_pending > 0); ++i) {
        c = &qp->resp[i];
        if (!c->ack_pending) {
            continue;
        }
        if (c->ack_due_ns > now) {
            next = (!next || (c->ack_due_ns < next)) ? c->ack_due_ns : next;
            continue;
        }
        /* the reply goes where the requests came from */
        memset(&req, 0, sizeof(req));
        req.slid = c->slid;
        req.sqpn = c->sqpn;
        req.chan = c->chan;
        sim_resp_ack(qp->ctx, qp, &req, SIM_AETH_ACK, c->ack_psn);
        c->ack_pending = false;
        qp->acks_pending--;
    }
    return next;
}
