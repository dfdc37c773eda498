/*
 * mpi_many.c: many outstanding nonblocking operations, and large messages.
 *
 * - 10,000 MPI_Irecv posted, then 10,000 MPI_Isend, completed with MPI_Waitall
 *   (every rank with its ring neighbours);
 * - 10,000 MPI_Isend to a rank that posts no receive until after a barrier:
 *   the sends must not block the barrier (MPI_Isend never waits for the
 *   receiver), and every message arrives intact and in order;
 * - 2,000 small MPI_Isend beyond weft's credit window, then messages with
 *   later tags that the receiver takes first;
 * - all ranks send to rank 0, which receives with MPI_ANY_SOURCE;
 * - a 64 MiB message each way (blocking, nonblocking, synchronous).
 */
#include "mpi_test.h"

enum { N = 10000 };

static void test_recv_first(void)
{
    const int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int));
    MPI_Request *reqs = malloc(2 * N * sizeof(MPI_Request));
    for (int i = 0; i < N; ++i) {
        in[i] = -1;
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, prev, i % 100, MPI_COMM_WORLD, &reqs[i]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) {
        out[i] = test_rank * N + i;
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, next, i % 100, MPI_COMM_WORLD, &reqs[N + i]));
    }
    CHECK_MPI(MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; ++i) {
        CHECK(in[i] == prev * N + i, "receive %d got %d, expected %d", i, in[i], prev * N + i);
    }
    free(in);
    free(out);
    free(reqs);
}

static void test_send_first(void)
{
    /* Messages of 64 bytes: eager. Rank 0 sends, rank 1 receives late. */
    enum { LEN = 64 };
    unsigned char *buf = malloc((size_t)N * LEN);
    MPI_Request *reqs = malloc(N * sizeof(MPI_Request));
    if (0 == test_rank) {
        for (int i = 0; i < N; ++i) {
            test_fill(buf + (size_t)i * LEN, LEN, 0, i);
            CHECK_MPI(
                MPI_Isend(buf + (size_t)i * LEN, LEN, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &reqs[i]));
        }
    }
    /* Nothing of the above is received yet: the barrier must still complete. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == test_rank) {
        for (int i = 0; i < N; ++i) {
            CHECK_MPI(
                MPI_Irecv(buf + (size_t)i * LEN, LEN, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < N; ++i) {
            long bad = test_verify(buf + (size_t)i * LEN, LEN, 0, i);
            CHECK(bad < 0, "late receive %d: byte %ld wrong (out of order or corrupt)", i, bad);
        }
    } else if (0 == test_rank) {
        CHECK_MPI(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE));
    }
    free(buf);
    free(reqs);
}

/* Rank 0 sends 2,000 small messages with one tag, then one (a synchronous
 * send, then a standard one) with another tag, and waits for them all; rank 1
 * receives the later tags first, and only then the 2,000. weft's credits (a
 * window of 256) come back only as rank 1 matches messages, so rank 0 runs out
 * of them long before the last messages: those must still go (as rendezvous
 * headers), and they must not wait behind the refused ones. */
static void test_later_tag_first(void)
{
    enum { M = 2000, LEN = 48 };
    unsigned char *buf = malloc((size_t)(M + 2) * LEN);
    MPI_Request *reqs = malloc((M + 2) * sizeof(MPI_Request));
    if (0 == test_rank) {
        for (int i = 0; i < M + 2; ++i) {
            test_fill(buf + (size_t)i * LEN, LEN, 0, i);
        }
        for (int i = 0; i < M; ++i) {
            CHECK_MPI(
                MPI_Isend(buf + (size_t)i * LEN, LEN, MPI_BYTE, 1, 21, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(
            MPI_Issend(buf + (size_t)M * LEN, LEN, MPI_BYTE, 1, 22, MPI_COMM_WORLD, &reqs[M]));
        CHECK_MPI(MPI_Isend(buf + (size_t)(M + 1) * LEN, LEN, MPI_BYTE, 1, 23, MPI_COMM_WORLD,
                            &reqs[M + 1]));
        CHECK_MPI(MPI_Waitall(M + 2, reqs, MPI_STATUSES_IGNORE));
    } else if (1 == test_rank) {
        CHECK_MPI(MPI_Recv(buf + (size_t)(M + 1) * LEN, LEN, MPI_BYTE, 0, 23, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Recv(buf + (size_t)M * LEN, LEN, MPI_BYTE, 0, 22, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int i = 0; i < M; ++i) {
            CHECK_MPI(MPI_Recv(buf + (size_t)i * LEN, LEN, MPI_BYTE, 0, 21, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < M + 2; ++i) {
            long bad = test_verify(buf + (size_t)i * LEN, LEN, 0, i);
            CHECK(bad < 0, "message %d: byte %ld wrong (out of order or corrupt)", i, bad);
        }
    }
    free(buf);
    free(reqs);
}

static void test_fan_in(void)
{
    const int per = N / (test_size > 1 ? test_size - 1 : 1);
    if (0 == test_rank) {
        const int total = per * (test_size - 1);
        int(*in)[2] = malloc((size_t)total * sizeof(*in));
        MPI_Request *reqs = malloc((size_t)total * sizeof(MPI_Request));
        int *next = calloc((size_t)test_size, sizeof(int));
        for (int i = 0; i < total; ++i) {
            CHECK_MPI(MPI_Irecv(in[i], 2, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(total, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < total; ++i) {
            const int src = in[i][0];
            CHECK(src > 0 && src < test_size, "fan-in message from %d", src);
            CHECK(in[i][1] == next[src], "fan-in from %d: message %d where %d was due", src,
                  in[i][1], next[src]);
            ++next[src];
        }
        free(in);
        free(reqs);
        free(next);
    } else {
        int(*out)[2] = malloc((size_t)per * sizeof(*out));
        MPI_Request *reqs = malloc((size_t)per * sizeof(MPI_Request));
        for (int i = 0; i < per; ++i) {
            out[i][0] = test_rank;
            out[i][1] = i;
            CHECK_MPI(MPI_Isend(out[i], 2, MPI_INT, 0, 9, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(per, reqs, MPI_STATUSES_IGNORE));
        free(out);
        free(reqs);
    }
}

static void test_64mib(void)
{
    const size_t len = (size_t)64 << 20;
    unsigned char *s = malloc(len), *r = malloc(len);
    CHECK(s != NULL && r != NULL, "out of memory for 64 MiB buffers");
    const int peer = test_rank ^ 1;
    if (peer >= test_size) {
        free(s);
        free(r);
        return;
    }
    test_fill(s, len, test_rank, 64);
    MPI_Status st;
    int count = -1;
    /* Blocking, one way then the other. */
    if (0 == test_rank % 2) {
        CHECK_MPI(MPI_Send(s, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(r, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st));
    } else {
        CHECK_MPI(MPI_Recv(r, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Send(s, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == (int)len, "64 MiB receive count %d", count);
    long bad = test_verify(r, len, peer, 64);
    CHECK(bad < 0, "64 MiB blocking message: byte %ld wrong", bad);

    /* Both ways at once, nonblocking; then synchronous, receive posted late. */
    memset(r, 0, len);
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Irecv(r, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Isend(s, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    bad = test_verify(r, len, peer, 64);
    CHECK(bad < 0, "64 MiB nonblocking message: byte %ld wrong", bad);

    memset(r, 0, len);
    CHECK_MPI(MPI_Issend(s, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &reqs[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Recv(r, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
    bad = test_verify(r, len, peer, 64);
    CHECK(bad < 0, "64 MiB synchronous unexpected message: byte %ld wrong", bad);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK(test_size >= 2, "needs at least 2 ranks");
    test_section("10,000 receives posted, then 10,000 sends");
    test_recv_first();
    test_section("10,000 sends before any receive, a barrier in between");
    test_send_first();
    test_section("2,000 sends beyond the credit window, a later tag received first");
    test_later_tag_first();
    test_section("fan-in with MPI_ANY_SOURCE");
    test_fan_in();
    test_section("64 MiB messages");
    test_64mib();
    return test_finish("mpi_many");
}
