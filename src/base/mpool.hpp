#pragma once
// weft::base::mpool<T> -- a per-endpoint object pool for fast-path requests.
//
//   mpool<send_request> pool({.chunk = 64, .max_chunk = 1024, .max_objects = 4096});
//   send_request *r = pool.get();     // nullptr when max_objects are in use (or no memory)
//   ...
//   pool.put(r);
//
// get() and put() are inline: a pop from / push onto a singly linked free list.
// Memory is allocated in chunks by an out-of-line cold grow(); chunk sizes start
// at `chunk` objects and double up to `max_chunk`. Memory is only returned to the
// system when the pool is destroyed.
//
// Object lifetime: get() constructs a T by default-initialisation (`new (p) T`:
// members without initialisers are indeterminate, as with `new T`), and put()
// destroys it (trivial for trivially destructible T). A free slot holds the
// free-list link instead of a T.
//
// Not thread safe: the owner (the endpoint) serialises calls with its lock.
// Under AddressSanitizer, free slots are poisoned: using an object after put()
// is reported.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

#include "base/arch.hpp"
#include "base/log.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace weft::base {

namespace detail {
// Mark memory as not to be touched (free pool slots) / usable again.
[[gnu::always_inline]] inline void mpool_poison(const volatile void *p, std::size_t n) noexcept
{
#if defined(__SANITIZE_ADDRESS__)
    __asan_poison_memory_region(p, n);
#else
    (void)p;
    (void)n;
#endif
}
[[gnu::always_inline]] inline void mpool_unpoison(const volatile void *p, std::size_t n) noexcept
{
#if defined(__SANITIZE_ADDRESS__)
    __asan_unpoison_memory_region(p, n);
#else
    (void)p;
    (void)n;
#endif
}
}  // namespace detail

/// Sizing of an mpool.
struct mpool_options {
    std::size_t chunk = 64;        ///< objects in the first chunk (at least 1)
    std::size_t max_chunk = 1024;  ///< chunks double up to this many objects
    std::size_t max_objects = 0;   ///< get() returns nullptr beyond this many; 0: no limit
};

template <typename T>
class mpool {
    static_assert(std::is_default_constructible_v<T>, "mpool<T> constructs T on get()");
    static_assert(!std::is_array_v<T>);

  public:
    explicit mpool(mpool_options o = {}) noexcept
        : next_chunk_(o.chunk != 0 ? o.chunk : 1),
          max_chunk_(o.max_chunk >= next_chunk_ ? o.max_chunk : next_chunk_),
          max_objects_(o.max_objects)
    {
    }

    mpool(const mpool &) = delete;
    mpool &operator=(const mpool &) = delete;

    ~mpool()
    {
        if (in_use_ != 0) {
            // Their destructors do not run: the owner should have put() them back.
            WEFT_LOG(base, debug, "mpool destroyed with %zu objects in use", in_use_);
        }
        while (chunks_ != nullptr) {
            chunk_header *c = chunks_;
            chunks_ = c->next;
            detail::mpool_unpoison(c, c->bytes);
            ::operator delete (c, std::align_val_t{chunk_align});
        }
    }

    /// A default-initialised T, or nullptr when max_objects are in use or memory
    /// ran out (logged).
    [[nodiscard, gnu::always_inline]] T *get() noexcept
    {
        slot *s = free_;
        if (s == nullptr) [[unlikely]] {
            return grow_and_get();  // a tail call: get() itself needs no stack frame
        }
        detail::mpool_unpoison(s, sizeof(slot));
        free_ = s->next;
        ++in_use_;
        return ::new (static_cast<void *>(s->storage)) T;
    }

    /// Give back an object from get() of this pool (destroys it).
    [[gnu::always_inline]] void put(T *obj) noexcept
    {
        obj->~T();
        // The storage is the first (and only) member of the slot union.
        slot *s = reinterpret_cast<slot *>(obj);
        s->next = free_;
        free_ = s;
        --in_use_;
        detail::mpool_poison(s, sizeof(slot));
    }

    /// Objects handed out by get() and not yet put().
    [[nodiscard]] std::size_t in_use() const noexcept { return in_use_; }
    /// Objects allocated so far (in use + free).
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
    /// Chunks allocated so far.
    [[nodiscard]] std::size_t chunks() const noexcept { return nchunks_; }

  private:
    union slot {
        slot *next;
        alignas(T) unsigned char storage[sizeof(T)];
    };

    // At the start of each chunk; the slots follow at slots_offset.
    struct chunk_header {
        chunk_header *next;
        std::size_t bytes;
    };

    // Chunks are cache-line aligned; a T that asks for more gets it.
    static constexpr std::size_t chunk_align = alignof(slot) > cache_line_size ? alignof(slot)
                                                                               : cache_line_size;
    static constexpr std::size_t slots_offset =
        align_up(sizeof(chunk_header),
                 alignof(slot) > alignof(chunk_header) ? alignof(slot) : alignof(chunk_header));

    [[gnu::cold, gnu::noinline]] T *grow_and_get() noexcept { return grow() ? get() : nullptr; }

    // Allocates the next chunk and links its slots onto the free list; false
    // when the object limit is reached or allocation failed.
    [[gnu::cold]] bool grow() noexcept
    {
        std::size_t n = next_chunk_;
        if (max_objects_ != 0) {
            if (capacity_ >= max_objects_) {
                return false;
            }
            n = n < max_objects_ - capacity_ ? n : max_objects_ - capacity_;
        }
        const std::size_t bytes = slots_offset + n * sizeof(slot);
        void *mem = ::operator new (bytes, std::align_val_t{chunk_align}, std::nothrow);
        if (mem == nullptr) {
            WEFT_LOG(base, error, "mpool: cannot allocate %zu bytes for %zu objects", bytes, n);
            return false;
        }
        auto *c = static_cast<chunk_header *>(mem);
        c->next = chunks_;
        c->bytes = bytes;
        chunks_ = c;
        slot *slots = reinterpret_cast<slot *>(static_cast<unsigned char *>(mem) + slots_offset);
        // Linked in address order, so consecutive get()s walk memory forwards.
        for (std::size_t i = 0; i + 1 < n; ++i) {
            slots[i].next = &slots[i + 1];
        }
        slots[n - 1].next = free_;
        free_ = slots;
        detail::mpool_poison(slots, n * sizeof(slot));
        capacity_ += n;
        ++nchunks_;
        if (next_chunk_ < max_chunk_) {
            next_chunk_ = 2 * next_chunk_ < max_chunk_ ? 2 * next_chunk_ : max_chunk_;
        }
        return true;
    }

    slot *free_ = nullptr;
    std::size_t in_use_ = 0;
    std::size_t capacity_ = 0;
    std::size_t nchunks_ = 0;
    chunk_header *chunks_ = nullptr;
    std::size_t next_chunk_;
    std::size_t max_chunk_;
    std::size_t max_objects_;
};

}  // namespace weft::base
