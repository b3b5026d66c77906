# C14 prefetch overlap: total time of N batches, serial vs double-buffered,
# from pinned and pageable memory (bars, min..max whiskers), the ideal time
# of each (x), the achieved share of the ideal saving; and beside it the copy
# and compute time of one batch alone. PyTorch's times beside them where the
# run has them (open diamonds on the bars, its overlap under the suite's:
# plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/prefetch_overlap.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1000,540 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(m) = sprintf("< awk -F'\t' '$4==\"%s\" && $12==\"ok\" && $1 !~ /^pytorch:/' '%s'", m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# PyTorch's rows of metric m, each at its suite variant's position in sel(m)
pt_sel(m) = sprintf("< awk -F'\t' '$4==\"%s\" && $12==\"ok\" { if ($1 !~ /^pytorch:/) { if (!($1 in x)) x[$1] = n++ } else if (substr($1, 9) in x) print x[substr($1, 9)] \"\t\" $7 }' '%s'", m, data)
# ... and one batch alone: pinned copy, pageable copy, compute at 0, 1, 2
pt_alone = sprintf("< awk -F'\t' '$12==\"ok\" { p = $1==\"pytorch:pinned\" && $4==\"copy_time_events\" ? 0 : $1==\"pytorch:pageable\" && $4==\"copy_time_events\" ? 1 : $1==\"pytorch:compute\" && $4==\"compute_time_events\" ? 2 : -1; if (p >= 0) print p \"\t\" $7 }' '%s'", data)
PT_BAR = "with points ".PT_STYLE." pt ".PT_POINT." lc rgb '#000000'"
get(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" {print $7; exit}' '%s'", v, m, data))
bytes = system(sprintf("awk -F'\t' '$4==\"total_time_events\" {print $3; exit}' '%s'", data))
# Bar colour: double-buffered blue, serial grey; pageable lighter.
colour(v) = strstrt(v, "double") ? (strstrt(v, "pageable") ? 0x9ecae1 : 0x1f77b4) \
                                 : (strstrt(v, "pageable") ? 0xd9d9d9 : 0x7f7f7f)
label(v) = v eq "serial_pinned" ? "serial\npinned" : v eq "double_buffered_pinned" ? "double-buffered\npinned" : \
           v eq "serial_pageable" ? "serial\npageable" : v eq "double_buffered_pageable" ? "double-buffered\npageable" : v

set multiplot title sprintf("C14: prefetch, copy of the next batch overlapped with compute (%s MiB batches)", \
    bytes eq "" ? "?" : sprintf("%.0f", bytes/1048576.0)) font ",12"

# ---- left: totals
set origin 0, 0
set size 0.66, 0.95
set title "all batches, CUDA events (whiskers: min..max)"
set ylabel "total time (ms)"
set yrange [0:*]
set xrange [-0.6:3.6]
set style fill solid 0.9 noborder
set boxwidth 0.6
set grid ytics lc rgb "#dddddd"
set bmargin 4.5   # two-line bar labels
set key top left font ",9"
set offsets 0, 0, graph 0.12, 0
do for [k in "pinned pageable"] {
    f = get(k, "overlap_fraction")
    x = (k eq "pinned") ? 1 : 3
    t = get("double_buffered_".k, "total_time_events")
    g = get("pytorch:".k, "overlap_fraction")
    if (f ne "" && t ne "") {
        if (g ne "") {
            set label sprintf("overlap %.0f%%\nof ideal saving\n(PyTorch %.0f%%)", 100*f, 100*g) at x, t*1e3 center offset 0, 2.7 font ",9"
        } else {
            set label sprintf("overlap %.0f%%\nof ideal saving", 100*f) at x, t*1e3 center offset 0, 2.2 font ",9"
        }
    }
}
P = pt_any("total_time_events") ? ", pt_sel('total_time_events') using 1:($2*1e3) ".PT_BAR." title 'PyTorch (open diamonds)'" : ""
plot sel("total_time_events") using 0:($7*1e3):(colour(strcol(1))):xtic(label(strcol(1))) with boxes lc rgb variable notitle, \
     sel("total_time_events") using 0:($7*1e3):($8*1e3):($9*1e3) with yerrorbars lc rgb "black" pt -1 notitle, \
     sel("ideal_total_time") using 0:($7*1e3) with points pt 2 ps 2 lw 2 lc rgb "#d62728" title "ideal time" @P
unset label
unset offsets

# ---- right: one batch alone
set origin 0.66, 0
set size 0.34, 0.95
set title "one batch alone, CUDA events"
set ylabel "time (ms)"
set xrange [-0.6:2.6]
set xtics ("copy\npinned" 0, "copy\npageable" 1, "compute" 2)
P = pt_any("copy_time_events") + pt_any("compute_time_events") ? ", pt_alone using 1:($2*1e3) ".PT_BAR." notitle" : ""
plot "< awk -F'\t' '$4==\"copy_time_events\" && $1==\"pinned\"' '".data."'" using (0):($7*1e3) with boxes lc rgb "#1f77b4" notitle, \
     "< awk -F'\t' '$4==\"copy_time_events\" && $1==\"pageable\"' '".data."'" using (1):($7*1e3) with boxes lc rgb "#9ecae1" notitle, \
     "< awk -F'\t' '$4==\"compute_time_events\" && $1 !~ /^pytorch:/' '".data."'" using (2):($7*1e3) with boxes lc rgb "#ff7f0e" notitle @P
unset multiplot
