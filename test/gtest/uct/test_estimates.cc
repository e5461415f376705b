/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The estimates UCP computes its protocol thresholds from (iface_query's
 * latency, bandwidth and overhead; estimate_perf's overheads) are the
 * device's description: STRAND_SIM_PERF's values exactly, or the software
 * device's measured costs, which must be sane and measured once per
 * process; a bad STRAND_SIM_PERF fails the open with a message. On both
 * transports (dc_strand/estimates.*, rc_strand/estimates.*), each adding
 * what UCX's dc_mlx5 and rc_mlx5 add.
 */
#include "uct_fixture.h"

extern "C" {
#include "dev/dev.h"
#include <uct/api/v2/uct_v2.h>
}

#include <cmath>

/* what dc_strand adds for a DC connect packet (STRAND_DC_CONNECT_LATENCY,
 * as UCX's dc_mlx5 counts it) */
static const double dc_connect_latency = 60e-9;

class estimates : public strand_uct_tl {
protected:
    /* what the transport adds to the device's latency: a DC connect
     * packet (dc_strand); nothing (rc_strand, connected) */
    double connect_latency() const
    {
        return is_dc() ? dc_connect_latency : 0;
    }

    /* the latency per endpoint: the device's (dc_strand: its DCIs are
     * shared); 1 ns (rc_strand: a QP per endpoint, as UCX's rc_mlx5) */
    double latency_per_ep(const strand_dev_perf_t &d) const
    {
        return is_dc() ? d.latency_per_ep : 1e-9;
    }

    /* the description the device layer gives for the software device */
    strand_dev_perf_t device_perf()
    {
        strand_dev_info_t info;
        strand_dev_perf_t perf;
        strand_dev_t     *dev = nullptr;

        memset(&perf, 0, sizeof(perf));
        EXPECT_EQ(1, strand_dev_list(1u << STRAND_DEV_KIND_SIM, &info, 1));
        EXPECT_EQ(0, strand_dev_open(&info, &dev));
        if (dev != nullptr) {
            EXPECT_EQ(0, dev->ops->query_perf(dev, &perf));
            dev->ops->close(dev);
        }
        return perf;
    }

    uct_perf_attr_t estimate_perf(uct_iface_h iface)
    {
        uct_perf_attr_t p;
        p.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                       UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
                       UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD |
                       UCT_PERF_ATTR_FIELD_RECV_OVERHEAD |
                       UCT_PERF_ATTR_FIELD_BANDWIDTH |
                       UCT_PERF_ATTR_FIELD_LATENCY;
        p.operation = UCT_EP_OP_AM_BCOPY;
        EXPECT_EQ(UCS_OK, uct_iface_estimate_perf(iface, &p));
        return p;
    }

    void expect_attr_is(const strand_dev_perf_t &d, const uct_iface_attr_t &a)
    {
        EXPECT_DOUBLE_EQ(d.latency + connect_latency(), a.latency.c);
        EXPECT_DOUBLE_EQ(latency_per_ep(d), a.latency.m);
        EXPECT_DOUBLE_EQ(d.bandwidth, a.bandwidth.shared);
        EXPECT_EQ(0.0, a.bandwidth.dedicated);
        EXPECT_DOUBLE_EQ(d.send_overhead, a.overhead);
    }
};

TEST_P(estimates, override_reaches_iface_query_and_estimate_perf)
{
    set_env("STRAND_SIM_PERF", "latency_ns=1234,bw_mbs=5678,overhead_ns=91,"
                               "recv_overhead_ns=37");
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));

    strand_dev_perf_t d = device_perf();
    EXPECT_EQ(STRAND_DEV_PERF_OVERRIDE, d.source);
    EXPECT_DOUBLE_EQ(1234e-9, d.latency);
    EXPECT_DOUBLE_EQ(5678e6, d.bandwidth);
    EXPECT_DOUBLE_EQ(91e-9, d.send_overhead);
    EXPECT_DOUBLE_EQ(37e-9, d.recv_overhead);
    expect_attr_is(d, m_a.attr);

    uct_perf_attr_t p = estimate_perf(m_a.iface);
    EXPECT_DOUBLE_EQ(91e-9, p.send_pre_overhead);
    EXPECT_DOUBLE_EQ(0, p.send_post_overhead);
    EXPECT_DOUBLE_EQ(37e-9, p.recv_overhead);
    EXPECT_DOUBLE_EQ(5678e6, p.bandwidth.shared);
    EXPECT_DOUBLE_EQ(1234e-9 + connect_latency(), p.latency.c);
}

/* keys left out take the device's fixed values, not measured ones: a run
 * with an override does not depend on the host */
TEST_P(estimates, partial_override_is_deterministic)
{
    set_env("STRAND_SIM_PERF", "bw_mbs=3000");
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    strand_dev_perf_t d = device_perf();
    EXPECT_EQ(STRAND_DEV_PERF_OVERRIDE, d.source);
    EXPECT_DOUBLE_EQ(3000e6, m_a.attr.bandwidth.shared);
    expect_attr_is(d, m_a.attr);

    /* the same values in another open */
    uct_iface_attr_t first = m_a.attr;
    uct_iface_close(m_a.iface);
    m_a.iface = nullptr;
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    EXPECT_DOUBLE_EQ(first.latency.c, m_a.attr.latency.c);
    EXPECT_DOUBLE_EQ(first.overhead, m_a.attr.overhead);
}

TEST_P(estimates, measured_estimates_are_sane_and_once_per_process)
{
    unsetenv("STRAND_SIM_PERF");
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, open_iface(m_a));

    /* the plugin has a software device of its own (this test program
     * links another copy): both measure, each once, so their figures are
     * the same only within the host's noise, and are not compared */
    strand_dev_perf_t d = device_perf();
    EXPECT_TRUE((d.source == STRAND_DEV_PERF_MEASURED) ||
                (d.source == STRAND_DEV_PERF_FIXED))
            << d.what;

    const uct_iface_attr_t &a = m_a.attr;
    EXPECT_TRUE(std::isfinite(a.latency.c));
    EXPECT_GT(a.latency.c, 0);
    EXPECT_LT(a.latency.c, 1e-3);
    EXPECT_GE(a.latency.m, 0);
    EXPECT_TRUE(std::isfinite(a.bandwidth.shared));
    EXPECT_GT(a.bandwidth.shared, 10e6);  /* more than 10 MB/s ... */
    EXPECT_LT(a.bandwidth.shared, 10e12); /* ... less than 10 TB/s */
    EXPECT_TRUE(std::isfinite(a.overhead));
    EXPECT_GT(a.overhead, 0);
    EXPECT_LT(a.overhead, 1e-3);
    uct_perf_attr_t p = estimate_perf(m_a.iface);
    EXPECT_GT(p.recv_overhead, 0);
    EXPECT_LT(p.recv_overhead, 1e-3);

    /* measured once per process: a second interface reports the same */
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    EXPECT_DOUBLE_EQ(a.latency.c, m_b.attr.latency.c);
    EXPECT_DOUBLE_EQ(a.bandwidth.shared, m_b.attr.bandwidth.shared);
}

TEST_P(estimates, bad_override_is_a_readable_error)
{
    static const struct {
        const char *value, *said;
    } bad[] = {
            {"bw_mbs=abc", "bw_mbs='abc'"},
            {"bw_mbs=-5", "bw_mbs='-5'"},
            {"latency_ns=0", "latency_ns='0'"},
            {"latency_ns=", "latency_ns=''"},
            {"overhead_ns=nan", "overhead_ns='nan'"},
            {"overhead_ns=1e99", "overhead_ns='1e99'"},
            {"latency_ns=5ms", "latency_ns='5ms'"},
            {"bogus=1", "unknown key 'bogus'"},
            {"latency_ns", "latency_ns=''"},
    };

    for (const auto &b : bad) {
        SCOPED_TRACE(b.value);
        set_env("STRAND_SIM_PERF", b.value);
        testing::internal::CaptureStderr();
        ucs_status_t status = open_md();
        std::string  err    = testing::internal::GetCapturedStderr();
        EXPECT_NE(UCS_OK, status);
        EXPECT_NE(std::string::npos, err.find("STRAND_SIM_PERF")) << err;
        EXPECT_NE(std::string::npos, err.find(b.said)) << err;
    }
    unsetenv("STRAND_SIM_PERF");
    EXPECT_EQ(UCS_OK, open_md());
}

STRAND_UCT_INSTANTIATE(estimates);
