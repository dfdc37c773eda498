#pragma once
// This process's pid without a system call.
//
// getpid() is a system call (glibc stopped caching it), and on a virtual
// machine a system call's entry and exit cost about 1 us (the development VM:
// 0.96-1.20 us per getpid, docs/performance.md "Registrations without a system
// call"). Code that checks on every call whether it runs in a forked child (the
// shm memory domain's registrations) reads this instead.

#include <cstdint>

namespace weft::base {

/// The calling process's pid: read when the library is loaded, and again in
/// every child fork() makes (a pthread_atfork child handler). A child made
/// without fork()'s handlers (_Fork, a raw clone or vfork) that calls into
/// weft before exec would see its parent's pid: not supported.
[[nodiscard]] std::uint32_t self_pid() noexcept;

}  // namespace weft::base
