# C20 memory breakdown: for each model, the MLP's two shapes and seed 000's
# nn.Transformer(d_model=512, batch_first=True) on (B, 100, 512), the steady
# step's peak allocated split into activations (bottom), weights, grads,
# optimizer state, cuBLAS workspace and other, as shares of the peak, over
# batch size (fp32 Adam); the 50% line the claim names; the peak itself (MiB)
# on the right axis; the seed's own input (B=32) marked on the Transformer's.
#   gnuplot -e "data='TSV'; out='PNG'" plots/memory_breakdown.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1800,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

# One line per batch: batch, cumulative shares (activations, +weights, +grads,
# +optimizer, +workspace, +other = 1), peak MiB. Rows come in batch order.
cum(v) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"batch\" && $12==\"ok\" { if (!($3 in seen)) { seen[$3] = 1; b[++n] = $3 } v[$3,$4] = $7 } END { for (i = 1; i <= n; i++) { x = b[i]; p = v[x,\"peak_allocated\"]; if (p <= 0) continue; c = v[x,\"peak_activations\"]; printf \"%%s %%g\", x, c/p; split(\"weights grads optimizer workspace other\", k, \" \"); for (j = 1; j <= 5; j++) { c += v[x,\"peak_\" k[j]]; printf \" %%g\", c/p } printf \" %%g\\n\", p/1048576 } }' '%s'", v, data)
count(v) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"peak_allocated\" && $12==\"ok\" { n++ } END { print n + 0 }' '%s'", v, data)) + 0

set multiplot layout 1,3 title "C20: peak training memory by category, fp32 Adam, MLP and seed 000's Transformer (claim: activations take more than half and grow with batch)" font ",12"
set ylabel "share of the step's peak allocated"
set logscale x 2
set yrange [0:1]
set ytics 0.1 nomirror
set grid xtics ytics lc rgb "#dddddd"
set key outside bottom center horizontal font ",9" maxrows 3 width -2
set style fill solid 0.8 noborder

TITLE(v) = v eq "narrow" ? "MLP narrow (L=4, H=1024)" : v eq "wide" ? "MLP wide (L=4, H=4096)" : \
           "nn.Transformer(d_model=512, batch_first=True), seq 100"
do for [shape in "narrow wide transformer"] {
    set title TITLE(shape)
    set xlabel (shape eq "transformer" ? "batch size (sequences of 100 tokens)" : "batch size (rows)")
    if (shape eq "transformer" && count(shape) > 0) {
        set arrow 9 from first 32, graph 0 to first 32, graph 1 nohead front dt 3 lw 1.5 lc rgb "black"
        set label 8 "seed 000's input (32, 100, 512)" at first 32, graph 0.15 left offset 0.5,0 front font ",9" tc rgb "white"
    }
    if (count(shape) > 0) {
        set y2label "peak allocated (MiB)"
        set logscale y2 10
        set y2tics nomirror
        set xrange [*:*]
        plot cum(shape) using 1:(0):2 with filledcurves lc rgb "#d62728" title "activations", \
             '' using 1:2:3 with filledcurves lc rgb "#1f77b4" title "weights", \
             '' using 1:3:4 with filledcurves lc rgb "#ff7f0e" title "grads", \
             '' using 1:4:5 with filledcurves lc rgb "#2ca02c" title "optimizer state", \
             '' using 1:5:6 with filledcurves lc rgb "#9467bd" title "cuBLAS workspace", \
             '' using 1:6:7 with filledcurves lc rgb "#7f7f7f" title "other (scalars, scratch)", \
             0.5 with lines dt 2 lw 2 lc rgb "black" title "half of the peak", \
             '' using 1:8 axes x1y2 with linespoints lw 2 pt 7 ps 0.6 lc rgb "#222222" title "peak allocated (right axis)"
    } else {
        unset y2label
        unset y2tics
        unset logscale y2
        set xrange [8:16384]
        set label 9 "no data" at graph 0.5, graph 0.5 center
        plot NaN notitle
        unset label 9
    }
    unset arrow 9
    unset label 8
}
unset multiplot
