#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run the main job: MPI latency and
# bandwidth on 2 ranks, Open MPI over weft (pml cm + mtl weft) vs pml ucx vs
# ob1 + vader, interleaved (perf/mpi/compare.sh). Arguments go to compare.sh
# (e.g. --quick, --csv FILE, --out DIR). The transport-level weft-vs-UCX
# comparison is perf/compare.sh (README).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"
build=${WEFT_BUILD_DIR:-$top/build}
exec "$top/perf/mpi/compare.sh" --bench-bin "$build/perf/mpi/mpi_bench" --bench lat,bw --np 2 \
    --out "$top/perf/results/mpi" "$@"
