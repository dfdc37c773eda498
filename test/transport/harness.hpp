#pragma once
// Multi-process harness for transport-level tests over the public API (weft.h).
//
// run_ranks() forks one process per rank. Each child opens fabric, domain, CQ,
// AV and endpoint for the transport under test, publishes its address in a
// MAP_SHARED region created before the fork, waits on a process-shared barrier,
// inserts every rank's address into its AV in rank order (index == rank), runs
// the test body, meets the others at a final barrier and closes everything.
// The parent waits with a time limit: a hang becomes a failure (the children are
// killed), and so does a child that exits non-zero or by a signal.
//
// GoogleTest assertions do not cross fork(): bodies use WEFT_TCHECK*, which print
// file:line and the values and _exit(1). A child's stdout and stderr go to a
// memory file; the parent prints it prefixed with the rank, and fails the test
// if the library logged an error or a warning there (unless the test allows it).
//
// The self transport reaches only its own endpoint, so for it the harness runs
// one process with `loopback` set, and every peer() is the endpoint itself.
// Bodies are written so that this works: post receives (non-blocking), send,
// then wait, and never wait for a send to complete before the matching receive
// is posted.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/weft.h"

namespace weft::test {

/// Capabilities every transport test asks for.
inline constexpr std::uint64_t base_caps = WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV;

/// Size around which messages switch from one bcopy unit to several fragments.
/// weft.h does not expose it (WEFT_OPT_EAGER_SIZE was dropped), so tests use the
/// shm transport's default bcopy unit (WEFT_SHM_BCOPY_SIZE = 8256 bytes) and also
/// sizes around 64 KiB (the self transport's unit) and far above both.
inline constexpr std::size_t assumed_eager_size = 8256;

/// Sanitizer builds run several times slower (every copy is checked): waits and
/// run limits are scaled by this factor there, so a slow run is not a hang.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int sanitizer_slowdown = 4;
#else
inline constexpr int sanitizer_slowdown = 1;
#endif
/// Time limit of a single wait inside a child, in milliseconds.
inline constexpr int default_wait_ms = 30000 * sanitizer_slowdown;

/// One completion read from the CQ (tagged format) with its source, or an error entry.
struct completion {
    bool error = false;
    weft_cq_tagged_entry entry{};  ///< when !error
    weft_addr_t src = WEFT_ADDR_UNSPEC;
    weft_cq_err_entry err{};  ///< when error
    [[nodiscard]] void *context() const { return error ? err.op_context : entry.op_context; }
};

/// Shared state of one run (lives in the MAP_SHARED region).
struct shared_region;

/// What a test body sees in its process.
class rank_ctx {
  public:
    int rank = 0;           ///< this process's rank (index in the AV)
    int nranks = 1;         ///< processes in the run (1 for loopback)
    int logical_ranks = 1;  ///< ranks the test asked for
    bool loopback = false;  ///< self transport: every peer is this endpoint
    std::string transport;

    weft_info *info = nullptr;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
    weft_cntr_t *tx_cntr = nullptr;      ///< bound for WEFT_SEND when run_options::counters
    weft_cntr_t *rx_cntr = nullptr;      ///< bound for WEFT_RECV when run_options::counters
    weft_cntr_t *write_cntr = nullptr;   ///< WEFT_WRITE, when run_options::rma_counters
    weft_cntr_t *read_cntr = nullptr;    ///< WEFT_READ
    weft_cntr_t *rwrite_cntr = nullptr;  ///< WEFT_REMOTE_WRITE
    weft_cntr_t *rread_cntr = nullptr;   ///< WEFT_REMOTE_READ
    weft_cq_format cq_format = WEFT_CQ_FORMAT_TAGGED;

    /// Fragment boundary the tests straddle (assumed_eager_size).
    std::size_t eager_size = 0;
    /// Messages longer than this use rendezvous (WEFT_OPT_VAR_MSG_THRESHOLD, whose
    /// default is the rendezvous threshold WEFT_RNDV_THRESH).
    std::size_t rndv_threshold = 0;
    std::size_t inject_size = 0;  ///< WEFT_OPT_INJECT_SIZE
    std::size_t max_msg_size = 0;
    std::size_t iov_limit = 0;
    std::vector<weft_addr_t> addrs;  ///< AV index of each rank (== rank)

    /// Set by a body whose peers are gone (peer-exit tests): skip the final barrier.
    bool final_barrier = true;
    /// Set by a body that reads the CQ itself and leaves entries on purpose.
    bool check_unclaimed = true;

    /// AV address of logical rank `r` (this endpoint in loopback mode).
    [[nodiscard]] weft_addr_t peer(int r) const;
    /// True when this process plays logical rank `r` (always in loopback mode).
    [[nodiscard]] bool plays(int r) const { return loopback || rank == r; }

    /// Process-shared barrier that drives progress (and reads the CQ) while it waits.
    void barrier();
    /// Called in every barrier wait besides this endpoint's poll(): a test
    /// with an endpoint of its own keeps that one progressing too (a peer may
    /// need it, e.g. for a rendezvous fin or a credit update, to finish).
    std::function<void()> also_progress;
    /// A counter shared by every rank of the run: a rank that completes work
    /// bumps it, and a rank waiting on others tells a slow peer from a stuck one
    /// by whether it still moves.
    void note_progress();
    [[nodiscard]] std::uint64_t progress_mark() const;
    /// Read every available CQ entry (tagged format) into the pending list.
    void poll();
    /// Remove and return the completion of the operation posted with `context`.
    completion wait(void *context, int timeout_ms = default_wait_ms,
                    std::source_location where = std::source_location::current());
    /// As wait(), and the completion must be a success.
    weft_cq_tagged_entry wait_ok(void *context, weft_addr_t *src = nullptr,
                                 int timeout_ms = default_wait_ms,
                                 std::source_location where = std::source_location::current());
    /// As wait(), and the completion must be an error entry.
    weft_cq_err_entry wait_err(void *context, int timeout_ms = default_wait_ms,
                               std::source_location where = std::source_location::current());
    /// Run `post` until it returns something other than -WEFT_EAGAIN (reading the
    /// CQ in between); the result must be 0.
    void post(const char *what, const std::function<ssize_t()> &post,
              std::source_location where = std::source_location::current());
    /// As post(), returning the final result (which may be an error) to the caller.
    ssize_t post_rc(const std::function<ssize_t()> &post,
                    std::source_location where = std::source_location::current());
    /// Progress for `ms` milliseconds (lets messages arrive before receives are posted).
    void progress_for(int ms);
    /// Completions read but not claimed by wait().
    [[nodiscard]] const std::vector<completion> &pending() const { return pending_; }

    shared_region *shared = nullptr;

  private:
    std::vector<completion> pending_;
    bool take(void *context, completion &out);
};

using rank_body = std::function<void(rank_ctx &)>;

struct run_options {
    int timeout_s = 60;  ///< parent's limit for the whole run
    weft_cq_format cq_format = WEFT_CQ_FORMAT_TAGGED;
    std::size_t cq_size = 0;  ///< 0 = the library's default
    std::uint64_t extra_caps = 0;
    bool counters = false;          ///< open and bind tx_cntr / rx_cntr
    bool rma_counters = false;      ///< open and bind write, read, remote write and read counters
    bool allow_log_errors = false;  ///< the test provokes errors the library may log
    /// Domain progress model; WEFT_PROGRESS_AUTO: a weft thread drives the
    /// endpoint, and the harness's CQ reads do not (they never progress then).
    weft_progress progress = WEFT_PROGRESS_UNSPEC;
    /// Configuration values for this run (name, value), on top of the
    /// environment: each child passes them in a weft_config to weft_getinfo and
    /// weft_fabric_open (no setenv).
    std::vector<std::pair<std::string, std::string>> config;
    /// More values for one rank only (after `config`): settings that differ
    /// between ranks, which the library must refuse.
    std::function<std::vector<std::pair<std::string, std::string>>(int rank)> rank_config;
};

/// Fork `nranks` processes (one for the self transport) and run `body` in each.
[[nodiscard]] ::testing::AssertionResult run_ranks(int nranks, const std::string &transport,
                                                   const rank_body &body,
                                                   const run_options &opt = {});

/// Empty when weft_getinfo reports `transport` with `caps`; otherwise the reason.
[[nodiscard]] std::string transport_unavailable(const std::string &transport, std::uint64_t caps);

/// Transports the suites are instantiated over: every transport this build has
/// (configure's list), and "auto".
[[nodiscard]] std::vector<std::string> all_transports();

// ------------------------------------------------------------------ data patterns

/// Mix several values into one pattern seed.
[[nodiscard]] std::uint64_t seed_of(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0,
                                    std::uint64_t d = 0);
/// Fill `len` bytes with the pattern of `seed` (depends on seed and byte offset).
void fill_pattern(void *buf, std::size_t len, std::uint64_t seed);
/// Offset of the first byte that differs from the pattern, or SIZE_MAX.
[[nodiscard]] std::size_t find_pattern_mismatch(const void *buf, std::size_t len,
                                                std::uint64_t seed);
/// Byte that receive buffers are filled with before posting.
inline constexpr unsigned char fill_byte = 0xA5;
/// In a child: [0, len) must hold the pattern of `seed` and [len, cap) must still
/// hold fill_byte (nothing written past the message).
void check_payload(const void *buf, std::size_t len, std::size_t cap, std::uint64_t seed,
                   const std::string &what);
/// Fake, unique operation contexts (never dereferenced by weft).
[[nodiscard]] inline void *op_ctx(std::uint64_t n)
{
    return reinterpret_cast<void *>(static_cast<std::uintptr_t>(0x100000 + n * 16));
}

// ------------------------------------------------------------------ checks in children

[[noreturn]] void check_failed(const char *file, int line, const char *expr,
                               const std::string &detail);
std::string value_text(long long v);
std::string value_text(unsigned long long v);
std::string value_text(const void *v);
std::string value_text(const std::string &v);
template <typename T>
std::string value_text(const T &v)
{
    if constexpr (std::is_pointer_v<T>) {
        return value_text(static_cast<const void *>(v));
    } else if constexpr (std::is_enum_v<T>) {
        return value_text(static_cast<long long>(v));
    } else if constexpr (std::is_signed_v<T>) {
        return value_text(static_cast<long long>(v));
    } else {
        return value_text(static_cast<unsigned long long>(v));
    }
}

}  // namespace weft::test

/// In a child: fail the run (print file:line and the expression, _exit(1)).
#define WEFT_TCHECK(cond)                                              \
    do {                                                               \
        if (!(cond)) {                                                 \
            ::weft::test::check_failed(__FILE__, __LINE__, #cond, ""); \
        }                                                              \
    } while (0)

/// As WEFT_TCHECK with a message (std::string).
#define WEFT_TCHECK_MSG(cond, msg)                                        \
    do {                                                                  \
        if (!(cond)) {                                                    \
            ::weft::test::check_failed(__FILE__, __LINE__, #cond, (msg)); \
        }                                                                 \
    } while (0)

/// In a child: a == b, printing both values on failure.
#define WEFT_TCHECK_EQ(a, b)                                                           \
    do {                                                                               \
        const auto weft_tc_a_ = (a);                                                   \
        const auto weft_tc_b_ = (b);                                                   \
        if (!(weft_tc_a_ == weft_tc_b_)) {                                             \
            ::weft::test::check_failed(__FILE__, __LINE__, #a " == " #b,               \
                                       ::weft::test::value_text(weft_tc_a_) + " vs " + \
                                           ::weft::test::value_text(weft_tc_b_));      \
        }                                                                              \
    } while (0)

/// A weft call that must return 0 (prints weft_strerror otherwise).
#define WEFT_TCHECK_OK(call)                                                                    \
    do {                                                                                        \
        const long long weft_tc_rc_ = static_cast<long long>(call);                             \
        if (weft_tc_rc_ != 0) {                                                                 \
            ::weft::test::check_failed(__FILE__, __LINE__, #call,                               \
                                       "returned " + std::to_string(weft_tc_rc_) + " (" +       \
                                           weft_strerror(static_cast<int>(weft_tc_rc_)) + ")"); \
        }                                                                                       \
    } while (0)

/// Fixture: value-parameterised over transport names; skips (visibly) when
/// weft_getinfo does not report the transport.
class transport_test : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override
    {
        const std::string why =
            weft::test::transport_unavailable(GetParam(), weft::test::base_caps);
        if (!why.empty()) {
            GTEST_SKIP() << why;
        }
    }
    [[nodiscard]] ::testing::AssertionResult run(int nranks, const weft::test::rank_body &body,
                                                 const weft::test::run_options &opt = {})
    {
        return weft::test::run_ranks(nranks, GetParam(), body, opt);
    }
};

/// Skip (visibly) when the transport lacks extra capabilities.
#define WEFT_REQUIRE_CAPS(caps)                                                                \
    do {                                                                                       \
        const std::string weft_rc_why_ =                                                       \
            ::weft::test::transport_unavailable(GetParam(), ::weft::test::base_caps | (caps)); \
        if (!weft_rc_why_.empty()) {                                                           \
            GTEST_SKIP() << weft_rc_why_;                                                      \
        }                                                                                      \
    } while (0)

/// Skip (visibly, with the reason) a test that fails because of a known library
/// bug that is not fixed yet, unless WEFT_TEST_KNOWN_BUGS=1 asks to run it. Remove
/// the line with the fix.
#define WEFT_KNOWN_BUG(text)                                            \
    do {                                                                \
        if (std::getenv("WEFT_TEST_KNOWN_BUGS") == nullptr) {           \
            GTEST_SKIP() << "known bug, not fixed yet: " << (text)      \
                         << " (WEFT_TEST_KNOWN_BUGS=1 runs this test)"; \
        }                                                               \
    } while (0)

/// Instantiate a suite derived from transport_test over every transport.
#define WEFT_TRANSPORT_SUITE(suite)                                             \
    INSTANTIATE_TEST_SUITE_P(                                                   \
        transports, suite, ::testing::ValuesIn(::weft::test::all_transports()), \
        [](const ::testing::TestParamInfo<std::string> &p) { return p.param; })
