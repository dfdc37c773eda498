#pragma once
// Wire formats of the tcp transport (docs/tcp.md): the address blob, the
// connection handshake and the frames on an established connection, with
// their parsers. Everything here comes from the network or from a peer's
// address and is untrusted: the parsers check every field before use and
// never read outside the bytes they are given (test/fuzz/fuzz_tcp.cpp).
// Little-endian, byte-packed, sizes asserted.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/address.hpp"

namespace weft::transport::tcp {

/// The tcp transport's wire id (its blob in addresses).
inline constexpr std::uint8_t wire_id = 4;

// ------------------------------------------------------------------ IP addresses

/// One IPv4 or IPv6 address with its subnet prefix length.
struct ip_addr {
    std::uint8_t family = 0;   ///< 4 or 6
    std::uint8_t prefix = 0;   ///< subnet prefix length (<= 32 or <= 128)
    std::uint8_t bytes[16]{};  ///< network byte order; IPv4 uses the first 4
    bool operator==(const ip_addr &) const = default;
};

[[nodiscard]] constexpr std::size_t ip_len(std::uint8_t family) noexcept
{
    return family == 4 ? 4 : 16;
}

/// Whether `a` lies in the subnet `net` (net.prefix bits compared).
[[nodiscard]] inline bool in_subnet(const ip_addr &a, const ip_addr &net) noexcept
{
    if (a.family != net.family || net.prefix > ip_len(net.family) * 8) {
        return false;
    }
    const unsigned full = net.prefix / 8;
    const unsigned rest = net.prefix % 8;
    if (std::memcmp(a.bytes, net.bytes, full) != 0) {
        return false;
    }
    if (rest == 0) {
        return true;
    }
    const auto mask = static_cast<std::uint8_t>(0xff00u >> rest);
    return (a.bytes[full] & mask) == (net.bytes[full] & mask);
}

[[nodiscard]] inline bool is_loopback(const ip_addr &a) noexcept
{
    static constexpr std::uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                                     0, 0, 0, 0, 0, 0, 0, 1};
    return a.family == 4 ? a.bytes[0] == 127 : std::memcmp(a.bytes, v6_loopback, 16) == 0;
}

/// IPv6 link-local (fe80::/10): needs a scope id, never advertised.
[[nodiscard]] inline bool is_link_local6(const ip_addr &a) noexcept
{
    return a.family == 6 && a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80;
}

// ------------------------------------------------------------------ address blob
//
// One blob per endpoint (wire id 4). Per-host part: the addresses the endpoint
// listens on, the same for every endpoint of the host with the same WEFT_TCP_IF:
//
//   version u8 (1) | count u8 (1..max_blob_addrs) |
//   count x { family u8 (4|6) | prefix u8 | address (4 or 16 bytes) }
//
// Per-endpoint part: count x port u16, the listening port of each address in
// the same order.

inline constexpr std::uint8_t blob_version = 1;
/// Addresses in one blob: the endpoint address holds at most 256 bytes for
/// every transport together; four IPv6 addresses and ports take 84.
inline constexpr unsigned max_blob_addrs = 4;
inline constexpr std::size_t max_blob_node = 2 + max_blob_addrs * 18;

/// One listening address of a peer.
struct peer_listener {
    ip_addr addr;
    std::uint16_t port = 0;
};

/// The parsed blob: the peer's listening addresses.
struct peer_blob {
    peer_listener at[max_blob_addrs];
    unsigned count = 0;
};

/// Encode the per-host part for `n` addresses (n <= max_blob_addrs) into `out`
/// (max_blob_node bytes); returns its length.
[[nodiscard]] inline std::size_t encode_blob_node(const ip_addr *a, unsigned n,
                                                  std::uint8_t *out) noexcept
{
    std::size_t pos = 0;
    out[pos++] = blob_version;
    out[pos++] = static_cast<std::uint8_t>(n);
    for (unsigned i = 0; i < n; ++i) {
        out[pos++] = a[i].family;
        out[pos++] = a[i].prefix;
        std::memcpy(out + pos, a[i].bytes, ip_len(a[i].family));
        pos += ip_len(a[i].family);
    }
    return pos;
}

/// Parse one tcp blob. False when it is malformed: a wrong version, count 0
/// or above max_blob_addrs, an unknown family, a prefix longer than the
/// address, lengths that do not add up, a zero port.
[[nodiscard]] inline bool parse_blob(const address_blob &b, peer_blob &out) noexcept
{
    if (b.node_len < 2 || b.node[0] != blob_version) {
        return false;
    }
    const unsigned n = b.node[1];
    if (n == 0 || n > max_blob_addrs || b.ep_len != 2 * std::size_t{n}) {
        return false;
    }
    std::size_t pos = 2;
    for (unsigned i = 0; i < n; ++i) {
        if (b.node_len - pos < 2) {
            return false;
        }
        ip_addr a;
        a.family = b.node[pos];
        a.prefix = b.node[pos + 1];
        if ((a.family != 4 && a.family != 6) || a.prefix > ip_len(a.family) * 8) {
            return false;
        }
        pos += 2;
        if (b.node_len - pos < ip_len(a.family)) {
            return false;
        }
        std::memcpy(a.bytes, b.node + pos, ip_len(a.family));
        pos += ip_len(a.family);
        std::uint16_t port;
        std::memcpy(&port, b.ep + 2 * i, 2);
        if (port == 0) {
            return false;
        }
        out.at[i] = {a, port};
    }
    out.count = n;
    return pos == b.node_len;
}

/// The first well-formed tcp blob of `a`; false when there is none.
[[nodiscard]] inline bool find_blob(const address &a, peer_blob &out) noexcept
{
    address_blob b;
    for (unsigned nth = 0; a.find(wire_id, b, nth); ++nth) {
        if (parse_blob(b, out)) {
            return true;
        }
    }
    return false;
}

// ------------------------------------------------------------------ handshake
//
// The first bytes each way on a new connection. The side that connects sends
// a hello followed by its whole endpoint address; the side that accepted
// answers accept or reject. Frames flow only after accept (docs/tcp.md,
// "Connections"), so a connection that is rejected (a simultaneous connect)
// never carried data.

inline constexpr std::uint32_t hs_magic = 0x63746677;  // "wftc" little-endian
/// 1: the first version.
inline constexpr std::uint8_t hs_version = 1;

enum class hs_type : std::uint8_t {
    hello = 1,   ///< connect to me: my address follows
    accept = 2,  ///< accepted: frames may flow both ways
    reject = 3,  ///< refused (reason): the connection closes
};

enum class reject_reason : std::uint8_t {
    none = 0,
    crossed = 1,     ///< both sides connected at once; the receiver keeps its own connection
    not_for_me = 2,  ///< the hello names another endpoint (a stale address)
    duplicate = 3,   ///< a connection with this peer exists, or failed: no second one
    version = 4,     ///< another handshake version
    closing = 5,     ///< the receiver is closing
    limits = 6,      ///< the sender's frame limit is out of range
};

struct handshake {
    std::uint32_t magic;      ///< hs_magic
    std::uint8_t version;     ///< hs_version
    std::uint8_t type;        ///< hs_type
    std::uint8_t reason;      ///< reject: reject_reason; else 0
    std::uint8_t reserved0;   ///< zero
    std::uint16_t addr_len;   ///< hello: bytes of the sender's endpoint address after this; else 0
    std::uint16_t reserved1;  ///< zero
    std::uint32_t src_conn;   ///< sender's connection number for the receiver (its frames' src)
    std::uint32_t max_body;   ///< largest frame body the sender sends (its max_bcopy)
    std::uint32_t reserved2;  ///< zero
    std::uint64_t src_node_id;  ///< the sender's endpoint
    std::uint32_t src_pid;
    std::uint32_t src_ep_id;
    std::uint64_t dst_node_id;  ///< the endpoint the sender means to reach
    std::uint32_t dst_pid;
    std::uint32_t dst_ep_id;
};
static_assert(sizeof(handshake) == 56, "handshake is a wire format");

/// Frame bodies a peer may announce: at least the header room proto/ needs
/// (128 bytes) and at most 64 MiB (the receive buffer is sized by it).
inline constexpr std::uint32_t min_body_limit = 256;
inline constexpr std::uint32_t max_body_limit = 64u << 20;

enum class hs_result : std::uint8_t {
    ok,
    need_more,    ///< not all bytes here yet
    bad_magic,    ///< not a weft tcp connection
    bad_version,  ///< a weft tcp connection of another version
    bad_type,     ///< unknown type, or the wrong one for this side
    bad_fields,   ///< a length, limit or reserved field out of range
    bad_address,  ///< the hello's address is malformed or not the sender's
    not_for_me,   ///< addressed to another endpoint
};

/// A handshake message that passed every check.
struct hs_parsed {
    handshake m{};
    address src;  ///< hello: the sender's endpoint address
};

/// Parse the handshake at the start of [p, p + avail): what a side expects
/// (`want`: hello on an accepted connection; accept or reject on our own)
/// addressed to `me`. `consumed` gets its length when it is ok.
[[nodiscard]] inline hs_result parse_handshake(const std::uint8_t *p, std::size_t avail,
                                               bool want_hello, const endpoint_id &me,
                                               hs_parsed &out, std::size_t &consumed) noexcept
{
    if (avail < 4) {
        return hs_result::need_more;
    }
    std::uint32_t magic;
    std::memcpy(&magic, p, 4);
    if (magic != hs_magic) {
        return hs_result::bad_magic;
    }
    if (avail < 5) {
        return hs_result::need_more;
    }
    if (p[4] != hs_version) {
        return hs_result::bad_version;
    }
    if (avail < sizeof(handshake)) {
        return hs_result::need_more;
    }
    handshake &m = out.m;
    std::memcpy(&m, p, sizeof(m));
    const bool hello = m.type == static_cast<std::uint8_t>(hs_type::hello);
    const bool reply = m.type == static_cast<std::uint8_t>(hs_type::accept) ||
                       m.type == static_cast<std::uint8_t>(hs_type::reject);
    if (want_hello ? !hello : !reply) {
        return hs_result::bad_type;
    }
    if (m.reserved0 != 0 || m.reserved1 != 0 || m.reserved2 != 0 ||
        (m.type != static_cast<std::uint8_t>(hs_type::reject) && m.reason != 0)) {
        return hs_result::bad_fields;
    }
    if (m.type != static_cast<std::uint8_t>(hs_type::reject) &&
        (m.max_body < min_body_limit || m.max_body > max_body_limit)) {
        return hs_result::bad_fields;
    }
    if (hello ? (m.addr_len < address_header_size || m.addr_len > max_address_size)
              : m.addr_len != 0) {
        return hs_result::bad_fields;
    }
    if (avail - sizeof(handshake) < m.addr_len) {
        return hs_result::need_more;
    }
    if (m.dst_node_id != me.node_id || m.dst_pid != me.pid || m.dst_ep_id != me.ep_id) {
        return hs_result::not_for_me;
    }
    if (hello) {
        std::size_t used = 0;
        if (address::parse(p + sizeof(handshake), m.addr_len, out.src, &used) != status::ok ||
            used != m.addr_len || out.src.node_id() != m.src_node_id ||
            out.src.pid() != m.src_pid || out.src.ep_id() != m.src_ep_id) {
            return hs_result::bad_address;
        }
    }
    consumed = sizeof(handshake) + m.addr_len;
    return hs_result::ok;
}

// ------------------------------------------------------------------ frames
//
// After the handshake each direction is a sequence of frames: a 12-byte
// header and `len` bytes of body (the protocol header and payload of one
// active message, exactly as the layer above gave them).

enum class frame_type : std::uint8_t {
    am = 1,   ///< an active message: `am` is its word, the body its bytes
    bye = 2,  ///< the sender closes its endpoint: nothing follows (len 0)
};

struct frame_hdr {
    std::uint32_t len;   ///< body bytes after this header (<= the sender's announced max_body)
    std::uint16_t am;    ///< the active-message word, carried unchanged (type am); 0 otherwise
    std::uint8_t type;   ///< frame_type
    std::uint8_t flags;  ///< zero
    std::uint32_t src;   ///< the sender's connection number, as its handshake announced
};
static_assert(sizeof(frame_hdr) == 12, "frame_hdr is a wire format");

/// What one connection accepts: set from the peer's handshake.
struct frame_limits {
    std::uint32_t max_body;  ///< the peer's announced max_body
    std::uint32_t src;       ///< the peer's announced connection number
};

enum class frame_result : std::uint8_t {
    frame,       ///< a whole frame: header in `h`, body at p + sizeof(frame_hdr)
    need_more,   ///< the header, or part of the body, has not arrived
    bad_type,    ///< unknown type, or nonzero flags
    bad_length,  ///< longer than the peer announced, or a bye with a body
    bad_source,  ///< not the connection number the peer announced
};

/// Parse the frame at the start of [p, p + avail). The header is checked as
/// soon as its 12 bytes are here, before its body arrives.
[[nodiscard]] inline frame_result parse_frame(const std::uint8_t *p, std::size_t avail,
                                              const frame_limits &lim, frame_hdr &h) noexcept
{
    if (avail < sizeof(frame_hdr)) {
        return frame_result::need_more;
    }
    std::memcpy(&h, p, sizeof(h));
    if (h.flags != 0 || (h.type != static_cast<std::uint8_t>(frame_type::am) &&
                         h.type != static_cast<std::uint8_t>(frame_type::bye))) {
        return frame_result::bad_type;
    }
    if (h.len > lim.max_body ||
        (h.type == static_cast<std::uint8_t>(frame_type::bye) && (h.len != 0 || h.am != 0))) {
        return frame_result::bad_length;
    }
    if (h.src != lim.src) {
        return frame_result::bad_source;
    }
    if (avail - sizeof(frame_hdr) < h.len) {
        return frame_result::need_more;
    }
    return frame_result::frame;
}

}  // namespace weft::transport::tcp
