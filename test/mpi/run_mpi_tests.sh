#!/usr/bin/env bash
# test/mpi/run_mpi_tests.sh: run the MPI test programs over the weft MTL and
# over pml weft (docs/mpi.md). Part of `make check`; run from the top of a
# build directory (or set WEFT_BUILD_DIR).
#
# Every program runs with `--mca pml cm --mca mtl weft` and the component path
# pointing at the build tree's .libs, on 2 and 4 ranks; then mpi_p2p,
# mpi_many, mpi_thread, mpi_coll and mpi_spawn again with `--mca pml weft`. A run passes
# when it exits 0, prints "PASS <program>", and every rank printed the
# selection line of the component under test (--mca mtl_weft_verbose 1, or
# pml_weft_verbose 1): it was really used.
#
# Exit 77 (skip) only when mpirun or the component is not available.
#
# Time limit per run: WEFT_MPI_RUN_TIMEOUT seconds (default 300; doubled when
# the ranks outnumber the cores). A run normally takes seconds; the limit only
# turns a hang into a failure, so it is set for a loaded machine (make check -j
# on 2 cores) and for the Soft-RoCE VM, which sets its own.
set -u

build=${WEFT_BUILD_DIR:-${top_builddir:-.}}
so="$build/.libs/mca_mtl_weft.so"
mpirun=${MPIRUN:-$(command -v mpirun || true)}

if [ -z "$mpirun" ] || ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (${mpirun:-not on PATH}; install openmpi-bin)"
    exit 77
fi
if [ ! -f "$so" ]; then
    echo "SKIP: $so not built (configure found no Open MPI headers?)"
    exit 77
fi
for p in mpi_p2p mpi_many mpi_coll mpi_thread mpi_osc mpi_spawn; do
    if [ ! -x "$build/test/mpi/$p" ]; then
        echo "FAIL: $build/test/mpi/$p not built (make check builds it)"
        exit 1
    fi
done

ompi_components=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
ompi_components=${ompi_components:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
libs=$(cd "$build/.libs" && pwd)

base_args=(--mca mca_base_component_path "$libs:$ompi_components")
if [ "$(id -u)" = 0 ]; then
    base_args+=(--allow-run-as-root)
fi
# The component under test: its selection arguments, what it is called, and
# the line every rank prints when it is selected.
use_mtl() {
    sel_args=(--mca pml cm --mca mtl weft --mca mtl_weft_verbose 2)
    sel_what="the weft MTL"
    sel_line="mtl weft: selected on rank"
}
use_pml() {
    sel_args=(--mca pml weft --mca pml_weft_verbose 2)
    sel_what="pml weft"
    sel_line="pml weft: selected on rank"
}
use_mtl
cores=$(nproc 2>/dev/null || echo 1)

failed=0
passed=0
# In an AddressSanitizer build: Open MPI leaks at finalize, largely from
# components it has dlclose()d already, which LeakSanitizer shows as "unknown
# module" and no suppression can name. Leak checking is off for these runs;
# weft's own allocations are leak-checked by every other test program.
if [ -z "${ASAN_OPTIONS:-}" ]; then
    export ASAN_OPTIONS=detect_leaks=0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run NAME NP [extra mpirun args...] -- checks a run of test/mpi/NAME on NP ranks
run() {
    local name=$1 np=$2
    shift 2
    local args=("${base_args[@]}" "${sel_args[@]}")
    local procs=$((np * ${sel_times:-1})) # with mpi_spawn's children
    if [ "$procs" -gt "$cores" ]; then
        args+=(--oversubscribe)
    fi
    local limit=${WEFT_MPI_RUN_TIMEOUT:-300}
    if [ "$procs" -gt "$cores" ]; then
        limit=$((limit * 2))
    fi
    local t0=$SECONDS
    timeout "$limit" "$mpirun" -np "$np" "${args[@]}" "$@" "$build/test/mpi/$name" >"$log" 2>&1
    local rc=$?
    local selected
    selected=$(grep -c "$sel_line" "$log")
    local why=""
    if [ "$rc" -ne 0 ]; then
        why="exit status $rc"
        [ "$rc" -eq 124 ] && why="timed out after $limit s (WEFT_MPI_RUN_TIMEOUT)"
    elif ! grep -q "^PASS $name" "$log"; then
        why="no PASS line"
    elif [ "$selected" -ne "$((np * ${sel_times:-1}))" ]; then
        why="$sel_what was selected on $selected of $((np * ${sel_times:-1})) ranks"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $name, $np ranks${*:+ $*} [$sel_what] ($why); output:"
        tail -n 40 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
        return 1
    fi
    echo "ok:   $name, $np ranks${*:+ $*} [$sel_what] ($((SECONDS - t0)) s): $(grep "^PASS" "$log")"
    passed=$((passed + 1))
    return 0
}

echo "mpirun: $mpirun; component: $so"
for np in 2 4; do
    run mpi_p2p "$np"
    run mpi_many "$np"
    run mpi_coll "$np"
    run mpi_thread "$np"
done
# Dynamic processes: mpi_spawn's children (as many as the job's ranks) select
# the component too. Over verbs as well: Open MPI's connect and disconnect
# block in PMIx without progress, so the components' injects must not stay
# queued in weft behind a connection being made (WEFT_OPT_INJECT_DIRECT,
# docs/mpi.md "Limits").
sel_times=2
for np in 2 4; do
    run mpi_spawn "$np"
done
sel_times=1

# coll weft (built beside the MTL, so the runs above use it too): it must
# claim every intracommunicator of mpi_coll (world, self, the split, the dup,
# the halves, and from 2 ranks the dup MPI_Intercomm_create makes of a half:
# 5 or 6 per rank) and not the intercommunicator, on 1 to 4 ranks (3: odd
# halves, non-power-of-two groups), passing on only the user-defined op of
# mpi_coll's test_loc. And Open MPI's own collectives over the
# MTL still work with it excluded.
if [ -f "$build/.libs/mca_coll_weft.so" ]; then
    for np in 1 3 4; do
        if run mpi_coll "$np" --mca coll_weft_verbose 1; then
            claimed=$(grep -c "coll weft: .* uses weft's collectives" "$log")
            per=$((np >= 2 ? 6 : 5))
            if [ "$claimed" -ne $((np * per)) ]; then
                echo "FAIL: coll weft claimed $claimed communicators on $np ranks, expected $((np * per))"
                grep "coll weft" "$log" | head -n 20 | sed 's/^/    /'
                failed=$((failed + 1))
            elif grep "coll weft: .*passed to the previous module" "$log" |
                grep -qv "not one of MPI's predefined reduction ops"; then
                echo "FAIL: coll weft passed basic-type calls of mpi_coll to another module:"
                grep "passed to the previous" "$log" | sort | uniq -c | head | sed 's/^/    /'
                failed=$((failed + 1))
            fi
        fi
    done
    run mpi_coll 2 --mca coll ^weft
else
    echo "FAIL: $build/.libs/mca_coll_weft.so not built"
    failed=$((failed + 1))
fi

# osc weft (netmod/osc_weft.c, built beside the MTL): mpi_osc's windows of all
# four flavors through it, on 2 and 4 ranks. With osc_weft_verbose 1 the
# component prints "osc weft: window on rank R (FLAVOR)" for every window it
# makes (R: the rank in the window's communicator); every rank must have
# printed at least one (mpi_osc makes 19 windows a rank).
# check_osc_windows NP: every rank of the last run printed a window line.
check_osc_windows() {
    local np=$1 windows r
    windows=$(grep -c "osc weft: window on rank" "$log")
    for ((r = 0; r < np; r++)); do
        if ! grep -q "osc weft: window on rank $r (" "$log"; then
            echo "FAIL: osc weft made no window on rank $r of $np in mpi_osc" \
                "($windows lines in all); its lines:"
            grep "osc weft" "$log" | head -n 20 | sed 's/^/    /'
            failed=$((failed + 1))
            return 1
        fi
    done
}
if [ -f "$build/.libs/mca_osc_weft.so" ]; then
    for np in 2 4; do
        if run mpi_osc "$np" --mca osc weft --mca osc_weft_verbose 1; then
            check_osc_windows "$np"
        fi
    done
    # The component's other ways. Accumulates: by default under the target's
    # accumulate lock where every rank maps every part (allocate and shared
    # windows here) and as weft atomics elsewhere (create, dynamic); forced
    # both ways for every window (osc_weft_acc_intrinsic 1 and 0: the lock
    # over weft gets and puts on memory not mapped). Shared windows in POSIX
    # shared memory (the fallback where weft maps no memory between
    # processes, e.g. over verbs), and in a file in /tmp (where /dev/shm is
    # not mounted, as in the Soft-RoCE VM).
    run mpi_osc 2 --mca osc weft --mca osc_weft_acc_intrinsic 1
    run mpi_osc 2 --mca osc weft --mca osc_weft_acc_intrinsic 0
    run mpi_osc 3 --mca osc weft --mca osc_weft_shared_posix 1
    run mpi_osc 2 --mca osc weft --mca osc_weft_shared_posix 2
else
    echo "FAIL: $build/.libs/mca_osc_weft.so not built"
    failed=$((failed + 1))
fi
# Open MPI's own osc over the MTL, osc weft excluded. This overrides Debian's
# "osc = ^ucx,pt2pt" (openmpi-mca-params.conf), so all of rdma, ucx and pt2pt
# may be chosen: osc rdma (priority 101, over the vader BTL, which it opens
# itself under pml cm) wins, and osc sm takes the shared windows. Not on 1
# rank: there osc rdma declines, and osc ucx then takes the windows and
# crashes freeing the dynamic one (Open MPI 4.1.4; open-mpi/ompi#9689).
run mpi_osc 2 --mca osc ^weft

# A tiny weft send queue: weft refuses sends with -WEFT_EAGAIN all the time, and
# the MTL's deferred queue must keep order and never block a nonblocking call.
# check_deferred WHAT: the last run used the deferred queue.
check_deferred() {
    if ! grep "operations waited in the deferred queue" "$log" | grep -qv ": 0 operations"; then
        echo "FAIL: mpi_many with $1 never used the deferred queue"
        failed=$((failed + 1))
    fi
}
if run mpi_many 2 -x WEFT_TX_SIZE=8; then
    check_deferred "WEFT_TX_SIZE=8"
fi
# The same through the component's configuration parameter, with a list value
# whose commas are not pair separators: TRANSPORTS must read "self,shm" (or the
# list the environment gives, e.g. self,verbs in the Soft-RoCE VM).
if run mpi_many 2 --mca mtl_weft_config "TRANSPORTS=${WEFT_TRANSPORTS:-self,shm},TX_SIZE=8"; then
    check_deferred "mtl_weft_config TX_SIZE=8"
fi
# A name weft does not know: MPI_Init fails on the MTL, saying which.
bad_name=WEFT_NOT_A_VARIABLE
timeout 120 "$mpirun" -np 2 "${base_args[@]}" "${sel_args[@]}" --mca mtl_weft_config "$bad_name=1" \
    "$build/test/mpi/mpi_p2p" >"$log" 2>&1
if [ $? -eq 0 ] || ! grep -q "$bad_name" "$log"; then
    echo "FAIL: mtl_weft_config with an unknown name: expected a failed start naming $bad_name; output:"
    tail -n 20 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
else
    echo "ok:   mtl_weft_config with an unknown name refused: $(grep -m1 "$bad_name" "$log")"
    passed=$((passed + 1))
fi

# pml weft (netmod/pml_weft*.c): Open MPI's PML over weft, no pml cm. The
# point-to-point programs, MPI_THREAD_MULTIPLE, and the collectives both
# through coll weft and through Open MPI's own (tuned, basic: every
# collective's messages through the PML), on 2 and 4 ranks; mpi_osc on 2.
if [ -f "$build/.libs/mca_pml_weft.so" ]; then
    use_pml
    for np in 2 4; do
        run mpi_p2p "$np"
        run mpi_many "$np"
        run mpi_thread "$np"
        run mpi_coll "$np"
        run mpi_coll "$np" --mca coll ^weft
        sel_times=2 run mpi_spawn "$np"
    done
    # One-sided over pml weft: osc weft chosen by its priority, no osc named
    # (every rank must print its window lines), and Open MPI's own (rdma, sm).
    if run mpi_osc 2 --mca osc_weft_verbose 1; then
        check_osc_windows 2
    fi
    run mpi_osc 2 --mca osc ^weft
    # Its deferred queue, through its configuration parameter.
    pml_config="TRANSPORTS=${WEFT_TRANSPORTS:-self,shm},TX_SIZE=8"
    if run mpi_many 2 --mca pml_weft_config "$pml_config"; then
        check_deferred "pml_weft_config TX_SIZE=8"
    fi
    # A weft variable that does not exist: MPI_Init fails on pml weft, saying which.
    timeout 120 "$mpirun" -np 2 "${base_args[@]}" "${sel_args[@]}" \
        --mca pml_weft_config "$bad_name=1" "$build/test/mpi/mpi_p2p" >"$log" 2>&1
    if [ $? -eq 0 ] || ! grep -q "$bad_name" "$log"; then
        echo "FAIL: pml_weft_config with an unknown name: expected a failed start" \
            "naming $bad_name; output:"
        tail -n 20 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "ok:   pml_weft_config with an unknown name refused: $(grep -m1 "$bad_name" "$log")"
        passed=$((passed + 1))
    fi
    # Blocking calls poll weft and call opal_progress once in
    # pml_weft_progress_iterations polls: every poll (1) works too, and a value
    # below 1 is said and taken as 1.
    run mpi_p2p 2 --mca pml_weft_progress_iterations 1
    if run mpi_p2p 2 --mca pml_weft_progress_iterations 0 &&
        ! grep -q "pml_weft_progress_iterations=0 is below 1" "$log"; then
        echo "FAIL: pml_weft_progress_iterations 0: no line saying it is taken as 1"
        failed=$((failed + 1))
    fi
    # Not without the flag: with the component in the path and no pml named,
    # Open MPI keeps its default PML and pml weft is never selected.
    timeout 120 "$mpirun" -np 2 "${base_args[@]}" --mca pml_weft_verbose 1 \
        "$build/test/mpi/mpi_p2p" >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "^PASS mpi_p2p" "$log" ||
        grep -q "pml weft: selected" "$log"; then
        echo "FAIL: without --mca pml weft: exit $rc, pml weft selected on" \
            "$(grep -c "pml weft: selected" "$log") ranks (expected 0); output:"
        tail -n 20 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "ok:   without --mca pml weft, Open MPI's default PML ran mpi_p2p" \
            "(pml weft not selected)"
        passed=$((passed + 1))
    fi
else
    echo "FAIL: $build/.libs/mca_pml_weft.so not built"
    failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
