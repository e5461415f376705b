/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints that fail (ep_fail.c).
 */
#ifndef STRAND_EP_FAIL_H_
#define STRAND_EP_FAIL_H_

#include "ep.h"

/* What one error says: the status the eps it belongs to fail with, and the
 * decoded error for the log. */
typedef struct strand_failure {
    ucs_status_t status;
    uint8_t      syndrome;
    char         detail[STRAND_FAILED_DETAIL];
} strand_failure_t;

/* ep fails with f: it takes no more work now; its owner is told by
 * strand_ep_fail_notify */
void strand_ep_fail_add(strand_iface_t *iface, const strand_failure_t *f,
                        strand_ep_t *ep);
/* the same, with a status and a detail, and its pending requests run
 * (and fail) from the dispatch */
void strand_ep_fail(strand_iface_t *iface, strand_ep_t *ep, ucs_status_t status,
                    const char *detail);
/* tell the owners of the eps that failed (an owner may destroy any ep) */
void strand_ep_fail_notify(strand_iface_t *iface);
/* ep is destroyed: no owner is told of it any more */
void strand_ep_fail_forget(strand_iface_t *iface, strand_ep_t *ep);
/* an error of ep's send queue: fail the ep (ops purged by the caller);
 * detail: the decoded error CQE, for the log */
void strand_ep_set_failed(strand_iface_t *iface, strand_ep_t *ep,
                          ucs_status_t status, const char *detail);
/* the operations ep took while failing complete with status */
void strand_ep_complete_taken(strand_ep_t *ep, ucs_status_t status);
/* ep has nothing outstanding any more: its lease ends. Returns the
 * completion of a flush(CANCEL) that waited for this, to be invoked by
 * the caller last (its callback may destroy ep). */
uct_completion_t *strand_ep_idle(strand_iface_t *iface, strand_ep_t *ep);

#endif
