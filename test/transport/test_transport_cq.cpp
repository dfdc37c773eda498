// Transport-level tests of completion reporting over the public API: the four CQ
// entry formats and completion counters.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "test/transport/harness.hpp"

namespace {

using weft::test::check_payload;
using weft::test::fill_byte;
using weft::test::fill_pattern;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

class transport_cq : public transport_test {};

std::size_t entry_size(weft_cq_format f)
{
    switch (f) {
        case WEFT_CQ_FORMAT_CONTEXT:
            return sizeof(weft_cq_entry);
        case WEFT_CQ_FORMAT_MSG:
            return sizeof(weft_cq_msg_entry);
        case WEFT_CQ_FORMAT_DATA:
            return sizeof(weft_cq_data_entry);
        case WEFT_CQ_FORMAT_TAGGED:
            return sizeof(weft_cq_tagged_entry);
    }
    return 0;
}

constexpr unsigned char cq_guard = 0xEE;

/// Read one entry in the CQ's format, checking that exactly one entry's bytes
/// were written. Returns the raw bytes (at least sizeof(weft_cq_tagged_entry)).
std::vector<unsigned char> read_one(rank_ctx &c, weft_addr_t *src)
{
    const std::size_t esz = entry_size(c.cq_format);
    std::vector<unsigned char> raw(256, cq_guard);
    for (long spins = 0;; ++spins) {
        const ssize_t n = weft_cq_readfrom(c.cq, raw.data(), 1, src);
        if (n == 1) {
            break;
        }
        if (n == -WEFT_EAVAIL) {
            weft_cq_err_entry e{};
            (void)weft_cq_readerr(c.cq, &e, 0);
            WEFT_TCHECK_MSG(false, std::string("unexpected error entry: ") + e.err_str);
        }
        WEFT_TCHECK_EQ(n, -WEFT_EAGAIN);
        WEFT_TCHECK_MSG(spins < 100000000L, "no completion");
    }
    for (std::size_t b = esz; b < raw.size(); ++b) {
        WEFT_TCHECK_MSG(raw[b] == cq_guard, "weft_cq_readfrom wrote byte " + std::to_string(b) +
                                                " past a " + std::to_string(esz) + "-byte entry");
    }
    return raw;
}

/// Check the fields present in the CQ's format for a send or receive entry.
void check_entry(const rank_ctx &c, const std::vector<unsigned char> &raw, bool is_recv,
                 const void *rbuf, std::size_t len, std::uint64_t tag)
{
    weft_cq_tagged_entry e{};
    std::memcpy(&e, raw.data(), entry_size(c.cq_format));
    WEFT_TCHECK_EQ(e.op_context, is_recv ? op_ctx(2) : op_ctx(1));
    if (c.cq_format == WEFT_CQ_FORMAT_CONTEXT) {
        return;
    }
    const std::uint64_t dir = is_recv ? WEFT_RECV : WEFT_SEND;
    const std::uint64_t other = is_recv ? WEFT_SEND : WEFT_RECV;
    WEFT_TCHECK_MSG((e.flags & (dir | WEFT_TAGGED)) == (dir | WEFT_TAGGED),
                    "flags " + weft::test::value_text(e.flags));
    WEFT_TCHECK_MSG((e.flags & other) == 0, "flags " + weft::test::value_text(e.flags));
    WEFT_TCHECK((e.flags & WEFT_REMOTE_CQ_DATA) == 0);
    if (is_recv) {
        WEFT_TCHECK_EQ(e.len, len);
    }
    if (c.cq_format == WEFT_CQ_FORMAT_MSG) {
        return;
    }
    if (is_recv) {
        WEFT_TCHECK(e.buf == rbuf);
    }
    if (c.cq_format == WEFT_CQ_FORMAT_DATA) {
        return;
    }
    if (is_recv) {
        WEFT_TCHECK_EQ(e.tag, tag);
    }
}

// Each format writes entries of its own size with the fields it promises.
TEST_P(transport_cq, entry_formats)
{
    for (const weft_cq_format f :
         {WEFT_CQ_FORMAT_CONTEXT, WEFT_CQ_FORMAT_MSG, WEFT_CQ_FORMAT_DATA, WEFT_CQ_FORMAT_TAGGED}) {
        SCOPED_TRACE("format " + std::to_string(static_cast<int>(f)));
        weft::test::run_options opt;
        opt.cq_format = f;
        const ::testing::AssertionResult result = run(
            2,
            [](rank_ctx &c) {
                c.check_unclaimed = false;  // this body reads the CQ itself
                constexpr std::size_t len = 77;
                const std::uint64_t tag = 0xD00 + static_cast<std::uint64_t>(c.cq_format);
                std::vector<unsigned char> rbuf(len + 64, fill_byte);
                std::vector<unsigned char> sbuf(len);
                if (c.plays(0)) {
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, rbuf.data(), len + 64, nullptr, c.peer(1), tag, 0,
                                          op_ctx(2));
                    });
                }
                c.barrier();
                if (c.plays(1)) {
                    fill_pattern(sbuf.data(), len, seed_of(tag));
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, sbuf.data(), len, nullptr, c.peer(0), tag,
                                          op_ctx(1));
                    });
                }
                // Loopback: both entries on this CQ, in either order.
                const int expected = c.loopback ? 2 : 1;
                for (int i = 0; i < expected; ++i) {
                    weft_addr_t src = WEFT_ADDR_NOTAVAIL;
                    const std::vector<unsigned char> raw = read_one(c, &src);
                    void *ctx = nullptr;
                    std::memcpy(&ctx, raw.data(), sizeof(ctx));
                    const bool is_recv = c.loopback ? ctx == op_ctx(2) : c.rank == 0;
                    check_entry(c, raw, is_recv, rbuf.data(), len, tag);
                    if (is_recv) {
                        WEFT_TCHECK_EQ(src, c.peer(1));
                        check_payload(rbuf.data(), len, len + 64, seed_of(tag), "message");
                    }
                }
                char none[64];
                WEFT_TCHECK_EQ(weft_cq_read(c.cq, none, 1), -WEFT_EAGAIN);
            },
            opt);
        ASSERT_TRUE(result);
    }
}

// Counters count successful completions per direction, count failures apart,
// and can be added to and set.
TEST_P(transport_cq, counters)
{
    weft::test::run_options opt;
    opt.counters = true;
    opt.allow_log_errors = true;  // the truncated receive may be logged
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            constexpr int n = 40;
            const std::size_t cap = std::max<std::size_t>(c.eager_size + 1, 8 * n) + 64;
            auto size_of = [&](int k) { return k % 3 == 2 ? c.eager_size + 1 : 8 * k; };
            std::vector<std::vector<unsigned char>> rbufs(n);
            std::vector<unsigned char> small(16, fill_byte);
            if (c.plays(0)) {
                for (int k = 0; k < n; ++k) {
                    rbufs[k].assign(cap, fill_byte);
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, rbufs[k].data(), cap, nullptr, c.peer(1), 0xE00 + k,
                                          0, op_ctx(100 + k));
                    });
                }
                c.post("trecv", [&] {  // truncated below: a failed completion
                    return weft_trecv(c.ep, small.data(), 8, nullptr, c.peer(1), 0xEFF, 0,
                                      op_ctx(200));
                });
                WEFT_TCHECK_EQ(weft_cntr_read(c.rx_cntr), 0);
            }
            c.barrier();
            std::vector<std::vector<unsigned char>> sbufs(n + 1);
            if (c.plays(1)) {
                for (int k = 0; k < n; ++k) {
                    sbufs[k].resize(size_of(k) + 1);
                    fill_pattern(sbufs[k].data(), size_of(k), seed_of(k, 0xc7));
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, sbufs[k].data(), size_of(k), nullptr, c.peer(0),
                                          0xE00 + k, op_ctx(k));
                    });
                }
                sbufs[n].resize(64);
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, sbufs[n].data(), 64, nullptr, c.peer(0), 0xEFF,
                                      op_ctx(n));
                });
            }
            if (c.plays(0)) {
                WEFT_TCHECK_OK(weft_cntr_wait(c.rx_cntr, n, 30000));
                for (int k = 0; k < n; ++k) {
                    const weft_cq_tagged_entry e = c.wait_ok(op_ctx(100 + k));
                    WEFT_TCHECK_EQ(e.len, size_of(k));
                    check_payload(rbufs[k].data(), size_of(k), cap, seed_of(k, 0xc7),
                                  "message " + std::to_string(k));
                }
                WEFT_TCHECK_EQ(c.wait_err(op_ctx(200)).err, WEFT_ETRUNC);
                WEFT_TCHECK_EQ(weft_cntr_read(c.rx_cntr), n);
                WEFT_TCHECK_EQ(weft_cntr_readerr(c.rx_cntr), 1);
                const int w = weft_cntr_wait(c.rx_cntr, n + 1, 50);
                WEFT_TCHECK_MSG(w == -WEFT_ETIMEDOUT || w == -WEFT_EAVAIL,
                                "weft_cntr_wait past the count returned " + std::to_string(w));
            }
            if (c.plays(1)) {
                WEFT_TCHECK_OK(weft_cntr_wait(c.tx_cntr, n + 1, 30000));
                for (int k = 0; k <= n; ++k) {
                    (void)c.wait_ok(op_ctx(k));
                }
                WEFT_TCHECK_EQ(weft_cntr_read(c.tx_cntr), n + 1);
                WEFT_TCHECK_EQ(weft_cntr_readerr(c.tx_cntr), 0);
            }
            if (!c.loopback && c.rank == 0) {
                WEFT_TCHECK_EQ(weft_cntr_read(c.tx_cntr), 0);  // this rank sent nothing
            }
            WEFT_TCHECK_OK(weft_cntr_set(c.tx_cntr, 100));
            WEFT_TCHECK_EQ(weft_cntr_read(c.tx_cntr), 100);
            WEFT_TCHECK_OK(weft_cntr_add(c.tx_cntr, 5));
            WEFT_TCHECK_EQ(weft_cntr_read(c.tx_cntr), 105);
            WEFT_TCHECK_OK(weft_cntr_wait(c.tx_cntr, 105, 0));
            WEFT_TCHECK_EQ(weft_cntr_wait(c.tx_cntr, 106, 10), -WEFT_ETIMEDOUT);
        },
        opt);
    ASSERT_TRUE(result);
}

// weft_cq_wait times out on an empty CQ and returns once an entry (or an error
// entry) is there, driving progress itself.
TEST_P(transport_cq, cq_wait)
{
    const ::testing::AssertionResult result = run(2, [](rank_ctx &c) {
        std::vector<unsigned char> buf(64, fill_byte);
        if (c.plays(0)) {
            WEFT_TCHECK_EQ(weft_cq_wait(c.cq, 20), -WEFT_ETIMEDOUT);
            c.post("trecv", [&] {
                return weft_trecv(c.ep, buf.data(), 64, nullptr, c.peer(1), 0xF1, 0, op_ctx(1));
            });
            c.post("trecv", [&] {  // will be truncated: an error entry
                return weft_trecv(c.ep, buf.data(), 4, nullptr, c.peer(1), 0xF2, 0, op_ctx(2));
            });
        }
        c.barrier();
        std::vector<unsigned char> sbuf(64);
        if (c.plays(1)) {
            fill_pattern(sbuf.data(), 64, seed_of(0xF1));
            c.post("tsend", [&] {
                return weft_tsend(c.ep, sbuf.data(), 64, nullptr, c.peer(0), 0xF1, op_ctx(3));
            });
        }
        if (c.plays(0)) {
            WEFT_TCHECK_OK(weft_cq_wait(c.cq, 30000));
            (void)c.wait_ok(op_ctx(1), nullptr, 0);  // already there: no waiting needed
            check_payload(buf.data(), 64, 64, seed_of(0xF1), "message");
        }
        c.barrier();
        if (c.plays(1)) {
            c.post("tsend", [&] {
                return weft_tsend(c.ep, sbuf.data(), 64, nullptr, c.peer(0), 0xF2, op_ctx(4));
            });
        }
        if (c.plays(0)) {
            WEFT_TCHECK_OK(weft_cq_wait(c.cq, 30000));
            WEFT_TCHECK_EQ(c.wait_err(op_ctx(2), 0).err, WEFT_ETRUNC);
        }
        if (c.plays(1)) {
            (void)c.wait_ok(op_ctx(3));
            (void)c.wait_ok(op_ctx(4));
        }
    });
    ASSERT_TRUE(result);
}

WEFT_TRANSPORT_SUITE(transport_cq);

}  // namespace

// WEFT_PROGRESS_AUTO: a weft thread per domain drives the endpoint, and reading
// the CQ does not. Messages both ways, small and above the rendezvous threshold
// (whose protocol needs both sides' progress), complete while the test only reads
// the CQ, which under auto progress never drives the transports itself.
TEST_P(transport_cq, auto_progress_completes_operations)
{
    weft::test::run_options opt;
    opt.progress = WEFT_PROGRESS_AUTO;
    const ::testing::AssertionResult result = run(
        2,
        [](rank_ctx &c) {
            WEFT_TCHECK_EQ(c.info->domain_attr.progress, WEFT_PROGRESS_AUTO);
            const int other = c.loopback ? 0 : 1 - c.rank;
            for (const std::size_t len : {std::size_t{8}, c.rndv_threshold + 4096}) {
                std::vector<unsigned char> sbuf(len), rbuf(len + 64, fill_byte);
                fill_pattern(sbuf.data(), len, seed_of(len, c.rank));
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, rbuf.data(), len + 64, nullptr, c.peer(other), len, 0,
                                      op_ctx(1));
                });
                c.barrier();
                c.post("tsend", [&] {
                    return weft_tsend(c.ep, sbuf.data(), len, nullptr, c.peer(other), len,
                                      op_ctx(2));
                });
                const weft_cq_tagged_entry r = c.wait_ok(op_ctx(1));
                WEFT_TCHECK_EQ(r.len, len);
                check_payload(rbuf.data(), len, len + 64, seed_of(len, other),
                              "auto progress, " + std::to_string(len) + " bytes");
                (void)c.wait_ok(op_ctx(2));
                c.barrier();
            }
        },
        opt);
    ASSERT_TRUE(result);
}
