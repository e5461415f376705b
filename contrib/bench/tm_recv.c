/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive-heavy matching, Open MPI over UCP (make bench-tm, tm_recv.sh):
 * rank 1 pre-posts NPOSTED receives from rank 0 with tags 0..NPOSTED-1;
 * rank 0 sends them back to front, in batches, so every message matches
 * the far end of the receive list. Rank 1 sleeps while a batch arrives
 * (with tag matching on, the device matches it meanwhile, in the
 * device's own progress thread), then completes the batch with
 * MPI_Waitall. What the receiving application thread spends is measured
 * with CLOCK_THREAD_CPUTIME_ID around the MPI calls only: posting the
 * receives, and completing them once the data is there. The process's
 * other threads (the device's progress thread, UCX's async thread) are
 * reported apart. Every byte is checked.
 *
 *   tm_recv [ROUNDS [SIZE [NPOSTED [BATCH]]]]
 *
 * Rank 1 prints one line:
 *   tm_recv: msgs N post_ns P complete_ns C other_ns O   (per message)
 */
#include <mpi.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define TM_RECV_GO_TAG 30000

static uint64_t thread_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time (ns) of every thread of this process but the calling one. A
 * thread's CPU clock id is built from its TID as the kernel defines it
 * (CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED: nanoseconds, unlike the clock
 * ticks of /proc/self/task/N/stat). */
static uint64_t other_threads_ns(void)
{
    long            self = syscall(SYS_gettid);
    struct timespec ts;
    uint64_t        sum = 0;
    struct dirent  *d;
    clockid_t       clk;
    pid_t           tid;
    DIR            *dir;

    dir = opendir("/proc/self/task");
    if (dir == NULL) {
        return 0;
    }
    while ((d = readdir(dir)) != NULL) {
        tid = (pid_t)atol(d->d_name);
        if ((tid <= 0) || (tid == self)) {
            continue;
        }
        clk = (clockid_t)((~(unsigned)tid << 3) | 6);
        if (clock_gettime(clk, &ts) == 0) {
            sum += (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        }
    }
    closedir(dir);
    return sum;
}

static unsigned char pattern(int round, int tag, size_t i)
{
    return (unsigned char)(round * 131 + tag * 7 + i);
}

int main(int argc, char **argv)
{
    int             rounds  = (argc > 1) ? atoi(argv[1]) : 20;
    size_t          size    = (argc > 2) ? (size_t)atol(argv[2]) : 4096;
    int             nposted = (argc > 3) ? atoi(argv[3]) : 1023;
    int             batch   = (argc > 4) ? atoi(argv[4]) : 341;
    struct timespec nap     = {0, 20 * 1000 * 1000};
    uint64_t        post_ns = 0, complete_ns = 0, other0 = 0, t0;
    long            bad = 0, msgs = 0;
    MPI_Request    *req;
    unsigned char  *buf;
    int             rank, nranks, r, b, i, tag;
    size_t          k;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks != 2) || (rounds < 1) || (size < 1) || (batch < 1) ||
        (nposted < batch) || (nposted % batch != 0) ||
        (nposted >= TM_RECV_GO_TAG)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 tm_recv [ROUNDS [SIZE "
                            "[NPOSTED [BATCH]]]] (BATCH divides NPOSTED)\n");
        }
        MPI_Finalize();
        return 2;
    }
    buf = malloc(size * (size_t)nposted);
    req = calloc((size_t)nposted, sizeof(*req));
    if ((buf == NULL) || (req == NULL)) {
        fprintf(stderr, "tm_recv: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* round 0 warms up (wire-up, UCP's first offloaded receives) */
    for (r = 0; r <= rounds; ++r) {
        if (rank == 0) {
            for (b = 0; b < nposted / batch; ++b) {
                MPI_Recv(NULL, 0, MPI_BYTE, 1, TM_RECV_GO_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                for (i = 0; i < batch; ++i) {
                    tag = nposted - 1 - (b * batch + i);
                    for (k = 0; k < size; ++k) {
                        buf[k] = pattern(r, tag, k);
                    }
                    MPI_Send(buf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
                }
            }
            continue;
        }
        if (r == 1) {
            other0 = other_threads_ns();
        }
        memset(buf, 0, size * (size_t)nposted);
        t0 = thread_ns();
        for (i = 0; i < nposted; ++i) {
            MPI_Irecv(buf + (size_t)i * size, (int)size, MPI_BYTE, 0, i,
                      MPI_COMM_WORLD, &req[i]);
        }
        if (r > 0) {
            post_ns += thread_ns() - t0;
        }
        for (b = 0; b < nposted / batch; ++b) {
            MPI_Send(NULL, 0, MPI_BYTE, 0, TM_RECV_GO_TAG, MPI_COMM_WORLD);
            nanosleep(&nap, NULL); /* the batch arrives meanwhile */
            t0 = thread_ns();
            MPI_Waitall(batch, &req[nposted - (b + 1) * batch],
                        MPI_STATUSES_IGNORE);
            if (r > 0) {
                complete_ns += thread_ns() - t0;
                msgs += batch;
            }
        }
        for (i = 0; i < nposted; ++i) {
            for (k = 0; k < size; ++k) {
                bad += buf[(size_t)i * size + k] != pattern(r, i, k);
            }
        }
    }
    if (rank == 1) {
        printf("tm_recv: msgs %ld post_ns %.0f complete_ns %.0f other_ns %.0f"
               " bad_bytes %ld\n",
               msgs, (double)post_ns / msgs, (double)complete_ns / msgs,
               (double)(other_threads_ns() - other0) / msgs, bad);
    }
    MPI_Finalize();
    free(req);
    free(buf);
    return bad ? 1 : 0;
}
