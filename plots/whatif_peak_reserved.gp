# make whatif: peak allocated and peak reserved of the run under each
# allocator setting, with no card (the run's own need), and above each bar
# the smallest card that fits under that setting.
#   gnuplot -e "data='TSV'; out='PNG'" plots/whatif_peak_reserved.gp
# TSV columns (scripts/whatif): 1 index 2 setting 3 peak_allocated bytes
# 4 peak_reserved bytes 5 smallest card in GiB, or "none".
set terminal pngcairo size 1000,520 font "sans,10"
set output out
set termoption noenhanced
set datafile separator "\t"
GiB = 1073741824.0
set title "Peak memory per allocator setting (replayed through the allocator model)" font ",12"
set style fill solid 0.85 border -1
set boxwidth 0.38
set ylabel "GiB"
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.15, 0
set grid ytics lc rgb "#dddddd"
set xtics rotate by -25 font ",9" nomirror
set bmargin 6
set key top right opaque box font ",9"
plot data using ($1 - 0.2):($3/GiB) with boxes lc rgb "#1f77b4" title "peak allocated", \
     data using ($1 + 0.2):($4/GiB):xtic(2) with boxes lc rgb "#ff7f0e" title "peak reserved", \
     data using ($1 + 0.2):($4/GiB):(strcol(5) eq "none" ? "fits no card" : "fits ".strcol(5)." GiB") \
          with labels offset 0,0.8 font ",9" notitle
