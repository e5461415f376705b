/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware tag matching, the transport's side (written once for every
 * transport; it knows no DCI and no RC QP):
 *
 * - the tag list the device matches against: entries handed out from a
 *   free list whose head is always the device's next append slot (each
 *   APPEND tells the device the index of the entry after it, as rdma-core
 *   does), freed only when every completion the entry will get came back;
 * - list operations (APPEND, REMOVE, NOP) built as TAG_MATCHING WQEs on the
 *   tag-matching SRQ's command QP, every one signaled and carrying the count
 *   of unexpected messages software has handled (phase synchronisation:
 *   after an unexpected message the device matches only once software
 *   reported it);
 * - the completions of tags (consumed, expected, canceled, failed) and the
 *   unexpected messages (to the user's eager / rendezvous callbacks);
 * - the sender's rendezvous operations, found again by the FIN the
 *   receiver's device sends (app_ctx carries their id);
 * - rendezvous requests a transport reads itself (rc_strand: an eager
 *   message flagged STRAND_TMH_RTS): handed to the transport when one
 *   matched a tag, to the user's rendezvous callback when unexpected.
 */
#ifndef STRAND_TM_LIST_H_
#define STRAND_TM_LIST_H_

#include "dev/dev.h"
#include "mlx5/tm.h"
#include "dev/dev_ring.h"
#include "mlx5/sq.h"

#include <uct/api/uct.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/string_buffer.h>

/* Buffers of posted tags: one buffer is never posted twice (two matches
 * would write into it at once). Receive buffers are often a page or more
 * apart, and khash's own 64-bit hash keeps their low bits, so they would
 * all land in one bucket (a post walked the whole list): the key is mixed
 * first (the 64-bit finalizer of MurmurHash3). */
static inline khint32_t strand_tm_buf_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return (khint32_t)key;
}

KHASH_INIT(strand_tm_bufs, uint64_t, char, 0, strand_tm_buf_hash,
           kh_int64_hash_equal)

/* What tests and the VFS see: which path messages took. */
typedef struct strand_tm_stats {
    uint64_t tags_posted;   /* APPEND */
    uint64_t tags_canceled; /* REMOVE that won */
    uint64_t exp_eager;     /* eager matched by the device */
    uint64_t exp_rndv;      /* rendezvous matched and read by the device */
    uint64_t exp_sw_rndv;   /* software rendezvous request matched */
    uint64_t exp_rts;       /* rendezvous request matched and read by
                               the transport (rc_strand) */
    uint64_t tag_errors;    /* a matched tag that failed */
    uint64_t unexp_eager;
    uint64_t unexp_rndv;
    uint64_t unexp_sw_rndv;
    uint64_t rndv_sent;     /* hardware rendezvous started */
    uint64_t rndv_fin;      /* ... and finished by the receiver's FIN */
    uint64_t syncs;         /* NOP list operations reporting the count */
    uint64_t sync_requests; /* completions that asked for one */
    uint64_t list_full;     /* tag_recv_zcopy refused: no entry */
    uint64_t buf_busy;      /* ... refused: a checked GET writes there */
    uint64_t dropped;       /* unexpected, and no callback to take it
                               (opened without them) */
} strand_tm_stats_t;

typedef struct strand_tm_entry   strand_tm_entry_t;
typedef struct strand_tm_rndv_op strand_tm_rndv_op_t;

/* The request of a rendezvous the receiver's transport reads itself
 * (rc_strand's uct_ep_tag_rndv_zcopy): the payload of an EAGER message
 * flagged STRAND_TMH_RTS, this header, the sender's packed remote key,
 * then the user's header. Matched, it lands in the tag's buffer (a tag
 * buffer smaller than STRAND_TM_RTS_MAX is posted as a bounce slot of the
 * transport's: strand_tm_bounce_init), and the data overwrites it;
 * unexpected, the user reads it as any unexpected rendezvous. Big-endian,
 * as the TMH. A buffer is the user's, and a user may have another
 * operation write into it meanwhile (two receives into one buffer, as
 * ucx_perftest's tag_bw posts them): `check` covers the request with the
 * TMH's app_ctx and tag, so that a request written over is not taken for
 * one (rc_strand then reads it from the sender, rc/rc_rndv.c). */
typedef struct strand_tm_rts {
    uint64_t va; /* the sender's buffer */
    uint32_t length;
    uint32_t check;    /* CRC32 of the rest, app_ctx and tag */
    uint8_t  rkey_len; /* the packed key after this header */
    uint8_t  hdr_len;  /* the user's header after the key */
    uint16_t reserved;
} UCS_S_PACKED strand_tm_rts_t;

#define STRAND_TM_RTS_MAX 128 /* an RTS payload at most */

/* the user header an RTS can carry after a packed key of rkey_len bytes */
static inline unsigned strand_tm_rts_max_hdr(unsigned rkey_len)
{
    return STRAND_TM_RTS_MAX - (unsigned)sizeof(strand_tm_rts_t) - rkey_len;
}

/* A rendezvous request that matched a tag: where it goes. */
typedef struct strand_tm_rts_match {
    uint32_t entry; /* for strand_tm_rts_done */
    int      taken; /* 0: the user forgot the tag (a forced
                       cancel): its buffer must not be touched */
    uint64_t stag;
    uint32_t app_ctx_be; /* the sender's operation: its FIN's app_ctx */
    uint32_t qpn;        /* the QP it arrived on */
    void    *buffer;     /* the tag's buffer */
    uint32_t length;
    uint32_t lkey;
} strand_tm_rts_match_t;

/* rts (rts_len bytes, an aligned copy) matched m; the transport reads the
 * data and calls strand_tm_rts_done(). */
typedef void (*strand_tm_rts_cb_t)(void *arg, const strand_tm_rts_match_t *m,
                                   const void *rts, uint32_t rts_len);

/* A list operation posted and not yet completed (they complete in order). */
typedef struct strand_tm_cmd {
    uint32_t entry;  /* UINT32_MAX: a NOP */
    uint8_t  op;     /* STRAND_TM_OP_* */
    uint16_t sw_cnt; /* the count it reported */
} strand_tm_cmd_t;

typedef struct strand_tm {
    /* the command QP */
    strand_dev_qp_t *cmd_qp;
    strand_sq_t      cmd_sq;
    uint32_t         cmd_done; /* list operations completed */
    uint32_t         cmd_max;  /* in flight at most */
    strand_tm_cmd_t *cmds;     /* by producer index */

    /* the tag list: num_entries = max_tags + 1 (one is always the
     * device's next append slot) */
    strand_tm_entry_t      *entries;
    uint32_t                num_entries;
    uint32_t                head, tail; /* free list */
    uint32_t                tags_used;
    uint32_t                max_tags;
    khash_t(strand_tm_bufs) bufs;
    uint32_t               *cancel_wait; /* REMOVEs waiting for room */
    uint32_t                num_cancel_wait;

    /* phase */
    uint16_t unexp_cnt; /* handled by software */
    uint16_t unexp_reported;
    int      sync_wanted;

    /* the user's callbacks for unexpected messages */
    uct_tag_unexp_eager_cb_t eager_cb;
    void                    *eager_arg;
    uct_tag_unexp_rndv_cb_t  rndv_cb;
    void                    *rndv_arg;

    /* rendezvous headers after the TMH: RVH, and RAVH on DC */
    unsigned rndv_hdr_len;
    unsigned max_rndv_data; /* user header after them */

    /* rendezvous requests the transport reads itself (NULL: none); a
     * smaller tag buffer than min_recv (0: none) is posted as a slot of
     * the bounce buffer (min_recv bytes per entry), what lands there is
     * copied to the user's */
    strand_tm_rts_cb_t rts_cb;
    void              *rts_arg;
    uint32_t           min_recv;
    uint8_t           *bounce;
    strand_dev_mr_t    bounce_mr;
    strand_dev_t      *dev;

    /* sender side: rendezvous operations waiting for their FIN */
    strand_tm_rndv_op_t *rndv_ops;
    uint32_t             num_rndv_ops;
    uint32_t             rndv_free; /* free list */

    const char       *name; /* device, for messages */
    strand_tm_stats_t stats;
} strand_tm_t;

/* The private part of uct_tag_context_t while the transport owns it. */
typedef struct strand_tm_ctx_priv {
    uint64_t tag; /* the sender's tag, once matched */
    void    *buffer;
    uint32_t length;
    uint32_t entry;
} strand_tm_ctx_priv_t;

/* Header bytes a rendezvous can carry in the TMH's reserved bytes, in
 * addition to max_rndv_data (as UCX does: [length][2 bytes]). */
#define STRAND_TM_RNDV_PRIV_MAX 2

/* Tag buffers smaller than min_recv bytes go through a bounce buffer of
 * min_recv bytes per entry, registered on dev (rc_strand: its rendezvous
 * requests land in a tag's buffer). */
ucs_status_t
strand_tm_bounce_init(strand_tm_t *tm, strand_dev_t *dev, uint32_t min_recv);

ucs_status_t
     strand_tm_init(strand_tm_t *tm, const char *name, strand_dev_qp_t *cmd_qp,
                    uint8_t mmio_mode, uint32_t max_tags, uint32_t max_ops,
                    unsigned rndv_hdr_len, unsigned max_rndv_hdr_size,
                    uint32_t max_rndv_ops, const uct_iface_params_t *params);
void strand_tm_cleanup(strand_tm_t *tm);

/* uct_iface_tag_recv_zcopy / _cancel */
ucs_status_t strand_tm_recv_zcopy(strand_tm_t *tm, uct_tag_t tag,
                                  uct_tag_t tag_mask, const uct_iov_t *iov,
                                  size_t iovcnt, uct_tag_context_t *ctx);
ucs_status_t
strand_tm_recv_cancel(strand_tm_t *tm, uct_tag_context_t *ctx, int force);

/* A tag-matching CQE that consumed no receive buffer (list operations,
 * matched tags, their errors). */
void strand_tm_handle_cqe(strand_tm_t *tm, const struct mlx5_cqe64 *cqe);
/* Does this CQE consume a receive buffer (UNEXPECTED, NO_TAG)? */
static inline int strand_tm_cqe_has_buffer(const struct mlx5_cqe64 *cqe)
{
    return !strand_cqe_is_tm(cqe) ||
           (cqe->app_op == STRAND_CQE_APP_OP_TM_UNEXPECTED) ||
           (cqe->app_op == STRAND_CQE_APP_OP_TM_NO_TAG);
}
/* An UNEXPECTED message, TMH first, in a receive buffer (`length` bytes
 * from `msg`). The eager callback gets the payload with
 * UCT_CB_PARAM_FLAG_DESC: UCS_INPROGRESS means the user keeps the buffer. */
ucs_status_t strand_tm_handle_unexp(strand_tm_t             *tm,
                                    const struct mlx5_cqe64 *cqe, void *msg,
                                    uint32_t length);
/* After a batch of completions: post what waits for room (REMOVEs) and
 * report the unexpected count when the device needs it. */
void strand_tm_progress(strand_tm_t *tm);
void strand_tm_show(const strand_tm_t *tm, ucs_string_buffer_t *strb);
/* One line of what the device matched and what software did, for the log
 * (UCX_LOG_LEVEL=info) when the interface closes. */
void strand_tm_log_summary(const strand_tm_t *tm);

/* Sender side. A rendezvous operation for `owner` (an ep): its id goes in
 * the TMH's app_ctx; NULL when all are in use. */
strand_tm_rndv_op_t *strand_tm_rndv_get(strand_tm_t *tm, void *owner,
                                        uct_completion_t *comp,
                                        uint32_t         *app_ctx_p);
/* give back an operation that was not sent */
void strand_tm_rndv_put(strand_tm_t *tm, strand_tm_rndv_op_t *op);
/* uct_ep_tag_rndv_cancel: forget it, its completion is not called */
ucs_status_t strand_tm_rndv_cancel(strand_tm_t *tm, void *owner, void *op);
/* the FIN of app_ctx arrived: the operation completes with the status
 * the receiver put in it */
void strand_tm_rndv_fin(strand_tm_t *tm, uint32_t app_ctx_be,
                        ucs_status_t status);
/* The transport read the rendezvous of a matched entry (or failed to):
 * the tag completes with length and status, the entry is free. */
void strand_tm_rts_done(strand_tm_t *tm, uint32_t entry, size_t length,
                        ucs_status_t status);
/* The RTS of a rendezvous the receiver reads itself (app_ctx and tag:
 * its TMH's), into buf (at most STRAND_TM_RTS_MAX bytes): its length, or
 * 0 when it does not fit. */
size_t strand_tm_rts_pack(void *buf, uint64_t va, uint32_t length,
                          const void *rkey, unsigned rkey_len,
                          const void *header, unsigned header_length,
                          uint32_t app_ctx_be, uint64_t tag);
/* Parse an RTS payload (len bytes, its TMH's app_ctx and tag): UCS_OK and
 * its parts, or UCS_ERR_INVALID_PARAM when malformed or written over. */
ucs_status_t strand_tm_rts_parse(const void *rts, uint32_t len,
                                 uint32_t app_ctx_be, uint64_t tag,
                                 strand_tm_rts_t *hdr, const void **rkey_p,
                                 const void **header_p);
/* the sender's operation slot an app_ctx names (its rendezvous id) */
static inline uint32_t strand_tm_rndv_slot(uint32_t app_ctx_be)
{
    return be32toh(app_ctx_be) & 0xffff;
}
/* owner failed or is destroyed: its operations complete with status */
void strand_tm_rndv_purge(strand_tm_t *tm, void *owner, ucs_status_t status);

/* Pack and unpack the user header of a rendezvous: the first bytes go in
 * the TMH's reserved bytes, the rest after the rendezvous headers. */
unsigned strand_tm_rndv_priv_pack(struct ibv_tmh *tmh, const void *header,
                                  unsigned header_length,
                                  unsigned max_rndv_data);

/* Immediate data of a tagged message: 32 bits in the WQE's imm, 32 in the
 * TMH's app_ctx; 0 sends no immediate (a SEND, not a SEND_IMM). */
static inline void
strand_tm_imm_pack(uint64_t imm, uint32_t *imm_be, uint32_t *app_ctx_be)
{
    *imm_be     = htobe32((uint32_t)imm);
    *app_ctx_be = htobe32((uint32_t)(imm >> 32));
}

#endif
