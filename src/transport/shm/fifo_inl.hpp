#pragma once
// The multi-producer single-consumer FIFO of cells (Vyukov's bounded queue with a
// sequence number per cell), always-inline. docs/shm.md "Queue algorithm".
//
// Positions are free-running 32-bit counters; a cell index is pos & mask. All
// comparisons are wrap-safe (signed difference), which holds while fewer than
// 2^31 positions separate any two compared values (fifo_size <= 2^20).
//
// Producers (any process):  t = tail; announce resv = t; if cell[t].seq == t: CAS
//   tail t -> t+1; fill cell; cell.seq = t+1 (release).
// Consumer (the owner):     if cell[head].seq == head+1 (acquire): consume;
//   cell.seq = head + fifo_size (release); head++.

#include <atomic>
#include <cstdint>

#include "transport/shm/segment.hpp"

namespace weft::transport::shm {

/// A sender's process-local view of one peer's FIFO: pointers into its own
/// mapping of the peer's segment plus the geometry validated at map time.
struct tx_view {
    cell *cells;
    std::atomic<std::uint32_t> *tail;
    std::atomic<std::uint64_t> *resv;  ///< our sender slot's reservation word
    std::uint8_t *bcopy;
    std::uint32_t mask;  ///< fifo_size - 1
    std::uint32_t bcopy_size;
    std::uint16_t slot;  ///< our slot index in the peer's table (= its src_id)
};

[[gnu::always_inline]] inline cell *cell_at(cell *cells, std::uint32_t mask,
                                            std::uint32_t pos) noexcept
{
    return cells + (pos & mask);
}

/// Reserve the next cell of `v`'s FIFO. Returns the cell (pos in `pos_out`), or
/// nullptr when the FIFO is full (the cell at the tail still holds a message of the
/// previous lap). Never blocks: it retries only when another producer won the race.
[[gnu::always_inline]] inline cell *fifo_reserve(const tx_view &v, std::uint32_t &pos_out) noexcept
{
    std::uint32_t pos = v.tail->load(std::memory_order_relaxed);
    for (;;) {
        // Announce the position before trying to take it. Release: a consumer that
        // reads a later value of this word (we moved on) also sees our earlier
        // publish; the tail CAS below (release) makes this store visible to a
        // consumer that acquires the tail it produced. Used only to attribute an
        // unpublished cell to a dead sender.
        v.resv->store(resv_valid | pos, std::memory_order_release);
        cell *c = cell_at(v.cells, v.mask, pos);
        // Acquire: pairs with the consumer's release store that freed the cell, so
        // our writes to the cell cannot overtake its reads of the previous message.
        const std::uint32_t seq = c->seq.load(std::memory_order_acquire);
        const auto dif = static_cast<std::int32_t>(seq - pos);
        if (dif == 0) [[likely]] {
            // acq_rel: release publishes the resv store above to whoever acquires the
            // tail (every tail write is an RMW, so later CASes continue the release
            // sequence); acquire is free on x86 and keeps the cell writes after it.
            if (v.tail->compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel,
                                              std::memory_order_relaxed)) [[likely]] {
                pos_out = pos;
                return c;
            }
            // pos was reloaded by the failed CAS.
        } else if (dif < 0) {
            return nullptr;  // full (or corrupted: fifo_corrupted tells)
        } else {
            // Another producer took pos: its tail CAS came before its seq store,
            // which we acquired, so the tail has moved. If it has not, the FIFO
            // was written by someone who does not follow the protocol: give up
            // rather than spin (fifo_corrupted tells).
            const std::uint32_t now = v.tail->load(std::memory_order_relaxed);
            if (now == pos) [[unlikely]] {
                return nullptr;
            }
            pos = now;
        }
    }
}

/// What fifo_reserve_pair found when it returns nullptr.
enum class pair_refusal : std::uint8_t {
    full,  ///< a cell of the pair still holds a message of the previous lap
    wrap,  ///< the tail is at the last cell: the pair would not be adjacent
};

/// Reserve the cells of positions pos and pos + 1 (adjacent in memory) with one
/// tail CAS pos -> pos + 2, for a pair message. Returns the first cell, or
/// nullptr with `why`. The second cell's seq is left as it is (pos + 1, "free
/// for pos + 1"): no producer ever reserves pos + 1 in this lap, and the
/// consumer, told by the first cell's kind, skips it and frees both.
[[gnu::always_inline]] inline cell *fifo_reserve_pair(const tx_view &v, std::uint32_t &pos_out,
                                                      pair_refusal &why) noexcept
{
    std::uint32_t pos = v.tail->load(std::memory_order_relaxed);
    for (;;) {
        if ((pos & v.mask) == v.mask) [[unlikely]] {
            why = pair_refusal::wrap;
            return nullptr;
        }
        // Release, as in fifo_reserve; resv_pair tells the owner, should we die
        // before publishing, that the reservation spans two positions.
        v.resv->store(resv_valid | resv_pair | pos, std::memory_order_release);
        cell *c = cell_at(v.cells, v.mask, pos);
        // Acquire (both): pair with the consumer's release stores that freed the
        // cells, so our writes cannot overtake its reads of the previous lap.
        const auto dif = static_cast<std::int32_t>(c->seq.load(std::memory_order_acquire) - pos);
        const auto dif2 =
            static_cast<std::int32_t>((c + 1)->seq.load(std::memory_order_acquire) - (pos + 1));
        if (dif == 0 && dif2 == 0) [[likely]] {
            // acq_rel as in fifo_reserve. Success means nobody took pos, hence
            // nobody took pos + 1 (the tail passes pos + 1 only after pos).
            if (v.tail->compare_exchange_weak(pos, pos + 2, std::memory_order_acq_rel,
                                              std::memory_order_relaxed)) [[likely]] {
                pos_out = pos;
                return c;
            }
            continue;  // pos was reloaded by the failed CAS
        }
        if (dif < 0 || (dif == 0 && dif2 < 0)) {
            why = pair_refusal::full;  // (or corrupted: fifo_corrupted tells)
            return nullptr;
        }
        // Another producer took pos (or pos + 1 after a single at pos): the tail
        // has moved, as in fifo_reserve; if it has not, give up.
        const std::uint32_t now = v.tail->load(std::memory_order_relaxed);
        if (now == pos) [[unlikely]] {
            why = pair_refusal::full;
            return nullptr;
        }
        pos = now;
    }
}

/// Cold, after fifo_reserve returned nullptr: is the FIFO in a state that no
/// correct producer or consumer leaves behind (a hostile or broken peer wrote
/// its tail or a cell's sequence number)? A correct full FIFO has, at the
/// tail's cell, seq == tail - size (reserved a lap ago, not yet published) or
/// tail - size + 1 (published, not yet consumed). Anything read here is
/// untrusted; the verdict only fails this one peer.
[[nodiscard]] inline bool fifo_corrupted(const tx_view &v) noexcept
{
    const std::uint32_t pos = v.tail->load(std::memory_order_relaxed);
    // Acquire: as in fifo_reserve, a seq past pos implies the tail CAS past pos
    // happened before, so the second tail load below must see it moved.
    const std::uint32_t seq = cell_at(v.cells, v.mask, pos)->seq.load(std::memory_order_acquire);
    const auto dif = static_cast<std::int32_t>(seq - pos);
    const auto size = static_cast<std::int32_t>(v.mask + 1);
    if (dif > 0) {
        return v.tail->load(std::memory_order_relaxed) == pos;
    }
    return dif != 0 && dif != -size && dif != 1 - size;
}

/// Fill the cell header (the payload was written before) and publish it.
[[gnu::always_inline]] inline void fifo_publish(cell *c, std::uint32_t pos, std::uint16_t am,
                                                cell_kind kind, std::uint16_t src,
                                                std::uint32_t length) noexcept
{
    // Relaxed: these stores (and the payload) are ordered by the release below.
    c->am.store(am, std::memory_order_relaxed);
    c->src.store(src, std::memory_order_relaxed);
    c->len_kind.store(cell_len_kind(length, kind), std::memory_order_relaxed);
    // Release: the consumer's acquire load of seq == pos + 1 sees the whole cell
    // (header, inline data and the bcopy slot).
    c->seq.store(pos + 1, std::memory_order_release);
}

/// Consumer: is the cell at `head` published? Acquire pairs with fifo_publish's
/// release, so the cell contents may be read after it returns true.
[[gnu::always_inline]] inline bool fifo_ready(const cell *c, std::uint32_t head) noexcept
{
    return c->seq.load(std::memory_order_acquire) == head + 1;
}

/// Consumer: free the cells of a pair at `head` and head + 1: the second first,
/// so that a producer that finds the first free finds the pair free.
[[gnu::always_inline]] inline void fifo_release_pair(cell *c, std::uint32_t head,
                                                     std::uint32_t fifo_size) noexcept
{
    // Release (both): our reads of the cells happen before a producer's acquire
    // load sees them free. The second cell's seq goes from head + 1 (never
    // published) to head + 1 + fifo_size, as a consumed cell's does.
    (c + 1)->seq.store(head + 1 + fifo_size, std::memory_order_release);
    c->seq.store(head + fifo_size, std::memory_order_release);
}

/// Consumer: free the cell at `head` for the producer of position head + fifo_size.
[[gnu::always_inline]] inline void fifo_release(cell *c, std::uint32_t head,
                                                std::uint32_t fifo_size) noexcept
{
    // Release: our reads of the cell (and of its bcopy slot) happen before the next
    // producer's acquire load sees it free and overwrites it.
    c->seq.store(head + fifo_size, std::memory_order_release);
}

}  // namespace weft::transport::shm
