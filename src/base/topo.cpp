// The machine's topology for placement decisions (topo.hpp, docs/topology.md).

#include "base/topo.hpp"

#include <dirent.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/log.hpp"
#include "config.h"

#if WEFT_HAVE_HWLOC
#include <hwloc.h>
#include <hwloc/distances.h>
#endif

namespace weft::base {

bool topo_enabled(const config_store &cfg)
{
    topo_config c{};
    cfg.load(topo_config_table, &c);
    return c.placement == 0;
}

// ------------------------------------------------------------------ id sets

std::string id_set_text(const id_set &s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i;
        while (j + 1 < s.size() && s[j + 1] == s[j] + 1) {
            ++j;
        }
        out += (out.empty() ? "" : ",") + std::to_string(s[i]);
        if (j > i) {
            out += "-" + std::to_string(s[j]);
        }
        i = j + 1;
    }
    return out;
}

bool parse_id_set(std::string_view text, id_set &out)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    id_set s;
    std::size_t pos = 0;
    const auto number = [&](unsigned &v) {
        const std::size_t start = pos;
        std::uint64_t n = 0;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && n < (1u << 20)) {
            n = n * 10 + static_cast<unsigned>(text[pos++] - '0');
        }
        v = static_cast<unsigned>(n);
        return pos > start && n < (1u << 20);
    };
    while (pos < text.size()) {
        unsigned lo = 0;
        unsigned hi = 0;
        if (!number(lo)) {
            return false;
        }
        hi = lo;
        if (pos < text.size() && text[pos] == '-') {
            ++pos;
            if (!number(hi) || hi < lo) {
                return false;
            }
        }
        for (unsigned k = lo; k <= hi; ++k) {
            s.push_back(k);
        }
        if (pos < text.size()) {
            if (text[pos] != ',') {
                return false;
            }
            ++pos;
        }
    }
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    out = std::move(s);
    return true;
}

id_set caller_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return {};
    }
    id_set out;
    for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) {
            out.push_back(c);
        }
    }
    return out;
}

namespace {

bool intersects(const id_set &a, const id_set &b)
{
    return std::any_of(a.begin(), a.end(),
                       [&](unsigned x) { return std::binary_search(b.begin(), b.end(), x); });
}

bool includes(const id_set &outer, const id_set &inner)
{
    return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

std::string read_line(const std::string &path)
{
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

const char *class_dir(io_class c)
{
    return c == io_class::rdma ? "infiniband" : "net";
}

/// Nearness of a device on `dev_nodes` to `cpus` (on `cpu_nodes`).
device_place judge(const topology &t, id_set dev_nodes, const id_set &cpus)
{
    device_place p;
    p.nodes = std::move(dev_nodes);
    const id_set dev_cpus = t.cpus_of(p.nodes);
    const std::string on = "NUMA node " + id_set_text(p.nodes);
    const std::string caller =
        "the CPUs " + id_set_text(cpus) + " are on node " + id_set_text(t.nodes_of(cpus));
    if (cpus.empty() || dev_cpus.empty()) {
        p.near = nearness::unknown;
        p.why = on + "; the CPUs of the caller or the node are not known";
    } else if (includes(dev_cpus, cpus)) {
        p.near = nearness::local;
        p.why = on + "; " + caller;
    } else if (intersects(dev_cpus, cpus)) {
        p.near = nearness::partly;
        p.why = on + "; " + caller;
    } else {
        p.near = nearness::remote;
        p.why = on + "; " + caller;
        for (unsigned from : t.nodes_of(cpus)) {
            for (unsigned to : p.nodes) {
                const int d = t.numa_distance(from, to);
                if (d < 0) {
                    p.distance = -1;
                    p.why += " (NUMA distance not known)";
                    return p;
                }
                p.distance = p.distance < 0 ? d : std::min(p.distance, d);
            }
        }
        p.why += " (NUMA distance " + std::to_string(p.distance) + ")";
    }
    return p;
}

// ------------------------------------------------------------------ sysfs

class sysfs_topology final : public topology {
  public:
    explicit sysfs_topology(std::string root) : root_(std::move(root))
    {
        const std::string dir = root_ + "/devices/system/node";
        if (DIR *d = opendir(dir.c_str()); d != nullptr) {
            while (const dirent *e = readdir(d)) {
                unsigned n = 0;
                if (std::strncmp(e->d_name, "node", 4) == 0 &&
                    std::sscanf(e->d_name + 4, "%u", &n) == 1) {
                    id_set cpus;
                    if (parse_id_set(read_line(dir + "/" + e->d_name + "/cpulist"), cpus)) {
                        nodes_.push_back({n, std::move(cpus)});
                    }
                }
            }
            closedir(d);
        }
        std::sort(nodes_.begin(), nodes_.end(),
                  [](const numa_node &a, const numa_node &b) { return a.id < b.id; });
    }

    topo_source source() const noexcept override { return topo_source::sysfs; }

    std::string summary() const override
    {
        if (nodes_.empty()) {
            return "sysfs: no NUMA information under " + root_ + "/devices/system/node";
        }
        std::string s = "sysfs: " + std::to_string(nodes_.size()) + " NUMA node" +
                        (nodes_.size() == 1 ? "" : "s") + " (";
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            s += (i == 0 ? "" : "; ") + std::to_string(nodes_[i].id) + ": cpus " +
                 id_set_text(nodes_[i].cpus);
        }
        return s + ")";
    }

    id_set numa_nodes() const override
    {
        id_set out;
        for (const numa_node &n : nodes_) {
            out.push_back(n.id);
        }
        return out;
    }

    id_set node_cpus(unsigned id) const override
    {
        for (const numa_node &n : nodes_) {
            if (n.id == id) {
                return n.cpus;
            }
        }
        return {};
    }

    device_place locate(io_class c, std::string_view name, const id_set &cpus) const override
    {
        const std::string dev = root_ + "/class/" + class_dir(c) + "/" + std::string(name);
        device_place p;
        if (access((dev + "/device").c_str(), F_OK) != 0) {
            p.why = access(dev.c_str(), F_OK) == 0
                        ? "a virtual device (no bus device behind it)"
                        : "not listed under " + root_ + "/class/" + class_dir(c);
            return single_node(p, cpus);
        }
        const std::string text = read_line(dev + "/device/numa_node");
        int n = -1;
        if (text.empty() || std::sscanf(text.c_str(), "%d", &n) != 1 || n < 0) {
            p.why = "its bus reports no NUMA node";
            return single_node(p, cpus);
        }
        return judge(*this, {static_cast<unsigned>(n)}, cpus);
    }

    int numa_distance(unsigned from, unsigned to) const override
    {
        // nodeN/distance: one number per node, in the order of the node
        // numbers.
        std::size_t index = nodes_.size();
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            index = nodes_[i].id == to ? i : index;
        }
        std::istringstream in(
            read_line(root_ + "/devices/system/node/node" + std::to_string(from) + "/distance"));
        int d = -1;
        for (std::size_t i = 0; i <= index && index < nodes_.size(); ++i) {
            if (!(in >> d)) {
                return -1;
            }
        }
        return index < nodes_.size() ? d : -1;
    }

    status bind_area(void *addr, std::size_t len, unsigned node) const override
    {
        // MPOL_PREFERRED, not MPOL_BIND: a full node must not make the
        // allocation fail (SIGBUS on a shared mapping), only go elsewhere.
        constexpr unsigned long bits = 8 * sizeof(unsigned long);
        if (node >= 64 * bits) {
            return status::invalid;
        }
        unsigned long mask[64] = {};
        mask[node / bits] = 1UL << (node % bits);
        if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask, 64 * bits, 0) != 0) {
            const int err = errno;
            WEFT_LOG(base, debug, "mbind(node %u) failed: %s", node, std::strerror(err));
            return err == ENOSYS ? status::not_supported : status::io_error;
        }
        return status::ok;
    }

  private:
    struct numa_node {
        unsigned id;
        id_set cpus;
    };

    /// A device of unknown node on a machine of one node is on that node.
    device_place single_node(device_place p, const id_set &cpus) const
    {
        if (nodes_.size() != 1) {
            return p;
        }
        device_place q = judge(*this, {nodes_[0].id}, cpus);
        q.why = "one NUMA node: " + q.why + " (" + p.why + ")";
        return q;
    }

    std::string root_;
    std::vector<numa_node> nodes_;
};

// ------------------------------------------------------------------ hwloc

#if WEFT_HAVE_HWLOC

struct bitmap {
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    bitmap() = default;
    bitmap(const bitmap &) = delete;
    bitmap &operator=(const bitmap &) = delete;
    ~bitmap() { hwloc_bitmap_free(b); }
};

id_set ids_of(hwloc_const_bitmap_t b)
{
    id_set out;
    if (b == nullptr || hwloc_bitmap_weight(b) < 0) {
        return out;  // empty, or infinite
    }
    unsigned i = 0;
    hwloc_bitmap_foreach_begin(i, b)
    {
        out.push_back(i);
    }
    hwloc_bitmap_foreach_end();
    return out;
}

class hwloc_topology final : public topology {
  public:
    ~hwloc_topology() override
    {
        if (topo_ != nullptr) {
            hwloc_topology_destroy(topo_);
        }
    }

    /// Load the machine's topology, or the XML file `xml` ("" for the machine).
    status load(const std::string &xml, std::string &error)
    {
        if (hwloc_topology_init(&topo_) != 0) {
            topo_ = nullptr;
            error = "hwloc_topology_init failed";
            return status::no_memory;
        }
        // PCI devices and their OS devices (ibverbs devices, network
        // interfaces) only: bridges and the rest are not needed.
        (void)hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        if (!xml.empty() && hwloc_topology_set_xml(topo_, xml.c_str()) != 0) {
            error = "cannot read " + xml + ": " + std::strerror(errno);
            return status::invalid;
        }
        if (hwloc_topology_load(topo_) != 0) {
            error = std::string("hwloc_topology_load failed: ") + std::strerror(errno);
            return status::io_error;
        }
        return status::ok;
    }

    topo_source source() const noexcept override { return topo_source::hwloc; }

    std::string summary() const override
    {
        const unsigned v = hwloc_get_api_version();
        std::string s = "hwloc " + std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) +
                        "." + std::to_string(v & 0xff) + ": ";
        const id_set nodes = numa_nodes();
        s += std::to_string(nodes.size()) + " NUMA node" + (nodes.size() == 1 ? "" : "s") + " (";
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            s += (i == 0 ? "" : "; ") + std::to_string(nodes[i]) + ": cpus " +
                 id_set_text(node_cpus(nodes[i]));
        }
        s += ")";
        if (hwloc_topology_is_thissystem(topo_) == 0) {
            s += ", not this machine's (XML)";
        }
        return s;
    }

    id_set numa_nodes() const override
    {
        id_set out;
        for (hwloc_obj_t o = nullptr;
             (o = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, o)) != nullptr;) {
            out.push_back(o->os_index);
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    id_set node_cpus(unsigned id) const override
    {
        for (hwloc_obj_t o = nullptr;
             (o = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, o)) != nullptr;) {
            if (o->os_index == id) {
                return ids_of(o->cpuset);
            }
        }
        return {};
    }

    device_place locate(io_class c, std::string_view name, const id_set &cpus) const override
    {
        const hwloc_obj_osdev_type_t want =
            c == io_class::rdma ? HWLOC_OBJ_OSDEV_OPENFABRICS : HWLOC_OBJ_OSDEV_NETWORK;
        for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo_, o)) != nullptr;) {
            if (o->attr->osdev.type != want || o->name == nullptr || name != o->name) {
                continue;
            }
            const hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, o);
            if (anc == nullptr || anc->nodeset == nullptr) {
                break;
            }
            // The device is attached to `anc` (a package, a NUMA node's
            // group, the machine): its nodes are anc's.
            id_set nodes = ids_of(anc->nodeset);
            if (nodes.size() == numa_nodes().size() && nodes.size() > 1) {
                device_place p;
                p.nodes = std::move(nodes);
                p.why = "attached to the whole machine (no NUMA locality in hwloc's topology)";
                return p;
            }
            return judge(*this, std::move(nodes), cpus);
        }
        device_place p;
        p.why = "not in hwloc's topology (a virtual device: rxe, veth, loopback, ...)";
        const id_set all = numa_nodes();
        if (all.size() == 1) {
            device_place q = judge(*this, all, cpus);
            q.why = "one NUMA node: " + q.why + " (" + p.why + ")";
            return q;
        }
        return p;
    }

    int numa_distance(unsigned from, unsigned to) const override
    {
        unsigned nr = 1;
        hwloc_distances_s *d = nullptr;
        if (hwloc_distances_get_by_type(topo_, HWLOC_OBJ_NUMANODE, &nr, &d,
                                        HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
            nr == 0 || d == nullptr) {
            return -1;
        }
        int out = -1;
        unsigned i = d->nbobjs;
        unsigned j = d->nbobjs;
        for (unsigned k = 0; k < d->nbobjs; ++k) {
            i = d->objs[k]->os_index == from ? k : i;
            j = d->objs[k]->os_index == to ? k : j;
        }
        if (i < d->nbobjs && j < d->nbobjs) {
            out =
                static_cast<int>(std::min<hwloc_uint64_t>(d->values[i * d->nbobjs + j], 1u << 30));
        }
        hwloc_distances_release(topo_, d);
        return out;
    }

    status bind_area(void *addr, std::size_t len, unsigned node) const override
    {
        bitmap set;
        hwloc_bitmap_only(set.b, node);
        // Without HWLOC_MEMBIND_STRICT, Linux gets MPOL_PREFERRED: a full node
        // sends pages elsewhere instead of failing the fault.
        if (hwloc_set_area_membind(topo_, addr, len, set.b, HWLOC_MEMBIND_BIND,
                                   HWLOC_MEMBIND_BYNODESET) != 0) {
            const int err = errno;
            WEFT_LOG(base, debug, "hwloc_set_area_membind(node %u) failed: %s", node,
                     std::strerror(err));
            return err == ENOSYS || err == EXDEV ? status::not_supported : status::io_error;
        }
        return status::ok;
    }

  private:
    hwloc_topology_t topo_ = nullptr;
};

#endif  // WEFT_HAVE_HWLOC

std::unique_ptr<topology> load_machine()
{
#if WEFT_HAVE_HWLOC
    auto h = std::make_unique<hwloc_topology>();
    std::string error;
    if (h->load("", error) == status::ok) {
        WEFT_LOG(base, debug, "topology: %s", h->summary().c_str());
        return h;
    }
    WEFT_LOG(base, info, "topology: %s; using sysfs", error.c_str());
#endif
    auto s = topology::from_sysfs("/sys");
    WEFT_LOG(base, debug, "topology: %s", s->summary().c_str());
    return s;
}

}  // namespace

const char *topo_source_name(topo_source s) noexcept
{
    return s == topo_source::hwloc ? "hwloc" : "sysfs";
}

const char *nearness_name(nearness n) noexcept
{
    switch (n) {
        case nearness::local:
            return "local";
        case nearness::partly:
            return "partly local";
        case nearness::remote:
            return "remote";
        case nearness::unknown:
            break;
    }
    return "unknown";
}

id_set topology::nodes_of(const id_set &cpus) const
{
    id_set out;
    for (unsigned n : numa_nodes()) {
        if (intersects(node_cpus(n), cpus)) {
            out.push_back(n);
        }
    }
    return out;
}

id_set topology::cpus_of(const id_set &nodes) const
{
    id_set out;
    for (unsigned n : nodes) {
        const id_set c = node_cpus(n);
        out.insert(out.end(), c.begin(), c.end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

const topology &topology::machine()
{
    // Thread-safe, once; never destroyed: hwloc unloads its plugins when its
    // last topology goes, and a plugin's allocations (libpciaccess's) would
    // then show as leaks from an unknown module at exit.
    static const topology *const t = load_machine().release();
    return *t;
}

std::unique_ptr<topology> topology::from_sysfs(const std::string &root)
{
    return std::make_unique<sysfs_topology>(root);
}

std::unique_ptr<topology> topology::from_hwloc_xml(const std::string &path, std::string &error)
{
#if WEFT_HAVE_HWLOC
    auto h = std::make_unique<hwloc_topology>();
    if (h->load(path, error) != status::ok) {
        return nullptr;
    }
    return h;
#else
    (void)path;
    error = "this build has no hwloc";
    return nullptr;
#endif
}

// ------------------------------------------------------------------ decisions

int local_node(const topology &t, const id_set &cpus, std::string &why)
{
    const id_set nodes = t.nodes_of(cpus);
    if (cpus.empty() || nodes.empty()) {
        why = "the NUMA node of the CPUs is not known";
        return -1;
    }
    if (nodes.size() > 1) {
        why = "the CPUs " + id_set_text(cpus) + " span NUMA nodes " + id_set_text(nodes);
        return -1;
    }
    why = "the CPUs " + id_set_text(cpus) + " are on NUMA node " + id_set_text(nodes);
    return static_cast<int>(nodes[0]);
}

bool nearer(const device_place &a, const device_place &b) noexcept
{
    const auto key = [](const device_place &p) {
        const int d = p.near == nearness::remote && p.distance >= 0 ? p.distance : INT32_MAX;
        return std::pair<int, int>(static_cast<int>(p.near), d);
    };
    return key(a) < key(b);
}

std::vector<device_place> locate_all(const topology &t, io_class c,
                                     const std::vector<std::string> &names, const id_set &cpus)
{
    std::vector<device_place> out;
    out.reserve(names.size());
    for (const std::string &n : names) {
        out.push_back(t.locate(c, n, cpus));
    }
    return out;
}

bool bind_local(const topology &t, void *addr, std::size_t len, const char *what)
{
    std::string why;
    const int node = local_node(t, caller_cpus(), why);
    if (node < 0) {
        WEFT_LOG(base, debug, "%s: not bound (%s)", what, why.c_str());
        return false;
    }
    if (const status s = t.bind_area(addr, len, static_cast<unsigned>(node)); s != status::ok) {
        WEFT_LOG(base, warn, "%s: cannot bind %zu bytes to NUMA node %d (%s): left to the kernel",
                 what, len, node, status_string(s));
        return false;
    }
    WEFT_LOG(base, debug, "%s: %zu bytes bound to NUMA node %d (%s)", what, len, node, why.c_str());
    return true;
}

id_set helper_cpus(const topology &t, const id_set &cpus, std::string &why)
{
    const id_set nodes = t.nodes_of(cpus);
    const id_set near = t.cpus_of(nodes);
    if (cpus.empty() || near.empty()) {
        why = "the NUMA node of the CPUs is not known: the thread inherits the caller's CPUs";
        return {};
    }
    if (near == cpus) {
        why = "the caller's CPUs " + id_set_text(cpus) + " are all of NUMA node " +
              id_set_text(nodes) + ": the thread inherits them";
        return {};
    }
    why = "the CPUs of NUMA node " + id_set_text(nodes) + ", where the caller's CPUs " +
          id_set_text(cpus) + " are";
    return near;
}

bool bind_this_thread(const id_set &cpus)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : cpus) {
        if (c < CPU_SETSIZE) {
            CPU_SET(c, &set);
        }
    }
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
        WEFT_LOG(base, warn, "cannot bind a thread to CPUs %s: %s", id_set_text(cpus).c_str(),
                 std::strerror(rc));
        return false;
    }
    return true;
}

std::vector<std::string> list_devices(io_class c, const std::string &root)
{
    std::vector<std::string> out;
    const std::string dir = root + "/class/" + class_dir(c);
    if (DIR *d = opendir(dir.c_str()); d != nullptr) {
        while (const dirent *e = readdir(d)) {
            if (e->d_name[0] != '.') {
                out.emplace_back(e->d_name);
            }
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace weft::base
