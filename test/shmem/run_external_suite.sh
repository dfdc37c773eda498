#!/bin/sh
# run_external_suite.sh: build and run a directory of third-party OpenSHMEM
# test programs (C, and C++ if asked) against this tree's OpenSHMEM library.
#
# The suites themselves are NOT shipped with weft and must never be committed
# to it: their code belongs to their projects. Check one out (or copy its test
# programs) anywhere outside the repository, then point this script at the
# folder that holds the .c files, e.g. with a checkout of Sandia-OpenSHMEM/SOS
# in /tmp/external/SOS:
#
#   test/shmem/run_external_suite.sh -np "2 4" -I /tmp/external/SOS/test/include \
#       /tmp/external/SOS/test/unit
#   test/shmem/run_external_suite.sh /tmp/external/SOS/test/spec-example
#
# Known suites: Sandia OpenSHMEM's test/unit and test/spec-example, the
# openshmem-org tests-uh / tests-mellanox / tests-cray programs, and the OSU
# OpenSHMEM micro-benchmarks (c/openshmem of osu-micro-benchmarks: link their
# helper into every benchmark with  -e "osu_util.c osu_util_pgas.c"  plus
# -I for the folder holding osu_util.h; the -e files are not run as programs).
#
# Each program (one .c, or .cpp with -C, per program) is compiled with
# $OSHCC (or $OSHCXX for .cpp) and run with
#   timeout T $OSHRUN -np N --oversubscribe ./prog ARGS
# for each N of the -np list, one run at a time. One line per program and PE
# count: "ok", "FAIL (exit S)", "TIMEOUT", or "BUILD-FAIL"; then a summary. A
# program that exits 0 passes (the suites above check their own results and
# exit non-zero, or call shmem_global_exit(nonzero), when they are wrong).
#
# Options:
#   -np "LIST"    PE counts to run, space separated (default "2 4")
#   -t SECONDS    timeout of one run (default 120)
#   -o DIR        where to put binaries and logs (default /tmp/weft-external-<suite>)
#   -I DIR        extra include directory (repeatable)
#   -e FILES      extra source files linked into every program (space separated)
#   -x NAMES      source file names to leave out (space separated basenames)
#   -k FILE       skip list: lines "name  reason" (name without extension);
#                 those programs are reported as SKIP and not built
#   -a FILE       argument list: lines "name  args..."; a program listed
#                 runs with those arguments (default: none)
#   -f FLAGS      extra compiler flags (e.g. "-DENABLE_THREADS -fopenmp")
#   -C            also build *.cpp programs with $OSHCXX
#   -b            build only (no runs)
#   -v            print each failing run's output tail
#   NAMES...      after the directory: only these programs
#
# Environment: OSHCC, OSHCXX, OSHRUN (default: this tree's build wrappers,
# found from WEFT_BUILD_DIR, else ../bme or ./build beside the source tree),
# SHMEM_SYMMETRIC_SIZE (default 256M here: small /dev/shm in containers).
#
# Exit status: 0 when every built program passed every run, 1 otherwise.

set -u

usage() {
    sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

here=$(cd "$(dirname "$0")" && pwd)
src_top=$(cd "$here/../.." && pwd)

# Default wrappers: the build tree's (build-oshcc links the uninstalled library).
if [ -n "${WEFT_BUILD_DIR:-}" ]; then
    build=$WEFT_BUILD_DIR
elif [ -x "$src_top/../bme/shmem/build-oshcc" ]; then
    build=$(cd "$src_top/../bme" && pwd)
elif [ -x "$src_top/build/shmem/build-oshcc" ]; then
    build=$src_top/build
else
    build=.
fi
OSHCC=${OSHCC:-$build/shmem/build-oshcc}
OSHCXX=${OSHCXX:-$build/shmem/build-oshc++}
OSHRUN=${OSHRUN:-$build/shmem/build-oshrun}
SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-256M}
export SHMEM_SYMMETRIC_SIZE

nps="2 4"
tmo=120
out=""
incs=""
extra=""
excl=""
skipf=""
argf=""
flags=""
cxx=no
buildonly=no
verbose=no

while [ $# -gt 0 ]; do
    case "$1" in
        -np) nps=$2; shift 2 ;;
        -t) tmo=$2; shift 2 ;;
        -o) out=$2; shift 2 ;;
        -I) incs="$incs -I$2"; shift 2 ;;
        -e) extra="$extra $2"; shift 2 ;;
        -x) excl="$excl $2"; shift 2 ;;
        -k) skipf=$2; shift 2 ;;
        -a) argf=$2; shift 2 ;;
        -f) flags="$flags $2"; shift 2 ;;
        -C) cxx=yes; shift ;;
        -b) buildonly=yes; shift ;;
        -v) verbose=yes; shift ;;
        -h | --help) usage 0 ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
dir=$(cd "$1" && pwd) || exit 2
shift
only="$*"

case "$dir" in
    "$src_top" | "$src_top"/*)
        echo "warning: $dir is inside the weft tree; external suites belong outside it" >&2 ;;
esac

[ -n "$out" ] || out=/tmp/weft-external-$(basename "$dir")
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

# Extra sources are given relative to the suite directory unless absolute.
extra_abs=""
for e in $extra; do
    case "$e" in
        /*) extra_abs="$extra_abs $e" ;;
        *) extra_abs="$extra_abs $dir/$e" ;;
    esac
done

reap() { # reap BINARY: end PEs of BINARY that outlived their launcher (timeout
    # kills mpirun, not always its PEs); only processes running this exact file
    for d in /proc/[0-9]*; do
        exe=$(readlink "$d/exe" 2>/dev/null) || continue
        case "$exe" in
            "$1" | "$1 (deleted)") kill -9 "${d#/proc/}" 2>/dev/null ;;
        esac
    done
}

lookup() { # lookup FILE NAME: the rest of NAME's line in FILE, status 1 if none
    [ -n "$1" ] && [ -f "$1" ] || return 1
    awk -v n="$2" '$1 == n { $1 = ""; sub(/^ +/, ""); print; found = 1; exit } END { exit !found }' "$1"
}

progs=""
for f in "$dir"/*.c; do
    [ -e "$f" ] && progs="$progs $f"
done
if [ "$cxx" = yes ]; then
    for f in "$dir"/*.cpp; do
        [ -e "$f" ] && progs="$progs $f"
    done
fi

nbuilt=0
nbuildfail=0
nskip=0
results=""   # "np:pass:fail" tallies kept in files below
for n in $nps; do
    : >"$out/.tally.$n"
done

echo "suite: $dir"
echo "oshcc: $OSHCC   oshrun: $OSHRUN   PEs: $nps   timeout: ${tmo}s"
echo "logs:  $out"

for f in $progs; do
    base=$(basename "$f")
    name=${base%.*}
    skip=no
    for x in $excl $extra; do
        [ "$base" = "$(basename "$x")" ] && skip=excluded
    done
    [ "$skip" = excluded ] && continue
    if [ -n "$only" ]; then
        want=no
        for o in $only; do
            [ "$o" = "$name" ] || [ "$o" = "$base" ] && want=yes
        done
        [ "$want" = yes ] || continue
    fi
    if reason=$(lookup "$skipf" "$name"); then
        printf '%-44s SKIP (%s)\n' "$name" "$reason"
        nskip=$((nskip + 1))
        continue
    fi
    case "$base" in
        *.cpp) cc=$OSHCXX ;;
        *) cc=$OSHCC ;;
    esac
    # shellcheck disable=SC2086
    if ! "$cc" -O1 -g $flags -I"$dir" $incs -o "$out/$name" "$f" $extra_abs -lm -lpthread \
        >"$out/$name.build.log" 2>&1; then
        printf '%-44s BUILD-FAIL (%s)\n' "$name" "$out/$name.build.log"
        if [ "$verbose" = yes ]; then
            grep -m 5 'error' "$out/$name.build.log" | sed 's/^/    /'
        fi
        nbuildfail=$((nbuildfail + 1))
        continue
    fi
    nbuilt=$((nbuilt + 1))
    [ "$buildonly" = yes ] && { printf '%-44s built\n' "$name"; continue; }
    args=$(lookup "$argf" "$name") || args=""
    for n in $nps; do
        log=$out/$name.np$n.log
        # shellcheck disable=SC2086
        (cd "$out" && timeout -k 10 "$tmo" "$OSHRUN" -np "$n" --oversubscribe "./$name" $args) \
            >"$log" 2>&1 </dev/null
        rc=$?
        reap "$out/$name"
        if [ $rc -eq 0 ]; then
            status=ok
            echo "pass" >>"$out/.tally.$n"
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            status=TIMEOUT
            echo "fail" >>"$out/.tally.$n"
        else
            status="FAIL (exit $rc)"
            echo "fail" >>"$out/.tally.$n"
        fi
        printf '%-44s np=%-3s %s\n' "$name" "$n" "$status"
        if [ "$status" != ok ] && [ "$verbose" = yes ]; then
            tail -n 8 "$log" | sed 's/^/    /'
        fi
    done
done

echo "----"
echo "built: $nbuilt   build failures: $nbuildfail   skipped: $nskip"
allok=yes
[ "$nbuildfail" -eq 0 ] || allok=no
tp=0
tf=0
for n in $nps; do
    p=$(grep -c pass "$out/.tally.$n")
    fl=$(grep -c fail "$out/.tally.$n")
    tp=$((tp + p))
    tf=$((tf + fl))
    [ "$fl" -eq 0 ] || allok=no
    [ "$buildonly" = yes ] || echo "np=$n: $p passed, $fl failed"
    rm -f "$out/.tally.$n"
done
[ "$buildonly" = yes ] || echo "$tp passed, $tf failed"
[ "$allok" = yes ]
