// Control path of the shm transport's segments: create, map, validate, clean up.
// Layout and field meanings: segment.hpp and docs/shm.md.

#include "transport/shm/segment.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "base/topo.hpp"
#include "transport/shm/shm.hpp"

namespace weft::transport::shm {

namespace {

constexpr const char *shm_dir = "/dev/shm";
constexpr const char *name_prefix = "weft-shm-";
constexpr const char *md_name_prefix = "weft-md-";
constexpr const char *mem_name_prefix = "weft-mem-";

/// Largest segment a peer may make us map (sanity bound on the file size).
constexpr std::uint64_t max_segment_size = 4ULL << 30;

[[nodiscard]] bool is_power_of_two(std::uint64_t v) noexcept
{
    return v != 0 && (v & (v - 1)) == 0;
}

/// Parse "<prefix><pid>-<n>" exactly; false for anything else.
[[nodiscard]] bool parse_name(const char *name, const char *prefix, std::uint32_t &pid,
                              std::uint32_t &ep) noexcept
{
    const std::size_t plen = std::strlen(prefix);
    if (std::strncmp(name, prefix, plen) != 0) {
        return false;
    }
    const char *p = name + plen;
    auto number = [&p](std::uint32_t &out) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        std::uint64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + static_cast<std::uint64_t>(*p - '0');
            if (v > UINT32_MAX) {
                return false;
            }
            ++p;
        }
        out = static_cast<std::uint32_t>(v);
        return true;
    };
    if (!number(pid) || *p != '-') {
        return false;
    }
    ++p;
    return number(ep) && *p == '\0';
}

}  // namespace

mapping &mapping::operator=(mapping &&o) noexcept
{
    if (this != &o) {
        reset();
        base_ = o.base_;
        size_ = o.size_;
        o.base_ = nullptr;
    }
    return *this;
}

void mapping::reset() noexcept
{
    if (base_ != nullptr) {
        munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
    }
}

std::string segment_name(std::uint32_t pid, std::uint32_t ep_id)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/%s%" PRIu32 "-%" PRIu32, name_prefix, pid, ep_id);
    return buf;
}

bool address_cookie(const address &a, cookie_t &cookie) noexcept
{
    address_blob b;
    if (!a.find(wire_id, b) || b.ep_len != sizeof(cookie_t)) {
        return false;
    }
    std::memcpy(&cookie, b.ep, sizeof(cookie));
    return cookie != 0;
}

// ------------------------------------------------------------------ unlink at exit

namespace {

/// Segments this process created and has not unlinked yet: unlinked by an
/// atexit handler when the process exits without closing its endpoints, so
/// /dev/shm does not keep them. The pid tells a forked child's inherited copy
/// of the list from its own entries.
struct created_list {
    std::mutex lock;
    std::vector<std::pair<std::string, pid_t>> names;
};

created_list &created()
{
    static auto *l = new created_list;  // never destroyed: used by the atexit handler
    return *l;
}

void unlink_created_at_exit()
{
    created_list &l = created();
    const std::lock_guard g(l.lock);
    const pid_t me = getpid();
    for (const auto &[name, pid] : l.names) {
        if (pid == me) {
            shm_unlink(name.c_str());
        }
    }
    l.names.clear();
}

}  // namespace

void note_created(const std::string &name)
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (std::atexit(&unlink_created_at_exit) != 0) {
            WEFT_LOG(shm, warn, "atexit failed: segments of endpoints not closed stay in /dev/shm");
        }
    });
    created_list &l = created();
    const std::lock_guard g(l.lock);
    l.names.emplace_back(name, getpid());
}

void unlink_segment(const std::string &name)
{
    shm_unlink(name.c_str());
    created_list &l = created();
    const std::lock_guard g(l.lock);
    const pid_t me = getpid();
    std::erase_if(l.names, [&](const auto &e) { return e.first == name && e.second == me; });
}

namespace {

/// Fault in the pages of a new segment after its memory policy is set (what
/// MAP_POPULATE does without placement). An exhausted /dev/shm fails here,
/// with a message, not with SIGBUS on the data path.
status populate(void *base, std::size_t len, const std::string &name)
{
    if (madvise(base, len, MADV_POPULATE_WRITE) == 0) {
        return status::ok;
    }
    const int err = errno;
    if (err != EINVAL) {
        WEFT_LOG(shm, error, "populating %s (%zu bytes) failed: %s", name.c_str(), len,
                 std::strerror(err));
        return status::no_memory;
    }
    // Before Linux 5.14: touch each page (the file is zero-filled, and no
    // peer knows the segment yet).
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    for (std::size_t off = 0; off < len; off += page) {
        static_cast<volatile char *>(base)[off] = 0;
    }
    return status::ok;
}

}  // namespace

status create_segment(const segment_params &p, mapping &out, segment_geometry &geo)
{
    const segment_layout l = compute_layout(p.fifo_size, p.bcopy_size, p.nslots);
    const std::string name = segment_name(p.pid, p.ep_id);

    // O_EXCL: a segment of this name that already exists belongs to a dead process
    // whose pid we now have (pid reuse) or to an earlier endpoint of ours that was
    // not closed; either way it is stale. Unlink it and create a fresh one, so no
    // peer keeps writing into a file we do not read.
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        WEFT_LOG(shm, debug, "replacing stale segment %s", name.c_str());
        shm_unlink(name.c_str());
        fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        const int err = errno;
        WEFT_LOG(shm, error, "shm_open(%s) failed: %s", name.c_str(), std::strerror(err));
        return err == EACCES ? status::access : status::no_device;
    }
    if (ftruncate(fd, static_cast<off_t>(l.total_size)) != 0) {
        const int err = errno;
        WEFT_LOG(shm, error, "ftruncate(%s, %" PRIu64 ") failed: %s", name.c_str(), l.total_size,
                 std::strerror(err));
        close(fd);
        shm_unlink(name.c_str());
        return status::no_memory;
    }
    // MAP_POPULATE: fault the pages in now, not on the data path. It also makes
    // /dev/shm exhaustion fail here (with a message) rather than SIGBUS later.
    // With placement, the pages are bound to our NUMA node first (the FIFO and
    // the bcopy slots are read here, by the owner), then faulted in.
    void *base = mmap(nullptr, l.total_size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | (p.placement ? 0 : MAP_POPULATE), fd, 0);
    const int map_err = errno;
    close(fd);
    if (base == MAP_FAILED) {
        WEFT_LOG(shm, error, "mmap(%s, %" PRIu64 ") failed: %s", name.c_str(), l.total_size,
                 std::strerror(map_err));
        shm_unlink(name.c_str());
        return status::no_memory;
    }
    out = mapping(base, l.total_size);
    note_created(name);
    if (p.placement) {
        (void)base::bind_local(base::topology::machine(), base, l.total_size, name.c_str());
        if (const status s = populate(base, l.total_size, name); s != status::ok) {
            out.reset();
            unlink_segment(name);
            return s;
        }
    }

    // The file is zero-filled: slots are free (state 0) and resv words are 0.
    segment_header *h = seg_header(base);
    segment_info &i = h->info;
    i.version = segment_version;
    i.header_size = sizeof(segment_header);
    i.node_id = p.node_id;
    i.cookie = p.cookie;
    i.owner_pid = p.pid;
    i.owner_ep_id = p.ep_id;
    i.fifo_size = p.fifo_size;
    i.cell_size = cell_size;
    i.bcopy_size = p.bcopy_size;
    i.nslots = p.nslots;
    i.slots_offset = l.slots_offset;
    i.cells_offset = l.cells_offset;
    i.bcopy_offset = l.bcopy_offset;
    i.total_size = l.total_size;
    h->tail.store(0, std::memory_order_relaxed);
    cell *cells = seg_cells(base, l);
    for (std::uint32_t k = 0; k < p.fifo_size; ++k) {
        cells[k].seq.store(k, std::memory_order_relaxed);  // free for position k
    }
    // Release: a peer that acquires the magic sees the initialised header and
    // cells (the address exchange orders this anyway; this keeps it self-contained).
    i.magic.store(segment_magic, std::memory_order_release);

    geo.fifo_size = p.fifo_size;
    geo.bcopy_size = p.bcopy_size;
    geo.nslots = p.nslots;
    geo.layout = l;
    return status::ok;
}

status validate_header(const segment_header &h, std::size_t size, const endpoint_id &peer,
                       cookie_t cookie, segment_geometry &geo)
{
    const segment_info &i = h.info;
    // Acquire: pairs with the owner's release store of the magic.
    if (i.magic.load(std::memory_order_acquire) != segment_magic) {
        return status::bad_message;
    }
    // Read every field once into locals: the peer could change them under us.
    const std::uint32_t version = i.version;
    const std::uint32_t header_size = i.header_size;
    const std::uint32_t fifo_size = i.fifo_size;
    const std::uint32_t csize = i.cell_size;
    const std::uint32_t bcopy_size = i.bcopy_size;
    const std::uint32_t nslots = i.nslots;
    if (version != segment_version || header_size != sizeof(segment_header) || csize != cell_size) {
        return status::bad_message;
    }
    if (!is_power_of_two(fifo_size) || fifo_size < min_fifo_size || fifo_size > max_fifo_size ||
        bcopy_size < min_bcopy_size || bcopy_size > max_bcopy_size || bcopy_size % 64 != 0 ||
        nslots == 0 || nslots > max_nslots) {
        return status::bad_message;
    }
    const segment_layout l = compute_layout(fifo_size, bcopy_size, nslots);
    if (i.slots_offset != l.slots_offset || i.cells_offset != l.cells_offset ||
        i.bcopy_offset != l.bcopy_offset || i.total_size != l.total_size || l.total_size != size) {
        return status::bad_message;
    }
    if (i.owner_pid != peer.pid || i.owner_ep_id != peer.ep_id || i.node_id != peer.node_id ||
        i.cookie != cookie) {
        return status::bad_message;
    }
    geo.fifo_size = fifo_size;
    geo.bcopy_size = bcopy_size;
    geo.nslots = nslots;
    geo.layout = l;
    return status::ok;
}

status map_segment(const endpoint_id &peer, cookie_t cookie, mapping &out, segment_geometry &geo)
{
    const std::string name = segment_name(peer.pid, peer.ep_id);
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) {
            WEFT_LOG(shm, debug, "no segment %s: peer gone or not on this node", name.c_str());
            return status::no_entry;
        }
        WEFT_LOG(shm, error, "shm_open(%s) failed: %s", name.c_str(), std::strerror(err));
        return err == EACCES ? status::access : status::io_error;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(segment_header)) ||
        static_cast<std::uint64_t>(st.st_size) > max_segment_size) {
        WEFT_LOG(shm, error, "segment %s has a bad size (%lld bytes)", name.c_str(),
                 static_cast<long long>(st.st_size));
        close(fd);
        return status::bad_message;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    void *base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    const int map_err = errno;
    close(fd);
    if (base == MAP_FAILED) {
        WEFT_LOG(shm, error, "mmap(%s, %zu) failed: %s", name.c_str(), size,
                 std::strerror(map_err));
        return status::no_memory;
    }
    mapping m(base, size);
    const status s = validate_header(*seg_header(base), size, peer, cookie, geo);
    if (s != status::ok) {
        // A mismatch is normal for an address that outlived its process (pid
        // reuse, cookie differs); anything else is a corrupt or foreign file.
        WEFT_LOG(shm, debug, "segment %s does not match the peer address or is malformed",
                 name.c_str());
        return s;
    }
    out = std::move(m);
    return status::ok;
}

unsigned cleanup_stale_segments(std::uint32_t own_pid) noexcept
{
    DIR *d = opendir(shm_dir);
    if (d == nullptr) {
        return 0;
    }
    unsigned removed = 0;
    while (const dirent *e = readdir(d)) {
        std::uint32_t pid = 0;
        std::uint32_t ep = 0;
        // Region tables and allocations (md.cpp) are named as segments are,
        // with the domain's serial or the allocation's id for the endpoint
        // number, and go stale the same way.
        if ((!parse_name(e->d_name, name_prefix, pid, ep) &&
             !parse_name(e->d_name, md_name_prefix, pid, ep) &&
             !parse_name(e->d_name, mem_name_prefix, pid, ep)) ||
            pid == own_pid || pid == 0) {
            continue;  // own names are replaced when they are created
        }
        // ESRCH: no such process. EPERM means it exists (another user): keep it.
        // A zombie still exists; its segment goes once it is reaped.
        if (kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) {
            char name[300];
            std::snprintf(name, sizeof(name), "/%s", e->d_name);
            if (shm_unlink(name) == 0) {
                ++removed;
                WEFT_LOG(shm, debug, "removed stale %s (pid %" PRIu32 " is gone)", name, pid);
            }
        }
    }
    closedir(d);
    return removed;
}

}  // namespace weft::transport::shm
