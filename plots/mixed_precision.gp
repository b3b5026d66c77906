# C05 mixed precision: left, the peak-allocated saving of fp16 and bf16 over
# fp32 against batch size, one line per shape and precision, the claimed band
# (30-50%, "about 40%") shaded; right, the step speed-up t_fp32/t_mixed (CUDA
# events) with the claimed 1.5-3x band, or a note where the run had no GPU.
#   gnuplot -e "data='TSV'; out='PNG'" plots/mixed_precision.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
count(m) = system(sprintf("awk -F'\t' '$4==\"%s\" && $12==\"ok\" {n++} END {print n+0}' '%s'", m, data)) + 0
bmin = system(sprintf("awk -F'\t' '$2==\"batch\" && (m==\"\" || $3<m) {m=$3} END {print (m==\"\" ? 16 : m)}' '%s'", data)) + 0
bmax = system(sprintf("awk -F'\t' '$2==\"batch\" && $3>m {m=$3} END {print (m==\"\" ? 65536 : m)}' '%s'", data)) + 0
has_spd = count("speedup")
has_mem = count("memory_saving")

# Shapes by hue (bf16 the lighter shade), precisions by dash and point.
VARS = "weight_bound_fp16 weight_bound_bf16 activation_bound_fp16 activation_bound_bf16"
col(i) = i == 1 ? "#1f77b4" : i == 2 ? "#7fc4f0" : i == 3 ? "#d62728" : "#f7a08f"
dash(i) = i % 2 ? 1 : 2
ptype(i) = i % 2 ? 7 : 5
psize(i) = i % 2 ? 1.6 : 1.0   # fp16 and bf16 often coincide: both stay visible
name(v) = v eq "weight_bound_fp16" ? "weight-bound (L=4, H=4096), fp16" : \
          v eq "weight_bound_bf16" ? "weight-bound (L=4, H=4096), bf16" : \
          v eq "activation_bound_fp16" ? "activation-bound (L=8, H=1024), fp16" : \
          v eq "activation_bound_bf16" ? "activation-bound (L=8, H=1024), bf16" : v

set multiplot layout 1,2 title "C05: mixed precision vs fp32 over batch size (claim: about 40% less memory, 1.5-3x faster)" font ",12"

set logscale x 2
set xrange [bmin/1.5:bmax*1.5]
set xlabel "batch size (rows)"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box

# ---- left: memory
set title "peak allocated saving, 1 - peak_mixed / peak_fp32 (step >= 2)"
set ylabel "memory saving (%)"
set yrange [-20:80]
set object 1 rect from graph 0, first 30 to graph 1, first 50 fc rgb "#2ca02c" fs solid 0.15 noborder behind
set label 1 "claimed band 30-50%" at graph 0.98, first 47 right font ",9" tc rgb "#2ca02c"
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#888888" dt 3
if (has_mem) {
    plot for [i=1:words(VARS)] sel(word(VARS, i), "memory_saving") using 3:(100*$7) \
         with linespoints lc rgb col(i) dt dash(i) pt ptype(i) ps psize(i) lw 2 title name(word(VARS, i))
} else {
    set label 2 "no memory figures in this run" at graph 0.5, 0.5 center
    plot NaN notitle
    unset label 2
}
unset object 1
unset label 1

# ---- right: speed
set title "step speed-up, t_fp32 / t_mixed (CUDA events, median)"
set ylabel "speed-up (x)"
set logscale y 2
set yrange [0.5:16]
set object 1 rect from graph 0, first 1.5 to graph 1, first 3 fc rgb "#2ca02c" fs solid 0.15 noborder behind
set label 1 "claimed band 1.5-3x" at graph 0.98, first 2.7 right font ",9" tc rgb "#2ca02c"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb "#888888" dt 3
if (has_spd) {
    plot for [i=1:words(VARS)] sel(word(VARS, i), "speedup") using 3:7 \
         with linespoints lc rgb col(i) dt dash(i) pt ptype(i) ps psize(i) lw 2 title name(word(VARS, i))
} else {
    unset key
    set label 2 "no timing: a --model-only run measures memory only" at graph 0.5, 0.8 center
    plot NaN notitle
}
unset multiplot
