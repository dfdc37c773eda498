#pragma once
// The objects behind the opaque handles of weft.h. Control-path code; the data
// path goes through weft_ep::ops (chosen at enable) and the CQ write functions
// (chosen at bind), so nothing here branches on options per message. The core
// knows transports only through the registry (transport/registry.hpp).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/config.hpp"
#include "base/lock.hpp"
#include "base/rcu_list.hpp"
#include "core/core_config.hpp"
#include "core/deferred.hpp"
#include "proto/completion.hpp"
#include "proto/counter.hpp"
#include "proto/region.hpp"
#include "proto/rma.hpp"
#include "proto/stack.hpp"
#include "transport/address.hpp"
#include "transport/component.hpp"
#include "transport/iface.hpp"
#include "weft/weft.h"

namespace weft::core {

/// Reference count of children, so a parent refuses to close while in use.
struct refcounted {
    std::atomic<int> refs{0};
    [[nodiscard]] bool busy() const noexcept { return refs.load(std::memory_order_acquire) != 0; }
};

/// This host's identity: a hash of the kernel boot id and the host name.
[[nodiscard]] std::uint64_t local_node_id();

/// One transport resource a domain uses: the transport and its device or port.
struct selected_resource {
    const transport::component *comp;
    transport::resource res;
};

/// The transports that `config` allows (WEFT_TRANSPORTS), each with its
/// resources here; `why` collects why the others are unavailable. An unknown
/// name in WEFT_TRANSPORTS is warned about with the nearest valid one; invalid
/// when the list names nothing usable at all.
struct transport_offer {
    const transport::component *comp;
    std::vector<transport::resource> resources;
    std::string why;  ///< when resources is empty
};
[[nodiscard]] base::status offered_transports(const base::config_store &config,
                                              std::vector<transport_offer> &out);

/// The resources an endpoint of transport `name` (an info's transport; "auto":
/// the first resource of every offered transport) on `domain_name` opens.
[[nodiscard]] base::status select_resources(const base::config_store &config, const char *name,
                                            const char *domain_name,
                                            std::vector<selected_resource> &out);

/// The compact address-vector entry: 16 bytes per peer while an endpoint's own
/// address bytes (its per-endpoint blob parts) fit in 8 (docs/architecture.md).
struct av_entry {
    std::uint64_t id;       ///< tmpl:18 | pid:22 | ep_id:16 | spilled:1 | valid:1
    std::uint64_t ep_word;  ///< per-endpoint bytes, or their offset in the spill area
};
static_assert(sizeof(av_entry) == 16, "AV entries are 16 bytes per peer");

}  // namespace weft::core

struct weft_config {
    weft::base::config_store store;
};

struct weft_fabric : weft::core::refcounted {
    weft_info info{};
    weft::base::config_store config;  ///< this fabric's values (a copy)
    weft::core::core_config cfg{};    ///< the core's, parsed from config
};

struct weft_domain : weft::core::refcounted {
    weft_fabric *fabric = nullptr;
    weft_info info{};
    weft::core::core_config cfg{};
    /// The transports and resources its endpoints open, and one memory domain each.
    std::vector<weft::core::selected_resource> resources;
    std::vector<std::unique_ptr<weft::transport::memory_domain>> mds;
    /// Registrations reached through active messages (proto/'s fallback).
    weft::proto::region_table regions;

    // Auto progress: one thread per domain drives every enabled endpoint.
    std::mutex eps_mutex;
    std::vector<weft_ep *> eps;
    std::thread progress_thread;
    std::atomic<bool> stop{false};

    void add_ep(weft_ep *ep);
    void remove_ep(weft_ep *ep);
    ~weft_domain();
};

struct weft_cq : weft::core::refcounted {
    weft_domain *domain = nullptr;
    weft_cq_format format = WEFT_CQ_FORMAT_CONTEXT;
    std::size_t entry_size = 0;
    std::size_t mask = 0;            ///< ring size - 1 (power of two)
    std::vector<std::uint8_t> ring;  ///< entries in the chosen format
    std::vector<weft_addr_t> src;    ///< source of each ring entry
    std::uint64_t head = 0;          ///< next entry to read
    std::uint64_t tail = 0;          ///< next entry to write
    /// Entries that did not fit in the ring (a slow path: the application is not
    /// reading); they keep their order after the ring's.
    std::deque<std::pair<std::vector<std::uint8_t>, weft_addr_t>> overflow;
    std::deque<weft_cq_err_entry> errors;
    /// errors.size() and overflow.size(), kept so that the read fast path checks
    /// one cache line instead of two deques.
    std::size_t nerrors = 0;
    std::size_t noverflow = 0;
    /// The only bound endpoint, when there is exactly one and the CQ takes no
    /// locks (per-domain threading): its progress is called directly.
    weft_ep *single_ep = nullptr;
    bool locked = true;  ///< thread-safe domain: writes and reads take `lock`
    weft::base::spin_lock lock;
    /// Bound endpoints, progressed by reads: walked without a lock (a reader
    /// never blocks), changed at enable and close.
    weft::base::rcu_list<weft_ep> eps;

    void (*write_fn)(void *cq, const weft::proto::completion &c) = nullptr;
    /// weft_cq_read/readfrom for this format and lock policy (chosen at open).
    ssize_t (*read_fn)(weft_cq *cq, void *buf, std::size_t count, weft_addr_t *src) = nullptr;
    bool manual = true;  ///< manual progress: reads drive the bound endpoints

    [[nodiscard]] bool empty() const noexcept { return head == tail && noverflow == 0; }
    void push_error(const weft::proto::completion &c, const weft::proto::completion_error &e);
    /// Progress every bound endpoint (manual progress).
    unsigned progress();
};

struct weft_cntr : weft::core::refcounted {
    weft_domain *domain = nullptr;
    weft::proto::counter counter;  ///< every increment goes through its triggers
    weft::base::rcu_list<weft_ep> eps;
    /// Counter operations armed on this counter (weft_cntr_add_triggered): freed
    /// when they fire, cancelled when it closes.
    std::mutex cntr_ops_mutex;
    std::vector<weft::core::deferred_op *> cntr_ops;
    unsigned progress();
};

struct weft_av : weft::core::refcounted, weft::proto::address_book {
    weft_domain *domain = nullptr;

    [[nodiscard]] weft::base::status lookup(std::uint64_t index,
                                            weft::transport::address &out) const override;
    [[nodiscard]] std::uint32_t reverse(const weft::transport::endpoint_id &id) const override;
    [[nodiscard]] std::uint64_t insertions() const noexcept override
    {
        // Relaxed: a hint; a reader that misses an increment sees it on its next look.
        return insertions_.load(std::memory_order_relaxed);
    }

    /// Insert one address; returns its index or WEFT_ADDR_NOTAVAIL if it cannot
    /// be stored (the index is used either way).
    weft_addr_t insert(const weft::transport::address &addr);
    /// Keep an index for an address that was not valid.
    weft_addr_t insert_invalid();
    int remove(weft_addr_t index);
    [[nodiscard]] std::size_t count() const;
    /// Endpoints bound to this AV (told about removals): bind and close.
    void attach_ep(weft_ep *ep);
    void detach_ep(weft_ep *ep);
    [[nodiscard]] std::vector<weft_ep *> bound_eps() const;

  private:
    struct key {
        std::uint64_t node_id;
        std::uint64_t pid_ep;
        bool operator==(const key &) const = default;
    };
    struct key_hash {
        std::size_t operator()(const key &k) const noexcept
        {
            return std::hash<std::uint64_t>{}(k.node_id * 0x9e3779b97f4a7c15ULL ^ k.pid_ep);
        }
    };
    /// The shape of an address without its per-endpoint parts: the node id, and
    /// each blob's id, per-host bytes and per-endpoint length. One per host (and
    /// device set), shared by every endpoint of it.
    struct tmpl {
        std::uint64_t node_id;
        std::vector<std::uint8_t> shape;  ///< [id, node_len, ep_len, node bytes...] per blob
        unsigned nblobs;
        std::size_t ep_bytes;  ///< sum of the blobs' per-endpoint lengths
    };
    std::atomic<std::uint64_t> insertions_{0};  ///< valid addresses inserted
    mutable std::mutex mutex_;                  ///< inserts vs. the endpoints' (cold-path) lookups
    std::vector<weft_ep *> eps_;                ///< bound endpoints (under mutex_)
    std::vector<weft::core::av_entry> table_;
    std::vector<tmpl> tmpls_;
    std::unordered_map<std::string, std::uint32_t> tmpl_index_;  ///< node id + shape -> tmpls_
    std::vector<std::uint8_t> spill_;  ///< per-endpoint bytes that do not fit in ep_word
    std::unordered_map<key, std::uint32_t, key_hash> reverse_;
};

struct weft_mr {
    weft_domain *domain = nullptr;
    const void *buf = nullptr;
    std::size_t len = 0;
    std::uint64_t access = 0;  ///< WEFT_ACCESS_*
    std::uint64_t flags = 0;   ///< WEFT_MR_RMA_EVENT, WEFT_MR_DEVICE_ATOMICS
    std::uint64_t am_key = 0;  ///< in domain->regions
    /// One registration per memory domain of the domain (same order as domain->mds).
    std::vector<std::uint64_t> handles;
    /// weft_mr_alloc: the memory domain that allocated it (-1: anonymous
    /// memory of alloc_len bytes, mapped by the core; -2: not allocated by weft).
    int alloc_md = -2;
    std::uint64_t alloc_handle = 0;
    std::size_t alloc_len = 0;
};

struct weft_rkey {
    weft_ep *ep = nullptr;
    weft::proto::remote_key key;
};

/// The data-path entry points of an endpoint, chosen at enable for its threading level.
struct ep_ops {
    int (*send)(weft_ep *ep, const weft::proto::send_args &a);
    int (*recv)(weft_ep *ep, const weft::proto::recv_args &a);
    int (*recv_special)(weft_ep *ep, const weft::proto::recv_args &a);
    int (*cancel)(weft_ep *ep, void *context);
    unsigned (*progress)(weft_ep *ep);
    int (*rma)(weft_ep *ep, const weft::core::rma_desc &d);
};

struct weft_ep {
    weft_domain *domain = nullptr;
    weft_info info{};
    void *context = nullptr;
    weft_cq *tx_cq = nullptr;
    weft_cq *rx_cq = nullptr;
    std::uint64_t tx_cq_flags = 0;
    std::uint64_t rx_cq_flags = 0;
    weft_cntr *tx_cntr = nullptr;
    weft_cntr *rx_cntr = nullptr;
    weft_cntr *write_cntr = nullptr;   ///< WEFT_WRITE: puts, non-fetching atomics
    weft_cntr *read_cntr = nullptr;    ///< WEFT_READ: gets, fetching atomics
    weft_cntr *rwrite_cntr = nullptr;  ///< WEFT_REMOTE_WRITE
    weft_cntr *rread_cntr = nullptr;   ///< WEFT_REMOTE_READ
    weft_av *av = nullptr;
    bool enabled = false;
    std::uint32_t ep_id = 0;
    std::size_t var_thresh = 0;  ///< WEFT_OPT_VAR_MSG_THRESHOLD
    bool var_thresh_set = false;
    std::size_t rndv_thresh = 0;  ///< WEFT_OPT_RNDV_THRESHOLD
    bool rndv_thresh_set = false;
    bool inject_direct = false;  ///< WEFT_OPT_INJECT_DIRECT
    weft::transport::address addr;
    std::vector<std::unique_ptr<weft::transport::iface>> tls;
    std::unique_ptr<weft::proto::stack> stack;
    const ep_ops *ops = nullptr;
    weft::base::spin_lock lock;

    // Deferred operations (core/deferred.hpp). `fired` is pushed by trigger
    // callbacks from any thread; the rest is under `lock`.
    std::atomic<weft::core::deferred_op *> fired{nullptr};
    weft::core::deferred_op *ready_head = nullptr;  ///< fired, in firing order, not yet started
    weft::core::deferred_op *ready_tail = nullptr;
    weft::core::deferred_op *parked_head = nullptr;  ///< behind a fence, in posting order
    weft::core::deferred_op *parked_tail = nullptr;
    weft::core::deferred_op *armed = nullptr;  ///< armed triggered operations (for cancel)

    /// Deferred work to run in progress: one check per progress call.
    [[nodiscard, gnu::always_inline]] bool deferred_due() const noexcept
    {
        // relaxed: a fired operation pushed just after this load is seen by the
        // next progress call; run_deferred's exchange is the acquire.
        return (fired.load(std::memory_order_relaxed) != nullptr) | (ready_head != nullptr) |
               (parked_head != nullptr);
    }
};

/// Where this endpoint's tagged sends switch to rendezvous: with variable
/// messages, the application's threshold (the same on both sides) when set;
/// else WEFT_OPT_RNDV_THRESHOLD when set; else WEFT_RNDV_THRESH.
[[nodiscard]] inline std::size_t ep_rndv_thresh(const weft_ep &ep) noexcept
{
    if ((ep.info.caps & WEFT_VARIABLE_MSG) != 0 && ep.var_thresh_set) {
        return ep.var_thresh;
    }
    return ep.rndv_thresh_set ? ep.rndv_thresh : ep.domain->cfg.rndv_thresh;
}
