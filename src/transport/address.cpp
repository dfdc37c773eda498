// Endpoint addresses: parsing (untrusted bytes) and building. Format: address.hpp.

#include "transport/address.hpp"

namespace weft::transport {

namespace {

template <typename T>
T load(const std::uint8_t *p) noexcept
{
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

template <typename T>
void store(std::uint8_t *p, T v) noexcept
{
    std::memcpy(p, &v, sizeof(v));
}

// Header field offsets.
constexpr std::size_t off_magic = 0;
constexpr std::size_t off_version = 4;
constexpr std::size_t off_nblobs = 5;
constexpr std::size_t off_length = 6;
constexpr std::size_t off_node = 8;
constexpr std::size_t off_pid = 16;
constexpr std::size_t off_ep = 20;
static_assert(off_ep + 4 == address_header_size);

}  // namespace

status address::parse(const void *data, std::size_t avail, address &out,
                      std::size_t *consumed) noexcept
{
    const auto *p = static_cast<const std::uint8_t *>(data);
    if (p == nullptr || avail < address_header_size ||
        load<std::uint32_t>(p + off_magic) != address_magic || p[off_version] != address_version) {
        return status::bad_message;
    }
    const std::size_t length = load<std::uint16_t>(p + off_length);
    if (length < address_header_size || length > avail || length > max_address_size) {
        return status::bad_message;
    }
    // Every blob must fit, and together they must fill the address exactly.
    const unsigned nblobs = p[off_nblobs];
    std::size_t pos = address_header_size;
    for (unsigned i = 0; i < nblobs; ++i) {
        if (length - pos < address_blob_header_size) {
            return status::bad_message;
        }
        const std::size_t body = std::size_t{p[pos + 1]} + p[pos + 2];
        pos += address_blob_header_size;
        if (length - pos < body) {
            return status::bad_message;
        }
        pos += body;
    }
    if (pos != length) {
        return status::bad_message;
    }
    std::memcpy(out.bytes_, p, length);
    out.size_ = static_cast<std::uint16_t>(length);
    out.nblobs_ = static_cast<std::uint8_t>(nblobs);
    out.id_ = {load<std::uint64_t>(p + off_node), load<std::uint32_t>(p + off_pid),
               load<std::uint32_t>(p + off_ep)};
    if (consumed != nullptr) {
        *consumed = length;
    }
    return status::ok;
}

address_blob address::blob(unsigned i) const noexcept
{
    // Only addresses that parse() or address_builder made exist: the walk fits.
    std::size_t pos = address_header_size;
    for (unsigned k = 0; k < nblobs_; ++k) {
        address_blob b;
        b.id = bytes_[pos];
        b.node_len = bytes_[pos + 1];
        b.ep_len = bytes_[pos + 2];
        b.node = bytes_ + pos + address_blob_header_size;
        b.ep = b.node + b.node_len;
        if (k == i) {
            return b;
        }
        pos += address_blob_header_size + b.node_len + b.ep_len;
    }
    return {};
}

bool address::find(std::uint8_t id, address_blob &out, unsigned nth) const noexcept
{
    for (unsigned i = 0; i < nblobs_; ++i) {
        const address_blob b = blob(i);
        if (b.id == id && nth-- == 0) {
            out = b;
            return true;
        }
    }
    return false;
}

address_builder::address_builder(const endpoint_id &id) noexcept
{
    std::uint8_t *p = addr_.bytes_;
    store<std::uint32_t>(p + off_magic, address_magic);
    p[off_version] = address_version;
    p[off_nblobs] = 0;
    store<std::uint16_t>(p + off_length, address_header_size);
    store<std::uint64_t>(p + off_node, id.node_id);
    store<std::uint32_t>(p + off_pid, id.pid);
    store<std::uint32_t>(p + off_ep, id.ep_id);
    addr_.size_ = address_header_size;
    addr_.id_ = id;
}

status address_builder::add(std::uint8_t id, const void *node, std::size_t node_len, const void *ep,
                            std::size_t ep_len) noexcept
{
    const std::size_t need = address_blob_header_size + node_len + ep_len;
    if (node_len > 255 || ep_len > 255 || addr_.nblobs_ == 255 ||
        addr_.size_ + need > max_address_size) {
        return status::no_memory;
    }
    std::uint8_t *p = addr_.bytes_ + addr_.size_;
    p[0] = id;
    p[1] = static_cast<std::uint8_t>(node_len);
    p[2] = static_cast<std::uint8_t>(ep_len);
    if (node_len != 0) {
        std::memcpy(p + address_blob_header_size, node, node_len);
    }
    if (ep_len != 0) {
        std::memcpy(p + address_blob_header_size + node_len, ep, ep_len);
    }
    addr_.size_ = static_cast<std::uint16_t>(addr_.size_ + need);
    ++addr_.nblobs_;
    addr_.bytes_[off_nblobs] = addr_.nblobs_;
    store<std::uint16_t>(addr_.bytes_ + off_length, addr_.size_);
    return status::ok;
}

}  // namespace weft::transport
