/*
 * coll_bench.c: OSU-style MPI collective latency benchmarks (MPI only), one
 * measurement per (benchmark, size) and launch; perf/coll/compare.sh repeats
 * and interleaves launches over the backends (coll weft, tuned, han).
 *
 *   mpirun -np 4 perf/coll/coll_bench [-b allreduce,bcast] [-s 4,4k,1m] [--min 4] [--max 4m]
 *
 * Benchmarks (as osu_barrier, osu_bcast, osu_allreduce, osu_allgather,
 * osu_alltoall, osu_reduce; every rank times, root 0 where there is one):
 *   barrier    MPI_Barrier (one "size", 0)
 *   bcast      MPI_Bcast of SIZE MPI_CHARs from rank 0
 *   allreduce  MPI_Allreduce of SIZE/4 MPI_FLOATs, MPI_SUM
 *   allgather  MPI_Allgather, SIZE MPI_CHARs from each rank (the per-rank block)
 *   alltoall   MPI_Alltoall, SIZE MPI_CHARs to each rank (the per-rank block)
 *   reduce     MPI_Reduce of SIZE/4 MPI_FLOATs, MPI_SUM, to rank 0
 * Sizes are bytes per rank, powers of two from --min (4) to --max (4m) unless
 * -s lists them; allreduce and reduce skip sizes below one float.
 *
 * Per size, as OSU does: MPI_Barrier; untimed warm-up iterations, then timed
 * ones (1000 and 100 up to 8 KiB, 100 and 10 above); each iteration times the
 * one collective call and is followed by an untimed MPI_Barrier (so that
 * consecutive calls do not pipeline); each rank's mean time per call; the
 * average over ranks (OSU's "Avg Latency(us)") is printed by rank 0 as one line
 * "BENCH SIZE MICROSECONDS"; lines starting with '#' are comments.
 *
 * The first warm-up iteration of every size checks the result (known values in,
 * the exact result expected out): a wrong result prints what is wrong and
 * aborts the job (exit status non-zero) instead of producing numbers.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

enum bench { B_BARRIER, B_BCAST, B_ALLREDUCE, B_ALLGATHER, B_ALLTOALL, B_REDUCE, B_COUNT };
static const char *bench_names[] = {"barrier",   "bcast",    "allreduce",
                                    "allgather", "alltoall", "reduce"};

static int rank, nranks;

static void usage(void)
{
    if (0 == rank) {
        fprintf(stderr,
                "usage: coll_bench [options]\n"
                "  -b, --bench LIST      barrier,bcast,allreduce,allgather,alltoall,reduce "
                "(default: all)\n"
                "  -s, --sizes LIST      sizes in bytes per rank (4,64,4k,1m); default powers of "
                "two\n"
                "                        from --min to --max\n"
                "  --min, --min-size N   smallest default size (default 4)\n"
                "  --max, --max-size N   largest default size (default 4m)\n"
                "  -i, --iters N         timed iterations up to --large (default 1000)\n"
                "  -w, --warmup N        untimed iterations up to --large (default 100; at "
                "least 1)\n"
                "  --iters-large N       timed iterations above --large (default 100)\n"
                "  --warmup-large N      untimed iterations above --large (default 10; at "
                "least 1)\n"
                "  --large N             the size above which the -large counts apply "
                "(default 8k)\n"
                "  --no-check            do not check results\n");
    }
}

/* ------------------------------------------------------------------ the checks */

/* Known values: exact in float (small integers), different for each size so
 * that a buffer left over from the previous size does not pass; bytes are never
 * 0, what receive buffers start with. */
static unsigned char byte_of(int r, int dst, size_t j, size_t size)
{
    return (unsigned char)(1 + ((size_t)r * 37 + (size_t)dst * 11 + j % 251 + size % 13) % 255);
}
static float float_of(int r, size_t j, size_t size)
{
    return (float)((r + 1) * (int)((j + size) % 7 + 1));
}
static float float_sum(size_t j, size_t size)
{
    return (float)((long)nranks * (nranks + 1) / 2 * (long)((j + size) % 7 + 1));
}

static void fail(int bench, size_t size, const char *what, size_t at, double got, double want)
{
    fprintf(stderr,
            "coll_bench: %s of %zu bytes gave a wrong result on rank %d: %s %zu is %g, "
            "expected %g\n",
            bench_names[bench], size, rank, what, at, got, want);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/** Fills the send buffer with the known values of @p bench at @p size and
 *  the receive buffer with something else. */
static void fill(int bench, size_t size, char *sbuf, char *rbuf)
{
    const size_t nf = size / sizeof(float);
    switch (bench) {
        case B_BCAST:
            for (size_t j = 0; j < size; ++j) {
                sbuf[j] = (char)(0 == rank ? byte_of(0, 0, j, size) : 0);
            }
            break;
        case B_ALLREDUCE:
        case B_REDUCE:
            for (size_t j = 0; j < nf; ++j) {
                ((float *)sbuf)[j] = float_of(rank, j, size);
                ((float *)rbuf)[j] = -1.0f;
            }
            break;
        case B_ALLGATHER:
            for (size_t j = 0; j < size; ++j) {
                sbuf[j] = (char)byte_of(rank, 0, j, size);
            }
            memset(rbuf, 0, size * (size_t)nranks);
            break;
        case B_ALLTOALL:
            for (int d = 0; d < nranks; ++d) {
                for (size_t j = 0; j < size; ++j) {
                    sbuf[(size_t)d * size + j] = (char)byte_of(rank, d, j, size);
                }
            }
            memset(rbuf, 0, size * (size_t)nranks);
            break;
        default:
            break;
    }
}

static void check(int bench, size_t size, const char *sbuf, const char *rbuf)
{
    const size_t nf = size / sizeof(float);
    switch (bench) {
        case B_BCAST:
            for (size_t j = 0; j < size; ++j) {
                if ((unsigned char)sbuf[j] != byte_of(0, 0, j, size)) {
                    fail(bench, size, "byte", j, (unsigned char)sbuf[j], byte_of(0, 0, j, size));
                }
            }
            break;
        case B_ALLREDUCE:
        case B_REDUCE:
            if (B_REDUCE == bench && 0 != rank) {
                break;
            }
            for (size_t j = 0; j < nf; ++j) {
                const float want = float_sum(j, size);
                if (((const float *)rbuf)[j] != want) {
                    fail(bench, size, "float", j, ((const float *)rbuf)[j], want);
                }
            }
            break;
        case B_ALLGATHER:
            for (int r = 0; r < nranks; ++r) {
                for (size_t j = 0; j < size; ++j) {
                    const size_t at = (size_t)r * size + j;
                    if ((unsigned char)rbuf[at] != byte_of(r, 0, j, size)) {
                        fail(bench, size, "byte", at, (unsigned char)rbuf[at],
                             byte_of(r, 0, j, size));
                    }
                }
            }
            break;
        case B_ALLTOALL:
            for (int r = 0; r < nranks; ++r) {
                for (size_t j = 0; j < size; ++j) {
                    const size_t at = (size_t)r * size + j;
                    if ((unsigned char)rbuf[at] != byte_of(r, rank, j, size)) {
                        fail(bench, size, "byte", at, (unsigned char)rbuf[at],
                             byte_of(r, rank, j, size));
                    }
                }
            }
            break;
        default:
            break;
    }
}

/* ------------------------------------------------------------------ the benchmarks */

static void call(int bench, size_t size, char *sbuf, char *rbuf)
{
    const int nf = (int)(size / sizeof(float));
    switch (bench) {
        case B_BARRIER:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        case B_BCAST:
            MPI_Bcast(sbuf, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
            break;
        case B_ALLREDUCE:
            MPI_Allreduce(sbuf, rbuf, nf, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            break;
        case B_ALLGATHER:
            MPI_Allgather(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR, MPI_COMM_WORLD);
            break;
        case B_ALLTOALL:
            MPI_Alltoall(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR, MPI_COMM_WORLD);
            break;
        case B_REDUCE:
            MPI_Reduce(sbuf, rbuf, nf, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            break;
        default:
            break;
    }
}

/** One size of one benchmark: the average over ranks of each rank's mean time
 *  per call, in microseconds (valid on rank 0). */
static double run(int bench, size_t size, long iters, long warmup, int checked, char *sbuf,
                  char *rbuf)
{
    if (checked) {
        fill(bench, size, sbuf, rbuf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0;
    for (long i = 0; i < warmup + iters; ++i) {
        const double t0 = bench_now();
        call(bench, size, sbuf, rbuf);
        const double t1 = bench_now();
        if (i >= warmup) {
            total += t1 - t0;
        }
        if (0 == i && checked) {
            check(bench, size, sbuf, rbuf);
        }
        if (B_BARRIER != bench) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    double mine = total * 1e6 / (double)iters, sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / nranks;
}

static int parse_count(const char *val, long *out)
{
    char *end = NULL;
    const long v = strtol(val, &end, 10);
    if (end == val || *end != '\0' || v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int want[B_COUNT] = {1, 1, 1, 1, 1, 1};
    long iters = 1000, warmup = 100, iters_large = 100, warmup_large = 10;
    size_t min_size = 4, max_size = 4u << 20, large = 8192;
    size_t sizes[64];
    int nsizes = 0, checked = 1, bad = 0;
    for (int a = 1; a < argc && !bad; ++a) {
        const char *opt = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        if ((0 == strcmp(opt, "-b") || 0 == strcmp(opt, "--bench")) && val) {
            memset(want, 0, sizeof(want));
            char *list = strdup(val), *save = NULL;
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int b = 0; b < B_COUNT; ++b) {
                    if (0 == strcmp(tok, bench_names[b])) {
                        want[b] = found = 1;
                    }
                }
                if (!found) {
                    if (0 == rank) {
                        fprintf(stderr, "coll_bench: unknown benchmark '%s'\n", tok);
                    }
                    bad = 1;
                }
            }
            free(list);
            ++a;
        } else if ((0 == strcmp(opt, "-s") || 0 == strcmp(opt, "--sizes")) && val) {
            bench_parse_sizes(val, sizes, &nsizes, 64);
            ++a;
        } else if ((0 == strcmp(opt, "--min") || 0 == strcmp(opt, "--min-size")) && val) {
            min_size = bench_parse_size(val);
            ++a;
        } else if ((0 == strcmp(opt, "--max") || 0 == strcmp(opt, "--max-size")) && val) {
            max_size = bench_parse_size(val);
            ++a;
        } else if ((0 == strcmp(opt, "-i") || 0 == strcmp(opt, "--iters")) && val) {
            bad |= parse_count(val, &iters);
            ++a;
        } else if ((0 == strcmp(opt, "-w") || 0 == strcmp(opt, "--warmup")) && val) {
            bad |= parse_count(val, &warmup);
            ++a;
        } else if (0 == strcmp(opt, "--iters-large") && val) {
            bad |= parse_count(val, &iters_large);
            ++a;
        } else if (0 == strcmp(opt, "--warmup-large") && val) {
            bad |= parse_count(val, &warmup_large);
            ++a;
        } else if (0 == strcmp(opt, "--large") && val) {
            large = bench_parse_size(val);
            ++a;
        } else if (0 == strcmp(opt, "--no-check")) {
            checked = 0;
        } else {
            bad = 1;
        }
    }
    /* Sizes are ints of MPI_CHAR: keep every buffer (size * ranks) well within. */
    const size_t limit = (size_t)1 << 30;
    bad |= min_size == (size_t)-1 || max_size == (size_t)-1 || large == (size_t)-1 ||
           max_size > limit || iters < 1 || iters_large < 1;
    for (int k = 0; k < nsizes; ++k) {
        bad |= sizes[k] == (size_t)-1 || sizes[k] > limit;
    }
    if (bad) {
        usage();
        if (0 == rank) {
            fprintf(stderr, "coll_bench: bad arguments\n");
        }
        MPI_Finalize();
        return 2;
    }
    /* Warm-up iteration 0 is the checked one. */
    warmup = warmup < 1 ? 1 : warmup;
    warmup_large = warmup_large < 1 ? 1 : warmup_large;
    if (0 == nsizes) {
        for (size_t s = min_size; s <= max_size && nsizes < 64; s = s ? 2 * s : 1) {
            sizes[nsizes++] = s;
        }
    }
    size_t biggest = 1;
    for (int k = 0; k < nsizes; ++k) {
        biggest = sizes[k] > biggest ? sizes[k] : biggest;
    }
    if (biggest * (size_t)nranks > ((size_t)1 << 31) - 1) {
        if (0 == rank) {
            fprintf(stderr, "coll_bench: %zu bytes times %d ranks is too much\n", biggest, nranks);
        }
        MPI_Finalize();
        return 2;
    }

    /* Page-aligned buffers of the biggest size times the ranks (allgather's and
     * alltoall's), touched before the first run. */
    const size_t bytes = biggest * (size_t)nranks;
    char *sbuf = NULL, *rbuf = NULL;
    if (posix_memalign((void **)&sbuf, 4096, bytes) ||
        posix_memalign((void **)&rbuf, 4096, bytes)) {
        fprintf(stderr, "coll_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a', bytes);
    memset(rbuf, 'b', bytes);

    if (0 == rank) {
        printf(
            "# coll_bench: %d ranks; unit us per call (each rank's mean, averaged over "
            "ranks); iterations %ld (+%ld warm-up) up to %zu bytes, %ld (+%ld) above; "
            "results %s\n",
            nranks, iters, warmup, large, iters_large, warmup_large,
            checked ? "checked" : "not checked");
        fflush(stdout);
    }
    for (int b = 0; b < B_COUNT; ++b) {
        if (!want[b]) {
            continue;
        }
        for (int k = 0; k < nsizes; ++k) {
            const size_t size = B_BARRIER == b ? 0 : sizes[k];
            if ((B_ALLREDUCE == b || B_REDUCE == b) && size < sizeof(float)) {
                continue;
            }
            const int is_large = size > large;
            const double us = run(b, size, is_large ? iters_large : iters,
                                  is_large ? warmup_large : warmup, checked, sbuf, rbuf);
            if (0 == rank) {
                printf("%s %zu %.6g\n", bench_names[b], size, us);
                fflush(stdout);
            }
            if (B_BARRIER == b) {
                break;
            }
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
