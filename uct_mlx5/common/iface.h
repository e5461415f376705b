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
 * and recover apart (a DCI's streams; one lane where there are none).
 */
#ifndef STRAND_IFACE_H_
#define STRAND_IFACE_H_

#include "uct_mlx5/strand_md.h"
#include "uct_mlx5/common/stats.h"
#include "uct_mlx5/common/fc.h"
#include "uct_mlx5/common/tm.h"
#include "uct_mlx5/common/iface_config.h"
#include "dev/dev.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_iov.inl>
#include <ucs/arch/cpu.h>
#include <ucs/sys/math.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/string_buffer.h>

#define STRAND_PORT           1              /* the device's one port */
#define STRAND_AM_HDR_SIZE    1u             /* the AM id byte */
#define STRAND_AM_HDR_MAX     (STRAND_TMH_SIZE + STRAND_AM_HDR_SIZE)
#define STRAND_TXQ_NONE       0xffff
#define STRAND_MAX_SGE        16             /* data segments per WQE */
#define STRAND_AM_MAX_HDR     128            /* am_zcopy header bytes */
#define STRAND_MAX_ZCOPY      (1ul << 30)

/* The configuration as the shared code reads it: the options both
 * transports have, and what each fills in for itself (dc_strand's table
 * embeds it, rc_strand fixes what it has no option for). */
typedef struct strand_iface_config {
    uct_iface_config_t           super;
    strand_iface_common_config_t common;
    unsigned                     num_txqs;   /* NUM_DCI, MAX_EPS */
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
#define STRAND_TX_SLACK       64
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

/*
 * What the shared interface code asks of the transport it serves: how its
 * send queues come and go (dc_strand: a pool of DCIs and a TX policy,
 * dc_policy.c; rc_strand: a QP per endpoint, rc/rc_qp.c), what its WQEs
 * carry, and the CQEs that are its own. The shared code never asks which
 * transport it is.
 */
typedef struct strand_tl_ops {
    const char   *name;             /* "dc_strand" */
    const char   *cfg_prefix;       /* "DC_STRAND_" */
    const char   *sqs_option;       /* the option that bounds the send
                                       queues ("NUM_DCI") */
    const char   *sqs_word;         /* what the log calls them ("DCIs") */
    unsigned      max_sqs;          /* its largest value */
    unsigned      sqs_per_cq;       /* send queues sharing a send CQ at
                                       most (the CQs are made as queues
                                       come) */
    const char   *sqs_per_cq_text;  /* how the error message says it */
    unsigned      tm_tx_extra;      /* with tag matching: send CQEs of the
                                       transport's own QPs beyond those of
                                       the send queues */
    uint8_t       connected;        /* each send queue talks to one peer:
                                       its WQEs carry no address vector */
    uint8_t       own_rndv;         /* with tag matching: the transport reads
                                       rendezvous itself (the device's
                                       rendezvous header is not used) */
    unsigned      rndv_hdr_len;     /* otherwise: the device's rendezvous
                                       header after the TMH */

    /* what the shared code does not decide: the lanes of a send queue, a
     * quota, the send queues' attributes (before any is made) */
    ucs_status_t (*iface_config)(struct strand_iface *iface,
                                 const strand_iface_config_t *config);

    /* the send queues that exist from the interface's open on, and what
     * the transport has besides them (dc_strand: its DCT); close: before
     * the receive side goes */
    ucs_status_t (*sq_open)(struct strand_iface *iface);
    void         (*sq_close)(struct strand_iface *iface);
    /* an endpoint's own part: made after the shared one (UCS_ERR_*: the
     * endpoint is not made), gone before the shared one's */
    ucs_status_t (*ep_init)(struct strand_iface *iface,
                            struct strand_ep *ep,
                            const uct_ep_params_t *params);
    void         (*ep_cleanup)(struct strand_iface *iface,
                               struct strand_ep *ep);
    /* the peer of an endpoint, for the log */
    const char  *(*ep_peer_str)(struct strand_iface *iface,
                                const struct strand_ep *ep, char *buf,
                                size_t max);
    /* a send queue for ep, which is not ready to post (dc_policy.h): UCS_OK
     * when it may be now, UCS_ERR_NO_RESOURCE when not */
    ucs_status_t (*sq_lease)(struct strand_iface *iface,
                             struct strand_ep *ep);
    /* ep has nothing outstanding any more */
    void         (*sq_release)(struct strand_iface *iface,
                               struct strand_ep *ep);
    /* whether ep, not ready, could post now, changing nothing */
    int          (*sq_can_post)(struct strand_iface *iface,
                                struct strand_ep *ep);
    /* a send queue whose lessee went or whose last WQE came back */
    void         (*sq_idle)(struct strand_iface *iface,
                            struct strand_txq *dci);
    /* every WQE of a lane in error is back: 0 when the lane was reset, an
     * errno when not (its send queue is in error then); NULL: a lane never
     * fails alone */
    int          (*lane_reset)(struct strand_iface *iface,
                               struct strand_txq *txq, unsigned lane);
    /* a send queue in error, every CQE of it consumed: 0 when it is back in
     * service, an errno when not (it stays out of service) */
    int          (*sq_reset)(struct strand_iface *iface,
                             struct strand_txq *dci);
    /* the transport's lines of the VFS file of the send queues (before
     * theirs), and whether its own invariants hold; NULL: none */
    int          (*sq_show)(struct strand_iface *iface,
                            ucs_string_buffer_t *strb);
    /* a send CQE of a QP no send queue of the interface owns: 0 when it was
     * the transport's; NULL: there are none */
    int          (*tx_cqe_other)(struct strand_iface *iface,
                                 const struct mlx5_cqe64 *cqe);
} strand_tl_ops_t;

/* send CQE -> send queue: by QP number (the user index is the
 * provider's) */
KHASH_MAP_INIT_INT(strand_txq_qpn, uint16_t)

/* A send CQ and where its consumer is. */
typedef struct strand_tx_cq {
    strand_dev_cq_t cq;
    uint32_t        ci;
    uint8_t         arm_sn;        /* +1 per event received on it */
} strand_tx_cq_t;

typedef struct strand_iface {
    uct_base_iface_t      super;
    UCS_STATS_NODE_DECLARE(stats)        /* stats.h */
    strand_md_t          *md;
    strand_dev_t         *dev;
    const strand_tl_ops_t *tl;           /* its transport's part */
    const char           *tl_name;       /* tl->name, tl->cfg_prefix */
    const char           *cfg_prefix;
    uint8_t               min_rnr_timer; /* the receive side's RNR timer */

    strand_dev_channel_t  channel;       /* completion events (event fd) */
    strand_dev_channel_t *chan;          /* where its CQs report (its own
                                            channel) */
    /* send CQs: one per tx_cq_txqs send queues (tl->sqs_per_cq), made as
     * send queues come (the first at open), each with room for what its
     * queues can have outstanding (a flush completes every WQE) */
    strand_tx_cq_t    *tx_cqs;
    unsigned              num_tx_cqs, max_tx_cqs;
    unsigned              tx_cq_next;    /* polled first next time */
    unsigned              tx_cq_txqs;    /* send queues per send CQ */
    unsigned              tx_cq_len;     /* entries of each */
    strand_dev_cq_t       rx_cq;
    uint32_t              tx_ci_batch;   /* send CQEs consumed at most
                                            before the CQ is told */
    uint32_t              rx_ci;
    uint8_t               tx_cqe_shift;  /* log2 of the CQE sizes */
    uint8_t               rx_cqe_shift;
    uint8_t               rx_arm_sn;     /* arm sequence numbers: +1 per
                                            event received on the CQ */
    strand_dev_srq_t      srq;
    /* the thread domain every send queue of the interface is made on: a
     * BlueFlame register of its own, which no QP another thread rings
     * shares (an interface belongs to one worker; spec section 9) */
    strand_dev_td_t       td;
    uint8_t               have_td;
    uint8_t               have_channel;
    uint8_t               have_rx_cq, have_srq;
    uint8_t               have_rx_mp, have_tx_mp, have_fc;

    /* receive side: the SRQ's linked list of WQEs (free list from
     * srq_head, sentinel at srq_tail); `srq_posted` counts WQEs ever
     * posted (the doorbell record) */
    strand_rx_desc_t **srq_descs;
    uint32_t              srq_mask;
    uint32_t              srq_head, srq_tail;
    uint16_t              srq_posted;
    uint32_t              srq_missing;   /* consumed and not yet refilled */
    ucs_mpool_t           rx_mp;
    uct_recv_desc_t       release_desc;
    uct_recv_desc_t       release_tm_desc; /* unexpected tagged messages */

    /* hardware tag matching (config.am_tmh != 0): the SRQ is a tag-matching
     * one, its list operations go to this command QP */
    strand_dev_qp_t       tm_cmd_qp;
    strand_tm_t           tm;
    uint8_t               have_tm;

    /* send side */
    ucs_mpool_t           tx_mp;
    strand_tx_desc_t  *scratch;       /* landing zone of non-fetching
                                            atomics */
    struct strand_txq     *txqs;          /* the send queues, by index */
    unsigned              num_txqs;
    unsigned              txq_hwm;       /* slots set up: [0, txq_hwm) */
    khash_t(strand_txq_qpn) txq_by_qpn;  /* QPN -> send queue index */
    uint8_t               txq_wanted;    /* an ep waits for a send queue
                                            (strand_iface_want_txq) */
    unsigned              tx_gate;       /* the fast path of short posts is
                                            open to an ep whose tx_gate is
                                            this (dc_ep.h); moved on where
                                            every ep must look again: an
                                            iface fence, an ep starting to
                                            wait for a send queue */
    unsigned              tx_moderation; /* a CQE per this many WQEs at
                                            least (1: every WQE) */
    uint8_t               repost_pending;/* held WQEs wait for room */
    struct strand_failed *failed;     /* eps failed, owner not told yet */
    unsigned              num_failed, max_failed;
    strand_dev_dci_attr_t sq_attr;       /* how its send queues are made
                                            (the transport's QPs: a DCI's
                                            attributes, of which an RC QP
                                            takes the common part) */
    ucs_arbiter_t         arbiter;       /* pending, one group per ep */
    ucs_list_link_t       eps;           /* every ep (a destination that
                                            is gone fails all that wait
                                            on it) */
    unsigned              fence_beat;

    strand_fc_t        fc;            /* receiver flow control */

    /* integrity-checked GETs (integrity_get.c): the landing mkeys, and
     * the GETs that wait for room or a landing mkey */
    strand_integrity_t    integrity;
    strand_integrity_req_t *integrity_queue;
    uint8_t               integrity_starved; /* a pending request waits for
                                                a landing mkey */

    struct {
        unsigned          tx_queue_len;
        unsigned          rx_queue_len;
        unsigned          rx_max_poll;   /* receive CQEs per progress */
        unsigned          tx_max_poll;   /* sends completed per progress */
        uct_iface_mpool_config_t rx_mp;  /* the receive buffers' pool */
        size_t            seg_size;
        size_t            max_inline;
        size_t            am_short_payload; /* am_short's length at most */
        unsigned          max_sge;
        int               atomic_reply_be32; /* fetched 32-bit values
                                                are big-endian */
        int               atomic_reply_be64; /* ... 64-bit values */
        unsigned          txq_max_bbs;   /* the largest WQE we build */
        unsigned          quota;         /* posts per send queue while
                                            others wait (UINT_MAX: none) */
        unsigned          num_lanes;     /* per send queue */
        uint8_t           lanes_fail_alone; /* a lane in error leaves its
                                                send queue working (else
                                                every error is the whole
                                                queue's) */
        unsigned          av_size;       /* 16 (base) or 48 (with GRH) */
        int               masked_atomics;
        unsigned          am_tmh;        /* 16 with tag matching: every
                                            message starts with a TMH */
        uint8_t           iface_addr_len; /* its addresses' lengths (a
                                             credit request carries them:
                                             fc.c), set by the transport */
        uint8_t           dev_addr_len;
        size_t            rx_payload_offset;  /* desc -> payload */
        size_t            rx_headroom_offset; /* desc -> what UCP gets */
    } config;
} strand_iface_t;

/* An ep waits for a send queue: the eps holding one want CQEs and count
 * their quota, so every fast path closes (ep.h). */
static UCS_F_ALWAYS_INLINE void
strand_iface_want_txq(strand_iface_t *iface)
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
#define strand_debug_assert(_cond) do { } while (0)
#endif

/* The header an active message starts with: the AM id, and with tag
 * matching a NO_TAG TMH (zeroes) before it. */
static UCS_F_ALWAYS_INLINE unsigned
strand_am_hdr_len(const strand_iface_t *iface)
{
    return STRAND_AM_HDR_SIZE + iface->config.am_tmh;
}

static UCS_F_ALWAYS_INLINE unsigned
strand_am_hdr_pack(const strand_iface_t *iface, uint8_t *buf,
                      uint8_t am_id)
{
    memset(buf, 0, iface->config.am_tmh);
    buf[iface->config.am_tmh] = am_id;
    return strand_am_hdr_len(iface);
}

/* The interface with its transport's part (tl), UCT operations table and
 * configuration as the shared code reads it; each transport's class
 * derives from it (dc/dc_iface.c, rc/rc_iface.c). */
UCS_CLASS_DECLARE(strand_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*,
                  const strand_iface_config_t*, const strand_tl_ops_t*,
                  uct_iface_ops_t*);
ucs_status_t strand_query_devices(uct_md_h uct_md,
                                  uct_tl_device_resource_t **devices_p,
                                  unsigned *num_devices_p);
/* what both transports have; each adds its addresses and costs */
ucs_status_t strand_iface_query(strand_iface_t *iface, uct_iface_attr_t *attr);
/* the device's estimates (src/dev) */
ucs_status_t strand_iface_perf(strand_iface_t *iface, strand_dev_perf_t *perf);
/* a status for an errno of the device layer */
ucs_status_t strand_errno_status(int err);

/* the internal operations (the transports add to them) */
void strand_iface_vfs_refresh(uct_iface_h tl_iface);
ucs_status_t strand_iface_estimate_perf(uct_iface_h tl_iface,
                                        uct_perf_attr_t *perf_attr);

/* the interface operations both transports take as they are */
unsigned strand_iface_progress(uct_iface_h tl_iface);
ucs_status_t strand_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                uct_completion_t *comp);
ucs_status_t strand_iface_fence(uct_iface_h tl_iface, unsigned flags);
/* the UCT operations table both start from (ep_create, iface_close,
 * query and addresses are each transport's own) */
extern const uct_iface_ops_t strand_iface_ops;

/* event.c */
/* The send CQ of send queue txq_index, made (and those before it) if it is
 * the first of its group. */
ucs_status_t strand_iface_tx_cq_get(strand_iface_t *iface,
                                    unsigned txq_index,
                                    strand_dev_cq_t **cq_p);
/* Arm a send CQ for its next CQE */
void strand_tx_cq_arm(strand_tx_cq_t *tx);
ucs_status_t strand_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t strand_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/* rx.c */
ucs_status_t strand_rx_init(strand_iface_t *iface,
                            const uct_iface_params_t *params);
void strand_rx_cleanup(strand_iface_t *iface);
unsigned strand_rx_progress(strand_iface_t *iface);
void strand_rx_refill(strand_iface_t *iface);

#endif
