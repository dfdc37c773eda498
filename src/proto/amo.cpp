// Atomic operations, native or over active messages (amo.hpp).

#include "proto/amo.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <type_traits>

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

/// The new value of an element for one operation (not swap, cswap, read).
template <typename T>
T combine(amo_op op, T cur, T v) noexcept
{
    if (op == amo_op::add) {
        return static_cast<T>(cur + v);
    }
    if (op == amo_op::prod) {
        return static_cast<T>(cur * v);
    }
    if constexpr (std::is_arithmetic_v<T>) {  // not the complex types
        switch (op) {
            case amo_op::min:
                return v < cur ? v : cur;
            case amo_op::max:
                return v > cur ? v : cur;
            case amo_op::land:
                return static_cast<T>((cur != 0) && (v != 0));
            case amo_op::lor:
                return static_cast<T>((cur != 0) || (v != 0));
            case amo_op::lxor:
                return static_cast<T>((cur != 0) != (v != 0));
            default:
                break;
        }
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case amo_op::band:
                return static_cast<T>(cur & v);
            case amo_op::bor:
                return static_cast<T>(cur | v);
            case amo_op::bxor:
                return static_cast<T>(cur ^ v);
            default:
                break;
        }
    }
    return cur;
}

/// One element, atomically. Returns the old value.
template <typename T>
T apply_one(amo_op op, T *p, T v, T cmp) noexcept
{
    // The CPU's own read-modify-write where it has one (lock xadd, lock and,
    // ...), so these stay atomic with respect to the same operations done by
    // other processes directly (shm, self); a compare-and-swap loop otherwise.
    // Every path is an atomic on *p: atomic with respect to each other.
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case amo_op::add:
                return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
            case amo_op::band:
                return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
            case amo_op::bor:
                return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
            case amo_op::bxor:
                return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
            default:
                break;
        }
    }
    switch (op) {
        case amo_op::swap: {
            T old;
            __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
            return old;
        }
        case amo_op::cswap: {
            T expected = cmp;
            __atomic_compare_exchange(p, &expected, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return expected;  // the old value, whether it matched or not
        }
        case amo_op::read: {
            T old;
            __atomic_load(p, &old, __ATOMIC_SEQ_CST);
            return old;
        }
        default:
            break;
    }
    T cur;
    __atomic_load(p, &cur, __ATOMIC_RELAXED);
    for (;;) {
        T next = combine(op, cur, v);
        // On failure `cur` is reloaded with the value found.
        if (__atomic_compare_exchange(p, &cur, &next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            return cur;
        }
    }
}

template <typename T>
void apply_all(amo_op op, std::size_t count, void *target, const void *operand, const void *compare,
               void *result) noexcept
{
    auto *t = static_cast<T *>(target);
    for (std::size_t i = 0; i < count; ++i) {
        const T v = load<T>(static_cast<const std::uint8_t *>(operand) + i * sizeof(T));
        const T c = compare != nullptr
                        ? load<T>(static_cast<const std::uint8_t *>(compare) + i * sizeof(T))
                        : T{};
        const T old = apply_one<T>(op, t + i, v, c);
        if (result != nullptr) {
            std::memcpy(static_cast<std::uint8_t *>(result) + i * sizeof(T), &old, sizeof(T));
        }
    }
}

int err_of(status st)
{
    return st == status::unreachable ? WEFT_EHOSTUNREACH
           : st == status::access    ? WEFT_EACCES
           : st == status::invalid   ? WEFT_EINVAL
                                     : WEFT_EIO;
}

/// The transport's view of an operation it may do itself, if it is one.
bool transport_op(const amo_request &r, transport::atomic_op &out) noexcept
{
    if (r.count != 1 || (amo_size(r.type) != 4 && amo_size(r.type) != 8) ||
        r.type == amo_type::f32 || r.type == amo_type::f64 || r.type == amo_type::c32) {
        return false;
    }
    switch (r.op) {
        case amo_op::add:
            out = transport::atomic_op::add;
            return true;
        case amo_op::read:  // a fetching add of zero
            out = transport::atomic_op::add;
            return r.result != nullptr;
        case amo_op::band:
            out = transport::atomic_op::and_;
            return true;
        case amo_op::bor:
            out = transport::atomic_op::or_;
            return true;
        case amo_op::bxor:
            out = transport::atomic_op::xor_;
            return true;
        case amo_op::swap:
            out = transport::atomic_op::swap;
            return true;
        case amo_op::cswap:
            out = transport::atomic_op::cswap;
            return true;
        default:
            return false;
    }
}

}  // namespace

void amo_apply(amo_op op, amo_type t, std::size_t count, void *target, const void *operand,
               const void *compare, void *result) noexcept
{
    switch (t) {
        case amo_type::i8:
            return apply_all<std::int8_t>(op, count, target, operand, compare, result);
        case amo_type::u8:
            return apply_all<std::uint8_t>(op, count, target, operand, compare, result);
        case amo_type::i16:
            return apply_all<std::int16_t>(op, count, target, operand, compare, result);
        case amo_type::u16:
            return apply_all<std::uint16_t>(op, count, target, operand, compare, result);
        case amo_type::i32:
            return apply_all<std::int32_t>(op, count, target, operand, compare, result);
        case amo_type::u32:
            return apply_all<std::uint32_t>(op, count, target, operand, compare, result);
        case amo_type::i64:
            return apply_all<std::int64_t>(op, count, target, operand, compare, result);
        case amo_type::u64:
            return apply_all<std::uint64_t>(op, count, target, operand, compare, result);
        case amo_type::f32:
            return apply_all<float>(op, count, target, operand, compare, result);
        case amo_type::f64:
            return apply_all<double>(op, count, target, operand, compare, result);
        // 16-byte elements go through libatomic's lock-based operations: atomic
        // with respect to each other in the one process that runs every atomic
        // of a CPU-mode region (docs/rma.md, "One atomicity domain").
        case amo_type::f80:
            return apply_all<long double>(op, count, target, operand, compare, result);
        case amo_type::c32:
            return apply_all<std::complex<float>>(op, count, target, operand, compare, result);
        case amo_type::c64:
            return apply_all<std::complex<double>>(op, count, target, operand, compare, result);
    }
}

const request_ops amo_module::ops{
    .push = &amo_module::push,
    .sent = [](channel &, send_request *) {},  // waits for its reply
    .fail =
        [](channel &, send_request *r, int err) {
            auto *op = static_cast<amo_op_state *>(r);
            op->module->finish(op, err);
        },
    .drop =
        [](channel &, send_request *r) {
            auto *op = static_cast<amo_op_state *>(r);
            if (op->via_am) {
                --op->peer->amo_in_flight;
            }
            op->module->ops_.remove(op->id);
            op->module->pool_.put(op);
        },
};

amo_module::amo_module(channel &ch, const region_table &regions, rma_module &rma)
    : ch_(ch), regions_(regions), rma_(rma)
{
    ch_.register_am(am_id::amo, {&on_amo, this, "amo", nullptr, sizeof(amo_hdr), true});
    ch_.register_am(am_id::amo_reply,
                    {&on_reply, this, "amo_reply", nullptr, sizeof(amo_reply_hdr), false});
    ch_.add_failure_hook({&peer_failed, &source_failed, this});
}

amo_module::~amo_module()
{
    std::vector<amo_op_state *> left;
    ops_.for_each([&](std::uint64_t, amo_op_state *op) { left.push_back(op); });
    for (amo_op_state *op : left) {
        if (op->native) {
            ch_.untrack(op->cookie);
        }
        ops_.remove(op->id);
        pool_.put(op);
    }
}

int amo_module::start(const amo_request &r, const remote_key &key, rma_completion c, rma_path path)
{
    return start(r, key, c, rma_options{.path = path});
}

int amo_module::start(const amo_request &r, const remote_key &key, rma_completion c,
                      const rma_options &o)
{
    const rma_path path = o.path;
    const std::size_t size = amo_size(r.type);
    if (!amo_valid(r.op, r.type) || r.count == 0 || r.count > max_count(r.type) ||
        (r.operand == nullptr && r.op != amo_op::read) ||
        (r.op == amo_op::cswap && r.compare == nullptr) ||
        (r.op == amo_op::cswap && r.result == nullptr) || r.raddr % size != 0) {
        return -WEFT_EINVAL;
    }
    int rc = 0;
    peer_state *p = ch_.peer(key.peer, rc);
    if (p == nullptr) {
        return rc;
    }
    const bool fetching = r.result != nullptr;
    if (!key.covers(r.raddr, r.count * size, transport::access::remote_atomic)) {
        if (c.fn != nullptr) {
            c.fn(c.ctx, WEFT_EACCES);
        } else {
            rma_report(fetching ? ch_.rma_read : ch_.rma_write, c.ctx,
                       WEFT_ATOMIC | (fetching ? WEFT_READ : WEFT_WRITE), r.count * size, key.peer,
                       WEFT_EACCES);
        }
        return 0;
    }
    // One atomicity domain per region: all on CPUs, or all on the NIC.
    transport::atomic_op top{};
    transport::iface *tl = p->tl;
    const bool device = (key.access & key_flag_device_atomics) != 0;
    bool nic_can = false;
    if (key.native && key.tl == p->tl_index && tl->ops().atomic != nullptr &&
        transport_op(r, top)) {
        const transport::attributes &a = tl->attr();
        const std::uint32_t mask = size == 4 ? (fetching ? a.atomic32f : a.atomic32)
                                             : (fetching ? a.atomic64f : a.atomic64);
        nic_can = (mask & transport::atomic_bit(top)) != 0;
    }
    const bool cpu_tl = (tl->attr().caps & transport::cap::cpu_atomics) != 0;
    if (device && (!nic_can || cpu_tl)) {
        WEFT_LOG_RATE(proto, error, 8, 1024,
                      "atomic op %u on type %u: the region uses device atomics "
                      "(WEFT_MR_DEVICE_ATOMICS) and the NIC reaching this peer does not offer it",
                      static_cast<unsigned>(r.op), static_cast<unsigned>(r.type));
        return -WEFT_ENOSYS;
    }
    const bool go_native = path == rma_path::best && nic_can && device != cpu_tl;
    amo_op_state *op = pool_.get();
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->next = nullptr;
    op->ops = &ops;
    op->peer = p;
    op->reserved = 0;
    op->req = r;
    if (r.operand != nullptr) {
        std::memcpy(op->args, r.operand, r.count * size);
    } else {
        std::memset(op->args, 0, r.count * size);  // read: no operand
    }
    op->req.operand = op->args;
    op->fetching = fetching;
    if (r.op == amo_op::read && r.result == nullptr) {
        // MPI_NO_OP without a result (an accumulate that changes nothing): a
        // read whose value is dropped, still ordered and completed like the others.
        op->req.result = op->args;
    }
    if (r.op == amo_op::cswap) {
        std::memcpy(op->args + r.count * size, r.compare, r.count * size);
    }
    op->am_key = key.am_key;
    op->native = false;
    op->pushed = false;
    op->via_am = false;
    op->cq_entry = o.cq_entry;
    op->completion = c;
    op->module = this;
    op->id = ops_.add(op);
    const std::uint32_t event = (key.access & key_flag_event) != 0 ? rma_event_count : 0;
    const rma_event_hdr ev{0, r.count * size, event, 0};
    // Native only when nothing of this peer's is queued or in flight as an
    // active message: posting order is execution order.
    if (go_native && p->pending_head == nullptr && p->amo_in_flight == 0) {
        const bool fetch = fetching;
        {
            transport::atomic_args ta{};
            ta.op = top;
            ta.fetch = fetch;
            ta.width = static_cast<std::uint8_t>(size);
            std::uint64_t v = 0;
            std::uint64_t cmp = 0;
            if (r.op != amo_op::read) {
                std::memcpy(&v, r.operand, size);
            }
            if (r.compare != nullptr) {
                std::memcpy(&cmp, r.compare, size);
            }
            ta.operand = v;
            ta.compare = cmp;
            ta.result = fetch ? &op->native_result : nullptr;
            ta.raddr = r.raddr;
            ta.key = key.tl_key;
            op->native = true;
            op->on_done = &native_done;
            op->cookie = ch_.track(op);
            op->native_result = 0;
            const status st = tl->ops().atomic(tl, p->conn, ta, op->cookie);
            if (st == status::in_progress) {
                return event == 0 ? 0 : rma_.notify(p, ev);
            }
            ch_.untrack(op->cookie);
            if (st == status::ok) {
                const int nrc = event == 0 ? 0 : rma_.notify(p, ev);
                native_done(op, st);
                return nrc;
            }
            op->native = false;
            if (st != status::not_supported && st != status::again) {
                finish(op, err_of(st));
                return 0;
            }
            if (device) {  // the NIC declined: no CPU path for this region
                ops_.remove(op->id);
                pool_.put(op);
                return st == status::again ? -WEFT_EAGAIN : -WEFT_ENOSYS;
            }
        }
    }
    if (device && path == rma_path::best) {
        // Device mode with requests queued to the peer: wait for them (the NIC
        // path is the only one), the caller retries.
        ops_.remove(op->id);
        pool_.put(op);
        (void)ch_.progress();
        return -WEFT_EAGAIN;
    }
    if (const int room = ch_.queue_room(p); room != 0) {
        ops_.remove(op->id);
        pool_.put(op);
        return room;
    }
    op->via_am = true;
    ++p->amo_in_flight;
    ch_.enqueue(op, queue_class::ordered);
    ch_.push(p);
    return event == 0 ? 0 : rma_.notify(p, ev);
}

void amo_module::native_done(tracked_op *t, status st)
{
    auto *op = static_cast<amo_op_state *>(t);
    op->native = false;
    if (st == status::ok && op->req.result != nullptr) {
        std::memcpy(op->req.result, &op->native_result, amo_size(op->req.type));
    }
    op->module->finish(op, st == status::ok ? 0 : err_of(st));
}

void amo_module::finish(amo_op_state *op, int err)
{
    ops_.remove(op->id);
    if (op->via_am) {
        --op->peer->amo_in_flight;
    }
    const rma_completion c = op->completion;
    const bool fetching = op->fetching;
    const bool entry = op->cq_entry;
    const std::size_t len = op->req.count * amo_size(op->req.type);
    const std::uint64_t peer = op->peer->index;
    pool_.put(op);
    if (c.fn != nullptr) {
        c.fn(c.ctx, err);
        return;
    }
    const completion_sink &sink = fetching ? ch_.rma_read : ch_.rma_write;
    const completion cc{
        c.ctx, WEFT_ATOMIC | (fetching ? WEFT_READ : WEFT_WRITE), len, nullptr, 0, 0, peer};
    if (err == 0) [[likely]] {
        sink.success(cc, entry);
    } else {
        sink.failure(cc, {err, 0, 0});
    }
}

status amo_module::push(channel &ch, send_request *r)
{
    auto *op = static_cast<amo_op_state *>(r);
    const amo_request &q = op->req;
    const std::size_t size = amo_size(q.type);
    const amo_hdr h{op->id,
                    op->am_key,
                    q.raddr,
                    static_cast<std::uint8_t>(q.op),
                    static_cast<std::uint8_t>(q.type),
                    static_cast<std::uint8_t>(q.result != nullptr ? amo_flag_fetch : 0),
                    0,
                    static_cast<std::uint32_t>(q.count)};
    const std::size_t n = q.count * size * (q.op == amo_op::cswap ? 2 : 1);
    const iovec iov{op->args, n};
    const status st = ch.am_bcopy(op->peer, am_id::amo, true, &h, sizeof(h), &iov, 1, 0, n);
    op->pushed = st == status::ok;
    return st;
}

void amo_module::on_amo(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<amo_module *>(m);
    const auto h = load<amo_hdr>(data);
    peer_state *p = self->ch_.reply_peer(rx.tl, rx.src);
    if (p == nullptr || p->failed) {
        return;
    }
    const auto op = static_cast<amo_op>(h.op);
    const auto type = static_cast<amo_type>(h.type);
    amo_reply_hdr reply{h.op_id, 0, 0};
    alignas(8) std::uint8_t result[channel::max_control - sizeof(amo_reply_hdr)];
    std::size_t rlen = 0;
    // Everything in the request is a peer's: check it all before touching memory.
    const bool valid = amo_valid(op, type) && h.count != 0;
    const std::size_t size = valid ? amo_size(type) : 1;
    const std::size_t n = valid ? h.count * size * (op == amo_op::cswap ? 2 : 1) : 0;
    const bool fetch = (h.flags & amo_flag_fetch) != 0;
    if (!valid || len != sizeof(h) + n || h.raddr % size != 0 ||
        (fetch && h.count * size > sizeof(result))) {
        reply.status = -WEFT_EINVAL;
    } else if (!self->regions_.check(h.am_key, h.raddr, h.count * size,
                                     transport::access::remote_atomic)) {
        reply.status = -WEFT_EACCES;  // the memory is untouched
    } else {
        const std::uint8_t *operand = data + sizeof(h);
        amo_apply(op, type, h.count, reinterpret_cast<void *>(h.raddr), operand,
                  op == amo_op::cswap ? operand + h.count * size : nullptr,
                  fetch ? result : nullptr);
        rlen = fetch ? h.count * size : 0;
    }
    self->ch_.send_control(p, am_id::amo_reply, &reply, sizeof(reply), result, rlen);
}

void amo_module::on_reply(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len)
{
    auto *self = static_cast<amo_module *>(m);
    const auto h = load<amo_reply_hdr>(data);
    amo_op_state *op = self->ops_.find(h.op_id);
    if (op == nullptr || op->native || !op->pushed || op->peer->tl_index != rx.tl) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "atomic reply for an unknown operation");
        return;
    }
    const std::size_t want =
        op->req.result != nullptr && h.status == 0 ? op->req.count * amo_size(op->req.type) : 0;
    if (len != sizeof(h) + want) [[unlikely]] {
        self->ch_.drop(rx.tl, rx.src, "atomic reply of the wrong length");
        self->finish(op, WEFT_EIO);
        return;
    }
    if (want != 0) {
        std::memcpy(op->req.result, data + sizeof(h), want);
    }
    self->finish(op, h.status == 0              ? 0
                     : h.status == -WEFT_EACCES ? WEFT_EACCES
                     : h.status == -WEFT_EINVAL ? WEFT_EINVAL
                                                : WEFT_EIO);
}

void amo_module::peer_failed(void *m, std::uint32_t index, int err)
{
    auto *self = static_cast<amo_module *>(m);
    (void)err;
    std::vector<amo_op_state *> waiting;
    self->ops_.for_each([&](std::uint64_t, amo_op_state *op) {
        if (op->peer->index == index && !op->native && op->pushed) {
            waiting.push_back(op);
        }
    });
    for (amo_op_state *op : waiting) {
        self->finish(op, WEFT_EHOSTUNREACH);
    }
}

void amo_module::source_failed(void *m, unsigned tl, transport::src_id src)
{
    (void)m;
    (void)tl;
    (void)src;
}

}  // namespace weft::proto
