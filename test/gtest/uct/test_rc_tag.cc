/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand with hardware tag matching (UCX_RC_STRAND_TM_ENABLE=y): the
 * device matches, and a rendezvous is read by the receiver's transport on
 * the responder QP it arrived on, its FIN fenced behind the READ
 * (rc/rc_rndv.h). With integrity, a bad block stops the pipelining QP in
 * SQD before the FIN; the transport cancels the FIN, reads the bad piece
 * again and sends a FIN of its own (seed page
 * mlx5dv_qp_cancel_posted_send_wrs(3), in the transport). Every byte is
 * checked; the tag_matching, rendezvous and integrity VFS files say which
 * path each message took.
 */
#include "tag_fixture.h"

#include <regex>

class rc_strand_tag : public strand_tag {
protected:
    void SetUp() override
    {
        m_tl = "rc_strand";
        strand_tag::SetUp();
    }

    /* a counter of b's 'rendezvous' VFS file */
    uint64_t rndv_stat(const char *name)
    {
        std::string text = vfs_read(m_b, "rendezvous");
        std::smatch m;
        if (!std::regex_search(text, m,
                               std::regex(std::string("(^|\n)") + name +
                                          " (\\d+)"))) {
            ADD_FAILURE() << "no " << name << " in:\n" << text;
            return 0;
        }
        return std::stoull(m[2]);
    }

    /* "N bad reads" / "N read again" ... of b's 'integrity' VFS file */
    uint64_t integrity_stat(const char *what)
    {
        std::string text = vfs_read(m_b, "integrity");
        std::smatch m;
        if (!std::regex_search(text, m,
                               std::regex(std::string("(\\d+) ") + what))) {
            ADD_FAILURE() << "no '" << what << "' in:\n" << text;
            return 0;
        }
        return std::stoull(m[1]);
    }

    /* integrity on both sides, the device's faults, reopened MD */
    void integrity(const char *kind, const char *faults)
    {
        set_env("UCX_RC_STRAND_INTEGRITY", kind);
        set_env("STRAND_SIM_FAULTS", faults);
        ASSERT_EQ(UCS_OK, open_md()); /* the MD reads both when it opens */
    }

    /* n rendezvous of len bytes at once on one connection, each into its
     * own receive; every byte checked; the senders' completions too */
    void rndv_round(size_t len, unsigned n, ucs_status_t want = UCS_OK)
    {
        std::vector<region>    src(n), dst(n);
        std::vector<recv_ctx>  ctx(n);
        std::vector<test_comp> comp(n);
        for (unsigned i = 0; i < n; ++i) {
            reg(src[i], len);
            reg(dst[i], len);
            fill(src[i], pattern(len, 100 + i));
            ASSERT_EQ(UCS_OK, post_recv(ctx[i], dst[i], 0x500 + i));
        }
        std::vector<uint8_t> hdr = pattern(17, 4);
        for (unsigned i = 0; i < n; ++i) {
            rndv_zcopy(0x500 + i, src[i], len, comp[i], hdr);
        }
        ASSERT_TRUE(progress_until(
                [&] {
                    for (unsigned i = 0; i < n; ++i) {
                        if (!ctx[i].completed || !comp[i].done) {
                            return false;
                        }
                    }
                    return true;
                },
                120));
        for (unsigned i = 0; i < n; ++i) {
            SCOPED_TRACE(i);
            EXPECT_EQ(1, ctx[i].consumed);
            EXPECT_EQ(1, ctx[i].completed);
            EXPECT_EQ(want, ctx[i].status);
            EXPECT_EQ(want, comp[i].status); /* the FIN says so */
            if (want == UCS_OK) {
                EXPECT_EQ(0x500u + i, ctx[i].stag);
                EXPECT_EQ(len, ctx[i].length);
                EXPECT_TRUE(src[i].buf == dst[i].buf);
            }
        }
        for (unsigned i = 0; i < n; ++i) {
            unreg(src[i]);
            unreg(dst[i]);
        }
    }
};

TEST_F(rc_strand_tag, capabilities)
{
    open_tag_pair();
    const uct_iface_attr_t &a = m_a.attr;
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_SHORT);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_ZCOPY);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);
    EXPECT_EQ(1023u, a.cap.tag.recv.max_outstanding);
    EXPECT_EQ(0u, a.cap.tag.recv.min_recv);
    /* a request of 128 bytes: less its 20 and the packed key's 8 */
    EXPECT_EQ(100u, a.cap.tag.rndv.max_hdr);
    EXPECT_EQ(1u << 30, a.cap.tag.rndv.max_zcopy);
}

/* A rendezvous request lands in the tag's buffer: tag buffers smaller than
 * one are posted as bounce slots of the transport; eager messages are
 * copied out of them, a rendezvous is read straight into the user's
 * buffer, and a message longer than the user's buffer is truncated with
 * nothing written past it. */
TEST_F(rc_strand_tag, small_tag_buffers_through_bounce_slots)
{
    open_tag_pair();
    region src, dst[5];
    reg(src, 200);
    fill(src, pattern(200, 3));
    for (auto &d : dst) {
        reg(d, 200);
    }
    recv_ctx ctx[5];
    ASSERT_EQ(UCS_OK, post_recv(ctx[0], dst[0], 1, UINT64_MAX, 1));
    ASSERT_EQ(UCS_OK, post_recv(ctx[1], dst[1], 2, UINT64_MAX, 100));
    ASSERT_EQ(UCS_OK, post_recv(ctx[2], dst[2], 3, UINT64_MAX, 1));
    ASSERT_EQ(UCS_OK, post_recv(ctx[3], dst[3], 4, UINT64_MAX, 100));
    ASSERT_EQ(UCS_OK, post_recv(ctx[4], dst[4], 5, UINT64_MAX, 100));
    std::vector<uint8_t> one = pattern(1, 9), hundred = pattern(100, 8),
                         more = pattern(120, 7);
    ASSERT_EQ(UCS_OK, eager_short(1, one));
    ASSERT_EQ((ssize_t)hundred.size(), eager_bcopy(2, hundred));
    test_comp c3, c4;
    rndv_zcopy(3, src, 1, c3, {});
    rndv_zcopy(4, src, 100, c4, pattern(30, 1));
    ASSERT_EQ((ssize_t)more.size(), eager_bcopy(5, more));
    ASSERT_TRUE(progress_until([&] {
        for (auto &c : ctx) {
            if (!c.completed) {
                return false;
            }
        }
        return c3.done && c4.done;
    }));
    EXPECT_EQ(UCS_OK, ctx[0].status);
    EXPECT_EQ(1u, ctx[0].length);
    EXPECT_EQ(one[0], dst[0].buf[0]);
    EXPECT_EQ(UCS_OK, ctx[1].status);
    EXPECT_TRUE(std::equal(hundred.begin(), hundred.end(), dst[1].buf.begin()));
    EXPECT_EQ(UCS_OK, ctx[2].status);
    EXPECT_EQ(1u, ctx[2].length);
    EXPECT_EQ(src.buf[0], dst[2].buf[0]);
    EXPECT_EQ(UCS_OK, ctx[3].status);
    EXPECT_TRUE(std::equal(src.buf.begin(), src.buf.begin() + 100,
                           dst[3].buf.begin()));
    EXPECT_EQ(UCS_OK, c3.status);
    EXPECT_EQ(UCS_OK, c4.status);
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx[4].status);
    for (unsigned i = 0; i < 5; ++i) {
        size_t posted = (i % 2 == 0 && i < 4) ? 1 : 100;
        EXPECT_TRUE(std::all_of(dst[i].buf.begin() + posted, dst[i].buf.end(),
                                [](uint8_t x) { return x == 0; }))
                << i;
    }
    EXPECT_TRUE(std::all_of(dst[4].buf.begin(), dst[4].buf.end(),
                            [](uint8_t x) { return x == 0; }));
    EXPECT_EQ(2u, tm_stat("exp_rts"));
    unreg(src);
    for (auto &d : dst) {
        unreg(d);
    }
}

TEST_F(rc_strand_tag, eager_expected_and_unexpected)
{
    open_tag_pair();
    region   dst[2];
    recv_ctx ctx[2];
    for (auto &d : dst) {
        reg(d, 9000);
    }
    ASSERT_EQ(UCS_OK, post_recv(ctx[0], dst[0], 0x10));
    ASSERT_EQ(UCS_OK, post_recv(ctx[1], dst[1], 0x11));
    std::vector<uint8_t> s = pattern(m_a.attr.cap.tag.eager.max_short, 1);
    std::vector<uint8_t> b = pattern(m_a.attr.cap.tag.eager.max_bcopy, 2);
    std::vector<uint8_t> u = pattern(300, 3);
    ASSERT_EQ(UCS_OK, eager_short(0x10, s));
    ASSERT_EQ((ssize_t)b.size(), eager_bcopy(0x11, b, 0xabcdef0011ull));
    ASSERT_EQ((ssize_t)u.size(), eager_bcopy(0x12, u));
    ASSERT_TRUE(progress_until([&] {
        return ctx[0].completed && ctx[1].completed &&
               (m_tag_b.eager.size() == 1);
    }));
    EXPECT_EQ(UCS_OK, ctx[0].status);
    EXPECT_EQ(s.size(), ctx[0].length);
    EXPECT_TRUE(std::equal(s.begin(), s.end(), dst[0].buf.begin()));
    EXPECT_EQ(b.size(), ctx[1].length);
    EXPECT_EQ(0xabcdef0011ull, ctx[1].imm);
    EXPECT_TRUE(std::equal(b.begin(), b.end(), dst[1].buf.begin()));
    EXPECT_EQ(0x12u, m_tag_b.eager[0].tag);
    EXPECT_EQ(u, m_tag_b.eager[0].data);
    EXPECT_EQ(2u, tm_stat("exp_eager"));
    EXPECT_EQ(1u, tm_stat("unexp_eager"));
    for (auto &d : dst) {
        unreg(d);
    }
}

/* The receiver's transport reads: every size from the smallest buffer to
 * 16 MiB, the FIN in the READ's doorbell (nothing to check here: the FIN
 * always goes with the READ). */
TEST_F(rc_strand_tag, rndv_expected_the_receivers_transport_reads)
{
    open_tag_pair();
    unsigned n = 0;
    for (size_t len : {(size_t)1, (size_t)4096, (size_t)65537,
                       (size_t)(1 << 20), (size_t)(16 << 20)}) {
        SCOPED_TRACE(len);
        ASSERT_NO_FATAL_FAILURE(rndv_round(len, 1));
        ++n;
    }
    EXPECT_EQ(n, tm_stat("exp_rts"));
    EXPECT_EQ(0u, tm_stat("exp_rndv")); /* the device read nothing */
    EXPECT_EQ(n, tm_stat("rndv_fin", true));
    EXPECT_EQ(n, rndv_stat("xfers"));
    EXPECT_EQ(n, rndv_stat("fins"));
    EXPECT_EQ(n, rndv_stat("fins_pipelined"));
    EXPECT_EQ(0u, rndv_stat("stops"));
    EXPECT_TRUE(m_tag_b.rndv.empty());
}

TEST_F(rc_strand_tag, rndv_many_at_once_on_one_qp)
{
    open_tag_pair();
    ASSERT_NO_FATAL_FAILURE(rndv_round(300000, 24));
    EXPECT_EQ(24u, rndv_stat("xfers"));
    EXPECT_EQ(24u, tm_stat("rndv_fin", true));
}

TEST_F(rc_strand_tag, rndv_unexpected_is_read_by_the_user_then_cancelled)
{
    open_tag_pair();
    const size_t len = 300000;
    region       src, dst;
    reg(src, len);
    reg(dst, len);
    fill(src, pattern(len, 17));
    test_comp            c;
    std::vector<uint8_t> hdr = pattern(17, 8);
    void                *op  = rndv_zcopy(0x99, src, len, c, hdr);
    ASSERT_TRUE(progress_until([&] { return m_tag_b.rndv.size() == 1; }));

    unexp_rndv &r = m_tag_b.rndv[0];
    EXPECT_EQ(0x99u, r.tag);
    EXPECT_EQ(hdr, r.header);
    EXPECT_EQ((uintptr_t)src.buf.data(), r.remote_addr);
    EXPECT_EQ(len, r.length);
    /* as UCP does: read it with the key the callback gave, tell the
     * sender in software, which cancels its operation */
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, r.rkey_buf.data(), &rkey));
    uct_ep_h  back = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    uct_iov_t iov  = {dst.buf.data(), len, dst.memh, 0, 1};
    test_comp g;
    comp_init(&g);
    ucs_status_t s = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until([&] {
        s = uct_ep_get_zcopy(back, &iov, 1, r.remote_addr, rkey.rkey, &g.uct);
        return s != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_INPROGRESS, s);
    ASSERT_TRUE(progress_until([&] { return g.done != 0; }, 30));
    EXPECT_EQ(UCS_OK, g.status);
    EXPECT_TRUE(src.buf == dst.buf);
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(m_ep, op));
    flush(m_ep);
    EXPECT_EQ(0, c.done);
    EXPECT_EQ(1u, tm_stat("unexp_rndv"));
    EXPECT_EQ(0u, tm_stat("exp_rts"));
    uct_rkey_release(m_component, &rkey);
    unreg(src);
    unreg(dst);
}

/* The request lands in the user's buffer (RX_INLINE=n, or one larger than a
 * CQE holds), where another operation of the user may write meanwhile
 * (ucx_perftest's tag_bw receives into one buffer with a window: a GET of
 * an earlier message can still be writing it). A request written over
 * fails its check and is read again from the sender's copy; the data comes
 * right. With RX_INLINE=y (the default) the request comes in the CQE and
 * the buffer is not written before the data. */
class rc_strand_tag_request : public rc_strand_tag {
protected:
    void run(bool rx_inline)
    {
        set_env("UCX_RC_STRAND_RX_INLINE", rx_inline ? "y" : "n");
        open_two_workers();
        const size_t len = 100000;
        region       src, dst;
        reg(src, len);
        reg(dst, len);
        fill(src, pattern(len, 21));
        recv_ctx ctx;
        ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 0x42));
        test_comp c;
        rndv_zcopy(0x42, src, len, c, pattern(17, 2)); /* a's progress */
        /* in the buffer (its first 8 bytes: the sender's address), b has
         * not looked at it yet: write over it */
        uint64_t va_be  = htobe64((uintptr_t)src.buf.data());
        auto     landed = [&] {
            return memcmp(dst.buf.data(), &va_be, sizeof(va_be)) == 0;
        };
        if (rx_inline) {
            EXPECT_FALSE(progress_until(landed, 0.3));
        } else {
            ASSERT_TRUE(progress_until(landed));
        }
        memset(dst.buf.data(), 0x5a, 64);
        ASSERT_TRUE(progress_until([&] {
            both();
            return ctx.completed && c.done;
        }));
        EXPECT_EQ(UCS_OK, ctx.status);
        EXPECT_EQ(UCS_OK, c.status);
        EXPECT_EQ(len, ctx.length);
        EXPECT_TRUE(src.buf == dst.buf);
        EXPECT_EQ(rx_inline ? 0u : 1u, rndv_stat("rts_fetched"));
        EXPECT_EQ(1u, rndv_stat("xfers"));
        unreg(src);
        unreg(dst);
    }

    void both()
    {
        uct_worker_progress(m_worker);
        uct_worker_progress(m_worker_b);
    }

    /* b on a worker of its own, which only both() progresses */
    void open_two_workers()
    {
        uct_md_attr_t md_attr;
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &md_attr));
        rkey_packed_size() = md_attr.rkey_packed_size;
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker_b));
        m_hook_target = &m_tag_a;
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        m_hook_target = &m_tag_b;
        ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
        m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        /* connected: a message both ways of the connection manager */
        std::vector<uint8_t> hello = pattern(10, 1);
        ucs_status_t         s     = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            uct_worker_progress(m_worker_b);
            s = uct_ep_tag_eager_short(m_ep, 1, hello.data(), hello.size());
            return s != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, s);
        ASSERT_TRUE(progress_until([&] {
            both();
            return m_tag_b.eager.size() == 1;
        }));
    }
};

TEST_F(rc_strand_tag_request,
       written_over_in_its_buffer_is_read_from_the_sender)
{
    run(false);
}

TEST_F(rc_strand_tag_request, in_the_cqe_leaves_the_buffer_alone)
{
    run(true);
}

/* A rendezvous longer than the tag's buffer: nothing is read, both sides
 * hear MESSAGE_TRUNCATED (the sender through its FIN). */
TEST_F(rc_strand_tag, rndv_longer_than_the_buffer_is_truncated_on_both_sides)
{
    open_tag_pair();
    region src, dst;
    reg(src, 8192);
    reg(dst, 8192);
    fill(src, pattern(8192, 1));
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 3, UINT64_MAX, 4096));
    test_comp c;
    rndv_zcopy(3, src, 8192, c, {});
    ASSERT_TRUE(progress_until([&] { return ctx.completed && c.done; }));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx.status);
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, c.status);
    /* only the request itself was written: nothing past it */
    EXPECT_TRUE(std::all_of(dst.buf.begin() + 128, dst.buf.end(),
                            [](uint8_t x) { return x == 0; }));
    EXPECT_EQ(1u, tm_stat("tag_errors"));
    EXPECT_EQ(1u, rndv_stat("failed"));
    unreg(src);
    unreg(dst);
}

/* A sender's key the device refuses: the READ fails, its tag completes with
 * the error (the responder QP is in error now: RC). */
TEST_F(rc_strand_tag, rndv_with_a_bad_key_fails_its_tag)
{
    open_tag_pair();
    region src, dst;
    reg(src, 8192);
    reg(dst, 8192);
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 1));
    strand_dev_mr_t bad = *static_cast<strand_dev_mr_t *>(src.memh);
    bad.rkey ^= 0x5a5a00;
    uct_iov_t iov = {src.buf.data(), 8192, &bad, 0, 1};
    test_comp c;
    comp_init(&c);
    ucs_status_ptr_t op = UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    ASSERT_TRUE(progress_until([&] {
        op = uct_ep_tag_rndv_zcopy(m_ep, 1, nullptr, 0, &iov, 1, 0, &c.uct);
        return UCS_PTR_STATUS(op) != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(progress_until([&] { return ctx.completed != 0; }, 30));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, ctx.status);
    EXPECT_EQ(1u, tm_stat("tag_errors"));
    EXPECT_EQ(1u, rndv_stat("failed"));
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(m_ep, op));
    unreg(src);
    unreg(dst);
}

/* ------------------------------------------------------- integrity */

/* The acceptance in the transport: with signature pipelining the
 * FIN goes in the READs' doorbell; the device damages 1% of the blocks the
 * READs carry, a bad block stops the QP in SQD before the FIN, the
 * transport cancels that FIN, reads the bad piece again and sends a FIN of
 * its own; every byte arrives right and every sender completes once. */
TEST_F(rc_strand_tag, integrity_pipelined_fin_cancelled_and_read_again)
{
    integrity("crc32c", "sdc_read=0.01,seed=7");
    open_tag_pair();
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        ASSERT_NO_FATAL_FAILURE(rndv_round(1 << 20, 4));
    }
    EXPECT_EQ(12u, rndv_stat("xfers"));
    EXPECT_EQ(12u, rndv_stat("checked"));
    EXPECT_EQ(1u, rndv_stat("pipeline"));
    EXPECT_GE(rndv_stat("fins_pipelined"), 12u);
    EXPECT_GT(rndv_stat("stops"), 0u) << "no block was bad: no stop";
    EXPECT_GT(rndv_stat("fins_cancelled"), 0u);
    /* every FIN that reached the sender was the good one */
    EXPECT_EQ(12u, tm_stat("rndv_fin", true));
    EXPECT_GT(integrity_stat("bad reads"), 0u);
    EXPECT_EQ(integrity_stat("bad reads"), integrity_stat("read again"));
    EXPECT_EQ(0u, integrity_stat("failed"));
}

/* Spec section 9 (signature error re-arm) on the pipelining QP: 200
 * rendezvous of 4 KiB, two at a time, through the pool of landing mkeys,
 * about 5% of the reads damaged. Each landing mkey is used again and
 * again: one that reported a bad block would pass the next as good, with
 * no SIG_ERR and no stop, and its pipelined FIN would complete a damaged
 * transfer. So an mkey that reported is replaced: every damaged read is
 * caught, stopped before its FIN and read again, and every byte is right. */
TEST_F(rc_strand_tag, integrity_pipelined_damage_caught_through_reused_mkeys)
{
    integrity("crc32c", "sdc_read=0.0064,seed=9");
    open_tag_pair();
    for (int round = 0; round < 100; ++round) {
        SCOPED_TRACE(round);
        ASSERT_NO_FATAL_FAILURE(rndv_round(4096, 2));
    }
    EXPECT_EQ(200u, rndv_stat("xfers"));
    EXPECT_EQ(200u, rndv_stat("checked"));
    EXPECT_EQ(1u, rndv_stat("pipeline"));
    EXPECT_GT(rndv_stat("stops"), 0u);
    EXPECT_GE(integrity_stat("bad reads"), 4u) << "too little damage";
    EXPECT_EQ(integrity_stat("bad reads"), integrity_stat("read again"));
    EXPECT_EQ(integrity_stat("bad reads"), integrity_stat("mkeys renewed"));
    EXPECT_EQ(0u, integrity_stat("failed"));
    EXPECT_EQ(200u, tm_stat("rndv_fin", true));
}

/* UCX_RC_STRAND_INTEGRITY_PIPELINE=n: the FIN waits for the READs to come
 * back good; no stop, nothing cancelled, the same bytes. */
TEST_F(rc_strand_tag, integrity_without_pipelining_waits_for_the_reads)
{
    set_env("UCX_RC_STRAND_INTEGRITY_PIPELINE", "n");
    integrity("crc32c", "sdc_read=0.01,seed=7");
    open_tag_pair();
    ASSERT_NO_FATAL_FAILURE(rndv_round(1 << 20, 4));
    EXPECT_EQ(0u, rndv_stat("pipeline"));
    EXPECT_EQ(4u, rndv_stat("xfers"));
    EXPECT_EQ(0u, rndv_stat("fins_pipelined"));
    EXPECT_EQ(0u, rndv_stat("stops"));
    EXPECT_GT(integrity_stat("read again"), 0u);
}

/* A device with signature offload but without signature pipelining:
 * INTEGRITY_PIPELINE=y refuses to open with a message, try (the default)
 * opens with the FIN after the READ, and the bytes come right. */
TEST_F(rc_strand_tag, integrity_pipeline_needs_the_device_to_have_it)
{
    set_env("STRAND_SIM_CAPS", "sig_pipelining=0");
    set_env("UCX_RC_STRAND_INTEGRITY_PIPELINE", "y");
    integrity("crc32c", "sdc_read=0.01,seed=2");
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, open_iface(m_a));
    set_env("UCX_RC_STRAND_INTEGRITY_PIPELINE", "try");
    open_tag_pair();
    ASSERT_NO_FATAL_FAILURE(rndv_round(1 << 20, 2));
    EXPECT_EQ(0u, rndv_stat("pipeline"));
    EXPECT_EQ(0u, rndv_stat("stops"));
    EXPECT_EQ(2u, rndv_stat("xfers"));
    EXPECT_GT(integrity_stat("read again"), 0u);
}

/* A piece that stays bad: the transfer fails with UCS_ERR_IO_ERROR on both
 * sides (its FIN carries the status), after its pipelined FIN was
 * cancelled; no damaged byte completes as success. */
TEST_F(rc_strand_tag, integrity_retries_exhausted_fail_both_sides)
{
    set_env("UCX_RC_STRAND_INTEGRITY_RETRIES", "0");
    integrity("t10dif", "sdc_read=0.2,seed=3");
    open_tag_pair();
    ASSERT_NO_FATAL_FAILURE(rndv_round(64 << 10, 1, UCS_ERR_IO_ERROR));
    EXPECT_EQ(1u, rndv_stat("failed"));
    EXPECT_EQ(1u, rndv_stat("fins_cancelled"));
    EXPECT_EQ(1u, integrity_stat("failed"));
}

/* Without the check the same damage reaches the buffer: the check is what
 * saves it. */
TEST_F(rc_strand_tag, without_integrity_the_damage_arrives)
{
    set_env("STRAND_SIM_FAULTS", "sdc_read=0.05,seed=7");
    ASSERT_EQ(UCS_OK, open_md());
    open_tag_pair();
    const size_t len = 1 << 20;
    region       src, dst;
    reg(src, len);
    reg(dst, len);
    fill(src, pattern(len, 5));
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 9));
    test_comp c;
    rndv_zcopy(9, src, len, c, {});
    ASSERT_TRUE(progress_until([&] { return ctx.completed && c.done; }));
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_FALSE(src.buf == dst.buf) << "no damage was injected";
    unreg(src);
    unreg(dst);
}

/* The landing mkeys (MAX_EPS 1 x TX_QUEUE_LEN 8: 8 of them) are shared by
 * the rendezvous the transport reads and the GETs of the user: with the
 * rendezvous' READs holding most of them (every packet held back 20 ms),
 * a GET of the user finds none although its endpoint's QP has room. It
 * says no resource, and pending_add queues it (UCS_ERR_BUSY would have UCP
 * retry it at once, for ever: ucx_perftest tag_bw hung so); it goes once
 * a landing mkey is free, and every byte arrives. */
TEST_F(rc_strand_tag, a_get_without_a_landing_mkey_waits_in_pending)
{
    set_env("UCX_RC_STRAND_MAX_EPS", "1");
    set_env("UCX_RC_STRAND_TX_QUEUE_LEN", "8");
    integrity("crc32c", "delay=1:20000000");
    open_tag_pair();
    uct_ep_h             back  = connect(m_b, m_a.dev_addr, m_a.iface_addr);
    std::vector<uint8_t> hello = pattern(8, 1);
    ucs_status_t         s     = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until(
            [&] { /* both connections up */
                  s = uct_ep_tag_eager_short(back, 1, hello.data(),
                                             hello.size());
                  return s != UCS_ERR_NO_RESOURCE;
            },
            30));
    ASSERT_EQ(UCS_OK, eager_short(2, hello));
    /* both handled before the receive is posted: a device that saw an
     * unexpected message software has not reported matches nothing
     * (phase), and the rendezvous would go to the unexpected callback */
    ASSERT_TRUE(progress_until(
            [&] {
                return (m_tag_a.eager.size() == 1) &&
                       (m_tag_b.eager.size() == 1);
            },
            30));

    const size_t len = 64 << 10;
    region       src, dst, g[3], gdst[3];
    reg(src, len);
    reg(dst, len);
    fill(src, pattern(len, 1));
    for (int i = 0; i < 3; ++i) {
        reg(g[i], len);
        reg(gdst[i], len);
        fill(g[i], pattern(len, 2 + i));
    }
    recv_ctx ctx;
    ASSERT_EQ(UCS_OK, post_recv(ctx, dst, 3));
    test_comp c;
    rndv_zcopy(3, src, len, c, {});
    /* the rendezvous reads (its READs held back in the fabric) */
    ASSERT_TRUE(
            progress_until([&] { return rndv_stat("outstanding") > 0; }, 30));
    /* b's GETs from a take what landing mkeys are left, until one finds
     * none while back's QP still has room */
    uct_iov_t iov[3];
    test_comp gc[3];
    int       n = 0;
    for (; n < 3; ++n) {
        iov[n] = {gdst[n].buf.data(), len, gdst[n].memh, 0, 1};
        comp_init(&gc[n]);
        s = uct_ep_get_zcopy(back, &iov[n], 1, addr(g[n]), g[n].rkey.rkey,
                             &gc[n].uct);
        if (s != UCS_INPROGRESS) {
            break;
        }
    }
    ASSERT_LT(n, 3);
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, s);
    struct get_pending {
        uct_pending_req_t uct;
        uct_ep_h          ep;
        uct_iov_t        *iov;
        uint64_t          raddr;
        uct_rkey_t        rkey;
        test_comp        *comp;
        ucs_status_t      status;
    } p;
    p.uct.func = [](uct_pending_req_t *self) {
        auto *gp   = ucs_container_of(self, get_pending, uct);
        gp->status = uct_ep_get_zcopy(gp->ep, gp->iov, 1, gp->raddr, gp->rkey,
                                      &gp->comp->uct);
        return (gp->status == UCS_INPROGRESS) ? UCS_OK : gp->status;
    };
    p.ep     = back;
    p.iov    = &iov[n];
    p.raddr  = addr(g[n]);
    p.rkey   = g[n].rkey.rkey;
    p.comp   = &gc[n];
    p.status = UCS_ERR_LAST;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(back, &p.uct, 0))
            << "no landing mkey free: the request must wait in pending";
    ASSERT_TRUE(progress_until(
            [&] {
                for (int i = 0; i <= n; ++i) {
                    if (!gc[i].done) {
                        return false;
                    }
                }
                return ctx.completed && c.done;
            },
            60));
    EXPECT_EQ(UCS_INPROGRESS, p.status);
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_TRUE(src.buf == dst.buf);
    for (int i = 0; i <= n; ++i) {
        EXPECT_EQ(UCS_OK, gc[i].status);
        EXPECT_TRUE(g[i].buf == gdst[i].buf) << i;
    }
    unreg(src);
    unreg(dst);
    for (int i = 0; i < 3; ++i) {
        unreg(g[i]);
        unreg(gdst[i]);
    }
}

class rc_strand_tag_quiet : public rc_strand_tag {
protected:
    void SetUp() override
    {
        set_env("STRAND_SIM_PROGRESS_THREAD", "0");
        /* the sender must go while its data is still on the way: through
         * the ring, 16 MiB take thousands of packets */
        set_env("STRAND_SIM_ONECOPY", "0");
        rc_strand_tag::SetUp();
    }
};

/* A sender that goes away (its endpoint destroyed, its interface closed)
 * while the receiver's transport reads its 16 MiB: that receive fails
 * (its responder QP goes with the connection), the other sender's
 * rendezvous and an eager message on the same interface complete with
 * every byte right. */
TEST_F(rc_strand_tag_quiet,
       a_sender_that_goes_mid_rendezvous_fails_only_its_receive)
{
    /* the sender goes once the receiver's transport reads: its responder
     * QP goes with the connection */
    sender_goes_mid_rendezvous([this] { return rndv_stat("outstanding") > 0; },
                               "rendezvous",
                               [this] { return rndv_stat("failed"); });
}

/* With tag matching, a receive posted into a buffer that a checked GET of
 * this interface still writes is refused with UCS_ERR_ALREADY_EXISTS (UCP
 * keeps it, as for a buffer posted twice): UCP >= 1.18 posts one buffer for
 * several receives, and a software rendezvous request matched there (too
 * large for the CQE with these keys) would be written over by the GET
 * before UCP reads it. Other buffers are taken; once the GET is done, that
 * one is too. */
TEST_F(rc_strand_tag, a_tag_is_not_posted_where_a_checked_get_still_writes)
{
    ASSERT_NO_FATAL_FAILURE(integrity("crc32c", ""));
    open_tag_pair();
    const size_t len = 256 * 1024;
    region       src, dst, other;
    reg(src, len);
    reg(dst, len);
    reg(other, 4096);
    fill(src, pattern(len, 3));
    uct_tag_context_t ctx = {};
    ctx.tag_consumed_cb   = [](uct_tag_context_t *) {};
    ctx.completed_cb      = [](uct_tag_context_t *, uct_tag_t, uint64_t, size_t,
                          void *, ucs_status_t) {};
    ctx.rndv_cb = [](uct_tag_context_t *, uct_tag_t, const void *, unsigned,
                     ucs_status_t, unsigned) {};
    auto post   = [&](region &r, size_t off, size_t n) {
        uct_iov_t iov = {r.buf.data() + off, n, r.memh, 0, 1};
        return uct_iface_tag_recv_zcopy(m_a.iface, 7, UINT64_MAX, &iov, 1,
                                          &ctx);
    };
    auto stat = [&] {
        std::string t = vfs_read(m_a, "tag_matching");
        size_t      p = t.find("\nbuf_busy ");
        return (p == std::string::npos) ? ~0ull : std::stoull(t.substr(p + 10));
    };

    uct_iov_t iov = {dst.buf.data(), len, dst.memh, 0, 1};
    test_comp c;
    comp_init(&c);
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until([&] {
        status = uct_ep_get_zcopy(m_ep, &iov, 1, addr(src), src.rkey.rkey,
                                  &c.uct);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_INPROGRESS, status);
    /* anywhere in the GET's range, not before or after it */
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post(dst, 0, 64));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post(dst, len - 1, 1));
    EXPECT_EQ(2u, stat());
    ASSERT_EQ(UCS_OK, post(other, 0, 4096));
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_a.iface, &ctx, 1));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_TRUE(src.buf == dst.buf);
    ASSERT_EQ(UCS_OK, post(dst, 0, len));
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(m_a.iface, &ctx, 1));
    EXPECT_EQ(2u, stat());
    flush(m_ep);
    unreg(other);
    unreg(dst);
    unreg(src);
}
