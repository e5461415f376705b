/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_pingpong [MIN MAX]: a 2-rank MPI ping-pong over message sizes MIN,
 * 2*MIN, ... MAX bytes (default 8 .. 4 MiB). Per size rank 0 prints
 *   pingpong SIZE ITERS US_PER_ROUND_TRIP GBITS
 * (GBITS: 2 * SIZE * 8 bits per round trip, 10^9 bits/s), the best of
 * three timed runs after a warm-up. Every message's first and last bytes
 * are checked (a pattern of the size and round); a bad one ends the run
 * with "pingpong: bad data" and exit 1.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pp_byte(size_t size, int round, size_t at)
{
    return (unsigned char)(size * 7 + round * 13 + at * 3 + 1);
}

/* round trips of `size` bytes; 0 when the data was right */
static int pp_run(int rank, unsigned char *buf, size_t size, int iters)
{
    int i, bad = 0;

    for (i = 0; i < iters; ++i) {
        if (rank == 0) {
            buf[0]        = pp_byte(size, i, 0);
            buf[size - 1] = pp_byte(size, i, size - 1);
            MPI_Send(buf, (int)size, MPI_BYTE, 1, i & 0x7fff, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)size, MPI_BYTE, 1, i & 0x7fff, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)size, MPI_BYTE, 0, i & 0x7fff, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            bad |= (buf[0] != pp_byte(size, i, 0)) ||
                   (buf[size - 1] != pp_byte(size, i, size - 1));
            MPI_Send(buf, (int)size, MPI_BYTE, 0, i & 0x7fff, MPI_COMM_WORLD);
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    size_t         min = (argc > 1) ? strtoull(argv[1], NULL, 0) : 8;
    size_t         max = (argc > 2) ? strtoull(argv[2], NULL, 0) : 4u << 20;
    int            rank, nprocs, iters, r, bad = 0, any_bad;
    double         t, best;
    unsigned char *buf;
    size_t         size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if ((nprocs != 2) || (min == 0) || (max < min)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 mpi_pingpong [MIN MAX]\n");
        }
        MPI_Finalize();
        return 2;
    }
    buf = malloc(max);
    memset(buf, 0, max);
    for (size = min; size <= max; size *= 2) {
        /* about 64 MiB each way per run, 20 .. 2000 round trips */
        iters = (int)((64u << 20) / size);
        iters = (iters < 20) ? 20 : (iters > 2000) ? 2000 : iters;
        bad |= pp_run(rank, buf, size, iters / 4 + 1);
        best = 1e30;
        for (r = 0; r < 3; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            bad |= pp_run(rank, buf, size, iters);
            t    = MPI_Wtime() - t;
            best = (t < best) ? t : best;
        }
        if (rank == 0) {
            printf("pingpong %zu %d %.3f %.3f\n", size, iters,
                   best / iters * 1e6, 2.0 * size * 8 * iters / best / 1e9);
            fflush(stdout);
        }
    }
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if ((rank == 0) && any_bad) {
        printf("pingpong: bad data\n");
    }
    free(buf);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
