/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's DCIs (dc_dci.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_dci.h"
#include "uct_mlx5/common/port_addr.h"
#include "dc_policy.h"
#include "uct_mlx5/common/iface_class.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <errno.h>
#include <string.h>

/* dc_strand's DCT, on the interface's SRQ and receive CQ */
static ucs_status_t strand_dc_dct_open(strand_dc_iface_t *iface)
{
    strand_dev_t         *dev = iface->super.dev;
    strand_dev_dct_attr_t dct_attr;
    strand_port_addr_t    self;
    ucs_status_t          status;
    unsigned              av_size = 0;
    int                   err;

    memset(&dct_attr, 0, sizeof(dct_attr));
    dct_attr.cq             = &iface->super.rx_cq;
    dct_attr.path           = iface->super.path;
    dct_attr.srq            = &iface->super.srq;
    dct_attr.access_key     = STRAND_DC_ACCESS_KEY;
    dct_attr.min_rnr_timer  = iface->super.min_rnr_timer;
    dct_attr.scatter_to_cqe = iface->super.config.rx_inline;
    err = strand_dev_create_dct(dev, &dct_attr, &iface->dct);
    if (err != 0) {
        ucs_error("%s: failed to create DCT: %s", dev->info.name,
                  strerror(err));
        return strand_errno_status(err);
    }
    iface->have_dct = 1;
    /* the NOPs of its DCIs name it: an address that goes nowhere (a NOP
     * sends nothing), as every DCI WQE must carry one */
    strand_port_addr_pack(&iface->super, &self);
    status = strand_port_addr_make_av(&iface->super, &self, iface->dct.qpn,
                                      &iface->super.nop_av, &av_size);
    iface->super.nop_av_ds = (uint8_t)(av_size / STRAND_WQE_DS);
    return status;
}

static ucs_status_t
strand_dc_dci_create(strand_iface_t *iface, strand_txq_t *dci, unsigned i)
{
    strand_dev_t *dev = iface->dev;
    ucs_status_t  status;
    int           err;

    status = strand_txq_slot_init(iface, dci, i);
    if (status != UCS_OK) {
        return status;
    }
    err = strand_dev_create_dci(dev, &iface->sq_attr, &dci->qp);
    if (err != 0) {
        ucs_error("%s: failed to create DCI %u: %s", dev->info.name, i,
                  strerror(err));
        dci->qp.h = NULL;
        return UCS_ERR_IO_ERROR;
    }
    return strand_txq_attach_qp(iface, dci);
}

ucs_status_t strand_dc_sq_open(strand_iface_t *iface)
{
    strand_dc_iface_t *dc = strand_dc_iface(iface);
    ucs_status_t       status;
    unsigned           i;

    status = strand_dc_dct_open(dc);
    if (status != UCS_OK) {
        return status;
    }
    dc->dci_stack = ucs_calloc(iface->num_txqs, sizeof(*dc->dci_stack),
                               "strand_dc_dci_stack");
    dc->dcis = ucs_calloc(iface->num_txqs, sizeof(*dc->dcis), "strand_dc_dcis");
    dc->dci_lanes = ucs_calloc(iface->num_txqs * iface->config.num_lanes,
                               sizeof(*dc->dci_lanes), "strand_dc_dci_lanes");
    if ((dc->dci_stack == NULL) || (dc->dcis == NULL) ||
        (dc->dci_lanes == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < iface->num_txqs; ++i) {
        dc->dcis[i].lanes = &dc->dci_lanes[i * iface->config.num_lanes];
    }
    /* the streams the DCIs are made with */
    strand_dc_policy_dci_attr(dc, &iface->sq_attr);
    for (i = 0; i < iface->num_txqs; ++i) {
        iface->txq_hwm = i + 1; /* cleaned up, made or not */
        status         = strand_dc_dci_create(iface, &iface->txqs[i], i);
        if (status != UCS_OK) {
            return status;
        }
    }
    strand_dc_policy_init(dc);
    return UCS_OK;
}

void strand_dc_sq_close(strand_iface_t *iface)
{
    strand_dc_iface_t *dc = strand_dc_iface(iface);

    if (dc->have_dct) {
        iface->dev->ops->destroy_qp(iface->dev, &dc->dct);
        dc->have_dct = 0;
    }
    ucs_free(dc->dci_stack);
    ucs_free(dc->dcis);
    ucs_free(dc->dci_lanes);
    dc->dci_stack = NULL;
    dc->dcis      = NULL;
    dc->dci_lanes = NULL;
    dc->dci_top   = 0;
}

int strand_dc_dci_reset(strand_iface_t *iface, strand_txq_t *dci)
{
    strand_dev_t *dev = iface->dev;
    int           err;

    err = strand_dev_reset_dci(dev, &dci->qp, &iface->sq_attr);
    if (err != 0) {
        ucs_error("%s: failed to reset DCI %u (qpn 0x%x): %s; it is not "
                  "used again",
                  dev->info.name, dci->index, dci->qp.qpn, strerror(err));
        strand_txq_set_state(iface, dci, STRAND_TXQ_BROKEN);
        return err;
    }
    strand_txq_geometry(iface, dci);
    memset(dci->ops, 0, dci->sq.wqe_cnt * sizeof(*dci->ops));
    return 0;
}

int strand_dc_stream_reset(strand_iface_t *iface, strand_txq_t *dci,
                           unsigned lane)
{
    return iface->dev->ops->dci_stream_id_reset(iface->dev, &dci->qp,
                                                dci->lanes[lane].id);
}

int strand_dc_dci_pool_show(strand_iface_t *iface, ucs_string_buffer_t *strb)
{
    strand_dc_iface_t *dc = strand_dc_iface(iface);
    unsigned           i, on_stack[STRAND_DC_MAX_DCI] = {0};
    int                ok = 1;

    ucs_string_buffer_appendf(strb, "policy %s streams %u\n",
                              strand_dc_tx_policy_names[dc->tx_policy],
                              iface->config.num_lanes);
    if (dc->no_devx) {
        /* TX_POLICY=auto would have chosen streams */
        ucs_string_buffer_appendf(strb, "auto no_devx\n");
    }
    ucs_string_buffer_appendf(strb, "free");
    for (i = 0; i < dc->dci_top; ++i) {
        ucs_string_buffer_appendf(strb, " %u", dc->dci_stack[i]);
        if ((dc->dci_stack[i] >= iface->num_txqs) ||
            on_stack[dc->dci_stack[i]]++) {
            ok = 0;
        }
    }
    ucs_string_buffer_appendf(strb, "\n");
    if (dc->tx_policy == STRAND_DC_TX_POLICY_STREAMS) {
        return ok; /* no stack: a DCI is free when nobody leases it */
    }
    /* dcs: the stack holds every index once and exactly the FREE DCIs */
    for (i = 0; ok && (i < iface->txq_hwm); ++i) {
        ok = ((iface->txqs[i].state == STRAND_TXQ_FREE) == (on_stack[i] == 1));
    }
    return ok;
}
