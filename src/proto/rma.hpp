#pragma once
// One-sided put and get (GASNet-EX's extended API over its core): on the
// transport's own put or get when it has one for this peer and key (verbs RDMA,
// self's copy), and otherwise over active messages, which every transport has:
//
//   put: the data goes in am_id::put pieces (metered), each naming its target
//        address; the target checks the region (region.hpp), copies, and
//        answers am_id::put_ack per piece; the put completes (visible at the
//        target) when every byte is acknowledged.
//   get: am_id::get asks for [raddr, raddr + len); the target checks and
//        answers with am_id::get_reply pieces (or one carrying the error).
//
// The initiator checks the range and access rights the packed key gives
// before it sends anything; the target checks again against its region table
// (a key of a closed region, or a forged one, is refused there): target memory
// outside a live registration is never touched. Errors complete the operation
// with WEFT_EACCES.

#include <array>
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

#include "base/bufpool.hpp"
#include "base/mpool.hpp"
#include "proto/completion.hpp"
#include "proto/channel.hpp"
#include "proto/key.hpp"
#include "proto/region.hpp"
#include "proto/rndv.hpp"

namespace weft::proto {

// ------------------------------------------------------------------ wire formats

/// am_id::put: bytes [raddr, raddr + payload length) of the target's region `am_key`.
struct rma_put_hdr {
    std::uint64_t op;      ///< initiator's operation id, echoed in the ack
    std::uint64_t am_key;  ///< the region in the target's table (region.hpp)
    std::uint64_t raddr;   ///< target address of the first payload byte
};
static_assert(sizeof(rma_put_hdr) == 24);

/// am_id::put_ack: a piece of a put was written (or refused).
struct rma_ack_hdr {
    std::uint64_t op;     ///< as in rma_put_hdr
    wire_status status;   ///< 0, or -WEFT_EACCES (refused: the memory is untouched)
    std::uint32_t bytes;  ///< the piece's length
};
static_assert(sizeof(rma_ack_hdr) == 16);

/// am_id::get: read [raddr, raddr + len) of region `am_key`.
struct rma_get_hdr {
    std::uint64_t op;
    std::uint64_t am_key;
    std::uint64_t raddr;
    std::uint64_t len;  ///< bounded by the target's WEFT_MAX_MSG_SIZE
};
static_assert(sizeof(rma_get_hdr) == 32);

/// am_id::get_reply: bytes [offset, offset + payload length) of a get, or its error.
struct rma_reply_hdr {
    std::uint64_t op;
    std::uint64_t offset;  ///< in order; checked against what arrived
    wire_status status;    ///< 0, or the error (no payload then)
    std::uint32_t reserved;
};
static_assert(sizeof(rma_reply_hdr) == 24);

/// Flags of rma_event_hdr.
inline constexpr std::uint32_t rma_event_read = 1u << 0;   ///< a get (else a put or atomic)
inline constexpr std::uint32_t rma_event_count = 1u << 1;  ///< count it (WEFT_MR_RMA_EVENT region)
inline constexpr std::uint32_t rma_event_cq_data = 1u << 2;  ///< a put's remote CQ data

/// am_id::rma_event: sent after an operation's data, on the same ordered path,
/// so the target sees it only once the operation is visible there: a put's
/// remote CQ data (a receive completion), or an operation to count on a region
/// registered with WEFT_MR_RMA_EVENT (the target's remote counters).
struct rma_event_hdr {
    std::uint64_t data;   ///< remote CQ data
    std::uint64_t len;    ///< bytes the operation wrote or read
    std::uint32_t flags;  ///< rma_event_*
    std::uint32_t reserved;
};
static_assert(sizeof(rma_event_hdr) == 24);

/// The same event carried by the put itself, as the 32-bit immediate of a
/// transport's put_imm (verbs RDMA write with immediate), when the CQ data
/// fits in 30 bits: bit 31 = count it, bit 30 = CQ data present, bits 29..0 =
/// the CQ data. The length is the write's.
inline constexpr std::uint32_t imm_event_count = 1u << 31;
inline constexpr std::uint32_t imm_event_cq_data = 1u << 30;
inline constexpr std::uint64_t imm_event_data_max = (1u << 30) - 1;

// ------------------------------------------------------------------ keys

/// A peer's region as this endpoint addresses it: a packed key (key.hpp)
/// unpacked for one peer.
struct remote_key {
    std::uint64_t peer = 0;  ///< address-vector index it was unpacked for
    std::uint64_t base = 0;
    std::uint64_t len = 0;
    std::uint32_t access = 0;
    std::uint64_t am_key = 0;
    bool native = false;  ///< tl_key is valid for the transport the peer is reached by
    std::uint8_t tl = 0;  ///< that transport's index in the channel
    transport::rkey tl_key{};

    /// [addr, addr + n) lies in the region and `acc` is granted.
    [[nodiscard]] bool covers(std::uint64_t addr, std::size_t n, unsigned acc) const noexcept
    {
        return (access & acc) == acc && addr >= base && addr - base <= len &&
               n <= len - (addr - base);
    }
};

/// Unpack the packed key at `data` for the peer at address-vector index
/// `peer` (connecting to it): the part of the transport that reaches it, if the
/// key has one. bad_message for a malformed key; a connection error otherwise.
[[nodiscard]] status unpack_key(channel &ch, std::uint64_t peer, const void *data, std::size_t len,
                                remote_key &out);

/// A local pointer to [addr, addr + len) of the key's region when the
/// transport reaching its peer maps it (iface::map_rkey), else nullptr.
[[nodiscard]] void *map_key(channel &ch, const remote_key &key, std::uint64_t addr,
                            std::size_t len);

/// How a one-sided operation reports its end: fn(ctx, 0 or a positive WEFT_E*
/// code); or, when fn is nullptr, a completion for the operation context ctx on
/// the channel's sinks (channel::rma_write or rma_read).
struct rma_completion {
    void (*fn)(void *ctx, int err);
    void *ctx;
};

/// Which path a module takes for an operation (tests force the fallback).
enum class rma_path : std::uint8_t {
    best,      ///< the transport's own operation when it has one, else active messages
    fallback,  ///< active messages always
};

/// Options of one operation.
struct rma_options {
    rma_path path = rma_path::best;
    bool cq_entry = true;    ///< a CQ entry on success (sink completions; counters count anyway)
    bool copy = false;       ///< inject: copy the source now (reusable on return)
    bool cq_data = false;    ///< a put's remote CQ data goes to the target
    std::uint64_t data = 0;  ///< the remote CQ data
};

/// Report an operation's end to a sink (fn == nullptr in its rma_completion).
void rma_report(const completion_sink &sink, void *context, std::uint64_t flags, std::size_t len,
                std::uint64_t peer, int err);

/// An operation of the initiator (both paths).
struct rma_op : send_request, tracked_op {
    std::array<iovec, max_iov> iov;
    std::uint32_t iovcnt;
    bool is_get;
    bool native;  ///< on the transport's own put or get (op_done ends it)
    bool pushed;  ///< every request piece went
    int err;      ///< the first error reported by the target
    std::size_t len;
    std::size_t sent;  ///< bytes whose pieces went (put), request sent (get)
    std::size_t done;  ///< bytes acknowledged (put) or arrived (get)
    std::uint64_t raddr;
    std::uint64_t am_key;
    std::uint64_t id;      ///< in rma_module::ops_ (replies name it)
    std::uint64_t cookie;  ///< the transport's, on the native path
    rma_completion completion;
    bool cq_entry;             ///< rma_options::cq_entry
    base::pooled_buffer copy;  ///< inject: the copied source (data nullptr: none)
    class rma_module *module;
};

/// An rma_event message that could not go at once (queued in order after its operation).
struct rma_event_req : send_request {
    rma_event_hdr h;
    class rma_module *module;
};

/// A get the target answers (data pieces, or the error).
struct rma_reply : send_request {
    std::uint64_t op;
    std::uint64_t raddr;
    std::size_t len;
    std::size_t offset;
    wire_status status;
    class rma_module *module;
};

class rma_module {
  public:
    /// `regions`: the domain's region table (the target side checks requests
    /// against it).
    rma_module(channel &ch, const region_table &regions);
    rma_module(const rma_module &) = delete;
    rma_module &operator=(const rma_module &) = delete;
    ~rma_module();

    /// Write `len` bytes gathered from `iov` to [raddr, raddr + len) of the peer
    /// `key` was unpacked for. 0: started (or done): `c` reports the end, with
    /// WEFT_EACCES when the key does not cover the range; a negative code:
    /// nothing started (no memory, -WEFT_EAGAIN, an invalid argument).
    [[nodiscard]] int put(const iovec *iov, std::size_t iovcnt, std::size_t len,
                          std::uint64_t raddr, const remote_key &key, rma_completion c,
                          rma_path path = rma_path::best);
    /// Read [raddr, raddr + len) of the peer into `iov`; as put.
    [[nodiscard]] int get(const iovec *iov, std::size_t iovcnt, std::size_t len,
                          std::uint64_t raddr, const remote_key &key, rma_completion c,
                          rma_path path = rma_path::best);
    /// put and get with options (inject copy, remote CQ data, no CQ entry).
    [[nodiscard]] int start(bool is_get, const iovec *iov, std::size_t iovcnt, std::size_t len,
                            std::uint64_t raddr, const remote_key &key, rma_completion c,
                            const rma_options &o);
    /// Operations started and not yet completed.
    [[nodiscard]] std::size_t outstanding() const noexcept { return ops_.size(); }
    /// Largest inject (rma_options::copy) source.
    static constexpr std::size_t max_copy = 4096;

    /// Follow an operation just started towards `p` with an rma_event message,
    /// ordered after it (amo_module uses it too). A negative code: no memory.
    [[nodiscard]] int notify(peer_state *p, const rma_event_hdr &h);

  private:
    void finish(rma_op *op, int err);
    static status push_event(channel &ch, send_request *r);
    static void on_event(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_imm(void *m, rx_context &rx, std::uint32_t imm, std::size_t len);
    /// Count or complete a peer's event (an rma_event message or an immediate).
    void deliver(const rx_context &rx, const rma_event_hdr &h);
    static status push_op(channel &ch, send_request *r);
    static status push_reply(channel &ch, send_request *r);
    static void native_done(tracked_op *op, status st);
    static void on_put(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_ack(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_get(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_reply(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void peer_failed(void *m, std::uint32_t index, int err);
    static void source_failed(void *m, unsigned tl, transport::src_id src);

    channel &ch_;
    const region_table &regions_;
    base::mpool<rma_op> op_pool_;
    base::mpool<rma_reply> reply_pool_;
    base::mpool<rma_event_req> event_pool_;
    base::bufpool copies_{{.min_size = 256, .max_size = max_copy, .chunk_bytes = 64 << 10}};
    id_table<rma_op> ops_;  ///< operations in flight (replies name them by id)
    static const request_ops op_ops;
    static const request_ops reply_ops;
    static const request_ops event_ops;
};

}  // namespace weft::proto
