// Multi-process harness for transport tests: see harness.hpp.

#include "config.h"  // WEFT_BUILT_TRANSPORTS
#include "test/transport/harness.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <exception>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

namespace weft::test {

namespace {

constexpr int max_ranks = 16;
constexpr std::size_t max_addr_len = 256;

using clock_type = std::chrono::steady_clock;

std::int64_t elapsed_ms(clock_type::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - since).count();
}

std::uint64_t mix(std::uint64_t x)
{
    // splitmix64 finaliser: cheap, and every input bit affects every output byte.
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

/// The MAP_SHARED region of one run, created before fork. Only lock-free
/// std::atomic members are used across processes.
struct shared_region {
    std::atomic<std::uint32_t> arrived;     ///< processes in the current barrier
    std::atomic<std::uint32_t> generation;  ///< barrier episodes completed
    std::atomic<std::uint64_t> progress;    ///< rank_ctx::note_progress / progress_mark
    std::uint32_t nranks;
    std::size_t addr_len[max_ranks];
    unsigned char addr[max_ranks][max_addr_len];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "process-shared barrier needs lock-free atomics");

void rank_ctx::note_progress()
{
    shared->progress.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t rank_ctx::progress_mark() const
{
    return shared->progress.load(std::memory_order_relaxed);
}

// ------------------------------------------------------------------ checks

void check_failed(const char *file, int line, const char *expr, const std::string &detail)
{
    std::fprintf(stderr, "%s:%d: CHECK failed: %s%s%s (pid %d)\n", file, line, expr,
                 detail.empty() ? "" : ": ", detail.c_str(), static_cast<int>(getpid()));
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(1);
}

std::string value_text(long long v)
{
    return std::to_string(v);
}

std::string value_text(unsigned long long v)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%llu (0x%llx)", v, v);
    return buf;
}

std::string value_text(const void *v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%p", v);
    return buf;
}

std::string value_text(const std::string &v)
{
    return '"' + v + '"';
}

// ------------------------------------------------------------------ patterns

std::uint64_t seed_of(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d)
{
    return mix(a ^ mix(b ^ mix(c ^ mix(d))));
}

void fill_pattern(void *buf, std::size_t len, std::uint64_t seed)
{
    auto *p = static_cast<unsigned char *>(buf);
    std::size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        const std::uint64_t w = mix(seed + i / 8);
        std::memcpy(p + i, &w, 8);
    }
    if (i < len) {
        const std::uint64_t w = mix(seed + i / 8);
        std::memcpy(p + i, &w, len - i);
    }
}

std::size_t find_pattern_mismatch(const void *buf, std::size_t len, std::uint64_t seed)
{
    const auto *p = static_cast<const unsigned char *>(buf);
    for (std::size_t i = 0; i < len; i += 8) {
        const std::uint64_t w = mix(seed + i / 8);
        const std::size_t n = len - i < 8 ? len - i : 8;
        if (std::memcmp(p + i, &w, n) != 0) {
            unsigned char ref[8];
            std::memcpy(ref, &w, 8);
            for (std::size_t k = 0; k < n; ++k) {
                if (p[i + k] != ref[k]) {
                    return i + k;
                }
            }
        }
    }
    return SIZE_MAX;
}

void check_payload(const void *buf, std::size_t len, std::size_t cap, std::uint64_t seed,
                   const std::string &what)
{
    const std::size_t bad = find_pattern_mismatch(buf, len, seed);
    if (bad != SIZE_MAX) {
        check_failed(__FILE__, __LINE__, "payload",
                     what + ": " + std::to_string(len) + "-byte message differs at offset " +
                         std::to_string(bad));
    }
    const auto *p = static_cast<const unsigned char *>(buf);
    for (std::size_t i = len; i < cap; ++i) {
        if (p[i] != fill_byte) {
            check_failed(__FILE__, __LINE__, "payload",
                         what + ": byte " + std::to_string(i) + " written past the " +
                             std::to_string(len) + "-byte message (buffer " + std::to_string(cap) +
                             ")");
        }
    }
}

// ------------------------------------------------------------------ rank_ctx

namespace {

/// A check reported at the caller's location.
void check_at(const std::source_location &where, bool ok, const std::string &detail)
{
    if (!ok) {
        check_failed(where.file_name(), static_cast<int>(where.line()), "completion", detail);
    }
}

}  // namespace

weft_addr_t rank_ctx::peer(int r) const
{
    if (loopback) {
        return addrs.at(0);
    }
    WEFT_TCHECK_MSG(r >= 0 && r < nranks, "peer rank " + std::to_string(r) + " out of range");
    return addrs[static_cast<std::size_t>(r)];
}

void rank_ctx::poll()
{
    if (cq_format != WEFT_CQ_FORMAT_TAGGED) {
        const int rc = weft_ep_progress(ep);
        WEFT_TCHECK_MSG(rc >= 0, std::string("weft_ep_progress: ") + weft_strerror(rc));
        return;
    }
    for (;;) {
        weft_cq_tagged_entry e[16];
        weft_addr_t src[16];
        const ssize_t n = weft_cq_readfrom(cq, e, 16, src);
        if (n > 0) {
            WEFT_TCHECK(n <= 16);
            for (ssize_t i = 0; i < n; ++i) {
                completion c;
                c.entry = e[i];
                c.src = src[i];
                pending_.push_back(c);
            }
            if (n < 16) {
                return;
            }
            continue;
        }
        if (n == -WEFT_EAGAIN) {
            return;
        }
        WEFT_TCHECK_MSG(n == -WEFT_EAVAIL, "weft_cq_readfrom returned " + std::to_string(n) + " (" +
                                               weft_strerror(static_cast<int>(n)) + ")");
        completion c;
        c.error = true;
        const ssize_t m = weft_cq_readerr(cq, &c.err, 0);
        WEFT_TCHECK_MSG(m == 1, "weft_cq_readerr after -WEFT_EAVAIL returned " + std::to_string(m));
        c.src = c.err.src_addr;
        pending_.push_back(c);
    }
}

bool rank_ctx::take(void *context, completion &out)
{
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->context() == context) {
            out = *it;
            pending_.erase(it);
            return true;
        }
    }
    return false;
}

completion rank_ctx::wait(void *context, int timeout_ms, std::source_location where)
{
    const auto start = clock_type::now();
    completion c;
    for (;;) {
        if (take(context, c)) {
            return c;
        }
        const std::size_t before = pending_.size();
        poll();
        if (pending_.size() == before) {
            if (elapsed_ms(start) > timeout_ms) {
                check_failed(where.file_name(), static_cast<int>(where.line()), "wait",
                             "no completion for context " + value_text(context) + " within " +
                                 std::to_string(timeout_ms) + " ms (" +
                                 std::to_string(pending_.size()) + " other completions pending)");
            }
            sched_yield();
        }
    }
}

weft_cq_tagged_entry rank_ctx::wait_ok(void *context, weft_addr_t *src, int timeout_ms,
                                       std::source_location where)
{
    const completion c = wait(context, timeout_ms, where);
    check_at(where, !c.error,
             "operation " + value_text(context) + " failed: err " + std::to_string(c.err.err) +
                 " (" + weft_strerror(c.err.err) +
                 "): " + std::string(c.err.err_str, strnlen(c.err.err_str, 96)));
    if (src != nullptr) {
        *src = c.src;
    }
    return c.entry;
}

weft_cq_err_entry rank_ctx::wait_err(void *context, int timeout_ms, std::source_location where)
{
    const completion c = wait(context, timeout_ms, where);
    check_at(where, c.error,
             "operation " + value_text(context) +
                 " completed successfully, expected an error (len " + std::to_string(c.entry.len) +
                 ")");
    return c.err;
}

ssize_t rank_ctx::post_rc(const std::function<ssize_t()> &post_fn, std::source_location where)
{
    const auto start = clock_type::now();
    for (;;) {
        const ssize_t rc = post_fn();
        if (rc != -WEFT_EAGAIN) {
            return rc;
        }
        poll();
        if (elapsed_ms(start) > default_wait_ms) {
            check_failed(where.file_name(), static_cast<int>(where.line()), "post",
                         "-WEFT_EAGAIN for " + std::to_string(default_wait_ms) + " ms");
        }
        sched_yield();
    }
}

void rank_ctx::post(const char *what, const std::function<ssize_t()> &post_fn,
                    std::source_location where)
{
    const ssize_t rc = post_rc(post_fn, where);
    if (rc != 0) {
        check_failed(
            where.file_name(), static_cast<int>(where.line()), what,
            "returned " + std::to_string(rc) + " (" + weft_strerror(static_cast<int>(rc)) + ")");
    }
}

void rank_ctx::progress_for(int ms)
{
    const auto start = clock_type::now();
    while (elapsed_ms(start) < ms) {
        poll();
        sched_yield();
    }
}

void rank_ctx::barrier()
{
    if (nranks == 1) {
        return;
    }
    // Sense-reversing counter barrier. The last arriver resets `arrived` before it
    // publishes the new generation (release), so a process that leaves and enters
    // the next barrier (after its acquire of the generation) sees the reset.
    const std::uint32_t gen = shared->generation.load(std::memory_order_acquire);
    if (shared->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<std::uint32_t>(nranks)) {
        shared->arrived.store(0, std::memory_order_relaxed);
        shared->generation.fetch_add(1, std::memory_order_release);
        return;
    }
    // The time limit runs from the last note_progress() of any rank: a rank
    // that finished early may wait long for one that still works.
    auto start = clock_type::now();
    std::uint64_t mark = progress_mark();
    while (shared->generation.load(std::memory_order_acquire) == gen) {
        // Keep driving progress: a peer may need us to drain its sends to get here.
        if (ep != nullptr) {
            poll();
        }
        if (also_progress) {
            also_progress();
        }
        if (const std::uint64_t now_mark = progress_mark(); now_mark != mark) {
            mark = now_mark;
            start = clock_type::now();
        }
        if (elapsed_ms(start) > default_wait_ms) {
            check_failed(__FILE__, __LINE__, "barrier",
                         "the other ranks did not arrive (nor report progress) within " +
                             std::to_string(default_wait_ms) + " ms");
        }
        sched_yield();
    }
}

// ------------------------------------------------------------------ child

namespace {

weft_info *make_hints(const std::string &transport, std::uint64_t caps)
{
    weft_info *hints = weft_info_alloc();
    if (hints == nullptr) {
        return nullptr;
    }
    hints->caps = caps;
    std::snprintf(hints->transport, sizeof(hints->transport), "%s", transport.c_str());
    return hints;
}

[[noreturn]] void child_run(int rank, int nproc, int logical, const std::string &transport,
                            const rank_body &body, const run_options &opt, shared_region *shm)
{
    rank_ctx c;
    c.rank = rank;
    c.nranks = nproc;
    c.logical_ranks = logical;
    c.loopback = transport == "self";
    c.transport = transport;
    c.shared = shm;
    c.cq_format = opt.cq_format;

    weft_config_t *config = nullptr;
    auto values = opt.config;
    if (opt.rank_config) {
        for (auto &v : opt.rank_config(rank)) {
            values.push_back(std::move(v));
        }
    }
    if (!values.empty()) {
        WEFT_TCHECK_OK(weft_config_read(&config));
        for (const auto &[name, value] : values) {
            WEFT_TCHECK_OK(weft_config_modify(config, name.c_str(), value.c_str()));
        }
    }
    weft_info *hints = make_hints(transport, base_caps | opt.extra_caps);
    WEFT_TCHECK(hints != nullptr);
    hints->domain_attr.progress = opt.progress;
    WEFT_TCHECK_OK(weft_getinfo(WEFT_API_VERSION, hints, config, &c.info));
    weft_info_free(hints);
    WEFT_TCHECK(c.info != nullptr);
    if (transport == "verbs") {
        // One entry per port: rank r takes port r mod n, so that with two ports
        // (the Soft-RoCE VM's rxe0 and rxe1) traffic crosses between devices.
        int n = 0;
        for (const weft_info *i = c.info; i != nullptr; i = i->next) {
            ++n;
        }
        const weft_info *pick = c.info;
        for (int k = rank % n; k > 0; --k) {
            pick = pick->next;
        }
        weft_info *mine = weft_info_dup(pick);
        WEFT_TCHECK(mine != nullptr);
        weft_info_free(c.info);
        c.info = mine;
    }
    WEFT_TCHECK_EQ(std::string(c.info->transport), transport);
    c.max_msg_size = c.info->ep_attr.max_msg_size;
    c.iov_limit = c.info->ep_attr.iov_limit;

    WEFT_TCHECK_OK(weft_fabric_open(c.info, config, &c.fabric));
    weft_config_release(config);  // the fabric keeps its own copy
    WEFT_TCHECK_OK(weft_domain_open(c.fabric, c.info, &c.domain));
    weft_cq_attr cq_attr{};
    cq_attr.size = opt.cq_size;
    cq_attr.format = opt.cq_format;
    WEFT_TCHECK_OK(weft_cq_open(c.domain, &cq_attr, &c.cq));
    weft_av_attr av_attr{};
    av_attr.count = static_cast<std::size_t>(nproc);
    WEFT_TCHECK_OK(weft_av_open(c.domain, &av_attr, &c.av));
    WEFT_TCHECK_OK(weft_ep_open(c.domain, c.info, &c.ep, nullptr));
    WEFT_TCHECK_OK(weft_ep_bind_cq(c.ep, c.cq, WEFT_TRANSMIT | WEFT_RECV));
    if (opt.counters) {
        weft_cntr_attr cattr{};
        WEFT_TCHECK_OK(weft_cntr_open(c.domain, &cattr, &c.tx_cntr));
        WEFT_TCHECK_OK(weft_cntr_open(c.domain, &cattr, &c.rx_cntr));
        WEFT_TCHECK_OK(weft_ep_bind_cntr(c.ep, c.tx_cntr, WEFT_SEND));
        WEFT_TCHECK_OK(weft_ep_bind_cntr(c.ep, c.rx_cntr, WEFT_RECV));
    }
    if (opt.rma_counters) {
        weft_cntr_attr cattr{};
        weft_cntr_t **cs[] = {&c.write_cntr, &c.read_cntr, &c.rwrite_cntr, &c.rread_cntr};
        const std::uint64_t kinds[] = {WEFT_WRITE, WEFT_READ, WEFT_REMOTE_WRITE, WEFT_REMOTE_READ};
        for (int i = 0; i < 4; ++i) {
            WEFT_TCHECK_OK(weft_cntr_open(c.domain, &cattr, cs[i]));
            WEFT_TCHECK_OK(weft_ep_bind_cntr(c.ep, *cs[i], kinds[i]));
        }
    }
    WEFT_TCHECK_OK(weft_ep_bind_av(c.ep, c.av));
    WEFT_TCHECK_OK(weft_ep_enable(c.ep));

    c.eager_size = assumed_eager_size;
    std::size_t len = sizeof(c.rndv_threshold);
    WEFT_TCHECK_OK(weft_ep_getopt(c.ep, WEFT_OPT_VAR_MSG_THRESHOLD, &c.rndv_threshold, &len));
    WEFT_TCHECK_MSG(c.rndv_threshold > 1 && c.rndv_threshold < 8 * 1024 * 1024,
                    "rendezvous threshold " + std::to_string(c.rndv_threshold));
    len = sizeof(c.inject_size);
    WEFT_TCHECK_OK(weft_ep_getopt(c.ep, WEFT_OPT_INJECT_SIZE, &c.inject_size, &len));

    std::size_t addr_len = max_addr_len;
    WEFT_TCHECK_OK(weft_ep_getname(c.ep, shm->addr[rank], &addr_len));
    WEFT_TCHECK(addr_len <= c.info->addr_len);
    shm->addr_len[rank] = addr_len;
    c.barrier();  // every address is published

    // Back to back, each its own length (weft_av_insert reads it).
    std::vector<unsigned char> all;
    for (int r = 0; r < nproc; ++r) {
        WEFT_TCHECK(shm->addr_len[r] <= max_addr_len);
        all.insert(all.end(), shm->addr[r], shm->addr[r] + shm->addr_len[r]);
    }
    c.addrs.assign(static_cast<std::size_t>(nproc), WEFT_ADDR_NOTAVAIL);
    WEFT_TCHECK_EQ(
        weft_av_insert(c.av, all.data(), static_cast<std::size_t>(nproc), c.addrs.data(), 0),
        nproc);
    for (int r = 0; r < nproc; ++r) {
        WEFT_TCHECK_EQ(c.addrs[static_cast<std::size_t>(r)], static_cast<weft_addr_t>(r));
    }
    c.barrier();  // every AV is filled: sources of incoming messages are known

    body(c);

    if (c.final_barrier) {
        c.barrier();
    }
    if (c.check_unclaimed && c.cq_format == WEFT_CQ_FORMAT_TAGGED) {
        c.poll();
        if (!c.pending().empty()) {
            const completion &p = c.pending().front();
            check_failed(__FILE__, __LINE__, "no unexpected completions",
                         std::to_string(c.pending().size()) +
                             " completion(s) nobody waited for; first: context " +
                             value_text(p.context()) + (p.error ? " (error entry)" : "") +
                             " flags " + value_text(p.error ? p.err.flags : p.entry.flags) +
                             " len " + std::to_string(p.error ? p.err.len : p.entry.len));
        }
    }

    WEFT_TCHECK_OK(weft_ep_close(c.ep));
    WEFT_TCHECK_OK(weft_av_close(c.av));
    if (c.tx_cntr != nullptr) {
        WEFT_TCHECK_OK(weft_cntr_close(c.tx_cntr));
        WEFT_TCHECK_OK(weft_cntr_close(c.rx_cntr));
    }
    for (weft_cntr_t *k : {c.write_cntr, c.read_cntr, c.rwrite_cntr, c.rread_cntr}) {
        if (k != nullptr) {
            WEFT_TCHECK_OK(weft_cntr_close(k));
        }
    }
    WEFT_TCHECK_OK(weft_cq_close(c.cq));
    WEFT_TCHECK_OK(weft_domain_close(c.domain));
    WEFT_TCHECK_OK(weft_fabric_close(c.fabric));
    weft_info_free(c.info);
#ifdef __SANITIZE_ADDRESS__
    // _exit() skips LeakSanitizer's exit-time check: run it here, after every
    // object was closed, so that a leak in the library fails the test.
    if (__lsan_do_recoverable_leak_check() != 0) {
        check_failed(__FILE__, __LINE__, "no leaks", "LeakSanitizer report above");
    }
#endif
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(0);
}

/// The child's entry point. GoogleTest's test body is still on the stack after
/// fork(): an exception thrown in the child (std::bad_alloc, std::length_error
/// from the standard library) must end the child here, not be caught by
/// GoogleTest, which would go on running the remaining tests in the child.
[[noreturn]] void child_main(int rank, int nproc, int logical, const std::string &transport,
                             const rank_body &body, const run_options &opt, shared_region *shm)
{
    try {
        child_run(rank, nproc, logical, transport, body, opt, shm);
    } catch (const std::exception &e) {
        check_failed(__FILE__, __LINE__, "no exception", e.what());
    } catch (...) {
        check_failed(__FILE__, __LINE__, "no exception", "unknown exception");
    }
}

/// Read everything a child wrote to its memory file.
std::string read_all(int fd)
{
    std::string out;
    char buf[4096];
    off_t off = 0;
    for (;;) {
        const ssize_t n = pread(fd, buf, sizeof(buf), off);
        if (n <= 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        off += n;
    }
    return out;
}

/// A line the library logged at error or warning level ("... weft <comp> error: ...").
bool is_weft_error_line(const std::string &line)
{
    std::size_t pos = 0;
    while ((pos = line.find("weft ", pos)) != std::string::npos) {
        pos += 5;
        const std::size_t sp = line.find(' ', pos);
        if (sp == std::string::npos) {
            return false;
        }
        const std::string rest = line.substr(sp + 1);
        if (rest.rfind("error:", 0) == 0 || rest.rfind("warn:", 0) == 0 ||
            rest.rfind("warning:", 0) == 0) {
            return true;
        }
    }
    return false;
}

struct child {
    pid_t pid = -1;
    int out_fd = -1;
    bool running = false;
    int status = 0;
    bool killed = false;
};

}  // namespace

std::vector<std::string> all_transports()
{
    std::vector<std::string> names;
    std::istringstream built(WEFT_BUILT_TRANSPORTS);
    for (std::string n; built >> n;) {
        names.push_back(n);
    }
    names.emplace_back("auto");
    return names;
}

std::string transport_unavailable(const std::string &transport, std::uint64_t caps)
{
    weft_info *hints = make_hints(transport, caps);
    if (hints == nullptr) {
        return "weft_info_alloc failed";
    }
    weft_info *info = nullptr;
    const int rc = weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info);
    weft_info_free(hints);
    weft_info_free(info);
    if (rc == 0) {
        return "";
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "weft_getinfo does not report transport '%s' with caps 0x%llx: %s (%d)%s",
                  transport.c_str(), static_cast<unsigned long long>(caps), weft_strerror(rc), rc,
                  transport == "verbs" ? "; no active RDMA port on this machine (make "
                                         "check-verbs runs these tests in a Soft-RoCE VM)"
                                       : "");
    return buf;
}

::testing::AssertionResult run_ranks(int nranks, const std::string &transport,
                                     const rank_body &body, const run_options &opt)
{
    const std::string why = transport_unavailable(transport, base_caps | opt.extra_caps);
    if (!why.empty()) {
        return ::testing::AssertionFailure() << why;
    }
    const bool loopback = transport == "self";
    const int nproc = loopback ? 1 : nranks;
    if (nproc < 1 || nproc > max_ranks) {
        return ::testing::AssertionFailure() << "bad rank count " << nranks;
    }

    void *mem = mmap(nullptr, sizeof(shared_region), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        return ::testing::AssertionFailure() << "mmap: " << std::strerror(errno);
    }
    auto *shm = new (mem) shared_region{};
    shm->nranks = static_cast<std::uint32_t>(nproc);

    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = getpid();
    std::vector<child> kids(static_cast<std::size_t>(nproc));
    for (int r = 0; r < nproc; ++r) {
        child &k = kids[static_cast<std::size_t>(r)];
        k.out_fd = memfd_create("weft-test-child", 0);
        if (k.out_fd < 0) {
            return ::testing::AssertionFailure() << "memfd_create: " << std::strerror(errno);
        }
        k.pid = fork();
        if (k.pid < 0) {
            return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
        }
        if (k.pid == 0) {
            // A child must never outlive the test process.
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(1);
            }
            dup2(k.out_fd, STDOUT_FILENO);
            dup2(k.out_fd, STDERR_FILENO);
            child_main(r, nproc, nranks, transport, body, opt, shm);
        }
        k.running = true;
    }

    // Wait with a time limit; one failed child fails the run and ends the others.
    const auto start = clock_type::now();
    int running = nproc;
    bool timed_out = false;
    int first_failed = -1;
    while (running > 0) {
        for (int r = 0; r < nproc; ++r) {
            child &k = kids[static_cast<std::size_t>(r)];
            if (!k.running) {
                continue;
            }
            int st = 0;
            const pid_t p = waitpid(k.pid, &st, WNOHANG);
            if (p == k.pid) {
                k.running = false;
                k.status = st;
                --running;
                const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
                if (!ok && first_failed < 0) {
                    first_failed = r;
                }
            }
        }
        const bool expired = elapsed_ms(start) >
                             static_cast<std::int64_t>(opt.timeout_s) * 1000 * sanitizer_slowdown;
        if (running > 0 && (first_failed >= 0 || expired)) {
            timed_out = first_failed < 0;
            for (child &k : kids) {
                if (k.running) {
                    kill(k.pid, SIGKILL);
                    int st = 0;
                    waitpid(k.pid, &st, 0);
                    k.running = false;
                    k.killed = true;
                    k.status = st;
                    --running;
                }
            }
        }
        if (running > 0) {
            usleep(2000);
        }
    }
    const std::int64_t took = elapsed_ms(start);

    std::ostringstream fail;
    bool failed = false;
    for (int r = 0; r < nproc; ++r) {
        child &k = kids[static_cast<std::size_t>(r)];
        const std::string out = read_all(k.out_fd);
        close(k.out_fd);
        std::istringstream lines(out);
        std::string line;
        bool logged_error = false;
        while (std::getline(lines, line)) {
            std::fprintf(stderr, "[%s rank %d] %s\n", transport.c_str(), r, line.c_str());
            if (is_weft_error_line(line)) {
                logged_error = true;
            }
        }
        if (k.killed) {
            failed = true;
            fail << "rank " << r << " killed "
                 << (timed_out ? "after the time limit of " + std::to_string(opt.timeout_s) + " s"
                               : "after rank " + std::to_string(first_failed) + " failed")
                 << "; ";
        } else if (WIFSIGNALED(k.status)) {
            failed = true;
            fail << "rank " << r << " died of signal " << WTERMSIG(k.status) << " ("
                 << strsignal(WTERMSIG(k.status)) << "); ";
        } else if (WIFEXITED(k.status) && WEXITSTATUS(k.status) != 0) {
            failed = true;
            fail << "rank " << r << " exited with " << WEXITSTATUS(k.status)
                 << " (see its output above); ";
        }
        if (logged_error && !opt.allow_log_errors) {
            failed = true;
            fail << "rank " << r << " logged a weft error or warning (see above); ";
        }
    }
    shm->~shared_region();
    munmap(mem, sizeof(shared_region));
    if (failed) {
        return ::testing::AssertionFailure() << transport << " with " << nproc << " process(es), "
                                             << took << " ms: " << fail.str();
    }
    return ::testing::AssertionSuccess();
}

}  // namespace weft::test
