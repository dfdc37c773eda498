// Unit tests of the lock policies (src/base/lock.hpp) and arch helpers (src/base/arch.hpp).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/arch.hpp"
#include "base/lock.hpp"

namespace weft::base {
namespace {

// Two threads increment a plain counter under the lock: any lost update means
// the lock let both in.
template <class Lock>
void two_threads_count(Lock &lock)
{
    constexpr int iterations = 20000;
    std::uint64_t counter = 0;
    std::atomic<int> ready{0};
    auto work = [&] {
        // Start together, so that the threads overlap even on a busy machine.
        ready.fetch_add(1);
        while (ready.load() < 2) {
            std::this_thread::yield();
        }
        for (int i = 0; i < iterations; ++i) {
            scoped_guard g(lock);
            // Read, yield the CPU now and then inside the critical section
            // (widens the window a broken lock would leave), write back.
            const std::uint64_t v = counter;
            if (i % 64 == 0) {
                std::this_thread::yield();
            }
            counter = v + 1;
        }
    };
    std::thread a(work);
    std::thread b(work);
    a.join();
    b.join();
    EXPECT_EQ(counter, 2u * iterations);
}

TEST(spin_lock, mutual_exclusion)
{
    spin_lock lock;
    two_threads_count(lock);
}

TEST(spin_lock, try_lock_and_layout)
{
    spin_lock lock;
    EXPECT_TRUE(lock.try_lock());
    EXPECT_FALSE(lock.try_lock());
    lock.unlock();
    {
        scoped_guard g(lock);
        EXPECT_FALSE(lock.try_lock());
    }
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
    static_assert(alignof(spin_lock) == cache_line_size);
    static_assert(sizeof(spin_lock) == cache_line_size);
}

TEST(mutex_lock, mutual_exclusion_and_try_lock)
{
    mutex_lock lock;
    two_threads_count(lock);
    EXPECT_TRUE(lock.try_lock());
    std::thread([&] { EXPECT_FALSE(lock.try_lock()); }).join();
    lock.unlock();
    // Lockable: works with the standard guards too.
    std::lock_guard g(lock);
}

TEST(no_lock, is_a_lockable_that_does_nothing)
{
    no_lock lock;
    scoped_guard g(lock);
    EXPECT_TRUE(lock.try_lock());
    static_assert(sizeof(no_lock) == 1);
}

TEST(arch, pow2_and_alignment)
{
    static_assert(!is_pow2(0u));
    static_assert(is_pow2(1u));
    static_assert(is_pow2(64u));
    static_assert(!is_pow2(96u));
    static_assert(is_pow2(std::uint64_t{1} << 63));
    static_assert(align_up(0u, 8u) == 0u);
    static_assert(align_up(13u, 8u) == 16u);
    static_assert(align_up(16u, 8u) == 16u);
    static_assert(align_up(std::size_t{65}, cache_line_size) == 128u);
    static_assert(align_down(13u, 8u) == 8u);
    static_assert(align_down(std::size_t{127}, cache_line_size) == 64u);
    EXPECT_TRUE(is_pow2(cache_line_size));
}

TEST(arch, clocks_advance)
{
    const std::uint64_t t0 = now_ns();
    const std::uint64_t c0 = rdtsc();
    usleep(2000);
    const std::uint64_t t1 = now_ns();
    const std::uint64_t c1 = rdtsc();
    EXPECT_GE(t1 - t0, 2000000u);  // monotonic, in nanoseconds
    EXPECT_NE(c0, c1);
}

TEST(arch, hints_are_harmless)
{
    int x = 1;
    prefetch(&x);
    prefetch_write(&x);
    cpu_relax();
    compiler_fence();
    EXPECT_EQ(x, 1);
}

}  // namespace
}  // namespace weft::base
