// How a rendezvous receiver chooses between reading the data (get) and having
// the sender push it in pieces: rndv_get_min from a transport's cost models
// (src/proto/rndv.hpp, docs/protocols.md "Choosing how a rendezvous moves its data").

#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>

#include "proto/rndv.hpp"

namespace {

using weft::proto::rndv_get_min;
using weft::transport::attributes;
using weft::transport::cost_model;

attributes models(cost_model push, cost_model get)
{
    attributes a;
    a.cost = push;
    a.get_cost = get;
    return a;
}

// The same estimate, written out independently: the push pays its overhead
// per piece, its latency once, and (busy) half its bandwidth.
bool get_wins(const attributes &a, std::size_t piece, bool busy, std::size_t len)
{
    const double pieces = static_cast<double>((len + piece - 1) / piece);
    const double bw = busy ? a.cost.bandwidth_mbps / 2 : a.cost.bandwidth_mbps;
    const double push =
        a.cost.latency_ns + pieces * a.cost.overhead_ns + static_cast<double>(len) * 1000.0 / bw;
    const double get = a.get_cost.overhead_ns + a.get_cost.latency_ns +
                       static_cast<double>(len) * 1000.0 / a.get_cost.bandwidth_mbps;
    return get <= push;
}

TEST(rndv_choice, an_unmodelled_get_is_always_taken)
{
    const attributes a = models({40, 150, 10000}, {});
    EXPECT_EQ(rndv_get_min(a, 8192, false), 0U);
    EXPECT_EQ(rndv_get_min(a, 8192, true), 0U);
}

TEST(rndv_choice, a_get_as_fast_as_the_push_wins_from_the_first_piece)
{
    // An RDMA read against bounce-buffer pieces at the link's bandwidth.
    const attributes a = models({100, 1500, 10000}, {100, 1500, 10000});
    EXPECT_LE(rndv_get_min(a, 8192, false), 1U);
    EXPECT_LE(rndv_get_min(a, 8192, true), 1U);
}

TEST(rndv_choice, a_get_slower_per_byte_never_wins_against_a_free_sender)
{
    // Two copies in a pipeline on two CPUs against one slower single copy.
    const attributes a = models({40, 150, 10000}, {1500, 150, 8000});
    EXPECT_EQ(rndv_get_min(a, 8176, false), SIZE_MAX);
    // With the sender's CPU shared, its pipeline runs at half speed: the get
    // wins from the size where the two estimates cross.
    const std::size_t busy = rndv_get_min(a, 8176, true);
    ASSERT_NE(busy, SIZE_MAX);
    EXPECT_TRUE(get_wins(a, 8176, true, busy));
    EXPECT_FALSE(get_wins(a, 8176, true, busy - 1));
    EXPECT_GT(busy, 10000U);
    EXPECT_LT(busy, 40000U);
}

TEST(rndv_choice, the_threshold_is_the_first_size_where_the_get_wins)
{
    // A get with a large fixed cost and a higher bandwidth: a real crossover.
    for (const double overhead : {500.0, 5000.0, 50000.0}) {
        const attributes a = models({40, 150, 5000}, {overhead, 150, 20000});
        for (const bool busy : {false, true}) {
            const std::size_t m = rndv_get_min(a, 8176, busy);
            ASSERT_NE(m, SIZE_MAX) << overhead;
            ASSERT_GT(m, 0U);
            EXPECT_TRUE(get_wins(a, 8176, busy, m)) << overhead << " " << busy;
            EXPECT_FALSE(get_wins(a, 8176, busy, m - 1)) << overhead << " " << busy;
            EXPECT_TRUE(get_wins(a, 8176, busy, m * 4)) << "and it keeps winning";
        }
        EXPECT_LE(rndv_get_min(a, 8176, true), rndv_get_min(a, 8176, false))
            << "a busy sender makes the get win sooner";
    }
}

TEST(rndv_choice, a_get_cheap_once_but_dear_per_byte_is_never_chosen_from_a_size)
{
    // It would win small messages and lose large ones: "from a size" cannot
    // express that, and the push is the safe side for large messages.
    const attributes a = models({40, 5000, 10000}, {10, 150, 5000});
    EXPECT_TRUE(get_wins(a, 8176, false, 16384));
    EXPECT_FALSE(get_wins(a, 8176, false, std::size_t{1} << 30));
    EXPECT_EQ(rndv_get_min(a, 8176, false), SIZE_MAX);
}

TEST(rndv_choice, the_senders_activity_moves_the_choice_below_the_threshold)
{
    using weft::proto::rndv_choice;
    using weft::proto::rndv_read_pays;
    using weft::transport::peer_activity;
    const rndv_choice c{.get_min = 1 << 20, .get_min_busy = 1 << 16, .automatic = true};
    for (const auto a : {peer_activity::unknown, peer_activity::running, peer_activity::busy,
                         peer_activity::idle}) {
        EXPECT_TRUE(rndv_read_pays(c, a, 1 << 20)) << "from get_min: always a get";
    }
    EXPECT_FALSE(rndv_read_pays(c, peer_activity::unknown, (1 << 20) - 1));
    EXPECT_FALSE(rndv_read_pays(c, peer_activity::running, (1 << 20) - 1));
    EXPECT_TRUE(rndv_read_pays(c, peer_activity::busy, 1 << 16));
    EXPECT_FALSE(rndv_read_pays(c, peer_activity::busy, (1 << 16) - 1));
    EXPECT_TRUE(rndv_read_pays(c, peer_activity::idle, 1)) << "never wait for an idle sender";
    // WEFT_RNDV_GET_MIN set: one threshold, and still no waiting for an idle sender.
    const rndv_choice fixed{.get_min = SIZE_MAX, .get_min_busy = SIZE_MAX, .automatic = false};
    EXPECT_FALSE(rndv_read_pays(fixed, peer_activity::busy, std::size_t{1} << 30));
    EXPECT_TRUE(rndv_read_pays(fixed, peer_activity::idle, std::size_t{1} << 30));
}

}  // namespace
