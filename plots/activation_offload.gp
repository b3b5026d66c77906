# C23 activation offload: left, the MLP's steady peak allocated (MiB) over
# batch size with activations kept on the device, offloaded on a side
# stream, and offloaded on the compute stream (save_on_cpu's way); middle,
# the same for seed 000's nn.Transformer(d_model=256) (seq 64, fp32 Adam)
# kept vs --offload (save_on_cpu(pin_memory=True)), seed 000's batch 100
# marked; right, each offload variant over keep, both models: peak
# allocated, and on a GPU the step time (events) and, for the MLP, the copy
# time the PCIe bytes imply at the measured pinned bandwidth. PyTorch's
# figures beside them where the run has them (open diamonds, dashed, in the
# variant's colour: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/activation_offload.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1800,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"batch\" && $4==\"%s\" && $12==\"ok\" { print $3, $7, $8, $9 }' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
count(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" { n++ } END { print n + 0 }' '%s'", v, m, data)) + 0
# implied copy time over keep's step time, per batch
implied = sprintf("< awk -F'\t' '$2==\"batch\" && $12==\"ok\" && (($1==\"offload\" && $4==\"implied_copy_time\") || ($1==\"keep\" && $4==\"step_time\")) { v[$1,$3] = $7; if (!($3 in s)) { s[$3] = 1; b[++n] = $3 } } END { for (i = 1; i <= n; i++) if (v[\"keep\",b[i]] > 0 && (\"offload\",b[i]) in v) print b[i], v[\"offload\",b[i]] / v[\"keep\",b[i]] }' '%s'", data)
MiB = 1048576.0

set multiplot layout 1,3 title "C23: saved activations kept vs offloaded to pinned host memory (claim: offloading relieves GPU memory)" font ",12"
set xlabel "batch size (rows)"
set logscale x 2
set grid xtics ytics lc rgb "#dddddd"

# ------------------------------------------------------------- left: the MLP's peaks
set title "MLP (L=8, H=2048, fp32 SGD): steady peak allocated"
set ylabel "MiB"
set yrange [0:*]
set key top left font ",9" opaque
P = pt_keyed(pt("keep", "peak_allocated", "1:($2/MiB)", "#1f77b4") . pt("offload_serial", "peak_allocated", "1:($2/MiB)", "#ff7f0e"))
if (count("keep", "peak_allocated") > 0) {
    plot sel("keep", "peak_allocated") using 1:($2/MiB) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "keep on the device", \
         sel("offload", "peak_allocated") using 1:($2/MiB) with linespoints lw 2 pt 5 lc rgb "#d62728" title "offload (side stream)", \
         sel("offload_serial", "peak_allocated") using 1:($2/MiB) with points pt 6 ps 1.6 lc rgb "#ff7f0e" title "offload_serial (compute stream)", \
         sel("keep", "peak_activations") using 1:($2/MiB) with linespoints lw 1 dt 2 pt 1 lc rgb "#1f77b4" title "keep: activations at its peak" @P
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}

# ------------------------------------------------------------- middle: the Transformer's peaks
set title "nn.Transformer(d_model=256), seq 64, fp32 Adam: step-3 peak allocated"
P = pt_keyed(pt("transformer_keep", "peak_allocated", "1:($2/MiB)", "#1f77b4") . \
             pt("transformer_offload", "peak_allocated", "1:($2/MiB)", "#d62728"))
if (count("transformer_keep", "peak_allocated") > 0) {
    set arrow 7 from 100, graph 0 to 100, graph 1 nohead dt 3 lc rgb "#888888"
    set label 7 "seed 000: (64, 100, 256)" at 100, graph 0.04 right offset -0.5, 0 font ",9" tc rgb "#555555"
    plot sel("transformer_keep", "peak_allocated") using 1:($2/MiB) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "keep on the device", \
         sel("transformer_offload", "peak_allocated") using 1:($2/MiB) with linespoints lw 2 pt 5 lc rgb "#d62728" title "offload (save_on_cpu, compute stream)", \
         sel("transformer_keep", "peak_activations") using 1:($2/MiB) with linespoints lw 1 dt 2 pt 1 lc rgb "#1f77b4" title "keep: activations at its peak" @P
    unset arrow 7
    unset label 7
} else {
    set label 9 "no Transformer rows in this run" at graph 0.5, graph 0.5 center
    unset key
    plot [1:2] [0:1] -1 notitle  # an empty frame (NaN fails under the log x axis)
    set key
    set xrange [*:*]
    set yrange [0:*]
    unset label 9
}

# ------------------------------------------------------------- right: over keep
set title "offload over keep"
set offsets 0, 0, 0.3, 0
set ylabel "ratio to keep"
set yrange [0:*]
set key below left font ",9" maxrows 4  # below: the ratios may reach any height
if (count("offload", "peak_ratio") > 0) {
    cmd = "plot sel('offload', 'peak_ratio') using 1:2 with linespoints lw 2 pt 5 lc rgb '#d62728' title 'MLP: peak allocated, offload / keep', 1 with lines lc rgb '#555555' notitle"
    if (count("transformer_offload", "peak_ratio") > 0) {
        cmd = cmd . ", sel('transformer_offload', 'peak_ratio') using 1:2 with linespoints lw 2 pt 13 ps 1.4 lc rgb '#8c564b' title 'Transformer: peak allocated, offload / keep'"
    }
    if (count("offload", "slowdown") > 0) {
        cmd = cmd . ", sel('offload', 'slowdown') using 1:2 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'MLP: step time, offload / keep (events)'"
        cmd = cmd . ", sel('offload_serial', 'slowdown') using 1:2 with linespoints lw 2 pt 9 lc rgb '#ff7f0e' title 'MLP: step time, offload_serial / keep'"
        cmd = cmd . ", implied using 1:(1 + $2) with lines dt 2 lc rgb '#9467bd' title 'MLP: 1 + copy time implied by PCIe bytes / keep step'"
        if (count("transformer_offload", "slowdown") > 0) {
            cmd = cmd . ", sel('transformer_offload', 'slowdown') using 1:2 with linespoints lw 2 pt 11 ps 1.4 lc rgb '#17becf' title 'Transformer: step time, offload / keep'"
        }
        cmd = cmd . ", 2 with lines dt 3 lc rgb '#555555' title 'holds limit: 2x step time'"
    } else {
        set label 8 "no GPU: memory only, no step times" at graph 0.6, graph 0.55 center font ",9"
    }
    eval cmd . pt_keyed(pt("transformer_offload", "peak_ratio", "1:2", "#8c564b") . pt("offload_serial", "slowdown", "1:2", "#ff7f0e") . \
                        pt("transformer_offload", "slowdown", "1:2", "#17becf"))
    unset label 8
} else {
    set label 9 "no data" at graph 0.5, graph 0.5 center
    plot NaN notitle
    unset label 9
}
unset multiplot
