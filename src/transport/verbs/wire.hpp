#pragma once
// Wire formats of the verbs transport (docs/verbs.md): the immediate data of
// every RC send, and the connection-management messages exchanged over the
// endpoint's UD queue pair. Little-endian, naturally aligned, sizes asserted.

#include <cstdint>

#include "transport/iface.hpp"

namespace weft::transport::verbs {

// ------------------------------------------------------------------ RC messages
//
// Every message on an RC queue pair is a SEND_WITH_IMM whose payload is the
// protocol header and payload the layer above gave (or nothing for transport
// control messages). The immediate data (host order after ntohl) says what it is:
//   bits 0..7   active-message id (< max_am_id) for the layer above
//   bits 8..15  transport control code (imm_ctl set)
//   bit  31     imm_ctl: a transport control message, not for the layer above

inline constexpr std::uint32_t imm_ctl = 1u << 31;
inline constexpr std::uint32_t imm_am_mask = 0xff;
inline constexpr unsigned imm_ctl_shift = 8;

/// Transport control codes (imm bits 8..15 with imm_ctl).
enum class ctl : std::uint8_t {
    rtu = 1,         ///< requester to responder: my queue pair is ready, you may send
    keepalive = 2,   ///< probe of an idle connection (dropped on receipt)
    disconnect = 3,  ///< the sender closes its endpoint: the connection is over
};

[[nodiscard]] constexpr std::uint32_t ctl_imm(ctl c) noexcept
{
    return imm_ctl | (std::uint32_t(c) << imm_ctl_shift);
}

// ------------------------------------------------------------------ UD handshake

inline constexpr std::uint32_t cm_magic = 0x6d636677;  // "wfcm" little-endian
inline constexpr std::uint8_t cm_version = 1;
/// Q_Key of every weft UD queue pair.
inline constexpr std::uint32_t cm_qkey = 0x77656674;
/// Bytes of the global route header that precedes every UD receive.
inline constexpr std::size_t grh_bytes = 40;

enum class cm_type : std::uint8_t {
    req = 1,  ///< connect to me: here is my RC queue pair
    rep = 2,  ///< accepted: here is mine, yours is connected to it
};

/// One handshake message (the whole UD payload).
struct cm_msg {
    std::uint32_t magic;      ///< cm_magic
    std::uint8_t version;     ///< cm_version
    std::uint8_t type;        ///< cm_type
    std::uint8_t mtu;         ///< sender's port active MTU (enum ibv_mtu)
    std::uint8_t reserved;    ///< zero
    std::uint32_t src_conn;   ///< sender's connection index (echoed in a rep)
    std::uint32_t dst_conn;   ///< rep: the requester's index from the req; req: UINT32_MAX
    std::uint32_t qpn;        ///< sender's RC queue pair number
    std::uint32_t psn;        ///< sender's initial packet sequence number (24 bits)
    std::uint32_t rd_atomic;  ///< RDMA reads the sender accepts in flight (responder depth)
    std::uint32_t reserved2;  ///< zero
    wire_address src;         ///< sender's endpoint address
    wire_address dst;         ///< the receiver's address as the sender knows it
};
static_assert(sizeof(cm_msg) == 160, "cm_msg is a wire format");

}  // namespace weft::transport::verbs
