# stats.awk -- min, median and max per (benchmark, size, backend) of the raw
# measurements of perf/mpi/compare.sh and perf/shmem/compare.sh.
#   in:  benchmark,size,backend,rep,value   (with a header line)
#   out: benchmark,size,backend,min,median,max
# mawk has no asort: an insertion sort per group is plenty for tens of values.
BEGIN { FS = "," }
NR == 1 { next }
{
    k = $1 SUBSEP $2 SUBSEP $3
    if (!(k in n)) { keys[++nk] = k }
    v[k, ++n[k]] = $5 + 0
}
END {
    print "benchmark,size,backend,min,median,max"
    for (i = 1; i <= nk; i++) {
        k = keys[i]; m = n[k]
        for (a = 1; a <= m; a++) { s[a] = v[k, a] }
        for (a = 2; a <= m; a++) {
            x = s[a]
            for (b = a - 1; b >= 1 && s[b] > x; b--) { s[b + 1] = s[b] }
            s[b + 1] = x
        }
        med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
        split(k, f, SUBSEP)
        printf "%s,%s,%s,%.6g,%.6g,%.6g\n", f[1], f[2], f[3], s[1], med, s[m]
    }
}
