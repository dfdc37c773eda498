#!/usr/bin/env bash
# The cost of credit-based flow control: weft_perf's weft backend with credits on
# (WEFT_CREDITS=y, the default) and off, interleaved (on, off, on, off, ...),
# ROUNDS rounds (default 10), each a weft_perf run of 3 reps of ITERS (20000) iterations; prints the minimum and
# median of each mode's per-round median and the ratio off/on - 1 as the cost.
# Usage: perf/credits_cost.sh [WEFT_PERF] [ROUNDS]
set -euo pipefail
perf=${1:-${WEFT_PERF:-./perf/weft_perf}}
rounds=${2:-10}
[ -x "$perf" ] || { echo "credits_cost: no weft_perf at $perf" >&2; exit 2; }
mpirun=(mpirun -np 2 --bind-to core)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # mode bench size -> appends the weft median to $tmp/<bench>-<size>-<mode>
    WEFT_CREDITS=$1 "${mpirun[@]}" -x WEFT_CREDITS "$perf" -B weft -b "$2" -s "$3" -r 3 -i "${ITERS:-20000}" \
        --no-verify 2>/dev/null | awk -v f="$tmp/$2-$3-$1" '/^ +[0-9]/ { print $3 >> f }'
}
cases=("lat 8" "rate 8" "bw 64k" "bw 1m")
for ((i = 0; i < rounds; i++)); do
    for c in "${cases[@]}"; do
        set -- $c
        run y "$1" "$2"
        run n "$1" "$2"
    done
done
stats() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %s", v[1], m }'; }
printf '%-6s %-5s %14s %14s %14s %14s %10s\n' bench size on.min on.median off.min off.median cost
for c in "${cases[@]}"; do
    set -- $c
    read -r onmin onmed <<<"$(stats "$tmp/$1-$2-y")"
    read -r offmin offmed <<<"$(stats "$tmp/$1-$2-n")"
    # Latency: lower is better, so the cost is on/off - 1; bandwidth and rate: off/on - 1.
    if [ "$1" = lat ]; then
        cost=$(awk -v a="$onmed" -v b="$offmed" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }')
    else
        cost=$(awk -v a="$onmed" -v b="$offmed" 'BEGIN { printf "%+.1f%%", (b / a - 1) * 100 }')
    fi
    printf '%-6s %-5s %14s %14s %14s %14s %10s\n' "$1" "$2" "$onmin" "$onmed" "$offmin" "$offmed" "$cost"
done
