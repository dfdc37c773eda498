#!/usr/bin/env bash
# run-two-rxe-vms.sh -- run one command across two throw-away Soft-RoCE VMs
# joined by a virtual Ethernet link (docs/multinode.md, "Two VMs").
#
#   run-two-rxe-vms.sh [options] [--] command [args...]
#
# Two VMs of run-in-rxe-vm.sh (same kernel, the host's userland over 9p, the
# work directory at the same path in both) boot at once, each with a
# virtio-net card on one shared link (QEMU dgram sockets) and an rxe device
# on it:
#
#   VM    host name  eth0             IPv6           rxe
#   A     vmA        198.18.1.1/24    fd77:1a::1/64  rxe0 on eth0
#   B     vmB        198.18.1.2/24    fd77:1a::2/64  rxe0 on eth0
#
# RDMA between the two rxe0 devices, and TCP between the two addresses, cross
# the link. Both VMs' /etc/hosts name vmA and vmB, and both have a /dev/shm
# (shared memory between the ranks of one VM). VM B runs a command server
# (contrib/rxe-vm/rxe-rexec --serve); the command runs in VM A, and when it
# ends VM B is stopped. From the command, `rxe-rexec vmB CMD...` runs CMD on
# VM B (like ssh), and mpirun starts ranks on both VMs through it:
#
#   $RXE_MPIRUN -np 2 ./app        # one rank per VM
#
# Environment of the command (VM A): what run-in-rxe-vm.sh sets for -L
# (RXE_DEV0=rxe0, RXE_GID0, RXE_IP0, RXE_LINK_IP, RXE_LINK_IP6, ...) and
#   RXE_PEER=vmB  RXE_PEER_IP=198.18.1.2  RXE_PEER_IP6=fd77:1a::2
#   RXE_REXEC     the path of rxe-rexec
#   RXE_HOSTFILE  an mpirun hostfile: vmA slots=1, vmB slots=1
#   RXE_MPIRUN    contrib/rxe-vm/rxe-vm-mpirun: mpirun with that hostfile,
#                 --mca plm_rsh_agent rxe-rexec and --mca oob_tcp_if_include /
#                 btl_tcp_if_include 198.18.1.0/24 (and --allow-run-as-root)
#
# Options
#   -C DIR      host directory shared read-write with both VMs (default $PWD)
#   -t SECONDS  time limit of each VM (default 900)
#   -m MEM      memory of each VM (default 2G)
#   -c CPUS     vCPUs of each VM (default 1: two VMs on a 2-core host)
#   -e VAR=VAL  environment for the command and for what runs on VM B (repeatable)
#   -a ACCEL    as run-in-rxe-vm.sh (auto | kvm | tcg)
#   -v          verbose: both guests' kernel consoles, and VM B's own output
#   -q          quiet
#   -h          help
#
# Exit status: the command's; 77 when the VMs cannot run here (as
# run-in-rxe-vm.sh: not root, no qemu or kernel); 124 time limit; 125 a VM
# failed (VM B's output is printed).
#
# Cost (2-core host, TCG): both VMs up and `rping -C 5` across in about 14 s.
set -euo pipefail
PROG=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vm=${RXE_VM_SCRIPT:-$here/run-in-rxe-vm.sh}
rexec=$here/rxe-rexec

WORKDIR=$PWD
TIMEOUT=900
MEM=2G
CPUS=1
ACCEL=${RXE_VM_ACCEL:-auto}
VERBOSE=0
QUIET=${RXE_VM_QUIET:-0}
declare -a EXTRA_ENV=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p' | sed '/^set -euo/d'; }
note() { [ "$QUIET" = 1 ] || echo "$PROG: $*" >&2; }

while getopts ":C:t:m:c:e:a:vqh" opt; do
    case $opt in
        C) WORKDIR=$OPTARG ;;
        t) TIMEOUT=$OPTARG ;;
        m) MEM=$OPTARG ;;
        c) CPUS=$OPTARG ;;
        e) EXTRA_ENV+=("$OPTARG") ;;
        a) ACCEL=$OPTARG ;;
        v) VERBOSE=1 ;;
        q) QUIET=1 ;;
        h)
            usage
            exit 0
            ;;
        :)
            echo "$PROG: option -$OPTARG needs a value" >&2
            exit 2
            ;;
        *)
            echo "$PROG: unknown option -$OPTARG (try -h)" >&2
            exit 2
            ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || {
    echo "$PROG: no command given (try -h)" >&2
    exit 2
}
[ -x "$vm" ] || {
    echo "$PROG: no VM script at $vm" >&2
    exit 2
}

RUN=$(mktemp -d "${TMPDIR:-/tmp}/rxe-two-vms.XXXXXX")
BPID=""
cleanup() {
    # VM B dies with its run-in-rxe-vm.sh (which kills its QEMU on exit).
    if [ -n "$BPID" ] && kill -0 "$BPID" 2>/dev/null; then
        kill "$BPID" 2>/dev/null || true
        wait "$BPID" 2>/dev/null || true
    fi
    rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

common=(-C "$WORKDIR" -t "$TIMEOUT" -m "$MEM" -c "$CPUS" -a "$ACCEL")
for kv in ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"}; do
    common+=(-e "$kv")
done
[ "$QUIET" = 1 ] && common+=(-q)
[ "$VERBOSE" = 1 ] && common+=(-v)

# Both guests: the two names in /etc/hosts (the guest's root is a throw-away
# overlay), and a /dev/shm (run-in-rxe-vm.sh's guest has none: its mount
# finds no directory in the devtmpfs), so that ranks on one VM can use
# shared memory, as on a real node.
hosts='printf "198.18.1.1 vmA\n198.18.1.2 vmB\nfd77:1a::1 vmA\nfd77:1a::2 vmB\n" >>/etc/hosts
mkdir -p /dev/shm && { mountpoint -q /dev/shm || mount -t tmpfs -o mode=1777 tmpfs /dev/shm; }'

# VM B: the command server, until VM A's command has ended.
guest_b="$hosts; exec $(printf '%q' "$rexec") --serve"
note "booting vmA and vmB (link 198.18.1.0/24, rxe0 on eth0 in each)"
"$vm" "${common[@]}" -H vmB -L "$RUN/b.sock,$RUN/a.sock" -A 198.18.1.2/24 \
    -- bash -c "$guest_b" >"$RUN/b.log" 2>&1 &
BPID=$!

# VM A: wait for B's server, run the command, stop B.
guest_a=$(
    cat <<EOF
$hosts
export RXE_PEER=vmB RXE_PEER_IP=198.18.1.2 RXE_PEER_IP6=fd77:1a::2
export RXE_REXEC=$(printf '%q' "$rexec") RXE_HOSTFILE=/tmp/rxe-hostfile
export RXE_MPIRUN=$(printf '%q' "$here/rxe-vm-mpirun")
printf 'vmA slots=1\nvmB slots=1\n' >"\$RXE_HOSTFILE"
"\$RXE_REXEC" --wait vmB 300 || exit 125
"\$@"
rc=\$?
"\$RXE_REXEC" --stop vmB >/dev/null || echo "$PROG: could not stop vmB's server" >&2
exit \$rc
EOF
)
set +e
"$vm" "${common[@]}" -H vmA -L "$RUN/a.sock,$RUN/b.sock" -A 198.18.1.1/24 \
    -- bash -c "$guest_a" "$PROG" "$@"
rc=$?
# VM B powers off once its server stopped; give it a moment, then end it.
for _ in $(seq 1 60); do
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.5
done
if kill -0 "$BPID" 2>/dev/null; then
    note "vmB still running after vmA ended; stopping it"
    kill "$BPID" 2>/dev/null
fi
wait "$BPID"
brc=$?
BPID=""
set -e
if [ "$VERBOSE" = 1 ] || { [ "$brc" != 0 ] && [ "$brc" != 143 ]; } || [ "$rc" = 125 ]; then
    echo "$PROG: --- vmB's output (exit $brc):" >&2
    sed 's/^/[vmB] /' "$RUN/b.log" >&2
fi
if [ "$rc" = 0 ] && [ "$brc" != 0 ]; then
    [ "$brc" = 77 ] && exit 77
    echo "$PROG: vmB failed (exit $brc)" >&2
    exit 125
fi
exit "$rc"
