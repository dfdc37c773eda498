#pragma once
// The packed remote key (wire format, docs/protocols.md "Packed remote key"):
// what weft_mr_pack_key() writes and weft_rkey_unpack() reads. It describes one
// registered region for every transport of the domain that registered it:
//
//   header (40 bytes)  magic u16 ("wk") | version u8 | nparts u8 | length u16 |
//                      reserved u16 | access u32 | reserved u32 |
//                      base u64 | len u64 | am_key u64
//   nparts parts       wire_id u8 | len u8 | bytes (that transport's key)
//
// base, len and access let the initiator refuse an out-of-range or forbidden
// operation before anything is sent; am_key is the region's key in the
// target's region table (region.hpp), which its active-message fallback checks
// again; a part is a transport's own key (verbs: the rkey), for native
// operations. Little-endian, byte-packed; parse() checks every length: the
// bytes come from a peer.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/status.hpp"

namespace weft::proto {

using base::status;

/// Bits of a packed key's access word above the transport::access rights.
/// The target counts peers' operations on the region (WEFT_MR_RMA_EVENT): the
/// initiator follows each with an am_id::rma_event message.
inline constexpr std::uint32_t key_flag_event = 1u << 16;
/// The region's atomics run on the NIC (WEFT_MR_DEVICE_ATOMICS), not on CPUs.
inline constexpr std::uint32_t key_flag_device_atomics = 1u << 17;

inline constexpr std::uint16_t key_magic = 0x6b77;  // "wk" little-endian
inline constexpr std::uint8_t key_version = 1;
inline constexpr std::size_t key_header_size = 40;
/// Most bytes of a packed key (the header and a part for each of a few transports).
inline constexpr std::size_t max_key_size = 256;

/// A parsed, validated packed key (points into the bytes it was parsed from).
struct key_view {
    std::uint64_t base = 0;
    std::uint64_t len = 0;
    std::uint32_t access = 0;  ///< transport::access::*
    std::uint64_t am_key = 0;
    unsigned nparts = 0;
    const std::uint8_t *parts = nullptr;  ///< the first part
    std::size_t parts_len = 0;

    /// The part of transport `wire_id`: its bytes and length; false if none.
    [[nodiscard]] bool find(std::uint8_t wire_id, const std::uint8_t *&data,
                            std::size_t &len) const noexcept;
};

/// Validate the packed key at `data` (`len` bytes, exactly) into `out`.
/// bad_message when it is not one.
[[nodiscard]] status parse_key(const void *data, std::size_t len, key_view &out) noexcept;

/// Builds a packed key part by part.
class key_builder {
  public:
    key_builder(std::uint64_t base, std::uint64_t len, std::uint32_t access,
                std::uint64_t am_key) noexcept;
    /// Append transport `wire_id`'s key. no_memory when it would not fit.
    [[nodiscard]] status add(std::uint8_t wire_id, const void *key, std::size_t len) noexcept;
    [[nodiscard]] const std::uint8_t *data() const noexcept { return bytes_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

  private:
    std::uint8_t bytes_[max_key_size]{};
    std::size_t size_ = key_header_size;
};

}  // namespace weft::proto
