#pragma once
// What proto/ puts on the wire beside each module's own headers: the list of
// active-message ids (one list, so two modules never take the same id), the
// active-message flags, the credit prefix, and proto/'s blob in an endpoint
// address. Every module's headers are in its own header file (tag.hpp,
// rndv.hpp, rma.hpp, amo.hpp); docs/protocols.md describes them all.
// Little-endian, naturally aligned, no padding that is not named; every size is
// a contract (static_assert).

#include <cstdint>

#include "transport/iface.hpp"

namespace weft::proto {

/// Active-message ids. A wire format: an id's value never changes and is never
/// reused. Each module registers handlers for its own (channel::register_am);
/// a message with an id nobody registered is dropped.
enum class am_id : std::uint8_t {
    credit_update = 1,  ///< channel: explicit credit update, the credit prefix alone
    eager = 2,          ///< tag: whole message, tag_eager_hdr
    eager_data = 3,     ///< tag: whole message with remote CQ data, tag_eager_data_hdr
    eager_first = 4,    ///< tag: first fragment of a larger message, tag_first_hdr
    eager_frag = 5,     ///< tag: a later fragment, tag_frag_hdr
    rndv_rts = 6,       ///< rndv: request to send, rndv_rts_hdr
    rndv_fin = 7,       ///< rndv: the data was read (or discarded), rndv_fin_hdr
    rndv_cts = 8,       ///< rndv: clear to send the data, rndv_cts_hdr
    rndv_data = 9,      ///< rndv: a piece of the data after a cts, rndv_data_hdr
    put = 10,           ///< rma: write a piece of a put, rma_put_hdr
    put_ack = 11,       ///< rma: a put (all its pieces) is in the target's memory, rma_ack_hdr
    get = 12,           ///< rma: read request, rma_get_hdr
    get_reply = 13,     ///< rma: a piece of the data read, rma_reply_hdr
    amo = 14,           ///< amo: an atomic operation, amo_hdr
    amo_reply = 15,     ///< amo: its result (or error), amo_reply_hdr
    rma_event = 16,     ///< rma: an operation on an event region, or a put's CQ data, rma_event_hdr
};

/// Active-message flags (the transport's second byte of the am word).
inline constexpr unsigned am_flag_credits = 1u << 0;  ///< a credit_prefix precedes the header

/// Credits piggybacked on a message (docs/credits.md). 8 bytes so the header that
/// follows stays aligned. Checked on receipt against the window.
struct credit_prefix {
    std::uint32_t credits;   ///< credits returned (<= credit_field_max)
    std::uint32_t reserved;  ///< zero
};
static_assert(sizeof(credit_prefix) == 8);

/// Status codes carried by replies (fin, put_ack, get_reply, amo_reply):
/// the negated WEFT_E* code of what went wrong at the target, 0 for success.
using wire_status = std::int32_t;

/// Version of proto/'s protocols: peers with another version are refused.
inline constexpr std::uint8_t proto_version = 2;

/// proto/'s blob in an endpoint address (id transport::proto_blob_id, per-host
/// part empty, this as the per-endpoint part): the parameters every peer must
/// agree on. A peer whose blob differs is refused with an error on both sides.
struct proto_params {
    std::uint8_t version;   ///< proto_version
    std::uint8_t reserved;  ///< zero
    std::uint16_t
        credit_initial;  ///< WEFT_CREDIT_INITIAL: credits both sides assume at first contact
};
static_assert(sizeof(proto_params) == 4, "proto_params is a wire format");

}  // namespace weft::proto
