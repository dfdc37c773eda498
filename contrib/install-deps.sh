#!/usr/bin/env bash
# Install every Debian 12 package weft needs to build, test and benchmark.
# Idempotent: packages already present are left alone; apt-get runs only when
# something is missing.
set -euo pipefail

packages=(
    # toolchain and build system
    build-essential autoconf automake libtool pkg-config
    # unit tests
    googletest libgtest-dev
    # dependencies found by configure
    libpmix-dev libhwloc-dev libibverbs-dev rdma-core ibverbs-utils
    libopenmpi-dev openmpi-bin
    # comparison backend (UCX), used by perf/ only
    libucx-dev ucx-utils
    # protocol model checking (credits), plots, checkers
    spin gnuplot-nox valgrind clang-format
    # fuzzing (test/fuzz: libFuzzer comes with clang's runtime libraries)
    clang libclang-rt-14-dev
    # the Soft-RoCE VM of the verbs tests (contrib/rxe-vm/run-in-rxe-vm.sh; it
    # fetches Debian's kernel package itself, once, into ~/.cache/rxe-vm)
    qemu-system-x86 busybox-static cpio kmod iproute2 ibverbs-providers rdmacm-utils xz-utils
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
