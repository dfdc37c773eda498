#!/bin/bash
# Paired launches of pml weft from two build trees, and pml ucx, in turn
# (docs/performance.md, "Receive posting inlined, one sender lookup"):
#   paired.sh OLD_BUILD NEW_BUILD N BENCH SIZES [mpi_bench arguments]
# e.g. paired.sh ../build-f224b4e ../build 10 rate 1,8,64 > paired-rate.txt
# Prints: launch, old/new/ucx, and mpi_bench's result line.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
od=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); n=$3; b=$4; s=$5; shift 5
for i in $(seq 1 "$n"); do
  for v in old new ucx; do
    case $v in
      old) a="--mca mca_base_component_path $old/.libs:$od --mca pml weft";;
      new) a="--mca mca_base_component_path $new/.libs:$od --mca pml weft";;
      ucx) a="--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any";;
    esac
    mpirun -np 2 --bind-to core $a "$new/perf/mpi/mpi_bench" -b "$b" -s "$s" "$@" 2>/dev/null |
      awk -v i="$i" -v v="$v" '$2 ~ /^[0-9]+$/ {print i, v, $0}'
  done
done
