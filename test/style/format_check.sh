#!/bin/sh
# Every C and C++ source is formatted as .clang-format says (clang-format 14,
# Debian 12's). Fix with: clang-format -i FILE. Exit 77 (skip, with the reason)
# when clang-format is not installed (contrib/install-deps.sh installs it).
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang-format >/dev/null 2>&1 || { echo "SKIP: clang-format is not installed"; exit 77; }
cd "$top" || exit 1
bad=0
n=0
for f in $(find include src test tools netmod perf shmem collectives \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) | sort); do
    n=$((n + 1))
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
echo "format_check: $n files, $bad not formatted ($(clang-format --version))"
[ "$bad" -eq 0 ]
