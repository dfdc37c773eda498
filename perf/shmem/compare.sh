#!/usr/bin/env bash
# perf/shmem/compare.sh -- weft's OpenSHMEM (shmem/, oshcc/oshrun of a weft
# build tree) vs Open MPI's oshmem (spml ucx), on the same OSU-style
# benchmarks (perf/shmem/shmem_bench.c built once with each oshcc).
#
#   perf/shmem/compare.sh [options]
#
# Every repetition launches shmem_bench once per implementation, in turn
# (weft, oshmem, weft, oshmem, ...), so that whatever the machine does hits
# both alike; at least 10 repetitions; per size and implementation the min,
# the median and the max are kept. The table gives weft / oshmem at each size
# for every benchmark (latency: below 1 means weft is faster; bandwidth and
# rate: above 1 means weft is faster) with the target next to it.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/shmem/compare.sh [options]
  --bench LIST       benchmarks, comma-separated (default: all):
                     put_lat,get_lat,put_pingpong,fadd_lat,cswap_lat,put_bw,get_bw,
                     put_rate,barrier,bcast,reduce_long,reduce_double,bcast_team,
                     reduce_team,fcollect_team (the team forms: 1.5's team routines
                     where the library has them, the 1.4 active-set ones otherwise)
  --backend LIST     implementations in launch order (default weft,oshmem)
  --reps N           repetitions per implementation (default 10, at least 10)
  --quick            fewer sizes (still interleaved, still 10 reps)
  --np N             PEs (default 2; point-to-point benchmarks use PEs 0 and 1,
                     collectives all); more PEs than cores adds --oversubscribe
  --build DIR        weft build tree with shmem/build-oshcc and shmem/build-oshrun
                     (default: $WEFT_BUILD, else the current directory, else
                     build trees next to the sources)
  --oshcc PATH       oshmem's compiler wrapper (default /usr/bin/oshcc)
  --oshrun PATH      oshmem's launcher (default /usr/bin/oshrun)
  --timeout SEC      limit per launch (default 600); a launch that fails or times
                     out is reported and its benchmark skipped for that
                     implementation from then on (the script exits 1 at the end)
  --csv FILE         also write results.csv to FILE
  --out DIR          write DIR/results.txt (tables), results.csv (benchmark,size,
                     backend,min,median,max), raw.csv (every measurement),
                     results.png, and DIR/bin/ (the two shmem_bench builds) and
                     DIR/logs/ (failed launches) (default: ./shmem-results)
  -h, --help
Arguments after -- go to shmem_bench (e.g. -- --window 128 -i 2000).
Environment: OSHMEM_ARGS (oshmem's launch options, default
  "--mca osc ^rdma --mca spml ucx --mca opal_common_ucx_tls any
   --mca opal_common_ucx_devices any"), CFLAGS (default -O2).
EOF
}

die() {
    echo "compare.sh: error: $*" >&2
    exit 1
}
note() {
    echo "compare.sh: $*" >&2
}

all_benches="put_lat,get_lat,put_pingpong,fadd_lat,cswap_lat,put_bw,get_bw,put_rate,barrier,bcast,reduce_long,reduce_double,bcast_team,reduce_team,fcollect_team"
benches="$all_benches"
backends="weft,oshmem"
reps=10
quick=0
np=2
csv=""
out="shmem-results"
build=""
oshcc=/usr/bin/oshcc
oshrun=/usr/bin/oshrun
limit=600
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bench) [ $# -ge 2 ] || die "--bench needs a list"; benches="$2"; shift 2 ;;
        --backend) [ $# -ge 2 ] || die "--backend needs a list"; backends="$2"; shift 2 ;;
        --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --np) [ $# -ge 2 ] || die "--np needs a number"; np="$2"; shift 2 ;;
        --build) [ $# -ge 2 ] || die "--build needs a directory"; build="$2"; shift 2 ;;
        --oshcc) [ $# -ge 2 ] || die "--oshcc needs a path"; oshcc="$2"; shift 2 ;;
        --oshrun) [ $# -ge 2 ] || die "--oshrun needs a path"; oshrun="$2"; shift 2 ;;
        --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; limit="$2"; shift 2 ;;
        --csv) [ $# -ge 2 ] || die "--csv needs a file"; csv="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
case "$reps" in ''|*[!0-9]*) die "--reps needs a number" ;; esac
[ "$reps" -ge 10 ] || die "--reps must be at least 10 (min and median over fewer are noise)"
case "$np" in ''|*[!0-9]*) die "--np needs a number" ;; esac
[ "$np" -ge 2 ] || die "--np must be at least 2"
case "$limit" in ''|*[!0-9]*) die "--timeout needs a number of seconds" ;; esac
[ "$benches" = all ] && benches="$all_benches"
IFS=',' read -r -a bench_list <<<"$benches"
IFS=',' read -r -a backend_list <<<"$backends"
for b in "${bench_list[@]}"; do
    case ",$all_benches," in *",$b,"*) ;; *) die "unknown benchmark '$b'" ;; esac
done
for b in "${backend_list[@]}"; do
    case "$b" in weft|oshmem) ;; *) die "unknown implementation '$b' (weft, oshmem)" ;; esac
done
command -v timeout >/dev/null 2>&1 || die "timeout not found (coreutils)"

# ------------------------------------------------------------------ find the tools
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
perf_dir=$(dirname "$script_dir")
src_dir=$(cd "$script_dir/../.." && pwd)
bench_src="$script_dir/shmem_bench.c"
[ -f "$bench_src" ] || die "$bench_src not found"
if [ -z "$build" ] && [ -n "${WEFT_BUILD:-}" ]; then
    build="$WEFT_BUILD"
fi
if [ -z "$build" ]; then
    for c in . "$src_dir"/build* "$src_dir"/../bme "$src_dir"/../build*; do
        if [ -x "$c/shmem/build-oshcc" ] && [ -x "$c/shmem/build-oshrun" ]; then
            build="$c"
            break
        fi
    done
fi
[ -n "$build" ] || die "no weft build tree found (one with shmem/build-oshcc): pass --build DIR"
[ -x "$build/shmem/build-oshcc" ] || die "$build/shmem/build-oshcc not found (make in $build)"
[ -x "$build/shmem/build-oshrun" ] || die "$build/shmem/build-oshrun not found (make in $build)"
build=$(cd "$build" && pwd)
weft_cc="$build/shmem/build-oshcc"
weft_run="$build/shmem/build-oshrun"
if [[ " ${backend_list[*]} " == *" oshmem "* ]]; then
    [ -x "$oshcc" ] || die "$oshcc not found (install libopenmpi-dev / openmpi-bin)"
    [ -x "$oshrun" ] || die "$oshrun not found (install openmpi-bin)"
fi
# Debian's Open MPI 4.1: spml ucx is oshmem's only spml; without RDMA devices
# opal_common_ucx refuses shared-memory-only transports unless told any will
# do; and stock oshmem segfaults in finalize (osc rdma cleanup) unless osc
# rdma is excluded.
oshmem_args=${OSHMEM_ARGS:-"--mca osc ^rdma --mca spml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any"}

# Same placement for both: one PE per core when they fit, else oversubscribed
# and unbound.
placement=(-np "$np")
if [ "$np" -le "$(nproc)" ]; then
    placement+=(--bind-to core)
else
    placement+=(--oversubscribe --bind-to none)
fi
root_args=()
[ "$(id -u)" = 0 ] && root_args=(--allow-run-as-root)

mkdir -p "$out/bin" "$out/logs"
out=$(cd "$out" && pwd)
cflags=${CFLAGS:--O2}

# ------------------------------------------------------------------ build shmem_bench twice
# shellcheck disable=SC2086
for be in "${backend_list[@]}"; do
    case "$be" in
        weft) cc="$weft_cc"; lib=libweft-shmem ;;
        oshmem) cc="$oshcc"; lib=liboshmem ;;
    esac
    bin="$out/bin/shmem_bench.$be"
    if ! $cc $cflags -I "$perf_dir" -o "$bin" "$bench_src" >"$out/logs/build_$be.txt" 2>&1; then
        cat "$out/logs/build_$be.txt" >&2
        die "building shmem_bench with $cc failed"
    fi
    # (not ldd | grep -q: with pipefail, grep leaving early fails the pipe)
    [[ "$(ldd "$bin")" == *"$lib"* ]] || die "$bin does not link $lib (wrong oshcc?)"
    note "built $bin with $cc $cflags"
done

launch() { # launch BACKEND ARGS...: run shmem_bench of BACKEND under timeout
    local be="$1"
    shift
    case "$be" in
        weft)
            timeout -k 10 "$limit" "$weft_run" "${placement[@]}" "$out/bin/shmem_bench.weft" "$@"
            ;;
        oshmem)
            # shellcheck disable=SC2086
            timeout -k 10 "$limit" "$oshrun" "${root_args[@]}" "${placement[@]}" $oshmem_args \
                "$out/bin/shmem_bench.oshmem" "$@"
            ;;
    esac
}

# After a failed or timed-out launch: mpirun does not always take its PEs down
# with it (seen after a timeout under load). End the processes that still run
# one of the two binaries built above (exact path, found through /proc/PID/exe),
# by PID: TERM first, then KILL.
reap() {
    local round p pids
    for round in 1 2 3 4 5 6; do
        pids=()
        for p in /proc/[0-9]*; do
            case "$(readlink "$p/exe" 2>/dev/null)" in
                "$out/bin/shmem_bench.weft" | "$out/bin/shmem_bench.oshmem") pids+=("${p#/proc/}") ;;
            esac
        done
        [ "${#pids[@]}" -eq 0 ] && return 0
        if [ "$round" -le 3 ]; then
            kill -TERM "${pids[@]}" 2>/dev/null || true
        else
            kill -KILL "${pids[@]}" 2>/dev/null || true
        fi
        sleep 1
    done
    note "warning: could not end PIDs ${pids[*]}"
}

sizes_for() {
    if [ "$quick" = 1 ]; then
        case "$1" in
            put_lat|get_lat|put_pingpong) echo "8,64,512,4k,32k,256k,1m" ;;
            put_bw|get_bw|bcast|bcast_team) echo "8,512,4k,64k,1m" ;;
            fcollect_team) echo "8,512,4k,32k,128k" ;;
            reduce_long|reduce_double|reduce_team) echo "1,16,256,4096,65536" ;;
            *) echo "" ;; # fixed size (fadd_lat, cswap_lat, barrier, put_rate)
        esac
    else
        echo "" # shmem_bench's defaults: 8 B..1 MiB, 1..65536 elements
    fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft_shmem_compare.XXXXXX")
trap 'reap; rm -rf "$work"' EXIT
echo "benchmark,size,backend,rep,value" >"$work/raw.csv"
: >"$work/failures.txt"

# ------------------------------------------------------------------ check each implementation once
for be in "${backend_list[@]}"; do
    if ! launch "$be" -b put_lat,barrier -s 8 -i 100 >"$work/check_$be.txt" 2>&1; then
        reap
        cp "$work/check_$be.txt" "$out/logs/check_$be.txt"
        cat "$work/check_$be.txt" >&2
        die "$be does not run (see above; log in $out/logs/check_$be.txt)"
    fi
    grep -q '^put_lat 8 ' "$work/check_$be.txt" || {
        cat "$work/check_$be.txt" >&2
        die "$be printed no result"
    }
done
launcher_line() {
    case "$1" in
        weft) echo "$weft_run ${placement[*]} shmem_bench.weft" ;;
        oshmem) echo "$oshrun ${root_args[*]} ${placement[*]} $oshmem_args shmem_bench.oshmem" ;;
    esac
}
for be in "${backend_list[@]}"; do
    note "$be: $(launcher_line "$be")"
done
note "$np PEs; $reps interleaved repetitions; at most $limit s per launch"

# ------------------------------------------------------------------ interleaved runs
declare -A failed=()
for b in "${bench_list[@]}"; do
    sizes=$(sizes_for "$b")
    note "$b: sizes ${sizes:-default}"
    size_args=()
    [ -n "$sizes" ] && size_args=(-s "$sizes")
    for rep in $(seq 1 "$reps"); do
        for be in "${backend_list[@]}"; do
            [ -z "${failed[$b,$be]:-}" ] || continue
            rc=0
            launch "$be" -b "$b" "${size_args[@]}" "${extra[@]}" >"$work/run.txt" 2>&1 || rc=$?
            if [ "$rc" != 0 ]; then
                sleep 1
                reap
                log="$out/logs/${b}_${be}_rep$rep.txt"
                cp "$work/run.txt" "$log"
                last=$(awk -v b="$b" '$1 == b && NF == 4 { s = $2 } END { print s }' "$work/run.txt")
                if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
                    what="timed out after $limit s"
                else
                    what="failed (exit $rc)"
                fi
                msg="$b with $be $what in rep $rep; last size done: ${last:-none}; log $log"
                echo "$msg" >>"$work/failures.txt"
                echo >&2
                note "$msg"
                tail -5 "$work/run.txt" | sed 's/^/    /' >&2
                failed[$b,$be]=1
            fi
            awk -v be="$be" -v rep="$rep" '$1 !~ /^#/ && NF == 4 { print $1 "," $2 "," be "," rep "," $3 }' \
                "$work/run.txt" >>"$work/raw.csv"
        done
        printf '.' >&2
    done
    echo >&2
done

# ------------------------------------------------------------------ min, median, table
awk -f "$perf_dir/stats.awk" "$work/raw.csv" >"$work/results.csv"

{
    echo "# weft OpenSHMEM vs Open MPI oshmem: shmem_bench, $np PEs, $reps interleaved reps"
    for be in "${backend_list[@]}"; do
        echo "#   $be: $(launcher_line "$be")"
    done
    echo "# ratio = weft / oshmem for EVERY benchmark, on the best rep (ratio.best) and on the"
    echo "# medians (ratio.median). Latencies (us): below 1 = weft faster. Bandwidth (MB/s) and"
    echo "# rate (ops/s): above 1 = weft faster. best = min for latency, max for bandwidth and rate."
    echo "# target: on ratio.median; ok = the median meets it."
} >"$work/results.txt"

awk -F, -v reps="$reps" -v np="$np" '
    NR == 1 { next }
    {
        if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[$1] = order[$1] " " $2 }
        if (!($1 in bs)) { bs[$1] = 1; benches[++nb] = $1 }
        mn[$1, $2, $3] = $4; md[$1, $2, $3] = $5; mx[$1, $2, $3] = $6; have[$1, $3] = 1
        got[$1, $2, $3] = 1
    }
    function higher(b) { return b == "put_bw" || b == "get_bw" || b == "put_rate" }
    function best(b, s, be) { return higher(b) ? mx[b, s, be] : mn[b, s, be] }
    function target(b) {
        if (higher(b)) return 1.0
        if (b == "barrier" || b == "reduce_long" || b == "reduce_double" || b == "reduce_team") return 0.8
        return 1.0
    }
    END {
        title["put_lat"] = "put_lat: shmem_putmem + shmem_quiet, PE 0 -> 1, us per put"
        title["get_lat"] = "get_lat: shmem_getmem, PE 0 <- 1, us per get"
        title["put_pingpong"] = "put_pingpong: put + fence + flag, answered by PE 1, one-way us (RTT/2)"
        title["fadd_lat"] = "fadd_lat: shmem_long_atomic_fetch_add to PE 1, us (size = 8 bytes)"
        title["cswap_lat"] = "cswap_lat: shmem_long_atomic_compare_swap to PE 1, us (size = 8 bytes)"
        title["put_bw"] = "put_bw: window of shmem_putmem_nbi (64 by default) + shmem_quiet, MB/s"
        title["get_bw"] = "get_bw: window of shmem_getmem_nbi (64 by default) + shmem_quiet, MB/s"
        title["put_rate"] = "put_rate: window of 8-byte shmem_putmem_nbi (64 by default) + shmem_quiet, puts/s"
        title["barrier"] = "barrier: shmem_barrier_all over " np " PEs, us (size column = 0)"
        title["bcast"] = "bcast: shmem_broadcast64 from PE 0 over " np " PEs, us (mean over PEs)"
        title["reduce_long"] = "reduce_long: shmem_long_sum_to_all over " np " PEs, us (size = elements)"
        title["reduce_double"] = "reduce_double: shmem_double_sum_to_all over " np " PEs, us (size = elements)"
        title["bcast_team"] = "bcast_team: shmem_broadcastmem(SHMEM_TEAM_WORLD) from PE 0 (oshmem 1.4: shmem_broadcast64) over " np " PEs, us"
        title["reduce_team"] = "reduce_team: shmem_long_sum_reduce(SHMEM_TEAM_WORLD) (oshmem 1.4: shmem_long_sum_to_all) over " np " PEs, us (size = elements)"
        title["fcollect_team"] = "fcollect_team: shmem_fcollectmem(SHMEM_TEAM_WORLD) (oshmem 1.4: shmem_fcollect64) over " np " PEs, us (size = bytes per PE)"
        for (i = 1; i <= nb; i++) {
            b = benches[i]
            both = have[b, "weft"] && have[b, "oshmem"]
            printf "\n# %s, %s is better\n", title[b], higher(b) ? "higher" : "lower"
            printf "%9s", "size"
            split("weft oshmem", all, " ")
            for (j = 1; j <= 2; j++) if (have[b, all[j]]) printf " %12s %12s", all[j] ".best", all[j] ".median"
            if (both) printf " %10s %12s %7s %4s", "ratio.best", "ratio.median", "target", "ok"
            printf "\n"
            ns = split(order[b], sz, " ")
            for (s = 1; s <= ns; s++) {
                z = sz[s]
                printf "%9s", z
                for (j = 1; j <= 2; j++) {
                    if (!have[b, all[j]]) continue
                    if (got[b, z, all[j]]) printf " %12.4g %12.4g", best(b, z, all[j]), md[b, z, all[j]]
                    else printf " %12s %12s", "-", "-"
                }
                if (both) {
                    if (got[b, z, "weft"] && got[b, z, "oshmem"] && best(b, z, "oshmem") > 0 && md[b, z, "oshmem"] > 0) {
                        rb = best(b, z, "weft") / best(b, z, "oshmem")
                        rm = md[b, z, "weft"] / md[b, z, "oshmem"]
                        t = target(b)
                        ok = higher(b) ? (rm >= t) : (rm <= t)
                        printf " %10.3f %12.3f %7s %4s", rb, rm, (higher(b) ? ">=" : "<=") sprintf("%.1f", t), ok ? "yes" : "NO"
                        nsz[b]++; nok[b] += ok
                    } else {
                        printf " %10s %12s", "-", "-"
                    }
                }
                printf "\n"
            }
        }
        printf "\n# summary: sizes whose median ratio meets the target\n"
        for (i = 1; i <= nb; i++) {
            b = benches[i]
            if (nsz[b]) printf "%-14s %3d of %3d  (target weft/oshmem %s%.1f)\n", b, nok[b], nsz[b], higher(b) ? ">=" : "<=", target(b)
        }
    }' "$work/results.csv" >>"$work/results.txt"

{
    echo
    echo "# targets: latency (put_lat, get_lat, put_pingpong, fadd_lat, cswap_lat, bcast) weft/oshmem"
    echo "# <= 1.0; barrier and reductions <= 0.8; bandwidth and put rate weft/oshmem >= 1.0"
    if [ -s "$work/failures.txt" ]; then
        echo
        echo "# FAILURES (the benchmark was skipped for that implementation after the first):"
        sed 's/^/#   /' "$work/failures.txt"
    fi
} >>"$work/results.txt"
cat "$work/results.txt"

if [ -n "$csv" ]; then
    cp "$work/results.csv" "$csv"
    note "wrote $csv"
fi
cp "$work/results.txt" "$work/results.csv" "$work/raw.csv" "$out/"
[ -s "$work/failures.txt" ] && cp "$work/failures.txt" "$out/failures.txt"
if command -v gnuplot >/dev/null 2>&1; then
    present_benches=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s%s", n++ ? " " : "", $1 }' "$work/results.csv")
    present_backends=$(awk -F, 'NR > 1 && !s[$3]++ { printf "%s%s", n++ ? " " : "", $3 }' "$work/results.csv")
    if [ -n "$present_benches" ]; then
        gnuplot -e "csv='$out/results.csv'; out='$out/results.png'; benches='$present_benches'; backends='$present_backends'; subtitle='  [median of $reps reps, $np PEs]'" \
            "$script_dir/shmem_bench.gnuplot" || die "gnuplot failed"
        [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
    fi
else
    note "warning: gnuplot not found (apt-get install gnuplot-nox): no plot"
fi
note "wrote $out/results.txt, results.csv, raw.csv$( [ -s "$out/results.png" ] && echo ", results.png")"
if [ -s "$work/failures.txt" ]; then
    note "some launches failed or timed out:"
    sed 's/^/    /' "$work/failures.txt" >&2
    exit 1
fi
