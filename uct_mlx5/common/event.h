/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion events (event.c): the interface's event fd, arming its CQs
 * (and a send CQ made later), what says there is work without an event.
 */
#ifndef STRAND_EVENT_H_
#define STRAND_EVENT_H_

#include "iface.h"

/* Arm a send CQ for its next CQE */
void         strand_tx_cq_arm(strand_tx_cq_t *tx);
ucs_status_t strand_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t strand_iface_event_arm(uct_iface_h tl_iface, unsigned events);

#endif
