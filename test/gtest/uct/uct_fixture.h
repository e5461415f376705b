/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the transport tests, of no transport of its own
 * (strand_uct): two interfaces of the transport m_tl on one memory domain
 * in one process (one software NIC), an endpoint of one to the other,
 * driven through UCX's public UCT API; helpers for registered regions,
 * completions, flushes, the transport's configuration and its VFS files.
 * dc_fixture.h and test_rc.cc make it a dc_strand or an rc_strand fixture;
 * strand_uct_tl makes it a test of the shared core on both transports
 * (STRAND_UCT_INSTANTIATE).
 */
#ifndef STRAND_TEST_UCT_FIXTURE_H_
#define STRAND_TEST_UCT_FIXTURE_H_

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "uct_plugin.h"
#include "log_capture.h"
#include "../../uct/dc_iface_params.h"

extern "C" {
#include <ucs/async/async.h>
#include <ucs/debug/log_def.h>
#include <ucs/datastruct/string_buffer.h>
#include <ucs/vfs/base/vfs_obj.h>
}

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <cstdarg>
#include <cstdio>
#include <poll.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace strand_test {

struct am_record {
    std::vector<std::vector<uint8_t>> msgs;
};

inline ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    auto *rec = static_cast<am_record *>(arg);
    auto *p   = static_cast<uint8_t *>(data);
    rec->msgs.emplace_back(p, p + length);
    return UCS_OK;
}

/* Every active message a handler saw and its flags; the descriptor of one
 * at least keep_from bytes long is kept (UCS_INPROGRESS), for the test to
 * give back with uct_iface_release_desc(). */
struct flagged_am_record {
    std::vector<std::vector<uint8_t>> msgs;
    std::vector<unsigned>             flags;
    std::vector<void *>               kept;
    size_t                            keep_from = SIZE_MAX;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        auto *self = static_cast<flagged_am_record *>(arg);
        auto *p    = static_cast<uint8_t *>(data);
        self->msgs.emplace_back(p, p + length);
        self->flags.push_back(flags);
        if ((flags & UCT_CB_PARAM_FLAG_DESC) && (length >= self->keep_from)) {
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

struct err_record {
    std::vector<std::pair<uct_ep_h, ucs_status_t>> errors;
};

inline ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    static_cast<err_record *>(arg)->errors.emplace_back(ep, status);
    return UCS_OK;
}

struct test_comp {
    uct_completion_t uct;
    int              done;
    ucs_status_t     status;
};

inline void comp_cb(uct_completion_t *self)
{
    auto *c   = ucs_container_of(self, test_comp, uct);
    c->done   = 1;
    c->status = self->status;
}

inline void comp_init(test_comp *c)
{
    c->uct.func   = comp_cb;
    c->uct.count  = 1;
    c->uct.status = UCS_OK;
    c->done       = 0;
    c->status     = UCS_OK;
}

inline size_t pack_cb(void *dest, void *arg)
{
    auto *v = static_cast<std::vector<uint8_t> *>(arg);
    if (!v->empty()) { /* an empty vector's data() may be NULL */
        memcpy(dest, v->data(), v->size());
    }
    return v->size();
}

inline void unpack_cb(void *arg, const void *data, size_t length)
{
    auto *v = static_cast<std::vector<uint8_t> *>(arg);
    v->assign(static_cast<const uint8_t *>(data),
              static_cast<const uint8_t *>(data) + length);
}

inline std::vector<uint8_t> pattern(size_t n, unsigned seed)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
    }
    return v;
}

/* A pending request that sends an 8-byte active message (id 5, header
 * `seq`) when the ep has resources again. */
struct am_short_pending {
    uct_pending_req_t uct;
    uct_ep_h          ep   = nullptr;
    uint64_t          seq  = 0;
    int               done = 0;

    am_short_pending()
    {
        uct.func = progress;
    }

    static ucs_status_t progress(uct_pending_req_t *self)
    {
        auto        *p = ucs_container_of(self, am_short_pending, uct);
        ucs_status_t s = uct_ep_am_short(p->ep, 5, p->seq, nullptr, 0);
        p->done |= (s == UCS_OK);
        return s;
    }
};

} // namespace strand_test

using namespace strand_test;

class strand_uct : public ::testing::Test {
protected:
    struct iface_t {
        uct_iface_h          iface  = nullptr;
        uct_worker_h         worker = nullptr;
        uct_iface_attr_t     attr;
        std::vector<uint8_t> dev_addr, iface_addr;
        am_record            am;
        err_record           err;
    };

    void SetUp() override
    {
        static std::atomic<int> counter{0};
        ASSERT_FALSE(m_tl.empty()) << "the transport's fixture names it";
        std::string fabric = "strand_uct_" + std::to_string(getpid()) + "_" +
                             std::to_string(counter++);
        setenv("STRAND_SIM_FABRIC", fabric.c_str(), 1);
        m_component = strand_component_find();
        ASSERT_NE(nullptr, m_component) << dlerror();

        ASSERT_EQ(UCS_OK, open_md());
        ASSERT_EQ(UCS_OK,
                  ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                           &m_async));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker));
    }

    void TearDown() override
    {
        for (auto ep : m_eps) {
            uct_ep_destroy(ep);
        }
        for (auto *i : {&m_a, &m_b}) {
            if (i->iface != nullptr) {
                uct_iface_close(i->iface);
            }
        }
        for (auto &r : m_regs) {
            if (r.unpacked) {
                uct_rkey_release(m_component, &r.rkey);
            }
            uct_md_mem_dereg(m_md, r.memh);
        }
        m_regs.clear();
        if (m_worker_b != nullptr) {
            uct_worker_destroy(m_worker_b);
        }
        if (m_worker != nullptr) {
            uct_worker_destroy(m_worker);
        }
        if (m_async != nullptr) {
            ucs_async_context_destroy(m_async);
        }
        if (m_md != nullptr) {
            uct_md_close(m_md);
        }
        /* the mode's own settings (test/run-tests.sh) come back */
        for (auto it = m_env.rbegin(); it != m_env.rend(); ++it) {
            if (it->second.first) {
                setenv(it->first.c_str(), it->second.second.c_str(), 1);
            } else {
                unsetenv(it->first.c_str());
            }
        }
    }

    /* the software device reads its settings (faults) when the MD opens
     * it: tests that set them reopen the MD */
    ucs_status_t open_md()
    {
        uct_md_config_t *md_config;
        ucs_status_t     status;

        if (m_md != nullptr) {
            uct_md_close(m_md);
            m_md = nullptr;
        }
        status = uct_md_config_read(m_component, nullptr, nullptr, &md_config);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_md_open(m_component, "smlx5_0", md_config, &m_md);
        uct_config_release(md_config);
        return status;
    }

    /* an AM short, retried while the transport says no resource */
    /* an op retried while the transport says no resource */
    ucs_status_t retry(const std::function<ucs_status_t()> &op)
    {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            status = op();
            return status != UCS_ERR_NO_RESOURCE;
        });
        return status;
    }

    ucs_status_t am_short_retry(uct_ep_h ep, uint64_t hdr,
                                const void *payload = nullptr,
                                unsigned length = 0, double secs = 10)
    {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        progress_until(
                [&] {
                    status = uct_ep_am_short(ep, 5, hdr, payload, length);
                    return status != UCS_ERR_NO_RESOURCE;
                },
                secs);
        return status;
    }

    /* n active messages on m_ep (id 5): am_short with every payload from
     * 0 to 56 bytes (9 to 65 on the wire with the AM id and header), every
     * tenth an am_bcopy of at least 1000; what the receiver should get */
    std::vector<std::vector<uint8_t>> send_am_mix(unsigned n, unsigned seed)
    {
        std::vector<std::vector<uint8_t>> sent;
        for (unsigned i = 0; i < n; ++i) {
            if (i % 10 == 9) {
                auto    data = pattern(1000 + i, seed + i);
                ssize_t ret  = UCS_ERR_NO_RESOURCE;
                progress_until([&] {
                    ret = uct_ep_am_bcopy(m_ep, 5, pack_cb, &data, 0);
                    return ret != UCS_ERR_NO_RESOURCE;
                });
                EXPECT_EQ((ssize_t)data.size(), ret) << "message " << i;
                sent.push_back(data);
                continue;
            }
            uint64_t hdr     = 0x5a5a000000000000ull + seed + i;
            auto     payload = pattern(i % 57, seed + i);
            EXPECT_EQ(UCS_OK,
                      am_short_retry(m_ep, hdr, payload.data(), payload.size()))
                    << "message " << i;
            std::vector<uint8_t> m((uint8_t *)&hdr, (uint8_t *)(&hdr + 1));
            m.insert(m.end(), payload.begin(), payload.end());
            sent.push_back(m);
        }
        return sent;
    }

    /* Active messages that fit a 128-byte CQE's first half (64 bytes with
     * the AM id) reach the handler in the CQE, without
     * UCT_CB_PARAM_FLAG_DESC, as UCX's mlx5 transports hand them
     * (RX_INLINE=y); larger ones, and all with RX_INLINE=n, in a
     * descriptor. Byte for byte and in order either way, through an SRQ
     * of 16 cycled many times while the user keeps some descriptors
     * (their WQEs take buffers from the pool when posted again) and after
     * it gives them back. */
    void check_am_in_cqe()
    {
        for (bool in_cqe : {true, false}) {
            set_tl_env("RX_INLINE", in_cqe ? "y" : "n");
            set_tl_env("RX_QUEUE_LEN", "16");
            open_pair();
            flagged_am_record rx;
            rx.keep_from = 1000;
            ASSERT_EQ(UCS_OK,
                      uct_iface_set_am_handler(m_b.iface, 5,
                                               flagged_am_record::cb, &rx, 0));
            auto sent = send_am_mix(200, 1);
            ASSERT_TRUE(progress_until([&] {
                return rx.msgs.size() >= sent.size();
            })) << rx.msgs.size()
                << " of " << sent.size();
            EXPECT_EQ(20u, rx.kept.size());
            for (void *desc : rx.kept) {
                uct_iface_release_desc(desc);
            }
            rx.keep_from = SIZE_MAX;
            auto more    = send_am_mix(100, 7);
            sent.insert(sent.end(), more.begin(), more.end());
            ASSERT_TRUE(progress_until([&] {
                return rx.msgs.size() >= sent.size();
            })) << rx.msgs.size()
                << " of " << sent.size();
            ASSERT_EQ(sent.size(), rx.msgs.size());
            for (size_t i = 0; i < sent.size(); ++i) {
                bool fits = (1 + sent[i].size()) <= 64;
                EXPECT_EQ(sent[i], rx.msgs[i]) << "message " << i;
                EXPECT_EQ((in_cqe && fits) ? 0u :
                                             (unsigned)UCT_CB_PARAM_FLAG_DESC,
                          rx.flags[i] & UCT_CB_PARAM_FLAG_DESC)
                        << "message " << i << " of " << sent[i].size()
                        << " bytes, RX_INLINE=" << in_cqe;
            }
            close_pair();
        }
    }

    /* Short posts of every length across the end of a small send queue
     * (TX_QUEUE_LEN 16): put_shorts of 1 .. max_short bytes and
     * am_shorts of every payload, in turn, WQEs of one to several BBs, so
     * that they meet the end of the ring at every offset: the fast path
     * takes those that end before it, the general path wraps the others
     * (strand_txq_fast_room). Every byte lands where it should and every
     * message comes, in order, with each MMIO mode: db (the software
     * device's entry points, which ring without a test) and bf_post (those
     * of a NIC's queues, whose doorbell copies the WQE); the two have
     * entry points of their own. */
    void check_short_posts()
    {
        uct_ep_am_short_func_t am_db = nullptr;

        for (const char *mode : {"db", "bf_post"}) {
            set_env("UCX_STRAND_MMIO_MODE", mode);
            ASSERT_EQ(UCS_OK, open_md());
            set_tl_env("TX_QUEUE_LEN", "16");
            open_pair();
            /* rc_strand: its operations are the direct ones again once
             * the ep is connected (rc/rc_locked.h) and an operation ran:
             * a message, then a flush */
            ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 0));
            ASSERT_TRUE(
                    progress_until([&] { return m_b.am.msgs.size() == 1; }));
            flush(m_ep);
            m_b.am.msgs.clear();
            if (am_db == nullptr) {
                am_db = m_a.iface->ops.ep_am_short;
            } else {
                EXPECT_NE(am_db, m_a.iface->ops.ep_am_short)
                        << "bf_post took the entry points of db";
            }
            const size_t max_put = m_a.attr.cap.put.max_short;
            const size_t max_am  = m_a.attr.cap.am.max_short - 8;
            region       r;
            reg(r, 2 * max_put * (max_put + 1) / 2 + 64);
            std::vector<std::vector<uint8_t>>                    sent;
            std::vector<std::pair<size_t, std::vector<uint8_t>>> puts;
            size_t                                               off = 0;
            for (unsigned round = 0; round < 2; ++round) {
                for (size_t len = 1; len <= max_put; ++len) {
                    auto d = pattern(len, round * 1000 + len);
                    ASSERT_EQ(UCS_OK, retry([&] {
                                  return uct_ep_put_short(m_ep, d.data(),
                                                          d.size(),
                                                          addr(r, off),
                                                          r.rkey.rkey);
                              }))
                            << mode << " put of " << len;
                    puts.emplace_back(off, d);
                    off += len;
                    uint64_t hdr = 0xa5a5000000000000ull + round * 1000 + len;
                    auto     p   = pattern((len * 7 + round) % (max_am + 1),
                                           round * 1000 + len + 500);
                    ASSERT_EQ(UCS_OK,
                              am_short_retry(m_ep, hdr, p.data(), p.size()))
                            << mode << " am_short of " << p.size();
                    std::vector<uint8_t> m((uint8_t *)&hdr,
                                           (uint8_t *)(&hdr + 1));
                    m.insert(m.end(), p.begin(), p.end());
                    sent.push_back(m);
                }
            }
            flush(m_ep);
            for (auto &pd : puts) {
                ASSERT_EQ(0, memcmp(r.buf.data() + pd.first, pd.second.data(),
                                    pd.second.size()))
                        << mode << ": put of " << pd.second.size()
                        << " bytes at " << pd.first;
            }
            ASSERT_TRUE(progress_until([&] {
                return m_b.am.msgs.size() >= sent.size();
            })) << mode
                << ": " << m_b.am.msgs.size() << " of " << sent.size();
            ASSERT_EQ(sent.size(), m_b.am.msgs.size());
            for (size_t i = 0; i < sent.size(); ++i) {
                ASSERT_EQ(sent[i], m_b.am.msgs[i]) << mode << ": message " << i;
            }
            EXPECT_TRUE(m_a.err.errors.empty()) << mode;
            unreg(r);
            close_pair();
        }
    }

    /* a pair whose ep sent a message, flushed, with the transport's
     * timeouts short (5 ms, one retry): ready to lose its peer */
    void open_pair_exchanged()
    {
        set_tl_env("TIMEOUT", "5ms");
        set_tl_env("RETRY_COUNT", "1");
        open_pair();
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1));
        ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
        flush(m_ep);
    }

    /* B's interface closed: m_ep's peer is gone */
    void close_b()
    {
        uct_iface_close(m_b.iface);
        m_b.iface = nullptr;
    }

    /* uct_ep_check with a completion. Where
     * UCX's API takes one (1.22), the probe of a live peer completes with
     * UCS_OK (UCS_INPROGRESS, then comp; or UCS_OK at once, comp never
     * called), of a dead one with an endpoint error, its owner told; on
     * older UCX a completion is refused (UCS_ERR_INVALID_PARAM). */
    void check_ep_check_completion()
    {
        ASSERT_NO_FATAL_FAILURE(open_pair_exchanged());
        test_comp c;
        comp_init(&c);
        ucs_status_t status = uct_ep_check(m_ep, 0, &c.uct);
#ifdef HAVE_UCT_EP_CHECK_COMPLETION
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
            EXPECT_EQ(UCS_OK, c.status) << ucs_status_string(c.status);
        } else {
            EXPECT_EQ(UCS_OK, status) << ucs_status_string(status);
            EXPECT_EQ(0, c.done);
        }
        EXPECT_TRUE(m_a.err.errors.empty());

        close_b();
        comp_init(&c);
        status = uct_ep_check(m_ep, 0, &c.uct);
        ASSERT_EQ(UCS_INPROGRESS, status) << ucs_status_string(status);
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }, 20));
        EXPECT_TRUE(UCS_IS_ENDPOINT_ERROR(c.status) ||
                    (c.status == UCS_ERR_CANCELED))
                << ucs_status_string(c.status);
        ASSERT_TRUE(
                progress_until([&] { return !m_a.err.errors.empty(); }, 20));
        EXPECT_EQ(m_ep, m_a.err.errors[0].first);
#else
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, status);
        EXPECT_EQ(0, c.done);
        EXPECT_EQ(UCS_OK, uct_ep_check(m_ep, 0, nullptr));
#endif
    }

    /* A flush behind a keepalive probe to a peer that is gone completes
     * with the endpoint's error, not UCS_OK: nothing it covers reached
     * the peer (a NOP run again after the send queue's reset would
     * report success). */
    void check_flush_after_failed_probe()
    {
        ASSERT_NO_FATAL_FAILURE(open_pair_exchanged());
        close_b();
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 2));
        test_comp c;
        comp_init(&c);
        ucs_status_t status = uct_ep_flush(m_ep, 0, &c.uct);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }, 20));
            status = c.status;
        }
        EXPECT_TRUE(UCS_IS_ENDPOINT_ERROR(status) ||
                    (status == UCS_ERR_CANCELED))
                << "the flush of a message that never arrived: "
                << ucs_status_string(status);
        ASSERT_TRUE(
                progress_until([&] { return !m_a.err.errors.empty(); }, 20));
    }

    /* UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN: a pack callback that writes one
     * byte more than max_bcopy gets UCS_ERR_INVALID_PARAM (and a log line
     * saying "length"), the bytes go nowhere, the ep keeps working. */
    void check_bcopy_overrun()
    {
        open_pair();
        ASSERT_TRUE(m_a.attr.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN);
        region r;
        ASSERT_NO_FATAL_FAILURE(reg(r, m_a.attr.cap.put.max_bcopy + 64));
        struct fill {
            size_t        len;
            static size_t pack(void *dest, void *arg)
            {
                size_t len = static_cast<fill *>(arg)->len;
                memset(dest, 0x5a, len);
                return len;
            }
        };
        fill am_over{m_a.attr.cap.am.max_bcopy + 1};
        fill put_over{m_a.attr.cap.put.max_bcopy + 1};
        fill ok{64};
        {
            scoped_log_capture logs;
            EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_ep_am_bcopy(m_ep, 5, fill::pack, &am_over, 0));
            EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_ep_put_bcopy(m_ep, fill::pack, &put_over, addr(r),
                                       r.rkey.rkey));
            EXPECT_EQ(2u, logs.count("length"));
        }
        flush(m_ep);
        EXPECT_EQ(std::vector<uint8_t>(r.buf.size(), 0), r.buf)
                << "a refused put_bcopy wrote to the target";
        EXPECT_TRUE(m_b.am.msgs.empty());
        /* the ep still sends */
        ssize_t len = -1;
        ASSERT_TRUE(progress_until([&] {
            len = uct_ep_am_bcopy(m_ep, 5, fill::pack, &ok, 0);
            return len != UCS_ERR_NO_RESOURCE;
        }));
        EXPECT_EQ(64, len);
        ASSERT_TRUE(progress_until([&] { return m_b.am.msgs.size() == 1; }));
        EXPECT_TRUE(m_a.err.errors.empty());
        unreg(r);
    }

    /* UCP relies on a bound to what one progress call handles (fair
     * progress over interfaces, probing): `count` messages wait at B (its
     * buffers hold them, A's sends completed, B never progressed); one
     * progress call of B's interface hands over `bound` of them, the next
     * ones the rest. With flow control off: the window is not the bound. */
    void check_rx_bound(unsigned count, unsigned bound)
    {
        if (tl_has_option("FC_ENABLE")) { /* rc_strand has none */
            set_tl_env("FC_ENABLE", "n");
        }
        open_pair();
        for (unsigned i = 0; i < count; ++i) {
            ucs_status_t status;
            ASSERT_TRUE(progress_iface_until(
                    m_a.iface,
                    [&] {
                        status = uct_ep_am_short(m_ep, 5, i, nullptr, 0);
                        return status != UCS_ERR_NO_RESOURCE;
                    }))
                    << "send " << i;
            ASSERT_EQ(UCS_OK, status);
        }
        test_comp c;
        comp_init(&c);
        ucs_status_t status;
        ASSERT_TRUE(progress_iface_until(m_a.iface, [&] {
            status = uct_ep_flush(m_ep, 0, &c.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_iface_until(m_a.iface,
                                             [&] { return c.done != 0; }));
        }
        ASSERT_EQ(0u, m_b.am.msgs.size());
        uct_iface_progress(m_b.iface);
        EXPECT_EQ(bound, m_b.am.msgs.size())
                << "one progress call handed over " << m_b.am.msgs.size()
                << " of " << count << " waiting messages";
        ASSERT_TRUE(
                progress_until([&] { return m_b.am.msgs.size() == count; }));
    }

    /* progress_until with one interface's progress only */
    bool progress_iface_until(uct_iface_h                  iface,
                              const std::function<bool()> &cond,
                              double                       secs = 10)
    {
        return progress_with_until([iface] { uct_iface_progress(iface); }, cond,
                                   secs);
    }

    void set_env(const char *name, const char *value)
    {
        const char *old = getenv(name);
        m_env.emplace_back(name, std::make_pair(old != nullptr,
                                                std::string(old ? old : "")));
        setenv(name, value, 1);
    }

    /* "DC_STRAND_" / "RC_STRAND_": the prefix of the transport's options */
    std::string tl_prefix() const
    {
        std::string p;
        for (char c : m_tl) {
            p += (char)toupper((unsigned char)c);
        }
        return p + "_";
    }

    /* the transport's option NAME: UCX_DC_STRAND_NAME / UCX_RC_STRAND_NAME */
    std::string tl_var(const char *name) const
    {
        return "UCX_" + tl_prefix() + name;
    }

    /* the VFS file of the interface's send queues and the word that opens
     * each queue's line in it: "dci_pool" / "dci" of dc_strand,
     * "qp_pool" / "qp" of rc_strand */
    std::string sq_word() const
    {
        return (m_tl == "dc_strand") ? "dci" : "qp";
    }

    std::string pool_file() const
    {
        return sq_word() + "_pool";
    }

    void set_tl_env(const char *name, const char *value)
    {
        set_env(tl_var(name).c_str(), value);
    }

    /* whether the transport has the option NAME (its configuration table) */
    bool tl_has_option(const char *name)
    {
        uct_iface_config_t *config;
        char                value[128];
        if (uct_md_iface_config_read(m_md, m_tl.c_str(), nullptr, nullptr,
                                     &config) != UCS_OK) {
            return false;
        }
        bool has = uct_config_get(config, name, value, sizeof(value)) == UCS_OK;
        uct_config_release(config);
        return has;
    }

    /* extra interface parameters for the next open_iface() calls: a
     * function that adds fields (e.g. AM alignment) */
    std::function<void(uct_iface_params_t &)> m_iface_params_hook;

    ucs_status_t open_iface(iface_t &i, uct_worker_h worker = nullptr)
    {
        uct_iface_config_t *config;
        ucs_status_t status = uct_md_iface_config_read(m_md, m_tl.c_str(),
                                                       nullptr, nullptr,
                                                       &config);
        if (status != UCS_OK) {
            return status;
        }
        uct_iface_params_t params;
        strand_test_dc_iface_params(&params, err_cb, &i.err);
        params.mode.device.tl_name = m_tl.c_str();
        if (m_iface_params_hook) {
            m_iface_params_hook(params);
        }
        i.worker = worker ? worker : m_worker;
        status   = uct_iface_open(m_md, i.worker, &params, config, &i.iface);
        uct_config_release(config);
        if (status != UCS_OK) {
            return status;
        }
        EXPECT_EQ(UCS_OK, uct_iface_query(i.iface, &i.attr));
        i.dev_addr.resize(i.attr.device_addr_len);
        i.iface_addr.resize(i.attr.iface_addr_len);
        EXPECT_EQ(UCS_OK,
                  uct_iface_get_device_address(
                          i.iface, (uct_device_addr_t *)i.dev_addr.data()));
        EXPECT_EQ(UCS_OK,
                  uct_iface_get_address(i.iface, (uct_iface_addr_t *)
                                                         i.iface_addr.data()));
        EXPECT_EQ(UCS_OK,
                  uct_iface_set_am_handler(i.iface, 5, am_cb, &i.am, 0));
        uct_iface_progress_enable(i.iface,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        return UCS_OK;
    }

    /* uct_ep_create from `from` to the addresses, its status; an ep made
     * is destroyed by TearDown */
    ucs_status_t create_ep(iface_t &from, const std::vector<uint8_t> &dev_addr,
                           const std::vector<uint8_t> &iface_addr,
                           uct_ep_h                   *ep_p = nullptr)
    {
        uct_ep_params_t params;
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface        = from.iface;
        params.dev_addr     = (const uct_device_addr_t *)dev_addr.data();
        params.iface_addr   = (const uct_iface_addr_t *)iface_addr.data();
        uct_ep_h     ep     = nullptr;
        ucs_status_t status = uct_ep_create(&params, &ep);
        if (ep != nullptr) {
            m_eps.push_back(ep);
        }
        if (ep_p != nullptr) {
            *ep_p = ep;
        }
        return status;
    }

    uct_ep_h connect(iface_t &from, const std::vector<uint8_t> &dev_addr,
                     const std::vector<uint8_t> &iface_addr)
    {
        uct_ep_h ep = nullptr;
        EXPECT_EQ(UCS_OK, create_ep(from, dev_addr, iface_addr, &ep));
        return ep;
    }

    /* the receiver on a worker of its own: it progresses only when the
     * test says so */
    void open_pair_own_workers()
    {
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker_b));
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        ASSERT_EQ(UCS_OK, open_iface(m_b, m_worker_b));
        m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, m_ep);
    }

    /* undoes open_pair() (m_ep flushed first), for a test that opens
     * another pair */
    void close_pair()
    {
        flush(m_ep);
        uct_ep_destroy(m_ep);
        m_eps.clear();
        uct_iface_close(m_a.iface);
        uct_iface_close(m_b.iface);
        m_a.iface = m_b.iface = nullptr;
        m_b.am.msgs.clear();
    }

    void open_pair()
    {
        ASSERT_EQ(UCS_OK, open_iface(m_a));
        ASSERT_EQ(UCS_OK, open_iface(m_b));
        m_ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
        ASSERT_NE(nullptr, m_ep);
    }

    bool progress_until(const std::function<bool()> &cond, double secs = 10)
    {
        return progress_with_until([this] { uct_worker_progress(m_worker); },
                                   cond, secs);
    }

    /* call progress until cond holds; false after secs seconds */
    static bool progress_with_until(const std::function<void()> &progress,
                                    const std::function<bool()> &cond,
                                    double                       secs)
    {
        auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(secs);
        while (!cond()) {
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
            progress();
        }
        return true;
    }

    /* a zero-copy / fetching op's status, once complete */
    ucs_status_t wait(ucs_status_t status, test_comp &c)
    {
        if (status != UCS_INPROGRESS) {
            return status;
        }
        if (!progress_until([&] { return c.done != 0; })) {
            return UCS_ERR_TIMED_OUT;
        }
        return c.status;
    }

    void flush(uct_ep_h ep)
    {
        test_comp c;
        comp_init(&c);
        ucs_status_t status;
        ASSERT_TRUE(progress_until([&] {
            status = uct_ep_flush(ep, 0, &c.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
            EXPECT_EQ(UCS_OK, c.status);
        } else {
            EXPECT_EQ(UCS_OK, status);
        }
    }

    /* registered target memory on the MD and its unpacked rkey */
    struct region {
        std::vector<uint8_t> buf;
        uct_mem_h            memh = nullptr;
        uct_rkey_bundle_t    rkey;
    };

    void reg(region &r, size_t size)
    {
        r.buf.assign(size, 0);
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, r.buf.data(), size,
                                         UCT_MD_MEM_ACCESS_ALL, &r.memh));
        m_regs.push_back({r.memh, false, {}});
        uint8_t packed[64];
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, r.memh, packed));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed, &r.rkey));
        m_regs.back().unpacked = true;
        m_regs.back().rkey     = r.rkey;
    }

    void unreg(region &r)
    {
        uct_rkey_release(m_component, &r.rkey);
        uct_md_mem_dereg(m_md, r.memh);
        for (auto it = m_regs.begin(); it != m_regs.end(); ++it) {
            if (it->memh == r.memh) {
                m_regs.erase(it);
                break;
            }
        }
    }

    uint64_t addr(region &r, size_t off = 0)
    {
        return (uintptr_t)r.buf.data() + off;
    }

    /* Every atomic of both sizes on m_ep (fetching and not, cswap hit and
     * miss): the target's new value and every fetched value checked. */
    void check_all_atomics()
    {
        region r;
        reg(r, 4096);
        uint64_t *v64 = (uint64_t *)r.buf.data();
        uint32_t *v32 = (uint32_t *)(r.buf.data() + 64);

        struct {
            uct_atomic_op_t op;
            uint64_t        init, val, expect;
        } cases[] = {
                {UCT_ATOMIC_OP_ADD, 0xfffffffffffffff0ull, 0x21, 0x11},
                {UCT_ATOMIC_OP_AND, 0xf0f0f0f0f0f0f0f0ull,
                 0xff00ff00ff00ff00ull, 0xf000f000f000f000ull},
                {UCT_ATOMIC_OP_OR, 0x0f0000000000000full, 0x00f00000000000f0ull,
                 0x0ff00000000000ffull},
                {UCT_ATOMIC_OP_XOR, 0xffff0000ffff0000ull,
                 0xff00ff00ff00ff00ull, 0x00ffff0000ffff00ull},
                {UCT_ATOMIC_OP_SWAP, 0x1111222233334444ull,
                 0x5555666677778888ull, 0x5555666677778888ull},
        };
        for (auto &t : cases) {
            SCOPED_TRACE(t.op);
            /* 64-bit fetching */
            *v64            = t.init;
            uint64_t  res64 = 0;
            test_comp c;
            comp_init(&c);
            ASSERT_EQ(UCS_INPROGRESS,
                      uct_ep_atomic64_fetch(m_ep, t.op, t.val, &res64, addr(r),
                                            r.rkey.rkey, &c.uct));
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
            EXPECT_EQ(t.init, res64);
            EXPECT_EQ(t.expect, *v64);
            /* 32-bit fetching */
            uint32_t init32 = (uint32_t)(t.init >> 16);
            uint32_t val32  = (uint32_t)t.val;
            uint32_t exp32;
            switch (t.op) {
            case UCT_ATOMIC_OP_ADD:
                exp32 = init32 + val32;
                break;
            case UCT_ATOMIC_OP_AND:
                exp32 = init32 & val32;
                break;
            case UCT_ATOMIC_OP_OR:
                exp32 = init32 | val32;
                break;
            case UCT_ATOMIC_OP_XOR:
                exp32 = init32 ^ val32;
                break;
            default:
                exp32 = val32;
                break;
            }
            *v32           = init32;
            uint32_t res32 = 0;
            comp_init(&c);
            ASSERT_EQ(UCS_INPROGRESS,
                      uct_ep_atomic32_fetch(m_ep, t.op, val32, &res32,
                                            addr(r, 64), r.rkey.rkey, &c.uct));
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
            EXPECT_EQ(init32, res32);
            EXPECT_EQ(exp32, *v32);
            /* non-fetching (not for swap) */
            if (t.op != UCT_ATOMIC_OP_SWAP) {
                *v64 = t.init;
                *v32 = init32;
                ASSERT_EQ(UCS_OK, uct_ep_atomic64_post(m_ep, t.op, t.val,
                                                       addr(r), r.rkey.rkey));
                ASSERT_EQ(UCS_OK,
                          uct_ep_atomic32_post(m_ep, t.op, val32, addr(r, 64),
                                               r.rkey.rkey));
                flush(m_ep);
                EXPECT_EQ(t.expect, *v64);
                EXPECT_EQ(exp32, *v32);
            }
        }

        /* compare-and-swap: hit and miss */
        *v64            = 42;
        uint64_t  res64 = 0;
        test_comp c;
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_atomic_cswap64(m_ep, 42, 0xabcdef, addr(r),
                                        r.rkey.rkey, &res64, &c.uct));
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(42u, res64);
        EXPECT_EQ(0xabcdefu, *v64);
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_atomic_cswap64(m_ep, 42, 7, addr(r), r.rkey.rkey,
                                        &res64, &c.uct));
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(0xabcdefu, res64);
        EXPECT_EQ(0xabcdefu, *v64);

        *v32           = 0x12345678;
        v32[1]         = 0x9abcdef0; /* the neighbour must not change */
        uint32_t res32 = 0;
        comp_init(&c);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_atomic_cswap32(m_ep, 0x12345678, 0x55aa55aa,
                                        addr(r, 64), r.rkey.rkey, &res32,
                                        &c.uct));
        ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        EXPECT_EQ(0x12345678u, res32);
        EXPECT_EQ(0x55aa55aau, *v32);
        EXPECT_EQ(0x9abcdef0u, v32[1]);
        unreg(r);
    }

    /* A file of an interface's VFS directory: the transport's own view of
     * its state. Empty when there is no such file. */
    std::string vfs_read(const iface_t &i, const char *file)
    {
        ucs_string_buffer_t strb = UCS_STRING_BUFFER_INITIALIZER;
        char                path[256];
        std::string         text;

        /* listing the directory refreshes it (the transport adds its
         * files then) */
        snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p", i.worker,
                 i.iface);
        ucs_vfs_path_list_dir(
                path, [](const char *, void *) {}, nullptr);
        snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p/%s", i.worker,
                 i.iface, file);
        if (ucs_vfs_path_read_file(path, &strb) == UCS_OK) {
            text = ucs_string_buffer_cstr(&strb);
        }
        ucs_string_buffer_cleanup(&strb);
        return text;
    }

    std::string vfs_read(const iface_t &i, const std::string &file)
    {
        return vfs_read(i, file.c_str());
    }

    std::string           m_tl; /* "dc_strand" or "rc_strand" */
    uct_component_h       m_component = nullptr;
    uct_md_h              m_md        = nullptr;
    ucs_async_context_t  *m_async     = nullptr;
    uct_worker_h          m_worker    = nullptr;
    uct_worker_h          m_worker_b  = nullptr; /* own_workers */
    iface_t               m_a, m_b;
    uct_ep_h              m_ep = nullptr;
    std::vector<uct_ep_h> m_eps;
    /* what reg() registered and unreg() did not release yet (memh, its
     * rkey once unpacked): a test that ASSERTs out leaves them to TearDown,
     * else the MD's cache aborts the whole run at its close. The rkey
     * bundle is a copy: the test's region is gone by then. */
    struct reg_t {
        uct_mem_h         memh;
        bool              unpacked;
        uct_rkey_bundle_t rkey;
    };
    std::vector<reg_t> m_regs;
    /* variables set by the test: name, (was set, old value) */
    std::vector<std::pair<std::string, std::pair<bool, std::string>>> m_env;
};

/* Fixture (strand_uct or one derived from it) on the transport the
 * parameter names: a test of the shared core, run on each transport by
 * STRAND_UCT_INSTANTIATE. */
template <class Fixture>
class strand_on_tl : public Fixture,
                     public ::testing::WithParamInterface<const char *> {
protected:
    void SetUp() override
    {
        this->m_tl = this->GetParam();
        Fixture::SetUp();
    }

    bool is_dc() const
    {
        return this->m_tl == "dc_strand";
    }
};

using strand_uct_tl = strand_on_tl<strand_uct>;

/* the transport's name for a test's name */
inline std::string
strand_tl_name(const ::testing::TestParamInfo<const char *> &info)
{
    return info.param;
}

/* SUITE (a strand_uct_tl) on both transports, as UCX's
 * UCT_INSTANTIATE_TEST_CASE does: dc_strand/SUITE.test/dc_strand and
 * rc_strand/SUITE.test/rc_strand (test/run-tests.sh runs each transport's
 * in its modes by the first part) */
#define STRAND_UCT_INSTANTIATE(suite)                                          \
    INSTANTIATE_TEST_SUITE_P(dc_strand, suite, ::testing::Values("dc_strand"), \
                             strand_tl_name);                                  \
    INSTANTIATE_TEST_SUITE_P(rc_strand, suite, ::testing::Values("rc_strand"), \
                             strand_tl_name)

#endif
