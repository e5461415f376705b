/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integrity-checked zero-copy GETs: signatures, the pieces a GET is read
 * in, the pool of landing mkeys, bad blocks and reads again (strand_sig.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_sig.h"
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
        [STRAND_INTEGRITY_LAST]   = NULL};

void strand_integrity_sig_init(strand_integrity_sig_t *s,
                               strand_integrity_kind_t kind)
{
    memset(s, 0, sizeof(*s));
    s->wire.block_size = MLX5DV_BLOCK_SIZE_512;
    if (kind == STRAND_INTEGRITY_T10DIF) {
        /* the guard only: application and reference tags say nothing
         * about a memory buffer */
        s->dif.bg_type     = MLX5DV_SIG_T10DIF_CRC;
        s->wire.sig_type   = MLX5DV_SIG_TYPE_T10DIF;
        s->wire.sig.dif    = &s->dif;
        s->attr.check_mask = MLX5DV_SIG_MASK_T10DIF_GUARD;
    } else {
        s->crc.type        = MLX5DV_SIG_CRC_TYPE_CRC32C;
        s->crc.seed        = 0xffffffffu;
        s->wire.sig_type   = MLX5DV_SIG_TYPE_CRC;
        s->wire.sig.crc    = &s->crc;
        s->attr.check_mask = MLX5DV_SIG_MASK_CRC32C;
    }
    s->attr.mem  = NULL; /* memory holds the data alone */
    s->attr.wire = &s->wire;
}

unsigned strand_integrity_sig_size(strand_integrity_kind_t kind)
{
    return (kind == STRAND_INTEGRITY_T10DIF) ? 8 : 4;
}

int strand_integrity_supported(const strand_dev_caps_t *caps,
                               strand_integrity_kind_t  kind)
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
                                   unsigned max_sge, unsigned max_pieces,
                                   size_t read_size, unsigned max_retries)
{
    int err;

    memset(ig, 0, sizeof(*ig));
    ucs_list_head_init(&ig->active);
    ig->dev          = dev;
    ig->kind         = kind;
    ig->max_sge      = ucs_min(max_sge, STRAND_INTEGRITY_MAX_IOV);
    ig->max_pieces   = max_pieces;
    ig->piece_blocks = ucs_max(1, read_size / STRAND_INTEGRITY_BLOCK);
    ig->max_retries  = max_retries;
    if (kind == STRAND_INTEGRITY_OFF) {
        return UCS_OK;
    }
    strand_integrity_sig_init(&ig->sig, kind);
    ig->pieces  = ucs_calloc(max_pieces, sizeof(*ig->pieces),
                             "strand_integrity");
    ig->scratch = ucs_malloc(STRAND_INTEGRITY_BLOCK,
                             "strand_integrity_scratch");
    if ((ig->pieces == NULL) || (ig->scratch == NULL)) {
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

    for (i = 0; i < ig->num_pieces; ++i) {
        ig->dev->ops->destroy_mkey(ig->dev, &ig->pieces[i]->mkey);
        ucs_free(ig->pieces[i]->sge);
        ucs_free(ig->pieces[i]);
    }
    if (ig->have_scratch) {
        ig->dev->ops->dereg_mr(ig->dev, &ig->scratch_mr);
    }
    ucs_free(ig->scratch);
    ucs_free(ig->pieces);
    ig->pieces     = NULL;
    ig->scratch    = NULL;
    ig->num_pieces = 0;
    ig->free       = NULL;
}

int strand_integrity_piece_available(const strand_integrity_t *ig)
{
    return (ig->free != NULL) || (ig->num_pieces < ig->max_pieces);
}

/* A landing mkey not in use: a free one, or a new one while fewer than
 * max_pieces exist. */
static strand_integrity_piece_t *
strand_integrity_piece_take(strand_integrity_t *ig)
{
    strand_integrity_piece_t *piece = ig->free;
    int                       err;

    if (piece != NULL) {
        ig->free = piece->next;
        return piece;
    }
    if (ig->num_pieces == ig->max_pieces) {
        return NULL;
    }
    piece = ucs_calloc(1, sizeof(*piece), "strand_integrity_piece");
    if (piece == NULL) {
        return NULL;
    }
    piece->sge = ucs_calloc(ig->max_sge + 2, sizeof(*piece->sge),
                            "strand_integrity_sge");
    if (piece->sge == NULL) {
        ucs_free(piece);
        return NULL;
    }
    err = ig->dev->ops->create_mkey(ig->dev, ig->max_sge + 2, 1,
                                    strand_dev_mkey_variant(ig->dev),
                                    &piece->mkey);
    if (err != 0) {
        ucs_error("%s: failed to create a signature mkey: %s",
                  ig->dev->info.name, strerror(err));
        ucs_free(piece->sge);
        ucs_free(piece);
        return NULL;
    }
    ig->pieces[ig->num_pieces++] = piece;
    return piece;
}

static void strand_integrity_piece_put(strand_integrity_t       *ig,
                                       strand_integrity_piece_t *piece)
{
    piece->req  = NULL;
    piece->next = ig->free;
    ig->free    = piece;
}

/*
 * A landing mkey that reported a bad block reports no more until a
 * configuration carries the signature error count the driver has seen
 * (spec section 9): rdma-core counts only the SIG_ERR CQEs its own
 * ibv_poll_cq consumed, and this transport parses its CQEs itself, so a
 * configuration through rdma-core would leave the mkey silent and pass
 * every later bad block as good. The mkey is retired instead and a new one
 * takes its place: nothing on the good path, a destroy and a create (two
 * DEVX commands on a NIC) per bad piece.
 */
static ucs_status_t
strand_integrity_renew(strand_integrity_t *ig, strand_integrity_piece_t *piece)
{
    strand_dev_mkey_t fresh;
    int               err;

    err = ig->dev->ops->create_mkey(ig->dev, ig->max_sge + 2, 1,
                                    strand_dev_mkey_variant(ig->dev), &fresh);
    if (err != 0) {
        ucs_error("%s: failed to create a signature mkey to replace 0x%x "
                  "after its signature error: %s",
                  ig->dev->info.name, piece->mkey.key, strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    ig->dev->ops->destroy_mkey(ig->dev, &piece->mkey);
    piece->mkey = fresh;
    ++ig->renewed;
    return UCS_OK;
}

/* Configure the landing mkey of piece: a new one where the old reported a
 * bad block (above). */
static ucs_status_t strand_integrity_configure(strand_integrity_t       *ig,
                                               strand_integrity_piece_t *piece)
{
    ucs_status_t status;
    int          err;

    if (piece->bad) {
        status = strand_integrity_renew(ig, piece);
        if (status != UCS_OK) {
            return status;
        }
        piece->bad = 0;
    }
    err = ig->dev->ops->mkey_configure(ig->dev, &piece->mkey, piece->sge,
                                       piece->num_sge, IBV_ACCESS_LOCAL_WRITE,
                                       &ig->sig.attr);
    if (err != 0) {
        ucs_error("%s: failed to configure signature mkey 0x%x: %s",
                  ig->dev->info.name, piece->mkey.key, strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* ------------------------------------------------------------- a GET */

ucs_status_t
strand_integrity_req_init(strand_integrity_t *ig, strand_integrity_req_t *req,
                          const strand_rkey_sig_t *rk, uint64_t remote_addr,
                          const uct_iov_t *iov, size_t iovcnt,
                          const uint32_t *lkeys)
{
    const uint64_t bs = STRAND_INTEGRITY_BLOCK;
    size_t         i, len = 0;

    for (i = 0; i < iovcnt; ++i) {
        len += uct_iov_get_length(&iov[i]);
    }
    if ((iovcnt > ig->max_sge) || (rk->kind != ig->kind) ||
        (remote_addr < rk->base) || (remote_addr - rk->base > rk->length) ||
        (len > rk->length - (remote_addr - rk->base))) {
        ucs_error("%s: checked GET of %zu bytes at 0x%" PRIx64 " outside the "
                  "peer's registration [0x%" PRIx64 ", +%" PRIu64 ") or of "
                  "another signature (%s, ours %s)",
                  ig->dev->info.name, len, remote_addr, rk->base, rk->length,
                  (rk->kind < STRAND_INTEGRITY_LAST) ?
                          strand_integrity_kind_names[rk->kind] :
                          "?",
                  strand_integrity_kind_names[ig->kind]);
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(req->iov, iov, iovcnt * sizeof(*iov));
    memcpy(req->lkeys, lkeys, iovcnt * sizeof(*lkeys));
    req->iovcnt     = iovcnt;
    req->sig_rkey   = rk->sig_rkey;
    req->length     = rk->length;
    req->off        = remote_addr - rk->base;
    req->end        = req->off + len;
    req->next_block = req->off / bs;
    req->end_block  = (req->end + bs - 1) / bs;
    req->in_flight  = 0;
    req->again      = NULL;
    req->status     = UCS_OK;
    req->next       = NULL;
    ucs_list_add_tail(&ig->active, &req->active);
    return UCS_OK;
}

int strand_integrity_writes_into(const strand_integrity_t *ig, const void *buf,
                                 size_t len)
{
    const uintptr_t               b0 = (uintptr_t)buf, b1 = b0 + len;
    const strand_integrity_req_t *req;
    uintptr_t                     a;
    size_t                        i;

    ucs_list_for_each(req, &ig->active, active) {
        for (i = 0; i < req->iovcnt; ++i) {
            a = (uintptr_t)req->iov[i].buffer;
            if ((a < b1) && (b0 < a + uct_iov_get_length(&req->iov[i]))) {
                return 1;
            }
        }
    }
    return 0;
}

static void strand_integrity_sge(strand_integrity_piece_t *piece, uint64_t addr,
                                 uint64_t len, uint32_t lkey)
{
    struct ibv_sge *sge = &piece->sge[piece->num_sge++];

    sge->addr   = addr;
    sge->length = (uint32_t)len;
    sge->lkey   = lkey;
}

/* The user's bytes [u0, u1) of req (offsets in the GET) as the next
 * entries of piece's layout. */
static void strand_integrity_user_sges(strand_integrity_req_t   *req,
                                       strand_integrity_piece_t *piece,
                                       uint64_t u0, uint64_t u1)
{
    uint64_t pos = 0, len, a, b;
    size_t   i;

    for (i = 0; (i < req->iovcnt) && (pos < u1); ++i) {
        len = uct_iov_get_length(&req->iov[i]);
        a   = ucs_max(u0, pos);
        b   = ucs_min(u1, pos + len);
        if (a < b) {
            strand_integrity_sge(piece,
                                 (uintptr_t)req->iov[i].buffer + (a - pos),
                                 b - a, req->lkeys[i]);
        }
        pos += len;
    }
}

/* Lay out piece to read blocks [b0, b1) of req; where they land:
 * scratch, the user's buffers, scratch. */
static void strand_integrity_lay_out(strand_integrity_t       *ig,
                                     strand_integrity_req_t   *req,
                                     strand_integrity_piece_t *piece,
                                     uint64_t b0, uint64_t b1)
{
    const uint64_t bs = STRAND_INTEGRITY_BLOCK;
    uint64_t       m0 = b0 * bs;
    uint64_t       m1 = ucs_min(req->length, b1 * bs);
    uint64_t       u0 = ucs_max(m0, req->off);
    uint64_t       u1 = ucs_min(m1, req->end);

    piece->num_sge = 0;
    if (u0 > m0) {
        strand_integrity_sge(piece, (uintptr_t)ig->scratch, u0 - m0,
                             ig->scratch_mr.lkey);
    }
    strand_integrity_user_sges(req, piece, u0 - req->off, u1 - req->off);
    if (m1 > u1) {
        strand_integrity_sge(piece, (uintptr_t)ig->scratch, m1 - u1,
                             ig->scratch_mr.lkey);
    }
    piece->wire_off  = b0 * (bs + strand_integrity_sig_size(ig->kind));
    piece->wire_len  = (uint32_t)((m1 - m0) +
                                 (b1 - b0) *
                                         strand_integrity_sig_size(ig->kind));
    piece->block     = b0;
    piece->end_block = b1;
}

/* The first block of piece the check did not pass: the SIG_ERR CQE's
 * offset counts from the mkey's start. Divided by a block on the wire
 * (data and signature), it rounds down under either reading of the
 * offset (memory or wire bytes): a block before the bad one may be read
 * again, the bad one is never skipped. */
static uint64_t
strand_integrity_bad_block(const strand_integrity_t       *ig,
                           const strand_integrity_piece_t *piece)
{
    uint64_t stride = STRAND_INTEGRITY_BLOCK +
                      strand_integrity_sig_size(ig->kind);

    return piece->block + ucs_min(piece->bad_off / stride,
                                  piece->end_block - piece->block - 1);
}

ucs_status_t strand_integrity_next_piece(strand_integrity_t        *ig,
                                         strand_integrity_req_t    *req,
                                         strand_integrity_piece_t **piece_p)
{
    strand_integrity_piece_t *piece;
    ucs_status_t              status;

    if (req->status != UCS_OK) {
        return UCS_ERR_NO_ELEM;
    }
    if (req->again != NULL) {
        /* configured again when it came back bad */
        piece      = req->again;
        req->again = piece->next;
    } else if (req->next_block == req->end_block) {
        return UCS_ERR_NO_ELEM;
    } else {
        piece = strand_integrity_piece_take(ig);
        if (piece == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        strand_integrity_lay_out(ig, req, piece, req->next_block,
                                 ucs_min(req->end_block,
                                         req->next_block + ig->piece_blocks));
        req->next_block = piece->end_block;
        piece->retries  = 0;
        status          = strand_integrity_configure(ig, piece);
        if (status != UCS_OK) {
            strand_integrity_piece_put(ig, piece);
            req->status = status;
            return UCS_ERR_NO_ELEM;
        }
        piece->req = req;
        ++ig->reads;
    }
    ++req->in_flight;
    *piece_p = piece;
    return UCS_OK;
}

void strand_integrity_piece_done(strand_integrity_t       *ig,
                                 strand_integrity_piece_t *piece,
                                 ucs_status_t              status)
{
    strand_integrity_req_t *req = piece->req;

    --req->in_flight;
    if ((status == UCS_OK) && piece->bad) {
        ++ig->bad;
        if ((req->ep == NULL) || (req->status != UCS_OK)) {
            status = UCS_ERR_CANCELED; /* nobody waits for it any more */
        } else if (piece->retries >= ig->max_retries) {
            ucs_error("%s: a piece of %u bytes of a checked read had a "
                      "bad block in each of its %u reads: the read fails",
                      ig->dev->info.name, piece->wire_len, piece->retries + 1);
            status = UCS_ERR_IO_ERROR;
        } else {
            /* from the first bad block on: the blocks before it landed
             * checked */
            strand_integrity_lay_out(ig, req, piece,
                                     strand_integrity_bad_block(ig, piece),
                                     piece->end_block);
            status = strand_integrity_configure(ig, piece);
            if (status == UCS_OK) {
                ++piece->retries;
                ++ig->reread;
                piece->next = req->again;
                req->again  = piece;
                return;
            }
        }
    }
    if ((status != UCS_OK) && (req->status == UCS_OK)) {
        req->status = status;
    }
    strand_integrity_piece_put(ig, piece);
}

int strand_integrity_req_done(const strand_integrity_req_t *req)
{
    if (req->in_flight > 0) {
        return 0;
    }
    return (req->status != UCS_OK) || (req->ep == NULL) ||
           ((req->next_block == req->end_block) && (req->again == NULL));
}

void strand_integrity_req_finish(strand_integrity_t     *ig,
                                 strand_integrity_req_t *req)
{
    strand_integrity_piece_t *piece;

    while ((piece = req->again) != NULL) {
        req->again = piece->next;
        strand_integrity_piece_put(ig, piece);
    }
    if (req->active.next != NULL) { /* NULL: its init failed */
        ucs_list_del(&req->active);
        req->active.next = NULL;
    }
    if (req->ep == NULL) {
        return;
    }
    if (req->status == UCS_OK) {
        ++ig->checked;
    } else {
        ++ig->failed;
    }
}

int strand_integrity_sigerr(strand_integrity_t      *ig,
                            const struct mlx5_cqe64 *cqe)
{
    const struct strand_sigerr_cqe *se  = (const void *)cqe;
    uint32_t                        key = strand_sigerr_cqe_mkey(cqe);
    unsigned                        i;

    for (i = 0; i < ig->num_pieces; ++i) {
        if ((ig->pieces[i]->req != NULL) && (ig->pieces[i]->mkey.key == key)) {
            if (!ig->pieces[i]->bad) {
                ig->pieces[i]->bad_off = be64toh(se->sig_err_offset);
            }
            ig->pieces[i]->bad = 1;
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

void strand_integrity_summary(const strand_integrity_t *ig, char *buf,
                              size_t max)
{
    snprintf(buf, max,
             "%s: %" PRIu64 " checked, %" PRIu64 " pieces read, %" PRIu64
             " bad reads, %" PRIu64 " read again, %" PRIu64 " failed, %" PRIu64
             " unchecked, %" PRIu64 " mkeys renewed",
             strand_integrity_kind_names[ig->kind], ig->checked, ig->reads,
             ig->bad, ig->reread, ig->failed, ig->unchecked, ig->renewed);
}
