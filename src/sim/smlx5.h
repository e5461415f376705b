/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smlx5: the software mlx5 device, control API.
 *
 * The calls mirror libibverbs / mlx5dv semantics (return values, errno,
 * state checks) on objects of our own; where verbs has a struct for the
 * arguments (ibv_qp_attr, ibv_send_wr, ibv_sge, ibv_port_attr, ...) that
 * struct is used as is. Queues are handed out as the very mlx5dv_qp /
 * mlx5dv_cq / mlx5dv_srq views mlx5dv_init_obj gives on hardware, so one data
 * path (src/mlx5) drives both.
 *
 * Return convention, as in verbs: creators return an object or NULL with
 * errno set; other calls return 0 or a positive errno.
 */
#ifndef SMLX5_H_
#define SMLX5_H_

#include "mlx5/sq.h"

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smlx5_context smlx5_context_t;
typedef struct smlx5_pd      smlx5_pd_t;
typedef struct smlx5_mr      smlx5_mr_t;
typedef struct smlx5_cq      smlx5_cq_t;
typedef struct smlx5_srq     smlx5_srq_t;
typedef struct smlx5_qp      smlx5_qp_t;
typedef struct smlx5_channel smlx5_channel_t;
typedef struct smlx5_mkey    smlx5_mkey_t;
typedef struct smlx5_td      smlx5_td_t;

/* BlueFlame registers QPs without a thread domain share, round-robin */
#define SMLX5_BF_SHARED 4

#define SMLX5_DEV_NAME "smlx5_0"
#define SMLX5_PORT_NUM 1
/* DC access key UCX uses; any 64-bit key works. */
#define SMLX5_DC_KEY_DEFAULT 0x1ee7a330ull

/* -------------------------------------------------------------- device */
typedef struct smlx5_device_caps {
    struct ibv_device_attr attr; /* max_qp_wr, max_sge, atomic_cap, ... */
    uint32_t               max_inline_data;
    uint32_t               max_mtu;     /* bytes */
    uint8_t  dci_max_log_num_concurent; /* mlx5dv dci_streams_caps */
    uint8_t  dci_max_log_num_errored;
    uint32_t tm_max_num_tags; /* ibv_tm_caps */
    uint32_t tm_max_ops;
    uint32_t tm_max_sge;
    uint32_t tm_max_rndv_hdr_size;
    struct mlx5dv_sig_caps sig_caps; /* block signatures (mkeys) */
    uint32_t               flags;    /* SMLX5_CAP_* */
    /* the HCA's atomic_req_8B_endianness_mode (what a DEVX QUERY_HCA_CAP
     * of the atomic capabilities shows): 0: 8-byte atomics (CS, FA and
     * masked) answer big-endian, 1: in host order. 32-bit masked atomics
     * answer big-endian in either mode. */
    uint8_t atomic_mode8b;
    /* DEVX commands: mlx5dv_dci_stream_id_reset is one (without, it
     * fails with EOPNOTSUPP) */
    uint8_t devx;
    /* the port's configured global traffic class (sysfs
     * tc/<port>/traffic_class "Global tclass=N"); -1: none */
    int port_tclass;
} smlx5_device_caps_t;

enum {
    SMLX5_CAP_MASKED_ATOMICS = 1u << 0, /* opcodes 0x14/0x15, 32 and 64 bit */
    SMLX5_CAP_ATOMICS        = 1u << 1, /* the HCA executes CS and FA (in
                                           either endianness mode; verbs'
                                           atomic_cap says HCA only in host
                                           mode, as mlx5_ib) */
    SMLX5_CAP_CQE_V1         = 1u << 2, /* user index in srqn_uidx */
    SMLX5_CAP_SCATTER_TO_CQE_DCT = 1u << 3, /* a DCT scatters small messages
                                               to 128-byte receive CQEs */
    SMLX5_CAP_SIG_PIPELINING     = 1u << 4, /* RC QPs with
                                               MLX5DV_QP_CREATE_SIG_PIPELINING */
};

/* The device can be made to look like different NICs (environment, read at
 * open; docs/software-device.md): STRAND_SIM_CAPS="masked_atomics=0,
 * atomic_mode8b=0,max_inline=N,max_sge=N,dci_log_concurent=N,
 * dci_log_errored=N,scatter_dct=0" changes what smlx5_query_device reports
 * and what the device executes (an unknown key or a bad value: open fails
 * with EINVAL); STRAND_SIM_LINK_LAYER=ethernet gives the port a RoCE
 * personality (no LID, a 4-entry GID table, GRH required);
 * MLX5_CQE_SIZE=128 makes 128-byte CQEs, as rdma-core's provider does. */

/* Names of the software devices (NULL-terminated static array). */
const char *const *smlx5_device_names(int *num);
/* Open the device: attaches this process to the fabric (env STRAND_SIM_FABRIC)
 * and gives it a port with its own LID. NULL + errno on failure. */
smlx5_context_t *smlx5_open_device(const char *name);
int              smlx5_close_device(smlx5_context_t *ctx);
int smlx5_query_device(smlx5_context_t *ctx, smlx5_device_caps_t *caps);
int smlx5_query_port(smlx5_context_t *ctx, uint8_t port,
                     struct ibv_port_attr *attr);
int smlx5_query_gid(smlx5_context_t *ctx, uint8_t port, int index,
                    union ibv_gid *gid);
/* ibv_query_gid_ex: the GID and its type (IB, RoCE v1, RoCE v2). */
int smlx5_query_gid_ex(smlx5_context_t *ctx, uint8_t port, uint32_t index,
                       struct ibv_gid_entry *entry);
/* Replace the fault-injection settings (same syntax as STRAND_SIM_FAULTS,
 * docs/software-device.md); "" clears them. 0 or EINVAL (nothing
 * changed) when the string does not parse. */
int smlx5_set_faults(smlx5_context_t *ctx, const char *spec);
/* Turn the requester's fast path for single-packet inline WRITEs and SENDs
 * on or off (STRAND_SIM_FASTPATH at open; docs/software-device.md): a
 * test / observability hook, so that one WQE can be run both ways on the
 * same queues. Always 0. */
int smlx5_set_fastpath(smlx5_context_t *ctx, int on);
/* What a message costs on this device (docs/software-device.md): measured
 * once per process on a private fabric (a few ms, on the first call), or
 * STRAND_SIM_PERF="latency_ns=N,bw_mbs=N,overhead_ns=N,recv_overhead_ns=N"
 * (keys left out take fixed values; a bad key or value: open fails with
 * EINVAL). Where measuring fails (the host gave the echo thread no CPU in
 * its time budget), fixed values and the reason, printed by no one here.
 * Always 0. */
typedef enum smlx5_perf_source {
    SMLX5_PERF_MEASURED,
    SMLX5_PERF_OVERRIDE,
    SMLX5_PERF_FIXED, /* the measurement failed */
} smlx5_perf_source_t;

typedef struct smlx5_perf {
    double              latency_ns;       /* one way, a small message */
    double              bw_mbs;           /* payload, 10^6 bytes per second */
    double              overhead_ns;      /* CPU per posted message */
    double              recv_overhead_ns; /* CPU per received message */
    smlx5_perf_source_t source;
    int                 error; /* SMLX5_PERF_FIXED: why measuring failed */
} smlx5_perf_t;

int smlx5_query_perf(smlx5_context_t *ctx, smlx5_perf_t *perf);
/* Test / observability hook: measure now, for packets of `mtu` bytes,
 * without the per-process cache. 0, or why it failed (perf untouched). */
int smlx5_measure_perf(uint32_t mtu, smlx5_perf_t *perf);
/* Run the device engine once (inbound packets, timers). Returns the number
 * of events handled. Called implicitly on doorbells and CQ polls. */
int smlx5_progress(smlx5_context_t *ctx);

/* Test / observability hook (docs/software-device.md): what the progress
 * thread did, so that tests can tell "idle means asleep" from device state
 * instead of CPU time. Counters only grow. */
typedef struct smlx5_progress_stats {
    uint64_t loops;           /* engine passes of the progress thread */
    uint64_t sleeps;          /* futex sleeps it entered */
    uint64_t untimed_sleeps;  /* ... of them with no time limit */
    int      asleep_untimed;  /* 1 while it sleeps with no time limit (no
                                 timer pending: it uses no CPU) */
    int      engine_unlocked; /* 1 when doorbells and polls run the engine
                                 without its lock: one thread owns the
                                 context (MLX5_SINGLE_THREADED=1 and
                                 STRAND_SIM_PROGRESS_THREAD=0) */
} smlx5_progress_stats_t;
int smlx5_progress_stats(smlx5_context_t *ctx, smlx5_progress_stats_t *st);

/* Observability: the datagrams a device on a fabric across hosts
 * (STRAND_SIM_FABRIC=udp:<name>) sent and took, and what it dropped before
 * any QP saw it, by reason (index: smlx5_wire_drop_name; 0 is never
 * counted). ENODEV on a one-host fabric. Counters only grow. */
#define SMLX5_WIRE_DROP_REASONS 10
typedef struct smlx5_wire_stats {
    uint64_t tx, tx_busy, rx;
    uint64_t drops[SMLX5_WIRE_DROP_REASONS];
} smlx5_wire_stats_t;
int         smlx5_wire_stats(smlx5_context_t *ctx, smlx5_wire_stats_t *st);
const char *smlx5_wire_drop_name(unsigned reason);
/* the device's UDP address on such a fabric (network order) */
int smlx5_wire_addr(smlx5_context_t *ctx, uint32_t *ipv4, uint16_t *port);

/* ------------------------------------------------------------ PD / MR */
smlx5_pd_t *smlx5_alloc_pd(smlx5_context_t *ctx);
int         smlx5_dealloc_pd(smlx5_pd_t *pd); /* EBUSY while in use */
smlx5_mr_t *smlx5_reg_mr(smlx5_pd_t *pd, void *addr, size_t length,
                         int access); /* IBV_ACCESS_* */
int         smlx5_dereg_mr(smlx5_mr_t *mr);
uint32_t    smlx5_mr_lkey(const smlx5_mr_t *mr);
uint32_t    smlx5_mr_rkey(const smlx5_mr_t *mr);

/* ------------------------------------------------------------- mkeys */
/* Indirect mkeys (mlx5dv_create_mkey(3)): create_flags INDIRECT, and
 * BLOCK_SIGNATURE for signature offload; up to max_entries buffers. Its
 * one key (lkey == rkey) comes from the same table as memory regions.
 * Used zero-based (docs/software-device.md, "Signature mkeys"). */
smlx5_mkey_t *
smlx5_create_mkey(smlx5_pd_t *pd, uint32_t create_flags, uint16_t max_entries);
/* The same with the key's low byte chosen (mkey_7_0, as a DEVX
 * CREATE_MKEY of its own sets it, UCX's tag): the key of a destroyed mkey
 * then names no mkey made later on its index. smlx5_create_mkey's is 0,
 * as rdma-core's. */
smlx5_mkey_t *smlx5_create_mkey_variant(smlx5_pd_t *pd, uint32_t create_flags,
                                        uint16_t max_entries, uint8_t variant);
int           smlx5_destroy_mkey(smlx5_mkey_t *mkey);
uint32_t      smlx5_mkey_key(const smlx5_mkey_t *mkey);

/* What mlx5dv_wr_mkey_configure(3) and its setters do, applied when the
 * call returns (the device's control path takes the place of the UMR WQE
 * rdma-core builds; a configuration QP is the equivalent on a NIC):
 *   conf_flags   MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR
 *   set_access   access_flags (IBV_ACCESS_*) replace the previous ones
 *   num_sges     > 0: the layout (mlx5dv_wr_set_mkey_layout_list), lkeys
 *                of memory regions of the mkey's PD
 *   sig          the block signature (mlx5dv_wr_set_mkey_sig_block)
 * As rdma-core: the configuration re-arms the mkey's signature error
 * report only when smlx5_poll_cq took a SIG_ERR CQE of it since (the
 * count the provider writes); a data path that parses its CQEs itself
 * must configure a new mkey instead (docs/software-device.md). 0 or
 * EINVAL (nothing changed). */
typedef struct smlx5_mkey_conf {
    uint32_t                            conf_flags;
    int                                 set_access;
    uint32_t                            access_flags;
    uint16_t                            num_sges;
    const struct ibv_sge               *sge;
    const struct mlx5dv_sig_block_attr *sig;
} smlx5_mkey_conf_t;
int smlx5_mkey_configure(smlx5_mkey_t *mkey, const smlx5_mkey_conf_t *conf);

/* mlx5dv_mkey_check(3): the signature error smlx5_poll_cq took from a
 * SIG_ERR CQE for this mkey (and clears it), MLX5DV_MKEY_NO_ERR if none;
 * EINVAL when the mkey has no signature. A data path that parses CQEs
 * itself sees the SIG_ERR CQEs instead (struct strand_sigerr_cqe). */
int smlx5_mkey_check(smlx5_mkey_t *mkey, struct mlx5dv_mkey_err *err);

/* Fault injection: the next time the device produces block `block` (its
 * index from the mkey's offset 0) of this mkey for the link, one byte of
 * its data is damaged: SMLX5_CORRUPT_WIRE after the wire signature was
 * computed (the receiver's check finds it), SMLX5_CORRUPT_MEMORY as it is
 * read from memory (the memory signature's check finds it; without one the
 * damage travels signed). 0 or EINVAL. */
enum {
    SMLX5_CORRUPT_WIRE   = 1,
    SMLX5_CORRUPT_MEMORY = 2
};
int smlx5_mkey_corrupt_block(smlx5_mkey_t *mkey, uint64_t block, int where);

/* The address vector of a destination, as ibv_create_ah followed by
 * mlx5dv_init_obj(MLX5DV_OBJ_AH) gives it on hardware: rlid, SL and static
 * rate on InfiniBand; on Ethernet the GRH is mandatory (EINVAL without
 * is_global) and the destination MAC is resolved from the GID (EHOSTUNREACH
 * when no port on the fabric owns it). The caller adds the DC key, the DCT
 * number and the extended-AV bit of dqp_dct. */
int smlx5_create_av(smlx5_pd_t *pd, const struct ibv_ah_attr *attr,
                    struct mlx5_wqe_av *av);

/* ----------------------------------------------------- CQ and events */
smlx5_channel_t *smlx5_create_comp_channel(smlx5_context_t *ctx);
int              smlx5_destroy_comp_channel(smlx5_channel_t *ch);
int              smlx5_channel_fd(const smlx5_channel_t *ch); /* poll()able */
/* Blocks (or EAGAIN with O_NONBLOCK on the fd) until an armed CQ fired. */
int smlx5_get_cq_event(smlx5_channel_t *ch, smlx5_cq_t **cq_p);

/* CQE size 64, or what MLX5_CQE_SIZE says (64 or 128; else EINVAL), as
 * rdma-core's ibv_create_cq. */
smlx5_cq_t *
smlx5_create_cq(smlx5_context_t *ctx, int cqe, smlx5_channel_t *channel);
/* The same with the CQE size asked for, as mlx5dv_create_cq with
 * MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE: 64 or 128 (else EINVAL); 0: as
 * smlx5_create_cq. */
smlx5_cq_t *smlx5_create_cq_size(smlx5_context_t *ctx, int cqe,
                                 smlx5_channel_t *channel, uint32_t cqe_size);
int         smlx5_destroy_cq(smlx5_cq_t *cq);
/* The mlx5dv_init_obj view. Like rdma-core, this marks the CQ "DV-owned":
 * from then on resetting or destroying a QP leaves that QP's CQEs in it
 * (stale CQEs are the application's business, spec section 9). */
int smlx5_cq_dv(smlx5_cq_t *cq, struct mlx5dv_cq *out);
/* ibv_req_notify_cq: arms with the CQ's verbs consumer index (the one
 * smlx5_poll_cq advances, which never moves when the application parses
 * CQEs itself) and its own arm sequence number (advanced by
 * smlx5_get_cq_event), exactly as rdma-core does. */
int smlx5_req_notify_cq(smlx5_cq_t *cq, int solicited_only);
/* Doorbell hook for a direct-verbs arm: the application wrote dbrec[1] and
 * the 64-bit doorbell at cq_uar + 0x20 itself (sn, command, its consumer
 * index, CQN); the software device cannot see that store, so the data path
 * calls this afterwards and the device takes the arm from the UAR word. */
void smlx5_cq_arm_doorbell(smlx5_cq_t *cq);
/* Simple verbs-like poll for tests and tools (the transport parses CQEs
 * itself): fills up to n ibv_wc, returns count or -errno. */
int smlx5_poll_cq(smlx5_cq_t *cq, int n, struct ibv_wc *wc);

/* ---------------------------------------------------------------- SRQ */
/* User indexes (CQE version 1, srqn_uidx) are the provider's: every QP, DCT
 * and tag-matching SRQ of a context takes the first free slot of one table,
 * as rdma-core's mlx5_store_uidx; an ordinary SRQ takes none. */
typedef struct smlx5_srq_init_attr {
    uint32_t max_wr;
    uint32_t max_sge;
    /* Tag matching (IBV_SRQT_TM): max_num_tags > 0. */
    uint32_t    max_num_tags;
    uint32_t    max_ops;
    smlx5_cq_t *cq; /* CQ for TM list-operation completions */
    smlx5_td_t *td; /* the command QP's thread domain, or NULL */
} smlx5_srq_init_attr_t;

smlx5_srq_t *smlx5_create_srq(smlx5_pd_t *pd, smlx5_srq_init_attr_t *attr);
int          smlx5_destroy_srq(smlx5_srq_t *srq);
int          smlx5_srq_dv(smlx5_srq_t *srq, struct mlx5dv_srq *out);
/* A tag-matching SRQ's command QP (NULL for an ordinary SRQ): list
 * operations are TAG_MATCHING WQEs posted on it (smlx5_qp_dv,
 * smlx5_qp_doorbell as on any QP); their CQEs go to the SRQ's CQ. */
smlx5_qp_t *smlx5_srq_cmd_qp(smlx5_srq_t *srq);
int         smlx5_post_srq_recv(smlx5_srq_t *srq, struct ibv_recv_wr *wr,
                                struct ibv_recv_wr **bad_wr);

/* ----------------------------------------------------------------- QP */
typedef enum smlx5_qp_type {
    SMLX5_QPT_RC,
    SMLX5_QPT_DCI,
    SMLX5_QPT_DCT
} smlx5_qp_type_t;

typedef struct smlx5_qp_init_attr {
    smlx5_qp_type_t   type;
    smlx5_cq_t       *send_cq;
    smlx5_cq_t       *recv_cq;
    smlx5_srq_t      *srq; /* required for DCT; optional for RC */
    struct ibv_qp_cap cap; /* max_send_wr, max_recv_wr, sges, inline */
    int               sq_sig_all;
    uint64_t          dc_access_key;     /* DCT */
    uint8_t           log_num_concurent; /* DCI streams (0: no streams) */
    uint8_t           log_num_errored;
    /* MLX5DV_QP_CREATE_* flags: DISABLE_SCATTER_TO_CQE (responder data
     * stays in the receive buffer), ALLOW_SCATTER_TO_CQE, SIG_PIPELINING */
    uint32_t create_flags;
    /* a thread domain (ibv_alloc_td): the QP rings the domain's own
     * BlueFlame register; NULL: one the context's QPs share
     * (docs/software-device.md, "BlueFlame registers") */
    smlx5_td_t *td;
} smlx5_qp_init_attr_t;

smlx5_qp_t *smlx5_create_qp(smlx5_pd_t *pd, smlx5_qp_init_attr_t *attr);
int         smlx5_destroy_qp(smlx5_qp_t *qp);
/* Thread domains (ibv_alloc_td / ibv_dealloc_td): a BlueFlame register for
 * the QPs of one thread; dealloc is EBUSY while a QP uses it. */
smlx5_td_t *smlx5_alloc_td(smlx5_context_t *ctx);
int         smlx5_dealloc_td(smlx5_td_t *td);
/* Doorbells that found another thread's write in their register (a QP
 * rings a register it shares with QPs another thread rings at the same
 * time); each is an error, the first also said on stderr. */
uint64_t smlx5_bf_conflicts(smlx5_context_t *ctx);
/* Doorbells the device lost: written to the half of a register its last
 * doorbell went to (the halves belong to the register, spec section 9). */
uint64_t smlx5_bf_lost(smlx5_context_t *ctx);
/* The packets this NIC received, by the SL and by the GRH traffic class
 * they carried (what a switch's QoS sees) */
void smlx5_rx_qos_counts(smlx5_context_t *ctx, uint64_t sl[16],
                         uint64_t tclass[256]);
/* The provider's view of qp's register (rdma-core's struct mlx5_bf): the
 * half its next doorbell goes to, shared by every QP on the register. A
 * caller that rings by hand alternates through it (one thread at a time
 * on a shared register, as the provider's lock). */
strand_bf_t *smlx5_qp_bf(smlx5_qp_t *qp);
int          smlx5_qp_dv(smlx5_qp_t *qp, struct mlx5dv_qp *out);
uint32_t     smlx5_qp_num(const smlx5_qp_t *qp);
/* DCT number: valid after INIT->RTR (0 before). */
uint32_t smlx5_dct_num(const smlx5_qp_t *qp);
int smlx5_modify_qp(smlx5_qp_t *qp, struct ibv_qp_attr *attr, int attr_mask);
int smlx5_query_qp(smlx5_qp_t *qp, struct ibv_qp_attr *attr, int attr_mask,
                   struct ibv_qp_init_attr *init);
/* ibv_post_send semantics (seed page ibv_post_send.3). For a DCI every WR
 * is addressed by `dc` (the DC target: LID, DCT number, key) and
 * `stream_id` (0: none); the AV it writes has no GRH, so on an Ethernet
 * port such WQEs go nowhere (build them with an AV from smlx5_create_av). */
typedef struct smlx5_dc_target {
    uint16_t dlid;
    uint32_t dctn;
    uint64_t dc_key;
} smlx5_dc_target_t;

int smlx5_post_send(smlx5_qp_t *qp, struct ibv_send_wr *wr,
                    struct ibv_send_wr **bad_wr);
int smlx5_post_send_dc(smlx5_qp_t *qp, struct ibv_send_wr *wr,
                       const smlx5_dc_target_t *dc, uint16_t stream_id,
                       struct ibv_send_wr **bad_wr);
int smlx5_post_recv(smlx5_qp_t *qp, struct ibv_recv_wr *wr,
                    struct ibv_recv_wr **bad_wr);

/* Signature pipelining (seed page mlx5dv_qp_cancel_posted_send_wrs.3).
 * The first WQE the send queue of a QP in SQD has not executed: its 16-bit
 * WQE counter, as a DEVX QP query's hw_sq_wqebb_counter gives it on
 * hardware. 0, or EINVAL when the QP is not in SQD. */
int smlx5_qp_query_sqd(smlx5_qp_t *qp, uint32_t *wqebb_counter);
/* mlx5dv_qp_cancel_posted_send_wrs for WRs posted with smlx5_post_send:
 * every WR not yet executed whose wr_id matches becomes a NOP of the same
 * size and signaling. The number cancelled, or -EINVAL outside SQD. */
int smlx5_qp_cancel_posted_send_wrs(smlx5_qp_t *qp, uint64_t wr_id);

/* DCI streams (seed page mlx5dv_dci_stream_id_reset.3). */
int smlx5_dci_stream_id_reset(smlx5_qp_t *qp, uint16_t stream_id);

/* Test / observability hook: what the reliability protocol of one QP did
 * (requester side for RC and DCI, responder side for RC and DCT), so that
 * tests can bound traffic by counting packets instead of measuring time.
 * Counters only grow, from 0 at creation. */
typedef struct smlx5_qp_stats {
    /* requester */
    uint64_t pkts_sent;     /* request packets sent, resent ones included */
    uint64_t pkts_resent;   /* ... of them retransmissions (go-back-N) */
    uint64_t rnr_naks_rcvd; /* RNR NAKs received */
    uint64_t seq_naks_rcvd; /* PSN-sequence NAKs received */
    uint64_t rnr_retries;   /* go-back-N passes after an RNR back-off */
    /* responder */
    uint64_t rnr_naks_sent;  /* RNR NAKs sent */
    uint64_t seq_naks_sent;  /* PSN-sequence NAKs sent */
    uint64_t reqs_discarded; /* out-of-sequence requests dropped silently
                                (a NAK for their flow is outstanding) */
    /* requester: WQEs that took the fast path (single-packet inline WRITE
     * or SEND, docs/software-device.md) */
    uint64_t fast_wqes;
} smlx5_qp_stats_t;
int smlx5_qp_stats(smlx5_qp_t *qp, smlx5_qp_stats_t *st);

/* Doorbell hook: the software device cannot see stores to a BlueFlame
 * register, so after ringing the doorbell (dbrec + BF write, exactly as on
 * hardware) the data path calls this to hand the QP to the device. */
void smlx5_qp_doorbell(smlx5_qp_t *qp);
/* Same for an SRQ whose doorbell record was advanced by direct WQE writes. */
void smlx5_srq_doorbell(smlx5_srq_t *srq);

/* ------------------------------------------------------- async events */
typedef struct smlx5_async_event {
    enum ibv_event_type type;
    union {
        smlx5_qp_t  *qp;
        smlx5_cq_t  *cq;
        smlx5_srq_t *srq;
        int          port_num;
    } element;
    /* a QP event's QP number, copied when the event was raised: a reader
     * may use it after the QP is destroyed (the pointer it may not; no
     * ack makes destroy wait for readers, as in rdma-core) */
    uint32_t qp_num;
} smlx5_async_event_t;

int smlx5_async_fd(smlx5_context_t *ctx); /* poll()able */
/* 0 and an event, or EAGAIN when none is pending. */
int smlx5_get_async_event(smlx5_context_t *ctx, smlx5_async_event_t *ev);

#ifdef __cplusplus
}
#endif

#endif
