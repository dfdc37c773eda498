# Plot perf/mpi/compare.sh results: one panel per benchmark, the median over
# repetitions of each backend against message size (log-log).
#
#   gnuplot -e "csv='results.csv'; out='results.png'; benches='lat bw'; backends='weft ucx vader'" \
#           perf/mpi/mpi_bench.gnuplot
#
# The CSV has rows benchmark,size,backend,min,median.

if (!exists("csv")) { print "mpi_bench.gnuplot: set csv='FILE'"; exit status 1 }
if (!exists("out")) { out = "results.png" }
if (!exists("benches")) { benches = "lat bw bibw mbw rate" }
if (!exists("backends")) { backends = "weft ucx vader" }
if (!exists("subtitle")) { subtitle = "" }

n = words(benches)
rows = (n <= 2) ? 1 : ((n <= 4) ? 2 : 3)
cols = (n == 1) ? 1 : 2
set terminal pngcairo size 1400, 500 * rows font "DejaVu Sans,10"
set output out
set datafile separator ","
set multiplot layout rows, cols title "Open MPI point-to-point: pml cm + mtl weft vs pml ucx vs ob1 + vader (shared memory)".subtitle

set logscale x 2
set logscale y 10
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set xtics ("1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "2M" 2097152)
set xlabel "message size (bytes)"

colour(b) = (b eq "weft") ? "#c0392b" : ((b eq "before") ? "#e59866" : ((b eq "ucx") ? "#2471a3" : "#229954"))
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)

do for [i = 1:n] {
    bench = word(benches, i)
    if (bench eq "lat") {
        set title "latency (one-way): lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "bw") {
        set title "bandwidth (window 64): higher is better"
        set ylabel "MB/s"
    }
    if (bench eq "bibw") {
        set title "bidirectional bandwidth (sum of both directions): higher is better"
        set ylabel "MB/s"
    }
    if (bench eq "mbw") {
        set title "multi-pair bandwidth (sum over pairs): higher is better"
        set ylabel "MB/s"
    }
    if (bench eq "rate") {
        set title "message rate (sum over pairs): higher is better"
        set ylabel "messages/s"
    }
    set key top left
    plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 with linespoints \
         lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) title word(backends, j)
}
unset multiplot
