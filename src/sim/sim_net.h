/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fabric that spans hosts (STRAND_SIM_FABRIC=udp:<name>): the processes of
 * one host share the fabric's memory segment as on one machine; a packet
 * for a port on another host travels as a RoCEv2 datagram (sim_udp.h).
 *
 * Routing needs no daemon: every host of the fabric is named, in one order,
 * by STRAND_SIM_HOSTS, a LID carries its host's index (fabric.h), and a
 * port's UDP port is the fabric's base port plus the port's slot. So the
 * destination of a packet follows from its DLID alone, as a switch's
 * forwarding table follows from the subnet manager's LID assignment.
 *
 * Every device has two sockets: its own (base + slot, exclusive), on which
 * it receives and which its progress thread sleeps on, and the host's
 * sending socket on port 4791 (shared by the host's devices), so that a
 * capture decodes every packet as RoCEv2 by its source port.
 */
#ifndef SIM_NET_H_
#define SIM_NET_H_

#include "packet.h"
#include "sim_udp.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define SIM_NET_BASE_PORT 4792 /* default: a device's port is base + slot */
#define SIM_NET_MAX_HOSTS 64   /* what a LID has room for (fabric.h) */

typedef struct sim_net sim_net_t;

/*
 * Reads the configuration in the environment. 0 with *net_p NULL: the
 * fabric is one host's (STRAND_SIM_FABRIC is not "udp:..."); 0 with a
 * network; or a negative errno, the reason said on stderr (no host list,
 * a name that does not resolve, none of the hosts is this one, ...).
 */
int  sim_net_open(sim_net_t **net_p);
void sim_net_close(sim_net_t *net);

/* the name of this host's segment of the fabric, its host index and the
 * fabric's identity (the same on every host: from the name, the host list
 * and the port) */
const char *sim_net_segment(const sim_net_t *net);
unsigned    sim_net_self(const sim_net_t *net);
uint64_t    sim_net_identity(const sim_net_t *net);
unsigned    sim_net_num_hosts(const sim_net_t *net);
/* The largest IB MTU (256 .. 4096) whose datagrams cross the link
 * unfragmented: the port's active MTU, as a RoCE port's follows its
 * network device's (a lost fragment loses the datagram, and fragments
 * waiting for a lost one fill the kernel's reassembly memory until every
 * fragmented datagram is dropped). */
unsigned sim_net_path_mtu(const sim_net_t *net);
/* What a message between hosts costs beyond the device's own work, for the
 * device's performance estimate: one UDP hop of this host's kernel (ns)
 * and the link's payload rate (MB/s: its rate less the headers of a
 * datagram of the path MTU). */
void sim_net_wire_perf(const sim_net_t *net, double *hop_ns, double *mbs);
/* a host's IPv4 address, network order */
uint32_t sim_net_host_addr(const sim_net_t *net, unsigned host);

/* The sockets of the port at SLOT of this host: 0 or a negative errno
 * (said on stderr: a port taken by another fabric or program). */
int sim_net_port_open(sim_net_t *net, unsigned slot);
/* the device's own socket (what its thread sleeps on) and its address */
int  sim_net_fd(const sim_net_t *net);
void sim_net_port_addr(const sim_net_t *net, unsigned slot,
                       struct sockaddr_in *addr);

/* Whether LID is another host's (then sim_net_send carries its packets),
 * and whether that host is one of the fabric's. */
bool sim_net_is_remote(const sim_net_t *net, uint16_t lid);
bool sim_net_reachable(const sim_net_t *net, uint16_t lid);

/* PKT (payload_len bytes of PAYLOAD) to the port with LID DLID on another
 * host. 0; -EAGAIN (the socket has no room now); -EHOSTUNREACH (no such
 * host); -EMSGSIZE. */
int sim_net_send(sim_net_t *net, uint16_t dlid, const sim_pkt_t *pkt,
                 const void *payload);
/* What the engine sends between these goes out in batches (sim_udp.h);
 * the outermost end sends what is left. */
void sim_net_batch_begin(sim_net_t *net);
void sim_net_batch_end(sim_net_t *net);
/* Up to MAX datagrams waiting on the device's socket, each good packet to
 * CB; how many were read. */
unsigned
sim_net_recv(sim_net_t *net, sim_udp_rx_cb_t cb, void *arg, unsigned max);
/* A datagram waits on the device's socket (one poll, no waiting). */
bool sim_net_readable(const sim_net_t *net);
void sim_net_stats(const sim_net_t *net, sim_udp_stats_t *st);

#endif
