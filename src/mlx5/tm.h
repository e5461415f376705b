/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching on the wire and in WQEs (spec section 4): the TAG_MATCHING
 * list-operation segment, and the headers a tagged SEND starts with (TMH;
 * for a rendezvous also RVH and, on DC, RAVH). Layouts are rdma-core's
 * (mlx5dv.h, tm_types.h); only RAVH, which rdma-core does not define, is
 * defined here.
 */
#ifndef STRAND_MLX5_TM_H_
#define STRAND_MLX5_TM_H_

#include <infiniband/mlx5dv.h>
#include <infiniband/tm_types.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

/* struct mlx5_wqe_tm_seg opcode (<< 4) and flags */
#define STRAND_TM_OP_NOP      0x0
#define STRAND_TM_OP_APPEND   0x1
#define STRAND_TM_OP_REMOVE   0x2
#define STRAND_TM_FLAG_CQE    0x80 /* MLX5_SRQ_FLAG_TM_CQE_REQ */
#define STRAND_TM_FLAG_SW_CNT 0x40 /* MLX5_SRQ_FLAG_TM_SW_CNT */

/* CQE byte 40 (app) and 41 (app_op) of tag-matching completions */
#define STRAND_CQE_APP_TM                 1
#define STRAND_CQE_APP_OP_TM_CONSUMED     0x1
#define STRAND_CQE_APP_OP_TM_EXPECTED     0x2
#define STRAND_CQE_APP_OP_TM_UNEXPECTED   0x3
#define STRAND_CQE_APP_OP_TM_NO_TAG       0x4
#define STRAND_CQE_APP_OP_TM_APPEND       0x5
#define STRAND_CQE_APP_OP_TM_REMOVE       0x6
#define STRAND_CQE_APP_OP_TM_NOOP         0x7
#define STRAND_CQE_APP_OP_TM_CONSUMED_MSG 0xA
#define STRAND_TM_CQE_SUCCESS             0x80000000u /* MLX5_TMC_SUCCESS */

/* RAVH: where a DC receiver's device READs a rendezvous back from (the
 * sender's DCT and its access key); follows the RVH. */
struct strand_ravh {
    __be32 sl_dct; /* DCT number, bits 23:0 */
    __be32 reserved;
    __be64 dc_access_key;
};

/* strand's use of the TMH's reserved bytes (a device matches on the
 * opcode and the tag only, and hands all 16 bytes on: in the CQE of a
 * matched message, in the buffer of an unexpected one):
 * - an EAGER TMH with STRAND_TMH_RTS in reserved[0] is the request of a
 *   rendezvous the receiver's transport reads itself (rc_strand; its
 *   payload: common/tm_list.h strand_tm_rts_t); the device takes it for an
 *   eager message and reads nothing;
 * - a FIN's reserved[0] is the receiver's status, an int8 ucs_status_t
 *   (0: the data arrived; a device's own FIN has 0 there). */
#define STRAND_TMH_RTS 0x80

#define STRAND_TMH_SIZE  ((unsigned)sizeof(struct ibv_tmh))     /* 16 */
#define STRAND_RVH_SIZE  ((unsigned)sizeof(struct ibv_rvh))     /* 16 */
#define STRAND_RAVH_SIZE ((unsigned)sizeof(struct strand_ravh)) /* 16 */

/* The 32-byte list-operation segment after the ctrl segment. */
static inline void
strand_set_tm_seg(struct mlx5_wqe_tm_seg *seg, unsigned op, uint8_t flags,
                  uint16_t index, uint16_t sw_cnt, uint64_t tag, uint64_t mask)
{
    memset(seg, 0, sizeof(*seg));
    seg->opcode      = (uint8_t)(op << 4);
    seg->flags       = flags;
    seg->index       = htobe16(index);
    seg->sw_cnt      = htobe16(sw_cnt);
    seg->append_tag  = htobe64(tag);
    seg->append_mask = htobe64(mask);
}

static inline void strand_set_tmh(struct ibv_tmh *tmh, uint8_t opcode,
                                  uint32_t app_ctx_be, uint64_t tag)
{
    tmh->opcode      = opcode;
    tmh->reserved[0] = 0;
    tmh->reserved[1] = 0;
    tmh->reserved[2] = 0;
    tmh->app_ctx     = app_ctx_be;
    tmh->tag         = htobe64(tag);
}

static inline void
strand_set_rvh(struct ibv_rvh *rvh, uint64_t va, uint32_t rkey, uint32_t len)
{
    rvh->va   = htobe64(va);
    rvh->rkey = htobe32(rkey);
    rvh->len  = htobe32(len);
}

static inline void
strand_set_ravh(struct strand_ravh *ravh, uint32_t dctn, uint64_t key)
{
    ravh->sl_dct        = htobe32(dctn & 0xffffff);
    ravh->reserved      = 0;
    ravh->dc_access_key = htobe64(key);
}

/* A tag-matching CQE: app, app_op, the tag handle in app_info. */
static inline int strand_cqe_is_tm(const struct mlx5_cqe64 *cqe)
{
    return cqe->app == STRAND_CQE_APP_TM;
}

static inline uint16_t strand_cqe_tm_handle(const struct mlx5_cqe64 *cqe)
{
    return be16toh(cqe->app_info);
}

#endif
