// weft_perf: OSU-style microbenchmarks, weft and UCX side by side.
//
//   mpirun -np 2 weft_perf -b lat,bw --no-verify --csv out.csv
//   mpirun -np 2 weft_perf -b rma --no-verify        (every one-sided benchmark)
//
// Both backends are initialised once. For each size, each repetition runs every
// backend in turn (weft, then ucx) in the same pair of processes, so slow
// drifts of the machine (other jobs, frequency changes) hit both alike; the
// per-size summary is the min and median over repetitions, and their ratio
// weft/ucx. Rank 0 times and prints; rank 1 only answers.

#include "config.h"

#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perf/weft_perf.hpp"

namespace weft::perf {

namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * 1024;
/// Above this size the iteration count shrinks with the size (as in OSU).
constexpr std::size_t large_size = 8 * kib;
/// Verify mode gives each message of a window its own buffer up to this many
/// bytes per window; beyond, the window shares one buffer (as in timing mode).
constexpr std::size_t verify_window_bytes = 64 * mib;

struct options {
    std::vector<bench_kind> benches{bench_kind::lat};
    std::vector<std::string> backends{"weft", "ucx"};
    std::vector<std::size_t> sizes;  ///< explicit list; empty: min_size..max_size by powers of 2
    std::size_t min_size = 1;
    std::size_t max_size = 16 * mib;
    int iters = -1;   ///< -1: per-benchmark default
    int warmup = -1;  ///< -1: a tenth of the iterations
    int reps = 10;
    int window = 64;
    bool verify = true;
    bool corrupt = false;
    std::string transport = "shm";
    std::string csv;
    bool verbose = false;
    /// Bytes between a page boundary and the start of every buffer (0: page aligned).
    std::size_t offset = 0;
    bool alloc = false;
};

#ifdef WEFT_HAVE_UCX
constexpr const char *built_backends = "weft ucx";
#else
constexpr const char *built_backends = "weft (built without UCX)";
#endif

void usage(FILE *f)
{
    std::fprintf(
        f,
        "usage: mpirun -np 2 weft_perf [options]\n"
        "  -b, --bench LIST      comma-separated (default lat); 'tag' = lat,bw,bibw,rate,\n"
        "                        'rma' = every one-sided one\n"
        "                          lat:  ping-pong, one-way latency = RTT/2, us\n"
        "                          bw:   window of sends + 4-byte ack (osu_bw), MB/s (1e6 B/s)\n"
        "                          bibw: both directions at once (osu_bibw), MB/s\n"
        "                          rate: window of sends + ack (osu_mbw_mr), messages/s\n"
        "                        one-sided, rank 0 on rank 1's registered memory:\n"
        "                          put_lat:   put + flush (remotely complete), us per put\n"
        "                          get_lat:   get, wait, us per get\n"
        "                          fadd_lat:  64-bit fetch-and-add, wait, us (size always 8)\n"
        "                          cswap_lat: 64-bit compare-and-swap, wait, us (size always 8)\n"
        "                          put_pp:    put ping-pong polling the last byte, RTT/2, us\n"
        "                          put_bw:    window of puts + flush, MB/s\n"
        "                          get_bw:    window of gets + flush, MB/s\n"
        "                          put_rate:  window of puts + flush, puts/s\n"
        "  -B, --backend LIST    weft,ucx (default both, interleaved in that order)\n"
        "  -s, --sizes LIST      explicit sizes, e.g. 1,8,4k,1m (suffixes k, m)\n"
        "  -m, --min-size N      smallest size of the power-of-two sweep (default 1; 0 allowed)\n"
        "  -M, --max-size N      largest size (default 16m)\n"
        "  -i, --iters N         timed iterations per rep up to 8 KiB, scaled down above\n"
        "                        (default lat, *_lat, put_pp 2000; bw, bibw, *_bw 100;\n"
        "                        rate, put_rate 200)\n"
        "  -w, --warmup N        untimed iterations per rep (default iters/10, scaled alike)\n"
        "  -r, --reps N          interleaved repetitions per size and backend (default 10)\n"
        "  -W, --window N        messages in flight for bw, bibw, rate, *_bw, put_rate\n"
        "                        (default 64)\n"
        "  -t, --transport NAME  weft transport hint (default shm)\n"
        "      --offset N        start every buffer N bytes after a page boundary (a multiple\n"
        "                        of 8; default 0: copies between page-aligned buffers can be\n"
        "                        slow at 3-8 KiB)\n"
        "      --alloc           one-sided: each library allocates its own target region\n"
        "                        (weft_mr_alloc, UCP_MEM_MAP_ALLOCATE): memory the peer maps\n"
        "      --verify          fill and check every message (default)\n"
        "      --no-verify       timing mode: no data checks inside the timed loop\n"
        "      --csv FILE        write rows benchmark,size,backend,min,median,max\n"
        "      --corrupt         self-test of --verify: damage one message; the run must fail\n"
        "  -v, --verbose         print each repetition and UCX's endpoint configuration\n"
        "  -h, --help\n"
        "Backends in this build: %s\n"
        "Must be started by a PMIx launcher with two processes, e.g.\n"
        "  mpirun -np 2 [--allow-run-as-root] --bind-to core weft_perf -b lat --no-verify\n",
        built_backends);
}

constexpr bench_kind tag_benches[] = {bench_kind::lat, bench_kind::bw, bench_kind::bibw,
                                      bench_kind::rate};
constexpr bench_kind rma_benches[] = {
    bench_kind::put_lat, bench_kind::get_lat, bench_kind::fadd_lat, bench_kind::cswap_lat,
    bench_kind::put_pp,  bench_kind::put_bw,  bench_kind::get_bw,   bench_kind::put_rate};
constexpr bench_kind all_benches[] = {
    bench_kind::lat,     bench_kind::bw,      bench_kind::bibw,     bench_kind::rate,
    bench_kind::put_lat, bench_kind::get_lat, bench_kind::fadd_lat, bench_kind::cswap_lat,
    bench_kind::put_pp,  bench_kind::put_bw,  bench_kind::get_bw,   bench_kind::put_rate};

[[nodiscard]] std::vector<std::string> split(const char *s)
{
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s; *p != '\0'; ++p) {
        if (*p == ',') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += *p;
        }
    }
    out.push_back(cur);
    return out;
}

[[nodiscard]] std::size_t parse_size(const std::string &s, const char *what)
{
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno != 0 || end == s.c_str()) {
        fail("bad %s '%s'", what, s.c_str());
    }
    std::size_t mult = 1;
    const std::string_view suffix(end);
    if (suffix == "k" || suffix == "K") {
        mult = kib;
    } else if (suffix == "m" || suffix == "M") {
        mult = mib;
    } else if (suffix == "g" || suffix == "G") {
        mult = 1024 * mib;
    } else if (!suffix.empty()) {
        fail("bad %s '%s' (suffixes: k, m, g)", what, s.c_str());
    }
    return static_cast<std::size_t>(v) * mult;
}

[[nodiscard]] int parse_int(const char *s, const char *what, int lo)
{
    errno = 0;
    char *end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > 1000000000L) {
        fail("bad %s '%s' (an integer >= %d)", what, s, lo);
    }
    return static_cast<int>(v);
}

[[nodiscard]] options parse_args(int argc, char **argv)
{
    enum { opt_verify = 256, opt_no_verify, opt_csv, opt_corrupt, opt_offset, opt_alloc };
    static const option longopts[] = {
        {"bench", required_argument, nullptr, 'b'},
        {"backend", required_argument, nullptr, 'B'},
        {"sizes", required_argument, nullptr, 's'},
        {"min-size", required_argument, nullptr, 'm'},
        {"max-size", required_argument, nullptr, 'M'},
        {"iters", required_argument, nullptr, 'i'},
        {"warmup", required_argument, nullptr, 'w'},
        {"reps", required_argument, nullptr, 'r'},
        {"window", required_argument, nullptr, 'W'},
        {"transport", required_argument, nullptr, 't'},
        {"verify", no_argument, nullptr, opt_verify},
        {"no-verify", no_argument, nullptr, opt_no_verify},
        {"csv", required_argument, nullptr, opt_csv},
        {"corrupt", no_argument, nullptr, opt_corrupt},
        {"offset", required_argument, nullptr, opt_offset},
        {"alloc", no_argument, nullptr, opt_alloc},
        {"verbose", no_argument, nullptr, 'v'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    options o;
    int c;
    while ((c = getopt_long(argc, argv, "b:B:s:m:M:i:w:r:W:t:vh", longopts, nullptr)) != -1) {
        switch (c) {
            case 'b':
                o.benches.clear();
                for (const std::string &b : split(optarg)) {
                    if (b == "tag") {
                        for (bench_kind k : tag_benches) {
                            o.benches.push_back(k);
                        }
                        continue;
                    }
                    if (b == "rma") {
                        for (bench_kind k : rma_benches) {
                            o.benches.push_back(k);
                        }
                        continue;
                    }
                    bool found = false;
                    for (bench_kind k : all_benches) {
                        if (b == bench_name(k)) {
                            o.benches.push_back(k);
                            found = true;
                            break;
                        }
                    }
                    if (!found) {
                        fail(
                            "unknown benchmark '%s' (lat, bw, bibw, rate, put_lat, get_lat, "
                            "fadd_lat, cswap_lat, put_pp, put_bw, get_bw, put_rate; tag, rma)",
                            b.c_str());
                    }
                }
                break;
            case 'B':
                o.backends = split(optarg);
                for (const std::string &b : o.backends) {
                    if (b != "weft" && b != "ucx") {
                        fail("unknown backend '%s' (weft, ucx)", b.c_str());
                    }
                }
                break;
            case 's':
                o.sizes.clear();
                for (const std::string &s : split(optarg)) {
                    o.sizes.push_back(parse_size(s, "size"));
                }
                break;
            case 'm':
                o.min_size = parse_size(optarg, "--min-size");
                break;
            case 'M':
                o.max_size = parse_size(optarg, "--max-size");
                break;
            case 'i':
                o.iters = parse_int(optarg, "--iters", 1);
                break;
            case 'w':
                o.warmup = parse_int(optarg, "--warmup", 0);
                break;
            case 'r':
                o.reps = parse_int(optarg, "--reps", 1);
                break;
            case 'W':
                o.window = parse_int(optarg, "--window", 1);
                break;
            case 't':
                o.transport = optarg;
                break;
            case opt_verify:
                o.verify = true;
                break;
            case opt_no_verify:
                o.verify = false;
                break;
            case opt_csv:
                o.csv = optarg;
                break;
            case opt_corrupt:
                o.corrupt = true;
                break;
            case opt_alloc:
                o.alloc = true;
                break;
            case opt_offset:
                o.offset = parse_size(optarg, "--offset");
                if (o.offset >= 4096 || o.offset % 8 != 0) {
                    fail("--offset %zu: a multiple of 8 (the atomics' word) below 4096", o.offset);
                }
                break;
            case 'v':
                o.verbose = true;
                break;
            case 'h':
                usage(stdout);
                std::exit(0);
            default:
                usage(stderr);
                std::exit(2);
        }
    }
    if (optind < argc) {
        fail("unexpected argument '%s' (see --help)", argv[optind]);
    }
    if (o.corrupt && !o.verify) {
        fail("--corrupt tests the data check: it needs --verify");
    }
    if (o.sizes.empty()) {
        if (o.min_size > o.max_size) {
            fail("--min-size %zu is larger than --max-size %zu", o.min_size, o.max_size);
        }
        if (o.min_size == 0) {
            o.sizes.push_back(0);
        }
        for (std::size_t s = std::max<std::size_t>(o.min_size, 1); s <= o.max_size; s *= 2) {
            o.sizes.push_back(s);
        }
    }
    for (bench_kind k : o.benches) {
        if (k == bench_kind::put_pp &&
            std::find(o.sizes.begin(), o.sizes.end(), std::size_t{0}) != o.sizes.end()) {
            fail("put_pp polls the last byte of the message: sizes must be at least 1");
        }
    }
    return o;
}

[[nodiscard]] int default_iters(bench_kind k)
{
    if (is_latency(k)) {
        return 2000;
    }
    if (is_rate(k)) {
        return 200;
    }
    return 100;  // bw, bibw, put_bw, get_bw
}

/// The benchmark moves a window of messages per iteration.
[[nodiscard]] bool has_window(bench_kind k)
{
    return !is_latency(k);
}

/// Timed iterations at `size`: the base count up to 8 KiB, then shrinking in
/// proportion to the size (at least 10 round trips, or 3 windows).
[[nodiscard]] int iters_for(const options &o, bench_kind k, std::size_t size)
{
    const int base = o.iters > 0 ? o.iters : default_iters(k);
    if (size <= large_size) {
        return base;
    }
    const int floor = is_latency(k) ? 10 : 3;
    const auto scaled = static_cast<int>(static_cast<double>(base) * large_size / size);
    return std::min(base, std::max(floor, scaled));
}

[[nodiscard]] int warmup_for(const options &o, bench_kind k, std::size_t size)
{
    const int base = o.iters > 0 ? o.iters : default_iters(k);
    const int w = o.warmup >= 0 ? o.warmup : std::max(1, base / 10);
    if (w == 0) {
        return 0;
    }
    const double frac = static_cast<double>(iters_for(o, k, size)) / base;
    return std::max(1, static_cast<int>(w * frac));
}

/// The metric of one run from rank 0's time.
[[nodiscard]] double metric(bench_kind k, std::size_t size, int iters, int window, double secs)
{
    if (secs <= 0) {
        fail("%s: a run of %d iterations at %zu bytes took %g s", bench_name(k), iters, size, secs);
    }
    const double n = static_cast<double>(iters);
    const double bytes = static_cast<double>(size);
    switch (k) {
        case bench_kind::lat:
        case bench_kind::put_pp:
            return secs / (2 * n) * 1e6;
        case bench_kind::put_lat:
        case bench_kind::get_lat:
        case bench_kind::fadd_lat:
        case bench_kind::cswap_lat:
            return secs / n * 1e6;
        case bench_kind::bw:
        case bench_kind::put_bw:
        case bench_kind::get_bw:
            return bytes * window * n / secs / 1e6;
        case bench_kind::bibw:
            return 2 * bytes * window * n / secs / 1e6;
        case bench_kind::rate:
        case bench_kind::put_rate:
            return window * n / secs;
    }
    return 0;
}

[[nodiscard]] const char *metric_title(bench_kind k)
{
    switch (k) {
        case bench_kind::lat:
            return "one-way latency (RTT/2), microseconds; lower is better";
        case bench_kind::bw:
            return "unidirectional bandwidth, MB/s (1e6 B/s); higher is better";
        case bench_kind::bibw:
            return "bidirectional bandwidth (both directions summed), MB/s; higher is better";
        case bench_kind::rate:
            return "message rate, messages/s; higher is better";
        case bench_kind::put_lat:
            return "put + flush (remotely complete), microseconds per put; lower is better";
        case bench_kind::get_lat:
            return "get latency, microseconds per get; lower is better";
        case bench_kind::fadd_lat:
            return "64-bit fetch-and-add latency, microseconds; lower is better";
        case bench_kind::cswap_lat:
            return "64-bit compare-and-swap latency, microseconds; lower is better";
        case bench_kind::put_pp:
            return "put ping-pong (poll the last byte), one-way latency = RTT/2, microseconds; "
                   "lower is better";
        case bench_kind::put_bw:
            return "put bandwidth (window + flush), MB/s (1e6 B/s); higher is better";
        case bench_kind::get_bw:
            return "get bandwidth (window + flush), MB/s (1e6 B/s); higher is better";
        case bench_kind::put_rate:
            return "put rate (window + flush), puts/s; higher is better";
    }
    return "";
}

struct stats {
    double min = 0;
    double median = 0;
    double max = 0;
};

[[nodiscard]] stats summarize(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    stats s;
    const std::size_t n = v.size();
    s.min = v.front();
    s.max = v.back();
    s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

[[nodiscard]] std::size_t round_up(std::size_t n, std::size_t to)
{
    return (n + to - 1) / to * to;
}

[[nodiscard]] char *alloc_region(std::size_t len)
{
    void *p = nullptr;
    const int rc = posix_memalign(&p, 4096, round_up(std::max<std::size_t>(len, 1), 4096));
    if (rc != 0) {
        fail("cannot allocate %zu bytes: %s", len, std::strerror(rc));
    }
    // Touch every page now, so no run pays for first-touch page faults.
    std::memset(p, 0, len);
    return static_cast<char *>(p);
}

/// Formats a value for the table and the CSV: latency with 3 decimals, MB/s
/// with 2, messages/s as an integer.
void format_value(char *out, std::size_t n, bench_kind k, double v)
{
    if (is_latency(k)) {
        std::snprintf(out, n, "%.3f", v);
    } else if (is_rate(k)) {
        std::snprintf(out, n, "%.0f", v);
    } else {
        std::snprintf(out, n, "%.2f", v);
    }
}

class harness {
  public:
    harness(options o, bootstrap &boot) : opt_(std::move(o)), boot_(boot) {}

    void setup();
    void run_all();
    void teardown();

  private:
    void run_bench(bench_kind k);
    void print_header(bench_kind k);
    void print_row(bench_kind k, std::size_t size, const std::vector<stats> &st);
    void print_targets(bench_kind k);

    options opt_;
    bootstrap &boot_;
    std::vector<std::unique_ptr<backend>> backends_;
    buffers buf_;
    std::uint32_t seed_ = 0;
    FILE *csv_ = nullptr;
    /// Medians per size of each backend (this benchmark), for the targets line.
    std::vector<std::vector<std::pair<std::size_t, double>>> medians_;
};

void harness::setup()
{
    // The buffers first: the backends map them for the one-sided benchmarks.
    const std::size_t max_size = *std::max_element(opt_.sizes.begin(), opt_.sizes.end());
    std::size_t region = std::max<std::size_t>(max_size, 64);
    if (opt_.verify) {
        const std::size_t window_bytes =
            static_cast<std::size_t>(opt_.window) * round_up(max_size, 64);
        region = std::max(region, std::min(window_bytes, verify_window_bytes));
    }
    buf_.region_len = region;
    buf_.send = alloc_region(region + opt_.offset) + opt_.offset;
    buf_.recv[0] = alloc_region(region + opt_.offset) + opt_.offset;
    buf_.recv[1] = alloc_region(region + opt_.offset) + opt_.offset;

    backend_options bo;
    bo.weft_transport = opt_.transport;
    bo.window = opt_.window;
    bo.verbose = opt_.verbose;
    bo.one_sided = std::any_of(opt_.benches.begin(), opt_.benches.end(), is_one_sided);
    bo.alloc = opt_.alloc;
    for (const std::string &name : opt_.backends) {
        std::unique_ptr<backend> b;
        if (name == "weft") {
            b = make_weft_backend(boot_, bo);
        } else {
            b = make_ucx_backend(boot_, bo);
            if (b == nullptr) {
                fail(
                    "this weft_perf was built without UCX (configure found no ucx.pc); "
                    "use --backend weft");
            }
        }
        if (bo.one_sided) {
            b->map_memory(buf_);
        }
        backends_.push_back(std::move(b));
    }

    if (boot_.rank() == 0 && !opt_.csv.empty()) {
        csv_ = std::fopen(opt_.csv.c_str(), "w");
        if (csv_ == nullptr) {
            fail("cannot open %s: %s", opt_.csv.c_str(), std::strerror(errno));
        }
        std::fprintf(csv_, "benchmark,size,backend,min,median,max\n");
    }
}

void harness::print_header(bench_kind k)
{
    char host[256] = "?";
    (void)gethostname(host, sizeof(host) - 1);
    std::printf("# weft_perf %s: %s\n", bench_name(k), metric_title(k));
    std::printf("# host %s, 2 processes (rank 0 times, rank 1 answers)\n", host);
    for (const auto &b : backends_) {
        std::printf("# %-4s: %s\n", b->name(), b->describe().c_str());
    }
    const int base = opt_.iters > 0 ? opt_.iters : default_iters(k);
    std::printf("# %d interleaved reps per size (", opt_.reps);
    for (std::size_t i = 0; i < backends_.size(); ++i) {
        std::printf("%s%s", i == 0 ? "" : ", then ", backends_[i]->name());
    }
    std::printf("), %d iterations per rep up to 8 KiB (fewer above), warmup %d", base,
                warmup_for(opt_, k, 1));
    if (has_window(k)) {
        std::printf(", window %d", opt_.window);
    }
    if (opt_.offset != 0) {
        std::printf(", buffers at page + %zu", opt_.offset);
    }
    std::printf(", verify %s\n",
                opt_.verify ? "on (timings include buffer fills and checks)" : "off");
    if (opt_.reps < 10) {
        std::printf("# note: fewer than 10 reps; min and median are not reliable\n");
    }
    // Latency: best = min. Bandwidth and rate: best = max over reps.
    const char *best = is_latency(k) ? "min" : "best";
    std::printf("# %10s", "size");
    for (const auto &b : backends_) {
        char c1[32];
        char c2[32];
        std::snprintf(c1, sizeof(c1), "%s.%s", b->name(), best);
        std::snprintf(c2, sizeof(c2), "%s.median", b->name());
        std::printf(" %13s %13s", c1, c2);
    }
    if (backends_.size() == 2) {
        char c1[32];
        std::snprintf(c1, sizeof(c1), "ratio.%s", best);
        std::printf(" %11s %12s", c1, "ratio.median");
    }
    std::printf("\n");
    if (backends_.size() == 2) {
        std::printf("# (ratio = %s / %s)\n", backends_[0]->name(), backends_[1]->name());
    }
    std::fflush(stdout);
}

void harness::print_row(bench_kind k, std::size_t size, const std::vector<stats> &st)
{
    std::printf("  %10zu", size);
    for (const stats &s : st) {
        char a[32];
        char b[32];
        format_value(a, sizeof(a), k, is_latency(k) ? s.min : s.max);
        format_value(b, sizeof(b), k, s.median);
        std::printf(" %13s %13s", a, b);
    }
    if (st.size() == 2) {
        const double best0 = is_latency(k) ? st[0].min : st[0].max;
        const double best1 = is_latency(k) ? st[1].min : st[1].max;
        std::printf(" %11.3f %12.3f", best0 / best1, st[0].median / st[1].median);
    }
    std::printf("\n");
    std::fflush(stdout);
}

/// The median of `v` at `size`; 0 if it was not measured.
[[nodiscard]] double median_at(const std::vector<std::pair<std::size_t, double>> &v,
                               std::size_t size)
{
    for (const auto &[s, m] : v) {
        if (s == size) {
            return m;
        }
    }
    return 0;
}

void harness::print_targets(bench_kind k)
{
    if (backends_.size() != 2 || medians_.size() != 2 ||
        std::string(backends_[0]->name()) != "weft") {
        return;
    }
    const double w8 = median_at(medians_[0], 8);
    const double u8 = median_at(medians_[1], 8);
    const double r = u8 > 0 ? w8 / u8 : 0;
    const bool have8 = w8 > 0 && u8 > 0;
    switch (k) {
        case bench_kind::lat:
        case bench_kind::put_lat:
        case bench_kind::get_lat:
        case bench_kind::fadd_lat:
            if (have8) {
                std::printf("# target: 8-byte %s weft/ucx (median) = %.3f, target <= 0.80: %s\n",
                            bench_name(k), r, r <= 0.80 ? "met" : "NOT met");
            }
            return;
        case bench_kind::cswap_lat:
        case bench_kind::put_pp:
            if (have8) {
                std::printf("# 8-byte %s weft/ucx (median) = %.3f (no target)\n", bench_name(k), r);
            }
            return;
        case bench_kind::rate:
            if (have8) {
                std::printf(
                    "# target: 8-byte message rate weft/ucx (median) = %.3f, target >= 1.20: %s\n",
                    r, r >= 1.20 ? "met" : "NOT met");
            }
            return;
        case bench_kind::put_rate:
            if (have8) {
                std::printf(
                    "# target: 8-byte put rate weft/ucx (median) = %.3f, target >= 1.50: %s\n", r,
                    r >= 1.50 ? "met" : "NOT met");
            }
            return;
        case bench_kind::put_bw:
        case bench_kind::get_bw: {
            // 64 KiB .. 4 MiB: the smallest ratio of the sizes measured there.
            double lo = 0;
            std::size_t at = 0;
            int n = 0;
            for (const auto &[s, m] : medians_[0]) {
                const double u = median_at(medians_[1], s);
                if (s < 64 * kib || s > 4 * mib || u <= 0) {
                    continue;
                }
                const double rr = m / u;
                if (n++ == 0 || rr < lo) {
                    lo = rr;
                    at = s;
                }
            }
            if (n > 0) {
                std::printf(
                    "# target: %s weft/ucx (median) >= 1.20 at 64 KiB..4 MiB: lowest %.3f at %zu B "
                    "(%d sizes): %s\n",
                    bench_name(k), lo, at, n, lo >= 1.20 ? "met" : "NOT met");
            }
            return;
        }
        case bench_kind::bw:
        case bench_kind::bibw:
            return;
    }
}

void harness::run_bench(bench_kind k)
{
    const bool root = boot_.rank() == 0;
    if (root) {
        print_header(k);
    }
    medians_.assign(backends_.size(), {});
    // An atomic is one 64-bit element whatever the size list says.
    const std::vector<std::size_t> sizes = is_atomic(k) ? std::vector<std::size_t>{8} : opt_.sizes;
    for (std::size_t size : sizes) {
        run_params p;
        p.kind = k;
        p.size = size;
        p.iters = iters_for(opt_, k, size);
        p.warmup = warmup_for(opt_, k, size);
        p.window = opt_.window;
        p.verify = opt_.verify;
        p.corrupt = opt_.corrupt;
        p.rank = boot_.rank();
        p.buf = &buf_;
        // Verify mode gives each message of a window its own buffer when they fit.
        const std::size_t slot = round_up(size, 64);
        p.stride =
            opt_.verify && static_cast<std::size_t>(p.window) * slot <= buf_.region_len ? slot : 0;

        std::vector<std::vector<double>> values(backends_.size());
        for (int rep = 0; rep < opt_.reps; ++rep) {
            for (std::size_t b = 0; b < backends_.size(); ++b) {
                p.seed = ++seed_;
                const double secs = backends_[b]->run(p);
                if (root) {
                    values[b].push_back(metric(k, size, p.iters, p.window, secs));
                }
            }
        }
        if (!root) {
            continue;
        }
        std::vector<stats> st;
        for (std::size_t b = 0; b < backends_.size(); ++b) {
            st.push_back(summarize(values[b]));
            if (opt_.verbose) {
                std::printf("#   %s %zu B (%d iters, warmup %d):", backends_[b]->name(), size,
                            p.iters, p.warmup);
                for (double v : values[b]) {
                    char s[32];
                    format_value(s, sizeof(s), k, v);
                    std::printf(" %s", s);
                }
                std::printf("\n");
            }
            if (csv_ != nullptr) {
                char mn[32];
                char md[32];
                char mx[32];
                format_value(mn, sizeof(mn), k, st.back().min);
                format_value(md, sizeof(md), k, st.back().median);
                format_value(mx, sizeof(mx), k, st.back().max);
                std::fprintf(csv_, "%s,%zu,%s,%s,%s,%s\n", bench_name(k), size,
                             backends_[b]->name(), mn, md, mx);
            }
            medians_[b].emplace_back(size, st.back().median);
        }
        if (csv_ != nullptr) {
            std::fflush(csv_);
        }
        print_row(k, size, st);
    }
    if (root) {
        print_targets(k);
        std::printf("\n");
        std::fflush(stdout);
    }
}

void harness::run_all()
{
    for (bench_kind k : opt_.benches) {
        run_bench(k);
    }
}

void harness::teardown()
{
    for (auto &b : backends_) {
        b->finalize();
    }
    backends_.clear();
    if (csv_ != nullptr && std::fclose(csv_) != 0) {
        fail("writing %s: %s", opt_.csv.c_str(), std::strerror(errno));
    }
    csv_ = nullptr;
    std::free(buf_.send - opt_.offset);
    std::free(buf_.recv[0] - opt_.offset);
    std::free(buf_.recv[1] - opt_.offset);
}

}  // namespace

}  // namespace weft::perf

int main(int argc, char **argv)
{
    using namespace weft::perf;
    // Parse before PMIx so that --help and bad options work without a launcher.
    options opt = parse_args(argc, argv);
    bootstrap boot;
    boot.init();
    if (boot.size() != 2) {
        fail("weft_perf needs exactly 2 processes (mpirun -np 2), this job has %u", boot.size());
    }
    harness h(std::move(opt), boot);
    h.setup();
    h.run_all();
    h.teardown();
    boot.finalize();
    return 0;
}
