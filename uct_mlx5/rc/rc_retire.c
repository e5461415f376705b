/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder QPs that leave through ERR (rc_retire.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_retire.h"
#include "uct_mlx5/common/rx.h"
#include "uct_mlx5/common/tx_cqe.h"
#include "uct_mlx5/strand_async.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <string.h>

typedef struct strand_rc_retiring {
    ucs_list_link_t list;
    strand_dev_qp_t qp;
    uint64_t        mark; /* the async events' mark before ERR */
    ucs_time_t      deadline;
} strand_rc_retiring_t;

/* Rounds of polling that empty the CQs before a destroy: each round takes
 * what the last one made room for (at most rx_max_poll receive CQEs). */
#define STRAND_RC_RETIRE_POLL_ROUNDS 64

void strand_rc_retire_init(strand_rc_iface_t *iface)
{
    ucs_list_head_init(&iface->retiring);
}

static void
strand_rc_retire_destroy(strand_rc_iface_t *iface, strand_rc_retiring_t *r)
{
    strand_dev_t *dev = iface->super.dev;

    ucs_list_del(&r->list);
    dev->ops->destroy_qp(dev, &r->qp);
    ucs_free(r);
}

void strand_rc_retire(strand_rc_iface_t *iface, strand_dev_qp_t *qp)
{
    strand_dev_t         *dev = iface->super.dev;
    strand_rc_retiring_t *r;
    int                   err;

    r = ucs_calloc(1, sizeof(*r), "strand_rc_retiring");
    if (r != NULL) {
        r->mark = strand_async_last_wqe_mark();
    }
    err = strand_dev_qp_to_err(dev, qp);
    if ((r == NULL) || (err != 0)) {
        /* nothing to wait for: no event comes */
        ucs_debug("%s: rc_strand: QP 0x%x goes without ERR: %s", dev->info.name,
                  qp->qpn, (r == NULL) ? "no memory" : strerror(err));
        dev->ops->destroy_qp(dev, qp);
        qp->h = NULL;
        ucs_free(r);
        return;
    }
    r->qp       = *qp;
    r->deadline = ucs_get_time() +
                  ucs_time_from_msec(STRAND_RC_RETIRE_TIMEOUT_MS);
    ucs_list_add_tail(&iface->retiring, &r->list);
    qp->h = NULL;
}

/* Its event came (its flush CQEs are written), or its time is up. */
static int strand_rc_retire_due(const strand_rc_iface_t    *iface,
                                const strand_rc_retiring_t *r, ucs_time_t now)
{
    return (strand_async_last_wqe_since(iface->super.dev, r->qp.qpn, r->mark) ==
            1) ||
           (now >= r->deadline);
}

/* What the CQs hold now is handled: flush CQEs of the QPs about to go
 * give their receive WQEs back to the SRQ. */
static void strand_rc_retire_poll(strand_rc_iface_t *iface)
{
    unsigned round, count;

    for (round = 0; round < STRAND_RC_RETIRE_POLL_ROUNDS; ++round) {
        count = strand_rx_progress(&iface->super);
        count += strand_txq_tx_progress(&iface->super);
        if (count == 0) {
            return;
        }
    }
}

unsigned strand_rc_retire_progress(strand_rc_iface_t *iface)
{
    strand_rc_retiring_t *r, *tmp;
    ucs_time_t            now;
    unsigned              count  = 0;
    int                   polled = 0;

    if (ucs_likely(ucs_list_is_empty(&iface->retiring))) {
        return 0;
    }
    now = ucs_get_time();
    ucs_list_for_each_safe(r, tmp, &iface->retiring, list) {
        if (!strand_rc_retire_due(iface, r, now)) {
            continue;
        }
        if (!polled) {
            strand_rc_retire_poll(iface);
            polled = 1;
        }
        strand_rc_retire_destroy(iface, r);
        ++count;
    }
    return count;
}

int strand_rc_retire_has(const strand_rc_iface_t *iface, uint32_t qpn)
{
    const strand_rc_retiring_t *r;

    ucs_list_for_each(r, &iface->retiring, list) {
        if (r->qp.qpn == qpn) {
            return 1;
        }
    }
    return 0;
}

void strand_rc_retire_cleanup(strand_rc_iface_t *iface)
{
    strand_rc_retiring_t *r, *tmp;

    ucs_list_for_each_safe(r, tmp, &iface->retiring, list) {
        strand_rc_retire_destroy(iface, r);
    }
}
