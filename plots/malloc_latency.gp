# C10 malloc latency: host time of one cudaMalloc / cudaFree over block
# sizes (medians, min..max bars) in two regimes: a fresh process holding
# nothing else (solid) and a process with a small block live (dashed, the
# one a real program meets), beside a cached hit in the allocator model
# and cudaMallocAsync from a pool that keeps its memory; the claim's 1 ms as
# a dashed line, and cudaFree / cudaMalloc of 2 MiB with a 5 ms kernel
# running as single marks.
#   gnuplot -e "data='TSV'; out='PNG'" plots/malloc_latency.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 960,600 font "sans,10"
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"host_latency\" && $12==\"ok\"' '%s'", v, data)

set title "C10: host latency of allocation calls (claim: cudaMalloc costs about 1 ms)" font ",12"
set logscale x 2
set xrange [256:6.4e10]
set xtics ("512 B" 512, "8 KiB" 8192, "128 KiB" 131072, "2 MiB" 2097152, "32 MiB" 33554432, \
           "512 MiB" 536870912, "8 GiB" 8589934592)
set xlabel "block size (bytes)"
set logscale y 10
set yrange [1e-3:1e8]   # room above the lines for the key
set format y "10^{%L}"
set ylabel "host time per call (µs, monotonic clock)"
set grid xtics ytics lc rgb "#dddddd"
set key top left font ",9" spacing 1.1 opaque box
set style line 1 lc rgb "#d62728" lw 2.5 pt 7 ps 0.9    # cudaMalloc
set style line 2 lc rgb "#ff7f0e" lw 2.0 pt 5 ps 0.8    # cudaFree
set style line 7 lc rgb "#8c0a0a" lw 2.5 pt 6 ps 0.9 dt 2  # cudaMalloc, small block live
set style line 8 lc rgb "#b35900" lw 2.0 pt 4 ps 0.8 dt 2  # cudaFree, small block live
set style line 3 lc rgb "#1f77b4" lw 2.0 pt 9 ps 0.9    # cudaMallocAsync
set style line 4 lc rgb "#17becf" lw 1.5 pt 8 ps 0.8 dt 2  # async round trip
set style line 5 lc rgb "#2ca02c" lw 2.0 pt 13 ps 0.9   # cached hit
set style line 6 lc rgb "#98df8a" lw 1.5 pt 12 ps 0.8   # cached free

plot 1000 with lines lc rgb "#555555" lw 1 dt 2 title "claim: 1 ms", \
     sel("cudaMalloc") using 3:($7*1e6):($8*1e6):($9*1e6) with yerrorlines ls 1 title "cudaMalloc, fresh process holding nothing (min..max)", \
     sel("cudaFree") using 3:($7*1e6):($8*1e6):($9*1e6) with yerrorlines ls 2 title "cudaFree, fresh process holding nothing (min..max)", \
     sel("cudaMalloc_small_live") using 3:($7*1e6):($8*1e6):($9*1e6) with yerrorlines ls 7 title "cudaMalloc, 512-B block live (min..max)", \
     sel("cudaFree_small_live") using 3:($7*1e6):($8*1e6):($9*1e6) with yerrorlines ls 8 title "cudaFree, 512-B block live (min..max)", \
     sel("cudaMallocAsync") using 3:($7*1e6) with linespoints ls 3 title "cudaMallocAsync, pool kept (host call)", \
     sel("cudaMallocAsync+cudaFreeAsync+sync") using 3:($7*1e6) with linespoints ls 4 title "cudaMallocAsync + cudaFreeAsync + stream sync", \
     sel("ca_malloc_cached") using 3:($7*1e6) with linespoints ls 5 title "caching allocator: cached hit (ca\\_malloc)", \
     sel("ca_free_cached") using 3:($7*1e6) with linespoints ls 6 title "caching allocator: free to cache (ca\\_free)", \
     sel("cudaFree_device_busy") using 3:($7*1e6) with points lc rgb "#ff7f0e" pt 4 ps 2.2 lw 2 title "cudaFree, 5 ms kernel running", \
     sel("cudaMalloc_device_busy") using 3:($7*1e6) with points lc rgb "#d62728" pt 6 ps 2.2 lw 2 title "cudaMalloc, 5 ms kernel running"
