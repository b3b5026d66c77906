# C22 peer copy: GPU-to-GPU bandwidth over copy size (log-log), one panel per
# direction: cudaMemcpyPeerAsync with peer access off and on, through pinned
# host memory, and a kernel on the destination GPU reading the source GPU's
# memory in place (peer access on); NVLink's rate (sum of links, one way)
# as a line where nvidia-smi gave it. Where the run has the matrix over
# every pair of GPUs (variants matrix_*, metric gpu<S>_to_gpu<D>_bandwidth),
# a second row of heatmaps, one per method: source GPU down, destination
# across, the median GB/s printed in each cell, one colour scale for all;
# grey "no P2P" where the pair cannot access each other's memory, red
# "wrong" where a copy or a + b was wrong.
#   gnuplot -e "data='TSV'; out='PNG'" plots/peer_copy.gp
#   (-e "... verbose=1": also prints each heatmap's cells as read, to stderr)
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set datafile commentschars "#"
# GPUs in the matrix (0: none) and its copy size, bytes
ngpu = system(sprintf("awk -F'\t' '$1==\"matrix\" && $4==\"gpu_count\" { n = $7 } END { print n + 0 }' '%s'", data)) + 0
mbytes = system(sprintf("awk -F'\t' '$1==\"matrix_peer_off\" && $12==\"ok\" { b = $3 } END { print b + 0 }' '%s'", data)) + 0
if (ngpu >= 2) {
    set terminal pngcairo size 1600,1080 font "sans,10" noenhanced
} else {
    set terminal pngcairo size 1260,560 font "sans,10" noenhanced
}
set output out
set datafile separator whitespace

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" { print $3, $7, $8, $9 }' '%s'", v, m, data)
nvlink = system(sprintf("awk -F'\t' '$4==\"nvlink_bandwidth\" { print $7 / 1e9 }' '%s'", data)) + 0
has(m) = system(sprintf("awk -F'\t' '$4==\"%s\" && $12==\"ok\" { n++ } END { print n + 0 }' '%s'", m, data)) + 0
# PyTorch's tensor.to("cuda:1") where the run keeps tests/torch/peer_reference.py's
# CSV as pytorch/peer_reference.csv (its bandwidths, B/s, by size)
torch_csv = exists("run") ? run."/pytorch/peer_reference.csv" : ""
has_torch = strlen(torch_csv) > 0 ? system(sprintf("test -f '%s' && echo 1 || echo 0", torch_csv)) + 0 : 0
tsel(m) = sprintf("< awk -F, '$3==\"to_cuda\" && $6==\"%s\" && $14==\"ok\" { print $5, $9 } END { if (!NR) print \"1 NaN\" }' '%s'", m, has_torch ? torch_csv : "/dev/null")

set multiplot title "C22: GPU-to-GPU copies (claim: tensors on two GPUs must be copied to one device)" font ",12"
# the sweep's two panels across the top (the whole chart without a matrix)
top = ngpu >= 2 ? 0.47 : 0.95
set logscale xy
set xlabel "copy size (bytes)"
set ylabel "bandwidth (GB/s, 1e9 B/s)"
set xtics ("4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576, "16 MiB" 16777216, "256 MiB" 268435456, "1 GiB" 1073741824)
set grid xtics ytics lc rgb "#dddddd"
set key bottom right font ",9"
set style data linespoints

do for [di = 1:2] {
    d = word("gpu0_to_gpu1 gpu1_to_gpu0", di)
    m = d."_bandwidth"
    set origin (di - 1) * 0.5, 1 - 0.05 - top
    set size 0.5, top
    set title d." (pair GPU 0 <-> 1, host clock)"
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

if (ngpu >= 2) {
    # ------------------------------------------------ the matrix, one heatmap a method
    # The cell of a row: its metric gpu<S>_to_gpu<D>_bandwidth read by
    # gnuplot itself (tab-separated, so that empty fields keep their place).
    isbw(s) = s[1:3] eq "gpu" && strstrt(s, "_to_gpu") > 0 && strstrt(s, "_bandwidth") > 0
    msrc(s) = s[4:strstrt(s, "_to_gpu") - 1] + 0
    mdst(s) = s[strstrt(s, "_to_gpu") + 7:strstrt(s, "_bandwidth") - 1] + 0
    cell(v, st) = strcol(1) eq v && strcol(12) eq st && isbw(strcol(4))
    CX(v, st) = cell(v, st) ? mdst(strcol(4)) : NaN
    CY(v, st) = cell(v, st) ? msrc(strcol(4)) : NaN
    ncell(v, st) = system(sprintf("awk -F'\t' '$1==\"%s\" && $12==\"%s\" && $4 ~ /^gpu[0-9]+_to_gpu[0-9]+_bandwidth$/ { n++ } END { print n + 0 }' '%s'", v, st, data)) + 0
    # one colour scale for every heatmap: 0 to the fastest cell
    cbmax = system(sprintf("awk -F'\t' '$1 ~ /^matrix_/ && $12==\"ok\" && $4 ~ /_bandwidth$/ && $7 / 1e9 > m { m = $7 / 1e9 } END { print m + 0 }' '%s'", data)) + 0
    mib(b) = b >= 1073741824 ? sprintf("%.0f GiB", b / 1073741824) : sprintf("%.0f MiB", b / 1048576)
    unset logscale
    unset grid
    unset key
    set datafile separator "\t"
    set palette defined (0 "#f7fbff", 0.5 "#9ecae1", 1 "#4292c6")
    set cbrange [0:(cbmax > 0 ? cbmax : 1)]
    set xrange [-0.5:ngpu - 0.5]
    set yrange [ngpu - 0.5:-0.5]
    set xtics 1 scale 0 format "%.0f"
    set ytics 1 scale 0 format "%.0f"
    set xlabel "destination GPU"
    set ylabel "source GPU"
    set size ratio -1
    set style fill solid 1.0 border lc rgb "white"
    fs = ngpu <= 4 ? 11 : ngpu <= 8 ? 9 : 7
    V = "matrix_peer_off matrix_peer_on matrix_kernel_read matrix_combine"
    T = "'copy engine, peer access off' 'copy engine, peer access on' 'kernel on dst reads src in place' 'a + b on dst, b read from src'"
    do for [k = 1:4] {
        v = word(V, k)
        set origin (k - 1) * 0.235, 0.02
        set size 0.235, 0.47
        if (k == 4) { set colorbox user origin 0.95, 0.1 size 0.01, 0.3; set cblabel "GB/s" } else { unset colorbox }
        set title sprintf("%s\n(GB/s, %s)", word(T, k), mib(k == 4 ? (mbytes < 33554432 ? mbytes : 33554432) : mbytes))
        # the diagonal: a GPU's own memory, not a pair
        do for [g = 0:ngpu - 1] {
            set object 100 + g rectangle from g - 0.5, g - 0.5 to g + 0.5, g + 0.5 fc rgb "#e0e0e0" fs solid 1.0 noborder behind
        }
        cmd = "plot NaN notitle"
        if (ncell(v, "ok") > 0) {
            cmd = cmd . sprintf(", data using (CX('%s','ok')):(CY('%s','ok')):(0.5):(0.5):($7/1e9) with boxxyerror fc palette notitle", v, v) \
                      . sprintf(", data using (CX('%s','ok')):(CY('%s','ok')):(sprintf('%%.0f', $7/1e9)) with labels font ',%d' notitle", v, v, fs)
        }
        if (ncell(v, "no_peer_access") > 0) {
            cmd = cmd . sprintf(", data using (CX('%s','no_peer_access')):(CY('%s','no_peer_access')):(0.5):(0.5) with boxxyerror fc rgb '#bdbdbd' fs pattern 4 notitle", v, v) \
                      . sprintf(", data using (CX('%s','no_peer_access')):(CY('%s','no_peer_access')):('no P2P') with labels font ',%d' notitle", v, v, fs - 1)
        }
        if (ncell(v, "failed") > 0) {
            cmd = cmd . sprintf(", data using (CX('%s','failed')):(CY('%s','failed')):(0.5):(0.5) with boxxyerror fc rgb '#d62728' notitle", v, v) \
                      . sprintf(", data using (CX('%s','failed')):(CY('%s','failed')):('wrong') with labels tc rgb 'white' font ',%d' notitle", v, v, fs)
        }
        eval cmd
        if (exists("verbose")) {
            # each cell as gnuplot read it: method status src dst GB/s
            do for [st in "ok no_peer_access failed"] {
                if (ncell(v, st) > 0) {
                    set table $cells
                    plot data using (CY(v, st)):(CX(v, st)):(strcol(6) eq "0" ? 0 : real(strcol(7)) / 1e9) with table
                    unset table
                    do for [c = 1:|$cells|] { if (strstrt($cells[c], "nan") == 0) { print sprintf("cell %s %s %s", v, st, $cells[c]) } }
                    undefine $cells
                }
            }
        }
        unset object
    }
}
unset multiplot
