/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The UCT operations of the shared endpoint (ep_ops.c): its class, active
 * messages, RMA, atomics, flush, fence, keepalive; each transport's short
 * entry points are ep_short.h's.
 */
#ifndef STRAND_EP_OPS_H_
#define STRAND_EP_OPS_H_

#include "ep.h"

UCS_CLASS_DECLARE(strand_ep_t, const uct_ep_params_t *);

ucs_status_t strand_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                    const uct_iov_t *iov, size_t iovcnt);
ssize_t      strand_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                uct_pack_callback_t pack_cb, void *arg,
                                unsigned flags);
ucs_status_t strand_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp);
ssize_t      strand_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                 void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t strand_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t strand_ep_get_bcopy(uct_ep_h              tl_ep,
                                 uct_unpack_callback_t unpack_cb, void *arg,
                                 size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t strand_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t strand_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint32_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey);
ucs_status_t strand_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint64_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey);
ucs_status_t strand_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint32_t value, uint32_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t strand_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint64_t value, uint64_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t strand_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                      uint32_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint32_t *result,
                                      uct_completion_t *comp);
ucs_status_t strand_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                      uint64_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint64_t *result,
                                      uct_completion_t *comp);
ucs_status_t
strand_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t strand_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t
strand_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);

/* uct_ep_invalidate and uct_ep_is_connected, for the internal operations
 * table ucx_compat.c builds (UCX's signatures differ between versions) */
#include "uct_mlx5/ucx_compat.h"
extern const strand_compat_ep_funcs_t strand_ep_funcs;

#endif
