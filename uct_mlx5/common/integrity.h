/*
 * Integrity-checked zero-copy GETs (UCX_DC_STRAND_INTEGRITY): the data of a
 * GET leaves the sender through a signature mkey that adds a checksum to
 * every 512-byte block on the wire (made by the MD for each registration a
 * peer gets a key to) and lands through one that checks and strips them
 * (taken from a pool here, configured per GET over the user's buffers). A
 * bad block is reported in a SIG_ERR CQE naming the landing mkey; the GET
 * is read again, a bounded number of times, and fails with
 * UCS_ERR_IO_ERROR after that: a damaged byte never completes as success.
 *
 * Block boundaries are those of the sender's registration, so a GET that
 * starts or ends inside a block reads the whole blocks around it; the
 * bytes before and after its range land in a scratch buffer.
 *
 * Transport-neutral: knows no DCI and no RC QP (docs/integrity.md).
 */
#ifndef STRAND_COMMON_INTEGRITY_H_
#define STRAND_COMMON_INTEGRITY_H_

#include "dev/dev.h"

#include <uct/api/uct.h>
#include <ucs/type/status.h>
#include <stdint.h>

typedef enum strand_integrity_kind {
    STRAND_INTEGRITY_OFF,
    STRAND_INTEGRITY_CRC32C,    /* a CRC32C after every block */
    STRAND_INTEGRITY_T10DIF,    /* a T10-DIF field (CRC16 guard) */
    STRAND_INTEGRITY_LAST
} strand_integrity_kind_t;

extern const char *strand_integrity_kind_names[];

#define STRAND_INTEGRITY_BLOCK  512u   /* data bytes per signed block */

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
                               strand_integrity_kind_t kind);

/* A remote key whose memory can be read signed: the registration's plain
 * key, the key of its generating mkey, the kind, and the registration the
 * mkey covers (its block grid starts at base). uct_rkey_t carries a
 * pointer to it with STRAND_RKEY_SIG_TAG set (user pointers never have
 * bit 63), plain keys are 32 bits. */
typedef struct strand_rkey_sig {
    uint32_t rkey;
    uint32_t sig_rkey;
    uint8_t  kind;
    uint64_t base;
    uint64_t length;
} strand_rkey_sig_t;

#define STRAND_RKEY_SIG_TAG (1ull << 63)

static inline const strand_rkey_sig_t *strand_rkey_sig(uct_rkey_t rkey)
{
    return (rkey & STRAND_RKEY_SIG_TAG) ?
           (const strand_rkey_sig_t*)(uintptr_t)(rkey & ~STRAND_RKEY_SIG_TAG) :
           NULL;
}

/* the key of plain RDMA and atomics */
static inline uint32_t strand_rkey_plain(uct_rkey_t rkey)
{
    return (rkey & STRAND_RKEY_SIG_TAG) ? strand_rkey_sig(rkey)->rkey :
                                          (uint32_t)rkey;
}

/* One checked GET in flight: its landing mkey, what it reads, and the
 * transport's context (the endpoint, the user's completion). */
typedef struct strand_integrity_get {
    strand_dev_mkey_t  mkey;
    uint8_t            bad;        /* a SIG_ERR CQE named the mkey since it
                                      was configured */
    uint8_t            retries;
    uint8_t            in_use;
    uint16_t           num_sge;
    struct ibv_sge    *sge;        /* the landing layout */
    uint32_t           sig_rkey;   /* the sender's generating mkey */
    uint64_t           wire_off;   /* where the blocks start in it */
    uint32_t           wire_len;   /* blocks and their signatures */
    size_t             length;     /* the user's bytes */
    void              *ep;         /* the transport's */
    uct_completion_t  *comp;
    void              *tmp_reg;
    struct strand_integrity_get *next; /* free list, retry queue */
} strand_integrity_get_t;

typedef struct strand_integrity {
    strand_dev_t            *dev;
    strand_integrity_kind_t  kind;
    strand_integrity_sig_t   sig;
    unsigned                 max_sge;     /* user iov entries per GET */
    unsigned                 max_gets;    /* in flight at most */
    unsigned                 max_retries; /* reads again before failing */
    strand_integrity_get_t **gets;        /* created so far */
    unsigned                 num_gets;
    strand_integrity_get_t  *free;
    /* landing zone of the bytes of the first and last block outside the
     * GET's range (contents never used) */
    void                    *scratch;
    strand_dev_mr_t          scratch_mr;
    int                      have_scratch;
    /* counters (summary at close, the VFS file integrity) */
    uint64_t                 checked;     /* GETs that completed good */
    uint64_t                 bad;         /* reads that had a bad block */
    uint64_t                 reread;      /* reads started again */
    uint64_t                 failed;      /* GETs failed after retries */
    uint64_t                 unchecked;   /* GETs of keys with no
                                             signature (a peer without
                                             integrity) */
    uint64_t                 sigerr_other;/* SIG_ERR CQEs of no GET */
} strand_integrity_t;

ucs_status_t strand_integrity_init(strand_integrity_t *ig, strand_dev_t *dev,
                                   strand_integrity_kind_t kind,
                                   unsigned max_sge, unsigned max_gets,
                                   unsigned max_retries);
void strand_integrity_cleanup(strand_integrity_t *ig);

/* A checked GET of the user's iov (its lkeys) from rk at remote_addr: a
 * landing mkey configured for it, the blocks to read. UCS_ERR_NO_RESOURCE
 * when max_gets are in flight; UCS_ERR_INVALID_PARAM when the range is
 * outside the remote registration. */
ucs_status_t strand_integrity_get_start(strand_integrity_t *ig,
                                        const strand_rkey_sig_t *rk,
                                        uint64_t remote_addr,
                                        const uct_iov_t *iov, size_t iovcnt,
                                        const uint32_t *lkeys,
                                        strand_integrity_get_t **get_p);

/* A SIG_ERR CQE (opcode MLX5_CQE_SIG_ERR): marks the GET whose mkey it
 * names. 0, or -1 when it names no mkey of ours. */
int strand_integrity_sigerr(strand_integrity_t *ig,
                            const struct mlx5_cqe64 *cqe);

/* The read of `get` completed: UCS_OK (every block good), UCS_INPROGRESS
 * (a bad block: the mkey is ready for the same read again), or
 * UCS_ERR_IO_ERROR (bad after max_retries reads again). */
ucs_status_t strand_integrity_get_check(strand_integrity_t *ig,
                                        strand_integrity_get_t *get);
void strand_integrity_get_release(strand_integrity_t *ig,
                                  strand_integrity_get_t *get);

/* one line of counters, for logs and VFS */
void strand_integrity_summary(const strand_integrity_t *ig, char *buf,
                              size_t max);

#endif
