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
# A sanitizer build (configure --enable-asan/--enable-tsan): the programs are
# built with the same sanitizer, so its runtime comes first; libpmix's own
# small leaks at init are not ours.
san=$(sed -n 's/^WEFT_SAN = //p' "$build/Makefile" 2>/dev/null)
if [ -n "$san" ]; then
    SHMEM_TEST_CFLAGS=${SHMEM_TEST_CFLAGS:--std=gnu11 -O1 -g $san}
    SHMEM_TEST_CXXFLAGS=${SHMEM_TEST_CXXFLAGS:--std=gnu++17 -O1 -g $san}
    lsan_dir=$(mktemp -d)
    trap 'rm -rf "$lsan_dir"' EXIT
    printf 'leak:libpmix.so\n' >"$lsan_dir/lsan.supp"
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$lsan_dir/lsan.supp:print_suppressions=0}
    export SHMEM_TEST_CFLAGS SHMEM_TEST_CXXFLAGS LSAN_OPTIONS
fi
export OSHCC OSHCXX OSHRUN SHMEM_TEST_BUILD SHMEM_SYMMETRIC_SIZE
"$here/run_shmem_tests.sh" "$@"
status=$?
[ "$status" = 77 ] && exit 77
# Contexts past the endpoint budget share endpoints: once more with a budget of 2.
echo "shmem_ctx again with SHMEM_CTX_ENDPOINTS=2 (contexts share endpoints):"
SHMEM_CTX_ENDPOINTS=2 SHMEM_TEST_PROGRAMS=shmem_ctx "$here/run_shmem_tests.sh" "$@" || status=1
exit "$status"
