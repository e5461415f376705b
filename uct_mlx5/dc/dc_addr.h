/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's interface address: the DCT number, and whether its messages
 * carry a tag-matching header; the address vector an endpoint puts in
 * every WQE (the port's address, common/port_addr.h, with the DC key).
 */
#ifndef STRAND_DC_ADDR_H_
#define STRAND_DC_ADDR_H_

#include "dc.h"
#include "uct_mlx5/common/port_addr.h"

enum {
    STRAND_DC_IFACE_ADDR_FLAG_TM = UCS_BIT(0) /* every message to it starts
                                                 with a tag-matching header */
};

/* Interface address: the DCT number (24 bits), and flags. */
typedef struct strand_dc_iface_addr {
    uint8_t dctn[3];
    uint8_t flags;
} UCS_S_PACKED strand_dc_iface_addr_t;

void     strand_dc_addr_pack_iface(const strand_iface_t   *iface,
                                   strand_dc_iface_addr_t *addr);
uint32_t strand_dc_addr_dctn(const strand_dc_iface_addr_t *addr);
/* Both sides agree on tag matching (its header is in every message). */
int strand_dc_addr_iface_compatible(const strand_iface_t         *iface,
                                    const strand_dc_iface_addr_t *addr);

#endif
