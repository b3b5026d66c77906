# C08 activation checkpointing: over depth, the memory saving 1 -
# peak_ckpt/peak_plain and (on a GPU) the time overhead t_ckpt/t_plain - 1,
# each with the claimed band shaded (saving 60-70%, overhead 20-30%), and the
# activations' share of the plain peak: the most any recomputation could save.
#   gnuplot -e "data='TSV'; out='PNG'" plots/checkpointing.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && ($12==\"ok\" || $12==\"noisy\")' '%s'", v, m, data)
count(m) = system(sprintf("awk -F'\t' '$4==\"%s\" {n++} END {print n+0}' '%s'", m, data)) + 0
lmax = system(sprintf("awk -F'\t' '$2==\"layers\" && $3>m {m=$3} END {print m+0}' '%s'", data)) + 0
has_time = count("time_overhead")

set title "C08: activation checkpointing over depth (claim: saves 60-70% of memory for 20-30% more compute)" font ",12"
set xlabel "depth L (Linear layers; width 1024, batch 8192)"
set xrange [0:(lmax > 2 ? lmax : 16) + 1]
set ylabel "% of the plain run"
set yrange [-20:100]
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box
set object 1 rect from graph 0, first 60 to graph 1, first 70 fc rgb "#2ca02c" fs solid 0.18 noborder behind
set label 1 "claimed saving 60-70%" at graph 0.02, first 73 left font ",9" tc rgb "#2ca02c"
set object 2 rect from graph 0, first 20 to graph 1, first 30 fc rgb "#ff7f0e" fs solid 0.18 noborder behind
set label 2 "claimed overhead 20-30%" at graph 0.02, first 33 left font ",9" tc rgb "#ff7f0e"
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#888888" dt 3
if (!has_time) { set label 3 "no timing: a --model-only run measures memory only" at graph 0.5, graph 0.06 center font ",9" }

tm = has_time ? sprintf(", sel('checkpoint', 'time_overhead') using 3:(100*$7) with linespoints lw 2 pt 5 lc rgb '#ff7f0e' title 'time overhead, t_ckpt / t_plain - 1 (CUDA events)'") : ""
eval "plot sel('checkpoint', 'memory_saving') using 3:(100*$7) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'memory saving, 1 - peak_ckpt / peak_plain', \
           sel('plain', 'activation_share') using 3:(100*$7) with linespoints lw 1.5 dt 2 pt 6 lc rgb '#555555' title 'activations / plain peak (the most any recomputation saves)'" . tm
