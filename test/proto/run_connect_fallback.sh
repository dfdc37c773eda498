#!/usr/bin/env bash
# make check: a transport that reaches a peer on paper but cannot connect to it
# is passed over for the next one (proto/channel.cpp connect_peer), not turned
# into a failed peer. Rank 1 runs in a mount namespace with a /dev/shm of its
# own: both ranks have the same node id, so shm says it reaches the other, but
# neither can map the other's segment. Each must then connect over tcp (logged
# "address N (pid P) uses transport tcp") and the ping-pong must run with its
# data checked (weft_perf --verify). Needs root (unshare -m, mount) and the tcp
# transport: otherwise a visible skip (exit 77) with the reason.
set -u

wp="${WEFT_PERF:-./perf/weft_perf}"
[ -x "$wp" ] || { echo "FAIL: $wp is not built"; exit 1; }
mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root for a private /dev/shm (unshare -m)"
    exit 77
fi
if ! unshare -m true 2>/dev/null; then
    echo "SKIP: unshare -m is not permitted here"
    exit 77
fi
info="${WEFT_INFO:-./weft_info}"
if [ -x "$info" ] && ! "$info" 2>/dev/null | grep -qw tcp; then
    echo "SKIP: the tcp transport is not built in (weft_info does not list it)"
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/private-shm" <<'EOF'
#!/bin/sh
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then
    exec unshare -m sh -c 'mount -t tmpfs weft-test /dev/shm && exec "$@"' sh "$@"
fi
exec "$@"
EOF
chmod +x "$tmp/private-shm"

launch=("$mpirun" -np 2 --bind-to none -x WEFT_LOG_LEVEL)
if "$mpirun" --version 2>/dev/null | grep -qi 'open mpi'; then
    launch+=(--allow-run-as-root)
fi
export WEFT_LOG_LEVEL=proto:debug,warn
if ! timeout 120 "${launch[@]}" "$tmp/private-shm" "$wp" -b lat,bw -B weft -t auto \
    -s 8,4k,64k,1m -r 2 --verify >"$tmp/out" 2>&1; then
    cat "$tmp/out"
    echo "FAIL: weft_perf over the fallback transport failed"
    exit 1
fi
fails=0
for r in 0 1; do
    other=$((1 - r))
    if ! grep -q ":$r\] weft proto debug: address $other (pid [0-9]*) uses transport tcp" "$tmp/out"; then
        echo "FAIL: rank $r did not connect to rank $other over tcp"
        fails=1
    fi
    if ! grep -q ":$r\] weft proto info: address $other (pid [0-9]*): shm cannot connect" "$tmp/out"; then
        echo "FAIL: rank $r did not report that shm could not connect to rank $other"
        fails=1
    fi
done
if [ "$fails" != 0 ]; then
    grep -v '^#' "$tmp/out" | head -40
    exit 1
fi
echo "PASS: shm could not connect across the private /dev/shm; both ranks fell back to tcp"
