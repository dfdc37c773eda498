#!/bin/sh
# make check: verify the spin model of credit-based flow control
# (test/proto/credits.pml, docs/credits.md).
#
# For each configuration: spin -a generates the verifier, gcc compiles it, pan
# runs an exhaustive search, and the result must be what is expected:
#   pass      0 errors, search complete, in both runs:
#             safety (-DSAFETY: assertions -- no overrun, conservation, the pool
#             never over-grants -- and invalid end states, i.e. deadlocks) and
#             cycles (-DNP, pan -l: a cycle would be an explicit-update storm)
#   deadlock  the safety run finds an invalid end state
#   storm     the cycle run finds a non-progress cycle
# The broken configurations (last-credit rule off, threshold too high, window
# too small) prove that the model can fail.
#
# Exit 77 (automake: SKIP) only when spin is not installed; anything else that
# goes wrong is a failure. Environment:
#   SPIN      spin to use (default: spin from PATH)
#   SPIN_CC   C compiler for the verifier (default: gcc, else cc)
#   SPIN_KEEP a directory: keep the verifier, outputs and trails there
set -u

spin=${SPIN:-spin}
if ! command -v "$spin" >/dev/null 2>&1; then
    echo "SKIP: spin is not installed (Debian package 'spin'); the credit model is not checked"
    exit 77
fi
cc=${SPIN_CC:-}
if [ -z "$cc" ]; then
    if command -v gcc >/dev/null 2>&1; then cc=gcc; else cc=cc; fi
fi

here=$(cd "$(dirname "$0")" && pwd)
model=$here/credits.pml
if [ ! -r "$model" ]; then
    echo "FAIL: $model not found"
    exit 1
fi
if [ -n "${SPIN_KEEP:-}" ]; then
    mkdir -p "$SPIN_KEEP" && work=$(cd "$SPIN_KEEP" && pwd) || exit 1
else
    work=$(mktemp -d) || exit 1
    trap 'rm -rf "$work"' EXIT
fi
cp "$model" "$work/credits.pml" || exit 1
cd "$work" || exit 1

failures=0
runs=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# One search. $1: safety | cycles; $2: output file; rest: spin -D options.
# Prints pan's error count (or "none" when pan did not report one).
search() {
    kind=$1
    out=$2
    shift 2
    rm -f pan pan.* credits.pml.trail
    if ! "$spin" -a "$@" credits.pml >"$out.spin" 2>&1; then
        cat "$out.spin" >&2
        echo none
        return
    fi
    # Bounded memory (MB) and depth: an incomplete search is a failure below.
    # -O1: the searches take well under a second, so compile time dominates.
    case $kind in
        safety) cflags="-DSAFETY" pflags="" ;;
        cycles) cflags="-DNP" pflags="-l" ;;
    esac
    if ! "$cc" -w -O1 $cflags -DMEMLIM=1024 -o pan pan.c >"$out.cc" 2>&1; then
        cat "$out.cc" >&2
        echo none
        return
    fi
    timeout 120 ./pan $pflags -m200000 -w20 >"$out" 2>&1
    sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -n 1 | grep . || echo none
}

# The search was exhaustive: no depth or memory bound was hit.
complete() {
    ! grep -q -e 'max search depth too small' -e 'MEMLIM' -e 'out of memory' "$1"
}

# The final state of the counterexample, one line: the credit arrays, indexed
# by S(me, peer) = me * peers + peer.
trail_summary() {
    [ -f credits.pml.trail ] || return 0
    "$spin" -t -g "$@" credits.pml 2>/dev/null |
        awk '/^[ \t]*(send_credits|returnable)\[[0-9]+\] = [0-9]+$/ {
                 split($1, a, "["); i = a[2] + 0; v[a[1], i] = $3; if (i > n) n = i }
             END { split("send_credits returnable", names, " ")
                   for (k = 1; k <= 2; k++) { printf "%s%s=[", (k > 1 ? " " : ""), names[k]
                       for (i = 0; i <= n; i++) printf "%s%s", (i ? "," : ""), v[names[k], i]
                       printf "]" } }'
}

# check NAME EXPECT -D...   EXPECT: pass | deadlock | storm
check() {
    name=$1
    expect=$2
    shift 2
    runs=$((runs + 1))
    start=$(date +%s)
    case $expect in
        pass)
            e1=$(search safety "$name.safety" "$@")
            if [ "$e1" != 0 ]; then
                fail "$name: safety search: errors: $e1 (expected 0)"
                sed -n '1,12p' "$name.safety"
                trail_summary "$@"
                echo
                return
            fi
            if ! complete "$name.safety"; then
                fail "$name: safety search incomplete"
                grep -e 'depth' -e 'MEMLIM' -e 'memory' "$name.safety"
                return
            fi
            e2=$(search cycles "$name.cycles" "$@")
            if [ "$e2" != 0 ]; then
                fail "$name: cycle search: errors: $e2 (expected 0: a cycle is an update storm)"
                sed -n '1,12p' "$name.cycles"
                return
            fi
            if ! complete "$name.cycles"; then
                fail "$name: cycle search incomplete"
                return
            fi
            states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$name.safety" | head -n 1)
            echo "ok    $name: no overrun, no deadlock, no storm ($states states, $(($(date +%s) - start)) s)"
            ;;
        deadlock)
            e=$(search safety "$name.safety" "$@")
            if [ "$e" = none ] || [ "$e" -eq 0 ] || ! grep -q 'invalid end state' "$name.safety"; then
                fail "$name: expected spin to find a deadlock (invalid end state), got errors: $e"
                sed -n '1,12p' "$name.safety"
                return
            fi
            echo "ok    $name: deadlock found, as expected; final state: $(trail_summary "$@")"
            ;;
        storm)
            e=$(search cycles "$name.cycles" "$@")
            if [ "$e" = none ] || [ "$e" -eq 0 ] || ! grep -q 'non-progress cycle' "$name.cycles"; then
                fail "$name: expected spin to find an update storm (non-progress cycle), got errors: $e"
                sed -n '1,12p' "$name.cycles"
                return
            fi
            echo "ok    $name: update storm found, as expected"
            ;;
    esac
}

echo "spin: $("$spin" -V 2>&1 | head -n 1); model: $model"

# The protocol as implemented (src/proto/credits.hpp), two peers sending to each other.
check w3-t2 pass -DW=3 -DT=2 -DN=4
check w4-t2 pass -DW=4 -DT=2 -DN=4
check w4-t3 pass -DW=4 -DT=3 -DN=4
# Per-peer window larger than the initial credits: the rest is granted later.
check w5-init3-t2 pass -DW=5 -DINIT=3 -DT=2 -DN=4
# Shared pool: endpoint 2 receives from 0 and 1 through 7 buffers, 3 per peer
# at first, up to 5 per peer.
check pool-init3-cap5 pass -DPOOL -DW=5 -DINIT=3 -DT=2 -DN=4 -DPOOL_SIZE=7

# Broken on purpose: each must fail, for the stated reason.
# Without the last-credit rule both peers spend every credit on data, release
# everything, and have no credit left to send the updates.
check no-rds-w3 deadlock -DRDS=0 -DW=3 -DT=2 -DN=4
check no-rds-w4 deadlock -DRDS=0 -DW=4 -DT=2 -DN=5
# Threshold above window - 1: a blocked peer waits for an update never sent.
check w3-t3 deadlock -DW=3 -DT=3 -DN=4
check w2-t2 deadlock -DW=2 -DT=2 -DN=3
# Threshold 1: every update's own credit triggers an update back, forever.
check w2-t1 storm -DW=2 -DT=1 -DN=3
# Shared pool: the threshold must respect the initial grant, not the cap.
check pool-t3 deadlock -DPOOL -DW=5 -DINIT=3 -DT=3 -DN=4 -DPOOL_SIZE=7

if [ $failures -ne 0 ]; then
    echo "FAIL: $failures of $runs spin checks failed (keep the files with SPIN_KEEP=dir)"
    exit 1
fi
echo "PASS: $runs spin checks"
exit 0
