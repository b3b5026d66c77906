# C13 non-blocking copies: how long cudaMemcpyAsync takes to return with a
# busy kernel queued ahead of it (thick), beside kernel + copy (thin dashed,
# what a blocking call waits for) and the copy alone (thin dotted), for
# pinned and pageable memory, H2D and D2H; PyTorch's return times beside
# them where the run has them (open diamonds, dashed: plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/nonblocking_copy.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,540 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"

set logscale x 2
set xrange [3000:3.6e8]
set xtics ("4K" 4096, "64K" 65536, "1M" 1048576, "16M" 16777216, "256M" 268435456)
set xlabel "copy size (bytes)"
set logscale y 10
set yrange [*:1e6]   # headroom above the 10-100 ms lines for the key
set format y "10^{%L}"
set ylabel "host time (µs)"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" spacing 1.1 opaque
set style line 1 lc rgb "#1f77b4" lw 2.5 pt 7 ps 0.9   # pinned
set style line 2 lc rgb "#d62728" lw 2.5 pt 9 ps 1.0   # pageable

set multiplot layout 1,2 title "C13: time for cudaMemcpyAsync to return behind a busy kernel (claim: returns at once only from pinned memory)" font ",12"
do for [dir in "h2d d2h"] {
    set title (dir eq "h2d" ? "host to device" : "device to host")
    # eval: the PyTorch clauses depend on dir (a macro is expanded once per block)
    m = dir."_return_time_host_clock"
    eval "plot sel('pinned', m) using 3:($7*1e6) with linespoints ls 1 title 'pinned: call returns', \
               sel('pageable', m) using 3:($7*1e6) with linespoints ls 2 title 'pageable: call returns', \
               sel('pinned', dir.'_kernel_plus_copy_host_clock') using 3:($7*1e6) with lines ls 1 lw 1 dt 2 notitle, \
               sel('pageable', dir.'_kernel_plus_copy_host_clock') using 3:($7*1e6) with lines ls 2 lw 1 dt 2 notitle, \
               sel('pinned', dir.'_copy_alone_host_clock') using 3:($7*1e6) with lines ls 1 lw 1 dt 3 notitle, \
               sel('pageable', dir.'_copy_alone_host_clock') using 3:($7*1e6) with lines ls 2 lw 1 dt 3 notitle, \
               NaN with lines lc rgb '#444444' lw 1 dt 2 title 'kernel + copy (what a blocking call waits for)', \
               NaN with lines lc rgb '#444444' lw 1 dt 3 title 'copy alone, no kernel ahead'" . \
         pt_keyed(pt("pinned", m, "3:($7*1e6)", "#1f77b4") . pt("pageable", m, "3:($7*1e6)", "#d62728"))
}
unset multiplot
