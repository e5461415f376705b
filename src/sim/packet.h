/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets of the software device, modelled on InfiniBand's transport
 * headers: BTH (opcode, PSN, destination QP/DCT), RETH (va, rkey, length),
 * AtomicETH, AETH (ACK/NAK syndrome), ImmDt, and a DC extension (source DCI,
 * access key). Host byte order: every process on a fabric shares one host.
 */
#ifndef SIM_PACKET_H_
#define SIM_PACKET_H_

#include <stddef.h>
#include <stdint.h>

typedef enum sim_pkt_op {
    SIM_PKT_SEND_FIRST = 1,
    SIM_PKT_SEND_MIDDLE,
    SIM_PKT_SEND_LAST,
    SIM_PKT_SEND_ONLY,
    SIM_PKT_WRITE_FIRST,
    SIM_PKT_WRITE_MIDDLE,
    SIM_PKT_WRITE_LAST,
    SIM_PKT_WRITE_ONLY,
    SIM_PKT_READ_REQ,
    SIM_PKT_ATOMIC_REQ,
    /* responder -> requester */
    SIM_PKT_ACK,       /* aeth: syndrome SIM_AETH_* */
    SIM_PKT_READ_RESP, /* one per MTU; psn = request psn + segment */
    SIM_PKT_ATOMIC_RESP,
} sim_pkt_op_t;

enum {
    SIM_PKT_F_IMM     = 1u << 0, /* imm valid (SEND/WRITE _IMM) */
    SIM_PKT_F_SE      = 1u << 1, /* solicited event */
    SIM_PKT_F_CONNECT = 1u << 2, /* first packet of a flow: responder
                                    resets its expected PSN to psn */
    SIM_PKT_F_INV     = 1u << 3, /* SEND with invalidate */
    SIM_PKT_F_RETRY   = 1u << 4, /* retransmission */
    SIM_PKT_F_ACKREQ  = 1u << 5, /* responder acknowledges this PSN */
    SIM_PKT_F_DC      = 1u << 6, /* a DC request: dc_key present */
    SIM_PKT_F_CORRUPT = 1u << 7, /* ICRC failed (fault injection) */
};

/* xflags of WRITE requests, READ requests and READ responses */
enum {
    SIM_PKT_X_ONECOPY = 1u << 0, /* the data moves in one copy
                                    (sim_onecopy.c): a WRITE carries a
                                    descriptor, a READ has one response
                                    naming the responder's process */
};

/* AETH syndromes (IBA 9.7.5.1.4, simplified). */
enum {
    SIM_AETH_ACK         = 0,
    SIM_AETH_RNR_NAK     = 1,
    SIM_AETH_NAK_PSN_SEQ = 2, /* out of sequence: go back to psn */
    SIM_AETH_NAK_INV_REQ = 3, /* -> REM_INV_REQ_ERR */
    SIM_AETH_NAK_ACCESS  = 4, /* -> REM_ACCESS_ERR */
    SIM_AETH_NAK_OP      = 5, /* -> REM_OP_ERR */
};

/* Masked atomic selector in atomic requests (mirrors WQE opmod). */
enum {
    SIM_ATOMIC_CS = 0,
    SIM_ATOMIC_FA,
    SIM_ATOMIC_MASKED_CS,
    SIM_ATOMIC_MASKED_FA,
};

/* Headers travel with only the parts an operation needs: the base header
 * with RETH (48 bytes), then the DC access key (DC requests), then the
 * atomic operands (atomic requests and responses). A small RC packet then
 * fits one cache line of a fabric ring slot. */
typedef struct sim_pkt {
    uint8_t op;    /* sim_pkt_op_t */
    uint8_t flags; /* SIM_PKT_F_* */
    union {
        uint8_t syndrome; /* ACK: SIM_AETH_*; RNR: timer */
        uint8_t xflags;   /* WRITE, READ request and response:
                             SIM_PKT_X_* */
    };
    uint8_t  atomic_op; /* SIM_ATOMIC_*; RNR NAK: min_rnr_timer */
    uint16_t slid;
    uint16_t payload_len;
    uint32_t dqpn : 24;  /* destination QP number or DCT number */
    uint32_t sl : 8;     /* service level (IB: the LRH's; RoCE: the
                            priority) */
    uint32_t sqpn : 24;  /* source QP number */
    uint32_t tclass : 8; /* the GRH's traffic class (0 without one) */
    uint32_t psn;
    uint32_t imm;         /* as in the WQE (network order) */
    uint32_t rkey;        /* RETH */
    uint32_t dma_len;     /* RETH length (whole message) */
    uint32_t offset;      /* payload offset within the message */
    uint8_t  atomic_size; /* 4 or 8 */
    uint8_t  log_mtu;     /* requester's path MTU: READ response size */
    uint16_t chan;        /* DC: the DCI channel the request travels on
                             (a connection of its own); echoed back */
    uint64_t va;          /* RETH / atomic address */
    /* --- SIM_PKT_F_DC only */
    uint64_t dc_key; /* DCT access key */
    /* --- atomic requests and responses only */
    uint64_t swap_add; /* operand; the fetched value in a response */
    uint64_t compare;
    uint64_t swap_mask;
    uint64_t compare_mask;
} sim_pkt_t;

#define SIM_PKT_HDR_BASE   offsetof(sim_pkt_t, dc_key)
#define SIM_PKT_HDR_DC     offsetof(sim_pkt_t, swap_add)
#define SIM_PKT_HDR_ATOMIC sizeof(sim_pkt_t)

/* Responses a READ request gets: one per path MTU of its length (at
 * least one), or one when its data moves in one copy. */
static inline uint32_t sim_pkt_read_npkts(const sim_pkt_t *pkt)
{
    uint32_t n = (pkt->dma_len + (1u << pkt->log_mtu) - 1) >> pkt->log_mtu;

    if (pkt->xflags & SIM_PKT_X_ONECOPY) {
        return 1;
    }
    return n ? n : 1;
}

/* Bytes of header a packet carries on the wire. */
static inline size_t sim_pkt_hdr_len(const sim_pkt_t *pkt)
{
    if ((pkt->op == SIM_PKT_ATOMIC_REQ) || (pkt->op == SIM_PKT_ATOMIC_RESP)) {
        return SIM_PKT_HDR_ATOMIC;
    }
    return (pkt->flags & SIM_PKT_F_DC) ? SIM_PKT_HDR_DC : SIM_PKT_HDR_BASE;
}

#endif
