// weft::proto::matcher: construction and the out-of-line (wildcard, cold) paths.
// The ordering argument is in match.hpp.

#include "proto/match.hpp"

namespace weft::proto {

matcher::matcher(unsigned hash_bits)
{
    // 2^24 buckets are 512 MiB of heads: far beyond any useful table, so a larger
    // value is a caller bug, not a tuning choice.
    assert(hash_bits <= 24);
    const std::size_t n = std::size_t{1} << hash_bits;
    buckets_ = std::make_unique<bucket[]>(n);
    mask_ = n - 1;
    for (std::size_t i = 0; i < n; ++i) {
        list_init(&buckets_[i].posted);
        list_init(&buckets_[i].unexpected);
    }
    list_init(&wildcard_);
    list_init(&arrivals_);
}

// Queued records belong to the caller; they are simply forgotten.
matcher::~matcher() = default;

posted_recv *matcher::match_wildcard(posted_recv *best, std::uint32_t src,
                                     std::uint64_t tag) const noexcept
{
    const match_link *head = &wildcard_;
    for (match_link *l = head->next; l != head; l = l->next) {
        posted_recv *r = from_link(l);
        // The wildcard list is in posting order: once its entries are younger than the
        // bucket's candidate, none of the rest can be the earliest acceptor.
        if (best != nullptr && r->seq > best->seq) {
            break;
        }
        if (accepts(r->src, r->tag, r->ignore, src, tag)) {
            return r;
        }
    }
    return best;
}

unexpected_msg *matcher::scan_arrivals(std::uint32_t src, std::uint64_t tag,
                                       std::uint64_t ignore) const noexcept
{
    const match_link *head = &arrivals_;
    for (match_link *l = head->next; l != head; l = l->next) {
        unexpected_msg *m = from_arrival_link(l);
        if (accepts(src, tag, ignore, m->src, m->tag)) {
            return m;
        }
    }
    return nullptr;
}

namespace {

match_link *merge_by_seq(match_link *a, match_link *b) noexcept
{
    match_link head{nullptr, nullptr};
    match_link *tail = &head;
    while (a != nullptr && b != nullptr) {
        // link is the first member of posted_recv (see from_link).
        if (reinterpret_cast<posted_recv *>(a)->seq < reinterpret_cast<posted_recv *>(b)->seq) {
            tail->next = a;
            a = a->next;
        } else {
            tail->next = b;
            b = b->next;
        }
        tail = tail->next;
    }
    tail->next = a != nullptr ? a : b;
    return head.next;
}

}  // namespace

// Bottom-up merge sort without allocation: bins[i] holds a sorted run of 2^i nodes.
match_link *matcher::sort_by_seq(match_link *list) noexcept
{
    match_link *bins[64] = {};
    while (list != nullptr) {
        match_link *run = list;
        list = list->next;
        run->next = nullptr;
        unsigned i = 0;
        for (; bins[i] != nullptr; ++i) {
            run = merge_by_seq(bins[i], run);
            bins[i] = nullptr;
        }
        bins[i] = run;
    }
    match_link *sorted = nullptr;
    for (match_link *bin : bins) {
        if (bin != nullptr) {
            sorted = merge_by_seq(bin, sorted);
        }
    }
    return sorted;
}

}  // namespace weft::proto
