/*
 * mpi_coll.c: Open MPI's own collectives running over the MTL, results checked.
 *
 * Barrier, bcast, allreduce, alltoall(v), reduce, allgather, gather, scatter,
 * reduce_scatter_block, scan, and the nonblocking ones (whose internal tags go
 * down to -INT_MAX/2), from a few bytes to several MiB (Open MPI switches
 * algorithms by size), on MPI_COMM_WORLD, a split communicator with reversed
 * ranks, a dup, and halves (even and odd ranks); and an intercommunicator
 * between the halves (which coll weft declines).
 */
#include "mpi_test.h"

static void test_barrier(MPI_Comm comm)
{
    for (int i = 0; i < 100; ++i) {
        CHECK_MPI(MPI_Barrier(comm));
    }
    /* A barrier really waits: every rank's counter is published after it. */
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int round = 0; round < 10; ++round) {
        int mine = round * 100 + rank, *all = malloc((size_t)size * sizeof(int));
        CHECK_MPI(MPI_Barrier(comm));
        CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm));
        for (int r = 0; r < size; ++r) {
            CHECK(all[r] == round * 100 + r, "allgather after barrier round %d: [%d] = %d", round,
                  r, all[r]);
        }
        free(all);
    }
}

static void test_bcast(MPI_Comm comm)
{
    static const int counts[] = {1, 7, 1000, 100000, 1 << 20}; /* ints: up to 4 MiB */
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *buf = malloc((size_t)(1 << 20) * sizeof(int));
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        for (int root = 0; root < size; ++root) {
            const int n = counts[k];
            for (int i = 0; i < n; ++i) {
                buf[i] = rank == root ? (int)(i * 31 + root + k) : -1;
            }
            CHECK_MPI(MPI_Bcast(buf, n, MPI_INT, root, comm));
            for (int i = 0; i < n; ++i) {
                if (buf[i] != (int)(i * 31 + root + k)) {
                    CHECK(0, "bcast of %d ints from %d: [%d] = %d", n, root, i, buf[i]);
                }
            }
        }
    }
    free(buf);
}

static void test_allreduce(MPI_Comm comm)
{
    static const int counts[] = {1, 8, 1000, 300000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long *in = malloc(300000 * sizeof(long)), *out = malloc(300000 * sizeof(long));
    double *din = malloc(300000 * sizeof(double)), *dout = malloc(300000 * sizeof(double));
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        const int n = counts[k];
        for (int i = 0; i < n; ++i) {
            in[i] = (long)(rank + 1) * (i + 1);
            din[i] = 0.5 * rank + i;
        }
        CHECK_MPI(MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, comm));
        CHECK_MPI(MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_MAX, comm));
        const long tri = (long)size * (size + 1) / 2;
        for (int i = 0; i < n; ++i) {
            if (out[i] != tri * (i + 1) || dout[i] != 0.5 * (size - 1) + i) {
                CHECK(0, "allreduce of %d: [%d] = %ld / %g", n, i, out[i], dout[i]);
            }
        }
        /* In place, and a reduce to each root. */
        for (int i = 0; i < n; ++i) {
            out[i] = rank;
        }
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_LONG, MPI_MIN, comm));
        for (int i = 0; i < n; ++i) {
            if (out[i] != 0) {
                CHECK(0, "in-place allreduce MIN of %d: [%d] = %ld", n, i, out[i]);
            }
        }
        for (int root = 0; root < size; ++root) {
            CHECK_MPI(MPI_Reduce(in, out, n, MPI_LONG, MPI_SUM, root, comm));
            if (rank == root) {
                for (int i = 0; i < n; ++i) {
                    if (out[i] != tri * (i + 1)) {
                        CHECK(0, "reduce of %d to %d: [%d] = %ld", n, root, i, out[i]);
                    }
                }
            }
        }
    }
    free(in);
    free(out);
    free(din);
    free(dout);
}

static void test_alltoall(MPI_Comm comm)
{
    static const int counts[] = {1, 100, 16384}; /* ints per pair: up to 64 KiB */
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        const int n = counts[k];
        int *s = malloc((size_t)n * size * sizeof(int)),
            *r = malloc((size_t)n * size * sizeof(int));
        for (int p = 0; p < size; ++p) {
            for (int i = 0; i < n; ++i) {
                s[p * n + i] = rank * 1000000 + p * 10000 + i % 10000;
            }
        }
        CHECK_MPI(MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, comm));
        for (int p = 0; p < size; ++p) {
            for (int i = 0; i < n; ++i) {
                if (r[p * n + i] != p * 1000000 + rank * 10000 + i % 10000) {
                    CHECK(0, "alltoall of %d: from %d [%d] = %d", n, p, i, r[p * n + i]);
                }
            }
        }
        free(s);
        free(r);
    }
    /* alltoallv: rank p sends p + q + 1 ints to rank q. */
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int stot = 0, rtot = 0;
    for (int q = 0; q < size; ++q) {
        sc[q] = rank + q + 1;
        sd[q] = stot;
        stot += sc[q];
        rc[q] = q + rank + 1;
        rd[q] = rtot;
        rtot += rc[q];
    }
    int *s = malloc(stot * sizeof(int)), *r = malloc(rtot * sizeof(int));
    for (int q = 0; q < size; ++q) {
        for (int i = 0; i < sc[q]; ++i) {
            s[sd[q] + i] = rank * 100 + q * 10 + i;
        }
    }
    CHECK_MPI(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
    for (int q = 0; q < size; ++q) {
        for (int i = 0; i < rc[q]; ++i) {
            CHECK(r[rd[q] + i] == q * 100 + rank * 10 + i, "alltoallv from %d [%d] = %d", q, i,
                  r[rd[q] + i]);
        }
    }
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

static void test_gather_scatter_scan(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 5000 };
    int *mine = malloc(N * sizeof(int)), *all = malloc((size_t)N * size * sizeof(int));
    for (int i = 0; i < N; ++i) {
        mine[i] = rank * N + i;
    }
    for (int root = 0; root < size; ++root) {
        CHECK_MPI(MPI_Gather(mine, N, MPI_INT, all, N, MPI_INT, root, comm));
        if (rank == root) {
            for (int i = 0; i < N * size; ++i) {
                CHECK(all[i] == i, "gather to %d: [%d] = %d", root, i, all[i]);
            }
        }
        if (rank == root) {
            for (int i = 0; i < N * size; ++i) {
                all[i] = -i;
            }
        }
        CHECK_MPI(MPI_Scatter(all, N, MPI_INT, mine, N, MPI_INT, root, comm));
        for (int i = 0; i < N; ++i) {
            CHECK(mine[i] == -(rank * N + i), "scatter from %d: [%d] = %d", root, i, mine[i]);
        }
        for (int i = 0; i < N; ++i) {
            mine[i] = rank * N + i;
        }
    }
    CHECK_MPI(MPI_Allgather(mine, N, MPI_INT, all, N, MPI_INT, comm));
    for (int i = 0; i < N * size; ++i) {
        CHECK(all[i] == i, "allgather [%d] = %d", i, all[i]);
    }
    /* reduce_scatter_block: each rank gets the sum of its block. */
    for (int i = 0; i < N * size; ++i) {
        all[i] = i + rank;
    }
    CHECK_MPI(MPI_Reduce_scatter_block(all, mine, N, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < N; ++i) {
        const int want = size * (rank * N + i) + size * (size - 1) / 2;
        CHECK(mine[i] == want, "reduce_scatter_block [%d] = %d, expected %d", i, mine[i], want);
    }
    int x = rank + 1, pre = 0;
    CHECK_MPI(MPI_Scan(&x, &pre, 1, MPI_INT, MPI_SUM, comm));
    CHECK(pre == (rank + 1) * (rank + 2) / 2, "scan = %d", pre);
    free(mine);
    free(all);
}

static void test_nonblocking(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 100000 };
    int *b = malloc(N * sizeof(int)), *a = malloc(N * sizeof(int)), *r = malloc(N * sizeof(int));
    int *s2 = malloc((size_t)size * 64 * sizeof(int)),
        *r2 = malloc((size_t)size * 64 * sizeof(int));
    for (int round = 0; round < 20; ++round) {
        MPI_Request reqs[4];
        for (int i = 0; i < N; ++i) {
            b[i] = rank == 0 ? i + round : -1;
            a[i] = rank + round;
        }
        for (int i = 0; i < size * 64; ++i) {
            s2[i] = rank * 1000 + i / 64;
        }
        CHECK_MPI(MPI_Ibcast(b, N, MPI_INT, 0, comm, &reqs[0]));
        CHECK_MPI(MPI_Iallreduce(a, r, N, MPI_INT, MPI_SUM, comm, &reqs[1]));
        CHECK_MPI(MPI_Ialltoall(s2, 64, MPI_INT, r2, 64, MPI_INT, comm, &reqs[2]));
        CHECK_MPI(MPI_Ibarrier(comm, &reqs[3]));
        CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
        const int sum = size * (size - 1) / 2 + size * round;
        for (int i = 0; i < N; ++i) {
            if (b[i] != i + round || r[i] != sum) {
                CHECK(0, "round %d: ibcast [%d] = %d, iallreduce = %d", round, i, b[i], r[i]);
            }
        }
        for (int p = 0; p < size; ++p) {
            for (int i = 0; i < 64; ++i) {
                CHECK(r2[p * 64 + i] == p * 1000 + rank, "ialltoall from %d: %d", p,
                      r2[p * 64 + i]);
            }
        }
    }
    free(a);
    free(b);
    free(r);
    free(s2);
    free(r2);
}

/* Non-contiguous datatypes against contiguous ones (same type signature): a
 * vector of every other int on even ranks, plain ints on odd ranks, through
 * bcast, allgather, gather, scatter and alltoall (coll weft packs them). */
static void test_derived(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int k = 5; /* ints per block */
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(k, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    MPI_Datatype blk;
    CHECK_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * k * sizeof(int)), &blk));
    CHECK_MPI(MPI_Type_commit(&blk));
    const int strided = rank % 2 == 0;
    /* A buffer of n blocks, each k values: strided ranks keep value j of block b
     * at [b * 2k + 2j], the others at [b * k + j]. */
    int *buf = calloc((size_t)(size + 1) * 2 * k, sizeof(int));
    int *two = calloc((size_t)(size + 1) * 2 * k, sizeof(int));
#define AT(p, b, j) ((p)[strided ? (b)*2 * k + 2 * (j) : (b)*k + (j)])
#define TYPE (strided ? blk : MPI_INT)
#define N(blocks) (strided ? (blocks) : (blocks)*k)
    for (int root = 0; root < size; ++root) {
        for (int j = 0; j < k; ++j) {
            AT(buf, 0, j) = rank == root ? 1000 * root + j : -1;
        }
        CHECK_MPI(MPI_Bcast(buf, N(1), TYPE, root, comm));
        for (int j = 0; j < k; ++j) {
            CHECK(AT(buf, 0, j) == 1000 * root + j, "derived bcast root %d: %d", root,
                  AT(buf, 0, j));
        }
        /* gather: every rank's block at the root */
        for (int j = 0; j < k; ++j) {
            AT(two, 0, j) = 100 * rank + j;
        }
        memset(buf, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
        CHECK_MPI(MPI_Gather(two, N(1), TYPE, buf, N(1), TYPE, root, comm));
        if (rank == root) {
            for (int b = 0; b < size; ++b) {
                for (int j = 0; j < k; ++j) {
                    CHECK(AT(buf, b, j) == 100 * b + j, "derived gather: block %d value %d", b,
                          AT(buf, b, j));
                }
            }
        }
        /* scatter: block b of the root's buffer to rank b */
        for (int b = 0; b < size; ++b) {
            for (int j = 0; j < k; ++j) {
                AT(buf, b, j) = rank == root ? 10 * b + j + 7 : -1;
            }
        }
        memset(two, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
        CHECK_MPI(MPI_Scatter(buf, N(1), TYPE, two, N(1), TYPE, root, comm));
        for (int j = 0; j < k; ++j) {
            CHECK(AT(two, 0, j) == 10 * rank + j + 7, "derived scatter: %d", AT(two, 0, j));
        }
    }
    /* allgather, and alltoall (block b of rank r's buffer goes to rank b) */
    for (int j = 0; j < k; ++j) {
        AT(two, 0, j) = 31 * rank + j;
    }
    CHECK_MPI(MPI_Allgather(two, N(1), TYPE, buf, N(1), TYPE, comm));
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            CHECK(AT(buf, b, j) == 31 * b + j, "derived allgather: block %d", b);
        }
    }
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            AT(buf, b, j) = 1000 * rank + 10 * b + j;
        }
    }
    CHECK_MPI(MPI_Alltoall(buf, N(1), TYPE, two, N(1), TYPE, comm));
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            CHECK(AT(two, b, j) == 1000 * b + 10 * rank + j, "derived alltoall: block %d", b);
        }
    }
    /* The v forms with the same layouts: one block per rank, displacements in
     * units of each side's own type (a block for strided ranks, ints for the
     * others). */
    int *cnt = malloc((size_t)size * sizeof(int));
    int *dsp = malloc((size_t)size * sizeof(int));
    for (int b = 0; b < size; ++b) {
        cnt[b] = N(1);
        dsp[b] = strided ? b : b * k;
    }
    for (int j = 0; j < k; ++j) {
        AT(two, 0, j) = 17 * rank + j;
    }
    memset(buf, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
    CHECK_MPI(MPI_Allgatherv(two, N(1), TYPE, buf, cnt, dsp, TYPE, comm));
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            CHECK(AT(buf, b, j) == 17 * b + j, "derived allgatherv: block %d", b);
        }
    }
    const int root = size - 1;
    memset(buf, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
    CHECK_MPI(MPI_Gatherv(two, N(1), TYPE, buf, cnt, dsp, TYPE, root, comm));
    if (rank == root) {
        for (int b = 0; b < size; ++b) {
            for (int j = 0; j < k; ++j) {
                CHECK(AT(buf, b, j) == 17 * b + j, "derived gatherv: block %d", b);
            }
        }
    }
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            AT(buf, b, j) = rank == root ? 5 * b + j + 3 : -1;
        }
    }
    memset(two, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
    CHECK_MPI(MPI_Scatterv(buf, cnt, dsp, TYPE, two, N(1), TYPE, root, comm));
    for (int j = 0; j < k; ++j) {
        CHECK(AT(two, 0, j) == 5 * rank + j + 3, "derived scatterv: %d", AT(two, 0, j));
    }
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            AT(buf, b, j) = 1000 * rank + 10 * b + j + 1;
        }
    }
    memset(two, 0, (size_t)(size + 1) * 2 * k * sizeof(int));
    CHECK_MPI(MPI_Alltoallv(buf, cnt, dsp, TYPE, two, cnt, dsp, TYPE, comm));
    for (int b = 0; b < size; ++b) {
        for (int j = 0; j < k; ++j) {
            CHECK(AT(two, b, j) == 1000 * b + 10 * rank + j + 1, "derived alltoallv: block %d", b);
        }
    }
    free(cnt);
    free(dsp);
#undef AT
#undef TYPE
#undef N
    free(buf);
    free(two);
    MPI_Type_free(&blk);
    MPI_Type_free(&vec);
}

/* MINLOC and MAXLOC on the pair types (MPI_DOUBLE_INT has padding: size 12,
 * extent 16), and a passed-on op (MPI_PROD on MPI_INT is weft's; a user op is
 * the previous module's). */
static void user_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; ++i) {
        int *a = (int *)in + i, *b = (int *)inout + i;
        if (*a > *b) {
            *b = *a;
        }
    }
}

static void test_loc(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    struct {
        double v;
        int i;
    } din[3], dout[3];
    struct {
        int v;
        int i;
    } iin[3], iout[3];
    for (int j = 0; j < 3; ++j) {
        din[j].v = (double)((rank * 7 + j * 3) % 5); /* ties between ranks */
        din[j].i = rank;
        iin[j].v = (rank * 5 + j) % 3;
        iin[j].i = rank;
    }
    CHECK_MPI(MPI_Allreduce(din, dout, 3, MPI_DOUBLE_INT, MPI_MINLOC, comm));
    CHECK_MPI(MPI_Allreduce(iin, iout, 3, MPI_2INT, MPI_MAXLOC, comm));
    for (int j = 0; j < 3; ++j) {
        double best = 1e9;
        int at = -1, ibest = -1, iat = -1;
        for (int r = 0; r < size; ++r) {
            const double v = (double)((r * 7 + j * 3) % 5);
            if (v < best) {
                best = v;
                at = r;
            }
            const int w = (r * 5 + j) % 3;
            if (w > ibest) {
                ibest = w;
                iat = r;
            }
        }
        CHECK(dout[j].v == best && dout[j].i == at, "MINLOC DOUBLE_INT %d: %g at %d, want %g at %d",
              j, dout[j].v, dout[j].i, best, at);
        CHECK(iout[j].v == ibest && iout[j].i == iat, "MAXLOC 2INT %d: %d at %d, want %d at %d", j,
              iout[j].v, iout[j].i, ibest, iat);
    }
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(user_max, 1, &op));
    int mine = rank * 3 % 7, got = -1, want = 0;
    for (int r = 0; r < size; ++r) {
        want = r * 3 % 7 > want ? r * 3 % 7 : want;
    }
    CHECK_MPI(MPI_Allreduce(&mine, &got, 1, MPI_INT, op, comm));
    CHECK(got == want, "user op: %d, want %d", got, want);
    MPI_Op_free(&op);
}

/* MPI_BOTTOM with a datatype of absolute addresses (one contiguous block, so
 * coll weft moves it as bytes from the datatype's lower bound): bcast,
 * allgather from it, scatter into it. */
static void test_bottom(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { k = 7 };
    int data[k];
    int *all = calloc((size_t)size * k, sizeof(int));
    MPI_Aint addr;
    CHECK_MPI(MPI_Get_address(data, &addr));
    const int len = k;
    MPI_Datatype abs;
    CHECK_MPI(MPI_Type_create_hindexed(1, &len, &addr, MPI_INT, &abs));
    CHECK_MPI(MPI_Type_commit(&abs));
    for (int root = 0; root < size; ++root) {
        for (int j = 0; j < k; ++j) {
            data[j] = rank == root ? 31 * root + j : -1;
        }
        CHECK_MPI(MPI_Bcast(MPI_BOTTOM, 1, abs, root, comm));
        for (int j = 0; j < k; ++j) {
            CHECK(data[j] == 31 * root + j, "bcast from MPI_BOTTOM, root %d: [%d] = %d", root, j,
                  data[j]);
        }
    }
    for (int j = 0; j < k; ++j) {
        data[j] = 100 * rank + j;
    }
    CHECK_MPI(MPI_Allgather(MPI_BOTTOM, 1, abs, all, k, MPI_INT, comm));
    for (int r = 0; r < size; ++r) {
        for (int j = 0; j < k; ++j) {
            CHECK(all[r * k + j] == 100 * r + j, "allgather from MPI_BOTTOM: [%d][%d] = %d", r, j,
                  all[r * k + j]);
        }
    }
    /* scatter into MPI_BOTTOM: block r of the root's plain buffer to rank r */
    for (int r = 0; r < size; ++r) {
        for (int j = 0; j < k; ++j) {
            all[r * k + j] = rank == 0 ? 7 * r + j : -1;
        }
    }
    CHECK_MPI(MPI_Scatter(all, k, MPI_INT, MPI_BOTTOM, 1, abs, 0, comm));
    for (int j = 0; j < k; ++j) {
        CHECK(data[j] == 7 * rank + j, "scatter into MPI_BOTTOM: [%d] = %d", j, data[j]);
    }
    MPI_Type_free(&abs);
    free(all);
}

static void run_all(MPI_Comm comm, const char *name)
{
    char title[128];
    snprintf(title, sizeof(title), "barrier (%s)", name);
    test_section(title);
    test_barrier(comm);
    snprintf(title, sizeof(title), "bcast (%s)", name);
    test_section(title);
    test_bcast(comm);
    snprintf(title, sizeof(title), "allreduce, reduce (%s)", name);
    test_section(title);
    test_allreduce(comm);
    snprintf(title, sizeof(title), "alltoall, alltoallv (%s)", name);
    test_section(title);
    test_alltoall(comm);
    snprintf(title, sizeof(title), "gather, scatter, allgather, reduce_scatter, scan (%s)", name);
    test_section(title);
    test_gather_scatter_scan(comm);
    snprintf(title, sizeof(title), "nonblocking collectives (%s)", name);
    test_section(title);
    test_nonblocking(comm);
    snprintf(title, sizeof(title), "MINLOC, MAXLOC, a user op (%s)", name);
    test_section(title);
    test_loc(comm);
    snprintf(title, sizeof(title), "strided datatypes against contiguous ones (%s)", name);
    test_section(title);
    test_derived(comm);
    snprintf(title, sizeof(title), "MPI_BOTTOM with absolute addresses (%s)", name);
    test_section(title);
    test_bottom(comm);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    run_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm rev;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, test_size - test_rank, &rev));
    run_all(rev, "reversed ranks");
    CHECK_MPI(MPI_Comm_free(&rev));
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    run_all(dup, "dup of MPI_COMM_WORLD");
    /* Halves: even and odd ranks (sizes differ on odd counts), both at once. */
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank % 2, test_rank, &half));
    run_all(half, test_rank % 2 == 0 ? "even ranks" : "odd ranks");
    /* An intercommunicator between the halves: coll weft declines it and
     * another component runs its collectives. */
    if (test_size >= 2) {
        test_section("intercommunicator (left to other components)");
        MPI_Comm inter;
        CHECK_MPI(MPI_Intercomm_create(half, 0, dup, test_rank % 2 == 0 ? 1 : 0, 77, &inter));
        int remote = 0;
        CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
        CHECK_MPI(MPI_Barrier(inter));
        /* Intercommunicator allreduce: each group gets the sum of the other's. */
        int mine = test_rank + 1;
        int got = -1;
        CHECK_MPI(MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, inter));
        int want = 0;
        for (int r = 0; r < test_size; ++r) {
            want += r % 2 != test_rank % 2 ? r + 1 : 0;
        }
        CHECK(got == want, "intercommunicator allreduce: %d, want %d", got, want);
        CHECK_MPI(MPI_Comm_free(&inter));
    }
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&dup));
    return test_finish("mpi_coll");
}
