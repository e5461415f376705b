/*
 * Integrity-checked GETs on dc_strand (dc_integrity.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_integrity.h"
#include "dc_ep_post.h"

#include <ucs/debug/log.h>

ucs_status_t strand_dc_integrity_init(strand_dc_iface_t *iface,
                                      const strand_dc_iface_config_t *config)
{
    strand_integrity_kind_t kind = (strand_integrity_kind_t)config->integrity;

    if (kind == STRAND_INTEGRITY_OFF) {
        return strand_integrity_init(&iface->integrity, iface->dev, kind, 0,
                                     0, 0);
    }
    if (iface->md->integrity != kind) {
        /* the MD packs the signing keys: it read the same option from
         * the environment when it was opened */
        ucs_error("%s: UCX_DC_STRAND_INTEGRITY=%s, but the memory domain "
                  "signs with %s (it reads the option from the environment "
                  "when it opens)", iface->dev->info.name,
                  strand_integrity_kind_names[kind],
                  strand_integrity_kind_names[iface->md->integrity]);
        return UCS_ERR_INVALID_PARAM;
    }
    /* as many checked GETs as the DCIs can have READs outstanding: a GET
     * never waits for a landing mkey longer than for a send slot */
    return strand_integrity_init(&iface->integrity, iface->dev, kind,
                                 iface->config.max_sge,
                                 ucs_min(1024, iface->num_dci *
                                               iface->config.tx_queue_len),
                                 config->integrity_retries);
}

void strand_dc_integrity_cleanup(strand_dc_iface_t *iface)
{
    char buf[256];

    strand_integrity_get_t *get;

    if (iface->integrity.kind == STRAND_INTEGRITY_OFF) {
        return;
    }
    /* reads again still waiting at close: their registrations go */
    while ((get = iface->integrity_retry) != NULL) {
        iface->integrity_retry = get->next;
        if (get->tmp_reg != NULL) {
            strand_dc_tmp_reg_release(iface, get->tmp_reg);
        }
    }
    strand_integrity_summary(&iface->integrity, buf, sizeof(buf));
    ucs_info("%s: integrity %s", iface->dev->info.name, buf);
    strand_integrity_cleanup(&iface->integrity);
}

/* The READ of get: its blocks from the sender's signing mkey into the
 * landing mkey (zero-based, the length on the wire), on ep's DCI. */
static void strand_dc_integrity_post(strand_dc_iface_t *iface,
                                     strand_dc_ep_t *ep, strand_dc_dci_t *dci,
                                     strand_integrity_get_t *get)
{
    strand_dc_op_t op = {0};
    struct mlx5_wqe_ctrl_seg *ctrl;
    void *seg;

    ctrl = strand_dc_dci_wqe_start(dci, &ep->av, ep->av_ds, &seg);
    strand_set_raddr_seg(seg, get->wire_off, get->sig_rkey);
    seg  = strand_sq_next(seg, sizeof(struct mlx5_wqe_raddr_seg), dci->sq.buf,
                          dci->sq.end);
    strand_set_data_seg(seg, 0, get->wire_len, get->mkey.key);
    op.type     = STRAND_DC_OP_CHECKED;
    op.u.result = get;
    strand_dc_ep_post(iface, ep, dci, ctrl, MLX5_OPCODE_RDMA_READ, 0,
                      STRAND_DC_EP_DS(ep) + 2,
                      strand_dc_ep_fence_mode(iface, ep), &op);
}

ucs_status_t strand_dc_ep_get_checked(strand_dc_iface_t *iface,
                                      strand_dc_ep_t *ep,
                                      const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr,
                                      const strand_rkey_sig_t *rk,
                                      uct_completion_t *comp)
{
    uint32_t lkeys[STRAND_DC_MAX_SGE];
    strand_dc_tmp_reg_t *reg = NULL;
    strand_integrity_get_t *get = NULL;
    strand_dc_dci_t *dci        = NULL;
    ucs_status_t status;

    status = strand_dc_iov_lkeys(iface, iov, iovcnt, lkeys, &reg);
    if (status != UCS_OK) {
        return status;
    }
    status = strand_dc_ep_get_dci(iface, ep, &dci);
    if (status == UCS_OK) {
        status = strand_integrity_get_start(&iface->integrity, rk,
                                            remote_addr, iov, iovcnt, lkeys,
                                            &get);
        if (status != UCS_OK) {
            strand_dc_ep_unlease_if_idle(iface, ep);
        }
    }
    if (status != UCS_OK) {
        if (reg != NULL) {
            strand_dc_tmp_reg_release(iface, reg);
        }
        return status;
    }
    get->ep      = ep;
    get->comp    = comp;
    get->tmp_reg = reg;
    strand_dc_integrity_post(iface, ep, dci, get);
    return UCS_INPROGRESS;
}

strand_integrity_get_t *
strand_dc_integrity_op_done(strand_dc_iface_t *iface, strand_dc_op_t *op,
                            ucs_status_t *status_p, uct_completion_t **comp_p)
{
    strand_integrity_get_t *get = op->u.result;
    ucs_status_t status         = *status_p;

    if (get->ep == NULL) {
        /* its ep is gone: nobody to tell, nothing to read again */
        op->tmp_reg  = get->tmp_reg;
        get->tmp_reg = NULL;
        *comp_p      = NULL;
        strand_integrity_get_release(&iface->integrity, get);
        return NULL;
    }
    if (status == UCS_OK) {
        status = strand_integrity_get_check(&iface->integrity, get);
        if (status == UCS_INPROGRESS) {
            *comp_p = NULL;
            return get;
        }
    }
    op->tmp_reg  = get->tmp_reg;
    get->tmp_reg = NULL;
    *comp_p      = get->comp;
    *status_p    = status;
    strand_integrity_get_release(&iface->integrity, get);
    return NULL;
}

/* A read again that will not go: its ep failed (or is being cancelled). */
static void strand_dc_integrity_finish(strand_dc_iface_t *iface,
                                       strand_integrity_get_t *get,
                                       ucs_status_t status)
{
    strand_dc_ep_t *ep     = get->ep;
    uct_completion_t *comp = get->comp;
    uct_completion_t *last = NULL;

    if (get->tmp_reg != NULL) {
        strand_dc_tmp_reg_release(iface, get->tmp_reg);
    }
    strand_integrity_get_release(&iface->integrity, get);
    if ((--ep->outstanding == 0) && (ep->held == 0)) {
        last = strand_dc_ep_idle(iface, ep);
    }
    strand_dc_ep_schedule(iface, ep);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
    if (last != NULL) {
        uct_invoke_completion(last, UCS_OK);
    }
}

/* Post the read again now: 1, or 0 when its ep has no room. The ep kept
 * the GET outstanding meanwhile (a flush waits for it): the post counts it
 * once more, so it is taken back. */
static int strand_dc_integrity_try(strand_dc_iface_t *iface,
                                   strand_integrity_get_t *get)
{
    strand_dc_ep_t *ep = get->ep;
    strand_dc_dci_t *dci;
    ucs_status_t status;

    if (ep->flags & STRAND_DC_EP_FLAG_FAILED) {
        strand_dc_integrity_finish(iface, get, ep->status);
        return 1;
    }
    status = strand_dc_ep_take_dci(iface, ep, &dci);
    if (status == UCS_ERR_NO_RESOURCE) {
        return 0;
    }
    if (status != UCS_OK) {
        strand_dc_integrity_finish(iface, get, status);
        return 1;
    }
    strand_dc_integrity_post(iface, ep, dci, get);
    ep->outstanding--;
    return 1;
}

void strand_dc_integrity_again(strand_dc_iface_t *iface,
                               strand_integrity_get_t *get)
{
    strand_integrity_get_t **pp;

    if ((iface->integrity_retry == NULL) && strand_dc_integrity_try(iface,
                                                                    get)) {
        return;
    }
    /* behind the ones already waiting, in order */
    get->next = NULL;
    for (pp = &iface->integrity_retry; *pp != NULL; pp = &(*pp)->next) {
    }
    *pp = get;
}

unsigned strand_dc_integrity_progress(strand_dc_iface_t *iface)
{
    strand_integrity_get_t *get;
    unsigned count = 0;

    while ((get = iface->integrity_retry) != NULL) {
        iface->integrity_retry = get->next;
        if (!strand_dc_integrity_try(iface, get)) {
            get->next              = iface->integrity_retry;
            iface->integrity_retry = get;
            break;
        }
        ++count;
    }
    return count;
}

void strand_dc_integrity_orphan_op(strand_dc_op_t *op)
{
    strand_integrity_get_t *get = op->u.result;
    uct_completion_t *comp      = get->comp;

    get->ep   = NULL;
    get->comp = NULL;
    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_ERR_CANCELED);
    }
}

void strand_dc_integrity_ep_gone(strand_dc_iface_t *iface, strand_dc_ep_t *ep)
{
    strand_integrity_get_t **pp = &iface->integrity_retry, *get;
    uct_completion_t *comp;

    while ((get = *pp) != NULL) {
        if (get->ep != ep) {
            pp = &get->next;
            continue;
        }
        *pp  = get->next;
        comp = get->comp;
        if (get->tmp_reg != NULL) {
            strand_dc_tmp_reg_release(iface, get->tmp_reg);
        }
        strand_integrity_get_release(&iface->integrity, get);
        ep->outstanding--;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_ERR_CANCELED);
        }
    }
}

void strand_dc_integrity_drop(strand_dc_iface_t *iface,
                              strand_integrity_get_t *get,
                              ucs_status_t status)
{
    uct_completion_t *comp = get->comp;

    if (get->tmp_reg != NULL) {
        strand_dc_tmp_reg_release(iface, get->tmp_reg);
    }
    strand_integrity_get_release(&iface->integrity, get);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}
