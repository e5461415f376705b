/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem_check: OpenSHMEM acceptance test, every value checked.
 *
 *  - putmem/getmem, blocking and non-blocking (nbi + quiet), 1 B .. 4 MiB,
 *    unaligned offsets, byte patterns that depend on source PE, target PE,
 *    offset and round; every byte is verified and so are guard bytes around
 *    the target (no overrun); an all-to-all of small puts (many targets at
 *    once); shmem_long_p/g;
 *  - atomics on one counter on PE 0 hammered by all PEs (add, inc,
 *    fetch_add; values cross 2^32; exact final value, per-PE monotonic
 *    fetched values), fetch_inc tickets on the last PE (every ticket handed
 *    out exactly once), 32-bit fetch_add, fetch_or/xor/and bit masks, swap
 *    (the old values form one chain), compare_swap (turn taking and a
 *    mismatching compare that must not write), atomic_set and atomic_fetch;
 *  - shmem_barrier_all: each round every PE writes to every PE, the barrier
 *    must make all writes visible;
 *  - collectives: broadcast64 (two roots, small and 512 KiB),
 *    long_sum_to_all, long_max_to_all, fcollect64, collect64 with a
 *    different length per PE, alltoall64.
 *
 * Each check prints one line "shmem_check: PE p: <check>: ok" (or
 * "...: FAIL (<why>)"). At the end each PE prints exactly one verdict line
 * "shmem_check: PE p of n: PASS" or "shmem_check: PE p of n: FAIL (...)" and
 * flushes stdout BEFORE shmem_finalize: the oshmem of Debian's Open MPI 4.1.4
 * may crash inside shmem_finalize whatever the transport, so a harness must
 * judge the verdict lines, not the exit code.
 */
#include <shmem.h>

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PES    32               /* the bit-mask check uses 2 bits per PE */
#define BIG_MAX    ((4u << 20) + 3) /* largest put/get */
#define GUARD      64               /* guard bytes around the put target */
#define GUARD_BYTE 0xA5
#define A2A_LEN    200         /* bytes per PE in the all-to-all */
#define TICKETS    200         /* fetch_inc per PE */
#define HAMMER     500         /* add/inc/fetch_add rounds per PE */
#define BCAST_BIG  (64 * 1024) /* longs: 512 KiB */
#define DEADLINE_S 60          /* spin loops give up after this */

static int  me, npes, failures;
static char first_failure[256];

/* symmetric data (statics are symmetric in OpenSHMEM) */
static uint8_t       a2a[MAX_PES][A2A_LEN];
static long          pw_word;
static long          counter, ticket_ctr, tickets[TICKETS];
static long          swap_word, swap_prev, cswap_word;
static long          set_word;
static int           icounter;
static unsigned long mask_word;
static long          flags[2][MAX_PES];
static long          bcast_src[1000], bcast_dst[1000];
static long          red_src[100], red_dst[100];
static long          pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 100];
static long          psync[SHMEM_REDUCE_SYNC_SIZE + SHMEM_BCAST_SYNC_SIZE +
                  SHMEM_COLLECT_SYNC_SIZE + SHMEM_ALLTOALL_SYNC_SIZE];
static long long     fc_src[4], fc_dst[4 * MAX_PES];
static long long     col_src[MAX_PES], col_dst[MAX_PES * (MAX_PES + 1) / 2];
static long long     a2a_src[MAX_PES * 3], a2a_dst[MAX_PES * 3];

/* result NAME FMT...: FMT == NULL means the check passed */
static void result(const char *name, const char *fmt, ...)
{
    char    why[200];
    va_list ap;

    if (fmt == NULL) {
        printf("shmem_check: PE %d: %s: ok\n", me, name);
    } else {
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        printf("shmem_check: PE %d: %s: FAIL (%s)\n", me, name, why);
        if (failures++ == 0) {
            snprintf(first_failure, sizeof(first_failure), "%s: %s", name, why);
        }
    }
    fflush(stdout);
}

static uint8_t pat(int src, int dst, size_t i, int round)
{
    return (uint8_t)(src * 29 + dst * 7 + i * 3 + (i >> 8) + (i >> 16) +
                     round * 101 + 1);
}

static int expired(time_t start)
{
    return time(NULL) - start > DEADLINE_S;
}

static void sync_reset(void)
{
    size_t i;

    shmem_barrier_all(); /* nobody is still inside the last collective */
    for (i = 0; i < sizeof(psync) / sizeof(psync[0]); ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();
}

/* ------------------------------------------------------------ put/get */

/* one put to the right neighbour and one get back, LEN bytes */
static void put_get_round(uint8_t *sym, uint8_t *src, uint8_t *got, size_t len,
                          int round, int nbi)
{
    const int    right = (me + 1) % npes, left = (me + npes - 1) % npes;
    const size_t doff = GUARD + (round * 5) % 61, soff = (round * 3) % 7;
    char         name[80];
    size_t i, bad_put = SIZE_MAX, bad_guard = SIZE_MAX, bad_get = SIZE_MAX;

    snprintf(name, sizeof(name), "putmem/getmem%s %zu B", nbi ? "_nbi" : "",
             len);
    memset(sym, GUARD_BYTE, len + 2 * GUARD + 64);
    for (i = 0; i < len; ++i) {
        src[soff + i] = pat(me, right, i, round);
    }
    shmem_barrier_all();
    if (nbi) {
        shmem_putmem_nbi(sym + doff, src + soff, len, right);
        shmem_quiet();
    } else {
        shmem_putmem(sym + doff, src + soff, len, right);
    }
    shmem_barrier_all(); /* completes and publishes every PE's put */

    for (i = 0; i < len; ++i) {
        if (sym[doff + i] != pat(left, me, i, round)) {
            bad_put = i;
            break;
        }
    }
    for (i = 0; i < len + 2 * GUARD + 64; ++i) {
        if (((i < doff) || (i >= doff + len)) && (sym[i] != GUARD_BYTE)) {
            bad_guard = i;
            break;
        }
    }

    /* read back what the right neighbour received from us */
    memset(got, 0, len + 8);
    if (nbi) {
        shmem_getmem_nbi(got + soff, sym + doff, len, right);
        shmem_quiet();
    } else {
        shmem_getmem(got + soff, sym + doff, len, right);
    }
    for (i = 0; i < len; ++i) {
        if (got[soff + i] != pat(me, right, i, round)) {
            bad_get = i;
            break;
        }
    }

    if (bad_put != SIZE_MAX) {
        result(name, "put from PE %d: byte %zu is 0x%02x, expected 0x%02x",
               left, bad_put, sym[doff + bad_put],
               pat(left, me, bad_put, round));
    } else if (bad_guard != SIZE_MAX) {
        result(name, "put overran its target: guard byte %ld changed",
               (long)bad_guard - (long)doff);
    } else if (bad_get != SIZE_MAX) {
        result(name, "get from PE %d: byte %zu is 0x%02x, expected 0x%02x",
               right, bad_get, got[soff + bad_get],
               pat(me, right, bad_get, round));
    } else {
        result(name, NULL);
    }
    shmem_barrier_all(); /* the target is reused by the next round */
}

static void check_put_get(void)
{
    static const size_t sizes[] = {1,
                                   8,
                                   13,
                                   64,
                                   255,
                                   1024,
                                   4099,
                                   8192,
                                   65541,
                                   262145,
                                   (1u << 20) + 7,
                                   BIG_MAX};
    const size_t        nsizes  = sizeof(sizes) / sizeof(sizes[0]);
    const size_t        symlen  = BIG_MAX + 2 * GUARD + 64;
    uint8_t            *sym     = shmem_malloc(symlen);
    uint8_t            *src = malloc(BIG_MAX + 8), *got = malloc(BIG_MAX + 8);
    int                 round = 0, nbi, p, bad;
    size_t              s, i;

    if ((sym == NULL) || (src == NULL) || (got == NULL)) {
        result("putmem/getmem", "out of memory (shmem_malloc %zu B)", symlen);
        return;
    }
    for (nbi = 0; nbi < 2; ++nbi) {
        for (s = 0; s < nsizes; ++s) {
            put_get_round(sym, src, got, sizes[s], ++round, nbi);
        }
    }

    /* all-to-all: every PE puts A2A_LEN bytes into its slot on every PE */
    memset(a2a, 0, sizeof(a2a));
    shmem_barrier_all();
    for (p = 0; p < npes; ++p) {
        int dst = (me + p) % npes;
        for (i = 0; i < A2A_LEN; ++i) {
            src[i] = pat(me, dst, i, 77);
        }
        shmem_putmem(a2a[me], src, A2A_LEN, dst);
    }
    shmem_barrier_all();
    for (p = 0, bad = -1; (p < npes) && (bad < 0); ++p) {
        for (i = 0; i < A2A_LEN; ++i) {
            if (a2a[p][i] != pat(p, me, i, 77)) {
                bad = p;
                break;
            }
        }
    }
    if (bad >= 0) {
        result("putmem all-to-all", "slot of PE %d byte %zu is 0x%02x", bad, i,
               a2a[bad][i]);
    } else {
        result("putmem all-to-all", NULL);
    }

    /* single elements */
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_barrier_all();
    shmem_long_p(&pw_word, 0x123456789abL * (me + 1), right);
    shmem_barrier_all();
    if (pw_word != 0x123456789abL * (left + 1)) {
        result("long_p", "got %#lx from PE %d", pw_word, left);
    } else {
        result("long_p", NULL);
    }
    long g = shmem_long_g(&pw_word, right);
    if (g != 0x123456789abL * (me + 1)) {
        result("long_g", "got %#lx from PE %d", g, right);
    } else {
        result("long_g", NULL);
    }
    shmem_barrier_all();
    shmem_free(sym);
    free(src);
    free(got);
}

/* ------------------------------------------------------------ atomics */

static void check_atomics(void)
{
    const long base   = (1L << 32) - 1000; /* the sums cross 2^32 */
    const long expect = base + 4L * HAMMER * npes;
    const int  last   = npes - 1;
    long       old, prev, *all;
    int        k, p, n;
    time_t     start;

    counter    = (me == 0) ? base : 0;
    ticket_ctr = 0;
    swap_word  = -1;
    swap_prev  = -2;
    cswap_word = 0;
    icounter   = 0;
    mask_word  = 0;
    set_word   = 0;
    for (k = 0; k < TICKETS; ++k) {
        tickets[k] = -1;
    }
    shmem_barrier_all();

    /* add, inc and fetch_add from every PE on one counter on PE 0 */
    prev = LONG_MIN;
    n    = 0;
    for (k = 0; k < HAMMER; ++k) {
        shmem_long_atomic_add(&counter, 1, 0);
        shmem_long_atomic_inc(&counter, 0);
        old = shmem_long_atomic_fetch_add(&counter, 2, 0);
        /* we added 2 since our last fetch: it must have grown by >= 4 */
        if ((old < base) || (old >= expect) ||
            ((prev != LONG_MIN) && (old < prev + 4))) {
            if (n++ == 0) {
                result("long_atomic_fetch_add", "round %d: %ld after %ld", k,
                       old, prev);
            }
        }
        prev = old;
    }
    if (n == 0) {
        result("long_atomic_fetch_add (values seen)", NULL);
    }

    /* fetch_inc on the last PE: every ticket is handed out exactly once */
    for (k = 0; k < TICKETS; ++k) {
        tickets[k] = shmem_long_atomic_fetch_inc(&ticket_ctr, last);
    }

    /* 32-bit fetch_add on PE 0 */
    for (k = 0, n = 0; k < HAMMER; ++k) {
        int iold = shmem_int_atomic_fetch_add(&icounter, 3, 0);
        if ((iold < 0) || (iold >= 3 * HAMMER * npes) || (iold % 3)) {
            if (n++ == 0) {
                result("int_atomic_fetch_add", "fetched %d", iold);
            }
        }
    }
    if (n == 0) {
        result("int_atomic_fetch_add (values seen)", NULL);
    }

    /* bitwise: each PE sets its bit with fetch_or, flips bit 63 - me with
     * fetch_xor twice (back to 0) and once more, then clears nothing with
     * fetch_and of all ones */
    unsigned long mold;
    mold = shmem_ulong_atomic_fetch_or(&mask_word, 1ul << me, 0);
    n    = (mold & (1ul << me)) != 0;
    shmem_ulong_atomic_fetch_xor(&mask_word, 1ul << (63 - me), 0);
    shmem_ulong_atomic_fetch_xor(&mask_word, 1ul << (63 - me), 0);
    shmem_ulong_atomic_fetch_xor(&mask_word, 1ul << (63 - me), 0);
    mold = shmem_ulong_atomic_fetch_and(&mask_word, ~0ul, 0);
    if (n || !(mold & (1ul << me)) || !(mold & (1ul << (63 - me)))) {
        result("ulong_atomic_fetch_or/xor/and", "saw %#lx", mold);
    } else {
        result("ulong_atomic_fetch_or/xor/and (values seen)", NULL);
    }

    /* swap: every PE swaps its id in once */
    swap_prev = shmem_long_atomic_swap(&swap_word, me, 0); /* read by PE 0 */

    /* compare_swap: PEs take turns in rank order */
    start = time(NULL);
    for (n = 0;;) {
        old = shmem_long_atomic_compare_swap(&cswap_word, me, me + 1, 0);
        if (old == me) {
            break;
        }
        if ((old > me) || (old < 0) || expired(start)) {
            result("long_atomic_compare_swap", "saw %ld before PE %d's turn",
                   old, me);
            n = 1;
            break;
        }
    }
    shmem_barrier_all();
    /* a compare that does not match must not write */
    old = shmem_long_atomic_compare_swap(&cswap_word, -5, 12345, 0);
    if (!n) {
        if (old != npes) {
            result("long_atomic_compare_swap", "chain ended at %ld", old);
        } else {
            result("long_atomic_compare_swap (turn taking)", NULL);
        }
    }
    shmem_barrier_all();

    if (me == 0) {
        /* hammered counter */
        if (counter != expect) {
            result("long_atomic_add/inc/fetch_add on PE 0",
                   "counter %ld, expected %ld (lost %ld)", counter, expect,
                   expect - counter);
        } else {
            result("long_atomic_add/inc/fetch_add on PE 0", NULL);
        }
        if (icounter != 3 * HAMMER * npes) {
            result("int_atomic_fetch_add on PE 0", "counter %d, expected %d",
                   icounter, 3 * HAMMER * npes);
        } else {
            result("int_atomic_fetch_add on PE 0", NULL);
        }
        unsigned long want = 0;
        for (p = 0; p < npes; ++p) {
            want |= (1ul << p) | (1ul << (63 - p));
        }
        if (mask_word != want) {
            result("ulong_atomic_fetch_or/xor/and on PE 0",
                   "%#lx, expected %#lx", mask_word, want);
        } else {
            result("ulong_atomic_fetch_or/xor/and on PE 0", NULL);
        }
        if (cswap_word != npes) {
            result("long_atomic_compare_swap (no write on mismatch)",
                   "word is %ld, expected %d", cswap_word, npes);
        } else {
            result("long_atomic_compare_swap (no write on mismatch)", NULL);
        }

        /* swap: {old values} + {final} == {-1, 0 .. npes-1} */
        int  seen[MAX_PES + 1] = {0}, dup = 0;
        long v;
        for (p = 0; p <= npes; ++p) {
            v = (p < npes) ? shmem_long_g(&swap_prev, p) : swap_word;
            if ((v < -1) || (v >= npes) || seen[v + 1]++) {
                dup = 1;
                result("long_atomic_swap",
                       "value %ld (from %s %d) seen twice "
                       "or out of range",
                       v, (p < npes) ? "PE" : "final", p);
                break;
            }
        }
        if (!dup) {
            result("long_atomic_swap (one chain)", NULL);
        }

        /* tickets: 0 .. TICKETS*npes-1, each exactly once */
        all       = calloc((size_t)TICKETS * npes, sizeof(long));
        char *hit = calloc((size_t)TICKETS * npes, 1);
        long  bad = LONG_MIN;
        for (p = 0; p < npes; ++p) {
            shmem_getmem(all + (size_t)p * TICKETS, tickets, sizeof(tickets),
                         p);
        }
        for (k = 0; k < TICKETS * npes; ++k) {
            if ((all[k] < 0) || (all[k] >= (long)TICKETS * npes) ||
                hit[all[k]]++) {
                bad = all[k];
                break;
            }
        }
        if (bad != LONG_MIN) {
            result("long_atomic_fetch_inc tickets on last PE",
                   "ticket %ld duplicated or out of range", bad);
        } else {
            result("long_atomic_fetch_inc tickets on last PE", NULL);
        }
        free(all);
        free(hit);
    }
    shmem_barrier_all();

    /* atomic_set by the last PE, atomic_fetch by everybody */
    if (me == last) {
        shmem_long_atomic_set(&set_word, 0x5eedbeef0000L + npes, 0);
    }
    shmem_barrier_all();
    old = shmem_long_atomic_fetch(&set_word, 0);
    if (old != 0x5eedbeef0000L + npes) {
        result("long_atomic_set/fetch", "fetched %#lx", old);
    } else {
        result("long_atomic_set/fetch", NULL);
    }
    old = shmem_long_atomic_fetch(&counter, 0);
    if (old != expect) {
        result("long_atomic_fetch of the counter", "%ld, expected %ld", old,
               expect);
    } else {
        result("long_atomic_fetch of the counter", NULL);
    }
    shmem_barrier_all();
}

/* ------------------------------------------------------------ barrier */

static void check_barrier(void)
{
    const int rounds = 50;
    int       r, p, bad = -1;

    memset(flags, 0, sizeof(flags));
    shmem_barrier_all();
    for (r = 1; (r <= rounds) && (bad < 0); ++r) {
        for (p = 0; p < npes; ++p) {
            shmem_long_p(&flags[r % 2][me], r, (me + p) % npes);
        }
        shmem_barrier_all();
        for (p = 0; p < npes; ++p) {
            if (flags[r % 2][p] != r) {
                bad = p;
                break;
            }
        }
    }
    if (bad >= 0) {
        result("barrier_all", "round %d: PE %d's write is %ld", r - 1, bad,
               flags[(r - 1) % 2][bad]);
    } else {
        result("barrier_all (50 rounds, all writes visible)", NULL);
    }
    shmem_barrier_all();
}

/* -------------------------------------------------------- collectives */

static void check_collectives(void)
{
    long *big_src = shmem_malloc(BCAST_BIG * sizeof(long));
    long *big_dst = shmem_malloc(BCAST_BIG * sizeof(long));
    int   i, j, k, root, bad;

    for (root = 0; root < npes; root += (npes > 1) ? npes - 1 : 1) {
        for (i = 0; i < 1000; ++i) {
            bcast_src[i] = (me == root) ? i * 7L + 3 + root : -1;
            bcast_dst[i] = -2;
        }
        sync_reset();
        shmem_broadcast64(bcast_dst, bcast_src, 1000, root, 0, 0, npes, psync);
        shmem_barrier_all();
        for (i = 0, bad = -1; (me != root) && (i < 1000); ++i) {
            if (bcast_dst[i] != i * 7L + 3 + root) {
                bad = i;
                break;
            }
        }
        if (bad >= 0) {
            result("broadcast64 1000", "root %d: element %d is %ld", root, bad,
                   bcast_dst[bad]);
        } else {
            result(root ? "broadcast64 1000 (root last PE)" :
                          "broadcast64 1000 (root 0)",
                   NULL);
        }
    }

    if ((big_src == NULL) || (big_dst == NULL)) {
        result("broadcast64 512 KiB", "shmem_malloc failed");
    } else {
        for (i = 0; i < BCAST_BIG; ++i) {
            big_src[i] = (me == 0) ? (long)i * 0x10001L - 5 : 0;
            big_dst[i] = -2;
        }
        sync_reset();
        shmem_broadcast64(big_dst, big_src, BCAST_BIG, 0, 0, 0, npes, psync);
        shmem_barrier_all();
        for (i = 0, bad = -1; (me != 0) && (i < BCAST_BIG); ++i) {
            if (big_dst[i] != (long)i * 0x10001L - 5) {
                bad = i;
                break;
            }
        }
        if (bad >= 0) {
            result("broadcast64 512 KiB", "element %d is %ld", bad,
                   big_dst[bad]);
        } else {
            result("broadcast64 512 KiB", NULL);
        }
    }

    for (i = 0; i < 100; ++i) {
        red_src[i] = (long)(me + 1) * i - 50;
    }
    sync_reset();
    shmem_long_sum_to_all(red_dst, red_src, 100, 0, 0, npes, pwrk, psync);
    for (i = 0, bad = -1; i < 100; ++i) {
        if (red_dst[i] != (long)i * npes * (npes + 1) / 2 - 50L * npes) {
            bad = i;
            break;
        }
    }
    if (bad >= 0) {
        result("long_sum_to_all", "element %d is %ld", bad, red_dst[bad]);
    } else {
        result("long_sum_to_all", NULL);
    }

    for (i = 0; i < 100; ++i) {
        red_src[i] = ((me + i) % npes) * 1000L + i;
    }
    sync_reset();
    shmem_long_max_to_all(red_dst, red_src, 100, 0, 0, npes, pwrk, psync);
    for (i = 0, bad = -1; i < 100; ++i) {
        if (red_dst[i] != (npes - 1) * 1000L + i) {
            bad = i;
            break;
        }
    }
    if (bad >= 0) {
        result("long_max_to_all", "element %d is %ld", bad, red_dst[bad]);
    } else {
        result("long_max_to_all", NULL);
    }

    for (i = 0; i < 4; ++i) {
        fc_src[i] = me * 100 + i;
    }
    memset(fc_dst, 0, sizeof(fc_dst));
    sync_reset();
    shmem_fcollect64(fc_dst, fc_src, 4, 0, 0, npes, psync);
    for (i = 0, bad = -1; (i < npes * 4) && (bad < 0); ++i) {
        if (fc_dst[i] != (i / 4) * 100 + i % 4) {
            bad = i;
        }
    }
    if (bad >= 0) {
        result("fcollect64", "element %d is %lld", bad, fc_dst[bad]);
    } else {
        result("fcollect64", NULL);
    }

    /* collect64: PE p contributes p + 1 elements */
    for (i = 0; i <= me; ++i) {
        col_src[i] = me * 1000 + i;
    }
    memset(col_dst, 0, sizeof(col_dst));
    sync_reset();
    shmem_collect64(col_dst, col_src, me + 1, 0, 0, npes, psync);
    for (i = 0, k = 0, bad = -1; (i < npes) && (bad < 0); ++i) {
        for (j = 0; j <= i; ++j, ++k) {
            if (col_dst[k] != i * 1000 + j) {
                bad = k;
                break;
            }
        }
    }
    if (bad >= 0) {
        result("collect64 (PE p gives p+1)", "element %d is %lld", bad,
               col_dst[bad]);
    } else {
        result("collect64 (PE p gives p+1)", NULL);
    }

    /* alltoall64: 3 elements from every PE to every PE */
    for (i = 0; i < npes * 3; ++i) {
        a2a_src[i] = me * 10000 + (i / 3) * 10 + i % 3; /* to PE i/3 */
        a2a_dst[i] = -1;
    }
    sync_reset();
    shmem_alltoall64(a2a_dst, a2a_src, 3, 0, 0, npes, psync);
    for (i = 0, bad = -1; i < npes * 3; ++i) {
        if (a2a_dst[i] != (i / 3) * 10000 + me * 10 + i % 3) {
            bad = i;
            break;
        }
    }
    if (bad >= 0) {
        result("alltoall64", "element %d is %lld", bad, a2a_dst[bad]);
    } else {
        result("alltoall64", NULL);
    }
    shmem_barrier_all();
    shmem_free(big_src);
    shmem_free(big_dst);
}

int main(void)
{
    shmem_init();
    me   = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes > MAX_PES) {
        printf("shmem_check: PE %d of %d: FAIL (at most %d PEs)\n", me, npes,
               MAX_PES);
        fflush(stdout);
        shmem_global_exit(2);
    }

    check_put_get();
    check_barrier();
    check_atomics();
    check_collectives();
    shmem_barrier_all();

    if (failures == 0) {
        printf("shmem_check: PE %d of %d: PASS\n", me, npes);
    } else {
        printf("shmem_check: PE %d of %d: FAIL (%d checks; first: %s)\n", me,
               npes, failures, first_failure);
    }
    fflush(stdout);
    fflush(stderr);
    shmem_finalize();
    return failures ? 1 : 0;
}
