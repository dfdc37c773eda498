#pragma once
// Protocol headers of the tagged-message protocols. They travel as the first
// bytes of an active message (src/transport/iface.hpp); the payload follows.
// Wire format (docs/protocols.md): little-endian, naturally aligned, no padding
// that is not named. Every size is a contract (static_assert).

#include <cstdint>

namespace weft::proto {

/// Active-message ids used by proto/. Anything else received is dropped.
enum class am_id : std::uint8_t {
    eager = 1,        ///< whole message, header eager_hdr
    eager_data = 2,   ///< whole message with remote CQ data, header eager_data_hdr
    eager_first = 3,  ///< first fragment of a multi-fragment message, eager_first_hdr
    eager_frag = 4,   ///< a later fragment, eager_frag_hdr
};
inline constexpr unsigned am_id_count = 5;

/// am_id::eager: the tag; the payload is the whole message.
struct eager_hdr {
    std::uint64_t tag;  ///< message tag
};
static_assert(sizeof(eager_hdr) == 8);

/// am_id::eager_data: tag and remote CQ data.
struct eager_data_hdr {
    std::uint64_t tag;   ///< message tag
    std::uint64_t data;  ///< remote CQ data
};
static_assert(sizeof(eager_data_hdr) == 16);

/// Flags in eager_first_hdr::flags.
inline constexpr std::uint32_t first_flag_data = 1u << 0;  ///< `data` is valid

/// am_id::eager_first: opens a message of `total_len` bytes; the payload is
/// bytes [0, payload length) of it. Fragments of one message from one sender
/// arrive in order and are not interleaved with the sender's other messages to
/// the same receiver.
struct eager_first_hdr {
    std::uint64_t tag;        ///< message tag
    std::uint64_t data;       ///< remote CQ data (if first_flag_data)
    std::uint64_t total_len;  ///< message length in bytes (bounded by max_msg_size on receipt)
    std::uint32_t msg_id;     ///< sender's per-peer message number, repeated in fragments
    std::uint32_t flags;      ///< first_flag_*
};
static_assert(sizeof(eager_first_hdr) == 32);

/// am_id::eager_frag: bytes [offset, offset + payload length) of message msg_id.
struct eager_frag_hdr {
    std::uint64_t offset;    ///< byte offset in the message (checked on receipt)
    std::uint32_t msg_id;    ///< as in eager_first_hdr
    std::uint32_t reserved;  ///< zero
};
static_assert(sizeof(eager_frag_hdr) == 16);

}  // namespace weft::proto
