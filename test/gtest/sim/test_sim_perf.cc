/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's own cost measurement (src/sim/sim_perf.c,
 * docs/software-device.md "Performance figures"): it must succeed on a
 * machine whose other core a process busy-polls at the same priority (an
 * ucx_perftest server, an MPI rank), which is every two-process run on a
 * 2-core host; before, the first round trip that waited for the
 * scheduler ended the measurement and every such run warned of it.
 */
#include <gtest/gtest.h>

extern "C" {
#include "sim/smlx5.h"
}

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <thread>

namespace {

int pin_to(pthread_t t, int cpu)
{
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(t, sizeof(one), &one);
}

} // namespace

TEST(sim_perf, measures_while_the_other_core_is_busy)
{
    cpu_set_t allowed;
    int       first = -1, second = -1;

    ASSERT_EQ(0, sched_getaffinity(0, sizeof(allowed), &allowed));
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) {
            continue;
        }
        if (first < 0) {
            first = cpu;
        } else if (second < 0) {
            second = cpu;
        }
    }
    if (second < 0) {
        GTEST_SKIP() << "one CPU: the echo thread shares it by design";
    }
    if (getenv("STRAND_UNDER_VALGRIND") != nullptr) {
        /* the device falls back to its fixed figures there, as designed */
        GTEST_SKIP() << "valgrind runs one thread at a time: no round trip "
                        "between two threads is a device's latency";
    }

    /* this thread on the first CPU: the device's echo thread goes to the
     * next one (sim_perf_pin_apart), where a thread spins throughout */
    std::atomic<bool> stop{false};
    std::thread       spinner([&stop] {
        while (!stop.load(std::memory_order_relaxed)) {
        }
    });
    ASSERT_EQ(0, pin_to(spinner.native_handle(), second));
    ASSERT_EQ(0, pin_to(pthread_self(), first));
    while (sched_getcpu() != first) {
        sched_yield();
    }

    smlx5_perf_t perf = {};
    int          ret  = smlx5_measure_perf(4096, &perf);

    stop = true;
    spinner.join();
    sched_setaffinity(0, sizeof(allowed), &allowed);

    ASSERT_EQ(0, ret) << strerror(ret);
    EXPECT_EQ(SMLX5_PERF_MEASURED, perf.source);
    EXPECT_EQ(0, perf.error);
    EXPECT_GT(perf.latency_ns, 0);
    EXPECT_LT(perf.latency_ns, 1e6); /* a round trip, not a time slice */
    EXPECT_GT(perf.bw_mbs, 10);
}
