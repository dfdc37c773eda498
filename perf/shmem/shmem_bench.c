/*
 * shmem_bench.c: OSU-style OpenSHMEM benchmarks, one measurement per size and
 * launch; perf/shmem/compare.sh repeats and interleaves launches of weft's
 * OpenSHMEM and Open MPI's oshmem. OpenSHMEM 1.4 API, and the 1.5 team forms
 * of three collectives where the library has them (WITH_TEAMS), so that the
 * same source builds with either oshcc.
 *
 *   oshrun -np 2 ./shmem_bench [-b LIST] [-s LIST | --min N --max N] [-i N] [-w N] [-W N]
 *
 * One line per size on PE 0's stdout: "BENCH SIZE VALUE UNIT" (lines starting
 * with '#' are comments). Point-to-point benchmarks run between PE 0 and PE 1
 * (the other PEs wait in shmem_barrier_all); collectives use every PE.
 *
 *   put_lat       shmem_putmem then shmem_quiet, PE 0 to PE 1 (osu_oshm_put):
 *                 us per put; SIZE in bytes (default 8..1m)
 *   get_lat       shmem_getmem from PE 1 (osu_oshm_get): us per get
 *   put_pingpong  PE 0 puts SIZE bytes, shmem_fence, puts a flag; PE 1 waits on
 *                 the flag and answers the same way: one-way us (round trip / 2)
 *   fadd_lat      shmem_long_atomic_fetch_add to PE 1 (osu_oshm_atomics): us; SIZE 8
 *   cswap_lat     shmem_long_atomic_compare_swap to PE 1 (always succeeds): us; SIZE 8
 *   put_bw        a window of W shmem_putmem_nbi then shmem_quiet (osu_oshm_put_bw):
 *                 MB/s (1e6 B/s)
 *   get_bw        a window of W shmem_getmem_nbi then shmem_quiet: MB/s
 *   put_rate      a window of W shmem_putmem_nbi of SIZE bytes (default 8) then
 *                 shmem_quiet: puts per second
 *   barrier       shmem_barrier_all, every PE: us per barrier (SIZE printed as 0)
 *   bcast         shmem_broadcast64 from PE 0, every PE, pSync (1.4 API): us;
 *                 SIZE in bytes (default 8..1m, rounded up to 8)
 *   reduce_long   shmem_long_sum_to_all over every PE, pWrk and pSync: us;
 *                 SIZE in elements (default 1..65536)
 *   reduce_double shmem_double_sum_to_all, the same
 *   bcast_team    shmem_broadcastmem on SHMEM_TEAM_WORLD from PE 0 (1.5; a
 *                 library without teams, OpenSHMEM 1.4, runs shmem_broadcast64):
 *                 us; SIZE in bytes
 *   reduce_team   shmem_long_sum_reduce on SHMEM_TEAM_WORLD (1.4: the
 *                 shmem_long_sum_to_all of reduce_long): us; SIZE in elements
 *   fcollect_team shmem_fcollectmem on SHMEM_TEAM_WORLD (1.4: shmem_fcollect64):
 *                 us; SIZE in bytes per PE
 * Collective latencies are OSU's: only the collective call is timed, a
 * shmem_barrier_all (untimed) separates iterations, and the value is the mean
 * over the PEs of each PE's mean latency.
 *
 * Every size has untimed warm-up iterations; PEs synchronise with
 * shmem_barrier_all before and after each size. Iterations shrink with size
 * so that each size moves a bounded number of bytes. Every benchmark checks
 * what it moved (data, atomic results, reduction sums; bcast and reduce_* part
 * of it after every call, with values that change each iteration) and stops
 * the job with a message on a wrong value.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, strdup, strtok_r under -std=c11 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

/* The team collectives of OpenSHMEM 1.5, where the library has them. */
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
#define WITH_TEAMS 1
#else
#define WITH_TEAMS 0
#endif

enum bench_id {
    B_PUT_LAT,
    B_GET_LAT,
    B_PUT_PINGPONG,
    B_FADD_LAT,
    B_CSWAP_LAT,
    B_PUT_BW,
    B_GET_BW,
    B_PUT_RATE,
    B_BARRIER,
    B_BCAST,
    B_REDUCE_LONG,
    B_REDUCE_DOUBLE,
    B_BCAST_TEAM,
    B_REDUCE_TEAM,
    B_FCOLLECT_TEAM,
    B_COUNT
};

struct bench_info {
    const char *name;
    const char *unit;
    size_t def_min, def_max; /* default sizes (powers of two); 0, 0: no size */
    long base_iters;         /* timed iterations up to 8 KiB (or 1 Ki elements) */
    long floor_iters;        /* at least this many at the largest sizes */
    const char *what;
};

static const struct bench_info benches[B_COUNT] = {
    {"put_lat", "us", 8, 1u << 20, 10000, 100, "shmem_putmem + shmem_quiet, PE 0 -> PE 1"},
    {"get_lat", "us", 8, 1u << 20, 10000, 100, "shmem_getmem, PE 0 <- PE 1"},
    {"put_pingpong", "us", 8, 1u << 20, 10000, 100,
     "put + fence + flag, PE 1 waits and answers; one-way = round trip / 2"},
    {"fadd_lat", "us", 8, 8, 10000, 100, "shmem_long_atomic_fetch_add to PE 1"},
    {"cswap_lat", "us", 8, 8, 10000, 100, "shmem_long_atomic_compare_swap to PE 1"},
    {"put_bw", "MB/s", 8, 1u << 20, 200, 10, "window of shmem_putmem_nbi + shmem_quiet"},
    {"get_bw", "MB/s", 8, 1u << 20, 200, 10, "window of shmem_getmem_nbi + shmem_quiet"},
    {"put_rate", "ops/s", 8, 8, 1000, 10, "window of shmem_putmem_nbi + shmem_quiet"},
    {"barrier", "us", 0, 0, 10000, 100, "shmem_barrier_all, all PEs"},
    {"bcast", "us", 8, 1u << 20, 1000, 20, "shmem_broadcast64 from PE 0, all PEs"},
    {"reduce_long", "us", 1, 65536, 1000, 20, "shmem_long_sum_to_all, all PEs (size = elements)"},
    {"reduce_double", "us", 1, 65536, 1000, 20,
     "shmem_double_sum_to_all, all PEs (size = elements)"},
#if WITH_TEAMS
    {"bcast_team", "us", 8, 1u << 20, 1000, 20, "shmem_broadcastmem on SHMEM_TEAM_WORLD from PE 0"},
    {"reduce_team", "us", 1, 65536, 1000, 20,
     "shmem_long_sum_reduce on SHMEM_TEAM_WORLD (size = elements)"},
    {"fcollect_team", "us", 8, 1u << 17, 1000, 20,
     "shmem_fcollectmem on SHMEM_TEAM_WORLD (size = bytes per PE)"},
#else
    {"bcast_team", "us", 8, 1u << 20, 1000, 20,
     "shmem_broadcast64 from PE 0 (no teams: OpenSHMEM 1.4)"},
    {"reduce_team", "us", 1, 65536, 1000, 20,
     "shmem_long_sum_to_all (no teams: OpenSHMEM 1.4; size = elements)"},
    {"fcollect_team", "us", 8, 1u << 17, 1000, 20,
     "shmem_fcollect64 (no teams: OpenSHMEM 1.4; size = bytes per PE)"},
#endif
};

static int me, npes;

static void usage(void)
{
    if (0 != me) {
        return;
    }
    fprintf(stderr,
            "usage: shmem_bench [options]\n"
            "  -b, --bench LIST   comma-separated benchmarks, or all (default all):\n"
            "                     ");
    for (int b = 0; b < B_COUNT; ++b) {
        fprintf(stderr, "%s%s", benches[b].name, b + 1 < B_COUNT ? "," : "\n");
    }
    fprintf(stderr,
            "  -s, --sizes LIST   sizes (8,4k,1m; elements for reduce_*); default powers\n"
            "                     of two from --min to --max\n"
            "  --min N, --max N   size range (default per benchmark: 8..1m bytes, reduce_*\n"
            "                     1..65536 elements; fadd_lat, cswap_lat, put_rate 8)\n"
            "  -i, --iters N      timed iterations up to 8 KiB (default: latency 10000,\n"
            "                     collectives 1000, bw 200, rate 1000); fewer above\n"
            "  -w, --warmup N     untimed iterations (default a tenth, at least 2)\n"
            "  -W, --window N     operations per quiet for put_bw, get_bw, put_rate (default "
            "64)\n"
            "Output: one line \"BENCH SIZE VALUE UNIT\" per size on PE 0.\n");
}

static void fail(const char *bench, size_t size, const char *msg, long detail)
{
    fprintf(stderr, "shmem_bench: %s size %zu: PE %d: %s (%ld)\n", bench, size, me, msg, detail);
    fflush(stderr);
    shmem_global_exit(1);
}

static unsigned char pattern(size_t i, size_t size)
{
    return (unsigned char)(i * 31 + size + 7);
}

static void fill(unsigned char *buf, size_t size)
{
    for (size_t i = 0; i < size; ++i) {
        buf[i] = pattern(i, size);
    }
}

static void check(const char *bench, const unsigned char *buf, size_t size)
{
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != pattern(i, size)) {
            fail(bench, size, "wrong data at byte", (long)i);
        }
    }
}

/* ------------------------------------------------------------------ point to point */

/* Symmetric objects: the buffers (shmem_malloc), a flag and a counter. */
static unsigned char *sbuf, *rbuf;
static long *flag, *counter;
static double *times; /* npes doubles: each PE's result, gathered on PE 0 */

static double run_put_lat(size_t size, long iters, long warmup)
{
    double dt = 0;
    if (0 == me) {
        fill(sbuf, size);
    }
    memset(rbuf, 0, size);
    shmem_barrier_all();
    if (0 == me) {
        double t0 = 0;
        for (long i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            shmem_putmem(rbuf, sbuf, size, 1);
            shmem_quiet();
        }
        dt = bench_now() - t0;
    }
    shmem_barrier_all();
    if (1 == me) {
        check("put_lat", rbuf, size);
    }
    return dt * 1e6 / (double)iters;
}

static double run_get_lat(size_t size, long iters, long warmup)
{
    double dt = 0;
    if (1 == me) {
        fill(sbuf, size);
    }
    memset(rbuf, 0, size);
    shmem_barrier_all();
    if (0 == me) {
        double t0 = 0;
        for (long i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            shmem_getmem(rbuf, sbuf, size, 1);
        }
        dt = bench_now() - t0;
        check("get_lat", rbuf, size);
    }
    shmem_barrier_all();
    return dt * 1e6 / (double)iters;
}

static double run_put_pingpong(size_t size, long iters, long warmup)
{
    double dt = 0;
    fill(sbuf, size);
    memset(rbuf, 0, size);
    *flag = 0;
    shmem_barrier_all();
    if (me < 2) {
        const int peer = 1 - me;
        double t0 = 0;
        for (long i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            if (0 == me) {
                shmem_putmem(rbuf, sbuf, size, peer);
                shmem_fence();
                shmem_long_p(flag, i + 1, peer);
                shmem_long_wait_until(flag, SHMEM_CMP_GE, i + 1);
            } else {
                shmem_long_wait_until(flag, SHMEM_CMP_GE, i + 1);
                shmem_putmem(rbuf, sbuf, size, peer);
                shmem_fence();
                shmem_long_p(flag, i + 1, peer);
            }
        }
        dt = bench_now() - t0;
    }
    shmem_barrier_all();
    if (me < 2) {
        check("put_pingpong", rbuf, size);
    }
    return dt * 1e6 / (2.0 * (double)iters);
}

static double run_amo_lat(int cswap, long iters, long warmup)
{
    const char *name = cswap ? "cswap_lat" : "fadd_lat";
    double dt = 0;
    *counter = 0;
    shmem_barrier_all();
    if (0 == me) {
        double t0 = 0;
        for (long i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            long old = cswap ? shmem_long_atomic_compare_swap(counter, i, i + 1, 1)
                             : shmem_long_atomic_fetch_add(counter, 1, 1);
            if (old != i) {
                fail(name, 8, "atomic returned a wrong value at iteration", i);
            }
        }
        dt = bench_now() - t0;
    }
    shmem_barrier_all();
    if (1 == me && *counter != iters + warmup) {
        fail(name, 8, "wrong final counter", *counter);
    }
    return dt * 1e6 / (double)iters;
}

/** put_bw, get_bw, put_rate: returns the elapsed time of the timed iterations on PE 0. */
static double run_window(const char *name, int get, size_t size, long iters, long warmup,
                         int window)
{
    double dt = 0;
    if (me == (get ? 1 : 0)) {
        fill(sbuf, size);
    }
    memset(rbuf, 0, size);
    shmem_barrier_all();
    if (0 == me) {
        double t0 = 0;
        for (long i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                t0 = bench_now();
            }
            for (int w = 0; w < window; ++w) {
                if (get) {
                    shmem_getmem_nbi(rbuf, sbuf, size, 1);
                } else {
                    shmem_putmem_nbi(rbuf, sbuf, size, 1);
                }
            }
            shmem_quiet();
        }
        dt = bench_now() - t0;
        if (get) {
            check(name, rbuf, size);
        }
    }
    shmem_barrier_all();
    if (!get && 1 == me) {
        check(name, rbuf, size);
    }
    return dt;
}

/* ------------------------------------------------------------------ collectives */

/** Mean over the PEs of @p mine, on PE 0 (0 elsewhere). */
static double mean_over_pes(double mine)
{
    shmem_double_p(&times[me], mine, 0);
    shmem_barrier_all();
    double sum = 0;
    if (0 == me) {
        for (int p = 0; p < npes; ++p) {
            sum += times[p];
        }
    }
    shmem_barrier_all();
    return sum / npes;
}

static double run_barrier(long iters, long warmup)
{
    shmem_barrier_all();
    double t0 = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        if (i == warmup) {
            t0 = bench_now();
        }
        shmem_barrier_all();
    }
    const double mine = (bench_now() - t0) * 1e6 / (double)iters;
    return mean_over_pes(mine);
}

#define SYNC_SIZE                                                            \
    (SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE \
                                                    : SHMEM_BCAST_SYNC_SIZE)
static long *psync[2];
static void *pwrk[2];

static double run_bcast(int team, size_t size, long iters, long warmup)
{
    const size_t nelems = (size + 7) / 8;
    const size_t bytes = nelems * 8;
    long *src = (long *)sbuf, *dst = (long *)rbuf;
    if (0 == me) {
        fill(sbuf, bytes);
    }
    memset(rbuf, 0, bytes);
    shmem_barrier_all();
    double acc = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        /* The first and the last word change every time: stale data shows. */
        if (0 == me) {
            src[0] = src[nelems - 1] = i + 1;
        }
        const double t0 = bench_now();
#if WITH_TEAMS
        if (team) {
            shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, bytes, 0);
        } else
#endif
        {
            (void)team;
            shmem_broadcast64(dst, src, nelems, 0, 0, 0, npes, psync[i & 1]);
        }
        if (i >= warmup) {
            acc += bench_now() - t0;
        }
        if (0 != me && (dst[0] != i + 1 || dst[nelems - 1] != i + 1)) {
            fail("bcast", size, "stale or missing data after the call at iteration", i);
        }
        shmem_barrier_all();
    }
    if (0 != me) {
        for (size_t k = 8; k + 8 < bytes; ++k) {
            if (rbuf[k] != pattern(k, bytes)) {
                fail("bcast", size, "wrong data at byte", (long)k);
            }
        }
    }
    return mean_over_pes(acc * 1e6 / (double)iters);
}

static double run_reduce(int dbl, int team, size_t count, long iters, long warmup)
{
    const char *name = team ? "reduce_team" : dbl ? "reduce_double" : "reduce_long";
    long *lsrc = (long *)sbuf, *ldst = (long *)rbuf;
    double *dsrc = (double *)sbuf, *ddst = (double *)rbuf;
    const size_t last = count - 1;
    /* Element j of PE p is p + j (+ the iteration for the first and the last element, so
       that stale results show): the sum over the PEs is npes (npes - 1) / 2 + npes j. */
    const long base = (long)npes * (npes - 1) / 2;
    for (size_t j = 0; j < count; ++j) {
        if (dbl) {
            dsrc[j] = (double)(me + (long)j);
            ddst[j] = -1;
        } else {
            lsrc[j] = me + (long)j;
            ldst[j] = -1;
        }
    }
    shmem_barrier_all();
    double acc = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        if (dbl) {
            dsrc[0] = (double)(me + i);
            dsrc[last] = (double)(me + (long)last + i);
        } else {
            lsrc[0] = me + i;
            lsrc[last] = me + (long)last + i;
        }
        const double t0 = bench_now();
        if (dbl) {
            shmem_double_sum_to_all(ddst, dsrc, (int)count, 0, 0, npes, (double *)pwrk[i & 1],
                                    psync[i & 1]);
        } else {
#if WITH_TEAMS
            if (team) {
                shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, count);
            } else
#endif
            {
                (void)team;
                shmem_long_sum_to_all(ldst, lsrc, (int)count, 0, 0, npes, (long *)pwrk[i & 1],
                                      psync[i & 1]);
            }
        }
        if (i >= warmup) {
            acc += bench_now() - t0;
        }
        const long want0 = base + (long)npes * i, wantl = base + (long)npes * ((long)last + i);
        if (dbl ? (ddst[0] != (double)want0 || ddst[last] != (double)wantl)
                : (ldst[0] != want0 || ldst[last] != wantl)) {
            fail(name, count, "wrong or stale sum after the call at iteration", i);
        }
        shmem_barrier_all();
    }
    for (size_t j = 1; j < last; ++j) {
        const long want = base + (long)npes * (long)j;
        if (dbl ? ddst[j] != (double)want : ldst[j] != want) {
            fail(name, count, "wrong sum at element", (long)j);
        }
    }
    return mean_over_pes(acc * 1e6 / (double)iters);
}

/* Every PE's block of SIZE bytes (rounded up to 8) to every PE. */
static double run_fcollect(size_t size, long iters, long warmup)
{
    const size_t nelems = (size + 7) / 8;
    const size_t bytes = nelems * 8;
    long *src = (long *)sbuf, *dst = (long *)rbuf;
    for (size_t j = 0; j < nelems; ++j) {
        src[j] = (long)me << 32 | (long)j;
    }
    shmem_barrier_all();
    double acc = 0;
    for (long i = 0; i < iters + warmup; ++i) {
        src[0] = (long)me << 32 | i; /* changes every time: stale data shows */
        const double t0 = bench_now();
#if WITH_TEAMS
        shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, bytes);
#else
        shmem_fcollect64(dst, src, nelems, 0, 0, npes, psync[i & 1]);
#endif
        if (i >= warmup) {
            acc += bench_now() - t0;
        }
        for (int p = 0; p < npes; ++p) {
            if (dst[(size_t)p * nelems] != ((long)p << 32 | i)) {
                fail("fcollect_team", size, "stale or missing block after the call at iteration",
                     i);
            }
        }
        shmem_barrier_all();
    }
    for (int p = 0; p < npes; ++p) {
        for (size_t j = 1; j < nelems; ++j) {
            if (dst[(size_t)p * nelems + j] != ((long)p << 32 | (long)j)) {
                fail("fcollect_team", size, "wrong data at element", (long)j);
            }
        }
    }
    return mean_over_pes(acc * 1e6 / (double)iters);
}

/* ------------------------------------------------------------------ driver */

int main(int argc, char **argv)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    int selected[B_COUNT] = {0}, any = 0, window = 64;
    long iters = 0, warmup = -1;
    size_t min_size = 0, max_size = 0; /* 0: the benchmark's default */
    size_t list[64];
    int nlist = 0, bad = 0;
    for (int a = 1; a < argc && !bad; ++a) {
        const char *opt = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (0 == strcmp(opt, "-h") || 0 == strcmp(opt, "--help")) {
            usage();
            shmem_finalize();
            return 0;
        }
        if (!val) {
            bad = 1;
            break;
        }
        ++a;
        if (0 == strcmp(opt, "-b") || 0 == strcmp(opt, "--bench")) {
            char *l = strdup(val), *save = NULL;
            for (char *tok = strtok_r(l, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int b = 0; b < B_COUNT; ++b) {
                    if (0 == strcmp(tok, benches[b].name) || 0 == strcmp(tok, "all")) {
                        selected[b] = found = any = 1;
                    }
                }
                if (!found) {
                    if (0 == me) {
                        fprintf(stderr, "shmem_bench: unknown benchmark '%s'\n", tok);
                    }
                    bad = 1;
                }
            }
            free(l);
        } else if (0 == strcmp(opt, "-s") || 0 == strcmp(opt, "--sizes")) {
            char *l = strdup(val), *save = NULL;
            for (char *tok = strtok_r(l, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (nlist == 64) {
                    bad = 1;
                    break;
                }
                list[nlist++] = bench_parse_size(tok);
            }
            free(l);
        } else if (0 == strcmp(opt, "--min")) {
            min_size = bench_parse_size(val);
        } else if (0 == strcmp(opt, "--max")) {
            max_size = bench_parse_size(val);
        } else if (0 == strcmp(opt, "-i") || 0 == strcmp(opt, "--iters")) {
            iters = atol(val);
            bad |= iters < 1;
        } else if (0 == strcmp(opt, "-w") || 0 == strcmp(opt, "--warmup")) {
            warmup = atol(val);
            bad |= warmup < 0;
        } else if (0 == strcmp(opt, "-W") || 0 == strcmp(opt, "--window")) {
            window = atoi(val);
            bad |= window < 1 || window > 65536;
        } else {
            bad = 1;
        }
    }
    bad |= min_size == (size_t)-1 || max_size == (size_t)-1 || max_size > (1u << 28) ||
           (max_size && min_size > max_size);
    for (int k = 0; k < nlist; ++k) {
        bad |= list[k] == (size_t)-1 || list[k] > (1u << 28);
    }
    if (bad || npes < 2) {
        usage();
        if (0 == me) {
            fprintf(stderr, "shmem_bench: %s\n",
                    npes < 2 ? "needs at least 2 PEs" : "bad arguments");
        }
        shmem_finalize();
        return 2;
    }
    if (!any) {
        for (int b = 0; b < B_COUNT; ++b) {
            selected[b] = 1;
        }
    }

    flag = shmem_malloc(sizeof(long));
    counter = shmem_malloc(sizeof(long));
    times = shmem_malloc((size_t)npes * sizeof(double));
    for (int k = 0; k < 2; ++k) {
        psync[k] = shmem_malloc(SYNC_SIZE * sizeof(long));
        for (int j = 0; j < SYNC_SIZE; ++j) {
            psync[k][j] = SHMEM_SYNC_VALUE;
        }
    }
    if (!flag || !counter || !times || !psync[0] || !psync[1]) {
        fail("setup", 0, "shmem_malloc failed", 0);
    }
    shmem_barrier_all();
    if (0 == me) {
        printf("# shmem_bench: %d PEs, window %d\n", npes, window);
    }

    for (int b = 0; b < B_COUNT; ++b) {
        if (!selected[b]) {
            continue;
        }
        const struct bench_info *bi = &benches[b];
        const int elems = b == B_REDUCE_LONG || b == B_REDUCE_DOUBLE || b == B_REDUCE_TEAM;
        size_t sizes[64];
        int nsizes = 0;
        if (b == B_BARRIER) {
            sizes[nsizes++] = 0;
        } else if (b == B_FADD_LAT || b == B_CSWAP_LAT) {
            sizes[nsizes++] = 8;
        } else if (nlist > 0) {
            for (int k = 0; k < nlist; ++k) {
                sizes[nsizes++] = list[k] > 0 ? list[k] : 1;
            }
        } else {
            size_t lo = min_size ? min_size : bi->def_min;
            size_t hi = max_size ? max_size : bi->def_max;
            if (b == B_PUT_RATE && !max_size) {
                hi = lo > 8 ? lo : 8; /* a single size unless --max says otherwise */
            }
            for (size_t s = lo; s <= hi && nsizes < 64; s *= 2) {
                sizes[nsizes++] = s;
            }
        }
        size_t biggest = 8;
        for (int k = 0; k < nsizes; ++k) {
            size_t bytes = elems ? sizes[k] * 8 : (sizes[k] + 7) / 8 * 8;
            if (b == B_FCOLLECT_TEAM) {
                bytes *= (size_t)npes; /* dest holds every PE's block */
            }
            biggest = bytes > biggest ? bytes : biggest;
        }
        /* Same sizes on every PE: shmem_malloc is collective. */
        sbuf = shmem_malloc(biggest);
        rbuf = shmem_malloc(biggest);
        size_t maxcount = elems ? biggest / 8 : 1;
        size_t wrk = maxcount / 2 + 1;
        if (wrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE) {
            wrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
        }
        pwrk[0] = pwrk[1] = NULL;
        if (elems) {
            pwrk[0] = shmem_malloc(wrk * 8);
            pwrk[1] = shmem_malloc(wrk * 8);
        }
        if (!sbuf || !rbuf || (elems && (!pwrk[0] || !pwrk[1]))) {
            fail(bi->name, biggest, "shmem_malloc failed for bytes", (long)biggest);
        }
        memset(sbuf, 'a', biggest);
        memset(rbuf, 'b', biggest);
        shmem_barrier_all();
        if (0 == me) {
            printf("# %s: %s; %s\n", bi->name, bi->what, bi->unit);
            fflush(stdout);
        }
        const long base = iters > 0 ? iters : bi->base_iters;
        for (int k = 0; k < nsizes; ++k) {
            const size_t size = sizes[k];
            const size_t bytes = elems ? size * 8 : size;
            long n = bench_iters_for(bytes, base, bi->floor_iters < base ? bi->floor_iters : base);
            if (b == B_PUT_BW || b == B_GET_BW || b == B_PUT_RATE) {
                /* window operations per iteration: bound the bytes of the whole window */
                n = bench_iters_for(bytes * (size_t)window / 64, base,
                                    bi->floor_iters < base ? bi->floor_iters : base);
            }
            const long wu = warmup >= 0 ? warmup : (n / 10 > 2 ? n / 10 : 2);
            double value = 0;
            shmem_barrier_all();
            switch (b) {
                case B_PUT_LAT:
                    value = run_put_lat(size, n, wu);
                    break;
                case B_GET_LAT:
                    value = run_get_lat(size, n, wu);
                    break;
                case B_PUT_PINGPONG:
                    value = run_put_pingpong(size, n, wu);
                    break;
                case B_FADD_LAT:
                case B_CSWAP_LAT:
                    value = run_amo_lat(b == B_CSWAP_LAT, n, wu);
                    break;
                case B_PUT_BW:
                case B_GET_BW:
                case B_PUT_RATE: {
                    const double dt = run_window(bi->name, b == B_GET_BW, size, n, wu, window);
                    const double ops = (double)window * (double)n;
                    value = b == B_PUT_RATE ? ops / dt : ops * (double)size / dt / 1e6;
                    break;
                }
                case B_BARRIER:
                    value = run_barrier(n, wu);
                    break;
                case B_BCAST:
                case B_BCAST_TEAM:
                    value = run_bcast(b == B_BCAST_TEAM, size, n, wu);
                    break;
                case B_REDUCE_LONG:
                case B_REDUCE_DOUBLE:
                case B_REDUCE_TEAM:
                    value = run_reduce(b == B_REDUCE_DOUBLE, b == B_REDUCE_TEAM, size, n, wu);
                    break;
                case B_FCOLLECT_TEAM:
                    value = run_fcollect(size, n, wu);
                    break;
            }
            if (0 == me) {
                printf("%s %zu %.6g %s\n", bi->name, size, value, bi->unit);
                fflush(stdout);
            }
            shmem_barrier_all();
        }
        if (elems) {
            shmem_free(pwrk[1]);
            shmem_free(pwrk[0]);
        }
        shmem_free(rbuf);
        shmem_free(sbuf);
    }

    shmem_free(psync[1]);
    shmem_free(psync[0]);
    shmem_free(times);
    shmem_free(counter);
    shmem_free(flag);
    shmem_finalize();
    return 0;
}
