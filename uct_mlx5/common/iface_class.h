/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared interface's class (iface_class.c): open and close, query,
 * progress, flush, fence, VFS, the UCT operations both transports start
 * from, the send CQs made as send queues come.
 */
#ifndef STRAND_IFACE_CLASS_H_
#define STRAND_IFACE_CLASS_H_

#include "iface.h"

/* The interface with its transport's part (tl), UCT operations table and
 * configuration as the shared code reads it; each transport's class
 * derives from it (dc/dc_iface.c, rc/rc_iface.c). */
UCS_CLASS_DECLARE(strand_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t *, const uct_iface_config_t *,
                  const strand_iface_config_t *, const strand_tl_ops_t *,
                  uct_iface_ops_t *);
ucs_status_t strand_query_devices(uct_md_h                   uct_md,
                                  uct_tl_device_resource_t **devices_p,
                                  unsigned                  *num_devices_p);
/* what both transports have; each adds its addresses and costs */
ucs_status_t strand_iface_query(strand_iface_t *iface, uct_iface_attr_t *attr);
/* the device's estimates (src/dev) */
ucs_status_t strand_iface_perf(strand_iface_t *iface, strand_dev_perf_t *perf);
/* a status for an errno of the device layer */
ucs_status_t strand_errno_status(int err);

/* the internal operations: both transports' (rc_strand adds VFS files) */
extern uct_iface_internal_ops_t strand_iface_internal_ops;
void                            strand_iface_vfs_refresh(uct_iface_h tl_iface);
ucs_status_t
strand_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr);

/* the interface operations both transports take as they are */
unsigned     strand_iface_progress(uct_iface_h tl_iface);
ucs_status_t strand_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                uct_completion_t *comp);
ucs_status_t strand_iface_fence(uct_iface_h tl_iface, unsigned flags);
/* the UCT operations table both start from (ep_create, iface_close,
 * query and addresses are each transport's own) */
extern const uct_iface_ops_t strand_iface_ops;

/* The send CQ of send queue txq_index, made (and those before it) if it is
 * the first of its group. */
ucs_status_t strand_iface_tx_cq_get(strand_iface_t *iface, unsigned txq_index,
                                    strand_dev_cq_t **cq_p);

#endif
