/*
 * dc_strand: the DC transport of the strand component.
 *
 * One interface = one DCT on one SRQ (receive side), a send CQ and a
 * receive CQ, and a pool of DCIs (send side). An endpoint takes a DCI from
 * the pool while it has outstanding work ("dcs" policy), so an error on a
 * DCI belongs to exactly one endpoint: that endpoint fails, the DCI is reset
 * and goes back to the pool, every other endpoint keeps going.
 */
#ifndef STRAND_DC_IFACE_H_
#define STRAND_DC_IFACE_H_

#include "uct_mlx5/strand_md.h"
#include "dc_stats.h"
#include "dev/dev.h"
#include "dc_fc.h"
#include "uct_mlx5/common/tm.h"
#include "uct_mlx5/common/iface_config.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_iov.inl>
#include <ucs/arch/cpu.h>
#include <ucs/sys/math.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/khash.h>

#define STRAND_DC_TL_NAME        "dc_strand"
#define STRAND_DC_CONFIG_PREFIX  "DC_STRAND_"
#define STRAND_DC_ACCESS_KEY     0x1ee7a330ull  /* DC access key (as UCX) */
#define STRAND_DC_AM_HDR_SIZE    1u             /* the AM id byte */
#define STRAND_DC_AM_HDR_MAX     (STRAND_TMH_SIZE + STRAND_DC_AM_HDR_SIZE)
#define STRAND_DC_DCI_NONE       0xffff
#define STRAND_DC_MAX_DCI        128
#define STRAND_DC_MAX_SGE        16             /* data segments per WQE */
#define STRAND_DC_AM_MAX_HDR     128            /* am_zcopy header bytes */
#define STRAND_DC_MAX_ZCOPY      (1ul << 30)
#define STRAND_DC_CONNECT_LATENCY 60e-9         /* DC connect packet (as
                                                   UCX's dc_mlx5) */

/* How endpoints share the DCIs (UCX_DC_STRAND_TX_POLICY). */
typedef enum strand_dc_tx_policy {
    STRAND_DC_TX_POLICY_DCS,        /* a DCI per active ep, held until idle */
    STRAND_DC_TX_POLICY_DCS_QUOTA,  /* ... but given back after QUOTA posts
                                       while another ep waits for one */
    STRAND_DC_TX_POLICY_STREAMS,    /* DCIs shared, a stream per ep or peer */
    STRAND_DC_TX_POLICY_AUTO,       /* streams where the device has them */
    STRAND_DC_TX_POLICY_LAST
} strand_dc_tx_policy_t;

/* Which eps share a stream (UCX_DC_STRAND_STREAM_MAP). */
typedef enum strand_dc_stream_map {
    STRAND_DC_STREAM_MAP_EP,        /* a stream per ep: most isolation */
    STRAND_DC_STREAM_MAP_PEER,      /* a stream per peer NIC */
    STRAND_DC_STREAM_MAP_LAST
} strand_dc_stream_map_t;

extern const char *strand_dc_stream_map_names[];

extern const char *strand_dc_tx_policy_names[];

typedef struct strand_dc_iface_config {
    uct_iface_config_t super;
    strand_iface_common_config_t common; /* the options rc_strand has too */
    unsigned           num_dci;
    int                tx_policy;
    unsigned           quota;
    unsigned           dci_streams;
    unsigned           errored_streams;
    int                stream_map;
    int                fc_enable;
    unsigned           fc_wnd_size;
    double             fc_soft_thresh;
    ucs_time_t         fc_hard_req_timeout;
    int                rx_inline;
    int                integrity_pipeline; /* rc_strand's rendezvous:
                                              ucs_ternary_auto_value_t */
} strand_dc_iface_config_t;

/* A registered send buffer (bcopy, AM zcopy header, fetched atomics): a
 * segment and STRAND_DC_TX_SLACK bytes no operation uses
 * (strand_dc_ep_check_packed). */
#define STRAND_DC_TX_SLACK       64
typedef struct strand_dc_tx_desc {
    uint32_t lkey;
    uint32_t pad;
    uint8_t  data[] UCS_V_ALIGNED(8);
} strand_dc_tx_desc_t;

/* A receive buffer: this header, then room for the uct_recv_desc_t pointer
 * and the user's rx_headroom (UCP keeps its receive descriptor there when
 * it holds on to a message), then [AM id][payload] where the SRQ WQE
 * points (offsets in iface->config, as UCX's ib iface lays them out). */
typedef struct strand_dc_rx_desc {
    uint32_t lkey;
    uint32_t pad;
} UCS_S_PACKED strand_dc_rx_desc_t; /* packed: an odd AM alignment offset
                                       leaves it at any address */

struct strand_dc_dci;
struct strand_dc_ep;
struct strand_dc_iface;
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

    /* the send queues that exist from the interface's open on */
    ucs_status_t (*sq_open)(struct strand_dc_iface *iface);
    /* an endpoint's own part: made after the shared one (UCS_ERR_*: the
     * endpoint is not made), gone before the shared one's */
    ucs_status_t (*ep_init)(struct strand_dc_iface *iface,
                            struct strand_dc_ep *ep,
                            const uct_ep_params_t *params);
    void         (*ep_cleanup)(struct strand_dc_iface *iface,
                               struct strand_dc_ep *ep);
    /* a send queue for ep, which is not ready to post (dc_policy.h): UCS_OK
     * when it may be now, UCS_ERR_NO_RESOURCE when not */
    ucs_status_t (*sq_lease)(struct strand_dc_iface *iface,
                             struct strand_dc_ep *ep);
    /* ep has nothing outstanding any more */
    void         (*sq_release)(struct strand_dc_iface *iface,
                               struct strand_dc_ep *ep);
    /* whether ep, not ready, could post now, changing nothing */
    int          (*sq_can_post)(struct strand_dc_iface *iface,
                                struct strand_dc_ep *ep);
    /* a send queue whose lessee went or whose last WQE came back */
    void         (*sq_idle)(struct strand_dc_iface *iface,
                            struct strand_dc_dci *dci);
    /* a send queue in error, every CQE of it consumed: 0 when it is back in
     * service, an errno when not (it stays out of service) */
    int          (*sq_reset)(struct strand_dc_iface *iface,
                             struct strand_dc_dci *dci);
    /* a send CQE of a QP no send queue of the interface owns: 0 when it was
     * the transport's; NULL: there are none */
    int          (*tx_cqe_other)(struct strand_dc_iface *iface,
                                 const struct mlx5_cqe64 *cqe);
} strand_tl_ops_t;

/* send CQE -> DCI: by QP number (the user index is the provider's) */
KHASH_MAP_INIT_INT(strand_dc_qpn, uint16_t)

/* A send CQ and where its consumer is. */
typedef struct strand_dc_tx_cq {
    strand_dev_cq_t cq;
    uint32_t        ci;
    uint8_t         arm_sn;        /* +1 per event received on it */
} strand_dc_tx_cq_t;

typedef struct strand_dc_iface {
    uct_base_iface_t      super;
    UCS_STATS_NODE_DECLARE(stats)        /* dc_stats.h */
    strand_md_t          *md;
    strand_dev_t         *dev;
    const strand_tl_ops_t *tl;           /* its transport's part */
    const char           *tl_name;       /* tl->name, tl->cfg_prefix */
    const char           *cfg_prefix;
    uint8_t               min_rnr_timer; /* the receive side's RNR timer */

    strand_dev_channel_t  channel;       /* completion events (event fd) */
    strand_dev_channel_t *chan;          /* where its CQs report (its own
                                            channel) */
    /* send CQs: one per tx_cq_dcis send queues (tl->sqs_per_cq), made as
     * send queues come (the first at open), each with room for what its
     * queues can have outstanding (a flush completes every WQE) */
    strand_dc_tx_cq_t    *tx_cqs;
    unsigned              num_tx_cqs, max_tx_cqs;
    unsigned              tx_cq_next;    /* polled first next time */
    unsigned              tx_cq_dcis;    /* DCI slots per send CQ */
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
    strand_dev_qp_t       dct;
    /* the thread domain every send queue of the interface is made on: a
     * BlueFlame register of its own, which no QP another thread rings
     * shares (an interface belongs to one worker; spec section 9) */
    strand_dev_td_t       td;
    uint8_t               have_td;
    uint8_t               have_channel;
    uint8_t               have_rx_cq, have_srq, have_dct;
    uint8_t               have_rx_mp, have_tx_mp, have_fc;

    /* receive side: the SRQ's linked list of WQEs (free list from
     * srq_head, sentinel at srq_tail); `srq_posted` counts WQEs ever
     * posted (the doorbell record) */
    strand_dc_rx_desc_t **srq_descs;
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
    strand_dc_tx_desc_t  *scratch;       /* landing zone of non-fetching
                                            atomics */
    struct strand_dc_dci *dcis;
    unsigned              num_dci;
    unsigned              dci_hwm;       /* slots set up: [0, dci_hwm) */
    khash_t(strand_dc_qpn) dci_by_qpn;   /* QPN -> DCI index */
    uint16_t             *dci_stack;     /* free DCIs */
    unsigned              dci_top;
    uint8_t               dci_wanted;    /* an ep waits for a free DCI
                                            (strand_dc_iface_want_dci) */
    unsigned              tx_gate;       /* the fast path of short posts is
                                            open to an ep whose tx_gate is
                                            this (dc_ep.h); moved on where
                                            every ep must look again: an
                                            iface fence, an ep starting to
                                            wait for a DCI */
    unsigned              tx_moderation; /* a CQE per this many WQEs at
                                            least (1: every WQE) */
    uint8_t               tx_policy;     /* strand_dc_tx_policy_t, resolved */
    uint8_t               repost_pending;/* held WQEs wait for room */
    unsigned              next_dci;      /* streams: where leases start */
    struct strand_dc_failed *failed;     /* eps failed, owner not told yet */
    unsigned              num_failed, max_failed;
    strand_dev_dci_attr_t dci_attr;
    ucs_arbiter_t         arbiter;       /* pending, one group per ep */
    ucs_list_link_t       eps;           /* every ep (a destination that
                                            is gone fails all that wait
                                            on it) */
    unsigned              fence_beat;

    strand_dc_fc_t        fc;            /* receiver flow control */

    /* integrity-checked GETs (dc_integrity.c): the landing mkeys, and
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
        unsigned          dci_max_bbs;   /* the largest WQE we build */
        unsigned          quota;         /* posts per DCI while others wait
                                            (UINT_MAX: the dcs policy) */
        unsigned          num_streams;   /* per DCI (1 without streams) */
        uint8_t           log_concurent; /* DCI creation attributes */
        uint8_t           log_errored;
        int               stream_per_peer;
        int               rx_inline;     /* scatter to CQE (the DCT's) */
        unsigned          av_size;       /* 16 (base) or 48 (with GRH) */
        int               masked_atomics;
        unsigned          am_tmh;        /* 16 with tag matching: every
                                            message starts with a TMH */
        size_t            rx_payload_offset;  /* desc -> payload */
        size_t            rx_headroom_offset; /* desc -> what UCP gets */
    } config;
} strand_dc_iface_t;

extern uct_tl_t uct_dc_strand_tl;

/* An ep waits for a DCI: the eps holding one want CQEs and count their
 * quota, so every fast path closes (dc_ep.h). */
static UCS_F_ALWAYS_INLINE void
strand_dc_iface_want_dci(strand_dc_iface_t *iface)
{
    if (!iface->dci_wanted) {
        iface->dci_wanted = 1;
        ++iface->tx_gate;
    }
}

/* An assertion of debug builds (--enable-debug) only: UCX's own are on in
 * every build of this UCX, too costly on the post path. */
#ifdef STRAND_DEBUG
#define strand_dc_debug_assert(_cond) ucs_assert_always(_cond)
#else
#define strand_dc_debug_assert(_cond) do { } while (0)
#endif

/* The header an active message starts with: the AM id, and with tag
 * matching a NO_TAG TMH (zeroes) before it. */
static UCS_F_ALWAYS_INLINE unsigned
strand_dc_am_hdr_len(const strand_dc_iface_t *iface)
{
    return STRAND_DC_AM_HDR_SIZE + iface->config.am_tmh;
}

static UCS_F_ALWAYS_INLINE unsigned
strand_dc_am_hdr_pack(const strand_dc_iface_t *iface, uint8_t *buf,
                      uint8_t am_id)
{
    memset(buf, 0, iface->config.am_tmh);
    buf[iface->config.am_tmh] = am_id;
    return strand_dc_am_hdr_len(iface);
}

/* The interface with its transport's part (tl), UCT operations table and
 * configuration as the shared code reads it; rc_strand's class derives
 * from it (rc/rc_iface.c). */
UCS_CLASS_DECLARE(strand_dc_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*,
                  const strand_dc_iface_config_t*, const strand_tl_ops_t*,
                  uct_iface_ops_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(strand_dc_iface_t, uct_iface_t);
ucs_status_t strand_dc_query_devices(uct_md_h uct_md,
                                     uct_tl_device_resource_t **devices_p,
                                     unsigned *num_devices_p);
ucs_status_t strand_dc_iface_query(uct_iface_h tl_iface,
                                   uct_iface_attr_t *attr);
ucs_status_t strand_dc_iface_get_device_address(uct_iface_h tl_iface,
                                                uct_device_addr_t *addr);
int strand_dc_iface_is_reachable(const uct_iface_h tl_iface,
                                 const uct_device_addr_t *dev_addr,
                                 const uct_iface_addr_t *iface_addr);

/* dc_strand's operations (rc_strand's start from them) and its part of
 * the shared code */
extern uct_iface_ops_t strand_dc_iface_ops;
extern const strand_tl_ops_t strand_dc_tl_ops;
/* dc_strand's DCT, on the interface's SRQ and receive CQ */
ucs_status_t strand_dc_iface_dct_open(strand_dc_iface_t *iface);

/* the internal operations (rc_strand adds to them) */
void strand_dc_iface_vfs_refresh(uct_iface_h tl_iface);
ucs_status_t strand_dc_iface_estimate_perf(uct_iface_h tl_iface,
                                           uct_perf_attr_t *perf_attr);

/* helpers shared by the files of the transport */
unsigned strand_dc_iface_progress(uct_iface_h tl_iface);
ucs_status_t strand_dc_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp);
ucs_status_t strand_dc_iface_fence(uct_iface_h tl_iface, unsigned flags);

/* dc_event.c */
/* The send CQ of DCI slot dci_index, made (and those before it) if it is
 * the first of its group. */
ucs_status_t strand_dc_iface_tx_cq_get(strand_dc_iface_t *iface,
                                       unsigned dci_index,
                                       strand_dev_cq_t **cq_p);
/* Arm a send CQ for its next CQE (dc_event.c) */
void strand_dc_tx_cq_arm(strand_dc_tx_cq_t *tx);
ucs_status_t strand_dc_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t strand_dc_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/* dc_rx.c */
ucs_status_t strand_dc_rx_init(strand_dc_iface_t *iface,
                               const uct_iface_params_t *params);
void strand_dc_rx_cleanup(strand_dc_iface_t *iface);
unsigned strand_dc_rx_progress(strand_dc_iface_t *iface);
void strand_dc_rx_refill(strand_dc_iface_t *iface);

#endif
