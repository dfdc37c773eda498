#pragma once
// Protocol headers of the tagged-message protocols. They travel as the first
// bytes of an active message (src/transport/iface.hpp); the payload follows.
// Wire format (docs/protocols.md): little-endian, naturally aligned, no padding
// that is not named. Every size is a contract (static_assert).

#include <cstdint>

#include "transport/iface.hpp"

namespace weft::proto {

/// Active-message ids used by proto/. Anything else received is dropped.
enum class am_id : std::uint8_t {
    eager = 1,        ///< whole message, header eager_hdr
    eager_data = 2,   ///< whole message with remote CQ data, header eager_data_hdr
    eager_first = 3,  ///< first fragment of a multi-fragment message, eager_first_hdr
    eager_frag = 4,   ///< a later fragment, eager_frag_hdr
    rndv_rts = 5,     ///< rendezvous request to send (a variable message header), rndv_rts_hdr
    rndv_fin = 6,     ///< receiver to sender: the data was read (or discarded), rndv_fin_hdr
    rndv_cts = 7,     ///< receiver to sender: clear to send the data, rndv_cts_hdr
    rndv_data = 8,    ///< sender to receiver after a cts: a piece of the data, rndv_data_hdr
    credit_update =
        9,  ///< explicit credit update (no other traffic carried them), credit_prefix only
};
inline constexpr unsigned am_id_count = 10;

/// Whether a message spends a receive credit (docs/credits.md). Only eager data
/// (the messages whose payload the receiver may have to keep) is metered.
/// Rendezvous headers are not: under credit pressure an eager message is sent as
/// a rendezvous instead (its data waits at the sender, the receiver keeps a
/// header record), so a message that a posted receive waits for can always get
/// through, whatever unmatched messages hold the credits: the MPI progress rule.
/// Rendezvous replies and data are solicited: a cts is sent only for a posted
/// receive whose buffer takes the data, and fin/cts are consumed on arrival.
[[nodiscard]] constexpr bool metered(unsigned am) noexcept
{
    return am >= unsigned(am_id::eager) && am <= unsigned(am_id::eager_frag);
}

/// Set in the transport's active-message id when a credit_prefix precedes the
/// message's own header: the message returns credits to its receiver.
inline constexpr unsigned am_credit_flag = 0x10;

/// Credits piggybacked on a message (docs/credits.md). 8 bytes so the header that
/// follows stays aligned. Checked on receipt against the window.
struct credit_prefix {
    std::uint32_t credits;   ///< credits returned (<= credit_field_max)
    std::uint32_t reserved;  ///< zero
};
static_assert(sizeof(credit_prefix) == 8);

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

/// Flags in rndv_rts_hdr::flags.
inline constexpr std::uint32_t rts_flag_data = 1u << 0;   ///< `data` is valid
inline constexpr std::uint32_t rts_flag_zcopy = 1u << 1;  ///< `rb` is valid: read it directly

/// am_id::rndv_rts: a message of `total_len` bytes waits at the sender. The receiver
/// reads it with the transport's zcopy get (rts_flag_zcopy) and answers rndv_fin, or
/// answers rndv_cts and receives rndv_data pieces; or discards it with rndv_fin.
/// `sreq` is the sender's request id, echoed back (checked by the sender).
struct rndv_rts_hdr {
    std::uint64_t tag;            ///< message tag
    std::uint64_t data;           ///< remote CQ data (if rts_flag_data)
    std::uint64_t total_len;      ///< message length (bounded by max_msg_size on receipt)
    std::uint64_t sreq;           ///< sender's request id
    transport::remote_buffer rb;  ///< the sender's buffer (if rts_flag_zcopy)
    std::uint32_t flags;          ///< rts_flag_*
    std::uint32_t reserved;       ///< zero
};
static_assert(sizeof(rndv_rts_hdr) == 56);

/// rndv_fin_hdr::status values.
inline constexpr std::uint32_t fin_done = 0;       ///< the receiver has the data
inline constexpr std::uint32_t fin_discarded = 1;  ///< the receiver discarded the message
inline constexpr std::uint32_t fin_failed = 2;     ///< the receiver could not read the data

/// am_id::rndv_fin: the sender's buffer is free again; its send completes (with an
/// error for fin_failed).
struct rndv_fin_hdr {
    std::uint64_t sreq;      ///< as in rndv_rts_hdr
    std::uint32_t status;    ///< fin_*
    std::uint32_t reserved;  ///< zero
};
static_assert(sizeof(rndv_fin_hdr) == 16);

/// am_id::rndv_cts: send the data as rndv_data pieces tagged with `rreq`.
struct rndv_cts_hdr {
    std::uint64_t sreq;  ///< as in rndv_rts_hdr
    std::uint64_t rreq;  ///< receiver's request id (checked by the receiver)
};
static_assert(sizeof(rndv_cts_hdr) == 16);

/// am_id::rndv_data: bytes [offset, offset + payload length) of the message.
struct rndv_data_hdr {
    std::uint64_t rreq;    ///< as in rndv_cts_hdr
    std::uint64_t offset;  ///< in order; checked against what was received
};
static_assert(sizeof(rndv_data_hdr) == 16);

}  // namespace weft::proto
