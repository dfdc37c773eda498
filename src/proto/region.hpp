#pragma once
// Memory registered for one-sided operations that arrive as active messages
// (proto/'s fallback for put, get and atomics): a table shared by the endpoints
// of one weft domain. A key names a slot and its generation; every operation
// checks, before it touches memory, that the key's registration is still live
// and that [addr, addr + len) lies in it with the access asked for. A closed
// region's key fails from the moment weft_mr_close returns.
//
// Registration is control path (any thread, serialised by a mutex); checks run
// on the data path (the progress of any endpoint of the domain) without a lock:
// each slot is a seqlock (a generation word written around the fields), so a
// check that overlaps a change of its slot fails instead of reading a mix.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.hpp"

namespace weft::proto {

using base::status;

class region_table {
  public:
    region_table() = default;
    region_table(const region_table &) = delete;
    region_table &operator=(const region_table &) = delete;
    ~region_table();

    /// Register [buf, buf + len) with `access` (transport::access::*); the key
    /// goes into packed keys (key.hpp). no_memory when the table is full.
    [[nodiscard]] status add(const void *buf, std::size_t len, unsigned access, std::uint64_t &key);
    /// Deregister: operations with the key fail from now on.
    void remove(std::uint64_t key) noexcept;
    /// Whether [addr, addr + len) lies in the live region `key` with `access`.
    [[nodiscard]] bool check(std::uint64_t key, std::uint64_t addr, std::size_t len,
                             unsigned access) const noexcept;

    static constexpr std::size_t chunk_slots = 4096;
    static constexpr std::size_t max_chunks = 256;  ///< at most a million regions per domain

  private:
    struct slot {
        /// generation << 1 | live. Odd while live. Written (release) after the
        /// fields when a region is added, and (first) when it is removed.
        std::atomic<std::uint64_t> word{0};
        std::atomic<std::uint64_t> base{0};
        std::atomic<std::uint64_t> len{0};
        std::atomic<std::uint32_t> access{0};
    };
    struct chunk {
        std::array<slot, chunk_slots> slots;
    };
    [[nodiscard]] const slot *find(std::uint32_t index) const noexcept;

    std::mutex mutex_;                                       ///< add and remove
    std::array<std::atomic<chunk *>, max_chunks> chunks_{};  ///< published once, never moved
    std::uint32_t next_ = 0;                                 ///< slots used so far (under mutex_)
    std::vector<std::uint32_t> free_;                        ///< removed slots (under mutex_)
};

}  // namespace weft::proto
