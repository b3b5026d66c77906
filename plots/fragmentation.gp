# C19 fragmentation: left, the memory figures of the fragmenting trace
# without a split limit and with max_split_size 64 MiB (the limit as a dashed
# line; above the request's bars, whether it succeeded); right, the time
# figures (median, min..max) on the CUDA backend and in the model alone.
#   gnuplot -e "data='TSV'; out='PNG'" plots/fragmentation.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1100,560 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# Every memory (or time) metric of variant v, one row each.
selv(v) = sprintf("< awk -F'\t' '$1==\"%s\" && $12==\"ok\"' '%s'", v, data)
# "x <tab> request bytes <tab> ok|OOM" for configuration v, placed at x.
outcome(v, x) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"big_request\" {b=$7} $1==\"%s\" && $4==\"big_request_ok\" {k=$7} END {if (b != \"\") printf \"%%s\\t%%s\\t%%s\\n\", \"%g\", b, (k == 1 ? \"ok\" : \"OOM\")}' '%s'", v, v, x, data)
MiB = 1048576.0
mpos(m) = m eq "cached_free_before_big" ? 0 : m eq "largest_free_before_big" ? 1 : \
          m eq "big_request" ? 2 : m eq "reserved_before_big" ? 3 : m eq "peak_reserved" ? 4 : NaN
tpos(m) = m eq "ca_malloc_latency" ? 0 : m eq "ca_free_latency" ? 1 : \
          m eq "big_request_latency" ? 2 : m eq "trace_time" ? 3 : NaN

set multiplot layout 1,2 title "C19: a fragmenting trace under a 2 GiB limit, with and without max\\_split\\_size (claim: the split limit helps)" font ",12"

set bmargin 4
set title "memory (allocator model figures)"
set style fill solid 0.85 border -1
set boxwidth 0.36
set xrange [-0.6:4.6]
set xtics ("cached free\nbefore request" 0, "largest free\nblock" 1, "the request" 2, \
           "reserved\nbefore request" 3, "peak\nreserved" 4) font ",9"
set ylabel "MiB"
set yrange [0:*]
set grid ytics lc rgb "#dddddd"
set key top left font ",9" opaque box
plot selv("no_split_limit") using (mpos(strcol(4)) - 0.19):($7/MiB) with boxes lc rgb "#d62728" title "no split limit", \
     selv("max_split_64MiB") using (mpos(strcol(4)) + 0.19):($7/MiB) with boxes lc rgb "#1f77b4" title "max\\_split\\_size 64 MiB", \
     sel("no_split_limit", "limit_bytes") using (2):($7/MiB):(2.6) with xerrorbars lc rgb "#444444" lw 1.5 dt 2 pt -1 title "memory limit", \
     outcome("no_split_limit", -0.19) using ($1 + 2):($2/MiB):3 with labels offset 0,0.8 font ",10" tc rgb "#d62728" notitle, \
     outcome("max_split_64MiB", 0.19) using ($1 + 2):($2/MiB):3 with labels offset 0,0.8 font ",10" tc rgb "#1f77b4" notitle

set title "time per operation (host clock; median, min..max)"
unset style
set xrange [-0.6:3.6]
set xtics ("ca\\_malloc" 0, "ca\\_free" 1, "the request" 2, "whole trace" 3) font ",9"
set logscale y 10
set yrange [*:*]
set format y "10^{%L}"
set ylabel "seconds"
set key top left font ",9" opaque box
plot selv("no_split_limit@cuda") using (tpos(strcol(4)) - 0.27):7:8:9 with yerrorbars lc rgb "#d62728" pt 7 ps 1.2 title "no split limit, CUDA backend", \
     selv("max_split_64MiB@cuda") using (tpos(strcol(4)) - 0.09):7:8:9 with yerrorbars lc rgb "#1f77b4" pt 5 ps 1.2 title "max\\_split 64 MiB, CUDA backend", \
     selv("no_split_limit@host") using (tpos(strcol(4)) + 0.09):7:8:9 with yerrorbars lc rgb "#d62728" pt 6 ps 1.2 title "no split limit, model alone", \
     selv("max_split_64MiB@host") using (tpos(strcol(4)) + 0.27):7:8:9 with yerrorbars lc rgb "#1f77b4" pt 4 ps 1.2 title "max\\_split 64 MiB, model alone"
unset multiplot
