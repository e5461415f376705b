/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching offload: a pair opened with TM_ENABLE=try and the
 * unexpected-message callbacks (without them a transport turns tags off).
 * Where the interfaces come up with offload: eager short, bcopy and zcopy
 * messages into posted receives (the device matches and places them),
 * an eager message nobody posted a receive for (the unexpected callback),
 * and a rendezvous into a posted receive. Where they do not, one "off"
 * line says why.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_TAG_ZCOPY_MAX (64 * 1024)
#define HC_RNDV_MAX      (1024 * 1024)
#define HC_TAG_SLACK     64 /* bytes past a message that stay */

/* A posted receive and what the transport said about it. */
typedef struct hc_tag_ctx {
    uct_tag_context_t uct;
    uint8_t          *buf; /* the receive buffer */
    int               completed;
    int               sw_rndv; /* handed to software: not offloaded */
    uct_tag_t         stag;
    size_t            length;
    ucs_status_t      status;
} hc_tag_ctx_t;

static void hc_tag_consumed_cb(uct_tag_context_t *self)
{
}

static void hc_tag_completed_cb(uct_tag_context_t *self, uct_tag_t stag,
                                uint64_t imm, size_t length, void *inline_data,
                                ucs_status_t status)
{
    hc_tag_ctx_t *c = ucs_container_of(self, hc_tag_ctx_t, uct);

    /* data the transport did not place in the buffer is ours to copy */
    if ((inline_data != NULL) && (status == UCS_OK)) {
        memcpy(c->buf, inline_data, length);
    }
    c->completed = 1;
    c->stag      = stag;
    c->length    = length;
    c->status    = status;
}

static void hc_tag_rndv_cb(uct_tag_context_t *self, uct_tag_t stag,
                           const void *header, unsigned header_length,
                           ucs_status_t status, unsigned flags)
{
    hc_tag_ctx_t *c = ucs_container_of(self, hc_tag_ctx_t, uct);

    c->sw_rndv = 1;
    c->stag    = stag;
    c->status  = status;
}

static int hc_tag_done(void *arg)
{
    hc_tag_ctx_t *c = arg;

    return c->completed || c->sw_rndv;
}

/* Post a receive for `tag` over all of region r. */
static ucs_status_t
hc_tag_post(hc_pair_t *p, hc_tag_ctx_t *c, hc_region_t *r, uct_tag_t tag)
{
    uct_iov_t iov = {r->buf, r->length, r->memh, 0, 1};

    memset(c, 0, sizeof(*c));
    c->buf                 = r->buf;
    c->uct.tag_consumed_cb = hc_tag_consumed_cb;
    c->uct.completed_cb    = hc_tag_completed_cb;
    c->uct.rndv_cb         = hc_tag_rndv_cb;
    return uct_iface_tag_recv_zcopy(p->b.iface, tag, UINT64_MAX, &iov, 1,
                                    &c->uct);
}

/* The receive's verdict: completed with the tag and the `length` bytes of
 * `want`, nothing written past them. 0, or -1 and a FAIL line. */
static int hc_tag_verify(hc_pair_t *p, const char *name, hc_tag_ctx_t *c,
                         hc_region_t *r, uint8_t *image, const uint8_t *want,
                         size_t length, uct_tag_t tag)
{
    char why[160];

    if (!hc_wait(p->u, hc_tag_done, c)) {
        hc_fail(name, "the posted receive did not complete in %.0f s",
                p->u->timeout);
    } else if (c->sw_rndv) {
        hc_fail(name, "the device handed the rendezvous to software");
    } else if (c->status != UCS_OK) {
        hc_fail(name, "the receive: %s", hc_why(p->u, c->status));
    } else if ((c->stag != tag) || (c->length != length)) {
        hc_fail(name,
                "the receive got tag 0x%lx and %zu bytes, not 0x%lx "
                "and %zu",
                (unsigned long)c->stag, c->length, (unsigned long)tag, length);
    } else {
        memcpy(image, want, length);
        if (!hc_compare(r->buf, image, r->length, why, sizeof(why))) {
            return 0;
        }
        hc_fail(name, "%s", why);
    }
    return -1;
}

typedef struct hc_bytes {
    const uint8_t *data;
    size_t         length;
} hc_bytes_t;

static size_t hc_tag_pack_cb(void *dest, void *arg)
{
    hc_bytes_t *b = arg;

    memcpy(dest, b->data, b->length);
    return b->length;
}

/* ------------------------------------------------------------ eager */

typedef enum {
    HC_EAGER_SHORT,
    HC_EAGER_BCOPY,
    HC_EAGER_ZCOPY
} hc_eager_t;

static size_t hc_eager_length(const uct_iface_attr_t *a, hc_eager_t kind)
{
    switch (kind) {
    case HC_EAGER_SHORT:
        return a->cap.tag.eager.max_short;
    case HC_EAGER_BCOPY:
        return a->cap.tag.eager.max_bcopy;
    default:
        return (a->cap.tag.eager.max_zcopy < HC_TAG_ZCOPY_MAX) ?
                       a->cap.tag.eager.max_zcopy :
                       HC_TAG_ZCOPY_MAX;
    }
}

/* Send one eager message of `kind` from region src; its status. */
static ucs_status_t hc_eager_send(hc_pair_t *p, hc_eager_t kind,
                                  hc_region_t *src, size_t length,
                                  uct_tag_t tag)
{
    hc_bytes_t   bytes = {src->buf, length};
    uct_iov_t    iov   = {src->buf, length, src->memh, 0, 1};
    ucs_status_t status;
    hc_comp_t   *comp;
    ssize_t      sent;

    switch (kind) {
    case HC_EAGER_SHORT:
        HC_RETRY(p->u, status,
                 uct_ep_tag_eager_short(p->ep, tag, src->buf, length));
        return status;
    case HC_EAGER_BCOPY:
        HC_RETRY(p->u, sent,
                 uct_ep_tag_eager_bcopy(p->ep, tag, 0, hc_tag_pack_cb, &bytes,
                                        0));
        return (sent == (ssize_t)length) ? UCS_OK :
               (sent < 0)                ? (ucs_status_t)sent :
                                           UCS_ERR_IO_ERROR;
    default:
        comp = hc_comp_new(p->u);
        HC_RETRY(p->u, status,
                 uct_ep_tag_eager_zcopy(p->ep, tag, 0, &iov, 1, 0, &comp->uct));
        return hc_comp_wait(p->u, status, comp);
    }
}

/* A transfer's buffers (src of `length` bytes; dst with room for what a
 * bad receive could write past it), dst's bytes before the transfer in
 * *image, and a receive posted into dst: 0, or -1 with the FAIL line
 * said (what was made is freed by the caller). */
static int hc_tag_setup(hc_pair_t *p, const char *name, hc_tag_ctx_t *ctx,
                        size_t length, unsigned seed, uct_tag_t tag,
                        hc_region_t *src, hc_region_t *dst, uint8_t **image)
{
    ucs_status_t status;

    memset(dst, 0, sizeof(*dst));
    *image = NULL;
    status = hc_region_alloc(p->u, src, length, seed);
    if (status == UCS_OK) {
        status = hc_region_alloc(p->u, dst, length + HC_TAG_SLACK, seed + 1);
    }
    *image = malloc(length + HC_TAG_SLACK);
    if ((status != UCS_OK) || (*image == NULL)) {
        hc_fail(name, "registering its buffers: %s", hc_why(p->u, status));
        return -1;
    }
    memcpy(*image, dst->buf, dst->length);
    status = hc_tag_post(p, ctx, dst, tag);
    if (status != UCS_OK) {
        hc_fail(name, "posting the receive: %s", hc_why(p->u, status));
        return -1;
    }
    return 0;
}

static void hc_tag_eager(hc_pair_t *p, hc_eager_t kind, uint64_t flag,
                         const char *what, uct_tag_t tag)
{
    size_t        length = hc_eager_length(&p->a.attr, kind);
    hc_tag_ctx_t *ctx    = hc_keep(p->u, sizeof(*ctx));
    hc_region_t   src, dst;
    uint8_t      *image = NULL;
    ucs_status_t  status;
    char          name[64];

    snprintf(name, sizeof(name), "%s tag eager %s", p->tl, what);
    hc_step("%s", name);
    if (!(p->a.attr.cap.flags & flag)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    if (hc_tag_setup(p, name, ctx, length, 50 + 2 * kind, tag, &src, &dst,
                     &image) != 0) {
        goto out;
    }
    status = hc_eager_send(p, kind, &src, length, tag);
    if (status != UCS_OK) {
        hc_fail(name, "the send: %s", hc_why(p->u, status));
        uct_iface_tag_recv_cancel(p->b.iface, &ctx->uct, 1);
        goto out;
    }
    if (!hc_tag_verify(p, name, ctx, &dst, image, src.buf, length, tag)) {
        hc_ok(name, "%zu bytes into a posted receive", length);
    }
out:
    free(image);
    hc_region_free(p->u, &dst);
    hc_region_free(p->u, &src);
}

typedef struct hc_unexp_wait {
    hc_tag_rx_t *rx;
    unsigned     count;
} hc_unexp_wait_t;

static int hc_unexp_arrived(void *arg)
{
    hc_unexp_wait_t *w = arg;

    return w->rx->eager > w->count;
}

/* An eager message no receive was posted for: the unexpected callback
 * gets it whole. */
static void hc_tag_unexpected(hc_pair_t *p, uct_tag_t tag)
{
    size_t          length = hc_eager_length(&p->a.attr, HC_EAGER_BCOPY);
    hc_unexp_wait_t w      = {&p->b.tag, p->b.tag.eager};
    hc_region_t     src;
    ucs_status_t    status;
    char            name[64], why[160];

    snprintf(name, sizeof(name), "%s tag unexpected", p->tl);
    hc_step("%s", name);
    if (!(p->a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY)) {
        hc_off(name, "no eager bcopy to send it with");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    length = (length < HC_AM_MAX) ? length : HC_AM_MAX;
    status = hc_region_alloc(p->u, &src, length, 70);
    if (status == UCS_OK) {
        status = hc_eager_send(p, HC_EAGER_BCOPY, &src, length, tag);
    }
    if (status != UCS_OK) {
        hc_fail(name, "the send: %s", hc_why(p->u, status));
    } else if (!hc_wait(p->u, hc_unexp_arrived, &w)) {
        hc_fail(name,
                "the unexpected-message callback was not called in "
                "%.0f s",
                p->u->timeout);
    } else if ((p->b.tag.tag != tag) || (p->b.tag.length != length)) {
        hc_fail(name,
                "the callback got tag 0x%lx and %zu bytes, not 0x%lx "
                "and %zu",
                (unsigned long)p->b.tag.tag, p->b.tag.length,
                (unsigned long)tag, length);
    } else if (hc_compare(p->b.tag.data, src.buf, length, why, sizeof(why))) {
        hc_fail(name, "%s", why);
    } else {
        hc_ok(name, "%zu bytes to the unexpected-message callback", length);
    }
    hc_region_free(p->u, &src);
}

/* ------------------------------------------------------- rendezvous */

static void hc_tag_rndv(hc_pair_t *p, uct_tag_t tag)
{
    const uct_iface_attr_t *a      = &p->a.attr;
    size_t                  length = (a->cap.tag.rndv.max_zcopy < HC_RNDV_MAX) ?
                                             a->cap.tag.rndv.max_zcopy :
                                             HC_RNDV_MAX;
    uint8_t                 header[16] = "strand-hwcheck";
    hc_tag_ctx_t           *ctx        = hc_keep(p->u, sizeof(*ctx));
    hc_region_t             src, dst;
    uint8_t                *image = NULL;
    ucs_status_ptr_t        op;
    ucs_status_t            status;
    hc_comp_t              *comp;
    uct_iov_t               iov;
    char                    name[64];

    snprintf(name, sizeof(name), "%s tag rndv zcopy", p->tl);
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    if (hc_tag_setup(p, name, ctx, length, 80, tag, &src, &dst, &image) != 0) {
        goto out;
    }
    iov  = (uct_iov_t){src.buf, length, src.memh, 0, 1};
    comp = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             UCS_PTR_STATUS(op = uct_ep_tag_rndv_zcopy(
                                    p->ep, tag, header,
                                    (a->cap.tag.rndv.max_hdr < sizeof(header)) ?
                                            (unsigned)a->cap.tag.rndv.max_hdr :
                                            sizeof(header),
                                    &iov, 1, 0, &comp->uct)));
    if (UCS_PTR_IS_ERR(op)) {
        hc_fail(name, "the send: %s", hc_why(p->u, UCS_PTR_STATUS(op)));
        uct_iface_tag_recv_cancel(p->b.iface, &ctx->uct, 1);
        goto out;
    }
    if (hc_tag_verify(p, name, ctx, &dst, image, src.buf, length, tag)) {
        goto out;
    }
    /* and the sender learns the receiver has it (the FIN) */
    status = hc_comp_wait(p->u, UCS_INPROGRESS, comp);
    if (status != UCS_OK) {
        hc_fail(name, "the data arrived, but the sender's completion: %s",
                hc_why(p->u, status));
    } else {
        hc_ok(name, "%zu bytes into a posted receive, the sender completed",
              length);
    }
out:
    free(image);
    hc_region_free(p->u, &dst);
    hc_region_free(p->u, &src);
}

/* ----------------------------------------------------------- entry */

/* Why an interface opened with TM_ENABLE=try came up without offload:
 * what the transport needs that is missing here. */
static const char *hc_tags_why(const char *tl, const hc_machine_t *m)
{
    const char *integrity = getenv("UCX_DC_STRAND_INTEGRITY");
    const char *sim_caps  = getenv("STRAND_SIM_CAPS");

    if (!strcmp(tl, "dc_strand") && (integrity != NULL) &&
        strcmp(integrity, "off")) {
        return "UCX_DC_STRAND_INTEGRITY is on, and the device's rendezvous "
               "reads are not checked";
    }
    if (m->sim) {
        if ((sim_caps != NULL) && strstr(sim_caps, "tm_max_num_tags=0")) {
            return "STRAND_SIM_CAPS gives the software device no tag "
                   "matching";
        }
        if ((sim_caps != NULL) && strstr(sim_caps, "devx=0")) {
            return "no DEVX (STRAND_SIM_CAPS devx=0), which makes the "
                   "tag-matching SRQ's command QP";
        }
        return "the software device has none (UCX_LOG_LEVEL=debug says why)";
    }
    if (m->tm_max_num_tags == 0) {
        return "the NIC reports no tag matching (see 'tag matching (NIC)')";
    }
    if (!m->devx) {
        return "no DEVX (see 'DEVX'), which makes the tag-matching SRQ's "
               "command QP";
    }
    return "strand's hw backend has no tag matching yet: its command QP "
           "needs DEVX commands it does not make yet (docs/hardware.md, Tag "
           "matching)";
}

void hc_check_tags(hc_uct_t *u, const char *tl, const hc_machine_t *m)
{
    const uint64_t any = UCT_IFACE_FLAG_TAG_EAGER_SHORT |
                         UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                         UCT_IFACE_FLAG_TAG_EAGER_ZCOPY |
                         UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;
    hc_pair_t   *p = calloc(1, sizeof(*p));
    const char  *what;
    ucs_status_t status;
    char         name[64];

    snprintf(name, sizeof(name), "%s tag offload", tl);
    hc_step("%s", name);
    if (p == NULL) {
        hc_fail(name, "out of memory");
        return;
    }
    status = hc_pair_open(p, u, tl, 1, &what);
    if (status != UCS_OK) {
        hc_fail(name, "%s with TM_ENABLE=try: %s", what, hc_why(p->u, status));
    } else if (!(p->a.attr.cap.flags & any)) {
        hc_off(name, "with UCX_%s_TM_ENABLE=try it opened without: %s",
               !strcmp(tl, "dc_strand") ? "DC_STRAND" : "RC_STRAND",
               hc_tags_why(tl, m));
    } else {
        hc_tag_eager(p, HC_EAGER_SHORT, UCT_IFACE_FLAG_TAG_EAGER_SHORT, "short",
                     0x1001);
        hc_tag_eager(p, HC_EAGER_BCOPY, UCT_IFACE_FLAG_TAG_EAGER_BCOPY, "bcopy",
                     0x1002);
        hc_tag_eager(p, HC_EAGER_ZCOPY, UCT_IFACE_FLAG_TAG_EAGER_ZCOPY, "zcopy",
                     0x1003);
        hc_tag_unexpected(p, 0x2001);
        hc_tag_rndv(p, 0x3001);
    }
    hc_pair_close(p);
    free(p);
}
