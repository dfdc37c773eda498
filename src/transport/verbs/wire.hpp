#pragma once
// Wire formats of the verbs transport (docs/verbs.md): the immediate data of
// every RC send, and the connection-management messages exchanged over the
// endpoint's UD queue pair. Little-endian, naturally aligned, sizes asserted.

#include <cstdint>

#include "transport/address.hpp"

namespace weft::transport::verbs {

// ------------------------------------------------------------------ RC messages
//
// Every message on an RC queue pair is a SEND_WITH_IMM whose payload is the
// protocol header and payload the layer above gave (or nothing for transport
// control messages). The immediate data (host order after ntohl) says what it is:
//   bits 0..15  the active-message word (transport::am_word) for the layer above
//   bits 16..23 transport control code (imm_ctl set)
//   bit  31     imm_ctl: a transport control message, not for the layer above

inline constexpr std::uint32_t imm_ctl = 1u << 31;
inline constexpr std::uint32_t imm_am_mask = 0xffff;
inline constexpr unsigned imm_ctl_shift = 16;

/// Transport control codes (imm bits 16..23 with imm_ctl).
enum class ctl : std::uint8_t {
    rtu = 1,         ///< requester to responder: my queue pair is ready, you may send
    keepalive = 2,   ///< probe of an idle connection (dropped on receipt)
    disconnect = 3,  ///< the sender closes its endpoint: the connection is over
};

[[nodiscard]] constexpr std::uint32_t ctl_imm(ctl c) noexcept
{
    return imm_ctl | (std::uint32_t(c) << imm_ctl_shift);
}

// ------------------------------------------------------------------ address blob

/// The verbs transport's wire id (its blob in addresses, its part of packed keys).
inline constexpr std::uint8_t wire_id = 3;

/// The per-host part of a verbs blob: the port (one blob per port).
struct port_blob {
    std::uint8_t gid[16];  ///< port GID (RoCE: the chosen GID, usually IPv4-mapped; IB: GID 0)
    std::uint16_t lid;     ///< port LID (InfiniBand; 0 on RoCE)
    std::uint8_t link;     ///< link layer: 1 InfiniBand, 2 Ethernet (RoCE)
    std::uint8_t mtu;      ///< port active MTU (enum ibv_mtu)
};
static_assert(sizeof(port_blob) == 20, "port_blob is a wire format");
/// The per-endpoint part: the UD queue pair of the handshake, 24 bits little-endian.
inline constexpr std::size_t ep_blob_size = 3;

// ------------------------------------------------------------------ UD handshake

inline constexpr std::uint32_t cm_magic = 0x6d636677;  // "wfcm" little-endian
/// 1: fixed 64-byte addresses; 2: the sender's whole address (request and reply), variable length.
inline constexpr std::uint8_t cm_version = 2;
/// Q_Key of every weft UD queue pair.
inline constexpr std::uint32_t cm_qkey = 0x77656674;
/// Bytes of the global route header that precedes every UD receive.
inline constexpr std::size_t grh_bytes = 40;

enum class cm_type : std::uint8_t {
    req = 1,  ///< connect to me: here is my RC queue pair
    rep = 2,  ///< accepted: here is mine, yours is connected to it
};

/// The fixed part of a handshake message; the sender's whole endpoint address
/// (src_len bytes, address.hpp) follows it in the same UD payload.
struct cm_msg {
    std::uint32_t magic;        ///< cm_magic
    std::uint8_t version;       ///< cm_version
    std::uint8_t type;          ///< cm_type
    std::uint8_t mtu;           ///< sender's port active MTU (enum ibv_mtu)
    std::uint8_t reserved;      ///< zero
    std::uint32_t src_conn;     ///< sender's connection index (echoed in a rep)
    std::uint32_t dst_conn;     ///< rep: the requester's index from the req; req: UINT32_MAX
    std::uint32_t qpn;          ///< sender's RC queue pair number
    std::uint32_t psn;          ///< sender's initial packet sequence number (24 bits)
    std::uint32_t rd_atomic;    ///< RDMA reads the sender accepts in flight (responder depth)
    std::uint32_t dst_ud_qpn;   ///< the receiver's UD QPN, as the sender knows it
    std::uint64_t dst_node_id;  ///< the receiver's host, as the sender knows it
    std::uint32_t dst_pid;      ///< the receiver's process
    std::uint32_t dst_ep_id;    ///< the receiver's endpoint
    std::uint16_t src_len;      ///< bytes of the sender's address after this struct
    std::uint16_t reserved2;    ///< zero
    std::uint32_t reserved3;    ///< zero
};
static_assert(sizeof(cm_msg) == 56, "cm_msg is a wire format");

}  // namespace weft::transport::verbs
