# C27 no_grad evaluation: left, peak allocated of one forward pass over batch
# size with autograd's saved tensors (grad) and under no_grad, and the
# activations at each peak; right, the share of the peak no_grad saves, with
# the verdict rule's 50% line. PyTorch's figures beside them where the run
# has them (open diamonds, dashed, in the mode's colour: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/no_grad_eval.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1200,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

MiB = 1048576.0
sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"

set multiplot layout 1,2 title "C27: a forward pass with and without torch.no_grad() (claim: no graph, no activations, far less memory)" font ",12"

set title "peak allocated of x = randn(B, 1024); out = model(x)  (MLP, 8 layers, width 1024)"
set logscale x 2
set logscale y 10
set xlabel "batch size B"
set ylabel "MiB"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque box
P = pt_keyed(pt("mlp/grad", "peak_allocated", "3:($7/MiB)", "#d62728") . pt("mlp/no_grad", "peak_allocated", "3:($7/MiB)", "#1f77b4"))
plot sel("mlp/grad", "peak_allocated") using 3:($7/MiB) with linespoints lw 2 pt 7 lc rgb "#d62728" title "grad: peak allocated", \
     sel("mlp/no_grad", "peak_allocated") using 3:($7/MiB) with linespoints lw 2 pt 5 lc rgb "#1f77b4" title "no_grad: peak allocated", \
     sel("mlp/grad", "peak_activations") using 3:($7/MiB) with linespoints lw 1 dt 2 pt 6 lc rgb "#d62728" title "grad: activations at the peak", \
     sel("mlp/no_grad", "peak_activations") using 3:($7/MiB) with linespoints lw 1 dt 2 pt 4 lc rgb "#1f77b4" title "no_grad: activations at the peak", \
     sel("mlp/grad", "peak_workspace") using 3:(($7 + 0)/MiB) with lines lw 1 dt 3 lc rgb "#555555" title "cuBLAS workspaces (both)" @P

set title "share of the peak that no_grad saves"
unset logscale y
set yrange [0:100]
set ylabel "% of the grad peak"
set arrow 1 from graph 0, first 50 to graph 1, first 50 nohead lc rgb "#2ca02c" lw 1.5 dt 2
set label 1 "rule: holds at >= 50% at every batch" at graph 0.02, first 53 font ",9" tc rgb "#2ca02c"
P = pt_keyed(pt("mlp/no_grad_vs_grad", "peak_saving", "3:(100*$7)", "#1f77b4"))
plot sel("mlp/no_grad_vs_grad", "peak_saving") using 3:(100*$7) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "1 - peak(no_grad) / peak(grad)", \
     sel("mlp/no_grad_vs_grad", "activation_ratio") using 3:(100*(1-$7)) with linespoints lw 1 dt 2 pt 6 lc rgb "#555555" title "the same for the activations alone" @P
unset multiplot
