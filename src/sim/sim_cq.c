/*
 * Completion queues: a ring of 64-byte mlx5 CQEs owned by the user, written
 * by the device with the owner bit flipping every pass; arming through the
 * doorbell record and completion channels backed by an eventfd.
 */
#include "sim.h"
#include "sim_post.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SIM_CQ_ARM_CMD_SOLICITED (1u << 24)

/* ------------------------------------------------------------ channel */

smlx5_channel_t *smlx5_create_comp_channel(smlx5_context_t *ctx)
{
    smlx5_channel_t *ch = calloc(1, sizeof(*ch));

    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ch->fd < 0) {
        free(ch);
        return NULL;
    }
    ch->ctx = ctx;
    pthread_mutex_init(&ch->lock, NULL);
    return ch;
}

int smlx5_destroy_comp_channel(smlx5_channel_t *ch)
{
    if (atomic_load(&ch->refs) != 0) {
        return EBUSY;
    }
    close(ch->fd);
    pthread_mutex_destroy(&ch->lock);
    free(ch);
    return 0;
}

int smlx5_channel_fd(const smlx5_channel_t *ch)
{
    return ch->fd;
}

int smlx5_get_cq_event(smlx5_channel_t *ch, smlx5_cq_t **cq_p)
{
    uint64_t cnt;
    unsigned i;

    pthread_mutex_lock(&ch->lock);
    if (ch->num_fired == 0) {
        pthread_mutex_unlock(&ch->lock);
        return EAGAIN;
    }
    *cq_p = ch->fired[0];
    for (i = 1; i < ch->num_fired; ++i) {
        ch->fired[i - 1] = ch->fired[i];
    }
    if (--ch->num_fired == 0) {
        if (read(ch->fd, &cnt, sizeof(cnt)) < 0) {
            /* already clear */
        }
    }
    pthread_mutex_unlock(&ch->lock);
    return 0;
}

static void sim_channel_fire(smlx5_channel_t *ch, smlx5_cq_t *cq)
{
    uint64_t one = 1;
    unsigned i;

    pthread_mutex_lock(&ch->lock);
    for (i = 0; i < ch->num_fired; ++i) {
        if (ch->fired[i] == cq) {
            break;
        }
    }
    if ((i == ch->num_fired) && (ch->num_fired < 64)) {
        ch->fired[ch->num_fired++] = cq;
    }
    pthread_mutex_unlock(&ch->lock);
    if (write(ch->fd, &one, sizeof(one)) < 0) {
        /* counter saturated: still readable */
    }
}

/* ----------------------------------------------------------------- CQ */

static uint32_t sim_roundup_pow2(uint32_t x)
{
    uint32_t r = 1;

    while (r < x) {
        r <<= 1;
    }
    return r;
}

smlx5_cq_t *smlx5_create_cq(smlx5_context_t *ctx, int cqe,
                            smlx5_channel_t *channel)
{
    smlx5_cq_t *cq;
    uint32_t i;

    if ((cqe < 1) || (cqe > (1 << 22))) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    /* like the provider: room for cqe + 1 entries */
    cq->nent = sim_roundup_pow2((uint32_t)cqe + 1);
    if ((posix_memalign((void**)&cq->buf, 4096, cq->nent * 64) != 0) ||
        (posix_memalign((void**)&cq->dbrec, 64, 64) != 0) ||
        (posix_memalign((void**)&cq->uar, 4096, 4096) != 0)) {
        goto err;
    }
    for (i = 0; i < cq->nent; ++i) {
        memset(&cq->buf[i], 0, sizeof(cq->buf[i]));
        cq->buf[i].op_own = MLX5_CQE_INVALID << 4;
    }
    memset(cq->dbrec, 0, 64);
    memset(cq->uar, 0, 4096);
    cq->ctx     = ctx;
    cq->channel = channel;

    pthread_mutex_lock(&ctx->lock);
    for (i = 1; i < SIM_MAX_CQS; ++i) {
        if (ctx->cqs[i] == NULL) {
            break;
        }
    }
    if (i == SIM_MAX_CQS) {
        pthread_mutex_unlock(&ctx->lock);
        goto err;
    }
    cq->cqn      = i;
    ctx->cqs[i]  = cq;
    if (channel != NULL) {
        atomic_fetch_add(&channel->refs, 1);
    }
    pthread_mutex_unlock(&ctx->lock);
    return cq;

err:
    free(cq->buf);
    free(cq->dbrec);
    free(cq->uar);
    free(cq);
    errno = ENOMEM;
    return NULL;
}

int smlx5_destroy_cq(smlx5_cq_t *cq)
{
    smlx5_context_t *ctx = cq->ctx;

    if (atomic_load(&cq->refs) != 0) {
        return EBUSY;
    }
    pthread_mutex_lock(&ctx->lock);
    ctx->cqs[cq->cqn] = NULL;
    pthread_mutex_unlock(&ctx->lock);
    if (cq->channel != NULL) {
        atomic_fetch_sub(&cq->channel->refs, 1);
    }
    free(cq->buf);
    free(cq->dbrec);
    free(cq->uar);
    free(cq);
    return 0;
}

int smlx5_cq_dv(smlx5_cq_t *cq, struct mlx5dv_cq *out)
{
    memset(out, 0, sizeof(*out));
    out->buf      = cq->buf;
    out->dbrec    = cq->dbrec;
    out->cqe_cnt  = cq->nent;
    out->cqe_size = 64;
    out->cq_uar   = cq->uar;
    out->cqn      = cq->cqn;
    return 0;
}

/* The device takes the arm request from the doorbell record. */
static void sim_cq_arm_from_dbrec(smlx5_cq_t *cq)
{
    uint32_t v  = be32toh(cq->dbrec[SIM_CQ_DBR_ARM]);
    uint32_t ci = v & 0xffffff;

    cq->armed           = true;
    cq->armed_solicited = !!(v & SIM_CQ_ARM_CMD_SOLICITED);
    cq->armed_sn        = v >> 28;
    /* A CQE already at or past ci fires at once. */
    if ((int32_t)((cq->pi & 0xffffff) - ci) > 0 && !cq->armed_solicited) {
        cq->armed = false;
        if (cq->channel != NULL) {
            sim_channel_fire(cq->channel, cq);
        }
    }
}

int smlx5_req_notify_cq(smlx5_cq_t *cq, int solicited_only)
{
    uint32_t ci  = be32toh(cq->dbrec[SIM_CQ_DBR_CI]) & 0xffffff;
    uint32_t cmd = solicited_only ? SIM_CQ_ARM_CMD_SOLICITED : 0;
    uint32_t sn  = (cq->armed_sn + 1) & 3;
    uint64_t db;

    /* The hardware sequence: doorbell record, then the UAR write. */
    cq->dbrec[SIM_CQ_DBR_ARM] = htobe32((sn << 28) | cmd | ci);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    db = ((uint64_t)((sn << 28) | cmd | ci) << 32) | cq->cqn;
    *(volatile uint64_t*)(cq->uar + MLX5_CQ_DOORBELL) = htobe64(db);

    pthread_mutex_lock(&cq->ctx->lock);
    sim_cq_arm_from_dbrec(cq);
    pthread_mutex_unlock(&cq->ctx->lock);
    return 0;
}

void sim_cq_push(smlx5_cq_t *cq, const struct mlx5_cqe64 *src)
{
    uint32_t ci = be32toh(cq->dbrec[SIM_CQ_DBR_CI]) & 0xffffff;
    struct mlx5_cqe64 *dst;
    uint8_t owner, op_own;
    int solicited;

    if ((uint32_t)(cq->pi - ci) >= cq->nent) {
        if (!cq->overrun) {
            cq->overrun = true;
            sim_async_push(cq->ctx, IBV_EVENT_CQ_ERR, cq);
        }
        return;
    }

    dst   = &cq->buf[cq->pi & (cq->nent - 1)];
    owner = (cq->pi / cq->nent) & 1;
    memcpy(dst, src, offsetof(struct mlx5_cqe64, op_own));
    op_own = (src->op_own & 0xfe) | owner;
    /* The owner byte last: the CQE becomes the user's only when whole. */
    __atomic_store_n(&dst->op_own, op_own, __ATOMIC_RELEASE);
    cq->pi++;

    solicited = (op_own & 0x2) || ((op_own >> 4) == MLX5_CQE_REQ_ERR) ||
                ((op_own >> 4) == MLX5_CQE_RESP_ERR);
    if (cq->armed && (!cq->armed_solicited || solicited)) {
        cq->armed = false;
        if (cq->channel != NULL) {
            sim_channel_fire(cq->channel, cq);
        }
    }
}

/* ------------------------------------------------- verbs-like polling */

static enum ibv_wc_status sim_wc_status(uint8_t syndrome)
{
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:   return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:    return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:     return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:       return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:        return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:       return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:   return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:  return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:      return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:  return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
    default:                                   return IBV_WC_GENERAL_ERR;
    }
}

static void sim_wc_recv(smlx5_qp_t *qp, const struct mlx5_cqe64 *cqe,
                        struct ibv_wc *wc)
{
    uint16_t idx = be16toh(cqe->wqe_counter);

    if (qp->srq != NULL) {
        wc->wr_id = qp->srq->wrid[idx & (qp->srq->wqe_cnt - 1)];
        sim_srq_free_wqe(qp->srq, idx & (qp->srq->wqe_cnt - 1));
    } else {
        wc->wr_id = qp->rq_wrid[qp->rq_tail & (qp->rq_wqe_cnt - 1)];
        qp->rq_tail++;
    }
}

static void sim_wc_send(smlx5_qp_t *qp, const struct mlx5_cqe64 *cqe,
                        struct ibv_wc *wc)
{
    uint32_t idx = be16toh(cqe->wqe_counter) & (qp->sq_wqe_cnt - 1);

    wc->wr_id   = qp->sq_wrid[idx];
    wc->opcode  = (enum ibv_wc_opcode)qp->sq_opcode[idx];
    qp->sq_tail = qp->sq_wqe_head[idx];
}

static int sim_poll_one(smlx5_cq_t *cq, struct ibv_wc *wc)
{
    struct mlx5_cqe64 *cqe = &cq->buf[cq->poll_ci & (cq->nent - 1)];
    uint8_t op_own         = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
    uint8_t opcode         = op_own >> 4;
    struct mlx5_err_cqe *ecqe;
    smlx5_qp_t *qp;
    uint32_t qpn;

    if ((opcode == MLX5_CQE_INVALID) ||
        ((op_own & 1) != ((cq->poll_ci / cq->nent) & 1))) {
        return 0;
    }

    memset(wc, 0, sizeof(*wc));
    qpn       = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    qp        = sim_qp_lookup(cq->ctx, qpn);
    wc->qp_num = qpn;
    wc->status = IBV_WC_SUCCESS;

    switch (opcode) {
    case MLX5_CQE_REQ:
        if (qp != NULL) {
            sim_wc_send(qp, cqe, wc);
        }
        wc->byte_len = be32toh(cqe->byte_cnt);
        break;
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV:
        if (qp != NULL) {
            sim_wc_recv(qp, cqe, wc);
        }
        wc->opcode   = (opcode == MLX5_CQE_RESP_WR_IMM) ?
                       IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        wc->byte_len = be32toh(cqe->byte_cnt);
        wc->src_qp   = be32toh(cqe->flags_rqpn) & 0xffffff;
        wc->slid     = be16toh(cqe->slid);
        if ((opcode == MLX5_CQE_RESP_SEND_IMM) ||
            (opcode == MLX5_CQE_RESP_WR_IMM)) {
            wc->wc_flags |= IBV_WC_WITH_IMM;
            wc->imm_data  = cqe->imm_inval_pkey;
        } else if (opcode == MLX5_CQE_RESP_SEND_INV) {
            wc->wc_flags      |= IBV_WC_WITH_INV;
            wc->invalidated_rkey = be32toh(cqe->imm_inval_pkey);
        }
        break;
    case MLX5_CQE_REQ_ERR:
    case MLX5_CQE_RESP_ERR:
        ecqe           = (struct mlx5_err_cqe*)cqe;
        wc->status     = sim_wc_status(ecqe->syndrome);
        wc->vendor_err = ecqe->vendor_err_synd;
        qpn            = be32toh(ecqe->s_wqe_opcode_qpn) & 0xffffff;
        qp             = sim_qp_lookup(cq->ctx, qpn);
        wc->qp_num     = qpn;
        if (qp != NULL) {
            if (opcode == MLX5_CQE_REQ_ERR) {
                sim_wc_send(qp, cqe, wc);
            } else {
                sim_wc_recv(qp, cqe, wc);
            }
        }
        break;
    default:
        wc->status = IBV_WC_GENERAL_ERR;
        break;
    }

    cq->poll_ci++;
    cq->dbrec[SIM_CQ_DBR_CI] = htobe32(cq->poll_ci & 0xffffff);
    return 1;
}

int smlx5_poll_cq(smlx5_cq_t *cq, int n, struct ibv_wc *wc)
{
    int count = 0;

    while ((count < n) && sim_poll_one(cq, &wc[count])) {
        ++count;
    }
    if (count == 0) {
        /* Inline progress: the device runs when its owner polls. */
        smlx5_progress(cq->ctx);
        while ((count < n) && sim_poll_one(cq, &wc[count])) {
            ++count;
        }
    }
    return count;
}

/* Remove the CQEs of QP `qpn` not yet consumed (the driver's job when a QP
 * is reset or destroyed); later CQEs move up, keeping their order. */
void sim_cq_clean(smlx5_cq_t *cq, uint32_t qpn)
{
    uint32_t ci = be32toh(cq->dbrec[SIM_CQ_DBR_CI]) & 0xffffff;
    uint32_t start = cq->pi - ((cq->pi - ci) & 0xffffff);
    uint32_t i, kept = 0, n = cq->pi - start;
    struct mlx5_cqe64 *tmp, *c;

    if (n == 0) {
        return;
    }
    tmp = malloc(n * sizeof(*tmp));
    if (tmp == NULL) {
        return;
    }
    for (i = start; i != cq->pi; ++i) {
        c = &cq->buf[i & (cq->nent - 1)];
        if ((be32toh(c->sop_drop_qpn) & 0xffffff) != qpn) {
            tmp[kept++] = *c;
        }
    }
    for (i = 0; i < n; ++i) {
        c = &cq->buf[(start + i) & (cq->nent - 1)];
        if (i < kept) {
            memcpy(c, &tmp[i], offsetof(struct mlx5_cqe64, op_own));
            c->op_own = (tmp[i].op_own & 0xfe) |
                        (((start + i) / cq->nent) & 1);
        } else {
            c->op_own = MLX5_CQE_INVALID << 4;
        }
    }
    cq->pi = start + kept;
    free(tmp);
}
