/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-copy transfers of large RDMA WRITEs and READs between the processes
 * on the fabric (sim_onecopy.c).
 */
#ifndef SIM_SIM_ONECOPY_H_
#define SIM_SIM_ONECOPY_H_

#include "sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether WQE w of qp moves its data in one copy (STRAND_SIM_ONECOPY:
 * a WRITE or READ of at least that many bytes and more than one packet,
 * not inline, not scattered to a CQE). */
bool sim_onecopy_wanted(const smlx5_qp_t *qp, const sim_wqe_t *w);

/* The descriptor of a one-copy WRITE (this process and the WQE's gather
 * list) into buf; its size, 0 when it does not fit max. */
size_t sim_onecopy_desc_pack(const sim_wqe_t *w, void *buf, size_t max);

/* Responder: read the data a one-copy WRITE request describes (payload)
 * into [va, va + len), whose key and bounds the caller checked. 0, EINVAL
 * (a malformed descriptor), or the errno of the copy (ESRCH: the requester
 * is gone; EFAULT: its buffers are; EPERM: the host forbids it). */
int sim_onecopy_write_place(const void *payload, size_t payload_len,
                            uint64_t va, uint32_t len);

/* Requester: read a one-copy READ's data from the responder process pid
 * (w->raddr, w->length, checked there) into w's scatter list. 0 or an
 * errno as above. */
int sim_onecopy_read_fetch(const sim_wqe_t *w, uint32_t pid);

#endif
