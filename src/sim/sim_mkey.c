/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Indirect and signature mkeys (sim_sig.h): creation, the configuration
 * mlx5dv_wr_mkey_configure(3) and its setters apply, the checks an
 * operation through one passes, and the error report mlx5dv_mkey_check(3)
 * gives. What moves data through them is in sim_sig.c.
 */
#include "sim_sig.h"

#include "mlx5/cqe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ objects */

smlx5_mkey_t *sim_mkey_lookup(smlx5_context_t *ctx, uint32_t key)
{
    smlx5_mr_t *mr = sim_mr_lookup(ctx, key, false);

    return (mr != NULL) ? mr->mkey : NULL;
}

smlx5_mkey_t *
smlx5_create_mkey(smlx5_pd_t *pd, uint32_t create_flags, uint16_t max_entries)
{
    /* rdma-core's mlx5dv_create_mkey (a DEVX CREATE_MKEY) leaves the key
     * byte 0: a key of a destroyed mkey names the next one made on its
     * index */
    return smlx5_create_mkey_variant(pd, create_flags, max_entries, 0);
}

smlx5_mkey_t *smlx5_create_mkey_variant(smlx5_pd_t *pd, uint32_t create_flags,
                                        uint16_t max_entries, uint8_t variant)
{
    const uint32_t known = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                           MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE;
    smlx5_context_t *ctx = pd->ctx;
    smlx5_mkey_t    *mk;
    smlx5_mr_t      *slot;
    unsigned         i;

    /* an indirect mkey is what this device makes; crypto and the rest it
     * does not have */
    if (!(create_flags & MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT) ||
        (create_flags & ~known) || (max_entries == 0)) {
        errno = EINVAL;
        return NULL;
    }
    if ((create_flags & MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE) &&
        !ctx->cfg.signature) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    mk   = calloc(1, sizeof(*mk));
    slot = calloc(1, sizeof(*slot));
    if ((mk == NULL) || (slot == NULL) ||
        ((mk->entries = calloc(max_entries, sizeof(*mk->entries))) == NULL)) {
        free(mk != NULL ? mk->entries : NULL);
        free(mk);
        free(slot);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&ctx->lock);
    for (i = 1; (i < SIM_MAX_MRS) && (ctx->mrs[i] != NULL); ++i) {
    }
    if (i == SIM_MAX_MRS) {
        pthread_mutex_unlock(&ctx->lock);
        free(mk->entries);
        free(mk);
        free(slot);
        errno = ENOMEM;
        return NULL;
    }
    slot->pd   = pd;
    slot->lkey = slot->rkey = (i << 8) | variant;
    slot->valid             = true;
    slot->mkey              = mk;
    mk->ctx                 = ctx;
    mk->pd                  = pd;
    mk->slot                = slot;
    mk->key                 = slot->lkey;
    mk->create_flags        = create_flags;
    mk->max_entries         = max_entries;
    mk->corrupt_block       = -1;
    /* the provider arms the mkey with its first configuration (rdma-core:
     * err_count 1, updated; the kernel: "next UMR, arm SIGERR") */
    mk->err_count         = 1;
    mk->err_count_updated = true;
    ctx->mrs[i]           = slot;
    atomic_fetch_add(&pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    return mk;
}

int smlx5_destroy_mkey(smlx5_mkey_t *mk)
{
    smlx5_context_t *ctx = mk->ctx;

    pthread_mutex_lock(&ctx->lock);
    ctx->mrs[mk->key >> 8] = NULL;
    atomic_fetch_sub(&mk->pd->refs, 1);
    pthread_mutex_unlock(&ctx->lock);
    free(mk->slot);
    free(mk->entries);
    free(mk);
    return 0;
}

uint32_t smlx5_mkey_key(const smlx5_mkey_t *mk)
{
    return mk->key;
}

/* ------------------------------------------------------ configuration */

static int sim_sig_block_bytes(enum mlx5dv_block_size bs, uint32_t *out)
{
    static const uint32_t sizes[] = {512, 520, 4048, 4096, 4160};

    if ((unsigned)bs >= sizeof(sizes) / sizeof(sizes[0])) {
        return EINVAL;
    }
    *out = sizes[bs];
    return 0;
}

/* One domain of mlx5dv_sig_block_attr (NULL: no signature). What the
 * device reports in its caps, and nothing else, is accepted. */
static int sim_sig_domain_parse(const struct mlx5dv_sig_block_domain *d,
                                sim_sig_domain_t *out, uint32_t *bs)
{
    memset(out, 0, sizeof(*out));
    if (d == NULL) {
        return 0;
    }
    if ((d->comp_mask != 0) || (sim_sig_block_bytes(d->block_size, bs) != 0)) {
        return EINVAL;
    }
    switch (d->sig_type) {
    case MLX5DV_SIG_TYPE_CRC:
        if ((d->sig.crc == NULL) ||
            ((d->sig.crc->seed != 0) && (d->sig.crc->seed != 0xffffffffu))) {
            return EINVAL;
        }
        if (d->sig.crc->type == MLX5DV_SIG_CRC_TYPE_CRC32) {
            out->kind = SIM_SIG_CRC32;
        } else if (d->sig.crc->type == MLX5DV_SIG_CRC_TYPE_CRC32C) {
            out->kind = SIM_SIG_CRC32C;
        } else {
            return EINVAL; /* CRC64_XP10: not in the caps */
        }
        out->size = 4;
        out->seed = (uint32_t)d->sig.crc->seed;
        return 0;
    case MLX5DV_SIG_TYPE_T10DIF:
        if ((d->sig.dif == NULL) || (*bs % 8 != 0) ||
            ((d->sig.dif->bg != 0) && (d->sig.dif->bg != 0xffff)) ||
            (d->sig.dif->flags & ~(MLX5DV_SIG_T10DIF_FLAG_REF_REMAP |
                                   MLX5DV_SIG_T10DIF_FLAG_APP_ESCAPE |
                                   MLX5DV_SIG_T10DIF_FLAG_APP_REF_ESCAPE))) {
            return EINVAL;
        }
        if (d->sig.dif->bg_type == MLX5DV_SIG_T10DIF_CRC) {
            out->kind = SIM_SIG_T10DIF_CRC;
        } else if (d->sig.dif->bg_type == MLX5DV_SIG_T10DIF_CSUM) {
            out->kind = SIM_SIG_T10DIF_CSUM;
        } else {
            return EINVAL;
        }
        out->size      = 8;
        out->seed      = d->sig.dif->bg;
        out->app_tag   = d->sig.dif->app_tag;
        out->ref_tag   = d->sig.dif->ref_tag;
        out->dif_flags = d->sig.dif->flags;
        return 0;
    default:
        return EINVAL;
    }
}

typedef struct sim_mkey_sig_conf {
    bool             sig;
    uint32_t         bs;
    sim_sig_domain_t mem, wire;
    uint8_t          check_mask;
} sim_mkey_sig_conf_t;

static int sim_mkey_sig_parse(const struct mlx5dv_sig_block_attr *a,
                              sim_mkey_sig_conf_t                *out)
{
    uint32_t bs_mem = 0, bs_wire = 0;

    /* copy_mask is not offered: a signature is computed, never copied */
    if ((a->comp_mask != 0) || (a->flags != 0) ||
        ((a->mem == NULL) && (a->wire == NULL)) ||
        (sim_sig_domain_parse(a->mem, &out->mem, &bs_mem) != 0) ||
        (sim_sig_domain_parse(a->wire, &out->wire, &bs_wire) != 0) ||
        (bs_mem && bs_wire && (bs_mem != bs_wire))) {
        return EINVAL;
    }
    out->sig        = true;
    out->bs         = bs_mem ? bs_mem : bs_wire;
    out->check_mask = a->check_mask;
    return 0;
}

/* The layout: memory regions of the mkey's PD, in bounds. */
static int sim_mkey_layout_check(smlx5_mkey_t *mk, const smlx5_mkey_conf_t *c)
{
    const smlx5_mr_t *mr;
    uint16_t          i;

    if (c->num_sges > mk->max_entries) {
        return EINVAL;
    }
    for (i = 0; i < c->num_sges; ++i) {
        mr = sim_mr_lookup(mk->ctx, c->sge[i].lkey, false);
        if ((mr == NULL) || (mr->mkey != NULL) || (mr->pd != mk->pd) ||
            (c->sge[i].length == 0) || (c->sge[i].addr < mr->addr) ||
            (c->sge[i].addr - mr->addr > mr->length) ||
            (c->sge[i].length > mr->length - (c->sge[i].addr - mr->addr))) {
            return EINVAL;
        }
    }
    return 0;
}

/* Lengths of the three views of the mkey; EINVAL when the memory holds a
 * last partial block with no room for its signature. */
static int sim_mkey_lengths(smlx5_mkey_t *mk)
{
    uint64_t unit, rem, nblk;

    if (!mk->sig) {
        mk->data_len = mk->wire_len = mk->mem_len;
        return 0;
    }
    unit = mk->bs + mk->mem.size;
    rem  = mk->mem_len % unit;
    if ((rem != 0) && (rem <= mk->mem.size)) {
        return EINVAL;
    }
    mk->data_len = (mk->mem_len / unit) * mk->bs +
                   (rem ? rem - mk->mem.size : 0);
    nblk         = (mk->data_len + mk->bs - 1) / mk->bs;
    mk->wire_len = mk->data_len + nblk * mk->wire.size;
    return 0;
}

int smlx5_mkey_configure(smlx5_mkey_t *mk, const smlx5_mkey_conf_t *c)
{
    smlx5_context_t    *ctx = mk->ctx;
    sim_mkey_sig_conf_t sc;
    smlx5_mkey_t        next;
    uint16_t            i;
    int                 ret;

    if ((c->conf_flags & ~MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR) ||
        ((c->sig != NULL) &&
         !(mk->create_flags & MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE)) ||
        ((c->num_sges > 0) && (c->sge == NULL))) {
        return EINVAL;
    }
    memset(&sc, 0, sizeof(sc));
    if ((c->sig != NULL) && (sim_mkey_sig_parse(c->sig, &sc) != 0)) {
        return EINVAL;
    }

    pthread_mutex_lock(&ctx->lock);
    ret = sim_mkey_layout_check(mk, c);
    if (ret != 0) {
        goto out;
    }
    /* the new state, applied only when it holds together */
    next = *mk;
    if (c->conf_flags & MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR) {
        next.sig = false;
    }
    if (c->sig != NULL) {
        next.sig        = true;
        next.bs         = sc.bs;
        next.mem        = sc.mem;
        next.wire       = sc.wire;
        next.check_mask = sc.check_mask;
    }
    if (c->set_access) {
        next.access = (int)c->access_flags;
    }
    if (c->num_sges > 0) {
        next.num_entries = c->num_sges;
        next.mem_len     = 0;
        for (i = 0; i < c->num_sges; ++i) {
            next.mem_len += c->sge[i].length;
        }
        next.configured = true;
    }
    if (sim_mkey_lengths(&next) != 0) {
        ret = EINVAL;
        goto out;
    }
    for (i = 0; i < c->num_sges; ++i) {
        mk->entries[i].addr = c->sge[i].addr;
        mk->entries[i].len  = c->sge[i].length;
        mk->entries[i].lkey = c->sge[i].lkey;
    }
    /* the UMR carries the signature error count only when the provider
     * counted a new one (rdma-core's upd_mkc_sig_err_cnt): errors in CQEs
     * the application parsed itself were never counted, so the mkey
     * stays disarmed (docs/software-device.md) */
    if (next.err_count_updated) {
        next.sigerr_expected   = (uint8_t)(next.err_count & 1);
        next.err_count_updated = false;
    }
    *mk = next;
out:
    pthread_mutex_unlock(&ctx->lock);
    return ret;
}

/* -------------------------------------------------------------- access */

/* The layout's buffers are still registered (a region deregistered under
 * an mkey makes it unusable, as on a NIC the translation fails). */
static bool
sim_mkey_entries_valid(smlx5_context_t *ctx, const smlx5_mkey_t *mk, bool write)
{
    const smlx5_mr_t *mr;
    uint16_t          i;

    for (i = 0; i < mk->num_entries; ++i) {
        mr = sim_mr_lookup(ctx, mk->entries[i].lkey, false);
        if ((mr == NULL) || (mr->mkey != NULL) ||
            (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))) {
            return false;
        }
    }
    return true;
}

int sim_mkey_check_op(smlx5_context_t *ctx, smlx5_pd_t *pd,
                      const smlx5_mkey_t *mk, uint64_t off, uint64_t len,
                      int access, bool remote)
{
    uint8_t  bad_key = remote ? MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR :
                                MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    bool     write   = (access &
                  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)) != 0;
    uint64_t unit;

    if (!mk->configured || (mk->pd != pd) ||
        ((mk->access & access) != access) || (off > mk->wire_len) ||
        (len > mk->wire_len - off) || !sim_mkey_entries_valid(ctx, mk, write)) {
        return bad_key;
    }
    if (mk->sig) {
        /* a transfer covers whole blocks: its first byte starts one, its
         * last ends one (or the mkey) */
        unit = mk->bs + mk->wire.size;
        if ((off % unit != 0) ||
            ((off + len != mk->wire_len) && ((off + len) % unit != 0))) {
            return remote ? MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR :
                            MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- errors */

void sim_mkey_take_sigerr(smlx5_context_t *ctx, const void *cqe_p)
{
    const struct strand_sigerr_cqe *cqe = cqe_p;
    smlx5_mkey_t *mk = sim_mkey_lookup(ctx, be32toh(cqe->mkey));

    if (mk == NULL) {
        return; /* destroyed since: nobody to tell */
    }
    pthread_mutex_lock(&ctx->lock);
    mk->err_exists = true;
    mk->err_count++;
    mk->err_count_updated = true;
    mk->err_info.syndrome = be16toh(cqe->syndrome);
    mk->err_info.domain   = cqe->domain;
    mk->err_info.expected = ((uint64_t)be32toh(cqe->expected_trans_sig) << 32) |
                            be32toh(cqe->expected_ref_tag);
    mk->err_info.actual = ((uint64_t)be32toh(cqe->actual_trans_sig) << 32) |
                          be32toh(cqe->actual_ref_tag);
    mk->err_info.offset = be64toh(cqe->sig_err_offset);
    pthread_mutex_unlock(&ctx->lock);
}

int smlx5_mkey_check(smlx5_mkey_t *mk, struct mlx5dv_mkey_err *out)
{
    const sim_sig_domain_t *d;
    const sim_sig_err_t    *e   = &mk->err_info;
    int                     ret = 0;

    if (!(mk->create_flags & MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE)) {
        return EINVAL;
    }
    pthread_mutex_lock(&mk->ctx->lock);
    if (!mk->err_exists) {
        out->err_type = MLX5DV_MKEY_NO_ERR;
        goto out;
    }
    d = (e->domain == STRAND_SIGERR_DOMAIN_MEMORY) ? &mk->mem : &mk->wire;
    out->err.sig.offset = e->offset;
    if (e->syndrome & STRAND_SIGERR_SYNDROME_REFTAG) {
        out->err_type               = MLX5DV_MKEY_SIG_BLOCK_BAD_REFTAG;
        out->err.sig.expected_value = e->expected & 0xffffffffu;
        out->err.sig.actual_value   = e->actual & 0xffffffffu;
    } else if (e->syndrome & STRAND_SIGERR_SYNDROME_APPTAG) {
        out->err_type               = MLX5DV_MKEY_SIG_BLOCK_BAD_APPTAG;
        out->err.sig.expected_value = (e->expected >> 32) & 0xffff;
        out->err.sig.actual_value   = (e->actual >> 32) & 0xffff;
    } else if (e->syndrome & STRAND_SIGERR_SYNDROME_GUARD) {
        out->err_type = MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD;
        if ((d->kind == SIM_SIG_T10DIF_CRC) ||
            (d->kind == SIM_SIG_T10DIF_CSUM)) {
            out->err.sig.expected_value = e->expected >> 48;
            out->err.sig.actual_value   = e->actual >> 48;
        } else {
            out->err.sig.expected_value = e->expected >> 32;
            out->err.sig.actual_value   = e->actual >> 32;
        }
    } else {
        ret = EINVAL; /* a syndrome rdma-core would not know either */
    }
    mk->err_exists = false;
out:
    pthread_mutex_unlock(&mk->ctx->lock);
    return ret;
}

int smlx5_mkey_corrupt_block(smlx5_mkey_t *mk, uint64_t block, int where)
{
    if ((where != SMLX5_CORRUPT_WIRE) && (where != SMLX5_CORRUPT_MEMORY)) {
        return EINVAL;
    }
    pthread_mutex_lock(&mk->ctx->lock);
    mk->corrupt_block = (int64_t)block;
    mk->corrupt_where = where;
    pthread_mutex_unlock(&mk->ctx->lock);
    return 0;
}
