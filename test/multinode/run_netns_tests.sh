#!/usr/bin/env bash
# test/multinode/run_netns_tests.sh: MPI jobs that span two nodes
# (docs/multinode.md). The nodes are network namespaces of this machine
# joined by a veth pair (contrib/netns/weft-netns), each with its own host
# name; mpirun runs on the first and starts the second node's ranks through
# contrib/netns/weft-netns-agent. Part of `make check`; run from the top of a
# build directory (or set WEFT_BUILD_DIR).
#
# 1. The plumbing, with stock Open MPI (ob1, btl tcp): one rank per node, each
#    on its own host name, and the bytes cross the veth pair.
# 2. weft sees two nodes: the weft MTL with WEFT_TRANSPORTS=self,shm cannot
#    reach the other node's rank (shm must never be chosen across).
# 3. With a tcp transport in the build: the MPI test programs over the weft MTL
#    on 2 ranks (one per node) and 4 (two per node: shm within, tcp across),
#    mpi_p2p and mpi_coll over pml weft, one-sided mpi_osc across; which
#    transport each pair of ranks chose; tcp alone (WEFT_TRANSPORTS=self,tcp);
#    IPv6 when the tcp transport has an interface selection (WEFT_TCP_IF).
#    Without tcp this part is a visible SKIP (exit 77) after 1 and 2 passed.
# 4. With tcp: OpenSHMEM programs (test/shmem) through oshrun, every one on 2
#    PEs (one per node), put/get, atomics, barriers and collectives on 4 (two
#    per node), with the transport of each pair of PEs.
#
# Exit 77 (skip, with the reason) also when mpirun or the MTL is missing, when
# not root, or when this machine cannot make network namespaces.
#
# The topology is this run's own (nodes wnA<pid> and wnB<pid>, torn down at
# exit), so runs in other build trees at the same time do not meet; one left
# behind by a killed run is removed by the next run.
#
# Time limit per run: WEFT_MPI_RUN_TIMEOUT seconds (default 300).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${WEFT_BUILD_DIR:-${top_builddir:-.}}
build=$(cd "$build" && pwd)
netns=$top/contrib/netns/weft-netns
so=$build/.libs/mca_mtl_weft.so
mpirun=${MPIRUN:-$(command -v mpirun || true)}
limit=${WEFT_MPI_RUN_TIMEOUT:-300}

skip() {
    echo "SKIP: multinode (network namespaces) tests not run: $*"
    exit 77
}
[ -n "$mpirun" ] && command -v "$mpirun" >/dev/null 2>&1 ||
    skip "mpirun not found (${mpirun:-not on PATH}; install openmpi-bin)"
[ -f "$so" ] || skip "$so not built (configure found no Open MPI headers?)"
for p in mpi_p2p mpi_many mpi_coll mpi_thread mpi_osc; do
    if [ ! -x "$build/test/mpi/$p" ]; then
        echo "FAIL: $build/test/mpi/$p not built (make check builds it)"
        exit 1
    fi
done
[ "$(id -u)" = 0 ] || skip "network namespaces need root (run make check as root, as CI does)"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (install iproute2)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here: $(ip netns list 2>&1 | head -n1)"

# Topologies left by runs that were killed (their pid is gone).
for f in /run/netns/wnA*; do
    [ -e "$f" ] || continue
    pid=${f##*/wnA}
    [[ $pid =~ ^[0-9]+$ ]] || continue
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "removing the topology of an earlier run (pid $pid, gone)"
        WEFTNS_NODES="wnA$pid wnB$pid" "$netns" down
    fi
done

node_a=wnA$$
node_b=wnB$$
export WEFTNS_NODES="$node_a $node_b"
export WEFTNS_MPIRUN=$mpirun
log=$(mktemp)
cleanup() {
    "$netns" down >/dev/null
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$netns" up
rc=$?
[ $rc -eq 77 ] && skip "the topology cannot be built here (above)"
if [ $rc -ne 0 ]; then
    echo "FAIL: weft-netns up failed (exit $rc)"
    exit 1
fi
"$netns" status || {
    echo "FAIL: the topology is not usable"
    exit 1
}

ompi_components=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
ompi_components=${ompi_components:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
libs=$(cd "$build/.libs" && pwd)
base_args=(--mca mca_base_component_path "$libs:$ompi_components")
if [ -z "${ASAN_OPTIONS:-}" ]; then
    # Open MPI leaks at finalize (test/mpi/run_mpi_tests.sh says why).
    export ASAN_OPTIONS=detect_leaks=0
fi

failed=0
passed=0
fail() {
    echo "FAIL: $*; output:"
    tail -n 40 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
}

# Bytes received by NODE's end of the veth pair.
rx_bytes() { "$netns" exec "$1" cat /sys/class/net/weft0/statistics/rx_bytes; }
# IPv6 bytes received by NODE (every interface; lo carries none between nodes).
rx6_bytes() { "$netns" exec "$1" awk '$1 == "Ip6InOctets" {print $2}' /proc/net/snmp6; }

# mpirun_nodes NP [mpirun args...] PROGRAM [args]: runs on both nodes; with 2
# ranks one per node (--map-by node), with 4 two per node. The nodes share
# this machine's cores (the hostfile gives each half of them): with more ranks
# than cores, --oversubscribe and mpi_yield_when_idle, so that idle ranks
# yield. The second node's daemon counts that node's cores, not the
# hostfile's slots, and would leave its ranks spinning
# (OMPI_MCA_mpi_oversubscribe=0 there): they took the cores from the first
# node's yielding ranks.
cores=$(nproc 2>/dev/null || echo 1)
mpirun_nodes() {
    local np=$1
    shift
    local map=(--map-by node)
    [ "$np" -gt "$cores" ] && map+=(--oversubscribe --mca mpi_yield_when_idle 1)
    timeout "$limit" "$netns" mpirun -np "$np" "${map[@]}" "$@" >"$log" 2>&1
}

# --------------------------------------------------- 1. stock Open MPI
t0=$SECONDS
mpirun_nodes 2 hostname
hosts=$(sort "$log" | tr '\n' ' ')
if [ "$hosts" != "$node_a $node_b " ]; then
    fail "mpirun -np 2 --map-by node hostname: expected $node_a and $node_b, got: $hosts"
else
    echo "ok:   ranks start on both nodes: $hosts"
    passed=$((passed + 1))
fi
before=$(rx_bytes "$node_b")
mpirun_nodes 2 --mca pml ob1 --mca btl tcp,self "$build/test/mpi/mpi_p2p"
rc=$?
crossed=$(($(rx_bytes "$node_b") - before))
if [ $rc -ne 0 ] || ! grep -q "^PASS mpi_p2p" "$log"; then
    fail "mpi_p2p over ob1 and btl tcp across the nodes: exit $rc"
elif [ "$crossed" -lt 1000000 ]; then
    fail "mpi_p2p over ob1 and btl tcp: only $crossed bytes crossed the veth pair"
else
    echo "ok:   mpi_p2p, 2 ranks, one per node, ob1 + btl tcp ($((SECONDS - t0)) s," \
        "$((crossed / 1000)) kB into $node_b over the veth pair)"
    passed=$((passed + 1))
fi

# ------------------------------------------------ 2. two nodes for weft
# The weft MTL restricted to shared memory: the rank on the other node must be
# unreachable. If weft took the two namespaces for one node (same host name
# and boot id), shm would connect through the shared /dev/shm and this would
# pass.
t0=$SECONDS
mpirun_nodes 2 "${base_args[@]}" --mca pml cm --mca mtl weft -x WEFT_TRANSPORTS=self,shm \
    "$build/test/mpi/mpi_p2p"
rc=$?
if [ $rc -eq 0 ] || ! grep -q "unreachable" "$log"; then
    fail "the weft MTL over self,shm alone across two nodes: expected a failure naming an" \
        "unreachable peer (exit $rc)"
else
    echo "ok:   weft sees two nodes: over self,shm alone the other node is unreachable" \
        "($((SECONDS - t0)) s): $(grep -m1 unreachable "$log" | sed 's/^ *//')"
    passed=$((passed + 1))
fi

# ------------------------------------------------------ 3. weft over tcp
built=$(sed -n 's/^#define WEFT_BUILT_TRANSPORTS "\(.*\)"/\1/p' "$build/config.h" 2>/dev/null)
if ! [[ " $built " == *" tcp "* ]]; then
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] || exit 1
    if [ -d "$top/src/transport/tcp" ]; then
        skip "this build has no tcp transport (built: $built), although $top/src/transport/tcp" \
            "exists: run autogen.sh, then configure this build again"
    fi
    skip "weft has no tcp transport yet (no src/transport/tcp; built: $built):" \
        "nothing connects ranks on two nodes without RDMA"
fi

mtl_args=("${base_args[@]}" --mca pml cm --mca mtl weft --mca mtl_weft_verbose 2)
pml_args=("${base_args[@]}" --mca pml weft --mca pml_weft_verbose 2)

# run_weft WHAT NAME NP [mpirun args...]: NAME on NP ranks over both nodes;
# WHAT is mtl or pml. Passes when it exits 0, prints PASS, and every rank
# printed the selection line, half of them on each node.
run_weft() {
    local what=$1 name=$2 np=$3
    shift 3
    local sel_args line
    if [ "$what" = mtl ]; then
        sel_args=("${mtl_args[@]}")
        line="mtl weft: selected on rank"
    else
        sel_args=("${pml_args[@]}")
        line="pml weft: selected on rank"
    fi
    local t0=$SECONDS
    mpirun_nodes "$np" "${sel_args[@]}" "$@" "$build/test/mpi/$name"
    local rc=$? why=""
    local on_a on_b
    on_a=$(grep -c "^\[$node_a:[0-9]*\] $line" "$log")
    on_b=$(grep -c "^\[$node_b:[0-9]*\] $line" "$log")
    if [ $rc -ne 0 ]; then
        why="exit status $rc"
        [ $rc -eq 124 ] && why="timed out after $limit s (WEFT_MPI_RUN_TIMEOUT)"
    elif ! grep -q "^PASS $name" "$log"; then
        why="no PASS line"
    elif [ "$on_a" -ne $((np / 2)) ] || [ "$on_b" -ne $((np / 2)) ]; then
        why="$what weft selected on $on_a ranks on $node_a and $on_b on $node_b," \
            "expected $((np / 2)) each"
    fi
    if [ -n "$why" ]; then
        fail "$name, $np ranks on 2 nodes${*:+ $*} [$what weft] ($why)"
        return 1
    fi
    echo "ok:   $name, $np ranks on 2 nodes${*:+ $*} [$what weft] ($((SECONDS - t0)) s)"
    passed=$((passed + 1))
}

# Two ranks, one per node: tcp between them. Four, two per node: shm within a
# node, tcp across; mpi_p2p there with weft's debug log, which says which
# transport each pair of ranks chose (pair_transports.awk): pairs on two nodes
# must not use shm or self.
for np in 2 4; do
    before=$(rx_bytes "$node_b")
    if [ "$np" -eq 2 ]; then
        run_weft mtl mpi_p2p 2
    elif run_weft mtl mpi_p2p 4 -x WEFT_LOG_LEVEL=debug; then
        echo "      transport per pair of ranks (WEFT_LOG_LEVEL=debug, 4 ranks):"
        awk -f "$here/pair_transports.awk" "$log" ||
            fail "a pair of ranks on two nodes chose shm or self"
    fi
    crossed=$(($(rx_bytes "$node_b") - before))
    if [ "$crossed" -lt 1000000 ]; then
        fail "mpi_p2p on $np ranks over the weft MTL: only $crossed bytes crossed the veth pair"
    fi
    run_weft mtl mpi_many "$np"
    run_weft mtl mpi_coll "$np"
    run_weft mtl mpi_thread "$np"
done
run_weft mtl mpi_osc 2 --mca osc weft
run_weft pml mpi_p2p 2
run_weft pml mpi_coll 2
# tcp within the nodes too.
run_weft mtl mpi_coll 4 -x WEFT_TRANSPORTS=self,tcp

# IPv6: only the tcp transport's own interface selection can ask for it.
if "$build/weft_info" -c 2>/dev/null | grep -q "WEFT_TCP_IF\b"; then
    net6=${WEFTNS_NET6:-fd77:14:}
    before=$(rx6_bytes "$node_b")
    if run_weft mtl mpi_p2p 2 -x WEFT_TCP_IF="$net6:/64"; then
        crossed=$(($(rx6_bytes "$node_b") - before))
        if [ "$crossed" -lt 1000000 ]; then
            fail "WEFT_TCP_IF=$net6:/64: only $crossed IPv6 bytes reached $node_b"
        else
            echo "      IPv6: $((crossed / 1000)) kB of IPv6 into $node_b"
        fi
    fi
else
    echo "note: weft_info -c lists no WEFT_TCP_IF: the IPv6 run is left out"
fi

# ------------------------------------------------ 4. OpenSHMEM across the nodes
# weft's OpenSHMEM test programs (test/shmem, each checks its results) with
# PEs on both nodes, started by this build's oshrun over weft-netns mpirun: the
# same PMIx launcher path as MPI. Every program on 2 PEs (one per node); put/
# get, atomics, barriers and collectives on 4 (two per node: shm within, tcp
# across, the transport of each pair checked). The symmetric heap and the data
# segment are reached across through proto's active messages (tcp has no RDMA).
# With 4 PEs the two nodes' PEs share this machine's cores while each node
# counts all of them: SHMEM_WAIT_YIELD=1 makes waits yield (as
# mpi_yield_when_idle does for MPI; docs/multinode.md says what it measured).
oshcc=$build/shmem/build-oshcc
oshcxx=$build/shmem/build-oshc++
oshrun=$build/shmem/build-oshrun
shmem_bin=$(mktemp -d)
trap 'cleanup; rm -rf "$shmem_bin"' EXIT
export OSHRUN_MPIRUN=$top/contrib/netns/weft-netns-mpirun

# run_shmem NAME NP [launcher args...]: passes when it exits 0, prints PASS and
# both nodes' PEs logged a tcp connection.
run_shmem() {
    local name=$1 np=$2
    shift 2
    local args=(-np "$np" --map-by node -x SHMEM_SYMMETRIC_SIZE=256M)
    [ "$np" -gt "$cores" ] &&
        args+=(--oversubscribe --mca mpi_yield_when_idle 1 -x SHMEM_WAIT_YIELD=1)
    local t0=$SECONDS
    timeout "$limit" "$oshrun" "${args[@]}" "$@" "$shmem_bin/$name" >"$log" 2>&1 </dev/null
    local rc=$? why=""
    local nodes_tcp
    nodes_tcp=$(sed -En 's/^\[([^]:]*):[0-9]+:[0-9]+\] weft tcp debug: (connected to|accepted a connection from) .*/\1/p' "$log" |
        sort -u | tr '\n' ' ')
    if [ $rc -ne 0 ]; then
        why="exit status $rc"
        [ $rc -eq 124 ] && why="timed out after $limit s (WEFT_MPI_RUN_TIMEOUT)"
    elif ! grep -q "^PASS $name\b" "$log"; then
        why="no PASS line"
    elif [ "$nodes_tcp" != "$node_a $node_b " ]; then
        why="PEs on both nodes should have connected over tcp; tcp connections logged on: ${nodes_tcp:-none}"
    fi
    if [ -n "$why" ]; then
        fail "OpenSHMEM $name, $np PEs on 2 nodes${*:+ $*} ($why)"
        return 1
    fi
    echo "ok:   OpenSHMEM $name, $np PEs on 2 nodes${*:+ $*} ($((SECONDS - t0)) s):" \
        "$(grep -m1 "^PASS $name" "$log" | sed 's/^PASS [a-z_]*: //')"
    passed=$((passed + 1))
}

if [ ! -x "$oshcc" ] || [ ! -x "$oshrun" ] || [ ! -e "$build/libweft-shmem.la" ]; then
    fail "OpenSHMEM: $oshcc, $oshrun or libweft-shmem.la is not built (make check-netns builds them)"
else
    shmem_programs=""
    for f in "$top"/test/shmem/*.c "$top"/test/shmem/*.cpp; do
        [ -e "$f" ] || continue
        name=$(basename "${f%.cpp}" .c)
        cc=$oshcc flags="-std=gnu11 -O1"
        [ "${f%.cpp}" != "$f" ] && cc=$oshcxx flags="-std=gnu++17 -O1"
        # shellcheck disable=SC2086 # flags is a list of flags
        if "$cc" $flags -o "$shmem_bin/$name" "$f" -lm >"$log" 2>&1; then
            shmem_programs+=" $name"
        else
            fail "OpenSHMEM: $name does not compile"
        fi
    done
    before=$(rx_bytes "$node_b")
    for name in $shmem_programs; do
        run_shmem "$name" 2 -x WEFT_LOG_LEVEL=tcp:debug
    done
    for name in shmem_rma shmem_amo shmem_sync shmem_coll; do
        [[ " $shmem_programs " == *" $name "* ]] || continue
        if [ "$name" = shmem_rma ]; then
            if run_shmem "$name" 4 -x WEFT_LOG_LEVEL=debug; then
                echo "      transport per pair of PEs (WEFT_LOG_LEVEL=debug, 4 PEs):"
                awk -f "$here/pair_transports.awk" "$log" ||
                    fail "a pair of PEs on two nodes chose shm or self"
            fi
        else
            run_shmem "$name" 4 -x WEFT_LOG_LEVEL=tcp:debug
        fi
    done
    crossed=$(($(rx_bytes "$node_b") - before))
    if [ "$crossed" -lt 1000000 ]; then
        fail "OpenSHMEM: only $crossed bytes crossed the veth pair"
    else
        echo "      OpenSHMEM: $((crossed / 1000)) kB into $node_b over the veth pair"
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
