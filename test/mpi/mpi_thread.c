/*
 * mpi_thread.c: MPI_THREAD_MULTIPLE over weft (mtl weft or pml weft; weft
 * opened WEFT_THREAD_SAFE).
 *
 * Ranks pair up (0-1, 2-3, ...); in each pair, T threads per rank exchange
 * messages at the same time, each thread on its own tag: small ping-pongs,
 * rendezvous-size messages, synchronous sends, and a matched probe; then
 * nonblocking and persistent requests. Every message is checked.
 */
#include "mpi_test.h"

#include <pthread.h>

enum { T = 4, ROUNDS = 200, BIG = 65536 };

static int peer;

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    const int tag = 100 + t;
    unsigned char *s = malloc(BIG), *r = malloc(BIG);
    for (int i = 0; i < ROUNDS; ++i) {
        const size_t len = (i % 50 == 49) ? BIG : 8;
        const long msg = (long)t * 100000 + i;
        MPI_Status st;
        if (test_rank < peer) {
            test_fill(s, len, test_rank, msg);
            if (i % 10 == 3) {
                CHECK_MPI(MPI_Ssend(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            } else {
                CHECK_MPI(MPI_Send(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            }
            CHECK_MPI(MPI_Recv(r, BIG, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        } else {
            if (i % 10 == 7) {
                MPI_Message m;
                CHECK_MPI(MPI_Mprobe(peer, tag, MPI_COMM_WORLD, &m, &st));
                CHECK_MPI(MPI_Mrecv(r, BIG, MPI_BYTE, &m, &st));
            } else {
                CHECK_MPI(MPI_Recv(r, BIG, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
            }
        }
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(st.MPI_TAG == tag && st.MPI_SOURCE == peer && count == (int)len,
              "thread %d round %d: tag %d source %d count %d", t, i, st.MPI_TAG, st.MPI_SOURCE,
              count);
        /* The initiator (lower rank) made the pattern; the other rank echoes it. */
        const int origin = test_rank < peer ? test_rank : peer;
        CHECK(test_verify(r, len, origin, msg) < 0, "thread %d round %d: data", t, i);
        if (test_rank > peer) {
            memcpy(s, r, len); /* echo: the pattern is the peer's */
            CHECK_MPI(MPI_Send(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
    }
    free(s);
    free(r);
    return NULL;
}

/**
 * Nonblocking and persistent requests from every thread at once: each round
 * an MPI_Irecv and an MPI_Isend (every seventh an MPI_Issend) to the peer
 * thread of the same index, or a restart of the thread's persistent pair;
 * MPI_Waitall. Requests are allocated, completed and freed by whichever
 * thread gets there (the PML's free list and reference counts under
 * MPI_THREAD_MULTIPLE).
 */
static void *worker_nonblocking(void *arg)
{
    const int t = (int)(intptr_t)arg;
    const int tag = 200 + t;
    enum { PLEN = 64 };
    unsigned char *s = malloc(BIG), *r = malloc(BIG), *ps = calloc(1, PLEN), *pr = calloc(1, PLEN);
    MPI_Request preq[2];
    CHECK_MPI(MPI_Send_init(ps, PLEN, MPI_BYTE, peer, tag + 50, MPI_COMM_WORLD, &preq[0]));
    CHECK_MPI(MPI_Recv_init(pr, PLEN, MPI_BYTE, peer, tag + 50, MPI_COMM_WORLD, &preq[1]));
    for (int i = 0; i < ROUNDS; ++i) {
        const long msg = (long)t * 100000 + i;
        MPI_Status st[2];
        if (i % 3 == 2) {
            test_fill(ps, PLEN, test_rank, msg);
            CHECK_MPI(MPI_Startall(2, preq));
            CHECK_MPI(MPI_Waitall(2, preq, st));
            CHECK(test_verify(pr, PLEN, peer, msg) < 0, "thread %d round %d: persistent data", t,
                  i);
            continue;
        }
        const size_t len = (i % 25 == 24) ? BIG : 8 * (size_t)(1 + i % 4);
        MPI_Request req[2];
        test_fill(s, len, test_rank, msg);
        CHECK_MPI(MPI_Irecv(r, BIG, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[0]));
        if (i % 7 == 0) {
            CHECK_MPI(MPI_Issend(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[1]));
        } else {
            CHECK_MPI(MPI_Isend(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[1]));
        }
        CHECK_MPI(MPI_Waitall(2, req, st));
        int count = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &count);
        CHECK(st[0].MPI_TAG == tag && st[0].MPI_SOURCE == peer && count == (int)len,
              "thread %d round %d (nonblocking): tag %d source %d count %d", t, i, st[0].MPI_TAG,
              st[0].MPI_SOURCE, count);
        CHECK(test_verify(r, len, peer, msg) < 0, "thread %d round %d (nonblocking): data", t, i);
    }
    CHECK_MPI(MPI_Request_free(&preq[0]));
    CHECK_MPI(MPI_Request_free(&preq[1]));
    free(s);
    free(r);
    free(ps);
    free(pr);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    test_init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE requested, %d provided", provided);
    CHECK(test_size % 2 == 0, "needs an even number of ranks");
    peer = test_rank ^ 1;
    test_section("threads exchanging messages at the same time");
    pthread_t th[T];
    for (int t = 0; t < T; ++t) {
        CHECK(0 == pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), "pthread_create");
    }
    for (int t = 0; t < T; ++t) {
        pthread_join(th[t], NULL);
    }
    test_section("threads with nonblocking and persistent requests");
    for (int t = 0; t < T; ++t) {
        CHECK(0 == pthread_create(&th[t], NULL, worker_nonblocking, (void *)(intptr_t)t),
              "pthread_create");
    }
    for (int t = 0; t < T; ++t) {
        pthread_join(th[t], NULL);
    }
    return test_finish("mpi_thread");
}
