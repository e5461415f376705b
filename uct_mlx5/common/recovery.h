/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What happens after an error CQE (docs/errors.md).
 *
 * A stream error (the send queue stays in RTS; seed page
 * mlx5dv_dci_stream_id_reset): the failing operation completes with its
 * error and the endpoints the failure belongs to fail (the posting ep; for
 * a peer that is gone, every ep of the iface to that destination). The
 * stream's later WQEs come back flushed: they were not executed (a stream
 * is processed in order), so those of healthy eps are held, the stream is
 * reset once its last WQE is back, and the held WQEs are posted again in
 * their order, ahead of anything new of their eps.
 *
 * A send queue error (the send queue went to ERR: as many errored streams as it may
 * have, log_num_errored 0, or an error that is not a stream's): every
 * outstanding WQE comes back flushed; once the last one is back, each is
 * judged: one that came after a failure on its own stream did not run and
 * is held; the send queue is reset and the held ones are posted again. The policy
 * uses no more streams than the errored ones a send queue may have, so remote
 * failures put a send queue in ERR only when all its streams failed. Work of a
 * stream that did not fail (a queue-wide error) may have run at its peer: a
 * READ is posted again, anything else fails its endpoint
 * (UCS_ERR_IO_ERROR) rather than run twice.
 */
#ifndef STRAND_RECOVERY_H_
#define STRAND_RECOVERY_H_

#include "txq.h"

struct strand_ep;

/* An error CQE for op on a healthy stream of an ACTIVE send queue. */
void strand_recovery_error(strand_iface_t *iface, strand_txq_t *txq,
                           strand_op_t *op, struct mlx5_cqe64 *cqe);
/* A CQE for op on a draining stream or send queue (a flush). */
void strand_recovery_flush(strand_iface_t *iface, strand_txq_t *txq,
                           strand_op_t *op, struct mlx5_cqe64 *cqe);
/* Tell the owners of the eps that failed (their error handlers may
 * destroy eps); called where the transport's state is consistent. */
/* Post held WQEs again where the SQ has room. Returns how many. */
unsigned strand_recovery_progress(strand_iface_t *iface);
/* ep failed (or was flushed with UCT_FLUSH_FLAG_CANCEL): its held WQEs
 * complete with its status now; its posted ones complete as the device
 * returns them, at once (flushed) when its send queue carries nobody else's work:
 * the send queue is moved to ERR and reset after its last CQE. */
void strand_recovery_cancel(strand_iface_t *iface, struct strand_ep *ep);
/* uct_ep_invalidate: ep fails (UCS_ERR_CANCELED, its owner told from
 * progress) and its work is cancelled as above */
void strand_recovery_invalidate(strand_iface_t *iface, struct strand_ep *ep);
/* ep fails with status for a reason outside its send queue (rc_strand: its
 * connection could not be made); its owner is told from progress */
/* ep is destroyed: its held WQEs are dropped, their completions
 * cancelled, and its owner is not told of a failure any more */
void strand_recovery_orphan(strand_iface_t *iface, struct strand_ep *ep);
/* held WQEs freed at close */
void strand_recovery_cleanup(strand_iface_t *iface, strand_txq_t *txq);
/* the same for every send queue (the interface closes) */
void strand_recovery_cleanup_all(strand_iface_t *iface);

#endif
