# C07 gradient accumulation: peak allocated of one optimizer step against the
# number of accumulation micro-steps k (batch B in k micro-batches of B/k).
# Left, the MLP: one colour per batch, measured (solid), the claim peak_1/k
# (dashed), the part of the peak that does not shrink (dotted: weights, casts,
# grads, optimizer state, workspaces at the peak), and the floor (a step at
# batch 1). Right, seed 000's nn.Transformer(d_model=256): one colour per
# sequence length (batch 100), the same three lines, and seed 000's own code
# (4 micro-steps of sequence 16 x batch 100: it splits the sequence) as a
# black star at k = 4. PyTorch's peaks beside them where the run has them
# (open diamonds, dashed, in the batch's or sequence's colour:
# plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/grad_accumulation.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1400,620 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# The variants of each model, in the order the run wrote them (no spaces in
# the MLP's; the Transformer's are read by index below; PyTorch's left out).
VARS = system(sprintf("awk -F'\t' '$4==\"peak_allocated\" && $2==\"accum_steps\" && $1 !~ /^(transformer|pytorch:)/ && !s[$1]++ {printf \"%%s \", $1}' '%s'", data))
TSEQ = system(sprintf("awk -F'\t' '$4==\"peak_allocated\" && $1 ~ /^transformer seq=/ && !s[$1]++ {sub(/^transformer seq=/, \"\", $1); sub(/ .*/, \"\", $1); printf \"%%s \", $1}' '%s'", data))
has_seed = system(sprintf("awk -F'\t' '$1 ~ /^transformer seed/ && $4==\"peak_allocated\" && $12==\"ok\" {n++} END {print n+0}' '%s'", data)) + 0
tvar(s) = "transformer seq=".s." B=100"
SEEDVAR = "transformer seed 000 code: seq=16 B=100 x4"
floor = system(sprintf("awk -F'\t' '$4==\"floor\" && $1 !~ /^pytorch:/ {print $7; exit}' '%s'", data))
kmax = system(sprintf("awk -F'\t' '$2==\"accum_steps\" && $1 !~ /^(transformer|pytorch:)/ && $3>m {m=$3} END {print m+0}' '%s'", data)) + 0
MiB = 1048576.0
COLS = "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e"

set multiplot layout 1,2 title "C07: gradient accumulation, peak memory of one step in k micro-steps (claim: it falls to 1/k)" font ",12"

set title "MLP (L=4, H=1024, Adam fp32): batch B in k micro-batches of B/k" font ",11"
set logscale x 2
set xrange [0.8:(kmax > 1 ? kmax : 2) * 1.25]
set xlabel "accumulation micro-steps k"
set logscale y 10
set ylabel "peak allocated, step >= 2 (MiB)"
set grid xtics ytics lc rgb "#dddddd"
set key bottom left font ",9" opaque box maxrows 9
if (floor ne "") {
    set arrow 1 from graph 0, first floor/MiB to graph 1, first floor/MiB nohead lc rgb "#000000" lw 1.5 dt 4
    set label 1 sprintf("floor: a step at batch 1, %.0f MiB", floor/MiB) at graph 0.02, first floor/MiB offset 0, -0.8 font ",9"
}
P = ""
do for [i=1:words(VARS)] { P = P . pt(word(VARS, i), "peak_allocated", "3:($7/MiB)", word(COLS, i)) }
P = pt_keyed(P)
plot for [i=1:words(VARS)] sel(word(VARS, i), "peak_allocated") using 3:($7/MiB) with linespoints lw 2 pt 7 lc rgb word(COLS, i) title word(VARS, i).": measured", \
     for [i=1:words(VARS)] sel(word(VARS, i), "claimed_peak") using 3:($7/MiB) with lines lw 1.5 dt 2 lc rgb word(COLS, i) title word(VARS, i).": claim, peak_1 / k", \
     for [i=1:words(VARS)] sel(word(VARS, i), "peak_fixed") using 3:($7/MiB) with lines lw 1.5 dt 3 lc rgb word(COLS, i) title word(VARS, i).": fixed part at the peak" @P

unset arrow 1
unset label 1
set title "seed 000's nn.Transformer(d_model=256), Adam fp32: batch 100 in k micro-steps" font ",11"
set xrange [0.8:5]
set xtics (1, 2, 4)
set key top right font ",9" opaque box
if (words(TSEQ) == 0) {
    set label 2 "no Transformer rows in this run (see its failed rows)" at graph 0.5, graph 0.5 center font ",10"
    unset logscale y
    set yrange [0:1]
    plot 2 notitle lc rgb "#ffffff"
} else {
    P = ""
    do for [i=1:words(TSEQ)] { P = P . pt(tvar(word(TSEQ, i)), "peak_allocated", "3:($7/MiB)", word(COLS, i)) }
    P = pt_keyed(P . pt(SEEDVAR, "peak_allocated", "3:($7/MiB)", "#000000"))
    seedplot = has_seed ? sprintf(", sel(SEEDVAR, 'peak_allocated') using 3:($7/MiB) with points pt 3 ps 2.5 lw 2 lc rgb '#000000' title 'seed 000 code: 4 x (16, 100, 256), splits the sequence'") : ""
    eval "plot for [i=1:words(TSEQ)] sel(tvar(word(TSEQ, i)), 'peak_allocated') using 3:($7/MiB) with linespoints lw 2 pt 7 lc rgb word(COLS, i) title 'sequence '.word(TSEQ, i).': measured', \
               for [i=1:words(TSEQ)] sel(tvar(word(TSEQ, i)), 'claimed_peak') using 3:($7/MiB) with lines lw 1.5 dt 2 lc rgb word(COLS, i) title 'sequence '.word(TSEQ, i).': claim, peak_1 / k', \
               for [i=1:words(TSEQ)] sel(tvar(word(TSEQ, i)), 'peak_fixed') using 3:($7/MiB) with lines lw 1.5 dt 3 lc rgb word(COLS, i) title 'sequence '.word(TSEQ, i).': fixed part at the peak'" . seedplot . P
}
unset multiplot
