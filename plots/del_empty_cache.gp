# C01 del + empty_cache: per variant of the seed's 100-tensor loop, the
# allocator's peak allocated, reserved after the loop and peak reserved (MiB),
# and on a GPU the driver's used memory at the peak; the claim's two numbers
# are marked on their bars.
#   gnuplot -e "data='TSV'; out='PNG'" plots/del_empty_cache.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"

# One line per variant: index, then the metrics in MiB (NaN where absent).
pivot = sprintf("< awk -F'\t' 'BEGIN { nv = split(\"keep_all free_each free_each_empty_cache\", V, \" \"); nm = split(\"peak_allocated reserved_end peak_reserved driver_used_peak claimed_peak_allocated\", M, \" \") } !/^#/ && $12 == \"ok\" { x[$1 SUBSEP $4] = $7 } END { for (i = 1; i <= nv; i++) { printf \"%%d\", i - 1; for (j = 1; j <= nm; j++) { k = V[i] SUBSEP M[j]; printf \"\\t%%s\", (k in x) ? x[k] / 1048576 : \"NaN\" } print \"\" } }' '%s'", data)
has_drv = system(sprintf("awk -F'\t' '$4 == \"driver_used_peak\" && $12 == \"ok\" { n++ } END { print n + 0 }' '%s'", data)) + 0

set title "C01: 100 tensors of 1000x1000 float32 (claim: 400.00 MB kept, 3.81 MB with del + empty_cache)" font ",12"
set ylabel "MiB"
set yrange [0:*]
set offsets 0, 0, graph 0.1, 0
set xrange [-0.6:2.6]
set xtics ("keep all" 0, "del each" 1, "del each + empty_cache" 2) scale 0
set grid ytics lc rgb "#dddddd"
set key top right
set style fill solid 0.85 noborder
w = has_drv ? 0.19 : 0.25
o(k) = has_drv ? (k - 1.5) * w : (k - 1) * w

drv = has_drv ? sprintf(", pivot using ($1+o(3)):5:(w) with boxes lc rgb '#7f7f7f' title 'driver used at peak (cudaMemGetInfo)', pivot using ($1+o(3)):5:(sprintf('%%.2f', $5)) with labels offset 0,0.7 font ',8' notitle") : ""
eval "plot pivot using ($1+o(0)):2:(w) with boxes lc rgb '#1f77b4' title 'peak allocated (max_memory_allocated)', \
     pivot using ($1+o(0)):2:(sprintf('%.2f', $2)) with labels offset 0,0.7 font ',8' notitle, \
     pivot using ($1+o(1)):3:(w) with boxes lc rgb '#2ca02c' title 'reserved after the loop', \
     pivot using ($1+o(1)):3:(sprintf('%.2f', $3)) with labels offset 0,0.7 font ',8' notitle, \
     pivot using ($1+o(2)):4:(w) with boxes lc rgb '#ff7f0e' title 'peak reserved', \
     pivot using ($1+o(2)):4:(sprintf('%.2f', $4)) with labels offset 0,0.7 font ',8' notitle, \
     pivot using ($1+o(0)):6 with points pt 3 ps 2 lc rgb '#d62728' title 'claimed peak allocated'" . drv
