/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCT through the strand plugin, as strand's own test programs drive it:
 * the component, an MD on the device, a worker, pairs of interfaces of one
 * transport (a sends, b receives, both progressed by the one worker),
 * registered regions, and waits that give up after the timeout instead of
 * hanging.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"
#include "contrib/uct_loader.h"
#include "uct_mlx5/ucx_compat.h"

#include <ucs/datastruct/string_buffer.h>
#include <ucs/vfs/base/vfs_obj.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct hc_kept {
    hc_kept_t *next;
    /* the memory handed out follows, aligned for any type */
    union {
        long double ld;
        uint64_t    u64;
        void       *ptr;
    } data[];
};

struct hc_late {
    hc_late_t  *next;
    hc_region_t region;
};

void *hc_keep(hc_uct_t *u, size_t size)
{
    hc_kept_t *k = calloc(1, sizeof(*k) + size);

    if (k == NULL) {
        fprintf(stderr, "strand-hwcheck: out of memory\n");
        exit(1);
    }
    k->next = u->kept;
    u->kept = k;
    return k->data;
}

/* ------------------------------------------------------ component, MD */

/* Whether the component lists the MD (UCX_STRAND_DEVICE_TYPE decides
 * which devices it lists). */
static int hc_md_listed(uct_component_h c, const char *md_name)
{
    uct_component_attr_t attr;
    unsigned             i;
    int                  found = 0;

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(c, &attr) != UCS_OK) {
        return 0;
    }
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = calloc(attr.md_resource_count + 1,
                               sizeof(*attr.md_resources));
    if ((attr.md_resources != NULL) &&
        (uct_component_query(c, &attr) == UCS_OK)) {
        for (i = 0; i < attr.md_resource_count; ++i) {
            found |= !strcmp(attr.md_resources[i].md_name, md_name);
        }
    }
    free(attr.md_resources);
    return found;
}

static ucs_status_t hc_md_open(hc_uct_t *u)
{
    uct_md_config_t *config;
    ucs_status_t     status;

    status = uct_md_config_read(u->component, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    /* with the cache, a deregistered region stays registered (cached) and
     * its key stays good: the bad-key check needs a dead key */
    status = strand_config_modify(config, "STRAND_", "RCACHE", "no");
    if (status == UCS_OK) {
        status = uct_md_open(u->component, u->md_name, config, &u->md);
    }
    uct_config_release(config);
    return (status == UCS_OK) ? uct_md_query(u->md, &u->md_attr) : status;
}

int hc_uct_open(hc_uct_t *u, const char *md_name, double timeout)
{
    const char  *name = "memory domain";
    ucs_status_t status;

    memset(u, 0, sizeof(*u));
    u->timeout = timeout;
    snprintf(u->md_name, sizeof(u->md_name), "%s", md_name);
    snprintf(u->dev_name, sizeof(u->dev_name), "%s:1", md_name);

    hc_step("strand component");
    u->component = strand_uct_component();
    if (u->component == NULL) {
        hc_fail("strand component",
                "UCX has no component strand: the "
                "plugin is not loaded (run strand-hwcheck, which loads it "
                "as strand-run does), or it refused this UCX (the line it "
                "printed above says which UCX it was built for)");
        return -1;
    }
    hc_ok("strand component", "registered with UCX");

    hc_step("%s", name);
    if (!hc_md_listed(u->component, md_name)) {
        hc_fail(name,
                "strand lists no device %s with "
                "UCX_STRAND_DEVICE_TYPE=%s (strand-run ucx_info -d shows "
                "what it lists)",
                md_name, getenv("UCX_STRAND_DEVICE_TYPE"));
        return -1;
    }
    status = hc_md_open(u);
    if (status != UCS_OK) {
        hc_fail(name, "uct_md_open(%s): %s", md_name,
                ucs_status_string(status));
        return -1;
    }
    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &u->async);
    if (status == UCS_OK) {
        status = uct_worker_create(u->async, UCS_THREAD_MODE_SINGLE,
                                   &u->worker);
    }
    if (status != UCS_OK) {
        hc_fail(name, "a UCT worker: %s", ucs_status_string(status));
        return -1;
    }
    hc_ok(name, "%s, remote keys of %zu bytes", md_name,
          u->md_attr.rkey_packed_size);
    return 0;
}

static void hc_region_release(hc_uct_t *u, hc_region_t *r);

void hc_uct_close(hc_uct_t *u)
{
    hc_late_t *l;
    hc_kept_t *k;

    /* every interface is closed: nothing writes these any more */
    while ((l = u->late) != NULL) {
        u->late = l->next;
        hc_region_release(u, &l->region);
        free(l);
    }
    if (u->worker != NULL) {
        uct_worker_destroy(u->worker);
    }
    if (u->async != NULL) {
        ucs_async_context_destroy(u->async);
    }
    if (u->md != NULL) {
        uct_md_close(u->md);
    }
    while ((k = u->kept) != NULL) {
        u->kept = k->next;
        free(k);
    }
}

int hc_uct_has_tl(hc_uct_t *u, const char *tl)
{
    uct_tl_resource_desc_t *res;
    unsigned                i, num;
    int                     found = 0;

    if (uct_md_query_tl_resources(u->md, &res, &num) != UCS_OK) {
        return 0;
    }
    for (i = 0; i < num; ++i) {
        found |= !strcmp(res[i].tl_name, tl) &&
                 !strcmp(res[i].dev_name, u->dev_name);
    }
    uct_release_tl_resource_list(res);
    return found;
}

/* -------------------------------------------------------- callbacks */

static ucs_status_t hc_err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    hc_errors_t *e = arg;

    if (e->count < HC_MAX_ERRORS) {
        e->ep[e->count]     = ep;
        e->status[e->count] = status;
    }
    e->count++;
    return UCS_OK;
}

static ucs_status_t
hc_am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    hc_am_rx_t *am = arg;

    am->length = (length < sizeof(am->data)) ? length : sizeof(am->data);
    memcpy(am->data, data, am->length);
    am->count++;
    return UCS_OK;
}

static ucs_status_t hc_eager_unexp_cb(void *arg, void *data, size_t length,
                                      unsigned flags, uct_tag_t stag,
                                      uint64_t imm, void **context)
{
    hc_tag_rx_t *t = arg;

    t->tag    = stag;
    t->length = (length < sizeof(t->data)) ? length : sizeof(t->data);
    memcpy(t->data, data, t->length);
    t->eager++;
    return UCS_OK;
}

static ucs_status_t hc_rndv_unexp_cb(void *arg, unsigned flags, uint64_t stag,
                                     const void *header, unsigned header_length,
                                     uint64_t remote_addr, size_t length,
                                     const void *rkey_buf)
{
    hc_tag_rx_t *t = arg;

    t->tag = stag;
    t->rndv++;
    return UCS_OK;
}

/* ------------------------------------------------------------ pairs */

static ucs_status_t
hc_iface_open(hc_uct_t *u, hc_iface_t *i, const char *tl, int tags)
{
    uct_iface_config_t *config;
    uct_iface_params_t  params;
    ucs_status_t        status;

    status = uct_md_iface_config_read(u->md, tl, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl;
    params.mode.device.dev_name = u->dev_name;
    params.err_handler          = hc_err_cb;
    params.err_handler_arg      = &i->errors;
    if (tags) {
        /* offload where the device has it; the transport needs someone
         * to take unexpected messages */
        status = uct_config_modify(config, "TM_ENABLE", "try");
        params.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG |
                             UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                             UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG |
                             UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB;
        params.eager_arg = &i->tag;
        params.eager_cb  = hc_eager_unexp_cb;
        params.rndv_arg  = &i->tag;
        params.rndv_cb   = hc_rndv_unexp_cb;
    }
    if (status == UCS_OK) {
        status = uct_iface_open(u->md, u->worker, &params, config, &i->iface);
    }
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_query(i->iface, &i->attr);
    if (status != UCS_OK) {
        return status;
    }
    i->dev_addr   = calloc(1, i->attr.device_addr_len + 1);
    i->iface_addr = calloc(1, i->attr.iface_addr_len + 1);
    if ((i->dev_addr == NULL) || (i->iface_addr == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_iface_get_device_address(i->iface,
                                          (uct_device_addr_t *)i->dev_addr);
    if (status == UCS_OK) {
        status = uct_iface_get_address(i->iface,
                                       (uct_iface_addr_t *)i->iface_addr);
    }
    if (status == UCS_OK) {
        status = uct_iface_set_am_handler(i->iface, HC_AM_ID, hc_am_cb, &i->am,
                                          0);
    }
    uct_iface_progress_enable(i->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return status;
}

static void hc_iface_close(hc_iface_t *i)
{
    if (i->iface != NULL) {
        uct_iface_close(i->iface);
        i->iface = NULL;
    }
    free(i->dev_addr);
    free(i->iface_addr);
    i->dev_addr = i->iface_addr = NULL;
}

ucs_status_t hc_ep_create(hc_pair_t *p, uct_ep_h *ep_p)
{
    uct_ep_params_t params;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = p->a.iface;
    params.dev_addr   = (const uct_device_addr_t *)p->b.dev_addr;
    params.iface_addr = (const uct_iface_addr_t *)p->b.iface_addr;
    return uct_ep_create(&params, ep_p);
}

ucs_status_t hc_ep_error(const hc_pair_t *p, uct_ep_h ep)
{
    const hc_errors_t *e = &p->a.errors;
    unsigned           i;

    for (i = 0; (i < e->count) && (i < HC_MAX_ERRORS); ++i) {
        if (e->ep[i] == ep) {
            return e->status[i];
        }
    }
    return UCS_OK;
}

int hc_ep_failed(hc_pair_t *p, const char *name)
{
    ucs_status_t status = hc_ep_error(p, p->ep);

    if (status == UCS_OK) {
        return 0;
    }
    hc_fail(name, "not run: the endpoint failed before (%s)",
            ucs_status_string(status));
    return 1;
}

ucs_status_t hc_pair_open(hc_pair_t *p, hc_uct_t *u, const char *tl, int tags,
                          const char **what)
{
    ucs_status_t status;

    memset(p, 0, sizeof(*p));
    p->tl  = tl;
    p->u   = u;
    *what  = "the sending interface";
    status = hc_iface_open(u, &p->a, tl, tags);
    if (status == UCS_OK) {
        *what  = "the receiving interface";
        status = hc_iface_open(u, &p->b, tl, tags);
    }
    if (status == UCS_OK) {
        *what  = "the endpoint";
        status = hc_ep_create(p, &p->ep);
    }
    return status;
}

void hc_pair_close(hc_pair_t *p)
{
    if (p->ep != NULL) {
        uct_ep_destroy(p->ep);
        p->ep = NULL;
    }
    hc_iface_close(&p->a);
    hc_iface_close(&p->b);
}

/* ------------------------------------------------------------ waits */

int hc_wait(hc_uct_t *u, int (*cond)(void *arg), void *arg)
{
    double end = hc_now() + u->timeout;

    while (!cond(arg)) {
        if (hc_now() > end) {
            u->stuck = 1;
            return 0;
        }
        uct_worker_progress(u->worker);
    }
    return 1;
}

typedef struct hc_am_wait {
    hc_am_rx_t *am;
    unsigned    count;
} hc_am_wait_t;

static int hc_am_counted(void *arg)
{
    hc_am_wait_t *w = arg;

    return w->am->count >= w->count;
}

int hc_wait_am(hc_uct_t *u, hc_am_rx_t *am, unsigned count)
{
    hc_am_wait_t w = {am, count};

    return hc_wait(u, hc_am_counted, &w);
}

static void hc_comp_cb(uct_completion_t *self)
{
    hc_comp_t *c = ucs_container_of(self, hc_comp_t, uct);

    c->done   = 1;
    c->status = self->status;
}

hc_comp_t *hc_comp_new(hc_uct_t *u)
{
    hc_comp_t *c = hc_keep(u, sizeof(*c));

    c->uct.func   = hc_comp_cb;
    c->uct.count  = 1;
    c->uct.status = UCS_OK;
    return c;
}

static int hc_comp_done(void *arg)
{
    return ((hc_comp_t *)arg)->done;
}

ucs_status_t hc_comp_wait(hc_uct_t *u, ucs_status_t status, hc_comp_t *c)
{
    if (status != UCS_INPROGRESS) {
        return status;
    }
    return hc_wait(u, hc_comp_done, c) ? c->status : UCS_ERR_TIMED_OUT;
}

ucs_status_t hc_flush(hc_pair_t *p, uct_ep_h ep)
{
    hc_comp_t   *c = hc_comp_new(p->u);
    ucs_status_t status;

    HC_RETRY(p->u, status, uct_ep_flush(ep, 0, &c->uct));
    status = hc_comp_wait(p->u, status, c);
    return (status == UCS_OK) ? hc_ep_error(p, ep) : status;
}

const char *hc_why(const hc_uct_t *u, ucs_status_t status)
{
    static char buf[160];

    switch (status) {
    case UCS_ERR_NO_RESOURCE:
        snprintf(buf, sizeof(buf),
                 "still no resources to send after %.0f s "
                 "(a full queue, or an endpoint that never connected)",
                 u->timeout);
        return buf;
    case UCS_ERR_TIMED_OUT:
        snprintf(buf, sizeof(buf), "no completion in %.0f s", u->timeout);
        return buf;
    default:
        return ucs_status_string(status);
    }
}

/* ---------------------------------------------------------- regions */

void hc_pattern(uint8_t *buf, size_t length, unsigned seed)
{
    size_t i;

    /* not periodic in any power of two: a misplaced block shows */
    for (i = 0; i < length; ++i) {
        buf[i] = (uint8_t)(seed * 37 + i * 7 + (i >> 8) * 3 + (i >> 16));
    }
}

ucs_status_t
hc_region_alloc(hc_uct_t *u, hc_region_t *r, size_t length, unsigned seed)
{
    uint8_t     *packed;
    ucs_status_t status;

    memset(r, 0, sizeof(*r));
    if (posix_memalign((void **)&r->buf, 4096, length) != 0) {
        r->buf = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    r->length = length;
    hc_pattern(r->buf, length, seed);
    status = uct_md_mem_reg(u->md, r->buf, length, UCT_MD_MEM_ACCESS_ALL,
                            &r->memh);
    if (status != UCS_OK) {
        r->memh = NULL;
        return status;
    }
    packed = calloc(1, u->md_attr.rkey_packed_size + 1);
    if (packed == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_md_mkey_pack(u->md, r->memh, packed);
    if (status == UCS_OK) {
        status       = uct_rkey_unpack(u->component, packed, &r->rkey);
        r->have_rkey = (status == UCS_OK);
    }
    free(packed);
    return status;
}

static void hc_region_release(hc_uct_t *u, hc_region_t *r)
{
    if (r->have_rkey) {
        uct_rkey_release(u->component, &r->rkey);
        r->have_rkey = 0;
    }
    if (r->memh != NULL) {
        uct_md_mem_dereg(u->md, r->memh);
        r->memh = NULL;
    }
    free(r->buf);
    r->buf = NULL;
}

void hc_region_free(hc_uct_t *u, hc_region_t *r)
{
    hc_late_t *l;

    if (u->stuck && (r->buf != NULL) && ((l = malloc(sizeof(*l))) != NULL)) {
        l->region = *r;
        l->next   = u->late;
        u->late   = l;
        memset(r, 0, sizeof(*r));
        return;
    }
    hc_region_release(u, r);
}

int hc_compare(const uint8_t *got, const uint8_t *want, size_t length,
               char *why, size_t max)
{
    size_t i, first = 0, bad = 0;

    for (i = 0; i < length; ++i) {
        if (got[i] != want[i]) {
            first = bad ? first : i;
            bad++;
        }
    }
    if (bad == 0) {
        return 0;
    }
    snprintf(why, max,
             "%zu of %zu bytes wrong, the first at offset %zu: "
             "0x%02x, not 0x%02x",
             bad, length, first, got[first], want[first]);
    return -1;
}

/* -------------------------------------------------------------- VFS */

static void hc_vfs_nop(const char *name, void *arg)
{
}

void hc_vfs_read(hc_uct_t *u, uct_iface_h iface, const char *file, char *buf,
                 size_t max)
{
    ucs_string_buffer_t strb = UCS_STRING_BUFFER_INITIALIZER;
    char                path[256];

    buf[0] = '\0';
    /* listing the directory refreshes it: the transport adds its files */
    snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p", u->worker, iface);
    ucs_vfs_path_list_dir(path, hc_vfs_nop, NULL);
    snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p/%s", u->worker, iface,
             file);
    if (ucs_vfs_path_read_file(path, &strb) == UCS_OK) {
        snprintf(buf, max, "%s", ucs_string_buffer_cstr(&strb));
    }
    ucs_string_buffer_cleanup(&strb);
}
