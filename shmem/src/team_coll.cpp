// Team collectives through the collectives library (docs/shmem.md, "Teams
// and collectives"; docs/collectives.md).
//
// Every team is a libweft-coll group on a collectives context of its own (an
// endpoint and CQ: teams used by different threads never share one). The
// group is made when the team is, with an out-of-band allgather over the
// team's symmetric words, and the symmetric heap is its segment: on a node
// the library's shared-memory stage then moves team collectives on heap
// buffers with loads and stores straight between the PEs' buffers
// (WEFT_COLL_SYMMETRIC); elsewhere, or for the data segment, it runs its
// message schedules. The deprecated active-set routines keep their own
// algorithms over pSync (coll.cpp): an active set is no object to hang a
// group on.

#include <weft/coll.h>

#include <complex>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

namespace {

/// The out-of-band allgather of group creation: through the team's symmetric
/// scratch (free: the library moves the team's data), a chunk at a time,
/// between two synchronizations of the team's words.
int team_allgather(const void *send, void *recv, std::size_t len, void *arg)
{
    auto *t = static_cast<shmem_team_opaque *>(arg);
    const group gr = team_group(t);
    char *area = internal()->scratch[t->slot];
    constexpr std::size_t area_len = team_scratch;
    for (std::size_t off = 0; off < len || (len == 0 && off == 0); off += area_len) {
        const std::size_t m = len - off < area_len ? len - off : area_len;
        std::memcpy(area, static_cast<const char *>(send) + off, m);
        group_sync(gr, "team creation");
        for (int j = 0; j < gr.n; ++j) {
            char *dst = static_cast<char *>(recv) + std::size_t(j) * len + off;
            if (j == gr.me) {
                std::memcpy(dst, area, m);
            } else {
                get(&g.world, "team creation", dst, area, m, gr.pes[j], false);
            }
        }
        group_sync(gr, "team creation");  // everyone has read our chunk
        if (len == 0) {
            break;
        }
    }
    return 0;
}

/// While a team collective waits: this PE's endpoint (peers' RMA on the data
/// segment) and the other teams' collectives (a member may still owe a peer
/// the rest of a large message of an earlier collective on another team).
void wait_hook(void *arg)
{
    auto *self = static_cast<shmem_team_opaque *>(arg);
    progress(&g.world);
    std::unique_lock<std::mutex> list(g.teams_mu, std::try_to_lock);
    if (!list.owns_lock()) {
        return;
    }
    for (shmem_team_opaque *t : g.teams) {
        if (t != self && t->coll_ctx != nullptr) {
            std::unique_lock<std::mutex> lk(t->coll_mu, std::try_to_lock);
            if (lk.owns_lock()) {
                (void)weft_coll_progress(t->coll_ctx);
            }
        }
    }
}

}  // namespace

void team_coll_open(shmem_team_opaque *t, const char *routine)
{
    int rc = weft_coll_context_open(g.domain, g.info, &t->coll_ctx);
    if (rc != 0) {
        weft_failed(routine, "weft_coll_context_open", rc);
    }
    weft_coll_context_set_wait_hook(t->coll_ctx, wait_hook, t);
    const weft_coll_oob oob{team_allgather, t};
    rc = weft_coll_group_create(t->coll_ctx, std::uint32_t(t->pes.size()), std::uint32_t(t->me),
                                &oob, &t->coll);
    if (rc != 0) {
        weft_failed(routine, "weft_coll_group_create", rc);
    }
    const segment &heap = g.segs[int(seg_id::heap)];
    rc = weft_coll_group_add_segment(t->coll, heap.base, heap.len, heap.mr, &oob);
    if (rc != 0) {
        weft_failed(routine, "weft_coll_group_add_segment", rc);
    }
    const std::lock_guard<std::mutex> list(g.teams_mu);
    g.teams.push_back(t);
}

void team_coll_close(shmem_team_opaque *t)
{
    if (t->coll_ctx == nullptr) {
        return;
    }
    {
        const std::lock_guard<std::mutex> list(g.teams_mu);
        std::erase(g.teams, t);
    }
    (void)weft_coll_group_destroy(t->coll);
    (void)weft_coll_context_close(t->coll_ctx);
    t->coll = nullptr;
    t->coll_ctx = nullptr;
}

int team_coll(shmem_team_opaque *t, const char *routine, weft_coll_args &a)
{
    a.flags = WEFT_COLL_SYMMETRIC;
    int rc;
    if (g.thread_level == SHMEM_THREAD_MULTIPLE) {
        const std::lock_guard<std::mutex> lk(t->coll_mu);
        rc = weft_coll(t->coll, &a);
    } else {
        rc = weft_coll(t->coll, &a);
    }
    if (rc != 0) [[unlikely]] {
        std::fprintf(stderr, "OpenSHMEM error on PE %d in %s: the team's collective failed: %s\n",
                     g.me, routine, weft_strerror(rc));
        return -1;
    }
    return 0;
}

}  // namespace weft::shmem

using namespace weft::shmem;

namespace {

/// The library's element type of a reduction type.
template <class T>
constexpr weft_coll_datatype coll_type_of() noexcept
{
    if constexpr (std::is_same_v<T, float>) {
        return WEFT_COLL_FLOAT;
    } else if constexpr (std::is_same_v<T, double>) {
        return WEFT_COLL_DOUBLE;
    } else if constexpr (std::is_same_v<T, long double>) {
        return WEFT_COLL_LONG_DOUBLE;
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
        return WEFT_COLL_FLOAT_COMPLEX;
    } else if constexpr (std::is_same_v<T, std::complex<double>>) {
        return WEFT_COLL_DOUBLE_COMPLEX;
    } else if constexpr (sizeof(T) == 1) {
        return std::is_signed_v<T> ? WEFT_COLL_INT8 : WEFT_COLL_UINT8;
    } else if constexpr (sizeof(T) == 2) {
        return std::is_signed_v<T> ? WEFT_COLL_INT16 : WEFT_COLL_UINT16;
    } else if constexpr (sizeof(T) == 4) {
        return std::is_signed_v<T> ? WEFT_COLL_INT32 : WEFT_COLL_UINT32;
    } else {
        static_assert(sizeof(T) == 8, "integer reduction types are 1 to 8 bytes");
        return std::is_signed_v<T> ? WEFT_COLL_INT64 : WEFT_COLL_UINT64;
    }
}

template <class T>
int reduce(const char *routine, shmem_team_t team, weft_coll_op op, void *dest, const void *source,
           std::size_t nreduce)
{
    shmem_team_opaque *t = team_member(routine, team);
    if (t == nullptr) {
        return -1;
    }
    weft_coll_args a{};
    a.type = WEFT_COLL_ALLREDUCE;
    a.datatype = coll_type_of<T>();
    a.op = op;
    a.count = nreduce;
    a.sendbuf = source == dest ? WEFT_COLL_IN_PLACE : source;
    a.recvbuf = dest;
    return team_coll(t, routine, a);
}

/// Bytes moved as bytes (broadcast, collect, alltoall).
weft_coll_args bytes_args(weft_coll_type type, void *dest, const void *source, std::size_t len)
{
    weft_coll_args a{};
    a.type = type;
    a.datatype = WEFT_COLL_BYTE;
    a.count = len;
    a.sendbuf = source;
    a.recvbuf = dest;
    return a;
}

int alltoalls(const char *routine, shmem_team_t team, void *dest, const void *source,
              std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems, std::size_t size)
{
    shmem_team_opaque *t = team_member(routine, team);
    if (t == nullptr) {
        return -1;
    }
    const std::size_t n = t->pes.size();
    if (dst == 1 && sst == 1) {
        weft_coll_args a = bytes_args(WEFT_COLL_ALLTOALL, dest, source, nelems * size);
        return team_coll(t, routine, a);
    }
    // Strided: packed into private buffers around a dense alltoall.
    thread_local std::vector<char> in;
    thread_local std::vector<char> out;
    const std::size_t block = nelems * size;
    in.resize(block * n);
    out.resize(block * n);
    const auto *s = static_cast<const char *>(source);
    auto *d = static_cast<char *>(dest);
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t i = 0; i < nelems; ++i) {
            std::memcpy(in.data() + j * block + i * size,
                        s + (std::ptrdiff_t(j * nelems + i) * sst) * std::ptrdiff_t(size), size);
        }
    }
    weft_coll_args a = bytes_args(WEFT_COLL_ALLTOALL, out.data(), in.data(), block);
    if (team_coll(t, routine, a) != 0) {
        return -1;
    }
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t i = 0; i < nelems; ++i) {
            std::memcpy(d + (std::ptrdiff_t(j * nelems + i) * dst) * std::ptrdiff_t(size),
                        out.data() + j * block + i * size, size);
        }
    }
    return 0;
}

}  // namespace

extern "C" {

int shmem_team_sync(shmem_team_t team)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (t == nullptr) {
        return -1;
    }
    weft_coll_args a{};
    a.type = WEFT_COLL_BARRIER;
    return team_coll(t, __func__, a);
}

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (t == nullptr) {
        return -1;
    }
    if (PE_root < 0 || std::size_t(PE_root) >= t->pes.size()) {
        fatal(__func__, "PE_root %d is not a member (0..%zu)", PE_root, t->pes.size() - 1);
    }
    // The root's dest gets the data too (1.5): the library's bcast with a sendbuf.
    weft_coll_args a = bytes_args(WEFT_COLL_BCAST, dest, source, nelems);
    a.root = std::uint32_t(PE_root);
    return team_coll(t, __func__, a);
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (t == nullptr) {
        return -1;
    }
    weft_coll_args a = bytes_args(WEFT_COLL_ALLGATHER, dest, source, nelems);
    return team_coll(t, __func__, a);
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    shmem_team_opaque *t = team_member(__func__, team);
    if (t == nullptr) {
        return -1;
    }
    // Every member's length first, then each block at the sum of the lengths before it.
    const std::size_t n = t->pes.size();
    thread_local std::vector<std::size_t> counts;
    thread_local std::vector<std::size_t> displs;
    counts.resize(n);
    displs.resize(n);
    std::uint64_t mine = nelems;
    weft_coll_args c{};
    c.type = WEFT_COLL_ALLGATHER;
    c.datatype = WEFT_COLL_UINT64;
    c.count = 1;
    c.sendbuf = &mine;
    c.recvbuf = counts.data();
    static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
    if (team_coll(t, __func__, c) != 0) {
        return -1;
    }
    std::size_t at = 0;
    for (std::size_t j = 0; j < n; ++j) {
        displs[j] = at;
        at += counts[j];
    }
    weft_coll_args a = bytes_args(WEFT_COLL_ALLGATHERV, dest, source, nelems);
    a.recvcounts = counts.data();
    a.rdispls = displs.data();
    return team_coll(t, __func__, a);
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return alltoalls(__func__, team, dest, source, 1, 1, nelems, 1);
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems)
{
    return alltoalls(__func__, team, dest, source, dst, sst, nelems, 1);
}

#define WEFT_SHMEM_COLL_TYPED(TYPE, NAME)                                                          \
    int shmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems, \
                                 int PE_root)                                                      \
    {                                                                                              \
        return shmem_broadcastmem(team, dest, source, nelems * sizeof(TYPE), PE_root);             \
    }                                                                                              \
    int shmem_##NAME##_collect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)   \
    {                                                                                              \
        return shmem_collectmem(team, dest, source, nelems * sizeof(TYPE));                        \
    }                                                                                              \
    int shmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)  \
    {                                                                                              \
        return shmem_fcollectmem(team, dest, source, nelems * sizeof(TYPE));                       \
    }                                                                                              \
    int shmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)  \
    {                                                                                              \
        return alltoalls(__func__, team, dest, source, 1, 1, nelems, sizeof(TYPE));                \
    }                                                                                              \
    int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                 ptrdiff_t sst, size_t nelems)                                     \
    {                                                                                              \
        return alltoalls(__func__, team, dest, source, dst, sst, nelems, sizeof(TYPE));            \
    }
SHMEM_RMA_TYPES(WEFT_SHMEM_COLL_TYPED)
#undef WEFT_SHMEM_COLL_TYPED

// Reductions: the C type, the C++ type the library's type is chosen from, the operation.
#define WEFT_SHMEM_REDUCE(TYPE, CXX, NAME, OP, COP)                                     \
    int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, \
                                     size_t nreduce)                                    \
    {                                                                                   \
        return reduce<CXX>(__func__, team, COP, dest, source, nreduce);                 \
    }
#define WEFT_SHMEM_REDUCE_BIT(TYPE, NAME)                    \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, and, WEFT_COLL_BAND) \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, or, WEFT_COLL_BOR)   \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, xor, WEFT_COLL_BXOR)
#define WEFT_SHMEM_REDUCE_CMP(TYPE, NAME)                   \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, max, WEFT_COLL_MAX) \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, min, WEFT_COLL_MIN)
#define WEFT_SHMEM_REDUCE_ARITH(TYPE, NAME)                 \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, sum, WEFT_COLL_SUM) \
    WEFT_SHMEM_REDUCE(TYPE, TYPE, NAME, prod, WEFT_COLL_PROD)
SHMEM_REDUCE_BIT_TYPES(WEFT_SHMEM_REDUCE_BIT)
SHMEM_REDUCE_CMP_TYPES(WEFT_SHMEM_REDUCE_CMP)
SHMEM_REDUCE_CMP_TYPES(WEFT_SHMEM_REDUCE_ARITH)
WEFT_SHMEM_REDUCE(double _Complex, std::complex<double>, complexd, sum, WEFT_COLL_SUM)
WEFT_SHMEM_REDUCE(double _Complex, std::complex<double>, complexd, prod, WEFT_COLL_PROD)
WEFT_SHMEM_REDUCE(float _Complex, std::complex<float>, complexf, sum, WEFT_COLL_SUM)
WEFT_SHMEM_REDUCE(float _Complex, std::complex<float>, complexf, prod, WEFT_COLL_PROD)
#undef WEFT_SHMEM_REDUCE_ARITH
#undef WEFT_SHMEM_REDUCE_CMP
#undef WEFT_SHMEM_REDUCE_BIT
#undef WEFT_SHMEM_REDUCE

}  // extern "C"
