#pragma once
// The tagged-message module: MPI matching (match.hpp), eager messages carried
// in one active message, multi-fragment eager messages for anything larger
// than one transport bcopy unit, rendezvous (rndv.hpp) above the rendezvous
// threshold, peek/claim/discard, variable-length messages, cancel, and the
// failure of a peer's operations.
//
// Data path of a tagged send (docs/architecture.md):
//   send -> channel peer (AV index, connect on first use) -> short or bcopy
//   active message -> completion written at once (the transport copied it).
// A send that cannot go out at once (queue full, no credit, multi-fragment)
// becomes a tag_send queued on its peer, pushed by progress in order.
//
// Data path of a receive:
//   transport progress -> channel (credits, table) -> on_eager -> matcher ->
//   copy into the posted buffer -> completion; or an unexpected record.

#include <array>
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>
#include <unordered_map>
#include <vector>

#include "base/bufpool.hpp"
#include "base/config.hpp"
#include "base/mpool.hpp"
#include "proto/channel.hpp"
#include "proto/match.hpp"
#include "proto/rndv.hpp"
#include "weft/weft.h"

namespace weft::proto {

/// Unexpected messages up to this size are stored inside their record; larger
/// ones in a buffer of the module's size-class pool.
inline constexpr std::size_t unexpected_inline = 128;

// ------------------------------------------------------------------ wire formats

/// am_id::eager: the tag; the payload is the whole message.
struct tag_eager_hdr {
    std::uint64_t tag;  ///< message tag
};
static_assert(sizeof(tag_eager_hdr) == 8);

/// am_id::eager_data: tag and remote CQ data.
struct tag_eager_data_hdr {
    std::uint64_t tag;   ///< message tag
    std::uint64_t data;  ///< remote CQ data
};
static_assert(sizeof(tag_eager_data_hdr) == 16);

/// Flags in tag_first_hdr::flags and tag_match::flags.
inline constexpr std::uint32_t tag_flag_data = 1u << 0;  ///< `data` is valid

/// am_id::eager_first: opens a message of `total_len` bytes; the payload is
/// bytes [0, payload length) of it. Fragments of one message from one sender
/// arrive in order and are not interleaved with the sender's other tagged
/// messages to the same receiver.
struct tag_first_hdr {
    std::uint64_t tag;        ///< message tag
    std::uint64_t data;       ///< remote CQ data (if tag_flag_data)
    std::uint64_t total_len;  ///< message length in bytes (bounded by max_msg_size on receipt)
    std::uint32_t msg_id;     ///< sender's per-peer message number, repeated in fragments
    std::uint32_t flags;      ///< tag_flag_*
};
static_assert(sizeof(tag_first_hdr) == 32);

/// am_id::eager_frag: bytes [offset, offset + payload length) of message msg_id.
struct tag_frag_hdr {
    std::uint64_t offset;    ///< byte offset in the message (checked on receipt)
    std::uint32_t msg_id;    ///< as in tag_first_hdr
    std::uint32_t reserved;  ///< zero
};
static_assert(sizeof(tag_frag_hdr) == 16);

/// The match bytes of a tagged rendezvous (after rndv_rts_hdr).
struct tag_match {
    std::uint64_t tag;
    std::uint64_t data;   ///< remote CQ data (if tag_flag_data)
    std::uint32_t flags;  ///< tag_flag_*
    std::uint32_t reserved;
};
static_assert(sizeof(tag_match) == 24);
static_assert(sizeof(tag_match) <= rndv_match_max);

// ------------------------------------------------------------------ requests

struct tag_rndv;

/// A posted receive: three cache lines, every one of them touched by an eager
/// match (posted_recv and the completion's fields, then the buffers). A
/// rendezvous into it keeps its state apart (tag_rndv), so that the common
/// case carries none of it.
struct alignas(64) recv_request : posted_recv {
    void *context;
    std::uint64_t op_flags;  ///< WEFT_COMPLETION ...
    std::uint32_t iovcnt;
    std::uint32_t msg_src;  ///< filled when matched:
    std::size_t capacity;   ///< bytes the buffers hold
    std::size_t total;      ///< message length
    std::size_t received;   ///< bytes seen so far (copied or dropped past capacity)
    std::uint64_t msg_tag;
    std::uint64_t msg_data;
    std::uint64_t msg_flags;         ///< WEFT_REMOTE_CQ_DATA if data came
    struct tag_rndv *rdv = nullptr;  ///< while a rendezvous writes into it
    std::array<iovec, max_iov> iov;
};
static_assert(sizeof(recv_request) == 192, "recv_request: three cache lines");

/// A rendezvous into a posted receive (from the module's pool, while it runs).
struct tag_rndv : rndv_recv {
    recv_request *req;
    class tag_module *module;
};

/// A message that arrived before its receive (possibly still being reassembled),
/// a rendezvous header whose data waits at the sender, or a variable message
/// notified to the application and not yet claimed.
/// unexpected_record::from_tl of a message whose sender is gone.
inline constexpr std::uint8_t no_sender_tl = 0xff;

struct unexpected_record : unexpected_msg {
    std::uint64_t data;
    std::uint64_t flags;      ///< WEFT_REMOTE_CQ_DATA if data came
    std::size_t total;        ///< message length
    std::size_t received;     ///< bytes stored so far
    base::pooled_buffer big;  ///< payloads above unexpected_inline (else big.data == nullptr)
    peer_state *cr_peer;      ///< credits held by this record go back to this peer
    std::uint32_t cr_held;    ///< wire messages (credits) whose data this record holds
    /// The transport and its sender id the message came from: a message from a
    /// sender not in the address vector (src == unknown_source) is filed under
    /// its index once the sender is inserted (resolve_unknown). from_tl is
    /// no_sender_tl when that sender failed (its id may name another one later).
    transport::src_id from_src;
    std::uint8_t from_tl;
    bool claimed;          ///< reserved by PEEK|CLAIM, out of the matcher
    bool discard;          ///< discarded while fragments are still arriving
    bool rndv;             ///< the data waits at the sender (`rv`); no buffer here
    bool variable;         ///< notified as a WEFT_VARIABLE_MSG; `var` is the app's handle
    rndv_info rv;          ///< rendezvous header (if rndv)
    weft_var_context var;  ///< handed to the application with the notification
    alignas(8) std::uint8_t inline_buf[unexpected_inline];

    [[nodiscard]] std::uint8_t *buf() noexcept
    {
        return big.data != nullptr ? static_cast<std::uint8_t *>(big.data) : inline_buf;
    }
};
static_assert(sizeof(unexpected_record) <= 384, "unexpected_record: six cache lines at most");

/// A send that could not go at once: eager (one or more fragments), or a
/// rendezvous (the rndv_send part).
struct tag_send : rndv_send {
    void *context;
    std::uint64_t op_flags;
    std::uint64_t tag;
    std::uint64_t data;
    std::uint32_t msg_id;
    bool has_data;
    bool started;               ///< first fragment sent
    std::size_t sent;           ///< eager: bytes sent so far
    base::pooled_buffer owned;  ///< inject: the library's copy of the data
    class tag_module *module;
};
static_assert(sizeof(tag_send) <= 320, "tag_send: five cache lines at most");

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

struct tag_params {
    std::size_t max_msg_size;
    std::size_t inject_size;
    unsigned match_hash_bits;
    std::size_t rndv_thresh;  ///< messages longer than this use rendezvous
    /// WEFT_RNDV_GET_MIN: rendezvous receives read with get from this size
    /// (base::config_size_auto: from the transports' cost models).
    std::size_t rndv_get_min = base::config_size_auto;
    bool variable;           ///< WEFT_VARIABLE_MSG: notify messages above var_thresh
    std::size_t var_thresh;  ///< variable-message threshold
    /// Unexpected rendezvous headers kept per sender (WEFT_UNEXPECTED_RNDV_MAX);
    /// one more is refused (its send fails at the sender).
    std::size_t unexpected_rndv_max = 16384;
    /// WEFT_OPT_INJECT_DIRECT: an inject the transport cannot take now returns
    /// -WEFT_EAGAIN instead of waiting in a queue for this process's progress.
    bool inject_direct = false;
};

/// Reassembly of a fragmented eager message from one sender.
struct tag_frag {
    recv_request *rreq = nullptr;
    unexpected_record *ureq = nullptr;
    std::uint32_t msg_id = 0;
    std::size_t total = 0;
    std::size_t received = 0;
    bool active = false;
    std::uint32_t rts_held = 0;  ///< unexpected rendezvous headers of this sender kept here
};

class tag_module {
  public:
    tag_module(channel &ch, const tag_params &p);
    tag_module(const tag_module &) = delete;
    tag_module &operator=(const tag_module &) = delete;
    ~tag_module();

    /// Post a send. 0, or -WEFT_EAGAIN (after progress), or another negative code.
    [[nodiscard]] int send(const send_args &a);
    /// Post a receive (flags 0 or WEFT_COMPLETION).
    [[nodiscard]] int recv(const recv_args &a);
    /// Receive with WEFT_PEEK / WEFT_CLAIM / WEFT_DISCARD.
    [[nodiscard]] int recv_special(const recv_args &a);
    /// Cancel the posted receive whose context is `context`.
    [[nodiscard]] int cancel(void *context);
    /// Walks of the posted receives that cancel() made (tests: amortised O(1)).
    [[nodiscard]] std::uint64_t cancel_walks() const noexcept { return cancel_walks_; }
    /// Walks of the unexpected messages for senders inserted late (resolve_unknown).
    [[nodiscard]] std::uint64_t unknown_walks() const noexcept { return unknown_walks_; }

    [[nodiscard]] std::size_t unexpected_count() const noexcept
    {
        return matcher_.unexpected_count();
    }
    /// Credits (wire messages) a message of `len` bytes costs at most on this
    /// endpoint's transports.
    [[nodiscard]] std::size_t message_cost(std::size_t len) const noexcept;
    /// The largest inject that is one transport message on every transport of this
    /// endpoint (what WEFT_OPT_INJECT_DIRECT limits WEFT_OPT_INJECT_SIZE to).
    [[nodiscard]] std::size_t one_message_inject() const noexcept;
    /// Rendezvous sends waiting for their receiver (tests, diagnostics).
    [[nodiscard]] std::size_t rndv_sends() const noexcept { return rndv_.waiting_sends(); }

    /// The eager handler (am_id::eager), public for the stack's direct dispatch
    /// (stack_hot_ids); registered in the table like every other.
    static void on_eager(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);

  private:
    // Send side.
    [[nodiscard, gnu::always_inline]] inline status send_now(peer_state *p, const send_args &a);
    [[nodiscard]] int queue_send(peer_state *p, const send_args &a);
    [[nodiscard]] int inject_direct(const send_args &a);
    [[nodiscard]] int send_rndv(peer_state *p, const send_args &a);
    [[nodiscard]] tag_send *new_send(peer_state *p, const send_args &a, int &rc);
    [[nodiscard]] static std::uint32_t eager_cost(const peer_state *p, std::size_t hdr,
                                                  std::size_t len) noexcept;
    static status push_eager(channel &ch, send_request *r);
    static void eager_sent(channel &ch, send_request *r);
    static void send_failed(channel &ch, send_request *r, int err);
    static void send_dropped(channel &ch, send_request *r);
    static void rndv_done(rndv_send *r, int err);
    static void rndv_release(rndv_send *r);
    void free_send(tag_send *r);
    void complete_send(void *context, std::uint64_t flags, std::uint64_t tag);

    // Receive side.
    static void on_eager_data(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_first(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_frag(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static int dump_eager(const std::uint8_t *data, std::size_t len, char *buf, std::size_t size);
    static void on_rts(void *ctx, rx_context &rx, const rndv_info &info, const std::uint8_t *match,
                       std::size_t match_len);
    static void peer_failed(void *m, std::uint32_t index, int err);
    static void source_failed(void *m, unsigned tl, transport::src_id src);
    static void rndv_recv_done(rndv_recv *r, int err, std::size_t received);
    void on_message(rx_context &rx, std::uint64_t tag, std::uint64_t data, std::uint64_t flags,
                    const std::uint8_t *payload, std::size_t len);
    [[nodiscard]] tag_frag *frag_of(unsigned tl, transport::src_id src);
    [[nodiscard]] bool frag_open(const rx_context &rx) const noexcept
    {
        if (nfrag_open_ == 0) [[likely]] {
            return false;
        }
        const auto &v = frags_[rx.tl];
        return rx.src < v.size() && v[rx.src].active;
    }
    void hold(rx_context &rx, unexpected_record *u);
    void rndv_start(recv_request *r, const rndv_info &rv);
    void notify_variable(unexpected_record *u);
    [[nodiscard]] bool is_variable(std::size_t total) const noexcept
    {
        return params_.variable && total > params_.var_thresh;
    }
    [[nodiscard]] unexpected_record *find_claimed(void *context);
    void discard(unexpected_record *u, void *context);
    /// A record for a message from rx's sender (rx.source must not be null).
    unexpected_record *new_unexpected(const rx_context &rx, std::uint64_t tag, std::uint64_t data,
                                      std::uint64_t flags, std::size_t total);
    /// Some unexpected messages came from senders not in the address vector then:
    /// file those whose sender has been inserted since under its index (before a
    /// directed receive or peek looks for them).
    [[gnu::cold, gnu::noinline]] void resolve_unknown();
    /// Before a directed receive or peek: resolve_unknown if unknown-source
    /// messages are queued and the address vector grew since the last walk
    /// (else none of them can have become known: no walk per receive).
    [[gnu::always_inline]] void maybe_resolve_unknown()
    {
        if (matcher_.unknown_count() != 0 && ch_.av_insertions() != unknown_walked_at_)
            [[unlikely]] {
            resolve_unknown();
        }
    }
    void free_unexpected(unexpected_record *u);
    void deliver_unexpected(recv_request *r, unexpected_record *u);
    [[nodiscard, gnu::always_inline]] inline recv_request *new_recv(const recv_args &a);
    void complete_recv(recv_request *r);
    void fail_recv(recv_request *r, int err, std::size_t olen);
    void free_recv(recv_request *r);
    /// Back to the pool. Type-stable fields: cancel's index (find_posted) may
    /// look at a request after it was freed, and reads only its state and
    /// context, which the pool's free-list link does not overlap (the pool
    /// stays mapped while the module lives). They stay readable for
    /// AddressSanitizer; without it this is the pool's put.
    [[gnu::always_inline]] void put_recv(recv_request *r) noexcept
    {
        recv_pool_.put(r);
        base::detail::mpool_unpoison(&r->state, sizeof(r->state));
        base::detail::mpool_unpoison(&r->context, sizeof(r->context));
    }
    /// The posted receive with this context (cancel), or nullptr.
    [[nodiscard]] recv_request *find_posted(void *context);

    channel &ch_;
    tag_params params_;
    rndv_module rndv_;
    matcher matcher_;
    base::mpool<recv_request> recv_pool_;
    base::mpool<tag_rndv> rndv_pool_;
    base::mpool<unexpected_record> unexp_pool_;
    base::mpool<tag_send> send_pool_;
    base::bufpool buffers_;  ///< unexpected payloads above unexpected_inline, inject copies
    /// Messages reserved by PEEK|CLAIM or notified as variable, by the handle the
    /// application will claim them with (its weft_context, or the record's
    /// weft_var_context). Looked up by pointer value only: a handle from the
    /// application is never dereferenced before it is found here.
    std::unordered_map<const void *, unexpected_record *> claimed_;
    /// Posted receives by context, for cancel (find_posted): rebuilt lazily.
    std::unordered_map<const void *, recv_request *> cancel_index_;
    std::uint64_t cancel_index_posts_ = UINT64_MAX;  ///< matcher's posts_so_far() at the last walk
    /// The address vector's insertions() at the last resolve_unknown walk.
    std::uint64_t unknown_walked_at_ = UINT64_MAX;
    std::uint64_t cancel_walks_ = 0;
    std::uint64_t unknown_walks_ = 0;
    std::array<std::vector<tag_frag>, max_transports> frags_;
    std::size_t nfrag_open_ = 0;  ///< frags_ entries active: the fast path checks only this
    static const request_ops eager_ops;
};

}  // namespace weft::proto
