/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware tag matching of the shared core (UCX_<TL>_TM_ENABLE=y) through
 * the public UCT tag API, on both transports (dc_strand/tag.*,
 * rc_strand/tag.*), in the scenarios of UCX's own test_tag.cc: eager short
 * / bcopy / zcopy, expected and unexpected, immediate data, tag masks,
 * truncation, software rendezvous requests, cancellation, the list limit,
 * phase synchronisation, active messages beside tags; every byte checked,
 * and the transport's tag_matching VFS file says which path each message
 * took. Each transport's own rendezvous (the receiver's device reads for
 * dc_strand, its transport for rc_strand) and addresses: test_dc_tag.cc,
 * test_rc_tag.cc.
 */
#include "tag_fixture.h"

class tag : public strand_on_tl<strand_tag> {};

TEST_P(tag, active_messages_carry_a_no_tag_header)
{
    open_tag_pair();
    region src;
    reg(src, 4000);
    fill(src, pattern(4000, 3));
    std::vector<uint8_t> small = pattern(20, 1), big = pattern(3000, 2);

    ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 0x1122334455667788ull, small.data(),
                                     small.size()));
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
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_am_zcopy(m_ep, 5, &hdr, sizeof(hdr), &iov, 1, 0, &c.uct));
    ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 3; }));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));

    std::vector<uint8_t> want(8 + small.size());
    uint64_t             h = 0x1122334455667788ull;
    memcpy(want.data(), &h, 8);
    memcpy(want.data() + 8, small.data(), small.size());
    EXPECT_EQ(want, m_b.am.msgs[0]);
    EXPECT_EQ(big, m_b.am.msgs[1]);
    want.assign((uint8_t *)&hdr, (uint8_t *)&hdr + 8);
    want.insert(want.end(), src.buf.begin(), src.buf.end());
    EXPECT_EQ(want, m_b.am.msgs[2]);
    EXPECT_TRUE(m_tag_b.eager.empty());
    EXPECT_EQ(0u, tm_stat("unexp_eager"));
    unreg(src);
}

/* ----------------------------------------------------------- eager */

TEST_P(tag, eager_expected_short_bcopy_zcopy)
{
    open_tag_pair();
    region   dst[3], src;
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

TEST_P(tag, eager_unexpected_short_bcopy_zcopy)
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

TEST_P(tag, immediate_data_expected_and_unexpected)
{
    open_tag_pair();
    region dst;
    reg(dst, 256);
    recv_ctx             ctx;
    std::vector<uint8_t> d   = pattern(100, 6);
    const uint64_t       imm = 0x123456789abcdef0ull;

    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 1));
    ASSERT_EQ((ssize_t)d.size(), eager_bcopy(1, d, imm));
    ASSERT_EQ((ssize_t)d.size(), eager_bcopy(2, d, 0xffffffff00000000ull));
    ASSERT_TRUE(progress_until(
            [&] { return ctx.completed && (m_tag_b.eager.size() == 1); }));
    EXPECT_EQ(imm, ctx.imm);
    EXPECT_EQ(0xffffffff00000000ull, m_tag_b.eager[0].imm);
    EXPECT_EQ(d, m_tag_b.eager[0].data);
    unreg(dst);
}

TEST_P(tag, tag_masks_and_first_posted_wins)
{
    open_tag_pair();
    region   dst[3];
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

TEST_P(tag, message_longer_than_the_tag_buffer_is_truncated)
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

TEST_P(tag, sw_rndv_request_expected_and_unexpected)
{
    open_tag_pair();
    region dst;
    reg(dst, 512);
    recv_ctx             ctx;
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
    ASSERT_TRUE(progress_until(
            [&] { return ctx.rndv && (m_tag_b.rndv.size() == 1); }));
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
TEST_P(tag, small_sw_rndv_request_comes_in_the_cqe)
{
    for (const char *rx_inline : {"y", "n"}) {
        set_tl_env("RX_INLINE", rx_inline);
        open_tag_pair();
        const bool in_cqe = !strcmp(rx_inline, "y");
        region     dst;
        reg(dst, 512);
        memset(dst.buf.data(), 0xee, dst.buf.size());
        recv_ctx             ctx;
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
                  ctx.rndv_flags)
                << rx_inline;
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

TEST_P(tag, recv_cancel_reports_canceled_or_nothing_when_forced)
{
    open_tag_pair();
    region   dst[2];
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

TEST_P(tag, cancel_after_a_match_completes_with_the_message)
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
        ASSERT_TRUE(progress_until([&] { return m_tag_b.eager.size() == 1; }));
        EXPECT_EQ(d, m_tag_b.eager[0].data);
    }
    /* nothing lost, nothing twice, and the list entry came back */
    flush(m_ep);
    progress_until([&] { return false; }, 0.2);
    EXPECT_EQ(1, ctx2.completed);
    EXPECT_NE(std::string::npos, vfs_read(m_b, "tag_matching").find("tags 0/"));
    unreg(dst);
}

/* ------------------------------------------------- many tags, phase */

TEST_P(tag, full_list_then_every_message_in_random_order)
{
    open_tag_pair();
    const unsigned n  = m_b.attr.cap.tag.recv.max_outstanding;
    const size_t   sz = 64;
    region         dst;
    reg(dst, n * sz);
    std::vector<recv_ctx> ctx(n);
    for (unsigned i = 0; i < n; ++i) {
        uct_iov_t iov = {dst.buf.data() + i * sz, sz, dst.memh, 0, 1};
        ctx[i].buffer = iov.buffer;
        ASSERT_EQ(UCS_OK,
                  uct_iface_tag_recv_zcopy(m_b.iface, 1000 + i, UINT64_MAX,
                                           &iov, 1, &ctx[i].uct))
                << i;
        if ((i % 64) == 63) {
            progress_until([&] { return false; }, 0.001);
        }
    }
    recv_ctx extra;
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post_recv(extra, dst, 1, UINT64_MAX, 8));
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
    ASSERT_TRUE(progress_until(
            [&] {
                return std::all_of(ctx.begin(), ctx.end(),
                                   [](const recv_ctx &c) {
                                       return c.completed;
                                   });
            },
            60));
    for (unsigned i = 0; i < n; ++i) {
        std::vector<uint8_t> d = pattern(sz, i);
        ASSERT_EQ(1000u + i, ctx[i].stag);
        ASSERT_TRUE(std::equal(d.begin(), d.end(), dst.buf.begin() + i * sz))
                << i;
    }
    EXPECT_TRUE(m_tag_b.eager.empty());
    /* the entries are free again: the list takes as many once more */
    for (unsigned i = 0; i < n; ++i) {
        ctx[i]        = recv_ctx();
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

TEST_P(tag, after_an_unexpected_message_matching_resumes_by_sync)
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

TEST_P(tag, ep_destroy_completes_its_rendezvous_sends)
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

TEST_P(tag, one_buffer_is_not_posted_twice)
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

/* Tag matching needs DEVX: the transport posts its list operations on the
 * SRQ's command QP, which only DEVX makes (as UCX's). A device with tags
 * but without DEVX (STRAND_SIM_CAPS devx=0) refuses y with a message that
 * names DEVX, not "no tag matching", and try opens without tags. */
TEST_P(tag, without_devx_tag_matching_is_refused_naming_devx)
{
    check_without_devx_refused_naming_it();
}
STRAND_UCT_INSTANTIATE(tag);
