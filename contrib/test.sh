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
# Show the logs of failed tests (automake keeps them in *.log files).
if [ "$status" -ne 0 ]; then
    for t in $(grep -l '^FAIL\|^ERROR' $(find . -name '*.trs') 2>/dev/null | sed 's/\.trs$/.log/'); do
        echo "===== $t"; tail -n 60 "$t"
    done
fi
make check-headers >/dev/null || { echo "check-headers failed"; status=1; }
# The plain summary line CI reads. grep exits 1 when it counts nothing, which
# set -e with pipefail would take for a failure: count with awk instead.
count() { find . -name '*.trs' -exec cat {} + 2>/dev/null | awk -v re="$1" '$0 ~ re { n++ } END { print n + 0 }'; }
pass=$(count '^:test-result: PASS')
fail=$(count '^:test-result: (FAIL|ERROR|XPASS)')
skip=$(count '^:test-result: SKIP')
echo "${pass} passed, ${fail} failed, ${skip} skipped"
exit "$status"
