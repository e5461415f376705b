/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many outstanding receives per rank, checked byte for byte: the pattern
 * tag matching (software or the device's) must get right.
 *
 * Every rank posts, for every peer, K receives with tags of their own, in
 * shuffled order, then receives with MPI_ANY_SOURCE (one tag shared by all
 * peers) and with MPI_ANY_TAG (per peer, after the others so they cannot
 * steal their messages); every peer sends the matching messages in another
 * shuffled order, of sizes from 0 bytes to past the rendezvous threshold.
 * A second round sends first and posts the receives late (unexpected
 * messages). Each message's bytes follow from (source, tag, length), so
 * every completed receive is checked against its status, and every
 * (source, tag) must arrive exactly once.
 *
 * Usage: mpi_tags [K]  (default 400: with 4 ranks, 1200+ receives posted
 * per rank at once)
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_ANY_SRC   1000000 /* the shared tag of the ANY_SOURCE round */
#define TAG_ANY_TAG   2000000 /* base of the tags ANY_TAG receives get */
#define WILD_PER_PEER 20
#define MAX(a, b)     (((a) > (b)) ? (a) : (b))

static int rank, nranks, failures;

static void fail(const char *what, int src, int tag)
{
    fprintf(stderr, "mpi_tags: rank %d: FAIL %s (source %d tag %d)\n", rank,
            what, src, tag);
    ++failures;
}

/* a message's length follows from who sends it to whom, with which tag */
static size_t msg_len(int src, int dst, int tag)
{
    unsigned h = (unsigned)(src * 7919 + dst * 104729 + tag * 31);

    if ((tag % 97) == 5) {
        return 1 << 20; /* rendezvous */
    }
    if ((tag % 29) == 3) {
        return 65536 + (h % 4096); /* past eager on most setups */
    }
    if ((tag % 13) == 0) {
        return 0;
    }
    return 1 + (h % 4096);
}

static uint8_t msg_byte(int src, int tag, size_t i)
{
    return (uint8_t)(src * 13 + tag * 7 + i * 3 + (i >> 9));
}

static void fill(uint8_t *buf, int src, int tag, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = msg_byte(src, tag, i);
    }
}

static void shuffle(int *v, int n, unsigned seed)
{
    srand(seed);
    for (int i = n - 1; i > 0; --i) {
        int j = rand() % (i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

typedef struct {
    int      src, tag; /* MPI_ANY_* for wildcards */
    size_t   cap;
    uint8_t *buf;
} recv_t;

typedef struct {
    int      dst, tag;
    size_t   len;
    uint8_t *buf;
} send_t;

/* check a completed receive against its status; seen[] marks (src, tag) */
static void check_recv(const recv_t *r, const MPI_Status *st, char *seen, int k)
{
    int    src = st->MPI_SOURCE, tag = st->MPI_TAG, count;
    size_t want = msg_len(src, rank, tag), slot;

    MPI_Get_count(st, MPI_BYTE, &count);
    if (((r->src != MPI_ANY_SOURCE) && (r->src != src)) ||
        ((r->tag != MPI_ANY_TAG) && (r->tag != tag))) {
        fail("matched a message it should not", src, tag);
        return;
    }
    if ((size_t)count != want) {
        fail("length", src, tag);
        return;
    }
    for (size_t i = 0; i < want; ++i) {
        if (r->buf[i] != msg_byte(src, tag, i)) {
            fail("data", src, tag);
            return;
        }
    }
    if (tag < TAG_ANY_SRC) {
        slot = (size_t)src * k + tag;
    } else if (tag < TAG_ANY_TAG) {
        slot = (size_t)nranks * k + src; /* one per source */
    } else {
        slot = (size_t)nranks * (k + 1) + (size_t)src * WILD_PER_PEER +
               (tag - TAG_ANY_TAG);
    }
    if (seen[slot]) {
        fail("received twice", src, tag);
    }
    seen[slot] = 1;
}

static void round_trip(int k, int late, unsigned seed)
{
    int          peers = nranks - 1, nr = 0, ns = 0;
    int          nrecv = peers * k + peers + peers * WILD_PER_PEER;
    recv_t      *rv    = calloc(nrecv, sizeof(*rv));
    send_t      *sv    = calloc(nrecv, sizeof(*sv));
    MPI_Request *rq    = malloc(sizeof(*rq) * nrecv);
    MPI_Request *sq    = malloc(sizeof(*sq) * nrecv);
    MPI_Status  *st    = malloc(sizeof(*st) * nrecv);
    int         *order = malloc(sizeof(int) * (size_t)nrecv);
    size_t       nseen = (size_t)nranks * (k + 1 + WILD_PER_PEER);
    char        *seen  = calloc(nseen, 1);

    /* receives: specific ones in shuffled order, then ANY_SOURCE, then
     * ANY_TAG per peer */
    for (int p = 0; p < nranks; ++p) {
        for (int t = 0; (p != rank) && (t < k); ++t) {
            rv[nr++] = (recv_t){p, t, msg_len(p, rank, t), NULL};
        }
    }
    for (int i = 0; i < nr; ++i) {
        order[i] = i;
    }
    shuffle(order, nr, seed + rank);
    /* a wildcard receive has room for the largest message it can get */
    size_t any_src_cap = 0, any_tag_cap = 0;
    for (int p = 0; p < nranks; ++p) {
        any_src_cap = (p == rank) ?
                              any_src_cap :
                              MAX(any_src_cap, msg_len(p, rank, TAG_ANY_SRC));
        for (int w = 0; (p != rank) && (w < WILD_PER_PEER); ++w) {
            any_tag_cap = MAX(any_tag_cap, msg_len(p, rank, TAG_ANY_TAG + w));
        }
    }
    for (int i = 0; i < peers; ++i) {
        rv[nr++] = (recv_t){MPI_ANY_SOURCE, TAG_ANY_SRC, any_src_cap, NULL};
    }
    for (int p = 0; p < nranks; ++p) {
        for (int w = 0; (p != rank) && (w < WILD_PER_PEER); ++w) {
            rv[nr++] = (recv_t){p, MPI_ANY_TAG, any_tag_cap, NULL};
        }
    }
    for (int i = 0; i < nr; ++i) {
        rv[i].buf = malloc(rv[i].cap ? rv[i].cap : 1);
    }

    /* sends: every peer's share, shuffled */
    for (int p = 0; p < nranks; ++p) {
        if (p == rank) {
            continue;
        }
        for (int t = 0; t < k; ++t) {
            sv[ns++] = (send_t){p, t, msg_len(rank, p, t), NULL};
        }
        sv[ns++] = (send_t){p, TAG_ANY_SRC, msg_len(rank, p, TAG_ANY_SRC),
                            NULL};
        for (int w = 0; w < WILD_PER_PEER; ++w) {
            sv[ns++] = (send_t){p, TAG_ANY_TAG + w,
                                msg_len(rank, p, TAG_ANY_TAG + w), NULL};
        }
    }
    for (int i = 0; i < ns; ++i) {
        sv[i].buf = malloc(sv[i].len ? sv[i].len : 1);
        fill(sv[i].buf, rank, sv[i].tag, sv[i].len);
    }
    /* sent in an order of their own: arrivals out of the posting order */
    int *sorder = malloc(sizeof(int) * (size_t)ns);
    for (int i = 0; i < ns; ++i) {
        sorder[i] = i;
    }
    shuffle(sorder, ns, seed * 3 + rank);

    if (!late) {
        for (int i = 0; i < nr; ++i) {
            int j = (i < peers * k) ? order[i] : i;
            MPI_Irecv(rv[j].buf, (int)rv[j].cap, MPI_BYTE, rv[j].src, rv[j].tag,
                      MPI_COMM_WORLD, &rq[j]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int i = 0; i < ns; ++i) {
        send_t *s = &sv[sorder[i]];
        MPI_Isend(s->buf, (int)s->len, MPI_BYTE, s->dst, s->tag, MPI_COMM_WORLD,
                  &sq[sorder[i]]);
    }
    if (late) {
        /* the messages are on their way or there already: unexpected */
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < nr; ++i) {
            int j = (i < peers * k) ? order[i] : i;
            MPI_Irecv(rv[j].buf, (int)rv[j].cap, MPI_BYTE, rv[j].src, rv[j].tag,
                      MPI_COMM_WORLD, &rq[j]);
        }
    }
    MPI_Waitall(nr, rq, st);
    MPI_Waitall(ns, sq, MPI_STATUSES_IGNORE);
    /* nobody sends the next round's messages before every rank has all of
     * this round's: a wildcard receive still waiting here would take a
     * message of the next round (MPI lets it) */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < nr; ++i) {
        check_recv(&rv[i], &st[i], seen, k);
    }
    /* nr receives, none twice: then every message arrived */
    size_t got = 0;
    for (size_t i = 0; i < nseen; ++i) {
        got += seen[i];
    }
    if (got != (size_t)nr) {
        fail("messages missing", -1, (int)((size_t)nr - got));
    }
    for (int i = 0; i < nr; ++i) {
        free(rv[i].buf);
    }
    for (int i = 0; i < ns; ++i) {
        free(sv[i].buf);
    }
    free(rv);
    free(sv);
    free(rq);
    free(sq);
    free(st);
    free(order);
    free(sorder);
    free(seen);
}

int main(int argc, char **argv)
{
    int k = (argc > 1) ? atoi(argv[1]) : 400, total;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    /* a short round first: a UCP worker posts receives to a transport
     * that matches tags only once it saw an unexpected message there */
    round_trip(4, 1, 5);
    round_trip(k, 0, 11);
    round_trip(k, 1, 23);
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi_tags: rank %d of %d: %d receives posted at once: %s\n", rank,
           nranks, (nranks - 1) * (k + 1 + WILD_PER_PEER),
           (failures == 0) ? "PASS" : "FAIL");
    MPI_Finalize();
    return (total == 0) ? 0 : 1;
}
