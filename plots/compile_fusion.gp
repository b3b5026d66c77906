# C25 fused elementwise chains vs eager (the suite's Transformer), with
# PyTorch's own eager and torch.compile record beside: left, peak allocated
# per model; right, the median step time (GPU runs; PyTorch's from its
# record). One group of four bars per model point; where the run measured
# PyTorch beside the suite (run-all --pytorch), its eager and torch.compile
# figures as open diamonds on the record's bars, in the suite's eager and
# fused colours (plots/lib/pytorch.gp).
#   gnuplot -e "data='TSV'; out='PNG'" plots/compile_fusion.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1200,560 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

MiB = 1048576.0
# rows of metric m for mode (eager, fused, pytorch_eager, pytorch_compile),
# one per model point in file order, numbered 0, 1, ... in column 13; and
# the same of the rows PyTorch measured in this run (pytorch:<model>/<mode>)
sel_of(mode, m, pt) = sprintf("< awk -F'\t' 'BEGIN { OFS = \"\\t\" } { v = $1; pt = sub(/^pytorch:/, \"\", v); split(v, a, \"/\"); k = a[1] \" B=\" $3 } !pt && (a[2] == \"eager\" || a[2] == \"fused\") && !(k in id) { id[k] = n++ } $4==\"%s\" && $12==\"ok\" && a[2] == \"%s\" && pt == %d && (k in id) { print $0, id[k], k }' '%s'", m, mode, pt, data)
sel(mode, m) = sel_of(mode, m, 0)
# this script's folder without a shell: the checkout's path may hold any character
gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# PyTorch's eager and compiled rows of metric m, at the record's bars, scaled by f
pt_bars(m, f) = pt_any(m) ? sprintf(", sel_of('eager', '%s', 1) using ($13+0.1):(%g*$7) with points %s pt %d lc rgb '#d62728' title 'PyTorch eager, this run', sel_of('fused', '%s', 1) using ($13+0.3):(%g*$7) with points %s pt %d lc rgb '#1f77b4' title 'PyTorch torch.compile, this run'", m, f, PT_STYLE, PT_POINT, m, f, PT_STYLE, PT_POINT) : ""

set multiplot layout 1,2 title "C25: elementwise chains fused into single kernels vs eager (claim: torch.compile optimises execution and reduces temporary tensors)" font ",12"
set style fill solid 0.8 border -1
set boxwidth 0.18
set grid ytics lc rgb "#dddddd"
set key top left font ",9" opaque box
set xtics rotate by -15 font ",8"
set xrange [-0.5:2.5]

set title "peak allocated, steady step"
set ylabel "MiB"
set yrange [0:*]
P = pt_bars("peak_allocated", 1/MiB)
plot sel("eager", "peak_allocated") using ($13-0.3):($7/MiB):xtic(14) with boxes lc rgb "#d62728" title "suite eager", \
     sel("fused", "peak_allocated") using ($13-0.1):($7/MiB) with boxes lc rgb "#1f77b4" title "suite --fused", \
     sel("pytorch_eager", "peak_allocated") using ($13+0.1):($7/MiB) with boxes lc rgb "#ff9896" title "PyTorch eager (record)", \
     sel("pytorch_compile", "peak_allocated") using ($13+0.3):($7/MiB) with boxes lc rgb "#aec7e8" title "PyTorch torch.compile (record)" @P

set title "median step time (GPU; PyTorch's from its record)"
set ylabel "ms"
nt = int(system(sprintf("awk -F'\t' '$4==\"step_time\" && $12==\"ok\" && $1 ~ /\\/(eager|fused)$/ && $1 !~ /^pytorch:/' '%s' | wc -l", data)))
P = pt_bars("step_time", 1e3)
if (nt == 0) {
    unset key
    set label 2 "no step times in this run (--model-only)" at graph 0.5, graph 0.5 center font ",11"
    set yrange [0:1]
    plot 2 with lines lc rgb "#ffffff" notitle
} else {
plot sel("eager", "step_time") using ($13-0.3):(1e3*$7):xtic(14) with boxes lc rgb "#d62728" title "suite eager", \
     sel("fused", "step_time") using ($13-0.1):(1e3*$7) with boxes lc rgb "#1f77b4" title "suite --fused", \
     sel("pytorch_eager", "step_time") using ($13+0.1):(1e3*$7) with boxes lc rgb "#ff9896" title "PyTorch eager (record)", \
     sel("pytorch_compile", "step_time") using ($13+0.3):(1e3*$7) with boxes lc rgb "#aec7e8" title "PyTorch torch.compile (record)" @P
}
unset multiplot
