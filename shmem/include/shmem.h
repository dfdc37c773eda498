/*
 * shmem.h: OpenSHMEM 1.5 over weft (docs/shmem.md).
 *
 * The typed routines come in families, one function per type of a table of
 * the specification; the tables are the SHMEM_*_TYPES macros below, and each
 * family is declared once over its table (the C ABI needs one symbol per type).
 */
#ifndef WEFT_SHMEM_H
#define WEFT_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ library constants */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "weft OpenSHMEM"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels (shmem_init_thread). */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparison operators (shmem_wait_until, shmem_test, shmem_signal_wait_until). */
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operators (shmem_put_signal). */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options (shmem_ctx_create). */
#define SHMEM_CTX_PRIVATE (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Memory hints (shmem_malloc_with_hints). */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Work arrays of the active-set collectives (deprecated forms). */
#define SHMEM_SYNC_VALUE (-1L)
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define SHMEM_SYNC_SIZE 128
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ------------------------------------------------------------------ handles */

/** A communication context: an ordering and completion domain (its own weft endpoint). */
typedef struct shmem_ctx_opaque *shmem_ctx_t;
/** The context of the routines without a ctx argument. */
extern shmem_ctx_t const SHMEM_CTX_DEFAULT;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ------------------------------------------------------------------ type tables */

/* Table 5: the standard RMA types, as X(TYPE, TYPENAME). */
#define SHMEM_RMA_TYPES(X)           \
    X(float, float)                  \
    X(double, double)                \
    X(long double, longdouble)       \
    X(char, char)                    \
    X(signed char, schar)            \
    X(short, short)                  \
    X(int, int)                      \
    X(long, long)                    \
    X(long long, longlong)           \
    X(unsigned char, uchar)          \
    X(unsigned short, ushort)        \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int8_t, int8)                  \
    X(int16_t, int16)                \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint8_t, uint8)                \
    X(uint16_t, uint16)              \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)              \
    X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* Table 6: the standard AMO types. */
#define SHMEM_AMO_STD_TYPES(X)       \
    X(int, int)                      \
    X(long, long)                    \
    X(long long, longlong)           \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)              \
    X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* Table 7: the extended AMO types (fetch, set, swap). */
#define SHMEM_AMO_EXT_TYPES(X) \
    X(float, float)            \
    X(double, double)          \
    SHMEM_AMO_STD_TYPES(X)

/* Table 8: the bitwise AMO types. */
#define SHMEM_AMO_BIT_TYPES(X)       \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)

/* Table 11: the point-to-point synchronization types. */
#define SHMEM_SYNC_TYPES(X)          \
    X(short, short)                  \
    X(int, int)                      \
    X(long, long)                    \
    X(long long, longlong)           \
    X(unsigned short, ushort)        \
    X(unsigned int, uint)            \
    X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) \
    X(int32_t, int32)                \
    X(int64_t, int64)                \
    X(uint32_t, uint32)              \
    X(uint64_t, uint64)              \
    X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* The sized RMA routines, as X(SIZE in bits). */
#define SHMEM_RMA_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* ------------------------------------------------------------------ setup, exit, query */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ------------------------------------------------------------------ symmetric memory */

void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void shmem_free(void *ptr);

/* ------------------------------------------------------------------ contexts */

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);

/* ------------------------------------------------------------------ remote memory access */

#define SHMEM_DECL_RMA_TYPED(TYPE, NAME)                                                         \
    void shmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems, int pe);              \
    void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, size_t nelems,  \
                                int pe);                                                         \
    void shmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe);          \
    void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,             \
                                    size_t nelems, int pe);                                      \
    void shmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems, int pe);              \
    void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, size_t nelems,  \
                                int pe);                                                         \
    void shmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe);          \
    void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,             \
                                    size_t nelems, int pe);                                      \
    void shmem_##NAME##_p(TYPE *dest, TYPE value, int pe);                                       \
    void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);                  \
    TYPE shmem_##NAME##_g(const TYPE *source, int pe);                                           \
    TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE *source, int pe);                      \
    void shmem_##NAME##_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst,       \
                             size_t nelems, int pe);                                             \
    void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                 ptrdiff_t sst, size_t nelems, int pe);                          \
    void shmem_##NAME##_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst,       \
                             size_t nelems, int pe);                                             \
    void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                 ptrdiff_t sst, size_t nelems, int pe);                          \
    void shmem_##NAME##_put_signal(TYPE *dest, const TYPE *source, size_t nelems,                \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);     \
    void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,          \
                                       size_t nelems, uint64_t *sig_addr, uint64_t signal,       \
                                       int sig_op, int pe);                                      \
    void shmem_##NAME##_put_signal_nbi(TYPE *dest, const TYPE *source, size_t nelems,            \
                                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_##NAME##_put_signal_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,      \
                                           size_t nelems, uint64_t *sig_addr, uint64_t signal,   \
                                           int sig_op, int pe);
SHMEM_RMA_TYPES(SHMEM_DECL_RMA_TYPED)
#undef SHMEM_DECL_RMA_TYPED

#define SHMEM_DECL_RMA_SIZED(SIZE)                                                                 \
    void shmem_put##SIZE(void *dest, const void *source, size_t nelems, int pe);                   \
    void shmem_ctx_put##SIZE(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,       \
                             int pe);                                                              \
    void shmem_put##SIZE##_nbi(void *dest, const void *source, size_t nelems, int pe);             \
    void shmem_ctx_put##SIZE##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   int pe);                                                        \
    void shmem_get##SIZE(void *dest, const void *source, size_t nelems, int pe);                   \
    void shmem_ctx_get##SIZE(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,       \
                             int pe);                                                              \
    void shmem_get##SIZE##_nbi(void *dest, const void *source, size_t nelems, int pe);             \
    void shmem_ctx_get##SIZE##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   int pe);                                                        \
    void shmem_iput##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,            \
                          size_t nelems, int pe);                                                  \
    void shmem_ctx_iput##SIZE(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,      \
                              ptrdiff_t sst, size_t nelems, int pe);                               \
    void shmem_iget##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,            \
                          size_t nelems, int pe);                                                  \
    void shmem_ctx_iget##SIZE(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,      \
                              ptrdiff_t sst, size_t nelems, int pe);                               \
    void shmem_put##SIZE##_signal(void *dest, const void *source, size_t nelems,                   \
                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);        \
    void shmem_ctx_put##SIZE##_signal(shmem_ctx_t ctx, void *dest, const void *source,             \
                                      size_t nelems, uint64_t *sig_addr, uint64_t signal,          \
                                      int sig_op, int pe);                                         \
    void shmem_put##SIZE##_signal_nbi(void *dest, const void *source, size_t nelems,               \
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);    \
    void shmem_ctx_put##SIZE##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,         \
                                          size_t nelems, uint64_t *sig_addr, uint64_t signal,      \
                                          int sig_op, int pe);
SHMEM_RMA_SIZES(SHMEM_DECL_RMA_SIZED)
#undef SHMEM_DECL_RMA_SIZED

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);

/* ------------------------------------------------------------------ atomic memory operations */

#define SHMEM_DECL_AMO_EXT(TYPE, NAME)                                                            \
    TYPE shmem_##NAME##_atomic_fetch(const TYPE *source, int pe);                                 \
    TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source, int pe);            \
    void shmem_##NAME##_atomic_fetch_nbi(TYPE *fetch, const TYPE *source, int pe);                \
    void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE *fetch, const TYPE *source,    \
                                             int pe);                                             \
    void shmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe);                               \
    void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);          \
    TYPE shmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe);                              \
    TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);         \
    void shmem_##NAME##_atomic_swap_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe);             \
    void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest, TYPE value, \
                                            int pe);
SHMEM_AMO_EXT_TYPES(SHMEM_DECL_AMO_EXT)
#undef SHMEM_DECL_AMO_EXT

#define SHMEM_DECL_AMO_STD(TYPE, NAME)                                                          \
    TYPE shmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, int pe);         \
    TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest, TYPE cond,         \
                                                TYPE value, int pe);                            \
    void shmem_##NAME##_atomic_compare_swap_nbi(TYPE *fetch, TYPE *dest, TYPE cond, TYPE value, \
                                                int pe);                                        \
    void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,   \
                                                    TYPE cond, TYPE value, int pe);             \
    TYPE shmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe);                                   \
    TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE *dest, int pe);              \
    void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE *fetch, TYPE *dest, int pe);                  \
    void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,      \
                                                 int pe);                                       \
    void shmem_##NAME##_atomic_inc(TYPE *dest, int pe);                                         \
    void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE *dest, int pe);                    \
    TYPE shmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe);                       \
    TYPE shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);  \
    void shmem_##NAME##_atomic_fetch_add_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe);      \
    void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,      \
                                                 TYPE value, int pe);                           \
    void shmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe);                             \
    void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);
SHMEM_AMO_STD_TYPES(SHMEM_DECL_AMO_STD)
#undef SHMEM_DECL_AMO_STD

#define SHMEM_DECL_AMO_BIT_OP(TYPE, NAME, OP)                                                   \
    TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE *dest, TYPE value, int pe);                      \
    TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe); \
    void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe);   \
    void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, TYPE *fetch, TYPE *dest,   \
                                                    TYPE value, int pe);                        \
    void shmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe);                            \
    void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe);
#define SHMEM_DECL_AMO_BIT(TYPE, NAME)     \
    SHMEM_DECL_AMO_BIT_OP(TYPE, NAME, and) \
    SHMEM_DECL_AMO_BIT_OP(TYPE, NAME, or)  \
    SHMEM_DECL_AMO_BIT_OP(TYPE, NAME, xor)
SHMEM_AMO_BIT_TYPES(SHMEM_DECL_AMO_BIT)
#undef SHMEM_DECL_AMO_BIT
#undef SHMEM_DECL_AMO_BIT_OP

/* ------------------------------------------------------------------ point-to-point synchronization
 */

#define SHMEM_DECL_SYNC(TYPE, NAME)                                                               \
    void shmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value);                          \
    void shmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems, const int *status, int cmp,    \
                                       TYPE cmp_value);                                           \
    size_t shmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems, const int *status, int cmp,  \
                                         TYPE cmp_value);                                         \
    size_t shmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems, size_t *indices,            \
                                          const int *status, int cmp, TYPE cmp_value);            \
    void shmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems, const int *status,      \
                                              int cmp, TYPE *cmp_values);                         \
    size_t shmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, const int *status,    \
                                                int cmp, TYPE *cmp_values);                       \
    size_t shmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, size_t *indices,     \
                                                 const int *status, int cmp, TYPE *cmp_values);   \
    int shmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value);                                 \
    int shmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status, int cmp,           \
                                TYPE cmp_value);                                                  \
    size_t shmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, int cmp,        \
                                   TYPE cmp_value);                                               \
    size_t shmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,                  \
                                    const int *status, int cmp, TYPE cmp_value);                  \
    int shmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp,    \
                                       TYPE *cmp_values);                                         \
    size_t shmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, \
                                          TYPE *cmp_values);                                      \
    size_t shmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems, size_t *indices,           \
                                           const int *status, int cmp, TYPE *cmp_values);
SHMEM_SYNC_TYPES(SHMEM_DECL_SYNC)
#undef SHMEM_DECL_SYNC

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ------------------------------------------------------------------ memory ordering, barriers */

void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_barrier_all(void);
void shmem_sync_all(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SHMEM_H */
