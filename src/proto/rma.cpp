// One-sided put and get, native or over active messages (rma.hpp).

#include "proto/rma.hpp"

#include <algorithm>
#include <cstring>

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
            op->module->ops_.remove(op->id);
            op->module->op_pool_.put(op);
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
        ops_.remove(op->id);
        op_pool_.put(op);
    }
}

int rma_module::put(const iovec *iov, std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                    const remote_key &key, rma_completion c, rma_path path)
{
    return start(false, iov, iovcnt, len, raddr, key, c, path);
}

int rma_module::get(const iovec *iov, std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                    const remote_key &key, rma_completion c, rma_path path)
{
    return start(true, iov, iovcnt, len, raddr, key, c, path);
}

int rma_module::start(bool is_get, const iovec *iov, std::size_t iovcnt, std::size_t len,
                      std::uint64_t raddr, const remote_key &key, rma_completion c, rma_path path)
{
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
        c.fn(c.ctx, WEFT_EACCES);
        return 0;
    }
    rma_op *op = op_pool_.get();
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->next = nullptr;
    op->ops = &op_ops;
    op->peer = p;
    op->reserved = 0;
    op->iovcnt = static_cast<std::uint32_t>(iovcnt);
    std::copy_n(iov, iovcnt, op->iov.begin());
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
    op->module = this;
    op->id = ops_.add(op);
    transport::iface *tl = p->tl;
    auto native = is_get ? tl->ops().get : tl->ops().put;
    if (path == rma_path::best && key.native && key.tl == p->tl_index && native != nullptr &&
        len <= (is_get ? tl->attr().max_get : tl->attr().max_put) && p->pending_head == nullptr) {
        op->native = true;
        op->on_done = &native_done;
        op->cookie = ch_.track(op);
        const status st =
            native(tl, p->conn, op->iov.data(), op->iovcnt, len, raddr, key.tl_key, op->cookie);
        if (st == status::in_progress) {
            return 0;
        }
        ch_.untrack(op->cookie);
        op->native = false;
        if (st == status::ok) {
            finish(op, 0);
            return 0;
        }
        if (st != status::not_supported && st != status::again) {
            finish(op, err_of(st));
            return 0;
        }
        // The transport declined (or has no room now): active messages.
    }
    if (const int room_rc = ch_.queue_room(p); room_rc != 0) {
        ops_.remove(op->id);
        op_pool_.put(op);
        return room_rc;
    }
    ch_.enqueue(op, queue_class::ordered);
    ch_.push(p);
    return 0;
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
    op_pool_.put(op);
    c.fn(c.ctx, err);
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
