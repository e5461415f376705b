/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sleeping UCP worker wakes for what is its: a sender and a receiver
 * worker in one process (as UCX's examples and event-driven applications
 * have them), the receiver, or the initiator of an RMA operation, asleep in
 * poll() on its worker's event fd (or in epoll_wait() on an epoll fd of its
 * own, UCP_WORKER_PARAM_FIELD_EVENT_FD) after ucp_worker_arm().
 *
 *   ucp_events SCENARIO...     one line per scenario:
 *                              "ucp_events: SCENARIO: PASS ..." or FAIL
 *
 * Scenarios (each on new workers and a new endpoint, so that it also meets
 * the endpoint's first contact with its peer):
 *   tag_sent_before       the sender's tag send completes (its worker
 *                         progressed until then, never after), then the
 *                         receiver posts the receive and sleeps
 *   tag_sent_before_epoll the same, the receiver in epoll_wait on its own
 *                         epoll fd
 *   tag_sent_after        the receiver sleeps first; a thread of the
 *                         sender's sends 200 ms later
 *   tag_sent_after_epoll  the same with an epoll fd
 *   am_sent_before        an active message (ucp_am_send_nbx) instead
 *   put_completion        the initiator of a PUT sleeps until it completes
 *                         and until a flush after it does (the target is
 *                         never progressed), every byte checked
 *   get_completion        the same for a GET, every byte checked
 *   atomic_completion     the same for a fetch-and-add
 *
 * Every sleep has a deadline (WAIT_MS): an event that never comes is a
 * FAIL, never a hang.
 */
#include <ucp/api/ucp.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS      5000 /* one sleep; a message takes microseconds */
#define EVENTS_TAG   0x5eull
#define EVENTS_AM_ID 7

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  tx, rx;   /* sender (initiator), receiver (target) */
    ucp_ep_h      ep;       /* tx -> rx */
    int           rx_fd;    /* what the receiver sleeps in */
    int           rx_epoll; /* rx_fd is an epoll fd of our own */
    unsigned      sleeps;
    char          why[160];
} world_t;

typedef struct {
    volatile int done;
    ucs_status_t status;
    uint64_t     value; /* what an active message carried */
} req_t;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void send_cb(void *req, ucs_status_t status, void *arg)
{
    ((req_t *)arg)->status = status;
    ((req_t *)arg)->done   = 1;
}

static void recv_cb(void *req, ucs_status_t status,
                    const ucp_tag_recv_info_t *info, void *arg)
{
    ((req_t *)arg)->status = status;
    ((req_t *)arg)->done   = 1;
}

/* a request's parameters: its callback reports to r */
static ucp_request_param_t send_param(req_t *r)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                               UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.send   = send_cb,
                               .user_data = r};

    return prm;
}

static ucp_request_param_t recv_param(req_t *r)
{
    ucp_request_param_t prm = send_param(r);

    prm.cb.recv = recv_cb;
    return prm;
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    req_t *r = arg;

    if ((length == sizeof(r->value)) &&
        !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        memcpy(&r->value, data, sizeof(r->value));
        r->status = UCS_OK;
    } else {
        r->status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    r->done = 1;
    return UCS_OK;
}

/* Progress worker until nothing happens, arm it and sleep in fd (an
 * epoll fd when epoll); until r is done. 0, or -1 with w->why set. */
static int sleep_until(world_t *w, ucp_worker_h worker, int fd, int epoll,
                       req_t *r, const char *what)
{
    struct pollfd      pfd = {fd, POLLIN, 0};
    struct epoll_event ev;
    ucs_status_t       status;
    double             t0;
    int                n;

    while (!r->done) {
        if (ucp_worker_progress(worker) != 0) {
            continue;
        }
        status = ucp_worker_arm(worker);
        if (status == UCS_ERR_BUSY) {
            continue;
        } else if (status != UCS_OK) {
            snprintf(w->why, sizeof(w->why), "ucp_worker_arm: %s",
                     ucs_status_string(status));
            return -1;
        }
        ++w->sleeps;
        t0 = now_ms();
        n  = epoll ? epoll_wait(fd, &ev, 1, WAIT_MS) : poll(&pfd, 1, WAIT_MS);
        if (n == 0) {
            snprintf(w->why, sizeof(w->why),
                     "%s: asleep %.0f ms, never "
                     "woken (a hang)",
                     what, now_ms() - t0);
            return -1;
        } else if ((n < 0) && (errno != EINTR)) {
            snprintf(w->why, sizeof(w->why), "%s: %s", what, strerror(errno));
            return -1;
        }
    }
    if (r->status != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "%s: %s", what,
                 ucs_status_string(r->status));
        return -1;
    }
    return 0;
}

/* Progress the sender until its request is done (never after). */
static int tx_complete(world_t *w, void *req, req_t *r, const char *what)
{
    double end = now_ms() + WAIT_MS;

    if (UCS_PTR_IS_ERR(req)) {
        snprintf(w->why, sizeof(w->why), "%s: %s", what,
                 ucs_status_string(UCS_PTR_STATUS(req)));
        return -1;
    }
    if (req == NULL) {
        return 0; /* completed in place */
    }
    while (!r->done && (now_ms() < end)) {
        ucp_worker_progress(w->tx);
    }
    ucp_request_free(req);
    if (!r->done || (r->status != UCS_OK)) {
        snprintf(w->why, sizeof(w->why), "%s: %s", what,
                 r->done ? ucs_status_string(r->status) : "never completed");
        return -1;
    }
    return 0;
}

static int setup(world_t *w, int epoll, int threads)
{
    ucp_params_t        params = {.field_mask = UCP_PARAM_FIELD_FEATURES |
                                                UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                                  .features = UCP_FEATURE_TAG | UCP_FEATURE_AM |
                                              UCP_FEATURE_RMA | UCP_FEATURE_AMO64 |
                                              UCP_FEATURE_WAKEUP,
                                  .mt_workers_shared = threads};
    ucp_worker_params_t wp = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_ep_params_t     ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS};
    ucp_address_t      *addr;
    ucs_status_t        status;
    size_t              len;

    memset(w, 0, sizeof(*w));
    w->rx_epoll = epoll;
    if ((status = ucp_init(&params, NULL, &w->ctx)) != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "ucp_init: %s",
                 ucs_status_string(status));
        return -1;
    }
    if ((status = ucp_worker_create(w->ctx, &wp, &w->tx)) != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "ucp_worker_create: %s",
                 ucs_status_string(status));
        return -1;
    }
    if (epoll) {
        w->rx_fd = epoll_create1(EPOLL_CLOEXEC);
        wp.field_mask |= UCP_WORKER_PARAM_FIELD_EVENT_FD;
        wp.event_fd = w->rx_fd;
    }
    if (((status = ucp_worker_create(w->ctx, &wp, &w->rx)) != UCS_OK) ||
        (!epoll &&
         ((status = ucp_worker_get_efd(w->rx, &w->rx_fd)) != UCS_OK)) ||
        ((status = ucp_worker_get_address(w->rx, &addr, &len)) != UCS_OK)) {
        snprintf(w->why, sizeof(w->why), "receiver worker: %s",
                 ucs_status_string(status));
        return -1;
    }
    ep.address = addr;
    status     = ucp_ep_create(w->tx, &ep, &w->ep);
    ucp_worker_release_address(w->rx, addr);
    if (status != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "ucp_ep_create: %s",
                 ucs_status_string(status));
        return -1;
    }
    return 0;
}

static void teardown(world_t *w)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    void               *req;

    if (w->ep != NULL) {
        req = ucp_ep_close_nbx(w->ep, &prm);
        while (UCS_PTR_IS_PTR(req) &&
               (ucp_request_check_status(req) == UCS_INPROGRESS)) {
            ucp_worker_progress(w->tx);
            ucp_worker_progress(w->rx);
        }
        if (UCS_PTR_IS_PTR(req)) {
            ucp_request_free(req);
        }
    }
    if (w->rx != NULL) {
        ucp_worker_destroy(w->rx);
    }
    if (w->tx != NULL) {
        ucp_worker_destroy(w->tx);
    }
    if (w->rx_epoll && (w->rx_fd > 0)) {
        close(w->rx_fd);
    }
    if (w->ctx != NULL) {
        ucp_cleanup(w->ctx);
    }
}

static int tag_send(world_t *w, uint64_t v)
{
    req_t               r   = {0};
    ucp_request_param_t prm = send_param(&r);

    return tx_complete(w,
                       ucp_tag_send_nbx(w->ep, &v, sizeof(v), EVENTS_TAG, &prm),
                       &r, "tag send");
}

/* The receive is posted, then the receiver sleeps until it completes. */
static int tag_recv(world_t *w, uint64_t expect)
{
    uint64_t            got = 0;
    req_t               r   = {0};
    ucp_request_param_t prm = recv_param(&r);
    void *req = ucp_tag_recv_nbx(w->rx, &got, sizeof(got), EVENTS_TAG, ~0ull,
                                 &prm);
    int   ret;

    if (UCS_PTR_IS_ERR(req)) {
        snprintf(w->why, sizeof(w->why), "tag receive: %s",
                 ucs_status_string(UCS_PTR_STATUS(req)));
        return -1;
    }
    if (req == NULL) {
        r.done = 1; /* matched an unexpected message at once */
    }
    ret = sleep_until(w, w->rx, w->rx_fd, w->rx_epoll, &r, "tag receive");
    if (req != NULL) {
        ucp_request_free(req);
    }
    if ((ret == 0) && (got != expect)) {
        snprintf(w->why, sizeof(w->why), "received 0x%lx, sent 0x%lx",
                 (unsigned long)got, (unsigned long)expect);
        return -1;
    }
    return ret;
}

static int tag_sent_before(world_t *w)
{
    return (tag_send(w, 0x1234) != 0) ? -1 : tag_recv(w, 0x1234);
}

typedef struct {
    world_t *w;
    int      ret;
} sender_arg_t;

static void *late_sender(void *arg)
{
    sender_arg_t *a = arg;

    usleep(200000); /* the receiver is asleep by now */
    a->ret = tag_send(a->w, 0x5678);
    return NULL;
}

static int tag_sent_after(world_t *w)
{
    sender_arg_t a = {.w = w, .ret = -1};
    pthread_t    thread;
    int          ret;

    if (pthread_create(&thread, NULL, late_sender, &a) != 0) {
        snprintf(w->why, sizeof(w->why), "pthread_create failed");
        return -1;
    }
    ret = tag_recv(w, 0x5678);
    pthread_join(thread, NULL);
    if ((ret == 0) && (a.ret != 0)) {
        return -1;
    }
    if ((ret == 0) && (w->sleeps == 0)) {
        snprintf(w->why, sizeof(w->why), "the receiver never slept");
        return -1;
    }
    return ret;
}

static int am_sent_before(world_t *w)
{
    ucp_am_handler_param_t hp  = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                                UCP_AM_HANDLER_PARAM_FIELD_CB |
                                                UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                  .id = EVENTS_AM_ID,
                                  .cb = am_cb};
    req_t                  got = {0}, r = {0};
    ucp_request_param_t    prm = send_param(&r);
    uint64_t               v   = 0xa11ce;
    ucs_status_t           status;

    hp.arg = &got;
    if ((status = ucp_worker_set_am_recv_handler(w->rx, &hp)) != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "am handler: %s",
                 ucs_status_string(status));
        return -1;
    }
    if (tx_complete(w,
                    ucp_am_send_nbx(w->ep, EVENTS_AM_ID, NULL, 0, &v, sizeof(v),
                                    &prm),
                    &r, "am send")) {
        return -1;
    }
    if (sleep_until(w, w->rx, w->rx_fd, w->rx_epoll, &got, "am receive")) {
        return -1;
    }
    if (got.value != v) {
        snprintf(w->why, sizeof(w->why), "am carried 0x%lx, sent 0x%lx",
                 (unsigned long)got.value, (unsigned long)v);
        return -1;
    }
    return 0;
}

/* The target's memory, its key unpacked on the initiator's endpoint. */
typedef struct {
    ucp_mem_h  memh;
    ucp_rkey_h rkey;
    uint64_t  *buf;
} target_t;

static int target_map(world_t *w, target_t *t, uint64_t *buf, size_t len)
{
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                             UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = buf,
                               .length  = len};
    void                *packed;
    size_t               size;
    ucs_status_t         status;

    t->buf = buf;
    if (((status = ucp_mem_map(w->ctx, &mp, &t->memh)) != UCS_OK) ||
        ((status = ucp_rkey_pack(w->ctx, t->memh, &packed, &size)) != UCS_OK)) {
        snprintf(w->why, sizeof(w->why), "target memory: %s",
                 ucs_status_string(status));
        return -1;
    }
    status = ucp_ep_rkey_unpack(w->ep, packed, &t->rkey);
    ucp_rkey_buffer_release(packed);
    if (status != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "rkey unpack: %s",
                 ucs_status_string(status));
        return -1;
    }
    return 0;
}

static void target_unmap(world_t *w, target_t *t)
{
    ucp_rkey_destroy(t->rkey);
    ucp_mem_unmap(w->ctx, t->memh);
}

typedef enum {
    RMA_PUT,
    RMA_GET,
    RMA_ADD
} rma_kind_t;

/* The initiator posts and sleeps in its own event fd until the operation
 * completes; the target is never progressed. */
static int rma_completion(world_t *w, rma_kind_t kind)
{
    static uint64_t     remote[512];
    uint64_t            local[512], fetched = 0, add = 5;
    req_t               r    = {0};
    ucp_request_param_t prm  = send_param(&r);
    const char         *what = (kind == RMA_PUT) ? "put" :
                               (kind == RMA_GET) ? "get" :
                                                   "fetch-and-add";
    target_t            t;
    void               *req;
    int                 fd, ret, i;

    for (i = 0; i < 512; ++i) {
        remote[i] = (kind == RMA_GET) ? 0xbeef0000u + i : 0;
        local[i]  = (kind == RMA_PUT) ? 0xcafe0000u + i : 0;
    }
    if (ucp_worker_get_efd(w->tx, &fd) != UCS_OK) {
        snprintf(w->why, sizeof(w->why), "initiator's event fd");
        return -1;
    }
    if (target_map(w, &t, remote, sizeof(remote)) != 0) {
        return -1;
    }
    if (kind == RMA_PUT) {
        req = ucp_put_nbx(w->ep, local, sizeof(local), (uintptr_t)remote,
                          t.rkey, &prm);
    } else if (kind == RMA_GET) {
        req = ucp_get_nbx(w->ep, local, sizeof(local), (uintptr_t)remote,
                          t.rkey, &prm);
    } else {
        prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE |
                            UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        prm.datatype     = ucp_dt_make_contig(8);
        prm.reply_buffer = &fetched;
        remote[3]        = 37;
        req              = ucp_atomic_op_nbx(w->ep, UCP_ATOMIC_OP_ADD, &add, 1,
                                             (uintptr_t)&remote[3], t.rkey, &prm);
    }
    if (UCS_PTR_IS_ERR(req)) {
        snprintf(w->why, sizeof(w->why), "%s: %s", what,
                 ucs_status_string(UCS_PTR_STATUS(req)));
        target_unmap(w, &t);
        return -1;
    }
    if (req == NULL) {
        r.done = 1;
    }
    ret = sleep_until(w, w->tx, fd, 0, &r, what);
    if (req != NULL) {
        ucp_request_free(req);
    }
    if ((ret == 0) && (kind == RMA_PUT)) {
        /* a put completes when its buffer may be used again: the flush
         * says it is in the target's memory */
        memset(&r, 0, sizeof(r));
        req = ucp_ep_flush_nbx(w->ep, &prm);
        if (UCS_PTR_IS_ERR(req)) {
            snprintf(w->why, sizeof(w->why), "flush: %s",
                     ucs_status_string(UCS_PTR_STATUS(req)));
            ret = -1;
        } else {
            r.done = (req == NULL);
            ret    = sleep_until(w, w->tx, fd, 0, &r, "flush after put");
            if (req != NULL) {
                ucp_request_free(req);
            }
        }
    }
    for (i = 0; (ret == 0) && (i < 512); ++i) {
        if ((kind == RMA_PUT) && (remote[i] != 0xcafe0000u + i)) {
            snprintf(w->why, sizeof(w->why), "put: word %d is 0x%lx", i,
                     (unsigned long)remote[i]);
            ret = -1;
        } else if ((kind == RMA_GET) && (local[i] != 0xbeef0000u + i)) {
            snprintf(w->why, sizeof(w->why), "get: word %d is 0x%lx", i,
                     (unsigned long)local[i]);
            ret = -1;
        }
    }
    if ((ret == 0) && (kind == RMA_ADD) &&
        ((fetched != 37) || (remote[3] != 42))) {
        snprintf(w->why, sizeof(w->why),
                 "fetch-and-add: fetched %lu, "
                 "target %lu (37, 42)",
                 (unsigned long)fetched, (unsigned long)remote[3]);
        ret = -1;
    }
    target_unmap(w, &t);
    if ((ret == 0) && (w->sleeps == 0) && (req != NULL)) {
        /* completed before the first arm: fine, but say so */
        snprintf(w->why, sizeof(w->why), "(completed before a sleep)");
    }
    return ret;
}

static int put_completion(world_t *w)
{
    return rma_completion(w, RMA_PUT);
}

static int get_completion(world_t *w)
{
    return rma_completion(w, RMA_GET);
}

static int atomic_completion(world_t *w)
{
    return rma_completion(w, RMA_ADD);
}

static const struct {
    const char *name;
    int (*run)(world_t *);
    int epoll, threads;
} scenarios[] = {
        {"tag_sent_before", tag_sent_before, 0, 0},
        {"tag_sent_before_epoll", tag_sent_before, 1, 0},
        {"tag_sent_after", tag_sent_after, 0, 1},
        {"tag_sent_after_epoll", tag_sent_after, 1, 1},
        {"am_sent_before", am_sent_before, 0, 0},
        {"put_completion", put_completion, 0, 0},
        {"get_completion", get_completion, 0, 0},
        {"atomic_completion", atomic_completion, 0, 0},
};

int main(int argc, char **argv)
{
    int     failed = 0, found, i, a;
    world_t w;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (a = 1; a < argc; ++a) {
        found = 0;
        for (i = 0; i < (int)(sizeof(scenarios) / sizeof(scenarios[0])); ++i) {
            if (strcmp(argv[a], scenarios[i].name) != 0) {
                continue;
            }
            found = 1;
            if ((setup(&w, scenarios[i].epoll, scenarios[i].threads) == 0) &&
                (scenarios[i].run(&w) == 0)) {
                printf("ucp_events: %s: PASS (%u sleeps) %s\n", argv[a],
                       w.sleeps, w.why);
            } else {
                printf("ucp_events: %s: FAIL %s\n", argv[a], w.why);
                failed = 1;
            }
            teardown(&w);
        }
        if (!found) {
            printf("ucp_events: %s: FAIL no such scenario\n", argv[a]);
            failed = 1;
        }
    }
    return failed;
}
