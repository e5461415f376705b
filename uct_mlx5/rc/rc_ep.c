/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's endpoints: the shared endpoint with its connection (its QP
 * made by rc_qp.c, connected by the connection manager), and the
 * rendezvous request it sends with tag matching (read by the receiver's
 * transport, rc_rndv.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_ep.h"
#include "rc_cm.h"
#include "rc_rndv.h"
#include "rc_locked.h"
#include "uct_mlx5/common/ep_post.h"
#include "uct_mlx5/common/port_addr.h"
#include "uct_mlx5/common/ep_ops.h"
#include "uct_mlx5/common/tag.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>

/* The shared endpoint (its QP made by rc_qp.c), not connected yet. */
static UCS_CLASS_INIT_FUNC(strand_rc_ep_t, const uct_ep_params_t *params)
{
    UCS_CLASS_CALL_SUPER_INIT(strand_ep_t, params);
    self->conn = NULL;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(strand_rc_ep_t)
{
}

UCS_CLASS_DEFINE(strand_rc_ep_t, strand_ep_t);

/* An ep: its QP now, connected by the connection manager (rc_cm.h); it
 * posts once the peer answered. */
ucs_status_t strand_rc_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    strand_rc_iface_t *iface;
    uct_ep_params_t    qp_params;
    strand_rc_ep_t    *ep;
    ucs_status_t       status;
    const char        *why;
    char               buf[160];

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    iface = ucs_derived_of(params->iface, strand_rc_iface_t);
    why   = strand_port_addr_unreachable(
              &iface->super, (const strand_port_addr_t *)params->dev_addr, buf,
              sizeof(buf));
    if ((why == NULL) && !strand_rc_cm_is_reachable(iface->cm, params->dev_addr,
                                                    params->iface_addr)) {
        why = "its interface address is not one this interface can "
              "connect to";
    }
    if (why != NULL) {
        ucs_error("%s: rc_strand: the peer is not reachable from here: %s",
                  iface->super.dev->info.name, why);
        return UCS_ERR_UNREACHABLE;
    }
    qp_params = *params;
    qp_params.field_mask &= ~(UCT_EP_PARAM_FIELD_DEV_ADDR |
                              UCT_EP_PARAM_FIELD_IFACE_ADDR);
    /* its QP is held from its making on (strand_txq_hold): the async
     * thread, which lets other eps' held QPs go under the post lock, must
     * not count held QPs, schedule eps or take slots meanwhile */
    strand_rc_post_lock(iface);
    status = UCS_CLASS_NEW(strand_rc_ep_t, &ep, &qp_params);
    strand_rc_post_unlock(iface);
    if (status != UCS_OK) {
        return status;
    }
    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->cm));
    status = strand_rc_cm_connect(iface->cm, &ep->super, params->dev_addr,
                                  params->iface_addr);
    if (status == UCS_OK) {
        /* its QP held until the answer, which the async thread may take
         * in: the worker posts under the lock meanwhile */
        strand_rc_locked_ops_install(iface);
    }
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->cm));
    if (status != UCS_OK) {
        strand_rc_post_lock(iface);
        UCS_CLASS_DELETE(strand_rc_ep_t, ep);
        strand_rc_locked_ops_settle(iface);
        strand_rc_post_unlock(iface);
        return status;
    }
    *ep_p = &ep->super.super.super;
    return UCS_OK;
}

void strand_rc_ep_destroy(uct_ep_h tl_ep)
{
    strand_rc_ep_t    *ep    = ucs_derived_of(tl_ep, strand_rc_ep_t);
    strand_rc_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_rc_iface_t);

    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->cm));
    strand_rc_cm_forget(iface->cm, &ep->super);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->cm));
    /* a QP it held goes to ERR and rings (rc_qp.c) */
    strand_rc_post_lock(iface);
    UCS_CLASS_DELETE(strand_rc_ep_t, ep);
    strand_rc_locked_ops_settle(iface);
    strand_rc_post_unlock(iface);
}

ucs_status_t
strand_rc_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    strand_ep_t       *ep    = ucs_derived_of(tl_ep, strand_ep_t);
    strand_rc_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_rc_iface_t);
    ucs_status_t       status;

    STRAND_EP_CHECK_PARAMS(flags, comp);
    UCS_ASYNC_BLOCK(strand_rc_cm_async(iface->cm));
    strand_rc_post_lock(iface); /* a probe posts */
    status = strand_rc_cm_check(iface->cm, ep, comp);
    strand_rc_post_unlock(iface);
    UCS_ASYNC_UNBLOCK(strand_rc_cm_async(iface->cm));
    return status;
}

ucs_status_ptr_t
strand_rc_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags,
                            uct_completion_t *comp)
{
    STRAND_EP_BASE_DECL(tl_ep);
    uint8_t              rts[STRAND_TM_RTS_MAX];
    uint8_t              rkey[sizeof(strand_md_packed_rkey_sig_t)] = {0};
    size_t               length   = uct_iov_total_length(iov, iovcnt);
    unsigned             rkey_len = strand_md_rkey_packed_size(iface->md);
    strand_tm_rndv_op_t *rndv;
    struct ibv_sge       sge[2];
    struct ibv_tmh       tmh;
    uint32_t             app_ctx;
    size_t               rts_len;

    UCT_CHECK_PARAM_PTR(header_length <= strand_rc_rndv_max_hdr(iface),
                        "tag_rndv_zcopy: header of %u bytes (max %u)",
                        header_length, strand_rc_rndv_max_hdr(iface));
    rndv = strand_tag_rndv_start(iface, ep, iov, iovcnt, comp, &txq, &app_ctx,
                                 &status);
    if (rndv == NULL) {
        return UCS_STATUS_PTR(status);
    }
    if (length > 0) {
        /* the key the receiver reads with: with integrity, the signing
         * mkey of the registration too */
        status = uct_md_mkey_pack(&iface->md->super, iov[0].memh, rkey);
        if (status != UCS_OK) {
            strand_tm_rndv_put(&iface->tm, rndv);
            strand_ep_unlease_if_idle(iface, ep);
            return UCS_STATUS_PTR(status);
        }
    }
    rts_len = strand_tm_rts_pack(rts,
                                 (length > 0) ? (uintptr_t)iov[0].buffer : 0,
                                 (uint32_t)length, rkey, rkey_len, header,
                                 header_length, app_ctx, tag);
    ucs_assert((rts_len > 0) &&
               (STRAND_TMH_SIZE + rts_len <= iface->config.max_inline));
    /* its copy, where the receiver reads it if the one in the tag's
     * buffer gets written over before it is read */
    strand_rc_rndv_keep_rts(strand_rc_iface(iface)->rndv, app_ctx, rts,
                            rts_len);
    /* an eager message to the device (it reads nothing), a rendezvous
     * request to the receiver's transport */
    strand_set_tmh(&tmh, IBV_TMH_EAGER, app_ctx, tag);
    tmh.reserved[0] = STRAND_TMH_RTS;
    sge[0].addr     = (uintptr_t)&tmh;
    sge[0].length   = sizeof(tmh);
    sge[1].addr     = (uintptr_t)rts;
    sge[1].length   = (uint32_t)rts_len;
    strand_tag_rndv_post(iface, ep, txq, sge, 2);
    return rndv;
}
