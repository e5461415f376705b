/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's endpoints: the peer's DCT and the address vector to it, and
 * the short entry points for the interface's kind of address vector.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_ep.h"
#include "dc_addr.h"
#include "uct_mlx5/common/ep_ops.h"
#include "uct_mlx5/common/ep_short.h"

#include <ucs/debug/log.h>
#include <inttypes.h>

/* the shared endpoint, whose transport part (strand_dc_ep_addr_init) sets
 * the DCT */
static UCS_CLASS_INIT_FUNC(strand_dc_ep_t, const uct_ep_params_t *params)
{
    UCS_CLASS_CALL_SUPER_INIT(strand_ep_t, params);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(strand_dc_ep_t)
{
}

UCS_CLASS_DEFINE(strand_dc_ep_t, strand_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(strand_dc_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(strand_dc_ep_t, uct_ep_t);

void strand_dc_lane_show(strand_iface_t *iface, const strand_txq_t *dci,
                         unsigned lane, ucs_string_buffer_t *strb)
{
    const strand_dc_lane_t *ds = strand_dc_lane(iface, dci, lane);

    ucs_string_buffer_appendf(strb, " dest 0x%" PRIx64 "%s", ds->dest,
                              ds->mixed ? " mixed" : "");
}

/* dc_strand's part of an endpoint (strand_tl_ops_t ep_init): the peer's
 * DCT and the address vector to it. */
ucs_status_t strand_dc_ep_addr_init(strand_iface_t *iface, strand_ep_t *ep,
                                    const uct_ep_params_t *params)
{
    strand_dc_ep_t               *dc_ep = ucs_derived_of(ep, strand_dc_ep_t);
    const strand_port_addr_t     *dev_addr;
    const strand_dc_iface_addr_t *iface_addr;
    unsigned                      av_size;
    ucs_status_t                  status;
    char                          peer[96], buf[160];
    const char                   *why;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    dev_addr   = (const strand_port_addr_t *)params->dev_addr;
    iface_addr = (const strand_dc_iface_addr_t *)params->iface_addr;
    why = strand_port_addr_unreachable(iface, dev_addr, buf, sizeof(buf));
    if (why != NULL) {
        ucs_error("%s: dc_strand: the peer is not reachable from here: %s",
                  iface->dev->info.name, why);
        return UCS_ERR_UNREACHABLE;
    }
    if (!strand_dc_addr_iface_compatible(iface, iface_addr)) {
        ucs_error("%s: dc_strand: the peer interface has hardware tag "
                  "matching %s and this one %s (UCX_DC_STRAND_TM_ENABLE "
                  "must agree)",
                  iface->dev->info.name,
                  (iface_addr->flags & STRAND_DC_IFACE_ADDR_FLAG_TM) ? "on" :
                                                                       "off",
                  iface->config.am_tmh ? "on" : "off");
        return UCS_ERR_UNREACHABLE;
    }
    dc_ep->dct_num = strand_dc_addr_dctn(iface_addr);
    status = strand_port_addr_make_av(iface, dev_addr, dc_ep->dct_num, &ep->av,
                                      &av_size);
    if (status != UCS_OK) {
        return status;
    }
    ep->av.key.dc_key = htobe64(STRAND_DC_ACCESS_KEY);
    ep->av_ds         = av_size / STRAND_WQE_DS;
    ep->dest_key      = strand_av_peer_key(&ep->av);
    ep->dest          = ep->dest_key ^ ((uint64_t)dc_ep->dct_num << 24);
    ucs_debug("%s: ep %p to %s", iface->dev->info.name, ep,
              strand_av_str(&ep->av, peer, sizeof(peer)));
    return UCS_OK;
}

/* the peer's DCT, on the port its address vector names, in a compatible
 * interface */
int strand_dc_ep_is_connected(strand_iface_t *iface, const strand_ep_t *ep,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr)
{
    const strand_dc_iface_addr_t *dc_addr = (const void *)iface_addr;

    return strand_port_addr_is_reachable(iface, (const void *)dev_addr) &&
           strand_dc_addr_iface_compatible(iface, dc_addr) &&
           (ucs_derived_of(ep, strand_dc_ep_t)->dct_num ==
            strand_dc_addr_dctn(dc_addr)) &&
           strand_av_names_port(&ep->av, (const void *)dev_addr);
}

const char *strand_dc_ep_peer_str(strand_iface_t *iface, const strand_ep_t *ep,
                                  char *buf, size_t max)
{
    return strand_av_str(&ep->av, buf, max);
}

/* the short entry points of InfiniBand's base address vector and RoCE's
 * with a GRH */
STRAND_EP_SHORT_ENTRY_POINTS(strand_dc_ep, 1)
STRAND_EP_SHORT_ENTRY_POINTS(strand_dc_ep_grh, 3)

void strand_dc_ep_short_ops(strand_iface_t *iface, uct_iface_ops_t *ops)
{
    if (iface->config.av_size == STRAND_AV_FULL_SIZE) {
        strand_ep_short_ops_set(ops, &strand_dc_ep_grh_entry,
                                &strand_dc_ep_grh_kick_entry, iface);
        strand_ep_short_shapes(iface, 3);
    } else {
        strand_ep_short_ops_set(ops, &strand_dc_ep_entry,
                                &strand_dc_ep_kick_entry, iface);
        strand_ep_short_shapes(iface, 1);
    }
}
