// Point-to-point synchronization (wait_until, test and their vector forms,
// signals), memory ordering (fence, quiet) and the all-PE barriers
// (docs/shmem.md, "Synchronization").
//
// A waiting PE polls the variable with acquire loads and drives progress
// between polls: stores from node peers land in its memory directly, puts
// from others arrive through its default endpoint.

#include <atomic>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

namespace {

template <class T>
bool compare(const char *routine, int cmp, T v, T ref)
{
    switch (cmp) {
        case SHMEM_CMP_EQ:
            return v == ref;
        case SHMEM_CMP_NE:
            return v != ref;
        case SHMEM_CMP_GT:
            return v > ref;
        case SHMEM_CMP_GE:
            return v >= ref;
        case SHMEM_CMP_LT:
            return v < ref;
        case SHMEM_CMP_LE:
            return v <= ref;
        default:
            fatal(routine, "%d is not a comparison operator (SHMEM_CMP_EQ ... SHMEM_CMP_LE)", cmp);
    }
}

template <class T>
T load(const T *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/// Whether element i takes part (status NULL, or status[i] == 0).
inline bool active(const int *status, std::size_t i)
{
    return status == nullptr || status[i] == 0;
}

/// The vector forms compare element i with refs[i], the others with refs[0].
template <class T>
struct refs {
    const T *values;
    bool vector;
    T operator[](std::size_t i) const { return vector ? values[i] : values[0]; }
};

template <class T>
bool test_all(const char *routine, T *ivars, std::size_t n, const int *status, int cmp, refs<T> r)
{
    for (std::size_t i = 0; i < n; ++i) {
        if (active(status, i) && !compare(routine, cmp, load(&ivars[i]), r[i])) {
            return false;
        }
    }
    return true;
}

/// A satisfied element, or SIZE_MAX. The search starts after the element the
/// previous call returned: "a series of calls must eventually return i" for
/// every satisfied entry i (1.5), so the lowest one cannot win every time.
template <class T>
std::size_t test_any(const char *routine, T *ivars, std::size_t n, const int *status, int cmp,
                     refs<T> r)
{
    thread_local std::size_t next = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (next + k) % n;
        if (active(status, i) && compare(routine, cmp, load(&ivars[i]), r[i])) {
            next = i + 1;
            return i;
        }
    }
    return SIZE_MAX;
}

template <class T>
std::size_t test_some(const char *routine, T *ivars, std::size_t n, std::size_t *indices,
                      const int *status, int cmp, refs<T> r)
{
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (active(status, i) && compare(routine, cmp, load(&ivars[i]), r[i])) {
            indices[k++] = i;
        }
    }
    return k;
}

bool all_masked(const int *status, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        if (active(status, i)) {
            return false;
        }
    }
    return true;
}

}  // namespace

void sync_all(const char *routine)
{
    // Dissemination: in round k, signal PE me + 2^k and wait for PE me - 2^k.
    // Flags hold the barrier's sequence number, which only grows, so a
    // neighbour already in the next barrier cannot be mistaken for this one.
    static std::uint64_t epoch = 0;
    ++epoch;
    internal_area *in = internal();
    int round = 0;
    for (int dist = 1; dist < g.npes; dist <<= 1, ++round) {
        const int to = (g.me + dist) % g.npes;
        std::uint64_t *flag = &in->barrier_flags[round];
        if (const target t = locate(&g.world, routine, flag, sizeof(*flag), to); t.ptr != nullptr) {
            // A store, not an exchange: it does not wait for the line to come.
            __atomic_store_n(reinterpret_cast<std::uint64_t *>(t.ptr), epoch, __ATOMIC_RELEASE);
        } else {
            amo(&g.world, routine, WEFT_REPLACE, WEFT_UINT64, sizeof(std::uint64_t), flag, &epoch,
                nullptr, nullptr, to, false);
        }
        spin([&] { return load(flag) >= epoch; });
    }
}

void world_barrier(const char *routine)
{
    weft_coll_args a{};
    a.type = WEFT_COLL_BARRIER;
    if (team_coll(&g.world_team, routine, a) != 0) {
        fatal(routine, "the barrier over every PE failed");
    }
}

}  // namespace weft::shmem

using namespace weft::shmem;

extern "C" {

#define WEFT_SHMEM_SYNC(TYPE, NAME)                                                                \
    void shmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value)                            \
    {                                                                                              \
        check_init(__func__);                                                                      \
        spin([&, routine = __func__] {                                                             \
            return compare<TYPE>(routine, cmp, load(ivar), cmp_value);                             \
        });                                                                                        \
    }                                                                                              \
    int shmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value)                                   \
    {                                                                                              \
        check_init(__func__);                                                                      \
        if (compare<TYPE>(__func__, cmp, load(ivar), cmp_value)) {                                 \
            return 1;                                                                              \
        }                                                                                          \
        progress(&g.world);                                                                        \
        return compare<TYPE>(__func__, cmp, load(ivar), cmp_value) ? 1 : 0;                        \
    }                                                                                              \
    void shmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems, const int *status, int cmp,     \
                                       TYPE cmp_value)                                             \
    {                                                                                              \
        check_init(__func__);                                                                      \
        const refs<TYPE> r{&cmp_value, false};                                                     \
        spin([&, routine = __func__] {                                                             \
            return test_all<TYPE>(routine, ivars, nelems, status, cmp, r);                         \
        });                                                                                        \
    }                                                                                              \
    void shmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems, const int *status,       \
                                              int cmp, TYPE *cmp_values)                           \
    {                                                                                              \
        check_init(__func__);                                                                      \
        const refs<TYPE> r{cmp_values, true};                                                      \
        spin([&, routine = __func__] {                                                             \
            return test_all<TYPE>(routine, ivars, nelems, status, cmp, r);                         \
        });                                                                                        \
    }                                                                                              \
    size_t shmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems, const int *status, int cmp,   \
                                         TYPE cmp_value)                                           \
    {                                                                                              \
        check_init(__func__);                                                                      \
        if (all_masked(status, nelems)) {                                                          \
            return SIZE_MAX;                                                                       \
        }                                                                                          \
        const refs<TYPE> r{&cmp_value, false};                                                     \
        std::size_t at = SIZE_MAX;                                                                 \
        spin([&, routine = __func__] {                                                             \
            return (at = test_any<TYPE>(routine, ivars, nelems, status, cmp, r)) != SIZE_MAX;      \
        });                                                                                        \
        return at;                                                                                 \
    }                                                                                              \
    size_t shmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, const int *status,     \
                                                int cmp, TYPE *cmp_values)                         \
    {                                                                                              \
        check_init(__func__);                                                                      \
        if (all_masked(status, nelems)) {                                                          \
            return SIZE_MAX;                                                                       \
        }                                                                                          \
        const refs<TYPE> r{cmp_values, true};                                                      \
        std::size_t at = SIZE_MAX;                                                                 \
        spin([&, routine = __func__] {                                                             \
            return (at = test_any<TYPE>(routine, ivars, nelems, status, cmp, r)) != SIZE_MAX;      \
        });                                                                                        \
        return at;                                                                                 \
    }                                                                                              \
    size_t shmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems, size_t *indices,             \
                                          const int *status, int cmp, TYPE cmp_value)              \
    {                                                                                              \
        check_init(__func__);                                                                      \
        if (all_masked(status, nelems)) {                                                          \
            return 0;                                                                              \
        }                                                                                          \
        const refs<TYPE> r{&cmp_value, false};                                                     \
        std::size_t k = 0;                                                                         \
        spin([&, routine = __func__] {                                                             \
            return (k = test_some<TYPE>(routine, ivars, nelems, indices, status, cmp, r)) != 0;    \
        });                                                                                        \
        return k;                                                                                  \
    }                                                                                              \
    size_t shmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, size_t *indices,      \
                                                 const int *status, int cmp, TYPE *cmp_values)     \
    {                                                                                              \
        check_init(__func__);                                                                      \
        if (all_masked(status, nelems)) {                                                          \
            return 0;                                                                              \
        }                                                                                          \
        const refs<TYPE> r{cmp_values, true};                                                      \
        std::size_t k = 0;                                                                         \
        spin([&, routine = __func__] {                                                             \
            return (k = test_some<TYPE>(routine, ivars, nelems, indices, status, cmp, r)) != 0;    \
        });                                                                                        \
        return k;                                                                                  \
    }                                                                                              \
    int shmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status, int cmp,            \
                                TYPE cmp_value)                                                    \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_all<TYPE>(__func__, ivars, nelems, status, cmp, {&cmp_value, false}) ? 1 : 0;  \
    }                                                                                              \
    int shmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp,     \
                                       TYPE *cmp_values)                                           \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_all<TYPE>(__func__, ivars, nelems, status, cmp, {cmp_values, true}) ? 1 : 0;   \
    }                                                                                              \
    size_t shmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, int cmp,         \
                                   TYPE cmp_value)                                                 \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_any<TYPE>(__func__, ivars, nelems, status, cmp, {&cmp_value, false});          \
    }                                                                                              \
    size_t shmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems, const int *status, int cmp,  \
                                          TYPE *cmp_values)                                        \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_any<TYPE>(__func__, ivars, nelems, status, cmp, {cmp_values, true});           \
    }                                                                                              \
    size_t shmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,                   \
                                    const int *status, int cmp, TYPE cmp_value)                    \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_some<TYPE>(__func__, ivars, nelems, indices, status, cmp,                      \
                               {&cmp_value, false});                                               \
    }                                                                                              \
    size_t shmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems, size_t *indices,            \
                                           const int *status, int cmp, TYPE *cmp_values)           \
    {                                                                                              \
        check_init(__func__);                                                                      \
        progress(&g.world);                                                                        \
        return test_some<TYPE>(__func__, ivars, nelems, indices, status, cmp, {cmp_values, true}); \
    }
SHMEM_SYNC_TYPES(WEFT_SHMEM_SYNC)
#undef WEFT_SHMEM_SYNC

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    check_init(__func__);
    std::uint64_t v = 0;
    spin([&, routine = __func__] {
        return compare<std::uint64_t>(routine, cmp, v = load(sig_addr), cmp_value);
    });
    return v;
}

void shmem_ctx_fence(shmem_ctx_t ctx)
{
    // Order every earlier put, AMO and store of the context before later ones:
    // stores through pointers are ordered by the release fence; operations in
    // flight through weft are completed (stronger than an order per PE, and
    // free when nothing is in flight).
    std::atomic_thread_fence(std::memory_order_release);
    quiet(ctx_of(__func__, ctx), __func__);
}

void shmem_fence(void)
{
    shmem_ctx_fence(SHMEM_CTX_DEFAULT);
}

void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
    quiet(ctx_of(__func__, ctx), __func__);
}

void shmem_quiet(void)
{
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
}

void shmem_barrier_all(void)
{
    check_init(__func__);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    quiet(&g.world, __func__);
    world_barrier(__func__);
}

void shmem_sync_all(void)
{
    check_init(__func__);
    world_barrier(__func__);
}

}  // extern "C"
