/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucp_pingpong: every round trip of a UCP tag ping-pong timed on its own,
 * for what ucx_perftest's percentiles (its last 2048 samples) cannot show:
 * the worst round trip of a whole run.
 *
 *   ucp_pingpong server PORT
 *   ucp_pingpong client HOST PORT [ITERS [SIZE]]
 *
 * The two exchange UCP worker addresses over TCP (HOST: an IPv4 address),
 * then ping-pong SIZE bytes (default 8) ITERS times (default 100000), both
 * busy-polling. The client prints
 *   ucp_pingpong SIZE ITERS MEDIAN_US P99_US MAX_US OVER_1MS FIRST_US
 * (round trips; MAX and OVER_1MS without the first, which connects).
 * UCX_TLS and the rest come from the environment.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PP_TAG 0x5354524eull

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void pp_die(const char *what)
{
    fprintf(stderr, "ucp_pingpong: %s\n", what);
    exit(1);
}

static void pp_full(int fd, void *buf, size_t len, int out)
{
    char   *p = buf;
    ssize_t n;

    for (; len > 0; p += n, len -= (size_t)n) {
        n = out ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) {
            pp_die("the TCP exchange of addresses failed");
        }
    }
}

/* our address out, the peer's in, over a connected TCP socket */
static void *pp_exchange(int fd, const void *mine, size_t len, size_t *peer_len)
{
    uint64_t n = len;
    void    *peer;

    pp_full(fd, &n, sizeof(n), 1);
    pp_full(fd, (void *)mine, len, 1);
    pp_full(fd, &n, sizeof(n), 0);
    if (n > (1u << 20)) {
        pp_die("a peer address over 1 MiB");
    }
    peer = malloc(n);
    pp_full(fd, peer, n, 0);
    *peer_len = n;
    return peer;
}

static int pp_connect(int server, const char *host, int port)
{
    struct sockaddr_in a  = {0};
    int                fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, c;

    a.sin_family = AF_INET;
    a.sin_port   = htons((uint16_t)port);
    if (!server) {
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
            pp_die("HOST is not an IPv4 address");
        }
        for (int i = 0; connect(fd, (struct sockaddr *)&a, sizeof(a)); ++i) {
            if (i == 100) {
                pp_die("cannot connect to the server");
            }
            usleep(100000);
        }
        return fd;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1)) {
        pp_die("cannot listen on PORT");
    }
    c = accept(fd, NULL, NULL);
    close(fd);
    return c;
}

/* wait for a request of ours (NULL: done at once) */
static void pp_wait(ucp_worker_h w, void *req)
{
    if (UCS_PTR_IS_ERR(req)) {
        pp_die(ucs_status_string(UCS_PTR_STATUS(req)));
    }
    if (req == NULL) {
        return;
    }
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(w);
    }
    if (ucp_request_check_status(req) != UCS_OK) {
        pp_die(ucs_status_string(ucp_request_check_status(req)));
    }
    ucp_request_free(req);
}

int main(int argc, char **argv)
{
    ucp_params_t        params    = {0};
    ucp_worker_params_t wp        = {0};
    ucp_ep_params_t     ep_params = {0};
    ucp_request_param_t rp        = {0};
    int                 server, fd, iters, i;
    size_t              size, alen, plen;
    ucp_address_t      *addr;
    ucp_context_h       ctx;
    ucp_worker_h        w;
    ucp_ep_h            ep;
    double             *rtt, t0, worst = 0;
    unsigned            over = 0;
    char               *buf;
    void               *peer;

    if ((argc < 3) || (strcmp(argv[1], "server") && (argc < 4))) {
        fprintf(stderr, "usage: ucp_pingpong server PORT | "
                        "client HOST PORT [ITERS [SIZE]]\n");
        return 2;
    }
    server = !strcmp(argv[1], "server");
    iters  = (!server && (argc > 4)) ? atoi(argv[4]) : 100000;
    size   = (!server && (argc > 5)) ? strtoul(argv[5], NULL, 0) : 8;
    fd     = pp_connect(server, server ? NULL : argv[2],
                        atoi(argv[server ? 2 : 3]));
    /* the client tells the server how many and how big */
    if (server) {
        uint64_t v[2];
        pp_full(fd, v, sizeof(v), 0);
        iters = (int)v[0];
        size  = v[1];
    } else {
        uint64_t v[2] = {(uint64_t)iters, size};
        pp_full(fd, v, sizeof(v), 1);
    }
    if ((iters < 2) || (size == 0)) {
        pp_die("bad ITERS or SIZE");
    }

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    if (ucp_init(&params, NULL, &ctx) != UCS_OK) {
        pp_die("ucp_init failed");
    }
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if ((ucp_worker_create(ctx, &wp, &w) != UCS_OK) ||
        (ucp_worker_get_address(w, &addr, &alen) != UCS_OK)) {
        pp_die("no worker");
    }
    peer                 = pp_exchange(fd, addr, alen, &plen);
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = peer;
    if (ucp_ep_create(w, &ep_params, &ep) != UCS_OK) {
        pp_die("no endpoint");
    }
    buf = calloc(1, size);
    rtt = calloc((size_t)iters, sizeof(*rtt));

    for (i = 0; i < iters; ++i) {
        t0 = now_us();
        if (!server) {
            pp_wait(w, ucp_tag_send_nbx(ep, buf, size, PP_TAG, &rp));
        }
        pp_wait(w, ucp_tag_recv_nbx(w, buf, size, PP_TAG, ~0ull, &rp));
        if (server) {
            pp_wait(w, ucp_tag_send_nbx(ep, buf, size, PP_TAG, &rp));
        }
        rtt[i] = now_us() - t0;
    }
    /* both done before either goes */
    pp_full(fd, &i, sizeof(i), 1);
    pp_full(fd, &i, sizeof(i), 0);

    if (!server) {
        double first = rtt[0];
        for (i = 1; i < iters; ++i) {
            worst = (rtt[i] > worst) ? rtt[i] : worst;
            over += (rtt[i] > 1000.0);
        }
        qsort(rtt + 1, (size_t)iters - 1, sizeof(*rtt), cmp_double);
        printf("ucp_pingpong %zu %d %.2f %.2f %.2f %u %.2f\n", size, iters,
               rtt[1 + (iters - 1) / 2], rtt[1 + (size_t)((iters - 1) * 0.99)],
               worst, over, first);
    }
    pp_wait(w, ucp_ep_close_nbx(ep, &rp));
    ucp_worker_release_address(w, addr);
    ucp_worker_destroy(w);
    ucp_cleanup(ctx);
    free(peer);
    free(buf);
    free(rtt);
    close(fd);
    return 0;
}
