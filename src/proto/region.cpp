// The region table of the active-message fallback (region.hpp).

#include "proto/region.hpp"

#include <new>

namespace weft::proto {

namespace {

// The key: generation in the high 32 bits, slot index in the low 32.
constexpr std::uint64_t key_of(std::uint32_t index, std::uint64_t gen) noexcept
{
    return gen << 32 | index;
}

}  // namespace

region_table::~region_table()
{
    for (auto &c : chunks_) {
        delete c.load(std::memory_order_relaxed);  // no checks run any more
    }
}

const region_table::slot *region_table::find(std::uint32_t index) const noexcept
{
    const std::size_t c = index / chunk_slots;
    if (c >= max_chunks) {
        return nullptr;
    }
    // Acquire: pairs with the release that published the chunk, so its slots
    // are seen initialised.
    const chunk *ch = chunks_[c].load(std::memory_order_acquire);
    return ch == nullptr ? nullptr : &ch->slots[index % chunk_slots];
}

status region_table::add(const void *buf, std::size_t len, unsigned access, std::uint64_t &key)
{
    std::lock_guard g(mutex_);
    std::uint32_t index;
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        if (next_ == chunk_slots * max_chunks) {
            return status::no_memory;
        }
        index = next_++;
        const std::size_t c = index / chunk_slots;
        if (chunks_[c].load(std::memory_order_relaxed) == nullptr) {
            auto *fresh = new (std::nothrow) chunk;
            if (fresh == nullptr) {
                --next_;
                return status::no_memory;
            }
            // Release: a checker that finds the chunk sees its slots initialised.
            chunks_[c].store(fresh, std::memory_order_release);
        }
    }
    slot &s = const_cast<slot &>(*find(index));
    // Relaxed field stores: the release store of the word below publishes them.
    s.base.store(reinterpret_cast<std::uint64_t>(buf), std::memory_order_relaxed);
    s.len.store(len, std::memory_order_relaxed);
    s.access.store(access, std::memory_order_relaxed);
    const std::uint64_t gen = (s.word.load(std::memory_order_relaxed) >> 1) + 1;
    // Release: whoever acquires this word sees the fields above.
    s.word.store(gen << 1 | 1, std::memory_order_release);
    key = key_of(index, gen & 0xffffffffu);
    return status::ok;
}

void region_table::remove(std::uint64_t key) noexcept
{
    std::lock_guard g(mutex_);
    const auto index = static_cast<std::uint32_t>(key);
    const slot *found = find(index);
    if (found == nullptr || index >= next_) {
        return;
    }
    slot &s = const_cast<slot &>(*found);
    const std::uint64_t w = s.word.load(std::memory_order_relaxed);
    if ((w & 1) == 0 || ((w >> 1) & 0xffffffffu) != key >> 32) {
        return;  // not live, or another registration's key
    }
    // seq_cst: a check that read the word live before this store and reads its
    // fields after it sees the word changed when it reads it again.
    s.word.store(w & ~std::uint64_t{1}, std::memory_order_seq_cst);
    free_.push_back(index);
}

bool region_table::check(std::uint64_t key, std::uint64_t addr, std::size_t len,
                         unsigned access) const noexcept
{
    const slot *s = find(static_cast<std::uint32_t>(key));
    if (s == nullptr) {
        return false;
    }
    // Acquire: the fields read below are at least those the word published.
    const std::uint64_t w1 = s->word.load(std::memory_order_acquire);
    if ((w1 & 1) == 0 || ((w1 >> 1) & 0xffffffffu) != key >> 32) {
        return false;
    }
    const std::uint64_t base = s->base.load(std::memory_order_relaxed);
    const std::uint64_t size = s->len.load(std::memory_order_relaxed);
    const unsigned acc = s->access.load(std::memory_order_relaxed);
    // Acquire fence then the second read (seqlock): if the region changed while
    // we read its fields, the word differs.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s->word.load(std::memory_order_relaxed) != w1) {
        return false;
    }
    return (acc & access) == access && addr >= base && addr - base <= size &&
           len <= size - (addr - base);
}

}  // namespace weft::proto
