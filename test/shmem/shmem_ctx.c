/*
 * shmem_ctx.c: communication contexts.
 *
 * shmem_ctx_create with options 0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED
 * and PRIVATE | SERIALIZED: zero returned, distinct handles, none equal to
 * SHMEM_CTX_DEFAULT. On every context and on SHMEM_CTX_DEFAULT (passed
 * explicitly to the shmem_ctx_* routines):
 *   RMA to the right neighbour (PE me + 1; itself on 1 PE): typed put, putmem,
 *   p, iput, put_nbi, a 512 KiB putmem_nbi, then shmem_ctx_quiet per context;
 *   get, g, iget, getmem_nbi (512 KiB) completed by shmem_ctx_quiet.
 *   Completion per context: putmem_nbi on the context, shmem_ctx_quiet on it,
 *   then a flag set with an atomic on the default context; the receiver waits
 *   for the flag and checks the data (only that context's quiet completed it).
 *   Ordering per context: put, shmem_ctx_fence, put of a flag on the SAME
 *   context; the receiver waits for the flag and checks the data.
 *   AMOs: every PE does fetch_inc on one counter of PE 0, rotating through
 *   all contexts: total exact and every fetched value seen exactly once; the
 *   typed atomics (long: set, fetch, swap, compare_swap failing and
 *   succeeding, fetch_add, add, inc, fetch_inc; unsigned long long: set,
 *   fetch, fetch_and/or/xor, and/or/xor; double: set, fetch, swap) with
 *   exact expected sequences;
 *   1.5: shmem_ctx_long_atomic_fetch_add_nbi completed by shmem_ctx_quiet.
 * shmem_ctx_destroy performs a quiet: putmem_nbi, destroy, then the flag on the
 * default context; 200 create / atomic add / destroy rounds with no explicit
 * quiet (the sum must be exact; contexts must be reusable);
 * 1.5: destroying SHMEM_CTX_INVALID does nothing.
 * 300 live contexts (more than get endpoints of their own): a put and an atomic add on
 * each, completed by each context's own quiet.
 * SHMEM_CTX_DEFAULT: its operations are completed by shmem_quiet() and by
 * shmem_barrier_all(), as the routines without a context argument are.
 * Static (data segment) targets: p, atomic add and putmem_nbi on every
 * context to the right neighbour's static arrays, completed by shmem_ctx_quiet
 * while every PE does the same (each quiet must complete while the PE's own
 * data segment is being targeted).
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#define NCTX 4 /* created contexts; index NCTX is SHMEM_CTX_DEFAULT */
#define REG ((size_t)1 << 20)
#define BIG ((size_t)512 << 10)

static int me, npes, right, left;
static shmem_ctx_t ctxs[NCTX + 1];
static const long ctx_opts[NCTX] = {0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED,
                                    SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED};
static const char *ctx_names[NCTX + 1] = {"ctx(0)", "ctx(PRIVATE)", "ctx(SERIALIZED)",
                                          "ctx(PRIVATE|SERIALIZED)", "SHMEM_CTX_DEFAULT"};

/* Symmetric heap. */
static unsigned char *dst;        /* (NCTX + 1) * REG: targets of puts */
static unsigned char *gsrc;       /* (NCTX + 1) * REG: sources of gets */
static long *flags;               /* 2 * (NCTX + 1) */
static long *counter;             /* 1 on PE 0 */
static long *seen;                /* npes * NINC on PE 0 */
static long *islot;               /* npes * (NCTX + 1) */
static unsigned long long *uslot; /* npes * (NCTX + 1) */
static double *dslot;             /* npes * (NCTX + 1) */
static long *lslot;               /* npes * (NCTX + 1) */
static long *loopsum;             /* 1 */
/* Private. */
static unsigned char *src, *loc;

#define NINC 200

static uint64_t seed(int c, int pe, int kind, int it)
{
    return (((uint64_t)it * 16 + (uint64_t)kind) * 8 + (uint64_t)c) * 1024 + (uint64_t)pe;
}

static void create_contexts(void)
{
    for (int i = 0; i < NCTX; ++i) {
        ctxs[i] = SHMEM_CTX_DEFAULT;
        int rc = shmem_ctx_create(ctx_opts[i], &ctxs[i]);
        CHECK(rc == 0, "shmem_ctx_create(%s) returned %d", ctx_names[i], rc);
        CHECK(ctxs[i] != SHMEM_CTX_DEFAULT, "shmem_ctx_create(%s) gave SHMEM_CTX_DEFAULT",
              ctx_names[i]);
#ifdef SHMEM_CTX_INVALID
        CHECK(ctxs[i] != SHMEM_CTX_INVALID, "shmem_ctx_create(%s) gave SHMEM_CTX_INVALID",
              ctx_names[i]);
#endif
        for (int j = 0; j < i; ++j) {
            CHECK(ctxs[i] != ctxs[j], "%s and %s are the same handle", ctx_names[i], ctx_names[j]);
        }
    }
    ctxs[NCTX] = SHMEM_CTX_DEFAULT;
}

/* ------------------------------------------------------------------ RMA */

/* Offsets in a context's region of dst. */
#define OFF_PUT 0       /* 1000 longs */
#define OFF_PUTMEM 8192 /* 3001 bytes */
#define OFF_P 12288     /* one int */
#define OFF_IPUT 16384  /* 100 doubles, stride 3 */
#define OFF_NBI 20480   /* 5000 longs */
#define OFF_BIG 65536   /* BIG bytes */

static void test_rma(void)
{
    /* The sources of the gets, and a clean dst. */
    for (int c = 0; c <= NCTX; ++c) {
        test_fill(gsrc + (size_t)c * REG, REG, seed(c, me, 9, 0));
    }
    memset(dst, 0, (NCTX + 1) * REG);
    shmem_barrier_all();

    for (int c = 0; c <= NCTX; ++c) {
        shmem_ctx_t ctx = ctxs[c];
        unsigned char *r = dst + (size_t)c * REG;
        long *ls = (long *)src;
        for (int i = 0; i < 1000; ++i) {
            ls[i] = (long)test_word(seed(c, me, 0, 0), (uint64_t)i);
        }
        shmem_ctx_long_put(ctx, (long *)(r + OFF_PUT), ls, 1000, right);
        test_fill(src, 3001, seed(c, me, 1, 0));
        shmem_ctx_putmem(ctx, r + OFF_PUTMEM, src, 3001, right);
        shmem_ctx_int_p(ctx, (int *)(r + OFF_P), 4200 + 10 * c + me, right);
        double *ds = (double *)src;
        for (int i = 0; i < 200; ++i) {
            ds[i] = (double)(c * 100000 + me * 1000 + i);
        }
        shmem_ctx_double_iput(ctx, (double *)(r + OFF_IPUT), ds, 3, 2, 100, right);
        /* The nonblocking sources must stay untouched until the quiet: their own buffers. */
        long *nb = (long *)(src + REG);
        for (int i = 0; i < 5000; ++i) {
            nb[i] = (long)test_word(seed(c, me, 2, 0), (uint64_t)i);
        }
        shmem_ctx_long_put_nbi(ctx, (long *)(r + OFF_NBI), nb, 5000, right);
        unsigned char *big = src + 2 * REG + (size_t)c * BIG;
        test_fill(big, BIG, seed(c, me, 3, 0));
        shmem_ctx_putmem_nbi(ctx, r + OFF_BIG, big, BIG, right);
        /* src and src + REG are reused by the next context: complete this one's puts. */
        shmem_ctx_quiet(ctx);
    }
    shmem_barrier_all();
    for (int c = 0; c <= NCTX; ++c) {
        const unsigned char *r = dst + (size_t)c * REG;
        const long *lp = (const long *)(r + OFF_PUT);
        for (int i = 0; i < 1000; ++i) {
            CHECK(lp[i] == (long)test_word(seed(c, left, 0, 0), (uint64_t)i),
                  "%s: shmem_ctx_long_put element %d wrong", ctx_names[c], i);
        }
        long bad = test_verify(r + OFF_PUTMEM, 3001, seed(c, left, 1, 0));
        CHECK(bad < 0, "%s: shmem_ctx_putmem byte %ld wrong", ctx_names[c], bad);
        CHECK(r[OFF_PUTMEM + 3001] == 0, "%s: shmem_ctx_putmem wrote past its end", ctx_names[c]);
        const int *ip = (const int *)(r + OFF_P);
        CHECK(*ip == 4200 + 10 * c + left, "%s: shmem_ctx_int_p gave %d", ctx_names[c], *ip);
        const double *dp = (const double *)(r + OFF_IPUT);
        for (int i = 0; i < 300; ++i) {
            const double want = i % 3 == 0 ? (double)(c * 100000 + left * 1000 + (i / 3) * 2) : 0.0;
            CHECK(dp[i] == want, "%s: shmem_ctx_double_iput: dest[%d] is %g, expected %g",
                  ctx_names[c], i, dp[i], want);
        }
        const long *np = (const long *)(r + OFF_NBI);
        for (int i = 0; i < 5000; ++i) {
            CHECK(np[i] == (long)test_word(seed(c, left, 2, 0), (uint64_t)i),
                  "%s: shmem_ctx_long_put_nbi element %d wrong", ctx_names[c], i);
        }
        bad = test_verify(r + OFF_BIG, BIG, seed(c, left, 3, 0));
        CHECK(bad < 0, "%s: shmem_ctx_putmem_nbi (512 KiB) byte %ld wrong", ctx_names[c], bad);
    }

    /* Gets from the right neighbour's gsrc region of each context. */
    for (int c = 0; c <= NCTX; ++c) {
        shmem_ctx_t ctx = ctxs[c];
        const unsigned char *g = gsrc + (size_t)c * REG;
        memset(loc, 0, 4 * REG);
        shmem_ctx_getmem(ctx, loc, g + 100, 5000, right);
        /* gsrc + 100 starts 100 bytes into the pattern */
        long bad = -1;
        for (size_t i = 0; i < 5000 && bad < 0; ++i) {
            if (loc[i] != (unsigned char)test_word(seed(c, right, 9, 0), i + 100)) {
                bad = (long)i;
            }
        }
        CHECK(bad < 0, "%s: shmem_ctx_getmem byte %ld wrong", ctx_names[c], bad);
        long lv[8];
        shmem_ctx_long_get(ctx, lv, (const long *)g, 8, right);
        long gv = shmem_ctx_long_g(ctx, (const long *)g + 3, right);
        CHECK(memcmp(lv + 3, &gv, sizeof(long)) == 0, "%s: shmem_ctx_long_g differs from get",
              ctx_names[c]);
        for (int i = 0; i < 8; ++i) {
            long want;
            unsigned char b[sizeof(long)];
            for (size_t k = 0; k < sizeof(long); ++k) {
                b[k] =
                    (unsigned char)test_word(seed(c, right, 9, 0), (uint64_t)i * sizeof(long) + k);
            }
            memcpy(&want, b, sizeof(long));
            CHECK(lv[i] == want, "%s: shmem_ctx_long_get element %d wrong", ctx_names[c], i);
        }
        uint32_t iv[50];
        shmem_ctx_uint32_iget(ctx, iv, (const uint32_t *)g, 1, 4, 50, right);
        for (int i = 0; i < 50; ++i) {
            uint32_t want;
            unsigned char b[4];
            for (size_t k = 0; k < 4; ++k) {
                b[k] = (unsigned char)test_word(seed(c, right, 9, 0), (uint64_t)i * 16 + k);
            }
            memcpy(&want, b, 4);
            CHECK(iv[i] == want, "%s: shmem_ctx_uint32_iget element %d wrong", ctx_names[c], i);
        }
        shmem_ctx_getmem_nbi(ctx, loc, g, BIG, right);
        shmem_ctx_getmem_nbi(ctx, loc + BIG, g + BIG, REG - BIG, right);
        shmem_ctx_quiet(ctx);
        bad = test_verify(loc, REG, seed(c, right, 9, 0));
        CHECK(bad < 0, "%s: shmem_ctx_getmem_nbi + shmem_ctx_quiet: byte %ld wrong", ctx_names[c],
              bad);
    }
    shmem_barrier_all();
}

/* ------------------------------------------------------------------ completion and ordering */

static void test_quiet_fence(void)
{
    for (int it = 1; it <= 3; ++it) {
        for (int c = 0; c < 2 * (NCTX + 1); ++c) {
            flags[c] = 0;
        }
        memset(dst, 0, (NCTX + 1) * REG);
        shmem_barrier_all();
        /* quiet: data on context c, then the flag on the default context */
        for (int c = 0; c <= NCTX; ++c) {
            unsigned char *buf = src + (size_t)c * BIG;
            test_fill(buf, BIG, seed(c, me, 4, it));
            shmem_ctx_putmem_nbi(ctxs[c], dst + (size_t)c * REG, buf, BIG, right);
            shmem_ctx_quiet(ctxs[c]);
            shmem_long_atomic_set(&flags[c], it, right);
        }
        for (int c = 0; c <= NCTX; ++c) {
            shmem_long_wait_until(&flags[c], SHMEM_CMP_EQ, it);
            long bad = test_verify(dst + (size_t)c * REG, BIG, seed(c, left, 4, it));
            CHECK(bad < 0,
                  "%s: data put before shmem_ctx_quiet and the flag: byte %ld wrong "
                  "(round %d)",
                  ctx_names[c], bad, it);
        }
        shmem_barrier_all();
        /* fence: data, shmem_ctx_fence, flag, all on context c */
        for (int c = 0; c <= NCTX; ++c) {
            unsigned char *buf = src + (size_t)c * BIG;
            test_fill(buf, 65536, seed(c, me, 5, it));
            shmem_ctx_putmem(ctxs[c], dst + (size_t)c * REG + BIG, buf, 65536, right);
            shmem_ctx_fence(ctxs[c]);
            shmem_ctx_long_p(ctxs[c], &flags[NCTX + 1 + c], it, right);
        }
        for (int c = 0; c <= NCTX; ++c) {
            shmem_ctx_quiet(ctxs[c]);
        }
        for (int c = 0; c <= NCTX; ++c) {
            shmem_long_wait_until(&flags[NCTX + 1 + c], SHMEM_CMP_EQ, it);
            long bad = test_verify(dst + (size_t)c * REG + BIG, 65536, seed(c, left, 5, it));
            CHECK(bad < 0,
                  "%s: data put before shmem_ctx_fence and the flag: byte %ld wrong "
                  "(round %d)",
                  ctx_names[c], bad, it);
        }
        shmem_barrier_all();
    }
}

/* ------------------------------------------------------------------ atomics */

static void test_amo(void)
{
    long fetched[NINC];
    if (me == 0) {
        *counter = 0;
    }
    for (int i = 0; i < npes * (NCTX + 1); ++i) {
        islot[i] = 0;
        uslot[i] = 0;
        dslot[i] = 0.0;
        lslot[i] = 0;
    }
    shmem_barrier_all();
    for (int i = 0; i < NINC; ++i) {
        fetched[i] = shmem_ctx_long_atomic_fetch_inc(ctxs[i % (NCTX + 1)], counter, 0);
    }
    shmem_long_put(seen + (size_t)me * NINC, fetched, NINC, 0);
    for (int c = 0; c <= NCTX; ++c) {
        shmem_ctx_quiet(ctxs[c]);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*counter == (long)npes * NINC, "fetch_inc on all contexts: total %ld, expected %ld",
              *counter, (long)npes * NINC);
        unsigned char *hit = (unsigned char *)calloc((size_t)npes * NINC, 1);
        CHECK(hit != NULL, "calloc failed");
        for (int i = 0; i < npes * NINC; ++i) {
            const long v = seen[i];
            CHECK(v >= 0 && v < (long)npes * NINC && !hit[v],
                  "fetch_inc on all contexts: value %ld (PE %d, #%d) out of range or seen twice", v,
                  i / NINC, i % NINC);
            hit[v] = 1;
        }
        free(hit);
    }
    for (int i = 1; i < NINC; ++i) {
        CHECK(fetched[i] > fetched[i - 1], "fetch_inc values of one PE not increasing: %ld, %ld",
              fetched[i - 1], fetched[i]);
    }

    /* Typed atomics, each on this PE's slot of context c at the right neighbour. */
    for (int c = 0; c <= NCTX; ++c) {
        shmem_ctx_t ctx = ctxs[c];
        const char *nm = ctx_names[c];
        long *ip = &islot[me * (NCTX + 1) + c];
        shmem_ctx_long_atomic_set(ctx, ip, 42 + c, right);
        long v = shmem_ctx_long_atomic_fetch(ctx, ip, right);
        CHECK(v == 42 + c, "%s: long fetch after set gave %ld", nm, v);
        v = shmem_ctx_long_atomic_swap(ctx, ip, 7, right);
        CHECK(v == 42 + c, "%s: long swap returned %ld", nm, v);
        v = shmem_ctx_long_atomic_compare_swap(ctx, ip, 100, 1, right);
        CHECK(v == 7, "%s: failing int compare_swap returned %ld", nm, v);
        v = shmem_ctx_long_atomic_compare_swap(ctx, ip, 7, 9, right);
        CHECK(v == 7, "%s: succeeding int compare_swap returned %ld", nm, v);
        v = shmem_ctx_long_atomic_fetch_add(ctx, ip, 5, right);
        CHECK(v == 9, "%s: long fetch_add returned %ld", nm, v);
        shmem_ctx_long_atomic_add(ctx, ip, 6, right);
        shmem_ctx_long_atomic_inc(ctx, ip, right);
        v = shmem_ctx_long_atomic_fetch_inc(ctx, ip, right);
        CHECK(v == 21, "%s: long fetch_inc returned %ld, expected 21", nm, v);
        v = shmem_ctx_long_atomic_fetch(ctx, ip, right);
        CHECK(v == 22, "%s: long final value %ld, expected 22", nm, v);

        unsigned long long *up = &uslot[me * (NCTX + 1) + c];
        shmem_ctx_ulonglong_atomic_set(ctx, up, 0xF0F0F0F000000000ULL | 0xF0F0u, right);
        unsigned long long u =
            shmem_ctx_ulonglong_atomic_fetch_and(ctx, up, 0xFF000000000000FFULL | 0xFF00u, right);
        CHECK(u == (0xF0F0F0F000000000ULL | 0xF0F0u), "%s: ulonglong fetch_and returned %#llx", nm,
              (unsigned long long)u);
        /* now 0xF00000000000F0F0 */
        u = shmem_ctx_ulonglong_atomic_fetch_or(ctx, up, 0x000Fu, right);
        CHECK(u == 0xF00000000000F0F0ULL,
              "%s: ulonglong fetch_or returned %#llx, expected "
              "0xf00000000000f0f0",
              nm, (unsigned long long)u);
        u = shmem_ctx_ulonglong_atomic_fetch_xor(ctx, up, 0x0F0000000000FFFFULL, right);
        CHECK(u == 0xF00000000000F0FFULL,
              "%s: ulonglong fetch_xor returned %#llx, expected "
              "0xf00000000000f0ff",
              nm, (unsigned long long)u);
        /* now 0xFF00000000000F00 */
        shmem_ctx_ulonglong_atomic_and(ctx, up, 0x0F00000000000F00ULL, right);
        shmem_ctx_ulonglong_atomic_or(ctx, up, 0x1ULL, right);
        shmem_ctx_ulonglong_atomic_xor(ctx, up, 0x0000000000000F03ULL, right);
        u = shmem_ctx_ulonglong_atomic_fetch(ctx, up, right);
        CHECK(u == 0x0F00000000000002ULL,
              "%s: ulonglong and/or/xor gave %#llx, expected "
              "0x0f00000000000002",
              nm, (unsigned long long)u);

        double *dp = &dslot[me * (NCTX + 1) + c];
        shmem_ctx_double_atomic_set(ctx, dp, 1.5 + c, right);
        double d = shmem_ctx_double_atomic_fetch(ctx, dp, right);
        CHECK(d == 1.5 + c, "%s: double fetch gave %g", nm, d);
        d = shmem_ctx_double_atomic_swap(ctx, dp, -0.25, right);
        CHECK(d == 1.5 + c, "%s: double swap returned %g", nm, d);
        d = shmem_ctx_double_atomic_fetch(ctx, dp, right);
        CHECK(d == -0.25, "%s: double after swap is %g", nm, d);

#if SHMEM_TEST_V15
        long *lp = &lslot[me * (NCTX + 1) + c];
        long f1 = -1, f2 = -1;
        shmem_ctx_long_atomic_fetch_add_nbi(ctx, &f1, lp, 3, right);
        shmem_ctx_quiet(ctx);
        shmem_ctx_long_atomic_fetch_add_nbi(ctx, &f2, lp, 4, right);
        shmem_ctx_quiet(ctx);
        CHECK(f1 == 0 && f2 == 3, "%s: fetch_add_nbi fetched %ld, %ld; expected 0, 3", nm, f1, f2);
        long fin = shmem_ctx_long_atomic_fetch(ctx, lp, right);
        CHECK(fin == 7, "%s: after the fetch_add_nbi the value is %ld, expected 7", nm, fin);
#endif
    }
    for (int c = 0; c <= NCTX; ++c) {
        shmem_ctx_quiet(ctxs[c]);
    }
    shmem_barrier_all();
    /* What the left neighbour left in its slots here. */
    for (int c = 0; c <= NCTX; ++c) {
        CHECK(islot[left * (NCTX + 1) + c] == 22, "%s: long slot of PE %d holds %ld", ctx_names[c],
              left, islot[left * (NCTX + 1) + c]);
        CHECK(uslot[left * (NCTX + 1) + c] == 0x0F00000000000002ULL,
              "%s: ulonglong slot of PE %d holds %#llx", ctx_names[c], left,
              (unsigned long long)uslot[left * (NCTX + 1) + c]);
        CHECK(dslot[left * (NCTX + 1) + c] == -0.25, "%s: double slot holds %g", ctx_names[c],
              dslot[left * (NCTX + 1) + c]);
    }
    shmem_barrier_all();
}

/* ------------------------------------------------------------------ destroy */

static void test_destroy(void)
{
    for (int c = 0; c < 2 * (NCTX + 1); ++c) {
        flags[c] = 0;
    }
    memset(dst, 0, (NCTX + 1) * REG);
    *loopsum = 0;
    shmem_barrier_all();
    /* The implicit quiet of shmem_ctx_destroy. */
    for (int c = 0; c < NCTX; ++c) {
        unsigned char *buf = src + (size_t)c * BIG;
        test_fill(buf, BIG, seed(c, me, 6, 0));
        shmem_ctx_putmem_nbi(ctxs[c], dst + (size_t)c * REG, buf, BIG, right);
        shmem_ctx_long_atomic_add(ctxs[c], loopsum, 1000, right);
        shmem_ctx_destroy(ctxs[c]);
        shmem_long_atomic_set(&flags[c], 1, right);
    }
    for (int c = 0; c < NCTX; ++c) {
        shmem_long_wait_until(&flags[c], SHMEM_CMP_EQ, 1);
        long bad = test_verify(dst + (size_t)c * REG, BIG, seed(c, left, 6, 0));
        CHECK(bad < 0, "%s: data put before shmem_ctx_destroy: byte %ld wrong", ctx_names[c], bad);
    }
    shmem_barrier_all();
    CHECK(*loopsum == 1000L * NCTX, "atomic adds before shmem_ctx_destroy: sum %ld, expected %ld",
          *loopsum, 1000L * NCTX);
    shmem_barrier_all();
    *loopsum = 0;
    shmem_barrier_all();

#if SHMEM_TEST_V15
    shmem_ctx_destroy(SHMEM_CTX_INVALID); /* 1.5: no operation */
#endif

    /* Many short-lived contexts. */
    const long opts[4] = {0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE};
    long want = 0;
    for (int k = 0; k < 200; ++k) {
        shmem_ctx_t ctx;
        int rc = shmem_ctx_create(opts[k % 4], &ctx);
        CHECK(rc == 0, "shmem_ctx_create #%d (options %ld) returned %d", k, opts[k % 4], rc);
        shmem_ctx_long_atomic_add(ctx, loopsum, k + 1, right);
        if (k % 3 == 0) {
            long v = k;
            shmem_ctx_long_put_nbi(ctx, &lslot[me], &v, 1, right);
            shmem_ctx_destroy(ctx); /* completes the put: v goes away next */
        } else {
            shmem_ctx_destroy(ctx);
        }
        want += k + 1;
    }
    shmem_barrier_all();
    CHECK(*loopsum == want, "200 create/add/destroy rounds: sum %ld, expected %ld", *loopsum, want);
    CHECK(lslot[left] == 198, "last put_nbi before a destroy: %ld, expected 198", lslot[left]);
    shmem_barrier_all();
}

/* ------------------------------------------------------------------ many live contexts */

/** More live contexts than endpoints of their own (SHMEM_CTX_ENDPOINTS, min(16, 128 / node PEs) by
 *  default; check_shmem.sh runs a second pass with 2): each puts and adds on the right
 *  neighbour, then each context's quiet must complete its own operations, whichever
 *  endpoint they went through. */
static void test_many(void)
{
    enum { MANY = 300 };
    static shmem_ctx_t many[MANY];
    long *slots = (long *)dst; /* MANY longs */
    for (int k = 0; k < MANY; ++k) {
        slots[k] = -1;
    }
    *loopsum = 0;
    shmem_barrier_all();
    for (int k = 0; k < MANY; ++k) {
        int rc = shmem_ctx_create(k % 2 ? SHMEM_CTX_PRIVATE : 0, &many[k]);
        CHECK(rc == 0, "shmem_ctx_create of live context #%d returned %d", k, rc);
    }
    for (int k = 0; k < MANY; ++k) {
        shmem_ctx_long_p(many[k], &slots[k], 1000L * me + k, right);
        shmem_ctx_long_atomic_add(many[k], loopsum, k + 1, right);
    }
    for (int k = MANY - 1; k >= 0; --k) {
        shmem_ctx_quiet(many[k]);
    }
    shmem_barrier_all();
    for (int k = 0; k < MANY; ++k) {
        CHECK(slots[k] == 1000L * left + k, "live context #%d of %d: slot holds %ld, want %ld", k,
              MANY, slots[k], 1000L * left + k);
    }
    CHECK(*loopsum == (long)MANY * (MANY + 1) / 2, "%d live contexts: sum %ld, want %ld", MANY,
          *loopsum, (long)MANY * (MANY + 1) / 2);
    for (int k = 0; k < MANY; ++k) {
        shmem_ctx_destroy(many[k]);
    }
    shmem_barrier_all();
}

/* ------------------------------------------------------------------ SHMEM_CTX_DEFAULT */

static void test_default(void)
{
    for (int c = 0; c < 2 * (NCTX + 1); ++c) {
        flags[c] = 0;
    }
    memset(dst, 0, 3 * REG);
    shmem_barrier_all();
    /* completed by shmem_quiet(): the routines without ctx use SHMEM_CTX_DEFAULT */
    test_fill(src, BIG, seed(7, me, 7, 0));
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, dst, src, BIG, right);
    shmem_quiet();
    shmem_long_atomic_set(&flags[0], 5, right);
    shmem_long_wait_until(&flags[0], SHMEM_CMP_EQ, 5);
    long bad = test_verify(dst, BIG, seed(7, left, 7, 0));
    CHECK(bad < 0, "SHMEM_CTX_DEFAULT put_nbi completed by shmem_quiet: byte %ld wrong", bad);
    /* completed by shmem_barrier_all() */
    test_fill(src + BIG, BIG, seed(7, me, 8, 0));
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, dst + REG, src + BIG, BIG, right);
    shmem_ctx_long_atomic_inc(SHMEM_CTX_DEFAULT, &flags[1], right);
    shmem_barrier_all();
    bad = test_verify(dst + REG, BIG, seed(7, left, 8, 0));
    CHECK(bad < 0, "SHMEM_CTX_DEFAULT put_nbi completed by shmem_barrier_all: byte %ld wrong", bad);
    CHECK(flags[1] == 1, "SHMEM_CTX_DEFAULT atomic_inc before shmem_barrier_all: %ld", flags[1]);
    /* shmem_ctx_fence(SHMEM_CTX_DEFAULT) orders like shmem_fence */
    test_fill(src, 4096, seed(7, me, 9, 1));
    shmem_putmem(dst + 2 * REG, src, 4096, right);
    shmem_ctx_fence(SHMEM_CTX_DEFAULT);
    shmem_long_p(&flags[2], 9, right);
    shmem_long_wait_until(&flags[2], SHMEM_CMP_EQ, 9);
    bad = test_verify(dst + 2 * REG, 4096, seed(7, left, 9, 1));
    CHECK(bad < 0, "put, shmem_ctx_fence(SHMEM_CTX_DEFAULT), flag: byte %ld wrong", bad);
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    shmem_barrier_all();
}

/* ------------------------------------------------------------------ the data segment */

/* Static symmetric objects: reached through the library, not through a mapping. */
static long st_words[64];
static long st_count[NCTX + 1];
static unsigned char st_bytes[8192];

/*
 * Puts and atomics on contexts to static (data segment) objects of the right
 * neighbour, completed by shmem_ctx_quiet: every PE does this at the same time,
 * so each PE's quiet must complete its operations while its own data segment
 * is the target of the other PEs' operations.
 */
static void test_static(void)
{
    shmem_ctx_t cs[NCTX + 1];
    for (int c = 0; c < NCTX; ++c) {
        int rc = shmem_ctx_create(ctx_opts[c], &cs[c]);
        CHECK(rc == 0, "shmem_ctx_create(%s) returned %d", ctx_names[c], rc);
    }
    cs[NCTX] = SHMEM_CTX_DEFAULT;
    memset(st_words, 0, sizeof(st_words));
    memset(st_count, 0, sizeof(st_count));
    memset(st_bytes, 0, sizeof(st_bytes));
    shmem_barrier_all();
    for (int round = 1; round <= 3; ++round) {
        for (int c = 0; c <= NCTX; ++c) {
            shmem_ctx_long_p(cs[c], &st_words[c], 100L * round + me, right);
            shmem_ctx_long_atomic_add(cs[c], &st_count[c], me + 1, right);
            test_fill(src + (size_t)c * 1024, 1024, seed(c, me, 10, round));
            shmem_ctx_putmem_nbi(cs[c], st_bytes + (size_t)c * 1024, src + (size_t)c * 1024, 1024,
                                 right);
            shmem_ctx_quiet(cs[c]);
        }
        shmem_barrier_all();
        for (int c = 0; c <= NCTX; ++c) {
            CHECK(st_words[c] == 100L * round + left,
                  "%s: shmem_ctx_long_p to a static object: %ld, expected %ld", ctx_names[c],
                  st_words[c], 100L * round + left);
            CHECK(st_count[c] == (long)round * (left + 1),
                  "%s: shmem_ctx_long_atomic_add to a static object: %ld, expected %ld",
                  ctx_names[c], st_count[c], (long)round * (left + 1));
            long bad = test_verify(st_bytes + (size_t)c * 1024, 1024, seed(c, left, 10, round));
            CHECK(bad < 0, "%s: shmem_ctx_putmem_nbi to a static object: byte %ld wrong",
                  ctx_names[c], bad);
        }
        shmem_barrier_all();
    }
    for (int c = 0; c < NCTX; ++c) {
        shmem_ctx_destroy(cs[c]);
    }
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;

    dst = (unsigned char *)shmem_malloc((NCTX + 1) * REG);
    gsrc = (unsigned char *)shmem_malloc((NCTX + 1) * REG);
    flags = (long *)shmem_malloc(2 * (NCTX + 1) * sizeof(long));
    counter = (long *)shmem_malloc(sizeof(long));
    seen = (long *)shmem_malloc((size_t)npes * NINC * sizeof(long));
    islot = (long *)shmem_malloc((size_t)npes * (NCTX + 1) * sizeof(long));
    uslot =
        (unsigned long long *)shmem_malloc((size_t)npes * (NCTX + 1) * sizeof(unsigned long long));
    dslot = (double *)shmem_malloc((size_t)npes * (NCTX + 1) * sizeof(double));
    lslot = (long *)shmem_malloc((size_t)npes * (NCTX + 1) * sizeof(long));
    loopsum = (long *)shmem_malloc(sizeof(long));
    src = (unsigned char *)malloc(2 * REG + (NCTX + 1) * BIG);
    loc = (unsigned char *)malloc(4 * REG);
    CHECK(dst && gsrc && flags && counter && seen && islot && uslot && dslot && lslot && loopsum &&
              src && loc,
          "allocation failed");

    test_section("shmem_ctx_create");
    create_contexts();
    test_section("RMA on contexts");
    test_rma();
    test_section("shmem_ctx_quiet, shmem_ctx_fence per context");
    test_quiet_fence();
    test_section("atomics on contexts");
    test_amo();
    test_section("shmem_ctx_destroy");
    test_destroy();
    test_section("more live contexts than endpoints");
    test_many();
    test_section("SHMEM_CTX_DEFAULT");
    test_default();
    test_section("contexts to static (data segment) objects");
    test_static();

    shmem_barrier_all();
    free(loc);
    free(src);
    shmem_free(loopsum);
    shmem_free(lslot);
    shmem_free(dslot);
    shmem_free(uslot);
    shmem_free(islot);
    shmem_free(seen);
    shmem_free(counter);
    shmem_free(flags);
    shmem_free(gsrc);
    shmem_free(dst);
    return test_pass("shmem_ctx");
}
