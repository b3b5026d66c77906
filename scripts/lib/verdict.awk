# verdict.awk (with csv.awk): print the verdict word of an experiment's CSV.
# Only lines holding ",verdict," are split (a CSV can have thousands of rows).
FNR > 1 && index($0, ",verdict,") { csv_split($0, f); if (f[6] == "verdict") { print f[14]; exit } }
