// The transport registry: one line per transport. A transport is a directory
// under src/transport/ that defines its `component`; configure builds it or not
// (src/transport/<name>/configure.m4, found by autogen.sh), and a transport
// that configure may leave out is listed under its WEFT_TRANSPORT_<NAME> macro.
// This file and the transports' own directories are the only places that name
// a transport.

#include "config.h"  // WEFT_TRANSPORT_* from the transports' configure fragments
#include "transport/registry.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "transport/self/self.hpp"
#include "transport/shm/shm.hpp"
#if WEFT_TRANSPORT_TCP
#include "transport/tcp/tcp.hpp"
#endif
#if WEFT_TRANSPORT_VERBS
#include "transport/verbs/verbs.hpp"
#endif

namespace weft::transport {

namespace {

constexpr const component *registered[] = {
    &self::transport,
    &shm::transport,
#if WEFT_TRANSPORT_TCP
    &tcp::transport,
#endif
#if WEFT_TRANSPORT_VERBS
    &verbs::transport,
#endif
};

constexpr bool wire_ids_unique()
{
    for (std::size_t i = 0; i < std::size(registered); ++i) {
        if (registered[i]->wire_id == proto_blob_id) {
            return false;
        }
        for (std::size_t j = i + 1; j < std::size(registered); ++j) {
            if (registered[i]->wire_id == registered[j]->wire_id) {
                return false;
            }
        }
    }
    return true;
}

}  // namespace

std::span<const component *const> components() noexcept
{
    return registered;
}

const component *find_component(std::string_view name) noexcept
{
    for (const component *c : registered) {
        if (name == c->name) {
            return c;
        }
    }
    return nullptr;
}

const component *find_component(std::uint8_t wire_id) noexcept
{
    for (const component *c : registered) {
        if (c->wire_id == wire_id) {
            return c;
        }
    }
    return nullptr;
}

const component *nearest_component(std::string_view name) noexcept
{
    std::size_t best = std::numeric_limits<std::size_t>::max();
    const component *nearest = nullptr;
    for (const component *c : registered) {
        const std::size_t d = base::config_edit_distance(std::string(name), c->name);
        if (d < best) {
            best = d;
            nearest = c;
        }
    }
    // A plausible typo: at most a third of the letters (and at least 2) differ.
    return best <= std::max<std::size_t>(2, name.size() / 3) ? nearest : nullptr;
}

void register_components() noexcept
{
    static_assert(std::size(registered) > 0);
    static const bool done = [] {
        // Checked here rather than in a static_assert: the components are
        // defined in other translation units (their ids are not constants here).
        if (!wire_ids_unique()) {
            WEFT_LOG(core, error, "two transports share a wire id: addresses are ambiguous");
        }
        for (const component *c : registered) {
            base::log_register(*c->log);
            if (c->config != nullptr) {
                base::config_register(*c->config);
            }
        }
        return true;
    }();
    (void)done;
}

}  // namespace weft::transport
