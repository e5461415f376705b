/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device on a fabric across hosts (src/sim/sim_net.c) takes only its
 * fabric's datagrams: another fabric's, another partition's, one with a
 * wrong ICRC, junk, a short and an oversized one sent to its UDP port are
 * dropped before any QP sees them and counted by reason in its counters
 * (smlx5_wire_stats), and the device goes on. The device runs in a child
 * process (one device per process), as host 0 of two loopback hosts.
 */
#include "sim_proc.h"
#include "wire_packets.h"

extern "C" {
#include "sim/sim_wire.h"
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace {

struct net_port {
    uint32_t ipv4;
    uint16_t port;
};

class sim_net_device : public wire_packets_fixture {
protected:
    void SetUp() override
    {
        sim_proc::use_fresh_fabric();
        std::string name = std::string("udp:") + getenv("STRAND_SIM_FABRIC");
        setenv("STRAND_SIM_FABRIC", name.c_str(), 1);
        setenv("STRAND_SIM_HOSTS", "127.0.0.1,127.0.0.2", 1);
        setenv("STRAND_SIM_HOST", "127.0.0.1", 1);
        setenv("STRAND_SIM_UDP_PORT",
               std::to_string(20000 + (getpid() % 300) * 128).c_str(), 1);
    }

    void TearDown() override
    {
        for (const char *v : {"STRAND_SIM_FABRIC", "STRAND_SIM_HOSTS",
                              "STRAND_SIM_HOST", "STRAND_SIM_UDP_PORT"}) {
            unsetenv(v);
        }
    }

    void send_to(const net_port &to, const void *buf, size_t len)
    {
        struct sockaddr_in a = {};
        a.sin_family         = AF_INET;
        a.sin_addr.s_addr    = to.ipv4;
        a.sin_port           = to.port;
        int fd               = socket(AF_INET, SOCK_DGRAM, 0);
        ASSERT_EQ((ssize_t)len,
                  sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)));
        close(fd);
    }
};

} // namespace

TEST_F(sim_net_device, what_is_not_the_fabrics_is_counted_and_never_handed_on)
{
    sim_proc child;
    child.start([](int fd) -> int {
        smlx5_context_t *ctx = smlx5_open_device(SMLX5_DEV_NAME);
        if (ctx == nullptr) {
            return 1;
        }
        net_port me;
        memset(&me, 0, sizeof(me)); /* its padding too: it goes to a pipe */
        if (smlx5_wire_addr(ctx, &me.ipv4, &me.port) != 0) {
            return 2;
        }
        if (write(fd, &me, sizeof(me)) != sizeof(me)) {
            return 3;
        }
        char go;
        if (read(fd, &go, 1) != 1) {
            return 4;
        }
        /* the device takes them in (its thread, or this poll) */
        smlx5_wire_stats_t st = {};
        for (int i = 0; i < 2000; ++i) {
            smlx5_progress(ctx);
            smlx5_wire_stats(ctx, &st);
            uint64_t n = 0;
            for (unsigned r = 0; r < SMLX5_WIRE_DROP_REASONS; ++r) {
                n += st.drops[r];
            }
            if (n >= 7) {
                break;
            }
            usleep(1000);
        }
        if (write(fd, &st, sizeof(st)) != sizeof(st)) {
            return 5;
        }
        smlx5_close_device(ctx);
        return 0;
    });
    net_port dev;
    ASSERT_EQ((ssize_t)sizeof(dev), read(child.fd(), &dev, sizeof(dev)))
            << "the device did not open on a fabric across hosts";

    uint8_t  buf[SIM_WIRE_MAX_HDR + 4096 + 16];
    datagram g = random_packet(SIM_PKT_SEND_ONLY, SIM_PKT_F_DC, 64);
    /* another fabric (its identity, the partition right) */
    sim_wire_id_t other = {0x0123456789abcdefull, SIM_WIRE_PKEY_FULL};
    size_t        n     = sim_wire_encode(&other, &g.pkt, g.payload.data(), buf,
                                          sizeof(buf));
    ASSERT_GT(n, 0u);
    send_to(dev, buf, n);
    /* another partition */
    sim_wire_id_t part = {0x0123456789abcdefull, 0x8001};
    n = sim_wire_encode(&part, &g.pkt, g.payload.data(), buf, sizeof(buf));
    send_to(dev, buf, n);
    /* a wrong ICRC */
    n = sim_wire_encode(&other, &g.pkt, g.payload.data(), buf, sizeof(buf));
    buf[n - 1] ^= 0x5a;
    send_to(dev, buf, n);
    /* junk of the partition, short, oversized; an empty one (a wake) */
    std::vector<uint8_t> junk(300);
    for (auto &b : junk) {
        b = (uint8_t)m_rng();
    }
    junk[0] = SIM_WIRE_OP_SEND_ONLY;
    junk[1] = 0x00;
    junk[2] = junk[3] = 0xff;
    send_to(dev, junk.data(), junk.size());
    send_to(dev, junk.data(), 5);
    std::vector<uint8_t> big(9000, 0x11);
    send_to(dev, big.data(), big.size());
    send_to(dev, big.data(), 0);
    /* the ICRC is checked last: a datagram of another fabric with a bad
     * one is "fabric"; one more of this kind with the right partition and
     * no extension */
    junk[12] = 'X';
    send_to(dev, junk.data(), 100);

    ASSERT_EQ(1, write(child.fd(), "g", 1));
    smlx5_wire_stats_t st;
    ASSERT_EQ((ssize_t)sizeof(st), read(child.fd(), &st, sizeof(st)));
    EXPECT_EQ(0, child.join()) << "the device survived and closed";

    EXPECT_EQ(0u, st.rx) << "a datagram reached the device's QPs";
    EXPECT_EQ(2u, st.drops[SIM_WIRE_DROP_FABRIC]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_PKEY]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_SHORT]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_LENGTH]);
    EXPECT_EQ(2u, st.drops[SIM_WIRE_DROP_EXT]);
    EXPECT_EQ(0u, st.drops[SIM_WIRE_OK]) << "the wake is not a drop";
    for (unsigned r = 0; r < SMLX5_WIRE_DROP_REASONS; ++r) {
        EXPECT_STREQ(sim_wire_drop_name((sim_wire_drop_t)r),
                     smlx5_wire_drop_name(r));
    }
}

TEST_F(sim_net_device, a_host_list_without_this_host_opens_no_device)
{
    setenv("STRAND_SIM_HOSTS", "198.51.100.7,203.0.113.7", 1);
    unsetenv("STRAND_SIM_HOST");
    sim_proc child;
    child.start([](int) -> int {
        smlx5_context_t *ctx = smlx5_open_device(SMLX5_DEV_NAME);
        if (ctx != nullptr) {
            return 1;
        }
        return (errno == EADDRNOTAVAIL) ? 0 : 2;
    });
    EXPECT_EQ(0, child.join());
}

/* Across hosts the device's estimate carries the wire: a UDP hop more of
 * latency than the same device on one host, and no more bandwidth than the
 * link (loopback says no rate: 10 Gbit/s less the datagram's headers), so
 * that UCP keeps shared memory inside a node. */
TEST_F(sim_net_device, the_estimate_across_hosts_carries_the_wire)
{
    sim_proc child;
    child.start([](int) -> int {
        smlx5_context_t *ctx = smlx5_open_device(SMLX5_DEV_NAME);
        smlx5_perf_t     wire;
        if (ctx == nullptr) {
            return 1;
        }
        /* measured or, on a loaded host, the fixed figures: either way
         * with the wire added */
        if ((smlx5_query_perf(ctx, &wire) != 0) ||
            (wire.source == SMLX5_PERF_OVERRIDE)) {
            return 2;
        }
        smlx5_close_device(ctx);
        if (!(wire.latency_ns > 1000)) {
            return 3; /* the device alone is ~50 ns; a kernel UDP hop, us */
        }
        return (wire.bw_mbs <= 1250.0) ? 0 : 4;
    });
    EXPECT_EQ(0, child.join());
}
