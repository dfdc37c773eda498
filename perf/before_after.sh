#!/usr/bin/env bash
# perf/before_after.sh -- is a change slower? Two builds of weft_perf (before
# and after a change) measured on the same machine in one session, their runs
# alternating: before, after, before, after, ... so that the machine's slow and
# fast phases hit both alike. Each run is perf/compare.sh with the weft backend
# (10 interleaved reps per size inside it), one benchmark at a time, both builds
# back to back. Per size and build the table keeps the best rep and the median
# of the runs' medians; ratio.paired is the median over runs of after/before
# measured side by side, the one to trust when the machine changes speed
# during the session. See docs/performance.md.
#
#   perf/before_after.sh --before OLD_WEFT_PERF [--after NEW_WEFT_PERF] [options]
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/before_after.sh --before PATH [options]
  --before PATH   weft_perf of the build before the change (required)
  --after PATH    weft_perf of the build after it (default: ./perf/weft_perf)
  --runs N        alternations (default 6: 6 runs of each build, 60 reps per size)
  --bench LIST    benchmarks (default lat,bw,bibw,rate)
  --quick         compare.sh's subset of sizes
  --sizes LIST    these sizes (compare.sh --sizes)
  --netns         one process in each network namespace (compare.sh --netns:
                  contrib/netns/weft-netns up first; weft over its tcp transport)
  --before-env VAR=VALUE, --after-env VAR=VALUE (repeatable)
                  run that side with these variables set: one build measured
                  two ways, e.g. --before build/perf/weft_perf
                  --before-env WEFT_RNDV_GET_MIN=inf --after build/perf/weft_perf
                  --after-env WEFT_RNDV_GET_MIN=0
  --out DIR       write DIR/before_after.txt and DIR/before_after.csv (default ./before-after)
  -h, --help
EOF
}
die() {
    echo "before_after.sh: error: $*" >&2
    exit 1
}

before=""
after="./perf/weft_perf"
runs=6
benches="lat,bw,bibw,rate"
quick=()
out="before-after"
before_env=()
after_env=()
while [ $# -gt 0 ]; do
    case "$1" in
        --before) [ $# -ge 2 ] || die "--before needs a path"; before="$2"; shift 2 ;;
        --after) [ $# -ge 2 ] || die "--after needs a path"; after="$2"; shift 2 ;;
        --runs) [ $# -ge 2 ] || die "--runs needs a number"; runs="$2"; shift 2 ;;
        --bench) [ $# -ge 2 ] || die "--bench needs a list"; benches="$2"; shift 2 ;;
        --quick) quick+=(--quick); shift ;;
        --netns) quick+=(--netns); shift ;;
        --sizes) [ $# -ge 2 ] || die "--sizes needs a list"; quick+=(--sizes "$2"); shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        --before-env|--after-env)
            [ $# -ge 2 ] || die "$1 needs VAR=VALUE"
            case "$2" in [A-Za-z_]*=*) ;; *) die "$1 needs VAR=VALUE, not '$2'" ;; esac
            if [ "$1" = --before-env ]; then before_env+=("$2"); else after_env+=("$2"); fi
            shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
[ -n "$before" ] || { usage >&2; die "--before is required"; }
[ -x "$before" ] || die "$before is not an executable"
[ -x "$after" ] || die "$after is not an executable"
case "$runs" in ''|*[!0-9]*) die "--runs needs a number" ;; esac
[ "$runs" -ge 1 ] || die "--runs must be at least 1"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/weft_before_after.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build,run,benchmark,size,min,median" >"$work/all.csv"

# A side with variables of its own runs through a wrapper that sets them
# (compare.sh and mpirun pass the environment on to both ranks).
wrap() {  # wrap NAME BIN VAR=VALUE...: print the program to run for that side
    local name=$1 bin=$2
    shift 2
    if [ $# -eq 0 ]; then
        echo "$bin"
        return
    fi
    local w="$work/$name"
    {
        echo '#!/bin/sh'
        printf 'exec env'
        printf " %q" "$@"
        printf " %q \"\$@\"\n" "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
    } >"$w"
    chmod +x "$w"
    echo "$w"
}
before=$(wrap before "$before" "${before_env[@]+"${before_env[@]}"}")
after=$(wrap after "$after" "${after_env[@]+"${after_env[@]}"}")

# One verification pass of each build first (every message checked).
for which in before after; do
    bin=$before
    [ "$which" = after ] && bin=$after
    "$here/compare.sh" --backend weft --bench "$benches" "${quick[@]}" --weft-perf "$bin" \
        --csv "$work/check.csv" >"$work/check.log" 2>&1 ||
        { tail -30 "$work/check.log" >&2; die "$which: compare.sh failed"; }
done
echo "before_after.sh: both builds verified; $runs alternations" >&2

# Each run measures one benchmark with both builds back to back, the order
# flipped every run (before, after; after, before; ...), so a slow phase of the
# machine (minutes long on this kind of host) falls on both alike; the paired
# ratio below compares only measurements taken side by side.
IFS=',' read -r -a bench_list <<<"$benches"
for run in $(seq 1 "$runs"); do
    order=(before after)
    [ $((run % 2)) -eq 0 ] && order=(after before)
    for bench in "${bench_list[@]}"; do
        for which in "${order[@]}"; do
            bin=$before
            [ "$which" = after ] && bin=$after
            "$here/compare.sh" --backend weft --no-check --bench "$bench" "${quick[@]}" \
                --weft-perf "$bin" --csv "$work/run.csv" >"$work/run.log" 2>&1 ||
                { tail -30 "$work/run.log" >&2; die "$which run $run ($bench) failed"; }
            awk -F, -v w="$which" -v r="$run" 'NR > 1 { print w "," r "," $1 "," $2 "," $4 "," $5 }' \
                "$work/run.csv" >>"$work/all.csv"
        done
        printf '%s ' "$bench" >&2
    done
    echo "(run $run: ${order[*]})" >&2
done

# Per benchmark, size and build: best = the best rep of every run (min for
# latency, max for the others); median = the median of the runs' medians.
# ratio = after / before (latency: below 1 is faster; others: above 1).
mkdir -p "$out"
awk -F, '
    NR == 1 { next }
    {
        k = $3 SUBSEP $4
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        g = k SUBSEP $1
        lat = ($3 == "lat" || $3 ~ /_lat$/ || $3 == "put_pp")  # times: lower is better
        # compare.sh: latency min = the best rep; bandwidth/rate min = the worst
        # rep, so the best rep of those is not in the CSV: use the median there.
        if (!(g in best) || (lat && $5 < best[g]) || (!lat && $6 > best[g])) best[g] = lat ? $5 : $6
        v[g, ++n[g]] = $6
        run[g, $2] = $6
        if ($2 > maxrun) maxrun = $2
    }
    function median(g,   m, a, b, x, s) {
        m = n[g]
        for (a = 1; a <= m; a++) s[a] = v[g, a]
        for (a = 2; a <= m; a++) { x = s[a]; for (b = a - 1; b >= 1 && s[b] > x; b--) s[b + 1] = s[b]; s[b + 1] = x }
        return (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
    }
    END {
        print "benchmark,size,before_best,before_median,after_best,after_median,ratio_best,ratio_median,ratio_paired"
        for (i = 1; i <= nk; i++) {
            k = keys[i]; split(k, f, SUBSEP)
            bb = best[k, "before"]; ab = best[k, "after"]
            bm = median(k SUBSEP "before"); am = median(k SUBSEP "after")
            rb = bb > 0 ? ab / bb : 0
            rm = bm > 0 ? am / bm : 0
            # paired: the median over runs of (after / before) within one run
            pk = k SUBSEP "paired"; n[pk] = 0
            for (r = 1; r <= maxrun; r++)
                if ((k, "before", r) in run && (k, "after", r) in run && run[k, "before", r] > 0)
                    v[pk, ++n[pk]] = run[k, "after", r] / run[k, "before", r]
            rp = n[pk] > 0 ? median(pk) : 0
            printf "%s,%s,%.6g,%.6g,%.6g,%.6g,%.4f,%.4f,%.4f\n", f[1], f[2], bb, bm, ab, am, rb, rm, rp
        }
    }' "$work/all.csv" >"$out/before_after.csv"
cp "$work/all.csv" "$out/raw.csv"

awk -F, -v runs="$runs" '
    NR == 1 { next }
    $1 != cur {
        cur = $1
        unit = (cur == "lat" || cur ~ /_lat$/ || cur == "put_pp") ? "us, lower is better" : (cur ~ /rate$/ ? "messages/s, higher is better" : "MB/s, higher is better")
        printf "\n# %s (%s); %d runs of each build, alternating; ratio = after / before\n", cur, unit, runs
        printf "%10s %14s %14s %14s %14s %11s %12s %12s\n", "size", "before.best", "before.median", "after.best", "after.median", "ratio.best", "ratio.median", "ratio.paired"
    }
    { printf "%10s %14.4g %14.4g %14.4g %14.4g %11.3f %12.3f %12.3f\n", $2, $3, $4, $5, $6, $7, $8, $9 }
' "$out/before_after.csv" | tee "$out/before_after.txt"
echo "before_after.sh: wrote $out/before_after.txt, before_after.csv, raw.csv" >&2
