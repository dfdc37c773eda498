# Plot perf/shmem/compare.sh results: one panel per benchmark that sweeps sizes
# (median of the reps solid, the best rep dashed), one panel of bars for the
# fixed-size latencies (atomics, barrier), one of bars for the put rate, and
# one panel of the weft / oshmem ratios of the medians against size, with the
# targets as grey lines (latency <= 1.0, barrier and reductions <= 0.8,
# bandwidth >= 1.0).
#
#   gnuplot -e "csv='results.csv'; out='results.png'; benches='put_lat put_bw barrier'; backends='weft oshmem'" \
#           perf/shmem/shmem_bench.gnuplot
#
# The CSV has rows benchmark,size,backend,min,median,max.

if (!exists("csv")) { print "shmem_bench.gnuplot: set csv='FILE'"; exit status 1 }
if (!exists("out")) { out = "results.png" }
if (!exists("benches")) { benches = "put_lat get_lat put_pingpong fadd_lat cswap_lat put_bw get_bw put_rate barrier bcast reduce_long reduce_double bcast_team reduce_team fcollect_team" }
if (!exists("backends")) { backends = "weft oshmem" }
if (!exists("subtitle")) { subtitle = "" }

is_fixed(b) = (b eq "fadd_lat" || b eq "cswap_lat" || b eq "barrier")
is_higher(b) = (b eq "put_bw" || b eq "get_bw" || b eq "put_rate")
is_elems(b) = (b eq "reduce_long" || b eq "reduce_double" || b eq "reduce_team")

# Panels: every size sweep, the fixed-size latencies, the put rate, the ratios.
sweeps = ""
fixed = ""
rate = 0
do for [i = 1:words(benches)] {
    b = word(benches, i)
    if (is_fixed(b)) { fixed = fixed." ".b } else { if (b eq "put_rate") { rate = 1 } else { sweeps = sweeps." ".b } }
}
both = (strstrt(" ".backends." ", " weft ") > 0 && strstrt(" ".backends." ", " oshmem ") > 0)
npanels = words(sweeps) + (words(fixed) > 0 ? 1 : 0) + rate + ((both && words(sweeps) > 0) ? 1 : 0)
cols = (npanels == 1) ? 1 : 2
rows = int((npanels + 1) / 2)

# noenhanced: benchmark names have underscores
set terminal pngcairo size 1400,(rows * 420 + 60) font "DejaVu Sans,10" noenhanced
set output out
set datafile separator ","
set multiplot layout rows,cols title "weft OpenSHMEM vs Open MPI oshmem (spml ucx), shared memory".subtitle

colour(b) = (b eq "weft") ? "#c0392b" : "#2471a3"
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)
# column of the best rep: min for latency, max for bandwidth and rate
bestcol(bench) = is_higher(bench) ? 6 : 4
bytetics = 'set xtics ("8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "1M" 1048576)'
elemtics = 'set xtics ("1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "64K" 65536)'

set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key Left reverse

do for [i = 1:words(sweeps)] {
    bench = word(sweeps, i)
    set logscale x 2
    set logscale y 10
    if (is_elems(bench)) {
        eval elemtics
        set xlabel "elements per PE"
    } else {
        eval bytetics
        set xlabel "message size (bytes)"
    }
    set key top left
    if (bench eq "put_lat") {
        set title "put latency (shmem_putmem + shmem_quiet): lower is better"
        set ylabel "microseconds per put"
    }
    if (bench eq "get_lat") {
        set title "get latency (shmem_getmem): lower is better"
        set ylabel "microseconds per get"
    }
    if (bench eq "put_pingpong") {
        set title "put ping-pong (put + fence + flag), one-way: lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "put_bw") {
        set title "put bandwidth (window of putmem_nbi + quiet): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
    }
    if (bench eq "get_bw") {
        set title "get bandwidth (window of getmem_nbi + quiet): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
    }
    if (bench eq "bcast") {
        set title "shmem_broadcast64 from PE 0 (mean over PEs): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "reduce_long") {
        set title "shmem_long_sum_to_all (mean over PEs): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "reduce_double") {
        set title "shmem_double_sum_to_all (mean over PEs): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "bcast_team") {
        set title "shmem_broadcastmem, team world (oshmem: broadcast64): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "reduce_team") {
        set title "shmem_long_sum_reduce, team world (oshmem: long_sum_to_all): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "fcollect_team") {
        set title "shmem_fcollectmem, team world (oshmem: fcollect64), bytes per PE: lower is better"
        set ylabel "microseconds"
    }
    plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 \
             with linespoints lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) \
             title word(backends, j)." median", \
         for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:bestcol(bench) \
             with lines dt 2 lw 1 lc rgb colour(word(backends, j)) \
             title word(backends, j)." best"
}

# Bars: x = position of the benchmark (or size) +- an offset per implementation.
nb = words(backends)
off(j) = (nb == 1) ? 0 : (j == 1 ? -0.19 : 0.19)
bars(list, j) = sprintf("< awk -F, -v list='%s' -v b='%s' 'BEGIN { n = split(list, a, \" \"); for (i = 1; i <= n; i++) idx[a[i]] = i } $3 == b && ($1 in idx) { print idx[$1] \",\" $4 \",\" $5 \",\" $6 }' '%s'", list, word(backends, j), csv)

if (words(fixed) > 0) {
    unset logscale x
    set logscale y 10
    set title "fixed size (64-bit atomics to PE 1, shmem_barrier_all): lower is better"
    set ylabel "microseconds (median bar; best as a dot)"
    set xlabel ""
    set key top left
    set style fill solid 0.8 border -1
    set boxwidth 0.35
    nf = words(fixed)
    set xrange [0.4:nf + 0.6]
    set xtics ()
    do for [k = 1:nf] { set xtics add (word(fixed, k) k) }
    plot for [j = 1:nb] bars(fixed, j) using ($1 + off(j)):3 with boxes lc rgb colour(word(backends, j)) \
             title word(backends, j)." median", \
         for [j = 1:nb] bars(fixed, j) using ($1 + off(j)):2 with points pt 7 ps 1 lc rgb "black" notitle
    unset xrange
    set style fill empty
}

if (rate) {
    unset logscale x
    unset logscale y
    set title "put rate (window of putmem_nbi + quiet): higher is better"
    set ylabel "puts/s (median bar; best as a dot)"
    set xlabel "message size (bytes)"
    set key top left
    set style fill solid 0.8 border -1
    set boxwidth 0.35
    set yrange [0:*]
    set offsets 0, 0, graph 0.2, 0
    set xtics ()
    # x = index of the size among the put_rate sizes
    rbars(j) = sprintf("< awk -F, -v b='%s' '$1 == \"put_rate\" { if (!($2 in idx)) idx[$2] = ++n; if ($3 == b) print idx[$2] \",\" $2 \",\" $5 \",\" $6 }' '%s'", word(backends, j), csv)
    stats sprintf("< awk -F, '$1 == \"put_rate\" && !s[$2]++ { print $2 }' '%s'", csv) using 1 nooutput
    set xrange [0.4:STATS_records + 0.6]
    # the first plot puts the size labels at the integer positions and draws nothing
    plot rbars(1) using 1:(NaN):xtic(2) notitle, \
         for [j = 1:nb] rbars(j) using ($1 + off(j)):3 with boxes lc rgb colour(word(backends, j)) \
             title word(backends, j)." median", \
         for [j = 1:nb] rbars(j) using ($1 + off(j)):4 with points pt 7 ps 1 lc rgb "black" notitle
    unset xrange
    unset yrange
    set offsets 0, 0, 0, 0
    set style fill empty
}

if (both && words(sweeps) > 0) {
    set logscale x 2
    set logscale y 2
    eval bytetics
    set title "weft / oshmem (medians): below 1 weft faster for latency, above 1 for bandwidth"
    set ylabel "ratio weft / oshmem"
    set xlabel "size (bytes; elements for reduce_*)"
    set key outside right top
    ratio(bench) = sprintf("< awk -F, '$1 == \"%s\" && $2 > 0 { v[$2, $3] = $5; if (!s[$2]++) o[++n] = $2 } END { for (i = 1; i <= n; i++) if (v[o[i], \"oshmem\"] > 0 && v[o[i], \"weft\"] > 0) print o[i] \",\" v[o[i], \"weft\"] / v[o[i], \"oshmem\"] }' '%s'", bench, csv)
    rcol(i) = word("#c0392b #e67e22 #8e44ad #27ae60 #2471a3 #000000 #7f8c8d #d35400", (i - 1) % 8 + 1)
    set yrange [*<0.5:2<*]
    set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb "black" lw 1
    set arrow 2 from graph 0, first 0.8 to graph 1, first 0.8 nohead lc rgb "#999999" dt 2
    plot for [i = 1:words(sweeps)] ratio(word(sweeps, i)) using 1:2 with linespoints lw 2 pt 7 ps 0.5 \
             lc rgb rcol(i) title word(sweeps, i)
    unset arrow
}
unset multiplot
