/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every packet carries for the fabric's quality of service (spec
 * section 9), on both transports (dc_strand/qos.*, rc_strand/qos.*):
 * UCX_<TL>_SL and UCX_<TL>_TRAFFIC_CLASS go into the address vectors and
 * the QPs' and DCTs' paths, and the software device carries them in its
 * packets; the receiving NIC counts what it saw (the interface's VFS file
 * 'qos': what it sends with, and the port's packets by SL and by traffic
 * class, smlx5_rx_qos_counts).
 * auto: SL 0; traffic class the port's configured one, else 106 on RoCE
 * (DSCP 26 with ECN, UCX's), 0 on InfiniBand (no GRH on its paths).
 */
#include "uct_fixture.h"

#include <sstream>

class qos : public strand_uct_tl {
protected:
    std::string opt(const char *name) const
    {
        return tl_var(name);
    }

    struct counts {
        uint64_t sl[16], tclass[256];
    };

    /* what the port received so far (one software NIC per process: both
     * interfaces' packets) */
    counts now(const iface_t &i)
    {
        counts c;
        memset(&c, 0, sizeof(c));
        std::istringstream text(vfs_read(i, "qos"));
        std::string        line;
        unsigned           k;
        unsigned long long n;
        while (std::getline(text, line)) {
            if (sscanf(line.c_str(), "rx sl %u: %llu", &k, &n) == 2) {
                c.sl[k & 15] = n;
            } else if (sscanf(line.c_str(), "rx traffic_class %u: %llu", &k,
                              &n) == 2) {
                c.tclass[k & 255] = n;
            }
        }
        return c;
    }

    /* traffic of every kind between a new pair (connection, active
     * messages, PUT, GET, an atomic): the packets the NIC received
     * meanwhile, by SL and by traffic class */
    counts traffic()
    {
        counts before, after, d;
        open_pair();
        before = now(m_a);
        region r, l;
        reg(r, 64 * 1024);
        reg(l, 64 * 1024);
        for (uint64_t i = 0; i < 20; ++i) {
            EXPECT_EQ(UCS_OK, am_short_retry(m_ep, i));
        }
        EXPECT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 20; }));
        uct_iov_t iov = {l.buf.data(), l.buf.size(), l.memh, 0, 1};
        test_comp c;
        comp_init(&c);
        ucs_status_t s = retry([&] {
            return uct_ep_get_zcopy(m_ep, &iov, 1, addr(r), r.rkey.rkey,
                                    &c.uct);
        });
        if (s == UCS_INPROGRESS) {
            EXPECT_TRUE(progress_until([&] { return c.done != 0; }));
        }
        uint64_t old;
        comp_init(&c);
        s = retry([&] {
            return uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 1, &old,
                                         addr(r), r.rkey.rkey, &c.uct);
        });
        if (s == UCS_INPROGRESS) {
            EXPECT_TRUE(progress_until([&] { return c.done != 0; }));
        }
        flush(m_ep);
        unreg(l);
        unreg(r);
        after            = now(m_a);
        std::string self = vfs_read(m_a, "qos");
        EXPECT_EQ(0u, self.find(m_want)) << self;
        for (unsigned i = 0; i < 16; ++i) {
            d.sl[i] = after.sl[i] - before.sl[i];
        }
        for (unsigned i = 0; i < 256; ++i) {
            d.tclass[i] = after.tclass[i] - before.tclass[i];
        }
        return d;
    }

    static uint64_t total(const uint64_t *v, unsigned n)
    {
        uint64_t t = 0;
        for (unsigned i = 0; i < n; ++i) {
            t += v[i];
        }
        return t;
    }

    std::string m_want; /* the first line of 'qos' */

    /* every packet of the traffic carried sl and tclass. The two kinds are
     * read from the VFS file one after the other while the NIC may still
     * receive (a late acknowledgement): each kind is judged on its own, by
     * the packets counted under any other value, which no late packet of
     * this traffic adds to. */
    void expect_all(const counts &d, unsigned sl, unsigned tclass)
    {
        EXPECT_GE(d.sl[sl], 20u) << "too few packets counted"; /* 20 AMs */
        EXPECT_GE(d.tclass[tclass], 20u) << "too few packets counted";
        EXPECT_EQ(0u, total(d.sl, 16) - d.sl[sl]) << "packets of another SL";
        EXPECT_EQ(0u, total(d.tclass, 256) - d.tclass[tclass])
                << "packets of another traffic class";
    }
};

TEST_P(qos, infiniband_packets_carry_the_configured_sl)
{
    set_env("STRAND_SIM_LINK_LAYER", "infiniband"); /* the roce mode */
    set_env(opt("SL").c_str(), "3");
    set_env(opt("TRAFFIC_CLASS").c_str(), "72"); /* no GRH on IB paths */
    ASSERT_EQ(UCS_OK, open_md());
    m_want = "sl 3 traffic_class 72\n";
    expect_all(traffic(), 3, 0);
}

TEST_P(qos, roce_packets_carry_the_sl_and_the_traffic_class)
{
    set_env("STRAND_SIM_LINK_LAYER", "ethernet");
    set_env(opt("SL").c_str(), "5");
    set_env(opt("TRAFFIC_CLASS").c_str(), "72");
    ASSERT_EQ(UCS_OK, open_md());
    m_want = "sl 5 traffic_class 72\n";
    expect_all(traffic(), 5, 72);
}

/* auto: 106 on RoCE where the port has no class of its own, SL 0 */
TEST_P(qos, roce_auto_is_dscp_26_with_ecn)
{
    set_env("STRAND_SIM_LINK_LAYER", "ethernet");
    ASSERT_EQ(UCS_OK, open_md());
    m_want = "sl 0 traffic_class 106\n";
    expect_all(traffic(), 0, 106);
}

/* auto: the port's configured class where it has one (sysfs
 * tc/1/traffic_class on a host; STRAND_SIM_CAPS here) */
TEST_P(qos, roce_auto_takes_the_ports_traffic_class)
{
    set_env("STRAND_SIM_LINK_LAYER", "ethernet");
    set_env("STRAND_SIM_CAPS", "traffic_class=40");
    ASSERT_EQ(UCS_OK, open_md());
    m_want = "sl 0 traffic_class 40\n";
    expect_all(traffic(), 0, 40);
}

/* auto on InfiniBand: SL 0, and no traffic class (no GRH) */
TEST_P(qos, infiniband_auto_is_sl_0)
{
    set_env("STRAND_SIM_LINK_LAYER", "infiniband"); /* the roce mode */
    ASSERT_EQ(UCS_OK, open_md());
    m_want = "sl 0 traffic_class 0\n";
    expect_all(traffic(), 0, 0);
}

/* Values the port cannot carry are refused, each with its range. */
TEST_P(qos, bad_values_are_refused)
{
    set_env("STRAND_SIM_LINK_LAYER", "infiniband"); /* the roce mode */
    ASSERT_EQ(UCS_OK, open_md());
    scoped_log_capture logs;
    set_env(opt("TRAFFIC_CLASS").c_str(), "256");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_env(opt("TRAFFIC_CLASS").c_str(), "auto");
    set_env(opt("SL").c_str(), "16");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    EXPECT_EQ(1u, logs.count("TRAFFIC_CLASS=256 (valid: auto, 0 .. 255)"));
    EXPECT_EQ(1u, logs.count("SL=16 (valid: auto, 0 .. 15 on InfiniBand)"));
}

STRAND_UCT_INSTANTIATE(qos);
