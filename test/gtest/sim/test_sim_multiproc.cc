/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two and more processes on one fabric, each with its own software NIC:
 * every opcode with data checked byte for byte, RC and DC, one-sided
 * operations to a process that never polls, a randomized mix checked against
 * a reference model (with and without injected faults), and a peer that
 * dies mid-run.
 */
#include "sim_proc.h"

#include <memory>
#include <poll.h>
#include <random>
#include <vector>

namespace {

const size_t BUF = 4 << 20;

/* Child: expose a buffer, answer one peer-info exchange, then serve. */
int serve(int fd, bool dc, int nrecv, bool poll_cq)
{
    sim_node n;
    int      rc = n.open(BUF, dc);
    if (rc)
        return 10 + rc;
    for (int i = 0; i < nrecv; ++i) {
        if (n.post_recv(BUF / 2 + (size_t)i * 8192, 8192, 1000 + i))
            return 20;
    }
    sim_peer_info mine = n.info(), peer;
    if (!sim_proc::send_obj(fd, mine) || !sim_proc::recv_obj(fd, &peer)) {
        return 21;
    }
    if (!dc && n.rc_connect(peer))
        return 22;
    char go;
    if (!sim_proc::send_obj(fd, 'r'))
        return 23; /* ready */
    /* Serve until the parent says it is done. Either poll (inline
     * progress) or not at all (the progress thread does the work). */
    while (true) {
        struct ibv_wc wc;
        if (poll_cq) {
            while (smlx5_poll_cq(n.rcq, 1, &wc) == 1) {
                if (!sim_proc::send_obj(fd, wc))
                    return 24;
            }
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (::poll(&p, 1, poll_cq ? 0 : 50) > 0) {
            if (!sim_proc::recv_obj(fd, &go))
                return 25;
            if (go == 'q')
                break;
            if (go == 'd') { /* dump: send the buffer checksum region */
                uint32_t len;
                if (!sim_proc::recv_obj(fd, &len))
                    return 26;
                if (write(fd, n.buf, len) != (ssize_t)len)
                    return 27;
            }
        }
    }
    n.close();
    return 0;
}

class sim_multiproc : public ::testing::Test {
protected:
    void SetUp() override
    {
        sim_proc::use_fresh_fabric();
        sim_proc::set_timeout_ns(5000000);
    }

    void TearDown() override
    {
        unsetenv("STRAND_SIM_TIMEOUT_NS");
        unsetenv("STRAND_SIM_FAULTS");
    }

    /* Parent side: open, exchange, connect. */
    void connect(sim_proc &child, bool dc)
    {
        ASSERT_EQ(0, m_n.open(BUF, dc));
        ASSERT_TRUE(sim_proc::recv_obj(child.fd(), &m_peer));
        ASSERT_TRUE(sim_proc::send_obj(child.fd(), m_n.info()));
        if (!dc) {
            ASSERT_EQ(0, m_n.rc_connect(m_peer));
        }
        char r;
        ASSERT_TRUE(sim_proc::recv_obj(child.fd(), &r));
        m_dc = dc;
    }

    void post(struct ibv_send_wr *wr)
    {
        struct ibv_send_wr *bad = nullptr;
        if (m_dc) {
            smlx5_dc_target_t t = {m_peer.lid, m_peer.dctn,
                                   SMLX5_DC_KEY_DEFAULT};
            ASSERT_EQ(0, smlx5_post_send_dc(m_n.qp, wr, &t, 0, &bad));
        } else {
            ASSERT_EQ(0, smlx5_post_send(m_n.qp, wr, &bad));
        }
    }

    ibv_wc complete()
    {
        struct ibv_wc wc;
        memset(&wc, 0, sizeof(wc));
        EXPECT_TRUE(m_n.poll(m_n.scq, &wc)) << "no completion";
        return wc;
    }

    struct ibv_send_wr wr(enum ibv_wr_opcode op, size_t off, uint32_t len,
                          uint64_t raddr_off, struct ibv_sge *s)
    {
        struct ibv_send_wr w;
        memset(&w, 0, sizeof(w));
        *s           = {(uintptr_t)(m_n.buf + off), len, smlx5_mr_lkey(m_n.mr)};
        w.wr_id      = off;
        w.opcode     = op;
        w.sg_list    = s;
        w.num_sge    = 1;
        w.send_flags = IBV_SEND_SIGNALED;
        if ((op == IBV_WR_ATOMIC_CMP_AND_SWP) ||
            (op == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
            w.wr.atomic.remote_addr = m_peer.addr + raddr_off;
            w.wr.atomic.rkey        = m_peer.rkey;
        } else {
            w.wr.rdma.remote_addr = m_peer.addr + raddr_off;
            w.wr.rdma.rkey        = m_peer.rkey;
        }
        return w;
    }

    std::vector<uint8_t> dump(sim_proc &child, uint32_t len)
    {
        std::vector<uint8_t> v(len);
        EXPECT_TRUE(sim_proc::send_obj(child.fd(), 'd'));
        EXPECT_TRUE(sim_proc::send_obj(child.fd(), len));
        size_t got = 0;
        while (got < len) {
            ssize_t r = read(child.fd(), v.data() + got, len - got);
            if (r <= 0) {
                ADD_FAILURE() << "dump read";
                break;
            }
            got += r;
        }
        return v;
    }

    void every_opcode(bool dc);

    sim_node      m_n;
    sim_peer_info m_peer;
    bool          m_dc = false;
};

void sim_multiproc::every_opcode(bool dc)
{
    sim_proc child;
    child.start([dc](int fd) { return serve(fd, dc, 8, true); });
    ASSERT_NO_FATAL_FAILURE(connect(child, dc));

    /* WRITE 1 MiB (256 packets), then READ it back */
    for (size_t i = 0; i < (1 << 20); ++i) {
        m_n.buf[i] = (uint8_t)(i * 7 + 3);
    }
    struct ibv_sge     s;
    struct ibv_send_wr w = wr(IBV_WR_RDMA_WRITE, 0, 1 << 20, 0, &s);
    post(&w);
    ibv_wc wc = complete();
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);

    w = wr(IBV_WR_RDMA_READ, 1 << 20, 1 << 20, 0, &s);
    post(&w);
    wc = complete();
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(1u << 20, wc.byte_len);
    EXPECT_EQ(0, memcmp(m_n.buf, m_n.buf + (1 << 20), 1 << 20));

    /* SEND (multi-packet) and SEND_WITH_IMM land in posted receives */
    memset(m_n.buf + 2 * (1 << 20), 0x3c, 6000);
    w = wr(IBV_WR_SEND, 2 << 20, 6000, 0, &s);
    post(&w);
    EXPECT_EQ(IBV_WC_SUCCESS, complete().status);
    ibv_wc rwc;
    ASSERT_TRUE(sim_proc::recv_obj(child.fd(), &rwc));
    EXPECT_EQ(IBV_WC_SUCCESS, rwc.status);
    EXPECT_EQ(IBV_WC_RECV, rwc.opcode);
    EXPECT_EQ(6000u, rwc.byte_len);
    EXPECT_EQ(1000u, rwc.wr_id);
    EXPECT_EQ(m_n.lid, rwc.slid);

    w          = wr(IBV_WR_SEND_WITH_IMM, 2 << 20, 16, 0, &s);
    w.imm_data = htobe32(0xfeedbeef);
    post(&w);
    EXPECT_EQ(IBV_WC_SUCCESS, complete().status);
    ASSERT_TRUE(sim_proc::recv_obj(child.fd(), &rwc));
    EXPECT_EQ(1001u, rwc.wr_id);
    EXPECT_TRUE(rwc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0xfeedbeef), rwc.imm_data);

    /* WRITE_WITH_IMM consumes a receive */
    w          = wr(IBV_WR_RDMA_WRITE_WITH_IMM, 0, 64, 8192, &s);
    w.imm_data = htobe32(42);
    post(&w);
    EXPECT_EQ(IBV_WC_SUCCESS, complete().status);
    ASSERT_TRUE(sim_proc::recv_obj(child.fd(), &rwc));
    EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, rwc.opcode);
    EXPECT_EQ(64u, rwc.byte_len);

    /* atomics: FA then CAS on a 64-bit word; verbs atomics reply in host
     * order (the only endianness mode mlx5_ib offers them in) */
    uint64_t *res = (uint64_t *)(m_n.buf + (3 << 20));
    w             = wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 3 << 20, 8, 16384, &s);
    w.wr.atomic.compare_add = 5;
    post(&w);
    wc = complete();
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_FETCH_ADD, wc.opcode);
    uint64_t before = *res;
    w               = wr(IBV_WR_ATOMIC_CMP_AND_SWP, 3 << 20, 8, 16384, &s);
    w.wr.atomic.compare_add = before + 5;
    w.wr.atomic.swap        = 0x1122334455667788ull;
    post(&w);
    EXPECT_EQ(IBV_WC_SUCCESS, complete().status);
    EXPECT_EQ(before + 5, *res);

    std::vector<uint8_t> remote = dump(child, (1 << 20) + 16384 + 8);
    EXPECT_EQ(0, memcmp(remote.data(), m_n.buf, 8192));      /* WRITE */
    EXPECT_EQ(0, memcmp(remote.data() + 8192, m_n.buf, 64)); /* WRITE_IMM */
    uint64_t word;
    memcpy(&word, remote.data() + 16384, 8);
    EXPECT_EQ(0x1122334455667788ull, word);

    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

} // namespace

TEST_F(sim_multiproc, rc_every_opcode_between_two_processes)
{
    every_opcode(false);
}

TEST_F(sim_multiproc, dc_every_opcode_between_two_processes)
{
    every_opcode(true);
}

TEST_F(sim_multiproc, one_sided_completes_while_target_never_polls)
{
    sim_proc child;
    child.start([](int fd) { return serve(fd, false, 0, false); });
    ASSERT_NO_FATAL_FAILURE(connect(child, false));
    struct ibv_sge s;
    memset(m_n.buf, 0x5a, 4096);
    for (int i = 0; i < 50; ++i) {
        struct ibv_send_wr w = wr(IBV_WR_RDMA_WRITE, 0, 4096, 4096 * i, &s);
        post(&w);
        ASSERT_EQ(IBV_WC_SUCCESS, complete().status);
        w = wr(IBV_WR_RDMA_READ, 8192, 4096, 4096 * i, &s);
        post(&w);
        ASSERT_EQ(IBV_WC_SUCCESS, complete().status);
        ASSERT_EQ(0, memcmp(m_n.buf, m_n.buf + 8192, 4096));
    }
    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

namespace {

/* Random WRITE / READ / FA / CAS on the peer's first 64 KiB, checked
 * against a model of that memory. */
void random_mix(sim_multiproc *t, sim_node &n, sim_peer_info &peer,
                std::function<void(ibv_send_wr *)> post,
                std::function<ibv_wc()> complete, unsigned seed, int ops,
                std::vector<uint8_t> &model)
{
    std::mt19937 rng(seed);
    const size_t region = 65536;
    model.assign(region, 0);
    uint8_t *src = n.buf, *dst = n.buf + (1 << 20);
    for (int op = 0; op < ops; ++op) {
        struct ibv_sge     s;
        struct ibv_send_wr w;
        memset(&w, 0, sizeof(w));
        unsigned kind = rng() % 4;
        size_t   len  = 1 + rng() % 9000;
        size_t   off  = rng() % (region - len);
        w.sg_list     = &s;
        w.num_sge     = 1;
        w.send_flags  = IBV_SEND_SIGNALED;
        w.wr_id       = op;
        if (kind == 0) {
            for (size_t i = 0; i < len; ++i)
                src[i] = (uint8_t)rng();
            s        = {(uintptr_t)src, (uint32_t)len, smlx5_mr_lkey(n.mr)};
            w.opcode = IBV_WR_RDMA_WRITE;
            w.wr.rdma.remote_addr = peer.addr + off;
            w.wr.rdma.rkey        = peer.rkey;
            post(&w);
            ibv_wc wc = complete();
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "op " << op;
            memcpy(&model[off], src, len);
        } else if (kind == 1) {
            s        = {(uintptr_t)dst, (uint32_t)len, smlx5_mr_lkey(n.mr)};
            w.opcode = IBV_WR_RDMA_READ;
            w.wr.rdma.remote_addr = peer.addr + off;
            w.wr.rdma.rkey        = peer.rkey;
            post(&w);
            ibv_wc wc = complete();
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "op " << op;
            ASSERT_EQ(0, memcmp(dst, &model[off], len)) << "READ op " << op;
        } else {
            off &= ~7ul;
            uint64_t cur, add = rng(), cmp,
                          swp = ((uint64_t)rng() << 32) | rng();
            memcpy(&cur, &model[off], 8);
            s                       = {(uintptr_t)dst, 8, smlx5_mr_lkey(n.mr)};
            w.wr.atomic.remote_addr = peer.addr + off;
            w.wr.atomic.rkey        = peer.rkey;
            if (kind == 2) {
                w.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
                w.wr.atomic.compare_add = add;
            } else {
                cmp                     = (rng() & 1) ? cur : cur + 1;
                w.opcode                = IBV_WR_ATOMIC_CMP_AND_SWP;
                w.wr.atomic.compare_add = cmp;
                w.wr.atomic.swap        = swp;
            }
            post(&w);
            ibv_wc wc = complete();
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "op " << op;
            uint64_t fetched;
            memcpy(&fetched, dst, 8);
            ASSERT_EQ(cur, fetched) << "atomic op " << op; /* host order */
            uint64_t next = (kind == 2) ?
                                    cur + add :
                                    (w.wr.atomic.compare_add == cur ? swp :
                                                                      cur);
            memcpy(&model[off], &next, 8);
        }
    }
}

} // namespace

TEST_F(sim_multiproc, random_mix_matches_reference_model)
{
    sim_proc child;
    child.start([](int fd) { return serve(fd, false, 0, false); });
    ASSERT_NO_FATAL_FAILURE(connect(child, false));
    std::vector<uint8_t> model;
    random_mix(
            this, m_n, m_peer, [this](ibv_send_wr *w) { post(w); },
            [this]() { return complete(); }, 1234, 2000, model);
    EXPECT_EQ(model, dump(child, model.size()));
    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

TEST_F(sim_multiproc, faults_drop_dup_corrupt_delay_lose_nothing)
{
    /* both NICs damage their own outbound traffic */
    const char *faults = getenv("STRAND_TEST_FAULTS"); /* for soak runs */
    setenv("STRAND_SIM_FAULTS",
           faults ? faults :
                    "drop=0.03,dup=0.03,corrupt=0.02,delay=0.03:300000,seed=7",
           1);
    /* 8 timeouts of 5 ms before RETRY_EXC_ERR: with 1 ms a peer process
     * descheduled for 8 ms on a loaded 2-CPU machine failed the run */
    sim_proc::set_timeout_ns(5000000);
    sim_proc child;
    child.start([](int fd) { return serve(fd, true, 0, false); });
    ASSERT_NO_FATAL_FAILURE(connect(child, true));
    std::vector<uint8_t> model;
    random_mix(
            this, m_n, m_peer, [this](ibv_send_wr *w) { post(w); },
            [this]() { return complete(); }, 99, 600, model);
    EXPECT_EQ(model, dump(child, model.size()));
    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

TEST_F(sim_multiproc, killed_peer_ends_in_retry_exc_err_not_a_hang)
{
    sim_proc::set_timeout_ns(2000000);
    sim_proc child;
    child.start([](int fd) { return serve(fd, false, 0, false); });
    ASSERT_NO_FATAL_FAILURE(connect(child, false));
    struct ibv_sge     s;
    struct ibv_send_wr w = wr(IBV_WR_RDMA_WRITE, 0, 64, 0, &s);
    post(&w);
    ASSERT_EQ(IBV_WC_SUCCESS, complete().status);

    child.kill_child();
    auto t0 = std::chrono::steady_clock::now();
    w       = wr(IBV_WR_RDMA_WRITE, 0, 64, 0, &s);
    post(&w);
    w = wr(IBV_WR_RDMA_READ, 0, 64, 0, &s);
    post(&w);
    ibv_wc wc = complete();
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    wc = complete();
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    EXPECT_LT(ms, 2000);
    m_n.close();
}

TEST_F(sim_multiproc, two_senders_one_dct)
{
    sim_proc target;
    target.start([](int fd) { return serve(fd, true, 0, false); });
    sim_peer_info tinfo;
    ASSERT_TRUE(sim_proc::recv_obj(target.fd(), &tinfo));
    sim_peer_info dummy;
    memset(&dummy, 0, sizeof(dummy));
    ASSERT_TRUE(sim_proc::send_obj(target.fd(), dummy));
    char r;
    ASSERT_TRUE(sim_proc::recv_obj(target.fd(), &r));

    /* two writer processes, each filling its own half with its own byte */
    std::vector<std::unique_ptr<sim_proc>> writers;
    for (int k = 0; k < 2; ++k) {
        writers.emplace_back(new sim_proc());
        writers.back()->start([k, tinfo](int) {
            sim_node n;
            if (n.open(1 << 20, true))
                return 1;
            memset(n.buf, 0x10 + k, 1 << 20);
            smlx5_dc_target_t t = {tinfo.lid, tinfo.dctn, SMLX5_DC_KEY_DEFAULT};
            for (int i = 0; i < 64; ++i) {
                struct ibv_sge     s = {(uintptr_t)n.buf, 8192,
                                        smlx5_mr_lkey(n.mr)};
                struct ibv_send_wr w, *bad;
                memset(&w, 0, sizeof(w));
                w.opcode              = IBV_WR_RDMA_WRITE;
                w.sg_list             = &s;
                w.num_sge             = 1;
                w.send_flags          = IBV_SEND_SIGNALED;
                w.wr.rdma.remote_addr = tinfo.addr + k * (1 << 19) + i * 8192;
                w.wr.rdma.rkey        = tinfo.rkey;
                if (smlx5_post_send_dc(n.qp, &w, &t, 0, &bad))
                    return 2;
                struct ibv_wc wc;
                if (!n.poll(n.scq, &wc) || wc.status != IBV_WC_SUCCESS) {
                    return 3;
                }
            }
            n.close();
            return 0;
        });
    }
    for (auto &w : writers) {
        EXPECT_EQ(0, w->join());
    }
    std::vector<uint8_t> v = dump(target, 1 << 20);
    for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(i < (1u << 19) ? 0x10 : 0x11, v[i]) << "byte " << i;
    }
    sim_proc::send_obj(target.fd(), 'q');
    EXPECT_EQ(0, target.join());
}

/* Many WQEs in flight at once through a lossy fabric: go-back-N over
 * several outstanding messages, fetch-and-add replay for duplicates. */
TEST_F(sim_multiproc, pipelined_writes_and_atomics_through_faults)
{
    const char *faults = getenv("STRAND_TEST_FAULTS");
    setenv("STRAND_SIM_FAULTS",
           faults ? faults : "drop=0.02,dup=0.02,delay=0.02:200000,seed=11", 1);
    sim_proc::set_timeout_ns(1000000);
    const int rounds = getenv("STRAND_TEST_ROUNDS") ?
                               atoi(getenv("STRAND_TEST_ROUNDS")) :
                               3;
    sim_proc  child;
    child.start([](int fd) { return serve(fd, true, 0, false); });
    ASSERT_NO_FATAL_FAILURE(connect(child, true));

    const size_t region = 1 << 20;
    std::mt19937 rng(5);
    for (size_t i = 0; i < region; ++i) {
        m_n.buf[i] = (uint8_t)rng();
    }
    for (int round = 0; round < rounds; ++round) {
        /* 128 WRITEs of 8 KiB, signaled every 8th, up to 64 in flight */
        int posted = 0, done = 0;
        while (done < 128) {
            while ((posted < 128) && (posted - done < 64)) {
                struct ibv_sge     s;
                struct ibv_send_wr w = wr(IBV_WR_RDMA_WRITE, posted * 8192,
                                          8192, posted * 8192, &s);
                w.send_flags = ((posted % 8) == 7) ? IBV_SEND_SIGNALED : 0;
                post(&w);
                ++posted;
            }
            ibv_wc wc = complete();
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
            done += 8;
        }
        std::vector<uint8_t> remote = dump(child, region);
        ASSERT_EQ(0, memcmp(remote.data(), m_n.buf, region))
                << "round " << round;
    }

    /* 200 fetch-and-adds of 1, 4 in flight: the counter ends at 200 */
    int posted = 0, done = 0;
    while (done < 200) {
        while ((posted < 200) && (posted - done < 4)) {
            struct ibv_sge     s;
            struct ibv_send_wr w    = wr(IBV_WR_ATOMIC_FETCH_AND_ADD,
                                         region + 8 * (posted % 4), 8, region, &s);
            w.wr.atomic.compare_add = 1;
            post(&w);
            ++posted;
        }
        ibv_wc wc = complete();
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        ++done;
    }
    std::vector<uint8_t> remote = dump(child, region + 8);
    uint64_t             counter;
    memcpy(&counter, remote.data() + region, 8);
    EXPECT_EQ(200u, counter);

    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

/* ------------------------------------------------ one-copy transfers */

namespace {

/* request packets the parent's QP sent so far */
/* packets sent once (a retransmission, after a timeout on a loaded
 * machine, is the same packet again) */
uint64_t sent(const sim_node &n)
{
    smlx5_qp_stats_t st;
    EXPECT_EQ(0, smlx5_qp_stats(n.qp, &st));
    return st.pkts_sent - st.pkts_resent;
}

} // namespace

/* A 1 MiB WRITE and READ between two processes: in one copy (one request
 * packet each, STRAND_SIM_ONECOPY's default), or through the ring (256
 * each) with it off; every byte lands either way, and the CQEs are the
 * same. */
class sim_onecopy : public sim_multiproc,
                    public ::testing::WithParamInterface<bool> {};

TEST_P(sim_onecopy, large_write_and_read_land_every_byte)
{
    const bool     onecopy = GetParam();
    const uint32_t len     = 1 << 20;
    if (!onecopy) {
        setenv("STRAND_SIM_ONECOPY", "0", 1);
    }
    sim_proc child;
    child.start([](int fd) { return serve(fd, true, 0, true); });
    ASSERT_NO_FATAL_FAILURE(connect(child, true));
    unsetenv("STRAND_SIM_ONECOPY");

    for (size_t i = 0; i < len; ++i) {
        m_n.buf[i] = (uint8_t)(i * 13 + 5);
    }
    struct ibv_sge     s;
    struct ibv_send_wr w      = wr(IBV_WR_RDMA_WRITE, 0, len, 4096, &s);
    uint64_t           before = sent(m_n);
    post(&w);
    ibv_wc wc = complete();
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
    EXPECT_EQ(onecopy ? 1u : 256u, sent(m_n) - before);

    w      = wr(IBV_WR_RDMA_READ, len, len, 4096, &s);
    before = sent(m_n);
    post(&w);
    wc = complete();
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(len, wc.byte_len);
    EXPECT_EQ(1u, sent(m_n) - before); /* a READ request is one packet */
    EXPECT_EQ(0, memcmp(m_n.buf, m_n.buf + len, len));

    std::vector<uint8_t> remote = dump(child, 4096 + len + 4096);
    EXPECT_EQ(std::vector<uint8_t>(4096, 0),
              std::vector<uint8_t>(remote.begin(), remote.begin() + 4096));
    EXPECT_EQ(0, memcmp(remote.data() + 4096, m_n.buf, len));
    EXPECT_EQ(std::vector<uint8_t>(4096, 0),
              std::vector<uint8_t>(remote.begin() + 4096 + len, remote.end()));
    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}

INSTANTIATE_TEST_SUITE_P(copy, sim_onecopy, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &i) {
                             return std::string(i.param ? "one_copy" :
                                                          "through_the_ring");
                         });

/* The checks stay where they were: a one-copy WRITE with a wrong rkey and
 * one beyond the region get REM_ACCESS_ERR and write nothing; a READ
 * beyond the region too, and reads nothing. (Each case on a peer of its
 * own: the error puts the DCI in ERR.) */
TEST_F(sim_multiproc, one_copy_bad_key_and_bounds_fail_as_before)
{
    const uint32_t len = 256 << 10;
    enum {
        WRONG_RKEY,
        WRITE_BEYOND,
        READ_BEYOND
    };

    for (int c = WRONG_RKEY; c <= READ_BEYOND; ++c) {
        SCOPED_TRACE(c == WRONG_RKEY     ? "WRITE with a wrong rkey" :
                     (c == WRITE_BEYOND) ? "WRITE beyond the region" :
                                           "READ beyond the region");
        sim_proc child;
        child.start([](int fd) { return serve(fd, true, 0, true); });
        ASSERT_NO_FATAL_FAILURE(connect(child, true));
        memset(m_n.buf, 0x77, len);
        memset(m_n.buf + len, 0x55, len);
        struct ibv_sge     s;
        struct ibv_send_wr w;
        if (c == READ_BEYOND) {
            w = wr(IBV_WR_RDMA_READ, len, len, BUF - len / 2, &s);
        } else {
            w = wr(IBV_WR_RDMA_WRITE, 0, len,
                   (c == WRITE_BEYOND) ? BUF - len / 2 : 0, &s);
            if (c == WRONG_RKEY) {
                w.wr.rdma.rkey ^= 0x5a00;
            }
        }
        post(&w);
        EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, complete().status);
        EXPECT_EQ(std::vector<uint8_t>(len, 0x55),
                  std::vector<uint8_t>(m_n.buf + len, m_n.buf + 2 * len))
                << "the local buffer was written";
        EXPECT_EQ(std::vector<uint8_t>(BUF, 0), dump(child, BUF))
                << "the target was written";
        sim_proc::send_obj(child.fd(), 'q');
        EXPECT_EQ(0, child.join());
        m_n.close();
    }
}

/* Lost, duplicated and corrupted packets on the one-copy path: each WRITE
 * lands once with the right bytes (a retransmitted request places the same
 * data again), each READ gets it, every WQE completes once. The faults are
 * seeded: unseeded, 15% drops and 5% corruption on each side lost a
 * request or its answer 8 times in a row (RETRY_EXC_ERR, as on a NIC) in
 * about 7 runs of 1000. */
TEST_F(sim_multiproc, one_copy_through_faults_lands_exactly_once)
{
    const uint32_t len = 128 << 10;
    const int      n   = 12;
    setenv("STRAND_SIM_FAULTS", "drop=0.1,dup=0.1,corrupt=0.03,seed=5", 1);
    sim_proc child;
    child.start([](int fd) { return serve(fd, true, 0, true); });
    ASSERT_NO_FATAL_FAILURE(connect(child, true));

    struct ibv_sge s;
    for (int k = 0; k < n; ++k) {
        for (uint32_t i = 0; i < len; ++i) {
            m_n.buf[i] = (uint8_t)(i * 3 + k * 17);
        }
        struct ibv_send_wr w = wr(IBV_WR_RDMA_WRITE, 0, len, (size_t)k * len,
                                  &s);
        w.wr_id              = 100 + k;
        post(&w);
        ibv_wc wc = complete();
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << "WRITE " << k;
        EXPECT_EQ(100u + k, wc.wr_id);
        w       = wr(IBV_WR_RDMA_READ, len, len, (size_t)k * len, &s);
        w.wr_id = 200 + k;
        post(&w);
        wc = complete();
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << "READ " << k;
        EXPECT_EQ(200u + k, wc.wr_id);
        EXPECT_EQ(0, memcmp(m_n.buf, m_n.buf + len, len)) << "READ " << k;
    }
    struct ibv_wc extra;
    EXPECT_EQ(0, smlx5_poll_cq(m_n.scq, 1, &extra)) << "a WQE completed twice";
    smlx5_qp_stats_t st;
    ASSERT_EQ(0, smlx5_qp_stats(m_n.qp, &st));
    EXPECT_GT(st.pkts_resent, 0u) << "no fault hit the one-copy requests";
    std::vector<uint8_t> remote = dump(child, (uint32_t)n * len);
    for (int k = 0; k < n; ++k) {
        bool same = true;
        for (uint32_t i = 0; (i < len) && same; ++i) {
            same = (remote[(size_t)k * len + i] == (uint8_t)(i * 3 + k * 17));
        }
        EXPECT_TRUE(same) << "WRITE " << k;
    }
    sim_proc::send_obj(child.fd(), 'q');
    EXPECT_EQ(0, child.join());
    m_n.close();
}
