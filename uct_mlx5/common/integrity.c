/*
 * Integrity-checked zero-copy GETs: signatures, the blocks a GET reads,
 * the pool of landing mkeys, bad blocks and reads again (integrity.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "integrity.h"
#include "mlx5/cqe.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <uct/base/uct_iov.inl>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *strand_integrity_kind_names[] = {
    [STRAND_INTEGRITY_OFF]    = "off",
    [STRAND_INTEGRITY_CRC32C] = "crc32c",
    [STRAND_INTEGRITY_T10DIF] = "t10dif",
    [STRAND_INTEGRITY_LAST]   = NULL
};

void strand_integrity_sig_init(strand_integrity_sig_t *s,
                               strand_integrity_kind_t kind)
{
    memset(s, 0, sizeof(*s));
    s->wire.block_size = MLX5DV_BLOCK_SIZE_512;
    if (kind == STRAND_INTEGRITY_T10DIF) {
        /* the guard only: application and reference tags say nothing
         * about a memory buffer */
        s->dif.bg_type      = MLX5DV_SIG_T10DIF_CRC;
        s->wire.sig_type    = MLX5DV_SIG_TYPE_T10DIF;
        s->wire.sig.dif     = &s->dif;
        s->attr.check_mask  = MLX5DV_SIG_MASK_T10DIF_GUARD;
    } else {
        s->crc.type         = MLX5DV_SIG_CRC_TYPE_CRC32C;
        s->crc.seed         = 0xffffffffu;
        s->wire.sig_type    = MLX5DV_SIG_TYPE_CRC;
        s->wire.sig.crc     = &s->crc;
        s->attr.check_mask  = MLX5DV_SIG_MASK_CRC32C;
    }
    s->attr.mem  = NULL;        /* memory holds the data alone */
    s->attr.wire = &s->wire;
}

unsigned strand_integrity_sig_size(strand_integrity_kind_t kind)
{
    return (kind == STRAND_INTEGRITY_T10DIF) ? 8 : 4;
}

int strand_integrity_supported(const strand_dev_caps_t *caps,
                               strand_integrity_kind_t kind)
{
    const struct mlx5dv_sig_caps *c = &caps->sig_caps;

    if (!(c->block_size & MLX5DV_BLOCK_SIZE_CAP_512)) {
        return 0;
    }
    if (kind == STRAND_INTEGRITY_T10DIF) {
        return (c->block_prot & MLX5DV_SIG_PROT_CAP_T10DIF) &&
               (c->t10dif_bg & MLX5DV_SIG_T10DIF_BG_CAP_CRC);
    }
    return (c->block_prot & MLX5DV_SIG_PROT_CAP_CRC) &&
           (c->crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC32C);
}

/* ------------------------------------------------------------- the pool */

ucs_status_t strand_integrity_init(strand_integrity_t *ig, strand_dev_t *dev,
                                   strand_integrity_kind_t kind,
                                   unsigned max_sge, unsigned max_gets,
                                   unsigned max_retries)
{
    int err;

    memset(ig, 0, sizeof(*ig));
    ig->dev         = dev;
    ig->kind        = kind;
    ig->max_sge     = max_sge;
    ig->max_gets    = max_gets;
    ig->max_retries = max_retries;
    if (kind == STRAND_INTEGRITY_OFF) {
        return UCS_OK;
    }
    strand_integrity_sig_init(&ig->sig, kind);
    ig->gets = ucs_calloc(max_gets, sizeof(*ig->gets), "strand_integrity");
    ig->scratch = ucs_malloc(STRAND_INTEGRITY_BLOCK, "strand_integrity_scratch");
    if ((ig->gets == NULL) || (ig->scratch == NULL)) {
        strand_integrity_cleanup(ig);
        return UCS_ERR_NO_MEMORY;
    }
    err = dev->ops->reg_mr(dev, ig->scratch, STRAND_INTEGRITY_BLOCK,
                           IBV_ACCESS_LOCAL_WRITE, &ig->scratch_mr);
    if (err != 0) {
        ucs_error("%s: failed to register the integrity scratch buffer: %s",
                  dev->info.name, strerror(err));
        strand_integrity_cleanup(ig);
        return UCS_ERR_IO_ERROR;
    }
    ig->have_scratch = 1;
    return UCS_OK;
}

void strand_integrity_cleanup(strand_integrity_t *ig)
{
    unsigned i;

    for (i = 0; i < ig->num_gets; ++i) {
        ig->dev->ops->destroy_mkey(ig->dev, &ig->gets[i]->mkey);
        ucs_free(ig->gets[i]->sge);
        ucs_free(ig->gets[i]);
    }
    if (ig->have_scratch) {
        ig->dev->ops->dereg_mr(ig->dev, &ig->scratch_mr);
    }
    ucs_free(ig->scratch);
    ucs_free(ig->gets);
    ig->gets     = NULL;
    ig->scratch  = NULL;
    ig->num_gets = 0;
    ig->free     = NULL;
}

/* A landing mkey that is not in use: a free one, or a new one while fewer
 * than max_gets exist. */
static strand_integrity_get_t *strand_integrity_get_take(strand_integrity_t *ig)
{
    strand_integrity_get_t *get = ig->free;
    int err;

    if (get != NULL) {
        ig->free = get->next;
        return get;
    }
    if (ig->num_gets == ig->max_gets) {
        return NULL;
    }
    get = ucs_calloc(1, sizeof(*get), "strand_integrity_get");
    if (get == NULL) {
        return NULL;
    }
    get->sge = ucs_calloc(ig->max_sge + 2, sizeof(*get->sge),
                          "strand_integrity_sge");
    if (get->sge == NULL) {
        ucs_free(get);
        return NULL;
    }
    err = ig->dev->ops->create_mkey(ig->dev, ig->max_sge + 2, 1, &get->mkey);
    if (err != 0) {
        ucs_error("%s: failed to create a signature mkey: %s",
                  ig->dev->info.name, strerror(err));
        ucs_free(get->sge);
        ucs_free(get);
        return NULL;
    }
    ig->gets[ig->num_gets++] = get;
    return get;
}

void strand_integrity_get_release(strand_integrity_t *ig,
                                  strand_integrity_get_t *get)
{
    get->in_use = 0;
    get->ep     = NULL;
    get->comp   = NULL;
    get->next   = ig->free;
    ig->free    = get;
}

static ucs_status_t strand_integrity_configure(strand_integrity_t *ig,
                                               strand_integrity_get_t *get)
{
    int err;

    err = ig->dev->ops->mkey_configure(ig->dev, &get->mkey, get->sge,
                                       get->num_sge, IBV_ACCESS_LOCAL_WRITE,
                                       &ig->sig.attr);
    if (err != 0) {
        ucs_error("%s: failed to configure signature mkey 0x%x: %s",
                  ig->dev->info.name, get->mkey.key, strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    get->bad = 0;
    return UCS_OK;
}

/* ------------------------------------------------------------- a GET */

static void strand_integrity_sge(struct ibv_sge *sge, uint64_t addr,
                                 uint64_t len, uint32_t lkey)
{
    sge->addr   = addr;
    sge->length = (uint32_t)len;
    sge->lkey   = lkey;
}

ucs_status_t strand_integrity_get_start(strand_integrity_t *ig,
                                        const strand_rkey_sig_t *rk,
                                        uint64_t remote_addr,
                                        const uct_iov_t *iov, size_t iovcnt,
                                        const uint32_t *lkeys,
                                        strand_integrity_get_t **get_p)
{
    const uint64_t bs = STRAND_INTEGRITY_BLOCK;
    uint64_t off, end, m0, m1, nblk;
    strand_integrity_get_t *get;
    size_t i, len = 0, n;
    ucs_status_t status;

    for (i = 0; i < iovcnt; ++i) {
        len += uct_iov_get_length(&iov[i]);
    }
    if ((rk->kind != ig->kind) || (remote_addr < rk->base) ||
        (remote_addr - rk->base > rk->length) ||
        (len > rk->length - (remote_addr - rk->base))) {
        ucs_error("%s: checked GET of %zu bytes at 0x%" PRIx64 " outside the "
                  "peer's registration [0x%" PRIx64 ", +%" PRIu64 ") or of "
                  "another signature (%s, ours %s)", ig->dev->info.name, len,
                  remote_addr, rk->base, rk->length,
                  (rk->kind < STRAND_INTEGRITY_LAST) ?
                  strand_integrity_kind_names[rk->kind] : "?",
                  strand_integrity_kind_names[ig->kind]);
        return UCS_ERR_INVALID_PARAM;
    }
    get = strand_integrity_get_take(ig);
    if (get == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* the whole blocks around [off, end) of the sender's registration */
    off  = remote_addr - rk->base;
    end  = off + len;
    m0   = off - off % bs;
    m1   = ucs_min(rk->length, (end + bs - 1) / bs * bs);
    nblk = (m1 - m0 + bs - 1) / bs;
    get->wire_off = (m0 / bs) * (bs + strand_integrity_sig_size(ig->kind));
    get->wire_len = (uint32_t)((m1 - m0) +
                               nblk * strand_integrity_sig_size(ig->kind));
    get->sig_rkey = rk->sig_rkey;
    get->length   = len;
    get->retries  = 0;

    /* where they land: scratch, the user's buffers, scratch */
    n = 0;
    if (off > m0) {
        strand_integrity_sge(&get->sge[n++], (uintptr_t)ig->scratch, off - m0,
                             ig->scratch_mr.lkey);
    }
    for (i = 0; i < iovcnt; ++i) {
        if (uct_iov_get_length(&iov[i]) > 0) {
            strand_integrity_sge(&get->sge[n++], (uintptr_t)iov[i].buffer,
                                 uct_iov_get_length(&iov[i]), lkeys[i]);
        }
    }
    if (m1 > end) {
        strand_integrity_sge(&get->sge[n++], (uintptr_t)ig->scratch, m1 - end,
                             ig->scratch_mr.lkey);
    }
    get->num_sge = (uint16_t)n;
    status       = strand_integrity_configure(ig, get);
    if (status != UCS_OK) {
        strand_integrity_get_release(ig, get);
        return status;
    }
    get->in_use = 1;
    *get_p      = get;
    return UCS_OK;
}

int strand_integrity_sigerr(strand_integrity_t *ig,
                            const struct mlx5_cqe64 *cqe)
{
    uint32_t key = strand_sigerr_cqe_mkey(cqe);
    const struct strand_sigerr_cqe *se = (const void*)cqe;
    unsigned i;

    for (i = 0; i < ig->num_gets; ++i) {
        if (ig->gets[i]->in_use && (ig->gets[i]->mkey.key == key)) {
            ig->gets[i]->bad = 1;
            ucs_debug("%s: signature error on mkey 0x%x at offset %" PRIu64
                      " (syndrome 0x%x, expected 0x%x, actual 0x%x)",
                      ig->dev->info.name, key, be64toh(se->sig_err_offset),
                      be16toh(se->syndrome), be32toh(se->expected_trans_sig),
                      be32toh(se->actual_trans_sig));
            return 0;
        }
    }
    ++ig->sigerr_other;
    return -1;
}

ucs_status_t strand_integrity_get_check(strand_integrity_t *ig,
                                        strand_integrity_get_t *get)
{
    if (!get->bad) {
        ++ig->checked;
        return UCS_OK;
    }
    ++ig->bad;
    if (get->retries >= ig->max_retries) {
        ++ig->failed;
        ucs_error("%s: a GET of %zu bytes had a bad block in each of its %u "
                  "reads: failed", ig->dev->info.name, get->length,
                  get->retries + 1);
        return UCS_ERR_IO_ERROR;
    }
    /* configured again: a new bad block is reported again */
    if (strand_integrity_configure(ig, get) != UCS_OK) {
        ++ig->failed;
        return UCS_ERR_IO_ERROR;
    }
    ++get->retries;
    ++ig->reread;
    return UCS_INPROGRESS;
}

void strand_integrity_summary(const strand_integrity_t *ig, char *buf,
                              size_t max)
{
    snprintf(buf, max, "%s: %" PRIu64 " checked, %" PRIu64 " bad reads, %"
             PRIu64 " read again, %" PRIu64 " failed, %" PRIu64
             " unchecked", strand_integrity_kind_names[ig->kind], ig->checked,
             ig->bad, ig->reread, ig->failed, ig->unchecked);
}
