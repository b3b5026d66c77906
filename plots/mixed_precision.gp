# C05 mixed precision: left, the peak-allocated saving of fp16 and bf16 over
# fp32 against batch size, one line per model (the MLP's two shapes, seed
# 000's nn.Transformer) and precision, the claimed band (30-50%, "about 40%")
# shaded and the seed's own point (Transformer, B=32, fp16) ringed; right, the
# step speed-up t_fp32/t_mixed (CUDA events) with the claimed 1.5-3x band, or
# a note where the run had no GPU. Variants without rows (a run before the
# Transformer, or one where it could not run) are left out of the key.
# PyTorch's figures beside them where the run has them (open diamonds,
# dashed, in the variant's colour: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/mixed_precision.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1200,600 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
rows(v, m) = system(sprintf("awk -F'\t' '($1==\"%s\" || \"%s\"==\"\") && $4==\"%s\" && $12==\"ok\" {n++} END {print n+0}' '%s'", v, v, m, data)) + 0
# Seed 000's own point: the Transformer in fp16 at its input (32, 100, 512).
seed(m) = sprintf("< awk -F'\t' '$1==\"transformer_fp16\" && $3==32 && $4==\"%s\" && $12==\"ok\"' '%s'", m, data)
has_seed(m) = system(sprintf("awk -F'\t' '$1==\"transformer_fp16\" && $3==32 && $4==\"%s\" && $12==\"ok\" {n++} END {print n+0}' '%s'", m, data)) + 0
# One axis for both models' batch sizes: MLP rows (32..32768), Transformer
# sequences of 100 tokens (8..128).
bmin = system(sprintf("awk -F'\t' '$2==\"batch\" && (m==\"\" || $3<m) {m=$3} END {print (m==\"\" ? 16 : m)}' '%s'", data)) + 0
bmax = system(sprintf("awk -F'\t' '$2==\"batch\" && $3>m {m=$3} END {print (m==\"\" ? 65536 : m)}' '%s'", data)) + 0
has_spd = rows("", "speedup")
has_mem = rows("", "memory_saving")

# Models by hue (bf16 the lighter shade), precisions by dash and point.
ALL = "weight_bound_fp16 weight_bound_bf16 activation_bound_fp16 activation_bound_bf16 transformer_fp16 transformer_bf16"
col(v) = v eq "weight_bound_fp16" ? "#1f77b4" : v eq "weight_bound_bf16" ? "#7fc4f0" : \
         v eq "activation_bound_fp16" ? "#d62728" : v eq "activation_bound_bf16" ? "#f7a08f" : \
         v eq "transformer_fp16" ? "#6a3d9a" : "#c2a5cf"
fp16(v) = strstrt(v, "fp16") > 0
dash(v) = fp16(v) ? 1 : 2
ptype(v) = fp16(v) ? 7 : 5
psize(v) = fp16(v) ? 1.6 : 1.0   # fp16 and bf16 often coincide: both stay visible
name(v) = v eq "weight_bound_fp16" ? "MLP weight-bound (L=4, H=4096), fp16" : \
          v eq "weight_bound_bf16" ? "MLP weight-bound (L=4, H=4096), bf16" : \
          v eq "activation_bound_fp16" ? "MLP activation-bound (L=8, H=1024), fp16" : \
          v eq "activation_bound_bf16" ? "MLP activation-bound (L=8, H=1024), bf16" : \
          v eq "transformer_fp16" ? "nn.Transformer(d_model=512), seq 100, fp16" : \
          v eq "transformer_bf16" ? "nn.Transformer(d_model=512), seq 100, bf16" : v
# The variants with rows of metric m.
present(m) = system(sprintf("for v in %s; do n=$(awk -F'\t' -v v=$v '$1==v && $4==\"%s\" && $12==\"ok\" {n++} END {print n+0}' '%s'); [ $n -gt 0 ] && printf '%%s ' $v; done", ALL, m, data))
SEEDKEY = "seed 000's own model and input (Transformer, B=32, fp16)"
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"

set multiplot layout 1,2 title "C05: mixed precision vs fp32 over batch size, MLP and seed 000's Transformer (claim: about 40% less memory, 1.5-3x faster)" font ",12"

set logscale x 2
set xrange [bmin/1.5:bmax*1.5]
set xlabel "batch size (MLP: rows; Transformer: sequences of 100 tokens)"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box

# ---- left: memory
set title "peak allocated saving, 1 - peak_mixed / peak_fp32 (steady step)"
set ylabel "memory saving (%)"
set yrange [-20:80]
set object 1 rect from graph 0, first 30 to graph 1, first 50 fc rgb "#2ca02c" fs solid 0.15 noborder behind
set label 1 "claimed band 30-50%" at graph 0.98, first 47 right font ",9" tc rgb "#2ca02c"
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#888888" dt 3
V = present("memory_saving")
P = ""
do for [v in ALL] { P = P . pt(v, "memory_saving", "3:(100*$7)", col(v)) }
P = pt_keyed(P)
if (has_mem && has_seed("memory_saving")) {
    plot for [v in V] sel(v, "memory_saving") using 3:(100*$7) \
         with linespoints lc rgb col(v) dt dash(v) pt ptype(v) ps psize(v) lw 2 title name(v), \
         seed("memory_saving") using 3:(100*$7) with points pt 6 ps 4 lw 2 lc rgb "black" title SEEDKEY @P
} else {
    if (has_mem) {
        plot for [v in V] sel(v, "memory_saving") using 3:(100*$7) \
             with linespoints lc rgb col(v) dt dash(v) pt ptype(v) ps psize(v) lw 2 title name(v) @P
    } else {
        set label 2 "no memory figures in this run" at graph 0.5, 0.5 center
        plot NaN notitle
        unset label 2
    }
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
V = present("speedup")
P = ""
do for [v in ALL] { P = P . pt(v, "speedup", "3:7", col(v)) }
P = pt_keyed(P)
if (has_spd && has_seed("speedup")) {
    plot for [v in V] sel(v, "speedup") using 3:7 \
         with linespoints lc rgb col(v) dt dash(v) pt ptype(v) ps psize(v) lw 2 title name(v), \
         seed("speedup") using 3:7 with points pt 6 ps 4 lw 2 lc rgb "black" title SEEDKEY @P
} else {
    if (has_spd) {
        plot for [v in V] sel(v, "speedup") using 3:7 \
             with linespoints lc rgb col(v) dt dash(v) pt ptype(v) ps psize(v) lw 2 title name(v) @P
    } else {
        unset key
        set label 2 "no timing: a --model-only run measures memory only" at graph 0.5, 0.8 center
        plot NaN notitle
    }
}
unset multiplot
