# C12 lazy initialisation: what the device holds after each of a new
# process's first CUDA calls (left: nvidia-smi memory.used minus its value
# before the child, MiB; the points mark whether nvidia-smi lists the process),
# and what each call costs (right, log scale; the first bar is spawn to main).
#   gnuplot -e "data='TSV'; out='PNG'" plots/lazy_init.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,560 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(m) = sprintf("< awk -F'\t' '$1==\"child\" && $4 ~ /^%s$/ && $12==\"ok\"' '%s'", m, data)
MiB = 1048576.0

set grid ytics lc rgb "#dddddd"
set key top left Left reverse font ",9" opaque
set bmargin 6.5
set xrange [-0.6:6.6]
set xtics ("main\nentry" 0, "Runtime\nGet\nVersion" 1, "Driver\nGet\nVersion" 2, \
           "Get\nDevice\nCount" 3, "Set\nDevice" 4, "Free(0)" 5, "Malloc(1)" 6) font ",9"
set xlabel "after the call cuda...(), in this order" offset 0,-1.2
set style fill solid 0.7 border -1
set boxwidth 0.6

set multiplot layout 1,2 title "C12: device memory and context after each of the first CUDA calls (claim: nothing until the first call)" font ",12"

set title "device memory after each call (whole device, nvidia-smi)"
set ylabel "memory added since the child started (MiB)"
set yrange [0:*]
set y2range [0:1.1]
set y2tics ("no" 0, "yes" 1) textcolor rgb "#d62728"
set y2label "child listed in nvidia-smi compute-apps (share of runs)" textcolor rgb "#d62728"
plot sel("device_used_delta_nvsmi") using 3:($7/MiB) with boxes lc rgb "#1f77b4" title "memory.used added (median; bars min..max)", \
     sel("device_used_delta_nvsmi") using 3:($7/MiB):($8/MiB):($9/MiB) with yerrorbars lc rgb "#333333" pt 7 ps 0.3 notitle, \
     sel("process_listed_share") using 3:7 axes x1y2 with points pt 7 ps 1.3 lc rgb "#d62728" title "listed (right axis)"
unset y2tics
unset y2label

set title "time of each call (monotonic clock in the child)"
set ylabel "time (s)"
set logscale y 10
set format y "%.0s %cs"
set yrange [*:*]
plot sel("spawn_to_main|call_time") using 3:7 with boxes lc rgb "#2ca02c" title "median; bars min..max (first: spawn to main)", \
     sel("spawn_to_main|call_time") using 3:7:8:9 with yerrorbars lc rgb "#333333" pt 7 ps 0.3 notitle
unset multiplot
