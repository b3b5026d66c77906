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
        cp "$fixtures/$k.csv" "$tmp/plain/"
        with_pytorch "$fixtures/$k.csv" > "$tmp/with/$k.csv"
        words_only "$fixtures/$k.csv" > "$tmp/words/$k.csv"
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
    # The synthetic C04 of the fixture folder: its own rows, as committed
    cp -r "$beside" "$tmp/c04" && mkdir -p "$tmp/c04/logs"
    "$root/scripts/plot" "$tmp/c04" sync_vs_async_timing > /dev/null 2>&1
    check "the fixture's C04 with PyTorch beside is drawn without a message" \
        bash -c "head -c 4 '$tmp/c04/sync_vs_async_timing.png' | grep -q PNG && ! ls '$tmp/c04/logs' | grep -q ."
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi

summary
