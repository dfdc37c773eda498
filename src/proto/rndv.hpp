#pragma once
// Rendezvous: a large message waits at its sender, described by a small
// header, until its receiver takes it (docs/variable-messages.md). The sender
// exposes its buffer to the transport's get and sends rndv_rts; the receiver
// reads the data straight into its buffer with the generic transport get and
// answers rndv_fin; when the transport has no get for this peer (or declines:
// shm's pipelined copy is faster on a busy sender), the receiver answers
// rndv_cts and the sender sends the data as rndv_data pieces. An unexpected
// large message costs its receiver the header record, not the data.
//
// The module knows nothing of tags: its consumer (the tag module) gets each
// request to send (the opaque "match" bytes after the header: tag, data,
// flags) and decides when to start the transfer into which buffers, or to
// discard it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

#include "proto/channel.hpp"

namespace weft::proto {

/// The largest iovec count of a message.
inline constexpr std::size_t max_iov = 4;

/// Flags in rndv_rts_hdr::flags.
inline constexpr std::uint8_t rts_flag_get = 1u << 0;  ///< addr/rkey valid: read it with get

/// am_id::rndv_rts: a message of `total_len` bytes waits at the sender; the
/// consumer's match bytes follow (match_len of them). `sreq` is the sender's
/// request id, echoed back (checked by the sender).
struct rndv_rts_hdr {
    std::uint64_t sreq;       ///< sender's request id
    std::uint64_t total_len;  ///< message length (bounded by max_msg_size on receipt)
    std::uint64_t addr;       ///< the buffer in the sender's address space (rts_flag_get)
    std::uint8_t rkey[transport::max_rkey_size];  ///< the transport's packed key for it
    std::uint8_t rkey_len;                        ///< bytes of rkey used
    std::uint8_t flags;                           ///< rts_flag_*
    std::uint8_t match_len;                       ///< consumer bytes after this header
    std::uint8_t reserved[5];                     ///< zero
};
static_assert(sizeof(rndv_rts_hdr) == 48, "rndv_rts_hdr is a wire format");
/// Most consumer bytes an rts carries.
inline constexpr std::size_t rndv_match_max = 32;

/// rndv_fin_hdr::status values.
inline constexpr std::uint32_t fin_done = 0;       ///< the receiver has the data
inline constexpr std::uint32_t fin_discarded = 1;  ///< the receiver discarded the message
inline constexpr std::uint32_t fin_failed = 2;     ///< the receiver could not read the data
/// The receiver could not keep the header: its limit of unexpected rendezvous
/// headers per sender (WEFT_UNEXPECTED_RNDV_MAX) or its memory. The send fails
/// with WEFT_ENOMEM; the message was not delivered.
inline constexpr std::uint32_t fin_refused = 3;

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

/// Where a rendezvous message waits: what its rts said, and where it came from.
struct rndv_info {
    std::uint64_t sreq;
    std::uint64_t total;
    std::uint64_t addr;
    std::uint8_t rkey[transport::max_rkey_size];
    std::uint8_t rkey_len;
    std::uint8_t flags;
    std::uint8_t tl;        ///< transport it came by
    transport::src_id src;  ///< sender within that transport
};

/// A rendezvous send. The owner (consumer) fills the data part and `done`,
/// then calls rndv_module::send(); `done` reports the end (0 or a positive
/// WEFT_E* code), after which the owner frees the request.
struct rndv_send : send_request {
    std::array<iovec, max_iov> iov;
    std::uint32_t iovcnt;
    std::uint8_t match_len;
    std::uint8_t rts_sent;  ///< the rts went (the request waits for fin or cts)
    std::uint8_t exposed;   ///< `exp` holds an exposure of the buffer
    std::uint8_t data;      ///< after a cts: the data goes as rndv_data pieces
    std::size_t total;
    std::uint8_t match[rndv_match_max];
    /// The send ended: 0 or a positive WEFT_E* code. The owner completes and frees it.
    void (*done)(rndv_send *r, int err);
    /// The endpoint is closing: free it without a completion.
    void (*release)(rndv_send *r);
    // The module's state:
    class rndv_module *owner;
    std::uint64_t id;    ///< in rndv_module::sends_ while waiting for the receiver
    std::uint64_t rreq;  ///< after a cts: the receiver's id
    std::size_t offset;  ///< after a cts: bytes sent
    transport::exposure exp;
};

/// A rendezvous receive: the owner fills the buffer part and `done`, then
/// calls rndv_module::start(); `done` reports the end (0 or a positive
/// WEFT_E* code) and the bytes received.
struct rndv_recv : tracked_op {
    const iovec *dst;          ///< where the data goes
    std::uint32_t dst_cnt;     ///< iovec entries of dst
    std::size_t dst_capacity;  ///< bytes the buffers hold
    void (*rv_done)(rndv_recv *r, int err, std::size_t received);
    // The module's state:
    class rndv_module *owner;  ///< set by start()
    std::uint64_t rv_id;       ///< in rndv_module::recvs_ while data is expected
    std::uint64_t rv_sreq;
    std::uint64_t rv_cookie;  ///< the transport get's, while `rv_reading`
    std::size_t rv_total;
    std::size_t rv_received;
    transport::src_id rv_src;
    std::uint8_t rv_tl;
    bool rv_reading;  ///< a get is in flight (op_done ends it)
};

/// How a rendezvous receiver chooses to move the data, per transport: one get
/// (the receiver reads the sender's buffer) from `get_min` bytes, a push in
/// pieces (rndv_cts, the sender copies) below; from `get_min_busy` when the
/// sender's CPU is shared with other receivers; always a get when the sender is
/// idle (a push would wait for it). docs/protocols.md "Choosing how a rendezvous moves its data".
struct rndv_choice {
    std::size_t get_min = 0;
    std::size_t get_min_busy = 0;
    bool automatic = true;  ///< from the cost models (else WEFT_RNDV_GET_MIN)
};

/// The smallest message length from which one get is estimated no slower than
/// a push in pieces of `piece` bytes, from a transport's cost models
/// (attributes::get_cost against attributes::cost); SIZE_MAX when never. With
/// `busy`, the sender's side of the push runs at half its bandwidth (its CPU
/// shared with other receivers). 0 when the get is not modelled.
[[nodiscard]] std::size_t rndv_get_min(const transport::attributes &a, std::size_t piece,
                                       bool busy) noexcept;

/// Read `len` bytes with get (else have the sender push them), by `c` and what
/// the sender is doing.
[[nodiscard]] bool rndv_read_pays(const rndv_choice &c, transport::peer_activity sender,
                                  std::size_t len) noexcept;

/// What the rendezvous module asks of its consumer.
struct rndv_consumer {
    /// An rts arrived: start the transfer (rndv_module::start), keep `info` to
    /// start or discard it later, or discard it now. `match` are the sender's
    /// consumer bytes.
    void (*on_rts)(void *ctx, rx_context &rx, const rndv_info &info, const std::uint8_t *match,
                   std::size_t match_len);
    void *ctx;
};

class rndv_module {
  public:
    /// `get_min`: WEFT_RNDV_GET_MIN (base::config_size_auto: from each
    /// transport's cost models).
    rndv_module(channel &ch, const rndv_consumer &consumer, std::size_t get_min);
    rndv_module(const rndv_module &) = delete;
    rndv_module &operator=(const rndv_module &) = delete;
    ~rndv_module();

    /// Start a rendezvous send (the request is queued on its peer in order).
    void send(rndv_send *r);
    /// Turn a queued request that had not started into a rendezvous send, in
    /// place (an eager message the credits cannot carry: docs/credits.md). Its
    /// ops become the rendezvous's; the caller returns its push() again.
    void convert(rndv_send *r);
    /// Move the data of a message that waits at its sender into `r`'s buffers.
    void start(rndv_recv *r, const rndv_info &info);
    /// Tell the sender its buffer is free: the message is discarded.
    void discard(const rndv_info &info);
    /// Tell the sender its message cannot be taken (fin_refused): its send fails.
    void refuse(const rndv_info &info);
    /// Rendezvous sends waiting for their receiver (tests, diagnostics).
    [[nodiscard]] std::size_t waiting_sends() const noexcept { return sends_.size(); }
    /// The choice for transport `tl` (computed on first use).
    [[nodiscard]] const rndv_choice &choice(unsigned tl);
    /// Rendezvous receives that read the data with get / asked for a push
    /// (diagnostics and tests).
    [[nodiscard]] std::uint64_t reads() const noexcept { return reads_; }
    [[nodiscard]] std::uint64_t pushes() const noexcept { return pushes_; }
    /// Release every send waiting for its receiver (release callbacks) and forget
    /// every receive waiting for data: the endpoint is closing. Idempotent; the
    /// owner calls it before its own pools go.
    void shutdown();

    static const request_ops send_ops;

  private:
    static void on_rts(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_fin(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_cts(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_data(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static int dump_rts(const std::uint8_t *data, std::size_t len, char *buf, std::size_t size);
    static void peer_failed(void *m, std::uint32_t index, int err);
    static void source_failed(void *m, unsigned tl, transport::src_id src);
    static void read_done(tracked_op *op, status st);

    static status push(channel &ch, send_request *r);
    /// A connection to sender `src` on transport `tl` (where its exposure is).
    [[nodiscard]] transport::conn_id conn_on(unsigned tl, transport::src_id src);
    void expose(rndv_send *r);
    void finish_send(rndv_send *r, int err);
    void finish_read(rndv_recv *r, status st);
    void fail_recv(rndv_recv *r, int err);
    /// Read `len` bytes with get (else ask for a push), for the sender on `conn`.
    [[nodiscard]] bool read_pays(unsigned tl, transport::conn_id conn, std::size_t len);

    channel &ch_;
    rndv_consumer consumer_;
    std::size_t get_min_;  ///< WEFT_RNDV_GET_MIN, or config_size_auto
    std::array<rndv_choice, max_transports> choice_{};
    std::array<bool, max_transports> chosen_{};
    std::uint64_t reads_ = 0;
    std::uint64_t pushes_ = 0;
    id_table<rndv_send> sends_;  ///< sends whose rts went, waiting for fin or cts
    id_table<rndv_recv> recvs_;  ///< receives waiting for their data
};

}  // namespace weft::proto
