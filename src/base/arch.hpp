#pragma once
// Architecture helpers: cache line size, spin-wait hint, prefetch, compiler
// fence, clocks and power-of-two arithmetic. Header-only and allocation-free;
// everything here may be used on the fast path.

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <x86intrin.h>
#endif

namespace weft::base {

/// Size of a cache line on every CPU weft targets (x86-64, aarch64 Neoverse).
/// Used for alignas() of producer/consumer fields and lock words. A constant
/// rather than std::hardware_destructive_interference_size, which GCC warns is
/// not ABI-stable.
inline constexpr std::size_t cache_line_size = 64;

/// Hint to the CPU that we are in a spin-wait loop (saves power, yields the
/// core's pipeline to a hyper-thread sibling).
[[gnu::always_inline]] inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

/// Stops the compiler (not the CPU) from moving memory accesses across this point.
[[gnu::always_inline]] inline void compiler_fence() noexcept
{
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

/// Prefetch the cache line holding `p` for reading (into all cache levels).
[[gnu::always_inline]] inline void prefetch(const void *p) noexcept
{
    __builtin_prefetch(p, 0, 3);
}

/// Prefetch the cache line holding `p` with the intent to write it.
[[gnu::always_inline]] inline void prefetch_write(const void *p) noexcept
{
    __builtin_prefetch(p, 1, 3);
}

/// Monotonic clock in nanoseconds (CLOCK_MONOTONIC, served by the vDSO: no
/// system call, about 20 ns). For timeouts and statistics, not for ordering.
[[nodiscard]] inline std::uint64_t now_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

/// Raw cycle/tick counter (x86 TSC, aarch64 virtual counter). Cheaper than
/// now_ns() but in CPU-specific units; only differences on one host mean
/// anything. Falls back to now_ns() elsewhere.
[[nodiscard, gnu::always_inline]] inline std::uint64_t rdtsc() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    std::uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return now_ns();
#endif
}

/// True when `v` is a power of two (0 is not).
template <std::unsigned_integral T>
[[nodiscard]] constexpr bool is_pow2(T v) noexcept
{
    return v != 0 && (v & (v - 1)) == 0;
}

/// Round `v` up to a multiple of `align`, which must be a power of two.
template <std::unsigned_integral T>
[[nodiscard]] constexpr T align_up(T v, T align) noexcept
{
    return (v + align - 1) & ~(align - 1);
}

/// Round `v` down to a multiple of `align`, which must be a power of two.
template <std::unsigned_integral T>
[[nodiscard]] constexpr T align_down(T v, T align) noexcept
{
    return v & ~(align - 1);
}

}  // namespace weft::base
