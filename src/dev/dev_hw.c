/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `hw` backend: the device layer over rdma-core (libibverbs + mlx5dv).
 * Queues are handed to the data path through mlx5dv_init_obj, exactly the
 * views the software backend fills. The data path owns those CQs (rdma-core
 * marks them DV-owned and never cleans them), parses them itself and arms
 * them itself; capabilities come from dev_hw_caps.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dev_hw.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void dev_hw_cfg_qp_destroy(dev_hw_t *h);

static int dev_hw_list(strand_dev_info_t *out, int max)
{
    struct ibv_device    **list;
    struct ibv_device_attr attr;
    struct ibv_context    *ctx;
    int                    i, num = 0, n = 0;

    list = ibv_get_device_list(&num);
    if (list == NULL) {
        return 0; /* no RDMA stack, or no device: nothing to list */
    }
    for (i = 0; (i < num) && (n < max); ++i) {
        if (!mlx5dv_is_supported(list[i])) {
            continue;
        }
        memset(&out[n], 0, sizeof(out[n]));
        snprintf(out[n].name, sizeof(out[n].name), "%s",
                 ibv_get_device_name(list[i]));
        snprintf(out[n].sysfs_path, sizeof(out[n].sysfs_path), "%s",
                 list[i]->ibdev_path);
        out[n].kind      = STRAND_DEV_KIND_HW;
        out[n].num_ports = 1;
        ctx              = ibv_open_device(list[i]);
        if (ctx != NULL) {
            if (ibv_query_device(ctx, &attr) == 0) {
                out[n].num_ports = attr.phys_port_cnt;
            }
            ibv_close_device(ctx);
        }
        ++n;
    }
    ibv_free_device_list(list);
    return n;
}

/* Where dev_hw_list finds nothing: the kernel's view first (a machine
 * without an RDMA driver has no /sys/class/infiniband), then libibverbs',
 * then the devices that are there but no mlx5. */
void strand_dev_hw_why_none(char *buf, size_t max)
{
    static const char  *sysfs = "/sys/class/infiniband";
    struct ibv_device **list;
    struct dirent      *e;
    size_t              len;
    DIR                *dir    = opendir(sysfs);
    int                 exists = (dir != NULL);
    int                 i, num = 0, entries = 0;

    if (exists) {
        while ((e = readdir(dir)) != NULL) {
            entries += (e->d_name[0] != '.');
        }
        closedir(dir);
    }
    if (entries == 0) {
        snprintf(buf, max, "no RDMA device on this machine (%s %s)", sysfs,
                 exists ? "is empty" :
                          "does not exist: no RDMA driver is loaded");
        return;
    }
    errno = 0;
    list  = ibv_get_device_list(&num);
    if ((list == NULL) || (num == 0)) {
        snprintf(buf, max,
                 "libibverbs lists none of the %d devices in %s "
                 "(%s)",
                 entries, sysfs,
                 (errno != 0) ? strerror(errno) : "no provider claims them");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return;
    }
    len = snprintf(buf, max,
                   "none of the RDMA devices is an mlx5 device "
                   "(mlx5dv_is_supported):");
    for (i = 0; (i < num) && (len < max); ++i) {
        len += snprintf(buf + len, max - len, " %s",
                        ibv_get_device_name(list[i]));
    }
    ibv_free_device_list(list);
}

static void dev_hw_close(strand_dev_t *dev)
{
    dev_hw_t *h = dev->priv;

    strand_dev_bf_cleanup(dev);
    dev_hw_cfg_qp_destroy(h); /* before the PD its QP lives on */
    pthread_mutex_destroy(&h->cfg.lock);
    if (h->pd != NULL) {
        ibv_dealloc_pd(h->pd);
    }
    if (h->ctx != NULL) {
        ibv_close_device(h->ctx);
    }
    free(h);
    free(dev);
}

/* DEVX first (PRM capability queries, as UCX does), plain verbs if the
 * kernel or the user's permissions do not allow it. */
static struct ibv_context *
dev_hw_open_context(struct ibv_device *ibdev, int *devx_p)
{
    struct mlx5dv_context_attr attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
    struct ibv_context        *ctx  = mlx5dv_open_device(ibdev, &attr);

    *devx_p = (ctx != NULL);
    return (ctx != NULL) ? ctx : ibv_open_device(ibdev);
}

static int dev_hw_open(const strand_dev_info_t *info, strand_dev_t **dev_p)
{
    struct ibv_device **list;
    strand_dev_t       *dev;
    dev_hw_t           *h;
    int                 i, num = 0, ret = ENODEV;

    dev = calloc(1, sizeof(*dev));
    h   = calloc(1, sizeof(*h));
    if ((dev == NULL) || (h == NULL)) {
        free(dev);
        free(h);
        return ENOMEM;
    }
    pthread_mutex_init(&h->cfg.lock, NULL); /* dev_hw_close destroys it */
    dev->ops  = &strand_dev_hw_ops;
    dev->info = *info;
    dev->priv = h;

    list = ibv_get_device_list(&num);
    for (i = 0; (list != NULL) && (i < num); ++i) {
        if (!strcmp(ibv_get_device_name(list[i]), info->name) &&
            mlx5dv_is_supported(list[i])) {
            h->ctx = dev_hw_open_context(list[i], &h->devx);
            ret    = (h->ctx == NULL) ? (errno ? errno : ENODEV) : 0;
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (h->ctx == NULL) {
        goto err;
    }

    h->pd = ibv_alloc_pd(h->ctx);
    if (h->pd == NULL) {
        ret = errno ? errno : ENOMEM;
        goto err;
    }
    ret = strand_dev_hw_query_caps(dev);
    if (ret != 0) {
        goto err;
    }
    strand_dev_hw_locality(info, &dev->locality);
    dev->async_fd = h->ctx->async_fd;
    fcntl(dev->async_fd, F_SETFL, fcntl(dev->async_fd, F_GETFL) | O_NONBLOCK);
    *dev_p = dev;
    return 0;

err:
    dev_hw_close(dev);
    return ret;
}

static int dev_hw_reg_mr(strand_dev_t *dev, void *addr, size_t len, int access,
                         strand_dev_mr_t *mr)
{
    dev_hw_t      *h   = dev->priv;
    struct ibv_mr *imr = ibv_reg_mr(h->pd, addr, len, access);

    if (imr == NULL) {
        return errno ? errno : ENOMEM;
    }
    mr->h    = imr;
    mr->lkey = imr->lkey;
    mr->rkey = imr->rkey;
    return 0;
}

static int dev_hw_dereg_mr(strand_dev_t *dev, strand_dev_mr_t *mr)
{
    return ibv_dereg_mr(mr->h);
}

static int dev_hw_create_channel(strand_dev_t *dev, strand_dev_channel_t *ch)
{
    dev_hw_t                *h   = dev->priv;
    struct ibv_comp_channel *ich = ibv_create_comp_channel(h->ctx);

    if (ich == NULL) {
        return errno ? errno : ENOMEM;
    }
    ch->h  = ich;
    ch->fd = ich->fd;
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static int dev_hw_destroy_channel(strand_dev_t *dev, strand_dev_channel_t *ch)
{
    return ibv_destroy_comp_channel(ch->h);
}

static int dev_hw_create_cq(strand_dev_t *dev, int cqe, unsigned cqe_size,
                            strand_dev_channel_t *ch, strand_dev_cq_t *cq)
{
    dev_hw_t                  *h = dev->priv;
    struct ibv_cq_init_attr_ex attr;
    struct mlx5dv_cq_init_attr dv;
    struct mlx5dv_obj          obj;
    struct ibv_cq             *icq;

    if (cqe_size == 0) {
        icq = ibv_create_cq(h->ctx, cqe, cq, (ch != NULL) ? ch->h : NULL, 0);
    } else {
        memset(&attr, 0, sizeof(attr));
        attr.cqe        = (uint32_t)cqe;
        attr.cq_context = cq;
        attr.channel    = (ch != NULL) ? ch->h : NULL;
        memset(&dv, 0, sizeof(dv));
        dv.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
        dv.cqe_size  = cqe_size;
        icq          = ibv_cq_ex_to_cq(mlx5dv_create_cq(h->ctx, &attr, &dv));
    }
    if (icq == NULL) {
        return errno ? errno : ENOMEM;
    }
    cq->h            = icq;
    cq->arm_kick     = NULL; /* the UAR write is the doorbell */
    cq->arm_kick_arg = NULL;
    memset(&obj, 0, sizeof(obj));
    obj.cq.in  = icq;
    obj.cq.out = &cq->dv;
    return mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
}

static int dev_hw_destroy_cq(strand_dev_t *dev, strand_dev_cq_t *cq)
{
    return ibv_destroy_cq(cq->h);
}

static int dev_hw_get_cq_event(strand_dev_t *dev, strand_dev_channel_t *ch,
                               strand_dev_cq_t **cq_p)
{
    struct ibv_cq *icq;
    void          *cq_ctx;

    if (ibv_get_cq_event(ch->h, &icq, &cq_ctx) != 0) {
        return EAGAIN;
    }
    ibv_ack_cq_events(icq, 1);
    *cq_p = cq_ctx;
    return 0;
}

/* ibv_create_ah resolves what the AV needs (on RoCE the destination MAC);
 * mlx5dv_init_obj hands out its bytes, which outlive the AH. */
static int dev_hw_create_av(strand_dev_t *dev, const struct ibv_ah_attr *attr,
                            struct mlx5_wqe_av *av)
{
    dev_hw_t          *h    = dev->priv;
    struct ibv_ah_attr copy = *attr;
    struct mlx5dv_ah   dv_ah;
    struct mlx5dv_obj  obj;
    struct ibv_ah     *ah;
    int                ret;

    ah = ibv_create_ah(h->pd, &copy);
    if (ah == NULL) {
        return errno ? errno : EINVAL;
    }
    memset(&obj, 0, sizeof(obj));
    obj.ah.in  = ah;
    obj.ah.out = &dv_ah;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
    if (ret == 0) {
        *av = *dv_ah.av;
    }
    ibv_destroy_ah(ah);
    return ret;
}

static int dev_hw_create_srq(strand_dev_t *dev, uint32_t max_wr,
                             uint32_t max_sge, strand_dev_srq_t *srq)
{
    dev_hw_t                *h = dev->priv;
    struct ibv_srq_init_attr attr;
    struct mlx5dv_obj        obj;
    struct ibv_srq          *isrq;
    int                      ret;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = max_wr;
    attr.attr.max_sge = max_sge;
    isrq              = ibv_create_srq(h->pd, &attr);
    if (isrq == NULL) {
        return errno ? errno : ENOMEM;
    }
    srq->h = isrq;
    memset(&obj, 0, sizeof(obj));
    obj.srq.in   = isrq;
    obj.srq.out  = &srq->dv;
    ret          = mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ);
    srq->wqe_cnt = srq->dv.tail + 1; /* the list ends at its sentinel */
    srq->max_sge = attr.attr.max_sge;
    return ret;
}

static int dev_hw_destroy_srq(strand_dev_t *dev, strand_dev_srq_t *srq)
{
    return ibv_destroy_srq(srq->h);
}

static int dev_hw_qp_view(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    struct mlx5dv_obj obj;
    int               ret;

    if (qp->type == STRAND_DEV_QPT_DCT) {
        memset(&qp->dv, 0, sizeof(qp->dv)); /* a DCT has no send queue */
        qp->bf = NULL;
        return 0;
    }
    memset(&obj, 0, sizeof(obj));
    obj.qp.in  = qp->h;
    obj.qp.out = &qp->dv;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
    qp->bf     = (ret == 0) ? strand_dev_bf(dev, &qp->dv) : NULL;
    return ret;
}

/* ---------------------------------------------------- thread domains */

/* A thread domain and the parent domain its QPs are made on: rdma-core's
 * mlx5 gives a QP of a parent domain with a thread domain the domain's
 * dedicated BlueFlame register (a UAR of its own, mlx5_alloc_td), never
 * one another thread's QPs ring. */
static int dev_hw_create_td(strand_dev_t *dev, strand_dev_td_t *td)
{
    dev_hw_t                          *h = dev->priv;
    struct ibv_parent_domain_init_attr pa;
    struct ibv_td_init_attr            ta;
    struct ibv_td                     *itd;
    struct ibv_pd                     *ipd;
    int                                ret;

    memset(&ta, 0, sizeof(ta));
    itd = ibv_alloc_td(h->ctx, &ta);
    if (itd == NULL) {
        return errno ? errno : EOPNOTSUPP;
    }
    memset(&pa, 0, sizeof(pa));
    pa.pd = h->pd;
    pa.td = itd;
    ipd   = ibv_alloc_parent_domain(h->ctx, &pa);
    if (ipd == NULL) {
        ret = errno ? errno : EOPNOTSUPP;
        ibv_dealloc_td(itd);
        return ret;
    }
    td->h  = itd;
    td->pd = ipd;
    return 0;
}

static int dev_hw_destroy_td(strand_dev_t *dev, strand_dev_td_t *td)
{
    int ret = ibv_dealloc_pd(td->pd);

    return (ret != 0) ? ret : ibv_dealloc_td(td->h);
}

/* the PD a QP is made on: its thread domain's parent domain */
static struct ibv_pd *dev_hw_qp_pd(dev_hw_t *h, const strand_dev_td_t *td)
{
    return (td != NULL) ? td->pd : h->pd;
}

/* init's type as rdma-core makes it: DC types through mlx5dv_create_qp's
 * DC attributes (a DCI: READ responses always land in their buffers; with
 * streams where asked), RC as a plain RC QP with mlx5 create flags. */
static void dev_hw_qp_dv_attr(const strand_dev_qp_init_t *init,
                              struct mlx5dv_qp_init_attr *dv)
{
    memset(dv, 0, sizeof(*dv));
    dv->comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    if (init->type == STRAND_DEV_QPT_DCI) {
        dv->comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DC;
        dv->dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
        dv->create_flags         = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
        if (init->log_num_concurent > 0) {
            dv->comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
            dv->dc_init_attr.dci_streams.log_num_concurent =
                    init->log_num_concurent;
            dv->dc_init_attr.dci_streams.log_num_errored = init->log_num_errored;
        }
        return;
    }
    /* a DCT and an RC QP: small messages into the receive CQE only when
     * asked (requester scatter stays off: no sq_sig_all, no ALLOW); with
     * SIG_PIPELINING rdma-core sets drain_sigerr at INIT (a DEVX command):
     * a bad signature block stops the SQ in SQD */
    dv->create_flags = (init->scatter_to_cqe ?
                                0 :
                                MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) |
                       (init->sig_pipelining ? MLX5DV_QP_CREATE_SIG_PIPELINING :
                                               0);
    if (init->type == STRAND_DEV_QPT_DCT) {
        dv->comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DC;
        dv->dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
        dv->dc_init_attr.dct_access_key = init->dc_access_key;
    }
}

static int dev_hw_create_qp(strand_dev_t *dev, const strand_dev_qp_init_t *init,
                            strand_dev_qp_t *qp)
{
    dev_hw_t                  *h = dev->priv;
    struct ibv_qp_init_attr_ex a;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp             *iqp;

    /* rdma-core would refuse it too, or (without DEVX) fail at INIT */
    if (init->sig_pipelining && !dev->caps.sig_pipelining) {
        return EOPNOTSUPP;
    }
    memset(&a, 0, sizeof(a));
    a.qp_type = (init->type == STRAND_DEV_QPT_RC) ? IBV_QPT_RC : IBV_QPT_DRIVER;
    a.send_cq = init->send_cq->h;
    a.recv_cq = init->recv_cq->h;
    a.srq     = (init->srq != NULL) ? init->srq->h : NULL;
    /* a DCT is the device's, never a thread's: the context's own domain */
    a.pd                  = (init->type == STRAND_DEV_QPT_DCT) ? h->pd :
                                                                 dev_hw_qp_pd(h, init->td);
    a.comp_mask           = IBV_QP_INIT_ATTR_PD;
    a.cap.max_send_wr     = init->max_send_wr;
    a.cap.max_send_sge    = init->max_send_sge;
    a.cap.max_inline_data = init->max_inline;
    dev_hw_qp_dv_attr(init, &dv);
    iqp = mlx5dv_create_qp(h->ctx, &a, &dv);
    if (iqp == NULL) {
        return errno ? errno : ENOMEM;
    }
    qp->h        = iqp;
    qp->type     = init->type;
    qp->qpn      = iqp->qp_num;
    qp->kick     = NULL; /* the BlueFlame store is the doorbell */
    qp->kick_arg = NULL;
    qp->bf       = NULL;
    return 0;
}

static int dev_hw_modify_qp(strand_dev_t *dev, strand_dev_qp_t *qp,
                            struct ibv_qp_attr *attr, int mask)
{
    return ibv_modify_qp(qp->h, attr, mask);
}

static int dev_hw_destroy_qp(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    return ibv_destroy_qp(qp->h);
}

static int dev_hw_qp_state(strand_dev_t *dev, strand_dev_qp_t *qp,
                           enum ibv_qp_state *state)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr      a;
    int                     ret = ibv_query_qp(qp->h, &a, IBV_QP_STATE, &init);

    if (ret == 0) {
        *state = a.qp_state;
    }
    return ret;
}

static int dev_hw_dci_stream_id_reset(strand_dev_t *dev, strand_dev_qp_t *qp,
                                      uint16_t stream_id)
{
    return mlx5dv_dci_stream_id_reset(qp->h, stream_id);
}

/* ------------------------------------------------- SQD (PRM QUERY_QP)
 *
 * The command and the fields read, from rdma-core's providers/mlx5/
 * mlx5_ifc.h (struct mlx5_ifc_query_qp_in_bits, mlx5_ifc_query_qp_out_bits,
 * mlx5_ifc_qpc_bits, MLX5_CMD_OP_QUERY_QP, MLX5_QPC_STATE_SQDRAINED,
 * MLX5_CMD_STAT_*); PRM layouts are big-endian, bit offsets count from the
 * most significant bit of dword 0:
 *   query_qp_in, 0x80 bits (16 bytes):
 *     opcode = 0x50b    bits 0x00..0x0f: bits 31:16 of dword 0, bytes 0-1
 *     qpn               bits 0x48..0x5f: bits 23:0 of dword 2, bytes 9-11
 *   query_qp_out, 0x880 bits (272 bytes; the pas[] list after it is empty):
 *     status            bits 0x00..0x07: byte 0 (0: OK)
 *     syndrome          bits 0x20..0x3f: dword 1
 *     qpc               from bit 0xc0 = byte 0x18 (after status, syndrome,
 *                       0x40 reserved bits, opt_param_mask and 0x20
 *                       reserved bits), 0x740 bits long
 *   qpc:
 *     state             bits 0x00..0x03: bits 31:28 of qpc dword 0, the
 *                       high nibble of out byte 0x18; SQ drained = 0x5
 *     hw_sq_wqebb_counter bits 0x5a0..0x5af (after reserved_at_580[0x8] and
 *                       rmsn[0x18]): bits 31:16 of qpc dword 45 = qpc byte
 *                       0xb4, out bytes 0xcc-0xcd
 * rdma-core's own mlx5_qp_query_sqd (providers/mlx5/qp.c) reads the same two
 * fields; it masks the counter to a WQE index, the device layer hands out
 * the 16-bit counter (dev.h). */
#define DEV_HW_CMD_QUERY_QP          0x50b
#define DEV_HW_QUERY_QP_IN_SIZE      16
#define DEV_HW_QUERY_QP_OUT_SIZE     (0x880 / 8)
#define DEV_HW_QUERY_QP_QPN_OFF      8 /* BE32, qpn in bits 23:0 */
#define DEV_HW_QUERY_QP_QPC_OFF      0x18
#define DEV_HW_QPC_STATE_BYTE        0x00 /* bits 7:4 */
#define DEV_HW_QPC_HW_SQ_WQEBB_OFF   0xb4 /* BE16 */
#define DEV_HW_QPC_STATE_SQDRAINED   0x5
#define DEV_HW_QPC_STATE_SQ_DRAINING 0x7 /* SQD, drain in progress */

/* A PRM command status (byte 0 of the output) as an errno. */
static int dev_hw_cmd_status_errno(uint8_t status)
{
    switch (status) {
    case 0x00: /* OK */
        return 0;
    case 0x02: /* bad opcode: firmware without it */
        return EOPNOTSUPP;
    case 0x03:
    case 0x05: /* bad parameter, bad resource */
    case 0x09:
    case 0x0a: /* bad resource state, bad index */
    case 0x10: /* bad QP state */
        return EINVAL;
    case 0x06: /* resource busy */
        return EBUSY;
    case 0x08: /* exceeds a limit */
        return ENOMEM;
    case 0x0f: /* no resources */
        return EAGAIN;
    default: /* internal, system state, lengths, ... */
        return EIO;
    }
}

static int dev_hw_query_sqd(strand_dev_t *dev, strand_dev_qp_t *qp,
                            uint32_t *wqebb_counter)
{
    dev_hw_t      *h = dev->priv;
    uint8_t        in[DEV_HW_QUERY_QP_IN_SIZE], out[DEV_HW_QUERY_QP_OUT_SIZE];
    const uint8_t *qpc = out + DEV_HW_QUERY_QP_QPC_OFF;
    uint32_t       qpn = qp->qpn & 0xffffff;
    int            ret;

    if (!h->devx) {
        return EOPNOTSUPP; /* the kernel takes DEVX commands only then */
    }
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    in[0]                           = DEV_HW_CMD_QUERY_QP >> 8;
    in[1]                           = DEV_HW_CMD_QUERY_QP & 0xff;
    in[DEV_HW_QUERY_QP_QPN_OFF + 1] = (uint8_t)(qpn >> 16);
    in[DEV_HW_QUERY_QP_QPN_OFF + 2] = (uint8_t)(qpn >> 8);
    in[DEV_HW_QUERY_QP_QPN_OFF + 3] = (uint8_t)qpn;
    ret = mlx5dv_devx_qp_query(qp->h, in, sizeof(in), out, sizeof(out));
    if (out[0] != 0) {
        /* the firmware answered, with an error (the kernel's return is
         * EREMOTEIO or a translation of the same status) */
        return dev_hw_cmd_status_errno(out[0]);
    }
    if (ret != 0) {
        return ret;
    }
    if ((qpc[DEV_HW_QPC_STATE_BYTE] >> 4) == DEV_HW_QPC_STATE_SQ_DRAINING) {
        return EBUSY; /* stopped; what it started is still completing */
    }
    if ((qpc[DEV_HW_QPC_STATE_BYTE] >> 4) != DEV_HW_QPC_STATE_SQDRAINED) {
        return EINVAL;
    }
    *wqebb_counter = ((uint32_t)qpc[DEV_HW_QPC_HW_SQ_WQEBB_OFF] << 8) |
                     qpc[DEV_HW_QPC_HW_SQ_WQEBB_OFF + 1];
    return 0;
}

/* ------------------------------------------------------------- mkeys */

static int dev_hw_create_mkey(strand_dev_t *dev, uint16_t max_entries,
                              int signature, uint8_t variant,
                              strand_dev_mkey_t *mkey)
{
    dev_hw_t                    *h = dev->priv;
    struct mlx5dv_mkey_init_attr a;
    struct mlx5dv_mkey          *mk;

    if (max_entries == 0) {
        return EINVAL;
    }
    /* rdma-core creates the mkey with a DEVX command (CREATE_MKEY) and
     * refuses BLOCK_SIGNATURE without sig_caps.block_prot */
    if (!h->devx || (signature && (dev->caps.sig_caps.block_prot == 0))) {
        return EOPNOTSUPP;
    }
    memset(&a, 0, sizeof(a));
    a.pd           = h->pd;
    a.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                     (signature ? MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE :
                                  0);
    a.max_entries = max_entries;
    /* rdma-core takes no key byte (its CREATE_MKEY sets mkey_7_0 0):
     * `variant` is the software device's alone (docs/hardware.md) */
    (void)variant;
    mk = mlx5dv_create_mkey(&a);
    if (mk == NULL) {
        return errno ? errno : ENOMEM;
    }
    mkey->h   = mk;
    mkey->key = mk->lkey; /* == rkey */
    return 0;
}

static int dev_hw_destroy_mkey(strand_dev_t *dev, strand_dev_mkey_t *mkey)
{
    return mlx5dv_destroy_mkey(mkey->h);
}

/* The configuration QP (dev_hw.h). One configuration at a time, under its
 * lock: a UMR, and with a signature one or two SET_PSV WQEs after it, of
 * which rdma-core signals only the last. */
#define DEV_HW_CFG_QP_WR      8
#define DEV_HW_CFG_TIMEOUT_NS 2000000000ll /* a UMR takes microseconds */
#define DEV_HW_CFG_SPIN_NS    100000ll     /* then yield while waiting */

static void dev_hw_cfg_qp_destroy(dev_hw_t *h)
{
    if (h->cfg.qp != NULL) {
        ibv_destroy_qp(h->cfg.qp);
    }
    if (h->cfg.cq != NULL) {
        ibv_destroy_cq(h->cfg.cq);
    }
    h->cfg.qp         = NULL;
    h->cfg.cq         = NULL;
    h->cfg.qpx        = NULL;
    h->cfg.mqpx       = NULL;
    h->cfg.max_inline = 0;
}

static int dev_hw_cfg_qp_create(strand_dev_t *dev)
{
    /* The UMR's translation list and BSF go inline in its WQE, so the inline
     * size bounds a layout; rdma-core refuses a WQE beyond the device's
     * send descriptor size and says what it gave. Largest first (WQEs of
     * 1024, 768, 512, 384, 320 and 256 bytes with rdma-core's UMR
     * overhead). */
    static const uint32_t      want[] = {828, 572, 316, 188, 124, 60};
    dev_hw_t                  *h      = dev->priv;
    dev_hw_cfg_qp_t           *c      = &h->cfg;
    strand_dev_rc_attr_t       attr;
    strand_dev_rc_dest_t       self;
    strand_dev_qp_t            qp; /* the QP, to take it through its states */
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    unsigned                   i;
    int                        ret = ENOMEM;

    c->cq = ibv_create_cq(h->ctx, DEV_HW_CFG_QP_WR, NULL, NULL, 0);
    if (c->cq == NULL) {
        return errno ? errno : ENOMEM;
    }
    for (i = 0; (c->qp == NULL) && (i < sizeof(want) / sizeof(want[0])); ++i) {
        memset(&init, 0, sizeof(init));
        init.qp_type   = IBV_QPT_RC;
        init.send_cq   = c->cq;
        init.recv_cq   = c->cq;
        init.pd        = h->pd;
        init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        init.send_ops_flags      = IBV_QP_EX_WITH_SEND;
        init.cap.max_send_wr     = DEV_HW_CFG_QP_WR;
        init.cap.max_send_sge    = 1;
        init.cap.max_inline_data = want[i];
        memset(&dv, 0, sizeof(dv));
        dv.comp_mask      = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
        dv.send_ops_flags = MLX5DV_QP_EX_WITH_MKEY_CONFIGURE;
        c->qp             = mlx5dv_create_qp(h->ctx, &init, &dv);
        ret               = (c->qp != NULL) ? 0 : (errno ? errno : ENOMEM);
    }
    if (ret != 0) {
        goto err;
    }
    c->max_inline = init.cap.max_inline_data;

    /* connected to itself: a UMR is local work, the QP only has to be in
     * RTS (on RoCE the path to its own GID) */
    memset(&attr, 0, sizeof(attr));
    attr.timeout       = 14;
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;
    attr.min_rnr_timer = 12;
    memset(&self, 0, sizeof(self));
    self.qpn = c->qp->qp_num;
    self.lid = dev->caps.lid;
    self.gid = dev->caps.gid;
    memset(&qp, 0, sizeof(qp));
    qp.h    = c->qp;
    qp.type = STRAND_DEV_QPT_RC;
    ret     = strand_dev_qp_to_init(dev, &qp, 0);
    if (ret == 0) {
        ret = strand_dev_connect_rc(dev, &qp, &attr, &self);
    }
    if (ret != 0) {
        goto err;
    }
    c->qpx  = ibv_qp_to_qp_ex(c->qp);
    c->mqpx = (c->qpx != NULL) ? mlx5dv_qp_ex_from_ibv_qp_ex(c->qpx) : NULL;
    if (c->mqpx == NULL) {
        ret = EOPNOTSUPP;
        goto err;
    }
    return 0;

err:
    dev_hw_cfg_qp_destroy(h);
    return ret;
}

static long long dev_hw_elapsed_ns(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)(t.tv_sec - t0->tv_sec) * 1000000000ll +
           (t.tv_nsec - t0->tv_nsec);
}

/* The completion of configuration `wr_id`: 0, EIO (an error completion:
 * the QP is in ERR), ETIMEDOUT. */
static int dev_hw_cfg_qp_wait(dev_hw_cfg_qp_t *c, uint64_t wr_id)
{
    struct timespec t0;
    struct ibv_wc   wc;
    long long       ns;
    int             n;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        n = ibv_poll_cq(c->cq, 1, &wc);
        if (n < 0) {
            return EIO;
        }
        if (n > 0) {
            if (wc.status != IBV_WC_SUCCESS) {
                return EIO;
            }
            if (wc.wr_id == wr_id) {
                return 0;
            }
            continue; /* not ours: cannot be, the QP is made anew after a
                         failure; skipped all the same */
        }
        ns = dev_hw_elapsed_ns(&t0);
        if (ns > DEV_HW_CFG_TIMEOUT_NS) {
            return ETIMEDOUT;
        }
        if (ns > DEV_HW_CFG_SPIN_NS) {
            sched_yield();
        }
    }
}

static int dev_hw_mkey_configure(strand_dev_t *dev, strand_dev_mkey_t *mkey,
                                 const struct ibv_sge *sge, unsigned num_sge,
                                 int                                 access,
                                 const struct mlx5dv_sig_block_attr *sig)
{
    dev_hw_t                    *h = dev->priv;
    dev_hw_cfg_qp_t             *c = &h->cfg;
    struct mlx5dv_mkey_conf_attr conf;
    uint8_t                      setters;
    int                          ret;

    if ((num_sge > UINT16_MAX) || ((num_sge > 0) && (sge == NULL))) {
        return EINVAL;
    }
    pthread_mutex_lock(&c->lock);
    if (c->qp == NULL) {
        ret = dev_hw_cfg_qp_create(dev);
        if (ret != 0) {
            goto out;
        }
    }
    memset(&conf, 0, sizeof(conf));
    conf.conf_flags = (sig == NULL) ? MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR : 0;
    /* rdma-core finishes the WQE when the announced number of setters has
     * been called: access, the layout when given, the signature when given
     * (no layout: the mkey keeps the one it has, as on the software
     * device) */
    setters = (uint8_t)(1 + (num_sge > 0) + (sig != NULL));

    ibv_wr_start(c->qpx);
    c->qpx->wr_id    = ++c->seq;
    c->qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    mlx5dv_wr_mkey_configure(c->mqpx, mkey->h, setters, &conf);
    mlx5dv_wr_set_mkey_access_flags(c->mqpx, (uint32_t)access);
    if (num_sge > 0) {
        mlx5dv_wr_set_mkey_layout_list(c->mqpx, (uint16_t)num_sge, sge);
    }
    if (sig != NULL) {
        mlx5dv_wr_set_mkey_sig_block(c->mqpx, sig);
    }
    ret = ibv_wr_complete(c->qpx);
    if (ret != 0) {
        /* nothing posted: rdma-core rolled the WQE back. Its ENOMEM says
         * the layout is longer than the mkey's max_entries or than the
         * configuration QP's inline space: an invalid layout, as the
         * software device answers */
        ret = (ret == ENOMEM) ? EINVAL : ret;
        goto out;
    }
    ret = dev_hw_cfg_qp_wait(c, c->seq);
    if (ret != 0) {
        /* ERR, or a UMR that may still complete: start over next time */
        dev_hw_cfg_qp_destroy(h);
    }
out:
    pthread_mutex_unlock(&c->lock);
    return ret;
}

static int dev_hw_get_async_event(strand_dev_t *dev, strand_dev_event_t *ev)
{
    dev_hw_t              *h = dev->priv;
    struct ibv_async_event iev;

    if (ibv_get_async_event(h->ctx, &iev) != 0) {
        return EAGAIN;
    }
    ev->type = iev.event_type;
    switch (iev.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        ev->qpn = iev.element.qp->qp_num;
        break;
    default:
        ev->qpn = 0;
        break;
    }
    ibv_ack_async_event(&iev);
    return 0;
}

static int dev_hw_query_perf(strand_dev_t *dev, strand_dev_perf_t *perf)
{
    *perf = ((dev_hw_t *)dev->priv)->perf;
    return 0;
}

/* rdma-core pins registered pages; before Linux 5.13 a fork() turns them
 * copy-on-write in the parent, and the NIC goes on with the pages the
 * child got. ibv_fork_init marks registrations MADV_DONTFORK (and returns
 * 0 at once where the kernel copes itself). */
static int dev_hw_fork_init(void)
{
    return ibv_fork_init();
}

const strand_dev_ops_t strand_dev_hw_ops = {
        .name                = "hw",
        .list                = dev_hw_list,
        .open                = dev_hw_open,
        .close               = dev_hw_close,
        .fork_init           = dev_hw_fork_init,
        .reg_mr              = dev_hw_reg_mr,
        .dereg_mr            = dev_hw_dereg_mr,
        .create_channel      = dev_hw_create_channel,
        .destroy_channel     = dev_hw_destroy_channel,
        .create_cq           = dev_hw_create_cq,
        .destroy_cq          = dev_hw_destroy_cq,
        .get_cq_event        = dev_hw_get_cq_event,
        .create_av           = dev_hw_create_av,
        .create_td           = dev_hw_create_td,
        .destroy_td          = dev_hw_destroy_td,
        .create_srq          = dev_hw_create_srq,
        .destroy_srq         = dev_hw_destroy_srq,
        .create_qp           = dev_hw_create_qp,
        .modify_qp           = dev_hw_modify_qp,
        .qp_view             = dev_hw_qp_view,
        .destroy_qp          = dev_hw_destroy_qp,
        .qp_state            = dev_hw_qp_state,
        .dci_stream_id_reset = dev_hw_dci_stream_id_reset,
        .query_sqd           = dev_hw_query_sqd,
        .create_mkey         = dev_hw_create_mkey,
        .destroy_mkey        = dev_hw_destroy_mkey,
        .mkey_configure      = dev_hw_mkey_configure,
        .query_perf          = dev_hw_query_perf,
        .rx_qos              = NULL,
        .progress            = NULL,
        .get_async_event     = dev_hw_get_async_event,
};
