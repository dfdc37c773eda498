#pragma once
// Copies on the data path.
//
// Small copies without a call: protocol headers and short payloads (a few to 64
// bytes) are copied on every message, where a call to memcpy (and its size
// dispatch) costs more than the copy.
//
// Bulk copies (a bounce slot's piece, a message into the user's iovec) without
// `rep movsb`: glibc's memcpy uses it from about 2 KiB on CPUs that advertise
// ERMS/FSRM, and on AMD Zen it runs at a tenth of its speed for some distances
// between source and destination (the addresses of a process's buffers against
// a peer's bounce slots: chosen per launch by ASLR). A pipelined rendezvous
// then ran at 2 GB/s in one launch of eight and 25 GB/s in the others
// (docs/performance.md "Choosing the rendezvous method").

#include <cstddef>
#include <cstdint>
#include <cstring>

struct iovec;

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

/// memcpy for bulk copies (any n; the ranges must not overlap): 64-byte
/// blocks of vector moves, never `rep movsb`. Below 256 bytes it is memcpy.
void copy_bulk(void *dst, const void *src, std::size_t n) noexcept;

/// Copy `len` bytes of `src` into the iovec starting at byte `offset` of it,
/// bounded by the iovec's capacity (copy_bulk). Returns the bytes copied.
std::size_t copy_to_iov(const struct iovec *iov, std::size_t cnt, std::size_t offset,
                        const void *src, std::size_t len) noexcept;

/// Copy `len` bytes of the iovec starting at byte `offset` of it into `dst`,
/// bounded by the iovec's size (copy_bulk). Returns the bytes copied.
std::size_t copy_from_iov(void *dst, const struct iovec *iov, std::size_t cnt, std::size_t offset,
                          std::size_t len) noexcept;

}  // namespace weft::base
