// The channel (channel.hpp): peers, transports, credits, send queues, the
// active-message table and failure fan-out, shared by the protocol modules.

#include "proto/channel.hpp"

#include <algorithm>
#include <cstring>

#include "base/log.hpp"

namespace weft::proto {

namespace {

template <typename T>
[[gnu::always_inline]] inline T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof(v));  // the transport's buffer may not be aligned for T
    return v;
}

// Sources beyond this are treated as garbage from a broken transport.
constexpr transport::src_id max_sources = 1u << 20;

/// The message size whose time decides a peer's transport: the middle of the
/// eager range, where both latency and bandwidth count.
constexpr std::size_t choice_size = 8192;

}  // namespace

const request_ops channel::control_ops{
    .push =
        [](channel &ch, send_request *r) {
            auto *c = static_cast<control_request *>(r);
            return ch.send_small(c->peer, static_cast<am_id>(c->am), c->bytes, c->len);
        },
    .sent = [](channel &ch,
               send_request *r) { ch.controls_.put(static_cast<control_request *>(r)); },
    .fail = [](channel &ch, send_request *r,
               int) { ch.controls_.put(static_cast<control_request *>(r)); },
    .drop = [](channel &ch,
               send_request *r) { ch.controls_.put(static_cast<control_request *>(r)); },
};

channel::channel(const channel_params &p, const address_book &av)
    : params_(p), av_(av), upcall_(&upcall<table_only>)
{
    const char *why = "";
    if (pool_.init(params_.credit_cfg, &why) != status::ok) {
        // The core checked the configuration before: this is a bug, not a setting.
        WEFT_LOG(proto, error, "credit configuration rejected: %s", why);
    }
    piggyback_min_ = std::max<std::uint32_t>(1, pool_.threshold() / 4);
}

channel::~channel()
{
    shutdown();
}

void channel::shutdown()
{
    closing_ = true;  // freeing requests and records must not send credit updates
    auto drain = [&](peer_state *p) {
        for (send_request **q : {&p->pending_head, &p->sol_head}) {
            while (send_request *r = *q) {
                *q = r->next;
                unreserve(r, r->reserved);
                r->ops->drop(*this, r);
            }
        }
        p->pending_tail = nullptr;
        p->sol_tail = nullptr;
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
    pending_peers_ = nullptr;
    pending_sends_ = 0;
}

status channel::add_transport(transport::iface *tl, const transport::component *c)
{
    if (tl->attr().max_hdr < sizeof(credit_prefix) + max_header) {
        WEFT_LOG(proto, error, "transport %s takes %zu bytes of header, proto/ needs %zu", c->name,
                 tl->attr().max_hdr, sizeof(credit_prefix) + max_header);
        return status::not_supported;
    }
    if (ntls_ == max_transports) {
        WEFT_LOG(proto, error, "an endpoint takes at most %u transports: %s not added",
                 max_transports, c->name);
        return status::no_memory;
    }
    const unsigned i = ntls_++;
    tls_[i] = tl;
    components_[i] = c;
    tl_ctx_[i] = {this, i};
    tl->set_handlers(
        {upcall_, &peer_failed_upcall, &op_done_upcall, &wake_upcall, &imm_upcall, &tl_ctx_[i]});
    if ((tl->attr().caps & transport::cap::on_demand) == 0) {
        poll_[npoll_++] = tl;
    }
    return status::ok;
}

proto_params channel::params() const noexcept
{
    return {proto_version, 0, pool_.initial()};
}

// ------------------------------------------------------------------ peers

bool channel::compatible(const transport::address &a, const char *side) const
{
    transport::address_blob b;
    proto_params theirs{};
    if (!a.find(transport::proto_blob_id, b) || b.ep_len != sizeof(theirs)) {
        WEFT_LOG_RATE(proto, error, 4, 1024,
                      "%s pid %u endpoint %u has no weft protocol parameters in its address "
                      "(another weft version?): refused",
                      side, a.pid(), a.ep_id());
        return false;
    }
    std::memcpy(&theirs, b.ep, sizeof(theirs));
    const proto_params ours = params();
    if (theirs.version != ours.version) {
        WEFT_LOG_RATE(proto, error, 4, 1024,
                      "%s pid %u endpoint %u speaks weft protocol %u, this endpoint %u: refused",
                      side, a.pid(), a.ep_id(), theirs.version, ours.version);
        return false;
    }
    if (theirs.credit_initial != ours.credit_initial) {
        WEFT_LOG_RATE(proto, error, 4, 1024,
                      "%s pid %u endpoint %u uses WEFT_CREDIT_INITIAL=%u, this endpoint %u: every "
                      "process must use the same value; refused",
                      side, a.pid(), a.ep_id(), theirs.credit_initial, ours.credit_initial);
        return false;
    }
    return true;
}

std::unique_ptr<peer_state> channel::make_peer(unsigned tl, transport::conn_id conn,
                                               std::uint32_t index)
{
    auto p = std::make_unique<peer_state>();
    const transport::attributes &a = tls_[tl]->attr();
    p->tl = tls_[tl];
    p->tl_index = static_cast<std::uint8_t>(tl);
    p->conn = conn;
    p->index = index;
    p->max_short = static_cast<std::uint32_t>(std::min<std::size_t>(a.max_short, UINT32_MAX));
    // Room for piggybacked credits in every bcopy message.
    p->max_bcopy = static_cast<std::uint32_t>(
        std::min<std::size_t>(a.max_bcopy - sizeof(credit_prefix), UINT32_MAX));
    return p;
}

peer_state *channel::connect_peer(std::uint64_t dest, int &rc)
{
    if (dest >= UINT32_MAX - 1) {
        rc = -WEFT_EINVAL;
        return nullptr;
    }
    if (const int err = failed(dest); err != 0) {
        rc = -err;
        return nullptr;
    }
    transport::address addr;
    if (av_.lookup(dest, addr) != status::ok) {
        WEFT_LOG(proto, debug, "address %llu: not in the address vector (or removed)",
                 static_cast<unsigned long long>(dest));
        rc = -WEFT_EINVAL;
        return nullptr;
    }
    if (!compatible(addr, "peer")) {
        fail_peer(static_cast<std::uint32_t>(dest), WEFT_EINVAL);
        rc = -WEFT_EINVAL;
        return nullptr;
    }
    if (peer_state *p = adopt_reply(addr, static_cast<std::uint32_t>(dest)); p != nullptr) {
        if (!attach_credits(p)) {
            rc = -WEFT_EAGAIN;
            return nullptr;
        }
        return p;
    }
    // The transports that reach the peer, fastest first by their cost models
    // for a mid-size message. A connect that fails (shm: the peer's segment
    // cannot be mapped from here, though the node id says it could) moves on
    // to the next; only when all fail does the peer fail.
    std::array<unsigned, max_transports> order{};
    unsigned nreach = 0;
    for (unsigned i = 0; i < ntls_; ++i) {
        if (tls_[i]->reachable(addr)) {
            order[nreach++] = i;
        }
    }
    if (nreach == 0) {
        WEFT_LOG(proto, debug, "address %llu (pid %u) is not reachable by any open transport",
                 static_cast<unsigned long long>(dest), addr.pid());
        rc = -WEFT_EHOSTUNREACH;
        return nullptr;
    }
    std::stable_sort(order.begin(), order.begin() + nreach, [&](unsigned x, unsigned y) {
        return tls_[x]->attr().cost.time_ns(choice_size) <
               tls_[y]->attr().cost.time_ns(choice_size);
    });
    int best = -1;
    transport::conn_id conn = transport::invalid_id;
    status st = status::unreachable;
    for (unsigned k = 0; k < nreach; ++k) {
        st = tls_[order[k]]->connect(addr, conn);
        if (st == status::ok) {
            best = static_cast<int>(order[k]);
            break;
        }
        if (st == status::again || st == status::busy) {
            rc = base::to_c(st);  // try again later, on the same choice
            return nullptr;
        }
        if (k + 1 < nreach) {
            WEFT_LOG(proto, info,
                     "address %llu (pid %u): %s cannot connect (%s); trying the next transport",
                     static_cast<unsigned long long>(dest), addr.pid(), components_[order[k]]->name,
                     base::status_string(st));
        }
    }
    if (best < 0) {
        rc = base::to_c(st);
        if (st == status::unreachable) {
            fail_peer(static_cast<std::uint32_t>(dest), WEFT_EHOSTUNREACH);
        }
        return nullptr;
    }
    WEFT_LOG(proto, debug, "address %llu (pid %u) uses transport %s",
             static_cast<unsigned long long>(dest), addr.pid(), components_[best]->name);
    if (dest >= peers_.size()) {
        peers_.resize(dest + 1);
    }
    peers_[dest] = make_peer(static_cast<unsigned>(best), conn, static_cast<std::uint32_t>(dest));
    peer_state *ps = peers_[dest].get();
    if (!attach_credits(ps)) {
        rc = -WEFT_EAGAIN;
        return nullptr;
    }
    return ps;
}

peer_state *channel::adopt_reply(const transport::address &addr, std::uint32_t dest)
{
    // The peer wrote to us before we had its address: its messages' credits
    // live in the reply-only peer made then, and it keeps one flow-control
    // state for us, so that record becomes the peer (two records would each
    // assume the initial grant, and the credits it returns would reach only
    // the one its messages resolve to: a starved sender, or an overrun).
    for (unsigned tl = 0; tl < ntls_; ++tl) {
        auto &v = sources_[tl];
        for (std::size_t src = 0; src < v.size(); ++src) {
            if (v[src].reply == nullptr || v[src].reply->failed) {
                continue;
            }
            transport::address theirs;
            const auto id = static_cast<transport::src_id>(src);
            if (tls_[tl]->remote_address(id, theirs) != status::ok || !(theirs.id() == addr.id())) {
                continue;
            }
            if (dest >= peers_.size()) {
                peers_.resize(dest + 1);
            }
            rx_source &s = sources_[tl][src];
            peer_state *p = s.reply.get();
            p->index = dest;
            peers_[dest] = std::move(s.reply);
            s.av = dest;
            s.resolved = true;
            WEFT_LOG(proto, debug,
                     "address %u: the reply-only peer of sender %zu of transport %s "
                     "becomes its peer",
                     dest, src, components_[tl]->name);
            return p;
        }
    }
    return nullptr;
}

peer_state *channel::reply_peer(unsigned tl, transport::src_id src)
{
    rx_source *s = source(tl, src);
    if (s == nullptr) {
        return nullptr;
    }
    if (s->av != unknown_source) {
        int rc = 0;
        return peer(s->av, rc);
    }
    if (s->reply == nullptr) {
        // A sender outside the address vector: answer it on the transport it used.
        transport::address addr;
        transport::conn_id conn = transport::invalid_id;
        if (tls_[tl]->remote_address(src, addr) != status::ok ||
            tls_[tl]->connect(addr, conn) != status::ok) {
            return nullptr;
        }
        auto p = make_peer(tl, conn, unknown_source);
        s = source(tl, src);  // connect() may not, but be safe against reallocation
        s->reply = std::move(p);
    }
    return s->reply.get();
}

rx_source *channel::source_slow(unsigned tl, transport::src_id src)
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

void channel::resolve_source(unsigned tl, transport::src_id src, rx_source &s)
{
    transport::address addr;
    if (tls_[tl]->remote_address(src, addr) != status::ok) {
        return;
    }
    if (!compatible(addr, "sender")) {
        s.refused = true;
        s.resolved = true;  // nothing later will make it acceptable
        const std::uint32_t index = av_.reverse(addr.id());
        if (index != unknown_source) {
            fail_peer(index, WEFT_EINVAL);
        }
        return;
    }
    s.av = av_.reverse(addr.id());
    // An unknown sender may be inserted into the AV later: resolve again then.
    s.resolved = s.av != unknown_source;
}

void channel::fail_peer(std::uint32_t index, int err)
{
    if (index >= failed_.size()) {
        failed_.resize(index + 1);
    }
    if (failed_[index] != 0) {
        return;
    }
    failed_[index] = static_cast<std::uint8_t>(err);
    if (index < peers_.size() && peers_[index] != nullptr) {
        peer_state *p = peers_[index].get();
        p->failed = true;
        fail_queue(p, WEFT_EHOSTUNREACH);
    }
    for (const failure_hook &h : hooks_) {
        h.peer_failed(h.module, index, err);
    }
}

void channel::forget_peer(std::uint32_t index)
{
    fail_peer(index, WEFT_ENOENT);
    if (index < failed_.size()) {
        failed_[index] = WEFT_ENOENT;  // also when it had failed before: it is gone now
    }
    for (unsigned tl = 0; tl < ntls_; ++tl) {
        for (rx_source &s : sources_[tl]) {
            if (s.av == index) {
                // Resolved again by the next message (the AV no longer maps it).
                s.av = unknown_source;
                s.resolved = false;
            }
        }
    }
}

void channel::fail_queue(peer_state *p, int err)
{
    for (send_request **q : {&p->sol_head, &p->pending_head}) {
        while (send_request *r = *q) {
            *q = r->next;
            --pending_sends_;
            unreserve(r, r->reserved);
            r->ops->fail(*this, r, err);
        }
    }
    p->pending_tail = nullptr;
    p->sol_tail = nullptr;
}

// ------------------------------------------------------------------ credits

bool channel::attach_credits(peer_state *p)
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

bool channel::credit_take(peer_state *p, bool metered, std::uint32_t &returned)
{
    returned = 0;
    bool must_carry = false;
    if (metered) [[likely]] {
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

status channel::am_short_slow(peer_state *p, am_id am, bool metered, const void *hdr,
                              std::size_t hlen, const void *payload, std::size_t len)
{
    if (hlen > max_header) [[unlikely]] {
        return status::invalid;  // a module's bug: headers are at most max_header bytes
    }
    std::uint32_t n;
    if (!credit_take(p, metered, n)) [[unlikely]] {
        return status::busy;  // no credit: the caller queues the message
    }
    status st;
    if (n == 0) {
        st = transport::send_short(p->tl, p->conn, transport::make_am(unsigned(am), 0), hdr, hlen,
                                   payload, len);
    } else {
        alignas(8) std::uint8_t buf[sizeof(credit_prefix) + max_header];
        const credit_prefix cp{n, 0};
        std::memcpy(buf, &cp, sizeof(cp));
        if (hlen != 0) {
            std::memcpy(buf + sizeof(cp), hdr, hlen);  // hdr may be null when hlen is 0
        }
        const transport::am_word w = transport::make_am(unsigned(am), am_flag_credits);
        if (sizeof(cp) + hlen + len <= p->max_short) {
            st = transport::send_short(p->tl, p->conn, w, buf, sizeof(cp) + hlen, payload, len);
        } else {
            // The prefix pushed it past the short size: the bcopy budget kept room for it.
            const iovec iov{const_cast<void *>(payload), len};
            st = transport::send_bcopy(p->tl, p->conn, w, buf, sizeof(cp) + hlen, &iov, 1, 0, len);
        }
    }
    if (st != status::ok) {
        if (metered) {
            p->cr.refund(1);
        }
        p->cr.restore_returnable(n);
    }
    return st;
}

status channel::am_bcopy(peer_state *p, am_id am, bool metered, const void *hdr, std::size_t hlen,
                         const iovec *iov, std::size_t iovcnt, std::size_t offset, std::size_t len)
{
    if (hlen > max_header) [[unlikely]] {
        return status::invalid;  // a module's bug: headers are at most max_header bytes
    }
    std::uint32_t n;
    if (!credit_take(p, metered, n)) [[unlikely]] {
        return status::busy;
    }
    status st;
    if (n == 0) [[likely]] {
        st = transport::send_bcopy(p->tl, p->conn, transport::make_am(unsigned(am), 0), hdr, hlen,
                                   iov, iovcnt, offset, len);
    } else {
        alignas(8) std::uint8_t buf[sizeof(credit_prefix) + max_header];
        const credit_prefix cp{n, 0};
        std::memcpy(buf, &cp, sizeof(cp));
        if (hlen != 0) {
            std::memcpy(buf + sizeof(cp), hdr, hlen);  // hdr may be null when hlen is 0
        }
        st =
            transport::send_bcopy(p->tl, p->conn, transport::make_am(unsigned(am), am_flag_credits),
                                  buf, sizeof(cp) + hlen, iov, iovcnt, offset, len);
    }
    if (st != status::ok) {
        if (metered) {
            p->cr.refund(1);
        }
        p->cr.restore_returnable(n);
    }
    return st;
}

void channel::send_update(peer_state *p)
{
    const std::uint32_t n = p->cr.take_explicit_update();
    const credit_prefix cp{n, 0};
    const status st = transport::send_short(
        p->tl, p->conn, transport::make_am(unsigned(am_id::credit_update), am_flag_credits), &cp,
        sizeof(cp), nullptr, 0);
    if (st != status::ok) {
        p->cr.refund(1);
        p->cr.restore_returnable(n);
        if (std::find(updates_due_.begin(), updates_due_.end(), p) == updates_due_.end()) {
            updates_due_.push_back(p);  // retried by progress
        }
    }
}

void channel::progress_updates()
{
    auto due = std::move(updates_due_);
    updates_due_.clear();
    for (peer_state *p : due) {
        if (!p->failed && p->cr.needs_explicit_update()) {
            send_update(p);
        }
    }
}

peer_state *channel::credit_peer_slow(unsigned tl, transport::src_id src)
{
    rx_source *s = source(tl, src);
    if (s == nullptr || s->refused) {
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
        p = peer(s->av, rc);
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

void channel::on_credit_update(peer_state *p, transport::src_id src, std::uint32_t returned)
{
    // Uses one receive credit, released at once, and returns `returned`.
    if (p->cr.on_explicit_update(returned, pool_) != status::ok) [[unlikely]] {
        WEFT_LOG_RATE(proto, error, 16, 1024,
                      "credit update from sender %u overruns its window: dropped", src);
        return;
    }
    if (p->cr.needs_explicit_update() && !p->failed) {
        send_update(p);
    }
}

void channel::on_returned(peer_state *p, transport::src_id src, std::uint32_t returned)
{
    if (p->cr.on_credits_returned(returned) != status::ok) [[unlikely]] {
        WEFT_LOG_RATE(proto, error, 16, 1024,
                      "sender %u returned %u credits, beyond any window: ignored", src, returned);
    } else if (p->cr.needs_explicit_update() && !p->failed) [[unlikely]] {
        // An update that waited for a send credit can go now, even if this
        // message's own buffer stays held.
        send_update(p);
    }
}

void channel::credits(std::uint64_t peer, bool all, weft_credits &out) const
{
    out = {};
    out.send_window = pool_.initial();
    out.recv_window = pool_.window();
    auto add = [&](const peer_state &p) {
        // What can_send() lets go (the last-credit rule on the credits not
        // promised to queued messages, not sendable() less the promised:
        // that would keep the last credit back twice).
        out.send += p.cr.attached() ? free_sendable(&p) : pool_.initial();
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

// ------------------------------------------------------------------ queues

status channel::send_small(peer_state *p, am_id am, const void *bytes, std::size_t len)
{
    if (len <= p->max_short && len <= max_header) {
        return am_short(p, am, false, bytes, len, nullptr, 0);
    }
    const iovec iov{const_cast<void *>(bytes), len};
    return am_bcopy(p, am, false, nullptr, 0, &iov, 1, 0, len);
}

void channel::send_control(peer_state *p, am_id am, const void *hdr, std::size_t len,
                           const void *payload, std::size_t plen)
{
    alignas(8) std::uint8_t bytes[max_control];
    if (len + plen > sizeof(bytes)) {
        WEFT_LOG(proto, error, "protocol message %u of %zu bytes: too large (a bug)", unsigned(am),
                 len + plen);
        return;
    }
    std::memcpy(bytes, hdr, len);
    if (plen != 0) {
        std::memcpy(bytes + len, payload, plen);
    }
    len += plen;
    if (p->sol_head == nullptr) {
        const status st = send_small(p, am, bytes, len);
        if (st == status::ok) {
            return;
        }
        if (st != status::again && st != status::busy) {
            WEFT_LOG(proto, debug, "protocol message %u to peer %u not sent: %s", unsigned(am),
                     p->index, base::status_string(st));
            return;
        }
    }
    control_request *r = controls_.get();
    if (r == nullptr) {
        WEFT_LOG(proto, error, "no memory to queue a protocol message");
        return;
    }
    r->next = nullptr;
    r->ops = &control_ops;
    r->peer = p;
    r->reserved = 0;
    r->am = static_cast<std::uint8_t>(am);
    r->len = static_cast<std::uint8_t>(len);
    std::memcpy(r->bytes, bytes, len);
    enqueue(r, queue_class::solicited);
}

void channel::enqueue(send_request *r, queue_class q)
{
    peer_state *p = r->peer;
    const bool sol = q == queue_class::solicited;
    send_request *&head = sol ? p->sol_head : p->pending_head;
    send_request *&tail = sol ? p->sol_tail : p->pending_tail;
    r->next = nullptr;
    if (tail != nullptr) {
        tail->next = r;
    } else {
        head = r;
    }
    tail = r;
    ++pending_sends_;
    if (!p->in_pending_list) {
        p->in_pending_list = true;
        p->next_pending = pending_peers_;
        pending_peers_ = p;
    }
}

int channel::queue_room(peer_state *p)
{
    if (pending_sends_ < params_.tx_size) [[likely]] {
        return 0;
    }
    (void)progress();
    if (p->failed) {
        return -WEFT_EHOSTUNREACH;
    }
    return pending_sends_ < params_.tx_size ? 0 : -WEFT_EAGAIN;
}

void channel::push(peer_state *p)
{
    if (!closing_) {
        push_queue(p);
    }
}

void channel::push_queue(peer_state *p)
{
    // Solicited traffic first: it never waits for credits, and a message the
    // receiver is waiting for must not queue behind messages it cannot take yet.
    if (push_list(p, p->sol_head, p->sol_tail)) {
        (void)push_list(p, p->pending_head, p->pending_tail);
    }
}

bool channel::push_list(peer_state *p, send_request *&head, send_request *&tail)
{
    while (send_request *r = head) {
        const status st = r->ops->push(*this, r);
        if (st == status::again || st == status::busy) {  // queue full, or no credit yet
            return false;
        }
        head = r->next;
        if (head == nullptr) {
            tail = nullptr;
        }
        --pending_sends_;
        if (st != status::ok) {
            unreserve(r, r->reserved);
            r->ops->fail(*this, r,
                         st == status::unreachable ? WEFT_EHOSTUNREACH : -static_cast<int>(st));
            if (p->index != unknown_source) {
                fail_peer(p->index, WEFT_EHOSTUNREACH);
            } else {
                p->failed = true;
                fail_queue(p, WEFT_EHOSTUNREACH);
            }
            return false;
        }
        r->ops->sent(*this, r);
    }
    return true;
}

unsigned channel::progress_queued()
{
    unsigned n = 0;
    if (demand_ != 0) {
        // On-demand transports (self) that said they have work. Cleared first: a
        // transport that still has work after a batch wakes again.
        const std::uint32_t due = demand_;
        demand_ = 0;
        for (unsigned i = 0; i < ntls_; ++i) {
            if ((due & (1u << i)) != 0) {
                n += transport::progress(tls_[i]);
            }
        }
    }
    peer_state **pp = &pending_peers_;
    while (peer_state *p = *pp) {
        push(p);
        if (p->pending_head == nullptr && p->sol_head == nullptr) {
            *pp = p->next_pending;
            p->in_pending_list = false;
        } else {
            pp = &p->next_pending;
        }
    }
    if (!updates_due_.empty()) {
        progress_updates();
    }
    return n;
}

// ------------------------------------------------------------------ receiving

void channel::log_rx(unsigned tl, transport::src_id src, const am_entry &e,
                     const std::uint8_t *data, std::size_t len) const
{
    char text[160] = "";
    if (e.dump != nullptr) {
        (void)e.dump(data, len, text, sizeof(text));
    }
    WEFT_LOG(proto, trace_data, "rx %s from %s sender %u, %zu bytes: %s", e.name,
             components_[tl]->name, src, len, text);
}

void channel::overrun(unsigned tl, transport::src_id src) const
{
    WEFT_LOG_RATE(proto, error, 16, 4096,
                  "sender %u of transport %s overran its receive credits: message dropped", src,
                  components_[tl]->name);
}

void channel::drop(unsigned tl, transport::src_id src, const char *why)
{
    WEFT_LOG_RATE(proto, warn, 16, 4096, "dropped a message from sender %u of transport %s: %s",
                  src, components_[tl]->name, why);
}

void channel::dispatch_slow(unsigned tl, transport::src_id src, unsigned am, std::size_t len,
                            bool prefixed, std::uint32_t returned)
{
    if (am == unsigned(am_id::credit_update)) {
        // The channel's own message: the credit prefix and nothing else.
        peer_state *p = prefixed && len == 0 ? credit_peer(tl, src) : nullptr;
        if (p == nullptr) {
            drop(tl, src, "malformed credit update, or no flow-control state for the sender");
            return;
        }
        on_credit_update(p, src, returned);
        return;
    }
    drop(tl, src, am_[am].handler == nullptr ? "unknown active message id" : "short header");
}

void channel::peer_failed_upcall(void *arg, transport::conn_id conn, transport::src_id src,
                                 status why)
{
    auto *c = static_cast<tl_ctx *>(arg);
    c->ch->on_peer_failed(c->index, conn, src, why);
}

void channel::op_done_upcall(void *arg, std::uint64_t cookie, status st)
{
    auto *c = static_cast<tl_ctx *>(arg);
    tracked_op *op = c->ch->ops_.find(cookie);
    if (op == nullptr) [[unlikely]] {
        return;  // abandoned by its module (its peer failed first)
    }
    c->ch->ops_.remove(cookie);
    op->on_done(op, st);
}

void channel::wake_upcall(void *arg)
{
    auto *c = static_cast<tl_ctx *>(arg);
    c->ch->demand_ |= 1u << c->index;
}

void channel::imm_upcall(void *arg, transport::src_id src, std::uint32_t imm, std::size_t len)
{
    auto *c = static_cast<tl_ctx *>(arg);
    channel *ch = c->ch;
    // Flow control as for a metered message: the write used a receive buffer.
    peer_state *p = ch->credit_peer(c->index, src);
    if (p == nullptr) [[unlikely]] {
        ch->drop(c->index, src, "no flow-control state for the sender (refused, or no credits)");
        return;
    }
    if (p->cr.on_message_received(1, ch->pool_) != status::ok) [[unlikely]] {
        ch->overrun(c->index, src);
        return;
    }
    rx_context rx{c->index, src, ch->source(c->index, src), p, false};
    if (ch->imm_.handler == nullptr) [[unlikely]] {
        ch->drop(c->index, src, "a write with immediate, and no module takes immediates");
    } else {
        WEFT_LOG(proto, trace_data, "rx %s imm 0x%08x len %zu (tl %u src %u)", ch->imm_.name, imm,
                 len, c->index, src);
        ch->imm_.handler(ch->imm_.module, rx, imm, len);
    }
    if (!rx.held) {
        ch->release(p, 1);
    }
}

void channel::on_peer_failed(unsigned tl, transport::conn_id conn, transport::src_id src,
                             status why)
{
    WEFT_LOG(proto, info, "peer failed on transport %s (conn %d, src %d): %s",
             components_[tl]->name, conn == transport::invalid_id ? -1 : static_cast<int>(conn),
             src == transport::invalid_id ? -1 : static_cast<int>(src), base::status_string(why));
    std::uint32_t src_av = unknown_source;
    if (src != transport::invalid_id) {
        if (rx_source *s = source(tl, src); s != nullptr) {
            src_av = s->av;
            for (const failure_hook &h : hooks_) {
                h.source_failed(h.module, tl, src);
            }
            // The transport may give this sender id to another endpoint later:
            // forget what it resolved to (read again on its first message).
            s = source(tl, src);
            s->av = unknown_source;
            s->resolved = false;
            s->refused = false;
            s->peer = nullptr;
            if (s->reply != nullptr) {
                s->reply->failed = true;
                fail_queue(s->reply.get(), WEFT_EHOSTUNREACH);
            }
        }
    }
    if (conn != transport::invalid_id) {
        for (auto &p : peers_) {
            if (p != nullptr && p->tl == tls_[tl] && p->conn == conn) {
                fail_peer(p->index, WEFT_EHOSTUNREACH);
            }
        }
    }
    if (src_av != unknown_source) {
        fail_peer(src_av, WEFT_EHOSTUNREACH);
    }
}

}  // namespace weft::proto
