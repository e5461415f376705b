/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine: one pass runs the stages below it, in order: inbound packets
 * to the responder or the completer (and, after each of the completer's,
 * the requesters it queued), QPs a full ring held back, the device's own
 * rendezvous work, and the timers. The stages never call each other
 * upwards; what one has for another waits here.
 */
#include "sim.h"
#include "sim_net.h"

#include <stdlib.h>
#include <string.h>

static bool sim_pkt_is_request(uint8_t op)
{
    return (op >= SIM_PKT_SEND_FIRST) && (op <= SIM_PKT_ATOMIC_REQ);
}

/* The requesters the completer handed work (sim_req_queue_add): go-back-N
 * passes it asked for, windows it opened. Run as soon as the completer is
 * done with a packet or a QP's timers, so a NIC's order holds: what an
 * ACK lets go leaves before the next packet is taken. */
static void sim_engine_requesters(smlx5_context_t *ctx)
{
    smlx5_qp_t *qp;

    while ((qp = sim_req_queue_take(ctx)) != NULL) {
        sim_req_process(qp);
    }
}

static void sim_engine_dispatch(smlx5_context_t *ctx, sim_pkt_t *pkt,
                                const uint8_t *payload)
{
    atomic_fetch_add_explicit(&ctx->rx_sl[pkt->sl & 0xf], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&ctx->rx_tclass[pkt->tclass], 1,
                              memory_order_relaxed);
    if (sim_pkt_is_request(pkt->op)) {
        sim_resp_packet(ctx, pkt, payload);
    } else {
        sim_comp_packet(ctx, pkt, payload);
        sim_engine_requesters(ctx);
    }
}

static void sim_engine_rx(void *arg, const void *data, size_t len)
{
    smlx5_context_t *ctx = arg;
    sim_pkt_t        pkt;
    size_t           hlen;

    if (len < SIM_PKT_HDR_BASE) {
        return; /* runt */
    }
    /* the header as a whole struct: absent parts read as zero (copies of
     * fixed sizes: this runs for every packet) */
    memset(&pkt, 0, sizeof(pkt));
    memcpy(&pkt, data, SIM_PKT_HDR_BASE);
    hlen = sim_pkt_hdr_len(&pkt);
    if ((len != hlen + pkt.payload_len) || (pkt.flags & SIM_PKT_F_CORRUPT)) {
        return; /* malformed, or failed ICRC: dropped like on a wire */
    }
    if (hlen == SIM_PKT_HDR_DC) {
        memcpy(&pkt.dc_key, (const uint8_t *)data + SIM_PKT_HDR_BASE,
               sizeof(pkt.dc_key));
    } else if (hlen == SIM_PKT_HDR_ATOMIC) {
        memcpy((uint8_t *)&pkt + SIM_PKT_HDR_BASE,
               (const uint8_t *)data + SIM_PKT_HDR_BASE,
               SIM_PKT_HDR_ATOMIC - SIM_PKT_HDR_BASE);
    }
    sim_engine_dispatch(ctx, &pkt, (const uint8_t *)data + hlen);
}

/* A packet from another host, decoded and checked by the wire. */
static void
sim_engine_rx_wire(void *arg, const sim_pkt_t *pkt, const void *payload)
{
    sim_pkt_t copy = *pkt; /* the callback's is the socket's */

    sim_engine_dispatch(arg, &copy, payload);
}

bool sim_timers_due(smlx5_context_t *ctx)
{
    uint64_t d = ctx->next_deadline_ns;

    return (ctx->delayed != NULL) || ((d != 0) && (sim_now_ns() >= d));
}

/* Nothing of the QP in flight: no WQE outstanding, no ACK owed, nothing
 * waiting for ring space, no timer armed. */
static bool sim_qp_idle(const smlx5_qp_t *qp)
{
    uint64_t m;
    int      i;

    if ((qp->sq_completed != qp->sq_fetched) ||
        (qp->req_bb != qp->sq_fetched) || (qp->acks_pending > 0) ||
        qp->tx_blocked || (qp->rjob_head != qp->rjob_tail)) {
        return false;
    }
    sim_for_each_flow(qp, i, m) {
        if (qp->flows[i].outstanding || qp->flows[i].deadline_ns) {
            return false;
        }
    }
    return true;
}

/* The timer stage: every QP with work in flight, its responder's
 * coalesced ACKs and its requester's flows; a QP with nothing left leaves
 * the list; the next deadline is what remains. */
static void sim_engine_timers(smlx5_context_t *ctx, uint64_t now)
{
    uint64_t    next = 0, m;
    unsigned    i    = 0;
    smlx5_qp_t *qp;
    int         f;

    while (i < ctx->num_active) {
        qp = ctx->active[i];
        if (qp->acks_pending > 0) {
            uint64_t d = sim_resp_ack_timers(qp, now);
            if (d && (!next || (d < next))) {
                next = d;
            }
        }
        if (((qp->state == IBV_QPS_RTS) || (qp->state == IBV_QPS_SQD)) &&
            (qp->sq_buf != NULL)) {
            sim_comp_qp_timers(qp, now); /* SQD: what started completes */
            sim_engine_requesters(ctx);
        }
        if (sim_qp_idle(qp) || (qp->state == IBV_QPS_ERR) ||
            (qp->state == IBV_QPS_RESET)) {
            qp->busy       = false;
            ctx->active[i] = ctx->active[--ctx->num_active];
            continue;
        }
        sim_for_each_flow(qp, f, m) {
            uint64_t d = qp->flows[f].deadline_ns;
            if (d && (!next || (d < next))) {
                next = d;
            }
        }
        ++i;
    }
    ctx->next_deadline_ns = next;
}

/* Senders that found a full ring try again (they set tx_backlog again
 * when the ring is still full). The first one resumed may fill the ring
 * again, so the pass starts one QP further each time: a NIC arbitrates its
 * send queues round robin, and a fixed order here starved the QPs listed
 * last whenever the receiver fell behind (one DCI of eight sent a third
 * of what the others did). */
static void sim_engine_resume(smlx5_context_t *ctx)
{
    unsigned    i, n = ctx->num_active;
    smlx5_qp_t *qp;

    ctx->tx_backlog = false;
    if (n == 0) {
        return;
    }
    ctx->resume_first = (ctx->resume_first + 1) % n;
    for (i = 0; (i < n) && (ctx->num_active > 0); ++i) {
        qp = ctx->active[(ctx->resume_first + i) % ctx->num_active];
        if (qp->rjob_head != qp->rjob_tail) {
            sim_resp_resume_reads(ctx, qp);
        }
        if (qp->tx_blocked) {
            sim_req_resume(qp);
        }
    }
}

/* One engine pass takes at most a ring's worth of packets. Handling them
 * sends more, and when both ends of a flow live in this process those come
 * back to the same ring: draining it "until empty" could go on for ever.
 * They wait for the next pass, so an inline pass (a doorbell, a CQ poll)
 * does a bounded amount of work; the progress thread and pollers come back
 * while packets are pending. */
#define SIM_ENGINE_RX_BUDGET SIM_FABRIC_RING_SIZE

/* A pass that handled packets looks at the clock only this often: such a
 * pass stands between a packet and whoever polls for what it brought, a
 * clock read costs as much as handling a small packet, and timers are
 * microseconds to milliseconds away. A pass that found nothing always
 * looks. */
#define SIM_ENGINE_TIMERS_EVERY 16

/* Timers may be due: nothing came in, or enough busy passes went by. */
static bool sim_engine_timers_check(smlx5_context_t *ctx, int count)
{
    return (count == 0) ||
           ((++ctx->busy_passes % SIM_ENGINE_TIMERS_EVERY) == 0);
}

static int sim_engine_pass(smlx5_context_t *ctx);

/* One pass; what it sends to other hosts leaves in batches at its end
 * (a window of packets in one system call, sim_udp.h) */
int sim_engine_progress(smlx5_context_t *ctx)
{
    int count;

    if (ctx->net == NULL) {
        return sim_engine_pass(ctx);
    }
    sim_net_batch_begin(ctx->net);
    count = sim_engine_pass(ctx);
    sim_net_batch_end(ctx->net);
    return count;
}

static int sim_engine_pass(smlx5_context_t *ctx)
{
    int count;

    if (ctx->req_head != NULL) {
        /* queued outside a pass: by a requester whose own WQE failed and
         * restarted its flow, which made the pass itself before it
         * returned (sim_req_process); only running it again is left */
        sim_engine_requesters(ctx);
    }
    count = (int)sim_fabric_recv(ctx->port, sim_engine_rx, ctx,
                                 SIM_ENGINE_RX_BUDGET);
    if (ctx->net != NULL) {
        count += (int)sim_net_recv(ctx->net, sim_engine_rx_wire, ctx,
                                   SIM_ENGINE_RX_BUDGET);
    }
    if (ctx->tx_backlog) {
        sim_engine_resume(ctx);
    }
    if (ctx->tm_work > 0) {
        sim_tm_engine(ctx); /* rendezvous READs and FINs to post */
    }

    if (sim_engine_timers_check(ctx, count) && sim_timers_due(ctx)) {
        uint64_t now = sim_now_ns();
        sim_fault_release(ctx, now);
        if (ctx->next_deadline_ns && (now >= ctx->next_deadline_ns)) {
            sim_engine_timers(ctx, now);
        }
        ++count;
    }
    return count;
}

void smlx5_rx_qos_counts(smlx5_context_t *ctx, uint64_t sl[16],
                         uint64_t tclass[256])
{
    unsigned i;

    for (i = 0; i < 16; ++i) {
        sl[i] = atomic_load(&ctx->rx_sl[i]);
    }
    for (i = 0; i < 256; ++i) {
        tclass[i] = atomic_load(&ctx->rx_tclass[i]);
    }
}
