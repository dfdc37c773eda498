#pragma once
// The transport interface: what every transport (self, shm, verbs, ...) provides
// to the protocol layer (src/proto). docs/architecture.md draws the picture.
//
// A transport is an active-message engine, in the spirit of GASNet-EX's core API
// and UCX's UCT: it moves a small protocol header plus payload to a peer and
// hands them, on the receiving side, to one handler with an 8-bit
// active-message id and 8 bits of flags that it carries without looking at them.
// That is the required core. Optionally it also offers one-sided operations on
// a peer's memory -- put, get and atomics -- to any remote address and key; a
// transport that lacks one gets it from proto/, over active messages
// (GASNet-EX's extended API, with a fallback for every operation). The
// attributes say which (capability flags, atomic op masks), and a cost model
// (latency, bandwidth) lets proto/ choose a transport per peer.
//
// Size classes (one vocabulary everywhere):
//   short  -- header + payload fit in the transport's smallest unit (shm: the
//             queue cell itself, verbs: inline WQE). Completes on return.
//   bcopy  -- copied through a transport bounce buffer, up to max_bcopy bytes.
//             Completes on return (the user buffer is free again).
//   zcopy  -- a user buffer read or written in place (put, get: shm cross-memory
//             attach, verbs RDMA); completes on return or later (op_done).
//
// Data path calls go through a plain table of function pointers (`ops`) filled
// once when the instance is opened; control path calls are virtual.
//
// Threading: a transport instance is used by one thread at a time; the core
// serialises calls according to the endpoint's threading level. A memory
// domain may be used by several endpoints' threads (its calls are control path
// and internally serialised).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/uio.h>

#include "base/status.hpp"
#include "transport/address.hpp"

namespace weft::transport {

using base::status;

/// Identifies a connection (send side) within one transport instance.
using conn_id = std::uint32_t;
/// Identifies a remote sender (receive side) within one transport instance.
/// For connection-oriented transports it is the same number as the conn_id.
using src_id = std::uint32_t;
inline constexpr std::uint32_t invalid_id = UINT32_MAX;

// ------------------------------------------------------------------ active messages

/// An active message's id and flags as a transport carries them, end to end and
/// unchanged: bits 0-7 the id (all 256 usable by proto/), bits 8-15 flags that
/// only proto/ interprets (the credit prefix flag).
using am_word = std::uint16_t;
inline constexpr unsigned am_id_count = 256;

[[nodiscard]] constexpr am_word make_am(unsigned id, unsigned flags) noexcept
{
    return static_cast<am_word>((id & 0xff) | (flags & 0xff) << 8);
}
[[nodiscard]] constexpr unsigned am_id_of(am_word w) noexcept
{
    return w & 0xffu;
}
[[nodiscard]] constexpr unsigned am_flags_of(am_word w) noexcept
{
    return w >> 8;
}

// ------------------------------------------------------------------ capabilities

/// Capability flags (attributes::caps).
namespace cap {
inline constexpr std::uint64_t am = 1ull << 0;      ///< short and bcopy active messages (required)
inline constexpr std::uint64_t put = 1ull << 1;     ///< ops::put to a peer's registered memory
inline constexpr std::uint64_t get = 1ull << 2;     ///< ops::get from a peer's registered memory
inline constexpr std::uint64_t atomic = 1ull << 3;  ///< ops::atomic (see the op masks)
/// Reaches only its own endpoint (self): never chosen for another process.
inline constexpr std::uint64_t loopback = 1ull << 4;
/// Receive buffers shared by every peer (verbs SRQ): credits come from one pool.
inline constexpr std::uint64_t shared_rx = 1ull << 5;
/// progress() has work only after handlers.wake (self: its queue was empty):
/// the layer above polls it on demand instead of on every progress call.
inline constexpr std::uint64_t on_demand = 1ull << 6;
/// ops::atomic runs on this process's or the target's CPU, with the same
/// atomic instructions as proto/'s software atomics (self): atomic with respect
/// to them. Without it, a transport's atomics are the NIC's (verbs), which are
/// not atomic with respect to CPU atomics on the same location.
inline constexpr std::uint64_t cpu_atomics = 1ull << 7;
}  // namespace cap

/// Atomic operations a transport may offer natively (bit i of the op masks is
/// atomic_op i). proto/ offers every operation, on every type, in software.
enum class atomic_op : std::uint8_t { add = 0, and_ = 1, or_ = 2, xor_ = 3, swap = 4, cswap = 5 };
inline constexpr unsigned atomic_op_count = 6;

[[nodiscard]] constexpr std::uint32_t atomic_bit(atomic_op op) noexcept
{
    return 1u << static_cast<unsigned>(op);
}

/// The time an operation of `len` bytes takes on this transport, as proto/
/// estimates it to choose a transport per peer (UCX's lane selection uses the
/// same shape): overhead of posting it, plus latency, plus len / bandwidth.
struct cost_model {
    double overhead_ns;     ///< CPU time to post one message
    double latency_ns;      ///< one-way latency of a small message
    double bandwidth_mbps;  ///< sustained bandwidth, MB/s (10^6 bytes per second)

    [[nodiscard]] constexpr double time_ns(std::size_t len) const noexcept
    {
        return overhead_ns + latency_ns + static_cast<double>(len) * 1e3 / bandwidth_mbps;
    }
};

/// Limits and capabilities of a transport instance.
struct attributes {
    std::uint64_t caps = 0;       ///< cap::*
    std::size_t max_short = 0;    ///< header + payload bytes of a short message
    std::size_t max_bcopy = 0;    ///< header + payload bytes of one bcopy message
    std::size_t max_hdr = 0;      ///< largest protocol header accepted with a bcopy send
    std::size_t max_put = 0;      ///< largest single put (cap::put)
    std::size_t max_get = 0;      ///< largest single get (cap::get)
    std::size_t max_put_imm = 0;  ///< largest put with an immediate (ops::put_imm; 0: none)
    std::uint32_t atomic32 = 0;   ///< non-fetching atomic ops on 32-bit values (atomic_bit)
    std::uint32_t atomic32f = 0;  ///< fetching atomic ops on 32-bit values
    std::uint32_t atomic64 = 0;   ///< non-fetching atomic ops on 64-bit values
    std::uint32_t atomic64f = 0;  ///< fetching atomic ops on 64-bit values
    /// Receive buffers shared by every peer (cap::shared_rx), which credits must
    /// not oversubscribe; 0 when each peer has its own receive resources.
    std::size_t shared_rx = 0;
    /// Active messages: a message of len bytes, and the pieces of a rendezvous
    /// the sender pushes (its bandwidth is that of a pipelined push).
    cost_model cost{};
    /// ops::get of an exposure (a rendezvous read by the receiver: one copy).
    /// A bandwidth of 0 leaves it out of the model: the get is always taken.
    /// proto/ compares the two to choose a rendezvous method per message
    /// (docs/protocols.md "Choosing how a rendezvous moves its data").
    cost_model get_cost{};
};

/// What a remote sender is doing, as far as its transport can tell
/// (iface::activity): a rendezvous receiver weighs a push, which needs the
/// sender's CPU, against reading the data itself.
enum class peer_activity : std::uint8_t {
    unknown,  ///< no hint: the cost models alone decide
    running,  ///< progressing, pushing to one receiver at most: a push runs at full speed
    busy,     ///< progressing, pushing rendezvous data to other receivers too: its CPU is shared
    idle,     ///< not progressing (descheduled, computing): a push would wait for it
};

// ------------------------------------------------------------------ memory

/// Access rights of a registration (memory_domain::reg).
namespace access {
inline constexpr unsigned local = 1u << 0;          ///< a local buffer of this process's operations
inline constexpr unsigned remote_read = 1u << 1;    ///< peers' gets
inline constexpr unsigned remote_write = 1u << 2;   ///< peers' puts
inline constexpr unsigned remote_atomic = 1u << 3;  ///< peers' atomics
}  // namespace access

/// Largest packed remote key of one transport (memory_domain::rkey_size).
inline constexpr std::size_t max_rkey_size = 16;

/// A peer's memory as one transport addresses it: unpacked from the bytes its
/// memory domain packed (iface::unpack_rkey), used by put, get and atomic.
struct rkey {
    std::uint64_t w[2];  ///< transport-specific (verbs: the rkey; self: memory domain, region slot,
                         ///< generation)
};

/// A local buffer made readable by one peer's get for the length of a transfer
/// (rendezvous): iface::expose fills it, iface::unexpose releases it.
struct exposure {
    std::uint64_t handle = 0;            ///< the transport's (verbs: the registration)
    std::uint8_t rkey[max_rkey_size]{};  ///< packed key for the peer's unpack_rkey
    std::uint8_t rkey_len = 0;
};

/// Registration of memory with one transport, per weft domain (UCX's memory
/// domain): a registration here gives a packed key that peers unpack with
/// their iface and pass to put, get and atomic. Control path; thread-safe.
class memory_domain {
  public:
    memory_domain() = default;
    memory_domain(const memory_domain &) = delete;
    memory_domain &operator=(const memory_domain &) = delete;
    virtual ~memory_domain() = default;

    /// Bytes of a packed key (0: this transport keeps no key; peers reach such
    /// memory through proto/'s active-message fallback).
    [[nodiscard]] virtual std::size_t rkey_size() const noexcept = 0;
    /// Register [buf, buf + len) with `acc` (access::*); `handle` identifies it.
    [[nodiscard]] virtual status reg(void *buf, std::size_t len, unsigned acc,
                                     std::uint64_t &handle) = 0;
    /// Deregister: afterwards a peer's operation with its key fails.
    virtual void dereg(std::uint64_t handle) noexcept = 0;
    /// The packed key of a registration: rkey_size() bytes into `out`.
    [[nodiscard]] virtual status pack_rkey(std::uint64_t handle, std::uint8_t *out) const = 0;

    /// Allocate `len` bytes of memory that peers of this transport can map
    /// into their address space (shm: a shared-memory object), page-aligned and
    /// zeroed: registrations inside it give keys that let peers reach it with
    /// loads, stores and CPU atomics instead of a system call or a message.
    /// not_supported when this transport has no such memory.
    [[nodiscard]] virtual status alloc(std::size_t len, void *&addr, std::uint64_t &handle)
    {
        (void)len;
        (void)addr;
        (void)handle;
        return status::not_supported;
    }
    /// Free what alloc() returned (after every registration inside it is gone).
    virtual void free(std::uint64_t handle) noexcept { (void)handle; }
};

// ------------------------------------------------------------------ one-sided operations

/// An atomic operation on a peer's memory (ops::atomic).
struct atomic_args {
    atomic_op op;
    bool fetch;             ///< write the old value to `result`
    std::uint8_t width;     ///< 4 or 8 bytes
    std::uint64_t operand;  ///< the value (swap: the new value; cswap: the new value)
    std::uint64_t compare;  ///< cswap: the expected value
    void *result;           ///< fetch: where the old value goes (width bytes)
    std::uint64_t raddr;    ///< remote address (naturally aligned)
    rkey key;
};

/// Upcalls from a transport into the layer above (set once, before the first progress).
struct handlers {
    /// One received active message: proto header followed by payload, `len`
    /// bytes in all, valid only during the call. `src` identifies the sender
    /// within this transport. The bytes came from a peer: the handler
    /// bounds-checks them.
    void (*am)(void *arg, src_id src, am_word am, const void *data, std::size_t len);
    /// A peer failed (died, disconnected, was refused). Reported once per peer
    /// and side: conn (send side) and/or src (receive side) may be invalid_id.
    void (*peer_failed)(void *arg, conn_id conn, src_id src, status why);
    /// A put, get or atomic that returned in_progress finished: ok, or the error
    /// (a get's destination then holds undefined bytes). `cookie` is the caller's.
    void (*op_done)(void *arg, std::uint64_t cookie, status st);
    /// cap::on_demand transports: progress() has work now. May be called from
    /// inside a send; it must only note it.
    void (*wake)(void *arg);
    /// A peer's put_imm: `len` bytes are in place in this process's memory,
    /// and `imm` is the 32-bit value the peer sent with them. It used one of
    /// this side's receive buffers, like an active message from `src` (and
    /// arrives in order with them). The value came from a peer: untrusted.
    void (*imm)(void *arg, src_id src, std::uint32_t imm, std::size_t len);
    void *arg;
};

class iface;

/// Data-path operations: one table per transport instance, filled at open.
/// put, get and atomic are nullptr when the capability is absent.
struct ops {
    /// Send header + payload (hdr_len + len <= max_short). ok or again or an error.
    status (*send_short)(iface *tl, conn_id conn, am_word am, const void *hdr, std::size_t hdr_len,
                         const void *payload, std::size_t len);
    /// Send header + `len` bytes gathered from `iov` starting at byte `offset` of the
    /// whole iovec (hdr_len + len <= max_bcopy). ok or again or an error.
    status (*send_bcopy)(iface *tl, conn_id conn, am_word am, const void *hdr, std::size_t hdr_len,
                         const struct iovec *iov, std::size_t iovcnt, std::size_t offset,
                         std::size_t len);
    /// Poll for incoming messages and internal events; calls handlers (never
    /// from inside a send). Returns the number of events processed.
    unsigned (*progress)(iface *tl);
    /// Write `len` bytes gathered from `iov` to [raddr, raddr + len) of the peer
    /// on `conn`, described by `key`. ok: done on return (remotely visible);
    /// in_progress: handlers.op_done(cookie) reports the end from a later
    /// progress(); again: no resources now; not_supported: not for this key or
    /// size (the caller falls back to active messages); another error: failed.
    status (*put)(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                  std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    /// Read [raddr, raddr + len) of the peer into `iov`; returns as put.
    status (*get)(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                  std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    /// An atomic on the peer's memory; returns as put.
    status (*atomic)(iface *tl, conn_id conn, const atomic_args &a, std::uint64_t cookie);
    /// A put (len <= attributes::max_put_imm) that also hands `imm` to the peer
    /// (handlers.imm) once the data is in place there, in order with this
    /// connection's active messages: verbs RDMA write with immediate. It uses
    /// one of the peer's receive buffers, so the caller spends a flow-control
    /// credit on it as on a message. Returns as put; nullptr when absent.
    status (*put_imm)(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint32_t imm,
                      std::uint64_t cookie);
};

/// What a transport needs to know about its endpoint when it is opened.
struct open_params {
    std::uint64_t node_id;  ///< this host
    std::uint32_t pid;      ///< this process
    std::uint32_t ep_id;    ///< this endpoint within the process
};

/// One transport instance inside one weft endpoint.
class iface {
  public:
    iface() = default;
    iface(const iface &) = delete;
    iface &operator=(const iface &) = delete;
    virtual ~iface() = default;

    [[nodiscard]] virtual const attributes &attr() const noexcept = 0;

    /// Add this transport's blob(s) to the endpoint's address. Called once
    /// after open.
    [[nodiscard]] virtual status pack_address(address_builder &b) = 0;

    /// The endpoint's complete address (every transport's blobs and proto/'s),
    /// given once after every pack_address: what this transport shows a peer as
    /// the sender's (shm sender slots, the verbs handshake).
    virtual void set_local_address(const address &a) noexcept { (void)a; }

    /// Can this transport reach `peer` from here (e.g. same node for shm)?
    [[nodiscard]] virtual bool reachable(const address &peer) const noexcept = 0;

    /// Create (or find) the connection to `peer`. Lazy: called on the first
    /// operation towards a peer. Cheap to call again for the same peer.
    [[nodiscard]] virtual status connect(const address &peer, conn_id &out) = 0;

    /// The address of a remote sender seen on the receive side (to map it to an
    /// address vector index, or to answer it). no_entry if unknown.
    [[nodiscard]] virtual status remote_address(src_id src, address &out) const = 0;

    /// Make `len` bytes at `buf` readable by the peer on `conn` with get, and
    /// describe them in `out`. not_supported if this transport has no get. Every
    /// ok is paired with one unexpose(out) once no peer may read the buffer.
    [[nodiscard]] virtual status expose(conn_id conn, const void *buf, std::size_t len,
                                        exposure &out)
    {
        (void)conn;
        (void)buf;
        (void)len;
        (void)out;
        return status::not_supported;
    }

    /// Release what expose() set up. The buffer may be freed by its owner afterwards.
    virtual void unexpose(const exposure &e) noexcept { (void)e; }

    /// What the peer on `conn` is doing now (a hint, read once per rendezvous
    /// receive that the cost models alone would push; never wrong data, at
    /// worst the slower of two correct copies).
    [[nodiscard]] virtual peer_activity activity(conn_id conn) const noexcept
    {
        (void)conn;
        return peer_activity::unknown;
    }

    /// A local address through which this process reaches [raddr, raddr + len)
    /// of the peer on `conn` described by `key` with loads and stores (shm:
    /// memory the peer allocated with memory_domain::alloc, mapped here), or
    /// nullptr when there is none (OpenSHMEM's shmem_ptr). Valid until the key's
    /// region is closed by its owner.
    [[nodiscard]] virtual void *map_rkey(conn_id conn, const rkey &key, std::uint64_t raddr,
                                         std::size_t len)
    {
        (void)conn;
        (void)key;
        (void)raddr;
        (void)len;
        return nullptr;
    }

    /// Unpack a peer's packed key (from the memory domain of this transport on
    /// the peer's side, or from the peer's expose). bad_message if malformed.
    [[nodiscard]] virtual status unpack_rkey(const std::uint8_t *data, std::size_t len,
                                             rkey &out) const
    {
        (void)data;
        (void)len;
        (void)out;
        return status::not_supported;
    }

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

/// Always-inline wrappers for the data path.
[[gnu::always_inline]] inline status send_short(iface *tl, conn_id c, am_word am, const void *hdr,
                                                std::size_t hdr_len, const void *payload,
                                                std::size_t len)
{
    return tl->ops().send_short(tl, c, am, hdr, hdr_len, payload, len);
}

[[gnu::always_inline]] inline status send_bcopy(iface *tl, conn_id c, am_word am, const void *hdr,
                                                std::size_t hdr_len, const struct iovec *iov,
                                                std::size_t iovcnt, std::size_t offset,
                                                std::size_t len)
{
    return tl->ops().send_bcopy(tl, c, am, hdr, hdr_len, iov, iovcnt, offset, len);
}

[[gnu::always_inline]] inline unsigned progress(iface *tl)
{
    return tl->ops().progress(tl);
}

}  // namespace weft::transport
