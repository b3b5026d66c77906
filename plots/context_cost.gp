# C11 context cost: device memory a process holds after each start-up step
# (left: nvidia-smi memory.used minus its value before the child, MiB; the
# band is the claimed "about 1000 MiB", read as 700-1300 MiB), and what each step
# and a whole process cost in time (right, log scale), for lazy and eager
# module loading (CUDA_MODULE_LOADING).
#   gnuplot -e "data='TSV'; out='PNG'" plots/context_cost.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,560 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4 ~ /^%s$/ && $12==\"ok\"' '%s'", v, m, data)
MiB = 1048576.0

set grid ytics lc rgb "#dddddd"
set key top left Left reverse font ",9" opaque
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.9   # lazy
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 0.9   # eager

set bmargin 4
set multiplot layout 1,2 title "C11: device memory and time of a CUDA context before any tensor (claim: about 1000 MiB)" font ",12"

set title "device memory in use after each step (whole device, nvidia-smi)"
set xrange [-0.4:5.4]
set xtics ("before" 0, "context" 1, "cuBLAS\nhandle" 2, "first\nkernel" 3, "48 KiB\nbuffers" 4, "first\nSGEMM" 5)
set ylabel "memory added since the child started (MiB)"
set yrange [0:*]
set object 1 rect from graph 0, first 700 to graph 1, first 1300 fc rgb "#ffe8a0" fs solid 0.5 noborder behind
set label 1 "claimed: about 1000 MiB" at graph 0.98, first 1000 right font ",9" tc rgb "#8a6d00"
plot sel("lazy", "device_used_delta_nvsmi") using 3:($7/MiB):($8/MiB):($9/MiB) with yerrorlines ls 1 title "LAZY (default)", \
     sel("eager", "device_used_delta_nvsmi") using 3:($7/MiB):($8/MiB):($9/MiB) with yerrorlines ls 2 title "EAGER"
unset object 1
unset label 1

set title "time per step (child's clock) and per whole process"
set xrange [0.4:6.6]
set xtics ("context" 1, "cuBLAS\nhandle" 2, "first\nkernel" 3, "48 KiB\nbuffers" 4, "first\nSGEMM" 5, "whole\nprocess" 6)
set ylabel "time (s)"
set logscale y 10
set format y "%.0s %cs"
set yrange [*:*]
set style fill solid 0.7 border -1
set boxwidth 0.34
plot sel("lazy", "stage_time") using ($3-0.18):7 with boxes ls 1 title "LAZY", \
     sel("eager", "stage_time") using ($3+0.18):7 with boxes ls 2 title "EAGER", \
     sel("lazy", "process_startup_context_.*") using (6-0.18):7 with boxes ls 1 notitle, \
     sel("eager", "process_startup_context_.*") using (6+0.18):7 with boxes ls 2 notitle
unset multiplot
