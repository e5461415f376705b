/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire's UDP socket (sim_udp.h).
 */
#define _GNU_SOURCE
#include "sim_udp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* the largest datagram the device sends: a 4096-byte MTU's payload and
 * every header; a larger one is not the device's (dropped, "length") */
#define SIM_UDP_MAX_DGRAM (4096 + SIM_WIRE_OVERHEAD)

/* datagrams one receive call takes (recvmmsg): a syscall costs as much as
 * handling a packet, and a window's worth arrives at once */
#define SIM_UDP_BATCH 16

struct sim_udp {
    int             fd;
    sim_wire_id_t   id;
    sim_udp_stats_t stats;
    struct mmsghdr  msgs[SIM_UDP_BATCH];
    struct iovec    iovs[SIM_UDP_BATCH];
    /* +1: sees an oversize one */
    uint8_t         bufs[SIM_UDP_BATCH][SIM_UDP_MAX_DGRAM + 1];
};

/* the socket buffers asked for: 64 packets of 4 KiB in flight on each of
 * a few flows; what the host's limits (net.core.rmem_max, wmem_max) give
 * without privilege, more where the process may force it */
#define SIM_UDP_BUF_BYTES (8 << 20)

static void sim_udp_buffers(int fd)
{
    int size = SIM_UDP_BUF_BYTES;

    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    }
}

int sim_udp_open(const sim_wire_id_t *id, const struct sockaddr_in *addr,
                 sim_udp_share_t share, sim_udp_t **udp_p)
{
    sim_udp_t *udp;
    int one = 1, ret;

    udp = calloc(1, sizeof(*udp));
    if (udp == NULL) {
        return -ENOMEM;
    }
    udp->id = *id;
    udp->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (udp->fd < 0) {
        ret = -errno;
        free(udp);
        return ret;
    }
    sim_udp_buffers(udp->fd);
    if (((share == SIM_UDP_SHARED) &&
         (setsockopt(udp->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) <
          0)) ||
        (bind(udp->fd, (const struct sockaddr*)addr, sizeof(*addr)) < 0)) {
        ret = -errno;
        sim_udp_close(udp);
        return ret;
    }
    *udp_p = udp;
    return 0;
}

void sim_udp_close(sim_udp_t *udp)
{
    if (udp != NULL) {
        close(udp->fd);
        free(udp);
    }
}

int sim_udp_fd(const sim_udp_t *udp)
{
    return udp->fd;
}

void sim_udp_addr(const sim_udp_t *udp, struct sockaddr_in *addr)
{
    socklen_t len = sizeof(*addr);

    memset(addr, 0, sizeof(*addr));
    getsockname(udp->fd, (struct sockaddr*)addr, &len);
}

int sim_udp_send(sim_udp_t *udp, const struct sockaddr_in *to,
                 const sim_pkt_t *pkt, const void *payload)
{
    uint8_t dgram[SIM_UDP_MAX_DGRAM];
    size_t len;

    len = sim_wire_encode(&udp->id, pkt, payload, dgram, sizeof(dgram));
    if (len == 0) {
        return -EMSGSIZE;
    }
    if (sendto(udp->fd, dgram, len, MSG_DONTWAIT, (const struct sockaddr*)to,
               sizeof(*to)) < 0) {
        if ((errno == EAGAIN) || (errno == EWOULDBLOCK) || (errno == ENOBUFS)) {
            udp->stats.tx_busy++;
            return -EAGAIN;
        }
        return -errno;
    }
    udp->stats.tx++;
    return 0;
}

/* One datagram read: decoded, checked, its packet handed on or counted. */
static void sim_udp_take(sim_udp_t *udp, const uint8_t *buf, size_t len,
                         sim_udp_rx_cb_t cb, void *arg)
{
    const uint8_t *payload;
    sim_wire_drop_t why;
    sim_pkt_t pkt;

    if (len == 0) {
        return; /* a wake (sim_fabric_port_sleep_on) */
    }
    if (len > SIM_UDP_MAX_DGRAM) {
        udp->stats.drops[SIM_WIRE_DROP_LENGTH]++;
        return;
    }
    why = sim_wire_decode(&udp->id, buf, len, &pkt, &payload);
    if (why != SIM_WIRE_OK) {
        udp->stats.drops[why]++;
        return;
    }
    udp->stats.rx++;
    cb(arg, &pkt, payload);
}

unsigned sim_udp_recv(sim_udp_t *udp, sim_udp_rx_cb_t cb, void *arg,
                      unsigned max)
{
    unsigned n = 0, want, i;
    int got;

    while (n < max) {
        want = (max - n < SIM_UDP_BATCH) ? max - n : SIM_UDP_BATCH;
        for (i = 0; i < want; ++i) {
            udp->iovs[i].iov_base = udp->bufs[i];
            udp->iovs[i].iov_len  = sizeof(udp->bufs[i]);
            memset(&udp->msgs[i].msg_hdr, 0, sizeof(udp->msgs[i].msg_hdr));
            udp->msgs[i].msg_hdr.msg_iov    = &udp->iovs[i];
            udp->msgs[i].msg_hdr.msg_iovlen = 1;
        }
        got = recvmmsg(udp->fd, udp->msgs, want, MSG_DONTWAIT, NULL);
        if (got <= 0) {
            break; /* EAGAIN: nothing more now (errors are the sender's) */
        }
        for (i = 0; i < (unsigned)got; ++i) {
            sim_udp_take(udp, udp->bufs[i], udp->msgs[i].msg_len, cb, arg);
        }
        n += (unsigned)got;
        if ((unsigned)got < want) {
            break;
        }
    }
    return n;
}

void sim_udp_stats(const sim_udp_t *udp, sim_udp_stats_t *st)
{
    *st = udp->stats;
}
