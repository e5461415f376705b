/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand endpoints: a DC target (LID + DCT number); a DCI is taken from
 * the interface's pool while the endpoint has outstanding work.
 */
#ifndef STRAND_EP_H_
#define STRAND_EP_H_

#include "iface.h"

enum {
    STRAND_EP_FLAG_FAILED = UCS_BIT(0),   /* failed: every operation
                                                returns its status */
    STRAND_EP_FLAG_FAIL_PENDING = UCS_BIT(1), /* its owner is still to
                                                    be told */
    STRAND_EP_FLAG_IN_PENDING = UCS_BIT(2), /* a pending request of
                                                  this ep runs now */
    STRAND_EP_FLAG_FC_REQ  = UCS_BIT(3),  /* credits requested */
    STRAND_EP_FLAG_INTERNAL = UCS_BIT(4), /* the transport's own (flow
                                                control grants): errors are
                                                not reported to the user */
    STRAND_EP_FLAG_MOVING   = UCS_BIT(5)  /* its DCI is full and another
                                                is less shared: posts
                                                nothing until its work is
                                                done, then leases again */
};

/*
 * Readiness: whether an endpoint may post on its DCI as far as its own
 * state and its lease's go (leased; the DCI ACTIVE; its stream OK; nothing
 * of it held for re-posting; not MOVING, not FAILED; no pending requests),
 * kept in ep->tx_txq by strand_ep_tx_update() at every change of one of
 * those conditions, so that a post checks one pointer instead of each.
 * What changes with every post (room in the SQ, flow-control credits) is
 * checked by the post itself.
 *
 * The gate: a short operation is posted straight from its entry point
 * (dc_ep_post.h, the fast path) while ep->tx_gate == iface->tx_gate. It is
 * opened (strand_ep_gate) where ep is ready, no fence is due and no ep
 * waits for a DCI, and closed where one of those stops: ep's readiness,
 * an ep fence (ep's gate), an iface fence or an ep starting to wait for a
 * DCI (iface->tx_gate moves on: every gate closes at once). A closed gate
 * opens again after a post on the general path.
 */
typedef struct strand_ep {
    uct_base_ep_t       super;
    struct strand_txq  *tx_txq;       /* its send queue while it is ready
                                         (above);
                                         NULL: the general path decides */
    uint64_t            tx_ctrl_tail; /* while ready: ctrl bytes 8-15 of its
                                         WQEs as stored (its stream id;
                                         fm_ce_se and imm 0) */
    unsigned            tx_gate;      /* == iface->tx_gate: the fast path
                                         is open (above) */
    uint32_t            tx_op_kind;   /* while ready: the kind word of its
                                         short operations' op records but
                                         for the opcode (dc_dci.h) */
    UCS_STATS_NODE_DECLARE(stats)     /* dc_stats.h */
    struct mlx5_wqe_av  av;           /* the peer's DCT, ready for WQEs */
    uint8_t             av_ds;        /* 1 (base AV) or 3 (with GRH) */
    uint32_t            dest_qpn;     /* the peer's QP its WQEs name (a
                                         DCT; 0: its QP is connected) */
    uint64_t            dest_key;     /* the peer NIC (lanes per peer) */
    uint16_t            txq;          /* leased send queue (a connected
                                         QP's: its own for good);
                                         STRAND_TXQ_NONE: none */
    uint8_t             lane;         /* leased lane (index in the send
                                         queue) */
    uint8_t             flags;
    uint16_t            held;         /* flushed, to be posted again */
    uint32_t            outstanding;  /* posted, not completed (incl.
                                         held) */
    unsigned            fence_beat;   /* != iface's: fence the next WQE */
    ucs_status_t        status;       /* the error once FAILED */
    ucs_arbiter_group_t arb_group;    /* pending requests */
    uint32_t            pending;      /* how many: counted where they are
                                         queued and leave (a request may be
                                         freed by its callback, so the
                                         group is not looked at then) */
    ucs_list_link_t     txq_wait;     /* in its send queue's waiters (linked to
                                         itself when not) */
    ucs_list_link_t     list;         /* in iface->eps */
    uct_completion_t   *cancel_comp;  /* flush(CANCEL) waiting for the
                                         last outstanding operation */
    uct_completion_t  **taken;        /* operations taken, not sent, while
                                         its failure is still to be told
                                         (strand_ep_refused) */
    uint32_t            num_taken, max_taken;
    int32_t             fc_wnd;       /* active messages it may still send */
    int32_t             fc_limit;     /* an active message looks at flow
                                         control when fc_wnd is not above
                                         this (dc_fc.c) */
    uint32_t            fc_id;        /* its id in FC requests and grants */
    uint16_t            fc_seq;       /* its last credit request */
    uint16_t            fc_seq_first; /* the first of the current wait */
    ucs_time_t          fc_req_time;  /* when it last asked */
} strand_ep_t;

/* ds units of the ctrl segment and the address vector */
#define STRAND_EP_DS(_ep)  (1u + (_ep)->av_ds)

/* An operation ep did not post, for `status`: what it returns. An ep whose
 * failure its owner was not told yet (FAIL_PENDING) still takes work, as
 * UCX's mlx5 transports do until their error handler ran: nothing is
 * sent, UCS_OK, or UCS_INPROGRESS and `comp` completes with the failure
 * when the owner is told. Otherwise `status` itself. */
ucs_status_t strand_ep_refused(strand_iface_t *iface, strand_ep_t *ep,
                                  ucs_status_t status, uct_completion_t *comp);
/* the same for an operation that returns a length (bcopy) */
static inline ssize_t strand_ep_refused_len(strand_iface_t *iface,
                                               strand_ep_t *ep,
                                               ucs_status_t status)
{
    status = strand_ep_refused(iface, ep, status, NULL);
    return (status == UCS_OK) ? 0 : (ssize_t)status;
}
/* ep takes work without sending it (above) */
static inline int strand_ep_is_failing(const strand_ep_t *ep)
{
    return (ep->flags & (STRAND_EP_FLAG_FAILED |
                         STRAND_EP_FLAG_FAIL_PENDING)) ==
           (STRAND_EP_FLAG_FAILED | STRAND_EP_FLAG_FAIL_PENDING);
}

UCS_CLASS_DECLARE(strand_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(strand_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(strand_ep_t, uct_ep_t);

ucs_status_t strand_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt);
ssize_t strand_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags);
ucs_status_t strand_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                   const void *header, unsigned header_length,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   unsigned flags, uct_completion_t *comp);
ssize_t strand_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                               void *arg, uint64_t remote_addr,
                               uct_rkey_t rkey);
ucs_status_t strand_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                    size_t iovcnt, uint64_t remote_addr,
                                    uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t strand_ep_get_bcopy(uct_ep_h tl_ep,
                                    uct_unpack_callback_t unpack_cb,
                                    void *arg, size_t length,
                                    uint64_t remote_addr, uct_rkey_t rkey,
                                    uct_completion_t *comp);
ucs_status_t strand_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                    size_t iovcnt, uint64_t remote_addr,
                                    uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t strand_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                        uint32_t value, uint64_t remote_addr,
                                        uct_rkey_t rkey);
ucs_status_t strand_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                        uint64_t value, uint64_t remote_addr,
                                        uct_rkey_t rkey);
ucs_status_t strand_ep_atomic32_fetch(uct_ep_h tl_ep,
                                         uct_atomic_op_t opcode,
                                         uint32_t value, uint32_t *result,
                                         uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp);
ucs_status_t strand_ep_atomic64_fetch(uct_ep_h tl_ep,
                                         uct_atomic_op_t opcode,
                                         uint64_t value, uint64_t *result,
                                         uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp);
ucs_status_t strand_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                         uint32_t swap, uint64_t remote_addr,
                                         uct_rkey_t rkey, uint32_t *result,
                                         uct_completion_t *comp);
ucs_status_t strand_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                         uint64_t swap, uint64_t remote_addr,
                                         uct_rkey_t rkey, uint64_t *result,
                                         uct_completion_t *comp);
ucs_status_t strand_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);
ucs_status_t strand_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t strand_ep_check(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);
ucs_status_t strand_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags);
void strand_ep_pending_purge(uct_ep_h tl_ep,
                                uct_pending_purge_callback_t cb, void *arg);

/* an inline SEND of the transport's own (FC request/grant, keepalive):
 * no flow control; UCS_ERR_NO_RESOURCE when no DCI or room */
ucs_status_t strand_ep_send_ctrl(strand_ep_t *ep, uint8_t am_id,
                                    const void *msg, unsigned length);

/* ep has nothing outstanding any more: its lease ends. Returns the
 * completion of a flush(CANCEL) that waited for this, to be invoked by
 * the caller last (its callback may destroy ep). */
uct_completion_t *strand_ep_idle(strand_iface_t *iface,
                                    strand_ep_t *ep);
ucs_status_t strand_ep_invalidate(uct_ep_h tl_ep, unsigned flags);

/* the readiness of ep (above) after a change of its state or its lease's;
 * of every ep leasing dci after a change of the DCI's or a stream's */
void strand_ep_tx_update(strand_iface_t *iface, strand_ep_t *ep);
void strand_ep_tx_update_dci(strand_iface_t *iface,
                                struct strand_txq *dci);
/* open ep's gate when ep is ready, no fence is due and no ep waits for a
 * DCI; close it otherwise */
void strand_ep_gate(strand_iface_t *iface, strand_ep_t *ep);
#ifdef STRAND_DEBUG
/* debug builds, on every post: the cached readiness is what the state
 * says, and an open gate is right */
void strand_ep_tx_verify(strand_iface_t *iface, strand_ep_t *ep);
#else
#define strand_ep_tx_verify(_iface, _ep) do { } while (0)
#endif

/* queue a pending request of ep (uct_ep_pending_add, the transport's own
 * grants): it waits behind the ep's others */
void strand_ep_pending_push(strand_iface_t *iface, strand_ep_t *ep,
                               uct_pending_req_t *req);

/* dispatch the pending requests of the iface (from progress) */
void strand_ep_dispatch_pending(strand_iface_t *iface);
/* the DCI of ep retired work: give its pending requests a chance */
void strand_ep_schedule(strand_iface_t *iface, strand_ep_t *ep);
/* an error on the ep's DCI: fail the ep (ops purged by the caller);
 * detail: the decoded error CQE, for the log */
void strand_ep_set_failed(strand_iface_t *iface, strand_ep_t *ep,
                             ucs_status_t status, const char *detail);

#endif
