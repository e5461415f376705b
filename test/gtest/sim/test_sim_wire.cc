/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software device's packets as RoCEv2 datagrams (src/sim/sim_wire.c,
 * docs/software-device.md "The wire"): every kind of packet the device
 * sends comes back field for field; the bytes are the IBTA's where the
 * IBTA defines them (BTH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
 * IETH); a datagram of another fabric or partition, of another version, a
 * malformed, truncated or damaged one, or random bytes are dropped with
 * their reason and never read past their end (each datagram sits in a
 * buffer of exactly its size: AddressSanitizer sees any overread).
 */
#include "wire_packets.h"

extern "C" {
#include "sim/sim_crc.h"
#include "sim/sim_wire.h"
}

#include <endian.h>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

const sim_wire_id_t fabric_a = {0x5eed0000a11ce001ull, SIM_WIRE_PKEY_FULL};

typedef std::vector<uint8_t> bytes_t;

uint32_t be32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return be32toh(v);
}

uint64_t be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return be64toh(v);
}

/* the ICRC as docs/software-device.md gives it: CRC-32 over the datagram
 * before it, with BTH byte 4 (FECN, BECN) taken as 0xff */
void reseal(bytes_t &d)
{
    bytes_t copy(d.begin(), d.end() - 4);
    copy[4]      = 0xff;
    uint32_t crc = sim_crc32_final(
            sim_crc32_update(~0u, copy.data(), copy.size()));
    crc = htobe32(crc);
    memcpy(&d[d.size() - 4], &crc, 4);
}

bytes_t encode(const datagram &g, const sim_wire_id_t &id = fabric_a)
{
    bytes_t buf(g.payload.size() + SIM_WIRE_OVERHEAD);
    size_t  n = sim_wire_encode(&id, &g.pkt, g.payload.data(), buf.data(),
                                buf.size());
    EXPECT_GT(n, 0u);
    buf.resize(n);
    return buf;
}

/* decode from a heap buffer of exactly the datagram's size */
sim_wire_drop_t decode(const bytes_t &d, sim_pkt_t *pkt, bytes_t *payload,
                       const sim_wire_id_t &id = fabric_a)
{
    std::unique_ptr<uint8_t[]> exact(new uint8_t[d.size() ? d.size() : 1]);
    if (!d.empty()) {
        memcpy(exact.get(), d.data(), d.size());
    }
    const uint8_t  *p   = nullptr;
    sim_wire_drop_t why = sim_wire_decode(&id, exact.get(), d.size(), pkt, &p);
    if ((why == SIM_WIRE_OK) && (payload != nullptr)) {
        payload->assign(p, p + pkt->payload_len);
    }
    return why;
}

class sim_wire : public wire_packets_fixture {
protected:
    void expect_round_trip(const datagram &g, uint8_t opcode)
    {
        bytes_t d = encode(g);
        ASSERT_FALSE(d.empty());
        EXPECT_EQ(opcode, d[0]) << show(g.pkt);
        EXPECT_EQ(0u, d.size() % 4) << "a datagram is whole 32-bit words";
        sim_pkt_t got;
        bytes_t   payload;
        ASSERT_EQ(SIM_WIRE_OK, decode(d, &got, &payload))
                << sim_wire_drop_name(decode(d, &got, nullptr)) << " "
                << show(g.pkt);
        EXPECT_EQ(show(g.pkt), show(got));
        EXPECT_EQ(g.payload, payload);
    }
};

/* a READ response of LEN bytes at OFF of a READ of DMA_LEN */
datagram read_resp(uint32_t off, uint16_t len, uint32_t dma_len)
{
    datagram g;
    memset(&g.pkt, 0, sizeof(g.pkt));
    g.pkt.op          = SIM_PKT_READ_RESP;
    g.pkt.offset      = off;
    g.pkt.payload_len = len;
    g.pkt.dma_len     = dma_len;
    g.pkt.log_mtu     = 10;
    g.pkt.psn         = 77 + off / 1024;
    g.pkt.dqpn        = 0x1234;
    g.payload.assign(len, 0xab);
    return g;
}

} // namespace

TEST_F(sim_wire, every_kind_of_packet_comes_back_field_for_field)
{
    unsigned n = 0;
    for (const datagram &g : every_kind()) {
        SCOPED_TRACE(show(g.pkt));
        expect_round_trip(g, sim_wire_opcode(&g.pkt));
        ++n;
    }
    EXPECT_GT(n, 250u);
}

TEST_F(sim_wire, read_responses_are_first_middle_last_or_only)
{
    expect_round_trip(read_resp(0, 1024, 3000), SIM_WIRE_OP_READ_RESP_FIRST);
    expect_round_trip(read_resp(1024, 1024, 3000), SIM_WIRE_OP_READ_RESP_MID);
    expect_round_trip(read_resp(2048, 952, 3000), SIM_WIRE_OP_READ_RESP_LAST);
    expect_round_trip(read_resp(0, 300, 300), SIM_WIRE_OP_READ_RESP_ONLY);
    expect_round_trip(read_resp(0, 0, 0), SIM_WIRE_OP_READ_RESP_ONLY);
    datagram one   = read_resp(0, 0, 1 << 20);
    one.pkt.xflags = SIM_PKT_X_ONECOPY; /* one response, whatever the size */
    expect_round_trip(one, SIM_WIRE_OP_READ_RESP_ONLY);
}

/* The bytes a capture tool reads, field by field (IBA 9.2, 9.3) */
TEST_F(sim_wire, the_ibta_headers_are_where_the_ibta_puts_them)
{
    datagram g       = random_packet(SIM_PKT_WRITE_ONLY,
                                     SIM_PKT_F_IMM | SIM_PKT_F_SE | SIM_PKT_F_ACKREQ |
                                             SIM_PKT_F_DC,
                                     5);
    g.pkt.dqpn       = 0xabcdef;
    g.pkt.psn        = 0x12345678;
    g.pkt.imm        = htobe32(0xfeedf00d);
    sim_wire_id_t id = {fabric_a.fabric, 0x8123};
    bytes_t       d  = encode(g, id);

    /* BTH */
    EXPECT_EQ(SIM_WIRE_OP_WRITE_ONLY_IMM, d[0]);
    EXPECT_EQ(0x80 | (3 << 4), d[1]) << "SE, pad count 3, TVer 0";
    EXPECT_EQ(0x81, d[2]);
    EXPECT_EQ(0x23, d[3]);
    EXPECT_EQ(0x00abcdefu, be32(&d[4])) << "FECN/BECN 0, destination QP";
    EXPECT_EQ(0x80345678u, be32(&d[8])) << "AckReq, PSN's low 24 bits";
    /* RETH */
    EXPECT_EQ(g.pkt.va, be64(&d[12]));
    EXPECT_EQ(g.pkt.rkey, be32(&d[20]));
    EXPECT_EQ(g.pkt.dma_len, be32(&d[24]));
    /* ImmDt */
    EXPECT_EQ(0xfeedf00du, be32(&d[28]));
    /* the strand extension after them, then the payload, pad and ICRC */
    EXPECT_EQ(0, memcmp(&d[32], "STR\x01", 4));
    EXPECT_EQ(fabric_a.fabric, be64(&d[36]));
    size_t hdr = 32 + SIM_WIRE_EXT_LEN + SIM_WIRE_EXT_DC_LEN;
    EXPECT_EQ(g.pkt.dc_key, be64(&d[32 + SIM_WIRE_EXT_LEN]));
    ASSERT_EQ(hdr + 5 + 3 + 4, d.size());
    EXPECT_EQ(0, memcmp(&d[hdr], g.payload.data(), 5));
    bytes_t sealed = d;
    reseal(sealed);
    EXPECT_EQ(sealed, d) << "the ICRC is the documented CRC-32";
}

TEST_F(sim_wire, atomics_and_acknowledgements_carry_their_ibta_headers)
{
    datagram a        = random_packet(SIM_PKT_ATOMIC_REQ, SIM_PKT_F_ACKREQ, 0);
    a.pkt.atomic_op   = SIM_ATOMIC_CS;
    a.pkt.atomic_size = 8;
    a.pkt.swap_add    = 0x1111222233334444ull;
    a.pkt.compare     = 0x5555666677778888ull;
    bytes_t d         = encode(a);
    EXPECT_EQ(SIM_WIRE_OP_CMP_SWAP, d[0]);
    EXPECT_EQ(a.pkt.va, be64(&d[12]));
    EXPECT_EQ(a.pkt.rkey, be32(&d[20]));
    EXPECT_EQ(a.pkt.swap_add, be64(&d[24])) << "AtomicETH swap data";
    EXPECT_EQ(a.pkt.compare, be64(&d[32])) << "AtomicETH compare data";

    a.pkt.atomic_op = SIM_ATOMIC_MASKED_FA;
    EXPECT_EQ(SIM_WIRE_OP_FETCH_ADD, encode(a)[0]);

    datagram r     = random_packet(SIM_PKT_ATOMIC_RESP, 0, 0);
    r.pkt.psn      = 0x00abcdef;
    r.pkt.swap_add = 0x0102030405060708ull;
    d              = encode(r);
    EXPECT_EQ(SIM_WIRE_OP_ATOMIC_ACK, d[0]);
    EXPECT_EQ(0x1fabcdefu, be32(&d[12])) << "AETH: ACK, MSN = the PSN";
    EXPECT_EQ(r.pkt.swap_add, be64(&d[16])) << "AtomicAckETH";

    /* AETH syndromes: ACK, RNR NAK with its timer, the NAK codes */
    const struct {
        uint8_t syn, timer, aeth;
    } acks[] = {{SIM_AETH_ACK, 0, 0x1f},
                {SIM_AETH_RNR_NAK, 14, 0x2e},
                {SIM_AETH_NAK_PSN_SEQ, 0, 0x60},
                {SIM_AETH_NAK_INV_REQ, 0, 0x61},
                {SIM_AETH_NAK_ACCESS, 0, 0x62},
                {SIM_AETH_NAK_OP, 0, 0x63}};
    for (const auto &k : acks) {
        datagram ack      = random_packet(SIM_PKT_ACK, 0, 0);
        ack.pkt.syndrome  = k.syn;
        ack.pkt.atomic_op = k.timer;
        d                 = encode(ack);
        EXPECT_EQ(SIM_WIRE_OP_ACK, d[0]);
        EXPECT_EQ(k.aeth, d[12]) << "syndrome " << unsigned(k.syn);
    }
}

TEST_F(sim_wire, another_fabric_or_partition_is_dropped_with_its_reason)
{
    datagram  g = random_packet(SIM_PKT_SEND_ONLY, SIM_PKT_F_DC, 40);
    bytes_t   d = encode(g);
    sim_pkt_t got;

    sim_wire_id_t other_fabric = {fabric_a.fabric ^ 1, fabric_a.pkey};
    EXPECT_EQ(SIM_WIRE_DROP_FABRIC, decode(d, &got, nullptr, other_fabric));
    sim_wire_id_t other_pkey = {fabric_a.fabric, 0x7fff};
    EXPECT_EQ(SIM_WIRE_DROP_PKEY, decode(d, &got, nullptr, other_pkey));
    EXPECT_EQ(SIM_WIRE_OK, decode(d, &got, nullptr));
    EXPECT_STREQ("fabric", sim_wire_drop_name(SIM_WIRE_DROP_FABRIC));
}

/* each defect alone (the ICRC resealed, so that it is not what catches
 * it), and the reason named */
TEST_F(sim_wire, malformed_datagrams_are_dropped_with_their_reason)
{
    datagram      g = random_packet(SIM_PKT_WRITE_FIRST, SIM_PKT_F_ACKREQ, 16);
    const bytes_t good = encode(g);
    sim_pkt_t     got;
    const size_t  ext = 12 + SIM_WIRE_RETH_LEN;
    const struct {
        const char                    *what;
        std::function<void(bytes_t &)> damage;
        sim_wire_drop_t                why;
    } cases[] = {
            {"transport version 1", [](bytes_t &d) { d[1] |= 1; },
             SIM_WIRE_DROP_VERSION},
            {"a UD opcode", [](bytes_t &d) { d[0] = 0x64; },
             SIM_WIRE_DROP_OPCODE},
            {"an opcode the device never sends (RC resync)",
             [](bytes_t &d) { d[0] = 0x15; }, SIM_WIRE_DROP_OPCODE},
            {"no strand extension", [ext](bytes_t &d) { d[ext] = 'X'; },
             SIM_WIRE_DROP_EXT},
            {"a later extension version", [ext](bytes_t &d) { d[ext + 3] = 2; },
             SIM_WIRE_DROP_VERSION},
            {"RETH's address differs from the extension's",
             [](bytes_t &d) { d[12] ^= 0x40; }, SIM_WIRE_DROP_HEADERS},
            {"RETH's length differs", [](bytes_t &d) { d[27] ^= 1; },
             SIM_WIRE_DROP_HEADERS},
            {"WRITE_MIDDLE (no RETH): the extension is not where it must be",
             [](bytes_t &d) { d[0] = SIM_WIRE_OP_WRITE_MIDDLE; },
             SIM_WIRE_DROP_EXT},
            {"SEND_FIRST: no RETH either", [](bytes_t &d) { d[0] = 0; },
             SIM_WIRE_DROP_EXT},
            {"AckReq in the BTH, not in the extension",
             [](bytes_t &d) { d[8] &= 0x7f; }, SIM_WIRE_DROP_HEADERS},
            {"an unknown flag", [ext](bytes_t &d) { d[ext + 21] |= 0x80; },
             SIM_WIRE_DROP_HEADERS},
            {"a path MTU above 4096", [ext](bytes_t &d) { d[ext + 25] = 13; },
             SIM_WIRE_DROP_HEADERS},
            {"payload length one more than the datagram has",
             [ext](bytes_t &d) { d[ext + 45] += 1; }, SIM_WIRE_DROP_LENGTH},
            {"pad count wrong", [](bytes_t &d) { d[1] |= 0x10; },
             SIM_WIRE_DROP_LENGTH},
    };
    for (const auto &c : cases) {
        bytes_t d = good;
        c.damage(d);
        reseal(d);
        EXPECT_EQ(c.why, decode(d, &got, nullptr))
                << c.what << ": "
                << sim_wire_drop_name(decode(d, &got, nullptr));
    }
    bytes_t d = good;
    d[d.size() - 1] ^= 1;
    EXPECT_EQ(SIM_WIRE_DROP_ICRC, decode(d, &got, nullptr));
}

TEST_F(sim_wire, an_atomic_of_another_size_or_kind_is_malformed)
{
    datagram a         = random_packet(SIM_PKT_ATOMIC_REQ, SIM_PKT_F_ACKREQ, 0);
    a.pkt.atomic_op    = SIM_ATOMIC_FA;
    a.pkt.atomic_size  = 8;
    const size_t asize = 12 + SIM_WIRE_ATOMICETH_LEN + 24;
    sim_pkt_t    got;
    for (uint8_t size : {0, 1, 2, 16}) {
        bytes_t d = encode(a);
        d[asize]  = size;
        reseal(d);
        EXPECT_EQ(SIM_WIRE_DROP_HEADERS, decode(d, &got, nullptr)) << size;
    }
    bytes_t d    = encode(a);
    d[asize - 1] = SIM_ATOMIC_CS; /* the extension says compare-and-swap */
    reseal(d);
    EXPECT_EQ(SIM_WIRE_DROP_HEADERS, decode(d, &got, nullptr));
}

/* every prefix of a datagram, and every single bit flipped */
TEST_F(sim_wire, truncated_and_damaged_datagrams_never_pass)
{
    for (const datagram &g : every_kind()) {
        if (g.payload.size() > 64) {
            continue;
        }
        const bytes_t d = encode(g);
        sim_pkt_t     got;
        for (size_t n = 0; n < d.size(); ++n) {
            bytes_t cut(d.begin(), d.begin() + n);
            ASSERT_NE(SIM_WIRE_OK, decode(cut, &got, nullptr))
                    << n << " of " << d.size() << " bytes: " << show(g.pkt);
        }
        for (size_t bit = 0; bit < d.size() * 8; ++bit) {
            bytes_t flipped = d;
            flipped[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            if (bit / 8 == 4) {
                /* BTH byte 4: FECN, BECN (a switch may set them) and
                 * reserved bits: outside the ICRC, ignored */
                continue;
            }
            ASSERT_NE(SIM_WIRE_OK, decode(flipped, &got, nullptr))
                    << "bit " << bit << ": " << show(g.pkt);
        }
    }
}

TEST_F(sim_wire, random_bytes_never_pass_and_never_crash)
{
    unsigned  reasons[SIM_WIRE_DROP_MAX] = {};
    bytes_t   d;
    sim_pkt_t got;
    for (int i = 0; i < 200000; ++i) {
        d.resize(m_rng() % 300);
        for (auto &b : d) {
            b = (uint8_t)m_rng();
        }
        if ((i & 1) && (d.size() > 16)) {
            /* half of them look like a BTH of an opcode the device sends */
            d[0] = m_rng() % 0x15;
            d[1] &= 0xf0;
            d[2] = d[3] = 0xff;
        }
        sim_wire_drop_t why = decode(d, &got, nullptr);
        ASSERT_NE(SIM_WIRE_OK, why);
        ASSERT_LT((unsigned)why, (unsigned)SIM_WIRE_DROP_MAX);
        ++reasons[why];
    }
    EXPECT_GT(reasons[SIM_WIRE_DROP_SHORT], 0u);
    EXPECT_GT(reasons[SIM_WIRE_DROP_OPCODE], 0u);
    EXPECT_GT(reasons[SIM_WIRE_DROP_EXT], 0u);
}

TEST_F(sim_wire, a_buffer_too_small_is_refused)
{
    datagram g    = random_packet(SIM_PKT_SEND_ONLY, 0, 100);
    size_t   need = encode(g).size();
    bytes_t  buf(need - 1);
    EXPECT_EQ(0u, sim_wire_encode(&fabric_a, &g.pkt, g.payload.data(),
                                  buf.data(), buf.size()));
    buf.resize(need);
    EXPECT_EQ(need, sim_wire_encode(&fabric_a, &g.pkt, g.payload.data(),
                                    buf.data(), buf.size()));
}
