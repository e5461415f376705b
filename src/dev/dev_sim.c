/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `sim` backend: the device layer over the software mlx5 device.
 */
#include "dev.h"

#include "sim/smlx5.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV_SIM_MAX_CQS 64

typedef struct dev_sim {
    smlx5_context_t *ctx;
    smlx5_pd_t      *pd;
    strand_dev_cq_t *cqs[DEV_SIM_MAX_CQS]; /* to map CQ events back */
} dev_sim_t;

static int dev_sim_list(strand_dev_info_t *out, int max)
{
    if (max < 1) {
        return 0;
    }
    memset(out, 0, sizeof(*out));
    strncpy(out->name, SMLX5_DEV_NAME, sizeof(out->name) - 1);
    out->kind      = STRAND_DEV_KIND_SIM;
    out->num_ports = 1;
    return 1;
}

static uint32_t dev_sim_mtu_bytes(enum ibv_mtu mtu)
{
    return 128u << mtu;
}

static int dev_sim_query_gid_ex(void *ctx, uint8_t port, uint32_t index,
                                struct ibv_gid_entry *entry)
{
    return smlx5_query_gid_ex(ctx, port, index, entry);
}

static void dev_sim_close(strand_dev_t *dev)
{
    dev_sim_t *s = dev->priv;

    if (s->pd != NULL) {
        smlx5_dealloc_pd(s->pd);
    }
    if (s->ctx != NULL) {
        smlx5_close_device(s->ctx);
    }
    free(s);
    free(dev);
}

static int dev_sim_open(const strand_dev_info_t *info, strand_dev_t **dev_p)
{
    smlx5_device_caps_t  caps;
    struct ibv_port_attr pa;
    strand_dev_t        *dev;
    dev_sim_t           *s;
    int                  ret;

    if (strcmp(info->name, SMLX5_DEV_NAME)) {
        return ENODEV;
    }
    dev = calloc(1, sizeof(*dev));
    s   = calloc(1, sizeof(*s));
    if ((dev == NULL) || (s == NULL)) {
        free(dev);
        free(s);
        return ENOMEM;
    }
    dev->ops  = &strand_dev_sim_ops;
    dev->info = *info;
    dev->priv = s;

    s->ctx = smlx5_open_device(info->name);
    if (s->ctx == NULL) {
        ret = errno ? errno : ENODEV;
        goto err;
    }
    s->pd = smlx5_alloc_pd(s->ctx);
    if (s->pd == NULL) {
        ret = ENOMEM;
        goto err;
    }
    ret = smlx5_query_device(s->ctx, &caps);
    if (ret == 0) {
        ret = smlx5_query_port(s->ctx, SMLX5_PORT_NUM, &pa);
    }
    if (ret == 0) {
        ret = strand_dev_pick_gid(s->ctx, dev_sim_query_gid_ex, SMLX5_PORT_NUM,
                                  pa.link_layer, pa.gid_tbl_len,
                                  &dev->caps.gid_index, &dev->caps.gid);
    }
    if (ret != 0) {
        goto err;
    }

    dev->caps.max_qp_wr        = caps.attr.max_qp_wr;
    dev->caps.max_sge          = caps.attr.max_sge;
    dev->caps.max_inline       = caps.max_inline_data;
    dev->caps.max_mr_size_log2 = 63 - __builtin_clzll(caps.attr.max_mr_size);
    dev->caps.mtu              = dev_sim_mtu_bytes(pa.active_mtu);
    dev->caps.port_num         = SMLX5_PORT_NUM;
    dev->caps.link_layer       = pa.link_layer;
    dev->caps.lid              = pa.lid;
    /* the HCA's atomic capabilities, as the hw backend reads them through
     * DEVX (not verbs' atomic_cap, which says NONE in big-endian mode) */
    dev->caps.atomics        = !!(caps.flags & SMLX5_CAP_ATOMICS);
    dev->caps.masked_atomics = dev->caps.atomics &&
                               (caps.flags & SMLX5_CAP_MASKED_ATOMICS);
    dev->caps.atomic_reply_be64         = (caps.atomic_mode8b == 0);
    dev->caps.atomic_reply_be32         = 1;
    dev->caps.dci_max_log_num_concurent = caps.dci_max_log_num_concurent;
    dev->caps.dci_max_log_num_errored   = caps.dci_max_log_num_errored;
    dev->caps.tm_max_num_tags           = caps.tm_max_num_tags;
    dev->caps.tm_max_ops                = caps.tm_max_ops;
    dev->caps.tm_max_rndv_hdr_size      = caps.tm_max_rndv_hdr_size;
    dev->caps.max_rd_atomic             = caps.attr.max_qp_rd_atom;
    dev->caps.sig_caps                  = caps.sig_caps;
    dev->caps.sig_pipelining = !!(caps.flags & SMLX5_CAP_SIG_PIPELINING);
    dev->caps.devx           = caps.devx;
    dev->caps.port_tclass    = caps.port_tclass;
    dev->async_fd            = smlx5_async_fd(s->ctx);
    /* the software device is on no bus: every CPU is as near as any */
    strand_dev_locality_all(&dev->locality);
    *dev_p = dev;
    return 0;

err:
    dev_sim_close(dev);
    return ret;
}

static int dev_sim_reg_mr(strand_dev_t *dev, void *addr, size_t len, int access,
                          strand_dev_mr_t *mr)
{
    dev_sim_t  *s   = dev->priv;
    smlx5_mr_t *smr = smlx5_reg_mr(s->pd, addr, len, access);

    if (smr == NULL) {
        return errno ? errno : ENOMEM;
    }
    mr->h    = smr;
    mr->lkey = smlx5_mr_lkey(smr);
    mr->rkey = smlx5_mr_rkey(smr);
    return 0;
}

static int dev_sim_dereg_mr(strand_dev_t *dev, strand_dev_mr_t *mr)
{
    return smlx5_dereg_mr(mr->h);
}

static int dev_sim_create_channel(strand_dev_t *dev, strand_dev_channel_t *ch)
{
    dev_sim_t       *s   = dev->priv;
    smlx5_channel_t *sch = smlx5_create_comp_channel(s->ctx);

    if (sch == NULL) {
        return errno ? errno : ENOMEM;
    }
    ch->h  = sch;
    ch->fd = smlx5_channel_fd(sch);
    return 0;
}

static int dev_sim_destroy_channel(strand_dev_t *dev, strand_dev_channel_t *ch)
{
    return smlx5_destroy_comp_channel(ch->h);
}

static void dev_sim_arm_kick(void *arg)
{
    smlx5_cq_arm_doorbell(arg);
}

static int dev_sim_create_cq(strand_dev_t *dev, int cqe, unsigned cqe_size,
                             strand_dev_channel_t *ch, strand_dev_cq_t *cq)
{
    dev_sim_t  *s = dev->priv;
    smlx5_cq_t *scq;
    unsigned    i;

    for (i = 0; (i < DEV_SIM_MAX_CQS) && (s->cqs[i] != NULL); ++i) {
    }
    if (i == DEV_SIM_MAX_CQS) {
        return ENOMEM;
    }
    scq = smlx5_create_cq_size(s->ctx, cqe, (ch != NULL) ? ch->h : NULL,
                               cqe_size);
    if (scq == NULL) {
        return errno ? errno : ENOMEM;
    }
    cq->h            = scq;
    cq->arm_kick     = dev_sim_arm_kick;
    cq->arm_kick_arg = scq;
    s->cqs[i]        = cq;
    return smlx5_cq_dv(scq, &cq->dv);
}

static int dev_sim_destroy_cq(strand_dev_t *dev, strand_dev_cq_t *cq)
{
    dev_sim_t *s = dev->priv;
    unsigned   i;
    int        ret;

    ret = smlx5_destroy_cq(cq->h);
    if (ret == 0) {
        for (i = 0; i < DEV_SIM_MAX_CQS; ++i) {
            if (s->cqs[i] == cq) {
                s->cqs[i] = NULL;
            }
        }
    }
    return ret;
}

static int dev_sim_get_cq_event(strand_dev_t *dev, strand_dev_channel_t *ch,
                                strand_dev_cq_t **cq_p)
{
    dev_sim_t  *s = dev->priv;
    smlx5_cq_t *scq;
    unsigned    i;
    int         ret;

    ret = smlx5_get_cq_event(ch->h, &scq);
    if (ret != 0) {
        return ret;
    }
    for (i = 0; i < DEV_SIM_MAX_CQS; ++i) {
        if ((s->cqs[i] != NULL) && (s->cqs[i]->h == scq)) {
            *cq_p = s->cqs[i];
            return 0;
        }
    }
    return EAGAIN; /* a CQ destroyed since */
}

static int dev_sim_create_av(strand_dev_t *dev, const struct ibv_ah_attr *attr,
                             struct mlx5_wqe_av *av)
{
    return smlx5_create_av(((dev_sim_t *)dev->priv)->pd, attr, av);
}

static int dev_sim_create_srq(strand_dev_t *dev, uint32_t max_wr,
                              uint32_t max_sge, strand_dev_srq_t *srq)
{
    dev_sim_t            *s = dev->priv;
    smlx5_srq_init_attr_t attr;
    smlx5_srq_t          *ssrq;

    memset(&attr, 0, sizeof(attr));
    attr.max_wr  = max_wr;
    attr.max_sge = max_sge;
    ssrq         = smlx5_create_srq(s->pd, &attr);
    if (ssrq == NULL) {
        return errno ? errno : ENOMEM;
    }
    srq->h       = ssrq;
    srq->wqe_cnt = attr.max_wr + 1; /* the list's sentinel included */
    srq->max_sge = attr.max_sge;
    return smlx5_srq_dv(ssrq, &srq->dv);
}

static void dev_sim_qp_wrap(strand_dev_qp_t *qp, smlx5_qp_t *sqp);

/* the QP's queues as mlx5dv_init_obj gives them, and its register: the
 * provider's state of it (one software NIC per process: every device
 * opened in it shares its registers, as QPs of one rdma-core context share
 * its struct mlx5_bf) */
static int dev_sim_qp_view(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    int ret = smlx5_qp_dv(qp->h, &qp->dv);

    qp->bf = ((ret == 0) && (qp->dv.bf.reg != NULL)) ? smlx5_qp_bf(qp->h) :
                                                       NULL;
    return ret;
}

static int dev_sim_create_td(strand_dev_t *dev, strand_dev_td_t *td)
{
    dev_sim_t *s = dev->priv;

    td->h  = smlx5_alloc_td(s->ctx);
    td->pd = NULL;
    return (td->h != NULL) ? 0 : (errno ? errno : ENOMEM);
}

static int dev_sim_destroy_td(strand_dev_t *dev, strand_dev_td_t *td)
{
    return smlx5_dealloc_td(td->h);
}

static int dev_sim_create_tm_srq(strand_dev_t *dev, uint32_t max_wr,
                                 uint32_t                    max_sge,
                                 const strand_dev_tm_attr_t *tm,
                                 strand_dev_srq_t *srq, strand_dev_qp_t *cmd_qp)
{
    dev_sim_t            *s = dev->priv;
    smlx5_srq_init_attr_t attr;
    smlx5_srq_t          *ssrq;
    smlx5_qp_t           *cqp;
    int                   ret;

    memset(&attr, 0, sizeof(attr));
    attr.max_wr       = max_wr;
    attr.max_sge      = max_sge;
    attr.max_num_tags = tm->max_num_tags;
    attr.max_ops      = tm->max_ops;
    attr.cq           = tm->cq->h;
    attr.td           = (tm->td != NULL) ? tm->td->h : NULL;
    ssrq              = smlx5_create_srq(s->pd, &attr);
    if (ssrq == NULL) {
        return errno ? errno : ENOMEM;
    }
    srq->h       = ssrq;
    srq->wqe_cnt = attr.max_wr + 1;
    srq->max_sge = attr.max_sge;
    cqp          = smlx5_srq_cmd_qp(ssrq);
    ret          = smlx5_srq_dv(ssrq, &srq->dv);
    dev_sim_qp_wrap(cmd_qp, cqp);
    if (ret == 0) {
        ret = dev_sim_qp_view(dev, cmd_qp);
    }
    if (ret != 0) {
        smlx5_destroy_srq(ssrq);
        return ret;
    }
    return 0;
}

static int dev_sim_destroy_srq(strand_dev_t *dev, strand_dev_srq_t *srq)
{
    return smlx5_destroy_srq(srq->h);
}

static int8_t dev_sim_kick(void *arg)
{
    smlx5_qp_doorbell(arg);
    return 0;
}

/* A device QP whose doorbell the transport rings (the software device then
 * runs its requester at once). */
static void dev_sim_qp_wrap(strand_dev_qp_t *qp, smlx5_qp_t *sqp)
{
    qp->h        = sqp;
    qp->qpn      = smlx5_qp_num(sqp);
    qp->kick     = dev_sim_kick;
    qp->kick_arg = sqp;
}

/* The software device's QP of init's type, in RESET (dev_qp.c brings it
 * up). */
static int dev_sim_create_qp(strand_dev_t               *dev,
                             const strand_dev_qp_init_t *init,
                             strand_dev_qp_t            *qp)
{
    static const uint8_t types[] = {[STRAND_DEV_QPT_DCI] = SMLX5_QPT_DCI,
                                    [STRAND_DEV_QPT_DCT] = SMLX5_QPT_DCT,
                                    [STRAND_DEV_QPT_RC]  = SMLX5_QPT_RC};
    dev_sim_t           *s       = dev->priv;
    smlx5_qp_init_attr_t a;
    smlx5_qp_t          *sqp;

    memset(&a, 0, sizeof(a));
    a.type    = types[init->type];
    a.send_cq = init->send_cq->h;
    a.recv_cq = (init->type == STRAND_DEV_QPT_DCI) ? NULL : init->recv_cq->h;
    a.srq     = (init->srq != NULL) ? init->srq->h : NULL;
    a.cap.max_send_wr     = init->max_send_wr;
    a.cap.max_send_sge    = init->max_send_sge;
    a.cap.max_inline_data = init->max_inline;
    a.log_num_concurent   = init->log_num_concurent;
    a.log_num_errored     = init->log_num_errored;
    a.dc_access_key       = init->dc_access_key;
    a.td                  = (init->td != NULL) ? init->td->h : NULL;
    /* a DCI: READ responses always land in their buffers; a DCT and an RC
     * QP: small messages into the receive CQE only when asked (requester
     * scatter stays off: no sq_sig_all, no ALLOW) */
    if (init->type != STRAND_DEV_QPT_DCI) {
        a.create_flags = (init->scatter_to_cqe ?
                                  0 :
                                  MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) |
                         (init->sig_pipelining ?
                                  MLX5DV_QP_CREATE_SIG_PIPELINING :
                                  0);
    }
    sqp = smlx5_create_qp(s->pd, &a);
    if (sqp == NULL) {
        return errno ? errno : ENOMEM;
    }
    qp->type = init->type;
    if (init->type == STRAND_DEV_QPT_DCT) {
        qp->h        = sqp;
        qp->qpn      = 0; /* the DCT number: from RTR on (qp_view) */
        qp->kick     = NULL;
        qp->kick_arg = NULL;
    } else {
        dev_sim_qp_wrap(qp, sqp);
    }
    return 0;
}

static int dev_sim_modify_qp(strand_dev_t *dev, strand_dev_qp_t *qp,
                             struct ibv_qp_attr *attr, int mask)
{
    return smlx5_modify_qp(qp->h, attr, mask);
}

static int dev_sim_qp_view_of(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    if (qp->type == STRAND_DEV_QPT_DCT) {
        qp->qpn = smlx5_dct_num(qp->h);
    }
    return dev_sim_qp_view(dev, qp);
}

static int dev_sim_destroy_qp(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    return smlx5_destroy_qp(qp->h);
}

static int dev_sim_qp_state(strand_dev_t *dev, strand_dev_qp_t *qp,
                            enum ibv_qp_state *state)
{
    struct ibv_qp_attr a;
    int                ret = smlx5_query_qp(qp->h, &a, IBV_QP_STATE, NULL);

    if (ret == 0) {
        *state = a.qp_state;
    }
    return ret;
}

static int dev_sim_dci_stream_id_reset(strand_dev_t *dev, strand_dev_qp_t *qp,
                                       uint16_t stream_id)
{
    return smlx5_dci_stream_id_reset(qp->h, stream_id);
}

static int dev_sim_query_sqd(strand_dev_t *dev, strand_dev_qp_t *qp,
                             uint32_t *wqebb_counter)
{
    return smlx5_qp_query_sqd(qp->h, wqebb_counter);
}

/* ------------------------------------------------------------- mkeys */

static int dev_sim_create_mkey(strand_dev_t *dev, uint16_t max_entries,
                               int signature, uint8_t variant,
                               strand_dev_mkey_t *mkey)
{
    dev_sim_t    *s = dev->priv;
    smlx5_mkey_t *mk;

    mk = smlx5_create_mkey_variant(
            s->pd,
            MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                    (signature ? MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE :
                                 0),
            max_entries, variant);
    if (mk == NULL) {
        return errno ? errno : ENOMEM;
    }
    mkey->h   = mk;
    mkey->key = smlx5_mkey_key(mk);
    return 0;
}

static int dev_sim_destroy_mkey(strand_dev_t *dev, strand_dev_mkey_t *mkey)
{
    return smlx5_destroy_mkey(mkey->h);
}

static int dev_sim_mkey_configure(strand_dev_t *dev, strand_dev_mkey_t *mkey,
                                  const struct ibv_sge *sge, unsigned num_sge,
                                  int                                 access,
                                  const struct mlx5dv_sig_block_attr *sig)
{
    smlx5_mkey_conf_t c;

    if (num_sge > UINT16_MAX) {
        return EINVAL;
    }
    memset(&c, 0, sizeof(c));
    c.conf_flags   = (sig == NULL) ? MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR : 0;
    c.set_access   = 1;
    c.access_flags = (uint32_t)access;
    c.num_sges     = (uint16_t)num_sge;
    c.sge          = sge;
    c.sig          = sig;
    return smlx5_mkey_configure(mkey->h, &c);
}

static void dev_sim_progress(strand_dev_t *dev)
{
    smlx5_progress(((dev_sim_t *)dev->priv)->ctx);
}

static int dev_sim_get_async_event(strand_dev_t *dev, strand_dev_event_t *ev)
{
    dev_sim_t          *s = dev->priv;
    smlx5_async_event_t sev;
    int                 ret;

    ret = smlx5_get_async_event(s->ctx, &sev);
    if (ret != 0) {
        return ret;
    }
    ev->type = sev.type;
    switch (sev.type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        /* the number, not the QP: it may be destroyed by now */
        ev->qpn = sev.qp_num;
        break;
    default:
        ev->qpn = 0;
        break;
    }
    return 0;
}

static int dev_sim_query_perf(strand_dev_t *dev, strand_dev_perf_t *perf)
{
    static const char *const how[] = {
            [SMLX5_PERF_MEASURED] = "measured",
            [SMLX5_PERF_OVERRIDE] = "STRAND_SIM_PERF",
            [SMLX5_PERF_FIXED]    = "fixed values, measuring failed",
    };
    dev_sim_t   *s = dev->priv;
    smlx5_perf_t sp;
    int          ret;

    ret = smlx5_query_perf(s->ctx, &sp);
    if (ret != 0) {
        return ret;
    }
    memset(perf, 0, sizeof(*perf));
    perf->latency        = sp.latency_ns * 1e-9;
    perf->latency_per_ep = 0; /* DCIs are shared: nothing per peer */
    perf->bandwidth      = sp.bw_mbs * 1e6;
    perf->send_overhead  = sp.overhead_ns * 1e-9;
    perf->recv_overhead  = sp.recv_overhead_ns * 1e-9;
    switch (sp.source) {
    case SMLX5_PERF_OVERRIDE:
        perf->source = STRAND_DEV_PERF_OVERRIDE;
        break;
    case SMLX5_PERF_FIXED:
        perf->source = STRAND_DEV_PERF_FIXED;
        break;
    default:
        perf->source = STRAND_DEV_PERF_MEASURED;
        break;
    }
    snprintf(perf->what, sizeof(perf->what),
             "software device, %s%s%s%s, "
             "MTU %u",
             how[sp.source], sp.error ? " (" : "",
             sp.error ? strerror(sp.error) : "", sp.error ? ")" : "",
             dev->caps.mtu);
    return 0;
}

static void
dev_sim_rx_qos(strand_dev_t *dev, uint64_t sl[16], uint64_t tclass[256])
{
    smlx5_rx_qos_counts(((dev_sim_t *)dev->priv)->ctx, sl, tclass);
}

const strand_dev_ops_t strand_dev_sim_ops = {
        .name                = "sim",
        .list                = dev_sim_list,
        .open                = dev_sim_open,
        .close               = dev_sim_close,
        .reg_mr              = dev_sim_reg_mr,
        .dereg_mr            = dev_sim_dereg_mr,
        .create_channel      = dev_sim_create_channel,
        .destroy_channel     = dev_sim_destroy_channel,
        .create_cq           = dev_sim_create_cq,
        .destroy_cq          = dev_sim_destroy_cq,
        .get_cq_event        = dev_sim_get_cq_event,
        .create_av           = dev_sim_create_av,
        .create_td           = dev_sim_create_td,
        .destroy_td          = dev_sim_destroy_td,
        .create_srq          = dev_sim_create_srq,
        .destroy_srq         = dev_sim_destroy_srq,
        .create_tm_srq       = dev_sim_create_tm_srq,
        .create_qp           = dev_sim_create_qp,
        .modify_qp           = dev_sim_modify_qp,
        .qp_view             = dev_sim_qp_view_of,
        .destroy_qp          = dev_sim_destroy_qp,
        .qp_state            = dev_sim_qp_state,
        .query_sqd           = dev_sim_query_sqd,
        .create_mkey         = dev_sim_create_mkey,
        .destroy_mkey        = dev_sim_destroy_mkey,
        .mkey_configure      = dev_sim_mkey_configure,
        .dci_stream_id_reset = dev_sim_dci_stream_id_reset,
        .query_perf          = dev_sim_query_perf,
        .rx_qos              = dev_sim_rx_qos,
        .progress            = dev_sim_progress,
        .get_async_event     = dev_sim_get_async_event,
};
