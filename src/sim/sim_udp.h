/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UDP socket of the software device's wire between hosts: sends packets
 * as RoCEv2 datagrams (sim_wire.h) and receives them, every datagram
 * decoded and checked before a packet is handed on; what is dropped is
 * counted by reason. Non-blocking: the device's progress polls it, and its
 * descriptor is what a thread that has nothing else to do sleeps on.
 */
#ifndef SIM_UDP_H_
#define SIM_UDP_H_

#include "sim_wire.h"

#include <netinet/in.h>
#include <stdint.h>

typedef struct sim_udp sim_udp_t;

typedef struct sim_udp_stats {
    uint64_t tx;                       /* datagrams sent */
    uint64_t tx_busy;                  /* sends the socket had no room for */
    uint64_t rx;                       /* packets handed on */
    uint64_t drops[SIM_WIRE_DROP_MAX]; /* datagrams dropped, by reason
                                          (SIM_WIRE_OK: never) */
} sim_udp_stats_t;

/* a packet received: its payload points into the socket's buffer, valid
 * during the call */
typedef void (*sim_udp_rx_cb_t)(void *arg, const sim_pkt_t *pkt,
                                const void *payload);

/* whether other sockets may bind the same address (SO_REUSEPORT): the
 * sending socket on 4791 is the host's; a device's own is its alone (the
 * kernel would spread datagrams over the sockets of a shared port) */
typedef enum sim_udp_share {
    SIM_UDP_EXCLUSIVE,
    SIM_UDP_SHARED
} sim_udp_share_t;

/*
 * A socket bound to ADDR (port 0: one the kernel picks; sim_udp_addr says
 * which), taking only datagrams of fabric ID, with buffers as large as the
 * host allows (a window of 4 KiB packets per flow arrives at once). An
 * empty datagram is a wake (sim_fabric_port_sleep_on): received and
 * skipped, not counted. 0 or a negative errno.
 */
int  sim_udp_open(const sim_wire_id_t *id, const struct sockaddr_in *addr,
                  sim_udp_share_t share, sim_udp_t **udp_p);
void sim_udp_close(sim_udp_t *udp);
int  sim_udp_fd(const sim_udp_t *udp);
void sim_udp_addr(const sim_udp_t *udp, struct sockaddr_in *addr);

/*
 * PKT and its payload_len bytes of PAYLOAD as one datagram to TO. 0;
 * -EAGAIN when the socket has no room now (try again later, as for a full
 * ring); -EMSGSIZE for a packet the wire cannot carry; another negative
 * errno from sendto.
 */
int sim_udp_send(sim_udp_t *udp, const struct sockaddr_in *to,
                 const sim_pkt_t *pkt, const void *payload);

/*
 * Between sim_udp_batch_begin and the matching sim_udp_batch_end, datagrams
 * to one port gather and leave together (one send, UDP segmentation
 * offload: each still a datagram of its own on the wire) when the batch
 * ends, fills or the next one goes elsewhere (sim_udp_flush: now). A batch
 * that finds the socket full is lost, as on a congested link.
 */
void sim_udp_batch_begin(sim_udp_t *udp);
void sim_udp_batch_end(sim_udp_t *udp);
void sim_udp_flush(sim_udp_t *udp);

/* Up to MAX datagrams waiting now (one more receive coalesced by GRO may
 * take more), each good one's packet to CB; returns
 * how many datagrams were read (handed on or dropped). */
unsigned
sim_udp_recv(sim_udp_t *udp, sim_udp_rx_cb_t cb, void *arg, unsigned max);

void sim_udp_stats(const sim_udp_t *udp, sim_udp_stats_t *st);

#endif
