#pragma once
// Wire formats of the verbs transport (docs/verbs.md): the immediate data of
// every RC send, and the connection-management messages exchanged over the
// endpoint's UD queue pair. Little-endian, naturally aligned, sizes asserted.

#include <cstddef>
#include <cstdint>
#include <cstring>

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
    rtu = 1,         ///< cm version 2's rtu; not sent since version 3 (a UD message)
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
/// 1: fixed 64-byte addresses; 2: the sender's whole address (request and reply),
/// variable length; 3: the rtu is a UD message (type 3), answered by the agent.
inline constexpr std::uint8_t cm_version = 3;
/// Q_Key of every weft UD queue pair.
inline constexpr std::uint32_t cm_qkey = 0x77656674;
/// Bytes of the global route header that precedes every UD receive.
inline constexpr std::size_t grh_bytes = 40;

enum class cm_type : std::uint8_t {
    req = 1,  ///< connect to me: here is my RC queue pair
    rep = 2,  ///< accepted: here is mine, yours is connected to it
    rtu = 3,  ///< requester to responder: my queue pair is connected, you may send
};

/// The fixed part of a handshake message; the sender's whole endpoint address
/// (src_len bytes, address.hpp) follows it in the same UD payload.
struct cm_msg {
    std::uint32_t magic;     ///< cm_magic
    std::uint8_t version;    ///< cm_version
    std::uint8_t type;       ///< cm_type
    std::uint8_t mtu;        ///< sender's port active MTU (enum ibv_mtu)
    std::uint8_t reserved;   ///< zero
    std::uint32_t src_conn;  ///< sender's connection index (echoed in a rep)
    std::uint32_t
        dst_conn;       ///< rep, rtu: the receiver's index (from its req, rep); req: UINT32_MAX
    std::uint32_t qpn;  ///< sender's RC queue pair number
    std::uint32_t psn;  ///< sender's initial packet sequence number (24 bits)
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

/// The verbs blob of address `a` for a port of this link layer (Ethernet:
/// RoCE, else InfiniBand): its port part and the handshake's UD QPN.
[[nodiscard]] inline bool verbs_blob(const address &a, bool ethernet, port_blob &port,
                                     std::uint32_t &ud_qpn) noexcept
{
    address_blob b;
    for (unsigned nth = 0; a.find(wire_id, b, nth); ++nth) {
        if (b.node_len != sizeof(port_blob) || b.ep_len != ep_blob_size) {
            continue;
        }
        std::memcpy(&port, b.node, sizeof(port));
        ud_qpn = load_le24(b.ep);
        if (port.link == (ethernet ? 2 : 1) && ud_qpn != 0) {
            return true;
        }
    }
    return false;
}

/// Who receives handshake messages: what a message must name to be for us.
struct cm_self {
    std::uint64_t node_id;
    std::uint32_t pid;
    std::uint32_t ep_id;
    std::uint32_t ud_qpn;  ///< our UD queue pair
    bool ethernet;         ///< our port's link layer
};

/// A handshake message that passed every check.
struct cm_parsed {
    cm_msg m;
    address src;  ///< the sender's endpoint address
    port_blob port;
    std::uint32_t ud_qpn;  ///< the sender's UD QPN (== the QPN it came from)
};

/// Check one UD receive of `len` bytes (the GRH first) from UD QPN `src_qp`.
/// Untrusted: anything on the fabric may send to a UD queue pair. True when it
/// is a current-version request, reply or rtu meant for `me`, from the queue pair
/// its own address names, with a sane RC QPN.
[[nodiscard]] inline bool parse_cm(const std::uint8_t *buf, std::size_t len, std::uint32_t src_qp,
                                   const cm_self &me, cm_parsed &out) noexcept
{
    if (len < grh_bytes + sizeof(cm_msg)) {
        return false;
    }
    std::memcpy(&out.m, buf + grh_bytes, sizeof(cm_msg));
    const cm_msg &m = out.m;
    const bool to_us = m.dst_node_id == me.node_id && m.dst_pid == me.pid &&
                       m.dst_ep_id == me.ep_id && m.dst_ud_qpn == me.ud_qpn;
    const bool known_type = m.type == static_cast<std::uint8_t>(cm_type::req) ||
                            m.type == static_cast<std::uint8_t>(cm_type::rep) ||
                            m.type == static_cast<std::uint8_t>(cm_type::rtu);
    return m.magic == cm_magic && m.version == cm_version && to_us && known_type && m.qpn != 0 &&
           m.qpn <= 0xffffff && m.src_len <= len - grh_bytes - sizeof(cm_msg) &&
           address::parse(buf + grh_bytes + sizeof(cm_msg), m.src_len, out.src) == status::ok &&
           verbs_blob(out.src, me.ethernet, out.port, out.ud_qpn) && out.ud_qpn == src_qp;
}

}  // namespace weft::transport::verbs
