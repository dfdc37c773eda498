// Atomic memory operations (docs/shmem.md, "Atomics").
//
// One atomicity domain: the symmetric segments are registered in weft's CPU
// mode, so every atomic on them is done by a CPU -- here with the compiler's
// atomics when this process maps the PE's memory (itself, node peers' heaps),
// at the target by weft's active-message handler otherwise (which uses the same
// CPU atomics). The two mix safely on one location.

#include <cstring>
#include <type_traits>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

namespace {

/// `op` on the word at `p` with the CPU's atomics; returns the old value.
template <class U>
U cpu_amo(weft_atomic_op op, U *p, U operand, U compare)
{
    switch (op) {
        case WEFT_SUM:
            return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
        case WEFT_BAND:
            return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
        case WEFT_BOR:
            return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
        case WEFT_BXOR:
            return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
        case WEFT_REPLACE:
            return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
        case WEFT_CSWAP:
            (void)__atomic_compare_exchange_n(p, &compare, operand, false, __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST);
            return compare;  // the old value either way
        default:             // WEFT_NOOP: fetch
            return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    }
}

template <class U>
void cpu_amo_bytes(weft_atomic_op op, void *target, const void *operand, const void *compare,
                   void *result)
{
    U v{};
    U cmp{};
    if (operand != nullptr) {
        std::memcpy(&v, operand, sizeof(U));
    }
    if (compare != nullptr) {
        std::memcpy(&cmp, compare, sizeof(U));
    }
    const U old = cpu_amo<U>(op, static_cast<U *>(target), v, cmp);
    if (result != nullptr) {
        std::memcpy(result, &old, sizeof(U));
    }
}

}  // namespace

void amo(shmem_ctx_opaque *c, const char *routine, weft_atomic_op op, weft_datatype dt,
         std::size_t size, void *dest, const void *operand, const void *compare, void *result,
         int pe, bool nbi)
{
    const target t = locate(c, routine, dest, size, pe);
    if (reinterpret_cast<std::uintptr_t>(dest) % size != 0) [[unlikely]] {
        fatal(routine, "%p is not aligned to its type (%zu bytes)", dest, size);
    }
    if (t.ptr != nullptr) {
        // Floating-point types only fetch, set and swap: bit patterns suffice.
        if (size == 4) {
            cpu_amo_bytes<std::uint32_t>(op, t.ptr, operand, compare, result);
        } else {
            cpu_amo_bytes<std::uint64_t>(op, t.ptr, operand, compare, result);
        }
        if (result != nullptr) {
            poll_progress();
        }
        return;
    }
    if (result == nullptr) {
        // Non-fetching: the operand is copied; done remotely by the next quiet.
        const weft_msg_atomic m{operand, nullptr, nullptr, 1, dt, op, t.addr, t.key, nullptr};
        post(c, routine, "weft_atomicmsg", [&] { return weft_atomicmsg(c->ep, &m, WEFT_INJECT); });
        return;
    }
    if (nbi) {
        // The old value lands in `result` by the next quiet.
        const weft_msg_atomic m{operand, compare, result, 1, dt, op, t.addr, t.key, nullptr};
        post(c, routine, "weft_atomicmsg", [&] { return weft_atomicmsg(c->ep, &m, 0); });
        return;
    }
    token tok;
    const weft_msg_atomic m{operand, compare, result, 1, dt, op, t.addr, t.key, &tok};
    post(c, routine, "weft_atomicmsg", [&] { return weft_atomicmsg(c->ep, &m, WEFT_COMPLETION); });
    wait(c, tok, routine);
}

}  // namespace weft::shmem

using namespace weft::shmem;

namespace {

/// The typed front ends: one template per routine shape, instantiated by the
/// C entry points below.
template <class T>
T fetch_op(shmem_ctx_t ctx, const char *routine, weft_atomic_op op, T *dest, T value, int pe)
{
    T old;
    amo(ctx_of(routine, ctx), routine, op, datatype_of<T>(), sizeof(T), dest, &value, nullptr, &old,
        pe, false);
    return old;
}
template <class T>
void fetch_op_nbi(shmem_ctx_t ctx, const char *routine, weft_atomic_op op, T *fetch, T *dest,
                  T value, int pe)
{
    if (fetch == nullptr) [[unlikely]] {
        check_init(routine);
        fatal(routine, "the fetch address is NULL");
    }
    amo(ctx_of(routine, ctx), routine, op, datatype_of<T>(), sizeof(T), dest, &value, nullptr,
        fetch, pe, true);
}
template <class T>
void post_op(shmem_ctx_t ctx, const char *routine, weft_atomic_op op, T *dest, T value, int pe)
{
    amo(ctx_of(routine, ctx), routine, op, datatype_of<T>(), sizeof(T), dest, &value, nullptr,
        nullptr, pe, false);
}
template <class T>
T cswap(shmem_ctx_t ctx, const char *routine, T *dest, T cond, T value, int pe)
{
    T old;
    amo(ctx_of(routine, ctx), routine, WEFT_CSWAP, datatype_of<T>(), sizeof(T), dest, &value, &cond,
        &old, pe, false);
    return old;
}
template <class T>
void cswap_nbi(shmem_ctx_t ctx, const char *routine, T *fetch, T *dest, T cond, T value, int pe)
{
    if (fetch == nullptr) [[unlikely]] {
        check_init(routine);
        fatal(routine, "the fetch address is NULL");
    }
    amo(ctx_of(routine, ctx), routine, WEFT_CSWAP, datatype_of<T>(), sizeof(T), dest, &value, &cond,
        fetch, pe, true);
}

}  // namespace

extern "C" {

// fetch, set, swap: the extended AMO types.
#define WEFT_SHMEM_AMO_EXT(TYPE, NAME)                                                            \
    TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source, int pe)             \
    {                                                                                             \
        return fetch_op<TYPE>(ctx, __func__, WEFT_NOOP, const_cast<TYPE *>(source),               \
                              static_cast<TYPE>(0), pe);                                          \
    }                                                                                             \
    TYPE shmem_##NAME##_atomic_fetch(const TYPE *source, int pe)                                  \
    {                                                                                             \
        return fetch_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_NOOP, const_cast<TYPE *>(source), \
                              static_cast<TYPE>(0), pe);                                          \
    }                                                                                             \
    void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE *fetch, const TYPE *source,    \
                                             int pe)                                              \
    {                                                                                             \
        fetch_op_nbi<TYPE>(ctx, __func__, WEFT_NOOP, fetch, const_cast<TYPE *>(source),           \
                           static_cast<TYPE>(0), pe);                                             \
    }                                                                                             \
    void shmem_##NAME##_atomic_fetch_nbi(TYPE *fetch, const TYPE *source, int pe)                 \
    {                                                                                             \
        fetch_op_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_NOOP, fetch,                         \
                           const_cast<TYPE *>(source), static_cast<TYPE>(0), pe);                 \
    }                                                                                             \
    void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)           \
    {                                                                                             \
        post_op<TYPE>(ctx, __func__, WEFT_REPLACE, dest, value, pe);                              \
    }                                                                                             \
    void shmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe)                                \
    {                                                                                             \
        post_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_REPLACE, dest, value, pe);                \
    }                                                                                             \
    TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)          \
    {                                                                                             \
        return fetch_op<TYPE>(ctx, __func__, WEFT_REPLACE, dest, value, pe);                      \
    }                                                                                             \
    TYPE shmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe)                               \
    {                                                                                             \
        return fetch_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_REPLACE, dest, value, pe);        \
    }                                                                                             \
    void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest, TYPE value, \
                                            int pe)                                               \
    {                                                                                             \
        fetch_op_nbi<TYPE>(ctx, __func__, WEFT_REPLACE, fetch, dest, value, pe);                  \
    }                                                                                             \
    void shmem_##NAME##_atomic_swap_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)              \
    {                                                                                             \
        fetch_op_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_REPLACE, fetch, dest, value, pe);    \
    }
SHMEM_AMO_EXT_TYPES(WEFT_SHMEM_AMO_EXT)
#undef WEFT_SHMEM_AMO_EXT

// compare_swap, inc, add and their fetching forms: the standard AMO types.
#define WEFT_SHMEM_AMO_STD(TYPE, NAME)                                                             \
    TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest, TYPE cond,            \
                                                TYPE value, int pe)                                \
    {                                                                                              \
        return cswap<TYPE>(ctx, __func__, dest, cond, value, pe);                                  \
    }                                                                                              \
    TYPE shmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, int pe)             \
    {                                                                                              \
        return cswap<TYPE>(SHMEM_CTX_DEFAULT, __func__, dest, cond, value, pe);                    \
    }                                                                                              \
    void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,      \
                                                    TYPE cond, TYPE value, int pe)                 \
    {                                                                                              \
        cswap_nbi<TYPE>(ctx, __func__, fetch, dest, cond, value, pe);                              \
    }                                                                                              \
    void shmem_##NAME##_atomic_compare_swap_nbi(TYPE *fetch, TYPE *dest, TYPE cond, TYPE value,    \
                                                int pe)                                            \
    {                                                                                              \
        cswap_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, fetch, dest, cond, value, pe);                \
    }                                                                                              \
    TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE *dest, int pe)                  \
    {                                                                                              \
        return fetch_op<TYPE>(ctx, __func__, WEFT_SUM, dest, static_cast<TYPE>(1), pe);            \
    }                                                                                              \
    TYPE shmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe)                                       \
    {                                                                                              \
        return fetch_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, dest, static_cast<TYPE>(1),   \
                              pe);                                                                 \
    }                                                                                              \
    void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest, int pe) \
    {                                                                                              \
        fetch_op_nbi<TYPE>(ctx, __func__, WEFT_SUM, fetch, dest, static_cast<TYPE>(1), pe);        \
    }                                                                                              \
    void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE *fetch, TYPE *dest, int pe)                      \
    {                                                                                              \
        fetch_op_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, fetch, dest,                     \
                           static_cast<TYPE>(1), pe);                                              \
    }                                                                                              \
    void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE *dest, int pe)                        \
    {                                                                                              \
        post_op<TYPE>(ctx, __func__, WEFT_SUM, dest, static_cast<TYPE>(1), pe);                    \
    }                                                                                              \
    void shmem_##NAME##_atomic_inc(TYPE *dest, int pe)                                             \
    {                                                                                              \
        post_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, dest, static_cast<TYPE>(1), pe);      \
    }                                                                                              \
    TYPE shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)      \
    {                                                                                              \
        return fetch_op<TYPE>(ctx, __func__, WEFT_SUM, dest, value, pe);                           \
    }                                                                                              \
    TYPE shmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe)                           \
    {                                                                                              \
        return fetch_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, dest, value, pe);             \
    }                                                                                              \
    void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,         \
                                                 TYPE value, int pe)                               \
    {                                                                                              \
        fetch_op_nbi<TYPE>(ctx, __func__, WEFT_SUM, fetch, dest, value, pe);                       \
    }                                                                                              \
    void shmem_##NAME##_atomic_fetch_add_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)          \
    {                                                                                              \
        fetch_op_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, fetch, dest, value, pe);         \
    }                                                                                              \
    void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)            \
    {                                                                                              \
        post_op<TYPE>(ctx, __func__, WEFT_SUM, dest, value, pe);                                   \
    }                                                                                              \
    void shmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe)                                 \
    {                                                                                              \
        post_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WEFT_SUM, dest, value, pe);                     \
    }
SHMEM_AMO_STD_TYPES(WEFT_SHMEM_AMO_STD)
#undef WEFT_SHMEM_AMO_STD

// and, or, xor and their fetching forms: the bitwise AMO types.
#define WEFT_SHMEM_AMO_BIT_OP(TYPE, NAME, OP, WOP)                                             \
    TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe) \
    {                                                                                          \
        return fetch_op<TYPE>(ctx, __func__, WOP, dest, value, pe);                            \
    }                                                                                          \
    TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE *dest, TYPE value, int pe)                      \
    {                                                                                          \
        return fetch_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WOP, dest, value, pe);              \
    }                                                                                          \
    void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,  \
                                                    TYPE value, int pe)                        \
    {                                                                                          \
        fetch_op_nbi<TYPE>(ctx, __func__, WOP, fetch, dest, value, pe);                        \
    }                                                                                          \
    void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)   \
    {                                                                                          \
        fetch_op_nbi<TYPE>(SHMEM_CTX_DEFAULT, __func__, WOP, fetch, dest, value, pe);          \
    }                                                                                          \
    void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)       \
    {                                                                                          \
        post_op<TYPE>(ctx, __func__, WOP, dest, value, pe);                                    \
    }                                                                                          \
    void shmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe)                            \
    {                                                                                          \
        post_op<TYPE>(SHMEM_CTX_DEFAULT, __func__, WOP, dest, value, pe);                      \
    }
#define WEFT_SHMEM_AMO_BIT(TYPE, NAME)                \
    WEFT_SHMEM_AMO_BIT_OP(TYPE, NAME, and, WEFT_BAND) \
    WEFT_SHMEM_AMO_BIT_OP(TYPE, NAME, or, WEFT_BOR)   \
    WEFT_SHMEM_AMO_BIT_OP(TYPE, NAME, xor, WEFT_BXOR)
SHMEM_AMO_BIT_TYPES(WEFT_SHMEM_AMO_BIT)
#undef WEFT_SHMEM_AMO_BIT
#undef WEFT_SHMEM_AMO_BIT_OP

}  // extern "C"
