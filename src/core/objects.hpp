#pragma once
// The objects behind the opaque handles of weft.h. Control-path code; the data
// path goes through weft_ep::ops (chosen at enable) and the CQ write functions
// (chosen at bind), so nothing here branches on options per message.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/lock.hpp"
#include "core/core_config.hpp"
#include "proto/completion.hpp"
#include "proto/tag_engine.hpp"
#include "transport/iface.hpp"
#include "transport/verbs/verbs.hpp"
#include "weft/weft.h"

namespace weft::core {

/// Reference count of children, so a parent refuses to close while in use.
struct refcounted {
    std::atomic<int> refs{0};
    [[nodiscard]] bool busy() const noexcept { return refs.load(std::memory_order_acquire) != 0; }
};

/// The compact address-vector entry: 16 bytes per peer (docs/architecture.md).
/// `id` packs the endpoint's identity; the host (node id and the per-host
/// transport bytes) is interned in a per-AV node table; `ep_word` is the
/// per-endpoint transport word (wire_address::transport_specific[0, 8)).
struct av_entry {
    std::uint64_t id;       ///< node:18 | pid:22 | ep_id:16 | transports:4 | valid:1
    std::uint64_t ep_word;  ///< per-endpoint transport bytes
};
static_assert(sizeof(av_entry) == 16, "AV entries are at most 16 bytes per peer");

/// Field widths of av_entry::id. pid: Linux's PID_MAX_LIMIT is 2^22.
struct av_id {
    static constexpr unsigned node_bits = 18, pid_bits = 22, ep_bits = 16, tl_bits = 4;
    static constexpr unsigned pid_shift = node_bits, ep_shift = pid_shift + pid_bits,
                              tl_shift = ep_shift + ep_bits, valid_shift = tl_shift + tl_bits;
    [[nodiscard]] static constexpr std::uint64_t mask(unsigned bits) { return (1ULL << bits) - 1; }
    [[nodiscard]] static constexpr bool fits(std::uint64_t node, std::uint64_t pid,
                                             std::uint64_t ep, std::uint64_t tl)
    {
        return node <= mask(node_bits) && pid <= mask(pid_bits) && ep <= mask(ep_bits) &&
               tl <= mask(tl_bits);
    }
    [[nodiscard]] static constexpr std::uint64_t pack(std::uint64_t node, std::uint64_t pid,
                                                      std::uint64_t ep, std::uint64_t tl)
    {
        return node | pid << pid_shift | ep << ep_shift | tl << tl_shift | 1ULL << valid_shift;
    }
    [[nodiscard]] static constexpr bool valid(std::uint64_t id)
    {
        return ((id >> valid_shift) & 1) != 0;
    }
    [[nodiscard]] static constexpr std::uint32_t node(std::uint64_t id)
    {
        return id & mask(node_bits);
    }
    [[nodiscard]] static constexpr std::uint32_t pid(std::uint64_t id)
    {
        return (id >> pid_shift) & mask(pid_bits);
    }
    [[nodiscard]] static constexpr std::uint32_t ep(std::uint64_t id)
    {
        return (id >> ep_shift) & mask(ep_bits);
    }
    [[nodiscard]] static constexpr std::uint16_t tl(std::uint64_t id)
    {
        return (id >> tl_shift) & mask(tl_bits);
    }
};
static_assert(av_id::valid_shift < 64);

/// One host in an AV's node table.
struct av_node {
    std::uint64_t node_id;
    std::uint8_t bytes[transport::wire_address_node_bytes];  ///< per-host transport parts
};

/// This host's identity: a hash of the kernel boot id and the host name.
[[nodiscard]] std::uint64_t local_node_id();

/// Which transports this machine offers (bit per transport_kind).
[[nodiscard]] unsigned available_transports();

/// Resolve a transport name ("auto", "shm", "self") to the bits an endpoint opens.
[[nodiscard]] unsigned transports_for(const char *name);

}  // namespace weft::core

struct weft_fabric : weft::core::refcounted {
    weft_info info{};
};

struct weft_domain : weft::core::refcounted {
    weft_fabric *fabric = nullptr;
    weft_info info{};
    weft::core::core_config cfg{};

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
    /// The only bound endpoint, when there is exactly one (the common case): an
    /// unlocked CQ's progress calls it directly.
    weft_ep *single_ep = nullptr;
    bool locked = true;  ///< thread-safe domain: writes and reads take `lock`
    weft::base::spin_lock lock;
    std::vector<weft_ep *> eps;  ///< bound endpoints, progressed by reads
    std::mutex eps_mutex;

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
    std::atomic<std::uint64_t> value{0};
    std::atomic<std::uint64_t> errors{0};
    std::vector<weft_ep *> eps;
    std::mutex eps_mutex;
    unsigned progress();
};

struct weft_av : weft::core::refcounted, weft::proto::address_book {
    weft_domain *domain = nullptr;

    [[nodiscard]] weft::base::status lookup(std::uint64_t index,
                                            weft::transport::wire_address &out) const override;
    [[nodiscard]] std::uint32_t reverse(const weft::transport::wire_address &addr) const override;

    /// Insert one raw address; returns its index or WEFT_ADDR_NOTAVAIL if invalid.
    weft_addr_t insert(const weft::transport::wire_address &addr);
    int remove(weft_addr_t index);
    [[nodiscard]] std::size_t count() const;

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
    mutable std::mutex mutex_;  ///< inserts vs. the engines' (cold-path) lookups
    std::vector<weft::core::av_entry> table_;
    std::vector<weft::core::av_node> nodes_;
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>>
        node_index_;  ///< node_id -> nodes_
    std::unordered_map<key, std::uint32_t, key_hash> reverse_;
};

struct weft_mr {
    weft_domain *domain = nullptr;
    const void *buf = nullptr;
    std::size_t len = 0;
    std::uint64_t access = 0;
    std::uint64_t key = 0;
    /// The registration on a verbs port (verbs and auto domains where verbs is up).
    std::unique_ptr<weft::transport::verbs::memory_region> verbs;
};

/// The data-path entry points of an endpoint, chosen at enable for its threading level.
struct ep_ops {
    int (*send)(weft_ep *ep, const weft::proto::send_args &a);
    int (*recv)(weft_ep *ep, const weft::proto::recv_args &a);
    int (*recv_special)(weft_ep *ep, const weft::proto::recv_args &a);
    int (*cancel)(weft_ep *ep, void *context);
    unsigned (*progress)(weft_ep *ep);
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
    weft_av *av = nullptr;
    bool enabled = false;
    std::uint32_t ep_id = 0;
    std::size_t var_thresh = 0;  ///< WEFT_OPT_VAR_MSG_THRESHOLD
    bool var_thresh_set = false;
    weft::transport::wire_address addr{};
    std::vector<std::unique_ptr<weft::transport::iface>> tls;
    std::unique_ptr<weft::proto::tag_engine> engine;
    const ep_ops *ops = nullptr;
    weft::base::spin_lock lock;
};
