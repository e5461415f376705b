/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's rendezvous with tag matching (rc_rndv.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_rndv.h"
#include "uct_mlx5/common/ep_post.h"
#include "uct_mlx5/common/tag.h"
#include "uct_mlx5/common/status.h"
#include "dev/dev_ring.h"
#include "mlx5/cqe.h"
#include "uct_mlx5/common/tx_cqe.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* What a WQE of a responder QP's send queue is (by the BB it starts at). */
enum {
    STRAND_RC_WQE_NONE,
    STRAND_RC_WQE_READ, /* the data, or a checked piece of it */
    STRAND_RC_WQE_RTS,  /* the request, from the sender's table */
    STRAND_RC_WQE_FIN,
    STRAND_RC_WQE_CANCELLED /* a FIN cancelled in SQD: a NOP now */
};

/* Where a transfer's FIN stands. */
enum {
    STRAND_RC_FIN_NONE, /* not posted (yet, or again) */
    STRAND_RC_FIN_POSTED,
    STRAND_RC_FIN_DONE /* sent, or it cannot be any more */
};

typedef struct strand_rc_xfer strand_rc_xfer_t;

typedef struct strand_rc_rndv_wqe {
    uint8_t                   kind;
    strand_rc_xfer_t         *xfer;
    strand_integrity_piece_t *piece; /* a checked READ's */
} strand_rc_rndv_wqe_t;

struct strand_rc_rndv_qp {
    strand_rc_rndv_t     *rndv;
    strand_dev_qp_t      *qp;
    strand_sq_t           sq;
    uint32_t              tail;      /* the oldest BB not retired */
    strand_rc_rndv_wqe_t *wqes;      /* by BB slot */
    ucs_list_link_t       xfers;     /* its transfers, in order */
    ucs_list_link_t       stop_link; /* in rndv->stopping while set */
    ucs_status_t          status;    /* not UCS_OK: the QP is in ERR */
    uint8_t               stopping;  /* a bad block: SQD to come */
    uint64_t              rts_table; /* the sender's requests (rkey 0: */
    uint32_t              rts_rkey;  /* it told none) */
};

/* One rendezvous being read. */
struct strand_rc_xfer {
    ucs_list_link_t         list; /* in rq->xfers */
    ucs_list_link_t         wait; /* in rndv->waiting (or itself) */
    strand_rc_rndv_qp_t    *rq;
    strand_tm_rts_match_t   m;
    uint64_t                va; /* the sender's buffer */
    uint32_t                length;
    uint32_t                rkey;        /* its plain key */
    strand_integrity_req_t *req;         /* checked pieces; NULL: plain */
    uint32_t                reads;       /* READ WQEs outstanding */
    uint16_t                fin_idx;     /* the FIN's WQE index */
    uint8_t                 read_posted; /* plain: its READ went */
    uint8_t                 fin;         /* STRAND_RC_FIN_* */
    uint8_t                 reported;    /* the tag completed */
    uint8_t                 bad;         /* a piece came back bad while
                                            the FIN was posted: the FIN is
                                            cancelled at the stop */
    strand_tx_desc_t       *rts_desc;    /* the request read from the
                                            sender (it was written over in
                                            the tag's buffer) */
    ucs_status_t            status;
};

KHASH_MAP_INIT_INT(strand_rc_rndv_qps, strand_rc_rndv_qp_t *)

struct strand_rc_rndv {
    strand_iface_t             *iface;
    khash_t(strand_rc_rndv_qps) qps;         /* by QP number */
    ucs_list_link_t             stopping;    /* QPs a bad block stops */
    ucs_list_link_t             waiting;     /* transfers waiting for room */
    unsigned                    outstanding; /* WQEs of all QPs */
    uint8_t                     pipeline;    /* FIN with the READs */
    uint8_t                     closing;     /* the interface closes:
                                                nothing is reported */
    /* the sender's side: a copy of every request it sent, where the
     * receiver reads it when the one in the tag's buffer was written over
     * (one slot of STRAND_TM_RTS_MAX bytes per rendezvous operation) */
    uint8_t        *rts_table;
    strand_dev_mr_t rts_mr;
    struct {
        uint64_t xfers;   /* rendezvous read */
        uint64_t checked; /* ... through landing mkeys */
        uint64_t failed;
        uint64_t fins;           /* FINs sent */
        uint64_t fins_pipelined; /* in the READs' doorbell */
        uint64_t stops;          /* SQD stops handled */
        uint64_t fins_cancelled;
        uint64_t rts_fetched; /* read from the sender */
    } stats;
};

static void strand_rc_rndv_rts(void *arg, const strand_tm_rts_match_t *m,
                               const void *data, uint32_t len);

/* ------------------------------------------------------------ set up */

ucs_status_t strand_rc_rndv_init(strand_iface_t *iface, int pipeline,
                                 strand_rc_rndv_t **rndv_p)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    int    checked = (iface->integrity.kind != STRAND_INTEGRITY_OFF);
    size_t table   = (size_t)iface->tm.num_rndv_ops * STRAND_TM_RTS_MAX;
    strand_rc_rndv_t *rndv;
    int               err;

    if ((pipeline == UCS_YES) && checked && !caps->sig_pipelining) {
        ucs_error("%s: rc_strand: UCX_RC_STRAND_INTEGRITY_PIPELINE=y, but "
                  "the device has no signature pipelining",
                  iface->dev->info.name);
        return UCS_ERR_UNSUPPORTED;
    }

    rndv = ucs_calloc(1, sizeof(*rndv), "strand_rc_rndv");
    if (rndv == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rndv->iface     = iface;
    rndv->rts_table = ucs_calloc(1, table, "strand_rc_rts_table");
    if (rndv->rts_table == NULL) {
        ucs_free(rndv);
        return UCS_ERR_NO_MEMORY;
    }
    err = iface->dev->ops->reg_mr(iface->dev, rndv->rts_table, table,
                                  IBV_ACCESS_LOCAL_WRITE |
                                          IBV_ACCESS_REMOTE_READ,
                                  &rndv->rts_mr);
    if (err != 0) {
        ucs_error("%s: rc_strand: failed to register its table of "
                  "rendezvous requests (%zu bytes): %s",
                  iface->dev->info.name, table, strerror(err));
        ucs_free(rndv->rts_table);
        ucs_free(rndv);
        return UCS_ERR_IO_ERROR;
    }
    /* without checks nothing can stop the FIN: it always goes with the
     * READ; with them, where the device can stop before it */
    rndv->pipeline = !checked || ((pipeline != UCS_NO) && caps->sig_pipelining);
    kh_init_inplace(strand_rc_rndv_qps, &rndv->qps);
    ucs_list_head_init(&rndv->stopping);
    ucs_list_head_init(&rndv->waiting);
    /* matched requests come here (common/tm_list.c) */
    iface->tm.rts_cb  = strand_rc_rndv_rts;
    iface->tm.rts_arg = rndv;
    *rndv_p           = rndv;
    return UCS_OK;
}

void strand_rc_rndv_qp_attr(const strand_rc_rndv_t *rndv,
                            strand_dev_rc_attr_t   *attr)
{
    attr->sig_pipelining = rndv->pipeline && (rndv->iface->integrity.kind !=
                                              STRAND_INTEGRITY_OFF);
}

static strand_integrity_t *strand_rc_rndv_ig(strand_rc_rndv_t *rndv)
{
    return &rndv->iface->integrity;
}

/* ------------------------------------------------------ send queue */

static int strand_rc_rndv_room(const strand_rc_rndv_qp_t *rq, unsigned n)
{
    return (rq->sq.cur_post - rq->tail + n <= rq->sq.wqe_cnt) &&
           (rq->rndv->outstanding + n <= STRAND_RC_RNDV_MAX_WQES);
}

/* The ctrl segment of the next WQE (one BB), recorded as kind. */
static struct mlx5_wqe_ctrl_seg *
strand_rc_rndv_wqe_start(strand_rc_rndv_qp_t *rq, uint8_t kind,
                         strand_rc_xfer_t *x, strand_integrity_piece_t *piece)
{
    strand_rc_rndv_wqe_t *w = &rq->wqes[rq->sq.cur_post & (rq->sq.wqe_cnt - 1)];

    w->kind  = kind;
    w->xfer  = x;
    w->piece = piece;
    return strand_sq_ctrl(&rq->sq);
}

static void
strand_rc_rndv_wqe_end(strand_rc_rndv_qp_t *rq, struct mlx5_wqe_ctrl_seg *ctrl,
                       uint8_t opcode, unsigned ds, uint8_t fm_ce_se)
{
    strand_sq_set_ctrl(&rq->sq, ctrl, 0, opcode, ds, fm_ce_se, 0);
    strand_sq_advance(&rq->sq, 1);
    ++rq->rndv->outstanding;
}

/* A READ of len bytes at (raddr, rkey) into (addr, lkey), signaled: its
 * completion frees a landing mkey or completes the data. */
static void strand_rc_rndv_post_read(strand_rc_rndv_qp_t      *rq,
                                     strand_rc_xfer_t         *x,
                                     strand_integrity_piece_t *piece,
                                     uint64_t raddr, uint32_t rkey,
                                     uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    void                     *seg;

    ctrl = strand_rc_rndv_wqe_start(rq, STRAND_RC_WQE_READ, x, piece);
    seg  = strand_sq_seg_next(&rq->sq, ctrl, sizeof(*ctrl));
    strand_set_raddr_seg(seg, raddr, rkey);
    seg = strand_sq_seg_next(&rq->sq, seg, sizeof(struct mlx5_wqe_raddr_seg));
    strand_set_data_seg(seg, addr, len, lkey);
    strand_rc_rndv_wqe_end(rq, ctrl, MLX5_OPCODE_RDMA_READ, 3,
                           MLX5_WQE_CTRL_CQ_UPDATE);
    ++x->reads;
}

/* The FIN of x with its status, fenced: the device starts it only once
 * every READ before it completed (and a pipelining QP stops before it
 * after a bad block). */
static void
strand_rc_rndv_post_fin(strand_rc_rndv_qp_t *rq, strand_rc_xfer_t *x)
{
    struct mlx5_wqe_ctrl_seg *ctrl;
    struct ibv_tmh            tmh;
    unsigned                  ds;
    void                     *seg;

    strand_set_tmh(&tmh, IBV_TMH_FIN, x->m.app_ctx_be, x->m.stag);
    tmh.reserved[0] = (uint8_t)(int8_t)x->status;
    ctrl            = strand_rc_rndv_wqe_start(rq, STRAND_RC_WQE_FIN, x, NULL);
    seg             = strand_sq_seg_next(&rq->sq, ctrl, sizeof(*ctrl));
    ds = 1 + strand_set_inline_hdr_data(seg, &tmh, sizeof(tmh), NULL, 0);
    x->fin_idx = (uint16_t)rq->sq.cur_post;
    x->fin     = STRAND_RC_FIN_POSTED;
    strand_rc_rndv_wqe_end(rq, ctrl, MLX5_OPCODE_SEND, ds,
                           STRAND_WQE_CTRL_FM_SMALL_FENCE |
                                   MLX5_WQE_CTRL_CQ_UPDATE |
                                   MLX5_WQE_CTRL_SOLICITED);
    if (x->reads > 0) {
        ++rq->rndv->stats.fins_pipelined;
    }
}

static void strand_rc_rndv_ring(strand_rc_rndv_qp_t *rq)
{
    struct mlx5_wqe_ctrl_seg *last = strand_sq_bb(rq->sq.buf, rq->sq.wqe_cnt,
                                                  rq->sq.cur_post - 1);

    strand_dev_qp_ring(rq->qp, &rq->sq, last, 1);
}

/* ------------------------------------------------------------ transfers */

static void strand_rc_xfer_wait(strand_rc_xfer_t *x)
{
    if (ucs_list_is_empty(&x->wait)) {
        ucs_list_add_tail(&x->rq->rndv->waiting, &x->wait);
    }
}

static void strand_rc_xfer_fail(strand_rc_xfer_t *x, ucs_status_t status)
{
    if (x->status == UCS_OK) {
        x->status = status;
    }
    if (x->req != NULL) {
        x->req->status = (x->req->status == UCS_OK) ? status : x->req->status;
    }
}

/* Every byte of the data is in (and good), or it never will be. */
static int strand_rc_xfer_data_done(const strand_rc_xfer_t *x)
{
    if ((x->reads > 0) || (x->rts_desc != NULL)) {
        return 0;
    }
    if (x->status != UCS_OK) {
        return 1;
    }
    if (x->req != NULL) {
        return strand_integrity_req_done(x->req);
    }
    return x->read_posted || (x->length == 0);
}

/* Nothing of the data is left to post (pieces may be in flight). */
static int strand_rc_xfer_all_posted(const strand_rc_xfer_t *x)
{
    if (x->req != NULL) {
        return (x->req->next_block == x->req->end_block) &&
               (x->req->again == NULL);
    }
    return x->read_posted || (x->length == 0);
}

/* Whether the FIN may be posted now: a failed transfer's once nothing of
 * it is in flight; a good one's right behind its last READ where the QP
 * stops before it after a bad block (pipelined), else once every piece
 * came back good. */
static int strand_rc_xfer_fin_due(const strand_rc_xfer_t *x)
{
    if (x->fin != STRAND_RC_FIN_NONE) {
        return 0;
    }
    if ((x->status != UCS_OK) ||
        ((x->req != NULL) && (x->req->status != UCS_OK))) {
        return x->reads == 0;
    }
    if (!strand_rc_xfer_all_posted(x)) {
        return 0;
    }
    return x->rq->rndv->pipeline || strand_rc_xfer_data_done(x);
}

static void strand_rc_xfer_free(strand_rc_xfer_t *x)
{
    strand_rc_rndv_t *rndv = x->rq->rndv;

    ucs_list_del(&x->list);
    if (!ucs_list_is_empty(&x->wait)) {
        ucs_list_del(&x->wait);
    }
    if (x->req != NULL) {
        strand_integrity_req_finish(strand_rc_rndv_ig(rndv), x->req);
        ucs_free(x->req);
    }
    ucs_free(x);
}

/* The tag completes once the data is in, the transfer goes once its FIN
 * is done as well. */
static void strand_rc_xfer_settle(strand_rc_xfer_t *x)
{
    strand_rc_rndv_t *rndv = x->rq->rndv;

    if (!x->reported && strand_rc_xfer_data_done(x)) {
        if ((x->status == UCS_OK) && (x->req != NULL)) {
            x->status = x->req->status;
        }
        x->reported = 1;
        if (x->status == UCS_OK) {
            ++rndv->stats.xfers;
        } else {
            ++rndv->stats.failed;
        }
        if (rndv->closing) {
            /* UCT calls nothing from a closing interface */
        } else if (x->m.taken) {
            strand_tm_rts_done(&rndv->iface->tm, x->m.entry,
                               (x->status == UCS_OK) ? x->length : 0,
                               x->status);
        } else {
            strand_tm_rts_done(&rndv->iface->tm, x->m.entry, 0,
                               UCS_ERR_CANCELED);
        }
    }
    if (x->reported && (x->fin == STRAND_RC_FIN_DONE) && (x->reads == 0)) {
        strand_rc_xfer_free(x);
    }
}

/* Post what x can post now (READs, its FIN), in one doorbell; what waits
 * for room or a landing mkey goes on later from progress. */
static void strand_rc_xfer_issue(strand_rc_xfer_t *x)
{
    strand_rc_rndv_qp_t      *rq = x->rq;
    strand_integrity_t       *ig = strand_rc_rndv_ig(rq->rndv);
    strand_integrity_piece_t *piece;
    unsigned                  posted = 0;
    int                       wait   = 0;
    ucs_status_t              status;

    if (x->bad || (x->rts_desc != NULL)) {
        /* its FIN is cancelled first, when the QP stopped; its request is
         * still on the way */
        return;
    }
    if (rq->status != UCS_OK) {
        /* the QP is in ERR: nothing goes out on it any more */
        strand_rc_xfer_fail(x, rq->status);
        if (x->fin == STRAND_RC_FIN_NONE) {
            x->fin = STRAND_RC_FIN_DONE;
        }
        strand_rc_xfer_settle(x);
        return;
    }
    /* room for a READ and the FIN behind it */
    while ((x->status == UCS_OK) && !strand_rc_xfer_all_posted(x)) {
        if (!strand_rc_rndv_room(rq, 2)) {
            wait = 1;
            break;
        }
        if (x->req == NULL) {
            strand_rc_rndv_post_read(rq, x, NULL, x->va, x->rkey,
                                     (uintptr_t)x->m.buffer, x->length,
                                     x->m.lkey);
            x->read_posted = 1;
            ++posted;
            continue;
        }
        status = strand_integrity_next_piece(ig, x->req, &piece);
        if (status == UCS_ERR_NO_RESOURCE) {
            wait = 1; /* no landing mkey free now */
            break;
        }
        if (status != UCS_OK) {
            break; /* nothing more to read, or it failed */
        }
        /* the piece's blocks from the sender's signing mkey into its
         * landing mkey (zero-based, the length on the wire) */
        strand_rc_rndv_post_read(rq, x, piece, piece->wire_off,
                                 x->req->sig_rkey, 0, piece->wire_len,
                                 piece->mkey.key);
        ++posted;
    }
    if (strand_rc_xfer_fin_due(x)) {
        if (strand_rc_rndv_room(rq, 1)) {
            if ((x->status == UCS_OK) && (x->req != NULL)) {
                x->status = x->req->status;
            }
            strand_rc_rndv_post_fin(rq, x);
            ++posted;
        } else {
            wait = 1;
        }
    }
    if (posted > 0) {
        strand_rc_rndv_ring(rq);
    }
    if (wait) {
        strand_rc_xfer_wait(x);
    } else if (!ucs_list_is_empty(&x->wait)) {
        ucs_list_del(&x->wait);
        ucs_list_head_init(&x->wait);
    }
    strand_rc_xfer_settle(x);
}

/* ---------------------------------------------- a matched request */

/* What the request says: where to read, and how (checked pieces with
 * integrity and a signing key, else one plain READ). UCS_ERR_INVALID_PARAM
 * when it does not parse or was written over. */
static ucs_status_t
strand_rc_xfer_start(strand_rc_xfer_t *x, const void *data, uint32_t len)
{
    strand_rc_rndv_t   *rndv = x->rq->rndv;
    strand_integrity_t *ig   = strand_rc_rndv_ig(rndv);
    const void         *rkey_buf, *header;
    strand_rkey_sig_t   rk;
    strand_tm_rts_t     rts;
    uct_iov_t           iov;
    int                 sig;

    if (strand_tm_rts_parse(data, len, x->m.app_ctx_be, x->m.stag, &rts,
                            &rkey_buf, &header) != UCS_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    x->va     = be64toh(rts.va);
    x->length = be32toh(rts.length);
    sig       = strand_md_rkey_parse(rkey_buf, rts.rkey_len, &rk);
    x->rkey   = rk.rkey;
    if (x->length > x->m.length) {
        ucs_debug("%s: rendezvous of %u bytes into a tag buffer of %u",
                  rndv->iface->dev->info.name, x->length, x->m.length);
        strand_rc_xfer_fail(x, UCS_ERR_MESSAGE_TRUNCATED);
        return UCS_OK;
    }
    if ((ig->kind == STRAND_INTEGRITY_OFF) || (x->length == 0)) {
        return UCS_OK;
    }
    if (!sig) {
        ++ig->unchecked; /* a sender without integrity */
        return UCS_OK;
    }
    iov.buffer = x->m.buffer;
    iov.length = x->length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    x->req     = ucs_calloc(1, sizeof(*x->req), "strand_integrity_req");
    if (x->req == NULL) {
        strand_rc_xfer_fail(x, UCS_ERR_NO_MEMORY);
    } else if (strand_integrity_req_init(ig, x->req, &rk, x->va, &iov, 1,
                                         &x->m.lkey) != UCS_OK) {
        ucs_free(x->req);
        x->req = NULL;
        strand_rc_xfer_fail(x, UCS_ERR_INVALID_PARAM);
    } else {
        x->req->ep = x; /* alive: bad pieces are read again */
        ++rndv->stats.checked;
    }
    return UCS_OK;
}

/* The request in the tag's buffer was written over (another operation of
 * the user writes into that buffer): read it from the sender's table. */
static ucs_status_t strand_rc_xfer_fetch_rts(strand_rc_xfer_t *x)
{
    strand_rc_rndv_qp_t *rq    = x->rq;
    strand_iface_t      *iface = rq->rndv->iface;

    if ((rq->rts_rkey == 0) || !strand_rc_rndv_room(rq, 1)) {
        return UCS_ERR_NO_RESOURCE;
    }
    x->rts_desc = ucs_mpool_get(&iface->tx_mp);
    if (x->rts_desc == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    strand_rc_rndv_post_read(rq, x, NULL,
                             rq->rts_table + (uint64_t)strand_tm_rndv_slot(
                                                     x->m.app_ctx_be) *
                                                     STRAND_TM_RTS_MAX,
                             rq->rts_rkey, (uintptr_t)x->rts_desc->data,
                             STRAND_TM_RTS_MAX, x->rts_desc->lkey);
    rq->wqes[(rq->sq.cur_post - 1) & (rq->sq.wqe_cnt - 1)].kind =
            STRAND_RC_WQE_RTS;
    strand_rc_rndv_ring(rq);
    ++rq->rndv->stats.rts_fetched;
    return UCS_OK;
}

/* The request came back from the sender: the transfer starts now. */
static void strand_rc_xfer_rts_fetched(strand_rc_xfer_t *x, ucs_status_t status)
{
    strand_tx_desc_t *desc = x->rts_desc;

    x->rts_desc = NULL;
    if ((status == UCS_OK) &&
        (strand_rc_xfer_start(x, desc->data, STRAND_TM_RTS_MAX) != UCS_OK)) {
        ucs_error("%s: the rendezvous request read from the sender does "
                  "not parse either",
                  x->rq->rndv->iface->dev->info.name);
        status = UCS_ERR_INVALID_PARAM;
    }
    if (status != UCS_OK) {
        strand_rc_xfer_fail(x, status);
    }
    ucs_mpool_put_inline(desc);
}

static void strand_rc_rndv_rts(void *arg, const strand_tm_rts_match_t *m,
                               const void *data, uint32_t len)
{
    strand_rc_rndv_t    *rndv = arg;
    strand_rc_rndv_qp_t *rq;
    strand_rc_xfer_t    *x;
    ucs_status_t         status;
    khiter_t             it;

    it = kh_get(strand_rc_rndv_qps, &rndv->qps, m->qpn);
    if (it == kh_end(&rndv->qps)) {
        /* a QP that is gone: nothing can read it nor answer */
        ucs_error("%s: rendezvous request on QP 0x%x, which is not a "
                  "responder QP of this interface",
                  rndv->iface->dev->info.name, m->qpn);
        strand_tm_rts_done(&rndv->iface->tm, m->entry, 0,
                           UCS_ERR_CONNECTION_RESET);
        return;
    }
    rq = kh_value(&rndv->qps, it);
    x  = ucs_calloc(1, sizeof(*x), "strand_rc_xfer");
    if (x == NULL) {
        strand_tm_rts_done(&rndv->iface->tm, m->entry, 0, UCS_ERR_NO_MEMORY);
        return;
    }
    x->rq = rq;
    x->m  = *m;
    ucs_list_head_init(&x->wait);
    ucs_list_add_tail(&rq->xfers, &x->list);

    if (!m->taken) {
        /* the user forgot the tag (forced cancel): only the answer */
        strand_rc_xfer_fail(x, UCS_ERR_CANCELED);
    } else if (strand_rc_xfer_start(x, data, len) != UCS_OK) {
        ucs_debug("%s: the rendezvous request in the tag's buffer was "
                  "written over (%u bytes on QP 0x%x): read from the sender",
                  rndv->iface->dev->info.name, len, m->qpn);
        status = strand_rc_xfer_fetch_rts(x);
        if (status == UCS_OK) {
            return; /* goes on when it is back */
        }
        ucs_error("%s: malformed rendezvous request (%u bytes) on QP 0x%x, "
                  "and it cannot be read from the sender: %s",
                  rndv->iface->dev->info.name, len, m->qpn,
                  ucs_status_string(status));
        strand_rc_xfer_fail(x, UCS_ERR_INVALID_PARAM);
    }
    strand_rc_xfer_issue(x);
}

/* ------------------------------------------------------ completions */

/* A piece came back with a bad block on a pipelining QP: the device stops
 * it before the next fenced WQE (a FIN). */
static void strand_rc_rndv_qp_stopping(strand_rc_rndv_qp_t *rq)
{
    if (!rq->stopping) {
        rq->stopping = 1;
        ucs_list_add_tail(&rq->rndv->stopping, &rq->stop_link);
    }
}

static void strand_rc_rndv_wqe_done(strand_rc_rndv_qp_t  *rq,
                                    strand_rc_rndv_wqe_t *w,
                                    ucs_status_t          status)
{
    strand_rc_xfer_t         *x     = w->xfer;
    strand_integrity_piece_t *piece = w->piece;
    uint8_t                   kind  = w->kind;

    w->kind  = STRAND_RC_WQE_NONE;
    w->xfer  = NULL;
    w->piece = NULL;
    --rq->rndv->outstanding;
    switch (kind) {
    case STRAND_RC_WQE_RTS:
        --x->reads;
        strand_rc_xfer_rts_fetched(x, status);
        break;
    case STRAND_RC_WQE_READ:
        --x->reads;
        if (piece != NULL) {
            if ((status == UCS_OK) && piece->bad && rq->rndv->pipeline) {
                /* the device stops the QP at its next fenced WQE */
                strand_rc_rndv_qp_stopping(rq);
                x->bad |= (x->fin == STRAND_RC_FIN_POSTED);
            }
            strand_integrity_piece_done(strand_rc_rndv_ig(rq->rndv), piece,
                                        status);
        }
        if (status != UCS_OK) {
            strand_rc_xfer_fail(x, status);
        }
        break;
    case STRAND_RC_WQE_FIN:
        x->fin = STRAND_RC_FIN_DONE;
        if (status == UCS_OK) {
            ++rq->rndv->stats.fins;
        }
        break;
    default:
        return; /* a cancelled FIN */
    }
    strand_rc_xfer_issue(x);
}

int strand_rc_rndv_cqe(strand_rc_rndv_t *rndv, const struct mlx5_cqe64 *cqe)
{
    khiter_t it = kh_get(strand_rc_rndv_qps, &rndv->qps, strand_cqe_qpn(cqe));
    strand_rc_rndv_qp_t  *rq;
    strand_rc_rndv_wqe_t *w;
    ucs_status_t          status = UCS_OK;
    uint16_t              idx;

    if (it == kh_end(&rndv->qps)) {
        return -1;
    }
    rq  = kh_value(&rndv->qps, it);
    idx = strand_cqe_wqe_counter(cqe);
    w   = &rq->wqes[idx & (rq->sq.wqe_cnt - 1)];
    if (strand_cqe_is_error(cqe)) {
        status = strand_syndrome_status(strand_cqe_syndrome(cqe));
        if (rq->status == UCS_OK) {
            if (strand_cqe_syndrome(cqe) != MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
                ucs_diag("%s: rendezvous on QP 0x%x failed: %s",
                         rndv->iface->dev->info.name, rq->qp->qpn,
                         strand_cqe_syndrome_str(strand_cqe_syndrome(cqe)));
            }
            rq->status = status; /* the QP is in ERR */
        }
    }
    if (w->kind == STRAND_RC_WQE_NONE) {
        ucs_error("%s: send CQE for WQE %u of QP 0x%x, which has none "
                  "outstanding",
                  rndv->iface->dev->info.name, idx, rq->qp->qpn);
        return 0;
    }
    strand_rc_rndv_wqe_done(rq, w, status);
    /* the oldest BB moves past every retired WQE (one BB each) */
    while ((rq->tail != rq->sq.cur_post) &&
           (rq->wqes[rq->tail & (rq->sq.wqe_cnt - 1)].kind ==
            STRAND_RC_WQE_NONE)) {
        ++rq->tail;
    }
    return 0;
}

/* -------------------------------------------------- a stopped QP */

/* Whether the FIN of x is among the WQEs the stopped SQ did not execute:
 * [stop, producer index). */
static int strand_rc_rndv_unexecuted(const strand_rc_rndv_qp_t *rq,
                                     uint16_t idx, uint16_t stop)
{
    return (uint16_t)(idx - stop) < (uint16_t)(rq->sq.cur_post - stop);
}

/* The seed page's four steps for a QP that stopped in SQD. */
static void strand_rc_rndv_handle_sqd(strand_rc_rndv_qp_t *rq, uint16_t stop)
{
    strand_rc_rndv_t         *rndv = rq->rndv;
    strand_dev_t             *dev  = rndv->iface->dev;
    struct mlx5_wqe_ctrl_seg *ctrl;
    strand_rc_xfer_t         *x, *tmp;
    int                       err;

    /* 1. everything the QP executed has its completion in the CQ (the
     * drain is over): poll it empty; bad pieces are marked now */
    strand_txq_tx_poll_max(rndv->iface, UINT_MAX);
    /* 2. the transfers with a bad block (or failed), 3. their FINs
     * cancelled: rewritten into NOPs of the same size, fence and
     * signaling (what mlx5dv_qp_cancel_posted_send_wrs does to the WRs
     * rdma-core posted; these WQEs are the transport's own) */
    ucs_list_for_each(x, &rq->xfers, list) {
        if (!x->bad) {
            continue;
        }
        x->bad = 0;
        if (x->fin != STRAND_RC_FIN_POSTED) {
            continue; /* answered meanwhile (the QP failed) */
        }
        if (!strand_rc_rndv_unexecuted(rq, x->fin_idx, stop)) {
            ucs_error("%s: QP 0x%x stopped at WQE %u after the FIN (WQE %u) "
                      "of a transfer with a bad block",
                      dev->info.name, rq->qp->qpn, stop, x->fin_idx);
            continue;
        }
        ctrl = strand_sq_bb(rq->sq.buf, rq->sq.wqe_cnt, x->fin_idx);
        strand_set_ctrl_nop(ctrl);
        rq->wqes[x->fin_idx & (rq->sq.wqe_cnt - 1)].kind =
                STRAND_RC_WQE_CANCELLED;
        x->fin = STRAND_RC_FIN_NONE;
        ++rndv->stats.fins_cancelled;
    }
    /* 4. back to RTS: the SQ resumes at the first WQE it did not execute */
    err = strand_dev_sqd_to_rts(dev, rq->qp);
    if (err != 0) {
        ucs_error("%s: QP 0x%x: SQD -> RTS failed: %s", dev->info.name,
                  rq->qp->qpn, strerror(err));
        rq->status = UCS_ERR_IO_ERROR;
    }
    ++rndv->stats.stops;
    rq->stopping = 0;
    ucs_list_del(&rq->stop_link);
    /* the bad pieces again, each transfer with a FIN of its own */
    ucs_list_for_each_safe(x, tmp, &rq->xfers, list) {
        strand_rc_xfer_issue(x);
    }
}

unsigned strand_rc_rndv_progress(strand_rc_rndv_t *rndv)
{
    strand_dev_t        *dev = rndv->iface->dev;
    strand_rc_rndv_qp_t *rq, *rtmp;
    strand_rc_xfer_t    *x, *xtmp;
    ucs_list_link_t      waiting;
    unsigned             count = 0;
    uint32_t             stop;
    int                  err;

    ucs_list_for_each_safe(rq, rtmp, &rndv->stopping, stop_link) {
        err = dev->ops->query_sqd(dev, rq->qp, &stop);
        if (err == 0) {
            strand_rc_rndv_handle_sqd(rq, (uint16_t)stop);
            ++count;
        } else if ((err != EINVAL) && (err != EBUSY)) {
            ucs_error("%s: QP 0x%x: cannot query its stop: %s", dev->info.name,
                      rq->qp->qpn, strerror(err));
        }
        /* EINVAL: not stopped yet (its next fenced WQE is still ahead);
         * EBUSY: stopped, what it started still completing */
    }
    if (ucs_list_is_empty(&rndv->waiting)) {
        return count;
    }
    /* each waiting transfer once (one that waits again goes back) */
    ucs_list_head_init(&waiting);
    ucs_list_splice_tail(&waiting, &rndv->waiting);
    ucs_list_head_init(&rndv->waiting);
    ucs_list_for_each_safe(x, xtmp, &waiting, wait) {
        ucs_list_del(&x->wait);
        ucs_list_head_init(&x->wait);
        strand_rc_xfer_issue(x);
        ++count;
    }
    return count;
}

/* ---------------------------------------------------- responder QPs */

ucs_status_t strand_rc_rndv_qp_add(strand_rc_rndv_t *rndv, strand_dev_qp_t *qp,
                                   uint64_t rts_table, uint32_t rts_rkey,
                                   strand_rc_rndv_qp_t **rq_p)
{
    strand_rc_rndv_qp_t *rq;
    khiter_t             it;
    int                  ret;

    rq = ucs_calloc(1, sizeof(*rq), "strand_rc_rndv_qp");
    if (rq == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rq->rndv      = rndv;
    rq->qp        = qp;
    rq->rts_table = rts_table;
    rq->rts_rkey  = rts_rkey;
    strand_sq_init(&rq->sq, &qp->dv, qp->qpn,
                   (strand_mmio_mode_t)rndv->iface->md->mmio_mode, qp->bf);
    rq->wqes = ucs_calloc(rq->sq.wqe_cnt, sizeof(*rq->wqes),
                          "strand_rc_rndv_wqes");
    if (rq->wqes == NULL) {
        ucs_free(rq);
        return UCS_ERR_NO_MEMORY;
    }
    ucs_list_head_init(&rq->xfers);
    it = kh_put(strand_rc_rndv_qps, &rndv->qps, qp->qpn, &ret);
    if (ret <= 0) {
        ucs_free(rq->wqes);
        ucs_free(rq);
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&rndv->qps, it) = rq;
    *rq_p                    = rq;
    return UCS_OK;
}

void strand_rc_rndv_qp_remove(strand_rc_rndv_t *rndv, strand_rc_rndv_qp_t *rq)
{
    strand_integrity_t   *ig = strand_rc_rndv_ig(rndv);
    strand_rc_xfer_t     *x, *tmp;
    strand_rc_rndv_wqe_t *w;
    khiter_t              it;
    uint32_t              bb;

    if (rq == NULL) {
        return;
    }
    it = kh_get(strand_rc_rndv_qps, &rndv->qps, rq->qp->qpn);
    if (it != kh_end(&rndv->qps)) {
        kh_del(strand_rc_rndv_qps, &rndv->qps, it);
    }
    if (rq->stopping) {
        ucs_list_del(&rq->stop_link);
    }
    /* the QP goes with its WQEs: nothing of them completes any more */
    for (bb = rq->tail; bb != rq->sq.cur_post; ++bb) {
        w = &rq->wqes[bb & (rq->sq.wqe_cnt - 1)];
        if (w->kind == STRAND_RC_WQE_NONE) {
            continue;
        }
        --rndv->outstanding;
        if (w->kind == STRAND_RC_WQE_RTS) {
            --w->xfer->reads;
            strand_rc_xfer_rts_fetched(w->xfer, UCS_ERR_CANCELED);
        } else if (w->kind == STRAND_RC_WQE_READ) {
            --w->xfer->reads;
            if (w->piece != NULL) {
                strand_integrity_piece_done(ig, w->piece, UCS_ERR_CANCELED);
            }
        }
        w->kind = STRAND_RC_WQE_NONE;
    }
    rq->status = UCS_ERR_CONNECTION_RESET;
    ucs_list_for_each_safe(x, tmp, &rq->xfers, list) {
        strand_rc_xfer_fail(x, UCS_ERR_CONNECTION_RESET);
        x->fin = STRAND_RC_FIN_DONE;
        strand_rc_xfer_settle(x);
    }
    ucs_free(rq->wqes);
    ucs_free(rq);
}

void strand_rc_rndv_cleanup(strand_rc_rndv_t *rndv)
{
    strand_rc_rndv_qp_t *rq;

    if (rndv == NULL) {
        return;
    }
    rndv->closing = 1;
    ucs_info("%s: rc_strand rendezvous: xfers %" PRIu64 " checked %" PRIu64
             " failed %" PRIu64 " fins %" PRIu64 " fins_pipelined %" PRIu64
             " stops %" PRIu64 " fins_cancelled %" PRIu64
             " rts_fetched %" PRIu64,
             rndv->iface->dev->info.name, rndv->stats.xfers,
             rndv->stats.checked, rndv->stats.failed, rndv->stats.fins,
             rndv->stats.fins_pipelined, rndv->stats.stops,
             rndv->stats.fins_cancelled, rndv->stats.rts_fetched);
    kh_foreach_value(&rndv->qps, rq, { strand_rc_rndv_qp_remove(rndv, rq); })
        ;
    kh_destroy_inplace(strand_rc_rndv_qps, &rndv->qps);
    rndv->iface->dev->ops->dereg_mr(rndv->iface->dev, &rndv->rts_mr);
    ucs_free(rndv->rts_table);
    ucs_free(rndv);
}

void strand_rc_rndv_show(const strand_rc_rndv_t *rndv,
                         ucs_string_buffer_t    *strb)
{
    ucs_string_buffer_appendf(
            strb,
            "pipeline %u\nqps %u\noutstanding %u\n"
            "xfers %" PRIu64 "\nchecked %" PRIu64 "\nfailed %" PRIu64 "\n"
            "fins %" PRIu64 "\nfins_pipelined %" PRIu64 "\nstops %" PRIu64
            "\nfins_cancelled %" PRIu64 "\nrts_fetched %" PRIu64 "\n",
            rndv->pipeline, kh_size(&rndv->qps), rndv->outstanding,
            rndv->stats.xfers, rndv->stats.checked, rndv->stats.failed,
            rndv->stats.fins, rndv->stats.fins_pipelined, rndv->stats.stops,
            rndv->stats.fins_cancelled, rndv->stats.rts_fetched);
}

void strand_rc_rndv_table(const strand_rc_rndv_t *rndv, uint64_t *va_p,
                          uint32_t *rkey_p)
{
    *va_p   = (rndv != NULL) ? (uintptr_t)rndv->rts_table : 0;
    *rkey_p = (rndv != NULL) ? rndv->rts_mr.rkey : 0;
}

/* ------------------------------------------------------- the sender */

void strand_rc_rndv_keep_rts(strand_rc_rndv_t *rndv, uint32_t app_ctx,
                             const void *rts, size_t len)
{
    memcpy(rndv->rts_table +
                   (size_t)strand_tm_rndv_slot(app_ctx) * STRAND_TM_RTS_MAX,
           rts, len);
}

unsigned strand_rc_rndv_max_hdr(const strand_iface_t *iface)
{
    return strand_tm_rts_max_hdr(strand_md_rkey_packed_size(iface->md));
}
