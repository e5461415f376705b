/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_peers: the hub. It forks the peers, opens endpoints to them and runs
 * traffic on them: per endpoint a fixed cycle of active message (inline),
 * PUT, active message (bcopy) and fetch-and-add, every operation numbered,
 * atomics checked as they complete (each must fetch the previous count:
 * one that ran twice or not at all shows). It can kill peers or post a PUT
 * with a bad key mid-traffic and records which endpoints fail, how and
 * when.
 */
#ifndef STRAND_TEST_PEERS_HUB_H_
#define STRAND_TEST_PEERS_HUB_H_

#include "peers.h"

#define PEERS_AT_WINDOW 4 /* atomics in flight per endpoint */

struct peers_hub_ep;

typedef struct peers_atomic {
    uct_completion_t     comp;
    uint64_t             result;
    struct peers_hub_ep *ep;
} peers_atomic_t;

typedef struct peers_hub_ep {
    uct_ep_h       ep;
    unsigned       peer;
    uint32_t       slot;    /* at the peer */
    uint32_t       ops;     /* operations posted */
    uint32_t       ams;     /* data messages posted */
    uint64_t       put_seq; /* the last PUT posted */
    uint32_t       at_posted, at_done;
    uint64_t       at_expect; /* what the next atomic must fetch */
    int64_t        bad_op;    /* PUT with a bad key at this op; -1 */
    uint8_t        failed;    /* its error was reported */
    uint8_t        stopped;   /* posts no more */
    ucs_status_t   status;
    double         fail_time;
    peers_atomic_t at[PEERS_AT_WINDOW];
} peers_hub_ep_t;

typedef struct peers_hub {
    peers_uct_t       uct;
    unsigned          num_peers;
    pid_t             pid[PEERS_MAX];
    int               fd[PEERS_MAX];
    int               alive[PEERS_MAX];
    peers_hello_t     hello[PEERS_MAX];
    uct_rkey_bundle_t rkey[PEERS_MAX];
    peers_hub_ep_t   *eps;
    unsigned          num_eps, max_eps;
    unsigned          errors; /* error callbacks */
    double            kill_time;
    int               failed; /* a check of the hub's failed */
    char              why[PEERS_WHY_LEN];
} peers_hub_t;

/* What a run does. */
typedef struct peers_run {
    unsigned first_ep, num_eps; /* the eps that send */
    uint32_t ops;               /* per healthy ep */
    double   kill_at;           /* kill when this share of all ops is
                                   posted */
    unsigned kill[PEERS_MAX];   /* peers to kill */
    unsigned num_kill;
    double   pause_after_kill; /* seconds the hub then does not progress
                                  (errors pile up unhandled, as under a
                                  busy application) */
    double   time_limit;       /* seconds */
} peers_run_t;

/* fork num_peers peers (before any UCX call), open the hub's interface,
 * learn the peers' addresses: 0 or -1 */
int peers_hub_start(peers_hub_t *h, unsigned num_peers);
/* eps_per_peer new endpoints to every live peer, slots from first_slot */
int peers_hub_connect(peers_hub_t *h, unsigned eps_per_peer,
                      uint32_t first_slot);
/* traffic until every healthy ep posted r->ops and got its atomics back,
 * and every ep to a killed peer or with a bad PUT failed: 0 or -1 */
int peers_hub_run(peers_hub_t *h, const peers_run_t *r);
/* FIN to every healthy ep, verdicts of the live peers: how many passed;
 * the first failure in *why */
unsigned peers_hub_finish(peers_hub_t *h, char *why, size_t len);
void     peers_hub_stop(peers_hub_t *h);

void peers_hub_fail(peers_hub_t *h, const char *fmt, ...);
/* the next checked active message of e (e->ams counts it when sent) */
ucs_status_t peers_hub_am_short(peers_hub_ep_t *e);
/* SIGKILL peer p now (kill_time is then) */
void peers_hub_kill_peer(peers_hub_t *h, unsigned p);
int  peers_hub_ep_healthy(const peers_hub_t *h, const peers_hub_ep_t *e);

#endif
