// shm_pingpong: transport-level latency and message-rate loop of the shm
// transport between two forked processes (test-only; not installed). It checks
// that the design reaches its targets (docs/shm.md "Measurements"); speed is
// never asserted by the unit tests.
//
//   shm_pingpong [-r runs] [-l latency_iters] [-m stream_msgs] [-s size] [-b] [-n]
//     -b  bcopy sends instead of short;  -n  do not pin the processes to CPUs 0 and 1
//
// Latency: the parent sends `size` bytes, the child answers with `size` bytes;
// one-way latency = round trip / 2. Rate: the parent streams `stream_msgs`
// messages, then an end marker; the child answers with its count. Each run prints
// one line, starting with the hardware floor measured at the same moment
// (line_us: one cache line bounced between the two processes; the machine is
// shared, so compare the transport with it rather than with a fixed number)
// (the receiver copies every payload out, as the layer above would);
// the summary gives min, median and max over the runs. Besides the
// means, each run also reports the median round trip and the median rate of
// sixteenths of the stream, which a preemption on this shared machine does not skew.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "base/config.hpp"
#include "transport/shm/shm.hpp"

namespace {

namespace tl = weft::transport;
using weft::base::status;

enum am : unsigned { am_ping = 0, am_data = 1, am_ctl = 2 };
enum ctl : std::uint64_t { ctl_stream_end = 1, ctl_exit = 2, ctl_baseline = 3 };

/// The hardware floor, measured in every run next to the transport: one cache line
/// bounced between the same two processes (a MAP_SHARED page made before fork).
std::atomic<std::uint64_t> *line = nullptr;

constexpr std::uint64_t node = 0x7070;

struct side {
    std::unique_ptr<tl::iface> t;
    tl::conn_id conn = tl::invalid_id;
    std::uint64_t pings = 0;     // am_ping received
    std::uint64_t data = 0;      // am_data received
    std::uint64_t ctl_seen = 0;  // am_ctl received
    std::uint64_t ctl_value = 0;
};

/// Where the receiver copies every payload, as the layer above would copy it
/// into the user's buffer (a receiver that never reads the data would flatter
/// the bcopy numbers).
std::uint8_t sink[1 << 20];

void on_am(void *arg, tl::src_id, tl::am_word id, const void *d, std::size_t len)
{
    auto *s = static_cast<side *>(arg);
    std::memcpy(sink, d, std::min(len, sizeof(sink)));
    switch (id) {
        case am_ping:
            ++s->pings;
            break;
        case am_data:
            ++s->data;
            break;
        default:
            if (len >= sizeof(std::uint64_t)) {
                std::memcpy(&s->ctl_value, d, sizeof(std::uint64_t));
            }
            ++s->ctl_seen;
            break;
    }
}

void on_failed(void *, tl::conn_id, tl::src_id, status)
{
    std::fprintf(stderr, "shm_pingpong: peer failed\n");
    _exit(3);
}

struct options {
    int runs = 11;
    long lat_iters = 200000;
    long stream_msgs = 2000000;
    std::size_t size = 8;
    bool bcopy = false;
    bool pin = true;
};

std::uint8_t payload[1 << 16];

[[gnu::always_inline]] inline status send(side &s, tl::am_word id, std::size_t len,
                                          const options &o)
{
    if (o.bcopy) {
        const struct iovec iov {
            payload, len
        };
        return tl::send_bcopy(s.t.get(), s.conn, id, nullptr, 0, &iov, 1, 0, len);
    }
    return tl::send_short(s.t.get(), s.conn, id, nullptr, 0, payload, len);
}

void send_retry(side &s, tl::am_word id, std::size_t len, const options &o)
{
    status st;
    while ((st = send(s, id, len, o)) == status::again) {
        (void)tl::progress(s.t.get());
    }
    if (st != status::ok) {
        std::fprintf(stderr, "shm_pingpong: send failed: %s\n", weft::base::status_string(st));
        _exit(4);
    }
}

void send_ctl(side &s, std::uint64_t v)
{
    status st;
    while ((st = tl::send_short(s.t.get(), s.conn, am_ctl, &v, sizeof(v), nullptr, 0)) ==
           status::again) {
        (void)tl::progress(s.t.get());
    }
    if (st != status::ok) {
        _exit(4);
    }
}

void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        std::perror("sched_setaffinity");
    }
}

/// Open an endpoint, exchange addresses over `fd`, connect to the other side.
std::unique_ptr<side> setup(int fd, std::uint32_t ep_id)
{
    weft::transport::shm::config cfg{};
    if (weft::base::config_load(weft::transport::shm::config_table(), &cfg) != status::ok) {
        return nullptr;
    }
    auto s = std::make_unique<side>();
    const tl::open_params p{node, static_cast<std::uint32_t>(getpid()), ep_id};
    auto r = weft::transport::shm::open(p, cfg);
    if (!r.ok()) {
        std::fprintf(stderr, "open: %s\n", weft::base::status_string(r.error()));
        return nullptr;
    }
    s->t = std::move(r.value());
    s->t->set_handlers({&on_am, &on_failed, nullptr, nullptr, nullptr, s.get()});
    tl::address_builder b({node, p.pid, ep_id});
    std::uint8_t peer_bytes[tl::max_address_size];
    tl::address peer;
    if (s->t->pack_address(b) != status::ok) {
        return nullptr;
    }
    const tl::address me = b.get();
    s->t->set_local_address(me);
    if (write(fd, me.data(), tl::max_address_size) != static_cast<ssize_t>(tl::max_address_size) ||
        read(fd, peer_bytes, sizeof(peer_bytes)) != static_cast<ssize_t>(sizeof(peer_bytes)) ||
        tl::address::parse(peer_bytes, sizeof(peer_bytes), peer) != status::ok ||
        s->t->connect(peer, s->conn) != status::ok) {
        std::fprintf(stderr, "address exchange or connect failed\n");
        return nullptr;
    }
    return s;
}

[[noreturn]] void child_main(int fd, const options &o)
{
    if (o.pin) {
        pin(1);
    }
    auto s = setup(fd, 1);
    if (!s) {
        _exit(2);
    }
    std::uint64_t answered = 0;
    std::uint64_t ctl_done = 0;
    for (;;) {
        (void)tl::progress(s->t.get());
        while (answered < s->pings) {
            send_retry(*s, am_ping, o.size, o);
            ++answered;
        }
        if (ctl_done < s->ctl_seen) {
            ctl_done = s->ctl_seen;
            if (s->ctl_value == ctl_exit) {
                break;
            }
            if (s->ctl_value == ctl_baseline) {
                // Release/acquire: each store hands the line to the other side.
                for (long i = 0; i < o.lat_iters; ++i) {
                    while (line->load(std::memory_order_acquire) != 2 * std::uint64_t(i) + 1) {
                    }
                    line->store(2 * std::uint64_t(i) + 2, std::memory_order_release);
                }
                continue;
            }
            send_ctl(*s, s->data);  // stream end: answer with the count
            s->data = 0;
        }
    }
    // Let the parent close first (it may still be reading our last message).
    char c;
    (void)read(fd, &c, 1);
    s.reset();
    _exit(0);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char **argv)
{
    options o;
    int opt;
    while ((opt = getopt(argc, argv, "r:l:m:s:bn")) != -1) {
        switch (opt) {
            case 'r':
                o.runs = std::atoi(optarg);
                break;
            case 'l':
                o.lat_iters = std::atol(optarg);
                break;
            case 'm':
                o.stream_msgs = std::atol(optarg);
                break;
            case 's':
                o.size = static_cast<std::size_t>(std::atol(optarg));
                break;
            case 'b':
                o.bcopy = true;
                break;
            case 'n':
                o.pin = false;
                break;
            default:
                std::fprintf(stderr,
                             "usage: %s [-r runs] [-l latency_iters] [-m stream_msgs] [-s size] "
                             "[-b] [-n]\n",
                             argv[0]);
                return 2;
        }
    }
    if (o.runs < 1 || o.size > sizeof(payload)) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    line = new (page) std::atomic<std::uint64_t>(0);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        std::perror("socketpair");
        return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("fork");
        return 1;
    }
    if (pid == 0) {
        close(sv[0]);
        child_main(sv[1], o);
    }
    close(sv[1]);
    if (o.pin) {
        pin(0);
    }
    auto s = setup(sv[0], 0);
    if (!s) {
        kill(pid, SIGKILL);
        return 1;
    }
    if (o.size > (o.bcopy ? s->t->attr().max_bcopy : s->t->attr().max_short)) {
        std::fprintf(stderr, "size %zu too large for %s\n", o.size, o.bcopy ? "bcopy" : "short");
        kill(pid, SIGKILL);
        return 2;
    }
    std::printf("# shm_pingpong: %s %zu B, %d runs, %ld round trips, %ld streamed msgs, %s\n",
                o.bcopy ? "bcopy" : "short", o.size, o.runs, o.lat_iters, o.stream_msgs,
                o.pin ? "pinned to CPUs 0/1" : "not pinned");
    std::printf("# run  line_us  lat_mean_us  lat_med_us  rate_Mmsg/s  rate_med_Mmsg/s  GB/s\n");
    using clock = std::chrono::steady_clock;
    std::vector<double> base;      // per run: one-way cache-line transfer (hardware floor)
    std::vector<double> lat;       // per run: mean one-way latency
    std::vector<double> lat_med;   // per run: median round trip / 2
    std::vector<double> rate;      // per run: messages / total time
    std::vector<double> rate_med;  // per run: median rate of stream sixteenths
    std::vector<double> gbs;       // per run: rate_med * size
    std::vector<double> rtt;
    std::vector<double> chunk_rates;
    const long chunk = std::max(256L, o.stream_msgs / 16);  // about 16 chunks per run
    std::uint64_t expect_pongs = 0;
    for (int run = 0; run < o.runs; ++run) {
        // Hardware floor: one cache line, same processes, same moment.
        line->store(0, std::memory_order_relaxed);
        send_ctl(*s, ctl_baseline);  // its publish (release) orders the reset before
        const clock::time_point tb = clock::now();
        for (long i = 0; i < o.lat_iters; ++i) {
            line->store(2 * std::uint64_t(i) + 1, std::memory_order_release);
            while (line->load(std::memory_order_acquire) != 2 * std::uint64_t(i) + 2) {
            }
        }
        base.push_back(std::chrono::duration<double, std::micro>(clock::now() - tb).count() /
                       o.lat_iters / 2);

        // Latency (with a warm-up of a tenth of the iterations).
        const long warm = o.lat_iters / 10;
        clock::time_point t0{};
        clock::time_point prev{};
        rtt.clear();
        for (long i = 0; i < warm + o.lat_iters; ++i) {
            if (i == warm) {
                t0 = clock::now();
                prev = t0;
            }
            send_retry(*s, am_ping, o.size, o);
            ++expect_pongs;
            while (s->pings < expect_pongs) {
                (void)tl::progress(s->t.get());
            }
            if (i >= warm) {
                const clock::time_point now = clock::now();
                rtt.push_back(std::chrono::duration<double, std::micro>(now - prev).count());
                prev = now;
            }
        }
        const double us =
            std::chrono::duration<double, std::micro>(prev - t0).count() / o.lat_iters / 2;
        lat.push_back(us);
        lat_med.push_back(median(rtt) / 2);

        // Message rate.
        const std::uint64_t ctl_before = s->ctl_seen;
        const clock::time_point t1 = clock::now();
        clock::time_point chunk_start = t1;
        chunk_rates.clear();
        for (long i = 0; i < o.stream_msgs; ++i) {
            send_retry(*s, am_data, o.size, o);
            if ((i + 1) % chunk == 0) {
                const clock::time_point now = clock::now();
                chunk_rates.push_back(
                    chunk / std::chrono::duration<double>(now - chunk_start).count() / 1e6);
                chunk_start = now;
            }
        }
        send_ctl(*s, ctl_stream_end);
        while (s->ctl_seen == ctl_before) {
            (void)tl::progress(s->t.get());
        }
        const double sec = std::chrono::duration<double>(clock::now() - t1).count();
        if (s->ctl_value != static_cast<std::uint64_t>(o.stream_msgs)) {
            std::fprintf(stderr, "child counted %llu of %ld messages\n",
                         static_cast<unsigned long long>(s->ctl_value), o.stream_msgs);
            return 1;
        }
        rate.push_back(static_cast<double>(o.stream_msgs) / sec / 1e6);
        rate_med.push_back(chunk_rates.empty() ? rate.back() : median(chunk_rates));
        gbs.push_back(rate_med.back() * static_cast<double>(o.size) / 1e3);
        std::printf("%5d  %8.4f  %10.4f  %10.4f  %10.4f  %10.4f  %8.3f\n", run, base.back(),
                    lat.back(), lat_med.back(), rate.back(), rate_med.back(), gbs.back());
        std::fflush(stdout);
    }
    send_ctl(*s, ctl_exit);
    auto summary = [](const char *what, std::vector<double> v) {
        std::printf("%-16s min %8.4f  median %8.4f  max %8.4f\n", what,
                    *std::min_element(v.begin(), v.end()), median(v),
                    *std::max_element(v.begin(), v.end()));
    };
    summary("line_us", base);
    summary("lat_mean_us", lat);
    summary("lat_med_us", lat_med);
    summary("rate_Mmsg/s", rate);
    summary("rate_med_Mmsg/s", rate_med);
    summary("GB/s (rate_med)", gbs);
    s.reset();
    (void)write(sv[0], "x", 1);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
