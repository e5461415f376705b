/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_rma: MPI-3 one-sided communication (RMA), every byte of every result
 * checked, on three kinds of window: MPI_Win_allocate, MPI_Win_create on
 * malloc'd memory, and a dynamic window (MPI_Win_create_dynamic and
 * MPI_Win_attach, addresses exchanged with MPI_Get_address + allgather).
 *
 * Items (each on one or two kinds of window, on all three with "full"):
 *  - MPI_Put and MPI_Get of 8 bytes, of 1 MiB + 3 bytes, and of 1 MiB
 *    through MPI_Type_vector (target side of a put, both sides of a get),
 *    under fence, post/start/complete/wait, exclusive and shared locks,
 *    and lock_all with flush, flush_local, flush_all and flush_local_all
 *    (origin buffers overwritten after a local flush);
 *  - MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate;
 *  - MPI_Accumulate (fence, every rank into every rank, plus 1 MiB) and
 *    MPI_Get_accumulate (lock_all) with every predefined op valid on int,
 *    long and double, values chosen so that double results are exact;
 *  - MPI_Fetch_and_op (SUM, REPLACE, NO_OP on int, long, double) and
 *    MPI_Compare_and_swap (int, long: a hit, a miss, a race of all ranks);
 *  - all ranks accumulating into one target under lock_all/flush,
 *    fetch_and_op tickets that must come out distinct, and a counter
 *    incremented by get + put under exclusive locks (lost updates show).
 *
 * Usage: mpi_rma [full]. Rank 0 prints "mpi_rma: ok ITEM" for each item
 * every rank passed; a rank that sees a wrong result prints "mpi_rma: FAIL
 * ITEM: ...". Every rank ends with "mpi_rma: rank R of N: PASS" or "...
 * FAIL (first failure)"; the exit status is 0 only when every rank
 * passed. Needs 2 to 64 ranks. A 120 s alarm ends a rank that hangs.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SENTINEL   0xa5 /* bytes no operation may write */
#define SCRIBBLE   0x5a /* origin bytes overwritten after local completion */
#define MAX_RANKS  64
#define GUARD      16 /* bytes past a get's destination that must stay */
#define ITERS      16 /* concurrent accumulates / tickets per rank */
#define LOCK_ITERS 4  /* exclusive-lock increments per rank */

/* put/get sizes; the large one is odd so that its tail is no whole word */
#define SMALL_LEN 8
#define LARGE_LEN ((1 << 20) + 3)
/* the vector type: 2048 blocks of 128 ints = 1 MiB of data, spread over
 * every other block on the target and over every third on a get's origin */
#define VEC_BLOCKS   2048
#define VEC_BLOCK    128
#define VEC_STRIDE   256
#define OVEC_STRIDE  384
#define VEC_INTS     (VEC_BLOCKS * VEC_BLOCK)
#define VEC_EXTENT   ((size_t)((VEC_BLOCKS - 1) * VEC_STRIDE + VEC_BLOCK) * 4)
#define OVEC_EXTENT  ((size_t)((VEC_BLOCKS - 1) * OVEC_STRIDE + VEC_BLOCK) * 4)
#define BIG_ACC_INTS ((1 << 20) / 4) /* the 1 MiB accumulate */
/* room for the image of any get's destination */
#define WANT_LEN                                                           \
    (((size_t)LARGE_LEN > OVEC_EXTENT ? (size_t)LARGE_LEN : OVEC_EXTENT) + \
     GUARD)
#define ACC_COUNT 16 /* elements per typed accumulate */

enum {
    T_INT,
    T_LONG,
    T_DOUBLE,
    NUM_TYPES
};
enum {
    OP_SUM,
    OP_PROD,
    OP_MAX,
    OP_MIN,
    OP_BAND,
    OP_BOR,
    OP_BXOR,
    OP_REPLACE,
    OP_NO_OP,
    NUM_OPS
};

/* single-element slots for the atomics, with their type and first value */
enum {
    S_FOP_INT,
    S_FOP_LONG,
    S_FOP_DOUBLE,
    S_CAS_INT,
    S_CAS_LONG,
    S_RACE_INT,
    S_RACE_LONG,
    S_SUM_INT,
    S_SUM_LONG,
    S_SUM_DOUBLE,
    S_MAX_LONG,
    S_BXOR_INT,
    S_TICKET,
    S_LOCKED,
    S_SHARED,
    NUM_SLOTS
};
static const struct {
    int     type;
    int64_t init; /* for double: in units of 0.25 */
} slot_table[NUM_SLOTS] = {
        {T_INT, 1000},
        {T_LONG, 0x10000000005},
        {T_DOUBLE, 10},
        {T_INT, 0x12345678},
        {T_LONG, 0x123456789abc},
        {T_INT, -1},
        {T_LONG, -1},
        {T_INT, 0},
        {T_LONG, 0},
        {T_DOUBLE, 0},
        {T_LONG, -1000},
        {T_INT, 0},
        {T_LONG, 0},
        {T_LONG, 0},
        {T_LONG, 0},
};

/* The window's layout in bytes (displacement unit 1 on every kind). An
 * accumulate region has room for a REPLACE slot per rank. */
#define SMALL_OFF  0
#define SLOT_OFF   64
#define SLOT_SIZE  16
#define ACC_OFF    (SLOT_OFF + NUM_SLOTS * SLOT_SIZE)
#define ACC_REGION (MAX_RANKS * ACC_COUNT * 8)
#define LARGE_OFF  (ACC_OFF + NUM_TYPES * NUM_OPS * ACC_REGION)
#define LARGE_CAP  ((1 << 20) + 64)
#define VEC_OFF    (LARGE_OFF + LARGE_CAP)
#define WIN_LEN    (VEC_OFF + VEC_EXTENT + 64)

typedef struct {
    const char  *name;
    MPI_Datatype dtype;
    size_t       size;
    int          is_float;
    int          bits; /* of an integer type */
} elem_type_t;

typedef struct {
    const char *name;
    MPI_Op      op;
} op_desc_t;

/* one element of any tested type, for the single-element atomics */
typedef union {
    int    i;
    long   l;
    double d;
} elem_t;

enum {
    KIND_ALLOCATE,
    KIND_CREATE,
    KIND_DYNAMIC,
    NUM_KINDS
};

typedef struct {
    const char *kind;
    MPI_Win     win;
    uint8_t    *mem;             /* this rank's window memory */
    uint8_t    *expect;          /* what mem must hold at the next check */
    MPI_Aint    base[MAX_RANKS]; /* target displacement of each byte 0 */
} rma_win_t;

static int  rank, nranks, left, right;
static int  failures, fail_lines;
static char first_failure[320]; /* item and what failed */
static char item[96];           /* the check under way, for messages */
static int  item_start_failures;
/* varies the data from item to item, the same on every rank */
static unsigned item_seed;

static elem_type_t  types[NUM_TYPES];
static op_desc_t    ops[NUM_OPS];
static MPI_Datatype target_vec, origin_vec;
static MPI_Group    neighbours; /* left and right, for post/start */

/* the origin and result buffers of put/get */
static uint8_t  src_small[SMALL_LEN], dst_small[SMALL_LEN + GUARD];
static uint8_t *src_large, *dst_large, *dst_vec, *want;
static int     *src_vec;
static int     *big_operands; /* of the 1 MiB accumulate */

/* ---- reporting ---------------------------------------------------- */

static void fail(const char *fmt, ...)
{
    char    what[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (failures++ == 0) {
        snprintf(first_failure, sizeof(first_failure), "%s: %s", item, what);
    }
    /* the first few are enough to go on; do not flood the log */
    if (fail_lines++ < 10) {
        printf("mpi_rma: FAIL %s: rank %d: %s\n", item, rank, what);
        fflush(stdout);
    }
}

static void begin_item(const rma_win_t *w, const char *name)
{
    snprintf(item, sizeof(item), "%s: %s", w->kind, name);
    item_start_failures = failures;
}

/* Rank 0 reports the item passed when no rank saw it fail. The
 * allreduce also keeps every rank from resetting its window for the next
 * item while another still reads it under a lock (a lock excludes, it does
 * not order): no rank leaves it before every rank has entered it. */
static void end_item(void)
{
    int mine = failures > item_start_failures, all = 0;

    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if ((rank == 0) && (all == 0)) {
        printf("mpi_rma: ok %s\n", item);
        fflush(stdout);
    }
}

/* the first offset where two buffers differ, or len */
static size_t
first_diff(const uint8_t *got, const uint8_t *expected, size_t len)
{
    size_t i;

    if (memcmp(got, expected, len) == 0) {
        return len;
    }
    for (i = 0; (i < len) && (got[i] == expected[i]); ++i) {
    }
    return i;
}

static void format_elem(int t, const void *p, char *out, size_t n)
{
    elem_t e;

    memcpy(&e, p, types[t].size);
    if (t == T_INT) {
        snprintf(out, n, "%d", e.i);
    } else if (t == T_LONG) {
        snprintf(out, n, "%ld", e.l);
    } else {
        snprintf(out, n, "%.17g", e.d);
    }
}

static void
check_bytes(const char *what, const void *got, const void *expected, size_t len)
{
    const uint8_t *g = got, *e = expected;
    size_t         off = first_diff(g, e, len);

    if (off < len) {
        fail("%s: byte %zu of %zu: expected 0x%02x got 0x%02x", what, off, len,
             e[off], g[off]);
    }
}

static void check_elems(const char *what, int t, const void *got,
                        const void *expected, size_t count)
{
    size_t size = types[t].size, off;
    char   gs[40], es[40];

    off = first_diff(got, expected, count * size);
    if (off == count * size) {
        return;
    }
    off -= off % size;
    format_elem(t, (const uint8_t *)expected + off, es, sizeof(es));
    format_elem(t, (const uint8_t *)got + off, gs, sizeof(gs));
    fail("%s: %s element %zu of %zu (byte %zu): expected %s got %s", what,
         types[t].name, off / size, count, off, es, gs);
}

/* which part of the window a byte offset is in, and its type if typed */
static int describe_offset(size_t off, char *out, size_t n, size_t *elem)
{
    size_t rel, region;
    int    t;

    if (off < SLOT_OFF) {
        snprintf(out, n, "small+%zu", off);
    } else if (off < ACC_OFF) {
        rel = off - SLOT_OFF;
        snprintf(out, n, "slot %zu+%zu", rel / SLOT_SIZE, rel % SLOT_SIZE);
        *elem = off - rel % SLOT_SIZE;
        t     = slot_table[rel / SLOT_SIZE].type;
        return ((rel % SLOT_SIZE) < types[t].size) ? t : -1;
    } else if (off < LARGE_OFF) {
        region = (off - ACC_OFF) / ACC_REGION;
        rel    = (off - ACC_OFF) % ACC_REGION;
        snprintf(out, n, "acc %s %s+%zu", types[region / NUM_OPS].name,
                 ops[region % NUM_OPS].name, rel);
        *elem = off - rel % types[region / NUM_OPS].size;
        return (int)(region / NUM_OPS);
    } else if (off < VEC_OFF) {
        snprintf(out, n, "large+%zu", off - LARGE_OFF);
    } else {
        snprintf(out, n, "vector+%zu", off - VEC_OFF);
    }
    return -1;
}

/* The whole window against what this rank expects it to hold: a stray
 * write anywhere shows, not only in the bytes an operation targeted. */
static void check_window(const rma_win_t *w, const char *what)
{
    size_t off = first_diff(w->mem, w->expect, WIN_LEN), elem = 0;
    char   where[64], es[40], gs[40];
    int    t;

    if (off == WIN_LEN) {
        return;
    }
    t = describe_offset(off, where, sizeof(where), &elem);
    if (t < 0) {
        fail("%s: window byte %zu (%s): expected 0x%02x got 0x%02x", what, off,
             where, w->expect[off], w->mem[off]);
        return;
    }
    format_elem(t, w->expect + elem, es, sizeof(es));
    format_elem(t, w->mem + elem, gs, sizeof(gs));
    fail("%s: window byte %zu (%s): expected %s %s got %s", what, off, where,
         types[t].name, es, gs);
}

/* ---- values ------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}

/* the low bits of h as a signed value of that width (two's complement) */
static int64_t signed_bits(uint64_t h, int bits)
{
    if (bits < 64) {
        h &= (UINT64_C(1) << bits) - 1;
        if (h >> (bits - 1)) {
            return (int64_t)h - ((int64_t)1 << (bits - 1)) * 2;
        }
        return (int64_t)h;
    }
    return (h >> 63) ? -(int64_t)(~h) - 1 : (int64_t)h;
}

/* A factor of a product: magnitudes up to 3 from the first 8 origins and
 * 1 beyond, so products of every rank's factor stay small and exact. */
static int64_t prod_factor(int who, size_t i)
{
    static const int64_t factors[5] = {2, -1, 3, -2, 1};

    if (who < 0) {
        return (int64_t)(i % 3 + 1) * ((i & 1) ? -1 : 1);
    }
    if (who < 8) {
        return factors[((size_t)who + i) % 5];
    }
    return ((who + (int)(i & 1)) & 1) ? -1 : 1;
}

/* Element i of the values an op is tested with, as an integer: the
 * window's initial value (who < 0) or origin who's operand. Sums, products
 * and comparisons use small numbers (exact in every type, no overflow),
 * bitwise ops the full width with dense bits for AND and sparse ones for
 * OR, so that combining four ranks' operands still leaves bits to check. */
static int64_t int_value(int t, int o, int who, size_t i)
{
    uint64_t h  = hash4(((uint64_t)item_seed << 8) | (uint64_t)t, (uint64_t)o,
                        (uint64_t)(who + 1), i);
    uint64_t h2 = mix64(h);

    switch (o) {
    case OP_SUM:
        return (int64_t)(h % 201) - 100;
    case OP_PROD:
        return prod_factor(who, i);
    case OP_BAND:
        return signed_bits(h | h2, types[t].bits);
    case OP_BOR:
        return signed_bits(h & h2, types[t].bits);
    case OP_BXOR:
        return signed_bits(h, types[t].bits);
    default: /* MAX, MIN, REPLACE, NO_OP */
        return (int64_t)(h % 2001) - 1000;
    }
}

/* doubles are the integers scaled by a power of two: still exact */
static double dbl_scale(int o)
{
    return (o == OP_PROD) ? 0.5 : 0.25;
}

static void set_elem(int t, void *buf, size_t i, int64_t v, int o)
{
    uint8_t *p = (uint8_t *)buf + i * types[t].size;
    elem_t   e;

    if (t == T_INT) {
        e.i = (int)v;
    } else if (t == T_LONG) {
        e.l = (long)v;
    } else {
        e.d = (double)v * dbl_scale(o);
    }
    memcpy(p, &e, types[t].size);
}

static void fill_values(int t, int o, int who, void *buf, size_t count)
{
    size_t i;

    for (i = 0; i < count; ++i) {
        set_elem(t, buf, i, int_value(t, o, who, i), o);
    }
}

static int64_t apply_int(int o, int64_t a, int64_t b)
{
    switch (o) {
    case OP_SUM:
        return a + b;
    case OP_PROD:
        return a * b;
    case OP_MAX:
        return (a > b) ? a : b;
    case OP_MIN:
        return (a < b) ? a : b;
    case OP_BAND:
        return a & b;
    case OP_BOR:
        return a | b;
    case OP_BXOR:
        return a ^ b;
    case OP_REPLACE:
        return b;
    default:
        return a;
    }
}

static double apply_double(int o, double a, double b)
{
    switch (o) {
    case OP_SUM:
        return a + b;
    case OP_PROD:
        return a * b;
    case OP_MAX:
        return (a > b) ? a : b;
    case OP_MIN:
        return (a < b) ? a : b;
    case OP_REPLACE:
        return b;
    default:
        return a;
    }
}

/* acc[i] = acc[i] op in[i], as the target must compute it */
static void combine(int t, int o, void *acc, const void *in, size_t count)
{
    size_t size = types[t].size, i;
    elem_t a, b;

    for (i = 0; i < count; ++i) {
        memcpy(&a, (uint8_t *)acc + i * size, size);
        memcpy(&b, (const uint8_t *)in + i * size, size);
        if (t == T_INT) {
            a.i = (int)apply_int(o, a.i, b.i);
        } else if (t == T_LONG) {
            a.l = (long)apply_int(o, a.l, b.l);
        } else {
            a.d = apply_double(o, a.d, b.d);
        }
        memcpy((uint8_t *)acc + i * size, &a, size);
    }
}

/* bitwise ops apply to integers only; NO_OP only to fetching ops */
static int op_valid(int t, int o, int fetching)
{
    if (types[t].is_float && (o >= OP_BAND) && (o <= OP_BXOR)) {
        return 0;
    }
    return fetching || (o != OP_NO_OP);
}

static size_t acc_off(int t, int o)
{
    return ACC_OFF + (size_t)(t * NUM_OPS + o) * ACC_REGION;
}

static size_t slot_off(int s)
{
    return SLOT_OFF + (size_t)s * SLOT_SIZE;
}

static void slot_value(int s, int64_t v, elem_t *e)
{
    memset(e, 0, sizeof(*e));
    set_elem(slot_table[s].type, e, 0, v, OP_SUM);
}

static uint8_t byte_pat(int src, unsigned seed, size_t i)
{
    return (uint8_t)(src * 37 + seed * 101 + i * 7 + (i >> 9) + (i >> 17));
}

static int vec_val(int src, unsigned seed, size_t k)
{
    uint64_t h = mix64(((uint64_t)seed << 40) ^ ((uint64_t)src << 32) ^ k);

    return (int)(h & 0x7fffffff);
}

/* the vector data from src, spread at a stride (in ints) into dst */
static void scatter_vec(uint8_t *dst, size_t stride, int src, unsigned seed)
{
    size_t b, j, k;
    int    v;

    for (b = 0; b < VEC_BLOCKS; ++b) {
        for (j = 0; j < VEC_BLOCK; ++j) {
            k = b * VEC_BLOCK + j;
            v = vec_val(src, seed, k);
            memcpy(dst + (b * stride + j) * sizeof(int), &v, sizeof(int));
        }
    }
}

/* ---- windows ------------------------------------------------------ */

/* the target displacement of byte off of rank r's window */
static MPI_Aint disp(const rma_win_t *w, int r, size_t off)
{
    return w->base[r] + (MPI_Aint)off;
}

static void win_open(rma_win_t *w, int kind)
{
    static const char *names[NUM_KINDS] = {"allocate", "create", "dynamic"};
    MPI_Aint           mine;
    int                r;

    w->kind = names[kind];
    for (r = 0; r < nranks; ++r) {
        w->base[r] = 0;
    }
    if (kind == KIND_ALLOCATE) {
        MPI_Win_allocate((MPI_Aint)WIN_LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                         &w->mem, &w->win);
    } else if (kind == KIND_CREATE) {
        w->mem = malloc(WIN_LEN);
        MPI_Win_create(w->mem, (MPI_Aint)WIN_LEN, 1, MPI_INFO_NULL,
                       MPI_COMM_WORLD, &w->win);
    } else {
        /* a dynamic window is addressed by absolute addresses */
        w->mem = malloc(WIN_LEN);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->mem, (MPI_Aint)WIN_LEN);
        MPI_Get_address(w->mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, w->base, 1, MPI_AINT, MPI_COMM_WORLD);
    }
    w->expect = malloc(WIN_LEN);
}

static void win_close(rma_win_t *w, int kind)
{
    /* nobody may still be accessing the memory detached or freed */
    MPI_Barrier(MPI_COMM_WORLD);
    if (kind == KIND_DYNAMIC) {
        MPI_Win_detach(w->win, w->mem);
    }
    MPI_Win_free(&w->win);
    if (kind != KIND_ALLOCATE) {
        free(w->mem);
    }
    free(w->expect);
}

/* sentinel bytes, the typed regions' and slots' first values */
static void write_initial_values(uint8_t *mem)
{
    elem_t e;
    int    t, o, s;

    memset(mem, SENTINEL, WIN_LEN);
    for (t = 0; t < NUM_TYPES; ++t) {
        for (o = 0; o < NUM_OPS; ++o) {
            fill_values(t, o, -1, mem + acc_off(t, o),
                        (size_t)nranks * ACC_COUNT);
        }
    }
    for (s = 0; s < NUM_SLOTS; ++s) {
        slot_value(s, slot_table[s].init, &e);
        memcpy(mem + slot_off(s), &e, types[slot_table[s].type].size);
    }
}

/* Local stores to the window are made under an exclusive lock on this
 * rank's own window: that makes them public in the separate memory model
 * and orders them in the unified one. The barrier keeps every origin
 * from touching a window before its owner has reset it. */
static void win_reset(rma_win_t *w)
{
    write_initial_values(w->expect);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memcpy(w->mem, w->expect, WIN_LEN);
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Within a lock_all epoch: once the barrier orders the origins' flushes
 * before this point, MPI_Win_sync makes what they wrote visible to this
 * rank's loads (MPI-3 11.7, either memory model). */
static void check_window_synced(const rma_win_t *w, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(w->win);
    check_window(w, what);
}

/* Outside any epoch, after passive-target writes: the same through a
 * shared lock on the own window. */
static void check_window_passive(const rma_win_t *w, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
    MPI_Win_sync(w->win);
    check_window(w, what);
    MPI_Win_unlock(rank, w->win);
}

/* ---- put and get -------------------------------------------------- */

static void fill_sources(unsigned seed)
{
    size_t i;

    for (i = 0; i < SMALL_LEN; ++i) {
        src_small[i] = byte_pat(rank, seed ^ 0x55, i);
    }
    for (i = 0; i < LARGE_LEN; ++i) {
        src_large[i] = byte_pat(rank, seed, i);
    }
    for (i = 0; i < VEC_INTS; ++i) {
        src_vec[i] = vec_val(rank, seed, i);
    }
}

/* after local completion the origin buffers are the program's again */
static void scribble_contig_sources(void)
{
    memset(src_small, SCRIBBLE, SMALL_LEN);
    memset(src_large, SCRIBBLE, LARGE_LEN);
}

static void scribble_sources(void)
{
    scribble_contig_sources();
    memset(src_vec, SCRIBBLE, VEC_INTS * sizeof(int));
}

static void clear_dests(void)
{
    memset(dst_small, SENTINEL, sizeof(dst_small));
    memset(dst_large, SENTINEL, LARGE_LEN + GUARD);
    memset(dst_vec, SENTINEL, OVEC_EXTENT + GUARD);
}

/* 8 bytes, 1 MiB + 3 and the vector to a target: MPI_Put, or MPI_Rput
 * when reqs is given (3 requests) */
static void issue_puts(const rma_win_t *w, int target, MPI_Request *reqs)
{
    if (reqs == NULL) {
        MPI_Put(src_small, SMALL_LEN, MPI_BYTE, target,
                disp(w, target, SMALL_OFF), SMALL_LEN, MPI_BYTE, w->win);
        MPI_Put(src_large, LARGE_LEN, MPI_BYTE, target,
                disp(w, target, LARGE_OFF), LARGE_LEN, MPI_BYTE, w->win);
        MPI_Put(src_vec, VEC_INTS, MPI_INT, target, disp(w, target, VEC_OFF), 1,
                target_vec, w->win);
        return;
    }
    MPI_Rput(src_small, SMALL_LEN, MPI_BYTE, target, disp(w, target, SMALL_OFF),
             SMALL_LEN, MPI_BYTE, w->win, &reqs[0]);
    MPI_Rput(src_large, LARGE_LEN, MPI_BYTE, target, disp(w, target, LARGE_OFF),
             LARGE_LEN, MPI_BYTE, w->win, &reqs[1]);
    MPI_Rput(src_vec, VEC_INTS, MPI_INT, target, disp(w, target, VEC_OFF), 1,
             target_vec, w->win, &reqs[2]);
}

/* the same three back, the vector one into an origin vector */
static void issue_gets(const rma_win_t *w, int target, MPI_Request *reqs)
{
    if (reqs == NULL) {
        MPI_Get(dst_small, SMALL_LEN, MPI_BYTE, target,
                disp(w, target, SMALL_OFF), SMALL_LEN, MPI_BYTE, w->win);
        MPI_Get(dst_large, LARGE_LEN, MPI_BYTE, target,
                disp(w, target, LARGE_OFF), LARGE_LEN, MPI_BYTE, w->win);
        MPI_Get(dst_vec, 1, origin_vec, target, disp(w, target, VEC_OFF), 1,
                target_vec, w->win);
        return;
    }
    MPI_Rget(dst_small, SMALL_LEN, MPI_BYTE, target, disp(w, target, SMALL_OFF),
             SMALL_LEN, MPI_BYTE, w->win, &reqs[0]);
    MPI_Rget(dst_large, LARGE_LEN, MPI_BYTE, target, disp(w, target, LARGE_OFF),
             LARGE_LEN, MPI_BYTE, w->win, &reqs[1]);
    MPI_Rget(dst_vec, 1, origin_vec, target, disp(w, target, VEC_OFF), 1,
             target_vec, w->win, &reqs[2]);
}

/* what src's puts leave in this rank's window */
static void expect_puts(rma_win_t *w, int src, unsigned seed)
{
    size_t i;

    for (i = 0; i < SMALL_LEN; ++i) {
        w->expect[SMALL_OFF + i] = byte_pat(src, seed ^ 0x55, i);
    }
    for (i = 0; i < LARGE_LEN; ++i) {
        w->expect[LARGE_OFF + i] = byte_pat(src, seed, i);
    }
    scatter_vec(w->expect + VEC_OFF, VEC_STRIDE, src, seed);
}

/* the contiguous gets read a window src had put into */
static void check_contig_gets(int src, unsigned seed, const char *what)
{
    char   name[64];
    size_t i;

    memset(want, SENTINEL, WANT_LEN);
    for (i = 0; i < SMALL_LEN; ++i) {
        want[i] = byte_pat(src, seed ^ 0x55, i);
    }
    snprintf(name, sizeof(name), "%s 8 B", what);
    check_bytes(name, dst_small, want, sizeof(dst_small));

    for (i = 0; i < LARGE_LEN; ++i) {
        want[i] = byte_pat(src, seed, i);
    }
    snprintf(name, sizeof(name), "%s 1 MiB + 3", what);
    check_bytes(name, dst_large, want, LARGE_LEN + GUARD);
}

static void check_vector_get(int src, unsigned seed, const char *what)
{
    char name[64];

    memset(want, SENTINEL, WANT_LEN);
    scatter_vec(want, OVEC_STRIDE, src, seed);
    snprintf(name, sizeof(name), "%s vector", what);
    check_bytes(name, dst_vec, want, OVEC_EXTENT + GUARD);
}

static void check_gets(int src, unsigned seed, const char *what)
{
    check_contig_gets(src, seed, what);
    check_vector_get(src, seed, what);
}

typedef enum {
    SYNC_FENCE,
    SYNC_PSCW,
    SYNC_EXCL,
    SYNC_SHARED
} sync_t;

static void epoch_open(const rma_win_t *w, sync_t sync, int target)
{
    switch (sync) {
    case SYNC_FENCE:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
        break;
    case SYNC_PSCW:
        /* expose to the neighbours, then access them; posting first
         * lets no start wait on a post that comes after it */
        MPI_Win_post(neighbours, 0, w->win);
        MPI_Win_start(neighbours, 0, w->win);
        break;
    case SYNC_EXCL:
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win);
        break;
    case SYNC_SHARED:
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win);
        break;
    }
}

static void epoch_close(const rma_win_t *w, sync_t sync, int target)
{
    switch (sync) {
    case SYNC_FENCE:
        MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
        break;
    case SYNC_PSCW:
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    default:
        MPI_Win_unlock(target, w->win);
        break;
    }
}

/* Put to the right neighbour, check what the left one put here, then get
 * from the left neighbour what its left neighbour had put there. */
static void test_put_get(rma_win_t *w, sync_t sync)
{
    unsigned seed    = item_seed;
    int      passive = (sync == SYNC_EXCL) || (sync == SYNC_SHARED);

    fill_sources(seed);
    win_reset(w);
    epoch_open(w, sync, right);
    issue_puts(w, right, NULL);
    epoch_close(w, sync, right);
    expect_puts(w, left, seed);
    /* fence and wait make the window's updates visible by themselves */
    if (passive) {
        check_window_passive(w, "put");
    } else {
        check_window(w, "put");
    }

    clear_dests();
    epoch_open(w, sync, left);
    issue_gets(w, left, NULL);
    epoch_close(w, sync, left);
    check_gets((left + nranks - 1) % nranks, seed, "get");
}

/* One round of puts and gets in a lock_all epoch, completed with
 * flush/flush_local to the one target or with the _all variants. */
static void lock_all_round(rma_win_t *w, unsigned seed, int all)
{
    fill_sources(seed);
    issue_puts(w, right, NULL);
    if (all) {
        MPI_Win_flush_local_all(w->win);
    } else {
        MPI_Win_flush_local(right, w->win);
    }
    /* the puts must have read their origin buffers by now */
    scribble_sources();
    if (all) {
        MPI_Win_flush_all(w->win);
    } else {
        MPI_Win_flush(right, w->win);
    }
    expect_puts(w, left, seed);
    check_window_synced(w, all ? "put, flush_all" : "put, flush");

    clear_dests();
    issue_gets(w, left, NULL);
    if (all) {
        MPI_Win_flush_local_all(w->win);
    } else {
        MPI_Win_flush_local(left, w->win);
    }
    check_gets((left + nranks - 1) % nranks, seed,
               all ? "get, flush_local_all" : "get, flush_local");
    /* the next round's puts must not overwrite a window being checked */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_lock_all(rma_win_t *w)
{
    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    lock_all_round(w, item_seed, 0);
    lock_all_round(w, item_seed + 1000, 1);
    MPI_Win_unlock_all(w->win);
}

/* ---- accumulates -------------------------------------------------- */

/* the operands of this rank, and the fetched values */
static double operand[NUM_TYPES][NUM_OPS][ACC_COUNT];
static double fetched[NUM_TYPES][NUM_OPS][ACC_COUNT];

static void fill_operands(void)
{
    int t, o;

    for (t = 0; t < NUM_TYPES; ++t) {
        for (o = 0; o < NUM_OPS; ++o) {
            fill_values(t, o, rank, operand[t][o], ACC_COUNT);
        }
    }
}

/* what origin src's accumulate of (t, o) does to this rank's window */
static void expect_accumulate(rma_win_t *w, int t, int o, int src, size_t slot)
{
    double   theirs[ACC_COUNT];
    uint8_t *region = w->expect + acc_off(t, o) + slot * types[t].size;

    fill_values(t, o, src, theirs, ACC_COUNT);
    combine(t, o, region, theirs, ACC_COUNT);
}

/* the 1 MiB accumulate's operand from src */
static int big_operand(int src, size_t i)
{
    return (src + 1) * ((int)(i % 1000) - 500);
}

static void expect_big_accumulate(rma_win_t *w, int src)
{
    size_t i;
    int    v;

    for (i = 0; i < BIG_ACC_INTS; ++i) {
        memcpy(&v, w->expect + LARGE_OFF + i * sizeof(int), sizeof(int));
        v += big_operand(src, i);
        memcpy(w->expect + LARGE_OFF + i * sizeof(int), &v, sizeof(int));
    }
}

/* Every rank accumulates every valid (type, op) into every rank; REPLACE
 * into a slot of its own, as concurrent replaces have no defined order.
 * Plus 1 MiB of MPI_INT SUM into both neighbours. */
static void test_accumulate(rma_win_t *w)
{
    int    t, o, r, src;
    size_t i, slot;

    fill_operands();
    for (i = 0; i < BIG_ACC_INTS; ++i) {
        big_operands[i] = big_operand(rank, i);
    }
    win_reset(w);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    for (r = 0; r < nranks; ++r) {
        for (t = 0; t < NUM_TYPES; ++t) {
            for (o = 0; o < NUM_OPS; ++o) {
                if (!op_valid(t, o, 0)) {
                    continue;
                }
                slot = (o == OP_REPLACE) ? (size_t)rank * ACC_COUNT : 0;
                MPI_Accumulate(operand[t][o], ACC_COUNT, types[t].dtype, r,
                               disp(w, r, acc_off(t, o) + slot * types[t].size),
                               ACC_COUNT, types[t].dtype, ops[o].op, w->win);
            }
        }
    }
    MPI_Accumulate(big_operands, BIG_ACC_INTS, MPI_INT, right,
                   disp(w, right, LARGE_OFF), BIG_ACC_INTS, MPI_INT, MPI_SUM,
                   w->win);
    MPI_Accumulate(big_operands, BIG_ACC_INTS, MPI_INT, left,
                   disp(w, left, LARGE_OFF), BIG_ACC_INTS, MPI_INT, MPI_SUM,
                   w->win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);

    for (t = 0; t < NUM_TYPES; ++t) {
        for (o = 0; o < NUM_OPS; ++o) {
            for (src = 0; op_valid(t, o, 0) && (src < nranks); ++src) {
                slot = (o == OP_REPLACE) ? (size_t)src * ACC_COUNT : 0;
                expect_accumulate(w, t, o, src, slot);
            }
        }
    }
    expect_big_accumulate(w, left);
    expect_big_accumulate(w, right);
    check_window(w, "accumulate");
}

/* the values fetched before (t, o) was applied: the initial ones */
static void check_fetched(int t, int o, const void *got, const char *what)
{
    double initial[ACC_COUNT];
    char   name[64];

    fill_values(t, o, -1, initial, ACC_COUNT);
    snprintf(name, sizeof(name), "%s %s %s", what, types[t].name, ops[o].name);
    check_elems(name, t, got, initial, ACC_COUNT);
}

/* MPI_Get_accumulate of every valid (type, op) into the right neighbour
 * alone, so that the values fetched are exactly the initial ones. */
static void test_get_accumulate(rma_win_t *w)
{
    int t, o;

    fill_operands();
    memset(fetched, SENTINEL, sizeof(fetched));
    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    for (t = 0; t < NUM_TYPES; ++t) {
        for (o = 0; o < NUM_OPS; ++o) {
            if (op_valid(t, o, 1)) {
                MPI_Get_accumulate(operand[t][o], ACC_COUNT, types[t].dtype,
                                   fetched[t][o], ACC_COUNT, types[t].dtype,
                                   right, disp(w, right, acc_off(t, o)),
                                   ACC_COUNT, types[t].dtype, ops[o].op,
                                   w->win);
            }
        }
    }
    MPI_Win_flush(right, w->win);
    for (t = 0; t < NUM_TYPES; ++t) {
        for (o = 0; o < NUM_OPS; ++o) {
            if (op_valid(t, o, 1)) {
                check_fetched(t, o, fetched[t][o], "get_accumulate fetched");
                expect_accumulate(w, t, o, left, 0);
            }
        }
    }
    check_window_synced(w, "get_accumulate");
    MPI_Win_unlock_all(w->win);
}

/* Request-based operations in a lock_all epoch: a request's completion
 * is local (origin buffer free, data fetched), a flush makes it remote. */
static void test_requests(rma_win_t *w)
{
    unsigned    seed = item_seed;
    MPI_Request reqs[4];
    MPI_Status  statuses[4];

    fill_sources(seed);
    fill_operands();
    memset(fetched, SENTINEL, sizeof(fetched));
    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    /* MPICH 4.0.2 ch4:ucx completes the request of an Rput/Rget with a
     * derived target datatype before the transfer (pmodels/mpich#7896,
     * on shared memory too): the vector ones are checked after a flush,
     * the contiguous ones right after their requests completed. */
    issue_puts(w, right, reqs);
    MPI_Waitall(3, reqs, statuses);
    scribble_contig_sources();
    MPI_Win_flush(right, w->win);
    expect_puts(w, left, seed);
    check_window_synced(w, "rput");

    clear_dests();
    issue_gets(w, left, reqs);
    MPI_Waitall(3, reqs, statuses);
    check_contig_gets((left + nranks - 1) % nranks, seed, "rget");
    MPI_Win_flush_local(left, w->win);
    check_vector_get((left + nranks - 1) % nranks, seed, "rget");
    /* no accumulate into a window its owner is still checking */
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Raccumulate(operand[T_LONG][OP_SUM], ACC_COUNT, MPI_LONG, right,
                    disp(w, right, acc_off(T_LONG, OP_SUM)), ACC_COUNT,
                    MPI_LONG, MPI_SUM, w->win, &reqs[0]);
    MPI_Raccumulate(operand[T_DOUBLE][OP_MAX], ACC_COUNT, MPI_DOUBLE, right,
                    disp(w, right, acc_off(T_DOUBLE, OP_MAX)), ACC_COUNT,
                    MPI_DOUBLE, MPI_MAX, w->win, &reqs[1]);
    MPI_Rget_accumulate(operand[T_INT][OP_BXOR], ACC_COUNT, MPI_INT,
                        fetched[T_INT][OP_BXOR], ACC_COUNT, MPI_INT, right,
                        disp(w, right, acc_off(T_INT, OP_BXOR)), ACC_COUNT,
                        MPI_INT, MPI_BXOR, w->win, &reqs[2]);
    MPI_Rget_accumulate(operand[T_DOUBLE][OP_NO_OP], ACC_COUNT, MPI_DOUBLE,
                        fetched[T_DOUBLE][OP_NO_OP], ACC_COUNT, MPI_DOUBLE,
                        right, disp(w, right, acc_off(T_DOUBLE, OP_NO_OP)),
                        ACC_COUNT, MPI_DOUBLE, MPI_NO_OP, w->win, &reqs[3]);
    MPI_Waitall(4, reqs, statuses);
    check_fetched(T_INT, OP_BXOR, fetched[T_INT][OP_BXOR],
                  "rget_accumulate fetched");
    check_fetched(T_DOUBLE, OP_NO_OP, fetched[T_DOUBLE][OP_NO_OP],
                  "rget_accumulate fetched");
    MPI_Win_flush(right, w->win);
    expect_accumulate(w, T_LONG, OP_SUM, left, 0);
    expect_accumulate(w, T_DOUBLE, OP_MAX, left, 0);
    expect_accumulate(w, T_INT, OP_BXOR, left, 0);
    check_window_synced(w, "raccumulate/rget_accumulate");
    MPI_Win_unlock_all(w->win);
}

/* ---- single-element atomics --------------------------------------- */

/* set a slot in this rank's expected window */
static void expect_slot(rma_win_t *w, int s, const elem_t *v)
{
    memcpy(w->expect + slot_off(s), v, types[slot_table[s].type].size);
}

static void check_slot_result(int s, const char *what, const elem_t *got,
                              const elem_t *expected)
{
    check_elems(what, slot_table[s].type, got, expected, 1);
}

/* On the right neighbour, for each type: fetch_and_op SUM a, REPLACE b,
 * NO_OP, back to back: accumulate ordering (on by default) makes them
 * fetch initial, initial + a and b in that order. */
static void test_fetch_and_op(rma_win_t *w)
{
    elem_t add[NUM_TYPES], repl[NUM_TYPES], res[NUM_TYPES][3], expected;
    int    t, s;

    memset(res, SENTINEL, sizeof(res));
    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    for (t = 0; t < NUM_TYPES; ++t) {
        s = S_FOP_INT + t;
        slot_value(s, rank + 3, &add[t]);
        slot_value(s, -(rank * 100 + 7), &repl[t]);
        MPI_Fetch_and_op(&add[t], &res[t][0], types[t].dtype, right,
                         disp(w, right, slot_off(s)), MPI_SUM, w->win);
        MPI_Fetch_and_op(&repl[t], &res[t][1], types[t].dtype, right,
                         disp(w, right, slot_off(s)), MPI_REPLACE, w->win);
        MPI_Fetch_and_op(&repl[t], &res[t][2], types[t].dtype, right,
                         disp(w, right, slot_off(s)), MPI_NO_OP, w->win);
    }
    MPI_Win_flush(right, w->win);
    for (t = 0; t < NUM_TYPES; ++t) {
        s = S_FOP_INT + t;
        slot_value(s, slot_table[s].init, &expected);
        check_slot_result(s, "fetch_and_op SUM fetched", &res[t][0], &expected);
        combine(t, OP_SUM, &expected, &add[t], 1);
        check_slot_result(s, "fetch_and_op REPLACE fetched", &res[t][1],
                          &expected);
        check_slot_result(s, "fetch_and_op NO_OP fetched", &res[t][2],
                          &repl[t]);
        slot_value(s, -(left * 100 + 7), &expected);
        expect_slot(w, s, &expected);
    }
    check_window_synced(w, "fetch_and_op");
    MPI_Win_unlock_all(w->win);
}

/* compare_and_swap on the right neighbour: a hit, then a miss (the
 * compare value is stale by then) */
static void cas_values(int s, int who, elem_t *x, elem_t *y, elem_t *z)
{
    int64_t init = slot_table[s].init;

    slot_value(s, init, x);
    slot_value(s, init ^ ((int64_t)(who + 1) << 4), y);
    slot_value(s, init + 2 * who + 1, z);
}

static void test_cas_race(rma_win_t *w, int s)
{
    elem_t mine, compare, got, winning;
    long   all[MAX_RANKS], my_result;
    int    winner = -1, r, t = slot_table[s].type;

    slot_value(s, rank + 1, &mine);
    slot_value(s, -1, &compare);
    memset(&got, SENTINEL, sizeof(got));
    MPI_Compare_and_swap(&mine, &compare, &got, types[t].dtype, 0,
                         disp(w, 0, slot_off(s)), w->win);
    MPI_Win_flush(0, w->win);
    my_result = (t == T_INT) ? got.i : got.l;
    MPI_Gather(&my_result, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* exactly one rank saw the initial -1; all others its value */
        for (r = 0; r < nranks; ++r) {
            if (all[r] != -1) {
                continue;
            }
            if (winner >= 0) {
                fail("%s CAS race: ranks %d and %d both fetched -1",
                     types[t].name, winner, r);
            }
            winner = r;
        }
        for (r = 0; (winner >= 0) && (r < nranks); ++r) {
            if ((r != winner) && (all[r] != winner + 1)) {
                fail("%s CAS race: rank %d fetched %ld, winner %d wrote %d",
                     types[t].name, r, all[r], winner, winner + 1);
            }
        }
        if (winner < 0) {
            fail("%s CAS race: no rank fetched the initial value",
                 types[t].name);
        } else {
            slot_value(s, winner + 1, &winning);
            expect_slot(w, s, &winning);
        }
    }
}

static void test_compare_and_swap(rma_win_t *w)
{
    elem_t x[2], y[2], z[2], hit[2], miss[2];
    int    i, s;

    memset(hit, SENTINEL, sizeof(hit));
    memset(miss, SENTINEL, sizeof(miss));
    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    for (i = 0; i < 2; ++i) {
        s = S_CAS_INT + i;
        cas_values(s, rank, &x[i], &y[i], &z[i]);
        MPI_Compare_and_swap(&y[i], &x[i], &hit[i],
                             types[slot_table[s].type].dtype, right,
                             disp(w, right, slot_off(s)), w->win);
        MPI_Compare_and_swap(&z[i], &x[i], &miss[i],
                             types[slot_table[s].type].dtype, right,
                             disp(w, right, slot_off(s)), w->win);
    }
    MPI_Win_flush(right, w->win);
    for (i = 0; i < 2; ++i) {
        s = S_CAS_INT + i;
        check_slot_result(s, "compare_and_swap hit fetched", &hit[i], &x[i]);
        check_slot_result(s, "compare_and_swap miss fetched", &miss[i], &y[i]);
        /* what the left neighbour's hit left here */
        cas_values(s, left, &x[i], &y[i], &z[i]);
        expect_slot(w, s, &y[i]);
    }
    check_window_synced(w, "compare_and_swap hit/miss");
    MPI_Barrier(MPI_COMM_WORLD);
    test_cas_race(w, S_RACE_INT);
    test_cas_race(w, S_RACE_LONG);
    check_window_synced(w, "compare_and_swap race");
    MPI_Win_unlock_all(w->win);
}

/* ---- many origins, one target --------------------------------------- */

static int bxor_operand(int r, int it)
{
    return (int)signed_bits(hash4(item_seed, 7, (uint64_t)r, (uint64_t)it), 32);
}

/* the tickets of all ranks must be 0 .. ITERS * nranks - 1, each once,
 * and every rank's increasing */
static void check_tickets(const long *all)
{
    long  n    = (long)ITERS * nranks;
    char *seen = calloc((size_t)n, 1);
    int   r, it;

    for (r = 0; r < nranks; ++r) {
        for (it = 0; it < ITERS; ++it) {
            long v = all[r * ITERS + it];

            if ((v < 0) || (v >= n) || seen[v]) {
                fail("fetch_and_op ticket: rank %d got %ld (#%d), out of "
                     "range or twice",
                     r, v, it);
                free(seen);
                return;
            }
            seen[v] = 1;
            if ((it > 0) && (v <= all[r * ITERS + it - 1])) {
                fail("fetch_and_op ticket: rank %d got %ld after %ld", r, v,
                     all[r * ITERS + it - 1]);
            }
        }
    }
    free(seen);
}

/* what ITERS rounds of every rank's accumulates leave on rank 0 */
static void expect_concurrent(rma_win_t *w)
{
    int64_t sum  = (int64_t)ITERS * nranks * (nranks + 1) / 2;
    int     bxor = 0, r, it;
    elem_t  e;

    for (r = 0; r < nranks; ++r) {
        for (it = 0; it < ITERS; ++it) {
            bxor ^= bxor_operand(r, it);
        }
    }
    slot_value(S_SUM_INT, sum, &e);
    expect_slot(w, S_SUM_INT, &e);
    slot_value(S_SUM_LONG, sum, &e);
    expect_slot(w, S_SUM_LONG, &e);
    slot_value(S_SUM_DOUBLE, sum, &e); /* units of 0.25 */
    expect_slot(w, S_SUM_DOUBLE, &e);
    slot_value(S_MAX_LONG, (int64_t)ITERS * nranks - 1, &e);
    expect_slot(w, S_MAX_LONG, &e);
    slot_value(S_BXOR_INT, bxor, &e);
    expect_slot(w, S_BXOR_INT, &e);
}

/* Every rank adds (rank + 1) ITERS times in int, long and double, and
 * MAX and BXOR into slots on rank 0, and takes ITERS tickets with
 * fetch_and_op from a counter on the last rank; lock_all, flushes. */
static void test_concurrent(rma_win_t *w)
{
    static long tickets[ITERS], all_tickets[MAX_RANKS * ITERS];
    long        maxv[ITERS], add_l = rank + 1, one = 1;
    int         bxorv[ITERS], add_i = rank + 1, it, last = nranks - 1;
    double      add_d = 0.25 * (rank + 1);
    elem_t      e;

    win_reset(w);
    MPI_Win_lock_all(0, w->win);
    for (it = 0; it < ITERS; ++it) {
        /* operands stay untouched until the flush completes them */
        maxv[it]  = (long)it * nranks + rank;
        bxorv[it] = bxor_operand(rank, it);
        MPI_Accumulate(&add_i, 1, MPI_INT, 0, disp(w, 0, slot_off(S_SUM_INT)),
                       1, MPI_INT, MPI_SUM, w->win);
        MPI_Accumulate(&add_l, 1, MPI_LONG, 0, disp(w, 0, slot_off(S_SUM_LONG)),
                       1, MPI_LONG, MPI_SUM, w->win);
        MPI_Accumulate(&add_d, 1, MPI_DOUBLE, 0,
                       disp(w, 0, slot_off(S_SUM_DOUBLE)), 1, MPI_DOUBLE,
                       MPI_SUM, w->win);
        MPI_Accumulate(&maxv[it], 1, MPI_LONG, 0,
                       disp(w, 0, slot_off(S_MAX_LONG)), 1, MPI_LONG, MPI_MAX,
                       w->win);
        MPI_Accumulate(&bxorv[it], 1, MPI_INT, 0,
                       disp(w, 0, slot_off(S_BXOR_INT)), 1, MPI_INT, MPI_BXOR,
                       w->win);
        MPI_Fetch_and_op(&one, &tickets[it], MPI_LONG, last,
                         disp(w, last, slot_off(S_TICKET)), MPI_SUM, w->win);
        MPI_Win_flush(last, w->win);
        if (it % 8 == 7) {
            MPI_Win_flush(0, w->win);
        }
    }
    MPI_Win_flush_all(w->win);
    if (rank == 0) {
        expect_concurrent(w);
    }
    if (rank == last) {
        slot_value(S_TICKET, (int64_t)ITERS * nranks, &e);
        expect_slot(w, S_TICKET, &e);
    }
    check_window_synced(w, "concurrent accumulate");
    MPI_Gather(tickets, ITERS, MPI_LONG, all_tickets, ITERS, MPI_LONG, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        check_tickets(all_tickets);
    }
    MPI_Win_unlock_all(w->win);
}

/* A counter on rank 0 incremented by get, flush, put under an exclusive
 * lock (a lost update means two ranks held it at once), and another
 * accumulated under shared locks held by all ranks at once. */
static void test_locks(rma_win_t *w)
{
    long   value, next, inc = rank + 1;
    elem_t e;
    int    it;

    win_reset(w);
    for (it = 0; it < LOCK_ITERS; ++it) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win);
        MPI_Get(&value, 1, MPI_LONG, 0, disp(w, 0, slot_off(S_LOCKED)), 1,
                MPI_LONG, w->win);
        MPI_Win_flush(0, w->win);
        next = value + 1;
        MPI_Put(&next, 1, MPI_LONG, 0, disp(w, 0, slot_off(S_LOCKED)), 1,
                MPI_LONG, w->win);
        MPI_Win_unlock(0, w->win);

        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        MPI_Accumulate(&inc, 1, MPI_LONG, 0, disp(w, 0, slot_off(S_SHARED)), 1,
                       MPI_LONG, MPI_SUM, w->win);
        MPI_Win_unlock(0, w->win);
    }
    if (rank == 0) {
        slot_value(S_LOCKED, (int64_t)LOCK_ITERS * nranks, &e);
        expect_slot(w, S_LOCKED, &e);
        slot_value(S_SHARED, (int64_t)LOCK_ITERS * nranks * (nranks + 1) / 2,
                   &e);
        expect_slot(w, S_SHARED, &e);
    }
    check_window_passive(w, "lock counters");
}

/* ---- driver ------------------------------------------------------- */

static void test_fence(rma_win_t *w)
{
    test_put_get(w, SYNC_FENCE);
}

static void test_pscw(rma_win_t *w)
{
    test_put_get(w, SYNC_PSCW);
}

static void test_lock_exclusive(rma_win_t *w)
{
    test_put_get(w, SYNC_EXCL);
}

static void test_lock_shared(rma_win_t *w)
{
    test_put_get(w, SYNC_SHARED);
}

#define ON_ALLOCATE (1u << KIND_ALLOCATE)
#define ON_CREATE   (1u << KIND_CREATE)
#define ON_DYNAMIC  (1u << KIND_DYNAMIC)

/* By default every item runs on one or two kinds of window, and every
 * kind gets put/get of every size; with "full" every item runs on all
 * three. Under packet loss each loss that only a timeout repairs costs
 * one transport timeout (1 s by UCX's default): the default set keeps
 * such a run at 4 ranks within about a minute. */
static const struct {
    const char *name;
    void (*run)(rma_win_t *w);
    unsigned kinds;
} items[] = {
        {"fence put/get 8 B, 1 MiB+3, vector", test_fence,
         ON_ALLOCATE | ON_DYNAMIC},
        {"post/start/complete/wait put/get", test_pscw, ON_CREATE},
        {"lock exclusive put/get", test_lock_exclusive, ON_ALLOCATE},
        {"lock shared put/get", test_lock_shared, ON_DYNAMIC},
        {"lock_all put/get, flush(_local)(_all)", test_lock_all, ON_CREATE},
        {"rput/rget/raccumulate/rget_accumulate", test_requests, ON_CREATE},
        {"accumulate all ops int/long/double + 1 MiB", test_accumulate,
         ON_ALLOCATE | ON_DYNAMIC},
        {"get_accumulate all ops int/long/double", test_get_accumulate,
         ON_CREATE | ON_DYNAMIC},
        {"fetch_and_op SUM/REPLACE/NO_OP", test_fetch_and_op,
         ON_ALLOCATE | ON_DYNAMIC},
        {"compare_and_swap hit/miss/race", test_compare_and_swap,
         ON_ALLOCATE | ON_DYNAMIC},
        {"concurrent accumulate + fetch_and_op tickets", test_concurrent,
         ON_ALLOCATE | ON_CREATE},
        {"exclusive-lock counter, shared-lock accumulate", test_locks,
         ON_CREATE},
};
#define NUM_ITEMS (sizeof(items) / sizeof(items[0]))

static void run_suite(int kind, int full)
{
    size_t    i;
    rma_win_t w;

    win_open(&w, kind);
    for (i = 0; i < NUM_ITEMS; ++i) {
        /* what one item left behind cannot pass for the next's data */
        item_seed = (unsigned)(kind * NUM_ITEMS + i) + 1;
        if (full || (items[i].kinds & (1u << kind))) {
            begin_item(&w, items[i].name);
            items[i].run(&w);
            end_item();
        }
    }
    win_close(&w, kind);
}

/* MPI handles may be link-time addresses (Open MPI): set up at run time */
static void init_tables(void)
{
    static const char *op_names[NUM_OPS] = {"SUM",  "PROD",    "MAX",
                                            "MIN",  "BAND",    "BOR",
                                            "BXOR", "REPLACE", "NO_OP"};
    MPI_Op             op_handles[NUM_OPS];
    int                o;

    types[T_INT]        = (elem_type_t){"int", MPI_INT, sizeof(int), 0,
                                        (int)sizeof(int) * 8};
    types[T_LONG]       = (elem_type_t){"long", MPI_LONG, sizeof(long), 0,
                                        (int)sizeof(long) * 8};
    types[T_DOUBLE]     = (elem_type_t){"double", MPI_DOUBLE, sizeof(double), 1,
                                        64};
    op_handles[OP_SUM]  = MPI_SUM;
    op_handles[OP_PROD] = MPI_PROD;
    op_handles[OP_MAX]  = MPI_MAX;
    op_handles[OP_MIN]  = MPI_MIN;
    op_handles[OP_BAND] = MPI_BAND;
    op_handles[OP_BOR]  = MPI_BOR;
    op_handles[OP_BXOR] = MPI_BXOR;
    op_handles[OP_REPLACE] = MPI_REPLACE;
    op_handles[OP_NO_OP]   = MPI_NO_OP;
    for (o = 0; o < NUM_OPS; ++o) {
        ops[o].name = op_names[o];
        ops[o].op   = op_handles[o];
    }

    MPI_Type_vector(VEC_BLOCKS, VEC_BLOCK, VEC_STRIDE, MPI_INT, &target_vec);
    MPI_Type_commit(&target_vec);
    MPI_Type_vector(VEC_BLOCKS, VEC_BLOCK, OVEC_STRIDE, MPI_INT, &origin_vec);
    MPI_Type_commit(&origin_vec);
}

static void make_neighbour_group(void)
{
    MPI_Group world;
    int       peers[2] = {left, right};

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    /* with two ranks both neighbours are one, and may be listed once */
    MPI_Group_incl(world, (left == right) ? 1 : 2, peers, &neighbours);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    int all_failures = 0, kind, full;

    alarm(120); /* a hang ends the rank instead of the CI job */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks < 2) || (nranks > MAX_RANKS)) {
        printf("mpi_rma: rank %d of %d: FAIL (needs 2 to %d ranks)\n", rank,
               nranks, MAX_RANKS);
        MPI_Finalize();
        return 1;
    }
    right = (rank + 1) % nranks;
    left  = (rank + nranks - 1) % nranks;
    init_tables();
    make_neighbour_group();
    src_large    = malloc(LARGE_LEN);
    dst_large    = malloc(LARGE_LEN + GUARD);
    src_vec      = malloc(VEC_INTS * sizeof(int));
    big_operands = malloc(BIG_ACC_INTS * sizeof(int));
    dst_vec      = malloc(OVEC_EXTENT + GUARD);
    want         = malloc(WANT_LEN);

    full = (argc > 1) && (strcmp(argv[1], "full") == 0);
    for (kind = 0; kind < NUM_KINDS; ++kind) {
        run_suite(kind, full);
    }

    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (failures == 0) {
        printf("mpi_rma: rank %d of %d: PASS\n", rank, nranks);
    } else {
        printf("mpi_rma: rank %d of %d: FAIL (%s)\n", rank, nranks,
               first_failure);
    }
    fflush(stdout);
    MPI_Group_free(&neighbours);
    MPI_Type_free(&target_vec);
    MPI_Type_free(&origin_vec);
    free(src_large);
    free(dst_large);
    free(src_vec);
    free(big_operands);
    free(dst_vec);
    free(want);
    MPI_Finalize();
    return (all_failures == 0) ? 0 : 1;
}
