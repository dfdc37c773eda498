#!/usr/bin/env bash
# Configure and build weft out of tree in ./build (or $WEFT_BUILD_DIR).
# Extra arguments go to configure (e.g. --enable-asan, --enable-debug).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$top/build}
cd "$top"
# autogen.sh finds the transports (src/transport/*/) and runs autoreconf.
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ ! -f config/transports.m4 ] ||
    [ -n "$(find src/transport -name configure.m4 -newer configure 2>/dev/null)" ]; then
    ./autogen.sh
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
    "$top/configure" "$@"
fi
make -j"$(nproc)"
echo "build: done in $build"
