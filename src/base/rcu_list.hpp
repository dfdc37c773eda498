#pragma once
// rcu_list<T>: a small set of T* that readers walk without a lock and without
// blocking, while rare writers (an endpoint being enabled or closed, binding to
// or unbinding from a CQ or counter) replace it. remove(p) returns only once no
// reader can still be using p, so the caller may then destroy p.
//
//   rcu_list<weft_ep> eps;
//   unsigned n = eps.for_each([](weft_ep *ep) { return ep->ops->progress(ep); });
//   // or, to hold the protection across several statements:
//   auto g = eps.read();
//   if (weft_ep *only = g.single()) { ... } else { for (weft_ep *ep : g) { ... } }
//
// Design (SRCU-like: a phase bit and two reader counters)
// --------------------------------------------------------
// The list is an immutable heap block {size, capacity, items[]} reached through
// list_. A writer (serialised by write_lock_) builds a new block, publishes it
// in list_, then waits for a grace period and only then frees or reuses the old
// block; the removed element is no longer in any block a new reader can find.
//
//   reader enter:  for (;;) { p = phase_;                     (relaxed: a guess)
//                             readers_[p] += 1;               (RC1, seq_cst)
//                             if (phase_ == p) break;         (RC2, seq_cst)
//                             readers_[p] -= 1; }             (undo, relaxed)
//   reader walk:   b = list_;                                 (RL, acquire)  ... use b, items
//   reader leave:  readers_[p] -= 1;                          (RD, release)
//
//   writer:        list_ = new block;                         (WL, release)
//                  q = phase_; phase_ = q ^ 1;                (WF, seq_cst "flip")
//                  while (readers_[q] != 0) yield();          (WC, seq_cst)
//                  free old block (the next writer reuses it as its spare)
//
// RC1/RC2 against WF/WC is the store-buffering pattern (each side writes one
// location, then reads the other's), so all four are seq_cst and take part in
// the single total order S. Standalone fences would do the same job, but
// ThreadSanitizer does not model atomic_thread_fence; seq_cst operations cost
// the same here (x86: the RMW is a locked instruction anyway and a seq_cst load
// is a plain load; aarch64: LDADDAL and LDAR).
//
// Why a reader R that may use a block B is counted in the counter that B's
// reclaiming writer waits for. Let R's validating load RC2 read phase p.
//  1. The writer W that replaces B (stores the next block after B in list_) has
//     its flip WF after RC2 in S. Otherwise RC2 reads W's flip or a later one
//     (a seq_cst load that reads a value older than a store preceding it in S
//     would be coherence-ordered before that store, which contradicts S); every
//     flip is a release and each writer's WL is sequenced before its flip (and
//     a later writer's flip comes after it through write_lock_), so RL, an
//     acquire sequenced after RC2, happens after W's WL and cannot read B.
//  2. Let W1 be the first writer whose flip comes after RC2 in S (W itself or
//     an earlier writer). RC2 read the last flip before it in S, and no flip
//     lies between RC2 and W1's, so W1 reads q == p (writers read phase_ under
//     write_lock_, after the previous writer's flip) and waits on readers_[p].
//  3. RC1 <S RC2 <S WF(W1) <S WC(W1), so each WC load reads RC1's increment or
//     a later value of readers_[p] (again by coherence against S). Every reader
//     increments before it decrements, so the counter stays >= 1 until R's RD;
//     W1 leaves its loop only after reading RD or a later RMW. RD is a release
//     and every modification of the counter is an RMW (they continue RD's
//     release sequence), so RD synchronises with W1's acquiring load: all of
//     R's uses of B and of its elements happen before W1 returns, hence before
//     W frees B and before the caller of W's remove() destroys an element
//     (W == W1, or W takes write_lock_ after W1 released it).
//  The same argument covers a removed element p: it is only in blocks published
//  before the remove's new block, and each of those is replaced at the latest
//  by that remove.
//
// Why the writer's wait is bounded. Readers whose RC1 on readers_[q] comes
// after the flip in S validate with RC2 after the flip too, read q ^ 1 (there
// is no other flip until this writer finishes), undo at once and retry on the
// other counter; a thread's next guess cannot go back to q (read-read
// coherence), so each reader thread adds at most one such transient increment.
// What the writer waits for is therefore the readers that entered before the
// flip, each finishing a walk of a finite list: a new stream of readers never
// holds it up. (Readers only ever yield to each other through the retry, so the
// read side is lock-free; the writer is blocking by design.)
//
// Costs and rules
//  - Read side: two atomic RMWs on one cache line shared by all readers of this
//    list (it holds list_, phase_ and the counters), two loads, no allocation.
//  - add() and remove() block until current readers finish: never call them
//    from inside fn or while the calling thread holds a read_guard of the same
//    list (self-deadlock). They are control-path operations (a pthread mutex).
//  - add() allocates with new(std::nothrow) and returns status::no_memory on
//    failure; nothing in this header throws. remove() never allocates: it
//    writes into the spare block left by the previous write (invariant below),
//    so closing an endpoint cannot fail.
//  - The destructor requires that no reader or writer is active.

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

#include "base/arch.hpp"
#include "base/lock.hpp"
#include "base/status.hpp"

namespace weft::base {

template <class T>
class rcu_list {
    struct block;

  public:
    /// Reader protection for one walk: while the guard lives, the block it
    /// loaded and every element in it stay valid. Lock-free; does not allocate.
    class [[nodiscard]] read_guard {
      public:
        explicit read_guard(const rcu_list &list) noexcept
            : owner_(list),
              phase_(list.enter()),
              // acquire: pairs with the writer's release store of list_ (the block's
              // contents and the elements are visible); see the ordering argument, 1.
              block_(list.list_.load(std::memory_order_acquire))
        {
        }
        ~read_guard() { owner_.leave(phase_); }
        read_guard(const read_guard &) = delete;
        read_guard &operator=(const read_guard &) = delete;

        [[nodiscard]] T *const *begin() const noexcept { return block_->items(); }
        [[nodiscard]] T *const *end() const noexcept { return block_->items() + block_->size; }
        [[nodiscard]] std::size_t size() const noexcept { return block_->size; }
        [[nodiscard]] bool empty() const noexcept { return block_->size == 0; }
        /// The only element when there is exactly one, else nullptr (a fast-path hint).
        [[nodiscard]] T *single() const noexcept
        {
            return block_->size == 1 ? block_->items()[0] : nullptr;
        }

      private:
        const rcu_list &owner_;
        unsigned phase_;
        const block *block_;
    };

    rcu_list() noexcept = default;
    ~rcu_list()
    {
        release(list_.load(std::memory_order_relaxed));
        release(spare_);
    }
    rcu_list(const rcu_list &) = delete;
    rcu_list &operator=(const rcu_list &) = delete;

    /// Reader: protection for a walk of the current list (`for (T *x : list.read())`).
    [[nodiscard]] read_guard read() const noexcept { return read_guard(*this); }

    /// Reader: calls fn(T *) for every element of the current list and returns the
    /// sum of fn's results (fn returns unsigned, or void: then 0). fn may run
    /// concurrently with add/remove in other threads; it must not call add/remove
    /// on this list, and must not throw.
    template <class Fn>
    unsigned for_each(Fn &&fn) const noexcept
    {
        const read_guard g(*this);
        unsigned n = 0;
        for (T *x : g) {
            if constexpr (std::is_void_v<std::invoke_result_t<Fn &, T *>>) {
                fn(x);
            } else {
                n += fn(x);
            }
        }
        return n;
    }

    /// Writer: adds p unless it is present already (then does nothing). Waits
    /// for current readers before returning. status::no_memory if the new block
    /// cannot be allocated (the list is unchanged).
    [[nodiscard]] status add(T *p) noexcept
    {
        const scoped_guard g(write_lock_);
        // relaxed: only writers store list_, and they hold write_lock_.
        block *old = list_.load(std::memory_order_relaxed);
        if (old->find(p) != nullptr) {
            return status::ok;
        }
        const std::size_t n = old->size;
        block *next = nullptr;
        if (spare_ != nullptr && spare_->capacity >= n + 1) {
            next = std::exchange(spare_, nullptr);
        } else {
            next = allocate(n + 1);
            if (next == nullptr) [[unlikely]] {
                return status::no_memory;
            }
        }
        T **items = next->items();
        for (std::size_t i = 0; i < n; ++i) {
            items[i] = old->items()[i];
        }
        items[n] = p;
        next->size = n + 1;
        replace(old, next);
        return status::ok;
    }

    /// Writer: removes p (nothing if absent). Returns after every reader that
    /// might still see p has finished: the caller may then destroy p.
    void remove(T *p) noexcept
    {
        const scoped_guard g(write_lock_);
        // relaxed: only writers store list_, and they hold write_lock_.
        block *old = list_.load(std::memory_order_relaxed);
        if (old->find(p) == nullptr) {
            return;
        }
        const std::size_t n = old->size;
        block *next = &empty_;
        if (n > 1) {
            // Invariant: after every write the spare holds at least size - 1 items.
            assert(spare_ != nullptr && spare_->capacity >= n - 1);
            next = std::exchange(spare_, nullptr);
            T **items = next->items();
            std::size_t k = 0;
            for (T *x : *old) {
                if (x != p) {
                    items[k++] = x;
                }
            }
            next->size = k;
        }
        replace(old, next);
    }

    /// Number of elements; exact for writers, approximate (may be stale) for readers.
    [[nodiscard]] std::size_t size() const noexcept
    {
        // relaxed: a statistic; readers that need the elements use read().
        return size_.load(std::memory_order_relaxed);
    }

  private:
    struct block {
        std::size_t size;
        std::size_t capacity;

        // The items follow the header in the same allocation (operator new creates
        // the T* array implicitly); the header keeps them pointer-aligned.
        [[nodiscard]] T **items() noexcept { return reinterpret_cast<T **>(this + 1); }
        [[nodiscard]] T *const *items() const noexcept
        {
            return reinterpret_cast<T *const *>(this + 1);
        }
        [[nodiscard]] T *const *begin() const noexcept { return items(); }
        [[nodiscard]] T *const *end() const noexcept { return items() + size; }
        [[nodiscard]] T *const *find(const T *p) const noexcept
        {
            for (T *const *it = begin(); it != end(); ++it) {
                if (*it == p) {
                    return it;
                }
            }
            return nullptr;
        }
    };
    static_assert(sizeof(block) % alignof(T *) == 0);

    [[nodiscard]] static block *allocate(std::size_t capacity) noexcept
    {
        void *mem = ::operator new(sizeof(block) + capacity * sizeof(T *), std::nothrow);
        return mem == nullptr ? nullptr : ::new (mem) block{0, capacity};
    }

    static void release(block *b) noexcept
    {
        if (b != nullptr && b != &empty_) {
            ::operator delete(b);
        }
    }

    [[nodiscard]] unsigned enter() const noexcept
    {
        for (;;) {
            // relaxed: only a guess of the phase, validated below.
            const unsigned p = phase_.load(std::memory_order_relaxed);
            // seq_cst: RC1; with RC2 it forms the store-buffering pair against the
            // writer's flip and counter load (the argument at the top of the file).
            readers_[p].fetch_add(1, std::memory_order_seq_cst);
            // seq_cst: RC2; if it still reads p, any writer flipping after it in S
            // sees our increment. Also an acquire of the flip (argument, step 1).
            if (phase_.load(std::memory_order_seq_cst) == p) [[likely]] {
                return p;
            }
            // relaxed: undoes RC1; nothing was read under that increment.
            readers_[p].fetch_sub(1, std::memory_order_relaxed);
        }
    }

    void leave(unsigned p) const noexcept
    {
        // release: RD; the walk (block and elements) happens before a writer that
        // reads this decrement or a later one frees the block or an element.
        readers_[p].fetch_sub(1, std::memory_order_release);
    }

    // Publishes next in place of old, waits until no reader can hold old, then
    // keeps old as the spare (or frees it). Called with write_lock_ held.
    void replace(block *old, block *next) noexcept
    {
        // relaxed: a statistic, see size().
        size_.store(next->size, std::memory_order_relaxed);
        // release: WL; next's header and items are visible to a reader that loads it.
        list_.store(next, std::memory_order_release);
        if (old == &empty_) {
            return;  // nothing to reclaim, so no grace period to wait for
        }
        synchronize();
        if (spare_ == nullptr || old->capacity >= spare_->capacity) {
            release(std::exchange(spare_, old));
        } else {
            release(old);
        }
    }

    // Waits for every reader that entered before the flip (the grace period).
    void synchronize() noexcept
    {
        // relaxed: only writers store phase_, and they hold write_lock_.
        const unsigned q = phase_.load(std::memory_order_relaxed);
        // seq_cst: WF, the flip; ordered in S before the counter loads below (the
        // store-buffering pair with RC1/RC2), and a release of WL for step 1.
        phase_.store(q ^ 1U, std::memory_order_seq_cst);
        // seq_cst: WC; sees every increment of a reader that validated before the
        // flip, and acquires its release decrement RD (argument, step 3).
        while (readers_[q].load(std::memory_order_seq_cst) != 0) {
            std::this_thread::yield();
        }
    }

    // The empty list: a shared, never-freed block, so readers never test for null.
    static inline block empty_{0, 0};

    // Everything a reader touches, on a cache line of its own.
    alignas(cache_line_size) std::atomic<block *> list_{&empty_};
    std::atomic<unsigned> phase_{0};
    mutable std::atomic<std::uint64_t> readers_[2]{};
    std::atomic<std::size_t> size_{0};

    // Writers only.
    alignas(cache_line_size) mutex_lock write_lock_;
    block *spare_ = nullptr;  ///< a retired block kept for the next write
};

}  // namespace weft::base
