#include "config.h"  // WEFT_HAVE_* from configure
#include "core/objects.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#include "base/log.hpp"
#include "transport/shm/shm.hpp"
#include "transport/verbs/verbs.hpp"

namespace weft::core {

namespace {

std::uint64_t fnv1a(const std::string &s, std::uint64_t h = 0xcbf29ce484222325ULL)
{
    for (const unsigned char c : s) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    return h;
}

}  // namespace

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

unsigned available_transports()
{
    const std::string &list = global_config().transports;  // first: it sets up logging
    unsigned bits = 1u << unsigned(transport::transport_kind::self);
    if (access("/dev/shm", W_OK) == 0) {
        bits |= 1u << unsigned(transport::transport_kind::shm);
    }
#ifdef WEFT_HAVE_VERBS
    if (!transport::verbs::active_ports().empty()) {
        bits |= 1u << unsigned(transport::transport_kind::verbs);
    }
#endif
    // Only transports the configuration allows.
    if (list == "all" || list.empty()) {
        return bits;
    }
    unsigned allowed = 0;
    for (const auto &[name, kind] : {std::pair{"self", transport::transport_kind::self},
                                     std::pair{"shm", transport::transport_kind::shm},
                                     std::pair{"verbs", transport::transport_kind::verbs}}) {
        if (list.find(name) != std::string::npos) {
            allowed |= 1u << unsigned(kind);
        }
    }
    return bits & allowed;
}

unsigned transports_for(const char *name)
{
    const unsigned avail = available_transports();
    if (name == nullptr || name[0] == '\0' || std::strcmp(name, "auto") == 0) {
        return avail;
    }
    for (const auto &[n, kind] : {std::pair{"self", transport::transport_kind::self},
                                  std::pair{"shm", transport::transport_kind::shm},
                                  std::pair{"verbs", transport::transport_kind::verbs}}) {
        if (std::strcmp(name, n) == 0) {
            return avail & (1u << unsigned(kind));
        }
    }
    return 0;
}

const core_config &global_config()
{
    static const core_config cfg = [] {
        base::log_register(transport::shm::log_shm);
#ifdef WEFT_HAVE_VERBS
        base::log_register(transport::verbs::log_verbs);
#endif
        base::log_init();
        base::log_check_names();
        core_config c{};
        base::config_register(core_config_table);
        base::config_register(transport::shm::config_table());
#ifdef WEFT_HAVE_VERBS
        base::config_register(transport::verbs::config_table());
#endif
        if (base::config_load(core_config_table, &c) != base::status::ok) {
            // The error was logged by config_load; fall back to the defaults.
            core_config d{};
            for (const auto &f : core_config_fields) {
                (void)base::config_parse_value(f, f.default_value, base::config_member(f, &d),
                                               nullptr);
            }
            c = d;
        }
        base::config_check_unknown();
        return c;
    }();
    return cfg;
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
    // Auto progress: poll every endpoint; sleep briefly when a round finds nothing,
    // so an idle job does not burn a core.
    progress_thread = std::thread([this] {
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

namespace {

// Thread-safe domains may enable an endpoint while another thread reads the CQ:
// guard the list there. A per-domain threading level serialises both already.
template <class Obj>
unsigned progress_bound(Obj &o, bool locked)
{
    unsigned n = 0;
    if (locked) {
        std::lock_guard g(o.eps_mutex);
        for (weft_ep *ep : o.eps) {
            n += ep->ops->progress(ep);
        }
        return n;
    }
    for (weft_ep *ep : o.eps) {
        n += ep->ops->progress(ep);
    }
    return n;
}

}  // namespace

unsigned weft_cq::progress()
{
    if (!locked && single_ep != nullptr) [[likely]] {
        return single_ep->ops->progress(single_ep);
    }
    return progress_bound(*this, locked);
}

unsigned weft_cntr::progress()
{
    return progress_bound(*this, domain->info.domain_attr.threading != WEFT_THREAD_DOMAIN);
}

// ------------------------------------------------------------------ address vector

status weft_av::lookup(std::uint64_t index, transport::wire_address &out) const
{
    using weft::core::av_id;
    std::lock_guard g(mutex_);
    if (index >= table_.size() || !av_id::valid(table_[index].id)) {
        return status::no_entry;
    }
    const auto &e = table_[index];
    const auto &node = nodes_[av_id::node(e.id)];
    out = {};
    out.magic = transport::wire_address_magic;
    out.version = transport::wire_address_version;
    out.transports = av_id::tl(e.id);
    out.node_id = node.node_id;
    out.pid = av_id::pid(e.id);
    out.ep_id = av_id::ep(e.id);
    std::memcpy(out.transport_specific, &e.ep_word, transport::wire_address_ep_bytes);
    std::memcpy(out.transport_specific + transport::wire_address_ep_bytes, node.bytes,
                transport::wire_address_node_bytes);
    return status::ok;
}

std::uint32_t weft_av::reverse(const transport::wire_address &addr) const
{
    std::lock_guard g(mutex_);
    const auto it = reverse_.find({addr.node_id, (std::uint64_t(addr.pid) << 32) | addr.ep_id});
    return it == reverse_.end() ? weft::proto::unknown_source : it->second;
}

weft_addr_t weft_av::insert(const transport::wire_address &addr)
{
    using weft::core::av_id;
    std::lock_guard g(mutex_);
    const auto index = static_cast<std::uint32_t>(table_.size());
    weft::core::av_entry e{};
    const std::uint8_t *node_bytes = addr.transport_specific + transport::wire_address_ep_bytes;
    if (addr.magic == transport::wire_address_magic &&
        addr.version == transport::wire_address_version && index < weft::proto::unknown_source) {
        // Intern the host: same node id and same per-host bytes share one node entry.
        std::uint32_t node = UINT32_MAX;
        auto &candidates = node_index_[addr.node_id];
        for (const std::uint32_t n : candidates) {
            if (std::memcmp(nodes_[n].bytes, node_bytes, transport::wire_address_node_bytes) == 0) {
                node = n;
                break;
            }
        }
        if (node == UINT32_MAX) {
            node = static_cast<std::uint32_t>(nodes_.size());
            weft::core::av_node entry{addr.node_id, {}};
            std::memcpy(entry.bytes, node_bytes, sizeof(entry.bytes));
            nodes_.push_back(entry);
            candidates.push_back(node);
        }
        if (av_id::fits(node, addr.pid, addr.ep_id, addr.transports)) {
            e.id = av_id::pack(node, addr.pid, addr.ep_id, addr.transports);
            std::memcpy(&e.ep_word, addr.transport_specific, sizeof(e.ep_word));
            // The first index of an address wins for reverse lookups (sources).
            reverse_.try_emplace({addr.node_id, (std::uint64_t(addr.pid) << 32) | addr.ep_id},
                                 index);
        }
    }
    table_.push_back(e);
    return av_id::valid(e.id) ? index : WEFT_ADDR_NOTAVAIL;
}

int weft_av::remove(weft_addr_t index)
{
    std::lock_guard g(mutex_);
    if (index >= table_.size() || !weft::core::av_id::valid(table_[index].id)) {
        return -WEFT_ENOENT;
    }
    using weft::core::av_id;
    auto &e = table_[index];
    const auto it = reverse_.find({nodes_[av_id::node(e.id)].node_id,
                                   (std::uint64_t(av_id::pid(e.id)) << 32) | av_id::ep(e.id)});
    if (it != reverse_.end() && it->second == index) {
        reverse_.erase(it);
    }
    e.id = 0;
    return 0;
}

std::size_t weft_av::count() const
{
    std::lock_guard g(mutex_);
    return table_.size();
}
