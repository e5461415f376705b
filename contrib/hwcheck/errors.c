/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An error on purpose: a PUT with the key of a registration that is gone,
 * on an endpoint of its own, while a second endpoint on the same interface
 * has a PUT in flight. Expected: the bad PUT completes with an error and
 * the interface's error handler names its endpoint; nothing is written;
 * on dc_strand the endpoint's DCI stream is reset (default policy: the
 * error fails only the endpoints on that stream); and the second endpoint
 * keeps working, its PUT in flight included.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_ERR_SIZE (64 * 1024)
#define HC_VFS_MAX  8192

typedef struct hc_err_wait {
    hc_errors_t *errors;
    unsigned     count; /* handler calls before */
    hc_comp_t   *comp;
} hc_err_wait_t;

static int hc_err_seen(void *arg)
{
    hc_err_wait_t *w = arg;

    return w->comp->done && (w->errors->count > w->count);
}

/* A key that was good once: the region's, after its registration is
 * gone (the MD runs without a registration cache, uct.c). */
static ucs_status_t hc_dead_key(hc_uct_t *u, hc_region_t *r, uct_rkey_t *key)
{
    ucs_status_t status = hc_region_alloc(u, r, HC_ERR_SIZE, 90);

    if (status != UCS_OK) {
        return status;
    }
    *key    = r->rkey.rkey;
    status  = uct_md_mem_dereg(u->md, r->memh);
    r->memh = NULL;
    return status;
}

/* The bad PUT and its verdict: 0 when the error came as it should. */
static int hc_bad_put(hc_pair_t *p, uct_ep_h ep_bad, hc_region_t *src,
                      hc_region_t *dead, uct_rkey_t key, const char *name)
{
    uct_iov_t     iov    = {src->buf, HC_ERR_SIZE, src->memh, 0, 1};
    uint8_t      *before = malloc(HC_ERR_SIZE);
    hc_comp_t    *comp   = hc_comp_new(p->u);
    hc_err_wait_t w      = {&p->a.errors, p->a.errors.count, comp};
    ucs_status_t  status;
    char          why[160];
    int           ret = -1;

    if (before == NULL) {
        hc_fail(name, "out of memory");
        return -1;
    }
    memcpy(before, dead->buf, HC_ERR_SIZE);
    HC_RETRY(p->u, status,
             uct_ep_put_zcopy(ep_bad, &iov, 1, (uintptr_t)dead->buf, key,
                              &comp->uct));
    if (status == UCS_OK) {
        hc_fail(name, "the PUT with a dead key completed at once as success");
    } else if (status != UCS_INPROGRESS) {
        hc_fail(name,
                "the PUT was refused when posted (%s), not failed by "
                "the device",
                hc_why(p->u, status));
    } else if (!hc_wait(p->u, hc_err_seen, &w)) {
        hc_fail(name, "in %.0f s: %s, %s", p->u->timeout,
                comp->done ? "the PUT completed" : "no completion",
                (p->a.errors.count > w.count) ? "the error handler was called" :
                                                "no error handler call");
    } else if (comp->status == UCS_OK) {
        hc_fail(name, "the PUT with a dead key completed as success");
    } else if (hc_ep_error(p, ep_bad) == UCS_OK) {
        hc_fail(name, "the error handler named another endpoint");
    } else if (hc_compare(dead->buf, before, HC_ERR_SIZE, why, sizeof(why))) {
        hc_fail(name, "the memory behind the dead key was written: %s", why);
    } else {
        hc_ok(name,
              "a PUT with a deregistered key: completion '%s', error "
              "handler '%s', nothing written",
              ucs_status_string(comp->status),
              ucs_status_string(hc_ep_error(p, ep_bad)));
        ret = 0;
    }
    free(before);
    return ret;
}

/* ------------------------------------------------------ stream reset */

typedef struct hc_resets {
    hc_pair_t *p;
    char       text[HC_VFS_MAX];
    char       policy[32];
    int        no_devx; /* auto left the device's streams out */
    unsigned   streams; /* stream resets */
    unsigned   dcis;    /* DCI resets */
    unsigned   before;  /* streams + dcis before the error */
} hc_resets_t;

/* The resets dc_strand's dci_pool file counts (common/txq_pool.c): "dci N ...
 * resets R ..." lines, and "  stream S ... resets R" lines under them;
 * whether there are more than before the error. */
static int hc_resets_read(void *arg)
{
    hc_resets_t *r = arg;
    char         copy[HC_VFS_MAX], *line, *save = NULL;
    const char  *at;
    unsigned     n;

    hc_vfs_read(r->p->u, r->p->a.iface, "dci_pool", r->text, sizeof(r->text));
    r->streams = r->dcis = 0;
    if (sscanf(r->text, "policy %31s", r->policy) != 1) {
        snprintf(r->policy, sizeof(r->policy), "unknown");
    }
    r->no_devx = (strstr(r->text, "\nauto no_devx\n") != NULL);
    memcpy(copy, r->text, sizeof(copy));
    for (line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        at = strstr(line, " resets ");
        if ((at == NULL) || (sscanf(at, " resets %u", &n) != 1)) {
            continue;
        }
        if (!strncmp(line, "  stream ", 9)) {
            r->streams += n;
        } else if (!strncmp(line, "dci ", 4)) {
            r->dcis += n;
        }
    }
    return (r->streams + r->dcis) > r->before;
}

/* After the bad PUT's error (`error_came`): what was reset. */
static void hc_stream_reset(hc_pair_t *p, hc_resets_t *r, int error_came)
{
    unsigned streams = r->streams;
    char     name[64];

    snprintf(name, sizeof(name), "%s stream reset", p->tl);
    hc_step("%s", name);
    r->before = r->streams + r->dcis;
    if (!error_came) {
        hc_fail(name, "not judged: the bad PUT did not fail its endpoint");
    } else if (!hc_wait(p->u, hc_resets_read, r)) {
        hc_fail(name,
                "nothing was reset in %.0f s after the error "
                "(dci_pool %s)",
                p->u->timeout,
                r->text[0] ? "counts no new reset" : "cannot be read");
    } else if (strcmp(r->policy, "streams") && r->no_devx) {
        hc_off(name,
               "off (no DEVX): the device has DCI streams, but a "
               "failed stream is reset with a DEVX command; policy %s, the "
               "whole DCI was reset (such an error fails every endpoint on "
               "it)",
               r->policy);
    } else if (strcmp(r->policy, "streams")) {
        hc_off(name,
               "policy %s, no DCI streams: the whole DCI was reset "
               "(such an error fails every endpoint on it)",
               r->policy);
    } else if (r->streams > streams) {
        hc_ok(name, "policy streams: the failed endpoint's DCI stream was "
                    "reset, its DCI stayed in use");
    } else {
        hc_fail(name, "policy streams, but the whole DCI was reset, not "
                      "only the failed endpoint's stream");
    }
}

/* ----------------------------------------------------- other endpoint */

/* After the error: the PUT that was in flight landed, then a PUT, an AM
 * and a GET on the same endpoint. 0, or -1 with `why`. */
static int hc_other_works(hc_pair_t *p, uct_ep_h ep, hc_region_t *t,
                          const uint8_t *want, char *why, size_t max)
{
    uint64_t     hdr = 0x5eed5eed5eed5eedull;
    uint8_t      got[256];
    unsigned     am_count = p->b.am.count;
    ucs_status_t status;
    hc_comp_t   *comp;

    if (hc_compare(t->buf, want, HC_ERR_SIZE, why, max)) {
        return -1;
    }
    HC_RETRY(p->u, status,
             uct_ep_put_short(ep, want + 512, 64, (uintptr_t)t->buf + 64,
                              t->rkey.rkey));
    if ((status != UCS_OK) || ((status = hc_flush(p, ep)) != UCS_OK)) {
        snprintf(why, max, "a PUT after the error: %s", hc_why(p->u, status));
        return -1;
    }
    if (memcmp(t->buf + 64, want + 512, 64)) {
        snprintf(why, max, "a PUT after the error landed wrong");
        return -1;
    }
    HC_RETRY(p->u, status, uct_ep_am_short(ep, HC_AM_ID, hdr, NULL, 0));
    if ((status != UCS_OK) || !hc_wait_am(p->u, &p->b.am, am_count + 1) ||
        (p->b.am.length != sizeof(hdr)) ||
        memcmp(p->b.am.data, &hdr, sizeof(hdr))) {
        snprintf(why, max, "an AM after the error: %s",
                 (status != UCS_OK) ? hc_why(p->u, status) :
                                      "did not arrive whole");
        return -1;
    }
    comp = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             uct_ep_get_zcopy(ep,
                              &(uct_iov_t){t->buf + 4096, 256, t->memh, 0, 1},
                              1, (uintptr_t)t->buf + 8192, t->rkey.rkey,
                              &comp->uct));
    status = hc_comp_wait(p->u, status, comp);
    memcpy(got, t->buf + 4096, sizeof(got));
    if ((status != UCS_OK) || memcmp(got, t->buf + 8192, sizeof(got))) {
        snprintf(why, max, "a GET after the error: %s",
                 (status != UCS_OK) ? hc_why(p->u, status) : "wrong bytes");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ entry */

void hc_check_errors(hc_pair_t *p)
{
    uct_ep_h     ep_bad = NULL, ep_other = NULL;
    hc_region_t  src, dead, t;
    uint8_t     *want = malloc(HC_ERR_SIZE);
    char         bad[64], other[64], why[200];
    uct_iov_t    iov;
    uct_rkey_t   key = 0;
    ucs_status_t status;
    hc_resets_t *resets = hc_keep(p->u, sizeof(*resets));
    hc_comp_t   *comp;
    unsigned     errors0;
    int          ok, is_dc;

    snprintf(bad, sizeof(bad), "%s bad rkey", p->tl);
    snprintf(other, sizeof(other), "%s other endpoint", p->tl);
    hc_step("%s", bad);
    memset(&dead, 0, sizeof(dead));
    memset(&t, 0, sizeof(t));
    status = hc_region_alloc(p->u, &src, HC_ERR_SIZE, 91);
    if (status == UCS_OK) {
        status = hc_region_alloc(p->u, &t, HC_ERR_SIZE, 92);
    }
    if (status == UCS_OK) {
        status = hc_dead_key(p->u, &dead, &key);
    }
    if (status == UCS_OK) {
        status = hc_ep_create(p, &ep_bad);
    }
    if (status == UCS_OK) {
        status = hc_ep_create(p, &ep_other);
    }
    if ((status != UCS_OK) || (want == NULL)) {
        hc_fail(bad, "setting up: %s", hc_why(p->u, status));
        goto out;
    }

    /* the other endpoint's PUT in flight while the error happens */
    memcpy(want, t.buf, HC_ERR_SIZE);
    memcpy(want, src.buf, HC_ERR_SIZE / 2);
    iov  = (uct_iov_t){src.buf, HC_ERR_SIZE / 2, src.memh, 0, 1};
    comp = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             uct_ep_put_zcopy(ep_other, &iov, 1, (uintptr_t)t.buf, t.rkey.rkey,
                              &comp->uct));
    errors0   = p->a.errors.count;
    resets->p = p;
    is_dc     = !strcmp(p->tl, "dc_strand");
    if (is_dc) {
        hc_resets_read(resets); /* what was reset before */
    }
    ok = !hc_bad_put(p, ep_bad, &src, &dead, key, bad);
    if (is_dc) {
        hc_stream_reset(p, resets, ok);
    }

    hc_step("%s", other);
    status = hc_comp_wait(p->u, status, comp);
    if (status != UCS_OK) {
        hc_fail(other, "its PUT in flight during the error: %s",
                hc_why(p->u, status));
    } else if (hc_other_works(p, ep_other, &t, want, why, sizeof(why))) {
        hc_fail(other, "%s", why);
    } else if (p->a.errors.count != errors0 + 1) {
        hc_fail(other, "the error handler was called %u times, not once",
                p->a.errors.count - errors0);
    } else {
        hc_ok(other, "on the same interface: its PUT in flight landed; "
                     "PUT, AM and GET after the error, every byte checked");
    }
out:
    if (ep_bad != NULL) {
        uct_ep_destroy(ep_bad);
    }
    if (ep_other != NULL) {
        uct_ep_destroy(ep_other);
    }
    hc_region_free(p->u, &t);
    hc_region_free(p->u, &dead);
    hc_region_free(p->u, &src);
    free(want);
}
