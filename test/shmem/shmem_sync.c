/*
 * shmem_sync.c: point-to-point synchronization and signals.
 *
 * shmem_TYPENAME_wait_until and shmem_TYPENAME_test for every point-to-point
 * synchronization type and every comparison (SHMEM_CMP_EQ, NE, GT, GE, LT,
 * LE): the variable first holds a value that does not satisfy the condition
 * (shmem_test says 0), then the final one (wait_until returns, and the value
 * it returned on satisfies the condition). Each PE waits on its own variable,
 * which its left neighbour updates with atomic sets; half of the PEs start
 * waiting well before the update comes.
 *
 * OpenSHMEM 1.5: wait_until_all/any/some, test_all/any/some and their _vector
 * forms for every type, with a status array that excludes entries (an
 * excluded entry that satisfies the condition is never reported, an excluded
 * entry that never does is not waited for), empty sets (nelems 0, everything
 * excluded); put-with-signal (shmem_TYPENAME_put_signal, shmem_putSIZE_signal,
 * shmem_putmem_signal and the _nbi forms, the C11 form) with SHMEM_SIGNAL_SET
 * and SHMEM_SIGNAL_ADD, shmem_signal_wait_until and shmem_signal_fetch: the
 * data must be in place as soon as the signal is seen.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#include <unistd.h>

#define P2P_TYPES(X)                 \
    X(int, int)                      \
    X(long, long)                    \
    X(long long, longlong)           \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)              \
    X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

static int me, npes, right, left;

/* One comparison: the variable starts at start, is set to mid (condition
 * false), then to fin (condition true); the condition is "var CMP value". */
static const struct {
    int cmp;
    const char *name;
    long long start, mid, fin, value;
} cases[] = {
    {SHMEM_CMP_EQ, "EQ", 10, 15, 20, 20}, {SHMEM_CMP_NE, "NE", 10, 10, 11, 10},
    {SHMEM_CMP_GT, "GT", 10, 20, 21, 20}, {SHMEM_CMP_GE, "GE", 10, 19, 20, 20},
    {SHMEM_CMP_LT, "LT", 10, 5, 4, 5},    {SHMEM_CMP_LE, "LE", 10, 6, 5, 5},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int holds(long long v, int cmp, long long value)
{
    switch (cmp) {
        case SHMEM_CMP_EQ:
            return v == value;
        case SHMEM_CMP_NE:
            return v != value;
        case SHMEM_CMP_GT:
            return v > value;
        case SHMEM_CMP_GE:
            return v >= value;
        case SHMEM_CMP_LT:
            return v < value;
        case SHMEM_CMP_LE:
            return v <= value;
    }
    return 0;
}

/** Half of the PEs (alternating with the round) delay their update so that
 * their right neighbour is already waiting when it comes. */
static void maybe_delay(int round)
{
    if ((me + round) % 2 == 0) {
        usleep(3000);
    }
}

/*
 * wait_TYPENAME(var, where): wait_until and test for every comparison on
 * *var (symmetric, heap or static).
 */
#define X_WAIT(T, N)                                                                               \
    static void wait_##N(T *var, const char *where)                                                \
    {                                                                                              \
        for (size_t c = 0; c < NCASES; ++c) {                                                      \
            const int cmp = cases[c].cmp;                                                          \
            const T value = (T)cases[c].value;                                                     \
            *var = (T)cases[c].start;                                                              \
            shmem_barrier_all();                                                                   \
            CHECK(0 == shmem_##N##_test(var, cmp, value),                                          \
                  "shmem_" #N                                                                      \
                  "_test(%s %s) true on the "                                                      \
                  "start value",                                                                   \
                  where, cases[c].name);                                                           \
            shmem_##N##_atomic_set(var, (T)cases[c].mid, right);                                   \
            shmem_barrier_all();                                                                   \
            CHECK((long long)*var == cases[c].mid, "the update to the middle value was lost");     \
            CHECK(0 == shmem_##N##_test(var, cmp, value), "shmem_" #N "_test(%s %s) true on %lld", \
                  where, cases[c].name, cases[c].mid);                                             \
            shmem_barrier_all();                                                                   \
            maybe_delay((int)c);                                                                   \
            shmem_##N##_atomic_set(var, (T)cases[c].fin, right);                                   \
            shmem_##N##_wait_until(var, cmp, value);                                               \
            long long got = (long long)*var;                                                       \
            CHECK(holds(got, cmp, cases[c].value) && got == cases[c].fin,                          \
                  "shmem_" #N "_wait_until(%s %s %lld) returned on %lld", where, cases[c].name,    \
                  cases[c].value, got);                                                            \
            CHECK(1 == shmem_##N##_test(var, cmp, value),                                          \
                  "shmem_" #N                                                                      \
                  "_test(%s %s) false on "                                                         \
                  "%lld",                                                                          \
                  where, cases[c].name, got);                                                      \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
    }
P2P_TYPES(X_WAIT)

#if SHMEM_TEST_V15
#define K 6 /* variables per array */

/*
 * multi_TYPENAME(iv): the 1.5 multi-variable waits and tests on iv[0..K) (symmetric).
 * The left neighbour sets entries of iv; entries are set to 1 (or, for the
 * vector forms, to 10 + i).
 */
#define X_MULTI(T, N)                                                                              \
    static void multi_##N(T *iv)                                                                   \
    {                                                                                              \
        const int mask2[K] = {0, 0, 1, 0, 0, 0}; /* entry 2 excluded */                            \
        const int mask0[K] = {1, 0, 0, 0, 0, 0}; /* entry 0 excluded */                            \
        const int all[K] = {1, 1, 1, 1, 1, 1};                                                     \
        size_t idx[K];                                                                             \
        T cmpv[K];                                                                                 \
        for (int i = 0; i < K; ++i) {                                                              \
            cmpv[i] = (T)(10 + i);                                                                 \
        }                                                                                          \
        /* empty sets */                                                                           \
        CHECK(1 == shmem_##N##_test_all(iv, 0, NULL, SHMEM_CMP_EQ, (T)1), "test_all, 0 elements"); \
        CHECK(SIZE_MAX == shmem_##N##_test_any(iv, 0, NULL, SHMEM_CMP_EQ, (T)1),                   \
              "shmem_" #N "_test_any with 0 elements");                                            \
        CHECK(0 == shmem_##N##_test_some(iv, 0, idx, NULL, SHMEM_CMP_EQ, (T)1),                    \
              "shmem_" #N "_test_some with 0 elements");                                           \
        CHECK(SIZE_MAX == shmem_##N##_wait_until_any(iv, K, all, SHMEM_CMP_EQ, (T)0),              \
              "shmem_" #N "_wait_until_any with every entry excluded");                            \
        CHECK(0 == shmem_##N##_wait_until_some(iv, K, idx, all, SHMEM_CMP_EQ, (T)0),               \
              "shmem_" #N "_wait_until_some with every entry excluded");                           \
        shmem_##N##_wait_until_all(iv, K, all, SHMEM_CMP_EQ, (T)12345); /* returns at once */      \
        shmem_##N##_wait_until_all(iv, 0, NULL, SHMEM_CMP_EQ, (T)12345);                           \
        CHECK(SIZE_MAX == shmem_##N##_wait_until_any_vector(iv, K, all, SHMEM_CMP_EQ, cmpv),       \
              "shmem_" #N "_wait_until_any_vector with every entry excluded");                     \
        CHECK(0 == shmem_##N##_wait_until_some_vector(iv, K, idx, all, SHMEM_CMP_EQ, cmpv),        \
              "shmem_" #N "_wait_until_some_vector with every entry excluded");                    \
        shmem_##N##_wait_until_all_vector(iv, K, all, SHMEM_CMP_EQ, cmpv);                         \
        CHECK(1 == shmem_##N##_test_all_vector(iv, 0, NULL, SHMEM_CMP_EQ, cmpv),                   \
              "shmem_" #N "_test_all_vector with 0 elements");                                     \
        CHECK(SIZE_MAX == shmem_##N##_test_any_vector(iv, 0, NULL, SHMEM_CMP_EQ, cmpv),            \
              "shmem_" #N "_test_any_vector with 0 elements");                                     \
        CHECK(0 == shmem_##N##_test_some_vector(iv, 0, idx, NULL, SHMEM_CMP_EQ, cmpv),             \
              "shmem_" #N "_test_some_vector with 0 elements");                                    \
                                                                                                   \
        /* wait_until_all / test_all / test_any / test_some, entry 2 excluded */                   \
        for (int i = 0; i < K; ++i) {                                                              \
            iv[i] = (T)0;                                                                          \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_##N##_atomic_set(&iv[0], (T)1, right);                                               \
        shmem_##N##_atomic_set(&iv[1], (T)1, right);                                               \
        shmem_barrier_all();                                                                       \
        CHECK(0 == shmem_##N##_test_all(iv, K, mask2, SHMEM_CMP_EQ, (T)1),                         \
              "shmem_" #N "_test_all true with entries 3..5 unset");                               \
        size_t a = shmem_##N##_test_any(iv, K, mask0, SHMEM_CMP_EQ, (T)1);                         \
        CHECK(1 == a, "shmem_" #N "_test_any (entry 0 excluded) = %zu, expected 1", a);            \
        a = shmem_##N##_test_any(iv, K, NULL, SHMEM_CMP_EQ, (T)1);                                 \
        CHECK(0 == a || 1 == a, "shmem_" #N "_test_any = %zu, expected 0 or 1", a);                \
        CHECK(SIZE_MAX == shmem_##N##_test_any(iv, K, NULL, SHMEM_CMP_EQ, (T)7),                   \
              "shmem_" #N "_test_any found a 7");                                                  \
        size_t cnt = shmem_##N##_test_some(iv, K, idx, mask2, SHMEM_CMP_EQ, (T)1);                 \
        CHECK(2 == cnt && idx[0] + idx[1] == 1 && idx[0] * idx[1] == 0,                            \
              "shmem_" #N "_test_some: %zu entries, expected entries 0 and 1", cnt);               \
        cnt = shmem_##N##_test_some(iv, K, idx, mask0, SHMEM_CMP_NE, (T)0);                        \
        CHECK(1 == cnt && 1 == idx[0], "shmem_" #N "_test_some (entry 0 excluded): %zu entries",   \
              cnt);                                                                                \
        shmem_barrier_all();                                                                       \
        maybe_delay(0);                                                                            \
        for (int i = 3; i < K; ++i) {                                                              \
            shmem_##N##_atomic_set(&iv[i], (T)1, right);                                           \
        }                                                                                          \
        shmem_##N##_wait_until_all(iv, K, mask2, SHMEM_CMP_EQ, (T)1);                              \
        for (int i = 0; i < K; ++i) {                                                              \
            CHECK(iv[i] == (T)(i == 2 ? 0 : 1),                                                    \
                  "shmem_" #N                                                                      \
                  "_wait_until_all returned with entry "                                           \
                  "%d = %lld",                                                                     \
                  i, (long long)iv[i]);                                                            \
        }                                                                                          \
        CHECK(1 == shmem_##N##_test_all(iv, K, mask2, SHMEM_CMP_EQ, (T)1),                         \
              "shmem_" #N "_test_all false after wait_until_all");                                 \
        CHECK(0 == shmem_##N##_test_all(iv, K, NULL, SHMEM_CMP_EQ, (T)1),                          \
              "shmem_" #N "_test_all true with entry 2 unset (no status)");                        \
                                                                                                   \
        /* wait_until_any: excluded entry 0 satisfies the condition first, entry 4 later */        \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < K; ++i) {                                                              \
            iv[i] = (T)0;                                                                          \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_##N##_atomic_set(&iv[0], (T)1, right);                                               \
        shmem_barrier_all();                                                                       \
        maybe_delay(1);                                                                            \
        shmem_##N##_atomic_set(&iv[4], (T)1, right);                                               \
        a = shmem_##N##_wait_until_any(iv, K, mask0, SHMEM_CMP_EQ, (T)1);                          \
        CHECK(4 == a, "shmem_" #N "_wait_until_any (entry 0 excluded) returned %zu, expected 4",   \
              a);                                                                                  \
        CHECK(iv[4] == (T)1, "wait_until_any returned before entry 4 was set");                    \
                                                                                                   \
        /* wait_until_some: entries 1, 3, 5 set one by one; every call reports new ones */         \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < K; ++i) {                                                              \
            iv[i] = (T)0;                                                                          \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        for (int i = 1; i < K; i += 2) {                                                           \
            maybe_delay(i);                                                                        \
            shmem_##N##_atomic_set(&iv[i], (T)(5 + i), right);                                     \
        }                                                                                          \
        {                                                                                          \
            int st[K] = {0, 0, 0, 0, 0, 0};                                                        \
            int found = 0;                                                                         \
            while (found < 3) {                                                                    \
                cnt = shmem_##N##_wait_until_some(iv, K, idx, st, SHMEM_CMP_GT, (T)5);             \
                CHECK(cnt >= 1 && cnt <= (size_t)(3 - found),                                      \
                      "shmem_" #N                                                                  \
                      "_wait_until_some "                                                          \
                      "returned %zu with %d of 3 found",                                           \
                      cnt, found);                                                                 \
                for (size_t j = 0; j < cnt; ++j) {                                                 \
                    CHECK(idx[j] < K && 1 == idx[j] % 2 && 0 == st[idx[j]],                        \
                          "shmem_" #N "_wait_until_some reported entry %zu", idx[j]);              \
                    CHECK(iv[idx[j]] == (T)(5 + idx[j]), "entry %zu reported before it was set",   \
                          idx[j]);                                                                 \
                    st[idx[j]] = 1;                                                                \
                    ++found;                                                                       \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
                                                                                                   \
        /* vector forms: entry i waits for 10 + i; entry 2 excluded */                             \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < K; ++i) {                                                              \
            iv[i] = (T)0;                                                                          \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_##N##_atomic_set(&iv[1], (T)11, right);                                              \
        shmem_##N##_atomic_set(&iv[0], (T)99, right); /* not 10: no match */                       \
        shmem_barrier_all();                                                                       \
        CHECK(0 == shmem_##N##_test_all_vector(iv, K, mask2, SHMEM_CMP_EQ, cmpv),                  \
              "shmem_" #N "_test_all_vector true too early");                                      \
        a = shmem_##N##_test_any_vector(iv, K, NULL, SHMEM_CMP_EQ, cmpv);                          \
        CHECK(1 == a, "shmem_" #N "_test_any_vector = %zu, expected 1", a);                        \
        cnt = shmem_##N##_test_some_vector(iv, K, idx, NULL, SHMEM_CMP_GE, cmpv);                  \
        CHECK(2 == cnt && idx[0] + idx[1] == 1 && idx[0] * idx[1] == 0,                            \
              "shmem_" #N "_test_some_vector (GE): %zu entries, expected entries 0 and 1", cnt);   \
        a = shmem_##N##_wait_until_any_vector(iv, K, NULL, SHMEM_CMP_EQ, cmpv);                    \
        CHECK(1 == a, "shmem_" #N "_wait_until_any_vector = %zu, expected 1", a);                  \
        shmem_barrier_all();                                                                       \
        maybe_delay(2);                                                                            \
        shmem_##N##_atomic_set(&iv[0], (T)10, right);                                              \
        for (int i = 3; i < K; ++i) {                                                              \
            shmem_##N##_atomic_set(&iv[i], (T)(10 + i), right);                                    \
        }                                                                                          \
        shmem_##N##_wait_until_all_vector(iv, K, mask2, SHMEM_CMP_EQ, cmpv);                       \
        for (int i = 0; i < K; ++i) {                                                              \
            CHECK(iv[i] == (T)(i == 2 ? 0 : 10 + i),                                               \
                  "shmem_" #N                                                                      \
                  "_wait_until_all_vector "                                                        \
                  "returned with entry %d = %lld",                                                 \
                  i, (long long)iv[i]);                                                            \
        }                                                                                          \
        cnt = shmem_##N##_wait_until_some_vector(iv, K, idx, mask2, SHMEM_CMP_EQ, cmpv);           \
        CHECK(5 == cnt, "shmem_" #N "_wait_until_some_vector: %zu entries, expected 5", cnt);      \
        for (size_t j = 0; j < cnt; ++j) {                                                         \
            CHECK(idx[j] < K && 2 != idx[j], "shmem_" #N "_wait_until_some_vector reported %zu",   \
                  idx[j]);                                                                         \
        }                                                                                          \
        CHECK(1 == shmem_##N##_test_all_vector(iv, K, mask2, SHMEM_CMP_EQ, cmpv),                  \
              "shmem_" #N "_test_all_vector false at the end");                                    \
        shmem_barrier_all();                                                                       \
    }
P2P_TYPES(X_MULTI)

/* ---- signals ---- */

#define SIG_BYTES ((size_t)1 << 20)
static uint64_t st_sig;                                    /* a static signal word */
static _Alignas(16) unsigned char st_data[SIG_BYTES + 64]; /* a static data target */

typedef void (*psig_fn)(void *, const void *, size_t, uint64_t *, uint64_t, int, int);
/* the typed forms, behind the common signature */
static void long_ps(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe)
{
    shmem_long_put_signal(d, s, n, sig, v, op, pe);
}
static void long_ps_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe)
{
    shmem_long_put_signal_nbi(d, s, n, sig, v, op, pe);
}
static void double_ps_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op,
                          int pe)
{
    shmem_double_put_signal_nbi(d, s, n, sig, v, op, pe);
}
static void c11_ps(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe)
{
    shmem_put_signal((int *)d, (const int *)s, n, sig, v, op, pe);
}
static const struct {
    const char *name;
    size_t esize;
    psig_fn fn;
    int nbi;
} psig[] = {
    {"shmem_putmem_signal", 1, shmem_putmem_signal, 0},
    {"shmem_put8_signal", 1, shmem_put8_signal, 0},
    {"shmem_put16_signal", 2, shmem_put16_signal, 0},
    {"shmem_put32_signal", 4, shmem_put32_signal, 0},
    {"shmem_put64_signal", 8, shmem_put64_signal, 0},
    {"shmem_put128_signal", 16, shmem_put128_signal, 0},
    {"shmem_long_put_signal", sizeof(long), long_ps, 0},
    {"shmem_put_signal (C11, int)", sizeof(int), c11_ps, 0},
    {"shmem_putmem_signal_nbi", 1, shmem_putmem_signal_nbi, 1},
    {"shmem_put64_signal_nbi", 8, shmem_put64_signal_nbi, 1},
    {"shmem_put128_signal_nbi", 16, shmem_put128_signal_nbi, 1},
    {"shmem_long_put_signal_nbi", sizeof(long), long_ps_nbi, 1},
    {"shmem_double_put_signal_nbi", sizeof(double), double_ps_nbi, 1},
};
#define NPSIG (sizeof(psig) / sizeof(psig[0]))

/*
 * SHMEM_SIGNAL_SET around the ring: round r sends bytes of data and sets the
 * right neighbour's signal to a new value; the receiver waits for exactly that
 * value and checks the data at once (no barrier in between).
 */
static void signal_set(unsigned char *data, uint64_t *sig, const char *where)
{
    unsigned char *src = malloc(SIG_BYTES);
    CHECK(NULL != src, "malloc failed");
    const size_t sizes[] = {16, 4096, 65536, SIG_BYTES};
    uint64_t round = 0;
    *sig = 0;
    shmem_barrier_all();
    for (size_t f = 0; f < NPSIG; ++f) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
            ++round;
            size_t bytes = sizes[s];
            uint64_t seed = round * 1000 + (uint64_t)me;
            test_fill(src, bytes, seed);
            psig[f].fn(data, src, bytes / psig[f].esize, sig, round, SHMEM_SIGNAL_SET, right);
            if (psig[f].nbi) {
                shmem_quiet(); /* src is reused */
            }
            uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, round);
            CHECK(v == round, "%s: shmem_signal_wait_until returned %llu, expected %llu",
                  psig[f].name, (unsigned long long)v, (unsigned long long)round);
            long bad = test_verify(data, bytes, round * 1000 + (uint64_t)left);
            CHECK(bad < 0, "%s of %zu bytes into the %s: byte %ld not there when the signal was",
                  psig[f].name, bytes, where, bad);
            CHECK(shmem_signal_fetch(sig) == round, "shmem_signal_fetch: %llu, expected %llu",
                  (unsigned long long)shmem_signal_fetch(sig), (unsigned long long)round);
            shmem_barrier_all(); /* data is overwritten only after the check */
        }
    }
    free(src);
}

/*
 * SHMEM_SIGNAL_ADD: every PE (itself included) puts a block into its slot of
 * PE 0's data and adds 1 to PE 0's signal; PE 0 waits for the sum, then checks
 * every block. Rounds add on top of each other.
 */
static void signal_add(unsigned char *data, uint64_t *sig, const char *where)
{
    const size_t blk = 8192;
    CHECK((size_t)npes * blk <= SIG_BYTES, "too many PEs");
    unsigned char *src = malloc(blk);
    CHECK(NULL != src, "malloc failed");
    *sig = 0;
    shmem_barrier_all();
    for (int r = 0; r < 8; ++r) {
        size_t f = (size_t)r % NPSIG;
        uint64_t seed = 5000000 + (uint64_t)r * 1000 + (uint64_t)me;
        test_fill(src, blk, seed);
        psig[f].fn(data + (size_t)me * blk, src, blk / psig[f].esize, sig, 1, SHMEM_SIGNAL_ADD, 0);
        shmem_quiet();
        if (0 == me) {
            uint64_t want = (uint64_t)npes * (uint64_t)(r + 1);
            uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_GE, want);
            CHECK(v == want, "%s with SHMEM_SIGNAL_ADD: signal %llu, expected %llu", psig[f].name,
                  (unsigned long long)v, (unsigned long long)want);
            for (int p = 0; p < npes; ++p) {
                long bad = test_verify(data + (size_t)p * blk, blk,
                                       5000000 + (uint64_t)r * 1000 + (uint64_t)p);
                CHECK(bad < 0, "%s with SHMEM_SIGNAL_ADD into the %s: block of PE %d, byte %ld",
                      psig[f].name, where, p, bad);
            }
        }
        shmem_barrier_all();
    }
    if (0 == me) {
        CHECK(shmem_signal_fetch(sig) == (uint64_t)npes * 8, "final signal %llu",
              (unsigned long long)shmem_signal_fetch(sig));
    }
    free(src);
    shmem_barrier_all();
}

/* The signal word can also be waited on with shmem_uint64_wait_until. */
static void signal_plain_wait(uint64_t *sig)
{
    static long payload[4];
    long src[4] = {me, me + 1, me + 2, me + 3};
    *sig = 0;
    shmem_barrier_all();
    shmem_long_put_signal(payload, src, 4, sig, 77, SHMEM_SIGNAL_SET, right);
    shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, 77);
    CHECK(payload[0] == left && payload[3] == left + 3, "payload before the signal");
    shmem_barrier_all();
}
#endif /* SHMEM_TEST_V15 */

#define X_STATIC(T, N) static T st_##N;
P2P_TYPES(X_STATIC)
#if SHMEM_TEST_V15
#define X_STATIC_ARR(T, N) static T sta_##N[K];
P2P_TYPES(X_STATIC_ARR)
#endif

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;

    test_section("wait_until / test, every type and comparison, heap");
    {
        void *h = shmem_malloc(64);
        CHECK(NULL != h, "shmem_malloc failed");
#define X_RUN_WAIT_HEAP(T, N) wait_##N((T *)h, "heap");
        P2P_TYPES(X_RUN_WAIT_HEAP)
        shmem_free(h);
    }
    test_section("wait_until / test, every type and comparison, static");
#define X_RUN_WAIT_STATIC(T, N) wait_##N(&st_##N, "static");
    P2P_TYPES(X_RUN_WAIT_STATIC)

    /* The classic pattern: the variable updated by a put, not an atomic. */
    test_section("wait_until on a variable updated by shmem_int_p");
    {
        static int flag;
        for (int r = 1; r <= 50; ++r) {
            maybe_delay(r);
            shmem_int_p(&flag, r, right);
            shmem_int_wait_until(&flag, SHMEM_CMP_GE, r);
            CHECK(flag == r, "flag %d in round %d", flag, r);
            shmem_barrier_all();
        }
    }

#if SHMEM_TEST_V15
    test_section("wait_until_all/any/some, test_all/any/some and _vector (1.5), heap");
    {
        void *h = shmem_malloc(K * sizeof(long long));
        CHECK(NULL != h, "shmem_malloc failed");
#define X_RUN_MULTI_HEAP(T, N) multi_##N((T *)h);
        P2P_TYPES(X_RUN_MULTI_HEAP)
        shmem_free(h);
    }
    test_section("wait_until_all/any/some, test_all/any/some and _vector (1.5), static");
#define X_RUN_MULTI_STATIC(T, N) multi_##N(sta_##N);
    P2P_TYPES(X_RUN_MULTI_STATIC)

    test_section("put-with-signal, SHMEM_SIGNAL_SET (1.5)");
    {
        unsigned char *hd = shmem_malloc(SIG_BYTES + 64);
        uint64_t *hs = shmem_malloc(sizeof(uint64_t));
        CHECK(NULL != hd && NULL != hs, "shmem_malloc failed");
        signal_set(hd, hs, "heap");
        signal_set(st_data, &st_sig, "static array");
        signal_set(hd, &st_sig, "heap (static signal)");
        signal_set(st_data, hs, "static array (heap signal)");
        test_section("put-with-signal, SHMEM_SIGNAL_ADD (1.5)");
        signal_add(hd, hs, "heap");
        signal_add(st_data, &st_sig, "static array");
        signal_plain_wait(hs);
        shmem_free(hs);
        shmem_free(hd);
    }
#endif

    return test_pass("shmem_sync");
}
