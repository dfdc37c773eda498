// Tests of what is specific to the verbs transport (docs/verbs.md), over real
// queue pairs: the registration cache with addresses reused after munmap/free
// (a stale registration would make RDMA move the wrong pages), both sides
// connecting at once, a peer that computes through the handshake, a peer
// killed with operations in flight, a forged remote key, weft_mr_reg on a
// verbs domain. The generic transport tests
// (test_transport, test_variable, test_credit_flow) also run over verbs.
// Without an active RDMA port every test skips with the reason; `make
// check-verbs` runs them in a Soft-RoCE VM (test/transport/verbs/run_verbs_vm.sh).

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/objects.hpp"
#include "proto/key.hpp"
#include "proto/rndv.hpp"
#include "proto/tag.hpp"
#include "proto/wire.hpp"
#include "test/log_expect.hpp"
#include "test/transport/harness.hpp"
#include "transport/verbs/verbs.hpp"

namespace {

namespace verbs = weft::transport::verbs;
using weft::test::check_payload;
using weft::test::fill_byte;
using weft::test::fill_pattern;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * 1024;

class verbs_test : public ::testing::Test {
  protected:
    void SetUp() override
    {
        const std::string why = weft::test::transport_unavailable("verbs", weft::test::base_caps);
        if (!why.empty()) {
            GTEST_SKIP() << why;
        }
    }
    [[nodiscard]] ::testing::AssertionResult run(int nranks, const weft::test::rank_body &body,
                                                 const weft::test::run_options &opt = {})
    {
        return weft::test::run_ranks(nranks, "verbs", body, opt);
    }
};

/// The endpoint's verbs transport (internal: the tests link libweft_internal).
weft::transport::iface *verbs_of(weft_ep_t *ep)
{
    const auto &ch = ep->stack->ch;
    for (unsigned i = 0; i < ch.tl_count(); ++i) {
        if (std::strcmp(ep->domain->resources[i].comp->name, "verbs") == 0) {
            return ch.tl(i);
        }
    }
    return nullptr;
}

/// mmap `len` bytes at exactly `at` (or anywhere if null); never replaces a mapping.
void *map_at(void *at, std::size_t len)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at != nullptr ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    WEFT_TCHECK_MSG(p != MAP_FAILED, std::string("mmap: ") + std::strerror(errno));
    WEFT_TCHECK_MSG(at == nullptr || p == at, "the kernel would not map the address again");
    return p;
}

// Rendezvous messages whose buffers, on both sides, are unmapped and mapped again
// at the same address with new contents between messages (and, in a second
// round, freed with madvise(MADV_DONTNEED) and refilled). A cache that kept the
// old registration would read or write the old physical pages: the receiver
// would see the previous message's bytes, or nothing. Also checks that the
// cache is in use at all (hits for a reused buffer) and saw the invalidations.
TEST_F(verbs_test, registration_cache_is_correct_when_addresses_are_reused)
{
    weft::test::run_options opt;
    opt.timeout_s = 300;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            const std::size_t len = 1 * mib + 4 * kib + 3;  // above the rendezvous threshold
            WEFT_TCHECK(len > c.rndv_threshold);
            const std::size_t map_len = 2 * mib;
            const int other = 1 - c.rank;
            weft::transport::iface *tl = verbs_of(c.ep);
            WEFT_TCHECK(tl != nullptr);
            const verbs::stats before = verbs::get_stats(*tl);

            void *const at = map_at(nullptr, map_len);
            for (int round = 0; round < 2; ++round) {
                for (int it = 0; it < 6; ++it) {
                    auto *buf = static_cast<unsigned char *>(at);
                    if (it > 0 && round == 0) {
                        WEFT_TCHECK_OK(munmap(at, map_len));
                        buf = static_cast<unsigned char *>(map_at(at, map_len));
                    } else if (it > 0) {
                        WEFT_TCHECK_OK(madvise(at, map_len, MADV_DONTNEED));
                    }
                    const std::uint64_t tag = 0x5000 + round * 16 + it;
                    // Each message alternates direction, so both sides register buffers
                    // both for sending (exposed for RDMA read) and for receiving.
                    const int sender = it % 2;
                    if (c.rank == sender) {
                        fill_pattern(buf, len, seed_of(round, it, 77));
                        c.barrier();  // the receive is posted
                        c.post("tsend", [&] {
                            return weft_tsend(c.ep, buf, len, nullptr, c.peer(other), tag,
                                              op_ctx(1));
                        });
                        (void)c.wait_ok(op_ctx(1));
                    } else {
                        std::memset(buf, fill_byte, len + 64);
                        c.post("trecv", [&] {
                            return weft_trecv(c.ep, buf, len + 64, nullptr, c.peer(other), tag, 0,
                                              op_ctx(2));
                        });
                        c.barrier();
                        const weft_cq_tagged_entry r = c.wait_ok(op_ctx(2));
                        WEFT_TCHECK_EQ(r.len, len);
                        check_payload(
                            buf, len, len + 64, seed_of(round, it, 77),
                            "round " + std::to_string(round) + " message " + std::to_string(it));
                    }
                    c.barrier();
                }
            }
            // The same buffer again, unchanged: the cache must serve it.
            std::vector<unsigned char> steady(len + 64);
            for (int it = 0; it < 4; ++it) {
                const std::uint64_t tag = 0x6000 + it;
                if (c.rank == 0) {
                    fill_pattern(steady.data(), len, seed_of(9, it));
                    c.barrier();
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, steady.data(), len, nullptr, c.peer(other), tag,
                                          op_ctx(3));
                    });
                    (void)c.wait_ok(op_ctx(3));
                } else {
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, steady.data(), len + 64, nullptr, c.peer(other),
                                          tag, 0, op_ctx(4));
                    });
                    c.barrier();
                    (void)c.wait_ok(op_ctx(4));
                    check_payload(steady.data(), len, len, seed_of(9, it), "steady buffer");
                }
                c.barrier();
            }
            WEFT_TCHECK_OK(munmap(at, map_len));
            const verbs::stats after = verbs::get_stats(*tl);
            WEFT_TCHECK_MSG(
                after.rcache_hits - before.rcache_hits >= 3,
                "a reused buffer was registered again each time: the cache is not in use (" +
                    std::to_string(after.rcache_hits - before.rcache_hits) + " hits)");
            WEFT_TCHECK_MSG(
                after.rcache_invalidations - before.rcache_invalidations >= 5,
                "unmapped or discarded registered memory did not invalidate the cache (" +
                    std::to_string(after.rcache_invalidations - before.rcache_invalidations) +
                    " invalidations)");
        },
        opt));
}

// Both ranks send their first message to each other at the same moment, before
// any connection exists: both handshakes cross. Exactly one pair of queue pairs
// must result: each side's remote QPN is the other side's local QPN. Repeated
// with fresh processes, since whether the requests really cross is a race.
TEST_F(verbs_test, simultaneous_connect_ends_with_one_connection)
{
    bool crossed = false;
    for (int round = 0; round < 4; ++round) {
        ASSERT_TRUE(run(2, [&](rank_ctx &c) {
            const int other = 1 - c.rank;
            weft::transport::iface *tl = verbs_of(c.ep);
            WEFT_TCHECK(tl != nullptr);
            std::uint64_t in[2] = {};
            c.post("trecv", [&] {
                return weft_trecv(c.ep, in, sizeof(in), nullptr, c.peer(other), 1, 0, op_ctx(1));
            });
            c.barrier();
            const std::uint64_t hello[2] = {1, 2};
            c.post("tsend", [&] {
                return weft_tsend(c.ep, hello, sizeof(hello), nullptr, c.peer(other), 1, op_ctx(2));
            });
            (void)c.wait_ok(op_ctx(1));
            (void)c.wait_ok(op_ctx(2));
            // Connection 0 is the only one (to the other rank).
            const verbs::conn_info ci = verbs::get_conn_info(*tl, 0);
            WEFT_TCHECK(ci.ready);
            WEFT_TCHECK(ci.local_qpn != 0 && ci.remote_qpn != 0);
            const verbs::stats s = verbs::get_stats(*tl);
            WEFT_TCHECK_EQ(s.connects_started + s.connects_accepted, 1ULL);  // one connection
            std::uint64_t mine[2] = {ci.local_qpn, ci.remote_qpn};
            std::uint64_t theirs[2] = {};
            c.post("trecv", [&] {
                return weft_trecv(c.ep, theirs, sizeof(theirs), nullptr, c.peer(other), 2, 0,
                                  op_ctx(3));
            });
            c.barrier();
            c.post("tsend", [&] {
                return weft_tsend(c.ep, mine, sizeof(mine), nullptr, c.peer(other), 2, op_ctx(4));
            });
            (void)c.wait_ok(op_ctx(3));
            (void)c.wait_ok(op_ctx(4));
            WEFT_TCHECK_EQ(theirs[0], mine[1]);  // their local is my remote
            WEFT_TCHECK_EQ(theirs[1], mine[0]);
            if (s.connects_crossed != 0) {
                std::printf("handshakes crossed (round %d, rank %d)\n", round, c.rank);
            }
        }));
        (void)crossed;
    }
}

// A put with CQ data that fits the immediate goes as one RDMA write with
// immediate (no rma_event message after it); larger data, and a put longer
// than one request, fall back to the message. Either way the target sees each
// put's data once its bytes are in place, in order, and counts it on its
// remote-write counter (WEFT_MR_RMA_EVENT region). A burst with no waiting
// runs the credit rule (put_imm spends a credit; with the last one, the
// message carries the returns).
TEST_F(verbs_test, put_with_cq_data_travels_as_a_write_with_immediate)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    opt.timeout_s = 300;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            const int other = 1 - c.rank;
            constexpr std::size_t len = 5 * mib;  // the puts below, then the burst at 4 MiB
            void *mem = map_at(nullptr, len);
            std::memset(mem, 0, len);
            weft_mr_t *mr = nullptr;
            WEFT_TCHECK_OK(
                weft_mr_reg(c.domain, mem, len, WEFT_ACCESS_REMOTE_WRITE, WEFT_MR_RMA_EVENT, &mr));
            struct keymsg {
                std::uint64_t base;
                std::uint64_t len;
                std::uint8_t key[WEFT_MR_KEY_MAX];
            } mine{reinterpret_cast<std::uint64_t>(mem), sizeof(keymsg::key), {}}, theirs{};
            WEFT_TCHECK_OK(weft_mr_pack_key(mr, mine.key, &mine.len));
            c.post("key recv", [&] {
                return weft_trecv(c.ep, &theirs, sizeof(theirs), nullptr, c.peer(other), 7, 0,
                                  op_ctx(1));
            });
            c.post("key send", [&] {
                return weft_tsend(c.ep, &mine, sizeof(mine), nullptr, c.peer(other), 7, op_ctx(2));
            });
            (void)c.wait_ok(op_ctx(1));
            (void)c.wait_ok(op_ctx(2));
            weft_rkey_t *key = nullptr;
            WEFT_TCHECK(theirs.len <= sizeof(theirs.key));
            WEFT_TCHECK_OK(weft_rkey_unpack(c.ep, c.peer(other), theirs.key, theirs.len, &key));
            weft::transport::iface *tl = verbs_of(c.ep);
            WEFT_TCHECK(tl != nullptr);
            // The puts: (length, data, offset). 1 MiB is READ_CHUNK, the largest
            // write with immediate; 2^30 - 1 is the largest data the immediate holds.
            struct put {
                std::size_t len;
                std::uint64_t data;
                std::size_t off;
                bool imm;
            };
            const std::uint64_t max_imm = (1u << 30) - 1;
            const std::vector<put> puts{{64, 1, 0, true},
                                        {0, 2, 0, true},
                                        {4096, max_imm, 4096, true},
                                        {4096, max_imm + 1, 8192, false},
                                        {8, ~0ULL, 16384, false},
                                        {mib, 0x1234, mib, true},
                                        {2 * mib, 0x5678, 2 * mib, false}};
            constexpr std::uint64_t burst = 400;  // 8-byte puts with data, none waited for
            std::vector<std::uint8_t> src(2 * mib);
            if (c.rank == 0) {
                const verbs::stats before = verbs::get_stats(*tl);
                std::uint64_t n = 10;
                for (const put &p : puts) {
                    fill_pattern(src.data(), p.len, seed_of(p.data));
                    c.post("putdata", [&] {
                        return weft_putdata(c.ep, src.data(), p.len, nullptr, p.data,
                                            theirs.base + p.off, key, op_ctx(n));
                    });
                    (void)c.wait_ok(op_ctx(n++));
                }
                const verbs::stats mid = verbs::get_stats(*tl);
                std::uint64_t want = 0;
                for (const put &p : puts) {
                    want += p.imm ? 1 : 0;
                }
                WEFT_TCHECK_EQ(mid.writes_imm - before.writes_imm, want);
                std::vector<std::uint64_t> words(burst);
                for (std::uint64_t i = 0; i < burst; ++i) {
                    words[i] = i * 3 + 1;
                    c.post("putdata burst", [&] {
                        return weft_putdata(c.ep, &words[i], 8, nullptr, 1000 + i,
                                            theirs.base + 4 * mib + i * 8, key, op_ctx(1000 + i));
                    });
                }
                for (std::uint64_t i = 0; i < burst; ++i) {
                    (void)c.wait_ok(op_ctx(1000 + i));
                }
                const verbs::stats after = verbs::get_stats(*tl);
                std::printf(
                    "writes with immediate: %llu of %zu single puts, %llu of %llu in the "
                    "burst\n",
                    static_cast<unsigned long long>(mid.writes_imm - before.writes_imm),
                    puts.size(), static_cast<unsigned long long>(after.writes_imm - mid.writes_imm),
                    static_cast<unsigned long long>(burst));
                WEFT_TCHECK(after.writes_imm - mid.writes_imm >= 1);
                WEFT_TCHECK(after.writes_imm - mid.writes_imm <= burst);
            } else {
                const auto *m = static_cast<const std::uint8_t *>(mem);
                for (const put &p : puts) {
                    const weft_cq_tagged_entry e = c.wait_ok(nullptr);
                    WEFT_TCHECK_EQ(e.flags, WEFT_RMA | WEFT_REMOTE_WRITE | WEFT_REMOTE_CQ_DATA);
                    WEFT_TCHECK_EQ(e.data, p.data);
                    WEFT_TCHECK_EQ(e.len, p.len);
                    fill_pattern(src.data(), p.len, seed_of(p.data));
                    WEFT_TCHECK(std::memcmp(m + p.off, src.data(), p.len) == 0);
                }
                for (std::uint64_t i = 0; i < burst; ++i) {
                    const weft_cq_tagged_entry e = c.wait_ok(nullptr);
                    WEFT_TCHECK_EQ(e.data, 1000 + i);
                    WEFT_TCHECK_EQ(e.len, std::size_t{8});
                    std::uint64_t w = 0;
                    std::memcpy(&w, m + 4 * mib + i * 8, 8);
                    WEFT_TCHECK_EQ(w, i * 3 + 1);
                }
                const std::uint64_t total = puts.size() + burst;
                WEFT_TCHECK_OK(weft_cntr_wait(c.rwrite_cntr, total, 30000));
                WEFT_TCHECK_EQ(weft_cntr_read(c.rwrite_cntr), total);
            }
            c.barrier();
            WEFT_TCHECK_OK(weft_rkey_release(key));
            WEFT_TCHECK_OK(weft_mr_close(mr));
            munmap(mem, len);
        },
        opt));
}

// A peer dies (_exit: no clean close, the kernel destroys its queue pairs) while a rendezvous send
// to it is waiting for its read and a directed receive from it is posted: both fail with an error
// completion, within the keepalive and retry bounds, never hang.
TEST_F(verbs_test, killed_peer_fails_outstanding_operations)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            const std::size_t len = 256 * kib;
            std::vector<unsigned char> buf(len);
            if (c.rank == 1) {
                std::uint64_t x = 0;
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, &x, sizeof(x), nullptr, c.peer(0), 9, 0, op_ctx(1));
                });
                c.barrier();  // connected (below), then die without reading anything
                c.barrier();
                std::fflush(stdout);
                _exit(0);
            }
            // Rank 0: connect, then post a rendezvous send rank 1 never reads, and a
            // receive rank 1 never satisfies.
            const std::uint64_t one = 1;
            c.barrier();
            c.post("tsend", [&] {
                return weft_tsend(c.ep, &one, sizeof(one), nullptr, c.peer(1), 9, op_ctx(2));
            });
            (void)c.wait_ok(op_ctx(2));
            fill_pattern(buf.data(), len, 5);
            c.post("tsend", [&] {
                return weft_tsend(c.ep, buf.data(), len, nullptr, c.peer(1), 10, op_ctx(3));
            });
            std::uint64_t y = 0;
            c.post("trecv", [&] {
                return weft_trecv(c.ep, &y, sizeof(y), nullptr, c.peer(1), 11, 0, op_ctx(4));
            });
            c.barrier();
            const weft_cq_err_entry e1 = c.wait_err(op_ctx(3), 60000);
            WEFT_TCHECK_EQ(e1.err, WEFT_EHOSTUNREACH);
            const weft_cq_err_entry e2 = c.wait_err(op_ctx(4), 60000);
            WEFT_TCHECK_EQ(e2.err, WEFT_EHOSTUNREACH);
            c.final_barrier = false;
        },
        opt));
}

// The connection agent answers the handshake while the application computes
// (docs/verbs.md "The connection agent"). CONNECT_TIMEOUT is 1 s, and one side
// sleeps 3 s without calling weft: the requester right after its first send
// (before the agent, the responder failed the half-made connection: "the
// requester never confirmed the connection"), or the responder while the
// requester connects to it (the requester failed: "no answer to the connection
// request"). Both ways the message must arrive, the reply come back, and no
// connection fail; exactly one handshake per side.
TEST_F(verbs_test, a_peer_that_computes_through_the_handshake_keeps_its_connection)
{
    weft::test::run_options opt;
    opt.config = {{"VERBS_CONNECT_TIMEOUT", "1s"}};
    opt.timeout_s = 120;
    for (int busy = 0; busy < 2; ++busy) {
        ASSERT_TRUE(run(
            2,
            [&](rank_ctx &c) {
                weft::transport::iface *tl = verbs_of(c.ep);
                WEFT_TCHECK(tl != nullptr);
                const std::uint64_t out = 0x5eed0000u + static_cast<unsigned>(c.rank);
                std::uint64_t in = 0;
                c.barrier();
                if (c.rank == 0) {
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, &out, sizeof(out), nullptr, c.peer(1), 7,
                                          op_ctx(1));
                    });
                    if (busy == 0) {
                        std::printf("requester computes for 3 s\n");
                        sleep(3);  // no weft call: only the agent answers the responder
                    }
                    (void)c.wait_ok(op_ctx(1));
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, &in, sizeof(in), nullptr, c.peer(1), 8, 0,
                                          op_ctx(2));
                    });
                    (void)c.wait_ok(op_ctx(2));
                    WEFT_TCHECK_EQ(in, 0x5eed0001ULL);
                } else {
                    if (busy == 1) {
                        std::printf("responder computes for 3 s\n");
                        sleep(3);  // no weft call: only the agent answers the requester
                    }
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, &in, sizeof(in), nullptr, WEFT_ADDR_UNSPEC, 7, 0,
                                          op_ctx(1));
                    });
                    (void)c.wait_ok(op_ctx(1));
                    WEFT_TCHECK_EQ(in, 0x5eed0000ULL);
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, &out, sizeof(out), nullptr, c.peer(0), 8,
                                          op_ctx(2));
                    });
                    (void)c.wait_ok(op_ctx(2));
                }
                const verbs::stats s = verbs::get_stats(*tl);
                WEFT_TCHECK_EQ(s.conns_failed, 0ULL);
                WEFT_TCHECK_EQ(s.connects_started + s.connects_accepted, 1ULL);
            },
            opt));
    }
}

// A rendezvous header with a forged remote key: the reader's RDMA read is
// refused by the sender's device. The receive fails with WEFT_EACCES and a
// readable message; neither side crashes or hangs.
TEST_F(verbs_test, forged_remote_key_fails_the_receive)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            const std::size_t len = 128 * kib;
            std::vector<unsigned char> buf(len);
            if (c.rank == 1) {
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, buf.data(), len, nullptr, c.peer(0), 0x77, 0,
                                      op_ctx(1));
                });
                c.barrier();
                const weft_cq_err_entry e = c.wait_err(op_ctx(1));
                WEFT_TCHECK_EQ(e.err, WEFT_EACCES);
                WEFT_TCHECK(std::strlen(e.err_str) > 0);
                c.final_barrier = false;
                return;
            }
            // Rank 0 sends a real message first (to connect), then a raw rts
            // through its transport, naming its buffer with a key that is not one.
            const std::uint64_t one = 1;
            c.barrier();
            weft::transport::iface *tl = verbs_of(c.ep);
            WEFT_TCHECK(tl != nullptr);
            weft::transport::address peer;
            WEFT_TCHECK(c.ep->av->lookup(c.peer(1), peer) == weft::base::status::ok);
            weft::transport::conn_id conn = 0;
            WEFT_TCHECK(tl->connect(peer, conn) == weft::base::status::ok);
            c.post("tsend", [&] {
                return weft_tsend(c.ep, &one, sizeof(one), nullptr, c.peer(1), 0x1, op_ctx(5));
            });
            (void)c.wait_ok(op_ctx(5));
            // An rts (header + the tag module's match bytes) naming our buffer with a
            // key that is no key of ours.
            weft::proto::rndv_rts_hdr h{};
            h.sreq = 0x1234;
            h.total_len = len;
            h.addr = reinterpret_cast<std::uint64_t>(buf.data());
            const std::uint32_t forged = 0xdead;
            std::memcpy(h.rkey, &forged, sizeof(forged));
            h.rkey_len = sizeof(forged);
            h.flags = weft::proto::rts_flag_get;
            h.match_len = sizeof(weft::proto::tag_match);
            const weft::proto::tag_match m{0x77, 0, 0, 0};
            unsigned char msg[sizeof(h) + sizeof(m)];
            std::memcpy(msg, &h, sizeof(h));
            std::memcpy(msg + sizeof(h), &m, sizeof(m));
            // Unmetered (an rts spends no credit), no credit prefix.
            for (;;) {
                const weft::base::status st = weft::transport::send_short(
                    tl, conn, weft::transport::make_am(unsigned(weft::proto::am_id::rndv_rts), 0),
                    msg, sizeof(msg), nullptr, 0);
                if (st == weft::base::status::ok) {
                    break;
                }
                WEFT_TCHECK(st == weft::base::status::again);
                c.poll();
            }
            c.progress_for(3000);
            c.final_barrier = false;
            c.check_unclaimed = false;
        },
        opt));
}

// fork() with registered memory: after rank 0's buffers are registered (a first
// rendezvous message), it forks a child that writes to every page of them and
// exits. A kernel without copy-on-fork for pinned pages would give the parent
// the copies and leave the device writing the child's pages; weft does not call
// ibv_fork_init where the kernel handles it (ibv_is_fork_initialized() says
// IBV_FORK_UNNEEDED here), and the next messages must land in the parent's buffer.
TEST_F(verbs_test, fork_after_registration_keeps_data_correct)
{
    ASSERT_TRUE(run(2, [](rank_ctx &c) {
        const std::size_t len = 512 * kib;
        const int other = 1 - c.rank;
        std::vector<unsigned char> buf(len + 64);
        for (int it = 0; it < 3; ++it) {
            const std::uint64_t tag = 0x7000 + it;
            if (c.rank == 1) {
                fill_pattern(buf.data(), len, seed_of(it, 0xf0));
                c.barrier();
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, buf.data(), len, nullptr, c.peer(other), tag,
                                      op_ctx(1));
                });
                (void)c.wait_ok(op_ctx(1));
                c.barrier();
                continue;
            }
            std::memset(buf.data(), fill_byte, len + 64);
            if (it > 0) {
                const pid_t child = fork();
                WEFT_TCHECK(child >= 0);
                if (child == 0) {
                    for (std::size_t i = 0; i < buf.size(); i += 4096) {
                        buf[i] = 0x11;  // copy-on-write of every page
                    }
                    _exit(0);
                }
                int st = 0;
                WEFT_TCHECK_EQ(waitpid(child, &st, 0), child);
                WEFT_TCHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
                WEFT_TCHECK_EQ(static_cast<int>(ibv_is_fork_initialized()),
                               static_cast<int>(IBV_FORK_UNNEEDED));
            }
            c.post("trecv", [&] {
                return weft_trecv(c.ep, buf.data(), len + 64, nullptr, c.peer(other), tag, 0,
                                  op_ctx(2));
            });
            c.barrier();
            const weft_cq_tagged_entry r = c.wait_ok(op_ctx(2));
            WEFT_TCHECK_EQ(r.len, len);
            check_payload(buf.data(), len, len + 64, seed_of(it, 0xf0),
                          "message " + std::to_string(it) + " after fork");
            c.barrier();
        }
    }));
}

// weft_mr_reg on a verbs domain registers with the port's protection domain: the
// key is a real remote key, a second registration gets another, and close works.
TEST_F(verbs_test, mr_reg_on_a_verbs_domain)
{
    weft_info *hints = weft_info_alloc();
    std::snprintf(hints->transport, sizeof(hints->transport), "verbs");
    weft_info *info = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info), 0);
    weft_info_free(hints);
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    ASSERT_EQ(weft_fabric_open(info, nullptr, &fabric), 0);
    ASSERT_EQ(weft_domain_open(fabric, info, &domain), 0);
    std::vector<unsigned char> a(64 * kib), b(4 * kib);
    weft_mr_t *ma = nullptr;
    weft_mr_t *mb = nullptr;
    ASSERT_EQ(weft_mr_reg(domain, a.data(), a.size(), WEFT_ACCESS_REMOTE_READ, 0, &ma), 0);
    ASSERT_EQ(weft_mr_reg(domain, b.data(), b.size(), WEFT_ACCESS_REMOTE_WRITE, 0, &mb), 0);
    EXPECT_NE(weft_mr_key(ma), weft_mr_key(mb));
    // The packed key has the verbs part: the port's rkey of the registration.
    unsigned char key[WEFT_MR_KEY_MAX];
    std::size_t klen = sizeof(key);
    ASSERT_EQ(weft_mr_pack_key(ma, key, &klen), 0);
    ASSERT_EQ(ma->handles.size(), 1U);
    const auto *mr = reinterpret_cast<const ibv_mr *>(ma->handles[0]);
    weft::proto::key_view v;
    ASSERT_EQ(weft::proto::parse_key(key, klen, v), weft::base::status::ok);
    const std::uint8_t *part = nullptr;
    std::size_t part_len = 0;
    ASSERT_TRUE(v.find(3, part, part_len));  // the verbs wire id
    ASSERT_EQ(part_len, 4U);
    std::uint32_t rkey = 0;
    std::memcpy(&rkey, part, sizeof(rkey));
    EXPECT_EQ(rkey, mr->rkey);
    // Memory that does not exist cannot be registered: an error, not a crash.
    weft_mr_t *bad = nullptr;
    {
        weft::test::expect_log_errors expect(1);  // the library says why
        EXPECT_NE(weft_mr_reg(domain, reinterpret_cast<void *>(0x10), 4096, 0, 0, &bad), 0);
    }
    EXPECT_EQ(weft_mr_close(ma), 0);
    EXPECT_EQ(weft_mr_close(mb), 0);
    EXPECT_EQ(weft_domain_close(domain), 0);
    EXPECT_EQ(weft_fabric_close(fabric), 0);
    weft_info_free(info);
}

// getinfo reports one verbs entry per active port, named by the port.
TEST_F(verbs_test, getinfo_lists_each_port_as_a_domain)
{
    weft_info *hints = weft_info_alloc();
    std::snprintf(hints->transport, sizeof(hints->transport), "verbs");
    weft_info *info = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info), 0);
    std::vector<std::string> names;
    for (const weft_info *i = info; i != nullptr; i = i->next) {
        EXPECT_STREQ(i->transport, "verbs");
        names.emplace_back(i->domain_name);
    }
    ASSERT_EQ(names.size(), verbs::all_active_ports().size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(names[i], verbs::all_active_ports()[i].name);
    }
    // A domain name in the hints selects that port only.
    std::snprintf(hints->domain_name, sizeof(hints->domain_name), "%s", names.back().c_str());
    weft_info *one = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &one), 0);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(one->next, nullptr);
    EXPECT_EQ(std::string(one->domain_name), names.back());
    std::snprintf(hints->domain_name, sizeof(hints->domain_name), "no-such-port");
    weft_info *none = nullptr;
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &none), -WEFT_ENODEV);
    weft_info_free(one);
    weft_info_free(info);
    weft_info_free(hints);
}

}  // namespace
