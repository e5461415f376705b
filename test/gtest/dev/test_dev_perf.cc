/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hardware estimates (strand_dev_perf_from_port) from a table of port
 * attributes: IBTA lane rates and encodings, widths, MTUs, InfiniBand and
 * RoCE; unknown values give the slowest link and say so.
 */
#include <gtest/gtest.h>

extern "C" {
#include "dev/dev.h"
}

#include <cmath>
#include <cstring>
#include <string>

namespace {

struct port_case {
    uint8_t  speed, width;
    int      mtu; /* enum ibv_mtu, or a value outside it: an
                     int, so that C++ never loads an enum
                     holding no enumerator (UBSan) */
    uint8_t  link_layer;
    double   gbit_wire; /* payload bits per second of the link, 1e9 */
    unsigned mtu_bytes, hdr_bytes;
    double   latency_ns;
    strand_dev_perf_source_t source;
    const char              *what; /* a part of perf.what */
};

const uint8_t IB  = IBV_LINK_LAYER_INFINIBAND;
const uint8_t ETH = IBV_LINK_LAYER_ETHERNET;
/* BTH 12, DCETH 8, RETH 16, ICRC 4, VCRC 2, delimiter 2; + LRH 8 on
 * InfiniBand, + GRH 40 and Ethernet 14 on RoCE */
const unsigned HDR_IB  = 52;
const unsigned HDR_ETH = 98;
const double   ENC66   = 64.0 / 66.0;

const port_case cases[] = {
        /* speed, width, MTU, link, Gb/s, MTU, hdr, latency (+60 DC, +200 RoCE) */
        {1, 1, IBV_MTU_2048, IB, 2.5 * 0.8, 2048, HDR_IB, 5060,
         STRAND_DEV_PERF_PORT, "SDR 1x InfiniBand, MTU 2048"},
        {2, 2, IBV_MTU_2048, IB, 4 * 5.0 * 0.8, 2048, HDR_IB, 2560,
         STRAND_DEV_PERF_PORT, "DDR 4x"},
        {4, 2, IBV_MTU_4096, IB, 4 * 10.0 * 0.8, 4096, HDR_IB, 1360,
         STRAND_DEV_PERF_PORT, "QDR 4x"},
        {4, 2, IBV_MTU_1024, ETH, 4 * 10.3125 * ENC66, 1024, HDR_ETH, 1560,
         STRAND_DEV_PERF_PORT, "10GbE 4x Ethernet, MTU 1024"},
        {8, 2, IBV_MTU_4096, IB, 4 * 10.3125 * ENC66, 4096, HDR_IB, 760,
         STRAND_DEV_PERF_PORT, "FDR10 4x"},
        {16, 2, IBV_MTU_4096, IB, 4 * 14.0625 * ENC66, 4096, HDR_IB, 760,
         STRAND_DEV_PERF_PORT, "FDR 4x"},
        {32, 2, IBV_MTU_4096, IB, 4 * 25.78125 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "EDR 4x InfiniBand, MTU 4096"},
        {32, 2, IBV_MTU_1024, ETH, 4 * 25.78125 * ENC66, 1024, HDR_ETH, 860,
         STRAND_DEV_PERF_PORT, "EDR 4x Ethernet, MTU 1024"},
        {32, 8, IBV_MTU_4096, IB, 12 * 25.78125 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "EDR 12x"},
        {64, 2, IBV_MTU_4096, IB, 4 * 51.5625 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "HDR 4x"},
        {64, 16, IBV_MTU_4096, IB, 2 * 51.5625 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "HDR 2x"},
        {128, 2, IBV_MTU_4096, IB, 4 * 100.0 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "NDR 4x"},
        {128, 4, IBV_MTU_512, IB, 8 * 100.0 * ENC66, 512, HDR_IB, 660,
         STRAND_DEV_PERF_PORT, "NDR 8x InfiniBand, MTU 512"},
        /* unknown values: the slowest link, and the value named */
        {3, 2, IBV_MTU_4096, IB, 4 * 2.5 * 0.8, 4096, HDR_IB, 5060,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_speed 3"},
        {0, 2, IBV_MTU_4096, IB, 4 * 2.5 * 0.8, 4096, HDR_IB, 5060,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_speed 0"},
        {255, 2, IBV_MTU_4096, ETH, 4 * 2.5 * 0.8, 4096, HDR_ETH, 5260,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_speed 255"},
        {32, 3, IBV_MTU_4096, IB, 25.78125 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_width 3"},
        {32, 0, IBV_MTU_4096, IB, 25.78125 * ENC66, 4096, HDR_IB, 660,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_width 0"},
        {32, 2, 0, IB, 4 * 25.78125 * ENC66, 256, HDR_IB, 660,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_mtu 0"},
        {32, 2, 9, IB, 4 * 25.78125 * ENC66, 256, HDR_IB, 660,
         STRAND_DEV_PERF_PORT_GUESS, "unknown active_mtu 9"},
};

strand_dev_perf_t
perf_of(uint8_t speed, uint8_t width, int mtu, uint8_t link_layer)
{
    struct ibv_port_attr pa;
    strand_dev_perf_t    perf;

    memset(&pa, 0, sizeof(pa));
    pa.state        = IBV_PORT_ACTIVE;
    pa.active_speed = speed;
    pa.active_width = width;
    memcpy(&pa.active_mtu, &mtu, sizeof(pa.active_mtu)); /* may be no
                                                            enumerator */
    pa.link_layer = link_layer;
    memset(&perf, 0xff, sizeof(perf)); /* nothing left from before */
    strand_dev_perf_from_port(&pa, &perf);
    return perf;
}

} // namespace

TEST(dev_perf, port_attributes_give_the_link_rate_less_headers)
{
    for (const auto &c : cases) {
        SCOPED_TRACE(std::string("case ") + c.what);
        strand_dev_perf_t p  = perf_of(c.speed, c.width, c.mtu, c.link_layer);
        double            bw = c.gbit_wire * 1e9 / 8 * c.mtu_bytes /
                    (c.mtu_bytes + c.hdr_bytes);

        EXPECT_NEAR(bw, p.bandwidth, bw * 1e-9);
        EXPECT_NEAR(c.latency_ns * 1e-9, p.latency, 1e-12);
        EXPECT_EQ(0.0, p.latency_per_ep);
        EXPECT_NEAR(40e-9, p.send_overhead, 1e-15);
        EXPECT_NEAR(40e-9, p.recv_overhead, 1e-15);
        EXPECT_EQ(c.source, p.source);
        EXPECT_NE(nullptr, strstr(p.what, c.what)) << p.what;
        EXPECT_TRUE(std::isfinite(p.bandwidth) && (p.bandwidth > 0));
        EXPECT_TRUE(std::isfinite(p.latency) && (p.latency > 0));
    }
}

TEST(dev_perf, faster_links_never_estimate_less)
{
    const uint8_t speeds[]   = {1, 2, 4, 8, 16, 32, 64, 128};
    const uint8_t widths[]   = {1, 16, 2, 4, 8}; /* 1x 2x 4x 8x 12x */
    double        prev_speed = 0;

    for (uint8_t s : speeds) {
        strand_dev_perf_t p = perf_of(s, 2, IBV_MTU_4096, IB);
        EXPECT_GE(p.bandwidth, prev_speed) << "speed " << (int)s;
        prev_speed        = p.bandwidth;
        double prev_width = 0;
        for (uint8_t w : widths) {
            strand_dev_perf_t q = perf_of(s, w, IBV_MTU_4096, IB);
            EXPECT_GT(q.bandwidth, prev_width) << "width " << (int)w;
            prev_width = q.bandwidth;
        }
        /* a larger MTU carries fewer headers per byte */
        EXPECT_GT(perf_of(s, 2, IBV_MTU_4096, IB).bandwidth,
                  perf_of(s, 2, IBV_MTU_256, IB).bandwidth);
        /* RoCE: more headers, more latency (code 4 is 40GbE there,
         * faster than QDR's 8b/10b) */
        if (s != 4) {
            EXPECT_LT(perf_of(s, 2, IBV_MTU_4096, ETH).bandwidth,
                      perf_of(s, 2, IBV_MTU_4096, IB).bandwidth);
        }
        EXPECT_GT(perf_of(s, 2, IBV_MTU_4096, ETH).latency,
                  perf_of(s, 2, IBV_MTU_4096, IB).latency);
    }
}
