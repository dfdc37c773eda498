/*
 * shmem_rma.c: remote memory access (put, get, p, g, strided, nonblocking).
 *
 * For EVERY standard RMA type: shmem_TYPENAME_put / _get (0, 1, 7, 4096, 65537
 * and 1 MiB worth of elements), _put_nbi / _get_nbi completed by shmem_quiet,
 * _p / _g, _iput / _iget with several strides. The sized routines
 * shmem_put8/16/32/64/128, shmem_putmem (also at unaligned offsets), their
 * gets, _nbi forms and shmem_iputSIZE / shmem_igetSIZE. A few C11 generic
 * calls. Every transfer goes to the right neighbour (a ring: PE i puts to
 * i + 1) and to the PE itself, into a symmetric heap block AND into a static
 * array (the data segment is symmetric too); the receiver checks every element
 * and that the element after the last one is untouched, the sender gets the
 * data back and checks it. Last, an all-to-all of putmem.
 */
#include "shmem_test.h"

/* TYPE, TYPENAME, mask applied to a random 64-bit word to make a value (the
 * floating types get values they represent exactly). */
#define RMA_TYPES(X)                              \
    X(float, float, 0xfffffULL)                   \
    X(double, double, 0xffffffffffffULL)          \
    X(long double, longdouble, 0xffffffffffffULL) \
    X(char, char, ~0ULL)                          \
    X(signed char, schar, ~0ULL)                  \
    X(short, short, ~0ULL)                        \
    X(int, int, ~0ULL)                            \
    X(long, long, ~0ULL)                          \
    X(long long, longlong, ~0ULL)                 \
    X(unsigned char, uchar, ~0ULL)                \
    X(unsigned short, ushort, ~0ULL)              \
    X(unsigned int, uint, ~0ULL)                  \
    X(unsigned long, ulong, ~0ULL)                \
    X(unsigned long long, ulonglong, ~0ULL)       \
    X(int8_t, int8, ~0ULL)                        \
    X(int16_t, int16, ~0ULL)                      \
    X(int32_t, int32, ~0ULL)                      \
    X(int64_t, int64, ~0ULL)                      \
    X(uint8_t, uint8, ~0ULL)                      \
    X(uint16_t, uint16, ~0ULL)                    \
    X(uint32_t, uint32, ~0ULL)                    \
    X(uint64_t, uint64, ~0ULL)                    \
    X(size_t, size, ~0ULL)                        \
    X(ptrdiff_t, ptrdiff, ~0ULL)

#define REGION_BYTES (((size_t)1 << 20) + 4096) /* one transfer: up to 1 MiB + 16 bytes */
#define BUF_BYTES (4 * REGION_BYTES)            /* 2 directions x 2 alternating sets */
#define SENTINEL_PE 9999 /* "PE" whose values mark elements nobody may write */

/* The static symmetric target: one array per type, overlaid. */
#define X_MEMBER(T, N, MASK) T a_##N[BUF_BYTES / sizeof(T)];
static union {
    RMA_TYPES(X_MEMBER)
    unsigned char bytes[BUF_BYTES];
} gdata;

static unsigned char *heap;      /* BUF_BYTES on the symmetric heap */
static unsigned char *src, *loc; /* private buffers: put sources, get destinations */
static int me, npes;
static unsigned tag_counter; /* a new tag per transfer: values never repeat */

/** Element counts of the contiguous transfers; the last is replaced by 1 MiB worth. */
static const size_t counts[] = {0, 1, 7, 4096, 65537, 0};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
/** Strided transfers: target stride, source stride, elements. */
static const struct {
    ptrdiff_t tst, sst;
    size_t n;
} strides[] = {{1, 1, 100}, {3, 2, 1000}, {2, 5, 33}, {7, 1, 1}, {1, 4, 257}};
#define NSTRIDES (sizeof(strides) / sizeof(strides[0]))

static uint64_t tag_seed(int pe, unsigned tag)
{
    return ((uint64_t)tag << 16) + (uint64_t)pe;
}

/*
 * Every transfer goes in two directions at once: to the right neighbour
 * (d = 1, the ring) and to the PE itself (d = 0), each into its own region of
 * the target buffer. Two sets of regions alternate between iterations, so an
 * iteration needs two barriers only (after the targets are initialized, after
 * the puts): the gets of iteration i read the set that is initialized again in
 * iteration i + 2, after a barrier every PE passes when its gets are done.
 */
static unsigned iter_count;

static size_t region_off(int d)
{
    return ((size_t)(iter_count % 2) * 2 + (size_t)d) * REGION_BYTES;
}

/** Next iteration: r[d] = the target regions in dst, l[d] = the local get buffers. */
#define SET_REGIONS(T, dst, r, l)                                             \
    do {                                                                      \
        ++iter_count;                                                         \
        for (int d_ = 0; d_ < 2; ++d_) {                                      \
            (r)[d_] = (T *)(void *)((unsigned char *)(dst) + region_off(d_)); \
            (l)[d_] = (T *)(void *)(loc + (size_t)d_ * REGION_BYTES);         \
        }                                                                     \
    } while (0)

static const char *dir_name(int d)
{
    return d ? "ring" : "self";
}

/*
 * test_TYPENAME(dst, where): all typed routines of one type into the symmetric
 * array dst (heap or static).
 *   contiguous: for each count, every PE puts count values into its regions
 *   of PE me + 1 and of itself, checks what PE me - 1 and itself put (and the
 *   element after the last, untouched), then gets its values back. Blocking for
 *   every count, _nbi + shmem_quiet (two transfers outstanding) for some.
 *   p / g: 16 single elements each way.
 *   iput / iget: every stride combination; elements between the strided ones
 *   untouched.
 */
#define X_TEST(T, N, MASK)                                                                        \
    static T val_##N(int pe, size_t i, unsigned tag)                                              \
    {                                                                                             \
        return (T)(test_word(tag_seed(pe, tag), i) & (MASK));                                     \
    }                                                                                             \
    /* index of the first of dst[0..n) that is not val(pe, i * sstride), or -1 */                 \
    static long bad_##N(const T *dst, size_t n, int pe, unsigned tag, size_t sstride)             \
    {                                                                                             \
        for (size_t i = 0; i < n; ++i) {                                                          \
            if (dst[i] != val_##N(pe, i * sstride, tag)) {                                        \
                return (long)i;                                                                   \
            }                                                                                     \
        }                                                                                         \
        return -1;                                                                                \
    }                                                                                             \
    static void test_##N(T *dst, const char *where)                                               \
    {                                                                                             \
        T *s = (T *)src, *r[2], *l[2];                                                            \
        for (size_t k = 0; k < NCOUNTS; ++k) {                                                    \
            size_t n = (k == NCOUNTS - 1) ? ((size_t)1 << 20) / sizeof(T) : counts[k];            \
            for (int nbi = 0; nbi < 2; ++nbi) {                                                   \
                if (nbi && n != 7 && n != 65537) {                                                \
                    continue; /* the _nbi forms: two sizes are enough */                          \
                }                                                                                 \
                const char *how = nbi ? "_nbi" : "";                                              \
                unsigned tag = ++tag_counter;                                                     \
                SET_REGIONS(T, dst, r, l);                                                        \
                for (size_t i = 0; i <= n; ++i) {                                                 \
                    r[0][i] = r[1][i] = l[0][i] = l[1][i] = val_##N(SENTINEL_PE, i, tag);         \
                    s[i] = val_##N(me, i, tag);                                                   \
                }                                                                                 \
                shmem_barrier_all();                                                              \
                for (int d = 0; d < 2; ++d) {                                                     \
                    if (nbi) {                                                                    \
                        shmem_##N##_put_nbi(r[d], s, n, (me + d) % npes);                         \
                    } else {                                                                      \
                        shmem_##N##_put(r[d], s, n, (me + d) % npes);                             \
                    }                                                                             \
                }                                                                                 \
                if (nbi) {                                                                        \
                    shmem_quiet();                                                                \
                }                                                                                 \
                shmem_barrier_all();                                                              \
                for (int d = 0; d < 2; ++d) {                                                     \
                    int to = (me + d) % npes, from = (me + npes - d) % npes;                      \
                    long bad = bad_##N(r[d], n, from, tag, 1);                                    \
                    CHECK(bad < 0,                                                                \
                          "shmem_" #N                                                             \
                          "_put%s (%s) of %zu to %s from PE %d: element %ld "                     \
                          "wrong",                                                                \
                          how, dir_name(d), n, where, from, bad);                                 \
                    CHECK(r[d][n] == val_##N(SENTINEL_PE, n, tag),                                \
                          "shmem_" #N "_put%s of %zu to %s: wrote past the end", how, n, where);  \
                    if (nbi) {                                                                    \
                        shmem_##N##_get_nbi(l[d], r[d], n, to);                                   \
                    } else {                                                                      \
                        shmem_##N##_get(l[d], r[d], n, to);                                       \
                    }                                                                             \
                }                                                                                 \
                if (nbi) {                                                                        \
                    shmem_quiet();                                                                \
                }                                                                                 \
                for (int d = 0; d < 2; ++d) {                                                     \
                    long bad = bad_##N(l[d], n, me, tag, 1);                                      \
                    CHECK(bad < 0,                                                                \
                          "shmem_" #N                                                             \
                          "_get%s (%s) of %zu from %s of PE %d: element %ld "                     \
                          "wrong",                                                                \
                          how, dir_name(d), n, where, (me + d) % npes, bad);                      \
                    CHECK(l[d][n] == val_##N(SENTINEL_PE, n, tag),                                \
                          "shmem_" #N "_get%s of %zu: wrote past the end", how, n);               \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        { /* shmem_p / shmem_g */                                                                 \
            unsigned tag = ++tag_counter;                                                         \
            SET_REGIONS(T, dst, r, l);                                                            \
            for (size_t i = 0; i <= 16; ++i) {                                                    \
                r[0][i] = r[1][i] = val_##N(SENTINEL_PE, i, tag);                                 \
            }                                                                                     \
            shmem_barrier_all();                                                                  \
            for (int d = 0; d < 2; ++d) {                                                         \
                for (size_t i = 0; i < 16; ++i) {                                                 \
                    shmem_##N##_p(&r[d][i], val_##N(me, i, tag), (me + d) % npes);                \
                }                                                                                 \
            }                                                                                     \
            shmem_barrier_all();                                                                  \
            for (int d = 0; d < 2; ++d) {                                                         \
                int to = (me + d) % npes, from = (me + npes - d) % npes;                          \
                long bad = bad_##N(r[d], 16, from, tag, 1);                                       \
                CHECK(bad < 0, "shmem_" #N "_p (%s) to %s from PE %d: element %ld wrong",         \
                      dir_name(d), where, from, bad);                                             \
                CHECK(r[d][16] == val_##N(SENTINEL_PE, 16, tag),                                  \
                      "shmem_" #N "_p: element 16 written");                                      \
                for (size_t i = 0; i < 16; ++i) {                                                 \
                    T v = shmem_##N##_g(&r[d][i], to);                                            \
                    CHECK(v == val_##N(me, i, tag),                                               \
                          "shmem_" #N                                                             \
                          "_g of element %zu from %s of "                                         \
                          "PE %d",                                                                \
                          i, where, to);                                                          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        for (size_t k = 0; k < NSTRIDES; ++k) { /* shmem_iput / shmem_iget */                     \
            ptrdiff_t tst = strides[k].tst, sst = strides[k].sst;                                 \
            size_t n = strides[k].n;                                                              \
            size_t dspan = (n - 1) * (size_t)tst + 1, sspan = (n - 1) * (size_t)sst + 1;          \
            unsigned tag = ++tag_counter;                                                         \
            SET_REGIONS(T, dst, r, l);                                                            \
            for (size_t i = 0; i <= dspan + (size_t)tst; ++i) {                                   \
                r[0][i] = r[1][i] = val_##N(SENTINEL_PE, i, tag);                                 \
            }                                                                                     \
            for (size_t i = 0; i < sspan; ++i) {                                                  \
                s[i] = val_##N(me, i, tag);                                                       \
            }                                                                                     \
            for (size_t i = 0; i <= 2 * n; ++i) {                                                 \
                l[0][i] = l[1][i] = val_##N(SENTINEL_PE, i, tag);                                 \
            }                                                                                     \
            shmem_barrier_all();                                                                  \
            for (int d = 0; d < 2; ++d) {                                                         \
                shmem_##N##_iput(r[d], s, tst, sst, n, (me + d) % npes);                          \
            }                                                                                     \
            shmem_barrier_all();                                                                  \
            for (int d = 0; d < 2; ++d) {                                                         \
                int to = (me + d) % npes, from = (me + npes - d) % npes;                          \
                for (size_t i = 0; i <= dspan + (size_t)tst; ++i) {                               \
                    int hit = 0 == i % (size_t)tst && i / (size_t)tst < n;                        \
                    T want = hit ? val_##N(from, i / (size_t)tst * (size_t)sst, tag)              \
                                 : val_##N(SENTINEL_PE, i, tag);                                  \
                    CHECK(r[d][i] == want,                                                        \
                          "shmem_" #N                                                             \
                          "_iput(tst %td, sst %td, %zu) (%s) to %s from PE %d: "                  \
                          "element %zu %s",                                                       \
                          tst, sst, n, dir_name(d), where, from, i, hit ? "wrong" : "written");   \
                }                                                                                 \
                /* iget: remote elements every tst, stored every 2 locally */                     \
                shmem_##N##_iget(l[d], r[d], 2, tst, n, to);                                      \
                for (size_t i = 0; i <= 2 * n; ++i) {                                             \
                    int hit = 0 == i % 2 && i / 2 < n;                                            \
                    T want = hit ? val_##N(me, i / 2 * (size_t)sst, tag)                          \
                                 : val_##N(SENTINEL_PE, i, tag);                                  \
                    CHECK(l[d][i] == want,                                                        \
                          "shmem_" #N "_iget(2, %td, %zu) (%s) from %s of PE %d: element %zu %s", \
                          tst, n, dir_name(d), where, to, i, hit ? "wrong" : "written");          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        shmem_barrier_all(); /* the buffers are free for the next user */                         \
    }
RMA_TYPES(X_TEST)

/* ---- sized routines: element sizes 1, 2, 4, 8, 16 bytes, and putmem / getmem ---- */

typedef void (*xfer_fn)(void *, const void *, size_t, int);
typedef void (*ixfer_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);
static const struct {
    const char *name;
    size_t size;
    xfer_fn put, put_nbi, get, get_nbi;
    ixfer_fn iput, iget;
} sized[] = {
    {"8", 1, shmem_put8, shmem_put8_nbi, shmem_get8, shmem_get8_nbi, shmem_iput8, shmem_iget8},
    {"16", 2, shmem_put16, shmem_put16_nbi, shmem_get16, shmem_get16_nbi, shmem_iput16,
     shmem_iget16},
    {"32", 4, shmem_put32, shmem_put32_nbi, shmem_get32, shmem_get32_nbi, shmem_iput32,
     shmem_iget32},
    {"64", 8, shmem_put64, shmem_put64_nbi, shmem_get64, shmem_get64_nbi, shmem_iput64,
     shmem_iget64},
    {"128", 16, shmem_put128, shmem_put128_nbi, shmem_get128, shmem_get128_nbi, shmem_iput128,
     shmem_iget128},
    {"mem", 1, shmem_putmem, shmem_putmem_nbi, shmem_getmem, shmem_getmem_nbi, NULL, NULL},
};
#define NSIZED (sizeof(sized) / sizeof(sized[0]))

/** Index of the first byte where a and b differ, or -1. */
static long first_diff(const unsigned char *a, const unsigned char *b, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        if (a[i] != b[i]) {
            return (long)i;
        }
    }
    return -1;
}

static void test_sized(unsigned char *dst, const char *where)
{
    unsigned char *want = malloc(REGION_BYTES);
    unsigned char *pat = malloc(REGION_BYTES);
    CHECK(NULL != want && NULL != pat, "malloc failed");
    unsigned char *r[2], *l[2];
    for (size_t z = 0; z < NSIZED; ++z) {
        const size_t es = sized[z].size;
        const int is_mem = NULL == sized[z].iput;
        /* contiguous; putmem also at unaligned offsets of both buffers */
        for (size_t k = 0; k < NCOUNTS; ++k) {
            size_t n = (k == NCOUNTS - 1) ? ((size_t)1 << 20) / es : counts[k];
            static const size_t offsets[] = {0, 1, 3}; /* putmem: also unaligned */
            for (size_t o = 0; o < (is_mem ? 3u : 1u); ++o) {
                const size_t off = offsets[o];
                for (int nbi = 0; nbi < 2; ++nbi) {
                    const char *how = nbi ? "_nbi" : "";
                    unsigned tag = ++tag_counter;
                    size_t len = n * es;
                    SET_REGIONS(unsigned char, dst, r, l);
                    for (int d = 0; d < 2; ++d) {
                        test_fill(r[d], len + 2 * off + 16, tag_seed(SENTINEL_PE, tag));
                        memset(l[d], 0xee, len + off + 16);
                    }
                    test_fill(src + off, len, tag_seed(me, tag));
                    shmem_barrier_all();
                    for (int d = 0; d < 2; ++d) {
                        (nbi ? sized[z].put_nbi : sized[z].put)(r[d] + off, src + off, n,
                                                                (me + d) % npes);
                    }
                    if (nbi) {
                        shmem_quiet();
                    }
                    shmem_barrier_all();
                    for (int d = 0; d < 2; ++d) {
                        int to = (me + d) % npes, from = (me + npes - d) % npes;
                        /* expected: sentinel, then from's data at off, then sentinel */
                        test_fill(want, len + 2 * off + 16, tag_seed(SENTINEL_PE, tag));
                        test_fill(pat, len, tag_seed(from, tag));
                        memcpy(want + off, pat, len);
                        long bad = first_diff(r[d], want, len + 2 * off + 16);
                        CHECK(bad < 0,
                              "shmem_put%s%s (%s) of %zu elements at offset %zu to %s from "
                              "PE %d: byte %ld wrong",
                              sized[z].name, how, dir_name(d), n, off, where, from, bad);
                        /* get back what this PE put */
                        (nbi ? sized[z].get_nbi : sized[z].get)(l[d] + off, r[d] + off, n, to);
                    }
                    if (nbi) {
                        shmem_quiet();
                    }
                    for (int d = 0; d < 2; ++d) {
                        long bad = test_verify(l[d] + off, len, tag_seed(me, tag));
                        CHECK(bad < 0,
                              "shmem_get%s%s (%s) of %zu elements from %s of PE %d: byte "
                              "%ld wrong",
                              sized[z].name, how, dir_name(d), n, where, (me + d) % npes, bad);
                        CHECK(l[d][off + len] == 0xee && (0 == off || l[d][off - 1] == 0xee),
                              "shmem_get%s%s of %zu elements: wrote outside", sized[z].name, how,
                              n);
                    }
                }
            }
        }
        if (is_mem) {
            continue;
        }
        /* strided */
        for (size_t k = 0; k < NSTRIDES; ++k) {
            ptrdiff_t tst = strides[k].tst, sst = strides[k].sst;
            size_t n = strides[k].n;
            size_t dspan = ((n - 1) * (size_t)tst + 1 + (size_t)tst) * es;
            size_t sspan = ((n - 1) * (size_t)sst + 1) * es;
            size_t lspan = (3 * n + 1) * es;
            unsigned tag = ++tag_counter;
            SET_REGIONS(unsigned char, dst, r, l);
            for (int d = 0; d < 2; ++d) {
                test_fill(r[d], dspan, tag_seed(SENTINEL_PE, tag));
                memset(l[d], 0xee, lspan);
            }
            test_fill(src, sspan, tag_seed(me, tag));
            shmem_barrier_all();
            for (int d = 0; d < 2; ++d) {
                sized[z].iput(r[d], src, tst, sst, n, (me + d) % npes);
            }
            shmem_barrier_all();
            for (int d = 0; d < 2; ++d) {
                int to = (me + d) % npes, from = (me + npes - d) % npes;
                test_fill(want, dspan, tag_seed(SENTINEL_PE, tag));
                test_fill(pat, sspan, tag_seed(from, tag));
                for (size_t i = 0; i < n; ++i) {
                    memcpy(want + i * (size_t)tst * es, pat + i * (size_t)sst * es, es);
                }
                long bad = first_diff(r[d], want, dspan);
                CHECK(bad < 0,
                      "shmem_iput%s(tst %td, sst %td, %zu) (%s) to %s from PE %d: byte %ld "
                      "wrong",
                      sized[z].name, tst, sst, n, dir_name(d), where, from, bad);
                /* iget with local stride 3 of the remote strided elements */
                sized[z].iget(l[d], r[d], 3, tst, n, to);
                memset(want, 0xee, lspan);
                test_fill(pat, sspan, tag_seed(me, tag));
                for (size_t i = 0; i < n; ++i) {
                    memcpy(want + 3 * i * es, pat + i * (size_t)sst * es, es);
                }
                bad = first_diff(l[d], want, lspan);
                CHECK(bad < 0, "shmem_iget%s(3, %td, %zu) (%s) from %s of PE %d: byte %ld wrong",
                      sized[z].name, tst, n, dir_name(d), where, to, bad);
            }
        }
    }
    shmem_barrier_all(); /* the buffers are free for the next user */
    free(pat);
    free(want);
}

/* ---- C11 generic routines (long and double) ---- */
static void test_generic(long *ldst, double *ddst, const char *where)
{
    int to = (me + 1) % npes, from = (me + npes - 1) % npes;
    long ls[8];
    double ds[8];
    for (int i = 0; i < 8; ++i) {
        ls[i] = 1000L * me + i;
        ds[i] = 0.5 * me + i;
        ldst[i] = -1;
        ddst[i] = -1;
    }
    shmem_barrier_all();
    shmem_put(ldst, ls, 4, to);
    shmem_put_nbi(ddst, ds, 4, to);
    shmem_p(&ldst[4], 1000L * me + 4, to);
    shmem_p(&ddst[4], 0.5 * me + 4, to);
    shmem_iput(&ldst[5], &ls[5], 2, 1, 2, to); /* elements 5, 6 into 5, 7 */
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 5; ++i) {
        CHECK(ldst[i] == 1000L * from + i, "C11 shmem_put/p long to %s: element %d = %ld", where, i,
              ldst[i]);
        CHECK(ddst[i] == 0.5 * from + i, "C11 shmem_put_nbi/p double to %s: element %d = %g", where,
              i, ddst[i]);
    }
    CHECK(ldst[5] == 1000L * from + 5 && ldst[6] == -1 && ldst[7] == 1000L * from + 6,
          "C11 shmem_iput long to %s: %ld %ld %ld", where, ldst[5], ldst[6], ldst[7]);
    long lg[4] = {0};
    double dg[4] = {0};
    shmem_get(lg, ldst, 4, to);
    shmem_get_nbi(dg, ddst, 4, to);
    shmem_quiet();
    for (int i = 0; i < 4; ++i) {
        CHECK(lg[i] == 1000L * me + i && dg[i] == 0.5 * me + i, "C11 shmem_get/get_nbi element %d",
              i);
    }
    CHECK(shmem_g(&ldst[4], to) == 1000L * me + 4, "C11 shmem_g long");
    CHECK(shmem_g(&ddst[4], to) == 0.5 * me + 4, "C11 shmem_g double");
    long li[2] = {0, 0};
    shmem_iget(li, &ldst[5], 1, 2, 2, to); /* elements 5, 7 */
    CHECK(li[0] == 1000L * me + 5 && li[1] == 1000L * me + 6, "C11 shmem_iget long: %ld %ld", li[0],
          li[1]);
    shmem_barrier_all();
}

/* ---- all-to-all: every PE puts a block into its slot on every PE ---- */
static void test_alltoall(unsigned char *dst, const char *where)
{
    const size_t blk = 10007;
    CHECK((size_t)npes * blk <= BUF_BYTES, "too many PEs for the all-to-all");
    unsigned tag = ++tag_counter;
    test_fill(src, blk, tag_seed(me, tag));
    memset(dst, 0, (size_t)npes * blk);
    shmem_barrier_all();
    for (int i = 1; i <= npes; ++i) {
        int p = (me + i) % npes;
        shmem_putmem(dst + (size_t)me * blk, src, blk, p);
    }
    shmem_barrier_all();
    for (int p = 0; p < npes; ++p) {
        long bad = test_verify(dst + (size_t)p * blk, blk, tag_seed(p, tag));
        CHECK(bad < 0, "all-to-all in %s: block of PE %d, byte %ld wrong", where, p, bad);
    }
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    heap = shmem_malloc(BUF_BYTES);
    src = malloc(BUF_BYTES);
    loc = malloc(BUF_BYTES);
    CHECK(NULL != heap && NULL != src && NULL != loc, "allocation of the buffers failed");

    for (int target = 0; target < 2; ++target) {
        unsigned char *base = target ? gdata.bytes : heap;
        const char *where = target ? "static array" : "heap";
        char what[64];
#define X_CALL(T, N, MASK)                                             \
    snprintf(what, sizeof(what), "shmem_" #N "_* into the %s", where); \
    test_section(what);                                                \
    test_##N(target ? gdata.a_##N : (T *)(void *)heap, where);
        RMA_TYPES(X_CALL)
        snprintf(what, sizeof(what), "sized put/get/iput/iget into the %s", where);
        test_section(what);
        test_sized(base, where);
        test_generic((long *)(void *)base, (double *)(void *)(base + 4096), where);
        test_alltoall(base, where);
    }

    shmem_free(heap);
    free(src);
    free(loc);
    return test_pass("shmem_rma");
}
