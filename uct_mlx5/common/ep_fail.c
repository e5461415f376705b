/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint that fails: it takes no more work, its owner is told once
 * the transport's state is consistent again (uct_iface_handle_ep_err),
 * what it took while failing completes with its status.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ep_fail.h"
#include "txq_state.h"
#include "ep_pending.h"
#include "tag.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <string.h>

/* The operations ep took while failing complete with `status`. */
void strand_ep_complete_taken(strand_ep_t *ep, ucs_status_t status)
{
    uint32_t i, n = ep->num_taken;

    ep->num_taken = 0;
    for (i = 0; i < n; ++i) {
        uct_invoke_completion(ep->taken[i], status);
    }
}

void strand_ep_set_failed(strand_iface_t *iface, strand_ep_t *ep,
                          ucs_status_t status, const char *detail)
{
    char         peer[96];
    ucs_status_t ret;

    strand_ep_complete_taken(ep, status);
    /* its rendezvous sends will hear no FIN */
    strand_tag_ep_purge(iface, ep, status);
    if (ep->flags & STRAND_EP_FLAG_INTERNAL) {
        ucs_debug("%s: internal endpoint to %s failed: %s: %s",
                  iface->dev->info.name,
                  iface->tl->ep_peer_str(iface, ep, peer, sizeof(peer)),
                  ucs_status_string(status), detail);
        return;
    }
    ret = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                  status);
    /* as UCX's IB transports: a peer gone at UCX_<TL>_FAILURE's level (diag
     * by default), any other error (access, protection) as an error, and
     * fatal when the owner could not handle it */
    ucs_log(uct_base_iface_failure_log_level(&iface->super, ret, status),
            "%s: endpoint %p to %s failed: %s: %s", iface->dev->info.name, ep,
            iface->tl->ep_peer_str(iface, ep, peer, sizeof(peer)),
            ucs_status_string(status), detail);
}

uct_completion_t *strand_ep_idle(strand_iface_t *iface, strand_ep_t *ep)
{
    uct_completion_t *comp = ep->cancel_comp;

    ep->cancel_comp = NULL;
    iface->tl->sq_release(iface, ep);
    strand_ep_tx_update(iface, ep);
    return comp;
}

/* ep fails: it takes no more work now; its owner is told once the
 * transport's state is consistent again (strand_ep_fail_notify). */
void strand_ep_fail_add(strand_iface_t *iface, const strand_failure_t *f,
                        strand_ep_t *ep)
{
    strand_failed_t *q;
    unsigned         max;

    if ((ep == NULL) || (ep->flags & STRAND_EP_FLAG_FAILED)) {
        return;
    }
    ep->flags |= STRAND_EP_FLAG_FAILED;
    ep->status = f->status;
    strand_ep_tx_update(iface, ep);
    STRAND_EP_STAT(ep, ERROR);
    if (iface->num_failed == iface->max_failed) {
        max = ucs_max(16, iface->max_failed * 2);
        q   = ucs_realloc(iface->failed, max * sizeof(*q), "strand_failed");
        if (q == NULL) {
            /* it still fails every operation with its status */
            ucs_error("%s: no memory to report the failure of ep %p: %s",
                      iface->dev->info.name, ep, f->detail);
            return;
        }
        iface->failed     = q;
        iface->max_failed = max;
    }
    q         = &iface->failed[iface->num_failed++];
    q->ep     = ep;
    q->status = f->status;
    memcpy(q->detail, f->detail, sizeof(q->detail));
    ep->flags |= STRAND_EP_FLAG_FAIL_PENDING;
}

void strand_ep_fail(strand_iface_t *iface, strand_ep_t *ep, ucs_status_t status,
                    const char *detail)
{
    strand_failure_t f = {.status = status};

    ucs_strncpy_zero(f.detail, detail, sizeof(f.detail));
    strand_ep_fail_add(iface, &f, ep);
    /* its pending requests run, and fail, from the dispatch */
    if (!ucs_list_is_empty(&ep->txq_wait)) {
        ucs_list_del(&ep->txq_wait);
        ucs_list_head_init(&ep->txq_wait);
    }
    strand_ep_schedule(iface, ep);
}

void strand_ep_fail_notify(strand_iface_t *iface)
{
    strand_failed_t q;
    unsigned        i;

    /* an owner may destroy any ep from its callback: one at a time, and a
     * destroyed ep's entry is cleared (strand_ep_fail_forget) */
    for (i = 0; i < iface->num_failed; ++i) {
        q = iface->failed[i];
        if (q.ep == NULL) {
            continue;
        }
        q.ep->flags &= ~STRAND_EP_FLAG_FAIL_PENDING;
        iface->failed[i].ep = NULL;
        strand_ep_set_failed(iface, q.ep, q.status, q.detail);
    }
    iface->num_failed = 0;
}

void strand_ep_fail_forget(strand_iface_t *iface, strand_ep_t *ep)
{
    unsigned i;

    if (!(ep->flags & STRAND_EP_FLAG_FAIL_PENDING)) {
        return;
    }
    for (i = 0; i < iface->num_failed; ++i) {
        if (iface->failed[i].ep == ep) {
            iface->failed[i].ep = NULL;
        }
    }
}
