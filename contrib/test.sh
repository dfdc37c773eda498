#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run every test (make check).
# This is the README's test command and what CI runs (.ci/run).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"
cd "${WEFT_BUILD_DIR:-$top/build}"
status=0
make -j"$(nproc)" check || status=$?
make check-headers >/dev/null || { echo "check-headers failed"; status=1; }
# Show what failed (automake keeps each test's output in its .log file), last,
# so it stays in view right above the summary: the lines that name a failure,
# then the end of the log.
for trs in $(grep -l '^:test-result: \(FAIL\|ERROR\|XPASS\)' $(find . -name '*.trs') 2>/dev/null); do
    log=${trs%.trs}.log
    echo "===== $log: failure lines"
    grep -n -E 'Failure|FAILED|[Ff]ailed|error|Error|timed out|Timeout|signal|Abort' "$log" | head -n 40 || true
    echo "===== $log: last lines"
    tail -n 25 "$log"
done
# The plain summary line CI reads. grep exits 1 when it counts nothing, which
# set -e with pipefail would take for a failure: count with awk instead.
count() { find . -name '*.trs' -exec cat {} + 2>/dev/null | awk -v re="$1" '$0 ~ re { n++ } END { print n + 0 }'; }
pass=$(count '^:test-result: PASS')
fail=$(count '^:test-result: (FAIL|ERROR|XPASS)')
skip=$(count '^:test-result: SKIP')
echo "${pass} passed, ${fail} failed, ${skip} skipped"
exit "$status"
