/*
 * The DCI pool ("dcs" policy) and the send side of one DCI: building and
 * posting WQEs, tracking every outstanding WQE until its CQE, and recovery
 * after an error CQE.
 */
#ifndef STRAND_DC_DCI_H_
#define STRAND_DC_DCI_H_

#include "dc_iface.h"
#include "mlx5/wqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/cqe.h"

/* What to do when an outstanding WQE retires. */
enum {
    STRAND_DC_OP_PLAIN,      /* completion only */
    STRAND_DC_OP_DESC,       /* release the tx descriptor */
    STRAND_DC_OP_GET_BCOPY,  /* unpack from the descriptor, release it */
    STRAND_DC_OP_FETCH32,    /* copy the fetched value, release */
    STRAND_DC_OP_FETCH64
};

/* Registrations the transport made itself for an iov passed without a
 * memory handle (an MD without UCT_MD_FLAG_NEED_MEMH lets UCP do that). */
typedef struct strand_dc_tmp_reg {
    unsigned  count;
    uct_mem_h memh[STRAND_DC_MAX_SGE];
} strand_dc_tmp_reg_t;

typedef struct strand_dc_op {
    uint16_t              wqe_idx;  /* WQE index in the ctrl segment */
    uint8_t               bbs;
    uint8_t               type;
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

typedef struct strand_dc_dci {
    strand_dev_qp_t       qp;
    void                 *sq_buf;
    void                 *sq_end;
    uint32_t              wqe_cnt;     /* BBs in the SQ */
    uint32_t              cur_post;    /* free-running BB counter */
    uint32_t              bf_offset;
    uint32_t              avail_bbs;
    strand_dc_op_t       *ops;         /* ring of outstanding WQEs */
    uint32_t              ops_mask;
    uint32_t              op_head, op_tail;
    struct strand_dc_ep  *ep;          /* owner while busy; NULL when the
                                          ep was destroyed meanwhile */
    uint8_t               index;
    uint8_t               busy;        /* out of the pool */
    uint8_t               broken;      /* could not be reset: never reused */
} strand_dc_dci_t;

ucs_status_t strand_dc_dci_pool_init(strand_dc_iface_t *iface);
void strand_dc_dci_pool_cleanup(strand_dc_iface_t *iface);
unsigned strand_dc_dci_tx_progress(strand_dc_iface_t *iface);
void strand_dc_tmp_reg_release(strand_dc_iface_t *iface,
                               strand_dc_tmp_reg_t *reg);
int strand_dc_dci_pool_busy(strand_dc_iface_t *iface);
void strand_dc_dci_release_if_idle(strand_dc_iface_t *iface,
                                   strand_dc_dci_t *dci);

static UCS_F_ALWAYS_INLINE unsigned
strand_dc_dci_outstanding(const strand_dc_dci_t *dci)
{
    return dci->op_head - dci->op_tail;
}

static UCS_F_ALWAYS_INLINE int
strand_dc_dci_has_room(const strand_dc_iface_t *iface,
                       const strand_dc_dci_t *dci)
{
    return (dci->avail_bbs >= iface->config.dci_max_bbs) &&
           (strand_dc_dci_outstanding(dci) < iface->config.tx_queue_len);
}

/* The ctrl segment of the next WQE; the base AV follows it (same BB). */
static UCS_F_ALWAYS_INLINE struct mlx5_wqe_ctrl_seg *
strand_dc_dci_wqe_start(strand_dc_dci_t *dci, uint16_t dlid, uint32_t dctn,
                        void **next_seg)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(dci->sq_buf, dci->wqe_cnt,
                                                  dci->cur_post);
    struct mlx5_wqe_av *av = (struct mlx5_wqe_av*)(ctrl + 1);

    strand_set_av_base(av, STRAND_DC_ACCESS_KEY, dctn, dlid);
    *next_seg = strand_sq_next((uint8_t*)av, STRAND_AV_BASE_SIZE, dci->sq_buf,
                               dci->sq_end);
    return ctrl;
}

/* ds units between ctrl and seg_end (wrap-aware). */
static UCS_F_ALWAYS_INLINE unsigned
strand_dc_dci_wqe_ds(strand_dc_dci_t *dci, struct mlx5_wqe_ctrl_seg *ctrl,
                     void *seg_end)
{
    size_t size = (uint8_t*)dci->sq_end - (uint8_t*)dci->sq_buf;
    size_t off  = ((uint8_t*)seg_end - (uint8_t*)ctrl + size) % size;

    if (off == 0) {
        off = size; /* a WQE as large as the whole SQ: never built */
    }
    return off / STRAND_WQE_DS;
}

/*
 * Finish the WQE at ctrl (every WQE is signaled), remember what to do when
 * it retires, ring the doorbell and hand the SQ to the device.
 */
static UCS_F_ALWAYS_INLINE void
strand_dc_dci_post(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                   struct mlx5_wqe_ctrl_seg *ctrl, uint8_t opcode,
                   uint8_t opmod, unsigned ds, uint8_t fence,
                   const strand_dc_op_t *op_in)
{
    unsigned bbs = strand_ds_to_bbs(ds);
    strand_dc_op_t *op;

    strand_set_ctrl_seg(ctrl, opmod, (uint16_t)dci->cur_post, opcode,
                        dci->qp.qpn, ds,
                        MLX5_WQE_CTRL_CQ_UPDATE | fence, 0);

    op          = &dci->ops[dci->op_head++ & dci->ops_mask];
    *op         = *op_in;
    op->wqe_idx = (uint16_t)dci->cur_post;
    op->bbs     = bbs;

    dci->cur_post  += bbs;
    dci->avail_bbs -= bbs;
    strand_sq_ring_doorbell(dci->qp.dv.dbrec, dci->qp.dv.bf.reg,
                            &dci->bf_offset, dci->qp.dv.bf.size,
                            dci->cur_post, ctrl);
    if (dci->qp.kick != NULL) {
        dci->qp.kick(dci->qp.kick_arg);
    }
    (void)iface;
}

#endif
