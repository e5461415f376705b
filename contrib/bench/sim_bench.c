/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark of the software mlx5 device against bare shared memory, measured
 * in one run between the same two processes (one per core):
 *   - 8-byte RDMA_WRITE ping-pong round trip   vs  cache-line ping-pong
 *   - 8-byte SEND message rate                 (absolute)
 *   - 1 MiB RDMA_WRITE bandwidth               vs  1 MiB memcpy, and vs
 *     1 MiB process_vm_readv() from the peer process: the kernel's
 *     cross-process copy, which the device's one-copy WRITE is made of
 *     (its ceiling on this host)
 * Each metric is measured in several rounds, baseline and device
 * alternately, and the medians are compared: this machine is noisy, ratios
 * taken in one run are what counts.
 *
 * usage: sim_bench [--iters N] [--rounds R] [--mb M]
 */
#define _GNU_SOURCE
#include "smlx5.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BW_SIZE    (1u << 20)
#define MAX_ROUNDS 15

typedef struct bench_opts {
    int iters; /* ping-pong iterations per round */
    int msgs;  /* messages per message-rate round */
    int mb;    /* MiB per bandwidth round */
    int rounds;
} bench_opts_t;

/* Per-round results of one process (what it measured itself). */
typedef struct bench_results {
    double bare_rtt[MAX_ROUNDS];  /* ns */
    double sim_rtt[MAX_ROUNDS];   /* ns */
    double memcpy_bw[MAX_ROUNDS]; /* bytes/s */
    double cma_bw[MAX_ROUNDS];    /* bytes/s, process_vm_readv */
    double sim_bw[MAX_ROUNDS];    /* bytes/s */
    double sim_rate[MAX_ROUNDS];  /* messages/s */
} bench_results_t;

typedef struct peer_info {
    uint16_t lid;
    uint32_t qpn;
    uint64_t addr;
    uint32_t rkey;
} peer_info_t;

typedef struct node {
    smlx5_context_t *ctx;
    smlx5_pd_t      *pd;
    smlx5_cq_t      *scq, *rcq;
    smlx5_qp_t      *qp;
    smlx5_mr_t      *mr;
    uint8_t         *buf; /* [0, 4K): ping-pong words; then BW_SIZE */
    peer_info_t      peer;
} node_t;

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "sim_bench: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static void xfer(int fd, void *p, size_t len, int out)
{
    size_t  done = 0;
    ssize_t n;

    while (done < len) {
        n = out ? write(fd, (char *)p + done, len - done) :
                  read(fd, (char *)p + done, len - done);
        if (n <= 0) {
            die("socket");
        }
        done += n;
    }
}

static void sync_peer(int fd)
{
    char c = 's';

    xfer(fd, &c, 1, 1);
    xfer(fd, &c, 1, 0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------ device */

static void node_open(node_t *n, int fd)
{
    size_t               len = 4096 + BW_SIZE;
    struct ibv_port_attr pa;
    struct ibv_qp_attr   a;
    peer_info_t          mine;
    smlx5_qp_init_attr_t qa;

    n->ctx = smlx5_open_device(SMLX5_DEV_NAME);
    if (n->ctx == NULL) {
        die("smlx5_open_device");
    }
    smlx5_query_port(n->ctx, SMLX5_PORT_NUM, &pa);
    n->pd  = smlx5_alloc_pd(n->ctx);
    n->scq = smlx5_create_cq(n->ctx, 1024, NULL);
    n->rcq = smlx5_create_cq(n->ctx, 1024, NULL);
    n->buf = aligned_alloc(4096, len);
    if (!n->pd || !n->scq || !n->rcq || !n->buf) {
        die("device objects");
    }
    memset(n->buf, 0, len);
    n->mr = smlx5_reg_mr(n->pd, n->buf, len,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    memset(&qa, 0, sizeof(qa));
    qa.type                = SMLX5_QPT_RC;
    qa.send_cq             = n->scq;
    qa.recv_cq             = n->rcq;
    qa.cap.max_send_wr     = 512;
    qa.cap.max_send_sge    = 1;
    qa.cap.max_inline_data = 64;
    qa.cap.max_recv_wr     = 1024;
    qa.cap.max_recv_sge    = 1;
    n->qp                  = smlx5_create_qp(n->pd, &qa);
    if (!n->mr || !n->qp) {
        die("memory region / QP");
    }

    mine.lid  = pa.lid;
    mine.qpn  = smlx5_qp_num(n->qp);
    mine.addr = (uintptr_t)n->buf;
    mine.rkey = smlx5_mr_rkey(n->mr);
    xfer(fd, &mine, sizeof(mine), 1);
    xfer(fd, &n->peer, sizeof(n->peer), 0);

    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = SMLX5_PORT_NUM;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (smlx5_modify_qp(n->qp, &a,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                IBV_QP_ACCESS_FLAGS)) {
        die("INIT");
    }
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = pa.active_mtu;
    a.dest_qp_num        = n->peer.qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer      = 1;
    a.ah_attr.dlid       = n->peer.lid;
    a.ah_attr.port_num   = SMLX5_PORT_NUM;
    if (smlx5_modify_qp(n->qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC |
                                IBV_QP_MIN_RNR_TIMER)) {
        die("RTR");
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 14;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.max_rd_atomic = 1;
    if (smlx5_modify_qp(n->qp, &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                                IBV_QP_SQ_PSN)) {
        die("RTS");
    }
    sync_peer(fd);
}

/* Everything back, the device last: the last process to detach removes the
 * fabric's shared-memory segment (/dev/shm/strand-bench-<pid>), which a
 * process that exits with its device open leaves behind. */
static void node_close(node_t *n)
{
    if (smlx5_destroy_qp(n->qp) || smlx5_dereg_mr(n->mr) ||
        smlx5_destroy_cq(n->scq) || smlx5_destroy_cq(n->rcq) ||
        smlx5_dealloc_pd(n->pd) || smlx5_close_device(n->ctx)) {
        fprintf(stderr, "sim_bench: closing the device failed\n");
        exit(2);
    }
    free(n->buf);
}

static void drain_send_cq(node_t *n, int *inflight)
{
    struct ibv_wc wc[32];
    int           i, k = smlx5_poll_cq(n->scq, 32, wc);

    for (i = 0; i < k; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
            fprintf(stderr, "sim_bench: completion error %d\n", wc[i].status);
            exit(2);
        }
    }
    if (inflight != NULL) {
        *inflight -= k;
    }
}

static void post(node_t *n, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;
    int                 ret;

    while ((ret = smlx5_post_send(n->qp, wr, &bad)) == ENOMEM) {
        drain_send_cq(n, NULL);
    }
    if (ret != 0) {
        errno = ret;
        die("post_send");
    }
}

/* 8-byte RDMA_WRITE ping-pong; returns the round trip in ns (side 0). */
static double sim_pingpong(node_t *n, int side, int iters, int fd)
{
    volatile uint64_t *mine = (volatile uint64_t *)n->buf;
    uint64_t           val;
    struct ibv_sge     sge = {(uintptr_t)&val, 8, smlx5_mr_lkey(n->mr)};
    struct ibv_send_wr wr;
    double             t0 = 0;
    int                i, warm = iters / 10;

    memset(&wr, 0, sizeof(wr));
    wr.opcode              = IBV_WR_RDMA_WRITE;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.wr.rdma.remote_addr = n->peer.addr;
    wr.wr.rdma.rkey        = n->peer.rkey;
    *mine                  = 0;
    sync_peer(fd); /* both reset before the first WRITE can land */
    for (i = 1; i <= iters + warm; ++i) {
        if (i == warm + 1) {
            t0 = now_ns();
        }
        val           = ((uint64_t)side << 62) | i;
        wr.send_flags = IBV_SEND_INLINE | ((i % 64) ? 0 : IBV_SEND_SIGNALED);
        if (side == 0) {
            post(n, &wr);
            while (*mine != (((uint64_t)1 << 62) | i)) {
                smlx5_progress(n->ctx);
            }
        } else {
            while (*mine != (uint64_t)i) {
                smlx5_progress(n->ctx);
            }
            post(n, &wr);
        }
        if ((i % 64) == 0) {
            drain_send_cq(n, NULL);
        }
    }
    return (now_ns() - t0) / iters;
}

/* 8-byte SENDs into posted receives; messages per second (side 1). */
static double sim_msgrate(node_t *n, int side, int msgs, int fd)
{
    struct ibv_sge     sge = {(uintptr_t)n->buf + 64, 8, smlx5_mr_lkey(n->mr)};
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_send_wr wr;
    struct ibv_wc      wc[64];
    int                i, k, got = 0, posted = 0, inflight = 0;
    double             t0 = 0;

    if (side == 1) {
        memset(&rwr, 0, sizeof(rwr));
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        for (; posted < 1000; ++posted) {
            smlx5_post_recv(n->qp, &rwr, &rbad);
        }
        sync_peer(fd);
        while (got < msgs) {
            k = smlx5_poll_cq(n->rcq, 64, wc);
            for (i = 0; i < k; ++i) {
                if (wc[i].status != IBV_WC_SUCCESS) {
                    fprintf(stderr, "sim_bench: receive error %d\n",
                            wc[i].status);
                    exit(2);
                }
                if (got++ == 0) {
                    t0 = now_ns();
                }
            }
            for (; (posted - got < 1000) && (posted < msgs + 1000); ++posted) {
                smlx5_post_recv(n->qp, &rwr, &rbad);
            }
        }
        return (msgs - 1) / ((now_ns() - t0) * 1e-9);
    }

    memset(&wr, 0, sizeof(wr));
    wr.opcode  = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    sync_peer(fd);
    for (i = 0; i < msgs; ++i) {
        wr.send_flags = IBV_SEND_INLINE |
                        (((i % 64) == 63) ? IBV_SEND_SIGNALED : 0);
        while (inflight >= 256 / 64) {
            drain_send_cq(n, &inflight);
        }
        post(n, &wr);
        if ((i % 64) == 63) {
            ++inflight;
        }
    }
    while (inflight > 0) {
        drain_send_cq(n, &inflight);
    }
    return 0;
}

/* 1 MiB RDMA_WRITEs, 4 in flight; bytes per second (side 0). The last
 * transfer's bytes are checked by the peer. */
static double sim_bandwidth(node_t *n, int side, int mb, int fd)
{
    uint8_t           *data = n->buf + 4096;
    struct ibv_sge     sge  = {(uintptr_t)data, BW_SIZE, smlx5_mr_lkey(n->mr)};
    struct ibv_send_wr wr;
    int                posted = 0, done = 0, i;
    char               ok;
    double             t0;

    if (side == 1) {
        sync_peer(fd);
        xfer(fd, &ok, 1, 0); /* the sender is done */
        for (i = 0; i < (int)BW_SIZE; ++i) {
            if (data[i] != (uint8_t)(i * 7 + mb)) {
                fprintf(stderr, "sim_bench: data mismatch at byte %d\n", i);
                exit(2);
            }
        }
        xfer(fd, &ok, 1, 1);
        return 0;
    }
    for (i = 0; i < (int)BW_SIZE; ++i) {
        data[i] = (uint8_t)(i * 7 + mb);
    }
    memset(&wr, 0, sizeof(wr));
    wr.opcode              = IBV_WR_RDMA_WRITE;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = n->peer.addr + 4096;
    wr.wr.rdma.rkey        = n->peer.rkey;
    sync_peer(fd);
    t0 = now_ns();
    while (done < mb) {
        while ((posted < mb) && (posted - done < 4)) {
            post(n, &wr);
            ++posted;
        }
        i = posted - done;
        drain_send_cq(n, &i);
        done = posted - i;
    }
    t0 = now_ns() - t0;
    ok = 1;
    xfer(fd, &ok, 1, 1);
    xfer(fd, &ok, 1, 0);
    return (double)mb * BW_SIZE / (t0 * 1e-9);
}

/* --------------------------------------------------------- baselines */

static double bare_pingpong(volatile uint64_t *lines, int side, int iters)
{
    volatile uint64_t *mine   = &lines[side * 16],
                      *theirs = &lines[(1 - side) * 16];
    int    i, warm = iters / 10;
    double t0 = 0;

    for (i = 1; i <= iters + warm; ++i) {
        if (i == warm + 1) {
            t0 = now_ns();
        }
        if (side == 0) {
            *theirs = i;
            while (*mine != (uint64_t)i) {
            }
        } else {
            while (*mine != (uint64_t)i) {
            }
            *theirs = i;
        }
    }
    return (now_ns() - t0) / iters;
}

static double bare_memcpy(uint8_t *dst, const uint8_t *src, int mb)
{
    double t0 = now_ns();
    int    i;

    for (i = 0; i < mb; ++i) {
        memcpy(dst, src, BW_SIZE);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    return (double)mb * BW_SIZE / ((now_ns() - t0) * 1e-9);
}

/* 1 MiB process_vm_readv() calls, the responder's side (1) reading the
 * requester's buffer (side 0, its parent) where the device's one-copy
 * WRITE reads it from; bytes per second, sent to side 0. */
static double bare_cma(node_t *n, int side, int mb, int fd)
{
    struct iovec local  = {n->buf + 4096, BW_SIZE};
    struct iovec remote = {(void *)(uintptr_t)(n->peer.addr + 4096), BW_SIZE};
    double       bw     = 0, t0;
    int          i;

    if (side == 1) {
        t0 = now_ns();
        for (i = 0; i < mb; ++i) {
            if (process_vm_readv(getppid(), &local, 1, &remote, 1, 0) !=
                (ssize_t)BW_SIZE) {
                die("process_vm_readv");
            }
        }
        bw = (double)mb * BW_SIZE / ((now_ns() - t0) * 1e-9);
    }
    xfer(fd, &bw, sizeof(bw), side == 1);
    return bw;
}

/* ------------------------------------------------------------- main */

static void run_side(int side, int fd, const bench_opts_t *o,
                     volatile uint64_t *lines, bench_results_t *res)
{
    uint8_t *src = NULL, *dst = NULL;
    node_t   n;
    int      r;

    pin(side);
    if (side == 0) {
        src = aligned_alloc(4096, BW_SIZE);
        dst = aligned_alloc(4096, BW_SIZE);
        memset(src, 1, BW_SIZE);
        memset(dst, 0, BW_SIZE);
    }
    memset(&n, 0, sizeof(n));
    node_open(&n, fd);
    for (r = 0; r < o->rounds; ++r) {
        lines[side * 16] = 0; /* (a peer's store comes after two syncs) */
        sync_peer(fd);
        res->bare_rtt[r] = bare_pingpong(lines, side, o->iters);
        sync_peer(fd);
        res->sim_rtt[r] = sim_pingpong(&n, side, o->iters, fd);
        sync_peer(fd);
        if (side == 0) {
            res->memcpy_bw[r] = bare_memcpy(dst, src, o->mb);
        }
        sync_peer(fd);
        res->cma_bw[r] = bare_cma(&n, side, o->mb, fd);
        sync_peer(fd);
        res->sim_bw[r] = sim_bandwidth(&n, side, o->mb, fd);
        sync_peer(fd);
        /* the receiver measures the rate and tells the sender */
        res->sim_rate[r] = sim_msgrate(&n, side, o->msgs, fd);
        xfer(fd, &res->sim_rate[r], sizeof(double), side == 1);
        sync_peer(fd);
    }
    node_close(&n);
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    bench_opts_t o = {.iters = 20000, .msgs = 200000, .mb = 1000, .rounds = 5};
    bench_results_t    res, child_res;
    volatile uint64_t *lines;
    char               fabric[64];
    int                sv[2], i, status;
    pid_t              pid;

    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && (i + 1 < argc)) {
            o.iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && (i + 1 < argc)) {
            o.rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--mb") && (i + 1 < argc)) {
            o.mb = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--msgs") && (i + 1 < argc)) {
            o.msgs = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: %s [--iters N] [--rounds R] [--mb M] "
                    "[--msgs K]\n",
                    argv[0]);
            return 2;
        }
    }
    if ((o.rounds < 1) || (o.rounds > MAX_ROUNDS) || (o.iters < 10) ||
        (o.mb < 1) || (o.msgs < 2)) {
        fprintf(stderr,
                "sim_bench: rounds 1..%d, iters >= 10, mb >= 1, "
                "msgs >= 2\n",
                MAX_ROUNDS);
        return 2;
    }

    snprintf(fabric, sizeof(fabric), "strand-bench-%d", (int)getpid());
    setenv("STRAND_SIM_FABRIC", fabric, 1);
    lines = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
    if ((lines == MAP_FAILED) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        die("setup");
    }
    memset((void *)lines, 0, 4096);

    pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        close(sv[0]);
        run_side(1, sv[1], &o, lines, &child_res);
        _exit(0);
    }
    close(sv[1]);
    run_side(0, sv[0], &o, lines, &res);
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "sim_bench: the peer process failed\n");
        return 2;
    }

    double mb = median(res.bare_rtt, o.rounds);
    double ml = median(res.sim_rtt, o.rounds);
    double mc = median(res.memcpy_bw, o.rounds);
    double mw = median(res.sim_bw, o.rounds);
    double mr = median(res.sim_rate, o.rounds);
    double mv = median(res.cma_bw, o.rounds);

    printf("software mlx5 device vs bare shared memory, 2 processes, "
           "medians of %d rounds\n",
           o.rounds);
    printf("%-34s %14s %14s %8s\n", "metric", "device", "baseline", "ratio");
    printf("%-34s %11.0f ns %11.0f ns %7.2fx\n", "8 B RDMA_WRITE ping-pong RTT",
           ml, mb, ml / mb);
    printf("%-34s %9.2f Mmsg/s %14s %8s\n", "8 B SEND message rate", mr / 1e6,
           "-", "-");
    printf("%-34s %9.2f GB/s %9.2f GB/s %7.0f%%\n",
           "1 MiB RDMA_WRITE bandwidth", mw / 1e9, mc / 1e9, 100 * mw / mc);
    printf("%-34s %9.2f GB/s %9.2f GB/s %7.0f%%\n",
           "  the same vs process_vm_readv", mw / 1e9, mv / 1e9, 100 * mw / mv);
    printf("%-34s %9.2f GB/s %9.2f GB/s %7.0f%%\n",
           "process_vm_readv 1 MiB vs memcpy", mv / 1e9, mc / 1e9,
           100 * mv / mc);
    printf("small-message round trip <= 2.5x bare ping-pong: %s (ratio %.2f)\n",
           (ml / mb <= 2.5) ? "PASS" : "MISS", ml / mb);
    printf("1 MiB bandwidth >= 60%% of memcpy: %s (ratio %.2f)\n",
           (mw / mc >= 0.60) ? "PASS" : "MISS", mw / mc);
    return 0;
}
