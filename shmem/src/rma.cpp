// Remote memory access: put, get, strided, single elements, put with signal
// (docs/shmem.md, "RMA").
//
// A PE whose memory this process maps (itself, node peers' heaps) is reached
// with memcpy: no message, no progress needed there. Others go through the
// context's weft endpoint: a blocking put up to the inject limit is an inject
// (the source is reusable on return, the data is on its way), a longer one
// waits for its completion; a non-blocking one is posted without a completion
// and shmem_quiet (weft_ep_flush) finishes it. Blocking gets wait.

#include <atomic>
#include <cstring>

#include "shmem/src/shmem_impl.hpp"

namespace weft::shmem {

void put(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::size_t len,
         int pe, bool nbi)
{
    const target t = locate(c, routine, dest, len, pe);
    if (len == 0) {
        return;
    }
    if (t.ptr != nullptr) {
        std::memcpy(t.ptr, src, len);
        return;
    }
    if (len <= g.inject) {
        post(c, routine, "weft_inject_put",
             [&] { return weft_inject_put(c->ep, src, len, t.addr, t.key); });
        return;
    }
    const iovec iov{const_cast<void *>(src), len};
    if (nbi) {
        const weft_msg_rma m{&iov, nullptr, 1, t.addr, t.key, nullptr, 0};
        post(c, routine, "weft_putmsg", [&] { return weft_putmsg(c->ep, &m, 0); });
        return;
    }
    token tok;
    const weft_msg_rma m{&iov, nullptr, 1, t.addr, t.key, &tok, 0};
    post(c, routine, "weft_putmsg", [&] { return weft_putmsg(c->ep, &m, WEFT_COMPLETION); });
    wait(c, tok, routine);
}

void get(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::size_t len,
         int pe, bool nbi)
{
    const target t = locate(c, routine, src, len, pe);
    if (len == 0) {
        return;
    }
    if (t.ptr != nullptr) {
        std::memcpy(dest, t.ptr, len);
        poll_progress();
        return;
    }
    const iovec iov{dest, len};
    if (nbi) {
        const weft_msg_rma m{&iov, nullptr, 1, t.addr, t.key, nullptr, 0};
        post(c, routine, "weft_getmsg", [&] { return weft_getmsg(c->ep, &m, 0); });
        return;
    }
    token tok;
    const weft_msg_rma m{&iov, nullptr, 1, t.addr, t.key, &tok, 0};
    post(c, routine, "weft_getmsg", [&] { return weft_getmsg(c->ep, &m, WEFT_COMPLETION); });
    wait(c, tok, routine);
}

void iput(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::ptrdiff_t dst,
          std::ptrdiff_t sst, std::size_t nelems, std::size_t size, int pe)
{
    if (nelems == 0) {
        return;
    }
    // The whole span touched at the target must be symmetric (checked once).
    const std::ptrdiff_t span = dst * static_cast<std::ptrdiff_t>(nelems - 1);
    char *lo = static_cast<char *>(dest) + (span < 0 ? span * std::ptrdiff_t(size) : 0);
    const std::size_t bytes = static_cast<std::size_t>(span < 0 ? -span : span) * size + size;
    const target t = locate(c, routine, lo, bytes, pe);
    auto *d = static_cast<char *>(dest);
    const auto *s = static_cast<const char *>(src);
    if (t.ptr != nullptr) {
        char *m = t.ptr + (d - lo);
        for (std::size_t i = 0; i < nelems; ++i) {
            std::memcpy(m + std::ptrdiff_t(i) * dst * std::ptrdiff_t(size),
                        s + std::ptrdiff_t(i) * sst * std::ptrdiff_t(size), size);
        }
        return;
    }
    for (std::size_t i = 0; i < nelems; ++i) {
        const std::uint64_t at =
            t.addr + std::uint64_t(std::ptrdiff_t(i) * dst * std::ptrdiff_t(size) + (d - lo));
        const char *from = s + std::ptrdiff_t(i) * sst * std::ptrdiff_t(size);
        post(c, routine, "weft_inject_put",
             [&] { return weft_inject_put(c->ep, from, size, at, t.key); });
    }
}

void iget(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src, std::ptrdiff_t dst,
          std::ptrdiff_t sst, std::size_t nelems, std::size_t size, int pe)
{
    if (nelems == 0) {
        return;
    }
    const std::ptrdiff_t span = sst * static_cast<std::ptrdiff_t>(nelems - 1);
    const char *lo = static_cast<const char *>(src) + (span < 0 ? span * std::ptrdiff_t(size) : 0);
    const std::size_t bytes = static_cast<std::size_t>(span < 0 ? -span : span) * size + size;
    const target t = locate(c, routine, lo, bytes, pe);
    auto *d = static_cast<char *>(dest);
    const auto *s = static_cast<const char *>(src);
    if (t.ptr != nullptr) {
        const char *m = t.ptr + (s - lo);
        for (std::size_t i = 0; i < nelems; ++i) {
            std::memcpy(d + std::ptrdiff_t(i) * dst * std::ptrdiff_t(size),
                        m + std::ptrdiff_t(i) * sst * std::ptrdiff_t(size), size);
        }
        return;
    }
    // Every element's get posted, then the last one waited for: gets of one
    // context complete in order only through a flush, so flush.
    for (std::size_t i = 0; i < nelems; ++i) {
        const std::uint64_t at =
            t.addr + std::uint64_t(std::ptrdiff_t(i) * sst * std::ptrdiff_t(size) + (s - lo));
        const iovec iov{d + std::ptrdiff_t(i) * dst * std::ptrdiff_t(size), size};
        const weft_msg_rma m{&iov, nullptr, 1, at, t.key, nullptr, 0};
        post(c, routine, "weft_getmsg", [&] { return weft_getmsg(c->ep, &m, 0); });
    }
    quiet(c, routine);
}

void put_signal(shmem_ctx_opaque *c, const char *routine, void *dest, const void *src,
                std::size_t len, std::uint64_t *sig_addr, std::uint64_t signal, int sig_op, int pe,
                bool nbi)
{
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD) [[unlikely]] {
        check_init(routine);
        fatal(routine, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
    }
    const target data = locate(c, routine, dest, len, pe);
    const target sig = locate(c, routine, sig_addr, sizeof(*sig_addr), pe);
    if (reinterpret_cast<std::uintptr_t>(sig_addr) % alignof(std::uint64_t) != 0) [[unlikely]] {
        fatal(routine, "the signal address %p is not 8-byte aligned",
              static_cast<void *>(sig_addr));
    }
    put(c, routine, dest, src, len, pe, nbi);
    if (sig.ptr != nullptr) {
        // A local pointer: the data must be visible first. Through the pointer
        // too, it is (memcpy above, then this release); through weft, quiet.
        if (data.ptr == nullptr && len != 0) {
            quiet(c, routine);
        }
        auto *word = reinterpret_cast<std::uint64_t *>(sig.ptr);
        if (sig_op == SHMEM_SIGNAL_SET) {
            __atomic_store_n(word, signal, __ATOMIC_RELEASE);
        } else {
            __atomic_fetch_add(word, signal, __ATOMIC_RELEASE);
        }
        return;
    }
    // Through weft: the signal is an atomic fenced behind the data (it starts
    // once every earlier operation of the context is complete at its target),
    // with the operand copied (WEFT_INJECT): nothing to wait for here.
    const weft_msg_atomic m{
        &signal,  nullptr,     nullptr,
        1,        WEFT_UINT64, sig_op == SHMEM_SIGNAL_SET ? WEFT_REPLACE : WEFT_SUM,
        sig.addr, sig.key,     nullptr};
    post(c, routine, "weft_atomicmsg",
         [&] { return weft_atomicmsg(c->ep, &m, WEFT_INJECT | WEFT_FENCE); });
}

}  // namespace weft::shmem

using namespace weft::shmem;

extern "C" {

// ------------------------------------------------------------------ typed routines

#define WEFT_SHMEM_RMA_TYPED(TYPE, NAME)                                                           \
    void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, size_t nelems,    \
                                int pe)                                                            \
    {                                                                                              \
        put(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), pe, false);      \
    }                                                                                              \
    void shmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems, int pe)                 \
    {                                                                                              \
        put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems * sizeof(TYPE),    \
            pe, false);                                                                            \
    }                                                                                              \
    void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,               \
                                    size_t nelems, int pe)                                         \
    {                                                                                              \
        put(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), pe, true);       \
    }                                                                                              \
    void shmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe)             \
    {                                                                                              \
        put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems * sizeof(TYPE),    \
            pe, true);                                                                             \
    }                                                                                              \
    void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, size_t nelems,    \
                                int pe)                                                            \
    {                                                                                              \
        get(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), pe, false);      \
    }                                                                                              \
    void shmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems, int pe)                 \
    {                                                                                              \
        get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems * sizeof(TYPE),    \
            pe, false);                                                                            \
    }                                                                                              \
    void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,               \
                                    size_t nelems, int pe)                                         \
    {                                                                                              \
        get(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), pe, true);       \
    }                                                                                              \
    void shmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe)             \
    {                                                                                              \
        get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems * sizeof(TYPE),    \
            pe, true);                                                                             \
    }                                                                                              \
    void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe)                     \
    {                                                                                              \
        put(ctx_of(__func__, ctx), __func__, dest, &value, sizeof(TYPE), pe, false);               \
    }                                                                                              \
    void shmem_##NAME##_p(TYPE *dest, TYPE value, int pe)                                          \
    {                                                                                              \
        put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, &value, sizeof(TYPE), pe, false); \
    }                                                                                              \
    TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE *source, int pe)                         \
    {                                                                                              \
        TYPE v;                                                                                    \
        get(ctx_of(__func__, ctx), __func__, &v, source, sizeof(TYPE), pe, false);                 \
        return v;                                                                                  \
    }                                                                                              \
    TYPE shmem_##NAME##_g(const TYPE *source, int pe)                                              \
    {                                                                                              \
        TYPE v;                                                                                    \
        get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, &v, source, sizeof(TYPE), pe, false);   \
        return v;                                                                                  \
    }                                                                                              \
    void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, ptrdiff_t dst,   \
                                 ptrdiff_t sst, size_t nelems, int pe)                             \
    {                                                                                              \
        iput(ctx_of(__func__, ctx), __func__, dest, source, dst, sst, nelems, sizeof(TYPE), pe);   \
    }                                                                                              \
    void shmem_##NAME##_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst,         \
                             size_t nelems, int pe)                                                \
    {                                                                                              \
        iput(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, dst, sst, nelems,        \
             sizeof(TYPE), pe);                                                                    \
    }                                                                                              \
    void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, ptrdiff_t dst,   \
                                 ptrdiff_t sst, size_t nelems, int pe)                             \
    {                                                                                              \
        iget(ctx_of(__func__, ctx), __func__, dest, source, dst, sst, nelems, sizeof(TYPE), pe);   \
    }                                                                                              \
    void shmem_##NAME##_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst,         \
                             size_t nelems, int pe)                                                \
    {                                                                                              \
        iget(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, dst, sst, nelems,        \
             sizeof(TYPE), pe);                                                                    \
    }                                                                                              \
    void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,            \
                                       size_t nelems, uint64_t *sig_addr, uint64_t signal,         \
                                       int sig_op, int pe)                                         \
    {                                                                                              \
        put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), sig_addr, \
                   signal, sig_op, pe, false);                                                     \
    }                                                                                              \
    void shmem_##NAME##_put_signal(TYPE *dest, const TYPE *source, size_t nelems,                  \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)        \
    {                                                                                              \
        put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source,                    \
                   nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, false);                    \
    }                                                                                              \
    void shmem_ctx_##NAME##_put_signal_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,        \
                                           size_t nelems, uint64_t *sig_addr, uint64_t signal,     \
                                           int sig_op, int pe)                                     \
    {                                                                                              \
        put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems * sizeof(TYPE), sig_addr, \
                   signal, sig_op, pe, true);                                                      \
    }                                                                                              \
    void shmem_##NAME##_put_signal_nbi(TYPE *dest, const TYPE *source, size_t nelems,              \
                                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)    \
    {                                                                                              \
        put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source,                    \
                   nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, true);                     \
    }
SHMEM_RMA_TYPES(WEFT_SHMEM_RMA_TYPED)
#undef WEFT_SHMEM_RMA_TYPED

// ------------------------------------------------------------------ sized routines

#define WEFT_SHMEM_RMA_SIZED(SIZE)                                                                 \
    void shmem_ctx_put##SIZE(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,       \
                             int pe)                                                               \
    {                                                                                              \
        put(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), pe, false);         \
    }                                                                                              \
    void shmem_put##SIZE(void *dest, const void *source, size_t nelems, int pe)                    \
    {                                                                                              \
        put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems *(SIZE / 8), pe,   \
            false);                                                                                \
    }                                                                                              \
    void shmem_ctx_put##SIZE##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   int pe)                                                         \
    {                                                                                              \
        put(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), pe, true);          \
    }                                                                                              \
    void shmem_put##SIZE##_nbi(void *dest, const void *source, size_t nelems, int pe)              \
    {                                                                                              \
        put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems *(SIZE / 8), pe,   \
            true);                                                                                 \
    }                                                                                              \
    void shmem_ctx_get##SIZE(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,       \
                             int pe)                                                               \
    {                                                                                              \
        get(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), pe, false);         \
    }                                                                                              \
    void shmem_get##SIZE(void *dest, const void *source, size_t nelems, int pe)                    \
    {                                                                                              \
        get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems *(SIZE / 8), pe,   \
            false);                                                                                \
    }                                                                                              \
    void shmem_ctx_get##SIZE##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   int pe)                                                         \
    {                                                                                              \
        get(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), pe, true);          \
    }                                                                                              \
    void shmem_get##SIZE##_nbi(void *dest, const void *source, size_t nelems, int pe)              \
    {                                                                                              \
        get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems *(SIZE / 8), pe,   \
            true);                                                                                 \
    }                                                                                              \
    void shmem_ctx_iput##SIZE(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,      \
                              ptrdiff_t sst, size_t nelems, int pe)                                \
    {                                                                                              \
        iput(ctx_of(__func__, ctx), __func__, dest, source, dst, sst, nelems, SIZE / 8, pe);       \
    }                                                                                              \
    void shmem_iput##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,            \
                          size_t nelems, int pe)                                                   \
    {                                                                                              \
        iput(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, dst, sst, nelems,        \
             SIZE / 8, pe);                                                                        \
    }                                                                                              \
    void shmem_ctx_iget##SIZE(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,      \
                              ptrdiff_t sst, size_t nelems, int pe)                                \
    {                                                                                              \
        iget(ctx_of(__func__, ctx), __func__, dest, source, dst, sst, nelems, SIZE / 8, pe);       \
    }                                                                                              \
    void shmem_iget##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,            \
                          size_t nelems, int pe)                                                   \
    {                                                                                              \
        iget(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, dst, sst, nelems,        \
             SIZE / 8, pe);                                                                        \
    }                                                                                              \
    void shmem_ctx_put##SIZE##_signal(shmem_ctx_t ctx, void *dest, const void *source,             \
                                      size_t nelems, uint64_t *sig_addr, uint64_t signal,          \
                                      int sig_op, int pe)                                          \
    {                                                                                              \
        put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), sig_addr,    \
                   signal, sig_op, pe, false);                                                     \
    }                                                                                              \
    void shmem_put##SIZE##_signal(void *dest, const void *source, size_t nelems,                   \
                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)         \
    {                                                                                              \
        put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source,                    \
                   nelems *(SIZE / 8), sig_addr, signal, sig_op, pe, false);                       \
    }                                                                                              \
    void shmem_ctx_put##SIZE##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,         \
                                          size_t nelems, uint64_t *sig_addr, uint64_t signal,      \
                                          int sig_op, int pe)                                      \
    {                                                                                              \
        put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems *(SIZE / 8), sig_addr,    \
                   signal, sig_op, pe, true);                                                      \
    }                                                                                              \
    void shmem_put##SIZE##_signal_nbi(void *dest, const void *source, size_t nelems,               \
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)     \
    {                                                                                              \
        put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source,                    \
                   nelems *(SIZE / 8), sig_addr, signal, sig_op, pe, true);                        \
    }
SHMEM_RMA_SIZES(WEFT_SHMEM_RMA_SIZED)
#undef WEFT_SHMEM_RMA_SIZED

// ------------------------------------------------------------------ byte routines

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    put(ctx_of(__func__, ctx), __func__, dest, source, nelems, pe, false);
}
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, pe, false);
}
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    put(ctx_of(__func__, ctx), __func__, dest, source, nelems, pe, true);
}
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    put(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, pe, true);
}
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    get(ctx_of(__func__, ctx), __func__, dest, source, nelems, pe, false);
}
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, pe, false);
}
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    get(ctx_of(__func__, ctx), __func__, dest, source, nelems, pe, true);
}
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    get(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, pe, true);
}
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems, sig_addr, signal, sig_op, pe,
               false);
}
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe)
{
    put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, sig_addr,
               signal, sig_op, pe, false);
}
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    put_signal(ctx_of(__func__, ctx), __func__, dest, source, nelems, sig_addr, signal, sig_op, pe,
               true);
}
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe)
{
    put_signal(ctx_of(__func__, SHMEM_CTX_DEFAULT), __func__, dest, source, nelems, sig_addr,
               signal, sig_op, pe, true);
}

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    check_init("shmem_signal_fetch");
    poll_progress();  // programs poll it: peers' signals to the data segment need progress
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

}  // extern "C"
