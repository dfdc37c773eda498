#pragma once
// weft::base::rcache -- a memory-registration cache with invalidation.
//
//   auto c = rcache::create(my_registrar, {});            // one per protection domain
//   rcache::region *r;
//   if (c.value()->get(buf, len, r) == status::ok) {
//       post_rdma_read(..., r->lkey(), r->rkey());
//       ...                                               // until the transfer completed
//       c.value()->put(r);
//   }
//
// get() returns a registration covering [addr, addr + len), registering the
// page-aligned range on a miss; put() releases it. Unreferenced registrations
// stay cached (bounded by an LRU) until the memory behind them changes.
//
// Correctness: a cached registration pins the physical pages of the moment.
// If the application frees or remaps its buffer and later gets other pages at
// the same virtual addresses, reusing the old registration would move data to
// or from the old pages. The cache watches every range it caches with the
// memory monitor (memory_monitor.hpp) and, at the start of every get(),
// retires each cached region that overlaps a range the monitor reported as
// unmapped, madvised away or remapped. A region the monitor cannot watch (a
// file mapping, ...) is never cached. Without a monitor (userfaultfd
// unavailable) or with `enable = false` the cache registers on every get() and
// deregisters on put(): always correct, only slower.
//
// A retired region leaves the lookup structure at once, so no later get()
// returns it; a holder keeps using it (it remains registered) until its put(),
// which deregisters it.
//
// Lookup is O(log n) in the number of cached regions, which never overlap: a
// miss registers the union of the request and every cached region overlapping
// it, and retires those.
//
// Thread-safe. Not for the small-message fast path: get() takes a mutex and
// the monitor's events lock. The registrar is called without any lock held.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "base/lock.hpp"
#include "base/memory_monitor.hpp"
#include "base/status.hpp"

namespace weft::base {

/// What a registration produced: the registrar's opaque handle and keys.
struct reg_handle {
    void *mr = nullptr;      ///< e.g. the ibv_mr
    std::uint32_t lkey = 0;  ///< local key
    std::uint32_t rkey = 0;  ///< remote key
};

/// What the cache registers with: ibv_reg_mr in the verbs transport, a fake in tests.
class registrar {
  public:
    virtual ~registrar() = default;
    /// Register [addr, addr + len) (page-aligned by the cache) and fill `out`.
    /// Called without any cache lock held, possibly from several threads at once.
    [[nodiscard]] virtual status reg(void *addr, std::size_t len, reg_handle &out) = 0;
    /// Deregister what reg() produced. Called without any cache lock held.
    virtual void dereg(reg_handle &h) noexcept = 0;
};

/// Settings of one cache.
struct rcache_config {
    bool enable = true;              ///< false: never cache (register per get, deregister on put)
    std::size_t max_regions = 4096;  ///< unreferenced registrations kept (LRU beyond)
    std::size_t max_bytes = 1ull << 32;  ///< bytes of unreferenced registrations kept
};

/// Counters of one cache (a snapshot).
struct rcache_stats {
    std::uint64_t hits = 0;           ///< get() served by a cached registration
    std::uint64_t misses = 0;         ///< get() that registered
    std::uint64_t invalidations = 0;  ///< regions retired because their memory changed
    std::uint64_t evictions = 0;      ///< unreferenced regions deregistered by the LRU limits
    std::uint64_t uncached = 0;       ///< registrations not cached (disabled, no monitor, range
                                      ///< not watchable, memory changed while registering)
    std::uint64_t merged = 0;         ///< regions retired because a newer one covers them
    std::uint64_t flushes = 0;        ///< times every region was retired (events lost, fork)
    std::uint64_t regions = 0;        ///< regions in the cache now
    std::uint64_t unreferenced = 0;   ///< of which unreferenced (in the LRU)
    std::uint64_t unreferenced_bytes = 0;  ///< their bytes
};

class rcache {
  public:
    class region;

    /// A cache registering through `r`, which must outlive it. Caching needs
    /// the memory monitor; without one (logged once at info level) the cache
    /// works uncached.
    [[nodiscard]] static result<std::unique_ptr<rcache>> create(registrar &r,
                                                                const rcache_config &cfg);

    /// A registration covering [addr, addr + len), referenced until put().
    /// Errors: invalid (len == 0 or the range wraps), no_memory, or what the
    /// registrar returned. Thread-safe.
    [[nodiscard]] status get(const void *addr, std::size_t len, region *&out);

    /// Release a registration from get(). Thread-safe.
    void put(region *r) noexcept;

    /// Retire the regions whose memory changed since the last get(), now
    /// (get() does this anyway): deregisters the unreferenced ones, which
    /// releases their pinned pages early. Optional; e.g. from a progress loop.
    void process_events() noexcept;

    /// A snapshot of the counters.
    [[nodiscard]] rcache_stats stats() const;

    /// True when this cache caches (enabled, and the monitor was running at creation).
    [[nodiscard]] bool caching() const noexcept { return caching_; }

    /// Deregisters everything. Regions still referenced are a caller bug: logged
    /// as a warning, and deregistered anyway.
    ~rcache();

    rcache(const rcache &) = delete;
    rcache &operator=(const rcache &) = delete;

  private:
    rcache(registrar &r, const rcache_config &cfg, std::uintptr_t page_size) noexcept;

    /// An intrusive doubly linked list of regions through region::prev_/next_
    /// (a region is on at most one: the LRU or the pending list).
    struct region_list {
        region *head = nullptr;
        region *tail = nullptr;
        std::size_t count = 0;
        void push_front(region *r) noexcept;
        void remove(region *r) noexcept;
    };

    // Everything below "_locked" runs with lock_ held. Regions to deregister are
    // collected on `dead` (a singly linked list through next_) and destroyed by
    // destroy() after the lock is released.
    void drain_events_locked(region *&dead) noexcept;
    void invalidate_locked(address_range range, region *&dead) noexcept;
    void retire_all_locked(region *&dead) noexcept;
    void retire_locked(region *r, region *&dead) noexcept;
    void evict_locked(region *&dead) noexcept;
    void link_all_locked(region *r) noexcept;
    void unlink_all_locked(region *r) noexcept;
    [[nodiscard]] status get_uncached(std::uintptr_t start, std::uintptr_t end, region *&out);
    [[nodiscard]] status register_region(region *r, std::uintptr_t req_start,
                                         std::uintptr_t req_end);
    void destroy(region *dead) noexcept;

    registrar &registrar_;
    const rcache_config cfg_;
    const std::uintptr_t page_size_;
    bool caching_ = false;

    mutable mutex_lock lock_;                      // guards everything below
    std::map<std::uintptr_t, region *> by_start_;  ///< cached regions by base; never overlapping
    region_list lru_;      ///< cached and unreferenced, most recently used first
    region_list pending_;  ///< being registered (not cached yet)
    std::size_t lru_bytes_ = 0;
    region *all_ = nullptr;  ///< every live region (through all_prev_/all_next_), for ~rcache
    memory_monitor::cursor cursor_;
    rcache_stats stats_;
};

/// One registration. Its range and keys are immutable while it is referenced.
class rcache::region {
  public:
    /// First byte registered (page-aligned).
    [[nodiscard]] std::uintptr_t base() const noexcept { return base_; }
    /// Bytes registered (a multiple of the page size).
    [[nodiscard]] std::size_t length() const noexcept { return end_ - base_; }
    /// What the registrar produced.
    [[nodiscard]] const reg_handle &handle() const noexcept { return handle_; }
    [[nodiscard]] std::uint32_t lkey() const noexcept { return handle_.lkey; }
    [[nodiscard]] std::uint32_t rkey() const noexcept { return handle_.rkey; }

  private:
    friend class rcache;

    std::uintptr_t base_ = 0;
    std::uintptr_t end_ = 0;
    reg_handle handle_;
    // The rest is guarded by the cache lock.
    std::uint32_t refcount_ = 0;
    bool in_map_ = false;     ///< in by_start_ (cached; returned by get())
    bool pending_ = false;    ///< on the pending list (being registered)
    bool invalid_ = false;    ///< memory changed while pending: must not be cached
    region *prev_ = nullptr;  ///< LRU or pending list
    region *next_ = nullptr;  ///< LRU or pending list; the dead list once unlinked
    region *all_prev_ = nullptr;
    region *all_next_ = nullptr;
};

}  // namespace weft::base
