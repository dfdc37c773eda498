// One-sided put and get, native or over active messages (rma.hpp).

#include "proto/rma.hpp"

#include <algorithm>
#include <cstring>

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
           : st == status::invalid   ? WEFT_EINVAL
                                     : WEFT_EIO;
}

}  // namespace

status unpack_key(channel &ch, std::uint64_t index, const void *data, std::size_t len,
                  remote_key &out)
{
    key_view v;
    if (parse_key(data, len, v) != status::ok) {
        return status::bad_message;
    }
    int rc = 0;
    peer_state *p = ch.peer(index, rc);
    if (p == nullptr) {
        return base::from_c(rc);
    }
    out = {};
    out.peer = index;
    out.base = v.base;
    out.len = v.len;
    out.access = v.access;
    out.am_key = v.am_key;
    const std::uint8_t *part = nullptr;
    std::size_t part_len = 0;
    // The part of the transport this peer is reached by, if the registering
    // domain had it and this transport can unpack it: native operations then.
    if (v.find(ch.component_of(p)->wire_id, part, part_len) &&
        p->tl->unpack_rkey(part, part_len, out.tl_key) == status::ok) {
        out.native = true;
        out.tl = p->tl_index;
    }
    return status::ok;
}

void *map_key(channel &ch, const remote_key &key, std::uint64_t addr, std::size_t len)
{
    int rc = 0;
    peer_state *p = ch.peer(key.peer, rc);
    if (p == nullptr || !key.native || key.tl != p->tl_index) {
        return nullptr;
    }
    return p->tl->map_rkey(p->conn, key.tl_key, addr, len);
}

void rma_report(const completion_sink &sink, void *context, std::uint64_t flags, std::size_t len,
                std::uint64_t peer, int err)
{
    const completion c{context, flags, len, nullptr, 0, 0, peer};
    if (err == 0) [[likely]] {
        sink.success(c, true);
    } else {
        sink.failure(c, {err, 0, 0});
    }
}

const request_ops rma_module::op_ops{
    .push = &rma_module::push_op,
    .sent = [](channel &, send_request *) {},  // the op waits for its acks or replies
    .fail =
        [](channel &, send_request *r, int err) {
            static_cast<rma_op *>(r)->module->finish(static_cast<rma_op *>(r), err);
        },
    .drop =
        [](channel &, send_request *r) {
            auto *op = static_cast<rma_op *>(r);
            if (op->copy.data != nullptr) {
                op->module->copies_.put(op->copy);
            }
            op->module->ops_.remove(op->id);
            op->module->op_pool_.put(op);
        },
};

const request_ops rma_module::event_ops{
    .push = &rma_module::push_event,
    .sent =
        [](channel &, send_request *r) {
            auto *e = static_cast<rma_event_req *>(r);
            e->module->event_pool_.put(e);
        },
    .fail =
        [](channel &, send_request *r, int) {
            auto *e = static_cast<rma_event_req *>(r);
            e->module->event_pool_.put(e);  // the peer failed: its operations fail too
        },
    .drop =
        [](channel &, send_request *r) {
            auto *e = static_cast<rma_event_req *>(r);
            e->module->event_pool_.put(e);
        },
};

const request_ops rma_module::reply_ops{
    .push = &rma_module::push_reply,
    .sent =
        [](channel &, send_request *r) {
            auto *rp = static_cast<rma_reply *>(r);
            rp->module->reply_pool_.put(rp);
        },
    .fail =
        [](channel &, send_request *r, int) {
            static_cast<rma_reply *>(r)->module->reply_pool_.put(static_cast<rma_reply *>(r));
        },
    .drop =
        [](channel &, send_request *r) {
            static_cast<rma_reply *>(r)->module->reply_pool_.put(static_cast<rma_reply *>(r));
        },
};

rma_module::rma_module(channel &ch, const region_table &regions) : ch_(ch), regions_(regions)
{
    ch_.register_am(am_id::put, {&on_put, this, "put", nullptr, sizeof(rma_put_hdr), true});
    ch_.register_am(am_id::put_ack,
                    {&on_ack, this, "put_ack", nullptr, sizeof(rma_ack_hdr), false});
    ch_.register_am(am_id::get, {&on_get, this, "get", nullptr, sizeof(rma_get_hdr), true});
    ch_.register_am(am_id::get_reply,
                    {&on_reply, this, "get_reply", nullptr, sizeof(rma_reply_hdr), false});
    ch_.register_am(am_id::rma_event,
                    {&on_event, this, "rma_event", nullptr, sizeof(rma_event_hdr), true});
    ch_.register_imm({&on_imm, this, "rma_event_imm"});
    ch_.add_failure_hook({&peer_failed, &source_failed, this});
}

rma_module::~rma_module()
{
    // Queued ones were dropped by the channel's shutdown; these wait for the
    // peer (or their transport): no completions any more.
    std::vector<rma_op *> left;
    ops_.for_each([&](std::uint64_t, rma_op *op) { left.push_back(op); });
    for (rma_op *op : left) {
        if (op->native) {
            ch_.untrack(op->cookie);
        }
        if (op->copy.data != nullptr) {
            copies_.put(op->copy);
        }
        ops_.remove(op->id);
        op_pool_.put(op);
    }
}

int rma_module::put(const iovec *iov, std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                    const remote_key &key, rma_completion c, rma_path path)
{
    return start(false, iov, iovcnt, len, raddr, key, c, {.path = path});
}

int rma_module::get(const iovec *iov, std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                    const remote_key &key, rma_completion c, rma_path path)
{
    return start(true, iov, iovcnt, len, raddr, key, c, {.path = path});
}

int rma_module::start(bool is_get, const iovec *iov, std::size_t iovcnt, std::size_t len,
                      std::uint64_t raddr, const remote_key &key, rma_completion c,
                      const rma_options &o)
{
    const rma_path path = o.path;
    if (iovcnt > max_iov || (iov == nullptr && iovcnt != 0)) {
        return -WEFT_EINVAL;
    }
    std::size_t room = 0;
    for (std::size_t i = 0; i < iovcnt; ++i) {
        room += iov[i].iov_len;
    }
    if (room < len || len > ch_.max_msg_size()) {
        return -WEFT_EINVAL;
    }
    int rc = 0;
    peer_state *p = ch_.peer(key.peer, rc);
    if (p == nullptr) {
        return rc;
    }
    if (!key.covers(raddr, len,
                    is_get ? transport::access::remote_read : transport::access::remote_write)) {
        // Refused here, before anything is sent: the target is never touched.
        if (c.fn != nullptr) {
            c.fn(c.ctx, WEFT_EACCES);
        } else {
            rma_report(is_get ? ch_.rma_read : ch_.rma_write, c.ctx,
                       WEFT_RMA | (is_get ? WEFT_READ : WEFT_WRITE), len, key.peer, WEFT_EACCES);
        }
        return 0;
    }
    rma_op *op = op_pool_.get();
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->copy = {};
    if (o.copy && !is_get) {
        // Inject: the caller's buffer is free on return, so the data lives here.
        if (len > max_copy || (op->copy = copies_.get(len)).data == nullptr) {
            op_pool_.put(op);
            return len > max_copy ? -WEFT_EINVAL : -WEFT_ENOMEM;
        }
        std::size_t at = 0;
        for (std::size_t i = 0; i < iovcnt && at < len; ++i) {
            const std::size_t n = std::min(iov[i].iov_len, len - at);
            std::memcpy(static_cast<std::uint8_t *>(op->copy.data) + at, iov[i].iov_base, n);
            at += n;
        }
    }
    op->next = nullptr;
    op->ops = &op_ops;
    op->peer = p;
    op->reserved = 0;
    if (op->copy.data != nullptr) {
        op->iov[0] = {op->copy.data, len};
        op->iovcnt = 1;
    } else {
        op->iovcnt = static_cast<std::uint32_t>(iovcnt);
        std::copy_n(iov, iovcnt, op->iov.begin());
    }
    op->is_get = is_get;
    op->native = false;
    op->pushed = false;
    op->err = 0;
    op->len = len;
    op->sent = 0;
    op->done = 0;
    op->raddr = raddr;
    op->am_key = key.am_key;
    op->completion = c;
    op->cq_entry = o.cq_entry;
    op->module = this;
    op->id = ops_.add(op);
    // CQ data, or a region whose owner counts operations: an event message
    // after the operation, on the same ordered path (rma_event_hdr).
    const std::uint32_t event = ((key.access & key_flag_event) != 0 ? rma_event_count : 0) |
                                (o.cq_data && !is_get ? rma_event_cq_data : 0);
    transport::iface *tl = p->tl;
    auto native = is_get ? tl->ops().get : tl->ops().put;
    if (path == rma_path::best && key.native && key.tl == p->tl_index && native != nullptr &&
        len <= (is_get ? tl->attr().max_get : tl->attr().max_put) && p->pending_head == nullptr) {
        op->native = true;
        op->on_done = &native_done;
        op->cookie = ch_.track(op);
        status st = status::busy;
        bool carried = false;  // the event rides on the put itself (an immediate)
        if (event != 0 && !is_get &&
            ((event & rma_event_cq_data) == 0 || o.data <= imm_event_data_max)) [[unlikely]] {
            const std::uint32_t imm =
                ((event & rma_event_count) != 0 ? imm_event_count : 0) |
                ((event & rma_event_cq_data) != 0 ? imm_event_cq_data | std::uint32_t(o.data) : 0);
            st =
                ch_.put_imm(p, op->iov.data(), op->iovcnt, len, raddr, key.tl_key, imm, op->cookie);
            carried = st == status::in_progress || st == status::ok;
        }
        if (st == status::busy) {
            st =
                native(tl, p->conn, op->iov.data(), op->iovcnt, len, raddr, key.tl_key, op->cookie);
        }
        if (st == status::in_progress) {
            // The transport keeps the order of its operations and messages to a
            // peer (RC queue pair): the event arrives after the data.
            return event == 0 || carried
                       ? 0
                       : notify(p, {o.data, len, event | (is_get ? rma_event_read : 0), 0});
        }
        ch_.untrack(op->cookie);
        op->native = false;
        if (st == status::ok) {
            const int nrc =
                event == 0 || carried
                    ? 0
                    : notify(p, {o.data, len, event | (is_get ? rma_event_read : 0), 0});
            finish(op, 0);
            return nrc;
        }
        if (st != status::not_supported && st != status::again) {
            finish(op, err_of(st));
            return 0;
        }
        // The transport declined (or has no room now): active messages.
    }
    if (const int room_rc = ch_.queue_room(p); room_rc != 0) {
        if (op->copy.data != nullptr) {
            copies_.put(op->copy);
        }
        ops_.remove(op->id);
        op_pool_.put(op);
        return room_rc;
    }
    ch_.enqueue(op, queue_class::ordered);
    ch_.push(p);
    return event == 0 ? 0 : notify(p, {o.data, len, event | (is_get ? rma_event_read : 0), 0});
}

int rma_module::notify(peer_state *p, const rma_event_hdr &h)
{
    if (p->pending_head == nullptr && !p->failed) {
        const status st = ch_.am_short(p, am_id::rma_event, true, &h, sizeof(h), nullptr, 0);
        if (st == status::ok) {
            return 0;
        }
        if (st != status::again && st != status::busy) {
            return 0;  // the peer fails: its operations report it
        }
    }
    rma_event_req *e = event_pool_.get();
    if (e == nullptr) {
        return -WEFT_ENOMEM;
    }
    e->next = nullptr;
    e->ops = &event_ops;
    e->peer = p;
    e->reserved = 0;
    e->h = h;
    e->module = this;
    ch_.enqueue(e, queue_class::ordered);  // behind the operation it follows
    ch_.push(p);
    return 0;
}

status rma_module::push_event(channel &ch, send_request *r)
{
    auto *e = static_cast<rma_event_req *>(r);
    return ch.am_short(e->peer, am_id::rma_event, true, &e->h, sizeof(e->h), nullptr, 0);
}

void rma_module::on_event(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    (void)len;
    static_cast<rma_module *>(m)->deliver(rx, load<rma_event_hdr>(data));
}

void rma_module::on_imm(void *m, rx_context &rx, std::uint32_t imm, std::size_t len)
{
    const std::uint32_t flags = ((imm & imm_event_count) != 0 ? rma_event_count : 0) |
                                ((imm & imm_event_cq_data) != 0 ? rma_event_cq_data : 0);
    static_cast<rma_module *>(m)->deliver(rx, {imm & imm_event_data_max, len, flags, 0});
}

void rma_module::deliver(const rx_context &rx, const rma_event_hdr &h)
{
    channel &ch = ch_;
    if ((h.flags & rma_event_count) != 0) {
        counter *c = (h.flags & rma_event_read) != 0 ? ch.remote_read : ch.remote_write;
        if (c != nullptr) {
            c->add(1);
        }
    }
    if ((h.flags & rma_event_cq_data) != 0 && (h.flags & rma_event_read) == 0) {
        const std::uint64_t src = rx.source != nullptr && rx.source->av != unknown_source
                                      ? rx.source->av
                                      : WEFT_ADDR_NOTAVAIL;
        const completion c{nullptr,
                           WEFT_RMA | WEFT_REMOTE_WRITE | WEFT_REMOTE_CQ_DATA,
                           static_cast<std::size_t>(h.len),
                           nullptr,
                           h.data,
                           0,
                           src};
        // Not counted by the receive counter: remote counters count these.
        if (ch.rx.cq != nullptr) {
            ch.rx.write(ch.rx.cq, c);
        }
    }
}

void rma_module::native_done(tracked_op *t, status st)
{
    auto *op = static_cast<rma_op *>(t);
    op->native = false;
    op->module->finish(op, st == status::ok ? 0 : err_of(st));
}

void rma_module::finish(rma_op *op, int err)
{
    ops_.remove(op->id);
    const rma_completion c = op->completion;
    const bool is_get = op->is_get;
    const bool entry = op->cq_entry;
    const std::size_t len = op->len;
    const std::uint64_t peer = op->peer->index;
    if (op->copy.data != nullptr) {
        copies_.put(op->copy);
    }
    op_pool_.put(op);
    if (c.fn != nullptr) {
        c.fn(c.ctx, err);
        return;
    }
    const completion_sink &sink = is_get ? ch_.rma_read : ch_.rma_write;
    const completion cc{c.ctx, WEFT_RMA | (is_get ? WEFT_READ : WEFT_WRITE), len, nullptr, 0, 0,
                        peer};
    if (err == 0) [[likely]] {
        sink.success(cc, entry);
    } else {
        sink.failure(cc, {err, 0, 0});
    }
}

status rma_module::push_op(channel &ch, send_request *r)
{
    auto *op = static_cast<rma_op *>(r);
    peer_state *p = op->peer;
    if (op->is_get) {
        const rma_get_hdr h{op->id, op->am_key, op->raddr, op->len};
        const status st = ch.am_short(p, am_id::get, true, &h, sizeof(h), nullptr, 0);
        op->pushed = st == status::ok;
        return st;
    }
    // Every piece names its own target address; a zero-byte put is one piece.
    do {
        const std::size_t chunk =
            std::min<std::size_t>(op->len - op->sent, p->max_bcopy - sizeof(rma_put_hdr));
        const rma_put_hdr h{op->id, op->am_key, op->raddr + op->sent};
        const status st = ch.am_bcopy(p, am_id::put, true, &h, sizeof(h), op->iov.data(),
                                      op->iovcnt, op->sent, chunk);
        if (st != status::ok) {
            return st;
        }
        op->sent += chunk;
    } while (op->sent < op->len);
    op->pushed = true;
    return status::ok;
}

// ------------------------------------------------------------------ target side

void rma_module::on_put(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rma_module *>(m);
    const auto h = load<rma_put_hdr>(data);
    const std::size_t n = len - sizeof(h);
    rma_ack_hdr ack{h.op, 0, static_cast<std::uint32_t>(n)};
    if (self->regions_.check(h.am_key, h.raddr, n, transport::access::remote_write)) {
        std::memcpy(reinterpret_cast<void *>(h.raddr), data + sizeof(h), n);
    } else {
        ack.status = -WEFT_EACCES;  // the memory is untouched
    }
    if (peer_state *p = self->ch_.reply_peer(rx.tl, rx.src); p != nullptr && !p->failed) {
        self->ch_.send_control(p, am_id::put_ack, &ack, sizeof(ack));
    }
}

void rma_module::on_get(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rma_module *>(m);
    (void)len;
    const auto h = load<rma_get_hdr>(data);
    peer_state *p = self->ch_.reply_peer(rx.tl, rx.src);
    if (p == nullptr || p->failed) {
        return;
    }
    rma_reply *r = self->reply_pool_.get();
    if (r == nullptr) {
        WEFT_LOG_RATE(proto, error, 8, 1024, "no memory to answer a get");
        return;
    }
    r->next = nullptr;
    r->ops = &reply_ops;
    r->peer = p;
    r->reserved = 0;
    r->op = h.op;
    r->raddr = h.raddr;
    r->len = h.len;
    r->offset = 0;
    r->module = self;
    r->status =
        h.len <= self->ch_.max_msg_size() &&
                self->regions_.check(h.am_key, h.raddr, h.len, transport::access::remote_read)
            ? 0
            : -WEFT_EACCES;
    // Solicited: the initiator asked for it, and waits.
    self->ch_.enqueue(r, queue_class::solicited);
    self->ch_.push(p);
}

status rma_module::push_reply(channel &ch, send_request *req)
{
    auto *r = static_cast<rma_reply *>(req);
    peer_state *p = r->peer;
    if (r->status != 0) {
        const rma_reply_hdr h{r->op, 0, r->status, 0};
        return ch.am_short(p, am_id::get_reply, false, &h, sizeof(h), nullptr, 0);
    }
    const iovec src{reinterpret_cast<void *>(r->raddr), r->len};
    do {
        const std::size_t chunk =
            std::min<std::size_t>(r->len - r->offset, p->max_bcopy - sizeof(rma_reply_hdr));
        const rma_reply_hdr h{r->op, r->offset, 0, 0};
        const status st =
            ch.am_bcopy(p, am_id::get_reply, false, &h, sizeof(h), &src, 1, r->offset, chunk);
        if (st != status::ok) {
            return st;
        }
        r->offset += chunk;
    } while (r->offset < r->len);
    return status::ok;
}

// ------------------------------------------------------------------ initiator: replies

void rma_module::on_ack(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rma_module *>(m);
    const auto h = load<rma_ack_hdr>(data);
    rma_op *op = self->ops_.find(h.op);
    if (op == nullptr || op->is_get || op->native || len != sizeof(h) ||
        h.bytes > op->len - op->done || op->peer->tl_index != rx.tl) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "put acknowledgement for an unknown put");
        return;
    }
    if (h.status != 0 && op->err == 0) {
        op->err = h.status == -WEFT_EACCES ? WEFT_EACCES : WEFT_EIO;
    }
    op->done += h.bytes;
    if (op->done == op->len && op->pushed) {
        self->finish(op, op->err);
    }
}

void rma_module::on_reply(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<rma_module *>(m);
    const auto h = load<rma_reply_hdr>(data);
    const std::size_t n = len - sizeof(h);
    rma_op *op = self->ops_.find(h.op);
    if (op == nullptr || !op->is_get || op->native || op->peer->tl_index != rx.tl ||
        h.offset != op->done || n > op->len - op->done) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "get reply for an unknown get, or out of sequence");
        return;
    }
    if (h.status != 0) {
        self->finish(op, h.status == -WEFT_EACCES ? WEFT_EACCES : WEFT_EIO);
        return;
    }
    copy_to_iov(op->iov.data(), op->iovcnt, h.offset, data + sizeof(h), n);
    op->done += n;
    if (op->done == op->len) {
        self->finish(op, 0);
    }
}

void rma_module::peer_failed(void *m, std::uint32_t index, int err)
{
    auto *self = static_cast<rma_module *>(m);
    (void)err;
    // Operations whose requests went: no answer will come. (Native ones end
    // through their transport, which reports every operation it had.)
    std::vector<rma_op *> waiting;
    self->ops_.for_each([&](std::uint64_t, rma_op *op) {
        if (op->peer->index == index && !op->native && op->pushed) {
            waiting.push_back(op);
        }
    });
    for (rma_op *op : waiting) {
        self->finish(op, WEFT_EHOSTUNREACH);
    }
}

void rma_module::source_failed(void *m, unsigned tl, transport::src_id src)
{
    (void)m;
    (void)tl;
    (void)src;  // nothing is reassembled from a sender: every piece stands alone
}

}  // namespace weft::proto
