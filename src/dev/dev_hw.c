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

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dev_hw_list(strand_dev_info_t *out, int max)
{
    struct ibv_device **list;
    struct ibv_device_attr attr;
    struct ibv_context *ctx;
    int i, num = 0, n = 0;

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
        ctx = ibv_open_device(list[i]);
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

static void dev_hw_close(strand_dev_t *dev)
{
    dev_hw_t *h = dev->priv;

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
static struct ibv_context *dev_hw_open_context(struct ibv_device *ibdev,
                                               int *devx_p)
{
    struct mlx5dv_context_attr attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
    struct ibv_context *ctx         = mlx5dv_open_device(ibdev, &attr);

    *devx_p = (ctx != NULL);
    return (ctx != NULL) ? ctx : ibv_open_device(ibdev);
}

static int dev_hw_open(const strand_dev_info_t *info, strand_dev_t **dev_p)
{
    struct ibv_device **list;
    strand_dev_t *dev;
    dev_hw_t *h;
    int i, num = 0, ret = ENODEV;

    dev = calloc(1, sizeof(*dev));
    h   = calloc(1, sizeof(*h));
    if ((dev == NULL) || (h == NULL)) {
        free(dev);
        free(h);
        return ENOMEM;
    }
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

static int dev_hw_reg_mr(strand_dev_t *dev, void *addr, size_t len,
                         int access, strand_dev_mr_t *mr)
{
    dev_hw_t *h        = dev->priv;
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
    dev_hw_t *h                  = dev->priv;
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

static int dev_hw_create_cq(strand_dev_t *dev, int cqe,
                            strand_dev_channel_t *ch, strand_dev_cq_t *cq)
{
    dev_hw_t *h = dev->priv;
    struct mlx5dv_obj obj;
    struct ibv_cq *icq;

    icq = ibv_create_cq(h->ctx, cqe, cq, (ch != NULL) ? ch->h : NULL, 0);
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
    void *cq_ctx;

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
    dev_hw_t *h             = dev->priv;
    struct ibv_ah_attr copy = *attr;
    struct mlx5dv_ah dv_ah;
    struct mlx5dv_obj obj;
    struct ibv_ah *ah;
    int ret;

    ah = ibv_create_ah(h->pd, &copy);
    if (ah == NULL) {
        return errno ? errno : EINVAL;
    }
    memset(&obj, 0, sizeof(obj));
    obj.ah.in  = ah;
    obj.ah.out = &dv_ah;
    ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
    if (ret == 0) {
        *av = *dv_ah.av;
    }
    ibv_destroy_ah(ah);
    return ret;
}

static int dev_hw_create_srq(strand_dev_t *dev, uint32_t max_wr,
                             uint32_t max_sge, strand_dev_srq_t *srq)
{
    dev_hw_t *h = dev->priv;
    struct ibv_srq_init_attr attr;
    struct mlx5dv_obj obj;
    struct ibv_srq *isrq;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = max_wr;
    attr.attr.max_sge = max_sge;
    isrq = ibv_create_srq(h->pd, &attr);
    if (isrq == NULL) {
        return errno ? errno : ENOMEM;
    }
    srq->h = isrq;
    memset(&obj, 0, sizeof(obj));
    obj.srq.in  = isrq;
    obj.srq.out = &srq->dv;
    ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ);
    srq->wqe_cnt = srq->dv.tail + 1; /* the list ends at its sentinel */
    srq->max_sge = attr.attr.max_sge;
    return ret;
}

static int dev_hw_destroy_srq(strand_dev_t *dev, strand_dev_srq_t *srq)
{
    return ibv_destroy_srq(srq->h);
}

static int dev_hw_dci_to_rts(strand_dev_t *dev, struct ibv_qp *qp,
                             const strand_dev_dci_attr_t *attr)
{
    struct ibv_qp_attr a;
    int ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = DEV_HW_PORT;
    ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
    if (ret != 0) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = strand_dev_path_mtu(dev);
    strand_dev_set_path(dev, &a.ah_attr);
    ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV);
    if (ret != 0) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = attr->timeout;
    a.retry_cnt     = attr->retry_cnt;
    a.rnr_retry     = attr->rnr_retry;
    a.max_rd_atomic = attr->max_rd_atomic;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                                 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN);
}

static int dev_hw_qp_view(strand_dev_qp_t *qp)
{
    struct mlx5dv_obj obj;

    memset(&obj, 0, sizeof(obj));
    obj.qp.in  = qp->h;
    obj.qp.out = &qp->dv;
    return mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
}

static int dev_hw_create_dci(strand_dev_t *dev,
                             const strand_dev_dci_attr_t *attr,
                             strand_dev_qp_t *qp)
{
    dev_hw_t *h = dev->priv;
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp *iqp;
    int ret;

    memset(&init, 0, sizeof(init));
    init.qp_type             = IBV_QPT_DRIVER;
    init.send_cq             = attr->send_cq->h;
    init.recv_cq             = attr->send_cq->h;
    init.pd                  = h->pd;
    init.comp_mask           = IBV_QP_INIT_ATTR_PD;
    init.cap.max_send_wr     = attr->max_send_wr;
    init.cap.max_send_sge    = attr->max_send_sge;
    init.cap.max_inline_data = attr->max_inline;
    memset(&dv, 0, sizeof(dv));
    dv.comp_mask               = MLX5DV_QP_INIT_ATTR_MASK_DC |
                                 MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.dc_init_attr.dc_type    = MLX5DV_DCTYPE_DCI;
    /* READ responses always land in their buffers */
    dv.create_flags            = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
    if (attr->log_num_concurent > 0) {
        dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
        dv.dc_init_attr.dci_streams.log_num_concurent =
                attr->log_num_concurent;
        dv.dc_init_attr.dci_streams.log_num_errored = attr->log_num_errored;
    }
    iqp = mlx5dv_create_qp(h->ctx, &init, &dv);
    if (iqp == NULL) {
        return errno ? errno : ENOMEM;
    }
    ret = dev_hw_dci_to_rts(dev, iqp, attr);
    if (ret != 0) {
        ibv_destroy_qp(iqp);
        return ret;
    }
    qp->h        = iqp;
    qp->qpn      = iqp->qp_num;
    qp->kick     = NULL;  /* the BlueFlame store is the doorbell */
    qp->kick_arg = NULL;
    return dev_hw_qp_view(qp);
}

static int dev_hw_create_dct(strand_dev_t *dev,
                             const strand_dev_dct_attr_t *attr,
                             strand_dev_qp_t *qp)
{
    dev_hw_t *h = dev->priv;
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_attr a;
    struct ibv_qp *iqp;
    int ret;

    memset(&init, 0, sizeof(init));
    init.qp_type   = IBV_QPT_DRIVER;
    init.send_cq   = attr->cq->h;
    init.recv_cq   = attr->cq->h;
    init.srq       = attr->srq->h;
    init.pd        = h->pd;
    init.comp_mask = IBV_QP_INIT_ATTR_PD;
    memset(&dv, 0, sizeof(dv));
    dv.comp_mask                   = MLX5DV_QP_INIT_ATTR_MASK_DC |
                                     MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = attr->access_key;
    dv.create_flags                = attr->scatter_to_cqe ? 0 :
                                     MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
    iqp = mlx5dv_create_qp(h->ctx, &init, &dv);
    if (iqp == NULL) {
        return errno ? errno : ENOMEM;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = DEV_HW_PORT;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;
    ret = ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (ret == 0) {
        memset(&a, 0, sizeof(a));
        a.qp_state         = IBV_QPS_RTR;
        a.min_rnr_timer    = attr->min_rnr_timer;
        a.path_mtu         = strand_dev_path_mtu(dev);
        strand_dev_set_path(dev, &a.ah_attr);
        ret = ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                                     IBV_QP_AV | IBV_QP_PATH_MTU);
    }
    if (ret != 0) {
        ibv_destroy_qp(iqp);
        return ret;
    }
    qp->h        = iqp;
    qp->qpn      = iqp->qp_num;
    qp->kick     = NULL;
    qp->kick_arg = NULL;
    memset(&qp->dv, 0, sizeof(qp->dv)); /* a DCT has no send queue */
    return 0;
}

static int dev_hw_destroy_qp(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    return ibv_destroy_qp(qp->h);
}

static int dev_hw_reset_dci(strand_dev_t *dev, strand_dev_qp_t *qp,
                            const strand_dev_dci_attr_t *attr)
{
    struct ibv_qp_attr a;
    int ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    ret = ibv_modify_qp(qp->h, &a, IBV_QP_STATE);
    if (ret == 0) {
        ret = dev_hw_dci_to_rts(dev, qp->h, attr);
    }
    return (ret == 0) ? dev_hw_qp_view(qp) : ret;
}

static int dev_hw_qp_state(strand_dev_t *dev, strand_dev_qp_t *qp,
                           enum ibv_qp_state *state)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;
    int ret = ibv_query_qp(qp->h, &a, IBV_QP_STATE, &init);

    if (ret == 0) {
        *state = a.qp_state;
    }
    return ret;
}

static int dev_hw_qp_to_err(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(qp->h, &a, IBV_QP_STATE);
}

static int dev_hw_dci_stream_id_reset(strand_dev_t *dev, strand_dev_qp_t *qp,
                                      uint16_t stream_id)
{
    return mlx5dv_dci_stream_id_reset(qp->h, stream_id);
}

static int dev_hw_get_async_event(strand_dev_t *dev, strand_dev_event_t *ev)
{
    dev_hw_t *h = dev->priv;
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
    *perf = ((dev_hw_t*)dev->priv)->perf;
    return 0;
}

const strand_dev_ops_t strand_dev_hw_ops = {
    .name                = "hw",
    .list                = dev_hw_list,
    .open                = dev_hw_open,
    .close               = dev_hw_close,
    .reg_mr              = dev_hw_reg_mr,
    .dereg_mr            = dev_hw_dereg_mr,
    .create_channel      = dev_hw_create_channel,
    .destroy_channel     = dev_hw_destroy_channel,
    .create_cq           = dev_hw_create_cq,
    .destroy_cq          = dev_hw_destroy_cq,
    .get_cq_event        = dev_hw_get_cq_event,
    .create_av           = dev_hw_create_av,
    .create_srq          = dev_hw_create_srq,
    .destroy_srq         = dev_hw_destroy_srq,
    .create_dci          = dev_hw_create_dci,
    .create_dct          = dev_hw_create_dct,
    .destroy_qp          = dev_hw_destroy_qp,
    .reset_dci           = dev_hw_reset_dci,
    .qp_state            = dev_hw_qp_state,
    .qp_to_err           = dev_hw_qp_to_err,
    .dci_stream_id_reset = dev_hw_dci_stream_id_reset,
    .query_perf          = dev_hw_query_perf,
    .progress            = NULL,
    .get_async_event     = dev_hw_get_async_event,
};
