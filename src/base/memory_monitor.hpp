#pragma once
// weft::base::memory_monitor -- tells registration caches when the pages behind
// a virtual address range may have changed, so that a cached registration
// (ibv_reg_mr pins the physical pages of the moment) is never used after the
// application freed or remapped its buffer.
//
// Mechanism: one process-wide userfaultfd with the non-cooperative events
// UNMAP (munmap, mmap MAP_FIXED over a mapping, brk shrink, mremap shrink),
// REMOVE (madvise DONTNEED/FREE/REMOVE) and REMAP (mremap move, DONTUNMAP).
// Ranges are registered in write-protect mode, but nothing is ever
// write-protected: there are no page faults to serve, registration only makes
// the kernel report these events for the range.
//
// The kernel blocks the thread calling munmap/madvise/mremap until the event
// has been read from the userfaultfd. A dedicated reader thread reads it and
// records it, under the events lock, in a fixed ring with a global sequence
// number. Because the read and the record happen under one hold of that lock,
// and consumers take the same lock to collect events, a consumer that starts
// after munmap() returned is guaranteed to see the event: the "race to close"
// between munmap returning and the event being recorded does not exist.
//
// Rules that keep this deadlock-free (a thread blocked in munmap waits for the
// reader, so the reader must never wait for such a thread):
//   - the reader never allocates, logs, or takes any lock but the events lock;
//   - nobody frees or unmaps memory, or does anything that may block on
//     another thread, while holding the events lock (read_events() only copies
//     into the caller's array).
//
// Consumers (one per registration cache) each keep a cursor. When a consumer
// falls more than ring_capacity events behind, or the monitor was reset by
// fork() or stopped, read_events() reports `lost`: the consumer must assume
// that every range it watched changed.
//
// fork(): the kernel does not carry registrations into the child (no
// UFFD_FEATURE_EVENT_FORK) and the child has no reader thread. A
// pthread_atfork child handler closes the inherited descriptor and resets the
// monitor; the next start() in the child opens a fresh one. Cursors taken
// before the fork report `lost`.
//
// Unavailable userfaultfd (ENOSYS, EPERM from seccomp or
// vm.unprivileged_userfaultfd, valgrind): start() returns not_supported, the
// reason is logged once at info level, and caches work uncached.
//
// Shutdown: a static destructor (process exit, or dlclose of the library)
// stops and joins the reader thread and closes the descriptor, which releases
// every registration in the kernel; cursors then report `lost` and watch()
// fails, so a cache used after that point works uncached.
//
// Known limits (no event exists for them): pages of a shared memory mapping
// (memfd, MAP_SHARED|MAP_ANONYMOUS, tmpfs) replaced through the file
// (fallocate PUNCH_HOLE, ftruncate) without changing the mapping; and a
// madvise(MADV_DONTNEED) concurrent with a registration of the same pages (the
// kernel reports REMOVE before it drops the pages). Both are the application
// changing memory that is being registered.

#include <cstddef>
#include <cstdint>

#include "base/status.hpp"

namespace weft::base {

/// A range of virtual addresses [start, end).
struct address_range {
    std::uintptr_t start = 0;
    std::uintptr_t end = 0;
};

/// Events read from the kernel by this process's monitor (statistics, tests).
struct memory_monitor_counts {
    std::uint64_t unmap = 0;   ///< UFFD_EVENT_UNMAP: munmap, MAP_FIXED over, brk/mremap shrink
    std::uint64_t remove = 0;  ///< UFFD_EVENT_REMOVE: madvise DONTNEED/FREE/REMOVE
    std::uint64_t remap = 0;   ///< UFFD_EVENT_REMAP: mremap move or DONTUNMAP
    std::uint64_t other = 0;   ///< anything else (page faults: never expected)
};

/// The process-wide memory monitor. All members are static: there is one
/// userfaultfd and one reader thread per process.
class memory_monitor {
  public:
    /// Events the ring holds; a consumer further behind loses events.
    static constexpr std::size_t ring_capacity = 4096;

    /// A consumer's position in the event stream.
    struct cursor {
        std::uint64_t epoch = 0;  ///< changes on fork and stop: older cursors lost everything
        std::uint64_t seq = 0;    ///< sequence number of the next event to read
    };

    memory_monitor() = delete;

    /// Open the userfaultfd and start the reader thread, once per process
    /// (again in a forked child). ok when running; not_supported when
    /// userfaultfd is unavailable or the monitor was stopped (the reason is
    /// logged once at info level, see unavailable_reason()). Thread-safe.
    [[nodiscard]] static status start() noexcept;

    /// True when start() succeeded and the monitor has not failed or stopped since.
    [[nodiscard]] static bool running() noexcept;

    /// Why the monitor is not running ("" when it is, or was never started).
    [[nodiscard]] static const char *unavailable_reason() noexcept;

    /// A cursor at the current end of the stream: only later events are reported.
    [[nodiscard]] static cursor subscribe() noexcept;

    /// Ask the kernel to report unmapping/remapping of [start, end) (page-aligned,
    /// non-empty). ok: from now on every such change is reported before the
    /// system call that makes it returns. not_supported: this range cannot be
    /// watched (not running; a file mapping; registered with another
    /// userfaultfd; ...), logged at debug level. invalid: not page-aligned or
    /// empty. Starts the monitor if needed.
    [[nodiscard]] static status watch(std::uintptr_t start, std::uintptr_t end) noexcept;

    /// Copy up to `n` of the events after `c` into `out` and advance `c`.
    /// Returns the number copied. Sets `lost` (and moves `c` to the end of the
    /// stream) when events were lost since `c`: the caller must then treat
    /// every range it watched as changed. Never allocates or blocks on anything
    /// but the events lock, which is held only to copy.
    [[nodiscard]] static std::size_t read_events(cursor &c, address_range *out, std::size_t n,
                                                 bool &lost) noexcept;

    /// Counts of events read since the monitor started in this process.
    [[nodiscard]] static memory_monitor_counts counts() noexcept;
};

}  // namespace weft::base
