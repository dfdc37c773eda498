// The memory monitor: see memory_monitor.hpp for what it guarantees and the
// rules that keep it deadlock-free.

#include "base/memory_monitor.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if __has_include(<linux/userfaultfd.h>)
#include <linux/userfaultfd.h>
#endif

#include "base/log.hpp"

namespace weft::base {

namespace {

#if defined(SYS_userfaultfd) && defined(UFFD_FEATURE_EVENT_UNMAP) && \
    defined(UFFDIO_REGISTER_MODE_WP)
#define WEFT_HAVE_UFFD 1
#else
#define WEFT_HAVE_UFFD 0
#endif

enum class monitor_kind : int {
    idle = 0,     ///< not started in this process (or reset by fork)
    running,      ///< the reader thread reads events
    unavailable,  ///< userfaultfd cannot be used here (reason in `reason`)
    failed,       ///< the reader stopped on an error (our descriptor was closed behind our back)
    stopped,      ///< shut down at exit or dlclose
};

/// Everything the monitor owns. constinit and trivially destructible: it is
/// usable from any static initialiser or destructor, and nothing about it is
/// torn down at exit except by monitor_shutdown below (the reader thread may
/// still be running while other static destructors run).
struct monitor_state {
    // Guarded by init_lock: starting, stopping, the descriptors and the thread.
    // The reader never takes it.
    pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
    int uffd = -1;
    int wake_fd = -1;  ///< eventfd: written by stop() to make the reader exit
    bool reader_started = false;
    bool atfork_registered = false;
    pthread_t reader{};
    char reason[256] = {};
    std::uintptr_t page_size = 0;

    // Written under init_lock (and by the reader on failure, under events_lock);
    // read without a lock: release/acquire publishes uffd and page_size to
    // watch() callers that see `running`.
    std::atomic<int> kind{static_cast<int>(monitor_kind::idle)};
    std::atomic<bool> failure_logged{false};

    // Guarded by events_lock: the ring. The reader holds the lock across
    // read()+record, which is what makes an event visible to every consumer
    // that starts after the munmap() that caused it returned.
    pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
    std::uint64_t epoch = 0;  ///< bumped on fork (in the child), failure and stop
    std::uint64_t head = 0;   ///< sequence number of the next event to record
    address_range ring[memory_monitor::ring_capacity];

    // Statistics; relaxed: nothing is ordered by them.
    std::atomic<std::uint64_t> n_unmap{0};
    std::atomic<std::uint64_t> n_remove{0};
    std::atomic<std::uint64_t> n_remap{0};
    std::atomic<std::uint64_t> n_other{0};
};

constinit monitor_state g;

/// Holds a pthread mutex for a scope (the monitor's locks are raw pthread
/// mutexes so that the state stays constinit and trivially destructible, and
/// so that the fork child handler can re-initialise them in place).
class [[nodiscard]] pthread_guard {
  public:
    explicit pthread_guard(pthread_mutex_t &m) noexcept : m_(m) { (void)pthread_mutex_lock(&m_); }
    ~pthread_guard() { (void)pthread_mutex_unlock(&m_); }
    pthread_guard(const pthread_guard &) = delete;
    pthread_guard &operator=(const pthread_guard &) = delete;

  private:
    pthread_mutex_t &m_;
};

monitor_kind kind() noexcept
{
    return static_cast<monitor_kind>(g.kind.load(std::memory_order_acquire));
}

void set_kind(monitor_kind k) noexcept
{
    g.kind.store(static_cast<int>(k), std::memory_order_release);
}

/// Every consumer loses its events: their cursors no longer match the epoch.
/// Caller holds events_lock.
void invalidate_cursors_locked() noexcept
{
    ++g.epoch;
    g.head = 0;
}

/// pthread_atfork child handler. Runs in the child only, before fork()
/// returns, with one thread. The child inherited the descriptor of the
/// parent's userfaultfd, whose registrations belong to the parent's address
/// space (a UFFDIO_REGISTER through it would act on the parent!) and which no
/// thread reads here. Drop it; the next start() opens a fresh one. The locks
/// may have been held by threads that do not exist in the child, so they are
/// re-initialised rather than taken. Only close() and plain stores: nothing
/// that could wait for a lock or allocate.
[[maybe_unused]] void atfork_child() noexcept
{
    (void)pthread_mutex_init(&g.init_lock, nullptr);
    (void)pthread_mutex_init(&g.events_lock, nullptr);
    if (g.uffd >= 0) {
        (void)::close(g.uffd);
    }
    if (g.wake_fd >= 0) {
        (void)::close(g.wake_fd);
    }
    g.uffd = -1;
    g.wake_fd = -1;
    g.reader_started = false;
    g.reason[0] = '\0';
    g.failure_logged.store(false, std::memory_order_relaxed);
    invalidate_cursors_locked();
    set_kind(monitor_kind::idle);
}

#if WEFT_HAVE_UFFD

/// The reader gave up. On our own initialised, non-blocking userfaultfd, poll()
/// never reports POLLERR/POLLHUP/POLLNVAL and read() fails only with EAGAIN, so
/// this means the descriptor number was closed (or replaced) by someone else:
/// the kernel has then released our registrations and no munmap waits for us,
/// and the number is not ours to close. Consumers lose their events and
/// caches go uncached.
void reader_failed() noexcept
{
    pthread_guard lock(g.events_lock);
    invalidate_cursors_locked();
    set_kind(monitor_kind::failed);
}

/// Append the events of `msgs` to the ring. Caller holds events_lock. Returns
/// the number of page-fault messages copied to the front of `faults`.
std::size_t record_locked(const uffd_msg *msgs, std::size_t n, std::uintptr_t *faults) noexcept
{
    std::size_t n_faults = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const uffd_msg &m = msgs[i];
        address_range r;
        switch (m.event) {
            case UFFD_EVENT_UNMAP:
                g.n_unmap.fetch_add(1, std::memory_order_relaxed);
                r = {static_cast<std::uintptr_t>(m.arg.remove.start),
                     static_cast<std::uintptr_t>(m.arg.remove.end)};
                break;
            case UFFD_EVENT_REMOVE:
                g.n_remove.fetch_add(1, std::memory_order_relaxed);
                r = {static_cast<std::uintptr_t>(m.arg.remove.start),
                     static_cast<std::uintptr_t>(m.arg.remove.end)};
                break;
            case UFFD_EVENT_REMAP:
                // The pages left [from, from + len); the destination was unmapped
                // first, which (if watched) was reported as UNMAP.
                g.n_remap.fetch_add(1, std::memory_order_relaxed);
                r = {static_cast<std::uintptr_t>(m.arg.remap.from),
                     static_cast<std::uintptr_t>(m.arg.remap.from + m.arg.remap.len)};
                break;
            default:
                g.n_other.fetch_add(1, std::memory_order_relaxed);
                if (m.event == UFFD_EVENT_PAGEFAULT) {
                    faults[n_faults++] = static_cast<std::uintptr_t>(m.arg.pagefault.address);
                }
                continue;
        }
        g.ring[g.head % memory_monitor::ring_capacity] = r;
        ++g.head;
    }
    return n_faults;
}

/// The reader thread. Never allocates, logs, or takes a lock other than
/// events_lock (held only by consumers copying events, who never block while
/// holding it): threads blocked in munmap() wait for this loop, so it must not
/// wait for them. All signals are blocked (set by start() before creating the
/// thread), so no application handler runs here.
void *reader_main(void *) noexcept
{
    const int uffd = g.uffd;  // published by pthread_create
    const int wake = g.wake_fd;
    const std::uintptr_t page = g.page_size;
    uffd_msg msgs[32];
    std::uintptr_t faults[32];
    for (;;) {
        // poll() outside the lock: a consumer must never wait for an idle reader.
        pollfd fds[2] = {{uffd, POLLIN, 0}, {wake, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            reader_failed();
            return nullptr;
        }
        if (fds[1].revents != 0) {
            return nullptr;  // stop()
        }
        if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
            reader_failed();
            return nullptr;
        }
        if ((fds[0].revents & POLLIN) == 0) {
            continue;
        }
        ssize_t got;
        int err = 0;
        std::size_t n_faults = 0;
        {
            // read() releases the threads blocked in munmap/madvise/mremap; they
            // may return before we record. Recording under the same hold of
            // events_lock that consumers take means any consumer that starts
            // after such a return finds the lock held (and waits) or the event
            // recorded.
            pthread_guard lock(g.events_lock);
            got = ::read(uffd, msgs, sizeof(msgs));
            if (got > 0) {
                n_faults =
                    record_locked(msgs, static_cast<std::size_t>(got) / sizeof(uffd_msg), faults);
            } else if (got < 0) {
                err = errno;
            }
        }
        if (got < 0 && err != EAGAIN && err != EINTR) {
            reader_failed();
            return nullptr;
        }
        // Nothing is ever write-protected, so a page fault cannot happen; if
        // one did, the faulting thread would hang. Resolve it (clear the
        // protection and wake the thread) rather than leave it blocked.
        for (std::size_t i = 0; i < n_faults; ++i) {
            uffdio_writeprotect wp{};
            wp.range.start = faults[i] & ~(page - 1);
            wp.range.len = page;
            wp.mode = 0;
            (void)::ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
        }
    }
}

/// Open and configure the userfaultfd. On failure, returns -1 with g.reason set.
int open_uffd() noexcept
{
    // UFFD_USER_MODE_ONLY: we never serve faults at all, and it is what lets an
    // unprivileged process use userfaultfd when vm.unprivileged_userfaultfd=0
    // (Linux 5.11+). Older kernels reject the flag: retry without it.
    int fd =
        static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (fd < 0 && errno == EINVAL) {
        fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    }
    if (fd < 0) {
        const int err = errno;
        std::snprintf(g.reason, sizeof(g.reason), "userfaultfd(2) failed: %s%s", std::strerror(err),
                      err == EPERM    ? " (vm.unprivileged_userfaultfd=0 without CAP_SYS_PTRACE, "
                                        "or a seccomp filter)"
                      : err == ENOSYS ? " (kernel without CONFIG_USERFAULTFD, a seccomp filter, "
                                        "or valgrind)"
                                      : "");
        return -1;
    }
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP |
                   UFFD_FEATURE_PAGEFAULT_FLAG_WP;
    if (::ioctl(fd, UFFDIO_API, &api) != 0) {
        std::snprintf(g.reason, sizeof(g.reason),
                      "UFFDIO_API with the unmap/remove/remap events and write-protect mode "
                      "failed: %s (Linux 5.7 or later is needed)",
                      std::strerror(errno));
        (void)::close(fd);
        return -1;
    }
    if ((api.ioctls & (std::uint64_t{1} << _UFFDIO_REGISTER)) == 0) {
        std::snprintf(g.reason, sizeof(g.reason), "userfaultfd without UFFDIO_REGISTER");
        (void)::close(fd);
        return -1;
    }
    return fd;
}

/// Start the monitor. Caller holds init_lock and saw kind == idle.
status start_locked() noexcept
{
    if (!g.atfork_registered) {
        // Registered once per process: a child inherits the handler list.
        // init_lock is not taken by any fork handler, so calling pthread_atfork
        // (which waits for a fork in progress) while holding it cannot deadlock.
        if (pthread_atfork(nullptr, nullptr, atfork_child) != 0) {
            std::snprintf(g.reason, sizeof(g.reason), "pthread_atfork failed");
            return status::not_supported;
        }
        g.atfork_registered = true;
    }
    const long page = ::sysconf(_SC_PAGESIZE);
    g.page_size = page > 0 ? static_cast<std::uintptr_t>(page) : 4096;
    const int fd = open_uffd();
    if (fd < 0) {
        return status::not_supported;
    }
    const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake < 0) {
        std::snprintf(g.reason, sizeof(g.reason), "eventfd failed: %s", std::strerror(errno));
        (void)::close(fd);
        return status::not_supported;
    }
    g.uffd = fd;
    g.wake_fd = wake;
    // The reader inherits this mask: with every signal blocked, no application
    // signal handler (which might munmap, or take a lock) ever runs on it.
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&g.reader, nullptr, reader_main, nullptr);
    (void)pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0) {
        std::snprintf(g.reason, sizeof(g.reason), "cannot start the reader thread: %s",
                      std::strerror(rc));
        (void)::close(fd);
        (void)::close(wake);
        g.uffd = -1;
        g.wake_fd = -1;
        return status::not_supported;
    }
    (void)pthread_setname_np(g.reader, "weft-memmon");
    g.reader_started = true;
    return status::ok;
}

/// Stop the reader and close the descriptor (at exit or dlclose). A thread
/// blocked in munmap() because the reader left before reading its event is
/// released by close(): the kernel wakes event waiters of a released
/// userfaultfd and drops every registration.
void stop() noexcept
{
    pthread_guard init(g.init_lock);
    if (!g.reader_started) {
        return;
    }
    const std::uint64_t one = 1;
    (void)!::write(g.wake_fd, &one, sizeof(one));
    (void)pthread_join(g.reader, nullptr);
    g.reader_started = false;
    std::snprintf(g.reason, sizeof(g.reason), "the memory monitor was stopped (process exit)");
    {
        pthread_guard lock(g.events_lock);
        invalidate_cursors_locked();
        set_kind(monitor_kind::stopped);
    }
    (void)::close(g.uffd);
    (void)::close(g.wake_fd);
    g.uffd = -1;
    g.wake_fd = -1;
}

#else  // !WEFT_HAVE_UFFD

status start_locked() noexcept
{
    std::snprintf(g.reason, sizeof(g.reason),
                  "built without userfaultfd support (linux/userfaultfd.h too old or missing)");
    return status::not_supported;
}

void stop() noexcept {}

#endif  // WEFT_HAVE_UFFD

/// Stops the monitor when the library is unloaded or the process exits, so that
/// the reader thread never runs code that dlclose() unmapped and never keeps a
/// userfaultfd whose registrations outlive us. A cache used after this (by
/// another static destructor) sees its events lost and works uncached.
struct monitor_shutdown {
    constexpr monitor_shutdown() noexcept = default;
    ~monitor_shutdown() { stop(); }
};
constinit monitor_shutdown shutdown_at_exit;

}  // namespace

status memory_monitor::start() noexcept
{
    monitor_kind k = kind();
    if (k == monitor_kind::running) [[likely]] {
        return status::ok;
    }
    if (k != monitor_kind::idle) {
        return status::not_supported;
    }
    status s;
    {
        pthread_guard init(g.init_lock);
        k = kind();
        if (k != monitor_kind::idle) {
            return k == monitor_kind::running ? status::ok : status::not_supported;
        }
        s = start_locked();
        set_kind(s == status::ok ? monitor_kind::running : monitor_kind::unavailable);
    }
    if (s != status::ok) {
        // Logged once: later start() calls see `unavailable` and return at once.
        WEFT_LOG(base, info,
                 "memory monitor unavailable: %s; registration caches work uncached "
                 "(correct, but every transfer registers its buffer)",
                 g.reason);
    }
    return s;
}

bool memory_monitor::running() noexcept
{
    return kind() == monitor_kind::running;
}

const char *memory_monitor::unavailable_reason() noexcept
{
    // g.reason is written before `kind` leaves idle/running (release), and not
    // again until the next state change.
    const monitor_kind k = kind();
    return k == monitor_kind::running || k == monitor_kind::idle ? "" : g.reason;
}

memory_monitor::cursor memory_monitor::subscribe() noexcept
{
    pthread_guard lock(g.events_lock);
    return {g.epoch, g.head};
}

namespace {

/// Whether [start, end) is covered, without holes, by private anonymous
/// mappings only (anonymous mmap, [heap], [stack]), from /proc/self/maps.
/// Shared mappings (memfd, shared anonymous, tmpfs, SysV shm) and file mappings
/// can have their pages replaced through the file (fallocate(PUNCH_HOLE),
/// ftruncate, another process) with no userfaultfd event, so a registration of
/// them must never be cached. Reads with a stack buffer: allocates nothing.
[[nodiscard]] bool private_anonymous(std::uintptr_t start, std::uintptr_t end) noexcept
{
    const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    char buf[4096];
    std::size_t have = 0;  // bytes of an unfinished line kept at buf[0, have)
    std::uintptr_t covered = start;
    bool ok = true;
    bool done = false;
    while (!done) {
        const ssize_t n = ::read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n <= 0) {
            break;
        }
        have += static_cast<std::size_t>(n);
        buf[have] = '\0';
        char *line = buf;
        for (char *nl = std::strchr(line, '\n'); nl != nullptr && !done;
             nl = std::strchr(line, '\n')) {
            *nl = '\0';
            // "start-end perms offset dev inode [path]"
            unsigned long s = 0;
            unsigned long e = 0;
            char perms[8] = {};
            unsigned long long off = 0;
            unsigned long long inode = 0;
            char dev[16] = {};
            if (std::sscanf(line, "%lx-%lx %7s %llx %15s %llu", &s, &e, perms, &off, dev, &inode) ==
                    6 &&
                e > covered && s < end) {
                if (s > covered || perms[3] != 'p' || inode != 0) {
                    ok = false;  // a hole, or not private anonymous
                    done = true;
                } else {
                    covered = e;
                    done = covered >= end;
                }
            } else if (s >= end) {
                done = true;
            }
            line = nl + 1;
        }
        have = static_cast<std::size_t>(buf + have - line);
        std::memmove(buf, line, have);
        if (have >= sizeof(buf) - 1) {
            have = 0;  // a line longer than the buffer (a long path): not ours
        }
    }
    ::close(fd);
    return ok && covered >= end;
}

}  // namespace

status memory_monitor::watch(std::uintptr_t start, std::uintptr_t end) noexcept
{
    if (memory_monitor::start() != status::ok) {
        if (kind() == monitor_kind::failed &&
            !g.failure_logged.exchange(true, std::memory_order_relaxed)) {
            WEFT_LOG(base, warn,
                     "memory monitor stopped: its userfaultfd descriptor was closed by "
                     "someone else; registration caches now work uncached");
        }
        return status::not_supported;
    }
#if WEFT_HAVE_UFFD
    if (start >= end || ((start | end) & (g.page_size - 1)) != 0) {
        return status::invalid;
    }
    if (!private_anonymous(start, end)) {
        WEFT_LOG(base, debug,
                 "memory monitor: [%#lx, %#lx) is not all private anonymous memory: not watched",
                 static_cast<unsigned long>(start), static_cast<unsigned long>(end));
        return status::not_supported;
    }
    // Registering a range (or part of it) again with the same userfaultfd is
    // allowed and changes nothing. The kernel checks every VMA in the range
    // before changing any, so a failure leaves nothing half-registered.
    uffdio_register reg{};
    reg.range.start = start;
    reg.range.len = end - start;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    if (::ioctl(g.uffd, UFFDIO_REGISTER, &reg) == 0) {
        return status::ok;
    }
    // EINVAL: a file mapping (or shmem without write-protect support);
    // EBUSY: registered with another userfaultfd (another library's monitor);
    // ENOMEM: out of VMAs (registration may split them).
    WEFT_LOG(base, debug, "memory monitor: cannot watch [%#lx, %#lx): %s",
             static_cast<unsigned long>(start), static_cast<unsigned long>(end),
             std::strerror(errno));
#else
    (void)start;
    (void)end;
#endif
    return status::not_supported;
}

std::size_t memory_monitor::read_events(cursor &c, address_range *out, std::size_t n,
                                        bool &lost) noexcept
{
    // Only copying under the lock: the reader waits for it while threads in
    // munmap() wait for the reader.
    pthread_guard lock(g.events_lock);
    if (c.epoch != g.epoch || g.head - c.seq > ring_capacity) {
        lost = true;
        c = {g.epoch, g.head};
        return 0;
    }
    const std::uint64_t avail = g.head - c.seq;
    const std::size_t count = avail < n ? static_cast<std::size_t>(avail) : n;
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = g.ring[(c.seq + i) % ring_capacity];
    }
    c.seq += count;
    return count;
}

memory_monitor_counts memory_monitor::counts() noexcept
{
    return {g.n_unmap.load(std::memory_order_relaxed), g.n_remove.load(std::memory_order_relaxed),
            g.n_remap.load(std::memory_order_relaxed), g.n_other.load(std::memory_order_relaxed)};
}

}  // namespace weft::base
