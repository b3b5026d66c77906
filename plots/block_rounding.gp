# C02 block rounding: per request size (fresh allocator each), the block the
# allocator hands out (allocated) and the segment it takes (reserved), and on
# a GPU what cudaMalloc itself charges per call for that segment and for the
# bare request; log-log, with the 1 MiB and 10 MiB boundaries marked.
#   gnuplot -e "data='TSV'; out='PNG'" plots/block_rounding.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
count(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" && $7 > 0 { n++ } END { print n + 0 }' '%s'", v, m, data)) + 0

set title "C02: what one request costs (claim: 4 B -> 512 B from a 2 MB block; 1-10 MB -> 20 MB blocks)" font ",12"
set logscale xy 2
set xrange [0.7:6e8]
set yrange [128:1.2e9]
set xtics ("1" 1, "512" 512, "4K" 4096, "64K" 65536, "1M" 1048576, "10M" 10485760, "100M" 104857600) 
set ytics ("512" 512, "4K" 4096, "64K" 65536, "1M" 1048576, "2M" 2097152, "20M" 20971520, "100M" 104857600, "1G" 1073741824)
set xlabel "request size (bytes, MiB-based ticks)"
set ylabel "bytes"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" opaque
set arrow 1 from 1048576, graph 0 to 1048576, graph 1 nohead dt 2 lc rgb "#555555"
set arrow 2 from 10485760, graph 0 to 10485760, graph 1 nohead dt 2 lc rgb "#555555"
set label 1 "1 MiB: small pool ends" at 1048576, graph 0.04 right offset -0.5,0 font ",8" tc rgb "#555555"
set label 2 "10 MiB" at 10485760, graph 0.04 left offset 0.5,0 font ",8" tc rgb "#555555"

gpu = ""
if (count("cudaMalloc_segment", "driver_bytes_per_call") > 0) {
    gpu = gpu . sprintf(", sel('cudaMalloc_segment', 'driver_bytes_per_call') using 3:7 with points pt 6 ps 1.6 lc rgb '#7f7f7f' title 'driver charge per cudaMalloc of that segment'")
}
if (count("cudaMalloc_request", "driver_bytes_per_call") > 0) {
    gpu = gpu . sprintf(", sel('cudaMalloc_request', 'driver_bytes_per_call') using 3:7 with linespoints dt 3 pt 2 lc rgb '#9467bd' title 'driver charge per bare cudaMalloc(request)'")
}
eval "plot x with lines dt 3 lc rgb '#aaaaaa' title 'requested (y = x)', \
     sel('model', 'reserved_bytes') using 3:7 with linespoints lw 2 pt 5 lc rgb '#ff7f0e' title 'reserved: segment taken (model)', \
     sel('model', 'allocated_bytes') using 3:7 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#1f77b4' title 'allocated: block handed out (model)'" . gpu
