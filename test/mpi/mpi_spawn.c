/*
 * mpi_spawn: dynamic processes over weft (docs/mpi.md). The job spawns as
 * many children as it has ranks; parents and children merge the
 * intercommunicator and run point-to-point (eager, a large message that takes
 * the rendezvous, ANY_SOURCE) and collectives on the merged communicator, and
 * on the intercommunicator itself. Then the parents' ranks connect pairwise
 * through MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect and exchange
 * messages there. Every intercommunicator is disconnected at the end.
 *
 * The parents print the PASS line; a child's failed check aborts the whole
 * job like a parent's.
 */
#include "mpi_test.h"

enum { big_len = 1 << 20 };

/* Point-to-point and collectives on an intracommunicator whose ranks are
 * parents and children alike. */
static void exercise(MPI_Comm comm, const char *what)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    const int next = (rank + 1) % size;
    const int prev = (rank + size - 1) % size;
    int got = -1;
    CHECK_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, comm,
                           MPI_STATUS_IGNORE));
    CHECK(got == prev, "%s: ring got %d, want %d", what, got, prev);
    unsigned char *out = malloc(big_len);
    unsigned char *in = malloc(big_len);
    CHECK(out != NULL && in != NULL, "%s: malloc", what);
    test_fill(out, big_len, rank, 1);
    CHECK_MPI(MPI_Sendrecv(out, big_len, MPI_BYTE, next, 8, in, big_len, MPI_BYTE, prev, 8, comm,
                           MPI_STATUS_IGNORE));
    const long bad = test_verify(in, big_len, prev, 1);
    CHECK(bad < 0, "%s: 1 MiB from rank %d wrong at byte %ld", what, prev, bad);
    /* Fan-in with MPI_ANY_SOURCE to rank 0. */
    if (rank == 0) {
        long seen = 0;
        for (int i = 1; i < size; ++i) {
            int from = -1;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&from, 1, MPI_INT, MPI_ANY_SOURCE, 9, comm, &st));
            CHECK(from == st.MPI_SOURCE && from > 0 && from < size, "%s: fan-in from %d (%d)", what,
                  from, st.MPI_SOURCE);
            seen |= 1L << from;
        }
        CHECK(seen == ((1L << size) - 2), "%s: fan-in saw %lx", what, seen);
    } else {
        CHECK_MPI(MPI_Send(&rank, 1, MPI_INT, 0, 9, comm));
    }
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == size * (size - 1) / 2, "%s: allreduce %d", what, sum);
    int *all = malloc(sizeof(int) * (size_t)size);
    CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, comm));
    for (int r = 0; r < size; ++r) {
        CHECK(all[r] == r, "%s: allgather [%d] = %d", what, r, all[r]);
    }
    test_fill(out, 4096, 0, 2);
    if (rank != 0) {
        memset(out, 0, 4096);
    }
    CHECK_MPI(MPI_Bcast(out, 4096, MPI_BYTE, 0, comm));
    CHECK(test_verify(out, 4096, 0, 2) < 0, "%s: bcast", what);
    CHECK_MPI(MPI_Barrier(comm));
    free(all);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    const int child = parent != MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
    MPI_Comm inter;
    if (!child) {
        test_section("MPI_Comm_spawn");
        int *errs = malloc(sizeof(int) * (size_t)test_size);
        CHECK_MPI(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, test_size, MPI_INFO_NULL, 0,
                                 MPI_COMM_WORLD, &inter, errs));
        for (int i = 0; i < test_size; ++i) {
            CHECK(errs[i] == MPI_SUCCESS, "spawn: child %d error %d", i, errs[i]);
        }
        free(errs);
    } else {
        inter = parent;
    }
    int remote = 0;
    CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
    CHECK(remote == test_size, "remote size %d, want %d", remote, test_size);
    /* On the intercommunicator: rank r of each side talks to rank r of the other. */
    int mine = 1000 * child + test_rank;
    int theirs = -1;
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, test_rank, 3, &theirs, 1, MPI_INT, test_rank, 3,
                           inter, MPI_STATUS_IGNORE));
    CHECK(theirs == 1000 * !child + test_rank, "intercommunicator: got %d", theirs);
    int other_sum = -1;
    CHECK_MPI(MPI_Allreduce(&mine, &other_sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(other_sum == test_size * 1000 * !child + test_size * (test_size - 1) / 2,
          "intercommunicator allreduce: %d", other_sum);
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, child, &merged));
    exercise(merged, "parents and children");
    CHECK_MPI(MPI_Comm_free(&merged));
    CHECK_MPI(MPI_Comm_disconnect(&inter));
    if (child) {
        MPI_Finalize();
        return 0;
    }
    /* Connect / accept between the parents' ranks, pairwise: even ranks
     * accept, the next odd rank connects. */
    if (test_size >= 2) {
        test_section("MPI_Open_port, MPI_Comm_accept, MPI_Comm_connect");
        char port[MPI_MAX_PORT_NAME] = {0};
        const int even = test_rank % 2 == 0;
        const int peer = even ? test_rank + 1 : test_rank - 1;
        if (peer < test_size) {
            MPI_Comm pair;
            if (even) {
                CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
                CHECK_MPI(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, peer, 4, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &pair));
            } else {
                CHECK_MPI(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, peer, 4, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &pair));
            }
            unsigned char *out = malloc(big_len);
            unsigned char *in = malloc(big_len);
            test_fill(out, big_len, test_rank, 5);
            CHECK_MPI(MPI_Sendrecv(out, big_len, MPI_BYTE, 0, 6, in, big_len, MPI_BYTE, 0, 6, pair,
                                   MPI_STATUS_IGNORE));
            const long bad = test_verify(in, big_len, peer, 5);
            CHECK(bad < 0, "connect/accept: 1 MiB from rank %d wrong at byte %ld", peer, bad);
            free(in);
            free(out);
            CHECK_MPI(MPI_Comm_disconnect(&pair));
            if (even) {
                CHECK_MPI(MPI_Close_port(port));
            }
        }
    }
    return test_finish("mpi_spawn");
}
