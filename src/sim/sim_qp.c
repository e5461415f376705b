/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs (RC, DCI, DCT): creation, the mlx5dv view, and the QP state
 * machine of spec section 7 with the required / optional attributes of each
 * transition (as the kernel's ib_modify_qp_is_ok tables do).
 */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SIM_BB 64u

static uint32_t sim_pow2(uint32_t x)
{
    uint32_t r = 1;

    while (r < x) {
        r <<= 1;
    }
    return r;
}

/* Largest WQE a QP must hold, in bytes (ctrl + AV + remote + data). */
static uint32_t sim_sq_wqe_size(const smlx5_qp_init_attr_t *attr)
{
    uint32_t size = sizeof(struct mlx5_wqe_ctrl_seg);
    uint32_t data, inl;

    if (attr->type == SMLX5_QPT_DCI) {
        size += sizeof(struct mlx5_wqe_av);
    }
    size += sizeof(struct mlx5_wqe_raddr_seg) + 2 * 16; /* masked 64-bit CS */
    data = attr->cap.max_send_sge * sizeof(struct mlx5_wqe_data_seg);
    inl  = (attr->cap.max_inline_data + 4 + 15) & ~15u;
    size += (data > inl) ? data : inl;
    return size;
}

static int sim_qp_alloc_sq(smlx5_qp_t *qp, const smlx5_qp_init_attr_t *attr)
{
    uint32_t bbs = (sim_sq_wqe_size(attr) + SIM_BB - 1) / SIM_BB;
    uint32_t cnt = sim_pow2(attr->cap.max_send_wr * bbs);

    if (cnt < 8) {
        cnt = 8;
    }
    if (cnt > SIM_SQ_MAX_WQE) {
        return EINVAL;
    }
    qp->sq_wqe_cnt = cnt;
    qp->td         = attr->td;
    qp->bfreg      = sim_bf_take(qp->ctx, attr->td);
    qp->bf_reg     = qp->bfreg->page;
    qp->bf_size    = qp->bfreg->size;
    if (posix_memalign((void **)&qp->sq_buf, 4096, cnt * SIM_BB) != 0) {
        return ENOMEM;
    }
    memset(qp->sq_buf, 0, cnt * SIM_BB);
    qp->sq_wrid     = calloc(cnt, sizeof(*qp->sq_wrid));
    qp->sq_wqe_head = calloc(cnt, sizeof(*qp->sq_wqe_head));
    qp->sq_opcode   = calloc(cnt, sizeof(*qp->sq_opcode));
    qp->wqes        = calloc(cnt, sizeof(*qp->wqes));
    if (!qp->sq_wrid || !qp->sq_wqe_head || !qp->sq_opcode || !qp->wqes) {
        return ENOMEM;
    }
    /* what the QP really holds */
    qp->cap.max_send_wr     = cnt / bbs;
    qp->cap.max_send_sge    = attr->cap.max_send_sge;
    qp->cap.max_inline_data = attr->cap.max_inline_data;
    return 0;
}

static int sim_qp_alloc_rq(smlx5_qp_t *qp, const smlx5_qp_init_attr_t *attr)
{
    uint32_t sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;

    if ((attr->srq != NULL) || (attr->cap.max_recv_wr == 0)) {
        return 0;
    }
    qp->rq_stride  = sim_pow2(sge * sizeof(struct mlx5_wqe_data_seg));
    qp->rq_wqe_cnt = sim_pow2(attr->cap.max_recv_wr);
    if (posix_memalign((void **)&qp->rq_buf, 4096,
                       qp->rq_wqe_cnt * qp->rq_stride) != 0) {
        return ENOMEM;
    }
    memset(qp->rq_buf, 0, qp->rq_wqe_cnt * qp->rq_stride);
    qp->rq_wrid = calloc(qp->rq_wqe_cnt, sizeof(*qp->rq_wrid));
    if (qp->rq_wrid == NULL) {
        return ENOMEM;
    }
    qp->cap.max_recv_wr  = qp->rq_wqe_cnt;
    qp->cap.max_recv_sge = qp->rq_stride / sizeof(struct mlx5_wqe_data_seg);
    return 0;
}

static void sim_qp_free(smlx5_qp_t *qp)
{
    free(qp->sq_buf);
    sim_bf_put(qp);
    free(qp->sq_wrid);
    free(qp->sq_wqe_head);
    free(qp->sq_opcode);
    free(qp->wqes);
    free(qp->rq_buf);
    free(qp->rq_wrid);
    free(qp->dbrec);
    free(qp->resp);
    sim_resp_drop_reads(qp);
    free(qp);
}

/* The DCI stream limits of the device (mlx5dv dci_streams_caps). */
static bool sim_qp_dci_streams_ok(const smlx5_context_t      *ctx,
                                  const smlx5_qp_init_attr_t *attr)
{
    return (attr->log_num_concurent <= ctx->cfg.dci_log_concurent) &&
           (attr->log_num_errored <= ctx->cfg.dci_log_errored) &&
           (attr->log_num_errored <= attr->log_num_concurent);
}

/* MLX5DV_QP_CREATE_* this device knows; DISABLE and ALLOW scatter-to-CQE
 * contradict each other (rdma-core: EINVAL). */
static bool sim_qp_create_flags_ok(uint32_t flags)
{
    const uint32_t known = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
                           MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE |
                           MLX5DV_QP_CREATE_SIG_PIPELINING;
    const uint32_t both = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
                          MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;

    return !(flags & ~known) && ((flags & both) != both);
}

static int
sim_qp_check_init_attr(smlx5_context_t *ctx, const smlx5_qp_init_attr_t *attr)
{
    if (!sim_qp_create_flags_ok(attr->create_flags)) {
        return EINVAL;
    }
    /* the kernel allows no SQD on a DC QP: pipelining is RC only */
    if ((attr->create_flags & MLX5DV_QP_CREATE_SIG_PIPELINING) &&
        ((attr->type != SMLX5_QPT_RC) || !ctx->cfg.signature ||
         !ctx->cfg.sig_pipelining)) {
        return EINVAL;
    }
    switch (attr->type) {
    case SMLX5_QPT_RC:
        break;
    case SMLX5_QPT_DCI:
        if ((attr->srq != NULL) || (attr->cap.max_recv_wr != 0) ||
            !sim_qp_dci_streams_ok(ctx, attr)) {
            return EINVAL;
        }
        break;
    case SMLX5_QPT_DCT:
        if ((attr->srq == NULL) || (attr->recv_cq == NULL)) {
            return EINVAL;
        }
        return 0;
    default:
        return EINVAL;
    }
    if ((attr->send_cq == NULL) || (attr->cap.max_send_wr == 0) ||
        (attr->cap.max_send_sge > ctx->cfg.max_sge) ||
        (attr->cap.max_recv_sge > ctx->cfg.max_sge) ||
        (attr->cap.max_inline_data > ctx->cfg.max_inline) ||
        ((attr->type == SMLX5_QPT_RC) && (attr->recv_cq == NULL))) {
        return EINVAL;
    }
    return 0;
}

/* rdma-core asks for scatter-to-CQE unless MLX5_SCATTER_TO_CQE=0 or
 * DISABLE_SCATTER_TO_CQE; ALLOW_SCATTER_TO_CQE asks for it regardless. */
static bool sim_qp_scatter_requested(uint32_t flags)
{
    const char *env = getenv("MLX5_SCATTER_TO_CQE");

    if (flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) {
        return false;
    }
    return (flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE) || (env == NULL) ||
           strcmp(env, "0");
}

/* What the Linux driver then configures (cs_res, cs_req): a responder RC
 * QP up to what its receive CQE holds (32 or 64 bytes); a DCT only into
 * 128-byte CQEs and with the device's DCT capability; a requester (READ /
 * atomic responses) only with sq_sig_all or ALLOW_SCATTER_TO_CQE, 64
 * bytes into 128-byte CQEs, 32 into 64-byte ones for RC only. */
static void
sim_qp_scatter_config(smlx5_qp_t *qp, const smlx5_qp_init_attr_t *attr)
{
    const smlx5_cq_t *rcq = attr->recv_cq, *scq = attr->send_cq;

    qp->cs_res = qp->cs_req = 0;
    if (!sim_qp_scatter_requested(attr->create_flags)) {
        return;
    }
    if ((attr->type == SMLX5_QPT_RC) && (rcq != NULL)) {
        qp->cs_res = (uint8_t)sim_cq_scatter_max(rcq);
    } else if ((attr->type == SMLX5_QPT_DCT) && (rcq != NULL) &&
               (rcq->cqe_size == 128) && qp->ctx->cfg.scatter_dct) {
        qp->cs_res = 64;
    }
    if ((attr->type != SMLX5_QPT_DCT) && (scq != NULL) &&
        (attr->sq_sig_all ||
         (attr->create_flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE)) &&
        ((scq->cqe_size == 128) || (attr->type == SMLX5_QPT_RC))) {
        qp->cs_req = (uint8_t)sim_cq_scatter_max(scq);
    }
}

/* The provider's send queue of a QP with a send queue, at producer index
 * 0: after the queue and its doorbell record exist, and after a reset. */
static void sim_post_sq_reset(smlx5_qp_t *qp)
{
    struct mlx5dv_qp dv;

    memset(&dv, 0, sizeof(dv));
    dv.dbrec      = qp->dbrec;
    dv.sq.buf     = qp->sq_buf;
    dv.sq.wqe_cnt = qp->sq_wqe_cnt;
    dv.sq.stride  = STRAND_WQE_BB;
    dv.bf.reg     = qp->bf_reg;
    dv.bf.size    = qp->bf_size;
    /* the device reads the queue itself: a doorbell is all it needs */
    strand_sq_init(&qp->sq, &dv, qp->qpn, STRAND_MMIO_MODE_DB, &qp->bfreg->bf);
}

smlx5_qp_t *smlx5_create_qp(smlx5_pd_t *pd, smlx5_qp_init_attr_t *attr)
{
    smlx5_context_t *ctx = pd->ctx;
    smlx5_qp_t      *qp;
    int32_t          uidx;
    uint32_t         i;
    int              ret;

    ret = sim_qp_check_init_attr(ctx, attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    qp->ctx               = ctx;
    qp->pd                = pd;
    qp->type              = attr->type;
    qp->state             = IBV_QPS_RESET;
    qp->send_cq           = attr->send_cq;
    qp->recv_cq           = attr->recv_cq;
    qp->srq               = attr->srq;
    qp->user_index        = 0xffffff;
    qp->sq_sig_all        = attr->sq_sig_all;
    qp->dc_key            = attr->dc_access_key;
    qp->log_num_concurent = attr->log_num_concurent;
    qp->log_num_errored   = attr->log_num_errored;
    qp->create_flags      = attr->create_flags;
    qp->sig_pipelining    = !!(attr->create_flags &
                            MLX5DV_QP_CREATE_SIG_PIPELINING);
    qp->path_mtu          = ctx->cfg.mtu;
    sim_qp_scatter_config(qp, attr);

    if (posix_memalign((void **)&qp->dbrec, 64, 64) != 0) {
        qp->dbrec = NULL;
        ret       = ENOMEM;
        goto err;
    }
    memset(qp->dbrec, 0, 64);

    if (attr->type != SMLX5_QPT_DCT) {
        ret = sim_qp_alloc_sq(qp, attr);
        if (ret == 0) {
            ret = sim_qp_alloc_rq(qp, attr);
        }
        if (ret != 0) {
            goto err;
        }
    }
    if (attr->type != SMLX5_QPT_DCI) {
        qp->num_resp = (attr->type == SMLX5_QPT_DCT) ? SIM_RESP_CTX_MAX : 1;
        qp->resp     = calloc(qp->num_resp, sizeof(*qp->resp));
        if (qp->resp == NULL) {
            ret = ENOMEM;
            goto err;
        }
    }

    pthread_mutex_lock(&ctx->lock);
    for (i = 1; i < SIM_MAX_QPS; ++i) {
        if (ctx->qps[i] == NULL) {
            break;
        }
    }
    if (i == SIM_MAX_QPS) {
        pthread_mutex_unlock(&ctx->lock);
        ret = ENOMEM;
        goto err;
    }
    /* the provider's user index (CQE version 1), as mlx5_store_uidx */
    uidx = sim_uidx_store(ctx, qp);
    if (uidx < 0) {
        pthread_mutex_unlock(&ctx->lock);
        ret = ENOMEM;
        goto err;
    }
    qp->user_index = (uint32_t)uidx;
    /* QPN: the slot in the low bits, a generation above so that a packet
     * for a destroyed QP does not reach its successor (QPNs are 24 bits) */
    ctx->qp_gen = (ctx->qp_gen + 1) & (0xffffff >> SIM_QPN_SLOT_BITS);
    qp->qpn     = (((ctx->qp_gen ? ctx->qp_gen : 1) << SIM_QPN_SLOT_BITS) | i) &
              0xffffff;
    ctx->qps[i] = qp;
    if (qp->sq_buf != NULL) {
        sim_post_sq_reset(qp); /* its ctrl segments carry the QPN */
    }
    if (qp->send_cq) {
        atomic_fetch_add(&qp->send_cq->refs, 1);
    }
    if (qp->recv_cq) {
        atomic_fetch_add(&qp->recv_cq->refs, 1);
    }
    if (qp->srq) {
        atomic_fetch_add(&qp->srq->refs, 1);
    }
    atomic_fetch_add(&pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    return qp;

err:
    sim_qp_free(qp);
    errno = ret;
    return NULL;
}

int smlx5_destroy_qp(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;

    pthread_mutex_lock(&ctx->lock);
    ctx->qps[qp->qpn & (SIM_MAX_QPS - 1)] = NULL;
    sim_uidx_clear(ctx, qp->user_index);
    sim_async_drop_qp(ctx, qp);
    sim_req_queue_drop(qp);
    if (qp->busy) {
        unsigned i;
        for (i = 0; i < ctx->num_active; ++i) {
            if (ctx->active[i] == qp) {
                ctx->active[i] = ctx->active[--ctx->num_active];
                break;
            }
        }
    }
    if (qp->send_cq) {
        sim_cq_clean(qp->send_cq, qp);
        atomic_fetch_sub(&qp->send_cq->refs, 1);
    }
    if (qp->recv_cq) {
        if (qp->recv_cq != qp->send_cq) {
            sim_cq_clean(qp->recv_cq, qp);
        }
        atomic_fetch_sub(&qp->recv_cq->refs, 1);
    }
    if (qp->srq) {
        atomic_fetch_sub(&qp->srq->refs, 1);
    }
    atomic_fetch_sub(&qp->pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    sim_qp_free(qp);
    return 0;
}

int smlx5_qp_dv(smlx5_qp_t *qp, struct mlx5dv_qp *out)
{
    memset(out, 0, sizeof(*out));
    out->dbrec      = qp->dbrec;
    out->sq.buf     = qp->sq_buf;
    out->sq.wqe_cnt = qp->sq_wqe_cnt;
    out->sq.stride  = qp->sq_buf ? SIM_BB : 0;
    out->rq.buf     = qp->rq_buf;
    out->rq.wqe_cnt = qp->rq_wqe_cnt;
    out->rq.stride  = qp->rq_stride;
    out->bf.reg     = qp->bf_reg;
    out->bf.size    = qp->bf_size;
    return 0;
}

uint32_t smlx5_qp_num(const smlx5_qp_t *qp)
{
    return qp->qpn;
}

uint32_t smlx5_dct_num(const smlx5_qp_t *qp)
{
    return qp->dctn;
}

int smlx5_qp_stats(smlx5_qp_t *qp, smlx5_qp_stats_t *st)
{
    pthread_mutex_lock(&qp->ctx->lock);
    *st = qp->stats;
    pthread_mutex_unlock(&qp->ctx->lock);
    return 0;
}

/* ------------------------------------------------------ state machine */

typedef struct sim_qp_transition {
    int req, opt;
} sim_qp_transition_t;

#define S_(_s) IBV_QPS_##_s
static const int sim_any_opt = IBV_QP_CUR_STATE;

static int sim_rc_transition(enum ibv_qp_state cur, enum ibv_qp_state next,
                             sim_qp_transition_t *t)
{
    const int path = IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                     IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;

    t->req = t->opt = 0;
    if ((next == S_(RESET)) || (next == S_(ERR))) {
        t->opt = sim_any_opt;
        return 1;
    }
    switch (cur) {
    case S_(RESET):
        if (next == S_(INIT)) {
            t->req = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            return 1;
        }
        return 0;
    case S_(INIT):
        if (next == S_(INIT)) {
            t->opt = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            return 1;
        }
        if (next == S_(RTR)) {
            t->req = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER;
            t->opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
            return 1;
        }
        return 0;
    case S_(RTR):
        if (next == S_(RTS)) {
            t->req = IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
                     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT;
            t->opt = IBV_QP_CUR_STATE | path;
            return 1;
        }
        return 0;
    case S_(RTS):
        if (next == S_(RTS)) {
            t->opt = IBV_QP_CUR_STATE | path;
            return 1;
        }
        if (next == S_(SQD)) {
            t->opt = IBV_QP_EN_SQD_ASYNC_NOTIFY;
            return 1;
        }
        return 0;
    case S_(SQD):
        if (next == S_(RTS)) {
            t->opt = IBV_QP_CUR_STATE | path;
            return 1;
        }
        if (next == S_(SQD)) {
            t->opt = path | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                     IBV_QP_MAX_DEST_RD_ATOMIC;
            return 1;
        }
        return 0;
    case S_(SQE):
        if (next == S_(RTS)) {
            t->opt = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
                     IBV_QP_MIN_RNR_TIMER;
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

static int sim_dci_transition(enum ibv_qp_state cur, enum ibv_qp_state next,
                              sim_qp_transition_t *t)
{
    t->req = t->opt = 0;
    if ((next == S_(RESET)) || (next == S_(ERR))) {
        t->opt = sim_any_opt;
        return 1;
    }
    if ((cur == S_(RESET)) && (next == S_(INIT))) {
        t->req = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        return 1;
    }
    if ((cur == S_(INIT)) && (next == S_(RTR))) {
        t->req = IBV_QP_PATH_MTU;
        t->opt = IBV_QP_AV;
        return 1;
    }
    if ((cur == S_(RTR)) && (next == S_(RTS))) {
        t->req = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN;
        t->opt = IBV_QP_CUR_STATE;
        return 1;
    }
    if ((cur == S_(RTS)) && (next == S_(RTS))) {
        t->opt = IBV_QP_CUR_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                 IBV_QP_RNR_RETRY;
        return 1;
    }
    return 0;
}

static int sim_dct_transition(enum ibv_qp_state cur, enum ibv_qp_state next,
                              sim_qp_transition_t *t)
{
    t->req = t->opt = 0;
    if ((next == S_(RESET)) || (next == S_(ERR))) {
        t->opt = sim_any_opt;
        return 1;
    }
    if ((cur == S_(RESET)) && (next == S_(INIT))) {
        t->req = IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        return 1;
    }
    if ((cur == S_(INIT)) && (next == S_(RTR))) {
        t->req = IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU;
        return 1;
    }
    return 0;
}
#undef S_

static uint32_t sim_mtu_bytes(enum ibv_mtu mtu)
{
    return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? (128u << mtu) : 0;
}

/* The AV of a modify (as the kernel's mlx5_set_path): on Ethernet it must
 * carry a GRH with a valid source GID index, and an RC destination is the
 * live port owning dgid; on InfiniBand the destination is dlid. */
static int sim_qp_check_av(const smlx5_qp_t *qp, const struct ibv_ah_attr *ah,
                           uint16_t *dlid)
{
    int ret = sim_ah_attr_check(qp->ctx, ah);

    if (ret != 0) {
        return ret;
    }
    if (!sim_port_is_eth(qp->ctx)) {
        *dlid = ah->dlid;
        return 0;
    }
    *dlid = (qp->type == SMLX5_QPT_RC) ?
                    sim_gid_to_lid(qp->ctx, ah->grh.dgid.raw) :
                    0;
    return ((qp->type == SMLX5_QPT_RC) && (*dlid == 0)) ? EINVAL : 0;
}

/* Back to the freshly created state (the driver's part included: CQEs of
 * this QP leave its CQs, indices and doorbell records are zeroed). */
static void sim_qp_reset(smlx5_qp_t *qp)
{
    if (qp->send_cq) {
        sim_cq_clean(qp->send_cq, qp);
    }
    if (qp->recv_cq && (qp->recv_cq != qp->send_cq)) {
        sim_cq_clean(qp->recv_cq, qp);
    }
    qp->sq_tail = qp->sq_fetched = qp->sq_completed = 0;
    qp->req_bb                                      = 0;
    qp->db_pi                                       = 0;
    qp->rq_head = qp->rq_tail = 0;
    qp->rq_consumed           = 0;
    qp->rd_atomic_inflight    = 0;
    qp->num_errored           = 0;
    qp->tx_blocked            = false;
    sim_resp_drop_reads(qp);
    memset(qp->flows, 0, sizeof(qp->flows));
    qp->flows_used   = 0;
    qp->resend_flows = 0;
    memset(qp->chan_flow, 0, sizeof(qp->chan_flow));
    qp->num_deferred = 0;
    if (qp->wqes) {
        memset(qp->wqes, 0, qp->sq_wqe_cnt * sizeof(*qp->wqes));
    }
    if (qp->resp) {
        memset(qp->resp, 0, qp->num_resp * sizeof(*qp->resp));
    }
    memset(qp->dbrec, 0, 64);
    qp->dctn = 0;
    if (qp->sq_buf != NULL) {
        sim_post_sq_reset(qp);
    }
}

int smlx5_modify_qp(smlx5_qp_t *qp, struct ibv_qp_attr *attr, int mask)
{
    smlx5_context_t    *ctx = qp->ctx;
    enum ibv_qp_state   cur, next;
    sim_qp_transition_t t;
    uint16_t            dlid = 0;
    int                 ok, ret = 0;

    pthread_mutex_lock(&ctx->lock);
    cur  = qp->state;
    next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
    if ((mask & IBV_QP_CUR_STATE) && (attr->cur_qp_state != cur)) {
        ret = EINVAL;
        goto out;
    }
    switch (qp->type) {
    case SMLX5_QPT_RC:
        ok = sim_rc_transition(cur, next, &t);
        break;
    case SMLX5_QPT_DCI:
        ok = sim_dci_transition(cur, next, &t);
        break;
    default:
        ok = sim_dct_transition(cur, next, &t);
        break;
    }
    mask &= ~IBV_QP_STATE;
    if (!ok || ((mask & t.req) != t.req) || (mask & ~(t.req | t.opt))) {
        ret = EINVAL;
        goto out;
    }
    if (mask & IBV_QP_PORT) {
        if (attr->port_num != SMLX5_PORT_NUM) {
            ret = EINVAL;
            goto out;
        }
    }
    if (mask & IBV_QP_PATH_MTU) {
        uint32_t mtu = sim_mtu_bytes(attr->path_mtu);
        if ((mtu == 0) || (mtu > ctx->cfg.mtu)) {
            ret = EINVAL;
            goto out;
        }
    }
    if (mask & IBV_QP_AV) {
        ret = sim_qp_check_av(qp, &attr->ah_attr, &dlid);
        if (ret != 0) {
            goto out;
        }
    }
    if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
         (attr->max_rd_atomic > SIM_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
         (attr->max_dest_rd_atomic > SIM_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_RETRY_CNT) && (attr->retry_cnt > 7)) ||
        ((mask & IBV_QP_RNR_RETRY) && (attr->rnr_retry > 7)) ||
        ((mask & IBV_QP_TIMEOUT) && (attr->timeout > 31)) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && (attr->min_rnr_timer > 31))) {
        ret = EINVAL;
        goto out;
    }

    /* all checked: apply */
    if (mask & IBV_QP_ACCESS_FLAGS)
        qp->access_flags = attr->qp_access_flags;
    if (mask & IBV_QP_PATH_MTU)
        qp->path_mtu = sim_mtu_bytes(attr->path_mtu);
    if (mask & IBV_QP_AV) {
        qp->dlid        = dlid;
        qp->path_sl     = attr->ah_attr.sl & 0xf;
        qp->path_tclass = attr->ah_attr.is_global ?
                                  attr->ah_attr.grh.traffic_class :
                                  0;
    }
    if (mask & IBV_QP_DEST_QPN)
        qp->dest_qpn = attr->dest_qp_num;
    if (mask & IBV_QP_RQ_PSN)
        qp->rq_psn = attr->rq_psn & 0xffffff;
    if (mask & IBV_QP_SQ_PSN)
        qp->sq_psn = attr->sq_psn & 0xffffff;
    if (mask & IBV_QP_TIMEOUT)
        qp->timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        qp->retry_cnt = attr->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        qp->rnr_retry = attr->rnr_retry;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        qp->min_rnr_timer = attr->min_rnr_timer;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        qp->max_rd_atomic = attr->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;

    if (next == IBV_QPS_RESET) {
        sim_qp_reset(qp);
    } else if ((next == IBV_QPS_RTR) && (cur == IBV_QPS_INIT)) {
        if (qp->type == SMLX5_QPT_DCT) {
            qp->dctn = qp->qpn; /* the DCT number is assigned here */
        } else if (qp->type == SMLX5_QPT_RC) {
            qp->resp[0].used = true;
            qp->resp[0].slid = qp->dlid;
            qp->resp[0].sqpn = qp->dest_qpn;
            qp->resp[0].epsn = qp->rq_psn;
        }
    } else if ((next == IBV_QPS_RTS) && (cur == IBV_QPS_RTR)) {
        /* RC: its one flow starts at sq_psn. DCI: every DC connect takes
         * a PSN range never used before, also across resets, so a DCT
         * never mistakes a new association for an old (errored) one. */
        qp->next_flow_psn = (qp->type == SMLX5_QPT_DCI) ?
                                    qp->next_flow_psn + (1u << 16) :
                                    qp->sq_psn;
    }

    qp->state = next;
    if (next != IBV_QPS_SQD) {
        qp->sig_stop   = false;
        qp->sqd_notify = false;
    }
    if ((next == IBV_QPS_ERR) && (cur != IBV_QPS_ERR)) {
        sim_comp_flush_qp(qp);
    } else if ((next == IBV_QPS_RTS) && (cur == IBV_QPS_SQD)) {
        sim_req_process(qp); /* resume from the first unexecuted WQE */
    } else if ((next == IBV_QPS_SQD) && (cur == IBV_QPS_RTS)) {
        /* the SQ stops at the next WQE boundary; drained when what was
         * started has completed (now, if nothing was) */
        qp->sqd_notify = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
                         attr->en_sqd_async_notify;
        sim_comp_retire(qp);
    }
out:
    pthread_mutex_unlock(&ctx->lock);
    return ret;
}

int smlx5_query_qp(smlx5_qp_t *qp, struct ibv_qp_attr *attr, int attr_mask,
                   struct ibv_qp_init_attr *init)
{
    memset(attr, 0, sizeof(*attr));
    pthread_mutex_lock(&qp->ctx->lock);
    attr->qp_state           = qp->state;
    attr->cur_qp_state       = qp->state;
    attr->path_mtu           = (enum ibv_mtu)(__builtin_ctz(qp->path_mtu) - 7);
    attr->qp_access_flags    = qp->access_flags;
    attr->rq_psn             = qp->rq_psn;
    attr->sq_psn             = qp->sq_psn;
    attr->dest_qp_num        = qp->dest_qpn;
    attr->ah_attr.dlid       = qp->dlid;
    attr->ah_attr.port_num   = SMLX5_PORT_NUM;
    attr->port_num           = SMLX5_PORT_NUM;
    attr->timeout            = qp->timeout;
    attr->retry_cnt          = qp->retry_cnt;
    attr->rnr_retry          = qp->rnr_retry;
    attr->min_rnr_timer      = qp->min_rnr_timer;
    attr->max_rd_atomic      = qp->max_rd_atomic;
    attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
    attr->cap                = qp->cap;
    attr->sq_draining        = 0;
    if (init != NULL) {
        memset(init, 0, sizeof(*init));
        init->cap        = qp->cap;
        init->sq_sig_all = qp->sq_sig_all;
        init->qp_type    = (qp->type == SMLX5_QPT_RC) ? IBV_QPT_RC :
                                                        IBV_QPT_DRIVER;
    }
    pthread_mutex_unlock(&qp->ctx->lock);
    return 0;
}

/* ------------------------------------------ signature pipelining, SQD */

int smlx5_qp_query_sqd(smlx5_qp_t *qp, uint32_t *wqebb_counter)
{
    int ret = 0;

    pthread_mutex_lock(&qp->ctx->lock);
    if (qp->state != IBV_QPS_SQD) {
        ret = EINVAL;
    } else if (qp->sq_completed != qp->sq_fetched) {
        /* stopped, but what it started has not all completed: the
         * drain is in progress (ibv_query_qp's sq_draining; the PRM's
         * SQ_DRAINING QP state) and its CQEs are still to come */
        ret = EBUSY;
    } else {
        *wqebb_counter = qp->sq_fetched & 0xffff;
    }
    pthread_mutex_unlock(&qp->ctx->lock);
    return ret;
}

int smlx5_qp_cancel_posted_send_wrs(smlx5_qp_t *qp, uint64_t wr_id)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    uint32_t                  bb, slot;
    int                       n = 0;

    pthread_mutex_lock(&qp->ctx->lock);
    if ((qp->state != IBV_QPS_SQD) || (qp->sq_buf == NULL)) {
        pthread_mutex_unlock(&qp->ctx->lock);
        return -EINVAL;
    }
    /* from the first WQE not executed to the provider's producer index,
     * WQE by WQE (the provider's wqe_head chain) */
    for (bb = qp->sq_fetched; bb != qp->sq.cur_post;
         bb = qp->sq_wqe_head[slot]) {
        slot = bb & (qp->sq_wqe_cnt - 1);
        if (qp->sq_wrid[slot] != wr_id) {
            continue;
        }
        /* a NOP of the same size, fence and signaling: opcode and opmod
         * cleared, the WQE index kept; its completion reports the
         * original opcode (sq_opcode) */
        ctrl = (struct mlx5_wqe_ctrl_seg *)(qp->sq_buf + (size_t)slot * 64);
        strand_set_ctrl_nop(ctrl);
        ++n;
    }
    pthread_mutex_unlock(&qp->ctx->lock);
    return n;
}

/* ------------------------------------------------------ DCI streams */

int smlx5_dci_stream_id_reset(smlx5_qp_t *qp, uint16_t stream_id)
{
    unsigned i;
    int      ret = 0;

    if (qp->type != SMLX5_QPT_DCI) {
        return EINVAL;
    }
    if (!qp->ctx->cfg.devx) {
        /* a DEVX command (rdma-core modifies the QP through DEVX): a
         * context that cannot issue one cannot reset a stream */
        return EOPNOTSUPP;
    }
    pthread_mutex_lock(&qp->ctx->lock);
    if ((qp->log_num_errored == 0) || (qp->state != IBV_QPS_RTS)) {
        ret = EOPNOTSUPP;
        goto out;
    }
    if ((stream_id >> qp->log_num_concurent) != 0) {
        ret = EINVAL; /* not one of its channels: the firmware refuses the
                         modify command (bad parameter) */
        goto out;
    }
    for (i = 0; i < qp->num_errored; ++i) {
        if (qp->errored_streams[i] == stream_id) {
            qp->errored_streams[i] = qp->errored_streams[--qp->num_errored];
            break;
        }
    }
    sim_req_process(qp); /* work posted after the reset may go now */
out:
    pthread_mutex_unlock(&qp->ctx->lock);
    return ret;
}

/* ------------------------------------------------------ doorbells */

void sim_qp_told(smlx5_qp_t *qp)
{
    __atomic_store_n(&qp->db_pi,
                     be32toh(__atomic_load_n(&qp->dbrec[MLX5_SND_DBR],
                                             __ATOMIC_ACQUIRE)) &
                             0xffff,
                     __ATOMIC_RELEASE);
}
