// libFuzzer target: what a hostile process on the node can write into an shm
// endpoint's receive segment (transport/shm), and the segment headers a peer
// validates before it maps someone's segment.
//
// Input byte 0, bit 0 clear: the rest is a segment header (and the bytes after
// it) handed to validate_header, with the mapped size taken from bytes 1-4.
// Bit 0 set: one shm endpoint (opened once, through the public API, so that the
// whole receive path runs: shm cells, then proto's channel and modules) maps
// its own segment a second time, as a peer would, and writes into it: byte 1
// picks a sender slot and bits 1-2 of byte 0 whether to overwrite its state
// and its address (addr_len and bytes from the input); then the input is a
// list of cells, each published through the FIFO protocol with every header
// field from the input (am word, src, length and kind) and its inline and
// bcopy bytes. The endpoint then progresses and drains its CQ. Anything may
// be dropped; nothing may crash, hang or leak.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

#include "core/objects.hpp"
#include "test/fuzz/shm_endpoint.hpp"
#include "transport/shm/fifo_inl.hpp"
#include "transport/shm/segment.hpp"
#include "weft/weft.h"

namespace shm = weft::transport::shm;

namespace {

struct world : weft::fuzz::shm_endpoint {
    shm::mapping map;  ///< a second mapping of the endpoint's own segment
    shm::segment_geometry geo{};
    std::vector<std::uint8_t> rbuf = std::vector<std::uint8_t>(1 << 16);
};

int contexts[4];

world *open_world()
{
    auto *w = new world;
    weft::fuzz::open_shm_endpoint(*w);
    shm::cookie_t cookie = 0;
    if (!shm::address_cookie(w->ep->addr, cookie) ||
        shm::map_segment(w->ep->addr.id(), cookie, w->map, w->geo) != weft::base::status::ok) {
        std::fprintf(stderr, "fuzz_shm: cannot map the endpoint's own segment\n");
        std::abort();
    }
    return w;
}

void drain(world &w)
{
    for (int &c : contexts) {
        (void)weft_trecv(w.ep, w.rbuf.data(), w.rbuf.size(), nullptr, WEFT_ADDR_UNSPEC, 0, ~0ULL,
                         &c);
    }
    weft_cq_tagged_entry e[16];
    weft_cq_err_entry err;
    for (int i = 0; i < 64; ++i) {
        (void)weft_ep_progress(w.ep);
        const ssize_t n = weft_cq_read(w.cq, e, 16);
        if (n == -WEFT_EAVAIL) {
            (void)weft_cq_readerr(w.cq, &err, 0);
        } else if (n == -WEFT_EAGAIN) {
            break;
        }
    }
    for (int &c : contexts) {
        while (weft_cancel(w.ep, &c) == 0) {
        }
    }
    while (weft_cq_read(w.cq, e, 16) > 0 || weft_cq_readerr(w.cq, &err, 0) > 0) {
    }
}

void fuzz_header(const std::uint8_t *data, std::size_t size)
{
    if (size < 5) {
        return;
    }
    std::uint32_t mapped = 0;
    std::memcpy(&mapped, data + 1, 4);
    data += 5;
    size -= 5;
    // The header as it would be mapped: aligned, the input's bytes then zeros.
    alignas(128) static std::uint8_t buf[4096];
    std::memset(buf, 0, sizeof(buf));
    std::memcpy(buf, data, std::min(size, sizeof(buf)));
    shm::segment_geometry geo{};
    const auto *h = reinterpret_cast<const shm::segment_header *>(buf);
    const weft::transport::endpoint_id peer{h->info.node_id, h->info.owner_pid,
                                            h->info.owner_ep_id};
    if (shm::validate_header(*h, mapped, peer, static_cast<shm::cookie_t>(h->info.cookie), geo) ==
        weft::base::status::ok) {
        // What it accepts must describe a segment inside the mapped size.
        if (geo.layout.total_size > mapped || geo.fifo_size == 0 ||
            (geo.fifo_size & (geo.fifo_size - 1)) != 0) {
            std::abort();
        }
    }
}

void fuzz_cells(world &w, const std::uint8_t *data, std::size_t size)
{
    if (size < 2) {
        return;
    }
    const std::uint8_t mode = data[0];
    void *base = w.map.base();
    const shm::segment_layout &l = w.geo.layout;
    shm::sender_slot *slots = shm::seg_slots(base, l);
    // The last slot is the one our own sends never use (they take the first).
    const std::uint32_t slot =
        w.geo.nslots - 1 - data[1] % std::max<std::uint32_t>(1, w.geo.nslots / 2);
    data += 2;
    size -= 2;
    shm::sender_slot &s = slots[slot];
    if ((mode & 2) != 0) {
        s.state.store(
            shm::slot_state(shm::slot_kind::active, static_cast<std::uint32_t>(getpid())));
        s.reserved_[0] = 0;
    }
    if ((mode & 4) != 0 && size >= 2) {
        std::uint16_t alen = 0;
        std::memcpy(&alen, data, 2);
        data += 2;
        size -= 2;
        s.addr_len = alen;  // may be anything: the owner checks it
        const std::size_t n = std::min<std::size_t>({size, sizeof(s.addr), alen});
        std::memcpy(s.addr, data, n);
        data += n;
        size -= n;
    }
    shm::tx_view v{};
    v.cells = shm::seg_cells(base, l);
    v.tail = &shm::seg_header(base)->tail;
    v.resv = &s.resv;
    v.bcopy = shm::seg_bcopy(base, l);
    v.mask = w.geo.fifo_size - 1;
    v.bcopy_size = w.geo.bcopy_size;
    v.slot = static_cast<std::uint16_t>(slot);
    // Cells: am u16 | src u16 | len_kind u32 | inline bytes (52) | bcopy count u16 | bytes.
    constexpr std::size_t fixed = 8 + sizeof(shm::cell::data) + 2;
    int published = 0;
    while (size >= fixed && published < 64) {
        std::uint16_t am = 0;
        std::uint16_t src = 0;
        std::uint32_t len_kind = 0;
        std::memcpy(&am, data, 2);
        std::memcpy(&src, data + 2, 2);
        std::memcpy(&len_kind, data + 4, 4);
        std::uint32_t pos = 0;
        shm::cell *c = shm::fifo_reserve(v, pos);
        if (c == nullptr) {
            break;  // full: let the owner consume
        }
        std::memcpy(c->data, data + 8, sizeof(c->data));
        std::uint16_t nb = 0;
        std::memcpy(&nb, data + 8 + sizeof(c->data), 2);
        data += fixed;
        size -= fixed;
        const std::size_t n = std::min<std::size_t>({nb, size, w.geo.bcopy_size});
        std::memcpy(v.bcopy + static_cast<std::size_t>(pos & v.mask) * v.bcopy_size, data, n);
        data += n;
        size -= n;
        c->am.store(am, std::memory_order_relaxed);
        c->src.store(src, std::memory_order_relaxed);
        c->len_kind.store(len_kind, std::memory_order_relaxed);
        c->seq.store(pos + 1, std::memory_order_release);
        ++published;
    }
    drain(w);
    // Put the slot back as the owner found it at start (free, no address), so
    // inputs do not depend on each other.
    s.state.store(0);
    s.addr_len = 0;
    drain(w);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    static world *w = open_world();
    if (size == 0) {
        return 0;
    }
    if ((data[0] & 1) == 0) {
        fuzz_header(data, size);
    } else {
        fuzz_cells(*w, data, size);
    }
    return 0;
}
