/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The report: a header (host, versions, plugin, device), a line per check
 * (its name, then ok / off (why) / FAIL (what)), a summary and what to
 * send. Lines go out as the checks end, so that a run that hangs or
 * crashes still shows how far it came; the watchdog turns a step that
 * never returns into a last FAIL line and exit status 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <ucp/api/ucp.h>

#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* the monotonic clock, in seconds (the report's watchdog and every wait) */
double hc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define HC_NAME_WIDTH 30
#define HC_MAX_FAILED 16

static void hc_watchdog_stop(void);

static struct {
    unsigned ok, off, fail;
    char     failed[HC_MAX_FAILED][64];
} hc_counts;

/* ------------------------------------------------------ loaded files */

typedef struct hc_lib_find {
    const char *part; /* a piece of the file name */
    char        path[PATH_MAX];
} hc_lib_find_t;

static int hc_lib_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    hc_lib_find_t *f = arg;

    if ((info->dlpi_name != NULL) &&
        (strstr(info->dlpi_name, f->part) != NULL)) {
        snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* The file of a loaded library whose name contains `part` ("" when none
 * is loaded), its links resolved. */
static void hc_lib_path(const char *part, char *buf, size_t max)
{
    hc_lib_find_t f = {.part = part, .path = ""};
    char          real[PATH_MAX];

    dl_iterate_phdr(hc_lib_find_cb, &f);
    if ((f.path[0] != '\0') && (realpath(f.path, real) != NULL)) {
        snprintf(buf, max, "%s", real);
    } else {
        snprintf(buf, max, "%s", f.path);
    }
}

const char *hc_plugin_path(void)
{
    static char      path[PATH_MAX];
    uct_component_h *components;
    unsigned         num;

    hc_lib_path("libuct_strand", path, sizeof(path));
    if ((path[0] == '\0') &&
        (uct_query_components(&components, &num) == UCS_OK)) {
        /* UCX >= 1.22 loads it from UCX_PLUGIN_PATH when it first lists
         * its components (strand-run preloads it on older UCX) */
        uct_release_component_list(components);
        hc_lib_path("libuct_strand", path, sizeof(path));
    }
    return path;
}

/* rdma-core names libibverbs libibverbs.so.1.<ABI>.<release>: the
 * release is the rdma-core version (44.0 for libibverbs.so.1.14.44.0). */
static void hc_rdma_core_version(char *buf, size_t max)
{
    char        path[PATH_MAX];
    const char *base, *v;
    unsigned    abi, major, minor;

    hc_lib_path("libibverbs.so", path, sizeof(path));
    base = strrchr(path, '/');
    base = (base != NULL) ? base + 1 : path;
    v    = strstr(base, ".so.");
    if ((v != NULL) &&
        (sscanf(v, ".so.1.%u.%u.%u", &abi, &major, &minor) == 3)) {
        snprintf(buf, max, "%u.%u (%s)", major, minor, base);
    } else {
        snprintf(buf, max, "%s", (base[0] != '\0') ? base : "unknown");
    }
}

/* ------------------------------------------------------------ lines */

void hc_report_header(const hc_header_t *h)
{
    struct utsname un;
    char           rdma[PATH_MAX + 32], date[64];
    time_t         now = time(NULL);

    if (uname(&un) != 0) {
        memset(&un, 0, sizeof(un));
    }
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    hc_rdma_core_version(rdma, sizeof(rdma));
    printf("strand-hwcheck report\n");
    printf("  %-11s %s (%s %s %s)\n", "host", un.nodename, un.sysname,
           un.release, un.machine);
    printf("  %-11s %s\n", "date", date);
    printf("  %-11s %s, built for UCX %s\n", "strand", PACKAGE_VERSION,
           STRAND_UCX_BUILD_VERSION);
    printf("  %-11s %s\n", "UCX", ucp_get_version_string());
    printf("  %-11s %s\n", "plugin",
           (hc_plugin_path()[0] != '\0') ?
                   hc_plugin_path() :
                   "not loaded (run strand-hwcheck, not the program itself)");
    printf("  %-11s %s\n", "rdma-core", rdma);
    printf("  %-11s %s%s\n", "device", h->device,
           h->sim ? ", the software mlx5 device (--sim: no NIC is checked)" :
                    "");
    fflush(stdout);
}

void hc_section(const char *fmt, ...)
{
    va_list ap;

    printf("\n");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static void
hc_line(const char *name, const char *verdict, const char *fmt, va_list ap)
{
    printf("  %-*s %s", HC_NAME_WIDTH, name, verdict);
    if (fmt != NULL) {
        printf(" (");
        vprintf(fmt, ap);
        printf(")");
    }
    printf("\n");
    fflush(stdout);
}

void hc_ok(const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    hc_line(name, "ok", fmt, ap);
    va_end(ap);
    hc_counts.ok++;
}

void hc_off(const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    hc_line(name, "off", fmt, ap);
    va_end(ap);
    hc_counts.off++;
}

void hc_fail(const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    hc_line(name, "FAIL", fmt, ap);
    va_end(ap);
    if (hc_counts.fail < HC_MAX_FAILED) {
        snprintf(hc_counts.failed[hc_counts.fail], sizeof(hc_counts.failed[0]),
                 "%s", name);
    }
    hc_counts.fail++;
}

static void hc_what_to_send(int sim)
{
    struct utsname un;

    if (uname(&un) != 0) {
        memset(&un, 0, sizeof(un));
    }
    printf("\nwhat to send us (with a word on what you ran it for):\n");
    printf("  - this report:          strand-hwcheck%s >hwcheck.txt 2>&1\n",
           sim ? " --sim" : "");
    printf("  - the NIC in detail:    ibv_devinfo -v\n");
    printf("  - what UCX sees:        strand-run ucx_info -d\n");
    printf("  - the versions:         UCX %s, rdma-core (above), kernel %s, "
           "the NIC's firmware (ibv_devinfo: fw_ver)\n",
           ucp_get_version_string(), un.release);
    printf("  - with a FAIL line:     the same run with UCX_LOG_LEVEL=debug "
           "(strand logs every error completion decoded)\n");
}

int hc_report_finish(int sim)
{
    unsigned i;

    hc_watchdog_stop();
    printf("\nsummary: %u ok, %u off, %u FAIL\n", hc_counts.ok, hc_counts.off,
           hc_counts.fail);
    if (hc_counts.fail > 0) {
        printf("failed:");
        for (i = 0; (i < hc_counts.fail) && (i < HC_MAX_FAILED); ++i) {
            printf("%s %s", (i > 0) ? "," : "", hc_counts.failed[i]);
        }
        printf("%s\n", (hc_counts.fail > HC_MAX_FAILED) ? ", ..." : "");
    } else if (hc_counts.off > 0) {
        printf("everything strand uses here works; the 'off' lines are "
               "features this %s does not offer, and why\n",
               sim ? "device setup" : "NIC or setup");
    } else {
        printf("everything strand uses here works\n");
    }
    hc_what_to_send(sim);
    fflush(stdout);
    return (hc_counts.fail > 0) ? 1 : 0;
}

/* ---------------------------------------------------------- watchdog */

/* A thread, not SIGALRM: UCX may use that signal for its own timers. It
 * looks every 100 ms whether the step now running has passed its
 * deadline, and then ends the run with the line made when the step
 * began. */
static pthread_mutex_t hc_watchdog_lock = PTHREAD_MUTEX_INITIALIZER;
static double          hc_watchdog_secs;
static double          hc_watchdog_deadline; /* 0: disarmed */
static char            hc_watchdog_msg[512];
static size_t          hc_watchdog_len;

static void *hc_watchdog_run(void *arg)
{
    ssize_t n;
    int     fire;

    for (;;) {
        usleep(100000);
        pthread_mutex_lock(&hc_watchdog_lock);
        fire = (hc_watchdog_deadline > 0) && (hc_now() > hc_watchdog_deadline);
        if (fire) {
            /* the main thread is stuck in a call, not printing: its lines
             * are out (each is flushed) */
            n = write(STDOUT_FILENO, hc_watchdog_msg, hc_watchdog_len);
            (void)n;
            _exit(1);
        }
        pthread_mutex_unlock(&hc_watchdog_lock);
    }
    return NULL;
}

void hc_watchdog_init(double secs)
{
    pthread_t thread;

    hc_watchdog_secs = secs;
    if (pthread_create(&thread, NULL, hc_watchdog_run, NULL) == 0) {
        pthread_detach(thread);
    }
}

void hc_step(const char *fmt, ...)
{
    char    step[128];
    va_list ap;
    int     len;

    va_start(ap, fmt);
    vsnprintf(step, sizeof(step), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&hc_watchdog_lock);
    len                  = snprintf(hc_watchdog_msg, sizeof(hc_watchdog_msg),
                                    "  %-*s FAIL (did not finish in %.0f s: it hangs)\n"
                                                     "\nstrand-hwcheck: stopped at a check that hangs; send "
                                                     "this report and ibv_devinfo -v\n",
                                    HC_NAME_WIDTH, step, hc_watchdog_secs);
    hc_watchdog_len      = (len < (int)sizeof(hc_watchdog_msg)) ?
                                   (size_t)len :
                                   sizeof(hc_watchdog_msg) - 1;
    hc_watchdog_deadline = hc_now() + hc_watchdog_secs;
    pthread_mutex_unlock(&hc_watchdog_lock);
}

static void hc_watchdog_stop(void)
{
    pthread_mutex_lock(&hc_watchdog_lock);
    hc_watchdog_deadline = 0;
    pthread_mutex_unlock(&hc_watchdog_lock);
}
