#pragma once
// Endpoint set-up helpers shared by the C ABI layer (core/api.cpp).

#include <cstddef>
#include <cstdint>

#include "core/objects.hpp"

namespace weft::core {

/// Enable: open transports, build the engine, choose the data-path functions.
[[nodiscard]] int ep_enable(weft_ep *ep);
/// Undo ep_enable (close transports; pending operations are dropped).
void ep_disable(weft_ep *ep);
/// An address-vector entry the endpoint uses was removed (weft_av_remove).
void ep_forget_peer(weft_ep *ep, std::uint32_t index);
/// The CQ write function for a format and lock policy.
[[nodiscard]] void (*cq_writer(weft_cq_format format, bool locked))(void *,
                                                                    const proto::completion &);
/// The CQ read function (weft_cq_read/readfrom) for a format and lock policy.
[[nodiscard]] ssize_t (*cq_reader(weft_cq_format format, bool locked))(weft_cq *, void *,
                                                                       std::size_t, weft_addr_t *);
/// Bytes of one entry of `format`.
[[nodiscard]] std::size_t cq_entry_size(weft_cq_format format);
/// Whether objects of this domain take locks (thread-safe level or auto progress).
[[nodiscard]] bool domain_is_locked(const weft_domain *d);

}  // namespace weft::core
