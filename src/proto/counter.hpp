#pragma once
// A completion counter with triggers: the basis of triggered operations (an
// operation posted to start when a counter reaches a threshold, as libfabric's
// fi_trigger and Portals triggered operations), so that a collective schedule
// runs from progress alone.
//
// Every increment goes through counter::add(). When nothing is armed it costs
// one atomic read-modify-write and one load of the next due threshold
// (UINT64_MAX: nothing armed) and a predictable branch; only an increment that
// reaches that threshold enters the out-of-line firing path.
//
// Rules (the argument is in counter.cpp):
//  - A trigger fires exactly once, outside the counter's lock, once value() >=
//    its threshold. The triggers due together fire in threshold order, equal
//    thresholds in arm order. One thread at a time fires (the "firer"), so two
//    callbacks of one counter never run concurrently.
//  - A callback may call add(), set(), arm() and disarm() on the same counter:
//    a nested call never fires by itself, it leaves the work to the firer, which
//    loops until nothing is due. Chains of any length run in constant stack.
//  - The callback sees every memory effect sequenced before the add() or set()
//    that made it due (the increment is a release, the firer's read an acquire).
//  - Values are 64-bit and never wrap in practice (2^64 completions at 10^9 per
//    second take 584 years); add() does not check for overflow.
//  - No allocation: the trigger list is intrusive, the caller owns the triggers.
//    Arming in non-decreasing threshold order (a schedule) is O(1); arming below
//    the last armed threshold, and disarm(), walk the list (O(armed)).
//
//   struct my_op : weft::proto::trigger { ... };   // the callback static_casts back
//   op.threshold = 4;
//   op.fire = [](weft::proto::trigger *t) { start(static_cast<my_op *>(t)); };
//   cntr.arm(&op);
//   ... progress calls cntr.add(1) per completion; the 4th one starts op ...

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/lock.hpp"

namespace weft::proto {

/// One armed trigger. Owned by the caller; linked into a counter while armed.
///
/// The caller sets threshold and fire before counter::arm() and must not touch
/// the trigger until it has fired (fire was called) or counter::disarm() returned
/// true. Once fire is called the counter never touches the trigger again: the
/// callback may re-arm it, on this counter or another, or release it.
struct trigger {
    trigger *next = nullptr;                ///< the counter's list link (the counter's while armed)
    std::uint64_t threshold = 0;            ///< fires once value >= threshold
    void (*fire)(trigger *self) = nullptr;  ///< called once, outside the counter's lock
    bool armed = false;  ///< set by the counter (read only by the owner after disarm)
};

/// A success and an error count with a threshold-ordered list of triggers on the
/// successes. Thread safe: add, set, arm and disarm may run concurrently from any
/// threads (a progress thread completing operations, the application calling
/// weft_cntr_add, a callback).
class counter {
  public:
    counter() = default;
    counter(const counter &) = delete;
    counter &operator=(const counter &) = delete;
    /// Disarms whatever is still armed (those triggers never fire). No other
    /// thread may be using the counter.
    ~counter();

    /// Successes += n; fires every trigger that became due (from inside this
    /// call, unless another call is already firing: then that one fires them).
    [[gnu::always_inline]] void add(std::uint64_t n) noexcept
    {
        // acq_rel. Release: whoever reads the value (value(), the firer) sees what
        // preceded this increment. Acquire: if the last lock holder that checked
        // value_ did so before us, we synchronise with it, so the load below sees
        // next_due_ at least as it left it (counter.cpp, "No lost trigger").
        const std::uint64_t v = value_.fetch_add(n, std::memory_order_acq_rel) + n;
        // relaxed: ordered by the acquire above.
        if (v >= next_due_.load(std::memory_order_relaxed)) [[unlikely]] {
            fire_due();
        }
    }

    /// value = v; fires every trigger with threshold <= v. Setting a lower value
    /// does not un-fire anything.
    void set(std::uint64_t v) noexcept;

    /// Errors += n. Errors have no triggers.
    [[gnu::always_inline]] void add_error(std::uint64_t n) noexcept
    {
        errors_.fetch_add(n, std::memory_order_release);  // pairs with errors()'s acquire
    }

    /// errors = v.
    void set_error(std::uint64_t v) noexcept;

    /// The success count; acquire: the effects that preceded the counted
    /// completions are visible.
    [[nodiscard]] std::uint64_t value() const noexcept
    {
        return value_.load(std::memory_order_acquire);  // pairs with add()/set()'s release
    }

    /// The error count (acquire, like value()).
    [[nodiscard]] std::uint64_t errors() const noexcept
    {
        return errors_.load(std::memory_order_acquire);  // pairs with add_error()'s release
    }

    /// Arm t (t->threshold and t->fire set by the caller): it fires once value()
    /// >= t->threshold. If that is already so it fires before arm() returns,
    /// unless this counter is firing already (arm() called from a callback, or
    /// another thread firing): then the current firer fires it, before it stops.
    /// O(1) when t->threshold is >= every armed threshold, else O(armed).
    void arm(trigger *t) noexcept;

    /// Disarm t if it is still armed. True: removed, it did not fire and never
    /// will. False: it already fired or is firing (its callback may still be
    /// running). O(armed). Never fires anything.
    [[nodiscard]] bool disarm(trigger *t) noexcept;

    /// How many triggers are armed (a snapshot).
    [[nodiscard]] std::size_t armed_count() const noexcept
    {
        return count_.load(std::memory_order_relaxed);  // a statistic: orders nothing
    }

  private:
    static constexpr std::uint64_t none_due = std::numeric_limits<std::uint64_t>::max();

    /// Some trigger may be due: become the firer, or leave it to the current one.
    [[gnu::cold, gnu::noinline]] void fire_due() noexcept;
    /// With lock_ held and the firer role taken: fire until nothing is due, then
    /// give up the role. Returns with lock_ released.
    void fire_locked() noexcept;
    /// With lock_ held: next_due_ = the head's threshold (none_due when empty).
    void publish_head() noexcept;

    // The fast path's line: written by every add(), read by every add().
    alignas(base::cache_line_size) std::atomic<std::uint64_t> value_{0};
    /// The smallest armed threshold, none_due when nothing is armed. Written under
    /// lock_ only; read without it by add() and set().
    std::atomic<std::uint64_t> next_due_{none_due};
    std::atomic<std::uint64_t> errors_{0};

    base::spin_lock lock_;  // a cache line of its own

    // Under lock_.
    /// Sorted by threshold, equal thresholds in arm order.
    alignas(base::cache_line_size) trigger *head_ = nullptr;
    trigger *tail_ = nullptr;            ///< O(1) append of a schedule
    std::atomic<std::size_t> count_{0};  ///< written under lock_, read by armed_count()
    bool firing_ = false;                ///< some thread holds the firer role
};
static_assert(sizeof(counter) <= 3 * base::cache_line_size);

}  // namespace weft::proto
