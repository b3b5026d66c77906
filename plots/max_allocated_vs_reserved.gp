# C16 max_memory_allocated vs memory_reserved: after every operation of three
# workloads (the C01 loop keeping every tensor, the C01 loop freeing each, a
# seeded mix with an empty_cache every 100 operations): allocated, peak
# allocated and reserved (MiB), and on a GPU the driver's used memory.
#   gnuplot -e "data='TSV'; out='PNG'" plots/max_allocated_vs_reserved.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,520 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"step\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
count(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $2==\"step\" && $4==\"%s\" && $12==\"ok\" { n++ } END { print n + 0 }' '%s'", v, m, data)) + 0

set xlabel "step (operation)"
set ylabel "MiB"
set yrange [0:*]
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque
set offsets 0, 0, graph 0.3, 0

set multiplot layout 1,3 title "C16: max_memory_allocated vs memory_reserved (claim: they show the same)" font ",12"
do for [wl in "keep_all free_each mixed"] {
    set title wl
    cmd = sprintf("plot sel('%s', 'reserved') using 3:($7/1048576) with steps lw 2 lc rgb '#ff7f0e' title 'reserved', sel('%s', 'peak_allocated') using 3:($7/1048576) with steps lw 2 lc rgb '#1f77b4' title 'peak allocated (max_memory_allocated)', sel('%s', 'allocated') using 3:($7/1048576) with steps lw 1 lc rgb '#2ca02c' title 'allocated'", wl, wl, wl)
    if (count(wl, "driver_used") > 0) {
        cmd = cmd . sprintf(", sel('%s', 'driver_used') using 3:($7/1048576) with steps dt 2 lc rgb '#7f7f7f' title 'driver used (cudaMemGetInfo)'", wl)
    }
    if (count(wl, "reserved") > 0) {
        eval cmd
    } else {
        set label 9 "no data" at graph 0.5, graph 0.5 center
        set yrange [0:1]
        plot NaN notitle
        unset label 9
        set yrange [0:*]
    }
}
unset multiplot
