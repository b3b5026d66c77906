# C04 sync vs async timing: one workload timed three ways. Left: cuBLAS SGEMM
# (true fp32) over n; right: a spin kernel of set length. Bars span min..max
# of the repeats; dotted: the 100 us verdict threshold (left) and the set
# duration (right). PyTorch's figures beside them where the run has them
# (open diamonds, dashed: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/sync_vs_async_timing.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,560 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# PyTorch's three times of workload v, in the suite's colours
pt3(v) = pt_keyed(pt(v, "time_host_clock_no_sync", "3:7", "#d62728") . pt(v, "time_host_clock_sync", "3:7", "#1f77b4") . \
                  pt(v, "time_cuda_events", "3:7", "#2ca02c"))

set logscale xy 10
set grid xtics ytics lc rgb "#dddddd"
set format y "%.0s %cs"
set ylabel "time per call (s, median of repeats)"
set key top left Left reverse font ",9" opaque
set style line 1 lc rgb "#d62728" lw 2 pt 9 ps 1.0   # host clock, no sync
set style line 2 lc rgb "#1f77b4" lw 2 pt 7 ps 0.9   # host clock + sync
set style line 3 lc rgb "#2ca02c" lw 2 pt 5 ps 0.9   # CUDA events

set multiplot layout 1,2 title "C04: a host clock read without synchronizing times only the launch (claim: sync or use events)" font ",12"

set title "cuBLAS SGEMM n x n (fp32, no TF32)"
set xlabel "n"
set xrange [180:11000]
set xtics (256, 512, 1024, 2048, 4096, 8192)
set yrange [*:*]
P = pt3("sgemm")
plot sel("sgemm", "time_host_clock_no_sync") using 3:7:8:9 with yerrorlines ls 1 title "host clock, no sync", \
     sel("sgemm", "time_host_clock_sync") using 3:7:8:9 with yerrorlines ls 2 title "host clock + cudaStreamSynchronize", \
     sel("sgemm", "time_cuda_events") using 3:7:8:9 with yerrorlines ls 3 dt 2 title "CUDA events (device time)", \
     1e-4 with lines lc rgb "#999999" dt 3 title "100 us: shorter work is outside the verdict" @P

set title "spin kernel of a set duration"
set xlabel "set duration (s)"
set format x "%.0s %cs"
set xrange [5e-4:2e-2]
set xtics (0.001, 0.002, 0.005, 0.01)
set yrange [*:*]
P = pt3("busy_kernel")
plot sel("busy_kernel", "time_host_clock_no_sync") using 3:7:8:9 with yerrorlines ls 1 title "host clock, no sync", \
     sel("busy_kernel", "time_host_clock_sync") using 3:7:8:9 with yerrorlines ls 2 title "host clock + sync", \
     sel("busy_kernel", "time_cuda_events") using 3:7:8:9 with yerrorlines ls 3 dt 2 title "CUDA events", \
     x with lines lc rgb "#888888" dt 3 title "set duration" @P
unset multiplot
