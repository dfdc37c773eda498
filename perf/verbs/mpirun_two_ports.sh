#!/usr/bin/env bash
# An MPIRUN for perf/compare.sh inside the Soft-RoCE VM: starts the two ranks
# on the two rxe ports (rank 0 on $WEFT_PORT0, rank 1 on $WEFT_PORT1), so that
# weft (WEFT_VERBS_DEVICE) and UCX (UCX_NET_DEVICES) both cross between devices.
# Takes compare.sh's "-np 2 [--bind-to core] [--allow-run-as-root] PROGRAM ARGS".
set -euo pipefail
port0=${WEFT_PORT0:-rxe0}
port1=${WEFT_PORT1:-rxe1}
opts=()
while [ $# -gt 0 ]; do
    case "$1" in
        -np) [ "$2" = 2 ] || { echo "mpirun_two_ports.sh: only -np 2" >&2; exit 2; }; shift 2 ;;
        --bind-to) opts+=("$1" "$2"); shift 2 ;;
        --allow-run-as-root) opts+=("$1"); shift ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "mpirun_two_ports.sh: no program" >&2; exit 2; }
exec "${MPIRUN_REAL:-mpirun}" "${opts[@]}" \
    -np 1 -x WEFT_VERBS_DEVICE="$port0" -x UCX_NET_DEVICES="$port0:1" "$@" : \
    -np 1 -x WEFT_VERBS_DEVICE="$port1" -x UCX_NET_DEVICES="$port1:1" "$@"
