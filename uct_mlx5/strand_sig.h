/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integrity-checked zero-copy GETs (UCX_DC_STRAND_INTEGRITY): the data of a
 * GET leaves the sender through a signature mkey that adds a checksum to
 * every 512-byte block on the wire (made by the MD for each registration a
 * peer gets a key to) and lands through mkeys that check and strip them.
 *
 * A GET is read in pieces of a few blocks (INTEGRITY_READ_SIZE), each an
 * RDMA READ into a landing mkey of its own from a pool: a bad block is
 * reported in a SIG_ERR CQE naming that mkey and the first bad block, and
 * only its piece is read again from that block on (the blocks before it
 * passed their check), a bounded number of times; after that the GET
 * fails with UCS_ERR_IO_ERROR. A damaged byte never completes as success.
 *
 * Block boundaries are those of the sender's registration, so a GET that
 * starts or ends inside a block reads the whole blocks around it; the
 * bytes outside its range land in a scratch buffer.
 *
 * Transport-neutral: knows no DCI and no RC QP; the transport posts the
 * READ of each piece and reports its completion (docs/integrity.md).
 */
#ifndef STRAND_SIG_H_
#define STRAND_SIG_H_

#include "dev/dev.h"
#include "strand_rkey.h"

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/status.h>
#include <stdint.h>

typedef enum strand_integrity_kind {
    STRAND_INTEGRITY_OFF,
    STRAND_INTEGRITY_CRC32C, /* a CRC32C after every block */
    STRAND_INTEGRITY_T10DIF, /* a T10-DIF field (CRC16 guard) */
    STRAND_INTEGRITY_LAST
} strand_integrity_kind_t;

extern const char *strand_integrity_kind_names[];

#define STRAND_INTEGRITY_BLOCK   512u /* data bytes per signed block */
#define STRAND_INTEGRITY_MAX_IOV 16   /* user buffers of one GET */

/* The block signature of a kind, with the storage its pointers need. */
typedef struct strand_integrity_sig {
    struct mlx5dv_sig_block_attr   attr;
    struct mlx5dv_sig_block_domain wire;
    struct mlx5dv_sig_crc          crc;
    struct mlx5dv_sig_t10dif       dif;
} strand_integrity_sig_t;

void strand_integrity_sig_init(strand_integrity_sig_t *s,
                               strand_integrity_kind_t kind);
/* bytes of the signature field per block on the wire */
unsigned strand_integrity_sig_size(strand_integrity_kind_t kind);
/* the device can sign and check blocks of this kind */
int strand_integrity_supported(const strand_dev_caps_t *caps,
                               strand_integrity_kind_t  kind);

typedef struct strand_integrity_req strand_integrity_req_t;

/* One piece of a GET in flight: its landing mkey and what it reads. */
typedef struct strand_integrity_piece {
    strand_dev_mkey_t              mkey;
    strand_integrity_req_t        *req; /* NULL: free */
    uint8_t                        bad; /* a SIG_ERR CQE named the mkey:
                                           it is replaced before its
                                           next configuration */
    uint8_t                        retries;
    uint16_t                       num_sge;
    uint64_t                       bad_off; /* the SIG_ERR CQE's offset of
                                               the first bad block */
    uint64_t                       block, end_block; /* what it reads */
    struct ibv_sge                *sge;              /* the landing layout */
    uint64_t                       wire_off;         /* in the signing mkey */
    uint32_t                       wire_len;         /* blocks and signatures */
    struct strand_integrity_piece *next; /* free list, reads again */
} strand_integrity_piece_t;

/* One GET: the user's buffers and completion, the remote range, which
 * pieces are still to be read. The transport's fields are ep, comp and
 * tmp_reg. */
struct strand_integrity_req {
    uct_iov_t                 iov[STRAND_INTEGRITY_MAX_IOV];
    uint32_t                  lkeys[STRAND_INTEGRITY_MAX_IOV];
    size_t                    iovcnt;
    uint32_t                  sig_rkey;
    uint64_t                  length;     /* of the remote registration */
    uint64_t                  off, end;   /* the GET's range in it */
    uint64_t                  next_block; /* first block not read yet */
    uint64_t                  end_block;
    unsigned                  in_flight; /* pieces posted */
    strand_integrity_piece_t *again;     /* pieces to read again */
    ucs_status_t              status;    /* the first failure */
    void                     *ep;        /* the transport's; NULL: gone */
    uct_completion_t         *comp;
    void                     *tmp_reg;
    strand_integrity_req_t   *next; /* the transport's queue */
    uint8_t                   queued;
    ucs_list_link_t           active; /* in ig->active from a good init
                                         to finish (next NULL: not) */
};

typedef struct strand_integrity {
    strand_dev_t              *dev;
    strand_integrity_kind_t    kind;
    strand_integrity_sig_t     sig;
    unsigned                   max_sge;      /* user buffers per GET */
    unsigned                   max_pieces;   /* in flight at most */
    unsigned                   piece_blocks; /* blocks per piece */
    unsigned                   max_retries;  /* reads again of a piece */
    strand_integrity_piece_t **pieces;       /* created so far */
    unsigned                   num_pieces;
    strand_integrity_piece_t  *free;
    ucs_list_link_t            active; /* GETs not finished yet */
    /* landing zone of the bytes of the first and last block outside a
     * GET's range (contents never used) */
    void           *scratch;
    strand_dev_mr_t scratch_mr;
    int             have_scratch;
    /* counters (the VFS file integrity, and a line at close) */
    uint64_t checked;      /* GETs that completed good */
    uint64_t reads;        /* pieces read, first time */
    uint64_t bad;          /* reads with a bad block */
    uint64_t reread;       /* pieces read again */
    uint64_t failed;       /* GETs failed */
    uint64_t unchecked;    /* GETs of keys without
                              signing mkey (a peer
                              without integrity) */
    uint64_t sigerr_other; /* SIG_ERR CQEs of no piece */
    uint64_t renewed;      /* landing mkeys replaced after
                              their signature error */
} strand_integrity_t;

ucs_status_t strand_integrity_init(strand_integrity_t *ig, strand_dev_t *dev,
                                   strand_integrity_kind_t kind,
                                   unsigned max_sge, unsigned max_pieces,
                                   size_t read_size, unsigned max_retries);
void         strand_integrity_cleanup(strand_integrity_t *ig);

/* Whether a GET not finished yet may still write into [buf, buf + len):
 * a tag posted there could have a rendezvous request matched into it and
 * written over before it is read (tag.c). */
int strand_integrity_writes_into(const strand_integrity_t *ig, const void *buf,
                                 size_t len);

/* A GET of the user's iov (its lkeys) from rk at remote_addr into req.
 * UCS_ERR_INVALID_PARAM when the range is outside the remote registration
 * or of another signature. */
ucs_status_t
strand_integrity_req_init(strand_integrity_t *ig, strand_integrity_req_t *req,
                          const strand_rkey_sig_t *rk, uint64_t remote_addr,
                          const uct_iov_t *iov, size_t iovcnt,
                          const uint32_t *lkeys);

/* The next piece of req to read (one to read again first), its landing
 * mkey configured: UCS_OK, UCS_ERR_NO_RESOURCE (no landing mkey free now)
 * or UCS_ERR_NO_ELEM (nothing left to read, or the GET failed). */
ucs_status_t strand_integrity_next_piece(strand_integrity_t        *ig,
                                         strand_integrity_req_t    *req,
                                         strand_integrity_piece_t **piece_p);
/* a landing mkey could be had now */
int strand_integrity_piece_available(const strand_integrity_t *ig);

/* The READ of a piece completed with `status`: the piece is free again,
 * or waits in req->again to be read again. */
void strand_integrity_piece_done(strand_integrity_t       *ig,
                                 strand_integrity_piece_t *piece,
                                 ucs_status_t              status);
/* every piece of req is read, or it failed and none is in flight */
int strand_integrity_req_done(const strand_integrity_req_t *req);
/* the end of req: counts it; its pieces to read again go back */
void strand_integrity_req_finish(strand_integrity_t     *ig,
                                 strand_integrity_req_t *req);

/* A SIG_ERR CQE (opcode MLX5_CQE_SIG_ERR): marks the piece whose mkey it
 * names. 0, or -1 when it names no mkey of ours. */
int strand_integrity_sigerr(strand_integrity_t      *ig,
                            const struct mlx5_cqe64 *cqe);

/* one line of counters, for logs and VFS */
void strand_integrity_summary(const strand_integrity_t *ig, char *buf,
                              size_t max);

#endif
