/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-copy transfers (docs/software-device.md, "Large transfers in one
 * copy"): the data of a large RDMA WRITE or READ moves with one
 * process_vm_readv() straight from the buffer it comes from into the one
 * it goes to, as UCX's cma transport moves it, instead of through the
 * fabric ring (a copy in and a copy out). The packets stay: they carry
 * the headers, and the side whose memory the data lands in checks its own
 * keys first and then copies, so every check, error and ordering rule of
 * the packet path holds:
 *   WRITE  the request carries the requester's process id and gather list
 *          (its lkeys were checked at post); the responder checks the rkey
 *          and bounds as for any WRITE, reads the data into place, then
 *          acknowledges. A retransmitted request places the same bytes
 *          again.
 *   READ   the responder checks the rkey and bounds, and its one response
 *          names its process id; the requester, whose scatter list was
 *          checked at post, reads the data into place and only then
 *          completes the WQE. A retried READ is answered again.
 */
#define _GNU_SOURCE
#include "sim_onecopy.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* the descriptor a one-copy WRITE request carries as its payload */
typedef struct sim_onecopy_desc {
    uint32_t pid;
    uint32_t num;
    struct {
        uint64_t addr;
        uint64_t len;
    } seg[];
} sim_onecopy_desc_t;

bool sim_onecopy_wanted(const smlx5_qp_t *qp, const sim_wqe_t *w)
{
    uint32_t min = qp->ctx->cfg.onecopy_min;

    /* across hosts, no process can read another's memory: every
     * transfer goes as packets (sim_net.h) */
    if ((min == 0) || (qp->ctx->net != NULL) || w->is_inline || w->to_cqe ||
        w->via_mkey || (w->length < min) || (w->length <= qp->path_mtu)) {
        return false;
    }
    return (w->opcode == MLX5_OPCODE_RDMA_WRITE) ||
           (w->opcode == MLX5_OPCODE_RDMA_WRITE_IMM) ||
           (w->opcode == MLX5_OPCODE_RDMA_READ);
}

size_t sim_onecopy_desc_pack(const sim_wqe_t *w, void *buf, size_t max)
{
    sim_onecopy_desc_t *d    = buf;
    size_t              size = sizeof(*d) + w->num_sge * sizeof(d->seg[0]);
    uint32_t            i;

    if (size > max) {
        return 0;
    }
    d->pid = (uint32_t)getpid();
    d->num = w->num_sge;
    for (i = 0; i < w->num_sge; ++i) {
        d->seg[i].addr = w->sge[i].addr;
        d->seg[i].len  = w->sge[i].len;
    }
    return size;
}

/* Read `len` bytes from process pid's `remote` list into `local`; 0 or a
 * positive errno (a short copy is EFAULT: a page that is not there). */
static int sim_onecopy_readv(uint32_t pid, const struct iovec *local,
                             unsigned nlocal, const struct iovec *remote,
                             unsigned nremote, size_t len)
{
    ssize_t n = process_vm_readv((pid_t)pid, local, nlocal, remote, nremote, 0);

    if (n < 0) {
        return errno;
    }
    return ((size_t)n == len) ? 0 : EFAULT;
}

int sim_onecopy_write_place(const void *payload, size_t payload_len,
                            uint64_t va, uint32_t len)
{
    const sim_onecopy_desc_t *d = payload;
    struct iovec              local, remote[SIM_MAX_SGE];
    uint64_t                  total = 0;
    uint32_t                  i;

    if ((payload_len < sizeof(*d)) || (d->num > SIM_MAX_SGE) ||
        (payload_len != sizeof(*d) + d->num * sizeof(d->seg[0]))) {
        return EINVAL;
    }
    for (i = 0; i < d->num; ++i) {
        remote[i].iov_base = (void *)(uintptr_t)d->seg[i].addr;
        remote[i].iov_len  = d->seg[i].len;
        total += d->seg[i].len;
    }
    if (total != len) {
        return EINVAL;
    }
    local.iov_base = (void *)(uintptr_t)va;
    local.iov_len  = len;
    return sim_onecopy_readv(d->pid, &local, 1, remote, d->num, len);
}

int sim_onecopy_read_fetch(const sim_wqe_t *w, uint32_t pid)
{
    struct iovec local[SIM_MAX_SGE], remote;
    uint32_t     i, n = 0, left = w->length;

    for (i = 0; (i < w->num_sge) && (left > 0); ++i) {
        local[n].iov_base = (void *)(uintptr_t)w->sge[i].addr;
        local[n].iov_len  = (w->sge[i].len < left) ? w->sge[i].len : left;
        left -= (uint32_t)local[n].iov_len;
        ++n;
    }
    remote.iov_base = (void *)(uintptr_t)w->raddr;
    remote.iov_len  = w->length;
    return sim_onecopy_readv(pid, local, n, &remote, 1, w->length);
}
