/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's own per-WQE state is present from the moment a queue is
 * made (src/sim/sim.h, sim_calloc_resident): a NIC keeps it in memory
 * pinned at create, so the first pass of a send queue's ring costs what
 * every later pass costs. Allocated lazily, a 1024-WQE RC queue took a
 * minor page fault every few WQEs of its first pass, and an MPI
 * ping-pong over dc_strand paid some 1000 of them in its first few
 * thousand messages.
 */
#include "sim_fixture.h"

#include <sys/resource.h>

namespace {

long minor_faults()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

} // namespace

class sim_resident : public sim_fixture {
};

/* Two passes around the whole ring (every BB once: a 1-BB inline WRITE
 * each; 1024 WQEs of up to 256 inline bytes make a ring of 8192 BBs),
 * each WQE completed before the next is posted: the first pass faults no
 * more than the second (a few pages of the fabric's slots and the CQ may
 * be new to either; lazily allocated, the WQE state took 1391). */
TEST_F(sim_resident, a_first_pass_around_the_send_queue_takes_no_page_faults)
{
    struct ibv_qp_cap cap = m_cap;
    cap.max_send_wr       = 1024;
    smlx5_qp_t *qp[2];
    ASSERT_NO_FATAL_FAILURE(create_connected_pair(cap, 1, qp));
    ASSERT_GE(qp_cap(qp[REQ]).max_send_wr, 1024u);
    const uint32_t wqes = qp_dv(qp[REQ]).sq.wqe_cnt; /* BBs */
    ASSERT_GE(wqes, 4096u);

    long faults[2];
    for (int pass = 0; pass < 2; ++pass) {
        long before = minor_faults();
        for (uint32_t i = 0; i < wqes; ++i) {
            uint64_t v = ((uint64_t)pass << 32) | i;
            struct ibv_sge s = {(uintptr_t)&v, sizeof(v), 0};
            struct ibv_send_wr w, *bad = nullptr;
            memset(&w, 0, sizeof(w));
            w.wr_id               = i;
            w.opcode              = IBV_WR_RDMA_WRITE;
            w.sg_list             = &s;
            w.num_sge             = 1;
            w.send_flags          = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
            w.wr.rdma.remote_addr = (uintptr_t)m_buf[RESP] + 8 * (i % 64);
            w.wr.rdma.rkey        = rkey(RESP);
            ASSERT_EQ(0, smlx5_post_send(qp[REQ], &w, &bad));
            struct ibv_wc wc;
            ASSERT_TRUE(poll_one(m_scq[REQ], &wc)) << "WQE " << i;
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "WQE " << i;
            ASSERT_EQ(i, wc.wr_id);
            uint64_t landed;
            memcpy(&landed, (uint8_t*)m_buf[RESP] + 8 * (i % 64),
                   sizeof(landed));
            ASSERT_EQ(v, landed) << "WQE " << i;
        }
        faults[pass] = minor_faults() - before;
    }
    EXPECT_LE(faults[0], faults[1] + 16)
        << "first pass " << faults[0] << " minor faults, second "
        << faults[1];
}
