/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's asynchronous events: read on UCX's async thread as soon as
 * the device's event fd is readable (rdma-core wants every event read and
 * acknowledged), counted per type and logged.
 *
 * A DCI that went to ERR is recovered from its completions (every WQE has
 * one, docs/errors.md), so its IBV_EVENT_QP_FATAL only confirms what the
 * CQEs say; events nothing else shows (CQ, SRQ, device fatal, port down)
 * are errors the user must see in the log.
 */
#ifndef STRAND_ASYNC_H_
#define STRAND_ASYNC_H_

#include "dev/dev.h"

#include <ucs/type/status.h>
#include <stdint.h>

#define STRAND_ASYNC_MAX_TYPE 32

typedef struct strand_async {
    strand_dev_t *dev;
    int           registered;                   /* handler installed */
    uint64_t      count[STRAND_ASYNC_MAX_TYPE]; /* by ibv_event_type */
    uint32_t      last_qpn[STRAND_ASYNC_MAX_TYPE];
} strand_async_t;

/* start reading dev's events (no-op without an async fd) */
ucs_status_t strand_async_init(strand_async_t *a, strand_dev_t *dev);
/* stop; events still queued are read and logged first */
void strand_async_cleanup(strand_async_t *a);
/* read what is queued now (the async thread does this on its own) */
void strand_async_drain(strand_async_t *a);
/* how many events of type were read, and the QP number of the last one */
uint64_t strand_async_count(const strand_async_t *a, enum ibv_event_type type,
                            uint32_t *last_qpn);

/* Last WQE Reached of a QP on an SRQ that entered ERR (it takes none of
 * the SRQ's receive WQEs any more, and their flush CQEs are written):
 * the mark before the QP enters ERR, then whether its event came since:
 * 1 yes, 0 not yet, -1 cannot tell (more events since than are kept). */
uint64_t strand_async_last_wqe_mark(void);
int      strand_async_last_wqe_since(const strand_dev_t *dev, uint32_t qpn,
                                     uint64_t mark);

#endif
