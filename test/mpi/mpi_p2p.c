/*
 * mpi_p2p.c: point-to-point semantics over weft (mtl weft, pml weft), with checked results.
 *
 * Send modes (standard, synchronous, buffered, ready; blocking and not) over
 * sizes that straddle weft's inject size (4 KiB) and rendezvous threshold
 * (16 KiB), expected and unexpected; MPI_Ssend completing only once matched;
 * MPI_ANY_SOURCE / MPI_ANY_TAG (which must not take Open MPI's internal,
 * negative-tag collective traffic); ordering under wildcards; probe, matched
 * probe (Mprobe/Improbe/Mrecv/Imrecv); cancel; truncation (MPI_ERR_TRUNCATE
 * with MPI_ERRORS_RETURN); zero-byte messages; messages to self; derived
 * datatypes; many communicators; persistent requests (every send mode,
 * restarted, canceled); MPI_Request_free of active requests; MPI_PROC_NULL;
 * intercommunicators. Runs on 2 or more ranks, over mtl weft and pml weft.
 */
#include "mpi_test.h"

#include <stdbool.h>
#include <unistd.h>

static const size_t sizes[] = {0, 1, 8, 100, 4096, 4097, 16384, 16385, 65536, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSIZE (1 << 20)

enum mode { M_SEND, M_ISEND, M_SSEND, M_ISSEND, M_BSEND, M_IBSEND, M_RSEND, M_IRSEND, M_COUNT };
static const char *mode_name[M_COUNT] = {"Send",  "Isend",  "Ssend", "Issend",
                                         "Bsend", "Ibsend", "Rsend", "Irsend"};

static unsigned char *sbuf, *rbuf;

/** Send with mode @p m; nonblocking modes return their request in @p req (else MPI_REQUEST_NULL).
 */
static void send_mode(enum mode m, const void *buf, int n, int dest, int tag, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    switch (m) {
        case M_SEND:
            CHECK_MPI(MPI_Send(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD));
            break;
        case M_ISEND:
            CHECK_MPI(MPI_Isend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, req));
            break;
        case M_SSEND:
            CHECK_MPI(MPI_Ssend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD));
            break;
        case M_ISSEND:
            CHECK_MPI(MPI_Issend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, req));
            break;
        case M_BSEND:
            CHECK_MPI(MPI_Bsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD));
            break;
        case M_IBSEND:
            CHECK_MPI(MPI_Ibsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, req));
            break;
        case M_RSEND:
            CHECK_MPI(MPI_Rsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD));
            break;
        case M_IRSEND:
            CHECK_MPI(MPI_Irsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, req));
            break;
        default:
            CHECK(0, "bad mode");
    }
}

static void check_status(const MPI_Status *st, int src, int tag, size_t len, MPI_Datatype type)
{
    int count = -1;
    MPI_Get_count(st, type, &count);
    CHECK(st->MPI_SOURCE == src, "status source %d, expected %d", st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "status tag %d, expected %d", st->MPI_TAG, tag);
    CHECK(count == (int)len, "status count %d, expected %zu", count, len);
}

/* ------------------------------------------------------------------ send modes */

/** Every mode, every size, receive posted first (the sender waits for a ready message). */
static void test_modes_expected(void)
{
    for (int m = 0; m < M_COUNT; ++m) {
        for (size_t s = 0; s < NSIZES; ++s) {
            const int tag = 1000 + m * 100 + (int)s;
            const size_t len = sizes[s];
            if (0 == test_rank) {
                test_fill(sbuf, len, 0, tag);
                MPI_Request req;
                CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                send_mode((enum mode)m, sbuf, (int)len, 1, tag, &req);
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            } else if (1 == test_rank) {
                MPI_Request req;
                MPI_Status st;
                memset(rbuf, 0xee, len + 1);
                CHECK_MPI(MPI_Irecv(rbuf, MAXSIZE, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req));
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Wait(&req, &st));
                check_status(&st, 0, tag, len, MPI_BYTE);
                long bad = test_verify(rbuf, len, 0, tag);
                CHECK(bad < 0, "%s of %zu bytes (expected): byte %ld wrong", mode_name[m], len,
                      bad);
                CHECK(rbuf[len] == 0xee, "%s of %zu bytes wrote past its end", mode_name[m], len);
            }
        }
    }
}

/** Nonblocking modes (not ready), the receive posted after the message arrived. */
static void test_modes_unexpected(void)
{
    static const enum mode modes[] = {M_ISEND, M_ISSEND, M_IBSEND};
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); ++k) {
        const enum mode m = modes[k];
        for (size_t s = 0; s < NSIZES; ++s) {
            const int tag = 3000 + (int)m * 100 + (int)s;
            const size_t len = sizes[s];
            MPI_Request req = MPI_REQUEST_NULL;
            if (0 == test_rank) {
                test_fill(sbuf, len, 0, tag);
                send_mode(m, sbuf, (int)len, 1, tag, &req);
            }
            MPI_Barrier(MPI_COMM_WORLD); /* the eager ones have arrived by now */
            if (1 == test_rank) {
                MPI_Status st;
                CHECK_MPI(MPI_Recv(rbuf, MAXSIZE, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
                check_status(&st, 0, tag, len, MPI_BYTE);
                long bad = test_verify(rbuf, len, 0, tag);
                CHECK(bad < 0, "%s of %zu bytes (unexpected): byte %ld wrong", mode_name[m], len,
                      bad);
            }
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    }
}

/** MPI_Issend does not complete before the receive is posted; MPI_Ssend blocks until then. */
static void test_ssend_waits_for_match(void)
{
    static const size_t lens[] = {0, 8, 8192, 1 << 20};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
        const size_t len = lens[k];
        const int tag = 5000 + (int)k;
        if (0 == test_rank) {
            MPI_Request req;
            int done = 0;
            test_fill(sbuf, len, 0, tag);
            CHECK_MPI(MPI_Issend(sbuf, (int)len, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req));
            /* Rank 1 posts its receive only after our "go": until then it must not complete. */
            const double t0 = test_now();
            while (test_now() - t0 < 0.1) {
                CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
                CHECK(!done, "MPI_Issend of %zu bytes completed before it was matched", len);
            }
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 4999, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else if (1 == test_rank) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 4999, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(rbuf, MAXSIZE, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
            check_status(&st, 0, tag, len, MPI_BYTE);
            CHECK(test_verify(rbuf, len, 0, tag) < 0, "Issend data of %zu bytes wrong", len);
        }
    }

    /* Blocking: rank 1 posts its receive 0.3 s late; MPI_Ssend cannot return before.
     * Rank 1 says when it posted it, so a loaded machine that delays either rank
     * cannot fake a result. CLOCK_MONOTONIC is one clock on a node, but not
     * between nodes (two VMs: each its own uptime): rank 1's clock is mapped to
     * rank 0's by the ping-pong with the shortest round trip, which bounds the
     * error of the mapping by half that round trip. */
    if (0 == test_rank) {
        double offset = 0, error = 1e9;
        for (int i = 0; i < 10; ++i) {
            double theirs = 0;
            const double sent = test_now();
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 5102, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(&theirs, 1, MPI_DOUBLE, 1, 5103, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            const double back = test_now();
            if ((back - sent) / 2 < error) {
                error = (back - sent) / 2;
                offset = theirs - (sent + back) / 2;
            }
        }
        double posted = 0;
        CHECK_MPI(MPI_Ssend(sbuf, 8, MPI_BYTE, 1, 5100, MPI_COMM_WORLD));
        const double returned = test_now();
        CHECK_MPI(MPI_Recv(&posted, 1, MPI_DOUBLE, 1, 5101, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        posted -= offset;
        CHECK(returned >= posted - error,
              "MPI_Ssend returned %.3f s before the receive was posted (clocks mapped within "
              "%.6f s)",
              posted - returned, error);
    } else if (1 == test_rank) {
        for (int i = 0; i < 10; ++i) {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 5102, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            const double now = test_now();
            CHECK_MPI(MPI_Send(&now, 1, MPI_DOUBLE, 0, 5103, MPI_COMM_WORLD));
        }
        usleep(300000);
        const double posted = test_now();
        CHECK_MPI(MPI_Recv(rbuf, 8, MPI_BYTE, 0, 5100, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(&posted, 1, MPI_DOUBLE, 0, 5101, MPI_COMM_WORLD));
    }
}

/* ------------------------------------------------------------------ wildcards and ordering */

/** Every other rank sends K messages to rank 0, which takes them with ANY_SOURCE/ANY_TAG. */
static void test_any_source_any_tag(void)
{
    enum { K = 50 };
    if (0 == test_rank) {
        int next[64] = {0};
        CHECK(test_size <= 64, "too many ranks for this test");
        for (int n = 0; n < (test_size - 1) * K; ++n) {
            int v[2];
            MPI_Status st;
            CHECK_MPI(MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            const int src = st.MPI_SOURCE;
            CHECK(src > 0 && src < test_size, "ANY_SOURCE reported source %d", src);
            CHECK(v[0] == src, "message from %d says it came from %d", src, v[0]);
            CHECK(v[1] == next[src], "from %d: message %d arrived where %d was due (order)", src,
                  v[1], next[src]);
            CHECK(st.MPI_TAG == 100 * src + v[1] % 7, "tag %d for message %d of %d", st.MPI_TAG,
                  v[1], src);
            ++next[src];
        }
    } else {
        for (int i = 0; i < K; ++i) {
            int v[2] = {test_rank, i};
            CHECK_MPI(MPI_Send(v, 2, MPI_INT, 0, 100 * test_rank + i % 7, MPI_COMM_WORLD));
        }
    }

    /* ANY_SOURCE with a specific tag, and a specific source with ANY_TAG (after
     * the barrier: the wildcards above must not see these). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == test_rank) {
        for (int src = 1; src < test_size; ++src) {
            int v = -1;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &st));
            CHECK(v == st.MPI_SOURCE * 10, "tag 77: value %d from %d", v, st.MPI_SOURCE);
        }
        for (int src = test_size - 1; src > 0; --src) {
            int v = -1;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == 78 && v == src * 11,
                  "source %d ANY_TAG: got tag %d value %d", src, st.MPI_TAG, v);
        }
    } else {
        int v = test_rank * 10;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 77, MPI_COMM_WORLD));
        v = test_rank * 11;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 78, MPI_COMM_WORLD));
    }
}

/** A posted ANY_SOURCE/ANY_TAG receive must not take collective traffic (negative tags). */
static void test_wildcard_vs_collectives(void)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int v = -1;
    if (0 == test_rank) {
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
    }
    int x = test_rank + 1, sum = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == test_size * (test_size + 1) / 2, "allreduce with a wildcard posted: %d", sum);
    CHECK_MPI(MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(x == 1, "bcast with a wildcard posted: %d", x);
    if (0 == test_rank) {
        MPI_Status st;
        int done = 0;
        CHECK_MPI(MPI_Test(&req, &done, &st));
        CHECK(!done, "the wildcard receive took collective traffic (tag %d)", st.MPI_TAG);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (1 == test_rank) {
        int w = 4242;
        CHECK_MPI(MPI_Send(&w, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
    } else if (0 == test_rank) {
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK(v == 4242 && st.MPI_TAG == 5 && st.MPI_SOURCE == 1,
              "wildcard got value %d tag %d source %d", v, st.MPI_TAG, st.MPI_SOURCE);
    }
}

/** Messages from one source match in send order, whatever their size, under wildcards. */
static void test_ordering(void)
{
    enum { N = 300 };
    static const size_t lens[] = {8, 5000, 20000, 0};
    size_t total = 0;
    for (int i = 0; i < N; ++i) {
        total += lens[i % 4] + sizeof(int);
    }
    if (1 == test_rank) {
        /* One buffer per message, each starting with its index. */
        unsigned char *buf = malloc(total);
        MPI_Request *reqs = malloc(2 * N * sizeof(MPI_Request));
        size_t off = 0;
        for (int round = 0; round < 2; ++round) {
            off = 0;
            for (int i = 0; i < N; ++i) {
                const size_t len = lens[i % 4] + sizeof(int);
                memcpy(buf + off, &i, sizeof(int));
                test_fill(buf + off + sizeof(int), len - sizeof(int), 1, i);
                CHECK_MPI(MPI_Isend(buf + off, (int)len, MPI_BYTE, 0, i % 3, MPI_COMM_WORLD,
                                    &reqs[round * N + i]));
                off += len;
            }
            CHECK_MPI(MPI_Waitall(N, reqs + round * N, MPI_STATUSES_IGNORE));
        }
        free(reqs);
        free(buf);
    } else if (0 == test_rank) {
        unsigned char *buf = malloc(20000 + sizeof(int));
        /* Round 1: ANY_TAG, in arrival order. */
        for (int i = 0; i < N; ++i) {
            MPI_Status st;
            int idx = -1;
            CHECK_MPI(
                MPI_Recv(buf, 20000 + sizeof(int), MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            memcpy(&idx, buf, sizeof(int));
            CHECK(idx == i, "ANY_TAG receive %d got message %d", i, idx);
            CHECK(st.MPI_TAG == i % 3, "message %d has tag %d", i, st.MPI_TAG);
            CHECK(test_verify(buf + sizeof(int), lens[i % 4], 1, i) < 0, "message %d data", i);
        }
        /* Round 2: by tag, all of tag 2, then 0, then 1; within a tag in send order. */
        static const int tag_order[] = {2, 0, 1};
        for (int t = 0; t < 3; ++t) {
            for (int i = tag_order[t]; i < N; i += 3) {
                MPI_Status st;
                int idx = -1;
                CHECK_MPI(MPI_Recv(buf, 20000 + sizeof(int), MPI_BYTE, MPI_ANY_SOURCE, tag_order[t],
                                   MPI_COMM_WORLD, &st));
                memcpy(&idx, buf, sizeof(int));
                CHECK(idx == i, "tag %d: got message %d, expected %d", tag_order[t], idx, i);
                CHECK(test_verify(buf + sizeof(int), lens[i % 4], 1, i) < 0, "message %d data", i);
            }
        }
        free(buf);
    }
}

/* ------------------------------------------------------------------ probes */

static void test_probe(void)
{
    MPI_Request reqs[3];
    static const int plens[3] = {0, 100, 70000};
    if (0 == test_rank) {
        int flag = 1;
        MPI_Status st;
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "MPI_Iprobe found a message (tag %d) when none was sent", st.MPI_TAG);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == test_rank) {
        for (int k = 0; k < 3; ++k) {
            test_fill(sbuf + 100000 * k, plens[k], 1, 600 + k);
            CHECK_MPI(MPI_Isend(sbuf + 100000 * k, plens[k], MPI_BYTE, 0, 600 + k, MPI_COMM_WORLD,
                                &reqs[k]));
        }
        CHECK_MPI(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
    } else if (0 == test_rank) {
        MPI_Status st;
        int count = -1, flag = 0;
        CHECK_MPI(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_status(&st, 1, 600, 0, MPI_BYTE);
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 600, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        /* Skip tag 601: probe for 602 from any source. */
        CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, 602, MPI_COMM_WORLD, &st));
        check_status(&st, 1, 602, 70000, MPI_BYTE);
        MPI_Get_count(&st, MPI_BYTE, &count);
        unsigned char *buf = malloc((size_t)count);
        CHECK_MPI(MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        CHECK(test_verify(buf, 70000, 1, 602) < 0, "probed 70000-byte message data");
        free(buf);
        do {
            CHECK_MPI(MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        } while (!flag);
        check_status(&st, 1, 601, 100, MPI_BYTE);
        /* Probing twice finds the same message: a probe does not receive. */
        CHECK_MPI(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_status(&st, 1, 601, 100, MPI_BYTE);
        CHECK_MPI(MPI_Recv(rbuf, 100, MPI_BYTE, 1, 601, MPI_COMM_WORLD, &st));
        CHECK(test_verify(rbuf, 100, 1, 601) < 0, "probed 100-byte message data");
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "a message is left after receiving all (tag %d)", st.MPI_TAG);
    }
}

static void test_mprobe(void)
{
    if (1 == test_rank) {
        MPI_Request reqs[4];
        int a[1000], b[2000];
        for (int i = 0; i < 1000; ++i) {
            a[i] = i;
        }
        for (int i = 0; i < 2000; ++i) {
            b[i] = -i;
        }
        test_fill(sbuf, 65536, 1, 8);
        CHECK_MPI(MPI_Isend(a, 1000, MPI_INT, 0, 7, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Isend(b, 2000, MPI_INT, 0, 7, MPI_COMM_WORLD, &reqs[1]));
        /* A synchronous send received through a matched probe is acknowledged too. */
        CHECK_MPI(MPI_Issend(sbuf, 65536, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &reqs[2]));
        CHECK_MPI(MPI_Issend(sbuf, 16, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &reqs[3]));
        CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
    } else if (0 == test_rank) {
        MPI_Message m1, m2, m3, m4;
        MPI_Status st;
        int matched = 0;
        CHECK_MPI(MPI_Mprobe(1, 7, MPI_COMM_WORLD, &m1, &st));
        check_status(&st, 1, 7, 1000, MPI_INT);
        /* The first message is claimed: the next matched probe finds the second. */
        do {
            CHECK_MPI(MPI_Improbe(1, 7, MPI_COMM_WORLD, &matched, &m2, &st));
        } while (!matched);
        check_status(&st, 1, 7, 2000, MPI_INT);
        CHECK_MPI(MPI_Improbe(1, 7, MPI_COMM_WORLD, &matched, &m3, &st));
        CHECK(!matched, "a third message with tag 7 was found");
        CHECK(m3 == MPI_MESSAGE_NULL, "no match must give MPI_MESSAGE_NULL");
        int *b = malloc(2000 * sizeof(int));
        int *a = malloc(1000 * sizeof(int));
        CHECK_MPI(MPI_Mrecv(b, 2000, MPI_INT, &m2, &st)); /* the second first */
        check_status(&st, 1, 7, 2000, MPI_INT);
        CHECK(m2 == MPI_MESSAGE_NULL, "MPI_Mrecv must reset the message handle");
        MPI_Request req;
        CHECK_MPI(MPI_Imrecv(a, 1000, MPI_INT, &m1, &req));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_status(&st, 1, 7, 1000, MPI_INT);
        for (int i = 0; i < 1000; ++i) {
            CHECK(a[i] == i, "mprobe message 1 element %d = %d", i, a[i]);
        }
        for (int i = 0; i < 2000; ++i) {
            CHECK(b[i] == -i, "mprobe message 2 element %d = %d", i, b[i]);
        }
        free(a);
        free(b);
        CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m4, &st));
        check_status(&st, 1, 8, 65536, MPI_BYTE);
        CHECK_MPI(MPI_Mrecv(rbuf, 65536, MPI_BYTE, &m4, &st));
        CHECK(test_verify(rbuf, 65536, 1, 8) < 0, "mprobe of a synchronous send: data");
        CHECK_MPI(MPI_Mprobe(1, 9, MPI_COMM_WORLD, &m4, &st));
        CHECK_MPI(MPI_Mrecv(rbuf, 16, MPI_BYTE, &m4, &st));
        check_status(&st, 1, 9, 16, MPI_BYTE);
    }
}

/* ------------------------------------------------------------------ cancel */

static void test_cancel(void)
{
    if (0 == test_rank) {
        MPI_Request req;
        MPI_Status st;
        int cancelled = 0, v = -1;
        /* Never sent: canceled. */
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, 999, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "a receive that matched nothing was not canceled");
        /* Wildcards, and a non-contiguous receive (its bounce buffer is freed). */
        MPI_Datatype vec;
        MPI_Type_vector(100, 1, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int *vbuf = malloc(300 * sizeof(int));
        CHECK_MPI(MPI_Irecv(vbuf, 1, vec, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "an ANY_SOURCE/ANY_TAG receive was not canceled");
        MPI_Type_free(&vec);
        free(vbuf);
    }
    /* Already matched: the cancel fails and the data is delivered. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == test_rank) {
        int w = 31337;
        CHECK_MPI(MPI_Send(&w, 1, MPI_INT, 0, 55, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == test_rank) {
        MPI_Request req;
        MPI_Status st;
        int cancelled = 1, v = -1;
        /* The barrier does not say the message has arrived (between nodes it can
         * still be on the wire: seen over tcp across two VMs); a probe does, so
         * the receive matches it as an unexpected message when it is posted. */
        CHECK_MPI(MPI_Probe(1, 55, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, 55, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(!cancelled, "a receive that had matched was canceled");
        CHECK(v == 31337 && st.MPI_SOURCE == 1 && st.MPI_TAG == 55,
              "matched receive after a failed cancel: value %d source %d tag %d", v, st.MPI_SOURCE,
              st.MPI_TAG);
        /* The canceled receives took nothing: a message to tag 999 matches a new receive. */
    }
    if (1 == test_rank) {
        int w = 999;
        CHECK_MPI(MPI_Send(&w, 1, MPI_INT, 0, 999, MPI_COMM_WORLD));
    } else if (0 == test_rank) {
        int v = -1;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 999, "receive after canceled ones got %d", v);
    }
}

/* ------------------------------------------------------------------ truncation */

static void test_truncate(void)
{
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (1 == test_rank) {
        int v[100];
        for (int i = 0; i < 100; ++i) {
            v[i] = i;
        }
        test_fill(sbuf, 1 << 20, 1, 21);
        CHECK_MPI(MPI_Send(v, 100, MPI_INT, 0, 20, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(sbuf, 1 << 20, MPI_BYTE, 0, 21, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&v[99], 1, MPI_INT, 0, 25, MPI_COMM_WORLD));
        /* The truncated receive still matched: MPI_Ssend must complete. */
        CHECK_MPI(MPI_Ssend(v, 100, MPI_INT, 0, 22, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(v, 100, MPI_INT, 0, 23, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(v, 1, MPI_INT, 0, 24, MPI_COMM_WORLD));
    } else if (0 == test_rank) {
        int small[10], cls = 0;
        MPI_Status st;
        int rc = MPI_Recv(small, 10, MPI_INT, 1, 20, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_TRUNCATE == cls, "eager truncation returned class %d, not MPI_ERR_TRUNCATE",
              cls);

        /* Rendezvous size, with a second receive that succeeds: MPI_Waitall reports
         * MPI_ERR_IN_STATUS and the error of each in its status. */
        MPI_Request reqs[2];
        MPI_Status sts[2];
        int one = -1;
        CHECK_MPI(MPI_Irecv(rbuf, 1024, MPI_BYTE, 1, 21, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Irecv(&one, 1, MPI_INT, 1, 25, MPI_COMM_WORLD, &reqs[1]));
        rc = MPI_Waitall(2, reqs, sts);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_IN_STATUS == cls, "rendezvous truncation: MPI_Waitall returned class %d",
              cls);
        MPI_Error_class(sts[0].MPI_ERROR, &cls);
        CHECK(MPI_ERR_TRUNCATE == cls, "rendezvous truncation: status.MPI_ERROR class %d", cls);
        CHECK(sts[0].MPI_SOURCE == 1 && sts[0].MPI_TAG == 21, "truncated status source %d tag %d",
              sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        /* Open MPI stops at a request found failed and reports the others pending. */
        if (MPI_ERR_PENDING == sts[1].MPI_ERROR) {
            CHECK_MPI(MPI_Wait(&reqs[1], &sts[1]));
            sts[1].MPI_ERROR = MPI_SUCCESS;
        }
        CHECK(MPI_SUCCESS == sts[1].MPI_ERROR && one == 99,
              "the receive next to a truncated one: error %d value %d", sts[1].MPI_ERROR, one);

        rc = MPI_Recv(small, 10, MPI_INT, MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_TRUNCATE == cls, "truncated synchronous send: class %d", cls);

        /* Truncation through a matched probe. */
        MPI_Message m;
        CHECK_MPI(MPI_Mprobe(1, 23, MPI_COMM_WORLD, &m, &st));
        rc = MPI_Mrecv(small, 10, MPI_INT, &m, &st);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_TRUNCATE == cls, "truncated MPI_Mrecv: class %d", cls);

        /* The endpoint still works. */
        one = -1;
        CHECK_MPI(MPI_Recv(&one, 1, MPI_INT, 1, 24, MPI_COMM_WORLD, &st));
        CHECK(one == 0, "receive after truncations got %d", one);
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* ------------------------------------------------------------------ persistent requests */

/**
 * MPI_Send_init in every mode and MPI_Recv_init (specific and wildcard sources
 * and tags, contiguous and vector datatypes), started ROUNDS times with
 * MPI_Startall; an inactive request; a persistent receive canceled, then
 * restarted and matched.
 */
static void test_persistent(void)
{
    enum { ROUNDS = 6, NS = 5, NV = 50, STRIDE = 3 };
    static const int lens[NS] = {400, 65536, 20000, 0, 8}; /* [3]: the vector */
    static const int offs[NS] = {0, 1000, 70000, 0, 100000};
    MPI_Datatype vec;
    MPI_Type_vector(NV, 1, STRIDE, MPI_INT, &vec); /* 200 bytes packed */
    MPI_Type_commit(&vec);
    int *vsend = malloc(NV * STRIDE * sizeof(int));
    int *vrecv = malloc(NV * STRIDE * sizeof(int));
    MPI_Request reqs[NS];
    MPI_Status sts[NS];
    /* Open MPI 4.1.4's own PMLs (ob1, and cm under mtl weft) pack a persistent
     * buffered send once, at MPI_Bsend_init, so every restart resends the
     * first data (open-mpi/ompi#12797, fixed in later 4.1.x releases): the
     * data of restarts is checked only under pml weft. */
    const char *pml = getenv("OMPI_MCA_pml");
    const bool stale_bsend_init = NULL == pml || 0 != strcmp(pml, "weft");
    if (stale_bsend_init && 1 == test_rank) {
        printf("  (pml %s: data of restarted MPI_Bsend_init not checked, open-mpi/ompi#12797)\n",
               NULL != pml ? pml : "default");
    }

    if (0 == test_rank) {
        CHECK_MPI(
            MPI_Send_init(sbuf + offs[0], lens[0], MPI_BYTE, 1, 700, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(
            MPI_Ssend_init(sbuf + offs[1], lens[1], MPI_BYTE, 1, 701, MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(
            MPI_Bsend_init(sbuf + offs[2], lens[2], MPI_BYTE, 1, 702, MPI_COMM_WORLD, &reqs[2]));
        CHECK_MPI(MPI_Send_init(vsend, 1, vec, 1, 703, MPI_COMM_WORLD, &reqs[3]));
        CHECK_MPI(
            MPI_Rsend_init(sbuf + offs[4], lens[4], MPI_BYTE, 1, 704, MPI_COMM_WORLD, &reqs[4]));
        for (int round = 0; round < ROUNDS; ++round) {
            for (int k = 0; k < NS; ++k) {
                test_fill(sbuf + offs[k], (size_t)lens[k], 0, 7000 + 10 * round + k);
            }
            for (int i = 0; i < NV * STRIDE; ++i) {
                vsend[i] = (i % STRIDE) ? -1 : round * 1000 + i;
            }
            /* Rank 1 has started its receives (the ready send needs them). */
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 799, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Startall(NS, reqs));
            CHECK_MPI(MPI_Waitall(NS, reqs, sts));
        }
        /* An inactive persistent request: MPI_Wait and MPI_Test return at once. */
        int flag = 0;
        CHECK_MPI(MPI_Wait(&reqs[0], &sts[0]));
        CHECK_MPI(MPI_Test(&reqs[1], &flag, &sts[1]));
        CHECK(flag, "MPI_Test of an inactive persistent request: not complete");
        CHECK(reqs[0] != MPI_REQUEST_NULL, "MPI_Wait freed a persistent request");
        for (int k = 0; k < NS; ++k) {
            CHECK_MPI(MPI_Request_free(&reqs[k]));
        }
        /* For the canceled-then-restarted receive of rank 1. */
        int v = 4711;
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 798, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 705, MPI_COMM_WORLD));
    } else if (1 == test_rank) {
        CHECK_MPI(
            MPI_Recv_init(rbuf + offs[0], lens[0], MPI_BYTE, 0, 700, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Recv_init(rbuf + offs[1], MAXSIZE - offs[1], MPI_BYTE, MPI_ANY_SOURCE, 701,
                                MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(MPI_Recv_init(rbuf + offs[2], lens[2], MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD,
                                &reqs[2]));
        CHECK_MPI(MPI_Recv_init(vrecv, 1, vec, 0, 703, MPI_COMM_WORLD, &reqs[3]));
        CHECK_MPI(MPI_Recv_init(rbuf + offs[4], lens[4], MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                MPI_COMM_WORLD, &reqs[4]));
        for (int round = 0; round < ROUNDS; ++round) {
            for (int i = 0; i < NV * STRIDE; ++i) {
                vrecv[i] = -2;
            }
            CHECK_MPI(MPI_Startall(NS, reqs));
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 799, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Waitall(NS, reqs, sts));
            for (int k = 0; k < NS; ++k) {
                if (3 == k) {
                    check_status(&sts[k], 0, 703, 1, vec);
                    continue;
                }
                check_status(&sts[k], 0, 700 + k, (size_t)lens[k], MPI_BYTE);
                if (2 == k && round > 0 && stale_bsend_init) {
                    continue;
                }
                CHECK(test_verify(rbuf + offs[k], (size_t)lens[k], 0, 7000 + 10 * round + k) < 0,
                      "persistent request %d, round %d: data", k, round);
            }
            for (int i = 0; i < NV * STRIDE; ++i) {
                const int want = (i % STRIDE) ? -2 : round * 1000 + i;
                CHECK(vrecv[i] == want, "persistent vector, round %d: [%d] = %d, expected %d",
                      round, i, vrecv[i], want);
            }
        }
        for (int k = 0; k < NS; ++k) {
            CHECK_MPI(MPI_Request_free(&reqs[k]));
            CHECK(MPI_REQUEST_NULL == reqs[k], "MPI_Request_free left the handle");
        }
        /* Canceled before anything matched it, then started again: it works. */
        MPI_Request r;
        MPI_Status st;
        int v = -1, cancelled = 0;
        CHECK_MPI(MPI_Recv_init(&v, 1, MPI_INT, 0, 705, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Cancel(&r));
        CHECK_MPI(MPI_Wait(&r, &st));
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "a persistent receive that matched nothing was not canceled");
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 798, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&r, &st));
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(!cancelled && 4711 == v, "restarted persistent receive: value %d, canceled %d", v,
              cancelled);
        check_status(&st, 0, 705, 1, MPI_INT);
        CHECK_MPI(MPI_Request_free(&r));
    }
    MPI_Type_free(&vec);
    free(vsend);
    free(vrecv);
}

/**
 * MPI_Request_free of active requests: the operations still complete (a
 * receive delivers, a send is received), and the requests are released.
 */
static void test_free_active(void)
{
    enum { N = 25 };
    if (0 == test_rank) {
        int a[N], b[N];
        MPI_Request r;
        for (int i = 0; i < N; ++i) {
            a[i] = i;
            b[i] = 100 + i;
        }
        test_fill(sbuf, 1 << 20, 0, 712);
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 711, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Isend(a, N, MPI_INT, 1, 710, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Request_free(&r));
        CHECK_MPI(MPI_Send(b, N, MPI_INT, 1, 710, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Isend(sbuf, 1 << 20, MPI_BYTE, 1, 712, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Request_free(&r));
        CHECK(MPI_REQUEST_NULL == r, "MPI_Request_free left the handle");
        /* sbuf stays untouched until rank 1 has the message (the barrier). */
    } else if (1 == test_rank) {
        int a[N], b[N];
        MPI_Request r;
        for (int i = 0; i < N; ++i) {
            a[i] = b[i] = -1;
        }
        CHECK_MPI(MPI_Irecv(a, N, MPI_INT, 0, 710, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Request_free(&r));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 711, MPI_COMM_WORLD));
        /* Messages of one sender and tag match in order: the freed receive took
         * the first, whose completion was delivered before this one's. */
        CHECK_MPI(MPI_Recv(b, N, MPI_INT, 0, 710, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < N; ++i) {
            CHECK(a[i] == i && b[i] == 100 + i, "freed receive [%d] = %d, next receive %d", i, a[i],
                  b[i]);
        }
        CHECK_MPI(MPI_Recv(rbuf, 1 << 20, MPI_BYTE, 0, 712, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(test_verify(rbuf, 1 << 20, 0, 712) < 0, "a freed 1 MiB send: data");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ------------------------------------------------------------------ MPI_PROC_NULL */

static void check_proc_null_status(const MPI_Status *st)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(MPI_PROC_NULL == st->MPI_SOURCE && MPI_ANY_TAG == st->MPI_TAG && 0 == count,
          "MPI_PROC_NULL status: source %d tag %d count %d", st->MPI_SOURCE, st->MPI_TAG, count);
}

/** Every operation with MPI_PROC_NULL completes at once and moves nothing. */
static void test_proc_null(void)
{
    int v = 5, flag = 0;
    MPI_Status st;
    MPI_Request r[2];
    MPI_Message m;
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Bsend(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
    CHECK(5 == v, "a receive from MPI_PROC_NULL wrote %d", v);
    CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Issend(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Wait(&r[0], &st));
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag, "MPI_Iprobe of MPI_PROC_NULL found nothing");
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &m, &st));
    CHECK(MPI_MESSAGE_NO_PROC == m, "MPI_Mprobe of MPI_PROC_NULL: not MPI_MESSAGE_NO_PROC");
    CHECK_MPI(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Send_init(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Recv_init(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]));
    for (int i = 0; i < 3; ++i) {
        CHECK_MPI(MPI_Startall(2, r));
        CHECK_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&r[1], &st));
        check_proc_null_status(&st);
    }
    CHECK_MPI(MPI_Request_free(&r[0]));
    CHECK_MPI(MPI_Request_free(&r[1]));
    CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, &v, 1, MPI_INT, MPI_PROC_NULL, 1,
                           MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
    CHECK(5 == v, "MPI_PROC_NULL operations changed the buffer: %d", v);
}

/* ------------------------------------------------------------------ intercommunicators */

/**
 * An intercommunicator between the even and the odd ranks: each rank sends to
 * every rank of the other group (MPI_SOURCE is a rank of the remote group),
 * synchronous rendezvous sends, probes.
 */
static void test_intercomm(void)
{
    enum { BIG = 20000 };
    const int color = test_rank % 2;
    MPI_Comm half, inter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, test_rank, &half));
    /* Local leader: rank 0 of each half (world ranks 0 and 1). */
    CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 90, &inter));
    int lr, ls, rs, is_inter = 0;
    MPI_Comm_test_inter(inter, &is_inter);
    CHECK(is_inter, "MPI_Intercomm_create made no intercommunicator");
    MPI_Comm_rank(inter, &lr);
    MPI_Comm_size(inter, &ls);
    MPI_Comm_remote_size(inter, &rs);

    int *out = malloc(rs * sizeof(int));
    int *seen = calloc(rs, sizeof(int));
    MPI_Request *reqs = malloc((rs + 1) * sizeof(MPI_Request));
    for (int r = 0; r < rs; ++r) {
        out[r] = 1000 * color + 10 * lr + r;
        CHECK_MPI(MPI_Isend(&out[r], 1, MPI_INT, r, 91, inter, &reqs[r]));
    }
    for (int i = 0; i < rs; ++i) {
        int v = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 91, inter, &st));
        const int src = st.MPI_SOURCE;
        CHECK(src >= 0 && src < rs && !seen[src], "intercommunicator: source %d (remote size %d)",
              src, rs);
        seen[src] = 1;
        CHECK(v == 1000 * (1 - color) + 10 * src + lr, "intercommunicator: from %d value %d", src,
              v);
    }
    CHECK_MPI(MPI_Waitall(rs, reqs, MPI_STATUSES_IGNORE));

    /* Each rank MPI_Ssends BIG bytes to remote rank lr % rs; the receives for
     * it (remote ranks q with q % ls == lr) are posted first. */
    unsigned char *big = malloc(BIG);
    unsigned char *in = malloc((size_t)BIG * (rs / ls + 1));
    int nin = 0;
    for (int q = lr; q < rs; q += ls) {
        CHECK_MPI(MPI_Irecv(in + (size_t)nin * BIG, BIG, MPI_BYTE, q, 92, inter, &reqs[nin]));
        ++nin;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    test_fill(big, BIG, test_rank, 92);
    CHECK_MPI(MPI_Ssend(big, BIG, MPI_BYTE, lr % rs, 92, inter));
    CHECK_MPI(MPI_Waitall(nin, reqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < nin; ++k) {
        const int q = lr + k * ls;
        const int world_q = 2 * q + (1 - color); /* split kept world order within a half */
        CHECK(test_verify(in + (size_t)k * BIG, BIG, world_q, 92) < 0,
              "intercommunicator synchronous send from remote rank %d: data", q);
    }

    /* A probe names the remote rank too: local rank 0 of each group sends to
     * the last rank of the other. */
    if (0 == lr) {
        int v = 33;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, rs - 1, 93, inter));
    }
    if (ls - 1 == lr) {
        MPI_Status st;
        int v = -1;
        CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, 93, inter, &st));
        CHECK(0 == st.MPI_SOURCE, "intercommunicator probe: source %d", st.MPI_SOURCE);
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 93, inter, &st));
        CHECK(33 == v, "intercommunicator probed message: %d", v);
    }
    free(big);
    free(in);
    free(out);
    free(seen);
    free(reqs);
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&half));
}

/* ------------------------------------------------------------------ zero bytes, self */

static void test_zero_and_self(void)
{
    if (0 == test_rank) {
        MPI_Request r[3];
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, 1, 40, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Ssend(NULL, 0, MPI_INT, 1, 41, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Isend(NULL, 0, MPI_INT, 1, 42, MPI_COMM_WORLD, &r[0]));
        CHECK_MPI(MPI_Issend(NULL, 0, MPI_INT, 1, 43, MPI_COMM_WORLD, &r[1]));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    } else if (1 == test_rank) {
        MPI_Status st;
        int flag = 0;
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 40, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 40, 0, MPI_INT);
        CHECK_MPI(MPI_Recv(rbuf, 10, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 41, 0, MPI_INT);
        do {
            CHECK_MPI(MPI_Iprobe(0, 42, MPI_COMM_WORLD, &flag, &st));
        } while (!flag);
        check_status(&st, 0, 42, 0, MPI_INT);
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 42, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 43, 0, MPI_INT);
    }

    /* Every rank to itself: through weft's self path, eager and rendezvous. */
    static const size_t lens[] = {0, 8, 4097, 1 << 20};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
        MPI_Request req;
        MPI_Status st;
        test_fill(sbuf, lens[k], test_rank, 50 + (long)k);
        CHECK_MPI(MPI_Isend(sbuf, (int)lens[k], MPI_BYTE, test_rank, 50, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Recv(rbuf, MAXSIZE, MPI_BYTE, test_rank, 50, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        check_status(&st, test_rank, 50, lens[k], MPI_BYTE);
        CHECK(test_verify(rbuf, lens[k], test_rank, 50 + (long)k) < 0, "self message of %zu B",
              lens[k]);
    }
    int a = test_rank * 3, b = -1;
    CHECK_MPI(MPI_Sendrecv(&a, 1, MPI_INT, test_rank, 51, &b, 1, MPI_INT, test_rank, 51,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(b == a, "sendrecv to self: %d", b);
}

/* ------------------------------------------------------------------ datatypes */

static void test_datatypes(void)
{
    enum { NB = 1000, BL = 3, STRIDE = 7, BIG = 100000 };
    MPI_Datatype vec, bigvec, idx, pair, pair_resized;
    MPI_Type_vector(NB, BL, STRIDE, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_vector(BIG, 2, 5, MPI_INT, &bigvec); /* 800 KB packed: rendezvous */
    MPI_Type_commit(&bigvec);
    MPI_Datatype smallvec;
    MPI_Type_vector(10, 1, STRIDE, MPI_INT, &smallvec); /* 40 bytes packed */
    MPI_Type_commit(&smallvec);
    int blens[3] = {2, 1, 4}, displs[3] = {0, 5, 9};
    MPI_Type_indexed(3, blens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    struct pair_s {
        double d;
        int i;
        char c[5];
    };
    int pbl[3] = {1, 1, 5};
    MPI_Aint pdisp[3] = {offsetof(struct pair_s, d), offsetof(struct pair_s, i),
                         offsetof(struct pair_s, c)};
    MPI_Datatype ptypes[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(3, pbl, pdisp, ptypes, &pair);
    MPI_Type_create_resized(pair, 0, sizeof(struct pair_s), &pair_resized);
    MPI_Type_commit(&pair_resized);

    int *strided = malloc(NB * STRIDE * sizeof(int));
    int *packed = malloc(NB * BL * sizeof(int));
    int *bigs = malloc((size_t)BIG * 5 * sizeof(int));
    struct pair_s *pairs = malloc(100 * sizeof(struct pair_s));

    if (0 == test_rank) {
        for (int i = 0; i < NB * STRIDE; ++i) {
            strided[i] = i;
        }
        for (int i = 0; i < NB * BL; ++i) {
            packed[i] = 100000 + i;
        }
        for (int i = 0; i < BIG * 5; ++i) {
            bigs[i] = 3 * i;
        }
        for (int i = 0; i < 100; ++i) {
            pairs[i].d = i * 0.5;
            pairs[i].i = -i;
            memcpy(pairs[i].c, "abcd", 5);
            pairs[i].c[0] = (char)('a' + i % 26);
        }
        int ix[16];
        for (int i = 0; i < 16; ++i) {
            ix[i] = 7 * i;
        }
        CHECK_MPI(MPI_Send(strided, 1, vec, 1, 60, MPI_COMM_WORLD)); /* vector -> contiguous */
        CHECK_MPI(MPI_Send(packed, NB * BL, MPI_INT, 1, 61, MPI_COMM_WORLD)); /* contig -> vector */
        CHECK_MPI(MPI_Send(bigs, 1, bigvec, 1, 62, MPI_COMM_WORLD));          /* vector -> vector */
        CHECK_MPI(MPI_Send(ix, 1, idx, 1, 63, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(pairs, 100, pair_resized, 1, 64, MPI_COMM_WORLD));
        MPI_Request req;
        CHECK_MPI(MPI_Issend(strided, 1, vec, 1, 65, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        /* Small non-contiguous sends (40 bytes packed), standard and buffered;
         * a large non-contiguous buffered send (packed into the attached buffer). */
        CHECK_MPI(MPI_Isend(strided, 1, smallvec, 1, 66, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Ibsend(strided, 1, smallvec, 1, 67, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Bsend(bigs, 1, bigvec, 1, 68, MPI_COMM_WORLD));
    } else if (1 == test_rank) {
        MPI_Status st;
        int count = -1;
        CHECK_MPI(MPI_Recv(packed, NB * BL, MPI_INT, 0, 60, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == NB * BL, "vector received as %d ints", count);
        for (int b = 0; b < NB; ++b) {
            for (int j = 0; j < BL; ++j) {
                CHECK(packed[b * BL + j] == b * STRIDE + j, "vector->contig block %d elem %d = %d",
                      b, j, packed[b * BL + j]);
            }
        }
        for (int i = 0; i < NB * STRIDE; ++i) {
            strided[i] = -1;
        }
        CHECK_MPI(MPI_Recv(strided, 1, vec, 0, 61, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, vec, &count);
        CHECK(count == 1, "contig received as %d vectors", count);
        for (int b = 0; b < NB; ++b) {
            for (int j = 0; j < STRIDE; ++j) {
                const int want = j < BL ? 100000 + b * BL + j : -1;
                CHECK(strided[b * STRIDE + j] == want, "contig->vector [%d] = %d, expected %d",
                      b * STRIDE + j, strided[b * STRIDE + j], want);
            }
        }
        for (int i = 0; i < BIG * 5; ++i) {
            bigs[i] = -7;
        }
        CHECK_MPI(MPI_Recv(bigs, 1, bigvec, 0, 62, MPI_COMM_WORLD, &st));
        for (int i = 0; i < BIG * 5; ++i) {
            const int want = (i % 5) < 2 ? 3 * i : -7;
            if (bigs[i] != want) {
                CHECK(0, "large vector [%d] = %d, expected %d", i, bigs[i], want);
            }
        }
        int ix[16];
        for (int i = 0; i < 16; ++i) {
            ix[i] = -1;
        }
        CHECK_MPI(MPI_Recv(ix, 7, MPI_INT, 0, 63, MPI_COMM_WORLD, &st));
        static const int want_ix[7] = {0, 7, 35, 63, 70, 77, 84};
        for (int i = 0; i < 7; ++i) {
            CHECK(ix[i] == want_ix[i], "indexed [%d] = %d, expected %d", i, ix[i], want_ix[i]);
        }
        memset(pairs, 0, 100 * sizeof(struct pair_s));
        CHECK_MPI(MPI_Recv(pairs, 100, pair_resized, 0, 64, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 100; ++i) {
            CHECK(pairs[i].d == i * 0.5 && pairs[i].i == -i && pairs[i].c[0] == 'a' + i % 26 &&
                      0 == memcmp(pairs[i].c + 1, "bcd", 4),
                  "struct element %d wrong", i);
        }
        CHECK_MPI(MPI_Recv(packed, NB * BL, MPI_INT, 0, 65, MPI_COMM_WORLD, &st));
        CHECK(packed[NB * BL - 1] == (NB - 1) * STRIDE + BL - 1, "synchronous vector send data");
        for (int tag = 66; tag <= 67; ++tag) {
            int small[10];
            CHECK_MPI(MPI_Recv(small, 10, MPI_INT, 0, tag, MPI_COMM_WORLD, &st));
            check_status(&st, 0, tag, 10, MPI_INT);
            for (int i = 0; i < 10; ++i) {
                CHECK(small[i] == i * STRIDE, "small vector (tag %d) [%d] = %d", tag, i, small[i]);
            }
        }
        for (int i = 0; i < BIG * 5; ++i) {
            bigs[i] = -9;
        }
        CHECK_MPI(MPI_Recv(bigs, 1, bigvec, 0, 68, MPI_COMM_WORLD, &st));
        for (int i = 0; i < BIG * 5; ++i) {
            const int want = (i % 5) < 2 ? 3 * i : -9;
            if (bigs[i] != want) {
                CHECK(0, "buffered large vector [%d] = %d, expected %d", i, bigs[i], want);
            }
        }
    }
    free(strided);
    free(packed);
    free(bigs);
    free(pairs);
    MPI_Type_free(&vec);
    MPI_Type_free(&bigvec);
    MPI_Type_free(&smallvec);
    MPI_Type_free(&idx);
    MPI_Type_free(&pair);
    MPI_Type_free(&pair_resized);
}

/* ------------------------------------------------------------------ communicators */

static void test_communicators(void)
{
    enum { NCOMM = 500 };
    MPI_Comm *comms = malloc(NCOMM * sizeof(MPI_Comm));
    MPI_Request *reqs = malloc(NCOMM * sizeof(MPI_Request));
    int *vals = malloc(NCOMM * sizeof(int));
    for (int i = 0; i < NCOMM; ++i) {
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
    }
    /* The same (source, tag) on every communicator: each message stays in its own. */
    if (0 == test_rank) {
        for (int i = 0; i < NCOMM; ++i) {
            vals[i] = i;
            CHECK_MPI(MPI_Isend(&vals[i], 1, MPI_INT, 1, 0, comms[i], &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(NCOMM, reqs, MPI_STATUSES_IGNORE));
    } else if (1 == test_rank) {
        for (int i = NCOMM - 1; i >= 0; --i) {
            vals[i] = -1;
            const int src = (i % 2) ? 0 : MPI_ANY_SOURCE;
            const int tag = (i % 3) ? 0 : MPI_ANY_TAG;
            CHECK_MPI(MPI_Irecv(&vals[i], 1, MPI_INT, src, tag, comms[i], &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(NCOMM, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < NCOMM; ++i) {
            CHECK(vals[i] == i, "communicator %d received the value of communicator %d", i,
                  vals[i]);
        }
    }
    for (int i = 0; i < NCOMM; ++i) {
        CHECK_MPI(MPI_Comm_free(&comms[i]));
    }

    /* Split with reversed keys: ranks (and MPI_SOURCE) are those of the new communicator. */
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank % 2, -test_rank, &half));
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    const int next = (hr + 1) % hs, prev = (hr + hs - 1) % hs;
    int out[2] = {hr, test_rank}, in[2] = {-1, -1};
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, 2, MPI_INT, next, 3, in, 2, MPI_INT, MPI_ANY_SOURCE, 3, half, &st));
    CHECK(st.MPI_SOURCE == prev && in[0] == prev, "split communicator: source %d value %d, rank %d",
          st.MPI_SOURCE, in[0], prev);
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&test_rank, &sum, 1, MPI_INT, MPI_SUM, half));
    int want = 0;
    for (int r = test_rank % 2; r < test_size; r += 2) {
        want += r;
    }
    CHECK(sum == want, "allreduce on a split communicator: %d, expected %d", sum, want);
    CHECK_MPI(MPI_Comm_free(&half));
    free(comms);
    free(reqs);
    free(vals);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK(test_size >= 2, "needs at least 2 ranks");
    sbuf = malloc(MAXSIZE + 300000);
    rbuf = malloc(MAXSIZE + 1);
    size_t bsize = 4 * (MAXSIZE + MPI_BSEND_OVERHEAD);
    void *battach = malloc(bsize);
    CHECK_MPI(MPI_Buffer_attach(battach, (int)bsize));

    test_section("send modes, receive posted first");
    test_modes_expected();
    test_section("nonblocking send modes, unexpected");
    test_modes_unexpected();
    test_section("synchronous sends complete only once matched");
    test_ssend_waits_for_match();
    test_section("MPI_ANY_SOURCE / MPI_ANY_TAG");
    test_any_source_any_tag();
    test_section("wildcard receive posted during collectives");
    test_wildcard_vs_collectives();
    test_section("ordering under wildcards");
    test_ordering();
    test_section("probe");
    test_probe();
    test_section("matched probe");
    test_mprobe();
    test_section("cancel");
    test_cancel();
    test_section("truncation");
    test_truncate();
    test_section("zero-byte messages, messages to self");
    test_zero_and_self();
    test_section("derived datatypes");
    test_datatypes();
    test_section("many communicators");
    test_communicators();
    test_section("persistent requests");
    test_persistent();
    test_section("MPI_Request_free of active requests");
    test_free_active();
    test_section("MPI_PROC_NULL");
    test_proc_null();
    test_section("intercommunicators");
    test_intercomm();

    int bs = 0;
    void *bp = NULL;
    CHECK_MPI(MPI_Buffer_detach(&bp, &bs));
    free(battach);
    free(sbuf);
    free(rbuf);
    return test_finish("mpi_p2p");
}
