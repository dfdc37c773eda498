// Unit tests of the reader-lock-free list (src/base/rcu_list.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/rcu_list.hpp"

namespace weft::base {
namespace {

struct item {
    unsigned value = 0;
};

std::vector<item *> contents(const rcu_list<item> &list)
{
    std::vector<item *> out;
    for (item *x : list.read()) {
        out.push_back(x);
    }
    return out;
}

TEST(rcu_list, add_remove_for_each)
{
    rcu_list<item> list;
    item a{1}, b{2}, c{4};
    EXPECT_EQ(list.size(), 0u);
    EXPECT_EQ(list.for_each([](item *x) { return x->value; }), 0u);
    {
        auto g = list.read();
        EXPECT_TRUE(g.empty());
        EXPECT_EQ(g.single(), nullptr);
        EXPECT_EQ(g.begin(), g.end());
    }

    ASSERT_EQ(list.add(&a), status::ok);
    {
        auto g = list.read();
        EXPECT_EQ(g.size(), 1u);
        EXPECT_EQ(g.single(), &a);
    }
    ASSERT_EQ(list.add(&b), status::ok);
    ASSERT_EQ(list.add(&c), status::ok);
    EXPECT_EQ(list.size(), 3u);
    EXPECT_EQ(list.read().single(), nullptr);
    EXPECT_EQ(contents(list), (std::vector<item *>{&a, &b, &c}));  // insertion order
    EXPECT_EQ(list.for_each([](item *x) { return x->value; }), 7u);

    list.remove(&b);
    EXPECT_EQ(list.size(), 2u);
    EXPECT_EQ(contents(list), (std::vector<item *>{&a, &c}));
    EXPECT_EQ(list.for_each([](item *x) { return x->value; }), 5u);

    list.remove(&a);
    EXPECT_EQ(list.read().single(), &c);
    list.remove(&c);
    EXPECT_EQ(list.size(), 0u);
    EXPECT_TRUE(list.read().empty());

    // fn may return void: the sum is then 0, fn still runs for every element.
    ASSERT_EQ(list.add(&a), status::ok);
    ASSERT_EQ(list.add(&b), status::ok);
    unsigned calls = 0;
    EXPECT_EQ(list.for_each([&](item *) { ++calls; }), 0u);
    EXPECT_EQ(calls, 2u);
}

TEST(rcu_list, duplicate_add_is_ignored)
{
    rcu_list<item> list;
    item a{1}, b{2};
    ASSERT_EQ(list.add(&a), status::ok);
    ASSERT_EQ(list.add(&b), status::ok);
    ASSERT_EQ(list.add(&a), status::ok);
    ASSERT_EQ(list.add(&b), status::ok);
    EXPECT_EQ(list.size(), 2u);
    EXPECT_EQ(contents(list), (std::vector<item *>{&a, &b}));
    list.remove(&a);
    EXPECT_EQ(contents(list), (std::vector<item *>{&b}));  // one remove takes it out
}

TEST(rcu_list, remove_of_absent_element_is_a_no_op)
{
    rcu_list<item> list;
    item a{1}, b{2};
    list.remove(&a);  // empty list
    EXPECT_EQ(list.size(), 0u);
    ASSERT_EQ(list.add(&a), status::ok);
    list.remove(&b);
    EXPECT_EQ(contents(list), (std::vector<item *>{&a}));
    list.remove(&a);
    list.remove(&a);  // twice
    EXPECT_TRUE(list.read().empty());
}

// Random adds and removes against a std::vector model: exercises every path of
// the block reuse (the spare that lets remove() work without allocating).
TEST(rcu_list, matches_a_model_under_random_writes)
{
    rcu_list<item> list;
    std::vector<item> pool(24);
    std::vector<item *> model;
    std::mt19937 rng(12345);
    for (int step = 0; step < 20000; ++step) {
        item *x = &pool[rng() % pool.size()];
        const auto it = std::find(model.begin(), model.end(), x);
        if (rng() % 2 == 0) {
            ASSERT_EQ(list.add(x), status::ok);
            if (it == model.end()) {
                model.push_back(x);
            }
        } else {
            list.remove(x);
            if (it != model.end()) {
                model.erase(it);
            }
        }
        ASSERT_EQ(list.size(), model.size());
        std::vector<item *> seen = contents(list);
        std::vector<item *> expect = model;
        std::sort(seen.begin(), seen.end());
        std::sort(expect.begin(), expect.end());
        ASSERT_EQ(seen, expect) << "after step " << step;
    }
}

// remove() must not return while a reader that could see the element still holds
// its guard.
TEST(rcu_list, remove_waits_for_a_reader_in_progress)
{
    rcu_list<item> list;
    item a{1}, b{2};
    ASSERT_EQ(list.add(&a), status::ok);
    ASSERT_EQ(list.add(&b), status::ok);
    std::atomic<bool> reading{false};
    std::atomic<bool> finished{false};
    std::thread reader([&] {
        auto g = list.read();
        reading.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (item *x : g) {
            EXPECT_TRUE(x == &a || x == &b);
        }
        finished.store(true);  // before the guard is released
    });
    while (!reading.load()) {
        std::this_thread::yield();
    }
    list.remove(&a);
    EXPECT_TRUE(finished.load());
    reader.join();
    EXPECT_EQ(contents(list), (std::vector<item *>{&b}));
}

// Readers walk the list continuously and check every element's magic while a
// writer adds new elements and removes old ones; a removed element is killed
// (magic overwritten) and deleted as soon as remove() returns. A reader that saw
// a dead magic, or a use after free that ThreadSanitizer or ASan flags, means
// remove() returned too early. The magic is a plain field on purpose: a reader
// still using a removed element races with the writer's overwrite, which TSan
// reports.
struct node {
    static constexpr std::uint64_t alive = 0xa11fe5a11fe5a11fULL;
    static constexpr std::uint64_t dead = 0xdeadbeefdeadbeefULL;
    std::uint64_t magic = alive;
    unsigned payload = 1;
};

TEST(rcu_list, stress_readers_never_see_a_removed_element)
{
    constexpr int readers = 3;
    constexpr auto duration = std::chrono::seconds(1);
    rcu_list<node> list;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> bad{0};
    std::atomic<std::uint64_t> walks{0};

    std::vector<std::thread> threads;
    for (int r = 0; r < readers; ++r) {
        threads.emplace_back([&, r] {
            std::uint64_t n = 0;
            std::uint64_t seen_bad = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                if ((n + r) % 2 == 0) {
                    list.for_each([&](node *x) {
                        seen_bad += x->magic != node::alive;
                        return x->payload;
                    });
                } else {
                    auto g = list.read();
                    if (node *only = g.single()) {
                        seen_bad += only->magic != node::alive;
                    }
                    for (node *x : g) {
                        seen_bad += x->magic != node::alive;
                        if (n % 64 == 0) {
                            std::this_thread::yield();  // hold the guard across a write
                        }
                        seen_bad += x->magic != node::alive;
                    }
                }
                ++n;
            }
            bad.fetch_add(seen_bad);
            walks.fetch_add(n);
        });
    }

    std::vector<node *> live;
    std::mt19937 rng(42);
    std::uint64_t writes = 0;
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
        // Keep between 0 and 8 elements, passing through the 0 and 1 cases often.
        const bool grow = live.empty() || (live.size() < 8 && rng() % 2 == 0);
        if (grow) {
            node *x = new node;
            ASSERT_EQ(list.add(x), status::ok);
            live.push_back(x);
        } else {
            const std::size_t i = rng() % live.size();
            node *x = live[i];
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
            list.remove(x);
            x->magic = node::dead;
            delete x;
        }
        ++writes;
    }
    stop.store(true);
    for (auto &t : threads) {
        t.join();
    }
    for (node *x : live) {
        list.remove(x);
        delete x;
    }
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(writes, 0u);
    EXPECT_GT(walks.load(), 0u);
    RecordProperty("writes", std::to_string(writes));
    RecordProperty("walks", std::to_string(walks.load()));
}

}  // namespace
}  // namespace weft::base
