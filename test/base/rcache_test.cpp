// Unit tests of the memory monitor (src/base/memory_monitor.hpp) and the
// registration cache (src/base/rcache.hpp).
//
// The fake registrar stamps every registration with a logical clock, and
// records the physical frame numbers (PFNs) of the registered pages from
// /proc/self/pagemap. Every get() in these tests goes through checked_get(),
// which verifies that the registration is still live in the registrar and
// still maps the physical pages the buffer has now: a stale registration
// fails it. Frames can be reused (a freed page may come back at once for the
// new mapping), so the tests that change memory also check the stamp: a
// registration returned after the change must have been made after it.
//
// PFNs are readable only with CAP_SYS_ADMIN. Without it, the PFN comparison is
// left out (rcache.pfn_check_available reports that with a skip) and the
// stamps and counters still decide.
//
// Tests of suites *_watched need the memory monitor (userfaultfd); they skip
// with the reason when it is unavailable (e.g. under valgrind).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <mutex>
#include <set>
#include <stddef.h>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "base/memory_monitor.hpp"
#include "base/rcache.hpp"
#include "log_expect.hpp"

namespace weft::base {
namespace {

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// ---------------------------------------------------------------------------
// Physical frame numbers from /proc/self/pagemap.

constexpr std::uint64_t pagemap_present = std::uint64_t{1} << 63;
constexpr std::uint64_t pagemap_pfn_mask = (std::uint64_t{1} << 55) - 1;

/// PFNs of the pages of [start, start + pages * page); 0 for a page not present.
std::vector<std::uint64_t> read_pfns(std::uintptr_t start, std::size_t pages)
{
    static const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    std::vector<std::uint64_t> out(pages, 0);
    if (fd < 0 || pages == 0) {
        return out;
    }
    const off_t off = static_cast<off_t>(start / page * sizeof(std::uint64_t));
    const ssize_t got = ::pread(fd, out.data(), pages * sizeof(std::uint64_t), off);
    if (got != static_cast<ssize_t>(pages * sizeof(std::uint64_t))) {
        std::fill(out.begin(), out.end(), 0);
        return out;
    }
    for (std::uint64_t &e : out) {
        e = (e & pagemap_present) != 0 ? (e & pagemap_pfn_mask) : 0;
    }
    return out;
}

/// True when pagemap shows real PFNs (CAP_SYS_ADMIN); otherwise they read as 0.
bool pfns_readable()
{
    static const bool readable = [] {
        void *p = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return false;
        }
        std::memset(p, 1, page);
        const bool ok = read_pfns(reinterpret_cast<std::uintptr_t>(p), 1)[0] != 0;
        ::munmap(p, page);
        return ok;
    }();
    return readable;
}

// ---------------------------------------------------------------------------
// A registrar that counts, stamps and records PFNs.

struct fake_mr {
    std::uintptr_t base = 0;
    std::size_t len = 0;
    std::uint64_t stamp = 0;  ///< fake_registrar clock at registration
    std::vector<std::uint64_t> pfns;
};

class fake_registrar final : public registrar {
  public:
    status reg(void *addr, std::size_t len, reg_handle &out) override
    {
        if (fail_next_.exchange(false)) {
            return status::io_error;
        }
        // Like ibv_reg_mr: fault the pages in for writing, and fail (EFAULT)
        // rather than crash on memory that is not mapped.
        if (::madvise(addr, len, MADV_POPULATE_WRITE) != 0) {
            failed_.fetch_add(1);
            return status::access;
        }
        auto *mr = new fake_mr;
        mr->base = reinterpret_cast<std::uintptr_t>(addr);
        mr->len = len;
        mr->pfns = read_pfns(mr->base, len / page);
        mr->stamp = clock_.fetch_add(1) + 1;
        std::function<void()> hook;
        {
            std::lock_guard<std::mutex> g(m_);
            live_.insert(mr);
            hook.swap(hook_);
        }
        regs_.fetch_add(1);
        out.mr = mr;
        out.lkey = static_cast<std::uint32_t>(mr->stamp);
        out.rkey = static_cast<std::uint32_t>(mr->stamp) | 0x80000000u;
        if (hook) {
            hook();  // after the pages were pinned, before the cache sees the result
        }
        return status::ok;
    }

    void dereg(reg_handle &h) noexcept override
    {
        auto *mr = static_cast<fake_mr *>(h.mr);
        {
            std::lock_guard<std::mutex> g(m_);
            if (live_.erase(mr) != 1) {
                bad_deregs_.fetch_add(1);  // double or bogus deregistration
                return;
            }
        }
        delete mr;
        h = {};
        deregs_.fetch_add(1);
    }

    /// Advance the clock: registrations made before the returned value are
    /// older than whatever the caller just did.
    std::uint64_t tick() { return clock_.fetch_add(1) + 1; }
    void fail_next() { fail_next_.store(true); }
    /// Run `fn` inside the next successful reg(), after it recorded the pages.
    void on_next_reg(std::function<void()> fn)
    {
        std::lock_guard<std::mutex> g(m_);
        hook_ = std::move(fn);
    }
    bool is_live(const fake_mr *mr)
    {
        std::lock_guard<std::mutex> g(m_);
        return live_.count(const_cast<fake_mr *>(mr)) == 1;
    }
    /// Whether the registration with this stamp is live (a deleted fake_mr's
    /// address may be reused by a newer one, its stamp is not).
    bool is_live(std::uint64_t stamp)
    {
        std::lock_guard<std::mutex> g(m_);
        return std::any_of(live_.begin(), live_.end(),
                           [stamp](const fake_mr *mr) { return mr->stamp == stamp; });
    }
    std::size_t live()
    {
        std::lock_guard<std::mutex> g(m_);
        return live_.size();
    }
    std::uint64_t regs() const { return regs_.load(); }
    std::uint64_t deregs() const { return deregs_.load(); }
    std::uint64_t bad_deregs() const { return bad_deregs_.load(); }
    std::uint64_t failed() const { return failed_.load(); }

    ~fake_registrar() override
    {
        for (fake_mr *mr : live_) {
            delete mr;
        }
    }

  private:
    std::mutex m_;
    std::set<fake_mr *> live_;
    std::atomic<std::uint64_t> clock_{0};
    std::atomic<std::uint64_t> regs_{0};
    std::atomic<std::uint64_t> deregs_{0};
    std::atomic<std::uint64_t> bad_deregs_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<bool> fail_next_{false};
    std::function<void()> hook_;
};

const fake_mr *mr_of(const rcache::region *r)
{
    return static_cast<const fake_mr *>(r->handle().mr);
}

std::uint64_t stamp_of(const rcache::region *r)
{
    return mr_of(r)->stamp;
}

/// get() and every check that a registration is usable: it covers the
/// request, is live in the registrar, and (with readable PFNs) maps the
/// physical pages the buffer has now. A stale registration fails.
testing::AssertionResult checked_get(rcache &c, fake_registrar &f, const void *p, std::size_t n,
                                     rcache::region *&r)
{
    r = nullptr;
    const status s = c.get(p, n, r);
    if (s != status::ok) {
        return testing::AssertionFailure() << "get failed: " << status_string(s);
    }
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (r->base() > a || r->base() + r->length() < a + n || r->base() % page != 0 ||
        r->length() % page != 0) {
        return testing::AssertionFailure() << "the region does not cover the request";
    }
    const fake_mr *mr = mr_of(r);
    if (!f.is_live(mr)) {
        return testing::AssertionFailure() << "the region was already deregistered";
    }
    if (mr->base != r->base() || mr->len != r->length() || r->lkey() != mr->stamp) {
        return testing::AssertionFailure() << "the region does not match its registration";
    }
    if (pfns_readable()) {
        const std::vector<std::uint64_t> now = read_pfns(mr->base, mr->len / page);
        if (now != mr->pfns) {
            return testing::AssertionFailure()
                   << "stale registration: it maps other physical pages than the buffer has now";
        }
    }
    return testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// Memory helpers.

/// An anonymous private mapping of `pages` pages, filled with a pattern.
class mapping {
  public:
    explicit mapping(std::size_t pages) : len_(pages * page)
    {
        void *p = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
        if (p_ != nullptr) {
            std::memset(p_, 0x11, len_);
        }
    }
    ~mapping()
    {
        if (p_ != nullptr) {
            ::munmap(p_, len_);
        }
    }
    mapping(const mapping &) = delete;
    mapping &operator=(const mapping &) = delete;

    char *data() const { return p_; }
    std::size_t size() const { return len_; }
    /// The caller takes over unmapping.
    void release() { p_ = nullptr; }
    std::uintptr_t addr() const { return reinterpret_cast<std::uintptr_t>(p_); }

    /// munmap, then mmap fresh memory at the same address. False if the kernel
    /// put it elsewhere (the address was taken meanwhile); the mapping then
    /// is at the new address.
    bool unmap_and_map_again()
    {
        ::munmap(p_, len_);
        return map_again();
    }

    /// After the test unmapped (or moved away) this mapping itself: map fresh
    /// memory at the same address if it is still free, else anywhere. Never
    /// unmaps: another thread (the sanitizer runtime, say) may own the
    /// address by now.
    bool map_again()
    {
        char *old = p_;
        void *q = ::mmap(old, len_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (q == MAP_FAILED) {
            q = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        p_ = q == MAP_FAILED ? nullptr : static_cast<char *>(q);
        if (p_ != nullptr) {
            std::memset(p_, 0x22, len_);
        }
        return p_ == old;
    }

    /// Replace the pages in place by pages allocated while the old ones still
    /// existed, so they have other frames (what the PFN check can see): fresh
    /// memory is moved over the mapping (the kernel reports an UNMAP of it).
    bool replace_pages()
    {
        void *s = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED) {
            return false;
        }
        std::memset(s, 0x33, len_);
        return ::mremap(s, len_, len_, MREMAP_MAYMOVE | MREMAP_FIXED, p_) == p_;
    }

  private:
    std::size_t len_;
    char *p_ = nullptr;
};

std::unique_ptr<rcache> make_cache(registrar &r, const rcache_config &cfg = {})
{
    auto c = rcache::create(r, cfg);
    return c.ok() ? std::move(c).value() : nullptr;
}

/// Aborts the process if a scope takes longer than `seconds` (a deadlock
/// would otherwise hang the test run).
class watchdog {
  public:
    watchdog(int seconds, const char *what)
        : thread_([this, seconds, what] {
              std::unique_lock<std::mutex> l(m_);
              if (!cv_.wait_for(l, std::chrono::seconds(seconds), [this] { return done_; })) {
                  std::fprintf(stderr, "watchdog: %s did not finish in %d s (deadlock?)\n", what,
                               seconds);
                  std::abort();
              }
          })
    {
    }
    ~watchdog()
    {
        {
            std::lock_guard<std::mutex> l(m_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

/// Runs `child` in a forked process and returns what it returned (or -1). The
/// child exits with that status and also writes it to a pipe, which the
/// parent prefers: valgrind replaces a child's exit status with its own error
/// code when it finds errors in libraries the child merely loaded.
template <class F>
int run_in_child(F child)
{
    int fds[2];
    if (::pipe(fds) != 0) {
        return -1;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        const int rc = child();
        (void)!::write(fds[1], &rc, sizeof(rc));
        ::_exit(rc);
    }
    ::close(fds[1]);
    int reported = -1;
    const bool got = pid > 0 && ::read(fds[0], &reported, sizeof(reported)) == sizeof(reported);
    ::close(fds[0]);
    if (pid < 0) {
        return -1;
    }
    int st = 0;
    if (::waitpid(pid, &st, 0) != pid) {
        return -1;
    }
    if (got) {
        return reported;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// Fixture of the tests that need the memory monitor.
class monitored : public testing::Test {
  protected:
    void SetUp() override
    {
        if (memory_monitor::start() != status::ok) {
            GTEST_SKIP() << "memory monitor unavailable: " << memory_monitor::unavailable_reason();
        }
    }
};

class memory_monitor_watched : public monitored {};
class rcache_watched : public monitored {};

/// True when `events` (read through `c`) contain a range overlapping [start, end).
bool saw_event(memory_monitor::cursor &c, std::uintptr_t start, std::uintptr_t end, bool *lost)
{
    address_range ev[64];
    bool found = false;
    for (;;) {
        bool l = false;
        const std::size_t n = memory_monitor::read_events(c, ev, 64, l);
        if (l && lost != nullptr) {
            *lost = true;
        }
        for (std::size_t i = 0; i < n; ++i) {
            found = found || (ev[i].start < end && start < ev[i].end);
        }
        if (n < 64 && !l) {
            return found;
        }
    }
}

// ---------------------------------------------------------------------------
// memory_monitor

TEST_F(memory_monitor_watched, munmap_is_seen_as_soon_as_munmap_returns)
{
    // No retry and no sleep: the event must be recorded before munmap()
    // returns (the reader holds the events lock across read and record).
    // Repeated to give the race a chance to show.
    for (int i = 0; i < 200; ++i) {
        memory_monitor::cursor c = memory_monitor::subscribe();
        mapping m(2);
        ASSERT_NE(m.data(), nullptr);
        ASSERT_EQ(memory_monitor::watch(m.addr(), m.addr() + m.size()), status::ok);
        ASSERT_EQ(::munmap(m.data(), m.size()), 0);
        const std::uintptr_t a = m.addr();
        (void)m.map_again();  // the destructor unmaps what it owns
        ASSERT_TRUE(saw_event(c, a, a + 2 * page, nullptr)) << "iteration " << i;
    }
}

TEST_F(memory_monitor_watched, reports_unmap_remove_and_remap)
{
    mapping m(4);
    ASSERT_NE(m.data(), nullptr);
    memory_monitor::cursor c = memory_monitor::subscribe();
    ASSERT_EQ(memory_monitor::watch(m.addr(), m.addr() + m.size()), status::ok);

    const memory_monitor_counts before = memory_monitor::counts();
    ASSERT_EQ(::madvise(m.data(), page, MADV_DONTNEED), 0);
    EXPECT_TRUE(saw_event(c, m.addr(), m.addr() + page, nullptr));
    EXPECT_GT(memory_monitor::counts().remove, before.remove);

    // DONTUNMAP: the source stays mapped (empty); only REMAP is reported.
    void *moved =
        ::mremap(m.data(), m.size(), m.size(), MREMAP_MAYMOVE | MREMAP_DONTUNMAP, nullptr);
    if (moved != MAP_FAILED) {
        EXPECT_TRUE(saw_event(c, m.addr(), m.addr() + m.size(), nullptr));
        EXPECT_GT(memory_monitor::counts().remap, before.remap);
        ::munmap(moved, m.size());
    }

    ASSERT_EQ(memory_monitor::watch(m.addr(), m.addr() + m.size()), status::ok);
    const std::uint64_t unmaps = memory_monitor::counts().unmap;
    char *p = m.data();
    m.release();  // unmapped piecewise here, never twice
    ASSERT_EQ(::munmap(p + page, page), 0);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    EXPECT_TRUE(saw_event(c, a + page, a + 2 * page, nullptr));
    EXPECT_GT(memory_monitor::counts().unmap, unmaps);
    ::munmap(p, page);
    ::munmap(p + 2 * page, 2 * page);
    EXPECT_EQ(memory_monitor::counts().other, before.other);  // never a page fault
}

TEST_F(memory_monitor_watched, watch_rejects_unaligned_and_empty)
{
    mapping m(2);
    EXPECT_EQ(memory_monitor::watch(m.addr() + 1, m.addr() + page), status::invalid);
    EXPECT_EQ(memory_monitor::watch(m.addr(), m.addr()), status::invalid);
}

TEST_F(memory_monitor_watched, file_mapping_cannot_be_watched)
{
    char name[] = "rcache_test_file_XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ::unlink(name);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(4 * page)), 0);
    void *p = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const status s = memory_monitor::watch(a, a + 4 * page);
    ::munmap(p, 4 * page);
    ::close(fd);
    // Never watched, tmpfs (shmem) included: only private anonymous memory is.
    EXPECT_EQ(s, status::not_supported);
}

// Shared memory can get new pages through its file (fallocate(PUNCH_HOLE),
// ftruncate, another process) with no event: it must never be cached. A memfd
// and a shared anonymous mapping are registered for each get only, and every
// get maps the current pages (checked_get compares frame numbers).
TEST(rcache, shared_mappings_are_never_cached)
{
    fake_registrar f;
    auto c = make_cache(f);
    ASSERT_NE(c, nullptr);
    const int fd = static_cast<int>(::syscall(SYS_memfd_create, "rcache_test", 0));
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(4 * page)), 0);
    void *p = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    void *q = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(q, MAP_FAILED);
    for (void *m : {p, q}) {
        std::memset(m, 'a', 4 * page);
        for (int i = 0; i < 2; ++i) {
            rcache::region *r = nullptr;
            ASSERT_TRUE(checked_get(*c, f, m, 4 * page, r));
            c->put(r);
            if (m == p) {
                // New pages behind the same mapping, without any munmap or madvise.
                ASSERT_EQ(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                                      static_cast<off_t>(4 * page)),
                          0)
                    << std::strerror(errno);
                std::memset(m, 'b', 4 * page);
            }
        }
    }
    EXPECT_EQ(c->stats().uncached, 4u);
    EXPECT_EQ(c->stats().hits, 0u);
    EXPECT_EQ(c->stats().regions, 0u);
    EXPECT_EQ(f.deregs(), 4u);
    ::munmap(p, 4 * page);
    ::munmap(q, 4 * page);
    ::close(fd);
}

TEST_F(memory_monitor_watched, ring_overflow_is_reported_as_lost)
{
    const std::size_t pages = memory_monitor::ring_capacity + 16;
    mapping m(pages);
    ASSERT_NE(m.data(), nullptr);
    memory_monitor::cursor c = memory_monitor::subscribe();
    ASSERT_EQ(memory_monitor::watch(m.addr(), m.addr() + m.size()), status::ok);
    for (std::size_t i = 0; i < pages; ++i) {
        ASSERT_EQ(::madvise(m.data() + i * page, page, MADV_DONTNEED), 0);
    }
    bool lost = false;
    (void)saw_event(c, 0, UINTPTR_MAX, &lost);
    EXPECT_TRUE(lost);
    // The cursor moved to the end of the stream: later events arrive again.
    ASSERT_EQ(::madvise(m.data(), page, MADV_DONTNEED), 0);
    lost = false;
    EXPECT_TRUE(saw_event(c, m.addr(), m.addr() + page, &lost));
    EXPECT_FALSE(lost);
}

TEST(memory_monitor, unavailable_userfaultfd_degrades_to_uncached)
{
    // A child whose seccomp filter fails userfaultfd(2) with EPERM, as a
    // container runtime would.
    const int rc = run_in_child([] {
        static sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            return 77;
        }
        if (memory_monitor::start() == status::ok) {
            return 10;
        }
        if (std::strstr(memory_monitor::unavailable_reason(), "userfaultfd") == nullptr) {
            return 11;
        }
        fake_registrar f;
        auto c = make_cache(f);
        if (c == nullptr || c->caching()) {
            return 12;
        }
        mapping m(4);
        rcache::region *r1 = nullptr;
        rcache::region *r2 = nullptr;
        if (!checked_get(*c, f, m.data(), m.size(), r1) ||
            !checked_get(*c, f, m.data(), m.size(), r2) || r1 == r2 || f.regs() != 2) {
            return 13;  // uncached: every get registers
        }
        c->put(r1);
        c->put(r2);
        if (f.deregs() != 2 || f.live() != 0) {
            return 14;  // ... and every put deregisters
        }
        (void)m.unmap_and_map_again();
        const std::uint64_t t = f.tick();
        if (!checked_get(*c, f, m.data(), m.size(), r1) || stamp_of(r1) <= t) {
            return 15;
        }
        c->put(r1);
        return c->stats().uncached == 3 && c->stats().hits == 0 ? 0 : 16;
    });
    if (rc == 77) {
        GTEST_SKIP() << "cannot install a seccomp filter here";
    }
    EXPECT_EQ(rc, 0) << "see the return codes in the child";
}

// ---------------------------------------------------------------------------
// rcache without the monitor

TEST(rcache, pfn_check_available)
{
    if (!pfns_readable()) {
        GTEST_SKIP() << "/proc/self/pagemap shows no PFNs (needs CAP_SYS_ADMIN): the tests "
                        "check registrations by stamps and counters only, not by physical pages";
    }
    // The check itself must be able to fail: pages replaced behind a
    // registration's back are detected.
    fake_registrar f;
    mapping m(4);
    reg_handle h;
    ASSERT_EQ(f.reg(m.data(), m.size(), h), status::ok);
    const auto *mr = static_cast<const fake_mr *>(h.mr);
    EXPECT_EQ(read_pfns(m.addr(), 4), mr->pfns);
    ASSERT_TRUE(m.replace_pages());
    EXPECT_NE(read_pfns(m.addr(), 4), mr->pfns);
    f.dereg(h);
}

TEST(rcache, disabled_never_caches)
{
    fake_registrar f;
    auto c = make_cache(f, {.enable = false});
    ASSERT_NE(c, nullptr);
    EXPECT_FALSE(c->caching());
    mapping m(4);
    rcache::region *r1 = nullptr;
    rcache::region *r2 = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r1));
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r2));
    EXPECT_NE(r1, r2);
    EXPECT_EQ(f.regs(), 2u);
    c->put(r1);
    EXPECT_EQ(f.deregs(), 1u);
    c->put(r2);
    EXPECT_EQ(f.deregs(), 2u);
    const rcache_stats s = c->stats();
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.misses, 2u);
    EXPECT_EQ(s.uncached, 2u);
    EXPECT_EQ(s.regions, 0u);
}

TEST(rcache, rejects_empty_and_wrapping_ranges)
{
    fake_registrar f;
    auto c = make_cache(f);
    ASSERT_NE(c, nullptr);
    mapping m(1);
    rcache::region *r = nullptr;
    EXPECT_EQ(c->get(m.data(), 0, r), status::invalid);
    EXPECT_EQ(c->get(reinterpret_cast<void *>(UINTPTR_MAX - 10), 100, r), status::invalid);
    EXPECT_EQ(f.regs(), 0u);
}

TEST(rcache, registrar_failure_is_returned_and_leaks_nothing)
{
    fake_registrar f;
    auto c = make_cache(f);
    ASSERT_NE(c, nullptr);
    mapping m(4);
    rcache::region *r = nullptr;
    f.fail_next();
    EXPECT_EQ(c->get(m.data(), m.size(), r), status::io_error);
    EXPECT_EQ(c->stats().regions, 0u);
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));  // the next one works
    c->put(r);
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    EXPECT_EQ(f.bad_deregs(), 0u);
}

TEST(rcache, file_mapping_is_correct_whether_cached_or_not)
{
    // Two files with other contents (and so other page-cache pages, which
    // stay alive while the files are open), mapped in turn at one address.
    int fds[2];
    for (int &fd : fds) {
        char name[] = "rcache_test_file_XXXXXX";
        fd = ::mkstemp(name);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        ::unlink(name);
        ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(4 * page)), 0);
    }

    fake_registrar f;
    auto c = make_cache(f);
    ASSERT_NE(c, nullptr);
    void *p = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(p, 'a', 4 * page);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, p, 4 * page, r));
    c->put(r);
    // Not watchable (file mappings never are): registered for this get only.
    EXPECT_EQ(c->stats().uncached, 1u);
    EXPECT_EQ(c->stats().regions, 0u);
    EXPECT_EQ(f.deregs(), 1u);
    ASSERT_EQ(::munmap(p, 4 * page), 0);
    void *q =
        ::mmap(p, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fds[1], 0);
    if (q == MAP_FAILED) {  // the address was taken (or valgrind): still a valid check
        q = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
    }
    ASSERT_NE(q, MAP_FAILED);
    std::memset(q, 'b', 4 * page);
    const std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, q, 4 * page, r));
    EXPECT_GT(stamp_of(r), t);
    c->put(r);
    ::munmap(q, 4 * page);
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    ::close(fds[0]);
    ::close(fds[1]);
}

// ---------------------------------------------------------------------------
// rcache with the monitor

TEST_F(rcache_watched, hit_on_same_buffer)
{
    fake_registrar f;
    auto c = make_cache(f);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(c->caching());
    mapping m(4);
    rcache::region *r1 = nullptr;
    rcache::region *r2 = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r1));
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r2));  // hit while referenced
    EXPECT_EQ(r1, r2);
    c->put(r1);
    c->put(r2);
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r2));  // hit while unreferenced
    EXPECT_EQ(r1, r2);
    c->put(r2);
    EXPECT_EQ(f.regs(), 1u);
    EXPECT_EQ(f.deregs(), 0u);
    const rcache_stats s = c->stats();
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.regions, 1u);
    EXPECT_EQ(s.unreferenced, 1u);
    EXPECT_EQ(s.unreferenced_bytes, m.size());
    c.reset();
    EXPECT_EQ(f.deregs(), 1u);
    EXPECT_EQ(f.bad_deregs(), 0u);
}

TEST_F(rcache_watched, subrange_hit)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(8);
    rcache::region *r1 = nullptr;
    rcache::region *r2 = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r1));
    ASSERT_TRUE(checked_get(*c, f, m.data() + page + 10, 3 * page, r2));
    EXPECT_EQ(r1, r2);
    EXPECT_EQ(r1->base(), m.addr());
    EXPECT_EQ(r1->length(), m.size());
    c->put(r1);
    c->put(r2);
    EXPECT_EQ(c->stats().hits, 1u);
    EXPECT_EQ(f.regs(), 1u);
}

TEST_F(rcache_watched, miss_merges_overlapping_regions)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(8);
    char *p = m.data();
    rcache::region *a = nullptr;
    rcache::region *b = nullptr;
    rcache::region *x = nullptr;
    ASSERT_TRUE(checked_get(*c, f, p, 2 * page, a));  // [0, 2)
    const std::uint64_t a_stamp = stamp_of(a);
    ASSERT_TRUE(checked_get(*c, f, p + 4 * page, 2 * page, b));  // [4, 6)
    c->put(b);
    // [1, 5) overlaps both: one region [0, 6) replaces them.
    ASSERT_TRUE(checked_get(*c, f, p + page, 4 * page, x));
    EXPECT_EQ(x->base(), m.addr());
    EXPECT_EQ(x->length(), 6 * page);
    rcache_stats s = c->stats();
    EXPECT_EQ(s.merged, 2u);
    EXPECT_EQ(s.regions, 1u);
    EXPECT_EQ(f.deregs(), 1u);  // b (unreferenced) now; a is still held
    EXPECT_TRUE(f.is_live(a_stamp));
    c->put(a);
    EXPECT_EQ(f.deregs(), 2u);  // a on its last put
    // Lookups of any part now hit the union.
    rcache::region *y = nullptr;
    ASSERT_TRUE(checked_get(*c, f, p, page, y));
    EXPECT_EQ(y, x);
    c->put(y);
    ASSERT_TRUE(checked_get(*c, f, p + 5 * page, page, y));
    EXPECT_EQ(y, x);
    c->put(y);
    c->put(x);
    // Touching but not overlapping: not merged.
    ASSERT_TRUE(checked_get(*c, f, p + 6 * page, 2 * page, y));
    EXPECT_EQ(y->base(), m.addr() + 6 * page);
    c->put(y);
    EXPECT_EQ(c->stats().regions, 2u);
    EXPECT_EQ(c->stats().merged, 2u);
}

TEST_F(rcache_watched, munmap_then_mmap_at_same_address)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    c->put(r);
    const std::uint64_t old = stamp_of(r);
    if (!m.unmap_and_map_again()) {
        GTEST_SKIP() << "the kernel did not give the address back";
    }
    const std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    EXPECT_GT(stamp_of(r), t) << "a registration from before the munmap was returned";
    EXPECT_FALSE(f.is_live(old));
    c->put(r);
    // The same, with pages whose frames surely differ (the PFN check sees it).
    ASSERT_TRUE(m.replace_pages());
    const std::uint64_t t2 = f.tick();
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    EXPECT_GT(stamp_of(r), t2);
    c->put(r);
    const rcache_stats s = c->stats();
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.misses, 3u);
    EXPECT_EQ(s.invalidations, 2u);
    EXPECT_EQ(f.deregs(), 2u);
    EXPECT_EQ(f.live(), 1u);
}

TEST_F(rcache_watched, free_then_malloc_at_same_address)
{
    // A fixed threshold: glibc otherwise raises it after freeing an mmapped
    // chunk, and the next malloc would come from the heap.
    (void)::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    const std::size_t n = 1 << 20;
    fake_registrar f;
    auto c = make_cache(f);
    char *p = static_cast<char *>(std::malloc(n));
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, n);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, p, n, r));
    const std::uint64_t old = stamp_of(r);
    c->put(r);
    std::free(p);
    char *q = static_cast<char *>(std::malloc(n));
    ASSERT_NE(q, nullptr);
    if (q != p) {
        std::free(q);
        GTEST_SKIP() << "the allocator did not return the same address (ASan quarantine?)";
    }
    std::memset(q, 2, n);
    const std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, q, n, r));
    EXPECT_GT(stamp_of(r), t) << "a registration from before free() was returned";
    EXPECT_FALSE(f.is_live(old));
    c->put(r);
    EXPECT_EQ(c->stats().hits, 0u);
    c.reset();
    std::free(q);
}

TEST_F(rcache_watched, madvise_dontneed_invalidates)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    c->put(r);
    ASSERT_EQ(::madvise(m.data() + page, page, MADV_DONTNEED), 0);
    m.data()[page] = 5;
    const std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    EXPECT_GT(stamp_of(r), t);
    c->put(r);
    EXPECT_EQ(c->stats().invalidations, 1u);
    EXPECT_EQ(f.deregs(), 1u);
}

TEST_F(rcache_watched, mremap_invalidates)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    mapping dest(4);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    c->put(r);
    // Move the pages away, and map fresh memory where they were.
    ASSERT_EQ(::mremap(m.data(), m.size(), m.size(), MREMAP_MAYMOVE | MREMAP_FIXED, dest.data()),
              dest.data());
    (void)m.map_again();
    std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    EXPECT_GT(stamp_of(r), t);
    c->put(r);
    EXPECT_EQ(f.live(), 1u);

    // DONTUNMAP: the address stays mapped, its pages move away (REMAP only).
    void *moved =
        ::mremap(m.data(), m.size(), m.size(), MREMAP_MAYMOVE | MREMAP_DONTUNMAP, nullptr);
    if (moved == MAP_FAILED) {
        GTEST_SKIP() << "MREMAP_DONTUNMAP not supported here";
    }
    m.data()[0] = 7;
    t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    EXPECT_GT(stamp_of(r), t);
    c->put(r);
    ::munmap(moved, m.size());
    EXPECT_EQ(c->stats().hits, 0u);
    EXPECT_EQ(f.live(), 1u);
}

TEST_F(rcache_watched, sbrk_shrink_invalidates)
{
    // The break is shared with malloc: the cache and the registrar are warmed
    // up first so that they are unlikely to grow the heap meanwhile, and the
    // break is only moved back when nothing moved it since (the reader thread
    // never allocates).
    fake_registrar f;
    auto c = make_cache(f);
    rcache::region *r = nullptr;
    {
        mapping warm(1);
        ASSERT_TRUE(checked_get(*c, f, warm.data(), warm.size(), r));
        c->put(r);
    }
    char *cur = static_cast<char *>(::sbrk(0));
    const std::size_t pad = (page - reinterpret_cast<std::uintptr_t>(cur) % page) % page;
    const std::size_t n = 8 * page;
    ASSERT_NE(::sbrk(static_cast<intptr_t>(pad)), reinterpret_cast<void *>(-1));
    char *base = static_cast<char *>(::sbrk(static_cast<intptr_t>(n)));
    ASSERT_NE(base, reinterpret_cast<void *>(-1));
    std::memset(base, 1, n);

    ASSERT_TRUE(checked_get(*c, f, base, n, r));
    const std::uint64_t old = stamp_of(r);
    c->put(r);
    if (::sbrk(0) != base + n) {
        GTEST_SKIP() << "malloc moved the break during the test";
    }
    ASSERT_NE(::sbrk(-static_cast<intptr_t>(n)), reinterpret_cast<void *>(-1));
    ASSERT_EQ(::sbrk(static_cast<intptr_t>(n)), base);
    std::memset(base, 2, n);
    const std::uint64_t t = f.tick();
    ASSERT_TRUE(checked_get(*c, f, base, n, r));
    EXPECT_GT(stamp_of(r), t);
    EXPECT_FALSE(f.is_live(old));
    c->put(r);
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    if (::sbrk(0) == base + n) {
        ASSERT_NE(::sbrk(-static_cast<intptr_t>(n + pad)), reinterpret_cast<void *>(-1));
        EXPECT_EQ(::sbrk(0), cur);
    }
}

TEST_F(rcache_watched, unmap_while_referenced)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    rcache::region *held = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), held));
    const std::uint64_t held_stamp = stamp_of(held);
    if (!m.unmap_and_map_again()) {
        c->put(held);
        GTEST_SKIP() << "the kernel did not give the address back";
    }
    const std::uint64_t t = f.tick();
    rcache::region *fresh = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), fresh));
    EXPECT_NE(fresh, held);
    EXPECT_GT(stamp_of(fresh), t);
    // The holder's registration stays valid until its put().
    EXPECT_TRUE(f.is_live(held_stamp));
    EXPECT_EQ(f.deregs(), 0u);
    c->put(held);
    EXPECT_EQ(f.deregs(), 1u);
    c->put(fresh);
    rcache::region *again = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), again));
    EXPECT_EQ(again, fresh);  // the new one is cached
    c->put(again);
    EXPECT_EQ(f.regs(), 2u);
}

TEST_F(rcache_watched, change_during_registration_is_not_lost)
{
    // The memory changes after the registrar pinned the pages but before the
    // cache inserted the region (a get() racing with a munmap() by another
    // thread). That get() may return the registration (the race is the
    // caller's), but it must not be cached. In round 1 another get() of the
    // same cache consumes the event meanwhile: it must still reach the
    // pending region. The registrar runs with no cache lock held, so the hook
    // may call get() itself.
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(round == 0 ? "event seen by the re-check" : "event seen by another get");
        fake_registrar f;
        auto c = make_cache(f);
        mapping m(4);
        mapping other(1);
        f.on_next_reg([&] {
            ASSERT_TRUE(m.replace_pages());
            if (round == 1) {
                rcache::region *o = nullptr;
                ASSERT_TRUE(checked_get(*c, f, other.data(), other.size(), o));
                c->put(o);
            }
        });
        rcache::region *r = nullptr;
        ASSERT_EQ(c->get(m.data(), m.size(), r), status::ok);
        c->put(r);
        EXPECT_EQ(c->stats().uncached, 1u);
        const std::uint64_t t = f.tick();
        ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
        EXPECT_GT(stamp_of(r), t) << "the registration made before the change was cached";
        c->put(r);
    }
}

TEST_F(rcache_watched, process_events_releases_unreferenced_registrations)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    c->put(r);
    ASSERT_EQ(::munmap(m.data(), m.size()), 0);
    c->process_events();
    EXPECT_EQ(f.deregs(), 1u);
    EXPECT_EQ(c->stats().regions, 0u);
    (void)m.map_again();  // the destructor unmaps what it owns
}

TEST_F(rcache_watched, lru_keeps_max_regions)
{
    fake_registrar f;
    auto c = make_cache(f, {.max_regions = 2});
    mapping a(1);
    mapping b(1);
    mapping d(1);
    rcache::region *r = nullptr;
    for (mapping *m : {&a, &b, &d}) {
        ASSERT_TRUE(checked_get(*c, f, m->data(), m->size(), r));
        c->put(r);
    }
    rcache_stats s = c->stats();
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.unreferenced, 2u);
    EXPECT_EQ(f.deregs(), 1u);
    // a was the least recently used: gone; b and d hit.
    ASSERT_TRUE(checked_get(*c, f, b.data(), b.size(), r));
    c->put(r);
    ASSERT_TRUE(checked_get(*c, f, d.data(), d.size(), r));
    c->put(r);
    EXPECT_EQ(c->stats().hits, 2u);
    ASSERT_TRUE(checked_get(*c, f, a.data(), a.size(), r));
    c->put(r);
    s = c->stats();
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses, 4u);
    EXPECT_EQ(s.evictions, 2u);  // a's return pushed out b
    // Referenced regions do not count against the limit.
    rcache::region *held[3];
    for (int i = 0; mapping * m : {&a, &b, &d}) {
        ASSERT_TRUE(checked_get(*c, f, m->data(), m->size(), held[i++]));
    }
    EXPECT_EQ(c->stats().unreferenced, 0u);
    EXPECT_EQ(c->stats().regions, 3u);
    for (rcache::region *h : held) {
        c->put(h);
    }
    EXPECT_EQ(c->stats().unreferenced, 2u);
}

TEST_F(rcache_watched, lru_keeps_max_bytes)
{
    fake_registrar f;
    auto c = make_cache(f, {.max_bytes = 3 * page});
    mapping a(2);
    mapping b(2);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, a.data(), a.size(), r));
    c->put(r);
    EXPECT_EQ(c->stats().evictions, 0u);
    ASSERT_TRUE(checked_get(*c, f, b.data(), b.size(), r));
    c->put(r);
    EXPECT_EQ(c->stats().evictions, 1u);
    EXPECT_EQ(c->stats().unreferenced_bytes, 2 * page);
    EXPECT_EQ(f.deregs(), 1u);
    // One region larger than the limit is deregistered on its put.
    mapping big(4);
    ASSERT_TRUE(checked_get(*c, f, big.data(), big.size(), r));
    c->put(r);
    EXPECT_EQ(c->stats().unreferenced_bytes, 0u);
}

TEST_F(rcache_watched, two_caches_both_see_an_invalidation)
{
    fake_registrar f1;
    fake_registrar f2;
    auto c1 = make_cache(f1);
    auto c2 = make_cache(f2);
    mapping m(4);
    rcache::region *r1 = nullptr;
    rcache::region *r2 = nullptr;
    ASSERT_TRUE(checked_get(*c1, f1, m.data(), m.size(), r1));
    ASSERT_TRUE(checked_get(*c2, f2, m.data(), m.size(), r2));
    c1->put(r1);
    c2->put(r2);
    ASSERT_TRUE(m.replace_pages());
    const std::uint64_t t1 = f1.tick();
    const std::uint64_t t2 = f2.tick();
    ASSERT_TRUE(checked_get(*c1, f1, m.data(), m.size(), r1));
    ASSERT_TRUE(checked_get(*c2, f2, m.data(), m.size(), r2));
    EXPECT_GT(stamp_of(r1), t1);
    EXPECT_GT(stamp_of(r2), t2);
    c1->put(r1);
    c2->put(r2);
    EXPECT_EQ(f1.deregs(), 1u);
    EXPECT_EQ(f2.deregs(), 1u);
}

TEST_F(rcache_watched, destructor_deregisters_referenced_regions_with_a_warning)
{
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(2);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*c, f, m.data(), m.size(), r));
    {
        test::expect_log_warnings expect(1);
        c.reset();
    }
    EXPECT_EQ(f.live(), 0u);
    EXPECT_EQ(f.bad_deregs(), 0u);
}

TEST_F(rcache_watched, concurrent_get_put_of_one_buffer)
{
    watchdog w(20, "concurrent_get_put_of_one_buffer");
    fake_registrar f;
    auto c = make_cache(f);
    mapping m(4);
    constexpr int threads = 4;
    constexpr int iterations = 2000;
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) {
        ts.emplace_back([&] {
            for (int k = 0; k < iterations; ++k) {
                rcache::region *r = nullptr;
                if (c->get(m.data(), m.size(), r) != status::ok || !f.is_live(mr_of(r))) {
                    failures.fetch_add(1);
                    continue;
                }
                c->put(r);
            }
        });
    }
    for (std::thread &t : ts) {
        t.join();
    }
    EXPECT_EQ(failures.load(), 0);
    const rcache_stats s = c->stats();
    EXPECT_EQ(s.hits + s.misses, std::uint64_t{threads} * iterations);
    EXPECT_LE(s.misses, std::uint64_t{threads});  // only the first, racing, gets miss
    EXPECT_EQ(s.regions, 1u);
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    EXPECT_EQ(f.bad_deregs(), 0u);
}

TEST_F(rcache_watched, concurrent_remap_and_get_never_returns_a_stale_registration)
{
    // One thread keeps replacing the memory of buffers (munmap + mmap at the
    // same address, fresh pages moved over them, madvise(DONTNEED)) while two
    // others get/put them. A per-slot mutex orders each change against each
    // get of that slot (a get racing with a change of its own buffer has no
    // right answer), but the threads otherwise run freely: munmap() blocks on
    // the monitor's reader while the other threads hold the cache and events
    // locks. Checked: no deadlock (watchdog), every get returns a live
    // registration made after the last change of its buffer, PFNs match.
    watchdog w(30, "concurrent_remap_and_get");
    fake_registrar f;
    auto c = make_cache(f);
    constexpr int n_slots = 8;
    constexpr std::size_t slot_pages = 4;
    struct slot {
        std::mutex m;
        std::unique_ptr<mapping> map;
        std::uint64_t changed = 0;  // f's clock after the last change
    } slots[n_slots];
    for (slot &s : slots) {
        s.map = std::make_unique<mapping>(slot_pages);
        ASSERT_NE(s.map->data(), nullptr);
    }
    std::atomic<bool> stop{false};
    std::atomic<int> stale{0};
    std::atomic<int> errors{0};
    std::atomic<std::uint64_t> gets{0};

    std::thread changer([&] {
        unsigned seed = 1;
        for (int k = 0; k < 1500; ++k) {
            slot &s = slots[rand_r(&seed) % n_slots];
            std::lock_guard<std::mutex> g(s.m);
            switch (k % 3) {
                case 0:
                    (void)s.map->unmap_and_map_again();
                    break;
                case 1:
                    (void)s.map->replace_pages();
                    break;
                default:
                    (void)::madvise(s.map->data(), s.map->size(), MADV_DONTNEED);
                    std::memset(s.map->data(), 0x44, s.map->size());
                    break;
            }
            s.changed = f.tick();
        }
        stop.store(true);
    });
    auto getter = [&](unsigned seed) {
        while (!stop.load()) {
            slot &s = slots[rand_r(&seed) % n_slots];
            std::lock_guard<std::mutex> g(s.m);
            rcache::region *r = nullptr;
            const testing::AssertionResult ok = checked_get(*c, f, s.map->data(), s.map->size(), r);
            if (!ok) {
                errors.fetch_add(1);
                if (r != nullptr) {
                    c->put(r);
                }
                continue;
            }
            if (stamp_of(r) <= s.changed) {
                stale.fetch_add(1);
            }
            gets.fetch_add(1);
            c->put(r);
        }
    };
    std::thread g1(getter, 2);
    std::thread g2(getter, 3);
    changer.join();
    g1.join();
    g2.join();
    EXPECT_EQ(stale.load(), 0);
    EXPECT_EQ(errors.load(), 0);
    EXPECT_GT(gets.load(), 0u);
    EXPECT_GT(c->stats().hits, 0u);  // it did cache in between
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    EXPECT_EQ(f.bad_deregs(), 0u);
}

TEST_F(rcache_watched, concurrent_unmap_racing_get_does_not_deadlock)
{
    // No ordering at all: buffers are unmapped while being registered. Gets
    // may fail (the registrar reports unmapped memory); nothing may hang,
    // crash or leak.
    watchdog w(30, "concurrent_unmap_racing_get");
    fake_registrar f;
    auto c = make_cache(f);
    constexpr int n_slots = 4;
    const std::size_t len = 4 * page;
    std::atomic<char *> addr[n_slots];
    for (auto &a : addr) {
        void *p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        a.store(static_cast<char *>(p));
    }
    std::atomic<bool> stop{false};
    std::thread changer([&] {
        for (int k = 0; k < 1500; ++k) {
            char *p = addr[k % n_slots].load();
            ::munmap(p, len);
            void *q = ::mmap(p, len, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (q == MAP_FAILED) {
                q = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                           0);
            }
            addr[k % n_slots].store(static_cast<char *>(q));
        }
        stop.store(true);
    });
    auto getter = [&](unsigned seed) {
        while (!stop.load()) {
            rcache::region *r = nullptr;
            if (c->get(addr[rand_r(&seed) % n_slots].load(), len, r) == status::ok) {
                c->put(r);
            }
        }
    };
    std::thread g1(getter, 5);
    std::thread g2(getter, 6);
    changer.join();
    g1.join();
    g2.join();
    c.reset();
    EXPECT_EQ(f.live(), 0u);
    EXPECT_EQ(f.bad_deregs(), 0u);
    for (auto &a : addr) {
        ::munmap(a.load(), len);
    }
}

TEST_F(rcache_watched, fork_child_gets_its_own_monitor)
{
    fake_registrar f;
    auto parent_cache = make_cache(f);
    mapping m(4);
    rcache::region *r = nullptr;
    ASSERT_TRUE(checked_get(*parent_cache, f, m.data(), m.size(), r));
    parent_cache->put(r);

    const int rc = run_in_child([&]() -> int {
        // The inherited cache must not trust registrations made in the
        // parent: the child has no watch on its memory.
        const rcache_stats before = parent_cache->stats();
        rcache::region *cr = nullptr;
        if (!checked_get(*parent_cache, f, m.data(), m.size(), cr)) {
            return 10;
        }
        const rcache_stats after = parent_cache->stats();
        if (after.flushes != before.flushes + 1 || after.hits != before.hits) {
            return 11;
        }
        parent_cache->put(cr);
        // A cache created in the child gets a fresh monitor, which works.
        fake_registrar cf;
        auto c = make_cache(cf);
        if (c == nullptr || !c->caching() || !memory_monitor::running()) {
            return 12;
        }
        mapping b(4);
        if (!checked_get(*c, cf, b.data(), b.size(), cr)) {
            return 13;
        }
        c->put(cr);
        if (!checked_get(*c, cf, b.data(), b.size(), cr) || c->stats().hits != 1) {
            return 14;  // cached
        }
        c->put(cr);
        if (!b.unmap_and_map_again()) {
            return 0;  // cannot test the invalidation here; the rest passed
        }
        const std::uint64_t t = cf.tick();
        if (!checked_get(*c, cf, b.data(), b.size(), cr) || stamp_of(cr) <= t) {
            return 15;  // invalidated by the child's own monitor
        }
        c->put(cr);
        return cf.deregs() == 1 ? 0 : 16;
    });
    EXPECT_EQ(rc, 0) << "see the return codes in the child";

    // The parent's cache and monitor are unaffected.
    ASSERT_TRUE(checked_get(*parent_cache, f, m.data(), m.size(), r));
    parent_cache->put(r);
    EXPECT_EQ(parent_cache->stats().hits, 1u);
    EXPECT_EQ(parent_cache->stats().flushes, 0u);
}

}  // namespace
}  // namespace weft::base
