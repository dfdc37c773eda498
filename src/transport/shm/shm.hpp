#pragma once
// The shared-memory transport: one receive segment per endpoint holding a lock-free
// multi-producer single-consumer FIFO of cache-line cells; peers on the same node
// map it and send into it. Design, wire format and measurements: docs/shm.md.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/config.hpp"
#include "base/log.hpp"
#include "base/status.hpp"
#include "transport/component.hpp"

namespace weft::transport::shm {

/// Log lines of the shm transport (WEFT_LOG(shm, ...)); registered by the transport registry.
inline constinit base::log_component log_shm{"shm"};

/// The parsed "SHM" configuration table (variables WEFT_SHM_*).
struct config {
    std::size_t fifo_size;              ///< FIFO_SIZE: cells in the receive FIFO (power of two)
    std::size_t bcopy_size;             ///< BCOPY_SIZE: bytes of a bcopy slot (= max_bcopy)
    std::uint64_t peer_check_interval;  ///< PEER_CHECK_INTERVAL: us between peer liveness checks
    std::uint64_t max_senders;          ///< MAX_SENDERS: sender slots in the receive segment
    std::uint64_t rx_batch;             ///< RX_BATCH: most messages handled per progress call
    bool cleanup_stale;          ///< CLEANUP_STALE: unlink segments of dead processes on open
    base::config_ternary cma;    ///< CMA: cross-memory attach (rendezvous reads, put and get with
                                 ///< keys); no: neither, and the memory domain gives no keys
    std::uint64_t cma_idle;      ///< CMA_IDLE: us without progress after which a sender is idle
                                 ///< (0: never)
    std::uint64_t copy_bw;       ///< COPY_BW: MB/s of a rendezvous pushed through the queue
    std::uint64_t cma_bw;        ///< CMA_BW: MB/s of one cross-memory-attach read
    std::uint64_t cma_overhead;  ///< CMA_OVERHEAD: ns of one cross-memory-attach call
    std::size_t rma_cma_min;     ///< RMA_CMA_MIN: smallest put/get with CMA on memory peers do not
                                 ///< map (below: not_supported, active messages)
    /// Not an SHM variable: WEFT_TOPO_PLACEMENT=auto (the component sets it):
    /// segments on the caller's NUMA node (docs/topology.md).
    bool placement = true;
};

/// The "SHM" table (WEFT_SHM_*).
[[nodiscard]] const base::config_table &config_table();

/// The registry's entry.
extern const component transport;

/// Open the transport for one endpoint: creates its receive segment
/// (/dev/shm/weft-shm-<pid>-<ep_id>), after removing stale segments of dead
/// processes when cfg.cleanup_stale is set. The data-path table is ready on return.
[[nodiscard]] base::result<std::unique_ptr<iface>> open(const open_params &p, const config &cfg);

/// The memory domain of `cfg` (md.hpp): keys in a region table, or none with
/// WEFT_SHM_CMA=n. What the component's open_md returns.
[[nodiscard]] std::unique_ptr<memory_domain> open_md(const config &cfg);

/// Counters of rare events (tests, diagnostics). Never counted per message.
struct stats {
    std::uint64_t dropped_cells;      ///< malformed cells dropped (bad length, slot or kind)
    std::uint64_t dead_reservations;  ///< cells reserved by a dead sender and skipped
    std::uint64_t peer_checks;        ///< liveness checks run
    std::uint64_t tx_full;            ///< sends that found the peer's FIFO full
    std::uint64_t slots_released;     ///< sender slots of dead/closed senders freed again
    std::uint64_t cma_reads;          ///< rendezvous data read with cross-memory attach
    std::uint64_t keys_refused;       ///< puts and gets refused by the target's region table
    std::uint64_t tables_mapped;      ///< peers' region tables mapped (cached, at most 32 at once)
    std::uint64_t mems_mapped;        ///< peers' allocations mapped (cached, bounded)
};

/// The counters of an shm transport instance; nullptr if `tl` is not one.
[[nodiscard]] const stats *get_stats(const iface &tl) noexcept;

}  // namespace weft::transport::shm
