#include "base/pid.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace weft::base {
namespace {

std::atomic<std::uint32_t> cached_pid{0};

void refresh_pid() noexcept
{
    // relaxed: written at the first call (under the function-local static's
    // guard, which publishes it to every thread that passes the guard) and in
    // a new child's atfork handler, where only the forking thread exists.
    cached_pid.store(static_cast<std::uint32_t>(::getpid()), std::memory_order_relaxed);
}

}  // namespace

namespace {
// Read once when the library is loaded, on the loading thread, before the
// caller can start threads: a fork() can then never copy the function-local
// static's guard half-taken (the child's first call would wait for ever).
[[maybe_unused]] const std::uint32_t pid_at_load = self_pid();
}  // namespace

std::uint32_t self_pid() noexcept
{
    static const bool registered = [] {
        refresh_pid();
        return pthread_atfork(nullptr, nullptr, refresh_pid) == 0;
    }();
    if (!registered) [[unlikely]] {
        return static_cast<std::uint32_t>(::getpid());  // no handler: no cache
    }
    // relaxed: see refresh_pid.
    return cached_pid.load(std::memory_order_relaxed);
}

}  // namespace weft::base
