/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire's UDP socket (sim_udp.h).
 */
#define _GNU_SOURCE
#include "sim_udp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* the largest datagram the device sends: a 4096-byte MTU's payload and
 * every header; a larger one is not the device's (dropped, "length") */
#define SIM_UDP_MAX_DGRAM (4096 + SIM_WIRE_OVERHEAD)

/* A syscall costs as much as handling a packet, and a window's worth of
 * packets goes at once: datagrams to one port leave in one send (UDP
 * segmentation offload: the kernel cuts the buffer into datagrams of one
 * size, the last one shorter) and arrive in one receive (UDP GRO), still
 * one datagram each on the wire. */
#define SIM_UDP_GSO_MAX \
    64                          /* datagrams in one send (the kernel's
                                   UDP_MAX_SEGMENTS is 64 or more) */
#define SIM_UDP_GSO_BYTES 65000 /* bytes in one send: under 64 KiB */
#define SIM_UDP_BATCH     4     /* receives one recvmmsg takes */
#define SIM_UDP_RX_BYTES  65536 /* a GRO receive: up to 64 KiB */

typedef struct sim_udp_txq {
    struct sockaddr_in to;
    uint16_t           seg; /* datagram size of the batch */
    unsigned           count;
    size_t             len;
    bool               closed; /* a shorter one came: it is the last */
    uint8_t            buf[SIM_UDP_GSO_BYTES];
} sim_udp_txq_t;

struct sim_udp {
    int             fd;
    sim_wire_id_t   id;
    sim_udp_stats_t stats;
    int             batching; /* sim_udp_batch_begin depth */
    bool            gso;      /* the kernel takes UDP_SEGMENT */
    sim_udp_txq_t   txq;
    struct mmsghdr  msgs[SIM_UDP_BATCH];
    struct iovec    iovs[SIM_UDP_BATCH];
    char            ctrl[SIM_UDP_BATCH][CMSG_SPACE(sizeof(uint16_t))];
    uint8_t         bufs[SIM_UDP_BATCH][SIM_UDP_RX_BYTES];
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
    int        one = 1, ret;

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
    /* whole batches in (older kernels: one datagram per receive) */
    (void)setsockopt(udp->fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
    udp->gso = true;
    if (((share == SIM_UDP_SHARED) &&
         (setsockopt(udp->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) <
          0)) ||
        (bind(udp->fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0)) {
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
    getsockname(udp->fd, (struct sockaddr *)addr, &len);
}

static bool
sim_udp_same_to(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return (a->sin_addr.s_addr == b->sin_addr.s_addr) &&
           (a->sin_port == b->sin_port);
}

/* BUF (LEN bytes: COUNT datagrams of SEG bytes, the last maybe shorter)
 * to TO in one send. 0, -EAGAIN or another negative errno. */
static int sim_udp_sendto(sim_udp_t *udp, const struct sockaddr_in *to,
                          const uint8_t *buf, size_t len, unsigned count,
                          uint16_t seg)
{
    char            ctrl[CMSG_SPACE(sizeof(uint16_t))];
    struct iovec    iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr   msg;
    struct cmsghdr *cm;
    ssize_t         ret;

    memset(&msg, 0, sizeof(msg));
    msg.msg_name    = (void *)to;
    msg.msg_namelen = sizeof(*to);
    msg.msg_iov     = &iov;
    msg.msg_iovlen  = 1;
    if (count > 1) {
        memset(ctrl, 0, sizeof(ctrl));
        msg.msg_control    = ctrl;
        msg.msg_controllen = sizeof(ctrl);
        cm                 = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level     = SOL_UDP;
        cm->cmsg_type      = UDP_SEGMENT;
        cm->cmsg_len       = CMSG_LEN(sizeof(uint16_t));
        memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
    }
    ret = sendmsg(udp->fd, &msg, MSG_DONTWAIT);
    if ((ret < 0) && (count > 1) &&
        ((errno == EINVAL) || (errno == EIO) || (errno == ENOPROTOOPT))) {
        /* no segmentation offload here: one datagram per send from now */
        const uint8_t *p = buf;
        udp->gso         = false;
        for (; count > 0; --count, p += seg) {
            size_t n = (count == 1) ? (size_t)(buf + len - p) : seg;
            if (sim_udp_sendto(udp, to, p, n, 1, 0) != 0) {
                udp->stats.tx_busy++;
            }
        }
        return 0;
    }
    if (ret < 0) {
        if ((errno == EAGAIN) || (errno == EWOULDBLOCK) || (errno == ENOBUFS)) {
            udp->stats.tx_busy++;
            return -EAGAIN;
        }
        return -errno;
    }
    udp->stats.tx += count;
    return 0;
}

void sim_udp_batch_begin(sim_udp_t *udp)
{
    udp->batching++;
}

void sim_udp_flush(sim_udp_t *udp)
{
    sim_udp_txq_t *q = &udp->txq;

    if (q->count > 0) {
        /* a batch that finds no room is lost as on a congested link:
         * the transport's timer sends it again */
        (void)sim_udp_sendto(udp, &q->to, q->buf, q->len, q->count, q->seg);
    }
    q->count  = 0;
    q->len    = 0;
    q->closed = false;
}

void sim_udp_batch_end(sim_udp_t *udp)
{
    if (--udp->batching == 0) {
        sim_udp_flush(udp);
    }
}

int sim_udp_send(sim_udp_t *udp, const struct sockaddr_in *to,
                 const sim_pkt_t *pkt, const void *payload)
{
    sim_udp_txq_t *q = &udp->txq;
    uint8_t        dgram[SIM_UDP_MAX_DGRAM];
    size_t         len;

    if ((udp->batching == 0) || !udp->gso) {
        len = sim_wire_encode(&udp->id, pkt, payload, dgram, sizeof(dgram));
        if (len == 0) {
            return -EMSGSIZE;
        }
        return sim_udp_sendto(udp, to, dgram, len, 1, 0);
    }
    /* the next datagram of the batch, if it can be: same port, same size
     * (or a shorter last one), room left */
    if ((q->count > 0) && (q->closed || !sim_udp_same_to(&q->to, to) ||
                           (q->count == SIM_UDP_GSO_MAX) ||
                           (q->len + SIM_UDP_MAX_DGRAM > sizeof(q->buf)))) {
        sim_udp_flush(udp);
    }
    len = sim_wire_encode(&udp->id, pkt, payload, q->buf + q->len,
                          sizeof(q->buf) - q->len);
    if (len == 0) {
        return -EMSGSIZE;
    }
    if ((q->count > 0) && (len > q->seg)) {
        /* longer than the batch's: it starts the next one */
        memcpy(dgram, q->buf + q->len, len);
        sim_udp_flush(udp);
        memcpy(q->buf, dgram, len);
    }
    if (q->count == 0) {
        q->to  = *to;
        q->seg = (uint16_t)len;
    } else if (len < q->seg) {
        q->closed = true;
    }
    q->len += len;
    q->count++;
    return 0;
}

/* One datagram read: decoded, checked, its packet handed on or counted. */
static void sim_udp_take(sim_udp_t *udp, const uint8_t *buf, size_t len,
                         sim_udp_rx_cb_t cb, void *arg)
{
    const uint8_t  *payload;
    sim_wire_drop_t why;
    sim_pkt_t       pkt;

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

/* The datagram size of a receive that GRO coalesced, 0 for one datagram */
static uint16_t sim_udp_gro_size(struct msghdr *msg)
{
    struct cmsghdr *cm;
    uint16_t        seg = 0;

    for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
        if ((cm->cmsg_level == SOL_UDP) && (cm->cmsg_type == UDP_GRO)) {
            memcpy(&seg, CMSG_DATA(cm), sizeof(seg));
        }
    }
    return seg;
}

/* The datagrams of one receive; how many */
static unsigned
sim_udp_take_all(sim_udp_t *udp, unsigned i, sim_udp_rx_cb_t cb, void *arg)
{
    uint16_t       seg   = sim_udp_gro_size(&udp->msgs[i].msg_hdr);
    const uint8_t *p     = udp->bufs[i];
    size_t         left  = udp->msgs[i].msg_len, n;
    unsigned       count = 0;

    if ((seg == 0) || (left <= seg)) {
        sim_udp_take(udp, p, left, cb, arg);
        return 1;
    }
    for (; left > 0; p += n, left -= n, ++count) {
        n = (left < seg) ? left : seg;
        sim_udp_take(udp, p, n, cb, arg);
    }
    return count;
}

unsigned
sim_udp_recv(sim_udp_t *udp, sim_udp_rx_cb_t cb, void *arg, unsigned max)
{
    unsigned n = 0, want, i;
    int      got;

    while (n < max) {
        want = (max - n < SIM_UDP_BATCH) ? max - n : SIM_UDP_BATCH;
        for (i = 0; i < want; ++i) {
            udp->iovs[i].iov_base = udp->bufs[i];
            /* a datagram of the device's: one more byte sees an oversize
             * one; a coalesced receive: the whole buffer */
            udp->iovs[i].iov_len = sizeof(udp->bufs[i]);
            memset(&udp->msgs[i].msg_hdr, 0, sizeof(udp->msgs[i].msg_hdr));
            udp->msgs[i].msg_hdr.msg_iov        = &udp->iovs[i];
            udp->msgs[i].msg_hdr.msg_iovlen     = 1;
            udp->msgs[i].msg_hdr.msg_control    = udp->ctrl[i];
            udp->msgs[i].msg_hdr.msg_controllen = sizeof(udp->ctrl[i]);
        }
        got = recvmmsg(udp->fd, udp->msgs, want, MSG_DONTWAIT, NULL);
        if (got <= 0) {
            break; /* EAGAIN: nothing more now (errors are the sender's) */
        }
        for (i = 0; i < (unsigned)got; ++i) {
            n += sim_udp_take_all(udp, i, cb, arg);
        }
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
