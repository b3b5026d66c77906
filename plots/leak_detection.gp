# C21 leak detection: left, memory_allocated after every iteration of the
# clean loop and the two leaking loops (MiB), with the 1.5x thresholds of the
# clean loop's baselines (iteration 0, iteration 1, after the warm-up); right,
# what each loop gained since iteration 1 (bytes, log), allocated and
# reserved, against the growth the 1.5x rule needs (half the iteration-1
# baseline).
#   gnuplot -e "data='TSV'; out='PNG'" plots/leak_detection.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

it(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"iteration\" && $4==\"%s\" && $12==\"ok\" { print $3, $7 }' '%s'", v, m, data)
# Gain over iteration 1 (rows come in iteration order); 0 is left out (log axis).
gain(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"iteration\" && $4==\"%s\" && $12==\"ok\" { if ($3 == 1) b = $7; if ($3 > 1 && $7 - b > 0) print $3, $7 - b }' '%s'", v, m, data)
ngain(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $2==\"iteration\" && $4==\"%s\" && $12==\"ok\" { if ($3 == 1) b = $7; if ($3 > 1 && $7 - b > 0) c++ } END { print c + 0 }' '%s'", v, m, data)) + 0
thr(b) = system(sprintf("awk -F'\t' '$1==\"clean\" && $4==\"threshold_allocated\" && $3==%d { print $7; exit }' '%s'", b, data))
warm = system(sprintf("awk -F'\t' '$1==\"clean\" && $4==\"threshold_allocated\" && $3 > 1 { print $3; exit }' '%s'", data))
n = system(sprintf("awk -F'\t' '$1==\"clean\" && $4==\"allocated\" && $12==\"ok\" { c++ } END { print c + 0 }' '%s'", data)) + 0
MiB = 1048576.0

set multiplot layout 1,2 title "C21: the 1.5x-baseline leak rule (claim: memory growing past 1.5x a baseline signals a leak)" font ",12"
set xlabel "iteration (0: after set-up)"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque

# ------------------------------------------------------------- left: allocated
set title "memory_allocated after each iteration"
set ylabel "MiB"
set yrange [0:*]
if (n > 0) {
    cmd = "plot it('leak_graph', 'allocated') using 1:($2/MiB) with steps lw 2 lc rgb '#d62728' title 'leak_graph (saved activations kept)', " . \
          "it('leak_scalar', 'allocated') using 1:($2/MiB) with steps lw 2 lc rgb '#ff7f0e' title 'leak_scalar (loss kept, 512 B)', " . \
          "it('clean', 'allocated') using 1:($2/MiB) with steps lw 2 dt 2 lc rgb '#1f77b4' title 'clean'"
    if (strlen(thr(0)) > 0) { cmd = cmd . sprintf(", %s/MiB with lines dt 3 lc rgb '#555555' title '1.5 x baseline at iteration 0'", thr(0)) }
    if (strlen(thr(1)) > 0) { cmd = cmd . sprintf(", %s/MiB with lines dt 4 lw 2 lc rgb '#2ca02c' title '1.5 x baseline at iteration 1'", thr(1)) }
    if (strlen(warm) > 0) { cmd = cmd . sprintf(", %s/MiB with lines dt 5 lc rgb '#9467bd' title '1.5 x baseline at iteration %s'", thr(warm + 0), warm) }
    eval cmd
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}

# ------------------------------------------------------------- right: growth, log
set title "gain since iteration 1 (clean: none)"
set ylabel "bytes (log)"
set logscale y 10
set yrange [*:*]
set format y "%.0e"
if (n > 0) {
    cmd = "plot gain('leak_graph', 'allocated') using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#d62728' title 'leak_graph allocated', " . \
          "gain('leak_graph', 'reserved') using 1:2 with linespoints lw 1 pt 6 ps 0.5 dt 2 lc rgb '#d62728' title 'leak_graph reserved', " . \
          "gain('leak_scalar', 'allocated') using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' title 'leak_scalar allocated'"
    if (ngain('leak_scalar', 'reserved') > 0) { cmd = cmd . ", gain('leak_scalar', 'reserved') using 1:2 with linespoints lw 1 pt 6 ps 0.5 dt 2 lc rgb '#ff7f0e' title 'leak_scalar reserved'" }
    if (strlen(thr(1)) > 0) { cmd = cmd . sprintf(", %s/3.0 with lines dt 4 lw 2 lc rgb '#2ca02c' title 'gain the 1.5x rule needs (base: iteration 1)'", thr(1)) }
    eval cmd
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}
unset multiplot
