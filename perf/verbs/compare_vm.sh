#!/usr/bin/env bash
# weft vs UCX over verbs, side by side, in the Soft-RoCE VM: boots the VM
# (contrib/rxe-vm/run-in-rxe-vm.sh, two rxe ports on a veth pair) and runs
# perf/compare.sh inside it with rank 0 on rxe0 and rank 1 on rxe1
# (perf/verbs/mpirun_two_ports.sh), weft on its verbs transport and UCX on
# rc_verbs. Software emulation: the numbers compare software paths, not
# hardware (docs/performance.md).
#
#   perf/verbs/compare_vm.sh [--build DIR] [compare.sh options] [-- weft_perf options]
#
# Run from the source tree or a build tree; --build names the build directory
# (default: the current directory if it has perf/weft_perf, else ./build).
# compare.sh options, e.g. --quick --bench lat,bw --out DIR (a path inside the
# build directory: the VM shares only that), --csv FILE.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
build=""
if [ "${1:-}" = --build ]; then
    build=$(cd "$2" && pwd)
    shift 2
elif [ -x ./perf/weft_perf ]; then
    build=$(pwd)
else
    build="$top/build"
fi
[ -x "$build/perf/weft_perf" ] || { echo "compare_vm.sh: $build/perf/weft_perf is not built" >&2; exit 1; }
vm=${WEFT_RXE_VM:-$top/contrib/rxe-vm/run-in-rxe-vm.sh}
# compare.sh's own options, then (after --) weft_perf's, to which -t verbs is added.
pass=()
extra=()
while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
        shift
        extra=("$@")
        break
    fi
    pass+=("$1")
    shift
done
guest="cd $(printf %q "$build") && \
UCX_TLS=rc_verbs,ud_verbs UCX_UD_VERBS_ETH_DGID_CHECK=n \
MPIRUN=$(printf %q "$here/mpirun_two_ports.sh") WEFT_PLOT_WHAT='verbs on Soft-RoCE, rxe0 to rxe1' \
$(printf %q "$top/perf/compare.sh") --weft-perf ./perf/weft_perf$(printf ' %q' ${pass[@]+"${pass[@]}"}) \
-- -t verbs$(printf ' %q' ${extra[@]+"${extra[@]}"})"
exec "$vm" -q -n 2 -t "${WEFT_VERBS_VM_TIMEOUT:-7200}" -C "$build" -- bash -c "$guest"
