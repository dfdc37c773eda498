// Setup, exit, query, contexts and the machinery every routine uses: locating
// a symmetric address on a PE, waiting for a blocking operation, quiet
// (docs/shmem.md, "Runtime").

#include <link.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <shmemx.h>

#include "config.h"
#include "shmem/src/shmem_impl.hpp"

#ifdef WEFT_HAVE_PMIX
#include <pmix.h>
#endif

namespace weft::shmem {

state g;

namespace {

/// What every PE tells every other at init: where its segments are and their keys.
struct seg_blob {
    std::uint64_t base;
    std::uint64_t len;
    std::uint64_t key_len;
    unsigned char key[WEFT_MR_KEY_MAX];
};
struct init_blob {
    std::uint64_t magic;
    std::int32_t pe;
    std::int32_t npes;
    seg_blob segs[nsegs];
};
constexpr std::uint64_t init_magic = 0x776566742d73686dULL;  // "weft-shm"
constexpr std::uint64_t init_tag = 0x5348454d494e4954ULL;    // "SHEMINIT"

[[noreturn]] void die_before_init(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "shmem_init: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::fflush(stderr);
    std::exit(1);
}

/// SHMEM_SYMMETRIC_SIZE: a number with an optional K, M, G or T suffix (powers of 1024).
std::size_t parse_size(const char *name, const char *text)
{
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(text, &end);
    if (end == text || errno != 0 || v < 0) {
        die_before_init("%s=%s is not a size (a number with an optional K, M, G or T suffix)", name,
                        text);
    }
    double mult = 1;
    switch (*end) {
        case 'k':
        case 'K':
            mult = 1024.0;
            ++end;
            break;
        case 'm':
        case 'M':
            mult = 1024.0 * 1024;
            ++end;
            break;
        case 'g':
        case 'G':
            mult = 1024.0 * 1024 * 1024;
            ++end;
            break;
        case 't':
        case 'T':
            mult = 1024.0 * 1024 * 1024 * 1024;
            ++end;
            break;
        default:
            break;
    }
    if (*end == 'b' || *end == 'B') {
        ++end;
    }
    if (*end != '\0') {
        die_before_init("%s=%s: unexpected '%s' after the size", name, text, end);
    }
    return static_cast<std::size_t>(v * mult);
}

bool env_true(const char *name)
{
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0 && std::strcmp(v, "no") != 0 &&
           std::strcmp(v, "n") != 0 && std::strcmp(v, "false") != 0;
}

/// The program's writable data (.data and .bss, without the read-only-after-
/// relocation part): the first object dl_iterate_phdr reports is the program.
struct data_range {
    char *start = nullptr;
    char *end = nullptr;
};
int find_data(struct dl_phdr_info *info, std::size_t, void *arg)
{
    auto *r = static_cast<data_range *>(arg);
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    std::uintptr_t relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) != 0 && lo == 0) {
            lo = info->dlpi_addr + ph.p_vaddr;
            hi = lo + ph.p_memsz;
        } else if (ph.p_type == PT_GNU_RELRO) {
            relro_end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
        }
    }
    if (relro_end > lo && relro_end < hi) {
        // The part made read-only after relocation holds no program variable.
        lo = (relro_end + 4095) & ~std::uintptr_t{4095};
    }
    r->start = reinterpret_cast<char *>(lo);
    r->end = reinterpret_cast<char *>(hi);
    return 1;  // the program only
}

int drain(shmem_ctx_opaque *c, const char *routine)
{
    weft_cq_entry ent[16];
    const ssize_t n = weft_cq_read(c->cq, ent, 16);
    if (n > 0) {
        for (ssize_t i = 0; i < n; ++i) {
            if (ent[i].op_context != nullptr) {
                static_cast<token *>(ent[i].op_context)
                    ->done.store(true, std::memory_order_release);
            }
        }
        return static_cast<int>(n);
    }
    if (n == -WEFT_EAVAIL) {
        weft_cq_err_entry e;
        std::memset(&e, 0, sizeof(e));
        if (weft_cq_readerr(c->cq, &e, 0) == 1) {
            if (e.op_context != nullptr) {
                auto *t = static_cast<token *>(e.op_context);
                t->err.store(e.err != 0 ? e.err : WEFT_EIO, std::memory_order_relaxed);
                t->done.store(true, std::memory_order_release);
            } else {
                fatal(routine, "a non-blocking operation failed: %s (%s)", e.err_str,
                      weft_strerror(e.err));
            }
        }
        return 1;
    }
    if (n != -WEFT_EAGAIN) {
        weft_failed(routine, "weft_cq_read", n);
    }
    return 0;
}

/// Open `c`'s endpoint and CQ on the domain and the address vector.
void open_ctx(shmem_ctx_opaque *c, const char *routine)
{
    weft_cq_attr cq_attr;
    std::memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = WEFT_CQ_FORMAT_CONTEXT;
    long rc = weft_cq_open(g.domain, &cq_attr, &c->cq);
    if (rc != 0) {
        weft_failed(routine, "weft_cq_open", rc);
    }
    rc = weft_ep_open(g.domain, g.info, &c->ep, nullptr);
    if (rc != 0) {
        weft_failed(routine, "weft_ep_open", rc);
    }
    // Transmit completions only for operations that ask (blocking ones);
    // receives (the setup exchange) always complete.
    rc = weft_ep_bind_cq(c->ep, c->cq, WEFT_TRANSMIT | WEFT_SELECTIVE_COMPLETION);
    if (rc == 0) {
        rc = weft_ep_bind_cq(c->ep, c->cq, WEFT_RECV);
    }
    if (rc != 0) {
        weft_failed(routine, "weft_ep_bind_cq", rc);
    }
    rc = weft_ep_bind_av(c->ep, g.av);
    if (rc != 0) {
        weft_failed(routine, "weft_ep_bind_av", rc);
    }
    rc = weft_ep_enable(c->ep);
    if (rc != 0) {
        weft_failed(routine, "weft_ep_enable", rc);
    }
}

/// Unpack every PE's keys for `c` (the blobs of the init exchange).
void unpack_keys(shmem_ctx_opaque *c, const std::vector<init_blob> &blobs, const char *routine)
{
    c->keys.assign(std::size_t(nsegs) * std::size_t(g.npes), nullptr);
    for (int s = 0; s < nsegs; ++s) {
        for (int pe = 0; pe < g.npes; ++pe) {
            const seg_blob &b = blobs[std::size_t(pe)].segs[s];
            const long rc =
                weft_rkey_unpack(c->ep, weft_addr_t(pe), b.key, b.key_len,
                                 &c->keys[std::size_t(s) * std::size_t(g.npes) + std::size_t(pe)]);
            if (rc != 0) {
                weft_failed(routine, "weft_rkey_unpack", rc);
            }
        }
    }
}

std::vector<init_blob> g_blobs;  ///< kept for contexts created later

void close_ctx(shmem_ctx_opaque *c)
{
    if (!c->owns_ep) {
        c->keys.clear();  // the owner's
        c->ep = nullptr;
        c->cq = nullptr;
        return;
    }
    for (weft_rkey_t *k : c->keys) {
        (void)weft_rkey_release(k);
    }
    c->keys.clear();
    if (c->ep != nullptr) {
        (void)weft_ep_close(c->ep);
        c->ep = nullptr;
    }
    if (c->cq != nullptr) {
        (void)weft_cq_close(c->cq);
        c->cq = nullptr;
    }
}

void init_library(int requested, const char *routine)
{
    if (g.initialized) {
        return;  // shmem_init may be called more than once (1.5: later calls do nothing)
    }
    if (g.finalized) {
        die_before_init("%s after shmem_finalize: OpenSHMEM cannot be initialized again", routine);
    }
    g.thread_level = requested < SHMEM_THREAD_SINGLE     ? SHMEM_THREAD_SINGLE
                     : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                         : requested;
    g.debug = env_true("SHMEM_DEBUG");
    const char *sz = std::getenv("SHMEM_SYMMETRIC_SIZE");
    g.heap_size = sz != nullptr ? parse_size("SHMEM_SYMMETRIC_SIZE", sz) : (512UL << 20);
    g.heap_size = (g.heap_size + internal_reserved + 4095) & ~std::size_t{4095};

    weft_info *hints = weft_info_alloc();
    if (hints == nullptr) {
        die_before_init("out of memory");
    }
    hints->caps = WEFT_TAGGED | WEFT_DIRECTED_RECV | WEFT_RMA | WEFT_ATOMIC;
    const bool auto_progress = env_true("SHMEM_PROGRESS_THREAD");
    hints->domain_attr.progress = auto_progress ? WEFT_PROGRESS_AUTO : WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading =
        g.thread_level == SHMEM_THREAD_MULTIPLE ? WEFT_THREAD_SAFE : WEFT_THREAD_DOMAIN;
    long rc = weft_getinfo(WEFT_API_VERSION, hints, nullptr, &g.info);
    weft_info_free(hints);
    if (rc != 0) {
        die_before_init("weft_getinfo found no transport with tagged messages, RMA and atomics: %s",
                        weft_strerror(static_cast<int>(-rc)));
    }
    if ((rc = weft_fabric_open(g.info, nullptr, &g.fabric)) != 0 ||
        (rc = weft_domain_open(g.fabric, g.info, &g.domain)) != 0) {
        die_before_init("cannot open the weft fabric and domain: %s",
                        weft_strerror(static_cast<int>(-rc)));
    }
    weft_av_attr av_attr;
    std::memset(&av_attr, 0, sizeof(av_attr));
    if ((rc = weft_av_open(g.domain, &av_attr, &g.av)) != 0) {
        die_before_init("weft_av_open: %s", weft_strerror(static_cast<int>(-rc)));
    }
    g.world.is_default = true;
    g.npes = 1;  // until the address vector says; open_ctx's errors need a PE count
    open_ctx(&g.world, routine);
    std::uint32_t rank = 0;
    std::uint32_t size = 0;
    if ((rc = weft_av_load_pmix(g.av, g.world.ep, &rank, &size)) != 0) {
        die_before_init(
            "cannot learn the PEs from PMIx (%s): start the program with oshrun (or any PMIx "
            "launcher: mpirun, srun --mpi=pmix)",
            weft_strerror(static_cast<int>(-rc)));
    }
    g.me = static_cast<int>(rank);
    g.npes = static_cast<int>(size);
    g.inject = 4096;  // weft's RMA inject limit (weft.h, weft_inject_put)

    // The segments: the heap (mappable by node peers) and the program's data.
    segment &heap = g.segs[int(seg_id::heap)];
    segment &data = g.segs[int(seg_id::data)];
    constexpr std::uint64_t access = WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ |
                                     WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC;
    void *at = nullptr;
    if ((rc = weft_mr_alloc(g.domain, g.heap_size, access, 0, &at, &heap.mr)) != 0) {
        fatal(routine, "cannot allocate the symmetric heap of %zu bytes (SHMEM_SYMMETRIC_SIZE): %s",
              g.heap_size, weft_strerror(static_cast<int>(-rc)));
    }
    heap.base = static_cast<char *>(at);
    heap.len = g.heap_size;
    data_range dr;
    dl_iterate_phdr(&find_data, &dr);
    if (dr.start != nullptr && dr.end > dr.start) {
        data.base = dr.start;
        data.len = static_cast<std::size_t>(dr.end - dr.start);
        if ((rc = weft_mr_reg(g.domain, data.base, data.len, access, 0, &data.mr)) != 0) {
            fatal(routine, "cannot register the program's data segment (%p, %zu bytes): %s",
                  static_cast<void *>(data.base), data.len, weft_strerror(static_cast<int>(-rc)));
        }
    }

    // Every PE's segments, through the tagged messages of the default context.
    init_blob mine;
    std::memset(&mine, 0, sizeof(mine));
    mine.magic = init_magic;
    mine.pe = g.me;
    mine.npes = g.npes;
    for (int s = 0; s < nsegs; ++s) {
        mine.segs[s].base = reinterpret_cast<std::uintptr_t>(g.segs[s].base);
        mine.segs[s].len = g.segs[s].len;
        std::size_t klen = sizeof(mine.segs[s].key);
        if (g.segs[s].mr != nullptr) {
            if ((rc = weft_mr_pack_key(g.segs[s].mr, mine.segs[s].key, &klen)) != 0) {
                weft_failed(routine, "weft_mr_pack_key", rc);
            }
            mine.segs[s].key_len = klen;
        }
    }
    g_blobs.assign(std::size_t(g.npes), init_blob{});
    std::vector<token> recvs(std::size_t(g.npes));
    std::vector<token> sends(std::size_t(g.npes));
    for (int pe = 0; pe < g.npes; ++pe) {
        if (pe == g.me) {
            g_blobs[std::size_t(pe)] = mine;
            continue;
        }
        post(&g.world, routine, "weft_trecv", [&] {
            return weft_trecv(g.world.ep, &g_blobs[std::size_t(pe)], sizeof(init_blob), nullptr,
                              weft_addr_t(pe), init_tag, 0, &recvs[std::size_t(pe)]);
        });
    }
    for (int pe = 0; pe < g.npes; ++pe) {
        if (pe != g.me) {
            const iovec iov{&mine, sizeof(mine)};
            const weft_msg_tagged m{
                &iov, nullptr, 1, weft_addr_t(pe), init_tag, 0, &sends[std::size_t(pe)], 0};
            post(&g.world, routine, "weft_tsendmsg",
                 [&] { return weft_tsendmsg(g.world.ep, &m, WEFT_COMPLETION); });
        }
    }
    for (int pe = 0; pe < g.npes; ++pe) {
        if (pe == g.me) {
            continue;
        }
        wait(&g.world, recvs[std::size_t(pe)], routine);
        wait(&g.world, sends[std::size_t(pe)], routine);
        const init_blob &b = g_blobs[std::size_t(pe)];
        if (b.magic != init_magic || b.pe != pe || b.npes != g.npes) {
            fatal(routine, "PE %d sent a malformed setup message", pe);
        }
        for (int s = 0; s < nsegs; ++s) {
            if (b.segs[s].key_len > WEFT_MR_KEY_MAX) {
                fatal(routine, "PE %d sent a malformed setup message (key of %" PRIu64 " bytes)",
                      pe, b.segs[s].key_len);
            }
        }
        if (b.segs[int(seg_id::heap)].len != heap.len) {
            fatal(routine,
                  "PE %d has a symmetric heap of %" PRIu64
                  " bytes, this PE %zu: every PE must "
                  "have the same SHMEM_SYMMETRIC_SIZE",
                  pe, b.segs[int(seg_id::heap)].len, heap.len);
        }
        if (b.segs[int(seg_id::data)].len != data.len) {
            fatal(routine,
                  "PE %d has a data segment of %" PRIu64
                  " bytes, this PE %zu: every PE must run "
                  "the same program",
                  pe, b.segs[int(seg_id::data)].len, data.len);
        }
    }
    for (int s = 0; s < nsegs; ++s) {
        segment &sg = g.segs[s];
        sg.remote_base.assign(std::size_t(g.npes), 0);
        for (int pe = 0; pe < g.npes; ++pe) {
            sg.remote_base[std::size_t(pe)] = g_blobs[std::size_t(pe)].segs[s].base;
        }
    }
    unpack_keys(&g.world, g_blobs, routine);
    // Local pointers: ours, and node peers' mappable memory.
    for (int s = 0; s < nsegs; ++s) {
        segment &sg = g.segs[s];
        sg.mapped.assign(std::size_t(g.npes), nullptr);
        for (int pe = 0; pe < g.npes; ++pe) {
            if (pe == g.me) {
                sg.mapped[std::size_t(pe)] = sg.base;
            } else if (sg.len != 0) {
                sg.mapped[std::size_t(pe)] = static_cast<char *>(weft_rkey_ptr(
                    g.world.keys[std::size_t(s) * std::size_t(g.npes) + std::size_t(pe)],
                    sg.remote_base[std::size_t(pe)], sg.len));
            }
        }
    }
    heap_init(heap.base, heap.len, internal_reserved);
    init_teams();
    // Waiting: with a core per PE of this node, spin (a yield costs a system
    // call and, under load, the core: a 32 KiB ping-pong measured 6-8 us
    // through wait_until instead of 0.6); with more PEs than cores, yield
    // soon, or a waiter would spin away the time slice of the PE it waits for.
    // The node's CPUs, not this process's affinity: a PE bound to one core
    // (mpirun --bind-to core) still has that core to itself (counting its
    // mask made every bound 2-PE job yield: 8-byte ping-pong 0.33 -> 1.0 us).
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    // With SHMEM_THREAD_MULTIPLE the program's threads may outnumber the
    // cores too (the lock holder may be one that waits for a core).
    // SHMEM_WAIT_YIELD=1 says so outright, for "nodes" that share one
    // machine's cores (network namespaces: each counts all the cores; with
    // spinning waits the 13 test programs took 6 min on 4 PEs, 30 s on 2;
    // docs/multinode.md).
    const char *yield = std::getenv("SHMEM_WAIT_YIELD");
    const bool yield_set = yield != nullptr && *yield != '\0';
    g.spins_before_yield =
        (yield_set && env_true("SHMEM_WAIT_YIELD")) ||
                (!yield_set && (static_cast<long>(g.shared_team.pes.size()) > cores ||
                                g.thread_level == SHMEM_THREAD_MULTIPLE))
            ? 8
            : 1u << 20;
    // Contexts with endpoints of their own: every endpoint of every PE on a
    // node may send to each PE's endpoints, and a transport bounds how many
    // local senders one endpoint takes (shm: 256 by default), and each
    // endpoint holds receive buffers (verbs: its share of queue pairs and
    // bounce buffers; 128 of them ran a 1 GiB VM out of memory). So by
    // default a PE opens at most min(16, 128 / PEs on this node) and later
    // contexts share them.
    g.max_ctx_endpoints =
        std::max<std::size_t>(1, std::min<std::size_t>(16, 128 / g.shared_team.pes.size()));
    if (const char *v = std::getenv("SHMEM_CTX_ENDPOINTS"); v != nullptr && *v != '\0') {
        char *end = nullptr;
        const unsigned long n = std::strtoul(v, &end, 10);
        if (*end != '\0' || n > 4096) {
            fatal(routine, "SHMEM_CTX_ENDPOINTS=%s: not a number of endpoints in 0..4096", v);
        }
        g.max_ctx_endpoints = n;
    }
    g.initialized = true;
    if (g.me == 0 && env_true("SHMEM_VERSION")) {
        std::printf("OpenSHMEM %d.%d, %s (transport %s)\n", SHMEM_MAJOR_VERSION,
                    SHMEM_MINOR_VERSION, SHMEM_VENDOR_STRING, g.info->transport);
    }
    if (g.me == 0 && env_true("SHMEM_INFO")) {
        std::printf(
            "%s %d.%d environment variables:\n"
            "  SHMEM_VERSION          print the library version at start-up\n"
            "  SHMEM_INFO             print this text at start-up\n"
            "  SHMEM_SYMMETRIC_SIZE   bytes of symmetric heap per PE (K, M, G, T suffixes; now "
            "%zu)\n"
            "  SHMEM_DEBUG            more detail in error messages\n"
            "  SHMEM_PROGRESS_THREAD  1: a weft thread drives progress (default: calls do)\n"
            "  SHMEM_CTX_ENDPOINTS    contexts with an endpoint of their own; later ones share "
            "(now %zu)\n"
            "  SHMEM_WAIT_YIELD       1: waits yield the core soon, 0: they spin (default: yield "
            "when the node has more PEs than CPUs)\n"
            "  WEFT_*                 weft's own settings (weft_info -c)\n",
            SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, g.heap_size,
            g.max_ctx_endpoints);
    }
    std::fflush(stdout);
    sync_all(routine);
    // The predefined teams' collectives groups (every PE is in the world team
    // and in its node's shared team: each makes the world's first).
    team_coll_open(&g.world_team, routine);
    team_coll_open(&g.shared_team, routine);
}

}  // namespace

// ------------------------------------------------------------------ shared machinery

int create_ctx(const char *routine, long options, shmem_team_opaque *team, shmem_ctx_t *ctx)
{
    check_init(routine);
    if (ctx == nullptr) {
        fatal(routine, "ctx is NULL");
    }
    std::lock_guard<std::mutex> lock(g.ctl);
    shmem_ctx_opaque *c = nullptr;
    if (!g.spare_ctxs.empty()) {
        // A destroyed context's endpoint, quiet and connected: reused, so a
        // program that creates and destroys contexts in a loop does not open
        // and close endpoints (and their connections) every time.
        c = g.spare_ctxs.back();
        g.spare_ctxs.pop_back();
    } else {
        c = new (std::nothrow) shmem_ctx_opaque;
        if (c == nullptr) {
            *ctx = SHMEM_CTX_INVALID;
            return 1;
        }
        if (g.ep_owners.size() < g.max_ctx_endpoints) {
            open_ctx(c, routine);
            unpack_keys(c, g_blobs, routine);
            g.ep_owners.push_back(c);
        } else {
            // Past the endpoint budget: share one, round robin. Its quiet
            // then also completes the other contexts' operations (stronger
            // than needed), and its completions serve any of them (tokens).
            const shmem_ctx_opaque *o =
                g.ep_owners.empty() ? &g.world : g.ep_owners[g.next_shared++ % g.ep_owners.size()];
            c->ep = o->ep;
            c->cq = o->cq;
            c->keys = o->keys;
            c->owns_ep = false;
        }
    }
    c->options = options;
    c->team = team;
    g.ctxs.push_back(c);
    *ctx = c;
    return 0;
}

void fatal(const char *routine, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "OpenSHMEM error on PE %d in %s: %s\n", g.me, routine, msg);
    if (g.debug) {
        std::fprintf(stderr,
                     "  (PE %d of %d, pid %d; symmetric heap %p, %zu bytes; data segment %p, %zu "
                     "bytes)\n",
                     g.me, g.npes, static_cast<int>(getpid()), static_cast<void *>(g.segs[0].base),
                     g.segs[0].len, static_cast<void *>(g.segs[1].base), g.segs[1].len);
    }
    std::fflush(stderr);
    shmem_global_exit(1);
    std::abort();  // not reached
}

void weft_failed(const char *routine, const char *call, long rc)
{
    fatal(routine, "%s failed: %s (%ld)", call, weft_strerror(static_cast<int>(-rc)), rc);
}

void check_init(const char *routine)
{
    if (!g.initialized) [[unlikely]] {
        std::fprintf(stderr, "OpenSHMEM error in %s: %s\n", routine,
                     g.finalized ? "called after shmem_finalize" : "called before shmem_init");
        std::fflush(stderr);
        std::exit(1);
    }
}

shmem_ctx_opaque *ctx_of(const char *routine, shmem_ctx_t ctx)
{
    check_init(routine);
    if (ctx == nullptr) [[unlikely]] {
        fatal(routine, "the context is SHMEM_CTX_INVALID");
    }
    return ctx;
}

target locate(const shmem_ctx_opaque *c, const char *routine, const void *addr, std::size_t len,
              int pe)
{
    if (c->team != nullptr) [[unlikely]] {
        // A team's context: PE numbers are the team's.
        const auto n = static_cast<int>(c->team->pes.size());
        if (pe < 0 || pe >= n) {
            fatal(routine, "PE %d is not in the context's team (PEs are 0..%d)", pe, n - 1);
        }
        pe = c->team->pes[std::size_t(pe)];
    }
    check_pe(routine, pe);
    const char *p = static_cast<const char *>(addr);
    for (int s = 0; s < nsegs; ++s) {
        const segment &sg = g.segs[s];
        if (p >= sg.base && p < sg.base + sg.len) [[likely]] {
            const auto off = static_cast<std::size_t>(p - sg.base);
            if (len > sg.len - off) [[unlikely]] {
                fatal(routine,
                      "%zu bytes at %p run past the end of the symmetric %s (%zu bytes from %p)",
                      len, addr, s == 0 ? "heap" : "data segment", sg.len,
                      static_cast<void *>(sg.base));
            }
            char *m = sg.mapped[std::size_t(pe)];
            return {m != nullptr ? m + off : nullptr, sg.remote_base[std::size_t(pe)] + off,
                    c->keys[std::size_t(s) * std::size_t(g.npes) + std::size_t(pe)]};
        }
    }
    if (len == 0) {
        return {nullptr, 0, nullptr};  // nothing is accessed
    }
    fatal(routine,
          "%p is not a symmetric address (neither in the symmetric heap %p + %zu nor in the data "
          "segment %p + %zu)",
          addr, static_cast<void *>(g.segs[0].base), g.segs[0].len,
          static_cast<void *>(g.segs[1].base), g.segs[1].len);
}

void backoff::pause()
{
    if (++spins > g.spins_before_yield) {
        sched_yield();
    }
}

void progress(shmem_ctx_opaque *c)
{
    if (c != &g.world) {
        (void)drain(c, "progress");
    }
    (void)drain(&g.world, "progress");
}

void wait(shmem_ctx_opaque *c, token &t, const char *routine)
{
    backoff b;
    while (!t.done.load(std::memory_order_acquire)) {
        if (drain(c, routine) == 0 && c != &g.world) {
            (void)drain(&g.world, routine);
        }
        if (!t.done.load(std::memory_order_acquire)) {
            b.pause();
        }
    }
    if (const int err = t.err.load(std::memory_order_relaxed); err != 0) [[unlikely]] {
        fatal(routine, "the operation failed: %s", weft_strerror(err));
    }
}

void quiet(shmem_ctx_opaque *c, const char *routine)
{
    // Stores to mapped memory are complete once they leave this core's store
    // buffer: with nothing posted to the endpoint since the last quiet, that
    // fence is the whole quiet. With SHMEM_THREAD_MULTIPLE another thread may
    // have taken the flag while its flush still runs: always flush then.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (g.thread_level != SHMEM_THREAD_MULTIPLE &&
        !c->posted.exchange(false, std::memory_order_relaxed)) {
        return;
    }
    if (c == &g.world) {
        const long rc = weft_ep_flush(c->ep, -1);
        if (rc != 0) {
            weft_failed(routine, "weft_ep_flush", rc);
        }
    } else {
        // Another context's flush drives only its own endpoint; peers may be
        // waiting for this PE's default endpoint to serve their operations
        // meanwhile (they quiet too): drive it between attempts.
        backoff b;
        for (;;) {
            const long rc = weft_ep_flush(c->ep, 0);
            if (rc == 0) {
                break;
            }
            if (rc != -WEFT_ETIMEDOUT) {
                weft_failed(routine, "weft_ep_flush", rc);
            }
            progress(&g.world);
            b.pause();
        }
    }
    // Errors of non-blocking operations come as error completions: report them.
    while (drain(c, routine) != 0) {
    }
}

}  // namespace weft::shmem

using namespace weft::shmem;

// ------------------------------------------------------------------ the C API

extern "C" {

shmem_ctx_t const SHMEM_CTX_DEFAULT = &weft::shmem::g.world;

void shmem_init(void)
{
    init_library(SHMEM_THREAD_SINGLE, "shmem_init");
}

int shmem_init_thread(int requested, int *provided)
{
    init_library(requested, "shmem_init_thread");
    if (provided != nullptr) {
        *provided = g.thread_level;
    }
    return 0;
}

void shmem_query_thread(int *provided)
{
    check_init("shmem_query_thread");
    if (provided != nullptr) {
        *provided = g.thread_level;
    }
}

void shmem_finalize(void)
{
    if (!g.initialized) {
        return;
    }
    shmem_barrier_all();
    // Teams' collectives groups (the program's teams not destroyed too): every
    // member is past its last collective, the barrier above being the world's.
    while (!g.teams.empty()) {
        team_coll_close(g.teams.back());
    }
    for (auto *list : {&g.ctxs, &g.spare_ctxs}) {
        for (shmem_ctx_opaque *c : *list) {
            close_ctx(c);
            delete c;
        }
        list->clear();
    }
    g.ep_owners.clear();
    close_ctx(&g.world);
    for (segment &sg : g.segs) {
        if (sg.mr != nullptr) {
            (void)weft_mr_close(sg.mr);
            sg.mr = nullptr;
        }
    }
    (void)weft_av_close(g.av);
    (void)weft_domain_close(g.domain);
    (void)weft_fabric_close(g.fabric);
    weft_info_free(g.info);
    g.initialized = false;
    g.finalized = true;
}

void shmem_global_exit(int status)
{
    std::fflush(stdout);
    std::fflush(stderr);
#ifdef WEFT_HAVE_PMIX
    // Ends every PE of the job (the launcher kills the others).
    if (PMIx_Initialized()) {
        (void)PMIx_Abort(status, "shmem_global_exit", nullptr, 0);
    }
#endif
    std::_Exit(status);
}

int shmem_my_pe(void)
{
    check_init("shmem_my_pe");
    return g.me;
}

int shmem_n_pes(void)
{
    check_init("shmem_n_pes");
    return g.npes;
}

int shmem_pe_accessible(int pe)
{
    check_init("shmem_pe_accessible");
    return pe >= 0 && pe < g.npes ? 1 : 0;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    check_init("shmem_addr_accessible");
    if (pe < 0 || pe >= g.npes) {
        return 0;
    }
    const char *p = static_cast<const char *>(addr);
    for (const segment &sg : g.segs) {
        if (p >= sg.base && p < sg.base + sg.len) {
            return 1;
        }
    }
    return 0;
}

void *shmem_ptr(const void *dest, int pe)
{
    check_init("shmem_ptr");
    if (pe < 0 || pe >= g.npes) {
        return nullptr;
    }
    const char *p = static_cast<const char *>(dest);
    for (const segment &sg : g.segs) {
        if (p >= sg.base && p < sg.base + sg.len) {
            char *m = sg.mapped[std::size_t(pe)];
            return m != nullptr ? m + (p - sg.base) : nullptr;
        }
    }
    return nullptr;
}

void shmem_info_get_version(int *major, int *minor)
{
    if (major != nullptr) {
        *major = SHMEM_MAJOR_VERSION;
    }
    if (minor != nullptr) {
        *minor = SHMEM_MINOR_VERSION;
    }
}

void shmem_info_get_name(char *name)
{
    if (name != nullptr) {
        std::snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
    }
}

void shmem_pcontrol(const int level, ...)
{
    (void)level;  // no profile to control
}

double shmemx_wtime(void)
{
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void shmemx_register_gettid(std::uint64_t (*gettid_fn)(void))
{
    (void)gettid_fn;  // weft needs no thread names
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return create_ctx("shmem_ctx_create", options, nullptr, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    check_init("shmem_ctx_destroy");
    if (ctx == SHMEM_CTX_INVALID) {
        return;  // 1.5: destroying SHMEM_CTX_INVALID does nothing
    }
    if (ctx == SHMEM_CTX_DEFAULT) {
        fatal("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    quiet(ctx, "shmem_ctx_destroy");
    std::lock_guard<std::mutex> lock(g.ctl);
    for (auto it = g.ctxs.begin(); it != g.ctxs.end(); ++it) {
        if (*it == ctx) {
            g.ctxs.erase(it);
            g.spare_ctxs.push_back(ctx);  // nothing in flight: reused by the next create
            return;
        }
    }
    fatal("shmem_ctx_destroy", "%p is not a context of this PE", static_cast<void *>(ctx));
}

}  // extern "C"
