/*
 * mpi_test.h: shared helpers of the MPI test programs (test/mpi/).
 *
 * Every check that fails prints rank, file, line and what was expected, then
 * aborts the whole job (MPI_Abort), so the runner sees a non-zero exit and no
 * rank hangs waiting for a dead peer.
 */
#ifndef WEFT_TEST_MPI_TEST_H
#define WEFT_TEST_MPI_TEST_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int test_rank __attribute__((unused)) = -1;
static int test_size __attribute__((unused)) = 0;
static long test_checks __attribute__((unused)) = 0;

static inline void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL rank %d %s:%d: ", test_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/** Check a condition; on failure print the message (printf format) and abort the job. */
#define CHECK(cond, ...)                                       \
    do {                                                       \
        __atomic_fetch_add(&test_checks, 1, __ATOMIC_RELAXED); \
        if (!(cond)) {                                         \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);        \
        }                                                      \
    } while (0)

/** Check that an MPI call returned MPI_SUCCESS. */
#define CHECK_MPI(call)                                                           \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (MPI_SUCCESS != rc_) {                                                 \
            char s_[MPI_MAX_ERROR_STRING];                                        \
            int n_ = 0;                                                           \
            MPI_Error_string(rc_, s_, &n_);                                       \
            test_fail(__FILE__, __LINE__, "%s returned %d (%s)", #call, rc_, s_); \
        }                                                                         \
        __atomic_fetch_add(&test_checks, 1, __ATOMIC_RELAXED);                    \
    } while (0)

static inline void test_init_thread(int *argc, char ***argv, int required, int *provided)
{
    MPI_Init_thread(argc, argv, required, provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
}

static inline void test_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
}

/** Print one line per test section from rank 0 (after a barrier). */
static inline void test_section(const char *name)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == test_rank) {
        printf("  %s\n", name);
        fflush(stdout);
    }
}

static inline int test_finish(const char *program)
{
    long total = 0;
    MPI_Reduce(&test_checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == test_rank) {
        printf("PASS %s: %d ranks, %ld checks\n", program, test_size, total);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}

/** The byte at offset @p i of message @p msg (from @p src): a pattern no two messages share. */
static inline unsigned char test_byte(int src, long msg, size_t i)
{
    uint64_t x = ((uint64_t)(unsigned)src << 48) ^ ((uint64_t)msg << 20) ^ (uint64_t)i;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (unsigned char)x;
}

static inline void test_fill(void *buf, size_t len, int src, long msg)
{
    unsigned char *p = (unsigned char *)buf;
    for (size_t i = 0; i < len; ++i) {
        p[i] = test_byte(src, msg, i);
    }
}

/** Index of the first wrong byte, or -1. */
static inline long test_verify(const void *buf, size_t len, int src, long msg)
{
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != test_byte(src, msg, i)) {
            return (long)i;
        }
    }
    return -1;
}

static inline double test_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif /* WEFT_TEST_MPI_TEST_H */
