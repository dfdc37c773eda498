#pragma once
// The tagged-message protocol engine of one endpoint, written once for every
// transport: tag matching (proto/match.hpp), eager messages carried in one
// active message, multi-fragment eager messages for anything larger than one
// transport bcopy unit, peek/claim/discard, cancel, and peer failure.
//
// Data path of a tagged send (docs/architecture.md):
//   send -> peer lookup (AV index, connect on first use) -> short or bcopy
//   active message -> completion written at once (the transport copied it).
// A send that cannot go out at once (queue full, multi-fragment) becomes a
// send_request queued on its peer, pushed by progress() in order.
//
// Data path of a receive:
//   transport progress -> am handler -> src id to AV index -> matcher ->
//   copy into the posted buffer -> completion; or an unexpected record.
//
// Large messages (above the rendezvous threshold) travel as variable messages
// (docs/variable-messages.md): the sender sends a rndv_rts header describing its
// buffer and keeps the buffer; a matching receive (or the application's claim of
// a WEFT_VARIABLE_MSG notification) reads the data straight from the sender's
// buffer with the transport's zcopy get and answers rndv_fin, or answers rndv_cts
// when the transport cannot read peer memory and receives rndv_data pieces. An
// unexpected large message costs the receiver its header record, not a buffer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/uio.h>
#include <unordered_map>
#include <vector>

#include "base/mpool.hpp"
#include "base/status.hpp"
#include "proto/completion.hpp"
#include "proto/credits.hpp"
#include "proto/match.hpp"
#include "proto/wire.hpp"
#include "transport/iface.hpp"
#include "weft/weft.h"

namespace weft::proto {

using base::status;

/// The largest iovec count of tsendv/trecvv.
inline constexpr std::size_t max_iov = 4;
/// Unexpected messages up to this size are stored inside their record.
inline constexpr std::size_t unexpected_inline = 128;

/// What the engine needs from the address vector (implemented by core/av).
class address_book {
  public:
    virtual ~address_book() = default;
    /// The address at `index`; no_entry if out of range or removed.
    [[nodiscard]] virtual status lookup(std::uint64_t index,
                                        transport::wire_address &out) const = 0;
    /// The index of `addr`, or unknown_source.
    [[nodiscard]] virtual std::uint32_t reverse(const transport::wire_address &addr) const = 0;
};

struct peer_state;

/// A posted receive.
struct recv_request : posted_recv {
    void *context;
    std::uint64_t op_flags;  ///< WEFT_COMPLETION ...
    std::array<iovec, max_iov> iov;
    std::uint32_t iovcnt;
    std::size_t capacity;  ///< bytes the buffers hold
    // Filled when matched:
    std::uint64_t msg_tag;
    std::uint64_t msg_data;
    std::uint64_t msg_flags;  ///< WEFT_REMOTE_CQ_DATA if data came
    std::uint32_t msg_src;
    std::size_t total;     ///< message length
    std::size_t received;  ///< bytes seen so far (copied or dropped past capacity)
    // Rendezvous: a zcopy read in progress, or pieces arriving as rndv_data after a
    // clear-to-send (copy fallback).
    std::uint64_t rreq_id;       ///< id in tag_engine::rndv_recvs_
    std::uint64_t rndv_sreq;     ///< the sender's request id (for the fin)
    unsigned rndv_tl;            ///< transport the sender uses
    transport::src_id rndv_src;  ///< sender within that transport
    bool reading;                ///< a zcopy read is in flight (get_done ends it)
};

/// Where a rendezvous message's data waits: at the sender, described by its rts.
struct rndv_info {
    std::uint64_t sreq;  ///< sender's request id
    transport::remote_buffer rb;
    std::uint32_t flags;    ///< rts_flag_*
    unsigned tl;            ///< transport it came by
    transport::src_id src;  ///< sender within that transport
};

/// A message that arrived before its receive (possibly still being reassembled),
/// a rendezvous header whose data waits at the sender, or a variable message
/// notified to the application and not yet claimed.
struct unexpected_record : unexpected_msg {
    std::uint64_t data;
    std::uint64_t flags;    ///< WEFT_REMOTE_CQ_DATA if data came
    std::size_t total;      ///< message length
    std::size_t received;   ///< bytes stored so far
    std::uint8_t *buf;      ///< inline_buf or heap
    bool claimed;           ///< reserved by PEEK|CLAIM, out of the matcher
    bool discard;           ///< discarded while fragments are still arriving
    bool rndv;              ///< the data waits at the sender (`rv`); no buffer here
    bool variable;          ///< notified as a WEFT_VARIABLE_MSG; `var` is the app's handle
    rndv_info rv;           ///< rendezvous header (if rndv)
    weft_var_context var;   ///< handed to the application with the notification
    peer_state *cr_peer;    ///< credits held by this record go back to this peer
    std::uint32_t cr_held;  ///< wire messages (credits) whose data this record holds
    alignas(8) std::uint8_t inline_buf[unexpected_inline];
};

/// What a queued send_request sends.
enum class send_kind : std::uint8_t {
    eager,      ///< a tagged message, one or more eager fragments
    rndv_rts,   ///< a rendezvous header; afterwards the request waits for fin or cts
    rndv_data,  ///< the data of a rendezvous after a cts, as rndv_data pieces
    control,    ///< a small protocol message (fin, cts) with no payload
};

/// A send that could not complete at once.
struct send_request {
    send_request *next;
    send_kind kind;
    void *context;
    std::uint64_t op_flags;
    std::array<iovec, max_iov> iov;
    std::uint32_t iovcnt;
    std::size_t total;
    std::size_t offset;  ///< bytes sent so far
    std::uint64_t tag;
    std::uint64_t data;
    std::uint32_t msg_id;
    bool has_data;
    bool started;         ///< first fragment sent
    std::uint8_t *owned;  ///< inject: the library's copy of the data (heap), or nullptr
    // Rendezvous:
    peer_state *peer;             ///< the receiver (failure handling)
    std::uint64_t id;             ///< id in tag_engine::rndv_sends_, 0 if none
    std::uint64_t rreq;           ///< rndv_data: the receiver's request id
    transport::remote_buffer rb;  ///< rndv_rts: the exposed buffer
    bool zcopy;                   ///< rndv_rts: rb is valid
    /// Send credits still promised to this request's messages (peer_state::reserved).
    std::uint32_t reserved;
    // Control messages (fin, cts):
    std::uint8_t ctl_am;
    alignas(8) std::uint8_t ctl_hdr[16];
};

/// Send-side state of one peer (AV index), created on first use.
struct peer_state {
    credit_state cr;  ///< flow control with this peer, both directions (docs/credits.md)
    transport::iface *tl = nullptr;
    transport::conn_id conn = transport::invalid_id;
    std::size_t max_short = 0;
    std::size_t max_bcopy = 0;
    std::uint32_t next_msg_id = 0;
    send_request *pending_head = nullptr;
    send_request *pending_tail = nullptr;
    send_request *sol_head = nullptr;  ///< solicited (control, rendezvous data): pushed first
    send_request *sol_tail = nullptr;
    peer_state *next_pending = nullptr;  ///< in the engine's list of peers with pending sends
    bool in_pending_list = false;
    bool failed = false;
    /// Send credits the queued messages will spend when they go: what may be sent
    /// now is what is left (-WEFT_EAGAIN mode, weft_ep_credits).
    std::uint32_t reserved = 0;
    std::uint32_t index = 0;
};

/// Receive-side state of one remote sender of one transport.
struct rx_source {
    peer_state *peer = nullptr;         ///< whose credits this sender's messages use
    std::uint32_t av = unknown_source;  ///< resolved AV index
    bool resolved = false;
    // Multi-fragment message being received from this sender:
    recv_request *rreq = nullptr;
    unexpected_record *ureq = nullptr;
    std::uint32_t msg_id = 0;
    std::size_t total = 0;
    std::size_t received = 0;
    bool active = false;
    /// Send-side state for replies (rendezvous fin/cts) to a sender that is not
    /// in the address vector.
    std::unique_ptr<peer_state> reply;
};

/// A table of requests addressed by id from the wire: index plus generation, so
/// a stale or forged id from a peer is rejected instead of followed.
template <typename T>
class id_table {
  public:
    [[nodiscard]] std::uint64_t add(T *p)
    {
        std::uint32_t i;
        if (!free_.empty()) {
            i = free_.back();
            free_.pop_back();
        } else {
            i = static_cast<std::uint32_t>(slots_.size());
            slots_.push_back({});
        }
        slots_[i].ptr = p;
        return (std::uint64_t(++slots_[i].gen) << 32) | i;
    }
    [[nodiscard]] T *find(std::uint64_t id) const noexcept
    {
        const auto i = static_cast<std::uint32_t>(id);
        if (i >= slots_.size() || slots_[i].ptr == nullptr || slots_[i].gen != id >> 32) {
            return nullptr;
        }
        return slots_[i].ptr;
    }
    void remove(std::uint64_t id) noexcept
    {
        const auto i = static_cast<std::uint32_t>(id);
        if (find(id) != nullptr) {
            slots_[i].ptr = nullptr;
            free_.push_back(i);
        }
    }
    template <class Fn>
    void for_each(Fn &&fn) const
    {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].ptr != nullptr) {
                fn((std::uint64_t(slots_[i].gen) << 32) | i, slots_[i].ptr);
            }
        }
    }
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size() - free_.size(); }

  private:
    struct slot {
        T *ptr = nullptr;
        std::uint32_t gen = 0;
    };
    std::vector<slot> slots_;
    std::vector<std::uint32_t> free_;
};

struct engine_params {
    std::size_t max_msg_size;
    std::size_t tx_size;  ///< pending sends allowed before -WEFT_EAGAIN
    std::size_t inject_size;
    unsigned match_hash_bits;
    std::size_t rndv_thresh;   ///< messages longer than this use rendezvous
    bool variable;             ///< WEFT_VARIABLE_MSG: notify messages above var_thresh
    std::size_t var_thresh;    ///< variable-message threshold
    bool credits;              ///< flow control on (credit_cfg applies)
    credit_config credit_cfg;  ///< windows, threshold
    bool credit_eagain;        ///< a send without credits returns -WEFT_EAGAIN (no queueing)
};

/// Send arguments (one struct, so the data path passes a pointer).
struct send_args {
    const iovec *iov;
    std::size_t iovcnt;
    std::size_t len;
    std::uint64_t dest;
    std::uint64_t tag;
    std::uint64_t data;
    void *context;
    std::uint64_t flags;  ///< WEFT_INJECT | WEFT_REMOTE_CQ_DATA | WEFT_COMPLETION
};

struct recv_args {
    const iovec *iov;
    std::size_t iovcnt;
    std::uint64_t src;
    std::uint64_t tag;
    std::uint64_t ignore;
    void *context;
    std::uint64_t flags;  ///< WEFT_PEEK | WEFT_CLAIM | WEFT_DISCARD | WEFT_COMPLETION
};

class tag_engine {
  public:
    tag_engine(const engine_params &p, const address_book &av);
    tag_engine(const tag_engine &) = delete;
    tag_engine &operator=(const tag_engine &) = delete;
    ~tag_engine();

    /// Add a transport (before the first operation). The engine installs its handlers.
    void add_transport(transport::iface *tl);

    completion_sink tx;  ///< where send completions go
    completion_sink rx;  ///< where receive completions go

    /// Post a send. 0, or -WEFT_EAGAIN (after progress), or another negative code.
    [[nodiscard]] int send(const send_args &a);
    /// Post a receive (flags 0 or WEFT_COMPLETION).
    [[nodiscard]] int recv(const recv_args &a);
    /// Receive with WEFT_PEEK / WEFT_CLAIM / WEFT_DISCARD.
    [[nodiscard]] int recv_special(const recv_args &a);
    /// Cancel the posted receive whose context is `context`.
    [[nodiscard]] int cancel(void *context);
    /// Drive every transport and pending sends. Returns events processed.
    unsigned progress();

    [[nodiscard]] std::size_t unexpected_count() const noexcept
    {
        return matcher_.unexpected_count();
    }
    /// Credits towards the peer at AV index `peer` (all peers summed if `all`).
    void credits(std::uint64_t peer, bool all, weft_credits &out) const;
    /// Credits (wire messages) a message of `len` bytes costs on this endpoint's
    /// first polling transport (the shm or network path).
    [[nodiscard]] std::size_t message_cost(std::size_t len) const noexcept;

    /// Rendezvous sends waiting for their receiver (tests, diagnostics).
    [[nodiscard]] std::size_t rndv_sends() const noexcept { return rndv_sends_.size(); }

  private:
    struct tl_ctx {
        tag_engine *engine;
        unsigned index;
    };

    [[nodiscard]] peer_state *peer_for(std::uint64_t dest, int &rc);
    [[gnu::cold]] peer_state *connect_peer(std::uint64_t dest, int &rc);
    [[nodiscard, gnu::always_inline]] inline status send_now(peer_state *p, const send_args &a);
    [[nodiscard]] int queue_send(peer_state *p, const send_args &a);
    [[nodiscard]] status push(peer_state *p, send_request *r);
    [[nodiscard]] status push_eager(peer_state *p, send_request *r);
    /// Send a short protocol message (credits consumed, returns piggybacked).
    /// Inline for the common case: a metered message that spends a credit and has
    /// fewer returnable credits than a piggyback batch (or credits are off).
    [[nodiscard, gnu::always_inline]] status tx_short(peer_state *p, am_id am, const void *hdr,
                                                      std::size_t hlen, const void *payload,
                                                      std::size_t len)
    {
        if (!params_.credits) [[unlikely]] {
            return transport::send_short(p->tl, p->conn, unsigned(am), hdr, hlen, payload, len);
        }
        if (metered(unsigned(am)) && p->cr.send_credits() > 1 &&
            p->cr.returnable() < piggyback_min_) [[likely]] {
            (void)p->cr.try_consume(1);  // > 1 credit: ok, nothing must ride along
            const status st =
                transport::send_short(p->tl, p->conn, unsigned(am), hdr, hlen, payload, len);
            if (st != status::ok) [[unlikely]] {
                p->cr.refund(1);
            }
            return st;
        }
        return tx_short_slow(p, am, hdr, hlen, payload, len);
    }
    [[nodiscard]] status tx_short_slow(peer_state *p, am_id am, const void *hdr, std::size_t hlen,
                                       const void *payload, std::size_t len);
    [[nodiscard]] status tx_bcopy(peer_state *p, am_id am, const void *hdr, std::size_t hlen,
                                  const iovec *iov, std::size_t iovcnt, std::size_t offset,
                                  std::size_t len);
    [[nodiscard]] bool credit_take(peer_state *p, unsigned am, std::uint32_t &returned);
    /// Send credits not promised to queued messages.
    [[nodiscard]] static std::uint32_t free_credits(const peer_state *p) noexcept
    {
        return p->cr.send_credits() > p->reserved ? p->cr.send_credits() - p->reserved : 0;
    }
    /// A one-credit message to `p` would go now (the last credit only with a return),
    /// after the messages already queued to it.
    [[nodiscard]] static bool can_send(const peer_state *p) noexcept
    {
        return !p->cr.attached() || free_credits(p) > 1 ||
               (free_credits(p) == 1 && p->cr.returnable() > 0);
    }
    /// Credits (wire messages) an eager send of `len` bytes costs towards `p`.
    [[nodiscard]] static std::uint32_t eager_cost(const peer_state *p, std::size_t hdr,
                                                  std::size_t len) noexcept;
    /// The credits can carry a whole eager message of `cost` wire messages now.
    [[nodiscard]] static bool eager_credits_ok(const peer_state *p, std::uint32_t cost) noexcept;
    /// Turn a queued eager request (not started) into a rendezvous.
    void to_rndv(peer_state *p, send_request *r);
    void reserve(peer_state *p, send_request *r, std::uint32_t n) noexcept;
    void unreserve(send_request *r, std::uint32_t n) noexcept;
    [[gnu::cold]] bool attach_credits(peer_state *p);
    /// The peer record holding the credits of sender `src` (created on its first message).
    [[nodiscard, gnu::always_inline]] peer_state *credit_peer(unsigned tl, transport::src_id src)
    {
        auto &v = sources_[tl];
        if (src < v.size() && v[src].resolved && v[src].peer != nullptr) [[likely]] {
            return v[src].peer;
        }
        return credit_peer_slow(tl, src);
    }
    [[gnu::cold, gnu::noinline]] peer_state *credit_peer_slow(unsigned tl, transport::src_id src);
    [[gnu::cold, gnu::noinline]] void on_credit_update(peer_state *p, transport::src_id src,
                                                       std::uint32_t returned);
    [[gnu::cold, gnu::noinline]] void on_returned(peer_state *p, transport::src_id src,
                                                  std::uint32_t returned);
    /// The buffers of `n` received wire messages from `p` are free: credits become
    /// returnable (an explicit update if they reach the threshold).
    [[gnu::always_inline]] void release(peer_state *p, std::uint32_t n)
    {
        p->cr.on_released(n, pool_);
        if (p->cr.needs_explicit_update() && !closing_ && !p->failed) [[unlikely]] {
            send_update(p);
        }
    }
    void send_update(peer_state *p);
    void progress_updates();
    [[nodiscard]] int send_rndv(peer_state *p, const send_args &a);
    send_request *new_request(peer_state *p, send_kind kind);
    void enqueue(peer_state *p, send_request *r);
    void send_control(peer_state *p, am_id am, const void *hdr, std::size_t len);
    [[nodiscard]] peer_state *reply_peer(unsigned tl, transport::src_id src);
    void fail_send(send_request *r, int err);
    /// A send request for `a`, checked against the send-queue limit (after one
    /// progress call) and owning a copy of an inject's data; nullptr with `rc`
    /// set when the limit, the peer's failure or memory refuses it.
    [[nodiscard]] send_request *queued_request(peer_state *p, send_kind kind, const send_args &a,
                                               int &rc);
    /// Expose a rendezvous send's buffer for a read by the receiver (when it is
    /// one contiguous non-empty buffer) and give it a rendezvous id.
    void expose_rndv(peer_state *p, send_request *r);
    void free_send(send_request *r);
    void push_peer(peer_state *p);
    void push_queue(peer_state *p);
    bool push_list(peer_state *p, send_request *&head, send_request *&tail);
    void progress_pending();
    [[gnu::cold, gnu::noinline]] void progress_queued();
    void mark_failed(std::uint32_t index);
    void complete_send(void *context, std::uint64_t flags, std::uint64_t tag);

    static void am_handler(void *arg, transport::src_id src, unsigned am_id, const void *data,
                           std::size_t len);
    static void peer_failed_handler(void *arg, transport::conn_id conn, transport::src_id src,
                                    status why);
    void on_message(unsigned tl, transport::src_id src, std::uint64_t tag, std::uint64_t data,
                    std::uint64_t flags, const void *payload, std::size_t len);
    void on_first(unsigned tl, transport::src_id src, const eager_first_hdr &h, const void *payload,
                  std::size_t len);
    void on_frag(unsigned tl, transport::src_id src, const eager_frag_hdr &h, const void *payload,
                 std::size_t len);
    void on_rts(unsigned tl, transport::src_id src, const rndv_rts_hdr &h);
    [[gnu::always_inline]] inline void dispatch(unsigned tl, transport::src_id src, unsigned am,
                                                const std::uint8_t *bytes, std::size_t len);
    void hold(unexpected_record *u);
    void on_fin(const rndv_fin_hdr &h);
    void on_cts(unsigned tl, transport::src_id src, const rndv_cts_hdr &h);
    void on_rndv_data(unsigned tl, transport::src_id src, const rndv_data_hdr &h,
                      const void *payload, std::size_t len);
    [[nodiscard]] unexpected_record *find_claimed(void *context);
    void discard(unexpected_record *u, void *context);
    void rndv_start(recv_request *r, const rndv_info &rv);
    void finish_read(recv_request *r, status st);
    static void get_done_handler(void *arg, std::uint64_t cookie, status st);
    void notify_variable(unexpected_record *u);
    [[nodiscard]] bool is_variable(std::size_t total) const noexcept
    {
        return params_.variable && total > params_.var_thresh;
    }
    /// Receive-side state of sender `src` of transport `tl` (nullptr: id out of range).
    [[nodiscard, gnu::always_inline]] rx_source *source(unsigned tl, transport::src_id src)
    {
        auto &v = sources_[tl];
        if (src < v.size()) [[likely]] {
            rx_source &s = v[src];
            if (s.resolved) [[likely]] {
                return &s;
            }
        }
        return source_slow(tl, src);
    }
    [[gnu::cold, gnu::noinline]] rx_source *source_slow(unsigned tl, transport::src_id src);
    [[gnu::cold]] void resolve_source(unsigned tl, transport::src_id src, rx_source &s);
    [[gnu::cold]] void drop(unsigned tl, transport::src_id src, const char *why);
    void on_peer_failed(unsigned tl, transport::conn_id conn, transport::src_id src, status why);

    unexpected_record *new_unexpected(std::uint32_t src, std::uint64_t tag, std::uint64_t data,
                                      std::uint64_t flags, std::size_t total);
    void free_unexpected(unexpected_record *u);
    void deliver_unexpected(recv_request *r, unexpected_record *u);
    void complete_recv(recv_request *r);
    void fail_recv(recv_request *r, int err, std::size_t olen);
    [[nodiscard]] bool source_failed(std::uint64_t src) const noexcept
    {
        return src < failed_.size() && failed_[src] != 0;
    }

    engine_params params_;
    const address_book &av_;
    matcher matcher_;
    base::mpool<recv_request> recv_pool_;
    base::mpool<unexpected_record> unexp_pool_;
    base::mpool<send_request> send_pool_;
    std::vector<std::unique_ptr<peer_state>> peers_;
    std::vector<std::uint8_t> failed_;  ///< by AV index: the peer died
    /// Messages reserved by PEEK|CLAIM or notified as variable, by the handle the
    /// application will claim them with (its weft_context, or the record's
    /// weft_var_context). Looked up by pointer value only: a handle from the
    /// application is never dereferenced before it is found here.
    std::unordered_map<const void *, unexpected_record *> claimed_;
    id_table<send_request> rndv_sends_;  ///< rendezvous sends waiting for fin or cts
    id_table<recv_request> rndv_recvs_;  ///< receives waiting for rndv_data after a cts
    peer_state *pending_peers_ = nullptr;
    std::size_t pending_sends_ = 0;
    std::array<transport::iface *, 4> tls_{};
    std::array<tl_ctx, 4> tl_ctx_{};
    std::array<std::vector<rx_source>, 4> sources_;
    unsigned ntls_ = 0;
    transport::iface *poll_tls_[4]{};  ///< transports whose progress does something
    unsigned npoll_ = 0;
    bool pushing_ = false;  ///< inside push_peer (see there)
    bool closing_ = false;  ///< in the destructor: no more wire traffic
    credit_pool pool_;
    std::uint32_t piggyback_min_ = 1;        ///< returnable credits worth a prefix (threshold / 4)
    std::vector<peer_state *> updates_due_;  ///< explicit updates the transport refused
    peer_state *rx_peer_ = nullptr;          ///< credit peer of the message being handled
    bool rx_held_ = false;                   ///< the handler kept the message's data
};

}  // namespace weft::proto
