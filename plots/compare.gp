# compare: the figures that changed between two runs (label higher or lower),
# B/A on a log axis, one bar per figure from 1 (no change) to B/A, largest
# change at the top. Drawn by scripts/compare from build/compare --chart.
#   gnuplot -e "data='TSV'; out='PNG'" -c plots/compare.gp 'A vs B'
# TSV columns: 1 label 2 claim 3 experiment 4 variant 5 param 6 param_value
# 7 metric 8 unit 9 median_a 10 median_b 11 ratio_b_over_a 12 spread_a
# 13 spread_b 14 name (claim variant metric param=value).
# The title is an argument, a string gnuplot never reads as code (a run's
# name may hold any character); -e "title='...'" also sets it.
if (!exists("title")) title = ARGC >= 1 ? ARG1 : "B against A"
rows = system(sprintf("awk -F'\t' '!/^#/ && $11 != \"\" { n++ } END { print n + 0 }' '%s'", data)) + 0
set terminal pngcairo size 1000, (160 + 22 * rows) font "sans,10" noenhanced
set output out
set datafile separator "\t"

set title sprintf("Figures that changed: %s (B/A, log scale)", title) font ",12"
set logscale x 10
set format x "%g"
set xlabel "B / A: right of 1 higher in B, left of 1 lower (each beyond both runs' spread, ranges apart)"
set yrange [rows - 0.5:-0.5]
set ytics scale 0 font ",8"
set grid xtics lc rgb "#dddddd"
unset key
set style fill solid 0.85 noborder
set arrow 1 from first 1, graph 0 to first 1, graph 1 nohead lc rgb "#444444" lw 1.5
lo(r) = r < 1 ? r : 1
hi(r) = r < 1 ? 1 : r
plot data using (sqrt($11)):0:(lo($11)):(hi($11)):($0 - 0.35):($0 + 0.35):ytic(14) \
         with boxxyerror lc rgb "#1f77b4" notitle, \
     data using 11:0:(sprintf("%.3g", $11)) with labels left offset 0.6, 0 font ",8" notitle
