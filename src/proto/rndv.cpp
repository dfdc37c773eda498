// Rendezvous (rndv.hpp, docs/variable-messages.md).

#include "proto/rndv.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/copy.hpp"
#include "base/log.hpp"

namespace weft::proto {

namespace {

template <typename T>
T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

using base::copy_to_iov;

int err_of(status st)
{
    return st == status::unreachable ? WEFT_EHOSTUNREACH
           : st == status::access    ? WEFT_EACCES
                                     : WEFT_EIO;
}

}  // namespace

const request_ops rndv_module::send_ops{
    .push = &rndv_module::push,
    .sent =
        [](channel &, send_request *r) {
            auto *s = static_cast<rndv_send *>(r);
            if (s->data != 0) {
                s->owner->finish_send(s, 0);  // every piece went: the buffer is free
            }
            // An rts that went waits in sends_ for its fin or cts.
        },
    .fail =
        [](channel &, send_request *r, int err) {
            static_cast<rndv_send *>(r)->owner->finish_send(static_cast<rndv_send *>(r), err);
        },
    .drop =
        [](channel &, send_request *r) {
            auto *s = static_cast<rndv_send *>(r);
            rndv_module *m = s->owner;
            m->sends_.remove(s->id);
            if (s->exposed != 0) {
                s->peer->tl->unexpose(s->exp);
            }
            s->release(s);
        },
};

std::size_t rndv_get_min(const transport::attributes &a, std::size_t piece, bool busy) noexcept
{
    if (a.get_cost.bandwidth_mbps <= 0) {
        return 0;  // not modelled: the get is always taken
    }
    const double push_bw = busy ? a.cost.bandwidth_mbps / 2 : a.cost.bandwidth_mbps;
    if (push_bw <= 0 || piece == 0) {
        return 0;
    }
    // Both start with the rts and end with a control message back, which the
    // comparison leaves out: the push pays its sender's overhead per piece and
    // the pieces' latency once; the get its own overhead and latency once.
    auto get_wins = [&](std::size_t len) {
        const double pieces = static_cast<double>((len + piece - 1) / piece);
        const double push = a.cost.latency_ns + pieces * a.cost.overhead_ns +
                            static_cast<double>(len) * 1e3 / push_bw;
        return a.get_cost.time_ns(len) <= push;
    };
    // A get dearer per byte than the push (with its per-piece overhead) loses
    // on large messages whatever it costs once: a threshold "from" cannot
    // say "up to", so never. Otherwise the push's time grows at least as fast
    // as the get's, and the first doubling that wins brackets the answer.
    const double push_per_byte = 1e3 / push_bw + a.cost.overhead_ns / static_cast<double>(piece);
    if (1e3 / a.get_cost.bandwidth_mbps > push_per_byte) {
        return SIZE_MAX;
    }
    constexpr std::size_t limit = std::size_t{1} << 40;
    std::size_t hi = 1;
    while (hi <= limit && !get_wins(hi)) {
        hi *= 2;
    }
    if (hi > limit) {
        return SIZE_MAX;  // the push is never slower
    }
    std::size_t lo = hi / 2;  // loses (or 0)
    while (hi - lo > 1) {
        const std::size_t mid = lo + (hi - lo) / 2;
        (get_wins(mid) ? hi : lo) = mid;
    }
    return hi == 1 && get_wins(0) ? 0 : hi;
}

rndv_module::rndv_module(channel &ch, const rndv_consumer &consumer, std::size_t get_min)
    : ch_(ch), consumer_(consumer), get_min_(get_min)
{
    ch_.register_am(am_id::rndv_rts,
                    {&on_rts, this, "rndv_rts", &dump_rts, sizeof(rndv_rts_hdr), false});
    ch_.register_am(am_id::rndv_fin,
                    {&on_fin, this, "rndv_fin", nullptr, sizeof(rndv_fin_hdr), false});
    ch_.register_am(am_id::rndv_cts,
                    {&on_cts, this, "rndv_cts", nullptr, sizeof(rndv_cts_hdr), false});
    ch_.register_am(am_id::rndv_data,
                    {&on_data, this, "rndv_data", nullptr, sizeof(rndv_data_hdr), false});
    ch_.add_failure_hook({&peer_failed, &source_failed, this});
}

rndv_module::~rndv_module()
{
    shutdown();
}

void rndv_module::shutdown()
{
    // Sends whose rts went (queued ones were dropped by the channel's shutdown).
    std::vector<rndv_send *> waiting;
    sends_.for_each([&](std::uint64_t, rndv_send *r) { waiting.push_back(r); });
    for (rndv_send *r : waiting) {
        sends_.remove(r->id);
        if (r->exposed != 0) {
            r->peer->tl->unexpose(r->exp);
        }
        r->release(r);
    }
    std::vector<rndv_recv *> receiving;
    recvs_.for_each([&](std::uint64_t, rndv_recv *r) { receiving.push_back(r); });
    for (rndv_recv *r : receiving) {
        recvs_.remove(r->rv_id);
        if (r->rv_reading) {
            ch_.untrack(r->rv_cookie);
        }
    }
}

// ------------------------------------------------------------------ send side

void rndv_module::expose(rndv_send *r)
{
    // One contiguous buffer can be read in place by the receiver; a gather list
    // goes through the clear-to-send path.
    r->exposed = 0;
    if (r->iovcnt == 1 && r->total != 0 && (r->peer->tl->attr().caps & transport::cap::get) != 0 &&
        r->peer->tl->expose(r->peer->conn, r->iov[0].iov_base, r->total, r->exp) == status::ok) {
        r->exposed = 1;
    }
    r->id = sends_.add(r);
}

void rndv_module::send(rndv_send *r)
{
    r->ops = &send_ops;
    r->owner = this;
    r->rts_sent = 0;
    r->data = 0;
    r->rreq = 0;
    r->offset = 0;
    expose(r);
    ch_.enqueue(r, queue_class::ordered);
    ch_.push(r->peer);
}

void rndv_module::convert(rndv_send *r)
{
    ch_.unreserve(r, r->reserved);  // a rendezvous header spends no credit
    r->ops = &send_ops;
    r->owner = this;
    r->rts_sent = 0;
    r->data = 0;
    r->rreq = 0;
    r->offset = 0;
    expose(r);
}

status rndv_module::push(channel &ch, send_request *req)
{
    auto *r = static_cast<rndv_send *>(req);
    peer_state *p = r->peer;
    if (r->data == 0) {
        alignas(8) std::uint8_t buf[sizeof(rndv_rts_hdr) + rndv_match_max];
        rndv_rts_hdr h{};
        h.sreq = r->id;
        h.total_len = r->total;
        if (r->exposed != 0) {
            h.addr = reinterpret_cast<std::uint64_t>(r->iov[0].iov_base);
            std::memcpy(h.rkey, r->exp.rkey, r->exp.rkey_len);
            h.rkey_len = r->exp.rkey_len;
            h.flags = rts_flag_get;
        }
        h.match_len = r->match_len;
        std::memcpy(buf, &h, sizeof(h));
        std::memcpy(buf + sizeof(h), r->match, r->match_len);
        const std::size_t hlen = sizeof(h) + r->match_len;
        static const iovec none{nullptr, 0};
        const status st = hlen <= p->max_short
                              ? ch.am_short(p, am_id::rndv_rts, false, buf, hlen, nullptr, 0)
                              : ch.am_bcopy(p, am_id::rndv_rts, false, buf, hlen, &none, 1, 0, 0);
        r->rts_sent = st == status::ok ? 1 : 0;
        return st;
    }
    while (r->offset < r->total) {
        const rndv_data_hdr h{r->rreq, r->offset};
        const std::size_t chunk =
            std::min<std::size_t>(r->total - r->offset, p->max_bcopy - sizeof(h));
        const status st = ch.am_bcopy(p, am_id::rndv_data, false, &h, sizeof(h), r->iov.data(),
                                      r->iovcnt, r->offset, chunk);
        if (st != status::ok) {
            return st;
        }
        r->offset += chunk;
    }
    return status::ok;
}

void rndv_module::finish_send(rndv_send *r, int err)
{
    sends_.remove(r->id);
    r->id = 0;
    if (r->exposed != 0) {
        r->peer->tl->unexpose(r->exp);  // no peer reads the buffer any more
        r->exposed = 0;
    }
    r->done(r, err);
}

void rndv_module::on_fin(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rndv_module *>(m);
    const auto h = load<rndv_fin_hdr>(data);
    rndv_send *r = self->sends_.find(h.sreq);
    if (r == nullptr || r->rts_sent == 0 || r->data != 0 || len != sizeof(h)) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "rendezvous fin for an unknown send");
        return;
    }
    // Claimed or discarded, the send completes normally: its buffer is free
    // again. fin_failed: the receiver could not read it (its transport said why).
    // fin_refused: the receiver could not keep the header (its limit, or memory).
    const int err = h.status == fin_failed ? WEFT_EIO : h.status == fin_refused ? WEFT_ENOMEM : 0;
    self->finish_send(r, err);
}

void rndv_module::on_cts(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rndv_module *>(m);
    const auto h = load<rndv_cts_hdr>(data);
    rndv_send *r = self->sends_.find(h.sreq);
    if (r == nullptr || r->rts_sent == 0 || r->data != 0 || r->peer->tl_index != rx.tl ||
        len != sizeof(h)) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "clear-to-send for an unknown send");
        return;
    }
    self->sends_.remove(r->id);
    r->id = 0;
    r->data = 1;
    r->rreq = h.rreq;
    r->offset = 0;
    self->ch_.enqueue(r, queue_class::solicited);
    self->ch_.push(r->peer);
}

void rndv_module::peer_failed(void *m, std::uint32_t index, int err)
{
    auto *self = static_cast<rndv_module *>(m);
    (void)err;
    // Sends whose header went: the receiver will never read them.
    std::vector<rndv_send *> waiting;
    self->sends_.for_each([&](std::uint64_t, rndv_send *r) {
        if (r->peer->index == index && r->rts_sent != 0) {
            waiting.push_back(r);
        }
    });
    for (rndv_send *r : waiting) {
        self->finish_send(r, WEFT_EHOSTUNREACH);
    }
}

// ------------------------------------------------------------------ receive side

void rndv_module::on_rts(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rndv_module *>(m);
    const auto h = load<rndv_rts_hdr>(data);
    if (h.match_len > rndv_match_max || len != sizeof(h) + h.match_len ||
        h.rkey_len > transport::max_rkey_size) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "malformed rendezvous header");
        return;
    }
    if (h.total_len > self->ch_.max_msg_size()) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "rendezvous length above WEFT_MAX_MSG_SIZE");
        return;
    }
    rndv_info info{};
    info.sreq = h.sreq;
    info.total = h.total_len;
    info.addr = h.addr;
    std::memcpy(info.rkey, h.rkey, sizeof(info.rkey));
    info.rkey_len = h.rkey_len;
    info.flags = h.flags;
    info.tl = static_cast<std::uint8_t>(rx.tl);
    info.src = rx.src;
    self->consumer_.on_rts(self->consumer_.ctx, rx, info, data + sizeof(h), h.match_len);
}

int rndv_module::dump_rts(const std::uint8_t *data, std::size_t len, char *buf, std::size_t size)
{
    const auto h = load<rndv_rts_hdr>(data);
    (void)len;
    return std::snprintf(buf, size, "sreq %llx len %llu%s", static_cast<unsigned long long>(h.sreq),
                         static_cast<unsigned long long>(h.total_len),
                         (h.flags & rts_flag_get) != 0 ? " get" : "");
}

transport::conn_id rndv_module::conn_on(unsigned tl, transport::src_id src)
{
    transport::address addr;
    transport::conn_id conn = transport::invalid_id;
    transport::iface *t = ch_.tl(tl);
    if (t->remote_address(src, addr) != status::ok || t->connect(addr, conn) != status::ok) {
        return transport::invalid_id;
    }
    return conn;
}

void rndv_module::start(rndv_recv *r, const rndv_info &info)
{
    r->rv_sreq = info.sreq;
    r->rv_total = info.total;
    r->rv_received = 0;
    r->rv_tl = info.tl;
    r->rv_src = info.src;
    r->rv_reading = false;
    r->rv_id = 0;
    r->owner = this;
    peer_state *reply = ch_.reply_peer(info.tl, info.src);
    if (reply == nullptr || reply->failed) {
        r->rv_done(r, WEFT_EHOSTUNREACH, 0);
        return;
    }
    if (r->rv_total == 0) {
        // A zero-byte message sent as a rendezvous (credit pressure): nothing to move.
        const rndv_fin_hdr f{info.sreq, fin_done, 0};
        ch_.send_control(reply, am_id::rndv_fin, &f, sizeof(f));
        r->rv_done(r, 0, 0);
        return;
    }
    r->rv_id = recvs_.add(r);
    transport::iface *tl = ch_.tl(info.tl);
    if ((info.flags & rts_flag_get) != 0 && tl->ops().get != nullptr) {
        // Read it in place, on the transport the header came by (where the
        // sender exposed it), when the cost models and the sender's activity
        // say a read beats a push. A key this transport cannot unpack, or a
        // get it declines (not_supported), falls back to a push.
        transport::rkey key{};
        const transport::conn_id conn = conn_on(info.tl, info.src);
        const std::size_t len = std::min(r->rv_total, r->dst_capacity);
        const status kst = conn != transport::invalid_id && read_pays(info.tl, conn, len)
                               ? tl->unpack_rkey(info.rkey, info.rkey_len, key)
                               : status::canceled;
        if (kst == status::ok || kst == status::not_supported) {
            ++reads_;
            r->on_done = &read_done;
            r->rv_cookie = ch_.track(r);
            const status st =
                tl->ops().get(tl, conn, r->dst, r->dst_cnt, len, info.addr, key, r->rv_cookie);
            if (st == status::in_progress) {
                r->rv_reading = true;  // op_done finishes it (or the peer's failure)
                return;
            }
            ch_.untrack(r->rv_cookie);
            if (st != status::not_supported) {
                finish_read(r, st);
                return;
            }
            --reads_;
        }
    }
    ++pushes_;
    const rndv_cts_hdr c{info.sreq, r->rv_id};
    ch_.send_control(reply, am_id::rndv_cts, &c, sizeof(c));
}

const rndv_choice &rndv_module::choice(unsigned tl)
{
    rndv_choice &c = choice_[tl];
    if (!chosen_[tl]) {
        chosen_[tl] = true;
        if (get_min_ != base::config_size_auto) {
            c = {get_min_, get_min_, false};
        } else {
            // A piece is what one rndv_data message carries.
            const transport::attributes &a = ch_.tl(tl)->attr();
            const std::size_t piece =
                a.max_bcopy > sizeof(rndv_data_hdr) + sizeof(credit_prefix)
                    ? a.max_bcopy - sizeof(rndv_data_hdr) - sizeof(credit_prefix)
                    : 1;
            c = {rndv_get_min(a, piece, false), rndv_get_min(a, piece, true), true};
        }
        auto text = [](std::size_t n) {
            return n == SIZE_MAX ? std::string("never") : std::to_string(n) + " bytes";
        };
        WEFT_LOG(proto, debug,
                 "%s: rendezvous receives read with get from %s (%s while the sender is "
                 "busy)%s",
                 ch_.tl_name(tl), text(c.get_min).c_str(), text(c.get_min_busy).c_str(),
                 c.automatic ? "" : " (WEFT_RNDV_GET_MIN)");
    }
    return c;
}

bool rndv_read_pays(const rndv_choice &c, transport::peer_activity sender, std::size_t len) noexcept
{
    if (len >= c.get_min) {
        return true;
    }
    // Below it, a push; but a push needs the sender's CPU. An idle sender
    // would make us wait (whatever the threshold); a busy one pushes at half
    // speed (WEFT_RNDV_GET_MIN set: get_min_busy is get_min).
    switch (sender) {
        case transport::peer_activity::idle:
            return true;
        case transport::peer_activity::busy:
            return len >= c.get_min_busy;
        case transport::peer_activity::unknown:
        case transport::peer_activity::running:
            break;
    }
    return false;
}

bool rndv_module::read_pays(unsigned tl, transport::conn_id conn, std::size_t len)
{
    const rndv_choice &c = choice(tl);
    // The sender's activity is asked only when the size alone says push.
    return len >= c.get_min || rndv_read_pays(c, ch_.tl(tl)->activity(conn), len);
}

void rndv_module::read_done(tracked_op *op, status st)
{
    auto *r = static_cast<rndv_recv *>(op);
    if (!r->rv_reading) [[unlikely]] {
        return;
    }
    r->rv_reading = false;
    r->owner->finish_read(r, st);
}

void rndv_module::finish_read(rndv_recv *r, status st)
{
    recvs_.remove(r->rv_id);
    r->rv_id = 0;
    peer_state *reply = ch_.reply_peer(r->rv_tl, r->rv_src);
    if (st == status::ok) {
        r->rv_received = r->rv_total;
        if (reply != nullptr && !reply->failed) {
            const rndv_fin_hdr f{r->rv_sreq, fin_done, 0};
            ch_.send_control(reply, am_id::rndv_fin, &f, sizeof(f));
        }
        r->rv_done(r, 0, r->rv_total);
        return;
    }
    // The read failed but the connection may still work (a bad key, say): tell the
    // sender, whose send would otherwise wait for a fin forever.
    if (reply != nullptr && !reply->failed && st != status::unreachable) {
        const rndv_fin_hdr f{r->rv_sreq, fin_failed, 0};
        ch_.send_control(reply, am_id::rndv_fin, &f, sizeof(f));
    }
    WEFT_LOG(proto, debug, "rendezvous read of %zu bytes failed: %s", r->rv_total,
             base::status_string(st));
    r->rv_done(r, err_of(st), 0);
}

void rndv_module::fail_recv(rndv_recv *r, int err)
{
    recvs_.remove(r->rv_id);
    r->rv_id = 0;
    if (r->rv_reading) {
        ch_.untrack(r->rv_cookie);
        r->rv_reading = false;
    }
    r->rv_done(r, err, 0);
}

void rndv_module::on_data(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rndv_module *>(m);
    const auto h = load<rndv_data_hdr>(data);
    const std::size_t n = len - sizeof(h);
    rndv_recv *r = self->recvs_.find(h.rreq);
    if (r == nullptr || r->rv_reading || r->rv_tl != rx.tl || r->rv_src != rx.src ||
        h.offset != r->rv_received || n > r->rv_total - r->rv_received) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "rendezvous data out of sequence or for an unknown receive");
        return;
    }
    copy_to_iov(r->dst, r->dst_cnt, h.offset, data + sizeof(h), n);
    r->rv_received += n;
    if (r->rv_received == r->rv_total) {
        self->recvs_.remove(r->rv_id);
        r->rv_id = 0;
        r->rv_done(r, 0, r->rv_total);
    }
}

void rndv_module::discard(const rndv_info &info)
{
    // Nothing moves: tell the sender its buffer is free.
    if (peer_state *p = ch_.reply_peer(info.tl, info.src); p != nullptr && !p->failed) {
        const rndv_fin_hdr f{info.sreq, fin_discarded, 0};
        ch_.send_control(p, am_id::rndv_fin, &f, sizeof(f));
    }
}

void rndv_module::refuse(const rndv_info &info)
{
    if (peer_state *p = ch_.reply_peer(info.tl, info.src); p != nullptr && !p->failed) {
        const rndv_fin_hdr f{info.sreq, fin_refused, 0};
        ch_.send_control(p, am_id::rndv_fin, &f, sizeof(f));
    }
}

void rndv_module::source_failed(void *m, unsigned tl, transport::src_id src)
{
    auto *self = static_cast<rndv_module *>(m);
    // Receives waiting for data from the dead sender.
    std::vector<rndv_recv *> starved;
    self->recvs_.for_each([&](std::uint64_t, rndv_recv *r) {
        if (r->rv_tl == tl && r->rv_src == src) {
            starved.push_back(r);
        }
    });
    for (rndv_recv *r : starved) {
        self->fail_recv(r, WEFT_EHOSTUNREACH);
    }
}

}  // namespace weft::proto
