/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared interface's progress (receive and send CQEs, the
 * transport's own work), flush and fence.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface_class.h"
#include "ep_pending.h"
#include "fc_grant.h"
#include "integrity_get.h"
#include "rx.h"
#include "tx_cqe.h"
#include "txq_pool.h"

#include <ucs/debug/log.h>

/* ------------------------------------------------------------- progress */

/* Whether the receive side has work: a CQE, buffers to post, tag
 * matching commands (strand_rx_progress). */
static UCS_F_ALWAYS_INLINE int strand_iface_rx_busy(strand_iface_t *iface)
{
    return strand_cq_cursor_ready(&iface->rx_cur) || (iface->srq_missing > 0) ||
           (iface->config.am_tmh > 0);
}

/* Whether the send side has work: a CQE on its one CQ (rc_strand's many:
 * always looked at), WQEs to post again, failures to tell
 * (strand_txq_tx_progress). */
static UCS_F_ALWAYS_INLINE int strand_iface_tx_busy(strand_iface_t *iface)
{
    const strand_tx_cq_t *tx = &iface->tx_cqs[0];

    return (iface->num_tx_cqs != 1) || iface->repost_pending ||
           (iface->num_failed > 0) || strand_cq_cursor_ready(&tx->cur);
}

/* The CQs polled where they have work: an idle poll looks at two CQEs'
 * ownership bytes and a few counters only. */
static UCS_F_ALWAYS_INLINE unsigned strand_iface_poll(strand_iface_t *iface)
{
    unsigned count = 0;

    if (strand_iface_rx_busy(iface)) {
        count += strand_rx_progress(iface);
    }
    if (strand_iface_tx_busy(iface)) {
        count += strand_txq_tx_progress(iface);
    }
    return count;
}

unsigned strand_iface_progress(uct_iface_h tl_iface)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);
    unsigned        count;

    if (ucs_unlikely((iface->integrity_queue != NULL) ||
                     iface->integrity_starved)) {
        strand_iface_integrity_progress(iface);
    }

    count = strand_iface_poll(iface);
    if (count == 0) {
        if (iface->dev->ops->progress != NULL) {
            iface->dev->ops->progress(iface->dev);
        }
        count = strand_iface_poll(iface);
    } else if (iface->srq_missing > 0) {
        strand_rx_refill(iface);
    }
    if (count > 0) {
        strand_iface_tx_beat(iface);
    }
    strand_fc_progress(iface, &iface->fc);
    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        strand_ep_dispatch_pending(iface);
    }
    return count;
}

ucs_status_t
strand_iface_flush(uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    /* a checked GET waiting in the queue to read a piece again has
     * nothing posted for the moment */
    if (!strand_txq_pool_busy(iface) && (iface->integrity_queue == NULL)) {
        return UCS_OK;
    }
    UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    strand_txq_signal_tails(iface);
    return UCS_INPROGRESS;
}

ucs_status_t strand_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    ++iface->fence_beat; /* every ep fences its next WQE */
    ++iface->tx_gate;    /* on the general path */
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}
