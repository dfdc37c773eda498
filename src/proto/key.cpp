// Packed remote keys (key.hpp).

#include "proto/key.hpp"

namespace weft::proto {

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
constexpr std::size_t off_magic = 0, off_version = 2, off_nparts = 3, off_length = 4,
                      off_access = 8, off_base = 16, off_len = 24, off_am_key = 32;

}  // namespace

bool key_view::find(std::uint8_t wire_id, const std::uint8_t *&data,
                    std::size_t &part_len) const noexcept
{
    std::size_t pos = 0;
    for (unsigned i = 0; i < nparts; ++i) {
        const std::uint8_t id = parts[pos];
        const std::size_t n = parts[pos + 1];
        if (id == wire_id) {
            data = parts + pos + 2;
            part_len = n;
            return true;
        }
        pos += 2 + n;
    }
    return false;
}

status parse_key(const void *data, std::size_t len, key_view &out) noexcept
{
    const auto *p = static_cast<const std::uint8_t *>(data);
    if (p == nullptr || len < key_header_size || len > max_key_size ||
        load<std::uint16_t>(p + off_magic) != key_magic || p[off_version] != key_version ||
        load<std::uint16_t>(p + off_length) != len) {
        return status::bad_message;
    }
    const unsigned nparts = p[off_nparts];
    std::size_t pos = key_header_size;
    for (unsigned i = 0; i < nparts; ++i) {
        if (len - pos < 2 || len - pos - 2 < p[pos + 1]) {
            return status::bad_message;
        }
        pos += 2 + p[pos + 1];
    }
    if (pos != len) {
        return status::bad_message;
    }
    out.base = load<std::uint64_t>(p + off_base);
    out.len = load<std::uint64_t>(p + off_len);
    out.access = load<std::uint32_t>(p + off_access);
    out.am_key = load<std::uint64_t>(p + off_am_key);
    if (out.base + out.len < out.base) {
        return status::bad_message;  // a region that wraps the address space
    }
    out.nparts = nparts;
    out.parts = p + key_header_size;
    out.parts_len = len - key_header_size;
    return status::ok;
}

key_builder::key_builder(std::uint64_t base, std::uint64_t len, std::uint32_t access,
                         std::uint64_t am_key) noexcept
{
    store<std::uint16_t>(bytes_ + off_magic, key_magic);
    bytes_[off_version] = key_version;
    bytes_[off_nparts] = 0;
    store<std::uint16_t>(bytes_ + off_length, key_header_size);
    store<std::uint32_t>(bytes_ + off_access, access);
    store<std::uint64_t>(bytes_ + off_base, base);
    store<std::uint64_t>(bytes_ + off_len, len);
    store<std::uint64_t>(bytes_ + off_am_key, am_key);
}

status key_builder::add(std::uint8_t wire_id, const void *key, std::size_t len) noexcept
{
    if (len > 255 || size_ + 2 + len > max_key_size || bytes_[off_nparts] == 255) {
        return status::no_memory;
    }
    bytes_[size_] = wire_id;
    bytes_[size_ + 1] = static_cast<std::uint8_t>(len);
    if (len != 0) {
        std::memcpy(bytes_ + size_ + 2, key, len);
    }
    size_ += 2 + len;
    ++bytes_[off_nparts];
    store<std::uint16_t>(bytes_ + off_length, static_cast<std::uint16_t>(size_));
    return status::ok;
}

}  // namespace weft::proto
