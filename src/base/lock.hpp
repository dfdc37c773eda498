#pragma once
// Lock policies. Thread safety is chosen once, at setup (an endpoint opened for
// one thread uses no_lock, a multi-threaded one spin_lock), and the chosen type
// is a template parameter of the code that takes it: the fast path never
// branches on "is locking enabled".
//
//   template <class Lock> status send(endpoint<Lock> &ep, ...) {
//       scoped_guard g(ep.lock);
//       ...
//   }
//
// All three types model the standard Lockable requirements (lock, unlock,
// try_lock), so std::lock_guard and std::unique_lock work with them too.

#include <atomic>
#include <pthread.h>
#include <sched.h>

#include "base/arch.hpp"

namespace weft::base {

/// No locking: the caller guarantees one thread at a time.
struct no_lock {
    void lock() noexcept {}
    void unlock() noexcept {}
    [[nodiscard]] bool try_lock() noexcept { return true; }
};

/// Test-and-test-and-set spin lock, for short critical sections on the fast
/// path. Waiters spin on a plain load (the line stays shared in their caches)
/// and only try the exchange once the lock looks free. Occupies a full cache
/// line so that it does not share one with the data it protects or with
/// another lock.
class alignas(cache_line_size) spin_lock {
  public:
    spin_lock() noexcept = default;
    spin_lock(const spin_lock &) = delete;
    spin_lock &operator=(const spin_lock &) = delete;

    void lock() noexcept
    {
        for (unsigned spins = 0;;) {
            // acquire: the critical section's accesses stay after taking the lock.
            if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]] {
                return;
            }
            while (locked_.load(std::memory_order_relaxed)) {
                // Long held: the holder may be waiting for this core (more
                // threads than cores). Give it away now and then.
                if (++spins % yield_every == 0) [[unlikely]] {
                    sched_yield();
                } else {
                    cpu_relax();
                }
            }
        }
    }

    [[nodiscard]] bool try_lock() noexcept
    {
        return !locked_.load(std::memory_order_relaxed) &&
               !locked_.exchange(true, std::memory_order_acquire);
    }

    void unlock() noexcept
    {
        // release: the critical section's accesses are visible before the lock is free.
        locked_.store(false, std::memory_order_release);
    }

  private:
    static constexpr unsigned yield_every = 1024;  ///< relaxes between yields while waiting
    std::atomic<bool> locked_{false};
};
static_assert(sizeof(spin_lock) == cache_line_size);

/// A pthread mutex, for slow paths where a waiter may wait long (sleeps instead
/// of spinning).
class mutex_lock {
  public:
    mutex_lock() noexcept = default;
    mutex_lock(const mutex_lock &) = delete;
    mutex_lock &operator=(const mutex_lock &) = delete;
    ~mutex_lock() { pthread_mutex_destroy(&mutex_); }

    // A default (non-robust, non-error-checking) mutex only fails on misuse,
    // which these wrappers cannot report anyway: the return values are ignored.
    void lock() noexcept { (void)pthread_mutex_lock(&mutex_); }
    void unlock() noexcept { (void)pthread_mutex_unlock(&mutex_); }
    [[nodiscard]] bool try_lock() noexcept { return pthread_mutex_trylock(&mutex_) == 0; }

  private:
    pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
};

/// Holds a lock for the lifetime of the guard.
template <class Lock>
class [[nodiscard]] scoped_guard {
  public:
    explicit scoped_guard(Lock &l) noexcept : lock_(l) { lock_.lock(); }
    ~scoped_guard() { lock_.unlock(); }
    scoped_guard(const scoped_guard &) = delete;
    scoped_guard &operator=(const scoped_guard &) = delete;

  private:
    Lock &lock_;
};

}  // namespace weft::base
