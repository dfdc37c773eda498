#pragma once
// A table of objects addressed by an id that travels on the wire (rendezvous
// request ids, remote operation ids) or through a transport (operation
// cookies): the index plus a generation, so a stale or forged id is rejected
// instead of followed.

#include <cstdint>
#include <vector>

namespace weft::proto {

template <typename T>
class id_table {
  public:
    /// A new id for `p` (never 0: generations start at 1).
    [[nodiscard]] std::uint64_t add(T *p)
    {
        std::uint32_t i;
        if (!free_.empty()) {
            i = free_.back();
            free_.pop_back();
        } else {
            i = static_cast<std::uint32_t>(slots_.size());
            slots_.push_back({});
        }
        slots_[i].ptr = p;
        if (++slots_[i].gen == 0) {
            slots_[i].gen = 1;  // wrapped: 0 would make the id 0 possible
        }
        return (std::uint64_t(slots_[i].gen) << 32) | i;
    }
    /// The object of `id`, or nullptr when the id is not (or no longer) in the table.
    [[nodiscard]] T *find(std::uint64_t id) const noexcept
    {
        const auto i = static_cast<std::uint32_t>(id);
        if (i >= slots_.size() || slots_[i].ptr == nullptr || slots_[i].gen != id >> 32) {
            return nullptr;
        }
        return slots_[i].ptr;
    }
    /// Forget `id` (no-op when it is not in the table).
    void remove(std::uint64_t id) noexcept
    {
        const auto i = static_cast<std::uint32_t>(id);
        if (find(id) != nullptr) {
            slots_[i].ptr = nullptr;
            free_.push_back(i);
        }
    }
    template <class Fn>
    void for_each(Fn &&fn) const
    {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].ptr != nullptr) {
                fn((std::uint64_t(slots_[i].gen) << 32) | i, slots_[i].ptr);
            }
        }
    }
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size() - free_.size(); }

  private:
    struct slot {
        T *ptr = nullptr;
        std::uint32_t gen = 0;
    };
    std::vector<slot> slots_;
    std::vector<std::uint32_t> free_;
};

}  // namespace weft::proto
