// Endpoint enable: open the transports of its domain, build the protocol stack,
// and choose the data-path functions once (threading level, CQ format) so the
// hot calls do not branch on options they already know.
#include "core/ep.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>

#include "base/log.hpp"

using weft::base::status;
namespace proto = weft::proto;
namespace transport = weft::transport;

namespace weft::core {

namespace {

// ------------------------------------------------------------------ CQ writers

template <weft_cq_format F>
[[gnu::always_inline]] inline void fill_entry(std::uint8_t *dst, const proto::completion &c)
{
    if constexpr (F == WEFT_CQ_FORMAT_CONTEXT) {
        const weft_cq_entry e{c.context};
        std::memcpy(dst, &e, sizeof(e));
    } else if constexpr (F == WEFT_CQ_FORMAT_MSG) {
        const weft_cq_msg_entry e{c.context, c.flags, c.len};
        std::memcpy(dst, &e, sizeof(e));
    } else if constexpr (F == WEFT_CQ_FORMAT_DATA) {
        const weft_cq_data_entry e{c.context, c.flags, c.len, c.buf, c.data};
        std::memcpy(dst, &e, sizeof(e));
    } else {
        const weft_cq_tagged_entry e{c.context, c.flags, c.len, c.buf, c.data, c.tag};
        std::memcpy(dst, &e, sizeof(e));
    }
}

template <weft_cq_format F>
[[gnu::cold]] void overflow_push(weft_cq *cq, const proto::completion &c)
{
    std::vector<std::uint8_t> e(cq->entry_size);
    fill_entry<F>(e.data(), c);
    cq->overflow.emplace_back(std::move(e), c.src);
    ++cq->noverflow;
}

template <weft_cq_format F>
[[gnu::always_inline]] inline void write_entry(weft_cq *cq, const proto::completion &c)
{
    if (cq->tail - cq->head <= cq->mask && cq->noverflow == 0) [[likely]] {
        const std::size_t idx = cq->tail & cq->mask;
        fill_entry<F>(cq->ring.data() + idx * cq->entry_size, c);
        cq->src[idx] = c.src;
        ++cq->tail;
        return;
    }
    overflow_push<F>(cq, c);
}

template <weft_cq_format F, bool Locked>
void cq_write(void *p, const proto::completion &c)
{
    auto *cq = static_cast<weft_cq *>(p);
    if constexpr (Locked) {
        base::scoped_guard g(cq->lock);
        write_entry<F>(cq, c);
    } else {
        write_entry<F>(cq, c);
    }
}

void cq_write_error(void *p, const proto::completion &c, const proto::completion_error &e)
{
    static_cast<weft_cq *>(p)->push_error(c, e);
}

// ------------------------------------------------------------------ CQ readers

template <weft_cq_format F>
constexpr std::size_t entry_bytes = F == WEFT_CQ_FORMAT_CONTEXT ? sizeof(weft_cq_entry)
                                    : F == WEFT_CQ_FORMAT_MSG   ? sizeof(weft_cq_msg_entry)
                                    : F == WEFT_CQ_FORMAT_DATA  ? sizeof(weft_cq_data_entry)
                                                                : sizeof(weft_cq_tagged_entry);

/// Entries that did not fit the ring, after the ring's (the application stopped
/// reading for a while): a slow path.
[[gnu::cold]] std::size_t read_overflow(weft_cq *cq, std::uint8_t *out, std::size_t n,
                                        std::size_t count, weft_addr_t *src)
{
    while (n < count && !cq->overflow.empty()) {
        auto &[e, s] = cq->overflow.front();
        std::memcpy(out + n * cq->entry_size, e.data(), cq->entry_size);
        if (src != nullptr) {
            src[n] = s;
        }
        cq->overflow.pop_front();
        --cq->noverflow;
        ++n;
    }
    return n;
}

template <weft_cq_format F>
[[gnu::always_inline]] inline ssize_t read_entries(weft_cq *cq, void *buf, std::size_t count,
                                                   weft_addr_t *src)
{
    if (cq->nerrors != 0) [[unlikely]] {
        return -WEFT_EAVAIL;
    }
    // Fixed-size copies (the format is known here): no memcpy call per entry.
    constexpr std::size_t e = entry_bytes<F>;
    auto *out = static_cast<std::uint8_t *>(buf);
    const std::uint8_t *ring = cq->ring.data();
    std::uint64_t head = cq->head;
    const std::uint64_t tail = cq->tail;
    std::size_t n = 0;
    for (; n < count && head != tail; ++n, ++head) {
        const std::size_t idx = head & cq->mask;
        std::memcpy(out + n * e, ring + idx * e, e);
        if (src != nullptr) {
            src[n] = cq->src[idx];
        }
    }
    cq->head = head;
    if (n < count && cq->noverflow != 0) [[unlikely]] {
        n = read_overflow(cq, out, n, count, src);
    }
    return n != 0 ? static_cast<ssize_t>(n) : -WEFT_EAGAIN;
}

template <weft_cq_format F, bool Locked>
ssize_t cq_read(weft_cq *cq, void *buf, std::size_t count, weft_addr_t *src)
{
    if (cq->manual) [[likely]] {
        cq->progress();  // outside the CQ lock: completions are written under it
    }
    if constexpr (Locked) {
        base::scoped_guard g(cq->lock);
        return read_entries<F>(cq, buf, count, src);
    } else {
        return read_entries<F>(cq, buf, count, src);
    }
}

// ------------------------------------------------------------------ data-path ops per lock policy

template <class Lock>
struct ep_impl {
    [[gnu::always_inline]] static Lock &lock(weft_ep *ep)
    {
        if constexpr (std::is_same_v<Lock, base::spin_lock>) {
            return ep->lock;
        } else {
            static base::no_lock none;
            return none;
        }
    }
    static int send(weft_ep *ep, const proto::send_args &a)
    {
        base::scoped_guard g(lock(ep));
        return ep->stack->tag.send(a);
    }
    static int recv(weft_ep *ep, const proto::recv_args &a)
    {
        base::scoped_guard g(lock(ep));
        return ep->stack->tag.recv(a);
    }
    static int recv_special(weft_ep *ep, const proto::recv_args &a)
    {
        base::scoped_guard g(lock(ep));
        return ep->stack->tag.recv_special(a);
    }
    static int cancel(weft_ep *ep, void *context)
    {
        base::scoped_guard g(lock(ep));
        return ep->stack->tag.cancel(context);
    }
    static unsigned progress(weft_ep *ep)
    {
        // Another thread in the endpoint drives it (or is about to): no need
        // to queue up behind it. Every caller polls, so it comes back.
        Lock &l = lock(ep);
        if (!l.try_lock()) {
            return 0;
        }
        unsigned n = ep->stack->ch.progress();
        if (ep->deferred_due()) [[unlikely]] {
            n += run_deferred(ep);
        }
        l.unlock();
        return n;
    }
    static int rma(weft_ep *ep, const rma_desc &d)
    {
        base::scoped_guard g(lock(ep));
        return rma_locked(ep, d);
    }
};

constexpr ep_ops ops_unlocked{
    .send = &ep_impl<base::no_lock>::send,
    .recv = &ep_impl<base::no_lock>::recv,
    .recv_special = &ep_impl<base::no_lock>::recv_special,
    .cancel = &ep_impl<base::no_lock>::cancel,
    .progress = &ep_impl<base::no_lock>::progress,
    .rma = &ep_impl<base::no_lock>::rma,
};

constexpr ep_ops ops_locked{
    .send = &ep_impl<base::spin_lock>::send,
    .recv = &ep_impl<base::spin_lock>::recv,
    .recv_special = &ep_impl<base::spin_lock>::recv_special,
    .cancel = &ep_impl<base::spin_lock>::cancel,
    .progress = &ep_impl<base::spin_lock>::progress,
    .rma = &ep_impl<base::spin_lock>::rma,
};

std::atomic<std::uint32_t> next_ep_id{0};

/// A WEFT_COUNT operation's counter (validated when it was posted).
proto::counter *counter_of_count(void *context)
{
    return &static_cast<weft_count *>(context)->cntr->counter;
}

proto::completion_sink make_sink(weft_cq *cq, std::uint64_t cq_flags, weft_cntr *cntr)
{
    proto::completion_sink s;
    s.count_of = &counter_of_count;
    if (cq != nullptr) {
        s.cq = cq;
        s.write = cq->write_fn;
        s.write_error = &cq_write_error;
        s.selective = (cq_flags & WEFT_SELECTIVE_COMPLETION) != 0;
    }
    if (cntr != nullptr) {
        s.cntr = &cntr->counter;
    }
    return s;
}

}  // namespace

void (*cq_writer(weft_cq_format format, bool locked))(void *, const proto::completion &)
{
    switch (format) {
        case WEFT_CQ_FORMAT_CONTEXT:
            return locked ? &cq_write<WEFT_CQ_FORMAT_CONTEXT, true>
                          : &cq_write<WEFT_CQ_FORMAT_CONTEXT, false>;
        case WEFT_CQ_FORMAT_MSG:
            return locked ? &cq_write<WEFT_CQ_FORMAT_MSG, true>
                          : &cq_write<WEFT_CQ_FORMAT_MSG, false>;
        case WEFT_CQ_FORMAT_DATA:
            return locked ? &cq_write<WEFT_CQ_FORMAT_DATA, true>
                          : &cq_write<WEFT_CQ_FORMAT_DATA, false>;
        case WEFT_CQ_FORMAT_TAGGED:
            return locked ? &cq_write<WEFT_CQ_FORMAT_TAGGED, true>
                          : &cq_write<WEFT_CQ_FORMAT_TAGGED, false>;
    }
    return nullptr;
}

ssize_t (*cq_reader(weft_cq_format format, bool locked))(weft_cq *, void *, std::size_t,
                                                         weft_addr_t *)
{
    switch (format) {
        case WEFT_CQ_FORMAT_CONTEXT:
            return locked ? &cq_read<WEFT_CQ_FORMAT_CONTEXT, true>
                          : &cq_read<WEFT_CQ_FORMAT_CONTEXT, false>;
        case WEFT_CQ_FORMAT_MSG:
            return locked ? &cq_read<WEFT_CQ_FORMAT_MSG, true>
                          : &cq_read<WEFT_CQ_FORMAT_MSG, false>;
        case WEFT_CQ_FORMAT_DATA:
            return locked ? &cq_read<WEFT_CQ_FORMAT_DATA, true>
                          : &cq_read<WEFT_CQ_FORMAT_DATA, false>;
        case WEFT_CQ_FORMAT_TAGGED:
            return locked ? &cq_read<WEFT_CQ_FORMAT_TAGGED, true>
                          : &cq_read<WEFT_CQ_FORMAT_TAGGED, false>;
    }
    return nullptr;
}

std::size_t cq_entry_size(weft_cq_format format)
{
    switch (format) {
        case WEFT_CQ_FORMAT_CONTEXT:
            return sizeof(weft_cq_entry);
        case WEFT_CQ_FORMAT_MSG:
            return sizeof(weft_cq_msg_entry);
        case WEFT_CQ_FORMAT_DATA:
            return sizeof(weft_cq_data_entry);
        case WEFT_CQ_FORMAT_TAGGED:
            return sizeof(weft_cq_tagged_entry);
    }
    return 0;
}

bool domain_is_locked(const weft_domain *d)
{
    return d->info.domain_attr.threading != WEFT_THREAD_DOMAIN ||
           d->info.domain_attr.progress == WEFT_PROGRESS_AUTO;
}

namespace {

/// The proto/ blob of an endpoint address: what every peer must agree on.
base::status add_proto_blob(transport::address_builder &b, const proto::channel &ch)
{
    const proto::proto_params pp = ch.params();
    return b.add(transport::proto_blob_id, nullptr, 0, &pp, sizeof(pp));
}

/// The credit configuration of an endpoint; invalid (logged, naming the
/// variables) when the values do not work together.
base::status credit_setup(const core_config &cfg, std::size_t shared_rx, proto::credit_config &out)
{
    out = {.mode = shared_rx != 0 ? proto::credit_mode::shared_pool : proto::credit_mode::per_peer,
           .initial = static_cast<std::uint16_t>(cfg.credit_initial),
           .window = static_cast<std::uint16_t>(cfg.credit_window),
           .threshold = static_cast<std::uint16_t>(cfg.credit_threshold),
           .grant_step = 0,
           .pool_size = static_cast<std::uint32_t>(std::min<std::size_t>(shared_rx, UINT32_MAX))};
    proto::credit_config resolved = out;
    const char *why = "";
    if (proto::credit_config_resolve(resolved, &why) != base::status::ok) {
        WEFT_LOG(
            core, error,
            "WEFT_CREDIT_INITIAL=%llu, WEFT_CREDIT_WINDOW=%llu, WEFT_CREDIT_THRESHOLD=%llu: %s",
            static_cast<unsigned long long>(cfg.credit_initial),
            static_cast<unsigned long long>(cfg.credit_window),
            static_cast<unsigned long long>(cfg.credit_threshold), why);
        return base::status::invalid;
    }
    return base::status::ok;
}

void bind_lists(weft_ep *ep)
{
    for (weft_cq *cq : {ep->tx_cq, ep->rx_cq}) {
        if (cq != nullptr) {
            (void)cq->eps.add(ep);  // duplicate adds (one CQ for both) are ignored
            const auto g = cq->eps.read();
            cq->single_ep = !cq->locked ? g.single() : nullptr;
        }
    }
    for (weft_cntr *c : {ep->tx_cntr, ep->rx_cntr, ep->write_cntr, ep->read_cntr, ep->rwrite_cntr,
                         ep->rread_cntr}) {
        if (c != nullptr) {
            (void)c->eps.add(ep);  // duplicates are ignored
        }
    }
}

void unbind_lists(weft_ep *ep)
{
    for (weft_cq *cq : {ep->tx_cq, ep->rx_cq}) {
        if (cq != nullptr) {
            cq->single_ep = nullptr;
            cq->eps.remove(ep);  // returns once no reader can still see ep
            const auto g = cq->eps.read();
            cq->single_ep = !cq->locked ? g.single() : nullptr;
        }
    }
    for (weft_cntr *c : {ep->tx_cntr, ep->rx_cntr, ep->write_cntr, ep->read_cntr, ep->rwrite_cntr,
                         ep->rread_cntr}) {
        if (c != nullptr) {
            c->eps.remove(ep);
        }
    }
}

}  // namespace

int ep_enable(weft_ep *ep)
{
    if (ep->enabled) {
        return -WEFT_EINVAL;
    }
    if (ep->av == nullptr) {
        WEFT_LOG(core, error, "weft_ep_enable: bind an address vector first (weft_ep_bind_av)");
        return -WEFT_EINVAL;
    }
    weft_domain *d = ep->domain;
    const core_config &cfg = d->cfg;
    ep->ep_id = next_ep_id.fetch_add(1, std::memory_order_relaxed);
    const transport::open_params params{local_node_id(), static_cast<std::uint32_t>(getpid()),
                                        ep->ep_id};
    const bool named = std::strcmp(ep->info.transport, "auto") != 0;
    std::vector<const transport::component *> comps;
    for (std::size_t i = 0; i < d->resources.size(); ++i) {
        const selected_resource &r = d->resources[i];
        auto tl = r.comp->open(params, r.res, *d->mds[i], d->fabric->config);
        if (tl.ok()) {
            ep->tls.push_back(std::move(tl.value()));
            comps.push_back(r.comp);
        } else if (named || tl.error() == base::status::invalid) {
            // The transport asked for, or an invalid setting (logged by the
            // transport, naming it): the endpoint cannot be what was asked.
            ep->tls.clear();
            return base::to_c(tl.error());
        } else {
            WEFT_LOG(core, info, "%s transport unavailable (%s); continuing without it",
                     r.comp->name, base::status_string(tl.error()));
        }
    }
    if (ep->tls.empty()) {
        WEFT_LOG(core, error, "weft_ep_enable: no transport available for '%s'",
                 ep->info.transport);
        return -WEFT_ENODEV;
    }
    // A transport whose receive buffers every peer shares (the verbs SRQ) needs
    // shared-pool credits, so that the senders together never overrun it.
    std::size_t shared_rx = 0;
    for (auto &tl : ep->tls) {
        shared_rx += tl->attr().shared_rx;
    }
    proto::credit_config credits{};
    if (credit_setup(cfg, shared_rx, credits) != base::status::ok) {
        ep->tls.clear();
        return -WEFT_EINVAL;
    }
    const bool variable = (ep->info.caps & WEFT_VARIABLE_MSG) != 0;
    const std::size_t rndv = ep_rndv_thresh(*ep);
    const proto::stack_params sp{
        .channel = {.tx_size = cfg.tx_size,
                    .credit_cfg = credits,
                    .credit_eagain = ep->info.ep_attr.credit_mode == WEFT_CREDITS_EAGAIN,
                    .max_msg_size = cfg.max_msg_size},
        .tag = {.max_msg_size = cfg.max_msg_size,
                .inject_size = cfg.inject_size,
                .match_hash_bits = static_cast<unsigned>(cfg.match_hash_bits),
                .rndv_thresh = rndv,
                .rndv_get_min = cfg.rndv_get_min,
                .variable = variable,
                // The variable-message threshold is both sides' (set, or the
                // configuration's): WEFT_OPT_RNDV_THRESHOLD moves only our sends.
                .var_thresh = variable && ep->var_thresh_set ? ep->var_thresh : cfg.rndv_thresh,
                .unexpected_rndv_max = cfg.unexpected_rndv_max,
                .inject_direct = ep->inject_direct},
    };
    ep->stack = std::make_unique<proto::stack>(sp, *ep->av, d->regions);
    for (std::size_t i = 0; i < ep->tls.size(); ++i) {
        if (const base::status st = ep->stack->ch.add_transport(ep->tls[i].get(), comps[i]);
            st != base::status::ok) {
            ep->stack.reset();
            ep->tls.clear();
            return base::to_c(st);
        }
    }
    if (ep->inject_direct) {
        // A direct inject is one transport message (it is never queued in parts).
        ep->info.ep_attr.inject_size =
            std::min(ep->info.ep_attr.inject_size, ep->stack->tag.one_message_inject());
    }
    // The address: proto/'s parameters, then every transport's blobs.
    transport::address_builder b({params.node_id, params.pid, params.ep_id});
    base::status st = add_proto_blob(b, ep->stack->ch);
    for (std::size_t i = 0; i < ep->tls.size() && st == base::status::ok; ++i) {
        st = ep->tls[i]->pack_address(b);
    }
    if (st != base::status::ok) {
        WEFT_LOG(core, error, "weft_ep_enable: the endpoint's address does not fit in %zu bytes",
                 transport::max_address_size);
        ep->stack.reset();
        ep->tls.clear();
        return -WEFT_ENOMEM;
    }
    ep->addr = b.get();
    for (auto &tl : ep->tls) {
        tl->set_local_address(ep->addr);
    }
    ep->stack->ch.tx = make_sink(ep->tx_cq, ep->tx_cq_flags, ep->tx_cntr);
    ep->stack->ch.rx = make_sink(ep->rx_cq, ep->rx_cq_flags, ep->rx_cntr);
    ep->stack->ch.rma_write = make_sink(ep->tx_cq, ep->tx_cq_flags, ep->write_cntr);
    ep->stack->ch.rma_read = make_sink(ep->tx_cq, ep->tx_cq_flags, ep->read_cntr);
    ep->stack->ch.remote_write = ep->rwrite_cntr != nullptr ? &ep->rwrite_cntr->counter : nullptr;
    ep->stack->ch.remote_read = ep->rread_cntr != nullptr ? &ep->rread_cntr->counter : nullptr;
    ep->ops = domain_is_locked(d) ? &ops_locked : &ops_unlocked;
    bind_lists(ep);
    ep->enabled = true;
    d->add_ep(ep);
    return 0;
}

void ep_forget_peer(weft_ep *ep, std::uint32_t index)
{
    base::scoped_guard g(ep->lock);  // control path: always (a progress thread may run)
    ep->stack->ch.forget_peer(index);
}

void ep_disable(weft_ep *ep)
{
    if (!ep->enabled) {
        return;
    }
    ep->domain->remove_ep(ep);
    {
        // Pending triggered and fenced operations end with error completions
        // while the completion sinks still exist.
        base::scoped_guard g(ep->lock);
        cancel_deferred(ep);
    }
    unbind_lists(ep);
    {
        base::scoped_guard g(ep->lock);
        ep->stack.reset();  // before the transports it uses
        ep->tls.clear();
    }
    ep->enabled = false;
}

}  // namespace weft::core
