#pragma once
// Small copies without a call: protocol headers and short payloads (a few to 64
// bytes) are copied on every message, where a call to memcpy (and its size
// dispatch) costs more than the copy.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::base {

/// Copy n <= 64 bytes with two possibly overlapping fixed-size moves. Both
/// ranges must hold n bytes; they must not overlap each other.
[[gnu::always_inline]] inline void copy_small(void *dst, const void *src, std::size_t n) noexcept
{
    auto *d = static_cast<std::uint8_t *>(dst);
    const auto *s = static_cast<const std::uint8_t *>(src);
    if (n >= 16) {
        if (n >= 32) {
            std::memcpy(d, s, 32);
            std::memcpy(d + n - 32, s + n - 32, 32);
        } else {
            std::memcpy(d, s, 16);
            std::memcpy(d + n - 16, s + n - 16, 16);
        }
    } else if (n >= 8) {
        std::memcpy(d, s, 8);
        std::memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        std::memcpy(d, s, 4);
        std::memcpy(d + n - 4, s + n - 4, 4);
    } else if (n != 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

}  // namespace weft::base
