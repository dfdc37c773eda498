#pragma once
// The channel: what every protocol module of one endpoint shares (UCX's worker
// and endpoint, GASNet-EX's core). It owns
//
//   - the transports of the endpoint (a bounded, checked set) and the choice of
//     one per peer, from their capabilities and cost models;
//   - peers (send side, by address-vector index, connected lazily) and sources
//     (receive side, by transport and sender id), and the map between them;
//   - credit flow control (docs/credits.md): every metered message spends a
//     credit, credits return piggybacked or in explicit updates;
//   - ordered per-peer send queues of requests that could not go at once, and
//     a solicited queue (replies) pushed ahead of them;
//   - the active-message table: each module registers {handler, metered, trace
//     name} per id (wire.hpp lists the ids), and the channel dispatches to it;
//   - failure fan-out: a peer's failure fails its queued requests and is told
//     to every module (they fail their own operations towards it);
//   - completion sinks (CQ, counter) and the tracking of transport operations
//     that complete later (put, get, atomic returning in_progress).
//
// Modules (tag.hpp, rndv.hpp, rma.hpp, amo.hpp) hold a reference to the channel
// and register with it; the channel knows none of them. docs/architecture.md
// draws the picture.
//
// Threading: one thread at a time (the endpoint's lock policy serialises).
// Handlers run only from progress(): never from inside a send.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sys/uio.h>
#include <vector>

#include "base/log.hpp"
#include "base/mpool.hpp"
#include "base/status.hpp"
#include "proto/completion.hpp"
#include "proto/credits.hpp"
#include "proto/id_table.hpp"
#include "proto/match.hpp"
#include "proto/wire.hpp"
#include "transport/component.hpp"
#include "transport/iface.hpp"
#include "weft/weft.h"

namespace weft::proto {

using base::status;

/// The most transports one endpoint opens (self, shm, a few NICs, tcp).
inline constexpr unsigned max_transports = 8;
/// The largest protocol header a module sends (transports accept at least this
/// much header with a bcopy send: attributes::max_hdr).
inline constexpr std::size_t max_header = 120;

/// What the channel needs from the address vector (implemented by core/).
class address_book {
  public:
    virtual ~address_book() = default;
    /// The address at `index`; no_entry if out of range or removed.
    [[nodiscard]] virtual status lookup(std::uint64_t index, transport::address &out) const = 0;
    /// The index of the endpoint `id`, or unknown_source.
    [[nodiscard]] virtual std::uint32_t reverse(const transport::endpoint_id &id) const = 0;
    /// Addresses inserted so far: when it has not moved, no sender that reverse()
    /// did not know has become known.
    [[nodiscard]] virtual std::uint64_t insertions() const noexcept = 0;
};

class channel;
struct peer_state;

/// A send that could not go at once, queued on its peer. A module's request
/// type derives from it and gives its operations (request_ops).
struct send_request {
    send_request *next = nullptr;
    const struct request_ops *ops = nullptr;
    peer_state *peer = nullptr;
    /// Send credits promised to this request's messages (peer_state::reserved).
    std::uint32_t reserved = 0;
};

/// What the channel does with a module's queued request.
struct request_ops {
    /// Send what can go now. ok: all of it went (the request leaves the queue,
    /// then sent() is called); again or busy: no room or no credit yet (it stays
    /// at the head); another status: it failed (the request leaves the queue,
    /// then fail() is called, and the peer is marked failed).
    status (*push)(channel &ch, send_request *r);
    /// After push returned ok: complete it, free it, or keep it (a rendezvous
    /// header waits for its fin).
    void (*sent)(channel &ch, send_request *r);
    /// Report the failure (positive WEFT_E* code) and free it.
    void (*fail)(channel &ch, send_request *r, int err);
    /// Free it without a completion (the endpoint is closing).
    void (*drop)(channel &ch, send_request *r);
};

/// Send-side state of one peer (an address-vector index, or a sender outside
/// the address vector that we answer), created on first use.
struct peer_state {
    credit_state cr;  ///< flow control with this peer, both directions (docs/credits.md)
    transport::iface *tl = nullptr;
    transport::conn_id conn = transport::invalid_id;
    std::uint32_t index = unknown_source;  ///< address-vector index, or unknown_source
    std::uint32_t max_short = 0;           ///< header + payload of a short message
    std::uint32_t max_bcopy = 0;  ///< header + payload of a bcopy message (credit prefix kept out)
    /// Send credits the queued messages will spend when they go: what may be
    /// sent now is what is left (weft_ep_credits, -WEFT_EAGAIN mode).
    std::uint32_t reserved = 0;
    std::uint32_t next_msg_id = 0;  ///< the tag module's message numbers towards this peer
    /// Atomics sent to this peer as active messages and not answered yet: while
    /// any are, later atomics take the same path, so a native one cannot
    /// overtake them (atomics of one initiator run in posting order).
    std::uint32_t amo_in_flight = 0;
    send_request *pending_head = nullptr;
    send_request *pending_tail = nullptr;
    send_request *sol_head = nullptr;  ///< solicited (replies): pushed first
    send_request *sol_tail = nullptr;
    peer_state *next_pending = nullptr;  ///< in the channel's list of peers with queued sends
    std::uint8_t tl_index = 0;           ///< the transport's index in the channel
    bool in_pending_list = false;
    bool failed = false;
};
static_assert(sizeof(peer_state) <= 128, "peer_state: two cache lines at most");

/// Receive-side state of one remote sender of one transport.
struct rx_source {
    peer_state *peer = nullptr;         ///< whose credits this sender's messages use
    std::uint32_t av = unknown_source;  ///< resolved address-vector index
    bool resolved = false;
    bool refused = false;  ///< its parameters differ from ours: its messages are dropped
    /// Send-side state for replies to a sender that is not in the address vector.
    std::unique_ptr<peer_state> reply;
};

/// One received active message, as the channel hands it to a handler.
struct rx_context {
    unsigned tl;            ///< transport index
    transport::src_id src;  ///< sender within that transport
    rx_source *source;      ///< the sender's state (av index)
    /// The peer whose credit this message spent (nullptr: not metered). A handler
    /// that keeps the message's bytes after it returns (an unexpected message)
    /// calls channel::hold(), and releases the credit later with release().
    peer_state *credit_peer;
    bool held;
};

/// A handler of one active-message id. `data` is the module's header and
/// payload (the credit prefix removed), `len` >= the entry's min_len.
using am_handler = void (*)(void *module, rx_context &rx, const std::uint8_t *data,
                            std::size_t len);
/// Describe a message's header for trace lines ("tag 0x5 len 64"); returns the
/// length written (snprintf-style).
using am_dump = int (*)(const std::uint8_t *data, std::size_t len, char *buf, std::size_t size);

/// One entry of the active-message table.
struct am_entry {
    am_handler handler = nullptr;
    void *module = nullptr;
    const char *name = nullptr;  ///< trace name
    am_dump dump = nullptr;
    std::uint16_t min_len = 0;  ///< shorter messages are dropped before the handler
    /// Spends a receive credit (docs/credits.md): messages whose payload the
    /// receiver may have to keep. Replies and rendezvous headers are not.
    bool metered = false;
};

/// The handler of transport::handlers::imm (a peer's put_imm): `len` bytes
/// were written here and `imm` came with them (untrusted).
struct imm_entry {
    void (*handler)(void *module, rx_context &rx, std::uint32_t imm, std::size_t len) = nullptr;
    void *module = nullptr;
    const char *name = nullptr;  ///< trace name
};

/// Told when a peer fails (died, disconnected, refused).
struct failure_hook {
    /// The peer at address-vector index `index` failed; `err` is the positive
    /// WEFT_E* code the module's operations towards it fail with.
    void (*peer_failed)(void *module, std::uint32_t index, int err);
    /// Sender `src` of transport `tl` failed: whatever is half received from it
    /// will not be finished (called before peer_failed for the same peer).
    void (*source_failed)(void *module, unsigned tl, transport::src_id src);
    void *module;
};

/// A transport operation (put, get, atomic) that returned in_progress: the
/// module's object derives from it; on_done runs from the op_done upcall.
struct tracked_op {
    void (*on_done)(tracked_op *op, status st) = nullptr;
};

struct channel_params {
    std::size_t tx_size;       ///< queued requests allowed before -WEFT_EAGAIN
    credit_config credit_cfg;  ///< windows, threshold (credits are always on)
    bool credit_eagain;        ///< a send without credits returns -WEFT_EAGAIN (no queueing)
    std::size_t max_msg_size;  ///< bound on lengths announced by peers
};

/// Where a request goes in its peer's queues.
enum class queue_class : std::uint8_t {
    ordered,    ///< after the peer's earlier sends, in order
    solicited,  ///< replies and data a peer asked for: ahead of ordered ones
};

class channel {
  public:
    channel(const channel_params &p, const address_book &av);
    channel(const channel &) = delete;
    channel &operator=(const channel &) = delete;
    ~channel();

    /// Add a transport (before the first operation). no_memory when the set is
    /// full (max_transports).
    [[nodiscard]] status add_transport(transport::iface *tl, const transport::component *c);
    /// The proto/ blob of this endpoint's address (what peers must agree on).
    [[nodiscard]] proto_params params() const noexcept;
    /// Register a handler (control path, before the first progress).
    void register_am(am_id id, const am_entry &e) noexcept { am_[unsigned(id)] = e; }

    /// The function transports call for each active message: upcall<Hot>,
    /// where Hot::dispatch(am, entry, rx, data, len) may handle the hottest ids
    /// with a direct call (true) instead of the table's indirect one (the
    /// stack, which knows its modules, supplies it: stack.hpp). Set before
    /// the first add_transport.
    using am_upcall_fn = void (*)(void *arg, transport::src_id src, transport::am_word am,
                                  const void *data, std::size_t len);
    template <class Hot>
    static void upcall(void *arg, transport::src_id src, transport::am_word word, const void *data,
                       std::size_t len);
    void set_upcall(am_upcall_fn f) noexcept { upcall_ = f; }
    void add_failure_hook(const failure_hook &h) { hooks_.push_back(h); }

    /// Stop: drop every queued request (no completions) and send nothing more.
    /// Called before the modules go.
    void shutdown();

    completion_sink tx;               ///< where send-side completions go
    completion_sink rx;               ///< where receive-side completions go (and a put's CQ data)
    completion_sink rma_write;        ///< puts and non-fetching atomics (the transmit CQ)
    completion_sink rma_read;         ///< gets and fetching atomics (the transmit CQ)
    counter *remote_write = nullptr;  ///< peers' puts and atomics on event regions
    counter *remote_read = nullptr;   ///< peers' gets on event regions

    // ------------------------------------------------------------ peers

    /// The peer at address-vector index `dest`, connected on first use; nullptr
    /// with `rc` (a negative WEFT_E* code) when it cannot be reached.
    [[nodiscard, gnu::always_inline]] peer_state *peer(std::uint64_t dest, int &rc)
    {
        if (dest < peers_.size()) [[likely]] {
            peer_state *p = peers_[dest].get();
            if (p != nullptr && !p->failed) [[likely]] {
                return p;
            }
        }
        return connect_peer(dest, rc);
    }
    /// Where to answer sender `src` of transport `tl` (its peer, or a reply-only
    /// peer when it is not in the address vector); nullptr when it cannot be.
    [[nodiscard]] peer_state *reply_peer(unsigned tl, transport::src_id src);
    /// The peer at `index` failed (positive WEFT_E* code; 0 when it did not).
    [[nodiscard]] int failed(std::uint64_t index) const noexcept
    {
        return index < failed_.size() ? failed_[index] : 0;
    }
    /// Mark the peer at `index` failed and tell everyone (idempotent).
    void fail_peer(std::uint32_t index, int err);
    /// The address-vector entry at `index` was removed (weft_av_remove): the
    /// peer fails with WEFT_ENOENT (sends and directed receives towards it
    /// fail from now on, queued and posted ones with error completions), and
    /// its senders are no longer known by that index.
    void forget_peer(std::uint32_t index);
    /// The address vector's insertions so far (address_book::insertions).
    [[nodiscard]] std::uint64_t av_insertions() const noexcept { return av_.insertions(); }
    /// The receive-side state of sender `src` of transport `tl` (nullptr: out of range).
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
    /// Transport number `i` of this endpoint.
    [[nodiscard]] transport::iface *tl(unsigned i) const noexcept { return tls_[i]; }
    [[nodiscard]] unsigned tl_count() const noexcept { return ntls_; }
    /// Transport number `i`'s name (its component's; "?" when it has none).
    [[nodiscard]] const char *tl_name(unsigned i) const noexcept
    {
        return components_[i] != nullptr ? components_[i]->name : "?";
    }
    /// The transport the peer is reached by.
    [[nodiscard]] const transport::component *component_of(const peer_state *p) const noexcept
    {
        return components_[p->tl_index];
    }

    // ------------------------------------------------------------ sending

    /// Send a short active message to `p`: header + payload within the peer's
    /// max_short. Metered messages spend a credit. ok, or busy (no credit: queue
    /// it), again (no room: queue it), or an error.
    [[nodiscard, gnu::always_inline]] status am_short(peer_state *p, am_id am, bool metered,
                                                      const void *hdr, std::size_t hlen,
                                                      const void *payload, std::size_t len)
    {
        // The common case inline: a metered message that spends a credit and has
        // fewer returnable credits than a piggyback batch.
        if (metered && p->cr.send_credits() > 1 && p->cr.returnable() < piggyback_min_) [[likely]] {
            (void)p->cr.try_consume(1);  // > 1 credit: ok, nothing must ride along
            const status st = transport::send_short(
                p->tl, p->conn, transport::make_am(unsigned(am), 0), hdr, hlen, payload, len);
            if (st != status::ok) [[unlikely]] {
                p->cr.refund(1);
            }
            return st;
        }
        return am_short_slow(p, am, metered, hdr, hlen, payload, len);
    }
    /// As am_short, for header + `len` bytes of `iov` from byte `offset`
    /// (within the peer's max_bcopy).
    [[nodiscard]] status am_bcopy(peer_state *p, am_id am, bool metered, const void *hdr,
                                  std::size_t hlen, const iovec *iov, std::size_t iovcnt,
                                  std::size_t offset, std::size_t len);
    /// Most bytes of a control message (header and payload).
    static constexpr std::size_t max_control = 192;
    /// Send a small unmetered reply: header, then `plen` bytes of payload (at
    /// most max_control in all); queued on the solicited queue when it cannot go now.
    void send_control(peer_state *p, am_id am, const void *hdr, std::size_t len,
                      const void *payload = nullptr, std::size_t plen = 0);
    /// Queue `r` (its ops set) on its peer.
    void enqueue(send_request *r, queue_class q);
    /// Push `p`'s queues now (a request was queued).
    void push(peer_state *p);
    /// Room for one more queued request (tx_size), after one progress call if
    /// needed: 0, or -WEFT_EAGAIN, or -WEFT_EHOSTUNREACH when `p` failed meanwhile.
    [[nodiscard]] int queue_room(peer_state *p);
    /// Requests queued on every peer.
    [[nodiscard]] std::size_t queued() const noexcept { return pending_sends_; }

    // ------------------------------------------------------------ credits

    /// Credits a message of `cost` wire messages may spend towards `p` now, the
    /// whole message at once (the last credit only with returns riding along).
    [[nodiscard]] static bool credits_for(const peer_state *p, std::uint32_t cost) noexcept
    {
        if (!p->cr.attached()) {
            return true;
        }
        const std::uint32_t sc = p->cr.send_credits();
        return sc > cost || (sc == cost && p->cr.returnable() > 0);
    }
    /// Send credits not promised to queued messages.
    [[nodiscard]] static std::uint32_t free_credits(const peer_state *p) noexcept
    {
        return p->cr.send_credits() > p->reserved ? p->cr.send_credits() - p->reserved : 0;
    }
    /// One-credit messages that may go to `p` now, after the messages queued
    /// to it: the free credits less the last one, unless returns would ride
    /// along with it (the last-credit rule). Attached peers only.
    [[nodiscard]] static std::uint32_t free_sendable(const peer_state *p) noexcept
    {
        const std::uint32_t free = free_credits(p);
        return free >= 2 ? free - 1 : (free == 1 && p->cr.returnable() > 0 ? 1 : 0);
    }
    /// A one-credit message to `p` would go now, after the messages queued to it.
    [[nodiscard]] static bool can_send(const peer_state *p) noexcept
    {
        return !p->cr.attached() || free_sendable(p) != 0;
    }
    /// Promise `n` credits to queued request `r`, or give back `n` of them.
    void reserve(send_request *r, std::uint32_t n) noexcept
    {
        r->reserved += n;
        r->peer->reserved += n;
    }
    void unreserve(send_request *r, std::uint32_t n) noexcept
    {
        n = n < r->reserved ? n : r->reserved;
        r->reserved -= n;
        r->peer->reserved -= n;
    }
    /// The handler keeps the message's bytes: its credit stays spent until
    /// release(rx.credit_peer, 1).
    [[gnu::always_inline]] void hold(rx_context &ctx) noexcept
    {
        if (ctx.credit_peer != nullptr) {
            ctx.held = true;
        }
    }
    /// The buffers of `n` received messages from `p` are free: credits become
    /// returnable (an explicit update if they reach the threshold).
    [[gnu::always_inline]] void release(peer_state *p, std::uint32_t n)
    {
        p->cr.on_released(n, pool_);
        if (p->cr.needs_explicit_update() && !closing_ && !p->failed) [[unlikely]] {
            send_update(p);
        }
    }
    /// Credits towards the peer at `peer` (all peers summed if `all`).
    void credits(std::uint64_t peer, bool all, weft_credits &out) const;
    [[nodiscard]] const credit_pool &pool() const noexcept { return pool_; }
    [[nodiscard]] bool credit_eagain() const noexcept { return params_.credit_eagain; }
    [[nodiscard]] std::size_t max_msg_size() const noexcept { return params_.max_msg_size; }

    // ------------------------------------------------------------ one-sided transport operations

    /// Track `op` until its transport reports it (op_done): the cookie to give it.
    [[nodiscard]] std::uint64_t track(tracked_op *op) { return ops_.add(op); }
    /// Stop tracking: a later op_done for `cookie` is ignored.
    void untrack(std::uint64_t cookie) noexcept { ops_.remove(cookie); }
    /// The module that takes the immediates of peers' put_imm (one per channel).
    void register_imm(const imm_entry &e) noexcept { imm_ = e; }
    /// A put to `p` that hands `imm` to the peer's imm handler after the data
    /// (transport::ops::put_imm), spending a credit as a message does. busy
    /// when it cannot go that way now: the transport has no put_imm, `len` is
    /// above its limit, or the credit state wants a message (the last credit,
    /// or returns due to ride along); the caller then sends the value in an
    /// active message. Otherwise returns as the transport's put.
    [[nodiscard]] status put_imm(peer_state *p, const iovec *iov, std::size_t iovcnt,
                                 std::size_t len, std::uint64_t raddr, const transport::rkey &key,
                                 std::uint32_t imm, std::uint64_t cookie)
    {
        transport::iface *tl = p->tl;
        if (tl->ops().put_imm == nullptr || len > tl->attr().max_put_imm ||
            p->cr.send_credits() <= 1 || p->cr.returnable() >= piggyback_min_) {
            return status::busy;
        }
        (void)p->cr.try_consume(1);  // > 1 credit: ok, nothing must ride along
        const status st = tl->ops().put_imm(tl, p->conn, iov, iovcnt, len, raddr, key, imm, cookie);
        if (st != status::ok && st != status::in_progress) {
            p->cr.refund(1);
        }
        return st;
    }

    // ------------------------------------------------------------ progress

    /// Drive every transport and the queued requests. Returns events processed.
    unsigned progress()
    {
        unsigned n;
        if (npoll_ == 1) [[likely]] {
            n = transport::progress(poll_[0]);
        } else {
            n = 0;
            for (unsigned i = 0; i < npoll_; ++i) {
                n += transport::progress(poll_[i]);
            }
        }
        if ((pending_peers_ != nullptr) | (demand_ != 0) | !updates_due_.empty()) [[unlikely]] {
            n += progress_queued();
        }
        return n;
    }

    /// Log a dropped message from `src` of transport `tl` (rate-limited).
    [[gnu::cold]] void drop(unsigned tl, transport::src_id src, const char *why);

  private:
    struct tl_ctx {
        channel *ch;
        unsigned index;
    };

    [[gnu::cold]] peer_state *connect_peer(std::uint64_t dest, int &rc);
    /// The reply-only peer of a sender whose address is `addr`, made the peer
    /// at `dest` (nullptr: no such sender).
    [[gnu::cold]] peer_state *adopt_reply(const transport::address &addr, std::uint32_t dest);
    [[nodiscard]] std::unique_ptr<peer_state> make_peer(unsigned tl, transport::conn_id conn,
                                                        std::uint32_t index);
    /// Whether a peer's address carries parameters we can talk with (logs why not).
    [[nodiscard]] bool compatible(const transport::address &a, const char *side) const;
    [[gnu::cold]] status am_short_slow(peer_state *p, am_id am, bool metered, const void *hdr,
                                       std::size_t hlen, const void *payload, std::size_t len);
    [[nodiscard]] bool credit_take(peer_state *p, bool metered, std::uint32_t &returned);
    [[gnu::cold]] bool attach_credits(peer_state *p);
    void send_update(peer_state *p);
    void progress_updates();
    [[gnu::cold, gnu::noinline]] unsigned progress_queued();
    void push_queue(peer_state *p);
    bool push_list(peer_state *p, send_request *&head, send_request *&tail);
    void fail_queue(peer_state *p, int err);

    [[nodiscard]] peer_state *credit_peer(unsigned tl, transport::src_id src)
    {
        rx_source *rs = nullptr;  // looked up again only on the cold path
        return credit_peer(tl, src, rs);
    }
    /// The same, and the sender's state in `rs` (one lookup when both are
    /// known; nullptr with no peer).
    [[nodiscard]] peer_state *credit_peer(unsigned tl, transport::src_id src, rx_source *&rs)
    {
        auto &v = sources_[tl];
        if (src < v.size() && v[src].resolved && v[src].peer != nullptr) [[likely]] {
            rs = &v[src];
            return rs->peer;
        }
        peer_state *p = credit_peer_slow(tl, src);  // may grow sources_
        rs = p != nullptr ? source(tl, src) : nullptr;
        return p;
    }
    [[gnu::cold, gnu::noinline]] peer_state *credit_peer_slow(unsigned tl, transport::src_id src);
    [[gnu::cold, gnu::noinline]] rx_source *source_slow(unsigned tl, transport::src_id src);
    [[gnu::cold]] void resolve_source(unsigned tl, transport::src_id src, rx_source &s);
    [[gnu::cold, gnu::noinline]] void on_credit_update(peer_state *p, transport::src_id src,
                                                       std::uint32_t returned);
    [[gnu::cold, gnu::noinline]] void on_returned(peer_state *p, transport::src_id src,
                                                  std::uint32_t returned);
    [[gnu::cold, gnu::noinline]] void dispatch_slow(unsigned tl, transport::src_id src, unsigned am,
                                                    std::size_t len, bool prefixed,
                                                    std::uint32_t returned);

    [[gnu::cold, gnu::noinline]] void log_rx(unsigned tl, transport::src_id src, const am_entry &e,
                                             const std::uint8_t *data, std::size_t len) const;
    [[gnu::cold, gnu::noinline]] void overrun(unsigned tl, transport::src_id src) const;
    static void peer_failed_upcall(void *arg, transport::conn_id conn, transport::src_id src,
                                   status why);
    static void op_done_upcall(void *arg, std::uint64_t cookie, status st);
    static void wake_upcall(void *arg);
    static void imm_upcall(void *arg, transport::src_id src, std::uint32_t imm, std::size_t len);
    void on_peer_failed(unsigned tl, transport::conn_id conn, transport::src_id src, status why);

    channel_params params_;
    const address_book &av_;
    std::array<am_entry, transport::am_id_count> am_{};
    am_upcall_fn upcall_;  ///< what the transports call (set_upcall; default: the table only)
    imm_entry imm_{};      ///< who takes peers' put_imm immediates
    std::vector<failure_hook> hooks_;
    std::vector<std::unique_ptr<peer_state>> peers_;
    std::vector<std::uint8_t> failed_;  ///< by AV index: positive WEFT_E* code, 0 = fine
    std::array<transport::iface *, max_transports> tls_{};
    std::array<const transport::component *, max_transports> components_{};
    std::array<tl_ctx, max_transports> tl_ctx_{};
    std::array<std::vector<rx_source>, max_transports> sources_;
    unsigned ntls_ = 0;
    transport::iface *poll_[max_transports]{};  ///< transports polled on every progress
    unsigned npoll_ = 0;
    std::uint32_t demand_ = 0;  ///< bit per on-demand transport (cap::on_demand) with work
    peer_state *pending_peers_ = nullptr;
    std::size_t pending_sends_ = 0;
    bool closing_ = false;
    credit_pool pool_;
    std::uint32_t piggyback_min_ = 1;        ///< returnable credits worth a prefix (threshold / 4)
    std::vector<peer_state *> updates_due_;  ///< explicit updates the transport refused
    id_table<tracked_op> ops_;               ///< transport operations in progress
    /// Control messages that could not go at once (fin, cts, acks).
    struct control_request : send_request {
        std::uint8_t am;
        std::uint8_t len;
        alignas(8) std::uint8_t bytes[max_control];
    };
    [[nodiscard]] status send_small(peer_state *p, am_id am, const void *bytes, std::size_t len);
    base::mpool<control_request> controls_;
    static const request_ops control_ops;
};

/// No id dispatched directly: every message through the table.
struct table_only {
    [[gnu::always_inline]] static bool dispatch(unsigned, const am_entry &, rx_context &,
                                                const std::uint8_t *, std::size_t) noexcept
    {
        return false;
    }
};

template <class Hot>
void channel::upcall(void *arg, transport::src_id src, transport::am_word word, const void *data,
                     std::size_t len)
{
    auto *c = static_cast<tl_ctx *>(arg);
    channel *ch = c->ch;
    const auto *bytes = static_cast<const std::uint8_t *>(data);
    const unsigned am = transport::am_id_of(word);
    std::uint32_t returned = 0;
    const bool prefixed = (transport::am_flags_of(word) & am_flag_credits) != 0;
    if (prefixed) [[unlikely]] {
        if (len < sizeof(credit_prefix)) {
            ch->drop(c->index, src, "short credit prefix");
            return;
        }
        credit_prefix cp;
        std::memcpy(&cp, bytes, sizeof(cp));  // the transport's buffer may not be aligned
        returned = cp.credits;
        bytes += sizeof(credit_prefix);
        len -= sizeof(credit_prefix);
    }
    const am_entry &e = ch->am_[am];
    if (e.handler == nullptr || len < e.min_len) [[unlikely]] {
        ch->dispatch_slow(c->index, src, am, len, prefixed, returned);
        return;
    }
    // The sender's state and the peer whose credits its messages use.
    rx_source *rs = nullptr;
    peer_state *p = ch->credit_peer(c->index, src, rs);
    if (p == nullptr) [[unlikely]] {
        ch->drop(c->index, src, "no flow-control state for the sender (refused, or no credits)");
        return;
    }
    if (e.metered && p->cr.on_message_received(1, ch->pool_) != status::ok) [[unlikely]] {
        ch->overrun(c->index, src);
        return;
    }
    if (returned != 0) [[unlikely]] {
        ch->on_returned(p, src, returned);
    }
    rx_context rx{c->index, src, rs, e.metered ? p : nullptr, false};
    if (WEFT_LOG_TRACE_ENABLED && log_proto.enabled(base::log_level::trace_data)) {
        ch->log_rx(c->index, src, e, bytes, len);
    }
    // A direct call for the ids the stack names (measured: the table's indirect
    // call cost 12% of small-message bidirectional bandwidth on shm), the table
    // for the others.
    if (!Hot::dispatch(am, e, rx, bytes, len)) {
        e.handler(e.module, rx, bytes, len);
    }
    if (e.metered && !rx.held) [[likely]] {
        ch->release(p, 1);  // the data went where it belongs (or was dropped)
    }
}

}  // namespace weft::proto
