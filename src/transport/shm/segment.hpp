#pragma once
// The shared-memory receive segment of one shm endpoint: its wire format (every
// process on the node that talks to the endpoint maps it) and the control-path
// helpers that create, map, validate and clean up segments.
//
// Layout (offsets from the start of the mapping; docs/shm.md "Segment layout"):
//
//   [0, 384)              segment_header: info line, control line, producer (tail) line
//   [slots_offset, ...)   nslots x sender_slot (384 B each)
//   [cells_offset, ...)   fifo_size x cell (cell_size B each), page aligned
//   [bcopy_offset, ...)   fifo_size x bcopy slot (bcopy_size B each), page aligned
//
// Shared structures hold only offsets and indices, never pointers: every process
// maps the segment at a different address. Everything a peer wrote is untrusted:
// the geometry is validated once at map time and copied into process-local
// memory; indices and lengths read from cells are bounds-checked per message.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/status.hpp"
#include "transport/address.hpp"

namespace weft::transport::shm {

#ifndef WEFT_SHM_CELL_SIZE
/// Bytes of one FIFO cell. 64 measured best on the development machine (docs/shm.md);
/// a compile-time choice so the cell layout is a constant.
#define WEFT_SHM_CELL_SIZE 64
#endif

inline constexpr std::size_t cell_size = WEFT_SHM_CELL_SIZE;
static_assert(cell_size == 64 || cell_size == 128, "cell is one or two cache lines");

inline constexpr std::uint64_t segment_magic = 0x314d485354464557ULL;  // "WEFTSHM1" little-endian
/// 1: 64-byte sender addresses, an 8-bit active-message id; 2: variable sender
/// addresses (up to 256 bytes), a 16-bit active-message word.
inline constexpr std::uint32_t segment_version = 4;
/// The shm transport's wire id (its blob in addresses).
inline constexpr std::uint8_t wire_id = 2;

/// Limits accepted for the geometry of a segment (own config and peers' headers).
inline constexpr std::uint32_t min_fifo_size = 2;
inline constexpr std::uint32_t max_fifo_size = 1U << 20;
inline constexpr std::uint32_t min_bcopy_size = 256;
inline constexpr std::uint32_t max_bcopy_size = 1U << 20;
inline constexpr std::uint32_t max_nslots = 4096;  // src ids fit the 16-bit cell field
/// The segment cookie: 4 bytes, the per-endpoint part of the shm blob of an
/// endpoint's address; random and nonzero per open, it tells a live segment from
/// one of an earlier process with the same pid.
using cookie_t = std::uint32_t;

/// Written once by the owner before its address is published; read-only after.
struct alignas(128) segment_info {
    std::atomic<std::uint64_t> magic;  ///< segment_magic, stored last (release)
    std::uint32_t version;             ///< segment_version
    std::uint32_t header_size;         ///< sizeof(segment_header)
    std::uint64_t node_id;             ///< owner's address node id (address header)
    std::uint64_t cookie;              ///< random per open (cookie_t); also in the owner's address
    std::uint32_t owner_pid;           ///< owner's pid (the name also carries it)
    std::uint32_t owner_ep_id;         ///< owner's endpoint number
    std::uint32_t fifo_size;           ///< cells in the FIFO, power of two
    std::uint32_t cell_size;           ///< bytes per cell (must equal shm::cell_size)
    std::uint32_t bcopy_size;          ///< bytes per bcopy slot (a multiple of 64)
    std::uint32_t nslots;              ///< sender slots
    std::uint64_t slots_offset;        ///< offset of sender_slot[0]
    std::uint64_t cells_offset;        ///< offset of cell[0]
    std::uint64_t bcopy_offset;        ///< offset of bcopy slot 0
    std::uint64_t total_size;          ///< bytes of the whole segment (== file size)
};
static_assert(sizeof(segment_info) == 128);

/// Written rarely by senders (register, close) and by the owner (close).
struct alignas(128) segment_control {
    /// Incremented by a sender after it claims or closes a slot, so the owner
    /// rescans its slot table only when something changed.
    std::atomic<std::uint32_t> reg_gen;
    /// Set to 1 by the owner when it closes the endpoint: senders fail later sends.
    std::atomic<std::uint32_t> closed;
    /// CLOCK_MONOTONIC microseconds of the owner's last progress call or send
    /// while it had buffers exposed for rendezvous (its own cache line: only
    /// the owner writes it; a peer reads it once per claim). A receiver that
    /// sees it stale reads the data with CMA instead of waiting for the owner
    /// to copy it (docs/shm.md, "Rendezvous").
    alignas(64) std::atomic<std::uint64_t> active_us;
    /// How many receivers the owner has rendezvous buffers exposed to now
    /// (its sends waiting for them; written by the owner on expose and
    /// unexpose, in the same line). More than one: its CPU is shared between
    /// receivers, so a receiver weighs a push it would ask for accordingly
    /// (docs/shm.md, "Rendezvous"). A hint, untrusted: any value picks one of
    /// two correct copies.
    std::atomic<std::uint32_t> exposed;
};
static_assert(sizeof(segment_control) == 128);

/// The segment header: three separate 128-byte blocks (two cache lines each, so the
/// adjacent-line prefetcher does not pair the producers' tail with read-mostly data).
struct segment_header {
    segment_info info;    ///< [0, 128): read-only after creation
    segment_control ctl;  ///< [128, 256): rare writes
    /// [256, 384): the FIFO tail, touched only by producers (CAS) and, rarely, by the
    /// owner when it checks for a dead sender's reservation. Free-running counter;
    /// cell index = tail & (fifo_size - 1).
    alignas(128) std::atomic<std::uint32_t> tail;
};
static_assert(sizeof(segment_header) == 384, "segment header is a wire format");
static_assert(offsetof(segment_header, ctl) + offsetof(segment_control, active_us) == 192);
static_assert(offsetof(segment_header, ctl) + offsetof(segment_control, exposed) == 200);
static_assert(std::is_standard_layout_v<segment_header>);

/// sender_slot::state: kind in bits 32..39, the registering pid in bits 0..31.
enum class slot_kind : std::uint8_t {
    free = 0,    ///< may be claimed with a CAS from 0
    active = 1,  ///< claimed; addr is valid once the first message is published
    closed = 2,  ///< the sender closed; the owner frees the slot once its cells are consumed
};
[[nodiscard]] constexpr std::uint64_t slot_state(slot_kind k, std::uint32_t pid) noexcept
{
    return (static_cast<std::uint64_t>(k) << 32) | pid;
}
[[nodiscard]] constexpr slot_kind slot_state_kind(std::uint64_t s) noexcept
{
    return static_cast<slot_kind>((s >> 32) & 0xff);
}
[[nodiscard]] constexpr std::uint32_t slot_state_pid(std::uint64_t s) noexcept
{
    return static_cast<std::uint32_t>(s);
}

/// sender_slot::resv: resv_valid | the FIFO position the sender is reserving,
/// with resv_pair when it reserves that position and the next (a pair message).
inline constexpr std::uint64_t resv_valid = 1ULL << 32;
inline constexpr std::uint64_t resv_pair = 1ULL << 33;

/// One registered sender, in the receiver's segment. Slot index = src_id.
struct alignas(128) sender_slot {
    /// slot_state(kind, pid); 0 = free. Claimed by a sender with a CAS from 0.
    std::atomic<std::uint64_t> state;
    /// Written by the sender (release) before every tail CAS: the position it is
    /// about to reserve. Lets the owner find who holds an unpublished cell
    /// (docs/shm.md "Dead senders").
    std::atomic<std::uint64_t> resv;
    /// Times the owner freed this slot (written by the owner only). Claimers
    /// prefer slots never used, so a src id is reused as late as possible.
    std::atomic<std::uint32_t> uses;
    /// Bytes of `addr` (written by the sender before its first send; checked
    /// by the owner before use: at most max_address_size).
    std::uint32_t addr_len;
    std::uint8_t reserved_[40];  ///< zero
    /// The sender's endpoint address (for remote_address()), as address.hpp lays it out.
    std::uint8_t addr[max_address_size];
};
static_assert(sizeof(sender_slot) == 384, "sender slot is a wire format");

/// The kind of a cell (bits 24..31 of cell::len_kind).
enum class cell_kind : std::uint8_t {
    inline_data = 1,  ///< header + payload in cell::data
    bcopy = 2,        ///< header + payload in the cell's bcopy slot
    /// header + payload in cell::data, continued in the next cell from its byte 4
    /// (all but its seq word): a message of max_inline + 1 .. max_pair bytes in
    /// two adjacent cells, reserved with one tail CAS (docs/shm.md "Pairs")
    inline_pair = 3,
};

/// cell::len_kind: the length in bits 0..23 (a bcopy slot is at most 1 MiB), the kind above.
inline constexpr std::uint32_t cell_len_max = (1u << 24) - 1;

[[nodiscard]] constexpr std::uint32_t cell_len_kind(std::uint32_t len, cell_kind k) noexcept
{
    return (len & cell_len_max) | static_cast<std::uint32_t>(k) << 24;
}

/// One FIFO cell. All header fields are atomics so each is read exactly once
/// (no re-read between bounds check and use of peer-written data).
struct alignas(cell_size) cell {
    /// Vyukov sequence: == pos when free for the sender reserving pos, pos + 1 when
    /// published, pos + fifo_size after the receiver consumed it (free for next lap).
    std::atomic<std::uint32_t> seq;
    std::atomic<std::uint16_t> am;        ///< transport::am_word: id and proto flags
    std::atomic<std::uint16_t> src;       ///< sender slot index, < nslots
    std::atomic<std::uint32_t> len_kind;  ///< header + payload bytes | cell_kind << 24
    std::uint8_t data[cell_size - 12];    ///< inline header + payload
};
static_assert(sizeof(cell) == cell_size, "cell is a wire format");
static_assert(offsetof(cell, data) == 12);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

/// Header + payload bytes that fit in one cell.
inline constexpr std::size_t max_inline = sizeof(cell::data);
/// Bytes of a pair's second cell that carry its body: all but the seq word,
/// which keeps the value that says "free for this position" (nobody reserves
/// that position: the tail CAS skipped it).
inline constexpr std::size_t pair_tail_offset = sizeof(cell::seq);
/// Header + payload bytes that fit in a pair of cells.
inline constexpr std::size_t max_pair = max_inline + cell_size - pair_tail_offset;
static_assert(max_pair == 2 * cell_size - 16);

/// Offsets derived from the geometry; the owner and every peer compute the same.
struct segment_layout {
    std::uint64_t slots_offset;
    std::uint64_t cells_offset;
    std::uint64_t bcopy_offset;
    std::uint64_t total_size;
};

[[nodiscard]] constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) noexcept
{
    return (v + a - 1) & ~(a - 1);
}

[[nodiscard]] constexpr segment_layout compute_layout(std::uint32_t fifo_size,
                                                      std::uint32_t bcopy_size,
                                                      std::uint32_t nslots) noexcept
{
    constexpr std::uint64_t page = 4096;
    segment_layout l{};
    l.slots_offset = sizeof(segment_header);
    l.cells_offset = align_up(l.slots_offset + std::uint64_t{nslots} * sizeof(sender_slot), page);
    l.bcopy_offset = align_up(l.cells_offset + std::uint64_t{fifo_size} * cell_size, page);
    l.total_size = align_up(l.bcopy_offset + std::uint64_t{fifo_size} * bcopy_size, page);
    return l;
}

/// Typed views of a mapped segment (base = start of the mapping).
[[nodiscard]] inline segment_header *seg_header(void *base) noexcept
{
    return static_cast<segment_header *>(base);
}
[[nodiscard]] inline sender_slot *seg_slots(void *base, const segment_layout &l) noexcept
{
    return reinterpret_cast<sender_slot *>(static_cast<std::uint8_t *>(base) + l.slots_offset);
}
[[nodiscard]] inline cell *seg_cells(void *base, const segment_layout &l) noexcept
{
    return reinterpret_cast<cell *>(static_cast<std::uint8_t *>(base) + l.cells_offset);
}
[[nodiscard]] inline std::uint8_t *seg_bcopy(void *base, const segment_layout &l) noexcept
{
    return static_cast<std::uint8_t *>(base) + l.bcopy_offset;
}

/// The validated, process-local copy of a segment's geometry.
struct segment_geometry {
    std::uint32_t fifo_size;
    std::uint32_t bcopy_size;
    std::uint32_t nslots;
    segment_layout layout;
};

/// A mapping, unmapped on destruction.
class mapping {
  public:
    mapping() = default;
    mapping(void *base, std::size_t size) : base_(base), size_(size) {}
    mapping(mapping &&o) noexcept : base_(o.base_), size_(o.size_) { o.base_ = nullptr; }
    mapping &operator=(mapping &&o) noexcept;
    mapping(const mapping &) = delete;
    mapping &operator=(const mapping &) = delete;
    ~mapping() { reset(); }

    void reset() noexcept;
    [[nodiscard]] void *base() const noexcept { return base_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

  private:
    void *base_ = nullptr;
    std::size_t size_ = 0;
};

/// The /dev/shm name of an endpoint's segment: "/weft-shm-<pid>-<ep_id>".
[[nodiscard]] std::string segment_name(std::uint32_t pid, std::uint32_t ep_id);
/// Unlink a segment (or a memory domain's region table) this process created
/// (at close). Names a process never unlinked are unlinked by an atexit
/// handler on a normal exit.
void unlink_segment(const std::string &name);
/// Remember a /dev/shm name this process just created, for the atexit handler
/// (unlink_segment forgets it again).
void note_created(const std::string &name);

/// The segment cookie in an address's shm blob; false when it has none (or a malformed one).
[[nodiscard]] bool address_cookie(const address &a, cookie_t &cookie) noexcept;

/// What create_segment() needs.
struct segment_params {
    std::uint64_t node_id;
    std::uint32_t pid;
    std::uint32_t ep_id;
    cookie_t cookie;
    std::uint32_t fifo_size;
    std::uint32_t bcopy_size;
    std::uint32_t nslots;
    bool placement;  ///< bind the pages to the caller's NUMA node before they are touched
};

/// Create (replacing a stale one of the same name), size, map and initialise an
/// endpoint's receive segment. On success `out` maps it and `geo` describes it.
[[nodiscard]] status create_segment(const segment_params &p, mapping &out, segment_geometry &geo);

/// Map a peer's segment and validate its header against the file size and the
/// peer's identity and cookie. no_entry when the segment does not exist,
/// bad_message when it does not validate.
[[nodiscard]] status map_segment(const endpoint_id &peer, cookie_t cookie, mapping &out,
                                 segment_geometry &geo);

/// Validate a mapped header (exposed for tests). `size` is the mapped size.
[[nodiscard]] status validate_header(const segment_header &h, std::size_t size,
                                     const endpoint_id &peer, cookie_t cookie,
                                     segment_geometry &geo);

/// Unlink /dev/shm/weft-shm-<pid>-<ep> segments, /dev/shm/weft-md-<pid>-<serial>
/// region tables and /dev/shm/weft-mem-<pid>-<id> allocations whose pid no
/// longer exists. Returns the number removed.
unsigned cleanup_stale_segments(std::uint32_t own_pid) noexcept;

}  // namespace weft::transport::shm
