/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's operations while an endpoint waits for its connection
 * (rc_locked.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_locked.h"
#include "rc_cm.h"

#include <ucs/async/async.h>

static inline strand_rc_iface_t *strand_rc_locked_iface(uct_iface_h tl_iface)
{
    return ucs_derived_of(tl_iface, strand_rc_iface_t);
}

void strand_rc_post_lock(strand_rc_iface_t *iface)
{
    ucs_recursive_spin_lock(&iface->post_lock);
}

/* The worker lets go; the answers the async thread met meanwhile are
 * taken in now (the async thread sets rep_waiting, then tries the lock
 * again: one of the two sees the other). */
void strand_rc_post_unlock(strand_rc_iface_t *iface)
{
    ucs_recursive_spin_unlock(&iface->post_lock);
    if (iface->post_lock.count > 0) {
        return; /* an outer call holds it still, and looks when it lets go */
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&iface->rep_waiting, __ATOMIC_RELAXED)) {
        strand_rc_cm_answers_take(iface->cm);
    }
}

#define STRAND_RC_LOCKED(_field, _ret, _tl_iface, _params, _args)     \
    static _ret strand_rc_locked_##_field _params                     \
    {                                                                 \
        strand_rc_iface_t *iface = strand_rc_locked_iface(_tl_iface); \
        _ret               ret;                                       \
                                                                      \
        strand_rc_post_lock(iface);                                   \
        ret = iface->direct_ops._field _args;                         \
        strand_rc_locked_ops_settle(iface);                           \
        strand_rc_post_unlock(iface);                                 \
        return ret;                                                   \
    }

#define STRAND_RC_LOCKED_EP(_field, _ret, _params, _args) \
    STRAND_RC_LOCKED(_field, _ret, tl_ep->iface, _params, _args)

STRAND_RC_LOCKED_EP(ep_put_short, ucs_status_t,
                    (uct_ep_h tl_ep, const void *buffer, unsigned length,
                     uint64_t remote_addr, uct_rkey_t rkey),
                    (tl_ep, buffer, length, remote_addr, rkey))
STRAND_RC_LOCKED_EP(ep_put_bcopy, ssize_t,
                    (uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                     uint64_t remote_addr, uct_rkey_t rkey),
                    (tl_ep, pack_cb, arg, remote_addr, rkey))
STRAND_RC_LOCKED_EP(ep_put_zcopy, ucs_status_t,
                    (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                     uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp),
                    (tl_ep, iov, iovcnt, remote_addr, rkey, comp))
STRAND_RC_LOCKED_EP(ep_get_bcopy, ucs_status_t,
                    (uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb, void *arg,
                     size_t length, uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp),
                    (tl_ep, unpack_cb, arg, length, remote_addr, rkey, comp))
STRAND_RC_LOCKED_EP(ep_get_zcopy, ucs_status_t,
                    (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                     uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp),
                    (tl_ep, iov, iovcnt, remote_addr, rkey, comp))
STRAND_RC_LOCKED_EP(ep_am_short, ucs_status_t,
                    (uct_ep_h tl_ep, uint8_t id, uint64_t header,
                     const void *payload, unsigned length),
                    (tl_ep, id, header, payload, length))
STRAND_RC_LOCKED_EP(ep_am_short_iov, ucs_status_t,
                    (uct_ep_h tl_ep, uint8_t id, const uct_iov_t *iov,
                     size_t iovcnt),
                    (tl_ep, id, iov, iovcnt))
STRAND_RC_LOCKED_EP(ep_am_bcopy, ssize_t,
                    (uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                     void *arg, unsigned flags),
                    (tl_ep, id, pack_cb, arg, flags))
STRAND_RC_LOCKED_EP(ep_am_zcopy, ucs_status_t,
                    (uct_ep_h tl_ep, uint8_t id, const void *header,
                     unsigned header_length, const uct_iov_t *iov,
                     size_t iovcnt, unsigned flags, uct_completion_t *comp),
                    (tl_ep, id, header, header_length, iov, iovcnt, flags,
                     comp))
STRAND_RC_LOCKED_EP(ep_atomic_cswap64, ucs_status_t,
                    (uct_ep_h tl_ep, uint64_t compare, uint64_t swap,
                     uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result,
                     uct_completion_t *comp),
                    (tl_ep, compare, swap, remote_addr, rkey, result, comp))
STRAND_RC_LOCKED_EP(ep_atomic_cswap32, ucs_status_t,
                    (uct_ep_h tl_ep, uint32_t compare, uint32_t swap,
                     uint64_t remote_addr, uct_rkey_t rkey, uint32_t *result,
                     uct_completion_t *comp),
                    (tl_ep, compare, swap, remote_addr, rkey, result, comp))
STRAND_RC_LOCKED_EP(ep_atomic32_post, ucs_status_t,
                    (uct_ep_h tl_ep, unsigned opcode, uint32_t value,
                     uint64_t remote_addr, uct_rkey_t rkey),
                    (tl_ep, opcode, value, remote_addr, rkey))
STRAND_RC_LOCKED_EP(ep_atomic64_post, ucs_status_t,
                    (uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                     uint64_t remote_addr, uct_rkey_t rkey),
                    (tl_ep, opcode, value, remote_addr, rkey))
STRAND_RC_LOCKED_EP(ep_atomic32_fetch, ucs_status_t,
                    (uct_ep_h tl_ep, unsigned opcode, uint32_t value,
                     uint32_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp),
                    (tl_ep, opcode, value, result, remote_addr, rkey, comp))
STRAND_RC_LOCKED_EP(ep_atomic64_fetch, ucs_status_t,
                    (uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                     uint64_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp),
                    (tl_ep, opcode, value, result, remote_addr, rkey, comp))
STRAND_RC_LOCKED_EP(ep_tag_eager_short, ucs_status_t,
                    (uct_ep_h tl_ep, uct_tag_t tag, const void *data,
                     size_t length),
                    (tl_ep, tag, data, length))
STRAND_RC_LOCKED_EP(ep_tag_eager_bcopy, ssize_t,
                    (uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                     uct_pack_callback_t pack_cb, void *arg, unsigned flags),
                    (tl_ep, tag, imm, pack_cb, arg, flags))
STRAND_RC_LOCKED_EP(ep_tag_eager_zcopy, ucs_status_t,
                    (uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                     const uct_iov_t *iov, size_t iovcnt, unsigned flags,
                     uct_completion_t *comp),
                    (tl_ep, tag, imm, iov, iovcnt, flags, comp))
STRAND_RC_LOCKED_EP(ep_tag_rndv_zcopy, ucs_status_ptr_t,
                    (uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                     unsigned header_length, const uct_iov_t *iov,
                     size_t iovcnt, unsigned flags, uct_completion_t *comp),
                    (tl_ep, tag, header, header_length, iov, iovcnt, flags,
                     comp))
STRAND_RC_LOCKED_EP(ep_tag_rndv_cancel, ucs_status_t,
                    (uct_ep_h tl_ep, void *op), (tl_ep, op))
STRAND_RC_LOCKED_EP(ep_tag_rndv_request, ucs_status_t,
                    (uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                     unsigned header_length, unsigned flags),
                    (tl_ep, tag, header, header_length, flags))
STRAND_RC_LOCKED_EP(ep_pending_add, ucs_status_t,
                    (uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags),
                    (tl_ep, req, flags))
STRAND_RC_LOCKED_EP(ep_flush, ucs_status_t,
                    (uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp),
                    (tl_ep, flags, comp))
STRAND_RC_LOCKED_EP(ep_fence, ucs_status_t, (uct_ep_h tl_ep, unsigned flags),
                    (tl_ep, flags))
STRAND_RC_LOCKED(iface_flush, ucs_status_t, tl_iface,
                 (uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp),
                 (tl_iface, flags, comp))
STRAND_RC_LOCKED(iface_fence, ucs_status_t, tl_iface,
                 (uct_iface_h tl_iface, unsigned flags), (tl_iface, flags))
STRAND_RC_LOCKED(iface_tag_recv_zcopy, ucs_status_t, tl_iface,
                 (uct_iface_h tl_iface, uct_tag_t tag, uct_tag_t tag_mask,
                  const uct_iov_t *iov, size_t iovcnt, uct_tag_context_t *ctx),
                 (tl_iface, tag, tag_mask, iov, iovcnt, ctx))
STRAND_RC_LOCKED(iface_tag_recv_cancel, ucs_status_t, tl_iface,
                 (uct_iface_h tl_iface, uct_tag_context_t *ctx, int force),
                 (tl_iface, ctx, force))

static void strand_rc_locked_ep_pending_purge(uct_ep_h tl_ep,
                                              uct_pending_purge_callback_t cb,
                                              void                        *arg)
{
    strand_rc_iface_t *iface = strand_rc_locked_iface(tl_ep->iface);

    strand_rc_post_lock(iface);
    iface->direct_ops.ep_pending_purge(tl_ep, cb, arg);
    strand_rc_locked_ops_settle(iface);
    strand_rc_post_unlock(iface);
}

/* Each operation the interface has, locked or direct. */
static void strand_rc_locked_ops_set(strand_rc_iface_t *iface, int locked)
{
    uct_iface_ops_t       *ops    = &iface->super.super.super.ops;
    const uct_iface_ops_t *direct = &iface->direct_ops;

#define STRAND_RC_LOCKED_SET(_field)                                       \
    if (direct->_field != NULL) {                                          \
        ops->_field = locked ? strand_rc_locked_##_field : direct->_field; \
    }
    STRAND_RC_LOCKED_SET(ep_put_short)
    STRAND_RC_LOCKED_SET(ep_put_bcopy)
    STRAND_RC_LOCKED_SET(ep_put_zcopy)
    STRAND_RC_LOCKED_SET(ep_get_bcopy)
    STRAND_RC_LOCKED_SET(ep_get_zcopy)
    STRAND_RC_LOCKED_SET(ep_am_short)
    STRAND_RC_LOCKED_SET(ep_am_short_iov)
    STRAND_RC_LOCKED_SET(ep_am_bcopy)
    STRAND_RC_LOCKED_SET(ep_am_zcopy)
    STRAND_RC_LOCKED_SET(ep_atomic_cswap64)
    STRAND_RC_LOCKED_SET(ep_atomic_cswap32)
    STRAND_RC_LOCKED_SET(ep_atomic32_post)
    STRAND_RC_LOCKED_SET(ep_atomic64_post)
    STRAND_RC_LOCKED_SET(ep_atomic32_fetch)
    STRAND_RC_LOCKED_SET(ep_atomic64_fetch)
    STRAND_RC_LOCKED_SET(ep_tag_eager_short)
    STRAND_RC_LOCKED_SET(ep_tag_eager_bcopy)
    STRAND_RC_LOCKED_SET(ep_tag_eager_zcopy)
    STRAND_RC_LOCKED_SET(ep_tag_rndv_zcopy)
    STRAND_RC_LOCKED_SET(ep_tag_rndv_cancel)
    STRAND_RC_LOCKED_SET(ep_tag_rndv_request)
    STRAND_RC_LOCKED_SET(ep_pending_add)
    STRAND_RC_LOCKED_SET(ep_pending_purge)
    STRAND_RC_LOCKED_SET(ep_flush)
    STRAND_RC_LOCKED_SET(ep_fence)
    STRAND_RC_LOCKED_SET(iface_flush)
    STRAND_RC_LOCKED_SET(iface_fence)
    STRAND_RC_LOCKED_SET(iface_tag_recv_zcopy)
    STRAND_RC_LOCKED_SET(iface_tag_recv_cancel)
#undef STRAND_RC_LOCKED_SET
    iface->locked_ops = (uint8_t)locked;
}

ucs_status_t strand_rc_locked_init(strand_rc_iface_t *iface)
{
    iface->direct_ops  = iface->super.super.super.ops;
    iface->locked_ops  = 0;
    iface->in_progress = 0;
    iface->adopted     = 0;
    iface->rep_waiting = 0;
    return ucs_recursive_spinlock_init(&iface->post_lock, 0);
}

void strand_rc_locked_cleanup(strand_rc_iface_t *iface)
{
    ucs_recursive_spinlock_destroy(&iface->post_lock);
}

void strand_rc_locked_ops_install(strand_rc_iface_t *iface)
{
    if (!strand_rc_cm_async_connects(iface->cm)) {
        return; /* no async thread: answers are taken in by progress */
    }
    if (!iface->locked_ops) {
        strand_rc_locked_ops_set(iface, 1);
    }
    if (iface->in_progress && !iface->adopted) {
        /* made from a callback of progress, which goes on without the
         * lock: the rest of it holds it */
        strand_rc_post_lock(iface);
        iface->adopted = 1;
    }
}

void strand_rc_locked_ops_settle(strand_rc_iface_t *iface)
{
    if (iface->locked_ops && (iface->super.held_txqs == 0)) {
        strand_rc_locked_ops_set(iface, 0);
    }
}

unsigned strand_rc_locked_progress(strand_rc_iface_t *iface,
                                   unsigned (*progress)(strand_rc_iface_t *))
{
    unsigned count;

    if (iface->locked_ops) {
        strand_rc_post_lock(iface);
        count = progress(iface);
        strand_rc_locked_ops_settle(iface);
        strand_rc_post_unlock(iface);
        return count;
    }
    iface->in_progress = 1;
    count              = progress(iface);
    iface->in_progress = 0;
    if (iface->adopted) {
        iface->adopted = 0;
        strand_rc_locked_ops_settle(iface);
        strand_rc_post_unlock(iface);
    }
    return count;
}
