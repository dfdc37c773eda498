// The self transport (self.hpp).

#include "transport/self/self.hpp"

#include "transport/cpu_atomic.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "base/copy.hpp"

namespace weft::transport::self {

namespace {

/// The bcopy unit: large messages are fragmented by proto/ into units of this
/// size; 64 KiB keeps the copy in L2.
constexpr std::size_t bcopy_size = 64 * 1024;
constexpr std::size_t short_size = 256;
constexpr std::size_t max_hdr = 128;
/// Messages delivered by one progress call at most.
constexpr unsigned rx_batch = 64;

struct config {
    std::size_t queue_size;  ///< QUEUE_SIZE: bytes of the loopback queue
};

constexpr base::config_field config_fields[] = {
    base::make_field<&config::queue_size>(
        "QUEUE_SIZE", base::config_type::size, "1m",
        "bytes of the loopback queue (messages wait there between a send and the next progress)",
        base::config_range{4 * bcopy_size, 1ull << 30}),
};
constexpr base::config_table config_table =
    base::make_table("SELF", "self transport (an endpoint sending to itself)", config_fields);

// ------------------------------------------------------------------ memory domain

/// Regions registered for the endpoints of one weft domain. Self reaches only
/// its own endpoint, so the memory its keys describe is in this process: a key
/// names a slot and its generation here, and every operation checks the range,
/// the access rights and that the registration is still the same.
class self_md final : public memory_domain {
  public:
    self_md() : id_(next_id_.fetch_add(1, std::memory_order_relaxed)) {}

    [[nodiscard]] std::size_t rkey_size() const noexcept override { return 12; }

    [[nodiscard]] status reg(void *buf, std::size_t len, unsigned acc,
                             std::uint64_t &handle) override
    {
        std::lock_guard g(mutex_);
        std::uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            slot = static_cast<std::uint32_t>(regions_.size());
            regions_.push_back({});
        }
        region &r = regions_[slot];
        r.base = reinterpret_cast<std::uintptr_t>(buf);
        r.len = len;
        r.access = acc;
        r.live = true;
        ++r.gen;
        handle = std::uint64_t{r.gen} << 32 | slot;
        return status::ok;
    }

    void dereg(std::uint64_t handle) noexcept override
    {
        std::lock_guard g(mutex_);
        const auto slot = static_cast<std::uint32_t>(handle);
        if (slot < regions_.size() && regions_[slot].live &&
            regions_[slot].gen == static_cast<std::uint32_t>(handle >> 32)) {
            regions_[slot].live = false;
            free_.push_back(slot);
        }
    }

    [[nodiscard]] status pack_rkey(std::uint64_t handle, std::uint8_t *out) const override
    {
        const std::uint32_t words[3] = {id_, static_cast<std::uint32_t>(handle),
                                        static_cast<std::uint32_t>(handle >> 32)};
        std::memcpy(out, words, sizeof(words));
        return status::ok;
    }

    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }

    /// Whether [addr, addr + len) lies in the live registration the key names,
    /// with access `acc`.
    [[nodiscard]] status check(const rkey &k, std::uint64_t addr, std::size_t len,
                               unsigned acc) const noexcept
    {
        if (static_cast<std::uint32_t>(k.w[0] >> 32) != id_) {
            return status::access;  // a key of another domain
        }
        const auto slot = static_cast<std::uint32_t>(k.w[0]);
        const auto gen = static_cast<std::uint32_t>(k.w[1]);
        std::lock_guard g(mutex_);
        if (slot >= regions_.size()) {
            return status::access;
        }
        const region &r = regions_[slot];
        if (!r.live || r.gen != gen || (r.access & acc) != acc || addr < r.base ||
            addr - r.base > r.len || len > r.len - (addr - r.base)) {
            return status::access;
        }
        return status::ok;
    }

  private:
    struct region {
        std::uintptr_t base = 0;
        std::size_t len = 0;
        unsigned access = 0;
        std::uint32_t gen = 0;
        bool live = false;
    };
    static inline std::atomic<std::uint32_t> next_id_{1};  // relaxed: a unique number only
    const std::uint32_t id_;
    mutable std::mutex mutex_;  // registration is control path; self RMA is loopback only
    std::vector<region> regions_;
    std::vector<std::uint32_t> free_;
};

// ------------------------------------------------------------------ the queue

/// A byte ring of whole messages: an 8-byte header, the message, padding to 8.
/// A message never wraps: when the end has no room it goes to the start and
/// the end is skipped (marked when a header still fits there).
class message_ring {
  public:
    explicit message_ring(std::size_t cap) : buf_(std::make_unique<std::uint8_t[]>(cap)), cap_(cap)
    {
    }

    /// Room for a message of `len` bytes, or nullptr when the ring is full.
    [[nodiscard]] std::uint8_t *reserve(std::size_t len, am_word am) noexcept
    {
        const std::size_t need = hdr_size + pad(len);
        if (count_ == 0) {
            head_ = tail_ = 0;
        }
        std::size_t at;
        if (count_ == 0 || tail_ > head_) {
            if (cap_ - tail_ >= need) {
                at = tail_;
            } else if (head_ >= need) {
                if (cap_ - tail_ >= hdr_size) {
                    write_hdr(tail_, skip_len, 0);
                }
                at = 0;
            } else {
                return nullptr;
            }
        } else if (head_ - tail_ >= need) {
            at = tail_;
        } else {
            return nullptr;
        }
        write_hdr(at, static_cast<std::uint32_t>(len), am);
        tail_ = at + need;
        ++count_;
        return buf_.get() + at + hdr_size;
    }

    /// The oldest message, or nullptr.
    [[nodiscard]] const std::uint8_t *front(std::size_t &len, am_word &am) noexcept
    {
        if (count_ == 0) {
            return nullptr;
        }
        if (cap_ - head_ < hdr_size || read_len(head_) == skip_len) {
            head_ = 0;
        }
        len = read_len(head_);
        std::memcpy(&am, buf_.get() + head_ + 4, sizeof(am));
        return buf_.get() + head_ + hdr_size;
    }

    void pop(std::size_t len) noexcept
    {
        head_ += hdr_size + pad(len);
        --count_;
    }

    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }

  private:
    static constexpr std::size_t hdr_size = 8;
    static constexpr std::uint32_t skip_len = UINT32_MAX;
    static std::size_t pad(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }
    void write_hdr(std::size_t at, std::uint32_t len, am_word am) noexcept
    {
        std::memcpy(buf_.get() + at, &len, 4);
        std::memcpy(buf_.get() + at + 4, &am, sizeof(am));
    }
    [[nodiscard]] std::uint32_t read_len(std::size_t at) const noexcept
    {
        std::uint32_t v;
        std::memcpy(&v, buf_.get() + at, 4);
        return v;
    }

    std::unique_ptr<std::uint8_t[]> buf_;
    std::size_t cap_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
    std::size_t count_ = 0;
};

// ------------------------------------------------------------------ the transport

class self_iface final : public iface {
  public:
    self_iface(const open_params &p, self_md &md, std::size_t queue)
        : id_{p.node_id, p.pid, p.ep_id}, md_(md), ring_(queue)
    {
        attr_.caps = cap::am | cap::put | cap::get | cap::atomic | cap::cpu_atomics |
                     cap::loopback | cap::on_demand;
        attr_.max_short = short_size;
        attr_.max_bcopy = bcopy_size;
        attr_.max_hdr = max_hdr;
        attr_.max_put = SIZE_MAX;
        attr_.max_get = SIZE_MAX;
        constexpr std::uint32_t all = (1u << atomic_op_count) - 1;
        attr_.atomic32 = attr_.atomic64 =
            all & ~(atomic_bit(atomic_op::swap) | atomic_bit(atomic_op::cswap));
        attr_.atomic32f = attr_.atomic64f = all;
        // A copy through the queue and one into the receive: memory speed.
        attr_.cost = {.overhead_ns = 30, .latency_ns = 20, .bandwidth_mbps = 10000};
        // A get is one memcpy from the sender's buffer: it beats a push (a copy
        // into the queue and one out) at every size.
        attr_.get_cost = {.overhead_ns = 30, .latency_ns = 20, .bandwidth_mbps = 10000};
        ops_.send_short = &send_short_impl;
        ops_.send_bcopy = &send_bcopy_impl;
        ops_.progress = &progress_impl;
        ops_.put = &put_impl;
        ops_.get = &get_impl;
        ops_.atomic = &atomic_impl;
    }

    [[nodiscard]] const attributes &attr() const noexcept override { return attr_; }

    [[nodiscard]] status pack_address(address_builder &b) override
    {
        (void)b;  // reached by identity alone: nothing to publish
        return status::ok;
    }

    [[nodiscard]] bool reachable(const address &peer) const noexcept override
    {
        return peer.id() == id_;
    }

    [[nodiscard]] status connect(const address &peer, conn_id &out) override
    {
        if (!reachable(peer)) {
            return status::unreachable;
        }
        own_ = peer;
        out = 0;
        return status::ok;
    }

    [[nodiscard]] status remote_address(src_id src, address &out) const override
    {
        if (src != 0 || own_.empty()) {
            return status::no_entry;
        }
        out = own_;
        return status::ok;
    }

    [[nodiscard]] status expose(conn_id conn, const void *buf, std::size_t len,
                                exposure &out) override
    {
        if (conn != 0) {
            return status::invalid;
        }
        if (const status st =
                md_.reg(const_cast<void *>(buf), len, access::remote_read, out.handle);
            st != status::ok) {
            return st;
        }
        out.rkey_len = static_cast<std::uint8_t>(md_.rkey_size());
        return md_.pack_rkey(out.handle, out.rkey);
    }

    void unexpose(const exposure &e) noexcept override { md_.dereg(e.handle); }

    /// This process's own memory: the address itself, while the region is live.
    [[nodiscard]] void *map_rkey(conn_id conn, const rkey &key, std::uint64_t raddr,
                                 std::size_t len) override
    {
        if (conn != 0 || md_.check(key, raddr, len, 0) != status::ok) {
            return nullptr;
        }
        return reinterpret_cast<void *>(raddr);
    }

    [[nodiscard]] status unpack_rkey(const std::uint8_t *data, std::size_t len,
                                     rkey &out) const override
    {
        if (len != 12) {
            return status::bad_message;
        }
        std::uint32_t words[3];
        std::memcpy(words, data, sizeof(words));
        out.w[0] = std::uint64_t{words[0]} << 32 | words[1];
        out.w[1] = words[2];
        return status::ok;
    }

  private:
    static status send_short_impl(iface *tl, conn_id conn, am_word am, const void *hdr,
                                  std::size_t hdr_len, const void *payload, std::size_t len)
    {
        auto *s = static_cast<self_iface *>(tl);
        if (conn != 0 || hdr_len + len > short_size) [[unlikely]] {
            return status::invalid;
        }
        std::uint8_t *dst = s->ring_.reserve(hdr_len + len, am);
        if (dst == nullptr) [[unlikely]] {
            return status::again;
        }
        s->wake();
        if (hdr_len != 0) {  // hdr may be null without a header
            std::memcpy(dst, hdr, hdr_len);
        }
        if (len != 0) {
            std::memcpy(dst + hdr_len, payload, len);
        }
        return status::ok;
    }

    static status send_bcopy_impl(iface *tl, conn_id conn, am_word am, const void *hdr,
                                  std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                                  std::size_t offset, std::size_t len)
    {
        auto *s = static_cast<self_iface *>(tl);
        if (conn != 0 || hdr_len > max_hdr || hdr_len + len > bcopy_size) [[unlikely]] {
            return status::invalid;
        }
        std::size_t avail = 0;
        for (std::size_t i = 0; i < iovcnt; ++i) {
            avail += iov[i].iov_len;
        }
        if (offset > avail || len > avail - offset) [[unlikely]] {
            return status::invalid;
        }
        std::uint8_t *dst = s->ring_.reserve(hdr_len + len, am);
        if (dst == nullptr) [[unlikely]] {
            return status::again;
        }
        s->wake();
        if (hdr_len != 0) {  // hdr may be null without a header
            std::memcpy(dst, hdr, hdr_len);
        }
        (void)base::copy_from_iov(dst + hdr_len, iov, iovcnt, offset, len);
        return status::ok;
    }

    /// Tell the layer above that progress() has work (cap::on_demand).
    void wake() noexcept
    {
        if (handlers_.wake != nullptr) {
            handlers_.wake(handlers_.arg);
        }
    }

    static unsigned progress_impl(iface *tl)
    {
        auto *s = static_cast<self_iface *>(tl);
        unsigned n = 0;
        std::size_t len;
        am_word am;
        // A handler may send to ourselves again: that message is appended and,
        // within the batch, delivered by this same loop.
        while (n < rx_batch) {
            const std::uint8_t *data = s->ring_.front(len, am);
            if (data == nullptr) {
                break;
            }
            s->handlers_.am(s->handlers_.arg, 0, am, data, len);
            s->ring_.pop(len);
            ++n;
        }
        if (!s->ring_.empty()) {
            s->wake();  // more than a batch: keep being polled
        }
        return n;
    }

    static status put_impl(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                           std::size_t len, std::uint64_t raddr, const rkey &key,
                           std::uint64_t cookie)
    {
        (void)cookie;
        auto *s = static_cast<self_iface *>(tl);
        if (conn != 0) {
            return status::invalid;
        }
        if (const status st = s->md_.check(key, raddr, len, access::remote_write);
            st != status::ok) {
            return st;
        }
        (void)base::copy_from_iov(reinterpret_cast<std::uint8_t *>(raddr), iov, iovcnt, 0, len);
        return status::ok;
    }

    static status get_impl(iface *tl, conn_id conn, const struct iovec *iov, std::size_t iovcnt,
                           std::size_t len, std::uint64_t raddr, const rkey &key,
                           std::uint64_t cookie)
    {
        (void)cookie;
        auto *s = static_cast<self_iface *>(tl);
        if (conn != 0) {
            return status::invalid;
        }
        if (const status st = s->md_.check(key, raddr, len, access::remote_read);
            st != status::ok) {
            return st;
        }
        (void)base::copy_to_iov(iov, iovcnt, 0, reinterpret_cast<const std::uint8_t *>(raddr), len);
        return status::ok;
    }

    static status atomic_impl(iface *tl, conn_id conn, const atomic_args &a, std::uint64_t cookie)
    {
        (void)cookie;
        auto *s = static_cast<self_iface *>(tl);
        if (conn != 0 || (a.width != 4 && a.width != 8) || a.raddr % a.width != 0 ||
            static_cast<unsigned>(a.op) >= atomic_op_count || (a.fetch && a.result == nullptr)) {
            return status::invalid;
        }
        if (const status st = s->md_.check(a.key, a.raddr, a.width, access::remote_atomic);
            st != status::ok) {
            return st;
        }
        cpu_atomic(reinterpret_cast<void *>(a.raddr), a);  // transport/cpu_atomic.hpp
        return status::ok;
    }

    attributes attr_{};
    endpoint_id id_;
    address own_;
    self_md &md_;
    message_ring ring_;
};

// ------------------------------------------------------------------ the component

std::vector<resource> query(const base::config_store &cfg, std::string &why)
{
    (void)cfg;
    (void)why;
    char host[64] = {};
    (void)gethostname(host, sizeof(host) - 1);
    return {{host, "loopback to the endpoint itself"}};
}

base::result<std::unique_ptr<memory_domain>> open_md(const base::config_store &cfg,
                                                     const resource &res)
{
    (void)cfg;
    (void)res;
    return std::unique_ptr<memory_domain>(std::make_unique<self_md>());
}

base::result<std::unique_ptr<iface>> open(const open_params &p, const resource &res,
                                          memory_domain &md, const base::config_store &cfg)
{
    (void)res;
    config c{};
    cfg.load(config_table, &c);
    return std::unique_ptr<iface>(
        std::make_unique<self_iface>(p, static_cast<self_md &>(md), c.queue_size));
}

}  // namespace

const component transport{
    .name = "self",
    .wire_id = 1,
    .description = "loopback: an endpoint sending to itself",
    .config = &config_table,
    .log = &log_self,
    .query = &query,
    .open_md = &open_md,
    .open = &open,
};

}  // namespace weft::transport::self
