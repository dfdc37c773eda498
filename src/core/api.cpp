// The C ABI: argument checks, then the object model. Nothing here throws; every
// allocation that can fail on the control path is checked (new (std::nothrow)).
#include <algorithm>
#include <cstring>
#include <sys/mman.h>
#include <new>
#include <thread>

#include "base/arch.hpp"
#include "base/log.hpp"
#include "core/ep.hpp"
#include "core/handles.hpp"
#include "core/objects.hpp"
#include "core/pmix.hpp"
#include "proto/key.hpp"

using weft::base::status;
namespace core = weft::core;
namespace proto = weft::proto;
namespace transport = weft::transport;
using weft::log_core;  // WEFT_LOG(core, ...) in the C functions below

namespace {

/// What every endpoint does.
constexpr std::uint64_t default_caps = WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV |
                                       WEFT_REMOTE_CQ_DATA | WEFT_RMA | WEFT_ATOMIC | WEFT_TRIGGER;
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
    i.addr_len = transport::max_address_size;
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

/// The values of `config`, or of the environment now when it is null (an
/// invalid environment value fails, logged naming the variable).
int config_or_environment(const weft_config_t *config, weft::base::config_store &out)
{
    core::init_once();
    if (config != nullptr) {
        if (!WEFT_LIVE(config)) {
            return -WEFT_EINVAL;
        }
        out = config->store;
        return 0;
    }
    return out.read_environment() == status::ok ? 0 : -WEFT_EINVAL;
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
    // Negated as unsigned: -INT_MIN does not fit an int (it lands in default).
    const unsigned code =
        errnum < 0 ? 0U - static_cast<unsigned>(errnum) : static_cast<unsigned>(errnum);
    switch (code) {
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

int weft_getinfo(uint32_t version, const weft_info *hints, const weft_config_t *config,
                 weft_info **info)
{
    if (info == nullptr) {
        return -WEFT_EINVAL;
    }
    *info = nullptr;
    if ((version >> 16) != (WEFT_API_VERSION >> 16) ||
        (version & 0xffff) > (WEFT_API_VERSION & 0xffff)) {
        WEFT_LOG(core, error, "weft_getinfo: API version %u.%u not supported (this is %u.%u)",
                 version >> 16, version & 0xffff, WEFT_API_VERSION >> 16,
                 WEFT_API_VERSION & 0xffff);
        return -WEFT_ENOSYS;
    }
    weft::base::config_store store;
    if (const int rc = config_or_environment(config, store); rc != 0) {
        return rc;
    }
    if (hints != nullptr && (!valid_threading(hints->domain_attr.threading) ||
                             !valid_progress(hints->domain_attr.progress) ||
                             !valid_credit_mode(hints->ep_attr.credit_mode))) {
        return -WEFT_EINVAL;
    }
    if (hints != nullptr && (hints->caps & ~supported_caps) != 0) {
        return -WEFT_ENODEV;
    }
    core::core_config cfg{};
    store.load(core::core_config_table, &cfg);
    std::vector<core::transport_offer> offers;
    if (core::offered_transports(store, offers) != status::ok) {
        return -WEFT_EINVAL;
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
    // "auto" first: one endpoint that reaches each peer by the best transport
    // for it (self, shm on the node, a NIC across). Then every transport's
    // domains: one entry per resource (as libfabric's verbs provider has one per
    // port), its name the domain name.
    bool any = false;
    for (const core::transport_offer &o : offers) {
        any = any || !o.resources.empty();
    }
    bool ok = !any || add("auto", nullptr);
    for (const core::transport_offer &o : offers) {
        for (const transport::resource &r : o.resources) {
            ok = ok && add(o.comp->name, r.name.c_str());
        }
    }
    if (!ok) {
        weft_info_free(head);
        return -WEFT_ENOMEM;
    }
    if (head == nullptr) {
        return -WEFT_ENODEV;
    }
    *info = head;
    return 0;
}

// ------------------------------------------------------------------ configuration

int weft_config_read(weft_config_t **config)
{
    if (config == nullptr) {
        return -WEFT_EINVAL;
    }
    *config = nullptr;
    core::init_once();
    auto *c = new (std::nothrow) weft_config{};
    if (c == nullptr) {
        return -WEFT_ENOMEM;
    }
    if (c->store.read_environment() != status::ok) {
        delete c;
        return -WEFT_EINVAL;  // logged, naming the variable
    }
    weft::core::handle_add(c);
    *config = c;
    return 0;
}

int weft_config_modify(weft_config_t *config, const char *name, const char *value)
{
    if (!WEFT_LIVE(config) || name == nullptr || value == nullptr) {
        return -WEFT_EINVAL;
    }
    core::init_once();
    return weft::base::to_c(config->store.set(name, value));
}

int weft_config_get(const weft_config_t *config, const char *name, char *value, size_t *len)
{
    if (!WEFT_LIVE(config) || name == nullptr || len == nullptr ||
        (value == nullptr && *len != 0)) {
        return -WEFT_EINVAL;
    }
    core::init_once();
    std::string v;
    if (config->store.get(name, v) != status::ok) {
        return -WEFT_ENOENT;
    }
    const std::size_t cap = *len;
    *len = v.size() + 1;
    if (cap < v.size() + 1) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(value, v.c_str(), v.size() + 1);
    return 0;
}

int weft_config_print(const weft_config_t *config, FILE *stream, uint64_t flags)
{
    if (!WEFT_LIVE(config) || stream == nullptr ||
        (flags & ~(WEFT_CONFIG_PRINT_DOC | WEFT_CONFIG_PRINT_SET)) != 0) {
        return -WEFT_EINVAL;
    }
    core::init_once();
    for (const weft::base::config_table *t : weft::base::config_tables()) {
        bool title = false;
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const weft::base::config_field &f = t->fields[i];
            const bool set = config->store.is_set(*t, f);
            if ((flags & WEFT_CONFIG_PRINT_SET) != 0 && !set) {
                continue;
            }
            if ((flags & WEFT_CONFIG_PRINT_DOC) != 0 && !title) {
                std::fprintf(stream, "#\n# %s\n#\n", t->component_doc);
                title = true;
            }
            if ((flags & WEFT_CONFIG_PRINT_DOC) != 0) {
                std::fprintf(stream, "# %s (%s, default %s)\n", f.doc,
                             weft::base::config_type_text(f).c_str(),
                             f.default_value != nullptr ? f.default_value : "none");
            }
            std::fprintf(stream, "%s=%s\n", weft::base::config_variable_name(*t, f).c_str(),
                         config->store.text(*t, f).c_str());
        }
    }
    return std::ferror(stream) != 0 ? -WEFT_EIO : 0;
}

void weft_config_release(weft_config_t *config)
{
    if (!WEFT_LIVE(config)) {
        return;  // NULL, or released already (logged)
    }
    weft::core::handle_remove(config);
    delete config;
}

// ------------------------------------------------------------------ fabric, domain

int weft_fabric_open(const weft_info *info, const weft_config_t *config, weft_fabric_t **fabric)
{
    if (!info_ok(info) || fabric == nullptr) {
        return -WEFT_EINVAL;
    }
    auto *f = new (std::nothrow) weft_fabric{};
    if (f == nullptr) {
        return -WEFT_ENOMEM;
    }
    if (const int rc = config_or_environment(config, f->config); rc != 0) {
        delete f;
        return rc;
    }
    f->config.load(core::core_config_table, &f->cfg);
    f->info = *info;
    f->info.next = nullptr;
    weft::core::handle_add(f);
    *fabric = f;
    return 0;
}

int weft_fabric_close(weft_fabric_t *fabric)
{
    if (!WEFT_LIVE(fabric)) {
        return -WEFT_EINVAL;
    }
    if (fabric->busy()) {
        return -WEFT_EBUSY;
    }
    weft::core::handle_remove(fabric);
    delete fabric;
    return 0;
}

int weft_domain_open(weft_fabric_t *fabric, const weft_info *info, weft_domain_t **domain)
{
    if (!WEFT_LIVE(fabric) || !info_ok(info) || domain == nullptr) {
        return -WEFT_EINVAL;
    }
    auto *d = new (std::nothrow) weft_domain{};
    if (d == nullptr) {
        return -WEFT_ENOMEM;
    }
    const status st =
        core::select_resources(fabric->config, info->transport, info->domain_name, d->resources);
    if (st != status::ok) {
        WEFT_LOG(core, error,
                 "weft_domain_open: transport '%.16s' (domain '%.64s') is not available",
                 info->transport, info->domain_name);
        delete d;
        return weft::base::to_c(st);
    }
    // One memory domain per resource: weft_mr_reg registers with each.
    for (const core::selected_resource &r : d->resources) {
        auto md = r.comp->open_md(fabric->config, r.res);
        if (!md.ok()) {
            WEFT_LOG(core, error, "weft_domain_open: %s on %s: %s", r.comp->name,
                     r.res.name.c_str(), weft::base::status_string(md.error()));
            delete d;
            return weft::base::to_c(md.error());
        }
        d->mds.push_back(std::move(md.value()));
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
    d->cfg = fabric->cfg;
    fabric->refs.fetch_add(1, std::memory_order_acq_rel);
    weft::core::handle_add(d);
    *domain = d;
    return 0;
}

int weft_domain_close(weft_domain_t *domain)
{
    if (!WEFT_LIVE(domain)) {
        return -WEFT_EINVAL;
    }
    if (domain->busy()) {
        return -WEFT_EBUSY;
    }
    unref(domain->fabric);
    weft::core::handle_remove(domain);
    delete domain;
    return 0;
}

// ------------------------------------------------------------------ completion queues

int weft_cq_open(weft_domain_t *domain, const weft_cq_attr *attr, weft_cq_t **cq)
{
    if (!WEFT_LIVE(domain) || cq == nullptr) {
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
    weft::core::handle_add(c);
    *cq = c;
    return 0;
}

int weft_cq_close(weft_cq_t *cq)
{
    if (!WEFT_LIVE(cq)) {
        return -WEFT_EINVAL;
    }
    if (cq->busy()) {
        return -WEFT_EBUSY;
    }
    unref(cq->domain);
    weft::core::handle_remove(cq);
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
    if (!WEFT_LIVE(cq) || entry == nullptr || flags != 0) {
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
    if (!WEFT_LIVE(cq)) {
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
    if (!WEFT_LIVE(domain) || cntr == nullptr || (attr != nullptr && attr->flags != 0)) {
        return -WEFT_EINVAL;
    }
    auto *c = new (std::nothrow) weft_cntr{};
    if (c == nullptr) {
        return -WEFT_ENOMEM;
    }
    c->domain = domain;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    weft::core::handle_add(c);
    *cntr = c;
    return 0;
}

int weft_cntr_close(weft_cntr_t *cntr)
{
    if (!WEFT_LIVE(cntr)) {
        return -WEFT_EINVAL;
    }
    if (cntr->busy()) {
        return -WEFT_EBUSY;  // bound, armed with an endpoint's operations, or a target
    }
    weft::core::cancel_cntr_ops(cntr);
    unref(cntr->domain);
    weft::core::handle_remove(cntr);
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
    return cntr->counter.value();
}

uint64_t weft_cntr_readerr(weft_cntr_t *cntr)
{
    return cntr == nullptr ? 0 : cntr->counter.errors();
}

int weft_cntr_add(weft_cntr_t *cntr, uint64_t value)
{
    if (!WEFT_LIVE(cntr)) {
        return -WEFT_EINVAL;
    }
    cntr->counter.add(value);  // through the trigger list, as completions are
    return 0;
}

int weft_cntr_set(weft_cntr_t *cntr, uint64_t value)
{
    if (!WEFT_LIVE(cntr)) {
        return -WEFT_EINVAL;
    }
    cntr->counter.set(value);
    return 0;
}

int weft_cntr_wait(weft_cntr_t *cntr, uint64_t threshold, int timeout_ms)
{
    if (!WEFT_LIVE(cntr)) {
        return -WEFT_EINVAL;
    }
    const std::uint64_t errors = cntr->counter.errors();
    const std::uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : weft::base::now_ns() + std::uint64_t(timeout_ms) * 1000000;
    for (unsigned spins = 0;; ++spins) {
        if (weft_cntr_read(cntr) >= threshold) {
            return 0;
        }
        if (cntr->counter.errors() != errors) {
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
    if (!WEFT_LIVE(domain) || av == nullptr) {
        return -WEFT_EINVAL;
    }
    auto *a = new (std::nothrow) weft_av{};
    if (a == nullptr) {
        return -WEFT_ENOMEM;
    }
    a->domain = domain;
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    weft::core::handle_add(a);
    *av = a;
    return 0;
}

int weft_av_close(weft_av_t *av)
{
    if (!WEFT_LIVE(av)) {
        return -WEFT_EINVAL;
    }
    if (av->busy()) {
        return -WEFT_EBUSY;
    }
    unref(av->domain);
    weft::core::handle_remove(av);
    delete av;
    return 0;
}

int weft_av_insert(weft_av_t *av, const void *addr, size_t count, weft_addr_t *fi_addr,
                   uint64_t flags)
{
    if (!WEFT_LIVE(av) || (addr == nullptr && count != 0) || flags != 0 || count > INT32_MAX) {
        return -WEFT_EINVAL;
    }
    int inserted = 0;
    const auto *bytes = static_cast<const std::uint8_t *>(addr);
    for (std::size_t i = 0; i < count; ++i) {
        transport::address a;
        std::size_t used = 0;
        if (transport::address::parse(bytes, transport::max_address_size, a, &used) != status::ok) {
            // Its length cannot be trusted, so neither can where the next one
            // starts: this one takes its index as an invalid entry, the rest none.
            WEFT_LOG(core, warn,
                     "weft_av_insert: address %zu is not a weft address of this version: it and "
                     "the %zu after it are not inserted",
                     i, count - i - 1);
            const weft_addr_t idx = av->insert_invalid();
            for (std::size_t k = i; fi_addr != nullptr && k < count; ++k) {
                fi_addr[k] = idx;
            }
            return inserted > 0 ? inserted : -WEFT_EBADMSG;
        }
        bytes += used;
        const weft_addr_t idx = av->insert(a);
        if (idx == WEFT_ADDR_NOTAVAIL) {
            WEFT_LOG(core, debug, "weft_av_insert: address %zu cannot be stored", i);
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
    if (!WEFT_LIVE(av) || (fi_addr == nullptr && count != 0) || flags != 0) {
        return -WEFT_EINVAL;
    }
    int rc = 0;
    // The endpoints bound to it forget each removed index (outside the AV's
    // lock: an endpoint's progress takes its own lock, then the AV's).
    const std::vector<weft_ep *> eps = av->bound_eps();
    for (std::size_t i = 0; i < count; ++i) {
        if (const int r = av->remove(fi_addr[i]); r != 0) {
            rc = r;
            continue;
        }
        for (weft_ep *ep : eps) {
            if (ep->enabled) {
                core::ep_forget_peer(ep, static_cast<std::uint32_t>(fi_addr[i]));
            }
        }
    }
    return rc;
}

int weft_av_lookup(weft_av_t *av, weft_addr_t fi_addr, void *addr, size_t *addrlen)
{
    if (!WEFT_LIVE(av) || addrlen == nullptr || (addr == nullptr && *addrlen != 0)) {
        return -WEFT_EINVAL;
    }
    transport::address a;
    if (av->lookup(fi_addr, a) != status::ok) {
        return -WEFT_ENOENT;
    }
    const std::size_t cap = *addrlen;
    *addrlen = a.size();
    if (cap < a.size()) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(addr, a.data(), a.size());
    return 0;
}

size_t weft_av_count(weft_av_t *av)
{
    return !WEFT_LIVE(av) ? 0 : av->count();
}

int weft_av_load_pmix(weft_av_t *av, weft_ep_t *ep, uint32_t *rank, uint32_t *size)
{
    if (!WEFT_LIVE(av) || !WEFT_LIVE(ep) || !ep->enabled) {
        return -WEFT_EINVAL;
    }
    if (av->count() != 0) {
        WEFT_LOG(core, error, "weft_av_load_pmix: the address vector must be empty");
        return -WEFT_EINVAL;
    }
    std::vector<std::vector<std::uint8_t>> all;
    std::uint32_t r = 0;
    std::uint32_t n = 0;
    const status st = core::pmix_exchange(ep->addr.data(), ep->addr.size(),
                                          transport::max_address_size, all, r, n);
    if (st != status::ok) {
        return weft::base::to_c(st);
    }
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
        transport::address a;
        const bool valid = transport::address::parse(all[i].data(), all[i].size(), a) == status::ok;
        const weft_addr_t idx = valid ? av->insert(a) : av->insert_invalid();
        if (idx == WEFT_ADDR_NOTAVAIL) {
            WEFT_LOG(core, error,
                     "weft_av_load_pmix: rank %u published an invalid weft address "
                     "(another weft version?)",
                     i);
            ++bad;
        }
    }
    if (bad != 0) {
        return -WEFT_EBADMSG;
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
    constexpr std::uint64_t all_access = WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ |
                                         WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC;
    if (!WEFT_LIVE(domain) || mr == nullptr || (buf == nullptr && len != 0) ||
        (access & ~all_access) != 0 ||
        (flags & ~(WEFT_MR_RMA_EVENT | WEFT_MR_DEVICE_ATOMICS)) != 0) {
        return -WEFT_EINVAL;
    }
    auto *m = new (std::nothrow) weft_mr{};
    if (m == nullptr) {
        return -WEFT_ENOMEM;
    }
    m->domain = domain;
    m->buf = buf;
    m->len = len;
    m->access = access;
    m->flags = flags;
    // The WEFT_ACCESS_* bits are the transports' access bits (static_asserts below).
    const auto acc = static_cast<unsigned>(access);
    // Every transport of the domain registers it (a verbs port: its protection
    // domain, so that a peer's RDMA can reach it); proto/'s region table keeps it
    // for the active-message fallback of every other peer.
    if (domain->regions.add(buf, len, acc, m->am_key) != status::ok) {
        delete m;
        return -WEFT_ENOMEM;
    }
    for (auto &md : domain->mds) {
        std::uint64_t handle = 0;
        const status st =
            len == 0 ? status::ok : md->reg(const_cast<void *>(buf), len, acc, handle);
        if (st != status::ok) {
            for (std::size_t i = 0; i < m->handles.size(); ++i) {
                domain->mds[i]->dereg(m->handles[i]);
            }
            domain->regions.remove(m->am_key);
            delete m;
            return weft::base::to_c(st);
        }
        m->handles.push_back(handle);
    }
    domain->refs.fetch_add(1, std::memory_order_acq_rel);
    weft::core::handle_add(m);
    *mr = m;
    return 0;
}
static_assert(WEFT_ACCESS_LOCAL == transport::access::local);
static_assert(WEFT_ACCESS_REMOTE_READ == transport::access::remote_read);
static_assert(WEFT_ACCESS_REMOTE_WRITE == transport::access::remote_write);
static_assert(WEFT_ACCESS_REMOTE_ATOMIC == transport::access::remote_atomic);

int weft_mr_alloc(weft_domain_t *domain, size_t len, uint64_t access, uint64_t flags, void **addr,
                  weft_mr_t **mr)
{
    if (!WEFT_LIVE(domain) || addr == nullptr || mr == nullptr || len == 0) {
        return -WEFT_EINVAL;
    }
    // The first memory domain with mappable memory (shm) allocates it; the
    // others register it like any memory (verbs: for RDMA from other nodes).
    void *mem = nullptr;
    std::uint64_t handle = 0;
    int md = -1;
    for (std::size_t i = 0; i < domain->mds.size() && md < 0; ++i) {
        if (domain->mds[i]->alloc(len, mem, handle) == status::ok) {
            md = static_cast<int>(i);
        }
    }
    const std::size_t page = 4096;
    const std::size_t anon_len = (len + page - 1) / page * page;
    if (md < 0) {
        mem = mmap(nullptr, anon_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            return -WEFT_ENOMEM;
        }
    }
    auto undo = [&] {
        if (md >= 0) {
            domain->mds[static_cast<std::size_t>(md)]->free(handle);
        } else {
            munmap(mem, anon_len);
        }
    };
    if (const int rc = weft_mr_reg(domain, mem, len, access, flags, mr); rc != 0) {
        undo();
        return rc;
    }
    (*mr)->alloc_md = md;
    (*mr)->alloc_handle = handle;
    (*mr)->alloc_len = anon_len;
    *addr = mem;
    return 0;
}

int weft_mr_close(weft_mr_t *mr)
{
    if (!WEFT_LIVE(mr)) {
        return -WEFT_EINVAL;
    }
    weft_domain *d = mr->domain;
    d->regions.remove(mr->am_key);  // first: the fallback refuses the key from now on
    for (std::size_t i = 0; i < mr->handles.size(); ++i) {
        if (mr->len != 0) {
            d->mds[i]->dereg(mr->handles[i]);
        }
    }
    if (mr->alloc_md >= 0) {
        d->mds[static_cast<std::size_t>(mr->alloc_md)]->free(mr->alloc_handle);
    } else if (mr->alloc_md == -1) {
        munmap(const_cast<void *>(mr->buf), mr->alloc_len);
    }
    unref(d);
    weft::core::handle_remove(mr);
    delete mr;
    return 0;
}

void *weft_mr_desc(weft_mr_t *mr)
{
    return mr;
}

uint64_t weft_mr_key(weft_mr_t *mr)
{
    return !WEFT_LIVE(mr) ? 0 : mr->am_key;
}

int weft_mr_pack_key(weft_mr_t *mr, void *buf, size_t *len)
{
    if (!WEFT_LIVE(mr) || len == nullptr || (buf == nullptr && *len != 0)) {
        return -WEFT_EINVAL;
    }
    weft_domain *d = mr->domain;
    // The access word carries the region's mode bits above the access rights.
    const std::uint32_t word =
        static_cast<std::uint32_t>(mr->access) |
        ((mr->flags & WEFT_MR_RMA_EVENT) != 0 ? proto::key_flag_event : 0) |
        ((mr->flags & WEFT_MR_DEVICE_ATOMICS) != 0 ? proto::key_flag_device_atomics : 0);
    proto::key_builder b(reinterpret_cast<std::uint64_t>(mr->buf), mr->len, word, mr->am_key);
    for (std::size_t i = 0; i < d->mds.size(); ++i) {
        const std::size_t n = d->mds[i]->rkey_size();
        if (n == 0 || mr->len == 0) {
            continue;  // this transport's peers use the active-message fallback
        }
        std::uint8_t part[transport::max_rkey_size];
        if (n > sizeof(part) || d->mds[i]->pack_rkey(mr->handles[i], part) != status::ok ||
            b.add(d->resources[i].comp->wire_id, part, n) != status::ok) {
            return -WEFT_EIO;
        }
    }
    const std::size_t cap = *len;
    *len = b.size();
    if (cap < b.size()) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(buf, b.data(), b.size());
    return 0;
}

int weft_rkey_unpack(weft_ep_t *ep, weft_addr_t peer, const void *buf, size_t len,
                     weft_rkey_t **rkey)
{
    if (!WEFT_LIVE(ep) || !ep->enabled || buf == nullptr || rkey == nullptr) {
        return -WEFT_EINVAL;
    }
    *rkey = nullptr;
    auto *k = new (std::nothrow) weft_rkey{};
    if (k == nullptr) {
        return -WEFT_ENOMEM;
    }
    status st;
    {
        weft::base::scoped_guard g(ep->lock);  // control path: always take it
        st = proto::unpack_key(ep->stack->ch, peer, buf, len, k->key);
    }
    if (st != status::ok) {
        delete k;
        return weft::base::to_c(st);
    }
    k->ep = ep;
    weft::core::handle_add(k);
    *rkey = k;
    return 0;
}

void *weft_rkey_ptr(weft_rkey_t *rkey, uint64_t addr, size_t len)
{
    if (!WEFT_LIVE(rkey) || !rkey->key.covers(addr, len, 0)) {
        return nullptr;
    }
    weft_ep *ep = rkey->ep;
    weft::base::scoped_guard g(ep->lock);
    return proto::map_key(ep->stack->ch, rkey->key, addr, len);
}

int weft_rkey_release(weft_rkey_t *rkey)
{
    if (!WEFT_LIVE(rkey)) {
        return -WEFT_EINVAL;
    }
    weft::core::handle_remove(rkey);
    delete rkey;
    return 0;
}

// ------------------------------------------------------------------ endpoints

int weft_ep_open(weft_domain_t *domain, const weft_info *info, weft_ep_t **ep, void *context)
{
    if (!WEFT_LIVE(domain) || !info_ok(info) || ep == nullptr) {
        return -WEFT_EINVAL;
    }
    if (std::strncmp(info->transport, domain->info.transport, sizeof(info->transport)) != 0) {
        WEFT_LOG(core, error, "weft_ep_open: info for transport '%.16s', domain of '%.16s'",
                 info->transport, domain->info.transport);
        return -WEFT_EINVAL;
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
    weft::core::handle_add(e);
    *ep = e;
    return 0;
}

int weft_ep_close(weft_ep_t *ep)
{
    if (!WEFT_LIVE(ep)) {
        return -WEFT_EINVAL;
    }
    core::ep_disable(ep);
    unref(ep->tx_cq);
    if (ep->rx_cq != ep->tx_cq) {
        unref(ep->rx_cq);
    }
    for (weft_cntr *c : {ep->tx_cntr, ep->rx_cntr, ep->write_cntr, ep->read_cntr, ep->rwrite_cntr,
                         ep->rread_cntr}) {
        unref(c);  // one reference per kind it counted
    }
    if (ep->av != nullptr) {
        ep->av->detach_ep(ep);
    }
    unref(ep->av);
    unref(ep->domain);
    weft::core::handle_remove(ep);
    delete ep;
    return 0;
}

int weft_ep_bind_cq(weft_ep_t *ep, weft_cq_t *cq, uint64_t flags)
{
    constexpr std::uint64_t ok_flags = WEFT_TRANSMIT | WEFT_RECV | WEFT_SELECTIVE_COMPLETION;
    if (!WEFT_LIVE(ep) || !WEFT_LIVE(cq) || ep->enabled || (flags & ~ok_flags) != 0 ||
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
    constexpr std::uint64_t kinds =
        WEFT_SEND | WEFT_RECV | WEFT_WRITE | WEFT_READ | WEFT_REMOTE_WRITE | WEFT_REMOTE_READ;
    if (!WEFT_LIVE(ep) || !WEFT_LIVE(cntr) || ep->enabled || (flags & ~kinds) != 0 || flags == 0 ||
        cntr->domain != ep->domain) {
        return -WEFT_EINVAL;
    }
    weft_cntr **slots[] = {&ep->tx_cntr,   &ep->rx_cntr,     &ep->write_cntr,
                           &ep->read_cntr, &ep->rwrite_cntr, &ep->rread_cntr};
    const std::uint64_t bits[] = {WEFT_SEND, WEFT_RECV,         WEFT_WRITE,
                                  WEFT_READ, WEFT_REMOTE_WRITE, WEFT_REMOTE_READ};
    for (std::size_t i = 0; i < 6; ++i) {
        if ((flags & bits[i]) != 0 && *slots[i] != nullptr) {
            return -WEFT_EBUSY;
        }
    }
    for (std::size_t i = 0; i < 6; ++i) {
        if ((flags & bits[i]) != 0) {
            *slots[i] = cntr;
            cntr->refs.fetch_add(1, std::memory_order_acq_rel);  // one per kind it counts
        }
    }
    return 0;
}

int weft_ep_bind_av(weft_ep_t *ep, weft_av_t *av)
{
    if (!WEFT_LIVE(ep) || !WEFT_LIVE(av) || ep->enabled || av->domain != ep->domain) {
        return -WEFT_EINVAL;
    }
    if (ep->av != nullptr) {
        return -WEFT_EBUSY;
    }
    ep->av = av;
    av->refs.fetch_add(1, std::memory_order_acq_rel);
    av->attach_ep(ep);
    return 0;
}

int weft_ep_enable(weft_ep_t *ep)
{
    if (!WEFT_LIVE(ep)) {
        return -WEFT_EINVAL;
    }
    return core::ep_enable(ep);
}

int weft_ep_getname(weft_ep_t *ep, void *addr, size_t *addrlen)
{
    if (!WEFT_LIVE(ep) || addrlen == nullptr || (addr == nullptr && *addrlen != 0)) {
        return -WEFT_EINVAL;
    }
    if (!ep->enabled) {
        WEFT_LOG(core, debug, "weft_ep_getname: the endpoint has no address before weft_ep_enable");
        return -WEFT_EINVAL;
    }
    const std::size_t cap = *addrlen;
    *addrlen = ep->addr.size();
    if (cap < ep->addr.size()) {
        return -WEFT_ETRUNC;
    }
    std::memcpy(addr, ep->addr.data(), ep->addr.size());
    return 0;
}

int weft_ep_setopt(weft_ep_t *ep, int opt, const void *val, size_t len)
{
    if (!WEFT_LIVE(ep) || val == nullptr) {
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
        case WEFT_OPT_RNDV_THRESHOLD:
            if (len != sizeof(size_t) || ep->enabled) {
                return -WEFT_EINVAL;
            }
            std::memcpy(&ep->rndv_thresh, val, sizeof(size_t));
            ep->rndv_thresh_set = true;
            return 0;
        case WEFT_OPT_INJECT_DIRECT: {
            int on = 0;
            if (len != sizeof(on) || ep->enabled) {
                return -WEFT_EINVAL;
            }
            std::memcpy(&on, val, sizeof(on));
            if (on != 0 && on != 1) {
                return -WEFT_EINVAL;
            }
            ep->inject_direct = on == 1;
            return 0;
        }
        case WEFT_OPT_INJECT_SIZE:
        case WEFT_OPT_MAX_MSG_SIZE:
            return -WEFT_EINVAL;  // read-only
        default:
            return -WEFT_ENOENT;
    }
}

int weft_ep_getopt(weft_ep_t *ep, int opt, void *val, size_t *len)
{
    if (!WEFT_LIVE(ep) || val == nullptr || len == nullptr) {
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
        case WEFT_OPT_RNDV_THRESHOLD:
            v = ep_rndv_thresh(*ep);
            break;
        case WEFT_OPT_INJECT_DIRECT: {
            const int on = ep->inject_direct ? 1 : 0;
            if (*len < sizeof(on)) {
                *len = sizeof(on);
                return -WEFT_ETRUNC;
            }
            *len = sizeof(on);
            std::memcpy(val, &on, sizeof(on));
            return 0;
        }
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
    if (!WEFT_LIVE(ep) || !ep->enabled || credits == nullptr) {
        return -WEFT_EINVAL;
    }
    if (peer != WEFT_ADDR_UNSPEC && peer >= weft_av_count(ep->av)) {
        return -WEFT_EINVAL;
    }
    weft::base::scoped_guard g(ep->lock);  // a query: always take the lock
    ep->stack->ch.credits(peer, peer == WEFT_ADDR_UNSPEC, *credits);
    return 0;
}

namespace {

/// The total length of @p count iovec entries into @p len; false when the sum
/// does not fit a size_t, or (with @p need_base, for data transfers) an entry
/// has no base but a length.
[[gnu::always_inline]] inline bool iov_total(const struct iovec *iov, std::size_t count,
                                             std::size_t &len, bool need_base = true) noexcept
{
    len = 0;
    for (std::size_t i = 0; i < count; ++i) {
        if ((need_base && iov[i].iov_base == nullptr && iov[i].iov_len != 0) ||
            __builtin_add_overflow(len, iov[i].iov_len, &len)) [[unlikely]] {
            return false;
        }
    }
    return true;
}

ssize_t iov_cost(weft_ep_t *ep, const struct iovec *iov, size_t count)
{
    if (ep == nullptr || !ep->enabled || (iov == nullptr && count != 0) || count > proto::max_iov) {
        return -WEFT_EINVAL;
    }
    std::size_t len = 0;
    if (!iov_total(iov, count, len, false)) {  // a cost query reads no data
        return -WEFT_EINVAL;
    }
    return static_cast<ssize_t>(ep->stack->tag.message_cost(len));
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
    constexpr std::uint64_t ok_flags =
        WEFT_INJECT | WEFT_REMOTE_CQ_DATA | WEFT_COMPLETION | WEFT_TRIGGER | WEFT_COUNT;
    if (ep == nullptr || !ep->enabled || msg == nullptr || (flags & ~ok_flags) != 0 ||
        msg->iov_count > proto::max_iov || (msg->msg_iov == nullptr && msg->iov_count != 0))
        [[unlikely]] {
        return -WEFT_EINVAL;
    }
    if ((flags & WEFT_COUNT) != 0) [[unlikely]] {
        const void *c = (flags & WEFT_TRIGGER) != 0 && msg->context != nullptr
                            ? static_cast<const weft_trigger *>(msg->context)->context
                            : msg->context;
        if ((flags & WEFT_INJECT) != 0 || !weft::core::count_context_ok(ep, c, __func__)) {
            return -WEFT_EINVAL;
        }
    }
    std::size_t len = 0;
    if (!iov_total(msg->msg_iov, msg->iov_count, len) || len > ep->info.ep_attr.max_msg_size ||
        ((flags & WEFT_INJECT) != 0 && len > ep->info.ep_attr.inject_size)) [[unlikely]] {
        return -WEFT_EINVAL;
    }
    const proto::send_args a{msg->msg_iov, msg->iov_count, len,          msg->addr,
                             msg->tag,     msg->data,      msg->context, flags};
    if ((flags & WEFT_TRIGGER) != 0) [[unlikely]] {
        return weft::core::post_tsend_triggered(ep, a);
    }
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
    constexpr std::uint64_t ok_flags =
        WEFT_PEEK | WEFT_CLAIM | WEFT_DISCARD | WEFT_COMPLETION | WEFT_COUNT;
    if (ep == nullptr || !ep->enabled || msg == nullptr || (flags & ~ok_flags) != 0 ||
        msg->iov_count > proto::max_iov || (msg->msg_iov == nullptr && msg->iov_count != 0))
        [[unlikely]] {
        return -WEFT_EINVAL;
    }
    if ((flags & WEFT_COUNT) != 0) [[unlikely]] {
        if ((flags & (WEFT_PEEK | WEFT_CLAIM | WEFT_DISCARD)) != 0 ||
            !weft::core::count_context_ok(ep, msg->context, __func__)) {
            return -WEFT_EINVAL;
        }
    }
    std::size_t len = 0;
    if (!iov_total(msg->msg_iov, msg->iov_count, len)) [[unlikely]] {
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
