/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection, configured by STRAND_SIM_FAULTS, a comma-separated list:
 *   drop=P        drop a fraction P (0..1) of outbound packets
 *   dup=P         send a fraction P twice
 *   corrupt=P     damage a fraction P (the receiver's ICRC check drops them)
 *   delay=P:NS    hold a fraction P back for NS nanoseconds (reordering)
 *   fail_rkey=K   remote accesses with rkey K fail (REM_ACCESS_ERR)
 *   sdc=P         silent data corruption: in a fraction P of the 512-byte
 *                 blocks of RDMA data (READ responses, WRITE payloads, the
 *                 data of one-copy transfers) one bit flips where the link
 *                 CRC does not see it: only a block signature can
 *   sdc_read=P    the same for the data of READs only (what the
 *                 transport's integrity checks protect)
 *   cut=LID       no packet reaches or leaves LID
 *   seed=N        random seed (runs are repeatable per process; a seed
 *                 given to smlx5_set_faults starts the draws anew)
 * Retransmission hides drops, duplicates, corruption and delays until the
 * retry count runs out.
 */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t sim_ppm(const char *v)
{
    double p = strtod(v, NULL);

    if (p < 0) {
        p = 0;
    } else if (p > 1) {
        p = 1;
    }
    return (uint32_t)(p * 1000000.0 + 0.5);
}

/* Parse `spec` into the fault fields of `cfg`; 0 or EINVAL. */
static int sim_fault_parse(const char *spec, sim_config_t *cfg)
{
    char *copy, *tok, *save = NULL, *val, *colon, *end;
    int   ret = 0;

    cfg->drop_ppm = cfg->dup_ppm = cfg->corrupt_ppm = cfg->delay_ppm = 0;
    cfg->delay_ns                                                    = 0;
    cfg->fail_rkey                                                   = 0;
    cfg->cut_lid                                                     = 0;
    cfg->sdc_ppm = cfg->sdc_read_ppm = 0;
    if ((spec == NULL) || (*spec == '\0')) {
        return 0;
    }
    copy = strdup(spec);
    if (copy == NULL) {
        return ENOMEM;
    }
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        val = strchr(tok, '=');
        if (val == NULL) {
            fprintf(stderr, "smlx5: faults: '%s' has no value\n", tok);
            ret = EINVAL;
            continue;
        }
        *val++ = '\0';
        if (!strcmp(tok, "drop")) {
            cfg->drop_ppm = sim_ppm(val);
        } else if (!strcmp(tok, "dup")) {
            cfg->dup_ppm = sim_ppm(val);
        } else if (!strcmp(tok, "corrupt")) {
            cfg->corrupt_ppm = sim_ppm(val);
        } else if (!strcmp(tok, "delay")) {
            colon          = strchr(val, ':');
            cfg->delay_ppm = sim_ppm(val);
            cfg->delay_ns  = colon ? strtoull(colon + 1, NULL, 0) : 100000;
        } else if (!strcmp(tok, "sdc")) {
            cfg->sdc_ppm = sim_ppm(val);
        } else if (!strcmp(tok, "sdc_read")) {
            cfg->sdc_read_ppm = sim_ppm(val);
        } else if (!strcmp(tok, "fail_rkey")) {
            cfg->fail_rkey = (uint32_t)strtoul(val, &end, 0);
        } else if (!strcmp(tok, "cut")) {
            cfg->cut_lid = (uint16_t)strtoul(val, &end, 0);
        } else if (!strcmp(tok, "seed")) {
            cfg->seed = strtoull(val, NULL, 0);
        } else {
            fprintf(stderr, "smlx5: faults: unknown fault '%s'\n", tok);
            ret = EINVAL;
        }
    }
    free(copy);
    return ret;
}

void sim_fault_config_read(sim_config_t *cfg)
{
    sim_fault_parse(getenv("STRAND_SIM_FAULTS"), cfg);
}

void sim_fault_seed(smlx5_context_t *ctx)
{
    /* with a seed, runs draw the same faults (per LID) */
    ctx->rng = ctx->cfg.seed ?
                       (ctx->cfg.seed * 0x9e3779b97f4a7c15ull) ^ ctx->lid :
                       sim_now_ns() ^ ((uint64_t)getpid() << 32);
    ctx->rng = ctx->rng ? ctx->rng : 1; /* xorshift's state is never 0 */
}

int smlx5_set_faults(smlx5_context_t *ctx, const char *spec)
{
    sim_config_t cfg;
    int          ret;

    pthread_mutex_lock(&ctx->lock);
    cfg = ctx->cfg;
    ret = sim_fault_parse(spec, &cfg);
    if (ret == 0) {
        ctx->cfg = cfg;
        if (cfg.seed != 0) {
            /* seed=N here too starts the sequence anew: a test that sets
             * faults with a seed draws the same ones every run (before,
             * only the seed at open counted, and sim_sig's sdc test drew
             * from the clock: no damage in 32 blocks at 0.2, 1 run in
             * about 600) */
            sim_fault_seed(ctx);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return ret;
}

bool sim_fault_active(const smlx5_context_t *ctx)
{
    const sim_config_t *c = &ctx->cfg;

    return c->drop_ppm || c->dup_ppm || c->corrupt_ppm || c->delay_ppm ||
           c->cut_lid || c->sdc_ppm || c->sdc_read_ppm;
}

bool sim_fault_rkey(smlx5_context_t *ctx, uint32_t rkey)
{
    return (ctx->cfg.fail_rkey != 0) && (ctx->cfg.fail_rkey == rkey);
}

static uint32_t sim_rand_ppm(smlx5_context_t *ctx)
{
    /* xorshift64* */
    uint64_t x = ctx->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ctx->rng = x;
    return (uint32_t)(((x * 0x2545F4914F6CDD1Dull) >> 32) % 1000000u);
}

#define SIM_SDC_BLOCK 512
/* a delayed packet that met a full ring tries again this much later */
#define SIM_FAULT_RETRY_NS 10000

void sim_fault_sdc(smlx5_context_t *ctx, uint8_t *data, size_t len, bool read)
{
    uint32_t ppm = ctx->cfg.sdc_ppm + (read ? ctx->cfg.sdc_read_ppm : 0);
    size_t   off, n;
    uint32_t bit;

    if (ppm == 0) {
        return;
    }
    for (off = 0; off < len; off += SIM_SDC_BLOCK) {
        if (sim_rand_ppm(ctx) >= ppm) {
            continue;
        }
        n   = (len - off < SIM_SDC_BLOCK) ? len - off : SIM_SDC_BLOCK;
        bit = sim_rand_ppm(ctx) % (uint32_t)(n * 8);
        data[off + bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

/* Packets whose payload is RDMA data (not a one-copy descriptor). */
static bool sim_fault_rdma_data(const sim_pkt_t *pkt)
{
    if (pkt->xflags & SIM_PKT_X_ONECOPY) {
        return false;
    }
    switch (pkt->op) {
    case SIM_PKT_WRITE_FIRST:
    case SIM_PKT_WRITE_MIDDLE:
    case SIM_PKT_WRITE_LAST:
    case SIM_PKT_WRITE_ONLY:
    case SIM_PKT_READ_RESP:
        return true;
    default:
        return false;
    }
}

static int sim_fault_wire(smlx5_context_t *ctx, uint16_t dlid,
                          const sim_pkt_t *pkt, size_t len)
{
    (void)len; /* the header says it (payload_len) */
    return sim_route_send(ctx, dlid, pkt,
                          (const uint8_t *)pkt + sim_pkt_hdr_len(pkt));
}

/* What the stages send: through fault injection when faults are
 * configured, else straight to its route. */
int sim_send_pkt(smlx5_context_t *ctx, uint16_t dlid, sim_pkt_t *hdr,
                 const void *payload, size_t len)
{
    hdr->slid        = ctx->lid;
    hdr->payload_len = (uint16_t)len;
    if (sim_fault_active(ctx)) {
        return sim_fault_send(ctx, dlid, hdr, payload, len);
    }
    return sim_route_send(ctx, dlid, hdr, payload);
}

int sim_fault_send(smlx5_context_t *ctx, uint16_t dlid, sim_pkt_t *hdr,
                   const void *payload, size_t len)
{
    const sim_config_t *c = &ctx->cfg;
    uint8_t             buf[sizeof(sim_pkt_t) + 4096];
    sim_delayed_t      *d, **pp;
    size_t              hlen  = sim_pkt_hdr_len(hdr);
    size_t              total = hlen + len;
    int                 ret;

    if (c->cut_lid && ((dlid == c->cut_lid) || (ctx->lid == c->cut_lid))) {
        return 0;
    }
    if (c->drop_ppm && (sim_rand_ppm(ctx) < c->drop_ppm)) {
        return 0;
    }
    memcpy(buf, hdr, hlen);
    if (len) {
        memcpy(buf + hlen, payload, len);
        if (sim_fault_rdma_data(hdr)) {
            sim_fault_sdc(ctx, buf + hlen, len, hdr->op == SIM_PKT_READ_RESP);
        }
    }
    if (c->corrupt_ppm && (sim_rand_ppm(ctx) < c->corrupt_ppm)) {
        ((sim_pkt_t *)buf)->flags |= SIM_PKT_F_CORRUPT;
    }
    if (c->delay_ppm && (sim_rand_ppm(ctx) < c->delay_ppm)) {
        d = malloc(sizeof(*d) + total);
        if (d == NULL) {
            return 0;
        }
        d->due_ns = sim_now_ns() + c->delay_ns;
        d->dlid   = dlid;
        d->len    = total;
        d->next   = NULL;
        memcpy(d->data, buf, total);
        for (pp = &ctx->delayed; *pp != NULL; pp = &(*pp)->next) {
        }
        *pp = d;
        sim_timer_schedule(ctx, d->due_ns);
        return 0;
    }
    /* a full ring is the link's back-pressure, not a fault: the sender
     * hears -EAGAIN and sends again later, as without fault injection
     * (an InfiniBand link is lossless: only the faults asked for lose
     * packets) */
    ret = sim_fault_wire(ctx, dlid, (const sim_pkt_t *)buf, total);
    if ((ret == 0) && c->dup_ppm && (sim_rand_ppm(ctx) < c->dup_ppm)) {
        sim_fault_wire(ctx, dlid, (const sim_pkt_t *)buf, total);
    }
    return ret;
}

void sim_fault_release(smlx5_context_t *ctx, uint64_t now)
{
    sim_delayed_t *d;

    while ((ctx->delayed != NULL) && (ctx->delayed->due_ns <= now)) {
        d = ctx->delayed;
        if (sim_fault_wire(ctx, d->dlid, (const sim_pkt_t *)d->data, d->len) ==
            -EAGAIN) {
            /* the ring is full: it waits its turn (no loss) */
            d->due_ns = now + SIM_FAULT_RETRY_NS;
            break;
        }
        ctx->delayed = d->next;
        free(d);
    }
    if (ctx->delayed != NULL) {
        sim_timer_schedule(ctx, ctx->delayed->due_ns);
    }
}

void sim_fault_cleanup(smlx5_context_t *ctx)
{
    sim_delayed_t *d;

    while ((d = ctx->delayed) != NULL) {
        ctx->delayed = d->next;
        free(d);
    }
}
