# C22 peer copy: GPU-to-GPU bandwidth over copy size (log-log), one panel per
# direction: cudaMemcpyPeerAsync with peer access off and on, through pinned
# host memory, and a kernel on the destination GPU reading the source GPU's
# memory in place (peer access on); NVLink's rate (sum of links, one way)
# as a line where nvidia-smi gave it.
#   gnuplot -e "data='TSV'; out='PNG'" plots/peer_copy.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,560 font "sans,10" noenhanced
set output out
set datafile separator whitespace
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" { print $3, $7, $8, $9 }' '%s'", v, m, data)
nvlink = system(sprintf("awk -F'\t' '$4==\"nvlink_bandwidth\" { print $7 / 1e9 }' '%s'", data)) + 0
has(m) = system(sprintf("awk -F'\t' '$4==\"%s\" && $12==\"ok\" { n++ } END { print n + 0 }' '%s'", m, data)) + 0
# PyTorch's tensor.to("cuda:1") where the run keeps tests/torch/peer_reference.py's
# CSV as pytorch/peer_reference.csv (its bandwidths, B/s, by size)
torch_csv = exists("run") ? run."/pytorch/peer_reference.csv" : ""
has_torch = strlen(torch_csv) > 0 ? system(sprintf("test -f '%s' && echo 1 || echo 0", torch_csv)) + 0 : 0
tsel(m) = sprintf("< awk -F, '$3==\"to_cuda\" && $6==\"%s\" && $14==\"ok\" { print $5, $9 } END { if (!NR) print \"1 NaN\" }' '%s'", m, has_torch ? torch_csv : "/dev/null")

set multiplot layout 1,2 title "C22: GPU-to-GPU copies (claim: tensors on two GPUs must be copied to one device)" font ",12"
set logscale xy
set xlabel "copy size (bytes)"
set ylabel "bandwidth (GB/s, 1e9 B/s)"
set xtics ("4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576, "16 MiB" 16777216, "256 MiB" 268435456, "1 GiB" 1073741824)
set grid xtics ytics lc rgb "#dddddd"
set key bottom right font ",9"
set style data linespoints

do for [d in "gpu0_to_gpu1 gpu1_to_gpu0"] {
    m = d."_bandwidth"
    set title d
    if (has(m) > 0) {
        plot sel("peer_off", m) using 1:($2/1e9):($3/1e9):($4/1e9) with yerrorlines pt 7 ps 0.6 lc rgb "#d62728" title "peer access off", \
             sel("peer_on", m) using 1:($2/1e9):($3/1e9):($4/1e9) with yerrorlines pt 7 ps 0.6 lc rgb "#1f77b4" title "peer access on", \
             sel("via_host", m) using 1:($2/1e9):($3/1e9):($4/1e9) with yerrorlines pt 7 ps 0.6 lc rgb "#7f7f7f" title "through pinned host memory", \
             sel("kernel_read", m) using 1:($2/1e9):($3/1e9):($4/1e9) with yerrorlines pt 5 ps 0.6 lc rgb "#2ca02c" title "kernel reads the other GPU", \
             tsel(m) using 1:($2/1e9) with points pt 6 ps 1.4 lc rgb "#9467bd" title (has_torch ? "PyTorch tensor.to(other GPU)" : ""), \
             (nvlink > 0 ? nvlink : NaN) with lines dt 2 lc rgb "#000000" title sprintf("NVLink %.0f GB/s", nvlink)
    } else {
        set label 9 "no data" at graph 0.5, graph 0.5 center
        plot NaN notitle
        unset label 9
    }
}
unset multiplot
