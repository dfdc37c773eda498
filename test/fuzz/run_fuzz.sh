#!/bin/sh
# make check: build the fuzz targets in a clang tree (--enable-fuzz, under the
# build directory) and run each for a bounded time over its corpus
# (test/fuzz/corpus/<target>, in the repository). Any crash, leak, timeout or
# sanitizer report fails the test and leaves the reproducer in
# fuzz-build/artifacts/. Without clang's libFuzzer: a visible skip (77).
#   WEFT_TEST_FUZZ_SECONDS  seconds per target (default 20; docs/testing.md
#                           gives the longer run)
set -u
top=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)/fuzz-build
secs=${WEFT_TEST_FUZZ_SECONDS:-20}
targets="fuzz_address fuzz_key fuzz_verbs_cm fuzz_proto fuzz_shm fuzz_tcp"

if ! command -v clang++ >/dev/null 2>&1; then
    echo "SKIP: clang++ is not installed (contrib/install-deps.sh installs it)"
    exit 77
fi
probe=$(mktemp -d)
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }\n' >"$probe/p.cpp"
if ! clang++ -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
    rm -rf "$probe"
    echo "SKIP: clang++ cannot link libFuzzer (-fsanitize=fuzzer; Debian: libclang-rt-14-dev)"
    exit 77
fi
rm -rf "$probe"

mkdir -p "$build" "$build/artifacts"
cd "$build" || exit 1
if [ ! -f Makefile ]; then
    echo "run_fuzz: configuring the clang fuzz tree in $build"
    "$top/configure" --enable-fuzz CC=clang CXX=clang++ CXXFLAGS="-O1 -g" CFLAGS="-O1 -g" \
        >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
fi
# Only the library and the targets (not the tests or tools of that tree).
make -j"$(nproc)" $targets >make.log 2>&1 || { tail -40 make.log; exit 1; }

status=0
for t in $targets; do
    corpus="$top/test/fuzz/corpus/$t"
    work="$build/corpus/$t"  # new inputs found here stay out of the source tree
    mkdir -p "$work"
    # -rss_limit_mb: a leak or an unbounded allocation fails; -timeout: a hang does.
    ASAN_OPTIONS=detect_leaks=1 ./$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
        "$work" "$corpus" >"$t.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$t.log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $t (exit $rc):"
        grep -E "ERROR|SUMMARY|==[0-9]+==|Test unit written|runtime error" "$t.log" | head -20
        tail -20 "$t.log"
        status=1
    else
        echo "ok:   $t: ${execs:-?} executions in ${secs} s, no crash"
    fi
done
exit "$status"
