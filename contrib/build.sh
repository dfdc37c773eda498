#!/usr/bin/env bash
# Configure and build weft out of tree in ./build (or $WEFT_BUILD_DIR).
# Extra arguments go to configure (e.g. --enable-asan, --enable-debug).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$top/build}
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    autoreconf -fi
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
    "$top/configure" "$@"
fi
make -j"$(nproc)"
echo "build: done in $build"
