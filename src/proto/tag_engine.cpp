#include "proto/tag_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/copy.hpp"
#include "base/log.hpp"
#include "weft/weft.h"

namespace weft::proto {

namespace {

/// Copy `len` bytes of `src` into the iovec starting at byte `offset`, bounded by
/// the iovec's capacity. Returns the bytes copied.
std::size_t copy_to_iov(const iovec *iov, std::size_t cnt, std::size_t offset, const void *src,
                        std::size_t len)
{
    const auto *from = static_cast<const std::uint8_t *>(src);
    std::size_t done = 0;
    for (std::size_t i = 0; i < cnt && done < len; ++i) {
        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;
            continue;
        }
        const std::size_t n = std::min(iov[i].iov_len - offset, len - done);
        std::memcpy(static_cast<std::uint8_t *>(iov[i].iov_base) + offset, from + done, n);
        done += n;
        offset = 0;
    }
    return done;
}

/// Copy `len` bytes of the iovec starting at byte `offset` into `dst`.
void copy_from_iov(void *dst, const iovec *iov, std::size_t cnt, std::size_t offset,
                   std::size_t len)
{
    auto *to = static_cast<std::uint8_t *>(dst);
    for (std::size_t i = 0; i < cnt && len > 0; ++i) {
        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;
            continue;
        }
        const std::size_t n = std::min(iov[i].iov_len - offset, len);
        std::memcpy(to, static_cast<const std::uint8_t *>(iov[i].iov_base) + offset, n);
        to += n;
        len -= n;
        offset = 0;
    }
}

template <typename T>
[[gnu::always_inline]] inline T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof(v));  // the transport's buffer may not be aligned for T
    return v;
}

constexpr std::uint64_t recv_flags = WEFT_RECV | WEFT_TAGGED;
constexpr std::uint64_t send_flags = WEFT_SEND | WEFT_TAGGED;
// Sources beyond this are treated as garbage from a broken transport.
constexpr transport::src_id max_sources = 1u << 20;

[[gnu::always_inline]] inline std::uint64_t reported_src(std::uint32_t src)
{
    return src == unknown_source ? WEFT_ADDR_NOTAVAIL : src;
}

}  // namespace

tag_engine::tag_engine(const engine_params &p, const address_book &av)
    : params_(p), av_(av), matcher_(p.match_hash_bits)
{
    if (params_.credits) {
        const char *why = "";
        if (pool_.init(params_.credit_cfg, &why) != status::ok) {
            WEFT_LOG(proto, error, "credit configuration rejected (%s): flow control is off", why);
            params_.credits = false;
        }
        piggyback_min_ = std::max<std::uint32_t>(1, pool_.threshold() / 4);
    }
}

tag_engine::~tag_engine()
{
    closing_ = true;  // freeing records must not send credit updates
    std::vector<unexpected_record *> queued;
    matcher_.for_each_unexpected([&](const unexpected_msg *m) {
        queued.push_back(static_cast<unexpected_record *>(const_cast<unexpected_msg *>(m)));
    });
    for (auto *u : queued) {
        matcher_.remove_unexpected(u);
        free_unexpected(u);
    }
    for (auto &[handle, u] : claimed_) {
        free_unexpected(u);
    }
    claimed_.clear();
    for (auto &v : sources_) {
        for (auto &s : v) {
            if (s.active && s.ureq != nullptr && s.ureq->discard) {
                free_unexpected(s.ureq);  // discarded: no longer in the matcher or claimed
            }
        }
    }
    // Queued sends first; then rendezvous sends that wait for their receiver
    // (their rts went out, so they are in no queue).
    auto drain = [&](peer_state *p) {
        for (send_request **q : {&p->pending_head, &p->sol_head}) {
            while (send_request *r = *q) {
                *q = r->next;
                free_send(r);
            }
        }
    };
    for (auto &p : peers_) {
        if (p != nullptr) {
            drain(p.get());
        }
    }
    for (auto &v : sources_) {
        for (auto &s : v) {
            if (s.reply != nullptr) {
                drain(s.reply.get());
            }
        }
    }
    std::vector<send_request *> waiting;
    rndv_sends_.for_each([&](std::uint64_t, send_request *r) { waiting.push_back(r); });
    for (auto *r : waiting) {
        free_send(r);
    }
    std::vector<recv_request *> receiving;
    rndv_recvs_.for_each([&](std::uint64_t, recv_request *r) { receiving.push_back(r); });
    for (auto *r : receiving) {
        recv_pool_.put(r);
    }
}

void tag_engine::add_transport(transport::iface *tl)
{
    const unsigned i = ntls_++;
    tls_[i] = tl;
    tl_ctx_[i] = {this, i};
    tl->set_handlers({&am_handler, &peer_failed_handler, &get_done_handler, &tl_ctx_[i]});
    if (tl->kind() != transport::transport_kind::self) {
        poll_tls_[npoll_++] = tl;
    }
}

// ------------------------------------------------------------------ send side

peer_state *tag_engine::peer_for(std::uint64_t dest, int &rc)
{
    if (dest < peers_.size()) [[likely]] {
        peer_state *p = peers_[dest].get();
        if (p != nullptr && !p->failed) [[likely]] {
            return p;
        }
    }
    return connect_peer(dest, rc);
}

peer_state *tag_engine::connect_peer(std::uint64_t dest, int &rc)
{
    transport::wire_address addr{};
    if (dest >= UINT32_MAX - 1 || av_.lookup(dest, addr) != status::ok) {
        WEFT_LOG(proto, debug, "send to address %llu: not in the address vector",
                 static_cast<unsigned long long>(dest));
        rc = -WEFT_EINVAL;
        return nullptr;
    }
    if (source_failed(dest)) {
        rc = -WEFT_EHOSTUNREACH;
        return nullptr;
    }
    if (dest >= peers_.size()) {
        peers_.resize(dest + 1);
    }
    transport::iface *best = nullptr;
    for (unsigned i = 0; i < ntls_; ++i) {
        if (tls_[i]->reachable(addr) && (best == nullptr || tls_[i]->kind() < best->kind())) {
            best = tls_[i];
        }
    }
    if (best == nullptr) {
        WEFT_LOG(proto, debug, "address %llu (pid %u) is not reachable by any open transport",
                 static_cast<unsigned long long>(dest), addr.pid);
        rc = -WEFT_EHOSTUNREACH;
        return nullptr;
    }
    transport::conn_id conn = transport::invalid_id;
    const status st = best->connect(addr, conn);
    if (st != status::ok) {
        rc = base::to_c(st);
        if (st == status::unreachable) {
            mark_failed(static_cast<std::uint32_t>(dest));
        }
        return nullptr;
    }
    auto p = std::make_unique<peer_state>();
    p->tl = best;
    p->conn = conn;
    p->max_short = best->attr().max_short;
    p->max_bcopy = best->attr().max_bcopy;
    p->index = static_cast<std::uint32_t>(dest);
    if (params_.credits) {
        p->max_bcopy -= sizeof(credit_prefix);  // room for piggybacked credits
    }
    peers_[dest] = std::move(p);
    peer_state *ps = peers_[dest].get();
    if (params_.credits && !attach_credits(ps)) {
        rc = -WEFT_EAGAIN;
        return nullptr;
    }
    return ps;
}

// ------------------------------------------------------------------ credits

bool tag_engine::attach_credits(peer_state *p)
{
    if (p->cr.attached()) {
        return true;
    }
    status st = p->cr.attach(pool_);
    if (st == status::no_memory) {
        // Shared pool: every attached peer keeps its initial grant, so a new peer
        // needs that many more shared receive buffers. Ask the transports.
        for (unsigned i = 0; i < ntls_ && pool_.free() < pool_.initial(); ++i) {
            pool_.add(static_cast<std::uint32_t>(tls_[i]->grow_rx(pool_.initial() - pool_.free())));
        }
        st = p->cr.attach(pool_);
    }
    if (st != status::ok) {
        WEFT_LOG(proto, warn,
                 "no receive credits left in the shared pool for peer %u (%u peers attached, "
                 "%u buffers)",
                 p->index, pool_.peers(), pool_.total());
        return false;
    }
    // Per-peer windows beyond the initial grant are returnable at once: tell the
    // peer now, unless traffic will carry them.
    if (p->cr.needs_explicit_update() && !closing_) {
        send_update(p);
    }
    return true;
}

bool tag_engine::credit_take(peer_state *p, unsigned am, std::uint32_t &returned)
{
    returned = 0;
    if (!params_.credits) [[unlikely]] {
        return true;
    }
    bool must_carry = false;
    if (metered(am)) [[likely]] {
        const credit_verdict v = p->cr.try_consume(1);
        if (v == credit_verdict::blocked) [[unlikely]] {
            return false;
        }
        must_carry = v == credit_verdict::ok_must_carry;
    }
    // Piggyback in batches: a prefix on every message of a ping-pong would cost
    // more than the credits it returns. Safe, because the batch is at most the
    // threshold: a peer that waits for credits gets an explicit update anyway,
    // and the last credit always carries (docs/credits.md).
    if (must_carry || p->cr.returnable() >= piggyback_min_) {
        returned = p->cr.take_returnable();
    }
    return true;
}

status tag_engine::tx_short_slow(peer_state *p, am_id am, const void *hdr, std::size_t hlen,
                                 const void *payload, std::size_t len)
{
    std::uint32_t n;
    if (!credit_take(p, unsigned(am), n)) [[unlikely]] {
        return status::busy;  // no credit: the caller queues the message
    }
    status st;
    if (n == 0) {
        st = transport::send_short(p->tl, p->conn, unsigned(am), hdr, hlen, payload, len);
    } else {
        alignas(8) std::uint8_t buf[sizeof(credit_prefix) + 64];
        const credit_prefix cp{n, 0};
        std::memcpy(buf, &cp, sizeof(cp));
        std::memcpy(buf + sizeof(cp), hdr, hlen);
        const unsigned id = unsigned(am) | am_credit_flag;
        if (sizeof(cp) + hlen + len <= p->max_short) {
            st = transport::send_short(p->tl, p->conn, id, buf, sizeof(cp) + hlen, payload, len);
        } else {
            // The prefix pushed it past the short size: the bcopy budget kept room for it.
            const iovec iov{const_cast<void *>(payload), len};
            st = transport::send_bcopy(p->tl, p->conn, id, buf, sizeof(cp) + hlen, &iov, 1, 0, len);
        }
    }
    if (st != status::ok && params_.credits) {
        if (metered(unsigned(am))) {
            p->cr.refund(1);
        }
        p->cr.restore_returnable(n);
    }
    return st;
}

status tag_engine::tx_bcopy(peer_state *p, am_id am, const void *hdr, std::size_t hlen,
                            const iovec *iov, std::size_t iovcnt, std::size_t offset,
                            std::size_t len)
{
    std::uint32_t n;
    if (!credit_take(p, unsigned(am), n)) [[unlikely]] {
        return status::busy;
    }
    status st;
    if (n == 0) [[likely]] {
        st = transport::send_bcopy(p->tl, p->conn, unsigned(am), hdr, hlen, iov, iovcnt, offset,
                                   len);
    } else {
        alignas(8) std::uint8_t buf[sizeof(credit_prefix) + 64];
        const credit_prefix cp{n, 0};
        std::memcpy(buf, &cp, sizeof(cp));
        std::memcpy(buf + sizeof(cp), hdr, hlen);
        st = transport::send_bcopy(p->tl, p->conn, unsigned(am) | am_credit_flag, buf,
                                   sizeof(cp) + hlen, iov, iovcnt, offset, len);
    }
    if (st != status::ok && params_.credits) {
        if (metered(unsigned(am))) {
            p->cr.refund(1);
        }
        p->cr.restore_returnable(n);
    }
    return st;
}

void tag_engine::send_update(peer_state *p)
{
    const std::uint32_t n = p->cr.take_explicit_update();
    const credit_prefix cp{n, 0};
    const status st =
        transport::send_short(p->tl, p->conn, unsigned(am_id::credit_update) | am_credit_flag, &cp,
                              sizeof(cp), nullptr, 0);
    if (st != status::ok) {
        p->cr.refund(1);
        p->cr.restore_returnable(n);
        if (std::find(updates_due_.begin(), updates_due_.end(), p) == updates_due_.end()) {
            updates_due_.push_back(p);  // retried by progress
        }
    }
}

void tag_engine::progress_updates()
{
    auto due = std::move(updates_due_);
    updates_due_.clear();
    for (peer_state *p : due) {
        if (!p->failed && p->cr.needs_explicit_update()) {
            send_update(p);
        }
    }
}

peer_state *tag_engine::credit_peer_slow(unsigned tl, transport::src_id src)
{
    rx_source *s = source(tl, src);
    if (s == nullptr) {
        return nullptr;
    }
    if (s->peer != nullptr) {
        return s->peer;
    }
    // First message from this sender: its credits live in the same peer record
    // our sends to it use (both directions of one window pair).
    peer_state *p = nullptr;
    if (s->av != unknown_source) {
        int rc = 0;
        p = peer_for(s->av, rc);
    }
    if (p == nullptr) {
        p = reply_peer(tl, src);
    }
    if (p == nullptr || !attach_credits(p)) {
        return nullptr;
    }
    s = source(tl, src);
    s->peer = p;
    return p;
}

void tag_engine::credits(std::uint64_t peer, bool all, weft_credits &out) const
{
    out = {};
    out.send_window = params_.credits ? pool_.initial() : 0;
    out.recv_window = params_.credits ? pool_.window() : 0;
    if (!params_.credits) {
        out.send = UINT64_MAX;  // no flow control: nothing to run out of
        out.recv = UINT64_MAX;
        return;
    }
    auto add = [&](const peer_state &p) {
        const std::uint32_t sendable = p.cr.attached() ? p.cr.sendable() : pool_.initial();
        out.send += sendable > p.reserved ? sendable - p.reserved : 0;
        out.recv += p.cr.attached() ? p.cr.recv_credits() : pool_.initial();
    };
    if (all) {
        for (const auto &p : peers_) {
            if (p != nullptr && p->cr.attached()) {
                add(*p);
            }
        }
        return;
    }
    if (peer < peers_.size() && peers_[peer] != nullptr) {
        add(*peers_[peer]);
    } else {
        out.send = pool_.initial();  // first contact grants the initial credits
        out.recv = pool_.initial();
    }
}

std::size_t tag_engine::message_cost(std::size_t len) const noexcept
{
    if (!params_.credits) {
        return 0;
    }
    if (len > params_.rndv_thresh) {
        return 0;  // a rendezvous header spends no credit; the data is read in place
    }
    // The cost depends on the transport a peer is reached by: answer the most any
    // of this endpoint's transports would charge, so an application that sends
    // only when it holds this many credits is never refused.
    std::size_t worst = 1;
    for (unsigned i = 0; i < ntls_; ++i) {
        const std::size_t budget = tls_[i]->attr().max_bcopy - sizeof(credit_prefix);
        if (sizeof(eager_data_hdr) + len > budget) {
            worst = std::max(worst, credit_cost(len, budget - sizeof(eager_first_hdr),
                                                budget - sizeof(eager_frag_hdr)));
        }
    }
    return worst;
}

void tag_engine::complete_send(void *context, std::uint64_t op_flags, std::uint64_t tag)
{
    const bool wanted =
        (op_flags & WEFT_INJECT) == 0 && (!tx.selective || (op_flags & WEFT_COMPLETION) != 0);
    tx.success({context, send_flags, 0, nullptr, 0, tag, 0}, wanted);
}

status tag_engine::send_now(peer_state *p, const send_args &a)
{
    // One active message: the common case. Header on the stack, payload gathered
    // by the transport straight from the user's buffer.
    if ((a.flags & WEFT_REMOTE_CQ_DATA) == 0) [[likely]] {
        const eager_hdr h{a.tag};
        if (a.iovcnt == 1 && sizeof(h) + a.len <= p->max_short) [[likely]] {
            return tx_short(p, am_id::eager, &h, sizeof(h), a.iov[0].iov_base, a.len);
        }
        return tx_bcopy(p, am_id::eager, &h, sizeof(h), a.iov, a.iovcnt, 0, a.len);
    }
    const eager_data_hdr h{a.tag, a.data};
    if (a.iovcnt == 1 && sizeof(h) + a.len <= p->max_short) {
        return tx_short(p, am_id::eager_data, &h, sizeof(h), a.iov[0].iov_base, a.len);
    }
    return tx_bcopy(p, am_id::eager_data, &h, sizeof(h), a.iov, a.iovcnt, 0, a.len);
}

int tag_engine::send(const send_args &a)
{
    int rc = 0;
    peer_state *p = peer_for(a.dest, rc);
    if (p == nullptr) [[unlikely]] {
        return rc;
    }
    const std::size_t hdr =
        (a.flags & WEFT_REMOTE_CQ_DATA) != 0 ? sizeof(eager_data_hdr) : sizeof(eager_hdr);
    if (p->pending_head == nullptr && hdr + a.len <= p->max_bcopy && a.len <= params_.rndv_thresh)
        [[likely]] {
        const status st = send_now(p, a);
        if (st == status::ok) [[likely]] {
            complete_send(a.context, a.flags, a.tag);
            return 0;
        }
        if (st != status::again && st != status::busy) {
            if (st == status::unreachable) {
                mark_failed(p->index);
            }
            return base::to_c(st);
        }
    }
    if (params_.credit_eagain && params_.credits && !can_send(p)) {
        // The application asked to see back-pressure instead of queueing.
        progress();
        if (!can_send(p)) {
            return -WEFT_EAGAIN;
        }
    }
    if (a.len > params_.rndv_thresh && (a.flags & WEFT_INJECT) == 0) {
        return send_rndv(p, a);
    }
    // Queue mode, nothing queued ahead, and the credits cannot carry the whole
    // eager message now: send it as a rendezvous (an unmetered header; the data
    // waits here) instead of waiting for credits that unmatched messages may hold.
    if (params_.credits && !params_.credit_eagain && p->pending_head == nullptr &&
        !eager_credits_ok(p, eager_cost(p, hdr, a.len))) {
        return send_rndv(p, a);
    }
    return queue_send(p, a);
}

bool tag_engine::eager_credits_ok(const peer_state *p, std::uint32_t cost) noexcept
{
    if (!p->cr.attached()) {
        return true;
    }
    // The whole message at once, the last credit only with returns riding along:
    // a message whose first fragment went out never waits for credits for the rest.
    const std::uint32_t sc = p->cr.send_credits();
    return sc > cost || (sc == cost && p->cr.returnable() > 0);
}

void tag_engine::to_rndv(peer_state *p, send_request *r)
{
    unreserve(r, r->reserved);  // a rendezvous header spends no credit
    r->kind = send_kind::rndv_rts;
    r->started = false;
    expose_rndv(p, r);
}

void tag_engine::expose_rndv(peer_state *p, send_request *r)
{
    // One contiguous buffer can be read in place by the receiver; a gather list
    // goes through the clear-to-send path.
    r->zcopy = r->iovcnt == 1 && r->total != 0 &&
               p->tl->expose(r->iov[0].iov_base, r->total, r->rb) == status::ok;
    r->id = rndv_sends_.add(r);
}

send_request *tag_engine::new_request(peer_state *p, send_kind kind)
{
    send_request *r = send_pool_.get();
    if (r == nullptr) [[unlikely]] {
        return nullptr;
    }
    r->next = nullptr;
    r->kind = kind;
    r->context = nullptr;
    r->op_flags = 0;
    r->iovcnt = 0;
    r->total = 0;
    r->offset = 0;
    r->tag = 0;
    r->data = 0;
    r->msg_id = 0;
    r->has_data = false;
    r->started = false;
    r->owned = nullptr;
    r->peer = p;
    r->id = 0;
    r->rreq = 0;
    r->rb = {};
    r->zcopy = false;
    r->reserved = 0;
    r->ctl_am = 0;
    return r;
}

void tag_engine::enqueue(peer_state *p, send_request *r)
{
    const bool solicited = r->kind == send_kind::control || r->kind == send_kind::rndv_data;
    send_request *&head = solicited ? p->sol_head : p->pending_head;
    send_request *&tail = solicited ? p->sol_tail : p->pending_tail;
    if (tail != nullptr) {
        tail->next = r;
    } else {
        head = r;
    }
    tail = r;
    r->next = nullptr;
    ++pending_sends_;
    if (!p->in_pending_list) {
        p->in_pending_list = true;
        p->next_pending = pending_peers_;
        pending_peers_ = p;
    }
}

std::uint32_t tag_engine::eager_cost(const peer_state *p, std::size_t hdr, std::size_t len) noexcept
{
    if (hdr + len <= p->max_bcopy) {
        return 1;
    }
    return static_cast<std::uint32_t>(credit_cost(len, p->max_bcopy - sizeof(eager_first_hdr),
                                                  p->max_bcopy - sizeof(eager_frag_hdr)));
}

void tag_engine::reserve(peer_state *p, send_request *r, std::uint32_t n) noexcept
{
    if (params_.credits) {
        r->reserved = n;
        p->reserved += n;
    }
}

void tag_engine::unreserve(send_request *r, std::uint32_t n) noexcept
{
    n = std::min(n, r->reserved);
    r->reserved -= n;
    r->peer->reserved -= n;
}

void tag_engine::free_send(send_request *r)
{
    unreserve(r, r->reserved);
    if (r->id != 0) {
        rndv_sends_.remove(r->id);
    }
    if (r->zcopy) {
        r->peer->tl->unexpose(r->rb);  // no peer reads the buffer any more
        r->zcopy = false;
    }
    std::free(r->owned);
    send_pool_.put(r);
}

void tag_engine::fail_send(send_request *r, int err)
{
    if (r->kind != send_kind::control) {
        tx.failure({r->context, send_flags, 0, nullptr, r->data, r->tag,
                    r->peer != nullptr ? r->peer->index : WEFT_ADDR_NOTAVAIL},
                   {err, 0, 0});
    }
    free_send(r);
}

send_request *tag_engine::queued_request(peer_state *p, send_kind kind, const send_args &a, int &rc)
{
    if (pending_sends_ >= params_.tx_size) {
        progress();
        if (pending_sends_ >= params_.tx_size || p->failed) {
            rc = p->failed ? -WEFT_EHOSTUNREACH : -WEFT_EAGAIN;
            return nullptr;
        }
    }
    send_request *r = new_request(p, kind);
    if (r == nullptr) {
        rc = -WEFT_ENOMEM;
        return nullptr;
    }
    r->context = a.context;
    r->op_flags = a.flags;
    r->total = a.len;
    r->tag = a.tag;
    r->data = a.data;
    r->has_data = (a.flags & WEFT_REMOTE_CQ_DATA) != 0;
    if ((a.flags & WEFT_INJECT) != 0) {
        // The caller may reuse its buffer on return: keep a copy (a rendezvous
        // then reads the library's copy).
        r->owned = static_cast<std::uint8_t *>(std::malloc(std::max<std::size_t>(a.len, 1)));
        if (r->owned == nullptr) {
            free_send(r);
            rc = -WEFT_ENOMEM;
            return nullptr;
        }
        copy_from_iov(r->owned, a.iov, a.iovcnt, 0, a.len);
        r->iov[0] = {r->owned, a.len};
        r->iovcnt = 1;
    } else {
        r->iovcnt = static_cast<std::uint32_t>(a.iovcnt);
        std::copy_n(a.iov, a.iovcnt, r->iov.begin());
    }
    return r;
}

int tag_engine::send_rndv(peer_state *p, const send_args &a)
{
    int rc = 0;
    send_request *r = queued_request(p, send_kind::rndv_rts, a, rc);
    if (r == nullptr) {
        return rc;
    }
    expose_rndv(p, r);
    enqueue(p, r);
    push_peer(p);
    return 0;
}

void tag_engine::send_control(peer_state *p, am_id am, const void *hdr, std::size_t len)
{
    // Inside a push (a synchronous transport answering during a send) the reply
    // could complete the very request being pushed: queue it for the next round.
    if (p->sol_head == nullptr && !pushing_) {
        const status st = tx_short(p, am, hdr, len, nullptr, 0);
        if (st == status::ok) {
            return;
        }
        if (st != status::again && st != status::busy) {
            WEFT_LOG(proto, debug, "protocol message %u to peer %u not sent: %s", unsigned(am),
                     p->index, base::status_string(st));
            return;
        }
    }
    send_request *r = new_request(p, send_kind::control);
    if (r == nullptr) {
        WEFT_LOG(proto, error, "no memory to queue a protocol message");
        return;
    }
    r->ctl_am = static_cast<std::uint8_t>(am);
    std::memcpy(r->ctl_hdr, hdr, std::min(len, sizeof(r->ctl_hdr)));
    r->total = std::min(len, sizeof(r->ctl_hdr));
    enqueue(p, r);
}

peer_state *tag_engine::reply_peer(unsigned tl, transport::src_id src)
{
    rx_source *s = source(tl, src);
    if (s == nullptr) {
        return nullptr;
    }
    if (s->av != unknown_source) {
        int rc = 0;
        return peer_for(s->av, rc);
    }
    if (s->reply == nullptr) {
        // A sender outside the address vector: answer it on the transport it used.
        transport::wire_address addr{};
        transport::conn_id conn = transport::invalid_id;
        if (tls_[tl]->remote_address(src, addr) != status::ok ||
            tls_[tl]->connect(addr, conn) != status::ok) {
            return nullptr;
        }
        auto p = std::make_unique<peer_state>();
        p->tl = tls_[tl];
        p->conn = conn;
        p->max_short = tls_[tl]->attr().max_short;
        p->max_bcopy = tls_[tl]->attr().max_bcopy;
        p->index = unknown_source;
        if (params_.credits) {
            p->max_bcopy -= sizeof(credit_prefix);
        }
        s = source(tl, src);  // connect() may not, but be safe against reallocation
        s->reply = std::move(p);
    }
    return s->reply.get();
}

int tag_engine::queue_send(peer_state *p, const send_args &a)
{
    int rc = 0;
    send_request *r = queued_request(p, send_kind::eager, a, rc);
    if (r == nullptr) {
        return rc;
    }
    r->msg_id = p->next_msg_id++;
    reserve(p, r, eager_cost(p, r->has_data ? sizeof(eager_data_hdr) : sizeof(eager_hdr), a.len));
    enqueue(p, r);
    push_peer(p);
    return 0;
}

status tag_engine::push(peer_state *p, send_request *r)
{
    switch (r->kind) {
        case send_kind::eager:
            if (!r->started && params_.credits && !params_.credit_eagain &&
                !eager_credits_ok(
                    p, eager_cost(p, r->has_data ? sizeof(eager_data_hdr) : sizeof(eager_hdr),
                                  r->total))) {
                to_rndv(p, r);  // see send(): its credits may never come
                return push(p, r);
            }
            return push_eager(p, r);
        case send_kind::control:
            return tx_short(p, static_cast<am_id>(r->ctl_am), r->ctl_hdr, r->total, nullptr, 0);
        case send_kind::rndv_rts: {
            const rndv_rts_hdr h{
                r->tag,   r->data,
                r->total, r->id,
                r->rb,    (r->has_data ? rts_flag_data : 0) | (r->zcopy ? rts_flag_zcopy : 0),
                0};
            // Mark it sent first: a synchronous transport (self) answers inside the call.
            r->started = true;
            static const iovec none{nullptr, 0};
            const status st = sizeof(h) <= p->max_short
                                  ? tx_short(p, am_id::rndv_rts, &h, sizeof(h), nullptr, 0)
                                  : tx_bcopy(p, am_id::rndv_rts, &h, sizeof(h), &none, 1, 0, 0);
            r->started = st == status::ok;
            return st;
        }
        case send_kind::rndv_data:
            while (r->offset < r->total) {
                const rndv_data_hdr h{r->rreq, r->offset};
                const std::size_t chunk = std::min(r->total - r->offset, p->max_bcopy - sizeof(h));
                const status st = tx_bcopy(p, am_id::rndv_data, &h, sizeof(h), r->iov.data(),
                                           r->iovcnt, r->offset, chunk);
                if (st != status::ok) {
                    return st;
                }
                r->offset += chunk;
            }
            return status::ok;
    }
    return status::invalid;
}

status tag_engine::push_eager(peer_state *p, send_request *r)
{
    if (!r->started) {
        const std::size_t hdr = r->has_data ? sizeof(eager_data_hdr) : sizeof(eager_hdr);
        if (hdr + r->total <= p->max_bcopy) {
            const send_args a{
                r->iov.data(), r->iovcnt, r->total, 0,
                r->tag,        r->data,   nullptr,  r->has_data ? WEFT_REMOTE_CQ_DATA : 0};
            const status st = send_now(p, a);
            if (st == status::ok) {
                r->started = true;
                r->offset = r->total;
                unreserve(r, 1);
            }
            return st;
        }
        const eager_first_hdr h{r->tag, r->data, r->total, r->msg_id,
                                r->has_data ? first_flag_data : 0};
        const std::size_t chunk = std::min(r->total, p->max_bcopy - sizeof(h));
        const status st =
            tx_bcopy(p, am_id::eager_first, &h, sizeof(h), r->iov.data(), r->iovcnt, 0, chunk);
        if (st != status::ok) {
            return st;
        }
        r->started = true;
        r->offset = chunk;
        unreserve(r, 1);
    }
    while (r->offset < r->total) {
        const eager_frag_hdr h{r->offset, r->msg_id, 0};
        const std::size_t chunk = std::min(r->total - r->offset, p->max_bcopy - sizeof(h));
        const status st = tx_bcopy(p, am_id::eager_frag, &h, sizeof(h), r->iov.data(), r->iovcnt,
                                   r->offset, chunk);
        if (st != status::ok) {
            return st;
        }
        r->offset += chunk;
        unreserve(r, 1);
    }
    return status::ok;
}

void tag_engine::push_peer(peer_state *p)
{
    // A synchronous transport (self) runs handlers inside a send, and they may
    // queue more to this peer: the outer loop picks that up, so do not nest.
    if (pushing_) {
        return;
    }
    pushing_ = true;
    push_queue(p);
    pushing_ = false;
}

void tag_engine::push_queue(peer_state *p)
{
    // Solicited traffic first: it never waits for credits, and a message the
    // receiver is waiting for must not queue behind messages it cannot take yet.
    if (push_list(p, p->sol_head, p->sol_tail)) {
        (void)push_list(p, p->pending_head, p->pending_tail);
    }
}

bool tag_engine::push_list(peer_state *p, send_request *&head, send_request *&tail)
{
    while (send_request *r = head) {
        const status st = push(p, r);
        if (st == status::again || st == status::busy) {  // queue full, or no credit yet
            return false;
        }
        head = r->next;
        if (head == nullptr) {
            tail = nullptr;
        }
        --pending_sends_;
        if (st != status::ok) {
            fail_send(r, st == status::unreachable ? WEFT_EHOSTUNREACH : -static_cast<int>(st));
            if (p->index != unknown_source) {
                mark_failed(p->index);
            }
            return false;
        }
        switch (r->kind) {
            case send_kind::rndv_rts:
                break;  // waits (in rndv_sends_) for the receiver's fin or cts
            case send_kind::control:
                free_send(r);
                break;
            case send_kind::eager:
            case send_kind::rndv_data:
                complete_send(r->context, r->op_flags, r->tag);
                free_send(r);
                break;
        }
    }
    return true;
}

void tag_engine::progress_pending()
{
    peer_state **pp = &pending_peers_;
    while (peer_state *p = *pp) {
        push_peer(p);
        if (p->pending_head == nullptr && p->sol_head == nullptr) {
            *pp = p->next_pending;
            p->in_pending_list = false;
        } else {
            pp = &p->next_pending;
        }
    }
}

unsigned tag_engine::progress()
{
    unsigned n;
    if (npoll_ == 1) [[likely]] {
        n = transport::progress(poll_tls_[0]);
    } else {
        n = 0;
        for (unsigned i = 0; i < npoll_; ++i) {
            n += transport::progress(poll_tls_[i]);
        }
    }
    if (pending_peers_ != nullptr || !updates_due_.empty()) [[unlikely]] {
        progress_queued();
    }
    return n;
}

void tag_engine::progress_queued()
{
    if (pending_peers_ != nullptr) {
        progress_pending();
    }
    if (!updates_due_.empty()) {
        progress_updates();
    }
}

// ------------------------------------------------------------------ receive side

int tag_engine::recv(const recv_args &a)
{
    std::uint32_t src = any_source;
    if (a.src != WEFT_ADDR_UNSPEC) {
        if (a.src >= unknown_source) [[unlikely]] {
            return -WEFT_EINVAL;
        }
        src = static_cast<std::uint32_t>(a.src);
        if ((src >= peers_.size() || peers_[src] == nullptr) && !source_failed(src)) [[unlikely]] {
            // First contact with this source: connect, so its transport watches it
            // (a directed receive from a peer that dies must fail, not hang).
            int rc = 0;
            (void)peer_for(src, rc);
        }
    }
    recv_request *r = recv_pool_.get();
    if (r == nullptr) [[unlikely]] {
        return -WEFT_ENOMEM;
    }
    r->context = a.context;
    r->op_flags = a.flags;
    r->iovcnt = static_cast<std::uint32_t>(a.iovcnt);
    r->capacity = 0;
    for (std::size_t i = 0; i < a.iovcnt; ++i) {
        r->iov[i] = a.iov[i];
        r->capacity += a.iov[i].iov_len;
    }
    unexpected_msg *m = matcher_.post(r, src, a.tag, a.ignore);
    if (m == nullptr) [[likely]] {
        if (src != any_source && source_failed(src)) [[unlikely]] {
            // Nothing from a dead peer will ever match this receive.
            if (matcher_.remove_posted(r)) {
                r->msg_src = src;
                r->msg_tag = a.tag;
                r->msg_flags = 0;
                r->msg_data = 0;
                r->received = 0;
                r->total = 0;
                fail_recv(r, WEFT_EHOSTUNREACH, 0);
            }
        }
        return 0;
    }
    deliver_unexpected(r, static_cast<unexpected_record *>(m));
    return 0;
}

void tag_engine::deliver_unexpected(recv_request *r, unexpected_record *u)
{
    r->msg_tag = u->tag;
    r->msg_data = u->data;
    r->msg_flags = u->flags;
    r->msg_src = u->src;
    r->total = u->total;
    r->received = u->received;
    if (u->rndv) {
        const rndv_info rv = u->rv;
        free_unexpected(u);
        rndv_start(r, rv);
        return;
    }
    copy_to_iov(r->iov.data(), r->iovcnt, 0, u->buf, u->received);
    if (u->received == u->total) {
        free_unexpected(u);
        complete_recv(r);
        return;
    }
    // Still arriving: the rest of the fragments go straight to the receive.
    for (auto &v : sources_) {
        for (auto &s : v) {
            if (s.active && s.ureq == u) {
                s.ureq = nullptr;
                s.rreq = r;
            }
        }
    }
    free_unexpected(u);
}

void tag_engine::complete_recv(recv_request *r)
{
    if (r->total > r->capacity) [[unlikely]] {
        fail_recv(r, WEFT_ETRUNC, r->total - r->capacity);
        return;
    }
    const bool wanted = !rx.selective || (r->op_flags & WEFT_COMPLETION) != 0;
    rx.success({r->context, recv_flags | r->msg_flags, r->total, r->iov[0].iov_base, r->msg_data,
                r->msg_tag, reported_src(r->msg_src)},
               wanted);
    recv_pool_.put(r);
}

void tag_engine::fail_recv(recv_request *r, int err, std::size_t olen)
{
    const std::size_t len = err == WEFT_ETRUNC ? r->capacity : 0;
    rx.failure(
        {r->context, recv_flags | r->msg_flags, len, r->iovcnt > 0 ? r->iov[0].iov_base : nullptr,
         r->msg_data, r->msg_tag, reported_src(r->msg_src)},
        {err, 0, olen});
    recv_pool_.put(r);
}

unexpected_record *tag_engine::new_unexpected(std::uint32_t src, std::uint64_t tag,
                                              std::uint64_t data, std::uint64_t flags,
                                              std::size_t total)
{
    unexpected_record *u = unexp_pool_.get();
    if (u == nullptr) [[unlikely]] {
        return nullptr;
    }
    u->src = src;
    u->tag = tag;
    u->data = data;
    u->flags = flags;
    u->total = total;
    u->received = 0;
    u->claimed = false;
    u->discard = false;
    u->rndv = false;
    u->variable = false;
    u->cr_peer = nullptr;
    u->cr_held = 0;
    if (total <= unexpected_inline) [[likely]] {
        u->buf = u->inline_buf;
    } else {
        u->buf = static_cast<std::uint8_t *>(std::malloc(total));
        if (u->buf == nullptr) {
            unexp_pool_.put(u);
            WEFT_LOG(proto, error, "no memory for an unexpected message of %zu bytes", total);
            return nullptr;
        }
    }
    return u;
}

void tag_engine::free_unexpected(unexpected_record *u)
{
    if (u->cr_held != 0 && !closing_) {
        release(u->cr_peer, u->cr_held);  // its buffers are free: the credits go back
    }
    if (u->buf != u->inline_buf) {
        std::free(u->buf);
    }
    unexp_pool_.put(u);
}

rx_source *tag_engine::source_slow(unsigned tl, transport::src_id src)
{
    auto &v = sources_[tl];
    if (src >= v.size()) [[unlikely]] {
        if (src >= max_sources) {
            return nullptr;
        }
        v.resize(src + 1);
    }
    rx_source &s = v[src];
    if (!s.resolved) [[unlikely]] {
        resolve_source(tl, src, s);
    }
    return &s;
}

void tag_engine::resolve_source(unsigned tl, transport::src_id src, rx_source &s)
{
    transport::wire_address addr{};
    if (tls_[tl]->remote_address(src, addr) == status::ok) {
        s.av = av_.reverse(addr);
        // An unknown sender may be inserted into the AV later: resolve again then.
        s.resolved = s.av != unknown_source;
    }
}

void tag_engine::drop(unsigned tl, transport::src_id src, const char *why)
{
    WEFT_LOG(proto, warn, "dropped a message from sender %u of transport %u: %s", src, tl, why);
}

void tag_engine::am_handler(void *arg, transport::src_id src, unsigned am, const void *data,
                            std::size_t len)
{
    auto *c = static_cast<tl_ctx *>(arg);
    tag_engine *e = c->engine;
    const auto *bytes = static_cast<const std::uint8_t *>(data);
    std::uint32_t returned = 0;
    if ((am & am_credit_flag) != 0) {
        if (len < sizeof(credit_prefix)) [[unlikely]] {
            e->drop(c->index, src, "short credit prefix");
            return;
        }
        returned = load<credit_prefix>(bytes).credits;
        bytes += sizeof(credit_prefix);
        len -= sizeof(credit_prefix);
        am &= ~am_credit_flag;
    }
    // Credits off: p stays nullptr (hold() keeps no credits then) and nothing is metered.
    peer_state *p = nullptr;
    bool counted = false;
    if (e->params_.credits) [[likely]] {
        p = e->credit_peer(c->index, src);
        if (p == nullptr) [[unlikely]] {
            e->drop(c->index, src, "no flow-control state for the sender");
            return;
        }
        if (am == unsigned(am_id::credit_update)) [[unlikely]] {
            e->on_credit_update(p, src, returned);
            return;
        }
        counted = metered(am);
        if (counted && p->cr.on_message_received(1, e->pool_) != status::ok) [[unlikely]] {
            WEFT_LOG(proto, error,
                     "sender %u of transport %u overran its receive credits: message dropped", src,
                     c->index);
            return;
        }
        if (returned != 0) [[unlikely]] {
            e->on_returned(p, src, returned);
        }
    }
    // Self delivers inside a send, so handlers can nest: keep the outer state.
    peer_state *const outer_peer = e->rx_peer_;
    const bool outer_held = e->rx_held_;
    e->rx_peer_ = counted ? p : nullptr;  // hold() keeps credits of metered messages only
    e->rx_held_ = false;
    e->dispatch(c->index, src, am, bytes, len);
    if (counted && !e->rx_held_) [[likely]] {
        e->release(p, 1);  // the data went where it belongs (or was dropped)
    }
    e->rx_peer_ = outer_peer;
    e->rx_held_ = outer_held;
}

void tag_engine::on_credit_update(peer_state *p, transport::src_id src, std::uint32_t returned)
{
    // Uses one receive credit, released at once, and returns `returned`.
    if (p->cr.on_explicit_update(returned, pool_) != status::ok) [[unlikely]] {
        WEFT_LOG(proto, error, "credit update from sender %u overruns its window: dropped", src);
        return;
    }
    if (p->cr.needs_explicit_update() && !p->failed) {
        send_update(p);
    }
}

void tag_engine::on_returned(peer_state *p, transport::src_id src, std::uint32_t returned)
{
    if (p->cr.on_credits_returned(returned) != status::ok) [[unlikely]] {
        WEFT_LOG(proto, error, "sender %u returned %u credits, beyond any window: ignored", src,
                 returned);
    } else if (p->cr.needs_explicit_update() && !p->failed) [[unlikely]] {
        // An update that waited for a send credit can go now, even if this
        // message's own buffer stays held.
        send_update(p);
    }
}

void tag_engine::hold(unexpected_record *u)
{
    if (rx_peer_ != nullptr) {
        u->cr_peer = rx_peer_;
        ++u->cr_held;
        rx_held_ = true;
    }
}

void tag_engine::dispatch(unsigned tl, transport::src_id src, unsigned am,
                          const std::uint8_t *bytes, std::size_t len)
{
    struct {
        unsigned index;
    } ctx{tl};
    auto *c = &ctx;
    tag_engine *e = this;
    switch (static_cast<am_id>(am)) {
        case am_id::eager:
            if (len < sizeof(eager_hdr)) [[unlikely]] {
                break;
            }
            e->on_message(c->index, src, load<std::uint64_t>(bytes), 0, 0,
                          bytes + sizeof(eager_hdr), len - sizeof(eager_hdr));
            return;
        case am_id::eager_data: {
            if (len < sizeof(eager_data_hdr)) [[unlikely]] {
                break;
            }
            const auto h = load<eager_data_hdr>(bytes);
            e->on_message(c->index, src, h.tag, h.data, WEFT_REMOTE_CQ_DATA,
                          bytes + sizeof(eager_data_hdr), len - sizeof(eager_data_hdr));
            return;
        }
        case am_id::eager_first:
            if (len < sizeof(eager_first_hdr)) [[unlikely]] {
                break;
            }
            e->on_first(c->index, src, load<eager_first_hdr>(bytes),
                        bytes + sizeof(eager_first_hdr), len - sizeof(eager_first_hdr));
            return;
        case am_id::eager_frag:
            if (len < sizeof(eager_frag_hdr)) [[unlikely]] {
                break;
            }
            e->on_frag(c->index, src, load<eager_frag_hdr>(bytes), bytes + sizeof(eager_frag_hdr),
                       len - sizeof(eager_frag_hdr));
            return;
        case am_id::rndv_rts:
            if (len != sizeof(rndv_rts_hdr)) [[unlikely]] {
                break;
            }
            e->on_rts(c->index, src, load<rndv_rts_hdr>(bytes));
            return;
        case am_id::credit_update:
            break;  // handled before dispatch; here only if credits are off
        case am_id::rndv_fin:
            if (len != sizeof(rndv_fin_hdr)) [[unlikely]] {
                break;
            }
            e->on_fin(load<rndv_fin_hdr>(bytes));
            return;
        case am_id::rndv_cts:
            if (len != sizeof(rndv_cts_hdr)) [[unlikely]] {
                break;
            }
            e->on_cts(c->index, src, load<rndv_cts_hdr>(bytes));
            return;
        case am_id::rndv_data:
            if (len < sizeof(rndv_data_hdr)) [[unlikely]] {
                break;
            }
            e->on_rndv_data(c->index, src, load<rndv_data_hdr>(bytes),
                            bytes + sizeof(rndv_data_hdr), len - sizeof(rndv_data_hdr));
            return;
    }
    e->drop(c->index, src, "unknown active message id or short header");
}

void tag_engine::on_message(unsigned tl, transport::src_id src, std::uint64_t tag,
                            std::uint64_t data, std::uint64_t flags, const void *payload,
                            std::size_t len)
{
    rx_source *s = source(tl, src);
    if (s == nullptr || s->active) [[unlikely]] {
        drop(tl, src, s == nullptr ? "sender id out of range" : "message inside a fragmented one");
        return;
    }
    if (is_variable(len)) [[unlikely]] {
        // A variable message that came eagerly (the sender's threshold is higher):
        // keep it here and notify.
        unexpected_record *u = new_unexpected(s->av, tag, data, flags, len);
        if (u == nullptr) {
            drop(tl, src, "no memory for a variable message");
            return;
        }
        std::memcpy(u->buf, payload, len);
        u->received = len;
        hold(u);
        notify_variable(u);
        return;
    }
    posted_recv *pr = matcher_.match_posted(s->av, tag);
    if (pr != nullptr) [[likely]] {
        auto *r = static_cast<recv_request *>(pr);
        if (r->iovcnt == 1 && len <= r->capacity) [[likely]] {
            // The common case, completed here: one buffer that holds the message.
            if (len <= 64) [[likely]] {
                base::copy_small(r->iov[0].iov_base, payload, len);  // 0 bytes: buffer may be NULL
            } else {
                std::memcpy(r->iov[0].iov_base, payload, len);
            }
            rx.success({r->context, recv_flags | flags, len, r->iov[0].iov_base, data, tag,
                        reported_src(s->av)},
                       !rx.selective || (r->op_flags & WEFT_COMPLETION) != 0);
            recv_pool_.put(r);
            return;
        }
        r->msg_tag = tag;
        r->msg_data = data;
        r->msg_flags = flags;
        r->msg_src = s->av;
        r->total = len;
        r->received = len;
        copy_to_iov(r->iov.data(), r->iovcnt, 0, payload, len);
        complete_recv(r);
        return;
    }
    unexpected_record *u = new_unexpected(s->av, tag, data, flags, len);
    if (u == nullptr) [[unlikely]] {
        drop(tl, src, "no memory for an unexpected message");
        return;
    }
    std::memcpy(u->buf, payload, len);
    u->received = len;
    hold(u);
    matcher_.add_unexpected(u, s->av, tag);
}

void tag_engine::on_first(unsigned tl, transport::src_id src, const eager_first_hdr &h,
                          const void *payload, std::size_t len)
{
    rx_source *s = source(tl, src);
    if (s == nullptr || s->active) [[unlikely]] {
        drop(tl, src,
             s == nullptr ? "sender id out of range" : "new message inside a fragmented one");
        return;
    }
    if (h.total_len > params_.max_msg_size || len > h.total_len || len == 0) [[unlikely]] {
        drop(tl, src, "bad message length in first fragment");
        return;
    }
    const std::uint64_t flags = (h.flags & first_flag_data) != 0 ? WEFT_REMOTE_CQ_DATA : 0;
    if (len == h.total_len) {
        on_message(tl, src, h.tag, h.data, flags, payload, len);
        return;
    }
    s->active = true;
    s->msg_id = h.msg_id;
    s->total = h.total_len;
    s->received = len;
    s->rreq = nullptr;
    s->ureq = nullptr;
    if (is_variable(h.total_len)) {
        unexpected_record *u = new_unexpected(s->av, h.tag, h.data, flags, h.total_len);
        if (u == nullptr) {
            drop(tl, src, "no memory for a variable message");
            return;  // s->active with no target: the fragments are swallowed
        }
        std::memcpy(u->buf, payload, len);
        u->received = len;
        s->ureq = u;
        hold(u);
        notify_variable(u);
        return;
    }
    posted_recv *pr = matcher_.match_posted(s->av, h.tag);
    if (pr != nullptr) {
        auto *r = static_cast<recv_request *>(pr);
        r->msg_tag = h.tag;
        r->msg_data = h.data;
        r->msg_flags = flags;
        r->msg_src = s->av;
        r->total = h.total_len;
        r->received = len;
        copy_to_iov(r->iov.data(), r->iovcnt, 0, payload, len);
        s->rreq = r;
        return;
    }
    unexpected_record *u = new_unexpected(s->av, h.tag, h.data, flags, h.total_len);
    if (u == nullptr) {
        // Nowhere to put it: swallow the fragments (s->active with no target).
        drop(tl, src, "no memory for an unexpected message");
        return;
    }
    std::memcpy(u->buf, payload, len);
    u->received = len;
    s->ureq = u;
    hold(u);
    matcher_.add_unexpected(u, s->av, h.tag);
}

void tag_engine::on_frag(unsigned tl, transport::src_id src, const eager_frag_hdr &h,
                         const void *payload, std::size_t len)
{
    rx_source *s = source(tl, src);
    if (s == nullptr || !s->active || h.msg_id != s->msg_id || h.offset != s->received ||
        len > s->total - s->received) [[unlikely]] {
        drop(tl, src, "fragment out of sequence or out of bounds");
        return;
    }
    if (s->rreq != nullptr) {
        copy_to_iov(s->rreq->iov.data(), s->rreq->iovcnt, h.offset, payload, len);
        s->rreq->received += len;
    } else if (s->ureq != nullptr && !s->ureq->discard) {
        std::memcpy(s->ureq->buf + h.offset, payload, len);
        hold(s->ureq);
        s->ureq->received += len;
    }
    s->received += len;
    if (s->received < s->total) {
        return;
    }
    s->active = false;
    if (s->rreq != nullptr) {
        complete_recv(s->rreq);
    } else if (s->ureq != nullptr) {
        s->ureq->received = s->total;
        if (s->ureq->discard) {
            free_unexpected(s->ureq);
        }
    }
    s->rreq = nullptr;
    s->ureq = nullptr;
}

// ------------------------------------------------------------------ rendezvous

void tag_engine::on_rts(unsigned tl, transport::src_id src, const rndv_rts_hdr &h)
{
    rx_source *s = source(tl, src);
    if (s == nullptr || s->active) [[unlikely]] {
        drop(tl, src,
             s == nullptr ? "sender id out of range" : "rendezvous inside a fragmented message");
        return;
    }
    if (h.total_len > params_.max_msg_size) [[unlikely]] {
        drop(tl, src, "bad rendezvous length");
        return;
    }
    const rndv_info rv{h.sreq, h.rb, h.flags, tl, src};
    const std::uint64_t flags = (h.flags & rts_flag_data) != 0 ? WEFT_REMOTE_CQ_DATA : 0;
    posted_recv *pr = is_variable(h.total_len) ? nullptr : matcher_.match_posted(s->av, h.tag);
    if (pr != nullptr) {
        auto *r = static_cast<recv_request *>(pr);
        r->msg_tag = h.tag;
        r->msg_data = h.data;
        r->msg_flags = flags;
        r->msg_src = s->av;
        r->total = h.total_len;
        r->received = 0;
        rndv_start(r, rv);
        return;
    }
    // Unexpected (or variable): the record is the whole cost; the data stays at the sender.
    unexpected_record *u = new_unexpected(s->av, h.tag, h.data, flags, 0);
    if (u == nullptr) {
        drop(tl, src, "no memory for a rendezvous header");
        return;
    }
    u->total = h.total_len;
    u->rndv = true;
    u->rv = rv;
    if (is_variable(h.total_len)) {
        hold(u);
        notify_variable(u);
        return;
    }
    hold(u);
    matcher_.add_unexpected(u, s->av, h.tag);
}

void tag_engine::rndv_start(recv_request *r, const rndv_info &rv)
{
    peer_state *reply = source_failed(r->msg_src) ? nullptr : reply_peer(rv.tl, rv.src);
    if (reply == nullptr || reply->failed) {
        fail_recv(r, WEFT_EHOSTUNREACH, 0);
        return;
    }
    r->received = 0;
    r->rndv_tl = rv.tl;
    r->rndv_src = rv.src;
    r->rndv_sreq = rv.sreq;
    r->reading = false;
    if (r->total == 0) {
        // A zero-byte message sent as a rendezvous (credit pressure): nothing to move.
        const rndv_fin_hdr f{rv.sreq, fin_done, 0};
        send_control(reply, am_id::rndv_fin, &f, sizeof(f));
        complete_recv(r);
        return;
    }
    r->rreq_id = rndv_recvs_.add(r);
    transport::iface *tl = tls_[rv.tl];
    if ((rv.flags & rts_flag_zcopy) != 0 && tl->ops().get_zcopy != nullptr) {
        const std::size_t len = std::min(r->total, r->capacity);
        const status st =
            tl->ops().get_zcopy(tl, rv.src, r->iov.data(), r->iovcnt, rv.rb, len, r->rreq_id);
        if (st == status::in_progress) {
            r->reading = true;  // get_done finishes it (or the peer's failure)
            return;
        }
        if (st != status::not_supported) {
            finish_read(r, st);
            return;
        }
        // The transport cannot read this peer's memory: fall back to a copy.
    }
    const rndv_cts_hdr c{rv.sreq, r->rreq_id};
    send_control(reply, am_id::rndv_cts, &c, sizeof(c));
}

void tag_engine::finish_read(recv_request *r, status st)
{
    rndv_recvs_.remove(r->rreq_id);
    peer_state *reply = reply_peer(r->rndv_tl, r->rndv_src);
    if (st == status::ok) {
        r->received = r->total;
        if (reply != nullptr && !reply->failed) {
            const rndv_fin_hdr f{r->rndv_sreq, fin_done, 0};
            send_control(reply, am_id::rndv_fin, &f, sizeof(f));
        }
        complete_recv(r);
        return;
    }
    // The read failed but the connection may still work (a bad key, say): tell the
    // sender, whose send would otherwise wait for a fin forever.
    if (reply != nullptr && !reply->failed && st != status::unreachable) {
        const rndv_fin_hdr f{r->rndv_sreq, fin_failed, 0};
        send_control(reply, am_id::rndv_fin, &f, sizeof(f));
    }
    WEFT_LOG(proto, debug, "rendezvous read of %zu bytes failed: %s", r->total,
             base::status_string(st));
    fail_recv(r,
              st == status::unreachable ? WEFT_EHOSTUNREACH
              : st == status::access    ? WEFT_EACCES
                                        : WEFT_EIO,
              0);
}

void tag_engine::get_done_handler(void *arg, std::uint64_t cookie, status st)
{
    auto *c = static_cast<tl_ctx *>(arg);
    tag_engine *e = c->engine;
    recv_request *r = e->rndv_recvs_.find(cookie);
    if (r == nullptr || !r->reading || r->rndv_tl != c->index) [[unlikely]] {
        return;  // failed already with its peer
    }
    r->reading = false;
    e->finish_read(r, st);
}

void tag_engine::on_fin(const rndv_fin_hdr &h)
{
    send_request *r = rndv_sends_.find(h.sreq);
    if (r == nullptr || r->kind != send_kind::rndv_rts || !r->started) [[unlikely]] {
        WEFT_LOG(proto, warn, "rendezvous fin for an unknown send (id %llx): dropped",
                 static_cast<unsigned long long>(h.sreq));
        return;
    }
    if (h.status == fin_failed) [[unlikely]] {
        // The receiver could not read the buffer (its transport said why, there).
        fail_send(r, WEFT_EIO);
        return;
    }
    // Claimed or discarded, the send completes normally: its buffer is free again.
    complete_send(r->context, r->op_flags, r->tag);
    free_send(r);
}

void tag_engine::on_cts(unsigned tl, transport::src_id src, const rndv_cts_hdr &h)
{
    send_request *r = rndv_sends_.find(h.sreq);
    if (r == nullptr || r->kind != send_kind::rndv_rts || !r->started || r->peer->tl != tls_[tl])
        [[unlikely]] {
        drop(tl, src, "clear-to-send for an unknown send");
        return;
    }
    rndv_sends_.remove(r->id);
    r->id = 0;
    r->kind = send_kind::rndv_data;
    r->rreq = h.rreq;
    r->offset = 0;
    enqueue(r->peer, r);
    push_peer(r->peer);
}

void tag_engine::on_rndv_data(unsigned tl, transport::src_id src, const rndv_data_hdr &h,
                              const void *payload, std::size_t len)
{
    recv_request *r = rndv_recvs_.find(h.rreq);
    if (r == nullptr || r->reading || r->rndv_tl != tl || r->rndv_src != src ||
        h.offset != r->received || len > r->total - r->received) [[unlikely]] {
        drop(tl, src, "rendezvous data out of sequence or for an unknown receive");
        return;
    }
    copy_to_iov(r->iov.data(), r->iovcnt, h.offset, payload, len);
    r->received += len;
    if (r->received == r->total) {
        rndv_recvs_.remove(r->rreq_id);
        complete_recv(r);
    }
}

void tag_engine::notify_variable(unexpected_record *u)
{
    u->claimed = true;
    u->variable = true;
    u->var.op_context = nullptr;
    u->var.internal[0] = u;
    u->var.internal[1] = nullptr;
    u->var.internal[2] = nullptr;
    claimed_.emplace(&u->var, u);
    rx.success({&u->var, recv_flags | WEFT_VARIABLE_MSG | u->flags, u->total, nullptr, u->data,
                u->tag, reported_src(u->src)},
               true);
}

unexpected_record *tag_engine::find_claimed(void *context)
{
    const auto it = claimed_.find(context);
    return it == claimed_.end() ? nullptr : it->second;
}

void tag_engine::discard(unexpected_record *u, void *context)
{
    const completion c{context, recv_flags | u->flags, u->total, nullptr, u->data,
                       u->tag,  reported_src(u->src)};
    if (u->rndv) {
        // Nothing moves: tell the sender its buffer is free.
        if (peer_state *p = reply_peer(u->rv.tl, u->rv.src); p != nullptr && !p->failed) {
            const rndv_fin_hdr f{u->rv.sreq, fin_discarded, 0};
            send_control(p, am_id::rndv_fin, &f, sizeof(f));
        }
    }
    rx.success(c, true);
    if (u->received == u->total || u->rndv) {
        free_unexpected(u);
    } else {
        u->discard = true;  // freed when its last fragment arrives
    }
}

// ------------------------------------------------------------------ peek, claim, discard, cancel

int tag_engine::recv_special(const recv_args &a)
{
    const bool peek = (a.flags & WEFT_PEEK) != 0;
    const bool claim = (a.flags & WEFT_CLAIM) != 0;
    const bool discard_it = (a.flags & WEFT_DISCARD) != 0;
    if ((claim || discard_it) && a.context == nullptr) {
        return -WEFT_EINVAL;
    }
    if (peek && claim && claimed_.count(a.context) != 0) {
        return -WEFT_EINVAL;  // this context already holds a reserved message
    }
    unexpected_record *u = nullptr;
    if (peek) {
        std::uint32_t src = any_source;
        if (a.src != WEFT_ADDR_UNSPEC) {
            if (a.src >= unknown_source) {
                return -WEFT_EINVAL;
            }
            src = static_cast<std::uint32_t>(a.src);
        }
        progress();  // let arrived messages become visible to the peek
        u = static_cast<unexpected_record *>(matcher_.find_unexpected(src, a.tag, a.ignore));
        if (u == nullptr) {
            rx.failure({a.context, recv_flags, 0, nullptr, 0, a.tag, WEFT_ADDR_NOTAVAIL},
                       {WEFT_ENOMSG, 0, 0});
            return 0;
        }
        if (claim || discard_it) {
            matcher_.remove_unexpected(u);
        }
    } else {
        // CLAIM, CLAIM|DISCARD or DISCARD of a message reserved by PEEK|CLAIM or
        // notified as a variable message.
        u = find_claimed(a.context);
        if (u == nullptr) {
            return -WEFT_EINVAL;
        }
        claimed_.erase(a.context);
    }
    void *const context = u->variable ? u->var.op_context : a.context;
    if (discard_it) {
        discard(u, context);
        return 0;
    }
    const completion c{context, recv_flags | u->flags, u->total, nullptr, u->data,
                       u->tag,  reported_src(u->src)};
    if (peek && claim) {
        u->claimed = true;
        static_cast<weft_context *>(a.context)->internal[0] = u;
        claimed_.emplace(a.context, u);
        rx.success(c, true);
        return 0;
    }
    if (peek) {
        rx.success(c, true);  // the message stays queued
        return 0;
    }
    recv_request *r = recv_pool_.get();
    if (r == nullptr) {
        return -WEFT_ENOMEM;
    }
    r->context = context;
    r->op_flags = a.flags & ~(WEFT_CLAIM | WEFT_PEEK);
    r->iovcnt = static_cast<std::uint32_t>(a.iovcnt);
    r->capacity = 0;
    for (std::size_t i = 0; i < a.iovcnt; ++i) {
        r->iov[i] = a.iov[i];
        r->capacity += a.iov[i].iov_len;
    }
    deliver_unexpected(r, u);
    return 0;
}

int tag_engine::cancel(void *context)
{
    recv_request *found = nullptr;
    matcher_.remove_posted_if(
        [&](const posted_recv *p) {
            return found == nullptr && static_cast<const recv_request *>(p)->context == context;
        },
        [&](posted_recv *p) { found = static_cast<recv_request *>(p); });
    if (found == nullptr) {
        return -WEFT_ENOENT;
    }
    found->msg_src = found->src;
    found->msg_tag = found->tag;
    found->msg_flags = 0;
    found->msg_data = 0;
    found->received = 0;
    found->total = 0;
    fail_recv(found, WEFT_ECANCELED, 0);
    return 0;
}

// ------------------------------------------------------------------ failures

void tag_engine::peer_failed_handler(void *arg, transport::conn_id conn, transport::src_id src,
                                     status why)
{
    auto *c = static_cast<tl_ctx *>(arg);
    c->engine->on_peer_failed(c->index, conn, src, why);
}

void tag_engine::mark_failed(std::uint32_t index)
{
    if (index >= failed_.size()) {
        failed_.resize(index + 1);
    }
    if (failed_[index] != 0) {
        return;
    }
    failed_[index] = 1;
    if (index < peers_.size() && peers_[index] != nullptr) {
        peer_state *p = peers_[index].get();
        p->failed = true;
        for (send_request **q : {&p->sol_head, &p->pending_head}) {
            while (send_request *r = *q) {
                *q = r->next;
                --pending_sends_;
                fail_send(r, WEFT_EHOSTUNREACH);
            }
        }
        p->pending_tail = nullptr;
        p->sol_tail = nullptr;
        // Rendezvous sends whose header went out: the receiver will never read them.
        std::vector<send_request *> waiting;
        rndv_sends_.for_each([&](std::uint64_t, send_request *r) {
            if (r->peer == p && r->started) {
                waiting.push_back(r);
            }
        });
        for (auto *r : waiting) {
            fail_send(r, WEFT_EHOSTUNREACH);
        }
    }
    // Receives directed at the dead peer can never match any more.
    std::vector<recv_request *> dead;
    matcher_.remove_posted_if(
        [&](const posted_recv *p) { return p->src == index; },
        [&](posted_recv *p) { dead.push_back(static_cast<recv_request *>(p)); });
    for (auto *r : dead) {
        r->msg_src = index;
        r->msg_tag = r->tag;
        r->msg_flags = 0;
        r->msg_data = 0;
        r->received = 0;
        r->total = 0;
        fail_recv(r, WEFT_EHOSTUNREACH, 0);
    }
}

void tag_engine::on_peer_failed(unsigned tl, transport::conn_id conn, transport::src_id src,
                                status why)
{
    WEFT_LOG(proto, info, "peer failed on transport %u (conn %u, src %u): %s", tl, conn, src,
             base::status_string(why));
    if (conn != transport::invalid_id) {
        for (auto &p : peers_) {
            if (p != nullptr && p->tl == tls_[tl] && p->conn == conn) {
                mark_failed(p->index);
            }
        }
    }
    if (src == transport::invalid_id) {
        return;
    }
    rx_source *s = source(tl, src);
    if (s == nullptr) {
        return;
    }
    if (s->active) {
        // The message being reassembled will never be finished.
        if (s->rreq != nullptr) {
            fail_recv(s->rreq, WEFT_EHOSTUNREACH, 0);
        } else if (s->ureq != nullptr) {
            unexpected_record *u = s->ureq;
            if (u->discard) {
                free_unexpected(u);
            } else if (u->claimed) {
                u->total = u->received;  // the claim delivers what came
            } else {
                matcher_.remove_unexpected(u);
                free_unexpected(u);
            }
        }
        s->active = false;
        s->rreq = nullptr;
        s->ureq = nullptr;
    }
    // Receives waiting for rendezvous data from the dead sender.
    std::vector<recv_request *> starved;
    rndv_recvs_.for_each([&](std::uint64_t, recv_request *r) {
        if (r->rndv_tl == tl && r->rndv_src == src) {
            starved.push_back(r);
        }
    });
    for (auto *r : starved) {
        rndv_recvs_.remove(r->rreq_id);
        fail_recv(r, WEFT_EHOSTUNREACH, 0);
    }
    if (s->av != unknown_source) {
        mark_failed(s->av);
    }
    // The transport may give this sender id to another endpoint later: forget
    // what it resolved to (re-read from the new sender's address on its first message).
    s = source(tl, src);
    if (s != nullptr) {
        s->av = unknown_source;
        s->resolved = false;
        s->peer = nullptr;
        if (s->reply != nullptr) {
            s->reply->failed = true;
        }
    }
}

}  // namespace weft::proto
