#!/usr/bin/env bash
# perf/mpi/compare.sh -- Open MPI over weft (pml cm + mtl weft) vs pml ucx vs
# ob1 + vader, on the same MPI benchmarks (perf/mpi/mpi_bench), side by side.
# See docs/performance.md, section "MPI (issue 5)".
#
#   perf/mpi/compare.sh [options]
#
# Every repetition launches mpi_bench once per backend, in turn (weft, ucx,
# vader, weft, ucx, vader, ...), so that whatever the machine does hits all
# three alike; at least 10 repetitions; per size and backend the min and the
# median are kept. The table gives the ratio of weft to the better of ucx and
# vader at each size.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/mpi/compare.sh [options]
  --bench LIST       benchmarks, comma-separated: lat,bw,bibw,mbw,rate (default: all)
  --backend LIST     backends in launch order (default weft,ucx,vader)
  --reps N           repetitions per backend (default 10, at least 10)
  --quick            fewer sizes (still interleaved, still 10 reps)
  --np N             ranks (default 2; mbw and rate use N/2 pairs)
  --csv FILE         write rows benchmark,size,backend,min,median (latency us,
                     bandwidth MB/s, rate messages/s) to FILE
  --out DIR          write DIR/results.txt (tables), results.csv, raw.csv (every
                     measurement) and results.png (default: ./mpi-results)
  --before DIR       also run the weft MTL of another build (DIR holds its
                     mca_mtl_weft.so, e.g. OLD_BUILD/.libs) as backend "before",
                     interleaved with the others: the tables add weft / before
  --bench-bin PATH   the mpi_bench program (default: $MPI_BENCH, else
                     ./perf/mpi/mpi_bench in the current build directory, else
                     build trees next to the sources)
  -h, --help
Arguments after -- go to mpi_bench (e.g. -- --window 128).
Environment: MPIRUN (default mpirun), WEFT_MTL_DIR (directory of mca_mtl_weft.so;
default: the build tree's .libs next to mpi_bench).
EOF
}

die() {
    echo "compare.sh: error: $*" >&2
    exit 1
}
note() {
    echo "compare.sh: $*" >&2
}

benches="lat,bw,bibw,mbw,rate"
backends="weft,ucx,vader"
reps=10
quick=0
np=2
csv=""
out="mpi-results"
bench_bin=""
before_dir=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bench) [ $# -ge 2 ] || die "--bench needs a list"; benches="$2"; shift 2 ;;
        --backend) [ $# -ge 2 ] || die "--backend needs a list"; backends="$2"; shift 2 ;;
        --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --np) [ $# -ge 2 ] || die "--np needs a number"; np="$2"; shift 2 ;;
        --csv) [ $# -ge 2 ] || die "--csv needs a file"; csv="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        --bench-bin) [ $# -ge 2 ] || die "--bench-bin needs a path"; bench_bin="$2"; shift 2 ;;
        --before) [ $# -ge 2 ] || die "--before needs a directory"; before_dir="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
case "$reps" in ''|*[!0-9]*) die "--reps needs a number" ;; esac
[ "$reps" -ge 10 ] || die "--reps must be at least 10 (min and median over fewer are noise)"
case "$np" in ''|*[!0-9]*) die "--np needs a number" ;; esac
if [ "$np" -lt 2 ] || [ $((np % 2)) -ne 0 ]; then
    die "--np must be even and at least 2"
fi
IFS=',' read -r -a bench_list <<<"$benches"
IFS=',' read -r -a backend_list <<<"$backends"
if [ -n "$before_dir" ] && [[ " ${backend_list[*]} " != *" before "* ]]; then
    # Right after weft, so that the two see the machine in the same state.
    with=()
    for b in "${backend_list[@]}"; do
        with+=("$b")
        [ "$b" = weft ] && with+=(before)
    done
    [[ " ${with[*]} " == *" before "* ]] || with=(before "${with[@]}")
    backend_list=("${with[@]}")
fi
for b in "${bench_list[@]}"; do
    case "$b" in lat|bw|bibw|mbw|rate) ;; *) die "unknown benchmark '$b'" ;; esac
done
for b in "${backend_list[@]}"; do
    case "$b" in weft|ucx|vader) ;; before) [ -n "$before_dir" ] || die "backend before needs --before DIR" ;;
        *) die "unknown backend '$b' (weft, before, ucx, vader)" ;; esac
done

# ------------------------------------------------------------------ find the programs
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
perf_dir=$(dirname "$script_dir")
src_dir=$(cd "$script_dir/../.." && pwd)
if [ -z "$bench_bin" ] && [ -n "${MPI_BENCH:-}" ]; then
    bench_bin="$MPI_BENCH"
fi
if [ -z "$bench_bin" ]; then
    for c in ./perf/mpi/mpi_bench "$src_dir"/build*/perf/mpi/mpi_bench \
             "$src_dir"/../build*/perf/mpi/mpi_bench; do
        if [ -x "$c" ] && [ -f "$c" ]; then
            bench_bin="$c"
            break
        fi
    done
fi
if [ -z "$bench_bin" ] || [ ! -x "$bench_bin" ]; then
    die "mpi_bench not found: build it (make perf/mpi/mpi_bench in the build directory) and \
run from there, or pass --bench-bin"
fi
bench_bin=$(cd "$(dirname "$bench_bin")" && pwd)/$(basename "$bench_bin")
mtl_dir=${WEFT_MTL_DIR:-$(dirname "$bench_bin")/../../.libs}
if [[ " ${backend_list[*]} " == *" weft "* ]]; then
    [ -f "$mtl_dir/mca_mtl_weft.so" ] || die "mca_mtl_weft.so not in $mtl_dir (set WEFT_MTL_DIR)"
    mtl_dir=$(cd "$mtl_dir" && pwd)
fi
if [ -n "$before_dir" ]; then
    [ -f "$before_dir/mca_mtl_weft.so" ] || die "mca_mtl_weft.so not in $before_dir (--before)"
    before_dir=$(cd "$before_dir" && pwd)
fi
note "using $bench_bin"

mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null 2>&1 || die "$mpirun not found (install openmpi-bin)"
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p' || true)
ompi_dir=${ompi_dir:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
launch=("$mpirun" -np "$np" --bind-to core)
[ "$np" -le "$(nproc)" ] || launch+=(--oversubscribe)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)

backend_args() {
    case "$1" in
        weft) echo "--mca mca_base_component_path $mtl_dir:$ompi_dir --mca pml cm --mca mtl weft" ;;
        before) echo "--mca mca_base_component_path $before_dir:$ompi_dir --mca pml cm --mca mtl weft" ;;
        # Debian disables pml ucx by default, and without RDMA devices Open MPI
        # 4.1 refuses it unless told any transport and device will do.
        ucx) echo "--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any" ;;
        vader) echo "--mca pml ob1 --mca btl vader,self" ;;
    esac
}

sizes_for() {
    if [ "$quick" = 1 ]; then
        case "$1" in
            lat) echo "1,8,64,512,4k,16k,64k,1m" ;;
            rate) echo "1,8,64,512,4k" ;;
            *) echo "8,512,4k,64k,256k,1m,4m" ;;
        esac
    else
        case "$1" in
            lat) echo "0,1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m" ;;
            rate) echo "1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k" ;;
            *) echo "1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m" ;;
        esac
    fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft_mpi_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "benchmark,size,backend,rep,value" >"$work/raw.csv"

# ------------------------------------------------------------------ check each backend once
for be in "${backend_list[@]}"; do
    # shellcheck disable=SC2046
    if ! "${launch[@]}" $(backend_args "$be") --mca mtl_weft_verbose 1 "$bench_bin" -b lat \
            -s 8 -i 100 >"$work/check_$be.txt" 2>&1; then
        cat "$work/check_$be.txt" >&2
        die "backend $be does not run (see above)"
    fi
    if { [ "$be" = weft ] || [ "$be" = before ]; } &&
        [ "$(grep -c 'mtl weft: selected on rank' "$work/check_$be.txt")" -ne "$np" ]; then
        cat "$work/check_$be.txt" >&2
        die "the weft MTL was not selected on every rank"
    fi
done
note "backends ${backend_list[*]} run; $np ranks; $reps interleaved repetitions"

# ------------------------------------------------------------------ interleaved runs
for b in "${bench_list[@]}"; do
    sizes=$(sizes_for "$b")
    note "$b: sizes $sizes"
    for rep in $(seq 1 "$reps"); do
        for be in "${backend_list[@]}"; do
            # shellcheck disable=SC2046
            if ! "${launch[@]}" $(backend_args "$be") "$bench_bin" -b "$b" -s "$sizes" \
                    "${extra[@]}" >"$work/run.txt" 2>&1; then
                cat "$work/run.txt" >&2
                die "$b with $be failed (rep $rep)"
            fi
            awk -v be="$be" -v rep="$rep" '$1 !~ /^#/ && NF == 3 { print $1 "," $2 "," be "," rep "," $3 }' \
                "$work/run.txt" >>"$work/raw.csv"
        done
        printf '.' >&2
    done
    echo >&2
done

# ------------------------------------------------------------------ min, median, table
awk -f "$perf_dir/stats.awk" "$work/raw.csv" >"$work/stats.csv"

cut -d, -f1-5 "$work/stats.csv" >"$work/results.csv"

awk -F, -v reps="$reps" -v np="$np" '
    NR == 1 { next }
    {
        if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[$1] = order[$1] " " $2 }
        if (!($1 in bs)) { bs[$1] = 1; benches[++nb] = $1 }
        mn[$1, $2, $3] = $4; md[$1, $2, $3] = $5; mx[$1, $2, $3] = $6; have[$1, $3] = 1
    }
    function best(b, s, be) { return b == "lat" ? mn[b, s, be] : mx[b, s, be] }
    END {
        title["lat"] = "lat: one-way latency (RTT/2), us, lower is better"
        title["bw"] = "bw: bandwidth, window 64, MB/s, higher is better"
        title["bibw"] = "bibw: bidirectional bandwidth (sum), MB/s, higher is better"
        title["mbw"] = "mbw: multi-pair bandwidth (" np / 2 " pairs, sum), MB/s, higher is better"
        title["rate"] = "rate: message rate (" np / 2 " pairs, sum), messages/s, higher is better"
        for (i = 1; i <= nb; i++) {
            b = benches[i]
            printf "\n# %s\n", title[b]
            printf "# best = %s of %d reps; ratio = weft / the better of ucx and vader%s\n", \
                b == "lat" ? "min" : "max", reps, have[b, "before"] ? "; vs.before = weft / before" : ""
            printf "%9s", "size"
            split("weft before ucx vader", all, " ")
            for (j = 1; j <= 4; j++) if (have[b, all[j]]) printf " %12s %12s", all[j] ".best", all[j] ".median"
            if (have[b, "weft"] && (have[b, "ucx"] || have[b, "vader"])) printf " %10s %12s", "ratio.best", "ratio.median"
            if (have[b, "weft"] && have[b, "before"]) printf " %16s %18s", "vs.before.best", "vs.before.median"
            printf "\n"
            ns = split(order[b], sz, " ")
            for (s = 1; s <= ns; s++) {
                z = sz[s]
                printf "%9s", z
                for (j = 1; j <= 4; j++) if (have[b, all[j]]) printf " %12.4g %12.4g", best(b, z, all[j]), md[b, z, all[j]]
                if (have[b, "weft"] && (have[b, "ucx"] || have[b, "vader"])) {
                    ob = ""; om = ""
                    for (j = 3; j <= 4; j++) {
                        be = all[j]
                        if (!have[b, be]) continue
                        x = best(b, z, be); y = md[b, z, be]
                        if (b == "lat") {
                            if (ob == "" || x < ob) ob = x
                            if (om == "" || y < om) om = y
                        } else {
                            if (ob == "" || x > ob) ob = x
                            if (om == "" || y > om) om = y
                        }
                    }
                    rb = ob > 0 ? best(b, z, "weft") / ob : 0
                    rm = om > 0 ? md[b, z, "weft"] / om : 0
                    printf " %10.3f %12.3f", rb, rm
                }
                if (have[b, "weft"] && have[b, "before"]) {
                    xb = best(b, z, "before"); xm = md[b, z, "before"]
                    vb = xb > 0 ? best(b, z, "weft") / xb : 0
                    vm = xm > 0 ? md[b, z, "weft"] / xm : 0
                    printf " %16.3f %18.3f", vb, vm
                }
                printf "\n"
            }
        }
    }' "$work/stats.csv" | tee "$work/results.txt"

echo
echo "# targets (docs/performance.md): ratio.median of 8-byte latency <= 0.75, latency up to"
echo "# 64 KiB <= 0.8, bandwidth at 64 KiB and above >= 1.25, 8-byte message rate >= 1.5"

if [ -n "$csv" ]; then
    cp "$work/results.csv" "$csv"
    note "wrote $csv"
fi
mkdir -p "$out"
cp "$work/results.txt" "$out/results.txt"
cp "$work/results.csv" "$out/results.csv"
cp "$work/raw.csv" "$out/raw.csv"
if command -v gnuplot >/dev/null 2>&1; then
    present_benches=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    present_backends=$(awk -F, 'NR > 1 && !s[$3]++ { printf "%s%s", n++ ? " " : "", $3 }' "$work/results.csv")
    gnuplot -e "csv='$out/results.csv'; out='$out/results.png'; benches='$present_benches'; backends='$present_backends'; subtitle='  [median of $reps reps, $np ranks]'" \
        "$script_dir/mpi_bench.gnuplot" || die "gnuplot failed"
    [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
else
    note "warning: gnuplot not found (apt-get install gnuplot-nox): no plot"
fi
note "wrote $out/results.txt, results.csv, raw.csv$( [ -s "$out/results.png" ] && echo ", results.png")"
