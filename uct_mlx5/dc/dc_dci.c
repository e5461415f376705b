/*
 * DCI pool ("dcs" policy): an endpoint holds a DCI from its first post until
 * its last outstanding WQE retired. Send completions, and recovery after an
 * error CQE: that endpoint's outstanding operations complete with the error,
 * the DCI is reset and goes back to the pool, the endpoint's owner is told
 * through uct_iface_handle_ep_err(); nobody else notices.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_dci.h"
#include "dc_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/arch/bitops.h>

#include <string.h>

static void strand_dc_dci_geometry(strand_dc_dci_t *dci)
{
    dci->wqe_cnt   = dci->qp.dv.sq.wqe_cnt;
    dci->sq_buf    = dci->qp.dv.sq.buf;
    dci->sq_end    = strand_sq_end(dci->sq_buf, dci->wqe_cnt);
    dci->cur_post  = 0;
    dci->bf_offset = 0;
    dci->avail_bbs = dci->wqe_cnt;
    dci->op_head   = 0;
    dci->op_tail   = 0;
}

ucs_status_t strand_dc_dci_pool_init(strand_dc_iface_t *iface)
{
    strand_dev_t *dev = iface->dev;
    strand_dc_dci_t *dci;
    unsigned i, nops;
    int err;

    iface->dcis      = ucs_calloc(iface->num_dci, sizeof(*iface->dcis),
                                  "strand_dc_dcis");
    iface->dci_stack = ucs_calloc(iface->num_dci, sizeof(*iface->dci_stack),
                                  "strand_dc_dci_stack");
    if ((iface->dcis == NULL) || (iface->dci_stack == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }

    nops = ucs_roundup_pow2(iface->config.tx_queue_len);
    for (i = 0; i < iface->num_dci; ++i) {
        dci        = &iface->dcis[i];
        dci->index = i;
        dci->ops   = ucs_calloc(nops, sizeof(*dci->ops), "strand_dc_ops");
        if (dci->ops == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        dci->ops_mask              = nops - 1;
        iface->dci_attr.user_index = i;
        err = dev->ops->create_dci(dev, &iface->dci_attr, &dci->qp);
        if (err != 0) {
            ucs_error("%s: failed to create DCI %u: %s", dev->info.name, i,
                      strerror(err));
            return UCS_ERR_IO_ERROR;
        }
        iface->num_dci_created++;
        strand_dc_dci_geometry(dci);
        if (dci->wqe_cnt < iface->config.dci_max_bbs) {
            ucs_error("%s: DCI send queue of %u BBs is too small",
                      dev->info.name, dci->wqe_cnt);
            return UCS_ERR_INVALID_PARAM;
        }
        /* the stack pops from the top: DCI 0 first */
        iface->dci_stack[iface->num_dci - 1 - i] = i;
    }
    iface->dci_top = iface->num_dci;
    return UCS_OK;
}

void strand_dc_tmp_reg_release(strand_dc_iface_t *iface,
                               strand_dc_tmp_reg_t *reg)
{
    unsigned i;

    for (i = 0; i < reg->count; ++i) {
        uct_md_mem_dereg(&iface->md->super, reg->memh[i]);
    }
    ucs_free(reg);
}

static void strand_dc_op_release(strand_dc_iface_t *iface, strand_dc_op_t *op)
{
    if (ucs_unlikely(op->tmp_reg != NULL)) {
        strand_dc_tmp_reg_release(iface, op->tmp_reg);
        op->tmp_reg = NULL;
    }
    if (op->desc != NULL) {
        ucs_mpool_put_inline(op->desc);
        op->desc = NULL;
    }
}

void strand_dc_dci_pool_cleanup(strand_dc_iface_t *iface)
{
    strand_dc_dci_t *dci;
    unsigned i;

    if (iface->dcis == NULL) {
        return;
    }
    for (i = 0; i < iface->num_dci; ++i) {
        dci = &iface->dcis[i];
        if (dci->ops != NULL) {
            /* descriptors of work still on the wire at close */
            while (dci->op_tail != dci->op_head) {
                strand_dc_op_release(iface, &dci->ops[dci->op_tail++ &
                                               dci->ops_mask]);
            }
        }
        if (i < iface->num_dci_created) {
            iface->dev->ops->destroy_qp(iface->dev, &dci->qp);
        }
        ucs_free(dci->ops);
    }
    ucs_free(iface->dcis);
    ucs_free(iface->dci_stack);
    iface->dcis      = NULL;
    iface->dci_stack = NULL;
}

int strand_dc_dci_pool_busy(strand_dc_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        if (strand_dc_dci_outstanding(&iface->dcis[i]) > 0) {
            return 1;
        }
    }
    return 0;
}

/* Back to the pool once nothing is outstanding. */
void strand_dc_dci_release_if_idle(strand_dc_iface_t *iface,
                                   strand_dc_dci_t *dci)
{
    if (!dci->busy || (strand_dc_dci_outstanding(dci) > 0)) {
        return;
    }
    if (dci->ep != NULL) {
        dci->ep->dci = STRAND_DC_DCI_NONE;
        dci->ep      = NULL;
    }
    dci->busy = 0;
    ucs_assert(iface->dci_top < iface->num_dci);
    iface->dci_stack[iface->dci_top++] = dci->index;
}

static void strand_dc_op_complete(strand_dc_iface_t *iface,
                                  strand_dc_op_t *op, ucs_status_t status)
{
    if (status == UCS_OK) {
        switch (op->type) {
        case STRAND_DC_OP_GET_BCOPY:
            op->u.unpack.cb(op->u.unpack.arg, op->desc->data,
                            op->u.unpack.length);
            break;
        case STRAND_DC_OP_FETCH32: {
            uint32_t v;
            memcpy(&v, op->desc->data, sizeof(v));
            *(uint32_t*)op->u.result = iface->config.atomic_reply_be ?
                                       be32toh(v) : v;
            break;
        }
        case STRAND_DC_OP_FETCH64: {
            uint64_t v;
            memcpy(&v, op->desc->data, sizeof(v));
            *(uint64_t*)op->u.result = iface->config.atomic_reply_be ?
                                       be64toh(v) : v;
            break;
        }
        default:
            break;
        }
    }
    strand_dc_op_release(iface, op);
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
}

static ucs_status_t strand_dc_syndrome_status(uint8_t syndrome)
{
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
        return UCS_ERR_CONNECTION_RESET;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/*
 * An error CQE on dci (already consumed from the CQ): fail the owning ep's
 * outstanding work, reset the DCI, put it back, tell the ep's owner.
 */
static void strand_dc_dci_handle_error(strand_dc_iface_t *iface,
                                       strand_dc_dci_t *dci,
                                       struct mlx5_cqe64 *cqe)
{
    uint8_t syndrome     = strand_cqe_syndrome(cqe);
    uint16_t wqe_counter = strand_cqe_wqe_counter(cqe);
    ucs_status_t status  = strand_dc_syndrome_status(syndrome);
    strand_dc_ep_t *ep   = dci->ep;
    strand_dev_t *dev    = iface->dev;
    strand_dc_op_t *op;
    ucs_status_t op_status;
    int err, before;

    ucs_debug("%s: DCI %u (qpn 0x%x) error syndrome 0x%x vendor 0x%x wqe %u "
              "ep %p: %s", dev->info.name, dci->index, dci->qp.qpn, syndrome,
              strand_cqe_vendor_syndrome(cqe), wqe_counter, ep,
              ucs_status_string(status));
    if (ucs_log_is_enabled(UCS_LOG_LEVEL_DEBUG)) {
        struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(dci->sq_buf,
                                                      dci->wqe_cnt,
                                                      wqe_counter);
        const uint32_t *w = (const uint32_t*)ctrl;
        unsigned i, ds = strand_ctrl_ds(ctrl);

        for (i = 0; i < ds * 4; i += 4) {
            const uint32_t *u = (const uint32_t*)
                    strand_sq_wrap((uint8_t*)w + i * 4, dci->sq_buf,
                                   dci->sq_end);
            ucs_debug("  wqe[%u]: %08x %08x %08x %08x", i / 4, be32toh(u[0]),
                      be32toh(u[1]), be32toh(u[2]), be32toh(u[3]));
        }
    }

    /* the DCI leaves its ep now: the ep owner may destroy the ep from the
     * callbacks below */
    if (ep != NULL) {
        ep->dci = STRAND_DC_DCI_NONE;
        dci->ep = NULL;
        ep->flags |= STRAND_DC_EP_FLAG_FAILED;
        ep->status = status;
    }

    /* WQEs before the failing one completed (their CQEs came first); the
     * failing one and everything after it fail */
    before = 1;
    while (dci->op_tail != dci->op_head) {
        op = &dci->ops[dci->op_tail++ & dci->ops_mask];
        if (op->wqe_idx == wqe_counter) {
            before = 0;
        }
        op_status      = before ? UCS_OK : status;
        dci->avail_bbs += op->bbs;
        strand_dc_op_complete(iface, op, op_status);
    }

    err = dev->ops->reset_dci(dev, &dci->qp, &iface->dci_attr);
    if (err != 0) {
        ucs_error("%s: failed to reset DCI %u: %s; it is not used again",
                  dev->info.name, dci->index, strerror(err));
        dci->broken = 1;
    } else {
        strand_dc_dci_geometry(dci);
        dci->busy = 0;
        iface->dci_stack[iface->dci_top++] = dci->index;
    }

    if (ep != NULL) {
        strand_dc_ep_set_failed(iface, ep, status);
    }
}

/* Retire the WQEs of dci up to and including wqe_counter. */
static void strand_dc_dci_retire(strand_dc_iface_t *iface,
                                 strand_dc_dci_t *dci, uint16_t wqe_counter)
{
    strand_dc_op_t *op;
    int last;

    while (dci->op_tail != dci->op_head) {
        op   = &dci->ops[dci->op_tail++ & dci->ops_mask];
        last = (op->wqe_idx == wqe_counter);
        dci->avail_bbs += op->bbs;
        strand_dc_op_complete(iface, op, UCS_OK);
        if (last) {
            break;
        }
    }
}

unsigned strand_dc_dci_tx_progress(strand_dc_iface_t *iface)
{
    strand_dev_cq_t *cq = &iface->tx_cq;
    struct mlx5_cqe64 *cqe;
    strand_dc_dci_t *dci;
    strand_dc_ep_t *ep;
    unsigned count = 0;
    uint32_t uidx;

    while ((cqe = strand_cqe_get(cq->dv.buf, cq->dv.cqe_cnt,
                                 iface->tx_ci)) != NULL) {
        uidx = strand_cqe_user_index(cqe);
        ++iface->tx_ci;
        if (ucs_unlikely(uidx >= iface->num_dci)) {
            ucs_error("%s: send CQE with unknown user index %u",
                      iface->dev->info.name, uidx);
            strand_cq_update_ci(cq->dv.dbrec, iface->tx_ci);
            continue;
        }
        dci = &iface->dcis[uidx];
        if (ucs_unlikely(strand_cqe_is_error(cqe))) {
            /* consumed before the reset: the reset removes the DCI's CQEs
             * that follow (flushes) */
            strand_cq_update_ci(cq->dv.dbrec, iface->tx_ci);
            strand_dc_dci_handle_error(iface, dci, cqe);
            ++count;
            continue;
        }
        strand_dc_dci_retire(iface, dci, strand_cqe_wqe_counter(cqe));
        strand_cq_update_ci(cq->dv.dbrec, iface->tx_ci);
        ++count;

        ep = dci->ep;
        strand_dc_dci_release_if_idle(iface, dci);
        if (ep != NULL) {
            strand_dc_ep_schedule(iface, ep);
        }
    }
    return count;
}
