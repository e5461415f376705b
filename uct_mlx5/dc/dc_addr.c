/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's interface address and address vectors (dc_addr.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_addr.h"

void strand_dc_addr_pack_iface(const strand_iface_t   *iface,
                               strand_dc_iface_addr_t *addr)
{
    uint32_t dctn = strand_dc_iface(iface)->dct.qpn;

    addr->dctn[0] = dctn & 0xff;
    addr->dctn[1] = (dctn >> 8) & 0xff;
    addr->dctn[2] = (dctn >> 16) & 0xff;
    addr->flags = (iface->config.am_tmh > 0) ? STRAND_DC_IFACE_ADDR_FLAG_TM : 0;
}

int strand_dc_addr_iface_compatible(const strand_iface_t         *iface,
                                    const strand_dc_iface_addr_t *addr)
{
    return !!(addr->flags & STRAND_DC_IFACE_ADDR_FLAG_TM) ==
           (iface->config.am_tmh > 0);
}

uint32_t strand_dc_addr_dctn(const strand_dc_iface_addr_t *addr)
{
    return (uint32_t)addr->dctn[0] | ((uint32_t)addr->dctn[1] << 8) |
           ((uint32_t)addr->dctn[2] << 16);
}
