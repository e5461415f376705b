/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a message costs on the software device, for the transport's
 * estimates (smlx5_query_perf): measured once per process on a private
 * fabric (the same ring code real traffic takes), or given by
 * STRAND_SIM_PERF for runs that must not depend on the host.
 *
 * The calibration (a few ms) opens two ports on a fabric of its own, so
 * that no other process sees it, and measures
 *  - the cost of putting a small packet into a port's ring and of taking
 *    it out, single-threaded: a message is a packet out and its
 *    acknowledgment in at the sender, the reverse at the receiver;
 *  - the one-way latency: a ping-pong between this thread and an echo
 *    thread, half the round trip (a low percentile: the other core may be
 *    busy);
 *  - the bandwidth: MTU-sized packets copied into the ring from a buffer,
 *    and out of it into another; the sender's copy and the receiver's run
 *    in two processes at once, so the slower of the two is the rate.
 * The device's own work on top of the ring (parsing WQEs, checking keys,
 * writing CQEs) is not in these figures.
 */
#define _GNU_SOURCE
#include "sim.h"
#include "sim_clock.h"
#include "sim_net.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* When STRAND_SIM_PERF leaves a key out, and when the calibration cannot
 * run: about what the calibration finds on a current x86 host. */
#define SIM_PERF_DFLT_LATENCY_NS  300.0
#define SIM_PERF_DFLT_BW_MBS      20000.0
#define SIM_PERF_DFLT_OVERHEAD_NS 60.0

#define SIM_PERF_BATCH          128 /* packets per timed batch (< ring) */
#define SIM_PERF_ROUNDS         5   /* best of */
#define SIM_PERF_SMALL          64  /* bytes: a header-only packet */
#define SIM_PERF_PINGS          256 /* round trips at most */
#define SIM_PERF_PING_MIN       16  /* round trips at least */
#define SIM_PERF_PING_BUDGET_NS 60000000ull /* for all of them */
#define SIM_PERF_PING_WAIT_NS \
    2000000ull /* a longer one waited for
                  the scheduler */

/* ------------------------------------------------------- STRAND_SIM_PERF */

static const struct {
    const char *name;
    double      min, max;
    size_t      offset;
} sim_perf_keys[] = {
        {"latency_ns", 1, 1e9, offsetof(sim_perf_cfg_t, latency_ns)},
        {"bw_mbs", 1, 1e9, offsetof(sim_perf_cfg_t, bw_mbs)},
        {"overhead_ns", 0, 1e9, offsetof(sim_perf_cfg_t, overhead_ns)},
        {"recv_overhead_ns", 0, 1e9,
         offsetof(sim_perf_cfg_t, recv_overhead_ns)},
};

#define SIM_PERF_NUM_KEYS (sizeof(sim_perf_keys) / sizeof(sim_perf_keys[0]))

static int sim_perf_parse_one(sim_perf_cfg_t *perf, char *tok)
{
    char    *val = strchr(tok, '='), *end;
    unsigned k;
    double   v;

    if (val != NULL) {
        *val++ = '\0';
    }
    for (k = 0; k < SIM_PERF_NUM_KEYS; ++k) {
        if (!strcmp(tok, sim_perf_keys[k].name)) {
            break;
        }
    }
    if (k == SIM_PERF_NUM_KEYS) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_PERF: unknown key '%s' (known: "
                "latency_ns, bw_mbs, overhead_ns, recv_overhead_ns)\n",
                tok);
        return EINVAL;
    }
    v = ((val != NULL) && (*val != '\0')) ? strtod(val, &end) : NAN;
    if ((val == NULL) || (*val == '\0') || (*end != '\0') || !isfinite(v) ||
        (v < sim_perf_keys[k].min) || (v > sim_perf_keys[k].max)) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_PERF: %s='%s': a number from "
                "%g to %g\n",
                tok, (val != NULL) ? val : "", sim_perf_keys[k].min,
                sim_perf_keys[k].max);
        return EINVAL;
    }
    *(double *)((char *)perf + sim_perf_keys[k].offset) = v;
    return 0;
}

int sim_perf_config_read(sim_config_t *cfg)
{
    const char     *spec = getenv("STRAND_SIM_PERF");
    sim_perf_cfg_t *perf = &cfg->perf;
    char           *copy, *tok, *save = NULL;
    int             ret = 0;

    memset(perf, 0, sizeof(*perf));
    if ((spec == NULL) || (*spec == '\0')) {
        return 0;
    }
    perf->set              = true;
    perf->latency_ns       = SIM_PERF_DFLT_LATENCY_NS;
    perf->bw_mbs           = SIM_PERF_DFLT_BW_MBS;
    perf->overhead_ns      = SIM_PERF_DFLT_OVERHEAD_NS;
    perf->recv_overhead_ns = SIM_PERF_DFLT_OVERHEAD_NS;
    copy                   = strdup(spec);
    if (copy == NULL) {
        return ENOMEM;
    }
    for (tok = strtok_r(copy, ",", &save); (tok != NULL) && (ret == 0);
         tok = strtok_r(NULL, ",", &save)) {
        ret = sim_perf_parse_one(perf, tok);
    }
    free(copy);
    return ret;
}

/* ----------------------------------------------------------- calibration */

typedef struct sim_perf_net {
    sim_fabric_t *fab;
    sim_port_t   *a, *b;
    uint16_t      lid_a, lid_b;
    uint8_t      *src, *dst;
    size_t        dst_off;
    uint32_t      mtu;
    _Atomic int   stop;
} sim_perf_net_t;

static inline void sim_perf_relax(unsigned *spins)
{
    if ((++*spins & 63) == 0) {
        sched_yield(); /* the other thread may share this core */
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void sim_perf_rx_copy(void *arg, const void *pkt, size_t len)
{
    sim_perf_net_t *net = arg;

    if (len > SIM_PERF_SMALL) {
        memcpy(net->dst + net->dst_off, (const uint8_t *)pkt + SIM_PERF_SMALL,
               len - SIM_PERF_SMALL);
        net->dst_off += len - SIM_PERF_SMALL;
    } else {
        memcpy(net->dst, pkt, len);
    }
}

/* Send `n` packets of `payload` bytes to b, then take them out of b's
 * ring; the time of each half per packet, ns. */
static int sim_perf_batch(sim_perf_net_t *net, size_t payload, unsigned n,
                          double *in_ns, double *out_ns)
{
    uint8_t  hdr[SIM_PERF_SMALL] = {0};
    uint64_t t0, t1, t2;
    unsigned i, got = 0;

    t0 = sim_clock_ns();
    for (i = 0; i < n; ++i) {
        if (sim_fabric_send(net->fab, net->lid_b, hdr, sizeof(hdr),
                            net->src + (size_t)i * payload, payload) != 0) {
            return EIO;
        }
    }
    t1           = sim_clock_ns();
    net->dst_off = 0;
    while (got < n) {
        got += sim_fabric_recv(net->b, sim_perf_rx_copy, net, n - got);
    }
    t2      = sim_clock_ns();
    *in_ns  = (double)(t1 - t0) / n;
    *out_ns = (double)(t2 - t1) / n;
    return 0;
}

static void sim_perf_rx_echo(void *arg, const void *pkt, size_t len)
{
    sim_perf_net_t *net = arg;

    while (sim_fabric_send(net->fab, net->lid_a, pkt, len, NULL, 0) ==
           -EAGAIN) {
    }
}

static void *sim_perf_echo_thread(void *arg)
{
    sim_perf_net_t *net   = arg;
    unsigned        spins = 0;

    while (!atomic_load(&net->stop)) {
        if (sim_fabric_recv(net->b, sim_perf_rx_echo, net, 1) == 0) {
            sim_perf_relax(&spins);
        }
    }
    return NULL;
}

static void sim_perf_rx_drop(void *arg, const void *pkt, size_t len)
{
}

static int sim_perf_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x < y) ? -1 : (x > y);
}

/* Two processes on the device run on two cores when the host has them:
 * the echo thread goes to another CPU this process may use than the one
 * this thread is on (with one CPU, both share it, as processes would). */
static void sim_perf_pin_apart(pthread_t thread)
{
    int       self = sched_getcpu(), cpu;
    cpu_set_t allowed, one;

    if ((self < 0) || (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)) {
        return;
    }
    for (cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if ((cpu != self) && CPU_ISSET(cpu, &allowed)) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            pthread_setaffinity_np(thread, sizeof(one), &one);
            return;
        }
    }
}

/* One round trip to the echo thread, ns; 0 when the budget ran out
 * first. */
static uint64_t sim_perf_ping(sim_perf_net_t *net, uint64_t deadline)
{
    uint8_t  hdr[SIM_PERF_SMALL] = {0};
    uint64_t t0 = sim_clock_ns(), now = t0;
    unsigned spins = 0;

    if (sim_fabric_send(net->fab, net->lid_b, hdr, sizeof(hdr), NULL, 0) != 0) {
        return 0;
    }
    while (sim_fabric_recv(net->a, sim_perf_rx_drop, NULL, 1) == 0) {
        sim_perf_relax(&spins);
        if ((spins & 63) == 0) {
            now = sim_clock_ns();
            if (now > deadline) {
                return 0;
            }
        }
    }
    return sim_clock_ns() - t0;
}

/* Half the round trip through two rings (this thread and an echo thread),
 * the 25th percentile of the round trips that fit the time budget. The
 * echo thread goes to the other core, which a process busy-polling its own
 * device (ucx_perftest's server, an MPI rank) may hold: a round trip that
 * waited for the scheduler to give the echo thread a turn (milliseconds)
 * is not counted, and the pings go on; once it runs, it answers hundreds
 * within its time slice. */
static int sim_perf_latency(sim_perf_net_t *net, double *one_way_ns)
{
    double    rtt[SIM_PERF_PINGS];
    uint64_t  deadline, t;
    unsigned  n = 0;
    pthread_t thread;
    int       ret;

    atomic_store(&net->stop, 0);
    ret = pthread_create(&thread, NULL, sim_perf_echo_thread, net);
    if (ret != 0) {
        return ret;
    }
    sim_perf_pin_apart(thread);
    deadline = sim_clock_ns() + SIM_PERF_PING_BUDGET_NS;
    while ((n < SIM_PERF_PINGS) && (sim_clock_ns() < deadline)) {
        t = sim_perf_ping(net, deadline);
        if ((t > 0) && (t <= SIM_PERF_PING_WAIT_NS)) {
            rtt[n++] = (double)t;
        }
    }
    atomic_store(&net->stop, 1);
    pthread_join(thread, NULL);
    while (sim_fabric_recv(net->a, sim_perf_rx_drop, NULL, 256) > 0) {
    }
    while (sim_fabric_recv(net->b, sim_perf_rx_drop, NULL, 256) > 0) {
    }
    if (n < SIM_PERF_PING_MIN) {
        return ETIMEDOUT;
    }
    qsort(rtt, n, sizeof(rtt[0]), sim_perf_cmp);
    *one_way_ns = rtt[n / 4] / 2;
    return 0;
}

/* Two significant digits: a run-to-run jitter below that does not move
 * UCP's thresholds. */
static double sim_perf_round(double v)
{
    double scale;

    if (!(v > 0)) {
        return v;
    }
    scale = pow(10, floor(log10(v)) - 1);
    return round(v / scale) * scale;
}

static int sim_perf_measure(sim_perf_net_t *net, smlx5_perf_t *perf)
{
    double   in, out, small_in = INFINITY, small_out = INFINITY;
    double   big_in = INFINITY, big_out = INFINITY, one_way;
    unsigned r;
    int      ret;

    for (r = 0; r < SIM_PERF_ROUNDS + 1; ++r) { /* round 0 warms up */
        ret = sim_perf_batch(net, 0, SIM_PERF_BATCH, &in, &out);
        if (ret != 0) {
            return ret;
        }
        if (r > 0) {
            small_in  = fmin(small_in, in);
            small_out = fmin(small_out, out);
        }
        ret = sim_perf_batch(net, net->mtu, SIM_PERF_BATCH, &in, &out);
        if (ret != 0) {
            return ret;
        }
        if (r > 0) {
            big_in  = fmin(big_in, in);
            big_out = fmin(big_out, out);
        }
    }
    ret = sim_perf_latency(net, &one_way);
    if (ret != 0) {
        return ret;
    }
    perf->latency_ns       = sim_perf_round(one_way);
    perf->bw_mbs           = sim_perf_round(net->mtu * 1e3 /
                                            fmax(fmax(big_in, big_out), 1));
    perf->overhead_ns      = sim_perf_round(small_in + small_out);
    perf->recv_overhead_ns = perf->overhead_ns;
    perf->source           = SMLX5_PERF_MEASURED;
    return 0;
}

int smlx5_measure_perf(uint32_t mtu, smlx5_perf_t *perf)
{
    static _Atomic unsigned counter;
    sim_perf_net_t          net;
    char                    name[64];
    size_t                  len = (size_t)SIM_PERF_BATCH * mtu;
    int                     ret;

    memset(&net, 0, sizeof(net));
    net.mtu = mtu;
    snprintf(name, sizeof(name), "strand-perf-%d-%u", (int)getpid(),
             atomic_fetch_add(&counter, 1));
    net.src = malloc(len);
    net.dst = malloc(len);
    if ((net.src == NULL) || (net.dst == NULL)) {
        ret = ENOMEM;
        goto out_free;
    }
    memset(net.src, 0x5a, len);
    memset(net.dst, 0, len);
    ret = -sim_fabric_attach(name, &net.fab);
    if (ret != 0) {
        goto out_free;
    }
    ret = -sim_fabric_port_open(net.fab, &net.a);
    if (ret != 0) {
        goto out_detach;
    }
    ret = -sim_fabric_port_open(net.fab, &net.b);
    if (ret != 0) {
        goto out_close_a;
    }
    net.lid_a = sim_fabric_port_lid(net.a);
    net.lid_b = sim_fabric_port_lid(net.b);
    ret       = sim_perf_measure(&net, perf);

    sim_fabric_port_close(net.b);
out_close_a:
    sim_fabric_port_close(net.a);
out_detach:
    sim_fabric_detach(net.fab);
out_free:
    free(net.src);
    free(net.dst);
    return ret;
}

/* Measured once per process (and MTU): the figures are the host's. */
static pthread_mutex_t sim_perf_lock = PTHREAD_MUTEX_INITIALIZER;
static smlx5_perf_t    sim_perf_cache;
static uint32_t        sim_perf_cache_mtu;

int smlx5_query_perf(smlx5_context_t *ctx, smlx5_perf_t *perf)
{
    const sim_perf_cfg_t *cfg = &ctx->cfg.perf;
    int                   ret;

    memset(perf, 0, sizeof(*perf));
    if (cfg->set) {
        perf->latency_ns       = cfg->latency_ns;
        perf->bw_mbs           = cfg->bw_mbs;
        perf->overhead_ns      = cfg->overhead_ns;
        perf->recv_overhead_ns = cfg->recv_overhead_ns;
        perf->source           = SMLX5_PERF_OVERRIDE;
        return 0;
    }

    pthread_mutex_lock(&sim_perf_lock);
    if (sim_perf_cache_mtu != ctx->cfg.mtu) {
        memset(&sim_perf_cache, 0, sizeof(sim_perf_cache));
        ret = smlx5_measure_perf(ctx->cfg.mtu, &sim_perf_cache);
        if (ret != 0) {
            /* the caller reports it (a warning in every process of a
             * loaded host would say nothing about the user's job) */
            sim_perf_cache.error            = ret;
            sim_perf_cache.latency_ns       = SIM_PERF_DFLT_LATENCY_NS;
            sim_perf_cache.bw_mbs           = SIM_PERF_DFLT_BW_MBS;
            sim_perf_cache.overhead_ns      = SIM_PERF_DFLT_OVERHEAD_NS;
            sim_perf_cache.recv_overhead_ns = SIM_PERF_DFLT_OVERHEAD_NS;
            sim_perf_cache.source           = SMLX5_PERF_FIXED;
        }
        sim_perf_cache_mtu = ctx->cfg.mtu;
    }
    *perf = sim_perf_cache;
    if (ctx->net != NULL) {
        /* across hosts a message also takes a UDP hop of the link: the
         * estimate says so, as a NIC's says its link (else UCP would take
         * this device over shared memory inside a node) */
        double hop_ns, mbs;

        sim_net_wire_perf(ctx->net, &hop_ns, &mbs);
        perf->latency_ns += hop_ns;
        perf->bw_mbs = fmin(perf->bw_mbs, mbs);
    }
    pthread_mutex_unlock(&sim_perf_lock);
    return 0;
}
