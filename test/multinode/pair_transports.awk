# pair_transports.awk: which weft transport each pair of MPI ranks (or
# OpenSHMEM PEs) chose, from the output of a run with --mca mtl_weft_verbose 1
# (or pml_weft_verbose 1) and WEFT_LOG_LEVEL=debug (test/multinode/,
# docs/multinode.md).
#
# Ranks and their nodes come from the selection lines
#   [HOST:PID] mtl weft: selected on rank R (pid P): ...
# or, for a process that printed none (OpenSHMEM), from the prefix
# [HOST:PID:RANK] of its first debug line.
# and the choices from weft's debug lines, prefixed [HOST:PID:RANK]:
#   - the channel's choice, if it logs one: "... address N (pid P) ... transport T"
#   - else a transport's own connection lines, "connected to pid P",
#     "connecting to pid P", "accepted a connection from pid P" (verbs logs
#     them): that transport.
# shm and self log no connection: their pairs show as "not logged". A peer is
# named by its pid only, so when two ranks on two nodes have the same pid, the
# pair is left out (reported as ambiguous).
# Prints one line per ordered pair of ranks; exit status 1 if a pair on two
# nodes used shm or self (weft took two nodes for one), else 0.
match($0, /^\[[^]:]+:0*[0-9]+\] (mtl|pml) weft: selected on rank [0-9]+ \(pid [0-9]+\)/) {
    s = substr($0, 2); host = s; sub(/:.*/, "", host)
    r = s; sub(/.*selected on rank /, "", r); pid = r; sub(/ .*/, "", r)
    sub(/.*\(pid /, "", pid); sub(/\).*/, "", pid)
    key = host SUBSEP pid
    if (!(key in rank)) {
        rank[key] = r; node[key] = host; byrank[r] = key
        npid[pid]++; pidkey[pid] = key
        if (r + 0 > maxrank) maxrank = r + 0
    }
    next
}
match($0, /^\[[^]:]+:[0-9]+:[^]]*\] weft [a-z0-9_]+ debug: /) {
    s = substr($0, 2); host = s; sub(/:.*/, "", host)
    me = s; sub(/^[^:]*:/, "", me); sub(/:.*/, "", me)
    # Without selection lines (OpenSHMEM), the prefix's rank names the process.
    r = s; sub(/^[^:]*:[^:]*:/, "", r); sub(/\].*/, "", r)
    if (r ~ /^[0-9]+$/ && !((host, me) in rank) && !(r in byrank)) {
        key = host SUBSEP me
        rank[key] = r; node[key] = host; byrank[r] = key
        npid[me]++; pidkey[me] = key
        if (r + 0 > maxrank) maxrank = r + 0
    }
    comp = $0; sub(/^[^]]*\] weft /, "", comp); sub(/ .*/, "", comp)
    peer = ""; tl = ""
    if ($0 ~ /address [0-9]+ \(pid [0-9]+\).*transport [a-z0-9_]+/ && $0 !~ /not reachable/) {
        peer = $0; sub(/.*\(pid /, "", peer); sub(/\).*/, "", peer)
        tl = $0; sub(/.*transport /, "", tl); sub(/[^a-z0-9_].*/, "", tl)
    } else if ($0 ~ /(connected to|connecting to|accepted a connection from) pid [0-9]+/) {
        peer = $0; sub(/.* pid /, "", peer); sub(/[^0-9].*/, "", peer)
        tl = comp
    }
    if (peer != "") {
        ppid[++n] = peer; pme[n] = host SUBSEP me; ptl[n] = tl
    }
}
END {
    for (i = 1; i <= n; i++) {
        if (npid[ppid[i]] != 1) {
            if (npid[ppid[i]] > 1) ambiguous[ppid[i]] = 1
            continue    # 0: not a rank (another endpoint's process)
        }
        k = pme[i] SUBSEP pidkey[ppid[i]]
        if (!(k in seen)) seen[k] = ptl[i]
    }
    bad = 0
    for (a = 0; a <= maxrank; a++) {
        for (b = 0; b <= maxrank; b++) {
            if (a == b || !(a in byrank) || !(b in byrank)) continue
            ka = byrank[a]; kb = byrank[b]
            k = ka SUBSEP kb
            cross = node[ka] != node[kb]
            tl = (k in seen) ? seen[k] : "not logged"
            printf "        rank %d (%s) -> rank %d (%s): %s%s\n", a, node[ka], b, node[kb], tl,
                cross ? "  [across]" : ""
            if (cross && (tl == "shm" || tl == "self")) bad = 1
        }
    }
    for (p in ambiguous) {
        printf "        (pid %s is a rank on more than one node: its pairs are left out)\n", p
    }
    exit bad
}
