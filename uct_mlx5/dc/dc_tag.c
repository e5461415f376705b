/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's rendezvous with hardware tag matching: the receiver's device
 * reads the data (RVH: the sender's buffer; RAVH: this interface's DCT, to
 * READ from) and sends the FIN that completes the sender's operation.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_ep.h"
#include "uct_mlx5/common/tag.h"
#include "uct_mlx5/common/ep_post.h"

ucs_status_ptr_t
strand_dc_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags,
                            uct_completion_t *comp)
{
    STRAND_EP_BASE_DECL(tl_ep);
    struct {
        struct ibv_tmh     tmh;
        struct ibv_rvh     rvh;
        struct strand_ravh ravh;
    } hdrs; /* 48 bytes, no padding */
    size_t               length = uct_iov_total_length(iov, iovcnt);
    strand_tm_rndv_op_t *rndv;
    struct ibv_sge       sge[2];
    uint32_t             app_ctx;
    unsigned             priv;

    UCS_STATIC_ASSERT(sizeof(hdrs) == STRAND_TMH_SIZE + STRAND_DC_RNDV_HDR_LEN);
    UCT_CHECK_PARAM_PTR(header_length <= iface->tm.max_rndv_data +
                                                 STRAND_TM_RNDV_PRIV_MAX,
                        "tag_rndv_zcopy: header of %u bytes (max %u)",
                        header_length,
                        iface->tm.max_rndv_data + STRAND_TM_RNDV_PRIV_MAX);
    UCT_CHECK_PARAM_PTR(sizeof(hdrs) + header_length <=
                                iface->config.max_inline,
                        "tag_rndv_zcopy: %zu header bytes inline (max %zu)",
                        sizeof(hdrs) + header_length, iface->config.max_inline);
    rndv = strand_tag_rndv_start(iface, ep, iov, iovcnt, comp, &txq, &app_ctx,
                                 &status);
    if (rndv == NULL) {
        return UCS_STATUS_PTR(status);
    }
    strand_set_tmh(&hdrs.tmh, IBV_TMH_RNDV, app_ctx, tag);
    priv = strand_tm_rndv_priv_pack(&hdrs.tmh, header, header_length,
                                    iface->tm.max_rndv_data);
    strand_set_rvh(&hdrs.rvh, (length > 0) ? (uintptr_t)iov[0].buffer : 0,
                   (length > 0) ?
                           ((const strand_md_memh_t *)iov[0].memh)->mr.rkey :
                           0,
                   (uint32_t)length);
    strand_set_ravh(&hdrs.ravh, strand_dc_iface(iface)->dct.qpn,
                    STRAND_DC_ACCESS_KEY);
    sge[0].addr   = (uintptr_t)&hdrs;
    sge[0].length = sizeof(hdrs);
    sge[1].addr   = (uintptr_t)header + priv;
    sge[1].length = header_length - priv;
    strand_tag_rndv_post(iface, ep, txq, sge, 2);
    return rndv;
}
