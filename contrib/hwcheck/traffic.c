/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loopback traffic over a pair: active messages, PUT, GET and atomics in
 * every flavour the sending interface advertises (uct_iface_query), each
 * at the largest size it advertises (zero-copy: up to 1 MiB, over several
 * iovs where it takes them). Every byte is compared, and so are the bytes
 * around what was written: a check passes only when the destination holds
 * exactly what it should. What the interface does not advertise is "off",
 * never passed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_ZCOPY_MAX   (1024 * 1024)
#define HC_IOV_MAX     4
#define HC_IOV_GAP     64  /* between the pieces of an iov */
#define HC_OFFSET      100 /* where in the target: unaligned */
#define HC_TARGET_SIZE (HC_ZCOPY_MAX + 64 * 1024)

static void hc_name(char *buf, size_t max, const hc_pair_t *p, const char *what)
{
    snprintf(buf, max, "%s %s", p->tl, what);
}

/* ----------------------------------------------------------- helpers */

typedef struct hc_bcopy_arg {
    const uint8_t *data;
    size_t         length;
} hc_bcopy_arg_t;

static size_t hc_pack_cb(void *dest, void *arg)
{
    hc_bcopy_arg_t *a = arg;

    memcpy(dest, a->data, a->length);
    return a->length;
}

static void hc_unpack_cb(void *arg, const void *data, size_t length)
{
    hc_bcopy_arg_t *a = arg;

    memcpy((void *)a->data, data, length);
    a->length = length;
}

/* `length` bytes of region r as up to `max_iov` pieces, HC_IOV_GAP bytes
 * apart (a transport that gathers or scatters wrong shows); the number of
 * pieces. */
static size_t
hc_iov_make(uct_iov_t *iov, size_t max_iov, hc_region_t *r, size_t length)
{
    size_t n = (max_iov < HC_IOV_MAX) ? max_iov : HC_IOV_MAX;
    size_t piece, k, off = 0;

    n     = ((n == 0) || (length < n)) ? 1 : n;
    piece = length / n;
    for (k = 0; k < n; ++k) {
        iov[k].buffer = r->buf + off;
        iov[k].length = (k == n - 1) ? length - piece * k : piece;
        iov[k].memh   = r->memh;
        iov[k].stride = 0;
        iov[k].count  = 1;
        off += iov[k].length + HC_IOV_GAP;
    }
    return n;
}

/* The iov's bytes one after the other. */
static void hc_iov_gather(const uct_iov_t *iov, size_t n, uint8_t *out)
{
    size_t k;

    for (k = 0; k < n; ++k) {
        memcpy(out, iov[k].buffer, iov[k].length);
        out += iov[k].length;
    }
}

static size_t hc_min(size_t a, size_t b)
{
    return (a < b) ? a : b;
}

/* ---------------------------------------------------- active messages */

/* Wait for the message sent (status of the send) and compare it with
 * `want`; one report line. */
static void hc_am_expect(hc_pair_t *p, const char *name, ucs_status_t status,
                         hc_comp_t *comp, unsigned count0, const uint8_t *want,
                         size_t length, size_t iovs)
{
    char why[160];

    status = hc_comp_wait(p->u, status, comp);
    if (status != UCS_OK) {
        hc_fail(name, "the send: %s", hc_why(p->u, status));
    } else if (!hc_wait_am(p->u, &p->b.am, count0 + 1)) {
        hc_fail(name, "nothing arrived in %.0f s", p->u->timeout);
    } else if (p->b.am.length != length) {
        hc_fail(name, "%zu bytes arrived, %zu were sent", p->b.am.length,
                length);
    } else if (hc_compare(p->b.am.data, want, length, why, sizeof(why))) {
        hc_fail(name, "%s", why);
    } else if (iovs > 1) {
        hc_ok(name, "%zu bytes: a header and %zu iovs", length, iovs);
    } else {
        hc_ok(name, "%zu bytes", length);
    }
}

static void hc_am_short(hc_pair_t *p, uint8_t *want)
{
    const uct_iface_attr_t *a      = &p->a.attr;
    uint64_t                hdr    = 0x0123456789abcdefull;
    unsigned                count0 = p->b.am.count;
    size_t                  length;
    ucs_status_t            status;
    char                    name[64];

    hc_name(name, sizeof(name), p, "am short");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_AM_SHORT) ||
        (a->cap.am.max_short < sizeof(hdr))) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    /* the message is the 8-byte header, then the payload */
    length = a->cap.am.max_short;
    memcpy(want, &hdr, sizeof(hdr));
    hc_pattern(want + sizeof(hdr), length - sizeof(hdr), 1);
    HC_RETRY(p->u, status,
             uct_ep_am_short(p->ep, HC_AM_ID, hdr, want + sizeof(hdr),
                             length - sizeof(hdr)));
    hc_am_expect(p, name, status, NULL, count0, want, length, 1);
}

static void hc_am_bcopy(hc_pair_t *p, uint8_t *want)
{
    const uct_iface_attr_t *a      = &p->a.attr;
    unsigned                count0 = p->b.am.count;
    hc_bcopy_arg_t arg = {want, hc_min(a->cap.am.max_bcopy, HC_AM_MAX)};
    ssize_t        sent;
    char           name[64];

    hc_name(name, sizeof(name), p, "am bcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_AM_BCOPY)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    hc_pattern(want, arg.length, 2);
    HC_RETRY(p->u, sent, uct_ep_am_bcopy(p->ep, HC_AM_ID, hc_pack_cb, &arg, 0));
    if (sent != (ssize_t)arg.length) {
        hc_fail(name, "uct_ep_am_bcopy: %s",
                (sent < 0) ? hc_why(p->u, (ucs_status_t)sent) :
                             "a short count");
        return;
    }
    hc_am_expect(p, name, UCS_OK, NULL, count0, want, arg.length, 1);
}

static void hc_am_zcopy(hc_pair_t *p, uint8_t *want)
{
    const uct_iface_attr_t *a      = &p->a.attr;
    unsigned                count0 = p->b.am.count;
    uint8_t                 header[16];
    size_t                  hdr_len, length, n;
    uct_iov_t               iov[HC_IOV_MAX];
    hc_region_t             src;
    ucs_status_t            status;
    hc_comp_t              *comp;
    char                    name[64];

    hc_name(name, sizeof(name), p, "am zcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_AM_ZCOPY)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    hdr_len = hc_min(sizeof(header), a->cap.am.max_hdr);
    length  = hc_min(a->cap.am.max_zcopy, HC_AM_MAX) - hdr_len;
    status  = hc_region_alloc(p->u, &src, length + HC_IOV_MAX * HC_IOV_GAP, 3);
    if (status != UCS_OK) {
        hc_fail(name, "registering the source: %s", hc_why(p->u, status));
        hc_region_free(p->u, &src);
        return;
    }
    /* the message is the header, then the iov's pieces */
    hc_pattern(header, sizeof(header), 4);
    n = hc_iov_make(iov, a->cap.am.max_iov, &src, length);
    memcpy(want, header, hdr_len);
    hc_iov_gather(iov, n, want + hdr_len);
    comp = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             uct_ep_am_zcopy(p->ep, HC_AM_ID, header, hdr_len, iov, n, 0,
                             &comp->uct));
    hc_am_expect(p, name, status, comp, count0, want, hdr_len + length, n);
    hc_region_free(p->u, &src);
}

void hc_check_am(hc_pair_t *p)
{
    uint8_t *want = malloc(HC_AM_MAX);

    if (want == NULL) {
        hc_fail("am", "out of memory");
        return;
    }
    hc_am_short(p, want);
    hc_am_bcopy(p, want);
    hc_am_zcopy(p, want);
    free(want);
}

/* --------------------------------------------------------------- PUT */

/* A fresh target (its own pattern) and, in `want`, what it must hold
 * after `length` bytes of `data` were written at HC_OFFSET. */
static void hc_put_expect(hc_region_t *t, uint8_t *want, const uint8_t *data,
                          size_t length, unsigned seed)
{
    hc_pattern(t->buf, t->length, seed);
    memcpy(want, t->buf, t->length);
    memcpy(want + HC_OFFSET, data, length);
}

/* After the PUT (its status): flushed, then the whole target compared. */
static void hc_put_verify(hc_pair_t *p, const char *name, ucs_status_t status,
                          hc_comp_t *comp, hc_region_t *t, const uint8_t *want,
                          size_t length, size_t iovs)
{
    char why[160];

    status = hc_comp_wait(p->u, status, comp);
    if (status == UCS_OK) {
        status = hc_flush(p, p->ep);
    }
    if (status != UCS_OK) {
        hc_fail(name, "%s", hc_why(p->u, status));
    } else if (hc_compare(t->buf, want, t->length, why, sizeof(why))) {
        hc_fail(name, "%s", why);
    } else if (iovs > 1) {
        hc_ok(name, "%zu bytes from %zu iovs", length, iovs);
    } else {
        hc_ok(name, "%zu bytes", length);
    }
}

void hc_check_put(hc_pair_t *p)
{
    const uct_iface_attr_t *a = &p->a.attr;
    uint64_t                raddr;
    uct_rkey_t              rkey;
    hc_region_t             t, s;
    uint8_t                *want, *data;
    uct_iov_t               iov[HC_IOV_MAX];
    hc_bcopy_arg_t          arg;
    ucs_status_t            status;
    hc_comp_t              *comp;
    size_t                  length, n;
    ssize_t                 sent;
    char                    name[64];

    hc_step("%s put", p->tl);
    memset(&t, 0, sizeof(t));
    memset(&s, 0, sizeof(s));
    want   = malloc(HC_TARGET_SIZE);
    data   = malloc(HC_TARGET_SIZE);
    status = hc_region_alloc(p->u, &t, HC_TARGET_SIZE, 10);
    if (status == UCS_OK) {
        status = hc_region_alloc(p->u, &s, HC_TARGET_SIZE, 11);
    }
    if ((status != UCS_OK) || (want == NULL) || (data == NULL)) {
        hc_name(name, sizeof(name), p, "put");
        hc_fail(name, "registering its buffers: %s", hc_why(p->u, status));
        goto out;
    }
    raddr = (uintptr_t)t.buf + HC_OFFSET;
    rkey  = t.rkey.rkey;

    hc_name(name, sizeof(name), p, "put short");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_PUT_SHORT)) {
        hc_off(name, "not advertised");
    } else if (!hc_ep_failed(p, name)) {
        length = a->cap.put.max_short;
        hc_pattern(data, length, 12);
        hc_put_expect(&t, want, data, length, 13);
        HC_RETRY(p->u, status,
                 uct_ep_put_short(p->ep, data, length, raddr, rkey));
        hc_put_verify(p, name, status, NULL, &t, want, length, 1);
    }

    hc_name(name, sizeof(name), p, "put bcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_PUT_BCOPY)) {
        hc_off(name, "not advertised");
    } else if (!hc_ep_failed(p, name)) {
        arg.data   = data;
        arg.length = hc_min(a->cap.put.max_bcopy, HC_ZCOPY_MAX);
        hc_pattern(data, arg.length, 14);
        hc_put_expect(&t, want, data, arg.length, 15);
        HC_RETRY(p->u, sent,
                 uct_ep_put_bcopy(p->ep, hc_pack_cb, &arg, raddr, rkey));
        hc_put_verify(p, name,
                      (sent == (ssize_t)arg.length) ? UCS_OK :
                      (sent < 0)                    ? (ucs_status_t)sent :
                                                      UCS_ERR_IO_ERROR,
                      NULL, &t, want, arg.length, 1);
    }

    hc_name(name, sizeof(name), p, "put zcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY)) {
        hc_off(name, "not advertised");
    } else if (!hc_ep_failed(p, name)) {
        length = hc_min(a->cap.put.max_zcopy,
                        HC_ZCOPY_MAX - HC_IOV_MAX * HC_IOV_GAP);
        n      = hc_iov_make(iov, a->cap.put.max_iov, &s, length);
        hc_iov_gather(iov, n, data);
        hc_put_expect(&t, want, data, length, 16);
        comp = hc_comp_new(p->u);
        HC_RETRY(p->u, status,
                 uct_ep_put_zcopy(p->ep, iov, n, raddr, rkey, &comp->uct));
        hc_put_verify(p, name, status, comp, &t, want, length, n);
    }

out:
    hc_region_free(p->u, &s);
    hc_region_free(p->u, &t);
    free(data);
    free(want);
}

/* --------------------------------------------------------------- GET */

static void hc_get_bcopy(hc_pair_t *p, hc_region_t *t)
{
    const uct_iface_attr_t *a      = &p->a.attr;
    size_t                  length = hc_min(a->cap.get.max_bcopy, HC_ZCOPY_MAX);
    hc_bcopy_arg_t         *arg;
    ucs_status_t            status;
    hc_comp_t              *comp;
    char                    name[64], why[160];

    hc_name(name, sizeof(name), p, "get bcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_GET_BCOPY)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    /* the data lands when the GET completes, which may be after a
     * timeout: in memory that stays */
    arg       = hc_keep(p->u, sizeof(*arg) + length);
    arg->data = (uint8_t *)(arg + 1);
    comp      = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             uct_ep_get_bcopy(p->ep, hc_unpack_cb, arg, length,
                              (uintptr_t)t->buf + HC_OFFSET, t->rkey.rkey,
                              &comp->uct));
    status = hc_comp_wait(p->u, status, comp);
    if (status != UCS_OK) {
        hc_fail(name, "%s", hc_why(p->u, status));
    } else if (arg->length != length) {
        hc_fail(name, "%zu bytes came back, %zu were read", arg->length,
                length);
    } else if (hc_compare(arg->data, t->buf + HC_OFFSET, length, why,
                          sizeof(why))) {
        hc_fail(name, "%s", why);
    } else {
        hc_ok(name, "%zu bytes", length);
    }
}

static void
hc_get_zcopy(hc_pair_t *p, hc_region_t *t, hc_region_t *l, uint8_t *want)
{
    const uct_iface_attr_t *a = &p->a.attr;
    uct_iov_t               iov[HC_IOV_MAX];
    size_t                  length, n, k, off;
    ucs_status_t            status;
    hc_comp_t              *comp;
    char                    name[64], why[160];

    hc_name(name, sizeof(name), p, "get zcopy");
    hc_step("%s", name);
    if (!(a->cap.flags & UCT_IFACE_FLAG_GET_ZCOPY)) {
        hc_off(name, "not advertised");
        return;
    }
    if (hc_ep_failed(p, name)) {
        return;
    }
    length = hc_min(a->cap.get.max_zcopy,
                    HC_ZCOPY_MAX - HC_IOV_MAX * HC_IOV_GAP);
    if (length < a->cap.get.min_zcopy) {
        hc_off(name, "its smallest zero-copy GET is %zu bytes",
               a->cap.get.min_zcopy);
        return;
    }
    /* the local buffer keeps its own pattern where no piece lands */
    n = hc_iov_make(iov, a->cap.get.max_iov, l, length);
    memcpy(want, l->buf, l->length);
    for (k = 0, off = HC_OFFSET; k < n; off += iov[k].length, ++k) {
        memcpy(want + ((uint8_t *)iov[k].buffer - l->buf), t->buf + off,
               iov[k].length);
    }
    comp = hc_comp_new(p->u);
    HC_RETRY(p->u, status,
             uct_ep_get_zcopy(p->ep, iov, n, (uintptr_t)t->buf + HC_OFFSET,
                              t->rkey.rkey, &comp->uct));
    status = hc_comp_wait(p->u, status, comp);
    if (status != UCS_OK) {
        hc_fail(name, "%s", hc_why(p->u, status));
    } else if (hc_compare(l->buf, want, l->length, why, sizeof(why))) {
        hc_fail(name, "%s", why);
    } else {
        hc_ok(name, "%zu bytes into %zu iovs", length, n);
    }
}

void hc_check_get(hc_pair_t *p)
{
    hc_region_t  t, l;
    uint8_t     *buf = malloc(HC_TARGET_SIZE);
    ucs_status_t status;
    char         name[64];

    hc_step("%s get", p->tl);
    memset(&l, 0, sizeof(l));
    status = hc_region_alloc(p->u, &t, HC_TARGET_SIZE, 20);
    if (status == UCS_OK) {
        status = hc_region_alloc(p->u, &l, HC_TARGET_SIZE, 21);
    }
    if ((status != UCS_OK) || (buf == NULL)) {
        hc_name(name, sizeof(name), p, "get");
        hc_fail(name, "registering its buffers: %s", hc_why(p->u, status));
    } else {
        hc_get_bcopy(p, &t);
        hc_get_zcopy(p, &t, &l, buf);
    }
    hc_region_free(p->u, &l);
    hc_region_free(p->u, &t);
    free(buf);
}

/* ----------------------------------------------------------- atomics */

static const struct {
    uct_atomic_op_t op;
    const char     *name;
} hc_atomic_ops[] = {
        {UCT_ATOMIC_OP_ADD, "add"},   {UCT_ATOMIC_OP_AND, "and"},
        {UCT_ATOMIC_OP_OR, "or"},     {UCT_ATOMIC_OP_XOR, "xor"},
        {UCT_ATOMIC_OP_SWAP, "swap"}, {UCT_ATOMIC_OP_CSWAP, "cswap"},
};
#define HC_NUM_ATOMIC_OPS (sizeof(hc_atomic_ops) / sizeof(hc_atomic_ops[0]))

/* The operand and the value the target starts with: high and low halves
 * both busy, so a lost half or a wrong byte order shows. */
#define HC_ATOMIC_INIT64 0x8877665544332211ull
#define HC_ATOMIC_ARG64  0x0f0f0f0ff0f0f0f1ull
#define HC_ATOMIC_INIT32 0x87654321u
#define HC_ATOMIC_ARG32  0x0ff0f00fu
/* where in the target: a 32-bit value in the upper half of a 64-bit word */
#define HC_ATOMIC_OFF64 24
#define HC_ATOMIC_OFF32 36

static uint64_t
hc_atomic_result(uct_atomic_op_t op, uint64_t old, uint64_t arg, uint64_t mask)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:
        return (old + arg) & mask;
    case UCT_ATOMIC_OP_AND:
        return old & arg;
    case UCT_ATOMIC_OP_OR:
        return old | arg;
    case UCT_ATOMIC_OP_XOR:
        return old ^ arg;
    default:
        return arg; /* swap; cswap that matched */
    }
}

/* One atomic operation: 0, or -1 with `why`. */
static int hc_atomic_one(hc_pair_t *p, hc_region_t *t, int bits, int fetch,
                         size_t index, char *why, size_t max)
{
    const uct_atomic_op_t op      = hc_atomic_ops[index].op;
    const char           *op_name = hc_atomic_ops[index].name;
    const uint64_t   init  = (bits == 64) ? HC_ATOMIC_INIT64 : HC_ATOMIC_INIT32;
    const uint64_t   arg   = (bits == 64) ? HC_ATOMIC_ARG64 : HC_ATOMIC_ARG32;
    const uint64_t   mask  = (bits == 64) ? UINT64_MAX : UINT32_MAX;
    const size_t     off   = (bits == 64) ? HC_ATOMIC_OFF64 : HC_ATOMIC_OFF32;
    const uint64_t   raddr = (uintptr_t)t->buf + off;
    const uct_rkey_t rk    = t->rkey.rkey;
    uint8_t          want[64];
    uint64_t         expect;
    uint32_t         v32;
    ucs_status_t     status;
    hc_comp_t       *comp;

    hc_pattern(t->buf, sizeof(want), 30 + op);
    v32 = (uint32_t)init;
    memcpy(t->buf + off, (bits == 64) ? (void *)&init : (void *)&v32, bits / 8);
    memcpy(want, t->buf, sizeof(want));
    expect = hc_atomic_result(op, init, arg, mask);
    v32    = (uint32_t)expect;
    memcpy(want + off, (bits == 64) ? (void *)&expect : (void *)&v32, bits / 8);

    comp = hc_comp_new(p->u);
    if (!fetch && (bits == 64)) {
        HC_RETRY(p->u, status, uct_ep_atomic64_post(p->ep, op, arg, raddr, rk));
    } else if (!fetch) {
        HC_RETRY(p->u, status,
                 uct_ep_atomic32_post(p->ep, op, (uint32_t)arg, raddr, rk));
    } else if ((op == UCT_ATOMIC_OP_CSWAP) && (bits == 64)) {
        HC_RETRY(p->u, status,
                 uct_ep_atomic_cswap64(p->ep, init, arg, raddr, rk,
                                       &comp->result64, &comp->uct));
    } else if (op == UCT_ATOMIC_OP_CSWAP) {
        HC_RETRY(p->u, status,
                 uct_ep_atomic_cswap32(p->ep, (uint32_t)init, (uint32_t)arg,
                                       raddr, rk, &comp->result32, &comp->uct));
    } else if (bits == 64) {
        HC_RETRY(p->u, status,
                 uct_ep_atomic64_fetch(p->ep, op, arg, &comp->result64, raddr,
                                       rk, &comp->uct));
    } else {
        HC_RETRY(p->u, status,
                 uct_ep_atomic32_fetch(p->ep, op, (uint32_t)arg,
                                       &comp->result32, raddr, rk, &comp->uct));
    }
    status = hc_comp_wait(p->u, status, comp);
    if (status == UCS_OK) {
        status = hc_flush(p, p->ep);
    }
    if (status != UCS_OK) {
        snprintf(why, max, "%s: %s", op_name, hc_why(p->u, status));
        return -1;
    }
    if (fetch && (((bits == 64) ? comp->result64 : comp->result32) != init)) {
        snprintf(why, max, "%s fetched 0x%" PRIx64 ", not 0x%" PRIx64, op_name,
                 (bits == 64) ? comp->result64 : (uint64_t)comp->result32,
                 init);
        return -1;
    }
    if (memcmp(t->buf, want, sizeof(want))) {
        char diff[160];

        hc_compare(t->buf, want, sizeof(want), diff, sizeof(diff));
        snprintf(why, max, "%s left the target wrong: %s", op_name, diff);
        return -1;
    }
    return 0;
}

/* Why an interface advertises fewer atomics than strand can do. */
static const char *hc_atomics_why(const hc_pair_t *p, const hc_machine_t *m)
{
    if (!(p->a.attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE)) {
        return "the device reports no atomics";
    }
    if (!m->sim && !m->devx) {
        return "strand offers them with the NIC's masked atomics, read "
               "through DEVX, which is off above";
    }
    return "strand offers them only where the device has masked atomics";
}

/* One width, posted or fetching: a line for the ops that were run, and
 * one for those the interface does not advertise. */
static void hc_atomics(hc_pair_t *p, const hc_machine_t *m, hc_region_t *t,
                       int bits, int fetch)
{
    const uct_iface_attr_t *a = &p->a.attr;
    uint64_t flags = (bits == 64) ? (fetch ? a->cap.atomic64.fop_flags :
                                             a->cap.atomic64.op_flags) :
                                    (fetch ? a->cap.atomic32.fop_flags :
                                             a->cap.atomic32.op_flags);
    char     name[64], done[64] = "", missing[64] = "", why[200];
    size_t   i, nops = fetch ? HC_NUM_ATOMIC_OPS : 4; /* no posted swaps */
    int      failed = 0;

    snprintf(name, sizeof(name), "%s atomic%d %s", p->tl, bits,
             fetch ? "fetch" : "post");
    hc_step("%s", name);
    if (flags && hc_ep_failed(p, name)) {
        return;
    }
    for (i = 0; i < nops; ++i) {
        if (!(flags & UCS_BIT(hc_atomic_ops[i].op))) {
            strcat(missing, missing[0] ? " " : "");
            strcat(missing, hc_atomic_ops[i].name);
            continue;
        }
        if (!failed && hc_atomic_one(p, t, bits, fetch, i, why, sizeof(why))) {
            hc_fail(name, "%s", why);
            failed = 1;
        }
        strcat(done, done[0] ? " " : "");
        strcat(done, hc_atomic_ops[i].name);
    }
    if (!failed && done[0]) {
        hc_ok(name, "%s", done);
    }
    if (missing[0]) {
        hc_off(name, "%s: not advertised; %s", missing, hc_atomics_why(p, m));
    }
}

void hc_check_atomics(hc_pair_t *p, const hc_machine_t *m)
{
    hc_region_t  t;
    ucs_status_t status;
    char         name[64];
    int          bits;

    status = hc_region_alloc(p->u, &t, 4096, 40);
    if (status != UCS_OK) {
        hc_name(name, sizeof(name), p, "atomics");
        hc_fail(name, "registering the target: %s", hc_why(p->u, status));
    } else {
        for (bits = 32; bits <= 64; bits += 32) {
            hc_atomics(p, m, &t, bits, 0);
            hc_atomics(p, m, &t, bits, 1);
        }
    }
    hc_region_free(p->u, &t);
}
