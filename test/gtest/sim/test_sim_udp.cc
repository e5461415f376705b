/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire's UDP socket (src/sim/sim_udp.c) on this machine's loopback:
 * every kind of packet crosses as a datagram and arrives field for field;
 * a datagram of another fabric, random bytes, a truncated or oversized one
 * never reaches the receiver's callback and is counted under its reason;
 * processes of one host can share port 4791 (SO_REUSEPORT) and only it:
 * a device's own port is its alone; an empty datagram (a wake) is skipped
 * without a count.
 */
#include "wire_packets.h"

extern "C" {
#include "sim/sim_udp.h"
}

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

const sim_wire_id_t fabric_a = {0x0a0b0c0d01020304ull, SIM_WIRE_PKEY_FULL};
const sim_wire_id_t fabric_b = {0x0a0b0c0d01020305ull, SIM_WIRE_PKEY_FULL};

struct received {
    std::vector<std::string>          pkts;
    std::vector<std::vector<uint8_t>> payloads;
};

void on_packet(void *arg, const sim_pkt_t *pkt, const void *payload)
{
    auto *r = static_cast<received *>(arg);
    r->pkts.push_back(show(*pkt));
    const uint8_t *p = static_cast<const uint8_t *>(payload);
    r->payloads.emplace_back(p, p + pkt->payload_len);
}

struct sockaddr_in loopback(uint16_t port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family      = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port        = htons(port);
    return a;
}

class sim_udp_socket : public wire_packets_fixture {
protected:
    void SetUp() override
    {
        struct sockaddr_in any = loopback(0);
        ASSERT_EQ(0, sim_udp_open(&fabric_a, &any, SIM_UDP_EXCLUSIVE, &m_a));
        ASSERT_EQ(0, sim_udp_open(&fabric_a, &any, SIM_UDP_SHARED, &m_b));
        sim_udp_addr(m_b, &m_b_addr);
        ASSERT_NE(0, m_b_addr.sin_port);
    }

    void TearDown() override
    {
        sim_udp_close(m_a);
        sim_udp_close(m_b);
    }

    /* B's datagrams until N were read (each handed on or dropped), or 2 s */
    void receive(unsigned n)
    {
        unsigned got = 0;
        for (int i = 0; (got < n) && (i < 200); ++i) {
            struct pollfd p = {sim_udp_fd(m_b), POLLIN, 0};
            poll(&p, 1, 10);
            got += sim_udp_recv(m_b, on_packet, &m_rx, n - got);
        }
        EXPECT_EQ(n, got) << "datagrams read";
    }

    /* bytes to B from a plain socket */
    void send_raw(const std::vector<uint8_t> &bytes)
    {
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        ASSERT_GE(fd, 0);
        ASSERT_EQ((ssize_t)bytes.size(),
                  sendto(fd, bytes.data(), bytes.size(), 0,
                         (const struct sockaddr *)&m_b_addr, sizeof(m_b_addr)));
        close(fd);
    }

    sim_udp_stats_t stats(sim_udp_t *u)
    {
        sim_udp_stats_t st;
        sim_udp_stats(u, &st);
        return st;
    }

    sim_udp_t         *m_a = nullptr, *m_b = nullptr;
    struct sockaddr_in m_b_addr;
    received           m_rx;
};

} // namespace

TEST_F(sim_udp_socket, every_kind_of_packet_crosses_field_for_field)
{
    std::vector<datagram> sent = every_kind();
    size_t                i    = 0;
    /* in batches the socket buffers hold */
    while (i < sent.size()) {
        size_t batch = std::min<size_t>(32, sent.size() - i);
        for (size_t k = 0; k < batch; ++k) {
            ASSERT_EQ(0, sim_udp_send(m_a, &m_b_addr, &sent[i + k].pkt,
                                      sent[i + k].payload.data()));
        }
        receive((unsigned)batch);
        i += batch;
    }
    ASSERT_EQ(sent.size(), m_rx.pkts.size());
    for (i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(show(sent[i].pkt), m_rx.pkts[i]);
        EXPECT_EQ(sent[i].payload, m_rx.payloads[i]) << m_rx.pkts[i];
    }
    EXPECT_EQ(sent.size(), stats(m_a).tx);
    EXPECT_EQ(sent.size(), stats(m_b).rx);
}

TEST_F(sim_udp_socket, what_is_not_the_fabrics_is_counted_and_never_handed_on)
{
    struct sockaddr_in any = loopback(0);
    sim_udp_t         *other;
    ASSERT_EQ(0, sim_udp_open(&fabric_b, &any, SIM_UDP_EXCLUSIVE, &other));
    datagram g = random_packet(SIM_PKT_SEND_ONLY, SIM_PKT_F_DC, 100);
    ASSERT_EQ(0, sim_udp_send(other, &m_b_addr, &g.pkt, g.payload.data()));
    sim_udp_close(other);

    std::vector<uint8_t> junk(200);
    for (auto &b : junk) {
        b = (uint8_t)m_rng();
    }
    junk[1] = 0x00;                  /* TVer 0 */
    junk[0] = SIM_WIRE_OP_SEND_ONLY; /* a BTH ... */
    junk[2] = junk[3] = 0xff;        /* ... of this partition */
    send_raw(junk);
    send_raw(std::vector<uint8_t>(5, 0));       /* shorter than a BTH */
    send_raw(std::vector<uint8_t>(9000, 0x11)); /* larger than any */
    receive(4);
    EXPECT_TRUE(m_rx.pkts.empty());
    sim_udp_stats_t st = stats(m_b);
    EXPECT_EQ(0u, st.rx);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_FABRIC]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_EXT]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_SHORT]);
    EXPECT_EQ(1u, st.drops[SIM_WIRE_DROP_LENGTH]);

    /* and the socket still takes the fabric's own */
    ASSERT_EQ(0, sim_udp_send(m_a, &m_b_addr, &g.pkt, g.payload.data()));
    receive(1);
    ASSERT_EQ(1u, m_rx.pkts.size());
    EXPECT_EQ(show(g.pkt), m_rx.pkts[0]);
}

TEST_F(sim_udp_socket, processes_of_a_host_share_port_4791)
{
    /* (on loopback and a port of its own: 4791 itself may be taken by a
     * real RoCE stack or another test) */
    struct sockaddr_in at = m_b_addr;
    sim_udp_t         *second;
    EXPECT_EQ(0, sim_udp_open(&fabric_a, &at, SIM_UDP_SHARED, &second))
            << "a second socket on " << ntohs(at.sin_port);
    sim_udp_close(second);
}

TEST_F(sim_udp_socket, a_devices_own_port_is_its_alone)
{
    /* m_a was opened exclusive: a second socket on its address would
     * take half of its datagrams (the kernel spreads a shared port's) */
    struct sockaddr_in at;
    sim_udp_addr(m_a, &at);
    sim_udp_t *second = nullptr;
    EXPECT_EQ(-EADDRINUSE,
              sim_udp_open(&fabric_a, &at, SIM_UDP_SHARED, &second));
    EXPECT_EQ(-EADDRINUSE,
              sim_udp_open(&fabric_a, &at, SIM_UDP_EXCLUSIVE, &second));
}

TEST_F(sim_udp_socket, an_empty_datagram_is_a_wake_not_a_drop)
{
    send_raw(std::vector<uint8_t>());
    datagram g = random_packet(SIM_PKT_SEND_ONLY, 0, 8);
    ASSERT_EQ(0, sim_udp_send(m_a, &m_b_addr, &g.pkt, g.payload.data()));
    receive(2); /* two datagrams read, one packet handed on */
    ASSERT_EQ(1u, m_rx.pkts.size());
    EXPECT_EQ(show(g.pkt), m_rx.pkts[0]);
    sim_udp_stats_t st = stats(m_b);
    EXPECT_EQ(1u, st.rx);
    for (unsigned why = 0; why < SIM_WIRE_DROP_MAX; ++why) {
        EXPECT_EQ(0u, st.drops[why])
                << sim_wire_drop_name((sim_wire_drop_t)why);
    }
}

TEST_F(sim_udp_socket, a_packet_the_wire_cannot_carry_is_refused)
{
    datagram g = random_packet(SIM_PKT_SEND_ONLY, 0, 0);
    g.pkt.op   = 0; /* no such packet */
    EXPECT_EQ(-EMSGSIZE, sim_udp_send(m_a, &m_b_addr, &g.pkt, nullptr));
    EXPECT_EQ(0u, stats(m_a).tx);
}
