/*
 * shmem_order.c: memory ordering and completion.
 *
 * shmem_fence: a PE writes a block, then (after a fence) an overlapping
 * smaller block, then (after a fence) a flag, all to its right neighbour; the
 * neighbour waits for the flag and must find the second write on top of the
 * first. The flag is an atomic set or a plain put (shmem_long_p); data and
 * flag are each in the symmetric heap or in static memory (all four
 * combinations: the fence orders operations to one PE whatever memory they
 * target); an ack makes the rounds strictly sequential. Many rounds, several
 * sizes.
 * shmem_quiet: puts (blocking and _nbi) to every PE, quiet, then gets see them;
 * data to one PE, quiet, flag to ANOTHER PE: the flag's receiver reads the
 * data from the first PE and must see it (fence would not be enough here).
 * shmem_barrier_all and shmem_sync_all (after shmem_quiet): every PE updates
 * slots and counters on every PE (puts, _nbi puts, atomics), then the barrier;
 * every PE sees all final values. Many rounds.
 */
#include "shmem_test.h"

#include <unistd.h>

#define MAX_PES 64
#define ROUNDS 300
#define BIG ((size_t)256 << 10)
#define SMALL 64

static int me, npes, right, left;

static long flag;                     /* fence test: round number, set by the left PE */
static long ack;                      /* fence test: round number, set by the right PE */
static unsigned char fence_data[BIG]; /* fence test: written by the left PE */
static long *heap_flag;               /* fence test: the same, on the symmetric heap */
static unsigned char *heap_data;
static long qflag; /* quiet test */
static long qack;
static long slots[2][MAX_PES]; /* barrier tests: slots[r % 2][p] written by PE p */
static long counters[2];       /* barrier tests: atomics of every PE */

static uint64_t seed(int pe, long r, int which)
{
    return (uint64_t)r * 4096 + (uint64_t)pe * 4 + (uint64_t)which;
}

static void test_fence(void)
{
    const size_t sizes[] = {SMALL, 4096, 65536, BIG};
    unsigned char *big = malloc(BIG), *small = malloc(SMALL);
    CHECK(NULL != big && NULL != small, "malloc failed");
    heap_flag = shmem_malloc(sizeof(long));
    heap_data = shmem_malloc(BIG);
    CHECK(NULL != heap_flag && NULL != heap_data, "shmem_malloc failed");
    flag = 0;
    *heap_flag = 0;
    ack = 0;
    shmem_barrier_all();
    for (long r = 1; r <= ROUNDS; ++r) {
        size_t len = sizes[r % 4];
        /* data and flag: static or heap, the four combinations in turn */
        unsigned char *data = (r / 4) % 2 ? heap_data : fence_data;
        long *fl = (r / 8) % 2 ? heap_flag : &flag;
        const char *kind =
            (r / 4) % 2 ? ((r / 8) % 2 ? "heap data, heap flag" : "heap data, static flag")
                        : ((r / 8) % 2 ? "static data, heap flag" : "static data, static flag");
        /* send to the right neighbour: block, fence, overlapping prefix, fence, flag */
        test_fill(big, len, seed(me, r, 0));
        test_fill(small, SMALL, seed(me, r, 1));
        shmem_putmem(data, big, len, right);
        shmem_fence();
        shmem_putmem(data, small, SMALL, right);
        shmem_fence();
        if (r % 2) {
            shmem_long_atomic_set(fl, r, right);
        } else {
            shmem_long_p(fl, r, right);
        }
        /* receive from the left neighbour */
        shmem_long_wait_until(fl, SHMEM_CMP_GE, r);
        CHECK(*fl == r, "round %ld: flag %ld", r, *fl);
        long bad = test_verify(data, SMALL, seed(left, r, 1));
        CHECK(bad < 0,
              "round %ld (%s, flag by %s): byte %ld of the second put (after a fence) "
              "not there with the flag, or the first put landed over it",
              r, kind, r % 2 ? "atomic set" : "put", bad);
        test_fill(big, len, seed(left, r, 0)); /* what the left PE's first put holds */
        bad = -1;
        for (size_t i = SMALL; i < len && bad < 0; ++i) {
            if (data[i] != big[i]) {
                bad = (long)i;
            }
        }
        CHECK(bad < 0,
              "round %ld (%s, flag by %s): byte %ld of the %zu-byte put not there with "
              "the flag",
              r, kind, r % 2 ? "atomic set" : "put", bad, len);
        /* ack, and wait for the right neighbour's ack before the next round */
        shmem_long_atomic_set(&ack, r, left);
        shmem_long_wait_until(&ack, SHMEM_CMP_GE, r);
        CHECK(ack == r, "round %ld: ack %ld", r, ack);
    }
    free(small);
    free(big);
    shmem_barrier_all();
    shmem_free(heap_data);
    shmem_free(heap_flag);
}

static void test_quiet(void)
{
    const size_t slot = 16384;
    CHECK((size_t)npes * slot <= BIG, "too many PEs");
    unsigned char *area = shmem_malloc((size_t)npes * slot);
    unsigned char *buf = malloc(slot);
    CHECK(NULL != area && NULL != buf, "allocation failed");

    /* puts to every PE (half of them _nbi), quiet, gets see the data */
    shmem_barrier_all();
    for (long r = 0; r < 20; ++r) {
        size_t len = 1 + (size_t)(test_word(9, (uint64_t)r) % slot);
        for (int p = 0; p < npes; ++p) {
            test_fill(buf, len, seed(me, r, 2) + (uint64_t)p * 100000);
            if ((p + r) % 2) {
                shmem_putmem_nbi(area + (size_t)me * slot, buf, len, p);
                shmem_quiet(); /* buf is reused */
            } else {
                shmem_putmem(area + (size_t)me * slot, buf, len, p);
            }
        }
        shmem_quiet();
        for (int p = 0; p < npes; ++p) {
            memset(buf, 0, len);
            shmem_getmem(buf, area + (size_t)me * slot, len, p);
            long bad = test_verify(buf, len, seed(me, r, 2) + (uint64_t)p * 100000);
            CHECK(bad < 0, "round %ld: after shmem_quiet, byte %ld of the put to PE %d not there",
                  r, bad, p);
        }
        shmem_barrier_all();
    }

    /* data to PE me + 1, quiet, flag to PE me + 2; that PE reads the data from PE me + 1 */
    const int data_pe = (me + 1) % npes, flag_pe = (me + 2) % npes;
    const int from = (me + npes - 2) % npes; /* whose flag comes here */
    const int from_data_pe = (from + 1) % npes;
    qflag = 0;
    qack = 0;
    shmem_barrier_all();
    for (long r = 1; r <= ROUNDS; ++r) {
        size_t len = 1 + (size_t)(test_word(10, (uint64_t)r) % slot);
        test_fill(buf, len, seed(me, r, 3));
        if (r % 2) {
            shmem_putmem_nbi(area + (size_t)me * slot, buf, len, data_pe);
        } else {
            shmem_putmem(area + (size_t)me * slot, buf, len, data_pe);
        }
        shmem_quiet();
        shmem_long_atomic_set(&qflag, r, flag_pe);
        shmem_long_wait_until(&qflag, SHMEM_CMP_GE, r);
        CHECK(qflag == r, "round %ld: quiet flag %ld", r, qflag);
        size_t flen = 1 + (size_t)(test_word(10, (uint64_t)r) % slot);
        memset(buf, 0, flen);
        shmem_getmem(buf, area + (size_t)from * slot, flen, from_data_pe);
        long bad = test_verify(buf, flen, seed(from, r, 3));
        CHECK(bad < 0,
              "round %ld: PE %d put to PE %d, quiet, flag to me: byte %ld of the data "
              "not there",
              r, from, from_data_pe, bad);
        shmem_long_atomic_set(&qack, r, from);
        shmem_long_wait_until(&qack, SHMEM_CMP_GE, r);
    }
    shmem_barrier_all();
    free(buf);
    shmem_free(area);
}

/* Every PE writes slot me of slots[r % 2] and adds 1 to counters[r % 2] on
 * every PE, then the barrier; the alternating halves keep round r + 1's
 * updates away from what round r still reads. */
static void test_barriers(int use_sync_all)
{
    for (int h = 0; h < 2; ++h) {
        counters[h] = 0;
        for (int p = 0; p < MAX_PES; ++p) {
            slots[h][p] = -1;
        }
    }
    shmem_barrier_all();
    for (long r = 0; r < ROUNDS; ++r) {
        const int h = (int)(r % 2);
        const long v = r * npes + me + 1;
        for (int i = 0; i < npes; ++i) {
            int p = (me + i) % npes;
            switch ((p + r) % 3) {
                case 0:
                    shmem_long_p(&slots[h][me], v, p);
                    break;
                case 1:
                    shmem_long_put(&slots[h][me], &v, 1, p);
                    break;
                default:
                    shmem_long_put_nbi(&slots[h][me], &v, 1, p);
                    break;
            }
            shmem_long_atomic_add(&counters[h], 1, p);
        }
        if (use_sync_all) {
            shmem_quiet();
            shmem_sync_all();
        } else {
            shmem_barrier_all();
        }
        for (int p = 0; p < npes; ++p) {
            CHECK(slots[h][p] == r * npes + p + 1,
                  "%s round %ld: slot of PE %d = %ld, expected %ld",
                  use_sync_all ? "shmem_sync_all" : "shmem_barrier_all", r, p, slots[h][p],
                  r * npes + p + 1);
        }
        const long want = (long)npes * (r / 2 + 1);
        CHECK(counters[h] == want, "%s round %ld: counter %ld, expected %ld",
              use_sync_all ? "shmem_sync_all" : "shmem_barrier_all", r, counters[h], want);
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
    CHECK(npes <= MAX_PES, "at most %d PEs", MAX_PES);

    test_section("shmem_fence: ordered puts to one PE");
    test_fence();
    test_section("shmem_quiet: completion of puts");
    test_quiet();
    test_section("shmem_barrier_all");
    test_barriers(0);
    test_section("shmem_quiet + shmem_sync_all");
    test_barriers(1);

    return test_pass("shmem_order");
}
