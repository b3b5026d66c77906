# verdict_note.awk (with csv.awk): print the note of an experiment's verdict
# row (the figures behind the verdict, or why it was waived).
FNR > 1 && index($0, ",verdict,") { csv_split($0, f); if (f[6] == "verdict") { print f[15]; exit } }
