/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared core held to the UCT contract as UCX's own transports are
 * (UCX's test_p2p_am alignment, test_pending fairness and ordering,
 * test_uct_ep destroy, test_peer_failure, test_md), on both transports
 * (dc_strand/uct_contract.*, rc_strand/uct_contract.*): active-message
 * alignment, pending dispatch over 128 endpoints, sends from completion
 * callbacks never overtaking pending requests, endpoint destroy completing
 * everything, uct_ep_check, the bound of a progress call, bcopy overruns.
 * What dc_strand's DCIs and credits decide, and the MD's attributes, on
 * dc_strand (dc_strand_uct_contract).
 */
#include "uct_fixture.h"

#include <algorithm>
#include <climits>
#include <iostream>

namespace {

bool under_valgrind()
{
    return getenv("STRAND_UNDER_VALGRIND") != nullptr;
}

/* the payload pointer of every active message a handler saw */
struct aligned_rx {
    std::vector<uintptr_t>            ptrs;
    std::vector<std::vector<uint8_t>> msgs;
    std::vector<unsigned>             flags;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        auto *self = static_cast<aligned_rx *>(arg);
        auto *p    = static_cast<uint8_t *>(data);
        self->ptrs.push_back((uintptr_t)data);
        self->msgs.emplace_back(p, p + length);
        self->flags.push_back(flags);
        return UCS_OK;
    }
};

/* A pending request that sends one active message (header 1) on `ep`. */
struct pending_send {
    uct_pending_req_t uct;
    uct_ep_h          ep        = nullptr;
    int              *n_pending = nullptr;
    bool              pending   = false;
    unsigned          countdown = 0; /* INPROGRESS this often first */
    unsigned          sends     = 0;
    uint64_t          hdr       = 1;

    pending_send()
    {
        uct.func = progress;
    }

    static ucs_status_t progress(uct_pending_req_t *self)
    {
        auto *req = ucs_container_of(self, pending_send, uct);
        if (req->countdown > 0) {
            --req->countdown;
            return UCS_INPROGRESS;
        }
        ucs_status_t s = uct_ep_am_short(req->ep, 5, req->hdr, nullptr, 0);
        if (s == UCS_OK) {
            req->pending = false;
            req->sends++;
            --*req->n_pending;
        }
        return s;
    }
};

} // namespace

class uct_contract : public strand_uct_tl {
protected:
    void set_alignment(size_t align, size_t offset, uint64_t fields)
    {
        m_iface_params_hook = [=](uct_iface_params_t &p) {
            p.field_mask |= fields;
            p.am_alignment    = align;
            p.am_align_offset = offset;
        };
    }

    /* active messages of every kind to `to`, the handler checks alignment */
    void check_alignment(iface_t &from, iface_t &to, size_t align,
                         size_t offset, const char *what)
    {
        aligned_rx rx;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(to.iface, 6, aligned_rx::cb,
                                                   &rx, 0));
        uct_ep_h ep = connect(from, to.dev_addr, to.iface_addr);
        ASSERT_NE(nullptr, ep);

        auto payload = pattern(100, (unsigned)align);
        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, 6, 0x1122334455667788ull,
                                          payload.data(), payload.size()));
        std::vector<uint8_t> big = pattern(3000, 3);
        ASSERT_EQ((ssize_t)big.size(),
                  uct_ep_am_bcopy(ep, 6, pack_cb, &big, 0));
        uct_mem_h memh;
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, big.data(), big.size(),
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        uct_iov_t iov  = {big.data(), 1000, memh, 0, 1};
        uint64_t  zhdr = 0xabcdef;
        test_comp c;
        comp_init(&c);
        ucs_status_t s = uct_ep_am_zcopy(ep, 6, &zhdr, sizeof(zhdr), &iov, 1, 0,
                                         &c.uct);
        ASSERT_TRUE((s == UCS_OK) || (s == UCS_INPROGRESS));
        ASSERT_TRUE(progress_until([&] { return rx.ptrs.size() == 3; }))
                << what;
        if (s == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
        }
        for (size_t i = 0; i < rx.ptrs.size(); ++i) {
            EXPECT_TRUE(rx.flags[i] & UCT_CB_PARAM_FLAG_DESC);
            EXPECT_EQ(0u, (rx.ptrs[i] + offset) % align)
                    << what << ": message " << i << " at 0x" << std::hex
                    << rx.ptrs[i] << std::dec << ", alignment " << align
                    << " offset " << offset;
        }
        EXPECT_EQ(big, rx.msgs[1]) << what;
        EXPECT_EQ(0, memcmp(rx.msgs[2].data() + sizeof(zhdr), big.data(), 1000))
                << what;
        uct_md_mem_dereg(m_md, memh);
        flush(ep);
        uct_ep_destroy(ep);
        m_eps.erase(std::find(m_eps.begin(), m_eps.end(), ep));
    }

    /* UCX's pending_fairness: N eps to one iface, each sends until it is
     * out of resources and adds a pending request, then only progress
     * until some ep may send again; over many rounds every ep sends about
     * as often as every other. */
    void check_fairness(unsigned num_eps, unsigned rounds, bool even)
    {
        open_pair();
        std::vector<uct_ep_h> eps{m_ep};
        for (unsigned i = 1; i < num_eps; ++i) {
            eps.push_back(connect(m_a, m_b.dev_addr, m_b.iface_addr));
            ASSERT_NE(nullptr, eps.back());
        }
        int                       n_pending = 0;
        std::vector<pending_send> reqs(num_eps);
        /* a failed assertion returns with requests still queued: they
         * leave the eps before reqs goes (the eps live on to TearDown) */
        struct purge_on_return {
            const std::vector<uct_ep_h> &eps;
            ~purge_on_return()
            {
                for (auto ep : eps) {
                    uct_ep_pending_purge(
                            ep, [](uct_pending_req_t *, void *) {}, nullptr);
                }
            }
        } purge{eps};
        for (unsigned i = 0; i < num_eps; ++i) {
            reqs[i].ep        = eps[i];
            reqs[i].n_pending = &n_pending;
        }
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(120 + rounds / 50);
        for (unsigned round = 0; round < rounds; ++round) {
            /* send until the resources of every ep are exhausted */
            while (n_pending < (int)num_eps) {
                for (unsigned i = 0; i < num_eps; ++i) {
                    if (reqs[i].pending) {
                        continue;
                    }
                    ucs_status_t s = uct_ep_am_short(eps[i], 5, 1, nullptr, 0);
                    if (s == UCS_OK) {
                        reqs[i].sends++;
                        continue;
                    }
                    ASSERT_EQ(UCS_ERR_NO_RESOURCE, s);
                    s = uct_ep_pending_add(eps[i], &reqs[i].uct, 0);
                    if (s == UCS_ERR_BUSY) {
                        continue; /* resources again: send next time */
                    }
                    ASSERT_EQ(UCS_OK, s);
                    reqs[i].pending = true;
                    ++n_pending;
                }
                ASSERT_LT(std::chrono::steady_clock::now(), deadline)
                        << "round " << round << ": only " << n_pending << " of "
                        << num_eps << " eps ran out of resources";
            }
            /* progress until some ep may send again */
            while (n_pending == (int)num_eps) {
                uct_worker_progress(m_worker);
                ASSERT_LT(std::chrono::steady_clock::now(), deadline)
                        << "round " << round << ": no pending request "
                        << "dispatched";
            }
        }
        /* valgrind runs the device's thread some 60x slower */
        ASSERT_TRUE(progress_until([&] { return n_pending == 0; },
                                   under_valgrind() ? 600 : 60));
        for (auto ep : eps) {
            flush(ep);
        }
        unsigned min_sends = UINT_MAX, max_sends = 0;
        for (auto &r : reqs) {
            min_sends = std::min(min_sends, r.sends);
            max_sends = std::max(max_sends, r.sends);
        }
        unsigned long total = 0;
        for (auto &r : reqs) {
            total += r.sends;
        }
        std::cout << "[   INFO   ] " << num_eps << " eps, " << rounds
                  << " rounds: " << total << " sends, per ep min " << min_sends
                  << " max " << max_sends << std::endl;
        EXPECT_GT(min_sends, 0u) << "an ep starved";
        if (even) {
            EXPECT_GE(min_sends * 2, max_sends)
                    << "unfair: min " << min_sends << " max " << max_sends;
        }
        EXPECT_TRUE(m_a.err.errors.empty());
    }

    /* UCX's destroy_entity_after_send: zero-copy AMs and a flush with one
     * completion counter, the ep destroyed without a flush: the counter is
     * back to zero when uct_ep_destroy returns, every op completed once. */
    void check_destroy_completes_all(unsigned iterations)
    {
        open_pair();
        std::vector<uint8_t> buf = pattern(64 << 10, 4);
        uct_mem_h            memh;
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        struct counted {
            uct_completion_t uct;
            unsigned         calls    = 0;
            bool             ep_alive = true;
            bool             late     = false;
            ucs_status_t     status   = UCS_OK;
        } comp;
        comp.uct.func = [](uct_completion_t *self) {
            auto *c = ucs_container_of(self, counted, uct);
            c->calls++;
            c->late |= !c->ep_alive;
            c->status = self->status;
        };
        unsigned cancelled_any = 0;
        for (unsigned it = 0; it < iterations; ++it) {
            uct_ep_h ep = connect(m_a, m_b.dev_addr, m_b.iface_addr);
            ASSERT_NE(nullptr, ep);
            comp.uct.count   = 0;
            comp.uct.status  = UCS_OK;
            comp.calls       = 0;
            comp.ep_alive    = true;
            unsigned  posted = 0;
            uct_iov_t iov    = {buf.data(), 8000, memh, 0, 1};
            for (;;) {
                ++comp.uct.count;
                ucs_status_t s = uct_ep_am_zcopy(ep, 5, nullptr, 0, &iov, 1, 0,
                                                 &comp.uct);
                if (s == UCS_INPROGRESS) {
                    ++posted;
                    continue;
                }
                --comp.uct.count;
                if (s == UCS_OK) {
                    continue;
                }
                ASSERT_EQ(UCS_ERR_NO_RESOURCE, s);
                if (posted == 0) {
                    uct_worker_progress(m_worker);
                    continue;
                }
                ++comp.uct.count;
                s = uct_ep_flush(ep, UCT_FLUSH_FLAG_LOCAL, &comp.uct);
                if (s == UCS_INPROGRESS) {
                    ++posted;
                } else {
                    --comp.uct.count;
                }
                break;
            }
            ASSERT_GT(posted, 0u);
            unsigned before = comp.calls;
            uct_ep_destroy(ep);
            m_eps.erase(std::find(m_eps.begin(), m_eps.end(), ep));
            comp.ep_alive = false;
            EXPECT_EQ(0, comp.uct.count)
                    << "iteration " << it << ": " << comp.uct.count
                    << " operations left after destroy";
            cancelled_any += (comp.calls > before);
            /* nothing comes back for the destroyed ep afterwards */
            for (int i = 0; i < 200; ++i) {
                uct_worker_progress(m_worker);
            }
            EXPECT_FALSE(comp.late) << "a completion after the ep was gone";
            /* the counter went to zero once: every op completed once (one
             * completed twice would drive it below zero) */
            EXPECT_EQ(1u, comp.calls) << "iteration " << it;
            EXPECT_EQ(0, comp.uct.count) << "iteration " << it;
            EXPECT_EQ(UCS_ERR_CANCELED, comp.status) << "iteration " << it;
        }
        EXPECT_GT(cancelled_any, 0u) << "nothing was outstanding at destroy";
        uct_md_mem_dereg(m_md, memh);
        /* TearDown destroys the whole entity, with whatever the device
         * still does for the destroyed eps */
    }
};

/* UCX's invalid_align / invalid_offset: the memory pool refuses an
 * alignment of 0 or one that is not a power of two; an offset without an
 * alignment is refused; an offset beyond the element is reset. */
TEST_P(uct_contract, ep_check_with_a_completion)
{
    check_ep_check_completion();
}

TEST_P(uct_contract, flush_behind_a_send_to_a_gone_peer_fails)
{
    check_flush_after_failed_probe();
}

TEST_P(uct_contract, am_alignment_invalid_parameters)
{
    set_tl_env("RX_QUEUE_LEN", "64");
    set_alignment(0, 0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_alignment(3, 1, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_alignment(0, 11, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    set_alignment(8, 8, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface(m_a));
    /* an offset not smaller than the element: reset to 0, not refused */
    set_alignment(64, 1 << 20,
                  UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                          UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    check_alignment(m_a, m_a, 64, 0, "offset reset");
}

/* Every alignment 1..4096 with and without offsets: the payload of short,
 * bcopy and zcopy active messages lands aligned, from a peer and on a
 * loopback endpoint. */
TEST_P(uct_contract, am_alignment_every_power_of_two)
{
    set_tl_env("RX_QUEUE_LEN", "64");
    ASSERT_EQ(UCS_OK, open_iface(m_a));
    for (size_t align = 1; align <= 4096; align *= 2) {
        std::vector<std::pair<size_t, uint64_t>> cases = {
                {0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
                {0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                            UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET},
                {std::min<size_t>(align - 1, 127),
                 UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                         UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET},
                {(align * 7 / 13) % std::min<size_t>(align, 128),
                 UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                         UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET},
        };
        for (auto &c : cases) {
            set_alignment(align, c.first, c.second);
            ASSERT_EQ(UCS_OK, open_iface(m_b)) << "alignment " << align;
            std::string what = "alignment " + std::to_string(align) +
                               " offset " + std::to_string(c.first);
            check_alignment(m_a, m_b, align, c.first,
                            (what + ": peer").c_str());
            check_alignment(m_b, m_b, align, c.first,
                            (what + ": loopback").c_str());
            uct_iface_close(m_b.iface);
            m_b.iface = nullptr;
        }
    }
}

/* A receive queue far smaller than what the senders have in flight: the
 * receiver runs out of buffers and senders wait in receiver-not-ready
 * back-off. A DCI completes in send-queue order, so one whose stream
 * waits stops while the others take the receiver's new buffers: rates
 * differ per DCI (as they would on a NIC), but no ep starves and nothing
 * fails. */
TEST_P(uct_contract, pending_128_eps_under_rnr_none_starves)
{
    set_tl_env("RX_QUEUE_LEN", "256");
    check_fairness(128, under_valgrind() ? 100 : 500, false);
}

/* UCX's send_ooo_with_comp: a send from a completion callback on an ep with
 * pending requests must not overtake them. */
TEST_P(uct_contract, send_from_completion_does_not_overtake_pending)
{
    /* the send queue is the scarce resource: when the zero-copy AM's CQE
     * frees room, its completion callback runs before the pending queue is
     * looked at */
    set_tl_env("TX_QUEUE_LEN", "16");
    if (tl_has_option("FC_ENABLE")) { /* rc_strand has none */
        set_tl_env("FC_ENABLE", "n");
    }
    open_pair();
    struct order {
        std::vector<uint64_t> hdrs;
        static ucs_status_t
        cb(void *arg, void *data, size_t length, unsigned flags)
        {
            uint64_t hdr; /* (unaligned when it comes in the CQE) */
            memcpy(&hdr, data, sizeof(hdr));
            static_cast<order *>(arg)->hdrs.push_back(hdr);
            return UCS_OK;
        }
    } rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(m_b.iface, 5, order::cb, &rx, 0));
    struct comp_send {
        uct_completion_t uct;
        uct_ep_h         ep;
        ucs_status_t     sent = UCS_ERR_LAST;
    } comp;
    comp.uct.func = [](uct_completion_t *self) {
        auto *c = ucs_container_of(self, comp_send, uct);
        c->sent = uct_ep_am_short(c->ep, 5, 2 /* COMP */, nullptr, 0);
    };
    comp.uct.count  = 1;
    comp.uct.status = UCS_OK;
    comp.ep         = m_ep;

    std::vector<uint8_t> buf(32, 1);
    uct_mem_h            memh;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    uct_iov_t iov = {buf.data(), buf.size(), memh, 0, 1};
    uint64_t  hdr = 0; /* plain AM */
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 5, &hdr, sizeof(hdr), &iov,
                                              1, 0, &comp.uct));
    /* fill the send queue, then one pending request (PENDING = 1) that
     * keeps itself busy for a while */
    while (uct_ep_am_short(m_ep, 5, 0, nullptr, 0) == UCS_OK) {
    }
    int          n_pending = 1;
    pending_send req;
    req.ep        = m_ep;
    req.n_pending = &n_pending;
    req.countdown = 5;
    req.pending   = true;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &req.uct, 0));
    ASSERT_TRUE(progress_until([&] { return n_pending == 0; }));
    flush(m_ep);
    ASSERT_TRUE(progress_until([&] {
        return std::find(rx.hdrs.begin(), rx.hdrs.end(), 1u) != rx.hdrs.end();
    }));
    auto pend_at = std::find(rx.hdrs.begin(), rx.hdrs.end(), 1u);
    auto comp_at = std::find(rx.hdrs.begin(), rx.hdrs.end(), 2u);
    ASSERT_NE(UCS_ERR_LAST, comp.sent) << "the completion never ran";
    EXPECT_TRUE((comp.sent == UCS_ERR_NO_RESOURCE) || (comp.sent == UCS_OK))
            << ucs_status_string(comp.sent);
    if (comp_at != rx.hdrs.end()) {
        EXPECT_LT(pend_at - rx.hdrs.begin(), comp_at - rx.hdrs.begin())
                << "the completion's message overtook the pending one";
    } else {
        /* the completion ran while the request was pending: refused */
        EXPECT_EQ(UCS_ERR_NO_RESOURCE, comp.sent);
    }
    uct_md_mem_dereg(m_md, memh);
}

TEST_P(uct_contract, ep_destroy_completes_every_operation)
{
    check_destroy_completes_all(under_valgrind() ? 10 : 100);
}

/* One progress call hands over 16 waiting messages (UCX_IB_RX_MAX_POLL's
 * default), and what RX_MAX_POLL says. */
TEST_P(uct_contract, one_progress_call_handles_at_most_rx_max_poll)
{
    check_rx_bound(1000, 16);
}

TEST_P(uct_contract, rx_max_poll_sets_the_bound)
{
    set_tl_env("RX_MAX_POLL", "100");
    check_rx_bound(1000, 100);
}

/* UCX's invalid_am_bcopy_length / invalid_put_bcopy_length */
TEST_P(uct_contract, bcopy_that_packs_too_much_is_refused)
{
    check_bcopy_overrun();
}

STRAND_UCT_INSTANTIATE(uct_contract);

/* What of the contract dc_strand's DCIs and credits decide (rc_strand has
 * a QP per endpoint and no flow control), and the MD's attributes (the
 * MD's, not a transport's: once): on dc_strand only */
class dc_strand_uct_contract : public uct_contract {};

/* 128 eps x 16 credits fit the receiver's 4095 buffers: the device adds
 * no unfairness of its own, and the dispatch must be even. */
TEST_P(dc_strand_uct_contract, pending_fairness_128_eps)
{
    set_env("UCX_DC_STRAND_FC_WND_SIZE", "16");
    check_fairness(128, 500, true);
}

/* The default credit window: 128 eps may send far more than the receiver
 * has buffers, so receiver-not-ready retries happen while it is not
 * progressed. With one DCI the dispatch is still even. */
TEST_P(dc_strand_uct_contract, pending_fairness_128_eps_one_dci)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    check_fairness(128, 500, true);
}

/* The default credit window over 8 DCIs with dcs_quota (an ep holds a
 * whole DCI and gives it back after its quota while others wait): even. */
TEST_P(dc_strand_uct_contract, pending_fairness_128_eps_dcs_quota)
{
    set_env("UCX_DC_STRAND_TX_POLICY", "dcs_quota");
    check_fairness(128, 500, true);
}

/* The defaults (streams over 8 DCIs, a credit window of 512 per ep) for
 * UCX's 10k rounds, judged as UCX judges it: no ep starves. Evenness is
 * not promised here: 128 eps may have far more in flight than the
 * receiver has buffers, and a moderated CQE frees up to 32 sends where
 * the receiver hands over 16 messages a call, so when the receiver falls
 * behind (a loaded machine) senders meet receiver-not-ready back-off, in
 * which a DCI's eps wait while the other DCIs go on (as on a NIC; one
 * DCI's eps sent 65 where others sent 3000). The credit-window test above
 * holds evenness where the window keeps the receiver ahead. */
TEST_P(dc_strand_uct_contract, pending_fairness_128_eps_defaults)
{
    check_fairness(128, under_valgrind() ? 200 : 10000, false);
}

TEST_P(dc_strand_uct_contract, ep_destroy_completes_every_operation_one_dci)
{
    set_env("UCX_DC_STRAND_NUM_DCI", "1");
    check_destroy_completes_all(under_valgrind() ? 10 : 100);
}

/* What UCX's ib MD reports for the same capabilities (uct_ib_md_query):
 * registration with memory handles and remote keys, no allocation, host
 * memory, 8-byte packed keys, the registration cost of its cache or of a
 * direct registration. */
TEST_P(dc_strand_uct_contract, md_attributes_as_ucx_ib)
{
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_EQ(UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY,
              attr.cap.flags);
    EXPECT_EQ(ULONG_MAX, attr.cap.max_alloc);
    EXPECT_EQ(1ul << 40, attr.cap.max_reg) << "the device's max_mr_size";
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.reg_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.access_mem_types);
    EXPECT_EQ(0u, attr.cap.alloc_mem_types);
    EXPECT_EQ(0u, attr.cap.detect_mem_types);
    EXPECT_EQ(8u, attr.rkey_packed_size);
    EXPECT_STREQ("strand", attr.component_name);
    /* with the registration cache: its overhead, flat (UCX's default) */
    EXPECT_GT(attr.reg_cost.c, 0);
    EXPECT_LT(attr.reg_cost.c, 1e-6);
    EXPECT_EQ(0, attr.reg_cost.m);
    bool any_cpu = false;
    for (unsigned c = 0; c < UCS_CPU_SETSIZE; ++c) {
        any_cpu |= ucs_cpu_is_set(c, &attr.local_cpus);
    }
    EXPECT_TRUE(any_cpu);

    uct_component_attr_t cattr;
    cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_FLAGS;
    ASSERT_EQ(UCS_OK, uct_component_query(m_component, &cattr));
    EXPECT_EQ(0u, cattr.flags) << "no connection manager, as UCX's ib";

    /* direct registration: UCX ib's defaults, 16 us + 0.06 ns/byte */
    set_env("UCX_STRAND_RCACHE", "no");
    ASSERT_EQ(UCS_OK, open_md());
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_DOUBLE_EQ(16e-6, attr.reg_cost.c);
    EXPECT_DOUBLE_EQ(0.06e-9, attr.reg_cost.m);

    /* an 8-byte key packs and unpacks to what the MD registered */
    std::vector<uint8_t> buf(4096);
    uct_mem_h            memh;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    uint8_t packed[16];
    memset(packed, 0xee, sizeof(packed));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed));
    EXPECT_EQ(0xee, packed[8]) << "packed past rkey_packed_size";
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed, &rkey));
    uint32_t key;
    memcpy(&key, packed, sizeof(key));
    EXPECT_EQ(key, (uint32_t)rkey.rkey);
    uct_rkey_release(m_component, &rkey);
    uct_md_mem_dereg(m_md, memh);
}

INSTANTIATE_TEST_SUITE_P(dc_strand, dc_strand_uct_contract,
                         ::testing::Values("dc_strand"), strand_tl_name);
