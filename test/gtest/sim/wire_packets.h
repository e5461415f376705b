/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets of every kind the software device sends, fields random, for the
 * tests of its wire (test_sim_wire.cc, test_sim_udp.cc).
 */
#ifndef STRAND_TEST_SIM_WIRE_PACKETS_H_
#define STRAND_TEST_SIM_WIRE_PACKETS_H_

#include <gtest/gtest.h>

extern "C" {
#include "sim/packet.h"
}

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

/* a packet and its payload */
struct datagram {
    sim_pkt_t            pkt;
    std::vector<uint8_t> payload;
};

/* every field of a packet, for messages and for comparing two */
static inline std::string show(const sim_pkt_t &p)
{
    char s[512];
    snprintf(s, sizeof(s),
             "op %u flags 0x%x x 0x%x aop %u slid %u len %u dqpn 0x%x sl %u "
             "sqpn 0x%x tc %u psn 0x%x imm 0x%x rkey 0x%x dma %u off %u "
             "asz %u mtu %u chan %u va 0x%llx key 0x%llx ops %llx %llx %llx "
             "%llx",
             p.op, p.flags, p.xflags, p.atomic_op, p.slid, p.payload_len,
             p.dqpn, p.sl, p.sqpn, p.tclass, p.psn, p.imm, p.rkey, p.dma_len,
             p.offset, p.atomic_size, p.log_mtu, p.chan,
             (unsigned long long)p.va, (unsigned long long)p.dc_key,
             (unsigned long long)p.swap_add, (unsigned long long)p.compare,
             (unsigned long long)p.swap_mask,
             (unsigned long long)p.compare_mask);
    return s;
}

class wire_packets_fixture : public testing::Test {
protected:
    std::mt19937_64 m_rng{20261202};

    /* a packet of kind OP with every field the kind carries random */
    datagram random_packet(uint8_t op, uint8_t flags, size_t len)
    {
        datagram g;
        memset(&g.pkt, 0, sizeof(g.pkt));
        sim_pkt_t &p  = g.pkt;
        p.op          = op;
        p.flags       = flags;
        p.slid        = (uint16_t)m_rng();
        p.dqpn        = m_rng() & 0xffffff;
        p.sl          = m_rng() & 0xf;
        p.sqpn        = m_rng() & 0xffffff;
        p.tclass      = (uint8_t)m_rng();
        p.psn         = (uint32_t)m_rng(); /* the device's PSNs are 32-bit */
        p.imm         = (uint32_t)m_rng();
        p.rkey        = (uint32_t)m_rng();
        p.dma_len     = (uint32_t)(len + (m_rng() % 3) * 4096);
        p.offset      = 0;
        p.log_mtu     = 8 + m_rng() % 5;
        p.chan        = m_rng() % 64;
        p.va          = m_rng();
        p.payload_len = (uint16_t)len;
        if (flags & SIM_PKT_F_DC) {
            p.dc_key = m_rng();
        }
        g.payload.resize(len);
        for (auto &b : g.payload) {
            b = (uint8_t)m_rng();
        }
        return g;
    }

    std::vector<datagram> every_kind()
    {
        std::vector<datagram> v;
        const uint8_t         dc = SIM_PKT_F_DC, ack = SIM_PKT_F_ACKREQ;
        for (size_t len : {0, 1, 2, 3, 4, 7, 64, 4096}) {
            for (uint8_t op :
                 {SIM_PKT_SEND_FIRST, SIM_PKT_SEND_MIDDLE, SIM_PKT_SEND_LAST,
                  SIM_PKT_SEND_ONLY, SIM_PKT_WRITE_FIRST, SIM_PKT_WRITE_MIDDLE,
                  SIM_PKT_WRITE_LAST, SIM_PKT_WRITE_ONLY}) {
                v.push_back(random_packet(op, 0, len));
                v.push_back(
                        random_packet(op, dc | ack | SIM_PKT_F_CONNECT, len));
                v.push_back(random_packet(op, SIM_PKT_F_RETRY | ack, len));
            }
            for (uint8_t op : {SIM_PKT_SEND_LAST, SIM_PKT_SEND_ONLY,
                               SIM_PKT_WRITE_LAST, SIM_PKT_WRITE_ONLY}) {
                v.push_back(
                        random_packet(op, SIM_PKT_F_IMM | SIM_PKT_F_SE, len));
                v.push_back(random_packet(op, SIM_PKT_F_IMM | dc, len));
            }
            for (uint8_t op : {SIM_PKT_SEND_LAST, SIM_PKT_SEND_ONLY}) {
                v.push_back(random_packet(op, SIM_PKT_F_INV, len));
            }
        }
        datagram r   = random_packet(SIM_PKT_READ_REQ, dc | ack, 0);
        r.pkt.xflags = SIM_PKT_X_ONECOPY;
        v.push_back(r);
        v.push_back(random_packet(SIM_PKT_READ_REQ, ack, 0));
        for (uint8_t aop = SIM_ATOMIC_CS; aop <= SIM_ATOMIC_MASKED_FA; ++aop) {
            for (uint8_t size : {4, 8}) {
                datagram a = random_packet(SIM_PKT_ATOMIC_REQ, ack | dc, 0);
                a.pkt.atomic_op    = aop;
                a.pkt.atomic_size  = size;
                a.pkt.swap_add     = m_rng();
                a.pkt.compare      = m_rng();
                a.pkt.swap_mask    = m_rng();
                a.pkt.compare_mask = m_rng();
                v.push_back(a);
            }
        }
        datagram ar     = random_packet(SIM_PKT_ATOMIC_RESP, 0, 0);
        ar.pkt.swap_add = m_rng();
        v.push_back(ar);
        for (uint8_t syn = SIM_AETH_ACK; syn <= SIM_AETH_NAK_OP; ++syn) {
            datagram a      = random_packet(SIM_PKT_ACK, 0, 0);
            a.pkt.syndrome  = syn;
            a.pkt.atomic_op = (syn == SIM_AETH_RNR_NAK) ? 14 : 0;
            v.push_back(a);
        }
        return v;
    }
};

#endif
