/*
 * Integrity-checked GETs on dc_strand (UCX_DC_STRAND_INTEGRITY): the
 * transport's side of common/integrity.c. A GET of a peer's signed
 * registration is an RDMA READ into a landing mkey that checks every
 * block; its completion tells whether a block was bad, and then the same
 * read goes again (on a DCI, without signature pipelining: the check is
 * done when the READ has completed, before the user hears of it).
 */
#ifndef STRAND_DC_INTEGRITY_H_
#define STRAND_DC_INTEGRITY_H_

#include "dc_ep.h"
#include "dc_dci.h"

ucs_status_t strand_dc_integrity_init(strand_dc_iface_t *iface,
                                      const strand_dc_iface_config_t *config);
void strand_dc_integrity_cleanup(strand_dc_iface_t *iface);

/* uct_ep_get_zcopy of a signed remote key */
ucs_status_t strand_dc_ep_get_checked(strand_dc_iface_t *iface,
                                      strand_dc_ep_t *ep,
                                      const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr,
                                      const strand_rkey_sig_t *rk,
                                      uct_completion_t *comp);

/* The READ of a checked GET (op) retired with `status`: the user's
 * completion and its status to report now (*comp_p, *status_p; the tmp
 * registrations go back to op to be released with it), or the GET to
 * read again (returned: its ep keeps the operation outstanding, and
 * strand_dc_integrity_again posts it once the slot is free). */
strand_integrity_get_t *
strand_dc_integrity_op_done(strand_dc_iface_t *iface, strand_dc_op_t *op,
                            ucs_status_t *status_p, uct_completion_t **comp_p);
void strand_dc_integrity_again(strand_dc_iface_t *iface,
                               strand_integrity_get_t *get);
/* reads again that waited for room (from progress) */
unsigned strand_dc_integrity_progress(strand_dc_iface_t *iface);
/* ep is destroyed: its GETs complete with UCS_ERR_CANCELED now (posted
 * ones retire later, into nobody's memory) */
void strand_dc_integrity_orphan_op(strand_dc_op_t *op);
void strand_dc_integrity_ep_gone(strand_dc_iface_t *iface,
                                 strand_dc_ep_t *ep);
/* a checked GET whose READ was held by recovery and will not be posted
 * again: it completes with `status` */
void strand_dc_integrity_drop(strand_dc_iface_t *iface,
                              strand_integrity_get_t *get,
                              ucs_status_t status);

#endif
