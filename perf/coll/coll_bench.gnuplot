# Plot perf/coll/compare.sh results: one panel per collective, the median over
# repetitions of each backend against message size (log-log; barrier, which has
# no size, as bars), and a last panel with weft's ratio to the best other
# backend (by median) for every collective.
#
#   gnuplot -e "csv='results.csv'; ratios='ratios.csv'; out='results.png'; \
#               benches='barrier bcast allreduce'; backends='weft ucx-tuned vader-tuned'" \
#           perf/coll/coll_bench.gnuplot
#
# results.csv has rows benchmark,size,backend,min,median; ratios.csv rows
# benchmark,size,best_other_by_min,other_min,ratio_min,best_other_by_median,
# other_median,ratio_median.

if (!exists("csv")) { print "coll_bench.gnuplot: set csv='FILE'"; exit status 1 }
if (!exists("out")) { out = "results.png" }
if (!exists("benches")) { benches = "barrier bcast allreduce allgather alltoall reduce" }
if (!exists("backends")) { backends = "weft ucx-tuned vader-tuned" }
if (!exists("subtitle")) { subtitle = "" }
if (!exists("ratios")) { ratios = "" }

nr = (ratios ne "" && words(benches) > (strstrt(benches, "barrier") ? 1 : 0)) ? 1 : 0
n = words(benches) + nr
rows = (n + 1) / 2
cols = (n == 1) ? 1 : 2
set terminal pngcairo size 1400, 450 * rows font "DejaVu Sans,10"
set output out
set datafile separator ","
set multiplot layout rows, cols title "Open MPI collectives: coll weft (pml cm + mtl weft) vs coll tuned/han over pml ucx and ob1 + vader".subtitle

set grid xtics ytics mxtics mytics lc rgb "#dddddd"
colour(b) = (b eq "weft") ? "#c0392b" : ((b eq "ucx-tuned") ? "#2471a3" : ((b eq "ucx-han") ? "#85c1e9" : \
            ((b eq "vader-tuned") ? "#229954" : "#82e0aa")))
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)
sel0(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\"' '%s'", bench, b, csv)
selr(bench) = sprintf("< awk -F, '$1==\"%s\" && $2>0' '%s'", bench, ratios)
sizetics = "(\"4\" 4, \"64\" 64, \"1K\" 1024, \"16K\" 16384, \"256K\" 262144, \"4M\" 4194304)"

do for [i = 1:words(benches)] {
    bench = word(benches, i)
    set key top left
    set ylabel "microseconds per call (avg over ranks)"
    if (bench eq "barrier") {
        set title "barrier: lower is better"
        unset logscale x
        set logscale y 10
        set xrange [0.3:words(backends) + 0.7]
        set xtics ()
        do for [j = 1:words(backends)] { set xtics add (word(backends, j) j) }
        set xlabel ""
        set style fill solid 0.8
        set boxwidth 0.6
        set key off
        plot for [j = 1:words(backends)] sel0(bench, word(backends, j)) using (j):5 with boxes \
             lc rgb colour(word(backends, j)) notitle
        set key on
        set autoscale x
    } else {
        set title bench.": lower is better"
        set logscale x 2
        set logscale y 10
        eval "set xtics ".sizetics
        set xlabel (bench eq "allgather" || bench eq "alltoall") ? "bytes per rank" : "message size (bytes)"
        plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 with linespoints \
             lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) title word(backends, j)
    }
}

if (nr) {
    set title "weft / best other backend (median): below 1 is weft faster"
    set logscale x 2
    set logscale y 2
    eval "set xtics ".sizetics
    set xlabel "message size (bytes)"
    set ylabel "ratio"
    set key top left
    rb = ""
    do for [i = 1:words(benches)] { if (word(benches, i) ne "barrier") { rb = rb." ".word(benches, i) } }
    rc(b) = (b eq "bcast") ? "#8e44ad" : ((b eq "allreduce") ? "#c0392b" : ((b eq "allgather") ? "#2471a3" : \
            ((b eq "alltoall") ? "#229954" : "#d68910")))
    plot for [j = 1:words(rb)] selr(word(rb, j)) using 2:8 with linespoints lw 2 pt 7 ps 0.6 \
         lc rgb rc(word(rb, j)) title word(rb, j), \
         1 with lines lc rgb "black" dt 2 notitle
}
unset multiplot
