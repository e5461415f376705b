/* SPDX-License-Identifier: BSD-3-Clause */
#include "sim_clock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

sim_clock_t sim_clock_state;

/* constant_tsc and nonstop_tsc: the TSC ticks at one rate in all states */
static int sim_clock_tsc_invariant(void)
{
    char  line[4096];
    int   constant = 0, nonstop = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (!strncmp(line, "flags", 5)) {
            constant = strstr(line, " constant_tsc") != NULL;
            nonstop  = strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    }
    fclose(f);
    return constant && nonstop;
}

/* Called when a process first attaches to a fabric (not at load time:
 * the plugin is loaded into every UCX process). */
void sim_clock_init(void)
{
#if defined(__x86_64__)
    uint64_t t0, n0, t1, n1;

    if (sim_clock_state.use_tsc || !sim_clock_tsc_invariant()) {
        return;
    }
    n0 = sim_clock_mono_ns();
    t0 = __builtin_ia32_rdtsc();
    usleep(5000);
    n1 = sim_clock_mono_ns();
    t1 = __builtin_ia32_rdtsc();
    if ((t1 <= t0) || (n1 <= n0)) {
        return;
    }
    sim_clock_state.mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) /
                                      (t1 - t0));
    sim_clock_state.tsc0 = t1;
    sim_clock_state.ns0  = n1;
    __atomic_store_n(&sim_clock_state.use_tsc, 1, __ATOMIC_RELEASE);
#endif
}
