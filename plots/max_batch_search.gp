# C06 max batch search: peak allocated of a training step against batch size
# (the allocator model without the cap, left axis, log-log) with the cap as a
# dashed line; the trials of each method on the right axis, in order (trial
# number), filled where the batch fitted and crossed where it ran out of
# memory; the verified maximum as a vertical line.
#   gnuplot -e "data='TSV'; out='PNG'" plots/max_batch_search.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1000,580 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
trials(v, st) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"trial\" && $12==\"%s\"' '%s'", v, st, data)
get(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" {print $7; exit}' '%s'", v, m, data))
MiB = 1048576.0
cap = get("", "limit_bytes")
ans = get("binary_search", "answer")
ntr = system(sprintf("awk -F'\t' '$4==\"trial\" && $7>m {m=$7} END {print m+0}' '%s'", data)) + 0

set title sprintf("C06: largest batch under a %s MiB cap (claim: binary search over OOM finds it)", \
                  cap eq "" ? "?" : sprintf("%.0f", cap/MiB)) font ",12"
set logscale x 2
set logscale y 10
set xrange [0.7:3e6]
set xtics ("1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "2M" 2097152)
set xlabel "batch size (rows)"
set ylabel "peak allocated, step 2 (MiB; allocator model, no cap)"
set yrange [64:*]
set y2label "trial number (points)"
set y2range [0:ntr + 2]
set y2tics
set ytics nomirror
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box

if (cap ne "") { set arrow 1 from graph 0, first cap/MiB to graph 1, first cap/MiB nohead lc rgb "#d62728" lw 2 dt 2 }
if (cap ne "") { set label 1 sprintf("cap %.0f MiB", cap/MiB) at graph 0.02, first cap/MiB offset 0, 0.8 tc rgb "#d62728" }
if (ans ne "" && ans + 0 > 0) { set arrow 2 from first ans + 0, graph 0 to first ans + 0, graph 1 nohead lc rgb "#444444" dt 3 }
if (ans ne "" && ans + 0 > 0) { set label 2 sprintf("maximum %s", ans) at first ans + 0, graph 0.04 offset 0.5, 0 font ",9" }

fa = get("prediction", "fit_intercept")
fs = get("prediction", "fit_slope")
pred = get("prediction", "predicted")
fitline = (fa ne "" && fs ne "" && pred ne "") ? \
    sprintf(", [1:%s*1.2] (%s + %s*x)/MiB with lines lw 1.5 dt 2 lc rgb '#2ca02c' title 'prediction: fitted a + s*batch'", pred, fa, fs) : ""
eval "plot sel('model_curve', 'peak_allocated') using 3:($7/MiB) with lines lw 2 lc rgb '#555555' title 'peak allocated (model, no cap)'" . fitline . ", \
     trials('binary_search', 'ok') using 3:7 axes x1y2 with points pt 7 ps 1.1 lc rgb '#1f77b4' title 'binary search: fits', \
     trials('binary_search', 'oom') using 3:7 axes x1y2 with points pt 2 ps 1.3 lw 2 lc rgb '#1f77b4' title 'binary search: OOM', \
     trials('halving', 'ok') using 3:7 axes x1y2 with points pt 5 ps 1.1 lc rgb '#ff7f0e' title 'halving: fits', \
     trials('halving', 'oom') using 3:7 axes x1y2 with points pt 3 ps 1.3 lw 2 lc rgb '#ff7f0e' title 'halving: OOM', \
     trials('prediction', 'ok') using 3:7 axes x1y2 with points pt 9 ps 1.3 lc rgb '#2ca02c' title 'prediction: fits', \
     trials('prediction', 'oom') using 3:7 axes x1y2 with points pt 1 ps 1.5 lw 2 lc rgb '#2ca02c' title 'prediction: OOM'"
