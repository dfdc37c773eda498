/*
 * shmemx.h: weft's extensions to OpenSHMEM (docs/shmem.md). None yet beyond
 * shmem.h; programs written for other implementations include it freely.
 */
#ifndef WEFT_SHMEMX_H
#define WEFT_SHMEMX_H

#include <shmem.h>

#endif /* WEFT_SHMEMX_H */
