#pragma once
// The transport interface: what every transport (self, shm, tcp, verbs) provides
// to the protocol layer (src/proto) and the object model (src/core).
//
// A transport is an active-message engine, in the spirit of GASNet's core API
// and UCX's UCT: it moves a small protocol header plus payload to a peer and
// hands them, on the receiving side, to one handler chosen by a one-byte
// active-message id. Everything above (tag matching, fragmentation of large
// messages, rendezvous, RMA/atomic fallbacks) lives in proto/ and is written once.
//
// Size classes (one vocabulary everywhere):
//   short  -- header + payload fit in the transport's smallest unit (shm: the
//             queue cell itself, verbs: inline WQE). Completes on return.
//   bcopy  -- copied through a transport bounce buffer, up to max_bcopy bytes.
//             Completes on return (the user buffer is free again).
//   zcopy  -- user buffer read in place by the peer (shm: cross-memory attach,
//             done on return; verbs: registered memory and RDMA read, completes later).
//
// Data path calls go through a plain table of function pointers (`ops`) filled
// once when the endpoint is enabled; control path calls are virtual.
//
// Threading: a transport instance is used by one thread at a time; the core
// serialises calls according to the endpoint's threading level.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/uio.h>

#include "base/status.hpp"

namespace weft::transport {

using base::status;

/// Identifies a connection (send side) within one transport instance.
using conn_id = std::uint32_t;
/// Identifies a remote sender (receive side) within one transport instance.
/// For connection-oriented transports it is the same number as the conn_id.
using src_id = std::uint32_t;
inline constexpr std::uint32_t invalid_id = UINT32_MAX;

/// Active-message ids. Owned by proto/; listed here so every transport can size
/// its dispatch and reject out-of-range ids from the wire.
inline constexpr unsigned max_am_id = 32;

/// Raw endpoint address, as published by weft_ep_getname() and stored (compacted)
/// in the address vector. Fixed size; every transport fills its own part.
/// Wire format: docs/protocols.md "Endpoint address".
struct wire_address {
    std::uint32_t magic;                  ///< wire_address_magic
    std::uint16_t version;                ///< wire_address_version
    std::uint16_t transports;             ///< bit per transport_kind reachable at this address
    std::uint64_t node_id;                ///< identifies the host (hash of boot id and hostname)
    std::uint32_t pid;                    ///< process id
    std::uint32_t ep_id;                  ///< endpoint number within the process
    std::uint8_t transport_specific[40];  ///< per-transport parts (address_layout)
};
static_assert(sizeof(wire_address) == 64, "wire_address is a wire format");
inline constexpr std::size_t wire_address_ep_bytes = 8;          ///< per-endpoint part
inline constexpr std::size_t wire_address_node_bytes = 32;       ///< per-host part
inline constexpr std::uint32_t wire_address_magic = 0x74666577;  // "weft" little-endian
inline constexpr std::uint16_t wire_address_version = 2;

/// Where each transport keeps its bytes in wire_address::transport_specific.
/// [0, 8) is the per-endpoint word (kept in every AV entry); [8, 40) the
/// per-host part (interned once per distinct value in the AV's node table, so a
/// thousand processes that share a device and host cost it once).
struct address_layout {
    static constexpr std::size_t shm_cookie = 0;        ///< 3 bytes: shm segment cookie (24 bits)
    static constexpr std::size_t verbs_ud_qpn = 3;      ///< 3 bytes: verbs connection UD QPN
    static constexpr std::size_t tcp_port = 6;          ///< 2 bytes: reserved for tcp
    static constexpr std::size_t verbs_gid = 8;         ///< 16 bytes: verbs port GID
    static constexpr std::size_t verbs_lid = 24;        ///< 2 bytes: verbs port LID (InfiniBand)
    static constexpr std::size_t verbs_link = 26;       ///< 1 byte: verbs link layer (1 IB, 2 Ethernet)
    static constexpr std::size_t verbs_mtu = 27;        ///< 1 byte: verbs active path MTU (ibv_mtu)
    static constexpr std::size_t tcp_ipv4 = 28;         ///< 4 bytes: reserved for tcp
};
static_assert(address_layout::tcp_port + 2 <= wire_address_ep_bytes);
static_assert(address_layout::tcp_ipv4 + 4 <= sizeof(wire_address::transport_specific));

/// Little-endian 24-bit field of an address (shm cookie, verbs QPN).
[[nodiscard]] inline std::uint32_t address_u24(const wire_address &a, std::size_t off) noexcept
{
    return std::uint32_t{a.transport_specific[off]} |
           std::uint32_t{a.transport_specific[off + 1]} << 8 |
           std::uint32_t{a.transport_specific[off + 2]} << 16;
}
inline void set_address_u24(wire_address &a, std::size_t off, std::uint32_t v) noexcept
{
    a.transport_specific[off] = static_cast<std::uint8_t>(v);
    a.transport_specific[off + 1] = static_cast<std::uint8_t>(v >> 8);
    a.transport_specific[off + 2] = static_cast<std::uint8_t>(v >> 16);
}

/// The transports, in order of preference for a peer that more than one reaches.
enum class transport_kind : std::uint8_t { self = 0, shm = 1, verbs = 2, tcp = 3 };

/// Limits and capabilities of a transport instance.
struct attributes {
    std::size_t max_short;  ///< header + payload bytes of a short message
    std::size_t max_bcopy;  ///< header + payload bytes of one bcopy message
    std::size_t max_hdr;    ///< largest protocol header accepted with a bcopy send
    /// Receive buffers shared by every peer (verbs: the SRQ), which credits must
    /// not oversubscribe; 0 when each peer has its own receive resources.
    std::size_t shared_rx = 0;
};

/// What a receiver needs to read a sender's buffer directly (rendezvous, zcopy):
/// produced by the sender's transport (iface::expose), carried in the protocol
/// header, consumed by the receiver's transport (ops::get_zcopy).
struct remote_buffer {
    std::uint64_t addr;  ///< address in the sender's address space
    std::uint64_t key;   ///< transport key (verbs rkey); 0 for shm
};
static_assert(sizeof(remote_buffer) == 16, "remote_buffer is a wire format");

/// Upcalls from a transport into the layer above (set once, before enable).
struct handlers {
    /// One received active message: proto header followed by payload, `len` bytes
    /// in all, valid only during the call. `src` identifies the sender within this
    /// transport. The bytes came from a peer: the handler bounds-checks them.
    void (*am)(void *arg, src_id src, unsigned am_id, const void *data, std::size_t len);
    /// A peer failed (died, disconnected). Reported once per peer and side:
    /// conn (send side) and/or src (receive side) may be invalid_id.
    void (*peer_failed)(void *arg, conn_id conn, src_id src, status why);
    /// A get_zcopy that returned in_progress finished: ok, or the error (the
    /// destination buffer holds undefined bytes then). `cookie` is the caller's.
    void (*get_done)(void *arg, std::uint64_t cookie, status st);
    void *arg;
};

class iface;

/// Data-path operations: one table per transport instance, filled at enable.
struct ops {
    /// Send header + payload (hdr_len + len <= max_short). ok or again or an error.
    status (*send_short)(iface *tl, conn_id conn, unsigned am_id, const void *hdr,
                         std::size_t hdr_len, const void *payload, std::size_t len);
    /// Send header + `len` bytes gathered from `iov` starting at byte `offset` of the
    /// whole iovec (hdr_len + len <= max_bcopy). ok or again or an error.
    status (*send_bcopy)(iface *tl, conn_id conn, unsigned am_id, const void *hdr,
                         std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                         std::size_t offset, std::size_t len);
    /// Poll for incoming messages and internal events; calls handlers.
    /// Returns the number of events processed.
    unsigned (*progress)(iface *tl);
    /// Read `len` bytes of sender `src`'s memory described by `rb` into `iov`
    /// (zcopy rendezvous). ok: done on return (shm, cross-memory attach);
    /// in_progress: started (verbs RDMA read), handlers.get_done(cookie) reports
    /// the end, from a later progress() call, never from inside this one;
    /// not_supported: this transport cannot (or may not) read the peer's memory:
    /// the caller falls back to a copy protocol; another error: the peer failed.
    status (*get_zcopy)(iface *tl, src_id src, const struct iovec *iov, std::size_t iovcnt,
                        const remote_buffer &rb, std::size_t len, std::uint64_t cookie);
};

/// One transport instance inside one weft endpoint.
class iface {
  public:
    iface() = default;
    iface(const iface &) = delete;
    iface &operator=(const iface &) = delete;
    virtual ~iface() = default;

    [[nodiscard]] virtual transport_kind kind() const noexcept = 0;
    [[nodiscard]] virtual const attributes &attr() const noexcept = 0;

    /// Fill this transport's part of the endpoint's address (set its bit in
    /// addr.transports). Called once at enable after the common fields are set.
    [[nodiscard]] virtual status pack_address(wire_address &addr) = 0;

    /// Can this transport reach `peer` from here (e.g. same node for shm)?
    [[nodiscard]] virtual bool reachable(const wire_address &peer) const noexcept = 0;

    /// Create (or find) the connection to `peer`. Lazy: called on the first send
    /// to a peer. Cheap to call again for the same peer.
    [[nodiscard]] virtual status connect(const wire_address &peer, conn_id &out) = 0;

    /// The address of a remote sender seen on the receive side (to map it to an
    /// address vector index). no_entry if unknown.
    [[nodiscard]] virtual status remote_address(src_id src, wire_address &out) const = 0;

    /// Make `len` bytes at `buf` readable by peers with get_zcopy and describe them
    /// in `out`. not_supported if this transport has no zcopy reads. Every ok is
    /// paired with one unexpose(out) once no peer may read the buffer any more.
    [[nodiscard]] virtual status expose(const void *buf, std::size_t len, remote_buffer &out)
    {
        (void)buf;
        (void)len;
        (void)out;
        return status::not_supported;
    }

    /// Release what expose() set up for `rb` (verbs: the memory registration's
    /// reference). The buffer may be freed by its owner afterwards.
    virtual void unexpose(const remote_buffer &rb) noexcept { (void)rb; }

    /// Add up to `n` receive buffers to the shared receive resources (attributes::
    /// shared_rx), for a new peer's credits. Returns how many were added (0: at
    /// the configured limit, or nothing is shared).
    [[nodiscard]] virtual std::size_t grow_rx(std::size_t n)
    {
        (void)n;
        return 0;
    }

    /// Install the upcalls; called once before the first progress.
    virtual void set_handlers(const handlers &h) noexcept { handlers_ = h; }

    /// The data-path table.
    [[nodiscard]] const struct ops &ops() const noexcept { return ops_; }

  protected:
    struct ops ops_ {};
    handlers handlers_{};
};

/// What a transport needs to know about its endpoint when it is opened.
struct open_params {
    std::uint64_t node_id;  ///< this host
    std::uint32_t pid;      ///< this process
    std::uint32_t ep_id;    ///< this endpoint within the process
};

/// Always-inline wrappers for the data path.
[[gnu::always_inline]] inline status send_short(iface *tl, conn_id c, unsigned am_id,
                                                const void *hdr, std::size_t hdr_len,
                                                const void *payload, std::size_t len)
{
    return tl->ops().send_short(tl, c, am_id, hdr, hdr_len, payload, len);
}

[[gnu::always_inline]] inline status send_bcopy(iface *tl, conn_id c, unsigned am_id,
                                                const void *hdr, std::size_t hdr_len,
                                                const struct iovec *iov, std::size_t iovcnt,
                                                std::size_t offset, std::size_t len)
{
    return tl->ops().send_bcopy(tl, c, am_id, hdr, hdr_len, iov, iovcnt, offset, len);
}

[[gnu::always_inline]] inline unsigned progress(iface *tl)
{
    return tl->ops().progress(tl);
}

}  // namespace weft::transport
