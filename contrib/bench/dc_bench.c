/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_bench MODE [ARGS]: message rates of dc_strand endpoints in one hub
 * process toward forked peer processes (test/uct/peers_*: the peers check
 * every active message's order and bytes; the hub's verdict is printed).
 * Every mode prints one line of "key value" pairs for
 * contrib/bench/dc_streams.sh.
 *
 *   failure SECS            8 peers x 8 endpoints, all sending am_short;
 *                           the rate of the endpoints that stay healthy
 *                           (those of peers 1..7) SECS before peer 0 is
 *                           killed, while its endpoints fail, and SECS
 *                           after: each the median of 50 ms windows
 *   control SECS            the same windows, nobody killed (the drift of
 *                           rates on this machine: the baseline)
 *   scale PEERS EPS SECS    PEERS x EPS endpoints: memory per endpoint
 *                           (heap growth while they are created), the
 *                           interface's QPs, the rate over all of them and
 *                           over the first 64
 *   active SECS             8 peers x 8 endpoints: the rate with 1, 8 and
 *                           64 of them sending
 *
 * The transport's policy and sizes come from the environment
 * (UCX_DC_STRAND_TX_POLICY, ...).
 */
#include "peers_hub.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the next active message of e: 1 sent, 0 no resources, -1 refused */
static int bench_send(peers_hub_ep_t *e)
{
    ucs_status_t status = peers_hub_am_short(e);

    if (status == UCS_OK) {
        e->ops++;
        return 1;
    }
    return (status == UCS_ERR_NO_RESOURCE) ? 0 : -1;
}

/* Endpoints first..first+count-1 send round-robin until `until` returns
 * non-zero or secs pass. Returns messages/s of the endpoints of live peers
 * other than `skip` (-1: none). */
static double bench_window(peers_hub_t *h, unsigned first, unsigned count,
                           double secs, int (*until)(peers_hub_t *), int skip)
{
    double          start = peers_now(), end = start + secs, now;
    uint64_t        sent = 0;
    peers_hub_ep_t *e;
    unsigned        i;
    int             r;

    do {
        for (i = first; i < first + count; ++i) {
            e = &h->eps[i];
            if (e->failed && (e->ep != NULL)) {
                uct_ep_destroy(e->ep); /* as UCP does */
                e->ep = NULL;
            }
            if ((e->ep == NULL) || e->stopped) {
                continue;
            }
            r = bench_send(e);
            if (r < 0) {
                e->stopped = 1;
            } else if (h->alive[e->peer] && ((int)e->peer != skip)) {
                sent += r;
            }
        }
        uct_worker_progress(h->uct.worker);
        now = peers_now();
    } while ((now < end) && ((until == NULL) || !until(h)));
    return sent / (now - start);
}

static int bench_dead_eps_failed(peers_hub_t *h)
{
    unsigned i;

    for (i = 0; i < h->num_eps; ++i) {
        if (!h->alive[h->eps[i].peer] && !h->eps[i].failed) {
            return 0;
        }
    }
    return 1;
}

/* the hub's interface's QPs: its DCIs (the dci_pool file) and its DCT */
static unsigned bench_qps(peers_hub_t *h)
{
    static char text[65536];
    char       *line, *save = NULL;
    unsigned    n = 1;

    peers_vfs_read(&h->uct, "dci_pool", text, sizeof(text));
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        n += !strncmp(line, "dci ", 4);
    }
    return n;
}

/* every healthy ep's messages arrived once, in order, intact */
static void bench_verdict(peers_hub_t *h)
{
    char     why[PEERS_WHY_LEN];
    unsigned passed = peers_hub_finish(h, why, sizeof(why));
    unsigned alive  = 0, i;

    for (i = 0; i < h->num_peers; ++i) {
        alive += h->alive[i];
    }
    printf(" verified %s", (passed == alive) && !h->failed ? "yes" : "NO");
    if ((passed != alive) || h->failed) {
        printf(" why \"%s%s\"", why, h->failed ? h->why : "");
    }
    printf("\n");
}

static int
bench_start(peers_hub_t *h, unsigned peers, unsigned eps, size_t *heap)
{
    struct mallinfo2 before, after;

    if (peers_hub_start(h, peers) != 0) {
        fprintf(stderr, "dc_bench: peers did not start\n");
        return -1;
    }
    before = mallinfo2();
    if (peers_hub_connect(h, eps, 0) != 0) {
        fprintf(stderr, "dc_bench: %u endpoints not created\n", peers * eps);
        return -1;
    }
    after = mallinfo2();
    if (heap != NULL) {
        /* heap and mmap()ed blocks, minus the hub's own record of each ep
         * (its array) */
        *heap = (after.uordblks + after.hblkhd) -
                (before.uordblks + before.hblkhd) -
                peers * eps * sizeof(peers_hub_ep_t);
    }
    return 0;
}

/* DC_BENCH_POOL set: the DCI pool (VFS dci_pool) on stderr */
static void bench_print_pool(peers_hub_t *h, const char *when)
{
    static char text[65536];

    if (getenv("DC_BENCH_POOL") != NULL) {
        peers_vfs_read(&h->uct, "dci_pool", text, sizeof(text));
        fprintf(stderr, "DCI pool %s:\n%s\n", when, text);
    }
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median rate over windows of BENCH_SLICE s each, for secs or until
 * `until` says so: nine processes share two cores, and in any one window
 * the scheduler may hand a share of them to whom it likes (rates of
 * consecutive 50 ms windows differ 3x); the median of many says what the
 * transport does. */
#define BENCH_SLICE      0.05
#define BENCH_MAX_SLICES 4096

static double bench_median_window(peers_hub_t *h, double           secs,
                                  int (*until)(peers_hub_t *), int skip)
{
    static double rate[BENCH_MAX_SLICES];
    double        end = peers_now() + secs;
    unsigned      n   = 0;

    do {
        rate[n++] = bench_window(h, 0, h->num_eps, BENCH_SLICE, until, skip);
    } while ((n < BENCH_MAX_SLICES) && (peers_now() < end) &&
             ((until == NULL) || !until(h)));
    qsort(rate, n, sizeof(rate[0]), bench_cmp_double);
    return (n % 2) ? rate[n / 2] : (rate[n / 2 - 1] + rate[n / 2]) / 2;
}

/* kill: peer 0 is killed; else the control (same windows, the "during"
 * one as long as a failure's detection takes, nobody killed): the drift of
 * rates on a loaded machine that a failure's ratios are compared with */
static int bench_failure(double secs, int kill)
{
    double      before, during, after, detect;
    peers_hub_t h;

    setenv("UCX_DC_STRAND_TIMEOUT", "500ms", 0);
    setenv("UCX_DC_STRAND_RETRY_COUNT", "3", 0);
    if (bench_start(&h, 8, 8, NULL) != 0) {
        return 1;
    }
    bench_window(&h, 0, h.num_eps, 0.3, NULL, -1); /* warm-up */
    /* the rates of peers 1..7's endpoints throughout: peer 0 is killed */
    before = bench_median_window(&h, secs, NULL, 0);
    bench_print_pool(&h, "before the kill");
    if (kill) {
        peers_hub_kill_peer(&h, 0);
        during = bench_median_window(&h, 30, bench_dead_eps_failed, 0);
        detect = peers_now() - h.kill_time;
    } else {
        /* TIMEOUT x (RETRY_COUNT + 1) as the device rounds it */
        detect = 4 * 0.537;
        during = bench_median_window(&h, detect, NULL, 0);
    }
    after = bench_median_window(&h, secs, NULL, 0);
    bench_print_pool(&h, "after");
    printf("before %.0f during %.0f after %.0f detect_s %.3f", before, during,
           after, detect);
    bench_verdict(&h);
    peers_hub_stop(&h);
    return 0;
}

static int bench_scale(unsigned peers, unsigned eps, double secs)
{
    double      all, some;
    peers_hub_t h;
    size_t      heap;

    if (bench_start(&h, peers, eps, &heap) != 0) {
        return 1;
    }
    bench_window(&h, 0, h.num_eps, 0.3, NULL, -1);
    all  = bench_window(&h, 0, h.num_eps, secs, NULL, -1);
    some = bench_window(&h, 0, ucs_min(64, h.num_eps), secs, NULL, -1);
    printf("eps %u bytes_per_ep %.0f qps %u rate_all %.0f rate_64 %.0f",
           h.num_eps, (double)heap / h.num_eps, bench_qps(&h), all, some);
    bench_verdict(&h);
    peers_hub_stop(&h);
    return 0;
}

static int bench_active(double secs)
{
    static const unsigned counts[] = {1, 8, 64};
    peers_hub_t           h;
    unsigned              i;

    if (bench_start(&h, 8, 8, NULL) != 0) {
        return 1;
    }
    bench_window(&h, 0, h.num_eps, 0.3, NULL, -1);
    double   best[3] = {0, 0, 0};
    unsigned rep;

    /* best of 3 rounds, the counts interleaved: the peers share two cores
     * and sleep when idle, so a single window is at the scheduler's mercy */
    for (rep = 0; rep < 3; ++rep) {
        for (i = 0; i < 3; ++i) {
            /* the eps are interleaved over the peers: 8 reach all 8 */
            best[i] = ucs_max(best[i],
                              bench_window(&h, 0, counts[i], secs, NULL, -1));
        }
    }
    for (i = 0; i < 3; ++i) {
        printf("%sactive_%u %.0f", i ? " " : "", counts[i], best[i]);
    }
    bench_verdict(&h);
    peers_hub_stop(&h);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = (argc > 1) ? argv[1] : "";

    if (!strcmp(mode, "failure") && (argc == 3)) {
        return bench_failure(atof(argv[2]), 1);
    } else if (!strcmp(mode, "control") && (argc == 3)) {
        return bench_failure(atof(argv[2]), 0);
    } else if (!strcmp(mode, "scale") && (argc == 5)) {
        return bench_scale(atoi(argv[2]), atoi(argv[3]), atof(argv[4]));
    } else if (!strcmp(mode, "active") && (argc == 3)) {
        return bench_active(atof(argv[2]));
    }
    fprintf(stderr, "usage: dc_bench failure SECS | control SECS | "
                    "scale PEERS EPS SECS | active SECS\n");
    return 2;
}
