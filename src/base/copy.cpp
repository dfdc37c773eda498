// Bulk copies without rep movsb (copy.hpp says why).

#include "base/copy.hpp"

#include <sys/uio.h>

#include <immintrin.h>

#include <algorithm>

namespace weft::base {

namespace {

// 128-byte blocks of unaligned vector moves, loads before stores; the last
// block overlaps the one before it rather than taking a byte loop. n >= 128.

[[gnu::target("avx2")]] void bulk_avx2(std::uint8_t *d, const std::uint8_t *s,
                                       std::size_t n) noexcept
{
    const std::uint8_t *const last = s + n - 128;
    for (;;) {
        const bool tail = s >= last;
        const std::uint8_t *from = tail ? last : s;
        std::uint8_t *to = tail ? d - (s - last) : d;
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + 32));
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + 64));
        const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + 96));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to), a);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + 32), b);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + 64), c);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + 96), e);
        if (tail) {
            break;
        }
        s += 128;
        d += 128;
    }
    _mm256_zeroupper();
}

void bulk_sse2(std::uint8_t *d, const std::uint8_t *s, std::size_t n) noexcept
{
    const std::uint8_t *const last = s + n - 128;
    for (;;) {
        const bool tail = s >= last;
        const std::uint8_t *from = tail ? last : s;
        std::uint8_t *to = tail ? d - (s - last) : d;
        __m128i v[8];
        for (int i = 0; i < 8; ++i) {
            v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + 16 * i));
        }
        for (int i = 0; i < 8; ++i) {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(to + 16 * i), v[i]);
        }
        if (tail) {
            break;
        }
        s += 128;
        d += 128;
    }
}

using bulk_fn = void (*)(std::uint8_t *, const std::uint8_t *, std::size_t) noexcept;

bulk_fn choose_bulk() noexcept
{
    __builtin_cpu_init();  // we may run before libgcc's constructor
    return __builtin_cpu_supports("avx2") ? &bulk_avx2 : &bulk_sse2;
}

const bulk_fn bulk = choose_bulk();

}  // namespace

void copy_bulk(void *dst, const void *src, std::size_t n) noexcept
{
    if (n < 256) {
        std::memcpy(dst, src, n);  // below glibc's rep movsb threshold
        return;
    }
    bulk(static_cast<std::uint8_t *>(dst), static_cast<const std::uint8_t *>(src), n);
}

namespace {

/// Call f(entry base + position, run, done) for the runs of `len` bytes of the
/// iovec from byte `offset`, bounded by its size; returns the bytes walked.
template <typename F>
std::size_t walk_iov(const struct iovec *iov, std::size_t cnt, std::size_t offset, std::size_t len,
                     F f) noexcept
{
    std::size_t done = 0;
    for (std::size_t i = 0; i < cnt && done < len; ++i) {
        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;  // also skips empty entries (their base may be null)
            continue;
        }
        const std::size_t n = std::min(iov[i].iov_len - offset, len - done);
        f(static_cast<std::uint8_t *>(iov[i].iov_base) + offset, n, done);
        done += n;
        offset = 0;
    }
    return done;
}

}  // namespace

std::size_t copy_to_iov(const struct iovec *iov, std::size_t cnt, std::size_t offset,
                        const void *src, std::size_t len) noexcept
{
    const auto *from = static_cast<const std::uint8_t *>(src);
    return walk_iov(
        iov, cnt, offset, len,
        [from](std::uint8_t *run, std::size_t n, std::size_t at) { copy_bulk(run, from + at, n); });
}

std::size_t copy_from_iov(void *dst, const struct iovec *iov, std::size_t cnt, std::size_t offset,
                          std::size_t len) noexcept
{
    auto *to = static_cast<std::uint8_t *>(dst);
    return walk_iov(iov, cnt, offset, len, [to](std::uint8_t *run, std::size_t n, std::size_t at) {
        copy_bulk(to + at, run, n);
    });
}

}  // namespace weft::base
