/*
 * shmem_setup.c: library setup and query routines.
 *
 * shmem_init_thread(SHMEM_THREAD_MULTIPLE) and shmem_query_thread; shmem_my_pe
 * and shmem_n_pes (every PE number seen exactly once, the same PE count
 * everywhere); shmem_pe_accessible for valid and invalid PE numbers;
 * shmem_addr_accessible for the symmetric heap, global and static variables,
 * and for private memory (stack, malloc) which is not remotely accessible;
 * shmem_ptr (to itself: the object's own address; to another PE: when not
 * NULL, stores and loads through it are the owner's object);
 * shmem_info_get_version / shmem_info_get_name against the header's macros;
 * shmem_pcontrol (1.5) at each level; shmemx_wtime advances.
 * (shmem_init itself is used by every other test program.)
 */
#include "shmem_test.h"

#include <shmemx.h>

#define MAX_PES 256

long global_long[8];             /* a global variable: symmetric, remotely accessible */
static int static_ints[MAX_PES]; /* a static variable: the same */
static long seen_pe[MAX_PES];    /* on PE 0: seen_pe[p] = p + 1 once PE p reported */
static long seen_npes[MAX_PES];  /* on PE 0: the PE count PE p saw */

int main(void)
{
    int provided = -1;
    int rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(0 == rc, "shmem_init_thread returned %d", rc);

    /* Thread levels: the constants are ordered, provided is one of them and
     * shmem_query_thread reports the same level. */
    CHECK(SHMEM_THREAD_SINGLE < SHMEM_THREAD_FUNNELED &&
              SHMEM_THREAD_FUNNELED < SHMEM_THREAD_SERIALIZED &&
              SHMEM_THREAD_SERIALIZED < SHMEM_THREAD_MULTIPLE,
          "thread level constants not in increasing order");
    CHECK(provided >= SHMEM_THREAD_SINGLE && provided <= SHMEM_THREAD_MULTIPLE,
          "shmem_init_thread provided %d, not a thread level", provided);
    int queried = -1;
    shmem_query_thread(&queried);
    CHECK(queried == provided, "shmem_query_thread says %d, shmem_init_thread provided %d", queried,
          provided);

    const int me = shmem_my_pe();
    const int npes = shmem_n_pes();
    CHECK(npes >= 1 && npes <= MAX_PES, "shmem_n_pes() = %d (test supports 1..%d)", npes, MAX_PES);
    CHECK(me >= 0 && me < npes, "shmem_my_pe() = %d with %d PEs", me, npes);
    CHECK(shmem_my_pe() == me && shmem_n_pes() == npes, "my_pe / n_pes changed between calls");

    /* Every PE reports to PE 0; PE 0 sees each PE number once and one PE count. */
    test_section("my_pe / n_pes");
    shmem_long_p(&seen_pe[me], me + 1, 0);
    shmem_long_p(&seen_npes[me], npes, 0);
    shmem_barrier_all();
    if (0 == me) {
        for (int p = 0; p < npes; ++p) {
            CHECK(seen_pe[p] == p + 1, "PE number %d reported %ld (expected %d once)", p,
                  seen_pe[p], p + 1);
            CHECK(seen_npes[p] == npes, "PE %d saw %ld PEs, PE 0 saw %d", p, seen_npes[p], npes);
        }
    }

    /* shmem_pe_accessible: every PE of the job is, numbers outside 0..npes-1 are not. */
    test_section("shmem_pe_accessible");
    for (int p = 0; p < npes; ++p) {
        CHECK(1 == shmem_pe_accessible(p), "shmem_pe_accessible(%d) = %d with %d PEs", p,
              shmem_pe_accessible(p), npes);
    }
    const int bad_pes[] = {-1, npes, npes + 1, npes + 1000};
    for (size_t i = 0; i < sizeof(bad_pes) / sizeof(bad_pes[0]); ++i) {
        CHECK(0 == shmem_pe_accessible(bad_pes[i]), "shmem_pe_accessible(%d) = %d with %d PEs",
              bad_pes[i], shmem_pe_accessible(bad_pes[i]), npes);
    }

    /* shmem_addr_accessible: symmetric heap (start and inside a block), global
     * and static variables are accessible on every PE; stack and private heap
     * memory are not. */
    test_section("shmem_addr_accessible");
    char *heap = shmem_malloc(4096);
    CHECK(NULL != heap, "shmem_malloc(4096) returned NULL");
    int on_stack = 0;
    char *private_heap = malloc(4096);
    CHECK(NULL != private_heap, "malloc failed");
    for (int p = 0; p < npes; ++p) {
        CHECK(1 == shmem_addr_accessible(heap, p), "heap block not accessible on PE %d", p);
        CHECK(1 == shmem_addr_accessible(heap + 1000, p),
              "inside heap block not accessible on PE %d", p);
        CHECK(1 == shmem_addr_accessible(&global_long[3], p),
              "global variable not accessible on PE %d", p);
        CHECK(1 == shmem_addr_accessible(&static_ints[me], p),
              "static variable not accessible on PE %d", p);
        CHECK(0 == shmem_addr_accessible(&on_stack, p), "stack variable accessible on PE %d", p);
        CHECK(0 == shmem_addr_accessible(private_heap, p), "malloc'd memory accessible on PE %d",
              p);
    }
    free(private_heap);

    /* shmem_ptr to itself: the object's own address. */
    test_section("shmem_ptr");
    CHECK(shmem_ptr(heap, me) == (void *)heap, "shmem_ptr(heap, me) = %p, heap = %p",
          shmem_ptr(heap, me), (void *)heap);
    CHECK(shmem_ptr(heap + 100, me) == (void *)(heap + 100), "shmem_ptr(heap + 100, me) = %p",
          shmem_ptr(heap + 100, me));
    CHECK(shmem_ptr(&global_long[2], me) == (void *)&global_long[2],
          "shmem_ptr(&global_long[2], me) = %p, expected %p", shmem_ptr(&global_long[2], me),
          (void *)&global_long[2]);
    CHECK(shmem_ptr(&static_ints[1], me) == (void *)&static_ints[1],
          "shmem_ptr(&static_ints[1], me) = %p, expected %p", shmem_ptr(&static_ints[1], me),
          (void *)&static_ints[1]);

    /* shmem_ptr to every other PE: when it gives an address, a store through it
     * lands in the owner's object (heap and static), and a load through it reads
     * the owner's value. Each PE writes its own slot, so there are no races. */
    long *heap_slots = shmem_malloc(MAX_PES * sizeof(long));
    CHECK(NULL != heap_slots, "shmem_malloc failed");
    for (int p = 0; p < MAX_PES; ++p) {
        heap_slots[p] = -1;
        static_ints[p] = -1;
    }
    global_long[0] = 1000 + me; /* read by the others through shmem_ptr */
    int direct = 0;
    shmem_barrier_all();
    for (int p = 0; p < npes; ++p) {
        if (p == me) {
            continue;
        }
        long *rh = shmem_ptr(heap_slots, p);
        int *rs = shmem_ptr(static_ints, p);
        long *rg = shmem_ptr(global_long, p);
        if (NULL != rh) {
            rh[me] = 5000 + 10 * me + p;
            ++direct;
        } else {
            shmem_long_p(&heap_slots[me], 5000 + 10 * me + p, p);
        }
        if (NULL != rs) {
            rs[me] = 7000 + 10 * me + p;
        } else {
            shmem_int_p(&static_ints[me], 7000 + 10 * me + p, p);
        }
        if (NULL != rg) {
            CHECK(rg[0] == 1000 + p, "load through shmem_ptr(global_long, %d) = %ld, expected %d",
                  p, rg[0], 1000 + p);
        }
    }
    shmem_barrier_all();
    for (int p = 0; p < npes; ++p) {
        if (p == me) {
            CHECK(heap_slots[p] == -1 && static_ints[p] == -1, "own slot overwritten");
            continue;
        }
        CHECK(heap_slots[p] == 5000 + 10 * p + me, "heap slot of PE %d = %ld, expected %d", p,
              heap_slots[p], 5000 + 10 * p + me);
        CHECK(static_ints[p] == 7000 + 10 * p + me, "static slot of PE %d = %d, expected %d", p,
              static_ints[p], 7000 + 10 * p + me);
    }
    if (0 == me) {
        printf("    shmem_ptr gave a direct address to %d of %d other PEs\n", direct, npes - 1);
    }
    shmem_free(heap_slots);
    shmem_free(heap);

    /* Version and name queries against the header. */
    test_section("shmem_info_get_version / shmem_info_get_name");
    int major = -1, minor = -1;
    shmem_info_get_version(&major, &minor);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION,
          "shmem_info_get_version says %d.%d, shmem.h says %d.%d", major, minor,
          SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    CHECK(SHMEM_MAJOR_VERSION >= 1, "SHMEM_MAJOR_VERSION = %d", SHMEM_MAJOR_VERSION);
    char name[SHMEM_MAX_NAME_LEN + 16];
    memset(name, 0x7f, sizeof(name));
    shmem_info_get_name(name);
    size_t len = strnlen(name, sizeof(name));
    CHECK(len > 0 && len < SHMEM_MAX_NAME_LEN,
          "shmem_info_get_name: length %zu (expected 1..%d, NUL-terminated)", len,
          SHMEM_MAX_NAME_LEN - 1);
    CHECK(strlen(SHMEM_VENDOR_STRING) < SHMEM_MAX_NAME_LEN, "SHMEM_VENDOR_STRING too long");
#if SHMEM_TEST_V15
    /* 1.5: profiling control takes the levels 0, 1, 2 (and may ignore them). */
    shmem_pcontrol(0);
    shmem_pcontrol(2);
    shmem_pcontrol(1);
#endif
#ifdef WEFT_SHMEMX_H
    /* The Sandia OpenSHMEM extension shmemx_wtime (weft's shmemx.h): seconds, advancing. */
    const double w0 = shmemx_wtime();
    double w1 = w0;
    for (int i = 0; i < 1000000 && w1 == w0; ++i) {
        w1 = shmemx_wtime();
    }
    CHECK(w0 > 0 && w1 > w0 && w1 - w0 < 1.0, "shmemx_wtime: %.9f then %.9f", w0, w1);
#endif
    if (0 == me) {
        printf("    version %d.%d, name \"%s\", vendor string \"%s\", thread level %d\n", major,
               minor, name, SHMEM_VENDOR_STRING, provided);
    }

    return test_pass("shmem_setup");
}
