# pair_transports.awk: which weft transport each pair of MPI ranks chose, from
# the output of a run with --mca mtl_weft_verbose 1 (or pml_weft_verbose 1)
# and WEFT_LOG_LEVEL=debug (test/multinode/, docs/multinode.md).
#
# Ranks and their nodes come from the selection lines
#   [HOST:PID] mtl weft: selected on rank R (pid P): ...
# and the choices from weft's debug lines, prefixed [HOST:PID:RANK]:
#   - the channel's choice, if it logs one: "... address N (pid P) ... transport T"
#   - else a transport's own connection lines, "connected to pid P",
#     "connecting to pid P", "accepted a connection from pid P" (as verbs logs
#     them): that transport.
# Prints one line per pair seen; exit status 1 if a pair on two nodes used shm
# or self (weft took two nodes for one), else 0.
match($0, /^\[[^]:]+:0*[0-9]+\] (mtl|pml) weft: selected on rank [0-9]+ \(pid [0-9]+\)/) {
    s = substr($0, 2); host = s; sub(/:.*/, "", host)
    r = s; sub(/.*selected on rank /, "", r); pid = r; sub(/ .*/, "", r)
    sub(/.*\(pid /, "", pid); sub(/\).*/, "", pid)
    rank[pid] = r; node[pid] = host
    next
}
match($0, /^\[[^]:]+:[0-9]+:[^]]*\] weft [a-z0-9_]+ debug: /) {
    s = substr($0, 2); me = s; sub(/^[^:]*:/, "", me); sub(/:.*/, "", me)
    comp = $0; sub(/^[^]]*\] weft /, "", comp); sub(/ .*/, "", comp)
    peer = ""; tl = ""
    if ($0 ~ /address [0-9]+ \(pid [0-9]+\).*transport [a-z0-9_]+/ && $0 !~ /not reachable/) {
        peer = $0; sub(/.*\(pid /, "", peer); sub(/\).*/, "", peer)
        tl = $0; sub(/.*transport /, "", tl); sub(/[^a-z0-9_].*/, "", tl)
    } else if ($0 ~ /(connected to|connecting to|accepted a connection from) pid [0-9]+/) {
        peer = $0; sub(/.* pid /, "", peer); sub(/[^0-9].*/, "", peer)
        tl = comp
    }
    if (peer != "" && !((me, peer) in seen)) {
        seen[me, peer] = tl
        order[++n] = me SUBSEP peer
    }
}
END {
    bad = 0
    for (i = 1; i <= n; i++) {
        split(order[i], p, SUBSEP)
        tl = seen[p[1], p[2]]
        cross = node[p[1]] != node[p[2]]
        printf "        rank %s (%s) -> rank %s (%s): %s%s\n", rank[p[1]], node[p[1]], rank[p[2]],
            node[p[2]], tl, cross ? "  [across]" : ""
        if (cross && (tl == "shm" || tl == "self")) {
            bad = 1
        }
    }
    if (n == 0) {
        print "        (the library logged no per-peer choice at debug level)"
    }
    exit bad
}
