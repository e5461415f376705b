/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and memory regions: keys, access rights, bounds.
 * lkey == rkey as on mlx5: (table index << 8) | a per-device variant byte.
 */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>

smlx5_pd_t *smlx5_alloc_pd(smlx5_context_t *ctx)
{
    smlx5_pd_t *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&ctx->lock);
    pd->ctx = ctx;
    pd->pdn = ++ctx->next_pdn;
    pthread_mutex_unlock(&ctx->lock);
    return pd;
}

int smlx5_dealloc_pd(smlx5_pd_t *pd)
{
    if (atomic_load(&pd->refs) != 0) {
        return EBUSY;
    }
    free(pd);
    return 0;
}

static const int sim_mr_valid_access = IBV_ACCESS_LOCAL_WRITE |
                                       IBV_ACCESS_REMOTE_WRITE |
                                       IBV_ACCESS_REMOTE_READ |
                                       IBV_ACCESS_REMOTE_ATOMIC |
                                       IBV_ACCESS_RELAXED_ORDERING;

smlx5_mr_t *smlx5_reg_mr(smlx5_pd_t *pd, void *addr, size_t length, int access)
{
    smlx5_context_t *ctx = pd->ctx;
    smlx5_mr_t      *mr;
    unsigned         i;

    if ((access & ~sim_mr_valid_access) ||
        /* verbs: remote write/atomic need local write */
        ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(access & IBV_ACCESS_LOCAL_WRITE)) ||
        ((addr == NULL) && (length != 0))) {
        errno = EINVAL;
        return NULL;
    }

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    pthread_mutex_lock(&ctx->lock);
    for (i = 1; i < SIM_MAX_MRS; ++i) {
        if (ctx->mrs[i] == NULL) {
            break;
        }
    }
    if (i == SIM_MAX_MRS) {
        pthread_mutex_unlock(&ctx->lock);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    /* a new variant byte each time, so a stale key never matches; never
     * 0, so no key equals MLX5_INVALID_LKEY (0x100, the end of a receive
     * scatter list) */
    ctx->key_gen = (ctx->key_gen % 255) + 1;
    mr->pd       = pd;
    mr->addr     = (uintptr_t)addr;
    mr->length   = length;
    mr->access   = access;
    mr->lkey     = (i << 8) | ctx->key_gen;
    mr->rkey     = mr->lkey;
    mr->valid    = true;
    ctx->mrs[i]  = mr;
    atomic_fetch_add(&pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    return mr;
}

int smlx5_dereg_mr(smlx5_mr_t *mr)
{
    smlx5_context_t *ctx = mr->pd->ctx;

    pthread_mutex_lock(&ctx->lock);
    ctx->mrs[mr->lkey >> 8] = NULL;
    atomic_fetch_sub(&mr->pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    free(mr);
    return 0;
}

uint32_t smlx5_mr_lkey(const smlx5_mr_t *mr)
{
    return mr->lkey;
}

uint32_t smlx5_mr_rkey(const smlx5_mr_t *mr)
{
    return mr->rkey;
}

smlx5_mr_t *sim_mr_lookup(smlx5_context_t *ctx, uint32_t key, bool remote)
{
    uint32_t    idx = key >> 8;
    smlx5_mr_t *mr;

    if ((idx == 0) || (idx >= SIM_MAX_MRS)) {
        return NULL;
    }
    mr = ctx->mrs[idx];
    if ((mr == NULL) || (mr->lkey != key)) {
        return NULL;
    }
    return mr;
}

static int sim_mr_in_bounds(const smlx5_mr_t *mr, uint64_t addr, uint64_t len)
{
    return (addr >= mr->addr) && (len <= mr->length) &&
           (addr - mr->addr <= mr->length - len);
}

int sim_mr_check_local(smlx5_context_t *ctx, smlx5_pd_t *pd, uint32_t lkey,
                       uint64_t addr, uint64_t len, int access)
{
    smlx5_mr_t *mr = sim_mr_lookup(ctx, lkey, false);

    /* an mkey goes through sim_mkey_check_op where the device takes one */
    if ((mr == NULL) || (mr->mkey != NULL) || (mr->pd != pd) ||
        !sim_mr_in_bounds(mr, addr, len) ||
        ((access & IBV_ACCESS_LOCAL_WRITE) &&
         !(mr->access & IBV_ACCESS_LOCAL_WRITE))) {
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    }
    return 0;
}

int sim_mr_check_remote(smlx5_context_t *ctx, smlx5_pd_t *pd, uint32_t rkey,
                        uint64_t addr, uint64_t len, int access)
{
    smlx5_mr_t *mr = sim_mr_lookup(ctx, rkey, true);

    if ((mr == NULL) || (mr->mkey != NULL) || (mr->pd != pd) ||
        !sim_mr_in_bounds(mr, addr, len) || ((mr->access & access) != access) ||
        sim_fault_rkey(ctx, rkey)) {
        return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
    }
    return 0;
}
