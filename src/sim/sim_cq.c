/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: a ring of 64-byte mlx5 CQEs owned by the user, written
 * by the device with the owner bit flipping every pass; arming through the
 * doorbell record and completion channels backed by an eventfd. Every
 * stage writes CQEs here; reading them back as ibv_wc is sim_cq_poll.c's.
 */
#include "sim.h"
#include "sim_rq.h"

#include "mlx5/cqe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
    /* rdma-core's mlx5_cq_event: the next arm carries the next sn */
    (*cq_p)->arm_sn++;
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

/* A destroyed CQ leaves the channel's pending events. */
static void sim_channel_forget(smlx5_channel_t *ch, smlx5_cq_t *cq)
{
    unsigned i, kept = 0;

    pthread_mutex_lock(&ch->lock);
    for (i = 0; i < ch->num_fired; ++i) {
        if (ch->fired[i] != cq) {
            ch->fired[kept++] = ch->fired[i];
        }
    }
    ch->num_fired = kept;
    pthread_mutex_unlock(&ch->lock);
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

/* The CQE size rdma-core's get_cqe_size picks without a DV attribute:
 * MLX5_CQE_SIZE read with atoi, 64 when unset; else -EINVAL. */
static int sim_cq_env_cqe_size(void)
{
    const char *env  = getenv("MLX5_CQE_SIZE");
    int         size = (env != NULL) ? atoi(env) : 64;

    return ((size == 64) || (size == 128)) ? size : -EINVAL;
}

/* The 64-byte CQE of index `idx`: the last 64 bytes of its slot. */
static inline struct mlx5_cqe64 *sim_cqe64(const smlx5_cq_t *cq, uint32_t idx)
{
    return strand_cqe_at(cq->buf, cq->nent, cq->cqe_shift, idx);
}

/* The whole slot of index `idx` (cqe_size bytes). */
static inline uint8_t *sim_cqe_slot(const smlx5_cq_t *cq, uint32_t idx)
{
    return cq->buf + ((size_t)(idx & (cq->nent - 1)) << cq->cqe_shift);
}

static void sim_cq_buf_init(smlx5_cq_t *cq)
{
    uint32_t i;

    memset(cq->buf, 0, (size_t)cq->nent << cq->cqe_shift);
    for (i = 0; i < cq->nent; ++i) {
        sim_cqe64(cq, i)->op_own = MLX5_CQE_INVALID << 4;
    }
}

smlx5_cq_t *
smlx5_create_cq(smlx5_context_t *ctx, int cqe, smlx5_channel_t *channel)
{
    return smlx5_create_cq_size(ctx, cqe, channel, 0);
}

smlx5_cq_t *smlx5_create_cq_size(smlx5_context_t *ctx, int cqe,
                                 smlx5_channel_t *channel, uint32_t asked)
{
    int         cqe_size = (asked == 0) ? sim_cq_env_cqe_size() :
                           ((asked == 64) || (asked == 128)) ? (int)asked :
                                                               -EINVAL;
    smlx5_cq_t *cq;
    uint32_t    i;

    if ((cqe < 1) || (cqe > (1 << 22)) || (cqe_size < 0)) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    /* like the provider: room for cqe + 1 entries */
    cq->nent      = sim_roundup_pow2((uint32_t)cqe + 1);
    cq->cqe_size  = (uint32_t)cqe_size;
    cq->cqe_shift = strand_cqe_shift(cq->cqe_size);
    if ((posix_memalign((void **)&cq->buf, 4096,
                        (size_t)cq->nent << cq->cqe_shift) != 0) ||
        (posix_memalign((void **)&cq->dbrec, 64, 64) != 0) ||
        (posix_memalign((void **)&cq->uar, 4096, 4096) != 0)) {
        goto err;
    }
    sim_cq_buf_init(cq);
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
    cq->cqn     = i;
    ctx->cqs[i] = cq;
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
        sim_channel_forget(cq->channel, cq);
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
    out->cqe_size = cq->cqe_size;
    out->cq_uar   = cq->uar;
    out->cqn      = cq->cqn;
    /* as mlx5dv_init_obj: the application owns the CQ from now on, and
     * the driver stops removing a reset QP's CQEs from it */
    pthread_mutex_lock(&cq->ctx->lock);
    cq->dv_owned = true;
    pthread_mutex_unlock(&cq->ctx->lock);
    return 0;
}

/* ------------------------------------------------------------- arming */

/* CQE counters and arm consumer indexes are compared in 24 bits. */
static inline bool sim_cq_idx_at_or_past(uint32_t idx, uint32_t ci)
{
    return ((idx - ci) & 0xffffff) < 0x800000;
}

static bool sim_cqe_is_solicited(const struct mlx5_cqe64 *cqe)
{
    return strand_cqe_se(cqe) || strand_cqe_is_error(cqe);
}

/* Does the CQE at `idx` end the armed wait? */
static bool sim_cq_arm_matches(const smlx5_cq_t *cq, uint32_t idx)
{
    return sim_cq_idx_at_or_past(idx, cq->armed_ci) &&
           (!cq->armed_solicited || sim_cqe_is_solicited(sim_cqe64(cq, idx)));
}

static void sim_cq_fire(smlx5_cq_t *cq)
{
    cq->armed       = false;
    cq->fired_valid = true;
    cq->fired_sn    = cq->armed_sn;
    if (cq->channel != NULL) {
        sim_channel_fire(cq->channel, cq);
    }
}

/* A CQE the armed wait counts is already in the CQ. */
static bool sim_cq_arm_already_met(const smlx5_cq_t *cq)
{
    uint32_t n = (cq->pi - cq->armed_ci) & 0xffffff, i;

    if ((n == 0) || (n >= 0x800000)) {
        return false; /* nothing at or past ci yet */
    }
    if (!cq->armed_solicited) {
        return true;
    }
    if (n > cq->nent) {
        n = cq->nent; /* older entries were overwritten */
    }
    for (i = 1; i <= n; ++i) {
        if (sim_cqe_is_solicited(sim_cqe64(cq, cq->pi - i))) {
            return true;
        }
    }
    return false;
}

/* The device takes one arm request (lock held): one event for the first
 * CQE at index >= ci (solicited-only: the first solicited or error CQE),
 * counting CQEs already written. An arm with the sn of the arm that last
 * fired is stale and ignored (docs/software-device.md, UNSURE table). */
static void sim_cq_arm(smlx5_cq_t *cq, uint32_t arm_word)
{
    uint8_t sn = (arm_word >> 28) & 3;

    if (cq->fired_valid && (sn == cq->fired_sn)) {
        return;
    }
    cq->armed           = true;
    cq->armed_sn        = sn;
    cq->armed_ci        = arm_word & 0xffffff;
    cq->armed_solicited = (arm_word & MLX5_CQ_DB_REQ_NOT_SOL) != 0;
    if (sim_cq_arm_already_met(cq)) {
        sim_cq_fire(cq);
    }
}

void smlx5_cq_arm_doorbell(smlx5_cq_t *cq)
{
    uint64_t db = be64toh(
            __atomic_load_n((uint64_t *)(cq->uar + MLX5_CQ_DOORBELL),
                            __ATOMIC_ACQUIRE));

    if ((uint32_t)(db & 0xffffff) != cq->cqn) {
        return; /* not this CQ's doorbell */
    }
    pthread_mutex_lock(&cq->ctx->lock);
    sim_cq_arm(cq, (uint32_t)(db >> 32));
    pthread_mutex_unlock(&cq->ctx->lock);
    /* an armed CQ's owner may sleep on its event now: packets that come
     * must wake the device's thread */
    sim_fabric_port_idle(cq->ctx->port);
}

int smlx5_req_notify_cq(smlx5_cq_t *cq, int solicited_only)
{
    /* rdma-core's mlx5_arm_cq: its own consumer index and arm sequence
     * number, never the application's */
    strand_cq_arm(cq->dbrec, cq->uar, cq->cqn, cq->arm_sn, cq->poll_ci,
                  solicited_only);
    smlx5_cq_arm_doorbell(cq);
    return 0;
}

/* ------------------------------------------------------- CQE writers */

uint32_t sim_cq_scatter_max(const smlx5_cq_t *cq)
{
    return (cq->cqe_size == 128) ? 64 : 32;
}

/* Write the CQE at the producer index. `head`: the 64 bytes before the
 * cqe64 in a 128-byte slot (NULL: zeros). */
static void
sim_cq_write(smlx5_cq_t *cq, const struct mlx5_cqe64 *src, const void *head)
{
    uint32_t           ci = be32toh(cq->dbrec[SIM_CQ_DBR_CI]) & 0xffffff;
    struct mlx5_cqe64 *dst;
    uint8_t            owner, op_own;
    uint32_t           idx;

    if ((uint32_t)((cq->pi - ci) & 0xffffff) >= cq->nent) {
        if (!cq->overrun) {
            cq->overrun = true;
            sim_async_push(cq->ctx, IBV_EVENT_CQ_ERR, cq);
        }
        return;
    }

    idx   = cq->pi;
    dst   = sim_cqe64(cq, idx);
    owner = (idx / cq->nent) & 1;
    if (cq->cqe_size == 128) {
        if (head != NULL) {
            memcpy(dst - 1, head, sizeof(*dst));
        } else {
            memset(dst - 1, 0, sizeof(*dst));
        }
    }
    memcpy(dst, src, offsetof(struct mlx5_cqe64, op_own));
    op_own = (src->op_own & ~MLX5_CQE_OWNER_MASK) | owner;
    /* The owner byte last: the CQE becomes the user's only when whole. */
    __atomic_store_n(&dst->op_own, op_own, __ATOMIC_RELEASE);
    cq->pi++;

    if (cq->armed && sim_cq_arm_matches(cq, idx)) {
        sim_cq_fire(cq);
    }
}

void sim_cq_push(smlx5_cq_t *cq, const struct mlx5_cqe64 *cqe)
{
    sim_cq_write(cq, cqe, NULL);
}

/* An error or flush CQE (struct mlx5_err_cqe), for any stage that fails
 * a WQE. */
void sim_cqe_error(smlx5_cq_t *cq, uint8_t cqe_opcode, uint32_t qpn,
                   uint8_t wqe_opcode, uint16_t wqe_counter, uint8_t syndrome,
                   uint32_t user_index)
{
    struct mlx5_cqe64    cqe;
    struct mlx5_err_cqe *ecqe = (struct mlx5_err_cqe *)&cqe;

    memset(&cqe, 0, sizeof(cqe));
    ecqe->srqn             = htobe32(user_index & 0xffffff);
    ecqe->syndrome         = syndrome;
    ecqe->vendor_err_synd  = (syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR) ?
                                     0xf9 :
                                     0x00;
    ecqe->s_wqe_opcode_qpn = htobe32(((uint32_t)wqe_opcode << 24) | qpn);
    ecqe->wqe_counter      = htobe16(wqe_counter);
    ecqe->op_own           = cqe_opcode << 4;
    sim_cq_push(cq, &cqe);
}

void sim_cq_push_scatter(smlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                         const void *data, uint32_t len)
{
    struct mlx5_cqe64 c = *cqe;
    uint8_t           head[sizeof(c)];

    if (cq->cqe_size == 128) {
        /* the 64 bytes before the cqe64 */
        memset(head, 0, sizeof(head));
        memcpy(head, data, len);
        c.op_own |= MLX5_INLINE_SCATTER_64;
        sim_cq_write(cq, &c, head);
    } else {
        /* bytes 0-31 of the cqe64 */
        memcpy(&c, data, len);
        c.op_own |= MLX5_INLINE_SCATTER_32;
        sim_cq_write(cq, &c, NULL);
    }
}

static bool sim_cqe_is_responder(const struct mlx5_cqe64 *cqe)
{
    switch (strand_cqe_opcode(cqe)) {
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV:
    case MLX5_CQE_RESP_ERR:
        return true;
    default:
        return false;
    }
}

/* The driver's part of resetting or destroying `qp`, as rdma-core's
 * __mlx5_cq_clean: the QP's CQEs not yet polled leave the CQ (matched by
 * user index, CQE version 1), the SRQ WQEs they consumed go back to the
 * free list, older CQEs move up over them and the consumer index skips
 * the freed slots. A CQ handed out through smlx5_cq_dv is the
 * application's: it is left alone, stale CQEs and all. */
void sim_cq_clean(smlx5_cq_t *cq, const smlx5_qp_t *qp)
{
    uint32_t           pi, nfreed = 0;
    struct mlx5_cqe64 *cqe, *dst;
    uint8_t            owner;

    if (cq->dv_owned) {
        return;
    }
    for (pi = cq->poll_ci;
         strand_cqe_get(cq->buf, cq->nent, cq->cqe_shift, pi) != NULL; ++pi) {
        if (pi - cq->poll_ci == cq->nent) {
            break;
        }
    }
    while ((int32_t)(--pi - cq->poll_ci) >= 0) {
        cqe = sim_cqe64(cq, pi);
        if (strand_cqe_user_index(cqe) == (qp->user_index & 0xffffff)) {
            if ((qp->srq != NULL) && sim_cqe_is_responder(cqe)) {
                sim_srq_free_wqe(qp->srq, be16toh(cqe->wqe_counter) &
                                                  (qp->srq->wqe_cnt - 1));
            }
            ++nfreed;
        } else if (nfreed > 0) {
            dst   = sim_cqe64(cq, pi + nfreed);
            owner = dst->op_own & MLX5_CQE_OWNER_MASK;
            memcpy(sim_cqe_slot(cq, pi + nfreed), sim_cqe_slot(cq, pi),
                   cq->cqe_size);
            dst->op_own = (dst->op_own & ~MLX5_CQE_OWNER_MASK) | owner;
        }
    }
    if (nfreed > 0) {
        cq->poll_ci += nfreed;
        strand_cq_update_ci(cq->dbrec, cq->poll_ci);
    }
}
