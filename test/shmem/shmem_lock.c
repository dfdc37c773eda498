/*
 * shmem_lock.c: distributed locks (shmem_set_lock, shmem_test_lock,
 * shmem_clear_lock).
 *
 * A counter on PE 0 is incremented by every PE many times with a plain
 * read-modify-write -- shmem_long_g, then shmem_long_p, not an atomic --
 * inside the critical section, and each holder also appends a log entry
 * (its PE and iteration) at the position it read. A sched_yield inside the
 * critical section invites other PEs in if the lock lets them. At the end
 * the total is exact, and PE 0 checks the log: every (PE, iteration) exactly
 * once and each PE's iterations in order. Done with:
 *   a lock on the symmetric heap protecting heap objects;
 *   a lock in the data segment (a static variable) protecting static objects;
 *   shmem_test_lock polling (0: the lock was taken), alone and mixed with
 *   shmem_set_lock on the same lock.
 * Exact returns: shmem_test_lock on a free lock returns 0 and takes it; on a
 * lock another PE holds it returns 1 (and does not take it); shmem_set_lock
 * blocks while another PE holds the lock: the holder sleeps, then writes a
 * word to every PE, then clears the lock; whoever gets the lock next must see
 * that word.
 * Progress: PE 1 holds a static lock (its word lives on PE 0) and clears it
 * while PE 0 does nothing but poll shmem_test_lock: the release must get
 * through (the specification expects communication with a PE to progress
 * whatever that PE is doing).
 */
#include "shmem_test.h"

#include <sched.h>
#include <time.h>

#define NITER 50
#define MAXPES 64

static int me, npes;

/* Data segment objects (zero: a cleared lock). */
static long lock_static;
static long lock_static2;
static long counter_static;
static long log_static[MAXPES * NITER * 2];
static long released;

/* Heap objects. */
static long *lock_heap, *counter_heap, *log_heap, *lock_mixed;

static void nap(long usec)
{
    struct timespec ts = {usec / 1000000, (usec % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/** The critical section: counter and log on PE 0, read and written with get and put. */
static void critical(long *counter, long *log, long entry, int i)
{
    const long c = shmem_long_g(counter, 0);
    if (i % 7 == 0) {
        sched_yield(); /* let others try to get in */
    }
    shmem_long_p(&log[c], entry, 0);
    shmem_long_p(counter, c + 1, 0);
}

/** PE 0 checks counter and log after `per_pe` entries from each PE; entries are pe * per_pe + i. */
static void check_log(const long *counter, const long *log, long per_pe, const char *what)
{
    shmem_barrier_all();
    if (me == 0) {
        const long total = per_pe * npes;
        CHECK(*counter == total, "%s: counter is %ld, expected %ld (lost updates)", what, *counter,
              total);
        long *last = (long *)malloc((size_t)npes * sizeof(long));
        unsigned char *hit = (unsigned char *)calloc((size_t)total, 1);
        CHECK(last != NULL && hit != NULL, "malloc failed");
        for (int p = 0; p < npes; ++p) {
            last[p] = -1;
        }
        for (long k = 0; k < total; ++k) {
            const long e = log[k];
            CHECK(e >= 0 && e < total && !hit[e],
                  "%s: log entry %ld is %ld: out of range or "
                  "repeated (two PEs in the critical section)",
                  what, k, e);
            hit[e] = 1;
            const int p = (int)(e / per_pe);
            const long i = e % per_pe;
            CHECK(i > last[p], "%s: PE %d's iteration %ld logged after its iteration %ld", what, p,
                  i, last[p]);
            last[p] = i;
        }
        free(hit);
        free(last);
    }
    shmem_barrier_all();
}

static void test_set_lock(long *lock, long *counter, long *log, const char *what)
{
    for (int i = 0; i < NITER; ++i) {
        shmem_set_lock(lock);
        critical(counter, log, (long)me * NITER + i, i);
        shmem_clear_lock(lock);
    }
    check_log(counter, log, NITER, what);
}

static void test_test_lock(long *lock, long *counter, long *log, int mixed, const char *what)
{
    for (int i = 0; i < NITER; ++i) {
        if (mixed && me % 2 == 1) {
            shmem_set_lock(lock);
        } else {
            long tries = 0;
            int r;
            while ((r = shmem_test_lock(lock)) != 0) {
                CHECK(r == 1, "%s: shmem_test_lock returned %d (neither 0 nor 1)", what, r);
                if (++tries % 4 == 0) {
                    sched_yield(); /* PEs may outnumber cores: let the holder run */
                }
            }
        }
        critical(counter, log, (long)me * NITER + i, i);
        shmem_clear_lock(lock);
    }
    check_log(counter, log, NITER, what);
}

static void test_exact_returns(long *lock, const char *what)
{
    const int holder = npes - 1;
    released = 0;
    shmem_barrier_all();
    if (me == holder) {
        int r = shmem_test_lock(lock);
        CHECK(r == 0, "%s: shmem_test_lock on a free lock returned %d, expected 0", what, r);
    }
    shmem_barrier_all();
    if (me != holder) {
        int r = shmem_test_lock(lock);
        CHECK(r == 1, "%s: shmem_test_lock on a lock PE %d holds returned %d, expected 1", what,
              holder, r);
    }
    shmem_barrier_all();
    /* Others block in shmem_set_lock until the holder wrote `released` everywhere and cleared. */
    if (me == holder) {
        nap(200000);
        for (int p = 0; p < npes; ++p) {
            shmem_long_p(&released, 1, p);
        }
        shmem_clear_lock(lock);
    } else {
        shmem_set_lock(lock);
        CHECK(shmem_long_atomic_fetch(&released, me) == 1,
              "%s: shmem_set_lock returned while PE %d still held the lock", what, holder);
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    /* Free again: the first PE that tests gets it, everyone else sees it held. */
    if (me == 0) {
        int r = shmem_test_lock(lock);
        CHECK(r == 0, "%s: shmem_test_lock on the cleared lock returned %d, expected 0", what, r);
    }
    shmem_barrier_all();
    if (me != 0) {
        int r = shmem_test_lock(lock);
        CHECK(r == 1, "%s: shmem_test_lock on a lock PE 0 holds returned %d, expected 1", what, r);
    }
    shmem_barrier_all();
    if (me == 0) {
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
}

/*
 * A PE polling shmem_test_lock must let the holder release the lock: PE 1
 * takes a static lock (its word is in PE 0's data segment), tells PE 0, and
 * clears it a little later, while PE 0 polls shmem_test_lock. The release
 * reaches PE 0's memory while PE 0 does nothing but call shmem_test_lock
 * ("OpenSHMEM communication calls involving that PE should progress
 * regardless of when that PE next engages in an OpenSHMEM call", 1.5 section
 * "Progress of OpenSHMEM Operations"). Then the roles swap for PEs 0 and
 * npes - 1 on the heap lock.
 */
static long lock_static3;
static long held_flag, seen_flag;

static void test_poll_progress(long *lock, int holder, int poller, const char *what)
{
    held_flag = 0;
    seen_flag = 0;
    shmem_barrier_all();
    if (me == holder) {
        shmem_set_lock(lock);
        shmem_long_atomic_set(&held_flag, 1, poller);
        /* Keep the lock until the poller has seen it held, and a little longer. */
        shmem_long_wait_until(&seen_flag, SHMEM_CMP_EQ, 1);
        nap(50000);
        shmem_clear_lock(lock);
    } else if (me == poller) {
        shmem_long_wait_until(&held_flag, SHMEM_CMP_EQ, 1);
        int r = shmem_test_lock(lock);
        CHECK(r == 1, "%s: shmem_test_lock returned %d while PE %d held the lock, expected 1", what,
              r, holder);
        shmem_long_atomic_set(&seen_flag, 1, holder);
        while ((r = shmem_test_lock(lock)) != 0) {
            CHECK(r == 1, "%s: shmem_test_lock returned %d (neither 0 nor 1)", what, r);
        }
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= MAXPES, "this test handles up to %d PEs", MAXPES);

    lock_heap = (long *)shmem_calloc(1, sizeof(long));
    lock_mixed = (long *)shmem_calloc(1, sizeof(long));
    counter_heap = (long *)shmem_calloc(1, sizeof(long));
    log_heap = (long *)shmem_calloc((size_t)npes * NITER, sizeof(long));
    CHECK(lock_heap && lock_mixed && counter_heap && log_heap, "shmem_calloc failed");
    shmem_barrier_all(); /* every lock is zero everywhere before anyone uses it */

    test_section("shmem_set_lock: heap lock, heap counter");
    test_set_lock(lock_heap, counter_heap, log_heap, "heap lock");

    test_section("shmem_set_lock: static lock, static counter");
    test_set_lock(&lock_static, &counter_static, log_static, "static lock");

    test_section("shmem_test_lock polling, heap lock");
    *counter_heap = 0;
    shmem_barrier_all();
    test_test_lock(lock_heap, counter_heap, log_heap, 0, "shmem_test_lock (heap lock)");
    *counter_heap = 0;
    shmem_barrier_all();
    test_test_lock(lock_mixed, counter_heap, log_heap, 1, "mixed (heap lock)");

    test_section("exact return values, blocking");
    test_exact_returns(lock_heap, "heap lock");
    test_exact_returns(&lock_static, "static lock");

    test_section("shmem_test_lock polling, static lock");
    counter_static = 0;
    shmem_barrier_all();
    test_test_lock(&lock_static, &counter_static, log_static, 0, "shmem_test_lock (static lock)");
    counter_static = 0;
    shmem_barrier_all();
    test_test_lock(&lock_static2, &counter_static, log_static, 1, "mixed (static lock)");

    test_section("progress while polling shmem_test_lock");
    if (npes >= 2) {
        test_poll_progress(&lock_static3, 1, 0, "static lock held by PE 1, PE 0 polls");
        test_poll_progress(lock_heap, 0, npes - 1, "heap lock held by PE 0, last PE polls");
    }

    shmem_barrier_all();
    shmem_free(log_heap);
    shmem_free(counter_heap);
    shmem_free(lock_mixed);
    shmem_free(lock_heap);
    return test_pass("shmem_lock");
}
