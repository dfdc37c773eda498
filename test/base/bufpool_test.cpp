// Unit tests of the size-class buffer pool (src/base/bufpool.hpp).

#include <bit>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/bufpool.hpp"
#include "log_expect.hpp"

namespace weft::base {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

bool aligned64(const void *p)
{
    return reinterpret_cast<std::uintptr_t>(p) % 64 == 0;
}

TEST(bufpool, class_rounding)
{
    bufpool pool;  // 256 B .. 1 MiB
    EXPECT_EQ(pool.min_size(), 256u);
    EXPECT_EQ(pool.max_size(), mib);
    const struct {
        std::size_t n;
        std::size_t size;
        std::uint8_t cls;
    } cases[] = {{0, 256, 0},        {1, 256, 0},     {255, 256, 0},   {256, 256, 0},
                 {257, 512, 1},      {4095, 4096, 4}, {4096, 4096, 4}, {4097, 8192, 5},
                 {mib - 1, mib, 12}, {mib, mib, 12}};
    for (const auto &c : cases) {
        pooled_buffer b = pool.get(c.n);
        ASSERT_NE(b.data, nullptr) << c.n;
        EXPECT_EQ(b.cls, c.cls) << c.n;
        EXPECT_EQ(pool.class_size(b.cls), c.size) << c.n;
        EXPECT_TRUE(aligned64(b.data)) << c.n;
        pool.put(b);
    }
    EXPECT_EQ(pool.large_in_use(), 0u);
    pooled_buffer large = pool.get(mib + 1);
    ASSERT_NE(large.data, nullptr);
    EXPECT_EQ(large.cls, bufpool::large_class);
    EXPECT_EQ(pool.class_size(large.cls), 0u);
    EXPECT_EQ(pool.large_in_use(), 1u);
    pool.put(large);
    EXPECT_EQ(pool.large_in_use(), 0u);
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.class_size(13), 0u);  // past the last class
}

TEST(bufpool, options_are_rounded_up_to_powers_of_two)
{
    {
        bufpool pool({.min_size = 100, .max_size = 3000});
        EXPECT_EQ(pool.min_size(), 128u);
        EXPECT_EQ(pool.max_size(), 4096u);
        pooled_buffer b = pool.get(0);
        EXPECT_EQ(pool.class_size(b.cls), 128u);
        pool.put(b);
    }
    {
        bufpool pool({.min_size = 0, .max_size = 0});  // both at least 64
        EXPECT_EQ(pool.min_size(), 64u);
        EXPECT_EQ(pool.max_size(), 64u);
        pooled_buffer b = pool.get(64);
        EXPECT_EQ(b.cls, 0);
        pool.put(b);
        pooled_buffer large = pool.get(65);
        EXPECT_EQ(large.cls, bufpool::large_class);
        pool.put(large);
    }
    {
        bufpool pool({.min_size = 4096, .max_size = 1024});  // max below min: max = min
        EXPECT_EQ(pool.min_size(), 4096u);
        EXPECT_EQ(pool.max_size(), 4096u);
    }
    {
        const std::size_t huge = std::numeric_limits<std::size_t>::max();
        bufpool pool({.max_size = huge, .chunk_bytes = huge});
        EXPECT_EQ(pool.max_size(), bufpool::size_limit);
    }
}

TEST(bufpool, put_buffer_comes_back_lifo)
{
    bufpool pool({.min_size = 256, .max_size = 4096, .chunk_bytes = 4096});
    pooled_buffer a = pool.get(300);
    pooled_buffer b = pool.get(400);
    pooled_buffer c = pool.get(500);
    ASSERT_NE(a.data, nullptr);
    ASSERT_NE(b.data, nullptr);
    ASSERT_NE(c.data, nullptr);
    EXPECT_NE(a.data, b.data);
    EXPECT_NE(b.data, c.data);
    pool.put(b);
    pool.put(a);
    EXPECT_EQ(pool.get(512).data, a.data);  // the warm buffer comes back first
    EXPECT_EQ(pool.get(257).data, b.data);
    // Another class does not reuse them.
    pooled_buffer other = pool.get(256);
    EXPECT_NE(other.data, a.data);
    EXPECT_NE(other.data, b.data);
    pool.put(other);
    pool.put(a);
    pool.put(b);
    pool.put(c);
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.chunks(), 2u);  // one per class used, nothing more
}

TEST(bufpool, full_class_size_is_writable)
{
    // With ASan, a buffer shorter than its class_size, or overlapping a poisoned free
    // neighbour, is reported here.
    bufpool pool({.min_size = 64, .max_size = 64 << 10, .chunk_bytes = 16 << 10});
    std::vector<pooled_buffer> live;
    for (std::size_t size = 64; size <= pool.max_size(); size *= 2) {
        for (int i = 0; i < 5; ++i) {
            pooled_buffer b = pool.get(size);
            ASSERT_NE(b.data, nullptr);
            ASSERT_EQ(pool.class_size(b.cls), size);
            EXPECT_TRUE(aligned64(b.data));
            std::memset(b.data, 0xa5 ^ i, size);
            live.push_back(b);
        }
    }
    for (pooled_buffer b : live) {
        pool.put(b);
    }
}

TEST(bufpool, large_allocations)
{
    bufpool pool({.min_size = 256, .max_size = 4096});
    std::vector<pooled_buffer> large;
    for (std::size_t n : {4097ul, 5000ul, 100000ul, 3 * mib + 7}) {
        pooled_buffer b = pool.get(n);
        ASSERT_NE(b.data, nullptr);
        EXPECT_EQ(b.cls, bufpool::large_class);
        EXPECT_TRUE(aligned64(b.data));
        std::memset(b.data, 0x5a, n);
        large.push_back(b);
    }
    EXPECT_EQ(pool.large_in_use(), 4u);
    EXPECT_EQ(pool.in_use(), 0u);  // class buffers only
    EXPECT_EQ(pool.chunks(), 0u);
    EXPECT_EQ(pool.bytes_held(), 0u);
    for (pooled_buffer b : large) {
        pool.put(b);
    }
    EXPECT_EQ(pool.large_in_use(), 0u);
}

TEST(bufpool, impossible_size_returns_null_and_logs)
{
    bufpool pool;
    test::expect_log_errors expect(1);
    pooled_buffer b = pool.get(std::numeric_limits<std::size_t>::max());
    EXPECT_EQ(b.data, nullptr);
    EXPECT_EQ(pool.large_in_use(), 0u);
    pool.put(b);  // a no-op
}

TEST(bufpool, null_put_is_a_noop)
{
    bufpool pool;
    pool.put({});
    pool.put({.data = nullptr, .cls = 3});
    pool.put({.data = nullptr, .cls = bufpool::large_class});
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.large_in_use(), 0u);
    // The free lists are still empty: a get() grows the pool.
    pooled_buffer b = pool.get(1);
    EXPECT_NE(b.data, nullptr);
    EXPECT_EQ(pool.chunks(), 1u);
    pool.put(b);
}

TEST(bufpool, put_of_unknown_class_is_logged_not_linked)
{
    bufpool pool({.min_size = 256, .max_size = 1024});
    pooled_buffer b = pool.get(256);
    ASSERT_NE(b.data, nullptr);
    {
        test::expect_log_errors expect(1);
        pool.put({.data = b.data, .cls = 7});
    }
    EXPECT_EQ(pool.in_use(), 1u);
    pool.put(b);
    EXPECT_EQ(pool.in_use(), 0u);
}

TEST(bufpool, max_bytes_limit_returns_null_and_recovers)
{
    // 2.5 chunks of 1 KiB: the third grow is cut to the two buffers that still fit.
    bufpool pool({.min_size = 256, .max_size = 1024, .chunk_bytes = 1024, .max_bytes = 2560});
    std::vector<pooled_buffer> live;
    for (int i = 0; i < 10; ++i) {
        pooled_buffer b = pool.get(256);
        ASSERT_NE(b.data, nullptr) << i;
        live.push_back(b);
    }
    EXPECT_EQ(pool.bytes_held(), 2560u);
    EXPECT_EQ(pool.chunks(), 3u);
    EXPECT_EQ(pool.get(1).data, nullptr);
    EXPECT_EQ(pool.get(512).data, nullptr);  // no room for another class either
    EXPECT_EQ(pool.get(1024).data, nullptr);
    EXPECT_EQ(pool.in_use(), 10u);
    // Large allocations are not limited.
    pooled_buffer large = pool.get(2000);
    ASSERT_NE(large.data, nullptr);
    pool.put(large);

    pool.put(live[4]);
    pooled_buffer again = pool.get(200);
    EXPECT_EQ(again.data, live[4].data);
    EXPECT_EQ(pool.get(200).data, nullptr);
    // A free buffer of class 0 does not make room for class 1.
    pool.put(again);
    EXPECT_EQ(pool.get(512).data, nullptr);
    live[4] = pool.get(1);
    EXPECT_NE(live[4].data, nullptr);
    for (pooled_buffer b : live) {
        pool.put(b);
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.bytes_held(), 2560u);  // memory is kept until destruction
}

TEST(bufpool, accounting)
{
    bufpool pool({.min_size = 256, .max_size = 8192, .chunk_bytes = 4096});
    EXPECT_EQ(pool.bytes_held(), 0u);  // nothing allocated before the first get()
    EXPECT_EQ(pool.chunks(), 0u);
    std::vector<pooled_buffer> live;
    for (int i = 0; i < 16; ++i) {  // exactly one chunk of 16 x 256 B
        live.push_back(pool.get(256));
    }
    EXPECT_EQ(pool.chunks(), 1u);
    EXPECT_EQ(pool.bytes_held(), 4096u);
    EXPECT_EQ(pool.in_use(), 16u);
    live.push_back(pool.get(200));
    EXPECT_EQ(pool.chunks(), 2u);
    EXPECT_EQ(pool.bytes_held(), 8192u);
    live.push_back(pool.get(4096));  // one 4 KiB buffer per chunk
    EXPECT_EQ(pool.chunks(), 3u);
    EXPECT_EQ(pool.bytes_held(), 12288u);
    live.push_back(pool.get(8000));  // chunk_bytes below the class: still one buffer
    EXPECT_EQ(pool.chunks(), 4u);
    EXPECT_EQ(pool.bytes_held(), 20480u);
    EXPECT_EQ(pool.in_use(), 19u);
    for (pooled_buffer b : live) {
        pool.put(b);
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.chunks(), 4u);
    EXPECT_EQ(pool.bytes_held(), 20480u);
    // Getting them again allocates nothing.
    live.clear();
    for (int i = 0; i < 17; ++i) {
        live.push_back(pool.get(256));
    }
    EXPECT_EQ(pool.chunks(), 4u);
    for (pooled_buffer b : live) {
        pool.put(b);
    }
}

TEST(bufpool, zero_chunk_bytes_means_one_buffer_per_chunk)
{
    bufpool pool({.min_size = 64, .max_size = 256, .chunk_bytes = 0});
    pooled_buffer a = pool.get(64);
    pooled_buffer b = pool.get(64);
    EXPECT_EQ(pool.chunks(), 2u);
    EXPECT_EQ(pool.bytes_held(), 128u);
    pool.put(a);
    pool.put(b);
}

// The model of one pool: each class's free list is a stack whose bottom holds the
// `fresh` buffers of the last grow (addresses unknown to the model) and whose top holds
// the buffers put back since (addresses known), so every get() is predicted.
struct model {
    struct live_buffer {
        pooled_buffer b;
        std::size_t usable;
        unsigned char pattern;
    };
    struct class_state {
        std::size_t fresh = 0;
        std::vector<void *> returned;
    };

    explicit model(const bufpool_options &o) : opts(o), classes(64) {}

    bufpool_options opts;
    std::vector<class_state> classes;
    std::vector<live_buffer> live;
    std::map<std::uintptr_t, std::uintptr_t> ranges;  // live buffers: start -> end
    std::size_t bytes_held = 0;
    std::size_t chunks = 0;
    std::size_t in_use = 0;
    std::size_t large = 0;
    // How often each path was taken, so a test can check it exercised them all.
    std::size_t reused = 0;
    std::size_t grown = 0;
    std::size_t refused = 0;
    std::size_t large_gets = 0;
};

void check_no_overlap(model &m, const void *p, std::size_t n)
{
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = start + n;
    auto next = m.ranges.lower_bound(start);
    if (next != m.ranges.end()) {
        ASSERT_GE(next->first, end) << "overlaps the live buffer at " << next->first;
    }
    if (next != m.ranges.begin()) {
        ASSERT_LE(std::prev(next)->second, start) << "overlaps the live buffer before it";
    }
    m.ranges.emplace(start, end);
}

void model_get(bufpool &pool, model &m, std::size_t n, unsigned char pattern)
{
    pooled_buffer b = pool.get(n);
    if (n > pool.max_size()) {
        ASSERT_NE(b.data, nullptr);
        ASSERT_EQ(b.cls, bufpool::large_class);
        ++m.large;
        ++m.large_gets;
    } else {
        const std::size_t want = n > pool.min_size() ? n : pool.min_size();
        std::uint8_t cls = 0;
        while (pool.class_size(cls) < want) {
            ++cls;
        }
        const std::size_t size = pool.class_size(cls);
        model::class_state &c = m.classes[cls];
        if (!c.returned.empty()) {
            ASSERT_EQ(b.data, c.returned.back()) << "not LIFO";
            c.returned.pop_back();
            ++m.reused;
        } else if (c.fresh != 0) {
            ASSERT_NE(b.data, nullptr);
            --c.fresh;
        } else {
            std::size_t per_chunk = m.opts.chunk_bytes / size > 0 ? m.opts.chunk_bytes / size : 1;
            if (m.opts.max_bytes != 0) {
                const std::size_t room = (m.opts.max_bytes - m.bytes_held) / size;
                per_chunk = per_chunk < room ? per_chunk : room;
            }
            if (per_chunk == 0) {
                ASSERT_EQ(b.data, nullptr) << "past max_bytes";
                ++m.refused;
                return;
            }
            ASSERT_NE(b.data, nullptr);
            ++m.chunks;
            ++m.grown;
            m.bytes_held += per_chunk * size;
            c.fresh = per_chunk - 1;
        }
        ASSERT_EQ(b.cls, cls);
        ++m.in_use;
    }
    ASSERT_TRUE(aligned64(b.data));
    const std::size_t usable = b.cls == bufpool::large_class ? n : pool.class_size(b.cls);
    check_no_overlap(m, b.data, usable);
    if (testing::Test::HasFatalFailure()) {
        return;
    }
    std::memset(b.data, pattern, usable);
    m.live.push_back({b, usable, pattern});
}

void model_put(bufpool &pool, model &m, std::size_t i)
{
    const model::live_buffer l = m.live[i];
    m.live[i] = m.live.back();
    m.live.pop_back();
    const auto *bytes = static_cast<const unsigned char *>(l.b.data);
    for (std::size_t k = 0; k < l.usable; ++k) {
        ASSERT_EQ(bytes[k], l.pattern) << "byte " << k << " of " << l.usable << " was overwritten";
    }
    m.ranges.erase(reinterpret_cast<std::uintptr_t>(l.b.data));
    pool.put(l.b);
    if (l.b.cls == bufpool::large_class) {
        --m.large;
    } else {
        m.classes[l.b.cls].returned.push_back(l.b.data);
        --m.in_use;
    }
}

// Returns the model at the end, for the caller to check which paths were taken.
model run_random(const bufpool_options &o, std::uint32_t seed, int steps)
{
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    bufpool pool(o);
    model m(o);
    std::mt19937 rng(seed);
    // Sizes spread over every class and beyond max_size: a power of two picked uniformly,
    // then a size up to it.
    const unsigned top = static_cast<unsigned>(std::bit_width(pool.max_size())) + 1;
    std::uniform_int_distribution<unsigned> log_size(0, top);
    for (int step = 0; step < steps; ++step) {
        // Drift between filling and draining, so that both grow and reuse are exercised.
        const bool filling = (step / 500) % 2 == 0;
        const bool get =
            m.live.empty() || (m.live.size() < 300 && rng() % 100 < (filling ? 70u : 35u));
        if (get) {
            const std::size_t limit = std::size_t{1} << log_size(rng);
            const std::size_t n = std::uniform_int_distribution<std::size_t>(0, limit)(rng);
            model_get(pool, m, n, static_cast<unsigned char>(rng()));
        } else {
            model_put(pool, m, rng() % m.live.size());
        }
        if (testing::Test::HasFatalFailure()) {
            return m;
        }
        EXPECT_EQ(pool.in_use(), m.in_use) << "step " << step;
        EXPECT_EQ(pool.large_in_use(), m.large) << "step " << step;
        EXPECT_EQ(pool.bytes_held(), m.bytes_held) << "step " << step;
        EXPECT_EQ(pool.chunks(), m.chunks) << "step " << step;
        if (testing::Test::HasFailure()) {
            return m;
        }
    }
    while (!m.live.empty()) {
        model_put(pool, m, m.live.size() - 1);
        if (testing::Test::HasFatalFailure()) {
            return m;
        }
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(pool.large_in_use(), 0u);
    return m;
}

TEST(bufpool, random_get_put_matches_model)
{
    for (std::uint32_t seed = 1; seed <= 8; ++seed) {
        const model m =
            run_random({.min_size = 64, .max_size = 8192, .chunk_bytes = 4096}, seed, 4000);
        if (HasFailure()) {
            return;
        }
        EXPECT_GT(m.reused, 100u) << "seed " << seed;
        EXPECT_GT(m.grown, 5u) << "seed " << seed;
        EXPECT_GT(m.large_gets, 50u) << "seed " << seed;
        EXPECT_EQ(m.refused, 0u) << "seed " << seed;
    }
}

TEST(bufpool, random_get_put_matches_model_with_limits)
{
    // Small chunks (one buffer each for the big classes) and a byte limit reached often.
    for (std::uint32_t seed = 100; seed < 108; ++seed) {
        const model m = run_random(
            {.min_size = 128, .max_size = 16384, .chunk_bytes = 1000, .max_bytes = 96 << 10}, seed,
            4000);
        if (HasFailure()) {
            return;
        }
        EXPECT_GT(m.reused, 100u) << "seed " << seed;
        EXPECT_GT(m.grown, 5u) << "seed " << seed;
        EXPECT_GT(m.refused, 10u) << "seed " << seed;
    }
}

TEST(bufpool, destroyed_with_buffers_out_asserts_in_debug)
{
    // Release builds free the chunks anyway (ASan/valgrind check nothing leaks).
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEBUG_DEATH(
        {
            bufpool pool;
            (void)pool.get(100);
        },
        "");
}

TEST(bufpool, use_after_put_is_caught_by_asan)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    bufpool pool({.min_size = 256});
    pooled_buffer b = pool.get(1000);
    auto *bytes = static_cast<unsigned char *>(b.data);
    pool.put(b);
    EXPECT_DEATH(bytes[600] = 1, "use-after-poison");  // past the free-list link
#else
    GTEST_SKIP() << "free buffers are only poisoned in AddressSanitizer builds (--enable-asan)";
#endif
}

}  // namespace
}  // namespace weft::base
