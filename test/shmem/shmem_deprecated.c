/*
 * shmem_deprecated.c: the deprecated names that existing programs still call.
 *
 * start_pes(0) initializes; _my_pe and _num_pes agree with shmem_my_pe and
 * shmem_n_pes (and shmem_n_pes with the launcher's count, checked through a
 * collective count of the PEs). The old constants (_SHMEM_SYNC_VALUE, ...)
 * equal the new ones.
 * shmalloc (symmetric: the right neighbour's copy is written and read back),
 * shrealloc (keeps the contents when growing and shrinking, stays symmetric),
 * shmemalign (alignment of 64 and 4096, symmetric), shfree.
 * shmem_wait (waits while *ivar == cmp_value), shmem_wait_until (long) with
 * several comparisons, shmem_int_wait, shmem_longlong_wait: the writer sleeps
 * before writing, so a wait that returned too early sees the old value.
 * The 1.3 atomics with exact expected sequences on the right neighbour:
 * shmem_int/long/longlong_finc, _inc, _fadd, _add, _cswap (failing and
 * succeeding), _swap, _fetch, _set; shmem_float/double_swap, _fetch, _set;
 * concurrent shmem_long_finc and shmem_int_fadd on one counter of PE 0: total
 * exact, every fetched value seen exactly once.
 * The cache routines (no-ops on coherent machines) change nothing: the data
 * and RMA around them stay right.
 */
#include "shmem_test.h"

#include <time.h>

#define NINC 100

static int me, npes, right, left;

static long wait_long;
static int wait_int;
static long long wait_ll;
static long wait_until_long;
static int old_counter_int;
static long old_counter_long;
static long seen[64 * NINC * 2];

static void nap(long usec)
{
    struct timespec ts = {usec / 1000000, (usec % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void test_setup(void)
{
    CHECK(_my_pe() == shmem_my_pe(), "_my_pe() is %d, shmem_my_pe() %d", _my_pe(), shmem_my_pe());
    CHECK(_num_pes() == shmem_n_pes(), "_num_pes() is %d, shmem_n_pes() %d", _num_pes(),
          shmem_n_pes());
    CHECK(_my_pe() >= 0 && _my_pe() < _num_pes(), "_my_pe() %d out of 0..%d", _my_pe(),
          _num_pes() - 1);
    /* Every PE adds one on PE 0: the count is the number of PEs. */
    static long count;
    count = 0;
    shmem_barrier_all();
    shmem_long_add(&count, 1, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(count == npes, "%ld PEs reported in, _num_pes() says %d", count, npes);
    }
    CHECK(_SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE, "_SHMEM_SYNC_VALUE differs");
    CHECK(_SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE, "_SHMEM_BCAST_SYNC_SIZE differs");
    CHECK(_SHMEM_REDUCE_SYNC_SIZE == SHMEM_REDUCE_SYNC_SIZE, "_SHMEM_REDUCE_SYNC_SIZE differs");
    CHECK(_SHMEM_BARRIER_SYNC_SIZE == SHMEM_BARRIER_SYNC_SIZE, "_SHMEM_BARRIER_SYNC_SIZE differs");
    CHECK(_SHMEM_COLLECT_SYNC_SIZE == SHMEM_COLLECT_SYNC_SIZE, "_SHMEM_COLLECT_SYNC_SIZE differs");
    CHECK(_SHMEM_REDUCE_MIN_WRKDATA_SIZE == SHMEM_REDUCE_MIN_WRKDATA_SIZE,
          "_SHMEM_REDUCE_MIN_WRKDATA_SIZE differs");
    CHECK(
        _SHMEM_MAJOR_VERSION == SHMEM_MAJOR_VERSION && _SHMEM_MINOR_VERSION == SHMEM_MINOR_VERSION,
        "_SHMEM_MAJOR/MINOR_VERSION differ");
    CHECK(_SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_NE == SHMEM_CMP_NE &&
              _SHMEM_CMP_GT == SHMEM_CMP_GT && _SHMEM_CMP_GE == SHMEM_CMP_GE &&
              _SHMEM_CMP_LT == SHMEM_CMP_LT && _SHMEM_CMP_LE == SHMEM_CMP_LE,
          "_SHMEM_CMP_* differ");
    shmem_barrier_all();
}

/** The right neighbour's copy of p (n bytes) gets the pattern of seed; read back from there. */
static void check_symmetric(void *p, size_t n, uint64_t seed, const char *what)
{
    unsigned char *mine = (unsigned char *)malloc(n);
    unsigned char *back = (unsigned char *)malloc(n);
    CHECK(mine != NULL && back != NULL, "malloc failed");
    test_fill(mine, n, seed * 1024 + (uint64_t)me);
    shmem_putmem(p, mine, n, right);
    shmem_barrier_all();
    long bad = test_verify(p, n, seed * 1024 + (uint64_t)left);
    CHECK(bad < 0, "%s: byte %ld put by PE %d wrong", what, bad, left);
    shmem_getmem(back, p, n, right);
    CHECK(memcmp(back, mine, n) == 0, "%s: data read back from PE %d differs", what, right);
    shmem_barrier_all();
    free(back);
    free(mine);
}

static void test_memory(void)
{
    const size_t n = 100000;
    unsigned char *a = (unsigned char *)shmalloc(n);
    CHECK(a != NULL, "shmalloc(%zu) returned NULL", n);
    check_symmetric(a, n, 1, "shmalloc");

    /* shrealloc: grow, contents kept; shrink, contents kept */
    test_fill(a, n, 77 + (uint64_t)me);
    shmem_barrier_all();
    unsigned char *b = (unsigned char *)shrealloc(a, 4 * n);
    CHECK(b != NULL, "shrealloc to %zu returned NULL", 4 * n);
    long bad = test_verify(b, n, 77 + (uint64_t)me);
    CHECK(bad < 0, "shrealloc (grow) lost byte %ld", bad);
    shmem_barrier_all(); /* checked before the neighbour writes into it */
    check_symmetric(b, 4 * n, 2, "shrealloc (grow)");
    test_fill(b, 1000, 99 + (uint64_t)me);
    shmem_barrier_all();
    unsigned char *c = (unsigned char *)shrealloc(b, 1000);
    CHECK(c != NULL, "shrealloc to 1000 returned NULL");
    bad = test_verify(c, 1000, 99 + (uint64_t)me);
    CHECK(bad < 0, "shrealloc (shrink) lost byte %ld", bad);
    shmem_barrier_all();
    check_symmetric(c, 1000, 3, "shrealloc (shrink)");

    /* shmemalign */
    void *d = shmemalign(64, 1000);
    void *e = shmemalign(4096, 5000);
    CHECK(d != NULL && e != NULL, "shmemalign returned NULL");
    CHECK((uintptr_t)d % 64 == 0, "shmemalign(64) gave %p", d);
    CHECK((uintptr_t)e % 4096 == 0, "shmemalign(4096) gave %p", e);
    check_symmetric(d, 1000, 4, "shmemalign(64)");
    check_symmetric(e, 5000, 5, "shmemalign(4096)");

    shmem_barrier_all();
    shfree(e);
    shfree(d);
    shfree(c);
    /* After shfree the memory is reusable: a new block works. */
    long *f = (long *)shmalloc(8 * sizeof(long));
    CHECK(f != NULL, "shmalloc after shfree returned NULL");
    check_symmetric(f, 8 * sizeof(long), 6, "shmalloc after shfree");
    shmem_barrier_all();
    shfree(f);
}

static void test_wait(void)
{
    wait_long = 0;
    wait_int = 0;
    wait_ll = 0;
    wait_until_long = 0;
    shmem_barrier_all();
    /* Each PE writes its right neighbour's variables after a pause; waits return on the change. */
    nap(50000);
    shmem_long_p(&wait_long, 10 + me, right);
    shmem_quiet();
    shmem_wait(&wait_long, 0);
    CHECK(wait_long == 10 + left, "shmem_wait returned with %ld, expected %d", wait_long,
          10 + left);

    nap(20000);
    shmem_int_p(&wait_int, 20 + me, right);
    shmem_quiet();
    shmem_int_wait(&wait_int, 0);
    CHECK(wait_int == 20 + left, "shmem_int_wait returned with %d, expected %d", wait_int,
          20 + left);

    nap(20000);
    shmem_longlong_p(&wait_ll, 30 + me, right);
    shmem_quiet();
    shmem_longlong_wait(&wait_ll, 0);
    CHECK(wait_ll == 30 + left, "shmem_longlong_wait returned with %lld, expected %d", wait_ll,
          30 + left);

    /* shmem_wait_until: the writer counts up to 5, one atomic add at a time. */
    shmem_barrier_all();
    for (int k = 0; k < 5; ++k) {
        nap(5000);
        shmem_long_atomic_add(&wait_until_long, 1, right);
    }
    shmem_wait_until(&wait_until_long, SHMEM_CMP_GE, 3);
    CHECK(wait_until_long >= 3, "shmem_wait_until(GE 3) returned with %ld", wait_until_long);
    shmem_wait_until(&wait_until_long, SHMEM_CMP_EQ, 5);
    CHECK(wait_until_long == 5, "shmem_wait_until(EQ 5) returned with %ld", wait_until_long);
    shmem_wait_until(&wait_until_long, SHMEM_CMP_GT, 4);
    shmem_wait_until(&wait_until_long, SHMEM_CMP_NE, 0);
    shmem_wait_until(&wait_until_long, SHMEM_CMP_LE, 5);
    shmem_wait_until(&wait_until_long, SHMEM_CMP_LT, 6);
    CHECK(wait_until_long == 5, "after shmem_wait_until the value is %ld", wait_until_long);
    shmem_barrier_all();
}

/* Old atomics on this PE's slot at the right neighbour. */
static int *islot;
static long *lslot;
static long long *llslot;
static float *fslot;
static double *dslot;

#define OLD_STD_SEQUENCE(T, N, slot, FMT)                                                      \
    do {                                                                                       \
        T *p = &slot[me];                                                                      \
        shmem_##N##_set(p, (T)100, right);                                                     \
        T v = shmem_##N##_fetch(p, right);                                                     \
        CHECK(v == (T)100, "shmem_" #N "_fetch after _set gave " FMT, v);                      \
        v = shmem_##N##_finc(p, right);                                                        \
        CHECK(v == (T)100, "shmem_" #N "_finc returned " FMT ", expected 100", v);             \
        shmem_##N##_inc(p, right);                                                             \
        v = shmem_##N##_fadd(p, (T)10, right);                                                 \
        CHECK(v == (T)102, "shmem_" #N "_fadd returned " FMT ", expected 102", v);             \
        shmem_##N##_add(p, (T)-2, right);                                                      \
        v = shmem_##N##_cswap(p, (T)0, (T)1, right);                                           \
        CHECK(v == (T)110, "failing shmem_" #N "_cswap returned " FMT ", expected 110", v);    \
        v = shmem_##N##_cswap(p, (T)110, (T)7, right);                                         \
        CHECK(v == (T)110, "succeeding shmem_" #N "_cswap returned " FMT ", expected 110", v); \
        v = shmem_##N##_swap(p, (T)-5, right);                                                 \
        CHECK(v == (T)7, "shmem_" #N "_swap returned " FMT ", expected 7", v);                 \
        v = shmem_##N##_fetch(p, right);                                                       \
        CHECK(v == (T)-5, "shmem_" #N "_fetch at the end gave " FMT ", expected -5", v);       \
    } while (0)

#define OLD_EXT_SEQUENCE(T, N, slot)                                                      \
    do {                                                                                  \
        T *p = &slot[me];                                                                 \
        shmem_##N##_set(p, (T)1.5, right);                                                \
        T v = shmem_##N##_fetch(p, right);                                                \
        CHECK(v == (T)1.5, "shmem_" #N "_fetch after _set gave %g", (double)v);           \
        v = shmem_##N##_swap(p, (T)-2.25, right);                                         \
        CHECK(v == (T)1.5, "shmem_" #N "_swap returned %g, expected 1.5", (double)v);     \
        v = shmem_##N##_swap(p, (T)1e10, right);                                          \
        CHECK(v == (T)-2.25, "shmem_" #N "_swap returned %g, expected -2.25", (double)v); \
        v = shmem_##N##_fetch(p, right);                                                  \
        CHECK(v == (T)1e10, "shmem_" #N "_fetch at the end gave %g", (double)v);          \
    } while (0)

static void test_old_atomics(void)
{
    islot = (int *)shmem_calloc((size_t)npes, sizeof(int));
    lslot = (long *)shmem_calloc((size_t)npes, sizeof(long));
    llslot = (long long *)shmem_calloc((size_t)npes, sizeof(long long));
    fslot = (float *)shmem_calloc((size_t)npes, sizeof(float));
    dslot = (double *)shmem_calloc((size_t)npes, sizeof(double));
    CHECK(islot && lslot && llslot && fslot && dslot, "shmem_calloc failed");
    shmem_barrier_all();

    OLD_STD_SEQUENCE(int, int, islot, "%d");
    OLD_STD_SEQUENCE(long, long, lslot, "%ld");
    OLD_STD_SEQUENCE(long long, longlong, llslot, "%lld");
    OLD_EXT_SEQUENCE(float, float, fslot);
    OLD_EXT_SEQUENCE(double, double, dslot);
    shmem_barrier_all();
    CHECK(islot[left] == -5 && lslot[left] == -5 && llslot[left] == -5,
          "old atomics: PE %d's slots hold %d, %ld, %lld; expected -5", left, islot[left],
          lslot[left], llslot[left]);
    CHECK(fslot[left] == 1e10f && dslot[left] == 1e10,
          "old atomics: float/double slots hold "
          "%g, %g",
          (double)fslot[left], dslot[left]);

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
    /* The 1.3 C11 generic names pick the typed routine by the pointer. */
    shmem_barrier_all();
    shmem_set(&lslot[me], 10L, right);
    shmem_add(&lslot[me], 5L, right);
    shmem_inc(&lslot[me], right);
    long gl = shmem_fadd(&lslot[me], 4L, right);
    CHECK(gl == 16, "generic shmem_fadd fetched %ld, expected 16", gl);
    gl = shmem_finc(&lslot[me], right);
    CHECK(gl == 20, "generic shmem_finc fetched %ld, expected 20", gl);
    gl = shmem_cswap(&lslot[me], 21L, 30L, right);
    CHECK(gl == 21, "generic shmem_cswap fetched %ld, expected 21", gl);
    gl = shmem_swap(&lslot[me], 40L, right);
    CHECK(gl == 30, "generic shmem_swap fetched %ld, expected 30", gl);
    gl = shmem_fetch(&lslot[me], right);
    CHECK(gl == 40, "generic shmem_fetch fetched %ld, expected 40", gl);
    shmem_set(&dslot[me], 2.5, right);
    double gd = shmem_swap(&dslot[me], 3.5, right);
    CHECK(gd == 2.5, "generic shmem_swap (double) fetched %g, expected 2.5", gd);
    gd = shmem_fetch(&dslot[me], right);
    CHECK(gd == 3.5, "generic shmem_fetch (double) fetched %g, expected 3.5", gd);
    shmem_barrier_all();
#endif

    /* Concurrent: finc and fadd on counters of PE 0 (static objects). */
    old_counter_int = 0;
    old_counter_long = 0;
    shmem_barrier_all();
    long got[2 * NINC];
    for (int i = 0; i < NINC; ++i) {
        got[i] = shmem_long_finc(&old_counter_long, 0);
        got[NINC + i] = shmem_int_fadd(&old_counter_int, 3, 0);
    }
    shmem_long_put(&seen[(size_t)me * 2 * NINC], got, 2 * NINC, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(old_counter_long == (long)npes * NINC, "shmem_long_finc total %ld, expected %ld",
              old_counter_long, (long)npes * NINC);
        CHECK(old_counter_int == 3 * npes * NINC, "shmem_int_fadd total %d, expected %d",
              old_counter_int, 3 * npes * NINC);
        unsigned char *hit_l = (unsigned char *)calloc((size_t)npes * NINC, 1);
        unsigned char *hit_i = (unsigned char *)calloc((size_t)npes * NINC, 1);
        CHECK(hit_l && hit_i, "calloc failed");
        for (int p = 0; p < npes; ++p) {
            for (int i = 0; i < NINC; ++i) {
                const long vl = seen[(size_t)p * 2 * NINC + i];
                const long vi = seen[(size_t)p * 2 * NINC + NINC + i];
                CHECK(vl >= 0 && vl < (long)npes * NINC && !hit_l[vl],
                      "shmem_long_finc: PE %d fetched %ld (out of range or twice)", p, vl);
                hit_l[vl] = 1;
                CHECK(vi >= 0 && vi % 3 == 0 && vi / 3 < (long)npes * NINC && !hit_i[vi / 3],
                      "shmem_int_fadd: PE %d fetched %ld (out of range or twice)", p, vi);
                hit_i[vi / 3] = 1;
            }
        }
        free(hit_i);
        free(hit_l);
    }
    shmem_barrier_all();
    shmem_free(dslot);
    shmem_free(fslot);
    shmem_free(llslot);
    shmem_free(lslot);
    shmem_free(islot);
}

static void test_cache(void)
{
    long *x = (long *)shmem_malloc(16 * sizeof(long));
    CHECK(x != NULL, "shmem_malloc failed");
    for (int i = 0; i < 16; ++i) {
        x[i] = 1000 * me + i;
    }
    shmem_barrier_all();
    shmem_set_cache_inv();
    shmem_set_cache_line_inv(x);
    shmem_clear_cache_inv();
    shmem_clear_cache_line_inv(x);
    shmem_udcflush();
    shmem_udcflush_line(x);
    for (int i = 0; i < 16; ++i) {
        CHECK(x[i] == 1000 * me + i, "after the cache routines x[%d] is %ld", i, x[i]);
    }
    long v[16];
    shmem_long_get(v, x, 16, right);
    for (int i = 0; i < 16; ++i) {
        CHECK(v[i] == 1000 * right + i, "get after the cache routines: element %d is %ld", i, v[i]);
    }
    shmem_barrier_all();
    shmem_long_p(&x[0], -1, right);
    shmem_barrier_all();
    shmem_udcflush_line(x);
    CHECK(x[0] == -1, "put after the cache routines not seen: %ld", x[0]);
    shmem_barrier_all();
    shmem_free(x);
}

int main(void)
{
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK(npes <= 64, "this test handles up to 64 PEs");

    test_section("start_pes, _my_pe, _num_pes, old constants");
    test_setup();
    test_section("shmalloc, shrealloc, shmemalign, shfree");
    test_memory();
    test_section("shmem_wait, shmem_wait_until, shmem_int_wait, shmem_longlong_wait");
    test_wait();
    test_section("1.3 atomic names");
    test_old_atomics();
    test_section("cache routines");
    test_cache();
    return test_pass("shmem_deprecated");
}
