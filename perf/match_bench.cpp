// match_bench: nanoseconds per matching operation of weft::proto::matcher, against a
// linear-list baseline. Results and their interpretation: docs/matching.md.
//
// Every scenario keeps a steady state of N queued entries with distinct keys
// (src = i % 256, tag = comm << 32 | i / 256: many sources, many small tags of one
// communicator) and touches them in a random (seeded) order, so bucket and list
// positions are random as they would be with real traffic. One "op" is one message's
// full matching work:
//   (a) expected:   match_posted() hits a posted receive; the receive is posted again.
//   (b) unexpected: post() hits an unexpected message; the next message with that key
//                   misses in match_posted() and goes to add_unexpected().
//   (c) as (a)/(b) with one any-source receive posted first that never matches, so every
//       arrival also scans the wildcard list.
//   (d) the same loops over a linear baseline: one list of posted receives and one of
//       unexpected messages, scanned from the front (what a naive matcher does).
// Each configuration runs one warm-up repetition, then `reps` timed repetitions; the
// table shows the minimum and the median ns per op.
//
// Usage: match_bench [reps]   (default 11, at least 10 is meaningful)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "proto/match.hpp"

namespace {

using weft::proto::any_source;
using weft::proto::match_link;
using weft::proto::posted_recv;
using weft::proto::unexpected_msg;

constexpr std::uint64_t comm = 1;
constexpr std::uint64_t never_tag = 0xdead'0000'0000'0000ULL;

struct key {
    std::uint32_t src;
    std::uint64_t tag;
};

key key_of(std::size_t i)
{
    return {static_cast<std::uint32_t>(i % 256), (comm << 32) | (i / 256)};
}

// The baseline: two lists scanned linearly, the same intrusive records.
class linear_matcher {
  public:
    explicit linear_matcher(unsigned /*hash_bits*/)
    {
        posted_.prev = posted_.next = &posted_;
        unexpected_.prev = unexpected_.next = &unexpected_;
    }
    linear_matcher(const linear_matcher &) = delete;
    linear_matcher &operator=(const linear_matcher &) = delete;

    unexpected_msg *post(posted_recv *r, std::uint32_t src, std::uint64_t tag, std::uint64_t ignore)
    {
        for (match_link *l = unexpected_.next; l != &unexpected_; l = l->next) {
            auto *m = reinterpret_cast<unexpected_msg *>(l);
            if (weft::proto::matcher::accepts(src, tag, ignore, m->src, m->tag)) {
                unlink(l);
                return m;
            }
        }
        r->src = src;
        r->tag = tag;
        r->ignore = ignore;
        push_back(&posted_, &r->link);
        return nullptr;
    }
    posted_recv *match_posted(std::uint32_t src, std::uint64_t tag)
    {
        for (match_link *l = posted_.next; l != &posted_; l = l->next) {
            auto *r = reinterpret_cast<posted_recv *>(l);
            if (weft::proto::matcher::accepts(r->src, r->tag, r->ignore, src, tag)) {
                unlink(l);
                return r;
            }
        }
        return nullptr;
    }
    void add_unexpected(unexpected_msg *m, std::uint32_t src, std::uint64_t tag)
    {
        m->src = src;
        m->tag = tag;
        push_back(&unexpected_, &m->bucket_link);
    }

  private:
    static void push_back(match_link *head, match_link *n)
    {
        n->prev = head->prev;
        n->next = head;
        head->prev->next = n;
        head->prev = n;
    }
    static void unlink(match_link *n)
    {
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->next = n->prev = nullptr;
    }
    match_link posted_;
    match_link unexpected_;
};

enum class scenario { expected, unexpected };

struct config {
    const char *label;
    scenario sc;
    bool linear;
    bool wildcard;
    std::size_t n;
    unsigned hash_bits;
};

struct timing {
    double min_ns;
    double median_ns;
};

[[noreturn]] void fail(const char *what, std::size_t i)
{
    std::fprintf(stderr, "match_bench: wrong match (%s) for key %zu\n", what, i);
    std::exit(1);
}

template <class Matcher>
timing run(const config &c, int reps)
{
    const std::size_t n = c.n;
    std::vector<key> keys(n);
    for (std::size_t i = 0; i < n; ++i) {
        keys[i] = key_of(i);
    }
    // Uniform random keys, with replacement. (A cyclic permutation would be a trap:
    // after one cycle the baseline's lists are in exactly the order of the next cycle,
    // and every scan would stop at the first node.)
    std::mt19937_64 rng(42 + n);
    std::vector<std::uint32_t> order(std::size_t{1} << 16);
    for (std::uint32_t &o : order) {
        o = static_cast<std::uint32_t>(rng() % n);
    }

    Matcher m(c.hash_bits);
    std::vector<posted_recv> recvs(n);
    std::vector<unexpected_msg> msgs(n);
    posted_recv wild;
    posted_recv probe;
    if (c.wildcard) {
        (void)m.post(&wild, any_source, never_tag, 0);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (c.sc == scenario::expected) {
            (void)m.post(&recvs[i], keys[i].src, keys[i].tag, 0);
        } else {
            m.add_unexpected(&msgs[i], keys[i].src, keys[i].tag);
        }
    }

    // Ops per repetition: enough for ~milliseconds of work; fewer for the linear
    // baseline at large N, whose op costs ~N/2 node visits.
    std::size_t ops = 200000;
    if (c.linear) {
        ops = std::clamp<std::size_t>(20'000'000 / n, 200, 200000);
    }
    std::size_t pos = 0;
    auto body = [&](std::size_t count) {
        for (std::size_t k = 0; k < count; ++k) {
            const std::uint32_t i = order[pos];
            pos = (pos + 1) & (order.size() - 1);
            const key kk = keys[i];
            if (c.sc == scenario::expected) {
                posted_recv *r = m.match_posted(kk.src, kk.tag);
                if (r != &recvs[i]) [[unlikely]] {
                    fail("arrival", i);
                }
                (void)m.post(r, kk.src, kk.tag, 0);
            } else {
                unexpected_msg *u = m.post(&probe, kk.src, kk.tag, 0);
                if (u != &msgs[i]) [[unlikely]] {
                    fail("post", i);
                }
                if (m.match_posted(kk.src, kk.tag) != nullptr) [[unlikely]] {
                    fail("unexpected arrival", i);
                }
                m.add_unexpected(u, kk.src, kk.tag);
            }
        }
    };

    body(ops);  // warm-up: caches, branch predictors, page faults
    std::vector<double> ns;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        body(ops);
        const auto t1 = std::chrono::steady_clock::now();
        ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(ops));
    }
    std::sort(ns.begin(), ns.end());
    return {ns.front(), ns[ns.size() / 2]};
}

}  // namespace

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 11;
    std::vector<config> configs;
    const std::size_t sizes[] = {1, 64, 1024, 16384};
    struct row {
        const char *label;
        scenario sc;
        bool linear;
        bool wildcard;
    };
    const row rows[] = {
        {"(a) expected: arrive + repost", scenario::expected, false, false},
        {"(b) unexpected: post + arrive", scenario::unexpected, false, false},
        {"(c) (a) + 1 wildcard posted", scenario::expected, false, true},
        {"(c) (b) + 1 wildcard posted", scenario::unexpected, false, true},
        {"(d) (a) linear baseline", scenario::expected, true, false},
        {"(d) (b) linear baseline", scenario::unexpected, true, false},
    };
    for (const row &r : rows) {
        for (std::size_t n : sizes) {
            configs.push_back({r.label, r.sc, r.linear, r.wildcard, n, 10});
        }
    }
    // A larger table for the largest N: shows what hash_bits buys.
    configs.push_back({rows[0].label, scenario::expected, false, false, 16384, 14});
    configs.push_back({rows[1].label, scenario::unexpected, false, false, 16384, 14});

    std::printf("weft match_bench: ns per op (one message matched), %d repetitions\n", reps);
    std::printf("%-32s %6s %5s %10s %10s\n", "scenario", "N", "bits", "min ns", "median ns");
    for (const config &c : configs) {
        const timing t =
            c.linear ? run<linear_matcher>(c, reps) : run<weft::proto::matcher>(c, reps);
        std::printf("%-32s %6zu %5s %10.1f %10.1f\n", c.label, c.n,
                    c.linear ? "-" : (c.hash_bits == 10 ? "10" : "14"), t.min_ns, t.median_ns);
        std::fflush(stdout);
    }
    return 0;
}
