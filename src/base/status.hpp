#pragma once
// weft::base::status -- the one status type of the library.
//
// ok = 0, in_progress = 1 (an operation was started and will complete later),
// negatives are errors. The values of the negatives are the negated errno-style
// WEFT_E* codes of the C ABI (include/weft/weft.h), so converting is a cast.

#include <cstdint>
#include <utility>

#include "weft/weft.h"

namespace weft::base {

enum class [[nodiscard]] status : int{
    ok = 0,
    in_progress = 1,
    again = -WEFT_EAGAIN,  ///< out of resources right now; retry (progress was made)
    no_memory = -WEFT_ENOMEM,
    invalid = -WEFT_EINVAL,        ///< bad argument
    not_supported = -WEFT_ENOSYS,  ///< operation not provided by this object
    no_entry = -WEFT_ENOENT,
    busy = -WEFT_EBUSY,
    no_message = -WEFT_ENOMSG,  ///< peek found nothing
    truncated = -WEFT_ETRUNC,
    canceled = -WEFT_ECANCELED,
    unreachable = -WEFT_EHOSTUNREACH,
    io_error = -WEFT_EIO,
    no_device = -WEFT_ENODEV,
    timed_out = -WEFT_ETIMEDOUT,
    access = -WEFT_EACCES,        ///< protection/key error
    overrun = -WEFT_EOVERRUN,     ///< a queue overflowed
    bad_message = -WEFT_EBADMSG,  ///< malformed data from a peer
    avail = -WEFT_EAVAIL,         ///< an error entry is available on the CQ
    other = -WEFT_EOTHER,
};

/// The C ABI value of a status (0 or a negative WEFT_E* code; in_progress maps to 0).
[[nodiscard]] constexpr int to_c(status s) noexcept
{
    const int v = static_cast<int>(s);
    return v > 0 ? 0 : v;
}

[[nodiscard]] constexpr status from_c(int rc) noexcept
{
    return static_cast<status>(rc);
}

[[nodiscard]] constexpr bool is_error(status s) noexcept
{
    return static_cast<int>(s) < 0;
}

/// Human-readable text for a status; never null.
[[nodiscard]] inline const char *status_string(status s) noexcept
{
    return s == status::in_progress ? "operation in progress" : weft_strerror(static_cast<int>(s));
}

/// Setup-path "status or value". Holds a value when status is ok.
template <typename T>
class [[nodiscard]] result {
  public:
    result(status s) : status_(s) {}  // NOLINT(google-explicit-constructor): implicit by design
    result(T v)
        : status_(status::ok), value_(std::move(v)) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool ok() const noexcept { return status_ == status::ok; }
    [[nodiscard]] status error() const noexcept { return status_; }
    [[nodiscard]] T &value() &noexcept { return value_; }
    [[nodiscard]] T &&value() &&noexcept { return std::move(value_); }
    [[nodiscard]] T *operator->() noexcept { return &value_; }
    [[nodiscard]] T &operator*() noexcept { return value_; }

  private:
    status status_;
    T value_{};
};

}  // namespace weft::base
