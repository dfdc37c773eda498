#!/bin/sh
# ./configure CXXFLAGS=... and CFLAGS=... are used as given, and the defaults
# apply when they are not given: configure into a scratch directory and read
# the flags its Makefile carries.
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
flag() { sed -n "s/^$1 = //p" Makefile; }
rc=0
"$top/configure" -q --disable-verbs CXXFLAGS="-O1 -DWEFT_FLAGS_MARK" CFLAGS="-O1 -DWEFT_CFLAGS_MARK" >log 2>&1 ||
    { echo "configure failed:"; tail -20 log; exit 1; }
[ "$(flag CXXFLAGS)" = "-O1 -DWEFT_FLAGS_MARK" ] || { echo "CXXFLAGS given, Makefile has '$(flag CXXFLAGS)'"; rc=1; }
[ "$(flag CFLAGS)" = "-O1 -DWEFT_CFLAGS_MARK" ] || { echo "CFLAGS given, Makefile has '$(flag CFLAGS)'"; rc=1; }
rm -rf ./* 2>/dev/null
"$top/configure" -q --disable-verbs >log 2>&1 || { echo "configure failed:"; tail -20 log; exit 1; }
[ "$(flag CXXFLAGS)" = "-O2 -g" ] || { echo "default CXXFLAGS: Makefile has '$(flag CXXFLAGS)'"; rc=1; }
[ "$(flag WEFT_OPT)" = "-DNDEBUG" ] || { echo "default WEFT_OPT: Makefile has '$(flag WEFT_OPT)'"; rc=1; }
[ $rc -eq 0 ] && echo "configure_flags_check: CXXFLAGS and CFLAGS honoured, defaults otherwise"
exit $rc
