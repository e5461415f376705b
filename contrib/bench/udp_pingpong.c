/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong: the floor under the software device's wire between hosts,
 * a ping-pong of SIZE-byte UDP datagrams between two machines, each side
 * busy-polling a non-blocking socket as the device's progress does.
 *
 *   udp_pingpong server PORT
 *   udp_pingpong client HOST PORT [ITERS [SIZE]]
 *
 * The client prints "udp_pingpong SIZE ITERS MEDIAN_US AVERAGE_US" (half
 * round trips, as ucx_perftest reports latency) after a warm-up; the
 * server answers until the client's empty datagram ends it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static ssize_t
recv_spin(int fd, void *buf, size_t len, struct sockaddr_in *from)
{
    socklen_t flen = sizeof(*from);
    ssize_t   n;

    do {
        n = recvfrom(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)from,
                     &flen);
    } while (n < 0);
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr, peer;
    char               buf[65536];
    double            *rtt, t0, sum = 0;
    int                fd, i, iters, warm;
    size_t             size;
    ssize_t            n;

    if ((argc < 3) || (strcmp(argv[1], "server") && (argc < 4))) {
        fprintf(stderr, "usage: udp_pingpong server PORT | "
                        "client HOST PORT [ITERS [SIZE]]\n");
        return 2;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    if (!strcmp(argv[1], "server")) {
        addr.sin_port = htons((uint16_t)atoi(argv[2]));
        if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
            perror("bind");
            return 1;
        }
        for (;;) {
            n = recv_spin(fd, buf, sizeof(buf), &peer);
            if (n == 0) {
                return 0;
            }
            sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer,
                   sizeof(peer));
        }
    }
    if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) {
        fprintf(stderr, "udp_pingpong: %s is not an IPv4 address\n", argv[2]);
        return 2;
    }
    addr.sin_port = htons((uint16_t)atoi(argv[3]));
    iters         = (argc > 4) ? atoi(argv[4]) : 100000;
    size          = (argc > 5) ? strtoul(argv[5], NULL, 0) : 8;
    if ((iters <= 0) || (size == 0) || (size > sizeof(buf))) {
        fprintf(stderr, "udp_pingpong: bad ITERS or SIZE\n");
        return 2;
    }
    rtt  = calloc((size_t)iters, sizeof(*rtt));
    warm = iters / 10;
    memset(buf, 0x5a, size);
    for (i = -warm; i < iters; ++i) {
        t0 = now_us();
        sendto(fd, buf, size, 0, (struct sockaddr *)&addr, sizeof(addr));
        recv_spin(fd, buf, sizeof(buf), &peer);
        if (i >= 0) {
            rtt[i] = (now_us() - t0) / 2;
            sum += rtt[i];
        }
    }
    sendto(fd, buf, 0, 0, (struct sockaddr *)&addr, sizeof(addr));
    qsort(rtt, (size_t)iters, sizeof(*rtt), cmp_double);
    printf("udp_pingpong %zu %d %.3f %.3f\n", size, iters, rtt[iters / 2],
           sum / iters);
    free(rtt);
    return 0;
}
