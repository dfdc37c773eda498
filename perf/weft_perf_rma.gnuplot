# Plot weft_perf's one-sided results (perf/compare.sh --rma): one panel per
# benchmark that sweeps sizes (median of the reps solid, the best rep dashed),
# one panel of bars for the 64-bit atomics, and one panel of the weft/ucx
# ratios of the medians against size, with the targets of docs/performance.md
# as grey lines (latency <= 0.8, bandwidth >= 1.2, put rate >= 1.5).
#
#   gnuplot -e "csv='results.csv'; out='rma.png'; benches='put_lat get_lat put_bw'; backends='weft ucx'" \
#           perf/weft_perf_rma.gnuplot
#
# The CSV has rows benchmark,size,backend,min,median,max (perf/weft_perf --csv).

if (!exists("csv")) { print "weft_perf_rma.gnuplot: set csv='FILE'"; exit status 1 }
if (!exists("out")) { out = "rma.png" }
if (!exists("benches")) { benches = "put_lat get_lat fadd_lat cswap_lat put_pp put_bw get_bw put_rate" }
if (!exists("backends")) { backends = "weft ucx" }
if (!exists("subtitle")) { subtitle = "" }
if (!exists("what")) { what = "shared memory" }

is_atomic(b) = (b eq "fadd_lat" || b eq "cswap_lat")
is_lat(b) = (b eq "put_lat" || b eq "get_lat" || b eq "put_pp")

# Panels: every size sweep, the atomics (if any), the ratios (with two backends).
sweeps = ""
atomics = ""
do for [i = 1:words(benches)] {
    b = word(benches, i)
    if (is_atomic(b)) { atomics = atomics." ".b } else { sweeps = sweeps." ".b }
}
both = (words(backends) == 2)
npanels = words(sweeps) + (words(atomics) > 0 ? 1 : 0) + (both ? 1 : 0)
cols = (npanels == 1) ? 1 : 2
rows = int((npanels + 1) / 2)

# noenhanced: benchmark names have underscores
set terminal pngcairo size 1400,(rows * 450 + 50) font "DejaVu Sans,10" noenhanced
set output out
set datafile separator ","
set multiplot layout rows,cols title "weft vs UCX, one-sided operations (weft_perf, ".what.", 2 processes)".subtitle

colour(b) = (b eq "weft") ? "#c0392b" : "#2471a3"
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)
# column of the best rep: min for latency, max for bandwidth and rate
bestcol(bench) = is_lat(bench) ? 4 : 6

set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set xtics ("8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, \
           "2M" 2097152, "4M" 4194304)

do for [i = 1:words(sweeps)] {
    bench = word(sweeps, i)
    set logscale x 2
    set logscale y 10
    set xlabel "message size (bytes)"
    set key top left
    if (bench eq "put_lat") {
        set title "put + flush (remotely complete): lower is better"
        set ylabel "microseconds per put"
    }
    if (bench eq "get_lat") {
        set title "get latency: lower is better"
        set ylabel "microseconds per get"
    }
    if (bench eq "put_pp") {
        set title "put ping-pong, one-way (RTT/2): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "put_bw") {
        set title "put bandwidth (window 64 + flush): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
    }
    if (bench eq "get_bw") {
        set title "get bandwidth (window 64 + flush): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
    }
    if (bench eq "put_rate") {
        set title "put rate (window 64 + flush): higher is better"
        set ylabel "puts/s"
        set key bottom left
    }
    plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 \
             with linespoints lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) \
             title word(backends, j)." median", \
         for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:bestcol(bench) \
             with lines dt 2 lw 1 lc rgb colour(word(backends, j)) \
             title word(backends, j)." best"
}

if (words(atomics) > 0) {
    unset logscale x
    unset logscale y
    set title "64-bit atomics (fetch-and-add, compare-and-swap): lower is better"
    set ylabel "microseconds (median; best as a dot)"
    set xlabel ""
    set key top left
    set style fill solid 0.8 border -1
    set boxwidth 0.35
    set yrange [0:*]
    set offsets 0, 0, graph 0.25, 0
    na = words(atomics)
    set xrange [0.4:na + 0.6]
    if (na == 2) { set xtics (word(atomics, 1) 1, word(atomics, 2) 2) }
    if (na == 1) { set xtics (word(atomics, 1) 1) }
    nb = words(backends)
    # one box per benchmark and backend: x = benchmark index +- offset
    atom(j) = sprintf("< awk -F, -v list='%s' -v b='%s' 'BEGIN { n = split(list, a, \" \"); for (i = 1; i <= n; i++) idx[a[i]] = i } $3 == b && ($1 in idx) { print idx[$1] \",\" $4 \",\" $5 }' '%s'", atomics, word(backends, j), csv)
    off(j) = (nb == 1) ? 0 : (j == 1 ? -0.19 : 0.19)
    plot for [j = 1:nb] atom(j) using ($1 + off(j)):3 with boxes lc rgb colour(word(backends, j)) \
             title word(backends, j)." median", \
         for [j = 1:nb] atom(j) using ($1 + off(j)):2 with points pt 7 ps 1 lc rgb "black" notitle
    unset xrange
    unset yrange
    set offsets 0, 0, 0, 0
    set style fill empty
    set xtics ("8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, \
               "2M" 2097152, "4M" 4194304)
}

if (both) {
    set logscale x 2
    set logscale y 2
    set title "weft / ucx (medians): below 1 faster for latency, above 1 for bandwidth and rate"
    set ylabel "ratio weft / ucx"
    set xlabel "message size (bytes)"
    set key outside right top
    w0 = word(backends, 1)
    w1 = word(backends, 2)
    ratio(bench) = sprintf("< awk -F, '$1 == \"%s\" && $2 > 0 { v[$2, $3] = $5; if (!s[$2]++) o[++n] = $2 } END { for (i = 1; i <= n; i++) if (v[o[i], \"%s\"] > 0) print o[i] \",\" v[o[i], \"%s\"] / v[o[i], \"%s\"] }' '%s'", bench, w1, w0, w1, csv)
    rcol(i) = word("#c0392b #e67e22 #8e44ad #27ae60 #2471a3 #000000 #7f8c8d #d35400", (i - 1) % 8 + 1)
    set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb "black" lw 1
    set arrow 2 from graph 0, first 0.8 to graph 1, first 0.8 nohead lc rgb "#999999" dt 2
    set arrow 3 from graph 0, first 1.2 to graph 1, first 1.2 nohead lc rgb "#999999" dt 2
    set arrow 4 from graph 0, first 1.5 to graph 1, first 1.5 nohead lc rgb "#999999" dt 3
    plot for [i = 1:words(sweeps)] ratio(word(sweeps, i)) using 1:2 with linespoints lw 2 pt 7 ps 0.5 \
             lc rgb rcol(i) title word(sweeps, i)
    unset arrow
}
unset multiplot
