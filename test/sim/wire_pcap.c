/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire_pcap FILE: one datagram of every BTH opcode the software device
 * sends, framed by its wire code (src/sim/sim_wire.c), written as a
 * capture (pcap, Ethernet / IPv4 / UDP to port 4791) for a capture tool to
 * decode (test/shell/test_wire.sh runs tshark on it). Prints, for each
 * packet in order, what the tool must read: "opcode dest_qp psn", in
 * decimal.
 */
#include "sim/sim_wire.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sim_wire_id_t wire_id = {0x0123456789abcdefull,
                                      SIM_WIRE_PKEY_FULL};

static void put_pcap_header(FILE *f)
{
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t  zone;
        uint32_t sigfigs, snaplen, linktype;
    } h = {0xa1b2c3d4, 2, 4, 0, 0, 65535, 1 /* Ethernet */};

    fwrite(&h, sizeof(h), 1, f);
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;
    size_t   i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/* Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, UDP 49152 -> 4791, the datagram */
static void put_frame(FILE *f, const uint8_t *dgram, size_t len, unsigned n)
{
    uint8_t  hdr[14 + 20 + 8] = {0};
    uint8_t *ip = hdr + 14, *udp = ip + 20;
    uint16_t v;
    struct {
        uint32_t sec, usec, incl, orig;
    } rec = {1796169600u + n, 0, (uint32_t)(sizeof(hdr) + len),
             (uint32_t)(sizeof(hdr) + len)};

    memcpy(hdr, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
    hdr[12] = 0x08; /* IPv4 */
    ip[0]   = 0x45;
    v       = htons((uint16_t)(20 + 8 + len));
    memcpy(ip + 2, &v, 2);
    ip[6] = 0x40; /* don't fragment */
    ip[8] = 64;
    ip[9] = 17; /* UDP */
    memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
    v = htons(ip_checksum(ip, 20));
    memcpy(ip + 10, &v, 2);
    v = htons(49152);
    memcpy(udp, &v, 2);
    v = htons(SIM_WIRE_UDP_PORT);
    memcpy(udp + 2, &v, 2);
    v = htons((uint16_t)(8 + len));
    memcpy(udp + 4, &v, 2);
    fwrite(&rec, sizeof(rec), 1, f);
    fwrite(hdr, sizeof(hdr), 1, f);
    fwrite(dgram, len, 1, f);
}

static sim_pkt_t packet(uint8_t op, uint8_t flags, uint16_t len, unsigned n)
{
    sim_pkt_t p;

    memset(&p, 0, sizeof(p));
    p.op          = op;
    p.flags       = flags;
    p.payload_len = len;
    p.dqpn        = 0x10000 + 0x111 * n;
    p.psn         = 0x00fff0 + 7 * n; /* crosses 0x10000 on the way */
    p.sqpn        = 0x2000 + n;
    p.slid        = 3;
    p.log_mtu     = 10;
    p.va          = 0x7f0000001000ull + 64 * n;
    p.rkey        = 0x1a00 + n;
    p.dma_len     = len;
    return p;
}

int main(int argc, char **argv)
{
    static const struct {
        uint8_t  op, flags;
        uint16_t len;
        uint32_t offset, dma_len; /* READ responses */
        uint8_t  atomic_op;
    } kinds[] = {
            {SIM_PKT_SEND_FIRST, 0, 1024, 0, 0, 0},
            {SIM_PKT_SEND_MIDDLE, 0, 1024, 0, 0, 0},
            {SIM_PKT_SEND_LAST, SIM_PKT_F_ACKREQ, 10, 0, 0, 0},
            {SIM_PKT_SEND_LAST, SIM_PKT_F_IMM, 10, 0, 0, 0},
            {SIM_PKT_SEND_ONLY, SIM_PKT_F_DC | SIM_PKT_F_CONNECT, 8, 0, 0, 0},
            {SIM_PKT_SEND_ONLY, SIM_PKT_F_IMM | SIM_PKT_F_SE, 8, 0, 0, 0},
            {SIM_PKT_WRITE_FIRST, 0, 1024, 0, 0, 0},
            {SIM_PKT_WRITE_MIDDLE, 0, 1024, 0, 0, 0},
            {SIM_PKT_WRITE_LAST, 0, 100, 0, 0, 0},
            {SIM_PKT_WRITE_LAST, SIM_PKT_F_IMM, 100, 0, 0, 0},
            {SIM_PKT_WRITE_ONLY, SIM_PKT_F_DC, 64, 0, 0, 0},
            {SIM_PKT_WRITE_ONLY, SIM_PKT_F_IMM, 64, 0, 0, 0},
            {SIM_PKT_READ_REQ, SIM_PKT_F_ACKREQ | SIM_PKT_F_DC, 0, 0, 0, 0},
            {SIM_PKT_READ_RESP, 0, 1024, 0, 3000, 0},
            {SIM_PKT_READ_RESP, 0, 1024, 1024, 3000, 0},
            {SIM_PKT_READ_RESP, 0, 952, 2048, 3000, 0},
            {SIM_PKT_READ_RESP, 0, 200, 0, 200, 0},
            {SIM_PKT_ACK, 0, 0, 0, 0, 0},
            {SIM_PKT_ATOMIC_RESP, 0, 0, 0, 0, 0},
            {SIM_PKT_ATOMIC_REQ, SIM_PKT_F_ACKREQ, 0, 0, 0, SIM_ATOMIC_CS},
            {SIM_PKT_ATOMIC_REQ, SIM_PKT_F_ACKREQ, 0, 0, 0, SIM_ATOMIC_FA},
            {SIM_PKT_SEND_LAST, SIM_PKT_F_INV, 10, 0, 0, 0},
            {SIM_PKT_SEND_ONLY, SIM_PKT_F_INV, 10, 0, 0, 0},
    };
    uint8_t  payload[1024], dgram[1024 + SIM_WIRE_OVERHEAD];
    unsigned n;
    size_t   len;
    FILE    *f;

    if (argc != 2) {
        fprintf(stderr, "usage: wire_pcap FILE\n");
        return 2;
    }
    f = fopen(argv[1], "wb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    memset(payload, 0x5a, sizeof(payload));
    put_pcap_header(f);
    for (n = 0; n < sizeof(kinds) / sizeof(kinds[0]); ++n) {
        sim_pkt_t p = packet(kinds[n].op, kinds[n].flags, kinds[n].len, n);

        if (p.op == SIM_PKT_READ_RESP) {
            p.offset  = kinds[n].offset;
            p.dma_len = kinds[n].dma_len;
        }
        if (p.op == SIM_PKT_ATOMIC_REQ) {
            p.atomic_op   = kinds[n].atomic_op;
            p.atomic_size = 8;
        }
        len = sim_wire_encode(&wire_id, &p, payload, dgram, sizeof(dgram));
        if (len == 0) {
            fprintf(stderr, "wire_pcap: packet %u does not encode\n", n);
            return 1;
        }
        put_frame(f, dgram, len, n);
        printf("%u %u %u\n", dgram[0], (unsigned)p.dqpn, p.psn & 0xffffff);
    }
    return fclose(f) ? 1 : 0;
}
