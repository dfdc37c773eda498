/*
 * mpi_osc.c: MPI one-sided communication (MPI-3.1 chapter 11), results checked.
 *
 * Written for osc weft (netmod/osc_weft.c); passes with Open MPI's osc rdma
 * and osc sm too. It checks what MPI-3.1 guarantees, plus two error returns
 * that MPI-3.1 allows but does not require (a put out of range, a put outside
 * an epoch), which osc weft and osc rdma give.
 *
 * - Window flavors and their attributes: MPI_Win_create on malloc'd memory
 *   (size 0 on odd ranks), MPI_Win_allocate, MPI_Win_allocate_shared on the
 *   MPI_COMM_TYPE_SHARED communicator (MPI_Win_shared_query, direct loads and
 *   stores of a neighbour's part after MPI_Win_sync, the default allocation
 *   contiguous, a zero-size part, alloc_shared_noncontig), and
 *   MPI_Win_create_dynamic (several attached regions addressed through
 *   MPI_Get_address, detach and re-attach).
 * - Every synchronization: fence with MPI_MODE_NOPRECEDE/NOSTORE/NOPUT/
 *   NOSUCCEED, post/start/complete/wait and MPI_Win_test with subset groups
 *   (ring neighbours, a star), MPI_MODE_NOCHECK; lock/unlock exclusive (a
 *   read-modify-write counter) and shared, lock_all, flush, flush_local (origin
 *   buffer reused), flush_all, flush_local_all, MPI_Win_sync.
 * - Put and get of 0, 1, 8, 4 KiB, 1 MiB; vector and indexed datatypes at the
 *   origin and the target of put, get and accumulate; disp_unit 4, 8 and 12.
 * - Every predefined op on every basic type MPI-3.1 allows it for (integers,
 *   fixed-width integers, floating point, C complex, MPI_C_BOOL, MPI_BYTE,
 *   MPI_2INT and MPI_DOUBLE_INT), plus MPI_REPLACE and MPI_NO_OP: all ranks at
 *   once into every rank under lock_all, and into rank 0 under fence, against
 *   a reference computed here (operands chosen so that float results are exact).
 * - MPI_Get_accumulate, MPI_Fetch_and_op (a counter: every fetched value
 *   distinct; a swap chain), MPI_Compare_and_swap (a spin lock guarding a
 *   get/put read-modify-write), MPI_Rput/Rget/Raccumulate/Rget_accumulate.
 * - Accumulate ordering of one origin on one location (MPI_REPLACE then
 *   MPI_NO_OP sees each value; the last of many MPI_REPLACE wins).
 * - With MPI_ERRORS_RETURN: a put beyond the window and a put outside an epoch
 *   fail, and the window works afterwards.
 *
 * Runs on 1 or more ranks (the right neighbour of the last rank is rank 0).
 * Open MPI 4.1's own components need 2: on 1 rank osc rdma declines windows
 * that are not shared (and osc ucx, which Debian excludes, crashes).
 */
#include "mpi_test.h"

#include <complex.h>
#include <stdbool.h>

static int right_rank, left_rank; /* ring neighbours in MPI_COMM_WORLD */

/* ------------------------------------------------------------------ helpers */

/** Check the predefined attributes of @p win. */
static void check_attrs(MPI_Win win, const void *base, MPI_Aint size, int disp_unit, int flavor)
{
    void *pbase = NULL;
    MPI_Aint *psize = NULL;
    int *pdisp = NULL, *pflavor = NULL, *pmodel = NULL, flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &pbase, &flag));
    CHECK(flag && pbase == base, "MPI_WIN_BASE %p, expected %p", pbase, base);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &psize, &flag));
    CHECK(flag && *psize == size, "MPI_WIN_SIZE %ld, expected %ld", (long)*psize, (long)size);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &pdisp, &flag));
    CHECK(flag && *pdisp == disp_unit, "MPI_WIN_DISP_UNIT %d, expected %d", *pdisp, disp_unit);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &pflavor, &flag));
    CHECK(flag && *pflavor == flavor, "MPI_WIN_CREATE_FLAVOR %d, expected %d", *pflavor, flavor);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &pmodel, &flag));
    CHECK(flag && (*pmodel == MPI_WIN_UNIFIED || *pmodel == MPI_WIN_SEPARATE),
          "MPI_WIN_MODEL %d is neither unified nor separate", *pmodel);
}

/** The group of @p win is that of @p comm. */
static void check_group(MPI_Win win, MPI_Comm comm)
{
    MPI_Group wg, cg;
    int res = MPI_UNEQUAL;
    CHECK_MPI(MPI_Win_get_group(win, &wg));
    CHECK_MPI(MPI_Comm_group(comm, &cg));
    CHECK_MPI(MPI_Group_compare(wg, cg, &res));
    CHECK(res == MPI_IDENT, "MPI_Win_get_group: not the group of the communicator (%d)", res);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
}

/** The group of MPI_COMM_WORLD rank @p r alone. */
static MPI_Group group_of(int r)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK_MPI(MPI_Group_incl(world, 1, &r, &g));
    MPI_Group_free(&world);
    return g;
}

/** An int that names (owner, tag, index) and no other triple in these tests. */
static int ival(int owner, int tag, int i)
{
    return owner * 1000000 + tag * 10000 + i;
}

/** Everyone's passive-target accesses are done and visible in every window (lock_all held). */
static void passive_settle(MPI_Win win)
{
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_sync(win));
}

/** Local stores into the window made so far are visible to everyone's later accesses. */
static void publish_stores(MPI_Win win, MPI_Comm comm)
{
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(comm));
}

/* ------------------------------------------------------------------ window flavors */

/** MPI_Win_create on malloc'd memory; odd ranks expose nothing (size 0, base NULL). */
static void test_win_create(void)
{
    enum { N = 1024, SLOT = 8 };
    CHECK(test_size * SLOT <= N, "too many ranks for this test");
    const int has_mem = 0 == test_rank % 2;
    int *mem = has_mem ? malloc(N * sizeof(int)) : NULL;
    for (int i = 0; has_mem && i < N; ++i) {
        mem[i] = -1;
    }
    const MPI_Aint size = has_mem ? N * (MPI_Aint)sizeof(int) : 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, mem, size, sizeof(int), MPI_WIN_FLAVOR_CREATE);
    check_group(win, MPI_COMM_WORLD);

    /* Every rank puts its slot into every rank with memory; zero-count puts, gets and
     * accumulates to every rank, with memory or not, and to MPI_PROC_NULL, do nothing. */
    int out[SLOT], in[SLOT], zero[SLOT];
    for (int k = 0; k < SLOT; ++k) {
        out[k] = ival(test_rank, 1, k);
        zero[k] = -7;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < test_size; ++t) {
        if (0 == t % 2) {
            CHECK_MPI(MPI_Put(out, SLOT, MPI_INT, t, test_rank * SLOT, SLOT, MPI_INT, win));
        }
        CHECK_MPI(MPI_Put(out, 0, MPI_INT, t, 0, 0, MPI_INT, win));
        CHECK_MPI(MPI_Get(zero, 0, MPI_INT, t, 0, 0, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(out, 0, MPI_INT, t, 0, 0, MPI_INT, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Put(out, SLOT, MPI_INT, MPI_PROC_NULL, 0, SLOT, MPI_INT, win));
    CHECK_MPI(MPI_Get(zero, SLOT, MPI_INT, MPI_PROC_NULL, 0, SLOT, MPI_INT, win));
    CHECK_MPI(MPI_Accumulate(out, SLOT, MPI_INT, MPI_PROC_NULL, 0, SLOT, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int k = 0; k < SLOT; ++k) {
        CHECK(zero[k] == -7, "a get of nothing (count 0, or MPI_PROC_NULL) wrote [%d] = %d", k,
              zero[k]);
    }
    for (int i = 0; has_mem && i < N; ++i) {
        const int r = i / SLOT;
        const int want = r < test_size ? ival(r, 1, i % SLOT) : -1;
        CHECK(mem[i] == want, "MPI_Win_create window [%d] = %d, expected %d", i, mem[i], want);
    }

    /* Get the slot of the right neighbour back from rank 0. */
    for (int k = 0; k < SLOT; ++k) {
        in[k] = -1;
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPUT, win));
    CHECK_MPI(MPI_Get(in, SLOT, MPI_INT, 0, right_rank * SLOT, SLOT, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int k = 0; k < SLOT; ++k) {
        CHECK(in[k] == ival(right_rank, 1, k), "MPI_Win_create get [%d] = %d, expected %d", k,
              in[k], ival(right_rank, 1, k));
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(MPI_WIN_NULL == win, "MPI_Win_free did not set MPI_WIN_NULL");
    free(mem);
}

/** MPI_Win_allocate with disp_unit 8 (doubles) and 12 (triples of ints). */
static void test_win_allocate(void)
{
    enum { N = 256, M = 16, D0 = 7 };
    double *d = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &d, &win));
    CHECK(d != NULL, "MPI_Win_allocate returned no memory");
    check_attrs(win, d, N * sizeof(double), sizeof(double), MPI_WIN_FLAVOR_ALLOCATE);
    check_group(win, MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) {
        d[i] = -1.0;
    }
    double out[M], back[M];
    for (int k = 0; k < M; ++k) {
        out[k] = test_rank + k * 0.5;
        back[k] = 0;
    }
    /* Put at element D0 of the right neighbour; get that back from the left one. */
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Put(out, M, MPI_DOUBLE, right_rank, D0, M, MPI_DOUBLE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(back, M, MPI_DOUBLE, left_rank, D0, M, MPI_DOUBLE, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < N; ++i) {
        const double want = (i >= D0 && i < D0 + M) ? left_rank + (i - D0) * 0.5 : -1.0;
        CHECK(d[i] == want, "disp_unit 8: [%d] = %g, expected %g", i, d[i], want);
    }
    for (int k = 0; k < M; ++k) {
        /* Our left neighbour's window holds what its own left neighbour put. */
        const int ll = (left_rank + test_size - 1) % test_size;
        CHECK(back[k] == ll + k * 0.5, "disp_unit 8 get [%d] = %g, expected %g", k, back[k],
              ll + k * 0.5);
    }
    CHECK_MPI(MPI_Win_free(&win));

    /* disp_unit 12: target_disp t is byte 12 t. Put one triple at triple 2 + rank of every
     * rank, accumulate 1 into the middle int of triple 1, get triple 2 + right_rank. */
    enum { T = 3 };
    int *tri = NULL;
    const int ntri = test_size + 2;
    CHECK_MPI(MPI_Win_allocate(ntri * T * (MPI_Aint)sizeof(int), T * sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &tri, &win));
    check_attrs(win, tri, ntri * T * (MPI_Aint)sizeof(int), T * sizeof(int),
                MPI_WIN_FLAVOR_ALLOCATE);
    for (int i = 0; i < ntri * T; ++i) {
        tri[i] = -1;
    }
    tri[T + 1] = 0;
    int mine[T], got[T] = {0, 0, 0}, one = 1;
    for (int k = 0; k < T; ++k) {
        mine[k] = ival(test_rank, 2, k);
    }
    MPI_Datatype mid; /* the middle int of a triple: target_disp 1 plus an lb of 4 bytes */
    CHECK_MPI(MPI_Type_create_indexed_block(1, 1, &one, MPI_INT, &mid));
    CHECK_MPI(MPI_Type_commit(&mid));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(MPI_Put(mine, T, MPI_INT, t, 2 + test_rank, T, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, t, 1, 1, mid, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(got, T, MPI_INT, right_rank, 2 + right_rank, T, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < ntri * T; ++i) {
        const int trip = i / T, k = i % T;
        int want = -1;
        if (trip >= 2) {
            want = ival(trip - 2, 2, k);
        } else if (trip == 1 && k == 1) {
            want = test_size;
        }
        CHECK(tri[i] == want, "disp_unit 12: int %d = %d, expected %d", i, tri[i], want);
    }
    for (int k = 0; k < T; ++k) {
        CHECK(got[k] == ival(right_rank, 2, k), "disp_unit 12 get [%d] = %d", k, got[k]);
    }
    MPI_Type_free(&mid);
    CHECK_MPI(MPI_Win_free(&win));
}

/** MPI_Win_allocate_shared: queries, contiguity, loads and stores of others' parts. */
static void test_win_shared(void)
{
    MPI_Comm shm;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    int sr, ss;
    MPI_Comm_rank(shm, &sr);
    MPI_Comm_size(shm, &ss);
    const int sright = (sr + 1) % ss, sleft = (sr + ss - 1) % ss;
    /* Rank r of shm holds 64 (r + 1) ints; rank r's part starts where r - 1's ends. */
    const MPI_Aint mysize = 64 * (MPI_Aint)(sr + 1) * (MPI_Aint)sizeof(int);
    int *base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(mysize, sizeof(int), MPI_INFO_NULL, shm, &base, &win));
    check_attrs(win, base, mysize, sizeof(int), MPI_WIN_FLAVOR_SHARED);
    check_group(win, shm);
    int **part = malloc((size_t)ss * sizeof(int *));
    for (int r = 0; r < ss; ++r) {
        MPI_Aint qsize = -1;
        int qdisp = -1;
        CHECK_MPI(MPI_Win_shared_query(win, r, &qsize, &qdisp, &part[r]));
        CHECK(qsize == 64 * (MPI_Aint)(r + 1) * (MPI_Aint)sizeof(int),
              "MPI_Win_shared_query(%d): size %ld", r, (long)qsize);
        CHECK(qdisp == (int)sizeof(int), "MPI_Win_shared_query(%d): disp_unit %d", r, qdisp);
        CHECK(r != sr || part[r] == base, "MPI_Win_shared_query(self) %p, base %p", part[r], base);
        CHECK(r == 0 || (char *)part[r] == (char *)part[r - 1] + 64 * r * sizeof(int),
              "not contiguous: part %d at %p, part %d at %p, %zu bytes", r, part[r], r - 1,
              part[r - 1], 64 * r * sizeof(int));
    }
    {
        MPI_Aint qsize = -1;
        int qdisp = -1;
        int *q = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &q));
        CHECK(q == part[0] && qsize == 64 * (MPI_Aint)sizeof(int),
              "MPI_Win_shared_query(MPI_PROC_NULL) is not the part of rank 0");
    }

    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    /* Stores into our own part, loads of the right neighbour's. */
    for (int i = 0; i < 64 * (sr + 1); ++i) {
        base[i] = ival(sr, 3, i);
    }
    publish_stores(win, shm);
    CHECK_MPI(MPI_Win_sync(win));
    for (int i = 0; i < 64 * (sright + 1); ++i) {
        CHECK(part[sright][i] == ival(sright, 3, i), "shared load of part %d [%d] = %d", sright, i,
              part[sright][i]);
    }
    CHECK_MPI(MPI_Barrier(shm));
    /* Stores into the right neighbour's part (ints 0-15) and an MPI_Put into it (16-31). */
    int out[16];
    for (int i = 0; i < 16; ++i) {
        part[sright][i] = ival(sr, 4, i);
        out[i] = ival(sr, 5, i);
    }
    CHECK_MPI(MPI_Put(out, 16, MPI_INT, sright, 16, 16, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(sright, win));
    publish_stores(win, shm);
    CHECK_MPI(MPI_Win_sync(win));
    for (int i = 0; i < 64 * (sr + 1); ++i) {
        const int want = i < 16   ? ival(sleft, 4, i)
                         : i < 32 ? ival(sleft, 5, i - 16)
                                  : ival(sr, 3, i);
        CHECK(base[i] == want,
              "shared part [%d] = %d after the left neighbour's stores, expected %d", i, base[i],
              want);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));

    /* alloc_shared_noncontig, and nothing on shm rank 0: MPI_PROC_NULL gives rank 1's part. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    const MPI_Aint sz = sr == 0 ? 0 : 4096;
    CHECK_MPI(MPI_Win_allocate_shared(sz, 1, info, shm, &base, &win));
    MPI_Info_free(&info);
    unsigned char *b = (unsigned char *)base;
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    if (sz > 0) {
        test_fill(b, (size_t)sz, test_rank, 6);
    }
    publish_stores(win, shm);
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 1; r < ss; ++r) {
        MPI_Aint qsize = -1;
        int qdisp = -1;
        unsigned char *q = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &qsize, &qdisp, &q));
        CHECK(qsize == 4096 && qdisp == 1, "noncontig shared_query(%d): size %ld disp %d", r,
              (long)qsize, qdisp);
        int wr = -1; /* the MPI_COMM_WORLD rank of shm rank r */
        MPI_Group sg, wg;
        MPI_Comm_group(shm, &sg);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_translate_ranks(sg, 1, &r, wg, &wr);
        MPI_Group_free(&sg);
        MPI_Group_free(&wg);
        CHECK(test_verify(q, 4096, wr, 6) < 0, "noncontig shared part of %d: wrong bytes", r);
        if (1 == r) {
            unsigned char *n = NULL;
            CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &n));
            CHECK(n == q && qsize == 4096,
                  "shared_query(MPI_PROC_NULL) with a zero-size rank 0: not rank 1's part");
        }
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
    free(part);
    CHECK_MPI(MPI_Comm_free(&shm));
}

/** MPI_Win_create_dynamic: regions attached, found by MPI_Get_address, detached, re-attached. */
static void test_win_dynamic(void)
{
    enum { NREG = 3 };
    static const size_t regsize[NREG] = {64, 4096, 256 * 1024};
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
    check_group(win, MPI_COMM_WORLD);
    unsigned char *reg[NREG + 1];
    MPI_Aint *addr = malloc((size_t)test_size * (NREG + 1) * sizeof(MPI_Aint));
    unsigned char *in = malloc(256 * 1024);

    /* Each region: its first half receives the left neighbour's put, its second half holds
     * the owner's pattern that the right neighbour gets. */
    for (int round = 0; round < 2; ++round) {
        const int nreg = round == 0 ? NREG : NREG + 1;
        if (round == 0) {
            for (int k = 0; k < NREG; ++k) {
                reg[k] = malloc(regsize[k]);
                CHECK_MPI(MPI_Win_attach(win, reg[k], (MPI_Aint)regsize[k]));
            }
        } else {
            /* Detach region 1 and attach it again, and attach a fourth, 8 KiB. */
            CHECK_MPI(MPI_Win_detach(win, reg[1]));
            CHECK_MPI(MPI_Win_attach(win, reg[1], (MPI_Aint)regsize[1]));
            reg[NREG] = malloc(8192);
            CHECK_MPI(MPI_Win_attach(win, reg[NREG], 8192));
        }
        MPI_Aint mine[NREG + 1] = {0};
        for (int k = 0; k < nreg; ++k) {
            CHECK_MPI(MPI_Get_address(reg[k], &mine[k]));
        }
        CHECK_MPI(
            MPI_Allgather(mine, NREG + 1, MPI_AINT, addr, NREG + 1, MPI_AINT, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Win_lock_all(0, win));
        for (int k = 0; k < nreg; ++k) {
            const size_t len = k < NREG ? regsize[k] : 8192, h = len / 2;
            memset(reg[k], 0xee, h);
            test_fill(reg[k] + h, len - h, test_rank, 100 * round + 10 + k);
        }
        publish_stores(win, MPI_COMM_WORLD);
        unsigned char *out = malloc(128 * 1024);
        for (int k = 0; k < nreg; ++k) {
            const size_t len = k < NREG ? regsize[k] : 8192, h = len / 2;
            const MPI_Aint *ra = addr + (size_t)right_rank * (NREG + 1);
            const MPI_Aint *la = addr + (size_t)left_rank * (NREG + 1);
            test_fill(out, h - 1, test_rank, 100 * round + k);
            /* Put h - 1 bytes at byte 1 of the right neighbour's region k. */
            CHECK_MPI(MPI_Put(out, (int)(h - 1), MPI_BYTE, right_rank, MPI_Aint_add(ra[k], 1),
                              (int)(h - 1), MPI_BYTE, win));
            CHECK_MPI(MPI_Get(in, (int)(len - h), MPI_BYTE, left_rank, MPI_Aint_add(la[k], h),
                              (int)(len - h), MPI_BYTE, win));
            CHECK_MPI(MPI_Win_flush_all(win));
            CHECK(test_verify(in, len - h, left_rank, 100 * round + 10 + k) < 0,
                  "dynamic window round %d: get from region %d of rank %d wrong", round, k,
                  left_rank);
        }
        passive_settle(win);
        for (int k = 0; k < nreg; ++k) {
            const size_t len = k < NREG ? regsize[k] : 8192, h = len / 2;
            CHECK(reg[k][0] == 0xee, "dynamic round %d region %d: byte 0 written", round, k);
            long bad = test_verify(reg[k] + 1, h - 1, left_rank, 100 * round + k);
            CHECK(bad < 0, "dynamic round %d region %d: byte %ld of the put wrong", round, k,
                  bad + 1);
        }
        CHECK_MPI(MPI_Win_unlock_all(win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* nobody accesses what we detach next */
        free(out);
    }
    for (int k = 0; k < NREG + 1; ++k) {
        CHECK_MPI(MPI_Win_detach(win, reg[k]));
        free(reg[k]);
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(addr);
    free(in);
}

/* ------------------------------------------------------------------ synchronization */

/** Fence epochs with assertions: put epoch, get epoch, across rounds. */
static void test_fence(void)
{
    enum { N = 64, M = 16, ROUNDS = 4 };
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w,
                               &win));
    for (int round = 0; round < ROUNDS; ++round) {
        int out[M], res[M];
        for (int i = 0; i < N; ++i) {
            w[i] = -1;
            w[N + i] = ival(test_rank, 10 + round, i);
        }
        for (int k = 0; k < M; ++k) {
            out[k] = ival(test_rank, 20 + round, k);
            res[k] = -1;
        }
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
        CHECK_MPI(MPI_Put(out, M, MPI_INT, right_rank, round, M, MPI_INT, win));
        /* No local stores since the last fence; nobody puts in the next epoch. */
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOPUT, win));
        for (int i = 0; i < N; ++i) {
            const int want =
                i >= round && i < round + M ? ival(left_rank, 20 + round, i - round) : -1;
            CHECK(w[i] == want, "fence round %d: [%d] = %d, expected %d", round, i, w[i], want);
        }
        CHECK_MPI(MPI_Get(res, M, MPI_INT, left_rank, N + round, M, MPI_INT, win));
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED, win));
        for (int k = 0; k < M; ++k) {
            CHECK(res[k] == ival(left_rank, 10 + round, round + k), "fence round %d: get [%d] = %d",
                  round, k, res[k]);
        }
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/** Post/start/complete/wait on the ring (and MPI_Win_test), with and without MPI_MODE_NOCHECK;
 * then a star: rank 0 exposes to all others. */
static void test_pscw(void)
{
    enum { N = 64, M = 8, ROUNDS = 4 };
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w,
                               &win));
    MPI_Group lg = group_of(left_rank), rg = group_of(right_rank);
    for (int i = 0; i < N; ++i) {
        w[N + i] = ival(test_rank, 30, i);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        int out[M], res[M];
        for (int i = 0; i < N; ++i) {
            w[i] = -1;
        }
        for (int k = 0; k < M; ++k) {
            out[k] = ival(test_rank, 31 + round, k);
            res[k] = -1;
        }
        const int nocheck = round >= 2 ? MPI_MODE_NOCHECK : 0;
        CHECK_MPI(MPI_Win_post(lg, nocheck, win));
        if (nocheck) {
            /* Every post has returned before any start (and no start came before a post). */
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
        CHECK_MPI(MPI_Win_start(rg, nocheck, win));
        CHECK_MPI(MPI_Put(out, M, MPI_INT, right_rank, 2 * round, M, MPI_INT, win));
        CHECK_MPI(MPI_Get(res, M, MPI_INT, right_rank, N + round, M, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        for (int k = 0; k < M; ++k) {
            CHECK(res[k] == ival(right_rank, 30, round + k), "PSCW round %d: get [%d] = %d", round,
                  k, res[k]);
        }
        if (round % 2) {
            CHECK_MPI(MPI_Win_wait(win));
        } else {
            int flag = 0;
            while (!flag) {
                CHECK_MPI(MPI_Win_test(win, &flag));
            }
        }
        for (int i = 0; i < N; ++i) {
            const int o = 2 * round;
            const int want = i >= o && i < o + M ? ival(left_rank, 31 + round, i - o) : -1;
            CHECK(w[i] == want, "PSCW round %d: [%d] = %d, expected %d", round, i, w[i], want);
        }
    }
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);

    /* Star: ranks 1.. put their slot into rank 0 and add to its counter; rank 0 alone posts,
     * to the group of all others, and waits with MPI_Win_test. */
    if (test_size >= 2) {
        MPI_Group world, others, zero = group_of(0);
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        const int excl = 0;
        MPI_Group_excl(world, 1, &excl, &others);
        if (0 == test_rank) {
            for (int i = 0; i < N; ++i) {
                w[i] = -1;
            }
            w[N] = 0;
            CHECK_MPI(MPI_Win_post(others, 0, win));
            int flag = 0;
            while (!flag) {
                CHECK_MPI(MPI_Win_test(win, &flag));
            }
            for (int i = 0; i < N; ++i) {
                const int want = i >= 1 && i < test_size ? ival(i, 40, 0) : -1;
                CHECK(w[i] == want, "PSCW star: [%d] = %d, expected %d", i, w[i], want);
            }
            CHECK(w[N] == test_size * (test_size - 1) / 2, "PSCW star: counter %d", w[N]);
        } else {
            const int v = ival(test_rank, 40, 0);
            CHECK_MPI(MPI_Win_start(zero, 0, win));
            CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, test_rank, 1, MPI_INT, win));
            CHECK_MPI(MPI_Accumulate(&test_rank, 1, MPI_INT, 0, N, 1, MPI_INT, MPI_SUM, win));
            CHECK_MPI(MPI_Win_complete(win));
        }
        MPI_Group_free(&world);
        MPI_Group_free(&others);
        MPI_Group_free(&zero);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/** Exclusive lock: a get/put read-modify-write counter on rank 0. Shared locks (some with
 * MPI_MODE_NOCHECK): every rank writes its slot in every rank. */
static void test_locks(void)
{
    enum { ITER = 30 };
    int *w = NULL;
    MPI_Win win;
    const int n = 1 + test_size;
    CHECK_MPI(MPI_Win_allocate(n * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &w, &win));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, test_rank, 0, win));
    for (int i = 0; i < n; ++i) {
        w[i] = i == 0 ? 0 : -1;
    }
    CHECK_MPI(MPI_Win_unlock(test_rank, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < ITER; ++k) {
        int c = -1;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Get(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush_local(0, win));
        CHECK(c >= k && c < test_size * ITER, "locked counter read %d at iteration %d", c, k);
        ++c;
        CHECK_MPI(MPI_Put(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int vals[64];
    CHECK(test_size <= 64, "too many ranks for this test");
    for (int t = 0; t < test_size; ++t) {
        vals[t] = ival(test_rank, 50, t);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, t % 2 ? MPI_MODE_NOCHECK : 0, win));
        CHECK_MPI(MPI_Put(&vals[t], 1, MPI_INT, t, 1 + test_rank, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(t, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, test_rank, 0, win));
    CHECK(test_rank != 0 || w[0] == test_size * ITER, "exclusive-lock counter %d, expected %d",
          w[0], test_size * ITER);
    for (int r = 0; r < test_size; ++r) {
        CHECK(w[1 + r] == ival(r, 50, test_rank), "shared lock: slot %d = %d", r, w[1 + r]);
    }
    CHECK_MPI(MPI_Win_unlock(test_rank, win));
    CHECK_MPI(MPI_Win_free(&win));
}

/** lock_all with each flush, and MPI_Win_sync making local stores visible to gets. */
static void test_flushes(void)
{
    enum { M = 4096, NSEC = 5 };
    const MPI_Aint sec = (MPI_Aint)test_size * M; /* ints per section: one slot per origin */
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(NSEC * sec * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &w, &win));
    int *buf = malloc(M * sizeof(int)), *res = malloc((size_t)test_size * M * sizeof(int));
#define FILL(b, owner, tag)                 \
    for (int i_ = 0; i_ < M; ++i_) {        \
        (b)[i_] = ival((owner), (tag), i_); \
    }
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (MPI_Aint i = 0; i < NSEC * sec; ++i) {
        w[i] = -1;
    }
    FILL(w + 4 * sec, test_rank, 64); /* section 4: our stores, read by the right neighbour */
    publish_stores(win, MPI_COMM_WORLD);

    /* Section 0: put, flush, get the same place back. */
    FILL(buf, test_rank, 60);
    CHECK_MPI(MPI_Put(buf, M, MPI_INT, right_rank, 0 * sec + test_rank * M, M, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(right_rank, win));
    CHECK_MPI(MPI_Get(res, M, MPI_INT, right_rank, 0 * sec + test_rank * M, M, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush_local(right_rank, win));
    for (int i = 0; i < M; ++i) {
        CHECK(res[i] == ival(test_rank, 60, i), "put, flush, get: [%d] = %d", i, res[i]);
    }
    /* Section 1: after flush_local the origin buffer may change; the target gets the old. */
    FILL(buf, test_rank, 61);
    CHECK_MPI(MPI_Put(buf, M, MPI_INT, right_rank, 1 * sec + test_rank * M, M, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush_local(right_rank, win));
    FILL(buf, test_rank, 99);
    CHECK_MPI(MPI_Win_flush(right_rank, win));
    /* Section 2: put to everyone, flush_all, get everything back. */
    for (int t = 0; t < test_size; ++t) {
        FILL(res + (size_t)t * M, test_rank, 62); /* separate buffers: res is reused below */
        CHECK_MPI(
            MPI_Put(res + (size_t)t * M, M, MPI_INT, t, 2 * sec + test_rank * M, M, MPI_INT, win));
    }
    CHECK_MPI(MPI_Win_flush_all(win));
    for (int t = 0; t < test_size; ++t) {
        for (int i = 0; i < M; ++i) {
            res[(size_t)t * M + i] = -2;
        }
        CHECK_MPI(
            MPI_Get(res + (size_t)t * M, M, MPI_INT, t, 2 * sec + test_rank * M, M, MPI_INT, win));
    }
    CHECK_MPI(MPI_Win_flush_local_all(win));
    for (int t = 0; t < test_size; ++t) {
        for (int i = 0; i < M; ++i) {
            CHECK(res[(size_t)t * M + i] == ival(test_rank, 62, i),
                  "put, flush_all, get from %d: [%d] = %d", t, i, res[(size_t)t * M + i]);
        }
    }
    /* Section 3: one buffer put to everyone; flush_local_all; the buffer changes. */
    FILL(buf, test_rank, 63);
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(MPI_Put(buf, M, MPI_INT, t, 3 * sec + test_rank * M, M, MPI_INT, win));
    }
    CHECK_MPI(MPI_Win_flush_local_all(win));
    FILL(buf, test_rank, 98);
    CHECK_MPI(MPI_Win_flush_all(win));
    /* Section 4: the left neighbour's stores, published with MPI_Win_sync. */
    CHECK_MPI(MPI_Get(res, M, MPI_INT, left_rank, 4 * sec, M, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(left_rank, win));
    for (int i = 0; i < M; ++i) {
        CHECK(res[i] == ival(left_rank, 64, i), "MPI_Win_sync'd stores: get [%d] = %d", i, res[i]);
    }

    passive_settle(win);
    for (int r = 0; r < test_size; ++r) {
        for (int i = 0; i < M; ++i) {
            const int *s1 = w + 1 * sec + (MPI_Aint)r * M, *s2 = w + 2 * sec + (MPI_Aint)r * M;
            const int *s3 = w + 3 * sec + (MPI_Aint)r * M;
            const int want1 = r == left_rank ? ival(r, 61, i) : -1;
            CHECK(s1[i] == want1, "flush_local: slot %d [%d] = %d, expected %d", r, i, s1[i],
                  want1);
            CHECK(s2[i] == ival(r, 62, i), "flush_all: slot %d [%d] = %d", r, i, s2[i]);
            CHECK(s3[i] == ival(r, 63, i), "flush_local_all: slot %d [%d] = %d", r, i, s3[i]);
        }
    }
#undef FILL
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
    free(buf);
    free(res);
}

/* ------------------------------------------------------------------ data movement */

/** Contiguous put and get of 0 B to 1 MiB, under fence and under lock_all. */
static void test_sizes(void)
{
    static const size_t sizes[] = {0, 1, 8, 4096, 1 << 20};
    enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
    const size_t half = 1 << 20;
    unsigned char *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * (MPI_Aint)half + 1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    unsigned char *src = malloc(half), *dst = malloc(half + 1);
    /* Window: [0, half] receives the left neighbour's put, [half + 1, 2 half] is read. */
    for (int passive = 0; passive < 2; ++passive) {
        for (int s = 0; s < NS; ++s) {
            const size_t len = sizes[s];
            const long msg = 200 + passive * 10 + s;
            test_fill(src, len, test_rank, msg);
            memset(dst, 0xee, len + 1);
            if (passive) {
                CHECK_MPI(MPI_Win_lock_all(0, win));
            }
            memset(w, 0xee, len + 1);
            test_fill(w + half + 1, len, test_rank, msg + 1000);
            if (passive) {
                publish_stores(win, MPI_COMM_WORLD);
            } else {
                CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
            }
            CHECK_MPI(MPI_Put(src, (int)len, MPI_BYTE, right_rank, 0, (int)len, MPI_BYTE, win));
            CHECK_MPI(MPI_Get(dst, (int)len, MPI_BYTE, left_rank, (MPI_Aint)half + 1, (int)len,
                              MPI_BYTE, win));
            if (passive) {
                CHECK_MPI(MPI_Win_flush_local(left_rank, win));
                CHECK(test_verify(dst, len, left_rank, msg + 1000) < 0,
                      "get of %zu bytes after flush_local: wrong", len);
                passive_settle(win);
                CHECK_MPI(MPI_Win_unlock_all(win));
            } else {
                CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
            }
            const char *how = passive ? "lock_all" : "fence";
            long bad = test_verify(w, len, left_rank, msg);
            CHECK(bad < 0, "%s put of %zu bytes: byte %ld wrong", how, len, bad);
            CHECK(w[len] == 0xee, "%s put of %zu bytes wrote past its end", how, len);
            bad = test_verify(dst, len, left_rank, msg + 1000);
            CHECK(bad < 0, "%s get of %zu bytes: byte %ld wrong", how, len, bad);
            CHECK(dst[len] == 0xee, "%s get of %zu bytes wrote past its end", how, len);
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* before the next round's stores */
        }
    }
    free(src);
    free(dst);
    CHECK_MPI(MPI_Win_free(&win));
}

/** Vector and indexed datatypes at origin and target of put, get, accumulate and
 * get_accumulate. */
static void test_datatypes(void)
{
    enum { NB = 6, BL = 3, ST = 7, NEL = NB * BL, W = 64, NIB = 5 };
    static const int iblen[NIB] = {1, 4, 2, 5, 6};     /* 18 ints */
    static const int idisp[NIB] = {40, 3, 10, 20, 30}; /* not in increasing order */
    int vec_at[NEL], idx_at[NEL];
    for (int k = 0; k < NEL; ++k) {
        vec_at[k] = (k / BL) * ST + k % BL;
    }
    for (int b = 0, k = 0; b < NIB; ++b) {
        for (int j = 0; j < iblen[b]; ++j) {
            idx_at[k++] = idisp[b] + j;
        }
    }
    MPI_Datatype vec, idx;
    CHECK_MPI(MPI_Type_vector(NB, BL, ST, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_indexed(NIB, iblen, idisp, MPI_INT, &idx));
    CHECK_MPI(MPI_Type_commit(&vec));
    CHECK_MPI(MPI_Type_commit(&idx));
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(
        MPI_Win_allocate(W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    int src[W], res[W], want[W];

    /* Put: origin vector, target indexed, into the right neighbour. */
    for (int i = 0; i < W; ++i) {
        w[i] = -1;
        src[i] = ival(test_rank, 70, i);
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Put(src, 1, vec, right_rank, 0, 1, idx, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < W; ++i) {
        want[i] = -1;
    }
    for (int k = 0; k < NEL; ++k) {
        want[idx_at[k]] = ival(left_rank, 70, vec_at[k]);
    }
    for (int i = 0; i < W; ++i) {
        CHECK(w[i] == want[i], "put vector->indexed: [%d] = %d, expected %d", i, w[i], want[i]);
    }

    /* Get: origin indexed, target vector at disp 2, from the left neighbour. */
    for (int i = 0; i < W; ++i) {
        w[i] = ival(test_rank, 71, i);
        res[i] = -2;
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Get(res, 1, idx, left_rank, 2, 1, vec, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < W; ++i) {
        want[i] = -2;
    }
    for (int k = 0; k < NEL; ++k) {
        want[idx_at[k]] = ival(left_rank, 71, 2 + vec_at[k]);
    }
    for (int i = 0; i < W; ++i) {
        CHECK(res[i] == want[i], "get indexed<-vector: [%d] = %d, expected %d", i, res[i], want[i]);
    }

    /* Accumulate: every rank into every rank, origin indexed, target vector at disp 1;
     * then origin contiguous, target indexed, MPI_MAX. */
    for (int i = 0; i < W; ++i) {
        w[i] = i;
        src[i] = test_rank * 100 + i;
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(MPI_Accumulate(src, 1, idx, t, 1, 1, vec, MPI_SUM, win));
    }
    /* NOSUCCEED: nobody accumulates into us again before our next fence, after the check. */
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < W; ++i) {
        want[i] = i;
    }
    for (int k = 0; k < NEL; ++k) {
        for (int r = 0; r < test_size; ++r) {
            want[1 + vec_at[k]] += r * 100 + idx_at[k];
        }
    }
    for (int i = 0; i < W; ++i) {
        CHECK(w[i] == want[i], "accumulate indexed->vector: [%d] = %d, expected %d", i, w[i],
              want[i]);
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(MPI_Accumulate(src, NEL, MPI_INT, t, 0, 1, idx, MPI_MAX, win));
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int k = 0; k < NEL; ++k) {
        const int m = (test_size - 1) * 100 + k;
        want[idx_at[k]] = want[idx_at[k]] > m ? want[idx_at[k]] : m;
    }
    for (int i = 0; i < W; ++i) {
        CHECK(w[i] == want[i], "accumulate MAX contiguous->indexed: [%d] = %d, expected %d", i,
              w[i], want[i]);
    }

    /* Get_accumulate: the left neighbour alone replaces our vector at disp 0 (result into an
     * indexed origin type), under lock_all. */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < W; ++i) {
        w[i] = ival(test_rank, 72, i);
        src[i] = ival(test_rank, 73, i);
        res[i] = -3;
    }
    publish_stores(win, MPI_COMM_WORLD);
    CHECK_MPI(MPI_Get_accumulate(src, NEL, MPI_INT, res, 1, idx, right_rank, 0, 1, vec, MPI_REPLACE,
                                 win));
    passive_settle(win);
    for (int i = 0; i < W; ++i) {
        want[i] = -3;
    }
    for (int k = 0; k < NEL; ++k) {
        want[idx_at[k]] = ival(right_rank, 72, vec_at[k]);
    }
    for (int i = 0; i < W; ++i) {
        CHECK(res[i] == want[i], "get_accumulate result [%d] = %d, expected %d", i, res[i],
              want[i]);
        want[i] = ival(test_rank, 72, i);
    }
    for (int k = 0; k < NEL; ++k) {
        want[vec_at[k]] = ival(left_rank, 73, k);
    }
    for (int i = 0; i < W; ++i) {
        CHECK(w[i] == want[i], "get_accumulate REPLACE into a vector: [%d] = %d, expected %d", i,
              w[i], want[i]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
}

/* ------------------------------------------------------------------ accumulate ops x types */

enum kind { K_SINT, K_UINT, K_FLT, K_CPLX, K_BOOL, K_BYTE, K_2INT, K_DINT };
enum opid {
    O_SUM,
    O_PROD,
    O_MIN,
    O_MAX,
    O_BAND,
    O_BOR,
    O_BXOR,
    O_LAND,
    O_LOR,
    O_LXOR,
    O_REPLACE,
    O_NO_OP,
    O_MINLOC,
    O_MAXLOC,
    O_COUNT
};
static const char *op_name[O_COUNT] = {"SUM",     "PROD",  "MIN",    "MAX",   "BAND",
                                       "BOR",     "BXOR",  "LAND",   "LOR",   "LXOR",
                                       "REPLACE", "NO_OP", "MINLOC", "MAXLOC"};

/** One element, whatever its type: integers in i, floating point in f, complex in c, the
 * index of MINLOC/MAXLOC pairs in loc. */
struct val {
    int64_t i;
    long double f;
    long double complex c;
    int loc;
};

struct tdesc {
    const char *name;
    MPI_Datatype type;
    size_t size;
    enum kind kind;
    void (*put)(void *, size_t, const struct val *);
    void (*get)(const void *, size_t, struct val *);
};

struct int_int {
    int v, loc;
};
struct double_int {
    double v;
    int loc;
};

/* Element accessors. Through memcpy: MPI does not promise that window memory is aligned for
 * long double (osc rdma's MPI_Win_allocate gives 8-byte alignment under AddressSanitizer). */
#define ACCESS(NAME, T, FIELD)                                     \
    static void put_##NAME(void *b, size_t i, const struct val *v) \
    {                                                              \
        const T x = (T)v->FIELD;                                   \
        memcpy((char *)b + i * sizeof(T), &x, sizeof(T));          \
    }                                                              \
    static void get_##NAME(const void *b, size_t i, struct val *v) \
    {                                                              \
        T x;                                                       \
        memcpy(&x, (const char *)b + i * sizeof(T), sizeof(T));    \
        memset(v, 0, sizeof *v);                                   \
        v->FIELD = x;                                              \
    }
ACCESS(schar, signed char, i)
ACCESS(uchar, unsigned char, i)
ACCESS(short, short, i)
ACCESS(ushort, unsigned short, i)
ACCESS(int, int, i)
ACCESS(uint, unsigned, i)
ACCESS(long, long, i)
ACCESS(ulong, unsigned long, i)
ACCESS(llong, long long, i)
ACCESS(ullong, unsigned long long, i)
ACCESS(i8, int8_t, i)
ACCESS(i16, int16_t, i)
ACCESS(i32, int32_t, i)
ACCESS(i64, int64_t, i)
ACCESS(u8, uint8_t, i)
ACCESS(u16, uint16_t, i)
ACCESS(u32, uint32_t, i)
ACCESS(u64, uint64_t, i)
ACCESS(float, float, f)
ACCESS(double, double, f)
ACCESS(ldouble, long double, f)
ACCESS(fcomplex, float complex, c)
ACCESS(dcomplex, double complex, c)
ACCESS(ldcomplex, long double complex, c)
#undef ACCESS

static void put_bool(void *b, size_t i, const struct val *v)
{
    ((bool *)b)[i] = v->i != 0;
}
static void get_bool(const void *b, size_t i, struct val *v)
{
    memset(v, 0, sizeof *v);
    v->i = ((const bool *)b)[i];
}
/* The pairs: the value, then the index (MPI_2INT, MPI_DOUBLE_INT as C structs). */
static void put_2int(void *b, size_t i, const struct val *v)
{
    const struct int_int x = {(int)v->i, v->loc};
    memcpy((char *)b + i * sizeof x, &x, sizeof x);
}
static void get_2int(const void *b, size_t i, struct val *v)
{
    struct int_int x;
    memcpy(&x, (const char *)b + i * sizeof x, sizeof x);
    memset(v, 0, sizeof *v);
    v->i = x.v;
    v->loc = x.loc;
}
static void put_dint(void *b, size_t i, const struct val *v)
{
    struct double_int x;
    memset(&x, 0, sizeof x); /* no uninitialized padding bytes into the window */
    x.v = (double)v->f;
    x.loc = v->loc;
    memcpy((char *)b + i * sizeof x, &x, sizeof x);
}
static void get_dint(const void *b, size_t i, struct val *v)
{
    struct double_int x;
    memcpy(&x, (const char *)b + i * sizeof x, sizeof x);
    memset(v, 0, sizeof *v);
    v->f = x.v;
    v->loc = x.loc;
}

static bool op_allowed(enum kind k, int o)
{
    switch (k) {
        case K_SINT:
        case K_UINT:
            return o <= O_NO_OP;
        case K_FLT:
            return o <= O_MAX || o == O_REPLACE || o == O_NO_OP;
        case K_CPLX:
            return o == O_SUM || o == O_PROD || o == O_REPLACE || o == O_NO_OP;
        case K_BOOL:
            return (o >= O_LAND && o <= O_LXOR) || o == O_REPLACE || o == O_NO_OP;
        case K_BYTE:
            return (o >= O_BAND && o <= O_BXOR) || o == O_REPLACE || o == O_NO_OP;
        case K_2INT:
        case K_DINT:
            return o >= O_REPLACE;
    }
    return false;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return x;
}

/**
 * The operand of rank @p r at element @p i for op @p o (r = -1: the target's initial value).
 * Sums and products stay small (ranks from 8 on add the identity), so no type overflows and
 * every floating-point result is exact whatever the order of the ranks.
 */
static struct val operand(enum kind k, int o, int r, int i)
{
    struct val v;
    memset(&v, 0, sizeof v);
    const int s = r + 1; /* 0 for the initial value */
    const bool sgn = k == K_SINT || k == K_FLT;
    switch (o) {
        case O_SUM: {
            const int x = s < 9 ? (i * 3 + s * 5) % 11 - (sgn ? 5 : 0) : 0;
            v.i = x;
            v.f = x * 0.5L;
            v.c = x + ((i + s) % 5 - 2) * (long double complex)I;
            if (s >= 9) {
                v.c = 0;
            }
            break;
        }
        case O_PROD: {
            const int p = (i + 2 * s) % 4;
            static const int ip[4] = {1, 2, -1, 1}, up[4] = {1, 2, 1, 1};
            static const long double fp[4] = {1, 2, -1, 0.5L};
            v.i = s < 9 ? (k == K_SINT ? ip[p] : up[p]) : 1;
            v.f = s < 9 ? fp[p] : 1;
            const long double complex cp[4] = {1, I, 1 + I, -1};
            v.c = s < 9 ? cp[p] : 1;
            break;
        }
        case O_MIN:
        case O_MAX: {
            const int x = (i * 7 + s * 13) % 23 - (sgn ? 11 : 0);
            v.i = x;
            v.f = x * 0.25L;
            break;
        }
        case O_BAND:
        case O_BOR:
        case O_BXOR: {
            const uint64_t m = mix64(((uint64_t)s << 32) ^ ((uint64_t)i << 8) ^ (uint64_t)o);
            const uint64_t sparse = m & mix64(m);
            v.i = (int64_t)(o == O_BAND ? ~sparse : o == O_BOR ? sparse : m);
            break;
        }
        case O_LAND:
        case O_LOR:
        case O_LXOR: {
            bool t;
            if (o == O_LAND) {
                t = i % (test_size + 4) != s; /* some elements see no false */
            } else if (o == O_LOR) {
                t = i % (test_size + 4) == s; /* some elements see no true */
            } else {
                t = (i >> (s % 6)) & 1;
            }
            v.i = !t ? 0 : k == K_BOOL ? 1 : 1 + (i + s) % 3;
            break;
        }
        case O_REPLACE:
        case O_NO_OP:
            v.i = k == K_SINT   ? (s * 37 + i * 11) % 101 - 50
                  : k == K_BOOL ? (s + i) % 2
                                : (s * 37 + i * 11) % 211;
            v.f = s * 1.5L + i * 0.25L;
            v.c = s + i * 0.5L * (long double complex)I;
            if (k == K_2INT || k == K_DINT) {
                v.i = s * 100 + i;
                v.f = s * 1.5L + i;
                v.loc = s;
            }
            break;
        case O_MINLOC:
        case O_MAXLOC:
            v.i = (i * 7 + s * 13) % 5; /* many ties */
            v.f = v.i * 0.5L;
            v.loc = s == 0 ? (i % 2 ? -1 : 1000) : r;
            break;
    }
    return v;
}

/** The reference: @p a op @p b. */
static struct val combine(enum kind k, int o, struct val a, const struct val *b)
{
    const bool fl = k == K_FLT || k == K_DINT;
    switch (o) {
        case O_SUM:
            a.i += b->i;
            a.f += b->f;
            a.c += b->c;
            break;
        case O_PROD:
            a.i *= b->i;
            a.f *= b->f;
            a.c *= b->c;
            break;
        case O_MIN:
            if (fl ? b->f < a.f : b->i < a.i) {
                a = *b;
            }
            break;
        case O_MAX:
            if (fl ? b->f > a.f : b->i > a.i) {
                a = *b;
            }
            break;
        case O_BAND:
            a.i = (int64_t)((uint64_t)a.i & (uint64_t)b->i);
            break;
        case O_BOR:
            a.i = (int64_t)((uint64_t)a.i | (uint64_t)b->i);
            break;
        case O_BXOR:
            a.i = (int64_t)((uint64_t)a.i ^ (uint64_t)b->i);
            break;
        case O_LAND:
            a.i = a.i && b->i;
            break;
        case O_LOR:
            a.i = a.i || b->i;
            break;
        case O_LXOR:
            a.i = !a.i != !b->i;
            break;
        case O_REPLACE:
            a = *b;
            break;
        case O_NO_OP:
            break;
        case O_MINLOC:
        case O_MAXLOC: {
            const int c = fl ? (b->f > a.f) - (b->f < a.f) : (b->i > a.i) - (b->i < a.i);
            if ((o == O_MINLOC && c < 0) || (o == O_MAXLOC && c > 0)) {
                a = *b;
            } else if (c == 0 && b->loc < a.loc) {
                a.loc = b->loc;
            }
            break;
        }
    }
    return a;
}

enum { NEL = 37, MAXEXT = 32 }; /* elements per (type, op) test; the largest extent */

/** @p v as the type stores it (integers truncated to their width, floats rounded). */
static struct val as_stored(const struct tdesc *t, struct val v)
{
    union {
        unsigned char b[MAXEXT];
        long double complex c; /* for alignment */
    } tmp;
    struct val w;
    t->put(tmp.b, 0, &v);
    t->get(tmp.b, 0, &w);
    return w;
}

static bool same(const struct tdesc *t, int o, const struct val *a, const struct val *b)
{
    if (o >= O_LAND && o <= O_LXOR) {
        return !a->i == !b->i; /* MPI's logical ops give a truth value, not a particular one */
    }
    switch (t->kind) {
        case K_FLT:
            return a->f == b->f;
        case K_CPLX:
            return a->c == b->c;
        case K_2INT:
            return a->i == b->i && a->loc == b->loc;
        case K_DINT:
            return a->f == b->f && a->loc == b->loc;
        default:
            return a->i == b->i;
    }
}

static const char *show(const struct tdesc *t, const struct val *v, char *s, size_t n)
{
    switch (t->kind) {
        case K_FLT:
            snprintf(s, n, "%Lg", v->f);
            break;
        case K_CPLX:
            snprintf(s, n, "(%Lg, %Lg)", creall(v->c), cimagl(v->c));
            break;
        case K_2INT:
            snprintf(s, n, "(%lld, loc %d)", (long long)v->i, v->loc);
            break;
        case K_DINT:
            snprintf(s, n, "(%Lg, loc %d)", v->f, v->loc);
            break;
        default:
            snprintf(s, n, "%lld (0x%llx)", (long long)v->i, (unsigned long long)v->i);
    }
    return s;
}

/** Element @p i of @p buf against @p want; @p where says which test. */
static void check_elem(const struct tdesc *t, int o, const void *buf, int i, const struct val *want,
                       const char *where)
{
    struct val got;
    char a[96], b[96];
    t->get(buf, (size_t)i, &got);
    CHECK(same(t, o, &got, want), "%s %s on %s, element %d: %s, expected %s", where, op_name[o],
          t->name, i, show(t, &got, a, sizeof a), show(t, want, b, sizeof b));
}

/** The reference of element @p i after every rank applied op @p o once. */
static struct val folded(const struct tdesc *t, int o, int i)
{
    struct val acc = as_stored(t, operand(t->kind, o, -1, i));
    for (int r = 0; r < test_size; ++r) {
        const struct val b = as_stored(t, operand(t->kind, o, r, i));
        acc = as_stored(t, combine(t->kind, o, acc, &b));
    }
    return acc;
}

/**
 * One (type, op): under lock_all, every rank applies it to NEL elements of every rank at once
 * (region A, byte 0); under fence, every rank applies it to rank 0 (region B). MPI_REPLACE:
 * in A every element must hold some rank's value; in B each rank replaces its own share.
 * MPI_NO_OP (MPI_Get_accumulate): every rank fetches the initial values, which stay.
 */
static void acc_combo(MPI_Win win, unsigned char *w, const struct tdesc *t, int o, MPI_Op op,
                      unsigned char *obuf, unsigned char *rbuf)
{
    const MPI_Aint ext = (MPI_Aint)t->size, regb = NEL * MAXEXT;
    unsigned char *wb = w + regb;
    for (int i = 0; i < NEL; ++i) {
        const struct val v = operand(t->kind, o, test_rank, i);
        t->put(obuf, (size_t)i, &v);
    }
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < NEL; ++i) {
        const struct val v = operand(t->kind, o, -1, i);
        t->put(w, (size_t)i, &v);
        t->put(wb, (size_t)i, &v);
    }
    publish_stores(win, MPI_COMM_WORLD);
    for (int k = 0; k < test_size; ++k) {
        const int target = (test_rank + k) % test_size;
        if (o == O_NO_OP) {
            memset(rbuf, 0, NEL * MAXEXT);
            CHECK_MPI(MPI_Get_accumulate(NULL, 0, t->type, rbuf, NEL, t->type, target, 0, NEL,
                                         t->type, op, win));
            CHECK_MPI(MPI_Win_flush(target, win));
            for (int i = 0; i < NEL; ++i) {
                const struct val want = as_stored(t, operand(t->kind, o, -1, i));
                check_elem(t, o, rbuf, i, &want, "lock_all get_accumulate");
            }
        } else {
            CHECK_MPI(MPI_Accumulate(obuf, NEL, t->type, target, 0, NEL, t->type, op, win));
        }
    }
    passive_settle(win);
    for (int i = 0; i < NEL; ++i) {
        if (o == O_REPLACE) {
            struct val got;
            t->get(w, (size_t)i, &got);
            bool found = false;
            for (int r = 0; r < test_size && !found; ++r) {
                const struct val v = as_stored(t, operand(t->kind, o, r, i));
                found = same(t, o, &got, &v);
            }
            char a[96];
            CHECK(found, "concurrent REPLACE on %s, element %d: %s is no rank's value", t->name, i,
                  show(t, &got, a, sizeof a));
        } else {
            const struct val want = folded(t, o, i);
            check_elem(t, o, w, i, &want, "lock_all");
        }
    }
    CHECK_MPI(MPI_Win_unlock_all(win));

    /* Fence, into rank 0 only. */
    const int share = NEL / test_size;
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (o == O_REPLACE) {
        CHECK_MPI(MPI_Accumulate(obuf + test_rank * share * ext, share, t->type, 0,
                                 regb + test_rank * share * ext, share, t->type, op, win));
    } else if (o == O_NO_OP) {
        memset(rbuf, 0, NEL * MAXEXT);
        CHECK_MPI(MPI_Get_accumulate(NULL, 0, t->type, rbuf, NEL, t->type, 0, regb, NEL, t->type,
                                     op, win));
    } else {
        CHECK_MPI(MPI_Accumulate(obuf, NEL, t->type, 0, regb, NEL, t->type, op, win));
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < NEL; ++i) {
        struct val want;
        if (o == O_REPLACE) {
            const int owner = share > 0 && i < share * test_size ? i / share : -1;
            want = as_stored(t, operand(t->kind, o, owner, i));
        } else {
            want = folded(t, o, i);
        }
        if (o == O_NO_OP) {
            check_elem(t, o, rbuf, i, &want, "fence get_accumulate");
        }
        if (0 == test_rank) {
            check_elem(t, o, wb, i, &want, "fence");
        }
    }
}

static void test_acc_ops(void)
{
    const struct tdesc types[] = {
        {"signed char", MPI_SIGNED_CHAR, sizeof(signed char), K_SINT, put_schar, get_schar},
        {"unsigned char", MPI_UNSIGNED_CHAR, sizeof(unsigned char), K_UINT, put_uchar, get_uchar},
        {"short", MPI_SHORT, sizeof(short), K_SINT, put_short, get_short},
        {"unsigned short", MPI_UNSIGNED_SHORT, sizeof(unsigned short), K_UINT, put_ushort,
         get_ushort},
        {"int", MPI_INT, sizeof(int), K_SINT, put_int, get_int},
        {"unsigned", MPI_UNSIGNED, sizeof(unsigned), K_UINT, put_uint, get_uint},
        {"long", MPI_LONG, sizeof(long), K_SINT, put_long, get_long},
        {"unsigned long", MPI_UNSIGNED_LONG, sizeof(unsigned long), K_UINT, put_ulong, get_ulong},
        {"long long", MPI_LONG_LONG, sizeof(long long), K_SINT, put_llong, get_llong},
        {"unsigned long long", MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), K_UINT,
         put_ullong, get_ullong},
        {"int8_t", MPI_INT8_T, 1, K_SINT, put_i8, get_i8},
        {"int16_t", MPI_INT16_T, 2, K_SINT, put_i16, get_i16},
        {"int32_t", MPI_INT32_T, 4, K_SINT, put_i32, get_i32},
        {"int64_t", MPI_INT64_T, 8, K_SINT, put_i64, get_i64},
        {"uint8_t", MPI_UINT8_T, 1, K_UINT, put_u8, get_u8},
        {"uint16_t", MPI_UINT16_T, 2, K_UINT, put_u16, get_u16},
        {"uint32_t", MPI_UINT32_T, 4, K_UINT, put_u32, get_u32},
        {"uint64_t", MPI_UINT64_T, 8, K_UINT, put_u64, get_u64},
        {"float", MPI_FLOAT, sizeof(float), K_FLT, put_float, get_float},
        {"double", MPI_DOUBLE, sizeof(double), K_FLT, put_double, get_double},
        {"long double", MPI_LONG_DOUBLE, sizeof(long double), K_FLT, put_ldouble, get_ldouble},
        {"MPI_C_COMPLEX", MPI_C_COMPLEX, sizeof(float complex), K_CPLX, put_fcomplex, get_fcomplex},
        {"float complex", MPI_C_FLOAT_COMPLEX, sizeof(float complex), K_CPLX, put_fcomplex,
         get_fcomplex},
        {"double complex", MPI_C_DOUBLE_COMPLEX, sizeof(double complex), K_CPLX, put_dcomplex,
         get_dcomplex},
        {"long double complex", MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double complex), K_CPLX,
         put_ldcomplex, get_ldcomplex},
        {"bool", MPI_C_BOOL, sizeof(bool), K_BOOL, put_bool, get_bool},
        {"MPI_BYTE", MPI_BYTE, 1, K_BYTE, put_uchar, get_uchar},
        {"MPI_2INT", MPI_2INT, sizeof(struct int_int), K_2INT, put_2int, get_2int},
        {"MPI_DOUBLE_INT", MPI_DOUBLE_INT, sizeof(struct double_int), K_DINT, put_dint, get_dint},
    };
    const MPI_Op ops[O_COUNT] = {MPI_SUM,     MPI_PROD,  MPI_MIN,    MPI_MAX,   MPI_BAND,
                                 MPI_BOR,     MPI_BXOR,  MPI_LAND,   MPI_LOR,   MPI_LXOR,
                                 MPI_REPLACE, MPI_NO_OP, MPI_MINLOC, MPI_MAXLOC};
    unsigned char *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * NEL * MAXEXT, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    unsigned char *obuf = malloc(NEL * MAXEXT), *rbuf = malloc(NEL * MAXEXT);
    int combos = 0;
    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); ++k) {
        const struct tdesc *t = &types[k];
        MPI_Aint lb, extent;
        CHECK_MPI(MPI_Type_get_extent(t->type, &lb, &extent));
        CHECK(lb == 0 && extent == (MPI_Aint)t->size && t->size <= MAXEXT,
              "%s: extent %ld, sizeof %zu", t->name, (long)extent, t->size);
        for (int o = 0; o < O_COUNT; ++o) {
            if (op_allowed(t->kind, o)) {
                acc_combo(win, w, t, o, ops[o], obuf, rbuf);
                ++combos;
            }
        }
    }
    if (0 == test_rank) {
        printf("    %d (type, op) pairs\n", combos);
    }
    free(obuf);
    free(rbuf);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ------------------------------------------------------------------ atomics */

/** MPI_Get_accumulate: each rank adds to its own slot in every rank and fetches the old value. */
static void test_get_accumulate(void)
{
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(test_size * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &w, &win));
    int *old = malloc((size_t)test_size * sizeof(int)), add = test_rank + 1;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < test_size; ++r) {
        w[r] = test_rank * 100 + r;
        old[r] = -1;
    }
    publish_stores(win, MPI_COMM_WORLD);
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(MPI_Get_accumulate(&add, 1, MPI_INT, &old[t], 1, MPI_INT, t, test_rank, 1,
                                     MPI_INT, MPI_SUM, win));
    }
    passive_settle(win);
    for (int t = 0; t < test_size; ++t) {
        CHECK(old[t] == t * 100 + test_rank, "get_accumulate from %d fetched %d, expected %d", t,
              old[t], t * 100 + test_rank);
        CHECK(w[t] == test_rank * 100 + t + t + 1, "get_accumulate: slot %d = %d", t, w[t]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    free(old);
    CHECK_MPI(MPI_Win_free(&win));
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/** MPI_Fetch_and_op: a counter on rank 0 that every rank increments ITER times (every value
 * fetched once); a swap chain on the last rank (MPI_REPLACE). */
static void test_fetch_and_op(void)
{
    enum { ITER = 200, SWAPS = 20 };
    int64_t *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &w, &win));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    w[0] = 0;
    w[1] = -1;
    publish_stores(win, MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_unlock_all(win));

    int64_t got[ITER], one = 1;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    for (int k = 0; k < ITER; ++k) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &got[k], MPI_INT64_T, 0, 0, MPI_SUM, win));
        if (k % 16 == 15) {
            CHECK_MPI(MPI_Win_flush(0, win));
        }
    }
    CHECK_MPI(MPI_Win_unlock(0, win));
    for (int k = 1; k < ITER; ++k) {
        /* One origin, one location: accumulate ordering makes its fetches increase. */
        CHECK(got[k] > got[k - 1], "fetch_and_op %d fetched %lld after %lld", k, (long long)got[k],
              (long long)got[k - 1]);
    }
    const int last = test_size - 1;
    int64_t swapped[SWAPS], mine[SWAPS];
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win));
    for (int k = 0; k < SWAPS; ++k) {
        mine[k] = ival(test_rank, 80, k);
        CHECK_MPI(MPI_Fetch_and_op(&mine[k], &swapped[k], MPI_INT64_T, last, 1, MPI_REPLACE, win));
    }
    CHECK_MPI(MPI_Win_unlock(last, win));

    int64_t *all = NULL, *allsw = NULL;
    if (0 == test_rank) {
        all = malloc((size_t)test_size * ITER * sizeof(int64_t));
        allsw = malloc(((size_t)test_size * SWAPS + 1) * sizeof(int64_t));
    }
    CHECK_MPI(MPI_Gather(got, ITER, MPI_INT64_T, all, ITER, MPI_INT64_T, 0, MPI_COMM_WORLD));
    CHECK_MPI(
        MPI_Gather(swapped, SWAPS, MPI_INT64_T, allsw, SWAPS, MPI_INT64_T, 0, MPI_COMM_WORLD));
    if (0 == test_rank) {
        int64_t fin[2] = {-5, -5};
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Fetch_and_op(NULL, &fin[0], MPI_INT64_T, 0, 0, MPI_NO_OP, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win));
        CHECK_MPI(MPI_Fetch_and_op(NULL, &fin[1], MPI_INT64_T, last, 1, MPI_NO_OP, win));
        CHECK_MPI(MPI_Win_unlock(last, win));
        CHECK(fin[0] == (int64_t)test_size * ITER, "fetch_and_op counter %lld, expected %lld",
              (long long)fin[0], (long long)test_size * ITER);
        qsort(all, (size_t)test_size * ITER, sizeof(int64_t), cmp_i64);
        for (int64_t k = 0; k < (int64_t)test_size * ITER; ++k) {
            CHECK(all[k] == k, "fetch_and_op: the fetched values sorted, [%lld] = %lld",
                  (long long)k, (long long)all[k]);
        }
        /* Each value written is fetched by the next swap or is the final one; -1 was there. */
        allsw[(size_t)test_size * SWAPS] = fin[1];
        qsort(allsw, (size_t)test_size * SWAPS + 1, sizeof(int64_t), cmp_i64);
        CHECK(allsw[0] == -1 && allsw[1] != -1,
              "swap chain: the initial value -1 not fetched exactly once");
        int n = 1;
        for (int r = 0; r < test_size; ++r) {
            for (int k = 0; k < SWAPS; ++k, ++n) {
                CHECK(allsw[n] == ival(r, 80, k), "swap chain: value %d is %lld, expected %d", n,
                      (long long)allsw[n], ival(r, 80, k));
            }
        }
        free(all);
        free(allsw);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/** A spin lock from MPI_Compare_and_swap on rank 0 guarding a get/put increment. */
static void test_cas_lock(void)
{
    enum { ITER = 40 };
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(
        MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    w[0] = 0; /* the lock word: 0 free, else 1 + the holder's rank */
    w[1] = 0; /* the counter */
    publish_stores(win, MPI_COMM_WORLD);
    const int me = test_rank + 1, zero = 0;
    long spins = 0;
    for (int k = 0; k < ITER; ++k) {
        int prev = -1;
        for (;;) {
            CHECK_MPI(MPI_Compare_and_swap(&me, &zero, &prev, MPI_INT, 0, 0, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            CHECK(prev >= 0 && prev <= test_size && prev != me, "CAS lock word %d", prev);
            if (0 == prev) {
                break;
            }
            ++spins;
        }
        int c = -1;
        CHECK_MPI(MPI_Get(&c, 1, MPI_INT, 0, 1, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        ++c;
        CHECK_MPI(MPI_Put(&c, 1, MPI_INT, 0, 1, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Compare_and_swap(&zero, &me, &prev, MPI_INT, 0, 0, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(prev == me, "CAS unlock: the lock word was %d, not ours (%d)", prev, me);
    }
    passive_settle(win);
    CHECK(test_rank != 0 || (w[1] == test_size * ITER && w[0] == 0),
          "CAS-locked counter %d (lock word %d), expected %d", w[1], w[0], test_size * ITER);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
}

/* ------------------------------------------------------------------ request-based, ordering */

/** MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate under lock_all(NOCHECK). */
static void test_requests(void)
{
    enum { M = 1000 };
    int *w = NULL;
    MPI_Win win;
    const MPI_Aint n = 3 * M + test_size;
    CHECK_MPI(MPI_Win_allocate(n * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &w, &win));
    int *src = malloc(M * sizeof(int)), *dst = malloc(M * sizeof(int));
    int *acc = malloc(M * sizeof(int)), *fetched = malloc((size_t)test_size * sizeof(int));
    const int nreq = 2 + 2 * test_size;
    MPI_Request *req = malloc((size_t)nreq * sizeof(MPI_Request));
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (int i = 0; i < M; ++i) {
        w[i] = -1;                         /* the left neighbour's Rput */
        w[M + i] = ival(test_rank, 90, i); /* the right neighbour's Rget */
        w[2 * M + i] = i;                  /* everyone's Raccumulate */
        src[i] = ival(test_rank, 91, i);
        dst[i] = -1;
        acc[i] = test_rank * 7 + i % 13;
    }
    for (int r = 0; r < test_size; ++r) {
        w[3 * M + r] = test_rank * 10 + r; /* rank r's Rget_accumulate */
    }
    publish_stores(win, MPI_COMM_WORLD);
    const int one = 1;
    CHECK_MPI(MPI_Rput(src, M, MPI_INT, right_rank, 0, M, MPI_INT, win, &req[0]));
    CHECK_MPI(MPI_Rget(dst, M, MPI_INT, left_rank, M, M, MPI_INT, win, &req[1]));
    for (int t = 0; t < test_size; ++t) {
        CHECK_MPI(
            MPI_Raccumulate(acc, M, MPI_INT, t, 2 * M, M, MPI_INT, MPI_SUM, win, &req[2 + t]));
        fetched[t] = -1;
        CHECK_MPI(MPI_Rget_accumulate(&one, 1, MPI_INT, &fetched[t], 1, MPI_INT, t,
                                      3 * M + test_rank, 1, MPI_INT, MPI_SUM, win,
                                      &req[2 + test_size + t]));
    }
    CHECK_MPI(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    for (int i = 0; i < M; ++i) {
        CHECK(dst[i] == ival(left_rank, 90, i), "MPI_Rget [%d] = %d", i, dst[i]);
    }
    for (int t = 0; t < test_size; ++t) {
        CHECK(fetched[t] == t * 10 + test_rank, "MPI_Rget_accumulate from %d fetched %d", t,
              fetched[t]);
    }
    passive_settle(win);
    int accsum = 0;
    for (int r = 0; r < test_size; ++r) {
        accsum += r * 7;
    }
    for (int i = 0; i < M; ++i) {
        CHECK(w[i] == ival(left_rank, 91, i), "MPI_Rput [%d] = %d", i, w[i]);
        const int want = i + accsum + test_size * (i % 13);
        CHECK(w[2 * M + i] == want, "MPI_Raccumulate [%d] = %d, expected %d", i, w[2 * M + i],
              want);
    }
    for (int r = 0; r < test_size; ++r) {
        CHECK(w[3 * M + r] == test_rank * 10 + r + 1, "MPI_Rget_accumulate slot %d = %d", r,
              w[3 * M + r]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    free(src);
    free(dst);
    free(acc);
    free(fetched);
    free(req);
    CHECK_MPI(MPI_Win_free(&win));
}

/** Accumulate ordering (the default, rar,raw,war,waw) of one origin on one location:
 * MPI_REPLACE then MPI_Get_accumulate(MPI_NO_OP) sees that value; the last of K wins. */
static void test_ordering(void)
{
    enum { K = 40, L = 256 };
    const MPI_Aint slot = 1 + L;
    int *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(test_size * slot * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &w, &win));
    int *vals = malloc(K * sizeof(int)), *arr = malloc((size_t)K * L * sizeof(int));
    int *seen = malloc((size_t)test_size * K * sizeof(int));
    for (int k = 0; k < K; ++k) {
        vals[k] = ival(test_rank, 92, k);
        for (int i = 0; i < L; ++i) {
            arr[k * L + i] = ival(test_rank, k, i);
        }
    }
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (MPI_Aint i = 0; i < test_size * slot; ++i) {
        w[i] = -1;
    }
    publish_stores(win, MPI_COMM_WORLD);
    for (int t = 0; t < test_size; ++t) {
        const MPI_Aint d = test_rank * slot;
        for (int k = 0; k < K; ++k) {
            CHECK_MPI(MPI_Accumulate(&vals[k], 1, MPI_INT, t, d, 1, MPI_INT, MPI_REPLACE, win));
            CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT, &seen[t * K + k], 1, MPI_INT, t, d, 1,
                                         MPI_INT, MPI_NO_OP, win));
            CHECK_MPI(
                MPI_Accumulate(arr + k * L, L, MPI_INT, t, d + 1, L, MPI_INT, MPI_REPLACE, win));
        }
    }
    passive_settle(win);
    for (int t = 0; t < test_size; ++t) {
        for (int k = 0; k < K; ++k) {
            CHECK(seen[t * K + k] == vals[k],
                  "ordering: get_accumulate after replace %d on rank %d saw %d", k, t,
                  seen[t * K + k]);
        }
    }
    for (int r = 0; r < test_size; ++r) {
        CHECK(w[r * slot] == ival(r, 92, K - 1), "ordering: slot %d = %d, not the last value", r,
              w[r * slot]);
        for (int i = 0; i < L; ++i) {
            CHECK(w[r * slot + 1 + i] == ival(r, K - 1, i),
                  "ordering: array of %d [%d] = %d, not the last replace", r, i,
                  w[r * slot + 1 + i]);
        }
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    free(vals);
    free(arr);
    free(seen);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ------------------------------------------------------------------ errors */

static void expect_error(int rc, int expected_class, const char *what)
{
    CHECK(rc != MPI_SUCCESS, "%s returned MPI_SUCCESS", what);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    if (cls != expected_class && 0 == test_rank) {
        char s[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, s, &n);
        printf("    note: %s failed with error class %d (%s), not the one expected (%d)\n", what,
               cls, s, expected_class);
    }
}

/** With MPI_ERRORS_RETURN: out-of-range and out-of-epoch puts fail; the window still works. */
static void test_errors(void)
{
    enum { W = 64 };
    unsigned char *w = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(W, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    unsigned char out[16];
    test_fill(out, sizeof out, test_rank, 300);
    memset(w, 0xee, W);

    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right_rank, 0, win));
    expect_error(MPI_Put(out, 8, MPI_BYTE, right_rank, W - 4, 8, MPI_BYTE, win), MPI_ERR_RMA_RANGE,
                 "a put across the end of the window");
    expect_error(MPI_Put(out, 1, MPI_BYTE, right_rank, W + 4096, 1, MPI_BYTE, win),
                 MPI_ERR_RMA_RANGE, "a put 4 KiB beyond the window");
    CHECK_MPI(MPI_Win_unlock(right_rank, win));
    expect_error(MPI_Put(out, 1, MPI_BYTE, right_rank, 0, 1, MPI_BYTE, win), MPI_ERR_RMA_SYNC,
                 "a put outside an epoch");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* The window still works: a put of 16 bytes under fence. */
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, 16, MPI_BYTE, right_rank, 8, 16, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(test_verify(w + 8, 16, left_rank, 300) < 0, "put after the errors: wrong data");
    CHECK(w[7] == 0xee && w[24] == 0xee, "put after the errors: wrote outside its bytes");
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    right_rank = (test_rank + 1) % test_size;
    left_rank = (test_rank + test_size - 1) % test_size;
    const double t0 = test_now();

    test_section("MPI_Win_create (size 0 on odd ranks)");
    test_win_create();
    test_section("MPI_Win_allocate, disp_unit 8 and 12");
    test_win_allocate();
    test_section("MPI_Win_allocate_shared");
    test_win_shared();
    test_section("MPI_Win_create_dynamic, attach, detach");
    test_win_dynamic();
    test_section("fence with assertions");
    test_fence();
    test_section("post/start/complete/wait, MPI_Win_test, MPI_MODE_NOCHECK");
    test_pscw();
    test_section("lock exclusive and shared");
    test_locks();
    test_section("lock_all, flush, flush_local, flush_all, flush_local_all, MPI_Win_sync");
    test_flushes();
    test_section("put and get of 0 B to 1 MiB");
    test_sizes();
    test_section("derived datatypes");
    test_datatypes();
    test_section("accumulate: every op on every type");
    test_acc_ops();
    test_section("MPI_Get_accumulate");
    test_get_accumulate();
    test_section("MPI_Fetch_and_op");
    test_fetch_and_op();
    test_section("MPI_Compare_and_swap spin lock");
    test_cas_lock();
    test_section("request-based operations");
    test_requests();
    test_section("accumulate ordering");
    test_ordering();
    test_section("errors with MPI_ERRORS_RETURN");
    test_errors();

    if (0 == test_rank) {
        printf("  %.2f s\n", test_now() - t0);
    }
    return test_finish("mpi_osc");
}
