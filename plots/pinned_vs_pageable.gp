# C03 pinned vs pageable: copy bandwidth over size, H2D and D2H, per kind of
# host memory (solid: host clock, which the verdict uses; dashed: CUDA
# events), and the pinned/pageable ratio against the claimed 2-3x band;
# PyTorch's host-clock figures beside them where the run has them (open
# diamonds, dashed: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/pinned_vs_pageable.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,540 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
pcie = system(sprintf("awk -F'\t' '$4==\"pcie_theoretical_bandwidth\" {print $7; exit}' '%s'", data))

set logscale x 2
set xtics ("4K" 4096, "64K" 65536, "1M" 1048576, "16M" 16777216, "256M" 268435456, "1G" 1073741824)
set xlabel "copy size (bytes)"
set grid xtics ytics mytics lc rgb "#dddddd"
# to the largest copy of the run (256 MiB by default, more with --max-bytes)
maxsize = system(sprintf("awk -F'\t' '$4 ~ /_bandwidth_host_clock$/ && $3 + 0 > m { m = $3 + 0 } END { print m + 0 }' '%s'", data)) + 0
set xrange [3000:(maxsize > 0 ? 1.4 * maxsize : 1.45e9)]
set key bottom right font ",9" spacing 1.1 opaque
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.8   # pinned
set style line 2 lc rgb "#2ca02c" lw 2 pt 5 ps 0.8   # registered
set style line 3 lc rgb "#d62728" lw 2 pt 9 ps 0.9   # pageable

set multiplot layout 1,3 title "C03: pinned vs pageable host memory, copy bandwidth (claim: pinned is 2-3x faster)" font ",12"

set logscale y 10
set ylabel "bandwidth (GB/s, 1e9 B/s)"
set format y "%g"
do for [dir in "h2d d2h"] {
    set title (dir eq "h2d" ? "host to device" : "device to host")
    if (pcie ne "") {
        set arrow 1 from graph 0, first pcie/1e9 to graph 1, first pcie/1e9 nohead dt 3 lc rgb "#555555"
        set label 1 sprintf("PCIe theoretical %.0f GB/s", pcie/1e9) at graph 0.02, first pcie/1e9*1.25 font ",8" tc rgb "#555555"
    }
    # eval: the PyTorch clauses depend on dir (a macro is expanded once per block)
    m = dir."_bandwidth_host_clock"
    eval "plot sel('pinned', m) using 3:($7/1e9) with linespoints ls 1 title 'pinned', \
               sel('registered', m) using 3:($7/1e9) with linespoints ls 2 title 'registered', \
               sel('pageable', m) using 3:($7/1e9) with linespoints ls 3 title 'pageable', \
               sel('pinned', dir.'_bandwidth_events') using 3:($7/1e9) with lines ls 1 dt 2 lw 1 notitle, \
               sel('registered', dir.'_bandwidth_events') using 3:($7/1e9) with lines ls 2 dt 2 lw 1 notitle, \
               sel('pageable', dir.'_bandwidth_events') using 3:($7/1e9) with lines ls 3 dt 2 lw 1 notitle, \
               NaN with lines lc rgb '#444444' lw 2 title 'solid: host clock (verdict)', \
               NaN with lines lc rgb '#444444' lw 1 dt 2 title 'dashed: CUDA events'" . \
         pt_keyed(pt("pinned", m, "3:($7/1e9)", "#1f77b4") . pt("registered", m, "3:($7/1e9)", "#2ca02c") . \
                  pt("pageable", m, "3:($7/1e9)", "#d62728"))
    unset arrow 1
    unset label 1
}

set title "pinned / pageable (host clock)"
unset logscale y
set ylabel "ratio (x)"
set yrange [0:*]
set object 1 rect from graph 0, first 2 to graph 1, first 3 fc rgb "#ffe8a0" fs solid 0.5 noborder behind
set label 2 "claimed 2-3x" at graph 0.97, first 2.08 right font ",9" tc rgb "#8a6d00"
P = pt_with("pinned_over_pageable", "h2d_ratio_host_clock", "3:7", "pt 12 lc rgb '#1f77b4' title 'PyTorch pinned / pageable, H2D'") . \
    pt_with("pinned_over_pageable", "d2h_ratio_host_clock", "3:7", "lc rgb '#1f77b4' pt 8 title 'PyTorch pinned / pageable, D2H'")
plot sel("pinned_over_pageable", "h2d_ratio_host_clock") using 3:7 with linespoints ls 1 title "pinned / pageable, H2D", \
     sel("pinned_over_pageable", "d2h_ratio_host_clock") using 3:7 with linespoints ls 1 dt 2 pt 6 title "pinned / pageable, D2H", \
     sel("registered_over_pageable", "h2d_ratio_host_clock") using 3:7 with linespoints ls 2 lw 1 title "registered / pageable, H2D", \
     sel("registered_over_pageable", "d2h_ratio_host_clock") using 3:7 with linespoints ls 2 lw 1 dt 2 pt 4 title "registered / pageable, D2H", \
     1 with lines lc rgb "#888888" dt 3 notitle @P
unset multiplot
