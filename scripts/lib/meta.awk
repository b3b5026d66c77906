# meta.awk (with csv.awk): print the value of key `want` in a run's meta.csv.
FNR > 1 { csv_split($0, f); if (f[1] == want) { print f[2]; exit } }
