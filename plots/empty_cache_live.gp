# C15 empty_cache with live blocks: per scenario (every tensor freed; some
# segments wholly free; a live block in every segment), reserved and
# allocated before and after empty_cache (MiB), and on a GPU the driver's used
# memory before and after.
#   gnuplot -e "data='TSV'; out='PNG'" plots/empty_cache_live.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"

# One line per scenario: index, then the metrics in MiB (NaN where absent).
pivot = sprintf("< awk -F'\t' 'BEGIN { nv = split(\"all_freed mixed all_live\", V, \" \"); nm = split(\"reserved_before reserved_after allocated_before allocated_after driver_used_before driver_used_after\", M, \" \") } !/^#/ && $12 == \"ok\" { x[$1 SUBSEP $4] = $7 } END { for (i = 1; i <= nv; i++) { printf \"%%d\", i - 1; for (j = 1; j <= nm; j++) { k = V[i] SUBSEP M[j]; printf \"\\t%%s\", (k in x) ? x[k] / 1048576 : \"NaN\" } print \"\" } }' '%s'", data)
has_drv = system(sprintf("awk -F'\t' '$4 == \"driver_used_after\" && $12 == \"ok\" { n++ } END { print n + 0 }' '%s'", data)) + 0

set title "C15: empty_cache with live blocks (claim: frees only idle blocks, does not reduce memory_reserved)" font ",11"
set ylabel "MiB"
set yrange [0:*]
set offsets 0, 0, graph 0.1, 0
set xrange [-0.6:2.6]
set xtics ("all freed" 0, "mixed: some segments wholly free" 1, "a live block in every segment" 2) scale 0
set grid ytics lc rgb "#dddddd"
set key top left font ",9"
set style fill solid 0.85 noborder
nb = has_drv ? 6 : 4
w = 0.8 / nb
o(k) = (k - (nb - 1) / 2.0) * w
bar(col, k, color, name) = sprintf("pivot using ($1+o(%d)):%d:(w) with boxes lc rgb '%s' %s title '%s', pivot using ($1+o(%d)):%d:(sprintf('%%.1f', $%d)) with labels offset 0,0.7 font ',7' notitle", k, col, color, (k % 2 ? "fs pattern 1" : ""), name, k, col, col)

cmd = "plot " . bar(2, 0, "#ff7f0e", "reserved before empty_cache") . ", " . bar(3, 1, "#ff7f0e", "reserved after") . ", " . bar(4, 2, "#1f77b4", "allocated before") . ", " . bar(5, 3, "#1f77b4", "allocated after")
if (has_drv) cmd = cmd . ", " . bar(6, 4, "#7f7f7f", "driver used before") . ", " . bar(7, 5, "#7f7f7f", "driver used after")
eval cmd
