// Counter triggers: the cold paths (arm, disarm, set, firing).
//
// Firing. One thread at a time holds the firer role (firing_, under lock_). The
// firer loops: under the lock it reads the value, unlinks the head if it is due,
// drops the lock and calls it; it gives up the role, under the lock, only in a
// section that found nothing due. Any other caller that finds something due
// while the role is taken (another thread, or a callback calling add() or arm()
// on its own counter) returns at once and leaves the work to the firer. So a
// callback never nests inside another one: chains of any length run in constant
// stack, and the callbacks of one counter never run concurrently. Since the
// firer always takes the list's head, the triggers it fires are in threshold
// order, equal thresholds in arm order (arm() inserts after equal thresholds).
// A trigger armed below one that has already fired fires later, naturally.
//
// No lost trigger. add() and set() do not take the lock: they change value_
// and then compare it with next_due_; the lock holders change the list and
// next_due_ and then read value_. That is a store-load (Dekker) pattern, which
// needs more than acquire/release unless both sides' accesses to value_ are
// read-modify-writes: all RMWs of value_ are totally ordered (its modification
// order), and an acquire RMW that comes later synchronises with a release one
// that came before it (C++20 release sequences consist of the later RMWs).
// So every value_ access here is an RMW (add: fetch_add; set: exchange; the lock
// holders: fetch_add(0)), all acq_rel.
//
// Call a "checking section" a critical section that reads value_ with that RMW
// and then, if the head is due, fires it or (role taken) leaves it to the
// firer; the firer's every section, and arm()'s, are checking sections. Every
// store to next_due_ is under the lock and sets it to the head's threshold, so
// between sections next_due_ <= every armed threshold (disarm and firing only
// remove triggers, which keeps that true). Take an add() A whose RMW leaves
// value v, and a trigger T armed at that moment with T.threshold <= v:
//  (a) If some checking section's RMW follows A's in value_'s modification
//      order, its read includes A's increment, so it sees T due (if T is still
//      armed): it fires T, or the firer does, since the firer gives up its role
//      only in a checking section that is later still and found nothing due.
//  (b) Otherwise every checking section's RMW precedes A's; A's acquire RMW
//      synchronises with the last one's release, so A's load of next_due_ reads
//      a store no older than those made before that RMW. T's arm() section is
//      one of those sections, and each such store was the head's threshold at a
//      moment T was armed (<= T.threshold <= v), unless T was removed by then
//      (fired or disarmed). So A calls fire_due(), which becomes the firer (a
//      checking section: back to (a)) or finds the role taken, and then the
//      firer's next section is a case (a) section.
// A trigger armed after A is checked by arm()'s own section. And the firer never
// misses a nested add(): the add's increment precedes its fire_due() section,
// which precedes the firer's next section in lock order.
//
// set() lowering the value races with a concurrent add() by nature: a threshold
// the add reached may or may not fire, depending on whether the firer reads
// value_ before or after the set. Nothing that fired is undone.

#include "proto/counter.hpp"

namespace weft::proto {

counter::~counter()
{
    for (trigger *t = head_; t != nullptr;) {
        trigger *next = t->next;
        t->next = nullptr;
        t->armed = false;
        t = next;
    }
}

void counter::publish_head() noexcept
{
    // relaxed: the checking section's acq_rel RMW of value_ that follows (or the
    // lock) is what publishes it to add() (see "No lost trigger").
    next_due_.store(head_ != nullptr ? head_->threshold : none_due, std::memory_order_relaxed);
}

void counter::set(std::uint64_t v) noexcept
{
    // An RMW, not a store, for the same reason as add(): the lock holders' reads
    // must be ordered against it, and a plain store would also end the release
    // sequence add()'s acquire relies on.
    value_.exchange(v, std::memory_order_acq_rel);
    if (v >= next_due_.load(std::memory_order_relaxed)) {
        fire_due();
    }
}

void counter::set_error(std::uint64_t v) noexcept
{
    errors_.store(v, std::memory_order_release);  // pairs with errors()'s acquire
}

void counter::fire_due() noexcept
{
    lock_.lock();
    if (firing_) {
        // The firer takes the lock again before it stops, and then reads value_
        // after our increment: it will fire whatever we saw due.
        lock_.unlock();
        return;
    }
    firing_ = true;
    fire_locked();
}

void counter::fire_locked() noexcept
{
    for (;;) {
        // An RMW, acq_rel: see "No lost trigger"; the acquire also gives the
        // callback what preceded the increments that made it due.
        const std::uint64_t v = value_.fetch_add(0, std::memory_order_acq_rel);
        trigger *t = head_;
        if (t == nullptr || t->threshold > v) {
            firing_ = false;
            lock_.unlock();
            return;
        }
        head_ = t->next;
        if (head_ == nullptr) {
            tail_ = nullptr;
        }
        publish_head();
        count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        t->next = nullptr;
        t->armed = false;  // from here disarm(t) returns false
        void (*fire)(trigger *) = t->fire;
        lock_.unlock();
        fire(t);  // t belongs to its owner again: not touched after this
        lock_.lock();
    }
}

void counter::arm(trigger *t) noexcept
{
    t->next = nullptr;
    lock_.lock();
    t->armed = true;
    if (tail_ == nullptr) {
        head_ = tail_ = t;
    } else if (tail_->threshold <= t->threshold) {
        // The common case, a schedule armed in order: O(1).
        tail_->next = t;
        tail_ = t;
    } else if (t->threshold < head_->threshold) {
        t->next = head_;
        head_ = t;
    } else {
        // After the last trigger with threshold <= t's (equal thresholds fire in
        // arm order). The tail's threshold is greater, so the walk stops before it.
        trigger *p = head_;
        while (p->next->threshold <= t->threshold) {
            p = p->next;
        }
        t->next = p->next;
        p->next = t;
    }
    count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    publish_head();
    // A checking section: the store to next_due_ above comes before this RMW.
    const std::uint64_t v = value_.fetch_add(0, std::memory_order_acq_rel);
    if (head_->threshold > v || firing_) {
        // Nothing due, or the firer's next section (after ours) fires it.
        lock_.unlock();
        return;
    }
    firing_ = true;
    fire_locked();
}

bool counter::disarm(trigger *t) noexcept
{
    base::scoped_guard g(lock_);
    if (!t->armed) {
        return false;
    }
    // t is armed here, so it is on this list (arming it on another counter and
    // disarming it here is a bug of the caller's). O(armed).
    trigger *prev = nullptr;
    for (trigger *p = head_; p != t; p = p->next) {
        prev = p;
    }
    if (prev == nullptr) {
        head_ = t->next;
        // Only the head sets next_due_; raising it is safe (see "No lost trigger").
        publish_head();
    } else {
        prev->next = t->next;
    }
    if (tail_ == t) {
        tail_ = prev;
    }
    count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    t->next = nullptr;
    t->armed = false;
    return true;
}

}  // namespace weft::proto
