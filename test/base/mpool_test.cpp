// Unit tests of the object pool (src/base/mpool.hpp).

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "base/mpool.hpp"

namespace weft::base {
namespace {

struct counted {
    static inline int alive = 0;
    int value = 7;
    char payload[40];
    counted() { ++alive; }
    ~counted() { --alive; }
};

TEST(mpool, get_constructs_put_destroys)
{
    counted::alive = 0;
    {
        mpool<counted> pool;
        counted *a = pool.get();
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(counted::alive, 1);
        EXPECT_EQ(a->value, 7);
        EXPECT_EQ(pool.in_use(), 1u);
        a->value = 99;
        pool.put(a);
        EXPECT_EQ(counted::alive, 0);
        EXPECT_EQ(pool.in_use(), 0u);
        counted *b = pool.get();
        EXPECT_EQ(b, a);         // the free list is LIFO: the warm object comes back
        EXPECT_EQ(b->value, 7);  // constructed again
        pool.put(b);
    }
    EXPECT_EQ(counted::alive, 0);
}

TEST(mpool, default_chunk_is_64)
{
    mpool<std::uint64_t> pool;
    EXPECT_EQ(pool.capacity(), 0u);  // nothing allocated before the first get()
    std::uint64_t *p = pool.get();
    EXPECT_EQ(pool.capacity(), 64u);
    EXPECT_EQ(pool.chunks(), 1u);
    pool.put(p);
}

TEST(mpool, grows_in_doubling_chunks_up_to_max)
{
    mpool<counted> pool({.chunk = 4, .max_chunk = 16});
    std::vector<counted *> objs;
    std::set<counted *> distinct;
    const std::size_t expect_capacity[] = {4, 12, 28, 44, 60};
    for (std::size_t chunk = 0; chunk < 5; ++chunk) {
        while (pool.in_use() < expect_capacity[chunk]) {
            counted *c = pool.get();
            ASSERT_NE(c, nullptr);
            std::memset(c->payload, static_cast<int>(objs.size() & 0x7f), sizeof(c->payload));
            objs.push_back(c);
            distinct.insert(c);
        }
        EXPECT_EQ(pool.capacity(), expect_capacity[chunk]);
        EXPECT_EQ(pool.chunks(), chunk + 1);
    }
    EXPECT_EQ(distinct.size(), objs.size());
    EXPECT_EQ(counted::alive, static_cast<int>(objs.size()));
    // No object overlaps another: each still holds its own pattern.
    for (std::size_t i = 0; i < objs.size(); ++i) {
        for (char ch : objs[i]->payload) {
            ASSERT_EQ(ch, static_cast<char>(i & 0x7f));
        }
    }
    for (counted *c : objs) {
        pool.put(c);
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(counted::alive, 0);
    // Reuse: getting them all again allocates nothing.
    objs.clear();
    for (std::size_t i = 0; i < 60; ++i) {
        objs.push_back(pool.get());
        EXPECT_EQ(distinct.count(objs.back()), 1u);
    }
    EXPECT_EQ(pool.chunks(), 5u);
    for (counted *c : objs) {
        pool.put(c);
    }
}

TEST(mpool, exhaustion_returns_null_until_put)
{
    mpool<int> pool({.chunk = 4, .max_chunk = 64, .max_objects = 10});
    std::vector<int *> objs;
    for (int i = 0; i < 10; ++i) {
        int *p = pool.get();
        ASSERT_NE(p, nullptr) << i;
        objs.push_back(p);
    }
    EXPECT_EQ(pool.capacity(), 10u);  // the second chunk was cut to the limit
    EXPECT_EQ(pool.get(), nullptr);
    EXPECT_EQ(pool.get(), nullptr);
    EXPECT_EQ(pool.in_use(), 10u);
    pool.put(objs[3]);
    int *again = pool.get();
    EXPECT_EQ(again, objs[3]);
    EXPECT_EQ(pool.get(), nullptr);
    objs[3] = again;
    for (int *p : objs) {
        pool.put(p);
    }
}

TEST(mpool, zero_chunk_means_one)
{
    mpool<int> pool({.chunk = 0, .max_chunk = 0});
    int *a = pool.get();
    int *b = pool.get();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a, b);
    EXPECT_EQ(pool.chunks(), 2u);
    pool.put(a);
    pool.put(b);
}

struct alignas(64) line {
    std::uint64_t words[3];
};
struct alignas(256) big {
    char bytes[300];
};

template <class T>
void check_alignment()
{
    mpool<T> pool({.chunk = 3, .max_chunk = 8});
    std::vector<T *> objs;
    for (int i = 0; i < 20; ++i) {
        T *p = pool.get();
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(T), 0u);
        objs.push_back(p);
    }
    for (T *p : objs) {
        pool.put(p);
    }
}

TEST(mpool, alignment)
{
    check_alignment<char>();
    check_alignment<line>();
    check_alignment<big>();
}

TEST(mpool, destroyed_with_objects_in_use_frees_memory)
{
    // No leak (ASan/valgrind check this); objects still out are not destroyed.
    counted::alive = 0;
    {
        mpool<counted> pool({.chunk = 2});
        ASSERT_NE(pool.get(), nullptr);
        ASSERT_NE(pool.get(), nullptr);
        ASSERT_NE(pool.get(), nullptr);
    }
    EXPECT_EQ(counted::alive, 3);
    counted::alive = 0;
}

TEST(mpool, use_after_put_is_caught_by_asan)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    mpool<counted> pool;
    counted *c = pool.get();
    pool.put(c);
    EXPECT_DEATH(c->value = 1, "use-after-poison");
#else
    GTEST_SKIP() << "free slots are only poisoned in AddressSanitizer builds (--enable-asan)";
#endif
}

}  // namespace
}  // namespace weft::base
