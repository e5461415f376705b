/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Provider side of the software device's queues (sim_post.c): what the
 * object code (create_srq, poll_cq) needs from the SRQ free list.
 */
#ifndef SIM_SIM_POST_H_
#define SIM_SIM_POST_H_

#include "smlx5.h"

#include <stdint.h>

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

/* The provider's send queue of a QP with a send queue, at producer index
 * 0: after the queue and its doorbell record exist, and after a reset. */
void sim_post_sq_reset(smlx5_qp_t *qp);

#endif
