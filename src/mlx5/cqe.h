/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQE parsing (spec sections 3 and 9): CQEs of 64 or 128 bytes in a ring of
 * cqe_cnt (a power of two) entries; software owns entry ci when its opcode is
 * not INVALID and its owner bit equals (ci / cqe_cnt) & 1. A 128-byte CQE
 * keeps the 64-byte `struct mlx5_cqe64` in its second half; its first half
 * holds up to 64 bytes of a message scattered to the CQE.
 */
#ifndef STRAND_MLX5_CQE_H_
#define STRAND_MLX5_CQE_H_

#include "mlx5/barrier.h"

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stdint.h>

/* CQ doorbell record words (rdma-core's MLX5_CQ_SET_CI / MLX5_CQ_ARM_DB) */
#define STRAND_CQ_DBR_CI  0
#define STRAND_CQ_DBR_ARM 1

#define STRAND_CQE_SHIFT_64  6
#define STRAND_CQE_SHIFT_128 7

/* log2 of a CQE size the data path can parse (mlx5dv_cq.cqe_size), or 0. */
static inline unsigned strand_cqe_shift(uint32_t cqe_size)
{
    return (cqe_size == 64)  ? STRAND_CQE_SHIFT_64 :
           (cqe_size == 128) ? STRAND_CQE_SHIFT_128 :
                               0;
}

/* The 64-byte CQE of consumer index ci, whatever its owner: the last 64
 * bytes of its slot. */
static inline struct mlx5_cqe64 *
strand_cqe_at(void *cq_buf, uint32_t cqe_cnt, unsigned cqe_shift, uint32_t ci)
{
    return (struct mlx5_cqe64 *)((uint8_t *)cq_buf +
                                 ((((ci & (cqe_cnt - 1)) + 1) << cqe_shift) -
                                  sizeof(struct mlx5_cqe64)));
}

/* The CQE at ci if software owns it, else NULL. The rest of the CQE is
 * read only after the ownership check (read barrier). */
static inline struct mlx5_cqe64 *
strand_cqe_get(void *cq_buf, uint32_t cqe_cnt, unsigned cqe_shift, uint32_t ci)
{
    struct mlx5_cqe64 *cqe    = strand_cqe_at(cq_buf, cqe_cnt, cqe_shift, ci);
    uint8_t            op_own = *(volatile uint8_t *)&cqe->op_own;

    if (((op_own >> 4) == MLX5_CQE_INVALID) ||
        ((op_own & MLX5_CQE_OWNER_MASK) != !!(ci & cqe_cnt))) {
        return NULL;
    }
    strand_dma_rmb();
    return cqe;
}

/*
 * Every CQE of a new CQ marked as the hardware's for the first pass
 * (opcode INVALID, owner bit 1), as UCX does for its CQs: the device
 * writes the first pass with owner bit 0, so a slot it has not written
 * yet never looks like software's, and a polling loop needs no look at
 * the opcode to tell (strand_cq_cursor_get). Called on a CQ nothing
 * completes to yet; one whose CQE size the data path cannot parse is
 * left alone (its user refuses it).
 */
static inline void
strand_cq_mark_hw_owned(void *cq_buf, uint32_t cqe_cnt, uint32_t cqe_size)
{
    unsigned cqe_shift = strand_cqe_shift(cqe_size);
    uint32_t i;

    for (i = 0; (cqe_shift != 0) && i < cqe_cnt; ++i) {
        strand_cqe_at(cq_buf, cqe_cnt, cqe_shift, i)->op_own =
                (MLX5_CQE_INVALID << 4) | MLX5_CQE_OWNER_MASK;
    }
}

/*
 * A polling loop's walk over a CQ marked by strand_cq_mark_hw_owned. It
 * holds the address of the CQE at the consumer index and the owner bit of
 * the current pass, so that looking at a CQE is one load and one compare,
 * and stepping to the next one is an add and a compare (strand_cqe_get
 * recomputes the address and the pass from ci each time, and looks at the
 * opcode too). The ring is walked in runs of `run` CQEs (a power of two
 * that divides cqe_cnt): a run's end is where a loop that holds CQEs back
 * writes its consumer index, and where the walk wraps.
 */
typedef struct strand_cq_cursor {
    uint8_t *cqe;      /* the 64-byte CQE at the consumer index */
    uint8_t *stop;     /* the first CQE past the current run */
    uint8_t *base;     /* the 64-byte CQE of slot 0 (the last 64 bytes
                          of a 128-byte slot) */
    uint8_t *end;      /* base + the ring's size: slot cqe_cnt */
    uint32_t run_size; /* bytes of a run */
    uint32_t stride;   /* bytes of a slot */
    uint8_t  owner;    /* the owner bit software owns in this pass */
} strand_cq_cursor_t;

/* The cursor at consumer index ci of a ring of cqe_cnt slots of
 * 1 << cqe_shift bytes, in runs of run CQEs (at most the ring). */
static inline void strand_cq_cursor_init(strand_cq_cursor_t *cur, void *cq_buf,
                                         uint32_t cqe_cnt, unsigned cqe_shift,
                                         uint32_t ci, uint32_t run)
{
    uint32_t slot = ci & (cqe_cnt - 1);

    run           = (run < cqe_cnt) ? run : cqe_cnt;
    cur->stride   = 1u << cqe_shift;
    cur->base     = (uint8_t *)cq_buf + cur->stride - sizeof(struct mlx5_cqe64);
    cur->end      = cur->base + ((size_t)cqe_cnt << cqe_shift);
    cur->cqe      = cur->base + ((size_t)slot << cqe_shift);
    cur->run_size = run << cqe_shift;
    cur->stop  = cur->base + ((size_t)((slot & ~(run - 1)) + run) << cqe_shift);
    cur->owner = !!(ci & cqe_cnt);
}

/* The CQE at the cursor if software owns it (then *op_own is its opcode
 * and owner byte), else NULL; the rest of the CQE is read after the
 * barrier. */
static inline struct mlx5_cqe64 *
strand_cq_cursor_get(const strand_cq_cursor_t *cur, uint8_t *op_own)
{
    *op_own = *(volatile uint8_t *)&((struct mlx5_cqe64 *)cur->cqe)->op_own;
    if ((*op_own & MLX5_CQE_OWNER_MASK) != cur->owner) {
        return NULL;
    }
    strand_dma_rmb();
    return (struct mlx5_cqe64 *)cur->cqe;
}

/* Whether software owns the CQE at the cursor (a peek: nothing of it is
 * read). */
static inline int strand_cq_cursor_ready(const strand_cq_cursor_t *cur)
{
    return (*(volatile uint8_t *)&((struct mlx5_cqe64 *)cur->cqe)->op_own &
            MLX5_CQE_OWNER_MASK) == cur->owner;
}

/* A run ended: the next one, from slot 0 in the next pass at the ring's
 * end. */
static inline void strand_cq_cursor_next_run(strand_cq_cursor_t *cur)
{
    if (cur->cqe == cur->end) {
        cur->cqe = cur->base;
        cur->owner ^= 1;
    }
    cur->stop = cur->cqe + cur->run_size;
}

/* The cursor at the next CQE; 1 when that one starts a run (the consumer
 * index is a multiple of run now). */
static inline int strand_cq_cursor_step(strand_cq_cursor_t *cur)
{
    cur->cqe += cur->stride;
    if (__builtin_expect(cur->cqe == cur->stop, 0)) {
        strand_cq_cursor_next_run(cur);
        return 1;
    }
    return 0;
}

/*
 * A signature error CQE (opcode MLX5_CQE_SIG_ERR): a transfer through the
 * signature mkey `mkey` found a bad block. It belongs to no WQE: the WQE
 * itself completes as usual. mlx5dv.h has no struct for it; the layout is
 * the one rdma-core's provider parses (providers/mlx5/cq.c). For CRC
 * signatures the CRCs are in the trans_sig words; for T10-DIF the guard is
 * bits 31:16 and the application tag bits 15:0 of trans_sig, the reference
 * tag in ref_tag.
 */
struct strand_sigerr_cqe {
    uint8_t rsvd0[16];
    __be32  expected_trans_sig;
    __be32  actual_trans_sig;
    __be32  expected_ref_tag;
    __be32  actual_ref_tag;
    __be16  syndrome; /* STRAND_SIGERR_SYNDROME_* */
    uint8_t sig_type; /* 0: block signature */
    uint8_t domain;   /* STRAND_SIGERR_DOMAIN_* */
    __be32  mkey;
    __be64  sig_err_offset;
    uint8_t rsvd30[14];
    uint8_t signature;
    uint8_t op_own;
};

enum {
    STRAND_SIGERR_SYNDROME_REFTAG = 1 << 11,
    STRAND_SIGERR_SYNDROME_APPTAG = 1 << 12,
    STRAND_SIGERR_SYNDROME_GUARD  = 1 << 13,
    STRAND_SIGERR_DOMAIN_WIRE     = 0,
    STRAND_SIGERR_DOMAIN_MEMORY   = 1,
    STRAND_SIGERR_TYPE_BLOCK      = 0,
};

static inline uint32_t strand_sigerr_cqe_mkey(const struct mlx5_cqe64 *cqe)
{
    return be32toh(((const struct strand_sigerr_cqe *)(const void *)cqe)->mkey);
}

/* op_own without the solicited-event and owner bits: the opcode and the
 * CQE format (scatter-to-CQE) */
#define STRAND_CQE_OP_FORMAT_MASK 0xfc

/* The most a CQE holds of a scattered message (a 128-byte CQE's first half) */
#define STRAND_CQE_INLINE_MAX 64

/* Scatter-to-CQE: the data of a small message delivered in the CQE instead
 * of the receive buffer (op_own INLINE_SCATTER_32: the first 32 bytes of the
 * 64-byte CQE; INLINE_SCATTER_64: the 64 bytes before it in a 128-byte
 * CQE), or NULL when the data went to the buffer. byte_cnt says how much. */
static inline const void *strand_cqe_inline_data(const struct mlx5_cqe64 *cqe)
{
    if (cqe->op_own & MLX5_INLINE_SCATTER_32) {
        return cqe;
    }
    if (cqe->op_own & MLX5_INLINE_SCATTER_64) {
        return cqe - 1;
    }
    return NULL;
}

static inline uint8_t strand_cqe_opcode(const struct mlx5_cqe64 *cqe)
{
    return cqe->op_own >> 4;
}

static inline uint8_t strand_cqe_se(const struct mlx5_cqe64 *cqe)
{
    return (cqe->op_own >> 1) & 1;
}

static inline int strand_cqe_is_error(const struct mlx5_cqe64 *cqe)
{
    uint8_t op = strand_cqe_opcode(cqe);

    return (op == MLX5_CQE_REQ_ERR) || (op == MLX5_CQE_RESP_ERR);
}

/* Error CQEs only (REQ_ERR / RESP_ERR). */
static inline uint8_t strand_cqe_syndrome(const struct mlx5_cqe64 *cqe)
{
    return ((const struct mlx5_err_cqe *)cqe)->syndrome;
}

static inline uint8_t strand_cqe_vendor_syndrome(const struct mlx5_cqe64 *cqe)
{
    return ((const struct mlx5_err_cqe *)cqe)->vendor_err_synd;
}

static inline uint16_t strand_cqe_wqe_counter(const struct mlx5_cqe64 *cqe)
{
    return be16toh(cqe->wqe_counter);
}

static inline uint32_t strand_cqe_byte_cnt(const struct mlx5_cqe64 *cqe)
{
    return be32toh(cqe->byte_cnt);
}

static inline uint32_t strand_cqe_qpn(const struct mlx5_cqe64 *cqe)
{
    return be32toh(cqe->sop_drop_qpn) & 0xffffff;
}

/* Requester CQEs: the opcode of the WQE (bits 31:24 of sop_drop_qpn). */
static inline uint8_t strand_cqe_wqe_opcode(const struct mlx5_cqe64 *cqe)
{
    return (uint8_t)(be32toh(cqe->sop_drop_qpn) >> 24);
}

/* CQE version 1: user index of the QP / SRQ (low 24 bits of srqn_uidx). */
static inline uint32_t strand_cqe_user_index(const struct mlx5_cqe64 *cqe)
{
    return be32toh(cqe->srqn_uidx) & 0xffffff;
}

/* Immediate as sent (network order) / invalidated rkey. */
static inline uint32_t strand_cqe_imm(const struct mlx5_cqe64 *cqe)
{
    return cqe->imm_inval_pkey;
}

/* What an error CQE's syndrome means (spec section 3), for messages. */
static inline const char *strand_cqe_syndrome_str(uint8_t syndrome)
{
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
        return "local length error";
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
        return "local QP operation error";
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
        return "local protection error";
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
        return "flushed";
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:
        return "memory window bind error";
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
        return "bad response";
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
        return "local access error";
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
        return "remote invalid request";
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
        return "remote access error";
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
        return "remote operation error";
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
        return "transport retry count exceeded";
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
        return "RNR retry count exceeded";
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
        return "remote aborted";
    default:
        return "unknown syndrome";
    }
}

/* Consumer index update: dbrec[0] = BE32(ci & 0xffffff). Reads of the
 * consumed CQEs complete before the device may reuse their slots. */
static inline void strand_cq_update_ci(__be32 *dbrec, uint32_t ci)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *(volatile __be32 *)&dbrec[STRAND_CQ_DBR_CI] = htobe32(ci & 0xffffff);
}

/*
 * Arm the CQ for one completion event (spec sections 3 and 9), the way a
 * direct-verbs user must: with its own consumer index `ci` and arm sequence
 * number `sn` (advanced by one for every event it received), the doorbell
 * record first, then a 64-bit write to the CQ's UAR page. `solicited`: only a
 * solicited (or error) CQE raises the event.
 */
static inline void strand_cq_arm(__be32 *dbrec, void *cq_uar, uint32_t cqn,
                                 uint32_t sn, uint32_t ci, int solicited)
{
    uint32_t cmd = solicited ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
    uint32_t val = ((sn & 3) << 28) | cmd | (ci & 0xffffff);
    uint64_t db  = ((uint64_t)val << 32) | cqn;

    *(volatile __be32 *)&dbrec[STRAND_CQ_DBR_ARM] = htobe32(val);
    /* the record before the doorbell write (write-combining memory) */
    strand_mmio_wmb();
    *(volatile uint64_t *)((uint8_t *)cq_uar + MLX5_CQ_DOORBELL) = htobe64(db);
    strand_mmio_wmb();
}

#endif
