/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side (rx.c): the SRQ's ring of buffers, receive CQEs to
 * active messages (the transport's own to flow control, tagged ones to
 * tag matching), refill.
 */
#ifndef STRAND_RX_H_
#define STRAND_RX_H_

#include "iface.h"

/* The consumer index goes to the device once per poll (and at every
 * multiple of STRAND_RX_CI_BATCH in a long one), after the CQEs are
 * handled: a CQE is parsed in place, its slot still the transport's.
 * Handling may post list operations whose completions come to this CQ,
 * and the CQ has room for what is outstanding, not for a whole poll's
 * CQEs twice: hence the batch. A power of two (iface->rx_cur's runs). */
#define STRAND_RX_CI_BATCH 64

ucs_status_t
     strand_rx_init(strand_iface_t *iface, const uct_iface_params_t *params);
void strand_rx_cleanup(strand_iface_t *iface);
unsigned strand_rx_progress(strand_iface_t *iface);
void     strand_rx_refill(strand_iface_t *iface);

#endif
