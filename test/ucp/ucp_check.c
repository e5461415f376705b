/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucp_check: UCP over whatever UCX_TLS selects, every received byte checked.
 *
 *   ucp_check DIR RANK data     two ranks (0, 1): tag (eager and rendezvous,
 *                               1 B .. 16 MiB), stream, active messages,
 *                               PUT/GET and atomics
 *   ucp_check DIR RANK failure  N ranks (STRAND_CHECK_RANKS, default 3, up
 *                               to 8): rank 0 ping-pongs with all others
 *                               over endpoints with peer error handling; the
 *                               harness kills the last rank (SIGKILL)
 *                               mid-traffic; rank 0 must see the error on
 *                               that endpoint only, within
 *                               STRAND_CHECK_ERR_TIMEOUT seconds (default
 *                               10), and keep talking to the others
 *   ucp_check DIR RANK keepalive two ranks: rank 0 leaves a rendezvous send
 *                               to rank 1 waiting (rank 1 never receives
 *                               it) and stays idle; the harness kills rank
 *                               1; the send must end with an error, and the
 *                               endpoint's handler run, within
 *                               STRAND_CHECK_ERR_TIMEOUT seconds of the kill
 *                               (UCP's keepalive, uct_ep_check, is all that
 *                               can find an idle endpoint's peer gone)
 *
 * Ranks find each other through files in DIR (worker address, rkey). Every
 * rank prints one verdict line "ucp_check: rank R: PASS" or "... FAIL (why)"
 * and exits 0 only on PASS.
 */
#include <ucp/api/ucp.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS   8
#define REGION_SIZE (4u << 20)
#define TAG_DATA    0x1000000000ull
#define TAG_SYNC    0x2000000000ull
#define TAG_PING    0x3000000000ull
#define TAG_STOP    0x4000000000ull
#define TAG_MASK    0xffffffffffffffffull
#define AM_ID       7

static const char   *dir;
static int           rank;
static ucp_context_h context;
static ucp_worker_h  worker;
static ucp_ep_h      eps[MAX_RANKS];
static ucp_mem_h     region_memh;
static uint8_t      *region; /* REGION_SIZE, registered */
static uint64_t      remote_base[MAX_RANKS];
static ucp_rkey_h    rkeys[MAX_RANKS];
static int           nranks = 2;
static char          failure[256];
static int           failed;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* what the rank is doing: a rank the harness ends (timeout's SIGTERM)
 * says where it hung */
static char   phase[128] = "setup";
static double phase_start; /* when the current part began */

/* a part is done: say so, with the seconds it took */
static void part_done(const char *what)
{
    double t = now();

    printf("ucp_check: rank %d: %s done (%.2f s)\n", rank, what,
           t - phase_start);
    phase_start = t;
}

static void set_phase(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(phase, sizeof(phase), fmt, ap);
    va_end(ap);
}

static void on_term(int sig)
{
    char line[256];
    int  n;

    n = snprintf(line, sizeof(line),
                 "ucp_check: rank %d: FAIL (ended by "
                 "signal %d in: %s)\n",
                 rank, sig, phase);
    if (write(STDOUT_FILENO, line, n) < 0) {
        /* nothing more to say */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (!failed) {
        vsnprintf(failure, sizeof(failure), fmt, ap);
    }
    va_end(ap);
    va_start(ap, fmt);
    fprintf(stderr, "ucp_check: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failed = 1;
}

static int verdict(void)
{
    if (failed) {
        printf("ucp_check: rank %d: FAIL (%s)\n", rank, failure);
    } else {
        printf("ucp_check: rank %d: PASS\n", rank);
    }
    fflush(stdout);
    return failed ? 1 : 0;
}

static void die(const char *what, ucs_status_t status)
{
    fail("%s: %s", what, ucs_status_string(status));
    exit(verdict());
}

static uint8_t pat(int src, int dst, unsigned seed, size_t i)
{
    return (uint8_t)(src * 41 + dst * 13 + seed * 97 + i * 5 + (i >> 11));
}

static void fill(void *buf, size_t len, int src, int dst, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        ((uint8_t *)buf)[i] = pat(src, dst, seed, i);
    }
}

static void verify(const char *what, const void *buf, size_t len, int src,
                   int dst, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (((const uint8_t *)buf)[i] != pat(src, dst, seed, i)) {
            fail("%s (%zu bytes): wrong byte at offset %zu", what, len, i);
            return;
        }
    }
}

/* ------------------------------------------------ files in DIR */

static void write_file(const char *name, const void *data, size_t len)
{
    char  path[4096], tmp[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "wb");
    if ((f == NULL) || (fwrite(data, 1, len, f) != len) || fclose(f)) {
        fail("cannot write %s: %s", tmp, strerror(errno));
        exit(verdict());
    }
    rename(tmp, path); /* readers never see half a file */
}

/* the contents of DIR/name once it exists (waits up to 60 s): the writer
 * renames it into DIR, which inotify reports, so nothing sleeps */
static void *read_file(const char *name, size_t *len)
{
    char          path[4096], events[4096];
    double        left, end = now() + 60;
    struct pollfd pfd = {.events = POLLIN};
    struct stat   st;
    void         *data;
    FILE         *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    /* watching before the first look: a rename in between is not missed */
    pfd.fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if ((pfd.fd < 0) ||
        (inotify_add_watch(pfd.fd, dir, IN_MOVED_TO | IN_CREATE) < 0)) {
        fail("cannot watch %s: %s", dir, strerror(errno));
        exit(verdict());
    }
    while (stat(path, &st) != 0) {
        left = end - now();
        if (left <= 0) {
            fail("timed out waiting for %s", path);
            exit(verdict());
        }
        if (poll(&pfd, 1, (int)(left * 1000) + 1) > 0) {
            while (read(pfd.fd, events, sizeof(events)) > 0) {
                /* drain: stat() above tells whether it was ours */
            }
        }
    }
    close(pfd.fd);
    data = malloc(st.st_size + 1);
    f    = fopen(path, "rb");
    if ((f == NULL) || (fread(data, 1, st.st_size, f) != (size_t)st.st_size)) {
        fail("cannot read %s", path);
        exit(verdict());
    }
    fclose(f);
    *len = st.st_size;
    return data;
}

static int file_exists(const char *name)
{
    char        path[4096];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* ------------------------------------------------ requests */

typedef struct {
    int          done;
    ucs_status_t status;
    size_t       length;
} req_ctx_t;

static void send_cb(void *request __attribute__((unused)), ucs_status_t status,
                    void *user_data)
{
    req_ctx_t *c = user_data;

    c->status = status;
    c->done   = 1;
}

/* parameters of a send-like request that completes into *c */
static ucp_request_param_t send_param(req_ctx_t *c)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.send   = send_cb,
                             .user_data = c};

    memset(c, 0, sizeof(*c));
    return p;
}

static void tag_recv_cb(void        *request __attribute__((unused)),
                        ucs_status_t status, const ucp_tag_recv_info_t *info,
                        void *user_data)
{
    req_ctx_t *c = user_data;

    c->status = status;
    c->length = info->length;
    c->done   = 1;
}

static void stream_recv_cb(void        *request __attribute__((unused)),
                           ucs_status_t status, size_t length, void *user_data)
{
    req_ctx_t *c = user_data;

    c->status = status;
    c->length = length;
    c->done   = 1;
}

/* Wait for a request (or an immediate status); 0 on success. With a
 * deadline, gives up (cancels) after `secs` seconds and returns -1. */
static ucs_status_t wait_req(void *req, req_ctx_t *c, double secs)
{
    double       end = now() + secs;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while (!c->done) {
        ucp_worker_progress(worker);
        if (now() > end) {
            /* a receive ends cancelled; a send cannot be cancelled: it is
             * left behind (the rank fails anyway) rather than waited for */
            ucp_request_cancel(worker, req);
            for (end = now() + 5; !c->done && (now() < end);) {
                ucp_worker_progress(worker);
            }
            if (c->done) {
                ucp_request_free(req);
            }
            return UCS_ERR_TIMED_OUT;
        }
    }
    status = c->status;
    ucp_request_free(req);
    return status;
}

static ucs_status_t
tag_send(int peer, const void *buf, size_t len, ucp_tag_t tag, double secs)
{
    req_ctx_t           c = {0};
    ucp_request_param_t p = send_param(&c);

    return wait_req(ucp_tag_send_nbx(eps[peer], buf, len, tag, &p), &c, secs);
}

static void *tag_recv_post(void *buf, size_t len, ucp_tag_t tag, req_ctx_t *c)
{
    /* no immediate completion: UCX 1.13 would not report the length */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA |
                                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                             .cb.recv   = tag_recv_cb,
                             .user_data = c};

    memset(c, 0, sizeof(*c));
    return ucp_tag_recv_nbx(worker, buf, len, tag, TAG_MASK, &p);
}

static ucs_status_t
tag_recv(void *buf, size_t len, ucp_tag_t tag, double secs, size_t *got)
{
    req_ctx_t    c;
    void        *req    = tag_recv_post(buf, len, tag, &c);
    ucs_status_t status = wait_req(req, &c, secs);

    *got = c.length;
    return status;
}

/* progress until a message with `tag` waits here unexpected (probed, not
 * taken): a receive posted after this matches an unexpected message */
static void wait_unexpected(ucp_tag_t tag, double secs)
{
    double              end = now() + secs;
    ucp_tag_recv_info_t info;

    while (ucp_tag_probe_nb(worker, tag, TAG_MASK, 0, &info) == NULL) {
        if (now() > end) {
            fail("no message with tag %#" PRIx64 " arrived within %.0f s",
                 (uint64_t)tag, secs);
            return;
        }
        ucp_worker_progress(worker);
    }
}

/* both ranks of the data test meet here */
static void sync_peer(int peer, unsigned round)
{
    size_t       got;
    ucs_status_t status;

    set_phase("sync %u with rank %d", round, peer);
    status = tag_send(peer, NULL, 0, TAG_SYNC | round, 60);
    if (status == UCS_OK) {
        status = tag_recv(NULL, 0, TAG_SYNC | round, 60, &got);
    }
    if (status != UCS_OK) {
        die("sync", status);
    }
}

static void flush_ep(int peer)
{
    req_ctx_t           c = {0};
    ucp_request_param_t p = send_param(&c);
    ucs_status_t status   = wait_req(ucp_ep_flush_nbx(eps[peer], &p), &c, 60);

    if (status != UCS_OK) {
        die("ep flush", status);
    }
}

/* ------------------------------------------------ setup */

static void err_handler(void *arg, ucp_ep_h ep, ucs_status_t status);

static int          ep_errors[MAX_RANKS];
static ucs_status_t ep_error_status[MAX_RANKS];
static double       ep_error_time[MAX_RANKS];

static void setup(int nranks, int peer_err)
{
    ucp_params_t         params  = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                                    .features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM |
                                                UCP_FEATURE_AM | UCP_FEATURE_RMA |
                                                UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64};
    ucp_worker_params_t  wparams = {.field_mask =
                                            UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                    .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_mem_map_params_t mparams = {.field_mask =
                                            UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                            UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                                    .length = REGION_SIZE};
    ucp_config_t        *config;
    ucp_address_t       *addr;
    size_t               addr_len, len, rkey_len;
    void                *rkey_buf, *data;
    char                 name[64];
    ucs_status_t         status;
    int                  peer;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        die("ucp_config_read", status);
    }
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        die("ucp_init", status);
    }
    status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        die("ucp_worker_create", status);
    }
    status = ucp_worker_get_address(worker, &addr, &addr_len);
    if (status != UCS_OK) {
        die("ucp_worker_get_address", status);
    }
    snprintf(name, sizeof(name), "addr.%d", rank);
    write_file(name, addr, addr_len);
    ucp_worker_release_address(worker, addr);

    region = aligned_alloc(4096, REGION_SIZE);
    memset(region, 0, REGION_SIZE);
    mparams.address = region;
    status          = ucp_mem_map(context, &mparams, &region_memh);
    if (status != UCS_OK) {
        die("ucp_mem_map", status);
    }
    status = ucp_rkey_pack(context, region_memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        die("ucp_rkey_pack", status);
    }
    data              = malloc(sizeof(uint64_t) + rkey_len);
    *(uint64_t *)data = (uintptr_t)region;
    memcpy((uint8_t *)data + sizeof(uint64_t), rkey_buf, rkey_len);
    snprintf(name, sizeof(name), "rkey.%d", rank);
    write_file(name, data, sizeof(uint64_t) + rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
    free(data);

    for (peer = 0; peer < nranks; ++peer) {
        ucp_ep_params_t ep_params = {
                .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
                .err_mode = peer_err ? UCP_ERR_HANDLING_MODE_PEER :
                                       UCP_ERR_HANDLING_MODE_NONE};

        if (peer == rank) {
            continue;
        }
        if (peer_err) {
            ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.err_handler.cb  = err_handler;
            ep_params.err_handler.arg = (void *)(uintptr_t)peer;
        }
        snprintf(name, sizeof(name), "addr.%d", peer);
        ep_params.address = read_file(name, &len);
        status            = ucp_ep_create(worker, &ep_params, &eps[peer]);
        free((void *)ep_params.address);
        if (status != UCS_OK) {
            die("ucp_ep_create", status);
        }
        snprintf(name, sizeof(name), "rkey.%d", peer);
        data              = read_file(name, &len);
        remote_base[peer] = *(uint64_t *)data;
        status            = ucp_ep_rkey_unpack(eps[peer],
                                               (uint8_t *)data + sizeof(uint64_t),
                                               &rkeys[peer]);
        free(data);
        if (status != UCS_OK) {
            die("ucp_ep_rkey_unpack", status);
        }
    }
}

static void close_eps(int nranks, int force)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    double              end;
    void               *req;
    int                 peer;

    for (peer = 0; peer < nranks; ++peer) {
        if (eps[peer] == NULL) {
            continue;
        }
        ucp_rkey_destroy(rkeys[peer]);
        req = ucp_ep_close_nbx(eps[peer], &p);
        end = now() + 30;
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(worker);
                if (now() > end) {
                    fail("closing the endpoint to rank %d hangs", peer);
                    exit(verdict());
                }
            }
            ucp_request_free(req);
        }
    }
}

static void teardown(void)
{
    double end = now() + 0.2;

    /* a forced close finishes releasing the transport endpoints on later
     * progress; UCX 1.13 asserts in ucp_worker_destroy otherwise */
    while (now() < end) {
        ucp_worker_progress(worker);
    }
    ucp_mem_unmap(context, region_memh);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    free(region);
}

/* ------------------------------------------------ data test */

static const size_t tag_sizes[] = {1,    8,    100,   1000,    8191,
                                   8192, 8257, 65536, 1 << 20, (16 << 20) + 5};
#define NUM_TAG_SIZES (sizeof(tag_sizes) / sizeof(tag_sizes[0]))

static void check_tag(int peer)
{
    void        *rreq[NUM_TAG_SIZES];
    req_ctx_t    rc[NUM_TAG_SIZES];
    uint8_t     *rbuf[NUM_TAG_SIZES], *sbuf;
    ucs_status_t status;
    unsigned     i;

    /* receives first (expected), then ... */
    for (i = 0; i < NUM_TAG_SIZES; ++i) {
        rbuf[i] = malloc(tag_sizes[i] + 1);
        memset(rbuf[i], 0xee, tag_sizes[i] + 1);
        rreq[i] = tag_recv_post(rbuf[i], tag_sizes[i], TAG_DATA | i, &rc[i]);
    }
    sync_peer(peer, 1);
    for (i = 0; i < NUM_TAG_SIZES; ++i) {
        set_phase("tag send %zu B (expected)", tag_sizes[i]);
        sbuf = malloc(tag_sizes[i]);
        fill(sbuf, tag_sizes[i], rank, peer, i);
        status = tag_send(peer, sbuf, tag_sizes[i], TAG_DATA | i, 60);
        if (status != UCS_OK) {
            fail("tag send %zu B: %s", tag_sizes[i], ucs_status_string(status));
        }
        free(sbuf);
    }
    for (i = 0; i < NUM_TAG_SIZES; ++i) {
        set_phase("tag recv %zu B (expected)", tag_sizes[i]);
        status = wait_req(rreq[i], &rc[i], 60);
        if ((status != UCS_OK) ||
            ((rreq[i] != NULL) && (rc[i].length != tag_sizes[i]))) {
            fail("tag recv %zu B: %s, %zu bytes", tag_sizes[i],
                 ucs_status_string(status), rc[i].length);
        }
        verify("tag expected", rbuf[i], tag_sizes[i], peer, rank, i);
        if (rbuf[i][tag_sizes[i]] != 0xee) {
            fail("tag recv %zu B wrote past the end", tag_sizes[i]);
        }
        free(rbuf[i]);
    }
    sync_peer(peer, 2);
    /* ... unexpected: the peer sends before we post */
    for (i = 0; i < NUM_TAG_SIZES; ++i) {
        set_phase("tag send and recv %zu B (unexpected)", tag_sizes[i]);
        sbuf = malloc(tag_sizes[i]);
        fill(sbuf, tag_sizes[i], rank, peer, 50 + i);
        rbuf[i] = malloc(tag_sizes[i]);
        {
            req_ctx_t           sc = {0};
            ucp_request_param_t p  = send_param(&sc);
            void  *sreq = ucp_tag_send_nbx(eps[peer], sbuf, tag_sizes[i],
                                           TAG_DATA | (100 + i), &p);
            size_t got;

            wait_unexpected(TAG_DATA | (100 + i), 60);
            status = tag_recv(rbuf[i], tag_sizes[i], TAG_DATA | (100 + i), 60,
                              &got);
            if ((status != UCS_OK) || (got != tag_sizes[i])) {
                fail("unexpected tag recv %zu B: %s, %zu bytes", tag_sizes[i],
                     ucs_status_string(status), got);
            }
            status = wait_req(sreq, &sc, 60);
            if (status != UCS_OK) {
                fail("unexpected tag send: %s", ucs_status_string(status));
            }
        }
        verify("tag unexpected", rbuf[i], tag_sizes[i], peer, rank, 50 + i);
        free(sbuf);
        free(rbuf[i]);
    }
    part_done("tag 1 B .. 16 MiB (expected, unexpected)");
}

static void check_stream(int peer)
{
    const size_t        total = 3 * 1024 * 1024 + 17;
    uint8_t            *sbuf = malloc(total), *rbuf = malloc(total);
    size_t              off = 0, chunk, got = 0, len;
    req_ctx_t           rc = {0}, sc;
    ucs_status_t        status;
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA |
                                              UCP_OP_ATTR_FIELD_FLAGS,
                              .cb.recv_stream = stream_recv_cb,
                              .user_data      = &rc,
                              .flags          = UCP_STREAM_RECV_FLAG_WAITALL};
    void               *rreq;

    set_phase("stream");
    fill(sbuf, total, rank, peer, 200);
    memset(rbuf, 0, total);
    rreq = ucp_stream_recv_nbx(eps[peer], rbuf, total, &len, &rp);
    for (chunk = 1; off < total; chunk = chunk * 3 + 7) {
        ucp_request_param_t sp = send_param(&sc);
        size_t              n  = (chunk > total - off) ? total - off : chunk;

        status = wait_req(ucp_stream_send_nbx(eps[peer], sbuf + off, n, &sp),
                          &sc, 60);
        if (status != UCS_OK) {
            fail("stream send: %s", ucs_status_string(status));
            break;
        }
        off += n;
    }
    if (rreq == NULL) {
        got = len;
    } else {
        status = wait_req(rreq, &rc, 60);
        got    = rc.length;
        if (status != UCS_OK) {
            fail("stream recv: %s", ucs_status_string(status));
        }
    }
    if (got != total) {
        fail("stream: received %zu of %zu bytes", got, total);
    }
    verify("stream", rbuf, total, peer, rank, 200);
    free(sbuf);
    free(rbuf);
    sync_peer(peer, 3);
    part_done("stream 3 MiB");
}

/* active messages: the handler keeps (copies) what arrives */
static const size_t am_sizes[] = {0, 10, 5000, 100000, 4 << 20};
#define NUM_AM_SIZES (sizeof(am_sizes) / sizeof(am_sizes[0]))
static uint8_t *am_buf[NUM_AM_SIZES];
static size_t   am_len[NUM_AM_SIZES];
static int      am_arrived[NUM_AM_SIZES];

static void
am_data_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    uintptr_t i = (uintptr_t)user_data;

    am_len[i]     = length;
    am_arrived[i] = (status == UCS_OK) ? 1 : -1;
    ucp_request_free(request);
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    uint32_t            i;
    void               *req;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.recv_am = am_data_cb};

    if ((header_length != sizeof(i)) ||
        (memcpy(&i, header, sizeof(i)), i >= NUM_AM_SIZES)) {
        fail("active message with a bad header (%zu bytes)", header_length);
        return UCS_OK;
    }
    am_buf[i] = malloc(length + 1);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        p.user_data = (void *)(uintptr_t)i;
        req         = ucp_am_recv_data_nbx(worker, data, am_buf[i], length, &p);
        if (req == NULL) {
            am_len[i]     = length;
            am_arrived[i] = 1;
        } else if (UCS_PTR_IS_ERR(req)) {
            am_arrived[i] = -1;
        }
        return UCS_OK;
    }
    memcpy(am_buf[i], data, length);
    am_len[i]     = length;
    am_arrived[i] = 1;
    return UCS_OK;
}

static void check_am(int peer)
{
    ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                 .id  = AM_ID,
                                 .cb  = am_cb,
                                 .arg = NULL};
    ucs_status_t           status;
    uint32_t               i;
    double                 end;

    status = ucp_worker_set_am_recv_handler(worker, &hp);
    if (status != UCS_OK) {
        die("set am handler", status);
    }
    sync_peer(peer, 4);
    for (i = 0; i < NUM_AM_SIZES; ++i) {
        uint8_t            *sbuf = malloc(am_sizes[i] + 1);
        req_ctx_t           c    = {0};
        ucp_request_param_t p    = send_param(&c);

        set_phase("am send %zu B", am_sizes[i]);
        fill(sbuf, am_sizes[i], rank, peer, 300 + i);
        status = wait_req(ucp_am_send_nbx(eps[peer], AM_ID, &i, sizeof(i), sbuf,
                                          am_sizes[i], &p),
                          &c, 60);
        if (status != UCS_OK) {
            fail("am send %zu B: %s", am_sizes[i], ucs_status_string(status));
        }
        free(sbuf);
    }
    end = now() + 60;
    for (i = 0; i < NUM_AM_SIZES; ++i) {
        set_phase("am receive %zu B", am_sizes[i]);
        while (!am_arrived[i] && (now() < end)) {
            ucp_worker_progress(worker);
        }
        if (am_arrived[i] != 1) {
            fail("active message %u (%zu B) did not arrive", i, am_sizes[i]);
            continue;
        }
        if (am_len[i] != am_sizes[i]) {
            fail("active message %u: %zu bytes, expected %zu", i, am_len[i],
                 am_sizes[i]);
        }
        verify("active message", am_buf[i], am_sizes[i], peer, rank, 300 + i);
        free(am_buf[i]);
    }
    sync_peer(peer, 5);
    part_done("active messages 0 B .. 4 MiB");
}

static ucs_status_t
rma(int peer, int is_put, void *buf, size_t len, uint64_t off)
{
    req_ctx_t           c   = {0};
    ucp_request_param_t p   = send_param(&c);
    void               *req = is_put ? ucp_put_nbx(eps[peer], buf, len,
                                                   remote_base[peer] + off, rkeys[peer], &p) :
                                       ucp_get_nbx(eps[peer], buf, len,
                                                   remote_base[peer] + off, rkeys[peer], &p);

    return wait_req(req, &c, 60);
}

static void check_rma(int peer)
{
    static const size_t   sizes[] = {8, 3000, 70000, (1 << 20) + 3};
    static const uint64_t offs[]  = {8, 4097, 131072, 2 << 20};
    uint8_t              *buf     = malloc(sizes[3]);
    ucs_status_t          status;
    unsigned              i;

    /* put into the peer's region, each size at its own offset */
    for (i = 0; i < 4; ++i) {
        set_phase("put %zu B", sizes[i]);
        fill(buf, sizes[i], rank, peer, 400 + i);
        status = rma(peer, 1, buf, sizes[i], offs[i]);
        if (status != UCS_OK) {
            fail("put %zu B: %s", sizes[i], ucs_status_string(status));
        }
    }
    flush_ep(peer);
    sync_peer(peer, 6);
    for (i = 0; i < 4; ++i) {
        verify("put", region + offs[i], sizes[i], peer, rank, 400 + i);
    }
    /* get back what we put there */
    for (i = 0; i < 4; ++i) {
        set_phase("get %zu B", sizes[i]);
        memset(buf, 0, sizes[i]);
        status = rma(peer, 0, buf, sizes[i], offs[i]);
        if (status != UCS_OK) {
            fail("get %zu B: %s", sizes[i], ucs_status_string(status));
        }
        verify("get", buf, sizes[i], rank, peer, 400 + i);
    }
    free(buf);
    sync_peer(peer, 7);
    part_done("put/get 8 B .. 1 MiB");
}

/* one atomic on rank 0's region; cswap passes the swap value in *reply */
static ucs_status_t amo(int peer, ucp_atomic_op_t op, void *value, void *reply,
                        size_t size, uint64_t off)
{
    req_ctx_t           c = {0};
    ucp_request_param_t p = send_param(&c);

    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(size);

    if (reply != NULL) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer = reply;
    }
    return wait_req(ucp_atomic_op_nbx(eps[peer], op, value, 1,
                                      remote_base[peer] + off, rkeys[peer], &p),
                    &c, 60);
}

#define AMO_CHECK(_cond, ...)  \
    do {                       \
        if (!(_cond)) {        \
            fail(__VA_ARGS__); \
        }                      \
    } while (0)

/* Rank 1 works on two words in rank 0's region, rank 0 checks them. */
static void check_atomics(int peer)
{
    const uint64_t off64 = REGION_SIZE - 64, off32 = REGION_SIZE - 32;
    uint64_t       one = 1, prev = 0, v64, cmp;
    uint32_t       v32, prev32   = 0;
    ucs_status_t   status;
    unsigned       k;

    if (rank == 0) {
        v64 = 1000;
        v32 = 0;
        memcpy(region + off64, &v64, sizeof(v64));
        memcpy(region + off32, &v32, sizeof(v32));
    }
    sync_peer(peer, 8);
    set_phase("atomics");
    if (rank == 1) {
        for (k = 0; k < 1000; ++k) {
            set_phase("atomics: 64-bit fetch-add #%u", k);
            status = amo(peer, UCP_ATOMIC_OP_ADD, &one, &prev, 8, off64);
            if ((status != UCS_OK) || (prev != 1000 + k)) {
                fail("fetch-add #%u: %s, fetched %" PRIu64, k,
                     ucs_status_string(status), prev);
                break;
            }
        }
        set_phase("atomics: 64-bit cswap, xor");
        cmp    = 2000; /* succeeds: 2000 -> 77 */
        v64    = 77;
        status = amo(peer, UCP_ATOMIC_OP_CSWAP, &cmp, &v64, 8, off64);
        AMO_CHECK((status == UCS_OK) && (v64 == 2000),
                  "cswap: %s, fetched %" PRIu64 " (expected 2000)",
                  ucs_status_string(status), v64);
        cmp    = 5; /* fails: stays 77 */
        v64    = 99;
        status = amo(peer, UCP_ATOMIC_OP_CSWAP, &cmp, &v64, 8, off64);
        AMO_CHECK((status == UCS_OK) && (v64 == 77),
                  "failing cswap: %s, fetched %" PRIu64 " (expected 77)",
                  ucs_status_string(status), v64);
        v64    = 0xff; /* 77 ^ 0xff = 0xb2 */
        status = amo(peer, UCP_ATOMIC_OP_XOR, &v64, &prev, 8, off64);
        AMO_CHECK((status == UCS_OK) && (prev == 77),
                  "fetch-xor: %s, fetched %" PRIu64, ucs_status_string(status),
                  prev);
        set_phase("atomics: 32-bit add, swap");
        v32 = 5; /* 32 bit: 10 x add 5, swap */
        for (k = 0; k < 10; ++k) {
            status = amo(peer, UCP_ATOMIC_OP_ADD, &v32, NULL, 4, off32);
            AMO_CHECK(status == UCS_OK, "32-bit add: %s",
                      ucs_status_string(status));
        }
        v32    = 0xabcd1234;
        status = amo(peer, UCP_ATOMIC_OP_SWAP, &v32, &prev32, 4, off32);
        AMO_CHECK((status == UCS_OK) && (prev32 == 50),
                  "32-bit swap: %s, fetched %u (expected 50)",
                  ucs_status_string(status), prev32);
        set_phase("atomics: flush");
        flush_ep(peer);
    }
    sync_peer(peer, 9);
    if (rank == 0) {
        memcpy(&v64, region + off64, sizeof(v64));
        memcpy(&v32, region + off32, sizeof(v32));
        AMO_CHECK(v64 == 0xb2, "64-bit word %#" PRIx64 ", expected 0xb2", v64);
        AMO_CHECK(v32 == 0xabcd1234, "32-bit word %#x, expected 0xabcd1234",
                  v32);
    }
    sync_peer(peer, 10);
    part_done("atomics 32/64 bit");
}

static int run_data(void)
{
    int peer = 1 - rank;

    setup(2, 0);
    phase_start = now();
    check_tag(peer);
    check_stream(peer);
    check_am(peer);
    check_rma(peer);
    check_atomics(peer);
    sync_peer(peer, 11);
    set_phase("close");
    close_eps(2, 0);
    teardown();
    return verdict();
}

/* ------------------------------------------------ peer failure test */

static void err_handler(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    int peer = (int)(uintptr_t)arg;

    if (ep_errors[peer]++ == 0) {
        ep_error_status[peer] = status;
        ep_error_time[peer]   = now();
    }
}

/* one ping-pong with peer: send `seq`, receive it back; the status */
static ucs_status_t ping(int peer, uint64_t seq, double secs)
{
    uint64_t     out = seq * 31 + peer, in = 0;
    size_t       got;
    req_ctx_t    rc;
    void        *rreq = tag_recv_post(&in, sizeof(in),
                                      TAG_PING | ((uint64_t)peer << 24) |
                                              (seq & 0xffffff),
                                      &rc);
    ucs_status_t status;

    status = tag_send(peer, &out, sizeof(out),
                      TAG_PING | ((uint64_t)rank << 24) | (seq & 0xffffff),
                      secs);
    if (status != UCS_OK) {
        if (UCS_PTR_IS_PTR(rreq)) {
            wait_req(rreq, &rc, 0);
        }
        return status;
    }
    status = wait_req(rreq, &rc, secs);
    got    = rc.length;
    if ((status == UCS_OK) && ((got != sizeof(in)) || (in != out))) {
        fail("ping %" PRIu64 " to rank %d: got %" PRIu64 " back", seq, peer,
             in);
    }
    return status;
}

/* ranks 1 .. N-1: echo until told to stop */
static int run_echo(void)
{
    uint64_t            buf;
    size_t              got;
    req_ctx_t           c;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h   msg;
    ucs_status_t        status;
    double              end = now() + 120;

    char name[32], pid[32];

    setup(nranks, 1);
    /* ready, and who to kill: the harness's own child is only a wrapper */
    snprintf(name, sizeof(name), "ready.%d", rank);
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    write_file(name, pid, strlen(pid));
    for (;;) {
        ucp_worker_progress(worker);
        msg = ucp_tag_probe_nb(worker, 0, 0, 1, &info);
        if (msg == NULL) {
            if (now() > end) {
                fail("no stop message from rank 0");
                break;
            }
            continue;
        }
        memset(&c, 0, sizeof(c));
        {
            ucp_request_param_t p = {.op_attr_mask =
                                             UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                                     .cb.recv   = tag_recv_cb,
                                     .user_data = &c};
            status = wait_req(ucp_tag_msg_recv_nbx(worker, &buf, sizeof(buf),
                                                   msg, &p),
                              &c, 30);
        }
        got = c.length;
        (void)got;
        if (status != UCS_OK) {
            fail("echo receive: %s", ucs_status_string(status));
            break;
        }
        if ((info.sender_tag & 0xff00000000ull) == TAG_STOP) {
            break;
        }
        status = tag_send(0, &buf, sizeof(buf),
                          TAG_PING | ((uint64_t)rank << 24) |
                                  (info.sender_tag & 0xffffff),
                          30);
        if (status != UCS_OK) {
            fail("echo send: %s", ucs_status_string(status));
            break;
        }
    }
    close_eps(nranks, 0);
    teardown();
    return verdict();
}

/* rank 0: traffic with all; "killed" appears when the last rank is dead */
static int run_survivor(void)
{
    double       limit     = getenv("STRAND_CHECK_ERR_TIMEOUT") ?
                                     atof(getenv("STRAND_CHECK_ERR_TIMEOUT")) :
                                     10;
    int          victim    = nranks - 1, peer;
    double       killed_at = 0, end;
    char         name[32];
    uint64_t     seq;
    ucs_status_t status;
    size_t       len;
    void        *unused;

    setup(nranks, 1);
    for (peer = 1; peer < nranks; ++peer) {
        snprintf(name, sizeof(name), "ready.%d", peer);
        unused = read_file(name, &len);
        free(unused);
    }

    /* before the failure: all answer */
    for (seq = 0; (seq < 200) && !failed; ++seq) {
        for (peer = 1; peer < nranks; ++peer) {
            if (ping(peer, seq, 30) != UCS_OK) {
                fail("ping %" PRIu64 " to rank %d before the failure failed",
                     seq, peer);
                break;
            }
        }
    }
    write_file("traffic", "", 0);
    printf("ucp_check: rank 0: 200 ping-pongs with ranks 1 .. %d done\n",
           victim);
    fflush(stdout);

    /* keep sending to the victim until the harness killed it and the error
     * reached us; the others keep answering meanwhile */
    end = now() + 120;
    for (seq = 200; !ep_errors[victim] && !failed; ++seq) {
        if ((killed_at == 0) && file_exists("killed")) {
            killed_at = now();
        }
        if ((killed_at != 0) && (now() > killed_at + limit)) {
            break;
        }
        if (now() > end) {
            fail("rank %d was never killed", victim);
            break;
        }
        for (peer = 1; peer < victim; ++peer) {
            status = ping(peer, seq, 30);
            if (status != UCS_OK) {
                fail("rank %d stopped answering while rank %d died: %s", peer,
                     victim, ucs_status_string(status));
                break;
            }
        }
        status = ping(victim, seq, 0.05);
        if ((status != UCS_OK) && (status != UCS_ERR_TIMED_OUT) &&
            !ep_errors[victim]) {
            /* an error status without the handler: also a detection */
            ep_errors[victim]++;
            ep_error_status[victim] = status;
            ep_error_time[victim]   = now();
        }
        ucp_worker_progress(worker);
    }
    if (!ep_errors[victim]) {
        fail("no error for the endpoint to the killed rank %d within %.1f s",
             victim, limit);
    } else {
        if (killed_at == 0) {
            killed_at = ep_error_time[victim];
        }
        printf("ucp_check: rank 0: endpoint to rank %d failed with '%s' "
               "%.3f s after the kill was noticed\n",
               victim, ucs_status_string(ep_error_status[victim]),
               ep_error_time[victim] - killed_at);
        if (ep_error_time[victim] - killed_at > limit) {
            fail("the error took %.1f s (limit %.1f s)",
                 ep_error_time[victim] - killed_at, limit);
        }
    }
    for (peer = 1; peer < victim; ++peer) {
        if (ep_errors[peer]) {
            fail("endpoint to rank %d got an error too: %s", peer,
                 ucs_status_string(ep_error_status[peer]));
        }
    }
    /* after the failure: the others still work, every byte checked */
    for (seq = 0; (seq < 200) && !failed; ++seq) {
        for (peer = 1; (peer < victim) && !failed; ++peer) {
            status = ping(peer, 1000000 + seq, 30);
            if (status != UCS_OK) {
                fail("ping to rank %d after the failure: %s", peer,
                     ucs_status_string(status));
            }
        }
    }
    if (!failed) {
        printf("ucp_check: rank 0: 200 ping-pongs with ranks 1 .. %d after "
               "the failure done\n",
               victim - 1);
    }
    for (peer = 1; peer < victim; ++peer) {
        tag_send(peer, NULL, 0, TAG_STOP, 30);
    }
    close_eps(nranks, 1);
    teardown();
    return verdict();
}

/* rank 1 of keepalive: answers pings, never receives anything else; runs
 * until killed */
static int run_idle_victim(void)
{
    uint64_t            buf;
    req_ctx_t           c;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h   msg;
    ucs_status_t        status;
    double              end = now() + 120;
    char                pid[32];

    setup(nranks, 1);
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    write_file("ready.1", pid, strlen(pid));
    while (now() < end) {
        ucp_worker_progress(worker);
        msg = ucp_tag_probe_nb(worker, TAG_PING, 0xff00000000ull, 1, &info);
        if (msg == NULL) {
            continue;
        }
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA,
                                 .cb.recv   = tag_recv_cb,
                                 .user_data = &c};
        memset(&c, 0, sizeof(c));
        status = wait_req(ucp_tag_msg_recv_nbx(worker, &buf, sizeof(buf), msg,
                                               &p),
                          &c, 30);
        if (status == UCS_OK) {
            status = tag_send(0, &buf, sizeof(buf),
                              TAG_PING | ((uint64_t)rank << 24) |
                                      (info.sender_tag & 0xffffff),
                              30);
        }
        if (status != UCS_OK) {
            fail("ping answer: %s", ucs_status_string(status));
            break;
        }
    }
    /* not killed: the harness failed; nothing to close cleanly */
    fail("rank 1 was never killed");
    return verdict();
}

/* rank 0 of keepalive: a send that waits for a peer who never takes it */
static int run_idle_sender(void)
{
    double              limit = getenv("STRAND_CHECK_ERR_TIMEOUT") ?
                                        atof(getenv("STRAND_CHECK_ERR_TIMEOUT")) :
                                        10;
    static uint8_t      big[1 << 20];
    double              killed_at = 0, end;
    req_ctx_t           c;
    ucp_request_param_t p = send_param(&c);
    void               *req, *unused;
    size_t              len;

    setup(nranks, 1);
    unused = read_file("ready.1", &len);
    free(unused);
    if (ping(1, 0, 30) != UCS_OK) {
        fail("ping to rank 1 failed");
        goto out;
    }
    /* a rendezvous: its request waits for the receiver to fetch the data */
    fill(big, sizeof(big), 0, 1, 7);
    req = ucp_tag_send_nbx(eps[1], big, sizeof(big), TAG_DATA, &p);
    if ((req == NULL) || UCS_PTR_IS_ERR(req)) {
        fail("the rendezvous send ended at once: %s",
             (req == NULL) ? "OK" : ucs_status_string(UCS_PTR_STATUS(req)));
        goto out;
    }
    write_file("traffic", "", 0);
    printf("ucp_check: rank 0: a rendezvous send to rank 1 waits\n");
    /* idle: only progress, no other operation that could find the peer */
    for (end = now() + 120; !c.done && (now() < end);) {
        ucp_worker_progress(worker);
        if ((killed_at == 0) && file_exists("killed")) {
            killed_at = now();
        }
        if ((killed_at != 0) && (now() > killed_at + limit)) {
            break;
        }
    }
    if (!c.done) {
        fail("the send to the killed rank 1 is still waiting %.1f s after "
             "the kill",
             (killed_at != 0) ? now() - killed_at : 0.0);
        goto out;
    }
    ucp_request_free(req);
    if (c.status == UCS_OK) {
        fail("the send to the killed rank 1 completed successfully");
    } else if (!ep_errors[1]) {
        fail("the send ended (%s) but the endpoint's error handler did not "
             "run",
             ucs_status_string(c.status));
    } else {
        printf("ucp_check: rank 0: the send ended with '%s', the endpoint "
               "failed with '%s' %.3f s after the kill was noticed\n",
               ucs_status_string(c.status),
               ucs_status_string(ep_error_status[1]),
               ep_error_time[1] -
                       ((killed_at != 0) ? killed_at : ep_error_time[1]));
    }
out:
    close_eps(nranks, 1);
    teardown();
    return verdict();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGTERM, on_term);
    if (argc != 4) {
        fprintf(stderr, "usage: ucp_check DIR RANK data|failure|keepalive\n");
        return 2;
    }
    dir  = argv[1];
    rank = atoi(argv[2]);
    if (!strcmp(argv[3], "data") && (rank == 0 || rank == 1)) {
        return run_data();
    }
    if (!strcmp(argv[3], "keepalive") && (rank == 0 || rank == 1)) {
        nranks = 2;
        return (rank == 0) ? run_idle_sender() : run_idle_victim();
    }
    if (getenv("STRAND_CHECK_RANKS") != NULL) {
        nranks = atoi(getenv("STRAND_CHECK_RANKS"));
    } else {
        nranks = 3;
    }
    if (!strcmp(argv[3], "failure") && (nranks >= 3) && (nranks <= MAX_RANKS) &&
        (rank >= 0) && (rank < nranks)) {
        return (rank == 0) ? run_survivor() : run_echo();
    }
    fprintf(stderr, "ucp_check: bad arguments\n");
    return 2;
}
