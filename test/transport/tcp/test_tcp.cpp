// Tests of what is specific to the tcp transport (docs/tcp.md). The generic
// suites (test_conformance, test_transport, test_variable, test_flood,
// test_credit_flow, test_stress) also run over tcp; these check the rest:
//
//  - WEFT_TCP_IF parsing and the choice of addresses, and the order in which
//    a peer's addresses are dialled (pure functions, no sockets);
//  - the wire parsers: frames, handshakes, address blobs;
//  - two instances in one process (opened through the component, as the core
//    does): connections made lazily, both sides connecting at once (one
//    connection, by the documented rule), an endpoint reaching itself, IPv6
//    on ::1, a dead port and a listener that never answers (failed in bounded
//    time), a raw socket client sending malformed frames or a half frame
//    (that connection fails with a log line; the process and the other
//    connections live), strangers refused, a peer process killed while it
//    streams;
//  - through weft.h: shm is chosen on one node unless WEFT_TRANSPORTS=tcp,
//    both ranks sending first at once, a rank killed while it streams (its
//    operations fail, the others' do not), 16 MiB put, get and atomics.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/topo.hpp"
#include "core/objects.hpp"
#include "test/log_expect.hpp"
#include "test/transport/harness.hpp"
#include "transport/registry.hpp"
#include "transport/tcp/ifsel.hpp"
#include "transport/tcp/tcp.hpp"
#include "transport/tcp/wire.hpp"

namespace {

namespace tl = weft::transport;
namespace tcp = weft::transport::tcp;
using weft::base::status;
using weft::test::check_payload;
using weft::test::completion;
using weft::test::fill_byte;
using weft::test::fill_pattern;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

constexpr std::size_t mib = 1024 * 1024;

using clock_type = std::chrono::steady_clock;

// ------------------------------------------------------------------ WEFT_TCP_IF

tcp::ip_addr ip(const char *text)
{
    tcp::ip_addr a;
    EXPECT_TRUE(tcp::parse_cidr(text, a)) << text;
    return a;
}

tcp::if_addr ifa(const char *name, const char *cidr, bool loopback = false, bool up = true)
{
    tcp::if_addr a;
    a.name = name;
    a.addr = ip(cidr);
    a.loopback = loopback;
    a.up = up;
    return a;
}

std::vector<std::string> texts(const std::vector<tcp::if_addr> &v)
{
    std::vector<std::string> out;
    for (const auto &a : v) {
        out.push_back(a.name + "=" + tcp::cidr_text(a.addr));
    }
    return out;
}

/// A machine with loopback, two Ethernet ports, a link-local address and a
/// port that is down.
std::vector<tcp::if_addr> machine()
{
    return {
        ifa("lo", "127.0.0.1/8", true),
        ifa("lo", "::1/128", true),
        ifa("eth0", "192.0.2.2/24"),
        ifa("eth0", "fd00::2/64"),
        ifa("eth0", "fe80::1/64"),
        ifa("eth1", "10.1.0.5/16"),
        ifa("eth2", "10.9.0.1/24", false, false),
    };
}

std::vector<tcp::if_addr> pick(const char *spec)
{
    tcp::if_spec s;
    std::string error;
    EXPECT_EQ(tcp::parse_if_spec(spec, s, error), status::ok) << spec << ": " << error;
    return tcp::select_addresses(s, machine());
}

TEST(tcp_if, cidr_parsing)
{
    tcp::ip_addr a;
    ASSERT_TRUE(tcp::parse_cidr("10.0.0.0/8", a));
    EXPECT_EQ(a.family, 4);
    EXPECT_EQ(a.prefix, 8);
    ASSERT_TRUE(tcp::parse_cidr("fd00::/64", a));
    EXPECT_EQ(a.family, 6);
    EXPECT_EQ(a.prefix, 64);
    ASSERT_TRUE(tcp::parse_cidr("192.0.2.2", a));
    EXPECT_EQ(a.prefix, 32) << "a bare address is the address alone";
    ASSERT_TRUE(tcp::parse_cidr("::1", a));
    EXPECT_EQ(a.prefix, 128);
    for (const char *bad : {"10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/", "10.0.0.0/x",
                            "1.2.3.4/-1", "", "eth0", "10.0.0.0/0008"}) {
        EXPECT_FALSE(tcp::parse_cidr(bad, a)) << bad;
    }
    EXPECT_TRUE(tcp::in_subnet(ip("10.1.200.3"), ip("10.1.0.0/16")));
    EXPECT_FALSE(tcp::in_subnet(ip("10.2.0.1"), ip("10.1.0.0/16")));
    EXPECT_TRUE(tcp::in_subnet(ip("10.1.0.129"), ip("10.1.0.128/25")));
    EXPECT_FALSE(tcp::in_subnet(ip("10.1.0.127"), ip("10.1.0.128/25")));
    EXPECT_FALSE(tcp::in_subnet(ip("::1"), ip("0.0.0.0/0"))) << "families never mix";
    EXPECT_TRUE(tcp::in_subnet(ip("fd00::2"), ip("fd00::/64")));
}

TEST(tcp_if, spec_parsing)
{
    tcp::if_spec s;
    std::string error;
    ASSERT_EQ(tcp::parse_if_spec("", s, error), status::ok);
    EXPECT_EQ(s.m, tcp::if_spec::mode::automatic);
    ASSERT_EQ(tcp::parse_if_spec(" auto ", s, error), status::ok);
    EXPECT_EQ(s.m, tcp::if_spec::mode::automatic);
    ASSERT_EQ(tcp::parse_if_spec("eth0, 10.0.0.0/8 ,fd00::/64,::1", s, error), status::ok);
    EXPECT_EQ(s.m, tcp::if_spec::mode::include);
    ASSERT_EQ(s.items.size(), 4U);
    EXPECT_FALSE(s.items[0].subnet);
    EXPECT_EQ(s.items[0].name, "eth0");
    EXPECT_TRUE(s.items[1].subnet);
    EXPECT_TRUE(s.items[2].subnet);
    EXPECT_TRUE(s.items[3].subnet);
    ASSERT_EQ(tcp::parse_if_spec("^docker0,10.9.0.0/16", s, error), status::ok);
    EXPECT_EQ(s.m, tcp::if_spec::mode::exclude);
    EXPECT_EQ(s.items.size(), 2U);
    for (const char *bad : {"eth0,,eth1", "eth0,^eth1", "^", "10.0.0.0/40", "eth0/3", "a b",
                            "^eth0,^eth1", ",eth0", "eth0,"}) {
        EXPECT_EQ(tcp::parse_if_spec(bad, s, error), status::invalid) << bad;
        EXPECT_FALSE(error.empty()) << bad;
    }
}

TEST(tcp_if, automatic_choice_skips_loopback_and_falls_back_to_it)
{
    EXPECT_EQ(texts(pick("auto")), (std::vector<std::string>{
                                       "eth0=192.0.2.2/24", "eth1=10.1.0.5/16", "eth0=fd00::2/64"}))
        << "IPv4 first; no loopback, no link-local, nothing that is down";
    const std::vector<tcp::if_addr> only_lo = {
        ifa("lo", "127.0.0.1/8", true), ifa("lo", "::1/128", true), ifa("eth0", "fe80::1/64")};
    tcp::if_spec s;
    EXPECT_EQ(texts(tcp::select_addresses(s, only_lo)),
              (std::vector<std::string>{"lo=127.0.0.1/8", "lo=::1/128"}))
        << "loopback when there is nothing else: one node still works";
}

TEST(tcp_if, include_and_exclude_lists)
{
    EXPECT_EQ(texts(pick("eth1")), (std::vector<std::string>{"eth1=10.1.0.5/16"}));
    EXPECT_EQ(texts(pick("fd00::/64")), (std::vector<std::string>{"eth0=fd00::2/64"}));
    EXPECT_EQ(texts(pick("10.0.0.0/8,lo")),
              (std::vector<std::string>{"lo=127.0.0.1/8", "eth1=10.1.0.5/16", "lo=::1/128"}))
        << "loopback when named";
    EXPECT_EQ(texts(pick("::1")), (std::vector<std::string>{"lo=::1/128"}));
    EXPECT_TRUE(pick("eth2").empty()) << "eth2 is down";
    EXPECT_TRUE(pick("fe80::/10").empty()) << "link-local is never used";
    EXPECT_TRUE(pick("wlan0").empty());
    EXPECT_EQ(texts(pick("^eth0")), (std::vector<std::string>{"eth1=10.1.0.5/16"}));
    EXPECT_EQ(texts(pick("^192.0.2.0/24,10.1.0.0/16")),
              (std::vector<std::string>{"eth0=fd00::2/64"}));
    EXPECT_EQ(texts(pick("^eth0,eth1")), (std::vector<std::string>{"lo=127.0.0.1/8", "lo=::1/128"}))
        << "everything excluded but loopback: loopback";
    EXPECT_EQ(texts(pick("^eth0,eth1,127.0.0.0/8")), (std::vector<std::string>{"lo=::1/128"}));
}

TEST(tcp_if, nearest_interfaces_first)
{
    // Two NUMA nodes (CPUs 0-1, 2-3); eth0 on node 0, eth1 on node 1, lo virtual.
    char tmpl[] = "/tmp/weft-tcp-topo-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string root = tmpl;
    const auto file = [&](const std::string &path, const char *text) {
        const std::filesystem::path f = root + "/" + path;
        std::filesystem::create_directories(f.parent_path());
        std::ofstream(f) << text;
    };
    file("devices/system/node/node0/cpulist", "0-1\n");
    file("devices/system/node/node1/cpulist", "2-3\n");
    file("class/net/eth0/device/numa_node", "0\n");
    file("class/net/eth1/device/numa_node", "1\n");
    std::filesystem::create_directories(root + "/class/net/lo");
    const auto topo = weft::base::topology::from_sysfs(root);
    const std::vector<tcp::if_addr> picked = pick("auto");  // eth0 v4, eth1, eth0 v6
    std::vector<std::string> why;
    EXPECT_EQ(
        texts(tcp::nearest_first(picked, *topo, {2, 3}, &why)),
        (std::vector<std::string>{"eth1=10.1.0.5/16", "eth0=192.0.2.2/24", "eth0=fd00::2/64"}))
        << "from node 1, eth1 first";
    ASSERT_EQ(why.size(), 2U);
    EXPECT_EQ(why[0].rfind("eth0: remote", 0), 0U) << why[0];
    EXPECT_EQ(why[1].rfind("eth1: local", 0), 0U) << why[1];
    EXPECT_EQ(
        texts(tcp::nearest_first(picked, *topo, {0})),
        (std::vector<std::string>{"eth0=192.0.2.2/24", "eth0=fd00::2/64", "eth1=10.1.0.5/16"}))
        << "from node 0, both of eth0's addresses before the remote eth1";
    EXPECT_EQ(texts(tcp::nearest_first(picked, *topo, {1, 2})), texts(picked))
        << "CPUs on both nodes: both partly near, the order stays";
    EXPECT_EQ(texts(tcp::nearest_first(pick("10.0.0.0/8,lo"), *topo, {0})),
              (std::vector<std::string>{"eth1=10.1.0.5/16", "lo=127.0.0.1/8", "lo=::1/128"}))
        << "WEFT_TCP_IF still chooses; a remote interface beats an unknown one";
    std::filesystem::remove_all(root);
}

TEST(tcp_if, dial_order)
{
    const std::vector<tcp::if_addr> mine = pick("auto");  // 192.0.2.2/24, 10.1.0.5/16, fd00::2/64
    auto blob = [](std::initializer_list<const char *> addrs) {
        tcp::peer_blob b;
        std::uint16_t port = 1000;
        for (const char *a : addrs) {
            b.at[b.count++] = {ip(a), port++};
        }
        return b;
    };
    // Same subnet first, bound to our address there; then routed ones of a family we have.
    auto t = tcp::dial_targets(blob({"172.16.0.9/16", "10.1.7.7/16", "fd00::9/64"}), false, mine);
    ASSERT_EQ(t.size(), 3U);
    EXPECT_EQ(tcp::ip_text(t[0].to.addr), "10.1.7.7");
    EXPECT_EQ(tcp::ip_text(t[0].from), "10.1.0.5");
    EXPECT_EQ(t[0].to.port, 1001);
    EXPECT_EQ(tcp::ip_text(t[1].to.addr), "fd00::9");
    EXPECT_EQ(tcp::ip_text(t[1].from), "fd00::2");
    EXPECT_EQ(tcp::ip_text(t[2].to.addr), "172.16.0.9");
    EXPECT_EQ(t[2].from.family, 0) << "a routed address: the kernel picks the source";
    // Loopback only on the same node, and last.
    t = tcp::dial_targets(blob({"127.0.0.1/8", "192.0.2.7/24"}), false, mine);
    ASSERT_EQ(t.size(), 1U);
    EXPECT_EQ(tcp::ip_text(t[0].to.addr), "192.0.2.7");
    t = tcp::dial_targets(blob({"127.0.0.1/8", "192.0.2.7/24"}), true, mine);
    ASSERT_EQ(t.size(), 2U);
    EXPECT_EQ(tcp::ip_text(t[1].to.addr), "127.0.0.1");
    // No address of a family we have: unreachable (unless on this node).
    const std::vector<tcp::if_addr> v4 = pick("192.0.2.0/24");
    EXPECT_TRUE(tcp::dial_targets(blob({"fd00::9/64"}), false, v4).empty());
    EXPECT_EQ(tcp::dial_targets(blob({"fd00::9/64"}), true, v4).size(), 1U);
    EXPECT_TRUE(tcp::dial_targets(blob({"fe80::9/64"}), true, mine).empty());
}

// ------------------------------------------------------------------ wire parsers

TEST(tcp_wire, frames)
{
    const tcp::frame_limits lim{1000, 7};
    auto bytes = [](const tcp::frame_hdr &h, std::size_t body) {
        std::vector<std::uint8_t> v(sizeof(h) + body, 0xab);
        std::memcpy(v.data(), &h, sizeof(h));
        return v;
    };
    tcp::frame_hdr h{};
    auto ok = bytes({10, 0x1234, 1, 0, 7}, 10);
    EXPECT_EQ(tcp::parse_frame(ok.data(), ok.size(), lim, h), tcp::frame_result::frame);
    EXPECT_EQ(h.am, 0x1234);
    EXPECT_EQ(h.len, 10U);
    for (std::size_t n = 0; n < ok.size(); ++n) {
        EXPECT_EQ(tcp::parse_frame(ok.data(), n, lim, h), tcp::frame_result::need_more) << n;
    }
    auto big = bytes({1001, 0, 1, 0, 7}, 0);
    EXPECT_EQ(tcp::parse_frame(big.data(), big.size(), lim, h), tcp::frame_result::bad_length)
        << "checked as soon as the header is here, before its body";
    auto max = bytes({1000, 0, 1, 0, 7}, 1000);
    EXPECT_EQ(tcp::parse_frame(max.data(), max.size(), lim, h), tcp::frame_result::frame);
    auto src = bytes({0, 0, 1, 0, 8}, 0);
    EXPECT_EQ(tcp::parse_frame(src.data(), src.size(), lim, h), tcp::frame_result::bad_source);
    for (std::uint8_t type : {0, 3, 255}) {
        auto t = bytes({0, 0, type, 0, 7}, 0);
        EXPECT_EQ(tcp::parse_frame(t.data(), t.size(), lim, h), tcp::frame_result::bad_type);
    }
    auto flags = bytes({0, 0, 1, 1, 7}, 0);
    EXPECT_EQ(tcp::parse_frame(flags.data(), flags.size(), lim, h), tcp::frame_result::bad_type);
    auto bye = bytes({0, 0, 2, 0, 7}, 0);
    EXPECT_EQ(tcp::parse_frame(bye.data(), bye.size(), lim, h), tcp::frame_result::frame);
    auto bye_body = bytes({1, 0, 2, 0, 7}, 1);
    EXPECT_EQ(tcp::parse_frame(bye_body.data(), bye_body.size(), lim, h),
              tcp::frame_result::bad_length);
}

/// A handshake message (and, for a hello, the address after it).
std::vector<std::uint8_t> hs_bytes(tcp::hs_type type, const tl::endpoint_id &src,
                                   const tl::endpoint_id &dst, const tl::address *addr,
                                   std::uint32_t src_conn = 5, std::uint32_t max_body = 65536,
                                   tcp::reject_reason why = tcp::reject_reason::none)
{
    tcp::handshake m{};
    m.magic = tcp::hs_magic;
    m.version = tcp::hs_version;
    m.type = static_cast<std::uint8_t>(type);
    m.reason = static_cast<std::uint8_t>(why);
    m.addr_len = addr != nullptr ? static_cast<std::uint16_t>(addr->size()) : 0;
    m.src_conn = src_conn;
    m.max_body = max_body;
    m.src_node_id = src.node_id;
    m.src_pid = src.pid;
    m.src_ep_id = src.ep_id;
    m.dst_node_id = dst.node_id;
    m.dst_pid = dst.pid;
    m.dst_ep_id = dst.ep_id;
    std::vector<std::uint8_t> v(sizeof(m) + m.addr_len);
    std::memcpy(v.data(), &m, sizeof(m));
    if (addr != nullptr) {
        std::memcpy(v.data() + sizeof(m), addr->data(), addr->size());
    }
    return v;
}

/// An endpoint address with a tcp blob: `id`, listening on 127.0.0.1:port.
tl::address fake_address(const tl::endpoint_id &id, std::uint16_t port)
{
    tl::address_builder b(id);
    const tcp::ip_addr lo = ip("127.0.0.1/8");
    std::uint8_t node[tcp::max_blob_node];
    const std::size_t n = tcp::encode_blob_node(&lo, 1, node);
    EXPECT_EQ(b.add(tcp::wire_id, node, n, &port, 2), status::ok);
    return b.get();
}

TEST(tcp_wire, handshakes)
{
    const tl::endpoint_id me{11, 22, 33};
    const tl::endpoint_id them{44, 55, 66};
    const tl::address theirs = fake_address(them, 4000);
    tcp::hs_parsed p;
    std::size_t used = 0;
    auto hello = hs_bytes(tcp::hs_type::hello, them, me, &theirs);
    ASSERT_EQ(tcp::parse_handshake(hello.data(), hello.size(), true, me, p, used),
              tcp::hs_result::ok);
    EXPECT_EQ(used, hello.size());
    EXPECT_EQ(p.src.id(), them);
    EXPECT_EQ(p.m.src_conn, 5U);
    for (std::size_t n = 5; n < hello.size(); ++n) {
        EXPECT_EQ(tcp::parse_handshake(hello.data(), n, true, me, p, used),
                  tcp::hs_result::need_more)
            << n;
    }
    EXPECT_EQ(tcp::parse_handshake(hello.data(), hello.size(), false, me, p, used),
              tcp::hs_result::bad_type)
        << "a hello where an answer is expected";
    auto other = hs_bytes(tcp::hs_type::hello, them, {11, 22, 34}, &theirs);
    EXPECT_EQ(tcp::parse_handshake(other.data(), other.size(), true, me, p, used),
              tcp::hs_result::not_for_me);
    auto liar = hs_bytes(tcp::hs_type::hello, {44, 55, 67}, me, &theirs);
    EXPECT_EQ(tcp::parse_handshake(liar.data(), liar.size(), true, me, p, used),
              tcp::hs_result::bad_address)
        << "the address must be the sender's";
    auto magic = hello;
    magic[0] ^= 1;
    EXPECT_EQ(tcp::parse_handshake(magic.data(), magic.size(), true, me, p, used),
              tcp::hs_result::bad_magic);
    EXPECT_EQ(tcp::parse_handshake(magic.data(), 4, true, me, p, used), tcp::hs_result::bad_magic)
        << "refused as soon as 4 bytes are here";
    auto version = hello;
    version[4] = 2;
    EXPECT_EQ(tcp::parse_handshake(version.data(), version.size(), true, me, p, used),
              tcp::hs_result::bad_version);
    for (std::uint32_t body : {0u, 255u, (64u << 20) + 1}) {
        auto b = hs_bytes(tcp::hs_type::hello, them, me, &theirs, 5, body);
        EXPECT_EQ(tcp::parse_handshake(b.data(), b.size(), true, me, p, used),
                  tcp::hs_result::bad_fields)
            << body;
    }
    auto reserved = hello;
    reserved[7] = 1;
    EXPECT_EQ(tcp::parse_handshake(reserved.data(), reserved.size(), true, me, p, used),
              tcp::hs_result::bad_fields);
    auto long_addr = hello;
    const std::uint16_t too_long = 300;
    std::memcpy(long_addr.data() + 8, &too_long, 2);
    EXPECT_EQ(tcp::parse_handshake(long_addr.data(), long_addr.size(), true, me, p, used),
              tcp::hs_result::bad_fields);
    auto accept = hs_bytes(tcp::hs_type::accept, them, me, nullptr);
    ASSERT_EQ(tcp::parse_handshake(accept.data(), accept.size(), false, me, p, used),
              tcp::hs_result::ok);
    EXPECT_EQ(used, sizeof(tcp::handshake));
    auto reject =
        hs_bytes(tcp::hs_type::reject, them, me, nullptr, 0, 0, tcp::reject_reason::crossed);
    ASSERT_EQ(tcp::parse_handshake(reject.data(), reject.size(), false, me, p, used),
              tcp::hs_result::ok);
    EXPECT_EQ(p.m.reason, static_cast<std::uint8_t>(tcp::reject_reason::crossed));
    auto accept_addr = hs_bytes(tcp::hs_type::accept, them, me, &theirs);
    EXPECT_EQ(tcp::parse_handshake(accept_addr.data(), accept_addr.size(), false, me, p, used),
              tcp::hs_result::bad_fields)
        << "an answer carries no address";
}

TEST(tcp_wire, address_blobs)
{
    const tl::endpoint_id id{1, 2, 3};
    const tl::address a = fake_address(id, 4242);
    tcp::peer_blob b;
    ASSERT_TRUE(tcp::find_blob(a, b));
    ASSERT_EQ(b.count, 1U);
    EXPECT_EQ(b.at[0].port, 4242);
    EXPECT_EQ(tcp::cidr_text(b.at[0].addr), "127.0.0.1/8");
    // Malformed blobs are skipped: each one alone, then a good one after them.
    struct bad {
        std::vector<std::uint8_t> node;
        std::vector<std::uint8_t> ep;
    };
    const std::vector<bad> bads = {
        {{2, 1, 4, 8, 127, 0, 0, 1}, {1, 0}},     // version 2
        {{1, 0}, {}},                             // no address
        {{1, 5, 4, 8, 127, 0, 0, 1}, {1, 0}},     // count above what follows
        {{1, 1, 5, 8, 127, 0, 0, 1}, {1, 0}},     // family 5
        {{1, 1, 4, 33, 127, 0, 0, 1}, {1, 0}},    // prefix 33
        {{1, 1, 4, 8, 127, 0, 0}, {1, 0}},        // short address
        {{1, 1, 4, 8, 127, 0, 0, 1, 9}, {1, 0}},  // trailing byte
        {{1, 1, 4, 8, 127, 0, 0, 1}, {0, 0}},     // port 0
        {{1, 1, 4, 8, 127, 0, 0, 1}, {1}},        // ports do not match the count
    };
    for (std::size_t i = 0; i < bads.size(); ++i) {
        tl::address_builder bb(id);
        ASSERT_EQ(bb.add(tcp::wire_id, bads[i].node.data(), bads[i].node.size(), bads[i].ep.data(),
                         bads[i].ep.size()),
                  status::ok);
        EXPECT_FALSE(tcp::find_blob(bb.get(), b)) << "bad blob " << i;
        const tcp::ip_addr lo = ip("127.0.0.2/8");
        std::uint8_t node[tcp::max_blob_node];
        const std::size_t n = tcp::encode_blob_node(&lo, 1, node);
        const std::uint16_t port = 77;
        ASSERT_EQ(bb.add(tcp::wire_id, node, n, &port, 2), status::ok);
        ASSERT_TRUE(tcp::find_blob(bb.get(), b)) << "the good blob after bad blob " << i;
        EXPECT_EQ(b.at[0].port, 77);
    }
}

// ------------------------------------------------------------------ instances in one process

struct message {
    tl::src_id src;
    tl::am_word am;
    std::vector<std::uint8_t> bytes;
};

/// One tcp instance with recording handlers.
struct instance {
    std::unique_ptr<tl::iface> t;
    tl::address addr;
    std::vector<message> rx;
    std::vector<std::pair<tl::conn_id, status>> failed;

    static void on_am(void *arg, tl::src_id src, tl::am_word am, const void *d, std::size_t len)
    {
        const auto *p = static_cast<const std::uint8_t *>(d);
        static_cast<instance *>(arg)->rx.push_back({src, am, {p, p + len}});
    }
    static void on_failed(void *arg, tl::conn_id c, tl::src_id, status why)
    {
        static_cast<instance *>(arg)->failed.emplace_back(c, why);
    }
    static void on_done(void *, std::uint64_t, status) {}
    static void on_wake(void *) {}
    static void on_imm(void *, tl::src_id, std::uint32_t, std::size_t) {}

    unsigned progress() { return tl::progress(t.get()); }
    [[nodiscard]] const tcp::stats &stats() const { return *tcp::get_stats(*t); }
    status send(tl::conn_id c, std::uint64_t seq)
    {
        return tl::send_short(t.get(), c, tl::make_am(9, 0), &seq, sizeof(seq), nullptr, 0);
    }
    status send_payload(tl::conn_id c, std::uint64_t seq, const std::vector<std::uint8_t> &p)
    {
        const iovec iov{const_cast<std::uint8_t *>(p.data()), p.size()};
        return tl::send_bcopy(t.get(), c, tl::make_am(9, 0), &seq, sizeof(seq), &iov, 1, 0,
                              p.size());
    }
};

class tcp_iface_test : public ::testing::Test {
  protected:
    void SetUp() override
    {
        weft::core::init_once();
        comp_ = tl::find_component("tcp");
        ASSERT_NE(comp_, nullptr) << "the tcp transport is not built";
        ASSERT_EQ(config_.read_environment(), status::ok);
        ASSERT_EQ(config_.set("TCP_IF", "127.0.0.1/8"), status::ok);
        ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "3s"), status::ok);
        reopen_md();
    }

    void reopen_md()
    {
        std::string why;
        const std::vector<tl::resource> res = comp_->query(config_, why);
        if (res.empty()) {
            GTEST_SKIP() << "tcp is not available here: " << why;
        }
        res_ = res.front();
        auto md = comp_->open_md(config_, res_);
        ASSERT_TRUE(md.ok());
        md_ = std::move(md.value());
    }

    std::unique_ptr<instance> open(std::uint32_t ep_id)
    {
        auto in = std::make_unique<instance>();
        const tl::open_params p{weft::core::local_node_id(), static_cast<std::uint32_t>(getpid()),
                                ep_id};
        auto r = comp_->open(p, res_, *md_, config_);
        EXPECT_TRUE(r.ok()) << weft::base::status_string(r.error());
        if (!r.ok()) {
            return nullptr;
        }
        in->t = std::move(r.value());
        in->t->set_handlers({&instance::on_am, &instance::on_failed, &instance::on_done,
                             &instance::on_wake, &instance::on_imm, in.get()});
        tl::address_builder b({p.node_id, p.pid, p.ep_id});
        EXPECT_EQ(in->t->pack_address(b), status::ok);
        in->addr = b.get();
        in->t->set_local_address(in->addr);
        return in;
    }

    /// Progress every instance until `done` or `ms` pass; false on timeout.
    template <class Pred>
    bool until(std::initializer_list<instance *> ins, Pred done, int ms = 10000)
    {
        const auto end = clock_type::now() + std::chrono::milliseconds(ms);
        while (!done()) {
            for (instance *i : ins) {
                i->progress();
            }
            if (clock_type::now() > end) {
                return false;
            }
        }
        return true;
    }

    /// Send `seq` from `from` on `c` until the transport takes it.
    bool send_until_taken(std::initializer_list<instance *> ins, instance *from, tl::conn_id c,
                          std::uint64_t seq)
    {
        status st = status::again;
        const bool ok = until(ins, [&] {
            st = from->send(c, seq);
            return st != status::again;
        });
        return ok && st == status::ok;
    }

    /// The same with `payload` after `seq` (a bcopy frame).
    bool send_until_taken(std::initializer_list<instance *> ins, instance *from, tl::conn_id c,
                          std::uint64_t seq, const std::vector<std::uint8_t> &payload)
    {
        status st = status::again;
        const bool ok = until(ins, [&] {
            st = from->send_payload(c, seq, payload);
            return st != status::again;
        });
        return ok && st == status::ok;
    }

    const tl::component *comp_ = nullptr;
    tl::resource res_;
    weft::base::config_store config_;
    std::unique_ptr<tl::memory_domain> md_;
};

std::uint64_t seq_of(const message &m)
{
    std::uint64_t s = 0;
    std::memcpy(&s, m.bytes.data(), sizeof(s));
    return s;
}

TEST_F(tcp_iface_test, attributes_and_cost_leave_shm_and_verbs_ahead)
{
    auto a = open(100);
    ASSERT_NE(a, nullptr);
    const tl::attributes &at = a->t->attr();
    EXPECT_EQ(at.caps, tl::cap::am) << "no one-sided operations: proto/ carries them";
    EXPECT_EQ(at.max_short, 1024U);
    EXPECT_EQ(at.max_bcopy, 256U * 1024);
    EXPECT_GE(at.max_hdr, 128U);
    EXPECT_EQ(md_->rkey_size(), 0U);
    // The channel picks a transport by time_ns(8 KiB); shm's and verbs' models
    // (src/transport/shm/shm.cpp, verbs/verbs.cpp) must stay ahead of tcp's.
    const tl::cost_model shm{40, 150, 5000};
    const tl::cost_model verbs{100, 1500, 10000};
    EXPECT_GT(at.cost.time_ns(8192), shm.time_ns(8192));
    EXPECT_GT(at.cost.time_ns(8192), verbs.time_ns(8192));
    tcp::peer_blob b;
    ASSERT_TRUE(tcp::find_blob(a->addr, b));
    EXPECT_EQ(b.count, 1U);
    EXPECT_EQ(tcp::cidr_text(b.at[0].addr), "127.0.0.1/8");
    EXPECT_NE(b.at[0].port, 0);
}

TEST_F(tcp_iface_test, connections_are_made_lazily_on_first_use)
{
    auto a = open(100);
    auto b = open(101);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    for (int i = 0; i < 1000; ++i) {
        a->progress();
        b->progress();
    }
    EXPECT_EQ(a->stats().connects_started + b->stats().connects_started, 0U)
        << "nothing is connected before a send";
    tl::conn_id c = tl::invalid_id;
    ASSERT_TRUE(a->t->reachable(b->addr));
    ASSERT_EQ(a->t->connect(b->addr, c), status::ok) << "connect() returns at once";
    ASSERT_NE(c, tl::invalid_id);
    EXPECT_EQ(a->stats().connects_started, 1U);
    // Not up yet: `again`, and proto/ keeps the send (an operation is never
    // reported done before its connection exists).
    EXPECT_EQ(a->send(c, 0), status::again);
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), c, 0));
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !b->rx.empty(); }));
    EXPECT_EQ(b->stats().connects_accepted, 1U);
    EXPECT_EQ(b->stats().connects_started, 0U);
    // b answers on the same connection: connect() finds it, no second one.
    tl::address from;
    ASSERT_EQ(b->t->remote_address(b->rx[0].src, from), status::ok);
    EXPECT_EQ(from.id(), a->addr.id());
    tl::conn_id back = tl::invalid_id;
    ASSERT_EQ(b->t->connect(from, back), status::ok);
    EXPECT_EQ(back, b->rx[0].src) << "conn_id and src_id are the same number";
    ASSERT_EQ(b->send(back, 1), status::ok) << "the connection is up: the send goes at once";
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !a->rx.empty(); }));
    EXPECT_EQ(b->stats().connects_started, 0U);
    EXPECT_EQ(a->stats().connects_accepted, 0U);
    EXPECT_EQ(seq_of(a->rx[0]), 1U);
    tl::conn_id again = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, again), status::ok);
    EXPECT_EQ(again, c) << "cheap to call again for the same peer";
}

// SPIN_CONNS: with few connections progress reads them with recv() alone
// and runs epoll_wait only now and then. Under every setting, messages flow
// both ways, a third endpoint that connects later is accepted (by that
// occasional epoll_wait) and served, and a peer that closes is noticed.
TEST_F(tcp_iface_test, spinning_connections_still_accept_newcomers_and_notice_closes)
{
    for (const char *spin : {"0", "1", "2"}) {
        SCOPED_TRACE(std::string("WEFT_TCP_SPIN_CONNS=") + spin);
        ASSERT_EQ(config_.set("TCP_SPIN_CONNS", spin), status::ok);
        const unsigned limit = static_cast<unsigned>(std::atoi(spin));
        auto a = open(100);
        auto b = open(101);
        auto c = open(102);
        ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
        tl::conn_id ab = tl::invalid_id;
        ASSERT_EQ(a->t->connect(b->addr, ab), status::ok);
        // A ping-pong of 200: b answers each message on the connection it came on.
        for (std::uint64_t i = 0; i < 200; ++i) {
            ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), ab, i));
            ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.size() == i + 1; }));
            ASSERT_EQ(b->send(b->rx.back().src, i), status::ok);
            ASSERT_TRUE(until({a.get(), b.get()}, [&] { return a->rx.size() == i + 1; }));
            ASSERT_EQ(seq_of(a->rx.back()), i);
        }
        EXPECT_EQ(a->stats().spinning, limit >= 1 ? 1U : 0U)
            << "one connection: read without epoll iff SPIN_CONNS >= 1";
        // A newcomer: c dials a, which is spinning on its connection to b.
        tl::conn_id ca = tl::invalid_id;
        ASSERT_EQ(c->t->connect(a->addr, ca), status::ok);
        ASSERT_TRUE(send_until_taken({a.get(), b.get(), c.get()}, c.get(), ca, 1000));
        ASSERT_TRUE(until({a.get(), b.get(), c.get()}, [&] { return a->rx.size() == 201; }));
        EXPECT_EQ(seq_of(a->rx.back()), 1000U);
        ASSERT_EQ(a->send(a->rx.back().src, 1001), status::ok);
        ASSERT_TRUE(until({a.get(), b.get(), c.get()}, [&] { return c->rx.size() == 1; }));
        EXPECT_EQ(seq_of(c->rx[0]), 1001U);
        // And b still reaches a.
        ASSERT_EQ(b->send(b->rx.back().src, 2000), status::ok);
        ASSERT_TRUE(until({a.get(), b.get(), c.get()}, [&] { return a->rx.size() == 202; }));
        EXPECT_EQ(a->stats().spinning, limit >= 2 ? 2U : 0U)
            << "two connections: read without epoll iff SPIN_CONNS >= 2";
        // b closes its endpoint: a notices (one failure, for b), c is unharmed.
        b.reset();
        ASSERT_TRUE(until(
            {a.get(), c.get()}, [&] { return !a->failed.empty(); }, 5000))
            << "a spinning endpoint notices a peer that closed";
        EXPECT_EQ(a->failed.size(), 1U);
        EXPECT_EQ(a->failed[0].first, ab);
        ASSERT_EQ(c->send(ca, 3000), status::ok);
        ASSERT_TRUE(until({a.get(), c.get()}, [&] { return a->rx.size() == 203; }));
        EXPECT_EQ(seq_of(a->rx.back()), 3000U);
        EXPECT_EQ(a->stats().spinning, limit >= 1 ? 1U : 0U) << "back to one connection";
    }
}

// A connection's receive buffer is 64 KiB until a frame larger than that
// arrives; then it grows once to the peer's largest frame, and the frame
// (and the next large one) arrives whole and intact.
TEST_F(tcp_iface_test, receive_buffers_grow_only_for_large_frames)
{
    auto a = open(100);
    auto b = open(101);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    tl::conn_id ab = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, ab), status::ok);
    const std::vector<std::uint8_t> small(60 * 1024, 0x5a);
    for (std::uint64_t i = 0; i < 20; ++i) {
        ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), ab, i, small));
    }
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.size() == 20; }));
    EXPECT_EQ(b->stats().rx_grown, 0U) << "frames up to 64 KiB fit the first buffer";
    std::vector<std::uint8_t> large(a->t->attr().max_bcopy - 64);
    for (std::size_t i = 0; i < large.size(); ++i) {
        large[i] = static_cast<std::uint8_t>(i * 131 + 7);
    }
    for (std::uint64_t i = 100; i < 103; ++i) {
        ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), ab, i, large));
    }
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.size() == 23; }));
    EXPECT_EQ(b->stats().rx_grown, 1U) << "grown once, for the first large frame";
    for (std::size_t k = 20; k < 23; ++k) {
        const message &m = b->rx[k];
        ASSERT_EQ(m.bytes.size(), sizeof(std::uint64_t) + large.size());
        EXPECT_EQ(seq_of(m), 100U + (k - 20));
        EXPECT_EQ(0,
                  std::memcmp(m.bytes.data() + sizeof(std::uint64_t), large.data(), large.size()))
            << "frame " << k;
    }
    EXPECT_TRUE(a->failed.empty());
    EXPECT_TRUE(b->failed.empty());
}

// Both sides connect and send first, before either has progressed: the
// endpoint with the smaller id (node, pid, endpoint) keeps its own connection,
// the other drops its attempt and takes the accepted one. Every message
// arrives, in order, over one connection.
TEST_F(tcp_iface_test, simultaneous_connect_leaves_one_connection_by_the_documented_rule)
{
    std::uint64_t kept = 0;
    std::uint64_t small_yielded = 0;
    for (std::uint32_t round = 0; round < 12; ++round) {
        // Alternate which side has the smaller id, and which connects first.
        const std::uint32_t lo_id = 200 + 2 * round;
        auto small = open(lo_id);
        auto large = open(lo_id + 1);
        ASSERT_TRUE(small != nullptr && large != nullptr);
        instance *first = round % 2 == 0 ? small.get() : large.get();
        instance *second = first == small.get() ? large.get() : small.get();
        tl::conn_id c1 = tl::invalid_id;
        tl::conn_id c2 = tl::invalid_id;
        ASSERT_EQ(first->t->connect(second->addr, c1), status::ok);
        ASSERT_EQ(second->t->connect(first->addr, c2), status::ok);
        EXPECT_EQ(first->send(c1, 0), status::again);
        EXPECT_EQ(second->send(c2, 0), status::again);
        constexpr std::uint64_t n = 50;
        std::uint64_t sent1 = 0;
        std::uint64_t sent2 = 0;
        ASSERT_TRUE(until({first, second},
                          [&] {
                              if (sent1 < n && first->send(c1, sent1) == status::ok) {
                                  ++sent1;
                              }
                              if (sent2 < n && second->send(c2, sent2) == status::ok) {
                                  ++sent2;
                              }
                              return first->rx.size() == n && second->rx.size() == n;
                          }))
            << "round " << round << ": " << first->rx.size() << " and " << second->rx.size();
        for (instance *in : {first, second}) {
            for (std::uint64_t i = 0; i < n; ++i) {
                ASSERT_EQ(seq_of(in->rx[i]), i) << "round " << round;
                ASSERT_EQ(in->rx[i].src, in->rx[0].src);
            }
        }
        EXPECT_TRUE(small->failed.empty() && large->failed.empty());
        // The rule: one side accepts once and yields once, the other never
        // accepts; the larger never keeps its own, and the smaller yields only
        // if its hello had not left (its connect() still under way).
        instance *acceptor = large->stats().connects_accepted != 0 ? large.get() : small.get();
        instance *other = acceptor == large.get() ? small.get() : large.get();
        EXPECT_EQ(acceptor->stats().connects_accepted, 1U) << "round " << round;
        EXPECT_EQ(acceptor->stats().crossed_yielded, 1U) << "round " << round;
        EXPECT_EQ(other->stats().connects_accepted, 0U) << "round " << round;
        EXPECT_EQ(other->stats().crossed_yielded, 0U) << "round " << round;
        EXPECT_EQ(large->stats().crossed_kept, 0U) << "round " << round;
        kept += small->stats().crossed_kept;
        small_yielded += small->stats().crossed_yielded;
        EXPECT_EQ(small->stats().conns_failed + large->stats().conns_failed, 0U);
    }
    // Most rounds the smaller side saw the larger's hello while its own was
    // out (the crossing itself); report how many, and how often the smaller
    // side's connect() was still under way (on loopback: never seen).
    std::printf(
        "crossed hellos refused by the smaller side: %llu of 12 rounds; "
        "smaller side yielded: %llu\n",
        static_cast<unsigned long long>(kept), static_cast<unsigned long long>(small_yielded));
}

TEST_F(tcp_iface_test, an_endpoint_reaches_itself)
{
    auto a = open(100);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(a->t->reachable(a->addr));
    tl::conn_id c = tl::invalid_id;
    ASSERT_EQ(a->t->connect(a->addr, c), status::ok);
    ASSERT_TRUE(send_until_taken({a.get()}, a.get(), c, 0));
    std::vector<std::uint8_t> big(60000, 0x77);
    for (std::uint64_t i = 1; i < 100; ++i) {
        ASSERT_TRUE(until({a.get()}, [&] { return a->send_payload(c, i, big) != status::again; }));
    }
    ASSERT_TRUE(until({a.get()}, [&] { return a->rx.size() == 100; }));
    for (std::uint64_t i = 0; i < 100; ++i) {
        EXPECT_EQ(seq_of(a->rx[i]), i);
        EXPECT_EQ(a->rx[i].src, c);
    }
    tl::address from;
    ASSERT_EQ(a->t->remote_address(c, from), status::ok);
    EXPECT_EQ(from.id(), a->addr.id());
    EXPECT_TRUE(a->failed.empty());
}

TEST_F(tcp_iface_test, ipv6_loopback)
{
    ASSERT_EQ(config_.set("TCP_IF", "::1"), status::ok);
    std::string why;
    if (comp_->query(config_, why).empty()) {
        GTEST_SKIP() << "no IPv6 loopback here: " << why;
    }
    reopen_md();
    auto a = open(100);
    auto b = open(101);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    tcp::peer_blob blob;
    ASSERT_TRUE(tcp::find_blob(b->addr, blob));
    ASSERT_EQ(blob.count, 1U);
    EXPECT_EQ(blob.at[0].addr.family, 6);
    EXPECT_EQ(tcp::ip_text(blob.at[0].addr), "::1");
    tl::conn_id c = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, c), status::ok);
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), c, 0));
    std::vector<std::uint8_t> big(65536 - 8, 0x61);
    for (std::uint64_t i = 1; i < 64; ++i) {
        ASSERT_TRUE(
            until({a.get(), b.get()}, [&] { return a->send_payload(c, i, big) != status::again; }));
    }
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.size() == 64; }));
    for (std::uint64_t i = 1; i < 64; ++i) {
        ASSERT_EQ(seq_of(b->rx[i]), i);
        ASSERT_EQ(b->rx[i].bytes.size(), 65536U);
        ASSERT_EQ(b->rx[i].bytes.back(), 0x61);
    }
}

TEST_F(tcp_iface_test, invalid_settings_fail_the_open_naming_them)
{
    const tl::open_params p{weft::core::local_node_id(), static_cast<std::uint32_t>(getpid()), 1};
    for (auto [name, value] : std::vector<std::pair<const char *, const char *>>{
             {"TCP_IF", "eth0,^eth1"},
             {"TCP_IF", "10.0.0.0/99"},
             {"TCP_MAX_SHORT", "32k"},  // above MAX_BCOPY below
             {"TCP_PORT_MIN", "5000"}}) {
        weft::base::config_store cfg = config_;
        ASSERT_EQ(cfg.set(name, value), status::ok) << name << "=" << value;
        if (std::strcmp(name, "TCP_MAX_SHORT") == 0) {
            ASSERT_EQ(cfg.set("TCP_MAX_BCOPY", "16k"), status::ok);
        }
        if (std::strcmp(name, "TCP_PORT_MIN") == 0) {
            ASSERT_EQ(cfg.set("TCP_PORT_MAX", "4000"), status::ok);
        }
        weft::test::expect_log_errors expect(1);
        auto r = comp_->open(p, res_, *md_, cfg);
        EXPECT_FALSE(r.ok());
        EXPECT_EQ(r.error(), status::invalid) << name << "=" << value;
    }
}

/// A free port on 127.0.0.1 (bound, then closed: nothing listens there).
std::uint16_t dead_port()
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len), 0);
    close(fd);
    return ntohs(sin.sin_port);
}

/// The peer's address has a port where nothing listens: the peer fails at once.
TEST_F(tcp_iface_test, connect_to_a_dead_port_fails_the_peer_quickly)
{
    auto a = open(100);
    ASSERT_NE(a, nullptr);
    const tl::address dead = fake_address({weft::core::local_node_id(), 1, 7}, dead_port());
    weft::test::expect_log_warnings expect(1);  // "no address of the peer answered"
    tl::conn_id c = tl::invalid_id;
    const auto start = clock_type::now();
    ASSERT_EQ(a->t->connect(dead, c), status::ok);
    ASSERT_TRUE(until(
        {a.get()}, [&] { return !a->failed.empty(); }, 5000));
    EXPECT_LT(clock_type::now() - start, std::chrono::seconds(2));
    ASSERT_EQ(a->failed.size(), 1U);
    EXPECT_EQ(a->failed[0].first, c);
    EXPECT_EQ(a->failed[0].second, status::unreachable);
    EXPECT_EQ(a->send(c, 1), status::unreachable);
    tl::conn_id again = tl::invalid_id;
    EXPECT_EQ(a->t->connect(dead, again), status::unreachable) << "no second attempt";
    for (int i = 0; i < 1000; ++i) {
        a->progress();
    }
    EXPECT_EQ(a->failed.size(), 1U) << "reported once";
}

/// A loopback listening socket that accepts (in the kernel) and never answers,
/// with an endpoint address that names it.
struct silent_listener {
    int fd = -1;
    int queued = -1;  ///< fill(): the connection that fills the accept queue
    std::uint16_t port = 0;
    tl::address addr;

    void open(int backlog = 16)
    {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        ASSERT_GE(fd, 0);
        sockaddr_in sin = loopback(0);
        ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)), 0);
        ASSERT_EQ(listen(fd, backlog), 0);
        socklen_t len = sizeof(sin);
        ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len), 0);
        port = ntohs(sin.sin_port);
        addr = fake_address({weft::core::local_node_id(), 1, 8}, port);
    }
    /// Fill the accept queue of a listener opened with backlog 0: one
    /// connection the kernel completed and nobody accepts. The kernel then drops
    /// further SYNs, so a connect() to it stays under way (checked: a probe is
    /// not connected after 200 ms).
    void fill()
    {
        queued = socket(AF_INET, SOCK_STREAM, 0);
        ASSERT_GE(queued, 0);
        const sockaddr_in sin = loopback(port);
        ASSERT_EQ(::connect(queued, reinterpret_cast<const sockaddr *>(&sin), sizeof(sin)), 0);
        const int probe = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ASSERT_GE(probe, 0);
        const int rc = ::connect(probe, reinterpret_cast<const sockaddr *>(&sin), sizeof(sin));
        const int err = errno;
        pollfd p{probe, POLLOUT, 0};
        const int ready = rc == 0 ? 1 : poll(&p, 1, 200);
        close(probe);
        ASSERT_TRUE(rc != 0 && err == EINPROGRESS) << "a connect to the full queue completed";
        ASSERT_EQ(ready, 0) << "the kernel did not drop the SYN to a full accept queue";
    }
    /// Close it: the kernel resets the connections still in its accept queue.
    void close_now()
    {
        if (queued >= 0) {
            close(queued);
            queued = -1;
        }
        if (fd >= 0) {
            close(fd);
            fd = -1;
        }
    }
    ~silent_listener() { close_now(); }

    static sockaddr_in loopback(std::uint16_t port)
    {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sin.sin_port = htons(port);
        return sin;
    }
};

/// A listener that accepts (the kernel completes the TCP handshake) but never
/// answers the hello: a process holds it, and its answer may be a long
/// computation away, so the peer waits past WEFT_TCP_CONNECT_TIMEOUT without
/// failing. Once that socket is gone (the listener closes: the kernel resets the
/// connection it holds), the peer fails at once, and another peer goes on.
TEST_F(tcp_iface_test, a_listener_that_never_answers_keeps_the_peer_waiting_until_it_closes)
{
    ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "300ms"), status::ok);
    auto a = open(100);
    auto b = open(101);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    silent_listener l;
    ASSERT_NO_FATAL_FAILURE(l.open());
    const tl::address &silent = l.addr;
    tl::conn_id c = tl::invalid_id;
    tl::conn_id cb = tl::invalid_id;
    ASSERT_EQ(a->t->connect(silent, c), status::ok);
    ASSERT_EQ(a->t->connect(b->addr, cb), status::ok);
    // Four connect timeouts: still waiting, nothing failed.
    EXPECT_FALSE(until(
        {a.get(), b.get()}, [&] { return !a->failed.empty(); }, 1200));
    EXPECT_EQ(a->send(c, 1), status::again) << "not connected yet";
    // The other peer works meanwhile.
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), cb, 5));
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !b->rx.empty(); }));
    weft::test::expect_log_warnings expect(1);
    l.close_now();
    const auto start = clock_type::now();
    ASSERT_TRUE(until(
        {a.get(), b.get()}, [&] { return !a->failed.empty(); }, 10000));
    EXPECT_LT(clock_type::now() - start, std::chrono::seconds(3));
    ASSERT_EQ(a->failed.size(), 1U);
    EXPECT_EQ(a->failed[0].first, c) << "only the silent peer failed";
}

/// With keepalive off nothing would notice a host that vanished after its
/// kernel took the hello, so the handshake keeps WEFT_TCP_CONNECT_TIMEOUT: a
/// listener that never answers fails the peer after it.
TEST_F(tcp_iface_test, without_keepalive_a_silent_listener_fails_the_peer_after_the_connect_timeout)
{
    ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "300ms"), status::ok);
    ASSERT_EQ(config_.set("TCP_KEEPALIVE", "0"), status::ok);
    auto a = open(100);
    ASSERT_NE(a, nullptr);
    silent_listener l;
    ASSERT_NO_FATAL_FAILURE(l.open());
    const tl::address &silent = l.addr;
    weft::test::expect_log_warnings expect(1);
    tl::conn_id c = tl::invalid_id;
    const auto start = clock_type::now();
    ASSERT_EQ(a->t->connect(silent, c), status::ok);
    ASSERT_TRUE(until(
        {a.get()}, [&] { return !a->failed.empty(); }, 10000));
    const auto took = clock_type::now() - start;
    EXPECT_GE(took, std::chrono::milliseconds(250));
    EXPECT_LT(took, std::chrono::seconds(3));
    l.close_now();
}

/// Either side of a handshake may compute, without progress, for longer than
/// WEFT_TCP_CONNECT_TIMEOUT: the connection is made once it progresses again.
/// First the acceptor is silent while the dialler waits for its answer, then
/// (fresh instances) the dialler is silent right after its connect() while the
/// acceptor waits for its hello. No failure on either side, and the message
/// queued during the wait is delivered.
TEST_F(tcp_iface_test, a_peer_that_computes_through_the_handshake_keeps_its_connection)
{
    ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "300ms"), status::ok);
    for (const bool busy_acceptor : {true, false}) {
        SCOPED_TRACE(busy_acceptor ? "busy acceptor" : "busy dialler");
        auto a = open(busy_acceptor ? 110 : 120);
        auto b = open(busy_acceptor ? 111 : 121);
        ASSERT_TRUE(a != nullptr && b != nullptr);
        tl::conn_id c = tl::invalid_id;
        ASSERT_EQ(a->t->connect(b->addr, c), status::ok);
        // One side alone progresses for four connect timeouts.
        instance *active = busy_acceptor ? a.get() : b.get();
        const auto end = clock_type::now() + std::chrono::milliseconds(1200);
        while (clock_type::now() < end) {
            active->progress();
        }
        EXPECT_TRUE(a->failed.empty());
        EXPECT_TRUE(b->failed.empty());
        ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), c, 42));
        ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !b->rx.empty(); }));
        EXPECT_EQ(seq_of(b->rx[0]), 42U);
        EXPECT_TRUE(a->failed.empty()) << "the dialler failed the connection";
        EXPECT_TRUE(b->failed.empty());
        EXPECT_EQ(a->stats().dial_failures, 0U);
        EXPECT_EQ(a->stats().conns_failed, 0U);
    }
}

/// The smaller side of a crossed connect takes the larger side's connection
/// when its own hello has not left yet (its connect() still under way): a
/// refusal would leave the larger side waiting for a hello that needs the
/// smaller side's progress, which may be a long computation away. Here the
/// smaller side's attempt goes to a listener whose accept queue is full (the
/// kernel drops the SYN), then the smaller side computes for four connect
/// timeouts while the larger progresses alone: neither fails, and frames flow
/// both ways on the larger side's connection.
TEST_F(tcp_iface_test, a_crossed_connect_never_waits_for_the_refusers_progress)
{
    ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "300ms"), status::ok);
    auto small = open(130);
    auto large = open(131);
    ASSERT_TRUE(small != nullptr && large != nullptr);
    silent_listener full;
    ASSERT_NO_FATAL_FAILURE(full.open(0));
    ASSERT_NO_FATAL_FAILURE(full.fill());
    // The larger endpoint's identity, at the full listener's port.
    const tl::address stalled = fake_address(large->addr.id(), full.port);
    tl::conn_id cs = tl::invalid_id;
    tl::conn_id cl = tl::invalid_id;
    ASSERT_EQ(small->t->connect(stalled, cs), status::ok);
    EXPECT_EQ(small->send(cs, 0), status::again);  // its connect() starts, and stalls
    ASSERT_EQ(large->t->connect(small->addr, cl), status::ok);
    EXPECT_EQ(large->send(cl, 0), status::again);
    ASSERT_TRUE(until(
        {small.get(), large.get()},
        [&] { return small->stats().crossed_kept + small->stats().crossed_yielded != 0; }, 2000))
        << "the larger side's hello never reached the smaller side";
    EXPECT_EQ(small->stats().crossed_kept, 0U) << "refused while its own hello had not left";
    const auto end = clock_type::now() + std::chrono::milliseconds(1200);
    while (clock_type::now() < end) {
        large->progress();
    }
    EXPECT_TRUE(large->failed.empty()) << "the larger side gave up on a computing peer";
    ASSERT_TRUE(send_until_taken({small.get(), large.get()}, large.get(), cl, 7));
    ASSERT_TRUE(send_until_taken({small.get(), large.get()}, small.get(), cs, 8));
    ASSERT_TRUE(until({small.get(), large.get()},
                      [&] { return !small->rx.empty() && !large->rx.empty(); }));
    EXPECT_EQ(seq_of(small->rx[0]), 7U);
    EXPECT_EQ(seq_of(large->rx[0]), 8U);
    EXPECT_TRUE(small->failed.empty());
    EXPECT_TRUE(large->failed.empty());
    EXPECT_EQ(small->stats().connects_accepted, 1U);
    EXPECT_EQ(large->stats().connects_accepted, 0U);
}

/// A raw TCP client that speaks the handshake itself, with a made-up identity.
/// Open file descriptors of this process.
std::size_t open_fds()
{
    std::size_t n = 0;
    for ([[maybe_unused]] const auto &e : std::filesystem::directory_iterator("/proc/self/fd")) {
        ++n;
    }
    return n;
}

struct raw_client {
    int fd = -1;
    tl::endpoint_id id;
    tl::address addr;
    std::uint32_t peer_conn = 0;

    explicit raw_client(std::uint32_t pid) : id{424242, pid, 1}, addr(fake_address(id, 9)) {}
    ~raw_client()
    {
        if (fd >= 0) {
            close(fd);
        }
    }
    void dial(const tl::address &target)
    {
        tcp::peer_blob b;
        ASSERT_TRUE(tcp::find_blob(target, b));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = htons(b.at[0].port);
        std::memcpy(&sin.sin_addr, b.at[0].addr.bytes, 4);
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)), 0);
    }
    void write_all(const void *p, std::size_t n)
    {
        ASSERT_EQ(::send(fd, p, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
    }
    void write_all(const std::vector<std::uint8_t> &v) { write_all(v.data(), v.size()); }
    /// Read `n` bytes while `in` progresses; false on end of stream or timeout.
    bool read_exact(instance *in, void *out, std::size_t n, int ms = 5000)
    {
        auto *p = static_cast<std::uint8_t *>(out);
        const auto end = clock_type::now() + std::chrono::milliseconds(ms);
        while (n > 0 && clock_type::now() < end) {
            in->progress();
            const ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
            if (r == 0) {
                return false;
            }
            if (r > 0) {
                p += r;
                n -= static_cast<std::size_t>(r);
            }
        }
        return n == 0;
    }
    /// Whether the other side closed the connection within `ms` (reading and
    /// dropping whatever comes), while `in` progresses.
    bool closed_by_peer(instance *in, int ms = 5000)
    {
        const auto end = clock_type::now() + std::chrono::milliseconds(ms);
        while (clock_type::now() < end) {
            in->progress();
            std::uint8_t junk[4096];
            const ssize_t r = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                return true;
            }
        }
        return false;
    }
    /// Dial, hello, accept: a connection the instance took.
    void handshake(instance *in)
    {
        dial(in->addr);
        write_all(hs_bytes(tcp::hs_type::hello, id, in->addr.id(), &addr, 7));
        tcp::handshake m{};
        ASSERT_TRUE(read_exact(in, &m, sizeof(m)));
        ASSERT_EQ(m.magic, tcp::hs_magic);
        ASSERT_EQ(m.type, static_cast<std::uint8_t>(tcp::hs_type::accept));
        peer_conn = m.src_conn;
    }
    void frame(std::uint32_t len, std::uint16_t am, std::uint8_t type, std::uint32_t src,
               std::size_t body, std::uint8_t flags = 0)
    {
        std::vector<std::uint8_t> v(sizeof(tcp::frame_hdr) + body, 0x5c);
        const tcp::frame_hdr h{len, am, type, flags, src};
        std::memcpy(v.data(), &h, sizeof(h));
        write_all(v);
    }
};

/// A connection that sends a malformed frame, or half a frame and closes,
/// fails with a log line: reported once, its socket closed; the process and
/// the other connections go on.
TEST_F(tcp_iface_test, malformed_frames_fail_only_that_connection)
{
    auto b = open(101);
    auto a = open(100);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    tl::conn_id ab = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, ab), status::ok);
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), ab, 0));
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.size() == 1; }));
    struct variant {
        const char *what;
        void (*inject)(raw_client &);
    };
    const variant variants[] = {
        {"length above the announced limit",
         [](raw_client &r) { r.frame(65537, 0x0102, 1, 7, 0); }},
        {"length of 4 GiB - 1", [](raw_client &r) { r.frame(0xffffffff, 0x0102, 1, 7, 16); }},
        {"unknown source", [](raw_client &r) { r.frame(8, 0x0102, 1, 8, 8); }},
        {"unknown type", [](raw_client &r) { r.frame(8, 0x0102, 9, 7, 8); }},
        {"nonzero flags", [](raw_client &r) { r.frame(8, 0x0102, 1, 7, 8, 4); }},
        {"bye with a body", [](raw_client &r) { r.frame(3, 0, 2, 7, 3); }},
        {"half a frame, then the end of the stream",
         [](raw_client &r) {
             r.frame(1000, 0x0102, 1, 7, 500);
             shutdown(r.fd, SHUT_WR);
         }},
    };
    std::uint32_t pid = 1;
    for (const variant &v : variants) {
        SCOPED_TRACE(v.what);
        raw_client r(pid++);
        r.handshake(b.get());
        // One good frame first: the connection works until the bad one.
        r.frame(8, 0x0305, 1, 7, 8);
        const std::size_t before = b->rx.size();
        ASSERT_TRUE(until({b.get()}, [&] { return b->rx.size() == before + 1; }));
        EXPECT_EQ(b->rx.back().am, 0x0305);
        EXPECT_EQ(b->rx.back().src, r.peer_conn);
        tl::address from;
        ASSERT_EQ(b->t->remote_address(r.peer_conn, from), status::ok);
        EXPECT_EQ(from.id(), r.id);
        const std::size_t failed = b->failed.size();
        {
            weft::test::expect_log_warnings expect(1);  // names the peer and what was wrong
            v.inject(r);
            EXPECT_TRUE(r.closed_by_peer(b.get())) << "the connection was not closed";
            ASSERT_TRUE(until({b.get()}, [&] { return b->failed.size() == failed + 1; }));
        }
        EXPECT_EQ(b->failed.back().first, r.peer_conn);
        EXPECT_EQ(b->failed.back().second, status::unreachable);
        EXPECT_EQ(b->rx.size(), before + 1) << "nothing of the bad frame was delivered";
        EXPECT_EQ(b->send(r.peer_conn, 1), status::unreachable);
    }
    EXPECT_EQ(b->stats().malformed, std::size(variants) - 1) << "the half frame is a loss";
    // a's connection lives.
    ASSERT_EQ(a->send(ab, 1), status::ok);
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return b->rx.back().src == b->rx[0].src; }));
    EXPECT_TRUE(a->failed.empty());
    for (const auto &f : b->failed) {
        EXPECT_NE(f.first, b->rx[0].src) << "a's connection was reported failed";
    }
}

/// What is not a weft peer: refused with a log line (not for us, or another
/// version: an answer saying so), and nothing else happens.
TEST_F(tcp_iface_test, strangers_are_refused)
{
    ASSERT_EQ(config_.set("TCP_CONNECT_TIMEOUT", "300ms"), status::ok);
    auto b = open(101);
    ASSERT_NE(b, nullptr);
    {
        SCOPED_TRACE("bad magic");
        weft::test::expect_log_warnings expect(1);
        raw_client r(1);
        r.dial(b->addr);
        r.write_all(std::vector<std::uint8_t>(80, 'G'));
        EXPECT_TRUE(r.closed_by_peer(b.get()));
    }
    {
        SCOPED_TRACE("an address that is not the sender's");
        weft::test::expect_log_warnings expect(1);
        raw_client r(2);
        r.dial(b->addr);
        raw_client other(3);
        r.write_all(hs_bytes(tcp::hs_type::hello, r.id, b->addr.id(), &other.addr));
        EXPECT_TRUE(r.closed_by_peer(b.get()));
    }
    {
        SCOPED_TRACE("another version");
        weft::test::expect_log_errors expect(1);
        raw_client r(4);
        r.dial(b->addr);
        auto h = hs_bytes(tcp::hs_type::hello, r.id, b->addr.id(), &r.addr);
        h[4] = tcp::hs_version + 1;
        r.write_all(h);
        tcp::handshake m{};
        ASSERT_TRUE(r.read_exact(b.get(), &m, sizeof(m)));
        EXPECT_EQ(m.type, static_cast<std::uint8_t>(tcp::hs_type::reject));
        EXPECT_EQ(m.reason, static_cast<std::uint8_t>(tcp::reject_reason::version));
        EXPECT_TRUE(r.closed_by_peer(b.get()));
    }
    {
        SCOPED_TRACE("a hello for another endpoint (a stale address): no log line above debug");
        raw_client r(5);
        r.dial(b->addr);
        r.write_all(hs_bytes(tcp::hs_type::hello, r.id, {1, 2, 3}, &r.addr));
        tcp::handshake m{};
        ASSERT_TRUE(r.read_exact(b.get(), &m, sizeof(m)));
        EXPECT_EQ(m.type, static_cast<std::uint8_t>(tcp::hs_type::reject));
        EXPECT_EQ(m.reason, static_cast<std::uint8_t>(tcp::reject_reason::not_for_me));
        close(r.fd);  // the refusing side waits for us to close first
        r.fd = -1;
    }
    {
        SCOPED_TRACE(
            "a client that says nothing: kept while it is connected (its hello may "
            "come after a computation), released when it closes");
        // The socket refused above closes once b reads the client's close:
        // count after that, so that it cannot hide a socket kept here.
        const auto settle = clock_type::now() + std::chrono::milliseconds(200);
        while (clock_type::now() < settle) {
            b->progress();
        }
        const std::size_t fds = open_fds();
        raw_client r(6);
        r.dial(b->addr);
        EXPECT_FALSE(r.closed_by_peer(b.get(), 1000)) << "closed after the connect timeout";
        close(r.fd);
        r.fd = -1;
        const auto end = clock_type::now() + std::chrono::seconds(5);
        while (open_fds() != fds && clock_type::now() < end) {
            b->progress();
        }
        EXPECT_EQ(open_fds(), fds) << "the silent client's socket was not released";
    }
    EXPECT_TRUE(b->failed.empty()) << "no connection existed";
    EXPECT_GE(b->stats().handshakes_refused, 4U);
    // b still works.
    auto a = open(100);
    ASSERT_NE(a, nullptr);
    tl::conn_id c = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, c), status::ok);
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), c, 3));
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !b->rx.empty(); }));
}

/// A peer process killed (SIGKILL) while it streams frames to us: its
/// connection fails once, in bounded time, after every whole frame it sent
/// was delivered intact; another peer goes on.
TEST_F(tcp_iface_test, a_peer_killed_while_streaming_fails_only_its_connection)
{
    auto b = open(101);
    auto a = open(100);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    const tl::address b_addr = b->addr;
    int to_parent[2];
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The parent's instances share their sockets with us: never touch them.
        (void)a.release();
        (void)b.release();
        (void)md_.release();
        close(to_parent[0]);
        reopen_md();
        auto k = open(300);
        tl::conn_id c = tl::invalid_id;
        if (k == nullptr || k->t->connect(b_addr, c) != status::ok) {
            _exit(3);
        }
        std::vector<std::uint8_t> big(60000);
        bool told = false;
        for (std::uint64_t i = 0;;) {
            k->progress();
            for (std::size_t j = 0; j < big.size(); j += 4096) {
                big[j] = static_cast<std::uint8_t>(i);
            }
            const status st = k->send_payload(c, i, big);
            if (st == status::ok) {
                ++i;
            } else if (st != status::again) {
                _exit(4);
            }
            if (i == 50 && !told) {
                const char one = 1;
                (void)!write(to_parent[1], &one, 1);
                told = true;
            }
        }
    }
    close(to_parent[1]);
    // Let it connect and stream for a while, then kill it.
    char one = 0;
    ASSERT_TRUE(until({a.get(), b.get()}, [&] {
        pollfd p{to_parent[0], POLLIN, 0};
        return ::poll(&p, 1, 0) == 1 && read(to_parent[0], &one, 1) == 1;
    })) << "the child never streamed";
    const auto stream_end = clock_type::now() + std::chrono::milliseconds(30);
    while (clock_type::now() < stream_end) {
        b->progress();
    }
    weft::test::expect_log_warnings expect(1);  // the connection to the child: lost
    kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    close(to_parent[0]);
    const auto start = clock_type::now();
    ASSERT_TRUE(until(
        {a.get(), b.get()}, [&] { return !b->failed.empty(); }, 10000))
        << "the killed peer was not reported";
    EXPECT_LT(clock_type::now() - start, std::chrono::seconds(5));
    ASSERT_EQ(b->failed.size(), 1U);
    const tl::conn_id dead = b->failed[0].first;
    EXPECT_EQ(b->failed[0].second, status::unreachable);
    // Every frame it sent before it died arrived whole and in order.
    std::uint64_t next = 0;
    for (const message &m : b->rx) {
        ASSERT_EQ(m.src, dead);
        ASSERT_EQ(seq_of(m), next);
        ASSERT_EQ(m.bytes.size(), 8U + 60000U);
        for (std::size_t j = 8; j < m.bytes.size(); j += 4096) {
            ASSERT_EQ(m.bytes[j], static_cast<std::uint8_t>(next));
        }
        ++next;
    }
    EXPECT_GE(next, 50U);
    std::printf("%llu frames of 60 kB arrived before the peer was killed\n",
                static_cast<unsigned long long>(next));
    // The other peer is not affected.
    b->rx.clear();
    tl::conn_id c = tl::invalid_id;
    ASSERT_EQ(a->t->connect(b->addr, c), status::ok);
    ASSERT_TRUE(send_until_taken({a.get(), b.get()}, a.get(), c, 77));
    ASSERT_TRUE(until({a.get(), b.get()}, [&] { return !b->rx.empty(); }));
    EXPECT_EQ(seq_of(b->rx[0]), 77U);
    EXPECT_NE(b->rx[0].src, dead);
    EXPECT_TRUE(a->failed.empty());
    EXPECT_EQ(b->failed.size(), 1U);
}

// ------------------------------------------------------------------ through weft.h

class tcp_api_test : public ::testing::Test {
  protected:
    void SetUp() override
    {
        const std::string why = weft::test::transport_unavailable("tcp", weft::test::base_caps);
        if (!why.empty()) {
            GTEST_SKIP() << why;
        }
    }
    [[nodiscard]] ::testing::AssertionResult run(int nranks, const weft::test::rank_body &body,
                                                 const weft::test::run_options &opt = {})
    {
        return weft::test::run_ranks(nranks, "tcp", body, opt);
    }
};

/// The transport the endpoint's channel chose for `peer` (internal: the test
/// links libweft_internal).
std::string transport_to(weft_ep_t *ep, weft_addr_t peer)
{
    int rc = 0;
    const weft::proto::peer_state *p = ep->stack->ch.peer(peer, rc);
    return p == nullptr ? "none" : ep->stack->ch.component_of(p)->name;
}

/// The endpoint's tcp transport's counters (nullptr: it has none).
const tcp::stats *tcp_stats(weft_ep_t *ep)
{
    const auto &ch = ep->stack->ch;
    for (unsigned i = 0; i < ch.tl_count(); ++i) {
        if (const tcp::stats *s = tcp::get_stats(*ch.tl(i)); s != nullptr) {
            return s;
        }
    }
    return nullptr;
}

/// One message each way between ranks 0 and 1, both sending first.
void exchange(rank_ctx &c, std::uint64_t tag)
{
    const int other = 1 - c.rank;
    std::uint64_t in = 0;
    const std::uint64_t out = tag * 10 + static_cast<std::uint64_t>(c.rank);
    c.post("trecv", [&] {
        return weft_trecv(c.ep, &in, sizeof(in), nullptr, c.peer(other), tag, 0, op_ctx(1));
    });
    c.post("tsend", [&] {
        return weft_tsend(c.ep, &out, sizeof(out), nullptr, c.peer(other), tag, op_ctx(2));
    });
    (void)c.wait_ok(op_ctx(1));
    (void)c.wait_ok(op_ctx(2));
    WEFT_TCHECK_EQ(in, tag * 10 + static_cast<std::uint64_t>(other));
}

// On one node shm reaches every peer and its cost model wins; tcp carries
// nothing unless WEFT_TRANSPORTS=tcp leaves it alone.
TEST(tcp_api, shm_is_chosen_on_one_node_unless_tcp_is_forced)
{
    for (const bool forced : {false, true}) {
        SCOPED_TRACE(forced ? "WEFT_TRANSPORTS=tcp" : "all transports");
        weft::test::run_options opt;
        if (forced) {
            opt.config = {{"TRANSPORTS", "tcp"}};
        }
        ASSERT_TRUE(weft::test::run_ranks(
            2, "auto",
            [forced](rank_ctx &c) {
                exchange(c, 0x51);
                const std::string chosen = transport_to(c.ep, c.peer(1 - c.rank));
                WEFT_TCHECK_EQ(chosen, std::string(forced ? "tcp" : "shm"));
                const tcp::stats *s = tcp_stats(c.ep);
                WEFT_TCHECK(s != nullptr);
                // Forced: one connection, which this side made or accepted (or,
                // both sending at once, made and then dropped for the peer's).
                WEFT_TCHECK_EQ(s->connects_started + s->connects_accepted == 0, !forced);
                WEFT_TCHECK(s->connects_started <= 1 && s->connects_accepted <= 1);
                c.barrier();
            },
            opt));
    }
}

// Both ranks send first, at the same moment (released by one barrier): one
// connection results (exactly one of them accepted one), and both messages
// arrive. Five runs, new processes each time.
TEST_F(tcp_api_test, both_ranks_send_first_at_once)
{
    for (int run_no = 0; run_no < 5; ++run_no) {
        ASSERT_TRUE(run(2,
                        [](rank_ctx &c) {
                            exchange(c, 0x61);
                            exchange(c, 0x62);
                            const tcp::stats *s = tcp_stats(c.ep);
                            WEFT_TCHECK(s != nullptr);
                            for (std::uint64_t i = 0; i < s->connects_accepted; ++i) {
                                c.note_progress();
                            }
                            std::printf(
                                "rank %d: started %llu, accepted %llu, kept %llu, yielded %llu\n",
                                c.rank, static_cast<unsigned long long>(s->connects_started),
                                static_cast<unsigned long long>(s->connects_accepted),
                                static_cast<unsigned long long>(s->crossed_kept),
                                static_cast<unsigned long long>(s->crossed_yielded));
                            c.barrier();
                            WEFT_TCHECK_EQ(c.progress_mark(), 1U);
                            WEFT_TCHECK_EQ(s->conns_failed, 0U);
                            c.barrier();
                        }))
            << "run " << run_no;
    }
}

// Rank 2 streams 256 KiB rendezvous messages to rank 0 and exits in the middle
// of it (no close: its sockets end as a killed process's do). Rank 0's
// receives from it fail with WEFT_EHOSTUNREACH, new operations towards it too;
// every one of rank 1's messages, sent meanwhile, arrives intact, and rank 0
// and rank 1 go on.
TEST_F(tcp_api_test, a_rank_killed_while_streaming_fails_only_its_operations)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;  // rank 0 says the connection was lost
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        3,
        [](rank_ctx &c) {
            c.final_barrier = false;  // rank 2 is gone
            constexpr std::size_t len = 256 * 1024;
            constexpr std::uint64_t window = 8;
            constexpr int from1 = 40;
            std::vector<unsigned char> buf(len * window + 64, fill_byte);
            if (c.rank == 2) {
                c.barrier();
                const auto start = clock_type::now();
                for (std::uint64_t i = 0;; ++i) {
                    unsigned char *b = buf.data() + (i % window) * len;
                    if (i >= window) {
                        (void)c.wait_ok(op_ctx(i - window));
                    }
                    fill_pattern(b, len, seed_of(0x72, i));
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, b, len, nullptr, c.peer(0), 0x7000 + i, op_ctx(i));
                    });
                    if (clock_type::now() - start > std::chrono::milliseconds(300)) {
                        std::printf("rank 2: exits with %llu messages started\n",
                                    static_cast<unsigned long long>(i + 1));
                        std::fflush(stdout);
                        _exit(0);
                    }
                }
            }
            std::vector<unsigned char> small(100 * 1024);
            if (c.rank == 1) {
                c.barrier();
                for (int i = 0; i < from1; ++i) {
                    fill_pattern(small.data(), small.size(), seed_of(0x71, i));
                    c.post("tsend", [&] {
                        return weft_tsend(c.ep, small.data(), small.size(), nullptr, c.peer(0),
                                          0x100 + static_cast<std::uint64_t>(i),
                                          op_ctx(1000 + static_cast<std::uint64_t>(i)));
                    });
                    (void)c.wait_ok(op_ctx(1000 + static_cast<std::uint64_t>(i)));
                }
                std::uint64_t done = 0;
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, &done, sizeof(done), nullptr, c.peer(0), 0x1ff, 0,
                                      op_ctx(2000));
                });
                (void)c.wait_ok(op_ctx(2000));
                return;
            }
            // Rank 0: rank 1's receives posted up front, then rank 2's stream.
            std::vector<std::vector<unsigned char>> got1(from1);
            for (int i = 0; i < from1; ++i) {
                got1[std::size_t(i)].assign(small.size() + 64, fill_byte);
                c.post("trecv", [&] {
                    return weft_trecv(c.ep, got1[std::size_t(i)].data(), small.size() + 64, nullptr,
                                      c.peer(1), 0x100 + static_cast<std::uint64_t>(i), 0,
                                      op_ctx(1000 + static_cast<std::uint64_t>(i)));
                });
            }
            c.barrier();
            std::uint64_t posted = 0;
            std::uint64_t ok = 0;
            std::uint64_t failed = 0;
            for (std::uint64_t i = 0; failed == 0 || i < posted; ++i) {
                while (failed == 0 && posted < i + window) {
                    unsigned char *b = buf.data() + (posted % window) * len;
                    std::memset(b, fill_byte, len);
                    const std::uint64_t k = posted;
                    c.post("trecv", [&] {
                        return weft_trecv(c.ep, b, len, nullptr, c.peer(2), 0x7000 + k, 0,
                                          op_ctx(k));
                    });
                    ++posted;
                }
                const completion r = c.wait(op_ctx(i), 30000);
                if (r.error) {
                    WEFT_TCHECK_EQ(r.err.err, WEFT_EHOSTUNREACH);
                    ++failed;
                } else {
                    WEFT_TCHECK_EQ(failed, 0U);  // nothing succeeds after the first failure
                    WEFT_TCHECK_EQ(r.entry.len, len);
                    const std::size_t bad = weft::test::find_pattern_mismatch(
                        buf.data() + (i % window) * len, len, seed_of(0x72, i));
                    WEFT_TCHECK_EQ(bad, SIZE_MAX);
                    ++ok;
                }
            }
            std::printf("rank 0: %llu messages of rank 2 arrived, %llu receives failed\n",
                        static_cast<unsigned long long>(ok),
                        static_cast<unsigned long long>(failed));
            WEFT_TCHECK(ok >= 1);
            WEFT_TCHECK(failed >= 1);
            for (int i = 0; i < from1; ++i) {
                const weft_cq_tagged_entry e =
                    c.wait_ok(op_ctx(1000 + static_cast<std::uint64_t>(i)));
                WEFT_TCHECK_EQ(e.len, small.size());
                check_payload(got1[std::size_t(i)].data(), small.size(), small.size() + 64,
                              seed_of(0x71, i), "rank 1's message");
            }
            // New operations towards rank 2 fail; rank 1 still answers.
            const ssize_t rc =
                weft_tsend(c.ep, small.data(), 8, nullptr, c.peer(2), 0x7fff, op_ctx(3000));
            if (rc == 0) {
                WEFT_TCHECK_EQ(c.wait_err(op_ctx(3000)).err, WEFT_EHOSTUNREACH);
            } else {
                WEFT_TCHECK_EQ(rc, -WEFT_EHOSTUNREACH);
            }
            const std::uint64_t done = 1;
            c.post("tsend", [&] {
                return weft_tsend(c.ep, &done, sizeof(done), nullptr, c.peer(1), 0x1ff,
                                  op_ctx(3001));
            });
            (void)c.wait_ok(op_ctx(3001));
        },
        opt));
}

// Put and get of a 16 MiB region and atomics, through proto/'s active-message
// fallback (tcp has no one-sided operations of its own).
TEST_F(tcp_api_test, put_get_and_atomics_on_16_mib)
{
    ASSERT_TRUE(run(2, [](rank_ctx &c) {
        constexpr std::size_t len = 16 * mib;
        constexpr std::uint64_t access =
            WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC;
        std::vector<std::uint8_t> mem(len + 8, 0);
        weft_mr_t *mr = nullptr;
        WEFT_TCHECK_OK(weft_mr_reg(c.domain, mem.data(), mem.size(), access, 0, &mr));
        struct key_msg {
            std::uint64_t base;
            std::uint64_t len;
            std::uint8_t key[WEFT_MR_KEY_MAX];
        };
        key_msg mine{reinterpret_cast<std::uint64_t>(mem.data()), 0, {}};
        std::size_t klen = sizeof(mine.key);
        WEFT_TCHECK_OK(weft_mr_pack_key(mr, mine.key, &klen));
        mine.len = klen;
        key_msg theirs{};
        const int other = 1 - c.rank;
        c.post("trecv", [&] {
            return weft_trecv(c.ep, &theirs, sizeof(theirs), nullptr, c.peer(other), 0x16, 0,
                              op_ctx(1));
        });
        c.post("tsend", [&] {
            return weft_tsend(c.ep, &mine, sizeof(mine), nullptr, c.peer(other), 0x16, op_ctx(2));
        });
        (void)c.wait_ok(op_ctx(1));
        (void)c.wait_ok(op_ctx(2));
        weft_rkey_t *key = nullptr;
        WEFT_TCHECK_OK(weft_rkey_unpack(c.ep, c.peer(other), theirs.key, theirs.len, &key));
        if (c.rank == 0) {
            std::vector<std::uint8_t> src(len);
            fill_pattern(src.data(), len, seed_of(0x1616));
            c.post("put", [&] {
                return weft_put(c.ep, src.data(), len, nullptr, theirs.base, key, op_ctx(3));
            });
            (void)c.wait_ok(op_ctx(3));
            std::vector<std::uint8_t> back(len + 64, fill_byte);
            c.post("get", [&] {
                return weft_get(c.ep, back.data(), len, nullptr, theirs.base, key, op_ctx(4));
            });
            (void)c.wait_ok(op_ctx(4));
            check_payload(back.data(), len, len + 64, seed_of(0x1616), "16 MiB read back");
            const std::uint64_t one = 1;
            for (int i = 0; i < 100; ++i) {
                std::uint64_t old = 0;
                c.post("fetch_add", [&] {
                    return weft_fetch_atomic(c.ep, &one, 1, &old, theirs.base + len, key,
                                             WEFT_UINT64, WEFT_SUM, op_ctx(5));
                });
                (void)c.wait_ok(op_ctx(5));
                WEFT_TCHECK_EQ(old, static_cast<std::uint64_t>(i));
            }
        }
        c.barrier();
        if (c.rank == 1) {
            check_payload(mem.data(), len, len, seed_of(0x1616), "16 MiB put");
            std::uint64_t word = 0;
            std::memcpy(&word, mem.data() + len, 8);
            WEFT_TCHECK_EQ(word, 100U);
        }
        c.barrier();
        WEFT_TCHECK_OK(weft_rkey_release(key));
        WEFT_TCHECK_OK(weft_mr_close(mr));
    }));
}

}  // namespace
