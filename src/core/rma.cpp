// The C ABI of one-sided operations (weft.h "RMA", "atomics", "triggered
// operations"), and the endpoint's deferred operations (core/deferred.hpp).
//
// The immediate path: check the arguments, then one call through the
// endpoint's ops table (its lock policy) into proto/'s rma or amo module. The
// deferred path (triggered, or behind a fence) copies the operation into a
// deferred_op and starts it later from the endpoint's progress.

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "base/log.hpp"
#include "core/deferred.hpp"
#include "core/handles.hpp"
#include "core/objects.hpp"
#include "weft/weft.h"

namespace proto = weft::proto;
using weft::log_core;
using weft::base::status;
using weft::core::deferred_kind;
using weft::core::deferred_op;
using weft::core::rma_desc;

// The public enums are proto/'s numbering: converted by a cast.
static_assert(unsigned(WEFT_SUM) == unsigned(proto::amo_op::add));
static_assert(unsigned(WEFT_PROD) == unsigned(proto::amo_op::prod));
static_assert(unsigned(WEFT_MIN) == unsigned(proto::amo_op::min));
static_assert(unsigned(WEFT_MAX) == unsigned(proto::amo_op::max));
static_assert(unsigned(WEFT_BAND) == unsigned(proto::amo_op::band));
static_assert(unsigned(WEFT_BOR) == unsigned(proto::amo_op::bor));
static_assert(unsigned(WEFT_BXOR) == unsigned(proto::amo_op::bxor));
static_assert(unsigned(WEFT_LAND) == unsigned(proto::amo_op::land));
static_assert(unsigned(WEFT_LOR) == unsigned(proto::amo_op::lor));
static_assert(unsigned(WEFT_LXOR) == unsigned(proto::amo_op::lxor));
static_assert(unsigned(WEFT_REPLACE) == unsigned(proto::amo_op::swap));
static_assert(unsigned(WEFT_CSWAP) == unsigned(proto::amo_op::cswap));
static_assert(unsigned(WEFT_NOOP) == unsigned(proto::amo_op::read));
static_assert(unsigned(WEFT_ATOMIC_OP_COUNT) == proto::amo_op_count);
static_assert(unsigned(WEFT_INT8) == unsigned(proto::amo_type::i8));
static_assert(unsigned(WEFT_UINT64) == unsigned(proto::amo_type::u64));
static_assert(unsigned(WEFT_FLOAT) == unsigned(proto::amo_type::f32));
static_assert(unsigned(WEFT_DOUBLE) == unsigned(proto::amo_type::f64));
static_assert(unsigned(WEFT_LONG_DOUBLE) == unsigned(proto::amo_type::f80));
static_assert(unsigned(WEFT_FLOAT_COMPLEX) == unsigned(proto::amo_type::c32));
static_assert(unsigned(WEFT_DOUBLE_COMPLEX) == unsigned(proto::amo_type::c64));
static_assert(unsigned(WEFT_DATATYPE_COUNT) == proto::amo_type_count);

namespace weft::core {

namespace {

[[gnu::always_inline]] inline bool is_rma(deferred_kind k)
{
    return k == deferred_kind::put || k == deferred_kind::get || k == deferred_kind::atomic;
}

/// RMA and atomics started and not complete (what a fence waits for).
[[gnu::always_inline]] inline std::size_t started(const weft_ep *ep)
{
    return ep->stack->rma.outstanding() + ep->stack->amo.outstanding();
}

/// Start one RMA or atomic now (no fence in the way).
int start_rma(weft_ep *ep, const rma_desc &d)
{
    const bool selective = (ep->tx_cq_flags & WEFT_SELECTIVE_COMPLETION) != 0;
    const proto::rma_options o{
        .path = proto::rma_path::best,
        .cq_entry =
            (d.flags & WEFT_INJECT) == 0 && (!selective || (d.flags & WEFT_COMPLETION) != 0),
        .copy = (d.flags & WEFT_INJECT) != 0,
        .cq_data = (d.flags & WEFT_REMOTE_CQ_DATA) != 0,
        .data = d.data,
    };
    const proto::rma_completion c{nullptr, d.context};
    switch (d.kind) {
        case deferred_kind::put:
            return ep->stack->rma.start(false, d.iov, d.iovcnt, d.len, d.raddr, *d.key, c, o);
        case deferred_kind::get:
            return ep->stack->rma.start(true, d.iov, d.iovcnt, d.len, d.raddr, *d.key, c, o);
        default:
            return ep->stack->amo.start(*d.amo, *d.key, c, o);
    }
}

rma_desc desc_of(deferred_op *op)
{
    return {op->kind, op->iov.data(), op->iovcnt,  op->len,   op->raddr,
            &op->key, &op->amo,       op->context, op->flags, op->data};
}

/// The buffers a deferred operation reads when it starts: the caller's iovec,
/// or (inject: reusable on return) a copy of the data.
void keep_buffers(deferred_op *op, const iovec *iov, std::size_t iovcnt, std::size_t len,
                  bool inject)
{
    if (!inject) {
        std::copy_n(iov, iovcnt, op->iov.begin());
        op->iovcnt = iovcnt;
        return;
    }
    op->copy.resize(len);
    std::size_t at = 0;
    for (std::size_t i = 0; i < iovcnt && at < len; ++i) {
        const std::size_t n = std::min(iov[i].iov_len, len - at);
        std::memcpy(op->copy.data() + at, iov[i].iov_base, n);
        at += n;
    }
    op->iov[0] = {op->copy.data(), len};
    op->iovcnt = 1;
}

/// Copy what an operation needs to start later into `op` (kind, flags set).
void fill_rma(deferred_op *op, const rma_desc &d)
{
    op->kind = d.kind;
    op->flags = d.flags;
    op->context = d.context;
    op->raddr = d.raddr;
    op->key = *d.key;
    op->data = d.data;
    op->len = d.len;
    if (d.kind == deferred_kind::atomic) {
        // Operands are small: copied, so the caller's may go at once.
        op->amo = *d.amo;
        const std::size_t n = d.amo->count * proto::amo_size(d.amo->type);
        if (d.amo->operand != nullptr) {
            std::memcpy(op->operands, d.amo->operand, n);
            op->amo.operand = op->operands;
        }
        if (d.amo->compare != nullptr) {
            std::memcpy(op->operands + 256, d.amo->compare, n);
            op->amo.compare = op->operands + 256;
        }
        return;
    }
    keep_buffers(op, d.iov, d.iovcnt, d.len, (d.flags & WEFT_INJECT) != 0);
}

void append(deferred_op *&head, deferred_op *&tail, deferred_op *op)
{
    op->link = nullptr;
    if (tail != nullptr) {
        tail->link = op;
    } else {
        head = op;
    }
    tail = op;
}

[[gnu::cold]] int park(weft_ep *ep, const rma_desc &d)
{
    auto *op = new (std::nothrow) deferred_op{};
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->ep = ep;
    fill_rma(op, d);
    append(ep->parked_head, ep->parked_tail, op);
    return 0;
}

/// The sink and completion flags an operation of `op`'s kind reports to.
const proto::completion_sink &sink_of(weft_ep *ep, const deferred_op *op, std::uint64_t &flags)
{
    proto::channel &ch = ep->stack->ch;
    switch (op->kind) {
        case deferred_kind::tsend:
            flags = WEFT_SEND | WEFT_TAGGED;
            return ch.tx;
        case deferred_kind::put:
            flags = WEFT_RMA | WEFT_WRITE;
            return ch.rma_write;
        case deferred_kind::get:
            flags = WEFT_RMA | WEFT_READ;
            return ch.rma_read;
        default: {
            const bool fetching = op->amo.result != nullptr;
            flags = WEFT_ATOMIC | (fetching ? WEFT_READ : WEFT_WRITE);
            return fetching ? ch.rma_read : ch.rma_write;
        }
    }
}

/// The operation ends without starting: an error completion, then it is freed.
void fail_op(weft_ep *ep, deferred_op *op, int err)
{
    std::uint64_t flags = 0;
    const proto::completion_sink &sink = sink_of(ep, op, flags);
    const proto::completion c{op->context,
                              flags,
                              op->len,
                              nullptr,
                              op->data,
                              op->tag,
                              op->kind == deferred_kind::tsend ? op->dest : op->key.peer};
    sink.fail(c, {err, 0, 0}, op->flags);
    delete op;
}

void unlink_armed(weft_ep *ep, deferred_op *op)
{
    if (op->prev != nullptr) {
        op->prev->next_armed = op->next_armed;
    } else {
        ep->armed = op->next_armed;
    }
    if (op->next_armed != nullptr) {
        op->next_armed->prev = op->prev;
    }
    op->prev = op->next_armed = nullptr;
    if (op->watch != nullptr) {
        op->watch->refs.fetch_sub(1, std::memory_order_acq_rel);  // the counter may close now
        op->watch = nullptr;
    }
}

/// Move what fired to the ready list, in firing order.
void take_fired(weft_ep *ep)
{
    // acquire: pairs with the release of fire_ep_op's push; the operation's
    // fields (written before arming) are visible.
    deferred_op *f = ep->fired.exchange(nullptr, std::memory_order_acquire);
    deferred_op *rev = nullptr;
    while (f != nullptr) {  // the stack is newest first
        deferred_op *next = f->link;
        f->link = rev;
        rev = f;
        f = next;
    }
    while (rev != nullptr) {
        deferred_op *next = rev->link;
        unlink_armed(ep, rev);
        append(ep->ready_head, ep->ready_tail, rev);
        rev = next;
    }
}

/// Start a fired operation. 1: parked behind a fence (kept), 0: started (freed
/// here), or a negative code (-WEFT_EAGAIN: try again later; others: failed).
int start_fired(weft_ep *ep, deferred_op *op)
{
    if (op->kind == deferred_kind::tsend) {
        const proto::send_args a{op->iov.data(), op->iovcnt, op->len,     op->dest,
                                 op->tag,        op->data,   op->context, op->flags};
        const int rc = ep->stack->tag.send(a);
        if (rc == 0) {
            delete op;
        }
        return rc;
    }
    if (ep->parked_head != nullptr || ((op->flags & WEFT_FENCE) != 0 && started(ep) != 0)) {
        append(ep->parked_head, ep->parked_tail, op);
        return 1;
    }
    const int rc = start_rma(ep, desc_of(op));
    if (rc == 0) {
        delete op;
    }
    return rc;
}

void fire_ep_op(proto::trigger *t)
{
    auto *op = static_cast<deferred_op *>(t);
    weft_ep *ep = op->ep;
    deferred_op *head = ep->fired.load(std::memory_order_relaxed);
    do {
        op->link = head;
        // release: the endpoint's progress (acquire exchange) sees the operation.
    } while (!ep->fired.compare_exchange_weak(head, op, std::memory_order_release,
                                              std::memory_order_relaxed));
}

void fire_cntr_op(proto::trigger *t)
{
    auto *op = static_cast<deferred_op *>(t);
    {
        std::lock_guard g(op->watch->cntr_ops_mutex);
        auto &v = op->watch->cntr_ops;
        v.erase(std::remove(v.begin(), v.end(), op), v.end());
    }
    if (op->kind == deferred_kind::cntr_add) {
        op->target->counter.add(op->value);
    } else {
        op->target->counter.set(op->value);
    }
    op->target->refs.fetch_sub(1, std::memory_order_acq_rel);
    delete op;
}

}  // namespace

void fill_rma_public(deferred_op *op, const rma_desc &d)
{
    fill_rma(op, d);
}

void fire_cntr_public(proto::trigger *t)
{
    fire_cntr_op(t);
}

void cancel_cntr_ops(weft_cntr *c)
{
    std::vector<deferred_op *> ops;
    {
        std::lock_guard g(c->cntr_ops_mutex);
        ops.swap(c->cntr_ops);
    }
    for (deferred_op *op : ops) {
        if (c->counter.disarm(op)) {
            op->target->refs.fetch_sub(1, std::memory_order_acq_rel);
            delete op;
        }
    }
}

bool count_context_ok(const weft_ep *ep, const void *context, const char *func)
{
    const auto *c = static_cast<const weft_count *>(context);
    if (c == nullptr || !WEFT_LIVE(c->cntr) || c->cntr->domain != ep->domain) {
        WEFT_LOG(core, error,
                 "%s: WEFT_COUNT needs a struct weft_count naming a counter of the endpoint's "
                 "domain as the operation's context",
                 func);
        return false;
    }
    return true;
}

int post_tsend_triggered(weft_ep *ep, const proto::send_args &a)
{
    const auto *t = static_cast<const weft_trigger *>(a.context);
    if (t == nullptr || !WEFT_LIVE(t->cntr) || t->cntr->domain != ep->domain) {
        WEFT_LOG(core, error,
                 "WEFT_TRIGGER: the context must be a struct weft_trigger naming a "
                 "counter of the endpoint's domain");
        return -WEFT_EINVAL;
    }
    auto *op = new (std::nothrow) deferred_op{};
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->kind = deferred_kind::tsend;
    op->flags = a.flags & ~WEFT_TRIGGER;
    op->context = t->context;
    op->dest = a.dest;
    op->tag = a.tag;
    op->data = a.data;
    op->len = a.len;
    keep_buffers(op, a.iov, a.iovcnt, a.len, (op->flags & WEFT_INJECT) != 0);
    op->watch = t->cntr;
    op->threshold = t->threshold;
    return post_triggered(ep, op);
}

std::size_t rma_outstanding(const weft_ep *ep)
{
    std::size_t n = started(ep);
    for (const deferred_op *op = ep->parked_head; op != nullptr; op = op->link) {
        ++n;
    }
    for (const deferred_op *op = ep->ready_head; op != nullptr; op = op->link) {
        ++n;
    }
    return n;
}

int rma_locked(weft_ep *ep, const rma_desc &d)
{
    if ((ep->parked_head != nullptr) | ((d.flags & WEFT_FENCE) != 0 && started(ep) != 0))
        [[unlikely]] {
        return park(ep, d);
    }
    return start_rma(ep, d);
}

unsigned run_deferred(weft_ep *ep)
{
    unsigned n = 0;
    for (;;) {
        take_fired(ep);
        while (ep->ready_head != nullptr) {
            deferred_op *op = ep->ready_head;
            deferred_op *next = op->link;
            const int rc = start_fired(ep, op);
            if (rc == -WEFT_EAGAIN) {
                break;  // no room now: it stays first
            }
            ep->ready_head = next;
            if (next == nullptr) {
                ep->ready_tail = nullptr;
            }
            if (rc < 0) {
                fail_op(ep, op, -rc);
            }
            ++n;
        }
        while (ep->parked_head != nullptr) {
            deferred_op *op = ep->parked_head;
            if ((op->flags & WEFT_FENCE) != 0 && started(ep) != 0) {
                break;  // earlier operations are not remotely complete yet
            }
            const int rc = start_rma(ep, desc_of(op));
            if (rc == -WEFT_EAGAIN) {
                break;
            }
            ep->parked_head = op->link;
            if (ep->parked_head == nullptr) {
                ep->parked_tail = nullptr;
            }
            if (rc < 0) {
                fail_op(ep, op, -rc);
            } else {
                delete op;
            }
            ++n;
        }
        // Operations that completed at once may have fired more (a chain):
        // keep going while there is something new.
        if (ep->fired.load(std::memory_order_relaxed) == nullptr) {
            return n;
        }
    }
}

int post_triggered(weft_ep *ep, deferred_op *op)
{
    weft_cntr *watch = op->watch;
    op->ep = ep;
    op->fire = &fire_ep_op;
    watch->refs.fetch_add(1, std::memory_order_acq_rel);  // closing it waits for us
    base::scoped_guard g(ep->lock);
    op->prev = nullptr;
    op->next_armed = ep->armed;
    if (ep->armed != nullptr) {
        ep->armed->prev = op;
    }
    ep->armed = op;
    watch->counter.arm(op);  // may fire at once: then it is on ep->fired
    return 0;
}

void cancel_deferred(weft_ep *ep)
{
    // Armed ones that have not fired: never will.
    for (deferred_op *op = ep->armed; op != nullptr;) {
        deferred_op *next = op->next_armed;
        if (op->watch->counter.disarm(op)) {
            unlink_armed(ep, op);
            fail_op(ep, op, WEFT_ECANCELED);
        }
        op = next;
    }
    // The rest fired (or are firing on another thread): they reach the fired
    // stack in a moment.
    while (ep->armed != nullptr) {
        take_fired(ep);
        if (ep->armed != nullptr) {
            std::this_thread::yield();
        }
    }
    take_fired(ep);
    for (deferred_op **list : {&ep->ready_head, &ep->parked_head}) {
        while (*list != nullptr) {
            deferred_op *op = *list;
            *list = op->link;
            fail_op(ep, op, WEFT_ECANCELED);
        }
    }
    ep->ready_tail = ep->parked_tail = nullptr;
}

}  // namespace weft::core

// ------------------------------------------------------------------ the C ABI

namespace {

using weft::core::post_triggered;

constexpr std::uint64_t put_flags = WEFT_INJECT | WEFT_REMOTE_CQ_DATA | WEFT_COMPLETION |
                                    WEFT_DELIVERY_COMPLETE | WEFT_FENCE | WEFT_TRIGGER;
constexpr std::uint64_t get_flags =
    WEFT_COMPLETION | WEFT_DELIVERY_COMPLETE | WEFT_FENCE | WEFT_TRIGGER;
constexpr std::uint64_t atomic_flags =
    WEFT_INJECT | WEFT_COMPLETION | WEFT_DELIVERY_COMPLETE | WEFT_FENCE | WEFT_TRIGGER;

[[gnu::always_inline]] inline bool ep_ok(const weft_ep *ep)
{
    return ep != nullptr && ep->enabled;
}

/// The key was unpacked for this endpoint (and is not NULL).
[[gnu::always_inline]] inline bool key_ok(const weft_ep *ep, const weft_rkey *rkey)
{
    return rkey != nullptr && rkey->ep == ep;
}

[[gnu::always_inline]] inline bool iov_sum(const struct iovec *iov, std::size_t count,
                                           std::size_t &len) noexcept
{
    len = 0;
    if (count > proto::max_iov || (iov == nullptr && count != 0)) {
        return false;
    }
    for (std::size_t i = 0; i < count; ++i) {
        if ((iov[i].iov_base == nullptr && iov[i].iov_len != 0) ||
            __builtin_add_overflow(len, iov[i].iov_len, &len)) [[unlikely]] {
            return false;
        }
    }
    return true;
}

/// A triggered operation's counter: live, of the endpoint's domain.
[[gnu::cold]] int trigger_of(weft_ep *ep, void *context, const weft_trigger *&t)
{
    t = static_cast<const weft_trigger *>(context);
    if (t == nullptr || !WEFT_LIVE(t->cntr) || t->cntr->domain != ep->domain) {
        WEFT_LOG(core, error,
                 "WEFT_TRIGGER: the context must be a struct weft_trigger naming a "
                 "counter of the endpoint's domain");
        return -WEFT_EINVAL;
    }
    return 0;
}

[[gnu::cold]] int post_rma_triggered(weft_ep *ep, const rma_desc &d)
{
    const weft_trigger *t = nullptr;
    if (const int rc = trigger_of(ep, d.context, t); rc != 0) {
        return rc;
    }
    auto *op = new (std::nothrow) deferred_op{};
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    rma_desc copy = d;
    copy.context = t->context;
    copy.flags &= ~WEFT_TRIGGER;
    weft::core::fill_rma_public(op, copy);
    op->watch = t->cntr;
    op->threshold = t->threshold;
    return post_triggered(ep, op);
}

[[gnu::always_inline]] inline ssize_t rma_post(weft_ep *ep, const rma_desc &d)
{
    if ((d.flags & WEFT_TRIGGER) != 0) [[unlikely]] {
        return post_rma_triggered(ep, d);
    }
    return ep->ops->rma(ep, d);
}

ssize_t rma_msg(weft_ep_t *ep, const weft_msg_rma *msg, uint64_t flags, bool is_get)
{
    std::size_t len = 0;
    if (!ep_ok(ep) || msg == nullptr || !key_ok(ep, msg->rkey) ||
        (flags & ~(is_get ? get_flags : put_flags)) != 0 ||
        !iov_sum(msg->msg_iov, msg->iov_count, len) || len > ep->info.ep_attr.max_msg_size ||
        ((flags & WEFT_INJECT) != 0 && len > proto::rma_module::max_copy)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const rma_desc d{is_get ? deferred_kind::get : deferred_kind::put,
                     msg->msg_iov,
                     msg->iov_count,
                     len,
                     msg->rma_addr,
                     &msg->rkey->key,
                     nullptr,
                     msg->context,
                     flags,
                     msg->data};
    return rma_post(ep, d);
}

[[gnu::always_inline]] inline ssize_t put_one(weft_ep_t *ep, const void *buf, size_t len,
                                              uint64_t data, uint64_t addr, weft_rkey_t *rkey,
                                              void *context, std::uint64_t flags)
{
    if (!ep_ok(ep) || !key_ok(ep, rkey) || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.max_msg_size ||
        ((flags & WEFT_INJECT) != 0 && len > proto::rma_module::max_copy)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{const_cast<void *>(buf), len};
    const rma_desc d{deferred_kind::put, &iov,    1,       len,   addr,
                     &rkey->key,         nullptr, context, flags, data};
    return ep->ops->rma(ep, d);
}

/// The integer a C caller stored in an enum (any value: reading it as the C++
/// enum would be undefined for values outside the enumerators).
template <class E>
[[gnu::always_inline]] inline unsigned raw(const E &e)
{
    static_assert(sizeof(E) == sizeof(unsigned));
    unsigned v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

ssize_t atomic_post(weft_ep_t *ep, const weft_msg_atomic *m, uint64_t flags)
{
    const unsigned ty = raw(m->datatype);
    const unsigned op = raw(m->op);
    if (!ep_ok(ep) || !key_ok(ep, m->rkey) || (flags & ~atomic_flags) != 0 ||
        ty >= proto::amo_type_count || op >= proto::amo_op_count) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const auto pop = static_cast<proto::amo_op>(op);
    const auto pty = static_cast<proto::amo_type>(ty);
    const bool fetching = m->result != nullptr;
    if (!proto::amo_valid(pop, pty) || m->count == 0 ||
        m->count > proto::amo_module::max_count(pty) ||
        (m->operand == nullptr && pop != proto::amo_op::read) ||
        ((pop == proto::amo_op::cswap) != (m->compare != nullptr)) ||
        (pop == proto::amo_op::cswap && !fetching) || ((flags & WEFT_INJECT) != 0 && fetching))
        [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const proto::amo_request r{pop, pty, m->count, m->operand, m->compare, m->result, m->rma_addr};
    const rma_desc d{deferred_kind::atomic,
                     nullptr,
                     0,
                     m->count * proto::amo_size(pty),
                     m->rma_addr,
                     &m->rkey->key,
                     &r,
                     m->context,
                     flags,
                     0};
    return rma_post(ep, d);
}

}  // namespace

extern "C" {

ssize_t weft_put(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t addr,
                 weft_rkey_t *rkey, void *context)
{
    (void)desc;
    return put_one(ep, buf, len, 0, addr, rkey, context, 0);
}

ssize_t weft_putdata(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t data,
                     uint64_t addr, weft_rkey_t *rkey, void *context)
{
    (void)desc;
    return put_one(ep, buf, len, data, addr, rkey, context, WEFT_REMOTE_CQ_DATA);
}

ssize_t weft_inject_put(weft_ep_t *ep, const void *buf, size_t len, uint64_t addr,
                        weft_rkey_t *rkey)
{
    return put_one(ep, buf, len, 0, addr, rkey, nullptr, WEFT_INJECT);
}

ssize_t weft_inject_putdata(weft_ep_t *ep, const void *buf, size_t len, uint64_t data,
                            uint64_t addr, weft_rkey_t *rkey)
{
    return put_one(ep, buf, len, data, addr, rkey, nullptr, WEFT_INJECT | WEFT_REMOTE_CQ_DATA);
}

ssize_t weft_putv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count, uint64_t addr,
                  weft_rkey_t *rkey, void *context)
{
    const weft_msg_rma m{iov, desc, count, addr, rkey, context, 0};
    return rma_msg(ep, &m, 0, false);
}

ssize_t weft_putmsg(weft_ep_t *ep, const struct weft_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep, msg, flags, false);
}

ssize_t weft_get(weft_ep_t *ep, void *buf, size_t len, void *desc, uint64_t addr, weft_rkey_t *rkey,
                 void *context)
{
    (void)desc;
    if (!ep_ok(ep) || !key_ok(ep, rkey) || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.max_msg_size) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{buf, len};
    const rma_desc d{deferred_kind::get, &iov, 1, len, addr, &rkey->key, nullptr, context, 0, 0};
    return ep->ops->rma(ep, d);
}

ssize_t weft_getv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count, uint64_t addr,
                  weft_rkey_t *rkey, void *context)
{
    const weft_msg_rma m{iov, desc, count, addr, rkey, context, 0};
    return rma_msg(ep, &m, 0, true);
}

ssize_t weft_getmsg(weft_ep_t *ep, const struct weft_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep, msg, flags, true);
}

int weft_ep_flush(weft_ep_t *ep, int timeout_ms)
{
    // A data-path call (SHMEM quiet): no handle-registry lookup, no clock read
    // without a timeout, a yield only now and then (measured: the registry's
    // mutex and a yield per spin dominated a flush-bound loop).
    if (ep == nullptr || !ep->enabled) {
        return -WEFT_EINVAL;
    }
    const bool timed = timeout_ms >= 0;
    const std::uint64_t deadline =
        timed ? weft::base::now_ns() + std::uint64_t(timeout_ms) * 1000000 : UINT64_MAX;
    const bool manual = ep->domain->info.domain_attr.progress != WEFT_PROGRESS_AUTO;
    for (unsigned spins = 0;; ++spins) {
        if (manual) {
            (void)ep->ops->progress(ep);
        }
        std::size_t left;
        {
            weft::base::scoped_guard g(ep->lock);
            left = weft::core::rma_outstanding(ep);
        }
        if (left == 0) {
            return 0;
        }
        if (timed && weft::base::now_ns() >= deadline) {
            return -WEFT_ETIMEDOUT;
        }
        if (spins > 1000 && spins % 64 == 0) {
            std::this_thread::yield();
        }
    }
}

ssize_t weft_atomic(weft_ep_t *ep, const void *buf, size_t count, uint64_t addr, weft_rkey_t *rkey,
                    enum weft_datatype datatype, enum weft_atomic_op op, void *context)
{
    weft_msg_atomic m{buf, nullptr, nullptr, count, {}, {}, addr, rkey, context};
    std::memcpy(&m.datatype, &datatype, sizeof(m.datatype));  // any value a C caller passed
    std::memcpy(&m.op, &op, sizeof(m.op));
    return atomic_post(ep, &m, 0);
}

ssize_t weft_fetch_atomic(weft_ep_t *ep, const void *buf, size_t count, void *result, uint64_t addr,
                          weft_rkey_t *rkey, enum weft_datatype datatype, enum weft_atomic_op op,
                          void *context)
{
    if (result == nullptr) {
        return -WEFT_EINVAL;
    }
    weft_msg_atomic m{buf, nullptr, result, count, {}, {}, addr, rkey, context};
    std::memcpy(&m.datatype, &datatype, sizeof(m.datatype));
    std::memcpy(&m.op, &op, sizeof(m.op));
    return atomic_post(ep, &m, 0);
}

ssize_t weft_compare_atomic(weft_ep_t *ep, const void *buf, const void *compare, size_t count,
                            void *result, uint64_t addr, weft_rkey_t *rkey,
                            enum weft_datatype datatype, void *context)
{
    if (result == nullptr || compare == nullptr) {
        return -WEFT_EINVAL;
    }
    weft_msg_atomic m{buf, compare, result, count, {}, WEFT_CSWAP, addr, rkey, context};
    std::memcpy(&m.datatype, &datatype, sizeof(m.datatype));
    return atomic_post(ep, &m, 0);
}

ssize_t weft_atomicmsg(weft_ep_t *ep, const struct weft_msg_atomic *msg, uint64_t flags)
{
    if (msg == nullptr) {
        return -WEFT_EINVAL;
    }
    return atomic_post(ep, msg, flags);
}

size_t weft_atomic_max_count(enum weft_datatype datatype)
{
    const unsigned t = raw(datatype);
    return t < proto::amo_type_count ? proto::amo_module::max_count(static_cast<proto::amo_type>(t))
                                     : 0;
}

int weft_atomic_valid(enum weft_datatype datatype, enum weft_atomic_op op)
{
    const unsigned t = raw(datatype);
    const unsigned o = raw(op);
    return t < proto::amo_type_count && o < proto::amo_op_count &&
                   proto::amo_valid(static_cast<proto::amo_op>(o), static_cast<proto::amo_type>(t))
               ? 1
               : 0;
}

static int cntr_triggered(weft_cntr_t *cntr, uint64_t value, const weft_trigger *trigger,
                          deferred_kind kind)
{
    if (!WEFT_LIVE(cntr) || trigger == nullptr || !WEFT_LIVE(trigger->cntr) ||
        trigger->cntr->domain != cntr->domain) {
        return -WEFT_EINVAL;
    }
    auto *op = new (std::nothrow) deferred_op{};
    if (op == nullptr) {
        return -WEFT_ENOMEM;
    }
    op->kind = kind;
    op->watch = trigger->cntr;
    op->target = cntr;
    op->value = value;
    op->threshold = trigger->threshold;
    op->fire = &weft::core::fire_cntr_public;
    cntr->refs.fetch_add(1, std::memory_order_acq_rel);  // the target stays open
    {
        std::lock_guard g(op->watch->cntr_ops_mutex);
        op->watch->cntr_ops.push_back(op);
    }
    op->watch->counter.arm(op);  // may fire (and free op) at once
    return 0;
}

int weft_cntr_add_triggered(weft_cntr_t *cntr, uint64_t value, const struct weft_trigger *trigger)
{
    return cntr_triggered(cntr, value, trigger, deferred_kind::cntr_add);
}

int weft_cntr_set_triggered(weft_cntr_t *cntr, uint64_t value, const struct weft_trigger *trigger)
{
    return cntr_triggered(cntr, value, trigger, deferred_kind::cntr_set);
}

}  // extern "C"
