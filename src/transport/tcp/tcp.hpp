#pragma once
// The tcp transport: active messages over non-blocking TCP sockets, driven by
// epoll from progress(). One connection per pair of endpoints, made lazily
// on the first send and shared by both directions; a handshake (magic,
// version, both identities, frame limits) before any data; then frames of a
// 12-byte header and the message's bytes. No one-sided operations: proto/
// carries put, get, atomics and the rendezvous over active messages. IPv4 and
// IPv6, interfaces chosen by WEFT_TCP_IF. Design, wire format, the
// connection rule, faults and tuning: docs/tcp.md.

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config.hpp"
#include "base/log.hpp"
#include "base/status.hpp"
#include "transport/component.hpp"

namespace weft::transport::tcp {

/// Log lines of the tcp transport (WEFT_LOG(tcp, ...)); registered by the transport registry.
inline constinit base::log_component log_tcp{"tcp"};

/// The parsed "TCP" configuration table (variables WEFT_TCP_*).
struct config {
    std::string interfaces;  ///< IF: interfaces and subnets (ifsel.hpp)
    std::uint64_t port_min;  ///< PORT_MIN: lowest listening port (0: any)
    std::uint64_t port_max;  ///< PORT_MAX: highest listening port (0: any)
    std::size_t sndbuf;      ///< SNDBUF: SO_SNDBUF (0: the kernel's autotuning)
    std::size_t rcvbuf;      ///< RCVBUF: SO_RCVBUF (0: the kernel's autotuning)
    bool nodelay;            ///< NODELAY: TCP_NODELAY
    std::size_t max_short;   ///< MAX_SHORT: header + payload of a short message
    std::size_t max_bcopy;   ///< MAX_BCOPY: header + payload of one frame (max_bcopy)
    std::size_t tx_queue;    ///< TX_QUEUE: bytes queued per connection when the socket is full
    std::uint64_t connect_timeout;  ///< CONNECT_TIMEOUT (us): connect and handshake
    std::uint64_t keepalive;      ///< KEEPALIVE (us): idle time before TCP keepalive probes; 0 off
    std::uint64_t user_timeout;   ///< USER_TIMEOUT (us): TCP_USER_TIMEOUT; 0 = kernel default
    std::uint64_t busy_poll;      ///< BUSY_POLL (us): SO_BUSY_POLL; 0 off
    std::uint64_t poll_interval;  ///< POLL_INTERVAL: progress calls between idle epoll checks
    std::uint64_t spin_conns;     ///< SPIN_CONNS: up to this many connections read without epoll
};

/// The "TCP" table (WEFT_TCP_*).
[[nodiscard]] const base::config_table &config_table();

/// The registry's entry.
extern const component transport;

/// Counters of rare events (tests, diagnostics). Never counted per message.
struct stats {
    std::uint64_t connects_started;    ///< outgoing connections this endpoint began
    std::uint64_t connects_accepted;   ///< peers' connections accepted (a hello answered accept)
    std::uint64_t dial_failures;       ///< addresses of a peer that could not be dialled
    std::uint64_t crossed_kept;        ///< simultaneous connects where we kept our own
    std::uint64_t crossed_yielded;     ///< simultaneous connects where we took the peer's
    std::uint64_t handshakes_refused;  ///< hellos refused (not for us, malformed, duplicate)
    std::uint64_t conns_failed;   ///< connections that failed (closed, reset, timeout, malformed)
    std::uint64_t malformed;      ///< connections failed for a malformed frame or handshake
    std::uint64_t tx_queued;      ///< sends that had to wait in the queue (socket full)
    std::uint64_t tx_again;       ///< sends refused with `again` (queue full or not connected)
    std::uint64_t byes;           ///< peers that closed their endpoint cleanly
    std::uint64_t spinning;       ///< connections read without epoll now (SPIN_CONNS; a state)
    std::uint64_t spin_rebuilds;  ///< times the set of spinning connections was worked out
    std::uint64_t rx_grown;       ///< receive buffers grown for a frame above 64 KiB (once each)
};

/// The counters of a tcp transport instance; nullptr if `tl` is not one.
[[nodiscard]] const stats *get_stats(const iface &tl) noexcept;

}  // namespace weft::transport::tcp
