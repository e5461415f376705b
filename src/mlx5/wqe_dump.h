/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send WQE in one line, for trace logs (the transport logs every WQE it
 * posts at UCX's TRACE_DATA level, like UCX's own mlx5 transports; with a
 * UCX built without that level the call compiles out). Decodes what the
 * bytes say: opcode, WQE index, ds, fence/completion/solicited flags, DCI
 * stream, the DC address vector, the remote address, atomic operands, data
 * segments and inline data. Plain C, as wqe.h; cold code, so in wqe_dump.c
 * and out of the post paths that call it.
 */
#ifndef STRAND_MLX5_WQE_DUMP_H_
#define STRAND_MLX5_WQE_DUMP_H_

#include "mlx5/wqe.h"

#include <stddef.h>

/*
 * The WQE whose ctrl segment is at ctrl, in an SQ of [sq_buf, sq_end);
 * av_ds: ds units of the DC address vector after the ctrl segment (0 for
 * RC). Returns buf.
 */
const char *strand_wqe_dump(const struct mlx5_wqe_ctrl_seg *ctrl, void *sq_buf,
                            void *sq_end, unsigned av_ds, char *buf,
                            size_t size);

#endif
