/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strand-hwcheck: checks a machine's mlx5 NIC (or, with --sim, the software
 * device) for strand and prints one report. What its files share:
 *
 *   report.c    the report: header, a line per check, summary, what to
 *               send; the watchdog that turns a hang into a FAIL line
 *   machine.c   the NIC without the plugin: sysfs, verbs, port, DEVX, caps
 *   uct.c       UCT through the strand plugin: component, MD, interface
 *               pairs, registered regions, waits that time out
 *   traffic.c   AM, PUT, GET and atomics over a pair, every byte compared
 *   tags.c      tag-matching offload: eager and rendezvous
 *   errors.c    a PUT with a bad key, the stream reset, the endpoint that
 *               keeps working
 *   main.c      options and the order of the checks
 */
#ifndef STRAND_HWCHECK_H_
#define STRAND_HWCHECK_H_

#include <uct/api/uct.h>
#include <ucs/async/async.h>

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ report */

typedef struct hc_header {
    const char *device; /* "mlx5_0:1", "smlx5_0:1" */
    int         sim;
} hc_header_t;

void hc_report_header(const hc_header_t *h);
void hc_section(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One line: the check's name, then "ok", "ok (detail)", "off (why)" or
 * "FAIL (what)". A NULL fmt: no parenthesis. */
void hc_ok(const char *name, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void hc_off(const char *name, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void hc_fail(const char *name, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* The summary and what to send; the exit status (0: nothing failed). */
int hc_report_finish(int sim);

/* The step now running: what the watchdog names when a step takes more
 * than `secs` seconds (a call into UCX that never returns). */
void hc_watchdog_init(double secs);
void hc_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ----------------------------------------------------------- machine */

/* What the NIC checks learned that later lines explain themselves by. */
typedef struct hc_machine {
    int      sim;             /* the software device: nothing queried */
    char     device[64];      /* the mlx5 device checked */
    int      link_layer;      /* IBV_LINK_LAYER_* */
    int      devx;            /* a DEVX context opened */
    int      dci_streams;     /* mlx5dv: DCI streams */
    uint32_t tm_max_num_tags; /* verbs tm_caps */
} hc_machine_t;

/* The mlx5 device to check (`want`, or the first with an active port 1,
 * or the first): 0, or -1 with one line in `why` saying there is none. */
int hc_machine_pick(const char *want, hc_machine_t *m, char *why, size_t max);
/* The machine's lines: driver, verbs, port, DEVX, capabilities, memlock. */
void hc_machine_check(hc_machine_t *m);

/* --------------------------------------------------------------- UCT */

#define HC_AM_ID  7
#define HC_AM_MAX (64 * 1024) /* the largest AM the checks send */

/* An interface's error handler calls, as they came. */
#define HC_MAX_ERRORS 8
typedef struct hc_errors {
    unsigned     count;
    uct_ep_h     ep[HC_MAX_ERRORS];
    ucs_status_t status[HC_MAX_ERRORS];
} hc_errors_t;

/* The last active message an interface received. */
typedef struct hc_am_rx {
    unsigned count;
    size_t   length;
    uint8_t  data[HC_AM_MAX];
} hc_am_rx_t;

/* The last unexpected tagged message (eager) or rendezvous request. */
typedef struct hc_tag_rx {
    unsigned  eager, rndv;
    uct_tag_t tag;
    size_t    length;
    uint8_t   data[HC_AM_MAX];
} hc_tag_rx_t;

typedef struct hc_iface {
    uct_iface_h      iface;
    uct_iface_attr_t attr;
    uint8_t         *dev_addr;
    uint8_t         *iface_addr;
    hc_errors_t      errors;
    hc_am_rx_t       am;
    hc_tag_rx_t      tag;
} hc_iface_t;

typedef struct hc_kept hc_kept_t;
typedef struct hc_late hc_late_t;

typedef struct hc_uct {
    uct_component_h      component;
    uct_md_h             md;
    uct_md_attr_t        md_attr;
    ucs_async_context_t *async;
    uct_worker_h         worker;
    char                 md_name[UCT_MD_NAME_MAX];
    char                 dev_name[UCT_DEVICE_NAME_MAX]; /* md:1 */
    double               timeout; /* every wait, seconds */
    /* A wait timed out: an operation may still be outstanding, and
     * complete (write its completion, its data) any time until its
     * interface closes. What it may touch lives until hc_uct_close. */
    int        stuck;
    hc_kept_t *kept; /* hc_keep's memory */
    hc_late_t *late; /* regions freed once closed */
} hc_uct_t;

/* Two interfaces of one transport on one worker, a -> b. */
typedef struct hc_pair {
    const char *tl;
    hc_uct_t   *u;
    hc_iface_t  a, b;
    uct_ep_h    ep;
} hc_pair_t;

/* Registered memory and the key a peer reaches it with. */
typedef struct hc_region {
    uint8_t          *buf;
    size_t            length;
    uct_mem_h         memh;
    uct_rkey_bundle_t rkey;
    int               have_rkey;
} hc_region_t;

/* A completion and what it said; what a fetching atomic fetched. */
typedef struct hc_comp {
    uct_completion_t uct;
    int              done;
    ucs_status_t     status;
    uint64_t         result64;
    uint32_t         result32;
} hc_comp_t;

/* The plugin file strand's component came from. */
const char *hc_plugin_path(void);
/* The MD on `md_name` (registration cache off: a key must die with its
 * registration, errors.c), a worker: 0, or -1 with the FAIL line said. */
int  hc_uct_open(hc_uct_t *u, const char *md_name, double timeout);
void hc_uct_close(hc_uct_t *u);
/* Whether the MD lists tl on its device. */
int hc_uct_has_tl(hc_uct_t *u, const char *tl);

/* Two interfaces and an ep a -> b; `tags`: with TM_ENABLE=try and the
 * unexpected-message callbacks. UCS_OK, or the status of what failed
 * (`what` names it). */
ucs_status_t hc_pair_open(hc_pair_t *p, hc_uct_t *u, const char *tl, int tags,
                          const char **what);
void         hc_pair_close(hc_pair_t *p);
ucs_status_t hc_ep_create(hc_pair_t *p, uct_ep_h *ep_p);
/* What the error handler said about ep (UCS_OK: nothing). */
ucs_status_t hc_ep_error(const hc_pair_t *p, uct_ep_h ep);
/* A check on the pair's endpoint after it failed would only wait for its
 * timeout: 1 (and a FAIL line for `name` saying so) when it failed. */
int hc_ep_failed(hc_pair_t *p, const char *name);

/* Progress until cond(arg) holds: 1, or 0 after the timeout. */
int hc_wait(hc_uct_t *u, int (*cond)(void *arg), void *arg);
/* Progress until `am` counted `count` messages: 1, or 0 after the
 * timeout. */
int hc_wait_am(hc_uct_t *u, hc_am_rx_t *am, unsigned count);
/* Repeat an operation while it says UCS_ERR_NO_RESOURCE (an rc_strand ep
 * still connecting, a full queue), progressing, up to the timeout. */
#define HC_RETRY(_u, _status, _call)                                       \
    do {                                                                   \
        double _end = hc_now() + (_u)->timeout;                            \
        for (;;) {                                                         \
            (_status) = (_call);                                           \
            if (((_status) != UCS_ERR_NO_RESOURCE) || (hc_now() > _end)) { \
                break;                                                     \
            }                                                              \
            uct_worker_progress((_u)->worker);                             \
        }                                                                  \
    } while (0)
double hc_now(void);

/* Zeroed memory that lives until hc_uct_close, for whatever an
 * operation writes when it completes (completions, fetched values,
 * GET bcopy data, posted tag receives): an operation that times out may
 * still complete later. Out of memory ends the program. */
void *hc_keep(hc_uct_t *u, size_t size);
/* A fresh completion (hc_keep's memory). */
hc_comp_t *hc_comp_new(hc_uct_t *u);
/* An operation's status: UCS_INPROGRESS waits for its completion
 * (UCS_ERR_TIMED_OUT when it never comes). */
ucs_status_t hc_comp_wait(hc_uct_t *u, ucs_status_t status, hc_comp_t *c);
/* Flush an ep of the pair's sending interface; an ep the error handler
 * named gives its error (a failed ep flushes "at once"). */
ucs_status_t hc_flush(hc_pair_t *p, uct_ep_h ep);
/* A status in words; a wait's own give-ups say how long they waited. */
const char *hc_why(const hc_uct_t *u, ucs_status_t status);

/* A page-aligned buffer of `length` bytes, filled with `seed`'s pattern,
 * registered, its key unpacked. UCS_OK or what failed. Freed at once, or
 * (when a wait timed out: the device may still write it) at
 * hc_uct_close. */
ucs_status_t
     hc_region_alloc(hc_uct_t *u, hc_region_t *r, size_t length, unsigned seed);
void hc_region_free(hc_uct_t *u, hc_region_t *r);
void hc_pattern(uint8_t *buf, size_t length, unsigned seed);
/* Compare `length` bytes: 0 when equal; else -1 and a line in `why`
 * (first differing offset, how many differ). */
int hc_compare(const uint8_t *got, const uint8_t *want, size_t length,
               char *why, size_t max);

/* A file of an interface's UCX VFS directory (the transport's own view),
 * "" when there is none. */
void hc_vfs_read(hc_uct_t *u, uct_iface_h iface, const char *file, char *buf,
                 size_t max);

/* ------------------------------------------------------------ checks */

void hc_check_am(hc_pair_t *p);
void hc_check_put(hc_pair_t *p);
void hc_check_get(hc_pair_t *p);
void hc_check_atomics(hc_pair_t *p, const hc_machine_t *m);
void hc_check_tags(hc_uct_t *u, const char *tl, const hc_machine_t *m);
void hc_check_errors(hc_pair_t *p);
/* an armed receiver and sender wake (events.c) */
void hc_check_events(hc_pair_t *p);
/* several send queues of one interface ring its one register in turn */
void hc_check_register(hc_uct_t *u, const char *tl);
/* a signature check that must fail, then the same mkey good (sig.c) */
void hc_check_signatures(const hc_machine_t *m, double timeout);

#endif
