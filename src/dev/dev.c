/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Discovery and open across the device backends.
 */
#include "dev.h"
#include "dev_ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const strand_dev_ops_t *strand_dev_backend(strand_dev_kind_t kind)
{
    return (kind == STRAND_DEV_KIND_HW) ? &strand_dev_hw_ops :
                                          &strand_dev_sim_ops;
}

int strand_dev_list(unsigned kind_mask, strand_dev_info_t *out, int max)
{
    int n = 0;

    /* hardware first: it is what a user with a NIC wants */
    if (kind_mask & (1u << STRAND_DEV_KIND_HW)) {
        n += strand_dev_hw_ops.list(out + n, max - n);
    }
    if ((kind_mask & (1u << STRAND_DEV_KIND_SIM)) && (n < max)) {
        n += strand_dev_sim_ops.list(out + n, max - n);
    }
    return n;
}

int strand_dev_open(const strand_dev_info_t *info, strand_dev_t **dev_p)
{
    if ((info == NULL) || (dev_p == NULL)) {
        return EINVAL;
    }
    return strand_dev_backend(info->kind)->open(info, dev_p);
}

int strand_dev_fork_init(strand_dev_kind_t kind)
{
    const strand_dev_ops_t *ops = strand_dev_backend(kind);

    return (ops->fork_init == NULL) ? ENOTSUP : ops->fork_init();
}

/* How well a GID serves as this port's address (0: not at all). */
static int strand_dev_gid_score(const struct ibv_gid_entry *e, int link_layer)
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t zero[16];
    int                  v4, link_local;

    if (!memcmp(e->gid.raw, zero, sizeof(zero))) {
        return 0; /* an empty table slot */
    }
    if (link_layer != IBV_LINK_LAYER_ETHERNET) {
        return (e->gid_type == IBV_GID_TYPE_IB) ? 1 : 0;
    }
    v4         = !memcmp(e->gid.raw, v4_prefix, sizeof(v4_prefix));
    link_local = (e->gid.raw[0] == 0xfe) && ((e->gid.raw[1] & 0xc0) == 0x80);
    /* RoCE v2 routes beyond the subnet; an IPv4 address is what most RoCE
     * fabrics are configured with; link-local GIDs come last */
    return ((e->gid_type == IBV_GID_TYPE_ROCE_V2) ? 3 : 0) +
           (v4 ? 3 : (link_local ? 1 : 2));
}

int strand_dev_pick_gid(void *ctx, strand_dev_query_gid_ex_t query,
                        uint8_t port, int link_layer, int gid_tbl_len,
                        uint8_t *index_p, union ibv_gid *gid_p)
{
    struct ibv_gid_entry e;
    int                  i, score, best = 0;

    for (i = 0; (i < gid_tbl_len) && (i < 256); ++i) {
        if (query(ctx, port, i, &e) != 0) {
            continue;
        }
        score = strand_dev_gid_score(&e, link_layer);
        if (score > best) {
            best     = score;
            *index_p = (uint8_t)i;
            *gid_p   = e.gid;
        }
    }
    return (best > 0) ? 0 : ENODATA;
}

void strand_dev_set_path(const strand_dev_t *dev, const strand_dev_path_t *path,
                         struct ibv_ah_attr *ah)
{
    ah->port_num = dev->caps.port_num;
    ah->sl       = path->sl;
    if (dev->caps.link_layer == IBV_LINK_LAYER_ETHERNET) {
        /* RoCE: every path carries a GRH from the chosen GID */
        ah->is_global         = 1;
        ah->grh.sgid_index    = dev->caps.gid_index;
        ah->grh.hop_limit     = 255;
        ah->grh.traffic_class = path->tclass;
    }
}

enum ibv_mtu strand_dev_path_mtu(const strand_dev_t *dev)
{
    enum ibv_mtu mtu = IBV_MTU_4096;

    while ((mtu > IBV_MTU_256) && ((128u << mtu) > dev->caps.mtu)) {
        mtu--;
    }
    return mtu;
}

int strand_dev_rc_rtr_attr(const strand_dev_t         *dev,
                           const strand_dev_rc_attr_t *attr,
                           const strand_dev_rc_dest_t *dest,
                           struct ibv_qp_attr         *a)
{
    memset(a, 0, sizeof(*a));
    a->qp_state           = IBV_QPS_RTR;
    a->path_mtu           = strand_dev_path_mtu(dev);
    a->dest_qp_num        = dest->qpn;
    a->rq_psn             = 0;
    a->max_dest_rd_atomic = attr->max_rd_atomic;
    a->min_rnr_timer      = attr->min_rnr_timer;
    strand_dev_set_path(dev, &attr->path, &a->ah_attr);
    a->ah_attr.dlid = dest->lid;
    if (a->ah_attr.is_global) {
        a->ah_attr.grh.dgid = dest->gid;
    }
    return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

int strand_dev_rc_rts_attr(const strand_dev_rc_attr_t *attr,
                           struct ibv_qp_attr         *a)
{
    memset(a, 0, sizeof(*a));
    a->qp_state      = IBV_QPS_RTS;
    a->sq_psn        = 0;
    a->timeout       = attr->timeout;
    a->retry_cnt     = attr->retry_cnt;
    a->rnr_retry     = attr->rnr_retry;
    a->max_rd_atomic = attr->max_rd_atomic;
    return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

void strand_dev_locality_all(strand_dev_locality_t *loc)
{
    long i, n = sysconf(_SC_NPROCESSORS_CONF);

    memset(loc, 0, sizeof(*loc));
    loc->numa_node = -1;
    for (i = 0; i < n; ++i) {
        strand_dev_cpu_set(loc, (unsigned)i);
    }
}

/* ------------------------------------------------------------ registers */

typedef struct strand_dev_bf_node {
    strand_bf_t                bf;
    struct strand_dev_bf_node *next;
} strand_dev_bf_node_t;

struct strand_dev_bfs {
    pthread_mutex_t       lock; /* QPs are made from any thread */
    strand_dev_bf_node_t *head;
};

static pthread_mutex_t strand_dev_bfs_init_lock = PTHREAD_MUTEX_INITIALIZER;

strand_bf_t *strand_dev_bf(strand_dev_t *dev, const struct mlx5dv_qp *dv)
{
    strand_dev_bf_node_t *n;
    strand_bf_t          *bf = NULL;

    if (dv->bf.reg == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&strand_dev_bfs_init_lock);
    if (dev->bfs == NULL) {
        dev->bfs = calloc(1, sizeof(*dev->bfs));
        if (dev->bfs != NULL) {
            pthread_mutex_init(&dev->bfs->lock, NULL);
        }
    }
    pthread_mutex_unlock(&strand_dev_bfs_init_lock);
    if (dev->bfs == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&dev->bfs->lock);
    for (n = dev->bfs->head; n != NULL; n = n->next) {
        if (n->bf.reg == dv->bf.reg) {
            bf = &n->bf;
            break;
        }
    }
    if ((bf == NULL) && ((n = calloc(1, sizeof(*n))) != NULL)) {
        strand_bf_init(&n->bf, dv->bf.reg, dv->bf.size);
        n->next        = dev->bfs->head;
        dev->bfs->head = n;
        bf             = &n->bf;
    }
    pthread_mutex_unlock(&dev->bfs->lock);
    return bf;
}

void strand_dev_bf_cleanup(strand_dev_t *dev)
{
    strand_dev_bf_node_t *n;

    if (dev->bfs == NULL) {
        return;
    }
    while ((n = dev->bfs->head) != NULL) {
        dev->bfs->head = n->next;
        free(n);
    }
    pthread_mutex_destroy(&dev->bfs->lock);
    free(dev->bfs);
    dev->bfs = NULL;
}

uint8_t strand_dev_mkey_variant(strand_dev_t *dev)
{
    return (uint8_t)__atomic_add_fetch(&dev->mkey_variant, 1, __ATOMIC_RELAXED);
}

int8_t strand_dev_qp_ring_other(const strand_dev_qp_t *qp, strand_sq_t *sq,
                                const struct mlx5_wqe_ctrl_seg *ctrl,
                                uint64_t                        head)
{
    /* the last WQE's size from its ds (ctrl byte 7, in head) */
    unsigned bbs = strand_ds_to_bbs((unsigned)(be64toh(head) & 0x3f));

    strand_sq_ring_bf(sq, ctrl, bbs, head);
    return (qp->kick != NULL) ? qp->kick(qp->kick_arg) : 0;
}

int8_t strand_dev_qp_kick_none(void *arg)
{
    return 0;
}
