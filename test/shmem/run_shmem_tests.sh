#!/usr/bin/env bash
# test/shmem/run_shmem_tests.sh: build the OpenSHMEM test programs of this
# directory (test/shmem/*.c) with an OpenSHMEM compiler wrapper and run each on
# 2 and 4 PEs with its launcher.
#
# A run passes when it exits 0 and prints "PASS <program>". One ok/FAIL line
# per run; exit 0 when all passed, 1 otherwise, 77 (skip) only when the
# compiler wrapper or the launcher is missing.
#
# Environment:
#   OSHCC               compiler wrapper (default oshcc)
#   OSHCXX              C++ compiler wrapper, for the .cpp programs (default oshc++)
#   OSHRUN              launcher (default oshrun)
#   OSHRUN_ARGS         extra launcher arguments, split at blanks
#   SHMEM_TEST_BUILD    directory for the binaries (default: a temporary one,
#                       removed at exit)
#   SHMEM_TEST_CFLAGS   compiler flags (default: -std=gnu11 -O1 -Wall -Wextra)
#   SHMEM_TEST_CXXFLAGS C++ compiler flags (default: -std=gnu++17 -O1 -Wall -Wextra)
#   SHMEM_TEST_NP       PE counts to run (default: "2 4")
#   SHMEM_TEST_PROGRAMS programs to run (default: every test/shmem/*.c and *.cpp)
#   SHMEM_TEST_TIMEOUT  seconds per run (default 300; doubled when the PEs
#                       outnumber the cores); only turns a hang into a failure
#   SHMEM_TEST_OMPI_FLAGS  1 (default): add Open MPI's launcher options
#                       --allow-run-as-root (when root) and --oversubscribe
#                       (more PEs than cores); 0: add neither
#
# Against Open MPI's oshmem (Debian's Open MPI 4.1.4, OpenSHMEM 1.4; the 1.5
# parts of the tests are then compiled out), the suite runs as
#   OSHRUN_ARGS="--mca osc ^rdma" test/shmem/run_shmem_tests.sh
# that is, for each program and PE count,
#   oshrun -np 4 --allow-run-as-root --oversubscribe --mca osc ^rdma PROGRAM
# (without "--mca osc ^rdma" every oshmem job segfaults in shmem_finalize, in
# the osc rdma component's cleanup; the default spml ucx works as it is on a
# single machine, no UCX transport options needed).
set -u

srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
oshcc=${OSHCC:-oshcc}
oshrun=${OSHRUN:-oshrun}
oshcxx=${OSHCXX:-oshc++}
cflags=${SHMEM_TEST_CFLAGS:--std=gnu11 -O1 -Wall -Wextra}
cxxflags=${SHMEM_TEST_CXXFLAGS:--std=gnu++17 -O1 -Wall -Wextra}

if ! command -v "$oshcc" >/dev/null 2>&1; then
    echo "SKIP: OpenSHMEM compiler wrapper '$oshcc' not found (set OSHCC)"
    exit 77
fi
if ! command -v "$oshrun" >/dev/null 2>&1; then
    echo "SKIP: OpenSHMEM launcher '$oshrun' not found (set OSHRUN)"
    exit 77
fi

if [ -n "${SHMEM_TEST_BUILD:-}" ]; then
    build=$SHMEM_TEST_BUILD
    mkdir -p "$build" || exit 1
    cleanup_build=0
else
    build=$(mktemp -d)
    cleanup_build=1
fi
build=$(cd "$build" && pwd)
log=$(mktemp)
cleanup() {
    rm -f "$log"
    if [ "$cleanup_build" = 1 ]; then
        rm -rf "$build"
    fi
}
trap cleanup EXIT

programs=${SHMEM_TEST_PROGRAMS:-}
if [ -z "$programs" ]; then
    for f in "$srcdir"/*.c "$srcdir"/*.cpp; do
        [ -e "$f" ] || continue
        programs="$programs $(basename "${f%.cpp}" .c)"
    done
fi
nps=${SHMEM_TEST_NP:-2 4}
cores=$(nproc 2>/dev/null || echo 1)
read -r -a extra_args <<<"${OSHRUN_ARGS:-}"

failed=0
passed=0
echo "oshcc: $(command -v "$oshcc"); oshrun: $(command -v "$oshrun"); binaries in $build"

# Build every program; a program that does not build fails each of its runs.
declare -A built=()
for name in $programs; do
    # A .cpp program is built with the C++ wrapper (C++17: the generic overloads).
    cc=$oshcc flags=$cflags src=$srcdir/$name.c
    if [ -e "$srcdir/$name.cpp" ]; then
        cc=$oshcxx flags=$cxxflags src=$srcdir/$name.cpp
    fi
    # shellcheck disable=SC2086 # flags is a list of flags
    if "$cc" $flags -o "$build/$name" "$src" -lm >"$log" 2>&1; then
        built[$name]=1
        if [ -s "$log" ]; then
            echo "note: $name compiled with diagnostics:"
            head -n 20 "$log" | sed 's/^/    /'
        fi
    else
        echo "FAIL: $name does not compile; output:"
        grep -E "error" "$log" | head -n 20 | sed 's/^/    /'
        undefined=$(sed -n "s/.*undefined reference to .\([A-Za-z0-9_]*\).*/\1/p" "$log" | sort -u)
        if [ -n "$undefined" ]; then
            echo "    undefined: $(echo $undefined)"
        fi
        if ! grep -qE "error" "$log"; then
            tail -n 20 "$log" | sed 's/^/    /'
        fi
    fi
done

# run NAME NP -- one run of NAME on NP PEs
run() {
    local name=$1 np=$2
    if [ -z "${built[$name]:-}" ]; then
        echo "FAIL: $name, $np PEs (not built)"
        failed=$((failed + 1))
        return 1
    fi
    local args=(-np "$np")
    local limit=${SHMEM_TEST_TIMEOUT:-300}
    if [ "${SHMEM_TEST_OMPI_FLAGS:-1}" = 1 ]; then
        if [ "$(id -u)" = 0 ]; then
            args+=(--allow-run-as-root)
        fi
        if [ "$np" -gt "$cores" ]; then
            args+=(--oversubscribe)
        fi
    fi
    if [ "$np" -gt "$cores" ]; then
        limit=$((limit * 2))
    fi
    args+=("${extra_args[@]}")
    local t0=$SECONDS
    timeout -k 10 "$limit" "$oshrun" "${args[@]}" "$build/$name" >"$log" 2>&1 </dev/null
    local rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        # A launcher killed by the time limit can leave its PEs running (orphans
        # that spin and slow down every later run): end them by their path.
        pkill -KILL -f "^$build/$name\$" 2>/dev/null || true
    fi
    local why=""
    if [ "$rc" -ne 0 ]; then
        why="exit status $rc"
        [ "$rc" -eq 124 ] && why="timed out after $limit s (SHMEM_TEST_TIMEOUT)"
    elif ! grep -q "^PASS $name\b" "$log"; then
        why="no PASS line"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $name, $np PEs ($why); output:"
        grep -m 20 "^FAIL" "$log" | sed 's/^/    /'
        tail -n 30 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
        return 1
    fi
    echo "ok:   $name, $np PEs ($((SECONDS - t0)) s): $(grep "^PASS $name" "$log")"
    passed=$((passed + 1))
    return 0
}

for np in $nps; do
    for name in $programs; do
        run "$name" "$np"
    done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
