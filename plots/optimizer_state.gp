# C09 optimizer state: left, bytes per parameter at the steady peak, stacked
# by category, for SGD, SGD+momentum and Adam at the largest width; right,
# Adam's memory over SGD's by width (steady peak, grads+state, allocated
# between steps, weights+grads+state) and momentum's peak over SGD's, with
# the claim's 2.5-3.5x band. PyTorch's figures beside them where the run
# has them: its peak bytes per parameter on each bar, its ratios in the
# suite's colours (open diamonds, dashed: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/optimizer_state.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

wmax = system(sprintf("awk -F'\t' '$4==\"weights_bpp\" && $12==\"ok\" && $3+0 > m { m = $3+0 } END { print m + 0 }' '%s'", data)) + 0
# One line per optimizer: name, then bytes/param of each category at width wmax.
table = sprintf("< awk -F'\t' '$3+0==%d && $12==\"ok\" { v[$1,$4] = $7 } END { n = split(\"sgd momentum adam\", o, \" \"); for (i = 1; i <= n; i++) if ((o[i],\"weights_bpp\") in v) print o[i], v[o[i],\"weights_bpp\"], v[o[i],\"grads_bpp\"], v[o[i],\"state_bpp\"], v[o[i],\"temporaries_bpp\"], v[o[i],\"activations_bpp\"], v[o[i],\"workspace_bpp\"], v[o[i],\"other_bpp\"] }' '%s'", wmax, data)
sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" { print $3, $7 }' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# PyTorch's peak bytes per parameter at width wmax, at its bar's position
# (0, 1, ... in the table's order)
pt_table = sprintf("< awk -F'\t' '$3+0==%d && $12==\"ok\" { v[$1,$4] = $7 } END { n = split(\"sgd momentum adam\", o, \" \"); for (i = 1; i <= n; i++) if ((o[i],\"weights_bpp\") in v) { if ((\"pytorch:\" o[i],\"peak_bpp\") in v) print k + 0, v[\"pytorch:\" o[i],\"peak_bpp\"]; k++ } }' '%s'", wmax, data)
P = pt_on("sgd", "peak_bpp") + pt_on("momentum", "peak_bpp") + pt_on("adam", "peak_bpp") > 0 ? \
    ", pt_table using 1:2 with points ".PT_STYLE." pt ".PT_POINT." lc rgb '#000000' title 'PyTorch: peak allocated, B/param'" : ""

set multiplot layout 1,2 title "C09: Adam vs SGD memory (claim: Adam uses about 3x the memory of SGD)" font ",12"

# ------------------------------------------------------------- left: stacked bars
if (wmax > 0) {
    set title sprintf("bytes per parameter at the steady peak (H=%d, fp32)", wmax)
    set style data histograms
    set style histogram rowstacked
    set style fill solid 0.85 border rgb "#555555"
    set boxwidth 0.6
    set ylabel "bytes per parameter"
    set yrange [0:*]
    set grid ytics lc rgb "#dddddd"
    set key top left font ",9" reverse Left
    plot table using 2:xtic(1) lc rgb "#1f77b4" title "weights", \
         '' using 3 lc rgb "#ff7f0e" title "grads", \
         '' using 4 lc rgb "#2ca02c" title "optimizer state", \
         '' using 5 lc rgb "#98df8a" title "foreach temporaries", \
         '' using 6 lc rgb "#d62728" title "activations", \
         '' using 7 lc rgb "#9467bd" title "cuBLAS workspace", \
         '' using 8 lc rgb "#7f7f7f" title "other", \
         '' using ($0):($2+$3+$4+$5+$6+$7+$8):(sprintf("%.1f B/param", $2+$3+$4+$5+$6+$7+$8)) with labels offset 0,0.8 font ",9" notitle @P
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}

# ------------------------------------------------------------- right: ratios over width
unset style
set style data linespoints
set title "memory over SGD's, by model width (L layers, batch fixed)"
set xlabel "width H (features)"
set ylabel "ratio to SGD"
set logscale x 2
set xrange [*:*]
set yrange [0:4]
set xtics auto
unset xtics
set xtics nomirror
set grid xtics ytics lc rgb "#dddddd"
set object 1 rect from graph 0, first 2.5 to graph 1, first 3.5 fc rgb "#fff2cc" fs solid 1.0 noborder behind
set label 2 "claim: about 3x" at graph 0.02, first 3.25 font ",9"
set key bottom right font ",9" opaque
P = pt_keyed(pt("adam_vs_sgd", "peak_ratio", "1:2", "#d62728") . pt("adam_vs_sgd", "end_ratio", "1:2", "#ff7f0e") . \
             pt("momentum_vs_sgd", "peak_ratio", "1:2", "#7f7f7f"))
plot sel("adam_vs_sgd", "peak_ratio") using 1:2 lw 2 pt 7 lc rgb "#d62728" title "Adam: steady peak allocated", \
     sel("adam_vs_sgd", "grads_state_ratio") using 1:2 lw 2 pt 5 dt 2 lc rgb "#2ca02c" title "Adam: grads + state", \
     sel("adam_vs_sgd", "end_ratio") using 1:2 lw 2 pt 9 lc rgb "#ff7f0e" title "Adam: allocated between steps", \
     sel("adam_vs_sgd", "model_state_ratio") using 1:2 lw 1 pt 4 dt 3 lc rgb "#1f77b4" title "Adam: weights + grads + state", \
     sel("momentum_vs_sgd", "peak_ratio") using 1:2 lw 1 pt 6 lc rgb "#7f7f7f" title "momentum: steady peak allocated" @P
unset multiplot
