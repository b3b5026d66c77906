# make whatif SNAPSHOT=a.pickle@8,b.pickle@16: peak reserved of the program
# against its batch (replays of the fitted trace with no card, default
# settings), the cards' rooms as horizontal lines, each card's largest batch
# marked where its line is.
#   gnuplot -e "curve='TSV'; cards='TSV2'; out='PNG'" plots/whatif_max_batch.gp
# curve columns: 1 batch 2 peak_reserved bytes. cards columns: 1 card GiB
# 2 room bytes 3 largest batch under the default setting (0: none).
set terminal pngcairo size 1000,560 font "sans,10"
set output out
set termoption noenhanced
set datafile separator "\t"
GiB = 1073741824.0
set title "Peak reserved against batch (default settings); a card fits the batches below its line" font ",12"
set xlabel "batch"
set ylabel "GiB"
set grid lc rgb "#dddddd"
set key top left font ",9"
set xrange [0:*]
set yrange [0:*]
top = real(system(sprintf("awk -F'\t' 'END { print $1 }' '%s'", curve)))
ncards = int(real(system(sprintf("wc -l < '%s'", cards))))
set for [i=1:ncards] arrow i from 0, real(system(sprintf("awk -F'\t' 'NR == %d { print $2 }' '%s'", i, cards))) / GiB \
    to top, real(system(sprintf("awk -F'\t' 'NR == %d { print $2 }' '%s'", i, cards))) / GiB nohead lc rgb "#888888" dt 2
plot curve using 1:($2 / GiB) with linespoints pt 7 ps 0.6 lw 2 lc rgb "#1f77b4" title "peak reserved (no card)", \
     cards using ($3 > 0 ? $3 : 1/0):($2 / GiB):(sprintf("%s GiB: %d", strcol(1), $3)) with labels left offset 0.6, 0.6 \
         point pt 9 ps 1.2 lc rgb "#d62728" font ",9" title "largest batch on the card (its room)"
