/*
 * mpi_bench.c: OSU-style MPI point-to-point benchmarks (MPI only), one
 * measurement per size and launch; perf/mpi/compare.sh repeats and interleaves
 * launches over the backends (docs/performance.md, "MPI (issue 5)").
 *
 *   mpirun -np 2 perf/mpi/mpi_bench -b lat [-s 1,8,4k] [--max-size 4m] [-W 64] [-i N]
 *
 * Benchmarks (rank 0 times; sizes in bytes; one line "BENCH SIZE VALUE" each):
 *   lat   ping-pong with MPI_Send/MPI_Recv between ranks 0 and 1 (osu_latency):
 *         one-way latency in microseconds = round trip / 2.
 *   bw    rank 0 MPI_Isends a window of W messages, rank 1 has W MPI_Irecvs
 *         posted; MPI_Waitall; a 4-byte ack back (osu_bw): MB/s (1e6 B/s).
 *   bibw  both ranks send a window to each other at once (osu_bibw): MB/s,
 *         both directions summed.
 *   mbw   the bw loop on every pair (i, i + n/2) at once (osu_mbw_mr): MB/s summed
 *         over the pairs.
 *   rate  the same loop reported as messages per second summed over the pairs
 *         (osu_mbw_mr's message rate).
 * Every run has untimed warm-up iterations; ranks synchronise with
 * MPI_Barrier before each size. Iterations shrink with size so that each size
 * moves a bounded number of bytes.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bench_common.h"

enum bench { B_LAT, B_BW, B_BIBW, B_MBW, B_RATE };
static const char *bench_names[] = {"lat", "bw", "bibw", "mbw", "rate"};

static int rank, nranks;

static void usage(void)
{
    if (0 == rank) {
        fprintf(stderr,
                "usage: mpi_bench -b lat|bw|bibw|mbw|rate [options]\n"
                "  -s, --sizes LIST   sizes (1,8,4k,1m); default powers of two up to --max-size\n"
                "  --min-size N       smallest default size (default 1; 0 allowed)\n"
                "  --max-size N       largest default size (default 4m)\n"
                "  -W, --window N     messages in flight for bw, bibw, mbw, rate (default 64)\n"
                "  -i, --iters N      timed iterations up to 8 KiB (default lat 10000, others "
                "100); fewer above\n"
                "  -w, --warmup N     untimed iterations (default a tenth)\n");
    }
}

/* ------------------------------------------------------------------ the benchmarks */

static double run_lat(size_t size, long iters, long warmup, char *sbuf, char *rbuf)
{
    double t0 = 0;
    if (rank >= 2) {
        return 0;
    }
    for (long i = 0; i < iters + warmup; ++i) {
        if (i == warmup) {
            t0 = bench_now();
        }
        if (0 == rank) {
            MPI_Send(sbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (bench_now() - t0) * 1e6 / (2.0 * (double)iters);
}

/**
 * The window loop of osu_bw / osu_mbw_mr between @p me and @p peer (sender when
 * @p sender). Returns the elapsed time of the timed iterations.
 */
static double run_window(size_t size, long iters, long warmup, int window, int peer, int sender,
                         char *sbuf, char *rbuf, MPI_Request *reqs)
{
    double t0 = 0;
    int ack = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        if (i == warmup) {
            t0 = bench_now();
        }
        if (sender) {
            for (int w = 0; w < window; ++w) {
                MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[w]);
            }
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; ++w) {
                MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[w]);
            }
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        }
    }
    return bench_now() - t0;
}

static double run_bibw(size_t size, long iters, long warmup, int window, char *sbuf, char *rbuf,
                       MPI_Request *reqs)
{
    double t0 = 0;
    if (rank >= 2) {
        return 0;
    }
    const int peer = 1 - rank;
    for (long i = 0; i < iters + warmup; ++i) {
        if (i == warmup) {
            t0 = bench_now();
        }
        for (int w = 0; w < window; ++w) {
            MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &reqs[window + w]);
        }
        for (int w = 0; w < window; ++w) {
            MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &reqs[w]);
        }
        MPI_Waitall(2 * window, reqs, MPI_STATUSES_IGNORE);
    }
    const double dt = bench_now() - t0;
    return (double)size * window * 2.0 * (double)iters / dt / 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int bench = -1, window = 64;
    long iters = 0, warmup = -1;
    size_t min_size = 1, max_size = 4u << 20;
    size_t sizes[64];
    int nsizes = 0;
    for (int a = 1; a < argc; ++a) {
        const char *opt = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        if ((0 == strcmp(opt, "-b") || 0 == strcmp(opt, "--bench")) && val) {
            for (int b = 0; b <= B_RATE; ++b) {
                if (0 == strcmp(val, bench_names[b])) {
                    bench = b;
                }
            }
            ++a;
        } else if ((0 == strcmp(opt, "-s") || 0 == strcmp(opt, "--sizes")) && val) {
            bench_parse_sizes(val, sizes, &nsizes, 64);
            ++a;
        } else if (0 == strcmp(opt, "--min-size") && val) {
            min_size = bench_parse_size(val);
            ++a;
        } else if (0 == strcmp(opt, "--max-size") && val) {
            max_size = bench_parse_size(val);
            ++a;
        } else if ((0 == strcmp(opt, "-W") || 0 == strcmp(opt, "--window")) && val) {
            window = atoi(val);
            ++a;
        } else if ((0 == strcmp(opt, "-i") || 0 == strcmp(opt, "--iters")) && val) {
            iters = atol(val);
            ++a;
        } else if ((0 == strcmp(opt, "-w") || 0 == strcmp(opt, "--warmup")) && val) {
            warmup = atol(val);
            ++a;
        } else {
            usage();
            MPI_Finalize();
            return 2;
        }
    }
    int bad = bench < 0 || window < 1 || window > 4096 || min_size == (size_t)-1 ||
              max_size == (size_t)-1 || max_size > (1u << 30);
    for (int k = 0; k < nsizes; ++k) {
        bad |= sizes[k] == (size_t)-1 || sizes[k] > (1u << 30);
    }
    if ((bench == B_LAT || bench == B_BIBW) && nranks < 2) {
        bad = 1;
    }
    if ((bench == B_MBW || bench == B_RATE || bench == B_BW) && (nranks < 2 || nranks % 2)) {
        bad = 1;
    }
    if (bad) {
        usage();
        if (0 == rank) {
            fprintf(stderr,
                    "mpi_bench: bad arguments, or a rank count the benchmark cannot use "
                    "(lat/bibw: >= 2; bw/mbw/rate: even)\n");
        }
        MPI_Finalize();
        return 2;
    }
    if (0 == nsizes) {
        for (size_t s = min_size; s <= max_size && nsizes < 64; s = s ? 2 * s : 1) {
            sizes[nsizes++] = s;
        }
    }
    size_t biggest = 1;
    for (int k = 0; k < nsizes; ++k) {
        biggest = sizes[k] > biggest ? sizes[k] : biggest;
    }

    /* One page-aligned buffer each way, touched before the first run. */
    char *sbuf = NULL, *rbuf = NULL;
    if (posix_memalign((void **)&sbuf, 4096, biggest) ||
        posix_memalign((void **)&rbuf, 4096, biggest)) {
        fprintf(stderr, "mpi_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a', biggest);
    memset(rbuf, 'b', biggest);
    MPI_Request *reqs = malloc(2 * (size_t)window * sizeof(MPI_Request));

    if (0 == rank) {
        printf("# mpi_bench %s: %d ranks, window %d; unit %s\n", bench_names[bench], nranks, window,
               bench == B_LAT    ? "us (one-way)"
               : bench == B_RATE ? "messages/s"
                                 : "MB/s");
    }
    const long base = iters > 0 ? iters : (bench == B_LAT ? 10000 : 100);
    for (int k = 0; k < nsizes; ++k) {
        const size_t size = sizes[k];
        const long n = bench_iters_for(size, base, bench == B_LAT ? 100 : 10);
        const long wu = warmup >= 0 ? warmup : (n / 10 > 1 ? n / 10 : 2);
        double value = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        switch (bench) {
            case B_LAT:
                value = run_lat(size, n, wu, sbuf, rbuf);
                break;
            case B_BIBW:
                value = run_bibw(size, n, wu, window, sbuf, rbuf, reqs);
                break;
            case B_BW:
            case B_MBW:
            case B_RATE: {
                /* bw: the pair (0, 1) only; mbw and rate: every pair (i, i + n/2). */
                const int half = nranks / 2;
                double dt = 0;
                const int in_pair = bench == B_BW ? rank < 2 : 1;
                if (in_pair) {
                    const int peer =
                        bench == B_BW ? 1 - rank : (rank < half ? rank + half : rank - half);
                    const int sender = bench == B_BW ? rank == 0 : rank < half;
                    dt = run_window(size, n, wu, window, peer, sender, sbuf, rbuf, reqs);
                }
                /* Rate of each sender, summed (osu_mbw_mr): every pair runs at once. */
                double mine = 0, total = 0;
                const int is_sender = bench == B_BW ? rank == 0 : rank < half;
                if (is_sender && dt > 0) {
                    mine = (double)window * (double)n / dt;
                }
                MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                value = bench == B_RATE ? total : total * (double)size / 1e6;
                break;
            }
        }
        if (0 == rank) {
            printf("%s %zu %.6g\n", bench_names[bench], size, value);
            fflush(stdout);
        }
    }
    free(reqs);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
