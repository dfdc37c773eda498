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

#include <cstring>

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
constexpr std::size_t done_off = 64;  // a cache line apart: different writers' reads
constexpr std::size_t data_off = 128;

/// memcpy that allows a null pointer with no bytes (count 0).
inline void copy_bytes(void *dst, const void *src, std::size_t len)
{
    if (len != 0) {
        std::memcpy(dst, src, len);
    }
}

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

}  // namespace

bool shm_takes(const group &g, const weft_coll_args &a)
{
    return g.shm != nullptr && a.algorithm == WEFT_COLL_ALG_AUTO && a.flags == 0 &&
           published(a, g.size) <= g.shm->slot;
}

int shm_run(group &g, const weft_coll_args &a, combine_fn combine)
{
    shm_state &st = *g.shm;
    context &c = *g.ctx;
    const std::uint32_t n = g.size;
    const std::uint32_t me = g.rank;
    const std::uint64_t s = ++st.seq;
    const std::size_t es = size_of(raw(a.datatype));
    const std::size_t bytes = a.count * es;
    auto data = [&](std::uint32_t p) { return st.peer[p] + data_off + (s % 2) * st.slot; };
    long spins = 0;
    long polls = 0;
    auto wait_for = [&](std::uint32_t p, std::size_t off, std::uint64_t want) {
        // acquire: pairs with the owner's release store; its data is visible.
        std::uint64_t v;
        while ((v = __atomic_load_n(word(st.peer[p], off), __ATOMIC_ACQUIRE)) < want) {
            // Our endpoint's traffic and the caller's must move meanwhile: a
            // member we wait for may wait for them (the rest of a large
            // message an earlier collective sent it, credits of ours).
            if ((++polls & 63) == 0) {
                (void)c.progress();
                if (c.wait_hook != nullptr) {
                    c.wait_hook(c.wait_arg);
                }
            }
            if (++spins > c.spins_before_yield) {
                spins = 0;
                if (c.wait_hook != nullptr) {
                    c.wait_hook(c.wait_arg);
                }
                sched_yield();
            }
        }
        return v;
    };
    auto publish = [&](const void *src, std::size_t len) {
        if (s > 2) {
            for (std::uint32_t p = 0; p < n; ++p) {
                // Nobody still reads slot s % 2. A member's `done` read at an
                // earlier publish is usually far enough: no cache miss then.
                if (st.done_seen[p] < s - 2) {
                    st.done_seen[p] = wait_for(p, done_off, s - 2);
                }
            }
        }
        if (len != 0) {
            std::memcpy(data(me), src, len);
        }
        *word(st.peer[me], len_off(s)) = len;  // published by the release below
        // release: the data above is visible to whoever sees ready == s.
        __atomic_store_n(word(st.peer[me], ready_off), s, __ATOMIC_RELEASE);
    };
    // Counts that differ between members (an erroneous program): the reader
    // that expected fewer bytes than were published reports truncation, one
    // that expected more an error too; both still finish the protocol.
    int status = 0;
    auto check = [&](std::uint32_t p, std::size_t want) {
        const std::uint64_t got = *word(st.peer[p], len_off(s));  // after the acquire of `ready`
        if (got != want && status == 0) {
            log("error", "%s: member %u published %llu bytes, this member expected %zu",
                weft_coll_type_name(a.type), p, static_cast<unsigned long long>(got), want);
            status = got > want ? -WEFT_ETRUNC : -WEFT_EINVAL;
        }
        return got < want ? std::size_t(got) : want;
    };
    auto finish = [&] {
        // release: our reads of the others' slots are done before they may reuse them.
        __atomic_store_n(word(st.peer[me], done_off), s, __ATOMIC_RELEASE);
    };
    const void *in = a.sendbuf == WEFT_COLL_IN_PLACE ? a.recvbuf : a.sendbuf;
    auto *out = static_cast<std::byte *>(a.recvbuf);
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            __atomic_store_n(word(st.peer[me], ready_off), s, __ATOMIC_RELEASE);
            for (std::uint32_t p = 0; p < n; ++p) {
                wait_for(p, ready_off, s);
            }
            break;
        case WEFT_COLL_BCAST:
            if (me == a.root) {
                publish(a.recvbuf, bytes);
            } else {
                wait_for(a.root, ready_off, s);
                copy_bytes(a.recvbuf, data(a.root), check(a.root, bytes));
            }
            break;
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
            publish(in, bytes);
            if (a.type == WEFT_COLL_ALLREDUCE || me == a.root) {
                for (std::uint32_t p = 0; p < n; ++p) {
                    wait_for(p, ready_off, s);
                    check(p, bytes);
                }
                if (bytes != 0 && status == 0) {
                    combine(out, data(0), data(1), a.count);
                    for (std::uint32_t p = 2; p < n; ++p) {
                        combine(out, out, data(p), a.count);
                    }
                }
            }
            break;
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER: {
            publish(a.sendbuf == WEFT_COLL_IN_PLACE ? out + me * bytes : in, bytes);
            if (a.type == WEFT_COLL_ALLGATHER || me == a.root) {
                for (std::uint32_t p = 0; p < n; ++p) {
                    if (p == me && a.sendbuf == WEFT_COLL_IN_PLACE) {
                        continue;
                    }
                    wait_for(p, ready_off, s);
                    copy_bytes(out + p * bytes, data(p), check(p, bytes));
                }
            }
            break;
        }
        case WEFT_COLL_ALLTOALL:
            publish(in, bytes * n);
            for (std::uint32_t p = 0; p < n; ++p) {
                wait_for(p, ready_off, s);
                if (check(p, bytes * n) == bytes * n) {
                    copy_bytes(out + p * bytes, data(p) + me * bytes, bytes);
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
                wait_for(a.root, ready_off, s);
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

int shm_setup(group &g, std::size_t slot, const weft_coll_oob &oob)
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
    st->slot = slot;
    const std::size_t len = data_off + 2 * slot;
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
    std::vector<std::uint32_t> oks(g.size);
    const int orc2 = oob.allgather(&ok, oks.data(), sizeof(ok), oob.arg);
    if (orc2 != 0) {
        return orc2 < 0 ? orc2 : -WEFT_EOTHER;
    }
    for (std::uint32_t v : oks) {
        if (v == 0) {
            return 0;  // not every member maps every region: the network path only
        }
    }
    g.shm = std::move(st);
    return 0;
}

shm_state::~shm_state()
{
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
