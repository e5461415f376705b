/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The SRQ free list the provider and the device share (sim_rq.c): what
 * the posting code, the objects (create_srq) and the CQ (poll, clean)
 * need of it.
 */
#ifndef SIM_SIM_RQ_H_
#define SIM_SIM_RQ_H_

#include "smlx5.h"
#include "sim.h"

#include <stdint.h>

static inline struct mlx5_wqe_srq_next_seg *
sim_srq_wqe(smlx5_srq_t *srq, uint32_t idx)
{
    return (struct mlx5_wqe_srq_next_seg *)(srq->buf +
                                            (size_t)idx * srq->stride);
}

/*
 * Link a new SRQ's WQEs as rdma-core's mlx5 provider does: WQE i ->
 * (i + 1) & (wqe_cnt - 1), head = 0, tail = wqe_cnt - 1, posted = 0.
 * The WQE at `tail` is a sentinel that is never handed to the device, so an
 * SRQ of wqe_cnt WQEs holds wqe_cnt - 1 receives: create_srq must size
 * wqe_cnt = roundup_pow2(max_wr + 1). Needs srq->buf, stride, wqe_cnt set.
 */
void sim_srq_init_list(smlx5_srq_t *srq);

/*
 * Give WQE idx back to the free list once its receive completion has been
 * polled: it is linked after the current tail and becomes the new tail
 * (rdma-core's mlx5_free_srq_wqe). Provider side: same thread as
 * smlx5_post_srq_recv (no lock).
 */
void sim_srq_free_wqe(smlx5_srq_t *srq, uint32_t idx);

#endif
