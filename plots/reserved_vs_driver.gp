# C17 reserved vs driver: at each checkpoint of a fixed workload, the
# allocator model's allocated, reserved and cached free bytes, the driver's
# used memory above its baseline before the first allocation (cudaMemGetInfo)
# and nvidia-smi's per-process figure above the context; bottom: how far
# each device figure is from reserved. With --model-only only the model's
# lines are drawn.
#   gnuplot -e "data='TSV'; out='PNG'" plots/reserved_vs_driver.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 960,680 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
MiB = 1048576.0

set style line 1 lc rgb "#1f77b4" lw 2.5 pt 7 ps 0.9     # allocated
set style line 2 lc rgb "#d62728" lw 2.5 pt 5 ps 0.9     # reserved
set style line 3 lc rgb "#2ca02c" lw 1.5 pt 9 ps 0.8 dt 2  # cached free
set style line 4 lc rgb "#000000" lw 1.5 pt 6 ps 1.8     # driver
set style line 5 lc rgb "#9467bd" lw 1.5 pt 4 ps 2.4     # nvidia-smi
set grid xtics ytics lc rgb "#dddddd"
set xrange [-0.5:14.5]
set xtics 1

set multiplot layout 2,1 title "C17: reserved = allocated + cached free; the device holds context + reserved (nvidia-smi too)" font ",12"
set size 1,0.68
set origin 0,0.30
set title "the model's figures and the device's, per checkpoint"
set ylabel "MiB"
set yrange [0:*]
set key top left font ",9" spacing 1.1 opaque box
unset xlabel
plot sel("model", "allocated_bytes") using 3:($7/MiB) with linespoints ls 1 title "allocated (model)", \
     sel("model", "reserved_bytes") using 3:($7/MiB) with linespoints ls 2 title "reserved (model)", \
     sel("model", "cached_free_bytes") using 3:($7/MiB) with linespoints ls 3 title "cached free (model)", \
     sel("driver", "used_minus_baseline_bytes") using 3:($7/MiB) with points ls 4 title "driver used - baseline (cudaMemGetInfo)", \
     sel("nvidia-smi", "process_minus_context_bytes") using 3:($7/MiB) with points ls 5 title "nvidia-smi, this process - context"

set size 1,0.30
set origin 0,0
set title "device figure - reserved" font ",10"
set ylabel "MiB"
set yrange [*:*]
set xlabel "checkpoint (the workload's steps; labels in the CSV notes)"
set key top right font ",9" opaque box
plot 0 with lines lc rgb "#888888" dt 2 notitle, \
     sel("driver", "minus_reserved_bytes") using 3:($7/MiB) with linespoints ls 4 ps 1.0 title "driver", \
     sel("nvidia-smi", "minus_reserved_bytes") using 3:($7/MiB) with points ls 5 ps 1.4 title "nvidia-smi"
unset multiplot
