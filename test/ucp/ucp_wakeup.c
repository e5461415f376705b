/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UCP ping-pong driven only by events: each side sleeps in poll() on the
 * worker's event fd after ucp_worker_arm() whenever progress finds nothing.
 * Two processes (fork), worker addresses exchanged over a socketpair.
 *
 *   ucp_wakeup [ITERATIONS]       prints "ucp_wakeup: PASS ..." or FAIL
 *
 * A transport whose events never come hangs it (each wait has a deadline);
 * one whose events fire for nothing makes it spin: the loops per iteration
 * (progress, arm, poll) are counted and must stay small.
 */
#include <ucp/api/ucp.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAKEUP_TAG       0x77ull
#define WAKEUP_WAIT_MS   20000 /* one message never takes this long */
#define WAKEUP_MAX_LOOPS 16.0  /* per iteration, on average */

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           efd;
    int           rank;
    unsigned long loops, sleeps, wakeups;
} peer_t;

typedef struct {
    int          done;
    ucs_status_t status;
} req_t;

static void die(peer_t *p, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ucp_wakeup: rank %d: FAIL: ", p->rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void send_cb(void *req, ucs_status_t status, void *arg)
{
    ((req_t *)arg)->done   = 1;
    ((req_t *)arg)->status = status;
}

static void recv_cb(void *req, ucs_status_t status,
                    const ucp_tag_recv_info_t *info, void *arg)
{
    ((req_t *)arg)->done   = 1;
    ((req_t *)arg)->status = status;
}

/* progress; when nothing happened, arm and sleep until the fd fires */
static void wait_for(peer_t *p, req_t *r, const char *what)
{
    struct pollfd pfd = {p->efd, POLLIN, 0};
    ucs_status_t  status;
    int           n;

    while (!r->done) {
        ++p->loops;
        if (ucp_worker_progress(p->worker) != 0) {
            continue;
        }
        status = ucp_worker_arm(p->worker);
        if (status == UCS_ERR_BUSY) {
            continue;
        } else if (status != UCS_OK) {
            die(p, "ucp_worker_arm: %s", ucs_status_string(status));
        }
        ++p->sleeps;
        n = poll(&pfd, 1, WAKEUP_WAIT_MS);
        if (n == 0) {
            die(p, "%s: no event for %d ms (a hang)", what, WAKEUP_WAIT_MS);
        } else if (n < 0) {
            die(p, "poll: %s", strerror(errno));
        }
        ++p->wakeups;
    }
    if (r->status != UCS_OK) {
        die(p, "%s: %s", what, ucs_status_string(r->status));
    }
}

static void finish(peer_t *p, void *req, req_t *r, const char *what)
{
    if (UCS_PTR_IS_ERR(req)) {
        die(p, "%s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    if (req == NULL) {
        return; /* completed in place */
    }
    wait_for(p, r, what);
    ucp_request_free(req);
}

static void send_u64(peer_t *p, const uint64_t *v)
{
    req_t               r   = {0};
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                               UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.send   = send_cb,
                               .user_data = &r};

    finish(p, ucp_tag_send_nbx(p->ep, v, sizeof(*v), WAKEUP_TAG, &prm), &r,
           "send");
}

static void recv_u64(peer_t *p, uint64_t *v)
{
    req_t               r   = {0};
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                               UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.recv   = recv_cb,
                               .user_data = &r};

    finish(p,
           ucp_tag_recv_nbx(p->worker, v, sizeof(*v), WAKEUP_TAG, ~0ull, &prm),
           &r, "receive");
}

static void xfer(int fd, void *buf, size_t len, int out)
{
    size_t  done = 0;
    ssize_t n;

    while (done < len) {
        n = out ? write(fd, (char *)buf + done, len - done) :
                  read(fd, (char *)buf + done, len - done);
        if (n <= 0) {
            fprintf(stderr, "ucp_wakeup: address exchange: %s\n",
                    (n == 0) ? "peer closed" : strerror(errno));
            exit(1);
        }
        done += n;
    }
}

static void setup(peer_t *p, int sock)
{
    ucp_params_t        params  = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                                   .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP};
    ucp_worker_params_t wparams = {
            .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE |
                          UCP_WORKER_PARAM_FIELD_EVENTS,
            .thread_mode = UCS_THREAD_MODE_SINGLE,
            .events      = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV};
    ucp_ep_params_t eparams;
    ucp_address_t  *addr, *peer;
    size_t          len, peer_len;
    ucs_status_t    status;

    if ((ucp_init(&params, NULL, &p->ctx) != UCS_OK) ||
        (ucp_worker_create(p->ctx, &wparams, &p->worker) != UCS_OK) ||
        (ucp_worker_get_efd(p->worker, &p->efd) != UCS_OK) ||
        (ucp_worker_get_address(p->worker, &addr, &len) != UCS_OK)) {
        die(p, "UCP setup");
    }
    xfer(sock, &len, sizeof(len), 1);
    xfer(sock, addr, len, 1);
    xfer(sock, &peer_len, sizeof(peer_len), 0);
    peer = malloc(peer_len);
    xfer(sock, peer, peer_len, 0);
    ucp_worker_release_address(p->worker, addr);

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer;
    status             = ucp_ep_create(p->worker, &eparams, &p->ep);
    free(peer);
    if (status != UCS_OK) {
        die(p, "ucp_ep_create: %s", ucs_status_string(status));
    }
}

static void teardown(peer_t *p, int sock)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    void               *req;
    char                c = 0;

    /* both sides done before either closes */
    xfer(sock, &c, 1, 1);
    xfer(sock, &c, 1, 0);
    req = ucp_ep_close_nbx(p->ep, &prm);
    while (UCS_PTR_IS_PTR(req) &&
           (ucp_request_check_status(req) == UCS_INPROGRESS)) {
        ucp_worker_progress(p->worker);
    }
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
    ucp_worker_destroy(p->worker);
    ucp_cleanup(p->ctx);
}

static int run(int rank, int sock, unsigned long iters)
{
    peer_t   p = {.rank = rank};
    uint64_t i, v;
    double   per_iter;

    setup(&p, sock);
    for (i = 0; i < iters; ++i) {
        if (rank == 0) {
            v = i;
            send_u64(&p, &v);
            recv_u64(&p, &v);
            if (v != i + 1000000) {
                die(&p, "iteration %lu: got %lu", (unsigned long)i,
                    (unsigned long)v);
            }
        } else {
            recv_u64(&p, &v);
            if (v != i) {
                die(&p, "iteration %lu: got %lu", (unsigned long)i,
                    (unsigned long)v);
            }
            v = i + 1000000;
            send_u64(&p, &v);
        }
    }
    per_iter = (double)p.loops / iters;
    printf("ucp_wakeup: rank %d: %lu iterations, %lu loops (%.2f per "
           "iteration), %lu sleeps, %lu wakeups\n",
           rank, iters, p.loops, per_iter, p.sleeps, p.wakeups);
    if (per_iter > WAKEUP_MAX_LOOPS) {
        die(&p, "%.2f loops per iteration: events fire for nothing (spin)",
            per_iter);
    }
    if (p.sleeps == 0) {
        die(&p, "never slept: the wait was not event-driven");
    }
    teardown(&p, sock);
    printf("ucp_wakeup: rank %d: PASS\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long iters = (argc > 1) ? strtoul(argv[1], NULL, 0) : 10000;
    int           sv[2], ret, status;
    pid_t         child;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        close(sv[0]);
        return run(1, sv[1], iters);
    }
    close(sv[1]);
    ret = run(0, sv[0], iters);
    if ((waitpid(child, &status, 0) != child) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "ucp_wakeup: rank 1 failed\n");
        return 1;
    }
    if (ret == 0) {
        printf("ucp_wakeup: PASS\n");
    }
    return ret;
}
