/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand with hardware tag matching (UCX_DC_STRAND_TM_ENABLE=y), through
 * the public UCT tag API, in the scenarios of UCX's own test_tag.cc: eager
 * short / bcopy / zcopy and rendezvous, expected and unexpected, tag masks,
 * cancellation, many tags, the list limit, phase synchronisation, software
 * rendezvous, immediate data; every byte checked, and the transport's
 * tag_matching VFS file says which path each message took.
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
        p.eager_cb    = eager_unexp_cb;
        p.rndv_cb     = rndv_unexp_cb;
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
        ASSERT_TRUE(progress_until([&] {
            return tm_stat("dropped") == 1;
        }));
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
    EXPECT_EQ(0, m_a.iface_addr[3]);  /* its address says: no tags */
}

TEST_F(dc_strand_tag, on_and_off_do_not_reach_each_other)
{
    m_hook_target = &m_tag_a;
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    set_env("UCX_DC_STRAND_TM_ENABLE", "n");
    ASSERT_EQ(UCS_OK, open_iface(m_b));
    EXPECT_FALSE(uct_iface_is_reachable(
            m_a.iface, (const uct_device_addr_t*)m_b.dev_addr.data(),
            (const uct_iface_addr_t*)m_b.iface_addr.data()));
    uct_ep_params_t params;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_a.iface;
    params.dev_addr   = (const uct_device_addr_t*)m_b.dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)m_b.iface_addr.data();
    uct_ep_h ep       = nullptr;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));
}

TEST_F(dc_strand_tag, active_messages_carry_a_no_tag_header)
{
    open_tag_pair();
    region src;
    reg(src, 4000);
    fill(src, pattern(4000, 3));
    std::vector<uint8_t> small = pattern(20, 1), big = pattern(3000, 2);

    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 0x1122334455667788ull,
                                     small.data(), small.size()));
    ssize_t n = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until([&] {
        n = uct_ep_am_bcopy(m_ep, 5, pack_cb, &big, 0);
        return n != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ((ssize_t)big.size(), n);
    uct_iov_t iov = {src.buf.data(), 4000, src.memh, 0, 1};
    test_comp c;
    comp_init(&c);
    uint64_t hdr = 42;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 5, &hdr, sizeof(hdr),
                                              &iov, 1, 0, &c.uct));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 3; }));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));

    std::vector<uint8_t> want(8 + small.size());
    uint64_t h = 0x1122334455667788ull;
    memcpy(want.data(), &h, 8);
    memcpy(want.data() + 8, small.data(), small.size());
    EXPECT_EQ(want, m_b.am.msgs[0]);
    EXPECT_EQ(big, m_b.am.msgs[1]);
    want.assign((uint8_t*)&hdr, (uint8_t*)&hdr + 8);
    want.insert(want.end(), src.buf.begin(), src.buf.end());
    EXPECT_EQ(want, m_b.am.msgs[2]);
    EXPECT_TRUE(m_tag_b.eager.empty());
    EXPECT_EQ(0u, tm_stat("unexp_eager"));
    unreg(src);
}

/* ----------------------------------------------------------- eager */

TEST_F(dc_strand_tag, eager_expected_short_bcopy_zcopy)
{
    open_tag_pair();
    region dst[3], src;
    recv_ctx ctx[3];
    for (auto &d : dst) {
        reg(d, 9000); /* room for max_bcopy and one byte more */
    }
    reg(src, 8000);
    fill(src, pattern(8000, 9));
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, post_recv(ctx[i], dst[i], 0x100 + i));
    }

    std::vector<uint8_t> s = pattern(m_a.attr.cap.tag.eager.max_short, 4);
    std::vector<uint8_t> b = pattern(m_a.attr.cap.tag.eager.max_bcopy, 5);
    ASSERT_EQ(UCS_OK, eager_short(0x100, s));
    ASSERT_EQ((ssize_t)b.size(), eager_bcopy(0x101, b));
    eager_zcopy(0x102, src, 8000);
    ASSERT_TRUE(progress_until([&] {
        return ctx[0].completed && ctx[1].completed && ctx[2].completed;
    }));

    const std::vector<uint8_t> *want[3] = {&s, &b, &src.buf};
    for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(1, ctx[i].consumed);
        EXPECT_EQ(1, ctx[i].completed);
        EXPECT_EQ(UCS_OK, ctx[i].status);
        EXPECT_EQ(0x100u + i, ctx[i].stag);
        EXPECT_EQ(0u, ctx[i].imm);
        ASSERT_EQ(want[i]->size(), ctx[i].length);
        EXPECT_TRUE(std::equal(want[i]->begin(), want[i]->end(),
                               dst[i].buf.begin()));
        /* nothing written past the message */
        EXPECT_EQ(0, dst[i].buf[want[i]->size()]);
    }
    EXPECT_TRUE(m_tag_b.eager.empty());
    EXPECT_EQ(3u, tm_stat("exp_eager"));
    EXPECT_EQ(3u, tm_stat("tags_posted"));
    for (auto &d : dst) {
        unreg(d);
    }
    unreg(src);
}

TEST_F(dc_strand_tag, eager_unexpected_short_bcopy_zcopy)
{
    open_tag_pair();
    region src;
    reg(src, 5000);
    fill(src, pattern(5000, 11));
    std::vector<uint8_t> s = pattern(50, 1), b = pattern(7000, 2);

    ASSERT_EQ(UCS_OK, eager_short(7, s));
    ASSERT_EQ((ssize_t)b.size(), eager_bcopy(8, b));
    eager_zcopy(9, src, 5000);
    ASSERT_TRUE(progress_until([&] { return m_tag_b.eager.size() == 3; }));

    EXPECT_EQ(7u, m_tag_b.eager[0].tag);
    EXPECT_EQ(s, m_tag_b.eager[0].data);
    EXPECT_EQ(8u, m_tag_b.eager[1].tag);
    EXPECT_EQ(b, m_tag_b.eager[1].data);
    EXPECT_EQ(9u, m_tag_b.eager[2].tag);
    EXPECT_EQ(src.buf, m_tag_b.eager[2].data);
    for (auto &m : m_tag_b.eager) {
        EXPECT_EQ(0u, m.imm);
        EXPECT_TRUE(m.flags & UCT_CB_PARAM_FLAG_DESC);
        EXPECT_TRUE(m.flags & UCT_CB_PARAM_FLAG_FIRST);
        EXPECT_FALSE(m.flags & UCT_CB_PARAM_FLAG_MORE);
    }
    EXPECT_EQ(3u, tm_stat("unexp_eager"));
    EXPECT_TRUE(m_b.am.msgs.empty());
    unreg(src);
}

TEST_F(dc_strand_tag, immediate_data_expected_and_unexpected)
{
    open_tag_pair();
    region dst;
    reg(dst, 256);
    recv_ctx ctx;
    std::vector<uint8_t> d = pattern(100, 6);
    const uint64_t imm = 0x123456789abcdef0ull;

    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 1));
    ASSERT_EQ((ssize_t)d.size(), eager_bcopy(1, d, imm));
    ASSERT_EQ((ssize_t)d.size(), eager_bcopy(2, d, 0xffffffff00000000ull));
    ASSERT_TRUE(progress_until([&] {
        return ctx.completed && (m_tag_b.eager.size() == 1);
    }));
    EXPECT_EQ(imm, ctx.imm);
    EXPECT_EQ(0xffffffff00000000ull, m_tag_b.eager[0].imm);
    EXPECT_EQ(d, m_tag_b.eager[0].data);
    unreg(dst);
}

TEST_F(dc_strand_tag, tag_masks_and_first_posted_wins)
{
    open_tag_pair();
    region dst[3];
    recv_ctx ctx[3];
    for (auto &d : dst) {
        reg(d, 64);
    }
    /* (tag & mask) == entry tag */
    ASSERT_EQ(UCS_OK, post_recv(ctx[0], dst[0], 0x1200, 0xff00));
    ASSERT_EQ(UCS_OK, post_recv(ctx[1], dst[1], 0x1200, 0xff00));
    ASSERT_EQ(UCS_OK, post_recv(ctx[2], dst[2], 0x00ab, 0x00ff));
    std::vector<uint8_t> m1 = pattern(10, 1), m2 = pattern(11, 2),
                         m3 = pattern(12, 3), m4 = pattern(13, 4);
    ASSERT_EQ(UCS_OK, eager_short(0x13ab, m1)); /* entry 2 only */
    ASSERT_EQ(UCS_OK, eager_short(0x12ab, m2)); /* entries 0, 1: first */
    ASSERT_EQ(UCS_OK, eager_short(0x12cd, m3)); /* entry 1 */
    ASSERT_EQ(UCS_OK, eager_short(0x11cd, m4)); /* none */
    ASSERT_TRUE(progress_until([&] {
        return ctx[0].completed && ctx[1].completed && ctx[2].completed &&
               (m_tag_b.eager.size() == 1);
    }));
    EXPECT_EQ(0x12abu, ctx[0].stag);
    EXPECT_TRUE(std::equal(m2.begin(), m2.end(), dst[0].buf.begin()));
    EXPECT_EQ(0x12cdu, ctx[1].stag);
    EXPECT_TRUE(std::equal(m3.begin(), m3.end(), dst[1].buf.begin()));
    EXPECT_EQ(0x13abu, ctx[2].stag);
    EXPECT_TRUE(std::equal(m1.begin(), m1.end(), dst[2].buf.begin()));
    EXPECT_EQ(0x11cdu, m_tag_b.eager[0].tag);
    EXPECT_EQ(m4, m_tag_b.eager[0].data);
    for (auto &d : dst) {
        unreg(d);
    }
}

TEST_F(dc_strand_tag, message_longer_than_the_tag_buffer_is_truncated)
{
    open_tag_pair();
    region dst;
    reg(dst, 256);
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 5, UINT64_MAX, 100));
    std::vector<uint8_t> d = pattern(200, 1);
    ASSERT_EQ((ssize_t)d.size(), eager_bcopy(5, d));
    ASSERT_TRUE(progress_until([&] { return ctx.completed != 0; }));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx.status);
    /* nothing past the posted 100 bytes */
    EXPECT_TRUE(std::all_of(dst.buf.begin() + 100, dst.buf.end(),
                            [](uint8_t x) { return x == 0; }));
    unreg(dst);
}

/* ------------------------------------------------------ rendezvous */

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
        test_comp c;
        std::vector<uint8_t> hdr = pattern(18, 3);
        rndv_zcopy(0x77, src, len, c, hdr);
        ASSERT_TRUE(progress_until([&] {
            return ctx.completed && c.done;
        }, 60));
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
    region src, dst;
    reg(src, len);
    reg(dst, len);
    fill(src, pattern(len, 17));
    test_comp c;
    std::vector<uint8_t> hdr = pattern(18, 8);
    void *op = rndv_zcopy(0x99, src, len, c, hdr);
    ASSERT_TRUE(progress_until([&] { return m_tag_b.rndv.size() == 1; }));

    unexp_rndv &r = m_tag_b.rndv[0];
    EXPECT_EQ(0x99u, r.tag);
    EXPECT_EQ(hdr, r.header);
    EXPECT_EQ((uintptr_t)src.buf.data(), r.remote_addr);
    EXPECT_EQ(len, r.length);

    /* as UCP does: read it with the key the callback packed, tell the
     * sender in software, which cancels its operation */
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, r.rkey_buf.data(),
                                      &rkey));
    uct_ep_h back = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    uct_iov_t iov = {dst.buf.data(), len, dst.memh, 0, 1};
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
    strand_dev_mr_t bad = *static_cast<strand_dev_mr_t*>(src.memh);
    bad.rkey ^= 0x5a5a00;
    uct_iov_t iov = {src.buf.data(), 8192, &bad, 0, 1};
    test_comp c;
    comp_init(&c);
    ucs_status_ptr_t op = uct_ep_tag_rndv_zcopy(m_ep, 1, nullptr, 0, &iov, 1,
                                                0, &c.uct);
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

TEST_F(dc_strand_tag, sw_rndv_request_expected_and_unexpected)
{
    open_tag_pair();
    region dst;
    reg(dst, 512);
    recv_ctx ctx;
    std::vector<uint8_t> h1 = pattern(200, 1), h2 = pattern(300, 2);
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 3));
    ucs_status_t s = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until([&] {
        s = uct_ep_tag_rndv_request(m_ep, 3, h1.data(), h1.size(), 0);
        return s != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_OK, s);
    ASSERT_TRUE(progress_until([&] {
        s = uct_ep_tag_rndv_request(m_ep, 4, h2.data(), h2.size(), 0);
        return s != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_TRUE(progress_until([&] {
        return ctx.rndv && (m_tag_b.rndv.size() == 1);
    }));
    EXPECT_EQ(0, ctx.completed);
    EXPECT_EQ(3u, ctx.stag);
    EXPECT_EQ(h1, ctx.rndv_header);
    EXPECT_EQ(0u, ctx.rndv_flags); /* too large for the CQE */
    EXPECT_EQ(4u, m_tag_b.rndv[0].tag);
    EXPECT_EQ(h2, m_tag_b.rndv[0].header);
    EXPECT_EQ(0u, m_tag_b.rndv[0].remote_addr);
    EXPECT_EQ(1u, tm_stat("exp_sw_rndv"));
    EXPECT_EQ(1u, tm_stat("unexp_sw_rndv"));
    unreg(dst);
}

/* A request of up to 64 bytes (UCP's is 59) comes in the CQE: the header
 * the user gets is the CQE's copy (UCT_TAG_RECV_CB_INLINE_DATA) and the
 * tag's buffer is not written, so a transfer still writing into that
 * buffer for an earlier receive cannot damage it (UCX >= 1.18's UCP posts
 * one buffer for several receives). RX_INLINE=n: the buffer has it. */
TEST_F(dc_strand_tag, small_sw_rndv_request_comes_in_the_cqe)
{
    for (const char *rx_inline : {"y", "n"}) {
        set_env("UCX_DC_STRAND_RX_INLINE", rx_inline);
        open_tag_pair();
        const bool in_cqe = !strcmp(rx_inline, "y");
        region dst;
        reg(dst, 512);
        memset(dst.buf.data(), 0xee, dst.buf.size());
        recv_ctx ctx;
        std::vector<uint8_t> h = pattern(59, 7);
        ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 3));
        ucs_status_t s = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            s = uct_ep_tag_rndv_request(m_ep, 3, h.data(), h.size(), 0);
            return s != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, s);
        ASSERT_TRUE(progress_until([&] { return ctx.rndv != 0; }));
        EXPECT_EQ(h, ctx.rndv_header) << rx_inline;
        EXPECT_EQ(in_cqe ? (unsigned)UCT_TAG_RECV_CB_INLINE_DATA : 0u,
                  ctx.rndv_flags) << rx_inline;
        EXPECT_EQ(in_cqe, std::all_of(dst.buf.begin(), dst.buf.end(),
                                      [](uint8_t x) { return x == 0xee; }))
            << rx_inline;
        /* an eager message of 40 bytes too: the user copies it out */
        recv_ctx ctx2;
        ASSERT_EQ(UCS_OK, post_recv(ctx2, dst, 4));
        std::vector<uint8_t> d = pattern(40, 8);
        ASSERT_EQ(UCS_OK, eager_short(4, d));
        ASSERT_TRUE(progress_until([&] { return ctx2.completed != 0; }));
        EXPECT_EQ(in_cqe ? 1 : 0, ctx2.in_cqe) << rx_inline;
        EXPECT_TRUE(std::equal(d.begin(), d.end(), dst.buf.begin()));
        unreg(dst);
        for (auto ep : m_eps) {
            uct_ep_destroy(ep);
        }
        m_eps.clear();
        uct_iface_close(m_a.iface);
        uct_iface_close(m_b.iface);
        m_a.iface = m_b.iface = nullptr;
    }
}

/* ------------------------------------------------------ cancelling */

TEST_F(dc_strand_tag, recv_cancel_reports_canceled_or_nothing_when_forced)
{
    open_tag_pair();
    region dst[2];
    recv_ctx ctx[2];
    for (int i = 0; i < 2; ++i) {
        reg(dst[i], 64);
        ASSERT_EQ(UCS_OK, post_recv(ctx[i], dst[i], 10 + i));
    }
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_b.iface, &ctx[0].uct, 0));
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_b.iface, &ctx[1].uct, 1));
    ASSERT_TRUE(progress_until([&] { return ctx[0].completed != 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, ctx[0].status);
    /* what was posted, as UCX's own transports report a cancelled
     * receive (its uct test_tag.tag_cancel_noforce checks it) */
    EXPECT_EQ(10u, ctx[0].stag);
    EXPECT_EQ(64u, ctx[0].length);
    /* both tags are gone from the device: messages for them are
     * unexpected, and the forced one never hears of anything */
    std::vector<uint8_t> d = pattern(20, 1);
    ASSERT_EQ(UCS_OK, eager_short(10, d));
    ASSERT_EQ(UCS_OK, eager_short(11, d));
    ASSERT_TRUE(progress_until([&] { return m_tag_b.eager.size() == 2; }));
    EXPECT_EQ(1, ctx[0].completed);
    EXPECT_EQ(0, ctx[1].completed);
    EXPECT_EQ(0, ctx[1].consumed);
    EXPECT_EQ(2u, tm_stat("tags_canceled"));
    for (auto &r : dst) {
        unreg(r);
    }
}

TEST_F(dc_strand_tag, cancel_after_a_match_completes_with_the_message)
{
    open_tag_pair();
    region dst;
    reg(dst, 64);
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 21));
    std::vector<uint8_t> d = pattern(30, 5);
    ASSERT_EQ(UCS_OK, eager_short(21, d));
    /* the device matched it; software has not seen the completion yet
     * when it asks to cancel: the REMOVE loses, the message is reported */
    ASSERT_TRUE(progress_until([&] { return ctx.completed != 0; }));
    recv_ctx ctx2;
    ASSERT_EQ(UCS_OK, post_recv(ctx2, dst, 22));
    ASSERT_EQ(UCS_OK, eager_short(22, d));
    /* let the device match without the receiver polling its CQ */
    usleep(100000);
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_b.iface, &ctx2.uct, 0));
    ASSERT_TRUE(progress_until([&] { return ctx2.completed != 0; }));
    EXPECT_EQ(1, ctx2.completed);
    if (ctx2.status == UCS_OK) {
        EXPECT_EQ(d.size(), ctx2.length);
        EXPECT_TRUE(std::equal(d.begin(), d.end(), dst.buf.begin()));
    } else {
        /* the REMOVE won: then the message must arrive unexpected */
        EXPECT_EQ(UCS_ERR_CANCELED, ctx2.status);
        ASSERT_TRUE(progress_until([&] {
            return m_tag_b.eager.size() == 1;
        }));
        EXPECT_EQ(d, m_tag_b.eager[0].data);
    }
    /* nothing lost, nothing twice, and the list entry came back */
    flush(m_ep);
    progress_until([&] { return false; }, 0.2);
    EXPECT_EQ(1, ctx2.completed);
    EXPECT_NE(std::string::npos,
              vfs_read(m_b, "tag_matching").find("tags 0/"));
    unreg(dst);
}

/* ------------------------------------------------- many tags, phase */

TEST_F(dc_strand_tag, full_list_then_every_message_in_random_order)
{
    open_tag_pair();
    const unsigned n = m_b.attr.cap.tag.recv.max_outstanding;
    const size_t sz  = 64;
    region dst;
    reg(dst, n * sz);
    std::vector<recv_ctx> ctx(n);
    for (unsigned i = 0; i < n; ++i) {
        uct_iov_t iov = {dst.buf.data() + i * sz, sz, dst.memh, 0, 1};
        ctx[i].buffer = iov.buffer;
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(m_b.iface, 1000 + i,
                                                   UINT64_MAX, &iov, 1,
                                                   &ctx[i].uct))
            << i;
        if ((i % 64) == 63) {
            progress_until([&] { return false; }, 0.001);
        }
    }
    recv_ctx extra;
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post_recv(extra, dst, 1, UINT64_MAX,
                                               8));
    EXPECT_EQ(1u, tm_stat("list_full"));

    std::vector<unsigned> order(n);
    for (unsigned i = 0; i < n; ++i) {
        order[i] = i;
    }
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    for (unsigned i : order) {
        std::vector<uint8_t> d = pattern(sz, i);
        ASSERT_EQ(UCS_OK, eager_short(1000 + i, d));
    }
    ASSERT_TRUE(progress_until([&] {
        return std::all_of(ctx.begin(), ctx.end(),
                           [](const recv_ctx &c) { return c.completed; });
    }, 60));
    for (unsigned i = 0; i < n; ++i) {
        std::vector<uint8_t> d = pattern(sz, i);
        ASSERT_EQ(1000u + i, ctx[i].stag);
        ASSERT_TRUE(std::equal(d.begin(), d.end(),
                               dst.buf.begin() + i * sz)) << i;
    }
    EXPECT_TRUE(m_tag_b.eager.empty());
    /* the entries are free again: the list takes as many once more */
    for (unsigned i = 0; i < n; ++i) {
        ctx[i] = recv_ctx();
        uct_iov_t iov = {dst.buf.data() + i * sz, sz, dst.memh, 0, 1};
        ctx[i].buffer = iov.buffer;
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(m_b.iface, i, UINT64_MAX,
                                                   &iov, 1, &ctx[i].uct));
        if ((i % 64) == 63) {
            progress_until([&] { return false; }, 0.001);
        }
    }
    for (unsigned i = 0; i < n; ++i) {
        uct_iface_tag_recv_cancel(m_b.iface, &ctx[i].uct, 1);
    }
    progress_until([&] { return false; }, 0.5);
    unreg(dst);
}

TEST_F(dc_strand_tag, after_an_unexpected_message_matching_resumes_by_sync)
{
    open_tag_pair();
    region dst;
    reg(dst, 64);
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 0x55));
    std::vector<uint8_t> u = pattern(8, 1), e = pattern(9, 2);
    /* an unexpected message: the device stops matching until software
     * reports it handled it */
    ASSERT_EQ(UCS_OK, eager_short(0x44, u));
    ASSERT_TRUE(progress_until([&] { return m_tag_b.eager.size() == 1; }));
    /* the transport reported it (a NOP list operation): the tag posted
     * before still matches */
    ASSERT_TRUE(progress_until([&] { return tm_stat("syncs") >= 1; }));
    ASSERT_EQ(UCS_OK, eager_short(0x55, e));
    ASSERT_TRUE(progress_until([&] { return ctx.completed != 0; }));
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_TRUE(std::equal(e.begin(), e.end(), dst.buf.begin()));
    EXPECT_EQ(1u, m_tag_b.eager.size());
    unreg(dst);
}

TEST_F(dc_strand_tag, ep_destroy_completes_its_rendezvous_sends)
{
    open_tag_pair();
    region src;
    reg(src, 4096);
    test_comp c;
    rndv_zcopy(0x31, src, 4096, c, {});
    ASSERT_TRUE(progress_until([&] { return m_tag_b.rndv.size() == 1; }));
    uct_ep_destroy(m_ep);
    m_eps.clear();
    EXPECT_EQ(1, c.done);
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    unreg(src);
}

TEST_F(dc_strand_tag, one_buffer_is_not_posted_twice)
{
    open_tag_pair();
    region dst;
    reg(dst, 128);
    recv_ctx a, b, c;
    ASSERT_EQ(UCS_OK, post_recv(a, dst, 1));
    /* the same buffer under another tag: two matches would write it */
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_recv(b, dst, 2));
    std::vector<uint8_t> d = pattern(16, 1);
    ASSERT_EQ(UCS_OK, eager_short(1, d));
    ASSERT_TRUE(progress_until([&] { return a.completed != 0; }));
    /* completed: the user owns it again and may post it anew */
    EXPECT_EQ(UCS_OK, post_recv(c, dst, 2));
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_b.iface, &c.uct, 1));
    unreg(dst);
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

TEST_F(dc_strand_tag_quiet, a_sender_that_dies_mid_rendezvous_fails_only_its_receive)
{
    /* the request is on the wire: the receiver's device finds it once the
     * sender is gone; its READ then gets no answer */
    sender_goes_mid_rendezvous([] { return true; }, "tag_matching",
                               [this] { return tm_stat("tag_errors"); });
}

/* Tag matching needs DEVX: the transport posts its list operations on the
 * SRQ's command QP, which only DEVX makes (as UCX's). A device with tags
 * but without DEVX (STRAND_SIM_CAPS devx=0) refuses y with a message that
 * names DEVX, not "no tag matching", and try opens without tags. */
TEST_F(dc_strand_tag, without_devx_tag_matching_is_refused_naming_devx)
{
    check_without_devx_refused_naming_it();
}
