// Transport-level tests of variable-length messages (WEFT_VARIABLE_MSG,
// docs/variable-messages.md) over the public API: messages up to the threshold
// match posted receives, longer ones produce notifications that the receiver
// claims (into a buffer or an iovec, with its own op_context) or discards;
// truncated claims; invalid var contexts. Each test runs over every transport
// (harness.hpp) that reports WEFT_VARIABLE_MSG.

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "test/transport/harness.hpp"

namespace {

using weft::test::check_payload;
using weft::test::completion;
using weft::test::fill_byte;
using weft::test::fill_pattern;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * 1024;

/// Byte that buffers passed with WEFT_DISCARD are filled with (never written).
constexpr unsigned char canary_byte = 0xC3;

class transport_variable : public transport_test {
  protected:
    void SetUp() override
    {
        transport_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        WEFT_REQUIRE_CAPS(WEFT_VARIABLE_MSG);
    }
    [[nodiscard]] ::testing::AssertionResult run_var(int nranks, const weft::test::rank_body &body,
                                                     int timeout_s = 60)
    {
        weft::test::run_options opt;
        opt.extra_caps = WEFT_VARIABLE_MSG;
        opt.timeout_s = timeout_s;
        return run(nranks, body, opt);
    }
};

// ------------------------------------------------------------------ helpers

/// Wait for the next WEFT_VARIABLE_MSG notification (in CQ order) and remove it
/// from the pending completions. Its op_context is the weft_var_context.
weft_cq_tagged_entry next_notification(rank_ctx &c, weft_addr_t *src = nullptr,
                                       int timeout_ms = weft::test::default_wait_ms)
{
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        for (const completion &p : c.pending()) {
            if (!p.error && (p.entry.flags & WEFT_VARIABLE_MSG) != 0) {
                void *const ctx = p.entry.op_context;
                return c.wait_ok(ctx, src);
            }
        }
        c.poll();
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited > std::chrono::milliseconds(timeout_ms)) {
            WEFT_TCHECK_MSG(false, "no WEFT_VARIABLE_MSG notification within " +
                                       std::to_string(timeout_ms) + " ms (" +
                                       std::to_string(c.pending().size()) +
                                       " other completions pending)");
        }
        sched_yield();
    }
}

/// A notification must carry these flags, no buffer and a var context.
void check_notification(const weft_cq_tagged_entry &n)
{
    WEFT_TCHECK_EQ(n.flags & (WEFT_RECV | WEFT_TAGGED | WEFT_VARIABLE_MSG),
                   WEFT_RECV | WEFT_TAGGED | WEFT_VARIABLE_MSG);
    WEFT_TCHECK_EQ(n.flags & WEFT_SEND, 0ULL);
    WEFT_TCHECK(n.buf == nullptr);
    WEFT_TCHECK(n.op_context != nullptr);
}

/// weft_trecvmsg with a var context (WEFT_CLAIM or WEFT_DISCARD).
ssize_t var_recvmsg(rank_ctx &c, void *var, const iovec *iov, std::size_t count,
                    std::uint64_t flags)
{
    weft_msg_tagged m{};
    m.msg_iov = iov;
    m.iov_count = count;
    m.addr = WEFT_ADDR_UNSPEC;
    m.context = var;
    return weft_trecvmsg(c.ep, &m, flags);
}

/// Post a claim or discard, retrying -WEFT_EAGAIN; it must be accepted.
void post_var(rank_ctx &c, void *var, const iovec *iov, std::size_t count, std::uint64_t flags)
{
    c.post(flags == WEFT_DISCARD ? "trecvmsg(WEFT_DISCARD)" : "trecvmsg(WEFT_CLAIM)",
           [&] { return var_recvmsg(c, var, iov, count, flags); });
}

// ------------------------------------------------------------------ three senders

constexpr int senders = 3;
constexpr int per_sender = 40;
constexpr std::uint64_t tag_base = 0x7A00000000ULL;

/// Size of message `k` of sender `s`: unique per (s, k), so the receiver can tell
/// the message from its length alone (tagless runs, loopback). k % 4 picks the
/// class: 0 small, 1 up to the threshold (T itself for the first), 2 just above
/// it, 3 far above it (100 KiB, or 1 MiB every third time).
std::size_t var_size(int s, int k, std::size_t thresh)
{
    const auto j = static_cast<std::size_t>(k / 4);
    const auto su = static_cast<std::size_t>(s);
    switch (k % 4) {
        case 0:
            return 13 * j + su;
        case 1:
            return thresh - 3 * j - su;
        case 2:
            return thresh + 1 + 3 * j + su;
        default:
            return (j % 3 == 2 ? mib : 100 * kib) + 3 * j + su;
    }
}

bool is_large(int k)
{
    return k % 4 >= 2;
}

/// What the receiver does with large message `k`: claim into one buffer, discard,
/// or claim into a three-part iovec.
enum class var_action { claim, discard, claim_iov };

var_action action_of(int k)
{
    const int large_index = (k / 4) * 2 + (k % 4 - 2);
    switch (large_index % 3) {
        case 0:
            return var_action::claim;
        case 1:
            return var_action::discard;
        default:
            return var_action::claim_iov;
    }
}

std::uint64_t tag_of(bool tagged, int s, int k)
{
    return tagged ? tag_base | static_cast<std::uint64_t>(s) << 16 | static_cast<std::uint64_t>(k)
                  : 0;
}

/// Context the receiver writes into the var context of message (s, k).
void *claim_ctx(int s, int k)
{
    return op_ctx(50000 + static_cast<std::uint64_t>(s) * 1000 + static_cast<std::uint64_t>(k));
}

/// One large message as the receiver handles it.
struct var_rx {
    int s = 0;
    int k = 0;
    std::size_t len = 0;
    var_action action = var_action::claim;
    std::vector<std::vector<unsigned char>> bufs;  ///< claim buffers or the discard canary
    std::vector<iovec> iov;
};

// Logical ranks 1..3 each send 40 messages with sizes below, at and above the
// threshold to logical rank 0 (half of them as gather lists). Small ones must match the receives
// rank 0 posted beforehand (in posting order, each sender's in send order); large ones must come as
// notifications with len and tag, each sender's in send order; rank 0 claims or discards each.
// Every send completes successfully.
void three_senders(rank_ctx &c, bool tagged)
{
    const std::size_t thresh = c.rndv_threshold;
    WEFT_TCHECK_MSG(thresh > 200 && thresh + 64 < 100 * kib,
                    "the size classes assume 200 < threshold < 100 KiB - 64; threshold is " +
                        std::to_string(thresh));

    // Message (s, k) from its length: every size is unique.
    std::map<std::size_t, std::pair<int, int>> by_len;
    for (int s = 0; s < senders; ++s) {
        for (int k = 0; k < per_sender; ++k) {
            const bool fresh = by_len.emplace(var_size(s, k, thresh), std::make_pair(s, k)).second;
            WEFT_TCHECK_MSG(fresh, "size collision");
        }
    }
    auto identify = [&](std::size_t len, const std::string &what) {
        const auto it = by_len.find(len);
        WEFT_TCHECK_MSG(it != by_len.end(),
                        what + ": no message has length " + std::to_string(len));
        return it->second;
    };

    // Rank 0 posts every small receive before anything is sent (any source; one
    // tag with the sender and index bits ignored, or tag 0 in tagless runs).
    const std::size_t nsmall = static_cast<std::size_t>(senders * per_sender / 2);
    const std::size_t small_cap = thresh + 64;
    std::vector<std::vector<unsigned char>> small_bufs;
    const std::uint64_t recv_tag = tagged ? tag_base : 0;
    const std::uint64_t recv_ignore = tagged ? 0xFFFFFFFFULL : 0;
    if (c.plays(0)) {
        small_bufs.assign(nsmall, std::vector<unsigned char>(small_cap, fill_byte));
        for (std::size_t i = 0; i < nsmall; ++i) {
            c.post("trecv", [&] {
                return weft_trecv(c.ep, small_bufs[i].data(), small_cap, nullptr, WEFT_ADDR_UNSPEC,
                                  recv_tag, recv_ignore, op_ctx(1000 + i));
            });
        }
    }
    c.barrier();

    // Senders: everything at once, buffers kept until the sends complete.
    std::vector<std::vector<unsigned char>> sbufs(static_cast<std::size_t>(senders * per_sender));
    for (int k = 0; k < per_sender; ++k) {
        for (int s = 0; s < senders; ++s) {
            if (!c.plays(s + 1)) {
                continue;
            }
            const std::size_t len = var_size(s, k, thresh);
            std::vector<unsigned char> &b = sbufs[static_cast<std::size_t>(s * per_sender + k)];
            b.resize(len + 1);
            fill_pattern(b.data(), len, seed_of(s, k, 0x7a));
            // Every other group goes as a two-part gather list: a large one then
            // takes the clear-to-send path (the data pushed by the sender) instead
            // of being read from the sender's buffer (docs/variable-messages.md).
            if (k / 4 % 2 == 1) {
                const iovec parts[2] = {{b.data(), len / 2}, {b.data() + len / 2, len - len / 2}};
                c.post("tsendv", [&] {
                    return weft_tsendv(c.ep, parts, nullptr, 2, c.peer(0), tag_of(tagged, s, k),
                                       op_ctx(static_cast<std::uint64_t>(s * per_sender + k)));
                });
            } else {
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, b.data(), len, nullptr, c.peer(0), tag_of(tagged, s, k),
                                      op_ctx(static_cast<std::uint64_t>(s * per_sender + k)));
                });
            }
        }
    }

    std::vector<var_rx> large;
    if (c.plays(0)) {
        const std::size_t nlarge = static_cast<std::size_t>(senders * per_sender) - nsmall;
        large.reserve(nlarge);  // iovecs point into the elements' buffers
        std::vector<int> last_k(senders, -1);
        for (std::size_t n = 0; n < nlarge; ++n) {
            weft_addr_t src = WEFT_ADDR_NOTAVAIL;
            const weft_cq_tagged_entry note = next_notification(c, &src);
            check_notification(note);
            const std::string what = "notification " + std::to_string(n);
            const auto [s, k] = identify(note.len, what);
            WEFT_TCHECK_MSG(is_large(k), what + ": message " + std::to_string(k) + " of sender " +
                                             std::to_string(s) + " (" + std::to_string(note.len) +
                                             " bytes) is not above the threshold " +
                                             std::to_string(thresh));
            WEFT_TCHECK_EQ(note.tag, tag_of(tagged, s, k));
            WEFT_TCHECK_EQ(src, c.peer(s + 1));
            // Each sender's notifications come in its send order, none missing.
            int expect = last_k[static_cast<std::size_t>(s)] + 1;
            while (!is_large(expect)) {
                ++expect;
            }
            WEFT_TCHECK_MSG(k == expect, what + ": sender " + std::to_string(s) + " message " +
                                             std::to_string(k) + ", expected message " +
                                             std::to_string(expect));
            last_k[static_cast<std::size_t>(s)] = k;

            var_rx &r = large.emplace_back();
            r.s = s;
            r.k = k;
            r.len = note.len;
            r.action = action_of(k);
            auto *var = static_cast<weft_var_context *>(note.op_context);
            var->op_context = claim_ctx(s, k);  // the claim's completion reports it
            switch (r.action) {
                case var_action::claim:
                    r.bufs.assign(1, std::vector<unsigned char>(r.len + 64, fill_byte));
                    r.iov = {{r.bufs[0].data(), r.len + 64}};
                    post_var(c, var, r.iov.data(), 1, WEFT_CLAIM);
                    break;
                case var_action::discard:
                    r.bufs.assign(1, std::vector<unsigned char>(r.len + 64, canary_byte));
                    r.iov = {{r.bufs[0].data(), r.len + 64}};
                    post_var(c, var, r.iov.data(), 1, WEFT_DISCARD);
                    break;
                case var_action::claim_iov: {
                    // Uneven parts; the last has 64 bytes of room past the message.
                    const std::size_t a = r.len / 3 + 1;
                    const std::size_t b = r.len / 5 + 7;
                    const std::size_t parts[3] = {a, b, r.len - a - b + 64};
                    for (const std::size_t p : parts) {
                        r.bufs.emplace_back(p + 16, fill_byte);  // 16 guard bytes each
                        r.iov.push_back({r.bufs.back().data(), p});
                    }
                    post_var(c, var, r.iov.data(), 3, WEFT_CLAIM);
                    break;
                }
            }
        }
        for (int s = 0; s < senders; ++s) {
            WEFT_TCHECK_EQ(last_k[static_cast<std::size_t>(s)], per_sender - 1);
        }

        // Small messages: receives match in posting order, each sender's
        // messages in send order; every small message used a posted receive.
        std::vector<int> last_small(senders, -1);
        for (std::size_t i = 0; i < nsmall; ++i) {
            weft_addr_t src = WEFT_ADDR_NOTAVAIL;
            const weft_cq_tagged_entry e = c.wait_ok(op_ctx(1000 + i), &src);
            const std::string what = "small receive " + std::to_string(i);
            WEFT_TCHECK_EQ(e.flags & WEFT_VARIABLE_MSG, 0ULL);
            WEFT_TCHECK(e.buf == small_bufs[i].data());
            const auto [s, k] = identify(e.len, what);
            WEFT_TCHECK_MSG(!is_large(k), what + ": a message above the threshold (" +
                                              std::to_string(e.len) +
                                              " bytes) matched a posted receive");
            WEFT_TCHECK_EQ(e.tag, tag_of(tagged, s, k));
            WEFT_TCHECK_EQ(src, c.peer(s + 1));
            WEFT_TCHECK_MSG(k > last_small[static_cast<std::size_t>(s)],
                            what + ": sender " + std::to_string(s) + " message " +
                                std::to_string(k) + " after message " +
                                std::to_string(last_small[static_cast<std::size_t>(s)]));
            int expect = last_small[static_cast<std::size_t>(s)] + 1;
            while (is_large(expect)) {
                ++expect;
            }
            WEFT_TCHECK_EQ(k, expect);
            last_small[static_cast<std::size_t>(s)] = k;
            check_payload(small_bufs[i].data(), e.len, small_cap, seed_of(s, k, 0x7a), what);
        }

        // Claims and discards complete with the op_context set in the var context.
        for (const var_rx &r : large) {
            const std::string what =
                "sender " + std::to_string(r.s) + " message " + std::to_string(r.k);
            weft_addr_t src = WEFT_ADDR_NOTAVAIL;
            const weft_cq_tagged_entry e = c.wait_ok(claim_ctx(r.s, r.k), &src);
            WEFT_TCHECK_EQ(e.flags & (WEFT_RECV | WEFT_TAGGED), WEFT_RECV | WEFT_TAGGED);
            WEFT_TCHECK_EQ(e.flags & WEFT_VARIABLE_MSG, 0ULL);
            WEFT_TCHECK_EQ(e.len, r.len);
            WEFT_TCHECK_EQ(e.tag, tag_of(tagged, r.s, r.k));
            WEFT_TCHECK_EQ(src, c.peer(r.s + 1));
            const std::uint64_t seed = seed_of(r.s, r.k, 0x7a);
            switch (r.action) {
                case var_action::claim:
                    WEFT_TCHECK(e.buf == r.bufs[0].data());
                    check_payload(r.bufs[0].data(), r.len, r.len + 64, seed, what);
                    break;
                case var_action::discard:
                    WEFT_TCHECK_MSG(e.buf == nullptr, what + ": discard reported a buffer");
                    break;
                case var_action::claim_iov: {
                    WEFT_TCHECK(e.buf == r.bufs[0].data());
                    std::vector<unsigned char> whole;
                    std::size_t left = r.len;
                    for (std::size_t i = 0; i < 3; ++i) {
                        const std::size_t used = std::min(left, r.iov[i].iov_len);
                        whole.insert(whole.end(), r.bufs[i].begin(),
                                     r.bufs[i].begin() + static_cast<long>(used));
                        for (std::size_t b = used; b < r.bufs[i].size(); ++b) {
                            WEFT_TCHECK_MSG(r.bufs[i][b] == fill_byte,
                                            what + ": iovec part " + std::to_string(i) + " byte " +
                                                std::to_string(b) + " written");
                        }
                        left -= used;
                    }
                    check_payload(whole.data(), r.len, r.len, seed, what + " (iovec)");
                    break;
                }
            }
        }
    }

    // Every send completes successfully, the discarded ones included.
    for (int k = 0; k < per_sender; ++k) {
        for (int s = 0; s < senders; ++s) {
            if (c.plays(s + 1)) {
                const weft_cq_tagged_entry e =
                    c.wait_ok(op_ctx(static_cast<std::uint64_t>(s * per_sender + k)));
                WEFT_TCHECK_EQ(e.flags & (WEFT_SEND | WEFT_TAGGED), WEFT_SEND | WEFT_TAGGED);
            }
        }
    }
    c.barrier();  // every sender saw its completions: no data can still be moving

    // Buffers passed with WEFT_DISCARD were never written.
    for (const var_rx &r : large) {
        if (r.action != var_action::discard) {
            continue;
        }
        for (std::size_t b = 0; b < r.bufs[0].size(); ++b) {
            WEFT_TCHECK_MSG(r.bufs[0][b] == canary_byte,
                            "sender " + std::to_string(r.s) + " message " + std::to_string(r.k) +
                                ": byte " + std::to_string(b) +
                                " of the buffer passed with WEFT_DISCARD was written");
        }
    }
}

TEST_P(transport_variable, three_senders_claim_and_discard_tagged)
{
    const ::testing::AssertionResult result = run_var(
        4, [](rank_ctx &c) { three_senders(c, true); }, 120);
    ASSERT_TRUE(result);
}

TEST_P(transport_variable, three_senders_claim_and_discard_tag_zero)
{
    const ::testing::AssertionResult result = run_var(
        4, [](rank_ctx &c) { three_senders(c, false); }, 120);
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ truncation

// A claim into a buffer smaller than the message gives an error entry with
// WEFT_ETRUNC, the op_context set in the var context, len = buffer, olen = the
// rest; the buffer holds the message's beginning and nothing is written past
// it. The sender's operation succeeds, and the endpoint keeps working.
TEST_P(transport_variable, claim_into_too_small_buffer_truncates)
{
    weft::test::run_options opt;
    opt.extra_caps = WEFT_VARIABLE_MSG;
    opt.allow_log_errors = true;  // a truncation may be logged
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            const std::size_t t = c.rndv_threshold;
            struct tcase {
                std::size_t sent;
                std::vector<std::size_t> parts;  ///< claim buffers (iovec when several)
            };
            const std::vector<tcase> cases = {
                {t + 1, {t / 2}},
                {mib + 5, {1000}},
                {3 * t, {t / 3, t / 2}},
                {t + 7, {0}},
            };
            const std::size_t n = cases.size();
            std::vector<std::vector<unsigned char>> sbufs(n + 1);
            if (c.plays(1)) {
                for (std::size_t k = 0; k <= n; ++k) {
                    const std::size_t len = k < n ? cases[k].sent : 2 * t;
                    sbufs[k].resize(len + 1);
                    fill_pattern(sbufs[k].data(), len, seed_of(k, 0x7c));
                    // Odd cases as gather lists: the clear-to-send path, where the
                    // sender pushes the whole message and the receiver drops the rest.
                    const iovec parts[2] = {{sbufs[k].data(), len / 3},
                                            {sbufs[k].data() + len / 3, len - len / 3}};
                    c.post("tsend", [&] {
                        return k % 2 == 1 ? weft_tsendv(c.ep, parts, nullptr, 2, c.peer(0),
                                                        0x7C0 + k, op_ctx(k))
                                          : weft_tsend(c.ep, sbufs[k].data(), len, nullptr,
                                                       c.peer(0), 0x7C0 + k, op_ctx(k));
                    });
                }
            }
            if (c.plays(0)) {
                for (std::size_t k = 0; k < n; ++k) {
                    const std::string what = "case " + std::to_string(k);
                    const weft_cq_tagged_entry note = next_notification(c);
                    check_notification(note);
                    WEFT_TCHECK_EQ(note.len, cases[k].sent);
                    WEFT_TCHECK_EQ(note.tag, 0x7C0 + k);
                    auto *var = static_cast<weft_var_context *>(note.op_context);
                    var->op_context = op_ctx(200 + k);
                    std::vector<std::vector<unsigned char>> bufs;
                    std::vector<iovec> iov;
                    std::size_t cap = 0;
                    for (const std::size_t p : cases[k].parts) {
                        bufs.emplace_back(p + 64, fill_byte);
                        iov.push_back({bufs.back().data(), p});
                        cap += p;
                    }
                    post_var(c, var, iov.data(), iov.size(), WEFT_CLAIM);
                    const weft_cq_err_entry e = c.wait_err(op_ctx(200 + k));
                    WEFT_TCHECK_EQ(e.err, WEFT_ETRUNC);
                    WEFT_TCHECK_EQ(e.len, cap);
                    WEFT_TCHECK_EQ(e.olen, cases[k].sent - cap);
                    WEFT_TCHECK_EQ(e.tag, 0x7C0 + k);
                    WEFT_TCHECK_MSG(std::strlen(e.err_str) > 0, what + ": empty err_str");
                    // The beginning of the message, gathered; nothing past each part.
                    std::vector<unsigned char> head;
                    for (std::size_t i = 0; i < bufs.size(); ++i) {
                        head.insert(head.end(), bufs[i].begin(),
                                    bufs[i].begin() + static_cast<long>(iov[i].iov_len));
                        for (std::size_t b = iov[i].iov_len; b < bufs[i].size(); ++b) {
                            WEFT_TCHECK_MSG(bufs[i][b] == fill_byte,
                                            what + ": part " + std::to_string(i) + " byte " +
                                                std::to_string(b) + " written past the buffer");
                        }
                    }
                    std::vector<unsigned char> ref(cap);
                    fill_pattern(ref.data(), cap, seed_of(k, 0x7c));
                    WEFT_TCHECK_MSG(cap == 0 || std::memcmp(head.data(), ref.data(), cap) == 0,
                                    what + ": the buffer does not hold the message's beginning");
                }
                // The endpoint still works: the last message is claimed whole.
                const weft_cq_tagged_entry note = next_notification(c);
                WEFT_TCHECK_EQ(note.len, 2 * t);
                auto *var = static_cast<weft_var_context *>(note.op_context);
                var->op_context = op_ctx(300);
                std::vector<unsigned char> buf(2 * t + 64, fill_byte);
                const iovec iov{buf.data(), buf.size()};
                post_var(c, var, &iov, 1, WEFT_CLAIM);
                const weft_cq_tagged_entry e = c.wait_ok(op_ctx(300));
                WEFT_TCHECK_EQ(e.len, 2 * t);
                check_payload(buf.data(), 2 * t, buf.size(), seed_of(n, 0x7c), "last message");
            }
            if (c.plays(1)) {
                for (std::size_t k = 0; k <= n; ++k) {
                    (void)c.wait_ok(op_ctx(k));
                }
            }
        },
        opt);
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ threshold, CQ data

/// An endpoint of our own on the harness's domain (the harness enables its
/// endpoint before the body runs), with a tagged CQ and an AV that holds the
/// endpoint itself; `before_enable` sets options on it.
struct own_endpoint {
    weft_cq_t *cq = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
    weft_addr_t self = WEFT_ADDR_NOTAVAIL;

    template <class F>
    void open(rank_ctx &c, F before_enable)
    {
        weft_cq_attr cq_attr{};
        cq_attr.format = WEFT_CQ_FORMAT_TAGGED;
        WEFT_TCHECK_OK(weft_cq_open(c.domain, &cq_attr, &cq));
        weft_av_attr av_attr{};
        WEFT_TCHECK_OK(weft_av_open(c.domain, &av_attr, &av));
        WEFT_TCHECK_OK(weft_ep_open(c.domain, c.info, &ep, nullptr));
        WEFT_TCHECK_OK(weft_ep_bind_cq(ep, cq, WEFT_TRANSMIT | WEFT_RECV));
        WEFT_TCHECK_OK(weft_ep_bind_av(ep, av));
        before_enable(ep);
        WEFT_TCHECK_OK(weft_ep_enable(ep));
        unsigned char name[256];
        std::size_t name_len = sizeof(name);
        WEFT_TCHECK_OK(weft_ep_getname(ep, name, &name_len));
        WEFT_TCHECK_EQ(weft_av_insert(av, name, 1, &self, 0), 1);
    }
    void close()
    {
        WEFT_TCHECK_OK(weft_ep_close(ep));
        WEFT_TCHECK_OK(weft_av_close(av));
        WEFT_TCHECK_OK(weft_cq_close(cq));
    }
};

// WEFT_OPT_VAR_MSG_THRESHOLD set before weft_ep_enable on an endpoint of our own
// (the harness enables its endpoint before the body runs), which sends to
// itself: getopt reads the value back, setopt after enable is refused, a
// message of exactly the threshold matches a posted receive and one byte more
// is a notification, claimed whole.
TEST_P(transport_variable, threshold_option_set_before_enable)
{
    const ::testing::AssertionResult result = run_var(1, [](rank_ctx &c) {
        constexpr std::size_t thresh = 1000;
        own_endpoint own;
        own.open(c, [](weft_ep_t *e) {
            const std::size_t value = thresh;
            WEFT_TCHECK_EQ(weft_ep_setopt(e, WEFT_OPT_VAR_MSG_THRESHOLD, &value, 4), -WEFT_EINVAL);
            WEFT_TCHECK_OK(weft_ep_setopt(e, WEFT_OPT_VAR_MSG_THRESHOLD, &value, sizeof(value)));
        });
        weft_cq_t *cq = own.cq;
        weft_ep_t *ep = own.ep;
        const weft_addr_t self = own.self;
        std::size_t got = 0;
        std::size_t len = sizeof(got);
        WEFT_TCHECK_OK(weft_ep_getopt(ep, WEFT_OPT_VAR_MSG_THRESHOLD, &got, &len));
        WEFT_TCHECK_EQ(got, thresh);
        const std::size_t later = 2 * thresh;
        WEFT_TCHECK_MSG(weft_ep_setopt(ep, WEFT_OPT_VAR_MSG_THRESHOLD, &later, sizeof(later)) < 0,
                        "setopt after weft_ep_enable was accepted");
        len = sizeof(got);
        WEFT_TCHECK_OK(weft_ep_getopt(ep, WEFT_OPT_VAR_MSG_THRESHOLD, &got, &len));
        WEFT_TCHECK_EQ(got, thresh);

        // Read this endpoint's CQ until the entry with `ctx` (or, with ctx ==
        // nullptr, the first notification) shows up.
        std::vector<weft_cq_tagged_entry> seen;
        auto wait_for = [&](void *ctx) {
            for (int spins = 0;; ++spins) {
                for (auto it = seen.begin(); it != seen.end(); ++it) {
                    const bool note = (it->flags & WEFT_VARIABLE_MSG) != 0;
                    if (ctx == nullptr ? note : (!note && it->op_context == ctx)) {
                        const weft_cq_tagged_entry e = *it;
                        seen.erase(it);
                        return e;
                    }
                }
                weft_cq_tagged_entry e[8];
                const ssize_t n = weft_cq_read(cq, e, 8);
                WEFT_TCHECK_MSG(n > 0 || n == -WEFT_EAGAIN,
                                "weft_cq_read returned " + std::to_string(n));
                for (ssize_t i = 0; i < n; ++i) {
                    seen.push_back(e[i]);
                }
                WEFT_TCHECK_MSG(spins < 10000000, "no completion on the own endpoint");
                sched_yield();
            }
        };

        std::vector<unsigned char> s1(thresh);
        std::vector<unsigned char> s2(thresh + 1);
        fill_pattern(s1.data(), s1.size(), seed_of(1, 0x7e));
        fill_pattern(s2.data(), s2.size(), seed_of(2, 0x7e));
        std::vector<unsigned char> r1(thresh + 64, fill_byte);
        std::vector<unsigned char> r2(thresh + 65, fill_byte);
        // Both receives are posted: only the first message may match one.
        WEFT_TCHECK_OK(
            weft_trecv(ep, r1.data(), r1.size(), nullptr, WEFT_ADDR_UNSPEC, 0x7E, 0, op_ctx(1)));
        WEFT_TCHECK_OK(
            weft_trecv(ep, r2.data(), r2.size(), nullptr, WEFT_ADDR_UNSPEC, 0x7E, 0, op_ctx(2)));
        WEFT_TCHECK_OK(weft_tsend(ep, s1.data(), s1.size(), nullptr, self, 0x7E, op_ctx(11)));
        WEFT_TCHECK_OK(weft_tsend(ep, s2.data(), s2.size(), nullptr, self, 0x7E, op_ctx(12)));
        const weft_cq_tagged_entry e1 = wait_for(op_ctx(1));
        WEFT_TCHECK_EQ(e1.len, thresh);
        check_payload(r1.data(), thresh, r1.size(), seed_of(1, 0x7e), "message at the threshold");
        const weft_cq_tagged_entry note = wait_for(nullptr);
        check_notification(note);
        WEFT_TCHECK_EQ(note.len, thresh + 1);
        auto *var = static_cast<weft_var_context *>(note.op_context);
        var->op_context = op_ctx(3);
        std::vector<unsigned char> r3(thresh + 65, fill_byte);
        const iovec iov{r3.data(), r3.size()};
        weft_msg_tagged m{};
        m.msg_iov = &iov;
        m.iov_count = 1;
        m.addr = WEFT_ADDR_UNSPEC;
        m.context = var;
        WEFT_TCHECK_OK(weft_trecvmsg(ep, &m, WEFT_CLAIM));
        const weft_cq_tagged_entry e3 = wait_for(op_ctx(3));
        WEFT_TCHECK_EQ(e3.len, thresh + 1);
        check_payload(r3.data(), thresh + 1, r3.size(), seed_of(2, 0x7e), "claimed message");
        (void)wait_for(op_ctx(11));
        (void)wait_for(op_ctx(12));
        // The second receive is still posted: nothing matched it.
        WEFT_TCHECK_OK(weft_cancel(ep, op_ctx(2)));
        weft_cq_tagged_entry e[8];
        ssize_t n = 0;
        for (int spins = 0; (n = weft_cq_read(cq, e, 8)) == -WEFT_EAGAIN && spins < 1000000;
             ++spins) {
        }
        WEFT_TCHECK_EQ(n, -WEFT_EAVAIL);
        weft_cq_err_entry err{};
        WEFT_TCHECK_EQ(weft_cq_readerr(cq, &err, 0), 1);
        WEFT_TCHECK_EQ(err.err, WEFT_ECANCELED);
        WEFT_TCHECK(err.op_context == op_ctx(2));
        WEFT_TCHECK(seen.empty());
        for (std::size_t b = 0; b < r2.size(); ++b) {
            WEFT_TCHECK_MSG(r2[b] == fill_byte, "the canceled receive was written");
        }
        own.close();
    });
    ASSERT_TRUE(result);
}

// WEFT_OPT_RNDV_THRESHOLD moves only this endpoint's switch to rendezvous, not
// the variable-message threshold, which both sides share: with it set far
// above WEFT_RNDV_THRESH (and no WEFT_OPT_VAR_MSG_THRESHOLD), a message one
// byte above WEFT_RNDV_THRESH to itself is still a notification, not a match
// of the posted receive.
TEST_P(transport_variable, rendezvous_option_leaves_the_variable_threshold)
{
    const ::testing::AssertionResult result = run_var(1, [](rank_ctx &c) {
        const std::size_t rndv = 1 << 20;
        own_endpoint own;
        own.open(c, [&](weft_ep_t *e) {
            WEFT_TCHECK_OK(weft_ep_setopt(e, WEFT_OPT_RNDV_THRESHOLD, &rndv, sizeof(rndv)));
        });
        weft_cq_t *cq = own.cq;
        weft_ep_t *ep = own.ep;
        const weft_addr_t self = own.self;
        std::size_t var = 0;
        std::size_t len = sizeof(var);
        WEFT_TCHECK_OK(weft_ep_getopt(ep, WEFT_OPT_VAR_MSG_THRESHOLD, &var, &len));
        WEFT_TCHECK_MSG(var < rndv, "the variable threshold followed the rendezvous option");
        std::vector<unsigned char> s(var + 1);
        fill_pattern(s.data(), s.size(), seed_of(3, 0x7d));
        std::vector<unsigned char> posted(2 * var, fill_byte);
        WEFT_TCHECK_OK(weft_trecv(ep, posted.data(), posted.size(), nullptr, WEFT_ADDR_UNSPEC, 0x7D,
                                  0, op_ctx(1)));
        WEFT_TCHECK_OK(weft_tsend(ep, s.data(), s.size(), nullptr, self, 0x7D, op_ctx(11)));
        // The first entry that is not the send's: the notification, not the
        // posted receive's completion.
        weft_cq_tagged_entry got{};
        bool found = false;
        for (int spins = 0; !found && spins < 10000000; ++spins) {
            weft_cq_tagged_entry e{};
            const ssize_t n = weft_cq_read(cq, &e, 1);
            WEFT_TCHECK_MSG(n == 1 || n == -WEFT_EAGAIN,
                            "weft_cq_read returned " + std::to_string(n));
            if (n == 1 && e.op_context != op_ctx(11)) {
                got = e;
                found = true;
            }
        }
        WEFT_TCHECK_MSG(found, "no entry for the message");
        WEFT_TCHECK_MSG((got.flags & WEFT_VARIABLE_MSG) != 0,
                        "a message above the shared threshold matched the posted receive");
        if ((got.flags & WEFT_VARIABLE_MSG) != 0) {
            check_notification(got);
            auto *note = static_cast<weft_var_context *>(got.op_context);
            weft_msg_tagged m{};
            m.context = note;
            WEFT_TCHECK_OK(weft_trecvmsg(ep, &m, WEFT_DISCARD));
        }
        WEFT_TCHECK_OK(weft_cancel(ep, op_ctx(1)));
        own.close();
    });
    ASSERT_TRUE(result);
}

// A notification carries the message's remote CQ data (flag and value), and so
// does the completion of its claim.
TEST_P(transport_variable, notification_carries_remote_cq_data)
{
    WEFT_REQUIRE_CAPS(WEFT_VARIABLE_MSG | WEFT_REMOTE_CQ_DATA);
    weft::test::run_options opt;
    opt.extra_caps = WEFT_VARIABLE_MSG | WEFT_REMOTE_CQ_DATA;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            const std::size_t len = c.rndv_threshold + 5;
            constexpr std::uint64_t data = 0xDA7A00C0FFEE0001ULL;
            std::vector<unsigned char> sbuf(len);
            fill_pattern(sbuf.data(), len, seed_of(0xda7a));
            if (c.plays(1)) {
                c.post("tsenddata", [&] {
                    return weft_tsenddata(c.ep, sbuf.data(), len, nullptr, data, c.peer(0), 0xD0,
                                          op_ctx(1));
                });
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, sbuf.data(), len, nullptr, c.peer(0), 0xD1, op_ctx(2));
                });
            }
            if (c.plays(0)) {
                std::vector<unsigned char> buf(len + 64, fill_byte);
                const iovec iov{buf.data(), buf.size()};
                const weft_cq_tagged_entry n1 = next_notification(c);
                check_notification(n1);
                WEFT_TCHECK_EQ(n1.tag, 0xD0ULL);
                WEFT_TCHECK_MSG((n1.flags & WEFT_REMOTE_CQ_DATA) != 0,
                                "notification without WEFT_REMOTE_CQ_DATA");
                WEFT_TCHECK_EQ(n1.data, data);
                const weft_cq_tagged_entry n2 = next_notification(c);
                check_notification(n2);
                WEFT_TCHECK_EQ(n2.tag, 0xD1ULL);
                WEFT_TCHECK_EQ(n2.flags & WEFT_REMOTE_CQ_DATA, 0ULL);

                static_cast<weft_var_context *>(n1.op_context)->op_context = op_ctx(10);
                post_var(c, n1.op_context, &iov, 1, WEFT_CLAIM);
                const weft_cq_tagged_entry e = c.wait_ok(op_ctx(10));
                WEFT_TCHECK_MSG((e.flags & WEFT_REMOTE_CQ_DATA) != 0,
                                "claim completion without WEFT_REMOTE_CQ_DATA");
                WEFT_TCHECK_EQ(e.data, data);
                check_payload(buf.data(), len, buf.size(), seed_of(0xda7a), "claimed message");
                static_cast<weft_var_context *>(n2.op_context)->op_context = op_ctx(11);
                post_var(c, n2.op_context, &iov, 1, WEFT_DISCARD);
                const weft_cq_tagged_entry d = c.wait_ok(op_ctx(11));
                WEFT_TCHECK_EQ(d.len, len);
            }
            if (c.plays(1)) {
                (void)c.wait_ok(op_ctx(1));
                (void)c.wait_ok(op_ctx(2));
            }
        },
        opt);
    ASSERT_TRUE(result);
}

// ------------------------------------------------------------------ invalid contexts

/// WEFT_CLAIM and WEFT_DISCARD with something that is not a live var context
/// return -WEFT_EINVAL at once, produce no completion and do not disturb the real
/// messages: NULL, a var context full of random bytes, a copy of a live one at
/// another address, one naming a live record; with `stale`, also a context that
/// was already claimed (right after the claim was posted, and after it
/// completed) or discarded.
void invalid_contexts(rank_ctx &c, bool stale)
{
    const std::size_t len = c.rndv_threshold + 100;
    std::vector<unsigned char> sbuf(len);
    fill_pattern(sbuf.data(), len, seed_of(0x1ba));
    if (c.plays(1)) {
        for (std::uint64_t k = 0; k < 2; ++k) {
            c.post("tsend", [&] {
                return weft_tsend(c.ep, sbuf.data(), len, nullptr, c.peer(0), 0x1BA + k, op_ctx(k));
            });
        }
    }
    if (c.plays(0)) {
        std::vector<unsigned char> buf(len + 64, fill_byte);
        const iovec iov{buf.data(), buf.size()};
        auto expect_einval = [&](void *var, std::uint64_t flags, const std::string &what) {
            const ssize_t rc = var_recvmsg(c, var, &iov, 1, flags);
            WEFT_TCHECK_MSG(rc == -WEFT_EINVAL, what + ": returned " + std::to_string(rc) + " (" +
                                                    weft_strerror(static_cast<int>(rc)) +
                                                    "), expected " + std::to_string(-WEFT_EINVAL));
        };
        auto both = [&](void *var, const std::string &what) {
            expect_einval(var, WEFT_CLAIM, what + " (WEFT_CLAIM)");
            expect_einval(var, WEFT_DISCARD, what + " (WEFT_DISCARD)");
            expect_einval(var, WEFT_CLAIM | WEFT_DISCARD, what + " (WEFT_CLAIM|WEFT_DISCARD)");
        };

        // Before any notification.
        std::mt19937_64 rng(0x5eed);
        weft_var_context junk{};
        junk.op_context = reinterpret_cast<void *>(rng());
        for (void *&p : junk.internal) {
            p = reinterpret_cast<void *>(rng());
        }
        both(nullptr, "NULL context");
        both(&junk, "random var context");

        const weft_cq_tagged_entry n0 = next_notification(c);
        check_notification(n0);
        WEFT_TCHECK_EQ(n0.tag, 0x1BA);
        auto *var0 = static_cast<weft_var_context *>(n0.op_context);
        const weft_cq_tagged_entry n1 = next_notification(c);
        check_notification(n1);
        WEFT_TCHECK_EQ(n1.tag, 0x1BB);
        auto *var1 = static_cast<weft_var_context *>(n1.op_context);
        WEFT_TCHECK(var0 != var1);

        weft_var_context copy = *var0;  // same contents, another address
        both(&copy, "copy of a live var context");
        both(&junk, "random var context with notifications outstanding");
        for (void *&p : junk.internal) {  // a forged record pointer
            p = var0->internal[0];
        }
        both(&junk, "var context naming a live record");

        var0->op_context = op_ctx(10);
        post_var(c, var0, &iov, 1, WEFT_CLAIM);
        if (stale) {
            both(var0, "var context claimed, claim not yet complete");
        }
        const weft_cq_tagged_entry e = c.wait_ok(op_ctx(10));
        WEFT_TCHECK_EQ(e.len, len);
        check_payload(buf.data(), len, len + 64, seed_of(0x1ba), "claimed message");
        if (stale) {
            both(var0, "var context whose claim completed");
        }

        var1->op_context = op_ctx(11);
        std::memset(buf.data(), canary_byte, buf.size());
        post_var(c, var1, &iov, 1, WEFT_DISCARD);
        if (stale) {
            both(var1, "var context discarded");
        }
        const weft_cq_tagged_entry d = c.wait_ok(op_ctx(11));
        WEFT_TCHECK_EQ(d.len, len);
        WEFT_TCHECK(d.buf == nullptr);
        if (stale) {
            both(var1, "var context whose discard completed");
        }
        for (std::size_t b = 0; b < buf.size(); ++b) {
            WEFT_TCHECK_MSG(buf[b] == canary_byte, "discard wrote the buffer");
        }
    }
    if (c.plays(1)) {
        (void)c.wait_ok(op_ctx(0));
        (void)c.wait_ok(op_ctx(1));
    }
}

TEST_P(transport_variable, invalid_var_context_is_rejected)
{
    const ::testing::AssertionResult result =
        run_var(2, [](rank_ctx &c) { invalid_contexts(c, false); });
    ASSERT_TRUE(result);
}

TEST_P(transport_variable, claimed_or_discarded_var_context_is_rejected)
{
    const ::testing::AssertionResult result =
        run_var(2, [](rank_ctx &c) { invalid_contexts(c, true); });
    ASSERT_TRUE(result);
}

// An application's stray pointer that does not point to readable memory at all
// (a PROT_NONE page) is refused the same way, without a crash.
TEST_P(transport_variable, invalid_var_context_unmapped_pointer)
{
    const ::testing::AssertionResult result = run_var(1, [](rank_ctx &c) {
        const long page = sysconf(_SC_PAGESIZE);
        void *p = mmap(nullptr, static_cast<std::size_t>(page), PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        WEFT_TCHECK(p != MAP_FAILED);
        unsigned char buf[64];
        const iovec iov{buf, sizeof(buf)};
        for (const std::uint64_t flags : {WEFT_CLAIM, WEFT_DISCARD}) {
            const ssize_t rc = var_recvmsg(c, p, &iov, 1, flags);
            WEFT_TCHECK_MSG(rc == -WEFT_EINVAL, "returned " + std::to_string(rc));
        }
        WEFT_TCHECK_OK(munmap(p, static_cast<std::size_t>(page)));
    });
    ASSERT_TRUE(result);
}

WEFT_TRANSPORT_SUITE(transport_variable);

}  // namespace
