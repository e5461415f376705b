/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware tag matching on the shared interface: see tag.h.
 *
 * Every message to a tag-matching SRQ starts with a TMH; a tagged one says
 * EAGER or RNDV and carries the tag, which the receiver's device matches
 * against its tag list. A rendezvous is the transport's: dc_strand's
 * carries the sender's buffer (RVH) and where to READ it from (RAVH) and
 * the receiver's device reads it (dc/dc_tag.c); rc_strand reads its own
 * (rc/rc_rndv.c). Both complete the sender's operation when the FIN comes
 * (common/tm_list.c finds it by the app_ctx it carries).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "tag.h"
#include "ep_post.h"

#include <ucs/debug/log.h>

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------ set up */

ucs_status_t strand_tag_resolve(strand_iface_t              *iface,
                                const strand_iface_config_t *config,
                                const uct_iface_params_t    *params)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    const char              *why  = NULL;

    iface->config.am_tmh = 0;
    if (config->common.tm_enable == UCS_NO) {
        return UCS_OK;
    }
    if ((config->common.tm_enable != UCS_YES) &&
        (!(params->field_mask & UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB) ||
         !(params->field_mask & UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB) ||
         (params->eager_cb == NULL) || (params->rndv_cb == NULL))) {
        /* its user does not match tags here (UCP opens interfaces of
         * workers without the tag feature so, e.g. Open MPI's osc): it
         * could take no unexpected message. Asked for (y), it is on all
         * the same, as ucx_info -d shows it: an unexpected tagged message
         * is then dropped (strand_tm_init) */
        ucs_debug("%s: %s: no tag matching: the interface was opened "
                  "without the unexpected tagged message callbacks",
                  iface->dev->info.name, iface->tl_name);
        return UCS_OK;
    }
    if ((config->common.integrity != STRAND_INTEGRITY_OFF) &&
        !iface->tl->own_rndv) {
        /* the device's rendezvous READ lands through no checking mkey,
         * and its FIN goes out whatever the data: a damaged block would
         * complete as success (docs/integrity.md) */
        why = "integrity checks are on (UCX_DC_STRAND_INTEGRITY), and the "
              "device's rendezvous reads are not checked";
    } else if ((caps->tm_max_num_tags == 0) || (caps->tm_max_ops == 0)) {
        why = "the device has no tag matching";
    } else if (!caps->devx) {
        /* the transport posts the list operations on the SRQ's command
         * QP, which only DEVX makes (UCX does the same; rdma-core keeps
         * its own inside the provider) */
        why = "the device has tag matching, but its command QP is made "
              "with DEVX, which is not available on this device (the "
              "kernel or the user's permissions refused mlx5dv_open_device "
              "with DEVX)";
    } else if (iface->dev->ops->create_tm_srq == NULL) {
        why = "the device has tag matching, but its command QP is made "
              "with DEVX, which strand's rdma-core backend does not do yet "
              "(docs/hardware.md)";
    } else if (!iface->tl->own_rndv &&
               (caps->tm_max_rndv_hdr_size <
                STRAND_TMH_SIZE + iface->tl->rndv_hdr_len)) {
        /* (a transport that reads its rendezvous itself needs none) */
        why = "the device's rendezvous header is too small for DC";
    }
    if (why != NULL) {
        if (config->common.tm_enable == UCS_YES) {
            ucs_error("%s: %s: UCX_%sTM_ENABLE=y, but %s",
                      iface->dev->info.name, iface->tl_name, iface->cfg_prefix,
                      why);
            return UCS_ERR_UNSUPPORTED;
        }
        ucs_debug("%s: %s: no tag matching: %s", iface->dev->info.name,
                  iface->tl_name, why);
        return UCS_OK;
    }
    if (config->common.tm_list_size == 0) {
        ucs_error("%s: %s: invalid configuration: UCX_%sTM_LIST_SIZE=0 "
                  "(valid: 1 .. %u)",
                  iface->dev->info.name, iface->tl_name, iface->cfg_prefix,
                  caps->tm_max_num_tags);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->common.tm_rndv_ops == 0) ||
        (config->common.tm_rndv_ops > 0x10000)) {
        ucs_error("%s: %s: invalid configuration: UCX_%sTM_RNDV_OPS=%u "
                  "(valid: 1 .. 65536)",
                  iface->dev->info.name, iface->tl_name, iface->cfg_prefix,
                  config->common.tm_rndv_ops);
        return UCS_ERR_INVALID_PARAM;
    }
    iface->config.am_tmh = STRAND_TMH_SIZE;
    return UCS_OK;
}

static uint32_t strand_tag_list_size(const strand_iface_t        *iface,
                                     const strand_iface_config_t *config)
{
    return ucs_min(config->common.tm_list_size,
                   iface->dev->caps.tm_max_num_tags);
}

/* List operations in flight: as UCX sizes its command QP, an APPEND and a
 * REMOVE for every tag and two more (a SYNC, and a REMOVE whose entry is
 * appended again), so posting or cancelling a whole list never finds the
 * command QP full while the device allows that many. */
static uint32_t strand_tag_list_ops(const strand_iface_t        *iface,
                                    const strand_iface_config_t *config)
{
    return ucs_min(2 * strand_tag_list_size(iface, config) + 2,
                   iface->dev->caps.tm_max_ops);
}

unsigned strand_tag_rx_cq_extra(const strand_iface_t        *iface,
                                const strand_iface_config_t *config)
{
    if (iface->config.am_tmh == 0) {
        return 0;
    }
    /* a completion per list operation in flight, and up to two per posted
     * tag (a rendezvous: CONSUMED, then EXPECTED) */
    return strand_tag_list_ops(iface, config) +
           2 * strand_tag_list_size(iface, config);
}

ucs_status_t strand_tag_create_srq(strand_iface_t              *iface,
                                   const strand_iface_config_t *config,
                                   const uct_iface_params_t    *params)
{
    strand_dev_t        *dev = iface->dev;
    strand_dev_tm_attr_t tm_attr;
    ucs_status_t         status;
    int                  err;

    if (iface->config.am_tmh == 0) {
        err = dev->ops->create_srq(dev, config->common.rx_queue_len, 1,
                                   &iface->srq);
        if (err != 0) {
            ucs_error("%s: failed to create SRQ of %u: %s", dev->info.name,
                      config->common.rx_queue_len, strerror(err));
            return (err == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
        }
        iface->have_srq = 1;
        return UCS_OK;
    }

    tm_attr.td           = &iface->td;
    tm_attr.max_num_tags = strand_tag_list_size(iface, config);
    tm_attr.max_ops      = strand_tag_list_ops(iface, config);
    tm_attr.cq           = &iface->rx_cq;
    err = dev->ops->create_tm_srq(dev, config->common.rx_queue_len, 1, &tm_attr,
                                  &iface->srq, &iface->tm_cmd_qp);
    if (err != 0) {
        ucs_error("%s: failed to create a tag-matching SRQ of %u with %u "
                  "tags: %s",
                  dev->info.name, config->common.rx_queue_len,
                  tm_attr.max_num_tags, strerror(err));
        return (err == EOPNOTSUPP) ? UCS_ERR_UNSUPPORTED : UCS_ERR_IO_ERROR;
    }
    iface->have_srq = 1;
    /* dc_strand's rendezvous is the receiver's device's (TMH, RVH and
     * RAVH, as much user header as the device takes); rc_strand's an
     * eager request its transport reads (a tag buffer must hold it) */
    status = strand_tm_init(&iface->tm, dev->info.name, &iface->tm_cmd_qp,
                            iface->md->mmio_mode, tm_attr.max_num_tags,
                            tm_attr.max_ops, iface->tl->rndv_hdr_len,
                            dev->caps.tm_max_rndv_hdr_size,
                            config->common.tm_rndv_ops, params);
    if (status != UCS_OK) {
        return status;
    }
    if (iface->tl->own_rndv) {
        status = strand_tm_bounce_init(&iface->tm, dev, STRAND_TM_RTS_MAX);
        if (status != UCS_OK) {
            strand_tm_cleanup(&iface->tm);
            return status;
        }
    }
    iface->have_tm = 1;
    return UCS_OK;
}

void strand_tag_cleanup(strand_iface_t *iface)
{
    if (iface->have_tm) {
        strand_tm_log_summary(&iface->tm);
        strand_tm_cleanup(&iface->tm);
        iface->have_tm = 0;
    }
}

void strand_tag_query(strand_iface_t *iface, uct_iface_attr_t *attr)
{
    size_t eager_max = iface->config.seg_size - STRAND_TMH_SIZE;

    if (!iface->have_tm) {
        return;
    }
    attr->cap.flags |= UCT_IFACE_FLAG_TAG_EAGER_SHORT |
                       UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                       UCT_IFACE_FLAG_TAG_EAGER_ZCOPY |
                       UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;
    attr->cap.tag.eager.max_short = iface->config.max_inline - STRAND_TMH_SIZE;
    attr->cap.tag.eager.max_bcopy = eager_max;
    attr->cap.tag.eager.max_zcopy = eager_max;
    attr->cap.tag.eager.max_iov   = iface->config.max_sge - 1;
    attr->cap.tag.rndv.max_zcopy  = STRAND_MAX_ZCOPY;
    attr->cap.tag.rndv.max_hdr =
            iface->tl->own_rndv ?
                    strand_tm_rts_max_hdr(
                            strand_md_rkey_packed_size(iface->md)) :
                    iface->tm.max_rndv_data + STRAND_TM_RNDV_PRIV_MAX;
    attr->cap.tag.rndv.max_iov         = 1;
    attr->cap.tag.recv.min_recv        = 0;
    attr->cap.tag.recv.max_zcopy       = STRAND_MAX_ZCOPY;
    attr->cap.tag.recv.max_iov         = 1;
    attr->cap.tag.recv.max_outstanding = iface->tm.max_tags;
}

/* ------------------------------------------------------ endpoint side */

#define STRAND_TAG_CHECK(_iface)            \
    if (ucs_unlikely(!(_iface)->have_tm)) { \
        return UCS_ERR_UNSUPPORTED;         \
    }

/* SEND or SEND_IMM, and the WQE's imm, for a tagged message's immediate
 * (its upper half goes in the TMH's app_ctx) */
static UCS_F_ALWAYS_INLINE uint8_t strand_tag_opcode(uint64_t  imm,
                                                     uint32_t *imm_be,
                                                     uint32_t *app_ctx_be)
{
    strand_tm_imm_pack(imm, imm_be, app_ctx_be);
    return (imm != 0) ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND;
}

ucs_status_t strand_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                       const void *data, size_t length)
{
    STRAND_EP_BASE_DECL(tl_ep);
    struct ibv_tmh tmh;
    struct ibv_sge sge[2];

    STRAND_TAG_CHECK(iface);
    STRAND_CHECK_MAX(length + STRAND_TMH_SIZE, iface->config.max_inline,
                     "tag_eager_short");
    status = strand_ep_am_get_txq(iface, ep, &txq);
    if (ucs_unlikely(status != UCS_OK)) {
        return strand_ep_refused(iface, ep, status, NULL);
    }
    strand_set_tmh(&tmh, IBV_TMH_EAGER, 0, tag);
    sge[0].addr   = (uintptr_t)&tmh;
    sge[0].length = STRAND_TMH_SIZE;
    sge[1].addr   = (uintptr_t)data;
    sge[1].length = (uint32_t)length;
    strand_ep_post_inline_send(iface, ep, txq, sge, 2,
                               strand_ep_am_fm_se(iface, ep));
    strand_ep_am_sent(iface, ep);
    return UCS_OK;
}

/* An eager message from a bounce buffer: TMH, then what pack_cb writes. */
static ssize_t strand_tag_send_bcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                     uint8_t opcode, uint32_t imm_be,
                                     uint32_t            app_ctx,
                                     uct_pack_callback_t pack_cb, void *arg)
{
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    struct ibv_tmh  tmh;

    STRAND_TAG_CHECK(iface);
    strand_set_tmh(&tmh, IBV_TMH_EAGER, app_ctx, tag);
    return strand_ep_send_hdr_bcopy(tl_ep, &tmh, sizeof(tmh), pack_cb, arg,
                                    opcode, imm_be);
}

ssize_t strand_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                  uct_pack_callback_t pack_cb, void *arg,
                                  unsigned flags)
{
    uint32_t imm_be, app_ctx;
    uint8_t  opcode = strand_tag_opcode(imm, &imm_be, &app_ctx);

    return strand_tag_send_bcopy(tl_ep, tag, opcode, imm_be, app_ctx, pack_cb,
                                 arg);
}

ucs_status_t strand_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                       uint64_t imm, const uct_iov_t *iov,
                                       size_t iovcnt, unsigned flags,
                                       uct_completion_t *comp)
{
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    uint32_t        imm_be, app_ctx;
    struct ibv_tmh  tmh;
    uint8_t         opcode;

    STRAND_TAG_CHECK(iface);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_sge - 1,
                       "tag_eager_zcopy");
    STRAND_CHECK_MAX(STRAND_TMH_SIZE + uct_iov_total_length(iov, iovcnt),
                     iface->config.seg_size, "tag_eager_zcopy");
    opcode = strand_tag_opcode(imm, &imm_be, &app_ctx);
    strand_set_tmh(&tmh, IBV_TMH_EAGER, app_ctx, tag);
    return strand_ep_send_hdr_zcopy(tl_ep, &tmh, sizeof(tmh), iov, iovcnt,
                                    opcode, imm_be, comp);
}

strand_tm_rndv_op_t *
strand_tag_rndv_start(strand_iface_t *iface, strand_ep_t *ep,
                      const uct_iov_t *iov, size_t iovcnt,
                      uct_completion_t *comp, strand_txq_t **txq_p,
                      uint32_t *app_ctx_p, ucs_status_t *status_p)
{
    size_t               length = uct_iov_total_length(iov, iovcnt);
    strand_tm_rndv_op_t *rndv;

    *status_p = UCS_ERR_INVALID_PARAM;
    if (ucs_unlikely(!iface->have_tm)) {
        *status_p = UCS_ERR_UNSUPPORTED;
        return NULL;
    }
    if (iovcnt > 1) {
        ucs_error("tag_rndv_zcopy: iovcnt %zu (max 1)", iovcnt);
        return NULL;
    }
    if (length > STRAND_MAX_ZCOPY) {
        ucs_error("tag_rndv_zcopy: %zu bytes (max %lu)", length,
                  STRAND_MAX_ZCOPY);
        return NULL;
    }
    if ((length > 0) && (iov[0].memh == UCT_MEM_HANDLE_NULL)) {
        ucs_error("tag_rndv_zcopy: the buffer needs a memory handle (the "
                  "receiver reads it)");
        return NULL;
    }
    *status_p = strand_ep_am_get_txq(iface, ep, txq_p);
    if (ucs_unlikely(*status_p != UCS_OK)) {
        return NULL;
    }
    rndv = strand_tm_rndv_get(&iface->tm, ep, comp, app_ctx_p);
    if (ucs_unlikely(rndv == NULL)) {
        strand_ep_unlease_if_idle(iface, ep);
        *status_p = UCS_ERR_NO_RESOURCE;
    }
    return rndv;
}

void strand_tag_rndv_post(strand_iface_t *iface, strand_ep_t *ep,
                          strand_txq_t *txq, const struct ibv_sge *sge,
                          unsigned n)
{
    strand_ep_post_inline_send(iface, ep, txq, sge, n,
                               strand_ep_am_fm_se(iface, ep));
    strand_ep_am_sent(iface, ep);
    ++iface->tm.stats.rndv_sent;
}

ucs_status_t strand_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op)
{
    strand_iface_t *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);

    STRAND_TAG_CHECK(iface);
    return strand_tm_rndv_cancel(&iface->tm, tl_ep, op);
}

typedef struct {
    const void *header;
    unsigned    length;
} strand_tag_hdr_t;

static size_t strand_tag_pack_hdr(void *dest, void *arg)
{
    const strand_tag_hdr_t *h = arg;

    if (h->length > 0) {
        memcpy(dest, h->header, h->length);
    }
    return h->length;
}

/* A software rendezvous request: an eager message with an immediate of 0
 * (SEND_IMM, imm 0); the receiver hands the header to the protocol. */
ucs_status_t strand_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *header,
                                        unsigned header_length, unsigned flags)
{
    strand_iface_t  *iface = ucs_derived_of(tl_ep->iface, strand_iface_t);
    strand_tag_hdr_t h     = {header, header_length};
    ssize_t          ret;

    STRAND_CHECK_MAX(STRAND_TMH_SIZE + header_length, iface->config.seg_size,
                     "tag_rndv_request");
    ret = strand_tag_send_bcopy(tl_ep, tag, MLX5_OPCODE_SEND_IMM, 0, 0,
                                strand_tag_pack_hdr, &h);
    return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
}

void strand_tag_ep_purge(strand_iface_t *iface, void *ep, ucs_status_t status)
{
    if (iface->have_tm) {
        strand_tm_rndv_purge(&iface->tm, ep, status);
    }
}

/* ----------------------------------------------------- interface side */

ucs_status_t strand_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                         uct_tag_t        tag_mask,
                                         const uct_iov_t *iov, size_t iovcnt,
                                         uct_tag_context_t *ctx)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    STRAND_TAG_CHECK(iface);
    if (ucs_unlikely(!ucs_list_is_empty(&iface->integrity.active)) &&
        (iovcnt > 0) &&
        strand_integrity_writes_into(&iface->integrity, iov[0].buffer,
                                     uct_iov_get_length(&iov[0]))) {
        /* a checked GET of an earlier receive still writes there (UCP
         * posts one buffer for several receives): a rendezvous request
         * matched into it would be written over before UCP reads it,
         * as it could be from any buffer busy elsewhere. The receive
         * stays UCP's, as for a buffer posted twice. */
        ++iface->tm.stats.buf_busy;
        return UCS_ERR_ALREADY_EXISTS;
    }
    return strand_tm_recv_zcopy(&iface->tm, tag, tag_mask, iov, iovcnt, ctx);
}

ucs_status_t strand_iface_tag_recv_cancel(uct_iface_h        tl_iface,
                                          uct_tag_context_t *ctx, int force)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    STRAND_TAG_CHECK(iface);
    return strand_tm_recv_cancel(&iface->tm, ctx, force);
}

strand_tag_rx_t strand_tag_rx(strand_iface_t *iface, struct mlx5_cqe64 *cqe,
                              const void *msg, uint32_t length)
{
    struct ibv_tmh tmh;
    ucs_status_t   status;

    if (strand_cqe_is_tm(cqe) &&
        (cqe->app_op == STRAND_CQE_APP_OP_TM_UNEXPECTED)) {
        status = strand_tm_handle_unexp(&iface->tm, cqe, (void *)msg, length);
        return (status == UCS_INPROGRESS) ? STRAND_TAG_RX_KEPT :
                                            STRAND_TAG_RX_DONE;
    }
    if (length < STRAND_TMH_SIZE) {
        return STRAND_TAG_RX_AM;
    }
    memcpy(&tmh, msg, sizeof(tmh)); /* not aligned in the buffer */
    if (tmh.opcode == IBV_TMH_FIN) {
        strand_tm_rndv_fin(&iface->tm, tmh.app_ctx,
                           (ucs_status_t)(int8_t)tmh.reserved[0]);
        return STRAND_TAG_RX_DONE;
    }
    return STRAND_TAG_RX_AM;
}
