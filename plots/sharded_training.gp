# C24 sharded training: left, each rank's predicted peak allocated (GiB, log
# scale) over the number of ranks N for DDP (dashed), ZeRO-2 (dotted) and
# FSDP (solid) at each model width; right, DDP at N=1 over FSDP at N (the
# memory reduction), with the claim's 10x. Model figures (allocator model,
# PyTorch 2.11's request order); where the run measured on GPUs, the left
# panel adds rank 0's measured peaks at N = the GPUs (black: DDP square,
# ZeRO-2 triangle, FSDP circle) and PyTorch's own (open diamonds,
# plots/lib/pytorch.gp); a third panel sets each wrapper's measured peak per
# rank against its whole step's time (rank 0, medians): what the saving
# costs in time, PyTorch's wrappers beside (open diamonds), or "no GPU run".
#   gnuplot -e "data='TSV'; out='PNG'" plots/sharded_training.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1800,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

# The widths, from variants fsdp_w<W>.
widths = system(sprintf("awk -F'\t' '$1 ~ /^fsdp_w/ && $4==\"peak_allocated_model\" { w = substr($1, 7); if (!(w in s)) { s[w] = 1; o = o \" \" w } } END { print o }' '%s'", data))
nw = words(widths)
sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" && $3+0 <= 64 { print $3, $7 }' '%s'", v, m, data)
colour(i) = word("#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b", (i - 1) % 6 + 1)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# The measured peaks (rank 0, variants <wrapper>_rank0 at param ranks): the
# suite's, then PyTorch's; "" where the run has none (one GPU: C24 waived).
wrappers = "ddp zero2 fsdp"
wname(i) = word("DDP ZeRO-2 FSDP", i)
wpoint(i) = word("5 9 7", i)
measured(i) = system(sprintf("awk -F'\t' '$1==\"%s_rank0\" && $4==\"peak_allocated\" && $12==\"ok\" { n = 1; exit } END { print n + 0 }' '%s'", word(wrappers, i), data)) + 0
M = ""
do for [i=1:3] {
    if (measured(i)) {
        M = M . sprintf(", sel('%s_rank0', 'peak_allocated') using 1:($2/2**30) with points pt %s ps 1.5 lc rgb '#000000' title '%s measured, rank 0'", word(wrappers, i), wpoint(i), wname(i))
    }
}
P = pt_keyed(pt("ddp_rank0", "peak_allocated", "1:($2/2**30)", "#000000") . pt("zero2_rank0", "peak_allocated", "1:($2/2**30)", "#000000") . \
             pt("fsdp_rank0", "peak_allocated", "1:($2/2**30)", "#000000"))

# rank 0's (step time in ms, peak in GiB) of variant v, where it has both
tp(v) = sprintf("< awk -F'\t' '$1==\"%s\" && $12==\"ok\" { if ($4==\"step_time\") t = $7 * 1e3; if ($4==\"peak_allocated\") p = $7 / 1073741824 } END { if (t != \"\" && p != \"\") print t, p }' '%s'", v, data)
has_tp(v) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"step_time\" && $12==\"ok\" { n = 1; exit } END { print n + 0 }' '%s'", v, data)) + 0

set multiplot layout 1,3 title "C24: per-rank memory under DDP, ZeRO-2 and FSDP (claim: up to 10x less per GPU)" font ",12"
set logscale x 2
set xlabel "ranks N"
set grid xtics ytics lc rgb "#dddddd"
set key bottom left font ",9"

set title "model: each rank's peak allocated"
set logscale y 10
set ylabel "peak allocated (GiB)"
if (nw > 0) {
    eval "plot for [i=1:nw] sel('ddp_w'.word(widths, i), 'peak_allocated_model') using 1:($2/2**30) with lines dt 2 lc rgb colour(i) title 'DDP, width '.word(widths, i), \
         for [i=1:nw] sel('zero2_w'.word(widths, i), 'peak_allocated_model') using 1:($2/2**30) with lines dt 3 lc rgb colour(i) notitle, \
         for [i=1:nw] sel('fsdp_w'.word(widths, i), 'peak_allocated_model') using 1:($2/2**30) with linespoints pt 7 ps 0.6 lc rgb colour(i) title 'FSDP, width '.word(widths, i)" . M . P
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}

set title "model: peak(DDP, N=1) / peak(FSDP, N); dotted: ZeRO-2"
unset logscale y
set yrange [0:*]
set ylabel "memory reduction (x)"
set key top left font ",9"
if (nw > 0) {
    plot for [i=1:nw] sel("fsdp_w".word(widths, i), "reduction_model") using 1:2 with linespoints pt 7 ps 0.6 lc rgb colour(i) title "FSDP, width ".word(widths, i), \
         for [i=1:nw] sel("zero2_w".word(widths, i), "reduction_model") using 1:2 with lines dt 3 lc rgb colour(i) notitle, \
         10 with lines dt 2 lw 1.5 lc rgb "#000000" title "claim: 10x"
} else {
    plot NaN notitle
}

set title "measured, rank 0: peak per rank against the whole step's time"
unset logscale x
set xrange [0:*]
set yrange [0:*]
set xlabel "step time (ms)"
set ylabel "peak allocated (GiB)"
set key top right font ",9"
T = ""
do for [i=1:3] {
    v = word(wrappers, i)."_rank0"
    if (has_tp(v)) {
        T = T . sprintf("%s tp('%s') using 1:2 with points pt %s ps 1.8 lc rgb '#000000' title '%s, the suite'", strlen(T) ? "," : "", v, wpoint(i), wname(i))
    }
    if (has_tp("pytorch:".v)) {
        T = T . sprintf("%s tp('pytorch:%s') using 1:2 with points pt %d ps 1.8 lc rgb '%s' title '%s, PyTorch'", strlen(T) ? "," : "", v, PT_POINT, colour(i), wname(i))
    }
}
if (strlen(T)) {
    eval "plot ".T
} else {
    set label 9 "no GPU run (C24 measures on 2 or more GPUs)" at graph 0.5, graph 0.5 center
    set xrange [0:1]
    set yrange [0:1]
    plot NaN notitle
    unset label 9
}
unset multiplot
