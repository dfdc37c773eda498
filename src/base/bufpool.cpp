// weft::base::bufpool: set-up, tear-down and the cold paths (see bufpool.hpp).

#include "base/bufpool.hpp"

#include <cassert>
#include <cstdlib>
#include <new>

#include "base/arch.hpp"
#include "base/log.hpp"

namespace weft::base {

namespace {

// A power of two in [lo, bufpool::size_limit], at least v when v is within that range.
std::size_t pow2_within(std::size_t v, std::size_t lo) noexcept
{
    if (v <= lo) {
        return lo;
    }
    if (v >= bufpool::size_limit) {
        return bufpool::size_limit;
    }
    return std::bit_ceil(v);
}

}  // namespace

bufpool::bufpool(bufpool_options o) noexcept
{
    const std::size_t min = pow2_within(o.min_size, std::size_t{1} << min_shift_floor);
    const std::size_t max = pow2_within(o.max_size, min);
    chunk_bytes_ = o.chunk_bytes < size_limit ? o.chunk_bytes : size_limit;
    max_bytes_ = o.max_bytes;
    min_mask_ = min - 1;
    min_shift_ = static_cast<unsigned>(std::countr_zero(min));
    nclasses_ = static_cast<unsigned>(std::countr_zero(max)) - min_shift_ + 1;
    if (min != o.min_size || max != o.max_size || chunk_bytes_ != o.chunk_bytes) {
        // Not a warning: options usually come from a config table, where the power-of-two
        // rounding is documented.
        WEFT_LOG(base, debug,
                 "bufpool: min_size %zu -> %zu, max_size %zu -> %zu, chunk_bytes %zu -> %zu",
                 o.min_size, min, o.max_size, max, o.chunk_bytes, chunk_bytes_);
    }
}

bufpool::~bufpool()
{
    // Freeing a buffer the owner still uses, or leaking a large one, is the owner's bug.
    assert(in_use_ == 0 && large_in_use_ == 0);
    if (in_use_ != 0 || large_in_use_ != 0) {
        WEFT_LOG(base, debug, "bufpool destroyed with %zu buffers and %zu large ones in use",
                 in_use_, large_in_use_);
    }
    while (chunks_ != nullptr) {
        chunk_header *c = chunks_;
        chunks_ = c->next;
        detail::mpool_unpoison(c, c->bytes);
        ::operator delete (c, std::align_val_t{cache_line_size});
    }
}

pooled_buffer bufpool::get_cold(std::size_t n) noexcept
{
    if (n == 0) {
        return get_class(0);
    }
    // aligned_alloc rather than malloc: every buffer of the pool is cache-line aligned, and
    // the size must be a multiple of the alignment.
    if (n > std::numeric_limits<std::size_t>::max() - (cache_line_size - 1)) {
        WEFT_LOG(base, error, "bufpool: cannot allocate %zu bytes", n);
        return {nullptr, large_class};
    }
    void *p = std::aligned_alloc(cache_line_size, align_up(n, cache_line_size));
    if (p == nullptr) {
        WEFT_LOG(base, error, "bufpool: cannot allocate %zu bytes", n);
        return {nullptr, large_class};
    }
    ++large_in_use_;
    return {p, large_class};
}

pooled_buffer bufpool::grow_and_get(unsigned cls) noexcept
{
    if (!grow(cls)) {
        return {nullptr, static_cast<std::uint8_t>(cls)};
    }
    return get_class(cls);
}

void bufpool::put_cold(pooled_buffer b) noexcept
{
    if (b.data == nullptr) {
        return;
    }
    if (b.cls == large_class) {
        std::free(b.data);
        --large_in_use_;
        return;
    }
    // Pushing it onto a free list could hand one buffer out twice later; leaking it is safer.
    WEFT_LOG(base, error, "bufpool: put() of %p with class %u, which this pool does not have",
             b.data, static_cast<unsigned>(b.cls));
}

bool bufpool::grow(unsigned cls) noexcept
{
    const std::size_t size = class_size_unchecked(cls);
    std::size_t n = chunk_bytes_ / size;
    if (n == 0) {
        n = 1;
    }
    if (max_bytes_ != 0) {
        // bytes_held_ never exceeds max_bytes_, so the subtraction does not wrap.
        const std::size_t room = (max_bytes_ - bytes_held_) / size;
        if (room == 0) {
            return false;
        }
        n = n < room ? n : room;
    }
    // n * size <= max(chunk_bytes_, size) <= size_limit: no overflow.
    const std::size_t buffer_bytes = n * size;
    const std::size_t bytes = buffers_offset + buffer_bytes;
    void *mem = ::operator new (bytes, std::align_val_t{cache_line_size}, std::nothrow);
    if (mem == nullptr) {
        WEFT_LOG(base, error, "bufpool: cannot allocate %zu bytes for %zu buffers of %zu", bytes, n,
                 size);
        return false;
    }
    auto *c = static_cast<chunk_header *>(mem);
    c->next = chunks_;
    c->bytes = bytes;
    chunks_ = c;
    unsigned char *first = static_cast<unsigned char *>(mem) + buffers_offset;
    // Linked in address order, so consecutive get()s walk memory forwards.
    for (std::size_t i = 0; i < n; ++i) {
        auto *f = reinterpret_cast<free_buffer *>(first + i * size);
        f->next = i + 1 < n ? reinterpret_cast<free_buffer *>(first + (i + 1) * size) : free_[cls];
    }
    free_[cls] = reinterpret_cast<free_buffer *>(first);
    detail::mpool_poison(first, buffer_bytes);
    bytes_held_ += buffer_bytes;
    ++nchunks_;
    return true;
}

}  // namespace weft::base
