// perf/shm/fifo_ab.cpp -- the shm FIFO's queue algorithm alone, two versions in one
// launch: v4, the tree's (src/transport/shm/fifo_inl.hpp: Vyukov's queue, the
// consumer frees each cell by writing its seq), and v5, a variant tried and not
// kept (docs/performance.md "A FIFO whose consumer does not write cells"): only
// producers write cells; the consumer releases positions in batches through a
// `released` word and producers cache it (UCX's mm FIFO works this way). One
// producer process and one consumer process on two CPUs stream small messages
// through a FIFO in shared memory, the versions alternating round by round, so
// this VM's per-launch speed modes hit both alike.
//
//   fifo_ab [--rounds N] [--msgs N] [--fifo N] [--bytes N] [--batch N] [--window N]
//           [--touch]
//
// --window W: the producer stops after W messages until the consumer has taken
// them all (the rate benchmarks' window without the ack message); 0 = stream.
// --touch: v5's producer also loads the cell's seq before its tail CAS, as v4's does.
// Prints ns per message, min and median over the rounds, per version, and the
// median of the paired ratios v5 / v4.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "base/copy.hpp"
#include "transport/shm/fifo_inl.hpp"

namespace shm = weft::transport::shm;

namespace {

/// The v5 variant's producer view and reservation (single cells).
namespace v5 {
struct tx_view {
    shm::cell *cells;
    std::atomic<std::uint32_t> *tail;
    std::atomic<std::uint64_t> *resv;
    const std::atomic<std::uint32_t> *released;
    std::uint32_t mask;
    std::uint32_t released_seen;  ///< last load of *released; reloaded when it says full
    bool touch;
};

[[gnu::noinline]] bool refresh(tx_view &v, std::uint32_t pos)
{
    // Acquire: pairs with the consumer's release of `released`.
    v.released_seen = v.released->load(std::memory_order_acquire);
    return pos - v.released_seen <= v.mask;
}

[[gnu::always_inline]] inline shm::cell *reserve(tx_view &v, std::uint32_t &pos_out)
{
    std::uint32_t pos = v.tail->load(std::memory_order_relaxed);
    for (;;) {
        v.resv->store(shm::resv_valid | pos, std::memory_order_release);
        if (pos - v.released_seen > v.mask && !refresh(v, pos)) [[unlikely]] {
            if (static_cast<std::int32_t>(pos - v.released_seen) >= 0) {
                return nullptr;  // full
            }
            pos = v.tail->load(std::memory_order_relaxed);  // our tail value was old
            continue;
        }
        shm::cell *c = v.cells + (pos & v.mask);
        if (v.touch) {
            (void)c->seq.load(std::memory_order_acquire);
        }
        if (v.tail->compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) [[likely]] {
            pos_out = pos;
            return c;
        }
    }
}
}  // namespace v5

/// The shared region: the segment header's producer and consumer blocks, one
/// sender slot's resv word, control words and the cells.
struct alignas(4096) region {
    alignas(128) std::atomic<std::uint32_t> tail;
    alignas(128) std::atomic<std::uint32_t> released;
    alignas(128) std::atomic<std::uint64_t> resv;
    alignas(128) std::atomic<std::uint32_t> round;     ///< producer: round r may start
    alignas(128) std::atomic<std::uint32_t> consumed;  ///< consumer: messages taken (window)
    alignas(128) std::atomic<std::uint32_t> done;      ///< consumer: round r finished
    alignas(4096) shm::cell cells[1];                  ///< fifo cells follow
};

struct params {
    unsigned rounds = 20;
    std::uint32_t msgs = 2000000;
    std::uint32_t fifo = 256;
    std::uint32_t bytes = 8;
    std::uint32_t batch = 16;
    std::uint32_t window = 0;
    bool touch = false;
};

void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)sched_setaffinity(0, sizeof(set), &set);
}

void reset(region *r, const params &p)
{
    r->tail.store(0);
    r->released.store(0);
    r->resv.store(0);
    r->consumed.store(0);
    for (std::uint32_t k = 0; k < p.fifo; ++k) {
        r->cells[k].seq.store(k);
    }
}

/// Producer side of one round; returns nanoseconds per message (measured here:
/// the round ends when the consumer reports every message taken).
double produce(region *r, const params &p, bool v5, unsigned round)
{
    const std::uint32_t mask = p.fifo - 1;
    std::uint8_t payload[52];
    std::memset(payload, 0x5a, sizeof(payload));
    shm::tx_view v4v{};
    v4v.cells = r->cells;
    v4v.tail = &r->tail;
    v4v.resv = &r->resv;
    v4v.mask = mask;
    v5::tx_view v5v{r->cells, &r->tail, &r->resv, &r->released, mask, 0, p.touch};
    const auto t0 = std::chrono::steady_clock::now();
    r->round.store(round + 1, std::memory_order_release);
    for (std::uint32_t i = 0; i < p.msgs; ++i) {
        if (p.window != 0 && i % p.window == 0) {
            while (r->consumed.load(std::memory_order_acquire) != i) {
            }
        }
        std::uint32_t pos;
        shm::cell *c;
        do {
            c = v5 ? v5::reserve(v5v, pos) : shm::fifo_reserve(v4v, pos);
        } while (c == nullptr);
        payload[0] = static_cast<std::uint8_t>(i);
        weft::base::copy_small(c->data, payload, p.bytes);
        shm::fifo_publish(c, pos, 1, shm::cell_kind::inline_data, 0, p.bytes);
    }
    while (r->done.load(std::memory_order_acquire) != round + 1) {
    }
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / p.msgs;
}

void consume(region *r, const params &p, bool v5, unsigned round)
{
    const std::uint32_t mask = p.fifo - 1;
    while (r->round.load(std::memory_order_acquire) != round + 1) {
    }
    std::uint32_t head = 0;
    std::uint32_t sum = 0;
    while (head != p.msgs) {
        shm::cell *c = r->cells + (head & mask);
        if (!shm::fifo_ready(c, head)) {
            continue;
        }
        std::uint32_t n = 0;
        do {
            const std::uint32_t len = c->len_kind.load(std::memory_order_relaxed) & 0xffffffu;
            sum += c->data[0] + len;
            ++head;
            __builtin_prefetch(r->cells + (head & mask), 0, 3);
            if (!v5) {
                shm::fifo_release(c, head - 1, p.fifo);
            }
            c = r->cells + (head & mask);
        } while (++n < p.batch && head != p.msgs && shm::fifo_ready(c, head));
        if (v5) {
            // Release: our reads of the cells below head before a producer reuses them.
            r->released.store(head, std::memory_order_release);
        }
        if (p.window != 0) {
            r->consumed.store(head, std::memory_order_release);
        }
    }
    if (sum == 0xffffffffu) {
        std::puts("");  // keep the reads
    }
    r->done.store(round + 1, std::memory_order_release);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char **argv)
{
    params p;
    for (int i = 1; i < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--touch") {
            p.touch = true;
            --i;
            continue;
        }
        if (i + 1 == argc) {
            std::fprintf(stderr, "fifo_ab: %s needs a value\n", a.c_str());
            return 2;
        }
        const auto val = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
        if (a == "--rounds") {
            p.rounds = val;
        } else if (a == "--msgs") {
            p.msgs = val;
        } else if (a == "--fifo") {
            p.fifo = val;
        } else if (a == "--bytes") {
            p.bytes = std::min<std::uint32_t>(val, 52);
        } else if (a == "--batch") {
            p.batch = std::max<std::uint32_t>(val, 1);
        } else if (a == "--window") {
            p.window = val;
        } else {
            std::fprintf(stderr, "fifo_ab: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (p.fifo < 2 || (p.fifo & (p.fifo - 1)) != 0 || p.window > p.fifo) {
        std::fprintf(stderr, "fifo_ab: --fifo must be a power of two >= 2, --window <= --fifo\n");
        return 2;
    }
    const std::size_t size = sizeof(region) + std::size_t{p.fifo} * sizeof(shm::cell);
    void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto *r = new (mem) region;
    r->round.store(0);
    r->done.store(0);
    reset(r, p);
    const pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (unsigned k = 0; k < 2 * p.rounds; ++k) {
            consume(r, p, k % 2 == 1, k);
        }
        _exit(0);
    }
    pin(0);
    std::vector<double> t[2];
    std::vector<double> ratio;
    for (unsigned k = 0; k < 2 * p.rounds; ++k) {
        reset(r, p);
        t[k % 2].push_back(produce(r, p, k % 2 == 1, k));
        if (k % 2 == 1) {
            ratio.push_back(t[1].back() / t[0].back());
        }
    }
    int st = 0;
    waitpid(child, &st, 0);
    std::printf(
        "# fifo_ab: %u rounds of %u messages of %u bytes, fifo %u, consumer batch %u, "
        "window %u%s\n",
        p.rounds, p.msgs, p.bytes, p.fifo, p.batch, p.window,
        p.touch ? ", v5 touches the cell" : "");
    std::printf("%-4s %10s %10s\n", "", "ns.min", "ns.median");
    for (int v = 0; v < 2; ++v) {
        std::printf("%-4s %10.2f %10.2f\n", v ? "v5" : "v4",
                    *std::min_element(t[v].begin(), t[v].end()), median(t[v]));
    }
    std::printf("v5/v4 paired median %.3f\n", median(ratio));
    return 0;
}
