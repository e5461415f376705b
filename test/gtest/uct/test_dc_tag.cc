/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand with hardware tag matching (UCX_DC_STRAND_TM_ENABLE=y), what is
 * DC's own: its capabilities and limits, the tag flag of its address (on
 * and off do not reach each other), the device's rendezvous (the
 * receiver's NIC reads, RVH+RAVH) and what integrity does to it, a sender
 * that dies mid rendezvous. What both transports do with tags is tested on
 * both (test_tag.cc).
 */
#include "tag_fixture.h"

/* ---------------------------------------------------------- set up */

TEST_F(dc_strand_tag, capabilities_and_limits)
{
    open_tag_pair();
    const uct_iface_attr_t &a = m_a.attr;
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_SHORT);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_ZCOPY);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);
    /* the software device: 1023 tags, rendezvous header 64 bytes */
    EXPECT_EQ(1023u, a.cap.tag.recv.max_outstanding);
    EXPECT_EQ(1u, a.cap.tag.recv.max_iov);
    EXPECT_EQ(1u, a.cap.tag.rndv.max_iov);
    /* 64 - TMH - RVH - RAVH, and 2 bytes in the TMH: what UCP's
     * unexpected-rendezvous header (17 bytes) needs */
    EXPECT_EQ(18u, a.cap.tag.rndv.max_hdr);
    /* every message carries a TMH: 16 bytes less for active messages */
    EXPECT_EQ(a.cap.tag.eager.max_short, a.cap.am.max_short + 1);
    EXPECT_EQ(a.cap.tag.eager.max_bcopy, a.cap.am.max_bcopy + 1);
}

TEST_F(dc_strand_tag, without_unexpected_callbacks_opens_without_tags)
{
    /* a user that takes no unexpected tagged message (UCP without the tag
     * feature) gets an interface without tag matching where it is only
     * tried, and its address says so */
    set_env(m_tm_env.c_str(), "try");
    m_iface_params_hook = nullptr;
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    EXPECT_FALSE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    EXPECT_EQ(0, m_a.iface_addr[3]);
    uct_iface_close(m_a.iface);
    m_a.iface = nullptr;
    set_env(m_tm_env.c_str(), "y");
    /* on a device without tag matching, y refuses to open and try opens
     * without it */
    set_env("STRAND_SIM_CAPS", "tm_max_num_tags=0");
    ASSERT_EQ(UCS_OK, open_md());
    m_iface_params_hook = [this](uct_iface_params_t &p) {
        p.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                        UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB;
        p.eager_cb = eager_unexp_cb;
        p.rndv_cb  = rndv_unexp_cb;
    };
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, open_iface(m_a));
    set_env("UCX_DC_STRAND_TM_ENABLE", "try");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    EXPECT_FALSE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
}

/* Asked for (y), tag matching is on without the callbacks too (what
 * ucx_info -d shows), and the address says so; a tagged message nobody
 * posted a receive for has nobody to go to: it is dropped, counted and
 * logged, and the interface goes on. */
TEST_F(dc_strand_tag, asked_for_without_callbacks_drops_unexpected_messages)
{
    m_iface_params_hook = nullptr;
    open_pair();
    EXPECT_TRUE(m_b.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    EXPECT_TRUE(m_b.attr.cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);
    EXPECT_NE(0, m_b.iface_addr[3]);
    uint64_t v = 42;
    {
        scoped_log_capture logs;
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_tag_eager_short(m_ep, 0x77, &v, sizeof(v));
                  }));
        ASSERT_TRUE(progress_until([&] { return tm_stat("dropped") == 1; }));
        EXPECT_EQ(1u, logs.count("dropped"));
    }
    /* a receive posted now gets the next one */
    region r;
    ASSERT_NO_FATAL_FAILURE(reg(r, 64));
    recv_ctx c;
    ASSERT_EQ(UCS_OK, post_recv(c, r, 0x77));
    v = 43;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_tag_eager_short(m_ep, 0x77, &v, sizeof(v));
              }));
    ASSERT_TRUE(progress_until([&] { return c.completed; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp(r.buf.data(), &v, sizeof(v)));
    EXPECT_EQ(1u, tm_stat("dropped"));
    unreg(r);
}

/* Integrity-checked GETs and the device's rendezvous do not mix: the
 * device would READ through no checking mkey and send its FIN whatever
 * came, so y refuses to open with integrity on, and try opens without tag
 * matching (every rendezvous is then UCP's checked GET). */
TEST_F(dc_strand_tag, integrity_turns_the_device_rendezvous_away)
{
    set_env("UCX_DC_STRAND_INTEGRITY", "crc32c");
    ASSERT_EQ(UCS_OK, open_md());
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, open_iface(m_a));
    set_env("UCX_DC_STRAND_TM_ENABLE", "try");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    EXPECT_FALSE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    EXPECT_FALSE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);
    EXPECT_EQ(0, m_a.iface_addr[3]); /* its address says: no tags */
}

TEST_F(dc_strand_tag, on_and_off_do_not_reach_each_other)
{
    m_hook_target = &m_tag_a;
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    set_env("UCX_DC_STRAND_TM_ENABLE", "n");
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    EXPECT_FALSE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t *)m_b.dev_addr.data(),
            (const uct_iface_addr_t *)m_b.iface_addr.data()));
    EXPECT_EQ(UCS_ERR_UNREACHABLE,
              create_ep(m_a, m_b.dev_addr, m_b.iface_addr));
}

TEST_F(dc_strand_tag, rndv_expected_the_receivers_device_reads)
{
    open_tag_pair();
    for (size_t len : {(size_t)1, (size_t)4096, (size_t)65537,
                       (size_t)(1 << 20), (size_t)(16 << 20)}) {
        SCOPED_TRACE(len);
        region src, dst;
        reg(src, len);
        reg(dst, len);
        fill(src, pattern(len, (unsigned)len));
        recv_ctx ctx;
        ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 0x77));
        test_comp            c;
        std::vector<uint8_t> hdr = pattern(18, 3);
        rndv_zcopy(0x77, src, len, c, hdr);
        ASSERT_TRUE(
                progress_until([&] { return ctx.completed && c.done; }, 60));
        EXPECT_EQ(1, ctx.consumed);
        EXPECT_EQ(UCS_OK, ctx.status);
        EXPECT_EQ(0x77u, ctx.stag);
        EXPECT_EQ(len, ctx.length);
        EXPECT_EQ(UCS_OK, c.status);
        EXPECT_TRUE(src.buf == dst.buf);
        unreg(src);
        unreg(dst);
    }
    EXPECT_EQ(5u, tm_stat("exp_rndv"));
    EXPECT_EQ(5u, tm_stat("rndv_fin", true));
    EXPECT_TRUE(m_tag_b.rndv.empty());
}

TEST_F(dc_strand_tag, rndv_unexpected_is_read_in_software_then_cancelled)
{
    open_tag_pair();
    const size_t len = 300000;
    region       src, dst;
    reg(src, len);
    reg(dst, len);
    fill(src, pattern(len, 17));
    test_comp            c;
    std::vector<uint8_t> hdr = pattern(18, 8);
    void                *op  = rndv_zcopy(0x99, src, len, c, hdr);
    ASSERT_TRUE(progress_until([&] { return m_tag_b.rndv.size() == 1; }));

    unexp_rndv &r = m_tag_b.rndv[0];
    EXPECT_EQ(0x99u, r.tag);
    EXPECT_EQ(hdr, r.header);
    EXPECT_EQ((uintptr_t)src.buf.data(), r.remote_addr);
    EXPECT_EQ(len, r.length);

    /* as UCP does: read it with the key the callback packed, tell the
     * sender in software, which cancels its operation */
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, r.rkey_buf.data(), &rkey));
    uct_ep_h  back = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    uct_iov_t iov  = {dst.buf.data(), len, dst.memh, 0, 1};
    test_comp g;
    comp_init(&g);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(back, &iov, 1, r.remote_addr,
                                               rkey.rkey, &g.uct));
    ASSERT_TRUE(progress_until([&] { return g.done != 0; }, 30));
    EXPECT_EQ(UCS_OK, g.status);
    EXPECT_TRUE(src.buf == dst.buf);
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(m_ep, op));
    flush(m_ep);
    EXPECT_EQ(0, c.done); /* a cancelled operation is not completed */
    EXPECT_EQ(1u, tm_stat("unexp_rndv"));
    uct_rkey_release(m_component, &rkey);
    unreg(src);
    unreg(dst);
}

TEST_F(dc_strand_tag, rndv_with_a_bad_key_fails_its_tag_only)
{
    open_tag_pair();
    region src, dst, dst2;
    reg(src, 8192);
    reg(dst, 8192);
    reg(dst2, 64);
    recv_ctx ctx, ctx2;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 1));
    ASSERT_EQ(UCS_OK, post_recv(ctx2, dst2, 2));

    /* a memory handle whose remote key the device does not know */
    strand_dev_mr_t bad = *static_cast<strand_dev_mr_t *>(src.memh);
    bad.rkey ^= 0x5a5a00;
    uct_iov_t iov = {src.buf.data(), 8192, &bad, 0, 1};
    test_comp c;
    comp_init(&c);
    ucs_status_ptr_t op = uct_ep_tag_rndv_zcopy(m_ep, 1, nullptr, 0, &iov, 1, 0,
                                                &c.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(progress_until([&] { return ctx.completed != 0; }, 30));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, ctx.status);
    EXPECT_EQ(0, c.done); /* no FIN: the sender's operation waits */
    EXPECT_EQ(1u, tm_stat("tag_errors"));

    /* the other tag and the endpoint go on */
    std::vector<uint8_t> d = pattern(60, 2);
    ASSERT_EQ(UCS_OK, eager_short(2, d));
    ASSERT_TRUE(progress_until([&] { return ctx2.completed != 0; }));
    EXPECT_EQ(UCS_OK, ctx2.status);
    EXPECT_TRUE(std::equal(d.begin(), d.end(), dst2.buf.begin()));
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(m_ep, op));
    unreg(src);
    unreg(dst);
    unreg(dst2);
}

/* Issue "tag matching": a sender that dies mid-rendezvous fails only the
 * receive it owned. The dying sender is an interface of its own whose DCT
 * goes away with it, as a dead process's does; the device's progress
 * thread is off, so nothing moves until the test progresses, and the
 * receiver's device finds the rendezvous only after the sender is gone.
 * Its READ then gets no answer: that receive fails with an error, the
 * other sender's rendezvous and eager message land, every byte checked. */
class dc_strand_tag_quiet : public dc_strand_tag {
protected:
    void SetUp() override
    {
        set_env("STRAND_SIM_PROGRESS_THREAD", "0");
        /* the sender must die while its data is still on the way: through
         * the ring, 16 MiB take thousands of packets; in one copy the READ
         * would be answered at once */
        set_env("STRAND_SIM_ONECOPY", "0");
        dc_strand_tag::SetUp();
    }
};

TEST_F(dc_strand_tag_quiet,
       a_sender_that_dies_mid_rendezvous_fails_only_its_receive)
{
    /* the request is on the wire: the receiver's device finds it once the
     * sender is gone; its READ then gets no answer */
    sender_goes_mid_rendezvous([] { return true; }, "tag_matching",
                               [this] { return tm_stat("tag_errors"); });
}
