// The tagged-message module (tag.hpp).

#include "proto/tag.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "base/copy.hpp"
#include "base/log.hpp"

namespace weft::proto {

namespace {

using base::copy_from_iov;
using base::copy_to_iov;

template <typename T>
[[gnu::always_inline]] inline T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof(v));  // the transport's buffer may not be aligned for T
    return v;
}

constexpr std::uint64_t recv_flags = WEFT_RECV | WEFT_TAGGED;
constexpr std::uint64_t send_flags = WEFT_SEND | WEFT_TAGGED;

[[gnu::always_inline]] inline std::uint64_t reported_src(std::uint32_t src)
{
    return src == unknown_source ? WEFT_ADDR_NOTAVAIL : src;
}

}  // namespace

const request_ops tag_module::eager_ops{
    .push = &tag_module::push_eager,
    .sent = &tag_module::eager_sent,
    .fail = &tag_module::send_failed,
    .drop = &tag_module::send_dropped,
};

tag_module::tag_module(channel &ch, const tag_params &p)
    : ch_(ch), params_(p), rndv_(ch, {&on_rts, this}, p.rndv_get_min), matcher_(p.match_hash_bits)
{
    ch_.register_am(am_id::eager,
                    {&on_eager, this, "eager", &dump_eager, sizeof(tag_eager_hdr), true});
    ch_.register_am(am_id::eager_data, {&on_eager_data, this, "eager_data", &dump_eager,
                                        sizeof(tag_eager_data_hdr), true});
    ch_.register_am(am_id::eager_first,
                    {&on_first, this, "eager_first", &dump_eager, sizeof(tag_first_hdr), true});
    ch_.register_am(am_id::eager_frag,
                    {&on_frag, this, "eager_frag", nullptr, sizeof(tag_frag_hdr), true});
    ch_.add_failure_hook({&peer_failed, &source_failed, this});
}

tag_module::~tag_module()
{
    rndv_.shutdown();  // its waiting sends are ours: release them while our pools exist
    // Half-received messages first, while every record is still alive: a
    // discarded one is only referenced from here; the others are in the
    // matcher or claimed and are freed below, once (issue 10, defect 1: the
    // fragment state was read after the matcher's records were freed).
    for (auto &v : frags_) {
        for (auto &f : v) {
            if (f.active && f.ureq != nullptr && f.ureq->discard) {
                free_unexpected(f.ureq);  // discarded: no longer in the matcher or claimed
            }
            f.active = false;
            f.ureq = nullptr;
            f.rreq = nullptr;
        }
    }
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
}

// ------------------------------------------------------------------ send side

void tag_module::complete_send(void *context, std::uint64_t op_flags, std::uint64_t tag)
{
    if ((op_flags & WEFT_COUNT) != 0) [[unlikely]] {
        ch_.tx.counted(context);
        return;
    }
    const bool wanted =
        (op_flags & WEFT_INJECT) == 0 && (!ch_.tx.selective || (op_flags & WEFT_COMPLETION) != 0);
    ch_.tx.success({context, send_flags, 0, nullptr, 0, tag, 0}, wanted);
}

status tag_module::send_now(peer_state *p, const send_args &a)
{
    // One active message: the common case. Header on the stack, payload gathered
    // by the transport straight from the user's buffer.
    if ((a.flags & WEFT_REMOTE_CQ_DATA) == 0) [[likely]] {
        const tag_eager_hdr h{a.tag};
        if (a.iovcnt == 1 && sizeof(h) + a.len <= p->max_short) [[likely]] {
            return ch_.am_short(p, am_id::eager, true, &h, sizeof(h), a.iov[0].iov_base, a.len);
        }
        return ch_.am_bcopy(p, am_id::eager, true, &h, sizeof(h), a.iov, a.iovcnt, 0, a.len);
    }
    const tag_eager_data_hdr h{a.tag, a.data};
    if (a.iovcnt == 1 && sizeof(h) + a.len <= p->max_short) {
        return ch_.am_short(p, am_id::eager_data, true, &h, sizeof(h), a.iov[0].iov_base, a.len);
    }
    return ch_.am_bcopy(p, am_id::eager_data, true, &h, sizeof(h), a.iov, a.iovcnt, 0, a.len);
}

int tag_module::send(const send_args &a)
{
    int rc = 0;
    peer_state *p = ch_.peer(a.dest, rc);
    if (p == nullptr) [[unlikely]] {
        return rc;
    }
    const std::size_t hdr =
        (a.flags & WEFT_REMOTE_CQ_DATA) != 0 ? sizeof(tag_eager_data_hdr) : sizeof(tag_eager_hdr);
    if (p->pending_head == nullptr && hdr + a.len <= p->max_bcopy && a.len <= params_.rndv_thresh)
        [[likely]] {
        const status st = send_now(p, a);
        if (st == status::ok) [[likely]] {
            complete_send(a.context, a.flags, a.tag);
            return 0;
        }
        if (st != status::again && st != status::busy) {
            if (st == status::unreachable) {
                ch_.fail_peer(p->index, WEFT_EHOSTUNREACH);
            }
            return base::to_c(st);
        }
    }
    if ((a.flags & WEFT_INJECT) != 0 && params_.inject_direct) [[unlikely]] {
        return inject_direct(a);
    }
    if (ch_.credit_eagain() && !channel::can_send(p)) {
        // The application asked to see back-pressure instead of queueing.
        (void)ch_.progress();
        if (!channel::can_send(p)) {
            return -WEFT_EAGAIN;
        }
    }
    if (a.len > params_.rndv_thresh && (a.flags & WEFT_INJECT) == 0) {
        return send_rndv(p, a);
    }
    // Queue mode, nothing queued ahead, and the credits cannot carry the whole
    // eager message now: send it as a rendezvous (an unmetered header; the data
    // waits here) instead of waiting for credits that unmatched messages may hold.
    if (!ch_.credit_eagain() && p->pending_head == nullptr &&
        !channel::credits_for(p, eager_cost(p, hdr, a.len))) {
        return send_rndv(p, a);
    }
    return queue_send(p, a);
}

// WEFT_OPT_INJECT_DIRECT, for a layer whose send is complete when the inject
// returns and whose receiver may then wait on it while this process blocks
// outside weft (MPI's progress rule; Open MPI's connect and disconnect wait in
// PMIx). A queued inject would leave only from this process's next progress,
// so it is not queued: the transport takes it whole now (one message; enable
// limits the inject size to that), or the caller gets -WEFT_EAGAIN and retries
// after its own progress. What holds it back is a connection being made, a
// full transport queue, no credit, or sends queued ahead (order).
int tag_module::inject_direct(const send_args &a)
{
    (void)ch_.progress();  // may hand over a connection, drain the queue, bring credits
    int rc = 0;
    peer_state *p = ch_.peer(a.dest, rc);
    if (p == nullptr) {
        return rc;
    }
    const std::size_t hdr =
        (a.flags & WEFT_REMOTE_CQ_DATA) != 0 ? sizeof(tag_eager_data_hdr) : sizeof(tag_eager_hdr);
    if (hdr + a.len > p->max_bcopy) {
        return -WEFT_EINVAL;  // beyond one_message_inject(): weft_ep_enable keeps it from here
    }
    if (p->pending_head != nullptr) {
        return -WEFT_EAGAIN;
    }
    const status st = send_now(p, a);
    if (st == status::ok) {
        complete_send(a.context, a.flags, a.tag);
        return 0;
    }
    if (st == status::again || st == status::busy) {
        return -WEFT_EAGAIN;
    }
    if (st == status::unreachable) {
        ch_.fail_peer(p->index, WEFT_EHOSTUNREACH);
    }
    return base::to_c(st);
}

std::size_t tag_module::one_message_inject() const noexcept
{
    std::size_t limit = SIZE_MAX;
    for (unsigned i = 0; i < ch_.tl_count(); ++i) {
        const std::size_t budget = ch_.tl(i)->attr().max_bcopy - sizeof(credit_prefix);
        limit = std::min(limit, budget - sizeof(tag_eager_data_hdr));
    }
    return limit;
}

std::uint32_t tag_module::eager_cost(const peer_state *p, std::size_t hdr, std::size_t len) noexcept
{
    if (hdr + len <= p->max_bcopy) {
        return 1;
    }
    return static_cast<std::uint32_t>(credit_cost(len, p->max_bcopy - sizeof(tag_first_hdr),
                                                  p->max_bcopy - sizeof(tag_frag_hdr)));
}

tag_send *tag_module::new_send(peer_state *p, const send_args &a, int &rc)
{
    if (const int room = ch_.queue_room(p); room != 0) {
        rc = room;
        return nullptr;
    }
    tag_send *r = send_pool_.get();
    if (r == nullptr) [[unlikely]] {
        rc = -WEFT_ENOMEM;
        return nullptr;
    }
    r->next = nullptr;
    r->ops = &eager_ops;
    r->peer = p;
    r->reserved = 0;
    r->total = a.len;
    r->match_len = 0;
    r->exposed = 0;
    r->id = 0;
    r->context = a.context;
    r->op_flags = a.flags;
    r->tag = a.tag;
    r->data = a.data;
    r->msg_id = 0;
    r->has_data = (a.flags & WEFT_REMOTE_CQ_DATA) != 0;
    r->started = false;
    r->sent = 0;
    r->owned = {};
    r->module = this;
    if ((a.flags & WEFT_INJECT) != 0) {
        // The caller may reuse its buffer on return: keep a copy (a rendezvous
        // then reads the library's copy). From the size-class pool: no malloc.
        r->owned = buffers_.get(a.len);
        if (r->owned.data == nullptr) [[unlikely]] {
            send_pool_.put(r);
            rc = -WEFT_ENOMEM;
            return nullptr;
        }
        copy_from_iov(r->owned.data, a.iov, a.iovcnt, 0, a.len);
        r->iov[0] = {r->owned.data, a.len};
        r->iovcnt = 1;
    } else {
        r->iovcnt = static_cast<std::uint32_t>(a.iovcnt);
        std::copy_n(a.iov, a.iovcnt, r->iov.begin());
    }
    return r;
}

int tag_module::queue_send(peer_state *p, const send_args &a)
{
    int rc = 0;
    tag_send *r = new_send(p, a, rc);
    if (r == nullptr) {
        return rc;
    }
    r->msg_id = p->next_msg_id++;
    ch_.reserve(
        r, eager_cost(p, r->has_data ? sizeof(tag_eager_data_hdr) : sizeof(tag_eager_hdr), a.len));
    ch_.enqueue(r, queue_class::ordered);
    ch_.push(p);
    return 0;
}

namespace {

void set_match(tag_send *r)
{
    const tag_match m{r->tag, r->data, r->has_data ? tag_flag_data : 0u, 0};
    std::memcpy(r->match, &m, sizeof(m));
    r->match_len = sizeof(m);
}

}  // namespace

int tag_module::send_rndv(peer_state *p, const send_args &a)
{
    int rc = 0;
    tag_send *r = new_send(p, a, rc);
    if (r == nullptr) {
        return rc;
    }
    set_match(r);
    r->done = &rndv_done;
    r->release = &rndv_release;
    rndv_.send(r);
    return 0;
}

status tag_module::push_eager(channel &ch, send_request *req)
{
    auto *r = static_cast<tag_send *>(req);
    tag_module *m = r->module;
    peer_state *p = r->peer;
    const std::size_t hdr = r->has_data ? sizeof(tag_eager_data_hdr) : sizeof(tag_eager_hdr);
    if (!r->started) {
        if (!ch.credit_eagain() && !channel::credits_for(p, eager_cost(p, hdr, r->total))) {
            // See send(): its credits may never come. Go as a rendezvous instead.
            set_match(r);
            r->done = &rndv_done;
            r->release = &rndv_release;
            m->rndv_.convert(r);
            return rndv_module::send_ops.push(ch, r);
        }
        if (hdr + r->total <= p->max_bcopy) {
            const send_args a{
                r->iov.data(), r->iovcnt, r->total, 0,
                r->tag,        r->data,   nullptr,  r->has_data ? WEFT_REMOTE_CQ_DATA : 0};
            const status st = m->send_now(p, a);
            if (st == status::ok) {
                r->started = true;
                r->sent = r->total;
                ch.unreserve(r, 1);
            }
            return st;
        }
        const tag_first_hdr h{r->tag, r->data, r->total, r->msg_id,
                              r->has_data ? tag_flag_data : 0};
        const std::size_t chunk = std::min<std::size_t>(r->total, p->max_bcopy - sizeof(h));
        const status st = ch.am_bcopy(p, am_id::eager_first, true, &h, sizeof(h), r->iov.data(),
                                      r->iovcnt, 0, chunk);
        if (st != status::ok) {
            return st;
        }
        r->started = true;
        r->sent = chunk;
        ch.unreserve(r, 1);
    }
    while (r->sent < r->total) {
        const tag_frag_hdr h{r->sent, r->msg_id, 0};
        const std::size_t chunk =
            std::min<std::size_t>(r->total - r->sent, p->max_bcopy - sizeof(h));
        const status st = ch.am_bcopy(p, am_id::eager_frag, true, &h, sizeof(h), r->iov.data(),
                                      r->iovcnt, r->sent, chunk);
        if (st != status::ok) {
            return st;
        }
        r->sent += chunk;
        ch.unreserve(r, 1);
    }
    return status::ok;
}

void tag_module::eager_sent(channel &, send_request *req)
{
    auto *r = static_cast<tag_send *>(req);
    r->module->complete_send(r->context, r->op_flags, r->tag);
    r->module->free_send(r);
}

void tag_module::send_failed(channel &ch, send_request *req, int err)
{
    auto *r = static_cast<tag_send *>(req);
    ch.tx.fail({r->context, send_flags, 0, nullptr, r->data, r->tag,
                r->peer != nullptr ? r->peer->index : WEFT_ADDR_NOTAVAIL},
               {err, 0, 0}, r->op_flags);
    r->module->free_send(r);
}

void tag_module::send_dropped(channel &, send_request *req)
{
    auto *r = static_cast<tag_send *>(req);
    r->module->free_send(r);
}

void tag_module::rndv_done(rndv_send *rs, int err)
{
    auto *r = static_cast<tag_send *>(rs);
    tag_module *m = r->module;
    if (err == 0) {
        m->complete_send(r->context, r->op_flags, r->tag);
        m->free_send(r);
        return;
    }
    send_failed(m->ch_, r, err);
}

void tag_module::rndv_release(rndv_send *rs)
{
    auto *r = static_cast<tag_send *>(rs);
    r->module->free_send(r);
}

void tag_module::free_send(tag_send *r)
{
    ch_.unreserve(r, r->reserved);
    buffers_.put(r->owned);
    send_pool_.put(r);
}

std::size_t tag_module::message_cost(std::size_t len) const noexcept
{
    if (len > params_.rndv_thresh) {
        return 0;  // a rendezvous header spends no credit; the data is read in place
    }
    // The cost depends on the transport a peer is reached by: answer the most any
    // of this endpoint's transports would charge, so an application that sends
    // only when it holds this many credits is never refused.
    std::size_t worst = 1;
    for (unsigned i = 0; i < ch_.tl_count(); ++i) {
        const std::size_t budget = ch_.tl(i)->attr().max_bcopy - sizeof(credit_prefix);
        if (sizeof(tag_eager_data_hdr) + len > budget) {
            worst = std::max(worst, credit_cost(len, budget - sizeof(tag_first_hdr),
                                                budget - sizeof(tag_frag_hdr)));
        }
    }
    return worst;
}

// ------------------------------------------------------------------ receive side

int tag_module::dump_eager(const std::uint8_t *data, std::size_t len, char *buf, std::size_t size)
{
    return std::snprintf(buf, size, "tag 0x%llx, %zu bytes with the header",
                         static_cast<unsigned long long>(load<std::uint64_t>(data)), len);
}

void tag_module::hold(rx_context &rx, unexpected_record *u)
{
    if (rx.credit_peer != nullptr) {
        u->cr_peer = rx.credit_peer;
        ++u->cr_held;
        ch_.hold(rx);
    }
}

void tag_module::on_eager(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    static_cast<tag_module *>(m)->on_message(rx, load<std::uint64_t>(data), 0, 0,
                                             data + sizeof(tag_eager_hdr),
                                             len - sizeof(tag_eager_hdr));
}

void tag_module::on_eager_data(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    const auto h = load<tag_eager_data_hdr>(data);
    static_cast<tag_module *>(m)->on_message(rx, h.tag, h.data, WEFT_REMOTE_CQ_DATA,
                                             data + sizeof(h), len - sizeof(h));
}

void tag_module::on_message(rx_context &rx, std::uint64_t tag, std::uint64_t data,
                            std::uint64_t flags, const std::uint8_t *payload, std::size_t len)
{
    rx_source *s = rx.source;
    if (s == nullptr || frag_open(rx)) [[unlikely]] {
        ch_.drop(rx.tl, rx.src,
                 s == nullptr ? "sender id out of range" : "message inside a fragmented one");
        return;
    }
    if (is_variable(len)) [[unlikely]] {
        // A variable message that came eagerly (the sender's threshold is higher):
        // keep it here and notify.
        unexpected_record *u = new_unexpected(rx, tag, data, flags, len);
        if (u == nullptr) {
            ch_.drop(rx.tl, rx.src, "no memory for a variable message");
            return;
        }
        base::copy_bulk(u->buf(), payload, len);
        u->received = len;
        hold(rx, u);
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
            if ((r->op_flags & WEFT_COUNT) != 0) [[unlikely]] {
                ch_.rx.counted(r->context);
            } else {
                ch_.rx.success({r->context, recv_flags | flags, len, r->iov[0].iov_base, data, tag,
                                reported_src(s->av)},
                               !ch_.rx.selective || (r->op_flags & WEFT_COMPLETION) != 0);
            }
            put_recv(r);  // (no rendezvous state on this path)
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
    unexpected_record *u = new_unexpected(rx, tag, data, flags, len);
    if (u == nullptr) [[unlikely]] {
        ch_.drop(rx.tl, rx.src, "no memory for an unexpected message");
        return;
    }
    base::copy_bulk(u->buf(), payload, len);
    u->received = len;
    hold(rx, u);
    matcher_.add_unexpected(u, s->av, tag);
}

tag_frag *tag_module::frag_of(unsigned tl, transport::src_id src)
{
    auto &v = frags_[tl];
    if (src >= v.size()) {
        v.resize(src + 1);
    }
    return &v[src];
}

void tag_module::on_first(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<tag_module *>(m);
    const auto h = load<tag_first_hdr>(data);
    const std::uint8_t *payload = data + sizeof(h);
    len -= sizeof(h);
    rx_source *s = rx.source;
    if (s == nullptr || self->frag_open(rx)) [[unlikely]] {
        self->ch_.drop(
            rx.tl, rx.src,
            s == nullptr ? "sender id out of range" : "new message inside a fragmented one");
        return;
    }
    if (h.total_len > self->params_.max_msg_size || len > h.total_len || len == 0) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "bad message length in first fragment");
        return;
    }
    const std::uint64_t flags = (h.flags & tag_flag_data) != 0 ? WEFT_REMOTE_CQ_DATA : 0;
    if (len == h.total_len) {
        self->on_message(rx, h.tag, h.data, flags, payload, len);
        return;
    }
    tag_frag *f = self->frag_of(rx.tl, rx.src);
    f->active = true;
    ++self->nfrag_open_;
    f->msg_id = h.msg_id;
    f->total = h.total_len;
    f->received = len;
    f->rreq = nullptr;
    f->ureq = nullptr;
    if (self->is_variable(h.total_len)) {
        unexpected_record *u = self->new_unexpected(rx, h.tag, h.data, flags, h.total_len);
        if (u == nullptr) {
            self->ch_.drop(rx.tl, rx.src, "no memory for a variable message");
            return;  // active with no target: the fragments are swallowed
        }
        base::copy_bulk(u->buf(), payload, len);
        u->received = len;
        f->ureq = u;
        self->hold(rx, u);
        self->notify_variable(u);
        return;
    }
    posted_recv *pr = self->matcher_.match_posted(s->av, h.tag);
    if (pr != nullptr) {
        auto *r = static_cast<recv_request *>(pr);
        r->msg_tag = h.tag;
        r->msg_data = h.data;
        r->msg_flags = flags;
        r->msg_src = s->av;
        r->total = h.total_len;
        r->received = len;
        copy_to_iov(r->iov.data(), r->iovcnt, 0, payload, len);
        f->rreq = r;
        return;
    }
    unexpected_record *u = self->new_unexpected(rx, h.tag, h.data, flags, h.total_len);
    if (u == nullptr) {
        // Nowhere to put it: swallow the fragments (active with no target).
        self->ch_.drop(rx.tl, rx.src, "no memory for an unexpected message");
        return;
    }
    base::copy_bulk(u->buf(), payload, len);
    u->received = len;
    f->ureq = u;
    self->hold(rx, u);
    self->matcher_.add_unexpected(u, s->av, h.tag);
}

void tag_module::on_frag(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<tag_module *>(m);
    const auto h = load<tag_frag_hdr>(data);
    const std::uint8_t *payload = data + sizeof(h);
    len -= sizeof(h);
    tag_frag *f = self->frag_open(rx) ? &self->frags_[rx.tl][rx.src] : nullptr;
    if (f == nullptr || h.msg_id != f->msg_id || h.offset != f->received ||
        len > f->total - f->received) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "fragment out of sequence or out of bounds");
        return;
    }
    if (f->rreq != nullptr) {
        copy_to_iov(f->rreq->iov.data(), f->rreq->iovcnt, h.offset, payload, len);
        f->rreq->received += len;
    } else if (f->ureq != nullptr && !f->ureq->discard) {
        base::copy_bulk(f->ureq->buf() + h.offset, payload, len);
        self->hold(rx, f->ureq);
        f->ureq->received += len;
    }
    f->received += len;
    if (f->received < f->total) {
        return;
    }
    f->active = false;
    --self->nfrag_open_;
    recv_request *r = f->rreq;
    unexpected_record *u = f->ureq;
    f->rreq = nullptr;
    f->ureq = nullptr;
    if (r != nullptr) {
        self->complete_recv(r);
    } else if (u != nullptr) {
        u->received = f->total;
        if (u->discard) {
            self->free_unexpected(u);
        }
    }
}

void tag_module::on_rts(void *ctx, rx_context &rx, const rndv_info &info, const std::uint8_t *match,
                        std::size_t match_len)
{
    auto *self = static_cast<tag_module *>(ctx);
    rx_source *s = rx.source;
    if (s == nullptr || match_len != sizeof(tag_match) || self->frag_open(rx)) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src,
                       "malformed tagged rendezvous, or inside a fragmented message");
        return;
    }
    const auto mt = load<tag_match>(match);
    const std::uint64_t flags = (mt.flags & tag_flag_data) != 0 ? WEFT_REMOTE_CQ_DATA : 0;
    posted_recv *pr =
        self->is_variable(info.total) ? nullptr : self->matcher_.match_posted(s->av, mt.tag);
    if (pr != nullptr) {
        auto *r = static_cast<recv_request *>(pr);
        r->msg_tag = mt.tag;
        r->msg_data = mt.data;
        r->msg_flags = flags;
        r->msg_src = s->av;
        r->total = info.total;
        r->received = 0;
        self->rndv_start(r, info);
        return;
    }
    // Unexpected (or variable): the record is the whole cost; the data stays at the
    // sender. Bounded per sender: an honest one has at most its WEFT_TX_SIZE sends
    // outstanding; one more header is refused, and the sender's send fails (never
    // a silent drop: docs/variable-messages.md, "Limits").
    tag_frag &held = *self->frag_of(rx.tl, rx.src);
    unexpected_record *u = held.rts_held < self->params_.unexpected_rndv_max
                               ? self->new_unexpected(rx, mt.tag, mt.data, flags, 0)
                               : nullptr;
    if (u == nullptr) [[unlikely]] {
        WEFT_LOG_RATE(proto, error, 16, 4096,
                      "sender %u of transport %u: a rendezvous header refused (%u kept from it: "
                      "WEFT_UNEXPECTED_RNDV_MAX %zu, or no memory); its send fails",
                      rx.src, rx.tl, held.rts_held, self->params_.unexpected_rndv_max);
        self->rndv_.refuse(info);
        return;
    }
    ++held.rts_held;
    u->total = info.total;
    u->rndv = true;
    u->rv = info;
    if (self->is_variable(info.total)) {
        self->notify_variable(u);
        return;
    }
    self->matcher_.add_unexpected(u, s->av, mt.tag);
}

void tag_module::rndv_start(recv_request *r, const rndv_info &rv)
{
    if (ch_.failed(r->msg_src) != 0) {
        fail_recv(r, WEFT_EHOSTUNREACH, 0);
        return;
    }
    tag_rndv *d = rndv_pool_.get();
    if (d == nullptr) {
        fail_recv(r, WEFT_ENOMEM, 0);
        return;
    }
    d->req = r;
    d->module = this;
    d->dst = r->iov.data();
    d->dst_cnt = r->iovcnt;
    d->dst_capacity = r->capacity;
    d->rv_done = &rndv_recv_done;
    r->rdv = d;
    rndv_.start(d, rv);
}

void tag_module::rndv_recv_done(rndv_recv *rv, int err, std::size_t received)
{
    auto *d = static_cast<tag_rndv *>(rv);
    recv_request *r = d->req;
    tag_module *m = d->module;
    if (err != 0) {
        m->fail_recv(r, err, 0);
        return;
    }
    r->received = received;
    m->complete_recv(r);
}

void tag_module::notify_variable(unexpected_record *u)
{
    u->claimed = true;
    u->variable = true;
    u->var.op_context = nullptr;
    u->var.internal[0] = u;
    u->var.internal[1] = nullptr;
    u->var.internal[2] = nullptr;
    claimed_.emplace(&u->var, u);
    ch_.rx.success({&u->var, recv_flags | WEFT_VARIABLE_MSG | u->flags, u->total, nullptr, u->data,
                    u->tag, reported_src(u->src)},
                   true);
}

unexpected_record *tag_module::find_claimed(void *context)
{
    const auto it = claimed_.find(context);
    return it == claimed_.end() ? nullptr : it->second;
}

void tag_module::discard(unexpected_record *u, void *context)
{
    const completion c{context, recv_flags | u->flags, u->total, nullptr, u->data,
                       u->tag,  reported_src(u->src)};
    if (u->rndv) {
        rndv_.discard(u->rv);
    }
    ch_.rx.success(c, true);
    if (u->received == u->total || u->rndv) {
        free_unexpected(u);
    } else {
        u->discard = true;  // freed when its last fragment arrives
    }
}

// ------------------------------------------------------------------ posting receives

inline recv_request *tag_module::new_recv(const recv_args &a)
{
    recv_request *r = recv_pool_.get();
    if (r == nullptr) [[unlikely]] {
        return nullptr;
    }
    r->context = a.context;
    r->op_flags = a.flags;
    r->iovcnt = static_cast<std::uint32_t>(a.iovcnt);
    r->capacity = 0;
    for (std::size_t i = 0; i < a.iovcnt; ++i) {
        r->iov[i] = a.iov[i];
        r->capacity += a.iov[i].iov_len;
    }
    return r;
}

int tag_module::recv(const recv_args &a)
{
    std::uint32_t src = any_source;
    bool check_failed = false;  // the source is not a connected, live peer
    if (a.src != WEFT_ADDR_UNSPEC) {
        if (a.src >= unknown_source) [[unlikely]] {
            return -WEFT_EINVAL;
        }
        src = static_cast<std::uint32_t>(a.src);
        // A connected peer that has not failed: the common case, one lookup.
        // Else first contact (connect, so its transport watches it: a directed
        // receive from a peer that dies must fail, not hang), or a failed peer.
        int rc = 0;
        if (ch_.peer(src, rc) == nullptr) [[unlikely]] {
            const int failed = ch_.failed(src);
            if (failed == WEFT_ENOENT) {
                return -WEFT_ENOENT;  // removed from the address vector
            }
            if (failed == 0 && rc == -WEFT_EINVAL) {
                return rc;  // not in the address vector: nothing can ever match
            }
            check_failed = true;
        }
        maybe_resolve_unknown();
    }
    recv_request *r = new_recv(a);
    if (r == nullptr) [[unlikely]] {
        return -WEFT_ENOMEM;
    }
    unexpected_msg *m = matcher_.post(r, src, a.tag, a.ignore);
    if (m == nullptr) [[likely]] {
        if (check_failed) [[unlikely]] {
            if (const int err = ch_.failed(src); err != 0 && matcher_.remove_posted(r)) {
                // Nothing from a failed peer will ever match this receive.
                r->msg_src = src;
                r->msg_tag = a.tag;
                r->msg_flags = 0;
                r->msg_data = 0;
                r->received = 0;
                r->total = 0;
                fail_recv(r, err, 0);
            }
        }
        return 0;
    }
    deliver_unexpected(r, static_cast<unexpected_record *>(m));
    return 0;
}

void tag_module::deliver_unexpected(recv_request *r, unexpected_record *u)
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
    copy_to_iov(r->iov.data(), r->iovcnt, 0, u->buf(), u->received);
    if (u->received == u->total) {
        free_unexpected(u);
        complete_recv(r);
        return;
    }
    // Still arriving: the rest of the fragments go straight to the receive.
    for (auto &v : frags_) {
        for (auto &f : v) {
            if (f.active && f.ureq == u) {
                f.ureq = nullptr;
                f.rreq = r;
            }
        }
    }
    free_unexpected(u);
}

void tag_module::complete_recv(recv_request *r)
{
    if (r->total > r->capacity) [[unlikely]] {
        fail_recv(r, WEFT_ETRUNC, r->total - r->capacity);
        return;
    }
    if ((r->op_flags & WEFT_COUNT) != 0) [[unlikely]] {
        ch_.rx.counted(r->context);
        free_recv(r);
        return;
    }
    const bool wanted = !ch_.rx.selective || (r->op_flags & WEFT_COMPLETION) != 0;
    ch_.rx.success({r->context, recv_flags | r->msg_flags, r->total, r->iov[0].iov_base,
                    r->msg_data, r->msg_tag, reported_src(r->msg_src)},
                   wanted);
    free_recv(r);
}

void tag_module::fail_recv(recv_request *r, int err, std::size_t olen)
{
    const std::size_t len = err == WEFT_ETRUNC ? r->capacity : 0;
    ch_.rx.fail(
        {r->context, recv_flags | r->msg_flags, len, r->iovcnt > 0 ? r->iov[0].iov_base : nullptr,
         r->msg_data, r->msg_tag, reported_src(r->msg_src)},
        {err, 0, olen}, r->op_flags);
    free_recv(r);
}

void tag_module::free_recv(recv_request *r)
{
    if (r->rdv != nullptr) [[unlikely]] {
        rndv_pool_.put(r->rdv);
    }
    put_recv(r);
}

unexpected_record *tag_module::new_unexpected(const rx_context &rx, std::uint64_t tag,
                                              std::uint64_t data, std::uint64_t flags,
                                              std::size_t total)
{
    unexpected_record *u = unexp_pool_.get();
    if (u == nullptr) [[unlikely]] {
        return nullptr;
    }
    u->src = rx.source->av;
    u->from_src = rx.src;
    u->from_tl = static_cast<std::uint8_t>(rx.tl);
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
    u->big = {};
    if (total > unexpected_inline) [[unlikely]] {
        u->big = buffers_.get(total);
        if (u->big.data == nullptr) {
            unexp_pool_.put(u);
            WEFT_LOG_RATE(proto, error, 8, 1024, "no memory for an unexpected message of %zu bytes",
                          total);
            return nullptr;
        }
    }
    return u;
}

void tag_module::resolve_unknown()
{
    // Read first: an insertion during the walk makes the next receive walk again.
    unknown_walked_at_ = ch_.av_insertions();
    ++unknown_walks_;
    // In arrival order, so each rekeyed message goes before the younger ones
    // of the same sender (matcher::rekey_unknown keeps the bucket in order).
    std::size_t filed = 0;
    matcher_.for_each_unexpected([&](unexpected_msg *m) {
        auto *u = static_cast<unexpected_record *>(m);
        if (u->src != unknown_source || u->from_tl == no_sender_tl) {
            return;
        }
        // source() resolves again a sender that was not in the address vector.
        const rx_source *s = ch_.source(u->from_tl, u->from_src);
        if (s != nullptr && s->av != unknown_source) {
            matcher_.rekey_unknown(u, s->av);
            ++filed;
        }
    });
    WEFT_LOG(proto, debug,
             "%zu unexpected messages filed under senders inserted since they came; %zu still "
             "from unknown senders",
             filed, matcher_.unknown_count());
}

void tag_module::free_unexpected(unexpected_record *u)
{
    if (u->rndv) {
        tag_frag *f = frag_of(u->rv.tl, u->rv.src);
        f->rts_held -= f->rts_held != 0 ? 1 : 0;
    }
    if (u->cr_held != 0) {
        ch_.release(u->cr_peer, u->cr_held);  // its buffers are free: the credits go back
    }
    buffers_.put(u->big);
    unexp_pool_.put(u);
}

// ------------------------------------------------------------------ peek, claim, discard, cancel

int tag_module::recv_special(const recv_args &a)
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
        (void)ch_.progress();  // let arrived messages become visible to the peek
        if (src != any_source) {
            maybe_resolve_unknown();
        }
        u = static_cast<unexpected_record *>(matcher_.find_unexpected(src, a.tag, a.ignore));
        if (u == nullptr) {
            ch_.rx.failure({a.context, recv_flags, 0, nullptr, 0, a.tag, WEFT_ADDR_NOTAVAIL},
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
        ch_.rx.success(c, true);
        return 0;
    }
    if (peek) {
        ch_.rx.success(c, true);  // the message stays queued
        return 0;
    }
    recv_args ra = a;
    ra.context = context;
    ra.flags = a.flags & ~(WEFT_CLAIM | WEFT_PEEK);
    recv_request *r = new_recv(ra);
    if (r == nullptr) {
        return -WEFT_ENOMEM;
    }
    deliver_unexpected(r, u);
    return 0;
}

recv_request *tag_module::find_posted(void *context)
{
    // Amortised O(1) without a cost on the data path: an index of the posted
    // receives by context, rebuilt by one walk of the matcher when it does not
    // know the context and receives were posted since the last walk. Posting
    // and completing do not update it, so an entry may be stale: it is used
    // only if its request is still queued with this context (the pool's
    // memory stays mapped while the module lives).
    const auto usable = [&](const auto it) {
        return it != cancel_index_.end() && it->second->queued() && it->second->context == context;
    };
    if (const auto it = cancel_index_.find(context); usable(it)) {
        return it->second;
    }
    if (matcher_.posts_so_far() == cancel_index_posts_) {
        return nullptr;  // nothing posted since the walk that did not find it
    }
    cancel_index_.clear();
    cancel_index_posts_ = matcher_.posts_so_far();
    ++cancel_walks_;
    matcher_.remove_posted_if(
        [&](const posted_recv *p) {
            auto *r = const_cast<recv_request *>(static_cast<const recv_request *>(p));
            cancel_index_.try_emplace(r->context, r);
            return false;  // only looked at
        },
        [](posted_recv *) {});
    const auto it = cancel_index_.find(context);
    return usable(it) ? it->second : nullptr;
}

int tag_module::cancel(void *context)
{
    recv_request *found = find_posted(context);
    if (found == nullptr || !matcher_.remove_posted(found)) {
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

void tag_module::peer_failed(void *m, std::uint32_t index, int err)
{
    auto *self = static_cast<tag_module *>(m);
    // Unexpected messages from it that can never be delivered: rendezvous
    // headers whose data stays at a dead sender, or anything from an address
    // the application removed. Complete eager messages from a dead sender stay
    // receivable; records still being reassembled belong to their fragments
    // (source_failed ends those).
    const bool removed = err == WEFT_ENOENT;
    std::size_t dropped = 0;
    self->matcher_.for_each_unexpected([&](unexpected_msg *um) {
        auto *u = static_cast<unexpected_record *>(um);
        if (u->src != index || (!u->rndv && (!removed || u->received < u->total))) {
            return;
        }
        self->matcher_.remove_unexpected(u);
        if (u->rndv && removed) {
            self->rndv_.discard(u->rv);  // the sender's buffer is free
        }
        self->free_unexpected(u);
        ++dropped;
    });
    if (dropped != 0) {
        WEFT_LOG(proto, info, "dropped %zu unexpected messages from address %u (%s)", dropped,
                 index, removed ? "removed from the address vector" : "failed");
    }
    // Receives directed at the failed peer can never match any more.
    std::vector<recv_request *> dead;
    self->matcher_.remove_posted_if(
        [&](const posted_recv *p) { return p->src == index; },
        [&](posted_recv *p) { dead.push_back(static_cast<recv_request *>(p)); });
    for (auto *r : dead) {
        r->msg_src = index;
        r->msg_tag = r->tag;
        r->msg_flags = 0;
        r->msg_data = 0;
        r->received = 0;
        r->total = 0;
        self->fail_recv(r, err, 0);
    }
}

void tag_module::source_failed(void *m, unsigned tl, transport::src_id src)
{
    auto *self = static_cast<tag_module *>(m);
    if (self->matcher_.unknown_count() != 0) {
        // Its id may name another sender later: never file these under that one.
        self->matcher_.for_each_unexpected([&](unexpected_msg *x) {
            auto *u = static_cast<unexpected_record *>(x);
            if (u->src == unknown_source && u->from_tl == tl && u->from_src == src) {
                u->from_tl = no_sender_tl;
            }
        });
    }
    auto &v = self->frags_[tl];
    if (src >= v.size() || !v[src].active) {
        return;
    }
    // The message being reassembled will never be finished.
    tag_frag &f = v[src];
    f.active = false;
    --self->nfrag_open_;
    recv_request *r = f.rreq;
    unexpected_record *u = f.ureq;
    f.rreq = nullptr;
    f.ureq = nullptr;
    if (r != nullptr) {
        self->fail_recv(r, WEFT_EHOSTUNREACH, 0);
    } else if (u != nullptr) {
        if (u->discard) {
            self->free_unexpected(u);
        } else if (u->claimed) {
            u->total = u->received;  // the claim delivers what came
        } else {
            self->matcher_.remove_unexpected(u);
            self->free_unexpected(u);
        }
    }
}

}  // namespace weft::proto
