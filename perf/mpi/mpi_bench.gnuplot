# Plot perf/mpi/compare.sh results: one panel per benchmark, the median over
# repetitions of each backend against message size (log-log); fop_lat and
# cas_lat (one 8-byte size) as bars, one per backend.
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
# heading: the plot's title (compare.sh --netns names the tcp run)

n = words(benches)
rows = (n + 1) / 2
cols = (n == 1) ? 1 : 2
# One-sided benchmarks have "_" in their names (put_lat, ..., get_bw).
n_rma = 0
do for [i = 1:n] { if (strstrt(word(benches, i), "_") > 0) { n_rma = n_rma + 1 } }
if (!exists("heading")) { heading = (n_rma == 0) ? "Open MPI point-to-point: pml cm + mtl weft vs pml ucx vs ob1 + vader (shared memory)" : \
          ((n_rma == n) ? "Open MPI one-sided: osc weft (mtl weft) vs osc ucx vs osc rdma over ob1 + vader (shared memory)" : \
           "Open MPI over weft vs ucx vs ob1 + vader: point-to-point and one-sided (shared memory)") }
set terminal pngcairo noenhanced size 1400, 500 * rows font "DejaVu Sans,10"
set output out
set datafile separator ","
set multiplot layout rows, cols title heading.subtitle

set grid xtics ytics mxtics mytics lc rgb "#dddddd"

colour(b) = (b eq "weft") ? "#c0392b" : ((b eq "before") ? "#e59866" : ((b eq "ucx") ? "#2471a3" : \
            ((b eq "sm") ? "#7d3c98" : "#229954")))
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)

do for [i = 1:n] {
    bench = word(benches, i)
    atomic = (bench eq "fop_lat" || bench eq "cas_lat")
    set style fill empty
    if (atomic) {
        unset logscale x
        set logscale y 10
        set autoscale y
        set xrange [0.4:words(backends) + 0.6]
        set xtics ()
        do for [j = 1:words(backends)] { set xtics add (word(backends, j) j) }
        set xlabel "backend (one 8-byte word)"
        set boxwidth 0.6
        set style fill solid 0.8
    } else {
        set logscale x 2
        set logscale y 10
        set autoscale y
        set autoscale x
        set xtics ("1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "2M" 2097152)
        set xlabel "message size (bytes)"
    }
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
    if (bench eq "tags") {
        set title "message rate, a tag per message sent in reverse order: higher is better"
        set ylabel "messages/s"
    }
    if (bench eq "put_lat") {
        set title "MPI_Put latency: lower is better"
        set ylabel "microseconds per operation"
    }
    if (bench eq "get_lat") {
        set title "MPI_Get latency: lower is better"
        set ylabel "microseconds per operation"
    }
    if (bench eq "acc_lat") {
        set title "MPI_Accumulate (MPI_SUM) latency: lower is better"
        set ylabel "microseconds per operation"
    }
    if (bench eq "fop_lat") {
        set title "MPI_Fetch_and_op (64-bit MPI_SUM) latency: lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "cas_lat") {
        set title "MPI_Compare_and_swap (64-bit) latency: lower is better"
        set ylabel "microseconds"
    }
    if (bench eq "put_bw") {
        set title "MPI_Put bandwidth (window of 64): higher is better"
        set ylabel "MB/s"
    }
    if (bench eq "get_bw") {
        set title "MPI_Get bandwidth (window of 64): higher is better"
        set ylabel "MB/s"
    }
    set key top left
    if (atomic) {
        plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using (j):5 with boxes \
             lc rgb colour(word(backends, j)) title word(backends, j)
    } else {
        plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 with linespoints \
             lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) title word(backends, j)
    }
}
unset multiplot
