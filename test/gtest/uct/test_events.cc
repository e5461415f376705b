/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Events on both transports (dc_strand/events.*, rc_strand/events.*), the
 * rule docs/user-guide.md ("Events") states: uct_iface_event_arm says
 * UCS_ERR_BUSY while a completion or a received message waits that
 * progress would handle, whatever event kinds it is asked for; otherwise
 * the event fd becomes readable when one comes. And what a sender posted
 * goes without another call of the sender's: a receiver asleep in its fd
 * wakes for a message whose endpoint was new (rc_strand: the async thread
 * connects the QP and rings the doorbells it held, rc/rc_locked.h).
 * Every wait is bounded: a regression fails, it never hangs.
 */
#include "uct_fixture.h"

#include <poll.h>

class events : public strand_uct_tl {
protected:
    /* A on m_worker, B on a worker of its own (progressing A never takes
     * B's completions) */
    void open_apart()
    {
        open_pair_own_workers();
        ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_a.iface, &m_fd_a));
        ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &m_fd_b));
    }

    /* ... and connected: a message there (rc_strand's QP wired) */
    void open_connected()
    {
        open_apart();
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1));
        ASSERT_TRUE(progress_b_until([&] { return m_b.am.msgs.size() == 1; }));
        flush(m_ep);
        m_b.am.msgs.clear();
    }

    bool progress_b_until(const std::function<bool()> &cond, double secs = 10)
    {
        return progress_with_until([this] { uct_worker_progress(m_worker_b); },
                                   cond, secs);
    }

    static int readable(int fd, int ms)
    {
        struct pollfd pfd = {fd, POLLIN, 0};
        return poll(&pfd, 1, ms);
    }

    /* arm with events until it says busy; each OK must be followed by the
     * fd waking within a second (the completion came after the arm) */
    ucs_status_t arm_until_busy(uct_iface_h iface, int fd, unsigned events)
    {
        for (int i = 0; i < 100; ++i) {
            ucs_status_t status = uct_iface_event_arm(iface, events);
            if (status != UCS_OK) {
                return status;
            }
            if (readable(fd, 1000) != 1) {
                return UCS_ERR_TIMED_OUT;
            }
        }
        return UCS_OK;
    }

    int m_fd_a = -1, m_fd_b = -1;
};

static const unsigned all_kinds[] = {UCT_EVENT_RECV, UCT_EVENT_RECV_SIG,
                                     UCT_EVENT_SEND_COMP,
                                     UCT_EVENT_RECV | UCT_EVENT_RECV_SIG |
                                             UCT_EVENT_SEND_COMP};

/* A message in B's receive queue that B's progress has not taken: every
 * arm says busy, whatever it asks for; taken, the arm is accepted and the
 * fd stays quiet. */
TEST_P(events, a_received_message_makes_every_arm_busy)
{
    open_connected();
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 2, nullptr, 0));
    flush(m_ep); /* acknowledged by B's device: B's CQE is written */
    ASSERT_EQ(UCS_ERR_BUSY, arm_until_busy(m_b.iface, m_fd_b, UCT_EVENT_RECV));
    for (unsigned kinds : all_kinds) {
        EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_b.iface, kinds))
                << "events 0x" << std::hex << kinds;
    }
    ASSERT_TRUE(progress_b_until([&] { return m_b.am.msgs.size() == 1; }));
    progress_b_until([] { return false; }, 0.05); /* the rest of it */
    for (unsigned kinds : all_kinds) {
        EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, kinds))
                << "events 0x" << std::hex << kinds;
    }
    EXPECT_EQ(0, readable(m_fd_b, 0)) << "an event for nothing";
}

/* B armed and asleep: a message sent then wakes it within a second, for
 * RECV and for RECV_SIG (active messages are sent solicited). */
TEST_P(events, a_message_after_the_arm_wakes_the_receiver)
{
    open_connected();
    uint64_t seq = 10;
    for (unsigned kinds : {UCT_EVENT_RECV, UCT_EVENT_RECV_SIG}) {
        ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, kinds));
        ASSERT_EQ(0, readable(m_fd_b, 0));
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, ++seq));
        EXPECT_EQ(1, readable(m_fd_b, 1000))
                << "events 0x" << std::hex << kinds << ": B never woke";
        ASSERT_TRUE(progress_b_until([&] { return !m_b.am.msgs.empty(); }));
        m_b.am.msgs.clear();
        flush(m_ep);
        progress_b_until([] { return false; }, 0.05);
    }
}

/* A's send completions: one waiting makes the arm busy; armed first, a
 * zero-copy GET's and a fetching atomic's completion wake A within a
 * second (B never progresses: both are one-sided). */
TEST_P(events, rma_completions_wake_the_initiator)
{
    open_connected();
    region target, local;
    ASSERT_NO_FATAL_FAILURE(reg(target, 64 * 1024));
    ASSERT_NO_FATAL_FAILURE(reg(local, 64 * 1024));
    auto data = pattern(target.buf.size(), 7);
    memcpy(target.buf.data(), data.data(), data.size());
    uct_iov_t iov = {local.buf.data(), local.buf.size(), local.memh, 0, 1};

    /* posted before the arm */
    test_comp c;
    comp_init(&c);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep, &iov, 1, addr(target),
                                               target.rkey.rkey, &c.uct));
    EXPECT_EQ(UCS_ERR_BUSY,
              arm_until_busy(m_a.iface, m_fd_a, UCT_EVENT_SEND_COMP));
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(data, local.buf);

    /* posted after the arm */
    std::fill(local.buf.begin(), local.buf.end(), 0);
    comp_init(&c);
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_a.iface, UCT_EVENT_SEND_COMP));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep, &iov, 1, addr(target),
                                               target.rkey.rkey, &c.uct));
    EXPECT_EQ(1, readable(m_fd_a, 1000)) << "no event for the GET";
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(data, local.buf);

    uint64_t word = 40, old = 0;
    memcpy(target.buf.data(), &word, sizeof(word));
    comp_init(&c);
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_a.iface, UCT_EVENT_SEND_COMP));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 2, &old,
                                    addr(target), target.rkey.rkey, &c.uct));
    EXPECT_EQ(1, readable(m_fd_a, 1000)) << "no event for the atomic";
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(40u, old);
    memcpy(&word, target.buf.data(), sizeof(word));
    EXPECT_EQ(42u, word);
    unreg(local);
    unreg(target);
}

/* The case at the transport: a new endpoint sends, its worker is
 * never progressed again, the receiver arms and sleeps: the message comes
 * (rc_strand's connection is made and the held doorbells rung by the
 * async thread) and wakes it. Then again with a PUT that B never sees:
 * the data lands without A's progress. */
TEST_P(events, what_a_new_endpoint_sent_arrives_without_its_progress)
{
    open_apart();
    region target;
    ASSERT_NO_FATAL_FAILURE(reg(target, 4096));
    auto data = pattern(64, 3);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 77, nullptr, 0));
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, data.data(), data.size(),
                                       addr(target), target.rkey.rkey));
    /* B: progress, arm, sleep; never A */
    bool woke = progress_with_until(
            [&] {
                if (uct_worker_progress(m_worker_b) != 0) {
                    return;
                }
                if (uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV) == UCS_OK) {
                    readable(m_fd_b, 1000);
                }
            },
            [&] { return !m_b.am.msgs.empty(); }, 5);
    ASSERT_TRUE(woke) << "the message never came without A's progress";
    uint64_t hdr;
    memcpy(&hdr, m_b.am.msgs[0].data(), sizeof(hdr));
    EXPECT_EQ(77u, hdr);
    /* the PUT went in the same doorbell: in B's memory, in order */
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((memcmp(target.buf.data(), data.data(), data.size()) != 0) &&
           (std::chrono::steady_clock::now() < deadline)) {
        usleep(1000);
    }
    EXPECT_EQ(0, memcmp(target.buf.data(), data.data(), data.size()));
    flush(m_ep);
    unreg(target);
}

/* Event fd: armed for receives, it wakes on an arriving message; armed
 * for send completions, on the completion; arming with unprocessed
 * completions says busy. The pair connected first: rc_strand's connection
 * request is a message to B, which B's arm rightly reports. */
TEST_P(events, event_fd_and_arm)
{
    open_connected();
    ASSERT_TRUE(m_b.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV);
    ASSERT_TRUE(m_a.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_SEND_COMP);
    ASSERT_TRUE(m_a.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);

    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "an event before anything was sent";

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 42, nullptr, 0));
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no receive event";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 1;
    }));
    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV));
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "a stale event after re-arming";
    flush(m_ep);

    /* send completion of a zero-copy PUT */
    region r;
    reg(r, 4096);
    std::vector<uint8_t> src = pattern(4096, 9);
    uct_mem_h            sm;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, src.data(), src.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &sm));
    uct_iov_t iov = {src.data(), src.size(), sm, 0, 1};
    test_comp c;
    comp_init(&c);
    /* every interface has a channel of its own */
    int fd_a;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_a.iface, &fd_a));
    EXPECT_NE(fd, fd_a);
    struct pollfd pfd_a = {fd_a, POLLIN, 0};
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_a.iface, UCT_EVENT_SEND_COMP));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_put_zcopy(m_ep, &iov, 1, addr(r), r.rkey.rkey, &c.uct));
    ASSERT_EQ(1, poll(&pfd_a, 1, 5000)) << "no send completion event";
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "the receiver woke for a send event";
    ASSERT_TRUE(progress_until([&] { return c.done != 0; }));
    EXPECT_EQ(0, memcmp(r.buf.data(), src.data(), src.size()));
    uct_md_mem_dereg(m_md, sm);
    unreg(r);
}

/* Spec 9 (arming): the transport arms with its own consumer index and a
 * sequence number that moves on with every event; a device that ignores a
 * stale arm then still wakes it, round after round. */
TEST_P(events, receive_events_round_after_round)
{
    open_connected(); /* rc_strand: its request is a message to B */
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    struct pollfd pfd = {fd, POLLIN, 0};
    for (unsigned round = 0; round < 20; ++round) {
        ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV))
                << round;
        EXPECT_EQ(0, poll(&pfd, 1, 0)) << "an event before the message, "
                                          "round "
                                       << round;
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, round));
        ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event in round " << round;
        ASSERT_TRUE(progress_until([&] {
            uct_worker_progress(m_worker_b);
            return m_b.am.msgs.size() == round + 1;
        }));
    }
}

/* An active message is solicited: UCT_EVENT_RECV_SIG (a solicited-only
 * arm) wakes the receiver for it. */
TEST_P(events, recv_sig_wakes_up_for_active_messages)
{
    open_connected(); /* rc_strand: its request is a message to B */
    ASSERT_TRUE(m_b.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV_SIG);
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b.iface, &fd));
    struct pollfd pfd = {fd, POLLIN, 0};

    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV_SIG));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 5, 7, nullptr, 0));
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event for an am_short";
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 1;
    }));

    std::vector<uint8_t> v = pattern(300, 1);
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(m_b.iface, UCT_EVENT_RECV_SIG));
    ASSERT_EQ((ssize_t)v.size(),
              uct_ep_am_bcopy(m_ep, 5, pack_cb, &v, UCT_SEND_FLAG_SIGNALED));
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event for a signaled am_bcopy";
    ASSERT_TRUE(progress_until([&] {
        uct_worker_progress(m_worker_b);
        return m_b.am.msgs.size() == 2;
    }));
    EXPECT_EQ(v, m_b.am.msgs[1]);
}

STRAND_UCT_INSTANTIATE(events);
