/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Indirect and signature mkeys of the software device (sim_mkey.c: the
 * objects and their configuration; sim_sig.c: data through them).
 *
 * An mkey is zero-based: an operation names an offset into it, not a
 * virtual address. Through a signature mkey, offsets and lengths count the
 * bytes the operation carries on the link: the data plus, when the wire
 * domain has a signature, one signature field after every block (the
 * convention of signature MRs in the kernel's iSER and rdma_rw code, where
 * the length is data plus protection). The memory behind it is the layout
 * (a list of registered buffers), with a signature field after every block
 * when the memory domain has one. docs/software-device.md, "Signature
 * mkeys", says what the device chose where rdma-core does not say.
 */
#ifndef SIM_SIM_SIG_H_
#define SIM_SIM_SIG_H_

#include "sim.h"

typedef enum sim_sig_kind {
    SIM_SIG_NONE,
    SIM_SIG_CRC32,
    SIM_SIG_CRC32C,
    SIM_SIG_T10DIF_CRC,  /* guard: CRC16 (T10) */
    SIM_SIG_T10DIF_CSUM, /* guard: IP checksum */
} sim_sig_kind_t;

/* One signature domain (memory or wire). */
typedef struct sim_sig_domain {
    uint8_t  kind;    /* sim_sig_kind_t */
    uint8_t  size;    /* bytes of its field per block: 0, 4 or 8 */
    uint32_t seed;    /* CRC32(C): initial value; T10-DIF: guard seed */
    uint16_t app_tag; /* T10-DIF */
    uint32_t ref_tag;
    uint16_t dif_flags; /* MLX5DV_SIG_T10DIF_FLAG_* */
} sim_sig_domain_t;

/* A signature error as the SIG_ERR CQE reports it. */
typedef struct sim_sig_err {
    uint16_t syndrome; /* STRAND_SIGERR_SYNDROME_* */
    uint8_t  domain;   /* STRAND_SIGERR_DOMAIN_* */
    uint64_t expected; /* trans_sig << 32 | ref_tag, as in the CQE */
    uint64_t actual;
    uint64_t offset; /* data offset of the block, from the mkey's 0 */
} sim_sig_err_t;

typedef struct sim_mkey_entry {
    uint64_t addr;
    uint32_t len;
    uint32_t lkey; /* a memory region of the same PD */
} sim_mkey_entry_t;

struct smlx5_mkey {
    smlx5_context_t *ctx;
    smlx5_pd_t      *pd;
    smlx5_mr_t      *slot; /* its entry in the key table */
    uint32_t         key;  /* lkey == rkey */
    uint32_t         create_flags;
    uint16_t         max_entries;
    /* configuration (smlx5_mkey_configure) */
    bool              configured;
    int               access; /* IBV_ACCESS_* */
    uint16_t          num_entries;
    sim_mkey_entry_t *entries;  /* [max_entries] */
    uint64_t          mem_len;  /* bytes of the layout */
    uint64_t          data_len; /* of them data (no memory signatures) */
    uint64_t          wire_len; /* what operations address */
    bool              sig;      /* block signature configured */
    uint32_t          bs;       /* data bytes per block */
    sim_sig_domain_t  mem, wire;
    uint8_t           check_mask;
    /* device: the mkey context's signature error counts (spec section 9,
     * PRM mkey context sig_err_cnt: one bit). The device counts the errors
     * it reported; a configuration (UMR) that carries the count writes
     * `expected`. An error is reported only while the mkey is armed,
     * (reported + 1) & 1 == expected; reporting one disarms it, and only
     * a configuration with the next count re-arms it. Unarmed, a bad block
     * passes as good: no SIG_ERR CQE, no SQ stop. */
    uint8_t sigerr_reported;
    uint8_t sigerr_expected; /* 0 at creation: not armed */
    /* provider: what smlx5_poll_cq took from SIG_ERR CQEs, for
     * smlx5_mkey_check and the count the next configuration writes (as
     * rdma-core's mkey->sig: err_count from 1, written when updated) */
    bool          err_exists;
    sim_sig_err_t err_info;
    uint32_t      err_count;
    bool          err_count_updated;
    /* fault injection (smlx5_mkey_corrupt_block): the block, -1 none */
    int64_t corrupt_block;
    int     corrupt_where;
};

/* The mkey of a key, or NULL (a memory region, or nothing). */
smlx5_mkey_t *sim_mkey_lookup(smlx5_context_t *ctx, uint32_t key);

/* An operation of `len` bytes at zero-based `off` may go through mk:
 * configured, its buffers still registered, in bounds, at a block
 * boundary, with `access` (IBV_ACCESS_*) allowed (local: LOCAL_WRITE;
 * remote: REMOTE_READ / REMOTE_WRITE). Returns 0, or the local or remote
 * syndrome (MLX5_CQE_SYNDROME_*) depending on `remote`. */
int sim_mkey_check_op(smlx5_context_t *ctx, smlx5_pd_t *pd,
                      const smlx5_mkey_t *mk, uint64_t off, uint64_t len,
                      int access, bool remote);

/* Who is told about a signature error: the CQ that gets the SIG_ERR CQE,
 * and the requester QP whose SQ then stops (NULL: a responder). */
typedef struct sim_sig_report {
    smlx5_cq_t *cq;
    smlx5_qp_t *requester;
} sim_sig_report_t;

/* Transmit: the wire bytes [off, off + len) of mk into dst (random access:
 * every block touched is read and checked or signed whole, so a
 * retransmission gives the same bytes). */
void sim_sig_tx(smlx5_mkey_t *mk, uint64_t off, uint8_t *dst, uint32_t len,
                const sim_sig_report_t *rep);

/* Receive: wire bytes at `off` (the next in the transfer's stream `st`,
 * else ignored) into mk's memory, checking signatures as blocks end. */
void sim_sig_rx_start(sim_sig_rx_t *st, uint64_t off);
void sim_sig_rx(smlx5_mkey_t *mk, sim_sig_rx_t *st, uint64_t off,
                const uint8_t *src, uint32_t len, const sim_sig_report_t *rep);

/* A signature error of mk: the SIG_ERR CQE (the first since the mkey was
 * configured) and, on a requester with signature pipelining, the SQ
 * stops before its next fenced WQE. */
void sim_sig_report(smlx5_mkey_t *mk, const sim_sig_err_t *err,
                    const sim_sig_report_t *rep);

/* Provider: a SIG_ERR CQE polled (smlx5_poll_cq) marks its mkey. */
void sim_mkey_take_sigerr(smlx5_context_t *ctx, const void *cqe);

#endif
