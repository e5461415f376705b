/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strand_hwcheck: the program contrib/strand-hwcheck runs through
 * strand-run (which loads the plugin). The machine first, without the
 * plugin; then, through UCT, the strand component, its memory domain, and
 * for dc_strand and rc_strand a loopback of every kind of traffic, tag
 * offload, and an error on purpose. One report on stdout; the exit status
 * says whether anything failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HC_EXIT_NO_NIC 2

typedef struct hc_opts {
    int         sim;
    const char *device;
    double      timeout;
} hc_opts_t;

static void hc_usage(FILE *f)
{
    fprintf(f,
            "usage: strand-hwcheck [--sim] [--device NAME] [--timeout SECS]\n"
            "\n"
            "Checks this machine's mlx5 NIC for strand and prints one report:\n"
            "the driver, port 1, DEVX and the capabilities strand uses; then,\n"
            "with the plugin loaded, dc_strand and rc_strand in a loopback: "
            "AM,\n"
            "PUT, GET, atomics and tag offload with every byte compared, a "
            "PUT\n"
            "with a bad key (its error, the stream reset, an endpoint that "
            "keeps\n"
            "working). Each line says ok, off (why) or FAIL (what).\n"
            "\n"
            "  --sim            check the software mlx5 device (smlx5_0) "
            "instead:\n"
            "                   no NIC needed\n"
            "  --device NAME    the mlx5 device to check (default: the first\n"
            "                   with an active port 1)\n"
            "  --timeout SECS   the longest any one wait may take (default "
            "10)\n"
            "  -h, --help       this text\n"
            "\n"
            "Exit status: 0 nothing failed, 1 a check failed, 2 no mlx5 NIC\n"
            "(without --sim) or a bad option. docs/hardware.md says more.\n");
}

static int hc_parse(int argc, char **argv, hc_opts_t *o)
{
    static const struct option longopts[] = {{"sim", no_argument, NULL, 's'},
                                             {"device", required_argument, NULL,
                                              'd'},
                                             {"timeout", required_argument,
                                              NULL, 't'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    char                      *end;
    int                        c;

    o->sim     = 0;
    o->device  = NULL;
    o->timeout = 10;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->sim = 1;
            break;
        case 'd':
            o->device = optarg;
            break;
        case 't':
            o->timeout = strtod(optarg, &end);
            if ((*end != '\0') || !(o->timeout > 0)) {
                fprintf(stderr,
                        "strand-hwcheck: --timeout '%s': a number "
                        "of seconds, please\n",
                        optarg);
                return -1;
            }
            break;
        case 'h':
            hc_usage(stdout);
            exit(0);
        default:
            hc_usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "strand-hwcheck: unexpected argument '%s'\n",
                argv[optind]);
        return -1;
    }
    return 0;
}

/* The plugin reads its device type from the environment: set it before
 * UCX is asked anything. The software device gets a fabric of its own so
 * that the check meets no other job's processes. */
static void hc_environment(const hc_opts_t *o)
{
    char fabric[64];

    setenv("UCX_STRAND_DEVICE_TYPE", o->sim ? "sim" : "hw", 1);
    if (o->sim && (getenv("STRAND_SIM_FABRIC") == NULL)) {
        snprintf(fabric, sizeof(fabric), "strand-hwcheck-%d", (int)getpid());
        setenv("STRAND_SIM_FABRIC", fabric, 1);
    }
}

static void
hc_check_transport(hc_uct_t *u, const char *tl, const hc_machine_t *m)
{
    hc_pair_t   *p = calloc(1, sizeof(*p));
    const char  *what;
    ucs_status_t status;
    char         name[64];

    snprintf(name, sizeof(name), "%s interfaces", tl);
    hc_section("%s on %s", tl, u->dev_name);
    hc_step("%s", name);
    if (p == NULL) {
        hc_fail(name, "out of memory");
        return;
    }
    if (!hc_uct_has_tl(u, tl)) {
        hc_fail(name, "strand lists no %s on %s (strand-run ucx_info -d)", tl,
                u->dev_name);
        free(p);
        return;
    }
    status = hc_pair_open(p, u, tl, 0, &what);
    if (status != UCS_OK) {
        hc_fail(name, "%s: %s", what, hc_why(u, status));
    } else {
        hc_ok(name, "two, and an endpoint from one to the other");
        hc_check_am(p);
        hc_check_put(p);
        hc_check_get(p);
        hc_check_atomics(p, m);
        hc_check_events(p);
        hc_check_tags(u, tl, m);
        hc_check_errors(p);
    }
    hc_step("closing %s", tl);
    hc_pair_close(p);
    free(p);
    if (status == UCS_OK) {
        hc_check_register(u, tl);
    }
}

int main(int argc, char **argv)
{
    hc_machine_t machine;
    hc_header_t  header;
    hc_opts_t    opts;
    hc_uct_t     uct;
    char         why[512], dev[80];

    if (hc_parse(argc, argv, &opts) != 0) {
        return HC_EXIT_NO_NIC;
    }
    if (opts.sim) {
        memset(&machine, 0, sizeof(machine));
        machine.sim = 1;
        snprintf(machine.device, sizeof(machine.device), "smlx5_0");
    } else if (hc_machine_pick(opts.device, &machine, why, sizeof(why)) != 0) {
        fprintf(stderr,
                "strand-hwcheck: %s; use --sim to check the "
                "software device\n",
                why);
        return HC_EXIT_NO_NIC;
    }
    hc_environment(&opts);
    /* a step may take a few waits; one that takes far longer hangs */
    hc_watchdog_init(4 * opts.timeout + 10);

    snprintf(dev, sizeof(dev), "%s:1", machine.device);
    header.device = dev;
    header.sim    = opts.sim;
    hc_report_header(&header);
    if (!opts.sim) {
        hc_machine_check(&machine);
    }
    hc_section("strand on %s", dev);
    if (hc_uct_open(&uct, machine.device, opts.timeout) == 0) {
        hc_check_transport(&uct, "dc_strand", &machine);
        hc_check_transport(&uct, "rc_strand", &machine);
    }
    hc_section("signatures on %s, below the transport", dev);
    hc_check_signatures(&machine, opts.timeout);
    hc_step("closing the memory domain");
    hc_uct_close(&uct);
    return hc_report_finish(opts.sim);
}
