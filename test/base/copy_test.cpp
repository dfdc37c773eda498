// base/copy: the bulk copy and the iovec copies against memcpy, at every
// length around the block sizes and at every source/destination alignment
// in a cache line.

#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "base/copy.hpp"

namespace {

using weft::base::copy_bulk;
using weft::base::copy_from_iov;
using weft::base::copy_to_iov;

std::uint8_t pattern(std::size_t i)
{
    return static_cast<std::uint8_t>(i * 131 + 7);
}

TEST(copy, bulk_copies_exactly_the_bytes_asked_for)
{
    constexpr std::size_t guard = 160;
    std::vector<std::uint8_t> src(9000 + 2 * guard);
    for (std::size_t i = 0; i < src.size(); ++i) {
        src[i] = pattern(i);
    }
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 700; ++n) {
        lengths.push_back(n);
    }
    for (std::size_t n : {1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 8224, 9000}) {
        lengths.push_back(n);
    }
    for (std::size_t n : lengths) {
        for (std::size_t so : {0, 1, 13, 32, 63}) {
            for (std::size_t dof : {0, 7, 32, 64}) {
                std::vector<std::uint8_t> dst(n + 2 * guard + 64, 0xA5);
                const std::size_t at = guard + dof;
                copy_bulk(dst.data() + at, src.data() + so, n);
                for (std::size_t i = 0; i < at; ++i) {
                    ASSERT_EQ(dst[i], 0xA5) << "written before, n " << n;
                }
                for (std::size_t i = at + n; i < dst.size(); ++i) {
                    ASSERT_EQ(dst[i], 0xA5) << "written after, n " << n;
                }
                for (std::size_t i = 0; i < n; ++i) {
                    ASSERT_EQ(dst[at + i], pattern(so + i)) << "n " << n << " byte " << i;
                }
            }
        }
    }
}

TEST(copy, iov_copies_cross_entries_and_stop_at_the_capacity)
{
    std::vector<std::uint8_t> src(5000);
    for (std::size_t i = 0; i < src.size(); ++i) {
        src[i] = pattern(i);
    }
    std::vector<std::uint8_t> a(100, 0), b(0), c(3000, 0), d(700, 0);
    iovec iov[4] = {{a.data(), a.size()}, {nullptr, 0}, {c.data(), c.size()}, {d.data(), d.size()}};
    (void)b;
    // 5000 bytes into 3800 of room from byte 50: 3750 copied.
    EXPECT_EQ(copy_to_iov(iov, 4, 50, src.data(), src.size()), 3750U);
    for (std::size_t i = 0; i < 50; ++i) {
        ASSERT_EQ(a[i], 0) << "before the offset";
    }
    std::vector<std::uint8_t> all;
    all.insert(all.end(), a.begin() + 50, a.end());
    all.insert(all.end(), c.begin(), c.end());
    all.insert(all.end(), d.begin(), d.end());
    ASSERT_EQ(all.size(), 3750U);
    for (std::size_t i = 0; i < all.size(); ++i) {
        ASSERT_EQ(all[i], pattern(i)) << i;
    }
    // And back: from byte 50 of the iovec, more than it holds.
    std::vector<std::uint8_t> out(5000, 0xA5);
    EXPECT_EQ(copy_from_iov(out.data(), iov, 4, 50, 5000), 3750U);
    for (std::size_t i = 0; i < 3750; ++i) {
        ASSERT_EQ(out[i], pattern(i)) << i;
    }
    EXPECT_EQ(out[3750], 0xA5);
    EXPECT_EQ(copy_to_iov(iov, 4, 3800, src.data(), 10), 0U) << "offset at the end";
}

}  // namespace
