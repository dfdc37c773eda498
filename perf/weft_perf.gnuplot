# Plot weft_perf results: one panel per benchmark with the median over
# repetitions of each backend (solid); the latency panel also shows the min
# (dashed), the best repetition.
#
#   gnuplot -e "csv='results.csv'; out='results.png'; benches='lat bw bibw rate'; backends='weft ucx'" \
#           perf/weft_perf.gnuplot
#
# The CSV has rows benchmark,size,backend,min,median[,max] (perf/weft_perf --csv).
# perf/compare.sh passes only the benchmarks and backends present in the CSV.

if (!exists("csv")) { print "weft_perf.gnuplot: set csv='FILE'"; exit status 1 }
if (!exists("out")) { out = "results.png" }
if (!exists("benches")) { benches = "lat bw bibw rate" }
if (!exists("backends")) { backends = "weft ucx" }
if (!exists("subtitle")) { subtitle = "" }
if (!exists("what")) { what = "shared memory" }

set terminal pngcairo size 1400,1000 font "DejaVu Sans,10"
set output out
set datafile separator ","

n = words(benches)
rows = (n <= 2) ? 1 : 2
cols = (n == 1) ? 1 : 2
set multiplot layout rows,cols title "weft vs UCX (weft\\_perf, ".what.", 2 processes)".subtitle

set logscale x 2
set logscale y 10
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left
set xtics ("1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, \
           "2M" 2097152, "16M" 16777216)
set xlabel "message size (bytes)"

# colour per backend: weft red, ucx blue
colour(b) = (b eq "weft") ? "#c0392b" : "#2471a3"
# rows of one benchmark and backend with size > 0 (log axes)
sel(bench, b) = sprintf("< awk -F, '$1==\"%s\" && $3==\"%s\" && $2>0' '%s'", bench, b, csv)

do for [i = 1:n] {
    bench = word(benches, i)
    if (bench eq "lat") {
        set title "latency (one-way, RTT/2): lower is better"
        set ylabel "microseconds"
        set key top left
    }
    if (bench eq "bw") {
        set title "unidirectional bandwidth (window 64): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
        set key top left
    }
    if (bench eq "bibw") {
        set title "bidirectional bandwidth (sum of both directions): higher is better"
        set ylabel "MB/s (1e6 bytes/s)"
        set key top left
    }
    if (bench eq "rate") {
        set title "message rate (window 64): higher is better"
        set ylabel "messages/s"
        set key bottom left
    }
    if (bench eq "lat") {
        plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 \
                 with linespoints lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) \
                 title word(backends, j)." median", \
             for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:4 \
                 with lines dt 2 lw 1 lc rgb colour(word(backends, j)) \
                 title word(backends, j)." min"
    } else {
        plot for [j = 1:words(backends)] sel(bench, word(backends, j)) using 2:5 \
                 with linespoints lw 2 pt 7 ps 0.6 lc rgb colour(word(backends, j)) \
                 title word(backends, j)." median"
    }
}
unset multiplot
