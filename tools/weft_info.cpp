// weft_info: list the transports of this build with their resources,
// capabilities, limits and cost models, and what weft_getinfo reports; -c
// prints every configuration variable with its type, default, value and
// description (an invalid value says why).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "base/config.hpp"
#include "base/topo.hpp"
#include "core/core_config.hpp"
#include "core/objects.hpp"
#include "transport/registry.hpp"
#include "weft/weft.h"

namespace {

std::string caps_string(std::uint64_t caps)
{
    std::string s;
    const struct {
        std::uint64_t bit;
        const char *name;
    } names[] = {{WEFT_TAGGED, "tagged"},
                 {WEFT_SOURCE, "source"},
                 {WEFT_DIRECTED_RECV, "directed_recv"},
                 {WEFT_REMOTE_CQ_DATA, "remote_cq_data"},
                 {WEFT_RMA, "rma"},
                 {WEFT_ATOMIC, "atomic"},
                 {WEFT_TRIGGER, "trigger"},
                 {WEFT_VARIABLE_MSG, "variable_msg"}};
    for (const auto &n : names) {
        if ((caps & n.bit) != 0) {
            s += s.empty() ? "" : ",";
            s += n.name;
        }
    }
    return s;
}

std::string tl_caps_string(std::uint64_t caps)
{
    namespace cap = weft::transport::cap;
    std::string s;
    const struct {
        std::uint64_t bit;
        const char *name;
    } names[] = {{cap::am, "am"},
                 {cap::put, "put"},
                 {cap::get, "get"},
                 {cap::atomic, "atomic"},
                 {cap::loopback, "loopback"},
                 {cap::shared_rx, "shared_rx"},
                 {cap::on_demand, "on_demand"}};
    for (const auto &n : names) {
        if ((caps & n.bit) != 0) {
            s += s.empty() ? "" : ",";
            s += n.name;
        }
    }
    return s;
}

std::string atomic_ops(std::uint32_t mask)
{
    static const char *names[] = {"add", "and", "or", "xor", "swap", "cswap"};
    std::string s;
    for (unsigned i = 0; i < weft::transport::atomic_op_count; ++i) {
        if ((mask & (1u << i)) != 0) {
            s += s.empty() ? "" : ",";
            s += names[i];
        }
    }
    return s.empty() ? "-" : s;
}

std::string size_text(std::size_t v)
{
    return v == SIZE_MAX ? "inf" : std::to_string(v);
}

int print_config_markdown()
{
    weft::core::init_once();
    for (const weft::base::config_table *t : weft::base::config_tables()) {
        std::printf("### %s\n\n| Variable | Type | Default | Description |\n|---|---|---|---|\n",
                    t->component_doc);
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const auto &f = t->fields[i];
            const std::string type = weft::base::config_type_text(f);
            std::printf("| `%s` | %s | `%s` | %s |\n",
                        weft::base::config_variable_name(*t, f).c_str(), type.c_str(),
                        f.default_value, f.doc);
        }
        std::printf("\n");
    }
    return 0;
}

int print_config()
{
    weft::core::init_once();
    int bad = 0;
    for (const weft::base::config_table *t : weft::base::config_tables()) {
        std::printf("# %s\n", t->component_doc);
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const auto &f = t->fields[i];
            const std::string type = weft::base::config_type_text(f);
            const std::string value = weft::base::config_current_text(*t, f);
            std::string error;
            const bool valid =
                weft::base::config_check_value(f, value.c_str(), &error) == weft::base::status::ok;
            bad += valid ? 0 : 1;
            std::printf("%-30s %-14s default=%-8s value=%-8s %s%s%s\n",
                        weft::base::config_variable_name(*t, f).c_str(), type.c_str(),
                        f.default_value, value.c_str(),
                        valid ? "" : "INVALID: ", valid ? "" : error.c_str(), valid ? f.doc : "");
        }
        std::printf("\n");
    }
    for (const weft::base::config_unknown &u : weft::base::config_find_unknown()) {
        std::printf("%s: not a weft variable%s%s\n", u.name.c_str(),
                    u.suggestion.empty() ? "" : "; did you mean ", u.suggestion.c_str());
    }
    return bad == 0 ? 0 : 1;
}

/// Every transport of this build: its resources here, and, for each, the
/// attributes of an instance (opened and closed again).
void print_transports(const char *only)
{
    weft::base::config_store store;
    (void)store.read_environment();
    std::vector<weft::core::transport_offer> offers;
    (void)weft::core::offered_transports(store, offers);
    for (const weft::transport::component *c : weft::transport::components()) {
        if (only != nullptr && std::strcmp(only, c->name) != 0) {
            continue;
        }
        const weft::core::transport_offer *o = nullptr;
        for (const auto &x : offers) {
            o = x.comp == c ? &x : o;
        }
        std::printf("transport %s (wire id %u): %s\n", c->name, c->wire_id, c->description);
        if (o == nullptr) {
            std::printf("    not used: WEFT_TRANSPORTS leaves it out\n");
            continue;
        }
        if (o->resources.empty()) {
            std::printf("    not available: %s\n", o->why.c_str());
            continue;
        }
        for (const weft::transport::resource &r : o->resources) {
            std::printf("    domain %s: %s\n", r.name.c_str(), r.detail.c_str());
            auto md = c->open_md(store, r);
            if (!md.ok()) {
                std::printf("        cannot open: %s\n", weft::base::status_string(md.error()));
                continue;
            }
            const weft::transport::open_params p{weft::core::local_node_id(),
                                                 static_cast<std::uint32_t>(getpid()), 0xfffe};
            auto tl = c->open(p, r, *md.value(), store);
            if (!tl.ok()) {
                std::printf("        cannot open: %s\n", weft::base::status_string(tl.error()));
                continue;
            }
            const weft::transport::attributes &a = tl.value()->attr();
            std::printf("        caps:      %s\n", tl_caps_string(a.caps).c_str());
            std::printf("        sizes:     short %s, bcopy %s, header %s, put %s, get %s\n",
                        size_text(a.max_short).c_str(), size_text(a.max_bcopy).c_str(),
                        size_text(a.max_hdr).c_str(), size_text(a.max_put).c_str(),
                        size_text(a.max_get).c_str());
            std::printf("        atomics:   32-bit %s / fetching %s; 64-bit %s / fetching %s\n",
                        atomic_ops(a.atomic32).c_str(), atomic_ops(a.atomic32f).c_str(),
                        atomic_ops(a.atomic64).c_str(), atomic_ops(a.atomic64f).c_str());
            std::printf("        cost:      overhead %.0f ns, latency %.0f ns, %.0f MB/s\n",
                        a.cost.overhead_ns, a.cost.latency_ns, a.cost.bandwidth_mbps);
            if (a.get_cost.bandwidth_mbps > 0) {
                std::printf("        get cost:  overhead %.0f ns, latency %.0f ns, %.0f MB/s\n",
                            a.get_cost.overhead_ns, a.get_cost.latency_ns,
                            a.get_cost.bandwidth_mbps);
            }
            std::printf("        rkeys:     %zu bytes\n", md.value()->rkey_size());
        }
    }
}

/// The placement decisions (docs/topology.md): where the topology comes
/// from, the caller's CPUs and NUMA node, and every RDMA device and network
/// interface, nearest first (the order the verbs and tcp transports use).
void print_topology()
{
    namespace b = weft::base;
    b::config_store store;
    (void)store.read_environment();
    if (!b::topo_enabled(store)) {
        std::printf(
            "topology: placement off (WEFT_TOPO_PLACEMENT=off): devices in the "
            "system's order, memory where the kernel puts it, the progress thread on "
            "the CPUs it inherits\n\n");
        return;
    }
    const b::topology &t = b::topology::machine();
    const b::id_set cpus = b::caller_cpus();
    std::printf("topology: %s%s\n", t.summary().c_str(),
                t.source() == b::topo_source::sysfs ? " (no hwloc: sysfs fallback)" : "");
    std::string why;
    const int node = b::local_node(t, cpus, why);
    std::printf("    caller:    CPUs %s\n", b::id_set_text(cpus).c_str());
    if (node >= 0) {
        std::printf("    memory:    shm segments and verbs buffers on NUMA node %d (%s)\n", node,
                    why.c_str());
    } else {
        std::printf("    memory:    left to the kernel (%s)\n", why.c_str());
    }
    const b::id_set helper = b::helper_cpus(t, cpus, why);
    std::printf("    progress:  the auto-progress thread %s%s (%s)\n",
                helper.empty() ? "keeps the caller's CPUs" : "runs on CPUs ",
                b::id_set_text(helper).c_str(), why.c_str());
    for (const b::io_class c : {b::io_class::rdma, b::io_class::net}) {
        const std::vector<std::string> names = b::list_devices(c);
        const std::vector<b::device_place> places = b::locate_all(t, c, names, cpus);
        std::vector<std::size_t> order(names.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
            return b::nearer(places[x], places[y]);
        });
        const char *kind = c == b::io_class::rdma ? "rdma" : "net";
        for (std::size_t i : order) {
            std::printf("    %-4s %-10s %s: %s\n", kind, names[i].c_str(),
                        b::nearness_name(places[i].near), places[i].why.c_str());
        }
    }
    std::printf("\n");
}

void usage(const char *prog)
{
    std::printf(
        "usage: %s [-c] [-m] [-t TRANSPORT]\n"
        "  list weft's transports (resources, capabilities, limits, cost model) and what\n"
        "  weft_getinfo reports\n"
        "  -c            print every configuration variable (type, default, value, doc);\n"
        "                exit 1 if a value in the environment is invalid\n"
        "  -m            the variables as Markdown tables (docs/configuration.md)\n"
        "  -t TRANSPORT  only this transport (auto, or a name listed without -t)\n",
        prog);
}

}  // namespace

int main(int argc, char **argv)
{
    const char *transport = nullptr;
    int opt;
    while ((opt = getopt(argc, argv, "cmt:h")) != -1) {
        switch (opt) {
            case 'c':
                return print_config();
            case 'm':
                return print_config_markdown();
            case 't':
                transport = optarg;
                break;
            case 'h':
                usage(argv[0]);
                return 0;
            default:
                usage(argv[0]);
                return 2;
        }
    }
    weft::core::init_once();
    if (transport == nullptr) {
        print_topology();
    }
    print_transports(transport);
    weft_info *hints = weft_info_alloc();
    if (hints == nullptr) {
        return 1;
    }
    hints->caps = WEFT_VARIABLE_MSG;  // list the capabilities offered on request too
    if (transport != nullptr) {
        std::snprintf(hints->transport, sizeof(hints->transport), "%s", transport);
    }
    weft_info *list = nullptr;
    const int rc = weft_getinfo(WEFT_API_VERSION, hints, nullptr, &list);
    weft_info_free(hints);
    if (rc != 0) {
        std::fprintf(stderr, "weft_info: weft_getinfo: %s\n", weft_strerror(rc));
        return 1;
    }
    std::printf("\nweft_getinfo:\n");
    for (const weft_info *i = list; i != nullptr; i = i->next) {
        std::printf("transport: %s\n", i->transport);
        std::printf("    domain:        %s\n", i->domain_name);
        std::printf("    caps:          %s\n", caps_string(i->caps).c_str());
        std::printf("    addr_len:      %zu\n", i->addr_len);
        std::printf("    inject_size:   %zu\n", i->ep_attr.inject_size);
        std::printf("    max_msg_size:  %zu\n", i->ep_attr.max_msg_size);
        std::printf("    tx_size:       %zu\n", i->ep_attr.tx_size);
        std::printf("    rx_size:       %zu\n", i->ep_attr.rx_size);
        std::printf("    iov_limit:     %zu\n", i->ep_attr.iov_limit);
        std::printf("    msg_order:     %s\n",
                    (i->ep_attr.msg_order & WEFT_ORDER_SAS) != 0 ? "sas" : "none");
        std::printf("    progress:      %s\n",
                    i->domain_attr.progress == WEFT_PROGRESS_AUTO ? "auto" : "manual");
        std::printf("    threading:     %s\n",
                    i->domain_attr.threading == WEFT_THREAD_DOMAIN ? "domain" : "safe");
    }
    weft_info_free(list);
    return 0;
}
