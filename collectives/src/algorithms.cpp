// The algorithms: each writes a request's schedule for its arguments
// (docs/collectives.md, "Algorithms"). Ranks below are group ranks; "vrank" is a
// rank relative to the root, (rank - root) mod size, so trees hang from vrank 0.
//
// Floating-point results: wherever two partial results meet, the one covering
// lower ranks is the left operand, so that every member of an allreduce gets the
// same bits, and a reduction's order depends only on the group and algorithm.

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "collectives/src/coll_impl.hpp"

namespace weft::coll {
namespace {

/// Appends rounds to a request's schedule.
class builder {
  public:
    explicit builder(request &r) : r_(r) {}
    void send(std::uint32_t peer, const void *buf, std::size_t len)
    {
        comm_.push_back({buf, nullptr, nullptr, len, peer, step_kind::send});
    }
    void recv(std::uint32_t peer, void *buf, std::size_t len)
    {
        comm_.push_back({nullptr, nullptr, buf, len, peer, step_kind::recv});
    }
    void copy(void *dst, const void *src, std::size_t len)
    {
        if (len != 0 && dst != src) {
            local_.push_back({src, nullptr, dst, len, 0, step_kind::copy});
        }
    }
    /// dst = a op b over n elements.
    void combine(void *dst, const void *a, const void *b, std::size_t n)
    {
        if (n != 0) {
            local_.push_back({b, a, dst, n, 0, step_kind::combine});
        }
    }
    /// Close the round: its communication steps, then its local steps.
    void end_round()
    {
        if (comm_.empty() && local_.empty()) {
            return;
        }
        const auto comm = std::uint32_t(r_.steps.size());
        r_.steps.insert(r_.steps.end(), comm_.begin(), comm_.end());
        const auto local = std::uint32_t(r_.steps.size());
        r_.steps.insert(r_.steps.end(), local_.begin(), local_.end());
        r_.rounds.push_back({comm, local, std::uint32_t(r_.steps.size())});
        comm_.clear();
        local_.clear();
    }
    /// A temporary buffer owned by the request (never null, even for 0 bytes).
    std::byte *scratch(std::size_t len)
    {
        r_.scratch.emplace_back(new (std::nothrow) std::byte[std::max<std::size_t>(len, 1)]);
        if (!r_.scratch.back()) {
            failed_ = true;
            static std::byte dummy[64];
            return dummy;
        }
        return r_.scratch.back().get();
    }
    [[nodiscard]] bool failed() const { return failed_; }

  private:
    request &r_;
    std::vector<step> comm_;
    std::vector<step> local_;
    bool failed_ = false;
};

/// What every algorithm needs to know.
struct plan_ctx {
    builder &b;
    request &r;
    std::uint32_t n;   ///< members
    std::uint32_t me;  ///< my rank
    std::size_t es;    ///< bytes per element
    [[nodiscard]] std::uint32_t real(std::uint32_t vrank, std::uint32_t root) const
    {
        return (vrank + root) % n;
    }
    [[nodiscard]] std::uint32_t vrank(std::uint32_t root) const { return (me + n - root) % n; }
    void combine(void *dst, const void *a, const void *b2, std::size_t count)
    {
        b.combine(dst, a, b2, count);
    }
};

inline std::byte *at(void *p, std::size_t off)
{
    return static_cast<std::byte *>(p) + off;
}
inline const std::byte *at(const void *p, std::size_t off)
{
    return static_cast<const std::byte *>(p) + off;
}

/// Lowest set bit of a vrank; for vrank 0, the power of two at or above n.
std::uint32_t subtree_span(std::uint32_t vrank, std::uint32_t n)
{
    return vrank == 0 ? std::bit_ceil(n) : vrank & (~vrank + 1);
}

/// Split `count` elements into `parts` near-equal blocks (the first ones larger).
void split(std::size_t count, std::uint32_t parts, std::vector<std::size_t> &cnt,
           std::vector<std::size_t> &disp)
{
    cnt.assign(parts, count / parts);
    disp.assign(parts, 0);
    for (std::uint32_t i = 0; i < count % parts; ++i) {
        ++cnt[i];
    }
    for (std::uint32_t i = 1; i < parts; ++i) {
        disp[i] = disp[i - 1] + cnt[i - 1];
    }
}

// ------------------------------------------------------------------ barrier

void barrier_dissemination(plan_ctx &p)
{
    static const std::byte none{};
    for (std::uint32_t k = 1; k < p.n; k <<= 1) {
        p.b.send((p.me + k) % p.n, &none, 0);
        p.b.recv((p.me + p.n - k) % p.n, nullptr, 0);
        p.b.end_round();
    }
}

// ------------------------------------------------------------------ broadcast

void bcast_binomial(plan_ctx &p, void *buf, std::size_t bytes, std::uint32_t root)
{
    const std::uint32_t vr = p.vrank(root);
    const std::uint32_t span = subtree_span(vr, p.n);
    if (vr != 0) {
        p.b.recv(p.real(vr - span, root), buf, bytes);
        p.b.end_round();
    }
    for (std::uint32_t m = span >> 1; m >= 1; m >>= 1) {  // the largest subtree first
        if (vr + m < p.n) {
            p.b.send(p.real(vr + m, root), buf, bytes);
        }
    }
    p.b.end_round();
}

// Van de Geijn: a binomial scatter of n chunks (chunk v to vrank v), then a
// ring allgather of the chunks.
void bcast_scatter_allgather(plan_ctx &p, void *buf, std::size_t bytes, std::uint32_t root)
{
    const std::uint32_t n = p.n;
    const std::uint32_t vr = p.vrank(root);
    const std::size_t chunk = (bytes + n - 1) / n;
    auto off = [&](std::uint32_t v) {
        return std::min<std::size_t>(std::size_t(v) * chunk, bytes);
    };
    const std::uint32_t span = subtree_span(vr, n);
    if (vr != 0) {
        const std::uint32_t end = std::min(vr + span, n);
        p.b.recv(p.real(vr - span, root), at(buf, off(vr)), off(end) - off(vr));
        p.b.end_round();
    }
    for (std::uint32_t m = span >> 1; m >= 1; m >>= 1) {
        if (vr + m < n) {
            const std::uint32_t end = std::min(vr + 2 * m, n);
            p.b.send(p.real(vr + m, root), at(buf, off(vr + m)), off(end) - off(vr + m));
        }
    }
    p.b.end_round();
    const std::uint32_t right = p.real((vr + 1) % n, root);
    const std::uint32_t left = p.real((vr + n - 1) % n, root);
    for (std::uint32_t k = 0; k + 1 < n; ++k) {
        const std::uint32_t s = (vr + n - k) % n;
        const std::uint32_t q = (vr + 2 * n - k - 1) % n;
        p.b.send(right, at(buf, off(s)), off(s + 1) - off(s));
        p.b.recv(left, at(buf, off(q)), off(q + 1) - off(q));
        p.b.end_round();
    }
}

// ------------------------------------------------------------------ reduce

// Binomial tree: each member receives its children's partial results (all at
// once, each into its own buffer), combines them in vrank order and sends one
// result to its parent. `in` is this member's contribution, `out` (root only)
// where the result goes.
void reduce_binomial(plan_ctx &p, const void *in, void *out, std::size_t count, std::uint32_t root)
{
    const std::size_t bytes = count * p.es;
    const std::uint32_t vr = p.vrank(root);
    const std::uint32_t span = subtree_span(vr, p.n);
    std::vector<std::pair<std::uint32_t, std::byte *>> children;
    for (std::uint32_t m = 1; m < span && vr + m < p.n; m <<= 1) {
        children.emplace_back(p.real(vr + m, root), p.b.scratch(bytes));
    }
    void *acc = vr == 0 ? out : (children.empty() ? nullptr : p.b.scratch(bytes));
    const void *result = in;
    for (auto &[child, buf] : children) {
        p.b.recv(child, buf, bytes);
    }
    for (auto &[child, buf] : children) {
        p.combine(acc, result, buf, count);
        result = acc;
    }
    if (vr == 0) {
        p.b.copy(out, result, bytes);  // nothing to combine: a group of one
    }
    p.b.end_round();
    if (vr != 0) {
        p.b.send(p.real(vr - span, root), result, bytes);
        p.b.end_round();
    }
}

// ------------------------------------------------------------------ allreduce

/// Members beyond the largest power of two fold into it first (MPICH's scheme):
/// of the first 2*rem ranks, even ones send their data to the odd neighbour and
/// wait for the result. Returns the rank among the power of two, or -1.
struct fold {
    std::uint32_t p2;
    std::uint32_t rem;
    long newrank;
    [[nodiscard]] std::uint32_t rank_of(std::uint32_t nr) const
    {
        return nr < rem ? nr * 2 + 1 : nr + rem;
    }
};

fold fold_in(plan_ctx &p, void *acc, std::size_t count, std::byte *tmp)
{
    fold f{std::bit_floor(p.n), 0, 0};
    f.rem = p.n - f.p2;
    const std::size_t bytes = count * p.es;
    if (p.me < 2 * f.rem) {
        if (p.me % 2 == 0) {
            p.b.send(p.me + 1, acc, bytes);
            p.b.end_round();
            f.newrank = -1;
        } else {
            p.b.recv(p.me - 1, tmp, bytes);
            p.combine(acc, tmp, acc, count);
            p.b.end_round();
            f.newrank = p.me / 2;
        }
    } else {
        f.newrank = long(p.me - f.rem);
    }
    return f;
}

void fold_out(plan_ctx &p, const fold &f, void *acc, std::size_t bytes, bool fresh = false)
{
    if (p.me < 2 * f.rem) {
        if (p.me % 2 == 0 && fresh) {  // not into acc, which round 0 sent: may run triggered
            std::byte *result = p.b.scratch(bytes);
            p.b.recv(p.me + 1, result, bytes);
            p.b.copy(acc, result, bytes);
        } else if (p.me % 2 == 0) {
            p.b.recv(p.me + 1, acc, bytes);
        } else {
            p.b.send(p.me - 1, acc, bytes);
        }
        p.b.end_round();
    }
}

/// Small schedules get a temporary buffer per round, so that a round's data
/// may land before the previous round is done: they can run triggered.
constexpr std::size_t per_round_scratch_limit = 64 * 1024;

void allreduce_recursive_doubling(plan_ctx &p, void *acc, std::size_t count)
{
    const std::size_t bytes = count * p.es;
    std::byte *tmp = p.b.scratch(bytes);
    const fold f = fold_in(p, acc, count, tmp);
    if (f.newrank >= 0) {
        const auto nr = std::uint32_t(f.newrank);
        const bool fresh = bytes * std::bit_width(f.p2) <= per_round_scratch_limit;
        for (std::uint32_t mask = 1; mask < f.p2; mask <<= 1) {
            if (fresh && (mask > 1 || f.rem > 0)) {  // (the fold received into the first)
                tmp = p.b.scratch(bytes);
            }
            const std::uint32_t np = nr ^ mask;
            p.b.send(f.rank_of(np), acc, bytes);
            p.b.recv(f.rank_of(np), tmp, bytes);
            if (np < nr) {
                p.combine(acc, tmp, acc, count);
            } else {
                p.combine(acc, acc, tmp, count);
            }
            p.b.end_round();
        }
    }
    fold_out(p, f, acc, bytes, bytes * std::bit_width(f.p2) <= per_round_scratch_limit);
}

// Rabenseifner: reduce-scatter by recursive halving, then allgather by
// recursive doubling, among the power of two (MPICH's index bookkeeping).
void allreduce_rabenseifner(plan_ctx &p, void *acc, std::size_t count)
{
    const std::size_t es = p.es;
    std::byte *tmp = p.b.scratch(count * es);
    const fold f = fold_in(p, acc, count, tmp);
    if (f.newrank >= 0) {
        const auto nr = std::uint32_t(f.newrank);
        const std::uint32_t p2 = f.p2;
        std::vector<std::size_t> cnt;
        std::vector<std::size_t> disp;
        split(count, p2, cnt, disp);
        auto sum = [&](std::uint32_t from, std::uint32_t to) {
            std::size_t s = 0;
            for (std::uint32_t i = from; i < to; ++i) {
                s += cnt[i];
            }
            return s;
        };
        std::uint32_t send_idx = 0;
        std::uint32_t recv_idx = 0;
        std::uint32_t last_idx = p2;
        std::uint32_t mask = 1;
        for (; mask < p2; mask <<= 1) {
            const std::uint32_t nd = nr ^ mask;
            const std::uint32_t peer = f.rank_of(nd);
            std::size_t send_cnt = 0;
            std::size_t recv_cnt = 0;
            if (nr < nd) {
                send_idx = recv_idx + p2 / (mask * 2);
                send_cnt = sum(send_idx, last_idx);
                recv_cnt = sum(recv_idx, send_idx);
            } else {
                recv_idx = send_idx + p2 / (mask * 2);
                send_cnt = sum(send_idx, recv_idx);
                recv_cnt = sum(recv_idx, last_idx);
            }
            p.b.send(peer, at(acc, disp[send_idx] * es), send_cnt * es);
            p.b.recv(peer, tmp + disp[recv_idx] * es, recv_cnt * es);
            std::byte *mine = at(acc, disp[recv_idx] * es);
            if (nd < nr) {
                p.combine(mine, tmp + disp[recv_idx] * es, mine, recv_cnt);
            } else {
                p.combine(mine, mine, tmp + disp[recv_idx] * es, recv_cnt);
            }
            p.b.end_round();
            send_idx = recv_idx;
            if ((mask << 1) < p2) {
                last_idx = recv_idx + p2 / (mask << 1);
            }
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            const std::uint32_t nd = nr ^ mask;
            const std::uint32_t peer = f.rank_of(nd);
            std::size_t send_cnt = 0;
            std::size_t recv_cnt = 0;
            if (nr < nd) {
                if (mask != p2 / 2) {
                    last_idx += p2 / (mask * 2);
                }
                recv_idx = send_idx + p2 / (mask * 2);
                send_cnt = sum(send_idx, recv_idx);
                recv_cnt = sum(recv_idx, last_idx);
            } else {
                recv_idx = send_idx - p2 / (mask * 2);
                send_cnt = sum(send_idx, last_idx);
                recv_cnt = sum(recv_idx, send_idx);
            }
            p.b.send(peer, at(acc, disp[send_idx] * es), send_cnt * es);
            p.b.recv(peer, at(acc, disp[recv_idx] * es), recv_cnt * es);
            p.b.end_round();
            if (nr > nd) {
                send_idx = recv_idx;
            }
        }
    }
    fold_out(p, f, acc, count * es);
}

/// Ring reduce-scatter over `acc` split into blocks (cnt, disp): afterwards this
/// member holds block `(me + shift) mod n` fully reduced. Block j travels from
/// member j + 1 - shift around the ring, each adding its own part on the right.
void ring_reduce_scatter(plan_ctx &p, void *acc, const std::vector<std::size_t> &cnt,
                         const std::vector<std::size_t> &disp, std::uint32_t shift)
{
    const std::uint32_t n = p.n;
    const std::size_t es = p.es;
    const std::size_t most = *std::max_element(cnt.begin(), cnt.end());
    std::byte *tmp[2] = {p.b.scratch(most * es), p.b.scratch(most * es)};
    const std::uint32_t right = (p.me + 1) % n;
    const std::uint32_t left = (p.me + n - 1) % n;
    for (std::uint32_t k = 0; k + 1 < n; ++k) {
        const std::uint32_t s = (p.me + shift + 2 * n - k - 1) % n;
        const std::uint32_t q = (p.me + shift + 2 * n - k - 2) % n;
        std::byte *in = tmp[k % 2];
        p.b.send(right, at(acc, disp[s] * es), cnt[s] * es);
        p.b.recv(left, in, cnt[q] * es);
        p.combine(at(acc, disp[q] * es), in, at(acc, disp[q] * es), cnt[q]);
        p.b.end_round();
    }
}

/// Ring allgather of blocks (cnt, disp, in elements of es bytes) in place in
/// `buf`, this member starting with block `(me + shift) mod n`.
void ring_allgather(plan_ctx &p, void *buf, const std::vector<std::size_t> &cnt,
                    const std::vector<std::size_t> &disp, std::uint32_t shift, std::size_t es)
{
    const std::uint32_t n = p.n;
    const std::uint32_t right = (p.me + 1) % n;
    const std::uint32_t left = (p.me + n - 1) % n;
    for (std::uint32_t k = 0; k + 1 < n; ++k) {
        const std::uint32_t s = (p.me + shift + n - k) % n;
        const std::uint32_t q = (p.me + shift + 2 * n - k - 1) % n;
        p.b.send(right, at(buf, disp[s] * es), cnt[s] * es);
        p.b.recv(left, at(buf, disp[q] * es), cnt[q] * es);
        p.b.end_round();
    }
}

void allreduce_ring(plan_ctx &p, void *acc, std::size_t count)
{
    std::vector<std::size_t> cnt;
    std::vector<std::size_t> disp;
    split(count, p.n, cnt, disp);
    ring_reduce_scatter(p, acc, cnt, disp, 1);
    ring_allgather(p, acc, cnt, disp, 1, p.es);
}

// ------------------------------------------------------------------ allgather

void allgather_recursive_doubling(plan_ctx &p, void *recv, std::size_t blk)
{
    for (std::uint32_t mask = 1; mask < p.n; mask <<= 1) {
        const std::uint32_t peer = p.me ^ mask;
        const std::uint32_t mine = p.me & ~(mask - 1);
        const std::uint32_t theirs = peer & ~(mask - 1);
        p.b.send(peer, at(recv, mine * blk), mask * blk);
        p.b.recv(peer, at(recv, theirs * blk), mask * blk);
        p.b.end_round();
    }
}

// Bruck: blocks gather in a buffer rotated so this member's own comes first;
// in round k it sends its first min(k, n - k) blocks to me - k and receives as
// many from me + k; finally the buffer is rotated back into place.
void allgather_bruck(plan_ctx &p, const void *mine, void *recv, std::size_t blk)
{
    const std::uint32_t n = p.n;
    std::byte *tmp = p.b.scratch(std::size_t(n) * blk);
    p.b.copy(tmp, mine, blk);
    p.b.end_round();
    for (std::uint32_t k = 1; k < n; k <<= 1) {
        const std::uint32_t c = std::min(k, n - k);
        p.b.send((p.me + n - k) % n, tmp, c * blk);
        p.b.recv((p.me + k) % n, tmp + k * blk, c * blk);
        p.b.end_round();
    }
    // tmp[i] is member (me + i)'s block.
    const std::uint32_t head = n - p.me;  // blocks me .. n-1
    p.b.copy(at(recv, p.me * blk), tmp, head * blk);
    p.b.copy(recv, tmp + head * blk, p.me * blk);
    p.b.end_round();
}

// ------------------------------------------------------------------ gather, scatter

// Binomial gather: each member collects its subtree's blocks in vrank order and
// sends them to its parent in one message.
void gather_binomial(plan_ctx &p, const void *mine, void *recv, std::size_t blk, std::uint32_t root)
{
    const std::uint32_t n = p.n;
    const std::uint32_t vr = p.vrank(root);
    const std::uint32_t span = subtree_span(vr, n);
    const std::uint32_t size = std::min(span, n - vr);  // blocks in my subtree
    std::byte *tmp = nullptr;
    if (vr == 0) {
        tmp = root == 0 ? static_cast<std::byte *>(recv) : p.b.scratch(std::size_t(n) * blk);
    } else if (size > 1) {
        tmp = p.b.scratch(std::size_t(size) * blk);
    }
    if (tmp != nullptr) {
        for (std::uint32_t m = 1; m < span && vr + m < n; m <<= 1) {
            const std::uint32_t csize = std::min(m, n - (vr + m));
            p.b.recv(p.real(vr + m, root), tmp + std::size_t(m) * blk, csize * blk);
        }
        p.b.copy(tmp, mine, blk);
        if (vr == 0 && root != 0) {  // rotate vrank order into rank order
            p.b.copy(at(recv, root * blk), tmp, std::size_t(n - root) * blk);
            p.b.copy(recv, tmp + std::size_t(n - root) * blk, std::size_t(root) * blk);
        }
        p.b.end_round();
    }
    if (vr != 0) {
        p.b.send(p.real(vr - span, root), tmp != nullptr ? tmp : mine, size * blk);
        p.b.end_round();
    }
}

void scatter_binomial(plan_ctx &p, const void *send, void *mine, std::size_t blk,
                      std::uint32_t root)
{
    const std::uint32_t n = p.n;
    const std::uint32_t vr = p.vrank(root);
    const std::uint32_t span = subtree_span(vr, n);
    const std::uint32_t size = std::min(span, n - vr);
    const std::byte *tmp = nullptr;
    if (vr == 0) {
        if (root == 0) {
            tmp = static_cast<const std::byte *>(send);
        } else {  // vrank order: ranks root .. n-1, then 0 .. root-1
            std::byte *t = p.b.scratch(std::size_t(n) * blk);
            p.b.copy(t, at(send, root * blk), std::size_t(n - root) * blk);
            p.b.copy(t + std::size_t(n - root) * blk, send, std::size_t(root) * blk);
            p.b.end_round();
            tmp = t;
        }
    } else if (size > 1) {
        std::byte *t = p.b.scratch(std::size_t(size) * blk);
        p.b.recv(p.real(vr - span, root), t, size * blk);
        p.b.end_round();
        tmp = t;
    } else {
        p.b.recv(p.real(vr - span, root), mine, blk);
        p.b.end_round();
        return;
    }
    for (std::uint32_t m = span >> 1; m >= 1; m >>= 1) {
        if (vr + m < n) {
            const std::uint32_t csize = std::min(m, n - (vr + m));
            p.b.send(p.real(vr + m, root), tmp + std::size_t(m) * blk, csize * blk);
        }
    }
    if (mine != WEFT_COLL_IN_PLACE) {
        p.b.copy(mine, tmp, blk);
    }
    p.b.end_round();
}

// ------------------------------------------------------------------ alltoall

// Bruck: rotate so that block i goes to me + i, then in round k send every
// block whose index has bit k to me + k (packed), and finally block i, which
// came from me - i, goes to its place.
void alltoall_bruck(plan_ctx &p, const void *send, void *recv, std::size_t blk)
{
    const std::uint32_t n = p.n;
    std::byte *tmp = p.b.scratch(std::size_t(n) * blk);
    std::byte *out = p.b.scratch(std::size_t(n / 2 + 1) * blk);
    std::byte *in = p.b.scratch(std::size_t(n / 2 + 1) * blk);
    p.b.copy(tmp, at(send, p.me * blk), std::size_t(n - p.me) * blk);
    p.b.copy(tmp + std::size_t(n - p.me) * blk, send, std::size_t(p.me) * blk);
    auto pack = [&](std::uint32_t k) {
        std::size_t c = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
            if ((i & k) != 0) {
                p.b.copy(out + c++ * blk, tmp + std::size_t(i) * blk, blk);
            }
        }
        return c;
    };
    std::size_t c = pack(1);
    p.b.end_round();
    for (std::uint32_t k = 1; k < n; k <<= 1) {
        p.b.send((p.me + k) % n, out, c * blk);
        p.b.recv((p.me + n - k) % n, in, c * blk);
        std::size_t u = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
            if ((i & k) != 0) {
                p.b.copy(tmp + std::size_t(i) * blk, in + u++ * blk, blk);
            }
        }
        if ((k << 1) < n) {
            c = pack(k << 1);
        }
        p.b.end_round();
    }
    for (std::uint32_t i = 0; i < n; ++i) {
        p.b.copy(at(recv, std::size_t((p.me + n - i) % n) * blk), tmp + std::size_t(i) * blk, blk);
    }
    p.b.end_round();
}

/// Pairwise exchange: in round k send to me + k and receive from me - k.
/// Counts and displacements in bytes.
void alltoallv_pairwise(plan_ctx &p, const void *send, const std::size_t *scnt,
                        const std::size_t *sdisp, void *recv, const std::size_t *rcnt,
                        const std::size_t *rdisp)
{
    const std::uint32_t n = p.n;
    p.b.copy(at(recv, rdisp[p.me]), at(send, sdisp[p.me]), std::min(scnt[p.me], rcnt[p.me]));
    p.b.end_round();
    for (std::uint32_t k = 1; k < n; ++k) {
        const std::uint32_t to = (p.me + k) % n;
        const std::uint32_t from = (p.me + n - k) % n;
        p.b.send(to, at(send, sdisp[to]), scnt[to]);
        p.b.recv(from, at(recv, rdisp[from]), rcnt[from]);
        p.b.end_round();
    }
}

/// Linear: every member posts its sends and receives at once, a batch of at
/// most `batch` peers per round (MPICH's isend/irecv alltoall with its
/// throttle; WEFT_COLL_ALLTOALL_BATCH): no member waits for one partner
/// before the next, which with more processes than cores is a wait for that
/// partner to be scheduled. Within a batch the peers are taken in pairwise
/// order (me + k, me - k), so that members do not all send to the same one
/// first.
void alltoallv_linear(plan_ctx &p, const void *send, const std::size_t *scnt,
                      const std::size_t *sdisp, void *recv, const std::size_t *rcnt,
                      const std::size_t *rdisp, std::size_t batch)
{
    const std::uint32_t n = p.n;
    const std::size_t linear_batch = std::max<std::size_t>(1, batch);
    p.b.copy(at(recv, rdisp[p.me]), at(send, sdisp[p.me]), std::min(scnt[p.me], rcnt[p.me]));
    for (std::uint32_t k = 1; k < n; ++k) {
        const std::uint32_t to = (p.me + k) % n;
        const std::uint32_t from = (p.me + n - k) % n;
        p.b.recv(from, at(recv, rdisp[from]), rcnt[from]);
        p.b.send(to, at(send, sdisp[to]), scnt[to]);
        if (k % linear_batch == 0) {
            p.b.end_round();
        }
    }
    p.b.end_round();
}

// ------------------------------------------------------------------ scan

void scan_recursive_doubling(plan_ctx &p, const void *in, void *recv, std::size_t count,
                             bool exclusive)
{
    const std::size_t bytes = count * p.es;
    std::byte *partial = p.b.scratch(bytes);
    std::byte *tmp = p.b.scratch(bytes);
    const bool fresh = bytes * std::bit_width(p.n) <= per_round_scratch_limit;
    p.b.copy(partial, in, bytes);
    if (!exclusive) {
        p.b.copy(recv, in, bytes);
    }
    p.b.end_round();
    bool first = true;  // exclusive: nothing in recv yet
    for (std::uint32_t mask = 1; mask < p.n; mask <<= 1) {
        const std::uint32_t peer = p.me ^ mask;
        if (peer >= p.n) {
            continue;
        }
        if (fresh && mask > 1) {
            tmp = p.b.scratch(bytes);
        }
        p.b.send(peer, partial, bytes);
        p.b.recv(peer, tmp, bytes);
        if (peer < p.me) {
            p.combine(partial, tmp, partial, count);
            if (!exclusive) {
                p.combine(recv, tmp, recv, count);
            } else if (first) {
                p.b.copy(recv, tmp, bytes);
                first = false;
            } else {
                p.combine(recv, tmp, recv, count);
            }
        } else {
            p.combine(partial, partial, tmp, count);
        }
        p.b.end_round();
    }
}

// ------------------------------------------------------------------ selection

bool is_pow2(std::uint32_t n)
{
    return (n & (n - 1)) == 0;
}

}  // namespace

int plan(request &r)
{
    group &g = *r.grp;
    context &c = *g.ctx;
    builder b(r);
    const weft_coll_args &a = r.args;
    plan_ctx p{b, r, g.size, g.rank, size_of(raw(a.datatype))};
    const std::uint32_t n = g.size;
    const std::size_t es = p.es;
    const std::size_t bytes = a.count * es;
    auto alg = weft_coll_algorithm(a.algorithm);
    auto refuse = [&](const char *why) {
        log("error", "%s with the %s algorithm: %s", weft_coll_type_name(a.type),
            weft_coll_algorithm_name(alg), why);
        return -WEFT_EINVAL;
    };
    auto choose = [&](weft_coll_algorithm automatic,
                      std::initializer_list<weft_coll_algorithm> ok) {
        if (alg == WEFT_COLL_ALG_AUTO) {
            alg = automatic;
            return true;
        }
        return std::find(ok.begin(), ok.end(), alg) != ok.end();
    };
    const void *in = a.sendbuf == WEFT_COLL_IN_PLACE ? a.recvbuf : a.sendbuf;

    switch (a.type) {
        case WEFT_COLL_BARRIER:
            if (!choose(WEFT_COLL_ALG_DISSEMINATION, {WEFT_COLL_ALG_DISSEMINATION})) {
                return refuse("not a barrier algorithm");
            }
            barrier_dissemination(p);
            break;
        case WEFT_COLL_BCAST:
            if (!choose(bytes >= c.bcast_large && n > 2 ? WEFT_COLL_ALG_SCATTER_ALLGATHER
                                                        : WEFT_COLL_ALG_BINOMIAL,
                        {WEFT_COLL_ALG_BINOMIAL, WEFT_COLL_ALG_SCATTER_ALLGATHER})) {
                return refuse("not a broadcast algorithm");
            }
            if (alg == WEFT_COLL_ALG_BINOMIAL) {
                bcast_binomial(p, a.recvbuf, bytes, a.root);
            } else {
                bcast_scatter_allgather(p, a.recvbuf, bytes, a.root);
            }
            break;
        case WEFT_COLL_REDUCE:
            if (!choose(WEFT_COLL_ALG_BINOMIAL, {WEFT_COLL_ALG_BINOMIAL})) {
                return refuse("not a reduce algorithm");
            }
            reduce_binomial(p, in, a.recvbuf, a.count, a.root);
            break;
        case WEFT_COLL_ALLREDUCE: {
            const weft_coll_algorithm automatic =
                bytes <= c.allreduce_small || a.count < std::bit_floor(n)
                    ? WEFT_COLL_ALG_RECURSIVE_DOUBLING
                : bytes >= c.allreduce_ring && !is_pow2(n) ? WEFT_COLL_ALG_RING
                                                           : WEFT_COLL_ALG_RABENSEIFNER;
            if (!choose(automatic, {WEFT_COLL_ALG_RECURSIVE_DOUBLING, WEFT_COLL_ALG_RABENSEIFNER,
                                    WEFT_COLL_ALG_RING})) {
                return refuse("not an allreduce algorithm");
            }
            b.copy(a.recvbuf, in, bytes);
            b.end_round();
            if (alg == WEFT_COLL_ALG_RECURSIVE_DOUBLING) {
                allreduce_recursive_doubling(p, a.recvbuf, a.count);
            } else if (alg == WEFT_COLL_ALG_RABENSEIFNER) {
                allreduce_rabenseifner(p, a.recvbuf, a.count);
            } else {
                allreduce_ring(p, a.recvbuf, a.count);
            }
            break;
        }
        case WEFT_COLL_ALLGATHER: {
            const std::size_t blk = bytes;
            const weft_coll_algorithm automatic = blk * n > c.allgather_small ? WEFT_COLL_ALG_RING
                                                  : is_pow2(n) ? WEFT_COLL_ALG_RECURSIVE_DOUBLING
                                                               : WEFT_COLL_ALG_BRUCK;
            if (!choose(automatic, {WEFT_COLL_ALG_RING, WEFT_COLL_ALG_RECURSIVE_DOUBLING,
                                    WEFT_COLL_ALG_BRUCK})) {
                return refuse("not an allgather algorithm");
            }
            if (alg == WEFT_COLL_ALG_RECURSIVE_DOUBLING && !is_pow2(n)) {
                return refuse("needs a power-of-two group");
            }
            const void *mine =
                a.sendbuf == WEFT_COLL_IN_PLACE ? at(a.recvbuf, g.rank * blk) : a.sendbuf;
            if (alg == WEFT_COLL_ALG_BRUCK) {
                allgather_bruck(p, mine, a.recvbuf, blk);
                break;
            }
            b.copy(at(a.recvbuf, g.rank * blk), mine, blk);
            b.end_round();
            if (alg == WEFT_COLL_ALG_RING) {
                std::vector<std::size_t> cnt(n, blk);
                std::vector<std::size_t> disp(n);
                for (std::uint32_t i = 0; i < n; ++i) {
                    disp[i] = i * blk;
                }
                ring_allgather(p, a.recvbuf, cnt, disp, 0, 1);
            } else {
                allgather_recursive_doubling(p, a.recvbuf, blk);
            }
            break;
        }
        case WEFT_COLL_ALLGATHERV: {
            if (!choose(WEFT_COLL_ALG_RING, {WEFT_COLL_ALG_RING})) {
                return refuse("not an allgatherv algorithm");
            }
            std::vector<std::size_t> cnt(a.recvcounts, a.recvcounts + n);
            std::vector<std::size_t> disp(a.rdispls, a.rdispls + n);
            if (a.sendbuf != WEFT_COLL_IN_PLACE) {
                b.copy(at(a.recvbuf, disp[g.rank] * es), a.sendbuf, cnt[g.rank] * es);
                b.end_round();
            }
            ring_allgather(p, a.recvbuf, cnt, disp, 0, es);
            break;
        }
        case WEFT_COLL_GATHER:
        case WEFT_COLL_GATHERV: {
            const bool v = a.type == WEFT_COLL_GATHERV;
            if (!choose(v || bytes > c.rooted_small ? WEFT_COLL_ALG_LINEAR : WEFT_COLL_ALG_BINOMIAL,
                        v ? std::initializer_list<weft_coll_algorithm>{WEFT_COLL_ALG_LINEAR}
                          : std::initializer_list<weft_coll_algorithm>{WEFT_COLL_ALG_LINEAR,
                                                                       WEFT_COLL_ALG_BINOMIAL})) {
                return refuse("not a gather algorithm");
            }
            const bool root = g.rank == a.root;
            auto rcnt = [&](std::uint32_t i) { return v ? a.recvcounts[i] * es : bytes; };
            auto rdisp = [&](std::uint32_t i) { return v ? a.rdispls[i] * es : i * bytes; };
            const void *mine = root && a.sendbuf == WEFT_COLL_IN_PLACE ? nullptr : a.sendbuf;
            if (alg == WEFT_COLL_ALG_BINOMIAL) {
                gather_binomial(p, mine != nullptr ? mine : at(a.recvbuf, g.rank * bytes),
                                a.recvbuf, bytes, a.root);
            } else if (root) {
                for (std::uint32_t i = 0; i < n; ++i) {
                    if (i != g.rank) {
                        b.recv(i, at(a.recvbuf, rdisp(i)), rcnt(i));
                    }
                }
                if (mine != nullptr) {
                    b.copy(at(a.recvbuf, rdisp(g.rank)), mine, std::min(bytes, rcnt(g.rank)));
                }
                b.end_round();
            } else {
                b.send(a.root, a.sendbuf, bytes);
                b.end_round();
            }
            break;
        }
        case WEFT_COLL_SCATTER:
        case WEFT_COLL_SCATTERV: {
            const bool v = a.type == WEFT_COLL_SCATTERV;
            if (!choose(v || bytes > c.rooted_small ? WEFT_COLL_ALG_LINEAR : WEFT_COLL_ALG_BINOMIAL,
                        v ? std::initializer_list<weft_coll_algorithm>{WEFT_COLL_ALG_LINEAR}
                          : std::initializer_list<weft_coll_algorithm>{WEFT_COLL_ALG_LINEAR,
                                                                       WEFT_COLL_ALG_BINOMIAL})) {
                return refuse("not a scatter algorithm");
            }
            const bool root = g.rank == a.root;
            auto scnt = [&](std::uint32_t i) { return v ? a.sendcounts[i] * es : bytes; };
            auto sdisp = [&](std::uint32_t i) { return v ? a.sdispls[i] * es : i * bytes; };
            if (alg == WEFT_COLL_ALG_BINOMIAL) {
                scatter_binomial(p, a.sendbuf, a.recvbuf, bytes, a.root);
            } else if (root) {
                for (std::uint32_t i = 0; i < n; ++i) {
                    if (i != g.rank) {
                        b.send(i, at(a.sendbuf, sdisp(i)), scnt(i));
                    }
                }
                if (a.recvbuf != WEFT_COLL_IN_PLACE) {
                    b.copy(a.recvbuf, at(a.sendbuf, sdisp(g.rank)), std::min(bytes, scnt(g.rank)));
                }
                b.end_round();
            } else {
                b.recv(a.root, a.recvbuf, bytes);
                b.end_round();
            }
            break;
        }
        case WEFT_COLL_ALLTOALL:
        case WEFT_COLL_ALLTOALLV: {
            const bool v = a.type == WEFT_COLL_ALLTOALLV;
            const weft_coll_algorithm automatic =
                !v && bytes <= c.alltoall_small && n > 2 ? WEFT_COLL_ALG_BRUCK
                : !v && bytes <= c.alltoall_medium       ? WEFT_COLL_ALG_LINEAR
                                                         : WEFT_COLL_ALG_PAIRWISE;
            if (!choose(
                    automatic,
                    v ? std::initializer_list<weft_coll_algorithm>{WEFT_COLL_ALG_PAIRWISE,
                                                                   WEFT_COLL_ALG_LINEAR}
                      : std::initializer_list<weft_coll_algorithm>{
                            WEFT_COLL_ALG_PAIRWISE, WEFT_COLL_ALG_LINEAR, WEFT_COLL_ALG_BRUCK})) {
                return refuse("not an alltoall algorithm");
            }
            std::vector<std::size_t> scnt(n);
            std::vector<std::size_t> sdisp(n);
            std::vector<std::size_t> rcnt(n);
            std::vector<std::size_t> rdisp(n);
            std::size_t total = 0;  // bytes the receive side spans
            for (std::uint32_t i = 0; i < n; ++i) {
                rcnt[i] = (v ? a.recvcounts[i] : a.count) * es;
                rdisp[i] = (v ? a.rdispls[i] : std::size_t(i) * a.count) * es;
                scnt[i] = rcnt[i];
                sdisp[i] = rdisp[i];
                total = std::max(total, rdisp[i] + rcnt[i]);
                if (a.sendbuf != WEFT_COLL_IN_PLACE && v) {
                    scnt[i] = a.sendcounts[i] * es;
                    sdisp[i] = a.sdispls[i] * es;
                }
            }
            const void *send = a.sendbuf;
            if (send == WEFT_COLL_IN_PLACE) {  // send from a copy of the receive buffer
                std::byte *copy = b.scratch(total);
                b.copy(copy, a.recvbuf, total);
                b.end_round();
                send = copy;
            }
            if (alg == WEFT_COLL_ALG_BRUCK) {
                alltoall_bruck(p, send, a.recvbuf, bytes);
            } else if (alg == WEFT_COLL_ALG_LINEAR) {
                alltoallv_linear(p, send, scnt.data(), sdisp.data(), a.recvbuf, rcnt.data(),
                                 rdisp.data(), c.alltoall_batch);
            } else {
                alltoallv_pairwise(p, send, scnt.data(), sdisp.data(), a.recvbuf, rcnt.data(),
                                   rdisp.data());
            }
            break;
        }
        case WEFT_COLL_REDUCE_SCATTER:
        case WEFT_COLL_REDUCE_SCATTER_BLOCK: {
            std::vector<std::size_t> cnt(n, a.count);
            if (a.type == WEFT_COLL_REDUCE_SCATTER) {
                cnt.assign(a.recvcounts, a.recvcounts + n);
            }
            std::vector<std::size_t> disp(n, 0);
            for (std::uint32_t i = 1; i < n; ++i) {
                disp[i] = disp[i - 1] + cnt[i - 1];
            }
            const std::size_t total = disp[n - 1] + cnt[n - 1];
            if (!choose(total * es <= c.reduce_scatter_small ? WEFT_COLL_ALG_REDUCE_SCATTERV
                                                             : WEFT_COLL_ALG_RING,
                        {WEFT_COLL_ALG_RING, WEFT_COLL_ALG_REDUCE_SCATTERV})) {
                return refuse("not a reduce-scatter algorithm");
            }
            std::byte *acc = b.scratch(total * es);
            if (alg == WEFT_COLL_ALG_RING) {
                b.copy(acc, in, total * es);
                b.end_round();
                ring_reduce_scatter(p, acc, cnt, disp, 0);
                b.copy(a.recvbuf, acc + disp[g.rank] * es, cnt[g.rank] * es);
                b.end_round();
            } else {
                reduce_binomial(p, in, acc, total, 0);
                if (g.rank == 0) {
                    for (std::uint32_t i = 1; i < n; ++i) {
                        b.send(i, acc + disp[i] * es, cnt[i] * es);
                    }
                    b.copy(a.recvbuf, acc, cnt[0] * es);
                } else {
                    b.recv(0, a.recvbuf, cnt[g.rank] * es);
                }
                b.end_round();
            }
            break;
        }
        case WEFT_COLL_SCAN:
        case WEFT_COLL_EXSCAN:
            if (!choose(WEFT_COLL_ALG_RECURSIVE_DOUBLING, {WEFT_COLL_ALG_RECURSIVE_DOUBLING})) {
                return refuse("not a scan algorithm");
            }
            scan_recursive_doubling(p, in, a.recvbuf, a.count, a.type == WEFT_COLL_EXSCAN);
            break;
        default:
            return -WEFT_EINVAL;
    }
    r.algorithm = alg;
    if (b.failed()) {
        return -WEFT_ENOMEM;
    }
    check_triggerable(r);
    return 0;
}

void check_triggerable(request &r)
{
    r.triggerable = false;
    if (r.steps.size() > 4096) {
        return;  // the check is quadratic; such schedules run in the direct form
    }
    const std::size_t es = r.combine != nullptr ? size_of(raw(r.args.datatype)) : 1;
    auto bytes = [&](const step &s) { return s.kind == step_kind::combine ? s.len * es : s.len; };
    auto overlap = [](const void *a, std::size_t alen, const void *b, std::size_t blen) {
        if (a == nullptr || b == nullptr || alen == 0 || blen == 0) {
            return false;
        }
        const auto *x = static_cast<const char *>(a);
        const auto *y = static_cast<const char *>(b);
        return x < y + blen && y < x + alen;
    };
    for (std::uint32_t k = 0; k < r.rounds.size(); ++k) {
        for (std::uint32_t i = r.rounds[k].comm; i < r.rounds[k].local; ++i) {
            const step &rv = r.steps[i];
            if (rv.kind != step_kind::recv) {
                continue;
            }
            for (std::uint32_t j = 0; j < r.rounds[k].end; ++j) {
                if (j == i || (j >= r.rounds[k].local)) {
                    continue;  // itself; its own round's local steps run after it
                }
                const step &o = r.steps[j];
                const bool writes = o.kind != step_kind::send;
                const bool reads = o.kind != step_kind::recv;
                if ((writes && overlap(rv.dst, rv.len, o.dst, bytes(o))) ||
                    (reads && overlap(rv.dst, rv.len, o.src, bytes(o))) ||
                    (o.kind == step_kind::combine && overlap(rv.dst, rv.len, o.src2, bytes(o)))) {
                    return;
                }
            }
            // Later rounds' receives into the same bytes.
            for (std::uint32_t j = r.rounds[k].local; j < r.steps.size(); ++j) {
                const step &o = r.steps[j];
                if (o.kind == step_kind::recv && overlap(rv.dst, rv.len, o.dst, o.len)) {
                    return;
                }
            }
        }
    }
    r.triggerable = true;
}

}  // namespace weft::coll
