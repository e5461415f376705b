/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The WQE parser: what the bytes of a send WQE say (spec section 1), into
 * the device's record of it (sim_wqe_t), with the checks a NIC makes when
 * it fetches one (opcode, segments, keys). The requester parses what it
 * fetches; the completer parses what it flushes unfetched.
 */
#include "sim.h"
#include "sim_parse.h"
#include "sim_onecopy.h"
#include "sim_sig.h"

#include <string.h>

static bool sim_opcode_is_masked_atomic(uint8_t op)
{
    return (op == MLX5_OPCODE_ATOMIC_MASKED_CS) ||
           (op == MLX5_OPCODE_ATOMIC_MASKED_FA);
}

/* The device executes the opcode (STRAND_SIM_ATOMICS, STRAND_SIM_CAPS). */
static bool sim_opcode_supported(const sim_config_t *cfg, uint8_t op)
{
    if (sim_opcode_is_masked_atomic(op)) {
        return cfg->masked_atomics;
    }
    return !sim_opcode_is_atomic(op) || cfg->atomics;
}

/* A data segment naming an mkey: zero-based, the WQE's only data segment,
 * on a SEND, WRITE or READ (an atomic's result goes to a memory region). */
static int sim_parse_mkey_seg(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t unit,
                              uint32_t ds, uint32_t lkey, uint64_t off,
                              uint32_t len, int access)
{
    int ret;

    if ((w->num_sge != 0) || (unit + 1 != ds) ||
        sim_opcode_is_atomic(w->opcode)) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    ret = sim_mkey_check_op(qp->ctx, qp->pd, sim_mkey_lookup(qp->ctx, lkey),
                            off, len, access, false);
    if (ret != 0) {
        return ret;
    }
    w->via_mkey    = true;
    w->sge[0].addr = off;
    w->sge[0].len  = len;
    w->sge[0].lkey = lkey;
    w->num_sge     = 1;
    w->length      = len;
    return 0;
}

/* Read the data segments from `unit` to the end of the WQE into w->sge,
 * checking local keys. Returns 0 or a syndrome. */
static int sim_parse_data(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t unit,
                          uint32_t ds, int access)
{
    const struct mlx5_wqe_data_seg *dseg;
    uint32_t                        bc, lkey;
    uint64_t                        addr;
    int                             ret;

    w->num_sge = 0;
    w->length  = 0;
    if (unit >= ds) {
        return 0;
    }
    if (sim_unit_is_inline(qp, w->bb, unit)) {
        return sim_parse_inline(qp, w, unit, ds, access);
    }
    for (; unit < ds; ++unit) {
        dseg = sim_sq_unit(qp, w->bb, unit);
        bc   = be32toh(dseg->byte_count);
        lkey = be32toh(dseg->lkey);
        addr = be64toh(dseg->addr);
        if (w->num_sge == SIM_MAX_SGE) {
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        }
        if (bc == 0) {
            continue; /* the provider never emits these; tolerate */
        }
        if (sim_mkey_lookup(qp->ctx, lkey) != NULL) {
            ret = sim_parse_mkey_seg(qp, w, unit, ds, lkey, addr, bc, access);
            if (ret != 0) {
                return ret;
            }
            continue;
        }
        ret = sim_mr_check_local(qp->ctx, qp->pd, lkey, addr, bc, access);
        if (ret != 0) {
            return ret;
        }
        w->sge[w->num_sge].addr = addr;
        w->sge[w->num_sge].len  = bc;
        w->sge[w->num_sge].lkey = lkey;
        w->num_sge++;
        w->length += bc;
    }
    return 0;
}

static int sim_parse_atomic(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t *unit)
{
    const uint8_t *seg = sim_sq_unit(qp, w->bb, *unit);
    const uint8_t *seg2;
    uint32_t       v[4];

    if ((w->opcode == MLX5_OPCODE_ATOMIC_CS) ||
        (w->opcode == MLX5_OPCODE_ATOMIC_FA)) {
        const struct mlx5_wqe_atomic_seg *a = (const void *)seg;
        w->atomic_size                      = 8;
        w->atomic_op = (w->opcode == MLX5_OPCODE_ATOMIC_CS) ? SIM_ATOMIC_CS :
                                                              SIM_ATOMIC_FA;
        w->swap_add  = be64toh(a->swap_add);
        w->compare   = be64toh(a->compare);
        *unit += 1;
        return 0;
    }

    /* masked: opmod = 0x08 | (log2(size) - 2) */
    if ((w->opmod & 0x08) == 0) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    w->atomic_size = 1u << ((w->opmod & 0x7) + 2);
    w->atomic_op   = (w->opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) ?
                             SIM_ATOMIC_MASKED_CS :
                             SIM_ATOMIC_MASKED_FA;
    if (w->atomic_size == 4) {
        memcpy(v, seg, sizeof(v));
        w->swap_add     = be32toh(v[0]);
        w->compare      = be32toh(v[1]);
        w->swap_mask    = be32toh(v[2]);
        w->compare_mask = be32toh(v[3]);
        *unit += 1;
    } else if (w->atomic_size == 8) {
        uint64_t q[2];
        memcpy(q, seg, sizeof(q));
        w->swap_add = be64toh(q[0]);
        w->compare  = be64toh(q[1]);
        if (w->atomic_op == SIM_ATOMIC_MASKED_CS) {
            seg2 = sim_sq_unit(qp, w->bb, *unit + 1);
            memcpy(q, seg2, sizeof(q));
            w->swap_mask    = be64toh(q[0]);
            w->compare_mask = be64toh(q[1]);
            *unit += 2;
        } else {
            *unit += 1;
        }
    } else {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    if (w->atomic_op == SIM_ATOMIC_MASKED_FA) {
        /* {add, field_boundary}: the boundary travels in compare */
        w->swap_mask = w->compare;
    }
    return 0;
}

/* Parse the WQE at BB `bb` into `w`. Returns 0 or a syndrome; on a syndrome
 * w->bbs is still set so the SQ can move past the WQE. */
int sim_parse_wqe(smlx5_qp_t *qp, uint32_t bb, sim_wqe_t *w,
                  smlx5_dc_target_t *dc)
{
    uint32_t                  ds, unit = 1;
    const struct mlx5_wqe_av *av;
    int                       access = 0;
    int                       ret;

    memset(w, 0, offsetof(sim_wqe_t, sge));
    ret = sim_parse_ctrl(qp, bb, w, &ds);
    if (ret != 0) {
        return ret;
    }
    if (qp->type == SMLX5_QPT_DCI) {
        /* every WQE of a DCI carries its address vector, a NOP included
         * (UCX's NOPs do): a ds without room for it is a malformed WQE */
        av = sim_sq_unit(qp, bb, 1);
        unit += (be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) ? 3 : 1;
        if (unit > ds) {
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        }
        if (w->opcode != MLX5_OPCODE_NOP) {
            dc->dc_key = be64toh(av->key.dc_key);
            dc->dctn   = be32toh(av->dqp_dct) & 0xffffff;
            dc->dlid   = sim_av_route(qp->ctx, av);
            sim_av_qos(qp->ctx, av, &w->sl, &w->tclass);
        }
    }
    if (w->opcode == MLX5_OPCODE_NOP) {
        return 0;
    }

    switch (w->opcode) {
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM:
    case MLX5_OPCODE_SEND_INVAL:
        break;
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_RDMA_READ:
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
        if (unit >= ds) {
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        }
        sim_parse_raddr(qp, w, unit++);
        break;
    default:
        /* UMR, SET_PSV, TAG_MATCHING, ... are not for this QP */
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }

    w->needs_response = sim_opcode_needs_response(w->opcode);
    if (!sim_opcode_supported(&qp->ctx->cfg, w->opcode)) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR; /* no such capability */
    }
    if (sim_opcode_is_atomic(w->opcode)) {
        if (unit >= ds) {
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        }
        ret = sim_parse_atomic(qp, w, &unit);
        if (ret != 0) {
            return ret;
        }
        access = IBV_ACCESS_LOCAL_WRITE;
    } else if (w->opcode == MLX5_OPCODE_RDMA_READ) {
        access = IBV_ACCESS_LOCAL_WRITE;
    }

    ret = sim_parse_data(qp, w, unit, ds, access);
    if (ret != 0) {
        return ret;
    }
    if (sim_opcode_is_atomic(w->opcode) &&
        ((w->num_sge != 1) || (w->length < w->atomic_size))) {
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
    if (sim_opcode_is_atomic(w->opcode)) {
        w->length = w->atomic_size;
    }
    return 0;
}
