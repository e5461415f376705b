/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's DCIs: its send queues (common/txq.h), made at the
 * interface's open, the DCT beside them, reset after an error (the DCI, or
 * one of its streams: the lanes of a DCI are its streams), and the pool's
 * free stack in the VFS file of the send queues.
 */
#ifndef STRAND_DC_DCI_H_
#define STRAND_DC_DCI_H_

#include "dc.h"
#include "uct_mlx5/common/txq.h"

/* strand_tl_ops_t: the DCT, every DCI and the policy's free stack (open),
 * gone (close) */
ucs_status_t strand_dc_sq_open(strand_iface_t *iface);
void         strand_dc_sq_close(strand_iface_t *iface);
/* Back to RESET and up to RTS: a DCI that went to ERR, once every CQE of
 * its old incarnation was consumed. 0 or errno. */
int strand_dc_dci_reset(strand_iface_t *iface, strand_txq_t *dci);
/* The stream of lane `lane` of dci, every WQE of it back: reset. 0 or
 * errno. */
int strand_dc_stream_reset(strand_iface_t *iface, strand_txq_t *dci,
                           unsigned lane);
/* "policy <p> streams <n>", "auto no_devx" when TX_POLICY=auto left out
 * the device's streams for want of DEVX, and "free <DCIs on the stack>":
 * the lines of the VFS file dci_pool before the DCIs', and whether the
 * stack holds every free DCI once */
int strand_dc_dci_pool_show(strand_iface_t *iface, ucs_string_buffer_t *strb);

#endif
