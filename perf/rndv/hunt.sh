#!/bin/bash
# hunt.sh N [VAR=VALUE...]: N launches of weft_perf's 1 MiB bandwidth over shm
# (8 reps each); counts the launches with a rep below 5 GB/s (the slow mode of
# docs/performance.md "Choosing the rendezvous method").
#   WEFT_PERF=build/perf/weft_perf perf/rndv/hunt.sh 16 WEFT_RNDV_GET_MIN=inf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
perf=${WEFT_PERF:-./perf/weft_perf}
n=${1:?usage: hunt.sh N [VAR=VALUE...]}
shift
bad=0
for _ in $(seq 1 "$n"); do
    line=$(env "$@" mpirun -np 2 --bind-to core "$perf" -b bw -B weft -s 1m -r 8 --no-verify -v 2>&1 |
        grep -E 'iters, warmup' | cut -d: -f2)
    [ -n "$line" ] || { echo "hunt.sh: weft_perf printed no result" >&2; exit 1; }
    if echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i < 5000) f = 1} END {exit !f}'; then
        bad=$((bad + 1))
    fi
done
echo "$* : $bad of $n launches had a rep below 5 GB/s"
