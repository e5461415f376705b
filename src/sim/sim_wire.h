/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software device's packets as datagrams between hosts: RoCEv2 framing
 * (the UDP payload of port 4791), so that a capture tool that knows
 * InfiniBand (tshark -d udp.port==4791,infiniband) names each packet's
 * opcode, destination QP and PSN.
 *
 *   BTH | IBTA extension headers of the opcode | strand extension | payload
 *       | pad to 4 bytes | ICRC
 *
 * The IBTA headers (RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH) are
 * written where the IBTA puts them, for the reader of a capture. The strand
 * extension after them carries every field of a sim_pkt_t the BTH does not
 * (the requester's LID and QP, DC's channel and access key, a message's
 * offset, the path's SL and traffic class, masked atomic operands, ...):
 * the device reads the BTH and the extension; the IBTA headers must agree
 * with them. The layout is in docs/software-device.md ("The wire").
 *
 * Decoding trusts nothing: every datagram is checked for length, version,
 * opcode, partition, fabric identity, agreement of its headers and its
 * ICRC before a field is used; a rejected one names its reason.
 */
#ifndef SIM_WIRE_H_
#define SIM_WIRE_H_

#include "packet.h"

#include <stddef.h>
#include <stdint.h>

#define SIM_WIRE_UDP_PORT  4791   /* IANA: RoCEv2 */
#define SIM_WIRE_PKEY_FULL 0xffff /* the default partition, full member */

/* what a datagram is checked against: the receiving device's fabric */
typedef struct sim_wire_id {
    uint64_t fabric; /* the fabric's identity (sim_fabric_identity) */
    uint16_t pkey;   /* the partition key, BTH P_Key */
} sim_wire_id_t;

/* why a datagram was dropped (counted per reason by the receiver) */
typedef enum sim_wire_drop {
    SIM_WIRE_OK = 0,
    SIM_WIRE_DROP_SHORT,   /* shorter than its headers say */
    SIM_WIRE_DROP_VERSION, /* BTH TVer or extension version unknown */
    SIM_WIRE_DROP_OPCODE,  /* an opcode the device never sends */
    SIM_WIRE_DROP_PKEY,    /* another partition */
    SIM_WIRE_DROP_EXT,     /* no strand extension (its magic) */
    SIM_WIRE_DROP_FABRIC,  /* another fabric's identity */
    SIM_WIRE_DROP_HEADERS, /* IBTA headers disagree with the extension,
                              or fields out of range */
    SIM_WIRE_DROP_LENGTH,  /* payload length or padding inconsistent */
    SIM_WIRE_DROP_ICRC,    /* invariant CRC wrong */
    SIM_WIRE_DROP_MAX
} sim_wire_drop_t;

/* IBTA base transport header and extension header sizes */
#define SIM_WIRE_BTH_LEN       12
#define SIM_WIRE_RETH_LEN      16
#define SIM_WIRE_ATOMICETH_LEN 28
#define SIM_WIRE_AETH_LEN      4
#define SIM_WIRE_ATOMICACK_LEN 8
#define SIM_WIRE_IMMDT_LEN     4
#define SIM_WIRE_ICRC_LEN      4
/* the strand extension: base, DC access key, masked atomic operands */
#define SIM_WIRE_EXT_LEN        56
#define SIM_WIRE_EXT_DC_LEN     8
#define SIM_WIRE_EXT_ATOMIC_LEN 32
/* the most header bytes a datagram has (an atomic DC request) */
#define SIM_WIRE_MAX_HDR                                            \
    (SIM_WIRE_BTH_LEN + SIM_WIRE_ATOMICETH_LEN + SIM_WIRE_EXT_LEN + \
     SIM_WIRE_EXT_DC_LEN + SIM_WIRE_EXT_ATOMIC_LEN)
/* a datagram's bytes beside its payload, at most */
#define SIM_WIRE_OVERHEAD (SIM_WIRE_MAX_HDR + 3 + SIM_WIRE_ICRC_LEN)

/* IBTA RC opcodes (the BTH's first byte) the device sends */
enum {
    SIM_WIRE_OP_SEND_FIRST      = 0x00,
    SIM_WIRE_OP_SEND_MIDDLE     = 0x01,
    SIM_WIRE_OP_SEND_LAST       = 0x02,
    SIM_WIRE_OP_SEND_LAST_IMM   = 0x03,
    SIM_WIRE_OP_SEND_ONLY       = 0x04,
    SIM_WIRE_OP_SEND_ONLY_IMM   = 0x05,
    SIM_WIRE_OP_WRITE_FIRST     = 0x06,
    SIM_WIRE_OP_WRITE_MIDDLE    = 0x07,
    SIM_WIRE_OP_WRITE_LAST      = 0x08,
    SIM_WIRE_OP_WRITE_LAST_IMM  = 0x09,
    SIM_WIRE_OP_WRITE_ONLY      = 0x0a,
    SIM_WIRE_OP_WRITE_ONLY_IMM  = 0x0b,
    SIM_WIRE_OP_READ_REQ        = 0x0c,
    SIM_WIRE_OP_READ_RESP_FIRST = 0x0d,
    SIM_WIRE_OP_READ_RESP_MID   = 0x0e,
    SIM_WIRE_OP_READ_RESP_LAST  = 0x0f,
    SIM_WIRE_OP_READ_RESP_ONLY  = 0x10,
    SIM_WIRE_OP_ACK             = 0x11,
    SIM_WIRE_OP_ATOMIC_ACK      = 0x12,
    SIM_WIRE_OP_CMP_SWAP        = 0x13,
    SIM_WIRE_OP_FETCH_ADD       = 0x14,
    SIM_WIRE_OP_SEND_LAST_INV   = 0x16,
    SIM_WIRE_OP_SEND_ONLY_INV   = 0x17,
};

/*
 * Writes PKT with LEN = pkt->payload_len bytes of PAYLOAD as one datagram
 * into BUF (CAP bytes). A READ response's position in its message (first,
 * middle, last, only) comes from its offset, payload and dma_len (the
 * whole READ's length). Returns the datagram's length, or 0 when CAP is too
 * small or PKT holds a value the wire cannot carry.
 */
size_t sim_wire_encode(const sim_wire_id_t *id, const sim_pkt_t *pkt,
                       const void *payload, uint8_t *buf, size_t cap);

/*
 * Reads the datagram BUF (LEN bytes) into PKT (every field the sender set;
 * the rest zero) and points *PAYLOAD at its pkt->payload_len bytes inside
 * BUF. SIM_WIRE_OK, or why it must be dropped (PKT then undefined).
 */
sim_wire_drop_t sim_wire_decode(const sim_wire_id_t *id, const uint8_t *buf,
                                size_t len, sim_pkt_t *pkt,
                                const uint8_t **payload);

/* the BTH opcode PKT travels under (0xff: none) */
uint8_t sim_wire_opcode(const sim_pkt_t *pkt);

const char *sim_wire_drop_name(sim_wire_drop_t why);

#endif
