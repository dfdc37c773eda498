#include "transport/self/self.hpp"

#include <cstring>
#include <vector>

namespace weft::transport::self {

namespace {

// Bounce buffer size: the bcopy unit. Large messages are fragmented by proto/
// into units of this size; 64 KiB keeps the copy in L2.
constexpr std::size_t bcopy_size = 64 * 1024;
constexpr std::size_t short_size = 256;

class self_iface final : public iface {
  public:
    explicit self_iface(const open_params &p) : params_(p), bounce_(bcopy_size)
    {
        ops_.send_short = &send_short_impl;
        ops_.send_bcopy = &send_bcopy_impl;
        ops_.progress = &progress_impl;
        ops_.get_zcopy = &get_zcopy_impl;
    }

    [[nodiscard]] transport_kind kind() const noexcept override { return transport_kind::self; }
    [[nodiscard]] const attributes &attr() const noexcept override { return attr_; }

    [[nodiscard]] status pack_address(wire_address &addr) override
    {
        addr.transports |= 1u << unsigned(transport_kind::self);
        own_ = addr;
        return status::ok;
    }

    [[nodiscard]] bool reachable(const wire_address &peer) const noexcept override
    {
        return peer.node_id == params_.node_id && peer.pid == params_.pid &&
               peer.ep_id == params_.ep_id;
    }

    [[nodiscard]] status connect(const wire_address &peer, conn_id &out) override
    {
        if (!reachable(peer)) {
            return status::unreachable;
        }
        out = 0;
        return status::ok;
    }

    [[nodiscard]] status remote_address(src_id src, wire_address &out) const override
    {
        if (src != 0) {
            return status::no_entry;
        }
        out = own_;
        return status::ok;
    }

    [[nodiscard]] status expose(const void *buf, std::size_t len, remote_buffer &out) override
    {
        (void)len;
        out = {reinterpret_cast<std::uint64_t>(buf), 0};
        return status::ok;
    }

  private:
    // The "remote" buffer is in this process: the rendezvous is one memcpy.
    static status get_zcopy_impl(iface *tl, src_id src, const struct iovec *iov, std::size_t iovcnt,
                                 const remote_buffer &rb, std::size_t len, std::uint64_t cookie)
    {
        (void)tl;
        (void)cookie;
        if (src != 0) {
            return status::invalid;
        }
        const auto *from = reinterpret_cast<const std::uint8_t *>(rb.addr);
        for (std::size_t i = 0; i < iovcnt && len > 0; ++i) {
            const std::size_t n = std::min(iov[i].iov_len, len);
            std::memcpy(iov[i].iov_base, from, n);
            from += n;
            len -= n;
        }
        return status::ok;
    }

    static status send_short_impl(iface *tl, conn_id conn, unsigned am_id, const void *hdr,
                                  std::size_t hdr_len, const void *payload, std::size_t len)
    {
        auto *self = static_cast<self_iface *>(tl);
        if (conn != 0 || hdr_len + len > short_size) [[unlikely]] {
            return status::invalid;
        }
        alignas(8) std::uint8_t buf[short_size];
        std::memcpy(buf, hdr, hdr_len);
        if (len != 0) {
            std::memcpy(buf + hdr_len, payload, len);
        }
        self->handlers_.am(self->handlers_.arg, 0, am_id, buf, hdr_len + len);
        return status::ok;
    }

    static status send_bcopy_impl(iface *tl, conn_id conn, unsigned am_id, const void *hdr,
                                  std::size_t hdr_len, const struct iovec *iov, std::size_t iovcnt,
                                  std::size_t offset, std::size_t len)
    {
        auto *self = static_cast<self_iface *>(tl);
        if (conn != 0 || hdr_len + len > bcopy_size) [[unlikely]] {
            return status::invalid;
        }
        std::uint8_t *buf = self->bounce_.data();
        std::memcpy(buf, hdr, hdr_len);
        std::size_t done = 0;
        for (std::size_t i = 0; i < iovcnt && done < len; ++i) {
            if (offset >= iov[i].iov_len) {
                offset -= iov[i].iov_len;
                continue;
            }
            const std::size_t n = std::min(iov[i].iov_len - offset, len - done);
            std::memcpy(buf + hdr_len + done,
                        static_cast<const std::uint8_t *>(iov[i].iov_base) + offset, n);
            done += n;
            offset = 0;
        }
        self->handlers_.am(self->handlers_.arg, 0, am_id, buf, hdr_len + done);
        return status::ok;
    }

    static unsigned progress_impl(iface *) { return 0; }

    attributes attr_{.max_short = short_size, .max_bcopy = bcopy_size, .max_hdr = 32};
    open_params params_;
    wire_address own_{};
    std::vector<std::uint8_t> bounce_;
};

}  // namespace

std::unique_ptr<iface> open(const open_params &p)
{
    return std::make_unique<self_iface>(p);
}

}  // namespace weft::transport::self
