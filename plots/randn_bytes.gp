# C18 randn bytes: for a 1000x1000 tensor in float32 (torch's default) and
# float64, the bytes requested, the block handed out (allocated) and the
# segment reserved (MiB), on a GPU the driver's used memory with it live, and
# the claim's "about 8 MB" as a line.
#   gnuplot -e "data='TSV'; out='PNG'" plots/randn_bytes.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"

pivot = sprintf("< awk -F'\t' 'BEGIN { nv = split(\"float32 float64\", V, \" \"); nm = split(\"requested_bytes allocated_bytes reserved_bytes driver_used_bytes\", M, \" \") } !/^#/ && $12 == \"ok\" { x[$1 SUBSEP $4] = $7 } END { for (i = 1; i <= nv; i++) { printf \"%%d\", i - 1; for (j = 1; j <= nm; j++) { k = V[i] SUBSEP M[j]; printf \"\\t%%s\", (k in x) ? x[k] / 1048576 : \"NaN\" } print \"\" } }' '%s'", data)
has_drv = system(sprintf("awk -F'\t' '$4 == \"driver_used_bytes\" && $12 == \"ok\" { n++ } END { print n + 0 }' '%s'", data)) + 0
claim = system(sprintf("awk -F'\t' '$1 == \"claim\" && $4 == \"requested_bytes\" { print $7 / 1048576; exit }' '%s'", data))

set title "C18: torch.randn(1000, 1000).cuda() (claim: asks for about 8 MB)" font ",12"
set ylabel "MiB"
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set xrange [-0.6:1.6]
set xtics ("float32 (default)" 0, "float64" 1) scale 0
set grid ytics lc rgb "#dddddd"
set key top left font ",9"
set style fill solid 0.85 noborder
if (claim ne "") {
    set arrow 1 from graph 0, first claim to graph 1, first claim nohead dt 2 lw 2 lc rgb "#d62728"
    set label 1 sprintf("claimed: about 8 MB (%.2f MiB)", claim + 0) at graph 0.01, first claim left offset 0,0.8 front font ",9" tc rgb "#d62728"
}
nb = has_drv ? 4 : 3
w = 0.8 / nb
o(k) = (k - (nb - 1) / 2.0) * w
bar(col, k, color, name) = sprintf("pivot using ($1+o(%d)):%d:(w) with boxes lc rgb '%s' title '%s', pivot using ($1+o(%d)):%d:(sprintf('%%.2f', $%d)) with labels offset 0,0.7 font ',8' notitle", k, col, color, name, k, col, col)
cmd = "plot " . bar(2, 0, "#9467bd", "requested") . ", " . bar(3, 1, "#1f77b4", "allocated (block handed out)") . ", " . bar(4, 2, "#ff7f0e", "reserved (segment)")
if (has_drv) {
    cmd = cmd . ", " . bar(5, 3, "#7f7f7f", "driver used (cudaMemGetInfo)")
}
eval cmd
