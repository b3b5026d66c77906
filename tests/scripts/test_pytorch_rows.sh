#!/usr/bin/env bash
# run-all --pytorch's rows in the charts and in REPORT.md, without a GPU and
# without torch: tests/fixtures/results/pytorch-beside/ (SYNTHETIC PyTorch
# rows of every kind beside the fixture C04) and the fixture CSVs with
# PyTorch rows made up here. The charts need gnuplot; without it their
# checks are skipped (GNUPLOT=/nonexistent hides it).
#   tests/scripts/test_pytorch_rows.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixtures=$root/tests/fixtures/results
beside=$fixtures/pytorch-beside
c24=$root/tests/fixtures/beside_c24/sharded_training.csv  # measured on two H100s, PyTorch beside
csvlib=$(cat "$root/scripts/lib/csv.awk")

# ------------------------------------------------------------ to_tsv.awk
tsv=$tmp/c04.tsv
awk -f "$root/scripts/lib/csv.awk" -f "$root/scripts/lib/to_tsv.awk" "$beside/sync_vs_async_timing.csv" > "$tsv"
want=$(awk "$csvlib"'FNR > 1 { csv_split($0, f); if (f[3] ~ /^pytorch:/ && f[6] != "gpu_idle_share") n++ } END { print n + 0 }' \
    "$beside/sync_vs_async_timing.csv")
check_eq "to_tsv keeps PyTorch's figures (variant pytorch:<the suite's>), $want rows" \
    "$(grep -c '^pytorch:' "$tsv")" "$want"
check "... that is, some" test "$want" -gt 0
check_eq "... and drops its sentences (pytorch_beside) and GPU idle shares" \
    "$(grep -c 'pytorch_beside\|gpu_idle_share\|^pytorch	' "$tsv")" 0
check_eq "... and the suite's rows are as before" "$(grep -vc '^pytorch:' "$tsv")" \
    "$(awk -f "$root/scripts/lib/csv.awk" -f "$root/scripts/lib/to_tsv.awk" "$fixtures/sync_vs_async_timing.csv" | wc -l)"

# ------------------------------------------------------------ charts
# with_pytorch CSV: CSV and, after it, each measured row of the suite again
# as PyTorch's (variant pytorch:<v>, figures 1.25x), a GPU idle share and
# the two kinds of sentence.
with_pytorch() {
    awk "$csvlib"'{ print } FNR > 1 { n = csv_split($0, f)
        if (f[3] == "" || f[6] ~ /^(verdict|finding|verification)$/ || f[8] + 0 == 0) next
        line = f[1] "," f[2] ",\"pytorch:" f[3] "\"," f[4] "," f[5] "," f[6] "," f[7] "," f[8]
        for (i = 9; i <= 13; i++) line = line "," (f[i] == "" ? "" : sprintf("%.10g", 1.25 * f[i]))
        rows[++m] = line "," f[14] ",made up by the test"; claim = f[1]; key = f[2] }
        END { for (i = 1; i <= m; i++) print rows[i]
              print claim "," key ",pytorch:x,,,gpu_idle_share,ratio,1,0.5,0.5,0.5,0.5,0,ok,made up"
              print claim "," key ",pytorch,,,pytorch_beside,,0,,,,,,ok,made up"
              print claim "," key ",pytorch,verdict,,pytorch_beside,,0,,,,,,ok,made up" }' "$1"
}
# words_only CSV: the same, less PyTorch's figures (only what no chart draws)
words_only() { with_pytorch "$1" | grep -v ',made up by the test$'; }

if command -v "${GNUPLOT:-gnuplot}" >/dev/null 2>&1; then
    keys=$(grep -l 'lib/pytorch\.gp' "$root"/plots/*.gp | xargs -n1 basename | sed 's/\.gp$//' | tr '\n' ' ')
    check "charts that draw PyTorch beside the suite: $keys" test -n "$keys"
    mkdir -p "$tmp/plain/logs" "$tmp/with/logs" "$tmp/words/logs"
    for k in $keys; do
        src=$fixtures/$k.csv
        # C24's chart draws measured rows only: the fixture run's are the model's (no GPU)
        if [ "$k" = sharded_training ]; then src=$tmp/c24-suite.csv; grep -v ',pytorch[,:]' "$c24" > "$src"; fi
        cp "$src" "$tmp/plain/$k.csv"
        with_pytorch "$src" > "$tmp/with/$k.csv"
        words_only "$src" > "$tmp/words/$k.csv"
    done
    for r in plain with words; do "$root/scripts/plot" "$tmp/$r" $keys > /dev/null 2> "$tmp/$r.err"; done
    for k in $keys; do
        # gnuplot's messages: those of the chart without PyTorch (a fixture
        # may leave a series empty), none more
        check_eq "$k: the chart with PyTorch's rows is drawn, with no gnuplot message of its own" \
            "$(head -c 4 "$tmp/with/$k.png" | grep -c PNG) $(cat "$tmp/with/logs/plot-$k.log" 2>/dev/null)" \
            "1 $(cat "$tmp/plain/logs/plot-$k.log" 2>/dev/null)"
        check "... and draws them (it differs from the chart without)" bash -c "! cmp -s '$tmp/with/$k.png' '$tmp/plain/$k.png'"
        check "... PyTorch's sentences and GPU idle shares alone change nothing, byte for byte" \
            cmp "$tmp/words/$k.png" "$tmp/plain/$k.png"
    done
    check_eq "scripts/plot says nothing on stderr" "$(cat "$tmp/plain.err" "$tmp/with.err" "$tmp/words.err")" ""
    # C24 on two H100s, PyTorch's rows as measured there
    mkdir -p "$tmp/c24run/logs" && cp "$c24" "$tmp/c24run/"
    "$root/scripts/plot" "$tmp/c24run" sharded_training > /dev/null 2>&1
    check "C24 on two H100s with PyTorch's measured rows is drawn without a message, and differs from the suite's alone" \
        bash -c "head -c 4 '$tmp/c24run/sharded_training.png' | grep -q PNG && ! ls '$tmp/c24run/logs' | grep -q . && ! cmp -s '$tmp/c24run/sharded_training.png' '$tmp/plain/sharded_training.png'"
    # The synthetic C04 of the fixture folder: its own rows, as committed
    cp -r "$beside" "$tmp/c04" && mkdir -p "$tmp/c04/logs"
    "$root/scripts/plot" "$tmp/c04" sync_vs_async_timing > /dev/null 2>&1
    check "the fixture's C04 with PyTorch beside is drawn without a message" \
        bash -c "head -c 4 '$tmp/c04/sync_vs_async_timing.png' | grep -q PNG && ! ls '$tmp/c04/logs' | grep -q ."
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi

# ------------------------------------------------------------ REPORT.md
# The fixture run as committed, the same without PyTorch's verdict sentence,
# and without any PyTorch row.
report_of() { # NAME FILTER: a copy of the fixture run, C04's CSV through FILTER, reported
    cp -r "$beside" "$tmp/report-$1"
    "$2" < "$beside/sync_vs_async_timing.csv" > "$tmp/report-$1/sync_vs_async_timing.csv"
    "$build/report" "$tmp/report-$1" > /dev/null 2> "$tmp/report-$1.err"
    check_eq "report of the fixture run ($1) exits 0, nothing on stderr" "$?:$(cat "$tmp/report-$1.err")" "0:"
}
no_verdict_row() { grep -v ',pytorch,verdict,,pytorch_beside,'; }
no_pytorch() { grep -v ',pytorch[,:]'; }
with_bar() { sed 's/launch-bound (GPU idle 62%)/launch-bound | GPU idle 62%/'; }
report_of with cat
report_of noverdict no_verdict_row
report_of plain no_pytorch
report_of bar with_bar
table() { grep '^| C' "$tmp/report-$1/REPORT.md"; }
check "the table gains a column \"PyTorch beside\" where a claim has PyTorch's verdict sentence" \
    grep -qx '| Claim | What the seeds say | What this GPU shows | Verdict | PyTorch beside |' "$tmp/report-with/REPORT.md"
check "... five columns under it" grep -qx '|---|---|---|---|---|' "$tmp/report-with/REPORT.md"
check "... C04's cell is the sentence, beside the suite's verdict" \
    grep -q "^| C04 | .* | \*\*holds\*\* | SYNTHETIC suite 4 of 4 workloads show it, PyTorch 4 of 4; at n=256 PyTorch's launch is 4x the suite's: launch-bound (GPU idle 62%) |\$" "$tmp/report-with/REPORT.md"
check "... C18's, without PyTorch, is empty" grep -q '^| C18 | .* | \*\*does-not-hold\*\* |  |$' "$tmp/report-with/REPORT.md"
check_eq "... the first four columns are those of the run without PyTorch: the verdicts are the suite's" \
    "$(table with | sed 's/ [^|]* |$//')" "$(table plain)"
check "... a '|' in the sentence is escaped" grep -q '^| C04 | .* launch-bound \\| GPU idle 62% |$' "$tmp/report-bar/REPORT.md"
check "... and the line under the table says what the column is" \
    grep -q '^PyTorch measured the same points of C04 .* The column "PyTorch beside" sets PyTorch.s key figure beside the suite.s verdict' "$tmp/report-with/REPORT.md"
check_eq "without a verdict sentence, the table is that of the run without PyTorch" "$(table noverdict)" "$(table plain)"
check "... and the line under the table is as before" bash -c "grep '^PyTorch measured' '$tmp/report-noverdict/REPORT.md' | grep -qv 'The column'"
check_eq "the claim's own lines give every PyTorch sentence, the verdict's too, as before" \
    "$(grep -c '^- PyTorch beside: ' "$tmp/report-with/REPORT.md") $(grep -c '^- PyTorch beside: ' "$tmp/report-noverdict/REPORT.md")" "2 1"

summary
