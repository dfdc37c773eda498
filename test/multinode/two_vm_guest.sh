#!/usr/bin/env bash
# test/multinode/two_vm_guest.sh BUILD: the part of run_two_vm_tests.sh that
# runs in VM A of contrib/rxe-vm/run-two-rxe-vms.sh (VM B reached through
# $RXE_REXEC, mpirun through $RXE_MPIRUN). Prints one line per check; exit 0
# when every check passed.
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
limit=${WEFT_MPI_RUN_TIMEOUT:-600}
log=/tmp/two-vm.log
out=/tmp/two-vm.out
passed=0
failed=0
skipped=0

ok() {
    echo "ok:   $*"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL: $*; output:"
    tail -n 40 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
}

echo "guest: $(hostname), $(uname -r), $(nproc) cpu; peer $RXE_PEER ($RXE_PEER_IP); rxe0 GID index $RXE_GID0"

# ------------------------------------------------ 1. the plumbing: verbs
# ibv_rc_pingpong between rxe0 of each VM; the server on vmB through rxe-rexec.
t0=$SECONDS
timeout 120 "$RXE_REXEC" "$RXE_PEER" "ibv_rc_pingpong -d rxe0 -g \$RXE_GID0 -n 200 -s 4096" >"$out" 2>&1 &
srv=$!
rc=1
for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 1
    timeout 120 ibv_rc_pingpong -d rxe0 -g "$RXE_GID0" -n 200 -s 4096 "$RXE_PEER" >"$log" 2>&1 && {
        rc=0
        break
    }
    grep -q "Couldn't connect" "$log" || break # the server is up: a real failure
done
wait "$srv"
src=$?
cat "$out" >>"$log"
if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    fail "ibv_rc_pingpong across the VMs (client exit $rc, server $src)"
else
    ok "ibv_rc_pingpong across the VMs, rxe0 to rxe0 ($((SECONDS - t0)) s):" \
        "$(grep -m1 "iters in" "$log")"
fi

# ----------------------------------------- 2. the plumbing: stock Open MPI
t0=$SECONDS
timeout "$limit" "$RXE_MPIRUN" -np 2 hostname >"$log" 2>&1
hosts=$(sort "$log" | tr '\n' ' ')
if [ "$hosts" != "vmA vmB " ]; then
    fail "mpirun -np 2 hostname: expected vmA and vmB, got: $hosts"
else
    ok "ranks start on both VMs: $hosts"
fi
t0=$SECONDS
timeout "$limit" "$RXE_MPIRUN" -np 2 --mca pml ob1 --mca btl tcp,self "$build/test/mpi/mpi_p2p" \
    >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "^PASS mpi_p2p" "$log"; then
    fail "mpi_p2p over ob1 and btl tcp across the VMs (exit $rc)"
else
    ok "mpi_p2p, 2 ranks, one per VM, ob1 + btl tcp ($((SECONDS - t0)) s)"
fi

# ------------------------------------------------------ 3. weft across
ompi_components=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
ompi_components=${ompi_components:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
# WEFT_VERBS_TIMEOUT=18 (1.07 s instead of 67 ms before a packet is sent
# again): the emulated link moves about 10 MB/s, so a 1 MiB RDMA read
# (WEFT_VERBS_READ_CHUNK) takes longer than the default timeout, and six
# spurious retransmissions in a row fail the peer ("transport retry counter
# exceeded", seen in mpi_many's 64 MiB messages).
mtl_args=(--mca mca_base_component_path "$build/.libs:$ompi_components"
    --mca pml cm --mca mtl weft --mca mtl_weft_verbose 2 -x WEFT_VERBS_TIMEOUT=18)

# run_weft NAME NP TRANSPORTS [mpirun args...]: NAME over the weft MTL with
# WEFT_TRANSPORTS=TRANSPORTS on NP ranks; 2 ranks: one per VM, 4: two per VM.
# Passes when it exits 0, prints PASS, and every rank printed the selection
# line, half of them on each VM.
run_weft() {
    local name=$1 np=$2 tls=$3
    shift 3
    local more=()
    [ "$np" -gt 2 ] && more=(--oversubscribe)
    local t0=$SECONDS
    timeout "$limit" "$RXE_MPIRUN" -np "$np" "${more[@]}" "${mtl_args[@]}" \
        -x WEFT_TRANSPORTS="$tls" "$@" "$build/test/mpi/$name" >"$log" 2>&1
    local rc=$? why=""
    local on_a on_b
    on_a=$(grep -c "^\[vmA:[0-9]*\] mtl weft: selected on rank" "$log")
    on_b=$(grep -c "^\[vmB:[0-9]*\] mtl weft: selected on rank" "$log")
    if [ $rc -ne 0 ]; then
        why="exit status $rc"
        [ $rc -eq 124 ] && why="timed out after $limit s (WEFT_MPI_RUN_TIMEOUT)"
    elif ! grep -q "^PASS $name" "$log"; then
        why="no PASS line"
    elif [ "$on_a" -ne $((np / 2)) ] || [ "$on_b" -ne $((np / 2)) ]; then
        why="the weft MTL was selected on $on_a ranks on vmA and $on_b on vmB"
    fi
    if [ -n "$why" ]; then
        fail "$name, $np ranks on 2 VMs, WEFT_TRANSPORTS=$tls${*:+ $*} ($why)"
        return 1
    fi
    ok "$name, $np ranks on 2 VMs, WEFT_TRANSPORTS=$tls${*:+ $*} ($((SECONDS - t0)) s)"
}
# pairs: the transport of each pair of ranks of the last run (debug log).
pairs() {
    echo "      transport per pair of ranks:"
    if ! awk -f "$here/pair_transports.awk" "$log"; then
        echo "FAIL: a pair of ranks on two VMs chose shm or self"
        failed=$((failed + 1))
    fi
}

# verbs across: every program on one rank per VM, verbs the only way.
for p in mpi_p2p mpi_many mpi_coll mpi_thread; do
    run_weft "$p" 2 self,verbs
done
run_weft mpi_osc 2 self,verbs --mca osc weft
# Two ranks per VM, every transport allowed: shm within a VM, verbs across.
if run_weft mpi_p2p 4 self,shm,verbs -x WEFT_LOG_LEVEL=debug; then
    pairs
fi

# tcp across, once weft has it.
if ! "$build/weft_info" 2>/dev/null | grep -q "^transport tcp "; then
    echo "SKIP: tcp across the VMs: this build has no tcp transport ($build/weft_info lists none)"
    skipped=$((skipped + 1))
else
    run_weft mpi_p2p 2 self,tcp
    run_weft mpi_coll 2 self,tcp
    if run_weft mpi_p2p 4 self,shm,tcp -x WEFT_LOG_LEVEL=debug; then
        pairs
    fi
fi

echo "guest: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
