/*
 * bench_common.h -- helpers shared by the single-file OSU-style benchmarks
 * (perf/mpi/mpi_bench.c, perf/shmem/shmem_bench.c, perf/coll/coll_bench.c), which each compiler
 * wrapper (mpicc, either oshcc) builds on its own: header-only, C99.
 */
#ifndef WEFT_PERF_BENCH_COMMON_H
#define WEFT_PERF_BENCH_COMMON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/** "4096", "4k", "1m", "2g" (binary units) to bytes; (size_t)-1 when malformed. */
static inline size_t bench_parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0) {
        return (size_t)-1;
    }
    switch (*end) {
        case 'k':
        case 'K':
            v *= 1024;
            ++end;
            break;
        case 'm':
        case 'M':
            v *= 1024.0 * 1024;
            ++end;
            break;
        case 'g':
        case 'G':
            v *= 1024.0 * 1024 * 1024;
            ++end;
            break;
        default:
            break;
    }
    if (*end != '\0') {
        return (size_t)-1;
    }
    return (size_t)v;
}

/** Seconds on the monotonic clock. */
/** Append the sizes of a comma-separated list ("8,4k,1m") to sizes[*n], at most
 *  max in all (further ones are ignored); malformed ones become (size_t)-1. */
static inline void bench_parse_sizes(const char *list, size_t *sizes, int *n, int max)
{
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && *n < max;
         tok = strtok_r(NULL, ",", &save)) {
        sizes[(*n)++] = bench_parse_size(tok);
    }
    free(copy);
}

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/** Timed iterations for @p bytes: @p base up to 8 KiB, then scaled down by
 *  size, never below @p floor. */
static inline long bench_iters_for(size_t bytes, long base, long floor)
{
    if (bytes <= 8192) {
        return base;
    }
    long n = (long)((double)base * 8192.0 / (double)bytes);
    return n < floor ? floor : n;
}

#endif
