/*
 * shmem_amo.c: atomic memory operations.
 *
 * Every typed atomic of OpenSHMEM, on a symmetric heap array and on a static
 * array, to the right neighbour and to the PE itself; each PE works on its own
 * slot of the target's array, so the sequence of values is known exactly:
 *   standard AMO types (int, long, long long, unsigned int, unsigned long,
 *   unsigned long long, int32, int64, uint32, uint64, size, ptrdiff):
 *     fetch_inc, inc, fetch_add, add, compare_swap (failing and succeeding),
 *     and the extended set: fetch, set, swap; unsigned wrap-around;
 *   extended AMO types float and double: fetch, set, swap;
 *   bitwise AMO types (unsigned int, unsigned long, unsigned long long, int32,
 *   int64, uint32, uint64): fetch_and/or/xor, and/or/xor;
 *   1.5: the nonblocking fetching forms (_nbi) completed by shmem_quiet.
 * Values on 64-bit types use the high bits (truncation shows).
 * A few C11 generic calls. Concurrency: every PE does 1000 inc and 1000
 * fetch_add on one location of PE 0 (heap and static): totals exact, every
 * fetched value seen exactly once. A lock built on compare_swap protecting a
 * non-atomic read-modify-write.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#include <limits.h>

#define MAX_PES 64

static int me, npes;

/* TYPE, TYPENAME, maximum value of the type (for the wrap-around check; 0: signed, no wrap) */
#define STD_TYPES(X)                             \
    X(int, int, 0)                               \
    X(long, long, 0)                             \
    X(long long, longlong, 0)                    \
    X(unsigned int, uint, UINT_MAX)              \
    X(unsigned long, ulong, ULONG_MAX)           \
    X(unsigned long long, ulonglong, ULLONG_MAX) \
    X(int32_t, int32, 0)                         \
    X(int64_t, int64, 0)                         \
    X(uint32_t, uint32, UINT32_MAX)              \
    X(uint64_t, uint64, UINT64_MAX)              \
    X(size_t, size, SIZE_MAX)                    \
    X(ptrdiff_t, ptrdiff, 0)

#define BIT_TYPES(X)                 \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)

#define FLOAT_TYPES(X) \
    X(float, float)    \
    X(double, double)

/* Static targets: one slot per PE for each type. */
#define X_STATIC(T, N, ...) static T st_##N[MAX_PES];
STD_TYPES(X_STATIC)
FLOAT_TYPES(X_STATIC)

/** A start value for PE pe and round r; on 64-bit types above 2^32. */
#define BASE(T, pe, r) \
    ((T)((sizeof(T) >= 8 ? 0x123456789ULL : 0x1234ULL) + 1000ULL * (unsigned)(pe) + 17ULL * (r)))

/*
 * std_TYPENAME(arr, where): the standard and extended atomics on arr[me] of
 * PE me + d (d = 1, 0); the owner checks the final value of the slot of PE
 * me - d afterwards.
 */
#define X_STD(T, N, TMAX)                                                                          \
    static void std_##N(T *arr, const char *where)                                                 \
    {                                                                                              \
        for (int d = 1; d >= 0; --d) {                                                             \
            int to = (me + d) % npes, from = (me + npes - d) % npes;                               \
            arr[from] = (T)0;                                                                      \
            shmem_barrier_all();                                                                   \
            T *slot = &arr[me];                                                                    \
            const T v0 = BASE(T, me, d);                                                           \
            shmem_##N##_atomic_set(slot, v0, to);                                                  \
            T got = shmem_##N##_atomic_fetch(slot, to);                                            \
            CHECK(got == v0, "shmem_" #N "_atomic_set/fetch on %s of PE %d: %llx, expected %llx",  \
                  where, to, (unsigned long long)got, (unsigned long long)v0);                     \
            got = shmem_##N##_atomic_fetch_inc(slot, to);                                          \
            CHECK(got == v0, "shmem_" #N "_atomic_fetch_inc returned %llx, expected %llx",         \
                  (unsigned long long)got, (unsigned long long)v0);                                \
            shmem_##N##_atomic_inc(slot, to);                                                      \
            got = shmem_##N##_atomic_fetch_add(slot, (T)40, to);                                   \
            CHECK(got == (T)(v0 + 2),                                                              \
                  "shmem_" #N                                                                      \
                  "_atomic_inc / fetch_add returned %llx, "                                        \
                  "expected %llx",                                                                 \
                  (unsigned long long)got, (unsigned long long)(T)(v0 + 2));                       \
            shmem_##N##_atomic_add(slot, (T)500, to);                                              \
            const T v1 = (T)(v0 + 542);                                                            \
            got = shmem_##N##_atomic_compare_swap(slot, (T)(v1 + 1), (T)7, to); /* no match */     \
            CHECK(got == v1,                                                                       \
                  "shmem_" #N                                                                      \
                  "_atomic_add / failing compare_swap returned %llx, "                             \
                  "expected %llx",                                                                 \
                  (unsigned long long)got, (unsigned long long)v1);                                \
            got = shmem_##N##_atomic_fetch(slot, to);                                              \
            CHECK(got == v1, "shmem_" #N "_atomic_compare_swap changed a value it did not match"); \
            const T v2 = BASE(T, me + 100, d);                                                     \
            got = shmem_##N##_atomic_compare_swap(slot, v1, v2, to); /* match */                   \
            CHECK(got == v1, "shmem_" #N "_atomic_compare_swap returned %llx, expected %llx",      \
                  (unsigned long long)got, (unsigned long long)v1);                                \
            const T v3 = BASE(T, me + 200, d);                                                     \
            got = shmem_##N##_atomic_swap(slot, v3, to);                                           \
            CHECK(got == v2,                                                                       \
                  "shmem_" #N                                                                      \
                  "_atomic_swap returned %llx, expected %llx (the "                                \
                  "compare_swap did not store?)",                                                  \
                  (unsigned long long)got, (unsigned long long)v2);                                \
            if (TMAX) { /* unsigned: wrap-around at the top */                                     \
                shmem_##N##_atomic_set(slot, (T)(TMAX), to);                                       \
                got = shmem_##N##_atomic_fetch_inc(slot, to);                                      \
                CHECK(got == (T)(TMAX),                                                            \
                      "shmem_" #N                                                                  \
                      "_atomic_fetch_inc of the maximum returned "                                 \
                      "%llx",                                                                      \
                      (unsigned long long)got);                                                    \
                got = shmem_##N##_atomic_fetch_add(slot, (T)(TMAX), to); /* 0 + max */             \
                CHECK(got == (T)0, "shmem_" #N "_atomic_fetch_inc did not wrap to 0: %llx",        \
                      (unsigned long long)got);                                                    \
                shmem_##N##_atomic_add(slot, (T)2, to); /* max + 2 = 1 */                          \
                got = shmem_##N##_atomic_swap(slot, v3, to);                                       \
                CHECK(got == (T)1, "shmem_" #N "_atomic_add did not wrap: %llx",                   \
                      (unsigned long long)got);                                                    \
            }                                                                                      \
            shmem_barrier_all();                                                                   \
            const T want = BASE(T, from + 200, d);                                                 \
            CHECK(arr[from] == want, "%s slot of PE %d on this PE: %llx, expected %llx", where,    \
                  from, (unsigned long long)arr[from], (unsigned long long)want);                  \
        }                                                                                          \
    }
STD_TYPES(X_STD)

/* float_TYPENAME(arr, where): fetch, set, swap on float and double. */
#define X_FLOAT(T, N)                                                                          \
    static void float_##N(T *arr, const char *where)                                           \
    {                                                                                          \
        for (int d = 1; d >= 0; --d) {                                                         \
            int to = (me + d) % npes, from = (me + npes - d) % npes;                           \
            arr[from] = (T)0;                                                                  \
            shmem_barrier_all();                                                               \
            T *slot = &arr[me];                                                                \
            const T v0 = (T)(1.25 + me), v1 = (T)(-1000.5 - me), v2 = (T)(0.0625 * (me + 3));  \
            shmem_##N##_atomic_set(slot, v0, to);                                              \
            T got = shmem_##N##_atomic_fetch(slot, to);                                        \
            CHECK(got == v0, "shmem_" #N "_atomic_set/fetch on %s of PE %d: %g, expected %g",  \
                  where, to, (double)got, (double)v0);                                         \
            got = shmem_##N##_atomic_swap(slot, v1, to);                                       \
            CHECK(got == v0, "shmem_" #N "_atomic_swap returned %g, expected %g", (double)got, \
                  (double)v0);                                                                 \
            got = shmem_##N##_atomic_swap(slot, v2, to);                                       \
            CHECK(got == v1, "shmem_" #N "_atomic_swap returned %g, expected %g", (double)got, \
                  (double)v1);                                                                 \
            shmem_barrier_all();                                                               \
            const T want = (T)(0.0625 * (from + 3));                                           \
            CHECK(arr[from] == want, "%s slot of PE %d: %g, expected %g", where, from,         \
                  (double)arr[from], (double)want);                                            \
        }                                                                                      \
    }
FLOAT_TYPES(X_FLOAT)

/* bit_TYPENAME(arr): fetch_and/or/xor and and/or/xor on the own slot of PE me + d
 * (only bitwise atomics and a put: independent of the standard set). */
#define X_BIT(T, N)                                                                             \
    static void bit_##N(T *arr, const char *where)                                              \
    {                                                                                           \
        const T hi = (T)(sizeof(T) >= 8 ? 0xa5a5a5a500000000ULL : 0);                           \
        for (int d = 1; d >= 0; --d) {                                                          \
            int to = (me + d) % npes, from = (me + npes - d) % npes;                            \
            arr[from] = (T)0;                                                                   \
            shmem_barrier_all();                                                                \
            T *slot = &arr[me];                                                                 \
            T v = (T)(hi | 0x0ff0f00fU | (T)me);                                                \
            shmem_##N##_p(slot, v, to); /* a put, completed before the atomics */               \
            shmem_quiet();                                                                      \
            T m1 = (T)(hi | 0x00ffff00U), m2 = (T)0x12340001U, m3 = (T)(hi >> 4 | 0x0f0f0f0fU); \
            T got = shmem_##N##_atomic_fetch_and(slot, m1, to);                                 \
            CHECK(got == v, "shmem_" #N "_atomic_fetch_and on %s returned %llx, expected %llx", \
                  where, (unsigned long long)got, (unsigned long long)v);                       \
            v = (T)(v & m1);                                                                    \
            got = shmem_##N##_atomic_fetch_or(slot, m2, to);                                    \
            CHECK(got == v, "shmem_" #N "_atomic_fetch_or returned %llx, expected %llx",        \
                  (unsigned long long)got, (unsigned long long)v);                              \
            v = (T)(v | m2);                                                                    \
            got = shmem_##N##_atomic_fetch_xor(slot, m3, to);                                   \
            CHECK(got == v, "shmem_" #N "_atomic_fetch_xor returned %llx, expected %llx",       \
                  (unsigned long long)got, (unsigned long long)v);                              \
            v = (T)(v ^ m3);                                                                    \
            shmem_##N##_atomic_and(slot, (T)~m2, to);                                           \
            v = (T)(v & (T)~m2);                                                                \
            shmem_##N##_atomic_or(slot, (T)0x80000000U, to);                                    \
            v = (T)(v | (T)0x80000000U);                                                        \
            shmem_##N##_atomic_xor(slot, (T)(hi | 0x3U), to);                                   \
            v = (T)(v ^ (T)(hi | 0x3U));                                                        \
            got = shmem_##N##_atomic_fetch_or(slot, (T)0, to);                                  \
            CHECK(got == v, "shmem_" #N "_atomic_and/or/xor: %llx, expected %llx",              \
                  (unsigned long long)got, (unsigned long long)v);                              \
            shmem_barrier_all();                                                                \
            /* the owner recomputes the slot of PE from */                                      \
            T w = (T)(hi | 0x0ff0f00fU | (T)from);                                              \
            w = (T)((((((w & m1) | m2) ^ m3) & (T)~m2) | (T)0x80000000U) ^ (T)(hi | 0x3U));     \
            CHECK(arr[from] == w, "%s bitwise slot of PE %d: %llx, expected %llx", where, from, \
                  (unsigned long long)arr[from], (unsigned long long)w);                        \
        }                                                                                       \
    }
BIT_TYPES(X_BIT)

#if SHMEM_TEST_V15
/* nbi_TYPENAME(arr): the nonblocking fetching atomics, results read after shmem_quiet. */
#define X_NBI(T, N, TMAX)                                                                      \
    static void nbi_##N(T *arr, const char *where)                                             \
    {                                                                                          \
        (void)(TMAX);                                                                          \
        for (int d = 1; d >= 0; --d) {                                                         \
            int to = (me + d) % npes;                                                          \
            shmem_barrier_all();                                                               \
            T *slot = &arr[me];                                                                \
            const T v0 = BASE(T, me, d + 5);                                                   \
            T f[5] = {0, 0, 0, 0, 0};                                                          \
            shmem_##N##_atomic_set(slot, v0, to);                                              \
            shmem_##N##_atomic_fetch_nbi(&f[0], slot, to);                                     \
            shmem_quiet();                                                                     \
            shmem_##N##_atomic_fetch_inc_nbi(&f[1], slot, to);                                 \
            shmem_quiet();                                                                     \
            shmem_##N##_atomic_fetch_add_nbi(&f[2], slot, (T)10, to);                          \
            shmem_quiet();                                                                     \
            shmem_##N##_atomic_compare_swap_nbi(&f[3], slot, (T)(v0 + 11), (T)(v0 + 100), to); \
            shmem_quiet();                                                                     \
            shmem_##N##_atomic_swap_nbi(&f[4], slot, (T)5, to);                                \
            shmem_quiet();                                                                     \
            const T want[5] = {v0, v0, (T)(v0 + 1), (T)(v0 + 11), (T)(v0 + 100)};              \
            for (int i = 0; i < 5; ++i) {                                                      \
                CHECK(f[i] == want[i],                                                         \
                      "shmem_" #N                                                              \
                      "_atomic_*_nbi on %s, op %d: fetched %llx, "                             \
                      "expected %llx",                                                         \
                      where, i, (unsigned long long)f[i], (unsigned long long)want[i]);        \
            }                                                                                  \
            CHECK(shmem_##N##_atomic_fetch(slot, to) == (T)5, "shmem_" #N                      \
                                                              "_atomic_swap_nbi "              \
                                                              "did not store");                \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
    }
STD_TYPES(X_NBI)

#define X_NBI_FLOAT(T, N)                                                            \
    static void nbi_##N(T *arr, const char *where)                                   \
    {                                                                                \
        int to = (me + 1) % npes;                                                    \
        shmem_barrier_all();                                                         \
        T f[2] = {0, 0};                                                             \
        shmem_##N##_atomic_set(&arr[me], (T)2.5, to);                                \
        shmem_##N##_atomic_fetch_nbi(&f[0], &arr[me], to);                           \
        shmem_quiet();                                                               \
        shmem_##N##_atomic_swap_nbi(&f[1], &arr[me], (T)-3.5, to);                   \
        shmem_quiet();                                                               \
        CHECK(f[0] == (T)2.5 && f[1] == (T)2.5,                                      \
              "shmem_" #N                                                            \
              "_atomic_fetch_nbi/swap_nbi on %s: "                                   \
              "%g %g",                                                               \
              where, (double)f[0], (double)f[1]);                                    \
        CHECK(shmem_##N##_atomic_fetch(&arr[me], to) == (T)-3.5, "shmem_" #N         \
                                                                 "_atomic_swap_nbi " \
                                                                 "did not store");   \
        shmem_barrier_all();                                                         \
    }
FLOAT_TYPES(X_NBI_FLOAT)

#define X_NBI_BIT(T, N)                                                           \
    static void nbi_bit_##N(T *arr, const char *where)                            \
    {                                                                             \
        int to = (me + 1) % npes;                                                 \
        shmem_barrier_all();                                                      \
        T f[3] = {0, 0, 0};                                                       \
        const T v = (T)0xf0f0f0f0U;                                               \
        shmem_##N##_atomic_set(&arr[me], v, to);                                  \
        shmem_##N##_atomic_fetch_and_nbi(&f[0], &arr[me], (T)0xffff0000U, to);    \
        shmem_quiet();                                                            \
        shmem_##N##_atomic_fetch_or_nbi(&f[1], &arr[me], (T)0x0000000fU, to);     \
        shmem_quiet();                                                            \
        shmem_##N##_atomic_fetch_xor_nbi(&f[2], &arr[me], (T)0x11111111U, to);    \
        shmem_quiet();                                                            \
        const T w0 = v, w1 = (T)(v & (T)0xffff0000U), w2 = (T)(w1 | (T)0xfU);     \
        CHECK(f[0] == w0 && f[1] == w1 && f[2] == w2,                             \
              "shmem_" #N                                                         \
              "_atomic_fetch_and/or/xor_nbi "                                     \
              "on %s: %llx %llx %llx",                                            \
              where, (unsigned long long)f[0], (unsigned long long)f[1],          \
              (unsigned long long)f[2]);                                          \
        CHECK(shmem_##N##_atomic_fetch(&arr[me], to) == (T)(w2 ^ (T)0x11111111U), \
              "shmem_" #N "_atomic_fetch_xor_nbi did not store");                 \
        shmem_barrier_all();                                                      \
    }
BIT_TYPES(X_NBI_BIT)
#endif /* SHMEM_TEST_V15 */

/* ---- C11 generic atomics ---- */
static void test_generic(long *la, double *da)
{
    int to = (me + 1) % npes;
    shmem_barrier_all();
    shmem_atomic_set(&la[me], 10L, to);
    long a = shmem_atomic_fetch_inc(&la[me], to);
    shmem_atomic_inc(&la[me], to);
    long b = shmem_atomic_fetch_add(&la[me], 5L, to);
    shmem_atomic_add(&la[me], 100L, to);
    long c = shmem_atomic_compare_swap(&la[me], 117L, 3L, to);
    long e = shmem_atomic_swap(&la[me], 4L, to);
    long f = shmem_atomic_fetch(&la[me], to);
    CHECK(a == 10 && b == 12 && c == 117 && e == 3 && f == 4,
          "C11 generic long atomics: %ld %ld %ld %ld %ld", a, b, c, e, f);
    shmem_atomic_set(&da[me], 1.5, to);
    double g = shmem_atomic_swap(&da[me], 2.5, to);
    double h = shmem_atomic_fetch(&da[me], to);
    CHECK(g == 1.5 && h == 2.5, "C11 generic double atomics: %g %g", g, h);
    shmem_barrier_all();
}

/* ---- concurrency on one location of PE 0 ---- */
#define ROUNDS 1000
static long long st_counter; /* static target of the fetch_add */
static int st_incs;          /* static target of the inc */

static void test_concurrent(void)
{
    const long total = (long)npes * ROUNDS;
    int *seen = shmem_calloc((size_t)total, sizeof(int));   /* on PE 0: which values were fetched */
    long long *hcount = shmem_calloc(2, sizeof(long long)); /* heap targets on PE 0 */
    CHECK(NULL != seen && NULL != hcount, "shmem_calloc failed");
    st_counter = 0;
    st_incs = 0;
    shmem_barrier_all();
    long long last = -1;
    for (int i = 0; i < ROUNDS; ++i) {
        shmem_int_atomic_inc(&st_incs, 0);
        shmem_longlong_atomic_inc(&hcount[0], 0);
        long long v = shmem_longlong_atomic_fetch_add(&st_counter, 1, 0);
        CHECK(v >= 0 && v < total, "fetch_add on PE 0's static variable returned %lld", v);
        CHECK(v > last, "fetch_add results not increasing on one PE: %lld after %lld", v, last);
        last = v;
        shmem_int_atomic_inc(&seen[v], 0);
        long long h = shmem_longlong_atomic_fetch_inc(&hcount[1], 0);
        CHECK(h >= 0 && h < total, "fetch_inc on PE 0's heap returned %lld", h);
    }
    shmem_barrier_all();
    if (0 == me) {
        CHECK(st_incs == total, "static int after %ld atomic_inc: %d", total, st_incs);
        CHECK(st_counter == total, "static long long after %ld fetch_add: %lld", total, st_counter);
        CHECK(hcount[0] == total, "heap long long after %ld atomic_inc: %lld", total, hcount[0]);
        CHECK(hcount[1] == total, "heap long long after %ld fetch_inc: %lld", total, hcount[1]);
        for (long v = 0; v < total; ++v) {
            CHECK(seen[v] == 1, "fetch_add value %ld was fetched %d times", v, seen[v]);
        }
    }
    shmem_free(hcount);
    shmem_free(seen);
}

/* ---- a lock made of compare_swap: non-atomic read-modify-write under it ---- */
static long lock_word;      /* on PE 0: 0 free, p + 1 held by PE p */
static long locked_counter; /* on PE 0: incremented with get + put under the lock */

static void test_lock(void)
{
    const int iters = 50;
    lock_word = 0;
    locked_counter = 0;
    shmem_barrier_all();
    long spins = 0;
    for (int i = 0; i < iters; ++i) {
        while (0 != shmem_long_atomic_compare_swap(&lock_word, 0, me + 1, 0)) {
            ++spins;
        }
        CHECK(shmem_long_atomic_fetch(&lock_word, 0) == me + 1, "lock not held after acquiring");
        long c = shmem_long_g(&locked_counter, 0);
        shmem_long_p(&locked_counter, c + 1, 0);
        shmem_quiet(); /* the put is complete before the lock is released */
        long prev = shmem_long_atomic_swap(&lock_word, 0, 0);
        CHECK(prev == me + 1, "lock word was %ld while held by PE %d", prev, me);
    }
    shmem_barrier_all();
    if (0 == me) {
        CHECK(locked_counter == (long)npes * iters, "counter under the lock: %ld, expected %ld",
              locked_counter, (long)npes * iters);
        CHECK(lock_word == 0, "lock word left at %ld", lock_word);
    }
    (void)spins;
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= MAX_PES, "at most %d PEs", MAX_PES);

    for (int target = 0; target < 2; ++target) {
        const char *where = target ? "static array" : "heap";
        char what[80];
#define X_HEAP(T, N, ...)                        \
    T *h_##N = shmem_calloc(MAX_PES, sizeof(T)); \
    CHECK(NULL != h_##N, "shmem_calloc failed"); \
    T *a_##N = target ? st_##N : h_##N;
        STD_TYPES(X_HEAP)
        FLOAT_TYPES(X_HEAP)

        snprintf(what, sizeof(what), "standard and extended atomics on the %s", where);
        test_section(what);
#define X_RUN_STD(T, N, TMAX) std_##N(a_##N, where);
        STD_TYPES(X_RUN_STD)
        snprintf(what, sizeof(what), "float / double atomics on the %s", where);
        test_section(what);
#define X_RUN_FLOAT(T, N) float_##N(a_##N, where);
        FLOAT_TYPES(X_RUN_FLOAT)
        snprintf(what, sizeof(what), "bitwise atomics on the %s", where);
        test_section(what);
#define X_RUN_BIT(T, N) bit_##N(a_##N, where);
        BIT_TYPES(X_RUN_BIT)
#if SHMEM_TEST_V15
        snprintf(what, sizeof(what), "nonblocking fetching atomics (1.5) on the %s", where);
        test_section(what);
#define X_RUN_NBI(T, N, TMAX) nbi_##N(a_##N, where);
        STD_TYPES(X_RUN_NBI)
#define X_RUN_NBI_FLOAT(T, N) nbi_##N(a_##N, where);
        FLOAT_TYPES(X_RUN_NBI_FLOAT)
#define X_RUN_NBI_BIT(T, N) nbi_bit_##N(a_##N, where);
        BIT_TYPES(X_RUN_NBI_BIT)
#endif
        test_section("C11 generic atomics");
        test_generic(a_long, a_double);

#define X_FREE(T, N, ...) shmem_free(h_##N);
        FLOAT_TYPES(X_FREE)
        STD_TYPES(X_FREE)
    }

    test_section("concurrent inc / fetch_add on PE 0");
    test_concurrent();
    test_section("compare_swap lock");
    test_lock();

    return test_pass("shmem_amo");
}
