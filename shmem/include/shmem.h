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
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1024 /* small reductions push into pWrk */
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ------------------------------------------------------------------ handles */

/** A team: an ordered set of PEs (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, splits of them). */
typedef struct shmem_team_opaque *shmem_team_t;
extern shmem_team_t const SHMEM_TEAM_WORLD;
extern shmem_team_t const SHMEM_TEAM_SHARED;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

/** Team configuration (shmem_team_split_*). */
typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

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

/* Table 10: reduction types; and/or/xor ... */
#define SHMEM_REDUCE_BIT_TYPES(X)    \
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
    X(size_t, size)
/* ... max/min ... */
#define SHMEM_REDUCE_CMP_TYPES(X) \
    X(char, char)                 \
    X(signed char, schar)         \
    X(short, short)               \
    X(int, int)                   \
    X(long, long)                 \
    X(long long, longlong)        \
    X(ptrdiff_t, ptrdiff)         \
    SHMEM_REDUCE_BIT_TYPES(X)     \
    X(float, float)               \
    X(double, double)             \
    X(long double, longdouble)
/* ... sum/prod (the max/min types and the complex ones). */
#define SHMEM_REDUCE_ARITH_TYPES(X) \
    SHMEM_REDUCE_CMP_TYPES(X)       \
    X(double _Complex, complexd)    \
    X(float _Complex, complexf)

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
/** Profiling control (1.5): level 0 off, 1 on (the default), 2 on with
 *  profile buffers flushed; weft keeps no profile, so any level is accepted. */
void shmem_pcontrol(const int level, ...);

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
int shmem_team_sync(shmem_team_t team);

/* ------------------------------------------------------------------ teams */

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ------------------------------------------------------------------ collectives on teams */

#define SHMEM_DECL_COLL_TYPED(TYPE, NAME)                                                          \
    int shmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems, \
                                 int PE_root);                                                     \
    int shmem_##NAME##_collect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems);  \
    int shmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems); \
    int shmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems); \
    int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                 ptrdiff_t sst, size_t nelems);
SHMEM_RMA_TYPES(SHMEM_DECL_COLL_TYPED)
#undef SHMEM_DECL_COLL_TYPED
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

#define SHMEM_DECL_REDUCE(TYPE, NAME, OP)                                               \
    int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, \
                                     size_t nreduce);
#define SHMEM_DECL_REDUCE_BIT(TYPE, NAME) \
    SHMEM_DECL_REDUCE(TYPE, NAME, and)    \
    SHMEM_DECL_REDUCE(TYPE, NAME, or)     \
    SHMEM_DECL_REDUCE(TYPE, NAME, xor)
#define SHMEM_DECL_REDUCE_CMP(TYPE, NAME) \
    SHMEM_DECL_REDUCE(TYPE, NAME, max)    \
    SHMEM_DECL_REDUCE(TYPE, NAME, min)
#define SHMEM_DECL_REDUCE_ARITH(TYPE, NAME) \
    SHMEM_DECL_REDUCE(TYPE, NAME, sum)      \
    SHMEM_DECL_REDUCE(TYPE, NAME, prod)
SHMEM_REDUCE_BIT_TYPES(SHMEM_DECL_REDUCE_BIT)
SHMEM_REDUCE_CMP_TYPES(SHMEM_DECL_REDUCE_CMP)
SHMEM_REDUCE_ARITH_TYPES(SHMEM_DECL_REDUCE_ARITH)
#undef SHMEM_DECL_REDUCE_ARITH
#undef SHMEM_DECL_REDUCE_CMP
#undef SHMEM_DECL_REDUCE_BIT
#undef SHMEM_DECL_REDUCE

/* ------------------------------------------------------------------ distributed locks */

void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ------------------------------------------------------------------ deprecated routines */
/* Still used by existing programs and test suites; each maps onto a current routine. */

void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);
void shmem_wait(long *ivar, long cmp_value);
void shmem_wait_until(long *ivar, int cmp, long cmp_value);
#define SHMEM_DECL_OLD_WAIT(TYPE, NAME) void shmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value);
SHMEM_SYNC_TYPES(SHMEM_DECL_OLD_WAIT)
#undef SHMEM_DECL_OLD_WAIT

/* Active-set collectives: PEs PE_start + i * 2^logPE_stride, i < PE_size. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define SHMEM_DECL_OLD_COLL(SIZE)                                                            \
    void shmem_broadcast##SIZE(void *dest, const void *source, size_t nelems, int PE_root,   \
                               int PE_start, int logPE_stride, int PE_size, long *pSync);    \
    void shmem_collect##SIZE(void *dest, const void *source, size_t nelems, int PE_start,    \
                             int logPE_stride, int PE_size, long *pSync);                    \
    void shmem_fcollect##SIZE(void *dest, const void *source, size_t nelems, int PE_start,   \
                              int logPE_stride, int PE_size, long *pSync);                   \
    void shmem_alltoall##SIZE(void *dest, const void *source, size_t nelems, int PE_start,   \
                              int logPE_stride, int PE_size, long *pSync);                   \
    void shmem_alltoalls##SIZE(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                               size_t nelems, int PE_start, int logPE_stride, int PE_size,   \
                               long *pSync);
SHMEM_DECL_OLD_COLL(32)
SHMEM_DECL_OLD_COLL(64)
#undef SHMEM_DECL_OLD_COLL

#define SHMEM_OLD_REDUCE_BIT_TYPES(X) \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_OLD_REDUCE_CMP_TYPES(X) \
    SHMEM_OLD_REDUCE_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#define SHMEM_OLD_REDUCE_ARITH_TYPES(X) \
    SHMEM_OLD_REDUCE_CMP_TYPES(X) X(double _Complex, complexd) X(float _Complex, complexf)
#define SHMEM_DECL_OLD_REDUCE(TYPE, NAME, OP)                                                    \
    void shmem_##NAME##_##OP##_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, \
                                      int logPE_stride, int PE_size, TYPE *pWrk, long *pSync);
#define SHMEM_DECL_OLD_REDUCE_BIT(TYPE, NAME) \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, and)    \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, or)     \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, xor)
#define SHMEM_DECL_OLD_REDUCE_CMP(TYPE, NAME) \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, max)    \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, min)
#define SHMEM_DECL_OLD_REDUCE_ARITH(TYPE, NAME) \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, sum)      \
    SHMEM_DECL_OLD_REDUCE(TYPE, NAME, prod)
SHMEM_OLD_REDUCE_BIT_TYPES(SHMEM_DECL_OLD_REDUCE_BIT)
SHMEM_OLD_REDUCE_CMP_TYPES(SHMEM_DECL_OLD_REDUCE_CMP)
SHMEM_OLD_REDUCE_ARITH_TYPES(SHMEM_DECL_OLD_REDUCE_ARITH)
#undef SHMEM_DECL_OLD_REDUCE_ARITH
#undef SHMEM_DECL_OLD_REDUCE_CMP
#undef SHMEM_DECL_OLD_REDUCE_BIT
#undef SHMEM_DECL_OLD_REDUCE

/* Deprecated atomics (1.3 names): shmem_int_finc, shmem_long_swap, ... */
#define SHMEM_DECL_OLD_AMO(TYPE, NAME)                       \
    TYPE shmem_##NAME##_fetch(const TYPE *source, int pe);   \
    void shmem_##NAME##_set(TYPE *dest, TYPE value, int pe); \
    TYPE shmem_##NAME##_swap(TYPE *dest, TYPE value, int pe);
#define SHMEM_DECL_OLD_AMO_STD(TYPE, NAME)                                \
    TYPE shmem_##NAME##_cswap(TYPE *dest, TYPE cond, TYPE value, int pe); \
    TYPE shmem_##NAME##_finc(TYPE *dest, int pe);                         \
    void shmem_##NAME##_inc(TYPE *dest, int pe);                          \
    TYPE shmem_##NAME##_fadd(TYPE *dest, TYPE value, int pe);             \
    void shmem_##NAME##_add(TYPE *dest, TYPE value, int pe);
#define SHMEM_OLD_AMO_STD_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_OLD_AMO_EXT_TYPES(X) SHMEM_OLD_AMO_STD_TYPES(X) X(float, float) X(double, double)
SHMEM_OLD_AMO_EXT_TYPES(SHMEM_DECL_OLD_AMO)
SHMEM_OLD_AMO_STD_TYPES(SHMEM_DECL_OLD_AMO_STD)
#undef SHMEM_DECL_OLD_AMO
#undef SHMEM_DECL_OLD_AMO_STD

/* ------------------------------------------------------------------ C11 type-generic interfaces */

/* The type lists of the generic interfaces (C11 selections, C++ overloads): each C type once (the
 * fixed-width names are typedefs of these), as X(TYPE, TYPENAME, OP). */
#define SHMEM_GEN_RMA_LIST(X, OP)  \
    X(float, float, OP)            \
    X(double, double, OP)          \
    X(long double, longdouble, OP) \
    X(char, char, OP)              \
    X(signed char, schar, OP)      \
    X(short, short, OP)            \
    X(int, int, OP)                \
    X(long, long, OP)              \
    X(long long, longlong, OP)     \
    X(unsigned char, uchar, OP)    \
    X(unsigned short, ushort, OP)  \
    X(unsigned int, uint, OP)      \
    X(unsigned long, ulong, OP)    \
    X(unsigned long long, ulonglong, OP)
#define SHMEM_GEN_AMO_STD_LIST(X, OP) \
    X(int, int, OP)                   \
    X(long, long, OP)                 \
    X(long long, longlong, OP)        \
    X(unsigned int, uint, OP)         \
    X(unsigned long, ulong, OP)       \
    X(unsigned long long, ulonglong, OP)
#define SHMEM_GEN_AMO_EXT_LIST(X, OP) \
    X(float, float, OP)               \
    X(double, double, OP)             \
    SHMEM_GEN_AMO_STD_LIST(X, OP)
#define SHMEM_GEN_AMO_BIT_LIST(X, OP)    \
    X(unsigned int, uint, OP)            \
    X(unsigned long, ulong, OP)          \
    X(unsigned long long, ulonglong, OP) \
    X(int, int32, OP)                    \
    X(long, int64, OP)
#define SHMEM_GEN_SYNC_LIST(X, OP) \
    X(short, short, OP)            \
    X(int, int, OP)                \
    X(long, long, OP)              \
    X(long long, longlong, OP)     \
    X(unsigned short, ushort, OP)  \
    X(unsigned int, uint, OP)      \
    X(unsigned long, ulong, OP)    \
    X(unsigned long long, ulonglong, OP)
#define SHMEM_GEN_REDUCE_BIT_LIST(X, OP) \
    X(unsigned char, uchar, OP)          \
    X(unsigned short, ushort, OP)        \
    X(unsigned int, uint, OP)            \
    X(unsigned long, ulong, OP)          \
    X(unsigned long long, ulonglong, OP) \
    X(signed char, int8, OP)             \
    X(short, int16, OP)                  \
    X(int, int32, OP)                    \
    X(long, int64, OP)
#define SHMEM_GEN_REDUCE_CMP_LIST(X, OP) \
    X(char, char, OP)                    \
    X(signed char, schar, OP)            \
    X(short, short, OP)                  \
    X(int, int, OP)                      \
    X(long, long, OP)                    \
    X(long long, longlong, OP)           \
    X(unsigned char, uchar, OP)          \
    X(unsigned short, ushort, OP)        \
    X(unsigned int, uint, OP)            \
    X(unsigned long, ulong, OP)          \
    X(unsigned long long, ulonglong, OP) \
    X(float, float, OP)                  \
    X(double, double, OP)                \
    X(long double, longdouble, OP)
#define SHMEM_GEN_REDUCE_ARITH_LIST(X, OP) \
    SHMEM_GEN_REDUCE_CMP_LIST(X, OP)       \
    X(double _Complex, complexd, OP)       \
    X(float _Complex, complexf, OP)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* One association per type; the selection starts with one that never
 * matches, so every listed association can carry its leading comma. */
struct shmem_generic_never_ {
    int unused_;
};
#define SHMEM_GEN_E(TYPE, NAME, OP) , TYPE : shmem_##NAME##_##OP
#define SHMEM_GEN_EC(TYPE, NAME, OP) , TYPE : shmem_ctx_##NAME##_##OP
#define SHMEM_GEN(LIST, OP, X) _Generic((X), struct shmem_generic_never_ : 0 LIST(SHMEM_GEN_E, OP))
#define SHMEM_GEN_CTX(LIST, OP, X) \
    _Generic((X), struct shmem_generic_never_ : 0 LIST(SHMEM_GEN_EC, OP))

/* The routines with an optional leading context are told apart by their
 * number of arguments. */
#define SHMEM_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, N, ...) N
#define SHMEM_NARGS(...) SHMEM_NARGS_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define SHMEM_PASTE_(a, b) a##b
#define SHMEM_PASTE(a, b) SHMEM_PASTE_(a, b)
#define SHMEM_BY_NARGS(name, ...) SHMEM_PASTE(name, SHMEM_NARGS(__VA_ARGS__))(__VA_ARGS__)

/* RMA */
#define shmem_put(...) SHMEM_BY_NARGS(shmem_put_g, __VA_ARGS__)
#define shmem_put_g4(d, s, n, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, put, *(d))(d, s, n, pe)
#define shmem_put_g5(c, d, s, n, pe) SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, put, *(d))(c, d, s, n, pe)
#define shmem_put_nbi(...) SHMEM_BY_NARGS(shmem_put_nbi_g, __VA_ARGS__)
#define shmem_put_nbi_g4(d, s, n, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, put_nbi, *(d))(d, s, n, pe)
#define shmem_put_nbi_g5(c, d, s, n, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, put_nbi, *(d))(c, d, s, n, pe)
#define shmem_get(...) SHMEM_BY_NARGS(shmem_get_g, __VA_ARGS__)
#define shmem_get_g4(d, s, n, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, get, *(d))(d, s, n, pe)
#define shmem_get_g5(c, d, s, n, pe) SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, get, *(d))(c, d, s, n, pe)
#define shmem_get_nbi(...) SHMEM_BY_NARGS(shmem_get_nbi_g, __VA_ARGS__)
#define shmem_get_nbi_g4(d, s, n, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, get_nbi, *(d))(d, s, n, pe)
#define shmem_get_nbi_g5(c, d, s, n, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, get_nbi, *(d))(c, d, s, n, pe)
#define shmem_p(...) SHMEM_BY_NARGS(shmem_p_g, __VA_ARGS__)
#define shmem_p_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, p, *(d))(d, v, pe)
#define shmem_p_g4(c, d, v, pe) SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, p, *(d))(c, d, v, pe)
#define shmem_g(...) SHMEM_BY_NARGS(shmem_g_g, __VA_ARGS__)
#define shmem_g_g2(s, pe) SHMEM_GEN(SHMEM_GEN_RMA_LIST, g, *(s))(s, pe)
#define shmem_g_g3(c, s, pe) SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, g, *(s))(c, s, pe)
#define shmem_iput(...) SHMEM_BY_NARGS(shmem_iput_g, __VA_ARGS__)
#define shmem_iput_g6(d, s, dst, sst, n, pe) \
    SHMEM_GEN(SHMEM_GEN_RMA_LIST, iput, *(d))(d, s, dst, sst, n, pe)
#define shmem_iput_g7(c, d, s, dst, sst, n, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, iput, *(d))(c, d, s, dst, sst, n, pe)
#define shmem_iget(...) SHMEM_BY_NARGS(shmem_iget_g, __VA_ARGS__)
#define shmem_iget_g6(d, s, dst, sst, n, pe) \
    SHMEM_GEN(SHMEM_GEN_RMA_LIST, iget, *(d))(d, s, dst, sst, n, pe)
#define shmem_iget_g7(c, d, s, dst, sst, n, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, iget, *(d))(c, d, s, dst, sst, n, pe)
#define shmem_put_signal(...) SHMEM_BY_NARGS(shmem_put_signal_g, __VA_ARGS__)
#define shmem_put_signal_g7(d, s, n, sa, sv, so, pe) \
    SHMEM_GEN(SHMEM_GEN_RMA_LIST, put_signal, *(d))(d, s, n, sa, sv, so, pe)
#define shmem_put_signal_g8(c, d, s, n, sa, sv, so, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, put_signal, *(d))(c, d, s, n, sa, sv, so, pe)
#define shmem_put_signal_nbi(...) SHMEM_BY_NARGS(shmem_put_signal_nbi_g, __VA_ARGS__)
#define shmem_put_signal_nbi_g7(d, s, n, sa, sv, so, pe) \
    SHMEM_GEN(SHMEM_GEN_RMA_LIST, put_signal_nbi, *(d))(d, s, n, sa, sv, so, pe)
#define shmem_put_signal_nbi_g8(c, d, s, n, sa, sv, so, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_RMA_LIST, put_signal_nbi, *(d))(c, d, s, n, sa, sv, so, pe)

/* AMO */
#define shmem_atomic_fetch(...) SHMEM_BY_NARGS(shmem_atomic_fetch_g, __VA_ARGS__)
#define shmem_atomic_fetch_g2(s, pe) SHMEM_GEN(SHMEM_GEN_AMO_EXT_LIST, atomic_fetch, *(s))(s, pe)
#define shmem_atomic_fetch_g3(c, s, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_EXT_LIST, atomic_fetch, *(s))(c, s, pe)
#define shmem_atomic_set(...) SHMEM_BY_NARGS(shmem_atomic_set_g, __VA_ARGS__)
#define shmem_atomic_set_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_AMO_EXT_LIST, atomic_set, *(d))(d, v, pe)
#define shmem_atomic_set_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_EXT_LIST, atomic_set, *(d))(c, d, v, pe)
#define shmem_atomic_swap(...) SHMEM_BY_NARGS(shmem_atomic_swap_g, __VA_ARGS__)
#define shmem_atomic_swap_g3(d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_EXT_LIST, atomic_swap, *(d))(d, v, pe)
#define shmem_atomic_swap_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_EXT_LIST, atomic_swap, *(d))(c, d, v, pe)
#define shmem_atomic_compare_swap(...) SHMEM_BY_NARGS(shmem_atomic_compare_swap_g, __VA_ARGS__)
#define shmem_atomic_compare_swap_g4(d, k, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_compare_swap, *(d))(d, k, v, pe)
#define shmem_atomic_compare_swap_g5(c, d, k, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_compare_swap, *(d))(c, d, k, v, pe)
#define shmem_atomic_fetch_inc(...) SHMEM_BY_NARGS(shmem_atomic_fetch_inc_g, __VA_ARGS__)
#define shmem_atomic_fetch_inc_g2(d, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_inc, *(d))(d, pe)
#define shmem_atomic_fetch_inc_g3(c, d, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_inc, *(d))(c, d, pe)
#define shmem_atomic_inc(...) SHMEM_BY_NARGS(shmem_atomic_inc_g, __VA_ARGS__)
#define shmem_atomic_inc_g2(d, pe) SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_inc, *(d))(d, pe)
#define shmem_atomic_inc_g3(c, d, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_inc, *(d))(c, d, pe)
#define shmem_atomic_fetch_add(...) SHMEM_BY_NARGS(shmem_atomic_fetch_add_g, __VA_ARGS__)
#define shmem_atomic_fetch_add_g3(d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_add, *(d))(d, v, pe)
#define shmem_atomic_fetch_add_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_add, *(d))(c, d, v, pe)
#define shmem_atomic_add(...) SHMEM_BY_NARGS(shmem_atomic_add_g, __VA_ARGS__)
#define shmem_atomic_add_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_add, *(d))(d, v, pe)
#define shmem_atomic_add_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_add, *(d))(c, d, v, pe)
#define shmem_atomic_fetch_and(...) SHMEM_BY_NARGS(shmem_atomic_fetch_and_g, __VA_ARGS__)
#define shmem_atomic_fetch_and_g3(d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_and, *(d))(d, v, pe)
#define shmem_atomic_fetch_and_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_and, *(d))(c, d, v, pe)
#define shmem_atomic_and(...) SHMEM_BY_NARGS(shmem_atomic_and_g, __VA_ARGS__)
#define shmem_atomic_and_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_and, *(d))(d, v, pe)
#define shmem_atomic_and_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_and, *(d))(c, d, v, pe)
#define shmem_atomic_fetch_or(...) SHMEM_BY_NARGS(shmem_atomic_fetch_or_g, __VA_ARGS__)
#define shmem_atomic_fetch_or_g3(d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_or, *(d))(d, v, pe)
#define shmem_atomic_fetch_or_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_or, *(d))(c, d, v, pe)
#define shmem_atomic_or(...) SHMEM_BY_NARGS(shmem_atomic_or_g, __VA_ARGS__)
#define shmem_atomic_or_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_or, *(d))(d, v, pe)
#define shmem_atomic_or_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_or, *(d))(c, d, v, pe)
#define shmem_atomic_fetch_xor(...) SHMEM_BY_NARGS(shmem_atomic_fetch_xor_g, __VA_ARGS__)
#define shmem_atomic_fetch_xor_g3(d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_xor, *(d))(d, v, pe)
#define shmem_atomic_fetch_xor_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_xor, *(d))(c, d, v, pe)
#define shmem_atomic_xor(...) SHMEM_BY_NARGS(shmem_atomic_xor_g, __VA_ARGS__)
#define shmem_atomic_xor_g3(d, v, pe) SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_xor, *(d))(d, v, pe)
#define shmem_atomic_xor_g4(c, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_xor, *(d))(c, d, v, pe)
/* The non-blocking fetching AMOs: the fetch pointer comes first. */
#define shmem_atomic_fetch_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_nbi_g3(f, s, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_EXT_LIST, atomic_fetch_nbi, *(f))(f, s, pe)
#define shmem_atomic_fetch_nbi_g4(c, f, s, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_EXT_LIST, atomic_fetch_nbi, *(f))(c, f, s, pe)
#define shmem_atomic_swap_nbi(...) SHMEM_BY_NARGS(shmem_atomic_swap_nbi_g, __VA_ARGS__)
#define shmem_atomic_swap_nbi_g4(f, d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_EXT_LIST, atomic_swap_nbi, *(f))(f, d, v, pe)
#define shmem_atomic_swap_nbi_g5(c, f, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_EXT_LIST, atomic_swap_nbi, *(f))(c, f, d, v, pe)
#define shmem_atomic_compare_swap_nbi(...) \
    SHMEM_BY_NARGS(shmem_atomic_compare_swap_nbi_g, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi_g5(f, d, k, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_compare_swap_nbi, *(f))(f, d, k, v, pe)
#define shmem_atomic_compare_swap_nbi_g6(c, f, d, k, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_compare_swap_nbi, *(f))(c, f, d, k, v, pe)
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_inc_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi_g3(f, d, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_inc_nbi, *(f))(f, d, pe)
#define shmem_atomic_fetch_inc_nbi_g4(c, f, d, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_inc_nbi, *(f))(c, f, d, pe)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_add_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi_g4(f, d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_add_nbi, *(f))(f, d, v, pe)
#define shmem_atomic_fetch_add_nbi_g5(c, f, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_STD_LIST, atomic_fetch_add_nbi, *(f))(c, f, d, v, pe)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_and_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi_g4(f, d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_and_nbi, *(f))(f, d, v, pe)
#define shmem_atomic_fetch_and_nbi_g5(c, f, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_and_nbi, *(f))(c, f, d, v, pe)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_or_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi_g4(f, d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_or_nbi, *(f))(f, d, v, pe)
#define shmem_atomic_fetch_or_nbi_g5(c, f, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_or_nbi, *(f))(c, f, d, v, pe)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_BY_NARGS(shmem_atomic_fetch_xor_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi_g4(f, d, v, pe) \
    SHMEM_GEN(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_xor_nbi, *(f))(f, d, v, pe)
#define shmem_atomic_fetch_xor_nbi_g5(c, f, d, v, pe) \
    SHMEM_GEN_CTX(SHMEM_GEN_AMO_BIT_LIST, atomic_fetch_xor_nbi, *(f))(c, f, d, v, pe)

/* Collectives (the team comes first; the type is the dest's). */
#define shmem_broadcast(t, d, s, n, r) SHMEM_GEN(SHMEM_GEN_RMA_LIST, broadcast, *(d))(t, d, s, n, r)
#define shmem_collect(t, d, s, n) SHMEM_GEN(SHMEM_GEN_RMA_LIST, collect, *(d))(t, d, s, n)
#define shmem_fcollect(t, d, s, n) SHMEM_GEN(SHMEM_GEN_RMA_LIST, fcollect, *(d))(t, d, s, n)
#define shmem_alltoall(t, d, s, n) SHMEM_GEN(SHMEM_GEN_RMA_LIST, alltoall, *(d))(t, d, s, n)
#define shmem_alltoalls(t, d, s, dst, sst, n) \
    SHMEM_GEN(SHMEM_GEN_RMA_LIST, alltoalls, *(d))(t, d, s, dst, sst, n)
#define shmem_and_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_BIT_LIST, and_reduce, *(d))(t, d, s, n)
#define shmem_or_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_BIT_LIST, or_reduce, *(d))(t, d, s, n)
#define shmem_xor_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_BIT_LIST, xor_reduce, *(d))(t, d, s, n)
#define shmem_max_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_CMP_LIST, max_reduce, *(d))(t, d, s, n)
#define shmem_min_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_CMP_LIST, min_reduce, *(d))(t, d, s, n)
#define shmem_sum_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_ARITH_LIST, sum_reduce, *(d))(t, d, s, n)
#define shmem_prod_reduce(t, d, s, n) \
    SHMEM_GEN(SHMEM_GEN_REDUCE_ARITH_LIST, prod_reduce, *(d))(t, d, s, n)

/* shmem_sync(team) is shmem_team_sync; with four arguments, the active-set form. */
#define shmem_sync(...) SHMEM_BY_NARGS(shmem_sync_g, __VA_ARGS__)
#define shmem_sync_g1(t) shmem_team_sync(t)
#define shmem_sync_g4(s, l, n, p) (shmem_sync)(s, l, n, p)

/* Point-to-point synchronization (the type is the ivars'). */
#define shmem_wait_until(v, c, x) SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until, *(v))(v, c, x)
#define shmem_wait_until_all(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_all, *(v))(v, n, st, c, x)
#define shmem_wait_until_any(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_any, *(v))(v, n, st, c, x)
#define shmem_wait_until_some(v, n, ix, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_some, *(v))(v, n, ix, st, c, x)
#define shmem_wait_until_all_vector(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_all_vector, *(v))(v, n, st, c, x)
#define shmem_wait_until_any_vector(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_any_vector, *(v))(v, n, st, c, x)
#define shmem_wait_until_some_vector(v, n, ix, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, wait_until_some_vector, *(v))(v, n, ix, st, c, x)
#define shmem_test(v, c, x) SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test, *(v))(v, c, x)
#define shmem_test_all(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_all, *(v))(v, n, st, c, x)
#define shmem_test_any(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_any, *(v))(v, n, st, c, x)
#define shmem_test_some(v, n, ix, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_some, *(v))(v, n, ix, st, c, x)
#define shmem_test_all_vector(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_all_vector, *(v))(v, n, st, c, x)
#define shmem_test_any_vector(v, n, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_any_vector, *(v))(v, n, st, c, x)
#define shmem_test_some_vector(v, n, ix, st, c, x) \
    SHMEM_GEN(SHMEM_GEN_SYNC_LIST, test_some_vector, *(v))(v, n, ix, st, c, x)

/* Deprecated generic atomics (the 1.3 C11 names): the standard generic
 * routines under their old names, over the same types. */
#define shmem_fetch(s, pe) shmem_atomic_fetch_g2(s, pe)
#define shmem_set(d, v, pe) shmem_atomic_set_g3(d, v, pe)
#define shmem_swap(d, v, pe) shmem_atomic_swap_g3(d, v, pe)
#define shmem_cswap(d, k, v, pe) shmem_atomic_compare_swap_g4(d, k, v, pe)
#define shmem_finc(d, pe) shmem_atomic_fetch_inc_g2(d, pe)
#define shmem_inc(d, pe) shmem_atomic_inc_g2(d, pe)
#define shmem_fadd(d, v, pe) shmem_atomic_fetch_add_g3(d, v, pe)
#define shmem_add(d, v, pe) shmem_atomic_add_g3(d, v, pe)

#endif /* C11 */

#ifdef __cplusplus
}

/* ------------------------------------------------------------------ C++ generic interfaces */

/* In C++, the generic names are overloads (as Sandia OpenSHMEM's shmem.h
 * has them): one function template per type and name, chosen by the type
 * of the first pointer argument; the other arguments go to the typed
 * routine as they are. */
/* SHMEM_CXX_AS: the generic name GENERIC for the typed routine
 * shmem_TYPENAME_NAME (they differ only for the 1.3 names: shmem_add is
 * shmem_TYPE_atomic_add). */
#define SHMEM_CXX_AS(GENERIC, NAME, TYPENAME, T, CONST) \
    template <class... A>                               \
    inline auto shmem_##GENERIC(CONST T *p, A... a)     \
    {                                                   \
        return shmem_##TYPENAME##_##NAME(p, a...);      \
    }
#define SHMEM_CXX_1(NAME, TYPENAME, T, CONST) SHMEM_CXX_AS(NAME, NAME, TYPENAME, T, CONST)
#define SHMEM_CXX_C(NAME, TYPENAME, T, CONST)                   \
    template <class... A>                                       \
    inline auto shmem_##NAME(shmem_ctx_t c, CONST T *p, A... a) \
    {                                                           \
        return shmem_ctx_##TYPENAME##_##NAME(c, p, a...);       \
    }
#define SHMEM_CXX_T(NAME, TYPENAME, T)                    \
    template <class... A>                                 \
    inline int shmem_##NAME(shmem_team_t t, T *d, A... a) \
    {                                                     \
        return shmem_##TYPENAME##_##NAME(t, d, a...);     \
    }
#define SHMEM_CXX_BOTH(NAME, TYPENAME, T, CONST) \
    SHMEM_CXX_1(NAME, TYPENAME, T, CONST) SHMEM_CXX_C(NAME, TYPENAME, T, CONST)

#define SHMEM_CXX_RMA(T, TYPENAME, OP)            \
    SHMEM_CXX_BOTH(put, TYPENAME, T, )            \
    SHMEM_CXX_BOTH(get, TYPENAME, T, )            \
    SHMEM_CXX_BOTH(put_nbi, TYPENAME, T, )        \
    SHMEM_CXX_BOTH(get_nbi, TYPENAME, T, )        \
    SHMEM_CXX_BOTH(p, TYPENAME, T, )              \
    SHMEM_CXX_BOTH(g, TYPENAME, T, const)         \
    SHMEM_CXX_BOTH(iput, TYPENAME, T, )           \
    SHMEM_CXX_BOTH(iget, TYPENAME, T, )           \
    SHMEM_CXX_BOTH(put_signal, TYPENAME, T, )     \
    SHMEM_CXX_BOTH(put_signal_nbi, TYPENAME, T, ) \
    SHMEM_CXX_T(broadcast, TYPENAME, T)           \
    SHMEM_CXX_T(collect, TYPENAME, T)             \
    SHMEM_CXX_T(fcollect, TYPENAME, T)            \
    SHMEM_CXX_T(alltoall, TYPENAME, T)            \
    SHMEM_CXX_T(alltoalls, TYPENAME, T)
#define SHMEM_CXX_AMO_EXT(T, TYPENAME, OP)                \
    SHMEM_CXX_BOTH(atomic_fetch, TYPENAME, T, const)      \
    SHMEM_CXX_BOTH(atomic_set, TYPENAME, T, )             \
    SHMEM_CXX_BOTH(atomic_swap, TYPENAME, T, )            \
    SHMEM_CXX_BOTH(atomic_fetch_nbi, TYPENAME, T, )       \
    SHMEM_CXX_BOTH(atomic_swap_nbi, TYPENAME, T, )        \
    SHMEM_CXX_AS(fetch, atomic_fetch, TYPENAME, T, const) \
    SHMEM_CXX_AS(set, atomic_set, TYPENAME, T, )          \
    SHMEM_CXX_AS(swap, atomic_swap, TYPENAME, T, )
#define SHMEM_CXX_AMO_STD(T, TYPENAME, OP)                  \
    SHMEM_CXX_BOTH(atomic_compare_swap, TYPENAME, T, )      \
    SHMEM_CXX_BOTH(atomic_fetch_inc, TYPENAME, T, )         \
    SHMEM_CXX_BOTH(atomic_inc, TYPENAME, T, )               \
    SHMEM_CXX_BOTH(atomic_fetch_add, TYPENAME, T, )         \
    SHMEM_CXX_BOTH(atomic_add, TYPENAME, T, )               \
    SHMEM_CXX_BOTH(atomic_compare_swap_nbi, TYPENAME, T, )  \
    SHMEM_CXX_BOTH(atomic_fetch_inc_nbi, TYPENAME, T, )     \
    SHMEM_CXX_BOTH(atomic_fetch_add_nbi, TYPENAME, T, )     \
    SHMEM_CXX_AS(cswap, atomic_compare_swap, TYPENAME, T, ) \
    SHMEM_CXX_AS(finc, atomic_fetch_inc, TYPENAME, T, )     \
    SHMEM_CXX_AS(inc, atomic_inc, TYPENAME, T, )            \
    SHMEM_CXX_AS(fadd, atomic_fetch_add, TYPENAME, T, )     \
    SHMEM_CXX_AS(add, atomic_add, TYPENAME, T, )
#define SHMEM_CXX_AMO_BIT(T, TYPENAME, OP)              \
    SHMEM_CXX_BOTH(atomic_fetch_and, TYPENAME, T, )     \
    SHMEM_CXX_BOTH(atomic_and, TYPENAME, T, )           \
    SHMEM_CXX_BOTH(atomic_fetch_or, TYPENAME, T, )      \
    SHMEM_CXX_BOTH(atomic_or, TYPENAME, T, )            \
    SHMEM_CXX_BOTH(atomic_fetch_xor, TYPENAME, T, )     \
    SHMEM_CXX_BOTH(atomic_xor, TYPENAME, T, )           \
    SHMEM_CXX_BOTH(atomic_fetch_and_nbi, TYPENAME, T, ) \
    SHMEM_CXX_BOTH(atomic_fetch_or_nbi, TYPENAME, T, )  \
    SHMEM_CXX_BOTH(atomic_fetch_xor_nbi, TYPENAME, T, )
#define SHMEM_CXX_SYNC(T, TYPENAME, OP)                \
    SHMEM_CXX_1(wait_until, TYPENAME, T, )             \
    SHMEM_CXX_1(wait_until_all, TYPENAME, T, )         \
    SHMEM_CXX_1(wait_until_any, TYPENAME, T, )         \
    SHMEM_CXX_1(wait_until_some, TYPENAME, T, )        \
    SHMEM_CXX_1(wait_until_all_vector, TYPENAME, T, )  \
    SHMEM_CXX_1(wait_until_any_vector, TYPENAME, T, )  \
    SHMEM_CXX_1(wait_until_some_vector, TYPENAME, T, ) \
    SHMEM_CXX_1(test, TYPENAME, T, )                   \
    SHMEM_CXX_1(test_all, TYPENAME, T, )               \
    SHMEM_CXX_1(test_any, TYPENAME, T, )               \
    SHMEM_CXX_1(test_some, TYPENAME, T, )              \
    SHMEM_CXX_1(test_all_vector, TYPENAME, T, )        \
    SHMEM_CXX_1(test_any_vector, TYPENAME, T, )        \
    SHMEM_CXX_1(test_some_vector, TYPENAME, T, )
#define SHMEM_CXX_RED_BIT(T, TYPENAME, OP) \
    SHMEM_CXX_T(and_reduce, TYPENAME, T)   \
    SHMEM_CXX_T(or_reduce, TYPENAME, T) SHMEM_CXX_T(xor_reduce, TYPENAME, T)
#define SHMEM_CXX_RED_CMP(T, TYPENAME, OP) \
    SHMEM_CXX_T(max_reduce, TYPENAME, T) SHMEM_CXX_T(min_reduce, TYPENAME, T)
#define SHMEM_CXX_RED_ARITH(T, TYPENAME, OP) \
    SHMEM_CXX_T(sum_reduce, TYPENAME, T) SHMEM_CXX_T(prod_reduce, TYPENAME, T)

SHMEM_GEN_RMA_LIST(SHMEM_CXX_RMA, _)
SHMEM_GEN_AMO_EXT_LIST(SHMEM_CXX_AMO_EXT, _)
SHMEM_GEN_AMO_STD_LIST(SHMEM_CXX_AMO_STD, _)
SHMEM_GEN_AMO_BIT_LIST(SHMEM_CXX_AMO_BIT, _)
SHMEM_GEN_SYNC_LIST(SHMEM_CXX_SYNC, _)
SHMEM_GEN_REDUCE_BIT_LIST(SHMEM_CXX_RED_BIT, _)
SHMEM_GEN_REDUCE_CMP_LIST(SHMEM_CXX_RED_CMP, _)
SHMEM_GEN_REDUCE_CMP_LIST(SHMEM_CXX_RED_ARITH, _)
#endif

#endif /* WEFT_SHMEM_H */
