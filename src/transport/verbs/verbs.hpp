#pragma once
// The verbs transport: reliable-connected (RC) queue pairs on rdma-core's
// libibverbs, one per peer, created lazily through a handshake over one UD
// queue pair per endpoint; receives through a shared receive queue (SRQ) of
// registered buffers; inline sends for small messages, registered bounce
// buffers above that, and RDMA read for the rendezvous (zcopy). Design, wire
// formats and the connection handshake: docs/verbs.md.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "base/status.hpp"
#include "transport/component.hpp"

namespace weft::transport::verbs {

/// Log lines of the verbs transport (WEFT_LOG(verbs, ...)); registered by the transport registry.
inline constinit base::log_component log_verbs{"verbs"};

/// The parsed "VERBS" configuration table (variables WEFT_VERBS_*).
struct config {
    std::string device;                ///< DEVICE: "name" or "name:port"; "" = first active port
    std::string gid_index;             ///< GID_INDEX: "auto" or a number
    std::size_t inline_size;           ///< INLINE_SIZE: largest inline send (header + payload)
    std::size_t seg_size;              ///< SEG_SIZE: receive and bounce buffer bytes (max_bcopy)
    std::uint64_t rx_queue;            ///< RX_QUEUE: SRQ buffers posted at open
    std::uint64_t rx_queue_max;        ///< RX_QUEUE_MAX: most SRQ buffers (grown for new peers)
    std::uint64_t tx_queue;            ///< TX_QUEUE: send work requests per queue pair
    std::uint64_t tx_max;              ///< TX_MAX: outstanding send work requests per endpoint
    std::uint64_t tx_bufs;             ///< TX_BUFS: registered bounce buffers per endpoint
    std::uint64_t signal_interval;     ///< SIGNAL_INTERVAL: unsignaled sends between signaled ones
    std::uint64_t rx_batch;            ///< RX_BATCH: completions handled per poll
    std::uint64_t timeout;             ///< TIMEOUT: RC ack timeout exponent (4.096 us * 2^n)
    std::uint64_t retry_count;         ///< RETRY_COUNT: RC transport retries
    std::uint64_t rnr_retry;           ///< RNR_RETRY: receiver-not-ready retries (7 = infinite)
    std::uint64_t min_rnr_timer;       ///< MIN_RNR_TIMER: RNR NAK timer code
    std::uint64_t max_rd_atomic;       ///< MAX_RD_ATOMIC: RDMA reads in flight per queue pair
    int mtu;                           ///< MTU: index into "auto|256|512|1024|2048|4096"
    std::uint64_t connect_timeout;     ///< CONNECT_TIMEOUT (us): give up a handshake after this
    std::uint64_t connect_retry;       ///< CONNECT_RETRY (us): first handshake resend
    std::uint64_t keepalive;           ///< KEEPALIVE (us): probe idle connections; 0 = off
    std::size_t read_chunk;            ///< READ_CHUNK: most bytes per RDMA read request
    bool rcache;                       ///< RCACHE: cache memory registrations
    std::uint64_t rcache_max_regions;  ///< RCACHE_MAX_REGIONS: unused registrations kept
    std::size_t rcache_max_bytes;      ///< RCACHE_MAX_BYTES: bytes of unused registrations kept
    base::config_ternary fork_init;    ///< FORK_INIT: call ibv_fork_init (auto: only if needed)
    /// Not a VERBS variable: WEFT_TOPO_PLACEMENT=auto (the component sets it):
    /// buffers on the caller's NUMA node, the nearest port first.
    bool placement = true;
};

/// The "VERBS" table (WEFT_VERBS_*).
[[nodiscard]] const base::config_table &config_table();

/// The registry's entry.
extern const component transport;

/// One usable port.
struct port_info {
    std::string name;  ///< "device" for port 1, "device:port" otherwise
    std::string device;
    std::uint8_t port;
    bool ethernet;  ///< RoCE (true) or InfiniBand
};

/// The active ports of this host (found once per process); `why` says why
/// there are none.
[[nodiscard]] const std::vector<port_info> &all_active_ports(std::string *why = nullptr);

/// Open the transport for one endpoint on port `domain` (a name from
/// all_active_ports(); "" = the first one) with configuration `cfg`.
[[nodiscard]] base::result<std::unique_ptr<iface>> open(const open_params &p,
                                                        const std::string &domain,
                                                        const config &cfg);

/// Counters of rare events (tests, diagnostics). Never counted per message.
struct stats {
    std::uint64_t connects_started;      ///< handshakes this endpoint began
    std::uint64_t connects_accepted;     ///< handshakes a peer began
    std::uint64_t connects_crossed;      ///< simultaneous handshakes resolved to one connection
    std::uint64_t handshake_resends;     ///< requests and replies sent again after a timeout
    std::uint64_t handshake_dropped;     ///< malformed or stale handshake messages dropped
    std::uint64_t conns_failed;          ///< connections that failed (errors, timeouts, close)
    std::uint64_t dropped_msgs;          ///< malformed messages dropped (unknown QP, no immediate)
    std::uint64_t rx_grown;              ///< receive buffers added beyond RX_QUEUE
    std::uint64_t keepalives;            ///< keepalive probes sent
    std::uint64_t reads;                 ///< RDMA read requests posted
    std::uint64_t writes_imm;            ///< RDMA writes with immediate started (put_imm)
    std::uint64_t rcache_hits;           ///< registration cache hits (device-wide)
    std::uint64_t rcache_misses;         ///< registration cache misses (device-wide)
    std::uint64_t rcache_invalidations;  ///< registrations dropped because memory went away
};

/// The counters of a verbs transport instance (`tl` must be one: kind() == verbs).
[[nodiscard]] stats get_stats(const iface &tl) noexcept;

/// Identity of the connection to `peer` at the remote side, for tests of the
/// handshake: the local and remote RC queue pair numbers (0 if not connected).
struct conn_info {
    std::uint32_t local_qpn;
    std::uint32_t remote_qpn;
    bool ready;
};
[[nodiscard]] conn_info get_conn_info(const iface &tl, conn_id conn) noexcept;

}  // namespace weft::transport::verbs
