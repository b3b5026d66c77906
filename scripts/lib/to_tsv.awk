# to_tsv.awk (with csv.awk): an experiment's tidy CSV to the tab-separated
# table the gnuplot scripts read. Verdict, finding and verification rows are
# dropped, and so are run-all --pytorch's rows of words (variant pytorch:
# pytorch_beside, its sentences) and its gpu_idle_share rows (no chart draws
# them); PyTorch's figures (variant pytorch:<the suite's variant>) are kept,
# for the charts to draw beside the suite's (plots/lib/pytorch.gp). Columns
# variant..status are kept; the header becomes a # comment.
NR == 1 {
    print "# variant\tparam\tparam_value\tmetric\tunit\tn\tmedian\tmin\tmax\tmean\tstdev\tstatus"
    next
}
{
    n = csv_split($0, f)
    if (f[6] == "verdict" || f[6] == "finding" || f[6] == "verification") next
    if (f[3] == "pytorch" || f[6] == "pytorch_beside" || f[6] == "gpu_idle_share") next
    line = f[3]
    for (i = 4; i <= 14; i++) line = line "\t" f[i]
    print line
}
