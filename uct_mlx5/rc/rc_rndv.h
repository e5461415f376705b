/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's rendezvous with tag matching: the transport reads the data
 * itself, where dc_strand leaves it to the receiver's device.
 *
 * The sender (uct_ep_tag_rndv_zcopy) sends a rendezvous request (RTS,
 * common/tm_list.h) as an eager tagged message; the receiver's device matches
 * it like any other and reads nothing. A matched RTS comes here: the
 * transport READs the data into the tag's buffer on the responder QP the
 * RTS arrived on (the QP connected to the sender's endpoint, as a NIC uses
 * it for its own rendezvous), then sends the FIN that completes the
 * sender's operation, posted with IBV_SEND_FENCE behind the READs.
 *
 * With integrity (UCX_RC_STRAND_INTEGRITY) the data is read in pieces
 * through landing mkeys that check every block (strand_sig.h). With
 * signature pipelining (the responder QPs are created with
 * MLX5DV_QP_CREATE_SIG_PIPELINING; UCX_RC_STRAND_INTEGRITY_PIPELINE) the
 * FIN goes in the same doorbell as the READs: on the good path nothing
 * waits for the check. A bad block stops the send queue in SQD before the
 * next fenced WQE, and the transport does what the seed page
 * mlx5dv_qp_cancel_posted_send_wrs(3) says: 1. polls the CQ until empty,
 * 2. finds the transfers with a bad block (their landing mkeys' reports),
 * 3. cancels their FINs (its own WQEs, rewritten into NOPs in place), 4.
 * takes the QP back to RTS; then it reads the bad pieces again and posts
 * a FIN of their own. Every other transfer on the QP goes on untouched.
 * Without pipelining, the FIN is posted once every piece came back good.
 *
 * The tag completes for the user when its data is in and good; a transfer
 * that cannot be read (retries exhausted, truncated, the sender's key
 * refused) completes its tag with the error, and its FIN carries the
 * status to the sender (TMH reserved byte, mlx5/tm.h).
 */
#ifndef STRAND_RC_RNDV_H_
#define STRAND_RC_RNDV_H_

#include "uct_mlx5/common/iface.h"

#define STRAND_RC_RNDV_MAX_WQES \
    1024 /* its rendezvous: WQEs of
            its responder QPs
            outstanding at most
            (rc_rndv.c) */

#include <ucs/datastruct/string_buffer.h>

typedef struct strand_rc_rndv    strand_rc_rndv_t;
typedef struct strand_rc_rndv_qp strand_rc_rndv_qp_t;

/* The receiver's side for iface (with tag matching on); pipeline:
 * UCX_RC_STRAND_INTEGRITY_PIPELINE (UCS_YES, UCS_NO or UCS_TRY). */
ucs_status_t strand_rc_rndv_init(strand_iface_t *iface, int pipeline,
                                 strand_rc_rndv_t **rndv_p);
void         strand_rc_rndv_cleanup(strand_rc_rndv_t *rndv);

/* How responder QPs are made: signature pipelining when it is used. */
void strand_rc_rndv_qp_attr(const strand_rc_rndv_t *rndv,
                            strand_dev_rc_attr_t   *attr);
/* A responder QP, connected: rendezvous that arrive on it are read on it
 * from now on; the requester's table of requests (strand_rc_rndv_table)
 * is where a request written over in a tag's buffer is read again. */
ucs_status_t strand_rc_rndv_qp_add(strand_rc_rndv_t *rndv, strand_dev_qp_t *qp,
                                   uint64_t rts_table, uint32_t rts_rkey,
                                   strand_rc_rndv_qp_t **rq_p);
/* Where the peer reads the copies of the requests this interface sends
 * (its connection request carries them; 0 and 0 without tag matching). */
void strand_rc_rndv_table(const strand_rc_rndv_t *rndv, uint64_t *va_p,
                          uint32_t *rkey_p);
/* ... and before it is destroyed: its transfers fail (their tags with
 * UCS_ERR_CONNECTION_RESET). */
void strand_rc_rndv_qp_remove(strand_rc_rndv_t *rndv, strand_rc_rndv_qp_t *rq);

/* a send CQE of a responder QP (the interface's send CQ has them) */
int strand_rc_rndv_cqe(strand_rc_rndv_t *rndv, const struct mlx5_cqe64 *cqe);
/* transfers waiting for room or landing mkeys, stopped QPs */
unsigned strand_rc_rndv_progress(strand_rc_rndv_t *rndv);
/* the VFS file 'rendezvous' */
void strand_rc_rndv_show(const strand_rc_rndv_t *rndv,
                         ucs_string_buffer_t    *strb);

/* the largest user header of a rendezvous (cap.tag.rndv.max_hdr) */
unsigned strand_rc_rndv_max_hdr(const strand_iface_t *iface);
/* the sender's copy of the request with app_ctx, where the receiver reads
 * it again if the one in its tag's buffer was written over */
void strand_rc_rndv_keep_rts(strand_rc_rndv_t *rndv, uint32_t app_ctx,
                             const void *rts, size_t len);

#endif
