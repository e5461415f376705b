/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Block signatures on the device itself, below the transport: a DCI reads
 * one signed 512-byte block from its own DCT through a checking mkey.
 * Configured to expect another CRC seed than the signing mkey writes, the
 * check must fail (a SIG_ERR CQE); configured right, the same mkey must
 * then land the block intact; configured wrong again, whether the mkey
 * reports once more is what the NIC's re-arm rule decides (an mkey that
 * reported stays silent until a UMR carries the error count the driver
 * counted, which rdma-core counts only in its own CQ polling: strand
 * replaces such an mkey); a fresh mkey must report. With --sim the same
 * runs on the software device.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include "dev/dev.h"
#include "mlx5/cqe.h"
#include "mlx5/doorbell.h"
#include "mlx5/sq.h"
#include "mlx5/wqe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HC_SIG_KEY      0x5157c0deull /* the DCT's access key */
#define HC_SIG_BLOCK    512u
#define HC_SIG_WIRE     (HC_SIG_BLOCK + 4) /* a block and its CRC32C */
#define HC_SIG_BUF      4096u
#define HC_SIG_SEED_OK  0xffffffffu
#define HC_SIG_SEED_BAD 0u

typedef struct hc_sig {
    strand_dev_t        *dev;
    strand_dev_channel_t ch;
    strand_dev_cq_t      cq;
    strand_dev_srq_t     srq;
    strand_dev_qp_t      dct, dci;
    strand_dev_mr_t      src_mr, dst_mr;
    strand_dev_mkey_t    sign, check;
    struct mlx5_wqe_av   av;
    unsigned             av_size;
    uint8_t             *src, *dst;
    uint32_t             pi, ci;
    double               timeout;
    /* what is made, for the cleanup */
    int have_ch, have_cq, have_srq, have_dct, have_dci, have_src, have_dst;
    int have_sign, have_check;
} hc_sig_t;

/* The result of one READ: its own CQE and whether a SIG_ERR came first. */
typedef struct hc_sig_read {
    int     done;     /* the READ's CQE came */
    uint8_t opcode;   /* its opcode (MLX5_CQE_REQ: good) */
    uint8_t syndrome; /* an error CQE's */
    int     sig_err;  /* a SIG_ERR CQE came */
} hc_sig_read_t;

static int hc_sig_open_dev(hc_sig_t *s, const hc_machine_t *m)
{
    strand_dev_info_t infos[16];
    unsigned          kind = m->sim ? STRAND_DEV_KIND_SIM : STRAND_DEV_KIND_HW;
    int               i, n = strand_dev_list(1u << kind, infos, 16);

    for (i = 0; i < n; ++i) {
        if (!strcmp(infos[i].name, m->device)) {
            return strand_dev_open(&infos[i], &s->dev);
        }
    }
    return ENODEV;
}

/* Its CQ, a DCT on an SRQ, a DCI, and the AV of the DCT. */
static int hc_sig_queues(hc_sig_t *s)
{
    const strand_dev_ops_t *ops = s->dev->ops;
    strand_dev_dct_attr_t   dct;
    strand_dev_sq_attr_t    dci;
    strand_dev_path_t       path = {0, 0};
    struct ibv_ah_attr      ah;
    int                     err;

    if ((err = ops->create_channel(s->dev, &s->ch)) != 0) {
        return err;
    }
    s->have_ch = 1;
    if ((err = ops->create_cq(s->dev, 64, 64, &s->ch, &s->cq)) != 0) {
        return err;
    }
    s->have_cq = 1;
    if ((err = ops->create_srq(s->dev, 4, 1, &s->srq)) != 0) {
        return err;
    }
    s->have_srq = 1;
    memset(&dct, 0, sizeof(dct));
    dct.cq            = &s->cq;
    dct.srq           = &s->srq;
    dct.access_key    = HC_SIG_KEY;
    dct.min_rnr_timer = 1;
    if ((err = strand_dev_create_dct(s->dev, &dct, &s->dct)) != 0) {
        return err;
    }
    s->have_dct = 1;
    memset(&dci, 0, sizeof(dci));
    dci.send_cq       = &s->cq;
    dci.max_send_wr   = 16;
    dci.max_send_sge  = 2;
    dci.max_inline    = 64;
    dci.timeout       = 14;
    dci.retry_cnt     = 7;
    dci.rnr_retry     = 7;
    dci.max_rd_atomic = 1;
    if ((err = strand_dev_create_dci(s->dev, &dci, &s->dci)) != 0) {
        return err;
    }
    s->have_dci = 1;
    memset(&ah, 0, sizeof(ah));
    strand_dev_set_path(s->dev, &path, &ah);
    if (ah.is_global) {
        ah.grh.dgid = s->dev->caps.gid;
    } else {
        ah.dlid = s->dev->caps.lid;
    }
    if ((err = ops->create_av(s->dev, &ah, &s->av)) != 0) {
        return err;
    }
    s->av.key.dc_key = htobe64(HC_SIG_KEY);
    s->av.dqp_dct    = htobe32((s->dct.qpn & 0xffffff) |
                               (ah.is_global ? MLX5_EXTENDED_UD_AV : 0));
    s->av_size       = ah.is_global ? STRAND_AV_FULL_SIZE : STRAND_AV_BASE_SIZE;
    return 0;
}

/* A signature block of CRC32C with `seed` over the wire domain. */
static void hc_sig_attr(uint32_t seed, struct mlx5dv_sig_block_attr *attr,
                        struct mlx5dv_sig_block_domain *wire,
                        struct mlx5dv_sig_crc          *crc)
{
    memset(attr, 0, sizeof(*attr));
    memset(wire, 0, sizeof(*wire));
    memset(crc, 0, sizeof(*crc));
    crc->type        = MLX5DV_SIG_CRC_TYPE_CRC32C;
    crc->seed        = seed;
    wire->sig_type   = MLX5DV_SIG_TYPE_CRC;
    wire->sig.crc    = crc;
    wire->block_size = MLX5DV_BLOCK_SIZE_512;
    attr->wire       = wire;
    attr->check_mask = MLX5DV_SIG_MASK_CRC32C;
}

static int hc_sig_configure(hc_sig_t *s, strand_dev_mkey_t *mkey,
                            const strand_dev_mr_t *mr, uint8_t *buf, int access,
                            uint32_t seed)
{
    struct mlx5dv_sig_block_attr   attr;
    struct mlx5dv_sig_block_domain wire;
    struct mlx5dv_sig_crc          crc;
    struct ibv_sge sge = {(uintptr_t)buf, HC_SIG_BLOCK, mr->lkey};

    hc_sig_attr(seed, &attr, &wire, &crc);
    return s->dev->ops->mkey_configure(s->dev, mkey, &sge, 1, access, &attr);
}

/* The buffers, the signing mkey (the DCT's side) and a checking one. */
static int hc_sig_memory(hc_sig_t *s)
{
    const strand_dev_ops_t *ops = s->dev->ops;
    unsigned                i;
    int                     err;

    if ((posix_memalign((void **)&s->src, 4096, HC_SIG_BUF) != 0) ||
        (posix_memalign((void **)&s->dst, 4096, HC_SIG_BUF) != 0)) {
        return ENOMEM;
    }
    for (i = 0; i < HC_SIG_BUF; ++i) {
        s->src[i] = (uint8_t)(i * 7 + 3);
    }
    if ((err = ops->reg_mr(s->dev, s->src, HC_SIG_BUF,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
                           &s->src_mr)) != 0) {
        return err;
    }
    s->have_src = 1;
    if ((err = ops->reg_mr(s->dev, s->dst, HC_SIG_BUF, IBV_ACCESS_LOCAL_WRITE,
                           &s->dst_mr)) != 0) {
        return err;
    }
    s->have_dst = 1;
    if ((err = ops->create_mkey(s->dev, 1, 1, strand_dev_mkey_variant(s->dev),
                                &s->sign)) != 0) {
        return err;
    }
    s->have_sign = 1;
    if ((err = hc_sig_configure(s, &s->sign, &s->src_mr, s->src,
                                IBV_ACCESS_REMOTE_READ, HC_SIG_SEED_OK)) != 0) {
        return err;
    }
    err = ops->create_mkey(s->dev, 1, 1, strand_dev_mkey_variant(s->dev),
                           &s->check);
    s->have_check = (err == 0);
    return err;
}

/* One READ of the signed block into the checking mkey, and its CQEs. */
static void hc_sig_read(hc_sig_t *s, hc_sig_read_t *r)
{
    void                     *sq   = s->dci.dv.sq.buf;
    void                     *end  = strand_sq_end(sq, s->dci.dv.sq.wqe_cnt);
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(sq, s->dci.dv.sq.wqe_cnt,
                                                  s->pi);
    void              *seg = strand_sq_next(ctrl, sizeof(*ctrl), sq, end);
    unsigned           ds  = 1 + s->av_size / STRAND_WQE_DS + 2;
    struct mlx5_cqe64 *cqe;
    double             deadline;

    memset(r, 0, sizeof(*r));
    memcpy(seg, &s->av, s->av_size);
    seg = strand_sq_next(seg, s->av_size, sq, end);
    strand_set_raddr_seg(seg, 0, s->sign.key); /* mkeys are zero-based */
    seg = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), sq, end);
    strand_set_data_seg(seg, 0, HC_SIG_WIRE, s->check.key);
    strand_set_ctrl_seg(ctrl, 0, s->pi & 0xffff, MLX5_OPCODE_RDMA_READ,
                        s->dci.qpn, ds, MLX5_WQE_CTRL_CQ_UPDATE, 0);
    s->pi += strand_ds_to_bbs(ds);
    strand_bf_ring_doorbell(s->dci.dv.dbrec, s->dci.bf, s->pi, ctrl);
    if (s->dci.kick != NULL) {
        s->dci.kick(s->dci.kick_arg);
    }
    deadline = hc_now() + s->timeout;
    while (!r->done && (hc_now() < deadline)) {
        cqe = strand_cqe_get(s->cq.dv.buf, s->cq.dv.cqe_cnt,
                             strand_cqe_shift(s->cq.dv.cqe_size), s->ci);
        if (cqe == NULL) {
            if (s->dev->ops->progress != NULL) {
                s->dev->ops->progress(s->dev);
            }
            continue;
        }
        strand_cq_update_ci(s->cq.dv.dbrec, ++s->ci);
        if (strand_cqe_opcode(cqe) == MLX5_CQE_SIG_ERR) {
            r->sig_err = 1; /* the READ's own CQE follows */
            continue;
        }
        r->done   = 1;
        r->opcode = strand_cqe_opcode(cqe);
        if (strand_cqe_is_error(cqe)) {
            r->syndrome = strand_cqe_syndrome(cqe);
        }
    }
}

static const char *
hc_sig_read_str(const hc_sig_read_t *r, char *buf, size_t max)
{
    if (!r->done) {
        snprintf(buf, max, "no completion");
    } else if (r->opcode != MLX5_CQE_REQ) {
        snprintf(buf, max, "completion opcode 0x%x syndrome 0x%x%s", r->opcode,
                 r->syndrome, r->sig_err ? " after a SIG_ERR" : "");
    } else {
        snprintf(buf, max, "%s",
                 r->sig_err ? "SIG_ERR, then its completion" :
                              "a good completion, no SIG_ERR");
    }
    return buf;
}

/* The checking mkey configured with `seed`, a READ through it. */
static int hc_sig_round(hc_sig_t *s, uint32_t seed, hc_sig_read_t *r)
{
    int err;

    memset(s->dst, 0, HC_SIG_BUF);
    err = hc_sig_configure(s, &s->check, &s->dst_mr, s->dst,
                           IBV_ACCESS_LOCAL_WRITE, seed);
    if (err == 0) {
        hc_sig_read(s, r);
    }
    return err;
}

static void hc_sig_rounds(hc_sig_t *s)
{
    const char   *n1 = "integrity SIG_ERR", *n2 = "integrity after SIG_ERR";
    hc_sig_read_t r;
    char          what[128];
    int           err, latched;

    /* a check that expects the wrong seed: every block is bad */
    hc_step("%s", n1);
    if ((err = hc_sig_round(s, HC_SIG_SEED_BAD, &r)) != 0) {
        hc_fail(n1, "mkey_configure: %s", strerror(err));
        return;
    }
    if (!r.sig_err || !r.done) {
        hc_fail(n1, "a block checked with the wrong CRC seed: %s",
                hc_sig_read_str(&r, what, sizeof(what)));
        return;
    }
    hc_ok(n1, "a block checked with the wrong CRC seed: %s",
          hc_sig_read_str(&r, what, sizeof(what)));

    /* the same mkey, right: the block lands */
    hc_step("%s", n2);
    if ((err = hc_sig_round(s, HC_SIG_SEED_OK, &r)) != 0) {
        hc_fail(n2, "mkey_configure again: %s", strerror(err));
        return;
    }
    if (r.sig_err || !r.done || (r.opcode != MLX5_CQE_REQ) ||
        memcmp(s->dst, s->src, HC_SIG_BLOCK)) {
        hc_fail(n2, "the same mkey configured right: %s%s",
                hc_sig_read_str(&r, what, sizeof(what)),
                (r.done && memcmp(s->dst, s->src, HC_SIG_BLOCK)) ?
                        ", the block's bytes wrong" :
                        "");
        return;
    }
    /* the same mkey, wrong again: re-armed or latched */
    if ((err = hc_sig_round(s, HC_SIG_SEED_BAD, &r)) != 0) {
        hc_fail(n2, "mkey_configure a third time: %s", strerror(err));
        return;
    }
    latched = !r.sig_err;
    /* a fresh mkey reports (what strand makes after a bad block) */
    s->dev->ops->destroy_mkey(s->dev, &s->check);
    s->have_check = 0;
    err           = s->dev->ops->create_mkey(s->dev, 1, 1,
                                             strand_dev_mkey_variant(s->dev), &s->check);
    s->have_check = (err == 0);
    if ((err != 0) || ((err = hc_sig_round(s, HC_SIG_SEED_BAD, &r)) != 0)) {
        hc_fail(n2, "a fresh mkey: %s", strerror(err));
        return;
    }
    if (!r.sig_err) {
        hc_fail(n2, "a fresh mkey let a bad block pass: %s",
                hc_sig_read_str(&r, what, sizeof(what)));
        return;
    }
    hc_ok(n2,
          "the same mkey configured right landed the block intact; "
          "configured wrong again it %s; a fresh mkey reported",
          latched ? "stayed silent (latched until the driver counts the "
                    "error: strand replaces such an mkey)" :
                    "reported again (re-armed)");
}

static void hc_sig_cleanup(hc_sig_t *s)
{
    const strand_dev_ops_t *ops;

    if (s->dev == NULL) {
        return;
    }
    ops = s->dev->ops;
    if (s->have_check) {
        ops->destroy_mkey(s->dev, &s->check);
    }
    if (s->have_sign) {
        ops->destroy_mkey(s->dev, &s->sign);
    }
    if (s->have_dst) {
        ops->dereg_mr(s->dev, &s->dst_mr);
    }
    if (s->have_src) {
        ops->dereg_mr(s->dev, &s->src_mr);
    }
    if (s->have_dci) {
        ops->destroy_qp(s->dev, &s->dci);
    }
    if (s->have_dct) {
        ops->destroy_qp(s->dev, &s->dct);
    }
    if (s->have_srq) {
        ops->destroy_srq(s->dev, &s->srq);
    }
    if (s->have_cq) {
        ops->destroy_cq(s->dev, &s->cq);
    }
    if (s->have_ch) {
        ops->destroy_channel(s->dev, &s->ch);
    }
    ops->close(s->dev);
}

void hc_check_signatures(const hc_machine_t *m, double timeout)
{
    const char                   *name = "integrity SIG_ERR";
    const struct mlx5dv_sig_caps *c;
    hc_sig_t                      s;
    int                           err;

    memset(&s, 0, sizeof(s));
    s.timeout = timeout;
    hc_step("the device layer for signatures");
    err = hc_sig_open_dev(&s, m);
    if (err != 0) {
        hc_fail(name, "opening %s below the transport: %s", m->device,
                strerror(err));
        return;
    }
    c = &s.dev->caps.sig_caps;
    if (!(c->block_prot & MLX5DV_SIG_PROT_CAP_CRC) ||
        !(c->crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC32C) ||
        !(c->block_size & MLX5DV_BLOCK_SIZE_CAP_512)) {
        hc_off(name, "the device has no CRC32C block signatures of 512 "
                     "bytes: integrity-checked GETs cannot be used");
        hc_off("integrity after SIG_ERR", "not judged: no signatures");
    } else if ((err = hc_sig_queues(&s)) != 0) {
        hc_fail(name, "a DCI and a DCT: %s", strerror(err));
    } else if ((err = hc_sig_memory(&s)) != 0) {
        hc_fail(name, "buffers and signature mkeys: %s", strerror(err));
    } else {
        hc_sig_rounds(&s);
    }
    hc_sig_cleanup(&s);
    free(s.src);
    free(s.dst);
}
