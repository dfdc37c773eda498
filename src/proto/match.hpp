#pragma once
// weft::proto::matcher -- MPI tag matching, transport-independent.
//
// Semantics (MPI, and weft.h weft_trecv):
//   * a receive (src, tag, ignore) accepts a message (msg_src, msg_tag) when
//       ((msg_tag ^ tag) & ~ignore) == 0 && (src == any_source || src == msg_src);
//   * an arriving message matches the EARLIEST-POSTED queued receive that accepts it,
//     whether that receive is specific or a wildcard;
//   * a receive being posted matches the EARLIEST-ARRIVED unexpected message it accepts.
//   Together these give "messages from one source match in send (arrival) order" and
//   "receives match in posting order".
//
// Data structures (all intrusive: the matcher never allocates after construction):
//   * posted receives that are fully specific (src != any_source, ignore == 0) sit in
//     a hash bucket keyed by (src, tag); every other posted receive sits in one
//     wildcard list. Both are FIFO lists in posting order; every posted receive gets
//     a posting sequence number (`seq`), strictly increasing.
//   * unexpected messages sit in a hash bucket keyed by (src, tag) AND in one global
//     list in arrival order.
//
// Why ordering is preserved:
//   * match_posted(src, tag): the receives that accept the message are (a) specific
//     receives with exactly this (src, tag) -- all of them in bucket h(src, tag),
//     which is in posting order, and (b) some wildcard receives -- all of them in the
//     wildcard list, which is in posting order. The first acceptor in each list is the
//     earliest of its set; the one with the lower seq is the earliest overall. The
//     wildcard list is scanned only when it is non-empty, and only while its entries
//     are older than the bucket's candidate (later entries cannot win).
//   * post(specific src, tag): every message it accepts has exactly this (src, tag), so
//     all of them are in bucket h(src, tag), in arrival order: the first whose (src, tag)
//     compares equal (buckets are shared by colliding keys) is the earliest.
//   * post(wildcard): the arrival list is scanned from the oldest message.
//   Lists are only appended at the tail and unlinked anywhere, so they stay sorted.
//
// Protocol with the caller (the core): on arrival call match_posted(); on nullptr create
// the unexpected record and call add_unexpected() before any other post() -- otherwise a
// receive posted in between could overtake the message. The matcher holds no lock; the
// caller serialises calls (endpoint threading policy).
//
// Complexity: post/match_posted/add_unexpected are O(1) expected with specific receives
// (bucket length ~ n / buckets), plus O(wildcards scanned) when wildcard receives are
// posted, plus O(unexpected scanned) for a wildcard post. remove_* are O(1).
// Design and measurements: docs/matching.md; benchmark: perf/match_bench.cpp.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft::proto {

/// Receive source meaning "from anyone".
inline constexpr std::uint32_t any_source = UINT32_MAX;
/// Source of a message from a peer not in the address vector: only any-source receives
/// accept it. Never a valid source for post().
inline constexpr std::uint32_t unknown_source = UINT32_MAX - 1;

/// Intrusive doubly-linked node. Lists have a sentinel head (an empty list's head
/// points to itself).
struct match_link {
    match_link *prev;
    match_link *next;
};

/// Where a posted_recv is (bookkeeping owned by the matcher).
enum class posted_state : std::uint32_t {
    idle = 0,      ///< not queued: never posted, matched, canceled or removed
    specific = 1,  ///< queued in a hash bucket
    wildcard = 2,  ///< queued in the wildcard list
    removing = 3,  ///< taken by remove_posted_if, not yet handed to its callback
};

/// A posted receive: embedded (as a member or a base) in the core's receive request.
/// Must be constructed (state == idle) before its first post(); the matcher keeps the
/// state right afterwards, so a pooled request can be posted again after it matched.
/// The fields are written by post(); the caller reads them, never writes them while
/// the receive is queued.
struct posted_recv {
    match_link link{nullptr, nullptr};  ///< bucket or wildcard list
    std::uint64_t tag = 0;
    std::uint64_t ignore = 0;  ///< tag bits that need not match
    std::uint32_t src = 0;     ///< any_source or a source id
    posted_state state = posted_state::idle;
    std::uint64_t seq = 0;  ///< posting order (set when it is queued)

    /// Queued in a matcher (can still match or be canceled).
    [[nodiscard]] bool queued() const noexcept
    {
        return state == posted_state::specific || state == posted_state::wildcard;
    }
};
static_assert(sizeof(posted_recv) == 48, "posted_recv is embedded in every receive request");

/// An unexpected message: embedded in the core's unexpected-message record. The fields
/// are written by add_unexpected().
struct unexpected_msg {
    match_link bucket_link{nullptr, nullptr};   ///< bucket h(src, tag); next == nullptr: not queued
    match_link arrival_link{nullptr, nullptr};  ///< global arrival-ordered list
    std::uint64_t tag = 0;
    std::uint32_t src = 0;  ///< may be unknown_source
    std::uint64_t seq = 0;  ///< arrival order

    [[nodiscard]] bool queued() const noexcept { return bucket_link.next != nullptr; }
};
static_assert(sizeof(unexpected_msg) == 56, "unexpected_msg is embedded in every record");

class matcher {
  public:
    /// Number of buckets = 1 << hash_bits (0 gives one bucket; at most 24).
    explicit matcher(unsigned hash_bits = 10);
    ~matcher();
    matcher(const matcher &) = delete;  // list heads point to themselves
    matcher &operator=(const matcher &) = delete;

    /// A receive is being posted. If an unexpected message matches, remove it from the
    /// queues and return it (the receive is NOT queued). Otherwise queue `r` and return
    /// nullptr. `r` must not be queued; src must not be unknown_source.
    [[gnu::always_inline]] inline unexpected_msg *post(posted_recv *r, std::uint32_t src,
                                                       std::uint64_t tag, std::uint64_t ignore);

    /// A message arrived. If a posted receive matches, remove it and return it.
    /// Otherwise return nullptr (the caller then creates an unexpected record and calls
    /// add_unexpected -- nothing is queued here). src must not be any_source.
    [[gnu::always_inline]] inline posted_recv *match_posted(std::uint32_t src, std::uint64_t tag);

    /// Queue an unexpected message (after match_posted returned nullptr for it).
    [[gnu::always_inline]] inline void add_unexpected(unexpected_msg *m, std::uint32_t src,
                                                      std::uint64_t tag);

    /// Peek: the earliest unexpected message accepted by (src, tag, ignore), not removed.
    /// nullptr if none.
    [[nodiscard]] inline unexpected_msg *find_unexpected(std::uint32_t src, std::uint64_t tag,
                                                         std::uint64_t ignore) const;

    /// Remove a queued unexpected message (e.g. after find_unexpected, for mprobe).
    [[gnu::always_inline]] inline void remove_unexpected(unexpected_msg *m);

    /// Cancel: remove a queued receive. Returns false if it is not queued (already
    /// matched, canceled or never posted). `r` must belong to this matcher if queued.
    [[gnu::always_inline]] inline bool remove_posted(posted_recv *r);

    /// Remove (and pass to fn) every queued receive for which pred(r) is true -- used
    /// when a peer dies to fail receives directed at it. fn is called in posting order,
    /// after all selected receives were removed, so fn may call back into the matcher
    /// (post, cancel, ...). Receives posted by fn are not visited. O(buckets + posted).
    template <class Pred, class Fn>
    void remove_posted_if(Pred &&pred, Fn &&fn);

    /// Call fn(unexpected_msg *) for every queued unexpected message, in arrival order.
    /// fn may remove_unexpected() the message it is given, and no other.
    template <class Fn>
    void for_each_unexpected(Fn &&fn) const;

    [[nodiscard]] std::size_t posted_count() const noexcept { return posted_count_; }
    /// Receives queued so far (a posting sequence number): it moves only when
    /// post() queues one.
    [[nodiscard]] std::uint64_t posts_so_far() const noexcept { return post_seq_; }
    [[nodiscard]] std::size_t unexpected_count() const noexcept { return unexpected_count_; }
    /// Queued unexpected messages whose sender was not in the address vector when
    /// they arrived (src == unknown_source).
    [[nodiscard]] std::size_t unknown_count() const noexcept { return unknown_count_; }

    /// The sender of `m`, queued with unknown_source, has become known as `src`
    /// (it was inserted into the address vector since): file it under `src`, so
    /// receives directed at `src` find it. Its place in the arrival order is
    /// kept: it goes into bucket h(src, tag) before every message that arrived
    /// after it. src must be neither any_source nor unknown_source.
    [[gnu::cold]] inline void rekey_unknown(unexpected_msg *m, std::uint32_t src);
    /// Posted receives in the wildcard list (any-source or a non-zero ignore mask).
    [[nodiscard]] std::size_t wildcard_count() const noexcept { return wildcard_count_; }
    [[nodiscard]] std::size_t bucket_count() const noexcept { return mask_ + 1; }

    /// Does a receive (src, tag, ignore) accept a message (msg_src, msg_tag)?
    [[nodiscard]] static constexpr bool accepts(std::uint32_t src, std::uint64_t tag,
                                                std::uint64_t ignore, std::uint32_t msg_src,
                                                std::uint64_t msg_tag) noexcept
    {
        return ((msg_tag ^ tag) & ~ignore) == 0 && (src == any_source || src == msg_src);
    }

    /// The bucket of (src, tag): exposed for tests that need colliding keys.
    [[nodiscard]] std::size_t bucket_of(std::uint32_t src, std::uint64_t tag) const noexcept
    {
        return hash(src, tag) & mask_;
    }

  private:
    struct bucket {
        match_link posted;      ///< specific receives with this hash, posting order
        match_link unexpected;  ///< unexpected messages with this hash, arrival order
    };

    // A multiply-xorshift mix: every bit of src and tag reaches the low bits that
    // select the bucket, so tags that differ only in high bits (MPI communicator ids
    // packed above the user tag) still spread.
    [[gnu::always_inline]] static std::uint64_t hash(std::uint32_t src, std::uint64_t tag) noexcept
    {
        std::uint64_t x = tag ^ (static_cast<std::uint64_t>(src) * 0x9e3779b97f4a7c15ULL);
        x ^= x >> 32;
        x *= 0xd6e8feb86659fd93ULL;
        x ^= x >> 32;
        return x;
    }
    [[gnu::always_inline]] bucket &bucket_at(std::uint32_t src, std::uint64_t tag) const noexcept
    {
        return buckets_[hash(src, tag) & mask_];
    }
    [[gnu::always_inline]] static bool is_specific(std::uint32_t src, std::uint64_t ignore) noexcept
    {
        return src != any_source && ignore == 0;
    }

    [[gnu::always_inline]] static void list_init(match_link *head) noexcept
    {
        head->prev = head;
        head->next = head;
    }
    [[gnu::always_inline]] static void list_push_back(match_link *head, match_link *n) noexcept
    {
        n->prev = head->prev;
        n->next = head;
        head->prev->next = n;
        head->prev = n;
    }
    [[gnu::always_inline]] static void list_unlink(match_link *n) noexcept
    {
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = nullptr;
        n->next = nullptr;
    }

    // link is the first member of posted_recv and bucket_link of unexpected_msg
    // (standard layout), so those conversions are plain casts.
    [[gnu::always_inline]] static posted_recv *from_link(match_link *l) noexcept
    {
        return reinterpret_cast<posted_recv *>(l);
    }
    [[gnu::always_inline]] static unexpected_msg *from_bucket_link(match_link *l) noexcept
    {
        return reinterpret_cast<unexpected_msg *>(l);
    }
    [[gnu::always_inline]] static unexpected_msg *from_arrival_link(match_link *l) noexcept
    {
        return reinterpret_cast<unexpected_msg *>(reinterpret_cast<char *>(l) -
                                                  offsetof(unexpected_msg, arrival_link));
    }

    [[gnu::always_inline]] void unlink_posted(posted_recv *r) noexcept
    {
        list_unlink(&r->link);
        if (r->state == posted_state::wildcard) {
            --wildcard_count_;
        }
        r->state = posted_state::idle;
        --posted_count_;
    }

    /// Earliest wildcard receive accepting (src, tag) that is older than `best`
    /// (nullptr: any age); else `best`.
    [[gnu::noinline]] posted_recv *match_wildcard(posted_recv *best, std::uint32_t src,
                                                  std::uint64_t tag) const noexcept;
    /// Earliest unexpected message accepted by a wildcard receive.
    [[gnu::noinline]] unexpected_msg *scan_arrivals(std::uint32_t src, std::uint64_t tag,
                                                    std::uint64_t ignore) const noexcept;
    [[gnu::always_inline]] unexpected_msg *find_in_bucket(std::uint32_t src,
                                                          std::uint64_t tag) const noexcept
    {
        return find_in(bucket_at(src, tag).unexpected, src, tag);
    }
    /// The first message (src, tag) in a bucket's unexpected list.
    [[gnu::always_inline]] static unexpected_msg *find_in(match_link &list, std::uint32_t src,
                                                          std::uint64_t tag) noexcept
    {
        match_link *head = &list;
        for (match_link *l = head->next; l != head; l = l->next) {
            unexpected_msg *m = from_bucket_link(l);
            if (m->src == src && m->tag == tag) {
                return m;
            }
        }
        return nullptr;
    }
    /// Sort a null-terminated singly linked list (through link.next) by seq.
    [[gnu::cold]] static match_link *sort_by_seq(match_link *list) noexcept;

    std::unique_ptr<bucket[]> buckets_;
    std::uint64_t mask_;
    match_link wildcard_;  ///< wildcard receives, posting order
    match_link arrivals_;  ///< unexpected messages, arrival order
    std::size_t posted_count_ = 0;
    std::size_t wildcard_count_ = 0;
    std::size_t unexpected_count_ = 0;
    std::size_t unknown_count_ = 0;  ///< of them from unknown_source
    std::uint64_t post_seq_ = 0;
    std::uint64_t arrival_seq_ = 0;
};

inline unexpected_msg *matcher::post(posted_recv *r, std::uint32_t src, std::uint64_t tag,
                                     std::uint64_t ignore)
{
    assert(src != unknown_source);
    assert(!r->queued());
    const bool specific = is_specific(src, ignore);
    bucket *b = specific ? &bucket_at(src, tag) : nullptr;  // hashed once
    if (unexpected_count_ != 0) {
        unexpected_msg *m =
            specific ? find_in(b->unexpected, src, tag) : scan_arrivals(src, tag, ignore);
        if (m != nullptr) {
            remove_unexpected(m);
            return m;
        }
    }
    r->tag = tag;
    r->ignore = ignore;
    r->src = src;
    r->seq = post_seq_++;
    if (specific) [[likely]] {
        r->state = posted_state::specific;
        list_push_back(&b->posted, &r->link);
    } else {
        r->state = posted_state::wildcard;
        list_push_back(&wildcard_, &r->link);
        ++wildcard_count_;
    }
    ++posted_count_;
    return nullptr;
}

inline posted_recv *matcher::match_posted(std::uint32_t src, std::uint64_t tag)
{
    assert(src != any_source);
    posted_recv *best = nullptr;
    if (posted_count_ != wildcard_count_) {  // some specific receive is queued
        match_link *head = &bucket_at(src, tag).posted;
        for (match_link *l = head->next; l != head; l = l->next) {
            posted_recv *r = from_link(l);
            if (r->src == src && r->tag == tag) {
                best = r;
                break;
            }
        }
    }
    if (wildcard_count_ != 0) [[unlikely]] {
        best = match_wildcard(best, src, tag);
    }
    if (best != nullptr) {
        unlink_posted(best);
    }
    return best;
}

inline void matcher::add_unexpected(unexpected_msg *m, std::uint32_t src, std::uint64_t tag)
{
    assert(src != any_source);
    assert(!m->queued());
    m->tag = tag;
    m->src = src;
    m->seq = arrival_seq_++;
    list_push_back(&bucket_at(src, tag).unexpected, &m->bucket_link);
    list_push_back(&arrivals_, &m->arrival_link);
    ++unexpected_count_;
    if (src == unknown_source) [[unlikely]] {
        ++unknown_count_;
    }
}

inline unexpected_msg *matcher::find_unexpected(std::uint32_t src, std::uint64_t tag,
                                                std::uint64_t ignore) const
{
    if (unexpected_count_ == 0) {
        return nullptr;
    }
    return is_specific(src, ignore) ? find_in_bucket(src, tag) : scan_arrivals(src, tag, ignore);
}

inline void matcher::remove_unexpected(unexpected_msg *m)
{
    assert(m->queued());
    list_unlink(&m->bucket_link);
    list_unlink(&m->arrival_link);
    --unexpected_count_;
    if (m->src == unknown_source) [[unlikely]] {
        --unknown_count_;
    }
}

inline void matcher::rekey_unknown(unexpected_msg *m, std::uint32_t src)
{
    assert(m->queued() && m->src == unknown_source);
    assert(src != any_source && src != unknown_source);
    list_unlink(&m->bucket_link);
    --unknown_count_;
    m->src = src;
    // Messages that arrived after m may already be filed under src (the sender
    // resolved as soon as it was inserted): insert before the first of them, so
    // the bucket stays in arrival order (find_in_bucket takes the first match).
    match_link *head = &bucket_at(src, m->tag).unexpected;
    match_link *at = head->prev;
    while (at != head && from_bucket_link(at)->seq > m->seq) {
        at = at->prev;
    }
    // Insert after `at` (the head when every queued message is younger), i.e.
    // before at->next: list_push_back links a node just before the one it is given.
    list_push_back(at->next, &m->bucket_link);
}

inline bool matcher::remove_posted(posted_recv *r)
{
    if (!r->queued()) {
        return false;
    }
    unlink_posted(r);
    return true;
}

template <class Pred, class Fn>
void matcher::remove_posted_if(Pred &&pred, Fn &&fn)
{
    // Phase 1: unlink every selected receive onto a private list (state `removing`, so
    // a cancel from fn sees "not queued"). Phase 2: sort that list into posting order
    // and hand each receive to fn; the matcher is consistent again, so fn may re-enter.
    match_link *taken = nullptr;
    auto sweep = [&](match_link *head) {
        for (match_link *l = head->next; l != head;) {
            posted_recv *r = from_link(l);
            l = l->next;
            if (pred(r)) {
                unlink_posted(r);
                r->state = posted_state::removing;
                r->link.next = taken;
                taken = &r->link;
            }
        }
    };
    if (posted_count_ != wildcard_count_) {
        for (std::uint64_t i = 0; i <= mask_; ++i) {
            sweep(&buckets_[i].posted);
        }
    }
    if (wildcard_count_ != 0) {
        sweep(&wildcard_);
    }
    for (match_link *l = sort_by_seq(taken); l != nullptr;) {
        posted_recv *r = from_link(l);
        l = l->next;
        r->link.next = nullptr;
        r->state = posted_state::idle;
        fn(r);
    }
}

template <class Fn>
void matcher::for_each_unexpected(Fn &&fn) const
{
    const match_link *head = &arrivals_;
    for (match_link *l = head->next; l != head;) {
        unexpected_msg *m = from_arrival_link(l);
        l = l->next;  // fn may remove m
        fn(m);
    }
}

}  // namespace weft::proto
