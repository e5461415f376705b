/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integrity-checked GETs (UCX_DC_STRAND_INTEGRITY, UCX_RC_STRAND_INTEGRITY):
 * the transport's side of strand_sig.c. A GET of a peer's signed
 * registration is read in pieces, each an RDMA READ into a landing mkey
 * that checks every block; a piece whose completion says a block was bad
 * is read again (on a send queue, without signature pipelining: the check is done
 * when its READ has completed, before the user hears of the GET). The GET
 * counts as one more operation of its ep until its last piece is in, so
 * a flush waits for it.
 */
#ifndef STRAND_INTEGRITY_H_
#define STRAND_INTEGRITY_H_

#include "ep.h"
#include "txq.h"

ucs_status_t strand_iface_integrity_init(strand_iface_t              *iface,
                                         const strand_iface_config_t *config);
void         strand_iface_integrity_cleanup(strand_iface_t *iface);

/* uct_ep_get_zcopy of a signed remote key */
ucs_status_t
strand_ep_get_checked(strand_iface_t *iface, strand_ep_t *ep,
                      const uct_iov_t *iov, size_t iovcnt, uint64_t remote_addr,
                      const strand_rkey_sig_t *rk, uct_completion_t *comp);

/* The READ of a piece (op of type STRAND_OP_CHECKED) retired with
 * `status`: returns its GET, which strand_iface_integrity_kick moves on once
 * the op's slot is free (more pieces, a piece again, or its end). */
strand_integrity_req_t *strand_iface_integrity_op_done(strand_iface_t *iface,
                                                       strand_op_t    *op,
                                                       ucs_status_t    status);
void                    strand_iface_integrity_kick(strand_iface_t         *iface,
                                                    strand_integrity_req_t *req);
/* GETs that waited for room or a landing mkey (from progress); pending
 * requests that waited for a landing mkey are scheduled again once one
 * is free */
unsigned strand_iface_integrity_progress(strand_iface_t *iface);
/* ep is destroyed: its GETs complete with UCS_ERR_CANCELED now (pieces
 * still posted retire later, into nobody's memory) */
void strand_iface_integrity_orphan_op(strand_iface_t *iface, strand_op_t *op);
void strand_iface_integrity_ep_gone(strand_iface_t *iface, strand_ep_t *ep);
/* a piece whose READ was held by recovery and will not be posted again:
 * it ends with `status` */
void strand_iface_integrity_drop(strand_iface_t           *iface,
                                 strand_integrity_piece_t *piece,
                                 ucs_status_t              status);

#endif
