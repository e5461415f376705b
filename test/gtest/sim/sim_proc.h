/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-process helpers for software-device tests: fork a peer process that
 * opens its own device (its own NIC on the shared fabric), and exchange
 * small structs over a socketpair. The child reports through its exit code:
 * 0 = all its checks passed; otherwise the number of the failed check.
 */
#ifndef STRAND_TEST_SIM_PROC_H_
#define STRAND_TEST_SIM_PROC_H_

#include <gtest/gtest.h>

extern "C" {
#include "sim/smlx5.h"
}

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* What one side tells the other to reach its memory and queues. */
struct sim_peer_info {
    uint16_t lid;
    uint32_t qpn;  /* RC QP or DCI */
    uint32_t dctn; /* DCT number (0 if none) */
    uint64_t addr; /* registered buffer */
    uint32_t rkey;
    uint32_t len;
};

class sim_proc {
public:
    /* Sets a fresh fabric name for the test (before any device opens). */
    static void use_fresh_fabric()
    {
        static std::atomic<int> counter{0};
        std::string name = "strand_mp_" + std::to_string(getpid()) + "_" +
                           std::to_string(counter++);
        setenv("STRAND_SIM_FABRIC", name.c_str(), 1);
    }

    /* Runs `body(fd)` in a child; the parent keeps the other end. */
    void start(const std::function<int(int fd)> &body)
    {
        int sv[2];
        ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        fflush(stdout);
        fflush(stderr);
        m_pid = fork();
        ASSERT_GE(m_pid, 0);
        if (m_pid == 0) {
            close(sv[0]);
            int rc = body(sv[1]);
            _exit(rc);
        }
        close(sv[1]);
        m_fd = sv[0];
    }

    /* Slower under valgrind: time limits scale (make check-valgrind). */
    static int time_scale()
    {
        return getenv("STRAND_UNDER_VALGRIND") ? 20 : 1;
    }

    /* The device's transport timeout for processes started after this
     * (scaled like every time limit: valgrind is slow). */
    static void set_timeout_ns(uint64_t ns)
    {
        setenv("STRAND_SIM_TIMEOUT_NS",
               std::to_string(ns * time_scale()).c_str(), 1);
    }

    /* The child's exit code (or 128+signal), waiting at most `ms`. */
    int join(int ms = 20000)
    {
        ms *= time_scale();
        auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(ms);
        int status = 0;
        while (waitpid(m_pid, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > end) {
                kill(m_pid, SIGKILL);
                waitpid(m_pid, &status, 0);
                m_pid = -1;
                return 999;
            }
            usleep(1000);
        }
        m_pid = -1;
        close(m_fd);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    void kill_child()
    {
        kill(m_pid, SIGKILL);
        int status;
        waitpid(m_pid, &status, 0);
        m_pid = -1;
        close(m_fd);
    }

    ~sim_proc()
    {
        if (m_pid > 0) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
        }
    }

    int fd() const
    {
        return m_fd;
    }

    template <typename T> static bool send_obj(int fd, const T &obj)
    {
        return write(fd, &obj, sizeof(obj)) == (ssize_t)sizeof(obj);
    }

    template <typename T> static bool recv_obj(int fd, T *obj)
    {
        size_t got = 0;
        while (got < sizeof(*obj)) {
            ssize_t n = read(fd, (char *)obj + got, sizeof(*obj) - got);
            if (n <= 0) {
                return false;
            }
            got += n;
        }
        return true;
    }

private:
    pid_t m_pid = -1;
    int   m_fd  = -1;
};

/* One process's objects: device, PD, CQs, a registered buffer, and either
 * an RC QP or a DCI + (DCT on an SRQ). */
struct sim_node {
    smlx5_context_t *ctx = nullptr;
    smlx5_pd_t      *pd  = nullptr;
    smlx5_cq_t      *scq = nullptr;
    smlx5_cq_t      *rcq = nullptr;
    smlx5_mr_t      *mr  = nullptr;
    smlx5_srq_t     *srq = nullptr;
    smlx5_qp_t      *qp  = nullptr; /* RC or DCI */
    smlx5_qp_t      *dct = nullptr;
    uint8_t         *buf = nullptr;
    size_t           len = 0;
    uint16_t         lid = 0;

    static int access_all()
    {
        return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    }

    /* 0 or a failing step number. */
    int open(size_t buf_len, bool dc)
    {
        struct ibv_port_attr pa;
        ctx = smlx5_open_device(SMLX5_DEV_NAME);
        if (!ctx)
            return 1;
        if (smlx5_query_port(ctx, SMLX5_PORT_NUM, &pa))
            return 2;
        lid = pa.lid;
        pd  = smlx5_alloc_pd(ctx);
        scq = smlx5_create_cq(ctx, 1024, nullptr);
        rcq = smlx5_create_cq(ctx, 1024, nullptr);
        if (!pd || !scq || !rcq)
            return 3;
        len = buf_len;
        buf = (uint8_t *)aligned_alloc(4096, (buf_len + 4095) & ~4095ul);
        if (!buf)
            return 4;
        memset(buf, 0, buf_len);
        mr = smlx5_reg_mr(pd, buf, buf_len, access_all());
        if (!mr)
            return 5;

        smlx5_qp_init_attr_t a;
        memset(&a, 0, sizeof(a));
        a.cap.max_send_wr     = 256;
        a.cap.max_send_sge    = 4;
        a.cap.max_inline_data = 64;
        a.send_cq             = scq;
        a.recv_cq             = rcq;
        if (dc) {
            smlx5_srq_init_attr_t sa;
            memset(&sa, 0, sizeof(sa));
            sa.max_wr  = 256;
            sa.max_sge = 1;
            srq        = smlx5_create_srq(pd, &sa);
            if (!srq)
                return 6;
            a.type = SMLX5_QPT_DCI;
            qp     = smlx5_create_qp(pd, &a);
            smlx5_qp_init_attr_t d;
            memset(&d, 0, sizeof(d));
            d.type          = SMLX5_QPT_DCT;
            d.send_cq       = scq;
            d.recv_cq       = rcq;
            d.srq           = srq;
            d.dc_access_key = SMLX5_DC_KEY_DEFAULT;
            dct             = smlx5_create_qp(pd, &d);
            if (!qp || !dct)
                return 7;
            if (dc_bring_up())
                return 8;
        } else {
            a.type             = SMLX5_QPT_RC;
            a.cap.max_recv_wr  = 256;
            a.cap.max_recv_sge = 1;
            qp                 = smlx5_create_qp(pd, &a);
            if (!qp)
                return 9;
        }
        return 0;
    }

    int dc_bring_up()
    {
        struct ibv_qp_attr x;
        memset(&x, 0, sizeof(x));
        x.qp_state = IBV_QPS_INIT;
        x.port_num = SMLX5_PORT_NUM;
        if (smlx5_modify_qp(qp, &x,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT))
            return 1;
        x.qp_access_flags = access_all();
        if (smlx5_modify_qp(dct, &x,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                    IBV_QP_ACCESS_FLAGS))
            return 2;
        memset(&x, 0, sizeof(x));
        x.qp_state = IBV_QPS_RTR;
        x.path_mtu = IBV_MTU_4096;
        if (smlx5_modify_qp(qp, &x, IBV_QP_STATE | IBV_QP_PATH_MTU))
            return 3;
        x.min_rnr_timer    = 1;
        x.ah_attr.port_num = SMLX5_PORT_NUM;
        if (smlx5_modify_qp(dct, &x,
                            IBV_QP_STATE | IBV_QP_PATH_MTU |
                                    IBV_QP_MIN_RNR_TIMER | IBV_QP_AV))
            return 4;
        memset(&x, 0, sizeof(x));
        x.qp_state      = IBV_QPS_RTS;
        x.timeout       = 14;
        x.retry_cnt     = 7;
        x.rnr_retry     = 7;
        x.max_rd_atomic = 4;
        return smlx5_modify_qp(qp, &x,
                               IBV_QP_STATE | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_MAX_QP_RD_ATOMIC |
                                       IBV_QP_SQ_PSN) ?
                       5 :
                       0;
    }

    int rc_connect(const sim_peer_info &peer, uint8_t retry_cnt = 7)
    {
        struct ibv_qp_attr x;
        memset(&x, 0, sizeof(x));
        x.qp_state        = IBV_QPS_INIT;
        x.port_num        = SMLX5_PORT_NUM;
        x.qp_access_flags = access_all();
        if (smlx5_modify_qp(qp, &x,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                    IBV_QP_ACCESS_FLAGS))
            return 1;
        memset(&x, 0, sizeof(x));
        x.qp_state           = IBV_QPS_RTR;
        x.path_mtu           = IBV_MTU_4096;
        x.dest_qp_num        = peer.qpn;
        x.max_dest_rd_atomic = 4;
        x.min_rnr_timer      = 1;
        x.ah_attr.dlid       = peer.lid;
        x.ah_attr.port_num   = SMLX5_PORT_NUM;
        if (smlx5_modify_qp(qp, &x,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC |
                                    IBV_QP_MIN_RNR_TIMER))
            return 2;
        memset(&x, 0, sizeof(x));
        x.qp_state      = IBV_QPS_RTS;
        x.timeout       = 14;
        x.retry_cnt     = retry_cnt;
        x.rnr_retry     = 7;
        x.max_rd_atomic = 4;
        return smlx5_modify_qp(qp, &x,
                               IBV_QP_STATE | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_MAX_QP_RD_ATOMIC |
                                       IBV_QP_SQ_PSN) ?
                       3 :
                       0;
    }

    sim_peer_info info() const
    {
        sim_peer_info i;
        memset(&i, 0, sizeof(i));
        i.lid  = lid;
        i.qpn  = smlx5_qp_num(qp);
        i.dctn = dct ? smlx5_dct_num(dct) : 0;
        i.addr = (uintptr_t)buf;
        i.rkey = smlx5_mr_rkey(mr);
        i.len  = (uint32_t)len;
        return i;
    }

    /* Poll one completion from `cq`, waiting up to `ms`. */
    bool poll(smlx5_cq_t *cq, struct ibv_wc *wc, int ms = 10000)
    {
        ms *= sim_proc::time_scale();
        auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(ms);
        do {
            if (smlx5_poll_cq(cq, 1, wc) == 1) {
                return true;
            }
        } while (std::chrono::steady_clock::now() < end);
        return false;
    }

    int post_recv(size_t off, uint32_t l, uint64_t wr_id)
    {
        struct ibv_sge     s = {(uintptr_t)(buf + off), l, smlx5_mr_lkey(mr)};
        struct ibv_recv_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        return srq ? smlx5_post_srq_recv(srq, &wr, &bad) :
                     smlx5_post_recv(qp, &wr, &bad);
    }

    void close()
    {
        if (dct)
            smlx5_destroy_qp(dct);
        if (qp)
            smlx5_destroy_qp(qp);
        if (srq)
            smlx5_destroy_srq(srq);
        if (mr)
            smlx5_dereg_mr(mr);
        if (scq)
            smlx5_destroy_cq(scq);
        if (rcq)
            smlx5_destroy_cq(rcq);
        if (pd)
            smlx5_dealloc_pd(pd);
        if (ctx)
            smlx5_close_device(ctx);
        free(buf);
        *this = sim_node();
    }

    /* A test that fails half-way still closes its device: a process has
     * one device context, and a leaked one would hand its settings (faults,
     * timers) to every later test of the process. */
    ~sim_node()
    {
        if (ctx) {
            close();
        }
    }

    sim_node()                            = default;
    sim_node(const sim_node &)            = delete;
    sim_node &operator=(const sim_node &) = default; /* close() resets */
};

#endif
