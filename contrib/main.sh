#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run the main job: the weft-vs-UCX
# comparison on shared memory (perf/compare.sh). Arguments go to compare.sh
# (e.g. --quick, --csv FILE, --out DIR).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"
build=${WEFT_BUILD_DIR:-$top/build}
export WEFT_PERF="$build/weft_perf"
exec "$top/perf/compare.sh" --out "$top/perf/results" "$@"
