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
    char              sysfs_path[256];  /* hw: /sys/class/infiniband/..;
                                           "" for the software device */
} strand_dev_info_t;

/* What the transport needs to know about a device and its port. */
typedef struct strand_dev_caps {
    uint32_t      max_qp_wr;
    uint32_t      max_sge;
    uint32_t      max_inline;
    uint32_t      max_mr_size_log2;
    uint32_t      mtu;                 /* active MTU, bytes */
    uint16_t      lid;
    union ibv_gid gid;
    int           atomics;             /* IBV_ATOMIC_HCA or better */
    int           masked_atomics;
    int           atomic_reply_be;     /* fetched values are big-endian */
    uint8_t       dci_max_log_num_concurent;
    uint8_t       dci_max_log_num_errored;
    uint32_t      tm_max_num_tags;     /* 0: no tag matching */
    uint32_t      tm_max_ops;
    uint32_t      max_rd_atomic;
} strand_dev_caps_t;

typedef struct strand_dev      strand_dev_t;
typedef struct strand_dev_ops  strand_dev_ops_t;

/* Objects: a backend handle plus the view the data path uses. */
typedef struct strand_dev_mr {
    void     *h;
    uint32_t  lkey, rkey;
} strand_dev_mr_t;

typedef struct strand_dev_cq {
    void            *h;
    struct mlx5dv_cq dv;
} strand_dev_cq_t;

typedef struct strand_dev_srq {
    void             *h;
    struct mlx5dv_srq dv;
    uint32_t          wqe_cnt;    /* WQEs in the list (incl. sentinel) */
    uint32_t          max_sge;
} strand_dev_srq_t;

/* Called by the data path after ringing an SQ doorbell (the software
 * device cannot observe BlueFlame stores); NULL on hardware. */
typedef void (*strand_dev_kick_t)(void *arg);

typedef struct strand_dev_qp {
    void             *h;
    struct mlx5dv_qp  dv;
    uint32_t          qpn;        /* QP number; for a DCT: the DCT number
                                     once it is in RTR */
    strand_dev_kick_t kick;
    void             *kick_arg;
} strand_dev_qp_t;

typedef struct strand_dev_dci_attr {
    strand_dev_cq_t *send_cq;
    uint32_t         max_send_wr;
    uint32_t         max_send_sge;
    uint32_t         max_inline;
    uint32_t         user_index;
    uint8_t          log_num_concurent;  /* DCI streams; 0: none */
    uint8_t          log_num_errored;
    /* RTR/RTS attributes */
    uint8_t          timeout, retry_cnt, rnr_retry, max_rd_atomic;
} strand_dev_dci_attr_t;

typedef struct strand_dev_dct_attr {
    strand_dev_cq_t  *cq;          /* receive (and send) CQ */
    strand_dev_srq_t *srq;
    uint64_t          access_key;
    uint32_t          user_index;
    uint8_t           min_rnr_timer;
} strand_dev_dct_attr_t;

/* Asynchronous events, backend-neutral. */
typedef struct strand_dev_event {
    enum ibv_event_type type;
    uint32_t            qpn;       /* for QP events, else 0 */
} strand_dev_event_t;

struct strand_dev_ops {
    const char *name;             /* "hw" / "sim" */
    int  (*list)(strand_dev_info_t *out, int max);      /* returns count */
    int  (*open)(const strand_dev_info_t *info, strand_dev_t **dev_p);
    void (*close)(strand_dev_t *dev);

    int  (*reg_mr)(strand_dev_t *dev, void *addr, size_t len, int access,
                   strand_dev_mr_t *mr);
    int  (*dereg_mr)(strand_dev_t *dev, strand_dev_mr_t *mr);

    int  (*create_cq)(strand_dev_t *dev, int cqe, strand_dev_cq_t *cq);
    int  (*destroy_cq)(strand_dev_t *dev, strand_dev_cq_t *cq);
    /* Arm for the next (solicited) completion; events arrive on event_fd */
    int  (*arm_cq)(strand_dev_t *dev, strand_dev_cq_t *cq, int solicited);
    /* Consume one CQ event (after event_fd polled readable): 0 / EAGAIN */
    int  (*get_cq_event)(strand_dev_t *dev, strand_dev_cq_t **cq_p);

    int  (*create_srq)(strand_dev_t *dev, uint32_t max_wr, uint32_t max_sge,
                       strand_dev_srq_t *srq);
    int  (*destroy_srq)(strand_dev_t *dev, strand_dev_srq_t *srq);

    /* A DCI brought to RTS / a DCT brought to RTR. */
    int  (*create_dci)(strand_dev_t *dev, const strand_dev_dci_attr_t *attr,
                       strand_dev_qp_t *qp);
    int  (*create_dct)(strand_dev_t *dev, const strand_dev_dct_attr_t *attr,
                       strand_dev_qp_t *qp);
    int  (*destroy_qp)(strand_dev_t *dev, strand_dev_qp_t *qp);
    /* DCI recovery: ERR -> RESET -> INIT -> RTR -> RTS (queues emptied) */
    int  (*reset_dci)(strand_dev_t *dev, strand_dev_qp_t *qp,
                      const strand_dev_dci_attr_t *attr);
    int  (*qp_state)(strand_dev_t *dev, strand_dev_qp_t *qp,
                     enum ibv_qp_state *state);
    int  (*dci_stream_id_reset)(strand_dev_t *dev, strand_dev_qp_t *qp,
                                uint16_t stream_id);

    /* Device progress hook for CQ polling; NULL on hardware. */
    void (*progress)(strand_dev_t *dev);
    /* Async events: a pollable fd, and one event (0) or EAGAIN. */
    int  (*get_async_event)(strand_dev_t *dev, strand_dev_event_t *ev);
};

struct strand_dev {
    const strand_dev_ops_t *ops;
    strand_dev_info_t       info;
    strand_dev_caps_t       caps;
    int                     event_fd;   /* CQ completion events */
    int                     async_fd;   /* async events */
    void                   *priv;       /* backend context */
};

extern const strand_dev_ops_t strand_dev_sim_ops;
extern const strand_dev_ops_t strand_dev_hw_ops;

/* Discovery across backends. `kind_mask`: bit (1 << STRAND_DEV_KIND_*).
 * Fills up to `max` entries, hardware first; returns the count. */
int strand_dev_list(unsigned kind_mask, strand_dev_info_t *out, int max);
/* Open by info (picks the backend of info->kind). */
int strand_dev_open(const strand_dev_info_t *info, strand_dev_t **dev_p);

#ifdef __cplusplus
}
#endif

#endif
