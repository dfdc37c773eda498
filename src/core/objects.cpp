// The object model's shared pieces: this host's identity, the choice of
// transports (through the registry only), domains' progress threads, CQ
// errors and progress, counters, and the address vector.
#include "core/objects.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "base/log.hpp"
#include "base/topo.hpp"
#include "transport/registry.hpp"

namespace weft::core {

namespace {

std::uint64_t fnv1a(const std::string &s, std::uint64_t h = 0xcbf29ce484222325ULL)
{
    for (const unsigned char c : s) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    return h;
}

/// The names in a WEFT_TRANSPORTS value ("all": every transport).
std::vector<std::string> split_list(const std::string &list)
{
    std::vector<std::string> names;
    std::size_t pos = 0;
    while (pos <= list.size()) {
        std::size_t comma = list.find(',', pos);
        if (comma == std::string::npos) {
            comma = list.size();
        }
        std::string item = list.substr(pos, comma - pos);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) {
            names.push_back(item);
        }
        pos = comma + 1;
    }
    return names;
}

}  // namespace

void init_once() noexcept
{
    static const bool done = [] {
        base::config_register(core_config_table);
        base::config_register(base::topo_config_table);
        transport::register_components();
        base::log_init();
        base::log_check_names();
        return true;
    }();
    (void)done;
}

std::uint64_t local_node_id()
{
    static const std::uint64_t id = [] {
        std::string boot_id;
        std::ifstream f("/proc/sys/kernel/random/boot_id");
        std::getline(f, boot_id);
        char host[256] = {};
        (void)gethostname(host, sizeof(host) - 1);
        return fnv1a(std::string(host), fnv1a(boot_id));
    }();
    return id;
}

base::status offered_transports(const base::config_store &config, std::vector<transport_offer> &out)
{
    out.clear();
    core_config cfg{};
    config.load(core_config_table, &cfg);
    const std::vector<std::string> names = split_list(cfg.transports);
    const bool all = names.empty() || (names.size() == 1 && names[0] == "all");
    std::vector<const transport::component *> allowed;
    for (const transport::component *c : transport::components()) {
        if (all || std::find(names.begin(), names.end(), c->name) != names.end()) {
            allowed.push_back(c);
        }
    }
    if (!all) {
        for (const std::string &n : names) {
            if (transport::find_component(n) != nullptr) {
                continue;
            }
            const transport::component *near = transport::nearest_component(n);
            if (near != nullptr) {
                WEFT_LOG(core, warn,
                         "WEFT_TRANSPORTS=%s: '%s' is not a transport; did you mean '%s'?",
                         cfg.transports.c_str(), n.c_str(), near->name);
            } else {
                std::string known;
                for (const transport::component *c : transport::components()) {
                    known += known.empty() ? "" : ", ";
                    known += c->name;
                }
                WEFT_LOG(core, warn, "WEFT_TRANSPORTS=%s: '%s' is not a transport (built: %s)",
                         cfg.transports.c_str(), n.c_str(), known.c_str());
            }
        }
        if (allowed.empty()) {
            WEFT_LOG(core, error, "WEFT_TRANSPORTS=%s names no transport of this build",
                     cfg.transports.c_str());
            return base::status::invalid;
        }
    }
    for (const transport::component *c : allowed) {
        transport_offer o{c, {}, {}};
        o.resources = c->query(config, o.why);
        out.push_back(std::move(o));
    }
    return base::status::ok;
}

base::status select_resources(const base::config_store &config, const char *name,
                              const char *domain_name, std::vector<selected_resource> &out)
{
    out.clear();
    std::vector<transport_offer> offers;
    if (const base::status st = offered_transports(config, offers); st != base::status::ok) {
        return st;
    }
    const bool any = name == nullptr || name[0] == '\0' || std::strcmp(name, "auto") == 0;
    for (const transport_offer &o : offers) {
        if (o.resources.empty() || (!any && std::strcmp(o.comp->name, name) != 0)) {
            continue;
        }
        // "auto" takes each transport's first resource (the best one it
        // reports); a named transport the one its domain names.
        const transport::resource *r = &o.resources.front();
        if (!any && domain_name != nullptr && domain_name[0] != '\0') {
            r = nullptr;
            for (const transport::resource &q : o.resources) {
                if (q.name == domain_name) {
                    r = &q;
                }
            }
            if (r == nullptr) {
                WEFT_LOG(core, error, "transport %s has no domain '%s' here", o.comp->name,
                         domain_name);
                return base::status::no_device;
            }
        }
        out.push_back({o.comp, *r});
    }
    return out.empty() ? base::status::no_device : base::status::ok;
}

}  // namespace weft::core

using weft::base::status;
namespace transport = weft::transport;

// ------------------------------------------------------------------ domain

void weft_domain::add_ep(weft_ep *ep)
{
    std::lock_guard g(eps_mutex);
    eps.push_back(ep);
    if (info.domain_attr.progress != WEFT_PROGRESS_AUTO || progress_thread.joinable()) {
        return;
    }
    // Near the caller (docs/topology.md): the CPUs of its NUMA node, not just
    // the ones it is bound to (which the thread would inherit, and compete for).
    weft::base::id_set cpus;
    if (fabric != nullptr && weft::base::topo_enabled(fabric->config)) {
        using weft::log_core;
        std::string why;
        cpus = weft::base::helper_cpus(weft::base::topology::machine(), weft::base::caller_cpus(),
                                       why);
        WEFT_LOG(core, debug, "progress thread: %s", why.c_str());
    }
    // Auto progress: poll every endpoint; sleep briefly when a round finds nothing,
    // so an idle job does not burn a core.
    progress_thread = std::thread([this, cpus] {
        if (!cpus.empty()) {
            (void)weft::base::bind_this_thread(cpus);
        }
        unsigned idle = 0;
        while (!stop.load(std::memory_order_acquire)) {
            unsigned n = 0;
            {
                std::lock_guard lg(eps_mutex);
                for (weft_ep *e : eps) {
                    n += e->ops->progress(e);
                }
            }
            if (n != 0) {
                idle = 0;
            } else if (++idle > 64) {
                std::this_thread::sleep_for(std::chrono::microseconds(cfg.progress_sleep_us));
            }
        }
    });
}

void weft_domain::remove_ep(weft_ep *ep)
{
    std::lock_guard g(eps_mutex);
    std::erase(eps, ep);
}

weft_domain::~weft_domain()
{
    stop.store(true, std::memory_order_release);
    if (progress_thread.joinable()) {
        progress_thread.join();
    }
}

// ------------------------------------------------------------------ completion queue

void weft_cq::push_error(const weft::proto::completion &c, const weft::proto::completion_error &e)
{
    weft_cq_err_entry err{};
    err.op_context = c.context;
    err.flags = c.flags;
    err.len = c.len;
    err.buf = c.buf;
    err.data = c.data;
    err.tag = c.tag;
    err.olen = e.olen;
    err.err = e.err;
    err.prov_errno = e.prov_errno;
    err.src_addr = c.src;
    switch (e.err) {
        case WEFT_ETRUNC:
            std::snprintf(err.err_str, sizeof(err.err_str),
                          "message truncated: sent %zu bytes, receive buffer %zu bytes",
                          c.len + e.olen, c.len);
            break;
        case WEFT_ECANCELED:
            std::snprintf(err.err_str, sizeof(err.err_str), "operation canceled");
            break;
        case WEFT_EHOSTUNREACH:
            std::snprintf(err.err_str, sizeof(err.err_str), "peer unreachable (address %llu): %s",
                          static_cast<unsigned long long>(c.src),
                          (c.flags & WEFT_SEND) != 0 ? "send not delivered"
                                                     : "no message can arrive from it");
            break;
        case WEFT_ENOMSG:
            std::snprintf(err.err_str, sizeof(err.err_str), "no matching message (peek)");
            break;
        default:
            std::snprintf(err.err_str, sizeof(err.err_str), "%s", weft_strerror(e.err));
            break;
    }
    if (locked) {
        weft::base::scoped_guard g(lock);
        errors.push_back(err);
        ++nerrors;
    } else {
        errors.push_back(err);
        ++nerrors;
    }
}

unsigned weft_cq::progress()
{
    if (single_ep != nullptr) [[likely]] {
        return single_ep->ops->progress(single_ep);  // per-domain threading, one endpoint
    }
    // Endpoints may be enabled or closed by other threads meanwhile: the list is
    // walked without a lock, and a close waits until no reader can see its
    // endpoint (rcu_list).
    return eps.for_each([](weft_ep *ep) { return ep->ops->progress(ep); });
}

unsigned weft_cntr::progress()
{
    return eps.for_each([](weft_ep *ep) { return ep->ops->progress(ep); });
}

// ------------------------------------------------------------------ address vector
//
// An address is stored as a template (its node id and, per blob, the id, the
// per-host bytes and the per-endpoint length), shared by every endpoint of a
// host, plus the entry: the template's index, pid, endpoint id and the
// per-endpoint bytes of its blobs (8 of them inline; more go to the spill area).

namespace {

using weft::core::av_entry;

struct av_id {
    static constexpr unsigned tmpl_bits = 18, pid_bits = 22, ep_bits = 16;
    static constexpr unsigned pid_shift = tmpl_bits, ep_shift = pid_shift + pid_bits,
                              spill_shift = ep_shift + ep_bits, valid_shift = spill_shift + 1;
    static constexpr std::uint64_t mask(unsigned bits) { return (1ULL << bits) - 1; }
    static constexpr bool fits(std::uint64_t tmpl, std::uint64_t pid, std::uint64_t ep)
    {
        return tmpl <= mask(tmpl_bits) && pid <= mask(pid_bits) && ep <= mask(ep_bits);
    }
    static constexpr std::uint64_t pack(std::uint64_t tmpl, std::uint64_t pid, std::uint64_t ep,
                                        bool spilled)
    {
        return tmpl | pid << pid_shift | ep << ep_shift |
               static_cast<std::uint64_t>(spilled) << spill_shift | 1ULL << valid_shift;
    }
    static constexpr bool valid(std::uint64_t id) { return ((id >> valid_shift) & 1) != 0; }
    static constexpr bool spilled(std::uint64_t id) { return ((id >> spill_shift) & 1) != 0; }
    static constexpr std::uint32_t tmpl(std::uint64_t id)
    {
        return static_cast<std::uint32_t>(id & mask(tmpl_bits));
    }
    static constexpr std::uint32_t pid(std::uint64_t id)
    {
        return static_cast<std::uint32_t>((id >> pid_shift) & mask(pid_bits));
    }
    static constexpr std::uint32_t ep(std::uint64_t id)
    {
        return static_cast<std::uint32_t>((id >> ep_shift) & mask(ep_bits));
    }
};
static_assert(av_id::valid_shift < 64);

}  // namespace

status weft_av::lookup(std::uint64_t index, transport::address &out) const
{
    std::lock_guard g(mutex_);
    if (index >= table_.size() || !av_id::valid(table_[index].id)) {
        return status::no_entry;
    }
    const av_entry &e = table_[index];
    const tmpl &t = tmpls_[av_id::tmpl(e.id)];
    const std::uint8_t *ep = av_id::spilled(e.id)
                                 ? spill_.data() + e.ep_word
                                 : reinterpret_cast<const std::uint8_t *>(&e.ep_word);
    transport::address_builder b({t.node_id, av_id::pid(e.id), av_id::ep(e.id)});
    std::size_t pos = 0;
    for (unsigned i = 0; i < t.nblobs; ++i) {
        const std::uint8_t id = t.shape[pos];
        const std::size_t node_len = t.shape[pos + 1];
        const std::size_t ep_len = t.shape[pos + 2];
        // It fitted when it was inserted: the same bytes fit again.
        (void)b.add(id, t.shape.data() + pos + 3, node_len, ep, ep_len);
        ep += ep_len;
        pos += 3 + node_len;
    }
    out = b.get();
    return status::ok;
}

std::uint32_t weft_av::reverse(const transport::endpoint_id &id) const
{
    std::lock_guard g(mutex_);
    const auto it = reverse_.find({id.node_id, (std::uint64_t(id.pid) << 32) | id.ep_id});
    return it == reverse_.end() ? weft::proto::unknown_source : it->second;
}

weft_addr_t weft_av::insert_invalid()
{
    std::lock_guard g(mutex_);
    table_.push_back({});
    return WEFT_ADDR_NOTAVAIL;
}

weft_addr_t weft_av::insert(const transport::address &addr)
{
    std::lock_guard g(mutex_);
    const auto index = static_cast<std::uint32_t>(table_.size());
    av_entry e{};
    // The template: node id and shape; the per-endpoint bytes apart.
    const std::uint64_t node_id = addr.node_id();
    std::string tkey(reinterpret_cast<const char *>(&node_id), sizeof(node_id));
    std::vector<std::uint8_t> shape;
    std::vector<std::uint8_t> ep;
    for (unsigned i = 0; i < addr.blob_count(); ++i) {
        const transport::address_blob b = addr.blob(i);
        shape.push_back(b.id);
        shape.push_back(static_cast<std::uint8_t>(b.node_len));
        shape.push_back(static_cast<std::uint8_t>(b.ep_len));
        shape.insert(shape.end(), b.node, b.node + b.node_len);
        ep.insert(ep.end(), b.ep, b.ep + b.ep_len);
    }
    tkey.append(reinterpret_cast<const char *>(shape.data()), shape.size());
    std::uint32_t t;
    if (auto it = tmpl_index_.find(tkey); it != tmpl_index_.end()) {
        t = it->second;
    } else {
        t = static_cast<std::uint32_t>(tmpls_.size());
        tmpls_.push_back({addr.node_id(), std::move(shape), addr.blob_count(), ep.size()});
        tmpl_index_.emplace(std::move(tkey), t);
    }
    if (index < weft::proto::unknown_source && av_id::fits(t, addr.pid(), addr.ep_id())) {
        const bool spill = ep.size() > sizeof(e.ep_word);
        if (spill) {
            e.ep_word = spill_.size();
            spill_.insert(spill_.end(), ep.begin(), ep.end());
        } else {
            std::memcpy(&e.ep_word, ep.data(), ep.size());
        }
        e.id = av_id::pack(t, addr.pid(), addr.ep_id(), spill);
        // The first index of an address wins for reverse lookups (sources).
        reverse_.try_emplace({addr.node_id(), (std::uint64_t(addr.pid()) << 32) | addr.ep_id()},
                             index);
        // Relaxed: read as a hint by the tag module (insertions()).
        insertions_.fetch_add(1, std::memory_order_relaxed);
    }
    table_.push_back(e);
    return av_id::valid(e.id) ? index : WEFT_ADDR_NOTAVAIL;
}

int weft_av::remove(weft_addr_t index)
{
    std::lock_guard g(mutex_);
    if (index >= table_.size() || !av_id::valid(table_[index].id)) {
        return -WEFT_ENOENT;
    }
    av_entry &e = table_[index];
    const tmpl &t = tmpls_[av_id::tmpl(e.id)];
    const auto it =
        reverse_.find({t.node_id, (std::uint64_t(av_id::pid(e.id)) << 32) | av_id::ep(e.id)});
    if (it != reverse_.end() && it->second == index) {
        reverse_.erase(it);
    }
    e.id = 0;
    return 0;
}

void weft_av::attach_ep(weft_ep *ep)
{
    std::lock_guard g(mutex_);
    eps_.push_back(ep);
}

void weft_av::detach_ep(weft_ep *ep)
{
    std::lock_guard g(mutex_);
    std::erase(eps_, ep);
}

std::vector<weft_ep *> weft_av::bound_eps() const
{
    std::lock_guard g(mutex_);
    return eps_;
}

std::size_t weft_av::count() const
{
    std::lock_guard g(mutex_);
    return table_.size();
}
