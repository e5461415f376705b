/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_peers: the hub's traffic engine (peers_hub.h).
 */
#include "peers_hub.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

void peers_hub_fail(peers_hub_t *h, const char *fmt, ...)
{
    va_list ap;

    if (h->failed) {
        return; /* the first failure tells most */
    }
    h->failed = 1;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof(h->why), fmt, ap);
    va_end(ap);
}

int peers_hub_ep_healthy(const peers_hub_t *h, const peers_hub_ep_t *e)
{
    return (e->ep != NULL) && !e->failed && h->alive[e->peer];
}

static ucs_status_t peers_hub_err(void *arg, uct_ep_h ep, ucs_status_t status)
{
    peers_hub_t    *h = arg;
    peers_hub_ep_t *e;
    unsigned        i;

    h->errors++;
    for (i = 0; i < h->num_eps; ++i) {
        e = &h->eps[i];
        if (e->ep != ep) {
            continue;
        }
        if (e->failed) {
            peers_hub_fail(h, "endpoint %u: a second error (%s)", i,
                           ucs_status_string(status));
        }
        e->failed    = 1;
        e->stopped   = 1;
        e->status    = status;
        e->fail_time = peers_now();
        return UCS_OK;
    }
    peers_hub_fail(h, "an error (%s) for an endpoint the hub does not have",
                   ucs_status_string(status));
    return UCS_OK;
}

int peers_hub_start(peers_hub_t *h, unsigned num_peers)
{
    int      sv[2], rc;
    unsigned i, j;
    pid_t    pid;

    memset(h, 0, sizeof(*h));
    signal(SIGPIPE, SIG_IGN);
    h->num_peers = num_peers;
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < num_peers; ++i) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
            return -1;
        }
        pid = fork();
        if (pid < 0) {
            return -1;
        }
        if (pid == 0) {
            close(sv[0]);
            for (j = 0; j < i; ++j) {
                close(h->fd[j]);
            }
            rc = peers_peer_main(sv[1], i + 1);
            _exit(rc);
        }
        close(sv[1]);
        h->pid[i]   = pid;
        h->fd[i]    = sv[0];
        h->alive[i] = 1;
    }
    if (peers_uct_open(&h->uct, peers_hub_err, h) != UCS_OK) {
        return -1;
    }
    for (i = 0; i < num_peers; ++i) {
        if ((peers_recv(h->fd[i], &h->hello[i], sizeof(h->hello[i])) != 0) ||
            (uct_rkey_unpack(h->uct.component, h->hello[i].rkey, &h->rkey[i]) !=
             UCS_OK)) {
            fprintf(stderr, "dc_peers: peer %u did not start\n", i);
            return -1;
        }
    }
    return 0;
}

int peers_hub_connect(peers_hub_t *h, unsigned eps_per_peer,
                      uint32_t first_slot)
{
    unsigned        n = h->num_eps + eps_per_peer * h->num_peers;
    uct_ep_params_t params;
    peers_hub_ep_t *e;
    unsigned        p, k;

    if (n > h->max_eps) {
        e = realloc(h->eps, n * sizeof(*e));
        if (e == NULL) {
            return -1;
        }
        h->eps     = e;
        h->max_eps = n;
    }
    for (k = 0; k < eps_per_peer; ++k) {
        for (p = 0; p < h->num_peers; ++p) { /* interleaved over peers */
            if (!h->alive[p]) {
                continue;
            }
            e = &h->eps[h->num_eps];
            memset(e, 0, sizeof(*e));
            e->peer           = p;
            e->slot           = first_slot + k;
            e->bad_op         = -1;
            params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                                UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
            params.iface      = h->uct.iface;
            params.dev_addr   = (uct_device_addr_t *)h->hello[p].dev_addr;
            params.iface_addr = (uct_iface_addr_t *)h->hello[p].iface_addr;
            if ((e->slot >= PEERS_SLOTS) ||
                (uct_ep_create(&params, &e->ep) != UCS_OK)) {
                return -1;
            }
            h->num_eps++;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- traffic */

static void peers_hub_atomic_done(uct_completion_t *self)
{
    peers_atomic_t *a = ucs_container_of(self, peers_atomic_t, comp);
    peers_hub_ep_t *e = a->ep;

    a->ep = NULL;
    e->at_done++;
    if (self->status != UCS_OK) {
        return; /* its ep failed: checked there */
    }
    if (a->result != e->at_expect) {
        fprintf(stderr,
                "dc_peers: endpoint to peer %u slot %u: atomic %lu "
                "fetched %lu (one ran twice, or not at all)\n",
                e->peer, e->slot, (unsigned long)e->at_expect,
                (unsigned long)a->result);
        e->at_expect = UINT64_MAX; /* marks the failure for the hub */
        return;
    }
    e->at_expect++;
}

typedef struct {
    uint32_t slot, seq;
} peers_pack_arg_t;

static size_t peers_pack_data(void *dest, void *arg)
{
    const peers_pack_arg_t *a = arg;
    size_t                  i, len = peers_am_len(a->seq, 1);
    uint64_t                hdr = PEERS_HDR(a->slot, a->seq);
    uint8_t                *p   = (uint8_t *)dest + sizeof(hdr);

    memcpy(dest, &hdr, sizeof(hdr));
    for (i = 0; i < len; ++i) {
        p[i] = peers_pattern(a->slot, a->seq, i);
    }
    return sizeof(hdr) + len;
}

static uint64_t
peers_hub_slot_addr(peers_hub_t *h, peers_hub_ep_t *e, size_t offset)
{
    return h->hello[e->peer].slots + e->slot * sizeof(peers_slot_t) + offset;
}

ucs_status_t peers_hub_am_short(peers_hub_ep_t *e)
{
    uint8_t      payload[32];
    ucs_status_t status;
    size_t       i, n;

    n = peers_am_len(e->ams, 0);
    for (i = 0; i < n; ++i) {
        payload[i] = peers_pattern(e->slot, e->ams, i);
    }
    status = uct_ep_am_short(e->ep, PEERS_AM_DATA, PEERS_HDR(e->slot, e->ams),
                             payload, n);
    e->ams += (status == UCS_OK);
    return status;
}

/* The next operation of e: 1 posted, 0 no resources now, -1 refused. */
static int peers_hub_post(peers_hub_t *h, peers_hub_ep_t *e)
{
    uct_rkey_t       rkey = h->rkey[e->peer].rkey;
    peers_pack_arg_t pack;
    uint64_t         put[2];
    peers_atomic_t  *a;
    ucs_status_t     status;
    ssize_t          len;

    switch (e->ops % 4) {
    case 0:
        status = peers_hub_am_short(e);
        break;
    case 1:
        if (e->bad_op == (int64_t)e->ops) {
            rkey = (uint32_t)rkey ^ 0x5a5a0000u; /* no such key there */
        }
        put[0] = e->put_seq + 1;
        put[1] = ~put[0];
        status = uct_ep_put_short(e->ep, put, sizeof(put),
                                  peers_hub_slot_addr(h, e, 0), rkey);
        if ((status == UCS_OK) && (e->bad_op == (int64_t)e->ops)) {
            e->stopped = 1; /* waits for its failure */
        } else {
            e->put_seq += (status == UCS_OK);
        }
        break;
    case 2:
        pack.slot = e->slot;
        pack.seq  = e->ams;
        len = uct_ep_am_bcopy(e->ep, PEERS_AM_DATA, peers_pack_data, &pack, 0);
        status = (len < 0) ? (ucs_status_t)len : UCS_OK;
        e->ams += (status == UCS_OK);
        break;
    default:
        a = &e->at[e->at_posted % PEERS_AT_WINDOW];
        if (a->ep != NULL) {
            return 0; /* the window is full */
        }
        a->ep          = e;
        a->comp.func   = peers_hub_atomic_done;
        a->comp.count  = 1;
        a->comp.status = UCS_OK;
        status = uct_ep_atomic64_fetch(e->ep, UCT_ATOMIC_OP_ADD, 1, &a->result,
                                       peers_hub_slot_addr(h, e, 16), rkey,
                                       &a->comp);
        if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
            e->at_posted++;
            if (status == UCS_OK) {
                peers_hub_atomic_done(&a->comp);
            }
            status = UCS_OK;
        } else {
            a->ep = NULL;
        }
        break;
    }
    if (status == UCS_OK) {
        e->ops++;
        return 1;
    }
    if (status == UCS_ERR_NO_RESOURCE) {
        return 0;
    }
    e->stopped = 1; /* its error callback says why */
    return -1;
}

/* whether e needs nothing more from the run */
static int
peers_hub_ep_done(peers_hub_t *h, const peers_run_t *r, peers_hub_ep_t *e)
{
    if (e->failed || (e->ep == NULL)) {
        return e->at_done == e->at_posted;
    }
    if (!h->alive[e->peer] || (e->bad_op >= 0)) {
        return 0; /* must fail */
    }
    return (e->ops >= r->ops) && (e->at_done == e->at_posted);
}

void peers_hub_kill_peer(peers_hub_t *h, unsigned p)
{
    kill(h->pid[p], SIGKILL);
    waitpid(h->pid[p], NULL, 0);
    close(h->fd[p]);
    h->alive[p]  = 0;
    h->kill_time = peers_now();
}

static void peers_hub_kill(peers_hub_t *h, const peers_run_t *r)
{
    peers_hub_ep_t *e;
    unsigned        i;

    for (i = 0; i < r->num_kill; ++i) {
        peers_hub_kill_peer(h, r->kill[i]);
    }
    /* every endpoint to a dead peer has work in flight before the pause:
     * spread over all the streams it may lease, so that they all time out
     * in it together (else which streams held dead peers' work when they
     * died was chance, and errors met one stream at a time) */
    for (i = r->first_ep; i < r->first_ep + r->num_eps; ++i) {
        e = &h->eps[i];
        if (!h->alive[e->peer] && !e->stopped && !e->failed &&
            (e->ep != NULL)) {
            peers_hub_post(h, e);
        }
    }
    if (r->pause_after_kill > 0) {
        usleep((useconds_t)(r->pause_after_kill * 1e6));
    }
}

/* what a hang looks like: the first endpoints that are not done, and
 * what the transport says of its queues */
static void peers_hub_dump_stuck(peers_hub_t *h, const peers_run_t *r)
{
    unsigned        i, shown = 0;
    peers_hub_ep_t *e;

    for (i = r->first_ep; (i < r->first_ep + r->num_eps) && (shown < 6); ++i) {
        e = &h->eps[i];
        if (peers_hub_ep_done(h, r, e)) {
            continue;
        }
        fprintf(stderr,
                "hub: not done: ep %u (peer %u%s) ops %u of %u, "
                "atomics %u of %u done, failed %d stopped %d: %s\n",
                i, e->peer, h->alive[e->peer] ? "" : ", dead", e->ops, r->ops,
                e->at_done, e->at_posted, e->failed, e->stopped,
                ucs_status_string(e->status));
        ++shown;
    }
}

int peers_hub_run(peers_hub_t *h, const peers_run_t *r)
{
    double          deadline = peers_now() + r->time_limit;
    unsigned        i, end = r->first_ep + r->num_eps, not_done = 0;
    uint64_t        posted = 0, total = 0;
    int             killed = (r->num_kill == 0);
    peers_hub_ep_t *e;

    for (i = r->first_ep; i < end; ++i) {
        total += peers_hub_ep_healthy(h, &h->eps[i]) ? r->ops : 0;
    }
    for (;;) {
        uct_worker_progress(h->uct.worker);
        for (i = r->first_ep, not_done = 0; i < end; ++i) {
            e = &h->eps[i];
            if (e->at_expect == UINT64_MAX) {
                peers_hub_fail(h,
                               "endpoint to peer %u slot %u: an atomic "
                               "fetched a wrong value",
                               e->peer, e->slot);
            }
            if (e->failed && (e->ep != NULL)) {
                /* as UCP does: a failed endpoint goes (its operations
                 * still outstanding complete as cancelled) */
                uct_ep_destroy(e->ep);
                e->ep = NULL;
            }
            if (!e->stopped && !e->failed &&
                ((e->ops < r->ops) || !h->alive[e->peer])) {
                posted += (peers_hub_post(h, e) > 0);
            }
            not_done += !peers_hub_ep_done(h, r, e);
        }
        if (!killed && (posted >= r->kill_at * total)) {
            peers_hub_kill(h, r);
            killed = 1;
        }
        if (killed && (not_done == 0)) {
            return 0;
        }
        if (peers_now() > deadline) {
            peers_hub_fail(h, "%u of %u endpoints not done after %.0f s",
                           not_done, r->num_eps, r->time_limit);
            peers_hub_dump_stuck(h, r);
            return -1;
        }
    }
}

/* ------------------------------------------------------------- the end */

static ucs_status_t peers_hub_flush(peers_hub_t *h, peers_hub_ep_t *e)
{
    double       deadline = peers_now() + 60;
    ucs_status_t status;

    /* without a completion: asked again until everything completed */
    do {
        uct_worker_progress(h->uct.worker);
        status = uct_ep_flush(e->ep, 0, NULL);
    } while (((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) &&
             (peers_now() < deadline));
    return status;
}

static ucs_status_t peers_hub_send_fin(peers_hub_t *h, peers_hub_ep_t *e)
{
    double       deadline = peers_now() + 60;
    peers_fin_t  fin      = {.put_seq = e->put_seq, .atomics = e->at_posted};
    ucs_status_t status;

    do {
        uct_worker_progress(h->uct.worker);
        status = uct_ep_am_short(e->ep, PEERS_AM_FIN,
                                 PEERS_HDR(e->slot, e->ams), &fin, sizeof(fin));
    } while ((status == UCS_ERR_NO_RESOURCE) && (peers_now() < deadline));
    return status;
}

unsigned peers_hub_finish(peers_hub_t *h, char *why, size_t len)
{
    uint32_t        fins[PEERS_MAX] = {0};
    peers_finish_t  finish;
    peers_verdict_t v;
    ucs_status_t    status;
    unsigned        i, passed = 0;
    peers_hub_ep_t *e;

    why[0] = '\0';
    for (i = 0; i < h->num_eps; ++i) {
        e = &h->eps[i];
        if (!peers_hub_ep_healthy(h, e)) {
            continue;
        }
        status = peers_hub_send_fin(h, e);
        if (status != UCS_OK) {
            peers_hub_fail(h, "FIN on endpoint %u: %s", i,
                           ucs_status_string(status));
            continue;
        }
        fins[e->peer]++;
    }
    for (i = 0; i < h->num_eps; ++i) {
        e = &h->eps[i];
        if (peers_hub_ep_healthy(h, e) &&
            ((status = peers_hub_flush(h, e)) != UCS_OK)) {
            peers_hub_fail(h, "flush of endpoint %u: %s", i,
                           ucs_status_string(status));
        }
    }
    for (i = 0; i < h->num_peers; ++i) {
        if (!h->alive[i]) {
            continue;
        }
        finish.fins = fins[i];
        if ((peers_send(h->fd[i], &finish, sizeof(finish)) != 0) ||
            (peers_recv(h->fd[i], &v, sizeof(v)) != 0)) {
            snprintf(why, len, "peer %u: no verdict (it died?)", i + 1);
            continue;
        }
        v.why[sizeof(v.why) - 1] = '\0';
        if (v.ok) {
            passed++;
        } else if (why[0] == '\0') {
            snprintf(why, len, "peer %u: %s", i + 1, v.why);
        }
    }
    return passed;
}

void peers_hub_stop(peers_hub_t *h)
{
    peers_finish_t bye = {0};
    unsigned       i;

    for (i = 0; i < h->num_eps; ++i) {
        if (h->eps[i].ep != NULL) {
            uct_ep_destroy(h->eps[i].ep);
        }
    }
    for (i = 0; i < h->num_peers; ++i) {
        if (h->hello[i].rkey_len > 0) {
            uct_rkey_release(h->uct.component, &h->rkey[i]);
        }
        if (h->alive[i]) {
            peers_send(h->fd[i], &bye, sizeof(bye));
            close(h->fd[i]);
            waitpid(h->pid[i], NULL, 0);
        }
    }
    peers_uct_close(&h->uct);
    free(h->eps);
}
