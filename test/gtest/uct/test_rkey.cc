/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote keys are values (uct_mlx5/strand_rkey.h, spec section 9): a key
 * comes from a peer, and UCP passes UCT_INVALID_RKEY for a buffer without
 * registration, so no key, damaged or made up, can crash the process. A
 * zero-length RDMA WRITE or READ carries no key the responder checks (IB
 * spec C9-88): with any key it completes OK. A bad key of a nonzero
 * transfer fails that endpoint with an error, the process goes on. On both
 * transports (dc_strand/rkeys.*, rc_strand/rkeys.*).
 */
#include "uct_fixture.h"

extern "C" {
#include "uct_mlx5/strand_rkey.h"
}

class rkeys : public strand_uct_tl {
protected:
    void open_connected()
    {
        open_pair();
        ASSERT_EQ(UCS_OK, am_short_retry(m_ep, 1)); /* rc: connected */
    }

    /* an operation that completes now or through comp, retried while no
     * resource: its final status */
    ucs_status_t
    wait_op(const std::function<ucs_status_t(uct_completion_t *)> &post)
    {
        test_comp c;
        comp_init(&c);
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        if (!progress_until([&] {
                status = post(&c.uct);
                return status != UCS_ERR_NO_RESOURCE;
            })) {
            return UCS_ERR_TIMED_OUT;
        }
        if (status == UCS_INPROGRESS) {
            if (!progress_until([&] { return c.done != 0; })) {
                return UCS_ERR_TIMED_OUT;
            }
            status = c.status;
        }
        return status;
    }

    /* every zero-length RDMA operation with `rkey` completes OK */
    void zero_length_with(uct_rkey_t rkey, region &local)
    {
        std::vector<uint8_t> none;
        EXPECT_EQ(UCS_OK, wait_op([&](uct_completion_t *) {
                      return uct_ep_put_short(m_ep, nullptr, 0, 0x1000, rkey);
                  }))
                << "put_short";
        EXPECT_EQ(UCS_OK, wait_op([&](uct_completion_t *) {
                      ssize_t n = uct_ep_put_bcopy(m_ep, pack_cb, &none, 0x1000,
                                                   rkey);
                      return (n >= 0) ? UCS_OK : (ucs_status_t)n;
                  }))
                << "put_bcopy";
        uct_iov_t iov = {local.buf.data(), 0, local.memh, 0, 1};
        EXPECT_EQ(UCS_OK, wait_op([&](uct_completion_t *c) {
                      return uct_ep_put_zcopy(m_ep, &iov, 1, 0x1000, rkey, c);
                  }))
                << "put_zcopy";
        std::vector<uint8_t> back(1, 0x5a);
        EXPECT_EQ(UCS_OK, wait_op([&](uct_completion_t *c) {
                      return uct_ep_get_bcopy(m_ep, unpack_cb, &back, 0, 0x1000,
                                              rkey, c);
                  }))
                << "get_bcopy";
        EXPECT_TRUE(back.empty()) << "a zero-length GET unpacks nothing";
        flush(m_ep);
    }
};

TEST_P(rkeys, zero_length_rdma_with_any_key_completes_ok)
{
    open_connected();
    region local;
    reg(local, 64);
    ASSERT_NO_FATAL_FAILURE(zero_length_with(UCT_INVALID_RKEY, local));
    ASSERT_NO_FATAL_FAILURE(zero_length_with(0x1234567812345678ull, local));
    ASSERT_NO_FATAL_FAILURE(zero_length_with(0, local));
    /* the same ep still moves data */
    region r;
    reg(r, 64);
    auto data = pattern(64, 9);
    ASSERT_EQ(UCS_OK, wait_op([&](uct_completion_t *) {
                  return uct_ep_put_short(m_ep, data.data(), 64, addr(r),
                                          r.rkey.rkey);
              }));
    flush(m_ep);
    EXPECT_EQ(data, r.buf);
    EXPECT_TRUE(m_a.err.errors.empty());
    unreg(r);
    unreg(local);
}

/* A nonzero PUT and GET with UCT_INVALID_RKEY: the device refuses the key,
 * the operation completes with an error, the ep's owner is told, and the
 * process goes on (another ep of the interface still works). */
TEST_P(rkeys, invalid_key_of_a_transfer_fails_its_ep_not_the_process)
{
    open_connected();
    uct_ep_h other = connect(m_a, m_b.dev_addr, m_b.iface_addr);
    ASSERT_NE(nullptr, other);
    region local, r;
    reg(local, 256);
    reg(r, 256);
    uct_iov_t    iov    = {local.buf.data(), 256, local.memh, 0, 1};
    ucs_status_t status = wait_op([&](uct_completion_t *c) {
        return uct_ep_put_zcopy(m_ep, &iov, 1, addr(r), UCT_INVALID_RKEY, c);
    });
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_TIMED_OUT, status);
    ASSERT_TRUE(progress_until([&] { return !m_a.err.errors.empty(); }));
    EXPECT_EQ(m_ep, m_a.err.errors[0].first);

    auto         data = pattern(64, 3);
    ucs_status_t st   = UCS_ERR_NO_RESOURCE;
    ASSERT_TRUE(progress_until([&] {
        st = uct_ep_put_short(other, data.data(), 64, addr(r), r.rkey.rkey);
        return st != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_OK, st);
    flush(other);
    EXPECT_EQ(0, memcmp(r.buf.data(), data.data(), 64));
    unreg(r);
    unreg(local);
}

STRAND_UCT_INSTANTIATE(rkeys);

/* With integrity checks on, keys that say they are signed but name no
 * signing key this process unpacked (UCT_INVALID_RKEY, a key released, a
 * key with its upper word damaged) are refused by a checked GET with
 * UCS_ERR_INVALID_PARAM: never dereferenced, never read unchecked. */
class rkeys_integrity : public rkeys {
protected:
    void SetUp() override
    {
        m_tl = GetParam();
        set_tl_env("INTEGRITY", "crc32c");
        rkeys::SetUp();
    }
};

TEST_P(rkeys_integrity, a_signed_key_that_names_nothing_is_refused)
{
    open_connected();
    region local, r;
    reg(local, 4096);
    reg(r, 4096);
    ASSERT_TRUE(strand_rkey_is_sig(r.rkey.rkey)) << "the MD signs its keys";
    uct_iov_t iov = {local.buf.data(), 4096, local.memh, 0, 1};
    auto      get = [&](uct_rkey_t key) {
        return wait_op([&](uct_completion_t *c) {
            return uct_ep_get_zcopy(m_ep, &iov, 1, addr(r), key, c);
        });
    };
    /* the real key reads, checked */
    r.buf.assign(4096, 0x3c);
    EXPECT_EQ(UCS_OK, get(r.rkey.rkey));
    EXPECT_EQ(r.buf, local.buf);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(UCT_INVALID_RKEY));
    for (int bit = 32; bit < 63; bit += 5) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(r.rkey.rkey ^ (1ull << bit)))
                << "bit " << bit << " flipped";
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(r.rkey.rkey ^ 1)) << "plain key";
    uct_rkey_t released = r.rkey.rkey;
    uct_rkey_release(m_component, &r.rkey);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(released)) << "released";
    /* unpacked again: a new value for the same key */
    uint8_t packed[64];
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, r.memh, packed));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed, &r.rkey));
    EXPECT_NE(released, r.rkey.rkey) << "a released key names nothing again";
    EXPECT_EQ(UCS_OK, get(r.rkey.rkey));
    EXPECT_TRUE(m_a.err.errors.empty());
    unreg(r);
    unreg(local);
}

/* A peer that still holds the signed key of a registration that went
 * reads nothing through it, not the registration made after it: each
 * signing mkey has a key byte of its own (spec section 9; rdma-core leaves
 * it 0, and the next mkey on the index had the same key). */
TEST_P(rkeys_integrity, a_stale_signed_key_names_no_later_registration)
{
    set_env("UCX_STRAND_RCACHE", "n"); /* dereg destroys at once */
    ASSERT_EQ(UCS_OK, open_md());
    open_connected();
    region local, old, fresh;
    reg(local, 4096);
    reg(old, 4096);
    uct_rkey_bundle_t stale;
    uint8_t           packed[64];
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, old.memh, packed));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed, &stale));
    uint64_t old_addr = addr(old);
    unreg(old);
    reg(fresh, 4096);
    fresh.buf.assign(4096, 0x7b);
    uct_iov_t          iov = {local.buf.data(), 4096, local.memh, 0, 1};
    scoped_log_capture logs;
    ucs_status_t       status = wait_op([&](uct_completion_t *c) {
        return uct_ep_get_zcopy(m_ep, &iov, 1, old_addr, stale.rkey, c);
    });
    EXPECT_NE(UCS_OK, status) << "a stale key read a later registration";
    EXPECT_FALSE(std::vector<uint8_t>(4096, 0x7b) == local.buf)
            << "the later registration's bytes came";
    uct_rkey_release(m_component, &stale);
    unreg(fresh);
    unreg(local);
}

STRAND_UCT_INSTANTIATE(rkeys_integrity);
