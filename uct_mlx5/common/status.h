/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an error CQE means to a UCT user: its syndrome as a UCS status, as
 * UCX's mlx5 transports report them. Shared by every transport and by tag
 * matching (a rendezvous READ that failed is reported on its tag).
 */
#ifndef STRAND_COMMON_STATUS_H_
#define STRAND_COMMON_STATUS_H_

#include <infiniband/mlx5dv.h>
#include <ucs/type/status.h>

static inline ucs_status_t strand_syndrome_status(uint8_t syndrome)
{
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
        return UCS_ERR_CONNECTION_RESET;
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
        return UCS_ERR_MESSAGE_TRUNCATED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

#endif
