/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a hardware port is worth to the transport's estimates: latency,
 * bandwidth and overheads of a DC message from the port's active speed,
 * width, MTU and link layer, as UCX's ib interfaces estimate theirs (the
 * IBTA lane rates and encodings, the per-speed latencies UCX uses, the
 * headers each packet carries). A pure function: no device is needed to
 * test it.
 */
#include "dev.h"

#include <stdio.h>
#include <string.h>

/* Bytes every packet carries besides its payload (IBTA): base transport
 * header, DC extended transport header, RDMA extended header (a READ or
 * WRITE; the largest), invariant and variant CRCs, the wire delimiter; on
 * InfiniBand the local routing header, on RoCE the global routing header
 * and the Ethernet header. */
#define DEV_PERF_BTH_LEN   12
#define DEV_PERF_DCETH_LEN 8
#define DEV_PERF_RETH_LEN  16
#define DEV_PERF_ICRC_LEN  4
#define DEV_PERF_VCRC_LEN  2
#define DEV_PERF_DELIM_LEN 2
#define DEV_PERF_LRH_LEN   8
#define DEV_PERF_GRH_LEN   40
#define DEV_PERF_ETH_LEN   14

/* Host CPU per post and per received message of an mlx5 data path (the
 * figure UCX's mlx5 transports report). */
#define DEV_PERF_HW_OVERHEAD 40e-9
/* RoCE: the Ethernet switch path costs more than InfiniBand's. */
#define DEV_PERF_ROCE_LATENCY 200e-9
/* DC: the DCI's connect with the target DCT, and the CQE. */
#define DEV_PERF_DC_LATENCY 60e-9

typedef struct dev_perf_speed {
    uint8_t     code; /* ibv_port_attr.active_speed */
    const char *name;
    double      lane_gbaud; /* signalling rate of one lane, 1e9 /s */
    double      encoding;   /* payload bits per line bit */
    double      latency;    /* s, one way, small message */
} dev_perf_speed_t;

static const dev_perf_speed_t dev_perf_speeds[] = {
        {1, "SDR", 2.5, 8.0 / 10.0, 5000e-9},
        {2, "DDR", 5.0, 8.0 / 10.0, 2500e-9},
        {4, "QDR", 10.0, 8.0 / 10.0, 1300e-9},
        {8, "FDR10", 10.3125, 64.0 / 66.0, 700e-9},
        {16, "FDR", 14.0625, 64.0 / 66.0, 700e-9},
        {32, "EDR", 25.78125, 64.0 / 66.0, 600e-9},
        {64, "HDR", 2 * 25.78125, 64.0 / 66.0, 600e-9},
        {128, "NDR", 100.0, 64.0 / 66.0, 600e-9},
};

/* On an Ethernet port, speed code 4 is 10 or 40 GbE (64b/66b). */
static const dev_perf_speed_t dev_perf_speed_eth_qdr = {4, "10GbE", 10.3125,
                                                        64.0 / 66.0, 1300e-9};

/* ibv_port_attr.active_width (IBTA PortInfo LinkWidthActive) -> lanes */
static unsigned dev_perf_lanes(uint8_t width)
{
    switch (width) {
    case 1:
        return 1;
    case 2:
        return 4;
    case 4:
        return 8;
    case 8:
        return 12;
    case 16:
        return 2;
    default:
        return 0;
    }
}

void strand_dev_perf_from_port(const struct ibv_port_attr *pa,
                               strand_dev_perf_t          *perf)
{
    const dev_perf_speed_t *speed = NULL;
    int                     eth   = (pa->link_layer == IBV_LINK_LAYER_ETHERNET);
    unsigned                lanes, i, mtu, hdr;
    char                    note[48] = "";
    double                  wire;

    memset(perf, 0, sizeof(*perf));
    for (i = 0; i < sizeof(dev_perf_speeds) / sizeof(dev_perf_speeds[0]); ++i) {
        if (dev_perf_speeds[i].code == pa->active_speed) {
            speed = &dev_perf_speeds[i];
        }
    }
    if ((speed != NULL) && eth && (speed->code == 4)) {
        speed = &dev_perf_speed_eth_qdr;
    }
    if (speed == NULL) {
        snprintf(note, sizeof(note), ", unknown active_speed %u",
                 pa->active_speed);
        speed = &dev_perf_speeds[0];
    }
    lanes = dev_perf_lanes(pa->active_width);
    if (lanes == 0) {
        snprintf(note + strlen(note), sizeof(note) - strlen(note),
                 ", unknown active_width %u", pa->active_width);
        lanes = 1;
    }
    /* IBV_MTU_256 (1) .. IBV_MTU_4096 (5); anything else: the smallest */
    if ((pa->active_mtu >= IBV_MTU_256) && (pa->active_mtu <= IBV_MTU_4096)) {
        mtu = 128u << pa->active_mtu;
    } else {
        mtu = 256;
        snprintf(note + strlen(note), sizeof(note) - strlen(note),
                 ", unknown active_mtu %u", pa->active_mtu);
    }

    hdr = DEV_PERF_BTH_LEN + DEV_PERF_DCETH_LEN + DEV_PERF_RETH_LEN +
          DEV_PERF_ICRC_LEN + DEV_PERF_VCRC_LEN + DEV_PERF_DELIM_LEN +
          (eth ? (DEV_PERF_GRH_LEN + DEV_PERF_ETH_LEN) : DEV_PERF_LRH_LEN);
    wire = lanes * speed->lane_gbaud * 1e9 * speed->encoding / 8.0;

    perf->bandwidth = wire * mtu / (mtu + hdr);
    perf->latency   = speed->latency + DEV_PERF_DC_LATENCY +
                    (eth ? DEV_PERF_ROCE_LATENCY : 0);
    perf->latency_per_ep = 0; /* DC: no QP, no state per peer */
    perf->send_overhead  = DEV_PERF_HW_OVERHEAD;
    perf->recv_overhead  = DEV_PERF_HW_OVERHEAD;
    perf->source         = (note[0] == '\0') ? STRAND_DEV_PERF_PORT :
                                               STRAND_DEV_PERF_PORT_GUESS;
    snprintf(perf->what, sizeof(perf->what), "%s %ux %s, MTU %u%s", speed->name,
             lanes, eth ? "Ethernet" : "InfiniBand", mtu, note);
}
