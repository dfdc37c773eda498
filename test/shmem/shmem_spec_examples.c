/*
 * shmem_spec_examples.c: the C example programs of the OpenSHMEM 1.5
 * specification for setup, memory management, RMA, atomics, ordering and
 * point-to-point synchronization, one function each.
 *
 * Each function is the example's main() with these adaptations only:
 *   - shmem_init / shmem_finalize are done once, in main(); a barrier
 *     separates the examples (shmem_finalize would have been one);
 *   - printf of the result is replaced by a CHECK of the value the example
 *     prints (or documents), so a wrong result ends the job with exit 1;
 *   - examples written for 3 PEs ("PE 2") use PE 2 % npes, so they run on 2;
 *   - a few additions, marked "adapted:", where the original's result is not
 *     observable (e.g. a payload that equals the zeroed buffer).
 * The 1.5-only examples (wait_until_all/any/some, their vector form,
 * test_any, put_signal) are compiled when the library is 1.5.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

#include <math.h>
#include <unistd.h>

/* ---- shmem_init ---- */
static void ex_init(void)
{
    static int targ = 0;

    int me = shmem_my_pe();
    int receiver = 1 % shmem_n_pes();

    if (me == 0) {
        int src = 33;
        shmem_put(&targ, &src, 1, receiver);
    }

    shmem_barrier_all(); /* Synchronizes sender and receiver */

    if (me == receiver)
        CHECK(targ == 33, "shmem_init example: PE %d targ=%d (expect 33)", me, targ);
}

/* ---- shmem_put ---- */
static void ex_put(void)
{
    long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static long dest[10];
    int me = shmem_my_pe();
    if (me == 0) /* put 10 words into dest on PE 1 */
        shmem_put(dest, source, 10, 1);
    shmem_barrier_all(); /* sync sender and receiver */
    if (me == 1)
        for (int i = 0; i < 10; ++i)
            CHECK(dest[i] == i + 1, "shmem_put example: dest[%d] on PE 1 is %ld", i, dest[i]);
}

/* ---- shmem_p ---- */
static void ex_p(void)
{
    static const double e = 2.71828182;
    static const double epsilon = 0.00000001;
    double *f;
    int me;

    me = shmem_my_pe();
    f = (double *)shmem_malloc(sizeof(*f));

    *f = 3.1415927;
    shmem_barrier_all();

    if (me == 0)
        shmem_p(f, e, 1);

    shmem_barrier_all();
    if (me == 1)
        CHECK(fabs(*f - e) < epsilon, "shmem_p example: FAIL, *f = %g", *f);

    shmem_free(f); /* adapted: the example leaves it to shmem_finalize */
}

/* ---- shmem_iput ---- */
static void ex_iput(void)
{
    short source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static short dest[10];
    if (shmem_my_pe() == 0) {
        /* put 5 words into dest on PE 1 */
        shmem_iput(dest, source, 1, 2, 5, 1);
    }
    shmem_barrier_all(); /* sync sender and receiver */
    if (shmem_my_pe() == 1) {
        /* the example prints: dest on PE 1 is 1 3 5 7 9 */
        for (int i = 0; i < 5; ++i)
            CHECK(dest[i] == 2 * i + 1, "shmem_iput example: dest[%d] = %d", i, (int)dest[i]);
        for (int i = 5; i < 10; ++i)
            CHECK(dest[i] == 0, "shmem_iput example: dest[%d] = %d written", i, (int)dest[i]);
    }
}

/* ---- shmem_g ---- */
static void ex_g(void)
{
    long y = -1;
    static long x = 10101;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me == 0)
        y = shmem_g(&x, npes - 1);
    CHECK(me != 0 || y == 10101, "shmem_g example: %d: y = %ld", me, y);
}

/* ---- shmem_ptr ---- */
static void ex_ptr(void)
{
    static int dest[4];
    int me = shmem_my_pe();
    if (me == 0) { /* initialize PE 1's dest array */
        int *ptr = shmem_ptr(dest, 1);
        if (ptr == NULL) {
            /* adapted: the example only prints "can't use pointer ..."; store
             * the same values with puts so the check below still applies */
            for (int i = 0; i < 4; i++)
                shmem_int_p(&dest[i], i + 1, 1);
        } else
            for (int i = 0; i < 4; i++)
                *ptr++ = i + 1;
    }
    shmem_barrier_all();
    if (me == 1)
        CHECK(dest[0] == 1 && dest[1] == 2 && dest[2] == 3 && dest[3] == 4,
              "shmem_ptr example: PE 1 dest: %d, %d, %d, %d", dest[0], dest[1], dest[2], dest[3]);
}

/* ---- shmem_malloc (the specification's symmetric heap example) ---- */
static void ex_malloc(void)
{
    int *target;
    int source;

    source = shmem_my_pe();
    target = shmem_malloc(sizeof(int)); /*symmetric data object on heap*/

    shmem_int_put(target, &source, 1, (source + 1) % shmem_n_pes());
    shmem_barrier_all();
    CHECK(*target == (source + shmem_n_pes() - 1) % shmem_n_pes(),
          "shmem_malloc example: on PE%d value of target is %d", source, *target);
    shmem_free(target);
}

/* ---- shmem_atomic_compare_swap ---- */
static void ex_atomic_compare_swap(void)
{
    static int race_winner = -1;
    int oldval;
    oldval = shmem_atomic_compare_swap(&race_winner, -1, shmem_my_pe(), 0);
    /* the example prints "pe %d was first" when oldval == -1: exactly one PE does */
    shmem_barrier_all();
    int winner = shmem_int_g(&race_winner, 0);
    CHECK(winner >= 0 && winner < shmem_n_pes(), "compare_swap example: race_winner = %d", winner);
    CHECK((oldval == -1) == (shmem_my_pe() == winner) && (oldval == -1 || oldval == winner),
          "compare_swap example: PE %d got %d, winner %d", shmem_my_pe(), oldval, winner);
}

/* ---- shmem_atomic_fetch_add ---- */
static void ex_atomic_fetch_add(void)
{
    int me, old;
    static int dst;

    me = shmem_my_pe();

    old = -1;
    dst = 22;
    shmem_barrier_all();

    if (me == 1) {
        old = shmem_atomic_fetch_add(&dst, 44, 0);
    }
    shmem_barrier_all();
    /* the example prints "%d: old = %d, dst = %d" */
    CHECK(me != 1 || old == 22, "fetch_add example: 1: old = %d", old);
    CHECK(dst == (me == 0 ? 66 : 22), "fetch_add example: %d: dst = %d", me, dst);
}

/* ---- shmem_atomic_fetch_inc ---- */
static int finc_dst;
static void ex_atomic_fetch_inc(void)
{
    int me;
    int old;

    me = shmem_my_pe();

    old = -1;
    finc_dst = 22;
    shmem_barrier_all();

    if (me == 0)
        old = shmem_atomic_fetch_inc(&finc_dst, 1);

    shmem_barrier_all();
    CHECK(me != 0 || old == 22, "fetch_inc example: 0: old = %d", old);
    CHECK(finc_dst == (me == 1 ? 23 : 22), "fetch_inc example: %d: dst = %d", me, finc_dst);
}

/* ---- shmem_atomic_inc ---- */
static int inc_dst;
static void ex_atomic_inc(void)
{
    int me;

    me = shmem_my_pe();

    inc_dst = 74;
    shmem_barrier_all();

    if (me == 0)
        shmem_atomic_inc(&inc_dst, 1);
    shmem_barrier_all();

    CHECK(inc_dst == (me == 1 ? 75 : 74), "inc example: %d: dst = %d", me, inc_dst);
}

/* ---- shmem_atomic_add ---- */
static void ex_atomic_add(void)
{
    int me;
    static int dst;

    me = shmem_my_pe();

    dst = 22;
    shmem_barrier_all();

    if (me == 1) {
        shmem_atomic_add(&dst, 44, 0);
    }
    shmem_barrier_all();
    CHECK(dst == (me == 0 ? 66 : 22), "add example: %d: dst = %d", me, dst);
}

/* ---- shmem_atomic_swap ---- */
static void ex_atomic_swap(void)
{
    long *dest;
    int me, npes;
    long swapped_val, new_val;

    me = shmem_my_pe();
    npes = shmem_n_pes();
    dest = (long *)shmem_malloc(sizeof(*dest));
    *dest = me;
    shmem_barrier_all();
    new_val = me;
    if (me & 1) {
        swapped_val = shmem_atomic_swap(dest, new_val, (me + 1) % npes);
        /* the example prints "%d: dest = %ld, swapped = %ld" */
        CHECK(swapped_val == (me + 1) % npes, "swap example: %d: swapped = %ld", me, swapped_val);
    }
    shmem_barrier_all(); /* adapted: every swap done before the check */
    int pred = (me + npes - 1) % npes;
    long want = (pred & 1) ? pred : me;
    CHECK(*dest == want, "swap example: %d: dest = %ld, expected %ld", me, *dest, want);
    shmem_free(dest);
}

/* ---- shmem_barrier_all ---- */
static void ex_barrier_all(void)
{
    static int x = 1010;

    int me = shmem_my_pe();
    int npes = shmem_n_pes();

    /* put to next  PE in a circular fashion */
    shmem_p(&x, 4, (me + 1) % npes);

    /* synchronize all PEs */
    shmem_barrier_all();
    CHECK(x == 4, "barrier_all example: %d: x = %d", me, x);
}

/* ---- shmem_sync_all ---- */
static void ex_sync_all(void)
{
    static int x = 1010;

    int me = shmem_my_pe();
    int npes = shmem_n_pes();

    /* put to next  PE in a circular fashion */
    shmem_p(&x, 4, (me + 1) % npes);

    /* synchronize all PEs */
    shmem_quiet();
    shmem_sync_all();
    CHECK(x == 4, "sync_all example: %d: x = %d", me, x);
}

/* ---- shmem_fence ---- */
static void ex_fence(void)
{
    int src = 99;
    long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static long dest[10];
    static int targ;
    int me = shmem_my_pe();
    int pe2 = 2 % shmem_n_pes(); /* adapted: PE 2, or PE 0 on 2 PEs */
    if (me == 0) {
        shmem_put(dest, source, 10, 1);   /* put1 */
        shmem_put(dest, source, 10, pe2); /* put2 */
        shmem_fence();
        shmem_put(&targ, &src, 1, 1);   /* put3 */
        shmem_put(&targ, &src, 1, pe2); /* put4 */
    }
    shmem_barrier_all(); /* sync sender and receiver */
    if (me == 1 || me == pe2) {
        /* the example prints "dest[0] on PE %d is %ld" */
        for (int i = 0; i < 10; ++i)
            CHECK(dest[i] == i + 1, "fence example: dest[%d] on PE %d is %ld", i, me, dest[i]);
        CHECK(targ == 99, "fence example: targ on PE %d is %d", me, targ);
    }
}

/* ---- shmem_quiet ---- */
static long q_dest[3] = {0};
static int q_targ = 0;
static long q_source[3] = {1, 2, 3};
static int q_src = 90;
static void ex_quiet(void)
{
    long x[3] = {0};
    int y = 0;
    int pe2 = 2 % shmem_n_pes(); /* adapted: PE 2, or PE 0 on 2 PEs */

    if (shmem_my_pe() == 0) {
        shmem_long_put(q_dest, q_source, 3, 1); /*put1*/
        shmem_int_put(&q_targ, &q_src, 1, pe2); /*put2*/

        shmem_quiet();

        shmem_long_get(x, q_dest, 3, 1); /*gets updated value from dest on PE 1 to local array x */
        shmem_int_get(&y, &q_targ, 1,
                      pe2); /*gets updated value from targ on PE 2 to local variable y*/
        CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3, "quiet example: x: {%ld,%ld,%ld}", x[0], x[1],
              x[2]);                               /*x: {1,2,3}*/
        CHECK(y == 90, "quiet example: y: %d", y); /*y: 90*/

        shmem_int_put(&q_targ, &q_src, 1, 1);   /*put3*/
        shmem_int_put(&q_targ, &q_src, 1, pe2); /*put4*/
    }
    shmem_barrier_all(); /* adapted: the example ends with shmem_finalize */
    if (shmem_my_pe() == 1 || shmem_my_pe() == pe2)
        CHECK(q_targ == 90, "quiet example: targ on PE %d is %d", shmem_my_pe(), q_targ);
}

/* ---- shmem_wait_until: "waits until ivar is set to be less than zero by a
 * transfer from a remote PE" (the example is the routine; the driver is added) ---- */
static int ivar;

static void wait_on_ivar(void)
{
    shmem_int_wait_until(&ivar, SHMEM_CMP_LT, 0);
}

static void ex_wait_until(void)
{
    ivar = 0;
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        wait_on_ivar();
        CHECK(ivar == -1, "wait_until example: returned with ivar = %d", ivar);
    } else if (shmem_my_pe() == 1) {
        usleep(10000);
        shmem_int_atomic_set(&ivar, -1, 0);
    }
}

/* ---- shmem_test ---- */
static int user_wait_any(long *ivar, int count, int cmp, long value)
{
    int idx = 0;
    while (!shmem_test(&ivar[idx], cmp, value))
        idx = (idx + 1) % count;
    return idx;
}

static void ex_test(void)
{
    const int mype = shmem_my_pe();
    const int npes = shmem_n_pes();

    long *wait_vars = shmem_calloc(npes, sizeof(long));
    if (mype == 0) {
        int who = user_wait_any(wait_vars, npes, SHMEM_CMP_NE, 0);
        /* the example prints "PE %d observed first update from PE %d" */
        CHECK(who >= 1 && who < npes && wait_vars[who] == who,
              "test example: first update from "
              "PE %d, value %ld",
              who, wait_vars[who]);
    } else
        shmem_atomic_set(&wait_vars[mype], mype, 0);

    shmem_free(wait_vars);
}

#if SHMEM_TEST_V15
/* ---- shmem_wait_until_all ---- */
static void ex_wait_until_all(void)
{
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();

    int *flags = shmem_calloc(npes, sizeof(int));
    int *status = NULL;

    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);

    shmem_wait_until_all(flags, npes, status, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < npes; i++) /* adapted: the result */
        CHECK(flags[i] == 1, "wait_until_all example: flags[%d] = %d", i, flags[i]);

    shmem_free(flags);
}

/* ---- shmem_wait_until_any ---- */
#define N 100
static void ex_wait_until_any(void)
{
    int total_sum = 0;

    int mype = shmem_my_pe();
    int npes = shmem_n_pes();

    int *my_data = malloc(N * sizeof(int));
    int *all_data = shmem_malloc(N * npes * sizeof(int));

    int *flags = shmem_calloc(npes, sizeof(int));
    int *status = calloc(npes, sizeof(int));

    for (int i = 0; i < N; i++)
        my_data[i] = mype * N + i;

    for (int i = 0; i < npes; i++)
        shmem_put_nbi(&all_data[mype * N], my_data, N, i);

    shmem_fence();

    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);

    for (int i = 0; i < npes; i++) {
        size_t completed_idx = shmem_wait_until_any(flags, npes, status, SHMEM_CMP_NE, 0);
        for (int j = 0; j < N; j++) {
            total_sum += all_data[completed_idx * N + j];
        }
        status[completed_idx] = 1;
    }

    /* check the result */
    int M = N * npes - 1;
    CHECK(total_sum == M * (M + 1) / 2, "wait_until_any example: sum %d, expected %d", total_sum,
          M * (M + 1) / 2);

    free(status); /* adapted: the example leaves these to the end of the program */
    free(my_data);
    shmem_free(flags);
    shmem_free(all_data);
}

/* ---- shmem_wait_until_some ---- */
static void ex_wait_until_some(void)
{
    int total_sum = 0;

    int mype = shmem_my_pe();
    int npes = shmem_n_pes();

    int *my_data = malloc(N * sizeof(int));
    int *all_data = shmem_malloc(N * npes * sizeof(int));

    int *flags = shmem_calloc(npes, sizeof(int));
    size_t *indices = malloc(npes * sizeof(size_t));
    int *status = calloc(npes, sizeof(int));

    for (int i = 0; i < N; i++)
        my_data[i] = mype * N + i;

    for (int i = 0; i < npes; i++)
        shmem_put_nbi(&all_data[mype * N], my_data, N, i);

    shmem_fence();

    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);

    size_t ncompleted;

    while ((ncompleted = shmem_wait_until_some(flags, npes, indices, status, SHMEM_CMP_NE, 0))) {
        for (size_t i = 0; i < ncompleted; i++) {
            for (size_t j = 0; j < N; j++) {
                total_sum += all_data[indices[i] * N + j];
            }
            status[indices[i]] = 1;
        }
    }

    /* check the result */
    int M = N * npes - 1;
    CHECK(total_sum == M * (M + 1) / 2, "wait_until_some example: sum %d, expected %d", total_sum,
          M * (M + 1) / 2);

    free(status);
    free(indices);
    free(my_data);
    shmem_free(flags);
    shmem_free(all_data);
}

/* ---- shmem_wait_until_any_vector ---- */
static void ex_wait_until_any_vector(void)
{
    int total_sum = 0;

    int mype = shmem_my_pe();
    int npes = shmem_n_pes();

    int *ivars = shmem_calloc(npes, sizeof(int));
    int *status = calloc(npes, sizeof(int));
    int *cmp_values = malloc(npes * sizeof(int));

    /* All odd PEs put 2 and all even PEs put 1 */
    for (int i = 0; i < npes; i++) {
        shmem_atomic_set(&ivars[mype], mype % 2 + 1, i);

        /* Set cmp_values to the expected values coming from each PE */
        cmp_values[i] = i % 2 + 1;
    }

    for (int i = 0; i < npes; i++) {
        size_t completed_idx =
            shmem_wait_until_any_vector(ivars, npes, status, SHMEM_CMP_EQ, cmp_values);
        status[completed_idx] = 1;
        total_sum += ivars[completed_idx];
    }

    /* check the result */
    int correct_result = npes + npes / 2;

    CHECK(total_sum == correct_result, "wait_until_any_vector example: sum %d, expected %d",
          total_sum, correct_result);

    free(cmp_values);
    free(status);
    shmem_free(ivars);
}

/* ---- shmem_test_any ---- */
static void ex_test_any(void)
{
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();

    int *flags = shmem_calloc(npes, sizeof(int));
    int *status = calloc(npes, sizeof(int));

    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);

    int ncompleted = 0;
    size_t completed_idx;

    while (ncompleted < npes) {
        completed_idx = shmem_test_any(flags, npes, status, SHMEM_CMP_EQ, 1);
        if (completed_idx != SIZE_MAX) {
            CHECK(completed_idx < (size_t)npes && status[completed_idx] == 0 &&
                      flags[completed_idx] == 1,
                  "test_any example: index %zu", completed_idx); /* adapted */
            ncompleted++;
            status[completed_idx] = 1;
        } else {
            /* Overlap some computation here */
        }
    }

    free(status);
    shmem_free(flags);
}

/* ---- shmem_put_signal ---- */
static void ex_put_signal(void)
{
    size_t i;

    size_t size = 2048;
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int pe = (mype + 1) % npes;
    uint64_t *message = malloc(size * sizeof(uint64_t));
    static uint64_t sig_addr = 0;

    for (i = 0; i < size; i++) {
        /* adapted: the example sends mype (0, like the zeroed buffer); a
         * payload of its own makes the arrival checkable */
        message[i] = mype + i + 1;
    }

    uint64_t *data = shmem_calloc(size, sizeof(uint64_t));

    if (mype == 0) {
        shmem_put_signal(data, message, size, &sig_addr, 1, SHMEM_SIGNAL_SET, pe);
    } else {
        shmem_wait_until(&sig_addr, SHMEM_CMP_EQ, 1);
        shmem_put_signal(data, data, size, &sig_addr, 1, SHMEM_SIGNAL_SET, pe);
    }
    shmem_wait_until(&sig_addr, SHMEM_CMP_EQ, 1); /* adapted: PE 0 gets the last hop too */
    for (i = 0; i < size; i++)
        CHECK(data[i] == i + 1, "put_signal example: PE %d data[%zu] = %llu", mype, i,
              (unsigned long long)data[i]);

    free(message);
    shmem_free(data);
}
#undef N
#endif /* SHMEM_TEST_V15 */

int main(void)
{
    shmem_init();
    CHECK(shmem_n_pes() >= 2, "the examples need at least 2 PEs");

    static const struct {
        const char *name;
        void (*fn)(void);
    } examples[] = {
        {"shmem_init", ex_init},
        {"shmem_put", ex_put},
        {"shmem_p", ex_p},
        {"shmem_iput", ex_iput},
        {"shmem_g", ex_g},
        {"shmem_ptr", ex_ptr},
        {"shmem_malloc", ex_malloc},
        {"shmem_atomic_fetch_add", ex_atomic_fetch_add},
        {"shmem_atomic_fetch_inc", ex_atomic_fetch_inc},
        {"shmem_atomic_inc", ex_atomic_inc},
        {"shmem_atomic_add", ex_atomic_add},
        {"shmem_atomic_swap", ex_atomic_swap},
        {"shmem_atomic_compare_swap", ex_atomic_compare_swap},
        {"shmem_barrier_all", ex_barrier_all},
        {"shmem_sync_all", ex_sync_all},
        {"shmem_fence", ex_fence},
        {"shmem_quiet", ex_quiet},
        {"shmem_wait_until", ex_wait_until},
        {"shmem_test", ex_test},
#if SHMEM_TEST_V15
        {"shmem_wait_until_all", ex_wait_until_all},
        {"shmem_wait_until_any", ex_wait_until_any},
        {"shmem_wait_until_some", ex_wait_until_some},
        {"shmem_wait_until_any_vector", ex_wait_until_any_vector},
        {"shmem_test_any", ex_test_any},
        {"shmem_put_signal", ex_put_signal},
#endif
    };
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); ++i) {
        char what[80];
        snprintf(what, sizeof(what), "%s example", examples[i].name);
        test_section(what);
        examples[i].fn();
        shmem_barrier_all();
    }

    return test_pass("shmem_spec_examples");
}
