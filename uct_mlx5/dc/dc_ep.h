/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's endpoints: what the shared endpoint (common/ep.h) needs of
 * the DC transport.
 */
#ifndef STRAND_DC_EP_H_
#define STRAND_DC_EP_H_

#include "dc.h"
#include "uct_mlx5/common/ep.h"

/* dc_strand's part of an endpoint: the peer's DCT and the address vector
 * (strand_tl_ops_t ep_init) */
ucs_status_t strand_dc_ep_addr_init(strand_iface_t *iface, strand_ep_t *ep,
                                    const uct_ep_params_t *params);
/* the peer of ep for the log: its DCT, and the path to it */
int strand_dc_ep_is_connected(strand_iface_t *iface, const strand_ep_t *ep,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr);
const char *strand_dc_ep_peer_str(strand_iface_t *iface, const strand_ep_t *ep,
                                  char *buf, size_t max);
UCS_CLASS_DECLARE_NEW_FUNC(strand_dc_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(strand_dc_ep_t, uct_ep_t);
/* a stream's destinations, in the VFS file of the DCIs */
void strand_dc_lane_show(strand_iface_t *iface, const strand_txq_t *dci,
                         unsigned lane, ucs_string_buffer_t *strb);
/* am_short and put_short for the interface's address vector and TMH */
void strand_dc_ep_short_ops(strand_iface_t *iface, uct_iface_ops_t *ops);
/* the device's rendezvous, its RAVH naming this interface's DCT */
ucs_status_ptr_t
strand_dc_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags,
                            uct_completion_t *comp);

#endif
