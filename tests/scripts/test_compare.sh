#!/usr/bin/env bash
# results.json and the comparison of two runs, without a GPU: results_json
# writes valid JSON that gives back every row of every CSV; build/compare and
# scripts/compare label crafted pairs (same, higher, lower, ambiguous), find
# a run the same as itself, compare the committed H100 run with a model-only
# run, and refuse bad input (not a run, an interrupted run, a newer schema)
# with one line, exit 2 and nothing written.
#   tests/scripts/test_compare.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixtures=$root/tests/fixtures/results
reference=$root/results/reference-h100
cd "$root" || exit 2

# Compares two tidy CSVs row by row: text columns as strings, number
# columns (param_value, n, median..stdev) as numbers; prints what differs.
same_rows() { # CSV_A CSV_B
    awk -f scripts/lib/csv.awk -v other="$2" '
        { if ((getline line < other) <= 0) { print "row " FNR " missing"; bad = 1; exit }
          na = csv_split($0, a); nb = csv_split(line, b)
          if (na != nb) { print "row " FNR ": " na " vs " nb " fields"; bad = 1; exit }
          for (i = 1; i <= na; i++) {
              num = FNR > 1 && (i == 5 || (i >= 8 && i <= 13))
              if (num ? (a[i] == "" ? b[i] != "" : a[i] + 0 != b[i] + 0) : a[i] != b[i]) {
                  print "row " FNR " column " i ": " a[i] " vs " b[i]; bad = 1; exit } } }
        END { if (!bad && (getline line < other) > 0) { print "extra rows"; bad = 1 }; exit bad }' "$1"
}

# ------------------------------------------------------------ results.json
for src in "$reference" "$fixtures/labels-a" "$fixtures/model-only"; do
    name=$(basename "$src")
    run=$tmp/json-$name
    cp -r "$src" "$run"
    rm -f "$run/results.json"
    out=$("$build/results_json" "$run" 2>&1); rc=$?
    check_eq "results_json $name exits 0" "$rc" 0
    check "results_json $name writes results.json" test -s "$run/results.json"
    check_eq "results_json $name leaves no temporary file" "$(ls -A "$run" | grep -c tmp)" 0
    check "results_json $name: schema memclaims-results/1.0 first" \
        grep -q '^	"schema":	"memclaims-results/1.0",$' "$run/results.json"
    bad=""
    rows=0
    back=$tmp/back-$name
    mkdir -p "$back"
    "$build/results_json" --csv-dir "$back" "$run/results.json" 2>"$tmp/err" || bad=" (--csv-dir: $(cat "$tmp/err"))"
    for csv in "$run"/*.csv; do
        key=$(basename "$csv" .csv)
        [ "$key" = meta ] && continue
        [ -f "$back/$key.csv" ] || { bad="$bad $key (not in the JSON)"; continue; }
        diff=$(same_rows "$csv" "$back/$key.csv") || bad="$bad $key ($diff)"
        rows=$((rows + $(wc -l < "$csv") - 1))
    done
    check_eq "results.json of $name gives back every row of every CSV ($rows rows)" "$bad" ""
done
check "results.json keeps the verdict, rule and mode of a model-only run" \
    grep -q '"mode":	"model-only"' "$tmp/json-model-only/results.json"
check "results.json keeps units" grep -q '"unit":	"bytes"' "$tmp/json-labels-a/results.json"
# A JSON number that the round trip changed would show here; so would a
# broken file: the checker parses it with cJSON.
echo '{"schema": "memclaims-results/1.0", "meta": {}, "experiments": [' > "$tmp/broken.json"
out=$("$build/results_json" --csv del_empty_cache "$tmp/broken.json" 2>&1); rc=$?
check_eq "results_json --csv refuses broken JSON with exit 2" "$rc" 2
check_eq "... and one line" "$(printf '%s\n' "$out" | wc -l)" 1
mkdir -p "$tmp/notrun"
out=$("$build/results_json" "$tmp/notrun" 2>&1); rc=$?
check_eq "results_json on a folder that is not a run: exit 2" "$rc" 2
check_eq "... one line" "$(printf '%s\n' "$out" | wc -l)" 1
check_eq "... nothing written" "$(ls -A "$tmp/notrun" | wc -l)" 0
cp -r "$fixtures/interrupted" "$tmp/int"
"$build/results_json" "$tmp/int" >/dev/null 2>&1
check "results_json marks a run stopped half-way as interrupted" grep -q '"state":	"interrupted"' "$tmp/int/results.json"
cp -r "$fixtures/labels-a" "$tmp/int2"
"$build/results_json" --interrupted "$tmp/int2" >/dev/null 2>&1
check "results_json --interrupted marks the document interrupted" grep -q '"state":	"interrupted"' "$tmp/int2/results.json"

# ------------------------------------------------------------ labels, crafted pair
a=$fixtures/labels-a
b=$fixtures/labels-b
"$build/compare" --tsv "$tmp/labels.tsv" "$a" "$b" > "$tmp/labels.md" 2>"$tmp/err"; rc=$?
check_eq "compare of the crafted pair exits 0" "$rc" 0
label_of() { awk -F'\t' -v v="$1" '$4 == v { print $1 }' "$tmp/labels.tsv"; }
check_eq "same: exact figures equal" "$(label_of same_exact)" same
check_eq "same: moved within the spread" "$(label_of same_noise)" same
check_eq "same: both zero" "$(label_of zero)" same
check_eq "higher: beyond both spreads, ranges apart" "$(label_of higher)" higher
check_eq "lower: beyond both spreads, ranges apart" "$(label_of lower)" lower
check_eq "higher: exact figures that differ" "$(label_of exact_higher)" higher
check_eq "ambiguous: beyond the spreads but ranges overlap" "$(label_of ambiguous)" ambiguous
check_eq "a row only in A is counted as such" "$(label_of only_a)" only-a
check_eq "a row only in B is counted as such" "$(label_of only_b)" only-b
check "B/A is the ratio of the medians" grep -q "^higher	C90	label_cases	higher			bandwidth	B/s	100	150	1.5	" "$tmp/labels.tsv"
check "the verdict table shows both words and the change" grep -q '^| C90 | label_cases | holds | holds-partly | \*\*yes\*\* |$' "$tmp/labels.md"
check "an unchanged verdict says no" grep -q '^| C91 | unchanged | holds | holds | no |$' "$tmp/labels.md"
check "the header names both GPUs" grep -q '^| GPU | NVIDIA H100 80GB HBM3 | NVIDIA H200 |$' "$tmp/labels.md"
check "the header names both commits" grep -q '^| commit | 111111111111 | 222222222222 |$' "$tmp/labels.md"
check "per claim counts" grep -q '^\*\*C90 label_cases\*\*: 3 same, 2 higher, 1 lower, 1 ambiguous; 1 only in A, 1 only in B\.$' "$tmp/labels.md"
check "largest change first" bash -c "grep '^| label_cases ' '$tmp/labels.md' | head -1 | grep -q 'exact_higher'"
check "findings (words) are not figures" bash -c "! grep -q finding '$tmp/labels.tsv'"
"$build/compare" --max 1 "$a" "$b" > "$tmp/max1.md"
check "--max caps the figures listed per claim" grep -q '^3 more not the same: see compare.tsv\.$' "$tmp/max1.md"

# ------------------------------------------------------------ a run against itself
"$build/compare" --tsv "$tmp/self.tsv" "$reference" "$reference" > "$tmp/self.md"; rc=$?
check_eq "compare of the H100 run with itself exits 0" "$rc" 0
n=$(grep -vc '^#' "$tmp/self.tsv")
check "... matches its figures ($n)" test "$n" -gt 1000
check_eq "... labels every figure same" "$(grep -v '^#' "$tmp/self.tsv" | cut -f1 | sort -u)" same
check_eq "... changes no verdict" "$(grep -c '| \*\*yes\*\* |$' "$tmp/self.md")" 0
"$build/compare" --tsv "$tmp/self2.tsv" "$tmp/json-reference-h100" "$reference" > /dev/null
check_eq "the H100 run's results.json compares the same as its CSV files" \
    "$(grep -v '^#' "$tmp/self2.tsv" | cut -f1 | sort | uniq -c | tr -s ' ')" "$(grep -v '^#' "$tmp/self.tsv" | cut -f1 | sort | uniq -c | tr -s ' ')"

# ------------------------------------------------------------ scripts/compare
out=$(scripts/compare --build "$build" --out "$tmp/cmp" "$reference" "$fixtures/model-only" 2>"$tmp/err"); rc=$?
check_eq "scripts/compare reference-h100 vs a model-only run exits 0" "$rc" 0
check_eq "... prints nothing on stderr" "$(cat "$tmp/err")" ""
check "... creates --out and writes COMPARE.md" test -s "$tmp/cmp/COMPARE.md"
check "... and compare.tsv" test -s "$tmp/cmp/compare.tsv"
check "... prints the markdown (titled by each run's own name)" grep -q '^# memclaims compare: .*-nvidia-h100-80gb-hbm3 (A) vs .*-no-gpu (B)$' <<<"$out"
check "... marks the model's verdicts" grep -q '^| C01 | del_empty_cache | holds | holds (model, no GPU) | no |$' "$tmp/cmp/COMPARE.md"
check "... names the waived one" grep -q '^| C03 | pinned_vs_pageable | holds-partly | waived | \*\*yes\*\* |$' "$tmp/cmp/COMPARE.md"
check "... says there was no GPU in B" grep -q '^| GPU | NVIDIA H100 80GB HBM3 | no GPU (' "$tmp/cmp/COMPARE.md"
check_eq "... leaves no temporary file" "$(ls -A "$tmp/cmp" | grep -c tmp)" 0
out=$(scripts/compare --build "$build" --out "$tmp/cmp2" "$a" "$b" 2>"$tmp/err"); rc=$?
if command -v gnuplot >/dev/null; then
    check "the crafted pair's chart compare.png is a PNG" bash -c "head -c 4 '$tmp/cmp2/compare.png' | grep -q PNG"
    check "COMPARE.md links the chart" grep -q '^!\[figures that changed\](compare.png)$' "$tmp/cmp2/COMPARE.md"
    check_eq "no gnuplot message on stderr" "$(cat "$tmp/err")" ""
else
    echo "SKIP: gnuplot not installed: compare.png not drawn"
fi
(cd "$tmp" && mkdir -p here && cd here && "$root/scripts/compare" --build "$root/$build" "$a" "$b" >/dev/null 2>&1)
check "without --out COMPARE.md lands in the current folder" test -s "$tmp/here/COMPARE.md"
scripts/compare --build "$build" --out "$tmp/cmp3" "$a" "$a" > /dev/null 2>&1
check "no chart when nothing changed, and COMPARE.md says so" grep -q '^No figure is higher or lower in B: no chart\.$' "$tmp/cmp3/COMPARE.md"
check "help states the rule" bash -c "scripts/compare --build '$build' --help | grep -q 'ranges do not overlap'"

# ------------------------------------------------------------ PyTorch's rows
# run-all --pytorch's rows (tests/fixtures/results/pytorch-beside/, SYNTHETIC)
# are compared like any other: in B one PyTorch time higher, one GPU idle
# share lower, and PyTorch's verdict sentence changed; from CSV files and
# from results.json alike.
pa=$tmp/pt-a; pb=$tmp/pt-b
cp -r "$fixtures/pytorch-beside" "$pa"; cp -r "$pa" "$pb"
awk -F, -v OFS=, '$3 == "pytorch:sgemm" && $5 == 8192 && $6 == "time_cuda_events" { $9 = 0.05; $10 = 0.049; $11 = 0.051 }
    $3 == "pytorch:sgemm" && $5 == 256 && $6 == "gpu_idle_share" { $9 = $10 = $11 = $12 = 0.2 }
    { sub(/launch-bound \(GPU idle 62%\)"$/, "GPU-bound (GPU idle 20%)\"") } { print }' \
    "$pa/sync_vs_async_timing.csv" > "$pb/sync_vs_async_timing.csv"
check_eq "the edit under test changed three rows" "$(diff "$pa/sync_vs_async_timing.csv" "$pb/sync_vs_async_timing.csv" | grep -c '^>')" 3
for form in csv json; do
    if [ $form = json ]; then "$build/results_json" "$pa" >/dev/null; "$build/results_json" "$pb" >/dev/null; fi
    "$build/compare" --tsv "$tmp/pt.tsv" "$pa" "$pb" > "$tmp/pt.md" 2>"$tmp/err"; rc=$?
    check_eq "compare of two runs with PyTorch's rows ($form) exits 0, nothing on stderr" "$rc:$(cat "$tmp/err")" "0:"
    check_eq "... every PyTorch figure is matched" \
        "$(grep -c '	pytorch:' "$tmp/pt.tsv")" "$(grep -c ',pytorch:' "$pa/sync_vs_async_timing.csv")"
    check "... a changed PyTorch figure is higher" \
        grep -q '^higher	C04	sync_vs_async_timing	pytorch:sgemm	n	8192	time_cuda_events	s	0.03315	0.05	' "$tmp/pt.tsv"
    check "... and listed under its claim" \
        grep -q '^| sync_vs_async_timing pytorch:sgemm time_cuda_events n=8192 | s | .* | higher |$' "$tmp/pt.md"
    check "... a changed GPU idle share is lower" \
        grep -q '^lower	C04	sync_vs_async_timing	pytorch:sgemm	n	256	gpu_idle_share	ratio	' "$tmp/pt.tsv"
    check_eq "... the rest the same" "$(grep -v '^#' "$tmp/pt.tsv" | cut -f1 | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
        " 1 higher; 1 lower; $(($(grep -vc '^#' "$tmp/pt.tsv") - 2)) same;"
    check "... PyTorch's changed verdict sentence is shown, both sides" \
        grep -q "^| C04 | sync_vs_async_timing | SYNTHETIC .*launch-bound (GPU idle 62%) | SYNTHETIC .*GPU-bound (GPU idle 20%) | \*\*yes\*\* | \*\*no\*\* (launch-bound, GPU-bound) |$" "$tmp/pt.md"
    check "... and why a regime can differ: the host CPU's pace" grep -q '^Where the regimes differ: a launch-bound step runs at the pace of the host.s CPU' "$tmp/pt.md"
    "$build/compare" "$pa" "$pa" > "$tmp/same.md"
    check "... a run against itself: the same regime" \
        grep -q "^| C04 | sync_vs_async_timing | .* | no | yes (launch-bound) |$" "$tmp/same.md"
    check "... and no such note" bash -c "! grep -q '^Where the regimes differ' '$tmp/same.md'"
    check "... under its own heading, after the verdicts (the suite's, unchanged)" \
        bash -c "grep -q '^| C04 | sync_vs_async_timing | holds | holds | no |$' '$tmp/pt.md' && sed -n '/^## Verdicts/,/^## Figures/p' '$tmp/pt.md' | grep -q '^## PyTorch beside$'"
done
cp -r "$pa" "$tmp/cpu-a"; cp -r "$pa" "$tmp/cpu-b"; rm -f "$tmp"/cpu-?/results.json
printf 'cpu_model,Intel(R) Xeon(R) Platinum 8480+\ncpu_count,32\n' >> "$tmp/cpu-a/meta.csv"
printf 'cpu_model,AMD EPYC 9654 | 96-Core\ncpu_count,64\n' >> "$tmp/cpu-b/meta.csv"
"$build/compare" "$tmp/cpu-a" "$tmp/cpu-b" > "$tmp/cpu.md"
check "the host CPUs side by side (meta.csv's cpu_model, cpu_count; a | in a name escaped)" \
    grep -qF '| host CPU | Intel(R) Xeon(R) Platinum 8480+ (32 CPUs) | AMD EPYC 9654 \| 96-Core (64 CPUs) |' "$tmp/cpu.md"
check "... 'not recorded' for a run from before they were" grep -qF '| host CPU | not recorded | not recorded |' "$tmp/same.md"
"$build/compare" --tsv "$tmp/pt.tsv" "$fixtures/labels-a" "$fixtures/labels-b" > "$tmp/pt.md"
check "without PyTorch's sentences, no such section" bash -c "! grep -q 'PyTorch beside' '$tmp/pt.md'"
cp -r "$pa" "$tmp/pt-plain"; rm -f "$tmp/pt-plain/results.json"
grep -v ',pytorch[,:]' "$pa/sync_vs_async_timing.csv" > "$tmp/pt-plain/sync_vs_async_timing.csv"
"$build/compare" --tsv "$tmp/pt.tsv" "$tmp/pt-plain" "$pa" > "$tmp/pt.md"
check_eq "a run without PyTorch against one with: its figures only in B" \
    "$(grep -c '^only-b	.*	pytorch:' "$tmp/pt.tsv")" "$(grep -c ',pytorch:' "$pa/sync_vs_async_timing.csv")"
check "... its sentence only in B" grep -q '^| C04 | sync_vs_async_timing | - | SYNTHETIC .* | only in B | - |$' "$tmp/pt.md"

# ------------------------------------------------------------ bad input
cp -r "$fixtures/labels-a" "$tmp/newer-minor"
"$build/results_json" "$tmp/newer-minor" >/dev/null
sed -i 's|"memclaims-results/1.0"|"memclaims-results/1.7"|' "$tmp/newer-minor/results.json"
mkdir -p "$tmp/empty"
for case in "not a run:$tmp/empty" "a plain folder of CSVs:$fixtures" "a run interrupted half-way:$fixtures/interrupted" \
            "an interrupted results.json:$tmp/int2" "a results.json of schema 2.0:$fixtures/newer-schema" \
            "a results.json of a newer minor, 1.7:$tmp/newer-minor" "a missing folder:$tmp/no-such-run"; do
    what=${case%%:*}; dir=${case#*:}
    for order in AB BA; do
        if [ $order = AB ]; then x=$dir; y=$a; else x=$a; y=$dir; fi
        o=$tmp/bad-out
        rm -rf "$o"
        err=$(scripts/compare --build "$build" --out "$o" "$x" "$y" 2>&1 >/dev/null); rc=$?
        check_eq "compare refuses $what (as $([ $order = AB ] && echo A || echo B)): exit 2" "$rc" 2
        check_eq "... one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
        check "... nothing written" test ! -e "$o"
    done
done
err=$(scripts/compare --build "$build" "$fixtures/newer-schema" "$a" 2>&1 >/dev/null)
check "a newer schema is named as such" grep -q 'schema memclaims-results/2.0 is newer than this memclaims reads' <<<"$err"
err=$(scripts/compare --build "$build" "$fixtures/interrupted" "$a" 2>&1 >/dev/null)
check "an interrupted run is named as such" grep -q 'interrupted half-way' <<<"$err"
err=$(scripts/compare --build "$build" "$a" 2>&1 >/dev/null); rc=$?
check_eq "compare with one run: exit 2" "$rc" 2
err=$(scripts/compare --build "$build" --bogus "$a" "$b" 2>&1 >/dev/null); rc=$?
check_eq "compare with an unknown option: exit 2" "$rc" 2
summary
