/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal objects of the software mlx5 device. Layouts of everything the
 * user sees (WQEs, CQEs, doorbell records) come from mlx5dv.h; what is here
 * is the device's private state, in the style of Linux rxe: a requester
 * (SQ -> packets, sim_req.c), a responder (packets -> memory / receive ->
 * ACK, NAK, read response, sim_resp.c) and a completer (ACKs and responses ->
 * CQEs, retries, timeouts, sim_comp.c), run by an engine (sim_engine.c).
 * A file calls only files below it: a stage with work for one above it
 * leaves it where the engine looks (the requester queue, a tag-matching
 * SRQ's rendezvous work), as rxe's stages schedule each other's tasks.
 */
#ifndef SIM_SIM_H_
#define SIM_SIM_H_

#include "smlx5.h"
#include "fabric.h"
#include "packet.h"
#include "mlx5/sq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* CQ doorbell record words (the provider's MLX5_CQ_SET_CI / ARM_DB) */
enum {
    SIM_CQ_DBR_CI  = 0,
    SIM_CQ_DBR_ARM = 1
};

/* Objects of the NIC (one per process). ConnectX reports far more (QPs
 * 2^18, CQs 2^24, SRQs 2^23); these are what the tables here hold, enough
 * for UCX's tests (thousands of endpoints and interfaces a process). */
#define SIM_QPN_SLOT_BITS 16
#define SIM_MAX_QPS       (1u << SIM_QPN_SLOT_BITS) /* QPN = gen << 16 | slot */
#define SIM_MAX_MRS       4096
#define SIM_MAX_CQS       16384
#define SIM_MAX_SRQS      8192
#define SIM_TM_MAX_TAGS   1023 /* tag list of a tag-matching SRQ */
/* list operations in flight: mlx5_ib reports 1 << log_max_qp_sz (the
 * send queue limit, 32768 BBs here), not a tag-matching limit */
#define SIM_TM_MAX_OPS          32768
#define SIM_TM_RNDV_HDR         64    /* TMH + RVH + RAVH + user header */
#define SIM_SQ_MAX_WQE          32768 /* basic blocks */
#define SIM_MAX_SGE             30
#define SIM_MAX_INLINE          828 /* like ConnectX: fits a 1 KiB WQE */
#define SIM_MAX_RD_ATOMIC       16
#define SIM_FLOWS_PER_QP        64    /* DCI: destinations in flight at once */
#define SIM_ONECOPY_DEFAULT_MIN 32768 /* STRAND_SIM_ONECOPY default */
/* for each flow i in use of qp (m: a uint64_t the walk consumes); a flow
 * may be given up inside the loop body */
#define sim_for_each_flow(_qp, _i, _m) \
    for ((_m) = (_qp)->flows_used;     \
         ((_m) != 0) && ((_i) = __builtin_ctzll(_m)) >= 0; (_m) &= (_m)-1)
#define SIM_DCI_MAX_CHANNELS 16    /* 2^dci_log_concurent at most */
#define SIM_RESP_CTX_MAX     256   /* DCT: requesters remembered at first */
#define SIM_RESP_CTX_CAP     16384 /* DCT: ... and at most */
#define SIM_RESP_HINTS       64    /* DCT: direct-mapped hints of contexts */
#define SIM_RESP_CTX_IDLE_NS \
    10000000000ull /* a context idle this long may
                      be taken by a new requester */
#define SIM_MAX_UIDX    (SIM_MAX_QPS + SIM_MAX_SRQS)
#define SIM_GID_TBL_LEN 4 /* Ethernet: link-local and ULA, v1 and v2 */

/* STRAND_SIM_PERF: what smlx5_query_perf reports instead of measuring
 * (sim_perf.c). */
typedef struct sim_perf_cfg {
    bool   set;
    double latency_ns, bw_mbs, overhead_ns, recv_overhead_ns;
} sim_perf_cfg_t;

/* Device tunables, read once from the environment (docs/software-device.md). */
typedef struct sim_config {
    uint32_t mtu;                 /* STRAND_SIM_MTU, bytes (256..4096) */
    uint64_t timeout_ns_override; /* STRAND_SIM_TIMEOUT_NS: 0 = from QP attr */
    uint64_t rnr_timer_ns;        /* STRAND_SIM_RNR_NS: 0 = from QP attr */
    int      progress_thread;     /* STRAND_SIM_PROGRESS_THREAD (default 1) */
    bool     fastpath;            /* STRAND_SIM_FASTPATH (default 1): the
                                     requester's short path for
                                     single-packet inline WRITEs / SENDs
                                     (sim_req.c); smlx5_set_fastpath */
    int      atomics;             /* STRAND_SIM_ATOMICS (default 1) */
    uint32_t onecopy_min;         /* STRAND_SIM_ONECOPY: WRITEs / READs of
                                     at least this many bytes move in one
                                     copy (sim_onecopy.c); 0: never */
    /* the NIC it looks like: STRAND_SIM_CAPS (sim_caps.c) */
    bool     masked_atomics;    /* opcodes 0x14 / 0x15 execute */
    uint8_t  atomic_mode8b;     /* the HCA's atomic_req_8B_endianness_mode:
                                   0: 8-byte replies big-endian, 1: in
                                   host order (32-bit masked replies are
                                   big-endian in either mode) */
    bool     scatter_dct;       /* SMLX5_CAP_SCATTER_TO_CQE_DCT */
    bool     signature;         /* signature mkeys, SIG_PIPELINING */
    bool     sig_pipelining;    /* ... the latter (with signature) */
    uint32_t tm_max_num_tags;   /* 0: no tag matching */
    uint32_t max_inline;        /* bytes, <= SIM_MAX_INLINE */
    uint32_t max_sge;           /* 1..SIM_MAX_SGE */
    uint8_t  dci_log_concurent; /* DCI stream caps */
    uint8_t  dci_log_errored;
    uint8_t  link_layer;  /* STRAND_SIM_LINK_LAYER: IBV_LINK_LAYER_* */
    bool     devx;        /* DEVX commands (the DCI stream reset
                             is one): 0 as under a kernel or
                             permissions that refuse them */
    int      port_tclass; /* the port's configured traffic class
                             (what sysfs tc/1/traffic_class says
                             on a host); -1: none */
    /* fault injection: STRAND_SIM_FAULTS (see sim_fault.c) */
    uint32_t       drop_ppm, dup_ppm, corrupt_ppm, delay_ppm;
    uint64_t       delay_ns;
    uint32_t       fail_rkey;    /* packets naming this rkey fail access */
    uint32_t       sdc_ppm;      /* silent data corruption: per 512 bytes
                                    of RDMA data, a bit flipped past the
                                    link CRC (sim_fault.c) */
    uint32_t       sdc_read_ppm; /* the same, READ responses only */
    uint16_t       cut_lid;      /* drop everything to/from this LID */
    uint64_t       seed;
    sim_perf_cfg_t perf; /* STRAND_SIM_PERF */
} sim_config_t;

/* ---------------------------------------------------------------- MR */
/* A slot of the key table: a memory region, or an indirect mkey (mkey
 * != NULL: addr and length are unused, the mkey translates). */
struct smlx5_mr {
    smlx5_pd_t        *pd;
    uintptr_t          addr;
    size_t             length;
    int                access;
    uint32_t           lkey, rkey;
    bool               valid;
    struct smlx5_mkey *mkey;
};

/* Where an operation through a signature mkey stands in a stream of wire
 * bytes that arrive in order (sim_sig.c): the next wire offset expected,
 * the running checksums of the current block, the signature bytes seen so
 * far. */
typedef struct sim_sig_rx {
    uint64_t pos;      /* next wire offset (zero-based, in the mkey) */
    uint32_t acc_wire; /* check of the wire signature */
    uint32_t acc_mem;  /* generation of the memory signature */
    uint8_t  sigbuf[8];
} sim_sig_rx_t;

struct smlx5_pd {
    smlx5_context_t *ctx;
    uint32_t         pdn;
    atomic_int       refs; /* objects created in it */
};

/* ---------------------------------------------------------------- CQ */
struct smlx5_channel {
    smlx5_context_t *ctx;
    int              fd; /* eventfd */
    pthread_mutex_t  lock;
    smlx5_cq_t      *fired[64]; /* CQs whose event is pending */
    unsigned         num_fired;
    atomic_int       refs;
};

struct smlx5_cq {
    smlx5_context_t *ctx;
    uint32_t         cqn;
    uint32_t         nent;      /* power of two */
    uint32_t         cqe_size;  /* 64 or 128 (MLX5_CQE_SIZE) */
    unsigned         cqe_shift; /* log2(cqe_size) */
    uint8_t         *buf;       /* nent slots of cqe_size bytes */
    __be32          *dbrec;     /* [0] consumer index, [1] arm */
    uint8_t         *uar;       /* arm doorbell page (cq_uar) */
    uint32_t         pi;        /* producer index (device) */
    smlx5_channel_t *channel;
    bool             overrun;
    /* handed out by smlx5_cq_dv: the driver no longer cleans it */
    bool dv_owned;
    /* provider side, as rdma-core's struct mlx5_cq */
    uint32_t poll_ci; /* smlx5_poll_cq's consumer index */
    uint32_t arm_sn;  /* sn of the next ibv_req_notify_cq */
    /* device side of arming (sim_cq_arm) */
    bool       armed, armed_solicited;
    uint32_t   armed_ci; /* 24 bits: fire for a CQE at or past it */
    uint8_t    armed_sn;
    bool       fired_valid; /* an arm has fired an event ... */
    uint8_t    fired_sn;    /* ... and this was its sn */
    atomic_int refs;        /* QPs/SRQs using it */
};

/* --------------------------------------------------------------- SRQ */
struct smlx5_srq {
    smlx5_context_t *ctx;
    smlx5_pd_t      *pd;
    uint32_t         srqn;
    uint32_t         user_index; /* tag-matching SRQs only, else 0xffffff */
    uint8_t         *buf;
    __be32          *dbrec;   /* [0] = WQEs ever posted (16 bit) */
    uint32_t         wqe_cnt; /* power of two */
    uint32_t         stride;
    uint32_t         max_sge;
    /* device side */
    uint16_t consumed; /* WQEs taken off the list */
    uint32_t dev_head; /* index of the next WQE to consume */
    /* provider side (smlx5_post_srq_recv) */
    uint32_t   head, tail; /* free-list ends */
    uint64_t  *wrid;
    uint16_t   posted;
    atomic_int refs;
    /* tag matching (IBV_SRQT_TM): NULL for an ordinary SRQ */
    uint32_t       max_num_tags;
    smlx5_cq_t    *tm_cq;
    struct sim_tm *tm;
};

/* ---------------------------------------------------------------- QP */

/* Where a flow is in a receiver-not-ready back-off (spec section 8), as a
 * NIC does it: the requester's CPU is not involved and the flow costs
 * nothing while it waits. */
typedef enum sim_rnr_state {
    SIM_RNR_NONE = 0,
    SIM_RNR_WAITING,  /* RNR NAKed: nothing of the flow goes out
                         until deadline_ns (the RNR timer) */
    SIM_RNR_RETRYING, /* the timer sent one go-back-N pass from
                         rnr_psn; new packets wait until the
                         responder acknowledges rnr_psn */
} sim_rnr_state_t;

/* One reliable flow: an RC connection, or the association of one channel
 * of a DCI with one DCT (DC "connect"), keyed by (channel, dlid, dqpn).
 * PSNs, retries and RNR back-off are per flow, so a channel stalled on one
 * peer does not hold the others. */
typedef struct sim_flow {
    bool            used;
    uint16_t        chan; /* DCI channel (its stream id) */
    uint16_t        dlid;
    uint32_t        dqpn;
    uint64_t        dc_key;
    uint32_t        start_psn;    /* first PSN: carries SIM_PKT_F_CONNECT */
    uint32_t        next_psn;     /* next new PSN */
    uint32_t        una_psn;      /* oldest unacknowledged PSN */
    bool            need_connect; /* first packet carries SIM_PKT_F_CONNECT */
    uint32_t        outstanding;  /* WQEs sent, not yet completed */
    uint64_t        deadline_ns;  /* retransmit timer, 0 = idle */
    uint8_t         retries;      /* transport retries used */
    uint8_t         rnr_retries;
    sim_rnr_state_t rnr_state;
    uint32_t        rnr_psn;      /* the PSN the last RNR NAK named */
    uint32_t        gap_psn;      /* response gap already re-requested */
    uint32_t        since_ackreq; /* packets sent since one asked an ACK */
    bool            gap_valid;
    bool            rexmit_pending; /* a full ring cut a retransmission ... */
    uint32_t        rexmit_psn;     /* ... here: it goes on from progress */
    uint32_t        resend_psn;     /* go-back-N the completer asked for,
                                       from here (bit in qp->resend_flows) */
    uint32_t        rd_atomic_inflight;
} sim_flow_t;

/* Device-side record of one posted WQE (indexed by BB of its ctrl). */
typedef enum sim_wqe_state {
    SIM_WQE_FREE,
    SIM_WQE_DEFERRED, /* DCI: parsed, its channel is busy with
                         another destination or stalled; it
                         goes when the channel is free */
    SIM_WQE_SENT,     /* all packets out, waiting ACK/response */
    SIM_WQE_DONE,     /* result known, CQE not yet written */
} sim_wqe_state_t;

typedef struct sim_wqe {
    /* --- every WQE: the fast path (sim_req.c) clears and fills only this
     * head, so what follows it is read only where a field here says it is
     * there */
    uint64_t        raddr; /* remote address, rkey (WRITE/READ/atomic) */
    sim_wqe_state_t state;
    uint32_t        wqe_idx; /* 16-bit WQE index from the ctrl segment */
    uint32_t        bb;      /* cur_post value (free-running) of ctrl */
    uint32_t        rkey;
    uint32_t        imm;
    uint32_t        inline_off; /* byte offset of inline data in the SQ */
    uint32_t        length;     /* bytes (READ: to scatter) */
    uint32_t        first_psn, last_psn;
    uint16_t        bbs; /* basic blocks the WQE occupies */
    uint16_t        stream;
    uint16_t        chan;   /* DCI: the channel, its stream id */
    uint8_t         opcode; /* MLX5_OPCODE_* */
    uint8_t         opmod;
    uint8_t         fm_ce_se;
    uint8_t         flow;    /* index in qp->flows */
    uint8_t         status;  /* 0 or an MLX5_CQE_SYNDROME_* */
    uint8_t         num_sge; /* entries of sge[] */
    bool            signaled;
    bool            fenced;
    bool            is_inline;
    bool            needs_response; /* READ / atomic */
    bool            onecopy;        /* its data moves in one copy: one
                                       packet (sim_onecopy.c) */
    /* requester scatter-to-CQE (cs_req): the response data goes into the
     * CQE (cqe_data), not the local buffers */
    bool to_cqe;
    /* its one SGE names an indirect / signature mkey (sge[0]: the key and
     * the zero-based offset; looked up at each use, so an mkey destroyed
     * under the WQE is never touched), and sig_rx checks what a READ
     * brings */
    bool via_mkey;
    /* --- atomics only (an atomic opcode) */
    uint8_t  atomic_op, atomic_size;
    uint64_t swap_add, compare, swap_mask, compare_mask;
    uint64_t fetched; /* the original value */
    /* --- DCI only: the target from the AV (and its SL and GRH traffic
     * class, which its packets carry) */
    uint16_t dlid;
    uint32_t dqpn;
    uint64_t dc_key;
    uint8_t  sl, tclass;
    /* --- to_cqe only */
    uint8_t cqe_data[64];
    /* --- via_mkey only */
    sim_sig_rx_t sig_rx;
    /* local scatter for READ / atomic responses, num_sge entries (the
     * general parser clears everything before it) */
    struct {
        uint64_t addr;
        uint32_t len, lkey;
    } sge[SIM_MAX_SGE];
} sim_wqe_t;

/* The part of a WQE record every WQE has (see sim_wqe_t). */
#define SIM_WQE_HEAD_SIZE offsetof(sim_wqe_t, atomic_op)

/* Responder context per requester (RC: the one peer; DCT: per DCI flow). */
typedef struct sim_resp_ctx {
    bool     used;
    uint16_t slid;
    uint32_t sqpn;
    uint16_t chan; /* DC: the requester's DCI channel */
    uint32_t epsn; /* expected PSN */
    uint64_t last_used_ns;
    uint32_t connect_psn;     /* start PSN of the requester's flow */
    bool     errored;         /* DC: NAKed with an error; wait for a
                                 new connect */
    bool     nak_outstanding; /* a PSN-sequence or RNR NAK names
                                 epsn: later packets are dropped
                                 silently until epsn comes again */
    bool     ack_pending;     /* executed, not acknowledged yet */
    uint32_t ack_psn;
    uint64_t ack_due_ns; /* coalesced ACK goes out by then */
    /* receive in progress (multi-packet SEND) */
    bool         recv_active;
    uint32_t     recv_wqe; /* SRQ/RQ WQE index */
    uint32_t     recv_off;
    smlx5_srq_t *recv_srq;
    /* tag matching: the CQE's app_op for a message in an SRQ WQE (0: not
     * tagged), or the eager tag it matched */
    uint8_t  tm_app_op;
    bool     tm_matched;
    bool     tm_trunc;
    uint32_t tm_slot;
    uint8_t  tm_tmh[16];
    /* a WRITE into a signature mkey: its stream of wire bytes */
    sim_sig_rx_t sig_rx;
    /* the last atomic results, replayed for duplicates (IBA keeps
     * max_dest_rd_atomic of them) */
    struct {
        uint32_t psn;
        uint64_t orig;
        bool     valid;
    } atomic_hist[SIM_MAX_RD_ATOMIC];
    unsigned atomic_next;
} sim_resp_ctx_t;

/* A BlueFlame register: two halves of `size` bytes on a page of its own
 * (sim_bf.c). */
typedef struct sim_bfreg {
    uint8_t        *page;
    uint32_t        size;
    unsigned        index;     /* for messages */
    bool            shared;    /* QPs without a thread domain */
    pthread_mutex_t lock;      /* the provider's own writes to a shared
                                  one (rdma-core's bf->lock) */
    strand_bf_t     bf;        /* the provider's view of it (rdma-core's
                                  struct mlx5_bf): the half its next
                                  doorbell goes to */
    _Atomic int     last_half; /* the device's: the half of the last
                                  doorbell it took (-1: none yet) */
} sim_bfreg_t;

#define SIM_BF_SHARED SMLX5_BF_SHARED

struct smlx5_td {
    smlx5_context_t *ctx;
    sim_bfreg_t      reg;
    atomic_uint      users; /* QPs on it */
};

struct smlx5_qp {
    smlx5_context_t  *ctx;
    smlx5_pd_t       *pd;
    smlx5_qp_type_t   type;
    uint32_t          qpn;
    uint32_t          dctn;
    enum ibv_qp_state state;
    smlx5_cq_t       *send_cq, *recv_cq;
    smlx5_srq_t      *srq;
    uint32_t          user_index;
    int               sq_sig_all;
    uint64_t          dc_key;
    uint8_t           log_num_concurent, log_num_errored;
    uint32_t          create_flags; /* MLX5DV_QP_CREATE_* */
    bool              sig_pipelining;
    /* signature pipelining: a transfer failed its check; the SQ stops in
     * SQD before the next fenced WQE (sim_req.c) */
    bool sig_stop;
    /* IBV_EVENT_SQ_DRAINED is due once everything before the stop point
     * has completed */
    bool sqd_notify;
    /* tag matching: the command QP of a TM SRQ (its WQEs are list
     * operations), or the device's own DCI of a TM SRQ (rendezvous READs
     * and FINs; its completions are the device's, not a CQ's) */
    struct sim_tm *tm_cmd;
    struct sim_tm *tm_rndv;
    /* scatter-to-CQE: the largest message (bytes) that goes into the
     * CQE instead of a buffer, as the kernel sets cs_res / cs_req; 0: off */
    uint8_t cs_res, cs_req;

    /* attributes set by modify */
    int      access_flags;
    uint32_t path_mtu;    /* bytes */
    uint16_t dlid;        /* RC (Ethernet: resolved from dgid) */
    uint8_t  path_sl;     /* RC, DCT: the SL and the GRH's */
    uint8_t  path_tclass; /* traffic class of the path (what
                             its packets, a DCT's responses,
                             carry) */
    uint32_t dest_qpn;    /* RC */
    uint32_t rq_psn, sq_psn;
    uint8_t  timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint8_t  max_rd_atomic, max_dest_rd_atomic;

    /* send queue (user-visible through mlx5dv_qp) */
    uint8_t          *sq_buf;
    uint32_t          sq_wqe_cnt; /* BBs, power of two */
    __be32           *dbrec;      /* [0] RQ, [1] SQ */
    uint8_t          *bf_reg;     /* bfreg's page (2 x bf_size) */
    uint32_t          bf_size;
    sim_bfreg_t      *bfreg; /* shared, or its thread domain's */
    smlx5_td_t       *td;
    struct ibv_qp_cap cap;

    /* provider side of the SQ (smlx5_post_send) */
    strand_sq_t sq;          /* producer index, doorbell */
    uint32_t    sq_tail;     /* BB counter retired by polled CQEs */
    uint64_t   *sq_wrid;     /* per BB of a ctrl: wr_id */
    uint32_t   *sq_wqe_head; /* per BB of a ctrl: cur_post after it */
    uint8_t    *sq_opcode;   /* per BB of a ctrl: ibv_wc_opcode */

    /* device side of the SQ */
    uint32_t         db_pi;         /* the producer index (BBs, 16
                                       bits) of the last doorbell the
                                       device took: it fetches no
                                       further (a doorbell it lost
                                       tells it nothing) */
    uint32_t         sq_fetched;    /* BBs parsed into sim_wqe */
    uint32_t         req_bb;        /* BB of the WQE being transmitted
                                       (== sq_fetched when none) */
    uint32_t         req_psn;       /* next PSN to send within it */
    uint32_t         next_flow_psn; /* DCI: start PSN of the next flow */
    bool             busy;          /* in ctx's active list */
    uint32_t         sq_completed;  /* BBs whose CQE is written */
    sim_wqe_t       *wqes;          /* indexed by BB & (sq_wqe_cnt-1) */
    sim_flow_t       flows[SIM_FLOWS_PER_QP];
    uint64_t         flows_used;   /* bit i: flows[i].used (the timer,
                                      ACK and idle walks visit these
                                      only) */
    uint64_t         resend_flows; /* bit i: the completer asked for a
                                      go-back-N pass of flows[i] */
    struct smlx5_qp *req_next;     /* in ctx's requester queue */
    bool             req_queued;
    uint32_t         rd_atomic_inflight;
    uint32_t         num_deferred; /* DCI: WQEs in SIM_WQE_DEFERRED */
    uint8_t          chan_flow[SIM_DCI_MAX_CHANNELS]; /* DCI: 1 + the flow
                                                         a channel has work outstanding on
                                                         (one at a time), 0: idle */
    uint32_t         errored_streams[64]; /* stream ids in error (DCI) */
    unsigned         num_errored;

    /* receive queue (RC without SRQ) */
    uint8_t  *rq_buf;
    uint32_t  rq_wqe_cnt, rq_stride;
    uint32_t  rq_head, rq_tail; /* provider */
    uint16_t  rq_consumed;      /* device */
    uint64_t *rq_wrid;

    /* outbound backpressure: the fabric is lossless, a full inbound ring
     * of the peer makes the sender wait (and retry from progress) */
    bool                 tx_blocked; /* requester stopped at a full ring */
    struct sim_read_job *rjobs;      /* responder: read responses to go */
    uint32_t             rjob_head, rjob_tail, rjob_cap;

    /* responder */
    sim_resp_ctx_t *resp; /* RC: 1, DCT: SIM_RESP_CTX_MAX */
    unsigned        num_resp;
    uint16_t        resp_hint[SIM_RESP_HINTS]; /* DCT: index + 1 of the
                                                  context a requester's hash last
                                                  found (0: none); checked against
                                                  the context's key before use */
    unsigned        acks_pending; /* resp contexts with ack_pending */

    smlx5_qp_stats_t stats; /* smlx5_qp_stats */
};

/* ------------------------------------------------------------ context */
typedef struct sim_async_queue {
    smlx5_async_event_t ev[256];
    unsigned            head, tail;
} sim_async_queue_t;

struct smlx5_context {
    sim_config_t    cfg;
    sim_fabric_t   *fabric;
    sim_port_t     *port;
    struct sim_net *net; /* a fabric across hosts, or NULL */
    uint16_t        lid; /* internal on Ethernet: routing */
    /* what the port shows (sim_port.c): GID table, MAC */
    union ibv_gid     gids[SIM_GID_TBL_LEN];
    enum ibv_gid_type gid_types[SIM_GID_TBL_LEN];
    unsigned          num_gids;
    uint8_t           mac[6];    /* Ethernet only */
    uint64_t          fabric_id; /* the fabric's identity (random,
                                    sim_fabric_identity): its subnet
                                    and GID prefixes */
    uint32_t          tag;       /* high bits of QPN/keys: unique per ctx */
    pthread_mutex_t   lock;      /* the device engine lock */
    /* one thread owns the context: the data path runs the engine without
     * the lock (sim_engine_enter); engine_in_use may catch a second one */
    bool        single_thread;
    atomic_bool engine_in_use;
    int         refs;

    smlx5_qp_t  *qps[SIM_MAX_QPS];
    smlx5_mr_t  *mrs[SIM_MAX_MRS];
    smlx5_cq_t  *cqs[SIM_MAX_CQS];
    smlx5_srq_t *srqs[SIM_MAX_SRQS];
    /* user indexes (CQE version 1): the provider's table, one slot per
     * QP, DCT or tag-matching SRQ, first free slot first */
    void       *uidx[SIM_MAX_UIDX];
    uint32_t    next_pdn;
    uint32_t    qp_gen;
    uint64_t    next_deadline_ns;    /* earliest timer, 0 = none */
    smlx5_qp_t *active[SIM_MAX_QPS]; /* QPs with work in flight */
    unsigned    num_active;
    unsigned    resume_first; /* where the last resume pass began */
    /* QPs whose requester the completer handed work (sim_req_queue_add):
     * the engine runs them, in order */
    smlx5_qp_t         *req_head, *req_tail;
    unsigned            tm_work; /* TM SRQs with rendezvous work that
                                    waits for the engine */
    struct sim_delayed *delayed; /* fault injection: held packets */
    uint32_t            key_gen; /* MR key variant byte */

    uint32_t polls;       /* smlx5_progress calls */
    uint32_t busy_passes; /* engine passes that took packets */
    bool     tx_backlog;  /* some QP waits for ring space */

    int               async_fd; /* eventfd */
    sim_async_queue_t async;
    uint64_t          rng;

    /* BlueFlame registers QPs without a thread domain share (sim_bf.c) */
    sim_bfreg_t   bfregs[SIM_BF_SHARED];
    atomic_uint   next_bfreg;
    atomic_uint   next_tdreg; /* numbers, for messages */
    atomic_ullong bf_conflicts;
    atomic_ullong bf_lost;
    atomic_ullong rx_sl[16]; /* packets received, by SL */
    atomic_ullong rx_tclass[256];
    /* ... by GRH traffic class */ /* doorbells written to the half of
                                         a register its last one went to */

    pthread_t     thread;
    bool          thread_running;
    atomic_bool   stop;
    atomic_ullong thread_loops; /* smlx5_progress_stats */
};

/* --------------------------------------------------- internal helpers */
typedef struct sim_delayed {
    struct sim_delayed *next;
    uint64_t            due_ns;
    uint16_t            dlid;
    size_t              len;
    uint8_t             data[];
} sim_delayed_t;

void sim_fault_config_read(sim_config_t *cfg);
void sim_fault_cleanup(smlx5_context_t *ctx);

/* BlueFlame registers (sim_bf.c): the context's shared ones; the register
 * a new QP rings (its thread domain's, or a shared one); released at
 * destroy; and the check of a doorbell when the device is told of it. */
int          sim_bf_init(smlx5_context_t *ctx);
void         sim_bf_cleanup(smlx5_context_t *ctx);
sim_bfreg_t *sim_bf_take(smlx5_context_t *ctx, smlx5_td_t *td);
void         sim_bf_put(smlx5_qp_t *qp);
/* A doorbell of qp, checked against its register: false when the device
 * takes nothing from it (written to the half of the register's last
 * doorbell: lost) */
bool sim_bf_check(smlx5_qp_t *qp);
/* The device is told of every WQE up to qp's doorbell record (a doorbell
 * it took; the device's own queues, which it needs none for) */
void sim_qp_told(smlx5_qp_t *qp);
bool sim_fault_active(const smlx5_context_t *ctx);
/* the fault draws' generator, from cfg.seed (or the clock without one) */
void sim_fault_seed(smlx5_context_t *ctx);
int  sim_fault_send(smlx5_context_t *ctx, uint16_t dlid, sim_pkt_t *hdr,
                    const void *payload, size_t len);
void sim_fault_release(smlx5_context_t *ctx, uint64_t now);
void sim_cqe_error(smlx5_cq_t *cq, uint8_t cqe_opcode, uint32_t qpn,
                   uint8_t wqe_opcode, uint16_t wqe_counter, uint8_t syndrome,
                   uint32_t user_index);
bool sim_fault_rkey(smlx5_context_t *ctx, uint32_t rkey);
/* STRAND_SIM_FAULTS sdc: flip bits in RDMA data that has left the link
 * (or was copied in one copy) */
void sim_fault_sdc(smlx5_context_t *ctx, uint8_t *data, size_t len, bool read);
bool sim_timers_due(smlx5_context_t *ctx);
int  sim_engine_progress(smlx5_context_t *ctx); /* lock held */
void sim_cq_clean(smlx5_cq_t *cq, const smlx5_qp_t *qp);
uint64_t sim_now_ns(void);
int      sim_config_read(sim_config_t *cfg); /* 0 or EINVAL */
/* STRAND_SIM_CAPS and STRAND_SIM_LINK_LAYER into cfg (sim_caps.c). */
int sim_caps_config_read(sim_config_t *cfg);
/* STRAND_SIM_PERF into cfg->perf (sim_perf.c); 0 or EINVAL (said on
 * stderr). */
int      sim_perf_config_read(sim_config_t *cfg);
uint64_t sim_timeout_ns(const smlx5_qp_t *qp);
uint64_t sim_rnr_timer_ns(const smlx5_context_t *ctx, uint8_t min_rnr_timer);

/* The provider's user-index table (lock held): the first free index, or
 * -1 when the table is full; release gives it back. */
int32_t sim_uidx_store(smlx5_context_t *ctx, void *obj);
void    sim_uidx_clear(smlx5_context_t *ctx, uint32_t uidx);

/* Port identity (sim_port.c): GIDs, MACs, address vectors. */
bool sim_port_is_eth(const smlx5_context_t *ctx);
bool sim_av_for_lid(const smlx5_context_t *ctx, uint16_t lid,
                    struct mlx5_wqe_av *av);
int  sim_tm_dci_to_rts(smlx5_qp_t *dci);
void sim_port_identity_init(smlx5_context_t *ctx);
/* The LID of the live port of this fabric that owns the GID, or 0. */
uint16_t sim_gid_lid(const smlx5_context_t *ctx, const uint8_t raw[16]);
uint16_t sim_gid_to_lid(const smlx5_context_t *ctx, const uint8_t raw[16]);
/* Where a WQE's AV sends it: rlid on InfiniBand; on Ethernet the live
 * port owning rgid if the AV is extended and rmac is that port's MAC;
 * 0 (nowhere: the requester times out) otherwise. */
uint16_t sim_av_route(const smlx5_context_t *ctx, const struct mlx5_wqe_av *av);
/* The SL and GRH traffic class an AV gives its packets (0 without a
 * GRH) */
void sim_av_qos(const smlx5_context_t *ctx, const struct mlx5_wqe_av *av,
                uint8_t *sl, uint8_t *tclass);
/* The MAC of the port with `lid` is `mac`. */
bool sim_lid_has_mac(uint16_t lid, const uint8_t mac[6]);
/* An ibv_ah_attr this port accepts (port, GRH, sgid index): 0 or EINVAL. */
int sim_ah_attr_check(const smlx5_context_t    *ctx,
                      const struct ibv_ah_attr *attr);

smlx5_qp_t *sim_qp_lookup(smlx5_context_t *ctx, uint32_t qpn);
smlx5_qp_t *sim_dct_lookup(smlx5_context_t *ctx, uint32_t dctn);
/* Key checks: return 0 or an MLX5_CQE_SYNDROME_*. */
smlx5_mr_t *sim_mr_lookup(smlx5_context_t *ctx, uint32_t key, bool remote);
int sim_mr_check_local(smlx5_context_t *ctx, smlx5_pd_t *pd, uint32_t lkey,
                       uint64_t addr, uint64_t len, int access);
int sim_mr_check_remote(smlx5_context_t *ctx, smlx5_pd_t *pd, uint32_t rkey,
                        uint64_t addr, uint64_t len, int access);

/* CQ: write one CQE (fills owner bit, fires the channel when armed). */
void sim_cq_push(smlx5_cq_t *cq, const struct mlx5_cqe64 *cqe);
/* The same with scatter-to-CQE data: `len` (<= 32 in a 64-byte CQE, <= 64
 * in a 128-byte one) bytes of `data` go into the CQE, op_own says where. */
void sim_cq_push_scatter(smlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                         const void *data, uint32_t len);
/* Largest message a CQE of `cq` can carry (32 or 64 bytes). */
uint32_t sim_cq_scatter_max(const smlx5_cq_t *cq);
void     sim_async_push(smlx5_context_t *ctx, enum ibv_event_type type,
                        void *element);
/* A QP is destroyed: its events not read yet go (the kernel drops an
 * object's unread events when it is destroyed; rdma-core's destroy then
 * waits only for those read and not acknowledged, and the application
 * reads and acknowledges them at once here). Caller holds ctx->lock. */
#define SIM_ASYNC_DROPPED ((enum ibv_event_type) - 1)
void sim_async_drop_qp(smlx5_context_t *ctx, const smlx5_qp_t *qp);

/* Doorbells and polls run the engine under ctx->lock; `wait` false: not
 * when another thread has it (false is returned). When one thread owns the
 * context (smlx5_open_device: the application said MLX5_SINGLE_THREADED=1,
 * as it says to rdma-core's mlx5 provider, which then takes none of its
 * locks either, and the device has no progress thread) no lock is taken,
 * and a second thread found inside stops the process, as rdma-core stops
 * it, rather than corrupting the device. */
__attribute__((noreturn, cold)) static inline void sim_engine_violation(void)
{
    fprintf(stderr,
            "smlx5: *** ERROR: multithreading violation ***\n"
            "smlx5: two threads ran the device at once, but "
            "MLX5_SINGLE_THREADED=1 said one thread uses it (and "
            "STRAND_SIM_PROGRESS_THREAD=0 that the device has no thread): "
            "unset MLX5_SINGLE_THREADED\n");
    abort();
}

/* The number a QP is known by on the wire and in its CQEs: a DCT's
 * number, else its QP number. */
static inline uint32_t sim_qp_number(const smlx5_qp_t *qp)
{
    return (qp->type == SMLX5_QPT_DCT) ? qp->dctn : qp->qpn;
}

static inline bool sim_engine_enter(smlx5_context_t *ctx, bool wait)
{
    if (!ctx->single_thread) {
        return wait ? (pthread_mutex_lock(&ctx->lock) == 0) :
                      (pthread_mutex_trylock(&ctx->lock) == 0);
    }
    /* plain loads and stores, no locked instruction: the check is
     * best-effort, as rdma-core's is */
    if (atomic_load_explicit(&ctx->engine_in_use, memory_order_relaxed)) {
        sim_engine_violation();
    }
    atomic_store_explicit(&ctx->engine_in_use, true, memory_order_relaxed);
    return true;
}

static inline void sim_engine_leave(smlx5_context_t *ctx)
{
    if (!ctx->single_thread) {
        pthread_mutex_unlock(&ctx->lock);
        return;
    }
    atomic_store_explicit(&ctx->engine_in_use, false, memory_order_relaxed);
}

/* The QP has work in flight: the engine's timers and resumes walk it
 * (ctx->active) until it is idle. Inline: every WQE fetched comes here. */
static inline void sim_qp_activate(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;

    if (!qp->busy) {
        qp->busy                       = true;
        ctx->active[ctx->num_active++] = qp;
    }
}

/* The requester's queue: the completer hands a QP's requester work by
 * adding it; the engine takes them in order and runs their requesters; a
 * destroyed QP leaves it. The completer never runs the requester itself:
 * when an ACK opens a flow's window, a NAK or a timer asks for go-back-N,
 * or a failure restarts a flow, it adds the QP here (rxe's completer
 * schedules its requester task the same way), and the engine runs the
 * queued requesters as soon as the completer is done with the packet or
 * the timer. Inline: every ACK passes here. */
static inline void sim_req_queue_add(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;

    if (qp->req_queued) {
        return;
    }
    qp->req_queued = true;
    qp->req_next   = NULL;
    if (ctx->req_tail != NULL) {
        ctx->req_tail->req_next = qp;
    } else {
        ctx->req_head = qp;
    }
    ctx->req_tail = qp;
}

static inline smlx5_qp_t *sim_req_queue_take(smlx5_context_t *ctx)
{
    smlx5_qp_t *qp = ctx->req_head;

    if (qp != NULL) {
        ctx->req_head = qp->req_next;
        if (ctx->req_head == NULL) {
            ctx->req_tail = NULL;
        }
        qp->req_queued = false;
    }
    return qp;
}

static inline void sim_req_queue_drop(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx  = qp->ctx;
    smlx5_qp_t     **link = &ctx->req_head;
    smlx5_qp_t      *prev = NULL;

    if (!qp->req_queued) {
        return;
    }
    while (*link != qp) {
        prev = *link;
        link = &prev->req_next;
    }
    *link = qp->req_next;
    if (ctx->req_tail == qp) {
        ctx->req_tail = prev;
    }
    qp->req_queued = false;
}

/* Make the engine (inline progress or its thread) look again at `t`. */
static inline void sim_timer_schedule(smlx5_context_t *ctx, uint64_t t)
{
    if ((ctx->next_deadline_ns == 0) || (t < ctx->next_deadline_ns)) {
        ctx->next_deadline_ns = t;
    }
}

/* The flow may put packets it never sent on the wire: not while an RNR
 * back-off or its retry is under way (they would only be discarded by a
 * responder that has not taken the NAKed packet yet). */
static inline bool sim_flow_may_send_new(const sim_flow_t *f)
{
    return f->rnr_state == SIM_RNR_NONE;
}

static inline bool sim_opcode_needs_response(uint8_t op)
{
    return (op == MLX5_OPCODE_RDMA_READ) || (op == MLX5_OPCODE_ATOMIC_CS) ||
           (op == MLX5_OPCODE_ATOMIC_FA) ||
           (op == MLX5_OPCODE_ATOMIC_MASKED_CS) ||
           (op == MLX5_OPCODE_ATOMIC_MASKED_FA);
}

static inline bool sim_opcode_is_atomic(uint8_t op)
{
    return sim_opcode_needs_response(op) && (op != MLX5_OPCODE_RDMA_READ);
}

/* 16-byte unit `unit` of the WQE whose ctrl is at BB `bb` (wraps). */
static inline void *
sim_sq_unit(const smlx5_qp_t *qp, uint32_t bb, uint32_t unit)
{
    uint32_t size = qp->sq_wqe_cnt * 64;

    return qp->sq_buf + ((bb * 64u + unit * 16u) & (size - 1));
}

/* A WQE's local buffers (sim_wqe_data.c). */
/* Copy between `data` and the WQE's local buffers at message offset `off`:
 * gather (to_sges false) or scatter (true). Keys were checked at parse. */
void sim_wqe_sge_copy(const sim_wqe_t *w, uint32_t off, void *data,
                      uint32_t len, bool to_sges);

/* Engine: called with ctx->lock held. */
void sim_req_process(smlx5_qp_t *qp); /* new SQ WQEs */
/* Whether the WQE's local buffers are still registered (a retransmission
 * or a response reads or writes them long after the WQE was checked) */
bool sim_wqe_local_valid(smlx5_qp_t *qp, const sim_wqe_t *w);
int  sim_req_send_packet(smlx5_qp_t *qp, sim_wqe_t *w, uint32_t psn,
                         bool retry); /* -EAGAIN: ring full */
void sim_req_retransmit(smlx5_qp_t *qp, int flow, uint32_t from_psn);
void sim_req_resume(smlx5_qp_t *qp); /* after a full ring (tx_blocked) */
void sim_wqe_gather(smlx5_qp_t *qp, const sim_wqe_t *w, uint32_t off,
                    uint8_t *dst, uint32_t len);
/* The same through the kernel, for a retransmission: -EFAULT when the
 * memory went away under its registration. */
int  sim_wqe_gather_checked(smlx5_qp_t *qp, const sim_wqe_t *w, uint32_t off,
                            uint8_t *buf, uint32_t len);
void sim_comp_wqe_failed(smlx5_qp_t *qp, sim_wqe_t *w); /* w->status set */
void sim_resp_packet(smlx5_context_t *ctx, const sim_pkt_t *pkt,
                     const uint8_t *payload); /* requests */
void sim_comp_packet(smlx5_context_t *ctx, const sim_pkt_t *pkt,
                     const uint8_t *payload);          /* ACK/NAK/resp */
void sim_comp_qp_timers(smlx5_qp_t *qp, uint64_t now); /* flows due */
/* Coalesced ACKs that are due; returns the next due time (0: none). */
uint64_t sim_resp_ack_timers(smlx5_qp_t *qp, uint64_t now);
/* Read responses held back by a full ring; the QP's own and after it. */
void sim_resp_resume_reads(smlx5_context_t *ctx, smlx5_qp_t *qp);
void sim_resp_drop_reads(smlx5_qp_t *qp);
void sim_comp_flush_qp(smlx5_qp_t *qp);     /* QP entered ERR */
void sim_comp_flush_posted(smlx5_qp_t *qp); /* posted to a QP in ERR */
void sim_comp_retire(smlx5_qp_t *qp);       /* CQEs in SQ order */

/* Tag matching (sim_tm.c) */
int  sim_tm_create(smlx5_srq_t *srq, uint32_t max_ops, smlx5_td_t *td);
void sim_tm_destroy(smlx5_srq_t *srq);
bool sim_tm_cmd_process(smlx5_qp_t *cmd_qp); /* list operations; false: ERR */
/* The first packet of a SEND to a QP whose SRQ matches tags: returns
 * SIM_TM_RECV_BUFFER (take an SRQ WQE; c->tm_app_op says which CQE),
 * SIM_TM_RECV_TAG (it matched an eager tag: c->tm_slot) or
 * SIM_TM_RECV_DONE (a rendezvous matched: the device reads it). */
enum {
    SIM_TM_RECV_BUFFER,
    SIM_TM_RECV_TAG,
    SIM_TM_RECV_DONE
};
int sim_tm_recv_first(smlx5_qp_t *qp, sim_resp_ctx_t *c, const sim_pkt_t *pkt,
                      const uint8_t *payload);
/* an SRQ WQE was taken for it (UNEXPECTED ones are counted now) */
void sim_tm_recv_buffer_taken(smlx5_qp_t *qp, sim_resp_ctx_t *c);
/* a packet of a message matched to an eager tag; false: drop the rest */
void sim_tm_recv_tag_data(smlx5_qp_t *qp, sim_resp_ctx_t *c,
                          const sim_pkt_t *pkt, const uint8_t *payload,
                          bool last);
void sim_tm_cqe_app(const smlx5_qp_t *qp, const sim_resp_ctx_t *c,
                    struct mlx5_cqe64 *cqe);
void sim_tm_rndv_retired(smlx5_qp_t *dci, sim_wqe_t *w); /* device's DCI */
void sim_tm_engine(smlx5_context_t *ctx); /* deferred rendezvous work */
void sim_qp_to_err(smlx5_qp_t *qp, enum ibv_event_type ev);
int  sim_send_pkt(smlx5_context_t *ctx, uint16_t dlid, sim_pkt_t *hdr,
                  const void *payload, size_t len); /* with faults */
/* one packet (hdr->payload_len bytes of payload) onto the wire towards
 * DLID: this host's ring, or another host's port through sim_net */
int sim_route_send(smlx5_context_t *ctx, uint16_t dlid, const sim_pkt_t *hdr,
                   const void *payload);

/* Receive queues: take the next receive WQE (SRQ or RQ). Returns the WQE
 * index, or -1 when none is posted (RNR). */
int sim_rq_take(smlx5_qp_t *qp, struct mlx5_wqe_data_seg **sges,
                unsigned *num_sge, smlx5_srq_t **srq_p);

#endif
