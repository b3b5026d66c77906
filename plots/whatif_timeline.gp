# make whatif: allocated and reserved over the run under the default settings
# and the best setting, with no card (each point: the largest values within
# its stretch of steps).
#   gnuplot -e "default='CSV'; best='CSV'; bestname='NAME'; out='PNG'" plots/whatif_timeline.gp
# CSV columns (scripts/whatif timeline_*.csv): step, allocated bytes, reserved bytes.
set terminal pngcairo size 1100,480 font "sans,10"
set output out
set termoption noenhanced
set datafile separator ","
GiB = 1073741824.0
set title "Allocated and reserved over the run (allocator model replay)" font ",12"
set xlabel "step (operation in the replayed trace)"
set ylabel "GiB"
set yrange [0:*]
set grid lc rgb "#dddddd"
set key top left opaque box font ",9"
set autoscale xfix
if (bestname eq "default") {
    plot default every ::1 using 1:($3/GiB) with lines lw 2 lc rgb "#ff7f0e" title "reserved, default", \
         default every ::1 using 1:($2/GiB) with lines lw 1.5 lc rgb "#1f77b4" title "allocated, default"
} else {
    plot default every ::1 using 1:($3/GiB) with lines lw 2 lc rgb "#ff7f0e" title "reserved, default", \
         default every ::1 using 1:($2/GiB) with lines lw 1.5 lc rgb "#1f77b4" title "allocated, default", \
         best every ::1 using 1:($3/GiB) with lines lw 2 dt 2 lc rgb "#d62728" title "reserved, ".bestname, \
         best every ::1 using 1:($2/GiB) with lines lw 1.5 dt 2 lc rgb "#17becf" title "allocated, ".bestname
}
