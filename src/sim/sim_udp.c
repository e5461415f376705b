/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire's UDP socket (sim_udp.h).
 */
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

struct sim_udp {
    int             fd;
    sim_wire_id_t   id;
    sim_udp_stats_t stats;
    uint8_t         buf[SIM_UDP_MAX_DGRAM + 1]; /* +1: sees an oversize one */
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

unsigned sim_udp_recv(sim_udp_t *udp, sim_udp_rx_cb_t cb, void *arg,
                      unsigned max)
{
    const uint8_t *payload;
    sim_wire_drop_t why;
    unsigned n;
    sim_pkt_t pkt;
    ssize_t len;

    for (n = 0; n < max; ++n) {
        len = recv(udp->fd, udp->buf, sizeof(udp->buf), MSG_DONTWAIT);
        if (len < 0) {
            break; /* EAGAIN: nothing more now (errors are the sender's) */
        }
        if (len == 0) {
            continue; /* a wake (sim_fabric_port_sleep_on) */
        }
        if ((size_t)len > SIM_UDP_MAX_DGRAM) {
            udp->stats.drops[SIM_WIRE_DROP_LENGTH]++;
            continue;
        }
        why = sim_wire_decode(&udp->id, udp->buf, (size_t)len, &pkt,
                              &payload);
        if (why != SIM_WIRE_OK) {
            udp->stats.drops[why]++;
            continue;
        }
        udp->stats.rx++;
        cb(arg, &pkt, payload);
    }
    return n;
}

void sim_udp_stats(const sim_udp_t *udp, sim_udp_stats_t *st)
{
    *st = udp->stats;
}
