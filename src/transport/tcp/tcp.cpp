// The tcp transport (tcp.hpp; docs/tcp.md).
//
// Per endpoint: one epoll instance, one listening socket per selected address,
// and one connection per peer endpoint (conn_id == src_id == its index in
// conns_, never reused). A connection owns the socket its frames travel on;
// sockets that are not (yet) a connection's -- an outgoing attempt, an
// accepted socket waiting for its hello, a refused one lingering until the
// dialler closes -- live in socks_ too, each with a generation so that a stale
// epoll event for a reused slot is ignored.
//
// Sends never block: with nothing queued a frame goes out with one sendmsg()
// straight from the caller's buffers; what the socket does not take is copied
// into the connection's queue (a byte ring, at most TX_QUEUE bytes), which
// progress() flushes with writev when epoll says the socket is writable. A send
// that does not fit the queue answers `again` (proto/ keeps it queued), as does
// one on a connection that is not up yet: an operation is never reported done
// before its connection exists, so a peer that cannot be reached fails the
// operations towards it with error completions.
//
// Handlers run only from progress(), never inside a send: a connection that
// fails inside a send (a reset) is reported by the next progress().

#include "transport/tcp/tcp.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/topo.hpp"
#include "transport/tcp/ifsel.hpp"
#include "transport/tcp/wire.hpp"

namespace weft::transport::tcp {

namespace {

using base::status;

// ------------------------------------------------------------------ configuration

/// SPIN_CONNS at most: beyond a few sockets one epoll_wait is cheaper than a
/// recv() each.
constexpr std::uint64_t max_spin = 8;

constexpr base::config_field config_fields[] = {
    base::make_field<&config::interfaces>(
        "IF", base::config_type::string, "auto",
        "interfaces to use: auto (every interface that is up but loopback; loopback when there "
        "is nothing else), or a comma list of names and subnets (eth0,10.0.0.0/8,fd00::/64); a "
        "leading ^ excludes the list instead"),
    base::make_field<&config::port_min>("PORT_MIN", base::config_type::uint, "0",
                                        "lowest listening port (0: any port the kernel picks)",
                                        base::config_range{0, 65535}),
    base::make_field<&config::port_max>(
        "PORT_MAX", base::config_type::uint, "0",
        "highest listening port (0: PORT_MIN alone, or any when PORT_MIN is 0)",
        base::config_range{0, 65535}),
    base::make_field<&config::sndbuf>(
        "SNDBUF", base::config_type::size, "0",
        "socket send buffer (SO_SNDBUF); 0: the kernel's autotuning (net.ipv4.tcp_wmem)",
        base::config_range{0, 1ull << 30}),
    base::make_field<&config::rcvbuf>(
        "RCVBUF", base::config_type::size, "0",
        "socket receive buffer (SO_RCVBUF); 0: the kernel's autotuning (net.ipv4.tcp_rmem)",
        base::config_range{0, 1ull << 30}),
    base::make_field<&config::nodelay>(
        "NODELAY", base::config_type::boolean, "y",
        "disable Nagle's algorithm (TCP_NODELAY): small messages go at once"),
    base::make_field<&config::max_short>("MAX_SHORT", base::config_type::size, "1k",
                                         "largest short message (protocol header + payload)",
                                         base::config_range{64, 64 * 1024}),
    base::make_field<&config::max_bcopy>(
        "MAX_BCOPY", base::config_type::size, "256k",
        "largest frame (protocol header + payload): larger messages go in several",
        base::config_range{min_body_limit, max_body_limit}),
    base::make_field<&config::tx_queue>(
        "TX_QUEUE", base::config_type::size, "1m",
        "bytes queued per connection when its socket is full (at least one frame); beyond it "
        "sends wait in the endpoint",
        base::config_range{4096, 1ull << 30}),
    base::make_field<&config::connect_timeout>(
        "CONNECT_TIMEOUT", base::config_type::time_us, "10s",
        "a connect() that has not reached the peer's kernel after this long fails the peer (a "
        "connected handshake waits for the peer's progress)",
        base::config_range{1000, 3600ull * 1000000}),
    base::make_field<&config::keepalive>(
        "KEEPALIVE", base::config_type::time_us, "10s",
        "idle time before TCP keepalive probes (3, a third of it apart) notice a dead host; "
        "0 = off",
        base::config_range{0, 24ull * 3600 * 1000000}),
    base::make_field<&config::user_timeout>(
        "USER_TIMEOUT", base::config_type::time_us, "30s",
        "sent data unacknowledged for this long fails the connection (TCP_USER_TIMEOUT); 0 = "
        "the kernel's default (minutes)",
        base::config_range{0, 24ull * 3600 * 1000000}),
    base::make_field<&config::busy_poll>(
        "BUSY_POLL", base::config_type::time_us, "0",
        "SO_BUSY_POLL: the kernel polls the device this long for a socket read instead of "
        "waiting for an interrupt (raising it needs CAP_NET_ADMIN); 0 = off",
        base::config_range{0, 1000000}),
    base::make_field<&config::poll_interval>(
        "POLL_INTERVAL", base::config_type::uint, "16",
        "progress calls skipped between two epoll checks after one found nothing (64 times "
        "as many while there is no connection); 0: check on every call",
        base::config_range{0, 65536}),
    base::make_field<&config::spin_conns>(
        "SPIN_CONNS", base::config_type::uint, "2",
        "with at most this many connections (and nothing else under way), progress reads them "
        "with recv() directly instead of asking epoll_wait first: one system call fewer per "
        "message received; epoll still runs every 32nd check. 0: always epoll",
        base::config_range{0, max_spin}),
};
constexpr base::config_table config_table_v = base::make_table(
    "TCP", "tcp transport: TCP sockets, IPv4 and IPv6 (docs/tcp.md)", config_fields);

// ------------------------------------------------------------------ constants

constexpr std::size_t max_hdr = 256;
/// Spinning: one check in this many still runs epoll_wait (new connections,
/// writable sockets, handshakes).
constexpr std::uint32_t spin_epoll_every = 32;
constexpr unsigned max_events = 64;
constexpr unsigned accept_batch = 32;
/// An accepted socket or an outgoing attempt: room for a handshake and an address.
constexpr std::size_t hs_buf_size = 512;
static_assert(hs_buf_size >= sizeof(handshake) + max_address_size);
/// Receive buffer of a connection: this much until a frame larger than it
/// arrives, then one frame of the peer's largest (the default 256 KiB body
/// takes 256 KiB + 12 bytes).
constexpr std::size_t rx_min_size = 64 * 1024;
/// recv() calls per socket per progress call (level-triggered epoll brings
/// the socket back next time): at most 8 buffers per call.
constexpr unsigned rx_budget = 8;
/// Gather entries of one frame: its header, the protocol header, the payload pieces.
constexpr std::size_t max_gather = 64;
/// When an endpoint closes: how long it tries to hand what is queued to the kernel.
constexpr std::uint64_t close_flush_us = 1000000;
/// Listening backlog.
constexpr int backlog = 512;
/// epoll_event.data of a listening socket: this bit and the listener's index.
constexpr std::uint64_t listener_tag = 1ull << 63;

[[nodiscard]] std::uint64_t now_us() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000u + std::uint64_t(ts.tv_nsec) / 1000u;
}

[[nodiscard]] bool id_less(const endpoint_id &a, const endpoint_id &b) noexcept
{
    if (a.node_id != b.node_id) {
        return a.node_id < b.node_id;
    }
    if (a.pid != b.pid) {
        return a.pid < b.pid;
    }
    return a.ep_id < b.ep_id;
}

struct id_hash {
    std::size_t operator()(const endpoint_id &k) const noexcept
    {
        return std::hash<std::uint64_t>{}(k.node_id * 0x9e3779b97f4a7c15ULL ^
                                          (std::uint64_t{k.pid} << 32 | k.ep_id));
    }
};

/// A socket address for `a` and `port`.
socklen_t to_sockaddr(const ip_addr &a, std::uint16_t port, sockaddr_storage &ss) noexcept
{
    std::memset(&ss, 0, sizeof(ss));
    if (a.family == 4) {
        auto *s = reinterpret_cast<sockaddr_in *>(&ss);
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        std::memcpy(&s->sin_addr, a.bytes, 4);
        return sizeof(sockaddr_in);
    }
    auto *s = reinterpret_cast<sockaddr_in6 *>(&ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    std::memcpy(&s->sin6_addr, a.bytes, 16);
    return sizeof(sockaddr_in6);
}

std::string endpoint_text(const ip_addr &a, std::uint16_t port)
{
    return a.family == 6 ? "[" + ip_text(a) + "]:" + std::to_string(port)
                         : ip_text(a) + ":" + std::to_string(port);
}

/// The text of a peer's socket address (for log lines about strangers).
std::string peer_text(int fd)
{
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) {
        return "?";
    }
    ip_addr a;
    std::uint16_t port = 0;
    if (ss.ss_family == AF_INET) {
        const auto *s = reinterpret_cast<const sockaddr_in *>(&ss);
        a.family = 4;
        std::memcpy(a.bytes, &s->sin_addr, 4);
        port = ntohs(s->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto *s = reinterpret_cast<const sockaddr_in6 *>(&ss);
        a.family = 6;
        std::memcpy(a.bytes, &s->sin6_addr, 16);
        port = ntohs(s->sin6_port);
    } else {
        return "?";
    }
    return endpoint_text(a, port);
}

void default_am(void *, src_id, am_word, const void *, std::size_t) {}
void default_peer_failed(void *, conn_id, src_id, status) {}
void default_op_done(void *, std::uint64_t, status) {}

// ------------------------------------------------------------------ memory domain

/// tcp has no one-sided operations: peers reach registered memory through
/// proto/'s active messages, which check proto/'s own region table. Nothing to
/// register here, and no key.
class tcp_md final : public memory_domain {
  public:
    [[nodiscard]] std::size_t rkey_size() const noexcept override { return 0; }
    [[nodiscard]] status reg(void *buf, std::size_t len, unsigned acc,
                             std::uint64_t &handle) override
    {
        (void)buf;
        (void)len;
        (void)acc;
        handle = 0;
        return status::ok;
    }
    void dereg(std::uint64_t handle) noexcept override { (void)handle; }
    [[nodiscard]] status pack_rkey(std::uint64_t handle, std::uint8_t *out) const override
    {
        (void)handle;
        (void)out;
        return status::ok;
    }
};

// ------------------------------------------------------------------ the send queue

/// The bytes of frames a socket did not take yet, in order: a ring that grows
/// (cold, doubling) up to its limit.
class tx_ring {
  public:
    void set_limit(std::size_t limit) noexcept { limit_ = limit; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// Bytes that may still be queued.
    [[nodiscard]] std::size_t room() const noexcept { return size_ >= limit_ ? 0 : limit_ - size_; }

    /// Append `len` bytes of `iov` from byte `skip` (room() must allow it).
    void push(const iovec *iov, std::size_t n, std::size_t skip, std::size_t len)
    {
        if (cap_ - size_ < len) {
            grow(size_ + len);
        }
        for (std::size_t i = 0; i < n && len > 0; ++i) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            std::size_t k = std::min(iov[i].iov_len - skip, len);
            const auto *src = static_cast<const std::uint8_t *>(iov[i].iov_base) + skip;
            skip = 0;
            len -= k;
            while (k > 0) {
                const std::size_t tail = (head_ + size_) % cap_;
                const std::size_t run = std::min(k, cap_ - tail);
                std::memcpy(buf_.get() + tail, src, run);
                src += run;
                size_ += run;
                k -= run;
            }
        }
    }

    /// The queued bytes as at most two pieces.
    [[nodiscard]] unsigned peek(iovec out[2]) const noexcept
    {
        if (size_ == 0) {
            return 0;
        }
        const std::size_t first = std::min(size_, cap_ - head_);
        out[0] = {buf_.get() + head_, first};
        if (first == size_) {
            return 1;
        }
        out[1] = {buf_.get(), size_ - first};
        return 2;
    }

    void consume(std::size_t n) noexcept
    {
        head_ = (head_ + n) % cap_;
        size_ -= n;
        if (size_ == 0) {
            head_ = 0;
        }
    }

    void release() noexcept
    {
        buf_.reset();
        cap_ = head_ = size_ = 0;
    }

  private:
    [[gnu::cold]] void grow(std::size_t need)
    {
        std::size_t cap = std::max<std::size_t>(cap_ * 2, 64 * 1024);
        while (cap < need) {
            cap *= 2;
        }
        cap = std::max(std::min(cap, limit_), need);
        auto nb = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
        iovec parts[2];
        const unsigned n = peek(parts);
        std::size_t at = 0;
        for (unsigned i = 0; i < n; ++i) {
            std::memcpy(nb.get() + at, parts[i].iov_base, parts[i].iov_len);
            at += parts[i].iov_len;
        }
        buf_ = std::move(nb);
        cap_ = cap;
        head_ = 0;
    }

    std::unique_ptr<std::uint8_t[]> buf_;
    std::size_t cap_ = 0;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
    std::size_t limit_ = 0;
};

// ------------------------------------------------------------------ sockets and connections

enum class sock_state : std::uint8_t {
    dialing,     ///< our connect() in progress
    hello_sent,  ///< connected; our hello sent, waiting for accept or reject
    accepting,   ///< accepted; waiting for the peer's hello
    lingering,   ///< we refused it: discard input until the dialler closes (no reset)
    ready,       ///< frames flow
    closed,      ///< fd closed; the slot is freed after this progress call
};

struct sock {
    int fd = -1;
    std::uint32_t index = 0;
    std::uint32_t gen = 0;
    sock_state state = sock_state::closed;
    bool want_out = false;  ///< EPOLLOUT is in the interest set
    bool lo_rx = false;     ///< the accepted side of our connection to ourselves
    std::uint32_t conn = invalid_id;
    std::uint64_t deadline_us = 0;  ///< dialing, lingering (0: none)
    // Receive: [rx_start, rx_end) of rx are bytes not consumed yet.
    std::unique_ptr<std::uint8_t[]> rx;
    std::size_t rx_size = 0;
    std::size_t rx_start = 0;
    std::size_t rx_end = 0;
    frame_limits lim{};
    // Send.
    tx_ring tx;
    // Dialing: where to.
    dial_target target{};
};

enum class conn_state : std::uint8_t {
    connecting,  ///< our dial in progress, or waiting for the peer's (it won a crossed connect)
    ready,       ///< frames flow
    failed,      ///< closed, reset, timed out or refused: nothing more goes
};

struct conn {
    address peer;  ///< the peer's whole address
    endpoint_id id{};
    conn_state state = conn_state::connecting;
    bool reported = false;  ///< peer_failed is due or was called
    sock *s = nullptr;      ///< ready: the socket of this connection
    sock *lo = nullptr;     ///< to ourselves: the accepted end (frames arrive there)
    sock *dial = nullptr;   ///< connecting: our attempt (nullptr: waiting for the peer's)
    std::vector<dial_target> targets;
    std::uint32_t next_target = 0;
    std::uint64_t deadline_us = 0;  ///< connecting: fail then (0: none, our hello is out)
    std::string tried;              ///< failed attempts, for the log line
};

// ------------------------------------------------------------------ the transport

class tcp_iface final : public iface {
  public:
    tcp_iface(const open_params &p, const config &cfg, std::vector<if_addr> mine);
    ~tcp_iface() override;

    [[nodiscard]] status init();

    [[nodiscard]] const attributes &attr() const noexcept override { return attr_; }
    [[nodiscard]] status pack_address(address_builder &b) override;
    void set_local_address(const address &a) noexcept override { my_addr_ = a; }
    [[nodiscard]] bool reachable(const address &peer) const noexcept override;
    [[nodiscard]] status connect(const address &peer, conn_id &out) override;
    [[nodiscard]] status remote_address(src_id src, address &out) const override;

    [[nodiscard]] const stats &counters() const noexcept { return stats_; }

  private:
    static status send_short(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const void *payload, std::size_t len);
    static status send_bcopy(iface *tl, conn_id conn, am_word am, const void *hdr,
                             std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                             std::size_t offset, std::size_t len);
    static unsigned progress(iface *tl);

    // Send side.
    [[nodiscard]] status send_frame(std::uint32_t ci, const iovec *iov, std::size_t n,
                                    std::size_t total);
    [[gnu::cold]] status not_ready(const conn &c) noexcept;
    [[nodiscard]] bool flush(sock &s);
    void set_out(sock &s, bool on);
    void send_handshake(sock &s, hs_type type, reject_reason why, std::uint32_t src_conn,
                        const endpoint_id &to);

    // Progress.
    unsigned poll();
    unsigned on_listener(std::size_t li);
    unsigned on_event(sock &s, std::uint32_t events);
    unsigned read_sock(sock &s);
    unsigned consume(sock &s);
    unsigned consume_frames(sock &s);
    void check_timers();
    unsigned report_failures();
    void reap();

    // Connections.
    [[nodiscard]] std::uint32_t new_conn(const address &peer);
    void dial_next(std::uint32_t ci);
    void dial_connected(sock &s);
    void dial_failed(sock &s, const char *why);
    void arm_deadline(std::uint32_t ci);
    [[nodiscard]] bool connected_now(const sock &s) const noexcept;
    void on_hello(sock &s, const hs_parsed &p);
    void on_reply(sock &s, const hs_parsed &p);
    void bind_ready(std::uint32_t ci, sock &s, const handshake &m);
    void refuse(sock &s, reject_reason why, const endpoint_id &to);
    void stranger(sock &s, hs_result r);
    void fail_conn(std::uint32_t ci, const char *why, bool warn);
    void malformed(sock &s, const char *what, std::uint64_t value);
    void connection_lost(sock &s, const char *why, bool warn);
    [[nodiscard]] bool grow_rx(sock &s, std::size_t size);
    unsigned spin();
    void rebuild_spin();

    // Sockets.
    [[nodiscard]] sock *new_sock(int fd, sock_state st);
    void close_sock(sock *s);
    void tune(int fd) const;

    attributes attr_{};
    config cfg_;
    endpoint_id me_;
    address my_addr_;
    std::vector<if_addr> mine_;  ///< the selected local addresses
    struct listener {
        int fd = -1;
        ip_addr addr;
        std::uint16_t port = 0;
    };
    std::vector<listener> listeners_;
    int epfd_ = -1;
    std::vector<std::unique_ptr<conn>> conns_;
    std::unordered_map<endpoint_id, std::uint32_t, id_hash> by_id_;
    std::vector<std::unique_ptr<sock>> socks_;
    std::vector<std::uint32_t> free_socks_;
    std::vector<std::uint32_t> dead_socks_;   ///< closed in this progress call: freed after it
    std::vector<std::uint32_t> timed_socks_;  ///< sockets with a deadline
    std::vector<std::uint32_t> timed_conns_;  ///< connections being set up
    std::vector<std::uint32_t> fail_due_;     ///< failures not reported yet
    std::uint32_t live_conns_ = 0;            ///< connections ready or being set up
    std::uint32_t skip_ = 0;                  ///< progress calls left before the next epoll check
    // Spinning (SPIN_CONNS): the ready sockets read with recv() alone, while
    // there are few of them; spin_n_ == 0: every check runs epoll_wait.
    std::uint32_t spin_[max_spin]{};
    std::uint32_t spin_n_ = 0;
    std::uint32_t epoll_due_ = 0;  ///< spinning checks left before the next epoll_wait
    bool spin_dirty_ = false;      ///< a socket became ready or closed: rebuild spin_
    bool in_poll_ = false;
    bool closing_ = false;
    epoll_event events_[max_events]{};
    stats stats_{};
};

// ------------------------------------------------------------------ set-up

tcp_iface::tcp_iface(const open_params &p, const config &cfg, std::vector<if_addr> mine)
    : cfg_(cfg), me_{p.node_id, p.pid, p.ep_id}, mine_(std::move(mine))
{
    attr_.caps = cap::am;
    attr_.max_short = cfg.max_short;
    attr_.max_bcopy = cfg.max_bcopy;
    attr_.max_hdr = std::min(max_hdr, cfg.max_bcopy);
    // One send is a system call, a message crosses two kernels' TCP stacks;
    // bandwidth as on a 10 Gb/s Ethernet link. Never cheaper than shm or verbs
    // for a peer they reach (docs/tcp.md, "Cost").
    attr_.cost = {.overhead_ns = 1500, .latency_ns = 15000, .bandwidth_mbps = 1000};
    ops_.send_short = &send_short;
    ops_.send_bcopy = &send_bcopy;
    ops_.progress = &progress;
    handlers_ = {&default_am, &default_peer_failed, &default_op_done, nullptr, nullptr, nullptr};
}

tcp_iface::~tcp_iface()
{
    closing_ = true;
    // Hand what is queued to the kernel (for a bounded time), then tell every
    // peer we are going (a bye frame, so that it logs nothing), then close.
    // Incoming bytes are read and dropped meanwhile: a peer blocked on a full
    // socket towards us must not keep us from flushing ours, and a socket
    // closed with unread bytes would reset instead of ending cleanly.
    const std::uint64_t end = now_us() + close_flush_us;
    for (std::uint32_t ci = 0; ci < conns_.size(); ++ci) {
        const conn &c = *conns_[ci];
        if (c.state == conn_state::ready && c.s != nullptr) {
            const frame_hdr bye{0, 0, static_cast<std::uint8_t>(frame_type::bye), 0, ci};
            const iovec iov{const_cast<frame_hdr *>(&bye), sizeof(bye)};
            c.s->tx.push(&iov, 1, 0, sizeof(bye));  // beyond TX_QUEUE if need be: the last one
        }
    }
    std::vector<pollfd> pfds;
    for (;;) {
        pfds.clear();
        for (auto &s : socks_) {
            if (s->state == sock_state::ready && !s->tx.empty()) {
                if (!flush(*s)) {
                    continue;
                }
                if (!s->tx.empty()) {
                    pfds.push_back({s->fd, POLLOUT | POLLIN, 0});
                }
            }
        }
        if (pfds.empty() || now_us() >= end) {
            break;
        }
        (void)::poll(pfds.data(), pfds.size(), 10);
        for (const pollfd &p : pfds) {
            if ((p.revents & POLLIN) != 0) {
                std::uint8_t junk[4096];
                while (recv(p.fd, junk, sizeof(junk), MSG_DONTWAIT) > 0) {
                }
            }
        }
    }
    for (auto &s : socks_) {
        if (s->fd >= 0) {
            if (s->state == sock_state::ready) {
                (void)shutdown(s->fd, SHUT_WR);
                std::uint8_t junk[4096];
                while (recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT) > 0) {
                }
            }
            ::close(s->fd);
            s->fd = -1;
        }
    }
    for (listener &l : listeners_) {
        ::close(l.fd);
    }
    if (epfd_ >= 0) {
        ::close(epfd_);
    }
}

void tcp_iface::tune(int fd) const
{
    const int one = 1;
    if (cfg_.nodelay) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (cfg_.sndbuf != 0) {
        const int v = static_cast<int>(std::min<std::size_t>(cfg_.sndbuf, INT32_MAX));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    }
    if (cfg_.rcvbuf != 0) {
        const int v = static_cast<int>(std::min<std::size_t>(cfg_.rcvbuf, INT32_MAX));
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
    }
    if (cfg_.keepalive != 0) {
        const int idle = static_cast<int>(std::max<std::uint64_t>(1, cfg_.keepalive / 1000000));
        const int intvl = std::max(1, idle / 3);
        const int cnt = 3;
        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
    if (cfg_.user_timeout != 0) {
        const auto ms =
            static_cast<unsigned>(std::min<std::uint64_t>(cfg_.user_timeout / 1000, UINT32_MAX));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
    }
    if (cfg_.busy_poll != 0) {
        const int us = static_cast<int>(cfg_.busy_poll);
        if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) != 0) {
            WEFT_LOG_RATE(tcp, info, 1, 0,
                          "WEFT_TCP_BUSY_POLL=%dus: SO_BUSY_POLL refused (%s; raising it needs "
                          "CAP_NET_ADMIN): sockets wait for interrupts",
                          us, std::strerror(errno));
        }
    }
}

status tcp_iface::init()
{
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) {
        WEFT_LOG(tcp, error, "epoll_create1 failed: %s", std::strerror(errno));
        return status::no_memory;
    }
    const unsigned lo = static_cast<unsigned>(cfg_.port_min);
    const unsigned hi = cfg_.port_max != 0 ? static_cast<unsigned>(cfg_.port_max) : lo;
    std::vector<if_addr> kept;
    for (const if_addr &a : mine_) {
        if (listeners_.size() == max_blob_addrs) {
            WEFT_LOG(tcp, info, "more than %u addresses selected: %s (%s) and later ones not used",
                     max_blob_addrs, cidr_text(a.addr).c_str(), a.name.c_str());
            break;
        }
        const int fd = socket(a.addr.family == 4 ? AF_INET : AF_INET6,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            WEFT_LOG(tcp, debug, "%s: socket failed: %s", a.name.c_str(), std::strerror(errno));
            continue;
        }
        const int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (a.addr.family == 6) {
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        }
        // Accepted sockets inherit the buffer sizes; set before listen() so that
        // the window scale of the handshake fits them.
        tune(fd);
        int err = 0;
        bool bound = false;
        for (unsigned port = lo; port <= hi && !bound; ++port) {
            sockaddr_storage ss;
            const socklen_t len = to_sockaddr(a.addr, static_cast<std::uint16_t>(port), ss);
            if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0) {
                bound = true;
            } else {
                err = errno;
            }
        }
        if (!bound || listen(fd, backlog) != 0) {
            if (bound) {
                err = errno;
            }
            WEFT_LOG(tcp, debug, "%s %s: cannot listen on a port in %u..%u: %s", a.name.c_str(),
                     ip_text(a.addr).c_str(), lo, hi, std::strerror(err));
            ::close(fd);
            continue;
        }
        sockaddr_storage ss{};
        socklen_t len = sizeof(ss);
        (void)getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
        const std::uint16_t port =
            ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&ss)->sin_port
                                          : reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = listener_tag | listeners_.size();
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
            WEFT_LOG(tcp, error, "epoll_ctl failed: %s", std::strerror(errno));
            ::close(fd);
            return status::no_memory;
        }
        listeners_.push_back({fd, a.addr, port});
        kept.push_back(a);
        WEFT_LOG(tcp, debug, "listening on %s (%s)", endpoint_text(a.addr, port).c_str(),
                 a.name.c_str());
    }
    if (listeners_.empty()) {
        WEFT_LOG(tcp, info, "no address to listen on (WEFT_TCP_IF=%s, ports %u..%u)",
                 cfg_.interfaces.c_str(), lo, hi);
        return status::no_device;
    }
    mine_ = std::move(kept);
    return status::ok;
}

status tcp_iface::pack_address(address_builder &b)
{
    ip_addr addrs[max_blob_addrs];
    std::uint8_t ports[2 * max_blob_addrs];
    unsigned n = 0;
    for (const listener &l : listeners_) {
        addrs[n] = l.addr;
        std::memcpy(ports + 2 * n, &l.port, 2);
        ++n;
    }
    std::uint8_t node[max_blob_node];
    const std::size_t node_len = encode_blob_node(addrs, n, node);
    const status st = b.add(wire_id, node, node_len, ports, 2 * std::size_t{n});
    if (my_addr_.empty() && st == status::ok) {
        my_addr_ = b.get();  // until set_local_address gives the whole one
    }
    return st;
}

bool tcp_iface::reachable(const address &peer) const noexcept
{
    peer_blob b;
    if (!find_blob(peer, b)) {
        return false;
    }
    if (peer.id() == me_) {
        return true;
    }
    return !dial_targets(b, peer.node_id() == me_.node_id, mine_).empty();
}

status tcp_iface::remote_address(src_id src, address &out) const
{
    if (src >= conns_.size()) {
        return status::no_entry;
    }
    out = conns_[src]->peer;
    return status::ok;
}

// ------------------------------------------------------------------ sockets

sock *tcp_iface::new_sock(int fd, sock_state st)
{
    std::uint32_t i;
    if (!free_socks_.empty()) {
        i = free_socks_.back();
        free_socks_.pop_back();
    } else {
        i = static_cast<std::uint32_t>(socks_.size());
        socks_.push_back(std::make_unique<sock>());
        socks_.back()->index = i;
    }
    sock &s = *socks_[i];
    s.fd = fd;
    s.state = st;
    ++s.gen;
    spin_dirty_ = true;  // a handshake under way: epoll until it is done
    s.want_out = st == sock_state::dialing;
    s.lo_rx = false;
    s.conn = invalid_id;
    s.deadline_us = 0;
    s.rx_start = s.rx_end = 0;
    s.lim = {};
    s.tx.set_limit(std::max(cfg_.tx_queue, cfg_.max_bcopy + sizeof(frame_hdr)));
    if (!grow_rx(s, hs_buf_size)) {
        free_socks_.push_back(i);
        ::close(fd);
        s.fd = -1;
        s.state = sock_state::closed;
        return nullptr;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (s.want_out ? EPOLLOUT : 0u);
    ev.data.u64 = std::uint64_t{s.gen & 0x7fffffffu} << 32 | i;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        WEFT_LOG(tcp, warn, "epoll_ctl(ADD) failed: %s", std::strerror(errno));
        free_socks_.push_back(i);
        ::close(fd);
        s.fd = -1;
        s.state = sock_state::closed;
        return nullptr;
    }
    return &s;
}

bool tcp_iface::grow_rx(sock &s, std::size_t size)
{
    if (s.rx_size >= size) {
        return true;
    }
    auto nb = std::make_unique_for_overwrite<std::uint8_t[]>(size);
    const std::size_t have = s.rx_end - s.rx_start;
    if (have != 0) {
        std::memcpy(nb.get(), s.rx.get() + s.rx_start, have);
    }
    s.rx = std::move(nb);
    s.rx_size = size;
    s.rx_start = 0;
    s.rx_end = have;
    return true;
}

void tcp_iface::close_sock(sock *s)
{
    if (s == nullptr || s->state == sock_state::closed) {
        return;
    }
    if (s->fd >= 0) {
        ::close(s->fd);  // also leaves the epoll set
        s->fd = -1;
    }
    s->state = sock_state::closed;
    dead_socks_.push_back(s->index);
    spin_dirty_ = true;
}

void tcp_iface::reap()
{
    // Freed only after the progress call that closed them: a later event of
    // the same epoll_wait batch may still name them (and finds them closed).
    for (std::uint32_t i : dead_socks_) {
        sock &s = *socks_[i];
        s.rx.reset();
        s.rx_size = 0;
        s.tx.release();
        s.conn = invalid_id;
        free_socks_.push_back(i);
    }
    dead_socks_.clear();
}

void tcp_iface::set_out(sock &s, bool on)
{
    if (s.want_out == on || s.fd < 0) {
        return;
    }
    s.want_out = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = std::uint64_t{s.gen & 0x7fffffffu} << 32 | s.index;
    (void)epoll_ctl(epfd_, EPOLL_CTL_MOD, s.fd, &ev);
}

// ------------------------------------------------------------------ send path

status tcp_iface::not_ready(const conn &c) noexcept
{
    if (c.state == conn_state::failed) {
        return status::unreachable;
    }
    ++stats_.tx_again;
    skip_ = 0;  // the connection is being made: poll on the next progress call
    return status::again;
}

status tcp_iface::send_short(iface *tl, conn_id ci, am_word am, const void *hdr,
                             std::size_t hdr_len, const void *payload, std::size_t len)
{
    auto *t = static_cast<tcp_iface *>(tl);
    if (ci >= t->conns_.size() || hdr_len + len > t->attr_.max_short) [[unlikely]] {
        return status::invalid;
    }
    if (t->conns_[ci]->state != conn_state::ready) [[unlikely]] {
        return t->not_ready(*t->conns_[ci]);
    }
    const frame_hdr h{static_cast<std::uint32_t>(hdr_len + len), am,
                      static_cast<std::uint8_t>(frame_type::am), 0, ci};
    const iovec iov[3] = {{const_cast<frame_hdr *>(&h), sizeof(h)},
                          {const_cast<void *>(hdr), hdr_len},
                          {const_cast<void *>(payload), len}};
    return t->send_frame(ci, iov, 3, sizeof(h) + hdr_len + len);
}

status tcp_iface::send_bcopy(iface *tl, conn_id ci, am_word am, const void *hdr,
                             std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                             std::size_t offset, std::size_t len)
{
    auto *t = static_cast<tcp_iface *>(tl);
    if (ci >= t->conns_.size() || hdr_len > t->attr_.max_hdr ||
        hdr_len + len > t->attr_.max_bcopy || iovcnt > max_gather - 2) [[unlikely]] {
        return status::invalid;
    }
    // The gather list: frame header, protocol header, then `len` bytes of the
    // caller's pieces from `offset` (which must hold them).
    frame_hdr h{static_cast<std::uint32_t>(hdr_len + len), am,
                static_cast<std::uint8_t>(frame_type::am), 0, ci};
    iovec g[max_gather];
    g[0] = {&h, sizeof(h)};
    g[1] = {const_cast<void *>(hdr), hdr_len};
    std::size_t n = 2;
    std::size_t skip = offset;
    std::size_t want = len;
    for (std::size_t i = 0; i < iovcnt && want > 0; ++i) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        const std::size_t k = std::min(iov[i].iov_len - skip, want);
        g[n++] = {static_cast<std::uint8_t *>(iov[i].iov_base) + skip, k};
        skip = 0;
        want -= k;
    }
    if (want != 0) [[unlikely]] {
        return status::invalid;  // the iovec holds fewer bytes than asked for
    }
    if (t->conns_[ci]->state != conn_state::ready) [[unlikely]] {
        return t->not_ready(*t->conns_[ci]);
    }
    return t->send_frame(ci, g, n, sizeof(h) + hdr_len + len);
}

status tcp_iface::send_frame(std::uint32_t ci, const iovec *iov, std::size_t n, std::size_t total)
{
    sock &s = *conns_[ci]->s;
    if (!s.tx.empty()) [[unlikely]] {
        // Frames are waiting: this one goes behind them, in order.
        if (s.tx.room() < total && !flush(s)) {
            return status::unreachable;  // the connection broke
        }
        if (!s.tx.empty()) {
            if (s.tx.room() < total) {
                ++stats_.tx_again;
                return status::again;
            }
            s.tx.push(iov, n, 0, total);
            return status::ok;
        }
        // flush() emptied the queue: straight to the socket.
    }
    msghdr mh{};
    mh.msg_iov = const_cast<iovec *>(iov);
    mh.msg_iovlen = n;
    ssize_t w;
    do {
        w = sendmsg(s.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (w < 0 && errno == EINTR);
    if (static_cast<std::size_t>(w) == total) [[likely]] {
        return status::ok;
    }
    if (w < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            connection_lost(s, std::strerror(errno), true);
            return status::unreachable;
        }
        w = 0;
    }
    // The socket took part of it (or nothing): the rest waits for EPOLLOUT. An
    // empty queue always has room for one frame (its limit is at least one).
    s.tx.push(iov, n, static_cast<std::size_t>(w), total - static_cast<std::size_t>(w));
    set_out(s, true);
    ++stats_.tx_queued;
    return status::ok;
}

bool tcp_iface::flush(sock &s)
{
    while (!s.tx.empty()) {
        iovec parts[2];
        const unsigned n = s.tx.peek(parts);
        msghdr mh{};
        mh.msg_iov = parts;
        mh.msg_iovlen = n;
        const ssize_t w = sendmsg(s.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                set_out(s, true);
                return true;
            }
            if (!closing_) {
                connection_lost(s, std::strerror(errno), true);
            }
            return false;
        }
        s.tx.consume(static_cast<std::size_t>(w));
    }
    set_out(s, false);
    return true;
}

void tcp_iface::send_handshake(sock &s, hs_type type, reject_reason why, std::uint32_t src_conn,
                               const endpoint_id &to)
{
    handshake m{};
    m.magic = hs_magic;
    m.version = hs_version;
    m.type = static_cast<std::uint8_t>(type);
    m.reason = static_cast<std::uint8_t>(why);
    m.src_conn = src_conn;
    m.max_body = type == hs_type::reject ? 0 : static_cast<std::uint32_t>(attr_.max_bcopy);
    m.src_node_id = me_.node_id;
    m.src_pid = me_.pid;
    m.src_ep_id = me_.ep_id;
    m.dst_node_id = to.node_id;
    m.dst_pid = to.pid;
    m.dst_ep_id = to.ep_id;
    const bool hello = type == hs_type::hello;
    m.addr_len = hello ? static_cast<std::uint16_t>(my_addr_.size()) : 0;
    const iovec iov[2] = {
        {&m, sizeof(m)},
        {const_cast<std::uint8_t *>(my_addr_.data()), hello ? my_addr_.size() : 0}};
    // A new socket's buffer is empty: this goes out at once (no queue memory
    // for it); what it did not take waits for EPOLLOUT.
    const std::size_t total = sizeof(m) + iov[1].iov_len;
    msghdr mh{};
    mh.msg_iov = const_cast<iovec *>(iov);
    mh.msg_iovlen = 2;
    ssize_t w;
    do {
        w = sendmsg(s.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (w < 0 && errno == EINTR);
    if (static_cast<std::size_t>(w) == total) {
        return;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        connection_lost(s, std::strerror(errno), true);
        return;
    }
    const std::size_t sent = w < 0 ? 0 : static_cast<std::size_t>(w);
    s.tx.push(iov, 2, sent, total - sent);
    set_out(s, true);
}

// ------------------------------------------------------------------ connections

std::uint32_t tcp_iface::new_conn(const address &peer)
{
    const auto ci = static_cast<std::uint32_t>(conns_.size());
    conns_.push_back(std::make_unique<conn>());
    conn &c = *conns_.back();
    c.peer = peer;
    c.id = peer.id();
    by_id_[c.id] = ci;
    ++live_conns_;
    return ci;
}

status tcp_iface::connect(const address &peer, conn_id &out)
{
    peer_blob b;
    if (!find_blob(peer, b)) {
        return status::unreachable;
    }
    if (auto it = by_id_.find(peer.id()); it != by_id_.end()) {
        out = it->second;
        return conns_[it->second]->state == conn_state::failed ? status::unreachable : status::ok;
    }
    std::vector<dial_target> targets =
        dial_targets(b, peer.node_id() == me_.node_id || peer.id() == me_, mine_);
    if (targets.empty()) {
        return status::unreachable;
    }
    const std::uint32_t ci = new_conn(peer);
    conn &c = *conns_[ci];
    c.targets = std::move(targets);
    c.deadline_us = now_us() + cfg_.connect_timeout;
    timed_conns_.push_back(ci);
    ++stats_.connects_started;
    WEFT_LOG(tcp, debug, "connecting to pid %u endpoint %u (conn %u, %zu addresses)", peer.pid(),
             peer.ep_id(), ci, c.targets.size());
    dial_next(ci);
    skip_ = 0;
    out = ci;
    return status::ok;
}

void tcp_iface::dial_next(std::uint32_t ci)
{
    conn &c = *conns_[ci];
    while (c.next_target < c.targets.size()) {
        const dial_target t = c.targets[c.next_target++];
        const int fd = socket(t.to.addr.family == 4 ? AF_INET : AF_INET6,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            c.tried += " " + endpoint_text(t.to.addr, t.to.port) +
                       " (socket: " + std::strerror(errno) + ")";
            continue;
        }
        tune(fd);
        if (t.from.family != 0) {
            // The local address in the peer's subnet: leave by the selected interface.
            sockaddr_storage ss;
            const socklen_t len = to_sockaddr(t.from, 0, ss);
            if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
                WEFT_LOG(tcp, debug, "binding to %s before connecting failed: %s",
                         ip_text(t.from).c_str(), std::strerror(errno));
            }
        }
        sockaddr_storage ss;
        const socklen_t len = to_sockaddr(t.to.addr, t.to.port, ss);
        int rc;
        do {
            rc = ::connect(fd, reinterpret_cast<sockaddr *>(&ss), len);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0 && errno != EINPROGRESS) {
            ++stats_.dial_failures;
            c.tried +=
                " " + endpoint_text(t.to.addr, t.to.port) + " (" + std::strerror(errno) + ")";
            ::close(fd);
            continue;
        }
        sock *s = new_sock(fd, sock_state::dialing);
        if (s == nullptr) {
            c.tried += " (no socket slot)";
            continue;
        }
        s->conn = ci;
        s->target = t;
        // Each remaining address gets an equal share of the time left.
        const std::uint64_t now = now_us();
        const std::uint64_t left = c.deadline_us > now ? c.deadline_us - now : 0;
        const std::size_t remaining = c.targets.size() - c.next_target + 1;
        s->deadline_us = now + left / remaining;
        timed_socks_.push_back(s->index);
        c.dial = s;
        if (rc == 0) {
            dial_connected(*s);
        }
        return;
    }
    const std::string why = "no address of the peer answered:" + c.tried;
    fail_conn(ci, why.c_str(), true);
}

void tcp_iface::dial_connected(sock &s)
{
    s.state = sock_state::hello_sent;
    set_out(s, false);
    conn &c = *conns_[s.conn];
    // The peer's kernel took the connection: a process holds that listening
    // socket. Its answer needs its progress, which may be a long computation
    // away, so from here there is no deadline: a peer that dies resets the
    // socket, and a host that vanishes fails keepalive or TCP_USER_TIMEOUT
    // (tune()). Without keepalive nothing would notice that host, so the
    // deadline stays. A refusal, or a socket that breaks, arms the connection's
    // deadline again (dial_failed, on_reply).
    if (cfg_.keepalive != 0) {
        s.deadline_us = 0;
        c.deadline_us = 0;
    }
    send_handshake(s, hs_type::hello, reject_reason::none, s.conn, c.id);
    WEFT_LOG(tcp, debug, "connected to %s for pid %u endpoint %u; hello sent",
             endpoint_text(s.target.to.addr, s.target.to.port).c_str(), c.id.pid, c.id.ep_id);
}

bool tcp_iface::connected_now(const sock &s) const noexcept
{
    pollfd p{s.fd, POLLOUT, 0};
    if (::poll(&p, 1, 0) != 1 || (p.revents & (POLLERR | POLLHUP)) != 0) {
        return false;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    return getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

void tcp_iface::dial_failed(sock &s, const char *why)
{
    const std::uint32_t ci = s.conn;
    conn &c = *conns_[ci];
    ++stats_.dial_failures;
    c.tried += " " + endpoint_text(s.target.to.addr, s.target.to.port) + " (" + why + ")";
    const bool ours = c.dial == &s;
    close_sock(&s);
    if (ours) {
        c.dial = nullptr;
        if (c.state == conn_state::connecting) {
            arm_deadline(ci);  // it had none once connected: the next address gets one
            dial_next(ci);
        }
    }
}

void tcp_iface::arm_deadline(std::uint32_t ci)
{
    conn &c = *conns_[ci];
    if (c.deadline_us == 0) {
        c.deadline_us = now_us() + cfg_.connect_timeout;
        timed_conns_.push_back(ci);
    }
}

void tcp_iface::bind_ready(std::uint32_t ci, sock &s, const handshake &m)
{
    conn &c = *conns_[ci];
    s.conn = ci;
    s.lim = {m.max_body, m.src_conn};
    // Room for the peer's largest frame only once a frame larger than this comes
    // (consume_frames): a connection that carries small messages keeps 64 KiB.
    (void)grow_rx(s, rx_min_size);
    s.state = sock_state::ready;
    s.deadline_us = 0;
    c.s = &s;
    c.state = conn_state::ready;
    spin_dirty_ = true;
}

void tcp_iface::on_hello(sock &s, const hs_parsed &p)
{
    const endpoint_id src = p.src.id();
    const auto it = by_id_.find(src);
    if (closing_) {
        refuse(s, reject_reason::closing, src);
        return;
    }
    if (src == me_) {
        // Our own connection to ourselves: this end receives its frames.
        if (it == by_id_.end() || conns_[it->second]->state != conn_state::connecting ||
            conns_[it->second]->dial == nullptr || conns_[it->second]->lo != nullptr ||
            p.m.src_conn != it->second) {
            refuse(s, reject_reason::duplicate, src);
            return;
        }
        conn &c = *conns_[it->second];
        s.conn = it->second;
        s.lo_rx = true;
        s.lim = {p.m.max_body, p.m.src_conn};
        (void)grow_rx(s, rx_min_size);
        s.state = sock_state::ready;
        s.deadline_us = 0;
        c.lo = &s;
        spin_dirty_ = true;
        send_handshake(s, hs_type::accept, reject_reason::none, it->second, src);
        return;
    }
    std::uint32_t ci;
    if (it == by_id_.end()) {
        ci = new_conn(p.src);
    } else {
        ci = it->second;
        conn &c = *conns_[ci];
        if (c.state != conn_state::connecting) {
            // Ready (a crossed attempt of the peer that lost, arriving late) or
            // failed (no second connection): refused; the peer does not use it.
            ++stats_.handshakes_refused;
            WEFT_LOG(tcp, debug, "refused a second connection from pid %u endpoint %u (conn %u %s)",
                     src.pid, src.ep_id, ci, c.state == conn_state::ready ? "ready" : "failed");
            refuse(s, reject_reason::duplicate, src);
            return;
        }
        if (c.dial != nullptr) {
            // Both sides connected at once. The smaller endpoint id keeps its
            // own connection if its hello has left whole: the larger drops its
            // attempt and takes that one. So a refusal as crossed always means
            // the refuser's hello is on the wire, and the larger side's wait
            // for it needs its own progress only, never the refuser's (which
            // may compute right after this call). An attempt whose hello has
            // not left is dropped, whichever side: this connection is taken.
            const bool hello_out = c.dial->state == sock_state::hello_sent && c.dial->tx.empty();
            if (hello_out && id_less(me_, src)) {
                ++stats_.crossed_kept;
                WEFT_LOG(tcp, debug,
                         "simultaneous connect with pid %u endpoint %u: keeping ours (conn %u)",
                         src.pid, src.ep_id, ci);
                refuse(s, reject_reason::crossed, src);
                return;
            }
            ++stats_.crossed_yielded;
            WEFT_LOG(tcp, debug,
                     "simultaneous connect with pid %u endpoint %u: taking theirs (conn %u)",
                     src.pid, src.ep_id, ci);
            close_sock(c.dial);
            c.dial = nullptr;
        } else {
            // Our attempt was refused as crossed: this is the connection it announced.
            ++stats_.crossed_yielded;
        }
        c.peer = p.src;
    }
    ++stats_.connects_accepted;
    bind_ready(ci, s, p.m);
    send_handshake(s, hs_type::accept, reject_reason::none, ci, src);
    WEFT_LOG(tcp, debug, "accepted a connection from pid %u endpoint %u (conn %u)", src.pid,
             src.ep_id, ci);
}

void tcp_iface::on_reply(sock &s, const hs_parsed &p)
{
    const std::uint32_t ci = s.conn;
    conn &c = *conns_[ci];
    const endpoint_id from{p.m.src_node_id, p.m.src_pid, p.m.src_ep_id};
    if (c.dial != &s || c.state != conn_state::connecting) {
        close_sock(&s);  // an attempt we gave up already
        return;
    }
    if (!(from == c.id)) {
        dial_failed(s, "answered by another endpoint");
        return;
    }
    if (p.m.type == static_cast<std::uint8_t>(hs_type::accept)) {
        c.dial = nullptr;
        bind_ready(ci, s, p.m);
        WEFT_LOG(tcp, debug, "connected to pid %u endpoint %u (conn %u)", c.id.pid, c.id.ep_id, ci);
        return;
    }
    switch (static_cast<reject_reason>(p.m.reason)) {
        case reject_reason::crossed:
            // The peer's own connection wins: its hello left before this
            // refusal (on_hello), so our listener gets it with our progress
            // alone. The deadline guards a network that breaks meanwhile.
            c.dial = nullptr;
            close_sock(&s);
            arm_deadline(ci);
            WEFT_LOG(tcp, debug, "pid %u endpoint %u keeps its own connection: waiting for it",
                     c.id.pid, c.id.ep_id);
            return;
        case reject_reason::not_for_me:
            dial_failed(s, "another endpoint listens there now");
            return;
        case reject_reason::version:
            WEFT_LOG_RATE(tcp, error, 4, 1024,
                          "pid %u endpoint %u speaks another tcp handshake version (this one "
                          "%u): refused",
                          c.id.pid, c.id.ep_id, hs_version);
            fail_conn(ci, "handshake version differs", false);
            return;
        case reject_reason::closing:
            fail_conn(ci, "the peer is closing", false);
            return;
        default:
            fail_conn(ci, "the peer refused the connection", true);
            return;
    }
}

void tcp_iface::refuse(sock &s, reject_reason why, const endpoint_id &to)
{
    // Tell the dialler, then let it close first: closing here with bytes in
    // flight would reset the connection and could lose the answer.
    send_handshake(s, hs_type::reject, why, invalid_id, to);
    if (s.state == sock_state::closed) {
        return;  // it broke meanwhile
    }
    s.state = sock_state::lingering;
    s.rx_start = s.rx_end = 0;
    s.deadline_us = now_us() + cfg_.connect_timeout;
    timed_socks_.push_back(s.index);
}

void tcp_iface::stranger(sock &s, hs_result r)
{
    ++stats_.handshakes_refused;
    switch (r) {
        case hs_result::bad_version:
            WEFT_LOG_RATE(tcp, error, 4, 1024,
                          "a connection from %s speaks another tcp handshake version (this one "
                          "%u): refused",
                          peer_text(s.fd).c_str(), hs_version);
            send_handshake(s, hs_type::reject, reject_reason::version, invalid_id, {});
            close_sock(&s);
            return;
        case hs_result::not_for_me:
            // A stale address: an endpoint that listened on this port before.
            WEFT_LOG(tcp, debug, "a connection from %s is for another endpoint: refused",
                     peer_text(s.fd).c_str());
            {
                handshake m;
                std::memcpy(&m, s.rx.get() + s.rx_start, sizeof(m));
                refuse(s, reject_reason::not_for_me, {m.src_node_id, m.src_pid, m.src_ep_id});
            }
            return;
        default:
            ++stats_.malformed;
            WEFT_LOG_RATE(tcp, warn, 8, 1024,
                          "a connection from %s is not a weft tcp connection (%s): closed",
                          peer_text(s.fd).c_str(),
                          r == hs_result::bad_magic     ? "bad magic"
                          : r == hs_result::bad_type    ? "unexpected handshake type"
                          : r == hs_result::bad_address ? "malformed address"
                                                        : "malformed handshake");
            close_sock(&s);
            return;
    }
}

void tcp_iface::fail_conn(std::uint32_t ci, const char *why, bool warn)
{
    conn &c = *conns_[ci];
    if (c.state == conn_state::failed) {
        return;
    }
    c.state = conn_state::failed;
    --live_conns_;
    ++stats_.conns_failed;
    if (!closing_) {
        if (warn) {
            WEFT_LOG(tcp, warn, "connection to pid %u endpoint %u failed: %s", c.id.pid, c.id.ep_id,
                     why);
        } else {
            WEFT_LOG(tcp, debug, "connection to pid %u endpoint %u ended: %s", c.id.pid, c.id.ep_id,
                     why);
        }
    }
    close_sock(c.s);
    close_sock(c.lo);
    close_sock(c.dial);
    c.s = c.lo = c.dial = nullptr;
    c.targets.clear();
    c.targets.shrink_to_fit();
    if (!c.reported) {
        c.reported = true;
        fail_due_.push_back(ci);
    }
    skip_ = 0;  // report it from the next progress call
}

void tcp_iface::connection_lost(sock &s, const char *why, bool warn)
{
    if (s.conn == invalid_id || s.state == sock_state::closed) {
        close_sock(&s);
        return;
    }
    if (s.state == sock_state::dialing || s.state == sock_state::hello_sent) {
        dial_failed(s, why);
        return;
    }
    const std::uint32_t ci = s.conn;
    conn &c = *conns_[ci];
    if (c.s != &s && c.lo != &s) {
        close_sock(&s);
        return;
    }
    fail_conn(ci, why, warn);
}

void tcp_iface::malformed(sock &s, const char *what, std::uint64_t value)
{
    ++stats_.malformed;
    const conn &c = *conns_[s.conn];
    char why[160];
    std::snprintf(why, sizeof(why), "malformed frame: %s %llu (limit %u bytes, source %u)", what,
                  static_cast<unsigned long long>(value), s.lim.max_body, s.lim.src);
    WEFT_LOG_RATE(tcp, warn, 16, 1024, "pid %u endpoint %u sent a %s: connection closed", c.id.pid,
                  c.id.ep_id, why);
    fail_conn(s.conn, why, false);  // logged here, with what was wrong
}

// ------------------------------------------------------------------ progress

unsigned tcp_iface::progress(iface *tl)
{
    auto *t = static_cast<tcp_iface *>(tl);
    if (t->skip_ != 0) [[likely]] {
        --t->skip_;
        return 0;
    }
    return t->poll();
}

unsigned tcp_iface::poll()
{
    if (in_poll_) {
        return 0;  // a handler drove progress: the outer call continues
    }
    if (spin_dirty_) [[unlikely]] {
        rebuild_spin();
    }
    if (spin_n_ != 0 && epoll_due_ != 0) {
        return spin();
    }
    in_poll_ = true;
    epoll_due_ = spin_epoll_every;
    unsigned n = 0;
    int k;
    do {
        k = epoll_wait(epfd_, events_, max_events, 0);
    } while (k < 0 && errno == EINTR);
    for (int i = 0; i < k; ++i) {
        const std::uint64_t d = events_[i].data.u64;
        if ((d & listener_tag) != 0) {
            n += on_listener(static_cast<std::size_t>(d & ~listener_tag));
            continue;
        }
        const auto idx = static_cast<std::uint32_t>(d);
        const auto gen = static_cast<std::uint32_t>(d >> 32);
        if (idx >= socks_.size()) {
            continue;
        }
        sock &s = *socks_[idx];
        if ((s.gen & 0x7fffffffu) != gen || s.state == sock_state::closed) {
            continue;  // closed earlier in this batch
        }
        n += on_event(s, events_[i].events);
    }
    if (!timed_socks_.empty() || !timed_conns_.empty()) {
        check_timers();
    }
    n += report_failures();
    reap();
    in_poll_ = false;
    if (k > 0 || !timed_conns_.empty() || !fail_due_.empty()) {
        skip_ = 0;
    } else {
        skip_ = static_cast<std::uint32_t>(cfg_.poll_interval * (live_conns_ != 0 ? 1 : 64));
    }
    return n;
}

unsigned tcp_iface::spin()
{
    // A few ready connections and nothing else under way: read them with
    // recv() directly. An epoll_wait that finds data is followed by a recv
    // anyway, so this saves one system call per message received; a socket
    // with nothing costs one recv (EAGAIN) instead of its share of one
    // epoll_wait, hence the small SPIN_CONNS.
    in_poll_ = true;
    --epoll_due_;
    unsigned n = 0;
    bool partial = false;  // a frame is arriving: its rest comes soon, do not skip checks
    for (std::uint32_t i = 0; i < spin_n_; ++i) {
        sock &s = *socks_[spin_[i]];
        if (s.state != sock_state::ready || s.want_out) [[unlikely]] {
            epoll_due_ = 0;  // closed meanwhile, or waiting to write: epoll next time
            continue;
        }
        n += read_sock(s);
        partial |= s.rx_end != s.rx_start;
    }
    n += report_failures();
    reap();
    in_poll_ = false;
    skip_ = n != 0 || partial ? 0 : static_cast<std::uint32_t>(cfg_.poll_interval);
    return n;
}

void tcp_iface::rebuild_spin()
{
    ++stats_.spin_rebuilds;
    spin_dirty_ = false;
    spin_n_ = 0;
    stats_.spinning = 0;
    epoll_due_ = 0;
    std::uint32_t k = 0;
    bool handshaking = false;
    for (const auto &sp : socks_) {
        if (sp->state != sock_state::ready) {
            handshaking |=
                sp->state == sock_state::hello_sent || sp->state == sock_state::accepting;
            continue;
        }
        if (k == cfg_.spin_conns) {
            return;  // too many: epoll
        }
        spin_[k++] = sp->index;
    }
    // Handshakes under way need epoll (and their deadlines): spin once they are
    // done. A timed list empties without a socket changing state, so look again
    // on the next poll; a socket leaving hello_sent or accepting sets spin_dirty_
    // itself (bind_ready, close_sock), so an untimed handshake (a busy peer, a
    // silent stranger) costs no scan per poll.
    if (!timed_socks_.empty() || !timed_conns_.empty()) {
        spin_dirty_ = k != 0;
        return;
    }
    if (handshaking) {
        return;
    }
    spin_n_ = k;
    stats_.spinning = k;
}

unsigned tcp_iface::on_listener(std::size_t li)
{
    if (li >= listeners_.size()) {
        return 0;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < accept_batch; ++i) {
        const int fd = accept4(listeners_[li].fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                WEFT_LOG_RATE(tcp, warn, 4, 1024, "accept failed: %s", std::strerror(errno));
            }
            break;
        }
        // Buffer sizes were inherited from the listener; the rest is per socket.
        tune(fd);
        // No deadline for the hello: the dialler sends it from its progress,
        // which may be a long computation away (an MPI_Isend, then work). A
        // dialler that dies or closes closes this socket; one whose host
        // vanishes fails keepalive. A stranger that connects and stays silent
        // holds one socket until it closes (docs/tcp.md, "Connections").
        if (new_sock(fd, sock_state::accepting) == nullptr) {
            continue;
        }
        ++n;
    }
    return n;
}

unsigned tcp_iface::on_event(sock &s, std::uint32_t events)
{
    if (s.state == sock_state::dialing) {
        if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
            int err = 0;
            socklen_t len = sizeof(err);
            (void)getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0 && (events & (EPOLLERR | EPOLLHUP)) == 0) {
                dial_connected(s);
            } else {
                dial_failed(s, std::strerror(err != 0 ? err : ECONNREFUSED));
            }
            return 1;
        }
        return 0;
    }
    unsigned n = 0;
    if ((events & EPOLLOUT) != 0 && !s.tx.empty()) {
        if (!flush(s)) {
            return 1;
        }
    }
    if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) != 0) {
        n += read_sock(s);
    }
    return n;
}

unsigned tcp_iface::read_sock(sock &s)
{
    unsigned n = 0;
    for (unsigned round = 0; round < rx_budget && s.state != sock_state::closed; ++round) {
        if (s.rx_end == s.rx_size) {
            if (s.rx_start == 0) {
                // A full buffer without one whole message: only a handshake can
                // be this long, and it is not (consume() refused it already).
                if (s.conn != invalid_id && s.state == sock_state::ready) {
                    malformed(s, "unterminated frame of", s.rx_end);
                } else {
                    close_sock(&s);
                }
                return n;
            }
            std::memmove(s.rx.get(), s.rx.get() + s.rx_start, s.rx_end - s.rx_start);
            s.rx_end -= s.rx_start;
            s.rx_start = 0;
        }
        const std::size_t want = s.rx_size - s.rx_end;
        const ssize_t r = recv(s.fd, s.rx.get() + s.rx_end, want, MSG_DONTWAIT);
        if (r > 0) {
            if (s.state == sock_state::lingering) {
                continue;  // refused: its bytes are dropped until it closes
            }
            s.rx_end += static_cast<std::size_t>(r);
            n += consume(s);
            if (static_cast<std::size_t>(r) < want) {
                break;  // drained for now: epoll says when more arrives
            }
            continue;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        // End of stream or an error.
        const int err = r == 0 ? 0 : errno;
        ++n;
        if (s.state == sock_state::ready) {
            char why[96];
            if (err != 0) {
                std::snprintf(why, sizeof(why), "%s", std::strerror(err));
            } else if (s.rx_end != s.rx_start) {
                std::snprintf(why, sizeof(why), "closed in the middle of a frame (%zu bytes of it)",
                              s.rx_end - s.rx_start);
            } else {
                std::snprintf(why, sizeof(why), "closed by the peer without a goodbye");
            }
            connection_lost(s, why, true);
        } else if (s.state == sock_state::dialing || s.state == sock_state::hello_sent) {
            dial_failed(s, err != 0 ? std::strerror(err) : "closed before answering");
        } else {
            close_sock(&s);  // accepting or lingering: nothing was promised
        }
        break;
    }
    return n;
}

unsigned tcp_iface::consume(sock &s)
{
    if (s.state == sock_state::accepting || s.state == sock_state::hello_sent) {
        hs_parsed p;
        std::size_t used = 0;
        const bool want_hello = s.state == sock_state::accepting;
        const hs_result r = parse_handshake(s.rx.get() + s.rx_start, s.rx_end - s.rx_start,
                                            want_hello, me_, p, used);
        if (r == hs_result::need_more) {
            return 0;
        }
        if (r != hs_result::ok) {
            if (want_hello) {
                stranger(s, r);
            } else {
                ++stats_.malformed;
                dial_failed(s, "malformed handshake answer");
            }
            return 1;
        }
        s.rx_start += used;
        if (want_hello) {
            on_hello(s, p);
        } else {
            on_reply(s, p);
        }
        if (s.state != sock_state::ready) {
            return 1;
        }
        return 1 + consume_frames(s);
    }
    if (s.state == sock_state::ready) {
        return consume_frames(s);
    }
    return 0;
}

unsigned tcp_iface::consume_frames(sock &s)
{
    unsigned n = 0;
    const std::uint32_t ci = s.conn;
    for (;;) {
        frame_hdr h;
        const std::size_t avail = s.rx_end - s.rx_start;
        const frame_result r = parse_frame(s.rx.get() + s.rx_start, avail, s.lim, h);
        if (r == frame_result::need_more) {
            if (avail >= sizeof(frame_hdr) && sizeof(frame_hdr) + h.len > s.rx_size) {
                // Larger than the buffer (within the peer's announced limit, which
                // parse_frame checked): room for the largest frame the peer sends,
                // from now on. Connections that never see one keep rx_min_size.
                (void)grow_rx(s, sizeof(frame_hdr) + s.lim.max_body);
                ++stats_.rx_grown;
            } else if (avail >= sizeof(frame_hdr) &&
                       s.rx_start + sizeof(frame_hdr) + h.len > s.rx_size) {
                // A frame that cannot end in the buffer from here: move it to the
                // front now, so that the next read takes as much as possible.
                std::memmove(s.rx.get(), s.rx.get() + s.rx_start, avail);
                s.rx_start = 0;
                s.rx_end = avail;
            }
            break;
        }
        switch (r) {
            case frame_result::bad_type:
                malformed(s, "unknown type", h.type | std::uint32_t{h.flags} << 8);
                return n;
            case frame_result::bad_length:
                malformed(s, "length", h.len);
                return n;
            case frame_result::bad_source:
                malformed(s, "source", h.src);
                return n;
            default:
                break;
        }
        const std::uint8_t *body = s.rx.get() + s.rx_start + sizeof(frame_hdr);
        s.rx_start += sizeof(frame_hdr) + h.len;
        if (h.type == static_cast<std::uint8_t>(frame_type::bye)) {
            ++stats_.byes;
            fail_conn(ci, "the peer closed its endpoint", false);
            return n + 1;
        }
        ++n;
        handlers_.am(handlers_.arg, ci, h.am, body, h.len);
        if (s.state != sock_state::ready) {
            return n;  // the handler's send found the connection broken
        }
    }
    if (s.rx_start == s.rx_end) {
        s.rx_start = s.rx_end = 0;
    }
    return n;
}

void tcp_iface::check_timers()
{
    const std::uint64_t now = now_us();
    for (std::size_t i = 0; i < timed_socks_.size();) {
        sock &s = *socks_[timed_socks_[i]];
        // Only a connect() under way and a refused socket lingering have one:
        // a connected handshake waits for the peer's progress (dial_connected).
        const bool waiting = s.state == sock_state::dialing || s.state == sock_state::lingering;
        if (!waiting || s.deadline_us == 0) {
            timed_socks_[i] = timed_socks_.back();
            timed_socks_.pop_back();
            continue;
        }
        if (now >= s.deadline_us) {
            if (s.state == sock_state::dialing && connected_now(s)) {
                // Connected while this process computed: its EPOLLOUT was not in
                // this poll's batch (more than max_events were ready).
                dial_connected(s);
            } else if (s.state == sock_state::dialing) {
                dial_failed(s, "connect timed out");
            } else {
                close_sock(&s);
            }
            continue;  // removed on the next pass (closed)
        }
        ++i;
    }
    for (std::size_t i = 0; i < timed_conns_.size();) {
        const std::uint32_t ci = timed_conns_[i];
        conn &c = *conns_[ci];
        if (c.state != conn_state::connecting || c.deadline_us == 0) {
            timed_conns_[i] = timed_conns_.back();
            timed_conns_.pop_back();
            continue;
        }
        if (now >= c.deadline_us) {
            std::string why = "not up after WEFT_TCP_CONNECT_TIMEOUT";
            if (!c.tried.empty()) {
                why += "; tried" + c.tried;
            }
            fail_conn(ci, why.c_str(), true);
            continue;
        }
        ++i;
    }
}

unsigned tcp_iface::report_failures()
{
    if (fail_due_.empty()) {
        return 0;
    }
    // The upcall may connect to other peers or send: work on a copy.
    std::vector<std::uint32_t> due;
    due.swap(fail_due_);
    for (std::uint32_t ci : due) {
        handlers_.peer_failed(handlers_.arg, ci, ci, status::unreachable);
    }
    return static_cast<unsigned>(due.size());
}

// ------------------------------------------------------------------ the component

struct checked_config {
    config cfg;
    if_spec spec;
};

/// Load and check the table: invalid (logged, naming the variable) when the
/// values do not work together.
status load_config(const base::config_store &store, checked_config &out)
{
    store.load(config_table_v, &out.cfg);
    const config &c = out.cfg;
    std::string error;
    if (parse_if_spec(c.interfaces, out.spec, error) != status::ok) {
        WEFT_LOG(tcp, error, "WEFT_TCP_IF=%s: %s", c.interfaces.c_str(), error.c_str());
        return status::invalid;
    }
    if (c.port_max != 0 && c.port_max < c.port_min) {
        WEFT_LOG(tcp, error, "WEFT_TCP_PORT_MAX=%llu is below WEFT_TCP_PORT_MIN=%llu",
                 static_cast<unsigned long long>(c.port_max),
                 static_cast<unsigned long long>(c.port_min));
        return status::invalid;
    }
    if (c.max_short > c.max_bcopy) {
        WEFT_LOG(tcp, error, "WEFT_TCP_MAX_SHORT=%zu is above WEFT_TCP_MAX_BCOPY=%zu", c.max_short,
                 c.max_bcopy);
        return status::invalid;
    }
    return status::ok;
}

std::vector<resource> query(const base::config_store &store, std::string &why)
{
    checked_config cc;
    if (load_config(store, cc) != status::ok) {
        why = "invalid WEFT_TCP_* settings (logged)";
        return {};
    }
    const std::vector<if_addr> all = local_addresses();
    std::vector<if_addr> picked = select_addresses(cc.spec, all);
    std::vector<std::string> places;
    if (base::topo_enabled(store)) {
        picked = nearest_first(std::move(picked), base::topology::machine(), base::caller_cpus(),
                               &places);
    }
    if (picked.empty()) {
        why = "no interface is up that WEFT_TCP_IF=" + cc.cfg.interfaces + " selects";
        return {};
    }
    std::string names;
    std::string detail;
    for (std::size_t i = 0; i < picked.size() && i < max_blob_addrs; ++i) {
        const if_addr &a = picked[i];
        if (("," + names + ",").find("," + a.name + ",") == std::string::npos) {
            names += names.empty() ? a.name : "," + a.name;
        }
        detail += (detail.empty() ? "" : " ") + cidr_text(a.addr);
    }
    if (picked.size() > max_blob_addrs) {
        detail += " (" + std::to_string(picked.size() - max_blob_addrs) + " more not used)";
    }
    for (const std::string &p : places) {
        detail += "; " + p;
    }
    return {{names, detail}};
}

base::result<std::unique_ptr<memory_domain>> open_md(const base::config_store &store,
                                                     const resource &res)
{
    (void)store;
    (void)res;
    return std::unique_ptr<memory_domain>(std::make_unique<tcp_md>());
}

base::result<std::unique_ptr<iface>> open(const open_params &p, const resource &res,
                                          memory_domain &md, const base::config_store &store)
{
    (void)res;
    (void)md;
    checked_config cc;
    if (const status st = load_config(store, cc); st != status::ok) {
        return st;
    }
    std::vector<if_addr> picked = select_addresses(cc.spec, local_addresses());
    if (base::topo_enabled(store)) {
        // The nearest interfaces first: they are the ones advertised when
        // there are more than fit, and the ones peers dial first.
        picked = nearest_first(std::move(picked), base::topology::machine(), base::caller_cpus());
    }
    if (picked.empty()) {
        WEFT_LOG(tcp, info, "no interface is up that WEFT_TCP_IF=%s selects",
                 cc.cfg.interfaces.c_str());
        return status::no_device;
    }
    auto t = std::make_unique<tcp_iface>(p, cc.cfg, std::move(picked));
    if (const status st = t->init(); st != status::ok) {
        return st;
    }
    return std::unique_ptr<iface>(std::move(t));
}

}  // namespace

const base::config_table &config_table()
{
    return config_table_v;
}

const stats *get_stats(const iface &tl) noexcept
{
    const auto *t = dynamic_cast<const tcp_iface *>(&tl);
    return t == nullptr ? nullptr : &t->counters();
}

const component transport{
    .name = "tcp",
    .wire_id = wire_id,
    .description = "TCP sockets (IPv4, IPv6): peers that neither shm nor an RDMA port reach",
    .config = &config_table_v,
    .log = &log_tcp,
    .query = &query,
    .open_md = &open_md,
    .open = &open,
};

}  // namespace weft::transport::tcp
