#pragma once
// A transport's atomic (ops::atomic) done with the CPU's own instructions on
// memory this process can reach (self: its own; shm: a peer's mapping). The
// same lock-free __atomic builtins as proto/'s amo_apply, so these are atomic
// with respect to it and to each other in every process that maps the memory
// (cap::cpu_atomics).

#include <cstdint>
#include <cstring>

#include "transport/iface.hpp"

namespace weft::transport {

template <typename T>
[[nodiscard]] T cpu_atomic_apply(T *p, const atomic_args &a) noexcept
{
    static_assert(__atomic_always_lock_free(sizeof(T), nullptr));
    const T v = static_cast<T>(a.operand);
    switch (a.op) {
        case atomic_op::add:
            return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
        case atomic_op::and_:
            return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
        case atomic_op::or_:
            return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
        case atomic_op::xor_:
            return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
        case atomic_op::swap:
            return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
        case atomic_op::cswap: {
            T expected = static_cast<T>(a.compare);
            __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return expected;
        }
    }
    return 0;
}

/// Apply `a` (width 4 or 8, checked by the caller, as are alignment and
/// access) at `target`; the old value goes to a.result when a.fetch.
inline void cpu_atomic(void *target, const atomic_args &a) noexcept
{
    if (a.width == 4) {
        const std::uint32_t old = cpu_atomic_apply(static_cast<std::uint32_t *>(target), a);
        if (a.fetch) {
            std::memcpy(a.result, &old, sizeof(old));
        }
    } else {
        const std::uint64_t old = cpu_atomic_apply(static_cast<std::uint64_t *>(target), a);
        if (a.fetch) {
            std::memcpy(a.result, &old, sizeof(old));
        }
    }
}

}  // namespace weft::transport
