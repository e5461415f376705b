/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send completions (tx_cqe.c).
 */
#ifndef STRAND_TX_CQE_H_
#define STRAND_TX_CQE_H_

#include "txq.h"

/* Send completions: CQEs until TX_MAX_POLL sends completed (progress), or
 * max of them (UINT_MAX: the CQs polled empty); the CQEs consumed */
unsigned strand_txq_tx_progress(strand_iface_t *iface);
unsigned strand_txq_tx_poll_max(strand_iface_t *iface, unsigned max);

#endif
