// Verbs ports: discovery, the configuration table, the shared per-port object
// (context, protection domain, registration cache) and weft_mr_reg's registrations.
#include "transport/verbs/device.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <map>
#include <mutex>

#include "base/log.hpp"

namespace weft::transport::verbs {

namespace {

constexpr base::config_field config_fields[] = {
    base::make_field<&config::device>(
        "DEVICE", base::config_type::string, "",
        "verbs port to use: device name, or name:port; empty = the first active port"),
    base::make_field<&config::gid_index>(
        "GID_INDEX", base::config_type::string, "auto",
        "GID table index for RoCE; auto = the first RoCE v2 IPv4-mapped GID, else RoCE v2, else 0"),
    base::make_field<&config::inline_size>(
        "INLINE_SIZE", base::config_type::size, "256",
        "largest send (protocol header + payload) copied into the work request (inline)",
        base::config_range{0, 4096}),
    base::make_field<&config::seg_size>(
        "SEG_SIZE", base::config_type::size, "8k",
        "bytes of each receive buffer and bounce buffer: the largest single-message send",
        base::config_range{256, 1ull << 30}),
    base::make_field<&config::rx_queue>("RX_QUEUE", base::config_type::uint, "1024",
                                        "receive buffers posted to the shared receive queue",
                                        base::config_range{16, 1u << 20}),
    base::make_field<&config::rx_queue_max>(
        "RX_QUEUE_MAX", base::config_type::uint, "16384",
        "most receive buffers: the queue grows by the initial credits of each new peer",
        base::config_range{16, 1u << 24}),
    base::make_field<&config::tx_queue>("TX_QUEUE", base::config_type::uint, "256",
                                        "send work requests per queue pair",
                                        base::config_range{4, 16384}),
    base::make_field<&config::tx_max>(
        "TX_MAX", base::config_type::uint, "4096",
        "outstanding send work requests per endpoint (bounds the completion queue)",
        base::config_range{16, 1u << 20}),
    base::make_field<&config::tx_bufs>("TX_BUFS", base::config_type::uint, "256",
                                       "registered bounce buffers per endpoint",
                                       base::config_range{4, 65536}),
    base::make_field<&config::signal_interval>(
        "SIGNAL_INTERVAL", base::config_type::uint, "32",
        "request a send completion at least every this many sends on a queue pair",
        base::config_range{1, 8192}),
    base::make_field<&config::rx_batch>("RX_BATCH", base::config_type::uint, "16",
                                        "completions handled per poll of the completion queue",
                                        base::config_range{1, 64}),
    base::make_field<&config::timeout>(
        "TIMEOUT", base::config_type::uint, "14",
        "RC ack timeout exponent: 4.096 us * 2^n before a packet is sent again",
        base::config_range{1, 31}),
    // 6, not 7: Soft-RoCE (rdma_rxe) retries forever with 7, as if it were rnr_retry.
    base::make_field<&config::retry_count>(
        "RETRY_COUNT", base::config_type::uint, "6",
        "RC retransmissions before a peer counts as dead (rxe never gives up at 7)",
        base::config_range{0, 7}),
    base::make_field<&config::rnr_retry>(
        "RNR_RETRY", base::config_type::uint, "7",
        "retries when the peer has no receive buffer posted (7 = without limit)",
        base::config_range{0, 7}),
    base::make_field<&config::min_rnr_timer>(
        "MIN_RNR_TIMER", base::config_type::uint, "12",
        "receiver-not-ready NAK timer code (IB spec table; 12 = 0.64 ms)",
        base::config_range{0, 31}),
    base::make_field<&config::max_rd_atomic>(
        "MAX_RD_ATOMIC", base::config_type::uint, "16",
        "RDMA reads in flight per queue pair (capped by the device)", base::config_range{1, 255}),
    base::make_field<&config::mtu>("MTU", base::config_type::choice, "auto",
                                   "path MTU; auto = the smaller of both ports' active MTU",
                                   "auto|256|512|1024|2048|4096"),
    base::make_field<&config::connect_timeout>(
        "CONNECT_TIMEOUT", base::config_type::time_us, "10s",
        "a connection handshake that gets no answer from the peer's connection agent for this "
        "long fails the peer (a busy peer's agent answers; silence means dead or unreachable)"),
    base::make_field<&config::connect_retry>(
        "CONNECT_RETRY", base::config_type::time_us, "100ms",
        "first resend of an unanswered handshake request or unconfirmed reply (doubles, at "
        "most 1 s)"),
    base::make_field<&config::keepalive>(
        "KEEPALIVE", base::config_type::time_us, "1s",
        "send a probe on a connection idle for this long, so a dead peer is noticed; 0 = off"),
    base::make_field<&config::read_chunk>(
        "READ_CHUNK", base::config_type::size, "1m",
        "most bytes of one RDMA read request (also capped by the port's max message size)",
        base::config_range{4096, 1ull << 30}),
    base::make_field<&config::rcache>(
        "RCACHE", base::config_type::boolean, "y",
        "cache memory registrations (invalidated when the memory is unmapped)"),
    base::make_field<&config::rcache_max_regions>(
        "RCACHE_MAX_REGIONS", base::config_type::uint, "4096",
        "unused registrations the cache keeps (least recently used dropped first)"),
    base::make_field<&config::rcache_max_bytes>("RCACHE_MAX_BYTES", base::config_type::size, "4g",
                                                "bytes of unused registrations the cache keeps"),
    base::make_field<&config::fork_init>(
        "FORK_INIT", base::config_type::ternary, "auto",
        "call ibv_fork_init; auto = only when the kernel does not copy registered pages on fork"),
};

struct discovery {
    std::vector<port_info> ports;
    std::string why;
};

bool parse_port_name(const std::string &name, std::string &dev, unsigned &port)
{
    const auto colon = name.rfind(':');
    if (colon == std::string::npos) {
        dev = name;
        port = 1;
        return !dev.empty();
    }
    dev = name.substr(0, colon);
    char *end = nullptr;
    const unsigned long p = std::strtoul(name.c_str() + colon + 1, &end, 10);
    if (end == nullptr || *end != '\0' || p == 0 || p > 255) {
        return false;
    }
    port = static_cast<unsigned>(p);
    return !dev.empty();
}

void fork_setup(const config &cfg)
{
    const enum ibv_fork_status st = ibv_is_fork_initialized();
    if (st == IBV_FORK_UNNEEDED) {
        WEFT_LOG(verbs, debug,
                 "the kernel copies registered pages on fork: ibv_fork_init is not needed");
        if (cfg.fork_init == base::config_ternary::yes) {
            (void)ibv_fork_init();  // a no-op here; asked for explicitly
        }
        return;
    }
    if (st == IBV_FORK_ENABLED || cfg.fork_init == base::config_ternary::no) {
        return;
    }
    // The kernel does not protect registered memory across fork: make
    // registrations madvise(DONTFORK) so a child cannot corrupt the parent's DMA.
    if (const int rc = ibv_fork_init(); rc != 0) {
        WEFT_LOG(verbs, warn,
                 "ibv_fork_init failed (%s): fork() after registering memory is unsafe",
                 std::strerror(rc));
    } else {
        WEFT_LOG(verbs, info, "ibv_fork_init called: this kernel does not copy registered pages");
    }
}

const discovery &discover()
{
    static const discovery d = [] {
        discovery r;
        int n = 0;
        ibv_device **list = ibv_get_device_list(&n);
        if (list == nullptr || n == 0) {
            r.why = list == nullptr
                        ? std::string("ibv_get_device_list failed: ") + std::strerror(errno)
                        : "no RDMA device (libibverbs found none)";
            if (list != nullptr) {
                ibv_free_device_list(list);
            }
            return r;
        }
        std::string seen;
        for (int i = 0; i < n; ++i) {
            ibv_context *ctx = ibv_open_device(list[i]);
            if (ctx == nullptr) {
                continue;
            }
            ibv_device_attr da{};
            if (ibv_query_device(ctx, &da) == 0) {
                for (unsigned p = 1; p <= da.phys_port_cnt; ++p) {
                    ibv_port_attr pa{};
                    if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) != 0) {
                        continue;
                    }
                    const std::string dev = ibv_get_device_name(list[i]);
                    const std::string name = p == 1 ? dev : dev + ":" + std::to_string(p);
                    seen += (seen.empty() ? "" : ", ") + name;
                    if (pa.state != IBV_PORT_ACTIVE ||
                        (pa.link_layer != IBV_LINK_LAYER_ETHERNET &&
                         pa.link_layer != IBV_LINK_LAYER_INFINIBAND &&
                         pa.link_layer != IBV_LINK_LAYER_UNSPECIFIED)) {
                        continue;
                    }
                    r.ports.push_back({name, dev, static_cast<std::uint8_t>(p),
                                       pa.link_layer == IBV_LINK_LAYER_ETHERNET});
                }
            }
            ibv_close_device(ctx);
        }
        ibv_free_device_list(list);
        if (r.ports.empty()) {
            r.why = "no active RDMA port (ports: " + seen + ")";
        }
        return r;
    }();
    return d;
}

int choose_gid(ibv_context *ctx, std::uint8_t port, const ibv_port_attr &pa, const config &cfg,
               const std::string &name)
{
    if (cfg.gid_index != "auto") {
        char *end = nullptr;
        const long v = std::strtol(cfg.gid_index.c_str(), &end, 10);
        if (end != nullptr && *end == '\0' && v >= 0 && v < pa.gid_tbl_len) {
            return static_cast<int>(v);
        }
        WEFT_LOG(verbs, warn, "WEFT_VERBS_GID_INDEX=%s is not an index of %s's GID table: auto",
                 cfg.gid_index.c_str(), name.c_str());
    }
    if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
        return 0;  // InfiniBand: LID routed, GID 0 is the port GID
    }
    int v2 = -1;
    for (int i = 0; i < pa.gid_tbl_len && i < 256; ++i) {
        ibv_gid_entry e{};
        if (ibv_query_gid_ex(ctx, port, static_cast<std::uint32_t>(i), &e, 0) != 0) {
            continue;  // empty entry
        }
        if (e.gid_type != IBV_GID_TYPE_ROCE_V2) {
            continue;
        }
        const std::uint8_t *g = e.gid.raw;
        static constexpr std::uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(g, v4_prefix, sizeof(v4_prefix)) == 0) {
            return i;  // RoCE v2 over IPv4: routable, what UCX and libfabric prefer too
        }
        if (v2 < 0) {
            v2 = i;
        }
    }
    return v2 >= 0 ? v2 : 0;
}

std::mutex registry_mutex;
std::map<std::string, std::weak_ptr<device>> registry;

/// Registrations of weft_mr_reg in a port's protection domain.
class verbs_md final : public memory_domain {
  public:
    explicit verbs_md(std::shared_ptr<device> dev) : dev_(std::move(dev)) {}

    [[nodiscard]] std::size_t rkey_size() const noexcept override { return 4; }

    [[nodiscard]] base::status reg(void *buf, std::size_t len, unsigned acc,
                                   std::uint64_t &handle) override
    {
        int flags = IBV_ACCESS_LOCAL_WRITE;
        if ((acc & access::remote_read) != 0) {
            flags |= IBV_ACCESS_REMOTE_READ;
        }
        if ((acc & access::remote_write) != 0) {
            flags |= IBV_ACCESS_REMOTE_WRITE;
        }
        if ((acc & access::remote_atomic) != 0) {
            flags |= IBV_ACCESS_REMOTE_ATOMIC;
        }
        ibv_mr *mr = ibv_reg_mr(dev_->pd(), buf, len, flags);
        if (mr == nullptr && errno == EFAULT && (acc & ~access::remote_read) == access::local) {
            // Read-only memory (a constant to be read by peers): no local write.
            mr = ibv_reg_mr(dev_->pd(), buf, len, flags & ~IBV_ACCESS_LOCAL_WRITE);
        }
        if (mr == nullptr) {
            const int err = errno;
            WEFT_LOG(verbs, error, "ibv_reg_mr(%p, %zu) on %s failed: %s", buf, len,
                     dev_->name().c_str(), std::strerror(err));
            return err == ENOMEM ? base::status::no_memory : base::status::access;
        }
        handle = reinterpret_cast<std::uint64_t>(mr);
        return base::status::ok;
    }

    void dereg(std::uint64_t handle) noexcept override
    {
        if (const int rc = ibv_dereg_mr(reinterpret_cast<ibv_mr *>(handle)); rc != 0) {
            WEFT_LOG(verbs, warn, "ibv_dereg_mr failed: %s", std::strerror(rc));
        }
    }

    [[nodiscard]] base::status pack_rkey(std::uint64_t handle, std::uint8_t *out) const override
    {
        const std::uint32_t rkey = reinterpret_cast<ibv_mr *>(handle)->rkey;
        std::memcpy(out, &rkey, sizeof(rkey));
        return base::status::ok;
    }

    [[nodiscard]] const std::shared_ptr<device> &dev() const noexcept { return dev_; }

  private:
    std::shared_ptr<device> dev_;  // the PD outlives the registrations
};

}  // namespace

// Constant-initialised (make_table is constexpr), so the registry's component
// that points at it is complete before any dynamic initialiser runs.
constinit const base::config_table config_table_v = base::make_table(
    "VERBS", "verbs transport: RC queue pairs on libibverbs (docs/verbs.md)", config_fields);

const base::config_table &config_table()
{
    return config_table_v;
}

bool port_matches(const port_info &p, const std::string &spec)
{
    if (spec.empty()) {
        return true;
    }
    std::string dev;
    unsigned port = 0;
    return parse_port_name(spec, dev, port) && dev == p.device && port == p.port;
}

const std::vector<port_info> &all_active_ports(std::string *why)
{
    const discovery &d = discover();
    if (why != nullptr) {
        *why = d.why;
    }
    return d.ports;
}

// ------------------------------------------------------------------ registrar

base::status pd_registrar::reg(void *addr, std::size_t len, base::reg_handle &out)
{
    // Local write: the buffer may receive RDMA read data; remote read: a peer may
    // read it (rendezvous). Read-only memory (a constant being sent) refuses local
    // write: register it for remote read alone.
    ibv_mr *mr = ibv_reg_mr(pd_, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == nullptr && (errno == EFAULT || errno == EACCES || errno == EPERM)) {
        mr = ibv_reg_mr(pd_, addr, len, IBV_ACCESS_REMOTE_READ);
    }
    if (mr == nullptr) {
        const int err = errno;
        WEFT_LOG(verbs, debug, "ibv_reg_mr(%p, %zu) failed: %s", addr, len, std::strerror(err));
        return err == ENOMEM ? base::status::no_memory : base::status::access;
    }
    out.mr = mr;
    out.lkey = mr->lkey;
    out.rkey = mr->rkey;
    return base::status::ok;
}

void pd_registrar::dereg(base::reg_handle &h) noexcept
{
    if (h.mr != nullptr) {
        if (const int rc = ibv_dereg_mr(static_cast<ibv_mr *>(h.mr)); rc != 0) {
            WEFT_LOG(verbs, warn, "ibv_dereg_mr failed: %s", std::strerror(rc));
        }
        h.mr = nullptr;
    }
}

// ------------------------------------------------------------------ device

device::device(ibv_context *ctx, ibv_pd *pd, const port_info &p) noexcept
    : ctx_(ctx), pd_(pd), owner_(getpid()), port_(p.port), name_(p.name), registrar_(pd)
{
}

device::~device()
{
    rcache_.reset();  // deregisters before the PD goes
    (void)ibv_dealloc_pd(pd_);
    (void)ibv_close_device(ctx_);
}

base::status device::init(const config &cfg)
{
    if (ibv_query_port(ctx_, port_, &port_attr_) != 0 || ibv_query_device(ctx_, &dev_attr_) != 0) {
        WEFT_LOG(verbs, error, "%s: cannot query the device or port: %s", name_.c_str(),
                 std::strerror(errno));
        return base::status::no_device;
    }
    gid_index_ = choose_gid(ctx_, port_, port_attr_, cfg, name_);
    if (ibv_query_gid(ctx_, port_, gid_index_, &gid_) != 0) {
        WEFT_LOG(verbs, error, "%s: cannot read GID %d: %s", name_.c_str(), gid_index_,
                 std::strerror(errno));
        return base::status::no_device;
    }
    base::rcache_config rc{};
    rc.enable = cfg.rcache;
    rc.max_regions = cfg.rcache_max_regions;
    rc.max_bytes = cfg.rcache_max_bytes;
    auto cache = base::rcache::create(registrar_, rc);
    if (!cache.ok()) {
        return cache.error();
    }
    rcache_ = std::move(cache.value());
    WEFT_LOG(verbs, debug, "%s: %s, LID %u, GID index %d, active MTU %d", name_.c_str(),
             ethernet() ? "RoCE" : "InfiniBand", port_attr_.lid, gid_index_,
             128 << port_attr_.active_mtu);
    return base::status::ok;
}

base::result<std::shared_ptr<device>> device::get(const std::string &name, const config &cfg)
{
    static std::once_flag fork_once;
    std::call_once(fork_once, [&] { fork_setup(cfg); });  // before any registration
    const auto &ports = all_active_ports();
    if (ports.empty()) {
        return base::status::no_device;
    }
    const port_info *p = &ports.front();
    if (!name.empty()) {
        p = nullptr;
        for (const auto &q : ports) {
            if (q.name == name) {
                p = &q;
            }
        }
        if (p == nullptr) {
            WEFT_LOG(verbs, error, "verbs port '%s' is not an active port of this host",
                     name.c_str());
            return base::status::no_device;
        }
    }
    std::lock_guard g(registry_mutex);
    if (auto it = registry.find(p->name); it != registry.end()) {
        // Shared by every endpoint of this process; a fork child's copy of the
        // parent's is left alone (its context belongs to the parent).
        if (auto sp = it->second.lock(); sp != nullptr && sp->owner() == getpid()) {
            return sp;
        }
    }
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    ibv_context *ctx = nullptr;
    for (int i = 0; list != nullptr && i < n && ctx == nullptr; ++i) {
        if (p->device == ibv_get_device_name(list[i])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (list != nullptr) {
        ibv_free_device_list(list);
    }
    if (ctx == nullptr) {
        WEFT_LOG(verbs, error, "cannot open verbs device %s: %s", p->device.c_str(),
                 std::strerror(errno));
        return base::status::no_device;
    }
    ibv_pd *pd = ibv_alloc_pd(ctx);
    if (pd == nullptr) {
        WEFT_LOG(verbs, error, "%s: ibv_alloc_pd failed: %s", p->name.c_str(),
                 std::strerror(errno));
        (void)ibv_close_device(ctx);
        return base::status::no_device;
    }
    std::shared_ptr<device> d(new (std::nothrow) device(ctx, pd, *p));
    if (d == nullptr) {
        (void)ibv_dealloc_pd(pd);
        (void)ibv_close_device(ctx);
        return base::status::no_memory;
    }
    if (const base::status st = d->init(cfg); st != base::status::ok) {
        return st;
    }
    registry[p->name] = d;
    return d;
}

base::result<std::unique_ptr<memory_domain>> open_memory_domain(const std::string &name,
                                                                const config &cfg)
{
    auto dev = device::get(name, cfg);
    if (!dev.ok()) {
        return dev.error();
    }
    return std::unique_ptr<memory_domain>(new (std::nothrow) verbs_md(std::move(dev.value())));
}

std::shared_ptr<device> device_of(memory_domain &md) noexcept
{
    return static_cast<verbs_md &>(md).dev();
}

const char *wc_status_text(ibv_wc_status s) noexcept
{
    return ibv_wc_status_str(s);
}

}  // namespace weft::transport::verbs
