/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Operations that retire (op_done.c).
 */
#ifndef STRAND_OP_DONE_H_
#define STRAND_OP_DONE_H_

#include "txq.h"

/* complete an operation (status UCS_OK: unpack / copy results) and free
 * its slot; the ep's count of outstanding operations goes down */
void strand_op_complete(strand_iface_t *iface, strand_txq_t *txq,
                        strand_op_t *op, ucs_status_t status);
/* ep is destroyed: the completions of its outstanding operations on txq
 * are called now with UCS_ERR_CANCELED, nothing is written to its buffers
 * later; the WQEs retire (and free their descriptors) as usual */
void strand_txq_orphan(strand_iface_t *iface, strand_txq_t *txq,
                       struct strand_ep *ep);

#endif
