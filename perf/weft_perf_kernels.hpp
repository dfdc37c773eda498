#pragma once
// The benchmark kernels, written once over a backend type B that provides
//
//   void post_recv(void *buf, std::size_t len, std::uint64_t tag, request &r);
//   void post_send(const void *buf, std::size_t len, std::uint64_t tag, request &r);
//   void wait(request &r);                      // drive progress until r.done
//   void wait_all(request *r, std::size_t n);   // ... until all n are done
//
// Each backend instantiates them with its own class, so the data path has no
// virtual call and both backends run exactly the same sequence of operations.
// Every receive is posted before the message it matches can be sent (see each
// kernel), so both backends are measured on their expected-message path.

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
    }
    fail("unknown benchmark %d", static_cast<int>(p.kind));
}

}  // namespace weft::perf::kernels
