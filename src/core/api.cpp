// The C ABI: argument checks, then the object model. Nothing here throws; every
// allocation that can fail on the control path is checked (new (std::nothrow)).
#include "config.h"  // WEFT_HAVE_* from configure
#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "base/arch.hpp"
#include "base/log.hpp"
#include "core/ep.hpp"
#include "core/objects.hpp"
#include "core/pmix.hpp"
#include "transport/verbs/verbs.hpp"

using weft::base::status;
namespace core = weft::core;
namespace proto = weft::proto;
namespace transport = weft::transport;
using weft::log_core;  // WEFT_LOG(core, ...) in the C functions below

namespace {

/// What every endpoint does.
constexpr std::uint64_t default_caps =
    WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV | WEFT_REMOTE_CQ_DATA;
/// Also offered, when asked for (they change receive semantics).
constexpr std::uint64_t supported_caps = default_caps | WEFT_VARIABLE_MSG;

/// The integer an application stored in an enum field of a weft.h struct. Reading
/// the field as its enum type is undefined behaviour when the value is none of the
/// enumerators (a C caller may store anything), so validation reads the bytes.
template <typename E>
int raw_enum(const E &field)
{
    static_assert(sizeof(E) == sizeof(int), "weft.h enums are int-sized");
    int v;
    std::memcpy(&v, &field, sizeof(v));
    return v;
}

bool valid_threading(const weft_threading &t)
{
    const int v = raw_enum(t);
    return v >= WEFT_THREAD_UNSPEC && v <= WEFT_THREAD_DOMAIN;
}
bool valid_progress(const weft_progress &p)
{
    const int v = raw_enum(p);
    return v >= WEFT_PROGRESS_UNSPEC && v <= WEFT_PROGRESS_AUTO;
}
bool valid_credit_mode(const weft_credit_mode &m)
{
    const int v = raw_enum(m);
    return v == WEFT_CREDITS_QUEUE || v == WEFT_CREDITS_EAGAIN;
}

void fill_info(weft_info &i, const char *name, const weft_info *hints, const core::core_config &cfg)
{
    i = {};
    i.caps = default_caps | (hints != nullptr ? hints->caps : 0);
    std::snprintf(i.transport, sizeof(i.transport), "%s", name);
    char host[64] = {};
    (void)gethostname(host, sizeof(host) - 1);
    std::snprintf(i.domain_name, sizeof(i.domain_name), "%s", host);
    i.addr_len = sizeof(transport::wire_address);
    i.ep_attr.inject_size = cfg.inject_size;
    i.ep_attr.max_msg_size = cfg.max_msg_size;
    i.ep_attr.tx_size = cfg.tx_size;
    i.ep_attr.rx_size = cfg.rx_size;
    i.ep_attr.iov_limit = proto::max_iov;
    i.ep_attr.msg_order = WEFT_ORDER_SAS;
    i.ep_attr.credit_mode = hints != nullptr ? hints->ep_attr.credit_mode : WEFT_CREDITS_QUEUE;
    i.domain_attr.progress = WEFT_PROGRESS_MANUAL;
    i.domain_attr.threading = WEFT_THREAD_SAFE;
    if (hints != nullptr) {
        if (hints->domain_attr.progress != WEFT_PROGRESS_UNSPEC) {
            i.domain_attr.progress = hints->domain_attr.progress;
        }
        if (hints->domain_attr.threading != WEFT_THREAD_UNSPEC) {
            i.domain_attr.threading = hints->domain_attr.threading;
        }
    }
}

bool info_ok(const weft_info *info)
{
    return info != nullptr && valid_threading(info->domain_attr.threading) &&
           valid_credit_mode(info->ep_attr.credit_mode) &&
           valid_progress(info->domain_attr.progress) && (info->caps & ~supported_caps) == 0;
}

template <typename T>
void unref(T *parent)
{
    if (parent != nullptr) {
        parent->refs.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace

extern "C" {

const char *weft_strerror(int errnum)
{
    switch (errnum < 0 ? -errnum : errnum) {
        case WEFT_SUCCESS:
            return "success";
        case WEFT_ENOENT:
            return "no such entry";
        case WEFT_EIO:
            return "I/O error";
        case WEFT_EAGAIN:
            return "resource temporarily unavailable, retry";
        case WEFT_ENOMEM:
            return "out of memory";
        case WEFT_EACCES:
            return "access denied (protection or key error)";
        case WEFT_EBUSY:
            return "object in use";
        case WEFT_ENODEV:
            return "no usable transport or device";
        case WEFT_EINVAL:
            return "invalid argument";
        case WEFT_ENOSYS:
            return "operation not supported";
        case WEFT_ENOMSG:
            return "no matching message";
        case WEFT_EBADMSG:
            return "malformed message from a peer";
        case WEFT_EOVERRUN:
            return "queue overrun";
        case WEFT_ETIMEDOUT:
            return "timed out";
        case WEFT_EHOSTUNREACH:
            return "peer unreachable";
        case WEFT_ECANCELED:
            return "operation canceled";
        case WEFT_EAVAIL:
            return "error completion available";
        case WEFT_ETRUNC:
            return "message truncated";
        case WEFT_EOTHER:
            return "unspecified error";
        default:
            return "unknown error";
    }
}

// ------------------------------------------------------------------ discovery

weft_info *weft_info_alloc(void)
{
    return new (std::nothrow) weft_info{};
}

weft_info *weft_info_dup(const weft_info *info)
{
    if (info == nullptr) {
        return nullptr;
    }
    auto *copy = new (std::nothrow) weft_info(*info);
    if (copy != nullptr) {
        copy->next = nullptr;
    }
    return copy;
}

void weft_info_free(weft_info *info)
{
    while (info != nullptr) {
        weft_info *next = info->next;
        delete info;
        info = next;
    }
}

int weft_getinfo(uint32_t version, const weft_info *hints, weft_info **info)
{
    if (info == nullptr) {
        return -WEFT_EINVAL;
    }
    *info = nullptr;
    if ((version >> 16) != (WEFT_API_VERSION >> 16)) {
        WEFT_LOG(core, error, "weft_getinfo: API version %u.%u not supported (this is %u.%u)",
                 version >> 16, version & 0xffff, WEFT_API_VERSION >> 16,
                 WEFT_API_VERSION & 0xffff);
        return -WEFT_ENOSYS;
    }
    const core::core_config &cfg = core::global_config();
    if (hints != nullptr && (!valid_threading(hints->domain_attr.threading) ||
                             !valid_progress(hints->domain_attr.progress))) {
        return -WEFT_EINVAL;
    }
    if (hints != nullptr && (hints->caps & ~supported_caps) != 0) {
        return -WEFT_ENODEV;
    }
    weft_info *head = nullptr;
    weft_info **tail = &head;
    auto add = [&](const char *name, const char *domain) {
        if (hints != nullptr && hints->transport[0] != '\0' &&
            std::strncmp(hints->transport, name, sizeof(hints->transport)) != 0) {
            return true;
        }
        auto *i = new (std::nothrow) weft_info{};
        if (i == nullptr) {
            return false;
        }
        fill_info(*i, name, hints, cfg);
        if (domain != nullptr) {
            std::snprintf(i->domain_name, sizeof(i->domain_name), "%s", domain);
        }
        if (hints != nullptr && hints->domain_name[0] != '\0' &&
            std::strncmp(hints->domain_name, i->domain_name, sizeof(i->domain_name)) != 0) {
            delete i;
            return true;
        }
        *tail = i;
        tail = &i->next;
        return true;
    };
    for (const char *name : {"auto", "shm", "self"}) {
        if (core::transports_for(name) != 0 && !add(name, nullptr)) {
            weft_info_free(head);
            return -WEFT_ENOMEM;
        }
    }
#ifdef WEFT_HAVE_VERBS
    // One entry per usable port: its name is the domain name (as libfabric's verbs
    // provider does), so an application picks a port by domain.
    if (core::transports_for("verbs") != 0) {
        for (const auto &port : transport::verbs::active_ports()) {
            if (!add("verbs", port.name.c_str())) {
                weft_info_free(head);
                return -WEFT_ENOMEM;
            }
        }
    }
#endif
    if (head == nullptr) {
        return -WEFT_ENODEV;
    }
    *info = head;
    return 0;
}

// ------------------------------------------------------------------ fabric, domain

int weft_fabric_open(const weft_info *info, weft_fabric_t **fabric)
{
    if (!info_ok(info) || fabric == nullptr) {
        return -WEFT_EINVAL;
    }
    (void)core::global_config();
    auto *f = new (std::nothrow) weft_fabric{};
    if (f == nullptr) {
        return -WEFT_ENOMEM;
    }
    f->info = *info;
    f->info.next = nullptr;
    *fabric = f;
    return 0;
}

int weft_fabric_close(weft_fabric_t *fabric)
{
    if (fabric == nullptr) {
        return -WEFT_EINVAL;
    }
    if (fabric->busy()) {
        return -WEFT_EBUSY;
    }
    delete fabric;
    return 0;
}

int weft_domain_open(weft_fabric_t *fabric, const weft_info *info, weft_domain_t **domain)
{
    if (fabric == nullptr || !info_ok(info) || domain == nullptr) {
        return -WEFT_EINVAL;
    }
    if (core::transports_for(info->transport) == 0) {
        WEFT_LOG(core, error, "weft_domain_open: transport '%.16s' is not available",
                 info->transport);
        return -WEFT_ENODEV;
    }
#ifdef WEFT_HAVE_VERBS
    if (std::strncmp(info->transport, "verbs", sizeof(info->transport)) == 0) {
        const auto &ports = transport::verbs::active_ports();
        if (std::none_of(ports.begin(), ports.end(), [&](const auto &p) {
                return std::strncmp(p.name.c_str(), info->domain_name, sizeof(info->domain_name)) ==
                       0;
            })) {
            WEFT_LOG(core, error, "weft_domain_open: '%.64s' is not an active verbs port",
                     info->domain_name);
            return -WEFT_ENODEV;
        }
    }
#endif
    auto *d = new (std::nothrow) weft_domain{};
    if (d == nullptr) {
        return -WEFT_ENOMEM;
    }
    d->fabric = fabric;
    d->info = *info;
    d->info.next = nullptr;
    if (d->info.domain_attr.progress == WEFT_PROGRESS_UNSPEC) {
        d->info.domain_attr.progress = WEFT_PROGRESS_MANUAL;
    }
    if (d->info.domain_attr.threading == WEFT_THREAD_UNSPEC) {
        d->info.domain_attr.threading = WEFT_THREAD_SAFE;
    }
    d->cfg = core::global_config();
    fabric->refs.fetch_add(1, std::memory_order_acq_rel);
    *domain = d;
    return 0;
}

int weft_domain_close(weft_domain_t *domain)
{
    if (domain == nullptr) {
        return -WEFT_EINVAL;
    }
    if (domain->busy()) {
        return -WEFT_EBUSY;
    }
    unref(domain->fabric);
    delete domain;
    return 0;
}

// ------------------------------------------------------------------ completion queues

int weft_cq_open(weft_domain_t *domain, const weft_cq_attr *attr, weft_cq_t **cq)
{
    if (domain == nullptr || cq == nullptr) {
        return -WEFT_EINVAL;
    }
    const int raw_format = attr != nullptr ? raw_enum(attr->format) : WEFT_CQ_FORMAT_CONTEXT;
    if (raw_format < WEFT_CQ_FORMAT_CONTEXT || raw_format > WEFT_CQ_FORMAT_TAGGED) {
        return -WEFT_EINVAL;
    }
    const auto format = static_cast<weft_cq_format>(raw_format);
    std::size_t size = attr != nullptr && attr->size != 0 ? attr->size : domain->cfg.cq_size;
    if (size > (std::size_t(1) << 24)) {
        return -WEFT_EINVAL;
    }
    std::size_t ring = 1;
    while (ring < size) {
        ring <<= 1;
    }
    auto *c = new (std::nothrow) weft_cq{};
    if (c == nullptr) {
        return -WEFT_ENOMEM;
    }
    c->domain = domain;
    c->format = format;
    c->entry_size = core::cq_entry_size(format);
    c->mask = ring - 1;
    c->ring.resize(ring * c->entry_size);
    c->src.resize(ring);
    c->locked = core::domain_is_locked(domain);
    c->write_fn = core::cq_writer(format, c->locked);
    c->read_fn = core::cq_reader(format, c->locked);
    c->manual = domain->info.domain_attr.progress != WEFT_PROGRESS_AUTO;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    *cq = c;
    return 0;
}

int weft_cq_close(weft_cq_t *cq)
{
    if (cq == nullptr) {
        return -WEFT_EINVAL;
    }
    if (cq->busy()) {
        return -WEFT_EBUSY;
    }
    unref(cq->domain);
    delete cq;
    return 0;
}

namespace {

ssize_t cq_read_impl(weft_cq *cq, void *buf, std::size_t count, weft_addr_t *src_addr)
{
    if (cq == nullptr || (buf == nullptr && count != 0)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    return cq->read_fn(cq, buf, count, src_addr);  // per format and lock policy (core/ep.cpp)
}

}  // namespace

ssize_t weft_cq_read(weft_cq_t *cq, void *buf, size_t count)
{
    return cq_read_impl(cq, buf, count, nullptr);
}

ssize_t weft_cq_readfrom(weft_cq_t *cq, void *buf, size_t count, weft_addr_t *src_addr)
{
    return cq_read_impl(cq, buf, count, src_addr);
}

ssize_t weft_cq_readerr(weft_cq_t *cq, weft_cq_err_entry *entry, uint64_t flags)
{
    if (cq == nullptr || entry == nullptr || flags != 0) {
        return -WEFT_EINVAL;
    }
    auto take = [&]() -> ssize_t {
        if (cq->errors.empty()) {
            return -WEFT_EAGAIN;
        }
        *entry = cq->errors.front();
        cq->errors.pop_front();
        --cq->nerrors;
        return 1;
    };
    if (cq->locked) {
        weft::base::scoped_guard g(cq->lock);
        return take();
    }
    return take();
}

int weft_cq_wait(weft_cq_t *cq, int timeout_ms)
{
    if (cq == nullptr) {
        return -WEFT_EINVAL;
    }
    const std::uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : weft::base::now_ns() + std::uint64_t(timeout_ms) * 1000000;
    for (unsigned spins = 0;; ++spins) {
        if (cq->domain->info.domain_attr.progress != WEFT_PROGRESS_AUTO) {
            cq->progress();
        }
        {
            bool ready;
            if (cq->locked) {
                weft::base::scoped_guard g(cq->lock);
                ready = !cq->empty() || cq->nerrors != 0;
            } else {
                ready = !cq->empty() || cq->nerrors != 0;
            }
            if (ready) {
                return 0;
            }
        }
        if (weft::base::now_ns() >= deadline) {
            return -WEFT_ETIMEDOUT;
        }
        if (spins > 1000) {
            std::this_thread::yield();
        }
    }
}

// ------------------------------------------------------------------ counters

int weft_cntr_open(weft_domain_t *domain, const weft_cntr_attr *attr, weft_cntr_t **cntr)
{
    if (domain == nullptr || cntr == nullptr || (attr != nullptr && attr->flags != 0)) {
        return -WEFT_EINVAL;
    }
    auto *c = new (std::nothrow) weft_cntr{};
    if (c == nullptr) {
        return -WEFT_ENOMEM;
    }
    c->domain = domain;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    *cntr = c;
    return 0;
}

int weft_cntr_close(weft_cntr_t *cntr)
{
    if (cntr == nullptr) {
        return -WEFT_EINVAL;
    }
    if (cntr->busy()) {
        return -WEFT_EBUSY;
    }
    unref(cntr->domain);
    delete cntr;
    return 0;
}

uint64_t weft_cntr_read(weft_cntr_t *cntr)
{
    if (cntr == nullptr) {
        return 0;
    }
    if (cntr->domain->info.domain_attr.progress != WEFT_PROGRESS_AUTO) {
        cntr->progress();
    }
    return cntr->value.load(std::memory_order_acquire);
}

uint64_t weft_cntr_readerr(weft_cntr_t *cntr)
{
    return cntr == nullptr ? 0 : cntr->errors.load(std::memory_order_acquire);
}

int weft_cntr_add(weft_cntr_t *cntr, uint64_t value)
{
    if (cntr == nullptr) {
        return -WEFT_EINVAL;
    }
    cntr->value.fetch_add(value, std::memory_order_acq_rel);
    return 0;
}

int weft_cntr_set(weft_cntr_t *cntr, uint64_t value)
{
    if (cntr == nullptr) {
        return -WEFT_EINVAL;
    }
    cntr->value.store(value, std::memory_order_release);
    return 0;
}

int weft_cntr_wait(weft_cntr_t *cntr, uint64_t threshold, int timeout_ms)
{
    if (cntr == nullptr) {
        return -WEFT_EINVAL;
    }
    const std::uint64_t errors = cntr->errors.load(std::memory_order_acquire);
    const std::uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : weft::base::now_ns() + std::uint64_t(timeout_ms) * 1000000;
    for (unsigned spins = 0;; ++spins) {
        if (weft_cntr_read(cntr) >= threshold) {
            return 0;
        }
        if (cntr->errors.load(std::memory_order_acquire) != errors) {
            return -WEFT_EAVAIL;
        }
        if (weft::base::now_ns() >= deadline) {
            return -WEFT_ETIMEDOUT;
        }
        if (spins > 1000) {
            std::this_thread::yield();
        }
    }
}

// ------------------------------------------------------------------ address vectors

int weft_av_open(weft_domain_t *domain, const weft_av_attr *attr, weft_av_t **av)
{
    (void)attr;
    if (domain == nullptr || av == nullptr) {
        return -WEFT_EINVAL;
    }
    auto *a = new (std::nothrow) weft_av{};
    if (a == nullptr) {
        return -WEFT_ENOMEM;
    }
    a->domain = domain;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    *av = a;
    return 0;
}

int weft_av_close(weft_av_t *av)
{
    if (av == nullptr) {
        return -WEFT_EINVAL;
    }
    if (av->busy()) {
        return -WEFT_EBUSY;
    }
    unref(av->domain);
    delete av;
    return 0;
}

int weft_av_insert(weft_av_t *av, const void *addr, size_t count, weft_addr_t *fi_addr,
                   uint64_t flags)
{
    if (av == nullptr || (addr == nullptr && count != 0) || flags != 0 || count > INT32_MAX) {
        return -WEFT_EINVAL;
    }
    int inserted = 0;
    const auto *bytes = static_cast<const std::uint8_t *>(addr);
    for (std::size_t i = 0; i < count; ++i) {
        transport::wire_address a;
        std::memcpy(&a, bytes + i * sizeof(a), sizeof(a));
        const weft_addr_t idx = av->insert(a);
        if (idx == WEFT_ADDR_NOTAVAIL) {
            WEFT_LOG(core, debug, "weft_av_insert: entry %zu is not a weft address", i);
        } else {
            ++inserted;
        }
        if (fi_addr != nullptr) {
            fi_addr[i] = idx;
        }
    }
    return inserted;
}

int weft_av_remove(weft_av_t *av, const weft_addr_t *fi_addr, size_t count, uint64_t flags)
{
    if (av == nullptr || (fi_addr == nullptr && count != 0) || flags != 0) {
        return -WEFT_EINVAL;
    }
    int rc = 0;
    for (std::size_t i = 0; i < count; ++i) {
        if (const int r = av->remove(fi_addr[i]); r != 0) {
            rc = r;
        }
    }
    return rc;
}

int weft_av_lookup(weft_av_t *av, weft_addr_t fi_addr, void *addr, size_t *addrlen)
{
    if (av == nullptr || addrlen == nullptr || (addr == nullptr && *addrlen != 0)) {
        return -WEFT_EINVAL;
    }
    transport::wire_address a;
    if (av->lookup(fi_addr, a) != status::ok) {
        return -WEFT_ENOENT;
    }
    const std::size_t cap = *addrlen;
    *addrlen = sizeof(a);
    if (cap < sizeof(a)) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(addr, &a, sizeof(a));
    return 0;
}

size_t weft_av_count(weft_av_t *av)
{
    return av == nullptr ? 0 : av->count();
}

int weft_av_load_pmix(weft_av_t *av, weft_ep_t *ep, uint32_t *rank, uint32_t *size)
{
    if (av == nullptr || ep == nullptr || !ep->enabled) {
        return -WEFT_EINVAL;
    }
    if (av->count() != 0) {
        WEFT_LOG(core, error, "weft_av_load_pmix: the address vector must be empty");
        return -WEFT_EINVAL;
    }
    std::vector<std::uint8_t> all;
    std::uint32_t r = 0;
    std::uint32_t n = 0;
    const status st = core::pmix_exchange(&ep->addr, sizeof(ep->addr), all, r, n);
    if (st != status::ok) {
        return weft::base::to_c(st);
    }
    const int inserted = weft_av_insert(av, all.data(), n, nullptr, 0);
    if (inserted != static_cast<int>(n)) {
        WEFT_LOG(core, error, "weft_av_load_pmix: %d of %u addresses were valid", inserted, n);
        return inserted < 0 ? inserted : -WEFT_EBADMSG;
    }
    weft::base::log_set_rank(r);
    if (rank != nullptr) {
        *rank = r;
    }
    if (size != nullptr) {
        *size = n;
    }
    return 0;
}

// ------------------------------------------------------------------ memory regions

int weft_mr_reg(weft_domain_t *domain, const void *buf, size_t len, uint64_t access, uint64_t flags,
                weft_mr_t **mr)
{
    constexpr std::uint64_t all_access =
        WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE;
    if (domain == nullptr || mr == nullptr || (buf == nullptr && len != 0) ||
        (access & ~all_access) != 0 || flags != 0) {
        return -WEFT_EINVAL;
    }
    static std::atomic<std::uint64_t> next_key{1};
    auto *m = new (std::nothrow) weft_mr{};
    if (m == nullptr) {
        return -WEFT_ENOMEM;
    }
    m->domain = domain;
    m->buf = buf;
    m->len = len;
    m->access = access;
    m->key = next_key.fetch_add(1, std::memory_order_relaxed);
#ifdef WEFT_HAVE_VERBS
    // A domain that reaches verbs registers with the port's protection domain,
    // so the key is the one a peer's RDMA would use.
    const bool is_verbs =
        std::strncmp(domain->info.transport, "verbs", sizeof(domain->info.transport)) == 0;
    const bool is_auto =
        std::strncmp(domain->info.transport, "auto", sizeof(domain->info.transport)) == 0;
    if (len != 0 && (is_verbs || (is_auto && core::transports_for("verbs") != 0))) {
        auto r = transport::verbs::register_memory(is_verbs ? domain->info.domain_name : "", buf,
                                                   len, (access & WEFT_ACCESS_REMOTE_WRITE) != 0);
        if (!r.ok()) {
            delete m;
            return weft::base::to_c(r.error());
        }
        m->key = r.value()->rkey();
        m->verbs = std::move(r.value());
    }
#endif
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    *mr = m;
    return 0;
}

int weft_mr_close(weft_mr_t *mr)
{
    if (mr == nullptr) {
        return -WEFT_EINVAL;
    }
    unref(mr->domain);
    delete mr;
    return 0;
}

void *weft_mr_desc(weft_mr_t *mr)
{
    return mr;
}

uint64_t weft_mr_key(weft_mr_t *mr)
{
    return mr == nullptr ? 0 : mr->key;
}

// ------------------------------------------------------------------ endpoints

int weft_ep_open(weft_domain_t *domain, const weft_info *info, weft_ep_t **ep, void *context)
{
    if (domain == nullptr || !info_ok(info) || ep == nullptr) {
        return -WEFT_EINVAL;
    }
    if (core::transports_for(info->transport) == 0) {
        return -WEFT_ENODEV;
    }
    auto *e = new (std::nothrow) weft_ep{};
    if (e == nullptr) {
        return -WEFT_ENOMEM;
    }
    e->domain = domain;
    e->info = *info;
    e->info.next = nullptr;
    e->context = context;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    *ep = e;
    return 0;
}

int weft_ep_close(weft_ep_t *ep)
{
    if (ep == nullptr) {
        return -WEFT_EINVAL;
    }
    core::ep_disable(ep);
    unref(ep->tx_cq);
    if (ep->rx_cq != ep->tx_cq) {
        unref(ep->rx_cq);
    }
    unref(ep->tx_cntr);
    if (ep->rx_cntr != ep->tx_cntr) {
        unref(ep->rx_cntr);
    }
    unref(ep->av);
    unref(ep->domain);
    delete ep;
    return 0;
}

int weft_ep_bind_cq(weft_ep_t *ep, weft_cq_t *cq, uint64_t flags)
{
    constexpr std::uint64_t ok_flags = WEFT_TRANSMIT | WEFT_RECV | WEFT_SELECTIVE_COMPLETION;
    if (ep == nullptr || cq == nullptr || ep->enabled || (flags & ~ok_flags) != 0 ||
        (flags & (WEFT_TRANSMIT | WEFT_RECV)) == 0 || cq->domain != ep->domain) {
        return -WEFT_EINVAL;
    }
    if ((flags & WEFT_TRANSMIT) != 0) {
        if (ep->tx_cq != nullptr) {
            return -WEFT_EBUSY;
        }
        ep->tx_cq = cq;
        ep->tx_cq_flags = flags;
    }
    if ((flags & WEFT_RECV) != 0) {
        if (ep->rx_cq != nullptr) {
            return -WEFT_EBUSY;
        }
        ep->rx_cq = cq;
        ep->rx_cq_flags = flags;
    }
    cq->refs.fetch_add(1, std::memory_order_acq_rel);
    return 0;
}

int weft_ep_bind_cntr(weft_ep_t *ep, weft_cntr_t *cntr, uint64_t flags)
{
    if (ep == nullptr || cntr == nullptr || ep->enabled ||
        (flags & ~(WEFT_SEND | WEFT_RECV)) != 0 || flags == 0 || cntr->domain != ep->domain) {
        return -WEFT_EINVAL;
    }
    if ((flags & WEFT_SEND) != 0) {
        if (ep->tx_cntr != nullptr) {
            return -WEFT_EBUSY;
        }
        ep->tx_cntr = cntr;
    }
    if ((flags & WEFT_RECV) != 0) {
        if (ep->rx_cntr != nullptr) {
            return -WEFT_EBUSY;
        }
        ep->rx_cntr = cntr;
    }
    cntr->refs.fetch_add(1, std::memory_order_acq_rel);
    return 0;
}

int weft_ep_bind_av(weft_ep_t *ep, weft_av_t *av)
{
    if (ep == nullptr || av == nullptr || ep->enabled || av->domain != ep->domain) {
        return -WEFT_EINVAL;
    }
    if (ep->av != nullptr) {
        return -WEFT_EBUSY;
    }
    ep->av = av;
    av->refs.fetch_add(1, std::memory_order_acq_rel);
    return 0;
}

int weft_ep_enable(weft_ep_t *ep)
{
    if (ep == nullptr) {
        return -WEFT_EINVAL;
    }
    return core::ep_enable(ep);
}

int weft_ep_getname(weft_ep_t *ep, void *addr, size_t *addrlen)
{
    if (ep == nullptr || addrlen == nullptr || (addr == nullptr && *addrlen != 0)) {
        return -WEFT_EINVAL;
    }
    if (!ep->enabled) {
        WEFT_LOG(core, debug, "weft_ep_getname: the endpoint has no address before weft_ep_enable");
        return -WEFT_EINVAL;
    }
    const std::size_t cap = *addrlen;
    *addrlen = sizeof(ep->addr);
    if (cap < sizeof(ep->addr)) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(addr, &ep->addr, sizeof(ep->addr));
    return 0;
}

int weft_ep_setopt(weft_ep_t *ep, int opt, const void *val, size_t len)
{
    if (ep == nullptr || val == nullptr) {
        return -WEFT_EINVAL;
    }
    switch (opt) {
        case WEFT_OPT_VAR_MSG_THRESHOLD:
            if (len != sizeof(size_t) || ep->enabled) {
                return -WEFT_EINVAL;
            }
            std::memcpy(&ep->var_thresh, val, sizeof(size_t));
            ep->var_thresh_set = true;
            return 0;
        case WEFT_OPT_INJECT_SIZE:
        case WEFT_OPT_MAX_MSG_SIZE:
            return -WEFT_EINVAL;  // read-only
        default:
            return -WEFT_ENOENT;
    }
}

int weft_ep_getopt(weft_ep_t *ep, int opt, void *val, size_t *len)
{
    if (ep == nullptr || val == nullptr || len == nullptr) {
        return -WEFT_EINVAL;
    }
    std::size_t v = 0;
    switch (opt) {
        case WEFT_OPT_INJECT_SIZE:
            v = ep->info.ep_attr.inject_size;
            break;
        case WEFT_OPT_MAX_MSG_SIZE:
            v = ep->info.ep_attr.max_msg_size;
            break;
        case WEFT_OPT_VAR_MSG_THRESHOLD:
            v = ep->var_thresh_set ? ep->var_thresh : ep->domain->cfg.rndv_thresh;
            break;
        default:
            return -WEFT_ENOENT;
    }
    if (*len < sizeof(v)) {
        *len = sizeof(v);
        return -WEFT_ETRUNC;
    }
    *len = sizeof(v);
    std::memcpy(val, &v, sizeof(v));
    return 0;
}

int weft_ep_progress(weft_ep_t *ep)
{
    if (ep == nullptr || !ep->enabled) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    return static_cast<int>(ep->ops->progress(ep));
}

// ------------------------------------------------------------------ credits

int weft_ep_credits(weft_ep_t *ep, weft_addr_t peer, struct weft_credits *credits)
{
    if (ep == nullptr || !ep->enabled || credits == nullptr) {
        return -WEFT_EINVAL;
    }
    if (peer != WEFT_ADDR_UNSPEC && peer >= weft_av_count(ep->av)) {
        return -WEFT_EINVAL;
    }
    weft::base::scoped_guard g(ep->lock);  // a query: always take the lock
    ep->engine->credits(peer, peer == WEFT_ADDR_UNSPEC, *credits);
    return 0;
}

namespace {

ssize_t iov_cost(weft_ep_t *ep, const struct iovec *iov, size_t count)
{
    if (ep == nullptr || !ep->enabled || (iov == nullptr && count != 0) || count > proto::max_iov) {
        return -WEFT_EINVAL;
    }
    std::size_t len = 0;
    for (std::size_t i = 0; i < count; ++i) {
        len += iov[i].iov_len;
    }
    return static_cast<ssize_t>(ep->engine->message_cost(len));
}

}  // namespace

ssize_t weft_ep_sendv_cost(weft_ep_t *ep, const struct iovec *iov, size_t count)
{
    return iov_cost(ep, iov, count);
}

ssize_t weft_ep_recvv_cost(weft_ep_t *ep, const struct iovec *iov, size_t count)
{
    // A receive of this size takes as many of its sender's credits as the
    // largest message that fits it costs.
    return iov_cost(ep, iov, count);
}

// ------------------------------------------------------------------ tagged messages

ssize_t weft_tsendmsg(weft_ep_t *ep, const weft_msg_tagged *msg, uint64_t flags)
{
    constexpr std::uint64_t ok_flags = WEFT_INJECT | WEFT_REMOTE_CQ_DATA | WEFT_COMPLETION;
    if (ep == nullptr || !ep->enabled || msg == nullptr || (flags & ~ok_flags) != 0 ||
        msg->iov_count > proto::max_iov || (msg->msg_iov == nullptr && msg->iov_count != 0))
        [[unlikely]] {
        return -WEFT_EINVAL;
    }
    std::size_t len = 0;
    for (std::size_t i = 0; i < msg->iov_count; ++i) {
        len += msg->msg_iov[i].iov_len;
    }
    if (len > ep->info.ep_attr.max_msg_size ||
        ((flags & WEFT_INJECT) != 0 && len > ep->info.ep_attr.inject_size)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const proto::send_args a{msg->msg_iov, msg->iov_count, len,          msg->addr,
                             msg->tag,     msg->data,      msg->context, flags};
    return ep->ops->send(ep, a);
}

ssize_t weft_tsend(weft_ep_t *ep, const void *buf, size_t len, void *desc, weft_addr_t dest,
                   uint64_t tag, void *context)
{
    (void)desc;
    if (ep == nullptr || !ep->enabled || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.max_msg_size) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{const_cast<void *>(buf), len};
    const proto::send_args a{&iov, 1, len, dest, tag, 0, context, 0};
    return ep->ops->send(ep, a);
}

ssize_t weft_tsenddata(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t data,
                       weft_addr_t dest, uint64_t tag, void *context)
{
    (void)desc;
    if (ep == nullptr || !ep->enabled || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.max_msg_size) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{const_cast<void *>(buf), len};
    const proto::send_args a{&iov, 1, len, dest, tag, data, context, WEFT_REMOTE_CQ_DATA};
    return ep->ops->send(ep, a);
}

ssize_t weft_tsendv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count,
                    weft_addr_t dest, uint64_t tag, void *context)
{
    const weft_msg_tagged msg{iov, desc, count, dest, tag, 0, context, 0};
    return weft_tsendmsg(ep, &msg, 0);
}

ssize_t weft_tinject(weft_ep_t *ep, const void *buf, size_t len, weft_addr_t dest, uint64_t tag)
{
    if (ep == nullptr || !ep->enabled || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.inject_size) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{const_cast<void *>(buf), len};
    const proto::send_args a{&iov, 1, len, dest, tag, 0, nullptr, WEFT_INJECT};
    return ep->ops->send(ep, a);
}

ssize_t weft_tinjectdata(weft_ep_t *ep, const void *buf, size_t len, uint64_t data,
                         weft_addr_t dest, uint64_t tag)
{
    if (ep == nullptr || !ep->enabled || (buf == nullptr && len != 0) ||
        len > ep->info.ep_attr.inject_size) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{const_cast<void *>(buf), len};
    const proto::send_args a{&iov, 1,    len,     dest,
                             tag,  data, nullptr, WEFT_INJECT | WEFT_REMOTE_CQ_DATA};
    return ep->ops->send(ep, a);
}

ssize_t weft_trecv(weft_ep_t *ep, void *buf, size_t len, void *desc, weft_addr_t src, uint64_t tag,
                   uint64_t ignore, void *context)
{
    (void)desc;
    if (ep == nullptr || !ep->enabled || (buf == nullptr && len != 0)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const iovec iov{buf, len};
    const proto::recv_args a{&iov, 1, src, tag, ignore, context, 0};
    return ep->ops->recv(ep, a);
}

ssize_t weft_trecvv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count,
                    weft_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
    const weft_msg_tagged msg{iov, desc, count, src, tag, ignore, context, 0};
    return weft_trecvmsg(ep, &msg, 0);
}

ssize_t weft_trecvmsg(weft_ep_t *ep, const weft_msg_tagged *msg, uint64_t flags)
{
    constexpr std::uint64_t ok_flags = WEFT_PEEK | WEFT_CLAIM | WEFT_DISCARD | WEFT_COMPLETION;
    if (ep == nullptr || !ep->enabled || msg == nullptr || (flags & ~ok_flags) != 0 ||
        msg->iov_count > proto::max_iov || (msg->msg_iov == nullptr && msg->iov_count != 0))
        [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const proto::recv_args a{msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
                             msg->ignore,  msg->context,   flags};
    if ((flags & (WEFT_PEEK | WEFT_CLAIM | WEFT_DISCARD)) != 0) {
        return ep->ops->recv_special(ep, a);
    }
    return ep->ops->recv(ep, a);
}

int weft_cancel(weft_ep_t *ep, void *context)
{
    if (ep == nullptr || !ep->enabled) {
        return -WEFT_EINVAL;
    }
    return ep->ops->cancel(ep, context);
}

}  // extern "C"
