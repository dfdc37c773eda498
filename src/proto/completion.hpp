#pragma once
// How proto/ reports completions upward without knowing the CQ's type: a sink
// of plain function pointers chosen once, when the endpoint is enabled (the CQ
// entry format and the lock policy are baked into the function chosen).

#include <cstddef>
#include <cstdint>

#include "proto/counter.hpp"

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

    [[gnu::always_inline]] void success(const completion &c, bool wanted) const
    {
        if (cq != nullptr && wanted) [[likely]] {
            write(cq, c);
        }
        if (cntr != nullptr) {
            cntr->add(1);  // every increment goes through the counter's triggers
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
