/*
 * shmemx.h: extensions to OpenSHMEM (docs/shmem.md, "Extensions"): the ones
 * programs written for Sandia OpenSHMEM commonly call, with the same names
 * and meanings.
 */
#ifndef WEFT_SHMEMX_H
#define WEFT_SHMEMX_H

#include <shmem.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Seconds since an arbitrary point in the past (a monotonic clock). */
double shmemx_wtime(void);
#define HAVE_SHMEMX_WTIME 1 /* as Sandia OpenSHMEM's shmemx.h says */

/** Sandia OpenSHMEM asks for a function naming the calling thread; weft
 *  needs none, so this accepts one and ignores it. */
void shmemx_register_gettid(uint64_t (*gettid_fn)(void));

#ifdef __cplusplus
}
#endif

/* The bitwise atomics were extensions before OpenSHMEM 1.4 made them
 * standard: the old names are the standard routines. */
#define shmemx_uint_atomic_and shmem_uint_atomic_and
#define shmemx_uint_atomic_or shmem_uint_atomic_or
#define shmemx_uint_atomic_xor shmem_uint_atomic_xor
#define shmemx_uint_atomic_fetch_and shmem_uint_atomic_fetch_and
#define shmemx_uint_atomic_fetch_or shmem_uint_atomic_fetch_or
#define shmemx_uint_atomic_fetch_xor shmem_uint_atomic_fetch_xor
#define shmemx_ulong_atomic_and shmem_ulong_atomic_and
#define shmemx_ulong_atomic_or shmem_ulong_atomic_or
#define shmemx_ulong_atomic_xor shmem_ulong_atomic_xor
#define shmemx_ulong_atomic_fetch_and shmem_ulong_atomic_fetch_and
#define shmemx_ulong_atomic_fetch_or shmem_ulong_atomic_fetch_or
#define shmemx_ulong_atomic_fetch_xor shmem_ulong_atomic_fetch_xor
#define shmemx_ulonglong_atomic_and shmem_ulonglong_atomic_and
#define shmemx_ulonglong_atomic_or shmem_ulonglong_atomic_or
#define shmemx_ulonglong_atomic_xor shmem_ulonglong_atomic_xor
#define shmemx_ulonglong_atomic_fetch_and shmem_ulonglong_atomic_fetch_and
#define shmemx_ulonglong_atomic_fetch_or shmem_ulonglong_atomic_fetch_or
#define shmemx_ulonglong_atomic_fetch_xor shmem_ulonglong_atomic_fetch_xor
#define shmemx_int32_atomic_and shmem_int32_atomic_and
#define shmemx_int32_atomic_or shmem_int32_atomic_or
#define shmemx_int32_atomic_xor shmem_int32_atomic_xor
#define shmemx_int32_atomic_fetch_and shmem_int32_atomic_fetch_and
#define shmemx_int32_atomic_fetch_or shmem_int32_atomic_fetch_or
#define shmemx_int32_atomic_fetch_xor shmem_int32_atomic_fetch_xor
#define shmemx_int64_atomic_and shmem_int64_atomic_and
#define shmemx_int64_atomic_or shmem_int64_atomic_or
#define shmemx_int64_atomic_xor shmem_int64_atomic_xor
#define shmemx_int64_atomic_fetch_and shmem_int64_atomic_fetch_and
#define shmemx_int64_atomic_fetch_or shmem_int64_atomic_fetch_or
#define shmemx_int64_atomic_fetch_xor shmem_int64_atomic_fetch_xor
#define shmemx_uint32_atomic_and shmem_uint32_atomic_and
#define shmemx_uint32_atomic_or shmem_uint32_atomic_or
#define shmemx_uint32_atomic_xor shmem_uint32_atomic_xor
#define shmemx_uint32_atomic_fetch_and shmem_uint32_atomic_fetch_and
#define shmemx_uint32_atomic_fetch_or shmem_uint32_atomic_fetch_or
#define shmemx_uint32_atomic_fetch_xor shmem_uint32_atomic_fetch_xor
#define shmemx_uint64_atomic_and shmem_uint64_atomic_and
#define shmemx_uint64_atomic_or shmem_uint64_atomic_or
#define shmemx_uint64_atomic_xor shmem_uint64_atomic_xor
#define shmemx_uint64_atomic_fetch_and shmem_uint64_atomic_fetch_and
#define shmemx_uint64_atomic_fetch_or shmem_uint64_atomic_fetch_or
#define shmemx_uint64_atomic_fetch_xor shmem_uint64_atomic_fetch_xor

#endif /* WEFT_SHMEMX_H */
