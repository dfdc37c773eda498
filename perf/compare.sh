#!/usr/bin/env bash
# perf/compare.sh -- weft vs UCX, side by side: runs perf/weft_perf under
# `mpirun -np 2` for lat, bw, bibw and rate, then writes a table and a plot.
# See docs/performance.md.
#
#   perf/compare.sh [options] [WEFT_PERF]
#
# Each benchmark first runs once with --verify (every message filled and
# checked, few iterations, every size), then timed with --no-verify. Both
# backends run in the same process pair, interleaved rep by rep (weft_perf does
# the interleaving), at least 10 reps per size.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/compare.sh [options] [WEFT_PERF]
  WEFT_PERF, --weft-perf PATH  the weft_perf program (default: $WEFT_PERF, else
                         ./perf/weft_perf in the current (build) directory, else
                         searched in build trees next to the sources, else PATH)
  --csv FILE             write every benchmark's rows (benchmark,size,backend,min,median)
                         into one CSV
  --out DIR              write DIR/results.txt (the tables), DIR/results.md,
                         DIR/results.csv and DIR/results.png (needs gnuplot)
  --quick                a subset of sizes and fewer iterations per rep (still 10 reps)
  --bench LIST           benchmarks, comma-separated (default lat,bw,bibw,rate)
  --backend LIST         backends (default weft,ucx; e.g. ucx alone)
  --reps N               interleaved repetitions per size (default 10, at least 10)
  --no-check             skip the --verify pass before the timed runs
  -h, --help
Arguments after -- go to weft_perf unchanged (e.g. -- --window 128).
Environment: MPIRUN (default mpirun), UCX_TLS (passed through; unset = UCX's choice),
WEFT_PLOT_WHAT (the plot title's transport, default "shared memory").
EOF
}

die() {
    echo "compare.sh: error: $*" >&2
    exit 1
}

benches="lat,bw,bibw,rate"
backends="weft,ucx"
csv=""
out=""
quick=0
check=1
reps=10
weft_perf=""
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
        --csv) [ $# -ge 2 ] || die "--csv needs a file"; csv="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --bench) [ $# -ge 2 ] || die "--bench needs a list"; benches="$2"; shift 2 ;;
        --backend) [ $# -ge 2 ] || die "--backend needs a list"; backends="$2"; shift 2 ;;
        --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps="$2"; shift 2 ;;
        --no-check) check=0; shift ;;
        --weft-perf) [ $# -ge 2 ] || die "--weft-perf needs a path"; weft_perf="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        -*) usage >&2; die "unknown option $1" ;;
        *) weft_perf="$1"; shift ;;
    esac
done

case "$reps" in
    ''|*[!0-9]*) die "--reps needs a number" ;;
esac
[ "$reps" -ge 10 ] || die "--reps must be at least 10 (min and median over fewer are noise)"

# ------------------------------------------------------------------ find weft_perf
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src_dir=$(cd "$script_dir/.." && pwd)
if [ -n "$weft_perf" ]; then
    [ -x "$weft_perf" ] || die "$weft_perf (the argument) is not an executable"
elif [ -n "${WEFT_PERF:-}" ] && [ -x "$WEFT_PERF" ] && [ -f "$WEFT_PERF" ]; then
    weft_perf="$WEFT_PERF"
else
    if [ -n "${WEFT_PERF:-}" ]; then
        echo "compare.sh: warning: \$WEFT_PERF=$WEFT_PERF is not an executable; searching" >&2
    fi
    for c in ./perf/weft_perf ./weft_perf "$src_dir/perf/weft_perf" \
             "$src_dir"/build*/perf/weft_perf "$src_dir"/../build*/perf/weft_perf; do
        if [ -x "$c" ] && [ -f "$c" ]; then
            weft_perf="$c"
            break
        fi
    done
    if [ -z "$weft_perf" ] && command -v weft_perf >/dev/null 2>&1; then
        weft_perf=$(command -v weft_perf)
    fi
    [ -n "$weft_perf" ] || die "weft_perf not found: build it (make perf/weft_perf in the build \
directory), then run this script from the build directory, or pass its path (or set WEFT_PERF)"
fi
echo "compare.sh: using $weft_perf" >&2

mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null 2>&1 || die "$mpirun not found (Open MPI's mpirun is the PMIx launcher)"
launch=("$mpirun" -np 2 --bind-to core)
if [ "$(id -u)" = 0 ]; then
    launch+=(--allow-run-as-root)
fi

# ------------------------------------------------------------------ sizes and iterations
if [ "$quick" = 1 ]; then
    sizes=(-s "1,8,64,512,4k,32k,256k,1m")
else
    sizes=()
fi
iters_for() {
    if [ "$quick" = 1 ]; then
        case "$1" in
            lat) echo "-i 500" ;;
            bw|bibw) echo "-i 20" ;;
            rate) echo "-i 50" ;;
        esac
    fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$work/results.txt"

IFS=',' read -r -a bench_list <<<"$benches"
for b in "${bench_list[@]}"; do
    case "$b" in
        lat|bw|bibw|rate) ;;
        *) die "unknown benchmark '$b' (lat, bw, bibw, rate)" ;;
    esac
done

# ------------------------------------------------------------------ correctness pass
if [ "$check" = 1 ]; then
    for b in "${bench_list[@]}"; do
        echo "compare.sh: $b: checking data (--verify, every size, few iterations)" >&2
        # shellcheck disable=SC2046
        if ! "${launch[@]}" "$weft_perf" -b "$b" -B "$backends" "${sizes[@]}" --verify \
                -i 5 -w 1 -r 1 "${extra[@]}" >"$work/check_$b.txt" 2>&1; then
            cat "$work/check_$b.txt" >&2
            die "$b: the --verify pass failed (see above)"
        fi
    done
fi

# ------------------------------------------------------------------ timed runs
for b in "${bench_list[@]}"; do
    echo "compare.sh: $b: timing ($reps interleaved reps per size)" >&2
    # shellcheck disable=SC2046
    if ! "${launch[@]}" "$weft_perf" -b "$b" -B "$backends" "${sizes[@]}" $(iters_for "$b") \
            -r "$reps" --no-verify --csv "$work/$b.csv" "${extra[@]}" | tee -a "$work/results.txt"; then
        die "$b: weft_perf failed"
    fi
done

echo "benchmark,size,backend,min,median" >"$work/results.csv"
for b in "${bench_list[@]}"; do
    tail -n +2 "$work/$b.csv" >>"$work/results.csv"
done
if [ -n "$csv" ]; then
    cp "$work/results.csv" "$csv"
    echo "compare.sh: wrote $csv" >&2
fi

[ -n "$out" ] || exit 0

# ------------------------------------------------------------------ --out: table, markdown, plot
mkdir -p "$out"
cp "$work/results.txt" "$out/results.txt"
cp "$work/results.csv" "$out/results.csv"

{
    echo "# weft vs UCX: weft_perf results"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host: $(hostname), $(nproc) cores, $(uname -sr)"
    if git -C "$src_dir" rev-parse --short HEAD >/dev/null 2>&1; then
        echo "- weft commit: $(git -C "$src_dir" rev-parse --short HEAD)"
    fi
    echo "- $(if [ "$quick" = 1 ]; then echo "quick run (subset of sizes, fewer iterations)"; else echo "full run"; fi), $reps interleaved reps per size, timing runs without data checks"
    grep -E '^# (weft|ucx) *:' "$work/results.txt" | sort -u | sed 's/^# /- /'
    echo
    echo "Columns: min and median over the reps of each backend (latency: microseconds,"
    echo "bandwidth: MB/s = 1e6 bytes/s, rate: messages/s). For latency the min is the best"
    echo "rep; for bandwidth and rate the min is the worst rep and results.txt also gives the"
    echo "best (max). ratio = weft / ucx of the medians: below 1 is better for latency,"
    echo "above 1 is better for bandwidth and rate."
    awk -F, '
        NR == 1 { next }
        {
            key = $1 SUBSEP $2
            if (!(key in seen)) { seen[key] = 1; order[$1] = order[$1] " " $2 }
            if (!($1 in bseen)) { bseen[$1] = 1; benches[++nb] = $1 }
            mn[$1, $2, $3] = $4; md[$1, $2, $3] = $5; have[$1, $3] = 1
        }
        END {
            title["lat"] = "lat: one-way latency (RTT/2), microseconds, lower is better"
            title["bw"] = "bw: unidirectional bandwidth, MB/s, higher is better"
            title["bibw"] = "bibw: bidirectional bandwidth (both directions), MB/s, higher is better"
            title["rate"] = "rate: message rate, messages/s, higher is better"
            for (i = 1; i <= nb; i++) {
                b = benches[i]
                both = have[b, "weft"] && have[b, "ucx"]
                printf "\n## %s\n\n", title[b]
                hdr = "| size |"; sep = "|---:|"
                if (have[b, "weft"]) { hdr = hdr " weft min | weft median |"; sep = sep "---:|---:|" }
                if (have[b, "ucx"]) { hdr = hdr " ucx min | ucx median |"; sep = sep "---:|---:|" }
                if (both) { hdr = hdr " ratio (median) |"; sep = sep "---:|" }
                print hdr; print sep
                n = split(order[b], sizes, " ")
                for (j = 1; j <= n; j++) {
                    s = sizes[j]; line = "| " s " |"
                    if (have[b, "weft"]) line = line " " mn[b, s, "weft"] " | " md[b, s, "weft"] " |"
                    if (have[b, "ucx"]) line = line " " mn[b, s, "ucx"] " | " md[b, s, "ucx"] " |"
                    if (both && md[b, s, "ucx"] > 0) line = line sprintf(" %.3f |", md[b, s, "weft"] / md[b, s, "ucx"])
                    print line
                }
                if (both && (b, "8", "ucx") in md && md[b, "8", "ucx"] > 0) {
                    r = md[b, "8", "weft"] / md[b, "8", "ucx"]
                    met_lat = (r <= 0.80) ? "met" : "not met"
                    met_rate = (r >= 1.20) ? "met" : "not met"
                    if (b == "lat") printf("\nTarget: 8-byte latency weft/ucx <= 0.80: measured %.3f (%s).\n", r, met_lat)
                    if (b == "rate") printf("\nTarget: 8-byte message rate weft/ucx >= 1.20: measured %.3f (%s).\n", r, met_rate)
                }
            }
        }' "$work/results.csv"
} >"$out/results.md"

if command -v gnuplot >/dev/null 2>&1; then
    present_benches=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    present_backends=$(awk -F, 'NR > 1 && !s[$3]++ { printf "%s%s", n++ ? " " : "", $3 }' "$work/results.csv")
    gnuplot -e "csv='$out/results.csv'; out='$out/results.png'; benches='$present_benches'; backends='$present_backends'; subtitle='  [median of $reps reps]'; what='${WEFT_PLOT_WHAT:-shared memory}'" \
        "$script_dir/weft_perf.gnuplot" || die "gnuplot failed"
    [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
else
    echo "compare.sh: warning: gnuplot not found (apt-get install gnuplot-nox): no plot" >&2
fi
echo "compare.sh: wrote $out/results.txt, results.md, results.csv$( [ -s "$out/results.png" ] && echo ", results.png")" >&2
