// The verbs transport (docs/verbs.md).
//
// Per endpoint: one completion queue for everything (so an idle progress call
// is one ibv_poll_cq), a shared receive queue of registered buffers, a UD queue
// pair for the connection handshake, a pool of registered bounce buffers, and
// one RC queue pair per peer, created on first use.
//
// Send queue accounting. Every RC work request gets a sequence number on its
// queue pair and a record in that queue pair's ring (what to release when it
// completes). Completions of one RC send queue arrive in posting order, so a
// signaled completion retires every record up to it; most sends are posted
// unsignaled. A request is signaled when it must be (an RDMA read's last
// piece), and whenever leaving it unsignaled could leave nothing to wake us:
// every SIGNAL_INTERVAL requests, the request that fills a queue pair's send
// queue, the endpoint's TX_MAX budget or the bounce pool's last quarter. After
// an error, every outstanding request, signaled or not, completes with a flush
// error, so the completion queue is sized for TX_MAX send completions plus
// every posted receive.

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/copy.hpp"
#include "base/log.hpp"
#include "base/rcache.hpp"
#include "base/topo.hpp"
#include "transport/verbs/device.hpp"
#include "transport/verbs/verbs.hpp"
#include "transport/verbs/wire.hpp"

namespace weft::transport::verbs {

namespace {

using base::status;

// ------------------------------------------------------------------ RAII for verbs objects

struct qp_deleter {
    void operator()(ibv_qp *q) const noexcept { (void)ibv_destroy_qp(q); }
};
struct cq_deleter {
    void operator()(ibv_cq *c) const noexcept { (void)ibv_destroy_cq(c); }
};
struct srq_deleter {
    void operator()(ibv_srq *s) const noexcept { (void)ibv_destroy_srq(s); }
};
struct mr_deleter {
    void operator()(ibv_mr *m) const noexcept { (void)ibv_dereg_mr(m); }
};
struct ah_deleter {
    void operator()(ibv_ah *a) const noexcept { (void)ibv_destroy_ah(a); }
};
struct channel_deleter {
    void operator()(ibv_comp_channel *c) const noexcept { (void)ibv_destroy_comp_channel(c); }
};
using qp_ptr = std::unique_ptr<ibv_qp, qp_deleter>;
using cq_ptr = std::unique_ptr<ibv_cq, cq_deleter>;
using srq_ptr = std::unique_ptr<ibv_srq, srq_deleter>;
using mr_ptr = std::unique_ptr<ibv_mr, mr_deleter>;
using ah_ptr = std::unique_ptr<ibv_ah, ah_deleter>;
using channel_ptr = std::unique_ptr<ibv_comp_channel, channel_deleter>;

/// A file descriptor, closed with its owner.
class fd_owner {
  public:
    fd_owner() = default;
    explicit fd_owner(int fd) noexcept : fd_(fd) {}
    fd_owner(const fd_owner &) = delete;
    fd_owner &operator=(const fd_owner &) = delete;
    ~fd_owner()
    {
        if (fd_ >= 0) {
            (void)::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }
    void reset(int fd) noexcept
    {
        if (fd_ >= 0) {
            (void)::close(fd_);
        }
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

/// Page-aligned memory for registered slabs.
struct slab {
    void *base = nullptr;
    std::size_t len = 0;
    mr_ptr mr;
    slab() = default;
    slab(const slab &) = delete;
    slab &operator=(const slab &) = delete;
    slab(slab &&o) noexcept : base(o.base), len(o.len), mr(std::move(o.mr)) { o.base = nullptr; }
    ~slab()
    {
        mr.reset();
        if (base != nullptr) {
            munmap(base, len);
        }
    }
    /// `placement`: bind the pages to the caller's NUMA node before they are
    /// first touched (fresh pages from mmap, so the binding applies to all).
    [[nodiscard]] status alloc(ibv_pd *pd, std::size_t bytes, bool placement)
    {
        len = (bytes + 4095) & ~std::size_t{4095};
        base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) {
            base = nullptr;
            return status::no_memory;
        }
        if (placement) {
            (void)weft::base::bind_local(weft::base::topology::machine(), base, len,
                                         "verbs buffers");
        }
        std::memset(base, 0, len);  // fault the pages in now, not on the data path
        mr.reset(ibv_reg_mr(pd, base, len, IBV_ACCESS_LOCAL_WRITE));
        if (mr == nullptr) {
            WEFT_LOG(verbs, error, "registering %zu bytes of buffers failed: %s", len,
                     std::strerror(errno));
            return status::no_memory;
        }
        return status::ok;
    }
};

// ------------------------------------------------------------------ work request ids

enum class wr_kind : std::uint64_t { rc_send = 0, srq_recv = 1, ud_recv = 2, ud_send = 3 };
constexpr unsigned wr_kind_shift = 62;

[[nodiscard, gnu::always_inline]] inline std::uint64_t rc_wr_id(std::uint32_t conn,
                                                                std::uint32_t seq) noexcept
{
    return (std::uint64_t{conn} << 32) | seq;  // kind rc_send == 0
}
[[nodiscard, gnu::always_inline]] inline std::uint64_t wr_id(wr_kind k,
                                                             std::uint32_t index) noexcept
{
    return (static_cast<std::uint64_t>(k) << wr_kind_shift) | index;
}

[[nodiscard]] std::uint64_t now_us() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000u + std::uint64_t(ts.tv_nsec) / 1000u;
}

[[nodiscard]] std::uint32_t random_psn() noexcept
{
    std::uint32_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
        v = static_cast<std::uint32_t>(now_us());
    }
    return v & 0xffffff;
}

constexpr std::size_t max_sges = 4;          // iovec limit of the layer above
constexpr std::uint32_t ud_recv_count = 64;  // handshake receive slots
constexpr std::uint32_t ud_send_count = 16;  // handshake send slots
constexpr std::size_t ud_slot = 512;         // >= grh_bytes + sizeof(cm_msg) + an address
static_assert(grh_bytes + sizeof(cm_msg) + max_address_size <= ud_slot);
constexpr std::uint32_t amo_slots = 256;       // atomics in flight per endpoint
constexpr unsigned idle_polls_per_tick = 256;  // progress calls between timer checks

// ------------------------------------------------------------------ per-connection state

enum class conn_state : std::uint8_t {
    requesting,  ///< we sent a req; our queue pair waits in INIT
    accepted,    ///< we answered a req; ready to receive, we send after the peer's first message
    ready,       ///< both sides ready
    failed,      ///< error, timeout, or closed by the peer: nothing more goes out
};

enum class rec_kind : std::uint8_t { plain, bounce, rdma };

/// What a posted RC work request holds until it completes.
struct tx_rec {
    rec_kind kind;
    bool last;            ///< rdma: the op's last piece
    std::uint32_t index;  ///< bounce: buffer index; rdma: op index
};

/// What a one-sided operation of the layer above does.
enum class rdma_kind : std::uint8_t { read, write, atomic };

/// A get, put or atomic requested by the layer above, possibly in pieces (a
/// read or write longer than READ_CHUNK).
struct rdma_op {
    rdma_kind kind = rdma_kind::read;
    std::uint64_t cookie = 0;
    std::uint32_t conn = 0;
    std::uint32_t nregions = 0;
    std::array<base::rcache::region *, max_sges> regions{};
    std::array<iovec, max_sges> iov{};
    std::uint32_t iovcnt = 0;
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    std::size_t len = 0;
    std::size_t posted = 0;         ///< bytes whose requests are posted
    std::uint32_t outstanding = 0;  ///< posted requests not yet retired
    // Atomics: the request, and where the old value lands (a registered slot).
    atomic_args amo{};
    std::uint32_t amo_slot = 0;
    bool failed = false;
    bool reported = false;  ///< op_done sent (or due)
    bool in_use = false;
    bool with_imm = false;  ///< write: the last piece is a write with immediate `imm`
    std::uint32_t imm = 0;
};

/// A connection as the application's thread sees it. Its queue pair is null
/// until the connection agent hands it over (docs/verbs.md "The connection agent").
struct conn {
    address peer;  ///< the peer's whole address
    qp_ptr qp;
    conn_state state = conn_state::requesting;
    bool active = false;  ///< we requested
    bool self = false;    ///< a loopback connection to our own endpoint
    bool reported = false;
    std::uint32_t remote_qpn = 0;
    std::uint32_t peer_rd_atomic = 1;
    std::uint64_t last_tx_us = 0;  ///< keepalive: last send
    // Send queue (see the file comment).
    std::vector<tx_rec> ring;
    std::uint32_t ring_mask = 0;
    std::uint32_t sq_head = 0;  ///< sequence number of the next request
    std::uint32_t sq_tail = 0;  ///< oldest request not yet retired
    std::uint32_t unsignaled = 0;
    std::vector<std::uint32_t> pending_ops;  ///< rdma ops with pieces not yet posted
};

/// A connection as the connection agent sees it: the handshake. Index = the
/// connection's index in conns_. Guarded by the iface's cm_mutex_.
struct hs_rec {
    address peer;      ///< the peer's whole address
    port_blob port{};  ///< its port (route) as the address gives it
    std::uint32_t ud_qpn = 0;
    ah_ptr ah;  ///< route to the peer's UD queue pair
    qp_ptr qp;  ///< ours until handed over (then null; qpn stays)
    std::uint32_t qpn = 0;
    std::uint32_t local_psn = 0;
    conn_state state = conn_state::requesting;
    bool active = false;  ///< we requested (the requester sends the rtu)
    bool self = false;
    std::uint32_t peer_conn = invalid_id;
    std::uint32_t remote_qpn = 0;
    std::uint32_t peer_rd_atomic = 1;
    std::uint64_t deadline_us = 0;     ///< handshake gives up (requesting, accepted)
    std::uint64_t next_resend_us = 0;  ///< resend the req (requesting) or the rep (accepted)
    std::uint64_t resend_us = 0;       ///< current resend interval
};

/// What the agent tells the application's thread about a connection.
struct cm_event {
    std::uint32_t ci = 0;
    conn_state to = conn_state::failed;  ///< accepted, ready or failed
    qp_ptr qp;  ///< the hand-over (first accepted or ready event): connected queue pair
    address peer;
    std::uint32_t remote_qpn = 0;
    std::uint32_t peer_rd_atomic = 1;
    bool active = false;
    bool self = false;
    const char *reason = nullptr;  ///< failed
};

/// Identity of a remote endpoint: host, process, endpoint and handshake queue pair.
struct peer_key {
    std::uint64_t node_id;
    std::uint64_t pid_ep;
    std::uint32_t ud_qpn;
    bool operator==(const peer_key &) const = default;
};
struct peer_key_hash {
    std::size_t operator()(const peer_key &k) const noexcept
    {
        return std::hash<std::uint64_t>{}(k.node_id * 0x9e3779b97f4a7c15ULL ^ k.pid_ep ^
                                          (std::uint64_t{k.ud_qpn} << 40));
    }
};
/// The verbs blob of an address that this port can use: its port part and UD
/// QPN. false when the address has none (or only malformed ones).
[[nodiscard]] peer_key key_of(const endpoint_id &id, std::uint32_t ud_qpn) noexcept
{
    return {id.node_id, (std::uint64_t{id.pid} << 32) | id.ep_id, ud_qpn};
}
[[nodiscard]] bool key_less(const peer_key &a, const peer_key &b) noexcept
{
    if (a.node_id != b.node_id) {
        return a.node_id < b.node_id;
    }
    if (a.pid_ep != b.pid_ep) {
        return a.pid_ep < b.pid_ep;
    }
    return a.ud_qpn < b.ud_qpn;
}

/// QPN -> connection index, open addressing (the receive path's one lookup).
class qpn_map {
  public:
    void insert(std::uint32_t qpn, std::uint32_t conn)
    {
        if ((count_ + 1) * 2 > slots_.size()) {
            grow();
        }
        place(qpn, conn);
        ++count_;
    }
    [[nodiscard, gnu::always_inline]] std::uint32_t find(std::uint32_t qpn) const noexcept
    {
        if (slots_.empty()) [[unlikely]] {
            return invalid_id;
        }
        for (std::size_t i = hash(qpn) & mask_;; i = (i + 1) & mask_) {
            const slot &s = slots_[i];
            if (s.qpn == qpn && s.conn != invalid_id) [[likely]] {
                return s.conn;
            }
            if (s.conn == invalid_id) {
                return invalid_id;
            }
        }
    }

  private:
    struct slot {
        std::uint32_t qpn = 0;
        std::uint32_t conn = invalid_id;
    };
    static std::size_t hash(std::uint32_t q) noexcept { return (q * 0x9e3779b1u) >> 8; }
    void place(std::uint32_t qpn, std::uint32_t conn)
    {
        for (std::size_t i = hash(qpn) & mask_;; i = (i + 1) & mask_) {
            if (slots_[i].conn == invalid_id) {
                slots_[i] = {qpn, conn};
                return;
            }
        }
    }
    void grow()
    {
        std::vector<slot> old = std::move(slots_);
        slots_.assign(std::max<std::size_t>(16, old.size() * 2), slot{});
        mask_ = slots_.size() - 1;
        for (const slot &s : old) {
            if (s.conn != invalid_id) {
                place(s.qpn, s.conn);
            }
        }
    }
    std::vector<slot> slots_;
    std::size_t mask_ = 0;
    std::size_t count_ = 0;
};

[[nodiscard]] ibv_mtu mtu_from_config(int choice, ibv_mtu active) noexcept
{
    switch (choice) {
        case 1:
            return IBV_MTU_256;
        case 2:
            return IBV_MTU_512;
        case 3:
            return IBV_MTU_1024;
        case 4:
            return IBV_MTU_2048;
        case 5:
            return IBV_MTU_4096;
        default:
            return active;
    }
}

void default_am(void *, src_id, am_word, const void *, std::size_t) {}
void default_peer_failed(void *, conn_id, src_id, status) {}
void default_op_done(void *, std::uint64_t, status) {}

// ------------------------------------------------------------------ the transport

class verbs_iface final : public iface {
  public:
    verbs_iface(const open_params &p, std::shared_ptr<device> dev, const config &cfg);
    ~verbs_iface() override;

    [[nodiscard]] status init();
    [[nodiscard]] status start_agent();

    [[nodiscard]] const attributes &attr() const noexcept override { return attr_; }
    [[nodiscard]] status pack_address(address_builder &b) override;
    void set_local_address(const address &a) noexcept override
    {
        std::lock_guard g(cm_mutex_);  // the agent sends it in every handshake message
        my_addr_ = a;
    }
    [[nodiscard]] bool reachable(const address &peer) const noexcept override;
    [[nodiscard]] status connect(const address &peer, conn_id &out) override;
    [[nodiscard]] status remote_address(src_id src, address &out) const override;
    [[nodiscard]] status expose(conn_id conn, const void *buf, std::size_t len,
                                exposure &out) override;
    void unexpose(const exposure &e) noexcept override;
    [[nodiscard]] status unpack_rkey(const std::uint8_t *data, std::size_t len,
                                     rkey &out) const override;
    [[nodiscard]] std::size_t grow_rx(std::size_t n) override;

    [[nodiscard]] stats counters() const noexcept;
    [[nodiscard]] conn_info info(conn_id c) const noexcept;

  private:
    static status send_short(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const void *payload, std::size_t len);
    static status send_bcopy(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                             std::size_t offset, std::size_t len);
    static unsigned progress(iface *tl);
    static status get(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    static status put_imm(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                          std::size_t len, std::uint64_t raddr, const rkey &key, std::uint32_t imm,
                          std::uint64_t cookie);
    static status put(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                      std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie);
    static status atomic(iface *tl, conn_id conn, const atomic_args &a, std::uint64_t cookie);
    /// A read or write of the layer above: registers the local pieces and
    /// queues it. `imm`: a write whose last piece carries this immediate.
    [[nodiscard]] status start_rdma(rdma_kind kind, conn_id conn, const struct iovec *iov,
                                    std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                                    const rkey &key, std::uint64_t cookie,
                                    const std::uint32_t *imm = nullptr);
    [[nodiscard]] std::uint32_t new_op();

    /// Attributes of every RC queue pair of this endpoint (the inline-size probe
    /// and the per-peer ones): one CQ, the SRQ, the send queue's depth.
    [[nodiscard]] ibv_qp_init_attr rc_qp_attr(std::size_t inline_size) const;

    // Send side.
    [[nodiscard, gnu::always_inline]] bool tx_room(const conn &c) const noexcept
    {
        return c.sq_head - c.sq_tail < tx_queue_ && tx_outstanding_ < tx_max_;
    }
    [[nodiscard, gnu::always_inline]] bool must_signal(const conn &c, bool force) const noexcept
    {
        return force || c.unsignaled + 1 >= signal_interval_ ||
               c.sq_head - c.sq_tail + 1 >= tx_queue_ || tx_outstanding_ + 1 >= tx_max_ ||
               bounce_free_.size() < bounce_low_;
    }
    [[nodiscard]] status post_rc(std::uint32_t c, ibv_send_wr &wr, tx_rec rec, bool force_signal);
    [[gnu::cold, gnu::noinline]] status not_ready(std::uint32_t c);
    [[nodiscard]] status send_ctl(std::uint32_t c, ctl code);
    void post_ops(std::uint32_t c);

    // Completions.
    void on_send_done(const ibv_wc &wc);
    void retire(std::uint32_t c, std::uint32_t upto, status st);
    void on_recv(const ibv_wc &wc, std::uint32_t *repost, unsigned &nrepost);
    void on_ctl(std::uint32_t c, std::uint32_t imm);
    void repost(const std::uint32_t *idx, unsigned n);
    void flush_upcalls();
    void op_finished(std::uint32_t op, status st);
    void release_op(std::uint32_t op);

    // Connections, the application's side: ask the agent, adopt what it hands over.
    void wake_agent() noexcept;
    void take_events();
    void fail_conn(std::uint32_t c, status why, const char *reason, int level_warn);
    void tick();

    // Connections, the agent's side (its thread, cm_mutex_ held).
    void agent_main();
    void agent_start(std::uint32_t c);
    void agent_tick(std::uint64_t now);
    [[nodiscard]] int agent_wait_ms(std::uint64_t now) const noexcept;
    void agent_fail(std::uint32_t c, const char *reason);
    void hand_over(std::uint32_t c, conn_state to);
    void arm_timers(hs_rec &h, std::uint64_t now) noexcept;
    [[nodiscard]] status create_qp(hs_rec &h);
    [[nodiscard]] status connect_qp(hs_rec &h, std::uint32_t remote_qpn, std::uint32_t remote_psn,
                                    std::uint8_t mtu, std::uint32_t rd_atomic);
    [[nodiscard]] status make_ah(hs_rec &h);
    [[nodiscard]] std::uint32_t new_hs(const address &peer, const port_blob &port,
                                       std::uint32_t ud_qpn);
    [[nodiscard]] status send_cm(std::uint32_t c, cm_type type);
    void on_cm(const std::uint8_t *buf, std::size_t len, std::uint32_t src_qp);
    void on_req(const cm_msg &m, const address &src, const port_blob &port, std::uint32_t ud_qpn);
    void on_rep(const cm_msg &m, const address &src);
    void on_rtu(const cm_msg &m, const address &src);
    void post_ud_recv(std::uint32_t index);
    [[nodiscard]] std::uint32_t rx_capacity_limit() const noexcept;

    // Receive hot path.
    ibv_cq *cq_ = nullptr;
    std::uint32_t batch_;
    std::uint32_t idle_countdown_ = idle_polls_per_tick;
    std::vector<std::uint8_t *> rx_buf_;  ///< receive buffer by index
    std::vector<std::uint32_t> rx_lkey_;
    qpn_map by_qpn_;
    // Send hot path.
    std::vector<conn> conns_;
    std::uint32_t tx_queue_;
    std::uint32_t tx_max_;
    std::uint32_t tx_outstanding_ = 0;
    std::uint32_t signal_interval_;
    std::uint8_t *bounce_base_ = nullptr;
    std::uint32_t bounce_lkey_ = 0;
    std::vector<std::uint32_t> bounce_free_;
    std::size_t bounce_low_;
    std::uint64_t now_cache_us_ = 0;  ///< coarse clock, updated by tick()

    attributes attr_{};
    std::shared_ptr<device> dev_;
    config cfg_;
    std::uint64_t node_id_;
    std::uint32_t pid_;
    std::uint32_t ep_id_;
    address my_addr_;  ///< the endpoint's whole address (set_local_address; cm_mutex_)
    std::uint32_t my_ud_qpn_ = 0;
    ibv_mtu mtu_ = IBV_MTU_1024;
    std::uint32_t rd_atomic_init_ = 1;  ///< our initiator depth limit
    std::uint32_t rd_atomic_resp_ = 1;  ///< our responder depth
    std::size_t inline_ = 0;
    std::uint32_t max_send_sge_ = max_sges;
    std::size_t read_chunk_;

    // Declared in creation order; destroyed in reverse (queue pairs first).
    cq_ptr cq_owner_;
    srq_ptr srq_;
    std::vector<slab> rx_slabs_;
    std::size_t rx_posted_total_ = 0;  ///< buffers in the SRQ (posted or in use)
    slab bounce_;
    slab ud_slab_;
    slab amo_slab_;  ///< registered 8-byte slots where atomics' old values land
    std::vector<std::uint32_t> amo_free_;
    channel_ptr chan_;  ///< the agent sleeps on it: UD completions
    cq_ptr ud_cq_;      ///< the UD queue pair's completions (the agent's)
    qp_ptr ud_qp_;
    std::vector<rdma_op> ops_pool_;
    std::vector<std::uint32_t> ops_free_;
    std::unordered_map<std::uint32_t, base::rcache::region *> exposed_;  ///< rkey -> region
    std::unordered_map<std::uint32_t, std::uint32_t> exposed_refs_;
    std::vector<std::uint32_t> fail_due_;  ///< connections whose failure is not yet reported
    struct done {
        std::uint64_t cookie;
        status st;
    };
    std::vector<done> done_due_;              ///< op completions not yet reported
    std::vector<std::uint32_t> ops_waiting_;  ///< connections with rdma ops not yet posted
    std::vector<std::uint32_t> ops_retry_;    ///< tick()'s copy of ops_waiting_ (capacity kept)
    std::uint64_t next_keepalive_scan_us_ = 0;
    bool closing_ = false;
    std::vector<cm_event> cm_taken_;  ///< take_events()'s copy of cm_events_ (capacity kept)

    // The connection agent (docs/verbs.md "The connection agent"): a thread that
    // answers the handshake whether or not the application calls progress.
    // Shared with it, under cm_mutex_: everything down to stats_ (the agent
    // writes only its handshake counters there). Declared after the queue
    // pairs' CQ and SRQ: the queue pairs held here are destroyed first.
    mutable std::mutex cm_mutex_;
    std::vector<hs_rec> hs_;  ///< by connection index
    std::unordered_map<peer_key, std::uint32_t, peer_key_hash> conn_by_key_;
    std::vector<std::uint32_t> cm_cmds_;       ///< application to agent: connections to start
    std::vector<cm_event> cm_events_;          ///< agent to application
    std::vector<std::uint32_t> handshaking_;   ///< agent: connections with a handshake timer
    std::vector<std::uint32_t> ud_send_free_;  ///< agent: free UD send slots
    struct stats stats_ {};
    std::atomic<bool> cm_pending_{false};  ///< cm_events_ has something (a hint)
    std::atomic<bool> agent_stop_{false};
    fd_owner wake_fd_;  ///< eventfd: commands and stop
    pthread_t agent_{};
    pid_t agent_pid_ = 0;  ///< the process that started it (a forked child has no agent)
    bool agent_running_ = false;
    bool agent_dead_ = false;  ///< its poll failed: no handshakes any more (cm_mutex_)
};

// ------------------------------------------------------------------ set-up

verbs_iface::verbs_iface(const open_params &p, std::shared_ptr<device> dev, const config &cfg)
    : batch_(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(cfg.rx_batch, 1, 64))),
      tx_queue_(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(cfg.tx_queue, 4, 16384))),
      tx_max_(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(cfg.tx_max, 16, 1u << 20))),
      signal_interval_(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
          cfg.signal_interval, 1, std::clamp<std::uint64_t>(cfg.tx_queue, 4, 16384) / 2))),
      bounce_low_(std::max<std::size_t>(1, std::clamp<std::uint64_t>(cfg.tx_bufs, 4, 65536) / 4)),
      dev_(std::move(dev)),
      cfg_(cfg),
      node_id_(p.node_id),
      pid_(p.pid),
      ep_id_(p.ep_id),
      read_chunk_(std::max<std::size_t>(4096, cfg.read_chunk))
{
    ops_.send_short = &send_short;
    ops_.send_bcopy = &send_bcopy;
    ops_.progress = &progress;
    ops_.get = &get;
    ops_.put = &put;
    ops_.put_imm = &put_imm;
    handlers_ = {&default_am, &default_peer_failed, &default_op_done, nullptr, nullptr, nullptr};
    now_cache_us_ = now_us();
}

std::uint32_t verbs_iface::rx_capacity_limit() const noexcept
{
    // Every posted receive may complete before we poll: the CQ must hold them all,
    // beside the sends. (The handshake's UD completions go to the agent's own CQ.)
    const auto &da = dev_->dev_attr();
    const std::uint64_t by_cq =
        da.max_cqe > static_cast<int>(tx_max_ + 64) ? da.max_cqe - tx_max_ - 64 : 0;
    std::uint64_t lim = std::min<std::uint64_t>(cfg_.rx_queue_max, by_cq);
    lim = std::min<std::uint64_t>(lim, static_cast<std::uint64_t>(da.max_srq_wr));
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(lim, 1));
}

status verbs_iface::init()
{
    ibv_context *ctx = dev_->ctx();
    const ibv_device_attr &da = dev_->dev_attr();
    if (cfg_.seg_size < 256 || cfg_.seg_size > dev_->port_attr().max_msg_sz) {
        WEFT_LOG(verbs, error, "WEFT_VERBS_SEG_SIZE=%zu is outside 256..%u", cfg_.seg_size,
                 dev_->port_attr().max_msg_sz);
        return status::invalid;
    }
    read_chunk_ = std::min<std::size_t>(read_chunk_, dev_->port_attr().max_msg_sz);
    mtu_ = mtu_from_config(cfg_.mtu, dev_->port_attr().active_mtu);
    rd_atomic_init_ = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(cfg_.max_rd_atomic, 1, std::max(1, da.max_qp_init_rd_atom)));
    rd_atomic_resp_ = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(cfg_.max_rd_atomic, 1, std::max(1, da.max_qp_rd_atom)));
    max_send_sge_ = static_cast<std::uint32_t>(std::min<int>(max_sges, da.max_sge));
    tx_queue_ = std::min<std::uint32_t>(tx_queue_, static_cast<std::uint32_t>(da.max_qp_wr));

    const std::uint32_t rx_limit = rx_capacity_limit();
    const auto rx_initial = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(cfg_.rx_queue, 16, std::max<std::uint32_t>(rx_limit, 16)));
    const int cqe = static_cast<int>(rx_limit + tx_max_ + 64);
    cq_owner_.reset(ibv_create_cq(ctx, std::min(cqe, da.max_cqe), nullptr, nullptr, 0));
    if (cq_owner_ == nullptr) {
        WEFT_LOG(verbs, error, "%s: ibv_create_cq(%d) failed: %s", dev_->name().c_str(), cqe,
                 std::strerror(errno));
        return status::no_memory;
    }
    cq_ = cq_owner_.get();

    ibv_srq_init_attr sa{};
    sa.attr.max_wr = rx_limit;
    sa.attr.max_sge = 1;
    srq_.reset(ibv_create_srq(dev_->pd(), &sa));
    if (srq_ == nullptr) {
        WEFT_LOG(verbs, error, "%s: ibv_create_srq(%u) failed: %s", dev_->name().c_str(), rx_limit,
                 std::strerror(errno));
        return status::no_memory;
    }
    if (grow_rx(rx_initial) != rx_initial) {
        return status::no_memory;
    }

    const auto nbounce =
        static_cast<std::uint32_t>(std::clamp<std::uint64_t>(cfg_.tx_bufs, 4, 65536));
    if (const status st =
            bounce_.alloc(dev_->pd(), std::size_t{nbounce} * cfg_.seg_size, cfg_.placement);
        st != status::ok) {
        return st;
    }
    bounce_base_ = static_cast<std::uint8_t *>(bounce_.base);
    bounce_lkey_ = bounce_.mr->lkey;
    bounce_free_.reserve(nbounce);
    for (std::uint32_t i = nbounce; i-- > 0;) {
        bounce_free_.push_back(i);
    }

    // The inline size this device grants: probe with a throwaway RC queue pair,
    // halving from the configured size.
    for (std::size_t want = std::min<std::size_t>(cfg_.inline_size, 4096);; want /= 2) {
        ibv_qp_init_attr qa = rc_qp_attr(want);
        qp_ptr probe(ibv_create_qp(dev_->pd(), &qa));
        if (probe != nullptr) {
            inline_ = std::min<std::size_t>(want, qa.cap.max_inline_data);
            break;
        }
        if (want == 0) {
            WEFT_LOG(verbs, error, "%s: cannot create an RC queue pair: %s", dev_->name().c_str(),
                     std::strerror(errno));
            return status::no_device;
        }
    }

    // The handshake's UD queue pair and its buffers.
    if (const status st = ud_slab_.alloc(
            dev_->pd(), std::size_t{ud_recv_count + ud_send_count} * ud_slot, cfg_.placement);
        st != status::ok) {
        return st;
    }
    // Its completions go to a queue of their own, which the agent sleeps on.
    chan_.reset(ibv_create_comp_channel(ctx));
    if (chan_ == nullptr ||
        ::fcntl(chan_->fd, F_SETFL, ::fcntl(chan_->fd, F_GETFL) | O_NONBLOCK) != 0) {
        WEFT_LOG(verbs, error, "%s: cannot create a completion channel: %s", dev_->name().c_str(),
                 std::strerror(errno));
        return status::no_device;
    }
    ud_cq_.reset(ibv_create_cq(ctx, static_cast<int>(ud_recv_count + ud_send_count), nullptr,
                               chan_.get(), 0));
    if (ud_cq_ == nullptr) {
        WEFT_LOG(verbs, error, "%s: cannot create the handshake's CQ: %s", dev_->name().c_str(),
                 std::strerror(errno));
        return status::no_memory;
    }
    ibv_qp_init_attr ua{};
    ua.send_cq = ud_cq_.get();
    ua.recv_cq = ud_cq_.get();
    ua.cap.max_send_wr = ud_send_count;
    ua.cap.max_recv_wr = ud_recv_count;
    ua.cap.max_send_sge = 1;
    ua.cap.max_recv_sge = 1;
    ua.qp_type = IBV_QPT_UD;
    ud_qp_.reset(ibv_create_qp(dev_->pd(), &ua));
    if (ud_qp_ == nullptr) {
        WEFT_LOG(verbs, error, "%s: cannot create the UD queue pair: %s", dev_->name().c_str(),
                 std::strerror(errno));
        return status::no_device;
    }
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.pkey_index = 0;
    qa.port_num = dev_->port();
    qa.qkey = cm_qkey;
    if (ibv_modify_qp(ud_qp_.get(), &qa,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0) {
        WEFT_LOG(verbs, error, "UD queue pair to INIT: %s", std::strerror(errno));
        return status::no_device;
    }
    qa = {};
    qa.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(ud_qp_.get(), &qa, IBV_QP_STATE) != 0) {
        WEFT_LOG(verbs, error, "UD queue pair to RTR: %s", std::strerror(errno));
        return status::no_device;
    }
    qa = {};
    qa.qp_state = IBV_QPS_RTS;
    qa.sq_psn = 0;
    if (ibv_modify_qp(ud_qp_.get(), &qa, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) {
        WEFT_LOG(verbs, error, "UD queue pair to RTS: %s", std::strerror(errno));
        return status::no_device;
    }
    for (std::uint32_t i = 0; i < ud_recv_count; ++i) {
        post_ud_recv(i);
    }
    for (std::uint32_t i = ud_send_count; i-- > 0;) {
        ud_send_free_.push_back(ud_recv_count + i);
    }

    attr_.caps = cap::am | cap::put | cap::get | cap::shared_rx;
    attr_.max_short = inline_;
    attr_.max_bcopy = cfg_.seg_size;
    attr_.max_hdr = 128;
    attr_.max_put = SIZE_MAX;
    attr_.max_get = SIZE_MAX;
    attr_.max_put_imm = read_chunk_;  // one write with immediate
    attr_.shared_rx = rx_initial;
    // A NIC: a microsecond or two end to end, the link's bandwidth for large
    // messages (rdma_rxe emulates it far slower, but the choice is the same:
    // shm first on a node, verbs across).
    attr_.cost = {.overhead_ns = 100, .latency_ns = 1500, .bandwidth_mbps = 10000};
    // An RDMA read: no copy on either side, posted once for the whole message,
    // so it beats a push in bounce-buffer pieces at every size.
    attr_.get_cost = {.overhead_ns = 100, .latency_ns = 1500, .bandwidth_mbps = 10000};
    if (da.atomic_cap != IBV_ATOMIC_NONE) {
        // 64-bit fetch-and-add and compare-and-swap, the two verbs atomics. A
        // non-fetching add is a fetch-and-add whose old value is dropped.
        if (const status st =
                amo_slab_.alloc(dev_->pd(), std::size_t{amo_slots} * 8, cfg_.placement);
            st != status::ok) {
            return st;
        }
        for (std::uint32_t i = amo_slots; i-- > 0;) {
            amo_free_.push_back(i);
        }
        attr_.caps |= cap::atomic;
        attr_.atomic64 = atomic_bit(atomic_op::add);
        attr_.atomic64f = atomic_bit(atomic_op::add) | atomic_bit(atomic_op::cswap);
        ops_.atomic = &atomic;
    }
    {
        // Our own address, until set_local_address() gives us the endpoint's whole one.
        address_builder b({node_id_, pid_, ep_id_});
        (void)pack_address(b);
        my_addr_ = b.get();
    }
    my_ud_qpn_ = ud_qp_->qp_num;
    if (const status st = start_agent(); st != status::ok) {
        return st;
    }
    WEFT_LOG(verbs, debug,
             "%s: endpoint %u open: UD QPN %u, inline %zu, seg %zu, %u receive buffers, "
             "CQ %d entries",
             dev_->name().c_str(), ep_id_, ud_qp_->qp_num, inline_, cfg_.seg_size, rx_initial,
             cq_->cqe);
    return status::ok;
}

std::size_t verbs_iface::grow_rx(std::size_t n)
{
    const std::uint32_t limit = rx_capacity_limit();
    if (rx_posted_total_ >= limit || n == 0) {
        return 0;
    }
    n = std::min<std::size_t>(n, limit - rx_posted_total_);
    slab s;
    if (s.alloc(dev_->pd(), n * cfg_.seg_size, cfg_.placement) != status::ok) {
        return 0;
    }
    const auto first = static_cast<std::uint32_t>(rx_buf_.size());
    for (std::size_t i = 0; i < n; ++i) {
        rx_buf_.push_back(static_cast<std::uint8_t *>(s.base) + i * cfg_.seg_size);
        rx_lkey_.push_back(s.mr->lkey);
    }
    rx_slabs_.push_back(std::move(s));
    std::vector<std::uint32_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) {
        idx[i] = first + static_cast<std::uint32_t>(i);
    }
    for (std::size_t i = 0; i < n; i += 64) {
        repost(idx.data() + i, static_cast<unsigned>(std::min<std::size_t>(64, n - i)));
    }
    if (rx_posted_total_ != 0) {
        stats_.rx_grown += n;
    }
    rx_posted_total_ += n;
    attr_.shared_rx = rx_posted_total_;
    return n;
}

status verbs_iface::start_agent()
{
    wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (wake_fd_.get() < 0) {
        WEFT_LOG(verbs, error, "eventfd for the connection agent: %s", std::strerror(errno));
        return status::no_device;
    }
    // The agent inherits this mask: the application's signals are never
    // delivered to it (a handler might not expect a foreign thread).
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(
        &agent_, nullptr,
        [](void *self) -> void * {
            static_cast<verbs_iface *>(self)->agent_main();
            return nullptr;
        },
        this);
    (void)pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0) {
        WEFT_LOG(verbs, error, "cannot start the connection agent: %s", std::strerror(rc));
        return status::no_memory;
    }
    agent_running_ = true;
    agent_pid_ = ::getpid();
    return status::ok;
}

verbs_iface::~verbs_iface()
{
    // A forked child has no agent (only the thread that forked is copied), and
    // its copy of cm_mutex_ may be held: nothing to join or take there.
    const bool parent = agent_running_ && ::getpid() == agent_pid_;
    if (parent) {
        agent_stop_.store(true, std::memory_order_release);
        wake_agent();
        (void)pthread_join(agent_, nullptr);
    }
    closing_ = true;  // no upcalls: the layer above is gone
    if (parent) {
        take_events();  // connections the agent accepted are told we close, as the others
    }
    // Tell connected peers we are closing, so they fail our operations at once
    // instead of after their keepalive times out; wait (bounded) until the
    // messages left, since destroying a queue pair drops what it has not sent.
    std::uint32_t waiting = 0;
    for (std::uint32_t c = 0; c < conns_.size(); ++c) {
        conn &cn = conns_[c];
        if (!cn.self && (cn.state == conn_state::ready || cn.state == conn_state::accepted) &&
            send_ctl(c, ctl::disconnect) == status::ok) {
            ++waiting;
        }
    }
    if (waiting != 0) {
        const std::uint64_t give_up = now_us() + 200000;
        while (now_us() < give_up) {
            bool busy = false;
            for (const conn &cn : conns_) {
                busy = busy || (cn.state != conn_state::failed && cn.sq_head != cn.sq_tail);
            }
            if (!busy) {
                break;
            }
            (void)progress(this);
        }
    }
    for (std::uint32_t i = 0; i < ops_pool_.size(); ++i) {
        if (ops_pool_[i].in_use) {
            release_op(i);
        }
    }
    for (auto &[rkey, r] : exposed_) {
        for (std::uint32_t k = exposed_refs_[rkey]; k > 0; --k) {
            dev_->rcache().put(r);
        }
    }
    conns_.clear();  // queue pairs before the SRQ and CQ (member order does the rest)
    ud_qp_.reset();  // before the address handles its sends may still use
    hs_.clear();
}

// ------------------------------------------------------------------ addresses

status verbs_iface::pack_address(address_builder &b)
{
    port_blob port{};
    std::memcpy(port.gid, dev_->gid().raw, sizeof(port.gid));
    port.lid = dev_->port_attr().lid;
    port.link = dev_->ethernet() ? 2 : 1;
    port.mtu = static_cast<std::uint8_t>(dev_->port_attr().active_mtu);
    std::uint8_t ep[ep_blob_size];
    store_le24(ep, ud_qp_->qp_num);
    return b.add(wire_id, &port, sizeof(port), ep, sizeof(ep));
}

bool verbs_iface::reachable(const address &peer) const noexcept
{
    port_blob port;
    std::uint32_t ud_qpn = 0;
    return verbs_blob(peer, dev_->ethernet(), port, ud_qpn);
}

status verbs_iface::remote_address(src_id src, address &out) const
{
    if (src >= conns_.size()) {
        return status::no_entry;
    }
    out = conns_[src].peer;
    return status::ok;
}

// ------------------------------------------------------------------ connections

ibv_qp_init_attr verbs_iface::rc_qp_attr(std::size_t inline_size) const
{
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_;
    qa.recv_cq = cq_;
    qa.srq = srq_.get();
    qa.cap.max_send_wr = tx_queue_;
    qa.cap.max_send_sge = max_send_sge_;
    qa.cap.max_inline_data = static_cast<std::uint32_t>(inline_size);
    qa.qp_type = IBV_QPT_RC;
    return qa;
}

status verbs_iface::create_qp(hs_rec &h)
{
    ibv_qp_init_attr qa = rc_qp_attr(inline_);
    h.qp.reset(ibv_create_qp(dev_->pd(), &qa));
    if (h.qp == nullptr) {
        WEFT_LOG(verbs, error, "%s: ibv_create_qp failed: %s", dev_->name().c_str(),
                 std::strerror(errno));
        return status::no_memory;
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = dev_->port();
    a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(h.qp.get(), &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        WEFT_LOG(verbs, error, "RC queue pair to INIT: %s", std::strerror(errno));
        h.qp.reset();
        return status::no_device;
    }
    h.qpn = h.qp->qp_num;
    h.local_psn = random_psn();
    return status::ok;
}

status verbs_iface::connect_qp(hs_rec &h, std::uint32_t remote_qpn, std::uint32_t remote_psn,
                               std::uint8_t mtu, std::uint32_t rd_atomic)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = std::min(mtu_, static_cast<ibv_mtu>(std::clamp<int>(mtu, 1, 5)));
    a.dest_qp_num = remote_qpn;
    a.rq_psn = remote_psn & 0xffffff;
    a.max_dest_rd_atomic = static_cast<std::uint8_t>(rd_atomic_resp_);
    a.min_rnr_timer = static_cast<std::uint8_t>(std::min<std::uint64_t>(cfg_.min_rnr_timer, 31));
    a.ah_attr.port_num = dev_->port();
    if (dev_->ethernet()) {
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, h.port.gid, 16);
        a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(dev_->gid_index());
        a.ah_attr.grh.hop_limit = 64;
    } else {
        a.ah_attr.dlid = h.port.lid;
    }
    if (ibv_modify_qp(h.qp.get(), &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        WEFT_LOG(verbs, error, "RC queue pair to RTR (peer QPN %u): %s", remote_qpn,
                 std::strerror(errno));
        return status::no_device;
    }
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = static_cast<std::uint8_t>(std::clamp<std::uint64_t>(cfg_.timeout, 1, 31));
    a.retry_cnt = static_cast<std::uint8_t>(std::min<std::uint64_t>(cfg_.retry_count, 7));
    a.rnr_retry = static_cast<std::uint8_t>(std::min<std::uint64_t>(cfg_.rnr_retry, 7));
    a.sq_psn = h.local_psn;
    a.max_rd_atomic =
        static_cast<std::uint8_t>(std::max<std::uint32_t>(1, std::min(rd_atomic_init_, rd_atomic)));
    if (ibv_modify_qp(h.qp.get(), &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        WEFT_LOG(verbs, error, "RC queue pair to RTS: %s", std::strerror(errno));
        return status::no_device;
    }
    h.remote_qpn = remote_qpn;
    h.peer_rd_atomic = rd_atomic;
    return status::ok;
}

status verbs_iface::make_ah(hs_rec &h)
{
    if (h.ah != nullptr) {
        return status::ok;
    }
    ibv_ah_attr a{};
    a.port_num = dev_->port();
    if (dev_->ethernet()) {
        a.is_global = 1;
        std::memcpy(a.grh.dgid.raw, h.port.gid, 16);
        a.grh.sgid_index = static_cast<std::uint8_t>(dev_->gid_index());
        a.grh.hop_limit = 64;
    } else {
        a.dlid = h.port.lid;
    }
    h.ah.reset(ibv_create_ah(dev_->pd(), &a));
    if (h.ah == nullptr) {
        WEFT_LOG(verbs, warn, "cannot create an address handle for peer pid %u: %s", h.peer.pid(),
                 std::strerror(errno));
        return status::unreachable;
    }
    return status::ok;
}

std::uint32_t verbs_iface::new_hs(const address &peer, const port_blob &port, std::uint32_t ud_qpn)
{
    const auto ci = static_cast<std::uint32_t>(hs_.size());
    hs_.emplace_back();
    hs_rec &h = hs_.back();
    h.peer = peer;
    h.port = port;
    h.ud_qpn = ud_qpn;
    conn_by_key_[key_of(peer.id(), ud_qpn)] = ci;
    return ci;
}

// ------------------------------------------------------------------ connections: application side

status verbs_iface::connect(const address &peer, conn_id &out)
{
    port_blob port;
    std::uint32_t ud_qpn = 0;
    if (!verbs_blob(peer, dev_->ethernet(), port, ud_qpn)) {
        return status::unreachable;
    }
    std::uint32_t ci = invalid_id;
    bool failed = false;
    bool started = false;
    {
        std::lock_guard g(cm_mutex_);
        const peer_key k = key_of(peer.id(), ud_qpn);
        if (auto it = conn_by_key_.find(k); it != conn_by_key_.end()) {
            ci = it->second;  // ours, or one the agent accepted (adopted from its event)
            failed = hs_[ci].state == conn_state::failed;
        } else if (agent_dead_) {
            return status::unreachable;
        } else {
            ci = new_hs(peer, port, ud_qpn);
            hs_[ci].active = true;
            cm_cmds_.push_back(ci);
            ++stats_.connects_started;
            started = true;
        }
    }
    if (ci >= conns_.size()) {
        conns_.resize(ci + 1);
    }
    if (conns_[ci].qp == nullptr && conns_[ci].state == conn_state::requesting) {
        conns_[ci].peer = peer;  // until the agent hands the queue pair over
    }
    out = ci;
    if (started) {
        wake_agent();
    }
    return failed ? status::unreachable : status::ok;
}

void verbs_iface::wake_agent() noexcept
{
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
}

void verbs_iface::take_events()
{
    {
        std::lock_guard g(cm_mutex_);
        cm_pending_.store(false, std::memory_order_relaxed);  // under the lock: no event lost
        cm_taken_.swap(cm_events_);
    }
    for (cm_event &e : cm_taken_) {
        if (e.ci >= conns_.size()) {
            conns_.resize(e.ci + 1);
        }
        conn &c = conns_[e.ci];
        if (e.to == conn_state::failed) {
            if (c.state == conn_state::ready && c.qp != nullptr && !c.active) {
                // The agent gave up waiting for the rtu just as the requester's
                // first message made the connection ready here: it works.
                std::lock_guard g(cm_mutex_);
                hs_[e.ci].state = conn_state::ready;
                continue;
            }
            fail_conn(e.ci, status::unreachable, e.reason, 1);
            continue;
        }
        if (c.state == conn_state::failed) {
            continue;  // failed here meanwhile (the agent was told)
        }
        if (e.qp != nullptr) {  // the hand-over: the queue pair is connected
            c.qp = std::move(e.qp);
            c.peer = e.peer;
            c.remote_qpn = e.remote_qpn;
            c.peer_rd_atomic = e.peer_rd_atomic;
            c.active = e.active;
            c.self = e.self;
            std::uint32_t ring = 1;
            while (ring < tx_queue_) {
                ring <<= 1;
            }
            c.ring.assign(ring, tx_rec{});
            c.ring_mask = ring - 1;
            c.last_tx_us = now_cache_us_;
            by_qpn_.insert(c.qp->qp_num, e.ci);
        }
        if (c.state != conn_state::ready) {
            c.state = e.to;
        }
        if (c.state == conn_state::ready) {
            post_ops(e.ci);  // one-sided operations started while connecting
        }
    }
    cm_taken_.clear();
}

void verbs_iface::fail_conn(std::uint32_t ci, status why, const char *reason, int level_warn)
{
    conn &c = conns_[ci];
    if (c.state == conn_state::failed) {
        return;
    }
    c.state = conn_state::failed;
    ++stats_.conns_failed;
    {
        std::lock_guard g(cm_mutex_);  // the agent answers this peer no more
        hs_[ci].state = conn_state::failed;
    }
    if (!closing_) {
        if (level_warn != 0) {
            WEFT_LOG(verbs, warn, "connection to pid %u endpoint %u failed: %s", c.peer.pid(),
                     c.peer.ep_id(), reason);
        } else {
            WEFT_LOG(verbs, debug, "connection to pid %u endpoint %u ended: %s", c.peer.pid(),
                     c.peer.ep_id(), reason);
        }
    }
    // Flush what is outstanding: every posted request completes with a flush
    // error, which releases its buffers and fails its reads.
    if (c.qp != nullptr) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        (void)ibv_modify_qp(c.qp.get(), &a, IBV_QP_STATE);
    }
    // Operations not yet posted fail now.
    std::vector<std::uint32_t> waiting = std::move(c.pending_ops);
    conns_[ci].pending_ops.clear();
    for (std::uint32_t op : waiting) {
        rdma_op &o = ops_pool_[op];
        o.failed = true;
        op_finished(op, why);
        if (o.outstanding == 0) {
            release_op(op);
        }
    }
    if (!conns_[ci].reported) {
        conns_[ci].reported = true;
        fail_due_.push_back(ci);
    }
    (void)why;
}

void verbs_iface::tick()
{
    const std::uint64_t now = now_us();
    now_cache_us_ = now;
    if (cm_pending_.load(std::memory_order_acquire)) {
        take_events();
    }
    // Keepalive: a probe on a connection idle for KEEPALIVE. A dead peer does
    // not acknowledge it, and the queue pair fails after its retries. The scan
    // runs four times per interval, not at every tick (thousands of peers).
    if (cfg_.keepalive != 0 && now >= next_keepalive_scan_us_) {
        next_keepalive_scan_us_ = now + cfg_.keepalive / 4;
        for (std::uint32_t ci = 0; ci < conns_.size(); ++ci) {
            conn &c = conns_[ci];
            if (c.state == conn_state::ready && !c.self && now - c.last_tx_us >= cfg_.keepalive &&
                tx_room(c)) {
                if (send_ctl(ci, ctl::keepalive) == status::ok) {
                    ++stats_.keepalives;
                    WEFT_LOG(verbs, trace, "keepalive to pid %u (conn %u)", c.peer.pid(), ci);
                }
            }
        }
    }
    // Operations waiting for send queue room.
    if (!ops_waiting_.empty()) {
        ops_retry_.swap(ops_waiting_);  // post_ops may queue again: keep the two apart
        for (std::uint32_t ci : ops_retry_) {
            post_ops(ci);
        }
        ops_retry_.clear();
    }
}

// ------------------------------------------------------------------ connections: the agent
//
// Everything below runs on the agent thread with cm_mutex_ held: the handshake
// records (hs_), the UD queue pair and its completion queue are the agent's.
// A queue pair is the agent's until its event hands it to the application
// (requester: when connected; responder: when accepted); after that the agent
// only reads its numbers.

void verbs_iface::hand_over(std::uint32_t ci, conn_state to)
{
    hs_rec &h = hs_[ci];
    cm_event e;
    e.ci = ci;
    e.to = to;
    if (h.qp != nullptr) {
        e.qp = std::move(h.qp);
        e.peer = h.peer;
        e.remote_qpn = h.remote_qpn;
        e.peer_rd_atomic = h.peer_rd_atomic;
        e.active = h.active;
        e.self = h.self;
    }
    cm_events_.push_back(std::move(e));
    cm_pending_.store(true, std::memory_order_release);
}

void verbs_iface::agent_fail(std::uint32_t ci, const char *reason)
{
    hs_[ci].state = conn_state::failed;
    cm_event e;
    e.ci = ci;
    e.to = conn_state::failed;
    e.reason = reason;
    cm_events_.push_back(std::move(e));
    cm_pending_.store(true, std::memory_order_release);
}

void verbs_iface::arm_timers(hs_rec &h, std::uint64_t now) noexcept
{
    h.deadline_us = now + cfg_.connect_timeout;
    h.resend_us = std::max<std::uint64_t>(1000, cfg_.connect_retry);
    h.next_resend_us = now + h.resend_us;
}

void verbs_iface::agent_start(std::uint32_t ci)
{
    hs_rec &h = hs_[ci];
    if (h.state != conn_state::requesting || h.qp != nullptr) {
        return;  // crossed with the peer's request meanwhile, or failed
    }
    if (create_qp(h) != status::ok) {
        agent_fail(ci, "cannot create a queue pair");
        return;
    }
    if (key_of(h.peer.id(), h.ud_qpn) == key_of(my_addr_.id(), my_ud_qpn_)) {
        // A loopback connection: the queue pair is connected to itself.
        h.self = true;
        if (connect_qp(h, h.qpn, h.local_psn, mtu_, rd_atomic_resp_) != status::ok) {
            agent_fail(ci, "cannot connect the queue pair to itself");
            return;
        }
        h.state = conn_state::ready;
        hand_over(ci, conn_state::ready);
        return;
    }
    arm_timers(h, now_us());
    handshaking_.push_back(ci);
    if (send_cm(ci, cm_type::req) != status::ok) {
        h.next_resend_us = 0;  // the timer sends it
    }
    WEFT_LOG(verbs, debug, "connecting to pid %u endpoint %u (conn %u, QPN %u)", h.peer.pid(),
             h.peer.ep_id(), ci, h.qpn);
}

status verbs_iface::send_cm(std::uint32_t ci, cm_type type)
{
    hs_rec &h = hs_[ci];
    if (make_ah(h) != status::ok) {
        return status::unreachable;
    }
    if (ud_send_free_.empty()) {
        return status::again;
    }
    const std::uint32_t slot = ud_send_free_.back();
    ud_send_free_.pop_back();
    auto *buf = static_cast<std::uint8_t *>(ud_slab_.base) + std::size_t{slot} * ud_slot;
    cm_msg m{};
    m.magic = cm_magic;
    m.version = cm_version;
    m.type = static_cast<std::uint8_t>(type);
    m.mtu = static_cast<std::uint8_t>(mtu_);
    m.src_conn = ci;
    m.dst_conn = type == cm_type::req ? invalid_id : h.peer_conn;
    m.qpn = h.qpn;
    m.psn = h.local_psn;
    m.rd_atomic = rd_atomic_resp_;
    m.dst_ud_qpn = h.ud_qpn;
    m.dst_node_id = h.peer.node_id();
    m.dst_pid = h.peer.pid();
    m.dst_ep_id = h.peer.ep_id();
    m.src_len = static_cast<std::uint16_t>(my_addr_.size());
    std::memcpy(buf, &m, sizeof(m));
    std::memcpy(buf + sizeof(m), my_addr_.data(), my_addr_.size());
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf),
                static_cast<std::uint32_t>(sizeof(m) + my_addr_.size()), ud_slab_.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id(wr_kind::ud_send, slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = h.ah.get();
    wr.wr.ud.remote_qpn = h.ud_qpn;
    wr.wr.ud.remote_qkey = cm_qkey;
    ibv_send_wr *bad = nullptr;
    if (ibv_post_send(ud_qp_.get(), &wr, &bad) != 0) {
        ud_send_free_.push_back(slot);
        return status::again;
    }
    return status::ok;
}

void verbs_iface::post_ud_recv(std::uint32_t index)
{
    auto *buf = static_cast<std::uint8_t *>(ud_slab_.base) + std::size_t{index} * ud_slot;
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf), static_cast<std::uint32_t>(ud_slot),
                ud_slab_.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id(wr_kind::ud_recv, index);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    if (ibv_post_recv(ud_qp_.get(), &wr, &bad) != 0) {
        WEFT_LOG(verbs, warn, "cannot repost a handshake receive: %s", std::strerror(errno));
    }
}

void verbs_iface::on_cm(const std::uint8_t *buf, std::size_t len, std::uint32_t src_qp)
{
    // Untrusted: anything on the fabric may send to our UD queue pair (wire.hpp).
    const cm_self me{node_id_, pid_, ep_id_, my_ud_qpn_, dev_->ethernet()};
    cm_parsed p;
    if (!parse_cm(buf, len, src_qp, me, p)) {
        ++stats_.handshake_dropped;
        WEFT_LOG(verbs, debug, "dropped a malformed or stale handshake message (UD QPN %u)",
                 src_qp);
        return;
    }
    switch (static_cast<cm_type>(p.m.type)) {
        case cm_type::req:
            on_req(p.m, p.src, p.port, p.ud_qpn);
            return;
        case cm_type::rep:
            on_rep(p.m, p.src);
            return;
        case cm_type::rtu:
            on_rtu(p.m, p.src);
            return;
    }
}

void verbs_iface::on_req(const cm_msg &m, const address &src, const port_blob &port,
                         std::uint32_t ud_qpn)
{
    const peer_key k = key_of(src.id(), ud_qpn);
    std::uint32_t ci = invalid_id;
    bool fresh = false;  // a record made now: the layer above has never seen it
    if (auto it = conn_by_key_.find(k); it != conn_by_key_.end()) {
        ci = it->second;
        hs_rec &h = hs_[ci];
        switch (h.state) {
            case conn_state::requesting:
                // Both sides asked at once. The request of the smaller identity wins:
                // the other side drops its own attempt and answers with the queue
                // pair it had already created, so exactly one pair of queue pairs results.
                if (!key_less(k, key_of(my_addr_.id(), my_ud_qpn_))) {
                    return;  // ours wins; the peer will answer it
                }
                if (h.qp == nullptr && create_qp(h) != status::ok) {  // not started yet
                    agent_fail(ci, "cannot create a queue pair");
                    return;
                }
                ++stats_.connects_crossed;
                break;  // accept with the queue pair we already have
            case conn_state::accepted:
            case conn_state::ready:
                if (m.qpn == h.remote_qpn && !h.active) {
                    (void)send_cm(ci, cm_type::rep);  // our rep was lost: again
                } else if (m.qpn != h.remote_qpn) {
                    ++stats_.handshake_dropped;
                }
                return;
            case conn_state::failed:
                ++stats_.handshake_dropped;
                return;
        }
    } else {
        ci = new_hs(src, port, ud_qpn);
        fresh = true;
        if (create_qp(hs_[ci]) != status::ok) {
            hs_[ci].state = conn_state::failed;  // never seen above: nothing to report
            return;
        }
        ++stats_.connects_accepted;
    }
    hs_rec &h = hs_[ci];
    h.active = false;
    h.peer_conn = m.src_conn;
    if (connect_qp(h, m.qpn, m.psn, m.mtu, m.rd_atomic) != status::ok) {
        if (fresh) {
            h.state = conn_state::failed;  // never seen above: nothing to report
        } else {
            agent_fail(ci, "cannot connect the queue pair");
        }
        return;
    }
    // The requester may not be ready to receive until it has our answer: we
    // send only after its rtu (or its first RC message) arrives.
    h.state = conn_state::accepted;
    arm_timers(h, now_us());
    if (std::find(handshaking_.begin(), handshaking_.end(), ci) == handshaking_.end()) {
        handshaking_.push_back(ci);
    }
    // Hand over before answering: the requester may send as soon as it has the
    // rep, and a message on a queue pair the application cannot find yet
    // (no event pending) would be dropped.
    hand_over(ci, conn_state::accepted);
    (void)send_cm(ci, cm_type::rep);  // a lost rep: sent again by the timer, or on a repeated req
    WEFT_LOG(verbs, debug, "accepted a connection from pid %u endpoint %u (conn %u)", src.pid(),
             src.ep_id(), ci);
}

void verbs_iface::on_rep(const cm_msg &m, const address &src)
{
    if (m.dst_conn >= hs_.size() || hs_[m.dst_conn].peer.id() != src.id()) {
        ++stats_.handshake_dropped;
        return;
    }
    const std::uint32_t ci = m.dst_conn;
    hs_rec &h = hs_[ci];
    if (h.state != conn_state::requesting || !h.active || h.qp == nullptr) {
        if (h.state == conn_state::ready && h.active && m.qpn == h.remote_qpn) {
            (void)send_cm(ci, cm_type::rtu);  // our rtu was lost: again
        } else if (m.qpn != h.remote_qpn) {
            ++stats_.handshake_dropped;
        }
        return;
    }
    h.peer_conn = m.src_conn;
    if (connect_qp(h, m.qpn, m.psn, m.mtu, m.rd_atomic) != status::ok) {
        agent_fail(ci, "cannot connect the queue pair");
        return;
    }
    h.state = conn_state::ready;
    // Hand over first (as in on_req), then tell the responder it may send too.
    hand_over(ci, conn_state::ready);
    (void)send_cm(ci, cm_type::rtu);  // lost: the responder sends its rep again
    WEFT_LOG(verbs, debug, "connected to pid %u endpoint %u (conn %u, QPN %u <-> %u)", h.peer.pid(),
             h.peer.ep_id(), ci, h.qpn, m.qpn);
}

void verbs_iface::on_rtu(const cm_msg &m, const address &src)
{
    if (m.dst_conn >= hs_.size() || hs_[m.dst_conn].peer.id() != src.id() ||
        m.qpn != hs_[m.dst_conn].remote_qpn || hs_[m.dst_conn].active) {
        ++stats_.handshake_dropped;
        return;
    }
    hs_rec &h = hs_[m.dst_conn];
    if (h.state == conn_state::accepted) {
        h.state = conn_state::ready;
        hand_over(m.dst_conn, conn_state::ready);
    }
}

void verbs_iface::agent_tick(std::uint64_t now)
{
    // Resend unanswered requests and unconfirmed replies; give up on the silent.
    // Both sides answer from their agents, so silence means a dead or
    // unreachable peer, not a busy one.
    for (std::size_t i = 0; i < handshaking_.size();) {
        const std::uint32_t ci = handshaking_[i];
        hs_rec &h = hs_[ci];
        if (h.state != conn_state::requesting && h.state != conn_state::accepted) {
            handshaking_[i] = handshaking_.back();
            handshaking_.pop_back();
            continue;
        }
        if (now >= h.deadline_us) {
            agent_fail(ci, h.state == conn_state::requesting
                               ? "no answer to the connection request (CONNECT_TIMEOUT)"
                               : "the requester never confirmed the connection (CONNECT_TIMEOUT)");
            continue;  // removed on the next pass
        }
        if (now >= h.next_resend_us) {
            if (send_cm(ci, h.state == conn_state::requesting ? cm_type::req : cm_type::rep) ==
                status::ok) {
                ++stats_.handshake_resends;
            }
            h.resend_us = std::min<std::uint64_t>(h.resend_us * 2, 1000000);
            h.next_resend_us = now + h.resend_us;
        }
        ++i;
    }
}

int verbs_iface::agent_wait_ms(std::uint64_t now) const noexcept
{
    std::uint64_t next = UINT64_MAX;
    for (std::uint32_t ci : handshaking_) {
        next = std::min({next, hs_[ci].deadline_us, hs_[ci].next_resend_us});
    }
    if (next == UINT64_MAX) {
        return -1;  // nothing timed: sleep until a message or a command
    }
    return next <= now ? 0
                       : static_cast<int>(std::min<std::uint64_t>((next - now + 999) / 1000, 1000));
}

void verbs_iface::agent_main()
{
    pollfd fds[2] = {{chan_->fd, POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    int wait_ms = 0;
    while (!agent_stop_.load(std::memory_order_acquire)) {
        if (::poll(fds, 2, wait_ms) < 0 && errno != EINTR) {
            WEFT_LOG(verbs, error, "the connection agent's poll failed: %s", std::strerror(errno));
            // Nothing answers handshakes any more: fail those in flight (the
            // timers went with the agent) and refuse new ones in connect().
            std::lock_guard g(cm_mutex_);
            agent_dead_ = true;
            for (std::uint32_t ci = 0; ci < hs_.size(); ++ci) {
                if (hs_[ci].state == conn_state::requesting ||
                    hs_[ci].state == conn_state::accepted) {
                    agent_fail(ci, "the connection agent stopped");
                }
            }
            return;
        }
        if ((fds[1].revents & POLLIN) != 0) {
            std::uint64_t n = 0;
            (void)!::read(wake_fd_.get(), &n, sizeof(n));
        }
        ibv_cq *ev_cq = nullptr;
        void *ev_ctx = nullptr;
        while (ibv_get_cq_event(chan_.get(), &ev_cq, &ev_ctx) == 0) {
            ibv_ack_cq_events(ev_cq, 1);
        }
        // Arm first, then drain: a completion after the drain raises the event.
        (void)ibv_req_notify_cq(ud_cq_.get(), 0);
        std::lock_guard g(cm_mutex_);
        ibv_wc wc[16];
        for (int n; (n = ibv_poll_cq(ud_cq_.get(), 16, wc)) > 0;) {
            for (int i = 0; i < n; ++i) {
                const ibv_wc &w = wc[i];
                const auto idx = static_cast<std::uint32_t>(w.wr_id);
                if (static_cast<wr_kind>(w.wr_id >> wr_kind_shift) == wr_kind::ud_send) {
                    ud_send_free_.push_back(idx);
                    continue;
                }
                if (idx >= ud_recv_count) {
                    continue;
                }
                if (w.status == IBV_WC_SUCCESS) {
                    on_cm(static_cast<const std::uint8_t *>(ud_slab_.base) +
                              std::size_t{idx} * ud_slot,
                          w.byte_len, w.src_qp);
                }
                if (w.status != IBV_WC_WR_FLUSH_ERR) {
                    post_ud_recv(idx);
                }
            }
        }
        for (std::uint32_t ci : cm_cmds_) {
            agent_start(ci);
        }
        cm_cmds_.clear();
        const std::uint64_t now = now_us();
        agent_tick(now);
        wait_ms = agent_wait_ms(now);
    }
}

// ------------------------------------------------------------------ send path

status verbs_iface::not_ready(std::uint32_t ci)
{
    if (cm_pending_.load(std::memory_order_acquire)) {
        take_events();  // the agent may have connected it: the next try goes
    }
    return conns_[ci].state == conn_state::failed ? status::unreachable : status::again;
}

status verbs_iface::post_rc(std::uint32_t ci, ibv_send_wr &wr, tx_rec rec, bool force_signal)
{
    conn &c = conns_[ci];
    const bool signal = must_signal(c, force_signal);
    const std::uint32_t seq = c.sq_head;
    wr.wr_id = rc_wr_id(ci, seq);
    if (signal) {
        wr.send_flags |= IBV_SEND_SIGNALED;
    }
    ibv_send_wr *bad = nullptr;
    if (const int rc = ibv_post_send(c.qp.get(), &wr, &bad); rc != 0) [[unlikely]] {
        // Every caller checked for send queue room first, so this is not "full,
        // retry": the queue pair is broken (or the request malformed). The
        // connection fails, with the reason, rather than being retried forever.
        char why[96];
        std::snprintf(why, sizeof(why), "ibv_post_send failed: %s", std::strerror(rc));
        fail_conn(ci, status::unreachable, why, 1);
        return status::unreachable;
    }
    c.ring[seq & c.ring_mask] = rec;
    c.sq_head = seq + 1;
    c.unsignaled = signal ? 0 : c.unsignaled + 1;
    c.last_tx_us = now_cache_us_;
    ++tx_outstanding_;
    return status::ok;
}

status verbs_iface::send_short(iface *tl, conn_id ci, am_word am, const void *hdr,
                               std::size_t hdr_len, const void *payload, std::size_t len)
{
    auto *v = static_cast<verbs_iface *>(tl);
    if (ci >= v->conns_.size() || hdr_len + len > v->inline_) [[unlikely]] {
        return status::invalid;
    }
    conn &c = v->conns_[ci];
    if (c.state != conn_state::ready) [[unlikely]] {
        return v->not_ready(ci);
    }
    if (!v->tx_room(c)) [[unlikely]] {
        return status::again;
    }
    ibv_sge sge[2] = {
        {reinterpret_cast<std::uintptr_t>(hdr), static_cast<std::uint32_t>(hdr_len), 0},
        {reinterpret_cast<std::uintptr_t>(payload), static_cast<std::uint32_t>(len), 0},
    };
    ibv_send_wr wr{};
    wr.sg_list = hdr_len != 0 ? sge : sge + 1;
    wr.num_sge = (hdr_len != 0 ? 1 : 0) + (len != 0 ? 1 : 0);
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_INLINE;
    wr.imm_data = htonl(am);
    return v->post_rc(ci, wr, {rec_kind::plain, false, 0}, false);
}

status verbs_iface::send_bcopy(iface *tl, conn_id ci, am_word am, const void *hdr,
                               std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                               std::size_t offset, std::size_t len)
{
    auto *v = static_cast<verbs_iface *>(tl);
    if (ci >= v->conns_.size() || hdr_len > v->attr_.max_hdr || hdr_len + len > v->attr_.max_bcopy)
        [[unlikely]] {
        return status::invalid;
    }
    conn &c = v->conns_[ci];
    if (c.state != conn_state::ready) [[unlikely]] {
        return v->not_ready(ci);
    }
    if (!v->tx_room(c) || v->bounce_free_.empty()) [[unlikely]] {
        return status::again;
    }
    const std::uint32_t b = v->bounce_free_.back();
    v->bounce_free_.pop_back();
    std::uint8_t *buf = v->bounce_base_ + std::size_t{b} * v->cfg_.seg_size;
    if (hdr_len != 0) {  // hdr may be null without a header
        std::memcpy(buf, hdr, hdr_len);
    }
    if (base::copy_from_iov(buf + hdr_len, iov, iovcnt, offset, len) != len) [[unlikely]] {
        v->bounce_free_.push_back(b);
        return status::invalid;  // the iovec holds fewer than len bytes past offset
    }
    const std::size_t total = hdr_len + len;
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf), static_cast<std::uint32_t>(total),
                v->bounce_lkey_};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(am);
    if (total <= v->inline_) {
        wr.send_flags = IBV_SEND_INLINE;
    }
    const status st = v->post_rc(ci, wr, {rec_kind::bounce, false, b}, false);
    if (st != status::ok) {
        v->bounce_free_.push_back(b);
    }
    return st;
}

status verbs_iface::send_ctl(std::uint32_t ci, ctl code)
{
    conn &c = conns_[ci];
    if (c.qp == nullptr || !tx_room(c)) {
        return status::again;
    }
    ibv_send_wr wr{};
    wr.num_sge = 0;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_INLINE;
    wr.imm_data = htonl(ctl_imm(code));
    return post_rc(ci, wr, {rec_kind::plain, false, 0}, code == ctl::disconnect);
}

// ------------------------------------------------------------------ one-sided: registration and
// RDMA

status verbs_iface::expose(conn_id conn, const void *buf, std::size_t len, exposure &out)
{
    (void)conn;  // the registration is the port's: any peer with the key may read
    if (len == 0) {
        return status::not_supported;
    }
    base::rcache::region *r = nullptr;
    if (const status st = dev_->rcache().get(buf, len, r); st != status::ok) {
        return status::not_supported;  // the layer above falls back to a copy
    }
    const std::uint32_t rkey = r->rkey();
    auto [it, fresh] = exposed_.try_emplace(rkey, r);
    if (!fresh && it->second != r) {
        // Cannot happen (an rkey names one live registration), but never mix them up.
        dev_->rcache().put(r);
        return status::not_supported;
    }
    ++exposed_refs_[rkey];
    out.handle = rkey;
    std::memcpy(out.rkey, &rkey, sizeof(rkey));
    out.rkey_len = sizeof(rkey);
    return status::ok;
}

void verbs_iface::unexpose(const exposure &e) noexcept
{
    const auto rkey = static_cast<std::uint32_t>(e.handle);
    auto it = exposed_.find(rkey);
    if (it == exposed_.end()) {
        return;
    }
    base::rcache::region *r = it->second;
    if (--exposed_refs_[rkey] == 0) {
        exposed_refs_.erase(rkey);
        exposed_.erase(it);
    }
    dev_->rcache().put(r);
}

status verbs_iface::unpack_rkey(const std::uint8_t *data, std::size_t len, rkey &out) const
{
    if (len != sizeof(std::uint32_t)) {
        return status::bad_message;
    }
    std::uint32_t k;
    std::memcpy(&k, data, sizeof(k));
    out.w[0] = k;
    out.w[1] = 0;
    return status::ok;
}

std::uint32_t verbs_iface::new_op()
{
    std::uint32_t op;
    if (!ops_free_.empty()) {
        op = ops_free_.back();
        ops_free_.pop_back();
    } else {
        op = static_cast<std::uint32_t>(ops_pool_.size());
        ops_pool_.emplace_back();
    }
    ops_pool_[op] = rdma_op{};
    ops_pool_[op].in_use = true;
    return op;
}

status verbs_iface::start_rdma(rdma_kind kind, conn_id ci, const struct iovec *iov,
                               std::size_t iovcnt, std::size_t len, std::uint64_t raddr,
                               const rkey &key, std::uint64_t cookie, const std::uint32_t *imm)
{
    if (ci >= conns_.size() || iovcnt > max_sges) {
        return status::invalid;
    }
    if (conns_[ci].state == conn_state::failed) {
        return status::unreachable;
    }
    if (len == 0 && imm == nullptr) {
        return status::ok;  // a write with immediate of no bytes still carries its value
    }
    if (raddr + len < raddr || key.w[0] > UINT32_MAX) {
        return status::invalid;  // a forged descriptor: the layer above fails the operation
    }
    const std::uint32_t op = new_op();
    rdma_op &o = ops_pool_[op];
    o.kind = kind;
    o.cookie = cookie;
    o.conn = ci;
    o.raddr = raddr;
    o.rkey = static_cast<std::uint32_t>(key.w[0]);
    o.len = len;
    o.with_imm = imm != nullptr;
    o.imm = imm != nullptr ? *imm : 0;
    // Register the local pieces the operation covers (through the cache: a
    // rendezvous buffer or an RMA source is often used again).
    std::size_t left = len;
    for (std::size_t i = 0; i < iovcnt && left > 0; ++i) {
        const std::size_t n = std::min(iov[i].iov_len, left);
        if (n == 0) {
            continue;
        }
        base::rcache::region *r = nullptr;
        if (const status st = dev_->rcache().get(iov[i].iov_base, n, r); st != status::ok) {
            WEFT_LOG(verbs, debug, "cannot register a local buffer (%p, %zu): %s", iov[i].iov_base,
                     n, base::status_string(st));
            release_op(op);
            return status::access;
        }
        o.regions[o.nregions++] = r;
        o.iov[o.iovcnt++] = {iov[i].iov_base, n};
        left -= n;
    }
    if (left != 0) {
        release_op(op);
        return status::invalid;  // the buffers hold less than len
    }
    if (kind == rdma_kind::read) {
        ++stats_.reads;
    }
    if (imm != nullptr) {
        ++stats_.writes_imm;
    }
    conns_[ci].pending_ops.push_back(op);
    post_ops(ci);
    return status::in_progress;
}

status verbs_iface::get(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                        std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie)
{
    return static_cast<verbs_iface *>(tl)->start_rdma(rdma_kind::read, conn, iov, iovcnt, len,
                                                      raddr, key, cookie);
}

status verbs_iface::put_imm(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                            std::size_t len, std::uint64_t raddr, const rkey &key,
                            std::uint32_t imm, std::uint64_t cookie)
{
    auto *v = static_cast<verbs_iface *>(tl);
    if (len > v->attr_.max_put_imm) {
        return status::invalid;  // one request carries the immediate and the whole length
    }
    return v->start_rdma(rdma_kind::write, conn, iov, iovcnt, len, raddr, key, cookie, &imm);
}

status verbs_iface::put(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                        std::size_t len, std::uint64_t raddr, const rkey &key, std::uint64_t cookie)
{
    return static_cast<verbs_iface *>(tl)->start_rdma(rdma_kind::write, conn, iov, iovcnt, len,
                                                      raddr, key, cookie);
}

status verbs_iface::atomic(iface *tl, conn_id ci, const atomic_args &a, std::uint64_t cookie)
{
    auto *v = static_cast<verbs_iface *>(tl);
    // The device does 64-bit fetch-and-add and compare-and-swap; the attributes
    // say so, and the layer above sends everything else through its fallback.
    const bool native = a.width == 8 && (a.op == atomic_op::add || a.op == atomic_op::cswap) &&
                        (a.op != atomic_op::cswap || a.fetch);
    if (!native) {
        return status::not_supported;
    }
    if (ci >= v->conns_.size() || a.raddr % 8 != 0 || a.key.w[0] > UINT32_MAX ||
        (a.fetch && a.result == nullptr)) {
        return status::invalid;
    }
    if (v->conns_[ci].state == conn_state::failed) {
        return status::unreachable;
    }
    if (v->amo_free_.empty()) {
        return status::again;
    }
    const std::uint32_t op = v->new_op();
    rdma_op &o = v->ops_pool_[op];
    o.kind = rdma_kind::atomic;
    o.cookie = cookie;
    o.conn = ci;
    o.raddr = a.raddr;
    o.rkey = static_cast<std::uint32_t>(a.key.w[0]);
    o.len = 8;
    o.amo = a;
    o.amo_slot = v->amo_free_.back();
    v->amo_free_.pop_back();
    v->conns_[ci].pending_ops.push_back(op);
    v->post_ops(ci);
    return status::in_progress;
}

void verbs_iface::post_ops(std::uint32_t ci)
{
    while (!conns_[ci].pending_ops.empty()) {
        conn &c = conns_[ci];
        if (c.state != conn_state::ready || !tx_room(c)) {
            break;
        }
        const std::uint32_t op = c.pending_ops.front();
        rdma_op &o = ops_pool_[op];
        ibv_sge sge[max_sges];
        int nsge = 0;
        std::size_t bytes = 0;
        ibv_send_wr wr{};
        if (o.kind == rdma_kind::atomic) {
            sge[0] = {
                reinterpret_cast<std::uintptr_t>(amo_slab_.base) + std::size_t{o.amo_slot} * 8, 8,
                amo_slab_.mr->lkey};
            nsge = 1;
            bytes = 8;
            wr.opcode = o.amo.op == atomic_op::add ? IBV_WR_ATOMIC_FETCH_AND_ADD
                                                   : IBV_WR_ATOMIC_CMP_AND_SWP;
            wr.wr.atomic.remote_addr = o.raddr;
            wr.wr.atomic.rkey = o.rkey;
            // Fetch-and-add: compare_add is the addend. Compare-and-swap: compare,
            // then swap (the new value).
            wr.wr.atomic.compare_add = o.amo.op == atomic_op::add ? o.amo.operand : o.amo.compare;
            wr.wr.atomic.swap = o.amo.operand;
        } else {
            // One request: up to read_chunk_ bytes over at most max_send_sge_ pieces.
            std::size_t skip = o.posted;
            const std::size_t want = std::min(read_chunk_, o.len - o.posted);
            for (std::uint32_t i = 0;
                 i < o.iovcnt && bytes < want && nsge < static_cast<int>(max_send_sge_); ++i) {
                if (skip >= o.iov[i].iov_len) {
                    skip -= o.iov[i].iov_len;
                    continue;
                }
                const std::size_t n = std::min(o.iov[i].iov_len - skip, want - bytes);
                sge[nsge++] = {reinterpret_cast<std::uintptr_t>(o.iov[i].iov_base) + skip,
                               static_cast<std::uint32_t>(n), o.regions[i]->lkey()};
                bytes += n;
                skip = 0;
            }
            wr.opcode = o.kind == rdma_kind::read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
            wr.wr.rdma.remote_addr = o.raddr + o.posted;
            wr.wr.rdma.rkey = o.rkey;
        }
        wr.sg_list = sge;
        wr.num_sge = nsge;
        const bool last = o.posted + bytes == o.len;
        if (last && o.with_imm) {
            // The peer's receive completion carries the value and the length;
            // RC order puts it after every earlier request on the queue pair.
            wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr.imm_data = htonl(o.imm);
        }
        if (post_rc(ci, wr, {rec_kind::rdma, last, op}, last) != status::ok) {
            break;  // the connection failed: fail_conn fails what is queued
        }
        o.posted += bytes;
        ++o.outstanding;
        if (last) {
            auto &q = conns_[ci].pending_ops;
            q.erase(q.begin());
        }
    }
    // Left over for want of send queue room: tick() tries again.
    if (!conns_[ci].pending_ops.empty() && conns_[ci].state == conn_state::ready &&
        std::find(ops_waiting_.begin(), ops_waiting_.end(), ci) == ops_waiting_.end()) {
        ops_waiting_.push_back(ci);
    }
}

void verbs_iface::release_op(std::uint32_t op)
{
    rdma_op &o = ops_pool_[op];
    for (std::uint32_t i = 0; i < o.nregions; ++i) {
        dev_->rcache().put(o.regions[i]);
    }
    o.nregions = 0;
    if (o.kind == rdma_kind::atomic) {
        amo_free_.push_back(o.amo_slot);
        o.kind = rdma_kind::read;
    }
    o.in_use = false;
    ops_free_.push_back(op);
}

void verbs_iface::op_finished(std::uint32_t op, status st)
{
    rdma_op &o = ops_pool_[op];
    if (o.reported) {
        return;
    }
    o.reported = true;
    if (st == status::ok && o.kind == rdma_kind::atomic && o.amo.fetch) {
        // The old value landed in our registered slot: hand it over.
        const std::uint8_t *slot =
            static_cast<const std::uint8_t *>(amo_slab_.base) + std::size_t{o.amo_slot} * 8;
        std::memcpy(o.amo.result, slot, 8);
    }
    done_due_.push_back({o.cookie, st});
}

// ------------------------------------------------------------------ completions

void verbs_iface::retire(std::uint32_t ci, std::uint32_t upto, status st)
{
    conn &c = conns_[ci];
    // upto is the sequence number of a completed request: it and every earlier
    // one are done. Ignore numbers outside the outstanding window (cannot happen
    // with a correct device; never walk past sq_head).
    if (upto - c.sq_tail >= c.sq_head - c.sq_tail) {
        return;
    }
    while (c.sq_tail != upto + 1) {
        const tx_rec &r = c.ring[c.sq_tail & c.ring_mask];
        switch (r.kind) {
            case rec_kind::plain:
                break;
            case rec_kind::bounce:
                bounce_free_.push_back(r.index);
                break;
            case rec_kind::rdma: {
                rdma_op &o = ops_pool_[r.index];
                --o.outstanding;
                if (st != status::ok) {
                    o.failed = true;
                    op_finished(r.index, st);
                } else if (r.last && !o.failed) {
                    op_finished(r.index, status::ok);
                }
                if (o.outstanding == 0 && (o.reported || o.failed) &&
                    (o.posted == o.len || o.failed)) {
                    // Every posted piece retired and the op is over: drop the
                    // registrations (failed ops still in pending_ops are
                    // released by fail_conn).
                    bool queued = false;
                    for (std::uint32_t q : c.pending_ops) {
                        queued = queued || q == r.index;
                    }
                    if (!queued) {
                        release_op(r.index);
                    }
                }
                break;
            }
        }
        ++c.sq_tail;
        --tx_outstanding_;
    }
}

void verbs_iface::on_send_done(const ibv_wc &wc)
{
    const auto ci = static_cast<std::uint32_t>(wc.wr_id >> 32) & 0x3fffffffu;
    const auto seq = static_cast<std::uint32_t>(wc.wr_id);
    if (ci >= conns_.size()) [[unlikely]] {
        return;
    }
    if (wc.status == IBV_WC_SUCCESS) [[likely]] {
        retire(ci, seq, status::ok);
        return;
    }
    WEFT_LOG(verbs, debug, "send completion error on conn %u: %s (vendor error %u)", ci,
             wc_status_text(wc.status), wc.vendor_err);
    // The first error says why; the flush errors after it only retire requests.
    status st = status::unreachable;
    if (wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_LOC_PROT_ERR) {
        st = status::access;
    }
    if (wc.status != IBV_WC_WR_FLUSH_ERR && conns_[ci].state != conn_state::failed) {
        char why[128];
        std::snprintf(why, sizeof(why), "%s (%s)", wc_status_text(wc.status),
                      wc.status == IBV_WC_REM_ACCESS_ERR
                          ? "the peer refused the access: bad key or out of bounds"
                      : wc.status == IBV_WC_RETRY_EXC_ERR ? "the peer does not answer"
                                                          : "queue pair error");
        fail_conn(ci, status::unreachable, why, 1);
    } else {
        fail_conn(ci, status::unreachable, "flushed", 0);
    }
    retire(ci, seq, st);
}

void verbs_iface::on_ctl(std::uint32_t ci, std::uint32_t imm)
{
    switch (static_cast<ctl>((imm >> imm_ctl_shift) & 0xff)) {
        case ctl::rtu:
        case ctl::keepalive:
            return;  // receiving it made the connection ready; nothing else to do
        case ctl::disconnect:
            fail_conn(ci, status::unreachable, "the peer closed its endpoint", 0);
            return;
    }
    ++stats_.dropped_msgs;
}

void verbs_iface::on_recv(const ibv_wc &wc, std::uint32_t *repost_idx, unsigned &nrepost)
{
    const auto index = static_cast<std::uint32_t>(wc.wr_id);
    if (index >= rx_buf_.size()) [[unlikely]] {
        return;
    }
    repost_idx[nrepost++] = index;
    std::uint32_t ci = by_qpn_.find(wc.qp_num);
    if (ci == invalid_id && cm_pending_.load(std::memory_order_acquire)) [[unlikely]] {
        take_events();  // a queue pair the agent accepted, not yet adopted
        ci = by_qpn_.find(wc.qp_num);
    }
    if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
        if (ci != invalid_id && wc.status != IBV_WC_WR_FLUSH_ERR) {
            fail_conn(ci, status::unreachable, wc_status_text(wc.status), 1);
        }
        return;
    }
    if (ci == invalid_id || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) [[unlikely]] {
        ++stats_.dropped_msgs;
        return;
    }
    conn &c = conns_[ci];
    if (c.state != conn_state::ready) [[unlikely]] {
        if (c.state == conn_state::accepted) {
            c.state = conn_state::ready;  // the requester sent: it is ready
            {
                std::lock_guard g(cm_mutex_);  // the agent stops waiting for its rtu
                if (hs_[ci].state == conn_state::accepted) {
                    hs_[ci].state = conn_state::ready;
                }
            }
            post_ops(ci);  // one-sided operations started while connecting
        } else if (c.state == conn_state::failed) {
            return;
        }
    }
    const std::uint32_t imm = ntohl(wc.imm_data);
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        // A peer's put_imm: its data is in place; the immediate is the layer
        // above's, all 32 bits of it.
        if (handlers_.imm == nullptr) [[unlikely]] {
            ++stats_.dropped_msgs;  // nobody above takes them (no put_imm was ever meant here)
        } else if (!closing_) {
            handlers_.imm(handlers_.arg, ci, imm, wc.byte_len);
        }
        return;
    }
    if ((imm & imm_ctl) != 0 || closing_) [[unlikely]] {
        if (!closing_) {
            on_ctl(ci, imm);
        }
        return;  // closing: the layer above is gone
    }
    // byte_len <= the buffer: the device fails a longer message (local length error).
    handlers_.am(handlers_.arg, ci, static_cast<am_word>(imm & imm_am_mask), rx_buf_[index],
                 wc.byte_len);
}

void verbs_iface::repost(const std::uint32_t *idx, unsigned n)
{
    ibv_recv_wr wr[64];
    ibv_sge sge[64];
    for (unsigned i = 0; i < n; ++i) {
        sge[i] = {reinterpret_cast<std::uintptr_t>(rx_buf_[idx[i]]),
                  static_cast<std::uint32_t>(cfg_.seg_size), rx_lkey_[idx[i]]};
        wr[i] = {};
        wr[i].wr_id = wr_id(wr_kind::srq_recv, idx[i]);
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr *bad = nullptr;
    if (n != 0 && ibv_post_srq_recv(srq_.get(), wr, &bad) != 0) {
        WEFT_LOG(verbs, error, "cannot repost receive buffers: %s", std::strerror(errno));
    }
}

void verbs_iface::flush_upcalls()
{
    if (closing_) {
        fail_due_.clear();
        done_due_.clear();
        return;
    }
    // Reads first: a receive whose read completed must not be failed by its
    // peer's failure report.
    while (!done_due_.empty()) {
        const done d = done_due_.back();
        done_due_.pop_back();
        handlers_.op_done(handlers_.arg, d.cookie, d.st);
    }
    while (!fail_due_.empty()) {
        const std::uint32_t ci = fail_due_.back();
        fail_due_.pop_back();
        handlers_.peer_failed(handlers_.arg, ci, ci, status::unreachable);
    }
}

unsigned verbs_iface::progress(iface *tl)
{
    auto *v = static_cast<verbs_iface *>(tl);
    ibv_wc wc[64];
    const int n = ibv_poll_cq(v->cq_, static_cast<int>(v->batch_), wc);
    if (n <= 0) [[likely]] {
        if (--v->idle_countdown_ == 0) [[unlikely]] {
            v->idle_countdown_ = idle_polls_per_tick;
            v->tick();
            v->flush_upcalls();
        }
        return 0;
    }
    std::uint32_t repost_idx[64];
    unsigned nrepost = 0;
    for (int i = 0; i < n; ++i) {
        const ibv_wc &w = wc[i];
        switch (static_cast<wr_kind>(w.wr_id >> wr_kind_shift)) {
            case wr_kind::srq_recv:
                v->on_recv(w, repost_idx, nrepost);
                break;
            case wr_kind::rc_send:
                v->on_send_done(w);
                break;
            case wr_kind::ud_recv:
            case wr_kind::ud_send:
                break;  // the agent's queue, never this one
        }
    }
    v->repost(repost_idx, nrepost);
    if (--v->idle_countdown_ == 0) [[unlikely]] {
        v->idle_countdown_ = idle_polls_per_tick;
        v->tick();
    }
    if (!v->done_due_.empty() || !v->fail_due_.empty()) [[unlikely]] {
        v->flush_upcalls();
    }
    return static_cast<unsigned>(n);
}

// ------------------------------------------------------------------ introspection

stats verbs_iface::counters() const noexcept
{
    stats s{};
    {
        std::lock_guard g(cm_mutex_);
        s = stats_;
    }
    const base::rcache_stats rs = dev_->rcache().stats();
    s.rcache_hits = rs.hits;
    s.rcache_misses = rs.misses;
    s.rcache_invalidations = rs.invalidations;
    return s;
}

conn_info verbs_iface::info(conn_id ci) const noexcept
{
    if (ci >= conns_.size() || conns_[ci].qp == nullptr) {
        return {};
    }
    const conn &c = conns_[ci];
    return {c.qp->qp_num, c.remote_qpn, c.state == conn_state::ready};
}

}  // namespace

namespace {

base::result<std::unique_ptr<iface>> open_on(const open_params &p, std::shared_ptr<device> dev,
                                             const config &cfg)
{
    auto tl = std::unique_ptr<verbs_iface>(new (std::nothrow) verbs_iface(p, std::move(dev), cfg));
    if (tl == nullptr) {
        return status::no_memory;
    }
    if (const status st = tl->init(); st != status::ok) {
        return st;
    }
    return std::unique_ptr<iface>(std::move(tl));
}

std::vector<resource> query(const base::config_store &store, std::string &why)
{
    config cfg{};
    store.load(config_table(), &cfg);
    std::string none;
    const auto &ports = all_active_ports(&none);
    std::vector<resource> out;
    std::vector<std::string> devices;
    std::string names;
    for (const port_info &p : ports) {
        names += (names.empty() ? "" : ", ") + p.name;
        if (port_matches(p, cfg.device)) {
            out.push_back({p.name, p.ethernet ? "RoCE port" : "InfiniBand port"});
            devices.push_back(p.device);
        }
    }
    // The port nearest the caller's CPUs first (docs/topology.md); among
    // equally near ones, libibverbs's order. WEFT_VERBS_DEVICE, when given,
    // has already chosen.
    if (base::topo_enabled(store) && !out.empty()) {
        const auto places = base::locate_all(base::topology::machine(), base::io_class::rdma,
                                             devices, base::caller_cpus());
        std::vector<std::size_t> order(out.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            order[i] = i;
            out[i].detail +=
                std::string(", ") + base::nearness_name(places[i].near) + ": " + places[i].why;
        }
        if (cfg.device.empty()) {
            std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                return base::nearer(places[a], places[b]);
            });
        }
        std::vector<resource> sorted;
        for (std::size_t i : order) {
            sorted.push_back(std::move(out[i]));
        }
        out = std::move(sorted);
    }
    if (out.empty()) {
        why = ports.empty() ? none
                            : "WEFT_VERBS_DEVICE=" + cfg.device +
                                  " names no active port (active: " + names + ")";
    }
    return out;
}

base::result<std::unique_ptr<memory_domain>> open_md(const base::config_store &store,
                                                     const resource &res)
{
    config cfg{};
    store.load(config_table(), &cfg);
    return open_memory_domain(res.name, cfg);
}

base::result<std::unique_ptr<iface>> open_component(const open_params &p, const resource &res,
                                                    memory_domain &md,
                                                    const base::config_store &store)
{
    (void)res;
    config cfg{};
    store.load(config_table(), &cfg);
    cfg.placement = base::topo_enabled(store);
    return open_on(p, device_of(md), cfg);
}

}  // namespace

base::result<std::unique_ptr<iface>> open(const open_params &p, const std::string &domain,
                                          const config &cfg)
{
    auto dev = device::get(domain, cfg);
    if (!dev.ok()) {
        return dev.error();
    }
    return open_on(p, std::move(dev.value()), cfg);
}

const component transport{
    .name = "verbs",
    .wire_id = wire_id,
    .description = "RDMA: reliable-connected queue pairs on libibverbs (InfiniBand, RoCE)",
    .config = &config_table_v,
    .log = &log_verbs,
    .query = &query,
    .open_md = &open_md,
    .open = &open_component,
};

stats get_stats(const iface &tl) noexcept
{
    return static_cast<const verbs_iface &>(tl).counters();
}

conn_info get_conn_info(const iface &tl, conn_id conn) noexcept
{
    return static_cast<const verbs_iface &>(tl).info(conn);
}

}  // namespace weft::transport::verbs
