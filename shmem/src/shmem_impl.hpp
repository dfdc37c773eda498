#pragma once
// The OpenSHMEM library's internals (docs/shmem.md), over weft.h only.
//
// A PE is one weft endpoint per context, all bound to one address vector whose
// index is the PE number (loaded from PMIx). Symmetric memory is two segments:
// the heap (weft_mr_alloc: node peers map it, so same-node RMA and atomics on
// it are loads, stores and CPU atomics) and the program's data segment
// (weft_mr_reg). Every PE knows every PE's base address, packed key and, where
// it can map the memory, a local pointer to it: locate() turns a local
// symmetric address into one of those for a PE, or reports a clear error.

#include <shmem.h>
#include <weft/coll.h>
#include <weft/weft.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

/// A team: its members as world PEs, this PE's index, its synchronization slot.
struct shmem_team_opaque {
    std::vector<int> pes;
    int me = -1;
    int slot = -1;
    shmem_team_config_t config{};
    bool predefined = false;
    /// The team as a collectives group (team_coll.cpp), on a context of its own.
    weft_coll_context_t *coll_ctx = nullptr;
    weft_coll_group_t *coll = nullptr;
    std::mutex coll_mu;  ///< SHMEM_THREAD_MULTIPLE: one thread at a time in coll_ctx
};

/// A communication context: its own endpoint (an ordering and completion
/// domain), with every PE's keys unpacked for it.
struct shmem_ctx_opaque {
    weft_ep_t *ep = nullptr;
    weft_cq_t *cq = nullptr;
    std::vector<weft_rkey_t *> keys;  ///< keys[segment * npes + pe]
    long options = 0;
    bool is_default = false;
    shmem_team_opaque *team = nullptr;  ///< PE numbers are this team's (nullptr: the world's)
    /// This context opened ep and cq (and unpacked keys): it closes them. A
    /// context past SHMEM_CTX_ENDPOINTS shares another's instead.
    bool owns_ep = true;
    /// An operation went to the endpoint since the last quiet (below
    /// SHMEM_THREAD_MULTIPLE, a quiet without one is a memory fence).
    std::atomic<bool> posted{false};
};

namespace weft::shmem {

/// The symmetric segments, in lookup order.
enum class seg_id : int { heap = 0, data = 1 };
inline constexpr int nsegs = 2;

/// One symmetric segment: this PE's memory, and where it is on every PE.
struct segment {
    char *base = nullptr;
    std::size_t len = 0;
    weft_mr_t *mr = nullptr;
    std::vector<std::uint64_t> remote_base;  ///< by PE: its base address
    std::vector<char *> mapped;              ///< by PE: a local pointer to its base, or nullptr
};

/// The library's state (one per process).
struct state {
    bool initialized = false;
    bool finalized = false;
    int me = -1;
    int npes = 0;
    int thread_level = SHMEM_THREAD_SINGLE;
    bool debug = false;  ///< SHMEM_DEBUG: say more on errors
    std::size_t heap_size = 0;
    std::size_t inject = 0;  ///< the RMA inject limit: blocking puts up to this copy and return
    weft_info *info = nullptr;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_av_t *av = nullptr;
    shmem_ctx_opaque world;  ///< SHMEM_CTX_DEFAULT
    segment segs[nsegs];
    std::mutex ctl;                        ///< control path: the heap allocator, context creation
    std::vector<shmem_ctx_opaque *> ctxs;  ///< contexts created by the program
    std::vector<shmem_ctx_opaque *> spare_ctxs;  ///< destroyed ones, kept for reuse
    std::vector<shmem_ctx_opaque *> ep_owners;   ///< contexts with endpoints of their own
    std::size_t max_ctx_endpoints = 0;           ///< SHMEM_CTX_ENDPOINTS
    std::size_t next_shared = 0;                 ///< round robin over ep_owners
    shmem_team_opaque world_team;                ///< SHMEM_TEAM_WORLD
    shmem_team_opaque shared_team;               ///< SHMEM_TEAM_SHARED
    std::uint64_t used_slots = 0;                ///< team slots this PE's teams hold
    std::mutex teams_mu;                         ///< guards `teams`
    std::vector<shmem_team_opaque *> teams;      ///< teams with a collectives group
    unsigned spins_before_yield = 8;             ///< backoff: polls before each wait yields
};

extern state g;

/// Where one access goes: a local pointer (node peer or self: loads and
/// stores), or a remote address and key (weft RMA and atomics).
struct target {
    char *ptr;
    std::uint64_t addr;
    weft_rkey_t *key;
};

/// Report a fatal error in `routine` and end the job (shmem_global_exit(1)).
[[noreturn, gnu::format(printf, 2, 3)]] void fatal(const char *routine, const char *fmt, ...);
/// The library must be initialized (and not finalized) to use `routine`.
void check_init(const char *routine);
/// A valid PE number for `routine`.
inline void check_pe(const char *routine, int pe)
{
    if (pe < 0 || pe >= g.npes) [[unlikely]] {
        fatal(routine, "PE %d does not exist (PEs are 0..%d)", pe, g.npes - 1);
    }
}
/// The context handle's object (SHMEM_CTX_DEFAULT included).
shmem_ctx_opaque *ctx_of(const char *routine, shmem_ctx_t ctx);
/// Create a context whose PE numbers are `team`'s (nullptr: the world's).
int create_ctx(const char *routine, long options, shmem_team_opaque *team, shmem_ctx_t *ctx);
/// Set up SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED (at init).
void init_teams();
/// A valid team of which this PE is a member, or nullptr (the routine fails).
shmem_team_opaque *team_member(const char *routine, shmem_team_t team);
/// Make the team's collectives group (every member calls it; team_coll.cpp).
void team_coll_open(shmem_team_opaque *t, const char *routine);
/// Free it (local; after the members' last collective on the team).
void team_coll_close(shmem_team_opaque *t);
/// Run a collective on the team's group (WEFT_COLL_SYMMETRIC added): 0, or
/// -1 with a message on stderr.
int team_coll(shmem_team_opaque *t, const char *routine, weft_coll_args &a);
/// Locate [addr, addr + len) of PE `pe` for context `c`; fatal when the range is
/// not symmetric.
target locate(const shmem_ctx_opaque *c, const char *routine, const void *addr, std::size_t len,
              int pe);
/// A weft call failed in `routine`: fatal, with weft's reason.
[[noreturn]] void weft_failed(const char *routine, const char *call, long rc);

/// Drive progress of the default context (the endpoint peers target) and `c`.
void progress(shmem_ctx_opaque *c);
/// A read through a mapping (get, fetching atomic) may sit in a polling loop
/// (`while (shmem_g(&flag, pe) == 0)`) while a peer waits for this PE to serve
/// its operation on the data segment: such reads drive progress every 16th time.
inline void poll_progress()
{
    thread_local unsigned countdown = 16;
    if (--countdown == 0) [[unlikely]] {
        countdown = 16;
        progress(&g.world);
    }
}
/// Complete every operation posted on `c` (shmem_ctx_quiet).
void quiet(shmem_ctx_opaque *c, const char *routine);

/// A blocking operation's completion, its address the operation's context.
/// Any thread that reads the CQ may finish another thread's token
/// (SHMEM_THREAD_MULTIPLE): err is written before done is released.
struct token {
    std::atomic<bool> done{false};
    std::atomic<int> err{0};
};
/// Wait for `t` (posted on `c` with WEFT_COMPLETION), driving progress.
void wait(shmem_ctx_opaque *c, token &t, const char *routine);

/// Retry a weft post while it answers -WEFT_EAGAIN, driving progress.
template <class Post>
void post(shmem_ctx_opaque *c, const char *routine, const char *call, Post &&p)
{
    for (;;) {
        const long rc = static_cast<long>(p());
        if (rc == 0) [[likely]] {
            c->posted.store(true, std::memory_order_relaxed);
            return;
        }
        if (rc != -WEFT_EAGAIN) {
            weft_failed(routine, call, rc);
        }
        progress(c);
    }
}

/// Spin politely: the first polls are tight, then each yields the core (PEs
/// may outnumber cores).
struct backoff {
    unsigned spins = 0;
    void pause();
};

/// Poll `done` with progress of the default context in between (peers may
/// need this PE meanwhile) until it holds.
template <class Pred>
void spin(Pred done)
{
    backoff b;
    while (!done()) {
        progress(&g.world);
        b.pause();
    }
}

// ------------------------------------------------------------------ operations

void put(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::size_t len,
         int pe, bool nbi);
void get(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::size_t len,
         int pe, bool nbi);
void iput(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::ptrdiff_t dst,
          std::ptrdiff_t sst, std::size_t nelems, std::size_t size, int pe);
void iget(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::ptrdiff_t dst,
          std::ptrdiff_t sst, std::size_t nelems, std::size_t size, int pe);
void put_signal(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src,
                std::size_t len, std::uint64_t *sig_addr, std::uint64_t signal, int sig_op, int pe,
                bool nbi);

/// The weft datatype of an AMO type.
template <class T>
constexpr weft_datatype datatype_of() noexcept
{
    if constexpr (std::is_same_v<T, float>) {
        return WEFT_FLOAT;
    } else if constexpr (std::is_same_v<T, double>) {
        return WEFT_DOUBLE;
    } else if constexpr (sizeof(T) == 4) {
        return std::is_signed_v<T> ? WEFT_INT32 : WEFT_UINT32;
    } else {
        static_assert(sizeof(T) == 8, "AMO types are 4 or 8 bytes");
        return std::is_signed_v<T> ? WEFT_INT64 : WEFT_UINT64;
    }
}

/// One atomic on PE `pe`'s `dest`: `op` with `operand` (and `compare` for
/// WEFT_CSWAP); the old value to `result` when it is not null. nbi: the
/// result is valid after the next quiet.
void amo(shmem_ctx_opaque *c, const char *routine, weft_atomic_op op, weft_datatype dt,
         std::size_t size, void *dest, const void *operand, const void *compare, void *result,
         int pe, bool nbi);

/// The dissemination barrier over every PE over symmetric flags (start-up,
/// before the teams' collectives groups exist).
void sync_all(const char *routine);
/// The world team's barrier through the collectives library (shmem_sync_all;
/// barrier_all quiets first); fatal when it fails.
void world_barrier(const char *routine);

// ------------------------------------------------------------------ the symmetric heap

/// Allocate `len` bytes aligned to `align` from the heap (collective: every PE
/// makes the same calls in the same order, so the offsets agree). nullptr when
/// the heap is full.
void *heap_alloc(std::size_t len, std::size_t align);
void heap_free(void *p);
/// Bytes usable at `p` (an allocation).
std::size_t heap_size_of(void *p);
/// Set up the allocator over [base + reserved, base + len).
void heap_init(char *base, std::size_t len, std::size_t reserved);

/// A group's symmetric words, by index: the same layout in a team's slot and
/// in an active set's pSync (SHMEM_SYNC_SIZE longs).
enum word : int {
    word_count = 64,   ///< collect: this PE's contribution in bytes
    word_mask = 65,    ///< team splits: this PE's free slots (teams only)
    word_bcast = 66,   ///< pushed broadcasts that arrived here
    word_reduce = 67,  ///< pushed reduction contributions that arrived (active sets)
    word_flags = 68,   ///< active sets: a flag per pushing member (reductions)
};
inline constexpr int max_flags = SHMEM_SYNC_SIZE - word_flags;

/// A team's symmetric synchronization words (one slot per team a PE is in).
struct team_words {
    std::int64_t round[64];  ///< counting dissemination: round k's arrivals
    std::int64_t count;      ///< word_count
    std::int64_t mask;       ///< word_mask
    std::int64_t bcast;      ///< word_bcast
    std::int64_t reduce[2];  ///< word_reduce, word_reduce + 1
    std::int64_t pad[3];
};
static_assert(sizeof(team_words) == 576);
static_assert(offsetof(team_words, reduce) == word_reduce * sizeof(std::int64_t));
static_assert(word_reduce + 1 < SHMEM_SYNC_SIZE);
inline constexpr int max_teams = 64;  ///< slots; 0 is SHMEM_TEAM_WORLD, 1 SHMEM_TEAM_SHARED

/// Bytes of a team slot's scratch: the out-of-band exchange that makes the
/// team's collectives group (team_coll.cpp) goes through it.
inline constexpr std::size_t team_scratch = 8192;

/// Internal symmetric words at the start of the heap.
struct internal_area {
    std::uint64_t barrier_flags[64];  ///< shmem_barrier_all: round k's flag
    team_words teams[max_teams];
    alignas(64) char scratch[max_teams][team_scratch];  ///< by team slot
};
inline internal_area *internal() noexcept
{
    return reinterpret_cast<internal_area *>(g.segs[0].base);
}
inline constexpr std::size_t internal_reserved = 1024 * 1024;
static_assert(sizeof(internal_area) <= internal_reserved);

/// PEs taking part in a collective, and the symmetric words it synchronizes
/// with: a team's slot, or an active set's pSync (base SHMEM_SYNC_VALUE).
struct group {
    const int *pes;       ///< world PE of each member
    int n;                ///< members
    int me;               ///< this PE's index
    std::int64_t *words;  ///< round k at words[k], then `enum word`
    std::int64_t base;    ///< the words' resting value
    /// The symmetric buffer small reductions push into (an active set's
    /// pWrk), or nullptr.
    char *scratch = nullptr;
    std::size_t scratch_len = 0;  ///< its bytes
};
/// Counting dissemination barrier over the group (no quiet).
void group_sync(const group &gr, const char *routine);
/// A team's members and its slot's symmetric words as a group.
group team_group(shmem_team_opaque *t);

}  // namespace weft::shmem
