/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A cheap monotonic clock for the software device's hot paths (every CQ
 * poll and packet reads it; clock_gettime was a third of a ping-pong's
 * time). On x86 with an invariant TSC: rdtsc scaled to nanoseconds,
 * calibrated once against CLOCK_MONOTONIC; elsewhere clock_gettime.
 */
#ifndef SIM_CLOCK_H_
#define SIM_CLOCK_H_

#include <stdint.h>
#include <time.h>

typedef struct sim_clock {
    int      use_tsc;
    uint64_t tsc0, ns0;
    uint64_t mult; /* ns per tick << 32 */
} sim_clock_t;

extern sim_clock_t sim_clock_state;
void               sim_clock_init(void);

static inline uint64_t sim_clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline uint64_t sim_clock_ns(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(sim_clock_state.use_tsc, 1)) {
        uint64_t d = __builtin_ia32_rdtsc() - sim_clock_state.tsc0;
        return sim_clock_state.ns0 +
               (uint64_t)(((unsigned __int128)d * sim_clock_state.mult) >> 32);
    }
#endif
    return sim_clock_mono_ns();
}

#endif
