/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interface both transports are made of: the receive side (an SRQ and
 * its ring, a receive CQ, tag matching), the send side (send CQs, the send
 * queues and their operation slots, completions, held and re-posted WQEs,
 * error completion), flow control, integrity-checked GETs and the
 * endpoint operations (ep.h). Its transport (dc/: DCIs and a TX policy;
 * rc/: a QP per endpoint) derives from it and answers through a small ops
 * table (strand_tl_ops_t): how a send queue is made, leased, given back and
 * reset, what its WQEs carry, the CQEs that are its own.
 *
 * A send queue has lanes: parts of it whose WQEs stay in order and fail
 * and recover apart (a send queue's streams; one lane where there are none).
 */
#ifndef STRAND_IFACE_H_
#define STRAND_IFACE_H_

#include "uct_mlx5/strand_md.h"
#include "uct_mlx5/common/stats.h"
#include "uct_mlx5/common/fc.h"
#include "uct_mlx5/strand_sig.h"
#include "uct_mlx5/common/tm_list.h"
#include "uct_mlx5/common/iface_config.h"
#include "dev/dev.h"
#include "mlx5/cqe.h"
#include "mlx5/sq.h"

#include <ucs/datastruct/queue_types.h>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_iov.inl>
#include <ucs/arch/cpu.h>
#include <ucs/sys/math.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/string_buffer.h>

#define STRAND_PORT                1  /* the device's one port */
#define STRAND_AM_HDR_SIZE         1u /* the AM id byte */
#define STRAND_AM_HDR_MAX          (STRAND_TMH_SIZE + STRAND_AM_HDR_SIZE)
#define STRAND_TXQ_NONE            0xffff
#define STRAND_ROCE_DEFAULT_TCLASS 106 /* DSCP 26 with ECN (UCX's) */
#define STRAND_MAX_SGE             16  /* data segments per WQE */
#define STRAND_AM_MAX_HDR          128 /* am_zcopy header bytes */
#define STRAND_MAX_ZCOPY           (1ul << 30)
#define STRAND_MAX_INLINE          800 /* MAX_INLINE at most */

/* The configuration as the shared code reads it: the options both
 * transports have, and what each fills in for itself (dc_strand's table
 * embeds it, rc_strand fixes what it has no option for). */
typedef struct strand_iface_config {
    uct_iface_config_t           super;
    strand_iface_common_config_t common;
    unsigned                     num_txqs; /* NUM_DCI, MAX_EPS */
    int                          fc_enable;
    unsigned                     fc_wnd_size;
    double                       fc_soft_thresh;
    ucs_time_t                   fc_hard_req_timeout;
    int                          integrity_pipeline; /* rc_strand's
                                                        rendezvous:
                                                        ucs_ternary_auto_value_t */
} strand_iface_config_t;

/* A registered send buffer (bcopy, AM zcopy header, fetched atomics): a
 * segment and STRAND_TX_SLACK bytes no operation uses
 * (strand_ep_check_packed). */
#define STRAND_TX_SLACK 64
typedef struct strand_tx_desc {
    uint32_t lkey;
    uint32_t pad;
    uint8_t  data[] UCS_V_ALIGNED(8);
} strand_tx_desc_t;

/* A receive buffer: this header, then room for the uct_recv_desc_t pointer
 * and the user's rx_headroom (UCP keeps its receive descriptor there when
 * it holds on to a message), then [AM id][payload] where the SRQ WQE
 * points (offsets in iface->config, as UCX's ib iface lays them out). */
typedef struct strand_rx_desc {
    uint32_t lkey;
    uint32_t pad;
} UCS_S_PACKED strand_rx_desc_t; /* packed: an odd AM alignment offset
                                    leaves it at any address */

struct strand_txq;
struct strand_ep;
struct strand_iface;
struct mlx5_cqe64;

/* ------------------------------------------------------ flow control */

KHASH_MAP_INIT_INT(strand_fc_eps, struct strand_ep *)
KHASH_INIT(strand_fc_grant_eps, strand_fc_peer_t, struct strand_ep *, 1,
           strand_fc_peer_hash, strand_fc_peer_equal)

typedef struct strand_fc {
    int                          enabled;
    int32_t                      wnd_size;
    int32_t                      soft_thresh; /* ask for credits here */
    uint32_t                     next_id;
    unsigned                     waiting;     /* eps that asked and
                                                 have no grant yet */
    ucs_time_t                   req_timeout; /* ask again after */
    ucs_time_t                   next_check;
    khash_t(strand_fc_eps)       eps;       /* id -> user ep */
    khash_t(strand_fc_grant_eps) grant_eps; /* requester -> internal
                                               ep sending grants */
} strand_fc_t;

/* ---------------------------------------------------- send queues */

/* What to do when an outstanding WQE retires. */
enum {
    STRAND_OP_PLAIN,     /* completion only */
    STRAND_OP_DESC,      /* release the tx descriptor */
    STRAND_OP_GET_BCOPY, /* unpack from the descriptor, release it */
    STRAND_OP_FETCH32,   /* copy the fetched value, release */
    STRAND_OP_FETCH64,
    STRAND_OP_CHECKED, /* the READ of a piece of an integrity-
                          checked GET: u.result is the
                          strand_integrity_piece_t (integrity_get.c) */
    STRAND_OP_LIGHT    /* nothing to do but count it (short ops, a
                          NOP): only the head of the record is
                          written, comp .. u are not valid */
};

/* Where an operation stands (strand_op_t.state). */
enum {
    STRAND_OP_FREE,   /* the slot holds no WQE */
    STRAND_OP_POSTED, /* on the wire, its CQE to come */
    STRAND_OP_FLUSHED /* flushed by a send queue in error: its fate is
                         decided once every CQE of the send queue is back
                         (recovery.c) */
};

/* Registrations the transport made itself for an iov passed without a
 * memory handle (an MD without UCT_MD_FLAG_NEED_MEMH lets UCP do that). */
typedef struct strand_tmp_reg {
    unsigned  count;
    uct_mem_h memh[STRAND_MAX_SGE];
} strand_tmp_reg_t;

/* One outstanding WQE, in the slot of its first basic block. The head
 * (wqe_idx .. ep, 16 bytes) is written for every WQE: it is what an error
 * or flush CQE needs to find the endpoint and stream the WQE belongs to;
 * the rest only for WQEs whose completion has work to do. */
typedef struct strand_op {
    uint16_t wqe_idx; /* WQE index in the ctrl segment */
    uint8_t  bbs;
    uint8_t  reserved;
    union {
        struct {
            uint8_t lane;   /* index in txq->lanes */
            uint8_t type;   /* STRAND_OP_PLAIN, ... */
            uint8_t state;  /* STRAND_OP_FREE, ... */
            uint8_t opcode; /* MLX5_OPCODE_* (for recovery) */
        };
        uint32_t kind; /* the four in one word: what a short
                          operation of an ep writes, from the
                          ep's template (strand_op_kind) */
    };
    struct strand_ep *ep; /* NULL: the ep is gone */
    /* type != STRAND_OP_LIGHT only */
    uct_completion_t *comp;
    strand_tx_desc_t *desc;
    strand_tmp_reg_t *tmp_reg; /* NULL almost always */
    union {
        struct {
            uct_unpack_callback_t cb;
            void                 *arg;
            size_t                length;
        } unpack;
        void *result;
    } u;
} strand_op_t;

/* A DCI stream (hardware stream channel: ctrl bytes 9-10). */
typedef enum strand_lane_state {
    STRAND_LANE_OK,
    STRAND_LANE_DRAINING /* errored: its later WQEs come back
                            flushed, then it is reset */
} strand_lane_state_t;

typedef struct strand_lane {
    uint16_t         id;       /* the stream id in WQEs */
    uint8_t          state;    /* strand_lane_state_t */
    uint32_t         users;    /* eps that lease it */
    uint32_t         resets;   /* mlx5dv_dci_stream_id_reset calls */
    uint32_t         leases;   /* eps that took it, ever */
    ucs_queue_head_t held;     /* flushed WQEs to post again, in order */
    uint32_t         closures; /* times it stopped taking work (it or
                                  its send queue in error): orders the held */
} strand_lane_t;

/* Life of a send queue. An error that puts the send queue in ERR (a non-stream error, or
 * too many errored streams) moves it to DRAINING: the device completes
 * every outstanding WQE with a flush CQE; those stay in the CQ even across
 * a reset (spec section 9), so the send queue is reset only once the flush CQE of
 * its last WQE was consumed. */
typedef enum strand_txq_state {
    STRAND_TXQ_FREE,     /* dcs: in the pool; streams: no lessee */
    STRAND_TXQ_ACTIVE,   /* leased */
    STRAND_TXQ_DRAINING, /* in ERR: flush CQEs still to come */
    STRAND_TXQ_BROKEN    /* could not be reset: never used again */
} strand_txq_state_t;

typedef struct strand_txq {
    strand_dev_qp_t         qp;
    strand_sq_t             sq;
    uint32_t                sq_tail;      /* BB counter of the oldest WQE not
                                             retired (== sq.cur_post: none) */
    uint32_t                room_pi;      /* the last producer index at which
                                             a post needs no look at the queue
                                             (strand_txq_set_room) */
    uint32_t                fast_end;     /* a short post's WQE may end here
                                             at most: room, and no wrap
                                             (strand_txq_fast_room) */
    uint32_t                ring_end;     /* the end of the ring the producer
                                             index was in when a short post
                                             last looked */
    uint32_t                wqes;         /* WQEs posted on it, ever (wraps) */
    uint32_t                ce_countdown; /* WQEs to post until one asks for
                                             a CQE (moderation after one that
                                             asked) */
    uint32_t                moderation;   /* the interface's tx_moderation,
                                             here for the post path */
    uint32_t                outstanding;  /* WQEs posted and not retired */
    uint32_t                flushed;      /* of those, FLUSHED */
    strand_op_t            *ops;          /* by BB slot of the ctrl segment */
    uintptr_t               op_delta;     /* a WQE's op record is at its ctrl
                                             segment + this (strand_txq_slot_op):
                                             BBs and records are 64 bytes */
    strand_lane_t          *lanes;
    uint32_t                users;   /* eps leasing it */
    struct strand_ep       *ep;      /* dcs: the lessee */
    ucs_list_link_t         waiters; /* eps whose pending requests wait
                                        for room in this SQ, in order */
    uint16_t                index;
    uint8_t                 state;   /* strand_txq_state_t */
    uint8_t                 errored; /* streams in error now */
    uint32_t                resets;  /* back from ERR to RTS */
    uint64_t                cqes;    /* send CQEs consumed, ever */
    struct strand_txq_held *held_db; /* its doorbells held (a QP not
                                        connected yet, rc_strand): the
                                        scratch record and register its
                                        WQEs ring (txq_pool.c); NULL:
                                        the device's */
} strand_txq_t;

/* ------------------------------------------------- failed endpoints */

/* An ep failed whose owner is not told yet (NULL: destroyed meanwhile) */
#define STRAND_FAILED_DETAIL 192
typedef struct strand_failed {
    struct strand_ep *ep; /* NULL: destroyed meanwhile */
    ucs_status_t      status;
    char              detail[STRAND_FAILED_DETAIL];
} strand_failed_t;

/* ------------------------------------------------------ transport */

/*
 * What the shared interface code asks of the transport it serves: how its
 * send queues come and go (dc_strand: a pool of DCIs and a TX policy,
 * dc_policy.c; rc_strand: a QP per endpoint, rc/rc_qp.c), what its WQEs
 * carry, and the CQEs that are its own. The shared code never asks which
 * transport it is.
 */
typedef struct strand_tl_ops {
    /* what messages call the transport and its send queues */
    struct {
        const char *tl;         /* "dc_strand" */
        const char *cfg_prefix; /* "DC_STRAND_" */
        const char *sqs_option; /* the option that bounds the send
                                   queues ("NUM_DCI") */
        const char *sqs;        /* the queues in the log ("DCIs") */
        const char *sq;         /* one of them ("DCI") */
        const char *sqs_per_cq; /* sqs_per_cq in an error message */
        const char *sq_vfs;     /* their word in UCX's VFS: the file
                                   "<sq_vfs>_pool", a line "<sq_vfs> N"
                                   each ("dci") */
    } names;
    unsigned max_sqs;      /* the bound's largest value */
    unsigned sqs_per_cq;   /* send queues sharing a send CQ at
                              most (the CQs are made as queues
                              come) */
    unsigned tm_tx_extra;  /* with tag matching: send CQEs of the
                              transport's own QPs beyond those of
                              the send queues */
    uint8_t  own_rndv;     /* with tag matching: the transport reads
                              rendezvous itself (the device's
                              rendezvous header is not used) */
    unsigned rndv_hdr_len; /* otherwise: the device's rendezvous
                              header after the TMH */

    /* the counters of its interfaces and endpoints (stats.h), named after
     * the transport and its queues; NULL without ENABLE_STATS */
    ucs_stats_class_t *iface_stats;
    ucs_stats_class_t *ep_stats;

    /* what the shared code does not decide: the lanes of a send queue, a
     * quota, the send queues' attributes (before any is made) */
    ucs_status_t (*iface_config)(struct strand_iface         *iface,
                                 const strand_iface_config_t *config);

    /* the send queues that exist from the interface's open on, and what
     * the transport has besides them (dc_strand: its DCT); close: before
     * the receive side goes */
    ucs_status_t (*sq_open)(struct strand_iface *iface);
    void (*sq_close)(struct strand_iface *iface);
    /* an endpoint's own part: made after the shared one (UCS_ERR_*: the
     * endpoint is not made), gone before the shared one's */
    ucs_status_t (*ep_init)(struct strand_iface *iface, struct strand_ep *ep,
                            const uct_ep_params_t *params);
    void (*ep_cleanup)(struct strand_iface *iface, struct strand_ep *ep);
    /* the peer of an endpoint, for the log */
    const char *(*ep_peer_str)(struct strand_iface    *iface,
                               const struct strand_ep *ep, char *buf,
                               size_t max);
    /* is ep's peer the interface at these addresses (uct_ep_is_connected:
     * UCP asks before it makes another endpoint to a peer)? */
    int (*ep_is_connected)(struct strand_iface     *iface,
                           const struct strand_ep  *ep,
                           const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t  *iface_addr);
    /* a send queue for ep, which is not ready to post: UCS_OK when it may
     * be now, UCS_ERR_NO_RESOURCE when not. The answer is in ep->txq and
     * ep->lane (and STRAND_EP_FLAG_MOVING); the endpoint updates its own
     * readiness from it (txq_state.h): the transport never does */
    ucs_status_t (*sq_lease)(struct strand_iface *iface, struct strand_ep *ep);
    /* ep has nothing outstanding any more: its lease ends (ep->txq none;
     * the endpoint updates its readiness) */
    void (*sq_release)(struct strand_iface *iface, struct strand_ep *ep);
    /* whether ep, not ready, could post now, changing nothing */
    /* while others wait for a send queue: whether txq's lessee posted
     * its share since its lease began (from txq->wqes); NULL: no quota */
    int (*sq_quota_spent)(struct strand_iface     *iface,
                          const struct strand_txq *txq);
    int (*sq_can_post)(struct strand_iface *iface, struct strand_ep *ep);
    /* a send queue whose lessee went or whose last WQE came back */
    void (*sq_idle)(struct strand_iface *iface, struct strand_txq *txq);
    /* every WQE of a lane in error is back: 0 when the lane was reset, an
     * errno when not (its send queue is in error then); NULL: a lane never
     * fails alone */
    int (*lane_reset)(struct strand_iface *iface, struct strand_txq *txq,
                      unsigned lane);
    /* a send queue in error, every CQE of it consumed: 0 when it is back in
     * service, an errno when not (it stays out of service) */
    int (*sq_reset)(struct strand_iface *iface, struct strand_txq *txq);
    /* the transport's lines of the VFS file of the send queues (before
     * theirs), and whether its own invariants hold; NULL: none */
    int (*sq_show)(struct strand_iface *iface, ucs_string_buffer_t *strb);
    /* the transport's words at the end of a lane's line there; NULL:
     * none */
    void (*lane_show)(struct strand_iface *iface, const struct strand_txq *txq,
                      unsigned lane, ucs_string_buffer_t *strb);
    /* a send CQE of a QP no send queue of the interface owns: 0 when it was
     * the transport's; NULL: there are none */
    int (*tx_cqe_other)(struct strand_iface     *iface,
                        const struct mlx5_cqe64 *cqe);
} strand_tl_ops_t;

/* send CQE -> send queue: by QP number (the user index is the
 * provider's) */
KHASH_MAP_INIT_INT(strand_txq_qpn, uint16_t)

/* A QPN -> send queue entry of the direct-mapped table before the hash */
#define STRAND_TXQ_HINTS 64
typedef struct strand_txq_hint {
    uint32_t           qpn; /* STRAND_TXQ_HINT_NONE: empty */
    struct strand_txq *txq;
} strand_txq_hint_t;
#define STRAND_TXQ_HINT_NONE UINT32_MAX /* no QPN (24 bits) */

/* A send CQ and where its consumer is. */
typedef struct strand_tx_cq {
    strand_dev_cq_t    cq;
    uint32_t           ci;
    strand_cq_cursor_t cur;    /* at ci, in runs of tx_ci_batch */
    uint8_t            arm_sn; /* +1 per event received on it */
} strand_tx_cq_t;

/* What of a short operation's WQE follows from the operation and its
 * length alone: the WQE's opcode, ds and BBs and its inline segment's
 * byte count, kept by length (written when the interface's entry points
 * are chosen, ep_short.c), so that a post reads them instead of computing
 * them. */
typedef struct strand_short_shape {
    uint64_t head; /* ctrl bytes 0-7 as stored but for the WQE index and
                      the QP number: opcode and ds */
    uint32_t inl;  /* the inline segment's byte_count as stored */
    uint32_t bbs;  /* STRAND_SHORT_NONE: a length the fast path does
                      not take (more than its send queue ever has room
                      for: its room check fails) */
} strand_short_shape_t;

#define STRAND_SHORT_NONE 0x40000000u

typedef struct strand_iface {
    uct_base_iface_t super;
    UCS_STATS_NODE_DECLARE(stats) /* stats.h */
    strand_md_t           *md;
    strand_dev_t          *dev;
    const strand_tl_ops_t *tl;      /* its transport's part */
    const char            *tl_name; /* tl->names.tl, .cfg_prefix */
    const char            *cfg_prefix;
    uint8_t                min_rnr_timer; /* the receive side's RNR timer */

    strand_dev_channel_t  channel; /* completion events (event fd) */
    strand_dev_channel_t *chan;    /* where its CQs report (its own
                                      channel) */
    /* send CQs: one per tx_cq_txqs send queues (tl->sqs_per_cq), made as
     * send queues come (the first at open), each with room for what its
     * queues can have outstanding (a flush completes every WQE) */
    strand_tx_cq_t    *tx_cqs;
    unsigned           num_tx_cqs, max_tx_cqs;
    unsigned           tx_cq_next; /* polled first next time */
    unsigned           tx_cq_txqs; /* send queues per send CQ */
    unsigned           tx_cq_len;  /* entries of each */
    strand_dev_cq_t    rx_cq;
    uint32_t           tx_ci_batch; /* send CQEs consumed at most
                                       before the CQ is told */
    uint32_t           rx_ci;
    strand_cq_cursor_t rx_cur;       /* at rx_ci (rx.c) */
    uint8_t            rx_am_in_cqe; /* op_own (opcode and format, se
                                        and owner masked) of the
                                        common receive CQE: an
                                        active message scattered to
                                        it; 1 (never) with tag
                                        matching (rx.c) */
    uint8_t            tx_cqe_shift; /* log2 of the CQE sizes */
    uint8_t            rx_cqe_shift;
    uint8_t            rx_arm_sn; /* arm sequence numbers: +1 per
                                     event received on the CQ */
    strand_dev_srq_t   srq;
    /* the thread domain every send queue of the interface is made on: a
     * BlueFlame register of its own, which no QP another thread rings
     * shares (an interface belongs to one worker; spec section 9) */
    strand_dev_td_t td;
    uint8_t         have_td;
    uint8_t         have_channel;
    uint8_t         have_rx_cq, have_srq;
    uint8_t         have_rx_mp, have_tx_mp, have_fc;

    /* receive side: the SRQ's linked list of WQEs (free list from
     * srq_head, sentinel at srq_tail); `srq_posted` counts WQEs ever
     * posted (the doorbell record) */
    strand_rx_desc_t **srq_descs;
    uint32_t           srq_mask;
    uint32_t           srq_head, srq_tail;
    uint16_t           srq_posted;
    uint32_t           srq_missing; /* consumed and not yet refilled */
    ucs_mpool_t        rx_mp;
    uct_recv_desc_t    release_desc;
    uct_recv_desc_t    release_tm_desc; /* unexpected tagged messages */

    /* hardware tag matching (config.am_tmh != 0): the SRQ is a tag-matching
     * one, its list operations go to this command QP */
    strand_dev_qp_t tm_cmd_qp;
    strand_tm_t     tm;
    uint8_t         have_tm;

    /* send side */
    ucs_mpool_t             tx_mp;
    strand_tx_desc_t       *scratch; /* landing zone of non-fetching
                                        atomics */
    struct strand_txq      *txqs;    /* the send queues, by index */
    unsigned                num_txqs;
    unsigned                txq_hwm;    /* slots set up: [0, txq_hwm) */
    unsigned                held_txqs;  /* of them, with their doorbells
                                           held (strand_txq_hold) */
    khash_t(strand_txq_qpn) txq_by_qpn; /* QPN -> send queue index */
    strand_txq_hint_t       txq_hints[STRAND_TXQ_HINTS]; /* the same, at
                                                            qpn % STRAND_TXQ_HINTS when
                                                            qpn matches: a send CQE's
                                                            queue without the hash */
    uint8_t                 txq_wanted;     /* an ep waits for a send queue
                                               (strand_iface_want_txq) */
    unsigned                tx_gate;        /* the fast path of short posts is
                                               open to an ep whose tx_gate is
                                               this (iface.h, endpoints); moved on where
                                               every ep must look again: an
                                               iface fence, an ep starting to
                                               wait for a send queue */
    uint32_t                tx_beat;        /* moves on where a refused short
                                               post may go through now
                                               (iface.h, refusals) */
    struct mlx5_wqe_av      nop_av;         /* the address part of a WQE
                                               that goes nowhere (the NOP a
                                               send queue posts for a CQE):
                                               every WQE of a send queue carries
                                               one; the transport's own
                                               (dc_strand: its DCT) */
    uint8_t                 nop_av_ds;      /* its 16-byte units; 0: none
                                               (connected QPs) */
    unsigned                tx_moderation;  /* a CQE per this many WQEs at
                                               least (1: every WQE) */
    uint8_t                 repost_pending; /* held WQEs wait for room */
    struct strand_failed   *failed;         /* eps failed, owner not told yet */
    unsigned                num_failed, max_failed;
    strand_dev_path_t       path;    /* its packets' SL and traffic
                                        class (TRAFFIC_CLASS, SL) */
    strand_dev_sq_attr_t    sq_attr; /* how its send queues are made
                                        (the transport's QPs: a send queue's
                                        attributes, of which an RC QP
                                        takes the common part) */
    ucs_arbiter_t           arbiter; /* pending, one group per ep */
    ucs_list_link_t         eps;     /* every ep (a destination that
                                        is gone fails all that wait
                                        on it) */
    unsigned                fence_beat;

    strand_fc_t fc; /* receiver flow control */

    /* integrity-checked GETs (integrity_get.c): the landing mkeys, and
     * the GETs that wait for room or a landing mkey */
    strand_integrity_t      integrity;
    strand_integrity_req_t *integrity_queue;
    uint8_t                 integrity_starved; /* a pending request waits for
                                                  a landing mkey */

    struct {
        unsigned                 tx_queue_len;
        unsigned                 rx_queue_len;
        unsigned                 rx_max_poll; /* receive CQEs per progress */
        unsigned                 tx_max_poll; /* sends completed per progress */
        uct_iface_mpool_config_t rx_mp;       /* the receive buffers' pool */
        size_t                   seg_size;
        size_t                   max_inline;
        size_t   am_short_payload; /* am_short's length at most */
        unsigned max_sge;
        int      atomic_reply_be32; /* fetched 32-bit values
                                       are big-endian */
        int      atomic_reply_be64; /* ... 64-bit values */
        unsigned txq_max_bbs;       /* the largest WQE we build */
        unsigned num_lanes;         /* per send queue */
        uint8_t  lanes_fail_alone;  /* a lane in error leaves its
                                       send queue working (else
                                       every error is the whole
                                       queue's) */
        unsigned av_size;           /* 16 (base) or 48 (with GRH) */
        int      masked_atomics;
        int      rx_inline;      /* scatter-to-CQE on the receive
                                    side (128-byte receive CQEs) */
        unsigned am_tmh;         /* 16 with tag matching: every
                                    message starts with a TMH */
        uint8_t  iface_addr_len; /* its addresses' lengths (a
                                    credit request carries them:
                                    fc_grant.c), set by the transport */
        uint8_t  dev_addr_len;
        size_t   rx_payload_offset;  /* desc -> payload */
        size_t   rx_headroom_offset; /* desc -> what UCP gets */
    } config;

    /* short operations' WQEs by length: am_short's by payload length,
     * put_short's by data length */
    strand_short_shape_t am_shape[STRAND_MAX_INLINE + 1];
    strand_short_shape_t put_shape[STRAND_MAX_INLINE + 1];
} strand_iface_t;

/* This interface's addresses as a credit request carries them (fc.h) */
static UCS_F_ALWAYS_INLINE size_t
strand_iface_reply_addr_len(const strand_iface_t *iface)
{
    return iface->config.iface_addr_len + iface->config.dev_addr_len;
}

/* --------------------------------------------------------- endpoints */

enum {
    STRAND_EP_FLAG_FAILED       = UCS_BIT(0), /* failed: every operation
                                                 returns its status */
    STRAND_EP_FLAG_FAIL_PENDING = UCS_BIT(1), /* its owner is still to
                                                 be told */
    STRAND_EP_FLAG_IN_PENDING   = UCS_BIT(2), /* a pending request of
                                                 this ep runs now */
    STRAND_EP_FLAG_FC_REQ       = UCS_BIT(3), /* credits requested */
    STRAND_EP_FLAG_INTERNAL     = UCS_BIT(4), /* the transport's own (flow
                                                 control grants): errors are
                                                 not reported to the user */
    STRAND_EP_FLAG_MOVING = UCS_BIT(5) /* its send queue is full and another
                                          is less shared: posts
                                          nothing until its work is
                                          done, then leases again */
};

/*
 * Readiness: whether an endpoint may post on its send queue as far as its own
 * state and its lease's go (leased; the send queue ACTIVE; its stream OK; nothing
 * of it held for re-posting; not MOVING, not FAILED; no pending requests),
 * kept in ep->tx_txq by strand_ep_tx_update() at every change of one of
 * those conditions, so that a post checks one pointer instead of each.
 * What changes with every post (room in the SQ, flow-control credits) is
 * checked by the post itself.
 *
 * The gate: a short operation is posted straight from its entry point
 * (ep_post.h, the fast path) while ep->tx_gate == iface->tx_gate. It is
 * opened (strand_ep_gate) where ep is ready, no fence is due and no ep
 * waits for a send queue, and closed where one of those stops: ep's readiness,
 * an ep fence (ep's gate), an iface fence or an ep starting to wait for a
 * send queue (iface->tx_gate moves on: every gate closes at once). A closed gate
 * opens again after a post on the general path.
 *
 * Refusals: a short post the general path refused (UCS_ERR_NO_RESOURCE:
 * pending requests, no lease, no room, no credits) is refused again from
 * the entry point, without the general path's look at the send queues, while
 * ep->refused_beat == iface->tx_beat. The beat moves on
 * (strand_iface_tx_beat) wherever that answer may change: a progress call
 * that found work, a WQE retired, a readiness change of any ep, a send
 * queue's or lane's state, a grant of credits, the pending dispatch. A
 * pending_add that finds the ep could send (BUSY) forgets its refusal.
 */
typedef struct strand_ep {
    uct_base_ep_t      super;
    struct strand_txq *tx_txq;       /* its send queue while it is ready
                                        (above);
                                        NULL: the general path decides */
    uint64_t           tx_am_tail;   /* while ready: ctrl bytes 8-15 of its
                                        am_short WQEs as stored (its
                                        stream id, solicited; imm 0) */
    uint64_t           tx_put_tail;  /* ... of its put_short WQEs */
    unsigned           tx_gate;      /* == iface->tx_gate: the fast path
                                        is open (above) */
    uint32_t           refused_beat; /* iface->tx_beat when the general
                                        path last refused its short post
                                        (below) */
    uint32_t           tx_am_kind;   /* while ready: the kind word of its
                                        am_short's op records (txq.h) */
    uint32_t           tx_put_kind;  /* ... of its put_short's */
    UCS_STATS_NODE_DECLARE(stats)    /* stats.h */
    struct mlx5_wqe_av  av;          /* the peer's DCT, ready for WQEs */
    uint8_t             av_ds;       /* 1 (base AV) or 3 (with GRH) */
    uint64_t            dest_key;    /* the peer NIC (lanes per peer) */
    uint64_t            dest;        /* the transport's key of its
                                        destination (the peer NIC and
                                        its DCT or QP): eps with one fail
                                        together on a peer-wide error */
    uint16_t            txq;         /* leased send queue (a connected
                                        QP's: its own for good);
                                        STRAND_TXQ_NONE: none */
    uint8_t             lane;        /* leased lane (index in the send
                                        queue) */
    uint8_t             flags;
    uint16_t            held;         /* flushed, to be posted again */
    uint16_t            checked_gets; /* checked GETs not over: pieces
                                         read again go behind a flush's
                                         NOP (integrity_get.c) */
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
    int32_t             fc_over;      /* active messages it may send before
                                         one looks at flow control: its
                                         window (strand_ep_fc_wnd) less
                                         fc_limit, so that the fast path
                                         spends and checks a credit in one
                                         step */
    int32_t             fc_limit;     /* an active message looks at flow
                                         control when its window is not
                                         above this (ep_post.c) */
    uint32_t            fc_id;        /* its id in FC requests and grants */
    uint16_t            fc_seq;       /* its last credit request */
    uint16_t            fc_seq_first; /* the first of the current wait */
    ucs_time_t          fc_req_time;  /* when it last asked */
} strand_ep_t;

/* The active messages ep may still send (flow control's window). */
static UCS_F_ALWAYS_INLINE int32_t strand_ep_fc_wnd(const strand_ep_t *ep)
{
    return ep->fc_over + ep->fc_limit;
}

static UCS_F_ALWAYS_INLINE void
strand_ep_fc_set_wnd(strand_ep_t *ep, int32_t wnd)
{
    ep->fc_over = wnd - ep->fc_limit;
}

/* Something changed that may let a refused short post through (refusals,
 * above). */
static UCS_F_ALWAYS_INLINE void strand_iface_tx_beat(strand_iface_t *iface)
{
    ++iface->tx_beat;
}

/* ep's short post was refused: refused again until the beat moves on */
static UCS_F_ALWAYS_INLINE ucs_status_t strand_ep_refused_short(
        strand_iface_t *iface, strand_ep_t *ep, ucs_status_t status)
{
    if (status == UCS_ERR_NO_RESOURCE) {
        ep->refused_beat = iface->tx_beat;
    }
    return status;
}

/* An ep waits for a send queue: the eps holding one want CQEs and count
 * their quota, so every fast path closes (ep.h). */
static UCS_F_ALWAYS_INLINE void strand_iface_want_txq(strand_iface_t *iface)
{
    if (!iface->txq_wanted) {
        iface->txq_wanted = 1;
        ++iface->tx_gate;
    }
}

/* An assertion of debug builds (--enable-debug) only: UCX's own are on in
 * every build of this UCX, too costly on the post path. */
#ifdef STRAND_DEBUG
#define strand_debug_assert(_cond) ucs_assert_always(_cond)
#else
#define strand_debug_assert(_cond) \
    do {                           \
    } while (0)
#endif

/* The header an active message starts with: the AM id, and with tag
 * matching a NO_TAG TMH (zeroes) before it. */
static UCS_F_ALWAYS_INLINE unsigned
strand_am_hdr_len(const strand_iface_t *iface)
{
    return STRAND_AM_HDR_SIZE + iface->config.am_tmh;
}

static UCS_F_ALWAYS_INLINE unsigned
strand_am_hdr_pack(const strand_iface_t *iface, uint8_t *buf, uint8_t am_id)
{
    memset(buf, 0, iface->config.am_tmh);
    buf[iface->config.am_tmh] = am_id;
    return strand_am_hdr_len(iface);
}

#endif
