// Unit tests of the tag-matching engine (src/proto/match.hpp): MPI ordering semantics,
// wildcards, collisions, cancel, peek/remove, and a randomized differential test
// against a linear reference model.

#include <gtest/gtest.h>

#include <ostream>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "proto/match.hpp"

namespace weft::proto {
namespace {

constexpr std::uint64_t all_bits = ~std::uint64_t{0};

// A small pool of receives and messages whose index is their identity in assertions.
class match_test : public ::testing::TestWithParam<unsigned> {
  protected:
    match_test() : m_(GetParam()) {}

    posted_recv *r(int i) { return &recvs_[i]; }
    unexpected_msg *u(int i) { return &msgs_[i]; }
    int id(const posted_recv *p) const { return p == nullptr ? -1 : int(p - recvs_); }
    int id(const unexpected_msg *p) const { return p == nullptr ? -1 : int(p - msgs_); }

    // Post receive i; expect it to be queued.
    void post_queued(int i, std::uint32_t src, std::uint64_t tag, std::uint64_t ignore = 0)
    {
        ASSERT_EQ(m_.post(r(i), src, tag, ignore), nullptr) << "receive " << i;
        ASSERT_TRUE(r(i)->queued());
    }
    // Message i arrives; expect it to be unexpected, and queue it.
    void arrive_unexpected(int i, std::uint32_t src, std::uint64_t tag)
    {
        ASSERT_EQ(m_.match_posted(src, tag), nullptr) << "message " << i;
        m_.add_unexpected(u(i), src, tag);
    }
    // The receive a message (src, tag) matches, or -1.
    int arrive(std::uint32_t src, std::uint64_t tag) { return id(m_.match_posted(src, tag)); }
    // The message a new receive j matches, or -1 (then j is queued).
    int post(int j, std::uint32_t src, std::uint64_t tag, std::uint64_t ignore = 0)
    {
        return id(m_.post(r(j), src, tag, ignore));
    }
    std::vector<int> unexpected_ids() const
    {
        std::vector<int> ids;
        m_.for_each_unexpected([&](unexpected_msg *x) { ids.push_back(id(x)); });
        return ids;
    }

    matcher m_;
    posted_recv recvs_[32];
    unexpected_msg msgs_[32];
};

INSTANTIATE_TEST_SUITE_P(hash_bits, match_test, ::testing::Values(0u, 1u, 10u),
                         [](const auto &tp) { return "bits" + std::to_string(tp.param); });

TEST_P(match_test, specific_matches_exact_source_and_tag)
{
    post_queued(0, 1, 5);
    EXPECT_EQ(arrive(1, 6), -1);
    EXPECT_EQ(arrive(2, 5), -1);
    EXPECT_EQ(arrive(1, 5 | (std::uint64_t{1} << 63)), -1);  // tags are 64-bit
    EXPECT_EQ(m_.posted_count(), 1u);
    EXPECT_EQ(arrive(1, 5), 0);
    EXPECT_FALSE(r(0)->queued());
    EXPECT_EQ(m_.posted_count(), 0u);
    EXPECT_EQ(arrive(1, 5), -1);
}

TEST_P(match_test, any_source_between_specific_receives)
{
    // The example from the design: specific(1,5), any(5), specific(2,5).
    post_queued(0, 1, 5);
    post_queued(1, any_source, 5);
    post_queued(2, 2, 5);
    EXPECT_EQ(m_.wildcard_count(), 1u);
    EXPECT_EQ(arrive(2, 5), 1);  // the any-source receive was posted before specific(2,5)
    EXPECT_EQ(arrive(1, 5), 0);
    EXPECT_EQ(arrive(2, 5), 2);
    EXPECT_EQ(m_.posted_count(), 0u);
    EXPECT_EQ(m_.wildcard_count(), 0u);
}

TEST_P(match_test, any_source_between_specific_receives_other_arrival_order)
{
    post_queued(0, 1, 5);
    post_queued(1, any_source, 5);
    post_queued(2, 2, 5);
    EXPECT_EQ(arrive(1, 5), 0);  // specific(1,5) is older than the any-source receive
    EXPECT_EQ(arrive(1, 5), 1);
    EXPECT_EQ(arrive(1, 5), -1);
    EXPECT_EQ(arrive(2, 5), 2);
}

TEST_P(match_test, wildcard_posted_first_wins_over_younger_specific)
{
    post_queued(0, any_source, 5);
    post_queued(1, 3, 5);
    post_queued(2, 3, 0, all_bits);  // source 3, any tag
    EXPECT_EQ(arrive(3, 5), 0);
    EXPECT_EQ(arrive(3, 5), 1);
    EXPECT_EQ(arrive(3, 5), 2);
    EXPECT_EQ(arrive(3, 5), -1);
}

TEST_P(match_test, wildcard_scan_skips_non_accepting_entries)
{
    post_queued(0, 2, 5, all_bits);         // source 2 only
    post_queued(1, any_source, 6);          // tag 6 only
    post_queued(2, any_source, 0x10, 0xf);  // tags 0x10..0x1f
    post_queued(3, 1, 0x15);
    post_queued(4, any_source, 0x15);
    EXPECT_EQ(arrive(1, 0x15), 2);
    EXPECT_EQ(arrive(1, 0x15), 3);
    EXPECT_EQ(arrive(1, 0x15), 4);
    EXPECT_EQ(arrive(1, 0x15), -1);
    EXPECT_EQ(arrive(1, 6), 1);
    EXPECT_EQ(arrive(2, 0x99), 0);
}

TEST_P(match_test, tag_mask_interleaving)
{
    post_queued(0, 1, 0x15);
    post_queued(1, 1, 0x10, 0xf);  // 0x10..0x1f from source 1
    post_queued(2, 1, 0x17);
    EXPECT_EQ(arrive(1, 0x27), -1);  // bit 5 is not ignored
    EXPECT_EQ(arrive(1, 0x17), 1);   // the mask receive is older than specific(1,0x17)
    EXPECT_EQ(arrive(1, 0x17), 2);
    EXPECT_EQ(arrive(1, 0x17), -1);
    EXPECT_EQ(arrive(1, 0x15), 0);
}

TEST_P(match_test, mask_on_high_tag_bits)
{
    // MPI-style tag: communicator id in the high bits, user tag in the low bits; an
    // any-tag receive ignores only the low 32 bits.
    const std::uint64_t comm_a = std::uint64_t{7} << 32;
    const std::uint64_t comm_b = std::uint64_t{8} << 32;
    post_queued(0, any_source, comm_a, 0xffffffffu);
    EXPECT_EQ(arrive(0, comm_b | 3), -1);
    EXPECT_EQ(arrive(0, comm_a | 3), 0);
}

TEST_P(match_test, posting_order_for_one_key)
{
    for (int i = 0; i < 5; ++i) {
        post_queued(i, 4, 9);
    }
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(arrive(4, 9), i);
    }
    EXPECT_EQ(arrive(4, 9), -1);
}

TEST_P(match_test, unexpected_from_one_source_match_in_arrival_order)
{
    for (int i = 0; i < 5; ++i) {
        arrive_unexpected(i, 1, 5);
    }
    EXPECT_EQ(post(0, 1, 5), 0);
    EXPECT_EQ(post(1, any_source, 5), 1);
    EXPECT_EQ(post(2, 1, 0, all_bits), 2);
    EXPECT_EQ(post(3, 1, 4, 1), 3);
    EXPECT_EQ(post(4, 1, 5), 4);
    EXPECT_EQ(m_.unexpected_count(), 0u);
    EXPECT_EQ(m_.posted_count(), 0u);
}

TEST_P(match_test, unexpected_ordering_with_wildcard_posts)
{
    arrive_unexpected(0, 2, 7);
    arrive_unexpected(1, 1, 5);
    arrive_unexpected(2, 1, 7);
    arrive_unexpected(3, 2, 5);
    arrive_unexpected(4, 1, 5);
    EXPECT_EQ(unexpected_ids(), (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(post(0, any_source, 5), 1);
    EXPECT_EQ(post(1, 2, 0, all_bits), 0);
    EXPECT_EQ(post(2, 1, 5), 4);  // message 1 is gone, 4 is the oldest (1,5)
    EXPECT_EQ(post(3, any_source, 0, all_bits), 2);
    EXPECT_EQ(post(4, 2, 5), 3);
    EXPECT_EQ(post(5, any_source, 0, all_bits), -1);
    EXPECT_TRUE(r(5)->queued());
    EXPECT_EQ(arrive(3, 1), 5);
}

TEST_P(match_test, specific_post_ignores_other_keys_in_bucket)
{
    arrive_unexpected(0, 1, 6);
    arrive_unexpected(1, 2, 5);
    arrive_unexpected(2, 1, 5);
    EXPECT_EQ(post(0, 1, 5), 2);
    EXPECT_EQ(post(1, 2, 6), -1);
    EXPECT_EQ(unexpected_ids(), (std::vector<int>{0, 1}));
}

TEST(match_collisions, one_bucket_holds_every_key)
{
    matcher m(0);
    ASSERT_EQ(m.bucket_count(), 1u);
    posted_recv r[4];
    ASSERT_EQ(m.post(&r[0], 1, 5, 0), nullptr);
    ASSERT_EQ(m.post(&r[1], 2, 6, 0), nullptr);
    ASSERT_EQ(m.post(&r[2], 1, 6, 0), nullptr);
    ASSERT_EQ(m.post(&r[3], 2, 5, 0), nullptr);
    EXPECT_EQ(m.match_posted(2, 5), &r[3]);
    EXPECT_EQ(m.match_posted(1, 6), &r[2]);
    EXPECT_EQ(m.match_posted(1, 5), &r[0]);
    EXPECT_EQ(m.match_posted(1, 5), nullptr);
    EXPECT_EQ(m.match_posted(2, 6), &r[1]);

    unexpected_msg u[3];
    m.add_unexpected(&u[0], 3, 1);
    m.add_unexpected(&u[1], 1, 3);
    m.add_unexpected(&u[2], 3, 1);
    EXPECT_EQ(m.find_unexpected(1, 3, 0), &u[1]);
    EXPECT_EQ(m.post(&r[0], 3, 1, 0), &u[0]);
    EXPECT_EQ(m.post(&r[0], 3, 1, 0), &u[2]);
    EXPECT_EQ(m.post(&r[0], 1, 3, 0), &u[1]);
}

TEST(match_collisions, colliding_keys_in_a_larger_table)
{
    // Find two distinct keys in the same bucket of a 16-bucket table.
    matcher m(4);
    const std::size_t b = m.bucket_of(1, 100);
    std::uint64_t other = 101;
    while (m.bucket_of(1, other) != b) {
        ++other;
    }
    posted_recv r[2];
    ASSERT_EQ(m.post(&r[0], 1, other, 0), nullptr);
    ASSERT_EQ(m.post(&r[1], 1, 100, 0), nullptr);
    EXPECT_EQ(m.match_posted(1, 100), &r[1]);
    EXPECT_EQ(m.match_posted(1, 100), nullptr);
    EXPECT_EQ(m.match_posted(1, other), &r[0]);
}

TEST(match_hash, keys_spread_over_buckets)
{
    // Sequential tags from a few sources and tags differing only in high bits must not
    // pile into a few buckets (a weak hash would make the expected case linear).
    matcher m(10);
    std::vector<int> load(m.bucket_count(), 0);
    for (std::uint32_t src = 0; src < 4; ++src) {
        for (std::uint64_t t = 0; t < 512; ++t) {
            ++load[m.bucket_of(src, t)];
            ++load[m.bucket_of(src, t << 40)];
        }
    }
    int max_load = 0;
    for (int l : load) {
        max_load = std::max(max_load, l);
    }
    EXPECT_LE(max_load, 16) << "4096 keys over 1024 buckets: mean 4";
}

TEST_P(match_test, cancel_in_the_middle)
{
    post_queued(0, 1, 5);
    post_queued(1, 1, 5);
    post_queued(2, 1, 5);
    post_queued(3, any_source, 5);
    post_queued(4, any_source, 5);
    post_queued(5, any_source, 5);
    EXPECT_TRUE(m_.remove_posted(r(1)));
    EXPECT_FALSE(m_.remove_posted(r(1)));
    EXPECT_TRUE(m_.remove_posted(r(4)));
    EXPECT_EQ(m_.posted_count(), 4u);
    EXPECT_EQ(m_.wildcard_count(), 2u);
    EXPECT_EQ(arrive(1, 5), 0);
    EXPECT_EQ(arrive(1, 5), 2);
    EXPECT_EQ(arrive(1, 5), 3);
    EXPECT_EQ(arrive(1, 5), 5);
    EXPECT_EQ(arrive(1, 5), -1);
    EXPECT_FALSE(m_.remove_posted(r(0)));  // already matched
    EXPECT_FALSE(m_.remove_posted(r(9)));  // never posted
}

TEST_P(match_test, canceled_receive_can_be_posted_again_at_the_end)
{
    post_queued(0, 1, 5);
    post_queued(1, 1, 5);
    ASSERT_TRUE(m_.remove_posted(r(0)));
    post_queued(0, 1, 5);
    EXPECT_EQ(arrive(1, 5), 1);
    EXPECT_EQ(arrive(1, 5), 0);
}

TEST_P(match_test, matched_receive_is_reusable)
{
    for (int round = 0; round < 3; ++round) {
        post_queued(0, 2, 8);
        EXPECT_EQ(arrive(2, 8), 0);
        arrive_unexpected(round, 2, 8);
        EXPECT_EQ(post(0, 2, 8), round);
        EXPECT_FALSE(r(0)->queued());
        EXPECT_FALSE(u(round)->queued());
    }
}

TEST_P(match_test, unknown_source_only_matches_any_source)
{
    post_queued(0, 1, 5);
    post_queued(1, 1, 0, all_bits);
    post_queued(2, 0, 5, 1);
    post_queued(3, any_source, 5);
    EXPECT_EQ(arrive(unknown_source, 5), 3);
    EXPECT_EQ(arrive(unknown_source, 5), -1);
    arrive_unexpected(0, unknown_source, 5);
    EXPECT_EQ(m_.find_unexpected(1, 5, 0), nullptr);
    EXPECT_EQ(m_.find_unexpected(1, 0, all_bits), nullptr);
    EXPECT_EQ(m_.find_unexpected(any_source, 5, 0), u(0));
    EXPECT_EQ(post(4, 2, 5), -1);
    EXPECT_EQ(post(5, any_source, 0, all_bits), 0);
}

// A sender not in the address vector when its messages arrived is inserted
// later: rekey_unknown files its messages under its index, in arrival order
// before the messages that arrived (already under that index) after them.
TEST_P(match_test, rekeyed_unknown_messages_keep_their_arrival_order)
{
    arrive_unexpected(0, unknown_source, 7);
    arrive_unexpected(1, 3, 7);  // another sender: untouched
    arrive_unexpected(2, unknown_source, 7);
    arrive_unexpected(3, unknown_source, 8);
    EXPECT_EQ(m_.unknown_count(), 3u);
    // The sender became index 5; its next message resolved at once.
    arrive_unexpected(4, 5, 7);
    EXPECT_EQ(post(0, 5, 7), 4) << "before rekeying, only the resolved message is seen";
    arrive_unexpected(5, 5, 7);
    // Rekey in arrival order (as the caller walks them): 0 and 2 go before 5.
    m_.for_each_unexpected([&](unexpected_msg *x) {
        if (x->src == unknown_source && id(x) != 3) {
            m_.rekey_unknown(x, 5);
        }
    });
    EXPECT_EQ(m_.unknown_count(), 1u);
    EXPECT_EQ(m_.unexpected_count(), 5u);
    EXPECT_EQ(post(1, 5, 7), 0);
    EXPECT_EQ(post(2, 5, 7), 2);
    EXPECT_EQ(post(3, 5, 7), 5);
    EXPECT_EQ(post(4, 5, 8), -1) << "message 3 is still unknown";
    EXPECT_EQ(post(5, any_source, 8), 3);
    EXPECT_EQ(m_.unknown_count(), 0u);
    EXPECT_EQ(post(6, any_source, 7), 1);
    EXPECT_EQ(m_.unexpected_count(), 0u);
}

// Removing a message that is still unknown, or that was rekeyed, keeps the
// unknown count right.
TEST_P(match_test, unknown_count_follows_removal_and_rekeying)
{
    arrive_unexpected(0, unknown_source, 1);
    arrive_unexpected(1, unknown_source, 1);
    EXPECT_EQ(m_.unknown_count(), 2u);
    m_.rekey_unknown(u(1), 4);
    EXPECT_EQ(m_.unknown_count(), 1u);
    m_.remove_unexpected(u(1));
    EXPECT_EQ(m_.unknown_count(), 1u);
    m_.remove_unexpected(u(0));
    EXPECT_EQ(m_.unknown_count(), 0u);
    EXPECT_EQ(m_.unexpected_count(), 0u);
}

TEST_P(match_test, peek_does_not_remove)
{
    arrive_unexpected(0, 1, 5);
    arrive_unexpected(1, 2, 5);
    arrive_unexpected(2, 1, 5);
    EXPECT_EQ(m_.find_unexpected(1, 5, 0), u(0));
    EXPECT_EQ(m_.find_unexpected(1, 5, 0), u(0));
    EXPECT_EQ(m_.find_unexpected(2, 0, all_bits), u(1));
    EXPECT_EQ(m_.find_unexpected(any_source, 5, 0), u(0));
    EXPECT_EQ(m_.find_unexpected(3, 5, 0), nullptr);
    EXPECT_EQ(m_.find_unexpected(1, 6, 0), nullptr);
    EXPECT_EQ(m_.unexpected_count(), 3u);

    m_.remove_unexpected(u(0));  // mprobe takes it
    EXPECT_FALSE(u(0)->queued());
    EXPECT_EQ(m_.unexpected_count(), 2u);
    EXPECT_EQ(m_.find_unexpected(1, 5, 0), u(2));
    EXPECT_EQ(m_.find_unexpected(any_source, 0, all_bits), u(1));
    EXPECT_EQ(unexpected_ids(), (std::vector<int>{1, 2}));
    EXPECT_EQ(post(0, any_source, 5), 1);
    EXPECT_EQ(post(1, 1, 5), 2);
    EXPECT_EQ(m_.find_unexpected(any_source, 0, all_bits), nullptr);
}

TEST_P(match_test, remove_from_middle_of_arrival_list)
{
    for (int i = 0; i < 4; ++i) {
        arrive_unexpected(i, std::uint32_t(i), 1);
    }
    m_.remove_unexpected(u(1));
    m_.remove_unexpected(u(2));
    EXPECT_EQ(unexpected_ids(), (std::vector<int>{0, 3}));
    EXPECT_EQ(post(0, any_source, 1), 0);
    EXPECT_EQ(post(1, any_source, 1), 3);
    EXPECT_EQ(post(2, 1, 1), -1);
}

TEST_P(match_test, for_each_unexpected_may_remove_the_current_message)
{
    for (int i = 0; i < 6; ++i) {
        arrive_unexpected(i, std::uint32_t(i % 3), std::uint64_t(i));
    }
    EXPECT_EQ(u(4)->seq, u(3)->seq + 1);
    std::vector<int> seen;
    m_.for_each_unexpected([&](unexpected_msg *x) {
        seen.push_back(id(x));
        if (x->src == 1) {
            m_.remove_unexpected(x);
        }
    });
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(unexpected_ids(), (std::vector<int>{0, 2, 3, 5}));
}

TEST_P(match_test, remove_posted_if_fails_receives_of_a_dead_peer)
{
    post_queued(0, 2, 5);
    post_queued(1, 1, 5);
    post_queued(2, any_source, 5);
    post_queued(3, 2, 0, all_bits);
    post_queued(4, 2, 6);
    post_queued(5, 1, 6);
    post_queued(6, 2, 5);
    std::vector<int> failed;
    m_.remove_posted_if([](const posted_recv *x) { return x->src == 2; },
                        [&](posted_recv *x) {
                            EXPECT_FALSE(x->queued());
                            failed.push_back(id(x));
                        });
    EXPECT_EQ(failed, (std::vector<int>{0, 3, 4, 6}));  // posting order
    EXPECT_EQ(m_.posted_count(), 3u);
    EXPECT_EQ(m_.wildcard_count(), 1u);
    EXPECT_EQ(arrive(2, 5), 2);
    EXPECT_EQ(arrive(2, 6), -1);
    EXPECT_EQ(arrive(1, 6), 5);
    EXPECT_EQ(arrive(1, 5), 1);
    EXPECT_EQ(m_.posted_count(), 0u);
}

TEST_P(match_test, remove_posted_if_callback_may_reenter)
{
    post_queued(0, 3, 1);
    post_queued(1, 3, 2);
    post_queued(2, 4, 1);
    std::vector<int> failed;
    m_.remove_posted_if([](const posted_recv *x) { return x->src == 3; },
                        [&](posted_recv *x) {
                            failed.push_back(id(x));
                            // Canceling a receive already taken says "not queued".
                            EXPECT_FALSE(m_.remove_posted(r(1)));
                            if (id(x) == 0) {
                                EXPECT_EQ(m_.post(r(10), 3, 1, 0), nullptr);
                            }
                        });
    EXPECT_EQ(failed, (std::vector<int>{0, 1}));
    EXPECT_EQ(arrive(3, 1), 10);
    EXPECT_EQ(arrive(4, 1), 2);
}

TEST_P(match_test, remove_posted_if_with_nothing_selected)
{
    post_queued(0, 1, 1);
    int calls = 0;
    m_.remove_posted_if([](const posted_recv *) { return false; }, [&](posted_recv *) { ++calls; });
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(m_.posted_count(), 1u);
    EXPECT_EQ(arrive(1, 1), 0);
}

TEST_P(match_test, sequence_numbers_increase)
{
    post_queued(0, 1, 1);
    post_queued(1, any_source, 1);
    post_queued(2, 2, 1);
    EXPECT_LT(r(0)->seq, r(1)->seq);
    EXPECT_LT(r(1)->seq, r(2)->seq);
}

// ------------------------------------------------------------ differential test

// The trivially correct model: two vectors scanned linearly from the front.
struct reference_model {
    struct recv {
        int id;
        std::uint32_t src;
        std::uint64_t tag;
        std::uint64_t ignore;
    };
    struct msg {
        int id;
        std::uint32_t src;
        std::uint64_t tag;
    };
    std::vector<recv> posted;
    std::vector<msg> unexpected;

    int post(int id, std::uint32_t src, std::uint64_t tag, std::uint64_t ignore)
    {
        for (auto it = unexpected.begin(); it != unexpected.end(); ++it) {
            if (matcher::accepts(src, tag, ignore, it->src, it->tag)) {
                const int m = it->id;
                unexpected.erase(it);
                return m;
            }
        }
        posted.push_back({id, src, tag, ignore});
        return -1;
    }
    int arrive(std::uint32_t src, std::uint64_t tag)
    {
        for (auto it = posted.begin(); it != posted.end(); ++it) {
            if (matcher::accepts(it->src, it->tag, it->ignore, src, tag)) {
                const int r = it->id;
                posted.erase(it);
                return r;
            }
        }
        return -1;
    }
    int find(std::uint32_t src, std::uint64_t tag, std::uint64_t ignore) const
    {
        for (const msg &m : unexpected) {
            if (matcher::accepts(src, tag, ignore, m.src, m.tag)) {
                return m.id;
            }
        }
        return -1;
    }
    bool cancel(int id)
    {
        for (auto it = posted.begin(); it != posted.end(); ++it) {
            if (it->id == id) {
                posted.erase(it);
                return true;
            }
        }
        return false;
    }
};

struct differential_param {
    unsigned hash_bits;
    std::uint64_t seed;
};
// Printed by field (gtest's fallback dumps the bytes, padding included, which
// valgrind reports as uninitialised).
[[maybe_unused]] void PrintTo(const differential_param &p, std::ostream *os)
{
    *os << "{hash_bits " << p.hash_bits << ", seed " << p.seed << "}";
}

class match_differential : public ::testing::TestWithParam<differential_param> {};

INSTANTIATE_TEST_SUITE_P(seeds, match_differential,
                         ::testing::Values(differential_param{0, 1}, differential_param{1, 2},
                                           differential_param{3, 3}, differential_param{10, 4},
                                           differential_param{10, 5}, differential_param{2, 6}),
                         [](const auto &tp) {
                             return "bits" + std::to_string(tp.param.hash_bits) + "_seed" +
                                    std::to_string(tp.param.seed);
                         });

TEST_P(match_differential, random_operations_agree_with_reference)
{
    constexpr int nrecv = 512;
    constexpr int nmsg = 512;
    constexpr int nops = 20000;
    // WEFT_TEST_SEED overrides the built-in seed, to reproduce or explore.
    std::uint64_t seed = GetParam().seed;
    if (const char *env = std::getenv("WEFT_TEST_SEED")) {
        seed = seed * 1000003 + std::strtoull(env, nullptr, 0);
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + ", hash_bits " +
                 std::to_string(GetParam().hash_bits));
    std::mt19937_64 rng(seed);  // operator() is specified exactly: reproducible everywhere
    auto pick = [&](std::uint64_t n) { return rng() % n; };

    matcher m(GetParam().hash_bits);
    reference_model ref;
    std::vector<posted_recv> recvs(nrecv);
    std::vector<unexpected_msg> msgs(nmsg);
    std::vector<int> free_recvs;
    std::vector<int> free_msgs;
    for (int i = nrecv - 1; i >= 0; --i) {
        free_recvs.push_back(i);
    }
    for (int i = nmsg - 1; i >= 0; --i) {
        free_msgs.push_back(i);
    }
    auto rid = [&](const posted_recv *p) { return p == nullptr ? -1 : int(p - recvs.data()); };
    auto mid = [&](const unexpected_msg *p) { return p == nullptr ? -1 : int(p - msgs.data()); };

    const std::uint64_t tags[] = {0,
                                  1,
                                  2,
                                  3,
                                  0x10,
                                  0x11,
                                  std::uint64_t{1} << 40,
                                  (std::uint64_t{1} << 40) | 1,
                                  std::uint64_t{1} << 63};
    const std::uint64_t masks[] = {
        all_bits, 0x1, 0x3, 0x10, std::uint64_t{1} << 40, ~(std::uint64_t{1} << 63)};
    auto any_tag = [&] { return tags[pick(std::size(tags))]; };
    auto recv_src = [&]() -> std::uint32_t {
        const auto s = pick(5);
        return s == 4 ? any_source : std::uint32_t(s);
    };
    auto msg_src = [&]() -> std::uint32_t {
        const auto s = pick(20);
        return s == 19 ? unknown_source : std::uint32_t(s % 4);
    };
    // Half of the receives are fully specific, the rest wildcards of every kind.
    auto recv_ignore = [&]() -> std::uint64_t {
        return pick(2) == 0 ? 0 : masks[pick(std::size(masks))];
    };

    auto check_state = [&](int op) {
        ASSERT_EQ(m.posted_count(), ref.posted.size()) << "op " << op;
        ASSERT_EQ(m.unexpected_count(), ref.unexpected.size()) << "op " << op;
        std::vector<int> got;
        m.for_each_unexpected([&](unexpected_msg *x) { got.push_back(mid(x)); });
        std::vector<int> want;
        for (const auto &x : ref.unexpected) {
            want.push_back(x.id);
        }
        ASSERT_EQ(got, want) << "op " << op;
    };

    const std::uint64_t phase_weights[] = {35, 50, 25, 50};
    int matched_on_post = 0;
    int matched_on_arrival = 0;
    std::size_t max_posted = 0;
    std::size_t max_unexpected = 0;
    for (int op = 0; op < nops; ++op) {
        // Phases that favour posting or arriving let both queues grow and shrink.
        const std::uint64_t post_weight = phase_weights[(op / 2000) % std::size(phase_weights)];
        const auto kind = pick(100);
        if (kind < post_weight) {
            if (free_recvs.empty()) {
                continue;
            }
            const int i = free_recvs.back();
            const std::uint32_t src = recv_src();
            const std::uint64_t tag = any_tag();
            const std::uint64_t ignore = src == any_source && pick(3) == 0 ? 0 : recv_ignore();
            const int want = ref.post(i, src, tag, ignore);
            const int got = mid(m.post(&recvs[i], src, tag, ignore));
            ASSERT_EQ(got, want) << "op " << op << ": post src " << src << " tag " << tag
                                 << " ignore " << ignore;
            if (got >= 0) {
                free_msgs.push_back(got);
                ++matched_on_post;
            } else {
                free_recvs.pop_back();
            }
        } else if (kind < 70) {
            if (free_msgs.empty()) {
                continue;
            }
            const std::uint32_t src = msg_src();
            const std::uint64_t tag = any_tag();
            const int want = ref.arrive(src, tag);
            const int got = rid(m.match_posted(src, tag));
            ASSERT_EQ(got, want) << "op " << op << ": arrival src " << src << " tag " << tag;
            if (got >= 0) {
                free_recvs.push_back(got);
                ++matched_on_arrival;
            } else {
                const int j = free_msgs.back();
                free_msgs.pop_back();
                m.add_unexpected(&msgs[j], src, tag);
                ref.unexpected.push_back({j, src, tag});
            }
        } else if (kind < 82) {
            const int i = int(pick(nrecv));  // queued or not
            const bool want = ref.cancel(i);
            ASSERT_EQ(m.remove_posted(&recvs[i]), want) << "op " << op << ": cancel " << i;
            if (want) {
                free_recvs.push_back(i);
            }
        } else if (kind < 98) {
            const std::uint32_t src = recv_src();
            const std::uint64_t tag = any_tag();
            const std::uint64_t ignore = recv_ignore();
            const int want = ref.find(src, tag, ignore);
            unexpected_msg *x = m.find_unexpected(src, tag, ignore);
            ASSERT_EQ(mid(x), want)
                << "op " << op << ": peek src " << src << " tag " << tag << " ignore " << ignore;
            if (x != nullptr && pick(2) == 0) {
                m.remove_unexpected(x);
                std::erase_if(ref.unexpected, [&](const auto &e) { return e.id == want; });
                free_msgs.push_back(want);
            }
        } else {
            const std::uint32_t dead = recv_src();
            std::vector<int> want;
            std::erase_if(ref.posted, [&](const auto &e) {
                if (e.src == dead) {
                    want.push_back(e.id);
                    return true;
                }
                return false;
            });
            std::vector<int> got;
            m.remove_posted_if([&](const posted_recv *x) { return x->src == dead; },
                               [&](posted_recv *x) { got.push_back(rid(x)); });
            ASSERT_EQ(got, want) << "op " << op << ": remove_posted_if src " << dead;
            free_recvs.insert(free_recvs.end(), got.begin(), got.end());
        }
        max_posted = std::max(max_posted, ref.posted.size());
        max_unexpected = std::max(max_unexpected, ref.unexpected.size());
        if (op % 256 == 0) {
            check_state(op);
        }
    }
    check_state(nops);

    // Drain: every queued receive comes out in posting order.
    std::vector<int> want;
    for (const auto &x : ref.posted) {
        want.push_back(x.id);
    }
    std::vector<int> got;
    m.remove_posted_if([](const posted_recv *) { return true; },
                       [&](posted_recv *x) { got.push_back(rid(x)); });
    EXPECT_EQ(got, want);
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.wildcard_count(), 0u);
    // The run must have exercised both match directions and long queues (long bucket
    // chains, deep wildcard scans), not just queued everything or kept queues short.
    EXPECT_GT(matched_on_post, nops / 20);
    EXPECT_GT(matched_on_arrival, nops / 20);
    EXPECT_GT(max_posted, 100u);
    EXPECT_GT(max_unexpected, 100u);
}

}  // namespace
}  // namespace weft::proto
