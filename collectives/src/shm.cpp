// The shared-memory stage (docs/collectives.md, "Shared memory on a node"):
// when every member of a group is on this node and maps every other member's
// region, small blocking collectives are loads and stores.
//
// Each member owns a region (weft_mr_alloc, mapped by the others through
// weft_rkey_ptr): a `ready` word, a `done` word, each on its own cache line,
// and two data slots used alternately. Collective s (the group's s-th on this
// path): a member that publishes waits until every member's `done` >= s - 2
// (nobody still reads the slot it is about to overwrite), copies its input
// into slot s % 2, and stores `ready` = s (release); readers wait for the
// publisher's `ready` >= s (acquire), read, and every member stores `done` = s
// when it has read all it needs. Every member combines in rank order, so an
// allreduce gives every member the same bits.

#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "collectives/src/coll_impl.hpp"

namespace weft::coll {
namespace {

constexpr std::size_t ready_off = 0;
/// Bytes published in a slot (checked by readers): one word per slot, as the
/// data, so a publisher already on the next collective does not overwrite it.
constexpr std::size_t len_off(std::uint64_t s)
{
    return 8 + 8 * (s % 2);
}
/// Bytes of the current slot already published: (collective << 32) | bytes,
/// so that readers can start while the publisher still copies (pipelining).
constexpr std::size_t avail_off = 24;
/// Publishers of more than this store `avail` after each piece of it.
constexpr std::size_t piece = 8 * 1024;
/// Single copy: the collective whose part this member could not do (its
/// failure is then every member's whose result it writes).
constexpr std::size_t failed_off = 32;
/// The published length word also holds a stamp: the collective it was
/// published for (its low 14 bits, in bits 48-61), stored by every
/// publication but a barrier's (which writes no slot and does not wait for
/// the members to be done with it). `ready` >= s alone cannot tell a
/// publication of s from one of s + 1 by a member that finished s without
/// publishing (its count put it on another path); the stamp can: a member
/// writes the word of s + 2 only once every member is done with s. In the
/// length word, not a word of its own: one store fewer on the line readers
/// spin on (a separate stamp cost a 2-rank allgather below 1 KiB 15-35%).
constexpr unsigned stamp_shift = 48;
constexpr std::uint64_t stamp_bits = std::uint64_t(0x3fff) << stamp_shift;
/// Lengths are below 2^48 (shm_takes_direct sends larger calls elsewhere).
constexpr std::uint64_t len_bits = (std::uint64_t(1) << stamp_shift) - 1;
constexpr std::uint64_t stamped(std::uint64_t len, std::uint64_t s)
{
    return len | (s << stamp_shift & stamp_bits);
}
/// In a published length word: the member took the message path for this
/// collective, with the bytes in the low bits (shm_agree). Never a slot's
/// length, so every form's length check fails on it.
constexpr std::uint64_t on_messages = std::uint64_t(1) << 63;
/// With on_messages: the member refused the call (its arguments).
constexpr std::uint64_t refused = std::uint64_t(1) << 62;
constexpr std::size_t done_off = 64;  // a cache line apart: different writers' reads
/// The collective whose slot and length word collective s reuses (0: none).
constexpr std::uint64_t prior_of(std::uint64_t s)
{
    return s > 2 ? s - 2 : 0;
}
constexpr std::size_t data_off = 128;

inline std::uint64_t *word(std::byte *base, std::size_t off)
{
    return reinterpret_cast<std::uint64_t *>(base + off);
}

/// Bytes a member publishes for `a` on a group of n (SIZE_MAX: not this path).
std::size_t published(const weft_coll_args &a, std::uint32_t n)
{
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            return 0;
        case WEFT_COLL_BCAST:
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER:
            return bytes;
        case WEFT_COLL_ALLTOALL:
        case WEFT_COLL_SCATTER:
            return bytes * n;
        default:
            return SIZE_MAX;
    }
}

/// What a member whose buffer the others read (single copy) puts in its
/// slot. The others read it from shared memory: untrusted (key_len is
/// checked here, the key by weft_rkey_unpack, the range by the owner's
/// transport against its registration).
struct direct_desc {
    std::uint64_t seq;  ///< the collective it belongs to (another: counts differ)
    std::uint64_t addr;
    std::uint64_t len;
    std::uint32_t key_len;  ///< 0: no buffer (none to give, or it could not be registered)
    std::uint32_t mode;     ///< 1: split bcast, 2: reduction in parts, 0: neither
    std::byte key[WEFT_MR_KEY_MAX];
};
static_assert(sizeof(direct_desc) == 288, "docs/collectives.md, Single copy");

/// Polls a member's word until it holds at least a value, driving progress
/// meanwhile; returns the value seen.
struct waiter {
    context &c;
    long spins = 0;
    long polls = 0;
    std::uint64_t operator()(std::byte *region, std::size_t off, std::uint64_t want)
    {
        // acquire: pairs with the owner's release store; its data is visible.
        std::uint64_t v;
        until([&] { return (v = __atomic_load_n(word(region, off), __ATOMIC_ACQUIRE)) >= want; });
        return v;
    }
    /// Waits until every member but `me` is done with collective `upto`
    /// (their `done`, cached in st.done_seen: usually no load). Before a
    /// member overwrites its slot or length word of collective s it waits for
    /// s - 2 (prior_of); before its buffers change, for the collective that
    /// used them.
    void all_done(shm_state &st, std::uint32_t n, std::uint32_t me, std::uint64_t upto)
    {
        for (std::uint32_t p = 0; p < n; ++p) {
            if (p != me && st.done_seen[p] < upto) {
                st.done_seen[p] = (*this)(st.peer[p], done_off, upto);
            }
        }
    }
    /// Whether member `region` finished collective s (acquire: pairs with its
    /// release store of done).
    static bool finished(std::byte *region, std::uint64_t s)
    {
        return __atomic_load_n(word(region, done_off), __ATOMIC_ACQUIRE) >= s;
    }
    /// Waits until member `region` has `ready` >= s or `done` >= s: it
    /// published collective s (or a later one), or finished s without
    /// publishing (then its stamp says so: stage_call::check, published).
    void ready_or_done(std::byte *region, std::uint64_t s)
    {
        // acquire (both): pairs with the member's release stores of ready
        // and done, so its length word of s, if it stored one, is visible.
        // `done` only with the progress calls (until's `gone`): a spin that
        // also counted and loaded it cost a 2-rank allgather below 1 KiB
        // 11-17% (paired launches).
        (void)until([&] { return __atomic_load_n(word(region, ready_off), __ATOMIC_ACQUIRE) >= s; },
                    region, s);
    }
    /// Waits until member `region` published collective s (true) or finished
    /// it without publishing (false: it took another form; its count differs).
    /// Not for a barrier's publication (no stamp).
    bool published(std::byte *region, std::uint64_t s)
    {
        ready_or_done(region, s);
        return (*word(region, len_off(s)) & stamp_bits) == (s << stamp_shift & stamp_bits);
    }
    /// Polls until `done`; false instead when `gone` (a member's region) has
    /// finished collective `gone_s` meanwhile (checked with the progress
    /// calls: a spin that loads more than its flag was measured slower).
    template <class Pred>
    bool until(Pred done, std::byte *gone = nullptr, std::uint64_t gone_s = 0)
    {
        while (!done()) {
            // Our endpoint's traffic and the caller's must move meanwhile: a
            // member we wait for may wait for them (the rest of a large
            // message an earlier collective sent it, credits of ours).
            if ((++polls & 63) == 0) {
                (void)c.progress();
                if (c.wait_hook != nullptr) {
                    c.wait_hook(c.wait_arg);
                }
                if (gone != nullptr && finished(gone, gone_s) && !done()) {
                    return false;
                }
            }
            if (++spins > c.spins_before_yield) {
                spins = 0;
                sched_yield();
            }
        }
        return true;
    }
};

/// One collective on the stage: its sequence number, this member's region,
/// the published lengths' check and the end.
struct stage_call {
    const weft_coll_args &a;
    std::uint64_t s;
    std::byte *mine;
    int status = 0;
    /// The length member p published (read after the acquire of its `ready`)
    /// against `want`: counts that differ between members (an erroneous
    /// program) are this call's error, -WEFT_ETRUNC when p published more,
    /// logged once; both sides still finish the protocol. Returns the bytes
    /// both agree on.
    std::size_t check(std::byte *region, std::uint32_t p, std::size_t want)
    {
        const std::uint64_t raw = *word(region, len_off(s));
        if ((raw & stamp_bits) != (s << stamp_shift & stamp_bits)) [[unlikely]] {
            // No publication of s: p finished it on another path.
            if (status == 0) {
                log("error",
                    "%s: member %u finished this collective without publishing on the "
                    "shared-memory stage: its count differs from this member's",
                    weft_coll_type_name(a.type), p);
                status = -WEFT_EINVAL;
            }
            return 0;
        }
        const std::uint64_t got = raw & ~stamp_bits;
        if ((got & on_messages) != 0) {
            if (status == 0 && (got & refused) != 0) {
                log("error", "%s: member %u refused this call (its arguments: see its log)",
                    weft_coll_type_name(a.type), p);
                status = -WEFT_EINVAL;
            } else if (status == 0) {
                const std::uint64_t theirs = got & ~on_messages;
                log("error",
                    "%s: member %u took the message path with %llu bytes, this member the "
                    "shared-memory stage with %zu: counts differ",
                    weft_coll_type_name(a.type), p, static_cast<unsigned long long>(theirs), want);
                status = theirs > want ? -WEFT_ETRUNC : -WEFT_EINVAL;
            }
            return 0;  // its slot holds nothing of this collective
        }
        if (got != want && status == 0) {
            log("error", "%s: member %u published %llu bytes, this member expected %zu",
                weft_coll_type_name(a.type), p, static_cast<unsigned long long>(got), want);
            status = got > want ? -WEFT_ETRUNC : -WEFT_EINVAL;
        }
        return got < want ? std::size_t(got) : want;
    }
    /// release: our reads of the members' slots and buffers are done.
    void finish() { __atomic_store_n(word(mine, done_off), s, __ATOMIC_RELEASE); }
};

}  // namespace

bool shm_takes(const group &g, const weft_coll_args &a)
{
    return g.shm != nullptr && a.algorithm == WEFT_COLL_ALG_AUTO &&
           (a.flags & ~WEFT_COLL_SYMMETRIC) == 0 && published(a, g.size) <= g.shm->slot;
}

int shm_run(group &g, const weft_coll_args &a, combine_fn combine, std::size_t stride)
{
    shm_state &st = *g.shm;
    context &c = *g.ctx;
    const std::uint32_t n = g.size;
    const std::uint32_t me = g.rank;
    stage_call call{a, ++st.seq, st.peer[me]};
    const std::uint64_t s = call.s;
    if (a.type != WEFT_COLL_BARRIER) {
        st.last_data = s;
    }
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    // Distance between the members' blocks in the caller's buffers (allgather
    // and alltoall): `bytes` unless this is one piece of a larger call.
    const std::size_t blk = stride != 0 ? stride : bytes;
    auto data = [&](std::uint32_t p) { return st.peer[p] + data_off + (s % 2) * st.slot; };
    waiter wait_for{c};
    auto publish = [&](const void *src, std::size_t len, std::size_t blocks = 1) {
        wait_for.all_done(st, n, me, prior_of(s));  // nobody still reads slot s % 2
        if (blocks > 1 && blk != bytes) {
            // n blocks `blk` apart in the caller's buffer, packed in the slot.
            for (std::size_t j = 0; j < blocks; ++j) {
                copy_bytes(data(me) + j * bytes, static_cast<const std::byte *>(src) + j * blk,
                           bytes);
            }
        } else if (len > piece) {
            // A piece at a time, each announced: readers copy or combine the
            // first pieces while this member copies the next.
            const std::uint64_t tag = (s & 0xffffffffu) << 32;
            for (std::size_t off = 0; off < len; off += piece) {
                const std::size_t m = std::min(piece, len - off);
                std::memcpy(data(me) + off, static_cast<const std::byte *>(src) + off, m);
                // release: the piece is visible to whoever sees `avail` cover it.
                __atomic_store_n(word(st.peer[me], avail_off), tag | (off + m), __ATOMIC_RELEASE);
            }
        } else if (len != 0) {
            std::memcpy(data(me), src, len);
        }
        *word(st.peer[me], len_off(s)) = stamped(len, s);  // published by the release below
        // release: the data above is visible to whoever sees ready == s.
        __atomic_store_n(word(st.peer[me], ready_off), s, __ATOMIC_RELEASE);
    };
    auto check = [&](std::uint32_t p, std::size_t want) { return call.check(st.peer[p], p, want); };
    int &status = call.status;
    auto finish = [&] { call.finish(); };
    // p published collective s, or finished it without (its count put it on
    // another path: check() says so, the call's error, not a wait).
    auto ready = [&](std::uint32_t p) { wait_for.ready_or_done(st.peer[p], s); };
    // Wait until member p has published bytes [0, end) of this collective
    // (expecting `want` in all). False when p finished with fewer or without
    // publishing (check() has said so).
    auto upto = [&](std::uint32_t p, std::size_t end, std::size_t want) {
        const std::uint64_t tag = s & 0xffffffffu;
        bool complete = false;
        const bool waited = wait_for.until(
            [&] {
                // acquire (both): pairs with the publisher's release stores.
                if (__atomic_load_n(word(st.peer[p], ready_off), __ATOMIC_ACQUIRE) >= s) {
                    return complete = true;
                }
                const std::uint64_t v =
                    __atomic_load_n(word(st.peer[p], avail_off), __ATOMIC_ACQUIRE);
                return (v >> 32) == tag && (v & 0xffffffffu) >= end;
            },
            st.peer[p], s);
        complete = complete || !waited;  // p finished s: check() says how
        return !complete || check(p, want) >= end;
    };
    // Every piece of p's slot consumed: its length is checked once `ready`.
    auto settle_len = [&](std::uint32_t p, std::size_t want) {
        ready(p);
        return check(p, want);
    };
    const void *in = a.sendbuf == WEFT_COLL_IN_PLACE ? a.recvbuf : a.sendbuf;
    auto *out = static_cast<std::byte *>(a.recvbuf);
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            __atomic_store_n(word(st.peer[me], ready_off), s, __ATOMIC_RELEASE);
            for (std::uint32_t p = 0; p < n; ++p) {
                wait_for(st.peer[p], ready_off, s);
                // p stored `done` = s - 1 before it entered: no load needed
                // later to know it (the next publish or push waits for none).
                st.done_seen[p] = std::max(st.done_seen[p], s - 1);
            }
            break;
        case WEFT_COLL_BCAST:
            if (me == a.root) {
                const void *src = a.sendbuf != nullptr ? a.sendbuf : a.recvbuf;
                publish(src, bytes);
                copy_bytes(a.recvbuf, src, bytes);  // a separate source
            } else {
                for (std::size_t off = 0; off < bytes; off += piece) {
                    const std::size_t m = std::min(piece, bytes - off);
                    if (!upto(a.root, off + m, bytes)) {
                        break;
                    }
                    copy_bytes(out + off, data(a.root) + off, m);
                }
                settle_len(a.root, bytes);
            }
            break;
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE: {
            // A member combines its own contribution from its input (one copy
            // fewer), unless the result overwrites that input (in place)
            // before its turn in the rank order; a reduce's root publishes
            // nothing then (nobody reads its slot).
            const bool own = in != out;
            if (a.type == WEFT_COLL_ALLREDUCE || me != a.root || !own) {
                publish(in, bytes);
            }
            if (a.type == WEFT_COLL_ALLREDUCE || me == a.root) {
                auto from = [&](std::uint32_t p) -> const std::byte * {
                    return p == me && own ? static_cast<const std::byte *>(in) : data(p);
                };
                // A piece at a time, as soon as every member has published it.
                const std::size_t step = piece / es * es;
                for (std::size_t off = 0; off < bytes && status == 0; off += step) {
                    const std::size_t m = std::min(step, bytes - off);
                    bool ok = true;
                    for (std::uint32_t p = 0; p < n; ++p) {
                        ok = (p == me || upto(p, off + m, bytes)) && ok;
                    }
                    if (!ok) {
                        break;
                    }
                    combine(out + off, from(0) + off, from(1) + off, m / es);
                    for (std::uint32_t p = 2; p < n; ++p) {
                        combine(out + off, out + off, from(p) + off, m / es);
                    }
                }
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p != me) {
                        settle_len(p, bytes);
                    }
                }
            }
            break;
        }
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER: {
            publish(a.sendbuf == WEFT_COLL_IN_PLACE ? out + me * blk : in, bytes);
            if (a.type == WEFT_COLL_ALLGATHER || me == a.root) {
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p == me && a.sendbuf == WEFT_COLL_IN_PLACE) {
                        continue;
                    }
                    for (std::size_t off = 0; off < bytes; off += piece) {
                        const std::size_t m = std::min(piece, bytes - off);
                        if (!upto(p, off + m, bytes)) {
                            break;
                        }
                        copy_bytes(out + p * blk + off, data(p) + off, m);
                    }
                    settle_len(p, bytes);
                }
            }
            break;
        }
        case WEFT_COLL_ALLTOALL:
            publish(in, bytes * n, n);
            for (std::uint32_t p = 0; p < n; ++p) {
                ready(p);
                if (check(p, bytes * n) == bytes * n) {
                    copy_bytes(out + p * blk, data(p) + me * bytes, bytes);
                }
            }
            break;
        case WEFT_COLL_SCATTER:
            if (me == a.root) {
                publish(a.sendbuf, bytes * n);
                if (a.recvbuf != WEFT_COLL_IN_PLACE) {
                    copy_bytes(a.recvbuf, static_cast<const std::byte *>(a.sendbuf) + me * bytes,
                               bytes);
                }
            } else {
                ready(a.root);
                if (check(a.root, bytes * n) == bytes * n) {
                    copy_bytes(a.recvbuf, data(a.root) + me * bytes, bytes);
                }
            }
            break;
        default:
            return -WEFT_EINVAL;
    }
    finish();
    return status;
}

// ------------------------------------------------------------------ before the message path
//
// The path is chosen from a member's own count, so counts that differ between
// members (an erroneous program) can put one on a form of the stage and
// another on the message path, where neither would ever hear from the other.
// A call of a type the stage takes that goes to the message path therefore
// runs one stage round first: it publishes a length word that says "message
// path, this many bytes" (never a slot's length) and waits until every member
// has published the same, or has published something else, or has finished
// the collective without publishing. Any of the latter two is the call's
// error on this member; a member on the stage sees our word in its length
// check and fails too (unless it waits for nobody: a bcast's root there).
// Calls of this kind are above a slot (64 KiB): the round is a barrier's cost.

bool shm_count_decides(const group &g, const weft_coll_args &a)
{
    return g.shm != nullptr && a.algorithm == WEFT_COLL_ALG_AUTO &&
           (a.flags & ~WEFT_COLL_SYMMETRIC) == 0 && published(a, g.size) != SIZE_MAX;
}

int shm_agree(group &g, const weft_coll_args &a, bool refuse)
{
    shm_state &st = *g.shm;
    const std::uint32_t n = g.size;
    const std::uint32_t me = g.rank;
    stage_call call{a, ++st.seq, st.peer[me]};
    const std::uint64_t s = call.s;
    const std::uint64_t bytes = published(a, n);
    // Counts of 2^48 bytes and more compare by their low 48 bits.
    const std::uint64_t mine = on_messages | (refuse ? refused : bytes & len_bits);
    const char *name = weft_coll_type_name(a.type);
    waiter wait_for{*g.ctx};
    wait_for.all_done(st, n, me, prior_of(s));        // nobody still reads our length word of s - 2
    *word(call.mine, len_off(s)) = stamped(mine, s);  // published by the release below
    // release: the length word is visible to whoever sees ready == s.
    __atomic_store_n(word(call.mine, ready_off), s, __ATOMIC_RELEASE);
    for (std::uint32_t p = 0; p < n; ++p) {
        if (p == me) {
            continue;
        }
        const bool said = wait_for.published(st.peer[p], s);
        const std::uint64_t got = said ? *word(st.peer[p], len_off(s)) & ~stamp_bits : 0;
        if ((said && got == mine && !refuse) || call.status != 0) {
            continue;
        }
        const std::uint64_t theirs = got & ~on_messages;
        if (refuse) {
            // Our own refusal is the error (logged by the caller); the round
            // only tells the others.
        } else if (!said) {
            log("error",
                "%s: member %u finished this collective on the shared-memory stage, this member "
                "took the message path with %llu bytes: counts differ",
                name, p, static_cast<unsigned long long>(bytes));
        } else if ((got & (on_messages | refused)) == (on_messages | refused)) {
            log("error", "%s: member %u refused this call (its arguments: see its log)", name, p);
        } else {
            log("error",
                "%s: member %u took %s with %llu bytes, this member the message path with %llu",
                name, p, (got & on_messages) != 0 ? "the message path" : "the shared-memory stage",
                static_cast<unsigned long long>(theirs), static_cast<unsigned long long>(bytes));
        }
        call.status = said && (got & refused) == 0 && theirs > bytes ? -WEFT_ETRUNC : -WEFT_EINVAL;
    }
    call.finish();
    return call.status;
}

// ------------------------------------------------------------------ larger than a slot
//
// A blocking bcast, reduce, allreduce, allgather or alltoall whose data does
// not fit a slot runs as a sequence of stage collectives on pieces of it,
// each a slot (alltoall: a slot's n-th per block): the two slots let a
// publisher fill the next piece while the others read this one. Copying
// through shared memory twice beats the message path here (the transport's
// pipeline, its FIFO's first use) and, on this machine, cross-memory attach.
// The members first agree on every member's byte count (an allgather of one
// word), so that all run the same number of pieces or none.

bool shm_takes_large(const group &g, const weft_coll_args &a)
{
    if (g.shm == nullptr || a.algorithm != WEFT_COLL_ALG_AUTO ||
        (a.flags & ~WEFT_COLL_SYMMETRIC) != 0) {
        return false;
    }
    // Up to large_max bytes per member (above, the transport's pipeline
    // was as fast or faster at 2 ranks). Alltoall stays on the message path
    // (1.35-1.43x tuned's in pieces, 1.2x there), and so does a 2-member
    // allgather (one exchange there: 1.24-1.31x; 1.6-1.9x in pieces, which
    // won from 3 members: 4 ranks 0.70-0.78x against 1.2-1.4x).
    if (a.count > g.shm->large_max / std::max<std::size_t>(1, size_of(raw(a.datatype)))) {
        return false;
    }
    switch (a.type) {
        case WEFT_COLL_BCAST:
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
            return true;
        case WEFT_COLL_ALLGATHER:
            return g.size > 2;
        default:
            return false;
    }
}

int shm_run_large(group &g, const weft_coll_args &a, combine_fn combine)
{
    shm_state &st = *g.shm;
    const std::uint32_t n = g.size;
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    // Every member's count, then the same decision everywhere.
    std::uint64_t mine = bytes;
    st.totals.resize(n);
    weft_coll_args t{};
    t.type = WEFT_COLL_ALLGATHER;
    t.datatype = WEFT_COLL_UINT64;
    t.count = 1;
    t.sendbuf = &mine;
    t.recvbuf = st.totals.data();
    int rc = shm_run(g, t, nullptr, 0);
    if (rc != 0) {
        return rc;
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        if (st.totals[p] != mine) {
            log("error", "%s: member %u has %llu bytes, this member %zu",
                weft_coll_type_name(a.type), p, static_cast<unsigned long long>(st.totals[p]),
                bytes);
            return st.totals[p] > mine ? -WEFT_ETRUNC : -WEFT_EINVAL;
        }
    }
    const std::size_t room = a.type == WEFT_COLL_ALLTOALL ? st.slot / n : st.slot;
    const std::size_t step = room / es * es;
    const bool in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
    int first = 0;
    for (std::size_t off = 0; off < bytes; off += step) {
        weft_coll_args p = a;
        p.count = std::min(step, bytes - off) / es;
        p.recvbuf = static_cast<std::byte *>(a.recvbuf) + off;
        if (a.sendbuf != nullptr && !in_place) {
            p.sendbuf = static_cast<const std::byte *>(a.sendbuf) + off;
        }
        const bool blocks = a.type == WEFT_COLL_ALLGATHER || a.type == WEFT_COLL_ALLTOALL;
        rc = shm_run(g, p, combine, blocks ? bytes : 0);
        if (first == 0) {
            first = rc;  // every piece still runs: the members stay in step
        }
    }
    return first;
}

// ------------------------------------------------------------------ symmetric buffers
//
// WEFT_COLL_SYMMETRIC: the buffers other members touch are at the same offset
// of a segment every member maps, so they are read and written in place: a
// broadcast's root stores into every member's buffer (or, above push_max,
// members copy from the root's), allgather and alltoall push each block
// straight to where it belongs, and large reductions combine straight from
// the members' sources. A member writes into another's buffer only after
// that member is done with the group's previous collective (its `done`); the
// caller promises the buffers are ready when any member starts (OpenSHMEM's
// rule). A member whose source others read returns only when they are done.

namespace {

/// Where a range of this member's symmetric memory is: its segment and offset
/// (seg nullptr: in no segment).
struct sym_ref {
    const shm_state::segment *seg = nullptr;
    std::size_t off = 0;
    std::byte *at(std::uint32_t member) const { return seg->peer[member] + off; }
};

sym_ref find_sym(const shm_state &st, const void *p, std::size_t len)
{
    const auto b = reinterpret_cast<std::uintptr_t>(p);
    for (const shm_state::segment &sg : st.segs) {
        const auto base = reinterpret_cast<std::uintptr_t>(sg.base);
        if (b >= base && b - base <= sg.len && len <= sg.len - (b - base)) {
            return {&sg, std::size_t(b - base)};
        }
    }
    return {};
}

/// The buffer of `a` that other members touch, and its extent in bytes
/// (SIZE_MAX: the type has no symmetric form here).
std::pair<const void *, std::size_t> shared_buffer(const group &g, const weft_coll_args &a)
{
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    const std::uint32_t n = g.size;
    switch (a.type) {
        case WEFT_COLL_BCAST:
            return {a.recvbuf, bytes};  // and the source (bcast_source)
        case WEFT_COLL_ALLGATHER:
            return {a.recvbuf, bytes * n};
        case WEFT_COLL_ALLGATHERV: {
            if (a.recvcounts == nullptr || a.rdispls == nullptr ||
                a.sendbuf == WEFT_COLL_IN_PLACE || a.recvcounts[g.rank] != a.count) {
                return {nullptr, SIZE_MAX};
            }
            const std::size_t limit = SIZE_MAX / (std::size_t(n) + 1) / 64;
            std::size_t end = 0;
            for (std::uint32_t p = 0; p < n; ++p) {
                if (a.recvcounts[p] > limit || a.rdispls[p] > limit) {
                    return {nullptr, SIZE_MAX};
                }
                end = std::max(end, (a.rdispls[p] + a.recvcounts[p]) * es);
            }
            return {a.recvbuf, end};
        }
        case WEFT_COLL_ALLTOALL:
            // In place, a member's buffer is its source too: it still reads
            // blocks others would already write. Not here.
            if (a.sendbuf == WEFT_COLL_IN_PLACE) {
                return {nullptr, SIZE_MAX};
            }
            return {a.recvbuf, bytes * n};
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
            return {a.sendbuf == WEFT_COLL_IN_PLACE ? a.recvbuf : a.sendbuf, bytes};
        default:
            return {nullptr, SIZE_MAX};
    }
}

}  // namespace

/// A broadcast's data on the root: its sendbuf when given, else its recvbuf.
inline const void *bcast_source(const weft_coll_args &a)
{
    return a.sendbuf != nullptr ? a.sendbuf : a.recvbuf;
}

bool shm_symmetric(const group &g, const weft_coll_args &a)
{
    const shm_state *st = g.shm.get();
    if (st == nullptr || st->segs.empty() || a.algorithm != WEFT_COLL_ALG_AUTO ||
        a.flags != WEFT_COLL_SYMMETRIC) {
        return false;
    }
    const auto [buf, len] = shared_buffer(g, a);
    if (len == SIZE_MAX) {
        return false;
    }
    // Reductions that fit a slot are one synchronization there (each member
    // copies its contribution in); in place they need two.
    if ((a.type == WEFT_COLL_REDUCE || a.type == WEFT_COLL_ALLREDUCE) && len <= st->slot) {
        return false;
    }
    // A broadcast reads the root's source (pulled) and writes the members'
    // recvbuf (pushed): both symmetric.
    return find_sym(*st, buf, len).seg != nullptr &&
           (a.type != WEFT_COLL_BCAST || find_sym(*st, bcast_source(a), len).seg != nullptr);
}

int shm_run_symmetric(group &g, const weft_coll_args &a, combine_fn combine)
{
    shm_state &st = *g.shm;
    context &c = *g.ctx;
    const std::uint32_t n = g.size;
    const std::uint32_t me = g.rank;
    stage_call call{a, ++st.seq, st.peer[me]};
    const std::uint64_t s = call.s;
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    std::byte *const mine = st.peer[me];
    waiter wait_for{c};
    const auto [buf, extent] = shared_buffer(g, a);
    const sym_ref ref = find_sym(st, buf, extent);
    // Every member done with collective `upto` (cached: usually no load).
    auto settle = [&](std::uint64_t upto) { wait_for.all_done(st, n, me, upto); };
    auto ready = [&](std::size_t len) {
        *word(mine, len_off(s)) = stamped(len, s);  // published by the release below
        // release: our stores into the members' buffers and the length are visible.
        __atomic_store_n(word(mine, ready_off), s, __ATOMIC_RELEASE);
    };
    auto check = [&](std::uint32_t p, std::size_t want) { (void)call.check(st.peer[p], p, want); };
    int &status = call.status;
    auto finish = [&] { call.finish(); };
    // Before anything of ours changes: every member's `done` >= s - 2 (nobody
    // still reads our length word of collective s - 2) and >= the group's
    // last collective on the stage that touched buffers (pushes: every
    // member's buffer is free). A barrier in between touches none.
    settle(std::max(st.last_data, prior_of(s)));
    st.last_data = s;
    switch (a.type) {
        case WEFT_COLL_BCAST: {
            // Pushed: the root stores into every member's recvbuf. Pulled:
            // the members copy from the root's source (every member names
            // the same symmetric sendbuf, or none) while the root copies its
            // own source to its recvbuf.
            const bool push = bytes * (n - 1) <= st.push_max;
            const void *src = bcast_source(a);
            if (me == a.root) {
                if (push) {
                    for (std::uint32_t p = 0; p < n; ++p) {
                        if (p != me) {
                            copy_bytes(ref.at(p), src, bytes);
                        }
                    }
                }
                ready(bytes);
                copy_bytes(a.recvbuf, src, bytes);  // a separate source
                finish();
                if (!push) {
                    settle(s);  // everyone has copied out of our source
                }
            } else {
                wait_for(st.peer[a.root], ready_off, s);
                check(a.root, bytes);
                if (!push && status == 0) {
                    copy_bytes(a.recvbuf, find_sym(st, src, bytes).at(a.root), bytes);
                }
                finish();
            }
            break;
        }
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_ALLGATHERV:
        case WEFT_COLL_ALLTOALL: {
            // Our block (alltoall: block p of our source) to where it goes in member p.
            const bool v = a.type == WEFT_COLL_ALLGATHERV;
            const bool all = a.type == WEFT_COLL_ALLTOALL;
            const std::size_t at = (v ? a.rdispls[me] * es : me * bytes);
            const auto *src = static_cast<const std::byte *>(
                a.sendbuf == WEFT_COLL_IN_PLACE ? static_cast<std::byte *>(a.recvbuf) + at
                                                : a.sendbuf);
            for (std::uint32_t p = 0; p < n; ++p) {
                const std::byte *block = all ? src + p * bytes : src;
                std::byte *dst =
                    p == me ? static_cast<std::byte *>(a.recvbuf) + at : ref.at(p) + at;
                copy_bytes(dst, block, bytes);  // in place, our own block: nothing
            }
            ready(bytes);
            for (std::uint32_t p = 0; p < n; ++p) {
                if (p != me) {
                    wait_for(st.peer[p], ready_off, s);
                    check(p, v ? a.recvcounts[p] * es : bytes);
                }
            }
            finish();
            break;
        }
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE: {
            const bool in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
            const bool combines = a.type == WEFT_COLL_ALLREDUCE || me == a.root;
            ready(bytes);
            if (combines) {
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p != me) {
                        wait_for(st.peer[p], ready_off, s);
                        check(p, bytes);
                    }
                }
                std::byte *out = static_cast<std::byte *>(a.recvbuf);
                if (in_place) {
                    if (st.tmp.size() < bytes) {
                        st.tmp.resize(bytes);
                    }
                    out = st.tmp.data();
                }
                // A chunk at a time through every member (in rank order:
                // every member gets the same bits), so it stays in cache.
                const std::size_t chunk = std::max<std::size_t>(1, 16384 / es);
                for (std::size_t i = 0; i < a.count && status == 0; i += chunk) {
                    const std::size_t m = std::min(chunk, a.count - i);
                    const std::size_t off = i * es;
                    combine(out + off, ref.at(0) + off, ref.at(1) + off, m);
                    for (std::uint32_t p = 2; p < n; ++p) {
                        combine(out + off, out + off, ref.at(p) + off, m);
                    }
                }
                finish();
                settle(s);  // nobody reads our source any more
                if (in_place && status == 0) {
                    copy_bytes(a.recvbuf, out, bytes);
                }
            } else {
                finish();
                if (st.done_seen[a.root] < s) {
                    st.done_seen[a.root] = wait_for(st.peer[a.root], done_off, s);
                }
            }
            break;
        }
        default:
            return -WEFT_EINVAL;
    }
    return status;
}

// ------------------------------------------------------------------ single copy
//
// A blocking bcast, scatter, gather, allgather, alltoall, reduce or allreduce
// (alltoall and allreduce not in place) whose blocks are at least direct_min
// bytes moves each block once: a member whose buffer holds data others need
// registers it (weft_mr_reg, remote read) and describes it in its slot
// (direct_desc), and the members that need the data read it with weft_get
// straight into their own buffers (on a node, the shm transport's
// cross-memory attach: one copy, by the kernel); reductions read the
// members' inputs a chunk at a time and combine them in rank order. Two
// members share a bcast's or a reduction's copying (the root, or each,
// writes a part into the other's buffer with weft_put). A member whose
// buffers others read or write deregisters them and returns only when every
// member is done with the collective. Copying through the slots instead moves every
// byte through the other core's cache twice per call; on this machine that
// cost 4-7x in some launches (docs/performance.md, "Single copy").

/// Reductions read the members' inputs this many bytes at a time.
constexpr std::size_t direct_chunk = 256 * 1024;

namespace {

/// Single-copy reductions in parts (shm_run_direct): member m combines part
/// m of the vector. A reduce's root, which only reads and combines, gets a
/// part of weight 5 against 3 for the others (who also write theirs back);
/// an allreduce's parts are equal. Returns the element where member m's part
/// starts (m = n: the count).
std::size_t part_start(const weft_coll_args &a, std::uint32_t n, std::uint32_t m)
{
    if (m >= n) {
        return a.count;
    }
    const bool reduce = a.type == WEFT_COLL_REDUCE;
    const std::size_t w = reduce ? 3 * (std::size_t(n) - 1) + 5 : n;
    std::size_t cum = 0;
    for (std::uint32_t j = 0; j < m; ++j) {
        cum += reduce && j == a.root ? 5 : reduce ? 3 : 1;
    }
    return a.count / w * cum + a.count % w * cum / w;  // no overflow: cum <= w
}

/// Whether a reduction of `a` on n members runs in parts: every part at
/// least `min` bytes (the transport's single copy).
bool reduction_in_parts(const weft_coll_args &a, std::uint32_t n, std::size_t min)
{
    const std::size_t es = size_of(raw(a.datatype));
    for (std::uint32_t m = 0; m < n; ++m) {
        if ((part_start(a, n, m + 1) - part_start(a, n, m)) * es < min) {
            return false;
        }
    }
    return true;
}

}  // namespace

bool shm_takes_direct(const group &g, const weft_coll_args &a)
{
    const shm_state *st = g.shm.get();
    const std::size_t bytes = a.count * size_of(raw(a.datatype));
    if (st == nullptr || st->direct_min == SIZE_MAX || a.algorithm != WEFT_COLL_ALG_AUTO ||
        (a.flags & ~WEFT_COLL_SYMMETRIC) != 0 || bytes < st->direct_min ||
        bytes >= len_bits / g.size) {  // a published length
        return false;
    }
    // In place, an alltoall's or allreduce's input would be overwritten while
    // others read it. A reduce is in place only at its root, whose input is
    // read in parts: part m only by member m, one chunk just before it writes
    // that chunk's result there.
    const bool in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
    if (g.size == 2) {
        // A bcast or reduction stays on the stage while it fits a slot, or four
        // slots' worth in pieces: measured 0.43-0.60x the single copy's time in
        // one slot (64 KiB), 0.53-0.94x in pieces at 128-256 KiB
        // (docs/performance.md, "Two members: bcasts and reductions on the
        // stage up to four slots").
        const bool staged = shm_takes(g, a) || (shm_takes_large(g, a) && bytes <= 4 * st->slot);
        switch (a.type) {
            case WEFT_COLL_BCAST:
            case WEFT_COLL_REDUCE:
                return !staged;
            case WEFT_COLL_ALLGATHER:
                // Its block in our slot: the stage while it fits (64 KiB:
                // 0.59x the single copy's time).
                return !shm_takes(g, a);
            case WEFT_COLL_GATHER:
            case WEFT_COLL_SCATTER:
                return true;
            case WEFT_COLL_ALLREDUCE:
                return !in_place && !staged;
            case WEFT_COLL_ALLTOALL:
                return !in_place;
            default:
                return false;
        }
    }
    // More members (measured with 4 ranks on 2 cores, docs/performance.md):
    // what fits a slot stays on the stage, and so do allgathers the stage
    // takes in pieces; allreduce only in parts (every member reading every
    // input whole was 2.2-3.3x the pieces' time; in parts 0.67-0.75x from
    // 1 MiB), reduce in parts only above the pieces (there 0.68-0.94x the
    // message path's time; the pieces' were 0.5-0.9x the parts' at 512 KiB-1
    // MiB: on 2 cores the reads' cost counts, not their parallelism).
    switch (a.type) {
        case WEFT_COLL_ALLREDUCE:
            return !in_place && !shm_takes(g, a) && reduction_in_parts(a, g.size, st->direct_min);
        case WEFT_COLL_REDUCE:  // in place only at the root: every member decides alike
            return !shm_takes(g, a) && !shm_takes_large(g, a) &&
                   reduction_in_parts(a, g.size, st->direct_min);
        case WEFT_COLL_BCAST:
        case WEFT_COLL_GATHER:
        case WEFT_COLL_SCATTER:
            return !shm_takes(g, a);
        case WEFT_COLL_ALLTOALL:
            return !in_place && !shm_takes(g, a);
        case WEFT_COLL_ALLGATHER:
            return !shm_takes(g, a) && !shm_takes_large(g, a);
        default:
            return false;
    }
}

int shm_run_direct(group &g, const weft_coll_args &a, combine_fn combine)
{
    switch (a.type) {
        case WEFT_COLL_BCAST:
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER:
        case WEFT_COLL_SCATTER:
        case WEFT_COLL_ALLTOALL:
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
            break;
        default:
            return -WEFT_EINVAL;  // before the sequence moves: shm_takes_direct said no
    }
    shm_state &st = *g.shm;
    context &c = *g.ctx;
    const std::uint32_t n = g.size;
    const std::uint32_t me = g.rank;
    stage_call call{a, ++st.seq, st.peer[me]};
    const std::uint64_t s = call.s;
    st.last_data = s;
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    auto *out = static_cast<std::byte *>(a.recvbuf);
    const bool root = me == a.root;
    const bool send_in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
    const auto *send = static_cast<const std::byte *>(a.sendbuf);
    const char *name = weft_coll_type_name(a.type);
    int &status = call.status;
    waiter wait_for{c};
    auto slot = [&](std::uint32_t p) { return st.peer[p] + data_off + (s % 2) * st.slot; };

    const bool reduction = a.type == WEFT_COLL_REDUCE || a.type == WEFT_COLL_ALLREDUCE;
    // A bcast of 2 members whose halves are large enough for the transport's
    // single copy is copied by both: the reader reads the first half (to a
    // page) from the root's source while the root writes the second into the
    // reader's buffer. A reduction whose parts are large enough runs in
    // parts (part_start): each member combines its own part, reading it from
    // every other input, and writes the result into the buffers that need it.
    const std::size_t half = (bytes / 2) & ~std::size_t(4095);
    const bool split =
        a.type == WEFT_COLL_BCAST && n == 2 && std::min(half, bytes - half) >= st.direct_min;
    const bool parts = reduction && reduction_in_parts(a, n, st.direct_min);

    // What this member gives the others: up to two buffers (described in its
    // slot, in this order), what they may do with each. `total` is the first
    // one's length: the bytes every member's first buffer holds (n blocks
    // for scatter and alltoall); a second one holds `bytes`. Every member
    // describes both, `used` or not (key length 0), so that a member whose
    // count differs from ours finds out instead of waiting for us.
    struct exposure {
        bool used = false;
        const void *buf = nullptr;
        std::uint64_t access = WEFT_ACCESS_REMOTE_READ;
        weft_mr_t *mr = nullptr;
    };
    exposure ex[2];
    std::size_t total = bytes;
    const std::byte *own = send_in_place ? out : send;  // a reduction's input
    const bool all = a.type == WEFT_COLL_ALLREDUCE;
    switch (a.type) {
        case WEFT_COLL_BCAST:
            if (root) {
                ex[0] = {true, bcast_source(a)};
            } else if (split) {
                ex[0] = {true, a.recvbuf, WEFT_ACCESS_REMOTE_WRITE};
            }
            break;
        case WEFT_COLL_ALLGATHER:
            ex[0] = {true, send_in_place ? out + me * bytes : a.sendbuf};
            break;
        case WEFT_COLL_GATHER:
            ex[0] = {!root, a.sendbuf};
            break;
        case WEFT_COLL_SCATTER:
            total = bytes * n;
            ex[0] = {root, a.sendbuf};
            break;
        case WEFT_COLL_ALLTOALL:
            total = bytes * n;
            ex[0] = {true, a.sendbuf};
            break;
        default:  // reduce, allreduce
            ex[0] = {!root || all || parts, own};
            if (parts && (root || all)) {
                ex[1] = {true, a.recvbuf, WEFT_ACCESS_REMOTE_WRITE};
            }
            break;
    }
    const std::uint32_t mode = split ? 1 : parts ? 2 : 0;
    // This member's result is partly written by others: their failures are ours.
    const bool written = (split && !root) || (parts && (root || all));

    wait_for.all_done(st, n, me, prior_of(s));  // our slot s % 2 is free
    for (std::size_t k = 0; k < 2; ++k) {
        auto *d = reinterpret_cast<direct_desc *>(slot(me) + k * sizeof(direct_desc));
        const std::size_t len = k == 0 ? total : bytes;
        std::size_t klen = 0;
        if (ex[k].used) {
            klen = sizeof(d->key);
            int rc = ex[k].buf == nullptr && len != 0
                         ? -WEFT_EINVAL
                         : weft_mr_reg(c.domain, ex[k].buf, len, ex[k].access, 0, &ex[k].mr);
            if (rc == 0) {
                rc = weft_mr_pack_key(ex[k].mr, d->key, &klen);
            }
            if (rc != 0) {
                log("error", "%s: registering a buffer the other members use failed: %s", name,
                    weft_strerror(rc));
                status = status != 0 ? status : rc;
                klen = 0;  // the others fail too, and everyone still finishes
            }
        }
        d->seq = s;
        d->addr = reinterpret_cast<std::uintptr_t>(ex[k].buf);
        d->len = len;
        d->key_len = std::uint32_t(klen);
        d->mode = mode;
    }
    *word(st.peer[me], len_off(s)) = stamped(total, s);  // published by the release below
    // release: the descriptions above are visible to whoever sees ready == s.
    __atomic_store_n(word(st.peer[me], ready_off), s, __ATOMIC_RELEASE);

    // Member p's description k for collective s, copied out of shared memory
    // into d (false: p finished the collective without one, or with another
    // count or form than ours; the call's error says so).
    auto describe = [&](std::uint32_t p, std::size_t k, direct_desc &d) {
        // p describes its buffers for collective s, or finishes it on
        // another path without (its count differs from ours).
        if (!wait_for.published(st.peer[p], s)) {
            if (status == 0) {
                log("error",
                    "%s: member %u finished this collective without describing its "
                    "buffers: its count differs from this member's",
                    name, p);
                status = -WEFT_EINVAL;
            }
            return false;
        }
        if (call.check(st.peer[p], p, total) != total) {
            return false;  // counts differ between members: logged, the call's error
        }
        const std::byte *from = slot(p) + k * sizeof(direct_desc);
        std::memcpy(&d, from, offsetof(direct_desc, key));
        if (d.seq != s || d.mode != mode || d.len != (k == 0 ? total : bytes) ||
            d.key_len > sizeof(d.key)) {
            if (status == 0) {
                log("error",
                    "%s: member %u described collective %llu (this is %llu) in form %u (this "
                    "member's: %u), %llu bytes, a key of %u",
                    name, p, static_cast<unsigned long long>(d.seq),
                    static_cast<unsigned long long>(s), d.mode, mode,
                    static_cast<unsigned long long>(d.len), d.key_len);
                status = d.key_len > sizeof(d.key) ? -WEFT_EBADMSG : -WEFT_EINVAL;
            }
            return false;
        }
        std::memcpy(d.key, from + offsetof(direct_desc, key), d.key_len);
        return true;
    };
    // Member p's k-th buffer, looked up once per call: its address and its
    // key, unpacked (nullptr: unusable; the call's error says why).
    std::vector<shm_state::direct_source> &src = st.direct_src;
    src.assign(2 * std::size_t(n), {});
    auto source = [&](std::uint32_t p, std::size_t k) -> weft_rkey_t * {
        shm_state::direct_source &ds = src[2 * p + k];
        if (ds.looked) {
            return ds.key;
        }
        ds.looked = true;
        direct_desc d;
        if (!describe(p, k, d)) {
            return nullptr;
        }
        if (d.key_len == 0) {
            if (status == 0) {
                log("error", "%s: member %u could not give its buffer", name, p);
                status = -WEFT_EIO;
            }
            return nullptr;
        }
        const int rc = weft_rkey_unpack(c.ep, g.addrs[p], d.key, d.key_len, &ds.key);
        if (rc != 0) {
            log("error", "%s: member %u's key for its buffer: %s", name, p, weft_strerror(rc));
            status = status != 0 ? status : rc;
            ds.key = nullptr;
            return nullptr;
        }
        ds.addr = d.addr;
        return ds.key;
    };
    // Read `len` bytes at `off` of member p's k-th buffer into `local`, or
    // write them there from `local` (visible at p when complete); both
    // complete in wait_reads.
    auto transfer = [&](bool put, std::uint32_t p, std::size_t k, std::size_t off, void *local,
                        std::size_t len) {
        weft_rkey_t *rk = source(p, k);
        if (rk == nullptr) {
            return;
        }
        const struct iovec iov {
            local, len
        };
        weft_msg_rma m{};
        m.msg_iov = &iov;
        m.iov_count = 1;
        m.rma_addr = src[2 * p + k].addr + off;
        m.rkey = rk;
        m.context = &c.direct_pending;
        ++c.direct_pending;
        for (;;) {
            const ssize_t r = put ? weft_putmsg(c.ep, &m, WEFT_COMPLETION | WEFT_DELIVERY_COMPLETE)
                                  : weft_getmsg(c.ep, &m, WEFT_COMPLETION);
            if (r == 0) {
                break;
            }
            if (r != -WEFT_EAGAIN) {
                --c.direct_pending;
                log("error", "%s: %s member %u's buffer: %s", name, put ? "writing" : "reading", p,
                    weft_strerror(int(r)));
                status = status != 0 ? status : int(r);
                break;
            }
            (void)c.progress();
        }
    };
    auto read = [&](std::uint32_t p, std::size_t off, void *dst, std::size_t len) {
        transfer(false, p, 0, off, dst, len);
    };
    auto wait_reads = [&] {
        int failed = 0;
        wait_for.until([&] {
            const int rc = c.progress();
            if (rc < 0) {
                failed = rc;  // the CQ itself failed: the reads will not complete
                return true;
            }
            return c.direct_pending == 0;
        });
        if (failed != 0) {
            log("error", "%s: reading the completion queue failed: %s", name,
                weft_strerror(failed));
            status = status != 0 ? status : failed;
            c.direct_pending = 0;  // abandoned (progress() never counts below 0)
        }
        if (c.direct_err != 0) {
            status = status != 0 ? status : c.direct_err;
            c.direct_err = 0;
        }
    };
    switch (a.type) {
        case WEFT_COLL_BCAST:
            if (root) {
                const void *from = bcast_source(a);
                if (split) {
                    transfer(true, 1 - me, 0, half,
                             const_cast<std::byte *>(static_cast<const std::byte *>(from) + half),
                             bytes - half);
                }
                copy_bytes(a.recvbuf, from, bytes);  // a separate source
            } else {
                read(a.root, 0, out, split ? half : bytes);
            }
            break;
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER:
            if (a.type == WEFT_COLL_ALLGATHER || root) {
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p != me) {
                        read(p, 0, out + p * bytes, bytes);
                    } else if (!send_in_place) {
                        copy_bytes(out + me * bytes, send, bytes);
                    }
                }
            }
            break;
        case WEFT_COLL_SCATTER:
            if (!root) {
                read(a.root, me * bytes, out, bytes);
            } else if (a.recvbuf != WEFT_COLL_IN_PLACE) {
                copy_bytes(out, send + me * bytes, bytes);
            }
            break;
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE: {
            if (!parts && !all && !root) {
                break;  // our input is read by the root
            }
            const std::size_t chunk = std::max<std::size_t>(es, direct_chunk / es * es);
            if (st.direct_tmp.size() < chunk * (n + 1)) {
                st.direct_tmp.resize(chunk * (n + 1));
            }
            std::byte *tmp = st.direct_tmp.data();
            // A chunk at a time: the other inputs read into tmp, combined
            // with ours in rank order (every member's result has the same
            // bits; our input, in place a reduce's root's of 2 members, is
            // operand a or b of the first combine, which may be dst). In
            // parts, only our part, and the result goes into every other
            // member's result (allreduce) or the root's (reduce); otherwise
            // the whole vector, for us.
            const bool keep = all || root;     // the result is ours too
            std::byte *res = tmp + n * chunk;  // a reduce's non-root in parts: its result chunk
            const std::size_t begin = parts ? part_start(a, n, me) * es : 0;
            const std::size_t end = parts ? part_start(a, n, me + 1) * es : bytes;
            // Equal chunks of at most `chunk`, so that none is much smaller: a
            // read below the transport's single-copy minimum goes through
            // active messages, which wait for the owner's progress.
            const std::size_t pieces = std::max<std::size_t>(1, (end - begin + chunk - 1) / chunk);
            const std::size_t step = ((end - begin) / es + pieces - 1) / pieces * es;
            for (std::size_t off = begin; off < end && status == 0; off += step) {
                const std::size_t m = std::min(step, end - off);
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p != me) {
                        read(p, off, tmp + p * chunk, m);
                    }
                }
                wait_reads();
                if (status != 0) {
                    break;
                }
                std::byte *dst = keep ? out + off : res;
                // In place (a reduce's root), our input is dst: an operand of
                // the first combine as member 0 or 1, else copied out first.
                const bool aside = own + off == dst && me >= 2;
                if (aside) {
                    copy_bytes(tmp + me * chunk, dst, m);
                }
                auto from = [&](std::uint32_t p) -> const std::byte * {
                    return p == me && !aside ? own + off : tmp + p * chunk;
                };
                combine(dst, from(0), from(1), m / es);
                for (std::uint32_t p = 2; p < n; ++p) {
                    combine(dst, dst, from(p), m / es);
                }
                if (parts) {
                    for (std::uint32_t p = 0; p < n; ++p) {
                        if (p != me && (all || p == a.root)) {
                            transfer(true, p, 1, off, dst, m);
                        }
                    }
                    wait_reads();
                }
            }
            break;
        }
        case WEFT_COLL_ALLTOALL:
            for (std::uint32_t p = 0; p < n; ++p) {
                if (p != me) {
                    read(p, me * bytes, out + p * bytes, bytes);
                } else {
                    copy_bytes(out + me * bytes, send + me * bytes, bytes);
                }
            }
            break;
        default:
            break;
    }
    // A member that read nothing checks the root's description: a count or
    // form that differs from ours is then an error here too.
    if (!root && (a.type == WEFT_COLL_GATHER || (a.type == WEFT_COLL_REDUCE && !parts))) {
        direct_desc d;
        (void)describe(a.root, 0, d);
    }
    // Our reads complete (their data is in our buffers), then the keys go.
    wait_reads();
    for (shm_state::direct_source &ds : src) {
        weft_rkey_release(ds.key);  // nullptr: nothing
        ds.key = nullptr;
    }
    if (status != 0) {
        // Published by the release of done: the members whose results we
        // were to write learn that we did not.
        __atomic_store_n(word(st.peer[me], failed_off), s, __ATOMIC_RELAXED);
    }
    call.finish();
    if (ex[0].used || ex[1].used || written) {
        // Nobody reads or writes our buffers any more once every member is done.
        wait_for.all_done(st, n, me, s);
        for (exposure &e : ex) {
            if (e.mr != nullptr) {
                weft_mr_close(e.mr);
            }
        }
    }
    if (written) {
        for (std::uint32_t p = 0; p < n; ++p) {
            // relaxed: ordered by the acquire of p's done above; a later
            // value (p failing a later collective) is not s either.
            if (p != me && __atomic_load_n(word(st.peer[p], failed_off), __ATOMIC_RELAXED) == s &&
                status == 0) {
                log("error", "%s: member %u failed its part of this member's result", name, p);
                status = -WEFT_EIO;
            }
        }
    }
    return status;
}

int shm_add_segment(group &g, void *base, std::size_t len, weft_mr_t *mr, const weft_coll_oob &oob)
{
    context &c = *g.ctx;
    if (g.shm == nullptr) {
        return 0;  // no stage on any member (the same decision everywhere)
    }
    shm_state &st = *g.shm;
    struct record {
        std::uint64_t base;
        std::uint64_t len;
        std::uint32_t key_len;
        std::uint32_t pad;
        std::byte key[WEFT_MR_KEY_MAX];
    };
    record mine{};
    mine.base = reinterpret_cast<std::uint64_t>(base);
    mine.len = len;
    std::size_t klen = sizeof(mine.key);
    int rc = mr == nullptr ? -WEFT_EINVAL : weft_mr_pack_key(mr, mine.key, &klen);
    mine.key_len = rc == 0 ? std::uint32_t(klen) : 0;
    std::vector<record> all(g.size);
    int orc = oob.allgather(&mine, all.data(), sizeof(record), oob.arg);
    if (orc != 0) {
        return orc < 0 ? orc : -WEFT_EOTHER;
    }
    shm_state::segment sg;
    sg.base = static_cast<std::byte *>(base);
    sg.len = len;
    for (const record &r : all) {
        sg.len = std::min<std::size_t>(sg.len, r.len);
    }
    sg.peer.assign(g.size, nullptr);
    sg.rkeys.assign(g.size, nullptr);
    std::uint32_t ok = rc == 0 && base != nullptr ? 1 : 0;
    for (std::uint32_t p = 0; p < g.size && ok != 0; ++p) {
        if (p == g.rank) {
            sg.peer[p] = sg.base;
            continue;
        }
        const record &r = all[p];
        if (r.key_len == 0 || r.key_len > sizeof(r.key) ||
            weft_rkey_unpack(c.ep, g.addrs[p], r.key, r.key_len, &sg.rkeys[p]) != 0) {
            ok = 0;
            break;
        }
        sg.peer[p] = static_cast<std::byte *>(weft_rkey_ptr(sg.rkeys[p], r.base, sg.len));
        ok = sg.peer[p] != nullptr ? 1 : 0;
    }
    std::vector<std::uint32_t> oks(g.size);
    orc = oob.allgather(&ok, oks.data(), sizeof(ok), oob.arg);
    const bool everyone =
        orc == 0 && std::all_of(oks.begin(), oks.end(), [](std::uint32_t v) { return v != 0; });
    if (everyone) {
        st.segs.push_back(std::move(sg));
    } else {
        for (weft_rkey_t *k : sg.rkeys) {
            weft_rkey_release(k);
        }
    }
    if (orc != 0) {
        return orc < 0 ? orc : -WEFT_EOTHER;
    }
    return 0;
}

int shm_setup(group &g, const shm_params &prm, const weft_coll_oob &oob)
{
    context &c = *g.ctx;
    // Every member says where its region is and how to reach it; then every
    // member says whether it could map all the others; the path is used only
    // if all could (each member decides alike).
    struct record {
        std::uint64_t base;
        std::uint32_t key_len;
        std::uint32_t pad;
        std::byte key[WEFT_MR_KEY_MAX];
    };
    auto st = std::make_unique<shm_state>();
    st->slot = prm.slot;
    st->push_max = prm.push_max;
    st->large_max = prm.large_max;
    const std::size_t len = data_off + 2 * prm.slot;
    void *mem = nullptr;
    record mine{};
    int rc = weft_mr_alloc(c.domain, len,
                           WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE,
                           0, &mem, &st->mr);
    if (rc == 0) {
        std::size_t klen = sizeof(mine.key);
        rc = weft_mr_pack_key(st->mr, mine.key, &klen);
        mine.key_len = std::uint32_t(klen);
        mine.base = reinterpret_cast<std::uint64_t>(mem);
    }
    std::vector<record> all(g.size);
    const int orc = oob.allgather(&mine, all.data(), sizeof(record), oob.arg);
    if (orc != 0) {
        return orc < 0 ? orc : -WEFT_EOTHER;
    }
    std::uint32_t ok = rc == 0 ? 1 : 0;
    st->peer.assign(g.size, nullptr);
    st->done_seen.assign(g.size, 0);
    st->rkeys.assign(g.size, nullptr);
    for (std::uint32_t p = 0; p < g.size && ok != 0; ++p) {
        if (p == g.rank) {
            st->peer[p] = static_cast<std::byte *>(mem);
            continue;
        }
        const record &r = all[p];
        if (r.key_len == 0 || r.key_len > sizeof(r.key) ||
            weft_rkey_unpack(c.ep, g.addrs[p], r.key, r.key_len, &st->rkeys[p]) != 0) {
            ok = 0;
            break;
        }
        st->peer[p] = static_cast<std::byte *>(weft_rkey_ptr(st->rkeys[p], r.base, len));
        ok = st->peer[p] != nullptr ? 1 : 0;
    }
    // Bit 1: this member can take part in single-copy calls (it reads with
    // RMA, and a slot holds the description of a buffer).
    if (ok != 0 && c.rma && prm.direct_min != SIZE_MAX && prm.slot >= 2 * sizeof(direct_desc)) {
        ok |= 2;
    }
    std::vector<std::uint32_t> oks(g.size);
    const int orc2 = oob.allgather(&ok, oks.data(), sizeof(ok), oob.arg);
    if (orc2 != 0) {
        return orc2 < 0 ? orc2 : -WEFT_EOTHER;
    }
    bool direct = true;
    for (std::uint32_t v : oks) {
        if ((v & 1) == 0) {
            return 0;  // not every member maps every region: the network path only
        }
        direct = direct && (v & 2) != 0;
    }
    st->direct_min = direct ? prm.direct_min : SIZE_MAX;
    st->direct_src.reserve(g.size);
    g.shm = std::move(st);
    return 0;
}

shm_state::~shm_state()
{
    for (segment &sg : segs) {
        for (weft_rkey_t *k : sg.rkeys) {
            weft_rkey_release(k);
        }
    }
    for (weft_rkey_t *k : rkeys) {
        weft_rkey_release(k);
    }
    if (mr != nullptr) {
        weft_mr_close(mr);
    }
}

void shm_teardown(group &g)
{
    if (g.shm == nullptr) {
        return;
    }
    // Our region goes away: wait (boundedly: a member may have died) until
    // every member has read the collectives that used it.
    shm_state &st = *g.shm;
    for (std::uint32_t p = 0; p < g.size; ++p) {
        for (long spins = 0;
             __atomic_load_n(word(st.peer[p], done_off), __ATOMIC_ACQUIRE) < st.seq &&
             spins < 100000000;
             ++spins) {
            if ((spins & 1023) == 0) {
                sched_yield();
            }
        }
    }
    g.shm.reset();
}

}  // namespace weft::coll
