# C26 mmap dataset: left, VmRSS growth of a child process after touching a
# fraction of the dataset's records at random (mmap, mmap with MADV_RANDOM,
# pread of only those records; the file in the page cache after a read()
# through it, evicted, and as the generator's writes left it),
# against read() of the whole file (dashed); fraction 0 (mmap alone, "at
# start") is drawn at 0.01%. Right, the time to touch the records, and
# read()'s time to load the whole file (dashed).
#   gnuplot -e "data='TSV'; out='PNG'" plots/mmap_dataset.gp
# TSV columns: 1 variant 2 param 3 param_value 4 metric 5 unit 6 n 7 median
# 8 min 9 max 10 mean 11 stdev 12 status.
set terminal pngcairo size 1260,680 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"

MiB = 1048576.0
sel(v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\"' '%s'", v, m, data)
one(v, m) = system(sprintf("awk -F'\t' '$1==\"%s\" && $4==\"%s\" && $12==\"ok\" {print $7; exit}' '%s'", v, m, data))
x(f) = f > 0 ? 100 * f : 0.01   # percent; fraction 0 at 0.01%
read_rss = one("read/cached", "rss_growth")
read_t = one("read/cached", "ready_time")
read_te = one("read/evicted", "ready_time")
has_read = strlen(read_rss) > 0

set multiplot layout 1,2 title "C26: a dataset file read() whole vs memory-mapped (claim: mmap loads records on demand, cutting the memory at start)" font ",12"

set title "resident memory of the process (VmRSS growth)"
set logscale x 10
set xrange [0.005:200]
set xlabel "records touched at random (% of the file; 0.01% = mmap only, nothing touched)"
set ylabel "MiB"
set yrange [0:*]
set grid xtics ytics lc rgb "#dddddd"
set key outside bottom center horizontal maxrows 3 font ",9"
if (has_read) { set arrow 1 from graph 0, first (read_rss/MiB) to graph 1, first (read_rss/MiB) nohead lc rgb "#d62728" lw 2 dt 2
                set label 1 "read() of the whole file" at graph 0.02, first (read_rss/MiB) offset 0,0.7 font ",9" tc rgb "#d62728" }
plot sel("mmap/cached", "rss_growth") using (x($3)):($7/MiB) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "mmap, cached (read() through first)", \
     sel("mmap/evicted", "rss_growth") using (x($3)):($7/MiB) with linespoints lw 1.5 dt 2 pt 6 lc rgb "#1f77b4" title "mmap, file evicted", \
     sel("mmap/written", "rss_growth") using (x($3)):($7/MiB) with linespoints lw 1 dt 3 pt 2 lc rgb "#9467bd" title "mmap, cache as the writes left it (1 run)", \
     sel("mmap_rand/cached", "rss_growth") using (x($3)):($7/MiB) with linespoints lw 1.5 pt 5 lc rgb "#2ca02c" title "mmap + MADV_RANDOM, cached", \
     sel("pread/cached", "rss_growth") using (x($3)):($7/MiB) with linespoints lw 1.5 pt 9 lc rgb "#ff7f0e" title "pread of the records only", \
     sel("mmap/cached", "touched_bytes") using (x($3)):($7/MiB) with lines lw 1 dt 3 lc rgb "#555555" title "bytes of the records touched"
unset arrow 1
unset label 1

set title "time (monotonic clock, median)"
set logscale y 10
set yrange [*:*]
set ylabel "seconds"
set format y "%g"
if (strlen(read_t) > 0) { set arrow 2 from graph 0, first read_t to graph 1, first read_t nohead lc rgb "#d62728" lw 2 dt 2
                          set label 2 "read() of the whole file, cached" at graph 0.02, first read_t offset 0,0.7 font ",9" tc rgb "#d62728" }
if (strlen(read_te) > 0) { set arrow 3 from graph 0, first read_te to graph 1, first read_te nohead lc rgb "#d62728" lw 1 dt 3 }
plot sel("mmap/cached", "access_time") using (x($3)):($3 > 0 && $7 > 0 ? $7 : NaN) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "mmap: touching the records, cached", \
     sel("mmap/evicted", "access_time") using (x($3)):($3 > 0 && $7 > 0 ? $7 : NaN) with linespoints lw 1.5 dt 2 pt 6 lc rgb "#1f77b4" title "mmap: touching the records, evicted", \
     sel("pread/cached", "access_time") using (x($3)):($3 > 0 && $7 > 0 ? $7 : NaN) with linespoints lw 1.5 pt 9 lc rgb "#ff7f0e" title "pread, cached", \
     sel("pread/evicted", "access_time") using (x($3)):($3 > 0 && $7 > 0 ? $7 : NaN) with linespoints lw 1 dt 2 pt 8 lc rgb "#ff7f0e" title "pread, evicted"
unset multiplot
