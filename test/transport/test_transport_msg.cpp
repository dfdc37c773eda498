// Transport-level message tests over the public API: ping-pong over every size,
// fan-in with any-source receives, ordering, unexpected messages, iovecs,
// inject and remote CQ data. Each test runs over every transport (harness.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <sched.h>
#include <string>
#include <thread>
#include <vector>

#include "test/transport/harness.hpp"

namespace {

using weft::test::check_payload;
using weft::test::fill_byte;
using weft::test::fill_pattern;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * 1024;

class transport_msg : public transport_test {};

std::vector<std::size_t> ping_pong_sizes()
{
    std::vector<std::size_t> v{0, 3, 63, 65, 4095, 8193, mib + 7};
    for (std::size_t s = 1; s <= 16 * mib; s *= 2) {
        v.push_back(s);
    }
    std::sort(v.begin(), v.end());
    return v;
}

// Rank 0 sends a pattern that depends on size, rank and iteration; rank 1 checks it
// and answers with its own pattern. In loopback mode rank 0 receives its own message.
TEST_P(transport_msg, ping_pong_every_size_0_to_16mib)
{
    weft::test::run_options opt;
    opt.timeout_s = 240;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            WEFT_TCHECK_MSG(c.max_msg_size >= 16 * mib,
                            "max_msg_size " + std::to_string(c.max_msg_size) + " < 16 MiB");
            const int other = c.loopback ? 0 : 1 - c.rank;
            std::vector<unsigned char> sbuf(16 * mib);
            std::vector<unsigned char> rbuf(16 * mib + 64);
            for (const std::size_t size : ping_pong_sizes()) {
                const int iters = size >= mib ? 2 : size >= 64 * kib ? 4 : 10;
                for (int it = 0; it < iters; ++it) {
                    const std::uint64_t tag = (static_cast<std::uint64_t>(size) << 8) | it;
                    const std::string what =
                        "size " + std::to_string(size) + " iteration " + std::to_string(it);
                    std::memset(rbuf.data(), fill_byte, size + 64);
                    if (c.rank == 0) {
                        c.post("trecv", [&] {
                            return weft_trecv(c.ep, rbuf.data(), size, nullptr, c.peer(other), tag,
                                              0, op_ctx(1));
                        });
                        fill_pattern(sbuf.data(), size, seed_of(size, 0, it));
                        c.post("tsend", [&] {
                            return weft_tsend(c.ep, sbuf.data(), size, nullptr, c.peer(other), tag,
                                              op_ctx(2));
                        });
                        weft_addr_t src = 0;
                        const weft_cq_tagged_entry r = c.wait_ok(op_ctx(1), &src);
                        WEFT_TCHECK_EQ(r.len, size);
                        WEFT_TCHECK_EQ(r.tag, tag);
                        WEFT_TCHECK_EQ(src, c.peer(other));
                        WEFT_TCHECK((r.flags & (WEFT_RECV | WEFT_TAGGED)) ==
                                    (WEFT_RECV | WEFT_TAGGED));
                        check_payload(rbuf.data(), size, size + 64, seed_of(size, other, it), what);
                        const weft_cq_tagged_entry s = c.wait_ok(op_ctx(2));
                        WEFT_TCHECK((s.flags & (WEFT_SEND | WEFT_TAGGED)) ==
                                    (WEFT_SEND | WEFT_TAGGED));
                    } else {
                        c.post("trecv", [&] {
                            return weft_trecv(c.ep, rbuf.data(), size, nullptr, c.peer(0), tag, 0,
                                              op_ctx(1));
                        });
                        weft_addr_t src = 0;
                        const weft_cq_tagged_entry r = c.wait_ok(op_ctx(1), &src);
                        WEFT_TCHECK_EQ(r.len, size);
                        WEFT_TCHECK_EQ(r.tag, tag);
                        WEFT_TCHECK_EQ(src, c.peer(0));
                        check_payload(rbuf.data(), size, size + 64, seed_of(size, 0, it), what);
                        fill_pattern(sbuf.data(), size, seed_of(size, 1, it));
                        c.post("tsend", [&] {
                            return weft_tsend(c.ep, sbuf.data(), size, nullptr, c.peer(0), tag,
                                              op_ctx(2));
                        });
                        (void)c.wait_ok(op_ctx(2));
                    }
                }
            }
        },
        opt);
    ASSERT_TRUE(result);
}

// Every rank sends to every rank, itself included (for "auto" the message to
// itself takes the self transport, the others shm), through any-source receives;
// each receiver sees every source once with that pair's payload.
TEST_P(transport_msg, all_pairs_including_self)
{
    const ::testing::AssertionResult result = run(3, [](rank_ctx &c) {
        const auto n = static_cast<std::size_t>(c.nranks);
        const std::size_t len = 3 * c.eager_size + 11;  // several fragments
        std::vector<std::vector<unsigned char>> rbufs(n, std::vector<unsigned char>(len + 64));
        std::vector<std::vector<unsigned char>> sbufs(n, std::vector<unsigned char>(len));
        for (std::size_t i = 0; i < n; ++i) {
            std::memset(rbufs[i].data(), fill_byte, len + 64);
            c.post("trecv", [&] {
                return weft_trecv(c.ep, rbufs[i].data(), len + 64, nullptr, WEFT_ADDR_UNSPEC, 0x77,
                                  0, op_ctx(100 + i));
            });
        }
        c.barrier();
        for (std::size_t d = 0; d < n; ++d) {
            fill_pattern(sbufs[d].data(), len, seed_of(c.rank, d, 0xa11));
            c.post("tsend", [&] {
                return weft_tsend(c.ep, sbufs[d].data(), len, nullptr, c.addrs[d], 0x77, op_ctx(d));
            });
        }
        std::vector<int> seen(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
            weft_addr_t src = WEFT_ADDR_NOTAVAIL;
            const weft_cq_tagged_entry e = c.wait_ok(op_ctx(100 + i), &src);
            WEFT_TCHECK_MSG(src < n, "source " + std::to_string(src));
            ++seen[src];
            WEFT_TCHECK_EQ(e.len, len);
            check_payload(rbufs[i].data(), len, len + 64, seed_of(src, c.rank, 0xa11),
                          "message from rank " + std::to_string(src));
        }
        for (std::size_t r = 0; r < n; ++r) {
            WEFT_TCHECK_MSG(seen[r] == 1, "rank " + std::to_string(r) + " seen " +
                                              std::to_string(seen[r]) + " times");
        }
        for (std::size_t d = 0; d < n; ++d) {
            (void)c.wait_ok(op_ctx(d));
        }
    });
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ streams

/// A stream of messages from `senders` logical senders (ranks 1..senders) to
/// logical rank 0, received through a window of posted receives.
struct stream_params {
    int senders = 1;
    int per_sender = 100;
    bool any_source = true;
    bool same_tag = false;  ///< all senders use one tag (else the sender is in the tag)
    std::size_t (*size)(int sender, int seq, std::size_t eager, std::size_t rndv) = nullptr;
    std::size_t max_size = 0;  ///< largest size() for the eager size in use
    int window = 32;
};

constexpr std::uint64_t stream_tag = 0xF000;

void run_stream(rank_ctx &c, const stream_params &p)
{
    struct msg {
        int sender;
        int seq;
        std::size_t offset;
        std::size_t len;
    };
    // Messages this process sends, in sending order (round-robin over the
    // senders it plays).
    std::vector<msg> out;
    std::size_t total_bytes = 0;
    for (int seq = 0; seq < p.per_sender; ++seq) {
        for (int s = 0; s < p.senders; ++s) {
            if (c.plays(s + 1)) {
                const std::size_t len = p.size(s, seq, c.eager_size, c.rndv_threshold);
                out.push_back({s, seq, total_bytes, len});
                total_bytes += len;
            }
        }
    }
    std::vector<unsigned char> sbuf(total_bytes + 1);
    for (const msg &m : out) {
        fill_pattern(sbuf.data() + m.offset, m.len, seed_of(m.sender, m.seq, 0x5eed));
    }

    const bool receiver = c.plays(0);
    const std::size_t total_recv =
        receiver ? static_cast<std::size_t>(p.senders) * static_cast<std::size_t>(p.per_sender) : 0;
    const std::size_t cap = p.max_size;
    const std::size_t w = static_cast<std::size_t>(p.window);
    std::vector<std::vector<unsigned char>> slots(receiver ? w : 0,
                                                  std::vector<unsigned char>(cap + 64));
    std::vector<int> next_seq(static_cast<std::size_t>(p.senders), 0);

    std::size_t sent = 0;
    std::size_t posted = 0;
    std::size_t received = 0;
    constexpr std::uint64_t recv_base = 1000000;
    while (sent < out.size() || received < total_recv) {
        while (posted < total_recv && posted < received + w) {
            std::vector<unsigned char> &slot = slots[posted % w];
            std::memset(slot.data(), fill_byte, slot.size());
            const weft_addr_t src = p.any_source ? WEFT_ADDR_UNSPEC : c.peer(1);
            const std::uint64_t ignore = p.same_tag ? 0 : 0xFF;
            c.post("trecv", [&] {
                return weft_trecv(c.ep, slot.data(), cap, nullptr, src, stream_tag, ignore,
                                  op_ctx(recv_base + posted));
            });
            ++posted;
        }
        // In loopback mode the sends must not run far ahead of the posted receives
        // (large sends complete only once matched); across processes they go freely.
        if (sent < out.size() && (!c.loopback || sent < received + w)) {
            const msg &m = out[sent];
            const std::uint64_t tag =
                p.same_tag ? stream_tag : stream_tag | static_cast<std::uint64_t>(m.sender);
            c.post("tsend", [&] {
                return weft_tsend(c.ep, sbuf.data() + m.offset, m.len, nullptr, c.peer(0), tag,
                                  op_ctx(sent));
            });
            ++sent;
            continue;
        }
        if (received < total_recv) {
            // Receives match in posting order, and messages from one source in send
            // order: so, in posting order, each sender's sequence numbers increase by one.
            weft_addr_t src = 0;
            const weft_cq_tagged_entry e = c.wait_ok(op_ctx(recv_base + received), &src);
            int s = 0;
            if (c.loopback) {
                WEFT_TCHECK_EQ(src, c.peer(0));
                s = static_cast<int>(e.tag & 0xFF);
            } else {
                WEFT_TCHECK_MSG(src >= 1 && src <= static_cast<weft_addr_t>(p.senders),
                                "source " + std::to_string(src) + " is not a sender");
                s = static_cast<int>(src) - 1;
                if (!p.same_tag) {
                    WEFT_TCHECK_EQ(e.tag & 0xFF, static_cast<std::uint64_t>(s));
                }
            }
            WEFT_TCHECK(s >= 0 && s < p.senders);
            WEFT_TCHECK_EQ(e.tag & ~std::uint64_t{0xFF}, stream_tag);
            const int seq = next_seq[static_cast<std::size_t>(s)]++;
            WEFT_TCHECK(seq < p.per_sender);
            const std::size_t len = p.size(s, seq, c.eager_size, c.rndv_threshold);
            const std::string what = "receive " + std::to_string(received) + " (sender " +
                                     std::to_string(s) + ", message " + std::to_string(seq) + ")";
            WEFT_TCHECK_MSG(e.len == len, what + ": length " + std::to_string(e.len) +
                                              ", expected " + std::to_string(len) +
                                              " (out of order?)");
            WEFT_TCHECK(e.buf == slots[received % w].data());
            check_payload(slots[received % w].data(), len, cap + 64, seed_of(s, seq, 0x5eed), what);
            ++received;
        }
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        (void)c.wait_ok(op_ctx(i));
    }
    for (int s = 0; receiver && s < p.senders; ++s) {
        WEFT_TCHECK_EQ(next_seq[static_cast<std::size_t>(s)], p.per_sender);
    }
}

std::size_t fan_in_size(int sender, int seq, std::size_t eager, std::size_t rndv)
{
    switch (seq % 8) {
        case 0:
            return 0;
        case 1:
            return 1 + static_cast<std::size_t>(seq);
        case 2:
            return eager;
        case 3:
            return eager + 1;
        case 4:
            return 3 * eager + static_cast<std::size_t>(sender);
        case 5:
            return seq % 16 == 5 ? rndv + static_cast<std::size_t>(sender) - 1 : 64;
        case 6:
            return 4096 + 7 * static_cast<std::size_t>(sender);
        default:
            return 100000 + static_cast<std::size_t>(seq);
    }
}

// Three senders, many messages each, one receiver with any-source receives that
// checks each sender's order and content and the source from weft_cq_readfrom.
TEST_P(transport_msg, fan_in_any_source)
{
    weft::test::run_options opt;
    opt.timeout_s = 120;
    const ::testing::AssertionResult result = run(
        4,
        [](rank_ctx &c) {
            stream_params p;
            p.senders = 3;
            p.per_sender = 200;
            p.size = fan_in_size;
            p.max_size =
                std::max<std::size_t>({100000 + 200, 3 * c.eager_size + 3, c.rndv_threshold + 1});
            run_stream(c, p);
        },
        opt);
    ASSERT_TRUE(result);
}

std::size_t ordering_size(int, int seq, std::size_t eager, std::size_t rndv)
{
    static constexpr int pattern[] = {0, 1, 5, -1, 0, 1, 2, 17, 3, 4};
    switch (pattern[seq % 10]) {
        case 5:  // rndv - 1, rndv, rndv + 1: eager on one side, rendezvous on the other
            return rndv - 1 + static_cast<std::size_t>(seq / 10 % 3);
        case -1:
            return eager - 1;
        case 0:
            return seq % 20 == 0 ? 0 : eager;
        case 1:
            return seq % 2 == 0 ? 1 : eager + 1;
        case 2:
            return 2 * eager + 3;
        case 3:  // around 64 KiB - 16: where a 64 KiB bcopy unit fragments
            return 65536 - 16 - 3 + static_cast<std::size_t>(seq % 7);
        case 4:
            return 3;
        default:
            return static_cast<std::size_t>(pattern[seq % 10]);
    }
}

// 1000 messages with one tag and sizes across the eager/fragment boundary arrive
// in send order (each message's content depends on its index).
TEST_P(transport_msg, ordering_same_tag_mixed_sizes)
{
    weft::test::run_options opt;
    opt.timeout_s = 120;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            WEFT_TCHECK(c.eager_size > 1);
            stream_params p;
            p.senders = 1;
            p.per_sender = 1000;
            p.any_source = false;
            p.same_tag = true;
            p.size = ordering_size;
            p.max_size = std::max<std::size_t>({65536, 2 * c.eager_size + 3, c.rndv_threshold + 1});
            p.window = 50;
            run_stream(c, p);
        },
        opt);
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ unexpected

std::vector<std::size_t> unexpected_sizes(std::size_t eager, std::size_t rndv)
{
    return {0,          1,          64,      eager - 1, eager, eager + 1, 4 * eager + 9, 65520,
            65536 + 17, 262144 + 3, mib + 7, 4 * mib,   3,     rndv - 1,  rndv,          rndv + 1};
}

// The sender sends everything first; the receiver posts only after a barrier (and
// some progress), in reverse tag order, so every message is unexpected.
TEST_P(transport_msg, unexpected_before_posted)
{
    weft::test::run_options opt;
    opt.timeout_s = 120;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            const std::vector<std::size_t> sizes = unexpected_sizes(c.eager_size, c.rndv_threshold);
            const std::size_t n = sizes.size();
            std::vector<std::vector<unsigned char>> sbufs(n);
            if (c.plays(1)) {
                for (std::size_t i = 0; i < n; ++i) {
                    sbufs[i].resize(sizes[i] + 1);
                    fill_pattern(sbufs[i].data(), sizes[i], seed_of(i, sizes[i], 0xe1));
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, sbufs[i].data(), sizes[i], nullptr, c.peer(0),
                                          0x100 + i, op_ctx(i));
                    });
                }
            }
            c.barrier();
            if (c.plays(0)) {
                c.progress_for(100);  // let the messages land in the unexpected queue
                std::vector<std::vector<unsigned char>> rbufs(n);
                for (std::size_t k = n; k-- > 0;) {
                    rbufs[k].assign(sizes[k] + 64, fill_byte);
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, rbufs[k].data(), sizes[k] + 64, nullptr, c.peer(1),
                                          0x100 + k, 0, op_ctx(1000 + k));
                    });
                }
                for (std::size_t k = 0; k < n; ++k) {
                    weft_addr_t src = 0;
                    const weft_cq_tagged_entry e = c.wait_ok(op_ctx(1000 + k), &src);
                    WEFT_TCHECK_EQ(e.len, sizes[k]);
                    WEFT_TCHECK_EQ(e.tag, 0x100 + k);
                    WEFT_TCHECK_EQ(src, c.peer(1));
                    check_payload(rbufs[k].data(), sizes[k], sizes[k] + 64,
                                  seed_of(k, sizes[k], 0xe1),
                                  "unexpected message of " + std::to_string(sizes[k]) + " bytes");
                }
            }
            if (c.plays(1)) {
                for (std::size_t i = 0; i < n; ++i) {
                    (void)c.wait_ok(op_ctx(i));
                }
            }
        },
        opt);
    ASSERT_TRUE(result);
}

// A large message is received while its sender sleeps outside the library: the
// receiver reads the data itself (shm: CMA, because the sender's activity mark
// is stale; verbs: RDMA read) instead of waiting for the sender to copy it. The
// sender reports, through the run's shared progress counter, when it wakes;
// the receive must complete before that.
TEST_P(transport_msg, large_message_received_while_sender_sleeps)
{
    if (GetParam() == "self") {
        GTEST_SKIP() << "self: one process plays both ranks, so the sender cannot sleep while "
                        "the receiver works";
    }
    if (GetParam() == "tcp") {
        GTEST_SKIP() << "tcp has no get: the sender pushes a rendezvous's data from its own "
                        "progress, so a sleeping sender delays it (docs/tcp.md)";
    }
    weft::test::run_options opt;
    opt.timeout_s = 60;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            constexpr std::size_t len = std::size_t{1} << 20;  // rendezvous
            constexpr int sleep_ms = 3000;
            WEFT_TCHECK(c.rndv_threshold < len);
            std::vector<unsigned char> buf(len + 64, fill_byte);
            // A round trip first: with manual progress a connection (verbs: the UD
            // handshake) is made only while both sides call weft, and the header
            // must be able to leave at once.
            std::uint64_t word = 0;
            if (c.rank == 1) {
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, &word, sizeof(word), nullptr, c.peer(0), 0x1,
                                      op_ctx(3));
                });
                (void)c.wait_ok(op_ctx(3));
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, &word, sizeof(word), nullptr, c.peer(0), 0x2, 0,
                                      op_ctx(4));
                });
                (void)c.wait_ok(op_ctx(4));
            } else {
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, &word, sizeof(word), nullptr, c.peer(1), 0x1, 0,
                                      op_ctx(3));
                });
                (void)c.wait_ok(op_ctx(3));
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, &word, sizeof(word), nullptr, c.peer(1), 0x2,
                                      op_ctx(4));
                });
                (void)c.wait_ok(op_ctx(4));
            }
            if (c.plays(1)) {
                fill_pattern(buf.data(), len, seed_of(len, 0x51ee));
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, buf.data(), len, nullptr, c.peer(0), 0x5, op_ctx(1));
                });
            }
            c.barrier();  // the header is out
            if (c.rank == 1) {
                // No weft call at all: as an application computing between calls.
                std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
                c.note_progress();  // awake
                (void)c.wait_ok(op_ctx(1));
                return;
            }
            c.progress_for(200);  // the header arrives; the sender is asleep by now
            WEFT_TCHECK_EQ(c.progress_mark(), 0U);
            c.post("trecv", [&] {
                return weft_trecv(c.ep, buf.data(), len + 64, nullptr, c.peer(1), 0x5, 0,
                                  op_ctx(2));
            });
            const weft_cq_tagged_entry e = c.wait_ok(op_ctx(2), nullptr, sleep_ms + 30000);
            WEFT_TCHECK_MSG(c.progress_mark() == 0,
                            "the receive completed only after the sender woke up: the data waited "
                            "for the sender's progress");
            WEFT_TCHECK_EQ(e.len, len);
            check_payload(buf.data(), len, len + 64, seed_of(len, 0x51ee),
                          "1 MiB from a sleeping sender");
        },
        opt);
    ASSERT_TRUE(result);
}

// Zero-byte messages may use NULL buffers on both sides, expected and unexpected
// (an AddressSanitizer/UBSan build also catches memcpy/memset on NULL here).
TEST_P(transport_msg, zero_bytes_with_null_buffers)
{
    const ::testing::AssertionResult result = run(2, [](rank_ctx &c) {
        if (c.plays(0)) {  // expected: posted before the send
            c.post("trecv", [&] {
                return weft_trecv(c.ep, nullptr, 0, nullptr, c.peer(1), 0x3A0, 0, op_ctx(10));
            });
        }
        c.barrier();
        if (c.plays(1)) {
            c.post("tsend", [&] {
                return weft_tsend(c.ep, nullptr, 0, nullptr, c.peer(0), 0x3A0, op_ctx(1));
            });
            c.post("tsend", [&] {  // unexpected: received after a barrier
                return weft_tsend(c.ep, nullptr, 0, nullptr, c.peer(0), 0x3A1, op_ctx(2));
            });
            c.post("tinject", [&] { return weft_tinject(c.ep, nullptr, 0, c.peer(0), 0x3A2); });
        }
        c.barrier();
        if (c.plays(0)) {
            c.progress_for(20);
            for (std::uint64_t k = 1; k <= 2; ++k) {
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, nullptr, 0, nullptr, c.peer(1), 0x3A0 + k, 0,
                                      op_ctx(10 + k));
                });
            }
            for (std::uint64_t k = 0; k <= 2; ++k) {
                const weft_cq_tagged_entry e = c.wait_ok(op_ctx(10 + k));
                WEFT_TCHECK_EQ(e.len, 0);
                WEFT_TCHECK_EQ(e.tag, 0x3A0 + k);
            }
        }
        if (c.plays(1)) {
            (void)c.wait_ok(op_ctx(1));
            (void)c.wait_ok(op_ctx(2));
        }
    });
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ iovec

struct iov_case {
    std::vector<std::size_t> send;
    std::vector<std::size_t> recv;
};

// A gather send into a scatter receive with different splits, small, across the
// eager boundary and large.
TEST_P(transport_msg, iovec_send_and_receive)
{
    const ::testing::AssertionResult result = run(2, [](rank_ctx &c) {
        WEFT_TCHECK_MSG(c.iov_limit >= 3, "iov_limit " + std::to_string(c.iov_limit));
        const std::size_t e = c.eager_size;
        const std::vector<iov_case> cases = {
            {{3, 0, 10}, {5, 8}},
            {{e - 5, 7, 1}, {1, e, 100}},
            {{mib + 7, 3, 65536}, {65536, mib, 100000}},
            {{1}, {0, 0, 1}},
        };
        std::vector<std::vector<unsigned char>> sbufs;
        std::vector<std::vector<std::vector<unsigned char>>> rbufs(cases.size());
        for (std::size_t k = 0; k < cases.size(); ++k) {
            const iov_case &ic = cases[k];
            if (c.plays(0)) {
                std::vector<iovec> iov;
                for (const std::size_t len : ic.recv) {
                    rbufs[k].emplace_back(len + 16, fill_byte);
                    iov.push_back({rbufs[k].back().data(), len});
                }
                c.post("trecvv", [&] {
                    return weft_trecvv(c.ep, iov.data(), nullptr, iov.size(), c.peer(1), 0x400 + k,
                                       0, op_ctx(100 + k));
                });
            }
        }
        c.barrier();
        std::vector<std::vector<unsigned char>> segs(64);
        std::size_t nseg = 0;
        if (c.plays(1)) {
            for (std::size_t k = 0; k < cases.size(); ++k) {
                std::size_t total = 0;
                for (const std::size_t len : cases[k].send) {
                    total += len;
                }
                std::vector<unsigned char> whole(total + 1);
                fill_pattern(whole.data(), total, seed_of(k, 0x10f));
                std::vector<iovec> iov;
                std::size_t off = 0;
                for (const std::size_t len : cases[k].send) {
                    segs[nseg].assign(whole.begin() + static_cast<long>(off),
                                      whole.begin() + static_cast<long>(off + len));
                    segs[nseg].push_back(0);
                    iov.push_back({segs[nseg].data(), len});
                    ++nseg;
                    off += len;
                }
                c.post("tsendv", [&] {
                    return weft_tsendv(c.ep, iov.data(), nullptr, iov.size(), c.peer(0), 0x400 + k,
                                       op_ctx(k));
                });
            }
        }
        if (c.plays(0)) {
            for (std::size_t k = 0; k < cases.size(); ++k) {
                std::size_t total = 0;
                for (const std::size_t len : cases[k].send) {
                    total += len;
                }
                const weft_cq_tagged_entry r = c.wait_ok(op_ctx(100 + k));
                WEFT_TCHECK_EQ(r.len, total);
                WEFT_TCHECK(r.buf == rbufs[k][0].data());
                // Gather the scatter list back into one buffer, then check the
                // pattern and that nothing was written past each segment's share.
                std::vector<unsigned char> got;
                std::size_t left = total;
                for (std::size_t i = 0; i < cases[k].recv.size(); ++i) {
                    const std::size_t len = cases[k].recv[i];
                    const std::size_t used = std::min(len, left);
                    got.insert(got.end(), rbufs[k][i].begin(),
                               rbufs[k][i].begin() + static_cast<long>(used));
                    for (std::size_t b = used; b < len + 16; ++b) {
                        WEFT_TCHECK_MSG(rbufs[k][i][b] == fill_byte,
                                        "case " + std::to_string(k) + " segment " +
                                            std::to_string(i) + ": byte " + std::to_string(b) +
                                            " written");
                    }
                    left -= used;
                }
                check_payload(got.data(), total, total, seed_of(k, 0x10f),
                              "iovec case " + std::to_string(k));
            }
        }
        if (c.plays(1)) {
            for (std::size_t k = 0; k < cases.size(); ++k) {
                (void)c.wait_ok(op_ctx(k));
            }
        }
    });
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ inject

// tinject: the buffer is reusable on return (overwritten at once), no send
// completion is generated (the harness fails on unclaimed completions), and a
// payload above the inject size is refused.
TEST_P(transport_msg, inject)
{
    const ::testing::AssertionResult result = run(2, [](rank_ctx &c) {
        WEFT_TCHECK_MSG(c.inject_size > 0, "inject size is 0");
        WEFT_TCHECK_EQ(c.inject_size, c.info->ep_attr.inject_size);
        const std::vector<std::size_t> sizes = {0, 1, c.inject_size / 2, c.inject_size};
        std::vector<std::vector<unsigned char>> rbufs(sizes.size());
        if (c.plays(0)) {
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                rbufs[k].assign(sizes[k] + 64, fill_byte);
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, rbufs[k].data(), sizes[k] + 64, nullptr, c.peer(1),
                                      0x500 + k, 0, op_ctx(100 + k));
                });
            }
        }
        c.barrier();
        if (c.plays(1)) {
            std::vector<unsigned char> buf(c.inject_size + 2);
            const ssize_t big = weft_tinject(c.ep, buf.data(), c.inject_size + 1, c.peer(0), 0x5FF);
            WEFT_TCHECK_MSG(big < 0 && big != -WEFT_EAGAIN,
                            "tinject above the inject size returned " + std::to_string(big));
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                fill_pattern(buf.data(), sizes[k], seed_of(k, 0x1a));
                c.post("tinject", [&] {
                    return weft_tinject(c.ep, buf.data(), sizes[k], c.peer(0), 0x500 + k);
                });
                std::memset(buf.data(), 0xDD, buf.size());  // reusable on return
            }
        }
        if (c.plays(0)) {
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                const weft_cq_tagged_entry r = c.wait_ok(op_ctx(100 + k));
                WEFT_TCHECK_EQ(r.len, sizes[k]);
                WEFT_TCHECK_EQ(r.tag, 0x500 + k);
                check_payload(rbufs[k].data(), sizes[k], sizes[k] + 64, seed_of(k, 0x1a),
                              "injected message " + std::to_string(k));
            }
        }

        // Many injects before any receive is posted: they fill the peer's queue
        // (-WEFT_EAGAIN, retried) and wait as unexpected messages, in order.
        constexpr std::size_t bulk = 2000;
        const std::size_t blen = std::min<std::size_t>(c.inject_size, 100);
        if (c.plays(1)) {
            std::vector<unsigned char> buf(blen);
            for (std::size_t k = 0; k < bulk; ++k) {
                fill_pattern(buf.data(), blen, seed_of(k, 0xb1));
                c.post("tinject",
                       [&] { return weft_tinject(c.ep, buf.data(), blen, c.peer(0), 0x5AA); });
            }
        }
        c.barrier();
        if (c.plays(0)) {
            std::vector<unsigned char> rb(blen + 64);
            for (std::size_t k = 0; k < bulk; ++k) {
                std::memset(rb.data(), fill_byte, rb.size());
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, rb.data(), blen + 64, nullptr, c.peer(1), 0x5AA, 0,
                                      op_ctx(1000 + k));
                });
                const weft_cq_tagged_entry r = c.wait_ok(op_ctx(1000 + k));
                WEFT_TCHECK_EQ(r.len, blen);
                check_payload(rb.data(), blen, blen + 64, seed_of(k, 0xb1),
                              "bulk inject " + std::to_string(k));
            }
        }
    });
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ remote CQ data

TEST_P(transport_msg, remote_cq_data)
{
    WEFT_REQUIRE_CAPS(WEFT_REMOTE_CQ_DATA);
    weft::test::run_options opt;
    opt.extra_caps = WEFT_REMOTE_CQ_DATA;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            const std::vector<std::size_t> sizes = {0, 16, c.eager_size + 1, mib + 7};
            const std::size_t n = sizes.size();
            const std::uint64_t data0 = 0x0123456789abcdefULL;
            // Receives: n tsenddata, one tinjectdata, one tsendmsg with data, one plain tsend.
            std::vector<std::vector<unsigned char>> rbufs(n + 3);
            if (c.plays(0)) {
                for (std::size_t k = 0; k < n + 3; ++k) {
                    const std::size_t len = k < n ? sizes[k] : 64;
                    rbufs[k].assign(len + 64, fill_byte);
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, rbufs[k].data(), len + 64, nullptr, c.peer(1),
                                          0x600 + k, 0, op_ctx(100 + k));
                    });
                }
            }
            c.barrier();
            std::vector<std::vector<unsigned char>> sbufs(n + 3);
            if (c.plays(1)) {
                for (std::size_t k = 0; k < n + 3; ++k) {
                    const std::size_t len = k < n ? sizes[k] : 64;
                    sbufs[k].resize(len + 1);
                    fill_pattern(sbufs[k].data(), len, seed_of(k, 0xda7a));
                }
                for (std::size_t k = 0; k < n; ++k) {
                    c.post("tsenddata", [&] {
                        return weft_tsenddata(c.ep, sbufs[k].data(), sizes[k], nullptr, data0 + k,
                                              c.peer(0), 0x600 + k, op_ctx(k));
                    });
                }
                c.post("tinjectdata", [&] {
                    return weft_tinjectdata(c.ep, sbufs[n].data(), 64, data0 + n, c.peer(0),
                                            0x600 + n);
                });
                iovec iov{sbufs[n + 1].data(), 64};
                weft_msg_tagged msg{};
                msg.msg_iov = &iov;
                msg.iov_count = 1;
                msg.addr = c.peer(0);
                msg.tag = 0x600 + n + 1;
                msg.context = op_ctx(n + 1);
                msg.data = data0 + n + 1;
                c.post("tsendmsg", [&] {
                    return weft_tsendmsg(c.ep, &msg, WEFT_REMOTE_CQ_DATA | WEFT_COMPLETION);
                });
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, sbufs[n + 2].data(), 64, nullptr, c.peer(0),
                                      0x600 + n + 2, op_ctx(n + 2));
                });
            }
            if (c.plays(0)) {
                for (std::size_t k = 0; k < n + 3; ++k) {
                    const std::size_t len = k < n ? sizes[k] : 64;
                    const weft_cq_tagged_entry r = c.wait_ok(op_ctx(100 + k));
                    WEFT_TCHECK_EQ(r.len, len);
                    WEFT_TCHECK_EQ(r.tag, 0x600 + k);
                    if (k < n + 2) {
                        WEFT_TCHECK_MSG(
                            (r.flags & WEFT_REMOTE_CQ_DATA) != 0,
                            "message " + std::to_string(k) + " lacks WEFT_REMOTE_CQ_DATA");
                        WEFT_TCHECK_EQ(r.data, data0 + k);
                    } else {
                        WEFT_TCHECK_MSG((r.flags & WEFT_REMOTE_CQ_DATA) == 0,
                                        "plain tsend reported WEFT_REMOTE_CQ_DATA");
                    }
                    check_payload(rbufs[k].data(), len, len + 64, seed_of(k, 0xda7a),
                                  "message " + std::to_string(k));
                }
            }
            if (c.plays(1)) {
                for (std::size_t k = 0; k < n + 3; ++k) {
                    if (k != n) {  // k == n is the tinjectdata: no completion
                        (void)c.wait_ok(op_ctx(k));
                    }
                }
            }
        },
        opt);
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ threads

// WEFT_THREAD_SAFE (the default): two threads per rank post sends and receives on
// one endpoint at once while the main thread reads the CQ. Each thread's
// messages keep their order (one tag per thread) and arrive intact.
TEST_P(transport_msg, threads_share_an_endpoint)
{
    weft::test::run_options opt;
    opt.timeout_s = 120;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            WEFT_TCHECK_EQ(c.info->domain_attr.threading, WEFT_THREAD_SAFE);
            constexpr int nthreads = 2;
            constexpr std::size_t per_thread = 300;
            auto len_of = [](std::size_t k) { return k % 5 == 4 ? 20000 + k : 16 + k % 200; };
            const std::size_t cap = 20000 + per_thread;
            std::vector<std::vector<unsigned char>> rbufs(nthreads * per_thread);
            std::vector<std::vector<unsigned char>> sbufs(nthreads * per_thread);
            auto ctx_of = [](bool recv, int t, std::size_t k) {
                return op_ctx((recv ? 100000 : 0) + static_cast<std::uint64_t>(t) * 10000 + k);
            };
            std::atomic<int> failed{0};
            auto worker = [&](int t) {
                // Post with retry on -WEFT_EAGAIN; only the main thread reads the CQ.
                auto retry = [&](const auto &fn) {
                    for (long spins = 0;; ++spins) {
                        const ssize_t rc = fn();
                        if (rc != -WEFT_EAGAIN) {
                            return rc;
                        }
                        if (spins > 100000000L) {
                            return rc;
                        }
                        sched_yield();
                    }
                };
                for (std::size_t k = 0; k < per_thread; ++k) {
                    const std::size_t i = static_cast<std::size_t>(t) * per_thread + k;
                    if (c.plays(0)) {
                        rbufs[i].assign(cap, fill_byte);
                        if (retry([&] {
                                return weft_trecv(c.ep, rbufs[i].data(), cap, nullptr, c.peer(1),
                                                  0x900 + t, 0, ctx_of(true, t, k));
                            }) != 0) {
                            failed.fetch_add(1);
                            return;
                        }
                    }
                    if (c.plays(1)) {
                        sbufs[i].resize(len_of(k));
                        fill_pattern(sbufs[i].data(), len_of(k), seed_of(t, k, 0x7d));
                        if (retry([&] {
                                return weft_tsend(c.ep, sbufs[i].data(), len_of(k), nullptr,
                                                  c.peer(0), 0x900 + t, ctx_of(false, t, k));
                            }) != 0) {
                            failed.fetch_add(1);
                            return;
                        }
                    }
                }
            };
            std::vector<std::thread> threads;
            for (int t = 0; t < nthreads; ++t) {
                threads.emplace_back(worker, t);
            }
            for (int t = 0; t < nthreads; ++t) {
                for (std::size_t k = 0; k < per_thread; ++k) {
                    if (c.plays(0)) {
                        const weft_cq_tagged_entry e = c.wait_ok(ctx_of(true, t, k));
                        WEFT_TCHECK_EQ(e.tag, 0x900 + static_cast<std::uint64_t>(t));
                        WEFT_TCHECK_MSG(e.len == len_of(k),
                                        "thread " + std::to_string(t) + " message " +
                                            std::to_string(k) + ": length " +
                                            std::to_string(e.len) + " (out of order?)");
                    }
                    if (c.plays(1)) {
                        (void)c.wait_ok(ctx_of(false, t, k));
                    }
                }
            }
            for (std::thread &th : threads) {
                th.join();
            }
            WEFT_TCHECK_EQ(failed.load(), 0);
            if (c.plays(0)) {
                for (int t = 0; t < nthreads; ++t) {
                    for (std::size_t k = 0; k < per_thread; ++k) {
                        const std::size_t i = static_cast<std::size_t>(t) * per_thread + k;
                        check_payload(
                            rbufs[i].data(), len_of(k), cap, seed_of(t, k, 0x7d),
                            "thread " + std::to_string(t) + " message " + std::to_string(k));
                    }
                }
            }
        },
        opt);
    ASSERT_TRUE(result);
}

WEFT_TRANSPORT_SUITE(transport_msg);

}  // namespace
