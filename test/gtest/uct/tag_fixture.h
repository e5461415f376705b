/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the tag-matching tests (strand_tag, on the transport
 * m_tl: test_tag.cc on both; test_dc_tag.cc: dc_strand_tag, whose
 * receiver's device reads rendezvous; test_rc_tag.cc: rc_strand_tag, whose
 * transport reads them): two interfaces with tag matching on, unexpected
 * message callbacks that record what came, posted receives (recv_ctx),
 * senders that retry while the transport says no resource, and the
 * transport's tag_matching VFS counters.
 */
#ifndef STRAND_TEST_TAG_FIXTURE_H_
#define STRAND_TEST_TAG_FIXTURE_H_

#include "uct_fixture.h"

extern "C" {
#include "dev/dev.h" /* strand_dev_mr_t: a memory handle's keys */
}

#include <algorithm>
#include <functional>
#include <map>
#include <random>

namespace tag_test {

/* the MD's packed key size, for copying rkey_buf */
inline size_t &rkey_packed_size()
{
    static size_t size = 0;
    return size;
}

struct unexp_msg {
    uint64_t             tag;
    uint64_t             imm;
    unsigned             flags;
    std::vector<uint8_t> data;
};

struct unexp_rndv {
    uint64_t             tag;
    std::vector<uint8_t> header;
    uint64_t             remote_addr;
    size_t               length;
    std::vector<uint8_t> rkey_buf;
};

struct tag_record {
    std::vector<unexp_msg>  eager;
    std::vector<unexp_rndv> rndv;
};

inline ucs_status_t eager_unexp_cb(void *arg, void *data, size_t length,
                                   unsigned flags, uct_tag_t stag, uint64_t imm,
                                   void **context)
{
    auto *rec = static_cast<tag_record *>(arg);
    auto *p   = static_cast<uint8_t *>(data);
    rec->eager.push_back({stag, imm, flags, {p, p + length}});
    return UCS_OK;
}

inline ucs_status_t rndv_unexp_cb(void *arg, unsigned flags, uint64_t stag,
                                  const void *header, unsigned header_length,
                                  uint64_t remote_addr, size_t length,
                                  const void *rkey_buf)
{
    auto      *rec = static_cast<tag_record *>(arg);
    auto      *h   = static_cast<const uint8_t *>(header);
    unexp_rndv r{stag, {h, h + header_length}, remote_addr, length, {}};
    if (rkey_buf != nullptr) {
        auto *k = static_cast<const uint8_t *>(rkey_buf);
        r.rkey_buf.assign(k, k + rkey_packed_size());
    }
    rec->rndv.push_back(r);
    return UCS_OK;
}

/* A posted receive: the UCT tag context and what the transport said. */
struct recv_ctx {
    uct_tag_context_t    uct;
    int                  consumed  = 0;
    int                  completed = 0;
    int                  rndv      = 0;
    uint64_t             stag      = 0;
    uint64_t             imm       = 0;
    size_t               length    = 0;
    ucs_status_t         status    = UCS_ERR_LAST;
    std::vector<uint8_t> rndv_header;
    unsigned             rndv_flags = 0;
    void                *buffer     = nullptr; /* as posted */
    int                  in_cqe     = 0; /* completions with inline data */

    recv_ctx()
    {
        memset(&uct, 0, sizeof(uct));
        uct.tag_consumed_cb = consumed_cb;
        uct.completed_cb    = completed_cb;
        uct.rndv_cb         = rndv_cb;
    }

    static recv_ctx *self(uct_tag_context_t *c)
    {
        return ucs_container_of(c, recv_ctx, uct);
    }

    static void consumed_cb(uct_tag_context_t *c)
    {
        self(c)->consumed++;
    }

    static void completed_cb(uct_tag_context_t *c, uct_tag_t stag, uint64_t imm,
                             size_t length, void *inline_data,
                             ucs_status_t status)
    {
        recv_ctx *r = self(c);
        if (inline_data != nullptr) {
            /* the message came in the CQE: the buffer was not written,
             * the user copies it (as UCP and UCX's own tests do) */
            EXPECT_EQ(UCS_OK, status);
            memcpy(r->buffer, inline_data, length);
            r->in_cqe++;
        }
        r->completed++;
        r->stag   = stag;
        r->imm    = imm;
        r->length = length;
        r->status = status;
    }

    static void rndv_cb(uct_tag_context_t *c, uct_tag_t stag,
                        const void *header, unsigned header_length,
                        ucs_status_t status, unsigned flags)
    {
        recv_ctx *r = self(c);
        auto     *h = static_cast<const uint8_t *>(header);
        r->rndv++;
        r->stag   = stag;
        r->status = status;
        r->rndv_header.assign(h, h + header_length);
        r->rndv_flags = flags;
    }
};

} // namespace tag_test

using namespace tag_test;

/* tag matching on the transport m_tl (set before SetUp) */
class strand_tag : public strand_uct {
protected:
    void SetUp() override
    {
        strand_uct::SetUp();
        m_tm_env = tl_var("TM_ENABLE");
        set_env(m_tm_env.c_str(), "y");
        m_iface_params_hook = [this](uct_iface_params_t &p) {
            tag_record *rec = m_hook_target;
            p.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG |
                            UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                            UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG |
                            UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB;
            p.eager_arg = rec;
            p.eager_cb  = eager_unexp_cb;
            p.rndv_arg  = rec;
            p.rndv_cb   = rndv_unexp_cb;
        };
    }

    /* Tag matching needs DEVX (its command QP): a device with tags but
     * without DEVX refuses y naming DEVX, and try opens without tags. */
    void check_without_devx_refused_naming_it()
    {
        set_env("STRAND_SIM_CAPS", "devx=0");
        ASSERT_EQ(UCS_OK, open_md());
        {
            scoped_log_capture logs;
            EXPECT_EQ(UCS_ERR_UNSUPPORTED, open_iface(m_a));
            EXPECT_EQ(1u, logs.count("its command QP is made with DEVX, "
                                     "which is not available"));
            EXPECT_EQ(0u, logs.count("the device has no tag matching"));
        }
        set_env(m_tm_env.c_str(), "try");
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        EXPECT_FALSE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    }

    void open_tag_pair()
    {
        uct_md_attr_t md_attr;
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &md_attr));
        rkey_packed_size() = md_attr.rkey_packed_size;
        m_hook_target      = &m_tag_a;
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        m_hook_target = &m_tag_b;
        ASSERT_EQ(UCS_OK, open_iface(m_b));
        m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, m_ep);
        ASSERT_TRUE(m_a.attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    }

    /* a pattern into registered memory (assigning the vector would move
     * another buffer in) */
    static void fill(region &r, const std::vector<uint8_t> &p)
    {
        std::copy(p.begin(), p.end(), r.buf.begin());
    }

    /* post a receive on b for `tag` into region r */
    ucs_status_t post_recv(recv_ctx &c, region &r, uint64_t tag,
                           uint64_t mask = UINT64_MAX, size_t len = SIZE_MAX)
    {
        uct_iov_t iov;
        iov.buffer = r.buf.data();
        iov.length = (len == SIZE_MAX) ? r.buf.size() : len;
        iov.memh   = r.memh;
        iov.stride = 0;
        iov.count  = 1;
        c.buffer   = iov.buffer;
        return uct_iface_tag_recv_zcopy(m_b.iface, tag, mask, &iov, 1, &c.uct);
    }

    /* the counter `name` of b's (or a's) tag_matching VFS file */
    uint64_t tm_stat(const char *name, bool sender = false)
    {
        std::string text = vfs_read(sender ? m_a : m_b, "tag_matching");
        std::string key  = std::string("\n") + name + " ";
        size_t      pos  = text.find(key);
        if (pos == std::string::npos) {
            ADD_FAILURE() << "no " << name << " in:\n" << text;
            return 0;
        }
        return std::stoull(text.substr(pos + key.size()));
    }

    ssize_t
    eager_bcopy(uint64_t tag, std::vector<uint8_t> &data, uint64_t imm = 0)
    {
        ssize_t len = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            len = uct_ep_tag_eager_bcopy(m_ep, tag, imm, pack_cb, &data, 0);
            return len != UCS_ERR_NO_RESOURCE;
        });
        return len;
    }

    ucs_status_t eager_short(uint64_t tag, const std::vector<uint8_t> &data)
    {
        ucs_status_t s = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            s = uct_ep_tag_eager_short(m_ep, tag, data.data(), data.size());
            return s != UCS_ERR_NO_RESOURCE;
        });
        return s;
    }

    void eager_zcopy(uint64_t tag, region &src, size_t len, uint64_t imm = 0)
    {
        test_comp c;
        comp_init(&c);
        uct_iov_t    iov = {src.buf.data(), len, src.memh, 0, 1};
        ucs_status_t s   = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            s = uct_ep_tag_eager_zcopy(m_ep, tag, imm, &iov, 1, 0, &c.uct);
            return s != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_INPROGRESS, s);
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(UCS_OK, c.status);
    }

    void *rndv_zcopy(uint64_t tag, region &src, size_t len, test_comp &c,
                     const std::vector<uint8_t> &hdr)
    {
        uct_iov_t        iov = {src.buf.data(), len, src.memh, 0, 1};
        ucs_status_ptr_t op  = UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
        comp_init(&c);
        progress_until([&] {
            op = uct_ep_tag_rndv_zcopy(m_ep, tag, hdr.data(), hdr.size(), &iov,
                                       1, 0, &c.uct);
            return UCS_PTR_STATUS(op) != UCS_ERR_NO_RESOURCE;
        });
        EXPECT_FALSE(UCS_PTR_IS_ERR(op))
                << ucs_status_string(UCS_PTR_STATUS(op));
        return op;
    }

    /*
     * A third interface sends b a 16 MiB rendezvous and goes away (its ep
     * destroyed, its interface closed) once `reading` says b has the
     * transfer in hand, while its data is still on the way; then a sends
     * a rendezvous and an eager message. That receive fails (`failed`: the
     * counter of b's file `vfs_file` that counts it, expected at 1); a's
     * messages land, every byte checked.
     */
    void sender_goes_mid_rendezvous(const std::function<bool()>     &reading,
                                    const char                      *vfs_file,
                                    const std::function<uint64_t()> &failed)
    {
        open_tag_pair();
        tag_record   tag_c;
        iface_t      c;
        uct_worker_h worker_c = nullptr;
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &worker_c));
        m_hook_target = &tag_c;
        ASSERT_EQ(UCS_OK, open_iface(c, worker_c));
        uct_ep_h ep_c = connect(c, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, ep_c);
        m_eps.erase(std::find(m_eps.begin(), m_eps.end(), ep_c));

        /* the going sender's message is long: its interface closes
         * (waiting only for its own request to be acknowledged) while the
         * receiver still reads */
        const size_t len = 1 << 20, len_c = 16 << 20;
        region       src_a, src_c, dst_a, dst_c, dst_e;
        reg(src_a, len);
        reg(src_c, len_c);
        reg(dst_a, len);
        reg(dst_c, len_c);
        reg(dst_e, 64);
        fill(src_a, pattern(len, 1));
        fill(src_c, pattern(len_c, 2));
        recv_ctx ctx_a, ctx_c, ctx_e;
        ASSERT_EQ(UCS_OK, post_recv(ctx_c, dst_c, 0xc));
        ASSERT_EQ(UCS_OK, post_recv(ctx_a, dst_a, 0xa));
        ASSERT_EQ(UCS_OK, post_recv(ctx_e, dst_e, 0xe));

        /* the sender that goes: its request on the wire (an RC
         * connection may have to be wired up first: its own worker makes
         * it, while the receiver starts to read) */
        test_comp cc;
        comp_init(&cc);
        uct_iov_t        iov  = {src_c.buf.data(), len_c, src_c.memh, 0, 1};
        ucs_status_ptr_t op_c = UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
        ASSERT_TRUE(progress_until([&] {
            uct_worker_progress(worker_c);
            op_c = uct_ep_tag_rndv_zcopy(ep_c, 0xc, nullptr, 0, &iov, 1, 0,
                                         &cc.uct);
            return UCS_PTR_STATUS(op_c) != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_FALSE(UCS_PTR_IS_ERR(op_c));
        ASSERT_TRUE(progress_until([&] {
            uct_worker_progress(worker_c);
            return reading();
        }));
        uct_ep_destroy(ep_c);
        uct_iface_close(c.iface);
        uct_worker_destroy(worker_c);

        /* the ones that stay */
        test_comp ca;
        rndv_zcopy(0xa, src_a, len, ca, pattern(8, 3));
        std::vector<uint8_t> d = pattern(40, 4);
        ASSERT_EQ(UCS_OK, eager_short(0xe, d));

        EXPECT_TRUE(progress_until(
                [&] {
                    return ctx_a.completed && ca.done && ctx_e.completed &&
                           ctx_c.completed;
                },
                30))
                << "a " << ctx_a.completed << " fin " << ca.done << " e "
                << ctx_e.completed << " c " << ctx_c.completed << "\n"
                << vfs_read(m_b, vfs_file);
        EXPECT_NE(UCS_OK, ctx_c.status) << "the gone sender's receive";
        EXPECT_EQ(1u, failed());
        EXPECT_EQ(UCS_OK, ctx_a.status);
        EXPECT_EQ(UCS_OK, ca.status);
        EXPECT_TRUE(src_a.buf == dst_a.buf);
        EXPECT_EQ(UCS_OK, ctx_e.status);
        EXPECT_TRUE(std::equal(d.begin(), d.end(), dst_e.buf.begin()));
        for (region *r : {&src_a, &src_c, &dst_a, &dst_c, &dst_e}) {
            unreg(*r);
        }
    }

    tag_record *m_hook_target = nullptr;
    tag_record  m_tag_a, m_tag_b;
    std::string m_tm_env;
};

class dc_strand_tag : public strand_tag {
protected:
    void SetUp() override
    {
        m_tl = "dc_strand";
        strand_tag::SetUp();
    }
};

#endif
