#!/usr/bin/env bash
# perf/coll/compare.sh -- Open MPI's collectives over weft (coll weft, with
# pml cm + mtl weft) vs Open MPI's own (coll tuned, coll han) over pml ucx and
# ob1 + vader, on the same OSU-style latency benchmarks (perf/coll/coll_bench),
# side by side. Modelled on perf/mpi/compare.sh.
#
#   perf/coll/compare.sh [options]
#
# Every repetition launches coll_bench once per backend, in turn (weft,
# ucx-tuned, ucx-han, vader-tuned, vader-han, weft, ...), each launch running
# every benchmark and size, so that whatever the machine does hits all backends
# alike; at least 10 repetitions; per (benchmark, size, backend) the min and the
# median are kept. The tables give the ratio of weft to the best other backend
# at each size, by median and by min (below 1: weft is faster).
#
# Backends:
#   weft         --mca mca_base_component_path <build .libs>:<Open MPI's> --mca pml cm
#                --mca mtl weft; coll weft (priority 50, above tuned's 30) is selected
#                by itself: the check run makes sure it is, on every rank, with no
#                call passed back to Open MPI's collectives.
#   ucx-tuned    --mca pml ucx (Debian's openmpi-mca-params.conf disables it; without
#                RDMA devices it needs opal_common_ucx_tls/devices any) and Open MPI's
#                default collectives (tuned). --mca coll ^weft keeps coll weft out even
#                if it is installed where Open MPI looks by default.
#   ucx-han      ucx-tuned plus --mca coll_han_priority 100.
#   vader-tuned  --mca pml ob1 --mca btl vader,self, default collectives (tuned).
#   vader-han    vader-tuned plus --mca coll_han_priority 100.
# Notes on han: Open MPI 4.1.4 has coll han (ompi_info lists it; priority 0 by
# default, so coll_han_priority 100 selects it), but han declines every
# communicator whose ranks are all on one node ("coll:han:comm_query: comm has
# only local processes; disqualifying myself"), and falls back to tuned. On a
# single machine the han backends would therefore measure tuned again: the
# check run looks at which component Open MPI selected for MPI_COMM_WORLD on
# every rank, and a han backend that did not get han is dropped, with a note.
#
# Warm-up: coll_bench follows OSU (100 untimed calls up to 8 KiB, 10 above). Over
# weft, the first few hundred calls of a new collective or size class can be
# much slower than the rest; to measure past that, give more warm-up, e.g.
#   perf/coll/compare.sh -- -w 1000 --warmup-large 100
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/coll/compare.sh [options]
  --bench LIST       benchmarks, comma-separated: barrier,bcast,allreduce,allgather,
                     alltoall,reduce (default: all)
  --backend LIST     backends in launch order (default
                     weft,ucx-tuned,ucx-han,vader-tuned,vader-han; a han backend
                     that Open MPI does not select is dropped, with a note)
  --reps N           repetitions per backend (default 10, at least 10)
  --quick            fewer sizes: 4,64,512,4k,32k,256k,1m,4m (still 10 reps)
  --np N             ranks (default 2; more than the cores adds --oversubscribe)
  --csv FILE         write rows benchmark,size,backend,min,median (us) to FILE
  --out DIR          write DIR/results.txt (tables), results.csv, raw.csv (every
                     measurement), ratios.csv and results.png (default: ./coll-results)
  --bench-bin PATH   the coll_bench program (default: $COLL_BENCH, else
                     ./perf/coll/coll_bench in the current build directory, else a
                     build tree of these sources next to them)
  -h, --help
Arguments after -- go to coll_bench (e.g. -- --max 64k, -- -i 200).
Environment: MPIRUN (default mpirun), WEFT_MTL_DIR (directory of mca_mtl_weft.so
and mca_coll_weft.so; default: the build tree's .libs next to coll_bench).
EOF
}

die() {
    echo "compare.sh: error: $*" >&2
    exit 1
}
note() {
    echo "compare.sh: $*" >&2
}

all_benches="barrier,bcast,allreduce,allgather,alltoall,reduce"
benches="$all_benches"
backends="weft,ucx-tuned,ucx-han,vader-tuned,vader-han"
reps=10
quick=0
np=2
csv=""
out="coll-results"
bench_bin=""
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
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
case "$reps" in ''|*[!0-9]*) die "--reps needs a number" ;; esac
[ "$reps" -ge 10 ] || die "--reps must be at least 10 (min and median over fewer are noise)"
case "$np" in ''|*[!0-9]*) die "--np needs a number" ;; esac
[ "$np" -ge 2 ] || die "--np must be at least 2"
IFS=',' read -r -a bench_list <<<"$benches"
IFS=',' read -r -a backend_list <<<"$backends"
for b in "${bench_list[@]}"; do
    case ",$all_benches," in *",$b,"*) ;; *) die "unknown benchmark '$b' ($all_benches)" ;; esac
done
for b in "${backend_list[@]}"; do
    case "$b" in weft|ucx-tuned|ucx-han|vader-tuned|vader-han) ;;
        *) die "unknown backend '$b' (weft, ucx-tuned, ucx-han, vader-tuned, vader-han)" ;; esac
done

# ------------------------------------------------------------------ find the programs
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
perf_dir=$(dirname "$script_dir")
src_dir=$(cd "$script_dir/../.." && pwd)
if [ -z "$bench_bin" ] && [ -n "${COLL_BENCH:-}" ]; then
    bench_bin="$COLL_BENCH"
fi
if [ -z "$bench_bin" ]; then
    for c in ./perf/coll/coll_bench "$src_dir"/build*/perf/coll/coll_bench \
             "$src_dir"/../*/perf/coll/coll_bench; do
        if [ ! -x "$c" ] || [ ! -f "$c" ]; then
            continue
        fi
        # Only a build of these sources (an out-of-tree build names them in its Makefile).
        d=$(cd "$(dirname "$c")/../.." && pwd)
        if [ "$c" = ./perf/coll/coll_bench ] ||
            grep -qx "abs_top_srcdir = $src_dir" "$d/Makefile" 2>/dev/null; then
            bench_bin="$c"
            break
        fi
    done
fi
if [ -z "$bench_bin" ] || [ ! -x "$bench_bin" ]; then
    die "coll_bench not found: build it (make perf/coll/coll_bench in the build directory) and \
run from there, or pass --bench-bin"
fi
bench_bin=$(cd "$(dirname "$bench_bin")" && pwd)/$(basename "$bench_bin")
mtl_dir=${WEFT_MTL_DIR:-$(dirname "$bench_bin")/../../.libs}
if [[ " ${backend_list[*]} " == *" weft "* ]]; then
    for so in mca_mtl_weft.so mca_coll_weft.so; do
        [ -f "$mtl_dir/$so" ] || die "$so not in $mtl_dir (set WEFT_MTL_DIR)"
    done
    mtl_dir=$(cd "$mtl_dir" && pwd)
fi
note "using $bench_bin"

mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null 2>&1 || die "$mpirun not found (install openmpi-bin)"
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p' || true)
ompi_dir=${ompi_dir:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
# One core each; with more ranks than cores, Open MPI refuses --bind-to core
# ("more processes than cpus"): then no binding and --oversubscribe.
if [ "$np" -le "$(nproc)" ]; then
    launch=("$mpirun" -np "$np" --bind-to core)
else
    launch=("$mpirun" -np "$np" --bind-to none --oversubscribe)
fi
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)

backend_args() {
    local ucx="--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any"
    local vader="--mca pml ob1 --mca btl vader,self"
    case "$1" in
        weft) echo "--mca mca_base_component_path $snap:$ompi_dir --mca pml cm --mca mtl weft -x LD_LIBRARY_PATH=$snap${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
        # Debian disables pml ucx by default, and without RDMA devices Open MPI
        # 4.1 refuses it unless told any transport and device will do.
        ucx-tuned) echo "$ucx --mca coll ^weft" ;;
        ucx-han) echo "$ucx --mca coll ^weft --mca coll_han_priority 100" ;;
        vader-tuned) echo "$vader --mca coll ^weft" ;;
        vader-han) echo "$vader --mca coll ^weft --mca coll_han_priority 100" ;;
    esac
}
# The coll component each backend must get for MPI_COMM_WORLD.
backend_coll() {
    case "$1" in weft) echo weft ;; *-han) echo han ;; *) echo tuned ;; esac
}

if [ "$quick" = 1 ]; then
    size_args=(-s "4,64,512,4k,32k,256k,1m,4m")
else
    size_args=(--min 4 --max 4m)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft_coll_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "benchmark,size,backend,rep,value" >"$work/raw.csv"
start=$(date +%s)

# The build tree may be rebuilt while this runs (make in another shell): every
# weft launch uses a copy of the two components and the libraries they load,
# taken now (LD_LIBRARY_PATH comes before the components' RUNPATH).
snap="$work/weft"
if [[ " ${backend_list[*]} " == *" weft "* ]]; then
    mkdir "$snap"
    for f in mca_mtl_weft.so mca_coll_weft.so; do
        cp -p "$mtl_dir/$f" "$snap/$f"
        for lib in $(LD_LIBRARY_PATH="$mtl_dir" ldd "$mtl_dir/$f" | awk '$1 ~ /^libweft/ && $3 ~ /^\// { print $3 }'); do
            [ -f "$snap/$(basename "$lib")" ] || cp -pL "$lib" "$snap/$(basename "$lib")"
        done
    done
    if LD_LIBRARY_PATH="$snap" ldd "$snap/mca_coll_weft.so" | grep libweft | grep -qv "$snap/"; then
        LD_LIBRARY_PATH="$snap" ldd "$snap/mca_coll_weft.so" >&2
        die "the copies in $snap do not load their own libweft"
    fi
    snap_desc="copies taken $(date '+%F %T') of $mtl_dir/:"
    for f in "$snap"/*; do
        snap_desc="$snap_desc $(basename "$f") ($(date -r "$f" '+%T'))"
    done
fi

# ------------------------------------------------------------------ check each backend once
# A short run of every benchmark (results checked) with coll_base_verbose, to see
# which coll component Open MPI selected for MPI_COMM_WORLD on every rank: the
# last "selecting NAME, priority P, Enabled" after "new communicator: MPI_COMM_WORLD".
kept=()
for be in "${backend_list[@]}"; do
    verbose=(--mca coll_base_verbose 20)
    [ "$be" = weft ] && verbose+=(--mca mtl_weft_verbose 1 --mca coll_weft_verbose 1)
    # shellcheck disable=SC2046
    if ! "${launch[@]}" $(backend_args "$be") "${verbose[@]}" "$bench_bin" -b "$benches" \
            -s 4,4k,64k -i 5 -w 1 --iters-large 2 --warmup-large 1 "${extra[@]}" \
            >"$work/check_$be.txt" 2>&1; then
        cat "$work/check_$be.txt" >&2
        die "backend $be does not run (see above)"
    fi
    want=$(backend_coll "$be")
    got=$(awk '
        /coll:base:comm_select: new communicator:/ { pid = $1; world[pid] = / MPI_COMM_WORLD / }
        /coll:base:comm_select: selecting .*Enabled/ && world[$1] { sub(",", "", $4); top[$1] = $4 }
        END { for (p in top) print top[p] }' "$work/check_$be.txt" | sort | uniq -c |
        awk '{ printf "%s%s on %d rank(s)", n++ ? ", " : "", $2, $1 }')
    if [ "$got" != "$want on $np rank(s)" ]; then
        if [ "$want" = han ]; then
            why=""
            grep -q "comm has only local processes" "$work/check_$be.txt" &&
                why=" (han declines a communicator whose ranks are all on one node)"
            note "dropping backend $be: Open MPI selected ${got:-nothing} for MPI_COMM_WORLD, not han$why"
            continue
        fi
        cat "$work/check_$be.txt" >&2
        die "backend $be: Open MPI selected ${got:-nothing} for MPI_COMM_WORLD, not $want"
    fi
    if [ "$be" = weft ]; then
        if [ "$(grep -c 'mtl weft: selected on rank' "$work/check_$be.txt")" -ne "$np" ] ||
            [ "$(grep -c "coll weft: MPI_COMM_WORLD ($np ranks) uses weft's collectives" \
                "$work/check_$be.txt")" -ne "$np" ]; then
            cat "$work/check_$be.txt" >&2
            die "the weft MTL or coll weft was not selected on every rank"
        fi
        if grep -q "coll weft: .* passed to the previous module" "$work/check_$be.txt"; then
            grep "coll weft: .* passed to the previous module" "$work/check_$be.txt" | sort -u >&2
            die "coll weft passed benchmark calls to Open MPI's collectives (see above)"
        fi
    fi
    kept+=("$be")
done
backend_list=("${kept[@]}")
[ "${#backend_list[@]}" -gt 0 ] || die "no backend left"
note "backends ${backend_list[*]} run; $np ranks; $reps interleaved repetitions"
note "sizes: $([ "$quick" = 1 ] && echo "${size_args[1]}" || echo "4 B to 4 MiB, powers of two")"

# ------------------------------------------------------------------ interleaved runs
for rep in $(seq 1 "$reps"); do
    for be in "${backend_list[@]}"; do
        # shellcheck disable=SC2046
        if ! "${launch[@]}" $(backend_args "$be") "$bench_bin" -b "$benches" "${size_args[@]}" \
                "${extra[@]}" >"$work/run.txt" 2>&1; then
            cat "$work/run.txt" >&2
            die "coll_bench with $be failed (rep $rep)"
        fi
        awk -v be="$be" -v rep="$rep" '$1 !~ /^#/ && NF == 3 { print $1 "," $2 "," be "," rep "," $3 }' \
            "$work/run.txt" >>"$work/raw.csv"
    done
    printf '.' >&2
done
echo >&2
elapsed=$(($(date +%s) - start))

# ------------------------------------------------------------------ min, median, tables
awk -f "$perf_dir/stats.awk" "$work/raw.csv" >"$work/stats.csv"
cut -d, -f1-5 "$work/stats.csv" >"$work/results.csv"

# Per (benchmark, size): the best other backend by median and by min, and weft's ratio to it.
awk -F, '
    NR == 1 { next }
    {
        k = $1 SUBSEP $2
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        if ($3 == "weft") { wmin[k] = $4; wmed[k] = $5; hw[k] = 1; next }
        if (!(k in omed) || $5 < omed[k]) { omed[k] = $5; nmed[k] = $3 }
        if (!(k in omin) || $4 < omin[k]) { omin[k] = $4; nmin[k] = $3 }
    }
    END {
        print "benchmark,size,best_other_by_min,other_min,ratio_min,best_other_by_median,other_median,ratio_median"
        for (i = 1; i <= nk; i++) {
            k = keys[i]
            if (!hw[k] || !(k in omed)) continue
            split(k, f, SUBSEP)
            printf "%s,%s,%s,%.6g,%.4f,%s,%.6g,%.4f\n", f[1], f[2], nmin[k], omin[k],
                (omin[k] > 0 ? wmin[k] / omin[k] : 0), nmed[k], omed[k], (omed[k] > 0 ? wmed[k] / omed[k] : 0)
        }
    }' "$work/stats.csv" >"$work/ratios.csv"

{
    echo "# perf/coll/compare.sh: $np ranks, $reps interleaved repetitions, backends ${backend_list[*]}"
    echo "# ${launch[*]} ... $bench_bin -b $benches ${size_args[*]} ${extra[*]}"
    if [[ " ${backend_list[*]} " == *" weft "* ]]; then
        echo "# weft: $snap_desc"
    fi
    echo "# coll_bench: average over ranks of each rank's mean time per call, microseconds,"
    echo "# lower is better; best = min of $reps reps, median = median of $reps reps"
    awk -F, -v order="${backend_list[*]}" '
        FNR == 1 { next }
        FILENAME ~ /ratios/ { rb[$1, $2] = $5; rm[$1, $2] = $8; on[$1, $2] = $6; hr[$1] = 1; next }
        {
            if (!(($1, $2) in seen)) { seen[$1, $2] = 1; sizes[$1] = sizes[$1] " " $2 }
            if (!($1 in bs)) { bs[$1] = 1; benches[++nb] = $1 }
            mn[$1, $2, $3] = $4; md[$1, $2, $3] = $5; have[$1, $3] = 1
        }
        END {
            title["barrier"] = "MPI_Barrier"
            title["bcast"] = "MPI_Bcast, MPI_CHAR, root 0; size = bytes"
            title["allreduce"] = "MPI_Allreduce, MPI_FLOAT, MPI_SUM; size = bytes"
            title["allgather"] = "MPI_Allgather, MPI_CHAR; size = bytes per rank"
            title["alltoall"] = "MPI_Alltoall, MPI_CHAR; size = bytes per rank and peer"
            title["reduce"] = "MPI_Reduce, MPI_FLOAT, MPI_SUM, root 0; size = bytes"
            nbe = split(order, be, " ")
            for (i = 1; i <= nb; i++) {
                b = benches[i]
                printf "\n# %s: %s\n", b, title[b]
                if (hr[b]) printf "# ratio = weft / the best other backend (by min, by median); best.other: the best by median\n"
                printf "%9s", "size"
                for (j = 1; j <= nbe; j++) if (have[b, be[j]]) {
                    w = length(be[j]) + 7; if (w < 11) w = 11
                    printf " %*s %*s", w - 2, be[j] ".best", w, be[j] ".median"
                }
                if (hr[b]) printf " %10s %12s  %s", "ratio.best", "ratio.median", "best.other"
                printf "\n"
                ns = split(sizes[b], sz, " ")
                for (s = 1; s <= ns; s++) {
                    z = sz[s]
                    printf "%9s", z
                    for (j = 1; j <= nbe; j++) if (have[b, be[j]]) {
                        w = length(be[j]) + 7; if (w < 11) w = 11
                        printf " %*.4g %*.4g", w - 2, mn[b, z, be[j]], w, md[b, z, be[j]]
                    }
                    if ((b, z) in rm) printf " %10.3f %12.3f  %s", rb[b, z], rm[b, z], on[b, z]
                    printf "\n"
                }
            }
            # One table of ratio.median: sizes down, benchmarks across.
            nr = 0
            for (i = 1; i <= nb; i++) if (hr[benches[i]]) rl[++nr] = benches[i]
            if (nr == 0) exit
            printf "\n# ratio.median = weft median / best other median (below 1: weft faster)\n"
            printf "%9s", "size"
            for (i = 1; i <= nr; i++) printf " %10s", rl[i]
            printf "\n"
            for (i = 1; i <= nr; i++) {
                n = split(sizes[rl[i]], sz, " ")
                for (s = 1; s <= n; s++) if (!(sz[s] in row)) { row[sz[s]] = 1; rows[++nrows] = sz[s] + 0 }
            }
            for (a = 2; a <= nrows; a++) {
                x = rows[a]
                for (c = a - 1; c >= 1 && rows[c] > x; c--) rows[c + 1] = rows[c]
                rows[c + 1] = x
            }
            for (s = 1; s <= nrows; s++) {
                printf "%9s", rows[s]
                for (i = 1; i <= nr; i++) {
                    if ((rl[i], rows[s]) in rm) printf " %10.3f", rm[rl[i], rows[s]]
                    else printf " %10s", "-"
                }
                printf "\n"
            }
        }' "$work/ratios.csv" "$work/stats.csv"
} | tee "$work/results.txt"
echo "# $((elapsed / 60)) min $((elapsed % 60)) s of runs" | tee -a "$work/results.txt"

if [ -n "$csv" ]; then
    cp "$work/results.csv" "$csv"
    note "wrote $csv"
fi
mkdir -p "$out"
for f in results.txt results.csv raw.csv ratios.csv; do
    cp "$work/$f" "$out/$f"
done
if command -v gnuplot >/dev/null 2>&1; then
    present_benches=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    gnuplot -e "csv='$out/results.csv'; ratios='$out/ratios.csv'; out='$out/results.png'; benches='$present_benches'; backends='${backend_list[*]}'; subtitle='  [median of $reps reps, $np ranks]'" \
        "$script_dir/coll_bench.gnuplot" || die "gnuplot failed"
    [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
else
    note "warning: gnuplot not found (apt-get install gnuplot-nox): no plot"
fi
note "wrote $out/results.txt, results.csv, raw.csv, ratios.csv$( [ -s "$out/results.png" ] && echo ", results.png")"
