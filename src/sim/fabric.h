/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software device's wire: processes on one host share a memory segment
 * (/dev/shm/<name>) in which every attached NIC port has an inbound packet
 * ring. Routing is by LID. Plain C, no UCX.
 */
#ifndef SIM_FABRIC_H_
#define SIM_FABRIC_H_

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sim_fabric sim_fabric_t; /* this process's attachment */
typedef struct sim_port   sim_port_t;   /* one port (one LID) we own */

#define SIM_FABRIC_MAX_PKT   (4096 + 256) /* header + payload, bytes */
#define SIM_FABRIC_MAX_PORTS 128
#define SIM_FABRIC_RING_SIZE 256 /* packets per inbound ring */

/* Attach to (creating if needed) the fabric `name` (NULL: env
 * STRAND_SIM_FABRIC, else "strand-<uid>"). 0 or a negative errno. */
int sim_fabric_attach(const char *name, sim_fabric_t **fab_p);
/*
 * The same for one host's part of a fabric that spans hosts (sim_net.h):
 * its LIDs carry HOST (< SIM_FABRIC_MAX_HOSTS), and IDENTITY, the same on
 * every host, is the fabric's. -EPROTO when a segment of that name exists
 * here with another host index or identity (another host list).
 */
int sim_fabric_attach_host(const char *name, unsigned host, uint64_t identity,
                           sim_fabric_t **fab_p);
/* Detach; the last live process attached removes the segment. */
void sim_fabric_detach(sim_fabric_t *fab);

/*
 * LIDs. On one host: generation << 7 | slot. On a host of a fabric that
 * spans hosts: generation << 13 | host << 7 | slot (generations 1..5, so
 * that every LID stays below 0xC000, the first multicast LID).
 */
#define SIM_FABRIC_SLOT_BITS 7
#define SIM_FABRIC_HOST_BITS 6
#define SIM_FABRIC_MAX_HOSTS (1u << SIM_FABRIC_HOST_BITS)
static inline unsigned sim_fabric_lid_slot(uint16_t lid)
{
    return lid & (SIM_FABRIC_MAX_PORTS - 1);
}
static inline unsigned sim_fabric_lid_host(uint16_t lid)
{
    return (lid >> SIM_FABRIC_SLOT_BITS) & (SIM_FABRIC_MAX_HOSTS - 1);
}
/* 1 when LID's port is on this host (always on a one-host fabric) */
int sim_fabric_lid_local(const sim_fabric_t *fab, uint16_t lid);

/* A port with a fresh LID (1..0xBFFF), owned by this process. */
int      sim_fabric_port_open(sim_fabric_t *fab, sim_port_t **port_p);
void     sim_fabric_port_close(sim_port_t *port);
uint16_t sim_fabric_port_lid(const sim_port_t *port);

/* Queue one packet (header + payload, gathered) for LID `dlid`.
 * 0; -EHOSTUNREACH (no open port has that LID: dropped, like a wire);
 * -EAGAIN (its ring is full); -EMSGSIZE. Never blocks. */
int sim_fabric_send(sim_fabric_t *fab, uint16_t dlid, const void *hdr,
                    size_t hdr_len, const void *payload, size_t payload_len);

/* Consume up to `max` packets; `pkt` points into the ring slot and is valid
 * during the callback only. One consumer per port. */
typedef void (*sim_fabric_rx_cb_t)(void *arg, const void *pkt, size_t len);
unsigned sim_fabric_recv(sim_port_t *port, sim_fabric_rx_cb_t cb, void *arg,
                         unsigned max);
int      sim_fabric_rx_pending(const sim_port_t *port);

/*
 * Sleep until a packet arrives, sim_fabric_port_wake() is called, or
 * `timeout_ns` passes (< 0: no limit). 0 or -ETIMEDOUT.
 *
 * Wake protocol: the waiter publishes `sleeping` and re-checks the ring
 * before it waits on the port's futex word. A sender that finds `sleeping`
 * set bumps the word and wakes it, unless the owner polled inline within
 * the last 100 us (it will see the packet itself: no syscall on a busy
 * path). So that a packet is never stranded by that shortcut, a waiter
 * whose owner polled within the last 5 ms naps in 1 ms slices (a packet
 * waits at most that long when its owner stops polling right after it was
 * sent); once the owner has been idle longer it sleeps until woken, using
 * no CPU.
 */
int  sim_fabric_wait(sim_port_t *port, int64_t timeout_ns);
void sim_fabric_port_wake(sim_port_t *port);
/*
 * On a fabric that spans hosts the port's thread sleeps on its socket FD
 * (where packets from other hosts arrive) instead of the futex, and a
 * sender on this host wakes it with an empty datagram to ADDR: one thing
 * to sleep on, whatever brings the work. While the owner polls (it reads
 * the socket itself) the thread naps on the futex as on one host: woken
 * by each datagram, it would only take the engine from the owner.
 */
void sim_fabric_port_sleep_on(sim_port_t *port, int fd,
                              const struct sockaddr_in *addr);
/* 1 when the owner polled within the last 100 us (senders skip the wake) */
int sim_fabric_owner_polling(const sim_port_t *port);
/* The owner polled inline just now (see the wake protocol). */
void sim_fabric_port_touch(sim_port_t *port);
/* the owner stops polling (it armed a CQ and may sleep on its event): a
 * sender must wake the port's thread from now on, and one that skipped
 * the wake just before is caught up here (a packet already waiting wakes
 * the thread) */
void sim_fabric_port_idle(sim_port_t *port);

/* The segment's name as resolved at attach (without the leading '/'). */
const char *sim_fabric_name(const sim_fabric_t *fab);
/* The fabric's identity: random, made with the segment (never derived
 * from its name): the subnet prefix and GID prefix of its ports. */
uint64_t sim_fabric_identity(const sim_fabric_t *fab);

/* Test / observability hook: what the port's waiter did. */
typedef struct sim_port_stats {
    uint64_t sleeps;         /* futex waits entered */
    uint64_t untimed_sleeps; /* ... of them with no time limit */
    int      asleep_untimed; /* 1 while the waiter sleeps with no limit */
} sim_port_stats_t;
void sim_fabric_port_stats(const sim_port_t *port, sim_port_stats_t *st);

/* 1 when a live process owns a port with this LID. */
int sim_fabric_lid_alive(sim_fabric_t *fab, uint16_t lid);

#endif
