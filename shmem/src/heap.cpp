// The symmetric heap's allocator and the memory-management routines
// (docs/shmem.md, "Symmetric heap").
//
// Every PE runs the same allocator over its own heap, and the routines are
// collective (every PE calls them in the same order with the same sizes), so
// an allocation has the same offset on every PE: that offset is what makes an
// address symmetric. First fit over an address-ordered free list, with
// neighbours merged on free; the bookkeeping lives outside the heap, so a
// stray write into symmetric memory cannot corrupt the allocator.

#include <cstring>
#include <map>
#include <mutex>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

namespace {

struct allocator {
    char *base = nullptr;
    std::size_t len = 0;
    std::map<std::size_t, std::size_t> free_blocks;  ///< offset -> bytes, address order
    std::map<std::size_t, std::size_t> used;         ///< offset -> bytes
};
allocator a;

constexpr std::size_t min_align = 16;  // malloc's guarantee (long double, 16-byte atomics)

}  // namespace

void heap_init(char *base, std::size_t len, std::size_t reserved)
{
    a.base = base;
    a.len = len;
    a.free_blocks.clear();
    a.used.clear();
    a.free_blocks.emplace(reserved, len - reserved);
}

void *heap_alloc(std::size_t len, std::size_t align)
{
    if (align < min_align) {
        align = min_align;
    }
    len = (len + min_align - 1) & ~(min_align - 1);
    for (auto it = a.free_blocks.begin(); it != a.free_blocks.end(); ++it) {
        const std::size_t off = it->first;
        const std::size_t size = it->second;
        const auto addr = reinterpret_cast<std::uintptr_t>(a.base) + off;
        const std::size_t pad = (align - addr % align) % align;
        if (size < pad || size - pad < len) {
            continue;
        }
        a.free_blocks.erase(it);
        if (pad != 0) {
            a.free_blocks.emplace(off, pad);
        }
        if (size - pad > len) {
            a.free_blocks.emplace(off + pad + len, size - pad - len);
        }
        a.used.emplace(off + pad, len);
        return a.base + off + pad;
    }
    return nullptr;
}

std::size_t heap_size_of(void *p)
{
    const auto it = a.used.find(static_cast<std::size_t>(static_cast<char *>(p) - a.base));
    return it == a.used.end() ? 0 : it->second;
}

void heap_free(void *p)
{
    const char *c = static_cast<char *>(p);
    if (c < a.base || c >= a.base + a.len) {
        fatal("shmem_free", "%p is not in the symmetric heap", p);
    }
    const auto off = static_cast<std::size_t>(c - a.base);
    const auto it = a.used.find(off);
    if (it == a.used.end()) {
        fatal("shmem_free", "%p was not returned by shmem_malloc (or was freed already)", p);
    }
    std::size_t start = off;
    std::size_t len = it->second;
    a.used.erase(it);
    // Merge with the free neighbours.
    auto next = a.free_blocks.lower_bound(start);
    if (next != a.free_blocks.end() && next->first == start + len) {
        len += next->second;
        next = a.free_blocks.erase(next);
    }
    if (next != a.free_blocks.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            len += prev->second;
            a.free_blocks.erase(prev);
        }
    }
    a.free_blocks.emplace(start, len);
}

namespace {

void *allocate(const char *routine, std::size_t len, std::size_t align)
{
    check_init(routine);
    void *p = nullptr;
    if (len != 0) {
        std::lock_guard<std::mutex> lock(g.ctl);
        p = heap_alloc(len, align);
    }
    if (p == nullptr && len != 0 && g.debug) {
        std::fprintf(stderr,
                     "OpenSHMEM warning on PE %d in %s: the symmetric heap has no %zu free bytes "
                     "(SHMEM_SYMMETRIC_SIZE is %zu)\n",
                     g.me, routine, len, g.heap_size);
    }
    shmem_barrier_all();  // collective: every PE has the memory on return
    return p;
}

}  // namespace

}  // namespace weft::shmem

using namespace weft::shmem;

extern "C" {

void *shmem_malloc(size_t size)
{
    return allocate("shmem_malloc", size, 0);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    // The hints ask for memory good for remote atomics or signals: all of the
    // heap is (node peers map it; other peers reach it through the NIC).
    (void)hints;
    return allocate("shmem_malloc_with_hints", size, 0);
}

void *shmem_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        check_init("shmem_calloc");
        fatal("shmem_calloc", "%zu elements of %zu bytes overflow size_t", count, size);
    }
    void *p = allocate("shmem_calloc", count * size, 0);
    if (p != nullptr) {
        std::memset(p, 0, count * size);
        shmem_barrier_all();  // zeroed everywhere before anyone writes into it
    }
    return p;
}

void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        check_init("shmem_align");
        fatal("shmem_align", "the alignment %zu is not a power of two", alignment);
    }
    return allocate("shmem_align", size, alignment);
}

void shmem_free(void *ptr)
{
    check_init("shmem_free");
    shmem_barrier_all();  // nobody uses it any more
    if (ptr != nullptr) {
        std::lock_guard<std::mutex> lock(g.ctl);
        heap_free(ptr);
    }
}

void *shmem_realloc(void *ptr, size_t size)
{
    if (ptr == nullptr) {
        return shmem_malloc(size);
    }
    check_init("shmem_realloc");
    if (size == 0) {
        shmem_free(ptr);
        return nullptr;
    }
    shmem_barrier_all();  // nobody uses the old block any more
    void *p = nullptr;
    {
        std::lock_guard<std::mutex> lock(g.ctl);
        const std::size_t old = heap_size_of(ptr);
        if (old == 0) {
            fatal("shmem_realloc", "%p was not returned by shmem_malloc", ptr);
        }
        p = heap_alloc(size, 0);
        if (p != nullptr) {
            std::memcpy(p, ptr, old < size ? old : size);
            heap_free(ptr);
        }
    }
    shmem_barrier_all();
    return p;
}

}  // extern "C"
