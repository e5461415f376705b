/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver not ready (spec section 8: "no receive WQE -> RNR NAK with the
 * responder's min_rnr_timer; requester retries rnr_retry times (7 =
 * infinite) then RNR_RETRY_EXC_ERR and ERR"), as a ConnectX does it: the
 * NAKed flow waits the RNR timer and sends nothing meanwhile, then makes one
 * go-back-N pass from the NAKed PSN; the responder executes nothing of the
 * flow after the NAKed packet and answers the packets behind it with no
 * further NAK. Asserted with the device's packet counters (smlx5_qp_stats),
 * never with time.
 */
#include "sim_fixture.h"

#include <algorithm>
#include <functional>

/* A suite's RNR and transport timers (read when the device opens), and
 * no injected faults. */
class sim_timers_fixture : public sim_fixture {
protected:
    sim_timers_fixture(const char *rnr_ns, const char *timeout_ns)
        : m_rnr_ns(rnr_ns), m_timeout_ns(timeout_ns)
    {
    }

    void SetUp() override
    {
        setenv("STRAND_SIM_RNR_NS", m_rnr_ns, 1);
        setenv("STRAND_SIM_TIMEOUT_NS", m_timeout_ns, 1);
        unsetenv("STRAND_SIM_FAULTS");
        sim_fixture::SetUp();
    }

    void TearDown() override
    {
        sim_fixture::TearDown();
        unsetenv("STRAND_SIM_RNR_NS");
        unsetenv("STRAND_SIM_TIMEOUT_NS");
    }

private:
    const char *m_rnr_ns, *m_timeout_ns;
};

/* a short RNR timer; a transport timer that never fires here, so that
 * every retransmission counted comes from an RNR retry */
class sim_rnr : public sim_timers_fixture {
protected:
    sim_rnr() : sim_timers_fixture("200000", "10000000000")
    {
    }

    static constexpr unsigned NUM_DCIS    = 4;
    static constexpr unsigned BURST       = 4; /* messages per post, per flow */
    static constexpr unsigned ROUNDS      = 2; /* bursts per flow */
    static constexpr unsigned MIN_RETRIES = 5; /* RNR periods watched */
    static constexpr uint32_t DC_MSG_LEN  = 64;   /* one packet */
    static constexpr uint32_t RC_MSG_LEN  = 5000; /* two packets or more */
    static constexpr uint32_t HDR_LEN     = 8;    /* flow id, sequence */

    /* One requester flow and where its messages live. */
    struct flow {
        smlx5_qp_t *req; /* DCI or RC requester */
        bool        dc;
        uint32_t    msg_len;
        size_t      send_off; /* its messages in the REQ buffer */
        unsigned    posted;
        unsigned    completed; /* send CQEs */
        unsigned    received;  /* receive CQEs */
    };

    uint32_t mtu_bytes() const
    {
        return 128u << m_mtu;
    }

    uint32_t packets_per_msg(const flow &f) const
    {
        return (f.msg_len + mtu_bytes() - 1) / mtu_bytes();
    }

    static smlx5_qp_stats_t stats(smlx5_qp_t *qp)
    {
        smlx5_qp_stats_t st;
        EXPECT_EQ(0, smlx5_qp_stats(qp, &st));
        return st;
    }

    static uint64_t new_packets(const smlx5_qp_stats_t &st)
    {
        return st.pkts_sent - st.pkts_resent;
    }

    /* Poll until `done` holds (progressing the device), at most 10 s. */
    template <typename F> bool wait_for(F done)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            smlx5_progress(m_ctx);
        }
        return true;
    }

    /* Byte `i` of message `seq` of flow `id`: a header, then a pattern. */
    static uint8_t payload_byte(unsigned id, unsigned seq, uint32_t i)
    {
        return (uint8_t)(id * 13 + seq * 7 + i);
    }

    void fill_message(uint8_t *p, unsigned id, unsigned seq, uint32_t len)
    {
        uint32_t hdr[2] = {id, seq};
        for (uint32_t i = 0; i < len; ++i) {
            p[i] = payload_byte(id, seq, i);
        }
        memcpy(p, hdr, sizeof(hdr));
    }

    /* The message is the one `f` sent `seq`-th, byte for byte. */
    void
    check_message(const uint8_t *p, unsigned id, unsigned seq, uint32_t len)
    {
        uint32_t hdr[2];
        memcpy(hdr, p, sizeof(hdr));
        ASSERT_EQ(id, hdr[0]);
        ASSERT_EQ(seq, hdr[1]) << "flow " << id << ": out of order";
        for (uint32_t i = HDR_LEN; i < len; ++i) {
            ASSERT_EQ(payload_byte(id, seq, i), p[i])
                    << "flow " << id << " message " << seq << " byte " << i;
        }
    }

    /* BURST signaled SENDs on flow `id` in one post (one doorbell). */
    void post_burst(unsigned id)
    {
        flow              &f = m_flows[id];
        struct ibv_sge     sges[BURST];
        struct ibv_send_wr wrs[BURST], *bad = nullptr;
        for (unsigned i = 0; i < BURST; ++i, ++f.posted) {
            size_t off = f.send_off + f.posted * f.msg_len;
            fill_message(buf(REQ, off), id, f.posted, f.msg_len);
            sges[i]     = sge(REQ, off, f.msg_len);
            wrs[i]      = make_wr(IBV_WR_SEND, f.posted, &sges[i], 1);
            wrs[i].next = (i + 1 < BURST) ? &wrs[i + 1] : nullptr;
        }
        if (f.dc) {
            smlx5_dc_target_t dc = {m_lid, smlx5_dct_num(m_dct),
                                    SMLX5_DC_KEY_DEFAULT};
            ASSERT_EQ(0, smlx5_post_send_dc(f.req, wrs, &dc, 0, &bad));
        } else {
            ASSERT_EQ(0, smlx5_post_send(f.req, wrs, &bad));
        }
    }

    /* The receive buffers: SRQ slots for the DCT, RQ slots for the RC
     * responder; wr_id = the slot's offset in the RESP buffer. */
    void post_receives()
    {
        const unsigned dc_msgs = NUM_DCIS * BURST * ROUNDS;
        for (unsigned i = 0; i < dc_msgs; ++i) {
            struct ibv_sge     s = sge(RESP, i * DC_MSG_LEN, DC_MSG_LEN);
            struct ibv_recv_wr wr, *bad = nullptr;
            memset(&wr, 0, sizeof(wr));
            wr.wr_id   = i * DC_MSG_LEN;
            wr.sg_list = &s;
            wr.num_sge = 1;
            ASSERT_EQ(0, smlx5_post_srq_recv(m_srq, &wr, &bad));
        }
        for (unsigned i = 0; i < BURST * ROUNDS; ++i) {
            size_t off = RC_RECV_OFF + i * RC_MSG_LEN;
            ASSERT_NO_FATAL_FAILURE(post_recv(RESP, off, RC_MSG_LEN, off));
        }
    }

    flow *flow_of_qpn(uint32_t qpn)
    {
        for (flow &f : m_flows) {
            if (smlx5_qp_num(f.req) == qpn) {
                return &f;
            }
        }
        return nullptr;
    }

    /* One CQE from either CQ: send CQEs complete in SQ order; a receive
     * CQE holds the next message of its flow, intact. */
    void take_completions()
    {
        struct ibv_wc wc;
        while (smlx5_poll_cq(m_scq[REQ], 1, &wc) == 1) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "wr " << wc.wr_id;
            flow *f = flow_of_qpn(wc.qp_num);
            ASSERT_NE(nullptr, f);
            ASSERT_EQ(f->completed, wc.wr_id);
            f->completed++;
        }
        while (smlx5_poll_cq(m_rcq[RESP], 1, &wc) == 1) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
            flow *f = flow_of_qpn(wc.src_qp);
            ASSERT_NE(nullptr, f);
            ASSERT_EQ(f->msg_len, wc.byte_len);
            ASSERT_NO_FATAL_FAILURE(
                    check_message(buf(RESP, wc.wr_id),
                                  (unsigned)(f - m_flows.data()), f->received,
                                  f->msg_len));
            f->received++;
        }
    }

    bool all_delivered() const
    {
        return std::all_of(m_flows.begin(), m_flows.end(), [](const flow &f) {
            return (f.completed == f.posted) && (f.received == f.posted);
        });
    }

    /* NUM_DCIS DCIs to one DCT whose SRQ is empty, and the fixture's RC
     * pair whose responder has no receive WQE. */
    void create_flows()
    {
        m_srq = create_srq(NUM_DCIS * BURST * ROUNDS, 1);
        ASSERT_NE(nullptr, m_srq);
        m_dct = create_dct(m_srq, SMLX5_DC_KEY_DEFAULT);
        ASSERT_NE(nullptr, m_dct);
        for (unsigned i = 0; i < NUM_DCIS; ++i) {
            smlx5_qp_t *dci = create_dci();
            ASSERT_NE(nullptr, dci);
            m_flows.push_back({dci, true, DC_MSG_LEN,
                               i * DC_MSG_LEN * BURST * ROUNDS, 0, 0, 0});
        }
        m_flows.push_back({m_qp[REQ], false, RC_MSG_LEN, RC_SEND_OFF, 0, 0, 0});
    }

    /* A requester ends in RNR_RETRY_EXC_ERR after exactly `rnr_retry`
     * retries (one NAK each, plus the first), nothing else sent; a WQE
     * posted while it waits is never sent, and flushed. */
    void check_rnr_retries_exhausted(smlx5_qp_t *req, uint8_t rnr_retry,
                                     const std::function<void(uint64_t)> &send)
    {
        ASSERT_NO_FATAL_FAILURE(send(1));
        ASSERT_TRUE(wait_for([&] { return stats(req).rnr_naks_rcvd > 0; }));
        uint64_t in_flight = new_packets(stats(req));
        ASSERT_NO_FATAL_FAILURE(send(2));
        struct ibv_wc wc;
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 10000));
        EXPECT_EQ(1u, wc.wr_id);
        EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
        ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 10000));
        EXPECT_EQ(2u, wc.wr_id);
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);

        smlx5_qp_stats_t st = stats(req);
        EXPECT_EQ(rnr_retry, st.rnr_retries);
        EXPECT_EQ(rnr_retry + 1u, st.rnr_naks_rcvd);
        EXPECT_EQ(in_flight, new_packets(st));
        EXPECT_LE(st.pkts_resent, rnr_retry * in_flight); /* a pass each */
        EXPECT_EQ(0u, st.seq_naks_rcvd);
        struct ibv_qp_attr a;
        ASSERT_EQ(0, smlx5_query_qp(req, &a, IBV_QP_STATE, nullptr));
        EXPECT_EQ(IBV_QPS_ERR, a.qp_state);
    }

    /* An RC requester with `rnr_retry`, connected to a responder with no
     * receive WQE. */
    smlx5_qp_t *create_rc_requester(uint8_t rnr_retry)
    {
        smlx5_qp_t *q[2];
        for (int i = 0; i < 2; ++i) {
            q[i] = create_rc_qp(m_scq[i], m_rcq[i]);
            EXPECT_NE(nullptr, q[i]);
            if (q[i] == nullptr) {
                return nullptr;
            }
            m_extra_qps.push_back(q[i]);
            rc_to_init(q[i]);
        }
        for (int i = 0; i < 2; ++i) {
            rc_to_rtr(q[i], smlx5_qp_num(q[1 - i]));
        }
        rc_to_rts(q[0], rnr_retry);
        return q[0];
    }

    void post_rc_send(smlx5_qp_t *req, uint64_t wr_id)
    {
        struct ibv_sge     s  = sge(REQ, 0, RC_MSG_LEN);
        struct ibv_send_wr wr = make_wr(IBV_WR_SEND, wr_id, &s, 1), *bad;
        ASSERT_EQ(0, smlx5_post_send(req, &wr, &bad));
    }

    static constexpr size_t RC_SEND_OFF = 4096; /* after the DCIs' messages */
    static constexpr size_t RC_RECV_OFF = 4096; /* after the DCT's slots */

    smlx5_srq_t      *m_srq = nullptr;
    smlx5_qp_t       *m_dct = nullptr;
    std::vector<flow> m_flows;
};

TEST_F(sim_rnr, waiting_flows_send_one_pass_per_period_then_deliver_in_order)
{
    static_assert(NUM_DCIS * DC_MSG_LEN * BURST * ROUNDS <= RC_SEND_OFF,
                  "DCI messages overlap the RC ones");
    static_assert(RC_SEND_OFF + RC_MSG_LEN * BURST * ROUNDS <= BUF_SIZE,
                  "messages do not fit the buffer");
    ASSERT_NO_FATAL_FAILURE(create_flows());
    const unsigned num_flows = m_flows.size();

    /* the receivers have no buffer: each flow's first packet is NAKed */
    for (unsigned id = 0; id < num_flows; ++id) {
        ASSERT_NO_FATAL_FAILURE(post_burst(id));
    }
    std::vector<smlx5_qp_stats_t> first(num_flows);
    for (unsigned id = 0; id < num_flows; ++id) {
        ASSERT_TRUE(wait_for([&] {
            return stats(m_flows[id].req).rnr_naks_rcvd > 0;
        })) << "flow "
            << id << " got no RNR NAK";
        first[id] = stats(m_flows[id].req);
        /* one doorbell sent the whole burst before the NAK came back */
        EXPECT_EQ(BURST * packets_per_msg(m_flows[id]), new_packets(first[id]));
    }

    /* work posted while the flows wait */
    for (unsigned id = 0; id < num_flows; ++id) {
        ASSERT_NO_FATAL_FAILURE(post_burst(id));
    }
    for (unsigned id = 0; id < num_flows; ++id) {
        ASSERT_TRUE(wait_for([&] {
            return stats(m_flows[id].req).rnr_retries >=
                   first[id].rnr_retries + MIN_RETRIES;
        })) << "flow "
            << id << " does not retry";
    }

    /* responders first: what they sent, the requesters have sent for */
    smlx5_qp_stats_t dct = stats(m_dct), rc_resp = stats(m_qp[RESP]);
    uint64_t         dc_periods = 0;
    for (unsigned id = 0; id < num_flows; ++id) {
        const flow      &f         = m_flows[id];
        smlx5_qp_stats_t now       = stats(f.req);
        uint64_t         in_flight = new_packets(first[id]);
        /* nothing new left while the receiver was not ready */
        EXPECT_EQ(in_flight, new_packets(now)) << "flow " << id;
        /* per RNR period one go-back-N pass of what was in flight at the
         * NAK, at least the NAKed packet, and one NAK back */
        EXPECT_LE(now.pkts_resent, now.rnr_retries * in_flight)
                << "flow " << id;
        EXPECT_GE(now.pkts_resent, now.rnr_retries) << "flow " << id;
        EXPECT_LE(now.rnr_naks_rcvd, now.rnr_retries + 1) << "flow " << id;
        EXPECT_EQ(0u, now.seq_naks_rcvd) << "flow " << id;
        if (f.dc) {
            dc_periods += now.rnr_retries + 1;
        } else {
            EXPECT_LE(rc_resp.rnr_naks_sent, now.rnr_retries + 1);
        }
    }
    /* a burst behind an RNR NAK is dropped without another NAK */
    EXPECT_LE(dct.rnr_naks_sent, dc_periods);
    EXPECT_EQ(0u, dct.seq_naks_sent);
    EXPECT_EQ(0u, rc_resp.seq_naks_sent);
    EXPECT_GE(dct.reqs_discarded, NUM_DCIS * (BURST - 1u));
    EXPECT_GE(rc_resp.reqs_discarded,
              BURST * packets_per_msg(m_flows.back()) - 1u);
    struct ibv_wc wc;
    EXPECT_EQ(0, smlx5_poll_cq(m_scq[REQ], 1, &wc)); /* nothing acknowledged */
    EXPECT_EQ(0, smlx5_poll_cq(m_rcq[RESP], 1, &wc));

    /* buffers: every message arrives once, in order, intact */
    ASSERT_NO_FATAL_FAILURE(post_receives());
    bool failed = false;
    ASSERT_TRUE(wait_for([&] {
        take_completions();
        failed = HasFatalFailure();
        return failed || all_delivered();
    }));
    ASSERT_FALSE(failed);
    EXPECT_TRUE(cq_stays_empty(m_rcq[RESP], 20)); /* no message twice */
    for (const flow &f : m_flows) {
        EXPECT_EQ(BURST * ROUNDS, f.received);
        /* each packet went out once as new; the rest were retries */
        EXPECT_EQ(BURST * ROUNDS * packets_per_msg(f),
                  new_packets(stats(f.req)));
    }
}

TEST_F(sim_rnr, dci_rnr_retries_exhausted_is_rnr_retry_exc_err)
{
    m_srq = create_srq(4, 1); /* never gets a receive WQE */
    ASSERT_NE(nullptr, m_srq);
    m_dct = create_dct(m_srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, m_dct);
    const uint8_t rnr_retry = 2;
    smlx5_qp_t   *dci       = create_dci(0, 0, rnr_retry);
    ASSERT_NE(nullptr, dci);
    smlx5_dc_target_t dc = {m_lid, smlx5_dct_num(m_dct), SMLX5_DC_KEY_DEFAULT};
    check_rnr_retries_exhausted(dci, rnr_retry, [&](uint64_t wr_id) {
        struct ibv_sge     s  = sge(REQ, 0, DC_MSG_LEN);
        struct ibv_send_wr wr = make_wr(IBV_WR_SEND, wr_id, &s, 1), *bad;
        ASSERT_EQ(0, smlx5_post_send_dc(dci, &wr, &dc, 0, &bad));
    });
}

TEST_F(sim_rnr, rc_rnr_retries_exhausted_is_rnr_retry_exc_err)
{
    const uint8_t rnr_retry = 3;
    smlx5_qp_t   *req       = create_rc_requester(rnr_retry);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_NE(nullptr, req);
    check_rnr_retries_exhausted(req, rnr_retry, [&](uint64_t wr_id) {
        ASSERT_NO_FATAL_FAILURE(post_rc_send(req, wr_id));
    });
}

/* Every packet twice (fault dup=1): the duplicate of a request is NAKed
 * again, and every NAK arrives twice. A flow that waits has sent nothing
 * since the NAK that began the wait, so the others answer older packets:
 * still one retry per RNR period, and exactly rnr_retry of them. */
TEST_F(sim_rnr, duplicated_rnr_naks_count_one_retry_per_period)
{
    const uint8_t rnr_retry = 3;
    smlx5_qp_t   *req       = create_rc_requester(rnr_retry);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_NE(nullptr, req);
    ASSERT_EQ(0, smlx5_set_faults(m_ctx, "dup=1"));
    ASSERT_NO_FATAL_FAILURE(post_rc_send(req, 5));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 10000));
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
    smlx5_qp_stats_t st = stats(req);
    EXPECT_EQ(rnr_retry, st.rnr_retries);
    EXPECT_GT(st.rnr_naks_rcvd, rnr_retry + 1u); /* the duplicates came */
    EXPECT_EQ(0, smlx5_set_faults(m_ctx, ""));
}

/* A DCT keeps the context of a requester in the middle of an association,
 * however many other requesters connect meanwhile (docs/software-device.md,
 * Reliability: a NIC keeps DC responder state in host memory). A DCI's two
 * SENDs: the first takes the only receive buffer, the second is NAKed RNR
 * and waits a long RNR timer; meanwhile 272 other DCI channels connect with
 * a WRITE each. The second SEND then goes again, without a connect: it must
 * land (the device forgot such requesters when more than 256 came). */
/* an RNR timer long enough for 272 connects to happen while it runs */
class sim_dct_contexts : public sim_timers_fixture {
protected:
    sim_dct_contexts() : sim_timers_fixture("500000000", "2000000000")
    {
    }
};

TEST_F(sim_dct_contexts, a_requester_waiting_out_rnr_keeps_its_context)
{
    static constexpr unsigned OTHER_DCIS = 17, CHANNELS = 16;
    smlx5_srq_t              *srq = create_srq(16, 1);
    ASSERT_NE(nullptr, srq);
    smlx5_qp_t *dct = create_dct(srq, SMLX5_DC_KEY_DEFAULT);
    ASSERT_NE(nullptr, dct);
    smlx5_dc_target_t t = {m_lid, smlx5_dct_num(dct), SMLX5_DC_KEY_DEFAULT};
    post_srq_recv(srq, RESP, 0, 64, 1);

    /* two SENDs in one doorbell: the second finds no buffer */
    smlx5_qp_t *dci = create_dci();
    ASSERT_NE(nullptr, dci);
    for (unsigned i = 0; i < 128; ++i) {
        *buf(REQ, i) = (uint8_t)(5 + 3 * i);
    }
    struct ibv_sge     s[2]  = {sge(REQ, 0, 64), sge(REQ, 64, 64)};
    struct ibv_send_wr wr[2] = {make_wr(IBV_WR_SEND, 10, &s[0], 1),
                                make_wr(IBV_WR_SEND, 11, &s[1], 1)};
    wr[0].next               = &wr[1];
    struct ibv_send_wr *bad  = nullptr;
    ASSERT_EQ(0, smlx5_post_send_dc(dci, wr, &t, 0, &bad));
    struct ibv_wc wc;
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc));
    EXPECT_EQ(10u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    smlx5_qp_stats_t st;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        smlx5_progress(m_ctx);
        ASSERT_EQ(0, smlx5_qp_stats(dci, &st));
    } while ((st.rnr_naks_rcvd == 0) &&
             (std::chrono::steady_clock::now() < deadline));
    ASSERT_GT(st.rnr_naks_rcvd, 0u);

    /* 272 other requesters connect while it waits */
    for (unsigned d = 0; d < OTHER_DCIS; ++d) {
        smlx5_qp_t *other = create_dci(4);
        ASSERT_NE(nullptr, other);
        for (unsigned c = 0; c < CHANNELS; ++c) {
            struct ibv_sge     ws = sge(REQ, 256, 8);
            struct ibv_send_wr w = make_wr(IBV_WR_RDMA_WRITE, 1000 + c, &ws, 1);
            w.wr.rdma.remote_addr = addr(RESP, 256 + 8 * c);
            w.wr.rdma.rkey        = rkey(RESP);
            ASSERT_EQ(0, smlx5_post_send_dc(other, &w, &t, c, &bad));
        }
        for (unsigned c = 0; c < CHANNELS; ++c) {
            ASSERT_TRUE(poll_one(m_scq[REQ], &wc)) << "DCI " << d;
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "DCI " << d;
            ASSERT_NE(11u, wc.wr_id) << "the waiting SEND completed early";
        }
    }

    /* a buffer again: the waiting SEND lands once its RNR timer expires */
    post_srq_recv(srq, RESP, 64, 64, 2);
    ASSERT_TRUE(poll_one(m_scq[REQ], &wc, 1500))
            << "the waiting SEND's requester was forgotten by the DCT";
    EXPECT_EQ(11u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    for (uint64_t id : {1, 2}) {
        ASSERT_TRUE(poll_one(m_rcq[RESP], &wc));
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    }
    EXPECT_EQ(0, memcmp(buf(RESP), buf(REQ), 128));
}
