#!/usr/bin/env bash
# perf/coll/ab_env.sh -- coll weft against itself with one environment
# variable at two (or more) values: paired launches, alternating, same build
# (docs/performance.md, "Single copy"). Run from a build directory.
# BUILD=dir1,dir2 instead pairs two build directories (before and after).
#
#   perf/coll/ab_env.sh [-n LAUNCHES] [-p RANKS] -b BENCHES -s SIZES VAR=v1,v2[,...]
#
# Prints one line per launch, benchmark and size (launch, value, benchmark,
# size, us), then per benchmark and size the min and median of each value and
# the median of the per-launch ratios of each value to the first.
set -euo pipefail
n=10 np=2 benches= sizes=
while [ $# -gt 1 ]; do
    case "$1" in
        -n) n=$2; shift 2 ;;
        -p) np=$2; shift 2 ;;
        -b) benches=$2; shift 2 ;;
        -s) sizes=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] && [ -n "$benches" ] && [ -n "$sizes" ] || {
    sed -n '2,12p' "$0" >&2
    exit 2
}
var=${1%%=*}
vals=${1#*=}
bench=./perf/coll/coll_bench
libs=$PWD/.libs
[ -x "$bench" ] && [ -e "$libs/mca_coll_weft.so" ] || {
    echo "ab_env.sh: run from a build directory (no $bench or $libs/mca_coll_weft.so)" >&2
    exit 2
}
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
launch=(mpirun -np "$np")
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
if [ "$np" -le "$(nproc)" ]; then launch+=(--bind-to core); else launch+=(--bind-to none --oversubscribe); fi
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for i in $(seq 1 "$n"); do
    for v in ${vals//,/ }; do
        b=$bench l=$libs env=(-x "$var=$v")
        if [ "$var" = BUILD ]; then
            b=$v/perf/coll/coll_bench l=$v/.libs env=()
        fi
        "${launch[@]}" --mca mca_base_component_path "$l:$ompi_dir" --mca pml cm --mca mtl weft \
            "${env[@]}" "$b" -b "$benches" -s "$sizes" 2>/dev/null |
            awk -v i="$i" -v v="$v" '$1 !~ /^#/ && NF >= 3 {print i, v, $1, $2, $3}' | tee -a "$raw"
    done
done
echo "# $var: min and median per value; ratio: median of the per-launch ratios to ${vals%%,*}"
sort -k3,3 -k4,4n -k2,2 -k1,1n "$raw" | awk -v first="${vals%%,*}" '
function med(a, k,   m, i, j, t) { m = k; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
{ key = $3 " " $4; t[key, $2, $1] = $5; if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
  if (!((key, $2) in vs)) { vs[key, $2] = 1; vlist[key] = vlist[key] " " $2 } launches[$1] = 1 }
END {
    for (q = 1; q <= nk; q++) {
        key = keys[q]; line = key; split(substr(vlist[key], 2), vv, " ")
        for (w = 1; w in vv; w++) {
            delete a; delete r; k = 0; kr = 0; mn = ""
            for (l in launches) if ((key, vv[w], l) in t) {
                x = t[key, vv[w], l]; a[++k] = x; if (mn == "" || x < mn) mn = x
                if ((key, first, l) in t) r[++kr] = x / t[key, first, l]
            }
            line = line sprintf("  %s: min %.2f med %.2f", vv[w], mn, med(a, k))
            if (vv[w] != first) line = line sprintf(" ratio %.3f", med(r, kr))
        }
        print line
    }
}'
