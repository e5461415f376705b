/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: turns the WQEs of a send queue into packets.
 *
 * States of a WQE (sim_wqe_state_t): FREE (not parsed yet) -> SENT (its
 * packets are out; waiting for ACK or response) -> DONE (result known; the
 * completer writes its CQE in SQ order). WQEs are parsed one at a time, in SQ
 * order, up to the doorbell record; transmission of a long message stops
 * when the flow's window is full and resumes when ACKs open it.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "sim.h"
#include "sim_onecopy.h"
#include "sim_sig.h"
#include "sim_parse.h"

#include <errno.h>

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIM_WINDOW    64 /* packets in flight per flow */
#define SIM_ACK_EVERY 16 /* request an ACK every N packets */

/* ------------------------------------------------------------- flows */

static int
sim_flow_get(smlx5_qp_t *qp, uint16_t chan, uint16_t dlid, uint32_t dqpn)
{
    int      i, free_idx = -1;
    uint64_t m;

    if (qp->type == SMLX5_QPT_RC) {
        sim_flow_t *f = &qp->flows[0];
        if (!f->used) {
            f->used = true;
            qp->flows_used |= 1;
            f->dlid      = qp->dlid;
            f->dqpn      = qp->dest_qpn;
            f->start_psn = f->next_psn = f->una_psn = qp->sq_psn;
        }
        return 0;
    }

    sim_for_each_flow(qp, i, m) {
        sim_flow_t *f = &qp->flows[i];
        if ((f->chan == chan) && (f->dlid == dlid) && (f->dqpn == dqpn)) {
            return i;
        }
        if ((free_idx < 0) && (f->outstanding == 0)) {
            free_idx = i;
        }
    }
    if ((free_idx < 0) && (~qp->flows_used != 0)) {
        free_idx = __builtin_ctzll(~qp->flows_used); /* never used yet */
    }
    if (free_idx < 0) {
        return -1;
    }
    /* a DC connect: a fresh PSN range the responder has never seen */
    sim_flow_t *f = &qp->flows[free_idx];
    memset(f, 0, sizeof(*f));
    f->used = true;
    qp->flows_used |= 1ull << free_idx;
    qp->resend_flows &= ~(1ull << free_idx); /* asked of the old flow */
    f->chan      = chan;
    f->dlid      = dlid;
    f->dqpn      = dqpn;
    f->start_psn = f->next_psn = f->una_psn = qp->next_flow_psn;
    qp->next_flow_psn += 1u << 16;
    return free_idx;
}

static void sim_flow_arm_timer(smlx5_qp_t *qp, sim_flow_t *f)
{
    if (f->deadline_ns == 0) {
        f->deadline_ns = sim_now_ns() + sim_timeout_ns(qp);
        sim_timer_schedule(qp->ctx, f->deadline_ns);
    }
}

static bool sim_stream_errored(const smlx5_qp_t *qp, uint16_t stream)
{
    unsigned i;

    for (i = 0; i < qp->num_errored; ++i) {
        if (qp->errored_streams[i] == stream) {
            return true;
        }
    }
    return false;
}

/* --------------------------------------------------------- packets */

/* `len` bytes of the WQE's data from byte `off`: where they are when they
 * are in one piece (inline bytes that do not wrap around the end of the
 * SQ, a plain single SGE), else gathered into `buf`. */
static const uint8_t *sim_wqe_payload(smlx5_qp_t *qp, const sim_wqe_t *w,
                                      uint32_t off, uint32_t len, uint8_t *buf)
{
    uint32_t pos;

    if (w->is_inline) {
        pos = w->inline_off + off;
        if (pos + len <= qp->sq_wqe_cnt * 64u) {
            return qp->sq_buf + pos;
        }
    } else if ((w->num_sge == 1) && !w->via_mkey) {
        return (const uint8_t *)(uintptr_t)(w->sge[0].addr + off);
    }
    sim_wqe_gather(qp, w, off, buf, len);
    return buf;
}

static uint32_t sim_wqe_npkts(const smlx5_qp_t *qp, const sim_wqe_t *w)
{
    uint32_t n;

    if (sim_opcode_is_atomic(w->opcode) || w->onecopy) {
        return 1;
    }
    n = (w->length + qp->path_mtu - 1) / qp->path_mtu;
    return n ? n : 1;
}

/* Send the packet of WQE `w` with PSN `psn`. */
int sim_req_send_packet(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t psn, bool retry)
{
    sim_flow_t    *f = &qp->flows[w->flow];
    uint8_t        buf[4096];
    const uint8_t *payload = NULL;
    uint32_t       seg     = psn - w->first_psn;
    uint32_t       npkt    = w->last_psn - w->first_psn + 1;
    uint32_t       off     = seg * qp->path_mtu;
    uint32_t       len     = 0;
    bool           first, last;
    sim_pkt_t      pkt;
    int            ret;

    memset(&pkt, 0, sizeof(pkt));
    pkt.dqpn = f->dqpn;
    pkt.sqpn = qp->qpn;
    if (qp->type == SMLX5_QPT_DCI) {
        pkt.sl     = w->sl;
        pkt.tclass = w->tclass;
    } else {
        pkt.sl     = qp->path_sl;
        pkt.tclass = qp->path_tclass;
    }
    pkt.chan    = f->chan;
    pkt.psn     = psn;
    pkt.dc_key  = f->dc_key;
    pkt.va      = w->raddr;
    pkt.rkey    = w->rkey;
    pkt.dma_len = w->length;
    pkt.offset  = off;
    pkt.log_mtu = (uint8_t)__builtin_ctz(qp->path_mtu);
    pkt.flags   = retry ? SIM_PKT_F_RETRY : 0;
    if (qp->type == SMLX5_QPT_DCI) {
        pkt.flags |= SIM_PKT_F_DC;
        if (psn == f->start_psn) {
            pkt.flags |= SIM_PKT_F_CONNECT;
        }
    }
    first = (seg == 0);
    last  = (seg == npkt - 1);

    switch (w->opcode) {
    case MLX5_OPCODE_RDMA_READ:
        /* a retried READ asks for the rest only: from the first response
         * not received, at the matching address */
        pkt.op      = SIM_PKT_READ_REQ;
        pkt.va      = w->raddr + off;
        pkt.dma_len = w->length - off;
        pkt.offset  = 0;
        pkt.flags |= SIM_PKT_F_ACKREQ;
        pkt.xflags = w->onecopy ? SIM_PKT_X_ONECOPY : 0;
        break;
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
        pkt.op           = SIM_PKT_ATOMIC_REQ;
        pkt.atomic_op    = w->atomic_op;
        pkt.atomic_size  = w->atomic_size;
        pkt.swap_add     = w->swap_add;
        pkt.compare      = w->compare;
        pkt.swap_mask    = w->swap_mask;
        pkt.compare_mask = w->compare_mask;
        pkt.offset       = 0;
        pkt.flags |= SIM_PKT_F_ACKREQ;
        break;
    default:
        if (w->opcode == MLX5_OPCODE_RDMA_WRITE ||
            w->opcode == MLX5_OPCODE_RDMA_WRITE_IMM) {
            pkt.op = first ? (last ? SIM_PKT_WRITE_ONLY : SIM_PKT_WRITE_FIRST) :
                             (last ? SIM_PKT_WRITE_LAST : SIM_PKT_WRITE_MIDDLE);
        } else {
            pkt.op = first ? (last ? SIM_PKT_SEND_ONLY : SIM_PKT_SEND_FIRST) :
                             (last ? SIM_PKT_SEND_LAST : SIM_PKT_SEND_MIDDLE);
        }
        len = w->length - off;
        if (len > qp->path_mtu) {
            len = qp->path_mtu;
        }
        /* ACKs are coalesced (the responder acknowledges within
         * SIM_ACK_DELAY_NS anyway): ask for one at once where someone
         * waits for it: a signaled WQE, a retransmission, and every
         * SIM_ACK_EVERY packets so the window keeps moving */
        if ((last && (w->signaled || retry)) ||
            (++f->since_ackreq >= SIM_ACK_EVERY)) {
            pkt.flags |= SIM_PKT_F_ACKREQ;
            f->since_ackreq = 0;
        }
        if (last) {
            if ((w->opcode == MLX5_OPCODE_SEND_IMM) ||
                (w->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)) {
                pkt.flags |= SIM_PKT_F_IMM;
                pkt.imm = w->imm;
            } else if (w->opcode == MLX5_OPCODE_SEND_INVAL) {
                pkt.flags |= SIM_PKT_F_INV;
                pkt.imm = w->imm;
            }
            if (w->fm_ce_se & MLX5_WQE_CTRL_SOLICITED) {
                pkt.flags |= SIM_PKT_F_SE;
            }
        }
        if (w->onecopy) {
            /* the responder reads the data from here: the packet
             * carries where it is */
            pkt.xflags = SIM_PKT_X_ONECOPY;
            len        = (uint32_t)sim_onecopy_desc_pack(w, buf, sizeof(buf));
            payload    = buf;
        } else if (len > 0) {
            if (!sim_wqe_local_valid(qp, w)) {
                /* its memory was deregistered meanwhile (a retransmission
                 * reads it again): the device's DMA fails */
                return -EFAULT;
            }
            if (retry && !w->is_inline && !w->via_mkey) {
                if (sim_wqe_gather_checked(qp, w, off, buf, len) != 0) {
                    return -EFAULT;
                }
                payload = buf;
            } else {
                payload = sim_wqe_payload(qp, w, off, len, buf);
            }
        }
        break;
    }

    pkt.payload_len = (uint16_t)len;
    ret             = sim_send_pkt(qp->ctx, f->dlid, &pkt, payload, len);
    if (ret != -EAGAIN) {
        qp->stats.pkts_sent++;
        qp->stats.pkts_resent += retry;
    }
    sim_flow_arm_timer(qp, f);
    return ret;
}

/* ------------------------------------------------------ the SQ walk */

static void sim_req_fail_wqe(smlx5_qp_t *qp, sim_wqe_t *w, uint8_t syndrome)
{
    w->state  = SIM_WQE_DONE;
    w->status = syndrome;
    sim_comp_wqe_failed(qp, w);
}

/* A sent WQE whose local memory is no longer registered. */
static void sim_req_local_fault(smlx5_qp_t *qp, sim_wqe_t *w)
{
    w->status = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    sim_comp_wqe_failed(qp, w);
}

/* DCI (spec section 5): stream id n runs on channel n (ids outside the
 * channel range are refused at parse); the channels progress concurrently, the WQEs of one
 * channel in order, and a channel is connected to one DCT at a time (it
 * moves to another only when all it sent is complete). Returns the flow a
 * WQE of the channel may go on now, or -1 when it must wait: its channel
 * has work outstanding at another DCT, or is in an RNR back-off. */
static int sim_req_dci_flow(smlx5_qp_t *qp, const sim_wqe_t *w)
{
    unsigned          busy = qp->chan_flow[w->chan];
    const sim_flow_t *f;
    int               fi;

    if (busy != 0) {
        f = &qp->flows[busy - 1];
        if ((f->dlid != w->dlid) || (f->dqpn != w->dqpn)) {
            return -1;
        }
    }
    fi = sim_flow_get(qp, w->chan, w->dlid, w->dqpn);
    if ((fi < 0) || !sim_flow_may_send_new(&qp->flows[fi])) {
        return -1;
    }
    qp->flows[fi].dc_key = w->dc_key;
    return fi;
}

/* Too many READs / atomics in flight for one more. */
static bool sim_req_rd_atomic_full(const smlx5_qp_t *qp, const sim_wqe_t *w)
{
    return w->needs_response && (qp->rd_atomic_inflight >=
                                 (qp->max_rd_atomic ? qp->max_rd_atomic : 1));
}

/* The WQE goes on flow `fi` as `npkts` packets: it gets its PSNs and
 * becomes the one the transmitter works on. */
static void
sim_req_launch_on_flow(smlx5_qp_t *qp, sim_wqe_t *w, int fi, uint32_t npkts)
{
    sim_flow_t *f = &qp->flows[fi];

    w->flow      = fi;
    w->first_psn = f->next_psn;
    w->last_psn  = f->next_psn + npkts - 1;
    f->next_psn += npkts;
    if (f->outstanding++ == 0) {
        qp->chan_flow[f->chan] = fi + 1;
    }
    if (w->needs_response) {
        qp->rd_atomic_inflight++;
    }
    w->state    = SIM_WQE_SENT;
    qp->req_bb  = w->bb;
    qp->req_psn = w->first_psn;
}

/* The WQE goes on flow `fi`: how its data moves (one copy, through an
 * mkey, into the CQE), then its PSNs. */
static void sim_req_launch(smlx5_qp_t *qp, sim_wqe_t *w, int fi)
{
    w->onecopy = sim_onecopy_wanted(qp, w);
    if (w->via_mkey) {
        sim_sig_rx_start(&w->sig_rx, w->sge[0].addr);
    }
    /* cs_req: a signaled READ / atomic whose data fits the CQE (an
     * unsignaled one has no CQE to carry it) */
    w->to_cqe = w->needs_response && w->signaled && (w->length > 0) &&
                (w->length <= qp->cs_req) && !w->via_mkey;
    sim_req_launch_on_flow(qp, w, fi, sim_wqe_npkts(qp, w));
}

/* A deferred WQE whose channel is free now goes; the first deferred WQE
 * of each channel is the only candidate of that channel. Returns true
 * when one was launched. */
static bool sim_req_launch_deferred(smlx5_qp_t *qp)
{
    uint64_t   seen = 0, bit;
    uint32_t   bb;
    sim_wqe_t *w;
    int        fi;

    for (bb = qp->sq_completed;
         (bb != qp->sq_fetched) && (qp->num_deferred > 0); bb += w->bbs) {
        w = &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
        if (w->state != SIM_WQE_DEFERRED) {
            continue;
        }
        bit = 1ull << w->chan; /* < SIM_DCI_MAX_CHANNELS */
        if (seen & bit) {
            continue;
        }
        seen |= bit;
        if (sim_req_rd_atomic_full(qp, w)) {
            continue;
        }
        fi = sim_req_dci_flow(qp, w);
        if (fi >= 0) {
            qp->num_deferred--;
            sim_req_launch(qp, w, fi);
            return true;
        }
    }
    return false;
}

/* A deferred WQE of this channel is waiting: later ones wait behind it. */
static bool sim_req_chan_has_deferred(const smlx5_qp_t *qp, uint16_t chan)
{
    const sim_wqe_t *w;
    uint32_t         bb;

    if (qp->num_deferred == 0) {
        return false;
    }
    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
        w = &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
        if ((w->state == SIM_WQE_DEFERRED) && (w->chan == chan)) {
            return true;
        }
    }
    return false;
}

/* A WQE whose fence a signature-pipelining SQ stops before: fence (0x40),
 * strong ordering (0x60) or small-and-fence (0x80, IBV_SEND_FENCE); the
 * initiator small fence (0x20) orders local operations only. */
static bool sim_wqe_fence_point(const sim_wqe_t *w)
{
    return (w->fm_ce_se & 0xe0) >= 0x40;
}

/* Parse the next WQE. Returns true when the walk may go on. */
static bool sim_req_fetch(smlx5_qp_t *qp)
{
    uint32_t          bb = qp->sq_fetched;
    sim_wqe_t        *w  = &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
    smlx5_dc_target_t dc = {0};
    bool              dci_work;
    int               fi = 0;
    int               ret;

    /* parsed into its slot right away (no copy of the whole record): the
     * slot at sq_fetched is free, and stays so while the WQE waits */
    ret = sim_parse_wqe(qp, bb, w, &dc);

    if (qp->sig_stop && sim_wqe_fence_point(w)) {
        /* signature pipelining (seed page
         * mlx5dv_qp_cancel_posted_send_wrs.3): a transfer failed its check;
         * the SQ stops before this fenced WQE, which stays posted */
        qp->state      = IBV_QPS_SQD;
        qp->sqd_notify = true;
        return false;
    }

    if (ret == 0 && w->opcode != MLX5_OPCODE_NOP) {
        /* ordering constraints: wait without consuming the WQE */
        if ((w->fm_ce_se & 0xe0) == 0x60) { /* strong order */
            if (qp->sq_completed != qp->sq_fetched) {
                return false;
            }
        } else if (w->fenced && (qp->rd_atomic_inflight > 0)) {
            return false;
        }
        if (sim_req_rd_atomic_full(qp, w)) {
            return false;
        }
    }
    dci_work = (ret == 0) && (qp->type == SMLX5_QPT_DCI) &&
               (w->opcode != MLX5_OPCODE_NOP) &&
               !sim_stream_errored(qp, w->stream);
    if (dci_work) {
        w->chan   = w->stream;
        w->dlid   = dc.dlid;
        w->dqpn   = dc.dctn;
        w->dc_key = dc.dc_key;
        fi        = sim_req_chan_has_deferred(qp, w->chan) ? -1 :
                                                             sim_req_dci_flow(qp, w);
    } else if ((ret == 0) && (qp->type == SMLX5_QPT_RC)) {
        fi = sim_flow_get(qp, 0, 0, 0);
    }

    qp->sq_fetched += w->bbs;
    sim_qp_activate(qp);
    /* nothing of a NOP, a flushed or a failed WQE goes on the wire: the
     * transmitter moves past it (a transmitting WQE sets req_bb below) */
    qp->req_bb = qp->sq_fetched;

    if (ret != 0) {
        sim_req_fail_wqe(qp, w, ret);
        return qp->state == IBV_QPS_RTS;
    }
    if (w->opcode == MLX5_OPCODE_NOP) {
        w->state = SIM_WQE_DONE;
        return true;
    }
    if ((qp->type == SMLX5_QPT_DCI) && sim_stream_errored(qp, w->stream)) {
        w->state  = SIM_WQE_DONE;
        w->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
        return true;
    }
    if (fi < 0) {
        /* its channel is busy: other channels' work goes on meanwhile */
        w->state = SIM_WQE_DEFERRED;
        qp->num_deferred++;
        return true;
    }
    sim_req_launch(qp, w, fi);
    return true;
}

/* ------------------------------------------------------ the fast path */

/*
 * A single-packet inline WRITE or SEND (WRITE_IMM, SEND_IMM, SEND_INVAL
 * too) on an RC QP or a DCI skips the general parse and launch: it is read
 * straight into the head of its record (sim_wqe_t: no atomic operands,
 * scatter list or mkey state to clear or compute; a DCI's target from its
 * AV) and goes as one packet on the QP's one flow (RC) or its channel's
 * flow to that DCT (DCI: when the channel may send there now; a failed
 * stream, a channel with deferred WQEs or busy at another DCT take the
 * general way, which flushes or defers). Everything after that is the general machinery, so
 * nothing of its meaning changes: it is fetched in SQ order by the same
 * walk (sim_req_process), only when the WQE at the head of the SQ is one
 * (it never passes a WQE that waits, e.g. a READ over max_rd_atomic or a
 * fenced WQE: that one is at the head and is not fast), it is transmitted,
 * acknowledged, retransmitted and completed as any other (its bytes stay in
 * the SQ, where go-back-N finds them), and its packet goes through fault
 * injection. A WQE the fast path does not take (any other opcode, a fence,
 * a data segment, more than one packet) or cannot read (malformed: it fails
 * in the general parse) goes the general way.
 */

static bool sim_opcode_is_fast(uint8_t op)
{
    switch (op) {
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM:
    case MLX5_OPCODE_SEND_INVAL:
        return true;
    default:
        return false;
    }
}

static bool sim_opcode_is_write(uint8_t op)
{
    return (op == MLX5_OPCODE_RDMA_WRITE) || (op == MLX5_OPCODE_RDMA_WRITE_IMM);
}

/* Reads the WQE at BB `bb` into the head of `w` (and a DCI's target into
 * the DCI part) when the fast path takes it; false leaves it to
 * sim_parse_wqe, which starts over. */
static bool sim_parse_fast(const smlx5_qp_t *qp, uint32_t bb, sim_wqe_t *w)
{
    const struct mlx5_wqe_av *av;
    uint32_t                  ds, unit = 1;

    memset(w, 0, SIM_WQE_HEAD_SIZE);
    if ((sim_parse_ctrl(qp, bb, w, &ds) != 0) || w->fenced ||
        !sim_opcode_is_fast(w->opcode)) {
        return false;
    }
    if (qp->type == SMLX5_QPT_DCI) {
        if (ds <= 1) {
            return false;
        }
        av        = sim_sq_unit(qp, bb, 1);
        w->dc_key = be64toh(av->key.dc_key);
        w->dqpn   = be32toh(av->dqp_dct) & 0xffffff;
        w->dlid   = sim_av_route(qp->ctx, av);
        sim_av_qos(qp->ctx, av, &w->sl, &w->tclass);
        unit += (be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) ? 3 : 1;
    }
    if (sim_opcode_is_write(w->opcode)) {
        if (unit >= ds) {
            return false;
        }
        sim_parse_raddr(qp, w, unit++);
    }
    return (unit < ds) && sim_unit_is_inline(qp, bb, unit) &&
           (sim_parse_inline(qp, w, unit, ds, 0) == 0) &&
           (w->length <= qp->path_mtu);
}

/* Take the WQE at the head of the SQ the fast way if it is one (see
 * above). Returns true when it was fetched and launched. */
static bool sim_req_fetch_fast(smlx5_qp_t *qp)
{
    uint32_t   bb = qp->sq_fetched;
    sim_wqe_t *w  = &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
    int        fi;

    if (!qp->ctx->cfg.fastpath ||
        ((qp->type != SMLX5_QPT_RC) && (qp->type != SMLX5_QPT_DCI)) ||
        !sim_parse_fast(qp, bb, w)) {
        return false;
    }
    if (qp->type == SMLX5_QPT_DCI) {
        /* a failed stream's WQE is flushed, a channel's WQE waits behind
         * the channel's deferred ones or while the channel is busy at
         * another DCT: the general way does each */
        if (sim_stream_errored(qp, w->stream)) {
            return false;
        }
        w->chan = w->stream;
        if (sim_req_chan_has_deferred(qp, w->chan)) {
            return false;
        }
        fi = sim_req_dci_flow(qp, w);
        if (fi < 0) {
            return false;
        }
    } else {
        fi = sim_flow_get(qp, 0, 0, 0);
    }
    qp->sq_fetched += w->bbs;
    sim_qp_activate(qp);
    sim_req_launch_on_flow(qp, w, fi, 1);
    qp->stats.fast_wqes++;
    return true;
}

/* The peer's ring is full: stop here, the engine retries this QP. */
static bool sim_req_blocked(smlx5_qp_t *qp)
{
    qp->tx_blocked      = true;
    qp->ctx->tx_backlog = true;
    return false;
}

/* Transmit what the window allows of the WQE at req_bb. Returns true when
 * the WQE is fully sent. */
static bool sim_req_transmit(smlx5_qp_t *qp)
{
    sim_wqe_t  *w = &qp->wqes[qp->req_bb & (qp->sq_wqe_cnt - 1)];
    sim_flow_t *f = &qp->flows[w->flow];
    int         ret;

    if (!sim_flow_may_send_new(f)) {
        return false; /* the RNR timer or its retry goes on from here */
    }
    if (w->needs_response) {
        if (sim_req_send_packet(qp, w, w->first_psn, false) == -EAGAIN) {
            return sim_req_blocked(qp);
        }
        qp->req_bb = qp->sq_fetched;
        return true;
    }
    while ((int32_t)(qp->req_psn - w->last_psn) <= 0) {
        if ((int32_t)(qp->req_psn - f->una_psn) >= SIM_WINDOW) {
            return false;
        }
        ret = sim_req_send_packet(qp, w, qp->req_psn, false);
        if (ret == -EAGAIN) {
            return sim_req_blocked(qp);
        } else if (ret == -EFAULT) {
            qp->req_bb = qp->sq_fetched;
            sim_req_local_fault(qp, w);
            return true;
        }
        qp->req_psn++;
    }
    qp->req_bb = qp->sq_fetched;
    return true;
}

/* The go-back-N passes the completer asked for (qp->resend_flows), in
 * flow order. A pass that fails a WQE restarts its flow, which asks
 * again: the loop takes that too. */
static void sim_req_resend(smlx5_qp_t *qp)
{
    int fi;

    while (qp->resend_flows != 0) {
        fi = __builtin_ctzll(qp->resend_flows);
        qp->resend_flows &= ~(1ull << fi);
        sim_req_retransmit(qp, fi, qp->flows[fi].resend_psn);
    }
}

void sim_req_process(smlx5_qp_t *qp)
{
    uint32_t db, end;

    if (qp->sq_buf == NULL) {
        return;
    }
    if (qp->tm_cmd != NULL) {
        /* a tag-matching SRQ's list operations */
        if (!sim_tm_cmd_process(qp)) {
            sim_qp_to_err(qp, IBV_EVENT_QP_FATAL);
        }
        return;
    }
    db  = __atomic_load_n(&qp->db_pi, __ATOMIC_ACQUIRE);
    end = qp->sq_fetched + (uint16_t)(db - qp->sq_fetched);

    if (qp->resend_flows != 0) {
        sim_req_resend(qp); /* before anything new (also in SQD) */
    }
    switch (qp->state) {
    case IBV_QPS_ERR:
        sim_comp_flush_posted(qp); /* the completer's: nothing executes */
        return;
    case IBV_QPS_RTS:
        break;
    default:
        return; /* RESET/INIT/RTR: nothing executes; SQD: drained */
    }

    for (;;) {
        if (qp->resend_flows != 0) {
            sim_req_resend(qp); /* a WQE failed and restarted its flow */
        }
        if (qp->req_bb != qp->sq_fetched) {
            if (!sim_req_transmit(qp)) {
                break;
            }
            continue;
        }
        if (qp->state != IBV_QPS_RTS) {
            break;
        }
        if ((qp->num_deferred > 0) && sim_req_launch_deferred(qp)) {
            continue;
        }
        if (qp->sq_fetched == end) {
            break;
        }
        if (sim_req_fetch_fast(qp)) {
            continue;
        }
        if (!sim_req_fetch(qp)) {
            break;
        }
    }
    if (qp->resend_flows != 0) {
        sim_req_resend(qp);
    }
    sim_comp_retire(qp);
}

/* Go back N: resend every packet of flow `fi` from `from_psn` on. */
void sim_req_retransmit(smlx5_qp_t *qp, int fi, uint32_t from_psn)
{
    sim_flow_t *f = &qp->flows[fi];
    uint32_t    bb, psn, stop;
    sim_wqe_t  *w;
    int         ret;

    if (f->rnr_state == SIM_RNR_WAITING) {
        return; /* the RNR timer resends, once, when it expires */
    }
    for (bb = qp->sq_completed; bb != qp->sq_fetched; bb += w->bbs) {
        w = &qp->wqes[bb & (qp->sq_wqe_cnt - 1)];
        if ((w->state != SIM_WQE_SENT) || (w->flow != fi) ||
            ((int32_t)(w->last_psn - from_psn) < 0)) {
            continue;
        }
        psn = ((int32_t)(w->first_psn - from_psn) > 0) ? w->first_psn :
                                                         from_psn;
        /* READ/atomic: one request for what is missing */
        stop = w->needs_response  ? psn + 1 :
               (bb == qp->req_bb) ? qp->req_psn :
                                    w->last_psn + 1;
        for (; (int32_t)(psn - stop) < 0; ++psn) {
            ret = sim_req_send_packet(qp, w, psn, true);
            if (ret == -EFAULT) {
                sim_req_local_fault(qp, w);
                return; /* the flow restarted, or the QP is in ERR */
            }
            if (ret == -EAGAIN) {
                /* the peer's ring is full: go on from here later */
                f->rexmit_pending = true;
                f->rexmit_psn     = psn;
                sim_req_blocked(qp);
                goto out;
            }
        }
    }
out:
    f->deadline_ns = 0;
    sim_flow_arm_timer(qp, f);
}

/* Retransmissions and new packets a full ring held back. */
void sim_req_resume(smlx5_qp_t *qp)
{
    sim_flow_t *f;
    uint64_t    m;
    int         i;

    qp->tx_blocked = false;
    sim_for_each_flow(qp, i, m) {
        f = &qp->flows[i];
        if (f->rexmit_pending) {
            f->rexmit_pending = false;
            sim_req_retransmit(qp, i, f->rexmit_psn);
        }
    }
    sim_req_process(qp);
}
