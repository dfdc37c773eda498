#pragma once
// weft::base::bufpool -- size-class buffers for the fast path, so that the protocol layer
// never calls malloc per message (unexpected payloads, queued copies of injected sends).
//
//   bufpool pool({.min_size = 256, .max_size = 1 << 20, .chunk_bytes = 64 << 10});
//   pooled_buffer b = pool.get(len);    // b.data == nullptr: no memory, or max_bytes reached
//   std::memcpy(b.data, payload, len);
//   ...
//   pool.put(b);
//
// Classes are the powers of two from min_size to max_size. get(n) takes the smallest class
// that holds n bytes; a request above max_size is a separate aligned_alloc (large_class),
// a cold path: max_size is meant to cover every size the owner copies per message.
//
// get() and put() are inline: a pop from / push onto the class's singly linked free list,
// whose link lives in the first bytes of each free buffer. A class grows by one chunk of
// chunk_bytes (at least one buffer) in an out-of-line cold path. Memory is only returned
// to the system when the pool is destroyed, and never moves between classes: a free buffer
// of one class does not satisfy a request for another.
//
// Not thread safe: the owner (the endpoint) serialises calls with its lock.
// Under AddressSanitizer, free buffers are poisoned: using a buffer after put() is reported.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/arch.hpp"
#include "base/mpool.hpp"  // detail::mpool_poison / mpool_unpoison

namespace weft::base {

/// Sizing of a bufpool. The constructor adjusts what it cannot use (see each field); the
/// values in effect are reported by bufpool::min_size() and bufpool::max_size().
struct bufpool_options {
    /// Smallest class in bytes: rounded up to a power of two, at least 64 (one cache line,
    /// so that every buffer is cache-line aligned and no two share a line).
    std::size_t min_size = 256;
    /// Largest class in bytes: rounded up to a power of two, at least min_size, at most
    /// bufpool::size_limit. Larger requests are separate allocations.
    std::size_t max_size = 1 << 20;
    /// Bytes allocated each time a class grows, rounded down to whole buffers but never
    /// fewer than one buffer (so 0 means one buffer per chunk). At most bufpool::size_limit.
    std::size_t chunk_bytes = 64 << 10;
    /// Most buffer bytes the classes may hold together (0: no limit); past it, get() of a
    /// class with no free buffer returns nullptr. Large allocations are not counted.
    std::size_t max_bytes = 0;
};

/// A buffer from a bufpool: the pointer and its class (so put() needs no lookup).
struct pooled_buffer {
    void *data = nullptr;  ///< at least the requested bytes, 64-byte aligned; nullptr: none
    std::uint8_t cls = 0;  ///< class index, or bufpool::large_class
};

/// Size-class buffer pool (see the top of this file). Not thread safe.
class bufpool {
  public:
    /// The class of a buffer above max_size (a separate allocation).
    static constexpr std::uint8_t large_class = 0xff;
    /// Upper bound of max_size and chunk_bytes: keeps every size computation free of overflow.
    static constexpr std::size_t size_limit = std::size_t{1}
                                              << (std::numeric_limits<std::size_t>::digits - 2);

    /// A pool with no memory yet; options are adjusted as bufpool_options describes (logged
    /// at debug level when they are).
    explicit bufpool(bufpool_options o = {}) noexcept;
    /// Frees every chunk. Buffers still out are the owner's bug: an assertion in debug
    /// builds; in release builds class buffers become invalid and large ones leak.
    ~bufpool();

    bufpool(const bufpool &) = delete;
    bufpool &operator=(const bufpool &) = delete;

    /// A buffer of at least n bytes (n == 0 gets a min_size buffer), 64-byte aligned, with
    /// indeterminate contents. Above max_size it is a separate allocation (cls ==
    /// large_class). data == nullptr when max_bytes is reached or memory ran out (logged).
    [[nodiscard, gnu::always_inline]] pooled_buffer get(std::size_t n) noexcept
    {
        // Class = ceil(log2(n)) - min_shift_, with every n <= min_size in class 0: the OR
        // folds the small sizes onto min_size - 1. n == 0 wraps to all ones, which lands
        // past the last class like a large request; get_cold() sorts it out. min_mask_
        // already has bit 0 set; the `| 1` tells the compiler so, which saves bit_width()
        // its test for zero.
        const std::size_t m = (n - 1) | min_mask_ | 1;
        const unsigned cls = static_cast<unsigned>(std::bit_width(m)) - min_shift_;
        if (cls >= nclasses_) [[unlikely]] {
            return get_cold(n);
        }
        return get_class(cls);
    }

    /// Give back a buffer from get() of this pool (with the cls get() returned).
    /// data == nullptr: nothing to do.
    [[gnu::always_inline]] void put(pooled_buffer b) noexcept
    {
        if (b.cls >= nclasses_ || b.data == nullptr) [[unlikely]] {
            put_cold(b);
            return;
        }
        // Written while the buffer is still unpoisoned: a second put() of the same buffer
        // writes to poisoned memory and is reported.
        auto *f = static_cast<free_buffer *>(b.data);
        f->next = free_[b.cls];
        free_[b.cls] = f;
        --in_use_;
        detail::mpool_poison(f, class_size_unchecked(b.cls));
    }

    /// Bytes usable in a buffer of class cls; 0 for large_class (the pool does not record
    /// the size of a large allocation) and for a class this pool does not have.
    [[nodiscard]] std::size_t class_size(std::uint8_t cls) const noexcept
    {
        return cls < nclasses_ ? class_size_unchecked(cls) : 0;
    }

    /// Smallest class in bytes, after adjustment of the options.
    [[nodiscard]] std::size_t min_size() const noexcept { return std::size_t{1} << min_shift_; }
    /// Largest class in bytes, after adjustment of the options.
    [[nodiscard]] std::size_t max_size() const noexcept
    {
        return class_size_unchecked(nclasses_ - 1);
    }
    /// Class buffers handed out by get() and not yet put() (large ones are not counted).
    [[nodiscard]] std::size_t in_use() const noexcept { return in_use_; }
    /// Buffer bytes in chunks, in use or free (chunk headers are not counted; max_bytes
    /// limits this number).
    [[nodiscard]] std::size_t bytes_held() const noexcept { return bytes_held_; }
    /// Chunks allocated so far, over all classes.
    [[nodiscard]] std::size_t chunks() const noexcept { return nchunks_; }
    /// Large allocations handed out by get() and not yet put().
    [[nodiscard]] std::size_t large_in_use() const noexcept { return large_in_use_; }

  private:
    // A free buffer holds only the link to the next free buffer of its class.
    struct free_buffer {
        free_buffer *next;
    };

    // At the start of each chunk, padded to a cache line so the buffers after it are
    // aligned like the chunk.
    struct chunk_header {
        chunk_header *next;
        std::size_t bytes;
    };
    static constexpr std::size_t buffers_offset = cache_line_size;
    static_assert(sizeof(chunk_header) <= buffers_offset);

    // Classes from 64 bytes (2^6) to size_limit.
    static constexpr unsigned min_shift_floor = 6;
    static constexpr unsigned max_classes =
        std::numeric_limits<std::size_t>::digits - 2 - min_shift_floor + 1;
    static_assert(max_classes < large_class, "a class index must fit cls and differ from large");

    [[nodiscard, gnu::always_inline]] std::size_t class_size_unchecked(unsigned cls) const noexcept
    {
        return std::size_t{1} << (min_shift_ + cls);
    }

    [[nodiscard, gnu::always_inline]] pooled_buffer get_class(unsigned cls) noexcept
    {
        free_buffer *f = free_[cls];
        if (f == nullptr) [[unlikely]] {
            return grow_and_get(cls);  // a tail call: get() itself needs no stack frame
        }
        detail::mpool_unpoison(f, class_size_unchecked(cls));
        free_[cls] = f->next;
        ++in_use_;
        return {f, static_cast<std::uint8_t>(cls)};
    }

    // n == 0 (class 0) and requests above max_size.
    [[gnu::cold, gnu::noinline]] pooled_buffer get_cold(std::size_t n) noexcept;
    [[gnu::cold, gnu::noinline]] pooled_buffer grow_and_get(unsigned cls) noexcept;
    // Large buffers, nullptr, and classes this pool does not have (an owner's bug: logged).
    [[gnu::cold, gnu::noinline]] void put_cold(pooled_buffer b) noexcept;
    // Allocates one more chunk for class cls and links its buffers onto the free list;
    // false when max_bytes leaves no room for a buffer or allocation failed.
    [[gnu::cold]] bool grow(unsigned cls) noexcept;

    // What get() and put() touch first, together.
    std::size_t min_mask_;  // min_size - 1
    unsigned min_shift_;    // log2(min_size)
    unsigned nclasses_;
    std::size_t in_use_ = 0;
    std::array<free_buffer *, max_classes> free_{};

    std::size_t chunk_bytes_;
    std::size_t max_bytes_;
    std::size_t bytes_held_ = 0;
    std::size_t nchunks_ = 0;
    std::size_t large_in_use_ = 0;
    chunk_header *chunks_ = nullptr;
};

}  // namespace weft::base
