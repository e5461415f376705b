/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path's doorbells and CQE read as functions of their own, so
 * that test/shell/test_barriers.sh can read the fences the compiler emits
 * for each (natively and with cross compilers): compiled, never run.
 */
#include "mlx5/cqe.h"
#include "mlx5/doorbell.h"

/* SRQ WQEs, then the SRQ's doorbell record */
void probe_srq_doorbell(__be32 *dbrec, uint16_t counter)
{
    strand_srq_ring_doorbell(dbrec, counter);
}

/* a WQE, then the send queue's doorbell record, then the register */
void probe_sq_doorbell(__be32 *dbrec, uint32_t cur_post, void *reg,
                       uint64_t head)
{
    strand_sq_doorbell_record(dbrec, cur_post);
    strand_sq_doorbell_head(reg, head);
}

/* a CQE's ownership, then its contents */
struct mlx5_cqe64 *probe_cqe_get(void *buf, uint32_t cqe_cnt, uint32_t ci)
{
    return strand_cqe_get(buf, cqe_cnt, 6, ci);
}
