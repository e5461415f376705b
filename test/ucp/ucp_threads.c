/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucp_threads: UCP with several workers in several threads of one process,
 * over whatever UCX_TLS selects, every received byte checked.
 *
 *   ucp_threads DIR RANK [THREADS [MESSAGES]]
 *
 * Two ranks (0 and 1), each with THREADS (default 4) threads, each thread
 * with a UCP worker of its own; thread t of one rank talks to thread t of
 * the other: MESSAGES (default 10000) tagged messages each way, eager and,
 * every 100th, rendezvous sizes, each filled with a pattern of (rank,
 * thread, index) and checked byte for byte. The workers of one process
 * share the UCP context (and so every memory domain and device); each
 * has its own interfaces, which the threads drive at the same time: what
 * a transport shares between interfaces (a BlueFlame register, say) is
 * rung from several threads at once.
 *
 * Ranks find each other through files in DIR. Every rank prints one
 * verdict line "ucp_threads: rank R: PASS" or "... FAIL (why)" and exits 0
 * only on PASS.
 */
#include <ucp/api/ucp.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS  16
#define RNDV_SIZE    (64u << 10)
#define TAG_MASK     0xffffffffffffffffull
#define WAIT_SECONDS 60.0

static const char   *dir;
static int           rank, nthreads = 4, nmsgs = 10000;
static ucp_context_h context;

typedef struct thread_ctx {
    int          t;
    pthread_t    tid;
    ucp_worker_h worker;
    ucp_ep_h     ep;
    uint8_t     *sbuf, *rbuf;
    int          failed;
    char         why[256];
} thread_ctx_t;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void tfail(thread_ctx_t *c, const char *fmt, ...)
{
    va_list ap;

    if (c->failed) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    c->failed = 1;
    fprintf(stderr, "ucp_threads: rank %d thread %d: %s\n", rank, c->t, c->why);
}

/* message i of (r, t): its size and its bytes */
static size_t msg_size(int i)
{
    static const size_t sizes[] = {1, 8, 64, 200, 1000, 4000, 8300, 20000};

    return ((i % 100) == 99) ? RNDV_SIZE : sizes[i % 8];
}

static uint8_t msg_byte(int r, int t, int i, size_t k)
{
    return (uint8_t)(r * 131 + t * 31 + i * 7 + k * 13 + (k >> 8));
}

static ucp_tag_t msg_tag(int t, int i)
{
    return ((ucp_tag_t)t << 32) | (uint32_t)i;
}

/* wait for a request (NULL: done at once); its status */
static ucs_status_t wait_req(thread_ctx_t *c, void *req)
{
    double       end = now() + WAIT_SECONDS;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(c->worker);
        if (now() > end) {
            ucp_request_cancel(c->worker, req);
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(c->worker);
            }
            ucp_request_free(req);
            return UCS_ERR_TIMED_OUT;
        }
    }
    ucp_request_free(req);
    return status;
}

/* write `len` bytes to DIR/NAME as a whole (a rename makes it appear) */
static int put_file(const char *name, const void *data, size_t len)
{
    char  path[4096], tmp[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "wb");
    if ((f == NULL) || (fwrite(data, 1, len, f) != len)) {
        if (f != NULL) {
            fclose(f);
        }
        return -1;
    }
    fclose(f);
    return rename(tmp, path);
}

/* DIR/NAME once it appears (malloc'd, its length in *len), NULL after the
 * wait */
static void *get_file(const char *name, size_t *len)
{
    double end = now() + WAIT_SECONDS;
    char   path[4096];
    void  *data;
    long   n;
    FILE  *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    while ((f = fopen(path, "rb")) == NULL) {
        if (now() > end) {
            return NULL;
        }
        usleep(1000);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(n > 0 ? n : 1);
    if ((data == NULL) || (fread(data, 1, n, f) != (size_t)n)) {
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return data;
}

static int connect_peer(thread_ctx_t *c)
{
    ucp_address_t  *addr, *peer;
    ucp_ep_params_t ep_params;
    size_t          len, peer_len;
    char            name[64];
    ucs_status_t    status;

    status = ucp_worker_get_address(c->worker, &addr, &len);
    if (status != UCS_OK) {
        tfail(c, "ucp_worker_get_address: %s", ucs_status_string(status));
        return -1;
    }
    snprintf(name, sizeof(name), "addr.%d.%d", rank, c->t);
    if (put_file(name, addr, len) != 0) {
        ucp_worker_release_address(c->worker, addr);
        tfail(c, "cannot write %s/%s: %s", dir, name, strerror(errno));
        return -1;
    }
    ucp_worker_release_address(c->worker, addr);
    snprintf(name, sizeof(name), "addr.%d.%d", 1 - rank, c->t);
    peer = get_file(name, &peer_len);
    if (peer == NULL) {
        tfail(c, "no address of the peer's thread %d in %s", c->t, dir);
        return -1;
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = peer;
    status               = ucp_ep_create(c->worker, &ep_params, &c->ep);
    free(peer);
    if (status != UCS_OK) {
        tfail(c, "ucp_ep_create: %s", ucs_status_string(status));
        return -1;
    }
    return 0;
}

/* message i each way: the receive posted first, then the send */
static void exchange(thread_ctx_t *c, int i)
{
    ucp_request_param_t param;
    size_t              len = msg_size(i), k;
    ucs_status_t        status;
    void               *rreq, *sreq;

    for (k = 0; k < len; ++k) {
        c->sbuf[k] = msg_byte(rank, c->t, i, k);
    }
    memset(c->rbuf, 0, len);
    memset(&param, 0, sizeof(param));
    rreq = ucp_tag_recv_nbx(c->worker, c->rbuf, len, msg_tag(c->t, i), TAG_MASK,
                            &param);
    sreq = ucp_tag_send_nbx(c->ep, c->sbuf, len, msg_tag(c->t, i), &param);
    status = wait_req(c, sreq);
    if (status != UCS_OK) {
        tfail(c, "send %d of %zu bytes: %s", i, len, ucs_status_string(status));
    }
    status = wait_req(c, rreq);
    if (status != UCS_OK) {
        tfail(c, "receive %d of %zu bytes: %s", i, len,
              ucs_status_string(status));
        return;
    }
    for (k = 0; k < len; ++k) {
        if (c->rbuf[k] != msg_byte(1 - rank, c->t, i, k)) {
            tfail(c,
                  "message %d of %zu bytes: byte %zu is 0x%02x, not "
                  "0x%02x",
                  i, len, k, c->rbuf[k], msg_byte(1 - rank, c->t, i, k));
            return;
        }
    }
}

static void *thread_main(void *arg)
{
    thread_ctx_t       *c = arg;
    ucp_worker_params_t wp;
    ucp_request_param_t param;
    ucs_status_t        status;
    int                 i;

    memset(&wp, 0, sizeof(wp));
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE; /* its thread's alone */
    status         = ucp_worker_create(context, &wp, &c->worker);
    if (status != UCS_OK) {
        tfail(c, "ucp_worker_create: %s", ucs_status_string(status));
        return NULL;
    }
    c->sbuf = malloc(RNDV_SIZE);
    c->rbuf = malloc(RNDV_SIZE);
    if ((c->sbuf == NULL) || (c->rbuf == NULL)) {
        tfail(c, "out of memory");
    } else if (connect_peer(c) == 0) {
        for (i = 0; (i < nmsgs) && !c->failed; ++i) {
            exchange(c, i);
        }
        /* both sides' last messages arrived: the peer is done sending */
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        (void)wait_req(c, ucp_ep_close_nbx(c->ep, &param));
    }
    free(c->sbuf);
    free(c->rbuf);
    ucp_worker_destroy(c->worker);
    return NULL;
}

int main(int argc, char **argv)
{
    thread_ctx_t ctx[MAX_THREADS];
    ucp_params_t params;
    ucs_status_t status;
    int          t, failed = 0;
    const char  *why = "";

    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR RANK [THREADS [MESSAGES]]\n", argv[0]);
        return 2;
    }
    dir  = argv[1];
    rank = atoi(argv[2]) ? 1 : 0;
    if (argc > 3) {
        nthreads = atoi(argv[3]);
    }
    if (argc > 4) {
        nmsgs = atoi(argv[4]);
    }
    if ((nthreads < 1) || (nthreads > MAX_THREADS) || (nmsgs < 1)) {
        fprintf(stderr, "%s: 1 .. %d threads, at least one message\n", argv[0],
                MAX_THREADS);
        return 2;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features          = UCP_FEATURE_TAG;
    params.mt_workers_shared = 1;
    status                   = ucp_init(&params, NULL, &context);
    if (status != UCS_OK) {
        printf("ucp_threads: rank %d: FAIL (ucp_init: %s)\n", rank,
               ucs_status_string(status));
        return 1;
    }
    memset(ctx, 0, sizeof(ctx));
    for (t = 0; t < nthreads; ++t) {
        ctx[t].t = t;
        if (pthread_create(&ctx[t].tid, NULL, thread_main, &ctx[t]) != 0) {
            printf("ucp_threads: rank %d: FAIL (pthread_create)\n", rank);
            return 1;
        }
    }
    for (t = 0; t < nthreads; ++t) {
        pthread_join(ctx[t].tid, NULL);
        if (ctx[t].failed && !failed) {
            failed = 1;
            why    = ctx[t].why;
        }
    }
    ucp_cleanup(context);
    if (failed) {
        printf("ucp_threads: rank %d: FAIL (%s)\n", rank, why);
        return 1;
    }
    printf("ucp_threads: rank %d: PASS (%d threads, %d messages each way "
           "each)\n",
           rank, nthreads, nmsgs);
    return 0;
}
