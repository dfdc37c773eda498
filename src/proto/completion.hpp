#pragma once
// How proto/ reports completions upward without knowing the CQ's type: a sink
// of plain function pointers chosen once, when the endpoint is enabled (the CQ
// entry format and the lock policy are baked into the function chosen).

#include <cstddef>
#include <cstdint>

#include "proto/counter.hpp"
#include "weft/weft.h"

namespace weft::proto {

/// Everything any CQ entry format may need; formats copy what they hold.
struct completion {
    void *context;        ///< operation context
    std::uint64_t flags;  ///< WEFT_SEND/WEFT_RECV | WEFT_TAGGED | WEFT_REMOTE_CQ_DATA
    std::size_t len;      ///< bytes received
    void *buf;            ///< receive buffer
    std::uint64_t data;   ///< remote CQ data
    std::uint64_t tag;    ///< tag
    std::uint64_t src;    ///< source address vector index (weft_addr_t)
};

/// An error completion's extra fields.
struct completion_error {
    int err;           ///< positive WEFT_E* code
    int prov_errno;    ///< transport-specific code or 0
    std::size_t olen;  ///< truncation: bytes that did not fit
};

/// One side's (transmit or receive) completion target.
struct completion_sink {
    void (*write)(void *cq, const completion &c) = nullptr;
    void (*write_error)(void *cq, const completion &c, const completion_error &e) = nullptr;
    void *cq = nullptr;       ///< nullptr: no CQ bound
    counter *cntr = nullptr;  ///< counter of successes and errors, or nullptr
    bool selective = false;   ///< completions only for operations flagged WEFT_COMPLETION
    /// The counter of a WEFT_COUNT operation's context (a struct weft_count,
    /// whose counter handle only core can resolve).
    counter *(*count_of)(void *context) = nullptr;

    [[gnu::always_inline]] void success(const completion &c, bool wanted) const
    {
        if (cq != nullptr && wanted) [[likely]] {
            write(cq, c);
        }
        if (cntr != nullptr) {
            cntr->add(1);  // every increment goes through the counter's triggers
        }
    }

    /// An operation posted with WEFT_COUNT completed: its own counter counts
    /// it (through that counter's triggers), no CQ entry.
    void counted(void *context) const
    {
        count_of(context)->add(1);
        if (cntr != nullptr) {
            cntr->add(1);
        }
    }

    /// ... failed: its counter's error count, and the error entry as for any operation.
    [[gnu::cold]] void counted_failure(const completion &c, const completion_error &e) const
    {
        count_of(c.context)->add_error(1);
        failure(c, e);
    }

    /// Success or failure of an operation posted with `op_flags`.
    [[gnu::cold]] void fail(const completion &c, const completion_error &e,
                            std::uint64_t op_flags) const
    {
        if ((op_flags & WEFT_COUNT) != 0) {
            counted_failure(c, e);
        } else {
            failure(c, e);
        }
    }

    [[gnu::cold]] void failure(const completion &c, const completion_error &e) const
    {
        if (cq != nullptr) {
            write_error(cq, c, e);  // errors are always reported, selective or not
        }
        if (cntr != nullptr) {
            cntr->add_error(1);
        }
    }
};

}  // namespace weft::proto
