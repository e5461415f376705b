/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware tag matching on the shared interface (UCX_*_STRAND_TM_ENABLE):
 * the tag-matching SRQ, the UCT tag API of endpoints (eager
 * short/bcopy/zcopy, the start and post of a rendezvous whose headers the
 * transport writes, software rendezvous request) and of the interface
 * (tag_recv_zcopy / cancel). The tag list itself is tm_list.c's.
 */
#ifndef STRAND_TAG_H_
#define STRAND_TAG_H_

#include "iface.h"

/* RVH and RAVH: a DC receiver's device reads the data back from the
 * sender's DCT */

/* The receive queue of the interface: a tag-matching SRQ when tag matching
 * is on (and then its command QP and the tag list), else an ordinary one. */
ucs_status_t strand_tag_create_srq(strand_iface_t              *iface,
                                   const strand_iface_config_t *config,
                                   const uct_iface_params_t    *params);
void         strand_tag_cleanup(strand_iface_t *iface);
/* receive CQ entries tag matching needs besides the receive buffers */
unsigned strand_tag_rx_cq_extra(const strand_iface_t        *iface,
                                const strand_iface_config_t *config);
void     strand_tag_query(strand_iface_t *iface, uct_iface_attr_t *attr);
/* Will tag matching be on? (decided before the receive CQ is sized) */
ucs_status_t strand_tag_resolve(strand_iface_t              *iface,
                                const strand_iface_config_t *config,
                                const uct_iface_params_t    *params);

ucs_status_t strand_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                       const void *data, size_t length);
ssize_t strand_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                  uct_pack_callback_t pack_cb, void *arg,
                                  unsigned flags);
ucs_status_t strand_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                       uint64_t imm, const uct_iov_t *iov,
                                       size_t iovcnt, unsigned flags,
                                       uct_completion_t *comp);
ucs_status_t strand_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op);

struct strand_txq;
/* The start of a rendezvous send, for both transports: the checks every
 * one has (tag matching on, one buffer of at most 1 GiB with a memory
 * handle), a send queue and an operation waiting for its
 * FIN, whose id goes in the request's app_ctx. NULL and *status_p when it
 * cannot go now. */
strand_tm_rndv_op_t *
strand_tag_rndv_start(strand_iface_t *iface, struct strand_ep *ep,
                      const uct_iov_t *iov, size_t iovcnt,
                      uct_completion_t *comp, struct strand_txq **txq_p,
                      uint32_t *app_ctx_p, ucs_status_t *status_p);
/* ... and its end: the request (TMH first) inline on that send queue. */
void         strand_tag_rndv_post(strand_iface_t *iface, struct strand_ep *ep,
                                  struct strand_txq *txq, const struct ibv_sge *sge,
                                  unsigned n);
ucs_status_t strand_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *header,
                                        unsigned header_length, unsigned flags);
ucs_status_t strand_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                         uct_tag_t        tag_mask,
                                         const uct_iov_t *iov, size_t iovcnt,
                                         uct_tag_context_t *ctx);
ucs_status_t strand_iface_tag_recv_cancel(uct_iface_h        tl_iface,
                                          uct_tag_context_t *ctx, int force);

/* an ep failed or is destroyed: its rendezvous sends complete with
 * status (no FIN will come for them, or none may be heard of) */
void strand_tag_ep_purge(strand_iface_t *iface, void *ep, ucs_status_t status);

/* What a tagged message in a receive buffer (tag matching on) was: a
 * NO_TAG one carries an active message (AM) or a rendezvous FIN (DONE: the
 * buffer goes back) after its TMH; an unexpected one goes to the user's
 * tag callbacks, which keep its buffer (KEPT) or not (DONE). */
typedef enum {
    STRAND_TAG_RX_AM,
    STRAND_TAG_RX_DONE,
    STRAND_TAG_RX_KEPT
} strand_tag_rx_t;
strand_tag_rx_t strand_tag_rx(strand_iface_t *iface, struct mlx5_cqe64 *cqe,
                              const void *msg, uint32_t length);

#endif
