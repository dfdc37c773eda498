// Contexts, groups, requests and the engine that runs schedules
// (docs/collectives.md).

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "collectives/src/coll_impl.hpp"

namespace weft::coll {
namespace {

/// The WEFT_COLL_* variables this library reads (docs/collectives.md).
constexpr const char *known_vars[] = {"WEFT_COLL_BCAST_LARGE",
                                      "WEFT_COLL_ALLREDUCE_SMALL",
                                      "WEFT_COLL_ALLREDUCE_RING",
                                      "WEFT_COLL_ALLGATHER_SMALL",
                                      "WEFT_COLL_ROOTED_SMALL",
                                      "WEFT_COLL_ALLTOALL_SMALL",
                                      "WEFT_COLL_ALLTOALL_MEDIUM",
                                      "WEFT_COLL_ALLTOALL_BATCH",
                                      "WEFT_COLL_RNDV_THRESH",
                                      "WEFT_COLL_REDUCE_SCATTER_SMALL",
                                      "WEFT_COLL_CACHE",
                                      "WEFT_COLL_TRIGGERED",
                                      "WEFT_COLL_SHM_SLOT",
                                      "WEFT_COLL_SHM_PUSH",
                                      "WEFT_COLL_NODE",
                                      "WEFT_COLL_SHM_LARGE",
                                      "WEFT_COLL_SHM_DIRECT"};

/// Warn about WEFT_COLL_* variables that are none of ours (a typo would
/// otherwise be ignored silently).
void check_environment()
{
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry(*e);
        if (entry.rfind("WEFT_COLL_", 0) != 0) {
            continue;
        }
        const std::string name = entry.substr(0, entry.find('='));
        if (std::find_if(std::begin(known_vars), std::end(known_vars),
                         [&](const char *k) { return name == k; }) == std::end(known_vars)) {
            log("warn", "%s is not a variable of the collectives library (docs/collectives.md)",
                name.c_str());
        }
    }
}

std::size_t env_size(const char *name, std::size_t dflt)
{
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        return dflt;
    }
    char *end = nullptr;
    const unsigned long long x = std::strtoull(v, &end, 0);
    if (end == v || *end != '\0') {
        log("warn", "%s=%s is not a number; using %zu", name, v, dflt);
        return dflt;
    }
    return std::size_t(x);
}

void run_local(const step &s, combine_fn combine)
{
    if (s.kind == step_kind::copy) {
        std::memcpy(s.dst, s.src, s.len);
    } else {
        combine(s.dst, s.src2, s.src, s.len);
    }
}

bool rooted(weft_coll_type t)
{
    switch (t) {
        case WEFT_COLL_BCAST:
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_GATHER:
        case WEFT_COLL_GATHERV:
        case WEFT_COLL_SCATTER:
        case WEFT_COLL_SCATTERV:
            return true;
        default:
            return false;
    }
}

bool reduction(weft_coll_type t)
{
    switch (t) {
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
        case WEFT_COLL_REDUCE_SCATTER:
        case WEFT_COLL_REDUCE_SCATTER_BLOCK:
        case WEFT_COLL_SCAN:
        case WEFT_COLL_EXSCAN:
            return true;
        default:
            return false;
    }
}

/// The buffer this member uses for `a` with some bytes in it that is NULL
/// ("sendbuf" or "recvbuf"), or nullptr when there is none. The v arrays
/// this member reads are present (checked before; the others may be NULL).
const char *null_buffer(const group &g, const weft_coll_args &a)
{
    const std::uint32_t n = g.size;
    const bool root = rooted(a.type) && a.root == g.rank;
    const bool send_in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
    const bool some = a.count != 0;
    auto any = [&](const std::size_t *p) {
        return p != nullptr && std::any_of(p, p + n, [](std::size_t x) { return x != 0; });
    };
    bool send = false;  // whether this member reads its sendbuf, and bytes are in it
    bool recv = false;  // the same for its recvbuf
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            break;
        case WEFT_COLL_BCAST:
            recv = some;  // a root's sendbuf is optional (NULL: the recvbuf is the source)
            break;
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_GATHER:
            send = !send_in_place && some;
            recv = root && some;
            break;
        case WEFT_COLL_GATHERV:
            send = !send_in_place && some;
            recv = root && any(a.recvcounts);
            break;
        case WEFT_COLL_ALLGATHERV:
            send = !send_in_place && some;
            recv = any(a.recvcounts);
            break;
        case WEFT_COLL_SCATTER:
            send = root && some;
            recv = a.recvbuf != WEFT_COLL_IN_PLACE && some;
            break;
        case WEFT_COLL_SCATTERV:
            send = root && any(a.sendcounts);
            recv = a.recvbuf != WEFT_COLL_IN_PLACE && some;
            break;
        case WEFT_COLL_ALLTOALLV:
            send = !send_in_place && any(a.sendcounts);
            recv = any(a.recvcounts);
            break;
        case WEFT_COLL_REDUCE_SCATTER:
            send = !send_in_place && any(a.recvcounts);
            // In place the recvbuf holds the whole input.
            recv = send_in_place ? any(a.recvcounts)
                                 : a.recvcounts != nullptr && a.recvcounts[g.rank] != 0;
            break;
        case WEFT_COLL_EXSCAN:
            send = !send_in_place && some;
            // Not significant on the first member (MPI), unless it is the input.
            recv = (g.rank != 0 || send_in_place) && some;
            break;
        default:  // allreduce, allgather, alltoall, reduce_scatter_block, scan
            send = !send_in_place && some;
            recv = some;
            break;
    }
    if (send && a.sendbuf == nullptr) {
        return "sendbuf";
    }
    return recv && a.recvbuf == nullptr ? "recvbuf" : nullptr;
}

/// Check the arguments and copy them (with the v arrays this member uses) into r.
int take_args(request &r, const weft_coll_args &a)
{
    const group &g = *r.grp;
    const std::uint32_t n = g.size;
    if (!enums_in_range(a)) {
        log("error", "collective type %d, datatype %d or op %d is no value of its enum",
            raw(a.type), raw(a.datatype), raw(a.op));
        return -WEFT_EINVAL;
    }
    const char *name = weft_coll_type_name(a.type);
    auto bad = [&](const char *why) {
        log("error", "%s: %s", name, why);
        return -WEFT_EINVAL;
    };
    if (a.algorithm >= WEFT_COLL_ALG_COUNT) {
        return bad("algorithm is not one of enum weft_coll_algorithm");
    }
    if (a.flags & ~(WEFT_COLL_PERSISTENT | WEFT_COLL_SYMMETRIC)) {
        return bad("unknown flags");
    }
    r.args = a;
    if (a.type == WEFT_COLL_BARRIER) {
        r.args.count = 0;
        return 0;
    }
    const std::size_t es = size_of(raw(a.datatype));
    if (es == 0) {
        return bad("datatype is not one of enum weft_coll_datatype");
    }
    if (reduction(a.type)) {
        r.combine = combine_of(raw(a.datatype), raw(a.op));
        if (r.combine == nullptr) {
            return bad("the operation is not defined on the datatype");
        }
    }
    if (rooted(a.type) && a.root >= n) {
        return bad("root is not a member of the group");
    }
    const bool root = rooted(a.type) && a.root == g.rank;
    // The v arrays this member reads, and where a count bounds the buffers.
    auto need = [&](const std::size_t *p, const char *what) {
        if (p == nullptr) {
            log("error", "%s: %s is NULL", name, what);
            return false;
        }
        return true;
    };
    auto keep = [&](const std::size_t *p) {
        const std::size_t at = r.arrays.size();
        r.arrays.insert(r.arrays.end(), p, p + n);
        return at;
    };
    std::size_t at_sc = SIZE_MAX;
    std::size_t at_sd = SIZE_MAX;
    std::size_t at_rc = SIZE_MAX;
    std::size_t at_rd = SIZE_MAX;
    switch (a.type) {
        case WEFT_COLL_ALLGATHERV:
            if (!need(a.recvcounts, "recvcounts") || !need(a.rdispls, "rdispls")) {
                return -WEFT_EINVAL;
            }
            at_rc = keep(a.recvcounts);
            at_rd = keep(a.rdispls);
            break;
        case WEFT_COLL_GATHERV:
            if (root) {
                if (!need(a.recvcounts, "recvcounts") || !need(a.rdispls, "rdispls")) {
                    return -WEFT_EINVAL;
                }
                at_rc = keep(a.recvcounts);
                at_rd = keep(a.rdispls);
            }
            break;
        case WEFT_COLL_SCATTERV:
            if (root) {
                if (!need(a.sendcounts, "sendcounts") || !need(a.sdispls, "sdispls")) {
                    return -WEFT_EINVAL;
                }
                at_sc = keep(a.sendcounts);
                at_sd = keep(a.sdispls);
            }
            break;
        case WEFT_COLL_ALLTOALLV:
            if (a.sendbuf != WEFT_COLL_IN_PLACE) {
                if (!need(a.sendcounts, "sendcounts") || !need(a.sdispls, "sdispls")) {
                    return -WEFT_EINVAL;
                }
                at_sc = keep(a.sendcounts);
                at_sd = keep(a.sdispls);
            }
            [[fallthrough]];
        case WEFT_COLL_REDUCE_SCATTER:
            if (!need(a.recvcounts, "recvcounts")) {
                return -WEFT_EINVAL;
            }
            at_rc = keep(a.recvcounts);
            if (a.type == WEFT_COLL_ALLTOALLV) {
                if (!need(a.rdispls, "rdispls")) {
                    return -WEFT_EINVAL;
                }
                at_rd = keep(a.rdispls);
            }
            break;
        default:
            break;
    }
    // The arrays are kept now: point the copies at them, and check sizes.
    const std::size_t *base = r.arrays.data();
    r.args.sendcounts = at_sc == SIZE_MAX ? nullptr : base + at_sc;
    r.args.sdispls = at_sd == SIZE_MAX ? nullptr : base + at_sd;
    r.args.recvcounts = at_rc == SIZE_MAX ? nullptr : base + at_rc;
    r.args.rdispls = at_rd == SIZE_MAX ? nullptr : base + at_rd;
    const std::size_t limit = SIZE_MAX / es / (std::size_t(n) + 1);
    auto too_big = [&](const std::size_t *p) {
        return p != nullptr && std::any_of(p, p + n, [&](std::size_t x) { return x > limit; });
    };
    if (a.count > limit || too_big(r.args.sendcounts) || too_big(r.args.sdispls) ||
        too_big(r.args.recvcounts) || too_big(r.args.rdispls)) {
        return bad("a count or displacement overflows the address space");
    }
    // In-place where MPI allows it.
    const bool send_in_place = a.sendbuf == WEFT_COLL_IN_PLACE;
    if (a.recvbuf == WEFT_COLL_IN_PLACE &&
        !(root && (a.type == WEFT_COLL_SCATTER || a.type == WEFT_COLL_SCATTERV))) {
        return bad("recvbuf is WEFT_COLL_IN_PLACE (only a scatter's root may say so)");
    }
    if (send_in_place) {
        switch (a.type) {
            case WEFT_COLL_REDUCE:
            case WEFT_COLL_GATHER:
            case WEFT_COLL_GATHERV:
                if (!root) {
                    return bad("sendbuf is WEFT_COLL_IN_PLACE on a member that is not the root");
                }
                break;
            case WEFT_COLL_ALLREDUCE:
            case WEFT_COLL_ALLGATHER:
            case WEFT_COLL_ALLGATHERV:
            case WEFT_COLL_ALLTOALL:
            case WEFT_COLL_ALLTOALLV:
            case WEFT_COLL_REDUCE_SCATTER:
            case WEFT_COLL_REDUCE_SCATTER_BLOCK:
            case WEFT_COLL_SCAN:
            case WEFT_COLL_EXSCAN:
                break;
            default:
                return bad("sendbuf may not be WEFT_COLL_IN_PLACE");
        }
    }
    if (a.type == WEFT_COLL_ALLGATHERV && r.args.recvcounts[g.rank] != a.count && !send_in_place) {
        return bad("count differs from recvcounts[rank]");
    }
    if (const char *which = null_buffer(g, r.args); which != nullptr) {
        log("error", "%s: %s is NULL, and this member moves data through it", name, which);
        return -WEFT_EINVAL;
    }
    return 0;
}

/// A light check of what the shared-memory stage takes (no allocation): false
/// sends the call down the general path, which validates and explains.
bool shm_args_ok(const group &g, const weft_coll_args &a, combine_fn &combine)
{
    if (a.type != WEFT_COLL_BARRIER && size_of(raw(a.datatype)) == 0) {
        return false;
    }
    if (reduction(a.type)) {
        combine = combine_of(raw(a.datatype), raw(a.op));
        if (combine == nullptr) {
            return false;
        }
    }
    const bool root = rooted(a.type) && a.root == g.rank;
    if (rooted(a.type) && a.root >= g.size) {
        return false;
    }
    if (a.count > SIZE_MAX / (std::size_t(g.size) + 1) / 64 || null_buffer(g, a) != nullptr) {
        return false;
    }
    if (a.recvbuf == WEFT_COLL_IN_PLACE && !(root && a.type == WEFT_COLL_SCATTER)) {
        return false;
    }
    if (a.sendbuf == WEFT_COLL_IN_PLACE) {
        switch (a.type) {
            case WEFT_COLL_ALLREDUCE:
            case WEFT_COLL_ALLGATHER:
            case WEFT_COLL_ALLTOALL:
                return true;
            case WEFT_COLL_REDUCE:
            case WEFT_COLL_GATHER:
                return root;
            default:
                return false;
        }
    }
    return true;
}

}  // namespace
}  // namespace weft::coll

using namespace weft::coll;

// ------------------------------------------------------------------ the engine

void weft_coll_context::complete_one(request &r, int err)
{
    if (err != 0 && r.status == 0) {
        r.status = err;
    }
    --r.outstanding;
    if (r.outstanding == 0) {
        advance(r);
    }
}

void weft_coll_context::advance(request &r)
{
    if (r.st == request::state::done) {
        return;  // a retry of a request that a completion has finished since
    }
    while (r.round < r.rounds.size()) {
        const round_range &rr = r.rounds[r.round];
        while (r.next < rr.local) {
            const step &s = r.steps[r.next];
            const weft_addr_t peer = r.grp->addrs[s.peer];
            ssize_t rc;
            bool counted = true;
            if (s.kind == step_kind::send) {
                if (s.len <= inject) {
                    rc = weft_tinject(ep, s.src, s.len, peer, r.tag);
                    counted = false;
                    if (rc == -WEFT_EAGAIN) {
                        // Refused (a connection being made, no credit, sends
                        // queued ahead): a counted send instead. Retrying the
                        // inject could wait for credits that only the peer's
                        // receives of later messages bring back; a send with a
                        // completion is never refused for credits.
                        rc = weft_tsend(ep, s.src, s.len, nullptr, peer, r.tag, &r);
                        counted = true;
                    }
                } else {
                    rc = weft_tsend(ep, s.src, s.len, nullptr, peer, r.tag, &r);
                }
            } else {
                rc = weft_trecv(ep, s.dst, s.len, nullptr, peer, r.tag, 0, &r);
            }
            if (rc == -WEFT_EAGAIN) {
                if (!r.blocked) {
                    r.blocked = true;
                    blocked.push_back(&r);
                }
                return;
            }
            if (rc != 0) {
                log("error", "%s: posting to member %u failed: %s",
                    weft_coll_type_name(r.args.type), s.peer, weft_strerror(int(rc)));
                if (r.status == 0) {
                    r.status = int(rc);
                }
            } else if (counted) {
                ++r.outstanding;
            }
            ++r.next;
        }
        if (r.outstanding != 0) {
            return;
        }
        if (r.status == 0) {
            for (std::uint32_t i = rr.local; i < rr.end; ++i) {
                run_local(r.steps[i], r.combine);
            }
        }
        ++r.round;
        r.next = r.round < r.rounds.size() ? r.rounds[r.round].comm : 0;
        if (r.status != 0) {
            break;  // nothing more is posted; the run ends with its error
        }
    }
    r.st = request::state::done;
    --r.grp->active;
    if (r.blocked) {
        // Blocked earlier, then finished by a completion: off the retry list,
        // since the caller may free it before the next progress.
        blocked.erase(std::find(blocked.begin(), blocked.end(), &r));
        r.blocked = false;
    }
}

weft_coll_request::~weft_coll_request()
{
    for (weft_cntr_t *k : cntrs) {
        if (weft_cntr_close(k) != 0) {  // a failed run left triggers armed on it
            log("warn", "%s: a counter of a failed run stays open", weft_coll_type_name(args.type));
        }
    }
}

// Triggered form. Round k's operations count on counter k. Round k > 0 gets
// one more count when round k - 1 is full (a counter operation armed on it), so
// counter k full means every round up to k is done, whatever order messages
// arrive in; a round with local steps gets one more when the library has run
// them. Round k's sends are armed on counter k - 1 being full.
void weft_coll_context::start_triggered(request &r)
{
    const auto nrounds = std::uint32_t(r.rounds.size());
    if (r.cntrs.empty()) {  // first run: the counters and their targets
        r.cntrs.assign(nrounds, nullptr);
        r.full.assign(nrounds, 0);
        r.counts.resize(r.steps.size());
        for (std::uint32_t k = 0; k < nrounds; ++k) {
            const int rc = weft_cntr_open(domain, nullptr, &r.cntrs[k]);
            if (rc != 0) {
                log("error", "%s: opening a counter failed: %s", weft_coll_type_name(r.args.type),
                    weft_strerror(rc));
                r.status = rc;
                r.cntrs.resize(k);
                return;
            }
            const round_range &rr = r.rounds[k];
            r.full[k] = (rr.local - rr.comm) + (k > 0 ? 1 : 0) + (rr.end > rr.local ? 1 : 0);
            for (std::uint32_t i = rr.comm; i < rr.local; ++i) {
                r.counts[i] = {r.cntrs[k], &r};
            }
        }
    }
    for (weft_cntr_t *k : r.cntrs) {
        weft_cntr_set(k, 0);
    }
    r.local_round = 0;
    for (std::uint32_t k = 0; k < nrounds && r.status == 0; ++k) {
        const round_range &rr = r.rounds[k];
        if (k > 0) {
            const weft_trigger t{r.cntrs[k - 1], r.full[k - 1], nullptr};
            const int rc = weft_cntr_add_triggered(r.cntrs[k], 1, &t);
            if (rc != 0) {
                r.status = rc;
                break;
            }
        }
        for (std::uint32_t i = rr.comm; i < rr.local; ++i) {
            const step &s = r.steps[i];
            const weft_addr_t peer = r.grp->addrs[s.peer];
            iovec iov{const_cast<void *>(s.kind == step_kind::send ? s.src : s.dst), s.len};
            ssize_t rc;
            if (s.kind == step_kind::recv) {
                const weft_msg_tagged m{&iov, nullptr, 1, peer, r.tag, 0, &r.counts[i], 0};
                rc = weft_trecvmsg(ep, &m, WEFT_COUNT);
            } else if (k == 0) {
                const weft_msg_tagged m{&iov, nullptr, 1, peer, r.tag, 0, &r.counts[i], 0};
                rc = weft_tsendmsg(ep, &m, WEFT_COUNT);
            } else {
                weft_trigger t{r.cntrs[k - 1], r.full[k - 1], &r.counts[i]};
                const weft_msg_tagged m{&iov, nullptr, 1, peer, r.tag, 0, &t, 0};
                rc = weft_tsendmsg(ep, &m, WEFT_TRIGGER | WEFT_COUNT);
            }
            while (rc == -WEFT_EAGAIN) {  // a full receive queue: let it drain
                (void)weft_ep_progress(ep);
                const weft_msg_tagged m{&iov, nullptr, 1, peer, r.tag, 0, &r.counts[i], 0};
                rc = s.kind == step_kind::recv ? weft_trecvmsg(ep, &m, WEFT_COUNT)
                                               : weft_tsendmsg(ep, &m, WEFT_COUNT);
            }
            if (rc != 0) {
                log("error", "%s: posting to member %u failed: %s",
                    weft_coll_type_name(r.args.type), s.peer, weft_strerror(int(rc)));
                r.status = int(rc);
                break;
            }
        }
    }
    watched.push_back(&r);
}

bool weft_coll_context::watch(request &r)
{
    bool moved = false;
    const auto nrounds = std::uint32_t(r.rounds.size());
    while (r.status == 0 && r.local_round < nrounds) {
        const std::uint32_t k = r.local_round;
        const round_range &rr = r.rounds[k];
        if (weft_cntr_readerr(r.cntrs[k]) != 0 && r.status == 0) {
            r.status = -WEFT_EOTHER;  // the failed operation's error entry says more
        }
        if (r.status != 0) {
            break;
        }
        if (rr.end == rr.local) {  // nothing local: watch the next round
            if (k + 1 < nrounds) {
                ++r.local_round;
                continue;
            }
            if (weft_cntr_read(r.cntrs[k]) < r.full[k]) {
                return moved;
            }
            ++r.local_round;
            break;
        }
        if (weft_cntr_read(r.cntrs[k]) < r.full[k] - 1) {
            return moved;
        }
        for (std::uint32_t i = rr.local; i < rr.end; ++i) {
            run_local(r.steps[i], r.combine);
        }
        weft_cntr_add(r.cntrs[k], 1);  // arms round k + 1's sends
        ++r.local_round;
        moved = true;
    }
    if (r.status != 0 && !r.failed_run) {
        r.failed_run = true;
        failed.push_back(&r);
    }
    r.st = request::state::done;
    --r.grp->active;
    return true;
}

int weft_coll_context::progress()
{
    weft_cq_entry entries[32];
    int seen = 0;
    for (;;) {
        const ssize_t got = weft_cq_read(cq, entries, 32);
        if (got > 0) {
            for (ssize_t i = 0; i < got; ++i) {
                if (entries[i].op_context == &direct_pending) [[unlikely]] {
                    // A read or write of the stage's single-copy path (0: one a
                    // failed call abandoned).
                    direct_pending -= direct_pending != 0 ? 1 : 0;
                    continue;
                }
                complete_one(*static_cast<request *>(entries[i].op_context), 0);
            }
            seen += int(got);
            if (got < 32) {
                break;
            }
            continue;
        }
        if (got == -WEFT_EAVAIL) {
            weft_cq_err_entry e{};
            if (weft_cq_readerr(cq, &e, 0) == 1) {
                if (e.op_context == &direct_pending) {
                    log("error", "a single-copy transfer failed: %s (%s)", weft_strerror(e.err),
                        e.err_str);
                    direct_pending -= direct_pending != 0 ? 1 : 0;
                    if (direct_err == 0) {
                        direct_err = -e.err;
                    }
                    ++seen;
                    continue;
                }
                request *counted = nullptr;  // a triggered run's operation: a weft_count
                for (const auto *list : {&watched, &failed}) {
                    for (request *w : *list) {
                        if (!w->counts.empty() &&
                            e.op_context >= static_cast<void *>(w->counts.data()) &&
                            e.op_context <
                                static_cast<void *>(w->counts.data() + w->counts.size())) {
                            counted = w;
                        }
                    }
                }
                if (counted != nullptr) {
                    log("error", "%s: an operation failed: %s (%s)",
                        weft_coll_type_name(counted->args.type), weft_strerror(e.err), e.err_str);
                    if (counted->status == 0) {
                        counted->status = -e.err;
                    }
                    ++seen;
                    continue;
                }
                auto &r = *static_cast<request *>(e.op_context);
                log("error", "%s: an operation failed: %s (%s)", weft_coll_type_name(r.args.type),
                    weft_strerror(e.err), e.err_str);
                complete_one(r, -e.err);
                ++seen;
            }
            continue;
        }
        if (got != -WEFT_EAGAIN) {
            return int(got);
        }
        break;
    }
    for (std::size_t i = 0; i < watched.size();) {
        request *w = watched[i];
        if (watch(*w)) {
            ++seen;
        }
        if (w->st == request::state::done) {
            watched[i] = watched.back();
            watched.pop_back();
        } else {
            ++i;
        }
    }
    if (!blocked.empty()) {
        std::vector<request *> retry;
        retry.swap(blocked);
        for (request *r : retry) {
            r->blocked = false;
            advance(*r);
        }
    }
    return seen;
}

extern "C" {

int weft_coll_context_open(weft_domain_t *domain, const struct weft_info *info,
                           weft_coll_context_t **out)
{
    if (domain == nullptr || info == nullptr || out == nullptr) {
        return -WEFT_EINVAL;
    }
    constexpr std::uint64_t caps = WEFT_TAGGED | WEFT_DIRECTED_RECV;
    if ((info->caps & caps) != caps) {
        log("error", "the transport lacks tagged messages with directed receives");
        return -WEFT_ENOSYS;
    }
    auto *c = new (std::nothrow) weft_coll_context;
    if (c == nullptr) {
        return -WEFT_ENOMEM;
    }
    c->domain = domain;
    c->info = weft_info_dup(info);
    int rc = c->info == nullptr ? -WEFT_ENOMEM : 0;
    if (rc == 0) {
        // RMA reads when the transports offer them: the stage's single-copy calls.
        c->rma = (info->caps & WEFT_RMA) != 0;
        c->info->caps = caps | (info->caps & WEFT_RMA);
        weft_cq_attr cq_attr{};
        cq_attr.format = WEFT_CQ_FORMAT_CONTEXT;
        rc = weft_cq_open(domain, &cq_attr, &c->cq);
    }
    if (rc == 0) {
        rc = weft_av_open(domain, nullptr, &c->av);
    }
    if (rc == 0) {
        rc = weft_ep_open(domain, c->info, &c->ep, c);
    }
    if (rc == 0) {
        rc = weft_ep_bind_cq(c->ep, c->cq, WEFT_TRANSMIT | WEFT_RECV);
    }
    if (rc == 0) {
        rc = weft_ep_bind_av(c->ep, c->av);
    }
    if (rc == 0) {
        // A step whose inject returned 0 is done: the message must not wait for
        // this process's next progress, which may come only after the caller
        // blocks elsewhere (docs/collectives.md). A refused inject goes as a
        // counted send (advance).
        const int direct = 1;
        rc = weft_ep_setopt(c->ep, WEFT_OPT_INJECT_DIRECT, &direct, sizeof(direct));
    }
    if (rc == 0) {
        // Messages up to WEFT_COLL_RNDV_THRESH go eagerly: a schedule's send
        // then completes without its receiver, which may not be running (more
        // processes than cores) or may post its receive later in its own
        // schedule (docs/collectives.md, "Configuration").
        c->rndv_thresh = env_size("WEFT_COLL_RNDV_THRESH", c->rndv_thresh);
        rc =
            weft_ep_setopt(c->ep, WEFT_OPT_RNDV_THRESHOLD, &c->rndv_thresh, sizeof(c->rndv_thresh));
    }
    if (rc == 0) {
        rc = weft_ep_enable(c->ep);
    }
    if (rc == 0) {
        std::size_t len = sizeof(c->inject);
        if (weft_ep_getopt(c->ep, WEFT_OPT_INJECT_SIZE, &c->inject, &len) != 0) {
            c->inject = 0;
        }
        c->addr_len = c->info->addr_len;
    }
    if (rc != 0) {
        log("error", "opening the collectives endpoint failed: %s", weft_strerror(rc));
        c->groups = 0;
        weft_coll_context_close(c);
        return rc;
    }
    check_environment();
    c->bcast_large = env_size("WEFT_COLL_BCAST_LARGE", c->bcast_large);
    c->allreduce_small = env_size("WEFT_COLL_ALLREDUCE_SMALL", c->allreduce_small);
    c->allreduce_ring = env_size("WEFT_COLL_ALLREDUCE_RING", c->allreduce_ring);
    c->allgather_small = env_size("WEFT_COLL_ALLGATHER_SMALL", c->allgather_small);
    c->rooted_small = env_size("WEFT_COLL_ROOTED_SMALL", c->rooted_small);
    c->alltoall_small = env_size("WEFT_COLL_ALLTOALL_SMALL", c->alltoall_small);
    c->alltoall_medium = env_size("WEFT_COLL_ALLTOALL_MEDIUM", c->alltoall_medium);
    c->alltoall_batch = env_size("WEFT_COLL_ALLTOALL_BATCH", c->alltoall_batch);
    c->reduce_scatter_small = env_size("WEFT_COLL_REDUCE_SCATTER_SMALL", c->reduce_scatter_small);
    c->cache_size = env_size("WEFT_COLL_CACHE", c->cache_size);
    c->shm_slot = env_size("WEFT_COLL_SHM_SLOT", c->shm_slot);
    c->shm_push = env_size("WEFT_COLL_SHM_PUSH", c->shm_push);
    c->shm_large = env_size("WEFT_COLL_SHM_LARGE", c->shm_large);
    c->shm_direct = env_size("WEFT_COLL_SHM_DIRECT", c->shm_direct);
    if (const char *v = std::getenv("WEFT_COLL_NODE"); v != nullptr && *v != '\0') {
        c->node_name = v;
    }
    if (c->shm_slot > (std::size_t(1) << 30)) {
        log("warn", "WEFT_COLL_SHM_SLOT=%zu is above 1 GiB; using 1 GiB", c->shm_slot);
        c->shm_slot = std::size_t(1) << 30;
    }
    if (const char *t = std::getenv("WEFT_COLL_TRIGGERED"); t != nullptr && *t != '\0') {
        const std::string v(t);
        if (v == "0" || v == "never") {
            c->triggered_mode = 0;
        } else if (v == "1" || v == "always") {
            c->triggered_mode = 1;
        } else if (v == "auto") {
            c->triggered_mode = 2;
        } else {
            log("warn", "WEFT_COLL_TRIGGERED=%s is not never, always or auto; using auto", t);
        }
    }
    *out = c;
    return 0;
}

int weft_coll_context_close(weft_coll_context_t *c)
{
    if (c == nullptr) {
        return -WEFT_EINVAL;
    }
    if (c->groups != 0) {
        return -WEFT_EBUSY;
    }
    if (c->ep != nullptr) {
        weft_ep_close(c->ep);  // cancels what failed runs left armed
    }
    for (request *r : c->failed) {
        delete r;
    }
    if (c->av != nullptr) {
        weft_av_close(c->av);
    }
    if (c->cq != nullptr) {
        weft_cq_close(c->cq);
    }
    weft_info_free(c->info);
    delete c;
    return 0;
}

void weft_coll_context_set_wait_hook(weft_coll_context_t *c, void (*hook)(void *), void *arg)
{
    c->wait_hook = hook;
    c->wait_arg = arg;
}

int weft_coll_progress(weft_coll_context_t *c)
{
    return c->progress();
}

int weft_coll_group_create(weft_coll_context_t *c, uint32_t size, uint32_t rank,
                           const struct weft_coll_oob *oob, weft_coll_group_t **out)
{
    if (c == nullptr || oob == nullptr || oob->allgather == nullptr || out == nullptr ||
        size == 0 || rank >= size) {
        return -WEFT_EINVAL;
    }
    // What every member says about itself: the group id it could start from,
    // a name of its node, and its endpoint's address.
    struct header {
        std::uint32_t next_id;
        std::uint32_t addr_len;
        std::uint64_t shm_slot;    ///< its WEFT_COLL_SHM_SLOT: the group uses the smallest
        std::uint64_t shm_push;    ///< its WEFT_COLL_SHM_PUSH: the smallest too
        std::uint64_t shm_large;   ///< its WEFT_COLL_SHM_LARGE: the smallest too
        std::uint64_t shm_direct;  ///< its WEFT_COLL_SHM_DIRECT (off: UINT64_MAX): the largest
        char node[64];
    };
    const std::size_t rec = sizeof(header) + c->addr_len;
    std::vector<std::byte> mine(rec);
    std::vector<std::byte> all(rec * size);
    header h{};
    h.next_id = c->next_group_id;
    h.shm_slot = c->shm_slot;
    h.shm_push = c->shm_push;
    h.shm_large = c->shm_large;
    h.shm_direct = c->shm_direct != 0 ? c->shm_direct : UINT64_MAX;
    std::size_t alen = c->addr_len;
    int rc = weft_ep_getname(c->ep, mine.data() + sizeof(header), &alen);
    if (rc != 0) {
        return rc;
    }
    h.addr_len = std::uint32_t(alen);
    if (!c->node_name.empty()) {
        std::strncpy(h.node, c->node_name.c_str(), sizeof(h.node) - 1);
    } else {
        gethostname(h.node, sizeof(h.node) - 1);
    }
    std::memcpy(mine.data(), &h, sizeof(h));
    rc = oob->allgather(mine.data(), all.data(), rec, oob->arg);
    if (rc != 0) {
        log("error", "group creation: the out-of-band allgather failed (%d)", rc);
        return rc < 0 ? rc : -WEFT_EOTHER;
    }
    auto g = std::make_unique<weft_coll_group>();
    g->ctx = c;
    g->size = size;
    g->rank = rank;
    g->addrs.resize(size);
    g->node_of.resize(size);
    std::vector<std::string> nodes;
    std::size_t shm_slot = c->shm_slot;
    shm_params prm{.push_max = c->shm_push,
                   .large_max = c->shm_large,
                   .direct_min = c->shm_direct != 0 ? c->shm_direct : SIZE_MAX};
    for (std::uint32_t i = 0; i < size; ++i) {
        header hi{};
        std::memcpy(&hi, all.data() + i * rec, sizeof(hi));
        if (hi.addr_len == 0 || hi.addr_len > c->addr_len) {
            log("error", "group creation: member %u sent an address of %u bytes (at most %zu)", i,
                hi.addr_len, c->addr_len);
            return -WEFT_EBADMSG;
        }
        g->id = std::max(g->id, hi.next_id);
        shm_slot = std::min<std::size_t>(shm_slot, hi.shm_slot);
        prm.push_max = std::min<std::size_t>(prm.push_max, hi.shm_push);
        prm.large_max = std::min<std::size_t>(prm.large_max, hi.shm_large);
        // Not min(): SIZE_MAX (off) is larger than every threshold, so one
        // member's "off" wins, as it must (it would not take part).
        prm.direct_min = std::max<std::size_t>(prm.direct_min, hi.shm_direct);
        hi.node[sizeof(hi.node) - 1] = '\0';
        const std::string node(hi.node);
        const auto it = std::find(nodes.begin(), nodes.end(), node);
        g->node_of[i] = std::uint32_t(it - nodes.begin());
        if (it == nodes.end()) {
            nodes.push_back(node);
        }
        const std::string key(reinterpret_cast<const char *>(all.data() + i * rec + sizeof(header)),
                              hi.addr_len);
        auto known = c->peers.find(key);
        if (known == c->peers.end()) {
            weft_addr_t a = WEFT_ADDR_UNSPEC;
            rc = weft_av_insert(c->av, key.data(), 1, &a, 0);
            if (rc != 1 || a == WEFT_ADDR_NOTAVAIL) {
                log("error", "group creation: member %u's address was refused: %s", i,
                    weft_strerror(rc));
                return rc < 0 ? rc : -WEFT_EINVAL;
            }
            known = c->peers.emplace(key, a).first;
        }
        g->addrs[i] = known->second;
    }
    if (g->id >= UINT32_MAX - 1) {
        log("error", "group creation: out of group ids");
        return -WEFT_ENOMEM;
    }
    c->next_group_id = g->id + 2;  // the next for a leaders' group (hier.cpp)
    g->node_peers =
        std::uint32_t(std::count(g->node_of.begin(), g->node_of.end(), g->node_of[rank]));
    // Waiting: with a core per process of this node, spin; with more processes
    // than cores, yield soon, or a waiter spins away the time slice of the
    // member it waits for.
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && long(g->node_peers) > cores) {
        c->spins_before_yield = 8;
    }
    // The shared-memory stage: every member on this node, and a slot size
    // every member allows (the same decision everywhere: the same data).
    if (size >= 2 && shm_slot > 0 && nodes.size() == 1) {
        prm.slot = shm_slot;
        rc = shm_setup(*g, prm, *oob);
        if (rc != 0) {
            log("error", "group creation: the shared-memory exchange failed: %s",
                weft_strerror(rc));
            return rc;
        }
    }
    // Members on several nodes, several on some: the node / leaders form.
    g->nodes = std::uint32_t(nodes.size());
    if (shm_slot > 0 && nodes.size() > 1 && nodes.size() < size) {
        prm.slot = shm_slot;
        rc = hier_setup(*g, prm, *oob, std::uint32_t(nodes.size()));
        if (rc != 0) {
            log("error", "group creation: the exchange for the nodes' stages failed: %s",
                weft_strerror(rc));
            return rc;
        }
    }
    ++c->groups;
    *out = g.release();
    return 0;
}

int weft_coll_group_add_segment(weft_coll_group_t *g, void *base, size_t len, weft_mr_t *mr,
                                const struct weft_coll_oob *oob)
{
    if (g == nullptr || oob == nullptr || oob->allgather == nullptr) {
        return -WEFT_EINVAL;
    }
    const int rc = shm_add_segment(*g, base, len, mr, *oob);
    if (rc != 0) {
        log("error", "adding a symmetric segment: the out-of-band exchange failed: %s",
            weft_strerror(rc));
    }
    return rc;
}

int weft_coll_group_destroy(weft_coll_group_t *g)
{
    if (g == nullptr) {
        return -WEFT_EINVAL;
    }
    if (g->active != 0) {
        return -WEFT_EBUSY;
    }
    shm_teardown(*g);
    hier_teardown(*g);
    for (auto &k : g->kept) {
        if (k->failed_run) {
            (void)k.release();  // the context's failed list has it
        }
    }
    --g->ctx->groups;
    delete g;
    return 0;
}

uint32_t weft_coll_group_rank(const weft_coll_group_t *g)
{
    return g->rank;
}
uint32_t weft_coll_group_size(const weft_coll_group_t *g)
{
    return g->size;
}
uint32_t weft_coll_group_nodes(const weft_coll_group_t *g)
{
    return g->nodes;
}
int weft_coll_group_hierarchical(const weft_coll_group_t *g)
{
    return g->node != nullptr ? 1 : 0;
}

uint64_t weft_coll_group_calls(const weft_coll_group_t *g, enum weft_coll_path path)
{
    const int p = raw(path);
    return g != nullptr && p >= 0 && p < WEFT_COLL_PATH_COUNT ? g->calls[p] : 0;
}

int weft_coll_init(weft_coll_group_t *g, const struct weft_coll_args *args,
                   weft_coll_request_t **out)
{
    if (g == nullptr || args == nullptr || out == nullptr) {
        return -WEFT_EINVAL;
    }
    auto r = std::unique_ptr<weft_coll_request>(new (std::nothrow) weft_coll_request);
    if (!r) {
        return -WEFT_ENOMEM;
    }
    r->grp = g;
    int rc = take_args(*r, *args);
    if (rc == 0) {
        rc = plan(*r);
    }
    if (rc != 0) {
        return rc;
    }
    *out = r.release();
    return 0;
}

int weft_coll_start(weft_coll_request_t *r)
{
    if (r == nullptr) {
        return -WEFT_EINVAL;
    }
    if (r->st == request::state::active) {
        return -WEFT_EBUSY;  // the caller's to handle: not logged
    }
    if (r->failed_run) {
        log("error", "%s: a run in the triggered form failed; the request cannot run again",
            weft_coll_type_name(r->args.type));
        return -WEFT_EINVAL;
    }
    if (r->st == request::state::done && !(r->args.flags & WEFT_COLL_PERSISTENT) && !r->kept) {
        log("error", "%s: started again without WEFT_COLL_PERSISTENT",
            weft_coll_type_name(r->args.type));
        return -WEFT_EINVAL;
    }
    weft_coll_group &g = *r->grp;
    r->tag = tag_of(g.id, g.seq++);
    r->round = 0;
    r->next = r->rounds.empty() ? 0 : r->rounds[0].comm;
    r->outstanding = 0;
    r->status = 0;
    r->st = request::state::active;
    ++g.active;
    // A broadcast whose root names a sendbuf: the root's recvbuf gets it too,
    // and the schedule sends from the recvbuf.
    const weft_coll_args &a = r->args;
    if (a.type == WEFT_COLL_BCAST && a.root == g.rank && a.sendbuf != nullptr &&
        a.sendbuf != a.recvbuf && a.count != 0) {
        std::memcpy(a.recvbuf, a.sendbuf, a.count * size_of(raw(a.datatype)));
    }
    const int mode = g.ctx->triggered_mode;
    r->triggered = r->triggerable && (mode == 1 || (mode == 2 && !r->kept));
    if (r->triggered) {
        g.ctx->start_triggered(*r);
        return 0;
    }
    g.ctx->advance(*r);
    return 0;
}

int weft_coll_test(weft_coll_request_t *r)
{
    if (r->st != request::state::done) {
        const int rc = r->grp->ctx->progress();
        if (rc < 0) {
            return rc;
        }
        if (r->st != request::state::done) {
            return 0;
        }
    }
    return r->status != 0 ? r->status : 1;
}

int weft_coll_wait(weft_coll_request_t *r, int timeout_ms)
{
    if (r == nullptr || r->st == request::state::idle) {
        return -WEFT_EINVAL;
    }
    context &c = *r->grp->ctx;
    const auto start = std::chrono::steady_clock::now();
    long spins = 0;
    while (r->st != request::state::done) {
        const int rc = c.progress();
        if (rc < 0) {
            return rc;
        }
        if (rc > 0) {
            spins = 0;
            continue;
        }
        if (c.wait_hook != nullptr) {
            c.wait_hook(c.wait_arg);
        }
        if (++spins > c.spins_before_yield) {
            spins = 0;
            sched_yield();
            if (timeout_ms >= 0 &&
                std::chrono::steady_clock::now() - start > std::chrono::milliseconds(timeout_ms)) {
                return -WEFT_ETIMEDOUT;
            }
        } else if (timeout_ms >= 0 && (spins & 1023) == 0 &&
                   std::chrono::steady_clock::now() - start >
                       std::chrono::milliseconds(timeout_ms)) {
            return -WEFT_ETIMEDOUT;
        }
    }
    return r->status;
}

int weft_coll_request_free(weft_coll_request_t *r)
{
    if (r == nullptr) {
        return 0;
    }
    if (r->st == request::state::active || r->kept) {
        return -WEFT_EBUSY;
    }
    if (!r->failed_run) {
        delete r;
    }  // else the context frees it when it closes
    return 0;
}

int weft_coll(weft_coll_group_t *g, const struct weft_coll_args *args)
{
    if (g == nullptr || args == nullptr) {
        return -WEFT_EINVAL;
    }
    // On a node's shared-memory stage (or a node / leaders group): checked
    // once, then the first form that takes the call.
    bool agreed = false;  // the stage's round before the message path ran
    if ((g->shm != nullptr || g->node != nullptr) && enums_in_range(*args)) {
        combine_fn combine = nullptr;
        if (shm_args_ok(*g, *args, combine)) {
            auto on = [&](weft_coll_path p) { ++g->calls[p]; };
            if (g->node != nullptr && hier_takes(*g, *args)) {
                on(WEFT_COLL_PATH_NODE_LEADERS);
                return hier_run(*g, *args, combine);
            }
            if ((args->flags & WEFT_COLL_SYMMETRIC) != 0 && shm_symmetric(*g, *args)) {
                on(WEFT_COLL_PATH_SYMMETRIC);
                return shm_run_symmetric(*g, *args, combine);
            }
            if (shm_takes_direct(*g, *args)) {
                on(WEFT_COLL_PATH_SINGLE_COPY);
                return shm_run_direct(*g, *args, combine);
            }
            if (shm_takes(*g, *args)) {
                on(WEFT_COLL_PATH_STAGE);
                return shm_run(*g, *args, combine);
            }
            if (shm_takes_large(*g, *args)) {
                on(WEFT_COLL_PATH_STAGE_PIECES);
                return shm_run_large(*g, *args, combine);
            }
            if (shm_count_decides(*g, *args)) {
                // Another member's count may have put it on the stage.
                agreed = true;
                const int rc = shm_agree(*g, *args);
                if (rc != 0) {
                    return rc;
                }
            }
        }  // else: the general path (it says what is wrong, if anything)
    }
    // A kept schedule with the same arguments (the v arrays compared by value).
    auto same = [&](const request &r) {
        const weft_coll_args &k = r.args;
        const weft_coll_args &a = *args;
        if (k.type != a.type || k.sendbuf != a.sendbuf || k.recvbuf != a.recvbuf ||
            k.count != a.count || k.datatype != a.datatype || k.op != a.op || k.root != a.root ||
            k.algorithm != a.algorithm || k.flags != a.flags) {
            return false;
        }
        auto eq = [&](const std::size_t *x, const std::size_t *y) {
            if (x == nullptr) {
                return true;  // not used by this member: ignored
            }
            return y != nullptr && std::equal(x, x + g->size, y);
        };
        return eq(k.sendcounts, a.sendcounts) && eq(k.sdispls, a.sdispls) &&
               eq(k.recvcounts, a.recvcounts) && eq(k.rdispls, a.rdispls);
    };
    request *r = nullptr;
    for (auto it = g->kept.rbegin(); it != g->kept.rend(); ++it) {
        if ((*it)->st != request::state::active && !(*it)->failed_run && same(**it)) {
            r = it->get();
            if (it != g->kept.rbegin()) {  // most recently used last
                auto keep = std::move(*it);
                g->kept.erase(std::next(it).base());
                g->kept.push_back(std::move(keep));
            }
            break;
        }
    }
    std::unique_ptr<weft_coll_request> once;
    if (r == nullptr) {
        weft_coll_request_t *fresh = nullptr;
        const int rc = weft_coll_init(g, args, &fresh);
        if (rc != 0) {
            // Refused here (logged): members whose arguments were good wait
            // on the stage for this one, or agree first; tell them.
            if (!agreed && g->shm != nullptr && enums_in_range(*args) &&
                shm_count_decides(*g, *args)) {
                (void)shm_agree(*g, *args, true);
            }
            return rc;
        }
        if (g->ctx->cache_size == 0) {
            once.reset(fresh);
        } else {
            fresh->kept = true;
            if (g->kept.size() >= g->ctx->cache_size) {
                if (g->kept.front()->failed_run) {
                    (void)g->kept.front().release();  // the context's failed list has it
                }
                g->kept.erase(g->kept.begin());
            }
            g->kept.emplace_back(fresh);
        }
        r = fresh;
    }
    ++g->calls[WEFT_COLL_PATH_MESSAGES];  // planned: the call's arguments were valid
    int rc = weft_coll_start(r);
    if (rc == 0) {
        rc = weft_coll_wait(r, -1);
    }
    return rc;
}

int weft_coll_request_triggered(const weft_coll_request_t *r)
{
    return r->triggered ? 1 : 0;
}

enum weft_coll_algorithm weft_coll_request_algorithm(const weft_coll_request_t *r)
{
    return r->algorithm;
}

const char *weft_coll_algorithm_name(enum weft_coll_algorithm algorithm)
{
    const int a = raw(algorithm);
    switch (a) {
        case WEFT_COLL_ALG_AUTO:
            return "auto";
        case WEFT_COLL_ALG_DISSEMINATION:
            return "dissemination";
        case WEFT_COLL_ALG_BINOMIAL:
            return "binomial";
        case WEFT_COLL_ALG_SCATTER_ALLGATHER:
            return "scatter_allgather";
        case WEFT_COLL_ALG_LINEAR:
            return "linear";
        case WEFT_COLL_ALG_RECURSIVE_DOUBLING:
            return "recursive_doubling";
        case WEFT_COLL_ALG_RABENSEIFNER:
            return "rabenseifner";
        case WEFT_COLL_ALG_RING:
            return "ring";
        case WEFT_COLL_ALG_BRUCK:
            return "bruck";
        case WEFT_COLL_ALG_PAIRWISE:
            return "pairwise";
        case WEFT_COLL_ALG_REDUCE_SCATTERV:
            return "reduce_scatterv";
        default:
            return "unknown";
    }
}

const char *weft_coll_type_name(enum weft_coll_type t)
{
    static const char *const names[] = {"barrier",        "bcast",
                                        "reduce",         "allreduce",
                                        "allgather",      "allgatherv",
                                        "gather",         "gatherv",
                                        "scatter",        "scatterv",
                                        "alltoall",       "alltoallv",
                                        "reduce_scatter", "reduce_scatter_block",
                                        "scan",           "exscan"};
    static_assert(sizeof(names) / sizeof(names[0]) == WEFT_COLL_TYPE_COUNT);
    const int v = raw(t);
    return v >= 0 && v < WEFT_COLL_TYPE_COUNT ? names[v] : "unknown";
}

}  // extern "C"
