/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 framing of the software device's packets (sim_wire.h): one
 * function per header, in the order they travel.
 */
#include "sim_wire.h"

#include "sim_crc.h"

#include <endian.h>
#include <stdbool.h>
#include <string.h>

/* the strand extension's first bytes: "STR" and its layout's version */
static const uint8_t sim_wire_magic[4] = {'S', 'T', 'R', 1};

/* BTH byte 1: solicited event, migration, pad count, transport version */
#define BTH_SE        0x80
#define BTH_PAD_SHIFT 4
#define BTH_PAD_MASK  0x30
#define BTH_TVER_MASK 0x0f
/* BTH byte 8: acknowledge request */
#define BTH_ACKREQ 0x80

/* AETH syndromes (IBA 9.7.5.1.4): ACK with no credit count, RNR NAK with
 * its timer in the low 5 bits, NAK with its code */
#define AETH_ACK 0x1f
#define AETH_RNR 0x20
#define AETH_NAK 0x60

/* the extension's field offsets */
enum {
    EXT_MAGIC    = 0,
    EXT_FABRIC   = 4,
    EXT_SLID     = 12,
    EXT_CHAN     = 14,
    EXT_SQPN_SL  = 16, /* sqpn << 8 | sl */
    EXT_TCLASS   = 20,
    EXT_FLAGS    = 21,
    EXT_X        = 22, /* syndrome or xflags */
    EXT_ATOMICOP = 23,
    EXT_ASIZE    = 24,
    EXT_LOG_MTU  = 25,
    EXT_PSN_HI   = 26,
    EXT_RESV     = 27,
    EXT_IMM      = 28,
    EXT_RKEY     = 32,
    EXT_DMA_LEN  = 36,
    EXT_OFFSET   = 40,
    EXT_PAYLOAD  = 44,
    EXT_RESV2    = 46,
    EXT_VA       = 48,
};

/* flags that travel (CORRUPT is the fault injector's: a wrong ICRC) */
#define SIM_WIRE_FLAGS                                                  \
    (SIM_PKT_F_IMM | SIM_PKT_F_SE | SIM_PKT_F_CONNECT | SIM_PKT_F_INV | \
     SIM_PKT_F_RETRY | SIM_PKT_F_ACKREQ | SIM_PKT_F_DC)

/* -------------------------------------------------------- byte order */

static void put16(uint8_t *p, uint16_t v)
{
    v = htobe16(v);
    memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
    v = htobe32(v);
    memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
    v = htobe64(v);
    memcpy(p, &v, sizeof(v));
}

static uint16_t get16(const uint8_t *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return be16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return be64toh(v);
}

/* ----------------------------------------------------------- opcodes */

static uint8_t sim_wire_send_opcode(const sim_pkt_t *pkt)
{
    bool imm = pkt->flags & SIM_PKT_F_IMM, inv = pkt->flags & SIM_PKT_F_INV;

    switch (pkt->op) {
    case SIM_PKT_SEND_FIRST:
        return SIM_WIRE_OP_SEND_FIRST;
    case SIM_PKT_SEND_MIDDLE:
        return SIM_WIRE_OP_SEND_MIDDLE;
    case SIM_PKT_SEND_LAST:
        return imm ? SIM_WIRE_OP_SEND_LAST_IMM :
               inv ? SIM_WIRE_OP_SEND_LAST_INV :
                     SIM_WIRE_OP_SEND_LAST;
    default:
        return imm ? SIM_WIRE_OP_SEND_ONLY_IMM :
               inv ? SIM_WIRE_OP_SEND_ONLY_INV :
                     SIM_WIRE_OP_SEND_ONLY;
    }
}

static uint8_t sim_wire_write_opcode(const sim_pkt_t *pkt)
{
    bool imm = pkt->flags & SIM_PKT_F_IMM;

    switch (pkt->op) {
    case SIM_PKT_WRITE_FIRST:
        return SIM_WIRE_OP_WRITE_FIRST;
    case SIM_PKT_WRITE_MIDDLE:
        return SIM_WIRE_OP_WRITE_MIDDLE;
    case SIM_PKT_WRITE_LAST:
        return imm ? SIM_WIRE_OP_WRITE_LAST_IMM : SIM_WIRE_OP_WRITE_LAST;
    default:
        return imm ? SIM_WIRE_OP_WRITE_ONLY_IMM : SIM_WIRE_OP_WRITE_ONLY;
    }
}

/* a READ response's place in its message: from its offset and length
 * against the whole READ's (dma_len); a one-copy READ has one response */
static uint8_t sim_wire_read_resp_opcode(const sim_pkt_t *pkt)
{
    bool first = (pkt->offset == 0);
    bool last  = ((uint64_t)pkt->offset + pkt->payload_len >= pkt->dma_len);

    if ((pkt->xflags & SIM_PKT_X_ONECOPY) || (first && last)) {
        return SIM_WIRE_OP_READ_RESP_ONLY;
    }
    return first ? SIM_WIRE_OP_READ_RESP_FIRST :
           last  ? SIM_WIRE_OP_READ_RESP_LAST :
                   SIM_WIRE_OP_READ_RESP_MID;
}

uint8_t sim_wire_opcode(const sim_pkt_t *pkt)
{
    switch (pkt->op) {
    case SIM_PKT_SEND_FIRST:
    case SIM_PKT_SEND_MIDDLE:
    case SIM_PKT_SEND_LAST:
    case SIM_PKT_SEND_ONLY:
        return sim_wire_send_opcode(pkt);
    case SIM_PKT_WRITE_FIRST:
    case SIM_PKT_WRITE_MIDDLE:
    case SIM_PKT_WRITE_LAST:
    case SIM_PKT_WRITE_ONLY:
        return sim_wire_write_opcode(pkt);
    case SIM_PKT_READ_REQ:
        return SIM_WIRE_OP_READ_REQ;
    case SIM_PKT_READ_RESP:
        return sim_wire_read_resp_opcode(pkt);
    case SIM_PKT_ACK:
        return SIM_WIRE_OP_ACK;
    case SIM_PKT_ATOMIC_RESP:
        return SIM_WIRE_OP_ATOMIC_ACK;
    case SIM_PKT_ATOMIC_REQ:
        return ((pkt->atomic_op == SIM_ATOMIC_CS) ||
                (pkt->atomic_op == SIM_ATOMIC_MASKED_CS)) ?
                       SIM_WIRE_OP_CMP_SWAP :
                       SIM_WIRE_OP_FETCH_ADD;
    default:
        return 0xff;
    }
}

/* the sim's packet kind an opcode names; 0 for one the device never sends */
static uint8_t sim_wire_pkt_op(uint8_t opcode)
{
    static const uint8_t ops[] = {
            [SIM_WIRE_OP_SEND_FIRST]      = SIM_PKT_SEND_FIRST,
            [SIM_WIRE_OP_SEND_MIDDLE]     = SIM_PKT_SEND_MIDDLE,
            [SIM_WIRE_OP_SEND_LAST]       = SIM_PKT_SEND_LAST,
            [SIM_WIRE_OP_SEND_LAST_IMM]   = SIM_PKT_SEND_LAST,
            [SIM_WIRE_OP_SEND_ONLY]       = SIM_PKT_SEND_ONLY,
            [SIM_WIRE_OP_SEND_ONLY_IMM]   = SIM_PKT_SEND_ONLY,
            [SIM_WIRE_OP_WRITE_FIRST]     = SIM_PKT_WRITE_FIRST,
            [SIM_WIRE_OP_WRITE_MIDDLE]    = SIM_PKT_WRITE_MIDDLE,
            [SIM_WIRE_OP_WRITE_LAST]      = SIM_PKT_WRITE_LAST,
            [SIM_WIRE_OP_WRITE_LAST_IMM]  = SIM_PKT_WRITE_LAST,
            [SIM_WIRE_OP_WRITE_ONLY]      = SIM_PKT_WRITE_ONLY,
            [SIM_WIRE_OP_WRITE_ONLY_IMM]  = SIM_PKT_WRITE_ONLY,
            [SIM_WIRE_OP_READ_REQ]        = SIM_PKT_READ_REQ,
            [SIM_WIRE_OP_READ_RESP_FIRST] = SIM_PKT_READ_RESP,
            [SIM_WIRE_OP_READ_RESP_MID]   = SIM_PKT_READ_RESP,
            [SIM_WIRE_OP_READ_RESP_LAST]  = SIM_PKT_READ_RESP,
            [SIM_WIRE_OP_READ_RESP_ONLY]  = SIM_PKT_READ_RESP,
            [SIM_WIRE_OP_ACK]             = SIM_PKT_ACK,
            [SIM_WIRE_OP_ATOMIC_ACK]      = SIM_PKT_ATOMIC_RESP,
            [SIM_WIRE_OP_CMP_SWAP]        = SIM_PKT_ATOMIC_REQ,
            [SIM_WIRE_OP_FETCH_ADD]       = SIM_PKT_ATOMIC_REQ,
            [SIM_WIRE_OP_SEND_LAST_INV]   = SIM_PKT_SEND_LAST,
            [SIM_WIRE_OP_SEND_ONLY_INV]   = SIM_PKT_SEND_ONLY,
    };

    return (opcode < sizeof(ops)) ? ops[opcode] : 0;
}

/* ------------------------------------------ which headers an opcode has */

static bool sim_wire_has_reth(uint8_t opcode)
{
    return (opcode == SIM_WIRE_OP_WRITE_FIRST) ||
           (opcode == SIM_WIRE_OP_WRITE_ONLY) ||
           (opcode == SIM_WIRE_OP_WRITE_ONLY_IMM) ||
           (opcode == SIM_WIRE_OP_READ_REQ);
}

static bool sim_wire_has_atomiceth(uint8_t opcode)
{
    return (opcode == SIM_WIRE_OP_CMP_SWAP) ||
           (opcode == SIM_WIRE_OP_FETCH_ADD);
}

/* READ responses carry an AETH on their first and last packet */
static bool sim_wire_has_aeth(uint8_t opcode)
{
    return (opcode == SIM_WIRE_OP_ACK) || (opcode == SIM_WIRE_OP_ATOMIC_ACK) ||
           (opcode == SIM_WIRE_OP_READ_RESP_FIRST) ||
           (opcode == SIM_WIRE_OP_READ_RESP_LAST) ||
           (opcode == SIM_WIRE_OP_READ_RESP_ONLY);
}

static bool sim_wire_has_immdt(uint8_t opcode)
{
    return (opcode == SIM_WIRE_OP_SEND_LAST_IMM) ||
           (opcode == SIM_WIRE_OP_SEND_ONLY_IMM) ||
           (opcode == SIM_WIRE_OP_WRITE_LAST_IMM) ||
           (opcode == SIM_WIRE_OP_WRITE_ONLY_IMM);
}

static bool sim_wire_has_ieth(uint8_t opcode)
{
    return (opcode == SIM_WIRE_OP_SEND_LAST_INV) ||
           (opcode == SIM_WIRE_OP_SEND_ONLY_INV);
}

/* the AETH syndrome of an ACK (the sim's SIM_AETH_*, an RNR NAK's timer in
 * atomic_op); responses with an AETH are ACKs */
static uint8_t sim_wire_aeth_syndrome(const sim_pkt_t *pkt)
{
    if (pkt->op != SIM_PKT_ACK) {
        return AETH_ACK;
    }
    switch (pkt->syndrome) {
    case SIM_AETH_ACK:
        return AETH_ACK;
    case SIM_AETH_RNR_NAK:
        return AETH_RNR | (pkt->atomic_op & 0x1f);
    default:
        /* PSN sequence error 0, invalid request 1, remote access 2,
         * remote operational 3 */
        return AETH_NAK | (uint8_t)(pkt->syndrome - SIM_AETH_NAK_PSN_SEQ);
    }
}

/* ---------------------------------------------------------- encoding */

static size_t sim_wire_put_bth(uint8_t *p, const sim_wire_id_t *id,
                               const sim_pkt_t *pkt, uint8_t opcode,
                               unsigned pad)
{
    p[0] = opcode;
    p[1] = ((pkt->flags & SIM_PKT_F_SE) ? BTH_SE : 0) |
           (uint8_t)(pad << BTH_PAD_SHIFT);
    put16(p + 2, id->pkey);
    put32(p + 4, pkt->dqpn); /* byte 4 (F, B) is 0 */
    put32(p + 8, pkt->psn & 0xffffff);
    p[8] = (pkt->flags & SIM_PKT_F_ACKREQ) ? BTH_ACKREQ : 0;
    return SIM_WIRE_BTH_LEN;
}

/* the IBTA headers of the opcode, in the order IBA 9.2 gives them */
static size_t
sim_wire_put_ibta(uint8_t *p, const sim_pkt_t *pkt, uint8_t opcode)
{
    uint8_t *start = p;

    if (sim_wire_has_reth(opcode)) {
        put64(p, pkt->va);
        put32(p + 8, pkt->rkey);
        put32(p + 12, pkt->dma_len);
        p += SIM_WIRE_RETH_LEN;
    }
    if (sim_wire_has_atomiceth(opcode)) {
        put64(p, pkt->va);
        put32(p + 8, pkt->rkey);
        put64(p + 12, pkt->swap_add);
        put64(p + 20, pkt->compare);
        p += SIM_WIRE_ATOMICETH_LEN;
    }
    if (sim_wire_has_aeth(opcode)) {
        put32(p, pkt->psn & 0xffffff); /* MSN: the PSN it answers */
        p[0] = sim_wire_aeth_syndrome(pkt);
        p += SIM_WIRE_AETH_LEN;
    }
    if (opcode == SIM_WIRE_OP_ATOMIC_ACK) {
        put64(p, pkt->swap_add);
        p += SIM_WIRE_ATOMICACK_LEN;
    }
    if (sim_wire_has_immdt(opcode) || sim_wire_has_ieth(opcode)) {
        memcpy(p, &pkt->imm, 4); /* as the WQE gave it: network order */
        p += SIM_WIRE_IMMDT_LEN;
    }
    return (size_t)(p - start);
}

static size_t
sim_wire_put_ext(uint8_t *p, const sim_wire_id_t *id, const sim_pkt_t *pkt)
{
    size_t len = SIM_WIRE_EXT_LEN;

    memset(p, 0, SIM_WIRE_EXT_LEN);
    memcpy(p + EXT_MAGIC, sim_wire_magic, sizeof(sim_wire_magic));
    put64(p + EXT_FABRIC, id->fabric);
    put16(p + EXT_SLID, pkt->slid);
    put16(p + EXT_CHAN, pkt->chan);
    put32(p + EXT_SQPN_SL, ((uint32_t)pkt->sqpn << 8) | pkt->sl);
    p[EXT_TCLASS]   = pkt->tclass;
    p[EXT_FLAGS]    = pkt->flags & SIM_WIRE_FLAGS;
    p[EXT_X]        = pkt->xflags;
    p[EXT_ATOMICOP] = pkt->atomic_op;
    p[EXT_ASIZE]    = pkt->atomic_size;
    p[EXT_LOG_MTU]  = pkt->log_mtu;
    p[EXT_PSN_HI]   = (uint8_t)(pkt->psn >> 24);
    memcpy(p + EXT_IMM, &pkt->imm, 4);
    put32(p + EXT_RKEY, pkt->rkey);
    put32(p + EXT_DMA_LEN, pkt->dma_len);
    put32(p + EXT_OFFSET, pkt->offset);
    put16(p + EXT_PAYLOAD, pkt->payload_len);
    put64(p + EXT_VA, pkt->va);
    if (pkt->flags & SIM_PKT_F_DC) {
        put64(p + len, pkt->dc_key);
        len += SIM_WIRE_EXT_DC_LEN;
    }
    if ((pkt->op == SIM_PKT_ATOMIC_REQ) || (pkt->op == SIM_PKT_ATOMIC_RESP)) {
        /* the operands again, with the masks: the AtomicETH has 64-bit
         * fields and no masks */
        put64(p + len, pkt->swap_add);
        put64(p + len + 8, pkt->compare);
        put64(p + len + 16, pkt->swap_mask);
        put64(p + len + 24, pkt->compare_mask);
        len += SIM_WIRE_EXT_ATOMIC_LEN;
    }
    return len;
}

/* The invariant CRC over the datagram's transport part. IBA's RoCEv2 ICRC
 * also covers the IP and UDP headers (with their variant fields masked);
 * the device has no IP header in hand when it frames a packet, so its
 * ICRC is the same CRC-32 over BTH .. pad with the BTH's variant byte 4
 * (FECN, BECN) masked to ones, as IBA masks it. */
static uint32_t sim_wire_icrc(const uint8_t *buf, size_t len)
{
    uint8_t  bth[SIM_WIRE_BTH_LEN];
    uint32_t crc;

    memcpy(bth, buf, sizeof(bth));
    bth[4] = 0xff;
    crc    = sim_crc32_update(~0u, bth, sizeof(bth));
    crc    = sim_crc32_update(crc, buf + sizeof(bth), len - sizeof(bth));
    return sim_crc32_final(crc);
}

size_t sim_wire_encode(const sim_wire_id_t *id, const sim_pkt_t *pkt,
                       const void *payload, uint8_t *buf, size_t cap)
{
    uint8_t  hdr[SIM_WIRE_MAX_HDR], opcode = sim_wire_opcode(pkt);
    size_t   hlen, total;
    unsigned pad;

    if (opcode == 0xff) {
        return 0;
    }
    pad  = (4 - (pkt->payload_len & 3)) & 3;
    hlen = SIM_WIRE_BTH_LEN;
    hlen += sim_wire_put_ibta(hdr + hlen, pkt, opcode);
    hlen += sim_wire_put_ext(hdr + hlen, id, pkt);
    total = hlen + pkt->payload_len + pad + SIM_WIRE_ICRC_LEN;
    if (total > cap) {
        return 0;
    }
    sim_wire_put_bth(hdr, id, pkt, opcode, pad);
    memcpy(buf, hdr, hlen);
    if (pkt->payload_len > 0) {
        memcpy(buf + hlen, payload, pkt->payload_len);
    }
    memset(buf + hlen + pkt->payload_len, 0, pad);
    /* a packet the fault injector corrupted leaves with a wrong ICRC:
     * the receiving port drops it and counts it, as a NIC does */
    put32(buf + total - SIM_WIRE_ICRC_LEN,
          sim_wire_icrc(buf, total - SIM_WIRE_ICRC_LEN) ^
                  ((pkt->flags & SIM_PKT_F_CORRUPT) ? 0xffffffffu : 0));
    return total;
}

/* ---------------------------------------------------------- decoding */

/* the IBTA headers must say what the extension says */
static bool
sim_wire_ibta_agrees(const uint8_t *p, const sim_pkt_t *pkt, uint8_t opcode)
{
    if (sim_wire_has_reth(opcode)) {
        if ((get64(p) != pkt->va) || (get32(p + 8) != pkt->rkey) ||
            (get32(p + 12) != pkt->dma_len)) {
            return false;
        }
        p += SIM_WIRE_RETH_LEN;
    }
    if (sim_wire_has_atomiceth(opcode)) {
        if ((get64(p) != pkt->va) || (get32(p + 8) != pkt->rkey) ||
            (get64(p + 12) != pkt->swap_add) ||
            (get64(p + 20) != pkt->compare)) {
            return false;
        }
        p += SIM_WIRE_ATOMICETH_LEN;
    }
    if (sim_wire_has_aeth(opcode)) {
        if ((p[0] != sim_wire_aeth_syndrome(pkt)) ||
            ((get32(p) & 0xffffff) != (pkt->psn & 0xffffff))) {
            return false;
        }
        p += SIM_WIRE_AETH_LEN;
    }
    if (opcode == SIM_WIRE_OP_ATOMIC_ACK) {
        if (get64(p) != pkt->swap_add) {
            return false;
        }
        p += SIM_WIRE_ATOMICACK_LEN;
    }
    if (sim_wire_has_immdt(opcode) || sim_wire_has_ieth(opcode)) {
        return !memcmp(p, &pkt->imm, 4);
    }
    return true;
}

static size_t sim_wire_ibta_len(uint8_t opcode)
{
    return (sim_wire_has_reth(opcode) ? SIM_WIRE_RETH_LEN : 0) +
           (sim_wire_has_atomiceth(opcode) ? SIM_WIRE_ATOMICETH_LEN : 0) +
           (sim_wire_has_aeth(opcode) ? SIM_WIRE_AETH_LEN : 0) +
           ((opcode == SIM_WIRE_OP_ATOMIC_ACK) ? SIM_WIRE_ATOMICACK_LEN : 0) +
           ((sim_wire_has_immdt(opcode) || sim_wire_has_ieth(opcode)) ?
                    SIM_WIRE_IMMDT_LEN :
                    0);
}

/* the extension's fields into PKT (after the magic and fabric checks) */
static void sim_wire_get_ext(const uint8_t *p, sim_pkt_t *pkt)
{
    uint32_t sqpn_sl = get32(p + EXT_SQPN_SL);

    pkt->slid        = get16(p + EXT_SLID);
    pkt->chan        = get16(p + EXT_CHAN);
    pkt->sqpn        = sqpn_sl >> 8;
    pkt->sl          = sqpn_sl & 0xff;
    pkt->tclass      = p[EXT_TCLASS];
    pkt->flags       = p[EXT_FLAGS];
    pkt->xflags      = p[EXT_X];
    pkt->atomic_op   = p[EXT_ATOMICOP];
    pkt->atomic_size = p[EXT_ASIZE];
    pkt->log_mtu     = p[EXT_LOG_MTU];
    pkt->psn |= (uint32_t)p[EXT_PSN_HI] << 24;
    memcpy(&pkt->imm, p + EXT_IMM, 4);
    pkt->rkey        = get32(p + EXT_RKEY);
    pkt->dma_len     = get32(p + EXT_DMA_LEN);
    pkt->offset      = get32(p + EXT_OFFSET);
    pkt->payload_len = get16(p + EXT_PAYLOAD);
    pkt->va          = get64(p + EXT_VA);
}

/* what the extension says must fit the opcode and the device's ranges */
static bool sim_wire_fields_valid(const sim_pkt_t *pkt, uint8_t opcode, bool se)
{
    if ((pkt->flags & ~SIM_WIRE_FLAGS) || (pkt->log_mtu > 12) ||
        (!!(pkt->flags & SIM_PKT_F_SE) != se)) {
        return false;
    }
    /* the flags the opcode implies, and the one it is */
    if (!!(pkt->flags & SIM_PKT_F_IMM) != sim_wire_has_immdt(opcode)) {
        return false;
    }
    if (!!(pkt->flags & SIM_PKT_F_INV) != sim_wire_has_ieth(opcode)) {
        return false;
    }
    if (pkt->op == SIM_PKT_ATOMIC_REQ) {
        return ((pkt->atomic_size == 4) || (pkt->atomic_size == 8)) &&
               (pkt->atomic_op <= SIM_ATOMIC_MASKED_FA);
    }
    if (pkt->op == SIM_PKT_ACK) {
        return pkt->syndrome <= SIM_AETH_NAK_OP;
    }
    return true;
}

sim_wire_drop_t sim_wire_decode(const sim_wire_id_t *id, const uint8_t *buf,
                                size_t len, sim_pkt_t *pkt,
                                const uint8_t **payload)
{
    size_t         ibta, ext, hlen, pad;
    const uint8_t *e;
    uint8_t        opcode;

    if (len < SIM_WIRE_BTH_LEN + SIM_WIRE_EXT_LEN + SIM_WIRE_ICRC_LEN) {
        return SIM_WIRE_DROP_SHORT;
    }
    opcode = buf[0];
    if ((buf[1] & BTH_TVER_MASK) != 0) {
        return SIM_WIRE_DROP_VERSION;
    }
    memset(pkt, 0, sizeof(*pkt));
    pkt->op = sim_wire_pkt_op(opcode);
    if (pkt->op == 0) {
        return SIM_WIRE_DROP_OPCODE;
    }
    if (get16(buf + 2) != id->pkey) {
        return SIM_WIRE_DROP_PKEY;
    }
    ibta = sim_wire_ibta_len(opcode);
    if (len < SIM_WIRE_BTH_LEN + ibta + SIM_WIRE_EXT_LEN + SIM_WIRE_ICRC_LEN) {
        return SIM_WIRE_DROP_SHORT;
    }
    e = buf + SIM_WIRE_BTH_LEN + ibta;
    if (memcmp(e + EXT_MAGIC, sim_wire_magic, 3)) {
        return SIM_WIRE_DROP_EXT;
    }
    if (e[EXT_MAGIC + 3] != sim_wire_magic[3]) {
        return SIM_WIRE_DROP_VERSION;
    }
    if (get64(e + EXT_FABRIC) != id->fabric) {
        return SIM_WIRE_DROP_FABRIC;
    }
    pkt->dqpn = get32(buf + 4) & 0xffffff;
    pkt->psn  = get32(buf + 8) & 0xffffff;
    sim_wire_get_ext(e, pkt);
    if (!sim_wire_fields_valid(pkt, opcode, buf[1] & BTH_SE) ||
        (!!(buf[8] & BTH_ACKREQ) != !!(pkt->flags & SIM_PKT_F_ACKREQ))) {
        return SIM_WIRE_DROP_HEADERS;
    }
    ext = SIM_WIRE_EXT_LEN;
    ext += (pkt->flags & SIM_PKT_F_DC) ? SIM_WIRE_EXT_DC_LEN : 0;
    ext += ((pkt->op == SIM_PKT_ATOMIC_REQ) ||
            (pkt->op == SIM_PKT_ATOMIC_RESP)) ?
                   SIM_WIRE_EXT_ATOMIC_LEN :
                   0;
    hlen = SIM_WIRE_BTH_LEN + ibta + ext;
    pad  = (buf[1] & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
    if (len < hlen + SIM_WIRE_ICRC_LEN) {
        return SIM_WIRE_DROP_SHORT;
    }
    if ((len != hlen + pkt->payload_len + pad + SIM_WIRE_ICRC_LEN) ||
        (pad != ((4 - (pkt->payload_len & 3)) & 3))) {
        return SIM_WIRE_DROP_LENGTH;
    }
    if (get32(buf + len - SIM_WIRE_ICRC_LEN) !=
        sim_wire_icrc(buf, len - SIM_WIRE_ICRC_LEN)) {
        return SIM_WIRE_DROP_ICRC;
    }
    /* the extension's optional parts, in the order they were written */
    e += SIM_WIRE_EXT_LEN;
    if (pkt->flags & SIM_PKT_F_DC) {
        pkt->dc_key = get64(e);
        e += SIM_WIRE_EXT_DC_LEN;
    }
    if ((pkt->op == SIM_PKT_ATOMIC_REQ) || (pkt->op == SIM_PKT_ATOMIC_RESP)) {
        pkt->swap_add     = get64(e);
        pkt->compare      = get64(e + 8);
        pkt->swap_mask    = get64(e + 16);
        pkt->compare_mask = get64(e + 24);
    }
    if (!sim_wire_ibta_agrees(buf + SIM_WIRE_BTH_LEN, pkt, opcode) ||
        (sim_wire_opcode(pkt) != opcode)) {
        return SIM_WIRE_DROP_HEADERS;
    }
    *payload = buf + hlen;
    return SIM_WIRE_OK;
}

const char *sim_wire_drop_name(sim_wire_drop_t why)
{
    static const char *names[SIM_WIRE_DROP_MAX] = {
            [SIM_WIRE_OK]           = "ok",
            [SIM_WIRE_DROP_SHORT]   = "short",
            [SIM_WIRE_DROP_VERSION] = "version",
            [SIM_WIRE_DROP_OPCODE]  = "opcode",
            [SIM_WIRE_DROP_PKEY]    = "pkey",
            [SIM_WIRE_DROP_EXT]     = "no_extension",
            [SIM_WIRE_DROP_FABRIC]  = "fabric",
            [SIM_WIRE_DROP_HEADERS] = "headers",
            [SIM_WIRE_DROP_LENGTH]  = "length",
            [SIM_WIRE_DROP_ICRC]    = "icrc",
    };

    return ((unsigned)why < SIM_WIRE_DROP_MAX) ? names[why] : "unknown";
}
