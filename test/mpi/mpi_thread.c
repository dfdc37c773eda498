/*
 * mpi_thread.c: MPI_THREAD_MULTIPLE over the MTL (weft opened WEFT_THREAD_SAFE).
 *
 * Ranks pair up (0-1, 2-3, ...); in each pair, T threads per rank exchange
 * messages at the same time, each thread on its own tag: small ping-pongs,
 * rendezvous-size messages, synchronous sends, and a matched probe. Every
 * message is checked.
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
    return test_finish("mpi_thread");
}
