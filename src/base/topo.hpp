#pragma once
// The machine's topology, for the placement decisions taken when something is
// opened (docs/topology.md): which RDMA device or network interface is nearest
// the calling process's CPUs, which NUMA node(s) those CPUs are on, binding a
// memory range to a node before its pages are touched, and the CPUs a helper
// thread of the caller should run on.
//
// Two sources: hwloc (when the build has it, WEFT_HAVE_HWLOC), else sysfs
// (/sys/devices/system/node, /sys/class/{infiniband,net}/X/device/numa_node).
// Either may answer "unknown"; callers then keep their default choice (the
// order the system lists devices in, the kernel's first-touch memory policy,
// the thread's inherited affinity). The machine's topology is loaded once, on
// first use, and only when placement is on (WEFT_TOPO_PLACEMENT). Nothing here
// is called on the fast path.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.hpp"
#include "base/status.hpp"

namespace weft::base {

// ------------------------------------------------------------------ configuration

struct topo_config {
    int placement;  ///< 0: auto, 1: off
};

inline constexpr base::config_field topo_config_fields[] = {
    base::make_field<&topo_config::placement>(
        "PLACEMENT", base::config_type::choice, "auto",
        "place weft near the calling process's CPUs: nearest RDMA device and tcp interface "
        "first, shm segments and bounce buffers on its NUMA node, the progress thread on its "
        "node's CPUs (docs/topology.md); off: the system's order and the kernel's defaults",
        "auto|off"),
};

inline constexpr base::config_table topo_config_table = base::make_table(
    "TOPO", "topology: placement near the calling process (docs/topology.md)", topo_config_fields);

/// Whether placement is on in `cfg` (WEFT_TOPO_PLACEMENT=auto).
[[nodiscard]] bool topo_enabled(const config_store &cfg);

// ------------------------------------------------------------------ sets of CPUs and nodes

/// CPU or NUMA node numbers (the operating system's), sorted, without duplicates.
using id_set = std::vector<unsigned>;

/// "0-3,8,10-11"; "" for an empty set.
[[nodiscard]] std::string id_set_text(const id_set &s);
/// Parse sysfs's list format ("0-3,8\n"); false (out unchanged) if malformed.
[[nodiscard]] bool parse_id_set(std::string_view text, id_set &out);

/// The CPUs the calling thread may run on (sched_getaffinity); empty if unknown.
[[nodiscard]] id_set caller_cpus();

// ------------------------------------------------------------------ the topology

enum class topo_source : std::uint8_t { hwloc, sysfs };
[[nodiscard]] const char *topo_source_name(topo_source s) noexcept;

/// The kinds of I/O device weft places itself near.
enum class io_class : std::uint8_t {
    rdma,  ///< an ibverbs device (/sys/class/infiniband/NAME)
    net,   ///< a network interface (/sys/class/net/NAME)
};

/// How near a device is to a set of CPUs. Lower is nearer.
enum class nearness : std::uint8_t {
    local = 0,    ///< the device's NUMA node(s) hold every one of the CPUs
    partly = 1,   ///< some of them (the CPUs span several nodes)
    remote = 2,   ///< none of them
    unknown = 3,  ///< not known (a virtual device, no NUMA information)
};
[[nodiscard]] const char *nearness_name(nearness n) noexcept;

/// Where a device is, seen from a set of CPUs.
struct device_place {
    nearness near = nearness::unknown;
    id_set nodes;       ///< the device's NUMA node(s); empty: unknown
    int distance = -1;  ///< remote: the NUMA distance (10: local) from the nearest of the
                        ///< caller's nodes to the device's; -1: not known
    std::string why;    ///< one line: "NUMA node 1; the CPUs are on node 0"
};

class topology {
  public:
    virtual ~topology() = default;
    topology() = default;
    topology(const topology &) = delete;
    topology &operator=(const topology &) = delete;

    [[nodiscard]] virtual topo_source source() const noexcept = 0;
    /// One line: "hwloc 2.9.0: 2 NUMA nodes (0: cpus 0-3; 1: cpus 4-7)".
    [[nodiscard]] virtual std::string summary() const = 0;
    /// Every NUMA node; empty when not known.
    [[nodiscard]] virtual id_set numa_nodes() const = 0;
    /// The CPUs of NUMA node `node`; empty when not known.
    [[nodiscard]] virtual id_set node_cpus(unsigned node) const = 0;
    /// Where device `name` of class `c` is, seen from `cpus`.
    [[nodiscard]] virtual device_place locate(io_class c, std::string_view name,
                                              const id_set &cpus) const = 0;
    /// The NUMA distance from node `from` to node `to` (ACPI SLIT: 10 is
    /// local, larger is farther); -1 when not known.
    [[nodiscard]] virtual int numa_distance(unsigned from, unsigned to) const = 0;
    /// Bind the pages of [addr, addr + len) (page-aligned) to NUMA node `node`,
    /// preferred rather than strict (the kernel falls back to other nodes when
    /// that one is full). The pages must not have been touched yet.
    [[nodiscard]] virtual status bind_area(void *addr, std::size_t len, unsigned node) const = 0;

    /// The NUMA nodes whose CPUs intersect `cpus`.
    [[nodiscard]] id_set nodes_of(const id_set &cpus) const;
    /// The CPUs of the NUMA nodes `nodes`.
    [[nodiscard]] id_set cpus_of(const id_set &nodes) const;

    /// The machine's topology: hwloc's when the build has it and it loads,
    /// else sysfs's. Loaded on the first call (thread-safe), kept for the process.
    [[nodiscard]] static const topology &machine();
    /// sysfs under `root` ("/sys" for the machine; a directory laid out like
    /// it for tests).
    [[nodiscard]] static std::unique_ptr<topology> from_sysfs(const std::string &root);
    /// hwloc from an XML file (tests, and `HWLOC_XMLFILE` does the same for
    /// the machine). nullptr, with the reason in `error`, when it does not
    /// load or the build has no hwloc.
    [[nodiscard]] static std::unique_ptr<topology> from_hwloc_xml(const std::string &path,
                                                                  std::string &error);
};

// ------------------------------------------------------------------ decisions

/// The NUMA node memory of a process running on `cpus` goes to: the only node
/// of its CPUs, else none (-1: they span several nodes, or nothing is known),
/// with the reason in `why`.
[[nodiscard]] int local_node(const topology &t, const id_set &cpus, std::string &why);

/// Whether `a` is nearer than `b`: by nearness, and among remote devices by
/// distance (a known one before an unknown one). A strict weak order: callers
/// stable-sort with it.
[[nodiscard]] bool nearer(const device_place &a, const device_place &b) noexcept;

/// The rank of each of `names` (devices of class `c`) by nearness to `cpus`:
/// places[i] is where names[i] is. Callers stable-sort with `nearer`, so that
/// among equally near devices the system's order stays.
[[nodiscard]] std::vector<device_place> locate_all(const topology &t, io_class c,
                                                   const std::vector<std::string> &names,
                                                   const id_set &cpus);

/// Bind [addr, addr + len) to the caller's NUMA node, before its first touch.
/// `what` names the memory in log lines. Never fails the caller: a failure is
/// a warning and the memory stays where the kernel puts it. Returns whether it
/// was bound.
bool bind_local(const topology &t, void *addr, std::size_t len, const char *what);

/// The CPUs a helper thread of a caller running on `cpus` should run on: the
/// CPUs of the caller's NUMA node(s); empty (leave the thread as it is) when
/// that is no narrower than `cpus`'s whole machine or nothing is known.
[[nodiscard]] id_set helper_cpus(const topology &t, const id_set &cpus, std::string &why);

/// Set the calling thread's affinity to `cpus`; a failure is logged as a warning.
bool bind_this_thread(const id_set &cpus);

/// The names of the devices of class `c` that sysfs under `root` lists, sorted
/// (for weft_info; the transports list their own).
[[nodiscard]] std::vector<std::string> list_devices(io_class c, const std::string &root = "/sys");

}  // namespace weft::base
