/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * post_cost MODE N: the work whose instructions contrib/bench/compare.sh
 * counts with callgrind, in one process: two dc_strand interfaces on the
 * software device, a sender A with an endpoint to a receiver B. Each mode
 * does its measured work through one of the functions below (callgrind's
 * --toggle-collect names it) and prints what it did as "key value" pairs:
 *
 *   refused N   A's send queue filled with 8-byte put_shorts (A is not
 *               progressed, so nothing retires), then N more through
 *               cost_refused_put(), each of which must be refused
 *               (UCS_ERR_NO_RESOURCE): "refused N"
 *   send_cqe N  N 8-byte put_shorts in rounds of 64, after each round A's
 *               progress through cost_progress() until they completed
 *               (the script sets UCX_DC_STRAND_TX_CQ_MODERATION=1: a CQE
 *               per put)
 *   recv_am N   N 8-byte am_shorts in rounds of 64, after each round B's
 *               progress through cost_progress() until the round arrived,
 *               the handler cost_am_handler() (the script subtracts it)
 *   idle N      N calls of cost_progress() on A with nothing to do
 *
 * send_cqe, recv_am and idle print "calls C empty E events V": the calls
 * of cost_progress(), those that found nothing (the script subtracts
 * them at the idle cost) and the events they returned. Any unexpected
 * result exits 1 with the reason on stderr.
 */
#include "peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COST_ROUND 64
#define COST_AM_ID 5

typedef struct cost {
    peers_uct_t       a, b;
    uct_ep_h          ep;
    uct_mem_h         memh;
    uct_rkey_bundle_t rkey;
    uint64_t          buf[64];
    uint64_t          ams; /* received by cost_am_handler */
    uint64_t          calls, empty, events;
} cost_t;

static void cost_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "post_cost: %s: %s\n", what, ucs_status_string(status));
    exit(1);
}

static ucs_status_t cost_err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    cost_die("endpoint failed", status);
    return status;
}

/* The receiver's handler: counted, subtracted by the script. */
__attribute__((noinline)) static ucs_status_t
cost_am_handler(void *arg, void *data, size_t length, unsigned flags)
{
    ((cost_t *)arg)->ams++;
    return UCS_OK;
}

__attribute__((noinline)) static ucs_status_t
cost_refused_put(cost_t *c, uint64_t value)
{
    return uct_ep_put_short(c->ep, &value, sizeof(value), (uintptr_t)c->buf,
                            c->rkey.rkey);
}

__attribute__((noinline)) static unsigned cost_progress(uct_iface_h iface)
{
    return uct_iface_progress(iface);
}

/* cost_progress on iface until done() says so, counting its calls; a
 * call that found nothing waits a little for the device's thread */
static void
cost_progress_until(cost_t *c, uct_iface_h iface, int (*done)(cost_t *))
{
    double   end = peers_now() + 30;
    unsigned n;

    usleep(1000);
    while (!done(c)) {
        n = cost_progress(iface);
        c->calls++;
        c->events += n;
        if (n == 0) {
            c->empty++;
            if (peers_now() > end) {
                cost_die("progress", UCS_ERR_TIMED_OUT);
            }
            usleep(200);
        }
    }
}

static void cost_open(cost_t *c)
{
    uint8_t         dev[PEERS_ADDR_MAX], iface[PEERS_ADDR_MAX];
    uct_ep_params_t ep_params;
    void           *rkey_buf;
    ucs_status_t    status;

    status = peers_uct_open(&c->a, cost_err_cb, c);
    if (status == UCS_OK) {
        status = peers_uct_open(&c->b, cost_err_cb, c);
    }
    if (status != UCS_OK) {
        cost_die("opening the interfaces", status);
    }
    status = uct_iface_set_am_handler(c->b.iface, COST_AM_ID, cost_am_handler,
                                      c, 0);
    if (status == UCS_OK) {
        status = uct_iface_get_device_address(c->b.iface,
                                              (uct_device_addr_t *)dev);
    }
    if (status == UCS_OK) {
        status = uct_iface_get_address(c->b.iface, (uct_iface_addr_t *)iface);
    }
    if (status != UCS_OK) {
        cost_die("B's address", status);
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = c->a.iface;
    ep_params.dev_addr   = (uct_device_addr_t *)dev;
    ep_params.iface_addr = (uct_iface_addr_t *)iface;
    status               = uct_ep_create(&ep_params, &c->ep);
    if (status != UCS_OK) {
        cost_die("uct_ep_create", status);
    }
    status = uct_md_mem_reg(c->b.md, c->buf, sizeof(c->buf),
                            UCT_MD_MEM_ACCESS_ALL, &c->memh);
    if (status != UCS_OK) {
        cost_die("uct_md_mem_reg", status);
    }
    rkey_buf = alloca(c->b.md_attr.rkey_packed_size);
    status   = uct_md_mkey_pack(c->b.md, c->memh, rkey_buf);
    if (status == UCS_OK) {
        status = uct_rkey_unpack(c->a.component, rkey_buf, &c->rkey);
    }
    if (status != UCS_OK) {
        cost_die("the rkey", status);
    }
}

static int cost_puts_done(cost_t *c)
{
    /* a flush that completes at once: every put retired */
    return uct_ep_flush(c->ep, 0, NULL) == UCS_OK;
}

static uint64_t cost_ams_expected;

static int cost_ams_done(cost_t *c)
{
    return c->ams >= cost_ams_expected;
}

static void cost_refused(cost_t *c, unsigned n)
{
    uint64_t     posted = 0;
    ucs_status_t status;
    unsigned     i;

    while ((status = uct_ep_put_short(c->ep, &posted, sizeof(posted),
                                      (uintptr_t)c->buf, c->rkey.rkey)) ==
           UCS_OK) {
        if (++posted > 100000) {
            cost_die("the send queue never filled", UCS_ERR_IO_ERROR);
        }
    }
    if (status != UCS_ERR_NO_RESOURCE) {
        cost_die("filling the send queue", status);
    }
    for (i = 0; i < n; ++i) {
        status = cost_refused_put(c, i);
        if (status != UCS_ERR_NO_RESOURCE) {
            cost_die("a post on a full queue was not refused", status);
        }
    }
    printf("filled %lu refused %u\n", (unsigned long)posted, n);
}

static void cost_send_cqe(cost_t *c, unsigned n)
{
    unsigned     i, done;
    uint64_t     value = 0;
    ucs_status_t status;

    for (done = 0; done < n; done += COST_ROUND) {
        for (i = 0; i < COST_ROUND; ++i) {
            status = uct_ep_put_short(c->ep, &value, sizeof(value),
                                      (uintptr_t)c->buf, c->rkey.rkey);
            if (status != UCS_OK) {
                cost_die("put_short", status);
            }
        }
        cost_progress_until(c, c->a.iface, cost_puts_done);
    }
}

static void cost_recv_am(cost_t *c, unsigned n)
{
    unsigned     i, done;
    ucs_status_t status;

    for (done = 0; done < n; done += COST_ROUND) {
        for (i = 0; i < COST_ROUND; ++i) {
            while ((status = uct_ep_am_short(c->ep, COST_AM_ID, i, NULL, 0)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_iface_progress(c->a.iface); /* credits, completions */
            }
            if (status != UCS_OK) {
                cost_die("am_short", status);
            }
        }
        cost_ams_expected += COST_ROUND;
        cost_progress_until(c, c->b.iface, cost_ams_done);
        while (uct_iface_progress(c->a.iface) > 0) {
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = (argc > 1) ? argv[1] : "";
    unsigned    n    = (argc > 2) ? (unsigned)atoi(argv[2]) : 0;
    cost_t     *c    = calloc(1, sizeof(*c));
    unsigned    i;

    if ((c == NULL) || (n == 0)) {
        fprintf(stderr, "usage: post_cost refused|send_cqe|recv_am|idle N\n");
        return 2;
    }
    cost_open(c);
    if (!strcmp(mode, "refused")) {
        cost_refused(c, n);
        return 0; /* the queue is full: no orderly close */
    } else if (!strcmp(mode, "send_cqe")) {
        cost_send_cqe(c, n);
    } else if (!strcmp(mode, "recv_am")) {
        cost_recv_am(c, n);
    } else if (!strcmp(mode, "idle")) {
        for (i = 0; i < n; ++i) {
            c->empty += (cost_progress(c->a.iface) == 0);
            c->calls++;
        }
    } else {
        fprintf(stderr, "post_cost: unknown mode '%s'\n", mode);
        return 2;
    }
    printf("calls %lu empty %lu events %lu\n", (unsigned long)c->calls,
           (unsigned long)c->empty, (unsigned long)c->events);
    uct_ep_destroy(c->ep);
    uct_rkey_release(c->a.component, &c->rkey);
    uct_md_mem_dereg(c->b.md, c->memh);
    peers_uct_close(&c->b);
    peers_uct_close(&c->a);
    free(c);
    return 0;
}
