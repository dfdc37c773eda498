// Interface selection and dial order of the tcp transport (ifsel.hpp).

#include "transport/tcp/ifsel.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace weft::transport::tcp {

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

bool valid_name(std::string_view s)
{
    if (s.empty() || s.size() >= IFNAMSIZ) {
        return false;
    }
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.' || c == '@';
    });
}

/// Whether item `it` names address `a`.
bool matches(const if_item &it, const if_addr &a)
{
    return it.subnet ? in_subnet(a.addr, it.net) : it.name == a.name;
}

bool usable(const if_addr &a)
{
    return a.up && (a.addr.family == 4 || a.addr.family == 6) && !is_link_local6(a.addr);
}

}  // namespace

bool parse_cidr(std::string_view text, ip_addr &out)
{
    text = trim(text);
    std::string_view host = text;
    int prefix = -1;
    if (const std::size_t slash = text.find('/'); slash != std::string_view::npos) {
        host = text.substr(0, slash);
        const std::string_view p = text.substr(slash + 1);
        if (p.empty() || p.size() > 3 ||
            !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return false;
        }
        prefix = std::atoi(std::string(p).c_str());
    }
    const std::string h(host);
    ip_addr a;
    if (inet_pton(AF_INET, h.c_str(), a.bytes) == 1) {
        a.family = 4;
    } else if (inet_pton(AF_INET6, h.c_str(), a.bytes) == 1) {
        a.family = 6;
    } else {
        return false;
    }
    const int bits = static_cast<int>(ip_len(a.family) * 8);
    if (prefix > bits) {
        return false;
    }
    a.prefix = static_cast<std::uint8_t>(prefix < 0 ? bits : prefix);
    out = a;
    return true;
}

std::string ip_text(const ip_addr &a)
{
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(a.family == 4 ? AF_INET : AF_INET6, a.bytes, buf, sizeof(buf)) == nullptr) {
        return "?";
    }
    return buf;
}

std::string cidr_text(const ip_addr &a)
{
    return ip_text(a) + "/" + std::to_string(a.prefix);
}

base::status parse_if_spec(std::string_view text, if_spec &out, std::string &error)
{
    out = {};
    text = trim(text);
    if (text.empty() || text == "auto") {
        return base::status::ok;
    }
    out.m = if_spec::mode::include;
    if (text.front() == '^') {
        out.m = if_spec::mode::exclude;
        text.remove_prefix(1);
    }
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t comma = text.find(',', pos);
        if (comma == std::string_view::npos) {
            comma = text.size();
        }
        const std::string_view item = trim(text.substr(pos, comma - pos));
        pos = comma + 1;
        if (item.empty()) {
            error = "an empty item";
            return base::status::invalid;
        }
        if (item.front() == '^') {
            error = "'" + std::string(item) +
                    "': ^ excludes the whole list and goes only in front of it (\"^a,b\")";
            return base::status::invalid;
        }
        if_item it;
        const bool looks_numeric = item.find('/') != std::string_view::npos ||
                                   item.find(':') != std::string_view::npos ||
                                   (item.front() >= '0' && item.front() <= '9');
        if (looks_numeric && parse_cidr(item, it.net)) {
            it.subnet = true;
        } else if (item.find('/') == std::string_view::npos && valid_name(item)) {
            it.name = std::string(item);
        } else {
            error = "'" + std::string(item) + "' is neither an interface name nor a subnet " +
                    "(address/prefix, e.g. 10.0.0.0/8 or fd00::/64)";
            return base::status::invalid;
        }
        out.items.push_back(std::move(it));
    }
    return base::status::ok;
}

std::vector<if_addr> select_addresses(const if_spec &spec, const std::vector<if_addr> &all)
{
    std::vector<if_addr> picked;
    auto listed = [&](const if_addr &a) {
        return std::any_of(spec.items.begin(), spec.items.end(),
                           [&](const if_item &it) { return matches(it, a); });
    };
    if (spec.m == if_spec::mode::include) {
        for (const if_addr &a : all) {
            if (usable(a) && listed(a)) {
                picked.push_back(a);
            }
        }
    } else {
        const bool exclude = spec.m == if_spec::mode::exclude;
        for (const if_addr &a : all) {
            if (usable(a) && !a.loopback && !(exclude && listed(a))) {
                picked.push_back(a);
            }
        }
        if (picked.empty()) {
            // Nothing but loopback: the transport still reaches this node.
            for (const if_addr &a : all) {
                if (usable(a) && a.loopback && !(exclude && listed(a))) {
                    picked.push_back(a);
                }
            }
        }
    }
    // IPv4 first (the more common route between nodes), otherwise as the
    // machine lists them.
    std::stable_sort(picked.begin(), picked.end(), [](const if_addr &x, const if_addr &y) {
        return x.addr.family < y.addr.family;
    });
    return picked;
}

std::vector<if_addr> nearest_first(std::vector<if_addr> picked, const base::topology &t,
                                   const base::id_set &cpus, std::vector<std::string> *why)
{
    std::vector<std::string> names;
    for (const if_addr &a : picked) {
        if (std::find(names.begin(), names.end(), a.name) == names.end()) {
            names.push_back(a.name);
        }
    }
    const std::vector<base::device_place> places =
        base::locate_all(t, base::io_class::net, names, cpus);
    const auto rank = [&](const if_addr &a) -> const base::device_place & {
        const auto i =
            static_cast<std::size_t>(std::find(names.begin(), names.end(), a.name) - names.begin());
        return places[i];
    };
    std::stable_sort(picked.begin(), picked.end(), [&](const if_addr &x, const if_addr &y) {
        return base::nearer(rank(x), rank(y));
    });
    if (why != nullptr) {
        why->clear();
        for (std::size_t i = 0; i < names.size(); ++i) {
            why->push_back(names[i] + ": " + base::nearness_name(places[i].near) + ": " +
                           places[i].why);
        }
    }
    return picked;
}

std::vector<if_addr> local_addresses()
{
    std::vector<if_addr> out;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) {
        return out;
    }
    for (const ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_name == nullptr) {
            continue;
        }
        if_addr a;
        a.name = i->ifa_name;
        a.up = (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_RUNNING) != 0;
        a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
        const int fam = i->ifa_addr->sa_family;
        unsigned prefix = 0;
        const auto count_bits = [](const std::uint8_t *m, std::size_t n) {
            unsigned bits = 0;
            for (std::size_t k = 0; k < n; ++k) {
                bits += static_cast<unsigned>(__builtin_popcount(m[k]));
            }
            return bits;
        };
        if (fam == AF_INET) {
            const auto *sin = reinterpret_cast<const sockaddr_in *>(i->ifa_addr);
            a.addr.family = 4;
            std::memcpy(a.addr.bytes, &sin->sin_addr, 4);
            if (i->ifa_netmask != nullptr) {
                const auto *m = reinterpret_cast<const sockaddr_in *>(i->ifa_netmask);
                prefix = count_bits(reinterpret_cast<const std::uint8_t *>(&m->sin_addr), 4);
            }
        } else if (fam == AF_INET6) {
            const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(i->ifa_addr);
            a.addr.family = 6;
            std::memcpy(a.addr.bytes, &sin6->sin6_addr, 16);
            if (i->ifa_netmask != nullptr) {
                const auto *m = reinterpret_cast<const sockaddr_in6 *>(i->ifa_netmask);
                prefix = count_bits(reinterpret_cast<const std::uint8_t *>(&m->sin6_addr), 16);
            }
        } else {
            continue;
        }
        a.addr.prefix = static_cast<std::uint8_t>(prefix);
        a.loopback = a.loopback || is_loopback(a.addr);
        out.push_back(std::move(a));
    }
    freeifaddrs(list);
    return out;
}

std::vector<dial_target> dial_targets(const peer_blob &peer, bool same_node,
                                      const std::vector<if_addr> &mine)
{
    std::vector<dial_target> near;  // same subnet as one of ours
    std::vector<dial_target> far;   // routed
    std::vector<dial_target> lo;    // the peer's loopback (same node only)
    for (unsigned i = 0; i < peer.count; ++i) {
        const peer_listener &p = peer.at[i];
        if (is_link_local6(p.addr)) {
            continue;
        }
        if (is_loopback(p.addr)) {
            if (same_node) {
                lo.push_back({p, {}});
            }
            continue;
        }
        const if_addr *local = nullptr;
        bool family = false;
        for (const if_addr &m : mine) {
            if (m.addr.family != p.addr.family || m.loopback) {
                continue;
            }
            family = true;
            ip_addr net = m.addr;
            if (in_subnet(p.addr, net)) {
                local = &m;
                break;
            }
        }
        if (local != nullptr) {
            near.push_back({p, local->addr});
        } else if (family || same_node) {
            // On this node every one of its addresses is one of ours.
            far.push_back({p, {}});
        }
    }
    near.insert(near.end(), far.begin(), far.end());
    near.insert(near.end(), lo.begin(), lo.end());
    return near;
}

}  // namespace weft::transport::tcp
