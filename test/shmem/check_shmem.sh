#!/bin/sh
# make check's entry to the OpenSHMEM tests: this build's wrappers (the library
# and headers of this tree), programs built into test/shmem/ of the build tree.
# Run from the top of a build directory (make check does).
build=${WEFT_BUILD_DIR:-${top_builddir:-.}}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
OSHCC=${OSHCC:-$build/shmem/build-oshcc}
OSHCXX=${OSHCXX:-$build/shmem/build-oshc++}
OSHRUN=${OSHRUN:-$build/shmem/build-oshrun}
SHMEM_TEST_BUILD=${SHMEM_TEST_BUILD:-$build/test/shmem}
# A modest heap: CI containers may have a small /dev/shm.
SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-256M}
export OSHCC OSHCXX OSHRUN SHMEM_TEST_BUILD SHMEM_SYMMETRIC_SIZE
"$here/run_shmem_tests.sh" "$@"
status=$?
[ "$status" = 77 ] && exit 77
# Contexts past the endpoint budget share endpoints: once more with a budget of 2.
echo "shmem_ctx again with SHMEM_CTX_ENDPOINTS=2 (contexts share endpoints):"
SHMEM_CTX_ENDPOINTS=2 SHMEM_TEST_PROGRAMS=shmem_ctx "$here/run_shmem_tests.sh" "$@" || status=1
exit "$status"
