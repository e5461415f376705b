/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's responder QPs leave through ERR, as UCX's rc transports'
 * QPs do (rc_mlx5_ep.c, rc_ep.c).
 *
 * A responder QP takes receive WQEs from the interface's SRQ. One that a
 * message was being written into when the QP goes is returned only by a
 * flush CQE, and only a QP that enters ERR writes one: destroyed straight
 * from RTS, the QP takes the WQE with it, and a peer that connects and
 * disconnects in the middle of its messages drains the SRQ until every
 * sender waits on RNR. So a QP that goes enters ERR, stays (its QP number
 * known here, so that its CQEs are no stranger's) until the device says
 * it takes no more receives (IBV_EVENT_QP_LAST_WQE_REACHED, which follows
 * its flush CQEs) or STRAND_RC_RETIRE_TIMEOUT passes, then the CQs are
 * polled empty (the flush CQE gives the WQE back to the SRQ) and the QP is
 * destroyed. Everything here runs on the worker's thread.
 */
#ifndef STRAND_RC_RETIRE_H_
#define STRAND_RC_RETIRE_H_

#include "rc.h"

/* The longest a QP waits for its event: it is destroyed then anyway (a
 * device whose events another process's reader took, or none came). */
#define STRAND_RC_RETIRE_TIMEOUT_MS 100

void strand_rc_retire_init(strand_rc_iface_t *iface);
/* `qp` (connected, in any state) goes through ERR; *qp is the retiring
 * list's from now on (qp->h is NULL when this returns) */
void strand_rc_retire(strand_rc_iface_t *iface, strand_dev_qp_t *qp);
/* destroy the QPs whose time has come; how many went */
unsigned strand_rc_retire_progress(strand_rc_iface_t *iface);
/* whether QP number `qpn` is one that is leaving (its CQEs are flushes of
 * work nobody waits for any more) */
int strand_rc_retire_has(const strand_rc_iface_t *iface, uint32_t qpn);
/* the interface closes: the rest go now */
void strand_rc_retire_cleanup(strand_rc_iface_t *iface);

#endif
