// test_pmix_av: weft_av_load_pmix under a real PMIx launcher, over weft.h only.
//
//   mpirun -np 4 --oversubscribe ./test_pmix_av [--transport NAME] [--expect-size N]
//     loads the AV through PMIx, checks rank and size (against the launcher's
//     environment), then every rank exchanges tagged messages with every other
//     rank: first with directed receives, then with any-source receives, checking
//     the payload of each pair and the source reported by weft_cq_readfrom.
//   ./test_pmix_av --expect-unreachable
//     run without a launcher: weft_av_load_pmix must return -WEFT_EHOSTUNREACH
//     (and log why) rather than crash or hang.
//
// Exit status 0 on success, 1 on a failed check (with file:line on stderr).
// test/pmix/run_pmix_av.sh runs both modes for `make check`.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

int g_rank = -1;

[[noreturn]] void fail(const char *file, int line, const std::string &what)
{
    std::fprintf(stderr, "test_pmix_av rank %d: %s:%d: FAILED: %s\n", g_rank, file, line,
                 what.c_str());
    std::fflush(stderr);
    std::exit(1);  // exit(): weft releases its PMIx client at exit, mpirun sees status 1
}

#define PMIX_TEST_CHECK(cond, what)           \
    do {                                      \
        if (!(cond)) {                        \
            fail(__FILE__, __LINE__, (what)); \
        }                                     \
    } while (0)

#define PMIX_TEST_OK(call)                                                                  \
    do {                                                                                    \
        const long long pmix_test_rc_ = static_cast<long long>(call);                       \
        if (pmix_test_rc_ != 0) {                                                           \
            fail(__FILE__, __LINE__,                                                        \
                 std::string(#call) + " returned " + std::to_string(pmix_test_rc_) + " (" + \
                     weft_strerror(static_cast<int>(pmix_test_rc_)) + ")");                 \
        }                                                                                   \
    } while (0)

constexpr int wait_limit_ms = 30000;
constexpr std::uint64_t directed_tag = 0x1000;
constexpr std::uint64_t any_tag = 0x2000;
constexpr std::uint64_t done_tag = 0x3000;

std::uint64_t mix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// Payload byte i of the message from `src` to `dst` in `phase`.
unsigned char payload_byte(std::uint32_t src, std::uint32_t dst, int phase, std::size_t i)
{
    return static_cast<unsigned char>(mix((std::uint64_t{src} << 40) ^ (std::uint64_t{dst} << 20) ^
                                          (static_cast<std::uint64_t>(phase) << 56) ^ (i / 8)) >>
                                      (8 * (i % 8)));
}

/// Sizes differ per pair so that a message delivered to the wrong receive shows.
std::size_t payload_len(std::uint32_t src, std::uint32_t dst, int phase)
{
    // Phase 0: small (one unit); phase 1: several fragments of the shm bcopy unit.
    return phase == 0 ? 100 + 37 * src + dst : 50000 + 1000 * src + 7 * dst;
}

struct endpoint {
    weft_info *info = nullptr;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
};

void open_endpoint(endpoint &e, const char *transport)
{
    weft_info *hints = weft_info_alloc();
    PMIX_TEST_CHECK(hints != nullptr, "weft_info_alloc");
    hints->caps = WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV;
    if (transport != nullptr) {
        std::snprintf(hints->transport, sizeof(hints->transport), "%s", transport);
    }
    PMIX_TEST_OK(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &e.info));
    weft_info_free(hints);
    PMIX_TEST_OK(weft_fabric_open(e.info, nullptr, &e.fabric));
    PMIX_TEST_OK(weft_domain_open(e.fabric, e.info, &e.domain));
    weft_cq_attr cq_attr{};
    cq_attr.format = WEFT_CQ_FORMAT_TAGGED;
    PMIX_TEST_OK(weft_cq_open(e.domain, &cq_attr, &e.cq));
    weft_av_attr av_attr{};
    PMIX_TEST_OK(weft_av_open(e.domain, &av_attr, &e.av));
    PMIX_TEST_OK(weft_ep_open(e.domain, e.info, &e.ep, nullptr));
    PMIX_TEST_OK(weft_ep_bind_cq(e.ep, e.cq, WEFT_TRANSMIT | WEFT_RECV));
    PMIX_TEST_OK(weft_ep_bind_av(e.ep, e.av));
    PMIX_TEST_OK(weft_ep_enable(e.ep));
}

void close_endpoint(endpoint &e)
{
    PMIX_TEST_OK(weft_ep_close(e.ep));
    PMIX_TEST_OK(weft_av_close(e.av));
    PMIX_TEST_OK(weft_cq_close(e.cq));
    PMIX_TEST_OK(weft_domain_close(e.domain));
    PMIX_TEST_OK(weft_fabric_close(e.fabric));
    weft_info_free(e.info);
}

/// Completions read from the CQ, claimed by context.
struct completions {
    struct item {
        weft_cq_tagged_entry e;
        weft_addr_t src;
    };
    std::vector<item> items;

    void poll(weft_cq_t *cq)
    {
        weft_cq_tagged_entry e[16];
        weft_addr_t src[16];
        for (;;) {
            const ssize_t n = weft_cq_readfrom(cq, e, 16, src);
            if (n == -WEFT_EAGAIN) {
                return;
            }
            if (n == -WEFT_EAVAIL) {
                weft_cq_err_entry err{};
                (void)weft_cq_readerr(cq, &err, 0);
                fail(__FILE__, __LINE__,
                     "error completion: " + std::string(weft_strerror(err.err)) + ": " +
                         std::string(err.err_str, strnlen(err.err_str, sizeof(err.err_str))));
            }
            PMIX_TEST_CHECK(n > 0, "weft_cq_readfrom returned " + std::to_string(n));
            for (ssize_t i = 0; i < n; ++i) {
                items.push_back({e[i], src[i]});
            }
        }
    }

    item wait(weft_cq_t *cq, void *context)
    {
        const auto start = std::chrono::steady_clock::now();
        for (;;) {
            for (auto it = items.begin(); it != items.end(); ++it) {
                if (it->e.op_context == context) {
                    const item found = *it;
                    items.erase(it);
                    return found;
                }
            }
            poll(cq);
            if (std::chrono::steady_clock::now() - start >
                std::chrono::milliseconds(wait_limit_ms)) {
                fail(__FILE__, __LINE__, "no completion within 30 s");
            }
            sched_yield();
        }
    }
};

void *ctx(std::uint64_t n)
{
    return reinterpret_cast<void *>(static_cast<std::uintptr_t>(0x10000 + n * 16));
}

template <typename F>
void post(completions &done, weft_cq_t *cq, const char *what, F fn)
{
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        const ssize_t rc = fn();
        if (rc == 0) {
            return;
        }
        PMIX_TEST_CHECK(rc == -WEFT_EAGAIN, std::string(what) + " returned " + std::to_string(rc) +
                                                " (" + weft_strerror(static_cast<int>(rc)) + ")");
        done.poll(cq);
        PMIX_TEST_CHECK(
            std::chrono::steady_clock::now() - start < std::chrono::milliseconds(wait_limit_ms),
            std::string(what) + ": -WEFT_EAGAIN for 30 s");
        sched_yield();
    }
}

/// Every rank sends a distinct payload to every other rank and receives one from
/// each. Directed: one receive per source. Any-source: size-1 receives for
/// WEFT_ADDR_UNSPEC; each source must be reported exactly once.
void exchange(endpoint &e, completions &done, std::uint32_t me, std::uint32_t n, int phase,
              bool directed)
{
    const std::uint64_t tag =
        (directed ? directed_tag : any_tag) | static_cast<std::uint64_t>(phase);
    std::size_t cap = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
        cap = std::max(cap, payload_len(s, me, phase));
    }
    std::vector<std::vector<unsigned char>> rbufs(n, std::vector<unsigned char>(cap + 64, 0xA5));
    std::vector<std::vector<unsigned char>> sbufs(n);
    const std::uint64_t base = (static_cast<std::uint64_t>(phase) * 2 + (directed ? 0 : 1)) * 1000;

    // Receives first, then sends: receives may also meet unexpected messages
    // from faster ranks, which is part of what this covers.
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p == me) {
            continue;
        }
        const weft_addr_t src = directed ? p : WEFT_ADDR_UNSPEC;
        post(done, e.cq, "weft_trecv", [&] {
            return weft_trecv(e.ep, rbufs[p].data(), cap, nullptr, src, tag, 0, ctx(base + p));
        });
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p == me) {
            continue;
        }
        const std::size_t len = payload_len(me, p, phase);
        sbufs[p].resize(len);
        for (std::size_t i = 0; i < len; ++i) {
            sbufs[p][i] = payload_byte(me, p, phase, i);
        }
        post(done, e.cq, "weft_tsend", [&] {
            return weft_tsend(e.ep, sbufs[p].data(), len, nullptr, p, tag, ctx(base + 500 + p));
        });
    }

    std::vector<int> seen(n, 0);
    for (std::uint32_t slot = 0; slot < n; ++slot) {
        if (slot == me) {
            continue;
        }
        const completions::item c = done.wait(e.cq, ctx(base + slot));
        const std::string where = std::string(directed ? "directed" : "any-source") + " receive " +
                                  std::to_string(slot) + " (phase " + std::to_string(phase) + ")";
        PMIX_TEST_CHECK(c.src < n && c.src != me,
                        where + ": source " + std::to_string(c.src) + " reported");
        if (directed) {
            PMIX_TEST_CHECK(c.src == slot, where + ": from rank " + std::to_string(c.src));
        }
        const auto src = static_cast<std::uint32_t>(c.src);
        ++seen[src];
        PMIX_TEST_CHECK(c.e.tag == tag, where + ": tag");
        PMIX_TEST_CHECK((c.e.flags & WEFT_RECV) != 0, where + ": flags");
        const std::size_t len = payload_len(src, me, phase);
        PMIX_TEST_CHECK(c.e.len == len, where + ": length " + std::to_string(c.e.len) +
                                            ", expected " + std::to_string(len) +
                                            " for a message from rank " + std::to_string(src));
        for (std::size_t i = 0; i < len; ++i) {
            PMIX_TEST_CHECK(rbufs[slot][i] == payload_byte(src, me, phase, i),
                            where + ": payload from rank " + std::to_string(src) +
                                " differs at byte " + std::to_string(i));
        }
        for (std::size_t i = len; i < cap + 64; ++i) {
            PMIX_TEST_CHECK(rbufs[slot][i] == 0xA5, where + ": written past the message");
        }
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p != me) {
            PMIX_TEST_CHECK(seen[p] == 1, "rank " + std::to_string(p) + " reported " +
                                              std::to_string(seen[p]) + " times");
            const completions::item s = done.wait(e.cq, ctx(base + 500 + p));
            PMIX_TEST_CHECK((s.e.flags & WEFT_SEND) != 0, "send completion flags");
        }
    }
}

/// All ranks meet: a zero-byte message to and from everyone. Nobody closes its
/// endpoint while a peer may still be sending to it.
void meet(endpoint &e, completions &done, std::uint32_t me, std::uint32_t n, std::uint64_t round)
{
    const std::uint64_t base = 100000 + round * 1000;
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p != me) {
            post(done, e.cq, "weft_trecv", [&] {
                return weft_trecv(e.ep, nullptr, 0, nullptr, p, done_tag | round, 0, ctx(base + p));
            });
        }
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p != me) {
            post(done, e.cq, "weft_tsend", [&] {
                return weft_tsend(e.ep, nullptr, 0, nullptr, p, done_tag | round,
                                  ctx(base + 500 + p));
            });
        }
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p != me) {
            (void)done.wait(e.cq, ctx(base + p));
            (void)done.wait(e.cq, ctx(base + 500 + p));
        }
    }
}

long env_long(const char *name, long dflt)
{
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : dflt;
}

}  // namespace

int main(int argc, char **argv)
{
    const char *transport = nullptr;
    bool expect_unreachable = false;
    long expect_size = -1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--transport" && i + 1 < argc) {
            transport = argv[++i];
        } else if (a == "--expect-size" && i + 1 < argc) {
            expect_size = std::strtol(argv[++i], nullptr, 10);
        } else if (a == "--expect-unreachable") {
            expect_unreachable = true;
        } else {
            std::fprintf(stderr,
                         "usage: %s [--transport NAME] [--expect-size N] [--expect-unreachable]\n",
                         argv[0]);
            return 2;
        }
    }

    endpoint e;
    open_endpoint(e, transport);
    std::uint32_t rank = UINT32_MAX;
    std::uint32_t size = 0;
    const int rc = weft_av_load_pmix(e.av, e.ep, &rank, &size);

    if (expect_unreachable) {
        PMIX_TEST_CHECK(rc == -WEFT_EHOSTUNREACH,
                        "weft_av_load_pmix without a launcher returned " + std::to_string(rc) +
                            " (" + weft_strerror(rc) + "), expected -WEFT_EHOSTUNREACH");
        PMIX_TEST_CHECK(weft_av_count(e.av) == 0, "the AV was filled after a failed load");
        close_endpoint(e);
        std::printf("ok: weft_av_load_pmix without a launcher returned %d (%s)\n", rc,
                    weft_strerror(rc));
        return 0;
    }

    PMIX_TEST_OK(rc);
    g_rank = static_cast<int>(rank);
    PMIX_TEST_CHECK(size >= 2, "job size " + std::to_string(size) + ": run with mpirun -np 2+");
    PMIX_TEST_CHECK(rank < size, "rank " + std::to_string(rank) + " >= size");
    if (expect_size >= 0) {
        PMIX_TEST_CHECK(
            size == static_cast<std::uint32_t>(expect_size),
            "job size " + std::to_string(size) + ", expected " + std::to_string(expect_size));
    }
    // The launcher tells each process its rank and the job size in the
    // environment too (PMIx and Open MPI names); they must agree.
    const long env_rank = env_long("PMIX_RANK", env_long("OMPI_COMM_WORLD_RANK", -1));
    const long env_size = env_long("OMPI_COMM_WORLD_SIZE", -1);
    PMIX_TEST_CHECK(
        env_rank < 0 || env_rank == static_cast<long>(rank),
        "PMIx rank " + std::to_string(rank) + ", launcher says " + std::to_string(env_rank));
    PMIX_TEST_CHECK(
        env_size < 0 || env_size == static_cast<long>(size),
        "PMIx size " + std::to_string(size) + ", launcher says " + std::to_string(env_size));

    // index == rank: our own entry is our own address.
    PMIX_TEST_CHECK(weft_av_count(e.av) == size, "AV count " + std::to_string(weft_av_count(e.av)));
    std::vector<unsigned char> mine(e.info->addr_len);
    std::vector<unsigned char> entry(e.info->addr_len);
    std::size_t len = mine.size();
    PMIX_TEST_OK(weft_ep_getname(e.ep, mine.data(), &len));
    mine.resize(len);  // an address has its own length, at most addr_len
    len = entry.size();
    PMIX_TEST_OK(weft_av_lookup(e.av, rank, entry.data(), &len));
    PMIX_TEST_CHECK(len == mine.size() && std::memcmp(mine.data(), entry.data(), len) == 0,
                    "AV entry at index == rank is not this endpoint's address");

    // A second load into a non-empty AV is refused before any collective, so one
    // rank can try it alone.
    if (rank == 0) {
        std::fprintf(stderr,
                     "test_pmix_av: loading a filled AV on purpose; one 'address vector "
                     "must be empty' error line is expected\n");
        PMIX_TEST_CHECK(weft_av_load_pmix(e.av, e.ep, nullptr, nullptr) == -WEFT_EINVAL,
                        "weft_av_load_pmix into a filled AV did not fail with -WEFT_EINVAL");
    }

    completions done;
    for (int phase = 0; phase < 2; ++phase) {
        exchange(e, done, rank, size, phase, true);
        exchange(e, done, rank, size, phase, false);
    }
    meet(e, done, rank, size, 0);
    PMIX_TEST_CHECK(done.items.empty(),
                    std::to_string(done.items.size()) + " completion(s) nobody waited for");

    // A second endpoint in the same process loads its own AV through PMIx: it must
    // get the second endpoints' addresses, not the first ones' again.
    endpoint e2;
    open_endpoint(e2, transport);
    std::uint32_t rank2 = UINT32_MAX;
    std::uint32_t size2 = 0;
    PMIX_TEST_OK(weft_av_load_pmix(e2.av, e2.ep, &rank2, &size2));
    PMIX_TEST_CHECK(rank2 == rank && size2 == size, "second load: rank/size differ");
    std::vector<unsigned char> mine2(e2.info->addr_len);
    len = mine2.size();
    PMIX_TEST_OK(weft_ep_getname(e2.ep, mine2.data(), &len));
    mine2.resize(len);
    PMIX_TEST_CHECK(mine2 != mine, "two endpoints have the same address");
    for (std::uint32_t r = 0; r < size; ++r) {
        std::vector<unsigned char> a1(e.info->addr_len);
        std::vector<unsigned char> a2(e2.info->addr_len);
        std::size_t l1 = a1.size();
        std::size_t l2 = a2.size();
        PMIX_TEST_OK(weft_av_lookup(e.av, r, a1.data(), &l1));
        PMIX_TEST_OK(weft_av_lookup(e2.av, r, a2.data(), &l2));
        PMIX_TEST_CHECK(
            l1 != l2 || std::memcmp(a1.data(), a2.data(), l1) != 0,
            "second load returned the first endpoint's address of rank " + std::to_string(r));
    }
    len = entry.size();
    PMIX_TEST_OK(weft_av_lookup(e2.av, rank, entry.data(), &len));
    PMIX_TEST_CHECK(len == mine2.size() && std::memcmp(mine2.data(), entry.data(), len) == 0,
                    "second AV entry at index == rank is not the second endpoint's address");
    completions done2;
    exchange(e2, done2, rank, size, 1, true);
    meet(e2, done2, rank, size, 1);
    close_endpoint(e2);
    close_endpoint(e);
    if (rank == 0) {
        std::printf(
            "ok: %u ranks exchanged directed and any-source messages (all pairs), "
            "and again through a second endpoint\n",
            size);
    }
    return 0;
}
