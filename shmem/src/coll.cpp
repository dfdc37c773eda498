// Teams and the deprecated active-set collectives (docs/shmem.md, "Teams and
// collectives"). Team collectives go through the collectives library
// (team_coll.cpp); this file makes and destroys teams, and runs the active-set
// routines (shmem_broadcast64, shmem_long_sum_to_all, ...) whose pSync and
// pWrk are the only memory they may use.
//
// Every active-set collective pulls: the members meet (a counting
// dissemination barrier over the set's pSync), each reads what it needs from
// the others' symmetric source buffers -- memcpy from node peers' mapped
// heaps, weft gets otherwise -- and the members meet again before anyone may
// change a source. Small broadcasts and reductions push instead (one signal
// per member). On a node a broadcast or reduction is one copy per member.

#include <complex>
#include <cstring>
#include <vector>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

// ------------------------------------------------------------------ synchronization

namespace {

/// Wait until `*w` holds at least `want` arrivals above the resting value,
/// then take them (the word is back at rest once every arrival is taken).
void await_arrivals(const group &gr, std::int64_t *w, std::int64_t want)
{
    spin([&] { return __atomic_load_n(w, __ATOMIC_ACQUIRE) >= gr.base + want; });
    __atomic_fetch_sub(w, want, __ATOMIC_ACQ_REL);
}

}  // namespace

void group_sync(const group &gr, const char *routine)
{
    // Round k: add one to round k's word of member me + 2^k, wait for one
    // arrival in ours, take it. Counting (not flags) lets a member already in
    // the next synchronization arrive early without being lost, and leaves
    // every word at its resting value once everyone is through.
    const std::int64_t one = 1;
    int k = 0;
    for (int dist = 1; dist < gr.n; dist <<= 1, ++k) {
        const int to = gr.pes[(gr.me + dist) % gr.n];
        amo(&g.world, routine, WEFT_SUM, WEFT_INT64, sizeof(std::int64_t), &gr.words[k], &one,
            nullptr, nullptr, to, false);
        await_arrivals(gr, &gr.words[k], 1);
    }
}

group team_group(shmem_team_opaque *t)
{
    internal_area *in = internal();
    return {t->pes.data(), static_cast<int>(t->pes.size()), t->me, in->teams[t->slot].round, 0};
}

namespace {

/// Members of an active set: PE_start + i * 2^logPE_stride.
/// The member list lives in per-thread storage that the next active-set
/// collective of the thread reuses (collectives do not nest): no allocation
/// per call once the largest set has been seen.
struct active_set {
    group gr;
};
active_set active_of(const char *routine, int start, int log_stride, int size, long *psync)
{
    check_init(routine);
    if (size < 1 || start < 0 || log_stride < 0 || log_stride > 30 ||
        start + (std::int64_t(size) - 1) * (std::int64_t(1) << log_stride) >= g.npes) {
        fatal(routine,
              "the active set (PE_start %d, logPE_stride %d, PE_size %d) is not within "
              "PEs 0..%d",
              start, log_stride, size, g.npes - 1);
    }
    if (psync == nullptr) {
        fatal(routine, "pSync is NULL");
    }
    thread_local std::vector<int> pes;
    pes.resize(std::size_t(size));
    active_set a;
    int me = -1;
    for (int i = 0; i < size; ++i) {
        pes[std::size_t(i)] = start + i * (1 << log_stride);
        if (pes[std::size_t(i)] == g.me) {
            me = i;
        }
    }
    if (me < 0) {
        fatal(routine,
              "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)", start,
              log_stride, size);
    }
    (void)locate(&g.world, routine, psync, SHMEM_SYNC_SIZE * sizeof(long), g.me);
    a.gr = {pes.data(), size, me, reinterpret_cast<std::int64_t *>(psync), SHMEM_SYNC_VALUE};
    a.gr.scratch = nullptr;
    return a;
}

/// An active-set reduction's pWrk (max(nreduce / 2 + 1,
/// SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements, free while the call runs, like
/// pSync) is the buffer small reductions push into.
void with_work(active_set &a, void *pwrk, std::size_t elem, std::size_t n)
{
    const std::size_t half = n / 2 + 1;
    const std::size_t len =
        elem * (half > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? half : SHMEM_REDUCE_MIN_WRKDATA_SIZE);
    // Not symmetric (against the rules, but the pull algorithm does not need
    // it): pull then.
    const auto *p = static_cast<const char *>(pwrk);
    bool symmetric = false;
    for (const segment &sg : g.segs) {
        symmetric = symmetric ||
                    (p >= sg.base && len <= sg.len && std::size_t(p - sg.base) <= sg.len - len);
    }
    if (!symmetric) {
        return;
    }
    a.gr.scratch = static_cast<char *>(pwrk);
    a.gr.scratch_len = len;
}

/// Read `len` bytes at symmetric `src` of member `j` into `dst`.
void pull(const group &gr, const char *routine, void *dst, const void *src, std::size_t len, int j)
{
    if (j == gr.me) {
        if (dst != src) {
            std::memmove(dst, src, len);
        }
        return;
    }
    get(&g.world, routine, dst, src, len, gr.pes[j], false);
}

// ------------------------------------------------------------------ the algorithms

/// Broadcasts whose bytes times receivers are at most this are pushed by the
/// root (one signal per member) rather than pulled (two synchronizations).
constexpr std::size_t push_bcast_max = 256 * 1024;

void broadcast(const group &gr, const char *routine, void *dest, const void *source,
               std::size_t len, int root)
{
    if (root < 0 || root >= gr.n) {
        fatal(routine, "PE_root %d is not a member (0..%d)", root, gr.n - 1);
    }
    std::int64_t *arrived = &gr.words[word_bcast];
    if (len * std::size_t(gr.n - 1) <= push_bcast_max) {
        // Every dest is ready when the broadcast starts (the routine's
        // precondition), so the root writes them at once, each followed by a
        // signal; the root's source is reusable when its puts return.
        if (gr.me == root) {
            for (int j = 0; j < gr.n; ++j) {
                if (j != root) {
                    put_signal(&g.world, routine, dest, source, len,
                               reinterpret_cast<std::uint64_t *>(arrived), 1, SHMEM_SIGNAL_ADD,
                               gr.pes[j], false);
                }
            }
        } else {
            await_arrivals(gr, arrived, 1);
        }
        return;
    }
    group_sync(gr, routine);  // the root's source is ready, every dest is free
    if (gr.me != root) {
        get(&g.world, routine, dest, source, len, gr.pes[root], false);
    }
    group_sync(gr, routine);  // the root may change its source again
}

void fcollect(const group &gr, const char *routine, void *dest, const void *source, std::size_t len)
{
    group_sync(gr, routine);
    for (int j = 0; j < gr.n; ++j) {
        pull(gr, routine, static_cast<char *>(dest) + std::size_t(j) * len, source, len, j);
    }
    group_sync(gr, routine);
}

void collect(const group &gr, const char *routine, void *dest, const void *source, std::size_t len)
{
    std::int64_t *count = &gr.words[word_count];
    __atomic_store_n(count, static_cast<std::int64_t>(len), __ATOMIC_RELEASE);
    group_sync(gr, routine);
    std::size_t at = 0;
    for (int j = 0; j < gr.n; ++j) {
        std::int64_t theirs = 0;
        pull(gr, routine, &theirs, count, sizeof(theirs), j);
        if (theirs < 0) {
            fatal(routine, "member %d sent a negative length", j);
        }
        pull(gr, routine, static_cast<char *>(dest) + at, source, std::size_t(theirs), j);
        at += std::size_t(theirs);
    }
    group_sync(gr, routine);
    __atomic_store_n(count, gr.base, __ATOMIC_RELAXED);
}

void alltoalls(const group &gr, const char *routine, void *dest, const void *source,
               std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems, std::size_t size)
{
    group_sync(gr, routine);
    for (int j = 0; j < gr.n; ++j) {
        // Block `me` of member j's source lands in block j of our dest.
        auto *d = static_cast<char *>(dest) +
                  std::ptrdiff_t(j) * std::ptrdiff_t(nelems) * dst * std::ptrdiff_t(size);
        const auto *s = static_cast<const char *>(source) +
                        std::ptrdiff_t(gr.me) * std::ptrdiff_t(nelems) * sst * std::ptrdiff_t(size);
        if (dst == 1 && sst == 1) {
            pull(gr, routine, d, s, nelems * size, j);
        } else if (j == gr.me) {
            for (std::size_t i = 0; i < nelems; ++i) {
                std::memmove(d + std::ptrdiff_t(i) * dst * std::ptrdiff_t(size),
                             s + std::ptrdiff_t(i) * sst * std::ptrdiff_t(size), size);
            }
        } else {
            iget(&g.world, routine, d, s, dst, sst, nelems, size, gr.pes[j]);
        }
    }
    group_sync(gr, routine);
}

enum class red_op { and_, or_, xor_, max, min, sum, prod };

/// acc[i] = f(acc[i], v[i]): one loop per operation, which the compiler vectorizes.
template <class T, class F>
void combine_with(T *acc, const T *v, std::size_t n, F f)
{
    for (std::size_t i = 0; i < n; ++i) {
        acc[i] = static_cast<T>(f(acc[i], v[i]));
    }
}

template <class T>
void combine(red_op op, T *acc, const T *v, std::size_t n)
{
    constexpr bool complex =
        std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case red_op::and_:
                return combine_with(acc, v, n, [](T a, T b) { return a & b; });
            case red_op::or_:
                return combine_with(acc, v, n, [](T a, T b) { return a | b; });
            case red_op::xor_:
                return combine_with(acc, v, n, [](T a, T b) { return a ^ b; });
            default:
                break;
        }
    }
    if constexpr (!complex) {
        switch (op) {
            case red_op::max:
                return combine_with(acc, v, n, [](T a, T b) { return b > a ? b : a; });
            case red_op::min:
                return combine_with(acc, v, n, [](T a, T b) { return b < a ? b : a; });
            default:
                break;
        }
    }
    if (op == red_op::sum) {
        combine_with(acc, v, n, [](T a, T b) { return a + b; });
    } else if (op == red_op::prod) {
        combine_with(acc, v, n, [](T a, T b) { return a * b; });
    }
}

/// Reductions whose contributions times (members - 1) are at most this push
/// (and fit the buffer); above, pulling is faster: it combines straight from
/// a mapped peer's source, where a push copies first (2 PEs, 8-byte sums:
/// 256 elements 0.97 us pushed, 1024 3.2 us pushed, 2048 2.0 us pulled).
constexpr std::size_t push_reduce_max = 2048;

template <class T>
void reduce(const group &gr, const char *routine, red_op op, T *dest, const T *source,
            std::size_t n)
{
    // Every member combines the contributions in member order, so all get
    // the same bits (floating point), into private memory first: dest may be
    // source (in place).
    thread_local std::vector<T> acc;
    thread_local std::vector<T> theirs;
    const std::size_t bytes = n * sizeof(T);
    const std::size_t pushed = bytes * std::size_t(gr.n - 1);  // into each member's buffer
    if (gr.scratch != nullptr && pushed <= push_reduce_max && pushed <= gr.scratch_len) {
        // Small: push. Member j's contribution lands in slot j (j < me) or
        // j - 1 of every other member's pWrk, with a signal; each member
        // waits for n - 1 signals.
        char *buf = gr.scratch;
        std::int64_t *arrived = &gr.words[word_reduce];
        // pSync is not reused before everyone is done with it (the routine's
        // precondition): each pusher sets a flag of its own, a store rather
        // than an atomic add on a shared counter.
        const bool flags = gr.n - 1 <= max_flags;
        // Up to 56 bytes go into pSync itself, each behind its flag in one
        // 64-byte slot: the owner then misses one cache line per member, not
        // two (pWrk's and pSync's). pSync goes back to its resting value.
        const bool in_psync = flags && bytes <= 56 && alignof(T) <= 8 && gr.n - 1 <= max_flags / 8;
        char *data = in_psync ? reinterpret_cast<char *>(&gr.words[word_flags + 1]) : buf;
        const std::size_t stride = in_psync ? 64 : bytes;
        auto flag_of = [&](int slot) {
            return flags ? &gr.words[word_flags + (in_psync ? 8 * slot : slot)] : arrived;
        };
        for (int j = 0; j < gr.n; ++j) {
            if (j != gr.me) {
                const int slot = gr.me < j ? gr.me : gr.me - 1;
                put_signal(&g.world, routine, data + std::size_t(slot) * stride, source, bytes,
                           reinterpret_cast<std::uint64_t *>(flag_of(slot)), 1,
                           flags ? SHMEM_SIGNAL_SET : SHMEM_SIGNAL_ADD, gr.pes[j], false);
            }
        }
        acc.assign(source, source + n);  // before dest changes (in place)
        if (flags) {
            for (int k = 0; k < gr.n - 1; ++k) {
                std::int64_t *f = flag_of(k);
                spin([&] { return __atomic_load_n(f, __ATOMIC_ACQUIRE) != gr.base; });
                __atomic_store_n(f, gr.base, __ATOMIC_RELAXED);  // its data is read below
            }
        } else {
            await_arrivals(gr, arrived, gr.n - 1);
        }
        auto contribution = [&](int j) {
            return j == gr.me ? acc.data()
                              : reinterpret_cast<const T *>(
                                    data + std::size_t(j < gr.me ? j : j - 1) * stride);
        };
        theirs.assign(contribution(0), contribution(0) + n);
        for (int j = 1; j < gr.n; ++j) {
            combine<T>(op, theirs.data(), contribution(j), n);
        }
        if (in_psync) {
            for (int k = 0; k < gr.n - 1; ++k) {
                std::int64_t *w = flag_of(k) + 1;
                for (std::size_t i = 0; i < (bytes + 7) / 8; ++i) {
                    w[i] = gr.base;
                }
            }
        }
        std::memcpy(static_cast<void *>(dest), theirs.data(), bytes);
        return;
    }
    // Pull, a chunk at a time, after a synchronization (every source ready);
    // a second one tells everyone that nobody reads their source any more.
    constexpr std::size_t chunk = (64 * 1024) / sizeof(T) + 1;
    acc.resize(n);
    theirs.resize(n < chunk ? n : chunk);
    group_sync(gr, routine);
    for (std::size_t at = 0; at < n; at += chunk) {
        const std::size_t m = n - at < chunk ? n - at : chunk;
        pull(gr, routine, acc.data() + at, source + at, m * sizeof(T), 0);
        for (int j = 1; j < gr.n; ++j) {
            // A member whose memory is mapped is combined in place, not copied.
            const T *v = source + at;
            if (j != gr.me) {
                const target t = locate(&g.world, routine, source + at, m * sizeof(T), gr.pes[j]);
                v = reinterpret_cast<const T *>(t.ptr);
                if (v == nullptr) {
                    pull(gr, routine, theirs.data(), source + at, m * sizeof(T), j);
                    v = theirs.data();
                }
            }
            combine<T>(op, acc.data() + at, v, m);
        }
    }
    group_sync(gr, routine);
    std::memcpy(static_cast<void *>(dest), acc.data(), bytes);
}

// ------------------------------------------------------------------ teams

/// Agree with every member of `parent` on `want` free slots: each offers its
/// free slots, the common ones win (lowest first). -1s when there are not enough.
void agree_on_slots(shmem_team_opaque *parent, const char *routine, int want, int *out)
{
    const group gr = team_group(parent);
    std::int64_t *mask = &internal()->teams[parent->slot].mask;
    __atomic_store_n(mask, static_cast<std::int64_t>(~g.used_slots), __ATOMIC_RELEASE);
    group_sync(gr, routine);
    std::uint64_t common = ~std::uint64_t{0};
    for (int j = 0; j < gr.n; ++j) {
        std::int64_t theirs = 0;
        pull(gr, routine, &theirs, mask, sizeof(theirs), j);
        common &= static_cast<std::uint64_t>(theirs);
    }
    group_sync(gr, routine);
    for (int i = 0; i < want; ++i) {
        out[i] = -1;
        if (common != 0) {
            out[i] = __builtin_ctzll(common);
            common &= common - 1;
        }
    }
}

shmem_team_opaque *make_team(std::vector<int> pes, int slot, const shmem_team_config_t *config,
                             long mask)
{
    auto *t = new shmem_team_opaque;
    t->pes = std::move(pes);
    for (std::size_t i = 0; i < t->pes.size(); ++i) {
        if (t->pes[i] == g.me) {
            t->me = static_cast<int>(i);
        }
    }
    t->slot = slot;
    if (config != nullptr && (mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) {
        t->config.num_contexts = config->num_contexts;
    }
    g.used_slots |= std::uint64_t{1} << slot;
    team_words &w = internal()->teams[slot];
    std::memset(&w, 0, sizeof(w));
    return t;
}

}  // namespace

void init_teams()
{
    shmem_team_opaque &w = g.world_team;
    w.pes.resize(std::size_t(g.npes));
    for (int i = 0; i < g.npes; ++i) {
        w.pes[std::size_t(i)] = i;
    }
    w.me = g.me;
    w.slot = 0;
    w.predefined = true;
    // SHMEM_TEAM_SHARED: the PEs whose heap this PE maps (shmem_ptr works
    // between them), in world order. Node peers map each other both ways.
    shmem_team_opaque &s = g.shared_team;
    s.pes.clear();
    for (int i = 0; i < g.npes; ++i) {
        if (g.segs[0].mapped[std::size_t(i)] != nullptr) {
            if (i == g.me) {
                s.me = static_cast<int>(s.pes.size());
            }
            s.pes.push_back(i);
        }
    }
    s.slot = 1;
    s.predefined = true;
    g.used_slots = 3;
}

}  // namespace weft::shmem

using namespace weft::shmem;

shmem_team_opaque *weft::shmem::team_member(const char *routine, shmem_team_t team)
{
    check_init(routine);
    if (team == SHMEM_TEAM_INVALID) {
        return nullptr;
    }
    shmem_team_opaque *t = team;
    return t->me >= 0 ? t : nullptr;
}

extern "C" {

shmem_team_t const SHMEM_TEAM_WORLD = &weft::shmem::g.world_team;
shmem_team_t const SHMEM_TEAM_SHARED = &weft::shmem::g.shared_team;

int shmem_team_my_pe(shmem_team_t team)
{
    shmem_team_opaque *t = team_member(__func__, team);
    return t == nullptr ? -1 : t->me;
}

int shmem_team_n_pes(shmem_team_t team)
{
    shmem_team_opaque *t = team_member(__func__, team);
    return t == nullptr ? -1 : static_cast<int>(t->pes.size());
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (t == nullptr || config == nullptr) {
        return -1;
    }
    if ((config_mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) {
        config->num_contexts = t->config.num_contexts;
    }
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    check_init(__func__);
    if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    const shmem_team_opaque *s = src_team;
    if (src_pe < 0 || src_pe >= static_cast<int>(s->pes.size())) {
        return -1;
    }
    const int world = s->pes[std::size_t(src_pe)];
    const shmem_team_opaque *d = dest_team;
    for (std::size_t i = 0; i < d->pes.size(); ++i) {
        if (d->pes[i] == world) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team)
{
    check_init(__func__);
    if (new_team == nullptr) {
        fatal(__func__, "new_team is NULL");
    }
    *new_team = SHMEM_TEAM_INVALID;
    shmem_team_opaque *p = team_member(__func__, parent_team);
    if (p == nullptr) {
        return -1;
    }
    const auto n = static_cast<std::int64_t>(p->pes.size());
    const std::int64_t last = start + std::int64_t(stride) * (size - 1);
    const bool valid =
        size >= 1 && start >= 0 && start < n && last >= 0 && last < n && (stride != 0 || size == 1);
    // Every parent member takes part in the agreement, also when the
    // arguments are bad (they are the same everywhere), so nobody hangs.
    int slot = -1;
    agree_on_slots(p, __func__, 1, &slot);
    if (!valid) {
        if (g.debug) {
            std::fprintf(stderr,
                         "OpenSHMEM warning on PE %d in %s: start %d, stride %d, size %d do not "
                         "fit a parent team of %lld PEs\n",
                         g.me, __func__, start, stride, size, static_cast<long long>(n));
        }
        return -1;
    }
    if (slot < 0) {
        if (g.debug) {
            std::fprintf(stderr, "OpenSHMEM warning on PE %d in %s: all %d team slots are in use\n",
                         g.me, __func__, max_teams);
        }
        return -1;
    }
    std::vector<int> pes(static_cast<std::size_t>(size));
    bool member = false;
    for (int i = 0; i < size; ++i) {
        pes[std::size_t(i)] = p->pes[std::size_t(start + std::int64_t(stride) * i)];
        member = member || pes[std::size_t(i)] == g.me;
    }
    if (member) {
        *new_team = make_team(std::move(pes), slot, config, config_mask);
    }
    // Nobody uses the new team before every member has set it up.
    group_sync(team_group(p), __func__);
    if (member) {
        team_coll_open(*new_team, __func__);
    }
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    check_init(__func__);
    if (xaxis_team == nullptr || yaxis_team == nullptr) {
        fatal(__func__, "xaxis_team or yaxis_team is NULL");
    }
    *xaxis_team = SHMEM_TEAM_INVALID;
    *yaxis_team = SHMEM_TEAM_INVALID;
    shmem_team_opaque *p = team_member(__func__, parent_team);
    if (p == nullptr) {
        return -1;
    }
    int slots[2];
    agree_on_slots(p, __func__, 2, slots);
    if (xrange < 1 || slots[1] < 0) {
        return -1;
    }
    const int n = static_cast<int>(p->pes.size());
    const int x = xrange > n ? n : xrange;
    // x teams: rows of x consecutive parent PEs; y teams: the columns. Rows
    // share one slot and columns another: a PE is in one row and one column.
    const int row = p->me / x;
    const int col = p->me % x;
    std::vector<int> xs;
    for (int i = row * x; i < n && i < (row + 1) * x; ++i) {
        xs.push_back(p->pes[std::size_t(i)]);
    }
    std::vector<int> ys;
    for (int i = col; i < n; i += x) {
        ys.push_back(p->pes[std::size_t(i)]);
    }
    *xaxis_team = make_team(std::move(xs), slots[0], xaxis_config, xaxis_mask);
    *yaxis_team = make_team(std::move(ys), slots[1], yaxis_config, yaxis_mask);
    group_sync(team_group(p), __func__);
    // Every PE is in one row and one column: rows first everywhere.
    team_coll_open(*xaxis_team, __func__);
    team_coll_open(*yaxis_team, __func__);
    return 0;
}

void shmem_team_destroy(shmem_team_t team)
{
    check_init(__func__);
    if (team == SHMEM_TEAM_INVALID) {
        return;
    }
    shmem_team_opaque *t = team;
    if (t->predefined) {
        fatal(__func__, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
    }
    // Contexts created from the team are destroyed with it (1.5).
    std::vector<shmem_ctx_t> own;
    for (shmem_ctx_opaque *c : g.ctxs) {
        if (c->team == t) {
            own.push_back(c);
        }
    }
    for (shmem_ctx_t c : own) {
        shmem_ctx_destroy(c);
    }
    group_sync(team_group(t), __func__);  // nobody still synchronizes through its slot
    team_coll_close(t);
    g.used_slots &= ~(std::uint64_t{1} << t->slot);
    delete t;
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (ctx == nullptr) {
        fatal(__func__, "ctx is NULL");
    }
    if (t == nullptr) {
        *ctx = SHMEM_CTX_INVALID;
        return -1;
    }
    return create_ctx(__func__, options, t == &g.world_team ? nullptr : t, ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    check_init(__func__);
    if (team == nullptr) {
        return -1;
    }
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team != nullptr ? ctx->team : &g.world_team;
    return 0;
}

// ------------------------------------------------------------------ active-set collectives

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);
    group_sync(a.gr, __func__);
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);
    shmem_quiet();
    group_sync(a.gr, __func__);
}

#define WEFT_SHMEM_OLD_COLL(SIZE)                                                            \
    void shmem_broadcast##SIZE(void *dest, const void *source, size_t nelems, int PE_root,   \
                               int PE_start, int logPE_stride, int PE_size, long *pSync)     \
    {                                                                                        \
        const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);    \
        broadcast(a.gr, __func__, dest, source, nelems *(SIZE / 8), PE_root);                \
    }                                                                                        \
    void shmem_collect##SIZE(void *dest, const void *source, size_t nelems, int PE_start,    \
                             int logPE_stride, int PE_size, long *pSync)                     \
    {                                                                                        \
        const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);    \
        collect(a.gr, __func__, dest, source, nelems *(SIZE / 8));                           \
    }                                                                                        \
    void shmem_fcollect##SIZE(void *dest, const void *source, size_t nelems, int PE_start,   \
                              int logPE_stride, int PE_size, long *pSync)                    \
    {                                                                                        \
        const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);    \
        fcollect(a.gr, __func__, dest, source, nelems *(SIZE / 8));                          \
    }                                                                                        \
    void shmem_alltoall##SIZE(void *dest, const void *source, size_t nelems, int PE_start,   \
                              int logPE_stride, int PE_size, long *pSync)                    \
    {                                                                                        \
        const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);    \
        alltoalls(a.gr, __func__, dest, source, 1, 1, nelems, SIZE / 8);                     \
    }                                                                                        \
    void shmem_alltoalls##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                               size_t nelems, int PE_start, int logPE_stride, int PE_size,   \
                               long *pSync)                                                  \
    {                                                                                        \
        const active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);    \
        alltoalls(a.gr, __func__, dest, source, dst, sst, nelems, SIZE / 8);                 \
    }
WEFT_SHMEM_OLD_COLL(32)
WEFT_SHMEM_OLD_COLL(64)
#undef WEFT_SHMEM_OLD_COLL

#define WEFT_SHMEM_OLD_REDUCE(TYPE, CXX, NAME, OP, ROP)                                          \
    void shmem_##NAME##_##OP##_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, \
                                      int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)    \
    {                                                                                            \
        active_set a = active_of(__func__, PE_start, logPE_stride, PE_size, pSync);              \
        if (nreduce < 0) {                                                                       \
            fatal(__func__, "nreduce %d is negative", nreduce);                                  \
        }                                                                                        \
        with_work(a, pWrk, sizeof(TYPE), std::size_t(nreduce));                                  \
        reduce<CXX>(a.gr, __func__, ROP, reinterpret_cast<CXX *>(dest),                          \
                    reinterpret_cast<const CXX *>(source), std::size_t(nreduce));                \
    }
#define WEFT_SHMEM_OLD_REDUCE_BIT(TYPE, NAME)                  \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, and, red_op::and_) \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, or, red_op::or_)   \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, xor, red_op::xor_)
#define WEFT_SHMEM_OLD_REDUCE_CMP(TYPE, NAME)                 \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, max, red_op::max) \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, min, red_op::min)
#define WEFT_SHMEM_OLD_REDUCE_ARITH(TYPE, NAME)               \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, sum, red_op::sum) \
    WEFT_SHMEM_OLD_REDUCE(TYPE, TYPE, NAME, prod, red_op::prod)
SHMEM_OLD_REDUCE_BIT_TYPES(WEFT_SHMEM_OLD_REDUCE_BIT)
SHMEM_OLD_REDUCE_CMP_TYPES(WEFT_SHMEM_OLD_REDUCE_CMP)
SHMEM_OLD_REDUCE_CMP_TYPES(WEFT_SHMEM_OLD_REDUCE_ARITH)
WEFT_SHMEM_OLD_REDUCE(double _Complex, std::complex<double>, complexd, sum, red_op::sum)
WEFT_SHMEM_OLD_REDUCE(double _Complex, std::complex<double>, complexd, prod, red_op::prod)
WEFT_SHMEM_OLD_REDUCE(float _Complex, std::complex<float>, complexf, sum, red_op::sum)
WEFT_SHMEM_OLD_REDUCE(float _Complex, std::complex<float>, complexf, prod, red_op::prod)
#undef WEFT_SHMEM_OLD_REDUCE_ARITH
#undef WEFT_SHMEM_OLD_REDUCE_CMP
#undef WEFT_SHMEM_OLD_REDUCE_BIT
#undef WEFT_SHMEM_OLD_REDUCE

}  // extern "C"
