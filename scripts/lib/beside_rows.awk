# beside_rows.awk (with csv.awk): the lines a PyTorch counterpart
# (tests/torch/beside/KEY.py) printed that may join its experiment's CSV,
# written back as the suite's writer writes them. A line is kept when it is
# a row of 15 fields of experiment `key` of claim `claim`, of variant
# "pytorch" or "pytorch:...", not a verdict, finding or verification row
# (the verdict is the suite's, computed before), whose n is a count and whose
# param_value and figures are empty or numbers as the suite writes them (a
# malformed one would stop the report). The count of lines dropped goes to
# the file `dropped`; of the kept rows, those of status failed or oom to
# `failed` (each one line).
#   awk -v claim=C04 -v key=sync_vs_async_timing -v dropped=FILE -v failed=FILE \
#       -f csv.awk -f beside_rows.awk ROWS
function is_number(s) {
    return s == "" || s == "inf" || s == "-inf" || s ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/
}
function quote(s) {
    if (s !~ /[,"]/) return s
    gsub(/"/, "\"\"", s)
    return "\"" s "\""
}
{
    n = csv_split($0, f)
    ok = n == 15 && f[1] == claim && f[2] == key && f[3] ~ /^pytorch(:|$)/ &&
         f[6] != "verdict" && f[6] != "finding" && f[6] != "verification" && f[8] ~ /^[0-9]+$/
    for (i = 9; ok && i <= 13; i++) ok = is_number(f[i])
    if (ok) ok = is_number(f[5])
    if (!ok) { bad++; next }
    line = quote(f[1])
    for (i = 2; i <= 15; i++) line = line "," quote(f[i])
    print line
    if (f[14] == "failed" || f[14] == "oom") nfailed++
}
END {
    print bad + 0 > dropped
    print nfailed + 0 > failed
}
