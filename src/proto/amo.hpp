#pragma once
// Atomic operations on a peer's memory: on the transport's own atomics when it
// has this one (verbs: 64-bit fetch-and-add and compare-and-swap; self: CPU
// atomics), and otherwise over active messages, executed at the target with
// CPU atomics (amo_apply) -- every operation on every type, for OpenSHMEM 1.5
// and MPI accumulate.
//
//   am_id::amo         operation, type, count, target address and region key;
//                      operands follow (and compare values for cswap)
//   am_id::amo_reply   status, then the old values for a fetching operation
//
// Each element is updated atomically with respect to every other CPU atomic on
// the same location (amo_apply uses __atomic builtins: a lock-free
// read-modify-write, or a compare-and-swap loop for operations the CPU has no
// instruction for). Mixing those with a NIC's atomics on one location is the
// caller's choice to avoid (docs/architecture.md).

#include <cstddef>
#include <cstdint>

#include "base/mpool.hpp"
#include "proto/channel.hpp"
#include "proto/region.hpp"
#include "proto/rma.hpp"

namespace weft::proto {

/// Operations (MPI accumulate ops and the OpenSHMEM atomics).
enum class amo_op : std::uint8_t {
    add = 0,     ///< MPI_SUM, shmem add/inc (and fetch-)
    prod = 1,    ///< MPI_PROD
    min = 2,     ///< MPI_MIN
    max = 3,     ///< MPI_MAX
    band = 4,    ///< MPI_BAND, shmem and
    bor = 5,     ///< MPI_BOR, shmem or
    bxor = 6,    ///< MPI_BXOR, shmem xor
    land = 7,    ///< MPI_LAND
    lor = 8,     ///< MPI_LOR
    lxor = 9,    ///< MPI_LXOR
    swap = 10,   ///< MPI_REPLACE, shmem set (no fetch) and swap (fetch)
    cswap = 11,  ///< compare and swap (fetching)
    read = 12,   ///< MPI_NO_OP, shmem fetch: the value, unchanged
};
inline constexpr unsigned amo_op_count = 13;

/// Element types.
enum class amo_type : std::uint8_t {
    i8 = 0,
    u8 = 1,
    i16 = 2,
    u16 = 3,
    i32 = 4,
    u32 = 5,
    i64 = 6,
    u64 = 7,
    f32 = 8,
    f64 = 9,
    f80 = 10,  ///< long double (16 bytes in memory on x86-64)
    c32 = 11,  ///< float _Complex
    c64 = 12,  ///< double _Complex
};
inline constexpr unsigned amo_type_count = 13;

/// Bytes of one element of `t`.
[[nodiscard]] constexpr std::size_t amo_size(amo_type t) noexcept
{
    constexpr std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, sizeof(long double), 8, 16};
    return sizes[static_cast<unsigned>(t)];
}

/// Whether `op` applies to `t`: bitwise and logical operations and
/// compare-and-swap take integer types (OpenSHMEM's standard AMO types, MPI's
/// integer, logical and byte types); min and max no complex type.
[[nodiscard]] constexpr bool amo_valid(amo_op op, amo_type t) noexcept
{
    if (static_cast<unsigned>(op) >= amo_op_count || static_cast<unsigned>(t) >= amo_type_count) {
        return false;
    }
    const bool integer = static_cast<unsigned>(t) <= static_cast<unsigned>(amo_type::u64);
    const bool complex = t == amo_type::c32 || t == amo_type::c64;
    switch (op) {
        case amo_op::band:
        case amo_op::bor:
        case amo_op::bxor:
        case amo_op::land:
        case amo_op::lor:
        case amo_op::lxor:
        case amo_op::cswap:
            return integer;
        case amo_op::min:
        case amo_op::max:
            return !complex;
        default:
            return true;
    }
}

/// Apply `op` to `count` elements at `target` with `operand` (and `compare`
/// for cswap), atomically per element; the old values go to `result` when it
/// is not null. The caller checked amo_valid() and alignment. Unaligned
/// pointers `operand`, `compare` and `result` are fine.
void amo_apply(amo_op op, amo_type t, std::size_t count, void *target, const void *operand,
               const void *compare, void *result) noexcept;

// ------------------------------------------------------------------ wire formats

/// Flags in amo_hdr::flags.
inline constexpr std::uint8_t amo_flag_fetch = 1u << 0;  ///< reply with the old values

/// am_id::amo: `count` operands (then `count` compare values for cswap) follow.
struct amo_hdr {
    std::uint64_t op_id;   ///< initiator's operation id, echoed in the reply
    std::uint64_t am_key;  ///< the region in the target's table
    std::uint64_t raddr;   ///< target address of the first element (naturally aligned)
    std::uint8_t op;       ///< amo_op
    std::uint8_t type;     ///< amo_type
    std::uint8_t flags;    ///< amo_flag_*
    std::uint8_t reserved;
    std::uint32_t count;  ///< elements
};
static_assert(sizeof(amo_hdr) == 32);

/// am_id::amo_reply: the status; the old values follow for a fetching operation.
struct amo_reply_hdr {
    std::uint64_t op_id;
    wire_status status;  ///< 0, -WEFT_EACCES (refused: memory untouched), -WEFT_EINVAL
    std::uint32_t reserved;
};
static_assert(sizeof(amo_reply_hdr) == 16);

// ------------------------------------------------------------------ the module

/// An atomic of the initiator.
struct amo_request {
    amo_op op;
    amo_type type;
    std::size_t count;
    const void *operand;  ///< count elements
    const void *compare;  ///< cswap: count elements
    void *result;         ///< fetching: count elements, else nullptr
    std::uint64_t raddr;
};

struct amo_op_state : send_request, tracked_op {
    amo_request req;
    alignas(8) std::uint8_t args[256];  ///< operands and compare values, copied
    std::uint64_t id;
    std::uint64_t cookie;
    std::uint64_t am_key;
    std::uint64_t native_result;  ///< where a native 32-bit atomic lands before `result`
    bool native;
    bool pushed;
    bool cq_entry;  ///< rma_options::cq_entry
    bool fetching;  ///< the caller asked for the old values
    bool via_am;    ///< queued as an active message (counted in peer_state::amo_in_flight)
    rma_completion completion;
    class amo_module *module;
};

class amo_module {
  public:
    /// `rma`: for event messages after operations on event regions.
    amo_module(channel &ch, const region_table &regions, rma_module &rma);
    amo_module(const amo_module &) = delete;
    amo_module &operator=(const amo_module &) = delete;
    ~amo_module();

    /// Start an atomic on the peer `key` was unpacked for. 0: started (or done):
    /// `c` reports the end (WEFT_EACCES when the key does not cover it); a
    /// negative code: nothing started (an invalid operation or type, too many
    /// elements for one message, no memory, -WEFT_EAGAIN, -WEFT_ENOSYS: a
    /// device-atomics region and an operation the NIC reaching it lacks).
    ///
    /// The atomicity rule (docs/rma.md): a region's atomics run either all on
    /// CPUs (the default: self's CPU atomics, or the target's progress running
    /// amo_apply) or all on the NIC (key_flag_device_atomics), never mixed.
    [[nodiscard]] int start(const amo_request &r, const remote_key &key, rma_completion c,
                            rma_path path = rma_path::best);
    [[nodiscard]] int start(const amo_request &r, const remote_key &key, rma_completion c,
                            const rma_options &o);
    [[nodiscard]] std::size_t outstanding() const noexcept { return ops_.size(); }
    /// Most elements of `t` in one operation (one message each way).
    [[nodiscard]] static std::size_t max_count(amo_type t) noexcept
    {
        return sizeof(amo_op_state::args) / (2 * amo_size(t));
    }

  private:
    void finish(amo_op_state *op, int err);
    static status push(channel &ch, send_request *r);
    static void native_done(tracked_op *op, status st);
    static void on_amo(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void on_reply(void *m, rx_context &rx, const std::uint8_t *data, std::size_t len);
    static void peer_failed(void *m, std::uint32_t index, int err);
    static void source_failed(void *m, unsigned tl, transport::src_id src);

    channel &ch_;
    const region_table &regions_;
    rma_module &rma_;
    base::mpool<amo_op_state> pool_;
    id_table<amo_op_state> ops_;
    static const request_ops ops;
};

}  // namespace weft::proto
