#pragma once
// The benchmark kernels, written once over a backend type B that provides
//
//   void post_recv(void *buf, std::size_t len, std::uint64_t tag, request &r);
//   void post_send(const void *buf, std::size_t len, std::uint64_t tag, request &r);
//   void wait(request &r);                      // drive progress until r.done
//   void wait_all(request *r, std::size_t n);   // ... until all n are done
//
// and for the one-sided kernels (the peer's target region: buffers::recv[0],
// mapped by backend::map_memory; `roff` is an offset into it):
//
//   void put(const void *buf, std::size_t len, std::size_t roff, request &r);
//   void get(void *buf, std::size_t len, std::size_t roff, request &r);
//   void fetch_add(const std::uint64_t *add, std::uint64_t *old, std::size_t roff, request &r);
//   void compare_swap(const std::uint64_t *compare, const std::uint64_t *swap,
//                     std::uint64_t *old, std::size_t roff, request &r);
//   void flush();     // every earlier put, get and atomic complete at the target
//   void progress();  // one poll (drives the peer's operations on our memory)
//
// r.done means locally complete (a put's buffer reusable, a get's data or an
// atomic's old value here); operands and buffers stay untouched until then.
//
// Each backend instantiates them with its own class, so the data path has no
// virtual call and both backends run exactly the same sequence of operations.
// Every receive is posted before the message it matches can be sent (see each
// kernel), so both backends are measured on their expected-message path.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "perf/weft_perf.hpp"

namespace weft::perf::kernels {

[[nodiscard]] inline double now_seconds() noexcept
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// The seed of one message's contents: run, iteration, direction (sending
/// rank), slot in the window. Messages that share a buffer use slot 0.
[[nodiscard]] inline std::uint64_t msg_seed(const run_params &p, int iter, std::uint32_t dir,
                                            int slot) noexcept
{
    std::uint64_t x = (static_cast<std::uint64_t>(p.seed) << 40) ^
                      (static_cast<std::uint64_t>(iter) << 12) ^ (std::uint64_t{dir} << 11) ^
                      static_cast<std::uint64_t>(slot);
    // splitmix64 finaliser: neighbouring seeds give unrelated patterns.
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

[[nodiscard]] inline std::uint64_t pattern_word(std::uint64_t seed, std::size_t i) noexcept
{
    return seed ^ (static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL);
}

inline void fill(char *p, std::size_t n, std::uint64_t seed) noexcept
{
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const std::uint64_t w = pattern_word(seed, i / 8);
        std::memcpy(p + i, &w, 8);
    }
    if (i < n) {
        const std::uint64_t w = pattern_word(seed, i / 8);
        std::memcpy(p + i, &w, n - i);
    }
}

/// --corrupt: damage rank 0's last message after it was filled.
inline void maybe_corrupt(const run_params &p, char *buf, int iter) noexcept
{
    if (p.corrupt && p.rank == 0 && p.size > 0 && iter == p.warmup + p.iters - 1) {
        buf[p.size / 2] ^= 0x01;
    }
}

/// Overwrite a receive buffer before posting it, so that data left over from an
/// earlier message never passes a check.
inline void poison(char *p, std::size_t n) noexcept
{
    std::memset(p, 0xa5, n);
}

/// Check a received message; fail loudly with the first differing byte.
inline void check(const char *p, std::size_t n, std::uint64_t seed, const run_params &prm, int iter,
                  int slot)
{
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const std::uint64_t w = pattern_word(seed, i / 8);
        if (std::memcmp(p + i, &w, 8) != 0) [[unlikely]] {
            break;
        }
    }
    if (i >= n) {
        return;
    }
    char want[8];
    const std::uint64_t w = pattern_word(seed, i / 8);
    std::memcpy(want, &w, 8);
    for (std::size_t j = i; j < n && j < i + 8; ++j) {
        if (p[j] != want[j - i]) {
            fail(
                "%s: data mismatch: size %zu, iteration %d, message %d of the window, byte %zu: "
                "got 0x%02x, expected 0x%02x",
                bench_name(prm.kind), n, iter, slot, j, static_cast<unsigned char>(p[j]),
                static_cast<unsigned char>(want[j - i]));
        }
    }
}

/// Both ranks exchange a small message: each leaves only after its own
/// operations completed and after it heard from the peer. Ends every run, so
/// that no operation of one backend is still in flight (and needing the peer's
/// progress) while the peer has moved on to the other backend.
template <class B>
void sync(B &b)
{
    char in[4];
    char out[4] = {'s', 'y', 'n', 'c'};
    request r;
    request s;
    b.post_recv(in, sizeof(in), tag_sync, r);
    b.post_send(out, sizeof(out), tag_sync, s);
    b.wait(s);
    b.wait(r);
    if (std::memcmp(in, out, sizeof(in)) != 0) {
        fail("synchronisation message corrupted");
    }
}

/// Ping-pong. Rank 0 posts the receive for the pong, sends the ping and waits
/// for both; rank 1 has the receive for the next ping posted before it sends
/// each pong. Returns the time of p.iters round trips.
template <class B>
double lat(B &b, const run_params &p)
{
    char *sbuf = p.buf->send;
    char *rbuf = p.buf->recv[0];
    const std::size_t n = p.size;
    const int total = p.warmup + p.iters;
    request s;
    request r;
    double t0 = 0;
    double t = 0;
    sync(b);
    if (p.rank == 0) {
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            if (p.verify) {
                poison(rbuf, n);
                fill(sbuf, n, msg_seed(p, i, 0, 0));
                maybe_corrupt(p, sbuf, i);
            }
            b.post_recv(rbuf, n, tag_data, r);
            b.post_send(sbuf, n, tag_data, s);
            b.wait(s);
            b.wait(r);
            if (p.verify) {
                check(rbuf, n, msg_seed(p, i, 1, 0), p, i, 0);
            }
        }
        t = now_seconds() - t0;
    } else {
        if (p.verify) {
            poison(rbuf, n);
        }
        b.post_recv(rbuf, n, tag_data, r);
        for (int i = 0; i < total; ++i) {
            b.wait(r);
            if (p.verify) {
                check(rbuf, n, msg_seed(p, i, 0, 0), p, i, 0);
                fill(sbuf, n, msg_seed(p, i, 1, 0));
            }
            if (i + 1 < total) {
                if (p.verify) {
                    poison(rbuf, n);
                }
                b.post_recv(rbuf, n, tag_data, r);
            }
            b.post_send(sbuf, n, tag_data, s);
            b.wait(s);
        }
    }
    sync(b);
    return t;
}

/// Post the receives of one window into `base` (slot w at base + w * stride).
template <class B>
void post_window(B &b, const run_params &p, char *base, request *r)
{
    for (int w = 0; w < p.window; ++w) {
        char *dst = base + static_cast<std::size_t>(w) * p.stride;
        if (p.verify && (w == 0 || p.stride != 0)) {
            poison(dst, p.size);
        }
        b.post_recv(dst, p.size, tag_data, r[w]);
    }
}

template <class B>
void send_window(B &b, const run_params &p, int iter, request *s)
{
    for (int w = 0; w < p.window; ++w) {
        char *src = p.buf->send + static_cast<std::size_t>(w) * p.stride;
        if (p.verify && (w == 0 || p.stride != 0)) {
            fill(src, p.size, msg_seed(p, iter, p.rank, p.stride != 0 ? w : 0));
            if (w + 1 == p.window || p.stride == 0) {
                maybe_corrupt(p, src, iter);
            }
        }
        b.post_send(src, p.size, tag_data, s[w]);
    }
}

inline void check_window(const run_params &p, const char *base, int iter, std::uint32_t from)
{
    const int slots = p.stride != 0 ? p.window : 1;
    for (int w = 0; w < slots; ++w) {
        check(base + static_cast<std::size_t>(w) * p.stride, p.size,
              msg_seed(p, iter, from, p.stride != 0 ? w : 0), p, iter, w);
    }
}

/// Unidirectional window (osu_bw, osu_mbw_mr): rank 0 sends p.window messages,
/// waits for their completion and for a 4-byte ack; rank 1 waits for the
/// window, posts the next window's receives, then sends the ack (so every
/// message finds its receive posted). Returns the time of p.iters windows.
template <class B>
double window(B &b, const run_params &p)
{
    const int total = p.warmup + p.iters;
    std::vector<request> reqs(static_cast<std::size_t>(p.window));
    char ack_out[4] = {'a', 'c', 'k', '!'};
    char ack_in[4];
    request ack;
    double t0 = 0;
    double t = 0;
    sync(b);
    if (p.rank == 0) {
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            b.post_recv(ack_in, sizeof(ack_in), tag_ack, ack);
            send_window(b, p, i, reqs.data());
            b.wait_all(reqs.data(), reqs.size());
            b.wait(ack);
        }
        t = now_seconds() - t0;
        if (std::memcmp(ack_in, ack_out, sizeof(ack_in)) != 0) {
            fail("%s: ack message corrupted", bench_name(p.kind));
        }
    } else {
        char *rbuf = p.buf->recv[0];
        post_window(b, p, rbuf, reqs.data());
        for (int i = 0; i < total; ++i) {
            b.wait_all(reqs.data(), reqs.size());
            if (p.verify) {
                check_window(p, rbuf, i, 0);
            }
            if (i + 1 < total) {
                post_window(b, p, rbuf, reqs.data());
            }
            b.post_send(ack_out, sizeof(ack_out), tag_ack, ack);
            b.wait(ack);
        }
    }
    sync(b);
    return t;
}

/// Bidirectional window (osu_bibw): both ranks send p.window messages and
/// receive the peer's. The receives of iteration i+1 are posted (into the other
/// receive buffer) before the sends of iteration i, and the peer cannot send
/// i+1 before it received our i, so every message finds its receive posted.
/// Returns rank 0's time of p.iters iterations.
template <class B>
double bibw(B &b, const run_params &p)
{
    const int total = p.warmup + p.iters;
    const std::size_t w = static_cast<std::size_t>(p.window);
    std::vector<request> sreq(w);
    std::vector<request> rreq[2] = {std::vector<request>(w), std::vector<request>(w)};
    const std::uint32_t peer = 1 - p.rank;
    double t0 = 0;
    sync(b);
    post_window(b, p, p.buf->recv[0], rreq[0].data());
    for (int i = 0; i < total; ++i) {
        if (i == p.warmup) {
            t0 = now_seconds();
        }
        const int cur = i & 1;
        if (i + 1 < total) {
            post_window(b, p, p.buf->recv[1 - cur], rreq[1 - cur].data());
        }
        send_window(b, p, i, sreq.data());
        b.wait_all(sreq.data(), w);
        b.wait_all(rreq[cur].data(), w);
        if (p.verify) {
            check_window(p, p.buf->recv[cur], i, peer);
        }
    }
    const double t = now_seconds() - t0;
    sync(b);
    return t;
}

// ------------------------------------------------------------------ one-sided
//
// Rank 0 initiates; rank 1's only part in the timed loop is the progress it
// drives while it waits in the closing sync (the target of a library that
// moves data with active messages has to run its progress; one that writes
// the target's memory directly does not need it). Rank 1 prepares its target
// region before the opening sync and, with --verify, checks it after the
// closing one. put_pp is the exception: both ranks put.

/// Fail with the "data mismatch" wording of check() (weft_perf_check.sh looks
/// for it) for a 64-bit value.
[[noreturn, gnu::cold]] inline void mismatch_u64(const run_params &p, const char *what, int iter,
                                                 std::uint64_t got, std::uint64_t want)
{
    fail("%s: data mismatch: %s, iteration %d: got 0x%016llx, expected 0x%016llx",
         bench_name(p.kind), what, iter, static_cast<unsigned long long>(got),
         static_cast<unsigned long long>(want));
}

/// The value of rank 1's target word at the start of an atomic run.
[[nodiscard]] inline std::uint64_t atomic_start(const run_params &p) noexcept
{
    // The top bit clear: start + iterations never wraps.
    return msg_seed(p, 0, 1, 0) >> 1;
}

/// put_lat: put, flush, and the put's own completion, p.iters times. Returns
/// the time of p.iters operations.
template <class B>
double put_lat(B &b, const run_params &p)
{
    const std::size_t n = p.size;
    char *sbuf = p.buf->send;
    char *target = p.buf->recv[0];
    const int total = p.warmup + p.iters;
    request r;
    double t0 = 0;
    double t = 0;
    if (p.rank == 1 && p.verify) {
        poison(target, n);
    }
    sync(b);
    if (p.rank == 0) {
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            if (p.verify) {
                fill(sbuf, n, msg_seed(p, i, 0, 0));
                maybe_corrupt(p, sbuf, i);
            }
            b.put(sbuf, n, 0, r);
            b.flush();
            b.wait(r);
        }
        t = now_seconds() - t0;
    }
    sync(b);
    if (p.rank == 1 && p.verify) {
        check(target, n, msg_seed(p, total - 1, 0, 0), p, total - 1, 0);
    }
    return t;
}

/// get_lat: get and wait for it, p.iters times. The target holds one pattern
/// for the whole run.
template <class B>
double get_lat(B &b, const run_params &p)
{
    const std::size_t n = p.size;
    char *dst = p.buf->recv[1];
    const int total = p.warmup + p.iters;
    request r;
    double t0 = 0;
    double t = 0;
    if (p.rank == 1 && p.verify) {
        fill(p.buf->recv[0], n, msg_seed(p, 0, 1, 0));
    }
    sync(b);
    if (p.rank == 0) {
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            if (p.verify) {
                poison(dst, n);
            }
            b.get(dst, n, 0, r);
            b.wait(r);
            if (p.verify) {
                maybe_corrupt(p, dst, i);
                check(dst, n, msg_seed(p, 0, 1, 0), p, i, 0);
            }
        }
        t = now_seconds() - t0;
    }
    sync(b);
    return t;
}

/// fadd_lat and cswap_lat: a fetching 64-bit atomic on the first word of the
/// target region, and wait for the old value, p.iters times. fetch-and-add
/// adds 1; compare-and-swap replaces the value it expects (start + i) with the
/// next one, so every swap succeeds. Either way the word ends at start + total.
template <class B>
double atomic_lat(B &b, const run_params &p)
{
    const bool cswap = p.kind == bench_kind::cswap_lat;
    const int total = p.warmup + p.iters;
    const std::uint64_t start = atomic_start(p);
    auto *word = reinterpret_cast<std::uint64_t *>(p.buf->recv[0]);
    request r;
    double t0 = 0;
    double t = 0;
    if (p.rank == 1) {
        __atomic_store_n(word, start, __ATOMIC_RELAXED);  // published by the sync
    }
    sync(b);
    if (p.rank == 0) {
        std::uint64_t add = 1;
        std::uint64_t compare = start;
        std::uint64_t swap = start + 1;
        std::uint64_t old = 0;
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            if (p.corrupt && i == total - 1) {
                add = 2;  // the target ends one too high
                swap += 1;
            }
            if (cswap) {
                b.compare_swap(&compare, &swap, &old, 0, r);
            } else {
                b.fetch_add(&add, &old, 0, r);
            }
            b.wait(r);
            if (p.verify && old != start + static_cast<std::uint64_t>(i)) {
                mismatch_u64(p, "old value", i, old, start + static_cast<std::uint64_t>(i));
            }
            ++compare;
            ++swap;
        }
        t = now_seconds() - t0;
    }
    sync(b);
    if (p.rank == 1 && p.verify) {
        const std::uint64_t v = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (v != start + static_cast<std::uint64_t>(total)) {
            mismatch_u64(p, "final value at the target", total - 1, v,
                         start + static_cast<std::uint64_t>(total));
        }
    }
    return t;
}

/// The value of put_pp's flag (the last byte) in iteration i: never 0 (the
/// cleared byte) nor 0xa5 (poison), and different from iteration i-1's.
[[nodiscard]] inline char pp_flag(int i) noexcept
{
    return static_cast<char>(1 + i % 127);
}

/// Drive progress until the byte at `flag` is `want`.
template <class B>
[[gnu::always_inline]] inline void wait_flag(B &b, const char *flag, char want)
{
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != want) {
        b.progress();
    }
}

/// The first byte of [p, p + n) that differs from the pattern of `seed`; n if none.
[[nodiscard]] inline std::size_t first_mismatch(const char *p, std::size_t n,
                                                std::uint64_t seed) noexcept
{
    char want[8];
    for (std::size_t i = 0; i < n; i += 8) {
        const std::uint64_t w = pattern_word(seed, i / 8);
        std::memcpy(want, &w, 8);
        const std::size_t k = std::min<std::size_t>(8, n - i);
        if (std::memcmp(p + i, want, k) != 0) {
            return i;
        }
    }
    return n;
}

/// --verify of put_pp: the flag says the last byte arrived, not that the others
/// did -- a put into memory the initiator maps is a memcpy, whose stores may
/// land tail first -- so wait (driving progress, at most a second) until the
/// bytes before it match, then check() them (which fails if they never did).
template <class B>
void wait_contents(B &b, const char *buf, std::size_t n, std::uint64_t seed, const run_params &p,
                   int iter)
{
    const double deadline = now_seconds() + 1.0;
    while (first_mismatch(buf, n, seed) != n && now_seconds() < deadline) {
        b.progress();  // an opaque call: the buffer is read again after it
    }
    check(buf, n, seed, p, iter, 0);
}

/// put_pp: the RMA ping-pong. Rank 0 puts p.size bytes into rank 1's target
/// region, whose last byte is the iteration's flag; rank 1 polls that byte,
/// then puts the same size back into rank 0's region, which rank 0 polls.
/// A put's completion is awaited only before its buffer is written again.
/// Returns the time of p.iters round trips. (The classic benchmark: it takes
/// the last byte for the whole message; see wait_contents for --verify.)
template <class B>
double put_pp(B &b, const run_params &p)
{
    const std::size_t n = p.size;
    if (n == 0) {
        fail("put_pp polls the last byte of the message: sizes must be at least 1");
    }
    char *sbuf = p.buf->send;
    char *rbuf = p.buf->recv[0];
    char *flag = rbuf + n - 1;
    const int total = p.warmup + p.iters;
    const std::uint32_t peer = 1 - p.rank;
    request s;
    double t0 = 0;
    double t = 0;
    // No flag of an earlier run may be taken for this run's first one.
    *flag = 0;
    if (p.verify) {
        poison(rbuf, n - 1);
    }
    sync(b);
    for (int i = 0; i < total; ++i) {
        if (p.rank == 0 && i == p.warmup) {
            t0 = now_seconds();
        }
        if (p.rank == 1) {
            wait_flag(b, flag, pp_flag(i));
            if (p.verify) {
                wait_contents(b, rbuf, n - 1, msg_seed(p, i, peer, 0), p, i);
                poison(rbuf, n - 1);
            }
        }
        b.wait(s);  // the previous put's buffer
        if (p.verify) {
            fill(sbuf, n, msg_seed(p, i, p.rank, 0));
            // --corrupt: a byte before the flag (a damaged flag would only hang the peer).
            if (p.corrupt && p.rank == 0 && n > 1 && i == total - 1) {
                sbuf[(n - 1) / 2] ^= 0x01;
            }
        }
        sbuf[n - 1] = pp_flag(i);
        b.put(sbuf, n, 0, s);
        if (p.rank == 0) {
            wait_flag(b, flag, pp_flag(i));
            if (p.verify) {
                wait_contents(b, rbuf, n - 1, msg_seed(p, i, peer, 0), p, i);
                poison(rbuf, n - 1);
            }
        }
    }
    b.wait(s);
    if (p.rank == 0) {
        t = now_seconds() - t0;
    }
    sync(b);
    return t;
}

/// put_bw, put_rate and get_bw: p.window puts (from the send buffer) or gets
/// (into recv[1]), message w at offset w * stride on both sides, then flush and
/// the operations' own completions, p.iters times. Returns the time of p.iters
/// windows.
template <class B>
double rma_window(B &b, const run_params &p)
{
    const bool is_get = p.kind == bench_kind::get_bw;
    const std::size_t n = p.size;
    const int total = p.warmup + p.iters;
    const int slots = p.stride != 0 ? p.window : 1;
    std::vector<request> reqs(static_cast<std::size_t>(p.window));
    double t0 = 0;
    double t = 0;
    if (p.rank == 1 && p.verify) {
        for (int w = 0; w < slots; ++w) {
            char *at = p.buf->recv[0] + static_cast<std::size_t>(w) * p.stride;
            if (is_get) {
                fill(at, n, msg_seed(p, 0, 1, w));
            } else {
                poison(at, n);
            }
        }
    }
    sync(b);
    if (p.rank == 0) {
        for (int i = 0; i < total; ++i) {
            if (i == p.warmup) {
                t0 = now_seconds();
            }
            if (is_get) {
                for (int w = 0; w < p.window; ++w) {
                    const std::size_t off = static_cast<std::size_t>(w) * p.stride;
                    if (p.verify && w < slots) {
                        poison(p.buf->recv[1] + off, n);
                    }
                    b.get(p.buf->recv[1] + off, n, off, reqs[static_cast<std::size_t>(w)]);
                }
            } else {
                for (int w = 0; w < p.window; ++w) {
                    const std::size_t off = static_cast<std::size_t>(w) * p.stride;
                    if (p.verify && w < slots) {
                        fill(p.buf->send + off, n, msg_seed(p, i, 0, w));
                        if (w + 1 == slots) {
                            maybe_corrupt(p, p.buf->send + off, i);
                        }
                    }
                    b.put(p.buf->send + off, n, off, reqs[static_cast<std::size_t>(w)]);
                }
            }
            b.flush();
            b.wait_all(reqs.data(), reqs.size());
            if (is_get && p.verify) {
                maybe_corrupt(p, p.buf->recv[1] + static_cast<std::size_t>(slots - 1) * p.stride,
                              i);
                for (int w = 0; w < slots; ++w) {
                    check(p.buf->recv[1] + static_cast<std::size_t>(w) * p.stride, n,
                          msg_seed(p, 0, 1, w), p, i, w);
                }
            }
        }
        t = now_seconds() - t0;
    }
    sync(b);
    if (p.rank == 1 && p.verify && !is_get) {
        for (int w = 0; w < slots; ++w) {
            check(p.buf->recv[0] + static_cast<std::size_t>(w) * p.stride, n,
                  msg_seed(p, total - 1, 0, w), p, total - 1, w);
        }
    }
    return t;
}

/// Run p.kind once with backend B.
template <class B>
double run(B &b, const run_params &p)
{
    switch (p.kind) {
        case bench_kind::lat:
            return lat(b, p);
        case bench_kind::bw:
        case bench_kind::rate:
            return window(b, p);
        case bench_kind::bibw:
            return bibw(b, p);
        case bench_kind::put_lat:
            return put_lat(b, p);
        case bench_kind::get_lat:
            return get_lat(b, p);
        case bench_kind::fadd_lat:
        case bench_kind::cswap_lat:
            return atomic_lat(b, p);
        case bench_kind::put_pp:
            return put_pp(b, p);
        case bench_kind::put_bw:
        case bench_kind::put_rate:
        case bench_kind::get_bw:
            return rma_window(b, p);
    }
    fail("unknown benchmark %d", static_cast<int>(p.kind));
}

}  // namespace weft::perf::kernels
