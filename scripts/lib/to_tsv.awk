# to_tsv.awk (with csv.awk): an experiment's tidy CSV to the tab-separated
# table the gnuplot scripts read. Verdict, finding and verification rows are
# dropped, and so are PyTorch's rows (variant pytorch or pytorch:..., added
# by run-all --pytorch): no chart draws them yet, and a chart that selects
# variants by pattern would take them for the suite's. Columns
# variant..status are kept; the header becomes a # comment.
NR == 1 {
    print "# variant\tparam\tparam_value\tmetric\tunit\tn\tmedian\tmin\tmax\tmean\tstdev\tstatus"
    next
}
{
    n = csv_split($0, f)
    if (f[6] == "verdict" || f[6] == "finding" || f[6] == "verification" || f[3] ~ /^pytorch(:|$)/) next
    line = f[3]
    for (i = 4; i <= 14; i++) line = line "\t" f[i]
    print line
}
