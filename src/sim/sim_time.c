/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's time: its clock, and the lengths of the protocol's timers
 * (transport timeout, RNR back-off) as a QP's attributes encode them.
 */
#include "sim.h"
#include "sim_clock.h"

uint64_t sim_now_ns(void)
{
    return sim_clock_ns();
}

/* IBA timeout encoding: 4.096 us * 2^timeout (0 = infinite: we use 2^31). */
uint64_t sim_timeout_ns(const smlx5_qp_t *qp)
{
    if (qp->ctx->cfg.timeout_ns_override != 0) {
        return qp->ctx->cfg.timeout_ns_override;
    }
    if (qp->timeout == 0) {
        return 4096ull << 31;
    }
    return 4096ull << qp->timeout;
}

/* IBA RNR timer encoding (table 45), in microseconds, indexed by the 5-bit
 * field; 0 means 655.36 ms. */
uint64_t sim_rnr_timer_ns(const smlx5_context_t *ctx, uint8_t t)
{
    static const uint32_t us[32] = {655360, 10,    20,     30,     40,
                                    60,     80,    120,    160,    240,
                                    320,    480,   640,    960,    1280,
                                    1920,   2560,  3840,   5120,   7680,
                                    10240,  15360, 20480,  30720,  40960,
                                    61440,  81920, 122880, 163840, 245760,
                                    327680, 491520};

    if (ctx->cfg.rnr_timer_ns != 0) {
        return ctx->cfg.rnr_timer_ns;
    }
    return (uint64_t)us[t & 31] * 1000ull;
}
