/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BlueFlame registers (spec section 9). A QP's doorbell goes to a register
 * of a UAR: rdma-core lets QPs created without a thread domain share the
 * context's registers (the kernel hands out its few low-latency ones to
 * the first QPs and shares the others, least used first) and serialises
 * its own writes to a shared one with a lock (bf->lock); a thread domain
 * (ibv_alloc_td) gets a register of its own, for one thread. A
 * direct-verbs user writes BlueFlame itself and takes no such lock: two
 * threads writing one register at once interleave their write-combined
 * stores, and the NIC takes a torn WQE.
 *
 * The device: QPs without a thread domain share SIM_BF_SHARED registers,
 * round-robin (the low-latency ones taken: the strict end of rdma-core's
 * policy); a thread domain has one. A doorbell must find, when the device
 * is told of it, the head of the QP's last WQE in its register: another
 * thread's write to the register between the doorbell's write and its
 * kick is a BlueFlame conflict, counted and said once on stderr.
 *
 * A register has two halves, and they belong to the register: every QP
 * that writes it alternates them with the others (rdma-core flips the
 * offset of its struct mlx5_bf per register, UCX its register object),
 * because the device may still be reading the half of the last doorbell.
 * A doorbell in the same half as the register's last one is lost: the
 * device takes nothing from it (counted, said once on stderr), and the
 * WQEs it stood for wait for the QP's next doorbell it does take.
 */
#include "sim.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_BF_SIZE 256 /* bytes of each of the two halves */

static int sim_bf_reg_init(sim_bfreg_t *reg, unsigned index, bool shared)
{
    if (posix_memalign((void **)&reg->page, 4096, 4096) != 0) {
        reg->page = NULL;
        return ENOMEM;
    }
    memset(reg->page, 0, 4096);
    reg->size   = SIM_BF_SIZE;
    reg->index  = index;
    reg->shared = shared;
    pthread_mutex_init(&reg->lock, NULL);
    strand_bf_init(&reg->bf, reg->page, SIM_BF_SIZE);
    atomic_store(&reg->last_half, -1);
    return 0;
}

static void sim_bf_reg_cleanup(sim_bfreg_t *reg)
{
    if (reg->page != NULL) {
        pthread_mutex_destroy(&reg->lock);
        free(reg->page);
        reg->page = NULL;
    }
}

int sim_bf_init(smlx5_context_t *ctx)
{
    unsigned i;
    int      ret;

    for (i = 0; i < SIM_BF_SHARED; ++i) {
        ret = sim_bf_reg_init(&ctx->bfregs[i], i, true);
        if (ret != 0) {
            sim_bf_cleanup(ctx);
            return ret;
        }
    }
    ctx->next_tdreg = SIM_BF_SHARED;
    return 0;
}

void sim_bf_cleanup(smlx5_context_t *ctx)
{
    unsigned long long n = atomic_load(&ctx->bf_conflicts);
    unsigned long long l = atomic_load(&ctx->bf_lost);
    unsigned           i;

    if (n > 0) {
        fprintf(stderr,
                "smlx5: %llu BlueFlame conflicts in this process "
                "(doorbells of two threads on one register at once)\n",
                n);
    }
    if (l > 0) {
        fprintf(stderr,
                "smlx5: %llu doorbells lost in this process "
                "(written to the half of a register its last doorbell "
                "went to)\n",
                l);
    }
    for (i = 0; i < SIM_BF_SHARED; ++i) {
        sim_bf_reg_cleanup(&ctx->bfregs[i]);
    }
}

sim_bfreg_t *sim_bf_take(smlx5_context_t *ctx, smlx5_td_t *td)
{
    unsigned i;

    if (td != NULL) {
        atomic_fetch_add(&td->users, 1);
        return &td->reg;
    }
    i = atomic_fetch_add(&ctx->next_bfreg, 1) % SIM_BF_SHARED;
    return &ctx->bfregs[i];
}

void sim_bf_put(smlx5_qp_t *qp)
{
    if ((qp->bfreg != NULL) && (qp->td != NULL)) {
        atomic_fetch_sub(&qp->td->users, 1);
    }
    qp->bfreg = NULL;
}

/* The head of the WQE that ends at the producer index pi, in one half of
 * the register: this QP's number, and an index and size that end at pi. */
static bool
sim_bf_half_is(const smlx5_qp_t *qp, const uint8_t *half, uint32_t pi)
{
    uint32_t w[2], idx, ds;

    w[0] = __atomic_load_n((const uint32_t *)half, __ATOMIC_RELAXED);
    w[1] = __atomic_load_n((const uint32_t *)half + 1, __ATOMIC_RELAXED);
    idx  = (be32toh(w[0]) >> 8) & 0xffff;
    ds   = be32toh(w[1]) & 0x3f;
    return ((be32toh(w[1]) >> 8) == qp->qpn) &&
           (((idx + (ds * 16 + 63) / 64) & 0xffff) == (pi & 0xffff));
}

bool sim_bf_check(smlx5_qp_t *qp)
{
    sim_bfreg_t     *reg = qp->bfreg;
    smlx5_context_t *ctx = qp->ctx;
    uint32_t         pi;
    int              half, last;

    if ((reg == NULL) || (qp->type == SMLX5_QPT_DCT)) {
        return true;
    }
    pi   = be32toh(__atomic_load_n(&qp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
    last = atomic_load(&reg->last_half);
    /* the half other than the last doorbell's first: a QP back from a
     * reset may find its old head, the same bytes, in the last one */
    half = (last == 0) ? 1 : 0;
    if (!sim_bf_half_is(qp, reg->page + half * reg->size, pi)) {
        half ^= 1;
        if (!sim_bf_half_is(qp, reg->page + half * reg->size, pi)) {
            if (atomic_fetch_add(&ctx->bf_conflicts, 1) == 0) {
                fprintf(stderr,
                        "smlx5: BlueFlame conflict: the doorbell of "
                        "QP 0x%x (producer index %u) is not in its register "
                        "%u: another thread wrote the register at the same "
                        "time (QPs of two threads must not share a "
                        "register: a thread domain each)\n",
                        qp->qpn, pi & 0xffff, reg->index);
            }
            return true;
        }
    }
    if (atomic_exchange(&reg->last_half, half) != half) {
        return true;
    }
    if (atomic_fetch_add(&ctx->bf_lost, 1) == 0) {
        fprintf(stderr,
                "smlx5: ERROR: lost doorbell: QP 0x%x (producer "
                "index %u) rang half %d of register %u, the half the "
                "register's last doorbell went to (the halves belong to "
                "the register: every QP that writes it alternates them "
                "with the others)\n",
                qp->qpn, pi & 0xffff, half, reg->index);
    }
    return false;
}

strand_bf_t *smlx5_qp_bf(smlx5_qp_t *qp)
{
    return &qp->bfreg->bf;
}

uint64_t smlx5_bf_lost(smlx5_context_t *ctx)
{
    return atomic_load(&ctx->bf_lost);
}

smlx5_td_t *smlx5_alloc_td(smlx5_context_t *ctx)
{
    smlx5_td_t *td = calloc(1, sizeof(*td));

    if (td == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (sim_bf_reg_init(&td->reg, atomic_fetch_add(&ctx->next_tdreg, 1),
                        false) != 0) {
        free(td);
        errno = ENOMEM;
        return NULL;
    }
    td->ctx = ctx;
    return td;
}

int smlx5_dealloc_td(smlx5_td_t *td)
{
    if (atomic_load(&td->users) > 0) {
        return EBUSY; /* as ibv_dealloc_td while QPs use it */
    }
    sim_bf_reg_cleanup(&td->reg);
    free(td);
    return 0;
}

uint64_t smlx5_bf_conflicts(smlx5_context_t *ctx)
{
    return atomic_load(&ctx->bf_conflicts);
}
