# make whatif: whether the run fits (replays without an out-of-memory) each
# card size under each allocator setting.
#   gnuplot -e "data='TSV'; settings='TSV2'; out='PNG'" plots/whatif_cards.gp
# data columns: 1 setting 2 card GiB 3 fits (yes|no). settings columns
# (scripts/whatif): 1 index 2 setting ... (the settings' order, top to bottom).
set terminal pngcairo size 1000,480 font "sans,10"
set output out
set termoption noenhanced
set datafile separator "\t"
set title "Fits (green) or runs out of memory (red) per card and allocator setting" font ",12"
# A setting's row: its index in the settings file.
row(s) = real(system(sprintf("awk -F'\t' '$2 == \"%s\" { print $1; exit }' '%s'", s, settings)))
nset = real(system(sprintf("wc -l < '%s'", settings)))
set yrange [nset - 0.5:-0.5]
set ytics font ",9"
set logscale x 2
set xrange [6:180]
set xtics ("8" 8, "12" 12, "16" 16, "24" 24, "32" 32, "40" 40, "48" 48, "80" 80, "96" 96, "141" 141) font ",9"
set xlabel "card (GiB, minus the CUDA context)"
set grid xtics lc rgb "#dddddd"
set lmargin 22
set key outside bottom center horizontal font ",9"
fits(c) = sprintf("< awk -F'\t' '$3 == \"%s\"' '%s'", c, data)
plot settings using (1):1:ytic(2) with points pt -1 notitle, \
     fits("yes") using 2:(row(strcol(1))) with points pt 7 ps 1.6 lc rgb "#2ca02c" title "fits", \
     fits("no") using 2:(row(strcol(1))) with points pt 2 ps 1.6 lw 2 lc rgb "#d62728" title "out of memory"
