#pragma once
// How a transport registers itself (libfabric's provider, UCX's component): a
// name, a wire id, its configuration table and log component, and the three
// control-path entry points -- which resources (devices, ports) it has here,
// opening a resource's memory domain (per weft domain), and opening an
// instance (per endpoint). Each transport defines one `component` in its own
// directory; src/transport/registry.cpp lists them. Nothing outside
// src/transport/<name>/ and the registry names a transport.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "base/status.hpp"
#include "transport/iface.hpp"

namespace weft::transport {

/// One usable device or port of a transport on this machine: what weft_getinfo
/// reports as a domain of that transport.
struct resource {
    std::string name;    ///< domain name ("rxe0", "mlx5_0:2"; the host name for node-local ones)
    std::string detail;  ///< one line for weft_info (link layer, limits, ...)
};

/// A transport, as it registers itself.
struct component {
    const char *name;         ///< "shm": WEFT_TRANSPORTS, weft_info, weft_info::transport
    std::uint8_t wire_id;     ///< its address blobs and packed-key parts (1..255, never reused)
    const char *description;  ///< one line for weft_info
    /// Its WEFT_<NAME>_* variables (registered with the configuration), or nullptr.
    const base::config_table *config;
    /// Its log lines (registered with WEFT_LOG_LEVEL).
    base::log_component *log;
    /// Its resources on this machine under `cfg`, best first; empty, with the
    /// reason in `why`, when it cannot run here.
    std::vector<resource> (*query)(const base::config_store &cfg, std::string &why);
    /// Open the memory domain of `res` (once per weft domain).
    base::result<std::unique_ptr<memory_domain>> (*open_md)(const base::config_store &cfg,
                                                            const resource &res);
    /// Open an instance on `res` for one endpoint; `md` is the endpoint's
    /// domain's memory domain of the same resource. An invalid configuration
    /// value fails the open with status::invalid and a log line naming it.
    base::result<std::unique_ptr<iface>> (*open)(const open_params &p, const resource &res,
                                                 memory_domain &md, const base::config_store &cfg);
};

}  // namespace weft::transport
