/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers for tests that use the software device the way a direct-verbs
 * user does (spec section 9): CQEs parsed from the CQ buffer with the
 * src/mlx5 helpers, consumer index and arm doorbell written by the test,
 * CQ sizes chosen through MLX5_CQE_SIZE as with rdma-core.
 */
#ifndef STRAND_TEST_SIM_DV_UTIL_H_
#define STRAND_TEST_SIM_DV_UTIL_H_

#include "sim_fixture.h"

#include <poll.h>

/* Sets an environment variable for the life of the object, then puts the
 * previous value (or its absence) back. */
class scoped_env {
public:
    scoped_env(const char *name, const char *value) : m_name(name)
    {
        const char *old = getenv(name);
        m_had           = (old != nullptr);
        if (m_had) {
            m_old = old;
        }
        if (value != nullptr) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }

    ~scoped_env()
    {
        if (m_had) {
            setenv(m_name.c_str(), m_old.c_str(), 1);
        } else {
            unsetenv(m_name.c_str());
        }
    }

private:
    std::string m_name, m_old;
    bool        m_had;
};

/* A CQ parsed by the test itself, as the transport does. */
struct dv_cq {
    smlx5_cq_t      *cq = nullptr;
    struct mlx5dv_cq dv;
    unsigned         shift = 0;
    uint32_t         ci    = 0; /* the application's consumer index */

    void init(smlx5_cq_t *c)
    {
        cq = c;
        memset(&dv, 0, sizeof(dv));
        ASSERT_EQ(0, smlx5_cq_dv(c, &dv));
        shift = strand_cqe_shift(dv.cqe_size);
        ASSERT_NE(0u, shift);
    }

    /* The CQE at index `idx` when software owns it, else nullptr. */
    struct mlx5_cqe64 *peek(uint32_t idx)
    {
        return strand_cqe_get(dv.buf, dv.cqe_cnt, shift, idx);
    }

    /* Wait (up to `ms`, running the device) for the CQE at `idx`. */
    struct mlx5_cqe64 *wait(smlx5_context_t *ctx, uint32_t idx, int ms = 5000)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(ms);
        struct mlx5_cqe64 *cqe;
        while ((cqe = peek(idx)) == nullptr) {
            if (std::chrono::steady_clock::now() > deadline) {
                return nullptr;
            }
            smlx5_progress(ctx);
        }
        return cqe;
    }

    /* Take the next CQE (waiting for it) and publish the new ci. */
    struct mlx5_cqe64 *next(smlx5_context_t *ctx)
    {
        struct mlx5_cqe64 *cqe = wait(ctx, ci);
        if (cqe != nullptr) {
            strand_cq_update_ci(dv.dbrec, ++ci);
        }
        return cqe;
    }

    /* Arm as a DV user must: own ci, own sn, doorbell record + UAR
     * write, then the device hook. */
    void arm(uint32_t sn, int solicited, uint32_t arm_ci)
    {
        strand_cq_arm(dv.dbrec, dv.cq_uar, dv.cqn, sn, arm_ci, solicited);
        smlx5_cq_arm_doorbell(cq);
    }

    /* The whole slot of index `idx` (cqe_size bytes). */
    const uint8_t *slot(uint32_t idx) const
    {
        return static_cast<const uint8_t *>(dv.buf) +
               ((size_t)(idx & (dv.cqe_cnt - 1)) << shift);
    }
};

/* Is a completion event pending on the channel (without waiting)? */
static inline bool channel_ready(smlx5_channel_t *ch, int timeout_ms = 0)
{
    struct pollfd pfd = {smlx5_channel_fd(ch), POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) == 1;
}

#endif
