// The shm memory domain and its region table (md.hpp; docs/shm.md, "One-sided
// put and get"): the owner's side (create, reg, dereg, pack) and a reader's
// (map, validate, check a key).

#include "transport/shm/md.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/log.hpp"
#include "base/pid.hpp"
#include "base/topo.hpp"
#include "transport/shm/shm.hpp"

namespace weft::transport::shm {

namespace {

/// Domains created by this process: the serial in a table's name. Relaxed: a
/// unique number only.
std::atomic<std::uint32_t> next_serial{1};
/// Allocations made by this process (every domain): the id in an object's
/// name and in slots. Relaxed: a unique number only (0 is "none").
std::atomic<std::uint32_t> next_mem_id{1};

constexpr std::uint64_t page_size = 4096;

[[nodiscard]] md_slot *table_slots(void *base) noexcept
{
    return reinterpret_cast<md_slot *>(static_cast<std::uint8_t *>(base) + md_slots_offset);
}

/// A handle: generation << 32 | slot (slot md_no_slot: registered without
/// one; with md_key_mapped: inside an allocation, which pack_rkey passes on).
[[nodiscard]] constexpr std::uint64_t make_handle(std::uint32_t slot, std::uint32_t gen) noexcept
{
    return std::uint64_t{gen} << 32 | slot;
}

class shm_md final : public memory_domain {
  public:
    explicit shm_md(const md_params &p)
        : nslots_(p.nslots),
          keys_(p.keys),
          placement_(p.placement),
          pid_(base::self_pid()),
          serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
          name_(md_table_name(pid_, serial_))
    {
    }

    ~shm_md() override
    {
        if (base::self_pid() != pid_) {
            return;  // a forked child's copy: the table and allocations are its parent's
        }
        // Allocations not freed go with the domain (weft_mr_close frees them
        // before the domain can close; this is for a domain dropped early).
        for (auto &[base, m] : allocs_) {
            (void)base;
            m.map.reset();
            unlink_segment(m.name);
        }
        allocs_.clear();
        if (table_.base() == nullptr) {
            return;
        }
        // Registrations left open die with the domain: a peer that still maps
        // the (unlinked) table must refuse their keys. Release: as dereg.
        md_slot *slots = table_slots(table_.base());
        for (std::uint32_t s = 0; s < regions_.size(); ++s) {
            if (regions_[s].live) {
                slots[s].word.store(md_dead_word(regions_[s].gen + 1), std::memory_order_release);
            }
        }
        table_.reset();
        unlink_segment(name_);
    }

    [[nodiscard]] std::size_t rkey_size() const noexcept override
    {
        return keys_ == md_keys::publish ? md_key_size : 0;
    }

    [[nodiscard]] status reg(void *buf, std::size_t len, unsigned acc,
                             std::uint64_t &handle) override
    {
        handle = make_handle(md_no_slot, 0);
        if (keys_ == md_keys::none) {
            return status::ok;
        }
        const std::lock_guard g(mutex_);
        if (base::self_pid() != pid_) {
            // A forked child of the domain's creator: writing the table would
            // publish its addresses under its parent's pid. Active messages.
            return status::ok;
        }
        const std::uint32_t slot = take_slot();
        if (slot == md_no_slot) {
            return status::ok;  // no table or no room: still registered, without a key
        }
        region &r = regions_[slot];
        md_slot &s = table_slots(table_.base())[slot];
        const allocation *m = find_alloc(reinterpret_cast<std::uintptr_t>(buf), len);
        // Release fence: orders the store that took the slot's last registration
        // away (dereg: not live, next generation) before the new fields, for a
        // reader that reads the fields and then re-checks the word (seqlock).
        std::atomic_thread_fence(std::memory_order_release);
        s.base.store(reinterpret_cast<std::uintptr_t>(buf), std::memory_order_relaxed);
        s.len.store(len, std::memory_order_relaxed);
        s.access.store(acc, std::memory_order_relaxed);
        s.mem_id.store(m != nullptr ? m->id : 0, std::memory_order_relaxed);
        s.mem_base.store(m != nullptr ? reinterpret_cast<std::uintptr_t>(m->map.base()) : 0,
                         std::memory_order_relaxed);
        s.mem_len.store(m != nullptr ? m->map.size() : 0, std::memory_order_relaxed);
        // Release: a reader that acquires this word sees the fields above.
        s.word.store(md_live_word(r.gen), std::memory_order_release);
        r.live = true;
        r.mem_id = m != nullptr ? m->id : 0;
        handle = make_handle(m != nullptr ? slot | md_key_mapped : slot, r.gen);
        return status::ok;
    }

    [[nodiscard]] status alloc(std::size_t len, void *&addr, std::uint64_t &handle) override
    {
        if (keys_ == md_keys::none || len == 0 || len > max_mem_len) {
            // Without keys no peer could find the memory: plain memory serves.
            return status::not_supported;
        }
        const std::lock_guard g(mutex_);
        if (base::self_pid() != pid_) {
            return status::not_supported;  // a forked child: names are its parent's
        }
        const std::uint32_t id = next_mem_id.fetch_add(1, std::memory_order_relaxed);
        if (id == 0) {
            return status::not_supported;  // 2^32 allocations: the ids wrapped
        }
        const std::string name = mem_object_name(pid_, id);
        const std::uint64_t size = align_up(len, page_size);
        // O_EXCL: an object of this name is stale (an earlier process with our pid).
        int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {
            WEFT_LOG(shm, debug, "replacing stale allocation %s", name.c_str());
            shm_unlink(name.c_str());
            fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        }
        if (fd < 0) {
            const int err = errno;
            WEFT_LOG(shm, warn, "shm_open(%s) failed: %s", name.c_str(), std::strerror(err));
            return err == ENOMEM || err == ENOSPC ? status::no_memory : status::access;
        }
        void *base = MAP_FAILED;
        int err = 0;
        const char *what = "ftruncate";
        // The object is zero-filled (tmpfs); pages are given as they are touched.
        if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
            what = "mmap";
            base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
        err = errno;
        close(fd);
        if (base == MAP_FAILED) {
            WEFT_LOG(shm, warn, "%s(%s, %" PRIu64 ") failed: %s", what, name.c_str(), size,
                     std::strerror(err));
            shm_unlink(name.c_str());
            return status::no_memory;
        }
        note_created(name);
        if (placement_) {
            // The policy is the file's: it holds for the pages peers fault in too.
            (void)base::bind_local(base::topology::machine(), base, size, name.c_str());
        }
        allocs_.emplace(reinterpret_cast<std::uintptr_t>(base),
                        allocation{id, mapping(base, size), name});
        addr = base;
        handle = id;
        return status::ok;
    }

    void free(std::uint64_t handle) noexcept override
    {
        const std::lock_guard g(mutex_);
        const auto it = std::find_if(allocs_.begin(), allocs_.end(),
                                     [&](const auto &e) { return e.second.id == handle; });
        if (it == allocs_.end() || handle == 0) {
            return;
        }
        // Registrations still open inside it (the caller should have closed
        // them) die first: no peer may map an object that is going away.
        for (std::uint32_t s = 0; s < regions_.size(); ++s) {
            if (regions_[s].live && regions_[s].mem_id == it->second.id) {
                kill_slot(s);
            }
        }
        // Peers that mapped it keep their mapping (and its pages) until they
        // unmap it; their slot checks fail from the dereg on.
        unlink_segment(it->second.name);
        allocs_.erase(it);  // unmaps it here
    }

    void dereg(std::uint64_t handle) noexcept override
    {
        const auto slot = static_cast<std::uint32_t>(handle) & ~md_key_mapped;
        const auto gen = static_cast<std::uint32_t>(handle >> 32);
        const std::lock_guard g(mutex_);
        if (slot >= regions_.size() || !regions_[slot].live || regions_[slot].gen != gen ||
            base::self_pid() != pid_) {
            return;  // registered without a slot, not ours, or the parent's table
        }
        kill_slot(slot);
    }

    [[nodiscard]] status pack_rkey(std::uint64_t handle, std::uint8_t *out) const override
    {
        if (keys_ == md_keys::none) {
            return status::ok;  // rkey_size() == 0: nothing to write
        }
        const md_key k{pid_, serial_, static_cast<std::uint32_t>(handle),
                       static_cast<std::uint32_t>(handle >> 32)};
        std::memcpy(out, &k, sizeof(k));
        return status::ok;
    }

  private:
    struct region {
        std::uint32_t gen = 1;     ///< of the current (live) or next registration
        std::uint32_t mem_id = 0;  ///< the allocation it lies in (0: none)
        bool live = false;
    };

    /// One allocation (alloc): the owner's mapping of its object.
    struct allocation {
        std::uint32_t id;
        mapping map;
        std::string name;
    };

    /// Take live registration `slot` away (mutex held).
    void kill_slot(std::uint32_t slot) noexcept
    {
        region &r = regions_[slot];
        r.live = false;
        r.mem_id = 0;
        ++r.gen;  // wraps after 2^32 registrations of one slot
        // One store clears live and moves to the next generation: every key of
        // this registration fails from here on. Release: keeps it after the
        // registration's own stores (a reader that sees it sees nothing newer
        // of the old registration, and the next reg's fence orders it first).
        table_slots(table_.base())[slot].word.store(md_dead_word(r.gen), std::memory_order_release);
        free_.push_back(slot);  // LIFO: reused first, so generations are exercised
    }

    /// The allocation holding all of [buf, buf + len), or nullptr (mutex held).
    [[nodiscard]] const allocation *find_alloc(std::uintptr_t buf, std::size_t len) const
    {
        auto it = allocs_.upper_bound(buf);
        if (it == allocs_.begin()) {
            return nullptr;
        }
        --it;
        const std::uintptr_t off = buf - it->first;
        const std::size_t size = it->second.map.size();
        return off <= size && len <= size - off ? &it->second : nullptr;
    }

    /// A free slot (the table created first if needed), or md_no_slot.
    [[nodiscard]] std::uint32_t take_slot()
    {
        if (table_.base() == nullptr && !create_table()) {
            return md_no_slot;
        }
        if (!free_.empty()) {
            const std::uint32_t s = free_.back();
            free_.pop_back();
            return s;
        }
        if (regions_.size() < nslots_) {
            regions_.emplace_back();
            return static_cast<std::uint32_t>(regions_.size() - 1);
        }
        if (!full_logged_) {
            full_logged_ = true;
            WEFT_LOG(shm, warn,
                     "region table %s is full (%" PRIu32
                     " registrations): peers reach further registrations of this domain "
                     "through active messages",
                     name_.c_str(), nslots_);
        }
        return md_no_slot;
    }

    [[nodiscard]] bool create_table()
    {
        if (table_failed_) {
            return false;
        }
        const std::uint64_t size = md_table_size(nslots_);
        // O_EXCL: a table of this name already there is stale (an earlier
        // process with our pid, killed): replace it, as create_segment does.
        int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {
            WEFT_LOG(shm, debug, "replacing stale region table %s", name_.c_str());
            shm_unlink(name_.c_str());
            fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        }
        void *base = MAP_FAILED;
        int err = 0;
        const char *what = "shm_open";
        if (fd >= 0) {
            if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
                err = errno;
                what = "ftruncate";
            } else {
                // No MAP_POPULATE: only the pages of slots in use get memory.
                base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                err = errno;
                what = "mmap";
            }
            close(fd);
        } else {
            err = errno;
        }
        if (base == MAP_FAILED) {
            table_failed_ = true;
            WEFT_LOG(shm, warn,
                     "%s(%s) failed: %s; peers reach this domain's registrations through active "
                     "messages",
                     what, name_.c_str(), std::strerror(err));
            if (fd >= 0) {
                shm_unlink(name_.c_str());
            }
            return false;
        }
        table_ = mapping(base, size);
        note_created(name_);
        // The file is zero-filled: every slot is not live, generation 0.
        auto *h = static_cast<md_table_header *>(base);
        h->version = md_table_version;
        h->header_size = sizeof(md_table_header);
        h->slot_size = sizeof(md_slot);
        h->nslots = nslots_;
        h->owner_pid = pid_;
        h->serial = serial_;
        h->total_size = size;
        // Release: a reader that acquires the magic sees the header.
        h->magic.store(md_table_magic, std::memory_order_release);
        return true;
    }

    const std::uint32_t nslots_;
    const md_keys keys_;
    const bool placement_;
    const std::uint32_t pid_;
    const std::uint32_t serial_;
    const std::string name_;
    std::mutex mutex_;  // reg and dereg are control path, from any thread
    mapping table_;
    std::vector<region> regions_;                  ///< the owner's own copy of each slot's state
    std::map<std::uintptr_t, allocation> allocs_;  ///< by base address
    std::vector<std::uint32_t> free_;
    bool table_failed_ = false;
    bool full_logged_ = false;
};

}  // namespace

std::string md_table_name(std::uint32_t pid, std::uint32_t serial)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/weft-md-%" PRIu32 "-%" PRIu32, pid, serial);
    return buf;
}

std::string mem_object_name(std::uint32_t pid, std::uint32_t id)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/weft-mem-%" PRIu32 "-%" PRIu32, pid, id);
    return buf;
}

status unpack_md_key(const std::uint8_t *data, std::size_t len, rkey &out) noexcept
{
    if (len == 0) {
        return status::not_supported;  // a rendezvous exposure: no key bytes
    }
    if (len != md_key_size || data == nullptr) {
        return status::bad_message;
    }
    md_key k{};
    std::memcpy(&k, data, sizeof(k));
    if (k.slot == md_no_slot) {
        return status::not_supported;  // registered without a slot: active messages
    }
    if ((k.slot & ~md_key_mapped) >= max_md_slots) {
        return status::bad_message;
    }
    out = to_rkey(k);
    return status::ok;
}

std::unique_ptr<memory_domain> make_md(const md_params &p)
{
    md_params q = p;
    if (q.nslots == 0 || q.nslots > max_md_slots) {
        q.nslots = md_table_slots;
    }
    return std::make_unique<shm_md>(q);
}

status validate_md_table(const md_table_header &h, std::size_t size, std::uint32_t pid,
                         std::uint32_t serial, std::uint32_t &nslots) noexcept
{
    // Acquire: pairs with the owner's release store of the magic.
    if (size < sizeof(md_table_header) ||
        h.magic.load(std::memory_order_acquire) != md_table_magic) {
        return status::bad_message;
    }
    // Each field read once: the peer could change them under us.
    const std::uint32_t version = h.version;
    const std::uint32_t header_size = h.header_size;
    const std::uint32_t slot_size = h.slot_size;
    const std::uint32_t n = h.nslots;
    const std::uint64_t total = h.total_size;
    if (version != md_table_version || header_size != sizeof(md_table_header) ||
        slot_size != sizeof(md_slot) || n == 0 || n > max_md_slots || total != md_table_size(n) ||
        total != size || h.owner_pid != pid || h.serial != serial) {
        return status::bad_message;
    }
    nslots = n;
    return status::ok;
}

status map_md_table(std::uint32_t pid, std::uint32_t serial, mapping &out, std::uint32_t &nslots)
{
    const std::string name = md_table_name(pid, serial);
    const int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd < 0) {
        const int err = errno;
        WEFT_LOG(shm, debug, "no region table %s: %s", name.c_str(), std::strerror(err));
        return err == ENOENT ? status::no_entry : status::access;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(md_table_header)) ||
        static_cast<std::uint64_t>(st.st_size) > md_table_size(max_md_slots)) {
        WEFT_LOG(shm, debug, "region table %s has a bad size (%lld bytes)", name.c_str(),
                 static_cast<long long>(st.st_size));
        close(fd);
        return status::bad_message;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    // Read-only: a reader never writes a peer's table.
    void *base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    const int map_err = errno;
    close(fd);
    if (base == MAP_FAILED) {
        WEFT_LOG(shm, debug, "mmap(%s, %zu) failed: %s", name.c_str(), size,
                 std::strerror(map_err));
        return status::no_memory;
    }
    mapping m(base, size);
    if (validate_md_table(*static_cast<const md_table_header *>(base), size, pid, serial, nslots) !=
        status::ok) {
        WEFT_LOG(shm, debug, "region table %s does not match its name or is malformed",
                 name.c_str());
        return status::bad_message;
    }
    out = std::move(m);
    return status::ok;
}

status check_region(const md_slot *slots, std::uint32_t nslots, const md_key &k,
                    std::uint64_t raddr, std::size_t len, unsigned acc, mem_view *mem) noexcept
{
    if (k.slot >= nslots) {
        return status::access;
    }
    const md_slot &s = slots[k.slot];
    // Acquire: pairs with reg's release store of the word, so the fields read
    // below are at least those of the registration that made it live.
    const std::uint64_t word = s.word.load(std::memory_order_acquire);
    if (word != md_live_word(k.generation)) {
        return status::access;  // deregistered, or another registration of the slot
    }
    const std::uint64_t base = s.base.load(std::memory_order_relaxed);
    const std::uint64_t size = s.len.load(std::memory_order_relaxed);
    const unsigned granted = s.access.load(std::memory_order_relaxed);
    mem_view m{};
    if (mem != nullptr) {
        m.id = s.mem_id.load(std::memory_order_relaxed);
        m.base = s.mem_base.load(std::memory_order_relaxed);
        m.len = s.mem_len.load(std::memory_order_relaxed);
    }
    // Acquire fence: if a field above came from a later registration's stores
    // (after reg's release fence, which follows the dereg store), the dereg
    // store is visible to the load below and the word differs (seqlock).
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.word.load(std::memory_order_relaxed) != word) {
        return status::access;
    }
    if ((granted & acc) != acc || raddr < base || raddr - base > size ||
        len > size - (raddr - base)) {
        return status::access;
    }
    if (mem != nullptr) {
        // The allocation must hold the whole registration; anything else is a
        // slot that names no allocation (the region is still reached by CMA).
        if (m.id == 0 || m.len == 0 || m.len % page_size != 0 || m.len > max_mem_len ||
            base < m.base || base - m.base > m.len || size > m.len - (base - m.base)) {
            m = {};
        }
        *mem = m;
    }
    return status::ok;
}

}  // namespace weft::transport::shm
