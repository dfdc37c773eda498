/*
 * shmem_heap.c: the symmetric heap.
 *
 * shmem_malloc of many sizes (blocks are symmetric: data put into the
 * neighbour's block arrives in the neighbour's corresponding block and reads
 * back; live blocks do not overlap; alignment fits any use), interleaved
 * shmem_free and new allocations, shmem_calloc (zeroed even on reused memory,
 * and zeroed everywhere before it returns anywhere: a put right after it stays),
 * shmem_realloc (contents kept, still symmetric, NULL pointer and zero size),
 * shmem_align (several alignments honoured), shmem_malloc(0), shmem_free(NULL),
 * freed memory being reusable, shmem_malloc_with_hints (1.5), and a 64 MiB block.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#include <stdalign.h>

static int me, npes, right, left;

/** Pattern seed of the data PE @p pe writes for block @p tag. */
static uint64_t seed(int pe, uint64_t tag)
{
    return tag * 1000 + (uint64_t)pe + 1;
}

/*
 * The blocks blk[0..n) (each len[i] bytes, the same on every PE) are symmetric
 * and separate: every PE puts its pattern for block i into block i of its right
 * neighbour, then finds its left neighbour's patterns in its own blocks (a wrong
 * address or an overlap breaks them), then gets its own patterns back from the
 * right neighbour. Barriers before and after: the blocks are not touched by
 * anyone else around the check.
 */
static void check_blocks(void **blk, const size_t *len, int n, uint64_t tag)
{
    size_t max = 1;
    for (int i = 0; i < n; ++i) {
        max = len[i] > max ? len[i] : max;
    }
    unsigned char *tmp = malloc(max);
    CHECK(NULL != tmp, "malloc(%zu) failed", max);
    shmem_barrier_all(); /* nobody still reads the blocks from an earlier check */
    for (int i = 0; i < n; ++i) {
        test_fill(tmp, len[i], seed(me, tag + (uint64_t)i));
        shmem_putmem(blk[i], tmp, len[i], right);
    }
    shmem_barrier_all();
    for (int i = 0; i < n; ++i) {
        long bad = test_verify(blk[i], len[i], seed(left, tag + (uint64_t)i));
        CHECK(bad < 0, "block %d (%zu bytes at %p): byte %ld is not what PE %d put", i, len[i],
              blk[i], bad, left);
    }
    for (int i = 0; i < n; ++i) {
        memset(tmp, 0, len[i]);
        shmem_getmem(tmp, blk[i], len[i], right);
        long bad = test_verify(tmp, len[i], seed(me, tag + (uint64_t)i));
        CHECK(bad < 0, "block %d (%zu bytes): byte %ld read back from PE %d is wrong", i, len[i],
              bad, right);
    }
    free(tmp);
    shmem_barrier_all(); /* the left neighbour is done reading my blocks: the caller may change them
                          */
}

static void check_block(void *blk, size_t len, uint64_t tag)
{
    check_blocks(&blk, &len, 1, tag);
}

static int aligned(const void *p, size_t a)
{
    return 0 == (uintptr_t)p % a;
}

#define NBLK 64

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    const size_t any_align = alignof(max_align_t);

    /* Many blocks of varied sizes (the same sequence on every PE). */
    test_section("shmem_malloc: many sizes, symmetric, separate");
    void *blk[NBLK];
    size_t len[NBLK];
    for (int i = 0; i < NBLK; ++i) {
        uint64_t r = test_word(7, (uint64_t)i);
        len[i] = 1 + (size_t)(r % ((i % 4 == 0) ? 200000 : (i % 4 == 1) ? 64 : 5000));
        blk[i] = shmem_malloc(len[i]);
        CHECK(NULL != blk[i], "shmem_malloc(%zu) returned NULL (block %d)", len[i], i);
        CHECK(aligned(blk[i], any_align), "shmem_malloc(%zu) = %p not aligned to %zu", len[i],
              blk[i], any_align);
    }
    check_blocks(blk, len, NBLK, 100);

    /* Free every other block, allocate others of new sizes in between: the heap
     * stays symmetric when blocks are reused. */
    test_section("shmem_free and shmem_malloc interleaved");
    for (int i = 0; i < NBLK; i += 2) {
        shmem_free(blk[i]);
        blk[i] = NULL;
    }
    for (int i = 0; i < NBLK; i += 2) {
        len[i] = 1 + (size_t)(test_word(8, (uint64_t)i) % 30000);
        blk[i] = shmem_malloc(len[i]);
        CHECK(NULL != blk[i], "shmem_malloc(%zu) returned NULL", len[i]);
    }
    check_blocks(blk, len, NBLK, 200);
    for (int i = NBLK - 1; i >= 0; --i) {
        shmem_free(blk[i]);
    }

    /* Freed memory is reusable: 100 x (1 MiB malloc, use, free). */
    test_section("shmem_free makes memory reusable");
    for (int i = 0; i < 100; ++i) {
        char *p = shmem_malloc(1 << 20);
        CHECK(NULL != p, "shmem_malloc(1 MiB) failed in round %d: freed memory not reused?", i);
        shmem_char_p(&p[(i * 4099) % (1 << 20)], (char)(me + i), right);
        shmem_barrier_all();
        CHECK(p[(i * 4099) % (1 << 20)] == (char)(left + i),
              "round %d: put into a reused block lost", i);
        shmem_free(p);
    }

    /* shmem_calloc: zeroed, also when the memory was used and freed before. */
    test_section("shmem_calloc");
    const size_t cnt[] = {1, 10, 1000, 4096, 100000};
    const size_t esz[] = {1, 8, 3, 16, 4};
    for (size_t k = 0; k < sizeof(cnt) / sizeof(cnt[0]); ++k) {
        size_t bytes = cnt[k] * esz[k];
        unsigned char *dirty = shmem_malloc(bytes);
        CHECK(NULL != dirty, "shmem_malloc(%zu) failed", bytes);
        memset(dirty, 0xa5, bytes);
        shmem_free(dirty);
        unsigned char *z = shmem_calloc(cnt[k], esz[k]);
        CHECK(NULL != z, "shmem_calloc(%zu, %zu) returned NULL", cnt[k], esz[k]);
        CHECK(aligned(z, any_align), "shmem_calloc result %p not aligned to %zu", (void *)z,
              any_align);
        /* Every PE has zeroed its block before shmem_calloc returns on any PE:
         * a put right after the call is not wiped out by a late zeroing. */
        unsigned char mark[8];
        size_t mlen = bytes < sizeof(mark) ? bytes : sizeof(mark);
        test_fill(mark, mlen, seed(me, 310 + k));
        shmem_putmem(z, mark, mlen, right);
        shmem_barrier_all();
        long bad = test_verify(z, mlen, seed(left, 310 + k));
        CHECK(bad < 0,
              "shmem_calloc(%zu, %zu): byte %ld of a put done right after the call "
              "(by PE %d) lost: zeroed after the call returned there?",
              cnt[k], esz[k], bad, left);
        for (size_t i = mlen; i < bytes; ++i) {
            CHECK(0 == z[i], "shmem_calloc(%zu, %zu): byte %zu is 0x%x", cnt[k], esz[k], i, z[i]);
        }
        check_block(z, bytes, 300 + k);
        shmem_free(z);
    }

    /* shmem_realloc: grow (moving past a block allocated after it), shrink,
     * NULL pointer (like shmem_malloc), zero size (frees). */
    test_section("shmem_realloc");
    {
        size_t n0 = 800;
        unsigned char *p = shmem_malloc(n0);
        CHECK(NULL != p, "shmem_malloc(%zu) failed", n0);
        void *blocker = shmem_malloc(64); /* right after p, likely: growing must move */
        CHECK(NULL != blocker, "shmem_malloc(64) failed");
        test_fill(p, n0, seed(me, 400));
        size_t n1 = 1 << 20;
        p = shmem_realloc(p, n1);
        CHECK(NULL != p, "shmem_realloc(p, %zu) returned NULL", n1);
        long bad = test_verify(p, n0, seed(me, 400));
        CHECK(bad < 0, "shmem_realloc to %zu bytes: byte %ld of the old contents changed", n1, bad);
        check_block(p, n1, 401);

        test_fill(p, n1, seed(me, 402));
        size_t n2 = 400;
        p = shmem_realloc(p, n2);
        CHECK(NULL != p, "shmem_realloc(p, %zu) returned NULL", n2);
        bad = test_verify(p, n2, seed(me, 402));
        CHECK(bad < 0, "shmem_realloc to %zu bytes: byte %ld of the contents changed", n2, bad);
        check_block(p, n2, 403);

        unsigned char *q = shmem_realloc(NULL, 5000);
        CHECK(NULL != q, "shmem_realloc(NULL, 5000) returned NULL");
        check_block(q, 5000, 404);

        shmem_realloc(p, 0); /* frees p */
        shmem_free(q);
        shmem_free(blocker);
        shmem_free(NULL); /* no action */
    }

    /* shmem_align: each alignment honoured, blocks symmetric. */
    test_section("shmem_align");
    {
        const size_t al[] = {sizeof(void *), 16, 64, 256, 4096, 65536, 1 << 20};
        const size_t sz[] = {1, 100, 10000};
        enum { NAL = sizeof(al) / sizeof(al[0]), NSZ = sizeof(sz) / sizeof(sz[0]) };
        void *ab[NAL * NSZ];
        size_t alen[NAL * NSZ];
        for (size_t a = 0; a < NAL; ++a) {
            for (size_t s = 0; s < NSZ; ++s) {
                size_t i = a * NSZ + s;
                ab[i] = shmem_align(al[a], sz[s]);
                alen[i] = sz[s];
                CHECK(NULL != ab[i], "shmem_align(%zu, %zu) returned NULL", al[a], sz[s]);
                CHECK(aligned(ab[i], al[a]), "shmem_align(%zu, %zu) = %p is not aligned", al[a],
                      sz[s], ab[i]);
            }
        }
        check_blocks(ab, alen, NAL * NSZ, 500);
        for (size_t i = 0; i < NAL * NSZ; ++i) {
            shmem_free(ab[i]);
        }
    }

    /* shmem_malloc(0): a null pointer in 1.5; in 1.4 unspecified, but freeing
     * what it returned must work. */
    test_section("shmem_malloc(0)");
    {
        void *z = shmem_malloc(0);
#if SHMEM_TEST_V15
        CHECK(NULL == z, "shmem_malloc(0) = %p, expected a null pointer", z);
        void *za = shmem_align(64, 0);
        CHECK(NULL == za, "shmem_align(64, 0) = %p, expected a null pointer", za);
#endif
        shmem_free(z);
        /* The heap still works afterwards. */
        void *after = shmem_malloc(128);
        CHECK(NULL != after, "shmem_malloc(128) after shmem_malloc(0) failed");
        check_block(after, 128, 600);
        shmem_free(after);
    }

#if SHMEM_TEST_V15
    /* shmem_malloc_with_hints: usable for RMA, atomics and signals whatever the hints. */
    test_section("shmem_malloc_with_hints");
    {
        const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                              SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
        for (size_t h = 0; h < sizeof(hints) / sizeof(hints[0]); ++h) {
            uint64_t *w = shmem_malloc_with_hints(64 * sizeof(uint64_t), hints[h]);
            CHECK(NULL != w, "shmem_malloc_with_hints(512, %ld) returned NULL", hints[h]);
            CHECK(aligned(w, any_align), "shmem_malloc_with_hints result %p not aligned",
                  (void *)w);
            w[0] = 0;
            check_block(&w[1], 63 * sizeof(uint64_t), 700 + h);
            /* every PE adds me + 1 to word 0 of every PE */
            for (int p = 0; p < npes; ++p) {
                shmem_uint64_atomic_add(&w[0], (uint64_t)me + 1, p);
            }
            shmem_barrier_all();
            uint64_t expect = (uint64_t)npes * (uint64_t)(npes + 1) / 2;
            CHECK(w[0] == expect, "hints %ld: atomic sum %llu, expected %llu", hints[h],
                  (unsigned long long)w[0], (unsigned long long)expect);
            shmem_free(w);
        }
        uint64_t *z = shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE);
        CHECK(NULL == z, "shmem_malloc_with_hints(0, ...) = %p, expected a null pointer",
              (void *)z);
    }
#endif

    /* A large block: 64 MiB, all of it put to the neighbour and checked. */
    test_section("64 MiB block");
    {
        size_t big = (size_t)64 << 20;
        unsigned char *b = shmem_malloc(big);
        CHECK(NULL != b, "shmem_malloc(64 MiB) returned NULL");
        check_block(b, big, 800);
        shmem_free(b);
    }

    return test_pass("shmem_heap");
}
