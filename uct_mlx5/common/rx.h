/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side (rx.c): the SRQ's ring of buffers, receive CQEs to
 * active messages (the transport's own to flow control, tagged ones to
 * tag matching), refill.
 */
#ifndef STRAND_RX_H_
#define STRAND_RX_H_

#include "iface.h"

ucs_status_t strand_rx_init(strand_iface_t *iface,
                            const uct_iface_params_t *params);
void strand_rx_cleanup(strand_iface_t *iface);
unsigned strand_rx_progress(strand_iface_t *iface);
void strand_rx_refill(strand_iface_t *iface);

#endif
