# pytorch.gp: PyTorch's points beside the suite's, in the charts of the
# claims that scripts/run-all --pytorch measures again with PyTorch (its rows
# have variant pytorch:<the suite's variant> and the suite's param and
# metric). A chart that has sel(v, m) (the rows of variant v and metric m)
# loads it after setting data:
#   gp_dir(s, i) = i < 1 ? "./" : s[i:i] eq "/" ? s[1:i] : gp_dir(s, i - 1)
#   load gp_dir(ARG0, strlen(ARG0))."lib/pytorch.gp"
# and appends to a plot command, as a macro, clauses that draw PyTorch's
# series in the suite's colour with open diamonds and a thin dashed line
# (PT_STYLE, PT_POINT), and one key entry saying so:
#   P = pt_keyed(pt("pinned", "h2d_bandwidth_host_clock", "3:($7/1e9)", "#1f77b4"))
#   plot <the suite's series> @P
# (in a loop or an if block, where a macro is expanded once when the block
# is read, the command is built as a string and run with eval). Each clause
# is "" where the run has no such PyTorch row: a chart without PyTorch runs
# the command it ran before and is the same, byte for byte, and no series is
# empty (gnuplot counts even an empty iteration's function in its ranges).

# PyTorch's style (not a line style: a chart's "unset style" would drop it)
# and point type (open diamond; a series that must differ takes another)
PT_STYLE = "lw 1.2 dt (10, 6) ps 1.6"
PT_POINT = 12
PT_GREY = "#444444"
PT_KEY = "PyTorch (open diamonds, dashed)"
# 1 if the run has a PyTorch row of any figure (ok or noisy), else 0
has_pt = system(sprintf("awk -F'\t' '$1 ~ /^pytorch:/ && ($12==\"ok\" || $12==\"noisy\") { n = 1; exit } END { print n + 0 }' '%s'", data)) + 0
# 1 if PyTorch has a row of variant v (the suite's name) and metric m
pt_on(v, m) = has_pt ? system(sprintf("awk -F'\t' '$1==\"pytorch:%s\" && $4==\"%s\" && ($12==\"ok\" || $12==\"noisy\") { n = 1; exit } END { print n + 0 }' '%s'", v, m, data)) + 0 : 0
# 1 if PyTorch has a row of metric m, of any variant
pt_any(m) = has_pt ? system(sprintf("awk -F'\t' '$1 ~ /^pytorch:/ && $4==\"%s\" && ($12==\"ok\" || $12==\"noisy\") { n = 1; exit } END { print n + 0 }' '%s'", m, data)) + 0 : 0
# The clause drawing PyTorch's rows of v and m with columns u, in style
# PT_STYLE and then st (point type, colour, title: "pt 12 lc rgb '#1f77b4' notitle")
pt_with(v, m, u, st) = pt_on(v, m) ? sprintf(", sel('pytorch:%s', '%s') using %s with linespoints %s %s", v, m, u, PT_STYLE, st) : ""
# ... in colour c, without a key entry of its own
pt(v, m, u, c) = pt_with(v, m, u, sprintf("pt %d lc rgb '%s' notitle", PT_POINT, c))
# Clauses s, then the key entry where s draws anything (once per plot)
pt_keyed(s) = strlen(s) ? s . sprintf(", NaN with linespoints %s pt %d lc rgb '%s' title '%s'", PT_STYLE, PT_POINT, PT_GREY, PT_KEY) : ""
