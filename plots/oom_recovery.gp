# C28 OOM recovery: left, per scenario, whether the last request succeeded
# after the same request alone (retry_alone) and after empty_cache() first
# (empty_cache_retry); right, what the manual empty_cache released: reserved
# before and after it in each scenario.
#   gnuplot -e "data='TSV'; out='PNG'" plots/oom_recovery.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1200,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

MiB = 1048576.0
# One line per scenario in this order: name, then metric m's value.
SCENS = "too_large cached_only pinned_fragments freed_after_exception external_consumer"
row(m) = sprintf("< awk -F'\t' 'BEGIN {OFS=\"\t\"} $4==\"%s\" && $12==\"ok\" {v[$1]=$7} END {n=split(\"%s\", s, \" \"); for (i=1;i<=n;i++) if (s[i] in v) print i-1, s[i], v[s[i]]}' '%s'", m, SCENS, data)

set multiplot layout 1,2 title "C28: after an OOM, empty_cache() + retry vs the retry alone (allocator model)" font ",12"

set title "did the last request succeed?"
set style fill solid 0.85 border -1
set boxwidth 0.36
set xrange [-0.6:4.6]
set yrange [0:1.3]
set ytics ("OOM" 0, "ok" 1)
set xtics rotate by -20 font ",9"
set grid ytics lc rgb "#dddddd"
set key top right font ",9" opaque box
plot row("retry_alone_ok") using ($1 - 0.19):($3 + 0.02):xtic(2) with boxes lc rgb "#7f7f7f" title "retry alone", \
     row("empty_cache_retry_ok") using ($1 + 0.19):($3 + 0.02) with boxes lc rgb "#1f77b4" title "empty_cache() + retry", \
     row("first_request_ok") using 1:(1.15):($3 > 0 ? "first request ok" : "first request OOM") with labels font ",8" notitle

set title "reserved before and after the manual empty_cache()"
set yrange [0:*]
set ytics auto
set ylabel "MiB"
plot row("reserved_before_empty_cache") using ($1 - 0.19):($3/MiB):xtic(2) with boxes lc rgb "#ff7f0e" title "before", \
     row("reserved_after_empty_cache") using ($1 + 0.19):($3/MiB) with boxes lc rgb "#2ca02c" title "after"
unset multiplot
