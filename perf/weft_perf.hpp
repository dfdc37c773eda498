#pragma once
// weft_perf: OSU-style microbenchmarks that run the weft and UCX backends side
// by side in one pair of processes (launched by a PMIx launcher such as
// `mpirun -np 2`). This header is what the driver (weft_perf.cpp), the PMIx
// bootstrap (weft_perf_pmix.cpp) and the backends (backend_*.cpp) share.
//
// Only the public C API (weft/weft.h) is used: weft_perf is a client of libweft.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::perf {

/// The benchmarks.
///
/// Tagged messages: lat: ping-pong; bw: unidirectional window + ack (osu_bw);
/// bibw: both directions at once (osu_bibw); rate: messages per second with a
/// window + ack (osu_mbw_mr with one pair).
///
/// One-sided (rank 0 initiates; rank 1's target region is registered memory and
/// rank 1 only drives progress): put_lat: put + flush (the put remotely
/// complete); get_lat: get and wait; fadd_lat, cswap_lat: a 64-bit fetch-and-add
/// or compare-and-swap and wait for the old value; put_pp: put ping-pong (each
/// side polls the last byte the peer's put writes, then puts back); put_bw,
/// get_bw: a window of puts or gets, then flush; put_rate: the put_bw loop
/// counted in operations per second.
enum class bench_kind {
    lat,
    bw,
    bibw,
    rate,
    put_lat,
    get_lat,
    fadd_lat,
    cswap_lat,
    put_pp,
    put_bw,
    get_bw,
    put_rate,
};

/// "lat", "bw", "bibw", "rate", "put_lat", "get_lat", "fadd_lat", "cswap_lat",
/// "put_pp", "put_bw", "get_bw", "put_rate".
[[nodiscard]] const char *bench_name(bench_kind k) noexcept;

/// A one-sided benchmark (needs backend::map_memory).
[[nodiscard]] constexpr bool is_one_sided(bench_kind k) noexcept
{
    return k >= bench_kind::put_lat;
}

/// A 64-bit atomic: always one 8-byte element, whatever the size list says.
[[nodiscard]] constexpr bool is_atomic(bench_kind k) noexcept
{
    return k == bench_kind::fadd_lat || k == bench_kind::cswap_lat;
}

/// Reported as a time (microseconds): lower is better. Otherwise MB/s or
/// operations per second: higher is better.
[[nodiscard]] constexpr bool is_latency(bench_kind k) noexcept
{
    return k == bench_kind::lat || k == bench_kind::put_lat || k == bench_kind::get_lat ||
           k == bench_kind::fadd_lat || k == bench_kind::cswap_lat || k == bench_kind::put_pp;
}

/// Reported as operations (messages) per second.
[[nodiscard]] constexpr bool is_rate(bench_kind k) noexcept
{
    return k == bench_kind::rate || k == bench_kind::put_rate;
}

/// Print "weft_perf[rank R]: error: ..." to stderr and end the job: PMIx_Abort
/// when PMIx is up (so the launcher kills the peer instead of leaving it
/// waiting), exit(1) otherwise.
[[noreturn, gnu::format(printf, 1, 2), gnu::cold]] void fail(const char *fmt, ...);

/// "weft_perf[rank R]: warning: ..." to stderr.
[[gnu::format(printf, 1, 2), gnu::cold]] void warn(const char *fmt, ...);

/// The PMIx client of the harness: rank, job size, a blob exchange for the UCX
/// worker address, and a fence. The weft backend does its own exchange through
/// weft_av_load_pmix().
class bootstrap {
  public:
    /// PMIx_Init and PMIX_JOB_SIZE. Fails loudly (with the launcher hint) when
    /// no PMIx server is reachable.
    void init();
    /// PMIx_Finalize (required: mpirun fails a job whose processes exit without it).
    void finalize();

    [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

    /// Put `data` under `key`, commit, fence with data collection, and return
    /// rank `peer`'s value of the same key.
    [[nodiscard]] std::vector<char> exchange(const char *key, const void *data, std::size_t len,
                                             std::uint32_t peer);
    /// A fence without data: every rank reaches it before any leaves.
    void fence();

  private:
    std::uint32_t rank_ = 0;
    std::uint32_t size_ = 0;
};

/// True once bootstrap::init() succeeded (fail() uses PMIx_Abort then).
[[nodiscard]] bool bootstrap_active() noexcept;
/// The rank for messages (-1 before init).
[[nodiscard]] int bootstrap_rank() noexcept;

/// Buffers owned by the driver, shared by both backends so that neither gets
/// warmer or better-aligned memory than the other. Each region is page aligned
/// and touched once at start.
///
/// One-sided benchmarks: recv[0] is the target region, registered by both
/// backends for remote read, write and atomics (its key and address given to
/// the peer), or replaced by a region each backend allocates (--alloc); rank 0
/// puts from send and gets into recv[1] (both registered as local buffers).
struct buffers {
    char *send = nullptr;        ///< send buffer (one region)
    char *recv[2] = {};          ///< receive buffers (bibw alternates between two)
    std::size_t region_len = 0;  ///< bytes of each region
};

/// One timed run of one benchmark at one size with one backend.
struct run_params {
    bench_kind kind = bench_kind::lat;
    std::size_t size = 0;  ///< message size in bytes
    int iters = 0;         ///< timed iterations
    int warmup = 0;        ///< untimed iterations before them
    int window = 64;       ///< messages in flight per iteration (bw, bibw, rate)
    bool verify = false;   ///< fill every sent message and check every received one
    /// Distance between the buffers of the messages of one window; 0: they all
    /// use the same buffer (as the OSU benchmarks do).
    std::size_t stride = 0;
    /// Self-test of the data check: rank 0 flips one byte of the last message it
    /// sends (with verify on, the run must then fail).
    bool corrupt = false;
    std::uint32_t rank = 0;
    std::uint32_t seed = 0;  ///< distinguishes runs so stale data never passes a check
    const buffers *buf = nullptr;
};

/// Tags: every message of the benchmarks uses one of these, with a full mask.
inline constexpr std::uint64_t tag_data = 0x5746'0001;
inline constexpr std::uint64_t tag_ack = 0x5746'0002;
inline constexpr std::uint64_t tag_sync = 0x5746'0003;

/// An operation in flight, as the benchmark kernels see it. The backend marks
/// it done (directly for operations that completed at once, from its completion
/// handling otherwise).
struct request {
    bool done = true;
    void *handle = nullptr;  ///< backend-specific (the UCX request)
    std::size_t expect = 0;  ///< expected received length (checked where the backend reports it)
};

/// A benchmark backend. Data-path calls are not virtual: each backend
/// instantiates the kernels of weft_perf_kernels.hpp with its own class; only
/// run() is dispatched through this interface, once per run.
class backend {
  public:
    virtual ~backend() = default;
    /// "weft" or "ucx" (the CSV's backend column).
    [[nodiscard]] virtual const char *name() const noexcept = 0;
    /// One line describing the configuration (transport, thresholds).
    [[nodiscard]] virtual std::string describe() const = 0;
    /// Run once; returns the seconds of the timed iterations on rank 0
    /// (meaningless on rank 1). Fails loudly on any error.
    [[nodiscard]] virtual double run(const run_params &p) = 0;
    /// One-sided benchmarks: register the buffers (buffers above) and exchange
    /// the target region's key and address with the peer (PMIx). Collective;
    /// called once, after init, with backend_options::one_sided set. finalize()
    /// releases the keys and registrations.
    virtual void map_memory(const buffers &buf) = 0;
    /// Release everything (collective: both ranks call it).
    virtual void finalize() = 0;
};

/// Options the backends read.
struct backend_options {
    std::string weft_transport = "shm";  ///< weft_info::transport hint
    int window = 64;                     ///< largest number of sends in flight
    bool verbose = false;
    /// One-sided benchmarks will run: weft asks for WEFT_RMA | WEFT_ATOMIC (in
    /// weft's default caps anyway), UCX for UCP_FEATURE_RMA | UCP_FEATURE_AMO64
    /// (only then, so that the tagged benchmarks see the same UCX as before).
    bool one_sided = false;
    /// The one-sided target region is memory the library allocates (weft_mr_alloc,
    /// ucp_mem_map with UCP_MEM_MAP_ALLOCATE) instead of the driver's
    /// buffers::recv[0]: memory the peer on the node can map, where puts, gets
    /// and atomics are loads, stores and CPU atomics. Each backend's run then
    /// uses its own region as the target (the put source and get destination
    /// stay the driver's).
    bool alloc = false;
};

/// The weft backend (weft_getinfo with WEFT_TAGGED, CQ of context entries,
/// manual progress, WEFT_THREAD_DOMAIN, AV loaded through PMIx; weft_put,
/// weft_get, weft_fetch_atomic, weft_compare_atomic, weft_ep_flush).
[[nodiscard]] std::unique_ptr<backend> make_weft_backend(bootstrap &boot,
                                                         const backend_options &opt);
/// The UCX backend (UCP tag API; ucp_put_nbx, ucp_get_nbx, ucp_atomic_op_nbx,
/// ucp_ep_flush_nbx), or nullptr when built without UCX.
[[nodiscard]] std::unique_ptr<backend> make_ucx_backend(bootstrap &boot,
                                                        const backend_options &opt);

}  // namespace weft::perf
