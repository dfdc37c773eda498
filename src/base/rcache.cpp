// The registration cache: see rcache.hpp.
//
// Locks and their order: lock_ (this cache) may be held while taking the
// monitor's events lock (inside memory_monitor::read_events); the monitor's
// reader thread takes only the events lock. So the only cycle to fear is a
// thread that holds the events lock and waits for a thread blocked in munmap()
// -- and read_events() only copies into a stack array while holding it.
//
// Under lock_ we free memory (std::map nodes; region objects are deleted
// later, outside it), and free() may munmap/madvise a watched range. This
// thread then waits for the reader, which needs only the events lock (not
// held): it proceeds. The registrar (ibv_reg_mr/ibv_dereg_mr: slow, and may
// itself allocate and free) is always called with no lock held.
//
// Why a registration can never be stale when get() returns it from the cache:
//   1. A region enters by_start_ only if memory_monitor::watch() succeeded on
//      its range before the registrar was called. From then on, any munmap,
//      madvise(DONTNEED) or mremap of the range is recorded by the monitor
//      before that system call returns (memory_monitor.hpp).
//   2. From the moment it is created (before watch()) until it enters
//      by_start_, the region is on pending_, and every drain of events by any
//      thread of this cache marks an overlapping pending region invalid_. The
//      drain just before insertion and the insertion happen under one hold of
//      lock_, and all drains of this cache's cursor happen under lock_, so no
//      event recorded after the region became pending escapes: it is seen
//      either while the region is pending (invalid_: not cached) or after it
//      is in by_start_ (retired).
//   3. Every get() drains the events under lock_ before looking up. If the
//      application's munmap() returned before get() started, the event is
//      recorded and this drain retires the region.
// Events recorded before the region became pending concern the memory as it
// was before this registration, and the registrar pins the pages as they are
// after.
//
// The one assumption: the caller's buffer stays mapped while its get() runs.
// watch() registers the mappings present in the range at that moment (holes
// are skipped), so a buffer mapped only after watch() -- by another thread,
// during the get() -- would not be watched. Merged regions need no such
// assumption: if their memory changed since they were cached, the event is
// recorded after the region became pending (see 2) or before it (then the
// drain retired them before the merge).

#include "base/rcache.hpp"

#include <algorithm>
#include <cstdint>
#include <new>
#include <unistd.h>

#include "base/arch.hpp"
#include "base/log.hpp"

namespace weft::base {

namespace {

/// Events copied per hold of the events lock (a stack array: nothing may be
/// allocated while it is held).
constexpr std::size_t event_batch = 64;

[[nodiscard]] constexpr bool overlaps(std::uintptr_t a_start, std::uintptr_t a_end,
                                      std::uintptr_t b_start, std::uintptr_t b_end) noexcept
{
    return a_start < b_end && b_start < a_end;
}

}  // namespace

void rcache::region_list::push_front(region *r) noexcept
{
    r->prev_ = nullptr;
    r->next_ = head;
    if (head != nullptr) {
        head->prev_ = r;
    } else {
        tail = r;
    }
    head = r;
    ++count;
}

void rcache::region_list::remove(region *r) noexcept
{
    if (r->prev_ != nullptr) {
        r->prev_->next_ = r->next_;
    } else {
        head = r->next_;
    }
    if (r->next_ != nullptr) {
        r->next_->prev_ = r->prev_;
    } else {
        tail = r->prev_;
    }
    r->prev_ = nullptr;
    r->next_ = nullptr;
    --count;
}

rcache::rcache(registrar &r, const rcache_config &cfg, std::uintptr_t page_size) noexcept
    : registrar_(r), cfg_(cfg), page_size_(page_size)
{
}

result<std::unique_ptr<rcache>> rcache::create(registrar &r, const rcache_config &cfg)
{
    const long page = ::sysconf(_SC_PAGESIZE);
    std::unique_ptr<rcache> c(
        new (std::nothrow) rcache(r, cfg, page > 0 ? static_cast<std::uintptr_t>(page) : 4096));
    if (c == nullptr) {
        return status::no_memory;
    }
    // Without a monitor the cache cannot know when memory changes: it stays
    // uncached for its lifetime. start() logged why, once per process.
    if (cfg.enable && memory_monitor::start() == status::ok) {
        c->cursor_ = memory_monitor::subscribe();
        c->caching_ = true;
    }
    return result<std::unique_ptr<rcache>>(std::move(c));
}

rcache::~rcache()
{
    // No other thread may use the cache any more: no lock needed.
    std::size_t referenced = 0;
    for (const region *r = all_; r != nullptr; r = r->all_next_) {
        referenced += r->refcount_ > 0 ? 1 : 0;
    }
    if (referenced > 0) {
        WEFT_LOG(base, warn,
                 "registration cache destroyed with %zu registration(s) still referenced; "
                 "deregistering them anyway",
                 referenced);
    }
    region *r = all_;
    while (r != nullptr) {
        region *next = r->all_next_;
        if (!r->pending_) {  // a pending region (get() racing with destruction) has no handle yet
            registrar_.dereg(r->handle_);
        }
        delete r;
        r = next;
    }
}

void rcache::link_all_locked(region *r) noexcept
{
    r->all_prev_ = nullptr;
    r->all_next_ = all_;
    if (all_ != nullptr) {
        all_->all_prev_ = r;
    }
    all_ = r;
}

void rcache::unlink_all_locked(region *r) noexcept
{
    if (r->all_prev_ != nullptr) {
        r->all_prev_->all_next_ = r->all_next_;
    } else {
        all_ = r->all_next_;
    }
    if (r->all_next_ != nullptr) {
        r->all_next_->all_prev_ = r->all_prev_;
    }
    r->all_prev_ = nullptr;
    r->all_next_ = nullptr;
}

void rcache::destroy(region *dead) noexcept
{
    while (dead != nullptr) {
        region *next = dead->next_;
        registrar_.dereg(dead->handle_);
        delete dead;
        dead = next;
    }
}

/// `r` has just left by_start_. Unreferenced: it goes on `dead`, to be
/// deregistered once lock_ is released. Referenced: its holder's put() does it.
void rcache::retire_locked(region *r, region *&dead) noexcept
{
    r->in_map_ = false;
    if (r->refcount_ == 0) {
        lru_.remove(r);
        lru_bytes_ -= r->length();
        unlink_all_locked(r);
        r->next_ = dead;
        dead = r;
    }
}

void rcache::invalidate_locked(address_range range, region *&dead) noexcept
{
    auto it = by_start_.upper_bound(range.start);
    if (it != by_start_.begin() && std::prev(it)->second->end_ > range.start) {
        --it;
    }
    while (it != by_start_.end() && it->first < range.end) {
        region *r = it->second;
        it = by_start_.erase(it);
        ++stats_.invalidations;
        retire_locked(r, dead);
    }
    for (region *p = pending_.head; p != nullptr; p = p->next_) {
        if (!p->invalid_ && overlaps(p->base_, p->end_, range.start, range.end)) {
            p->invalid_ = true;
            ++stats_.invalidations;
        }
    }
}

void rcache::retire_all_locked(region *&dead) noexcept
{
    ++stats_.flushes;
    for (auto &entry : by_start_) {
        ++stats_.invalidations;
        retire_locked(entry.second, dead);
    }
    by_start_.clear();
    for (region *p = pending_.head; p != nullptr; p = p->next_) {
        p->invalid_ = true;
    }
}

void rcache::drain_events_locked(region *&dead) noexcept
{
    address_range events[event_batch];
    for (;;) {
        bool lost = false;
        const std::size_t n = memory_monitor::read_events(cursor_, events, event_batch, lost);
        if (lost) {
            // The ring overflowed, the process forked, or the monitor stopped:
            // any watched range may have changed.
            retire_all_locked(dead);
            continue;  // the cursor now is at the end of the stream: read what follows
        }
        for (std::size_t i = 0; i < n; ++i) {
            invalidate_locked(events[i], dead);
        }
        if (n < event_batch) {
            return;
        }
    }
}

void rcache::evict_locked(region *&dead) noexcept
{
    while (lru_.tail != nullptr && (lru_.count > cfg_.max_regions || lru_bytes_ > cfg_.max_bytes)) {
        region *r = lru_.tail;
        by_start_.erase(r->base_);
        ++stats_.evictions;
        retire_locked(r, dead);
    }
}

status rcache::get_uncached(std::uintptr_t start, std::uintptr_t end, region *&out)
{
    region *r = new (std::nothrow) region;
    if (r == nullptr) {
        return status::no_memory;
    }
    r->base_ = start;
    r->end_ = end;
    r->refcount_ = 1;
    const status s = registrar_.reg(reinterpret_cast<void *>(start), end - start, r->handle_);
    if (s != status::ok) {
        delete r;
        return s;
    }
    {
        scoped_guard g(lock_);
        link_all_locked(r);
        ++stats_.misses;
        ++stats_.uncached;
    }
    out = r;
    return status::ok;
}

status rcache::get(const void *addr, std::size_t len, region *&out)
{
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    // Rounding a + len up to a page must not wrap.
    if (len == 0 || a > UINTPTR_MAX - page_size_ || len > UINTPTR_MAX - page_size_ - a) {
        return status::invalid;
    }
    const std::uintptr_t start = align_down(a, page_size_);
    const std::uintptr_t end = align_up(a + len, page_size_);
    if (!caching_) {
        return get_uncached(start, end, out);
    }

    region *dead = nullptr;
    region *r = nullptr;
    bool hit = false;
    {
        scoped_guard g(lock_);
        drain_events_locked(dead);
        auto it = by_start_.upper_bound(start);
        if (it != by_start_.begin()) {
            region *c = std::prev(it)->second;  // the only region that can contain `start`
            if (c->end_ >= end) {
                if (c->refcount_++ == 0) {
                    lru_.remove(c);
                    lru_bytes_ -= c->length();
                }
                ++stats_.hits;
                out = c;
                hit = true;
            } else if (c->end_ > start) {
                --it;  // overlaps the request: merged below
            }
        }
        if (!hit) {
            ++stats_.misses;
            r = new (std::nothrow) region;
            if (r != nullptr) {
                // Register the union with every overlapping region, which keeps
                // cached regions disjoint; those leave the cache now.
                std::uintptr_t union_start = start;
                std::uintptr_t union_end = end;
                while (it != by_start_.end() && it->first < end) {
                    region *o = it->second;
                    union_start = std::min(union_start, o->base_);
                    union_end = std::max(union_end, o->end_);
                    it = by_start_.erase(it);
                    ++stats_.merged;
                    retire_locked(o, dead);
                }
                r->base_ = union_start;
                r->end_ = union_end;
                r->refcount_ = 1;
                r->pending_ = true;  // from here on, events overlapping it are noted (see top)
                pending_.push_front(r);
                link_all_locked(r);
            }
        }
    }
    destroy(dead);
    if (hit) {
        return status::ok;
    }
    if (r == nullptr) {
        return status::no_memory;
    }
    const status s = register_region(r, start, end);
    if (s == status::ok) {
        out = r;
    }
    return s;
}

/// Register the pending region `r` (the union of [req_start, req_end) and the
/// regions it merged), then cache it if nothing changed meanwhile.
status rcache::register_region(region *r, std::uintptr_t req_start, std::uintptr_t req_end)
{
    // r's range is written only by this thread (other threads read it under
    // lock_ while r is pending), so it can be read here without the lock.
    std::uintptr_t reg_start = r->base_;
    std::uintptr_t reg_end = r->end_;
    // Watch before registering (see the top of this file): any change to the
    // memory after watch() returned is recorded and marks r invalid_.
    const bool watched = memory_monitor::watch(reg_start, reg_end) == status::ok;
    status s = registrar_.reg(reinterpret_cast<void *>(reg_start), reg_end - reg_start, r->handle_);
    if (s != status::ok && (reg_start != req_start || reg_end != req_end)) {
        // The merged regions' memory may have been unmapped since they were
        // cached (then r is invalid_ anyway); the caller vouches only for its
        // own range. The union's watch covers it.
        reg_start = req_start;
        reg_end = req_end;
        s = registrar_.reg(reinterpret_cast<void *>(reg_start), reg_end - reg_start, r->handle_);
    }
    region *dead = nullptr;
    {
        scoped_guard g(lock_);
        // The re-check: events recorded while we registered (by this drain or
        // by another thread's, while r was pending) have set r->invalid_.
        drain_events_locked(dead);
        pending_.remove(r);
        r->pending_ = false;
        if (s != status::ok) {
            unlink_all_locked(r);
        } else if (watched && !r->invalid_) {
            r->base_ = reg_start;
            r->end_ = reg_end;
            // Concurrent misses may have cached overlapping regions since we
            // merged: the newest registration wins, keeping regions disjoint.
            auto it = by_start_.upper_bound(reg_start);
            if (it != by_start_.begin() && std::prev(it)->second->end_ > reg_start) {
                --it;
            }
            while (it != by_start_.end() && it->first < reg_end) {
                region *o = it->second;
                it = by_start_.erase(it);
                ++stats_.merged;
                retire_locked(o, dead);
            }
            by_start_.emplace(reg_start, r);
            r->in_map_ = true;
        } else {
            // Not watchable, or its memory changed while we registered: the
            // caller gets it (its get() raced with that change), nobody else
            // will, and its put() deregisters it.
            r->base_ = reg_start;
            r->end_ = reg_end;
            ++stats_.uncached;
        }
    }
    destroy(dead);
    if (s != status::ok) {
        delete r;
    }
    return s;
}

void rcache::put(region *r) noexcept
{
    region *dead = nullptr;
    {
        scoped_guard g(lock_);
        if (--r->refcount_ == 0) {
            if (r->in_map_) {
                lru_.push_front(r);
                lru_bytes_ += r->length();
                evict_locked(dead);
            } else {
                unlink_all_locked(r);
                r->next_ = dead;
                dead = r;
            }
        }
    }
    destroy(dead);
}

void rcache::process_events() noexcept
{
    if (!caching_) {
        return;
    }
    region *dead = nullptr;
    {
        scoped_guard g(lock_);
        drain_events_locked(dead);
    }
    destroy(dead);
}

rcache_stats rcache::stats() const
{
    scoped_guard g(lock_);
    rcache_stats s = stats_;
    s.regions = by_start_.size();
    s.unreferenced = lru_.count;
    s.unreferenced_bytes = lru_bytes_;
    return s;
}

}  // namespace weft::base
