# C08 activation checkpointing: the memory saving 1 - peak_ckpt/peak_plain
# and (on a GPU) the time overhead t_ckpt/t_plain - 1, with the claimed bands
# shaded (saving 60-70%, overhead 20-30%), and the activations' share of the
# plain peak: the most any recomputation could save. Left, the MLP over depth:
# checkpoint of every Linear+ReLU pair, and checkpoint_sequential in S
# segments. Right, seed 000's nn.Transformer(d_model=256) with every layer
# checkpointed, over the sequence length (batch 100). PyTorch's saving and
# overhead beside them where the run has them (open diamonds, dashed, in the
# variant's colour: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/checkpointing.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1400,600 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && ($12==\"ok\" || $12==\"noisy\")' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
count(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" {n++} END {print n+0}' '%s'", v, m, data)) + 0
lmax = system(sprintf("awk -F'\t' '$2==\"layers\" && $3>m {m=$3} END {print m+0}' '%s'", data)) + 0
smax = system(sprintf("awk -F'\t' '$2==\"seq\" && $3>m {m=$3} END {print m+0}' '%s'", data)) + 0
SEGS = system(sprintf("awk -F'\t' '$1 ~ /^segments=/ && $4==\"memory_saving\" && !s[$1]++ {printf \"%%s \", $1}' '%s'", data))
has_time = count("checkpoint", "time_overhead") + count("transformer checkpoint", "time_overhead")
SEGCOLS = "#1f77b4 #9467bd #8c564b #e377c2"

set multiplot layout 1,2 title "C08: activation checkpointing (claim: saves 60-70% of memory for 20-30% more compute)" font ",12"

set ylabel "% of the plain run"
set yrange [-20:100]
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box
set object 1 rect from graph 0, first 60 to graph 1, first 70 fc rgb "#2ca02c" fs solid 0.18 noborder behind
set label 1 "claimed saving 60-70%" at graph 0.98, first 73 right font ",9" tc rgb "#2ca02c"
set object 2 rect from graph 0, first 20 to graph 1, first 30 fc rgb "#ff7f0e" fs solid 0.18 noborder behind
set label 2 "claimed overhead 20-30%" at graph 0.98, first 33 right font ",9" tc rgb "#ff7f0e"
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#888888" dt 3
if (!has_time) { set label 3 "no timing: a --model-only run measures memory only" at graph 0.5, graph 0.06 center font ",9" }

set title "MLP (Linear+ReLU, width 1024, batch 8192, Adam fp32) over depth" font ",11"
set xlabel "depth L (Linear layers)"
set xrange [0:(lmax > 2 ? lmax : 16) + 1]
tm = has_time ? ", sel('checkpoint', 'time_overhead') using 3:(100*$7) with linespoints lw 1.5 dt 2 pt 5 lc rgb '#ff7f0e' title 'per pair: time overhead (CUDA events)'" : ""
P = pt("checkpoint", "memory_saving", "3:(100*$7)", "#2ca02c") . pt("checkpoint", "time_overhead", "3:(100*$7)", "#ff7f0e")
do for [i=1:words(SEGS)] { P = P . pt(word(SEGS, i), "memory_saving", "3:(100*$7)", word(SEGCOLS, i)) . \
                                  pt(word(SEGS, i), "time_overhead", "3:(100*$7)", word(SEGCOLS, i)) }
P = pt_keyed(P)
tms = has_time ? ", for [i=1:words(SEGS)] sel(word(SEGS, i), 'time_overhead') using 3:(100*$7) with linespoints lw 1.5 dt 2 pt 5 lc rgb word(SEGCOLS, i) title word(SEGS, i).': time overhead'" : ""
eval "plot sel('checkpoint', 'memory_saving') using 3:(100*$7) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'per Linear+ReLU pair: memory saving', \
           for [i=1:words(SEGS)] sel(word(SEGS, i), 'memory_saving') using 3:(100*$7) with linespoints lw 2 pt 9 lc rgb word(SEGCOLS, i) title 'checkpoint_sequential, '.word(SEGS, i).': memory saving', \
           sel('plain', 'activation_share') using 3:(100*$7) with linespoints lw 1.5 dt 3 pt 6 lc rgb '#555555' title 'activations / plain peak (the most any recomputation saves)'" . tm . tms . P

set title "seed 000's nn.Transformer(d_model=256), batch 100, Adam fp32, per layer" font ",11"
set xlabel "sequence length (tokens)"
set xrange [0:(smax > 64 ? smax : 256) * 1.1]
if (count("transformer checkpoint", "memory_saving") == 0) {
    set label 4 "no Transformer rows in this run (see its failed rows)" at graph 0.5, graph 0.5 center font ",10"
    plot -100 notitle
} else {
    P = pt_keyed(pt("transformer checkpoint", "memory_saving", "3:(100*$7)", "#d62728") . \
                 pt("transformer checkpoint", "time_overhead", "3:(100*$7)", "#ff7f0e"))
    tt = has_time ? ", sel('transformer checkpoint', 'time_overhead') using 3:(100*$7) with linespoints lw 1.5 dt 2 pt 5 lc rgb '#ff7f0e' title 'per layer: time overhead (CUDA events)'" : ""
    eval "plot sel('transformer checkpoint', 'memory_saving') using 3:(100*$7) with linespoints lw 2 pt 7 lc rgb '#d62728' title 'per layer: memory saving', \
               sel('transformer plain', 'activation_share') using 3:(100*$7) with linespoints lw 1.5 dt 3 pt 6 lc rgb '#555555' title 'activations / plain peak'" . tt . P
}
unset multiplot
