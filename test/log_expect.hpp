#pragma once
// Test helpers around logging.
//
// The gtest main (test/gtest_main.cpp) fails every test during which the
// library logged a warning or an error, unless the test said it expects them:
//
//   TEST(config, bad_value) {
//       weft::test::expect_log_errors expect(1);   // at least one error, within this scope
//       EXPECT_EQ(config_load(table, &cfg), status::invalid);
//   }
//
// stderr_capture redirects file descriptor 2 (where the library logs) to a
// temporary file for its lifetime, to check what was written.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/log.hpp"

namespace weft::test {

namespace detail {

/// Book-keeping of what the guards allowed during the current test; read and
/// reset by the listener of test/gtest_main.cpp.
struct log_allowance {
    std::atomic<int> depth{0};              ///< guards alive (of this kind)
    std::atomic<std::uint64_t> start{0};    ///< count when the outermost guard began
    std::atomic<std::uint64_t> allowed{0};  ///< lines logged inside guards, this test
};
inline log_allowance warning_allowance;
inline log_allowance error_allowance;

/// Allows lines of one kind (warnings or errors) during its lifetime, and
/// fails the test if fewer than `min` were logged. Nested guards allow each
/// line once.
template <std::uint64_t base::log_counts::*Count, log_allowance &Allowance>
class expect_log {
  public:
    explicit expect_log(std::uint64_t min = 1) noexcept
        : min_(min), start_(base::log_get_counts().*Count)
    {
        if (Allowance.depth.fetch_add(1) == 0) {
            Allowance.start.store(start_);
        }
    }
    ~expect_log()
    {
        const std::uint64_t now = base::log_get_counts().*Count;
        if (Allowance.depth.fetch_sub(1) == 1) {
            Allowance.allowed.fetch_add(now - Allowance.start.load());
        }
        if (now - start_ < min_) {
            ADD_FAILURE() << "expected at least " << min_ << " log "
                          << (Count == &base::log_counts::warnings ? "warning" : "error")
                          << "(s) in this scope, got " << now - start_;
        }
    }
    expect_log(const expect_log &) = delete;
    expect_log &operator=(const expect_log &) = delete;

    /// Lines of this kind logged since the guard began.
    [[nodiscard]] std::uint64_t count() const noexcept
    {
        return base::log_get_counts().*Count - start_;
    }

  private:
    std::uint64_t min_;
    std::uint64_t start_;
};

}  // namespace detail

/// `expect_log_warnings guard(n_min)`: warnings are allowed in this scope; at
/// least n_min of them must be logged.
using expect_log_warnings =
    detail::expect_log<&base::log_counts::warnings, detail::warning_allowance>;
/// `expect_log_errors guard(n_min)`: the same for errors.
using expect_log_errors = detail::expect_log<&base::log_counts::errors, detail::error_allowance>;

/// Redirects stderr (fd 2) to a temporary file until text() or destruction.
class stderr_capture {
  public:
    stderr_capture()
    {
        std::fflush(stderr);
        file_ = std::tmpfile();
        saved_ = ::dup(STDERR_FILENO);
        if (file_ == nullptr || saved_ < 0 || ::dup2(::fileno(file_), STDERR_FILENO) < 0) {
            ADD_FAILURE() << "cannot redirect stderr";
        }
    }
    ~stderr_capture() { (void)text(); }
    stderr_capture(const stderr_capture &) = delete;
    stderr_capture &operator=(const stderr_capture &) = delete;

    /// Restores stderr (on the first call) and returns what was written.
    std::string text()
    {
        if (saved_ >= 0) {
            std::fflush(stderr);
            ::dup2(saved_, STDERR_FILENO);
            ::close(saved_);
            saved_ = -1;
            if (file_ != nullptr) {
                std::rewind(file_);
                char buf[4096];
                std::size_t n;
                while ((n = std::fread(buf, 1, sizeof(buf), file_)) > 0) {
                    text_.append(buf, n);
                }
                std::fclose(file_);
                file_ = nullptr;
            }
        }
        return text_;
    }

  private:
    std::FILE *file_ = nullptr;
    int saved_ = -1;
    std::string text_;
};

}  // namespace weft::test
