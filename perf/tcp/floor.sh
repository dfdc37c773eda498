#!/usr/bin/env bash
# perf/tcp/floor.sh -- how close to the kernel does tcp latency get? Across the
# network namespaces of contrib/netns/weft-netns (up first, as root), rounds
# alternate: weft_perf lat (weft over its tcp transport and UCX_TLS=tcp,
# interleaved rep by rep) and perf/tcp/tcp_floor, a bare TCP ping-pong with no
# library at all, polling with recv() alone ("spin") and with epoll_wait() then
# recv() ("epoll", the shape of both libraries' progress). The floor is what
# a library's latency cannot go below on this kernel; docs/performance.md
# "tcp latency floor" compares issue 14's target (<= 0.8x UCX) with it.
#
#   perf/tcp/floor.sh [--rounds N] [--sizes LIST] [--out DIR]     (from the build directory)
set -euo pipefail

die() {
    echo "floor.sh: error: $*" >&2
    exit 1
}

rounds=3
sizes="8,1024"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) [ $# -ge 2 ] || die "--rounds needs a number"; rounds="$2"; shift 2 ;;
        --sizes) [ $# -ge 2 ] || die "--sizes needs a list"; sizes="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
done
case "$rounds" in ''|*[!0-9]*) die "--rounds needs a number" ;; esac

src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
netns="$src_dir/contrib/netns/weft-netns"
floor=./perf/tcp/tcp_floor
weft_perf=./perf/weft_perf
[ -x "$floor" ] || die "no $floor here: run from the build directory after make"
[ -x "$weft_perf" ] || die "no $weft_perf here: run from the build directory after make"
"$netns" status >/dev/null 2>&1 || die "the network namespaces are not up ($netns up, as root)"
server_addr=198.19.14.2  # weftB (contrib/netns/weft-netns)

log=$(mktemp "${TMPDIR:-/tmp}/weft_floor.XXXXXX")
trap 'rm -f "$log"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}

floor_run() {  # floor_run SIZE MODE: one tcp_floor pair, 10 reps
    "$netns" exec weftB "$floor" server "$server_addr" "$1" "$2" 10 20000 &
    local srv=$!
    "$netns" exec weftA "$floor" client "$server_addr" "$1" "$2" 10 20000 || {
        kill "$srv" 2>/dev/null
        die "tcp_floor failed"
    }
    wait "$srv" || die "tcp_floor's server failed"
}

[ -z "$out" ] || mkdir -p "$out"
IFS=',' read -r -a size_list <<<"$sizes"
for round in $(seq 1 "$rounds"); do
    echo "# round $round"
    UCX_TLS=tcp "$netns" mpirun -np 2 --map-by node -x UCX_TLS "$weft_perf" -b lat -t tcp \
        -s "$sizes" --no-verify -r 10 >"$log" 2>&1 || { cat "$log" >&2; die "weft_perf failed"; }
    awk -v r="$round" '/^ +[0-9]/ { printf "weft_perf size %s: weft min %s median %s, ucx min %s median %s us one-way (round %s)\n", $1, $2, $3, $4, $5, r }' "$log"
    for s in "${size_list[@]}"; do
        floor_run "$s" spin
        floor_run "$s" epoll
    done
done | tee "${out:+$out/}floor.txt.tmp"

# Per size: medians over rounds of each round's median.
summary=$(awk '
    function med(key,   m, a, b, x, t) {
        m = n[key]; for (a = 1; a <= m; a++) t[a] = v[key, a]
        for (a = 2; a <= m; a++) { x = t[a]; for (b = a - 1; b >= 1 && t[b] > x; b--) t[b + 1] = t[b]; t[b + 1] = x }
        return (m % 2) ? t[(m + 1) / 2] : (t[m / 2] + t[m / 2 + 1]) / 2
    }
    /^weft_perf/ { s = $3; sub(":", "", s); sz[s] = 1; v["weft", s, ++n["weft", s]] = $8 + 0; v["ucx", s, ++n["ucx", s]] = $13 + 0 }
    /^tcp_floor/ { s = $4; sub(":", "", s); sz[s] = 1; v[$2, s, ++n[$2, s]] = $8 + 0 }
    END {
        printf "# medians over rounds (us one-way); the target is 0.8 x ucx\n"
        printf "%8s %8s %8s %10s %8s %8s %12s\n", "size", "weft", "ucx", "0.8 x ucx", "spin", "epoll", "spin / ucx"
        for (s in sz) {
            w = med("weft" SUBSEP s); u = med("ucx" SUBSEP s)
            sp = med("spin" SUBSEP s); ep = med("epoll" SUBSEP s)
            printf "%8s %8.3f %8.3f %10.3f %8.3f %8.3f %12.3f\n", s, w, u, 0.8 * u, sp, ep, sp / u
        }
    }' "${out:+$out/}floor.txt.tmp")
echo "$summary"
if [ -n "$out" ]; then
    { cat "$out/floor.txt.tmp"; echo "$summary"; } >"$out/floor.txt"
fi
rm -f "${out:+$out/}floor.txt.tmp"
