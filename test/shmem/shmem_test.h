/*
 * shmem_test.h: shared helpers of the OpenSHMEM test programs (test/shmem/).
 *
 * CHECK(cond, fmt, ...) prints "FAIL <file>:<line> PE <me>: message" to stderr
 * and ends the whole job with shmem_global_exit(1), so the launcher sees a
 * non-zero exit and no PE waits forever for a dead peer. test_pass() ends a
 * program: a final barrier, then "PASS <name>" from PE 0.
 *
 * SHMEM_TEST_V15 is 1 when the library claims OpenSHMEM 1.5 or later; the
 * parts of the tests that need 1.5 routines are compiled only then. A program
 * with such parts defines TEST_HAS_V15_PARTS before including this header, and
 * its PASS line says when they were left out (never a silent skip).
 */
#ifndef WEFT_TEST_SHMEM_TEST_H
#define WEFT_TEST_SHMEM_TEST_H

#include <shmem.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(SHMEM_MAJOR_VERSION) || !defined(SHMEM_MINOR_VERSION)
#error "shmem.h does not define SHMEM_MAJOR_VERSION / SHMEM_MINOR_VERSION"
#endif

#if SHMEM_MAJOR_VERSION > 1 || SHMEM_MINOR_VERSION >= 5
#define SHMEM_TEST_V15 1
#else
#define SHMEM_TEST_V15 0
#endif

static long test_checks __attribute__((unused)) = 0;

static inline void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static inline void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d PE %d: ", file, line, shmem_my_pe());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    shmem_global_exit(1);
    exit(1); /* not reached: shmem_global_exit does not return */
}

/** Check a condition; on failure print the message (printf format) and end the job. */
#define CHECK(cond, ...)                                \
    do {                                                \
        ++test_checks;                                  \
        if (!(cond)) {                                  \
            test_fail(__FILE__, __LINE__, __VA_ARGS__); \
        }                                               \
    } while (0)

/** Print a progress line from PE 0 (after a barrier: every PE finished the previous part). */
static inline void test_section(const char *what)
{
    shmem_barrier_all();
    if (0 == shmem_my_pe()) {
        printf("  %s\n", what);
        fflush(stdout);
    }
}

/** End the program: final barrier, "PASS <name>" from PE 0, shmem_finalize. Returns 0 for main. */
static inline int test_pass(const char *name)
{
    shmem_barrier_all();
    if (0 == shmem_my_pe()) {
        printf("PASS %s: %d PEs, %ld checks on PE 0, OpenSHMEM %d.%d%s\n", name, shmem_n_pes(),
               test_checks, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION,
#ifdef TEST_HAS_V15_PARTS
               SHMEM_TEST_V15 ? "" : " (its OpenSHMEM 1.5 checks are not compiled)"
#else
               ""
#endif
        );
        fflush(stdout);
    }
    shmem_finalize();
    return 0;
}

/** A 64-bit pattern word: no two (seed, i) pairs in a test share one in practice. */
static inline uint64_t test_word(uint64_t seed, uint64_t i)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + i;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    return x;
}

/** Fill @p len bytes with the pattern of @p seed. */
static inline void test_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = (unsigned char *)buf;
    for (size_t i = 0; i < len; ++i) {
        p[i] = (unsigned char)test_word(seed, i);
    }
}

/** Index of the first byte that differs from the pattern of @p seed, or -1. */
static inline long test_verify(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != (unsigned char)test_word(seed, i)) {
            return (long)i;
        }
    }
    return -1;
}

#endif /* WEFT_TEST_SHMEM_TEST_H */
