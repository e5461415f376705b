/*
 * The send side of one DCI: building and posting WQEs, tracking every
 * outstanding WQE until its CQE (in any order across streams), and the
 * state of its DCI streams. Which endpoint posts on which DCI and stream is
 * the business of the TX policy (dc_policy.c); what happens after an error
 * CQE is in dc_recovery.c.
 */
#ifndef STRAND_DC_DCI_H_
#define STRAND_DC_DCI_H_

#include "dc_iface.h"
#include "mlx5/wqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/cqe.h"

#include <ucs/datastruct/queue_types.h>
#include <ucs/datastruct/string_buffer.h>

struct strand_dc_ep;

/* What to do when an outstanding WQE retires. */
enum {
    STRAND_DC_OP_PLAIN,      /* completion only */
    STRAND_DC_OP_DESC,       /* release the tx descriptor */
    STRAND_DC_OP_GET_BCOPY,  /* unpack from the descriptor, release it */
    STRAND_DC_OP_FETCH32,    /* copy the fetched value, release */
    STRAND_DC_OP_FETCH64
};

/* Where an operation stands (strand_dc_op_t.state). */
enum {
    STRAND_DC_OP_FREE,       /* the slot holds no WQE */
    STRAND_DC_OP_POSTED,     /* on the wire, its CQE to come */
    STRAND_DC_OP_FLUSHED     /* flushed by a DCI in error: its fate is
                                decided once every CQE of the DCI is back
                                (dc_recovery.c) */
};

/* Registrations the transport made itself for an iov passed without a
 * memory handle (an MD without UCT_MD_FLAG_NEED_MEMH lets UCP do that). */
typedef struct strand_dc_tmp_reg {
    unsigned  count;
    uct_mem_h memh[STRAND_DC_MAX_SGE];
} strand_dc_tmp_reg_t;

/* One outstanding WQE, in the slot of its first basic block. */
typedef struct strand_dc_op {
    uint16_t              wqe_idx;  /* WQE index in the ctrl segment */
    uint8_t               bbs;
    uint8_t               type;     /* STRAND_DC_OP_PLAIN, ... */
    uint8_t               state;    /* STRAND_DC_OP_FREE, ... */
    uint8_t               stream;   /* index in dci->streams */
    uint8_t               opcode;   /* MLX5_OPCODE_* (for recovery) */
    struct strand_dc_ep  *ep;       /* NULL: the ep is gone */
    uct_completion_t     *comp;
    strand_dc_tx_desc_t  *desc;
    strand_dc_tmp_reg_t  *tmp_reg;  /* NULL almost always */
    union {
        struct {
            uct_unpack_callback_t cb;
            void                 *arg;
            size_t                length;
        } unpack;
        void *result;
    } u;
} strand_dc_op_t;

/* A DCI stream (hardware stream channel: ctrl bytes 9-10). */
typedef enum strand_dc_stream_state {
    STRAND_DC_STREAM_OK,
    STRAND_DC_STREAM_DRAINING   /* errored: its later WQEs come back
                                   flushed, then it is reset */
} strand_dc_stream_state_t;

typedef struct strand_dc_stream {
    uint16_t  id;                /* the stream id in WQEs */
    uint8_t   state;             /* strand_dc_stream_state_t */
    uint32_t  outstanding;       /* WQEs posted and not retired */
    uint32_t  users;             /* eps that lease it */
    uint64_t  peer;              /* per-peer mapping: the peer's key */
    uint64_t  dest;              /* its first user's destination */
    uint8_t   mixed;             /* users of more than one destination */
    uint32_t  resets;            /* mlx5dv_dci_stream_id_reset calls */
    uint32_t  leases;            /* eps that took it, ever */
    ucs_queue_head_t held;       /* flushed WQEs to post again, in order */
} strand_dc_stream_t;

/* Life of a DCI. An error that puts the DCI in ERR (a non-stream error, or
 * too many errored streams) moves it to DRAINING: the device completes
 * every outstanding WQE with a flush CQE; those stay in the CQ even across
 * a reset (spec section 9), so the DCI is reset only once the flush CQE of
 * its last WQE was consumed. */
typedef enum strand_dc_dci_state {
    STRAND_DC_DCI_FREE,       /* dcs: in the pool; streams: no lessee */
    STRAND_DC_DCI_ACTIVE,     /* leased */
    STRAND_DC_DCI_DRAINING,   /* in ERR: flush CQEs still to come */
    STRAND_DC_DCI_BROKEN      /* could not be reset: never used again */
} strand_dc_dci_state_t;

typedef struct strand_dc_dci {
    strand_dev_qp_t       qp;
    void                 *sq_buf;
    void                 *sq_end;
    uint32_t              wqe_cnt;     /* BBs in the SQ */
    uint32_t              cur_post;    /* free-running BB counter */
    uint32_t              sq_tail;     /* BB counter of the oldest WQE not
                                          retired (== cur_post: none) */
    uint32_t              bf_offset;
    uint32_t              avail_bbs;
    uint32_t              posts;       /* WQEs since its ep took it (dcs) */
    uint32_t              outstanding; /* WQEs posted and not retired */
    uint32_t              flushed;     /* of those, FLUSHED */
    strand_dc_op_t       *ops;         /* by BB slot of the ctrl segment */
    strand_dc_stream_t   *streams;
    uint32_t              users;       /* eps leasing it */
    uint64_t              home;        /* streams: the destination of the
                                          first ep that leased it empty
                                          (kept while it is empty) */
    struct strand_dc_ep  *ep;          /* dcs: the lessee */
    ucs_list_link_t       waiters;     /* eps whose pending requests wait
                                          for room in this SQ, in order */
    uint8_t               index;
    uint8_t               state;       /* strand_dc_dci_state_t */
    uint8_t               errored;     /* streams in error now */
    uint32_t              resets;      /* back from ERR to RTS */
} strand_dc_dci_t;

ucs_status_t strand_dc_dci_pool_init(strand_dc_iface_t *iface);
void strand_dc_dci_pool_cleanup(strand_dc_iface_t *iface);
unsigned strand_dc_dci_tx_progress(strand_dc_iface_t *iface);
void strand_dc_tmp_reg_release(strand_dc_iface_t *iface,
                               strand_dc_tmp_reg_t *reg);
int strand_dc_dci_pool_busy(strand_dc_iface_t *iface);
/* The pool's state, one line per DCI and the free stack, and whether its
 * invariants hold (VFS file dci_pool; tests read it). */
void strand_dc_dci_pool_show(strand_dc_iface_t *iface,
                             ucs_string_buffer_t *strb);

/* Back to RESET and up to RTS: a DCI that went to ERR, once every CQE of
 * its old incarnation was consumed. 0 or errno. */
int strand_dc_dci_reset(strand_dc_iface_t *iface, strand_dc_dci_t *dci);
/* the SQ geometry of a fresh (or reset) DCI */
void strand_dc_dci_geometry(strand_dc_dci_t *dci);
/* complete an operation (status UCS_OK: unpack / copy results) and free
 * its slot; the ep's count of outstanding operations goes down */
void strand_dc_op_complete(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                           strand_dc_op_t *op, ucs_status_t status);
/* ep is destroyed: the completions of its outstanding operations on dci
 * are called now with UCS_ERR_CANCELED, nothing is written to its buffers
 * later; the WQEs retire (and free their descriptors) as usual */
void strand_dc_dci_orphan(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                          struct strand_dc_ep *ep);
/* the WQE at wqe_idx in the debug log */
void strand_dc_dci_log_wqe(strand_dc_dci_t *dci, uint16_t wqe_idx);
/* the operation of WQE index wqe_idx (NULL: none outstanding there) */
strand_dc_op_t *strand_dc_dci_op(strand_dc_dci_t *dci, uint16_t wqe_idx);

static UCS_F_ALWAYS_INLINE unsigned
strand_dc_dci_outstanding(const strand_dc_dci_t *dci)
{
    return dci->outstanding;
}

static UCS_F_ALWAYS_INLINE int
strand_dc_dci_has_room(const strand_dc_iface_t *iface,
                       const strand_dc_dci_t *dci)
{
    return (dci->avail_bbs >= iface->config.dci_max_bbs) &&
           (dci->outstanding < iface->config.tx_queue_len);
}

/* The ctrl segment of the next WQE, with the endpoint's address vector
 * right behind it (ctrl and AV fit the first BB: never wrapped). */
static UCS_F_ALWAYS_INLINE struct mlx5_wqe_ctrl_seg *
strand_dc_dci_wqe_start(strand_dc_dci_t *dci, const struct mlx5_wqe_av *av,
                        unsigned av_ds, void **next_seg)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(dci->sq_buf, dci->wqe_cnt,
                                                  dci->cur_post);

    if (ucs_likely(av_ds == 1)) {
        memcpy(ctrl + 1, av, STRAND_AV_BASE_SIZE);
    } else {
        memcpy(ctrl + 1, av, STRAND_AV_FULL_SIZE);
    }
    *next_seg = strand_sq_next((uint8_t*)(ctrl + 1), av_ds * STRAND_WQE_DS,
                               dci->sq_buf, dci->sq_end);
    return ctrl;
}

/* Ring the doorbell for everything up to cur_post and hand the SQ to the
 * device. */
static UCS_F_ALWAYS_INLINE void
strand_dc_dci_ring(strand_dc_dci_t *dci, struct mlx5_wqe_ctrl_seg *ctrl)
{
    strand_sq_ring_doorbell(dci->qp.dv.dbrec, dci->qp.dv.bf.reg,
                            &dci->bf_offset, dci->qp.dv.bf.size,
                            dci->cur_post, ctrl);
    if (dci->qp.kick != NULL) {
        dci->qp.kick(dci->qp.kick_arg);
    }
}

/* Take the next BBs of the SQ for the WQE at ctrl and remember what to do
 * when it retires (the caller wrote the WQE; the ctrl segment's index is
 * set here). Returns the op slot. */
static UCS_F_ALWAYS_INLINE strand_dc_op_t *
strand_dc_dci_claim(strand_dc_dci_t *dci, struct mlx5_wqe_ctrl_seg *ctrl,
                    unsigned bbs, const strand_dc_op_t *op_in)
{
    strand_dc_op_t *op = &dci->ops[dci->cur_post & (dci->wqe_cnt - 1)];

    *op         = *op_in;
    op->wqe_idx = (uint16_t)dci->cur_post;
    op->bbs     = bbs;
    op->state   = STRAND_DC_OP_POSTED;
    dci->cur_post    += bbs;
    dci->avail_bbs   -= bbs;
    dci->outstanding++;
    dci->streams[op->stream].outstanding++;
    return op;
}

#endif
