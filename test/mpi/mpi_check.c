/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_check: MPI point-to-point, collectives and one-sided communication,
 * every received byte checked. Run with any number of ranks >= 2; every
 * rank prints one verdict line "mpi_check: rank R of N: PASS" (or FAIL with
 * the first failed check) and exits non-zero when anything failed.
 * "mpi_check no_rma" leaves one-sided communication out (for MPI builds
 * whose own one-sided layer is at fault, not the transport under test).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int  rank, nranks;
static int  failures;
static char first_failure[256];

#define CHECK(_cond, ...)                                                    \
    do {                                                                     \
        if (!(_cond)) {                                                      \
            if (failures++ == 0) {                                           \
                snprintf(first_failure, sizeof(first_failure), __VA_ARGS__); \
            }                                                                \
            fprintf(stderr, "mpi_check: rank %d: ", rank);                   \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* the byte at offset i of a message from src to dst with a given seed */
static uint8_t pat(int src, int dst, unsigned seed, size_t i)
{
    return (uint8_t)(src * 37 + dst * 11 + seed * 101 + i * 7 + (i >> 9));
}

static void fill(uint8_t *buf, size_t len, int src, int dst, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = pat(src, dst, seed, i);
    }
}

/* the offset of the first wrong byte, or len */
static size_t
verify(const uint8_t *buf, size_t len, int src, int dst, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (buf[i] != pat(src, dst, seed, i)) {
            return i;
        }
    }
    return len;
}

static const size_t sizes[] = {0,    1,     8,       100,           4096,
                               8192, 65536, 1 << 20, (16 << 20) + 3};
#define NUM_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Blocking ring exchange at every size: send right, receive from left. */
static void check_blocking_ring(void)
{
    int        right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    size_t     s, len, bad;
    uint8_t   *sbuf, *rbuf;
    MPI_Status st;
    int        count;

    for (s = 0; s < NUM_SIZES; ++s) {
        len  = sizes[s];
        sbuf = malloc(len + 1);
        rbuf = malloc(len + 1);
        fill(sbuf, len, rank, right, (unsigned)s);
        memset(rbuf, 0xee, len + 1);
        MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, right, 100 + (int)s, rbuf,
                     (int)len, MPI_BYTE, left, 100 + (int)s, MPI_COMM_WORLD,
                     &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK((size_t)count == len, "ring %zu B: received %d bytes", len,
              count);
        bad = verify(rbuf, len, left, rank, (unsigned)s);
        CHECK(bad == len, "ring %zu B: wrong byte at offset %zu", len, bad);
        CHECK(rbuf[len] == 0xee, "ring %zu B: wrote past the end", len);
        /* and plain blocking Send/Recv, even ranks first */
        memset(rbuf, 0xee, len + 1);
        if (rank % 2 == 0) {
            MPI_Send(sbuf, (int)len, MPI_BYTE, right, 7, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)len, MPI_BYTE, left, 7, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(rbuf, (int)len, MPI_BYTE, left, 7, MPI_COMM_WORLD, &st);
            MPI_Send(sbuf, (int)len, MPI_BYTE, right, 7, MPI_COMM_WORLD);
        }
        bad = verify(rbuf, len, left, rank, (unsigned)s);
        CHECK(bad == len, "send/recv %zu B: wrong byte at %zu", len, bad);
        free(sbuf);
        free(rbuf);
    }
    printf("mpi_check: rank %d: blocking ring 0 B .. 16 MiB done\n", rank);
}

/* Every rank sends to every rank (itself included) at once, nonblocking. */
static void check_nonblocking_all_pairs(void)
{
    const size_t len  = 70000; /* above the eager threshold: rendezvous */
    MPI_Request *reqs = malloc(sizeof(*reqs) * 2 * nranks);
    uint8_t     *sbuf = malloc(len * nranks), *rbuf = malloc(len * nranks);
    int          peer, n                            = 0;
    size_t       bad;

    for (peer = 0; peer < nranks; ++peer) {
        MPI_Irecv(rbuf + peer * len, (int)len, MPI_BYTE, peer, 55,
                  MPI_COMM_WORLD, &reqs[n++]);
    }
    for (peer = 0; peer < nranks; ++peer) {
        fill(sbuf + peer * len, len, rank, peer, 55);
        MPI_Isend(sbuf + peer * len, (int)len, MPI_BYTE, peer, 55,
                  MPI_COMM_WORLD, &reqs[n++]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    for (peer = 0; peer < nranks; ++peer) {
        bad = verify(rbuf + peer * len, len, peer, rank, 55);
        CHECK(bad == len, "isend/irecv from %d: wrong byte at %zu", peer, bad);
    }
    free(reqs);
    free(sbuf);
    free(rbuf);
    printf("mpi_check: rank %d: nonblocking all pairs done\n", rank);
}

/* Rank 0 receives from everybody with MPI_ANY_SOURCE / MPI_ANY_TAG. */
static void check_any_source_any_tag(void)
{
    const int  per_rank = 5;
    int        i, k, tag, count, got[64] = {0};
    size_t     len, bad;
    uint8_t    buf[3000];
    MPI_Status st;

    if (rank != 0) {
        for (k = 0; k < per_rank; ++k) {
            len = 100 + 500 * k + rank;
            tag = 1000 + rank * 10 + k;
            fill(buf, len, rank, 0, (unsigned)tag);
            MPI_Send(buf, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
        }
    } else {
        for (i = 0; i < (nranks - 1) * per_rank; ++i) {
            MPI_Recv(buf, sizeof(buf), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                     MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            k = st.MPI_TAG - 1000 - st.MPI_SOURCE * 10;
            CHECK((st.MPI_SOURCE > 0) && (st.MPI_SOURCE < nranks) && (k >= 0) &&
                          (k < per_rank),
                  "any source: unexpected source %d tag %d", st.MPI_SOURCE,
                  st.MPI_TAG);
            if ((st.MPI_SOURCE <= 0) || (st.MPI_SOURCE >= 64)) {
                continue;
            }
            /* messages of one sender arrive in order (non-overtaking) */
            CHECK(k == got[st.MPI_SOURCE],
                  "any source: from %d got #%d, "
                  "expected #%d",
                  st.MPI_SOURCE, k, got[st.MPI_SOURCE]);
            ++got[st.MPI_SOURCE];
            len = 100 + 500 * k + st.MPI_SOURCE;
            CHECK((size_t)count == len, "any source: %d bytes, expected %zu",
                  count, len);
            bad = verify(buf, len, st.MPI_SOURCE, 0, (unsigned)st.MPI_TAG);
            CHECK(bad == len, "any source: wrong byte at %zu", bad);
        }
    }
    /* a probe with ANY_TAG, then the matching receive (after a barrier:
     * the wildcard receives above must not take this message) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        fill(buf, 1234, 1, 0, 77);
        MPI_Send(buf, 1234, MPI_BYTE, 0, 77, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK((st.MPI_TAG == 77) && (count == 1234), "probe: tag %d count %d",
              st.MPI_TAG, count);
        MPI_Recv(buf, count, MPI_BYTE, 1, st.MPI_TAG, MPI_COMM_WORLD, &st);
        CHECK(verify(buf, 1234, 1, 0, 77) == 1234, "probe: wrong data");
    }
    printf("mpi_check: rank %d: ANY_SOURCE/ANY_TAG and probe done\n", rank);
}

static void check_collectives(void)
{
    const int n = 100000;
    long     *v = malloc(sizeof(long) * n), *r = malloc(sizeof(long) * n);
    int      *all  = malloc(sizeof(int) * nranks * 3);
    int      *mine = malloc(sizeof(int) * nranks * 3);
    int       i, j, ok;

    MPI_Barrier(MPI_COMM_WORLD);
    /* broadcast from the last rank */
    for (i = 0; i < n; ++i) {
        v[i] = (rank == nranks - 1) ? (long)i * 3 + 1 : -1;
    }
    MPI_Bcast(v, n, MPI_LONG, nranks - 1, MPI_COMM_WORLD);
    for (i = 0, ok = 1; i < n; ++i) {
        ok &= (v[i] == (long)i * 3 + 1);
    }
    CHECK(ok, "bcast: wrong values");

    /* allreduce: sum over ranks of (rank + 1) * i */
    for (i = 0; i < n; ++i) {
        v[i] = (long)(rank + 1) * i;
    }
    MPI_Allreduce(v, r, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0, ok = 1; i < n; ++i) {
        ok &= (r[i] == (long)i * nranks * (nranks + 1) / 2);
    }
    CHECK(ok, "allreduce: wrong sums");

    /* reduce (max) to rank 0 */
    v[0] = rank * 17;
    MPI_Reduce(v, r, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    CHECK((rank != 0) || (r[0] == (long)(nranks - 1) * 17), "reduce max");

    /* allgather of three ints per rank */
    for (j = 0; j < 3; ++j) {
        mine[j] = rank * 100 + j;
    }
    MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
    for (i = 0, ok = 1; i < nranks; ++i) {
        for (j = 0; j < 3; ++j) {
            ok &= (all[i * 3 + j] == i * 100 + j);
        }
    }
    CHECK(ok, "allgather: wrong values");

    /* alltoall: element i goes to rank i */
    for (i = 0; i < nranks; ++i) {
        mine[i] = rank * 1000 + i;
    }
    MPI_Alltoall(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0, ok = 1; i < nranks; ++i) {
        ok &= (all[i] == i * 1000 + rank);
    }
    CHECK(ok, "alltoall: wrong values");
    free(v);
    free(r);
    free(all);
    free(mine);
    printf("mpi_check: rank %d: collectives done\n", rank);
}

/* One-sided: put/get/accumulate with fence, then with lock/unlock. */
static void check_one_sided(void)
{
    const size_t len   = 1 << 20;
    const int    right = (rank + 1) % nranks;
    const int    left  = (rank + nranks - 1) % nranks;
    uint8_t     *base, *src, *dst;
    long        *counter, one = 1, expect;
    MPI_Win      win, cwin;
    size_t       bad;

    MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &base);
    memset(base, 0, len);
    src = malloc(len);
    dst = malloc(len);
    MPI_Win_create(base, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* fence epoch: put my pattern into the right neighbour's window */
    fill(src, len, rank, right, 9);
    MPI_Win_fence(0, win);
    MPI_Put(src, (int)len, MPI_BYTE, right, 0, (int)len, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    bad = verify(base, len, left, rank, 9);
    CHECK(bad == len, "put+fence: wrong byte at %zu", bad);

    /* get the left neighbour's window (holding what its left put) */
    memset(dst, 0, len);
    MPI_Get(dst, (int)len, MPI_BYTE, left, 0, (int)len, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    bad = verify(dst, len, (left + nranks - 1) % nranks, left, 9);
    CHECK(bad == len, "get+fence: wrong byte at %zu", bad);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* accumulate into one counter on rank 0, fence then lock/unlock */
    MPI_Alloc_mem(sizeof(long) * 2, MPI_INFO_NULL, &counter);
    counter[0] = counter[1] = 0;
    MPI_Win_create(counter, sizeof(long) * 2, sizeof(long), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &cwin);
    MPI_Win_fence(0, cwin);
    for (int k = 0; k < 50; ++k) {
        MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, cwin);
    }
    MPI_Win_fence(0, cwin);
    if (rank == 0) {
        CHECK(counter[0] == 50L * nranks,
              "accumulate+fence: %ld, "
              "expected %ld",
              counter[0], 50L * nranks);
    }
    for (int k = 0; k < 20; ++k) {
        long value = rank + 1, old = -1;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cwin);
        MPI_Accumulate(&value, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, cwin);
        MPI_Win_unlock(0, cwin);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cwin);
        MPI_Get(&old, 1, MPI_LONG, 0, 1, 1, MPI_LONG, cwin);
        MPI_Win_unlock(0, cwin);
        CHECK(old >= value, "lock/unlock: read %ld after adding %ld", old,
              value);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cwin);
        expect = 20L * nranks * (nranks + 1) / 2;
        CHECK(counter[1] == expect, "accumulate+lock: %ld, expected %ld",
              counter[1], expect);
        MPI_Win_unlock(0, cwin);
    }
    /* a put into the right neighbour under lock, checked after a barrier */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, cwin);
    {
        long v = 4242 + rank;
        MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, cwin);
    }
    MPI_Win_unlock(right, cwin);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, cwin);
    CHECK(counter[0] == 4242 + left, "put+lock: %ld, expected %d", counter[0],
          4242 + left);
    MPI_Win_unlock(rank, cwin);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&cwin);
    MPI_Free_mem(counter);
    MPI_Free_mem(base);
    free(src);
    free(dst);
    printf("mpi_check: rank %d: one-sided (fence, lock/unlock) done\n", rank);
}

int main(int argc, char **argv)
{
    int all_failures;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) {
        fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    check_blocking_ring();
    check_nonblocking_all_pairs();
    check_any_source_any_tag();
    check_collectives();
    if ((argc < 2) || strcmp(argv[1], "no_rma")) {
        check_one_sided();
    }

    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (failures == 0) {
        printf("mpi_check: rank %d of %d: PASS\n", rank, nranks);
    } else {
        printf("mpi_check: rank %d of %d: FAIL (%d checks; first: %s)\n", rank,
               nranks, failures, first_failure);
    }
    fflush(stdout);
    MPI_Finalize();
    return (all_failures == 0) ? 0 : 1;
}
