// The shared-memory transport. Design and wire format: docs/shm.md.
//
// Each endpoint owns one receive segment (segment.hpp) with a lock-free MPSC FIFO
// of cells (fifo_inl.hpp). A sender maps the peer's segment on connect(), claims a
// sender slot there (its src_id on the receive side) and writes cells directly
// into the peer's FIFO. The data path (send_short, send_bcopy, progress) is three
// static functions in the ops table; everything else here is control path.
//
// One-sided put and get (zcopy) copy once, with cross-memory attach
// (process_vm_writev/readv), after checking the key against the region table
// the target publishes (md.hpp); completion is synchronous. On memory the
// target allocated (memory_domain::alloc), which we map, put and get are
// memcpy and atomics are CPU atomics, after the same check.

#include "transport/shm/shm.hpp"

#include "transport/cpu_atomic.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "base/copy.hpp"
#include "base/log.hpp"
#include "base/topo.hpp"
#include "transport/shm/fifo_inl.hpp"
#include "transport/shm/md.hpp"
#include "transport/shm/segment.hpp"

namespace weft::transport::shm {

namespace {

/// Empty progress calls between two reads of the clock for the peer check: keeps
/// the empty poll at one load, a decrement and a branch.
constexpr std::uint32_t idle_polls_per_tick = 1024;
/// Every this many peer checks the slot table is rescanned even if reg_gen did
/// not change (catches a sender that died between claiming a slot and bumping it).
constexpr std::uint64_t full_rescan_every = 64;
/// Largest protocol header of a bcopy send (proto's are at most 128 bytes,
/// credit prefix included).
constexpr std::size_t max_hdr = 128;
/// Dropped-cell warnings: the first few, then one in this many (a broken peer
/// must not flood the log).
constexpr std::uint64_t drop_warn_first = 16;
constexpr std::uint64_t drop_warn_every = 1024;
/// Peers' region tables mapped at once by one instance: a process rarely has
/// more than a few domains, and each table is up to 512 KiB of address space.
/// The least recently used one is unmapped for a new one.
constexpr std::size_t max_peer_tables = 32;
/// Local iovec entries handed to one process_vm_readv/writev call.
constexpr std::size_t cma_iov_batch = 16;
/// Peers' allocations mapped at once by one instance (OpenSHMEM: one heap per
/// peer process). The least recently used one that map_rkey never handed out
/// is unmapped for a new one; one handed out stays until the instance closes.
constexpr std::size_t max_peer_mems = 256;

// --------------------------------------------------------------- config table

constexpr base::config_field config_fields[] = {
    base::make_field<&config::fifo_size>("FIFO_SIZE", base::config_type::size, "256",
                                         "cells in each endpoint's receive FIFO (power of two)",
                                         base::config_range{2, 1u << 20}),
    // 8 KiB + 64: an 8 KiB message and its header fit one slot, and slots are not
    // all page-aligned (docs/shm.md, "Why 8256").
    base::make_field<&config::bcopy_size>("BCOPY_SIZE", base::config_type::size, "8256",
                                          "bytes of each cell's bounce slot = largest bcopy "
                                          "message (multiple of 64)",
                                          base::config_range{256, 1u << 20}),
    base::make_field<&config::peer_check_interval>(
        "PEER_CHECK_INTERVAL", base::config_type::time_us, "10ms",
        "least time between checks for dead peers (run only while idle or when a FIFO is full)"),
    base::make_field<&config::max_senders>("MAX_SENDERS", base::config_type::uint, "256",
                                           "sender slots per receive segment: local endpoints "
                                           "that can send to one endpoint",
                                           base::config_range{1, 4096}),
    base::make_field<&config::rx_batch>("RX_BATCH", base::config_type::uint, "16",
                                        "most messages delivered by one progress call",
                                        base::config_range{1, 1024}),
    base::make_field<&config::cleanup_stale>("CLEANUP_STALE", base::config_type::boolean, "y",
                                             "on open, unlink /dev/shm/weft-shm-* segments whose "
                                             "process no longer exists"),
    base::make_field<&config::cma>(
        "CMA", base::config_type::ternary, "auto",
        "read large messages straight from the sender with cross-memory attach (process_vm_readv); "
        "auto: use it where the kernel permits, else a pipelined copy through the queue"),
    base::make_field<&config::cma_idle>(
        "CMA_IDLE", base::config_type::time_us, "20us",
        "a sender that has not progressed for this long is idle: a rendezvous receiver reads "
        "its data with cross-memory attach instead of asking it to push (0: never idle)"),
    // The defaults are this development machine's (docs/performance.md,
    // "Choosing the rendezvous method"): the push moves both processes' CPUs.
    base::make_field<&config::copy_bw>(
        "COPY_BW", base::config_type::uint, "25000",
        "cost model: MB/s of a rendezvous the sender pushes through the queue (pipelined, a "
        "copy on each side); with CMA_BW and CMA_OVERHEAD it chooses the method "
        "(WEFT_RNDV_GET_MIN=auto)",
        base::config_range{1, 1000000}),
    base::make_field<&config::cma_bw>(
        "CMA_BW", base::config_type::uint, "13000",
        "cost model: MB/s of one cross-memory-attach read of a rendezvous",
        base::config_range{1, 1000000}),
    base::make_field<&config::cma_overhead>(
        "CMA_OVERHEAD", base::config_type::uint, "1600",
        "cost model: ns of one cross-memory-attach call (system call, page pinning)",
        base::config_range{0, 1000000000}),
    // 64 KiB: from there one CMA copy beats the active-message put and get to
    // a polling target in latency (docs/shm.md, "Put and get: one CMA copy").
    base::make_field<&config::rma_cma_min>(
        "RMA_CMA_MIN", base::config_type::size, "64k",
        "smallest one-sided put or get done with cross-memory attach on registered memory that "
        "peers do not map; smaller ones go through active messages (faster while the target "
        "polls). Memory from weft_mr_alloc is mapped: always loads and stores"),
};

constexpr base::config_table shm_config_table =
    base::make_table("SHM", "shared-memory transport (peers on the same node)", config_fields);

// --------------------------------------------------------------- helpers

[[nodiscard]] std::uint64_t now_us() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000U +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000U;
}

/// Set once pidfd_open returned ENOSYS (kernel < 5.3, or valgrind): stop trying.
/// Relaxed loads and stores: a process-local hint; a stale read costs one more
/// ENOSYS, nothing else.
std::atomic<bool> pidfd_unsupported{false};

/// pidfd_open(2) through syscall(): glibc before 2.36 has no wrapper.
[[nodiscard]] int pidfd_open_pid(std::uint32_t pid) noexcept
{
#ifdef SYS_pidfd_open
    if (!pidfd_unsupported.load(std::memory_order_relaxed)) {
        const int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
        if (fd >= 0 || errno != ENOSYS) {
            return fd;
        }
        pidfd_unsupported.store(true, std::memory_order_relaxed);
    }
#endif
    errno = ENOSYS;
    return -1;
}

/// Without a pidfd: has `pid` exited? A zombie (exited, not yet reaped by its
/// parent) counts as exited, as it does for a pidfd.
[[nodiscard]] bool process_gone(std::uint32_t pid) noexcept
{
    if (kill(static_cast<pid_t>(pid), 0) == -1) {
        return errno == ESRCH;  // EPERM: it exists
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT;
    }
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    buf[n] = '\0';
    // "pid (comm) S ...": the state follows the last ')' (comm may contain ')').
    const char *p = std::strrchr(buf, ')');
    return p != nullptr && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

[[nodiscard]] cookie_t random_cookie(std::uint32_t pid, std::uint32_t ep_id) noexcept
{
    cookie_t c = 0;
    if (getrandom(&c, sizeof(c), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(c))) {
        // No entropy yet (early boot): time and identity still make reuse unlikely.
        c = static_cast<cookie_t>(now_us() ^ pid ^ (std::uint64_t{ep_id} << 16));
    }
    return c == 0 ? 1 : c;  // 0 means "no cookie"
}

[[nodiscard]] bool is_power_of_two(std::uint64_t v) noexcept
{
    return v != 0 && (v & (v - 1)) == 0;
}

/// The direction of a cross-memory-attach copy.
enum class cma_dir : std::uint8_t {
    read,   ///< from the peer into our iovec (get)
    write,  ///< from our iovec into the peer (put)
};

void default_am(void *, src_id, am_word, const void *, std::size_t) {}
void default_peer_failed(void *, conn_id, src_id, status) {}

// --------------------------------------------------------------- the transport

/// Send side, hot: one per connection, one cache line each.
struct alignas(64) tx_conn {
    tx_view v;
    std::uint8_t dead;  ///< sends fail with unreachable
};
static_assert(sizeof(tx_conn) == 64);

/// Send side, cold.
struct conn_info {
    address peer;
    mapping map;                ///< the peer's segment; empty for a connection to ourselves
    segment_header *hdr;        ///< the peer's header (in map, or our own)
    sender_slot *slot;          ///< our slot in the peer's table
    std::uint32_t proc;         ///< index in procs_
    bool reported;              ///< peer_failed called for this connection
    std::uint32_t exposed = 0;  ///< our buffers exposed to this peer now
};

/// A peer process we watch (connected to, or registered in our slots).
struct proc {
    std::uint32_t pid;
    int pidfd;  ///< -1: our own process, or pidfd_open unavailable (kill(pid, 0) then)
    bool self;  ///< our own process: never dies while we run
    bool dead;
};

/// A peer's region table (md.hpp), mapped read-only for the checks of its keys.
struct peer_table {
    mapping map;
    const md_slot *slots;  ///< in map
    std::uint32_t nslots;  ///< validated against the mapped size
    std::uint32_t pid;
    std::uint32_t serial;
    /// procs_ index of the owner: a later process with the same pid is another
    /// record, so it never finds the table of its predecessor.
    std::uint32_t proc;
    std::uint64_t used;  ///< table_clock_ at the last use
};

/// A peer's allocation (md.hpp, memory_domain::alloc), mapped read-write.
struct peer_mem {
    mapping map;         ///< mem_len bytes of the object, validated by fstat
    std::uint64_t base;  ///< where the owner maps it (the slot's mem_base)
    std::uint32_t pid;
    std::uint32_t id;    ///< the allocation's number (its name)
    std::uint32_t proc;  ///< procs_ index of the owner (as peer_table::proc)
    bool pinned;         ///< map_rkey handed out a pointer: never evicted
    std::uint64_t used;  ///< table_clock_ at the last use
};

enum class rx_state : std::uint8_t {
    none,     ///< slot free or not yet seen
    live,     ///< registered sender, process watched
    dead,     ///< its process died; freed once its cells are consumed
    closing,  ///< it closed cleanly; freed once its cells are consumed
};

/// Receive side: what we know about each of our sender slots.
struct rx_slot {
    rx_state state = rx_state::none;
    bool reported = false;
    std::uint32_t pid = 0;
    std::uint32_t proc = invalid_id;
    std::uint32_t release_after = 0;  ///< FIFO position after its last possible cell
};

class shm_iface final : public iface {
  public:
    shm_iface(const open_params &p, const config &cfg, mapping seg, const segment_geometry &geo,
              cookie_t cookie);
    ~shm_iface() override;

    [[nodiscard]] const attributes &attr() const noexcept override { return attr_; }
    [[nodiscard]] status pack_address(address_builder &b) override;
    void set_local_address(const address &a) noexcept override { my_addr_ = a; }
    [[nodiscard]] bool reachable(const address &peer) const noexcept override;
    [[nodiscard]] status connect(const address &peer, conn_id &out) override;
    [[nodiscard]] status remote_address(src_id src, address &out) const override;
    [[nodiscard]] status expose(conn_id conn, const void *buf, std::size_t len,
                                exposure &out) override;
    void unexpose(const exposure &e) noexcept override;
    [[nodiscard]] status unpack_rkey(const std::uint8_t *data, std::size_t len,
                                     rkey &out) const override
    {
        return unpack_md_key(data, len, out);
    }
    [[nodiscard]] void *map_rkey(conn_id conn, const rkey &key, std::uint64_t raddr,
                                 std::size_t len) override;

    [[nodiscard]] const struct stats &counters() const noexcept { return stats_; }

  private:
    static status send_short(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const void *payload, std::size_t len);
    static status send_bcopy(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                             std::size_t offset, std::size_t len);
    static unsigned progress(iface *tl);
    static status get(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    static status put(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    static status atomic(iface *tl, conn_id conn, const atomic_args &a, std::uint64_t cookie);

    /// Where [raddr, raddr + len) of allocation `m` (checked by region_access)
    /// is mapped here, mapping it first; nullptr if it cannot be. `out` (if
    /// given) gets the cache entry.
    [[nodiscard]] std::uint8_t *mapped(conn_id conn, const mem_view &m, std::uint64_t raddr,
                                       std::size_t len, peer_mem **out = nullptr);
    [[gnu::cold, gnu::noinline]] peer_mem *map_mem(std::uint32_t pid, std::uint32_t proc,
                                                   const mem_view &m);

    /// Put or get with a region key: check it against the peer's table, then copy.
    [[nodiscard]] status region_op(cma_dir dir, conn_id conn, const struct iovec *iov,
                                   std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                                   const rkey &key);
    /// ok, or access when the key does not allow [raddr, raddr + len) with `acc`.
    /// `mem` (if given) gets the allocation the region lies in (id 0: none).
    [[nodiscard]] status region_access(conn_id conn, const rkey &key, std::uint64_t raddr,
                                       std::size_t len, unsigned acc, mem_view *mem = nullptr);
    [[nodiscard]] const peer_table *find_table(std::uint32_t pid, std::uint32_t serial,
                                               std::uint32_t proc);
    [[gnu::cold, gnu::noinline]] const peer_table *map_table(std::uint32_t pid,
                                                             std::uint32_t serial,
                                                             std::uint32_t proc);
    /// The single copy: `len` bytes between `iov` and [raddr, raddr + len) of `pid`.
    [[nodiscard]] status cma_copy(cma_dir dir, std::uint32_t pid, const struct iovec *iov,
                                  std::size_t iovcnt, std::size_t len, std::uint64_t raddr);
    /// not_supported for a put or get with a key while CMA is unusable (said once).
    [[gnu::cold, gnu::noinline]] status rma_declined();

    [[gnu::always_inline]] inline unsigned drain(cell *c);
    [[gnu::always_inline]] inline void deliver(cell *c, std::uint32_t pos);
    /// Free a malformed cell (and count and log it).
    [[gnu::cold, gnu::noinline]] void drop_cell(cell *c, std::uint32_t pos, unsigned am,
                                                unsigned kind, unsigned src, std::uint32_t len);
    /// send_short of max_inline + 1 .. max_pair bytes: two adjacent cells.
    [[gnu::noinline]] status send_pair(conn_id conn, am_word am, const void *hdr,
                                       std::size_t hdr_len, const void *payload, std::size_t len);
    [[gnu::cold, gnu::noinline]] unsigned idle_tick();
    /// Publish that we are running (segment_control::active_us): only while a
    /// buffer of ours is exposed, i.e. a peer may be deciding how to read it.
    [[gnu::noinline]] void stamp_active() noexcept;
    [[nodiscard]] peer_activity activity(conn_id conn) const noexcept override;
    /// Count a buffer exposed to (+1) or released from (-1) connection
    /// `conn`, and tell peers to how many of them we have buffers exposed
    /// (segment_control::exposed).
    void count_exposed(conn_id conn, int delta) noexcept;
    [[gnu::cold, gnu::noinline]] status send_full(conn_id conn);
    [[gnu::cold, gnu::noinline]] status bad_send(conn_id conn, am_word am, std::size_t hdr_len,
                                                 std::size_t total) const;

    void check_peers(std::uint64_t now);
    void scan_slots(bool force);
    void poll_procs();
    void release_slots();
    void skip_dead_reservations();
    unsigned report_failures();
    [[nodiscard]] std::uint32_t find_or_add_proc(std::uint32_t pid);
    void sync_tx() noexcept
    {
        tx_ = txs_.data();
        ntx_ = static_cast<std::uint32_t>(txs_.size());
    }

    // Receive hot path (progress reads these and handlers_, nothing else).
    cell *cells_;
    std::uint8_t *bcopy_;
    std::uint32_t head_ = 0;  ///< next position to consume (private to us)
    std::uint32_t mask_;
    std::uint32_t fifo_size_;
    std::uint32_t bcopy_size_;
    std::uint32_t nslots_;
    std::uint32_t batch_;
    /// skip_dead_reservations: pair_skip_ is the second position of a skipped
    /// reservation that a dead sender announced as a pair.
    std::uint32_t pair_skip_ = 0;
    bool pair_skip_valid_ = false;
    std::uint32_t idle_countdown_ = idle_polls_per_tick;
    std::uint32_t exposed_ = 0;        ///< buffers exposed (expose() minus unexpose())
    std::uint32_t exposed_peers_ = 0;  ///< connections with a buffer exposed
    // Send hot path.
    tx_conn *tx_ = nullptr;  ///< txs_.data()
    std::uint32_t ntx_ = 0;

    attributes attr_{};
    mapping seg_;
    segment_geometry geo_;
    segment_header *hdr_;
    sender_slot *slots_;
    std::string name_;
    std::uint64_t node_id_;
    std::uint32_t pid_;
    std::uint32_t ep_id_;
    cookie_t cookie_;
    address my_addr_;  ///< the endpoint's whole address (set_local_address)

    std::vector<tx_conn> txs_;
    std::vector<conn_info> conns_;
    std::unordered_map<std::uint64_t, conn_id> conn_by_peer_;  ///< pid << 32 | ep_id
    std::vector<proc> procs_;
    std::vector<rx_slot> rx_;
    std::vector<pollfd> pfds_;
    std::vector<std::uint32_t> pfd_proc_;
    std::uint32_t seen_reg_gen_ = 0;
    std::uint32_t dead_slots_ = 0;
    std::uint32_t unreported_ = 0;
    std::uint64_t check_interval_us_;
    std::uint64_t last_check_us_ = 0;
    std::vector<peer_table> tables_;  ///< peers' region tables, at most max_peer_tables
    std::vector<peer_mem> mems_;      ///< peers' allocations, at most max_peer_mems
    std::size_t last_mem_ = 0;        ///< mems_ index of the last hit (checked first)
    bool mems_full_logged_ = false;
    std::uint64_t table_clock_ = 0;
    bool rma_declined_logged_ = false;
    bool cma_ = true;                ///< cross-memory attach allowed (config, then the first EPERM)
    std::uint64_t cma_idle_us_ = 0;  ///< a sender without progress this long is idle (0: never)
    std::size_t rma_cma_min_ = 0;    ///< smallest put/get with CMA on memory we do not map
    struct stats stats_ {};
};

shm_iface::shm_iface(const open_params &p, const config &cfg, mapping seg,
                     const segment_geometry &geo, cookie_t cookie)
    : cells_(seg_cells(seg.base(), geo.layout)),
      bcopy_(seg_bcopy(seg.base(), geo.layout)),
      mask_(geo.fifo_size - 1),
      fifo_size_(geo.fifo_size),
      bcopy_size_(geo.bcopy_size),
      nslots_(geo.nslots),
      batch_(static_cast<std::uint32_t>(cfg.rx_batch)),
      seg_(std::move(seg)),
      geo_(geo),
      hdr_(seg_header(seg_.base())),
      slots_(seg_slots(seg_.base(), geo.layout)),
      name_(segment_name(p.pid, p.ep_id)),
      node_id_(p.node_id),
      pid_(p.pid),
      ep_id_(p.ep_id),
      cookie_(cookie),
      rx_(geo.nslots),
      check_interval_us_(cfg.peer_check_interval)
{
    attr_.caps = cap::am;
    attr_.max_short = max_pair;
    attr_.max_bcopy = geo.bcopy_size;
    attr_.max_hdr = max_hdr;
    // A cell through the L2/L3 and a copy at each side; the pipelined copy of a
    // rendezvous moves COPY_BW (proto/ chooses a transport per peer by this
    // model, and a rendezvous method against get_cost). A rendezvous read is
    // one CMA copy: a system call with its page pinning, then memory speed.
    attr_.cost = {
        .overhead_ns = 40, .latency_ns = 150, .bandwidth_mbps = static_cast<double>(cfg.copy_bw)};
    ops_.send_short = &send_short;
    ops_.send_bcopy = &send_bcopy;
    ops_.progress = &progress;
    if (cfg.cma != base::config_ternary::no) {
        // Cross-memory attach reads a buffer the peer exposed (rendezvous), and
        // writes or reads a peer's registered memory (one-sided put and get,
        // with a key) from rma_cma_min up. Memory the peer allocated for it
        // (memory_domain::alloc) is mapped here: put and get are memcpy, and
        // atomics are CPU atomics on the shared pages, the instructions
        // proto/'s software atomics use on the target (cap::cpu_atomics). An
        // atomic on other memory returns not_supported: a CMA copy is atomic
        // with nothing, so it runs on the target's CPU (proto/'s messages).
        // One system call or memcpy moves any size: the limits are those of
        // the address space.
        attr_.caps |= cap::get | cap::put | cap::atomic | cap::cpu_atomics;
        attr_.max_get = SIZE_MAX;
        attr_.max_put = SIZE_MAX;
        constexpr std::uint32_t all = (1U << atomic_op_count) - 1;
        attr_.atomic32 = attr_.atomic64 =
            all & ~(atomic_bit(atomic_op::swap) | atomic_bit(atomic_op::cswap));
        attr_.atomic32f = attr_.atomic64f = all;
        attr_.get_cost = {.overhead_ns = static_cast<double>(cfg.cma_overhead),
                          .latency_ns = 150,
                          .bandwidth_mbps = static_cast<double>(cfg.cma_bw)};
        ops_.get = &get;
        ops_.put = &put;
        ops_.atomic = &atomic;
    } else {
        WEFT_LOG(shm, debug,
                 "%s: WEFT_SHM_CMA=n: rendezvous copy through the queue, one-sided put and get "
                 "by active messages",
                 name_.c_str());
    }
    cma_ = cfg.cma != base::config_ternary::no;
    cma_idle_us_ = cfg.cma_idle;
    rma_cma_min_ = cfg.rma_cma_min;
    handlers_ = {&default_am, &default_peer_failed, nullptr, nullptr, nullptr, nullptr};

    // Our own address, until set_local_address() gives us the endpoint's whole one.
    address_builder b({node_id_, pid_, ep_id_});
    (void)b.add(wire_id, nullptr, 0, &cookie_, sizeof(cookie_));
    my_addr_ = b.get();
    last_check_us_ = now_us();
}

shm_iface::~shm_iface()
{
    WEFT_LOG(shm, info,
             "%s closed: %" PRIu64 " sends found a FIFO full, %" PRIu64
             " rendezvous read with CMA, %" PRIu64 " cells dropped, %" PRIu64
             " peer checks, %" PRIu64 " put/get keys refused",
             name_.c_str(), stats_.tx_full, stats_.cma_reads, stats_.dropped_cells,
             stats_.peer_checks, stats_.keys_refused);
    // Tell every receiver we send to that our slot is closed: it frees the slot
    // once it has consumed our last cells. Release: our last publishes happen
    // before the state change is seen.
    for (conn_info &c : conns_) {
        c.slot->state.store(slot_state(slot_kind::closed, pid_), std::memory_order_release);
        c.hdr->ctl.reg_gen.fetch_add(1, std::memory_order_release);
    }
    // Senders that check find the closed flag and fail later sends. Relaxed: a
    // flag; they read nothing else on the strength of it.
    hdr_->ctl.closed.store(1, std::memory_order_relaxed);
    for (proc &p : procs_) {
        if (p.pidfd >= 0) {
            close(p.pidfd);
        }
    }
    tables_.clear();  // unmaps peers' region tables
    mems_.clear();    // unmaps peers' allocations (pointers from map_rkey end here)
    conns_.clear();   // unmaps peers' segments
    seg_.reset();
    unlink_segment(name_);
}

// --------------------------------------------------------------- data path

status shm_iface::send_short(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const void *payload, std::size_t len)
{
    auto *s = static_cast<shm_iface *>(tl);
    const std::size_t total = hdr_len + len;
    if (total > max_inline) [[unlikely]] {
        return s->send_pair(conn, am, hdr, hdr_len, payload, len);
    }
    if (conn >= s->ntx_) [[unlikely]] {
        return s->bad_send(conn, am, hdr_len, total);
    }
    const tx_conn &t = s->tx_[conn];
    if (t.dead) [[unlikely]] {
        return status::unreachable;
    }
    std::uint32_t pos;
    cell *c = fifo_reserve(t.v, pos);
    if (c == nullptr) [[unlikely]] {
        return s->send_full(conn);
    }
    static_assert(max_inline <= 64, "copy_small copies at most 64 bytes");
    base::copy_small(c->data, hdr, hdr_len);
    base::copy_small(c->data + hdr_len, payload, len);
    fifo_publish(c, pos, am, cell_kind::inline_data, t.v.slot, static_cast<std::uint32_t>(total));
    return status::ok;
}

status shm_iface::send_pair(conn_id conn, am_word am, const void *hdr, std::size_t hdr_len,
                            const void *payload, std::size_t len)
{
    const std::size_t total = hdr_len + len;
    if (conn >= ntx_ || total > max_pair) [[unlikely]] {
        return bad_send(conn, am, hdr_len, total);
    }
    const tx_conn &t = tx_[conn];
    if (t.dead) [[unlikely]] {
        return status::unreachable;
    }
    std::uint32_t pos;
    pair_refusal why;
    cell *c = fifo_reserve_pair(t.v, pos, why);
    if (c == nullptr) [[unlikely]] {
        if (why == pair_refusal::wrap) {
            // The tail is at the last cell: one cell and its bounce slot instead.
            const iovec iov{const_cast<void *>(payload), len};
            return send_bcopy(this, conn, am, hdr, hdr_len, &iov, 1, 0, len);
        }
        return send_full(conn);
    }
    // The body is header then payload, cut at max_inline: the first cell's data,
    // then the second cell from its byte pair_tail_offset (its seq stays).
    alignas(16) std::uint8_t body[max_pair];
    // Either part may be empty with a null pointer (no memcpy from null).
    if (hdr_len != 0) {
        std::memcpy(body, hdr, hdr_len);
    }
    if (len != 0) {
        std::memcpy(body + hdr_len, payload, len);
    }
    std::memcpy(c->data, body, max_inline);
    base::copy_small(reinterpret_cast<std::uint8_t *>(c + 1) + pair_tail_offset, body + max_inline,
                     total - max_inline);
    fifo_publish(c, pos, am, cell_kind::inline_pair, t.v.slot, static_cast<std::uint32_t>(total));
    return status::ok;
}

status shm_iface::send_bcopy(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                             std::size_t offset, std::size_t len)
{
    auto *s = static_cast<shm_iface *>(tl);
    const std::size_t total = hdr_len + len;
    if (conn >= s->ntx_ || hdr_len > max_hdr || total > s->attr_.max_bcopy) [[unlikely]] {
        return s->bad_send(conn, am, hdr_len, total);
    }
    const tx_conn &t = s->tx_[conn];
    if (t.dead) [[unlikely]] {
        return status::unreachable;
    }
    // Find the first payload byte, and check the iovec holds `len` bytes from
    // there, before reserving: a reserved cell must be published.
    std::size_t first = 0;
    std::size_t skip = offset;
    while (first < iovcnt && skip >= iov[first].iov_len) {
        skip -= iov[first].iov_len;
        ++first;
    }
    std::size_t avail = 0;
    for (std::size_t k = first; k < iovcnt && avail < len + skip; ++k) {
        avail += iov[k].iov_len;
    }
    if (avail < len + skip) [[unlikely]] {
        return s->bad_send(conn, am, hdr_len, SIZE_MAX);
    }
    if (s->exposed_ != 0) {
        s->stamp_active();  // a long pipelined send is running, not idle
    }
    std::uint32_t pos;
    cell *c = fifo_reserve(t.v, pos);
    if (c == nullptr) [[unlikely]] {
        return s->send_full(conn);
    }
    // The bounce slot of this cell: slot i belongs to cell i, so it is ours until
    // the receiver frees the cell.
    std::uint8_t *dst = t.v.bcopy + static_cast<std::size_t>(pos & t.v.mask) * t.v.bcopy_size;
    if (hdr_len != 0) {
        std::memcpy(dst, hdr, hdr_len);
    }
    dst += hdr_len;
    std::size_t left = len;
    for (std::size_t k = first; left != 0; ++k) {
        const std::size_t n = std::min(left, iov[k].iov_len - skip);
        if (n == 0) {
            continue;  // an empty entry may have a null base
        }
        base::copy_bulk(dst, static_cast<const std::uint8_t *>(iov[k].iov_base) + skip, n);
        dst += n;
        left -= n;
        skip = 0;
    }
    fifo_publish(c, pos, am, cell_kind::bcopy, t.v.slot, static_cast<std::uint32_t>(total));
    return status::ok;
}

unsigned shm_iface::progress(iface *tl)
{
    auto *s = static_cast<shm_iface *>(tl);
    if (s->exposed_ != 0) [[unlikely]] {
        s->stamp_active();
    }
    cell *c = cell_at(s->cells_, s->mask_, s->head_);
    if (fifo_ready(c, s->head_)) {
        return s->drain(c);
    }
    // Empty: the only shared-memory access was the load of the head cell's seq.
    if (--s->idle_countdown_ == 0) [[unlikely]] {
        return s->idle_tick();
    }
    return 0;
}

unsigned shm_iface::drain(cell *c)
{
    unsigned n = 0;
    do {
        deliver(c, head_);  // advances the head past the message and frees its cells
        c = cell_at(cells_, mask_, head_);
    } while (++n < batch_ && fifo_ready(c, head_));
    return n;
}

void shm_iface::deliver(cell *c, std::uint32_t pos)
{
    // Each field read once (atomics); ordered after the acquire of seq.
    const am_word am = c->am.load(std::memory_order_relaxed);
    const unsigned src = c->src.load(std::memory_order_relaxed);
    const std::uint32_t len_kind = c->len_kind.load(std::memory_order_relaxed);
    const std::uint32_t len = len_kind & 0xffffffu;
    const unsigned kind = len_kind >> 24;
    // Advance before the handler runs, so a handler that (against the rules)
    // re-enters progress consumes the next message, not this one again.
    head_ = pos + 1;
    // The next cell is usually the next message of a stream: start its line
    // transfer while the handler runs.
    __builtin_prefetch(cell_at(cells_, mask_, pos + 1), 0, 3);
    if (src >= nslots_) [[unlikely]] {
        drop_cell(c, pos, am, kind, src, len);
        return;
    }
    if (kind == static_cast<unsigned>(cell_kind::inline_data) && len <= max_inline) [[likely]] {
        handlers_.am(handlers_.arg, src, am, c->data, len);
    } else if (kind == static_cast<unsigned>(cell_kind::bcopy) && len <= bcopy_size_) {
        handlers_.am(handlers_.arg, src, am,
                     bcopy_ + static_cast<std::size_t>(pos & mask_) * bcopy_size_, len);
    } else if (kind == static_cast<unsigned>(cell_kind::inline_pair) && len > max_inline &&
               len <= max_pair && (pos & mask_) != mask_) {
        // The body continues in the next cell (never the last: producers do not
        // wrap a pair). Copied out, so both cells are free before the handler runs.
        alignas(16) std::uint8_t body[max_pair];
        std::memcpy(body, c->data, max_inline);
        base::copy_small(body + max_inline,
                         reinterpret_cast<const std::uint8_t *>(c + 1) + pair_tail_offset,
                         len - max_inline);
        head_ = pos + 2;
        __builtin_prefetch(cell_at(cells_, mask_, pos + 2), 0, 3);
        fifo_release_pair(c, pos, fifo_size_);
        handlers_.am(handlers_.arg, src, am, body, len);
        return;
    } else {
        drop_cell(c, pos, am, kind, src, len);
        return;
    }
    fifo_release(c, pos, fifo_size_);
}

// --------------------------------------------------------------- cold paths

void shm_iface::drop_cell(cell *c, std::uint32_t pos, unsigned am, unsigned kind, unsigned src,
                          std::uint32_t len)
{
    // One cell: a malformed pair's second cell is not trusted to be the pair's.
    fifo_release(c, pos, fifo_size_);
    const std::uint64_t n = ++stats_.dropped_cells;
    if (n <= drop_warn_first || n % drop_warn_every == 0) {
        WEFT_LOG(shm, warn,
                 "%s: dropped malformed cell at position %" PRIu32
                 " (am 0x%x, kind %u, slot %u, length %" PRIu32 "; %" PRIu64 " dropped so far)",
                 name_.c_str(), pos, am, kind, src, len, n);
    }
}

status shm_iface::bad_send(conn_id conn, am_word am, std::size_t hdr_len, std::size_t total) const
{
    WEFT_LOG(shm, error,
             "%s: invalid send (conn %" PRIu32 " of %" PRIu32
             ", am 0x%x, hdr %zu, total %zu, or short iovec)",
             name_.c_str(), conn, ntx_, unsigned{am}, hdr_len, total);
    return status::invalid;
}

status shm_iface::send_full(conn_id conn)
{
    ++stats_.tx_full;
    if (tx_[conn].dead == 0 && fifo_corrupted(tx_[conn].v)) [[unlikely]] {
        // Nothing we send can get through: fail this peer (reported from the
        // next progress, as any dead peer), say it once, and return.
        WEFT_LOG(shm, error,
                 "%s: the receive FIFO of peer pid %" PRIu32 " (conn %" PRIu32
                 ") is corrupted (its tail or a cell's sequence number was overwritten): "
                 "the peer is failed",
                 name_.c_str(), conns_[conn].peer.pid(), conn);
        txs_[conn].dead = 1;
        ++unreported_;
        idle_countdown_ = 1;
        return status::unreachable;
    }
    // A full FIFO may mean a dead receiver: run the (rate-limited) peer check from
    // here too, since a sender that only sends may never have an idle progress.
    if (--idle_countdown_ == 0) {
        idle_countdown_ = idle_polls_per_tick;
        const std::uint64_t now = now_us();
        if (now - last_check_us_ >= check_interval_us_) {
            check_peers(now);
        }
    }
    if (unreported_ != 0) {
        idle_countdown_ = 1;  // report from the next empty progress, not from inside a send
    }
    return tx_[conn].dead ? status::unreachable : status::again;
}

unsigned shm_iface::idle_tick()
{
    idle_countdown_ = idle_polls_per_tick;
    const std::uint64_t now = now_us();
    if (now - last_check_us_ >= check_interval_us_) {
        check_peers(now);
    }
    return report_failures();
}

void shm_iface::check_peers(std::uint64_t now)
{
    last_check_us_ = now;
    ++stats_.peer_checks;
    scan_slots(stats_.peer_checks % full_rescan_every == 0);
    poll_procs();

    for (std::size_t i = 0; i < txs_.size(); ++i) {
        if (txs_[i].dead) {
            continue;
        }
        const conn_info &c = conns_[i];
        // Relaxed: a flag; nothing is read on the strength of it.
        if (procs_[c.proc].dead || c.hdr->ctl.closed.load(std::memory_order_relaxed) != 0) {
            txs_[i].dead = 1;
            ++unreported_;
        }
    }
    for (std::uint32_t s = 0; s < nslots_; ++s) {
        rx_slot &r = rx_[s];
        if (r.state == rx_state::live && procs_[r.proc].dead) {
            r.state = rx_state::dead;
            // Acquire: every cell it reserved is below the tail we read.
            r.release_after = hdr_->tail.load(std::memory_order_acquire);
            ++dead_slots_;
            ++unreported_;
        }
    }
    release_slots();
    if (dead_slots_ != 0) {
        skip_dead_reservations();
    }
}

void shm_iface::scan_slots(bool force)
{
    // Acquire: pairs with the sender's release increment after its slot CAS, so
    // the new slot states are visible below.
    const std::uint32_t gen = hdr_->ctl.reg_gen.load(std::memory_order_acquire);
    if (gen == seen_reg_gen_ && !force) {
        return;
    }
    seen_reg_gen_ = gen;
    for (std::uint32_t s = 0; s < nslots_; ++s) {
        const std::uint64_t st = slots_[s].state.load(std::memory_order_acquire);
        const slot_kind k = slot_state_kind(st);
        rx_slot &r = rx_[s];
        if (r.state == rx_state::none && k == slot_kind::active) {
            r.pid = slot_state_pid(st);
            r.proc = find_or_add_proc(r.pid);
            r.state = rx_state::live;
            r.reported = false;
        } else if ((r.state == rx_state::none || r.state == rx_state::live) &&
                   k == slot_kind::closed) {
            // Closed cleanly (a disconnect): reported like a failure, so the layer
            // above forgets this src before the slot can name another sender.
            // Its cells are all published (a send publishes before returning),
            // so they are below the tail.
            r.state = rx_state::closing;
            r.pid = slot_state_pid(st);
            r.reported = false;
            r.release_after = hdr_->tail.load(std::memory_order_acquire);
            ++unreported_;
        }
    }
}

std::uint32_t shm_iface::find_or_add_proc(std::uint32_t pid)
{
    for (std::uint32_t i = 0; i < procs_.size(); ++i) {
        // A dead record with the same pid is an earlier process (pid reuse).
        if (procs_[i].pid == pid && !procs_[i].dead) {
            return i;
        }
    }
    proc p{pid, -1, pid == pid_, false};
    if (!p.self) {
        p.pidfd = pidfd_open_pid(pid);
        if (p.pidfd < 0) {
            if (errno == ESRCH) {
                p.dead = true;
            } else if (errno != ENOSYS) {
                WEFT_LOG(shm, debug, "pidfd_open(%" PRIu32 ") failed: %s; using kill(pid, 0)", pid,
                         std::strerror(errno));
            }
        }
    }
    procs_.push_back(p);
    return static_cast<std::uint32_t>(procs_.size() - 1);
}

void shm_iface::poll_procs()
{
    pfds_.clear();
    pfd_proc_.clear();
    for (std::uint32_t i = 0; i < procs_.size(); ++i) {
        proc &p = procs_[i];
        if (p.dead || p.self) {
            continue;
        }
        if (p.pidfd >= 0) {
            pfds_.push_back({p.pidfd, POLLIN, 0});
            pfd_proc_.push_back(i);
        } else if (process_gone(p.pid)) {
            p.dead = true;
        }
    }
    if (pfds_.empty()) {
        return;
    }
    // Timeout 0: never blocks. A pidfd is readable once its process has exited.
    if (poll(pfds_.data(), pfds_.size(), 0) <= 0) {
        return;
    }
    for (std::size_t k = 0; k < pfds_.size(); ++k) {
        if (pfds_[k].revents != 0) {
            proc &p = procs_[pfd_proc_[k]];
            p.dead = true;
            close(p.pidfd);
            p.pidfd = -1;
            WEFT_LOG(shm, debug, "%s: peer process %" PRIu32 " exited", name_.c_str(), p.pid);
        }
    }
}

void shm_iface::release_slots()
{
    for (std::uint32_t s = 0; s < nslots_; ++s) {
        rx_slot &r = rx_[s];
        if ((r.state != rx_state::dead && r.state != rx_state::closing) || !r.reported) {
            continue;
        }
        // All cells reserved before it died/closed are consumed (or skipped).
        if (static_cast<std::int32_t>(head_ - r.release_after) < 0) {
            continue;
        }
        if (r.state == rx_state::dead) {
            --dead_slots_;
        }
        r = rx_slot{};
        // Relaxed: only we write `uses`; claimers read it as a preference hint.
        slots_[s].uses.store(slots_[s].uses.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
        slots_[s].resv.store(0, std::memory_order_relaxed);
        // Release: the reset resv is visible to the next claimer (CAS acquire).
        slots_[s].state.store(0, std::memory_order_release);
        ++stats_.slots_released;
    }
}

void shm_iface::skip_dead_reservations()
{
    // The cell at the head is reserved (tail != head) but not published. Its owner
    // announced the position in its slot's resv before the tail CAS that reserved
    // it, so the owner is among the slots whose resv == head. If all of those are
    // dead, the owner is dead and the cell will never be published: free it.
    // A pair reservation (resv_pair) also holds head + 1, which nobody announces:
    // after skipping a position a dead pair announcer held, the next position is
    // skipped too when unpublished and no live sender announced it (had anyone
    // reserved it, that sender announced it first). docs/shm.md "Dead senders".
    for (;;) {
        cell *c = cell_at(cells_, mask_, head_);
        if (fifo_ready(c, head_)) {
            return;  // published: progress delivers it
        }
        // Acquire: synchronizes with the reserving CAS (and the release sequence of
        // later CASes), so the owner's resv store is visible below.
        if (hdr_->tail.load(std::memory_order_acquire) == head_) {
            return;  // empty
        }
        bool dead_candidate = false;
        bool dead_pair = false;
        bool live_candidate = false;
        for (std::uint32_t s = 0; s < nslots_ && !live_candidate; ++s) {
            // Acquire: a value newer than head means that sender moved on after
            // publishing whatever it had reserved, and the re-check below sees it.
            const std::uint64_t r = slots_[s].resv.load(std::memory_order_acquire);
            if ((r & ~resv_pair) != (resv_valid | head_)) {
                continue;
            }
            switch (rx_[s].state) {
                case rx_state::dead:
                    dead_candidate = true;
                    dead_pair = dead_pair || (r & resv_pair) != 0;
                    break;
                case rx_state::closing:
                    break;  // closed cleanly: it published everything it reserved
                default:
                    live_candidate = true;  // live, or registered after our last scan
                    break;
            }
        }
        const bool second_of_pair = pair_skip_valid_ && pair_skip_ == head_;
        if ((!dead_candidate && !second_of_pair) || live_candidate) {
            return;
        }
        if (fifo_ready(c, head_)) {
            return;  // published after all (its owner moved its resv on)
        }
        WEFT_LOG(shm, warn, "%s: skipping FIFO position %" PRIu32 " reserved by a dead sender",
                 name_.c_str(), head_);
        fifo_release(c, head_, fifo_size_);
        pair_skip_valid_ = dead_pair;
        pair_skip_ = head_ + 1;
        ++head_;
        ++stats_.dead_reservations;
    }
}

unsigned shm_iface::report_failures()
{
    if (unreported_ == 0) {
        return 0;
    }
    unreported_ = 0;
    unsigned n = 0;
    // Index loops: a handler may connect() (growing txs_/conns_).
    for (std::size_t i = 0; i < txs_.size(); ++i) {
        if (!txs_[i].dead || conns_[i].reported) {
            continue;
        }
        conns_[i].reported = true;
        // The same peer endpoint may also send to us: report both sides at once.
        src_id src = invalid_id;
        for (std::uint32_t s = 0; s < nslots_; ++s) {
            const rx_slot &r = rx_[s];
            address sa;
            if ((r.state == rx_state::dead || r.state == rx_state::closing) && !r.reported &&
                r.pid == conns_[i].peer.pid() && remote_address(s, sa) == status::ok &&
                sa.ep_id() == conns_[i].peer.ep_id()) {
                src = s;
                rx_[s].reported = true;
                break;
            }
        }
        WEFT_LOG(shm, debug, "%s: peer %" PRIu32 ":%" PRIu32 " unreachable (conn %zu, src %d)",
                 name_.c_str(), conns_[i].peer.pid(), conns_[i].peer.ep_id(), i,
                 src == invalid_id ? -1 : static_cast<int>(src));
        handlers_.peer_failed(handlers_.arg, static_cast<conn_id>(i), src, status::unreachable);
        ++n;
    }
    for (std::uint32_t s = 0; s < nslots_; ++s) {
        if ((rx_[s].state == rx_state::dead || rx_[s].state == rx_state::closing) &&
            !rx_[s].reported) {
            rx_[s].reported = true;
            WEFT_LOG(shm, debug, "%s: sender in slot %" PRIu32 " (pid %" PRIu32 ") %s",
                     name_.c_str(), s, rx_[s].pid,
                     rx_[s].state == rx_state::dead ? "died" : "closed");
            handlers_.peer_failed(handlers_.arg, invalid_id, s, status::unreachable);
            ++n;
        }
    }
    return n;
}

// --------------------------------------------------------------- control path

status shm_iface::pack_address(address_builder &b)
{
    // Per endpoint: the segment cookie. Nothing per host: the header's node id
    // is what says "same node".
    return b.add(wire_id, nullptr, 0, &cookie_, sizeof(cookie_));
}

bool shm_iface::reachable(const address &peer) const noexcept
{
    cookie_t cookie;
    return peer.node_id() == node_id_ && address_cookie(peer, cookie);
}

status shm_iface::connect(const address &peer, conn_id &out)
{
    cookie_t cookie = 0;
    if (peer.node_id() != node_id_ || !address_cookie(peer, cookie)) {
        return status::unreachable;
    }
    const std::uint64_t key = (std::uint64_t{peer.pid()} << 32) | peer.ep_id();
    if (auto it = conn_by_peer_.find(key); it != conn_by_peer_.end()) {
        const conn_id id = it->second;
        cookie_t known = 0;
        if (address_cookie(conns_[id].peer, known) && known == cookie) {
            out = id;
            return txs_[id].dead ? status::unreachable : status::ok;
        }
        // Same pid and ep_id, other cookie: a new process reused the pid.
    }

    const bool to_self = peer.pid() == pid_ && peer.ep_id() == ep_id_;
    if (to_self && cookie != cookie_) {
        return status::unreachable;  // an address of an earlier incarnation of our pid
    }
    const std::uint32_t pi = find_or_add_proc(peer.pid());
    if (procs_[pi].dead) {
        return status::unreachable;
    }

    mapping m;
    segment_geometry geo{};
    segment_header *h = hdr_;
    if (to_self) {
        geo = geo_;  // sending to ourselves goes through our own FIFO
    } else {
        const status s = map_segment(peer.id(), cookie, m, geo);
        if (s != status::ok) {
            return s == status::no_entry || s == status::bad_message ? status::unreachable : s;
        }
        h = seg_header(m.base());
    }
    if (geo.bcopy_size < bcopy_size_) {
        WEFT_LOG(shm, error,
                 "%s: peer %" PRIu32 ":%" PRIu32 " has WEFT_SHM_BCOPY_SIZE %" PRIu32
                 " < ours (%" PRIu32 "); use the same value in every process",
                 name_.c_str(), peer.pid(), peer.ep_id(), geo.bcopy_size, bcopy_size_);
        return status::not_supported;
    }
    void *base = to_self ? seg_.base() : m.base();
    sender_slot *slots = seg_slots(base, geo.layout);

    // Claim a free slot, preferring one never used: a src id is reused only once
    // every slot has served a sender (the layer above may cache per-src state).
    // acq_rel: acquire sees the owner's reset of a released slot; release is not
    // needed for the claim itself (reg_gen publishes it). Relaxed `uses`: a hint.
    sender_slot *mine = nullptr;
    std::uint32_t slot = 0;
    for (int pass = 0; pass < 2 && mine == nullptr; ++pass) {
        for (slot = 0; slot < geo.nslots; ++slot) {
            if (pass == 0 && slots[slot].uses.load(std::memory_order_relaxed) != 0) {
                continue;
            }
            std::uint64_t expected = 0;
            if (slots[slot].state.compare_exchange_strong(
                    expected, slot_state(slot_kind::active, pid_), std::memory_order_acq_rel,
                    std::memory_order_relaxed)) {
                mine = &slots[slot];
                break;
            }
        }
    }
    if (mine == nullptr) {
        WEFT_LOG(shm, error,
                 "%s: no free sender slot in the segment of %" PRIu32 ":%" PRIu32 " (%" PRIu32
                 " slots; raise WEFT_SHM_MAX_SENDERS)",
                 name_.c_str(), peer.pid(), peer.ep_id(), geo.nslots);
        return status::no_memory;
    }
    // Relaxed (and the plain address copy): ordered for the receiver by the
    // release increment below and by our first publish.
    mine->resv.store(0, std::memory_order_relaxed);
    mine->addr_len = static_cast<std::uint32_t>(my_addr_.size());
    std::memcpy(mine->addr, my_addr_.data(), my_addr_.size());
    // Release: the receiver acquires reg_gen, then reads our slot state and pid.
    // The address is ordered for it by our first publish (release).
    h->ctl.reg_gen.fetch_add(1, std::memory_order_release);

    tx_conn t{};
    t.v.cells = seg_cells(base, geo.layout);
    t.v.tail = &h->tail;
    t.v.resv = &mine->resv;
    t.v.bcopy = seg_bcopy(base, geo.layout);
    t.v.mask = geo.fifo_size - 1;
    t.v.bcopy_size = geo.bcopy_size;
    t.v.slot = static_cast<std::uint16_t>(slot);
    t.dead = 0;

    const auto id = static_cast<conn_id>(txs_.size());
    txs_.push_back(t);
    conns_.push_back(conn_info{peer, std::move(m), h, mine, pi, false, 0});
    conn_by_peer_[key] = id;
    sync_tx();
    out = id;
    return status::ok;
}

status shm_iface::expose(conn_id conn, const void *buf, std::size_t len, exposure &out)
{
    (void)buf;
    (void)len;
    if (!cma_) {
        return status::not_supported;
    }
    if (conn >= ntx_) {
        WEFT_LOG(shm, error, "%s: expose on unknown connection %u", name_.c_str(), conn);
        return status::invalid;
    }
    // Exposed at every size: the receiver chooses between reading it with CMA
    // and asking us to push it through the queue (proto/'s rendezvous, from
    // the cost models and from what activity() tells it about us). No key:
    // the reader names the buffer by our pid and its address.
    count_exposed(conn, +1);
    stamp_active();
    out.handle = conn;
    out.rkey_len = 0;
    return status::ok;
}

void shm_iface::unexpose(const exposure &e) noexcept
{
    if (e.handle < conns_.size() && conns_[e.handle].exposed != 0) {
        count_exposed(static_cast<conn_id>(e.handle), -1);
    }
}

void shm_iface::count_exposed(conn_id conn, int delta) noexcept
{
    // A sender pushing to two receivers at once shares its CPU between them;
    // many sends waiting for one receiver are pushed one after the other at
    // full speed. So peers learn the receivers, not the buffers.
    std::uint32_t &n = conns_[conn].exposed;
    if (delta > 0) {
        ++exposed_;
        exposed_peers_ += n++ == 0 ? 1 : 0;
    } else {
        --exposed_;
        exposed_peers_ -= --n == 0 ? 1 : 0;
    }
    // Relaxed: a hint, as active_us; the line is ours (the owner's) alone.
    hdr_->ctl.exposed.store(exposed_peers_, std::memory_order_relaxed);
}

void shm_iface::stamp_active() noexcept
{
    // Relaxed: a hint; a stale value costs one choice of copy, never data.
    hdr_->ctl.active_us.store(now_us(), std::memory_order_relaxed);
}

peer_activity shm_iface::activity(conn_id conn) const noexcept
{
    if (conn >= ntx_ || conns_[conn].reported) {
        return peer_activity::unknown;  // failed: the push path reports it as before
    }
    // The peer's words, untrusted: any value only picks one of two correct copies.
    const segment_control &ctl = conns_[conn].hdr->ctl;
    if (cma_idle_us_ != 0) {
        const std::uint64_t last = ctl.active_us.load(std::memory_order_relaxed);
        const std::uint64_t now = now_us();
        if (last <= now && now - last >= cma_idle_us_) {
            return peer_activity::idle;
        }
    }
    return ctl.exposed.load(std::memory_order_relaxed) > 1 ? peer_activity::busy
                                                           : peer_activity::running;
}

status shm_iface::get(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie)
{
    (void)cookie;  // cross-memory attach is done on return
    auto *s = static_cast<shm_iface *>(tl);
    if (kind_of(key) == rkey_kind::region || kind_of(key) == rkey_kind::mapped) {
        return s->region_op(cma_dir::read, conn, iov, iovcnt, len, raddr, key);
    }
    if (kind_of(key) != rkey_kind::exposure) {
        return status::access;  // not a key this transport made
    }
    // A rendezvous exposure: the peer's pid and the address name the memory.
    if (!s->cma_) {
        return status::not_supported;
    }
    if (conn >= s->ntx_) {
        WEFT_LOG(shm, error, "%s: get on unknown connection %u", s->name_.c_str(), conn);
        return status::invalid;
    }
    if (s->tx_[conn].dead) {
        return status::unreachable;
    }
    const status st =
        s->cma_copy(cma_dir::read, s->conns_[conn].peer.pid(), iov, iovcnt, len, raddr);
    if (st == status::ok) {
        ++s->stats_.cma_reads;  // counted once the read succeeded
    }
    return st;
}

status shm_iface::put(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie)
{
    (void)cookie;  // cross-memory attach is done on return
    return static_cast<shm_iface *>(tl)->region_op(cma_dir::write, conn, iov, iovcnt, len, raddr,
                                                   key);
}

status shm_iface::region_op(cma_dir dir, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                            std::size_t len, std::uint64_t raddr, const rkey &key)
{
    if (conn >= ntx_) {
        WEFT_LOG(shm, error, "%s: %s on unknown connection %u", name_.c_str(),
                 dir == cma_dir::read ? "get" : "put", conn);
        return status::invalid;
    }
    if (tx_[conn].dead) {
        return status::unreachable;
    }
    const rkey_kind kind = kind_of(key);
    if (kind != rkey_kind::region && kind != rkey_kind::mapped) {
        return status::access;  // an exposure is for get, and no key at all is for nothing
    }
    if (kind == rkey_kind::region) {
        if (len < rma_cma_min_) {
            // Memory we cannot map, below the size where one CMA copy beats
            // the active messages to a polling target: those (proto/).
            return status::not_supported;
        }
        if (!cma_) {
            return rma_declined();
        }
    }
    std::size_t room = 0;
    for (std::size_t i = 0; i < iovcnt; ++i) {
        room += iov[i].iov_len;
    }
    if (room < len) {
        WEFT_LOG(shm, error, "%s: %s of %zu bytes with an iovec of %zu", name_.c_str(),
                 dir == cma_dir::read ? "get" : "put", len, room);
        return status::invalid;
    }
    mem_view m{};
    const status allowed = region_access(
        conn, key, raddr, len, dir == cma_dir::read ? access::remote_read : access::remote_write,
        kind == rkey_kind::mapped ? &m : nullptr);
    if (allowed != status::ok) {
        ++stats_.keys_refused;
        return allowed;  // the target's memory is untouched
    }
    if (kind == rkey_kind::mapped) {
        if (std::uint8_t *p = mapped(conn, m, raddr, len)) [[likely]] {
            // Plain copies through our mapping of the target's pages: visible
            // to the target as soon as the stores are (ok: done on return).
            if (dir == cma_dir::write) {
                (void)base::copy_from_iov(p, iov, iovcnt, 0, len);
            } else {
                (void)base::copy_to_iov(iov, iovcnt, 0, p, len);
            }
            return status::ok;
        }
        // The slot names no allocation (a forged mapped bit), or it cannot be
        // mapped here: as any registered memory.
        if (len < rma_cma_min_) {
            return status::not_supported;
        }
        if (!cma_) {
            return rma_declined();
        }
    }
    const status st = cma_copy(dir, conns_[conn].peer.pid(), iov, iovcnt, len, raddr);
    return st == status::not_supported ? rma_declined() : st;
}

status shm_iface::atomic(iface *tl, conn_id conn, const atomic_args &a, std::uint64_t cookie)
{
    (void)cookie;  // done on return
    auto *s = static_cast<shm_iface *>(tl);
    if ((a.width != 4 && a.width != 8) || a.raddr % a.width != 0 ||
        static_cast<unsigned>(a.op) >= atomic_op_count || (a.fetch && a.result == nullptr))
        [[unlikely]] {
        return status::invalid;
    }
    if (conn >= s->ntx_) [[unlikely]] {
        WEFT_LOG(shm, error, "%s: atomic on unknown connection %u", s->name_.c_str(), conn);
        return status::invalid;
    }
    if (s->tx_[conn].dead) [[unlikely]] {
        return status::unreachable;
    }
    const rkey_kind kind = kind_of(a.key);
    if (kind == rkey_kind::region) {
        return status::not_supported;  // not mapped here: the target's CPU (proto/)
    }
    if (kind != rkey_kind::mapped) {
        return status::access;
    }
    mem_view m{};
    if (const status st =
            s->region_access(conn, a.key, a.raddr, a.width, access::remote_atomic, &m);
        st != status::ok) {
        ++s->stats_.keys_refused;
        return st;
    }
    std::uint8_t *p = s->mapped(conn, m, a.raddr, a.width);
    if (p == nullptr) {
        return status::not_supported;
    }
    cpu_atomic(p, a);  // lock-free on the shared pages (transport/cpu_atomic.hpp)
    return status::ok;
}

void *shm_iface::map_rkey(conn_id conn, const rkey &key, std::uint64_t raddr, std::size_t len)
{
    if (conn >= ntx_ || tx_[conn].dead || kind_of(key) != rkey_kind::mapped) {
        return nullptr;  // exposures and memory we do not map have no pointer
    }
    mem_view m{};
    if (region_access(conn, key, raddr, len, 0, &m) != status::ok) {
        return nullptr;  // closed, reused, forged, or past the end
    }
    peer_mem *e = nullptr;
    std::uint8_t *p = mapped(conn, m, raddr, len, &e);
    if (p != nullptr) {
        e->pinned = true;  // the caller holds a pointer into it from now on
    }
    return p;
}

status shm_iface::region_access(conn_id conn, const rkey &key, std::uint64_t raddr, std::size_t len,
                                unsigned acc, mem_view *mem)
{
    const md_key k = md_key_of(key);
    const conn_info &ci = conns_[conn];
    if (k.pid != ci.peer.pid()) {
        return status::access;  // a key of another process than this connection's peer
    }
    const peer_table *t = find_table(k.pid, k.serial, ci.proc);
    if (t == nullptr) {
        return status::access;  // no such table (its domain is gone) or a malformed one
    }
    return check_region(t->slots, t->nslots, k, raddr, len, acc, mem);
}

std::uint8_t *shm_iface::mapped(conn_id conn, const mem_view &m, std::uint64_t raddr,
                                std::size_t len, peer_mem **out)
{
    if (m.id == 0) {
        return nullptr;
    }
    const conn_info &ci = conns_[conn];
    const std::uint32_t pid = ci.peer.pid();
    auto matches = [&](const peer_mem &e) {
        // The base and length too: the slot says which object it means.
        return e.id == m.id && e.pid == pid && e.proc == ci.proc && e.base == m.base &&
               e.map.size() == m.len;
    };
    peer_mem *e = nullptr;
    if (last_mem_ < mems_.size() && matches(mems_[last_mem_])) [[likely]] {
        e = &mems_[last_mem_];
    } else {
        for (std::size_t i = 0; i < mems_.size(); ++i) {
            if (matches(mems_[i])) {
                e = &mems_[i];
                last_mem_ = i;
                break;
            }
        }
        if (e == nullptr) {
            e = map_mem(pid, ci.proc, m);
            if (e == nullptr) {
                return nullptr;
            }
            last_mem_ = static_cast<std::size_t>(e - mems_.data());
        }
    }
    e->used = ++table_clock_;
    // check_region put [raddr, raddr + len) inside the registration and that
    // inside [m.base, m.base + m.len) = our mapping: in bounds. Checked again
    // here, where the pointer is made.
    const std::uint64_t off = raddr - m.base;
    if (raddr < m.base || off > e->map.size() || len > e->map.size() - off) [[unlikely]] {
        return nullptr;
    }
    if (out != nullptr) {
        *out = e;
    }
    return static_cast<std::uint8_t *>(e->map.base()) + off;
}

peer_mem *shm_iface::map_mem(std::uint32_t pid, std::uint32_t proc, const mem_view &m)
{
    const std::string name = mem_object_name(pid, m.id);
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
        const int err = errno;
        WEFT_LOG(shm, debug, "%s: cannot open allocation %s: %s", name_.c_str(), name.c_str(),
                 std::strerror(err));
        return nullptr;
    }
    // The object must be exactly the size the owner's slot says (untrusted
    // both): the range checks use it, and a shorter file would fault.
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) != m.len) {
        WEFT_LOG(shm, debug, "%s: allocation %s is not the size its slot says (%" PRIu64 ")",
                 name_.c_str(), name.c_str(), m.len);
        close(fd);
        return nullptr;
    }
    // Make room first: processes known dead, then the least recently used,
    // never one map_rkey handed out (its pointer must stay valid).
    std::erase_if(mems_, [&](const peer_mem &e) { return !e.pinned && procs_[e.proc].dead; });
    if (mems_.size() >= max_peer_mems) {
        auto victim = mems_.end();
        for (auto it = mems_.begin(); it != mems_.end(); ++it) {
            if (!it->pinned && (victim == mems_.end() || it->used < victim->used)) {
                victim = it;
            }
        }
        if (victim == mems_.end()) {
            close(fd);
            if (!mems_full_logged_) {
                mems_full_logged_ = true;
                WEFT_LOG(shm, warn,
                         "%s: %zu peers' allocations are mapped and pointers into each were "
                         "handed out: further ones are reached by copies",
                         name_.c_str(), max_peer_mems);
            }
            return nullptr;
        }
        mems_.erase(victim);
    }
    void *base = mmap(nullptr, m.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    close(fd);
    if (base == MAP_FAILED) {
        WEFT_LOG(shm, debug, "%s: mmap(%s, %" PRIu64 ") failed: %s", name_.c_str(), name.c_str(),
                 m.len, std::strerror(err));
        return nullptr;
    }
    mems_.push_back(peer_mem{mapping(base, m.len), m.base, pid, m.id, proc, false, table_clock_});
    ++stats_.mems_mapped;
    return &mems_.back();
}

const peer_table *shm_iface::find_table(std::uint32_t pid, std::uint32_t serial, std::uint32_t proc)
{
    ++table_clock_;
    for (peer_table &t : tables_) {
        if (t.pid == pid && t.serial == serial && t.proc == proc) {
            t.used = table_clock_;
            return &t;
        }
    }
    return map_table(pid, serial, proc);
}

const peer_table *shm_iface::map_table(std::uint32_t pid, std::uint32_t serial, std::uint32_t proc)
{
    mapping m;
    std::uint32_t nslots = 0;
    if (map_md_table(pid, serial, m, nslots) != status::ok) {
        return nullptr;  // not cached: the next key looks again
    }
    // Tables of processes that died go first, then the least recently used.
    std::erase_if(tables_, [&](const peer_table &t) { return procs_[t.proc].dead; });
    if (tables_.size() >= max_peer_tables) {
        tables_.erase(std::min_element(
            tables_.begin(), tables_.end(),
            [](const peer_table &a, const peer_table &b) { return a.used < b.used; }));
    }
    const auto *slots = reinterpret_cast<const md_slot *>(
        static_cast<const std::uint8_t *>(m.base()) + md_slots_offset);
    tables_.push_back(peer_table{std::move(m), slots, nslots, pid, serial, proc, table_clock_});
    ++stats_.tables_mapped;
    return &tables_.back();
}

status shm_iface::rma_declined()
{
    if (!rma_declined_logged_) {
        rma_declined_logged_ = true;
        WEFT_LOG(shm, debug,
                 "%s: cross-memory attach is not usable: one-sided put and get to peers on this "
                 "node use active messages",
                 name_.c_str());
    }
    return status::not_supported;
}

status shm_iface::cma_copy(cma_dir dir, std::uint32_t pid, const struct iovec *iov,
                           std::size_t iovcnt, std::size_t len, std::uint64_t raddr)
{
    // One system call copies straight between the peer's memory and ours: the
    // single copy. The kernel touches only the peer's own memory, so a bad
    // address costs an error, nothing else. Partial transfers continue.
    const iovec *local = iov;
    std::size_t nlocal = iovcnt;
    std::size_t skip = 0;  // bytes of local[0] already done
    std::uint64_t remote = raddr;
    while (len > 0) {
        iovec lv[cma_iov_batch];
        std::size_t n = 0;
        std::size_t want = 0;
        for (std::size_t i = 0; i < nlocal && n < cma_iov_batch && want < len; ++i) {
            const std::size_t off = i == 0 ? skip : 0;
            const std::size_t take = std::min(local[i].iov_len - off, len - want);
            if (take == 0) {
                continue;
            }
            lv[n++] = {static_cast<std::uint8_t *>(local[i].iov_base) + off, take};
            want += take;
        }
        if (want == 0) {
            break;  // the local buffers are full (truncation): the caller reports it
        }
        const iovec rv{reinterpret_cast<void *>(remote), want};
        const ssize_t done_now = dir == cma_dir::read
                                     ? process_vm_readv(static_cast<pid_t>(pid), lv, n, &rv, 1, 0)
                                     : process_vm_writev(static_cast<pid_t>(pid), lv, n, &rv, 1, 0);
        if (done_now <= 0) {
            const int err = done_now < 0 ? errno : EFAULT;
            if (err == EPERM || err == ENOSYS) {
                // Not allowed here (ptrace scope, another user, seccomp): fall back for
                // good, and say so once per process.
                cma_ = false;
                static std::atomic<bool> logged{false};
                if (!logged.exchange(true)) {
                    WEFT_LOG(shm, warn,
                             "cross-memory attach is not permitted (%s): large messages use a "
                             "pipelined copy through shared memory, one-sided put and get use "
                             "active messages (set WEFT_SHM_CMA=n to choose that and silence this)",
                             std::strerror(err));
                }
                return status::not_supported;
            }
            WEFT_LOG(shm, debug, "process_vm_%s %s pid %u failed: %s",
                     dir == cma_dir::read ? "readv" : "writev",
                     dir == cma_dir::read ? "from" : "to", pid, std::strerror(err));
            return err == ESRCH ? status::unreachable : status::io_error;
        }
        auto done = static_cast<std::size_t>(done_now);
        len -= done;
        remote += done;
        while (done > 0 && nlocal > 0) {
            const std::size_t room = local[0].iov_len - skip;
            if (done < room) {
                skip += done;
                done = 0;
            } else {
                done -= room;
                skip = 0;
                ++local;
                --nlocal;
            }
        }
    }
    return status::ok;
}

status shm_iface::remote_address(src_id src, address &out) const
{
    if (src >= nslots_) {
        return status::no_entry;
    }
    // Acquire: pairs with the claim CAS and the close store, so the state and the
    // address we copy below belong together (the address also precedes, in the
    // sender's order, every cell it published).
    const std::uint64_t st = slots_[src].state.load(std::memory_order_acquire);
    if (slot_state_kind(st) != slot_kind::active && slot_state_kind(st) != slot_kind::closed) {
        return status::no_entry;
    }
    // Written by the peer: copy it out first (it could change under us), then
    // check it before anyone uses it.
    const std::uint32_t len = slots_[src].addr_len;
    if (len > max_address_size) {
        return status::no_entry;
    }
    std::uint8_t copy[max_address_size];
    std::memcpy(copy, slots_[src].addr, len);
    if (address::parse(copy, len, out) != status::ok || out.pid() != slot_state_pid(st) ||
        out.node_id() != node_id_) {
        return status::no_entry;
    }
    return status::ok;
}

}  // namespace

// --------------------------------------------------------------- factory

const base::config_table &config_table()
{
    return shm_config_table;
}

base::result<std::unique_ptr<iface>> open(const open_params &p, const config &cfg)
{
    if (!is_power_of_two(cfg.fifo_size) || cfg.fifo_size < min_fifo_size ||
        cfg.fifo_size > max_fifo_size) {
        WEFT_LOG(shm, error,
                 "WEFT_SHM_FIFO_SIZE=%zu: must be a power of two in [%" PRIu32 ", %" PRIu32 "]",
                 cfg.fifo_size, min_fifo_size, max_fifo_size);
        return status::invalid;
    }
    if (cfg.bcopy_size < min_bcopy_size || cfg.bcopy_size > max_bcopy_size ||
        cfg.bcopy_size % 64 != 0) {
        WEFT_LOG(shm, error,
                 "WEFT_SHM_BCOPY_SIZE=%zu: must be a multiple of 64 in [%" PRIu32 ", %" PRIu32 "]",
                 cfg.bcopy_size, min_bcopy_size, max_bcopy_size);
        return status::invalid;
    }
    if (cfg.max_senders == 0 || cfg.max_senders > max_nslots) {
        WEFT_LOG(shm, error, "WEFT_SHM_MAX_SENDERS=%" PRIu64 ": must be in [1, %" PRIu32 "]",
                 static_cast<std::uint64_t>(cfg.max_senders), max_nslots);
        return status::invalid;
    }
    if (cfg.rx_batch == 0 || cfg.rx_batch > 1024) {
        WEFT_LOG(shm, error, "WEFT_SHM_RX_BATCH=%" PRIu64 ": must be in [1, 1024]",
                 static_cast<std::uint64_t>(cfg.rx_batch));
        return status::invalid;
    }
    if (cfg.cleanup_stale) {
        cleanup_stale_segments(p.pid);
    }
    segment_params sp{};
    sp.node_id = p.node_id;
    sp.pid = p.pid;
    sp.ep_id = p.ep_id;
    sp.cookie = random_cookie(p.pid, p.ep_id);
    sp.fifo_size = static_cast<std::uint32_t>(cfg.fifo_size);
    sp.bcopy_size = static_cast<std::uint32_t>(cfg.bcopy_size);
    sp.nslots = static_cast<std::uint32_t>(cfg.max_senders);
    sp.placement = cfg.placement;
    mapping seg;
    segment_geometry geo{};
    const status s = create_segment(sp, seg, geo);
    if (s != status::ok) {
        return s;
    }
    return std::unique_ptr<iface>(
        std::make_unique<shm_iface>(p, cfg, std::move(seg), geo, sp.cookie));
}

std::unique_ptr<memory_domain> open_md(const config &cfg)
{
    // WEFT_SHM_CMA=n: no cross-memory attach in either direction, so no keys
    // either (a peer could not use them on our memory without it).
    return make_md({.nslots = md_table_slots,
                    .keys = cfg.cma == base::config_ternary::no ? md_keys::none : md_keys::publish,
                    .placement = cfg.placement});
}

const stats *get_stats(const iface &tl) noexcept
{
    const auto *s = dynamic_cast<const shm_iface *>(&tl);
    return s == nullptr ? nullptr : &s->counters();
}

// --------------------------------------------------------------- the component

namespace {

std::vector<resource> query(const base::config_store &cfg, std::string &why)
{
    (void)cfg;
    if (::access("/dev/shm", W_OK) != 0) {
        why = std::string("/dev/shm is not writable: ") + std::strerror(errno);
        return {};
    }
    char host[64] = {};
    (void)gethostname(host, sizeof(host) - 1);
    return {{host, "processes on this node, through /dev/shm"}};
}

base::result<std::unique_ptr<memory_domain>> open_md_component(const base::config_store &cfg,
                                                               const resource &res)
{
    (void)res;
    config c{};
    cfg.load(shm_config_table, &c);
    c.placement = base::topo_enabled(cfg);
    return shm::open_md(c);
}

base::result<std::unique_ptr<iface>> open_component(const open_params &p, const resource &res,
                                                    memory_domain &md,
                                                    const base::config_store &cfg)
{
    (void)res;
    (void)md;
    config c{};
    cfg.load(shm_config_table, &c);
    c.placement = base::topo_enabled(cfg);
    return shm::open(p, c);
}

}  // namespace

const component transport{
    .name = "shm",
    .wire_id = wire_id,
    .description = "shared memory between the processes of one node",
    .config = &shm_config_table,
    .log = &log_shm,
    .query = &query,
    .open_md = &open_md_component,
    .open = &open_component,
};

}  // namespace weft::transport::shm
