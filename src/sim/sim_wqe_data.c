/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A WQE's data in local memory: gathered for its packets, scattered from
 * its responses, and the check that its buffers are still registered when
 * a retransmission or a response touches them long after the parse.
 * Shared by the requester and the completer, below both.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "sim.h"
#include "sim_onecopy.h"
#include "sim_sig.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The bytes of a WQE whose data goes through an mkey (signed or checked on
 * the way: a bad block stops a pipelining QP's SQ). */
static void sim_wqe_mkey_tx(smlx5_qp_t *qp, const sim_wqe_t *w, uint32_t off,
                            uint8_t *dst, uint32_t len)
{
    smlx5_mkey_t          *mk  = sim_mkey_lookup(qp->ctx, w->sge[0].lkey);
    const sim_sig_report_t rep = {qp->send_cq, qp};

    if (mk == NULL) {
        memset(dst, 0, len); /* destroyed under the WQE */
        return;
    }
    sim_sig_tx(mk, w->sge[0].addr + off, dst, len, &rep);
}

/* Copy `len` bytes of the WQE's gather list from byte `off` into `dst`. */
void sim_wqe_gather(smlx5_qp_t *qp, const sim_wqe_t *w, uint32_t off,
                    uint8_t *dst, uint32_t len)
{
    uint32_t sq_size = qp->sq_wqe_cnt * 64, n;

    if (w->is_inline) {
        uint32_t pos = (w->inline_off + off) & (sq_size - 1);
        n            = sq_size - pos;
        if (n >= len) {
            memcpy(dst, qp->sq_buf + pos, len);
        } else {
            memcpy(dst, qp->sq_buf + pos, n);
            memcpy(dst + n, qp->sq_buf, len - n);
        }
        return;
    }
    if (w->via_mkey) {
        sim_wqe_mkey_tx(qp, w, off, dst, len);
        return;
    }
    sim_wqe_sge_copy(w, off, dst, len, false);
}

void sim_wqe_sge_copy(const sim_wqe_t *w, uint32_t off, void *data,
                      uint32_t len, bool to_sges)
{
    uint8_t *p = data;
    uint32_t i, n;
    void    *mem;

    for (i = 0; (i < w->num_sge) && (len > 0); ++i) {
        if (off >= w->sge[i].len) {
            off -= w->sge[i].len;
            continue;
        }
        n = w->sge[i].len - off;
        if (n > len) {
            n = len;
        }
        mem = (void *)(uintptr_t)(w->sge[i].addr + off);
        if (to_sges) {
            memcpy(mem, p, n);
        } else {
            memcpy(p, mem, n);
        }
        p += n;
        len -= n;
        off = 0;
    }
}

/* A retransmission's bytes, gathered into buf through the kernel: the
 * user may have unmapped a buffer whose registration UCX's cache still
 * holds (its pages stay pinned, so a NIC reads them as they were), which
 * a plain copy would take the process down with. -EFAULT: not readable,
 * the WQE fails as a local protection error, the one thing the software
 * device can do where a NIC would send stale bytes. Only retransmissions
 * come here: the first transmission follows the post, while the
 * operation is the user's to keep. */
int sim_wqe_gather_checked(smlx5_qp_t *qp, const sim_wqe_t *w, uint32_t off,
                           uint8_t *buf, uint32_t len)
{
    uint32_t     off0 = off;
    ssize_t      got;
    struct iovec local = {buf, len}, remote[SIM_MAX_SGE];
    unsigned     i, n       = 0;
    uint32_t     take, want = len;

    for (i = 0; (i < w->num_sge) && (len > 0); ++i) {
        if (off >= w->sge[i].len) {
            off -= w->sge[i].len;
            continue;
        }
        take = (w->sge[i].len - off < len) ? w->sge[i].len - off : len;
        remote[n].iov_base = (void *)(uintptr_t)(w->sge[i].addr + off);
        remote[n].iov_len  = take;
        ++n;
        len -= take;
        off = 0;
    }
    got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
    if (got == (ssize_t)want) {
        return 0;
    }
    if ((got < 0) && ((errno == ENOSYS) || (errno == EPERM))) {
        /* a sandbox without the call: the plain copy, as before */
        sim_wqe_gather(qp, w, off0, buf, want);
        return 0;
    }
    return -EFAULT;
}

bool sim_wqe_local_valid(smlx5_qp_t *qp, const sim_wqe_t *w)
{
    int access = (w->opcode == MLX5_OPCODE_RDMA_READ) || w->needs_response ?
                         IBV_ACCESS_LOCAL_WRITE :
                         0;
    uint32_t i;

    if (w->is_inline || w->via_mkey || w->onecopy || w->to_cqe) {
        return true;
    }
    for (i = 0; i < w->num_sge; ++i) {
        if (sim_mr_check_local(qp->ctx, qp->pd, w->sge[i].lkey, w->sge[i].addr,
                               w->sge[i].len, access) != 0) {
            return false;
        }
    }
    return true;
}
