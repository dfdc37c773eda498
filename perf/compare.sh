#!/usr/bin/env bash
# perf/compare.sh -- weft vs UCX, side by side: runs perf/weft_perf under
# `mpirun -np 2` for lat, bw, bibw and rate (or, with --rma, the one-sided
# benchmarks), then writes a table and a plot. See docs/performance.md.
#
#   perf/compare.sh [options] [WEFT_PERF]
#   perf/compare.sh --rma --out DIR      # puts, gets, atomics (issue 11)
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
  --csv FILE             write every benchmark's rows (benchmark,size,backend,min,median,max)
                         into one CSV
  --out DIR              write DIR/results.txt (the tables), DIR/results.md,
                         DIR/results.csv and DIR/results.png (tagged benchmarks) and
                         DIR/rma.png (one-sided ones) (needs gnuplot)
  --quick                a subset of sizes and fewer iterations per rep (still 10 reps)
  --sizes LIST           these sizes (e.g. 32k,256k,4m) for every benchmark but the atomics
  --bench LIST           benchmarks, comma-separated (default lat,bw,bibw,rate); one-sided:
                         put_lat,get_lat,fadd_lat,cswap_lat,put_pp,put_bw,get_bw,put_rate
  --rma                  the one-sided benchmarks (same as --bench with all eight): put/get
                         latency, put/get bandwidth and put ping-pong 8 B..4 MiB, 64-bit
                         fetch-add and compare-swap, put rate 8 B..4 KiB
  --backend LIST         backends (default weft,ucx; e.g. ucx alone)
  --reps N               interleaved repetitions per size (default 10, at least 10)
  --no-check             skip the --verify pass before the timed runs
  --netns                the two processes on two nodes: the network namespaces of
                         contrib/netns/weft-netns (up first), one process per node
                         (`weft-netns mpirun --map-by node`, no binding), so both backends
                         cross the veth pair over TCP; weft_perf -t tcp (weft's tcp
                         transport), UCX_TLS defaults to tcp
                         (docs/multinode.md, docs/performance.md "tcp across two network
                         namespaces")
  -h, --help
Arguments after -- go to weft_perf unchanged (e.g. -- --window 128).
Environment: MPIRUN (default mpirun), UCX_TLS (passed through; unset = UCX's choice),
WEFT_PLOT_WHAT (the plot title's transport, default "shared memory"), WEFT_COMMIT (the
weft commit results.md names; default: git HEAD of the sources next to this script).
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
sizes=""
check=1
reps=10
weft_perf=""
netns=0
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
        --csv) [ $# -ge 2 ] || die "--csv needs a file"; csv="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --sizes) [ $# -ge 2 ] || die "--sizes needs a list"; sizes="$2"; shift 2 ;;
        --bench) [ $# -ge 2 ] || die "--bench needs a list"; benches="$2"; shift 2 ;;
        --rma) benches="put_lat,get_lat,fadd_lat,cswap_lat,put_pp,put_bw,get_bw,put_rate"; shift ;;
        --backend) [ $# -ge 2 ] || die "--backend needs a list"; backends="$2"; shift 2 ;;
        --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps="$2"; shift 2 ;;
        --no-check) check=0; shift ;;
        --netns) netns=1; shift ;;
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
if [ "$netns" = 1 ]; then
    # One process per node, on the nodes' host names; weft-netns mpirun adds the
    # hostfile, the launch agent and --bind-to none (both nodes share the cores:
    # each node's daemon would bind its rank to core 0), and --allow-run-as-root.
    # UCX is told tcp unless UCX_TLS says otherwise.
    export UCX_TLS="${UCX_TLS:-tcp}"
    export WEFTNS_MPIRUN="$mpirun"
    "$src_dir/contrib/netns/weft-netns" status >/dev/null 2>&1 ||
        die "--netns: the network namespaces are not up (contrib/netns/weft-netns up, as root)"
    launch=("$src_dir/contrib/netns/weft-netns" mpirun -np 2 --map-by node -x UCX_TLS)
    [ -z "${WEFT_TRANSPORTS:-}" ] || launch+=(-x WEFT_TRANSPORTS)
    # weft_perf asks weft_getinfo for shm unless told (-t); a later -t in the
    # arguments after -- wins.
    extra=(-t tcp "${extra[@]}")
    : "${WEFT_PLOT_WHAT:=tcp across two network namespaces}"
else
    launch=("$mpirun" -np 2 --bind-to core)
    if [ "$(id -u)" = 0 ]; then
        launch+=(--allow-run-as-root)
    fi
fi

# ------------------------------------------------------------------ sizes and iterations
# The sizes of one benchmark (weft_perf options). Tagged: weft_perf's default
# sweep (1 B .. 16 MiB). One-sided: 8 B .. 4 MiB (put_rate 8 B .. 4 KiB; the
# atomics are one 64-bit word whatever the sizes).
sizes_for() {
    if [ -n "$sizes" ]; then
        case "$1" in
            fadd_lat|cswap_lat) echo "-s 8" ;;
            *) echo "-s $sizes" ;;
        esac
        return
    fi
    case "$1" in
        lat|bw|bibw|rate)
            if [ "$quick" = 1 ]; then echo "-s 1,8,64,512,4k,32k,256k,1m"; fi ;;
        put_lat|get_lat|put_pp|put_bw|get_bw)
            if [ "$quick" = 1 ]; then echo "-s 8,64,512,4k,32k,256k,1m,4m"; else echo "-m 8 -M 4m"; fi ;;
        put_rate)
            if [ "$quick" = 1 ]; then echo "-s 8,64,512,4k"; else echo "-m 8 -M 4k"; fi ;;
        fadd_lat|cswap_lat) echo "-s 8" ;;
    esac
}
iters_for() {
    if [ "$quick" = 1 ]; then
        case "$1" in
            lat|put_lat|get_lat|fadd_lat|cswap_lat|put_pp) echo "-i 500" ;;
            bw|bibw|put_bw|get_bw) echo "-i 20" ;;
            rate|put_rate) echo "-i 50" ;;
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
        put_lat|get_lat|fadd_lat|cswap_lat|put_pp|put_bw|get_bw|put_rate) ;;
        *) die "unknown benchmark '$b' (lat, bw, bibw, rate, put_lat, get_lat, fadd_lat, cswap_lat, put_pp, put_bw, get_bw, put_rate)" ;;
    esac
done

# ------------------------------------------------------------------ correctness pass
if [ "$check" = 1 ]; then
    for b in "${bench_list[@]}"; do
        echo "compare.sh: $b: checking data (--verify, every size, few iterations)" >&2
        # shellcheck disable=SC2046
        if ! "${launch[@]}" "$weft_perf" -b "$b" -B "$backends" $(sizes_for "$b") --verify \
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
    if ! "${launch[@]}" "$weft_perf" -b "$b" -B "$backends" $(sizes_for "$b") $(iters_for "$b") \
            -r "$reps" --no-verify --csv "$work/$b.csv" "${extra[@]}" | tee -a "$work/results.txt"; then
        die "$b: weft_perf failed"
    fi
done

echo "benchmark,size,backend,min,median,max" >"$work/results.csv"
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
    if [ -n "${WEFT_COMMIT:-}" ]; then
        echo "- weft commit: $WEFT_COMMIT"
    elif git -C "$src_dir" rev-parse --short HEAD >/dev/null 2>&1; then
        echo "- weft commit: $(git -C "$src_dir" rev-parse --short HEAD)"
    fi
    if [ "$netns" = 1 ]; then
        echo "- launched across two network namespaces (--netns: contrib/netns/weft-netns mpirun, one process per node, no binding), UCX_TLS=$UCX_TLS"
    fi
    echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- $(if [ "$quick" = 1 ]; then echo "quick run (subset of sizes, fewer iterations)"; else echo "full run"; fi), $reps interleaved reps per size, timing runs without data checks"
    grep -E '^# (weft|ucx) *:' "$work/results.txt" | sort -u | sed 's/^# /- /'
    echo
    echo "Columns: best and median over the reps of each backend (latency: microseconds,"
    echo "bandwidth: MB/s = 1e6 bytes/s, rate: messages or operations per second). The best"
    echo "rep is the min for latency and the max for bandwidth and rate (the CSV has min,"
    echo "median and max). ratio = weft / ucx: below 1 is better for latency, above 1 is"
    echo "better for bandwidth and rate."
    awk -F, '
        NR == 1 { next }
        {
            key = $1 SUBSEP $2
            if (!(key in seen)) { seen[key] = 1; order[$1] = order[$1] " " $2 }
            if (!($1 in bseen)) { bseen[$1] = 1; benches[++nb] = $1 }
            lat = ($1 ~ /lat$/ || $1 == "put_pp")
            best[$1, $2, $3] = (lat || NF < 6) ? $4 : $6
            md[$1, $2, $3] = $5; have[$1, $3] = 1
        }
        function ratio(b, s, what) {
            return what[b, s, "weft"] / what[b, s, "ucx"]
        }
        END {
            title["lat"] = "lat: one-way latency (RTT/2), microseconds, lower is better"
            title["bw"] = "bw: unidirectional bandwidth, MB/s, higher is better"
            title["bibw"] = "bibw: bidirectional bandwidth (both directions), MB/s, higher is better"
            title["rate"] = "rate: message rate, messages/s, higher is better"
            title["put_lat"] = "put_lat: put + flush (remotely complete), microseconds per put, lower is better"
            title["get_lat"] = "get_lat: get, microseconds per get, lower is better"
            title["fadd_lat"] = "fadd_lat: 64-bit fetch-and-add, microseconds, lower is better"
            title["cswap_lat"] = "cswap_lat: 64-bit compare-and-swap, microseconds, lower is better"
            title["put_pp"] = "put_pp: put ping-pong (poll the last byte), one-way = RTT/2, microseconds, lower is better"
            title["put_bw"] = "put_bw: window of 64 puts + flush, MB/s, higher is better"
            title["get_bw"] = "get_bw: window of 64 gets + flush, MB/s, higher is better"
            title["put_rate"] = "put_rate: window of 64 puts + flush, puts/s, higher is better"
            ntgt = 0
            for (i = 1; i <= nb; i++) {
                b = benches[i]
                both = have[b, "weft"] && have[b, "ucx"]
                printf "\n## %s\n\n", title[b]
                hdr = "| size |"; sep = "|---:|"
                if (have[b, "weft"]) { hdr = hdr " weft best | weft median |"; sep = sep "---:|---:|" }
                if (have[b, "ucx"]) { hdr = hdr " ucx best | ucx median |"; sep = sep "---:|---:|" }
                if (both) { hdr = hdr " ratio (best) | ratio (median) |"; sep = sep "---:|---:|" }
                print hdr; print sep
                n = split(order[b], sizes, " ")
                lo = 0; lo_at = ""; nbig = 0
                for (j = 1; j <= n; j++) {
                    s = sizes[j]; line = "| " s " |"
                    if (have[b, "weft"]) line = line " " best[b, s, "weft"] " | " md[b, s, "weft"] " |"
                    if (have[b, "ucx"]) line = line " " best[b, s, "ucx"] " | " md[b, s, "ucx"] " |"
                    if (both && md[b, s, "ucx"] > 0 && best[b, s, "ucx"] > 0) {
                        line = line sprintf(" %.3f | %.3f |", ratio(b, s, best), ratio(b, s, md))
                        if (s >= 65536 && s <= 4194304) {
                            r = ratio(b, s, md)
                            if (nbig++ == 0 || r < lo) { lo = r; lo_at = s }
                        }
                    }
                    print line
                }
                # Targets (docs/performance.md): latency at 8 B, bandwidth at 64 KiB..4 MiB,
                # rate at 8 B.
                if (!both) continue
                r8 = ((b, "8", "ucx") in md && md[b, "8", "ucx"] > 0) ? ratio(b, "8", md) : -1
                t = ""
                if ((b == "lat" || b == "put_lat" || b == "get_lat" || b == "fadd_lat") && r8 >= 0)
                    t = sprintf("%s: 8-byte latency weft/ucx <= 0.80: measured %.3f (%s)", b, r8, r8 <= 0.80 ? "met" : "not met")
                if (b == "rate" && r8 >= 0)
                    t = sprintf("rate: 8-byte message rate weft/ucx >= 1.20: measured %.3f (%s)", r8, r8 >= 1.20 ? "met" : "not met")
                if (b == "put_rate" && r8 >= 0)
                    t = sprintf("put_rate: 8-byte put rate weft/ucx >= 1.50: measured %.3f (%s)", r8, r8 >= 1.50 ? "met" : "not met")
                if ((b == "put_bw" || b == "get_bw") && nbig > 0)
                    t = sprintf("%s: bandwidth weft/ucx >= 1.20 at every size 64 KiB..4 MiB: lowest %.3f at %s B of %d sizes (%s)", b, lo, lo_at, nbig, lo >= 1.20 ? "met" : "not met")
                if (t != "") { printf "\nTarget %s.\n", t; tgt[++ntgt] = t }
            }
            if (ntgt > 1) {
                printf "\n## Targets (ratios of the medians)\n\n"
                for (i = 1; i <= ntgt; i++) printf "- %s\n", tgt[i]
            }
        }' "$work/results.csv"
} >"$out/results.md"

plots=""
if command -v gnuplot >/dev/null 2>&1; then
    present_backends=$(awk -F, 'NR > 1 && !s[$3]++ { printf "%s%s", n++ ? " " : "", $3 }' "$work/results.csv")
    # Tagged benchmarks: results.png (perf/weft_perf.gnuplot); one-sided: rma.png.
    tag_benches=$(awk -F, 'NR > 1 && $1 ~ /^(lat|bw|bibw|rate)$/ && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    rma_benches=$(awk -F, 'NR > 1 && $1 !~ /^(lat|bw|bibw|rate)$/ && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    if [ -n "$tag_benches" ]; then
        gnuplot -e "csv='$out/results.csv'; out='$out/results.png'; benches='$tag_benches'; backends='$present_backends'; subtitle='  [median of $reps reps]'; what='${WEFT_PLOT_WHAT:-shared memory}'" \
            "$script_dir/weft_perf.gnuplot" || die "gnuplot failed"
        [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
        plots="$plots, results.png"
    fi
    if [ -n "$rma_benches" ]; then
        gnuplot -e "csv='$out/results.csv'; out='$out/rma.png'; benches='$rma_benches'; backends='$present_backends'; subtitle='  [median of $reps reps]'; what='${WEFT_PLOT_WHAT:-shared memory}'" \
            "$script_dir/weft_perf_rma.gnuplot" || die "gnuplot failed"
        [ -s "$out/rma.png" ] || die "gnuplot wrote no $out/rma.png"
        plots="$plots, rma.png"
    fi
else
    echo "compare.sh: warning: gnuplot not found (apt-get install gnuplot-nox): no plot" >&2
fi
echo "compare.sh: wrote $out/results.txt, results.md, results.csv$plots" >&2
