/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion events and doorbell pressure, through UCT:
 * - events: the receiving interface armed for receives, an active message
 *   must make its event fd readable (the receive CQ's event on the NIC);
 *   the sending interface armed for send completions, a zero-copy PUT's
 *   completion must make its fd readable (a send CQ's). Not only polling:
 *   a NIC whose CQ is never armed right lets a sleeping worker sleep on.
 * - one register: several send queues of one interface (rc_strand's QPs,
 *   dc_strand's DCIs under the dcs policy) post in turn, each doorbell
 *   through the interface's one BlueFlame register, whose halves must
 *   alternate whichever queue writes: every message must arrive.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_QUEUES 4  /* send queues posting in turn */
#define HC_ROUNDS 64 /* messages per queue */

/* The fd readable within the timeout: 1, else 0. */
static int hc_fd_ready(int fd, double timeout)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};

    return poll(&pfd, 1, (int)(timeout * 1000)) > 0;
}

/* Armed for `events` (a busy interface has something to give first: it is
 * progressed and armed again). */
static ucs_status_t hc_arm(hc_uct_t *u, uct_iface_h iface, unsigned events)
{
    double       end = hc_now() + u->timeout;
    ucs_status_t status;

    while ((status = uct_iface_event_arm(iface, events)) == UCS_ERR_BUSY) {
        if (hc_now() > end) {
            break;
        }
        uct_worker_progress(u->worker);
    }
    return status;
}

static int hc_comp_done(void *arg)
{
    return ((hc_comp_t *)arg)->done;
}

/* An active message wakes the armed receiver. 0, or -1 with `why`. */
static int hc_recv_event(hc_pair_t *p, int fd, char *why, size_t max)
{
    unsigned     want = p->b.am.count + 1;
    ucs_status_t status;

    status = hc_arm(p->u, p->b.iface, UCT_EVENT_RECV);
    if (status != UCS_OK) {
        snprintf(why, max, "arming the receiver: %s", hc_why(p->u, status));
        return -1;
    }
    HC_RETRY(p->u, status,
             uct_ep_am_short(p->ep, HC_AM_ID, 0x5eedull, NULL, 0));
    if (status != UCS_OK) {
        snprintf(why, max, "an AM: %s", hc_why(p->u, status));
        return -1;
    }
    if (!hc_fd_ready(fd, p->u->timeout)) {
        snprintf(why, max,
                 "the receiver was armed and an active message "
                 "sent: its event fd stayed quiet for %.0f s",
                 p->u->timeout);
        return -1;
    }
    if (!hc_wait_am(p->u, &p->b.am, want)) {
        snprintf(why, max, "the event came, the active message did not");
        return -1;
    }
    return 0;
}

/* A PUT's completion wakes the armed sender. 0, or -1 with `why`. */
static int hc_send_event(hc_pair_t *p, int fd, char *why, size_t max)
{
    hc_region_t  src, dst;
    hc_comp_t   *c;
    ucs_status_t status;
    uct_iov_t    iov;
    int          ret = -1;

    memset(&src, 0, sizeof(src));
    memset(&dst, 0, sizeof(dst));
    if ((hc_region_alloc(p->u, &src, 4096, 31) != UCS_OK) ||
        (hc_region_alloc(p->u, &dst, 4096, 32) != UCS_OK)) {
        snprintf(why, max, "registering memory failed");
        goto out;
    }
    status = hc_arm(p->u, p->a.iface, UCT_EVENT_SEND_COMP);
    if (status != UCS_OK) {
        snprintf(why, max, "arming the sender: %s", hc_why(p->u, status));
        goto out;
    }
    c          = hc_comp_new(p->u);
    iov.buffer = src.buf;
    iov.length = src.length;
    iov.memh   = src.memh;
    iov.stride = 0;
    iov.count  = 1;
    HC_RETRY(p->u, status,
             uct_ep_put_zcopy(p->ep, &iov, 1, (uintptr_t)dst.buf, dst.rkey.rkey,
                              &c->uct));
    if ((status == UCS_INPROGRESS) && !hc_fd_ready(fd, p->u->timeout)) {
        snprintf(why, max,
                 "the sender was armed and a zero-copy PUT posted: "
                 "its event fd stayed quiet for %.0f s",
                 p->u->timeout);
        goto out;
    }
    if ((status == UCS_INPROGRESS) && !hc_wait(p->u, hc_comp_done, c)) {
        snprintf(why, max, "the event came, the PUT's completion did not");
        goto out;
    }
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        snprintf(why, max, "a zero-copy PUT: %s", hc_why(p->u, status));
        goto out;
    }
    if (hc_compare(dst.buf, src.buf, src.length, why, max) == 0) {
        ret = 0;
    }
out:
    hc_region_free(p->u, &src);
    hc_region_free(p->u, &dst);
    return ret;
}

void hc_check_events(hc_pair_t *p)
{
    const uint64_t need = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                          UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;
    char name[64], why[256];
    int  fd_a, fd_b;

    snprintf(name, sizeof(name), "%s events", p->tl);
    hc_step("%s", name);
    if (hc_ep_failed(p, name)) {
        return;
    }
    if (((p->a.attr.cap.event_flags & need) != need) ||
        (uct_iface_event_fd_get(p->a.iface, &fd_a) != UCS_OK) ||
        (uct_iface_event_fd_get(p->b.iface, &fd_b) != UCS_OK)) {
        hc_fail(name, "the interface offers no event fd for send "
                      "completions and receives");
        return;
    }
    if ((hc_recv_event(p, fd_b, why, sizeof(why)) != 0) ||
        (hc_send_event(p, fd_a, why, sizeof(why)) != 0)) {
        hc_fail(name, "%s", why);
        return;
    }
    hc_ok(name, "an armed receiver woke for an active message, an armed "
                "sender for a PUT's completion");
}

/* ----------------------------------------------------- one register */

/* A pair whose sending interface keeps a send queue per busy endpoint and
 * asks a CQE for every WQE (no queue holds a doorbell back). */
static ucs_status_t
hc_queues_pair(hc_pair_t *p, hc_uct_t *u, const char *tl, const char **what)
{
    const int    dc = !strcmp(tl, "dc_strand");
    ucs_status_t status;

    if (dc) {
        setenv("UCX_DC_STRAND_TX_POLICY", "dcs", 1);
    }
    setenv(dc ? "UCX_DC_STRAND_TX_CQ_MODERATION" :
                "UCX_RC_STRAND_TX_CQ_MODERATION",
           "1", 1);
    status = hc_pair_open(p, u, tl, 0, what);
    unsetenv("UCX_DC_STRAND_TX_POLICY");
    unsetenv(dc ? "UCX_DC_STRAND_TX_CQ_MODERATION" :
                  "UCX_RC_STRAND_TX_CQ_MODERATION");
    return status;
}

/* HC_ROUNDS messages from each of the endpoints, posted in turn. 0, or -1
 * with `why`. */
static int hc_queues_in_turn(hc_pair_t *p, uct_ep_h *eps, char *why, size_t max)
{
    unsigned     base = p->b.am.count;
    ucs_status_t status;
    unsigned     i, j;

    for (j = 0; j < HC_QUEUES; ++j) { /* every one connected */
        HC_RETRY(p->u, status, uct_ep_am_short(eps[j], HC_AM_ID, j, NULL, 0));
        if ((status != UCS_OK) || ((status = hc_flush(p, eps[j])) != UCS_OK)) {
            snprintf(why, max, "endpoint %u: %s", j, hc_why(p->u, status));
            return -1;
        }
    }
    if (!hc_wait_am(p->u, &p->b.am, base + HC_QUEUES)) {
        snprintf(why, max,
                 "the first message of each endpoint did not all "
                 "arrive");
        return -1;
    }
    for (i = 0; i < HC_ROUNDS; ++i) {
        for (j = 0; j < HC_QUEUES; ++j) {
            HC_RETRY(p->u, status,
                     uct_ep_am_short(eps[j], HC_AM_ID, i * HC_QUEUES + j, NULL,
                                     0));
            if (status != UCS_OK) {
                snprintf(why, max, "message %u of endpoint %u: %s", i, j,
                         hc_why(p->u, status));
                return -1;
            }
        }
    }
    if (!hc_wait_am(p->u, &p->b.am, base + HC_QUEUES * (HC_ROUNDS + 1))) {
        snprintf(why, max,
                 "%u of %u messages arrived: a doorbell was lost "
                 "(queues writing one half of the register in turn?)",
                 p->b.am.count - base - HC_QUEUES, HC_QUEUES * HC_ROUNDS);
        return -1;
    }
    return 0;
}

void hc_check_register(hc_uct_t *u, const char *tl)
{
    hc_pair_t   *p              = calloc(1, sizeof(*p));
    uct_ep_h     eps[HC_QUEUES] = {NULL};
    const char  *what;
    ucs_status_t status;
    char         name[64], why[256];
    unsigned     j;

    snprintf(name, sizeof(name), "%s one register", tl);
    hc_step("%s", name);
    if (p == NULL) {
        hc_fail(name, "out of memory");
        return;
    }
    status = hc_queues_pair(p, u, tl, &what);
    eps[0] = p->ep;
    for (j = 1; (status == UCS_OK) && (j < HC_QUEUES); ++j) {
        what   = "another endpoint";
        status = hc_ep_create(p, &eps[j]);
    }
    if (status != UCS_OK) {
        hc_fail(name, "%s: %s", what, hc_why(u, status));
    } else if (hc_queues_in_turn(p, eps, why, sizeof(why)) != 0) {
        hc_fail(name, "%s", why);
    } else {
        hc_ok(name, "%u %s posting in turn, %u messages each: all arrived",
              HC_QUEUES, strcmp(tl, "dc_strand") ? "QPs" : "DCIs", HC_ROUNDS);
    }
    for (j = 1; j < HC_QUEUES; ++j) {
        if (eps[j] != NULL) {
            uct_ep_destroy(eps[j]);
        }
    }
    hc_pair_close(p);
    free(p);
}
