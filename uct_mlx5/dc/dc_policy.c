/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TX policy: leases of (DCI, stream) pairs (see dc_policy.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_policy.h"
#include "uct_mlx5/common/txq_pool.h"

#include <ucs/debug/log.h>

const char *strand_dc_tx_policy_names[] = {
        [STRAND_DC_TX_POLICY_DCS]       = "dcs",
        [STRAND_DC_TX_POLICY_DCS_QUOTA] = "dcs_quota",
        [STRAND_DC_TX_POLICY_STREAMS]   = "streams",
        [STRAND_DC_TX_POLICY_AUTO]      = "auto",
        [STRAND_DC_TX_POLICY_LAST]      = NULL};

const char *strand_dc_stream_map_names[] = {[STRAND_DC_STREAM_MAP_EP] = "ep",
                                            [STRAND_DC_STREAM_MAP_PEER] =
                                                    "peer",
                                            [STRAND_DC_STREAM_MAP_LAST] = NULL};

static int strand_dc_policy_streams(const strand_iface_t *iface)
{
    return strand_dc_iface(iface)->tx_policy == STRAND_DC_TX_POLICY_STREAMS;
}

void strand_dc_policy_dci_attr(strand_dc_iface_t    *iface,
                               strand_dev_sq_attr_t *attr)
{
    attr->log_num_concurent = 0;
    attr->log_num_errored   = 0;
    if (strand_dc_policy_streams(&iface->super)) {
        attr->log_num_concurent = iface->config.log_concurent;
        attr->log_num_errored   = iface->config.log_errored;
    }
}

void strand_dc_policy_init(strand_dc_iface_t *iface)
{
    unsigned num = iface->super.num_txqs;
    unsigned i;

    /* dcs: the stack pops from the top, DCI 0 first */
    for (i = 0; i < num; ++i) {
        iface->dci_stack[num - 1 - i] = i;
    }
    iface->dci_top  = strand_dc_policy_streams(&iface->super) ? 0 : num;
    iface->next_dci = 0;
}

/* a DCI that takes work now (or once it has room) */
static int
strand_dc_dci_usable(const strand_iface_t *iface, const strand_txq_t *dci)
{
    return ((dci->state == STRAND_TXQ_FREE) ||
            (dci->state == STRAND_TXQ_ACTIVE)) &&
           strand_txq_has_room(iface, dci);
}

/* The stream of dci for ep: per peer, the one its peer already uses;
 * else the healthy stream with the fewest lessees. -1: none. */
static int strand_dc_policy_pick_stream(strand_iface_t *iface,
                                        strand_txq_t *dci, strand_ep_t *ep)
{
    int            per_peer = strand_dc_iface(iface)->config.stream_per_peer;
    strand_lane_t *s;
    int            i, best = -1;

    for (i = 0; i < (int)iface->config.num_lanes; ++i) {
        s = &dci->lanes[i];
        if (s->state != STRAND_LANE_OK) {
            continue;
        }
        if (per_peer && (s->users > 0) &&
            (strand_dc_lane(iface, dci, i)->peer == ep->dest_key)) {
            return i;
        }
        if ((best < 0) || (s->users < dci->lanes[best].users)) {
            best = i;
        }
    }
    /* a new peer gets an unused stream if there is one, else shares the
     * least used (eps of different peers then share its fate for a while:
     * the failure of one is theirs only if it is peer-wide) */
    return best;
}

/* ep's destination, the peer's NIC and DCT (a process): a key for
 * grouping, where a rare collision costs only placement (dc_ep.c) */
static uint64_t strand_dc_policy_dest(const strand_ep_t *ep)
{
    return ep->dest;
}

static void strand_dc_policy_attach(strand_iface_t *iface, strand_txq_t *dci,
                                    int stream, strand_ep_t *ep)
{
    strand_lane_t    *s  = &dci->lanes[stream];
    strand_dc_lane_t *ds = strand_dc_lane(iface, dci, stream);

    if (dci->users == 0) {
        strand_dc_dci(iface, dci)->home = strand_dc_policy_dest(ep);
    }
    if (s->users++ == 0) {
        ds->peer  = ep->dest_key;
        ds->dest  = strand_dc_policy_dest(ep);
        ds->mixed = 0;
    } else if (ds->dest != strand_dc_policy_dest(ep)) {
        ds->mixed = 1;
    }
    s->leases++;
    /* a DCI that was FREE has no lessee whose readiness could change */
    dci->state = STRAND_TXQ_ACTIVE;
    dci->users++;
    ep->txq  = dci->index;
    ep->lane = stream;
}

static ucs_status_t
strand_dc_policy_lease_dcs(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *dci;

    if (strand_dc_iface(iface)->dci_top == 0) {
        strand_iface_want_txq(iface); /* holders give theirs back
                                         sooner */
        return UCS_ERR_NO_RESOURCE;
    }
    dci = &iface->txqs[strand_dc_iface(iface)
                               ->dci_stack[--strand_dc_iface(iface)->dci_top]];
    ucs_assertv((dci->state == STRAND_TXQ_FREE) && (dci->outstanding == 0),
                "DCI %u: state %u, %u outstanding", dci->index, dci->state,
                dci->outstanding);
    dci->ep                               = ep;
    strand_dc_dci(iface, dci)->lease_wqes = dci->wqes;
    strand_dc_policy_attach(iface, dci, 0, ep);
    return UCS_OK;
}

/* How well dci suits ep, for keeping destinations apart (a DCI completes
 * in send-queue order, so a WQE to a peer that died, or is slow, holds
 * back the completions of every WQE after it on that DCI until it times
 * out):
 *   2  it serves ep's destination only; or it is empty and was last the
 *      home of ep's destination, or of none;
 *   1  it is empty, the home of another destination (which will want it
 *      back when its eps send again);
 *   0  it serves other destinations. */
static int strand_dc_policy_dci_rank(const strand_iface_t *iface,
                                     const strand_txq_t   *dci,
                                     const strand_ep_t    *ep)
{
    uint64_t                dest = strand_dc_policy_dest(ep);
    uint64_t                home = strand_dc_dci(iface, dci)->home;
    const strand_dc_lane_t *ds;
    unsigned                i;

    if (dci->users == 0) {
        return ((home == 0) || (home == dest)) ? 2 : 1;
    }
    for (i = 0; i < iface->config.num_lanes; ++i) {
        ds = strand_dc_lane(iface, dci, i);
        if ((dci->lanes[i].users > 0) && (ds->mixed || (ds->dest != dest))) {
            return 0;
        }
    }
    return 2;
}

/* The (DCI, stream) ep would lease now: the best ranked (above), and among
 * those the least leased (a busy DCI shares its send queue among more
 * eps: spreading them keeps their rates even); of equals, the home of
 * ep's destination (an ep sending one message at a time leases once a
 * message: rotating, an MPI ping-pong went through every DCI in turn and
 * its first round trips took twice as long), else round-robin from where
 * the last lease went. While a DCI of ep's destination alone exists
 * but is full, ep waits for it rather than take another's: NULL, and
 * *wait_p is that DCI (NULL when no DCI can take anyone). */
static strand_txq_t *strand_dc_policy_choose(strand_iface_t *iface,
                                             strand_ep_t *ep, int *stream_p,
                                             strand_txq_t **wait_p)
{
    strand_txq_t *dci, *best = NULL, *own_full = NULL;
    uint64_t      dest = strand_dc_policy_dest(ep);
    int           stream, rank, best_rank = -1;
    unsigned      n, i;

    for (n = 0; n < iface->num_txqs; ++n) {
        i    = (strand_dc_iface(iface)->next_dci + n) % iface->num_txqs;
        dci  = &iface->txqs[i];
        rank = strand_dc_policy_dci_rank(iface, dci, ep);
        if (!strand_dc_dci_usable(iface, dci)) {
            /* full, not recovering: its completions will make room */
            if ((rank == 2) && (dci->users > 0) && (own_full == NULL) &&
                (dci->state == STRAND_TXQ_ACTIVE)) {
                own_full = dci;
            }
            continue;
        }
        if ((rank < best_rank) ||
            ((rank == best_rank) && (dci->users >= best->users) &&
             !((dci->users == best->users) &&
               (strand_dc_dci(iface, dci)->home == dest) &&
               (strand_dc_dci(iface, best)->home != dest)))) {
            continue;
        }
        stream = strand_dc_policy_pick_stream(iface, dci, ep);
        if (stream >= 0) {
            best      = dci;
            *stream_p = stream;
            best_rank = rank;
        }
    }
    *wait_p = own_full;
    return ((best != NULL) && ((best_rank == 2) || (own_full == NULL))) ? best :
                                                                          NULL;
}

static ucs_status_t
strand_dc_policy_lease_streams(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *best, *wait;
    int           stream = -1;

    best = strand_dc_policy_choose(iface, ep, &stream, &wait);
    if (best == NULL) {
        if ((wait != NULL) && ucs_list_is_empty(&ep->txq_wait)) {
            /* its room wakes ep (common/op_done.c) */
            ucs_list_add_tail(&wait->waiters, &ep->txq_wait);
        }
        return UCS_ERR_NO_RESOURCE;
    }
    if (!ucs_list_is_empty(&ep->txq_wait)) {
        /* no longer waiting for the DCI it waited for */
        ucs_list_del(&ep->txq_wait);
        ucs_list_head_init(&ep->txq_wait);
    }
    strand_dc_iface(iface)->next_dci = (best->index + 1) % iface->num_txqs;
    strand_dc_policy_attach(iface, best, stream, ep);
    return UCS_OK;
}

/* ep's DCI is full (streams): when another DCI is less shared even with
 * ep on it, ep posts nothing more there and leases again once its work
 * is done (a lease lasts while work is outstanding, so under steady
 * traffic eps would otherwise stay crowded on some DCIs while others,
 * emptied by a failure or by eps that went quiet, idle). */
static void
strand_dc_policy_consider_move(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *cur = &iface->txqs[ep->txq];
    unsigned      i;
    int           rank;

    if (strand_txq_has_room(iface, cur) || (cur->state != STRAND_TXQ_ACTIVE)) {
        return;
    }
    /* only for a DCI at least as well suited (the lease would choose ep's
     * own again) */
    rank = strand_dc_policy_dci_rank(iface, cur, ep);
    for (i = 0; i < iface->txq_hwm; ++i) {
        if (strand_dc_dci_usable(iface, &iface->txqs[i]) &&
            (iface->txqs[i].users + 1 < cur->users) &&
            (strand_dc_policy_dci_rank(iface, &iface->txqs[i], ep) >= rank)) {
            ep->flags |= STRAND_EP_FLAG_MOVING;
            return;
        }
    }
}

ucs_status_t strand_dc_policy_lease(strand_iface_t *iface, strand_ep_t *ep)
{
    if (ep->txq != STRAND_TXQ_NONE) {
        /* leased, but not ready */
        if (strand_dc_policy_streams(iface) &&
            !(ep->flags & STRAND_EP_FLAG_MOVING)) {
            strand_dc_policy_consider_move(iface, ep);
        }
        if (ep->flags & STRAND_EP_FLAG_MOVING) {
            /* it waits for its last WQEs, which may not have asked for a
             * CQE: with every lessee of the DCI moving, nobody would post
             * the WQE that does (a NOP behind them, once there is room;
             * until then the full queue's CQEs are due) */
            (void)strand_txq_signal_tail(iface, &iface->txqs[ep->txq]);
        }
        return UCS_ERR_NO_RESOURCE;
    }
    return strand_dc_policy_streams(iface) ?
                   strand_dc_policy_lease_streams(iface, ep) :
                   strand_dc_policy_lease_dcs(iface, ep);
}

void strand_dc_policy_dci_idle(strand_iface_t *iface, strand_txq_t *dci)
{
    if ((dci->state != STRAND_TXQ_ACTIVE) || (dci->users > 0) ||
        (dci->outstanding > 0)) {
        return;
    }
    strand_txq_set_state(iface, dci, STRAND_TXQ_FREE);
    dci->ep = NULL;
    if (!strand_dc_policy_streams(iface)) {
        ucs_assertv(strand_dc_iface(iface)->dci_top < iface->num_txqs,
                    "DCI %u: free stack full", dci->index);
        strand_dc_iface(iface)->dci_stack[strand_dc_iface(iface)->dci_top++] =
                dci->index;
    }
}

void strand_dc_policy_release(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t  *dci;
    strand_lane_t *s;

    if (ep->txq == STRAND_TXQ_NONE) {
        return;
    }
    dci = &iface->txqs[ep->txq];
    s   = &dci->lanes[ep->lane];
    ucs_assert((s->users > 0) && (dci->users > 0));
    if (--s->users == 0) {
        *strand_dc_lane(iface, dci, ep->lane) = (strand_dc_lane_t){0};
    }
    --dci->users;
    if (dci->ep == ep) {
        dci->ep = NULL;
    }
    ep->txq = STRAND_TXQ_NONE;
    ep->flags &= ~STRAND_EP_FLAG_MOVING;
    strand_dc_policy_dci_idle(iface, dci);
}

int strand_dc_policy_quota_spent(strand_iface_t *iface, const strand_txq_t *dci)
{
    uint32_t posts = dci->wqes - strand_dc_dci(iface, dci)->lease_wqes;

    return posts >= strand_dc_iface(iface)->config.quota;
}

int strand_dc_policy_can_post(strand_iface_t *iface, strand_ep_t *ep)
{
    strand_txq_t *wait;
    int           stream;

    if (ep->txq != STRAND_TXQ_NONE) {
        return strand_ep_txq_ready(iface, ep) != NULL;
    }
    if (!strand_dc_policy_streams(iface)) {
        return strand_dc_iface(iface)->dci_top > 0;
    }
    return strand_dc_policy_choose(iface, ep, &stream, &wait) != NULL;
}
