// Groups that span nodes (docs/collectives.md, "Groups that span nodes"):
// the shared-memory stage on each node, the network among node leaders.
//
// At group creation every member learns every member's node (the names
// exchanged then); each node's members make a group of their own with the
// stage (through the whole group's out-of-band exchange, so every member
// takes part in every round whatever its node), and the lowest rank of each
// node, its leader, joins the leaders' group. A blocking barrier, broadcast,
// reduce or allreduce that fits a slot then runs in three steps: the node
// (stage), the leaders (the library's message schedules), the node again.

#include <algorithm>
#include <cstring>

#include "collectives/src/coll_impl.hpp"

namespace weft::coll {
namespace {

/// An out-of-band allgather among some members of a group, done through the
/// whole group's (every member calls it; each keeps its members' records).
struct sub_oob {
    const weft_coll_oob *full;
    const std::vector<std::uint32_t> *members;
    std::uint32_t size;  ///< the whole group's
};

int sub_allgather(const void *send, void *recv, std::size_t len, void *arg)
{
    auto *s = static_cast<sub_oob *>(arg);
    std::vector<std::byte> all(len * s->size);
    const int rc = s->full->allgather(send, all.data(), len, s->full->arg);
    if (rc != 0) {
        return rc;
    }
    std::size_t at = 0;
    for (std::uint32_t m : *s->members) {
        std::memcpy(static_cast<std::byte *>(recv) + at, all.data() + std::size_t(m) * len, len);
        at += len;
    }
    return 0;
}

/// A group of some members of `g` (in rank order) with id `id`.
std::unique_ptr<weft_coll_group> subgroup(const group &g, const std::vector<std::uint32_t> &members,
                                          std::uint32_t id)
{
    auto s = std::make_unique<weft_coll_group>();
    s->ctx = g.ctx;
    s->size = std::uint32_t(members.size());
    s->id = id;
    for (std::uint32_t i = 0; i < members.size(); ++i) {
        s->addrs.push_back(g.addrs[members[i]]);
        s->node_of.push_back(g.node_of[members[i]]);
        if (members[i] == g.rank) {
            s->rank = i;
        }
    }
    return s;
}

}  // namespace

int hier_setup(group &g, const shm_params &prm, const weft_coll_oob &oob, std::uint32_t nodes)
{
    g.leader.assign(nodes, UINT32_MAX);
    g.node_rank.assign(g.size, 0);
    std::vector<std::uint32_t> count(nodes, 0);
    for (std::uint32_t i = 0; i < g.size; ++i) {
        const std::uint32_t k = g.node_of[i];
        if (g.leader[k] == UINT32_MAX) {
            g.leader[k] = i;  // node indices follow first appearance: leader k is the k-th
        }
        g.node_rank[i] = count[k]++;
    }
    const std::uint32_t mine = g.node_of[g.rank];
    std::vector<std::uint32_t> local;
    for (std::uint32_t i = 0; i < g.size; ++i) {
        if (g.node_of[i] == mine) {
            local.push_back(i);
        }
    }
    // The node's group carries no message (the stage only): it needs no id
    // of its own. The leaders' group takes the id after the group's.
    auto node = subgroup(g, local, g.id);
    node->node_peers = node->size;
    sub_oob arg{&oob, &local, g.size};
    const weft_coll_oob so{sub_allgather, &arg};
    int rc = shm_setup(*node, prm, so);
    if (rc != 0) {
        return rc;
    }
    // Every member learns whether every node made its stage: the form is
    // used only if all did (every member decides alike).
    std::uint32_t ok = node->shm != nullptr ? 1 : 0;
    std::vector<std::uint32_t> oks(g.size);
    rc = oob.allgather(&ok, oks.data(), sizeof(ok), oob.arg);
    if (rc != 0) {
        return rc < 0 ? rc : -WEFT_EOTHER;
    }
    if (std::find(oks.begin(), oks.end(), 0u) != oks.end()) {
        shm_teardown(*node);
        return 0;  // flat schedules only
    }
    g.node = std::move(node);
    if (g.rank == g.leader[mine]) {
        g.leaders = subgroup(g, g.leader, g.id + 1);
    }
    return 0;
}

bool hier_takes(const group &g, const weft_coll_args &a)
{
    if (g.node == nullptr || a.algorithm != WEFT_COLL_ALG_AUTO ||
        (a.flags & ~WEFT_COLL_SYMMETRIC) != 0) {
        return false;
    }
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            return true;
        case WEFT_COLL_BCAST:
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE:
            return a.count <=
                   g.node->shm->slot / std::max<std::size_t>(1, size_of(raw(a.datatype)));
        default:
            return false;
    }
}

int hier_run(group &g, const weft_coll_args &a, combine_fn combine)
{
    group &node = *g.node;
    group *leaders = g.leaders.get();
    const bool alone = node.size == 1;
    const std::size_t bytes = a.count * size_of(raw(a.datatype));
    // Every step runs whatever an earlier one said (no member is left
    // waiting for this one); the first error is the result.
    int first = 0;
    auto keep = [&](int rc) {
        if (first == 0 && rc != 0) {
            first = rc;
        }
    };
    weft_coll_args s = a;
    s.flags = 0;
    switch (a.type) {
        case WEFT_COLL_BARRIER:
            if (!alone) {
                keep(shm_run(node, s, nullptr));
            }
            if (leaders != nullptr) {
                keep(weft_coll(leaders, &s));
            }
            if (!alone) {
                keep(shm_run(node, s, nullptr));
            }
            break;
        case WEFT_COLL_BCAST: {
            const std::uint32_t from = g.node_of[a.root];
            const bool here = g.node_of[g.rank] == from;
            if (g.rank == a.root && a.sendbuf != nullptr) {
                copy_bytes(a.recvbuf, a.sendbuf, bytes);
            }
            s.sendbuf = nullptr;
            if (here && !alone) {  // the root's node: its leader has the data after this
                s.root = g.node_rank[a.root];
                keep(shm_run(node, s, nullptr));
            }
            if (leaders != nullptr) {
                s.root = from;
                keep(weft_coll(leaders, &s));
            }
            if (!here && !alone) {
                s.root = 0;  // the node's leader
                keep(shm_run(node, s, nullptr));
            }
            break;
        }
        case WEFT_COLL_REDUCE:
        case WEFT_COLL_ALLREDUCE: {
            // A reduce is an allreduce whose result only the root keeps:
            // members that are not its root combine into the group's buffer.
            void *out = a.recvbuf;
            if (a.type == WEFT_COLL_REDUCE && g.rank != a.root) {
                if (g.hier_tmp.size() < bytes) {
                    g.hier_tmp.resize(bytes);
                }
                out = g.hier_tmp.data();
            }
            const void *in = a.sendbuf == WEFT_COLL_IN_PLACE ? a.recvbuf : a.sendbuf;
            s.type = WEFT_COLL_REDUCE;
            s.root = 0;  // the node's leader
            s.recvbuf = out;
            s.sendbuf = in == out ? WEFT_COLL_IN_PLACE : in;
            if (!alone) {
                keep(shm_run(node, s, combine));
            } else {
                copy_bytes(out, in, bytes);
            }
            if (leaders != nullptr) {
                s.type = WEFT_COLL_ALLREDUCE;
                s.sendbuf = WEFT_COLL_IN_PLACE;
                keep(weft_coll(leaders, &s));
            }
            if (!alone) {
                s.type = WEFT_COLL_BCAST;
                s.sendbuf = nullptr;
                keep(shm_run(node, s, nullptr));
            }
            break;
        }
        default:
            return -WEFT_EINVAL;
    }
    return first;
}

void hier_teardown(group &g)
{
    if (g.node != nullptr) {
        shm_teardown(*g.node);
        g.node.reset();
    }
    if (g.leaders != nullptr) {
        for (auto &k : g.leaders->kept) {
            if (k->failed_run) {
                (void)k.release();  // the context's failed list has it
            }
        }
        g.leaders.reset();
    }
}

}  // namespace weft::coll
