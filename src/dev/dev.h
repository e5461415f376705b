/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device layer: one table of control operations with two backends,
 * `hw` (rdma-core libibverbs + mlx5dv) and `sim` (the software mlx5 device).
 * Both hand back the same mlx5dv views of queues (buffers, doorbell records,
 * BlueFlame register), so the data path above (src/mlx5 builders, the
 * transport) is one and the same.
 *
 * Plain C, no UCX types. Calls return 0 or a positive errno, like verbs.
 */
#ifndef STRAND_DEV_H_
#define STRAND_DEV_H_

#include "mlx5/sq.h"

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strand_dev_kind {
    STRAND_DEV_KIND_HW,
    STRAND_DEV_KIND_SIM,
} strand_dev_kind_t;

#define STRAND_DEV_NAME_MAX 64

/* A device found by discovery. */
typedef struct strand_dev_info {
    char              name[STRAND_DEV_NAME_MAX]; /* "mlx5_0", "smlx5_0" */
    strand_dev_kind_t kind;
    uint8_t           num_ports;
    char              sysfs_path[256]; /* hw: /sys/class/infiniband/..;
                                          "" for the software device */
} strand_dev_info_t;

#define STRAND_DEV_MAX_CPUS 1024

/* Where a device sits in the machine (hardware: from hwloc, sysfs as a
 * fallback; the software device is everywhere and nowhere). */
typedef struct strand_dev_locality {
    char     pci_bdf[16];                    /* "0000:3b:00.0"; "" for none */
    int      numa_node;                      /* -1: unknown */
    uint64_t cpus[STRAND_DEV_MAX_CPUS / 64]; /* CPUs close to the device */
} strand_dev_locality_t;

static inline void strand_dev_cpu_set(strand_dev_locality_t *loc, unsigned c)
{
    if (c < STRAND_DEV_MAX_CPUS) {
        loc->cpus[c / 64] |= 1ull << (c % 64);
    }
}

static inline int
strand_dev_cpu_isset(const strand_dev_locality_t *loc, unsigned c)
{
    return (c < STRAND_DEV_MAX_CPUS) && ((loc->cpus[c / 64] >> (c % 64)) & 1);
}

/* Every CPU the machine has (what the software device reports). */
void strand_dev_locality_all(strand_dev_locality_t *loc);

/* What the transport needs to know about a device and its port, all of it
 * queried from the device (spec section 9): nothing here is a constant. */
typedef struct strand_dev_caps {
    uint32_t      max_qp_wr;
    uint32_t      max_sge;
    uint32_t      max_inline; /* inline bytes a DCI can take */
    uint32_t      max_mr_size_log2;
    uint32_t      mtu; /* active MTU, bytes */
    uint8_t       port_num;
    uint8_t       link_layer; /* IBV_LINK_LAYER_INFINIBAND/_ETHERNET */
    uint16_t      lid;        /* 0 on Ethernet */
    uint8_t       gid_index;  /* the GID addresses carry */
    union ibv_gid gid;
    int           atomics;        /* 64-bit CS and FA (IBV_ATOMIC_HCA) */
    int           masked_atomics; /* masked CS/FA, 32 and 64 bit */
    /* fetched values in network order, per size (the HCA's 8-byte
     * endianness mode governs 64-bit replies only; 32-bit masked replies
     * are big-endian in either mode, as UCX reads them) */
    int      atomic_reply_be32;
    int      atomic_reply_be64;
    uint8_t  dci_max_log_num_concurent;
    uint8_t  dci_max_log_num_errored;
    uint32_t tm_max_num_tags; /* 0: no tag matching */
    uint32_t tm_max_ops;
    uint32_t tm_max_rndv_hdr_size; /* TMH + RVH (+ RAVH) + user header */
    uint32_t max_rd_atomic;
    /* block signature offload (mlx5dv_query_device sig_caps; all zero:
     * none) and RC QPs that stop in SQD on a bad block */
    struct mlx5dv_sig_caps sig_caps;
    int                    sig_pipelining;
    /* DEVX commands work (a DCI stream reset is one, as tag matching's
     * command QP and the HCA capability queries need them) */
    int devx;
    /* the port's configured global traffic class (RoCE: sysfs
     * tc/<port>/traffic_class, "Global tclass=N", as rdma-core and UCX
     * read it); -1: none configured */
    int port_tclass;
} strand_dev_caps_t;

/* How fast the device is, for the transport's estimates (what UCP's
 * protocol thresholds are computed from: uct_iface_attr_t latency,
 * bandwidth and overhead). Seconds and bytes per second, as UCX has them.
 * Hardware: from the port's active speed, width, MTU and link layer
 * (strand_dev_perf_from_port); the software device: its own measured costs
 * or STRAND_SIM_PERF (docs/software-device.md). */
typedef enum strand_dev_perf_source {
    STRAND_DEV_PERF_PORT,       /* hw: the port's speed, width and MTU */
    STRAND_DEV_PERF_PORT_GUESS, /* hw: speed or width unknown: the slowest
                                   known link (SDR, 1x) is assumed */
    STRAND_DEV_PERF_MEASURED,   /* sim: calibrated in this process */
    STRAND_DEV_PERF_OVERRIDE,   /* sim: STRAND_SIM_PERF */
    STRAND_DEV_PERF_FIXED,      /* sim: calibration failed: fixed values */
} strand_dev_perf_source_t;

typedef struct strand_dev_perf {
    double latency;        /* s: one way, one small message, unloaded */
    double latency_per_ep; /* s added per endpoint in use (DC: 0) */
    double bandwidth;      /* bytes/s of payload the port carries, shared
                              by all the processes that use it */
    double send_overhead;  /* s of host CPU per posted message */
    double recv_overhead;  /* s of host CPU per received message */
    strand_dev_perf_source_t source;
    char what[96]; /* how it was found, for logs and ucx_info */
} strand_dev_perf_t;

/* The estimates of a DC message on a hardware port, from its attributes
 * (active_speed, active_width, active_mtu, link_layer): a pure function
 * (dev_perf.c). An unknown speed or width gives the slowest link
 * (STRAND_DEV_PERF_PORT_GUESS, `what` names the value), never garbage. */
void strand_dev_perf_from_port(const struct ibv_port_attr *pa,
                               strand_dev_perf_t          *perf);

typedef struct strand_dev     strand_dev_t;
typedef struct strand_dev_ops strand_dev_ops_t;

/* Objects: a backend handle plus the view the data path uses. */
typedef struct strand_dev_mr {
    void    *h;
    uint32_t lkey, rkey;
} strand_dev_mr_t;

/* Called by the data path after ringing a doorbell the software device
 * cannot observe (SQ BlueFlame store, CQ arm UAR write); NULL on hardware. */
typedef void (*strand_dev_kick_t)(void *arg);

/* A completion channel: CQs created on it raise events on its fd. */
typedef struct strand_dev_channel {
    void *h;
    int   fd; /* non-blocking, poll()able */
} strand_dev_channel_t;

typedef struct strand_dev_cq {
    void             *h;
    struct mlx5dv_cq  dv;
    strand_dev_kick_t arm_kick; /* after strand_cq_arm() */
    void             *arm_kick_arg;
} strand_dev_cq_t;

typedef struct strand_dev_srq {
    void             *h;
    struct mlx5dv_srq dv;
    uint32_t          wqe_cnt; /* WQEs in the list (incl. sentinel) */
    uint32_t          max_sge;
} strand_dev_srq_t;

/* A thread domain (ibv_alloc_td and a parent domain on the PD): the
 * BlueFlame register of the QPs created on it is theirs alone. rdma-core
 * lets QPs without one share registers and locks its own writes to them;
 * a data path that writes BlueFlame itself, as this one does, must not
 * share a register with a QP another thread rings (spec section 9). */
typedef struct strand_dev_td {
    void *h;  /* hw: the ibv_td; sim: its smlx5_td */
    void *pd; /* hw: the parent domain QPs are made on */
} strand_dev_td_t;

/* A QP's kick (the same, after its SQ doorbell): returns 0, so that a post
 * path that ends with it returns what it returns, a jump instead of a
 * call. A byte: a UCS status is one (UCX packs its enum), and only a
 * return of the same width makes no conversion that keeps the call. */
typedef int8_t (*strand_dev_qp_kick_t)(void *arg);

/* The QP types strand makes (mlx5dv's DC types, and RC). */
typedef enum strand_dev_qp_type {
    STRAND_DEV_QPT_DCI,
    STRAND_DEV_QPT_DCT,
    STRAND_DEV_QPT_RC
} strand_dev_qp_type_t;

typedef struct strand_dev_qp {
    void                *h;
    uint8_t              type; /* strand_dev_qp_type_t */
    struct mlx5dv_qp     dv;
    uint32_t             qpn; /* QP number; for a DCT: the DCT number
                                 once it is in RTR */
    strand_dev_qp_kick_t kick;
    void                *kick_arg;
    strand_bf_t         *bf; /* its register (dv.bf.reg) as every QP
                                of the device that rings it shares
                                it (strand_dev_bf); NULL: none */
} strand_dev_qp_t;

/* What every packet of a queue carries for the fabric's quality of
 * service: the service level (InfiniBand: the LRH's SL, in the AV and the
 * QP's path; RoCE: the priority) and the GRH's traffic class (RoCE: DSCP
 * << 2 | ECN; 106 is DSCP 26 with ECN, the class lossless RoCE fabrics
 * run PFC on, UCX's default there). */
typedef struct strand_dev_path {
    uint8_t sl;
    uint8_t tclass;
} strand_dev_path_t;

typedef struct strand_dev_sq_attr {
    strand_dev_td_t *td; /* its BlueFlame register's */
    strand_dev_cq_t *send_cq;
    uint32_t         max_send_wr;
    uint32_t         max_send_sge;
    uint32_t         max_inline;
    uint8_t          log_num_concurent; /* DCI streams; 0: none */
    uint8_t          log_num_errored;
    /* RTR/RTS attributes */
    uint8_t           timeout, retry_cnt, rnr_retry, max_rd_atomic;
    strand_dev_path_t path;
} strand_dev_sq_attr_t;

/* A tag-matching SRQ (IBV_SRQT_TM): its tag list and the command QP its
 * list operations are posted on; their completions go to `cq`. */
typedef struct strand_dev_tm_attr {
    strand_dev_td_t *td; /* the command QP's register */
    uint32_t         max_num_tags;
    uint32_t         max_ops;
    strand_dev_cq_t *cq;
} strand_dev_tm_attr_t;

typedef struct strand_dev_dct_attr {
    strand_dev_cq_t  *cq; /* receive (and send) CQ */
    strand_dev_srq_t *srq;
    uint64_t          access_key;
    uint8_t           min_rnr_timer;
    uint8_t           scatter_to_cqe; /* small messages may land in the
                                         CQE (else they never do) */
    strand_dev_path_t path;           /* of its responses */
} strand_dev_dct_attr_t;

/* An indirect mkey (mlx5dv_create_mkey): zero-based, its layout a list of
 * registered buffers, optionally with block signature offload. */
typedef struct strand_dev_mkey {
    void    *h;
    uint32_t key; /* lkey == rkey */
} strand_dev_mkey_t;

/* An RC QP (a send queue the data path posts on; receives through `srq`).
 * The connect attributes are those of a DCI plus the receive side. */
typedef struct strand_dev_rc_attr {
    strand_dev_td_t  *td; /* its BlueFlame register's */
    strand_dev_cq_t  *send_cq;
    strand_dev_cq_t  *recv_cq;
    strand_dev_srq_t *srq;
    uint32_t          max_send_wr;
    uint32_t          max_send_sge;
    uint32_t          max_inline;
    int               sig_pipelining; /* MLX5DV_QP_CREATE_SIG_PIPELINING */
    uint8_t           scatter_to_cqe; /* small received messages may land
                                         in the receive CQE (as a DCT's) */
    /* RTR/RTS attributes */
    uint8_t           timeout, retry_cnt, rnr_retry, max_rd_atomic;
    uint8_t           min_rnr_timer;
    strand_dev_path_t path;
} strand_dev_rc_attr_t;

/* Where an RC QP connects: the peer QP and its port (LID on InfiniBand,
 * GID on Ethernet). */
typedef struct strand_dev_rc_dest {
    uint32_t      qpn;
    uint16_t      lid;
    union ibv_gid gid;
} strand_dev_rc_dest_t;

/* What a QP is made with (ibv_qp_init_attr_ex and mlx5dv_qp_init_attr
 * in one): the caps of a send queue, the DC parts, the create flags. */
typedef struct strand_dev_qp_init {
    strand_dev_qp_type_t type;
    strand_dev_td_t     *td; /* DCI, RC: its register's */
    strand_dev_cq_t     *send_cq;
    strand_dev_cq_t     *recv_cq;
    strand_dev_srq_t    *srq; /* DCT, RC (NULL: none) */
    uint32_t             max_send_wr;
    uint32_t             max_send_sge;
    uint32_t             max_inline;
    uint8_t              log_num_concurent; /* DCI streams; 0: none */
    uint8_t              log_num_errored;
    uint64_t             dc_access_key;  /* DCT */
    uint8_t              scatter_to_cqe; /* DCT, RC: small messages may
                                            land in the receive CQE */
    uint8_t              sig_pipelining; /* RC:
                                            MLX5DV_QP_CREATE_SIG_PIPELINING */
} strand_dev_qp_init_t;

/* Asynchronous events, backend-neutral. */
typedef struct strand_dev_event {
    enum ibv_event_type type;
    uint32_t            qpn; /* for QP events, else 0 */
} strand_dev_event_t;

struct strand_dev_ops {
    const char *name;                             /* "hw" / "sim" */
    int (*list)(strand_dev_info_t *out, int max); /* returns count */
    int (*open)(const strand_dev_info_t *info, strand_dev_t **dev_p);
    void (*close)(strand_dev_t *dev);
    /* protect registered memory across fork() (ibv_fork_init); NULL: the
     * backend registers nothing the kernel pins, fork cannot hurt it */
    int (*fork_init)(void);

    int (*reg_mr)(strand_dev_t *dev, void *addr, size_t len, int access,
                  strand_dev_mr_t *mr);
    int (*dereg_mr)(strand_dev_t *dev, strand_dev_mr_t *mr);

    int (*create_channel)(strand_dev_t *dev, strand_dev_channel_t *ch);
    int (*destroy_channel)(strand_dev_t *dev, strand_dev_channel_t *ch);
    /* A CQ of at least `cqe` entries; events (after the data path armed it
     * with strand_cq_arm and its arm_kick) go to `ch` (NULL: none). The CQ
     * is the data path's (DV-owned): a reset QP leaves its CQEs in it.
     * `cqe_size`: 64 or 128 bytes per CQE (mlx5dv_create_cq's CQE_SIZE),
     * 0: the provider's default (rdma-core: MLX5_CQE_SIZE, else 64). */
    int (*create_cq)(strand_dev_t *dev, int cqe, unsigned cqe_size,
                     strand_dev_channel_t *ch, strand_dev_cq_t *cq);
    int (*destroy_cq)(strand_dev_t *dev, strand_dev_cq_t *cq);
    /* Consume and acknowledge one event of `ch` (after its fd polled
     * readable): 0 and the CQ, or EAGAIN. The caller's arm sequence number
     * of that CQ moves on by one. */
    int (*get_cq_event)(strand_dev_t *dev, strand_dev_channel_t *ch,
                        strand_dev_cq_t **cq_p);

    /* The address vector of a destination (ibv_create_ah semantics: on an
     * Ethernet port is_global is required and the MAC is resolved). The
     * caller adds the DC key, DCT number and extended-AV bit. 0 / errno. */
    int (*create_av)(strand_dev_t *dev, const struct ibv_ah_attr *attr,
                     struct mlx5_wqe_av *av);

    /* A thread domain for the QPs one thread rings (strand_dev_td_t);
     * destroy after its QPs. */
    int (*create_td)(strand_dev_t *dev, strand_dev_td_t *td);
    int (*destroy_td)(strand_dev_t *dev, strand_dev_td_t *td);

    int (*create_srq)(strand_dev_t *dev, uint32_t max_wr, uint32_t max_sge,
                      strand_dev_srq_t *srq);
    int (*destroy_srq)(strand_dev_t *dev, strand_dev_srq_t *srq);
    /* A tag-matching SRQ and the view of its command QP (the data path
     * posts TAG_MATCHING WQEs there itself); destroy_srq destroys both.
     * EOPNOTSUPP where the command QP cannot be reached. */
    int (*create_tm_srq)(strand_dev_t *dev, uint32_t max_wr, uint32_t max_sge,
                         const strand_dev_tm_attr_t *tm, strand_dev_srq_t *srq,
                         strand_dev_qp_t *cmd_qp);

    /* A QP of init->type in RESET (a DCI READ responses always land in
     * their buffers); its number, its doorbell kick. The states are the
     * caller's (strand_dev_create_dci and the others, dev_qp.c). */
    int (*create_qp)(strand_dev_t *dev, const strand_dev_qp_init_t *init,
                     strand_dev_qp_t *qp);
    /* One state transition, ibv_modify_qp(3)'s attributes and mask. */
    int (*modify_qp)(strand_dev_t *dev, strand_dev_qp_t *qp,
                     struct ibv_qp_attr *attr, int mask);
    /* The queues as mlx5dv_init_obj gives them, and the register (a DCT:
     * none; its number, known from RTR on). */
    int (*qp_view)(strand_dev_t *dev, strand_dev_qp_t *qp);
    int (*destroy_qp)(strand_dev_t *dev, strand_dev_qp_t *qp);
    int (*qp_state)(strand_dev_t *dev, strand_dev_qp_t *qp,
                    enum ibv_qp_state *state);
    int (*dci_stream_id_reset)(strand_dev_t *dev, strand_dev_qp_t *qp,
                               uint16_t stream_id);

    /* Signature pipelining (seed page mlx5dv_qp_cancel_posted_send_wrs.3):
     * the first WQE the SQ of a QP in SQD did not execute (its 16-bit WQE
     * counter; hw: a DEVX QP query's hw_sq_wqebb_counter), once every WQE
     * it executed completed (EBUSY while the drain is still in progress:
     * ibv_query_qp's sq_draining, the PRM's SQ_DRAINING state), EINVAL
     * outside SQD (strand_dev_sqd_to_rts resumes the SQ). The data path
     * cancels its own WQEs itself (it posted them: rdma-core's cancel only
     * knows the WRs rdma-core posted). */
    int (*query_sqd)(strand_dev_t *dev, strand_dev_qp_t *qp,
                     uint32_t *wqebb_counter);

    /* An indirect mkey of up to max_entries buffers, with block signature
     * offload when `signature` (EOPNOTSUPP without the capability), its
     * key's low byte `variant` where the backend can choose it (the
     * software device; rdma-core's mlx5dv_create_mkey cannot: 0). */
    int (*create_mkey)(strand_dev_t *dev, uint16_t max_entries, int signature,
                       uint8_t variant, strand_dev_mkey_t *mkey);
    int (*destroy_mkey)(strand_dev_t *dev, strand_dev_mkey_t *mkey);
    /* What mlx5dv_wr_mkey_configure(3) and its setters do: the layout
     * (lkeys of memory regions), the access flags, and the block signature
     * (NULL: none; any earlier one is reset). A signature error reported on
     * the mkey is cleared. Done when the call returns (hw: a UMR on a
     * configuration QP of the device layer, its completion polled). */
    int (*mkey_configure)(strand_dev_t *dev, strand_dev_mkey_t *mkey,
                          const struct ibv_sge *sge, unsigned num_sge,
                          int access, const struct mlx5dv_sig_block_attr *sig);

    /* The device's performance description (strand_dev_perf_t); 0 or
     * errno. The software device measures itself on the first call in a
     * process (a few ms). */
    int (*query_perf)(strand_dev_t *dev, strand_dev_perf_t *perf);
    /* The packets the port received, by SL and by GRH traffic class (what
     * a switch's QoS sees of them); NULL: not counted (a NIC's port
     * counters go by virtual lane, not SL). */
    void (*rx_qos)(strand_dev_t *dev, uint64_t sl[16], uint64_t tclass[256]);

    /* Device progress hook for CQ polling; NULL on hardware. */
    void (*progress)(strand_dev_t *dev);
    /* Async events: a pollable fd, and one event (0) or EAGAIN. */
    int (*get_async_event)(strand_dev_t *dev, strand_dev_event_t *ev);
};

struct strand_dev {
    const strand_dev_ops_t *ops;
    strand_dev_info_t       info;
    strand_dev_caps_t       caps;
    strand_dev_locality_t   locality;
    int                     async_fd;     /* async events */
    void                   *priv;         /* backend context */
    struct strand_dev_bfs  *bfs;          /* its registers (strand_dev_bf) */
    uint32_t                mkey_variant; /* strand_dev_mkey_variant */
};

extern const strand_dev_ops_t strand_dev_sim_ops;
extern const strand_dev_ops_t strand_dev_hw_ops;

/* The register a QP's doorbells go to (dv->bf.reg, as mlx5dv_init_obj
 * gives it), as every QP of the device that rings it shares it: its
 * halves alternate per register, whichever QP writes (rdma-core's struct
 * mlx5_bf, UCX's mmio register object). Made at its first QP, kept until
 * the device closes (strand_dev_bf_cleanup, from the backend's close).
 * The hw backend's (an rdma-core context's registers are its own); the
 * software device keeps its own per register, which its QPs take. NULL: no
 * register (a record-only queue) or no memory. */
strand_bf_t *strand_dev_bf(strand_dev_t *dev, const struct mlx5dv_qp *dv);
void         strand_dev_bf_cleanup(strand_dev_t *dev);

/* The key byte of the next mkey the device makes (create_mkey's
 * `variant`): it moves on with every one, as UCX's mkey tag, so that a
 * key of a destroyed mkey names no mkey made later on its index (a peer
 * with a stale key reads nothing). */
uint8_t strand_dev_mkey_variant(strand_dev_t *dev);

/* Discovery across backends. `kind_mask`: bit (1 << STRAND_DEV_KIND_*).
 * Fills up to `max` entries, hardware first; returns the count. */
int strand_dev_list(unsigned kind_mask, strand_dev_info_t *out, int max);
/* Open by info (picks the backend of info->kind). */
int strand_dev_open(const strand_dev_info_t *info, strand_dev_t **dev_p);
/* Fork protection for the backend of `kind`, before its first
 * registration: 0, ENOTSUP when the backend needs none, or why it failed. */
int strand_dev_fork_init(strand_dev_kind_t kind);
/* Why the hw backend lists no device, in words for a user who asked for
 * hardware (no RDMA driver, no device, none of them mlx5). */
void strand_dev_hw_why_none(char *buf, size_t max);

/* Shared by the backends: the GID index addresses should carry (RoCE v2
 * before v1, IPv4-mapped before other global GIDs before link-local ones;
 * the one GID of an InfiniBand port) from the port's table, and the
 * address-path part of an ibv_qp_attr (port, and on Ethernet the GRH) for
 * RTR transitions. */
typedef int (*strand_dev_query_gid_ex_t)(void *ctx, uint8_t port,
                                         uint32_t              index,
                                         struct ibv_gid_entry *entry);
int  strand_dev_pick_gid(void *ctx, strand_dev_query_gid_ex_t query,
                         uint8_t port, int link_layer, int gid_tbl_len,
                         uint8_t *index_p, union ibv_gid *gid_p);
void strand_dev_set_path(const strand_dev_t *dev, const strand_dev_path_t *path,
                         struct ibv_ah_attr *ah);
/* The largest MTU enum the port allows. */
enum ibv_mtu strand_dev_path_mtu(const strand_dev_t *dev);
/* The INIT -> RTR and RTR -> RTS transitions of an RC QP towards `dest`
 * (both PSNs 0): the attributes and their mask, for ibv_modify_qp or the
 * software device's equivalent. */
int strand_dev_rc_rtr_attr(const strand_dev_t         *dev,
                           const strand_dev_rc_attr_t *attr,
                           const strand_dev_rc_dest_t *dest,
                           struct ibv_qp_attr         *a);
int strand_dev_rc_rts_attr(const strand_dev_rc_attr_t *attr,
                           struct ibv_qp_attr         *a);

/* QPs through their states (dev_qp.c, once for every backend; 0 or an
 * errno, a QP that could not be brought up is destroyed):
 * a DCI made and brought to RTS; the same again from any state through
 * RESET (recovery: its queues emptied); a DCT made and brought to RTR; an
 * RC QP made and brought to INIT (remote read, write and atomic access;
 * its view valid at once, posting waits for the connect), then INIT ->
 * RTR -> RTS towards `dest`; any state -> ERR (every outstanding WQE
 * completes flushed: the way to cancel the work of a QP one owns alone);
 * SQD -> RTS (signature pipelining: the SQ resumes). */
int strand_dev_create_dci(strand_dev_t *dev, const strand_dev_sq_attr_t *attr,
                          strand_dev_qp_t *qp);
int strand_dev_reset_dci(strand_dev_t *dev, strand_dev_qp_t *qp,
                         const strand_dev_sq_attr_t *attr);
int strand_dev_create_dct(strand_dev_t *dev, const strand_dev_dct_attr_t *attr,
                          strand_dev_qp_t *qp);
int strand_dev_create_rc(strand_dev_t *dev, const strand_dev_rc_attr_t *attr,
                         strand_dev_qp_t *qp);
int strand_dev_connect_rc(strand_dev_t *dev, strand_dev_qp_t *qp,
                          const strand_dev_rc_attr_t *attr,
                          const strand_dev_rc_dest_t *dest);
int strand_dev_qp_to_err(strand_dev_t *dev, strand_dev_qp_t *qp);
/* RESET -> INIT on the device's port; `access`: the remote access
 * (IBV_ACCESS_REMOTE_*) of a QP that receives, 0 for one that does not */
int strand_dev_qp_to_init(strand_dev_t *dev, strand_dev_qp_t *qp, int access);
int strand_dev_sqd_to_rts(strand_dev_t *dev, strand_dev_qp_t *qp);

#ifdef __cplusplus
}
#endif

#endif
