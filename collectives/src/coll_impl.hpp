#pragma once
// The collectives library's internals (docs/collectives.md), over weft.h only.
//
// A collective is planned once into a schedule: rounds, each a set of
// communication steps (tagged sends and receives with a member) followed by
// local steps (copy, combine). The engine posts a round's communication, and
// when every one of its operations has completed it runs the local steps and
// moves to the next round. Every message of one collective carries the same tag
// (the group's id and the collective's sequence number): messages between two
// members match in the order they were sent, and each algorithm sends and
// receives between a pair in the same order on both sides, so rounds need no
// tag of their own (and members may have different numbers of rounds).

#include <weft/coll.h>
#include <weft/weft.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::coll {

/// Log a line "weft coll <level>: ..." on stderr (errors and warnings; the
/// library's callers decide whether a failed call is fatal).
[[gnu::format(printf, 2, 3)]] void log(const char *level, const char *fmt, ...);

/// dst[i] = a[i] op b[i] for n elements; dst may be a or b.
using combine_fn = void (*)(void *dst, const void *a, const void *b, std::size_t n);
/// The combine function of (datatype, op) given as the integers the caller
/// passed, or nullptr when op is not defined on it (or either is no value of
/// its enum).
combine_fn combine_of(int datatype, int op);
/// Bytes of one element (0: not a datatype).
std::size_t size_of(int datatype);

/// The integer an enum field or argument holds, read without loading it as
/// the enum: a caller may pass any int, and loading one outside the enum's
/// range is undefined behaviour (UBSan reports it).
template <class E>
inline int raw(const E &e)
{
    static_assert(sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

/// Copy `len` bytes (none: a null pointer is fine; the same place: nothing).
inline void copy_bytes(void *dst, const void *src, std::size_t len)
{
    if (len != 0 && dst != src) {
        std::memmove(dst, src, len);
    }
}

/// Whether the enum fields of `a` hold values of their enums' ranges (after
/// this, reading them is defined; unknown values are then refused by name).
inline bool enums_in_range(const weft_coll_args &a)
{
    const int t = raw(a.type);
    const int d = raw(a.datatype);
    const int o = raw(a.op);
    return t >= 0 && t < WEFT_COLL_TYPE_COUNT && d >= 0 && d < WEFT_COLL_DATATYPE_END && o >= 0 &&
           o < WEFT_COLL_OP_END;
}

enum class step_kind : std::uint8_t { send, recv, copy, combine };

/// One step of a schedule. Buffers are final addresses: a schedule is made for
/// one set of arguments and reused only with the same ones.
struct step {
    const void *src;     ///< send, copy: the data; combine: operand b
    const void *src2;    ///< combine: operand a (dst = a op b)
    void *dst;           ///< recv, copy, combine
    std::size_t len;     ///< send, recv, copy: bytes; combine: elements
    std::uint32_t peer;  ///< send, recv: the member
    step_kind kind;
};
static_assert(sizeof(step) <= 48, "a schedule step stays within 48 bytes");

/// Steps [comm, local) are a round's communication, [local, end) its local steps.
struct round_range {
    std::uint32_t comm;
    std::uint32_t local;
    std::uint32_t end;
};

}  // namespace weft::coll

// The opaque handles of coll.h are the library's objects themselves.
struct weft_coll_context;
struct weft_coll_group;

namespace weft::coll {
using context = ::weft_coll_context;
using group = ::weft_coll_group;

}  // namespace weft::coll

/// A planned collective: its schedule and where its execution stands.
struct weft_coll_request {
    using step = weft::coll::step;
    using round_range = weft::coll::round_range;
    using combine_fn = weft::coll::combine_fn;
    weft_coll_group *grp = nullptr;
    weft_coll_args args{};            ///< v arrays point into `arrays`
    std::vector<std::size_t> arrays;  ///< copies of the caller's v arrays
    weft_coll_algorithm algorithm = WEFT_COLL_ALG_AUTO;
    combine_fn combine = nullptr;
    std::vector<step> steps;
    std::vector<round_range> rounds;
    std::vector<std::unique_ptr<std::byte[]>> scratch;  ///< temporary buffers of the schedule

    enum class state : std::uint8_t { idle, active, done };
    state st = state::idle;
    std::uint64_t tag = 0;          ///< of the current run
    std::uint32_t round = 0;        ///< current round
    std::uint32_t next = 0;         ///< next communication step of the round to post
    std::uint32_t outstanding = 0;  ///< posted operations of the round not completed
    int status = 0;                 ///< 0, or the first error of the run
    bool kept = false;              ///< owned by the group's cache (weft_coll)
    bool blocked = false;           ///< on the context's blocked list (a post said EAGAIN)

    // Triggered form (docs/collectives.md, "Triggered schedules"): every
    // operation is posted at start, counted on its round's counter; a round's
    // sends are armed on the previous round's counter reaching `full`.
    bool triggerable = false;          ///< the schedule allows it (no buffer hazard)
    bool triggered = false;            ///< this run is in the triggered form
    std::vector<weft_cntr_t *> cntrs;  ///< by round
    std::vector<std::uint64_t> full;   ///< by round: its counter's value when it is done
    std::vector<weft_count> counts;    ///< by step (communication steps)
    std::uint32_t local_round = 0;     ///< next round whose local steps may be due
    /// A triggered run failed: some of its operations may still complete (or
    /// fail) later, into its buffers and counters. It is never started again,
    /// and the context keeps it (freeing it only hands it over) until it closes.
    bool failed_run = false;
    ~weft_coll_request();
};

/// The library's endpoint and what it knows about peers.
struct weft_coll_context {
    using request = weft_coll_request;
    weft_domain_t *domain = nullptr;
    weft_info *info = nullptr;
    weft_av_t *av = nullptr;
    weft_cq_t *cq = nullptr;
    weft_ep_t *ep = nullptr;
    std::size_t addr_len = 0;
    std::size_t inject = 0;  ///< sends up to this size are injected (no completion)
    std::map<std::string, weft_addr_t> peers;  ///< raw address -> AV index
    std::uint32_t next_group_id = 1;
    std::size_t groups = 0;
    std::vector<request *> blocked;  ///< requests with steps left to post after EAGAIN
    long spins_before_yield = 1 << 20;
    /// WEFT_COLL_TRIGGERED: 0 never, 1 always (where the schedule allows),
    /// 2 (auto) for requests the caller starts (nonblocking, persistent).
    int triggered_mode = 2;
    std::vector<request *> watched;       ///< active triggered requests
    std::vector<request *> failed;        ///< failed triggered runs (failed_run), freed at close
    void (*wait_hook)(void *) = nullptr;  ///< called by waits with nothing to do
    void *wait_arg = nullptr;
    bool rma = false;  ///< the endpoint reads peers' registered memory (weft_get)
    /// Single-copy reads of the shared-memory stage (shm_run_direct) not yet
    /// complete; their CQ entries carry this word's address as op_context.
    std::uint32_t direct_pending = 0;
    int direct_err = 0;  ///< the first error of those reads, until the call takes it

    // Selection thresholds (WEFT_COLL_* environment variables, docs/collectives.md).
    std::size_t bcast_large = 64 * 1024;
    std::size_t allreduce_small = 8 * 1024;
    std::size_t allreduce_ring = 1024 * 1024;
    std::size_t allgather_small = 64 * 1024;
    std::size_t rooted_small = 2048;
    std::size_t alltoall_small = 256;
    std::size_t alltoall_medium = 32 * 1024;
    std::size_t alltoall_batch = 32;
    std::size_t rndv_thresh = 64 * 1024;  ///< WEFT_COLL_RNDV_THRESH: the endpoint's rendezvous
    std::size_t reduce_scatter_small = 8 * 1024;
    std::size_t cache_size = 16;
    std::size_t shm_slot = 64 * 1024;     ///< WEFT_COLL_SHM_SLOT (0: no shared-memory stage)
    std::size_t shm_large = 1024 * 1024;  ///< WEFT_COLL_SHM_LARGE (0: none in pieces)
    std::size_t shm_push = 256 * 1024;    ///< WEFT_COLL_SHM_PUSH (symmetric broadcasts)
    std::size_t shm_direct = 64 * 1024;   ///< WEFT_COLL_SHM_DIRECT (0: no single-copy calls)
    std::string node_name;  ///< WEFT_COLL_NODE: this process's node (default: the host name)

    int progress();
    /// Start a run in the triggered form: post every operation at once.
    void start_triggered(request &r);
    /// Run due local steps of a triggered request; finish it when done.
    /// Returns whether it moved.
    bool watch(request &r);
    /// Post what is left of the request's current round; run rounds whose
    /// operations are all complete. Returns when the request waits for the network.
    void advance(request &r);
    void complete_one(request &r, int err);
};

namespace weft::coll {
/// The stage's sizes a group uses (each the smallest any member has).
struct shm_params {
    std::size_t slot = 0;        ///< WEFT_COLL_SHM_SLOT
    std::size_t push_max = 0;    ///< WEFT_COLL_SHM_PUSH
    std::size_t large_max = 0;   ///< WEFT_COLL_SHM_LARGE
    std::size_t direct_min = 0;  ///< WEFT_COLL_SHM_DIRECT (0: off)
};

/// A group's shared-memory stage (collectives/src/shm.cpp): its region and
/// every member's, mapped.
struct shm_state {
    weft_mr_t *mr = nullptr;
    std::vector<weft_rkey_t *> rkeys;      ///< by member (nullptr: this one)
    std::vector<std::byte *> peer;         ///< by member: its region, mapped
    std::size_t slot = 0;                  ///< bytes of each of the two data slots
    std::uint64_t seq = 0;                 ///< collectives run on this path
    std::uint64_t last_data = 0;           ///< the last of them that was no barrier
    std::vector<std::uint64_t> done_seen;  ///< by member: its `done` when last read
    /// Symmetric buffers that go straight to the members (the root's pushes
    /// of a broadcast) up to this many bytes times receivers (the smallest
    /// WEFT_COLL_SHM_PUSH of the members); above, members pull.
    std::size_t push_max = 0;
    /// A symmetric segment (weft_coll_group_add_segment), mapped from every member.
    struct segment {
        std::byte *base = nullptr;         ///< this member's
        std::size_t len = 0;               ///< the smallest of the members'
        std::vector<std::byte *> peer;     ///< by member: its segment, mapped
        std::vector<weft_rkey_t *> rkeys;  ///< by member (nullptr: this one)
    };
    std::vector<segment> segs;
    std::vector<std::byte> tmp;         ///< in-place reductions of symmetric buffers
    std::vector<std::uint64_t> totals;  ///< calls larger than a slot: every member's bytes
    std::size_t large_max = 0;  ///< calls larger than a slot up to this (per member): in pieces
    /// Blocks of at least this many bytes move once, read by weft_get from the
    /// owner's buffer (SIZE_MAX: not on this group: a member cannot).
    std::size_t direct_min = SIZE_MAX;
    /// A member's buffer in a single-copy call, as its slot described it.
    struct direct_source {
        std::uint64_t addr = 0;
        weft_rkey_t *key = nullptr;  ///< unpacked for this call, released at its end
        bool looked = false;         ///< the description was read (key nullptr: unusable)
    };
    std::vector<direct_source> direct_src;  ///< by member, for the current call
    std::vector<std::byte> direct_tmp;      ///< single-copy reductions: members' chunks
    shm_state() = default;
    shm_state(const shm_state &) = delete;
    shm_state &operator=(const shm_state &) = delete;
    ~shm_state();
};
}  // namespace weft::coll

/// An ordered set of members and the schedules it keeps.
struct weft_coll_group {
    using request = weft_coll_request;
    weft_coll_context *ctx = nullptr;
    std::uint32_t size = 0;
    std::uint32_t rank = 0;
    std::uint32_t id = 0;
    std::uint32_t seq = 0;               ///< collectives started on the group
    std::vector<weft_addr_t> addrs;      ///< by member
    std::vector<std::uint32_t> node_of;  ///< by member: an index of its node (same = same node)
    std::uint32_t node_peers = 1;        ///< members on this process's node (itself included)
    std::size_t active = 0;              ///< requests started and not done
    std::vector<std::unique_ptr<request>> kept;  ///< weft_coll()'s schedules, most recent last
    std::unique_ptr<weft::coll::shm_state> shm;  ///< the shared-memory stage, or none
    // Groups that span nodes (hier.cpp); none on a single node.
    std::unique_ptr<weft_coll_group> node;           ///< this member's node, with the stage
    std::unique_ptr<weft_coll_group> leaders;        ///< on node leaders: one member per node
    std::vector<std::uint32_t> node_rank;            ///< by member: its rank in its node's group
    std::vector<std::uint32_t> leader;               ///< by node: the member leading it
    std::vector<std::byte> hier_tmp;                 ///< a reduce's result on members not its root
    std::uint32_t nodes = 1;                         ///< nodes the members are on
    std::uint64_t calls[WEFT_COLL_PATH_COUNT] = {};  ///< weft_coll() calls by path
};

namespace weft::coll {
using request = ::weft_coll_request;

/// Whether the schedule may run triggered: every receive's buffer is touched
/// by no step of an earlier round, no other communication step of its round
/// and no other receive (its data may land as soon as its sender's round
/// fires, before this member's earlier rounds are done). Sets r.triggerable.
void check_triggerable(request &r);

/// Whether the shared-memory stage runs `a` on `g` (blocking calls, automatic
/// algorithm, what a member publishes fits a slot).
bool shm_takes(const group &g, const weft_coll_args &a);
/// Run `a` (validated) on the shared-memory stage; `combine` for reductions.
/// `stride`: bytes between the members' blocks in the caller's buffers
/// (allgather, alltoall), 0 for the block size.
int shm_run(group &g, const weft_coll_args &a, combine_fn combine, std::size_t stride = 0);
/// Whether the stage runs `a`, larger than a slot, a slot's worth at a time.
bool shm_takes_large(const group &g, const weft_coll_args &a);
/// Run `a` (checked as shm_args_ok does) a slot's worth at a time.
int shm_run_large(group &g, const weft_coll_args &a, combine_fn combine);
/// Whether the stage runs `a` in single copy: blocks of at least direct_min
/// bytes that members read straight from their owners' buffers.
bool shm_takes_direct(const group &g, const weft_coll_args &a);
/// Run `a` (checked as shm_args_ok does) in single copy; `combine` for reductions.
int shm_run_direct(group &g, const weft_coll_args &a, combine_fn combine);
/// Whether the stage runs `a` (flags WEFT_COLL_SYMMETRIC) straight from and
/// into the members' symmetric buffers; `a` is validated as shm_args_ok does.
bool shm_symmetric(const group &g, const weft_coll_args &a);
/// Run `a` on symmetric buffers (shm_symmetric said yes).
int shm_run_symmetric(group &g, const weft_coll_args &a, combine_fn combine);
/// Whether `a` is a call the stage could take were its count smaller (so
/// that another member's count may have put it there): such a call that no
/// form of the stage took agrees with the members first (shm_agree).
bool shm_count_decides(const group &g, const weft_coll_args &a);
/// One stage round before such a call goes to the message path: every
/// member says it goes there and with how many bytes. A member on a form of
/// the stage (its count differs) or with another count fails the call on
/// every member that sees it, before any data moves: never a wait for ever.
/// `refuse`: this member refused the call (its arguments); the round tells
/// the others, who fail too instead of waiting for it. Returns 0 or the
/// call's error (with `refuse`, -WEFT_EINVAL).
int shm_agree(group &g, const weft_coll_args &a, bool refuse = false);
/// Make the group's shared-memory stage with `prm.slot`-byte slots if every
/// member maps every other's region (two more out-of-band exchanges, on every
/// member); single-copy calls if every member's endpoint reads with RMA too.
int shm_setup(group &g, const shm_params &prm, const weft_coll_oob &oob);
/// Map every member's symmetric segment (weft_coll_group_add_segment).
int shm_add_segment(group &g, void *base, std::size_t len, weft_mr_t *mr, const weft_coll_oob &oob);
/// Wait until the members are done with this member's region, and free it.
void shm_teardown(group &g);

/// Make the node and leaders groups of a group whose members are on `nodes`
/// nodes (several on some), each node's with a stage of `prm`'s sizes;
/// every member takes part in the exchanges (three or more rounds of `oob`).
int hier_setup(group &g, const shm_params &prm, const weft_coll_oob &oob, std::uint32_t nodes);
/// Whether `a` runs in the node / leaders / node form on `g`.
bool hier_takes(const group &g, const weft_coll_args &a);
/// Run `a` (checked as shm_args_ok does) in that form.
int hier_run(group &g, const weft_coll_args &a, combine_fn combine);
/// Free the node and leaders groups (waiting for the node's members, as shm_teardown).
void hier_teardown(group &g);

/// Fill the request's schedule for its (validated) arguments. Returns 0 or
/// -WEFT_EINVAL (an algorithm that does not apply, logged) or -WEFT_ENOMEM.
int plan(request &r);

/// The tag of a run: the group's id above its sequence number.
inline std::uint64_t tag_of(std::uint32_t group_id, std::uint32_t seq)
{
    return (std::uint64_t(group_id) << 32) | seq;
}

}  // namespace weft::coll
