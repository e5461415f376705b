/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's operations while an endpoint waits for its connection.
 *
 * A new endpoint posts at once, its doorbells held (rc_qp.h). The answer
 * that connects its QP reaches the worker's async thread, which connects
 * the QP and rings the held doorbells itself (rc_cm.c): what a user was
 * told is sent goes without another call on this side (a receiver asleep
 * in its event fd must not wait for the sender's progress). Ringing means
 * writing the interface's doorbell register, which the worker writes
 * without a lock on every post; rdma-core serialises the QPs that share a
 * register with a lock, UCX gives each worker one of its own, and UCX's ud,
 * whose async thread posts too, takes the async context in every
 * operation. rc_strand does the same, but only while one of its QPs is
 * held: the interface's operations are then these, each of which takes
 * a lock around the one it stands for; once no QP is held the
 * worker puts the direct ones back (the async thread never changes the
 * table: only the thread that calls the operations does).
 *
 * The lock is the interface's post lock, not the async context: UCX's
 * dispatch only tries the async context and leaves the event to the
 * worker's next progress when it is held, which a sender that posted and
 * went on to other things never calls. The async thread, holding the async
 * context, only tries the post lock too: when the worker holds it, the
 * answer is left to the worker, who takes it in when it lets go of the
 * lock (rep_waiting; the async thread tries once more after saying so,
 * so one of the two always takes it).
 */
#ifndef STRAND_RC_LOCKED_H_
#define STRAND_RC_LOCKED_H_

#include "rc.h"

ucs_status_t strand_rc_locked_init(strand_rc_iface_t *iface);
void         strand_rc_locked_cleanup(strand_rc_iface_t *iface);

/* The worker posts (recursive); letting go of it last, it takes in the
 * answers the async thread could not (rc_cm.h) */
void strand_rc_post_lock(strand_rc_iface_t *iface);
void strand_rc_post_unlock(strand_rc_iface_t *iface);

/* From now on every operation of iface holds the post lock (an
 * endpoint's QP is held, and the async thread may connect it); made from
 * a callback of an unlocked progress, the rest of that progress holds it
 * too. Nothing without an async thread (then the worker takes the answers
 * in itself). */
void strand_rc_locked_ops_install(strand_rc_iface_t *iface);
/* The direct operations again, if no QP is held any more (the worker, the
 * post lock held). */
void strand_rc_locked_ops_settle(strand_rc_iface_t *iface);
/* The interface's progress, the post lock held while the locked
 * operations are installed. */
unsigned strand_rc_locked_progress(strand_rc_iface_t *iface,
                                   unsigned (*progress)(strand_rc_iface_t *));

#endif
