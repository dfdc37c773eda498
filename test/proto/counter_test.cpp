// Unit tests of the counter and its triggers (src/proto/counter.hpp): values,
// firing at arm, threshold and arm order, set(), disarm, callbacks re-entering
// their own counter, a long chain in constant stack, and a multi-threaded stress
// test. Under ThreadSanitizer (no race may be reported):
//   g++ -std=c++20 -O1 -g -fsanitize=thread -fno-exceptions -Isrc -Iinclude
//       test/proto/counter_test.cpp src/proto/counter.cpp -lgtest -lgtest_main -pthread

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "proto/counter.hpp"

namespace weft::proto {
namespace {

// A trigger that records its firings and runs an optional action. It derives
// from trigger, so the callback gets back to it with a static_cast.
struct probe : trigger {
    int id = 0;
    counter *cntr = nullptr;
    std::vector<int> *log = nullptr;      // ids in firing order
    std::function<void(probe &)> action;  // run inside the callback
    std::atomic<int> fired{0};
    std::atomic<std::uint64_t> seen{0};  // the counter's value when it fired
    std::atomic<bool> in_callback{false};

    static void on_fire(trigger *t)
    {
        probe &p = *static_cast<probe *>(t);
        p.in_callback.store(true, std::memory_order_relaxed);
        p.seen.store(p.cntr->value(), std::memory_order_relaxed);
        if (p.log != nullptr) {
            p.log->push_back(p.id);
        }
        if (p.action) {
            p.action(p);
        }
        p.in_callback.store(false, std::memory_order_relaxed);
        p.fired.fetch_add(1, std::memory_order_release);  // pairs with the test's acquire
    }

    void arm(counter &c, std::uint64_t at)
    {
        cntr = &c;
        threshold = at;
        fire = &on_fire;
        c.arm(this);
    }
    int fires() const { return fired.load(std::memory_order_acquire); }
};

TEST(counter, values)
{
    counter c;
    EXPECT_EQ(c.value(), 0u);
    EXPECT_EQ(c.errors(), 0u);
    c.add(3);
    c.add(4);
    EXPECT_EQ(c.value(), 7u);
    c.add_error(2);
    EXPECT_EQ(c.errors(), 2u);
    EXPECT_EQ(c.value(), 7u);
    c.set(100);
    EXPECT_EQ(c.value(), 100u);
    c.set(1);
    EXPECT_EQ(c.value(), 1u);
    c.set_error(9);
    EXPECT_EQ(c.errors(), 9u);
    c.add_error(1);
    EXPECT_EQ(c.errors(), 10u);
    EXPECT_EQ(c.value(), 1u);
    EXPECT_EQ(c.armed_count(), 0u);
}

TEST(counter, errors_do_not_fire)
{
    counter c;
    probe p;
    p.arm(c, 1);
    c.add_error(5);
    c.set_error(50);
    EXPECT_EQ(p.fires(), 0);
    EXPECT_TRUE(p.armed);
    c.add(1);
    EXPECT_EQ(p.fires(), 1);
}

TEST(counter, arm_at_or_below_value_fires_at_once)
{
    counter c;
    c.add(5);
    probe below, equal, above;
    below.arm(c, 3);
    EXPECT_EQ(below.fires(), 1);
    EXPECT_FALSE(below.armed);
    equal.arm(c, 5);
    EXPECT_EQ(equal.fires(), 1);
    above.arm(c, 6);
    EXPECT_EQ(above.fires(), 0);
    EXPECT_TRUE(above.armed);
    EXPECT_EQ(c.armed_count(), 1u);
    probe zero;
    zero.arm(c, 0);
    EXPECT_EQ(zero.fires(), 1);
    c.add(1);
    EXPECT_EQ(above.fires(), 1);
    EXPECT_EQ(above.seen.load(), 6u);
    EXPECT_EQ(c.armed_count(), 0u);
}

// Arm in a scrambled order (head, middle, tail insertions); every trigger fires
// exactly when its threshold is reached, in threshold order, ties in arm order.
TEST(counter, fires_in_threshold_order_ties_in_arm_order)
{
    counter c;
    const std::uint64_t thresholds[] = {5, 3, 5, 1, 3, 7, 5, 1, 9, 7, 2, 5};
    constexpr std::size_t n = std::size(thresholds);
    probe p[n];
    std::vector<int> log;
    for (std::size_t i = 0; i < n; ++i) {
        p[i].id = int(i);
        p[i].log = &log;
        p[i].arm(c, thresholds[i]);
    }
    EXPECT_EQ(c.armed_count(), n);
    for (std::uint64_t v = 1; v <= 10; ++v) {
        c.add(1);
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_EQ(p[i].fires(), thresholds[i] <= v ? 1 : 0) << "trigger " << i << " at " << v;
        }
    }
    std::vector<int> expected;
    for (std::uint64_t t = 0; t <= 9; ++t) {
        for (std::size_t i = 0; i < n; ++i) {
            if (thresholds[i] == t) {
                expected.push_back(int(i));
            }
        }
    }
    EXPECT_EQ(log, expected);
    for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(p[i].seen.load(), thresholds[i]) << "trigger " << i;
    }
    EXPECT_EQ(c.armed_count(), 0u);
}

// One jump past many thresholds fires all of them, still in order.
TEST(counter, one_add_fires_all_due_in_order)
{
    counter c;
    const std::uint64_t thresholds[] = {4, 2, 4, 3, 1, 8};
    constexpr std::size_t n = std::size(thresholds);
    probe p[n];
    std::vector<int> log;
    for (std::size_t i = 0; i < n; ++i) {
        p[i].id = int(i);
        p[i].log = &log;
        p[i].arm(c, thresholds[i]);
    }
    c.add(4);
    EXPECT_EQ(log, (std::vector<int>{4, 1, 3, 0, 2}));
    EXPECT_EQ(c.armed_count(), 1u);
    EXPECT_EQ(p[5].fires(), 0);
}

TEST(counter, set_fires_and_lowering_does_not_unfire)
{
    counter c;
    probe p3, p5, p8, p4;
    std::vector<int> log;
    p3.id = 3, p5.id = 5, p8.id = 8, p4.id = 4;
    p3.log = p5.log = p8.log = p4.log = &log;
    p3.arm(c, 3);
    p5.arm(c, 5);
    p8.arm(c, 8);
    c.set(6);
    EXPECT_EQ(log, (std::vector<int>{3, 5}));
    c.set(2);
    EXPECT_EQ(c.value(), 2u);
    EXPECT_EQ(p3.fires(), 1);
    EXPECT_EQ(p5.fires(), 1);
    EXPECT_EQ(p8.fires(), 0);
    p4.arm(c, 4);
    EXPECT_EQ(p4.fires(), 0);
    c.add(2);
    EXPECT_EQ(p4.fires(), 1);
    c.set(4);  // the same value again: nothing new
    EXPECT_EQ(log, (std::vector<int>{3, 5, 4}));
    c.set(10);
    EXPECT_EQ(log, (std::vector<int>{3, 5, 4, 8}));
    EXPECT_EQ(p8.seen.load(), 10u);
    EXPECT_EQ(p3.fires() + p5.fires() + p4.fires() + p8.fires(), 4);
}

TEST(counter, disarm_before_and_after_firing)
{
    counter c;
    probe a, b;
    a.arm(c, 2);
    b.arm(c, 4);
    EXPECT_TRUE(c.disarm(&b));
    EXPECT_FALSE(b.armed);
    EXPECT_FALSE(c.disarm(&b));  // twice: no longer armed
    EXPECT_EQ(c.armed_count(), 1u);
    c.add(10);
    EXPECT_EQ(a.fires(), 1);
    EXPECT_EQ(b.fires(), 0);
    EXPECT_FALSE(c.disarm(&a));  // already fired
    probe never;
    EXPECT_FALSE(c.disarm(&never));  // never armed
    // A disarmed trigger may be armed again.
    b.arm(c, 11);
    EXPECT_EQ(b.fires(), 0);
    c.add(1);
    EXPECT_EQ(b.fires(), 1);
}

// Disarm at the head, in the middle and at the tail, then arm after the tail
// (the O(1) path, which relies on the tail pointer being right).
TEST(counter, disarm_anywhere_keeps_the_list_consistent)
{
    counter c;
    probe p[6];
    std::vector<int> log;
    for (int i = 0; i < 4; ++i) {
        p[i].id = i;
        p[i].log = &log;
        p[i].arm(c, std::uint64_t(10 * (i + 1)));  // 10 20 30 40
    }
    EXPECT_TRUE(c.disarm(&p[3]));  // tail
    p[4].id = 4;
    p[4].log = &log;
    p[4].arm(c, 35);               // appended after 30
    EXPECT_TRUE(c.disarm(&p[0]));  // head
    EXPECT_TRUE(c.disarm(&p[4]));  // tail again
    p[5].id = 5;
    p[5].log = &log;
    p[5].arm(c, 25);               // middle
    EXPECT_TRUE(c.disarm(&p[5]));  // middle
    EXPECT_EQ(c.armed_count(), 2u);
    c.set(100);
    EXPECT_EQ(log, (std::vector<int>{1, 2}));
    EXPECT_EQ(c.armed_count(), 0u);
    // Empty again: the tail must be reset too.
    p[3].arm(c, 101);
    EXPECT_TRUE(c.disarm(&p[3]));
    p[3].arm(c, 102);
    c.add(2);
    EXPECT_EQ(log, (std::vector<int>{1, 2, 3}));
}

// A callback adds to its own counter, arms a trigger that is already due,
// disarms another and tries to disarm itself. The nested calls never run a
// callback inside the callback: the new trigger fires after it returns.
TEST(counter, callbacks_reenter_their_counter)
{
    counter c;
    probe a, b, d, far, late;
    std::vector<int> log;
    a.id = 1, b.id = 2, d.id = 3, far.id = 4, late.id = 5;
    a.log = b.log = d.log = far.log = late.log = &log;
    bool self_disarm = true;
    bool nested = false;
    bool far_disarmed = false;
    a.action = [&](probe &self) {
        self_disarm = c.disarm(&self);
        c.add(1);     // value 2: d (threshold 2) becomes due
        b.arm(c, 1);  // due at once: fires after this callback
        far_disarmed = c.disarm(&far);
        nested = b.fires() != 0 || d.fires() != 0;
    };
    b.action = [&](probe &) { nested = nested || a.in_callback.load(); };
    d.action = [&](probe &) {
        nested = nested || a.in_callback.load();
        late.arm(c, 3);
        c.add(1);  // value 3: late due
    };
    a.arm(c, 1);
    d.arm(c, 2);
    far.arm(c, 100);
    c.add(1);
    EXPECT_FALSE(self_disarm);
    EXPECT_TRUE(far_disarmed);
    EXPECT_FALSE(nested);
    // b (threshold 1) was armed while d (2) waited: b comes first.
    EXPECT_EQ(log, (std::vector<int>{1, 2, 3, 5}));
    EXPECT_EQ(c.value(), 3u);
    c.set(1000);
    EXPECT_EQ(far.fires(), 0);
    EXPECT_EQ(c.armed_count(), 0u);
}

// The deepest stack frame a callback ran in, relative to the first one.
struct stack_probe {
    std::uintptr_t lo = UINTPTR_MAX;
    std::uintptr_t hi = 0;
    void sample()
    {
        const auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
        lo = std::min(lo, sp);
        hi = std::max(hi, sp);
    }
};

struct chain_link : trigger {
    counter *cntr = nullptr;
    stack_probe *stack = nullptr;
    chain_link *next_to_arm = nullptr;  // armed by this link's callback, if set
    int fired = 0;
};

[[gnu::noinline]] void chain_fire(trigger *t)
{
    auto &l = *static_cast<chain_link *>(t);
    l.stack->sample();
    ++l.fired;
    if (l.next_to_arm != nullptr) {
        l.cntr->arm(l.next_to_arm);
    }
    l.cntr->add(1);
}

constexpr std::size_t chain_length = 100'000;

// 100,000 triggers armed up front (thresholds 1..N), each callback adding 1:
// one add() runs the whole chain, in constant stack.
TEST(counter, long_chain_armed_up_front_runs_in_constant_stack)
{
    counter c;
    stack_probe stack;
    std::vector<chain_link> links(chain_length);
    for (std::size_t i = 0; i < chain_length; ++i) {
        links[i].cntr = &c;
        links[i].stack = &stack;
        links[i].threshold = i + 1;
        links[i].fire = &chain_fire;
        c.arm(&links[i]);
    }
    EXPECT_EQ(c.armed_count(), chain_length);
    c.add(1);
    EXPECT_EQ(c.value(), chain_length + 1);
    EXPECT_EQ(c.armed_count(), 0u);
    for (std::size_t i = 0; i < chain_length; ++i) {
        ASSERT_EQ(links[i].fired, 1) << "link " << i;
    }
    EXPECT_LT(stack.hi - stack.lo, 256u) << "the stack grew with the chain";
}

// The same chain armed one link at a time, each callback arming the next one
// (already due) and adding 1: a schedule driven by progress alone.
TEST(counter, long_chain_armed_by_callbacks_runs_in_constant_stack)
{
    counter c;
    stack_probe stack;
    std::vector<chain_link> links(chain_length);
    for (std::size_t i = 0; i < chain_length; ++i) {
        links[i].cntr = &c;
        links[i].stack = &stack;
        links[i].threshold = i + 1;
        links[i].fire = &chain_fire;
        links[i].next_to_arm = i + 1 < chain_length ? &links[i + 1] : nullptr;
    }
    c.arm(&links[0]);
    c.add(1);
    EXPECT_EQ(c.value(), chain_length + 1);
    EXPECT_EQ(c.armed_count(), 0u);
    for (std::size_t i = 0; i < chain_length; ++i) {
        ASSERT_EQ(links[i].fired, 1) << "link " << i;
    }
    EXPECT_LT(stack.hi - stack.lo, 256u) << "the stack grew with the chain";
}

TEST(counter, destructor_disarms_without_firing)
{
    probe a, b;
    {
        counter c;
        a.arm(c, 5);
        b.arm(c, 6);
        c.add(1);
    }
    EXPECT_FALSE(a.armed);
    EXPECT_FALSE(b.armed);
    EXPECT_EQ(a.next, nullptr);
    EXPECT_EQ(a.fires() + b.fires(), 0);
}

// Three threads add while a fourth arms triggers at random thresholds (and
// disarms some): every trigger not disarmed fires exactly once, never before
// its threshold; disarmed ones never fire. Callbacks also re-enter the counter
// (add(0)) so that nested calls race with the adders. Run under
// ThreadSanitizer too.
TEST(counter, stress_concurrent_adders_and_armer)
{
    constexpr int adders = 3;
#if defined(__SANITIZE_THREAD__)
    constexpr std::uint64_t adds_per_thread = 20'000;
    constexpr std::size_t n_triggers = 4'000;
#else
    constexpr std::uint64_t adds_per_thread = 200'000;
    constexpr std::size_t n_triggers = 20'000;
#endif
    constexpr std::uint64_t total = adders * adds_per_thread;

    struct stress_trigger : trigger {
        counter *cntr = nullptr;
        std::atomic<int> fired{0};
        std::atomic<std::uint64_t> seen{0};
        bool disarmed = false;  // written and read by the arming thread, then the test
    };
    static std::atomic<std::size_t> total_fired;
    total_fired.store(0);
    auto fire = [](trigger *t) {
        auto &s = *static_cast<stress_trigger *>(t);
        s.seen.store(s.cntr->value(), std::memory_order_relaxed);
        s.cntr->add(0);  // a nested call racing with the adders
        s.fired.fetch_add(1, std::memory_order_relaxed);
        total_fired.fetch_add(1, std::memory_order_relaxed);
    };

    counter c;
    std::vector<stress_trigger> triggers(n_triggers);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int a = 0; a < adders; ++a) {
        threads.emplace_back([&, a] {
            while (!go.load(std::memory_order_acquire)) {
            }
            std::mt19937_64 rng(std::uint64_t(a) + 1);
            std::uint64_t left = adds_per_thread;
            while (left > 0) {
                // Mostly single increments (completions), sometimes a batch.
                const std::uint64_t n = std::min<std::uint64_t>(left, rng() % 8 == 0 ? 3 : 1);
                c.add(n);
                left -= n;
            }
        });
    }
    std::size_t n_disarmed = 0;
    threads.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) {
        }
        std::mt19937_64 rng(42);
        std::vector<std::size_t> recent;
        for (std::size_t i = 0; i < n_triggers; ++i) {
            stress_trigger &s = triggers[i];
            s.cntr = &c;
            // Mostly near the current value (so arming races with firing), some
            // anywhere up to the final value, and some beyond it, which must stay
            // armed until they are disarmed (here or at the end).
            const std::uint64_t now = c.value();
            switch (rng() % 8) {
                case 0:
                    s.threshold = total + 1 + rng() % 16;
                    break;
                case 1:
                case 2:
                    s.threshold = 1 + rng() % total;
                    break;
                default:
                    s.threshold = std::min(total, now + 1 + rng() % 64);
                    break;
            }
            s.fire = fire;
            c.arm(&s);
            recent.push_back(i);
            if (rng() % 16 == 0) {
                const std::size_t victim = recent[rng() % recent.size()];
                if (!triggers[victim].disarmed && c.disarm(&triggers[victim])) {
                    triggers[victim].disarmed = true;
                    ++n_disarmed;
                }
            }
        }
    });
    go.store(true, std::memory_order_release);
    for (auto &t : threads) {
        t.join();
    }

    EXPECT_EQ(c.value(), total);
    EXPECT_GT(n_disarmed, 0u);
    std::size_t expected_fired = 0;
    for (std::size_t i = 0; i < n_triggers; ++i) {
        stress_trigger &s = triggers[i];
        if (s.threshold > total) {
            ASSERT_EQ(s.fired.load(), 0) << "trigger " << i << " fired early";
            ASSERT_EQ(s.disarmed, !s.armed) << "trigger " << i;
            if (!s.disarmed) {
                ASSERT_TRUE(c.disarm(&s)) << "trigger " << i;
            }
            continue;
        }
        if (s.disarmed) {
            ASSERT_EQ(s.fired.load(), 0) << "disarmed trigger " << i << " fired";
            continue;
        }
        ++expected_fired;
        ASSERT_EQ(s.fired.load(), 1) << "trigger " << i << " threshold " << s.threshold;
        ASSERT_GE(s.seen.load(), s.threshold) << "trigger " << i << " fired early";
        ASSERT_FALSE(s.armed);
    }
    EXPECT_EQ(c.armed_count(), 0u);
    EXPECT_EQ(total_fired.load(), expected_fired);
}

}  // namespace
}  // namespace weft::proto
