#pragma once
// The shm memory domain: registrations published in a region table, and the
// remote keys that name them. docs/shm.md, "One-sided put and get".
//
// Each memory domain that registers memory creates one POSIX shared-memory
// object, "/weft-md-<pid>-<serial>" (serial: the domain's number in its
// process), and writes one slot per registration there. A peer that holds a
// key maps the table read-only and checks the key against the slot (live, same
// generation, range, access) before it writes or reads the memory with
// cross-memory attach (process_vm_writev/readv): the target publishes what may
// be touched and takes it back with dereg, without ever running for an
// operation.
//
// Memory the domain allocates (memory_domain::alloc) is one more POSIX
// shared-memory object per allocation, "/weft-mem-<pid>-<id>" (id: a number
// unique in the process). A registration inside one names it in its slot
// (mem_id, mem_base, mem_len) and its key says so (the mapped bit): a peer
// then maps the object itself and reaches the memory with loads, stores and
// CPU atomics, after the same slot check.
//
// Layout (offsets from the start of the object; sizes are contracts):
//
//   [0, 64)                      md_table_header
//   [64, 64 + 64 * nslots)       md_slot[nslots]
//   up to total_size             zero padding to a page
//
// The object is sized once, by the slot limit (md_table_slots), and never
// grows: tmpfs gives pages only to the slots written, so the unused part costs
// address space, not memory. A full table does not fail a registration: it
// gets no slot and its key tells peers to use active messages.
//
// Everything a reader finds in a table is untrusted: the header is validated
// against the object's size and the key's owner at map time, the slot index
// against the validated slot count, and the slot's fields are read as a
// seqlock and checked before use.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "base/status.hpp"
#include "transport/iface.hpp"
#include "transport/shm/segment.hpp"

namespace weft::transport::shm {

inline constexpr std::uint64_t md_table_magic = 0x31544d4454464557ULL;  // "WEFTMDT1" little-endian
inline constexpr std::uint32_t md_table_version = 2;
/// Slots of the tables this build creates: registrations live at once per
/// domain with a key (more are reached by active messages). 16384 x 64 bytes
/// = 1 MiB of address space per table; tmpfs backs only the pages written.
inline constexpr std::uint32_t md_table_slots = 16384;
/// Most slots a table may have (own parameters and peers' headers). A slot
/// index fits 24 bits of the unpacked key (rkey::w[1]).
inline constexpr std::uint32_t max_md_slots = 1U << 20;

/// Written once by the owner when it creates the table; read-only after.
struct md_table_header {
    std::atomic<std::uint64_t> magic;  ///< md_table_magic, stored last (release)
    std::uint32_t version;             ///< md_table_version
    std::uint32_t header_size;         ///< sizeof(md_table_header)
    std::uint32_t slot_size;           ///< sizeof(md_slot)
    std::uint32_t nslots;              ///< slots in the table, <= max_md_slots
    std::uint32_t owner_pid;           ///< the owner's pid (the name also carries it)
    std::uint32_t serial;              ///< the domain's number in its process (also in the name)
    std::uint64_t total_size;          ///< bytes of the object (== file size, page multiple)
    std::uint8_t reserved_[24];        ///< zero
};
static_assert(sizeof(md_table_header) == 64, "region table header is a wire format");
static_assert(std::is_standard_layout_v<md_table_header>);

/// One registration. Written by the owner only, as a seqlock: the fields while
/// the slot is not live, then `word` (release); a reader loads `word`
/// (acquire), the fields, and `word` again, and uses the fields only if both
/// loads returned the same live word of the key's generation.
struct md_slot {
    /// Bit 0 live, bits 1..32 the generation (md_live_word, md_dead_word);
    /// dereg stores the next generation, not live, in one store.
    std::atomic<std::uint64_t> word;
    std::atomic<std::uint64_t> base;    ///< first byte of the region (owner's address)
    std::atomic<std::uint64_t> len;     ///< bytes of the region
    std::atomic<std::uint32_t> access;  ///< transport::access bits of the registration
    /// 0: ordinary memory (CMA). Else the registration lies inside the
    /// domain's allocation of this number: the object "/weft-mem-<pid>-<mem_id>",
    /// mem_len bytes, mapped at mem_base in the owner.
    std::atomic<std::uint32_t> mem_id;
    std::atomic<std::uint64_t> mem_base;  ///< the allocation's first byte (owner's address)
    std::atomic<std::uint64_t> mem_len;   ///< bytes of the allocation's object (a page multiple)
    std::uint64_t reserved_[2];           ///< zero
};
static_assert(sizeof(md_slot) == 64, "region table slot is a wire format");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

/// The word of a live registration of `generation`.
[[nodiscard]] constexpr std::uint64_t md_live_word(std::uint32_t generation) noexcept
{
    return std::uint64_t{generation} << 1 | 1U;
}
/// The word of a slot that is not live (its next registration will be `generation`).
[[nodiscard]] constexpr std::uint64_t md_dead_word(std::uint32_t generation) noexcept
{
    return std::uint64_t{generation} << 1;
}

inline constexpr std::uint64_t md_slots_offset = sizeof(md_table_header);

/// Bytes of a table of `nslots` slots (a page multiple).
[[nodiscard]] constexpr std::uint64_t md_table_size(std::uint32_t nslots) noexcept
{
    return align_up(md_slots_offset + std::uint64_t{nslots} * sizeof(md_slot), 4096);
}

/// The /dev/shm name of a domain's table: "/weft-md-<pid>-<serial>".
[[nodiscard]] std::string md_table_name(std::uint32_t pid, std::uint32_t serial);

/// The /dev/shm name of an allocation (memory_domain::alloc): "/weft-mem-<pid>-<id>".
[[nodiscard]] std::string mem_object_name(std::uint32_t pid, std::uint32_t id);
/// Largest allocation a peer may make us map (sanity bound on the slot's mem_len).
inline constexpr std::uint64_t max_mem_len = std::uint64_t{1} << 46;

// ------------------------------------------------------------------ keys

/// A packed key (memory_domain::pack_rkey): four 32-bit words in host order
/// (peers share the node), 16 bytes = transport::max_rkey_size.
struct md_key {
    std::uint32_t pid;         ///< the owner process
    std::uint32_t serial;      ///< its domain's table
    std::uint32_t slot;        ///< slot index (| md_key_mapped), or md_no_slot
    std::uint32_t generation;  ///< the slot's generation while this registration is live
};
static_assert(sizeof(md_key) == 16 && sizeof(md_key) <= max_rkey_size);
inline constexpr std::size_t md_key_size = sizeof(md_key);
/// The slot of a registration that has none (table full, or no table could be
/// created): peers use active messages for it (unpack_rkey: not_supported).
inline constexpr std::uint32_t md_no_slot = UINT32_MAX;
/// Bit of md_key::slot: the registration lies in memory the domain allocated,
/// which peers map (the slot names the object). A hint for the initiator's
/// choice of path; the slot decides.
inline constexpr std::uint32_t md_key_mapped = 1U << 31;

/// What an unpacked shm key (rkey) names: the type byte, bits 56..63 of w[1].
enum class rkey_kind : std::uint8_t {
    /// A rendezvous exposure: no key bytes (rkey_len 0), the peer's pid and the
    /// address name the buffer; only get reads it. rndv passes a zero rkey.
    exposure = 0,
    /// A registration in a region table (md_key).
    region = 1,
    /// A registration in a region table inside memory its domain allocated
    /// (md_key with md_key_mapped): peers map it.
    mapped = 2,
};

/// The unpacked form: w[0] = pid | serial << 32; w[1] = generation | slot << 32
/// | kind << 56 (slot < max_md_slots fits the 24 bits between; the mapped bit
/// becomes the kind).
[[nodiscard]] constexpr rkey to_rkey(const md_key &k) noexcept
{
    const rkey_kind kind = (k.slot & md_key_mapped) != 0 ? rkey_kind::mapped : rkey_kind::region;
    return {{std::uint64_t{k.pid} | std::uint64_t{k.serial} << 32,
             std::uint64_t{k.generation} | std::uint64_t{k.slot & ~md_key_mapped} << 32 |
                 std::uint64_t{static_cast<std::uint8_t>(kind)} << 56}};
}
[[nodiscard]] constexpr rkey_kind kind_of(const rkey &k) noexcept
{
    return static_cast<rkey_kind>(k.w[1] >> 56);
}
[[nodiscard]] constexpr md_key md_key_of(const rkey &k) noexcept
{
    return {static_cast<std::uint32_t>(k.w[0]), static_cast<std::uint32_t>(k.w[0] >> 32),
            static_cast<std::uint32_t>((k.w[1] >> 32) & 0xffffffU),
            static_cast<std::uint32_t>(k.w[1])};
}

/// Parse a peer's packed key (the bytes came from the peer: length-checked).
/// ok; not_supported for a key without a slot (and for no bytes: a rendezvous
/// exposure); bad_message when malformed.
[[nodiscard]] status unpack_md_key(const std::uint8_t *data, std::size_t len, rkey &out) noexcept;

// ------------------------------------------------------------------ the owner

/// Whether a domain gives keys at all.
enum class md_keys : std::uint8_t {
    publish,  ///< a region table and md_key_size-byte keys
    none,     ///< rkey_size() == 0 (WEFT_SHM_CMA=n): peers use active messages
};

/// How a domain publishes its registrations.
struct md_params {
    /// Table size, in [1, max_md_slots] (md_table_slots; tests use small ones).
    std::uint32_t nslots;
    md_keys keys;
    /// Memory from alloc() is bound to the caller's NUMA node before anyone
    /// touches it (WEFT_TOPO_PLACEMENT, docs/topology.md).
    bool placement = false;
};

/// The shm memory domain. Its table is created on the first registration and
/// unlinked when the domain is destroyed or the process exits.
[[nodiscard]] std::unique_ptr<memory_domain> make_md(const md_params &p);

// ------------------------------------------------------------------ a reader

/// Validate a peer's mapped table header against the mapped size and the
/// owner the key names; `nslots` gets the validated slot count. bad_message
/// when it does not validate.
[[nodiscard]] status validate_md_table(const md_table_header &h, std::size_t size,
                                       std::uint32_t pid, std::uint32_t serial,
                                       std::uint32_t &nslots) noexcept;

/// Map a peer's table read-only and validate it. no_entry when it does not
/// exist, bad_message when it does not validate.
[[nodiscard]] status map_md_table(std::uint32_t pid, std::uint32_t serial, mapping &out,
                                  std::uint32_t &nslots);

/// The allocation a live registration lies in, as its slot says (untrusted
/// beyond what check_region verified: mem_base <= base, base + len <= mem_base
/// + mem_len, mem_len a non-zero page multiple up to max_mem_len).
struct mem_view {
    std::uint32_t id = 0;  ///< 0: not in an allocation
    std::uint64_t base = 0;
    std::uint64_t len = 0;
};

/// Is [raddr, raddr + len) inside the live registration `k` names, with every
/// right in `acc`? `slots` and `nslots` from a validated table. ok or access.
/// `mem`, if given, gets the slot's allocation, read in the same seqlock
/// section (id 0 when the fields do not describe an allocation around the region).
[[nodiscard]] status check_region(const md_slot *slots, std::uint32_t nslots, const md_key &k,
                                  std::uint64_t raddr, std::size_t len, unsigned acc,
                                  mem_view *mem = nullptr) noexcept;

}  // namespace weft::transport::shm
