/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fabric across hosts (sim_net.h): its configuration, this host's place
 * in it, and the sockets of this process's port.
 */
#define _GNU_SOURCE
#include "sim_net.h"
#include "fabric.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SIM_NET_PREFIX      "udp:"
#define SIM_NET_DFLT_MBIT   10000 /* a link that says no rate: 10 Gbit/s */
#define SIM_NET_DFLT_HOP_NS 5000  /* a UDP hop that could not be timed */

struct sim_net {
    char       segment[128];
    unsigned   num_hosts;
    unsigned   self;
    uint32_t   hosts[SIM_NET_MAX_HOSTS]; /* IPv4, network order */
    uint16_t   base_port;
    uint64_t   identity;
    unsigned   link_mtu;  /* bytes an IP packet may have on the link */
    unsigned   link_mbit; /* the link's rate, Mbit/s (0: not known) */
    sim_udp_t *rx;        /* the port's own socket */
    sim_udp_t *tx;        /* the host's sending socket (4791, shared) */
};

static int sim_net_fail(int err, const char *fmt, const char *what)
{
    fprintf(stderr, "smlx5: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    return err;
}

/* One host of STRAND_SIM_HOSTS: an IPv4 address or a name that resolves
 * to one (the hosts file, DNS). */
static int sim_net_resolve(const char *name, uint32_t *addr)
{
    struct addrinfo hints, *res;
    struct in_addr  in;

    if (inet_pton(AF_INET, name, &in) == 1) {
        *addr = in.s_addr;
        return 0;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    if ((getaddrinfo(name, NULL, &hints, &res) != 0) || (res == NULL)) {
        return -EHOSTUNREACH;
    }
    *addr = ((const struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
    freeaddrinfo(res);
    return 0;
}

static int sim_net_parse_hosts(sim_net_t *net, const char *list)
{
    char *copy, *tok, *save = NULL;
    int   ret = 0;

    copy = strdup(list);
    if (copy == NULL) {
        return -ENOMEM;
    }
    for (tok = strtok_r(copy, ", ", &save); tok != NULL;
         tok = strtok_r(NULL, ", ", &save)) {
        if (net->num_hosts == SIM_NET_MAX_HOSTS) {
            ret = sim_net_fail(-E2BIG,
                               "STRAND_SIM_HOSTS names more than 64 "
                               "hosts%s",
                               "");
            break;
        }
        if (sim_net_resolve(tok, &net->hosts[net->num_hosts]) != 0) {
            ret = sim_net_fail(-EHOSTUNREACH,
                               "STRAND_SIM_HOSTS: '%s' is not "
                               "an IPv4 address or a name that resolves to "
                               "one",
                               tok);
            break;
        }
        net->num_hosts++;
    }
    free(copy);
    if ((ret == 0) && (net->num_hosts == 0)) {
        ret = sim_net_fail(-EINVAL,
                           "STRAND_SIM_FABRIC=udp:... needs "
                           "STRAND_SIM_HOSTS, the fabric's hosts in one "
                           "order on every host (addresses or names)%s",
                           "");
    }
    return ret;
}

/* the link rate of interface NAME (sysfs; veth and most NICs say it), 0
 * where it says none */
static unsigned sim_net_ifspeed(const char *name)
{
    char  path[64];
    FILE *f;
    int   mbit = 0;

    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", name);
    f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &mbit) != 1) {
            mbit = 0;
        }
        fclose(f);
    }
    return (mbit > 0) ? (unsigned)mbit : 0;
}

static unsigned sim_net_ifmtu(const char *name)
{
    struct ifreq req;
    int          fd, mtu = 0;

    memset(&req, 0, sizeof(req));
    snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", name);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if ((fd >= 0) && (ioctl(fd, SIOCGIFMTU, &req) == 0)) {
        mtu = req.ifr_mtu;
    }
    if (fd >= 0) {
        close(fd);
    }
    return (mtu > 0) ? (unsigned)mtu : 0;
}

/* Whether ADDR is an address of this machine's interfaces; with NET, the
 * MTU and rate of the interface that has it or, failing that, of the one
 * whose subnet holds it (127.0.0.2 is lo's without being listed on it);
 * unchanged when there is none. */
static bool sim_net_addr_is_local(uint32_t addr, sim_net_t *net)
{
    const struct sockaddr_in *a, *m;
    struct ifaddrs           *ifs, *i;
    unsigned                 *mtu = (net != NULL) ? &net->link_mtu : NULL;
    unsigned                  subnet_mtu = 0;
    bool                      found      = false;

    if (getifaddrs(&ifs) != 0) {
        return false;
    }
    for (i = ifs; (i != NULL) && !found; i = i->ifa_next) {
        if ((i->ifa_addr == NULL) || (i->ifa_addr->sa_family != AF_INET)) {
            continue;
        }
        a = (const struct sockaddr_in *)i->ifa_addr;
        m = (const struct sockaddr_in *)i->ifa_netmask;
        if (a->sin_addr.s_addr == addr) {
            found = true;
            if (mtu != NULL) {
                subnet_mtu     = sim_net_ifmtu(i->ifa_name);
                net->link_mbit = sim_net_ifspeed(i->ifa_name);
            }
        } else if ((mtu != NULL) && (subnet_mtu == 0) && (m != NULL) &&
                   (((a->sin_addr.s_addr ^ addr) & m->sin_addr.s_addr) == 0)) {
            subnet_mtu     = sim_net_ifmtu(i->ifa_name);
            net->link_mbit = sim_net_ifspeed(i->ifa_name);
        }
    }
    freeifaddrs(ifs);
    if ((mtu != NULL) && (subnet_mtu != 0)) {
        *mtu = subnet_mtu;
    }
    return found;
}

/* This host: STRAND_SIM_HOST names it, else the first host of the list
 * that is an address of one of this machine's interfaces. */
static int sim_net_find_self(sim_net_t *net)
{
    const char *env = getenv("STRAND_SIM_HOST");
    uint32_t    addr;
    unsigned    i;

    if ((env != NULL) && (*env != '\0')) {
        if (sim_net_resolve(env, &addr) != 0) {
            return sim_net_fail(-EHOSTUNREACH,
                                "STRAND_SIM_HOST='%s' does "
                                "not resolve to an IPv4 address",
                                env);
        }
        for (i = 0; i < net->num_hosts; ++i) {
            if (net->hosts[i] == addr) {
                net->self = i;
                sim_net_addr_is_local(addr, net);
                return 0;
            }
        }
        return sim_net_fail(-EINVAL,
                            "STRAND_SIM_HOST='%s' is not one of "
                            "STRAND_SIM_HOSTS",
                            env);
    }
    for (i = 0; i < net->num_hosts; ++i) {
        if (sim_net_addr_is_local(net->hosts[i], net)) {
            net->self = i;
            return 0;
        }
    }
    return sim_net_fail(-EADDRNOTAVAIL,
                        "none of STRAND_SIM_HOSTS='%s' is an "
                        "address of this host (set STRAND_SIM_HOST to say "
                        "which one it is)",
                        getenv("STRAND_SIM_HOSTS"));
}

/* FNV-1a: the same bytes give the same identity on every host */
static uint64_t sim_net_hash(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;

    while (len-- > 0) {
        h = (h ^ *p++) * 0x100000001b3ull;
    }
    return h;
}

static int sim_net_config(sim_net_t *net, const char *name)
{
    const char   *hosts = getenv("STRAND_SIM_HOSTS");
    const char   *port  = getenv("STRAND_SIM_UDP_PORT");
    unsigned long base  = SIM_NET_BASE_PORT;
    char         *end;
    int           ret;

    if ((*name == '\0') || (strlen(name) > 100) || strchr(name, '/')) {
        return sim_net_fail(-EINVAL,
                            "STRAND_SIM_FABRIC=udp:%s: the name "
                            "must be 1 to 100 characters without '/'",
                            name);
    }
    if ((port != NULL) && (*port != '\0')) {
        base = strtoul(port, &end, 0);
        if ((*end != '\0') || (base == 0) ||
            (base + SIM_FABRIC_MAX_PORTS > 65536)) {
            return sim_net_fail(-EINVAL,
                                "STRAND_SIM_UDP_PORT='%s' is not a "
                                "port from 1 to 65408 (a device takes the "
                                "port plus its slot, up to 127 more)",
                                port);
        }
    }
    net->base_port = (uint16_t)base;
    net->link_mtu  = 1500; /* where the interface cannot be asked */
    ret            = sim_net_parse_hosts(net, (hosts != NULL) ? hosts : "");
    if (ret == 0) {
        ret = sim_net_find_self(net);
    }
    if (ret != 0) {
        return ret;
    }
    snprintf(net->segment, sizeof(net->segment), "%s.%u", name, net->self);
    net->identity = sim_net_hash(0xcbf29ce484222325ull, name, strlen(name));
    net->identity = sim_net_hash(net->identity, net->hosts,
                                 net->num_hosts * sizeof(net->hosts[0]));
    net->identity = sim_net_hash(net->identity, &net->base_port,
                                 sizeof(net->base_port));
    if (net->identity == 0) {
        net->identity = 1;
    }
    return 0;
}

int sim_net_open(sim_net_t **net_p)
{
    const char *env = getenv("STRAND_SIM_FABRIC");
    sim_net_t  *net;
    int         ret;

    *net_p = NULL;
    if ((env == NULL) || strncmp(env, SIM_NET_PREFIX, strlen(SIM_NET_PREFIX))) {
        return 0;
    }
    net = calloc(1, sizeof(*net));
    if (net == NULL) {
        return -ENOMEM;
    }
    ret = sim_net_config(net, env + strlen(SIM_NET_PREFIX));
    if (ret != 0) {
        free(net);
        return ret;
    }
    *net_p = net;
    return 0;
}

void sim_net_close(sim_net_t *net)
{
    if (net != NULL) {
        sim_udp_close(net->rx);
        sim_udp_close(net->tx);
        free(net);
    }
}

const char *sim_net_segment(const sim_net_t *net)
{
    return net->segment;
}

unsigned sim_net_self(const sim_net_t *net)
{
    return net->self;
}

uint64_t sim_net_identity(const sim_net_t *net)
{
    return net->identity;
}

unsigned sim_net_num_hosts(const sim_net_t *net)
{
    return net->num_hosts;
}

unsigned sim_net_path_mtu(const sim_net_t *net)
{
    /* IPv4 and UDP headers, the wire's headers, pad and ICRC */
    const unsigned overhead = 20 + 8 + SIM_WIRE_OVERHEAD;
    unsigned       mtu;

    for (mtu = 4096; mtu > 256; mtu /= 2) {
        if (mtu + overhead <= net->link_mtu) {
            break;
        }
    }
    return mtu;
}

/* A kernel's UDP hop one way, in ns: half the fastest of a few hundred
 * round trips of a byte between two loopback sockets (the send and receive
 * paths a datagram between hosts takes, less the link); 0 when it cannot
 * be measured. */
static double sim_net_udp_hop_ns(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t          len;
    double             best = 0, t;
    struct timespec    t0, t1;
    int                fd[2] = {-1, -1}, i, ok = 1;
    struct sockaddr_in peer[2];
    struct timeval     tmo = {0, 100000};
    char               b   = 0;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (i = 0; ok && (i < 2); ++i) {
        len   = sizeof(peer[i]);
        fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ok    = (fd[i] >= 0) &&
             (bind(fd[i], (struct sockaddr *)&a, sizeof(a)) == 0) &&
             (getsockname(fd[i], (struct sockaddr *)&peer[i], &len) == 0) &&
             (setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) ==
              0);
    }
    for (i = 0; ok && (i < 200); ++i) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ok = (sendto(fd[0], &b, 1, 0, (struct sockaddr *)&peer[1],
                     sizeof(peer[1])) == 1) &&
             (recv(fd[1], &b, 1, 0) == 1) &&
             (sendto(fd[1], &b, 1, 0, (struct sockaddr *)&peer[0],
                     sizeof(peer[0])) == 1) &&
             (recv(fd[0], &b, 1, 0) == 1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        t = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
        if (ok && ((best == 0) || (t < best))) {
            best = t;
        }
    }
    for (i = 0; i < 2; ++i) {
        if (fd[i] >= 0) {
            close(fd[i]);
        }
    }
    return ok ? best / 2 : 0;
}

void sim_net_wire_perf(const sim_net_t *net, double *hop_ns, double *mbs)
{
    static double  hop; /* the host's, measured once (sim_perf's lock) */
    const unsigned mtu      = sim_net_path_mtu(net);
    const unsigned overhead = 20 + 8 + SIM_WIRE_OVERHEAD + 14; /* + Ethernet */
    const unsigned mbit     = (net->link_mbit > 0) ? net->link_mbit :
                                                     SIM_NET_DFLT_MBIT;

    if (hop == 0) {
        hop = sim_net_udp_hop_ns();
        if (hop == 0) {
            hop = SIM_NET_DFLT_HOP_NS;
        }
    }
    *hop_ns = hop;
    *mbs    = mbit / 8.0 * mtu / (mtu + overhead);
}

uint32_t sim_net_host_addr(const sim_net_t *net, unsigned host)
{
    return (host < net->num_hosts) ? net->hosts[host] : 0;
}

static void
sim_net_sockaddr(uint32_t addr, uint16_t port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family      = AF_INET;
    sa->sin_addr.s_addr = addr;
    sa->sin_port        = htons(port);
}

void sim_net_port_addr(const sim_net_t *net, unsigned slot,
                       struct sockaddr_in *addr)
{
    sim_net_sockaddr(net->hosts[net->self], net->base_port + slot, addr);
}

int sim_net_port_open(sim_net_t *net, unsigned slot)
{
    const sim_wire_id_t id = {.fabric = net->identity,
                              .pkey   = SIM_WIRE_PKEY_FULL};
    struct sockaddr_in  at;
    char                where[64];
    int                 ret;

    sim_net_port_addr(net, slot, &at);
    ret = sim_udp_open(&id, &at, SIM_UDP_EXCLUSIVE, &net->rx);
    if (ret != 0) {
        snprintf(where, sizeof(where), "%s:%u", inet_ntoa(at.sin_addr),
                 (unsigned)ntohs(at.sin_port));
        return sim_net_fail(ret,
                            "cannot bind the device's UDP port %s (in "
                            "use by another fabric or program? "
                            "STRAND_SIM_UDP_PORT moves the fabric's ports)",
                            where);
    }
    /* every device of the host sends from 4791, so that a capture names
     * its datagrams RoCEv2; where that port is taken (a kernel RoCE stack
     * binds it), from the device's own */
    sim_net_sockaddr(net->hosts[net->self], SIM_WIRE_UDP_PORT, &at);
    if (sim_udp_open(&id, &at, SIM_UDP_SHARED, &net->tx) != 0) {
        net->tx = NULL;
    }
    return 0;
}

int sim_net_fd(const sim_net_t *net)
{
    return sim_udp_fd(net->rx);
}

bool sim_net_is_remote(const sim_net_t *net, uint16_t lid)
{
    return sim_fabric_lid_host(lid) != net->self;
}

bool sim_net_reachable(const sim_net_t *net, uint16_t lid)
{
    return (lid != 0) && (sim_fabric_lid_host(lid) < net->num_hosts);
}

static sim_udp_t *sim_net_txsock(sim_net_t *net)
{
    return (net->tx != NULL) ? net->tx : net->rx;
}

int sim_net_send(sim_net_t *net, uint16_t dlid, const sim_pkt_t *pkt,
                 const void *payload)
{
    unsigned           host = sim_fabric_lid_host(dlid);
    struct sockaddr_in to;

    if (host >= net->num_hosts) {
        return -EHOSTUNREACH;
    }
    sim_net_sockaddr(net->hosts[host],
                     net->base_port + sim_fabric_lid_slot(dlid), &to);
    return sim_udp_send(sim_net_txsock(net), &to, pkt, payload);
}

void sim_net_batch_begin(sim_net_t *net)
{
    sim_udp_batch_begin(sim_net_txsock(net));
}

void sim_net_batch_end(sim_net_t *net)
{
    sim_udp_batch_end(sim_net_txsock(net));
}

unsigned
sim_net_recv(sim_net_t *net, sim_udp_rx_cb_t cb, void *arg, unsigned max)
{
    return sim_udp_recv(net->rx, cb, arg, max);
}

bool sim_net_readable(const sim_net_t *net)
{
    struct pollfd pfd = {.fd = sim_udp_fd(net->rx), .events = POLLIN};

    return poll(&pfd, 1, 0) > 0;
}

void sim_net_stats(const sim_net_t *net, sim_udp_stats_t *st)
{
    sim_udp_stats_t tx;

    sim_udp_stats(net->rx, st);
    if (net->tx != NULL) {
        /* sent from the host's socket, received on the device's own */
        sim_udp_stats(net->tx, &tx);
        st->tx += tx.tx;
        st->tx_busy += tx.tx_busy;
    }
}
