/*
 * shmem_cxx.cpp: the generic names from C++ (overloads in shmem.h, as Sandia
 * OpenSHMEM's header provides them), built with oshc++.
 *
 * On the right neighbour, for long, int, double and unsigned long long:
 * shmem_p / shmem_g, shmem_put / shmem_get (plain and on a context),
 * shmem_atomic_* of each set and the 1.3 names (shmem_add, shmem_fetch,
 * shmem_cswap, ...), exact values; shmem_sum_reduce, shmem_max_reduce and
 * shmem_or_reduce on SHMEM_TEAM_WORLD; shmem_broadcast; shmem_wait_until and
 * shmem_test on a flag the left neighbour sets.
 */
#include "shmem_test.h"

static long xl, flag;
static int xi;
static double xd;
static unsigned long long xu;

int main()
{
    shmem_init();
    const int me = shmem_my_pe(), npes = shmem_n_pes();
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *heap = static_cast<long *>(shmem_malloc(16 * sizeof(long)));
    CHECK(heap != nullptr, "shmem_malloc failed");
    for (int i = 0; i < 16; ++i) {
        heap[i] = 100L * me + i;
    }
    shmem_barrier_all();

    test_section("RMA");
    shmem_p(&xl, 1000L + me, right);
    shmem_p(&xi, 2000 + me, right);
    shmem_p(&xd, 0.5 + me, right);
    shmem_put(heap + 8, heap, 4, right);
    shmem_barrier_all();
    CHECK(xl == 1000L + left && xi == 2000 + left && xd == 0.5 + left,
          "shmem_p: %ld %d %g from PE %d", xl, xi, xd, left);
    for (int i = 0; i < 4; ++i) {
        CHECK(heap[8 + i] == 100L * left + i, "shmem_put: element %d is %ld", i, heap[8 + i]);
    }
    CHECK(shmem_g(&xl, right) == 1000L + me, "shmem_g read %ld", shmem_g(&xl, right));
    long got[4];
    shmem_get(got, heap, 4, right);
    for (int i = 0; i < 4; ++i) {
        CHECK(got[i] == 100L * right + i, "shmem_get: element %d is %ld", i, got[i]);
    }
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "shmem_ctx_create failed");
    shmem_put(ctx, heap + 12, heap + 1, 2, right);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    CHECK(heap[12] == 100L * left + 1 && heap[13] == 100L * left + 2,
          "shmem_put on a context: %ld %ld", heap[12], heap[13]);

    test_section("atomics");
    shmem_barrier_all();
    xl = 0;
    xu = 0;
    shmem_barrier_all();
    shmem_atomic_set(&xl, 10L, right);
    shmem_atomic_add(&xl, 5L, right);
    shmem_add(&xl, 1L, right);
    shmem_atomic_inc(&xl, right);
    CHECK(shmem_atomic_fetch_add(&xl, 3L, right) == 17, "shmem_atomic_fetch_add");
    CHECK(shmem_fadd(&xl, 1L, right) == 20, "shmem_fadd");
    CHECK(shmem_atomic_compare_swap(&xl, 21L, 40L, right) == 21, "shmem_atomic_compare_swap");
    CHECK(shmem_cswap(&xl, 1L, 50L, right) == 40, "shmem_cswap (fails: no swap)");
    CHECK(shmem_atomic_swap(&xl, 60L, right) == 40, "shmem_atomic_swap");
    CHECK(shmem_fetch(&xl, right) == 60, "shmem_fetch");
    shmem_atomic_or(&xu, 0x5ULL, right);
    CHECK(shmem_atomic_fetch_xor(&xu, 0x3ULL, right) == 0x5ULL, "shmem_atomic_fetch_xor");
    CHECK(shmem_atomic_fetch(&xu, right) == 0x6ULL, "shmem_atomic_fetch (ulonglong)");
    CHECK(shmem_atomic_swap(&xd, 2.25, right) == 0.5 + me, "shmem_atomic_swap (double)");

    test_section("collectives");
    shmem_barrier_all();
    long *src = heap, *dst = heap + 8;
    src[0] = me + 1;
    src[1] = me;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "shmem_sum_reduce failed");
    CHECK(dst[0] == (long)npes * (npes + 1) / 2, "shmem_sum_reduce: %ld", dst[0]);
    CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, dst, src + 1, 1) == 0, "shmem_max_reduce failed");
    CHECK(dst[0] == npes - 1, "shmem_max_reduce: %ld", dst[0]);
    unsigned long *bits = reinterpret_cast<unsigned long *>(heap + 4);
    bits[0] = 1UL << me;
    shmem_barrier_all();
    CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, bits + 1, bits, 1) == 0, "shmem_or_reduce failed");
    CHECK(bits[1] == (1UL << npes) - 1, "shmem_or_reduce: %lx", bits[1]);
    src[2] = 77 + me;
    shmem_barrier_all();
    CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, dst + 2, src + 2, 1, 0) == 0, "shmem_broadcast");
    CHECK(dst[2] == 77, "shmem_broadcast: %ld", dst[2]);

    test_section("wait_until, test");
    shmem_barrier_all();
    shmem_atomic_set(&flag, 1L, right);
    shmem_wait_until(&flag, SHMEM_CMP_EQ, 1L);
    CHECK(shmem_test(&flag, SHMEM_CMP_EQ, 1L) == 1, "shmem_test after wait_until");
    return test_pass("shmem_cxx");
}
