#pragma once
// Which local addresses the tcp transport listens on and advertises
// (WEFT_TCP_IF), and which of a peer's addresses it dials, best first.
// Pure functions over lists of addresses, so that the rules are unit-tested
// without touching the machine's interfaces (test/transport/tcp/).
//
// WEFT_TCP_IF, like Open MPI's btl_tcp_if_include / btl_tcp_if_exclude:
//   ""/"auto"        every interface that is up, except loopback; loopback
//                    when there is nothing else (a single node still works)
//   "eth0,10.0.0.0/8,fd00::/64"
//                    only these: interface names, subnets (CIDR) or single
//                    addresses; loopback too when named ("lo", "127.0.0.1/8")
//   "^docker0,10.9.0.0/16"
//                    a leading ^ excludes every item of the list from the
//                    automatic choice (^ in front of a later item is an error)
// IPv6 link-local addresses (fe80::/10) are never used: they need a scope id
// that a peer on another host cannot know.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "base/topo.hpp"
#include "transport/tcp/wire.hpp"

namespace weft::transport::tcp {

/// One address of a local interface.
struct if_addr {
    std::string name;  ///< interface name ("eth0")
    ip_addr addr;
    bool loopback = false;  ///< IFF_LOOPBACK (or a loopback address)
    bool up = false;        ///< IFF_UP and IFF_RUNNING
};

/// One item of WEFT_TCP_IF.
struct if_item {
    bool subnet = false;  ///< a subnet (net), else an interface name (name)
    std::string name;
    ip_addr net;
};

/// A parsed WEFT_TCP_IF.
struct if_spec {
    enum class mode : std::uint8_t { automatic, include, exclude };
    mode m = mode::automatic;
    std::vector<if_item> items;
};

/// Parse a WEFT_TCP_IF value. invalid, with the reason in `error`, for an
/// empty item, a bad subnet or prefix, or a ^ that does not lead the list.
[[nodiscard]] base::status parse_if_spec(std::string_view text, if_spec &out, std::string &error);

/// Parse an address with an optional /prefix ("10.0.0.0/8", "::1", "fd00::/64");
/// without a prefix, the whole address (/32 or /128).
[[nodiscard]] bool parse_cidr(std::string_view text, ip_addr &out);

/// The text of an address ("192.0.2.2", "fd00::2"), and with its prefix.
[[nodiscard]] std::string ip_text(const ip_addr &a);
[[nodiscard]] std::string cidr_text(const ip_addr &a);

/// The addresses `spec` selects from `all` (interfaces that are down and IPv6
/// link-local addresses never), in the order of `all` with IPv4 first.
[[nodiscard]] std::vector<if_addr> select_addresses(const if_spec &spec,
                                                    const std::vector<if_addr> &all);

/// `picked` with the addresses of the interfaces nearest `cpus` (the caller's)
/// first in topology `t` (docs/topology.md); stable, so among equally near
/// ones IPv4 stays first and the machine's order stays. `why` (if not null)
/// gets one line per interface ("eth0: local: NUMA node 0; ...").
[[nodiscard]] std::vector<if_addr> nearest_first(std::vector<if_addr> picked,
                                                 const base::topology &t, const base::id_set &cpus,
                                                 std::vector<std::string> *why = nullptr);

/// This machine's interface addresses (getifaddrs), in its order.
[[nodiscard]] std::vector<if_addr> local_addresses();

/// One of a peer's addresses to dial, and the local address to bind first
/// (family 0: let the kernel choose).
struct dial_target {
    peer_listener to;
    ip_addr from;
};

/// Where to dial a peer whose blob is `peer`, best first, from an endpoint
/// that selected `mine`: its addresses in a subnet of one of ours (bound to
/// that local address), then the others of a family we have a non-loopback
/// address of; loopback addresses only when the peer is on this node
/// (`same_node`), last. Empty: unreachable.
[[nodiscard]] std::vector<dial_target> dial_targets(const peer_blob &peer, bool same_node,
                                                    const std::vector<if_addr> &mine);

}  // namespace weft::transport::tcp
