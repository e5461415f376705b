/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fabric under the software device: segment lifecycle, LIDs, packet
 * rings (loss-free, ordered per sender, bounded), wakeups, dead peers.
 */
#include <gtest/gtest.h>

extern "C" {
#include "sim/fabric.h"
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <signal.h>
#include <string>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

std::string fresh_name()
{
    static std::atomic<int> counter{0};
    return "strand_fab_" + std::to_string(getpid()) + "_" +
           std::to_string(counter++);
}

bool shm_exists(const std::string &name)
{
    struct stat st;
    return stat(("/dev/shm/" + name).c_str(), &st) == 0;
}

/* A child process that opens a port on fabric `name` and waits to be
 * killed; its pid and the port's LID. */
void fork_port_owner(const std::string &name, pid_t *pid_p, uint16_t *lid_p)
{
    int pipefd[2];
    ASSERT_EQ(0, pipe(pipefd));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        sim_fabric_t *cf;
        sim_port_t   *cp;
        if (sim_fabric_attach(name.c_str(), &cf) ||
            sim_fabric_port_open(cf, &cp))
            _exit(1);
        uint16_t lid = sim_fabric_port_lid(cp);
        if (write(pipefd[1], &lid, sizeof(lid)) != sizeof(lid))
            _exit(2);
        pause();
        _exit(0);
    }
    *pid_p    = pid;
    *lid_p    = 0;
    ssize_t n = read(pipefd[0], lid_p, sizeof(*lid_p));
    close(pipefd[0]);
    close(pipefd[1]);
    ASSERT_EQ((ssize_t)sizeof(*lid_p), n);
}

struct rx_log {
    std::vector<std::vector<uint8_t>> pkts;
    static void                       cb(void *arg, const void *pkt, size_t len)
    {
        auto          *self = static_cast<rx_log *>(arg);
        const uint8_t *p    = static_cast<const uint8_t *>(pkt);
        self->pkts.emplace_back(p, p + len);
    }
};

/* Wait (a poll loop with a deadline) until the port's waiter sleeps with
 * no time limit: observable state instead of a sleep that orders events. */
bool wait_until_asleep(sim_port_t *p)
{
    sim_port_stats_t st;
    for (int i = 0; i < 5000; ++i) {
        sim_fabric_port_stats(p, &st);
        if (st.asleep_untimed) {
            return true;
        }
        usleep(1000);
    }
    return false;
}

} // namespace

TEST(fabric, last_detach_removes_the_segment)
{
    std::string   name = fresh_name();
    sim_fabric_t *a, *b;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &a));
    EXPECT_TRUE(shm_exists(name));
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &b));
    sim_fabric_detach(a);
    EXPECT_TRUE(shm_exists(name)); /* b still attached */
    sim_fabric_detach(b);
    EXPECT_FALSE(shm_exists(name));
}

TEST(fabric, bad_name_is_einval)
{
    sim_fabric_t *f;
    EXPECT_EQ(-EINVAL, sim_fabric_attach("a/b", &f));
}

TEST(fabric, lids_are_unique_nonzero_and_not_reused_at_once)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    sim_port_t           *p[4];
    std::vector<uint16_t> lids;
    for (auto &port : p) {
        ASSERT_EQ(0, sim_fabric_port_open(f, &port));
        uint16_t lid = sim_fabric_port_lid(port);
        EXPECT_NE(0, lid);
        EXPECT_LE(lid, 0xbfff);
        for (uint16_t l : lids) {
            EXPECT_NE(l, lid);
        }
        lids.push_back(lid);
    }
    sim_fabric_port_close(p[0]);
    sim_port_t *q;
    ASSERT_EQ(0, sim_fabric_port_open(f, &q));
    EXPECT_NE(lids[0], sim_fabric_port_lid(q));
    /* the closed LID is unreachable */
    EXPECT_EQ(-EHOSTUNREACH, sim_fabric_send(f, lids[0], "x", 1, nullptr, 0));
    EXPECT_EQ(0, sim_fabric_lid_alive(f, lids[0]));
    EXPECT_EQ(1, sim_fabric_lid_alive(f, sim_fabric_port_lid(q)));
    sim_fabric_port_close(q);
    for (int i = 1; i < 4; ++i) {
        sim_fabric_port_close(p[i]);
    }
    sim_fabric_detach(f);
}

TEST(fabric, send_recv_gathers_header_and_payload)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    sim_port_t   *p;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    uint8_t hdr[40], payload[4096];
    for (size_t i = 0; i < sizeof(hdr); ++i)
        hdr[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof(payload); ++i)
        payload[i] = (uint8_t)(i * 3);
    uint16_t lid = sim_fabric_port_lid(p);
    EXPECT_EQ(0, sim_fabric_rx_pending(p));
    ASSERT_EQ(0, sim_fabric_send(f, lid, hdr, sizeof(hdr), payload,
                                 sizeof(payload)));
    EXPECT_EQ(1, sim_fabric_rx_pending(p));
    rx_log log;
    EXPECT_EQ(1u, sim_fabric_recv(p, rx_log::cb, &log, 16));
    ASSERT_EQ(1u, log.pkts.size());
    ASSERT_EQ(sizeof(hdr) + sizeof(payload), log.pkts[0].size());
    EXPECT_EQ(0, memcmp(log.pkts[0].data(), hdr, sizeof(hdr)));
    EXPECT_EQ(0, memcmp(log.pkts[0].data() + sizeof(hdr), payload,
                        sizeof(payload)));
    EXPECT_EQ(-EMSGSIZE, sim_fabric_send(f, lid, hdr, sizeof(hdr), payload,
                                         SIM_FABRIC_MAX_PKT));
    EXPECT_EQ(-EHOSTUNREACH, sim_fabric_send(f, 0, hdr, 1, nullptr, 0));
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
}

TEST(fabric, full_ring_is_eagain_then_drains_in_order)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    sim_port_t   *p;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    uint16_t lid = sim_fabric_port_lid(p);
    uint32_t i;
    for (i = 0; i < SIM_FABRIC_RING_SIZE; ++i) {
        ASSERT_EQ(0, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    }
    EXPECT_EQ(-EAGAIN, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    rx_log log;
    EXPECT_EQ(10u, sim_fabric_recv(p, rx_log::cb, &log, 10));
    EXPECT_EQ(0, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    while (sim_fabric_recv(p, rx_log::cb, &log, 64) > 0) {
    }
    ASSERT_EQ(SIM_FABRIC_RING_SIZE + 1u, log.pkts.size());
    for (uint32_t k = 0; k <= SIM_FABRIC_RING_SIZE; ++k) {
        uint32_t v;
        memcpy(&v, log.pkts[k].data(), 4);
        ASSERT_EQ(k, v);
    }
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
}

/* Producers in other processes: every packet arrives once, in order per
 * producer, even when the ring is full most of the time. */
TEST(fabric, three_producer_processes_nothing_lost_or_reordered)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    sim_port_t   *p;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    uint16_t           lid = sim_fabric_port_lid(p);
    const uint32_t     N   = 30000;
    std::vector<pid_t> kids;
    for (uint32_t k = 0; k < 3; ++k) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            sim_fabric_t *cf;
            if (sim_fabric_attach(name.c_str(), &cf) != 0)
                _exit(1);
            for (uint32_t i = 0; i < N; ++i) {
                uint32_t msg[2] = {k, i};
                int      ret;
                while ((ret = sim_fabric_send(cf, lid, msg, sizeof(msg),
                                              nullptr, 0)) == -EAGAIN) {
                    sched_yield();
                }
                if (ret != 0)
                    _exit(2);
            }
            sim_fabric_detach(cf);
            _exit(0);
        }
        kids.push_back(pid);
    }
    uint32_t next[3] = {0, 0, 0}, total = 0;
    bool     order_ok = true;
    auto     cb       = [](void *arg, const void *pkt, size_t) {
        auto    *st = static_cast<std::pair<uint32_t *, bool *> *>(arg);
        uint32_t msg[2];
        memcpy(msg, pkt, sizeof(msg));
        if ((msg[0] > 2) || (st->first[msg[0]] != msg[1])) {
            *st->second = false;
        } else {
            st->first[msg[0]]++;
        }
    };
    std::pair<uint32_t *, bool *> st(next, &order_ok);
    time_t                        start = time(nullptr);
    while ((total < 3 * N) && (time(nullptr) - start < 60)) {
        total += sim_fabric_recv(p, cb, &st, 64);
    }
    for (pid_t pid : kids) {
        int status;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_TRUE(order_ok);
    EXPECT_EQ(3 * N, total);
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
    EXPECT_FALSE(shm_exists(name));
}

TEST(fabric, killed_process_is_not_alive_and_segment_goes_with_the_last)
{
    std::string name = fresh_name();
    pid_t       pid;
    uint16_t    lid;
    ASSERT_NO_FATAL_FAILURE(fork_port_owner(name, &pid, &lid));
    sim_fabric_t *f;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    EXPECT_EQ(1, sim_fabric_lid_alive(f, lid));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    EXPECT_EQ(0, sim_fabric_lid_alive(f, lid));
    /* the dead process's port is reaped when the next port is opened */
    sim_port_t *p;
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    EXPECT_EQ(-EHOSTUNREACH, sim_fabric_send(f, lid, "x", 1, nullptr, 0));
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
    EXPECT_FALSE(shm_exists(name)); /* the dead one does not hold it */
}

/* A full ring makes a sender wait only while its owner lives: a dead
 * process never drains it, and waiting would block the sender's QP for
 * ever (its retries, its other destinations); the packet is lost instead
 * and the requester's timeout decides. */
TEST(fabric, full_ring_of_a_dead_process_drops_instead_of_eagain)
{
    std::string name = fresh_name();
    pid_t       pid;
    uint16_t    lid;
    ASSERT_NO_FATAL_FAILURE(fork_port_owner(name, &pid, &lid));
    sim_fabric_t *f;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    uint32_t i;
    for (i = 0; i < SIM_FABRIC_RING_SIZE; ++i) {
        ASSERT_EQ(0, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    }
    EXPECT_EQ(-EAGAIN, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    EXPECT_EQ(0, sim_fabric_send(f, lid, &i, sizeof(i), nullptr, 0));
    sim_fabric_detach(f);
}

TEST(fabric, wait_returns_on_packet_timeout_and_wake_sleeping_once)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    sim_port_t   *p;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    uint16_t lid = sim_fabric_port_lid(p);

    EXPECT_EQ(-ETIMEDOUT, sim_fabric_wait(p, 5000000)); /* 5 ms */

    /* a packet from another process wakes a waiter with no time limit;
     * the child sends once the waiter is asleep (told through a pipe) */
    int go[2];
    ASSERT_EQ(0, pipe(go));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        sim_fabric_t *cf;
        char          c;
        if (read(go[0], &c, 1) != 1)
            _exit(3);
        if (sim_fabric_attach(name.c_str(), &cf))
            _exit(1);
        _exit(sim_fabric_send(cf, lid, "y", 1, nullptr, 0) ? 2 : 0);
    }
    std::thread      starter([&] {
        bool asleep = wait_until_asleep(p);
        EXPECT_TRUE(asleep);
        EXPECT_EQ(1, write(go[1], "g", 1));
    });
    sim_port_stats_t before, after;
    sim_fabric_port_stats(p, &before);
    EXPECT_EQ(0, sim_fabric_wait(p, -1));
    sim_fabric_port_stats(p, &after);
    starter.join();
    EXPECT_EQ(1, sim_fabric_rx_pending(p));
    /* one sleep, with no time limit, ended by the packet: no spinning,
     * no naps */
    EXPECT_EQ(before.sleeps + 1, after.sleeps);
    EXPECT_EQ(before.untimed_sleeps + 1, after.untimed_sleeps);
    EXPECT_EQ(0, after.asleep_untimed);
    int status;
    waitpid(pid, &status, 0);
    EXPECT_EQ(0, WEXITSTATUS(status));
    close(go[0]);
    close(go[1]);

    /* a wake from another thread ends an untimed sleep too */
    rx_log log;
    sim_fabric_recv(p, rx_log::cb, &log, 8);
    std::thread waker([p] {
        EXPECT_TRUE(wait_until_asleep(p));
        sim_fabric_port_wake(p);
    });
    EXPECT_EQ(0, sim_fabric_wait(p, -1));
    waker.join();
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
}

/* A wake that comes before the waiter sleeps is not lost (device close
 * wakes its progress thread; it must not sleep through that). */
TEST(fabric, wake_before_wait_is_not_lost)
{
    std::string   name = fresh_name();
    sim_fabric_t *f;
    sim_port_t   *p;
    ASSERT_EQ(0, sim_fabric_attach(name.c_str(), &f));
    ASSERT_EQ(0, sim_fabric_port_open(f, &p));
    sim_fabric_port_wake(p);
    EXPECT_EQ(0, sim_fabric_wait(p, 2000000000ll)); /* at once, not in 2 s */
    EXPECT_EQ(-ETIMEDOUT, sim_fabric_wait(p, 1000000)); /* consumed */
    sim_fabric_port_close(p);
    sim_fabric_detach(f);
}

/* One host's segment of a fabric across hosts (sim_net.h): its LIDs carry
 * the host's index, stay unicast and do not come back soon; a second attachment with another identity or host index (a
 * process with another host list) is refused. */
TEST(fabric_host, lids_carry_the_host_and_stay_unicast)
{
    std::string   name = fresh_name();
    sim_fabric_t *fab;
    ASSERT_EQ(0, sim_fabric_attach_host(name.c_str(), 37, 0x1234, &fab));
    EXPECT_EQ(0x1234u, sim_fabric_identity(fab));
    std::vector<uint16_t> seen;
    for (int round = 0; round < 12; ++round) {
        sim_port_t *port;
        ASSERT_EQ(0, sim_fabric_port_open(fab, &port));
        uint16_t lid = sim_fabric_port_lid(port);
        EXPECT_EQ(37u, sim_fabric_lid_host(lid)) << std::hex << lid;
        EXPECT_LT(lid, 0xc000u) << "a multicast LID";
        EXPECT_NE(0u, lid >> 13) << "generation 0 (LID of the slot alone)";
        EXPECT_TRUE(sim_fabric_lid_local(fab, lid));
        EXPECT_FALSE(sim_fabric_lid_local(fab, (uint16_t)(lid ^ (1u << 7))))
                << "another host's";
        seen.push_back(lid);
        sim_fabric_port_close(port);
    }
    /* the least recently used slot first: no LID comes back soon */
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen.end(), std::adjacent_find(seen.begin(), seen.end()));
    sim_fabric_detach(fab);
}

TEST(fabric_host, another_host_list_is_refused)
{
    std::string   name = fresh_name();
    sim_fabric_t *fab, *other;
    ASSERT_EQ(0, sim_fabric_attach_host(name.c_str(), 1, 0x77, &fab));
    EXPECT_EQ(-EPROTO, sim_fabric_attach_host(name.c_str(), 1, 0x78, &other));
    EXPECT_EQ(-EPROTO, sim_fabric_attach_host(name.c_str(), 2, 0x77, &other));
    EXPECT_EQ(-EPROTO, sim_fabric_attach(name.c_str(), &other))
            << "a one-host attachment to a host's segment";
    EXPECT_EQ(-EINVAL, sim_fabric_attach_host(name.c_str(), 64, 0x77, &other));
    ASSERT_EQ(0, sim_fabric_attach_host(name.c_str(), 1, 0x77, &other));
    sim_fabric_detach(other);
    sim_fabric_detach(fab);
}

/* A port whose thread sleeps on a socket: a sender on the host wakes it
 * with an empty datagram, and a datagram from elsewhere wakes it too */
TEST(fabric_host, a_thread_asleep_on_its_socket_wakes_for_a_packet)
{
    std::string   name = fresh_name();
    sim_fabric_t *fab;
    sim_port_t   *port;
    ASSERT_EQ(0, sim_fabric_attach_host(name.c_str(), 0, 0x99, &fab));
    ASSERT_EQ(0, sim_fabric_port_open(fab, &port));
    int                fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in at = {};
    at.sin_family         = AF_INET;
    at.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(0, bind(fd, (struct sockaddr *)&at, sizeof(at)));
    socklen_t len = sizeof(at);
    getsockname(fd, (struct sockaddr *)&at, &len);
    sim_fabric_port_sleep_on(port, fd, &at);

    /* nothing comes: the wait times out */
    EXPECT_EQ(-ETIMEDOUT, sim_fabric_wait(port, 20 * 1000000ll));
    /* a packet from this host, sent while the thread sleeps (up to 10 s:
     * the owner has not polled, no nap), wakes it at once */
    sim_port_stats_t st;
    sim_fabric_port_stats(port, &st);
    uint64_t             sleeps = st.sleeps;
    std::atomic<int64_t> woke_ms{-1};
    std::thread          t([&] {
        auto t0 = std::chrono::steady_clock::now();
        sim_fabric_wait(port, 10000 * 1000000ll);
        woke_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    });
    for (int i = 0; (i < 2000) && (st.sleeps == sleeps); ++i) {
        usleep(1000);
        sim_fabric_port_stats(port, &st);
    }
    ASSERT_GT(st.sleeps, sleeps) << "the thread never slept";
    usleep(20000); /* well into its sleep */
    uint8_t pkt[16] = {1};
    ASSERT_EQ(0, sim_fabric_send(fab, sim_fabric_port_lid(port), pkt,
                                 sizeof(pkt), nullptr, 0));
    t.join();
    EXPECT_GE(woke_ms, 0);
    EXPECT_LT(woke_ms, 2000) << "woken by the packet, not the time limit";
    char buf[16];
    EXPECT_EQ(0, recv(fd, buf, sizeof(buf), 0)) << "the wake: empty";
    close(fd);
    sim_fabric_port_close(port);
    sim_fabric_detach(fab);
}
