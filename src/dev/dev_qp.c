/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QPs through their states, written once above the backends: a backend
 * makes a QP of a type in RESET (create_qp), takes it one state on
 * (modify_qp, ibv_modify_qp's semantics) and gives its DV view (qp_view);
 * which attributes each step carries for each type is decided here, as
 * rdma-core's verbs leave it to the caller.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dev.h"

#include <string.h>

#define STRAND_DEV_REMOTE_ACCESS                        \
    (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
     IBV_ACCESS_REMOTE_ATOMIC)

/* RESET -> INIT on the device's port, pkey index 0; `access`: the remote
 * access of a QP that receives (0: a DCI, which never does). */
int strand_dev_qp_to_init(strand_dev_t *dev, strand_dev_qp_t *qp, int access)
{
    struct ibv_qp_attr a;
    int                mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = dev->caps.port_num;
    if (access != 0) {
        a.qp_access_flags = (unsigned)access;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    return dev->ops->modify_qp(dev, qp, &a, mask);
}

/* INIT -> RTR of a DCI or DCT: the path its packets take (no destination:
 * each WQE names one); a DCT's receive-not-ready timer. */
static int strand_dev_dc_to_rtr(strand_dev_t *dev, strand_dev_qp_t *qp,
                                const strand_dev_path_t *path,
                                int                      min_rnr_timer)
{
    struct ibv_qp_attr a;
    int                mask = IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = strand_dev_path_mtu(dev);
    strand_dev_set_path(dev, path, &a.ah_attr);
    if (min_rnr_timer >= 0) {
        a.min_rnr_timer = (uint8_t)min_rnr_timer;
        mask |= IBV_QP_MIN_RNR_TIMER;
    }
    return dev->ops->modify_qp(dev, qp, &a, mask);
}

/* RTR -> RTS of a DCI: its retries and READs in flight. */
static int strand_dev_dci_to_rts(strand_dev_t *dev, strand_dev_qp_t *qp,
                                 const strand_dev_sq_attr_t *attr)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = attr->timeout;
    a.retry_cnt     = attr->retry_cnt;
    a.rnr_retry     = attr->rnr_retry;
    a.max_rd_atomic = attr->max_rd_atomic;
    return dev->ops->modify_qp(dev, qp, &a,
                               IBV_QP_STATE | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN);
}

/* RESET -> INIT -> RTR -> RTS of a DCI, and its view. */
static int strand_dev_dci_up(strand_dev_t *dev, strand_dev_qp_t *qp,
                             const strand_dev_sq_attr_t *attr)
{
    int ret;

    ret = strand_dev_qp_to_init(dev, qp, 0);
    if (ret == 0) {
        ret = strand_dev_dc_to_rtr(dev, qp, &attr->path, -1);
    }
    if (ret == 0) {
        ret = strand_dev_dci_to_rts(dev, qp, attr);
    }
    return (ret == 0) ? dev->ops->qp_view(dev, qp) : ret;
}

/* a QP made and not brought up goes again */
static int strand_dev_qp_undo(strand_dev_t *dev, strand_dev_qp_t *qp, int ret)
{
    dev->ops->destroy_qp(dev, qp);
    qp->h = NULL;
    return ret;
}

int strand_dev_create_dci(strand_dev_t *dev, const strand_dev_sq_attr_t *attr,
                          strand_dev_qp_t *qp)
{
    strand_dev_qp_init_t init;
    int                  ret;

    memset(&init, 0, sizeof(init));
    init.type              = STRAND_DEV_QPT_DCI;
    init.td                = attr->td;
    init.send_cq           = attr->send_cq;
    init.recv_cq           = attr->send_cq;
    init.max_send_wr       = attr->max_send_wr;
    init.max_send_sge      = attr->max_send_sge;
    init.max_inline        = attr->max_inline;
    init.log_num_concurent = attr->log_num_concurent;
    init.log_num_errored   = attr->log_num_errored;
    ret                    = dev->ops->create_qp(dev, &init, qp);
    if (ret != 0) {
        return ret;
    }
    ret = strand_dev_dci_up(dev, qp, attr);
    return (ret == 0) ? 0 : strand_dev_qp_undo(dev, qp, ret);
}

int strand_dev_reset_dci(strand_dev_t *dev, strand_dev_qp_t *qp,
                         const strand_dev_sq_attr_t *attr)
{
    struct ibv_qp_attr a;
    int                ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    ret        = dev->ops->modify_qp(dev, qp, &a, IBV_QP_STATE);
    return (ret == 0) ? strand_dev_dci_up(dev, qp, attr) : ret;
}

int strand_dev_create_dct(strand_dev_t *dev, const strand_dev_dct_attr_t *attr,
                          strand_dev_qp_t *qp)
{
    strand_dev_qp_init_t init;
    int                  ret;

    memset(&init, 0, sizeof(init));
    init.type           = STRAND_DEV_QPT_DCT;
    init.send_cq        = attr->cq;
    init.recv_cq        = attr->cq;
    init.srq            = attr->srq;
    init.dc_access_key  = attr->access_key;
    init.scatter_to_cqe = attr->scatter_to_cqe;
    ret                 = dev->ops->create_qp(dev, &init, qp);
    if (ret != 0) {
        return ret;
    }
    ret = strand_dev_qp_to_init(dev, qp, STRAND_DEV_REMOTE_ACCESS);
    if (ret == 0) {
        ret = strand_dev_dc_to_rtr(dev, qp, &attr->path, attr->min_rnr_timer);
    }
    if (ret == 0) {
        ret = dev->ops->qp_view(dev, qp); /* the DCT number, from RTR on */
    }
    return (ret == 0) ? 0 : strand_dev_qp_undo(dev, qp, ret);
}

int strand_dev_create_rc(strand_dev_t *dev, const strand_dev_rc_attr_t *attr,
                         strand_dev_qp_t *qp)
{
    strand_dev_qp_init_t init;
    int                  ret;

    memset(&init, 0, sizeof(init));
    init.type           = STRAND_DEV_QPT_RC;
    init.td             = attr->td;
    init.send_cq        = attr->send_cq;
    init.recv_cq        = attr->recv_cq;
    init.srq            = attr->srq;
    init.max_send_wr    = attr->max_send_wr;
    init.max_send_sge   = attr->max_send_sge;
    init.max_inline     = attr->max_inline;
    init.scatter_to_cqe = attr->scatter_to_cqe;
    init.sig_pipelining = attr->sig_pipelining;
    ret                 = dev->ops->create_qp(dev, &init, qp);
    if (ret != 0) {
        return ret;
    }
    ret = strand_dev_qp_to_init(dev, qp, STRAND_DEV_REMOTE_ACCESS);
    if (ret == 0) {
        ret = dev->ops->qp_view(dev, qp);
    }
    return (ret == 0) ? 0 : strand_dev_qp_undo(dev, qp, ret);
}

int strand_dev_connect_rc(strand_dev_t *dev, strand_dev_qp_t *qp,
                          const strand_dev_rc_attr_t *attr,
                          const strand_dev_rc_dest_t *dest)
{
    struct ibv_qp_attr a;
    int                mask, ret;

    mask = strand_dev_rc_rtr_attr(dev, attr, dest, &a);
    ret  = dev->ops->modify_qp(dev, qp, &a, mask);
    if (ret != 0) {
        return ret;
    }
    mask = strand_dev_rc_rts_attr(attr, &a);
    return dev->ops->modify_qp(dev, qp, &a, mask);
}

int strand_dev_qp_to_err(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    return dev->ops->modify_qp(dev, qp, &a, IBV_QP_STATE);
}

int strand_dev_sqd_to_rts(strand_dev_t *dev, strand_dev_qp_t *qp)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state     = IBV_QPS_RTS;
    a.cur_qp_state = IBV_QPS_SQD;
    return dev->ops->modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
}
