/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two fabrics are two subnets: a process may not reach a process of
 * another fabric, even one of the same name (two hosts, or two containers
 * with their own /dev/shm).
 *
 *   ucp_fabrics listen DIR NAME SECONDS   a worker whose address goes to
 *                                         DIR/NAME.addr; counts the tagged
 *                                         messages it receives for SECONDS;
 *                                         prints "NAME: received N"
 *   ucp_fabrics send DIR NAME             connects to DIR/NAME.addr and
 *                                         sends 10 tagged messages; prints
 *                                         "send: ep_create: STATUS" and,
 *                                         when it connected, "send: sent N"
 *
 * The address files are written whole (written to a temporary name, then
 * renamed): a reader never sees half of one.
 */
#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FABRICS_TAG  0xfab1ull
#define FABRICS_MSGS 10

static ucp_context_h ctx;
static ucp_worker_h  worker;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
    ucp_params_t        params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                                  .features   = UCP_FEATURE_TAG};
    ucp_worker_params_t wp = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};

    if ((ucp_init(&params, NULL, &ctx) != UCS_OK) ||
        (ucp_worker_create(ctx, &wp, &worker) != UCS_OK)) {
        printf("ucp setup failed\n");
        exit(2);
    }
}

static int do_listen(const char *dir, const char *name, double secs)
{
    char                path[512], tmp[520];
    ucp_address_t      *addr;
    size_t              len;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    uint64_t            buf;
    unsigned            received = 0;
    void               *req;
    double              end;
    FILE               *f;

    setup();
    if (ucp_worker_get_address(worker, &addr, &len) != UCS_OK) {
        printf("%s: no address\n", name);
        return 2;
    }
    snprintf(path, sizeof(path), "%s/%s.addr", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if ((f == NULL) || (fwrite(addr, 1, len, f) != len) || fclose(f) ||
        rename(tmp, path)) {
        printf("%s: cannot write %s\n", name, path);
        return 2;
    }
    ucp_worker_release_address(worker, addr);
    end = now() + secs;
    while (now() < end) {
        req = ucp_tag_recv_nbx(worker, &buf, sizeof(buf), FABRICS_TAG, ~0ull,
                               &prm);
        if (UCS_PTR_IS_ERR(req)) {
            break;
        }
        while (UCS_PTR_IS_PTR(req) && (now() < end) &&
               (ucp_request_check_status(req) == UCS_INPROGRESS)) {
            ucp_worker_progress(worker);
        }
        if (UCS_PTR_IS_PTR(req)) {
            if (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_request_cancel(worker, req);
                while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                    ucp_worker_progress(worker);
                }
                ucp_request_free(req);
                break;
            }
            ucp_request_free(req);
        }
        ++received;
    }
    printf("%s: received %u\n", name, received);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return 0;
}

static int do_send(const char *dir, const char *name)
{
    ucp_ep_params_t ep_params = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS};
    ucp_request_param_t prm = {.op_attr_mask = 0};
    char                path[512], addr[4096];
    ucs_status_t        status;
    unsigned            sent = 0, i;
    uint64_t            v    = 42;
    ucp_ep_h            ep;
    void               *req;
    size_t              len;
    FILE               *f;

    snprintf(path, sizeof(path), "%s/%s.addr", dir, name);
    f = fopen(path, "r");
    if (f == NULL) {
        printf("send: no address %s\n", path);
        return 2;
    }
    len = fread(addr, 1, sizeof(addr), f);
    fclose(f);
    setup();
    ep_params.address = (const ucp_address_t *)addr;
    status            = ucp_ep_create(worker, &ep_params, &ep);
    printf("send: ep_create: %s\n", ucs_status_string(status));
    (void)len;
    if (status != UCS_OK) {
        ucp_worker_destroy(worker);
        ucp_cleanup(ctx);
        return 0;
    }
    for (i = 0; i < FABRICS_MSGS; ++i) {
        req = ucp_tag_send_nbx(ep, &v, sizeof(v), FABRICS_TAG, &prm);
        while (UCS_PTR_IS_PTR(req) &&
               (ucp_request_check_status(req) == UCS_INPROGRESS)) {
            ucp_worker_progress(worker);
        }
        if (UCS_PTR_IS_PTR(req)) {
            ucp_request_free(req);
        } else if (UCS_PTR_IS_ERR(req)) {
            break;
        }
        ++sent;
    }
    req = ucp_ep_flush_nbx(ep, &prm);
    while (UCS_PTR_IS_PTR(req) &&
           (ucp_request_check_status(req) == UCS_INPROGRESS)) {
        ucp_worker_progress(worker);
    }
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
    printf("send: sent %u\n", sent);
    ucp_ep_destroy(ep);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((argc == 5) && !strcmp(argv[1], "listen")) {
        return do_listen(argv[2], argv[3], atof(argv[4]));
    }
    if ((argc == 4) && !strcmp(argv[1], "send")) {
        return do_send(argv[2], argv[3]);
    }
    fprintf(stderr, "usage: ucp_fabrics listen DIR NAME SECONDS | "
                    "send DIR NAME\n");
    return 2;
}
