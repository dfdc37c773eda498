// Unit tests of the credit flow-control state machine (src/proto/credits.hpp):
// every transition, the last-credit rule, the threshold, overrun detection, the
// shared pool (never over-grants, does not starve), and randomized simulations of
// endpoints exchanging messages through FIFO queues, asserting no overrun, exact
// credit conservation, no deadlock and no update storm over many seeds.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "proto/credits.hpp"

namespace weft::proto {
namespace {

using base::status;

credit_config per_peer(std::uint16_t window, std::uint16_t threshold, std::uint16_t initial = 0)
{
    credit_config c;
    c.mode = credit_mode::per_peer;
    c.window = window;
    c.initial = initial != 0 ? initial : window;
    c.threshold = threshold;
    return c;
}

credit_config shared(std::uint32_t pool, std::uint16_t initial, std::uint16_t cap,
                     std::uint16_t threshold, std::uint16_t step = 0)
{
    credit_config c;
    c.mode = credit_mode::shared_pool;
    c.pool_size = pool;
    c.initial = initial;
    c.window = cap;
    c.threshold = threshold;
    c.grant_step = step;
    return c;
}

void init_pool(credit_pool &p, const credit_config &c)
{
    const char *why = nullptr;
    ASSERT_EQ(p.init(c, &why), status::ok) << (why != nullptr ? why : "");
}

// recv_credits + held + returnable == window, the invariant of credits.hpp.
::testing::AssertionResult conserved(const credit_state &s)
{
    if (s.recv_credits() + s.held() + s.returnable() == s.window()) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "recv " << s.recv_credits() << " + held " << s.held() << " + returnable "
           << s.returnable() << " != window " << s.window();
}

// ------------------------------------------------------------------ cost

TEST(credit_cost, size_and_unit)
{
    EXPECT_EQ(credit_cost(0, 100), 1u);  // an empty message still occupies a buffer
    EXPECT_EQ(credit_cost(1, 100), 1u);
    EXPECT_EQ(credit_cost(100, 100), 1u);
    EXPECT_EQ(credit_cost(101, 100), 2u);
    EXPECT_EQ(credit_cost(200, 100), 2u);
    EXPECT_EQ(credit_cost(201, 100), 3u);
    EXPECT_EQ(credit_cost(SIZE_MAX, 1), SIZE_MAX);  // no overflow in the rounding
    EXPECT_EQ(credit_cost(SIZE_MAX, 2), SIZE_MAX / 2 + 1);
    EXPECT_EQ(credit_cost(10, 0), 0u);  // invalid unit
    static_assert(credit_cost(4096, 1024) == 4);
}

TEST(credit_cost, first_fragment_unit)
{
    // First fragment carries 96 bytes, the others 112 (different header sizes).
    EXPECT_EQ(credit_cost(0, 96, 112), 1u);
    EXPECT_EQ(credit_cost(96, 96, 112), 1u);
    EXPECT_EQ(credit_cost(97, 96, 112), 2u);
    EXPECT_EQ(credit_cost(96 + 112, 96, 112), 2u);
    EXPECT_EQ(credit_cost(96 + 113, 96, 112), 3u);
    EXPECT_EQ(credit_cost(10, 0, 112), 0u);
    EXPECT_EQ(credit_cost(10, 96, 0), 0u);
}

TEST(credit_cost, iovec_counts_total_length)
{
    char a[50], b[50], c[30];
    const iovec iov[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {c, sizeof(c)}};
    EXPECT_EQ(credit_cost(iov, 0, 64, 64), 1u);
    EXPECT_EQ(credit_cost(iov, 1, 64, 64), 1u);
    EXPECT_EQ(credit_cost(iov, 2, 64, 64), 2u);  // 100 bytes
    EXPECT_EQ(credit_cost(iov, 3, 64, 64), 3u);  // 130 bytes
    EXPECT_EQ(credit_cost(iov, 3, 130, 64), 1u);
}

// ------------------------------------------------------------------ configuration

TEST(credit_config, automatic_values)
{
    credit_config c = per_peer(16, 0);
    const char *why = nullptr;
    ASSERT_EQ(credit_config_resolve(c, &why), status::ok);
    EXPECT_EQ(c.threshold, 8);  // half the window
    c = per_peer(3, 0);
    ASSERT_EQ(credit_config_resolve(c, &why), status::ok);
    EXPECT_EQ(c.threshold, 2);  // clamped up to the minimum
    c = shared(64, 4, 32, 0);
    ASSERT_EQ(credit_config_resolve(c, &why), status::ok);
    EXPECT_EQ(c.threshold, 3);  // clamped down to initial - 1
    EXPECT_EQ(c.grant_step, 3);
    c.mode = credit_mode::unconfigured;  // credits are always on: no mode is no configuration
    EXPECT_EQ(credit_config_resolve(c, &why), status::invalid);
}

TEST(credit_config, rejects_what_would_deadlock_or_storm)
{
    struct bad_case {
        credit_config c;
        const char *what;
    };
    const bad_case cases[] = {
        {per_peer(2, 0), "window 2"},
        {per_peer(8, 2, 2), "initial 2"},
        {per_peer(4, 2, 5), "window < initial"},
        {per_peer(8, 1), "threshold 1"},
        {per_peer(8, 8), "threshold = window"},
        {shared(64, 4, 32, 4), "shared: threshold = initial"},
        {shared(3, 4, 32, 2), "shared: pool < initial"},
        {per_peer(600, 300), "threshold above what a header carries"},
    };
    for (const bad_case &b : cases) {
        credit_config c = b.c;
        const char *why = nullptr;
        EXPECT_EQ(credit_config_resolve(c, &why), status::invalid) << b.what;
        EXPECT_NE(why, nullptr) << b.what;
        credit_pool p;
        EXPECT_EQ(p.init(b.c, nullptr), status::invalid) << b.what;
    }
    credit_config c = per_peer(4, 2);
    c.mode = static_cast<credit_mode>(7);
    EXPECT_EQ(credit_config_resolve(c, nullptr), status::invalid);
}

TEST(credit_pool, reinit_while_attached_is_refused)
{
    credit_pool p;
    init_pool(p, per_peer(4, 2));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    EXPECT_EQ(p.init(per_peer(8, 4), nullptr), status::busy);
    s.detach(p);
    EXPECT_EQ(p.init(per_peer(8, 4), nullptr), status::ok);
    EXPECT_EQ(p.window(), 8);
}

// ------------------------------------------------------------------ attach / detach

TEST(credit_state, size_contract)
{
    static_assert(sizeof(credit_state) <= 64);
    EXPECT_LE(sizeof(credit_state), 16u);
}

TEST(credit_state, attach_per_peer)
{
    credit_pool p;
    init_pool(p, per_peer(10, 4, 3));
    credit_state s;
    EXPECT_FALSE(s.attached());
    EXPECT_FALSE(s.needs_explicit_update());
    ASSERT_EQ(s.attach(p), status::ok);
    EXPECT_TRUE(s.attached());
    EXPECT_EQ(s.send_credits(), 3u);  // the peer's initial grant
    EXPECT_EQ(s.recv_credits(), 3u);  // ours to the peer
    EXPECT_EQ(s.held(), 0u);
    EXPECT_EQ(s.returnable(), 7u);  // the rest of the window, granted with the first returns
    EXPECT_EQ(s.window(), 10u);
    EXPECT_EQ(s.threshold(), 4u);
    EXPECT_TRUE(conserved(s));
    EXPECT_TRUE(s.needs_explicit_update());  // 7 >= 4 waiting: grant them
    EXPECT_EQ(p.peers(), 1u);
    EXPECT_EQ(s.attach(p), status::busy);
    s.detach(p);
    EXPECT_FALSE(s.attached());
    EXPECT_EQ(p.peers(), 0u);
    s.detach(p);  // harmless when not attached
    EXPECT_EQ(p.peers(), 0u);
}

TEST(credit_state, attach_needs_a_mode)
{
    credit_pool off;
    credit_state s;
    EXPECT_EQ(s.attach(off), status::invalid);
    credit_config c = per_peer(4, 2);
    c.mode = credit_mode::unconfigured;
    const char *why = nullptr;
    EXPECT_EQ(off.init(c, &why), status::invalid) << "no mode is not a configuration";
    EXPECT_EQ(s.attach(off), status::invalid);
    EXPECT_FALSE(s.attached());
}

TEST(credit_state, attach_shared_reserves_the_initial_grant)
{
    credit_pool p;
    init_pool(p, shared(10, 4, 8, 2));
    credit_state a, b, c;
    ASSERT_EQ(a.attach(p), status::ok);
    EXPECT_EQ(p.free(), 6u);
    EXPECT_EQ(a.window(), 4u);
    EXPECT_EQ(a.returnable(), 0u);
    ASSERT_EQ(b.attach(p), status::ok);
    EXPECT_EQ(p.free(), 2u);
    EXPECT_EQ(c.attach(p), status::no_memory);  // it would overrun the pool
    EXPECT_FALSE(c.attached());
    EXPECT_EQ(p.free(), 2u);
    a.detach(p);
    EXPECT_EQ(p.free(), 6u);
    EXPECT_EQ(c.attach(p), status::ok);
    EXPECT_EQ(p.peers(), 2u);
}

// ------------------------------------------------------------------ send side

class attached_state : public ::testing::Test {
  protected:
    void SetUp() override
    {
        init_pool(pool_, per_peer(4, 2));
        ASSERT_EQ(s_.attach(pool_), status::ok);
    }
    credit_pool pool_;
    credit_state s_;
};

TEST_F(attached_state, consume_while_more_than_cost_is_left)
{
    EXPECT_EQ(s_.try_consume(1), credit_verdict::ok);
    EXPECT_EQ(s_.send_credits(), 3u);
    EXPECT_EQ(s_.try_consume(2), credit_verdict::ok);
    EXPECT_EQ(s_.send_credits(), 1u);
}

TEST_F(attached_state, last_credit_rule)
{
    ASSERT_EQ(s_.try_consume(3), credit_verdict::ok);
    ASSERT_EQ(s_.send_credits(), 1u);
    ASSERT_EQ(s_.returnable(), 0u);
    // Nothing to return: the last credit is kept for an explicit update.
    EXPECT_EQ(s_.try_consume(1), credit_verdict::blocked);
    EXPECT_EQ(s_.send_credits(), 1u);
    // A message arrives and is released: now the last credit may go, carrying it.
    ASSERT_EQ(s_.on_message_received(1, pool_), status::ok);
    s_.on_released(1, pool_);
    EXPECT_EQ(s_.try_consume(1), credit_verdict::ok_must_carry);
    EXPECT_EQ(s_.send_credits(), 0u);
    EXPECT_EQ(s_.take_returnable(), 1u);
    EXPECT_EQ(s_.try_consume(1), credit_verdict::blocked);
    EXPECT_TRUE(conserved(s_));
}

TEST_F(attached_state, sendable_counts_what_goes_in_a_row)
{
    // Drive the state and compare sendable() with what try_consume lets through.
    for (int returned = 0; returned < 3; ++returned) {
        for (int spent = 0; spent <= 4; ++spent) {
            credit_pool p;
            init_pool(p, per_peer(4, 2));
            credit_state s;
            ASSERT_EQ(s.attach(p), status::ok);
            for (int i = 0; i < spent && s.try_consume(1) != credit_verdict::blocked; ++i) {
                (void)s.take_returnable();
            }
            ASSERT_EQ(s.on_message_received(returned, p), status::ok);
            s.on_released(returned, p);
            const std::uint32_t predicted = s.sendable();
            std::uint32_t went = 0;
            while (s.try_consume(1) != credit_verdict::blocked) {
                (void)s.take_returnable();
                ++went;
            }
            EXPECT_EQ(predicted, went) << "spent " << spent << " returned " << returned;
        }
    }
}

TEST_F(attached_state, last_credits_of_a_multi_credit_message)
{
    ASSERT_EQ(s_.try_consume(1), credit_verdict::ok);  // 3 left
    EXPECT_EQ(s_.try_consume(3), credit_verdict::blocked);
    EXPECT_EQ(s_.try_consume(4), credit_verdict::blocked);
    EXPECT_EQ(s_.send_credits(), 3u);
    ASSERT_EQ(s_.on_message_received(1, pool_), status::ok);
    s_.on_released(1, pool_);
    EXPECT_EQ(s_.try_consume(4), credit_verdict::blocked);  // more than we have
    EXPECT_EQ(s_.try_consume(3), credit_verdict::ok_must_carry);
    EXPECT_EQ(s_.send_credits(), 0u);
}

TEST_F(attached_state, refund_and_restore_undo_a_refused_send)
{
    ASSERT_EQ(s_.on_message_received(2, pool_), status::ok);
    s_.on_released(2, pool_);
    ASSERT_EQ(s_.try_consume(1), credit_verdict::ok);
    const std::uint32_t n = s_.take_returnable();
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(s_.recv_credits(), 4u);
    // The transport said again: nothing went out.
    s_.refund(1);
    s_.restore_returnable(n);
    EXPECT_EQ(s_.send_credits(), 4u);
    EXPECT_EQ(s_.returnable(), 2u);
    EXPECT_EQ(s_.recv_credits(), 2u);
    EXPECT_TRUE(conserved(s_));
}

TEST_F(attached_state, take_returnable_moves_credits_to_the_peer)
{
    EXPECT_EQ(s_.take_returnable(), 0u);
    ASSERT_EQ(s_.on_message_received(3, pool_), status::ok);
    EXPECT_EQ(s_.recv_credits(), 1u);
    EXPECT_EQ(s_.held(), 3u);
    s_.on_released(2, pool_);
    EXPECT_EQ(s_.held(), 1u);
    EXPECT_EQ(s_.returnable(), 2u);
    EXPECT_TRUE(conserved(s_));
    EXPECT_EQ(s_.take_returnable(), 2u);
    EXPECT_EQ(s_.returnable(), 0u);
    EXPECT_EQ(s_.recv_credits(), 3u);
    EXPECT_TRUE(conserved(s_));
}

TEST(credit_state, take_returnable_is_capped_by_the_header_field)
{
    credit_pool p;
    init_pool(p, per_peer(600, 200, 4));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    ASSERT_EQ(s.returnable(), 596u);
    EXPECT_EQ(s.take_returnable(), credit_field_max);
    EXPECT_EQ(s.take_returnable(), credit_field_max);
    EXPECT_EQ(s.take_returnable(), 596u - 2 * credit_field_max);
    EXPECT_EQ(s.take_returnable(), 0u);
    EXPECT_TRUE(conserved(s));
}

TEST_F(attached_state, credits_returned)
{
    EXPECT_EQ(s_.on_credits_returned(0), status::ok);
    EXPECT_EQ(s_.on_credits_returned(5), status::ok);
    EXPECT_EQ(s_.send_credits(), 9u);
    // From the wire: more than a header field holds, or past any window.
    EXPECT_EQ(s_.on_credits_returned(credit_field_max + 1), status::bad_message);
    EXPECT_EQ(s_.send_credits(), 9u);
    for (int i = 0; i < 256; ++i) {
        ASSERT_EQ(s_.on_credits_returned(credit_field_max), status::ok) << i;
    }
    EXPECT_EQ(s_.send_credits(), 9u + 256u * credit_field_max);
    EXPECT_EQ(s_.on_credits_returned(credit_field_max), status::bad_message);
}

// ------------------------------------------------------------------ receive side

TEST_F(attached_state, receive_and_overrun)
{
    ASSERT_EQ(s_.on_message_received(1, pool_), status::ok);
    ASSERT_EQ(s_.on_message_received(2, pool_), status::ok);
    EXPECT_EQ(s_.recv_credits(), 1u);
    EXPECT_EQ(s_.held(), 3u);
    // A cost-2 message with one credit granted: overrun, nothing changes.
    EXPECT_EQ(s_.on_message_received(2, pool_), status::overrun);
    EXPECT_EQ(s_.recv_credits(), 1u);
    EXPECT_EQ(s_.held(), 3u);
    ASSERT_EQ(s_.on_message_received(1, pool_), status::ok);
    EXPECT_EQ(s_.on_message_received(1, pool_), status::overrun);
    EXPECT_TRUE(conserved(s_));
    // Released credits are not receive credits until they are returned.
    s_.on_released(4, pool_);
    EXPECT_EQ(s_.on_message_received(1, pool_), status::overrun);
    EXPECT_EQ(s_.take_returnable(), 4u);
    EXPECT_EQ(s_.on_message_received(1, pool_), status::ok);
}

TEST(credit_state, receive_before_attach_is_an_overrun)
{
    credit_pool p;
    init_pool(p, per_peer(4, 2));
    credit_state s;
    EXPECT_EQ(s.on_message_received(1, p), status::overrun);
}

// ------------------------------------------------------------------ explicit updates

TEST(credit_state, threshold)
{
    credit_pool p;
    init_pool(p, per_peer(6, 3));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    ASSERT_EQ(s.on_message_received(5, p), status::ok);
    s.on_released(1, p);
    EXPECT_FALSE(s.needs_explicit_update());
    s.on_released(1, p);
    EXPECT_FALSE(s.needs_explicit_update());  // 2 < 3
    s.on_released(1, p);
    EXPECT_TRUE(s.needs_explicit_update());  // 3 >= 3
    // Piggybacking takes them: no update needed any more.
    ASSERT_EQ(s.try_consume(1), credit_verdict::ok);
    EXPECT_EQ(s.take_returnable(), 3u);
    EXPECT_FALSE(s.needs_explicit_update());
}

TEST(credit_state, explicit_update_uses_the_reserved_credit)
{
    credit_pool p;
    init_pool(p, per_peer(3, 2));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    ASSERT_EQ(s.try_consume(2), credit_verdict::ok);
    ASSERT_EQ(s.try_consume(1), credit_verdict::blocked);  // the reserved one
    ASSERT_EQ(s.on_message_received(3, p), status::ok);
    s.on_released(3, p);
    ASSERT_TRUE(s.needs_explicit_update());
    EXPECT_EQ(s.take_explicit_update(), 3u);
    EXPECT_EQ(s.send_credits(), 0u);
    EXPECT_EQ(s.returnable(), 0u);
    EXPECT_EQ(s.recv_credits(), 3u);
    EXPECT_TRUE(conserved(s));
    // With no credit left, an update is not possible even above the threshold.
    ASSERT_EQ(s.on_message_received(2, p), status::ok);
    s.on_released(2, p);
    EXPECT_EQ(s.returnable(), 2u);
    EXPECT_FALSE(s.needs_explicit_update());
    ASSERT_EQ(s.on_credits_returned(1), status::ok);
    EXPECT_TRUE(s.needs_explicit_update());
}

TEST(credit_state, explicit_update_received)
{
    credit_pool p;
    init_pool(p, per_peer(4, 2));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    ASSERT_EQ(s.try_consume(3), credit_verdict::ok);
    // The update takes one receive credit and frees its buffer at once.
    ASSERT_EQ(s.on_explicit_update(3, p), status::ok);
    EXPECT_EQ(s.send_credits(), 4u);
    EXPECT_EQ(s.recv_credits(), 3u);
    EXPECT_EQ(s.held(), 0u);
    EXPECT_EQ(s.returnable(), 1u);
    EXPECT_FALSE(s.needs_explicit_update());  // one credit does not answer an update
    EXPECT_TRUE(conserved(s));
    EXPECT_EQ(s.on_explicit_update(credit_field_max + 1, p), status::bad_message);
    // An update with no receive credit for it is an overrun like any message.
    ASSERT_EQ(s.on_message_received(2, p), status::ok);
    EXPECT_EQ(s.on_explicit_update(1, p), status::overrun);
}

// The RDS scenario by hand: both peers send until blocked before receiving
// anything, then receive and release. Without the rule both would have spent
// every credit and could never return the released ones.
TEST(credit_state, both_peers_out_of_credits_recover)
{
    credit_pool pa, pb;
    init_pool(pa, per_peer(3, 2));
    init_pool(pb, per_peer(3, 2));
    credit_state a, b;  // a: A's state for B; b: B's state for A
    ASSERT_EQ(a.attach(pa), status::ok);
    ASSERT_EQ(b.attach(pb), status::ok);
    int a_sent = 0, b_sent = 0;
    while (a.try_consume(1) != credit_verdict::blocked) {
        EXPECT_EQ(a.take_returnable(), 0u);
        ++a_sent;
    }
    while (b.try_consume(1) != credit_verdict::blocked) {
        EXPECT_EQ(b.take_returnable(), 0u);
        ++b_sent;
    }
    EXPECT_EQ(a_sent, 2);  // one credit kept each
    EXPECT_EQ(b_sent, 2);
    for (int i = 0; i < b_sent; ++i) {
        ASSERT_EQ(a.on_message_received(1, pa), status::ok);
        a.on_released(1, pa);
    }
    for (int i = 0; i < a_sent; ++i) {
        ASSERT_EQ(b.on_message_received(1, pb), status::ok);
        b.on_released(1, pb);
    }
    // Both have 2 returnable >= threshold and the reserved credit to send them.
    ASSERT_TRUE(a.needs_explicit_update());
    ASSERT_TRUE(b.needs_explicit_update());
    const std::uint32_t from_a = a.take_explicit_update();
    const std::uint32_t from_b = b.take_explicit_update();
    ASSERT_EQ(b.on_explicit_update(from_a, pb), status::ok);
    ASSERT_EQ(a.on_explicit_update(from_b, pa), status::ok);
    // Each has 2 credits again and one returnable (the update): both can send.
    EXPECT_EQ(a.send_credits(), 2u);
    EXPECT_EQ(b.send_credits(), 2u);
    EXPECT_FALSE(a.needs_explicit_update());
    EXPECT_FALSE(b.needs_explicit_update());
    EXPECT_EQ(a.try_consume(1), credit_verdict::ok);
    EXPECT_EQ(a.take_returnable(), 1u);
    EXPECT_EQ(b.try_consume(1), credit_verdict::ok);
    EXPECT_TRUE(conserved(a));
    EXPECT_TRUE(conserved(b));
}

// ------------------------------------------------------------------ shared pool

TEST(credit_pool, grows_a_busy_peer_and_queues_the_hungry)
{
    credit_pool p;
    init_pool(p, shared(9, 3, 6, 2, 2));  // two peers of 3, 3 spare
    credit_state a, b;
    ASSERT_EQ(a.attach(p), status::ok);
    ASSERT_EQ(b.attach(p), status::ok);
    ASSERT_EQ(p.free(), 3u);
    // a uses its credits: below the threshold it gets an extra grant of 2.
    ASSERT_EQ(a.on_message_received(1, p), status::ok);
    EXPECT_EQ(a.window(), 3u);
    ASSERT_EQ(a.on_message_received(1, p), status::ok);
    EXPECT_EQ(a.window(), 5u);
    EXPECT_EQ(a.returnable(), 2u);  // to go out with the next returns
    EXPECT_EQ(p.free(), 1u);
    EXPECT_TRUE(conserved(a));
    EXPECT_TRUE(a.needs_explicit_update());
    // b gets the last spare credit, then waits as hungry.
    ASSERT_EQ(b.on_message_received(2, p), status::ok);
    EXPECT_EQ(b.window(), 4u);
    EXPECT_EQ(p.free(), 0u);
    EXPECT_FALSE(b.hungry());
    ASSERT_EQ(b.on_message_received(1, p), status::ok);
    EXPECT_TRUE(b.hungry());
    EXPECT_EQ(p.hungry(), 1u);
    // a releases: its extras go back to the pool instead of back to a.
    EXPECT_EQ(a.take_returnable(), 2u);
    a.on_released(2, p);
    EXPECT_EQ(a.window(), 3u);
    EXPECT_EQ(a.returnable(), 0u);
    EXPECT_EQ(p.free(), 2u);
    EXPECT_TRUE(conserved(a));
    // b's next release (or arrival) takes them.
    b.on_released(1, p);
    EXPECT_FALSE(b.hungry());
    EXPECT_EQ(p.hungry(), 0u);
    EXPECT_EQ(b.window(), 6u);
    EXPECT_EQ(p.free(), 0u);
    EXPECT_TRUE(conserved(b));
    EXPECT_EQ(p.free() + a.window() + b.window(), p.total());
}

TEST(credit_pool, per_peer_mode_never_grows_or_shrinks)
{
    credit_pool p;
    init_pool(p, per_peer(4, 2));
    credit_state s;
    ASSERT_EQ(s.attach(p), status::ok);
    ASSERT_EQ(s.on_message_received(4, p), status::ok);
    EXPECT_EQ(s.window(), 4u);
    EXPECT_FALSE(s.hungry());
    s.on_released(4, p);
    EXPECT_EQ(s.window(), 4u);
    EXPECT_EQ(p.hungry(), 0u);
    EXPECT_EQ(p.total(), 0u);
}

TEST(credit_pool, detach_of_a_hungry_peer)
{
    credit_pool p;
    init_pool(p, shared(6, 3, 6, 2));
    credit_state a, b;
    ASSERT_EQ(a.attach(p), status::ok);
    ASSERT_EQ(b.attach(p), status::ok);
    ASSERT_EQ(a.on_message_received(2, p), status::ok);
    ASSERT_TRUE(a.hungry());
    ASSERT_EQ(p.hungry(), 1u);
    a.detach(p);
    EXPECT_EQ(p.hungry(), 0u);
    EXPECT_EQ(p.free(), 3u);
    EXPECT_EQ(p.peers(), 1u);
}

// ------------------------------------------------------------------ simulation

// Endpoints exchanging messages through lossless FIFO queues, each driving one
// credit_state per peer the way the protocol engine does. Every step picks one
// enabled action at random; releases are weighted per seed, from eager to
// "send until blocked, then receive". Checks after every step: no overrun, the
// per-state invariant, the pool invariant, and exact conservation per link:
//   receiver's recv_credits == sender's send_credits + cost in flight to the
//   receiver + credits in flight back to the sender.
class simulation {
  public:
    struct msg {
        bool update;
        std::uint32_t cost;
        std::uint32_t credits;
    };

    // links: pairs (a, b) that talk both ways; configs: one per endpoint.
    simulation(std::vector<credit_config> configs, std::vector<std::pair<unsigned, unsigned>> links,
               unsigned seed)
        : n_(static_cast<unsigned>(configs.size())), rng_(seed)
    {
        pools_ = std::vector<credit_pool>(n_);
        for (unsigned e = 0; e < n_; ++e) {
            const char *why = nullptr;
            ok_ = ok_ && pools_[e].init(configs[e], &why) == status::ok;
        }
        st_.resize(n_ * n_);
        chan_.resize(n_ * n_);
        held_.resize(n_ * n_);
        to_send_.assign(n_ * n_, 0);
        pending_cost_.assign(n_ * n_, 0);
        max_cost_.assign(n_ * n_, 1);
        delivered_.assign(n_ * n_, 0);
        expected_.assign(n_ * n_, 0);
        linked_.assign(n_ * n_, false);
        for (auto [a, b] : links) {
            linked_[idx(a, b)] = linked_[idx(b, a)] = true;
            ok_ = ok_ && st_[idx(a, b)].attach(pools_[a]) == status::ok;
            ok_ = ok_ && st_[idx(b, a)].attach(pools_[b]) == status::ok;
        }
        std::uniform_int_distribution<int> w(0, 3);
        release_weight_ = w(rng_) == 0 ? 1 : 1 + w(rng_) * 10;  // sometimes releases are rare
        refuse_percent_ = std::uniform_int_distribution<int>(0, 10)(rng_);
    }

    bool ok() const { return ok_; }
    credit_state &state(unsigned me, unsigned peer) { return st_[idx(me, peer)]; }
    credit_pool &pool(unsigned e) { return pools_[e]; }

    // `count` messages from a to b, each costing 1..max_cost credits.
    void traffic(unsigned a, unsigned b, std::uint32_t count, std::uint32_t max_cost = 1)
    {
        to_send_[idx(a, b)] = count;
        max_cost_[idx(a, b)] = max_cost;
        expected_[idx(b, a)] = count;
    }

    // Run until every message is delivered and released. Returns "" or what went wrong.
    std::string run(std::uint64_t max_steps)
    {
        while (!done()) {
            if (steps_ >= max_steps) {
                return "no completion after " + std::to_string(steps_) + " steps" + dump();
            }
            if (std::string e = step(/*data_ok=*/true); !e.empty()) {
                return e;
            }
        }
        return "";
    }

    // After completion: only explicit updates and their receipt remain; they must
    // die out. Returns "" or what went wrong; `updates` counts them.
    std::string quiesce(std::uint64_t max_steps, std::uint64_t &updates)
    {
        const std::uint64_t before = updates_;
        const std::uint64_t limit = steps_ + max_steps;
        for (;;) {
            if (steps_ >= limit) {
                return "explicit updates did not stop (storm)" + dump();
            }
            std::string e = step(/*data_ok=*/false);
            if (e == "stuck") {
                break;
            }
            if (!e.empty()) {
                return e;
            }
        }
        updates = updates_ - before;
        return "";
    }

    // Endpoint `e` never releases what it receives (a receiver that never posts
    // its receives): senders to it must end up blocked, which run() reports.
    void never_release(unsigned e) { never_release_ = static_cast<int>(e); }

    std::uint64_t steps() const { return steps_; }
    std::uint64_t updates() const { return updates_; }
    std::uint64_t data_messages() const { return data_; }

  private:
    enum class act { send, recv, release, update };
    struct action {
        act a;
        unsigned me, peer;
    };

    unsigned idx(unsigned me, unsigned peer) const { return me * n_ + peer; }

    bool done() const
    {
        for (unsigned i = 0; i < n_ * n_; ++i) {
            if (to_send_[i] != 0 || delivered_[i] != expected_[i]) {
                return false;
            }
        }
        return true;
    }

    std::uint32_t next_cost(unsigned me, unsigned peer)
    {
        const std::uint32_t m = max_cost_[idx(me, peer)];
        return m == 1 ? 1 : 1 + static_cast<std::uint32_t>(rng_() % m);
    }

    // One step: "" when an action ran, "stuck" when none is enabled while
    // messages are outstanding (or at all, when !data_ok), else an error.
    std::string step(bool data_ok)
    {
        std::vector<action> acts;
        for (unsigned me = 0; me < n_; ++me) {
            for (unsigned peer = 0; peer < n_; ++peer) {
                if (!linked_[idx(me, peer)]) {
                    continue;
                }
                credit_state &s = st_[idx(me, peer)];
                if (data_ok && to_send_[idx(me, peer)] != 0) {
                    credit_state probe = s;  // trivially copyable: test without changing
                    if (pending_cost_[idx(me, peer)] == 0) {
                        pending_cost_[idx(me, peer)] = next_cost(me, peer);
                    }
                    if (probe.try_consume(pending_cost_[idx(me, peer)]) !=
                        credit_verdict::blocked) {
                        acts.push_back({act::send, me, peer});
                    }
                }
                if (!chan_[idx(peer, me)].empty()) {
                    acts.push_back({act::recv, me, peer});
                }
                if (data_ok && !held_[idx(me, peer)].empty() &&
                    static_cast<int>(me) != never_release_) {
                    for (int w = 0; w < release_weight_; ++w) {
                        acts.push_back({act::release, me, peer});
                    }
                }
                if (s.needs_explicit_update()) {
                    acts.push_back({act::update, me, peer});
                }
            }
        }
        if (acts.empty()) {
            return data_ok ? "deadlock: no action enabled" + dump() : "stuck";
        }
        ++steps_;
        const action x = acts[rng_() % acts.size()];
        credit_state &s = st_[idx(x.me, x.peer)];
        credit_pool &p = pools_[x.me];
        switch (x.a) {
            case act::send: {
                const std::uint32_t c = pending_cost_[idx(x.me, x.peer)];
                const credit_verdict v = s.try_consume(c);
                if (v == credit_verdict::blocked) {
                    return "send blocked although the probe allowed it" + dump();
                }
                const std::uint32_t n = s.take_returnable();
                if (v == credit_verdict::ok_must_carry && n == 0) {
                    return "last credit spent without returning credits" + dump();
                }
                if (static_cast<int>(rng_() % 100) < refuse_percent_) {
                    s.refund(c);  // the transport said again
                    s.restore_returnable(n);
                    break;
                }
                chan_[idx(x.me, x.peer)].push_back({false, c, n});
                pending_cost_[idx(x.me, x.peer)] = 0;
                --to_send_[idx(x.me, x.peer)];
                ++data_;
                break;
            }
            case act::recv: {
                const msg m = chan_[idx(x.peer, x.me)].front();
                chan_[idx(x.peer, x.me)].pop_front();
                if (m.update) {
                    if (s.on_explicit_update(m.credits, p) != status::ok) {
                        return "explicit update refused (overrun)" + dump();
                    }
                } else {
                    if (s.on_message_received(m.cost, p) != status::ok) {
                        return "overrun" + dump();
                    }
                    if (s.on_credits_returned(m.credits) != status::ok) {
                        return "returned credits refused" + dump();
                    }
                    held_[idx(x.me, x.peer)].push_back(m.cost);
                }
                break;
            }
            case act::release: {
                // Not necessarily in order: receives match in any order.
                auto &h = held_[idx(x.me, x.peer)];
                const std::size_t i = rng_() % h.size();
                const std::uint32_t c = h[i];
                h.erase(h.begin() + static_cast<std::ptrdiff_t>(i));
                s.on_released(c, p);
                ++delivered_[idx(x.me, x.peer)];
                break;
            }
            case act::update: {
                const std::uint32_t n = s.take_explicit_update();
                if (n == 0) {
                    return "explicit update carrying nothing" + dump();
                }
                chan_[idx(x.me, x.peer)].push_back({true, 1, n});
                ++updates_;
                break;
            }
        }
        return check();
    }

    std::string check()
    {
        for (unsigned e = 0; e < n_; ++e) {
            std::uint64_t windows = 0;
            for (unsigned peer = 0; peer < n_; ++peer) {
                if (!linked_[idx(e, peer)]) {
                    continue;
                }
                const credit_state &s = st_[idx(e, peer)];
                if (!conserved(s)) {
                    return "invariant recv + held + returnable == window broken" + dump();
                }
                windows += s.window();
                // Link peer -> e: what e granted == what peer holds + in flight.
                const credit_state &sender = st_[idx(peer, e)];
                std::uint64_t flight = sender.send_credits();
                for (const msg &m : chan_[idx(peer, e)]) {
                    flight += m.cost;
                }
                for (const msg &m : chan_[idx(e, peer)]) {
                    flight += m.credits;
                }
                if (flight != s.recv_credits()) {
                    return "credits not conserved on link " + std::to_string(peer) + "->" +
                           std::to_string(e) + dump();
                }
                std::uint64_t held = 0;
                for (std::uint32_t c : held_[idx(e, peer)]) {
                    held += c;
                }
                if (held != s.held()) {
                    return "held credits differ from held messages" + dump();
                }
            }
            const credit_pool &p = pools_[e];
            if (p.mode() == credit_mode::shared_pool && windows + p.free() != p.total()) {
                return "pool over-granted: free " + std::to_string(p.free()) + " + windows " +
                       std::to_string(windows) + " != " + std::to_string(p.total()) + dump();
            }
        }
        return "";
    }

    std::string dump() const
    {
        std::ostringstream o;
        o << "\n  after " << steps_ << " steps:";
        for (unsigned me = 0; me < n_; ++me) {
            for (unsigned peer = 0; peer < n_; ++peer) {
                if (!linked_[idx(me, peer)]) {
                    continue;
                }
                const credit_state &s = st_[idx(me, peer)];
                o << "\n  " << me << "->" << peer << ": send " << s.send_credits() << " recv "
                  << s.recv_credits() << " held " << s.held() << " returnable " << s.returnable()
                  << " window " << s.window() << " | to send " << to_send_[idx(me, peer)]
                  << " in flight " << chan_[idx(me, peer)].size() << " delivered "
                  << delivered_[idx(me, peer)] << "/" << expected_[idx(me, peer)];
            }
            if (pools_[me].mode() == credit_mode::shared_pool) {
                o << "\n  pool " << me << ": free " << pools_[me].free() << " hungry "
                  << pools_[me].hungry();
            }
        }
        return o.str();
    }

    unsigned n_;
    std::mt19937 rng_;
    bool ok_ = true;
    std::vector<credit_pool> pools_;
    std::vector<credit_state> st_;
    std::vector<std::deque<msg>> chan_;             // [from * n + to]
    std::vector<std::vector<std::uint32_t>> held_;  // [me * n + peer]: costs of held messages
    std::vector<std::uint32_t> to_send_;
    std::vector<std::uint32_t> max_cost_;
    std::vector<std::uint32_t> pending_cost_;  // cost of the next message, once drawn
    std::vector<std::uint32_t> delivered_;     // [me * n + peer]: released messages from peer
    std::vector<std::uint32_t> expected_;
    std::vector<bool> linked_;
    int release_weight_ = 1;
    int never_release_ = -1;
    int refuse_percent_ = 0;
    std::uint64_t steps_ = 0;
    std::uint64_t updates_ = 0;
    std::uint64_t data_ = 0;
};

struct two_peer_case {
    std::uint16_t window, threshold, initial;
    std::uint32_t max_cost;  // <= window - threshold: progress is guaranteed
};
// Printed by field (gtest's fallback dumps the bytes, padding included, which
// valgrind reports as uninitialised).
[[maybe_unused]] void PrintTo(const two_peer_case &k, std::ostream *os)
{
    *os << "{window " << k.window << ", threshold " << k.threshold << ", initial " << k.initial
        << ", max_cost " << k.max_cost << "}";
}

class credit_simulation : public ::testing::TestWithParam<two_peer_case> {};

TEST_P(credit_simulation, two_peers_no_overrun_no_deadlock_no_storm)
{
    const two_peer_case k = GetParam();
    std::uint64_t total_updates = 0, total_data = 0;
    for (unsigned seed = 1; seed <= 2000; ++seed) {
        const credit_config c = per_peer(k.window, k.threshold, k.initial);
        simulation sim({c, c}, {{0, 1}}, seed);
        ASSERT_TRUE(sim.ok());
        std::mt19937 r(seed * 7919u);
        const std::uint32_t n01 = 1 + r() % 40, n10 = r() % 40;
        sim.traffic(0, 1, n01, k.max_cost);
        sim.traffic(1, 0, n10, k.max_cost);
        const std::string e = sim.run(200000);
        ASSERT_EQ(e, "") << "seed " << seed;
        std::uint64_t tail = 0;
        ASSERT_EQ(sim.quiesce(10000, tail), "") << "seed " << seed;
        // Once idle, each side's send credits are above the reserve: the next
        // message of either side goes at once (window - threshold + 1 >= 2).
        for (unsigned me = 0; me < 2; ++me) {
            EXPECT_GE(sim.state(me, 1 - me).send_credits(), k.window - k.threshold + 1u)
                << "seed " << seed;
        }
        // Updates are bounded by data: each returns >= threshold credits, of
        // which at most one came from an update.
        EXPECT_LE(sim.updates(), sim.data_messages() * k.max_cost + 2u * k.window)
            << "seed " << seed;
        total_updates += sim.updates();
        total_data += sim.data_messages();
    }
    RecordProperty("data_messages", std::to_string(total_data));
    RecordProperty("explicit_updates", std::to_string(total_updates));
    EXPECT_GT(total_updates, 0u);  // the explicit path was exercised
}

INSTANTIATE_TEST_SUITE_P(windows, credit_simulation,
                         ::testing::Values(two_peer_case{3, 2, 3, 1}, two_peer_case{4, 2, 4, 2},
                                           two_peer_case{4, 3, 4, 1}, two_peer_case{8, 4, 4, 4},
                                           two_peer_case{16, 8, 4, 8},
                                           two_peer_case{16, 15, 16, 1}),
                         [](const ::testing::TestParamInfo<two_peer_case> &i) {
                             return "w" + std::to_string(i.param.window) + "_t" +
                                    std::to_string(i.param.threshold) + "_i" +
                                    std::to_string(i.param.initial) + "_c" +
                                    std::to_string(i.param.max_cost);
                         });

// The simulation can fail: a receiver that never releases blocks its sender
// for good (the receiver's fault, not the protocol's), and the detector must
// report that as a deadlock rather than pass.
TEST(credit_simulation_self_test, reports_a_deadlock)
{
    const credit_config c = per_peer(3, 2);
    simulation sim({c, c}, {{0, 1}}, 1);
    ASSERT_TRUE(sim.ok());
    sim.never_release(1);
    sim.traffic(0, 1, 10);
    const std::string e = sim.run(100000);
    EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
    // Two went; the reserved credit stays.
    EXPECT_EQ(sim.state(0, 1).send_credits(), 1u);
    EXPECT_EQ(sim.state(1, 0).held(), 2u);
}

// ...and a run that cannot finish in its step budget is reported, not passed.
TEST(credit_simulation_self_test, reports_a_run_out_of_steps)
{
    const credit_config c = per_peer(3, 2);
    simulation sim({c, c}, {{0, 1}}, 1);
    ASSERT_TRUE(sim.ok());
    sim.traffic(0, 1, 1000);
    EXPECT_NE(sim.run(10).find("no completion"), std::string::npos);
}

// Shared pool: four clients send to a server with a pool barely larger than
// their initial grants, the server answers some; everyone finishes (no peer
// starves), and the pool never grants more than it has.
TEST(credit_simulation, shared_pool_four_clients)
{
    std::uint64_t grants_seen = 0;
    for (unsigned seed = 1; seed <= 1000; ++seed) {
        std::mt19937 r(seed * 104729u);
        const std::uint16_t initial = static_cast<std::uint16_t>(3 + r() % 2);
        const std::uint32_t spare = r() % 6;
        const credit_config server =
            shared(4u * initial + spare, initial, 12, 2, static_cast<std::uint16_t>(1 + r() % 3));
        const credit_config client = per_peer(initial, 2);
        simulation sim({server, client, client, client, client}, {{0, 1}, {0, 2}, {0, 3}, {0, 4}},
                       seed);
        ASSERT_TRUE(sim.ok()) << "seed " << seed;
        for (unsigned c = 1; c <= 4; ++c) {
            sim.traffic(c, 0, 5 + r() % 30);
            sim.traffic(0, c, r() % 5);
        }
        ASSERT_EQ(sim.run(400000), "") << "seed " << seed;
        std::uint64_t tail = 0;
        ASSERT_EQ(sim.quiesce(10000, tail), "") << "seed " << seed;
        for (unsigned c = 1; c <= 4; ++c) {
            EXPECT_GE(sim.state(0, c).window(), initial);
            EXPECT_LE(sim.state(0, c).window(), 12u);
            if (sim.state(0, c).window() > initial) {
                ++grants_seen;
            }
        }
    }
    EXPECT_GT(grants_seen, 0u);  // extra grants happened
}

// One client keeps its window at the cap while another asks: the hog gives its
// extras back as it releases, and the other gets them.
TEST(credit_pool, an_idle_hog_does_not_starve_a_busy_peer)
{
    credit_pool p;
    init_pool(p, shared(10, 3, 7, 2, 4));
    credit_state hog, busy;
    ASSERT_EQ(hog.attach(p), status::ok);
    ASSERT_EQ(busy.attach(p), status::ok);
    // hog grows to its cap (3 + 4) and takes all of the spare pool.
    ASSERT_EQ(hog.on_message_received(2, p), status::ok);
    ASSERT_EQ(hog.window(), 7u);
    ASSERT_EQ(p.free(), 0u);
    ASSERT_EQ(hog.take_returnable(), 4u);  // the grant went out
    // busy wants more: none left.
    ASSERT_EQ(busy.on_message_received(2, p), status::ok);
    ASSERT_TRUE(busy.hungry());
    // The hog's messages are released one by one; each excess credit goes back.
    hog.on_released(1, p);
    EXPECT_EQ(hog.window(), 6u);
    EXPECT_EQ(p.free(), 1u);
    hog.on_released(1, p);
    EXPECT_EQ(hog.window(), 5u);
    EXPECT_EQ(p.free(), 2u);
    // busy's next event takes them.
    ASSERT_EQ(busy.on_message_received(1, p), status::ok);
    EXPECT_FALSE(busy.hungry());
    EXPECT_EQ(busy.window(), 5u);
    EXPECT_EQ(p.free(), 0u);
    EXPECT_EQ(p.free() + hog.window() + busy.window(), p.total());
    // busy's grant goes out, it uses it and wants more: hungry again.
    ASSERT_EQ(busy.take_returnable(), 2u);
    ASSERT_EQ(busy.on_message_received(2, p), status::ok);
    ASSERT_TRUE(busy.hungry());
    // The hog still holds 5 credits it was given (they cannot be revoked); as it
    // uses them, what exceeds its initial 3 goes back to the pool, no further.
    ASSERT_EQ(hog.recv_credits(), 5u);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(hog.on_message_received(1, p), status::ok);
        hog.on_released(1, p);
    }
    EXPECT_EQ(hog.window(), 3u);
    EXPECT_EQ(p.free(), 2u);
    EXPECT_TRUE(busy.hungry());
    // busy takes them with its next release.
    busy.on_released(1, p);
    EXPECT_FALSE(busy.hungry());
    EXPECT_EQ(busy.window(), 7u);
    EXPECT_EQ(p.free(), 0u);
    EXPECT_TRUE(conserved(hog));
    EXPECT_TRUE(conserved(busy));
    EXPECT_EQ(p.free() + hog.window() + busy.window(), p.total());
}

}  // namespace
}  // namespace weft::proto
