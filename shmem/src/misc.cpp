// Distributed locks and the deprecated routines existing programs still call
// (docs/shmem.md, "Locks", "Deprecated routines").

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

namespace {

// The lock word lives on PE 0: a ticket lock, fair in arrival order. Its high
// 32 bits are the next ticket, its low 32 bits the ticket being served; a
// lock is free when the two are equal (0 and 0 as the program initialized it).
constexpr int lock_pe = 0;
constexpr std::uint64_t ticket_one = std::uint64_t{1} << 32;

std::uint64_t fetch_word(const char *routine, long *lock)
{
    std::uint64_t v = 0;
    amo(&g.world, routine, WEFT_NOOP, WEFT_UINT64, 8, lock, nullptr, nullptr, &v, lock_pe, false);
    return v;
}

void check_lock(const char *routine, long *lock)
{
    check_init(routine);
    if (reinterpret_cast<std::uintptr_t>(lock) % 8 != 0) {
        fatal(routine, "the lock %p is not 8-byte aligned", static_cast<void *>(lock));
    }
}

}  // namespace

}  // namespace weft::shmem

using namespace weft::shmem;

extern "C" {

void shmem_set_lock(long *lock)
{
    check_lock(__func__, lock);
    std::uint64_t mine = 0;
    amo(&g.world, __func__, WEFT_SUM, WEFT_UINT64, 8, lock, &ticket_one, nullptr, &mine, lock_pe,
        false);
    const auto ticket = static_cast<std::uint32_t>(mine >> 32);
    const char *const routine = __func__;  // (in the lambda, __func__ would be operator())
    spin([&] { return static_cast<std::uint32_t>(fetch_word(routine, lock)) == ticket; });
    // What the previous holder wrote is complete (it quieted before release);
    // our own later accesses must not move above the acquisition.
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

void shmem_clear_lock(long *lock)
{
    check_lock(__func__, lock);
    // Everything done under the lock is complete before the next holder enters.
    shmem_quiet();
    // Serve the next ticket: add one to the low half only (a 32-bit add on
    // the little-endian low word, so it never carries into the ticket half).
    // Mixing it with 64-bit atomics on the same word is sound because the
    // symmetric segments are in weft's CPU atomicity domain: every one of
    // them is a locked instruction on one aligned word, here or in the
    // target's handler. A NIC domain (64-bit only) would need a CAS loop.
    const std::uint32_t one = 1;
    amo(&g.world, __func__, WEFT_SUM, WEFT_UINT32, 4, lock, &one, nullptr, nullptr, lock_pe, false);
    shmem_quiet();
}

int shmem_test_lock(long *lock)
{
    check_lock(__func__, lock);
    const std::uint64_t v = fetch_word(__func__, lock);
    // Callers poll (`while (shmem_test_lock(l))`): when held, drive progress
    // (peers may need this PE meanwhile) and, polled long, let the holder
    // have the core (threads or PEs may outnumber cores).
    thread_local backoff polled;
    if (static_cast<std::uint32_t>(v >> 32) != static_cast<std::uint32_t>(v)) {
        progress(&g.world);
        polled.pause();
        return 1;  // held
    }
    // Free: take the next ticket only if nobody did meanwhile.
    const std::uint64_t want = v + ticket_one;
    std::uint64_t old = 0;
    amo(&g.world, __func__, WEFT_CSWAP, WEFT_UINT64, 8, lock, &want, &v, &old, lock_pe, false);
    if (old != v) {
        progress(&g.world);
        polled.pause();
        return 1;
    }
    polled.spins = 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 0;
}

// ------------------------------------------------------------------ deprecated

void start_pes(int npes)
{
    (void)npes;  // the launcher decides the PEs
    shmem_init();
}

int _my_pe(void)
{
    return shmem_my_pe();
}

int _num_pes(void)
{
    return shmem_n_pes();
}

void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}

void shfree(void *ptr)
{
    shmem_free(ptr);
}

void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

// Cache management: caches are coherent on every machine weft runs on.
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest)
{
    (void)dest;
}
void shmem_set_cache_line_inv(void *dest)
{
    (void)dest;
}
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest)
{
    (void)dest;
}

void shmem_wait(long *ivar, long cmp_value)
{
    shmem_long_wait_until(ivar, SHMEM_CMP_NE, cmp_value);
}

void shmem_wait_until(long *ivar, int cmp, long cmp_value)
{
    shmem_long_wait_until(ivar, cmp, cmp_value);
}

#define WEFT_SHMEM_OLD_WAIT(TYPE, NAME)                           \
    void shmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value)          \
    {                                                             \
        shmem_##NAME##_wait_until(ivar, SHMEM_CMP_NE, cmp_value); \
    }
SHMEM_SYNC_TYPES(WEFT_SHMEM_OLD_WAIT)
#undef WEFT_SHMEM_OLD_WAIT

#define WEFT_SHMEM_OLD_AMO(TYPE, NAME)                       \
    TYPE shmem_##NAME##_fetch(const TYPE *source, int pe)    \
    {                                                        \
        return shmem_##NAME##_atomic_fetch(source, pe);      \
    }                                                        \
    void shmem_##NAME##_set(TYPE *dest, TYPE value, int pe)  \
    {                                                        \
        shmem_##NAME##_atomic_set(dest, value, pe);          \
    }                                                        \
    TYPE shmem_##NAME##_swap(TYPE *dest, TYPE value, int pe) \
    {                                                        \
        return shmem_##NAME##_atomic_swap(dest, value, pe);  \
    }
#define WEFT_SHMEM_OLD_AMO_STD(TYPE, NAME)                                \
    TYPE shmem_##NAME##_cswap(TYPE *dest, TYPE cond, TYPE value, int pe)  \
    {                                                                     \
        return shmem_##NAME##_atomic_compare_swap(dest, cond, value, pe); \
    }                                                                     \
    TYPE shmem_##NAME##_finc(TYPE *dest, int pe)                          \
    {                                                                     \
        return shmem_##NAME##_atomic_fetch_inc(dest, pe);                 \
    }                                                                     \
    void shmem_##NAME##_inc(TYPE *dest, int pe)                           \
    {                                                                     \
        shmem_##NAME##_atomic_inc(dest, pe);                              \
    }                                                                     \
    TYPE shmem_##NAME##_fadd(TYPE *dest, TYPE value, int pe)              \
    {                                                                     \
        return shmem_##NAME##_atomic_fetch_add(dest, value, pe);          \
    }                                                                     \
    void shmem_##NAME##_add(TYPE *dest, TYPE value, int pe)               \
    {                                                                     \
        shmem_##NAME##_atomic_add(dest, value, pe);                       \
    }
SHMEM_OLD_AMO_EXT_TYPES(WEFT_SHMEM_OLD_AMO)
SHMEM_OLD_AMO_STD_TYPES(WEFT_SHMEM_OLD_AMO_STD)
#undef WEFT_SHMEM_OLD_AMO
#undef WEFT_SHMEM_OLD_AMO_STD

}  // extern "C"
