// The topology service (base/topo.hpp): id sets, nearness of devices from
// hwloc (a two-node XML topology) and from sysfs (a directory laid out like
// /sys), the decisions built on them, and binding memory on this machine.

#include "base/topo.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "base/config.hpp"
#include "config.h"
#include "log_expect.hpp"

namespace {

using weft::base::device_place;
using weft::base::id_set;
using weft::base::io_class;
using weft::base::nearness;
using weft::base::topology;

TEST(topo, id_set_text_and_parse)
{
    EXPECT_EQ(weft::base::id_set_text({}), "");
    EXPECT_EQ(weft::base::id_set_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
    id_set s;
    ASSERT_TRUE(weft::base::parse_id_set("0-3,8,10-11\n", s));
    EXPECT_EQ(s, (id_set{0, 1, 2, 3, 8, 10, 11}));
    ASSERT_TRUE(weft::base::parse_id_set("5,1,1", s));
    EXPECT_EQ(s, (id_set{1, 5}));
    ASSERT_TRUE(weft::base::parse_id_set("", s));
    EXPECT_TRUE(s.empty());
    for (const char *bad : {"3-1", "a", "1,,2", "1-", "-1", "1 2", "99999999"}) {
        id_set keep{7};
        EXPECT_FALSE(weft::base::parse_id_set(bad, keep)) << bad;
        EXPECT_EQ(keep, id_set{7}) << bad;
    }
}

TEST(topo, placement_variable)
{
    weft::base::config_register(weft::base::topo_config_table);
    weft::base::config_store store;
    EXPECT_TRUE(weft::base::topo_enabled(store));  // default: auto
    ASSERT_EQ(store.set("WEFT_TOPO_PLACEMENT", "off"), weft::base::status::ok);
    EXPECT_FALSE(weft::base::topo_enabled(store));
    ASSERT_EQ(store.set("TOPO_PLACEMENT", "auto"), weft::base::status::ok);
    EXPECT_TRUE(weft::base::topo_enabled(store));
    weft::test::expect_log_errors expect(1);
    EXPECT_EQ(store.set("WEFT_TOPO_PLACEMENT", "near"), weft::base::status::invalid);
}

/// The checks every source must pass on the same machine: node 0 has CPUs 0-1
/// and devices mlx5_0 / eth0, node 1 has CPUs 2-3 and mlx5_1 / eth1.
void check_two_nodes(const topology &t)
{
    EXPECT_EQ(t.numa_nodes(), (id_set{0, 1}));
    EXPECT_EQ(t.node_cpus(1), (id_set{2, 3}));
    EXPECT_EQ(t.nodes_of({1, 2}), (id_set{0, 1}));
    EXPECT_EQ(t.cpus_of({0}), (id_set{0, 1}));

    // From each node, that node's devices are local and the other's remote.
    for (const io_class c : {io_class::rdma, io_class::net}) {
        const std::string d0 = c == io_class::rdma ? "mlx5_0" : "eth0";
        const std::string d1 = c == io_class::rdma ? "mlx5_1" : "eth1";
        device_place p = t.locate(c, d1, {3});
        EXPECT_EQ(p.near, nearness::local) << d1 << ": " << p.why;
        EXPECT_EQ(p.nodes, id_set{1});
        EXPECT_EQ(t.locate(c, d1, {0}).near, nearness::remote);
        EXPECT_EQ(t.locate(c, d0, {0, 1}).near, nearness::local);
        EXPECT_EQ(t.locate(c, d0, {2}).near, nearness::remote);
        EXPECT_EQ(t.locate(c, d0, {1, 2}).near, nearness::partly);
        EXPECT_EQ(t.locate(c, "nosuch0", {0}).near, nearness::unknown);
    }
    EXPECT_EQ(t.numa_distance(0, 0), 10);
    EXPECT_EQ(t.numa_distance(0, 1), 21);
    EXPECT_EQ(t.numa_distance(0, 7), -1);
    EXPECT_EQ(t.locate(io_class::rdma, "mlx5_1", {0}).distance, 21);
    EXPECT_EQ(t.locate(io_class::rdma, "mlx5_1", {2}).distance, -1) << "local: no distance";
    // An RDMA name is not a network interface.
    EXPECT_EQ(t.locate(io_class::net, "mlx5_1", {2}).near, nearness::unknown);

    // What the transports do with it: order by nearness, stable.
    const std::vector<std::string> names{"mlx5_0", "rxe0", "mlx5_1"};
    for (const auto &[cpus, first] :
         {std::pair<id_set, std::string>{{2}, "mlx5_1"}, {{0, 1}, "mlx5_0"}}) {
        const std::vector<device_place> places =
            weft::base::locate_all(t, io_class::rdma, names, cpus);
        ASSERT_EQ(places.size(), names.size());
        std::vector<std::size_t> order{0, 1, 2};
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return weft::base::nearer(places[a], places[b]);
        });
        EXPECT_EQ(names[order[0]], first);
        EXPECT_EQ(names[order[2]], "rxe0");  // unknown comes last
    }

    std::string why;
    EXPECT_EQ(weft::base::local_node(t, {3}, why), 1) << why;
    EXPECT_EQ(weft::base::local_node(t, {0, 1}, why), 0) << why;
    EXPECT_EQ(weft::base::local_node(t, {1, 2}, why), -1);
    EXPECT_NE(why.find("span"), std::string::npos) << why;
    EXPECT_EQ(weft::base::local_node(t, {}, why), -1);

    // A helper thread goes to the caller's node's CPUs; nowhere new when the
    // caller already has exactly those.
    EXPECT_EQ(weft::base::helper_cpus(t, {3}, why), (id_set{2, 3})) << why;
    EXPECT_EQ(weft::base::helper_cpus(t, {0, 1}, why), id_set{}) << why;
    EXPECT_EQ(weft::base::helper_cpus(t, {0, 1, 2, 3}, why), id_set{}) << why;
    EXPECT_EQ(weft::base::helper_cpus(t, {1, 2}, why), (id_set{0, 1, 2, 3})) << why;
}

TEST(topo, hwloc_two_nodes)
{
    std::string error;
    auto t = topology::from_hwloc_xml(WEFT_TEST_SRCDIR "/test/base/topo_2numa.xml", error);
#if WEFT_HAVE_HWLOC
    ASSERT_NE(t, nullptr) << error;
    EXPECT_EQ(t->source(), weft::base::topo_source::hwloc);
    EXPECT_NE(t->summary().find("2 NUMA nodes"), std::string::npos) << t->summary();
    check_two_nodes(*t);
    // Not in the topology (virtual): unknown, since there are two nodes.
    EXPECT_EQ(t->locate(io_class::rdma, "rxe0", {0}).near, nearness::unknown);
#else
    EXPECT_EQ(t, nullptr);
    GTEST_SKIP() << "this build has no hwloc: " << error;
#endif
}

/// A directory laid out like /sys, removed at the end.
class fake_sysfs {
  public:
    fake_sysfs()
    {
        char tmpl[] = "/tmp/weft-topo-XXXXXX";
        root_ = mkdtemp(tmpl);
    }
    ~fake_sysfs() { std::filesystem::remove_all(root_); }
    fake_sysfs(const fake_sysfs &) = delete;
    fake_sysfs &operator=(const fake_sysfs &) = delete;

    void file(const std::string &path, const std::string &text) const
    {
        const std::filesystem::path p = root_ + "/" + path;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    void dir(const std::string &path) const
    {
        std::filesystem::create_directories(root_ + "/" + path);
    }
    [[nodiscard]] const std::string &root() const { return root_; }

  private:
    std::string root_;
};

TEST(topo, sysfs_two_nodes)
{
    fake_sysfs fs;
    fs.file("devices/system/node/node0/cpulist", "0-1\n");
    fs.file("devices/system/node/node1/cpulist", "2-3\n");
    fs.file("devices/system/node/node0/distance", "10 21\n");
    fs.file("devices/system/node/node1/distance", "21 10\n");
    fs.file("devices/system/node/possible", "0-1\n");  // not a node directory
    fs.file("class/infiniband/mlx5_0/device/numa_node", "0\n");
    fs.file("class/infiniband/mlx5_1/device/numa_node", "1\n");
    fs.file("class/net/eth0/device/numa_node", "0\n");
    fs.file("class/net/eth1/device/numa_node", "1\n");
    fs.dir("class/infiniband/rxe0");                     // virtual: no device link
    fs.file("class/net/eth9/device/numa_node", "-1\n");  // no NUMA information
    auto t = topology::from_sysfs(fs.root());
    EXPECT_EQ(t->source(), weft::base::topo_source::sysfs);
    check_two_nodes(*t);
    device_place p = t->locate(io_class::rdma, "rxe0", {0});
    EXPECT_EQ(p.near, nearness::unknown);
    EXPECT_NE(p.why.find("virtual"), std::string::npos) << p.why;
    EXPECT_EQ(t->locate(io_class::net, "eth9", {0}).near, nearness::unknown);
    EXPECT_EQ(weft::base::list_devices(io_class::rdma, fs.root()),
              (std::vector<std::string>{"mlx5_0", "mlx5_1", "rxe0"}));
}

TEST(topo, the_nearer_of_two_remote_devices_first)
{
    // Three nodes of one CPU each; from node 0, node 2 is nearer than node 1.
    fake_sysfs fs;
    fs.file("devices/system/node/node0/cpulist", "0\n");
    fs.file("devices/system/node/node1/cpulist", "1\n");
    fs.file("devices/system/node/node2/cpulist", "2\n");
    fs.file("devices/system/node/node0/distance", "10 30 20\n");
    fs.file("devices/system/node/node1/distance", "30 10 30\n");
    fs.file("devices/system/node/node2/distance", "20 30 10\n");
    fs.file("class/infiniband/far0/device/numa_node", "1\n");
    fs.file("class/infiniband/near0/device/numa_node", "2\n");
    fs.file("class/infiniband/near1/device/numa_node", "2\n");
    fs.file("class/infiniband/virt0/uevent", "\n");
    auto t = topology::from_sysfs(fs.root());
    const std::vector<std::string> names{"virt0", "far0", "near0"};
    const auto places = weft::base::locate_all(*t, io_class::rdma, names, {0});
    EXPECT_EQ(places[1].distance, 30);
    EXPECT_EQ(places[2].distance, 20);
    std::vector<std::size_t> order{0, 1, 2};
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return weft::base::nearer(places[a], places[b]);
    });
    EXPECT_EQ(names[order[0]], "near0");
    EXPECT_EQ(names[order[1]], "far0");
    EXPECT_EQ(names[order[2]], "virt0");
    // Two devices on node 2 are equally near: neither goes first.
    const device_place other = t->locate(io_class::rdma, "near1", {0});
    EXPECT_EQ(other.distance, 20);
    EXPECT_FALSE(weft::base::nearer(places[2], other));
    EXPECT_FALSE(weft::base::nearer(other, places[2]));
    // A remote device of unknown distance comes after one of known distance.
    weft::base::device_place unknown = places[1];
    unknown.distance = -1;
    EXPECT_TRUE(weft::base::nearer(places[1], unknown));
    EXPECT_FALSE(weft::base::nearer(unknown, places[1]));
}

TEST(topo, sysfs_one_node_makes_every_device_local)
{
    fake_sysfs fs;
    fs.file("devices/system/node/node0/cpulist", "0-3\n");
    fs.dir("class/net/veth0");
    fs.file("class/net/eth0/device/numa_node", "-1\n");
    auto t = topology::from_sysfs(fs.root());
    EXPECT_EQ(t->locate(io_class::net, "veth0", {1}).near, nearness::local);
    EXPECT_EQ(t->locate(io_class::net, "eth0", {1}).near, nearness::local);
}

TEST(topo, sysfs_nothing_known)
{
    fake_sysfs fs;
    auto t = topology::from_sysfs(fs.root());
    EXPECT_TRUE(t->numa_nodes().empty());
    EXPECT_EQ(t->locate(io_class::net, "eth0", {0}).near, nearness::unknown);
    std::string why;
    EXPECT_EQ(weft::base::local_node(*t, {0}, why), -1);
    EXPECT_TRUE(weft::base::helper_cpus(*t, {0}, why).empty());
    EXPECT_NE(t->summary().find("no NUMA information"), std::string::npos);
}

/// The memory policy /proc/self/numa_maps shows for the mapping at `addr`.
std::string policy_of(const void *addr)
{
    std::ifstream f("/proc/self/numa_maps");
    char key[32];
    std::snprintf(key, sizeof(key), "%lx ", reinterpret_cast<unsigned long>(addr));
    for (std::string line; std::getline(f, line);) {
        if (line.rfind(key, 0) == 0) {
            // "default", "prefer:0" (MPOL_PREFERRED), "prefer (many):0"
            // (MPOL_PREFERRED_MANY, what hwloc asks for), then key=value pairs.
            std::istringstream in(line.substr(std::string(key).size()));
            std::string policy;
            for (std::string word; in >> word && word.find('=') == std::string::npos;) {
                policy += (policy.empty() ? "" : " ") + word;
            }
            return policy;
        }
    }
    return "";
}

TEST(topo, machine_binds_memory_to_the_local_node)
{
    const topology &t = topology::machine();
#if WEFT_HAVE_HWLOC
    EXPECT_EQ(t.source(), weft::base::topo_source::hwloc);
#else
    EXPECT_EQ(t.source(), weft::base::topo_source::sysfs);
#endif
    EXPECT_EQ(&t, &topology::machine());  // loaded once
    const id_set cpus = weft::base::caller_cpus();
    ASSERT_FALSE(cpus.empty());
    std::string why;
    const int node = weft::base::local_node(t, cpus, why);
    if (node < 0) {
        GTEST_SKIP() << "no single local NUMA node here: " << why;
    }
    const std::size_t len = 4 * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(policy_of(p), "default");
    EXPECT_TRUE(weft::base::bind_local(t, p, len, "test area"));
    const std::string policy = policy_of(p);
    EXPECT_EQ(policy.rfind("prefer", 0), 0U) << policy;
    EXPECT_TRUE(policy.ends_with(":" + std::to_string(node))) << policy;
    static_cast<char *>(p)[0] = 1;  // first touch after the bind
    munmap(p, len);
}

TEST(topo, a_failed_bind_is_a_warning_and_the_memory_still_works)
{
    // A machine whose only node is one the kernel does not have: mbind fails.
    fake_sysfs fs;
    fs.file("devices/system/node/node63/cpulist", "0-" + std::to_string(CPU_SETSIZE - 1) + "\n");
    auto t = topology::from_sysfs(fs.root());
    const std::size_t len = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    {
        weft::test::expect_log_warnings expect(1);
        EXPECT_FALSE(weft::base::bind_local(*t, p, len, "test area"));
    }
    static_cast<char *>(p)[0] = 1;
    EXPECT_EQ(static_cast<char *>(p)[0], 1);
    munmap(p, len);
}

TEST(topo, helper_thread_binding)
{
    const id_set before = weft::base::caller_cpus();
    ASSERT_FALSE(before.empty());
    EXPECT_TRUE(weft::base::bind_this_thread({before[0]}));
    EXPECT_EQ(weft::base::caller_cpus(), id_set{before[0]});
    EXPECT_TRUE(weft::base::bind_this_thread(before));
    EXPECT_EQ(weft::base::caller_cpus(), before);
}

}  // namespace
