#!/usr/bin/env bash
# perf/mpi/compare.sh -- Open MPI over weft (pml cm + mtl weft) vs pml ucx vs
# ob1 + vader, on the same MPI benchmarks (perf/mpi/mpi_bench), side by side;
# the one-sided ones (put_lat, ..., get_bw) over osc weft vs osc ucx vs osc rdma.
# See docs/performance.md, sections "MPI (issue 5)" and "MPI one-sided".
#
#   perf/mpi/compare.sh [options]
#
# Every repetition launches mpi_bench once per backend, in turn (weft, ucx,
# vader, weft, ucx, vader, ...), so that whatever the machine does hits all
# three alike; at least 10 repetitions; per size and backend the min and the
# median are kept. The table gives the ratio of weft to the best of the other
# backends at each size.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: perf/mpi/compare.sh [options]
  --bench LIST       benchmarks, comma-separated: lat,bw,bibw,mbw,rate (default: these),
                     tags (rate with a tag per message, sent in reverse order),
                     one-sided put_lat,get_lat,acc_lat,fop_lat,cas_lat,put_bw,get_bw;
                     "p2p" and "rma" name each group
  --sync MODE        one-sided synchronisation: lock, flush (default, as OSU),
                     flush_local, lock_all, fence, pscw
  --win KIND         one-sided windows: allocate (MPI_Win_allocate, default) or create
  --backend LIST     backends in launch order (default weft,ucx,vader); also pml
                     (pml weft: Open MPI's point-to-point straight over weft,
                     docs/mpi.md) and sm (ob1 + vader with osc sm: one-sided,
                     MPI_Win_allocate only)
  --reps N           repetitions per backend (default 10, at least 10)
  --quick            fewer sizes (still interleaved, still 10 reps)
  --sizes LIST       these sizes for every benchmark (mpi_bench -s syntax, e.g. 8,48,64,128)
  --np N             ranks (default 2; mbw and rate use N/2 pairs; one-sided: 2)
  --csv FILE         write rows benchmark,size,backend,min,median (latency us,
                     bandwidth MB/s, rate messages/s) to FILE
  --out DIR          write DIR/results.txt (tables), results.csv, raw.csv (every
                     measurement) and results.png (default: ./mpi-results)
  --before DIR       also run the weft MTL of another build (DIR holds its
                     mca_mtl_weft.so, and mca_osc_weft.so for the one-sided
                     benchmarks, e.g. OLD_BUILD/.libs) as backend "before",
                     interleaved with the others: the tables add weft / before.
                     With backend pml and not weft: that build's pml weft
                     (mca_pml_weft.so), and the tables add pml / before
  --netns            ranks on two nodes: the network namespaces of contrib/netns/weft-netns
                     (up first), launched by `weft-netns mpirun --map-by node` (no
                     binding), so every backend crosses the veth pair over TCP; default
                     backends weft,ucx,tcp, with UCX_TLS=tcp for ucx (unless UCX_TLS is
                     set) (docs/multinode.md; docs/performance.md "tcp across two
                     network namespaces")
  --bench-bin PATH   the mpi_bench program (default: $MPI_BENCH, else
                     ./perf/mpi/mpi_bench in the current build directory, else
                     build trees next to the sources)
  -h, --help
Arguments after -- go to mpi_bench (e.g. -- --window 128).
Environment: MPIRUN (default mpirun), WEFT_MTL_DIR (directory of mca_mtl_weft.so;
default: the build tree's .libs next to mpi_bench), WEFT_OSC_DIR (directory of
mca_osc_weft.so; default WEFT_MTL_DIR).
Backends: weft = pml cm + mtl weft (+ osc weft), pml = pml weft (+ osc weft),
ucx = pml ucx (+ osc ucx),
vader = pml ob1 + btl vader,self (+ osc rdma), sm = vader's with osc sm,
tcp = pml ob1 + btl tcp,self (+ osc rdma).
EOF
}

die() {
    echo "compare.sh: error: $*" >&2
    exit 1
}
note() {
    echo "compare.sh: $*" >&2
}

p2p_benches="lat,bw,bibw,mbw,rate"
rma_benches="put_lat,get_lat,acc_lat,fop_lat,cas_lat,put_bw,get_bw"
benches="$p2p_benches"
backends=""
netns=0
sync=flush
win=allocate
reps=10
quick=0
sizes_opt=""
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
        --sync) [ $# -ge 2 ] || die "--sync needs a mode"; sync="$2"; shift 2 ;;
        --win) [ $# -ge 2 ] || die "--win needs allocate or create"; win="$2"; shift 2 ;;
        --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --sizes) [ $# -ge 2 ] || die "--sizes needs a list"; sizes_opt="$2"; shift 2 ;;
        --np) [ $# -ge 2 ] || die "--np needs a number"; np="$2"; shift 2 ;;
        --csv) [ $# -ge 2 ] || die "--csv needs a file"; csv="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
        --bench-bin) [ $# -ge 2 ] || die "--bench-bin needs a path"; bench_bin="$2"; shift 2 ;;
        --before) [ $# -ge 2 ] || die "--before needs a directory"; before_dir="$2"; shift 2 ;;
        --netns) netns=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
case "$reps" in ''|*[!0-9]*) die "--reps needs a number" ;; esac
if [ -z "$backends" ]; then
    if [ "$netns" = 1 ]; then backends="weft,ucx,tcp"; else backends="weft,ucx,vader"; fi
fi
[ "$reps" -ge 10 ] || die "--reps must be at least 10 (min and median over fewer are noise)"
case "$np" in ''|*[!0-9]*) die "--np needs a number" ;; esac
if [ "$np" -lt 2 ] || [ $((np % 2)) -ne 0 ]; then
    die "--np must be even and at least 2"
fi
benches=$(echo ",$benches," | sed -e "s/,p2p,/,$p2p_benches,/g; s/,rma,/,$rma_benches,/g" \
    -e 's/^,//; s/,$//')
IFS=',' read -r -a bench_list <<<"$benches"
IFS=',' read -r -a backend_list <<<"$backends"
# The build "before" is compared with: weft (pml cm + mtl weft), or pml weft
# when pml runs and weft does not.
before_of=weft
if [[ " ${backend_list[*]} " == *" pml "* ]] && [[ " ${backend_list[*]} " != *" weft "* ]]; then
    before_of=pml
fi
if [ -n "$before_dir" ] && [[ " ${backend_list[*]} " != *" before "* ]]; then
    # Right after weft (or pml), so that the two see the machine in the same state.
    with=()
    for b in "${backend_list[@]}"; do
        with+=("$b")
        [ "$b" = "$before_of" ] && with+=(before)
    done
    [[ " ${with[*]} " == *" before "* ]] || with=(before "${with[@]}")
    backend_list=("${with[@]}")
fi
is_rma() {
    case "$1" in put_lat|get_lat|acc_lat|fop_lat|cas_lat|put_bw|get_bw) return 0 ;; esac
    return 1
}
any_p2p=0
any_rma=0
for b in "${bench_list[@]}"; do
    case "$b" in
        lat|bw|bibw|mbw|rate|tags) any_p2p=1 ;;
        put_lat|get_lat|acc_lat|fop_lat|cas_lat|put_bw|get_bw) any_rma=1 ;;
        *) die "unknown benchmark '$b'" ;;
    esac
done
case "$sync" in lock|flush|flush_local|lock_all|fence|pscw) ;;
    *) die "unknown --sync '$sync' (lock, flush, flush_local, lock_all, fence, pscw)" ;; esac
case "$win" in allocate|create) ;; *) die "unknown --win '$win' (allocate, create)" ;; esac
if [ "$any_rma" = 1 ] && [ "$np" -ne 2 ]; then
    die "the one-sided benchmarks run on exactly 2 ranks (--np 2)"
fi
for b in "${backend_list[@]}"; do
    case "$b" in weft|pml|ucx|vader|tcp) ;; before) [ -n "$before_dir" ] || die "backend before needs --before DIR" ;;
        sm) [ "$any_p2p" = 0 ] || die "backend sm (osc sm) is for the one-sided benchmarks only"
            [ "$win" = allocate ] || die "backend sm: osc sm supports MPI_Win_allocate windows only (--win allocate)" ;;
        *) die "unknown backend '$b' (weft, pml, before, ucx, vader, sm, tcp)" ;; esac
    if [ "$netns" = 1 ] && { [ "$b" = vader ] || [ "$b" = sm ]; }; then
        die "backend $b (shared memory) cannot reach the other node (--netns): use tcp"
    fi
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
osc_dir=${WEFT_OSC_DIR:-$mtl_dir}
weft_path="$mtl_dir"
if [[ " ${backend_list[*]} " == *" pml "* ]]; then
    [ -f "$mtl_dir/mca_pml_weft.so" ] || die "mca_pml_weft.so not in $mtl_dir (set WEFT_MTL_DIR)"
fi
if [[ " ${backend_list[*]} " == *" weft "* ]] || [[ " ${backend_list[*]} " == *" pml "* ]]; then
    [ -f "$mtl_dir/mca_mtl_weft.so" ] || die "mca_mtl_weft.so not in $mtl_dir (set WEFT_MTL_DIR)"
    mtl_dir=$(cd "$mtl_dir" && pwd)
    weft_path="$mtl_dir"
    if [ "$any_rma" = 1 ]; then
        [ -f "$osc_dir/mca_osc_weft.so" ] || die "mca_osc_weft.so not in $osc_dir (set WEFT_OSC_DIR): \
the one-sided benchmarks need the osc weft component for backend weft (or leave weft out: --backend ucx,vader)"
        osc_dir=$(cd "$osc_dir" && pwd)
        [ "$osc_dir" = "$mtl_dir" ] || weft_path="$osc_dir:$mtl_dir"
    fi
fi
if [ -n "$before_dir" ]; then
    before_so=mca_mtl_weft.so
    [ "$before_of" = pml ] && before_so=mca_pml_weft.so
    [ -f "$before_dir/$before_so" ] || die "$before_so not in $before_dir (--before)"
    if [ "$any_rma" = 1 ]; then
        [ -f "$before_dir/mca_osc_weft.so" ] || die "mca_osc_weft.so not in $before_dir (--before, one-sided)"
    fi
    before_dir=$(cd "$before_dir" && pwd)
fi
note "using $bench_bin"

mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null 2>&1 || die "$mpirun not found (install openmpi-bin)"
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p' || true)
ompi_dir=${ompi_dir:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
if [ "$netns" = 1 ]; then
    # Half of the ranks on each node (--map-by node); weft-netns mpirun adds the
    # hostfile, the launch agent, btl_tcp_if_include (the veth pair's subnet),
    # --bind-to none (the nodes share the cores: each node's daemon would bind
    # its first rank to core 0) and --allow-run-as-root.
    export UCX_TLS="${UCX_TLS:-tcp}"
    export WEFTNS_MPIRUN="$mpirun"
    "$src_dir/contrib/netns/weft-netns" status >/dev/null 2>&1 ||
        die "--netns: the network namespaces are not up (contrib/netns/weft-netns up, as root)"
    launch=("$src_dir/contrib/netns/weft-netns" mpirun -np "$np" --map-by node)
    [ "$np" -le "$(nproc)" ] || launch+=(--oversubscribe --mca mpi_yield_when_idle 1)
    [ -z "${WEFT_TRANSPORTS:-}" ] || launch+=(-x WEFT_TRANSPORTS)
else
    launch=("$mpirun" -np "$np" --bind-to core)
    [ "$np" -le "$(nproc)" ] || launch+=(--oversubscribe)
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
fi

# backend_args BACKEND BENCH: the mpirun options of a backend for a benchmark.
# One-sided benchmarks name the osc component too, and only that one, so that a
# run either uses it or fails (MPI_Win_allocate/create finds no component).
backend_args() {
    local osc=""
    if is_rma "$2"; then
        case "$1" in
            weft|before|sm) osc="--mca osc $1" ;;
            pml) osc="--mca osc weft" ;;
            # Debian's openmpi-mca-params.conf has osc = ^ucx,pt2pt; a
            # command-line --mca osc overrides that file.
            ucx) osc="--mca osc ucx" ;;
            vader|tcp) osc="--mca osc rdma" ;;
        esac
        [ "$1" = before ] && osc="--mca osc weft"
    fi
    case "$1" in
        weft) echo "--mca mca_base_component_path $weft_path:$ompi_dir --mca pml cm --mca mtl weft $osc" ;;
        pml) echo "--mca mca_base_component_path $weft_path:$ompi_dir --mca pml weft $osc" ;;
        before)
            if [ "$before_of" = pml ]; then
                echo "--mca mca_base_component_path $before_dir:$ompi_dir --mca pml weft $osc"
            else
                echo "--mca mca_base_component_path $before_dir:$ompi_dir --mca pml cm --mca mtl weft $osc"
            fi
            ;;
        # Debian disables pml ucx by default, and without RDMA devices Open MPI
        # 4.1 refuses it unless told any transport and device will do.
        ucx) echo "--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any" \
            "${UCX_TLS:+-x UCX_TLS} $osc" ;;
        vader|sm) echo "--mca pml ob1 --mca btl vader,self $osc" ;;
        tcp) echo "--mca pml ob1 --mca btl tcp,self $osc" ;;
    esac
}

# bench_args BENCH: mpi_bench options beyond the sizes.
bench_args() {
    if is_rma "$1"; then
        echo "--sync $sync --win $win"
    fi
}

sizes_for() {
    case "$1" in fop_lat|cas_lat) echo 8; return ;; esac
    if [ -n "$sizes_opt" ]; then
        echo "$sizes_opt"
        return
    fi
    if [ "$quick" = 1 ]; then
        case "$1" in
            lat|put_lat|get_lat|acc_lat) echo "1,8,64,512,4k,16k,64k,1m" ;;
            rate|tags) echo "1,8,64,512,4k" ;;
            # A window of 64 slots: 64 MiB per rank at 1 MiB (256 MiB at 4 MiB).
            put_bw|get_bw) echo "8,512,4k,64k,256k,1m" ;;
            *) echo "8,512,4k,64k,256k,1m,4m" ;;
        esac
    else
        case "$1" in
            lat) echo "0,1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m" ;;
            rate|tags) echo "1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k" ;;
            *) echo "1,2,4,8,16,32,64,128,256,512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m" ;;
        esac
    fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft_mpi_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "benchmark,size,backend,rep,value" >"$work/raw.csv"

# ------------------------------------------------------------------ check each backend once
# Point-to-point: one lat run per backend. One-sided: every benchmark once per
# backend with the --sync and --win of the runs (a few iterations).
declare -A skip=()
check_list=()
[ "$any_p2p" = 1 ] && check_list+=(lat)
for b in "${bench_list[@]}"; do
    is_rma "$b" && check_list+=("$b")
done
for be in "${backend_list[@]}"; do
    for cb in "${check_list[@]}"; do
        if is_rma "$cb"; then
            check_args=(-b "$cb" -s 8 -i 20 -w 2)
        else
            check_args=(-b lat -s 8 -i 100)
        fi
        # shellcheck disable=SC2046
        if ! "${launch[@]}" $(backend_args "$be" "$cb") --mca mtl_weft_verbose 1 "$bench_bin" \
                "${check_args[@]}" $(bench_args "$cb") >"$work/check_$be.txt" 2>&1; then
            if [ "$be" = vader ] && [ "$cb" = cas_lat ] && [ "$win" = allocate ] &&
                grep -q 'Segmentation fault' "$work/check_$be.txt"; then
                # Open MPI 4.1's osc rdma over btl vader crashes in
                # MPI_Compare_and_swap on MPI_Win_allocate windows (also
                # osu_cas_latency: open-mpi/ompi issue 11349).
                note "vader: cas_lat crashes in Open MPI (osc rdma + btl vader, MPI_Win_allocate," \
                    "a known Open MPI 4.1 bug); cas_lat runs without vader (--win create works)"
                skip["$be,$cb"]=1
                continue
            fi
            cat "$work/check_$be.txt" >&2
            die "backend $be does not run $cb (see above)"
        fi
        if { [ "$be" = weft ] || { [ "$be" = before ] && [ "$before_of" = weft ]; }; } &&
            [ "$(grep -c 'mtl weft: selected on rank' "$work/check_$be.txt")" -ne "$np" ]; then
            cat "$work/check_$be.txt" >&2
            die "the weft MTL was not selected on every rank"
        fi
    done
done
note "backends ${backend_list[*]} run; $np ranks; $reps interleaved repetitions"
[ "$any_rma" = 1 ] && note "one-sided: sync $sync, windows from MPI_Win_$win"

# ------------------------------------------------------------------ interleaved runs
for b in "${bench_list[@]}"; do
    sizes=$(sizes_for "$b")
    note "$b: sizes $sizes"
    for rep in $(seq 1 "$reps"); do
        for be in "${backend_list[@]}"; do
            [ -z "${skip[$be,$b]:-}" ] || continue
            # shellcheck disable=SC2046
            if ! "${launch[@]}" $(backend_args "$be" "$b") "$bench_bin" -b "$b" -s "$sizes" \
                    $(bench_args "$b") "${extra[@]}" >"$work/run.txt" 2>&1; then
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

awk -F, -v reps="$reps" -v np="$np" -v sync="$sync" -v win="$win" -v bof="$before_of" '
    NR == 1 { next }
    {
        if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[$1] = order[$1] " " $2 }
        if (!($1 in bs)) { bs[$1] = 1; benches[++nb] = $1 }
        mn[$1, $2, $3] = $4; md[$1, $2, $3] = $5; mx[$1, $2, $3] = $6; have[$1, $3] = 1
    }
    function low(b) { return b == "lat" || b ~ /_lat$/ }
    function best(b, s, be) { return low(b) ? mn[b, s, be] : mx[b, s, be] }
    END {
        title["lat"] = "lat: one-way latency (RTT/2), us, lower is better"
        title["bw"] = "bw: bandwidth, window 64, MB/s, higher is better"
        title["bibw"] = "bibw: bidirectional bandwidth (sum), MB/s, higher is better"
        title["mbw"] = "mbw: multi-pair bandwidth (" np / 2 " pairs, sum), MB/s, higher is better"
        title["rate"] = "rate: message rate (" np / 2 " pairs, sum), messages/s, higher is better"
        title["tags"] = "tags: message rate, a tag per message, sent in reverse (" np / 2 " pairs, sum), messages/s, higher is better"
        os = " (sync " sync ", MPI_Win_" win ")"
        title["put_lat"] = "put_lat: MPI_Put latency" os ", us per operation, lower is better"
        title["get_lat"] = "get_lat: MPI_Get latency" os ", us per operation, lower is better"
        title["acc_lat"] = "acc_lat: MPI_Accumulate (MPI_SUM) latency" os ", us per operation, lower is better"
        title["fop_lat"] = "fop_lat: MPI_Fetch_and_op (64-bit MPI_SUM) latency" os ", us, lower is better"
        title["cas_lat"] = "cas_lat: MPI_Compare_and_swap (64-bit) latency" os ", us, lower is better"
        title["put_bw"] = "put_bw: MPI_Put bandwidth, window 64" os ", MB/s, higher is better"
        title["get_bw"] = "get_bw: MPI_Get bandwidth, window 64" os ", MB/s, higher is better"
        nall = split("weft pml before ucx vader sm tcp", all, " ")
        for (i = 1; i <= nb; i++) {
            b = benches[i]
            printf "\n# %s\n", title[b]
            others = ""
            for (j = 4; j <= nall; j++) if (have[b, all[j]]) others = others (others == "" ? "" : ", ") all[j]
            nother = split(others, tmp, ", ")
            printf "# best = %s of %d reps%s%s\n", low(b) ? "min" : "max", reps, \
                (have[b, "weft"] && nother > 0 ? "; ratio = weft / " (nother > 1 ? "the best of " : "") others : ""), \
                (have[b, "before"] ? "; vs.before = " bof " / before" : "") \
                (have[b, "pml"] && nother > 0 ? "; pml.ratio = pml / the same" : "")
            printf "%9s", "size"
            for (j = 1; j <= nall; j++) if (have[b, all[j]]) printf " %12s %12s", all[j] ".best", all[j] ".median"
            if (have[b, "weft"] && nother > 0) printf " %10s %12s", "ratio.best", "ratio.median"
            if (have[b, "pml"] && nother > 0) printf " %14s %16s", "pml.ratio.best", "pml.ratio.median"
            if (have[b, bof] && have[b, "before"]) printf " %16s %18s", "vs.before.best", "vs.before.median"
            printf "\n"
            ns = split(order[b], sz, " ")
            for (s = 1; s <= ns; s++) {
                z = sz[s]
                printf "%9s", z
                for (j = 1; j <= nall; j++) if (have[b, all[j]]) printf " %12.4g %12.4g", best(b, z, all[j]), md[b, z, all[j]]
                ob = ""; om = ""
                if (nother > 0) {
                    for (j = 4; j <= nall; j++) {
                        be = all[j]
                        if (!have[b, be] || !((b, z, be) in md)) continue
                        x = best(b, z, be); y = md[b, z, be]
                        if (low(b)) {
                            if (ob == "" || x < ob) ob = x
                            if (om == "" || y < om) om = y
                        } else {
                            if (ob == "" || x > ob) ob = x
                            if (om == "" || y > om) om = y
                        }
                    }
                }
                if (have[b, "weft"] && nother > 0) {
                    rb = ob > 0 ? best(b, z, "weft") / ob : 0
                    rm = om > 0 ? md[b, z, "weft"] / om : 0
                    printf " %10.3f %12.3f", rb, rm
                }
                if (have[b, "pml"] && nother > 0) {
                    rb = ob > 0 ? best(b, z, "pml") / ob : 0
                    rm = om > 0 ? md[b, z, "pml"] / om : 0
                    printf " %14.3f %16.3f", rb, rm
                }
                if (have[b, bof] && have[b, "before"]) {
                    xb = best(b, z, "before"); xm = md[b, z, "before"]
                    vb = xb > 0 ? best(b, z, bof) / xb : 0
                    vm = xm > 0 ? md[b, z, bof] / xm : 0
                    printf " %16.3f %18.3f", vb, vm
                }
                printf "\n"
            }
        }
    }' "$work/stats.csv" | tee "$work/results.txt"

if [ "$any_p2p" = 1 ]; then
    echo
    echo "# targets (docs/performance.md): ratio.median of 8-byte latency <= 0.75, latency up to"
    echo "# 64 KiB <= 0.8, bandwidth at 64 KiB and above >= 1.25, 8-byte message rate >= 1.5"
fi

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
    osub=""
    [ "$any_rma" = 1 ] && osub=", one-sided: sync $sync, MPI_Win_$win"
    heading=""
    [ "$netns" = 1 ] && heading="; heading='Open MPI across two network namespaces (tcp over a veth pair): $present_backends'"
    gnuplot -e "csv='$out/results.csv'; out='$out/results.png'; benches='$present_benches'; backends='$present_backends'; subtitle='  [median of $reps reps, $np ranks$osub]'$heading" \
        "$script_dir/mpi_bench.gnuplot" || die "gnuplot failed"
    [ -s "$out/results.png" ] || die "gnuplot wrote no $out/results.png"
else
    note "warning: gnuplot not found (apt-get install gnuplot-nox): no plot"
fi
note "wrote $out/results.txt, results.csv, raw.csv$( [ -s "$out/results.png" ] && echo ", results.png")"
