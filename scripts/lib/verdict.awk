# verdict.awk (with csv.awk): print the verdict word of an experiment's CSV.
FNR > 1 { csv_split($0, f); if (f[6] == "verdict") { print f[14]; exit } }
