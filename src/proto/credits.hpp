#pragma once
// Credit-based flow control between two endpoints (docs/credits.md).
//
// Every message a peer sends us occupies one of our receive buffers until we
// release it, so a peer may only send while it holds credits we granted it.
// Credits come back piggybacked on traffic going the other way (a credit prefix
// on a message, flagged in its active-message word), or, when no traffic carries
// them, in an explicit credit-update message once `threshold` of them are waiting.
//
// Two rules make this deadlock-free and storm-free; docs/credits.md has the
// argument, and test/proto/credits.pml checks it with spin:
//
//  1. The last credit (RDS rule). A sender may spend its last credit only on a
//     message that also returns credits to the peer. An explicit update is itself
//     a message and costs one credit (it occupies a receive buffer like any
//     message; on verbs it consumes a receive WQE), so if both sides could spend
//     everything on data, both could end up holding released buffers they can
//     never advertise. With the rule, whoever spends a last credit hands the
//     other side credits in the same message, so at least one side can always
//     speak; and a side that holds credits to return always has its reserved
//     credit to return them with.
//
//  2. The threshold, 2 <= threshold <= floor - 1 (floor: the smallest window a
//     peer can have; the window in per-peer mode, the initial grant in shared
//     mode). We cannot see that a peer is blocked, so the threshold must imply
//     it: when nothing is in flight and everything is released, the peer's send
//     credits plus our returnable credits equal its window; a peer blocked on a
//     one-credit send holds at most one credit, so we hold at least window - 1
//     >= threshold returnable credits and send an explicit update. threshold >= 2
//     stops the ack storm: an update's own credit, once released, leaves the
//     other side one returnable credit, below the threshold, so updates do not
//     answer updates forever (each update lowers the sum of returnable credits of
//     both sides by at least one). Hence the minimum window is 3.
//
// Progress is guaranteed for messages of cost <= floor - threshold; engines
// consume one credit per wire message (per fragment), which always qualifies.
//
// Modes:
//  - per_peer: each peer gets a fixed receive window.
//  - shared_pool (a shared receive queue, e.g. verbs SRQ): one pool of buffers for
//    all peers. Each peer keeps the initial grant for as long as it is attached
//    (so it can never starve: rule 2 holds with floor = initial); peers that
//    run low get extra grants from the pool, up to `window` each, and give them
//    back on release while another peer is waiting for the pool. The sum of all
//    grants never exceeds the pool (free + sum of windows == pool size).
//
// The credit_state fields are the variables of the spin model
// (test/proto/credits.pml), one to one: send_credits, recv_credits, held,
// returnable, window, hungry; the pool's free and hungry are pool_free and
// pool_hungry; threshold and initial are the model's constants T and INIT. The
// model's inline functions carry the names of the member functions below.
//
// Use from the protocol engine (single-threaded per endpoint, like the engine):
//
//   // first contact with a peer (send or receive), control path:
//   if (st.attach(pool) != status::ok) { ... peer refused: pool exhausted ... }
//   // send a wire message of cost c (1 per fragment):
//   switch (st.try_consume(c)) {
//     case credit_verdict::blocked: queue it; break;
//     default: hdr.credits = st.take_returnable(); send; // on -again: st.refund(c),
//              break;                                   // st.restore_returnable(n)
//   }
//   // a message arrives:
//   if (st.on_message_received(c, pool) != status::ok) { log, drop (overrun) }
//   if (st.on_credits_returned(hdr.credits) != status::ok) { log, drop (bad peer) }
//   // its buffer is released (matched and copied, or the unexpected record freed):
//   st.on_released(c, pool);
//   // after on_released, on_credits_returned, attach, and in progress:
//   if (st.needs_explicit_update()) { n = st.take_explicit_update(); send update(n) }
//   // an explicit update arrives:
//   if (st.on_explicit_update(hdr.credits, pool) != status::ok) { log, drop }

#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

#include "base/status.hpp"

namespace weft::proto {

using base::status;

/// Most credits one piggybacked prefix returns is 2^credit_field_bits - 1 (the
/// prefix's count is wider; the limit keeps returns in small steps that the
/// automatic threshold is sized by, docs/credits.md).
inline constexpr unsigned credit_field_bits = 8;
/// Most credits one message returns; the rest wait for the next message.
inline constexpr std::uint32_t credit_field_max = (1u << credit_field_bits) - 1;
/// Smallest window: one credit reserved by the last-credit rule, one left at the
/// peer by an explicit update, one for data.
inline constexpr std::uint16_t credit_min_window = 3;
/// Smallest threshold: 1 would answer every update with an update.
inline constexpr std::uint16_t credit_min_threshold = 2;
/// Windows and the pool's per-peer cap are 16-bit.
inline constexpr std::uint32_t credit_max_window = UINT16_MAX;

/// Flow-control mode of an endpoint, chosen at open.
enum class credit_mode : std::uint8_t {
    unconfigured = 0,  ///< a pool not set up yet: peers cannot attach (credits are always on)
    per_peer = 1,      ///< a fixed receive window per peer
    shared_pool = 2,   ///< one receive pool shared by every peer (SRQ)
};

/// What a sender may do with a message, from try_consume().
enum class credit_verdict : std::uint8_t {
    ok = 0,             ///< credits consumed; piggyback take_returnable() as always
    ok_must_carry = 1,  ///< the last credit was consumed: the message must carry
                        ///< take_returnable() (> 0 guaranteed)
    blocked = 2,        ///< nothing consumed: queue the message and retry later
};

/// Flow-control parameters of an endpoint. `initial` is a protocol constant:
/// both sides start from it without a handshake, so every endpoint that talks to
/// another must use the same value (docs/credits.md).
struct credit_config {
    credit_mode mode = credit_mode::per_peer;
    /// Credits each side assumes the other granted it at first contact.
    std::uint16_t initial = 4;
    /// per_peer: the receive window of each peer (>= initial; the rest is granted
    /// with the first returns). shared_pool: the most one peer may hold.
    std::uint16_t window = 16;
    /// Explicit update when this many credits are returnable. 0: automatic,
    /// window / 2 clamped to [credit_min_threshold, floor - 1].
    std::uint16_t threshold = 0;
    /// shared_pool: credits added per extra grant. 0: automatic (= threshold).
    std::uint16_t grant_step = 0;
    /// shared_pool: buffers in the pool (>= initial for every attached peer).
    std::uint32_t pool_size = 0;
};

/// Check a configuration; fills automatic values of `c`. Logs nothing: the
/// caller logs the reason in `why` (static text) with its own context.
[[nodiscard]] status credit_config_resolve(credit_config &c, const char **why) noexcept;

/// Credits of a message of `size` bytes when one credit carries `unit` bytes
/// (a zero-byte message costs 1). 0 if unit is 0 (invalid).
[[nodiscard]] constexpr std::size_t credit_cost(std::size_t size, std::size_t unit) noexcept
{
    if (unit == 0) {
        return 0;
    }
    if (size <= unit) {
        return 1;
    }
    return size / unit + (size % unit != 0 ? 1 : 0);
}

/// Credits of a message sent as a first fragment carrying up to `first_unit`
/// bytes and further fragments of up to `unit` bytes each (the tag module's
/// eager_first / eager_frag headers differ in size). 0 if a unit is 0.
[[nodiscard]] constexpr std::size_t credit_cost(std::size_t size, std::size_t first_unit,
                                                std::size_t unit) noexcept
{
    if (first_unit == 0 || unit == 0) {
        return 0;
    }
    if (size <= first_unit) {
        return 1;
    }
    return 1 + credit_cost(size - first_unit, unit);
}

/// Credits of a gather list (what weft_sendv_cost() answers): bcopy gathers the
/// iovec into wire messages, so only the total length counts.
[[nodiscard]] inline std::size_t credit_cost(const struct iovec *iov, std::size_t iovcnt,
                                             std::size_t first_unit, std::size_t unit) noexcept
{
    std::size_t total = 0;
    for (std::size_t i = 0; i < iovcnt; ++i) {
        total += iov[i].iov_len;
    }
    return credit_cost(total, first_unit, unit);
}

class credit_state;

/// The receive side's credit supply of one endpoint: unlimited per-peer windows,
/// or a shared pool. Not thread-safe (the engine serialises).
class credit_pool {
  public:
    credit_pool() = default;
    credit_pool(const credit_pool &) = delete;
    credit_pool &operator=(const credit_pool &) = delete;

    /// Set up from a configuration (credit_config_resolve() applied here).
    /// Control path; must precede any attach.
    [[nodiscard]] status init(const credit_config &c, const char **why) noexcept;

    [[nodiscard]] credit_mode mode() const noexcept { return mode_; }
    /// shared_pool: buffers in the pool; per_peer: 0 (unbounded).
    [[nodiscard]] std::uint32_t total() const noexcept { return total_; }
    /// shared_pool: credits granted to no peer.
    [[nodiscard]] std::uint32_t free() const noexcept { return free_; }
    /// shared_pool: peers that asked for an extra grant while the pool was empty.
    [[nodiscard]] std::uint32_t hungry() const noexcept { return hungry_; }
    /// Attached peers.
    [[nodiscard]] std::uint32_t peers() const noexcept { return peers_; }
    [[nodiscard]] std::uint16_t initial() const noexcept { return initial_; }
    [[nodiscard]] std::uint16_t window() const noexcept { return window_; }
    [[nodiscard]] std::uint16_t threshold() const noexcept { return threshold_; }
    [[nodiscard]] std::uint16_t grant_step() const noexcept { return grant_step_; }

    /// shared_pool: `n` more buffers joined the pool (the transport grew its shared
    /// receive queue). Only adds free credits, so every invariant still holds.
    void add(std::uint32_t n) noexcept
    {
        if (mode_ == credit_mode::shared_pool) {
            total_ += n;
            free_ += n;
        }
    }

  private:
    friend class credit_state;

    credit_mode mode_ = credit_mode::unconfigured;
    std::uint16_t initial_ = 0;
    std::uint16_t window_ = 0;
    std::uint16_t threshold_ = 0;
    std::uint16_t grant_step_ = 0;
    std::uint32_t total_ = 0;
    std::uint32_t free_ = 0;
    std::uint32_t hungry_ = 0;
    std::uint32_t peers_ = 0;
};

/// Flow-control state of one peer: our send credits towards it and the receive
/// credits we granted it. 16 bytes, no pointers; lives in the engine's peer record.
///
/// Invariant while attached: recv_credits + held + returnable == window.
/// recv_credits counts credits at the peer or travelling to it (granted by a
/// message already sent) plus messages travelling from it; a message that finds
/// recv_credits < its cost is an overrun.
class credit_state {
  public:
    /// First contact (control path): take the initial grant from the pool and
    /// assume the peer granted us `initial`. Per-peer mode: the window beyond
    /// `initial` becomes returnable at once. no_memory if the shared pool cannot
    /// cover the initial grant (the peer must be refused: it would overrun),
    /// busy if already attached, invalid if the pool is not configured.
    [[nodiscard]] status attach(credit_pool &pool) noexcept;

    /// Give the peer's whole window back to the pool. Only after the peer failed
    /// or its connection is gone: credits it still holds become invalid.
    void detach(credit_pool &pool) noexcept;

    // ------------------------------------------------------------ send side

    /// Consume `cost` (>= 1) send credits if allowed; see credit_verdict.
    [[nodiscard, gnu::always_inline]] credit_verdict try_consume(std::uint32_t cost) noexcept
    {
        if (send_credits_ > cost) [[likely]] {
            send_credits_ = static_cast<std::uint16_t>(send_credits_ - cost);
            return credit_verdict::ok;
        }
        // The last credit(s): only with credits going back in the same message.
        if (send_credits_ == cost && returnable_ > 0) {
            send_credits_ = 0;
            return credit_verdict::ok_must_carry;
        }
        return credit_verdict::blocked;
    }

    /// Undo try_consume() when the transport refused the message (again).
    [[gnu::always_inline]] void refund(std::uint32_t cost) noexcept
    {
        send_credits_ = static_cast<std::uint16_t>(send_credits_ + cost);
    }

    /// Credits to piggyback on a message to the peer (0..credit_field_max); they
    /// count as granted from now on. Call for every message sent to the peer.
    [[nodiscard, gnu::always_inline]] std::uint32_t take_returnable() noexcept
    {
        const std::uint32_t n = returnable_ < credit_field_max ? returnable_ : credit_field_max;
        returnable_ = static_cast<std::uint16_t>(returnable_ - n);
        recv_credits_ = static_cast<std::uint16_t>(recv_credits_ + n);
        return n;
    }

    /// Undo take_returnable() when the message did not go.
    [[gnu::always_inline]] void restore_returnable(std::uint32_t n) noexcept
    {
        recv_credits_ = static_cast<std::uint16_t>(recv_credits_ - n);
        returnable_ = static_cast<std::uint16_t>(returnable_ + n);
    }

    /// A message from the peer carried `n` credits back to us (n from the wire:
    /// untrusted). bad_message if it would exceed any window (a broken peer).
    [[nodiscard, gnu::always_inline]] status on_credits_returned(std::uint32_t n) noexcept
    {
        if (n > credit_field_max || send_credits_ + n > credit_max_window) [[unlikely]] {
            return status::bad_message;
        }
        send_credits_ = static_cast<std::uint16_t>(send_credits_ + n);
        return status::ok;
    }

    // ------------------------------------------------------------ explicit updates

    /// An explicit credit update is due and can go now: at least `threshold`
    /// credits are returnable (nothing sent to the peer took them) and we have a
    /// credit to send it with (the reserved last one may serve). Call after
    /// on_released(), on_credits_returned(), attach(), and from progress.
    [[nodiscard, gnu::always_inline]] bool needs_explicit_update() const noexcept
    {
        return returnable_ >= threshold_ && send_credits_ > 0 && threshold_ != 0;
    }

    /// Start an explicit update (precondition: needs_explicit_update()): consumes
    /// its one credit and returns the credits it carries (> 0). If the transport
    /// refuses it: refund(1) and restore_returnable(n).
    [[nodiscard, gnu::always_inline]] std::uint32_t take_explicit_update() noexcept
    {
        send_credits_ = static_cast<std::uint16_t>(send_credits_ - 1);
        return take_returnable();
    }

    /// An explicit update carrying `n` credits arrived: it used one receive
    /// credit, returns n, and its buffer is released at once.
    [[nodiscard, gnu::always_inline]] status on_explicit_update(std::uint32_t n,
                                                                credit_pool &pool) noexcept
    {
        if (const status s = on_message_received(1, pool); s != status::ok) [[unlikely]] {
            return s;
        }
        on_released(1, pool);
        return on_credits_returned(n);
    }

    // ------------------------------------------------------------ receive side

    /// A message of cost `cost` from the peer arrived. overrun (state unchanged:
    /// drop the message and log) if it exceeds what we granted.
    [[nodiscard, gnu::always_inline]] status on_message_received(std::uint32_t cost,
                                                                 credit_pool &pool) noexcept
    {
        if (recv_credits_ < cost) [[unlikely]] {
            return status::overrun;
        }
        recv_credits_ = static_cast<std::uint16_t>(recv_credits_ - cost);
        held_ = static_cast<std::uint16_t>(held_ + cost);
        // Shared pool: the peer is about to run dry, so it is sending; offer it
        // more of the pool (never in per-peer mode: window_ == pool.window_).
        if (recv_credits_ < threshold_ && window_ < pool.window_) [[unlikely]] {
            grow(pool);
        }
        return status::ok;
    }

    /// The buffers of a received message of cost `cost` are free again (matched
    /// and copied, or its unexpected record freed): its credits become returnable,
    /// or go back to a shared pool that another peer is waiting for.
    [[gnu::always_inline]] void on_released(std::uint32_t cost, credit_pool &pool) noexcept
    {
        held_ = static_cast<std::uint16_t>(held_ - cost);
        returnable_ = static_cast<std::uint16_t>(returnable_ + cost);
        if (pool.hungry_ != 0) [[unlikely]] {
            rebalance(pool);
        }
    }

    // ------------------------------------------------------------ introspection

    /// Credits we may spend sending to the peer (the last one only on a message
    /// that returns credits: a send of cost c surely goes when send_credits() > c).
    [[nodiscard]] std::uint32_t send_credits() const noexcept { return send_credits_; }
    /// One-credit messages that may go to the peer now, one after the other: the
    /// first carries the returnable credits, so only it may use the last credit.
    /// What weft_ep_credits() reports as `send`.
    [[nodiscard]] std::uint32_t sendable() const noexcept
    {
        if (send_credits_ >= 2) {
            return send_credits_ - 1u;
        }
        return send_credits_ == 1 && returnable_ > 0 ? 1u : 0u;
    }
    /// Receive credits granted to the peer and not yet used by its messages.
    [[nodiscard]] std::uint32_t recv_credits() const noexcept { return recv_credits_; }
    /// Credits of received messages not yet released.
    [[nodiscard]] std::uint32_t held() const noexcept { return held_; }
    /// Released credits not yet returned to the peer.
    [[nodiscard]] std::uint32_t returnable() const noexcept { return returnable_; }
    /// The peer's receive window (recv_credits + held + returnable).
    [[nodiscard]] std::uint32_t window() const noexcept { return window_; }
    [[nodiscard]] std::uint32_t threshold() const noexcept { return threshold_; }
    [[nodiscard]] bool attached() const noexcept { return (flags_ & flag_attached) != 0; }
    /// Shared pool: waiting for an extra grant.
    [[nodiscard]] bool hungry() const noexcept { return (flags_ & flag_hungry) != 0; }

  private:
    static constexpr std::uint8_t flag_attached = 1u << 0;
    static constexpr std::uint8_t flag_hungry = 1u << 1;

    void grow(credit_pool &pool) noexcept;
    void rebalance(credit_pool &pool) noexcept;

    std::uint16_t send_credits_ = 0;  ///< spendable towards the peer (model: send_credits)
    std::uint16_t recv_credits_ = 0;  ///< granted, not yet used by arrivals (recv_credits)
    std::uint16_t held_ = 0;          ///< arrived, not released (held)
    std::uint16_t returnable_ = 0;    ///< released, not yet returned (returnable)
    std::uint16_t window_ = 0;        ///< recv_credits + held + returnable (window)
    std::uint16_t initial_ = 0;       ///< the floor of window_ in shared mode
    std::uint16_t threshold_ = 0;     ///< explicit update at this many returnable (threshold)
    std::uint8_t flags_ = 0;          ///< flag_*
    std::uint8_t reserved_ = 0;
};
static_assert(sizeof(credit_state) <= 64, "credit_state lives in every peer record");
static_assert(sizeof(credit_state) == 16);

}  // namespace weft::proto
