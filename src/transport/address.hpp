#pragma once
// The endpoint address (wire format, docs/protocols.md "Endpoint address"): what
// weft_ep_getname() returns, what PMIx carries and weft_av_insert() takes.
//
//   header (24 bytes)   magic u32 | version u8 | nblobs u8 | length u16 |
//                       node_id u64 | pid u32 | ep_id u32
//   nblobs blobs        id u8 | node_len u8 | ep_len u8 | node bytes | ep bytes
//
// A blob is one transport's part (its wire id; several blobs may share an id:
// one per NIC of a transport), or proto/'s (id 0: protocol parameters every
// peer must agree on). Each blob has a per-host part (a NIC's GID, an IP
// address: the same for every endpoint of the host and device) and a
// per-endpoint part (a queue pair number, a port), so that the address vector
// stores the host part once per host (docs/architecture.md). Little-endian,
// byte-packed; parse() checks every length before use: the bytes are untrusted.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/status.hpp"

namespace weft::transport {

using base::status;

inline constexpr std::size_t max_address_size = 256;
inline constexpr std::uint32_t address_magic = 0x74666577;  // "weft" little-endian
/// 1: fixed 64 bytes with a 8-byte shm cookie; 2: fixed 64 bytes, per-transport
/// offsets; 3: header and blobs.
inline constexpr std::uint8_t address_version = 3;
inline constexpr std::size_t address_header_size = 24;
inline constexpr std::size_t address_blob_header_size = 3;
/// Blob id of proto/'s parameters; transports' wire ids are 1..255.
inline constexpr std::uint8_t proto_blob_id = 0;

/// Who an endpoint is: host, process, endpoint number within the process.
struct endpoint_id {
    std::uint64_t node_id = 0;  ///< the host (hash of its boot id and name)
    std::uint32_t pid = 0;
    std::uint32_t ep_id = 0;
    bool operator==(const endpoint_id &) const = default;
};

/// One blob of an address, pointing into it.
struct address_blob {
    std::uint8_t id = 0;
    const std::uint8_t *node = nullptr;  ///< per-host part
    std::size_t node_len = 0;
    const std::uint8_t *ep = nullptr;  ///< per-endpoint part
    std::size_t ep_len = 0;
};

/// A parsed, validated endpoint address (bounded, copyable, no allocation).
class address {
  public:
    address() = default;

    /// Validate the address at `data` (at most `avail` bytes) and copy it into
    /// `out`; `consumed` (if not null) gets its length. bad_message when it is
    /// not a version-3 weft address or a length does not fit.
    [[nodiscard]] static status parse(const void *data, std::size_t avail, address &out,
                                      std::size_t *consumed = nullptr) noexcept;

    /// Bytes of the address (0 for an empty one).
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] const std::uint8_t *data() const noexcept { return bytes_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

    [[nodiscard]] endpoint_id id() const noexcept { return id_; }
    [[nodiscard]] std::uint64_t node_id() const noexcept { return id_.node_id; }
    [[nodiscard]] std::uint32_t pid() const noexcept { return id_.pid; }
    [[nodiscard]] std::uint32_t ep_id() const noexcept { return id_.ep_id; }
    [[nodiscard]] unsigned blob_count() const noexcept { return nblobs_; }

    /// The `nth` blob (0-based) whose id is `id`; false when there is none.
    [[nodiscard]] bool find(std::uint8_t id, address_blob &out, unsigned nth = 0) const noexcept;

    /// Blob number `i` (0 <= i < blob_count()), in address order.
    [[nodiscard]] address_blob blob(unsigned i) const noexcept;

    bool operator==(const address &o) const noexcept
    {
        return size_ == o.size_ && std::memcmp(bytes_, o.bytes_, size_) == 0;
    }

  private:
    friend class address_builder;
    std::uint8_t bytes_[max_address_size]{};
    std::uint16_t size_ = 0;
    std::uint8_t nblobs_ = 0;
    endpoint_id id_{};
};

/// Builds an address blob by blob.
class address_builder {
  public:
    explicit address_builder(const endpoint_id &id) noexcept;

    /// Append a blob. no_memory when the address would exceed max_address_size
    /// (or a part exceeds 255 bytes, or 255 blobs).
    [[nodiscard]] status add(std::uint8_t id, const void *node, std::size_t node_len,
                             const void *ep, std::size_t ep_len) noexcept;

    /// The address built so far.
    [[nodiscard]] const address &get() const noexcept { return addr_; }

  private:
    address addr_;
};

/// Little-endian integer fields of blobs.
[[nodiscard]] inline std::uint32_t load_le24(const std::uint8_t *p) noexcept
{
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16;
}
inline void store_le24(std::uint8_t *p, std::uint32_t v) noexcept
{
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
}

}  // namespace weft::transport
