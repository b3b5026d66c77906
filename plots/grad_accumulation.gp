# C07 gradient accumulation: peak allocated of one optimizer step against the
# number of accumulation micro-steps k (batch B in k micro-batches of B/k),
# one colour per batch: measured (solid), the claim peak_1/k (dashed), the
# part of the peak that does not shrink (dotted: weights, casts, grads,
# optimizer state, workspaces at the peak), and the floor (a step at batch 1).
#   gnuplot -e "data='TSV'; out='PNG'" plots/grad_accumulation.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 900,580 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# The batches, in the order the run wrote them.
VARS = system(sprintf("awk -F'\t' '$4==\"peak_allocated\" && $2==\"accum_steps\" && !s[$1]++ {printf \"%%s \", $1}' '%s'", data))
floor = system(sprintf("awk -F'\t' '$4==\"floor\" {print $7; exit}' '%s'", data))
kmax = system(sprintf("awk -F'\t' '$2==\"accum_steps\" && $3>m {m=$3} END {print m+0}' '%s'", data)) + 0
MiB = 1048576.0
COLS = "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e"

set title "C07: gradient accumulation, peak memory of batch B in k micro-steps of B/k (claim: it falls to 1/k)" font ",12"
set logscale x 2
set xrange [0.8:(kmax > 1 ? kmax : 2) * 1.25]
set xlabel "accumulation micro-steps k (micro-batch B/k)"
set logscale y 10
set ylabel "peak allocated, step >= 2 (MiB)"
set grid xtics ytics lc rgb "#dddddd"
set key bottom left font ",9" opaque box maxrows 9
if (floor ne "") {
    set arrow 1 from graph 0, first floor/MiB to graph 1, first floor/MiB nohead lc rgb "#000000" lw 1.5 dt 4
    set label 1 sprintf("floor: a step at batch 1, %.0f MiB", floor/MiB) at graph 0.02, first floor/MiB offset 0, -0.8 font ",9"
}
plot for [i=1:words(VARS)] sel(word(VARS, i), "peak_allocated") using 3:($7/MiB) with linespoints lw 2 pt 7 lc rgb word(COLS, i) title word(VARS, i).": measured", \
     for [i=1:words(VARS)] sel(word(VARS, i), "claimed_peak") using 3:($7/MiB) with lines lw 1.5 dt 2 lc rgb word(COLS, i) title word(VARS, i).": claim, peak_1 / k", \
     for [i=1:words(VARS)] sel(word(VARS, i), "peak_fixed") using 3:($7/MiB) with lines lw 1.5 dt 3 lc rgb word(COLS, i) title word(VARS, i).": fixed part at the peak"
