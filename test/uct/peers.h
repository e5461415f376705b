/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_peers: one hub process with many dc_strand endpoints to a fleet of
 * peer processes it forks, each its own NIC on the software fabric. The hub
 * streams active messages, PUTs and atomics on every endpoint, may kill
 * peers or misuse a key mid-traffic, and every peer checks that each
 * message of each endpoint arrived once and in order, that the last PUT
 * landed and that the atomic counter holds exactly the number of atomics.
 *
 *   peers.h        what hub and peers share: wire formats, slots
 *   peers_uct.c    UCT set-up (component, MD, iface), VFS reads, sockets
 *   peers_peer.c   a peer process: receive, check, report
 *   peers_hub.c    the hub's traffic engine
 *   dc_peers.c     the scenarios and their checks (TAP lines)
 */
#ifndef STRAND_TEST_PEERS_H_
#define STRAND_TEST_PEERS_H_

#include <uct/api/uct.h>
#include <ucs/async/async.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PEERS_MAX      64
#define PEERS_SLOTS    1024 /* hub endpoints a peer can check */
#define PEERS_AM_DATA  1
#define PEERS_AM_FIN   2
#define PEERS_ADDR_MAX 128
#define PEERS_WHY_LEN  256

/* A hub endpoint's part of a peer's registered memory. */
typedef struct peers_slot {
    uint64_t put_seq;   /* the last PUT: its sequence number ... */
    uint64_t put_check; /* ... and its complement (a torn PUT shows) */
    uint64_t atomic;    /* fetch-and-add(1) target */
    uint8_t  pad[40];
} peers_slot_t;

/* peer -> hub at start: how to reach it */
typedef struct peers_hello {
    int32_t  pid;
    uint32_t dev_addr_len, iface_addr_len, rkey_len;
    uint8_t  dev_addr[PEERS_ADDR_MAX];
    uint8_t  iface_addr[PEERS_ADDR_MAX];
    uint8_t  rkey[PEERS_ADDR_MAX];
    uint64_t slots; /* address of its PEERS_SLOTS slots */
} peers_hello_t;

/* hub -> peer at the end: how many FIN messages it must have received */
typedef struct peers_finish {
    uint32_t fins;
} peers_finish_t;

/* peer -> hub: its verdict */
typedef struct peers_verdict {
    int32_t  ok;
    uint32_t fins;
    uint64_t ams; /* data messages received */
    char     why[PEERS_WHY_LEN];
} peers_verdict_t;

/* an AM_DATA message: header word, then `len` pattern bytes */
#define PEERS_HDR(_slot, _seq) (((uint64_t)(_slot) << 32) | (uint32_t)(_seq))
#define PEERS_HDR_SLOT(_hdr)   ((uint32_t)((_hdr) >> 32))
#define PEERS_HDR_SEQ(_hdr)    ((uint32_t)(_hdr))

static inline uint8_t peers_pattern(uint32_t slot, uint32_t seq, size_t i)
{
    return (uint8_t)(slot * 7 + seq * 13 + i * 3 + 1);
}

/* the payload length of data message `seq`: short ones inline (am_short),
 * longer ones through a bounce buffer (am_bcopy) */
static inline size_t peers_am_len(uint32_t seq, int bcopy)
{
    return bcopy ? 100 + (seq % 200) : (seq % 24);
}

/* an AM_FIN message (am_short header = PEERS_HDR(slot, ams)) */
typedef struct peers_fin {
    uint64_t put_seq;
    uint64_t atomics;
} peers_fin_t;

/* One process's UCT objects. */
typedef struct peers_uct {
    uct_component_h      component;
    uct_md_h             md;
    uct_md_attr_t        md_attr;
    ucs_async_context_t *async;
    uct_worker_h         worker;
    uct_iface_h          iface;
    uct_iface_attr_t     attr;
    int                  event_fd; /* -1: none */
} peers_uct_t;

ucs_status_t
     peers_uct_open(peers_uct_t *u, uct_error_handler_t err_cb, void *err_arg);
void peers_uct_close(peers_uct_t *u);
/* a file of the iface's VFS directory (the transport's own view), "" if
 * there is none */
void peers_vfs_read(peers_uct_t *u, const char *file, char *buf, size_t len);

/* whole-struct socket I/O: 0, or -1 (peer gone, or an error) */
int peers_send(int fd, const void *buf, size_t len);
int peers_recv(int fd, void *buf, size_t len);

/* a peer process's body: returns its exit code */
int peers_peer_main(int fd, int rank);

double peers_now(void);

#endif
