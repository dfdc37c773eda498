// Credit-based flow control: the control-path and shared-pool parts of
// credit_state (the hot paths are inline in credits.hpp). The protocol and the
// reasoning behind the limits checked here: docs/credits.md.

#include "proto/credits.hpp"

#include <algorithm>

namespace weft::proto {

status credit_config_resolve(credit_config &c, const char **why) noexcept
{
    const char *dummy = nullptr;
    const char *&reason = why != nullptr ? *why : dummy;
    reason = nullptr;
    if (c.mode != credit_mode::per_peer && c.mode != credit_mode::shared_pool) {
        reason = "unknown credit mode";
        return status::invalid;
    }
    // One credit is reserved by the last-credit rule and an explicit update
    // leaves one at the peer; with fewer than 3 there is no threshold that is
    // both deadlock-free and storm-free (docs/credits.md, "Why 3").
    if (c.initial < credit_min_window) {
        reason = "initial credits must be at least 3";
        return status::invalid;
    }
    if (c.window < c.initial) {
        reason = "window smaller than the initial credits";
        return status::invalid;
    }
    // The smallest window a peer can have: fixed in per-peer mode; in shared
    // mode a peer may be shrunk back to its initial grant.
    const std::uint16_t floor = c.mode == credit_mode::per_peer ? c.window : c.initial;
    if (c.threshold == 0) {
        // Half the window, but no more than one message can return: a window
        // of 512 or more gets the largest threshold that works (255).
        c.threshold = std::clamp<std::uint16_t>(
            static_cast<std::uint16_t>(c.window / 2), credit_min_threshold,
            std::min<std::uint16_t>(static_cast<std::uint16_t>(floor - 1), credit_field_max));
    }
    if (c.threshold < credit_min_threshold) {
        reason = "threshold below 2 lets explicit updates answer each other forever";
        return status::invalid;
    }
    // A peer blocked on a one-credit send leaves us window - 1 returnable
    // credits when everything is released: the threshold must not exceed that,
    // or nobody sends it the update it waits for.
    if (c.threshold > floor - 1) {
        reason = c.mode == credit_mode::per_peer
                     ? "threshold must be at most window - 1"
                     : "threshold must be at most initial - 1 in shared-pool mode";
        return status::invalid;
    }
    if (c.threshold > credit_field_max) {
        reason = "threshold above what one message can return";
        return status::invalid;
    }
    if (c.mode == credit_mode::shared_pool) {
        if (c.grant_step == 0) {
            c.grant_step = c.threshold;
        }
        if (c.pool_size < c.initial) {
            reason = "shared pool smaller than one peer's initial credits";
            return status::invalid;
        }
    }
    return status::ok;
}

status credit_pool::init(const credit_config &config, const char **why) noexcept
{
    credit_config c = config;
    if (const status s = credit_config_resolve(c, why); s != status::ok) {
        return s;
    }
    if (peers_ != 0) {
        if (why != nullptr) {
            *why = "credit pool re-initialised while peers are attached";
        }
        return status::busy;
    }
    mode_ = c.mode;
    initial_ = c.initial;
    window_ = c.window;
    threshold_ = c.threshold;
    grant_step_ = c.mode == credit_mode::shared_pool ? c.grant_step : 0;
    total_ = c.mode == credit_mode::shared_pool ? c.pool_size : 0;
    free_ = total_;
    hungry_ = 0;
    return status::ok;
}

status credit_state::attach(credit_pool &pool) noexcept
{
    if (attached()) {
        return status::busy;
    }
    if (pool.mode_ == credit_mode::unconfigured) {
        return status::invalid;
    }
    // Both sides start from the protocol's initial grant without a handshake:
    // the peer may already have sent `initial` messages when we get here.
    send_credits_ = pool.initial_;
    recv_credits_ = pool.initial_;
    held_ = 0;
    threshold_ = pool.threshold_;
    initial_ = pool.initial_;
    if (pool.mode_ == credit_mode::per_peer) {
        window_ = pool.window_;
        // The window beyond the initial grant goes out with the first returns.
        returnable_ = static_cast<std::uint16_t>(pool.window_ - pool.initial_);
    } else {
        if (pool.free_ < pool.initial_) {
            return status::no_memory;
        }
        pool.free_ -= pool.initial_;
        window_ = pool.initial_;
        returnable_ = 0;
    }
    flags_ = flag_attached;
    ++pool.peers_;
    return status::ok;
}

void credit_state::detach(credit_pool &pool) noexcept
{
    if (!attached()) {
        return;
    }
    if (pool.mode_ == credit_mode::shared_pool) {
        pool.free_ += window_;
    }
    if (hungry()) {
        --pool.hungry_;
    }
    --pool.peers_;
    *this = credit_state{};
}

// The peer is close to running dry (we hold most of its window or it is in
// flight): extend its window from the pool, or queue it as hungry so that peers
// holding extras give them back on their next release.
void credit_state::grow(credit_pool &pool) noexcept
{
    const std::uint32_t room = static_cast<std::uint32_t>(pool.window_ - window_);
    const std::uint32_t k = std::min({pool.free_, std::uint32_t{pool.grant_step_}, room});
    if (k == 0) {
        if (!hungry()) {
            flags_ |= flag_hungry;
            ++pool.hungry_;
        }
        return;
    }
    pool.free_ -= k;
    window_ = static_cast<std::uint16_t>(window_ + k);
    // Granted like released credits: piggybacked, or an explicit update at the
    // threshold (grant_step defaults to the threshold, so one goes at once).
    returnable_ = static_cast<std::uint16_t>(returnable_ + k);
    if (hungry()) {
        flags_ &= static_cast<std::uint8_t>(~flag_hungry);
        --pool.hungry_;
    }
}

// Some peer waits for the pool. If it is this one, try again to take from the
// pool; otherwise give back what this peer holds beyond its initial grant and
// has not yet returned. Credits the peer already holds cannot be revoked; they
// come back here as it uses them.
void credit_state::rebalance(credit_pool &pool) noexcept
{
    if (hungry()) {
        if (pool.free_ != 0 && window_ < pool.window_) {
            grow(pool);
        }
        return;
    }
    const std::uint16_t excess = static_cast<std::uint16_t>(window_ - initial_);
    const std::uint16_t give = std::min(excess, returnable_);
    returnable_ = static_cast<std::uint16_t>(returnable_ - give);
    window_ = static_cast<std::uint16_t>(window_ - give);
    pool.free_ += give;
}

}  // namespace weft::proto
