// weft_info: list transports with their capabilities and limits; -c prints every
// configuration variable with its type, default, current value and description.
#include "config.h"  // WEFT_HAVE_* from configure
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "base/config.hpp"
#include "transport/verbs/verbs.hpp"
#include "core/core_config.hpp"
#include "weft/weft.h"

namespace {

const char *type_name(weft::base::config_type t)
{
    using weft::base::config_type;
    switch (t) {
        case config_type::size:
            return "size";
        case config_type::uint:
            return "uint";
        case config_type::integer:
            return "int";
        case config_type::boolean:
            return "bool";
        case config_type::ternary:
            return "yes|no|auto";
        case config_type::string:
            return "string";
        case config_type::time_us:
            return "time";
        case config_type::choice:
            return "choice";
    }
    return "?";
}

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

int print_config_markdown()
{
    (void)weft::core::global_config();
    for (const weft::base::config_table *t : weft::base::config_tables()) {
        std::printf("### %s\n\n| Variable | Type | Default | Description |\n|---|---|---|---|\n",
                    t->component_doc);
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const auto &f = t->fields[i];
            const std::string name = std::string("WEFT_") +
                                     (t->prefix[0] != '\0' ? std::string(t->prefix) + "_" : "") +
                                     f.name;
            std::string type = type_name(f.type);
            if (f.choices != nullptr) {
                type += " (" + std::string(f.choices) + ")";
            }
            std::printf("| `%s` | %s | `%s` | %s |\n", name.c_str(), type.c_str(), f.default_value,
                        f.doc);
        }
        std::printf("\n");
    }
    return 0;
}

int print_config()
{
    (void)weft::core::global_config();  // registers every component's table
    for (const weft::base::config_table *t : weft::base::config_tables()) {
        std::printf("# %s\n", t->component_doc);
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const auto &f = t->fields[i];
            const std::string name = std::string("WEFT_") +
                                     (t->prefix[0] != '\0' ? std::string(t->prefix) + "_" : "") +
                                     f.name;
            std::string type = type_name(f.type);
            if (f.choices != nullptr) {
                type += "(" + std::string(f.choices) + ")";
            }
            std::printf("%-30s %-14s default=%-8s value=%-8s %s\n", name.c_str(), type.c_str(),
                        f.default_value, weft::base::config_current_text(*t, f).c_str(), f.doc);
        }
        std::printf("\n");
    }
    return 0;
}

void usage(const char *prog)
{
    std::printf(
        "usage: %s [-c] [-t TRANSPORT]\n"
        "  list weft transports with their capabilities and limits\n"
        "  -c            print every configuration variable (type, default, value, doc)\n"
        "  -m            the same as Markdown tables (docs/configuration.md)\n"
        "  -t TRANSPORT  only this transport (auto, shm, self, verbs)\n",
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
    weft_info *hints = weft_info_alloc();
    if (hints == nullptr) {
        return 1;
    }
    hints->caps = WEFT_VARIABLE_MSG;  // list the capabilities offered on request too
    if (transport != nullptr) {
        std::snprintf(hints->transport, sizeof(hints->transport), "%s", transport);
    }
    weft_info *list = nullptr;
    const int rc = weft_getinfo(WEFT_API_VERSION, hints, &list);
    weft_info_free(hints);
    if (rc != 0) {
        std::fprintf(stderr, "weft_info: weft_getinfo: %s\n", weft_strerror(rc));
        return 1;
    }
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
#ifdef WEFT_HAVE_VERBS
    if ((transport == nullptr || std::strcmp(transport, "verbs") == 0) &&
        weft::transport::verbs::active_ports().empty()) {
        std::printf("transport: verbs (not available: %s)\n",
                    weft::transport::verbs::unavailable_reason().c_str());
    }
#endif
    return 0;
}
