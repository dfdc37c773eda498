#!/bin/sh
# The layering rules of docs/architecture.md, checked on every #include and
# preprocessor condition:
#   base       includes base (and the public weft.h for status codes) only;
#   transport  includes base and transport; a transport's directory is
#              included only from itself and from registry.cpp;
#   proto      includes base, proto and transport's interface headers only;
#   core       includes base, transport (interface, address, registry), proto, core;
#   shmem      includes shmem, weft.h, weft/coll.h and config.h only;
#   collectives includes collectives, weft.h and weft/coll.h only;
#   no WEFT_TRANSPORT_* condition outside src/transport/registry.cpp.
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
bad=0
fail() {
    echo "layers_check: $*"
    bad=$((bad + 1))
}
includes() {  # file -> the quoted includes
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}
for f in $(find src -name '*.cpp' -o -name '*.hpp' | sort); do
    layer=$(echo "$f" | cut -d/ -f2)
    for inc in $(includes "$f"); do
        case "$layer:$inc" in
            base:base/* | base:weft/weft.h | base:config.h) ;;
            transport:base/* | transport:transport/* | transport:weft/weft.h | transport:config.h) ;;
            proto:base/* | proto:proto/* | proto:weft/weft.h) ;;
            proto:transport/iface.hpp | proto:transport/address.hpp | proto:transport/component.hpp) ;;
            core:base/* | core:proto/* | core:core/* | core:weft/weft.h | core:config.h) ;;
            core:transport/iface.hpp | core:transport/address.hpp | core:transport/component.hpp) ;;
            core:transport/registry.hpp) ;;
            *) fail "$f includes \"$inc\": not allowed from $layer/" ;;
        esac
        # A transport's own directory: only itself and the registry.
        case "$inc" in
            transport/*/*)
                tdir=$(echo "$inc" | cut -d/ -f1-2)
                case "$f" in
                    src/"$tdir"/* | src/transport/registry.cpp) ;;
                    *) fail "$f includes \"$inc\": a transport is reached through the registry" ;;
                esac
                ;;
        esac
    done
done
# shmem/ is a user of weft and of the collectives library: its own files,
# weft.h, weft/coll.h and config.h only.
for f in $(find shmem -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | sort); do
    for inc in $(includes "$f"); do
        case "$inc" in
            shmem/* | weft/weft.h | weft/coll.h | config.h) ;;
            *) fail "$f includes \"$inc\": shmem/ uses weft.h and weft/coll.h only" ;;
        esac
    done
done
# collectives/ too: its own files and the public headers.
for f in $(find collectives -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | sort); do
    for inc in $(includes "$f"); do
        case "$inc" in
            collectives/* | weft/weft.h | weft/coll.h) ;;
            *) fail "$f includes \"$inc\": collectives/ uses weft.h only" ;;
        esac
    done
done
for f in $(grep -rl 'WEFT_TRANSPORT_' src include tools netmod perf shmem collectives --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' 2>/dev/null); do
    [ "$f" = src/transport/registry.cpp ] || fail "$f tests WEFT_TRANSPORT_*: only the registry may"
done
n=$(find src -name '*.cpp' -o -name '*.hpp' | wc -l)
echo "layers_check: $n files, $bad violations"
[ "$bad" -eq 0 ]
