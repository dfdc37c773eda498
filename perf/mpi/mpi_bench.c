/*
 * mpi_bench.c: OSU-style MPI point-to-point and one-sided benchmarks (MPI only),
 * one measurement per size and launch; perf/mpi/compare.sh repeats and
 * interleaves launches over the backends (docs/performance.md, "MPI (issue 5)"
 * and "MPI one-sided").
 *
 *   mpirun -np 2 perf/mpi/mpi_bench -b lat [-s 1,8,4k] [--max-size 4m] [-W 64] [-i N]
 *   mpirun -np 2 perf/mpi/mpi_bench -b put_lat [--sync flush] [--win allocate]
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
 *   tags  rate with a tag per message: the receiver posts its W receives with tags
 *         0..W-1, the sender sends tag W-1 first and 0 last, so each message is
 *         matched against up to W posted receives (the cost of matching with many
 *         receives posted; not an OSU benchmark): messages/s.
 * One-sided (exactly 2 ranks; rank 0 the origin, rank 1 the target; the loops of
 * OSU 7.x osu_put_latency, osu_get_latency, osu_acc_latency, osu_fop_latency,
 * osu_cas_latency, osu_put_bw and osu_get_bw):
 *   put_lat, get_lat  one MPI_Put / MPI_Get of SIZE MPI_CHARs, then the sync: us
 *         per operation.
 *   acc_lat  one MPI_Accumulate of SIZE bytes with MPI_SUM on --type (default
 *         MPI_CHAR, as OSU; sizes smaller than the type are skipped): us.
 *   fop_lat  MPI_Fetch_and_op, MPI_SUM on one MPI_LONG_LONG (64 bits): us; size 8.
 *   cas_lat  MPI_Compare_and_swap on one MPI_LONG_LONG: us; size 8.
 *   put_bw, get_bw  W operations of SIZE bytes to W consecutive target slots,
 *         then the sync (osu_put_bw / osu_get_bw): MB/s.
 * --sync names the synchronisation (OSU's -s), per timed iteration:
 *   lock         MPI_Win_lock (shared; exclusive for fop and cas); op(s); MPI_Win_unlock.
 *   flush        MPI_Win_lock once, untimed; op(s); MPI_Win_flush (OSU's default).
 *   flush_local  the same with MPI_Win_flush_local.
 *   lock_all     MPI_Win_lock_all; op(s); MPI_Win_unlock_all.
 *   fence        latency: rank 0 fence; op; fence; fence, rank 1 fence; fence; op
 *                back; fence, reported per operation (time / 2); bandwidth:
 *                fence; W ops; fence, rank 1 fences alone.
 *   pscw         latency: rank 0 start; op; complete; post; wait, rank 1 post;
 *                wait; start; op back; complete (time / 2); bandwidth: rank 0
 *                start; W ops; complete, rank 1 post; wait.
 * --win: MPI_Win_allocate (default, as OSU) or MPI_Win_create on page-aligned
 * memory. As OSU, every size gets a window of its own (SIZE bytes, W * SIZE for
 * the bandwidths, at least 8), freed after it; unlike OSU the window memory is
 * zeroed (touched) before the first operation.
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

enum bench {
    B_LAT,
    B_BW,
    B_BIBW,
    B_MBW,
    B_RATE,
    B_TAGS,
    B_PUT_LAT,
    B_GET_LAT,
    B_ACC_LAT,
    B_FOP_LAT,
    B_CAS_LAT,
    B_PUT_BW,
    B_GET_BW,
    B_COUNT
};
static const char *bench_names[] = {"lat",     "bw",      "bibw",    "mbw",     "rate",
                                    "tags",    "put_lat", "get_lat", "acc_lat", "fop_lat",
                                    "cas_lat", "put_bw",  "get_bw"};

enum sync_mode { S_LOCK, S_FLUSH, S_FLUSH_LOCAL, S_LOCK_ALL, S_FENCE, S_PSCW, S_COUNT };
static const char *sync_names[] = {"lock", "flush", "flush_local", "lock_all", "fence", "pscw"};

static int is_rma(int bench)
{
    return bench >= B_PUT_LAT;
}
static int is_rma_bw(int bench)
{
    return bench == B_PUT_BW || bench == B_GET_BW;
}
static int is_atomic(int bench)
{
    return bench == B_FOP_LAT || bench == B_CAS_LAT;
}

static int rank, nranks;

static void usage(void)
{
    if (0 == rank) {
        fprintf(stderr,
                "usage: mpi_bench -b BENCH [options]\n"
                "  BENCH: lat, bw, bibw, mbw, rate; one-sided (2 ranks): put_lat, get_lat,\n"
                "         acc_lat, fop_lat, cas_lat, put_bw, get_bw\n"
                "  -s, --sizes LIST   sizes (1,8,4k,1m); default powers of two up to --max-size\n"
                "  --min-size N       smallest default size (default 1; 0 allowed)\n"
                "  --max-size N       largest default size (default 4m)\n"
                "  -W, --window N     messages in flight for bw, bibw, mbw, rate, put_bw, get_bw\n"
                "                     (default 64)\n"
                "  -i, --iters N      timed iterations up to 8 KiB (default lat and *_lat 10000,\n"
                "                     others 100); fewer above\n"
                "  -w, --warmup N     untimed iterations (default a tenth)\n"
                "  --sync MODE        one-sided: lock, flush (default), flush_local, lock_all,\n"
                "                     fence, pscw\n"
                "  --win KIND         one-sided: allocate (MPI_Win_allocate, default) or create\n"
                "  -T, --type T       acc_lat: char (default, as OSU), int or float\n"
                "  fop_lat and cas_lat ignore the sizes: one 64-bit word, reported as size 8\n");
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
 * @p sender). Returns the elapsed time of the timed iterations. @p tags: message
 * w of a window has tag 2 + w, sent in reverse order (the tags benchmark).
 */
static double run_window(size_t size, long iters, long warmup, int window, int peer, int sender,
                         char *sbuf, char *rbuf, MPI_Request *reqs, int tags)
{
    double t0 = 0;
    int ack = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        if (i == warmup) {
            t0 = bench_now();
        }
        if (sender) {
            for (int w = 0; w < window; ++w) {
                const int tag = tags ? 2 + window - 1 - w : 2;
                MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[w]);
            }
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; ++w) {
                MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, tags ? 2 + w : 2, MPI_COMM_WORLD,
                          &reqs[w]);
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

/* ------------------------------------------------------------------ one-sided */

/** State of a one-sided run: the window of the current size and the origin buffers. */
struct rma {
    int bench, sync, create;
    MPI_Datatype acc_type;
    int acc_type_size;
    MPI_Win win;
    char *win_mem; /* --win create: the memory of the window */
    char *sbuf, *rbuf;
    MPI_Group peer; /* pscw: the other rank */
};

/* fop_lat and cas_lat operands (OSU: MPI_LONG_LONG). Every compare-and-swap
 * finds the compare value (0) and swaps: the target word stays 0. */
static long long fop_operand = 1, cas_origin = 0, cas_compare = 0, rma_result = 0;

/** A window of @p bytes (at least 8) over MPI_COMM_WORLD, zeroed by its owner. */
static void rma_win_open(struct rma *r, size_t bytes)
{
    char *base = NULL;
    bytes = bytes < 8 ? 8 : bytes;
    if (r->create) {
        if (posix_memalign((void **)&r->win_mem, 4096, bytes)) {
            fprintf(stderr, "mpi_bench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(r->win_mem, 0, bytes);
        MPI_Win_create(r->win_mem, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r->win);
    } else {
        MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &r->win);
        memset(base, 0, bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void rma_win_close(struct rma *r)
{
    MPI_Win_free(&r->win);
    free(r->win_mem);
    r->win_mem = NULL;
}

/** One operation of the benchmark to @p target, at byte @p off of both sides. */
static void rma_op(const struct rma *r, int target, size_t size, size_t off)
{
    switch (r->bench) {
        case B_PUT_LAT:
        case B_PUT_BW:
            MPI_Put(r->sbuf + off, (int)size, MPI_CHAR, target, (MPI_Aint)off, (int)size, MPI_CHAR,
                    r->win);
            break;
        case B_GET_LAT:
        case B_GET_BW:
            MPI_Get(r->rbuf + off, (int)size, MPI_CHAR, target, (MPI_Aint)off, (int)size, MPI_CHAR,
                    r->win);
            break;
        case B_ACC_LAT: {
            const int count = (int)(size / (size_t)r->acc_type_size);
            MPI_Accumulate(r->sbuf, count, r->acc_type, target, 0, count, r->acc_type, MPI_SUM,
                           r->win);
            break;
        }
        case B_FOP_LAT:
            MPI_Fetch_and_op(&fop_operand, &rma_result, MPI_LONG_LONG, target, 0, MPI_SUM, r->win);
            break;
        case B_CAS_LAT:
            MPI_Compare_and_swap(&cas_origin, &cas_compare, &rma_result, MPI_LONG_LONG, target, 0,
                                 r->win);
            break;
        default:
            break;
    }
}

static void rma_ops(const struct rma *r, int target, size_t size, int nops)
{
    for (int j = 0; j < nops; ++j) {
        rma_op(r, target, size, (size_t)j * size);
    }
}

/**
 * The OSU loop of --sync for @p nops operations per iteration (1 for the
 * latencies, W for the bandwidths) on the open window. Latency runs (@p
 * pingpong) of fence and pscw send an operation back each iteration, as OSU's.
 * Returns the elapsed time of the timed iterations on rank 0, 0 on rank 1.
 */
static double run_rma(const struct rma *r, size_t size, long iters, long warmup, int nops,
                      int pingpong)
{
    const int lock_type = is_atomic(r->bench) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
    double t0 = 0, t1 = 0;
    switch (r->sync) {
        case S_LOCK:
        case S_LOCK_ALL:
            if (0 == rank) {
                for (long i = 0; i < iters + warmup; ++i) {
                    if (i == warmup) {
                        t0 = bench_now();
                    }
                    if (r->sync == S_LOCK) {
                        MPI_Win_lock(lock_type, 1, 0, r->win);
                    } else {
                        MPI_Win_lock_all(0, r->win);
                    }
                    rma_ops(r, 1, size, nops);
                    if (r->sync == S_LOCK) {
                        MPI_Win_unlock(1, r->win);
                    } else {
                        MPI_Win_unlock_all(r->win);
                    }
                }
                t1 = bench_now();
            }
            break;
        case S_FLUSH:
        case S_FLUSH_LOCAL:
            if (0 == rank) {
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, r->win);
                for (long i = 0; i < iters + warmup; ++i) {
                    if (i == warmup) {
                        t0 = bench_now();
                    }
                    rma_ops(r, 1, size, nops);
                    if (r->sync == S_FLUSH) {
                        MPI_Win_flush(1, r->win);
                    } else {
                        MPI_Win_flush_local(1, r->win);
                    }
                }
                t1 = bench_now();
                MPI_Win_unlock(1, r->win);
            }
            break;
        case S_FENCE:
            for (long i = 0; i < iters + warmup; ++i) {
                if (i == warmup) {
                    t0 = bench_now();
                }
                MPI_Win_fence(0, r->win);
                if (0 == rank) {
                    rma_ops(r, 1, size, nops);
                    MPI_Win_fence(0, r->win);
                    if (pingpong) {
                        MPI_Win_fence(0, r->win);
                    }
                } else {
                    if (pingpong) {
                        MPI_Win_fence(0, r->win);
                        rma_ops(r, 0, size, nops);
                    }
                    MPI_Win_fence(0, r->win);
                }
            }
            t1 = bench_now();
            break;
        case S_PSCW:
            for (long i = 0; i < iters + warmup; ++i) {
                if (0 == rank) {
                    MPI_Win_start(r->peer, 0, r->win);
                    if (i == warmup) {
                        t0 = bench_now(); /* after the first timed start, as OSU */
                    }
                    rma_ops(r, 1, size, nops);
                    MPI_Win_complete(r->win);
                    if (pingpong) {
                        MPI_Win_post(r->peer, 0, r->win);
                        MPI_Win_wait(r->win);
                    }
                } else {
                    MPI_Win_post(r->peer, 0, r->win);
                    MPI_Win_wait(r->win);
                    if (pingpong) {
                        MPI_Win_start(r->peer, 0, r->win);
                        rma_ops(r, 0, size, nops);
                        MPI_Win_complete(r->win);
                    }
                }
            }
            t1 = bench_now();
            break;
        default:
            break;
    }
    return 0 == rank ? t1 - t0 : 0;
}

/** One size of a one-sided benchmark: us per operation, or MB/s. */
static double run_rma_size(struct rma *r, size_t size, long iters, long warmup, int window)
{
    const int bw = is_rma_bw(r->bench);
    const int nops = bw ? window : 1;
    rma_win_open(r, bw ? size * (size_t)window : size);
    const double dt = run_rma(r, size, iters, warmup, nops, !bw);
    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_close(r);
    if (0 != rank || dt <= 0) {
        return 0;
    }
    if (bw) {
        return (double)size * nops * (double)iters / dt / 1e6;
    }
    /* fence and pscw: two operations (one each way) per iteration, as OSU. */
    const double per = (r->sync == S_FENCE || r->sync == S_PSCW) ? 2.0 : 1.0;
    return dt * 1e6 / ((double)iters * per);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int bench = -1, window = 64, sync = S_FLUSH, create = 0, bad_opt = 0;
    MPI_Datatype acc_type = MPI_CHAR;
    long iters = 0, warmup = -1;
    size_t min_size = 1, max_size = 4u << 20;
    size_t sizes[64];
    int nsizes = 0;
    for (int a = 1; a < argc; ++a) {
        const char *opt = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        if ((0 == strcmp(opt, "-b") || 0 == strcmp(opt, "--bench")) && val) {
            for (int b = 0; b < B_COUNT; ++b) {
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
        } else if (0 == strcmp(opt, "--sync") && val) {
            sync = -1;
            for (int m = 0; m < S_COUNT; ++m) {
                if (0 == strcmp(val, sync_names[m])) {
                    sync = m;
                }
            }
            bad_opt |= sync < 0;
            ++a;
        } else if (0 == strcmp(opt, "--win") && val) {
            create = 0 == strcmp(val, "create");
            bad_opt |= !create && 0 != strcmp(val, "allocate");
            ++a;
        } else if ((0 == strcmp(opt, "-T") || 0 == strcmp(opt, "--type")) && val) {
            acc_type = 0 == strcmp(val, "int")     ? MPI_INT
                       : 0 == strcmp(val, "float") ? MPI_FLOAT
                                                   : MPI_CHAR;
            bad_opt |= acc_type == MPI_CHAR && 0 != strcmp(val, "char");
            ++a;
        } else {
            usage();
            MPI_Finalize();
            return 2;
        }
    }
    int bad = bad_opt || bench < 0 || window < 1 || window > 4096 || min_size == (size_t)-1 ||
              max_size == (size_t)-1 || max_size > (1u << 30);
    for (int k = 0; k < nsizes; ++k) {
        bad |= sizes[k] == (size_t)-1 || sizes[k] > (1u << 30);
    }
    if ((bench == B_LAT || bench == B_BIBW) && nranks < 2) {
        bad = 1;
    }
    if ((bench == B_MBW || bench == B_RATE || bench == B_TAGS || bench == B_BW) &&
        (nranks < 2 || nranks % 2)) {
        bad = 1;
    }
    if (bench >= 0 && is_rma(bench) && nranks != 2) {
        bad = 1;
    }
    if (bad) {
        usage();
        if (0 == rank) {
            fprintf(stderr,
                    "mpi_bench: bad arguments, or a rank count the benchmark cannot use "
                    "(lat/bibw: >= 2; bw/mbw/rate: even; one-sided: 2)\n");
        }
        MPI_Finalize();
        return 2;
    }
    if (is_atomic(bench)) {
        sizes[0] = 8; /* one 64-bit word, whatever the sizes asked */
        nsizes = 1;
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
    if (is_rma_bw(bench)) {
        /* W operations to W consecutive slots: origin buffers and window of W * size. */
        if (biggest * (size_t)window > (1u << 30)) {
            if (0 == rank) {
                fprintf(stderr, "mpi_bench: %s: window * largest size must be at most 1 GiB\n",
                        bench_names[bench]);
            }
            MPI_Finalize();
            return 2;
        }
        biggest *= (size_t)window;
    }

    /* One page-aligned buffer each way, touched before the first run. The
     * one-sided benchmarks share one (puts read it, gets write it, nothing
     * checks the data): first touch is slow on VMs, and *_bw need W * size. */
    char *sbuf = NULL, *rbuf = NULL;
    if (posix_memalign((void **)&sbuf, 4096, biggest) ||
        (!is_rma(bench) && posix_memalign((void **)&rbuf, 4096, biggest))) {
        fprintf(stderr, "mpi_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a', biggest);
    if (is_rma(bench)) {
        rbuf = sbuf;
    } else {
        memset(rbuf, 'b', biggest);
    }
    MPI_Request *reqs = malloc(2 * (size_t)window * sizeof(MPI_Request));

    const int lat_kind = bench == B_LAT || (is_rma(bench) && !is_rma_bw(bench));
    struct rma rma = {.bench = bench,
                      .sync = sync,
                      .create = create,
                      .acc_type = acc_type,
                      .acc_type_size = 1,
                      .win = MPI_WIN_NULL,
                      .sbuf = sbuf,
                      .rbuf = rbuf,
                      .peer = MPI_GROUP_NULL};
    if (is_rma(bench)) {
        MPI_Type_size(acc_type, &rma.acc_type_size);
        MPI_Group world;
        const int other = 1 - rank;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &other, &rma.peer);
        MPI_Group_free(&world);
    }
    if (0 == rank) {
        if (is_rma(bench)) {
            char tname[MPI_MAX_OBJECT_NAME] = "";
            int tlen = 0;
            MPI_Type_get_name(acc_type, tname, &tlen);
            printf("# mpi_bench %s: %d ranks, sync %s, win %s", bench_names[bench], nranks,
                   sync_names[sync], create ? "create" : "allocate");
            if (is_rma_bw(bench)) {
                printf(", window %d", window);
            }
            if (bench == B_ACC_LAT) {
                printf(", MPI_SUM on %s", tname);
            }
            printf("; unit %s\n", is_rma_bw(bench) ? "MB/s" : "us per operation");
        } else {
            printf("# mpi_bench %s: %d ranks, window %d; unit %s\n", bench_names[bench], nranks,
                   window,
                   bench == B_LAT                       ? "us (one-way)"
                   : bench == B_RATE || bench == B_TAGS ? "messages/s"
                                                        : "MB/s");
        }
    }
    const long base = iters > 0 ? iters : (lat_kind ? 10000 : 100);
    for (int k = 0; k < nsizes; ++k) {
        const size_t size = sizes[k];
        const long n = bench_iters_for(size, base, lat_kind ? 100 : 10);
        const long wu = warmup >= 0 ? warmup : (n / 10 > 1 ? n / 10 : 2);
        double value = 0;
        if (bench == B_ACC_LAT && size < (size_t)rma.acc_type_size) {
            continue; /* no whole element (OSU skips these sizes too) */
        }
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
            case B_RATE:
            case B_TAGS: {
                /* bw: the pair (0, 1) only; mbw and rate: every pair (i, i + n/2). */
                const int half = nranks / 2;
                double dt = 0;
                const int in_pair = bench == B_BW ? rank < 2 : 1;
                if (in_pair) {
                    const int peer =
                        bench == B_BW ? 1 - rank : (rank < half ? rank + half : rank - half);
                    const int sender = bench == B_BW ? rank == 0 : rank < half;
                    dt = run_window(size, n, wu, window, peer, sender, sbuf, rbuf, reqs,
                                    bench == B_TAGS);
                }
                /* Rate of each sender, summed (osu_mbw_mr): every pair runs at once. */
                double mine = 0, total = 0;
                const int is_sender = bench == B_BW ? rank == 0 : rank < half;
                if (is_sender && dt > 0) {
                    mine = (double)window * (double)n / dt;
                }
                MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                value = bench == B_RATE || bench == B_TAGS ? total : total * (double)size / 1e6;
                break;
            }
            default:
                value = run_rma_size(&rma, size, n, wu, window);
                break;
        }
        if (0 == rank) {
            printf("%s %zu %.6g\n", bench_names[bench], size, value);
            fflush(stdout);
        }
    }
    if (MPI_GROUP_NULL != rma.peer) {
        MPI_Group_free(&rma.peer);
    }
    free(reqs);
    if (rbuf != sbuf) {
        free(rbuf);
    }
    free(sbuf);
    MPI_Finalize();
    return 0;
}
