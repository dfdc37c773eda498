/*
 * shmem_coll.c: collectives.
 *
 * OpenSHMEM 1.5 team collectives on SHMEM_TEAM_WORLD:
 *   shmem_TYPENAME_broadcast and shmem_broadcastmem: 0, 1, 1000 and 100000
 *   bytes (typed: 0, 1, 7 and 25000 elements), several roots; dest is updated
 *   on EVERY PE, the root included; the bytes after dest are untouched and
 *   every PE's source is unchanged; a run of broadcasts with different roots
 *   into distinct buffers with no synchronization between them (legal: a
 *   team collective may follow another one directly); one into static arrays.
 *   collect (typed and mem): every PE contributes a different number of
 *   elements, 0 included (also all 0); fcollect (typed and mem);
 *   alltoall (typed and mem); alltoalls (typed and mem) with dst and sst of
 *   1 and 3 (the gaps of the strided dest must stay untouched).
 *   Every reduction: and/or/xor on unsigned and signed fixed-width integer
 *   types and size_t; max/min on char, signed and unsigned integers,
 *   ptrdiff_t, size_t, float, double, long double; sum/prod on the same kinds
 *   plus double _Complex and float _Complex. nreduce 1, 7 and 100000, out of
 *   place and in place (dest == source). The values are chosen so the result
 *   is exact whatever the order of the operations (small integers, powers of
 *   two; unsigned types wrap, which C defines); every PE computes the
 *   expected result itself from the formula each PE used for its source.
 *   shmem_team_sync and shmem_barrier_all loops: each PE writes to every PE,
 *   synchronizes, and checks what everybody wrote (two alternating slots make
 *   the check exact: slot k % 2 is rewritten only after the next sync).
 * The deprecated active-set forms, on the whole world, on every other PE
 * (PE_start 0, logPE_stride 1) and on PEs 1..npes-1 (PE_start 1) when there
 * are >= 2 PEs: shmem_barrier loops (the same pSync reused, as the
 * specification allows for barriers), shmem_broadcast32/64 (dest NOT updated
 * on PE_root), shmem_collect32/64, shmem_fcollect32/64, shmem_alltoall32/64,
 * shmem_alltoalls32/64, shmem_TYPENAME_OP_to_all for short, int, long,
 * long long (every operation), float, double, long double (max, min, sum,
 * prod), complexd and complexf (sum, prod), nreduce 1, 7 and 10000, in place
 * too. pSync arrays hold SHMEM_SYNC_VALUE; pWrk has max(nreduce / 2 + 1,
 * SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements; a barrier separates the reuses of
 * a pSync by different collectives (and makes every dest ready), as the
 * specification requires. PEs outside an active set do not call.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#include <complex.h>

static int me, npes;

/* Symmetric heap buffers (BUF_BYTES each), and a private one for expected values. */
#define BUF_BYTES ((size_t)8 << 20)
static unsigned char *sbuf, *dbuf, *wrk;
static unsigned char *ebuf;
#define SENTINEL 0xA5

static void set_bytes(void *p, size_t n, unsigned char v)
{
    memset(p, v, n);
}

/** Index of the first byte of [p, p + n) that is not v, or -1. */
static long first_not(const void *p, size_t n, unsigned char v)
{
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i) {
        if (c[i] != v) {
            return (long)i;
        }
    }
    return -1;
}

/** Seed of the data of PE pe in test case c (each PE's data differs). */
static uint64_t seed_of(uint64_t c, int pe)
{
    return c * 4096 + (uint64_t)pe;
}

/** Element value of the pattern `seed` (exact in every RMA type, floating ones included). */
#define VAL(T, seed, i) ((T)(test_word((seed), (i)) % 1000003u))

/** Types of the typed collectives: TYPE, TYPENAME. */
#define COLL_TYPES(X)                \
    X(char, char)                    \
    X(short, short)                  \
    X(int, int)                      \
    X(long, long)                    \
    X(unsigned long long, ulonglong) \
    X(uint32_t, uint32)              \
    X(size_t, size)                  \
    X(float, float)                  \
    X(double, double)                \
    X(long double, longdouble)

static unsigned case_counter = 1;

/** Elements PE pe contributes in collect variant v (0 for some PEs, or for all). */
static size_t collect_count(int pe, int v)
{
    switch (v) {
        case 0:
            return (size_t)(pe % 3);
        case 1:
            return (size_t)((pe + 1) % 3) * 5;
        case 2:
            return 0;
        case 3:
            return 1;
        case 4:
            return 1000 + 37 * (size_t)pe;
        default:
            return pe == npes - 1 ? 0 : 2000 + (size_t)pe;
    }
}
#define COLLECT_VARIANTS 6

/** Seed of the block PE `from` sends to PE `to` in case c. */
static uint64_t a2a_seed(uint64_t c, int from, int to)
{
    return c * 4096 * 64 + (uint64_t)from * 64 + (uint64_t)to;
}

/* ================================================================== 1.5 team collectives */
#if SHMEM_TEST_V15

/* ------------------------------------------------------------------ broadcast */

static void test_broadcastmem(void)
{
    static const size_t sizes[] = {0, 1, 1000, 100000};
    const int roots[] = {0, npes - 1, npes / 2, 1 % npes};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
        for (size_t ri = 0; ri < sizeof(roots) / sizeof(roots[0]); ++ri) {
            const size_t n = sizes[si];
            const int root = roots[ri];
            const uint64_t c = case_counter++;
            test_fill(sbuf, n + 64, seed_of(c, me));
            set_bytes(dbuf, n + 64, SENTINEL);
            shmem_barrier_all();
            int rc = shmem_broadcastmem(SHMEM_TEAM_WORLD, dbuf, sbuf, n, root);
            CHECK(rc == 0, "shmem_broadcastmem(%zu bytes, root %d) returned %d", n, root, rc);
            long bad = test_verify(dbuf, n, seed_of(c, root));
            CHECK(bad < 0,
                  "shmem_broadcastmem(%zu bytes, root %d): dest byte %ld is not the root's", n,
                  root, bad);
            bad = first_not(dbuf + n, 64, SENTINEL);
            CHECK(bad < 0,
                  "shmem_broadcastmem(%zu bytes, root %d): byte %ld after dest was written", n,
                  root, bad);
            bad = test_verify(sbuf, n + 64, seed_of(c, me));
            CHECK(bad < 0, "shmem_broadcastmem(%zu bytes, root %d): source byte %ld changed", n,
                  root, bad);
        }
    }
}

static unsigned char st_src[4096], st_dst[4096]; /* static (data segment) symmetric objects */

static void test_broadcast_static(void)
{
    for (int root = 0; root < npes; ++root) {
        const uint64_t c = case_counter++;
        test_fill(st_src, 1000, seed_of(c, me));
        set_bytes(st_dst, sizeof(st_dst), SENTINEL);
        shmem_barrier_all();
        int rc = shmem_broadcastmem(SHMEM_TEAM_WORLD, st_dst, st_src, 1000, root);
        CHECK(rc == 0, "shmem_broadcastmem (static arrays) returned %d", rc);
        long bad = test_verify(st_dst, 1000, seed_of(c, root));
        CHECK(bad < 0, "shmem_broadcastmem (static arrays, root %d): byte %ld wrong", root, bad);
        bad = first_not(st_dst + 1000, sizeof(st_dst) - 1000, SENTINEL);
        CHECK(bad < 0, "shmem_broadcastmem (static arrays, root %d): byte %ld after dest written",
              root, bad);
    }
}

#define DEF_BCAST(T, N)                                                                          \
    static void test_bcast_##N(void)                                                             \
    {                                                                                            \
        static const size_t counts[] = {0, 1, 7, 25000};                                         \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                     \
            const size_t n = counts[ci];                                                         \
            for (int root = 0; root < npes; root += (npes > 2 ? npes - 1 : 1)) {                 \
                const uint64_t c = case_counter++;                                               \
                T *s = (T *)sbuf, *d = (T *)dbuf;                                                \
                for (size_t i = 0; i < n + 4; ++i) {                                             \
                    s[i] = VAL(T, seed_of(c, me), i);                                            \
                }                                                                                \
                set_bytes(d, (n + 4) * sizeof(T), SENTINEL);                                     \
                shmem_barrier_all();                                                             \
                int rc = shmem_##N##_broadcast(SHMEM_TEAM_WORLD, d, s, n, root);                 \
                CHECK(rc == 0, "shmem_" #N "_broadcast returned %d", rc);                        \
                for (size_t i = 0; i < n; ++i) {                                                 \
                    CHECK(d[i] == VAL(T, seed_of(c, root), i),                                   \
                          "shmem_" #N "_broadcast(%zu elements, root %d): element %zu wrong", n, \
                          root, i);                                                              \
                }                                                                                \
                long bad = first_not(d + n, 4 * sizeof(T), SENTINEL);                            \
                CHECK(bad < 0,                                                                   \
                      "shmem_" #N "_broadcast(%zu, root %d): byte %ld after dest written", n,    \
                      root, bad);                                                                \
                for (size_t i = 0; i < n + 4; ++i) {                                             \
                    CHECK(s[i] == VAL(T, seed_of(c, me), i),                                     \
                          "shmem_" #N "_broadcast: source element %zu changed", i);              \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
COLL_TYPES(DEF_BCAST)

/** Broadcasts one after the other with no synchronization between them (distinct buffers). */
static void test_bcast_back_to_back(void)
{
    const int k = 2 * npes + 3;
    const size_t len = 3;
    const uint64_t c = case_counter++;
    long *s = (long *)sbuf, *d = (long *)dbuf;
    for (size_t i = 0; i < (size_t)k * len; ++i) {
        s[i] = VAL(long, seed_of(c, me), i);
        d[i] = -7;
    }
    shmem_barrier_all();
    for (int b = 0; b < k; ++b) {
        int rc = shmem_long_broadcast(SHMEM_TEAM_WORLD, d + b * len, s + b * len, len, b % npes);
        CHECK(rc == 0, "shmem_long_broadcast #%d returned %d", b, rc);
    }
    for (int b = 0; b < k; ++b) {
        for (size_t i = 0; i < len; ++i) {
            CHECK(d[b * len + i] == VAL(long, seed_of(c, b % npes), b *len + i),
                  "back-to-back shmem_long_broadcast #%d (root %d): element %zu wrong", b, b % npes,
                  i);
        }
    }
}

/** Reductions one after the other, in place, with no synchronization between them: small
 *  ones push into buffers a fast member could overwrite before a slow one reads them. */
static void test_reduce_back_to_back(void)
{
    const uint64_t c = case_counter++;
    const long base = (long)npes * (npes - 1) / 2;
    long *v = (long *)sbuf;
    double *x = (double *)(sbuf + 64);
    shmem_barrier_all();
    for (int r = 0; r < 64 * npes; ++r) {
        const size_t len = 1 + (size_t)(r % 4);
        for (size_t i = 0; i < len; ++i) {
            v[i] = me + r + (long)i;
        }
        int rc = shmem_long_sum_reduce(SHMEM_TEAM_WORLD, v, v, len);
        CHECK(rc == 0, "shmem_long_sum_reduce #%d returned %d", r, rc);
        for (size_t i = 0; i < len; ++i) {
            CHECK(v[i] == base + (long)npes * (r + (long)i),
                  "back-to-back shmem_long_sum_reduce #%d: element %zu is %ld, want %ld", r, i,
                  v[i], base + (long)npes * (r + (long)i));
        }
        /* Every member must get the very same bits of a floating-point sum. */
        *x = 1.0 / (3.0 + me + r) + (double)VAL(long, seed_of(c, me), (size_t)r) * 1e-9;
        rc = shmem_double_sum_reduce(SHMEM_TEAM_WORLD, x, x, 1);
        CHECK(rc == 0, "shmem_double_sum_reduce #%d returned %d", r, rc);
        double *all = (double *)dbuf;
        shmem_double_fcollect(SHMEM_TEAM_WORLD, all, x, 1);
        for (int p = 0; p < npes; ++p) {
            CHECK(memcmp(&all[p], x, sizeof *x) == 0,
                  "shmem_double_sum_reduce #%d: PE %d got %.17g, this PE %.17g", r, p, all[p], *x);
        }
    }
}

/* ------------------------------------------------------------------ collect, fcollect */

#define DEF_COLLECT(T, N)                                                                      \
    static void test_collect_##N(void)                                                         \
    {                                                                                          \
        for (int v = 0; v < COLLECT_VARIANTS; ++v) {                                           \
            const uint64_t c = case_counter++;                                                 \
            const size_t mine = collect_count(me, v);                                          \
            size_t total = 0;                                                                  \
            for (int p = 0; p < npes; ++p) {                                                   \
                total += collect_count(p, v);                                                  \
            }                                                                                  \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                  \
            for (size_t i = 0; i < mine; ++i) {                                                \
                s[i] = VAL(T, seed_of(c, me), i);                                              \
            }                                                                                  \
            set_bytes(d, (total + 4) * sizeof(T), SENTINEL);                                   \
            shmem_barrier_all();                                                               \
            int rc = shmem_##N##_collect(SHMEM_TEAM_WORLD, d, s, mine);                        \
            CHECK(rc == 0, "shmem_" #N "_collect returned %d", rc);                            \
            size_t at = 0;                                                                     \
            for (int p = 0; p < npes; ++p) {                                                   \
                for (size_t i = 0; i < collect_count(p, v); ++i, ++at) {                       \
                    CHECK(d[at] == VAL(T, seed_of(c, p), i),                                   \
                          "shmem_" #N                                                          \
                          "_collect (variant %d): element %zu of PE %d (dest[%zu]) "           \
                          "wrong",                                                             \
                          v, i, p, at);                                                        \
                }                                                                              \
            }                                                                                  \
            long bad = first_not(d + total, 4 * sizeof(T), SENTINEL);                          \
            CHECK(bad < 0,                                                                     \
                  "shmem_" #N                                                                  \
                  "_collect (variant %d, %zu in all): byte %ld after dest "                    \
                  "written",                                                                   \
                  v, total, bad);                                                              \
        }                                                                                      \
    }                                                                                          \
    static void test_fcollect_##N(void)                                                        \
    {                                                                                          \
        static const size_t counts[] = {0, 1, 7, 5000};                                        \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                   \
            const size_t n = counts[ci];                                                       \
            const uint64_t c = case_counter++;                                                 \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                  \
            for (size_t i = 0; i < n; ++i) {                                                   \
                s[i] = VAL(T, seed_of(c, me), i);                                              \
            }                                                                                  \
            set_bytes(d, (n * (size_t)npes + 4) * sizeof(T), SENTINEL);                        \
            shmem_barrier_all();                                                               \
            int rc = shmem_##N##_fcollect(SHMEM_TEAM_WORLD, d, s, n);                          \
            CHECK(rc == 0, "shmem_" #N "_fcollect returned %d", rc);                           \
            for (int p = 0; p < npes; ++p) {                                                   \
                for (size_t i = 0; i < n; ++i) {                                               \
                    CHECK(d[(size_t)p * n + i] == VAL(T, seed_of(c, p), i),                    \
                          "shmem_" #N "_fcollect(%zu): element %zu of PE %d wrong", n, i, p);  \
                }                                                                              \
            }                                                                                  \
            long bad = first_not(d + n * (size_t)npes, 4 * sizeof(T), SENTINEL);               \
            CHECK(bad < 0, "shmem_" #N "_fcollect(%zu): byte %ld after dest written", n, bad); \
        }                                                                                      \
    }
COLL_TYPES(DEF_COLLECT)

static void test_collectmem(void)
{
    for (int v = 0; v < COLLECT_VARIANTS; ++v) {
        const uint64_t c = case_counter++;
        const size_t mine = collect_count(me, v) * 3 + (size_t)(v == 3 ? 0 : me % 2);
        size_t total = 0;
        for (int p = 0; p < npes; ++p) {
            total += collect_count(p, v) * 3 + (size_t)(v == 3 ? 0 : p % 2);
        }
        test_fill(sbuf, mine, seed_of(c, me));
        set_bytes(dbuf, total + 64, SENTINEL);
        shmem_barrier_all();
        int rc = shmem_collectmem(SHMEM_TEAM_WORLD, dbuf, sbuf, mine);
        CHECK(rc == 0, "shmem_collectmem returned %d", rc);
        size_t at = 0;
        for (int p = 0; p < npes; ++p) {
            const size_t n = collect_count(p, v) * 3 + (size_t)(v == 3 ? 0 : p % 2);
            long bad = test_verify(dbuf + at, n, seed_of(c, p));
            CHECK(bad < 0, "shmem_collectmem (variant %d): byte %ld of PE %d's %zu wrong", v, bad,
                  p, n);
            at += n;
        }
        long bad = first_not(dbuf + total, 64, SENTINEL);
        CHECK(bad < 0, "shmem_collectmem (variant %d): byte %ld after dest written", v, bad);
    }
    for (size_t n = 0; n < 5000; n = n * 7 + 1) {
        const uint64_t c = case_counter++;
        test_fill(sbuf, n, seed_of(c, me));
        set_bytes(dbuf, n * (size_t)npes + 64, SENTINEL);
        shmem_barrier_all();
        int rc = shmem_fcollectmem(SHMEM_TEAM_WORLD, dbuf, sbuf, n);
        CHECK(rc == 0, "shmem_fcollectmem returned %d", rc);
        for (int p = 0; p < npes; ++p) {
            long bad = test_verify(dbuf + (size_t)p * n, n, seed_of(c, p));
            CHECK(bad < 0, "shmem_fcollectmem(%zu): byte %ld of PE %d wrong", n, bad, p);
        }
        long bad = first_not(dbuf + n * (size_t)npes, 64, SENTINEL);
        CHECK(bad < 0, "shmem_fcollectmem(%zu): byte %ld after dest written", n, bad);
    }
}

/* ------------------------------------------------------------------ alltoall, alltoalls */

#define DEF_ALLTOALL(T, N)                                                                        \
    static void test_alltoall_##N(void)                                                           \
    {                                                                                             \
        static const size_t counts[] = {0, 1, 5, 3000};                                           \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                      \
            const size_t n = counts[ci];                                                          \
            const uint64_t c = case_counter++;                                                    \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                     \
            for (int j = 0; j < npes; ++j) {                                                      \
                for (size_t i = 0; i < n; ++i) {                                                  \
                    s[(size_t)j * n + i] = VAL(T, a2a_seed(c, me, j), i);                         \
                }                                                                                 \
            }                                                                                     \
            set_bytes(d, (n * (size_t)npes + 4) * sizeof(T), SENTINEL);                           \
            shmem_barrier_all();                                                                  \
            int rc = shmem_##N##_alltoall(SHMEM_TEAM_WORLD, d, s, n);                             \
            CHECK(rc == 0, "shmem_" #N "_alltoall returned %d", rc);                              \
            for (int j = 0; j < npes; ++j) {                                                      \
                for (size_t i = 0; i < n; ++i) {                                                  \
                    CHECK(d[(size_t)j * n + i] == VAL(T, a2a_seed(c, j, me), i),                  \
                          "shmem_" #N "_alltoall(%zu): element %zu from PE %d wrong", n, i, j);   \
                }                                                                                 \
            }                                                                                     \
            long bad = first_not(d + n * (size_t)npes, 4 * sizeof(T), SENTINEL);                  \
            CHECK(bad < 0, "shmem_" #N "_alltoall(%zu): byte %ld after dest written", n, bad);    \
        }                                                                                         \
    }                                                                                             \
    static void test_alltoalls_##N(void)                                                          \
    {                                                                                             \
        static const size_t counts[] = {0, 1, 5, 100};                                            \
        for (ptrdiff_t dst = 1; dst <= 3; dst += 2) {                                             \
            for (ptrdiff_t sst = 1; sst <= 3; sst += 2) {                                         \
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {              \
                    const size_t n = counts[ci];                                                  \
                    const uint64_t c = case_counter++;                                            \
                    T *s = (T *)sbuf, *d = (T *)dbuf;                                             \
                    const size_t span = n * (size_t)npes * (size_t)dst;                           \
                    for (size_t k = 0; k < n * (size_t)npes * (size_t)sst; ++k) {                 \
                        s[k] = (T)-1;                                                             \
                    }                                                                             \
                    for (int j = 0; j < npes; ++j) {                                              \
                        for (size_t i = 0; i < n; ++i) {                                          \
                            s[((size_t)j * n + i) * (size_t)sst] = VAL(T, a2a_seed(c, me, j), i); \
                        }                                                                         \
                    }                                                                             \
                    set_bytes(d, (span + 4) * sizeof(T), SENTINEL);                               \
                    shmem_barrier_all();                                                          \
                    int rc = shmem_##N##_alltoalls(SHMEM_TEAM_WORLD, d, s, dst, sst, n);          \
                    CHECK(rc == 0, "shmem_" #N "_alltoalls returned %d", rc);                     \
                    for (int j = 0; j < npes; ++j) {                                              \
                        for (size_t i = 0; i < n; ++i) {                                          \
                            const size_t at = ((size_t)j * n + i) * (size_t)dst;                  \
                            CHECK(d[at] == VAL(T, a2a_seed(c, j, me), i),                         \
                                  "shmem_" #N                                                     \
                                  "_alltoalls(dst %td, sst %td, %zu): element %zu "               \
                                  "from PE %d wrong",                                             \
                                  dst, sst, n, i, j);                                             \
                            if (dst > 1) {                                                        \
                                long bad = first_not(d + at + 1, (size_t)(dst - 1) * sizeof(T),   \
                                                     SENTINEL);                                   \
                                CHECK(bad < 0,                                                    \
                                      "shmem_" #N                                                 \
                                      "_alltoalls(dst %td, sst %td, %zu): "                       \
                                      "gap after dest element %zu was written",                   \
                                      dst, sst, n, at);                                           \
                            }                                                                     \
                        }                                                                         \
                    }                                                                             \
                    long bad = first_not(d + span, 4 * sizeof(T), SENTINEL);                      \
                    CHECK(bad < 0,                                                                \
                          "shmem_" #N                                                             \
                          "_alltoalls(dst %td, sst %td, %zu): byte %ld "                          \
                          "after dest written",                                                   \
                          dst, sst, n, bad);                                                      \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
COLL_TYPES(DEF_ALLTOALL)

static void test_alltoallmem(void)
{
    static const size_t counts[] = {0, 1, 13, 4099};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        const size_t n = counts[ci];
        const uint64_t c = case_counter++;
        for (int j = 0; j < npes; ++j) {
            test_fill(sbuf + (size_t)j * n, n, a2a_seed(c, me, j));
        }
        set_bytes(dbuf, n * (size_t)npes + 64, SENTINEL);
        shmem_barrier_all();
        int rc = shmem_alltoallmem(SHMEM_TEAM_WORLD, dbuf, sbuf, n);
        CHECK(rc == 0, "shmem_alltoallmem returned %d", rc);
        for (int j = 0; j < npes; ++j) {
            long bad = test_verify(dbuf + (size_t)j * n, n, a2a_seed(c, j, me));
            CHECK(bad < 0, "shmem_alltoallmem(%zu): byte %ld from PE %d wrong", n, bad, j);
        }
        long bad = first_not(dbuf + n * (size_t)npes, 64, SENTINEL);
        CHECK(bad < 0, "shmem_alltoallmem(%zu): byte %ld after dest written", n, bad);
    }
    for (ptrdiff_t dst = 1; dst <= 3; dst += 2) {
        for (ptrdiff_t sst = 1; sst <= 3; sst += 2) {
            const size_t n = 37;
            const uint64_t c = case_counter++;
            const size_t span = n * (size_t)npes * (size_t)dst;
            set_bytes(sbuf, n * (size_t)npes * (size_t)sst, 0x11);
            for (int j = 0; j < npes; ++j) {
                for (size_t i = 0; i < n; ++i) {
                    sbuf[((size_t)j * n + i) * (size_t)sst] =
                        (unsigned char)test_word(a2a_seed(c, me, j), i);
                }
            }
            set_bytes(dbuf, span + 64, SENTINEL);
            shmem_barrier_all();
            int rc = shmem_alltoallsmem(SHMEM_TEAM_WORLD, dbuf, sbuf, dst, sst, n);
            CHECK(rc == 0, "shmem_alltoallsmem returned %d", rc);
            for (int j = 0; j < npes; ++j) {
                for (size_t i = 0; i < n; ++i) {
                    const size_t at = ((size_t)j * n + i) * (size_t)dst;
                    CHECK(dbuf[at] == (unsigned char)test_word(a2a_seed(c, j, me), i),
                          "shmem_alltoallsmem(dst %td, sst %td): byte %zu from PE %d wrong", dst,
                          sst, i, j);
                    for (ptrdiff_t g = 1; g < dst; ++g) {
                        CHECK(dbuf[at + (size_t)g] == SENTINEL,
                              "shmem_alltoallsmem(dst %td, sst %td): gap byte %zu written", dst,
                              sst, at + (size_t)g);
                    }
                }
            }
            long bad = first_not(dbuf + span, 64, SENTINEL);
            CHECK(bad < 0, "shmem_alltoallsmem(dst %td, sst %td): byte %ld after dest written", dst,
                  sst, bad);
        }
    }
}

#endif /* SHMEM_TEST_V15 */

/* ================================================================== reductions: values */

/*
 * Values: GEN_<kind>(T, w) for a random word w. Each kind keeps the result of
 * its operation exact and independent of the order of evaluation.
 */
static const double prod_flt_vals[6] = {-2.0, -1.0, -0.5, 0.5, 1.0, 2.0};
static const int prod_int_vals[4] = {-2, -1, 1, 2};
static const int prod_cpx_parts[4] = {-1, 0, 1, 2};

#define GEN_AND(T, w) ((T)((w) | ((w) >> 3) | ((w) >> 9))) /* mostly ones */
#define GEN_OR(T, w) ((T)((w) & ((w) >> 3) & ((w) >> 9)))  /* mostly zeros */
#define GEN_XOR(T, w) ((T)(w))
#define GEN_ANYINT(T, w) ((T)(w))                                  /* the whole range */
#define GEN_FLT(T, w) ((T)((long long)((w) % 2000001u) - 1000000)) /* integers, |v| <= 1e6 */
#define GEN_SMALLINT(T, w) ((T)((long long)((w) % 2001u) - 1000))  /* |v| <= 1000 */
#define GEN_PINT(T, w) ((T)prod_int_vals[(w) % 4u])
#define GEN_PFLT(T, w) ((T)prod_flt_vals[(w) % 6u])
#define GEN_CPXD(T, w)                                   \
    ((T)CMPLX((double)((long long)((w) % 2001u) - 1000), \
              (double)((long long)(((w) >> 24) % 2001u) - 1000)))
#define GEN_CPXF(T, w)                                   \
    ((T)CMPLXF((float)((long long)((w) % 2001u) - 1000), \
               (float)((long long)(((w) >> 24) % 2001u) - 1000)))
#define GEN_PCPXD(T, w) \
    ((T)CMPLX((double)prod_cpx_parts[(w) % 4u], (double)prod_cpx_parts[((w) >> 8) % 4u]))
#define GEN_PCPXF(T, w) \
    ((T)CMPLXF((float)prod_cpx_parts[(w) % 4u], (float)prod_cpx_parts[((w) >> 8) % 4u]))

#define COMB_and(a, b) ((a) & (b))
#define COMB_or(a, b) ((a) | (b))
#define COMB_xor(a, b) ((a) ^ (b))
#define COMB_max(a, b) ((a) > (b) ? (a) : (b))
#define COMB_min(a, b) ((a) < (b) ? (a) : (b))
#define COMB_sum(a, b) ((a) + (b))
#define COMB_prod(a, b) ((a) * (b))

/** Seed of PE pe's source in reduction case c. */
static uint64_t red_seed(uint64_t c, int pe)
{
    return c * 1000003u + (uint64_t)pe;
}

/** A value of any reduction type, printed. */
#define SHOW(x) creall((long double _Complex)(x)), cimagl((long double _Complex)(x))

/* ================================================================== 1.5 team reductions */
#if SHMEM_TEST_V15

/*
 * DEF_REDUCE(T, N, OP, GEN): test shmem_N_OP_reduce with nreduce n, in place
 * or not. The expected value of element i is the OP-combination, in PE
 * order, of GEN(T, test_word(red_seed(c, p), i)) over the PEs p.
 */
#define DEF_REDUCE(T, N, OP, GEN)                                                                 \
    static void red_##N##_##OP(size_t n, int inplace)                                             \
    {                                                                                             \
        const uint64_t c = case_counter++;                                                        \
        T *s = (T *)sbuf;                                                                         \
        T *d = inplace ? s : (T *)dbuf;                                                           \
        T *e = (T *)ebuf;                                                                         \
        for (size_t i = 0; i < n; ++i) {                                                          \
            for (int p = 0; p < npes; ++p) {                                                      \
                const uint64_t w = test_word(red_seed(c, p), i);                                  \
                const T v = GEN(T, w);                                                            \
                e[i] = p == 0 ? v : (T)COMB_##OP(e[i], v);                                        \
            }                                                                                     \
            s[i] = GEN(T, test_word(red_seed(c, me), i));                                         \
        }                                                                                         \
        set_bytes(s + n, 4 * sizeof(T), SENTINEL);                                                \
        if (!inplace) {                                                                           \
            set_bytes(d, (n + 4) * sizeof(T), SENTINEL);                                          \
        }                                                                                         \
        shmem_barrier_all();                                                                      \
        int rc = shmem_##N##_##OP##_reduce(SHMEM_TEAM_WORLD, d, s, n);                            \
        CHECK(rc == 0, "shmem_" #N "_" #OP "_reduce returned %d", rc);                            \
        for (size_t i = 0; i < n; ++i) {                                                          \
            CHECK(d[i] == e[i],                                                                   \
                  "shmem_" #N "_" #OP                                                             \
                  "_reduce(nreduce %zu%s): element %zu is %.21Lg%+.21Lgi, "                       \
                  "expected %.21Lg%+.21Lgi",                                                      \
                  n, inplace ? ", in place" : "", i, SHOW(d[i]), SHOW(e[i]));                     \
        }                                                                                         \
        long bad = first_not(d + n, 4 * sizeof(T), SENTINEL);                                     \
        CHECK(bad < 0, "shmem_" #N "_" #OP "_reduce(nreduce %zu%s): byte %ld after dest written", \
              n, inplace ? ", in place" : "", bad);                                               \
        if (!inplace) {                                                                           \
            for (size_t i = 0; i < n; ++i) {                                                      \
                CHECK(s[i] == GEN(T, test_word(red_seed(c, me), i)),                              \
                      "shmem_" #N "_" #OP "_reduce(nreduce %zu): source element %zu changed", n,  \
                      i);                                                                         \
            }                                                                                     \
        }                                                                                         \
    }

/* Bitwise: TYPE, TYPENAME. */
#define RED_BIT_TYPES(X)             \
    X(unsigned char, uchar)          \
    X(unsigned short, ushort)        \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int8_t, int8)                  \
    X(int16_t, int16)                \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)              \
    X(size_t, size)
/* Max/min: TYPE, TYPENAME, generator. */
#define RED_CMP_TYPES(X)                  \
    X(char, char, GEN_ANYINT)             \
    X(signed char, schar, GEN_ANYINT)     \
    X(short, short, GEN_ANYINT)           \
    X(int, int, GEN_ANYINT)               \
    X(long, long, GEN_ANYINT)             \
    X(long long, longlong, GEN_ANYINT)    \
    X(ptrdiff_t, ptrdiff, GEN_ANYINT)     \
    X(unsigned char, uchar, GEN_ANYINT)   \
    X(unsigned short, ushort, GEN_ANYINT) \
    X(unsigned int, uint, GEN_ANYINT)     \
    X(unsigned long, ulong, GEN_ANYINT)   \
    X(int8_t, int8, GEN_ANYINT)           \
    X(uint64_t, uint64, GEN_ANYINT)       \
    X(size_t, size, GEN_ANYINT)           \
    X(float, float, GEN_FLT)              \
    X(double, double, GEN_FLT)            \
    X(long double, longdouble, GEN_FLT)
/* Sum/prod: TYPE, TYPENAME, sum generator, prod generator. Unsigned types
 * without integer promotion take any value (they wrap); signed ones stay small. */
#define RED_ARITH_TYPES(X)                            \
    X(short, short, GEN_SMALLINT, GEN_PINT)           \
    X(int, int, GEN_SMALLINT, GEN_PINT)               \
    X(long, long, GEN_SMALLINT, GEN_PINT)             \
    X(long long, longlong, GEN_SMALLINT, GEN_PINT)    \
    X(ptrdiff_t, ptrdiff, GEN_SMALLINT, GEN_PINT)     \
    X(signed char, schar, GEN_SMALLINT, GEN_PINT)     \
    X(unsigned int, uint, GEN_ANYINT, GEN_ANYINT)     \
    X(unsigned long, ulong, GEN_ANYINT, GEN_ANYINT)   \
    X(uint64_t, uint64, GEN_ANYINT, GEN_ANYINT)       \
    X(size_t, size, GEN_ANYINT, GEN_ANYINT)           \
    X(float, float, GEN_FLT, GEN_PFLT)                \
    X(double, double, GEN_FLT, GEN_PFLT)              \
    X(long double, longdouble, GEN_FLT, GEN_PFLT)     \
    X(double _Complex, complexd, GEN_CPXD, GEN_PCPXD) \
    X(float _Complex, complexf, GEN_CPXF, GEN_PCPXF)

#define DEF_RED_BIT(T, N)          \
    DEF_REDUCE(T, N, and, GEN_AND) \
    DEF_REDUCE(T, N, or, GEN_OR)   \
    DEF_REDUCE(T, N, xor, GEN_XOR)
#define DEF_RED_CMP(T, N, G) \
    DEF_REDUCE(T, N, max, G) \
    DEF_REDUCE(T, N, min, G)
#define DEF_RED_ARITH(T, N, GS, GP) \
    DEF_REDUCE(T, N, sum, GS)       \
    DEF_REDUCE(T, N, prod, GP)
RED_BIT_TYPES(DEF_RED_BIT)
RED_CMP_TYPES(DEF_RED_CMP)
RED_ARITH_TYPES(DEF_RED_ARITH)

#define CALL_RED_BIT(T, N) \
    red_##N##_and(n, ip);  \
    red_##N##_or(n, ip);   \
    red_##N##_xor(n, ip);
#define CALL_RED_CMP(T, N, G) \
    red_##N##_max(n, ip);     \
    red_##N##_min(n, ip);
#define CALL_RED_ARITH(T, N, GS, GP) \
    red_##N##_sum(n, ip);            \
    red_##N##_prod(n, ip);

static void test_reductions(void)
{
    static const size_t counts[] = {1, 7, 100000};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        const size_t n = counts[ci];
        for (int ip = 0; ip < 2; ++ip) {
            RED_BIT_TYPES(CALL_RED_BIT)
            RED_CMP_TYPES(CALL_RED_CMP)
            RED_ARITH_TYPES(CALL_RED_ARITH)
        }
    }
}

/* ------------------------------------------------------------------ team_sync, barrier_all */

/** Loops of synchronizations; slots[2][npes] on the heap. */
static void test_sync_loops(void)
{
    long *slots = (long *)shmem_calloc(2 * (size_t)npes, sizeof(long));
    CHECK(slots != NULL, "shmem_calloc of the sync slots failed");
    shmem_barrier_all(); /* every PE's zeroes are in place before anyone writes */
    for (int k = 0; k < 200; ++k) {
        long *row = slots + (k % 2) * npes;
        const int team_sync = k % 2;
        for (int p = 0; p < npes; ++p) {
            shmem_long_p(&row[me], (long)k + 1, (me + p) % npes);
        }
        if (team_sync) {
            shmem_quiet(); /* team_sync does not complete puts */
            int rc = shmem_team_sync(SHMEM_TEAM_WORLD);
            CHECK(rc == 0, "shmem_team_sync returned %d", rc);
        } else {
            shmem_barrier_all();
        }
        for (int p = 0; p < npes; ++p) {
            CHECK(row[p] == (long)k + 1, "after %s #%d: PE %d's value is %ld, expected %d",
                  team_sync ? "shmem_quiet + shmem_team_sync" : "shmem_barrier_all", k, p, row[p],
                  k + 1);
        }
    }
    shmem_barrier_all();
    shmem_free(slots);
}

#endif /* SHMEM_TEST_V15 */

/* ================================================================== active-set collectives */

#define MAXOF(a, b) ((a) > (b) ? (a) : (b))
#define PSYNC_LEN                                                        \
    MAXOF(MAXOF(MAXOF(SHMEM_BARRIER_SYNC_SIZE, SHMEM_BCAST_SYNC_SIZE),   \
                MAXOF(SHMEM_COLLECT_SYNC_SIZE, SHMEM_REDUCE_SYNC_SIZE)), \
          MAXOF(SHMEM_ALLTOALL_SYNC_SIZE, SHMEM_ALLTOALLS_SYNC_SIZE))
static long psync_bar[PSYNC_LEN];
static long psync_coll[PSYNC_LEN];
static long psync_red[PSYNC_LEN];

/** The active set of the current tests, and this PE's place in it (-1: not in it). */
static int as_start, as_logstride, as_size, as_me;
static int as_pe(int i)
{
    return as_start + i * (1 << as_logstride);
}
static const char *as_name;

static void set_active_set(int start, int logstride, int size, const char *name)
{
    as_start = start;
    as_logstride = logstride;
    as_size = size;
    as_name = name;
    as_me = -1;
    for (int i = 0; i < size; ++i) {
        if (as_pe(i) == me) {
            as_me = i;
        }
    }
}

static void test_as_barrier(void)
{
    long *slots = (long *)shmem_calloc(2 * (size_t)npes, sizeof(long));
    CHECK(slots != NULL, "shmem_calloc failed");
    shmem_barrier_all(); /* every PE's zeroes are in place before anyone writes */
    if (as_me >= 0) {
        for (int k = 0; k < 100; ++k) {
            long *row = slots + (k % 2) * npes;
            for (int i = 0; i < as_size; ++i) {
                shmem_long_p(&row[me], (long)k + 1, as_pe((as_me + i) % as_size));
            }
            shmem_barrier(as_start, as_logstride, as_size, psync_bar);
            for (int i = 0; i < as_size; ++i) {
                CHECK(row[as_pe(i)] == (long)k + 1,
                      "shmem_barrier (%s) #%d: value of PE %d is %ld, expected %d", as_name, k,
                      as_pe(i), row[as_pe(i)], k + 1);
            }
        }
    }
    shmem_barrier_all();
    for (int p = 0; p < npes; ++p) {
        const int in_set = (p - as_start) >= 0 && ((p - as_start) % (1 << as_logstride)) == 0 &&
                           (p - as_start) / (1 << as_logstride) < as_size;
        if (!in_set) {
            CHECK(slots[p] == 0 && slots[npes + p] == 0,
                  "shmem_barrier (%s): a slot of PE %d, not in the set, was written", as_name, p);
        }
    }
    shmem_free(slots);
}

#define DEF_AS_COLL(BITS, T)                                                                       \
    static void test_as_bcast##BITS(void)                                                          \
    {                                                                                              \
        static const size_t counts[] = {0, 1, 7, 1000};                                            \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                       \
            for (int ri = 0; ri < 2; ++ri) {                                                       \
                const size_t n = counts[ci];                                                       \
                const int root = ri == 0 ? 0 : as_size - 1; /* index in the active set */          \
                const uint64_t c = case_counter++;                                                 \
                T *s = (T *)sbuf, *d = (T *)dbuf;                                                  \
                for (size_t i = 0; i < n; ++i) {                                                   \
                    s[i] = VAL(T, seed_of(c, me), i);                                              \
                }                                                                                  \
                set_bytes(d, (n + 4) * sizeof(T), SENTINEL);                                       \
                shmem_barrier_all();                                                               \
                if (as_me < 0) {                                                                   \
                    continue;                                                                      \
                }                                                                                  \
                shmem_broadcast##BITS(d, s, n, root, as_start, as_logstride, as_size, psync_coll); \
                if (as_me == root) {                                                               \
                    long bad = first_not(d, (n + 4) * sizeof(T), SENTINEL);                        \
                    CHECK(bad < 0,                                                                 \
                          "shmem_broadcast" #BITS                                                  \
                          " (%s, %zu, root %d): dest byte %ld "                                    \
                          "was written on PE_root",                                                \
                          as_name, n, root, bad);                                                  \
                } else {                                                                           \
                    for (size_t i = 0; i < n; ++i) {                                               \
                        CHECK(d[i] == VAL(T, seed_of(c, as_pe(root)), i),                          \
                              "shmem_broadcast" #BITS " (%s, %zu, root %d): element %zu wrong",    \
                              as_name, n, root, i);                                                \
                    }                                                                              \
                    long bad = first_not(d + n, 4 * sizeof(T), SENTINEL);                          \
                    CHECK(bad < 0,                                                                 \
                          "shmem_broadcast" #BITS                                                  \
                          " (%s, %zu): byte %ld after dest "                                       \
                          "written",                                                               \
                          as_name, n, bad);                                                        \
                }                                                                                  \
                for (size_t i = 0; i < n; ++i) {                                                   \
                    CHECK(s[i] == VAL(T, seed_of(c, me), i),                                       \
                          "shmem_broadcast" #BITS " (%s): source element %zu changed", as_name,    \
                          i);                                                                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void test_as_collect##BITS(void)                                                        \
    {                                                                                              \
        for (int v = 0; v < COLLECT_VARIANTS; ++v) {                                               \
            const uint64_t c = case_counter++;                                                     \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                      \
            size_t total = 0;                                                                      \
            for (int i = 0; i < as_size; ++i) {                                                    \
                total += collect_count(as_pe(i), v);                                               \
            }                                                                                      \
            const size_t mine = collect_count(me, v);                                              \
            for (size_t i = 0; i < mine; ++i) {                                                    \
                s[i] = VAL(T, seed_of(c, me), i);                                                  \
            }                                                                                      \
            set_bytes(d, (total + 4) * sizeof(T), SENTINEL);                                       \
            shmem_barrier_all();                                                                   \
            if (as_me < 0) {                                                                       \
                continue;                                                                          \
            }                                                                                      \
            shmem_collect##BITS(d, s, mine, as_start, as_logstride, as_size, psync_coll);          \
            size_t at = 0;                                                                         \
            for (int m = 0; m < as_size; ++m) {                                                    \
                for (size_t i = 0; i < collect_count(as_pe(m), v); ++i, ++at) {                    \
                    CHECK(d[at] == VAL(T, seed_of(c, as_pe(m)), i),                                \
                          "shmem_collect" #BITS " (%s, variant %d): element %zu of PE %d wrong",   \
                          as_name, v, i, as_pe(m));                                                \
                }                                                                                  \
            }                                                                                      \
            long bad = first_not(d + total, 4 * sizeof(T), SENTINEL);                              \
            CHECK(bad < 0, "shmem_collect" #BITS " (%s, variant %d): byte %ld after dest written", \
                  as_name, v, bad);                                                                \
        }                                                                                          \
    }                                                                                              \
    static void test_as_fcollect##BITS(void)                                                       \
    {                                                                                              \
        static const size_t counts[] = {0, 1, 7, 1000};                                            \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                       \
            const size_t n = counts[ci];                                                           \
            const uint64_t c = case_counter++;                                                     \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                      \
            for (size_t i = 0; i < n; ++i) {                                                       \
                s[i] = VAL(T, seed_of(c, me), i);                                                  \
            }                                                                                      \
            set_bytes(d, (n * (size_t)as_size + 4) * sizeof(T), SENTINEL);                         \
            shmem_barrier_all();                                                                   \
            if (as_me < 0) {                                                                       \
                continue;                                                                          \
            }                                                                                      \
            shmem_fcollect##BITS(d, s, n, as_start, as_logstride, as_size, psync_coll);            \
            for (int m = 0; m < as_size; ++m) {                                                    \
                for (size_t i = 0; i < n; ++i) {                                                   \
                    CHECK(d[(size_t)m * n + i] == VAL(T, seed_of(c, as_pe(m)), i),                 \
                          "shmem_fcollect" #BITS " (%s, %zu): element %zu of PE %d wrong",         \
                          as_name, n, i, as_pe(m));                                                \
                }                                                                                  \
            }                                                                                      \
            long bad = first_not(d + n * (size_t)as_size, 4 * sizeof(T), SENTINEL);                \
            CHECK(bad < 0, "shmem_fcollect" #BITS " (%s, %zu): byte %ld after dest written",       \
                  as_name, n, bad);                                                                \
        }                                                                                          \
    }                                                                                              \
    static void test_as_alltoall##BITS(void)                                                       \
    {                                                                                              \
        static const size_t counts[] = {0, 1, 5, 500};                                             \
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {                       \
            const size_t n = counts[ci];                                                           \
            const uint64_t c = case_counter++;                                                     \
            T *s = (T *)sbuf, *d = (T *)dbuf;                                                      \
            for (int m = 0; m < as_size; ++m) {                                                    \
                for (size_t i = 0; i < n; ++i) {                                                   \
                    s[(size_t)m * n + i] = VAL(T, a2a_seed(c, me, as_pe(m)), i);                   \
                }                                                                                  \
            }                                                                                      \
            set_bytes(d, (n * (size_t)as_size + 4) * sizeof(T), SENTINEL);                         \
            shmem_barrier_all();                                                                   \
            if (as_me < 0) {                                                                       \
                continue;                                                                          \
            }                                                                                      \
            shmem_alltoall##BITS(d, s, n, as_start, as_logstride, as_size, psync_coll);            \
            for (int m = 0; m < as_size; ++m) {                                                    \
                for (size_t i = 0; i < n; ++i) {                                                   \
                    CHECK(d[(size_t)m * n + i] == VAL(T, a2a_seed(c, as_pe(m), me), i),            \
                          "shmem_alltoall" #BITS " (%s, %zu): element %zu from PE %d wrong",       \
                          as_name, n, i, as_pe(m));                                                \
                }                                                                                  \
            }                                                                                      \
            long bad = first_not(d + n * (size_t)as_size, 4 * sizeof(T), SENTINEL);                \
            CHECK(bad < 0, "shmem_alltoall" #BITS " (%s, %zu): byte %ld after dest written",       \
                  as_name, n, bad);                                                                \
        }                                                                                          \
        for (ptrdiff_t dst = 1; dst <= 3; dst += 2) {                                              \
            for (ptrdiff_t sst = 1; sst <= 3; sst += 2) {                                          \
                for (size_t n = 1; n <= 5; n += 4) {                                               \
                    const uint64_t c = case_counter++;                                             \
                    T *s = (T *)sbuf, *d = (T *)dbuf;                                              \
                    const size_t span = n * (size_t)as_size * (size_t)dst;                         \
                    for (size_t k = 0; k < n * (size_t)as_size * (size_t)sst; ++k) {               \
                        s[k] = (T)-1;                                                              \
                    }                                                                              \
                    for (int m = 0; m < as_size; ++m) {                                            \
                        for (size_t i = 0; i < n; ++i) {                                           \
                            s[((size_t)m * n + i) * (size_t)sst] =                                 \
                                VAL(T, a2a_seed(c, me, as_pe(m)), i);                              \
                        }                                                                          \
                    }                                                                              \
                    set_bytes(d, (span + 4) * sizeof(T), SENTINEL);                                \
                    shmem_barrier_all();                                                           \
                    if (as_me < 0) {                                                               \
                        continue;                                                                  \
                    }                                                                              \
                    shmem_alltoalls##BITS(d, s, dst, sst, n, as_start, as_logstride, as_size,      \
                                          psync_coll);                                             \
                    for (int m = 0; m < as_size; ++m) {                                            \
                        for (size_t i = 0; i < n; ++i) {                                           \
                            const size_t at = ((size_t)m * n + i) * (size_t)dst;                   \
                            CHECK(d[at] == VAL(T, a2a_seed(c, as_pe(m), me), i),                   \
                                  "shmem_alltoalls" #BITS                                          \
                                  " (%s, dst %td, sst %td, %zu): element "                         \
                                  "%zu from PE %d wrong",                                          \
                                  as_name, dst, sst, n, i, as_pe(m));                              \
                            long bad =                                                             \
                                first_not(d + at + 1, (size_t)(dst - 1) * sizeof(T), SENTINEL);    \
                            CHECK(bad < 0,                                                         \
                                  "shmem_alltoalls" #BITS                                          \
                                  " (%s, dst %td, sst %td): gap "                                  \
                                  "after dest element %zu written",                                \
                                  as_name, dst, sst, at);                                          \
                        }                                                                          \
                    }                                                                              \
                    long bad = first_not(d + span, 4 * sizeof(T), SENTINEL);                       \
                    CHECK(bad < 0,                                                                 \
                          "shmem_alltoalls" #BITS                                                  \
                          " (%s, dst %td, sst %td): byte %ld "                                     \
                          "after dest written",                                                    \
                          as_name, dst, sst, bad);                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_AS_COLL(32, uint32_t)
DEF_AS_COLL(64, uint64_t)

/*
 * DEF_TO_ALL(T, N, OP, GEN): shmem_N_OP_to_all over the current active set,
 * nreduce n, in place or not; the expected values combine the members' sources.
 */
#define DEF_TO_ALL(T, N, OP, GEN)                                                                  \
    static void to_all_##N##_##OP(int n, int inplace)                                              \
    {                                                                                              \
        const uint64_t c = case_counter++;                                                         \
        T *s = (T *)sbuf;                                                                          \
        T *d = inplace ? s : (T *)dbuf;                                                            \
        T *e = (T *)ebuf;                                                                          \
        for (int i = 0; i < n; ++i) {                                                              \
            for (int m = 0; m < as_size; ++m) {                                                    \
                const T v = GEN(T, test_word(red_seed(c, as_pe(m)), (uint64_t)i));                 \
                e[i] = m == 0 ? v : (T)COMB_##OP(e[i], v);                                         \
            }                                                                                      \
            s[i] = GEN(T, test_word(red_seed(c, me), (uint64_t)i));                                \
        }                                                                                          \
        set_bytes(s + n, 4 * sizeof(T), SENTINEL);                                                 \
        if (!inplace) {                                                                            \
            set_bytes(d, ((size_t)n + 4) * sizeof(T), SENTINEL);                                   \
        }                                                                                          \
        shmem_barrier_all(); /* psync_red is free again, dest is ready */                          \
        if (as_me < 0) {                                                                           \
            return;                                                                                \
        }                                                                                          \
        shmem_##N##_##OP##_to_all(d, s, n, as_start, as_logstride, as_size, (T *)wrk, psync_red);  \
        for (int i = 0; i < n; ++i) {                                                              \
            CHECK(d[i] == e[i],                                                                    \
                  "shmem_" #N "_" #OP                                                              \
                  "_to_all(%s, nreduce %d%s): element %d is %.21Lg%+.21Lgi, "                      \
                  "expected %.21Lg%+.21Lgi",                                                       \
                  as_name, n, inplace ? ", in place" : "", i, SHOW(d[i]), SHOW(e[i]));             \
        }                                                                                          \
        long bad = first_not(d + n, 4 * sizeof(T), SENTINEL);                                      \
        CHECK(bad < 0, "shmem_" #N "_" #OP "_to_all(%s, nreduce %d): byte %ld after dest written", \
              as_name, n, bad);                                                                    \
        for (int m = 0; m < PSYNC_LEN; ++m) {                                                      \
            CHECK(psync_red[m] == SHMEM_SYNC_VALUE,                                                \
                  "shmem_" #N "_" #OP                                                              \
                  "_to_all: pSync[%d] is %ld after the call, not "                                 \
                  "SHMEM_SYNC_VALUE",                                                              \
                  m, psync_red[m]);                                                                \
        }                                                                                          \
    }

#define TO_ALL_INT_TYPES(X) \
    X(short, short)         \
    X(int, int)             \
    X(long, long)           \
    X(long long, longlong)
#define TO_ALL_FLT_TYPES(X) \
    X(float, float)         \
    X(double, double)       \
    X(long double, longdouble)

#define DEF_TO_ALL_INT(T, N)            \
    DEF_TO_ALL(T, N, and, GEN_AND)      \
    DEF_TO_ALL(T, N, or, GEN_OR)        \
    DEF_TO_ALL(T, N, xor, GEN_XOR)      \
    DEF_TO_ALL(T, N, max, GEN_ANYINT)   \
    DEF_TO_ALL(T, N, min, GEN_ANYINT)   \
    DEF_TO_ALL(T, N, sum, GEN_SMALLINT) \
    DEF_TO_ALL(T, N, prod, GEN_PINT)
#define DEF_TO_ALL_FLT(T, N)       \
    DEF_TO_ALL(T, N, max, GEN_FLT) \
    DEF_TO_ALL(T, N, min, GEN_FLT) \
    DEF_TO_ALL(T, N, sum, GEN_FLT) \
    DEF_TO_ALL(T, N, prod, GEN_PFLT)
TO_ALL_INT_TYPES(DEF_TO_ALL_INT)
TO_ALL_FLT_TYPES(DEF_TO_ALL_FLT)
DEF_TO_ALL(double _Complex, complexd, sum, GEN_CPXD)
DEF_TO_ALL(double _Complex, complexd, prod, GEN_PCPXD)
DEF_TO_ALL(float _Complex, complexf, sum, GEN_CPXF)
DEF_TO_ALL(float _Complex, complexf, prod, GEN_PCPXF)

#define CALL_TO_ALL_INT(T, N) \
    to_all_##N##_and(n, ip);  \
    to_all_##N##_or(n, ip);   \
    to_all_##N##_xor(n, ip);  \
    to_all_##N##_max(n, ip);  \
    to_all_##N##_min(n, ip);  \
    to_all_##N##_sum(n, ip);  \
    to_all_##N##_prod(n, ip);
#define CALL_TO_ALL_FLT(T, N) \
    to_all_##N##_max(n, ip);  \
    to_all_##N##_min(n, ip);  \
    to_all_##N##_sum(n, ip);  \
    to_all_##N##_prod(n, ip);

static void test_as_to_all(void)
{
    static const int counts[] = {1, 7, 10000};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        const int n = counts[ci];
        /* pWrk: max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements of the largest type */
        const size_t need =
            (size_t)MAXOF(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) * sizeof(long double _Complex);
        CHECK(need <= BUF_BYTES, "pWrk too small");
        for (int ip = 0; ip < 2; ++ip) {
            TO_ALL_INT_TYPES(CALL_TO_ALL_INT)
            TO_ALL_FLT_TYPES(CALL_TO_ALL_FLT)
            to_all_complexd_sum(n, ip);
            to_all_complexd_prod(n, ip);
            to_all_complexf_sum(n, ip);
            to_all_complexf_prod(n, ip);
        }
    }
}

static void run_active_set(int start, int logstride, int size, const char *name)
{
    set_active_set(start, logstride, size, name);
    if (me == 0) {
        printf("  active set %s: PE_start %d, logPE_stride %d, PE_size %d\n", name, start,
               logstride, size);
        fflush(stdout);
    }
    test_as_barrier();
    test_as_bcast32();
    test_as_bcast64();
    test_as_collect32();
    test_as_collect64();
    test_as_fcollect32();
    test_as_fcollect64();
    test_as_alltoall32();
    test_as_alltoall64();
    test_as_to_all();
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    sbuf = (unsigned char *)shmem_malloc(BUF_BYTES);
    dbuf = (unsigned char *)shmem_malloc(BUF_BYTES);
    wrk = (unsigned char *)shmem_malloc(BUF_BYTES);
    ebuf = (unsigned char *)malloc(BUF_BYTES);
    CHECK(sbuf != NULL && dbuf != NULL && wrk != NULL && ebuf != NULL, "allocation failed");
    for (int i = 0; i < PSYNC_LEN; ++i) {
        psync_bar[i] = SHMEM_SYNC_VALUE;
        psync_coll[i] = SHMEM_SYNC_VALUE;
        psync_red[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all(); /* every pSync is initialized before anyone uses it */

#if SHMEM_TEST_V15
    test_section("broadcast (team)");
    test_broadcastmem();
    test_broadcast_static();
#define CALL_BCAST(T, N) test_bcast_##N();
    COLL_TYPES(CALL_BCAST)
    test_bcast_back_to_back();
    test_reduce_back_to_back();
    test_section("collect, fcollect (team)");
#define CALL_COLLECT(T, N) \
    test_collect_##N();    \
    test_fcollect_##N();
    COLL_TYPES(CALL_COLLECT)
    test_collectmem();
    test_section("alltoall, alltoalls (team)");
#define CALL_ALLTOALL(T, N) \
    test_alltoall_##N();    \
    test_alltoalls_##N();
    COLL_TYPES(CALL_ALLTOALL)
    test_alltoallmem();
    test_section("reductions (team)");
    test_reductions();
    test_section("shmem_team_sync, shmem_barrier_all loops");
    test_sync_loops();
#endif

    test_section("active-set collectives (deprecated)");
    run_active_set(0, 0, npes, "world");
    if (npes >= 2) {
        run_active_set(0, 1, (npes + 1) / 2, "every other PE");
        run_active_set(1, 0, npes - 1, "PEs 1..npes-1");
    }

    shmem_barrier_all();
    shmem_free(wrk);
    shmem_free(dbuf);
    shmem_free(sbuf);
    free(ebuf);
    return test_pass("shmem_coll");
}
