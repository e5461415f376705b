/*
 * CQE parsing (spec section 3): 64-byte CQEs in a ring of cqe_cnt (a power
 * of two) entries; software owns entry ci when its opcode is not INVALID and
 * its owner bit equals (ci / cqe_cnt) & 1.
 */
#ifndef STRAND_MLX5_CQE_H_
#define STRAND_MLX5_CQE_H_

#include "mlx5/barrier.h"

#include <infiniband/mlx5dv.h>
#include <endian.h>
#include <stdint.h>

/* The CQE slot of consumer index ci, whatever its owner. */
static inline struct mlx5_cqe64 *strand_cqe_at(void *cq_buf, uint32_t cqe_cnt,
                                               uint32_t ci)
{
    return (struct mlx5_cqe64*)cq_buf + (ci & (cqe_cnt - 1));
}

/* The CQE at ci if software owns it, else NULL. The rest of the CQE is
 * read only after the ownership check (read barrier). */
static inline struct mlx5_cqe64 *strand_cqe_get(void *cq_buf, uint32_t cqe_cnt,
                                                uint32_t ci)
{
    struct mlx5_cqe64 *cqe = strand_cqe_at(cq_buf, cqe_cnt, ci);
    uint8_t op_own         = *(volatile uint8_t*)&cqe->op_own;

    if (((op_own >> 4) == MLX5_CQE_INVALID) ||
        ((op_own & MLX5_CQE_OWNER_MASK) != !!(ci & cqe_cnt))) {
        return NULL;
    }
    strand_rmb();
    return cqe;
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
    return ((const struct mlx5_err_cqe*)cqe)->syndrome;
}

static inline uint8_t strand_cqe_vendor_syndrome(const struct mlx5_cqe64 *cqe)
{
    return ((const struct mlx5_err_cqe*)cqe)->vendor_err_synd;
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

/* Consumer index update: dbrec[0] = BE32(ci & 0xffffff). Reads of the
 * consumed CQEs complete before the device may reuse their slots. */
static inline void strand_cq_update_ci(__be32 *dbrec, uint32_t ci)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *(volatile __be32*)&dbrec[0] = htobe32(ci & 0xffffff);
}

#endif
