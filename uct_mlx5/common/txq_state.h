/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's readiness (ep.h says what it is) and the states of send
 * queues and lanes that it follows: changed only here, so that the eps
 * leasing a queue see the change before anything else can post.
 */
#ifndef STRAND_TXQ_STATE_H_
#define STRAND_TXQ_STATE_H_

#include "ep.h"
#include "txq.h"

/* the readiness of ep (ep.h) after a change of its state or its lease's;
 * of every ep leasing txq after a change of the queue's or a lane's */
void strand_ep_tx_update(strand_iface_t *iface, strand_ep_t *ep);
void strand_ep_tx_update_txq(strand_iface_t *iface, struct strand_txq *txq);
/* open ep's gate when ep is ready, no fence is due and no ep waits for a
 * send queue; close it otherwise */
void strand_ep_gate(strand_iface_t *iface, strand_ep_t *ep);
#ifdef STRAND_DEBUG
/* debug builds, on every post: the cached readiness is what the state
 * says, and an open gate is right */
void strand_ep_tx_verify(strand_iface_t *iface, strand_ep_t *ep);
#else
#define strand_ep_tx_verify(_iface, _ep) \
    do {                                 \
    } while (0)
#endif

/* A lease for ep (it has none, or cannot post on it now): the transport
 * answers, the ep updates its readiness; *txq_p the send queue to post on
 * (UCS_OK), or why none (UCS_ERR_NO_RESOURCE: wait) */
ucs_status_t
strand_ep_lease(strand_iface_t *iface, strand_ep_t *ep, strand_txq_t **txq_p);

/* txq, or its lane s, goes to state: the readiness of the eps leasing it
 * follows at once (before anything else can post) */
void strand_txq_set_state(strand_iface_t *iface, strand_txq_t *txq,
                          strand_txq_state_t state);
void strand_lane_set_state(strand_iface_t *iface, strand_txq_t *txq,
                           strand_lane_t *s, strand_lane_state_t state);

#endif
