#!/usr/bin/env bash
# The README's figures, counts and verdict table agree with the committed
# reference run and fixtures (scripts/readme --check), and the check reads
# those files: a changed figure in a copy of the run, or a hand-edited
# README, makes it fail.
#   tests/scripts/test_readme.sh [BUILD_DIR]   (no build needed)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check "README.md agrees with results/reference-h100 and tests/fixtures" "$root/scripts/readme" --check

# A hand-edited figure in the README is caught.
sed 's/pageable ones at \([0-9.]*\) (H2D)/pageable ones at 6.8 (H2D)/' "$root/README.md" > "$tmp/README.md"
check "the edit under test changed the copy" test -n "$(diff "$root/README.md" "$tmp/README.md")"
MEMCLAIMS_README=$tmp/README.md "$root/scripts/readme" --check >/dev/null 2>&1; rc=$?
check_eq "a hand-edited figure fails the check (exit 1)" "$rc" 1

# The figures come from the run's CSVs: a copy of the run whose 256 MiB
# pageable H2D rate is 12.0e9 B/s gives 12.0 GB/s in the block.
cp -r "$root/results/reference-h100" "$tmp/run"
awk -F, -v OFS=, '$3 == "pageable" && $5 == "268435456" && $6 == "h2d_bandwidth_host_clock" { $9 = "12.0e9" } { print }' \
    "$root/results/reference-h100/pinned_vs_pageable.csv" > "$tmp/run/pinned_vs_pageable.csv"
block=$(MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block figures)
check "the figures block reads the run's CSV" grep -q 'pageable ones at 12.0 (H2D)' <<< "$block"

# The verdict table is the run's own verdict rows.
sed 's/,verdict,,0,,,,,,holds,/,verdict,,0,,,,,,does-not-hold,/' "$root/results/reference-h100/del_empty_cache.csv" \
    > "$tmp/run/del_empty_cache.csv"
block=$(MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block verdicts)
check "the verdict table reads the run's verdict rows" grep -q '^| C01 .*| \*\*does-not-hold\*\* | holds |  |$' <<< "$block"
check "the verdict table has a column \"PyTorch beside\"" \
    grep -qx '| Claim | What the seeds say | Verdict on the H100 | On two H200s | PyTorch beside |' <<< "$block"
check "... the reference run's PyTorch sentence (C05's, as committed)" \
    grep -q "^| C05 | .* | Seed 000's point (Transformer, B=32): fp16 speeds the step .* in PyTorch" <<< "$block"
# The same run without PyTorch's rows (as run-all --no-pytorch writes it).
for f in "$tmp"/run/*.csv; do grep -v ',pytorch[,:]' "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
block=$(MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block verdicts)
check_eq "... empty where neither reference run has PyTorch rows (the two H200s' have none)" \
    "$(grep '^| C[0-9]' <<< "$block" | grep -vc '|  |$')" 0
# PyTorch's verdict sentence (run-all --pytorch's pytorch_beside row of param
# verdict, SYNTHETIC here) in a copy of each run: the H100's C04, the two
# H200s' C22 (waived on the H100) and C04 (the H100's is taken).
cp -r "$root/results/reference-h200x2" "$tmp/run2"
beside_row() { # CLAIM KEY NOTE
    printf '%s,%s,pytorch,verdict,,pytorch_beside,,0,,,,,,ok,"%s"\n' "$1" "$2" "$3"
}
beside_row C04 sync_vs_async_timing "SYNTHETIC suite 4 of 4, PyTorch 4 of 4 | launch-bound (GPU idle 62%)" >> "$tmp/run/sync_vs_async_timing.csv"
beside_row C04 sync_vs_async_timing "SYNTHETIC two H200s' C04" >> "$tmp/run2/sync_vs_async_timing.csv"
beside_row C22 peer_copy "SYNTHETIC PyTorch tensor.to 388 GB/s (suite 395)" >> "$tmp/run2/peer_copy.csv"
block=$(MEMCLAIMS_REFERENCE=$tmp/run MEMCLAIMS_REFERENCE2=$tmp/run2 "$root/scripts/readme" --block verdicts)
check "PyTorch beside: the H100 run's sentence, its '|' escaped" \
    grep -qx '| C04 | .* | \*\*holds\*\* | holds | SYNTHETIC suite 4 of 4, PyTorch 4 of 4 \\| launch-bound (GPU idle 62%) |' <<< "$block"
check "... where the H100 has none (C22 waived), the two H200s', so marked" \
    grep -qx '| C22 | .* | on two H200s: SYNTHETIC PyTorch tensor.to 388 GB/s (suite 395) |' <<< "$block"
check_eq "... the other claims' cells empty" "$(grep '^| C[0-9]' <<< "$block" | grep -vc '|  |$')" 2
# A missing figure is an error, not a silent blank.
grep -v 'pcie_theoretical_bandwidth' "$root/results/reference-h100/pinned_vs_pageable.csv" > "$tmp/run/pinned_vs_pageable.csv"
MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block figures >/dev/null 2>"$tmp/err"; rc=$?
check_eq "a figure missing from the run: exit 2" "$rc" 2
check_eq "a figure missing from the run: one line" "$(wc -l < "$tmp/err")" 1

# The fixture counts are counted, not typed.
block=$("$root/scripts/readme" --block fixtures)
n=$(ls "$root"/tests/fixtures/mlp/*.meta | wc -l)
check "the fixtures block counts the MLP fixtures ($n)" grep -q " $n configurations" <<< "$block"
# ------------------------------------------------------------ the speed table
# From a run folder of scripts/tfm-speed-run (tests/fixtures/
# readme_speed_synthetic: SYNTHETIC figures, its README says which), looked
# for as transformer_speed_*/ under MEMCLAIMS_SPEED_ROOT.
syn=$root/tests/fixtures/readme_speed_synthetic
mkdir -p "$tmp/speed"
block=$(MEMCLAIMS_SPEED_ROOT=$tmp/speed "$root/scripts/readme" --block transformer 2>&1); rc=$?
check_eq "no run: exit 2" "$rc" 2
check "no run: says so" grep -q 'no run of scripts/tfm-speed-run' <<< "$block"
cp -r "$syn" "$tmp/speed/transformer_speed_synth"
block=$(MEMCLAIMS_SPEED_ROOT=$tmp/speed "$root/scripts/readme" --block transformer); rc=$?
check_eq "one run: exit 0" "$rc" 0
check "one run: its table" grep -q '^| Configuration | d_model | layers | batch x seq | precision | TFLOP a step | suite (ms) | PyTorch eager (ms) | ratio | where the time goes |$' <<< "$block"
check "a run without half_attention in run.txt: says it predates the record" \
    grep -q '^That run does not record which kernels ran fp16/bf16 attention' <<< "$block"
printf 'half_attention=cuDNN 9.19.0\n' >> "$tmp/speed/transformer_speed_synth/run.txt"
block2=$(MEMCLAIMS_SPEED_ROOT=$tmp/speed "$root/scripts/readme" --block transformer)
check "a run with half_attention: names the kernels" grep -q '^fp16/bf16 attention in that run: cuDNN 9\.19\.0\.$' <<< "$block2"
sed -i '/^half_attention=/d' "$tmp/speed/transformer_speed_synth/run.txt"
rows=$(grep '^| [a-z]' <<< "$block" | grep -v '^| Configuration')
check_eq "every configuration of the run, smallest step first (configs.txt lists them out of order)" \
    "$(cut -d'|' -f2 <<< "$rows" | tr -d ' ' | tr '\n' ' ')" "tiny_oom small_fast mid_slow_oneprof mid_fast_noslower big_slow "
check_eq "as many rows as configs.txt has configurations" "$(wc -l <<< "$rows")" "$(grep -cv '^#' "$syn/configs.txt")"
check "a row's columns: d_model, layers, batch x seq, precision, TFLOP, ms, ratio, where" \
    grep -qx '| big_slow | 512 | 6 | 16 x 256 | fp16 | 0.503 | 30.00 | 20.00 | 1.50 | attention +4.00 ms |' <<< "$rows"
check "an encoder-decoder's layers N+M" grep -q '^| mid_slow_oneprof | 128 | 2+2 | 16 x 64 | fp32 |' <<< "$rows"
check "one profile CSV only: where the time goes blank" grep -qx '| mid_slow_oneprof | .* | 1.20 |  |' <<< "$rows"
check "no profile: blank" grep -qx '| small_fast | .* | 0.50 |  |' <<< "$rows"
check "both profiles, the suite faster in every kind" grep -qx '| mid_fast_noslower | .* | 0.50 | no kind slower |' <<< "$rows"
check "a run not ok: not measured, with its first run not ok" grep -q '^| tiny_oom | .* | - | - | not measured: suite oom | |$' <<< "$rows"
check "the line under the table: the GPU, the slower count and names" \
    grep -q '^the suite is slower than PyTorch eager in 2 of the 4 configurations measured: mid_slow_oneprof, big_slow. Not measured: tiny_oom' <<< "$block"
check "the line under the table names the GPU of gpu.txt" grep -q '^On the SYNTHETIC GPU (not a measurement) (ratio:' <<< "$block"
check "PyTorch's compile record stays under the table" grep -q "^- PyTorch's own \`torch.compile\`" <<< "$block"

# speed_refused WHAT: the block fails with exit 2 and one line.
speed_refused() {
    MEMCLAIMS_SPEED_ROOT=$tmp/speed "$root/scripts/readme" --block transformer > "$tmp/out" 2> "$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ]; then pass "$1: exit 2, one line ($(cat "$tmp/err"))"
    else failure "$1: exit 2, one line" "exit $rc: $(head -3 "$tmp/err")"; fi
}
s=$tmp/speed/transformer_speed_synth
cp "$s/big_slow/suite.csv" "$tmp/keep.csv"
awk -F, -v OFS=, 'NR == 4 { $6 = "abc" } { print }' "$tmp/keep.csv" > "$s/big_slow/suite.csv"
speed_refused "a malformed suite.csv"
cp "$tmp/keep.csv" "$s/big_slow/suite.csv"
cp "$s/big_slow/pytorch_profile.csv" "$tmp/keep.csv"
echo "tensorcore,1,0.1" >> "$s/big_slow/pytorch_profile.csv"
speed_refused "a profile CSV with an unknown kind"
sed -i '1s/.*/kind,ms/' "$s/big_slow/pytorch_profile.csv"
speed_refused "a profile CSV with a wrong header"
: > "$s/big_slow/pytorch_profile.csv"
speed_refused "an empty profile CSV"
cp "$tmp/keep.csv" "$s/big_slow/pytorch_profile.csv"
mv "$s/small_fast" "$tmp/small_fast"
speed_refused "a configuration without its folder"
mv "$tmp/small_fast" "$s/small_fast"
cp -r "$s" "$tmp/speed/transformer_speed_other"
speed_refused "two runs of the new layout"
rm -r "$tmp/speed/transformer_speed_other"
check "the copy restored reads again" env MEMCLAIMS_SPEED_ROOT="$tmp/speed" "$root/scripts/readme" --block transformer
# a run where the suite is slower nowhere: the line says so, names none
mkdir -p "$tmp/fast"
cp -r "$s" "$tmp/fast/transformer_speed_synth"
f=$tmp/fast/transformer_speed_synth
rm -r "$f/big_slow" "$f/mid_slow_oneprof" "$f/tiny_oom"
grep -E '^(#|small_fast|mid_fast_noslower)' "$s/configs.txt" > "$f/configs.txt"
block3=$(MEMCLAIMS_SPEED_ROOT=$tmp/fast "$root/scripts/readme" --block transformer 2>&1)
check "slower nowhere: the line under the table says at most PyTorch's in each" \
    grep -q "^the suite's step takes at most PyTorch eager's time in each of the 2 configurations measured\.$" <<< "$block3"
check "slower nowhere: no 'slower' count" bash -c '! grep -q "is slower than PyTorch eager in" <<< "$1"' _ "$block3"
# The longest experiments are those run one at a time: one that needed no
# GPU (mode host) ran beside them and made the run no longer.
cp -r "$root/results/reference-h100" "$tmp/rt"
awk -F'\t' -v OFS='\t' '$1 == "mmap_dataset" { $4 = "99.0" } $1 == "lazy_init" { $4 = "98.0" } { print }' \
    "$root/results/reference-h100/runs.tsv" > "$tmp/rt/runs.tsv"
block=$(MEMCLAIMS_REFERENCE=$tmp/rt "$root/scripts/readme" --block runtime)
check "the runtime block lists the longest of those run one at a time, from runs.tsv" \
    grep -q 'longest experiments, of those run one at a time: C12 98.0 s, ' <<< "$block"
check "... not the one that ran in the background (C26, mode host)" bash -c '! grep -q "C26" <<< "$1"' _ "$block"
# The H200's time is the second of two runs; the first (caches cold) is
# named where its logs/run-all-first.tsv is, and only there.
cp -r "$root/results/reference-h200" "$tmp/h200"
printf 'total_seconds\t177.7\n' > "$tmp/h200/logs/run-all-first.tsv"
block=$(MEMCLAIMS_OTHER=$tmp/h200 "$root/scripts/readme" --block runtime)
check "the runtime block names the H200's first, cold run from logs/run-all-first.tsv" \
    grep -q 's on the H200, a second run there: the first on that fresh machine, caches cold, took 177.7 s)' <<< "$block"
rm "$tmp/h200/logs/run-all-first.tsv"
block=$(MEMCLAIMS_OTHER=$tmp/h200 "$root/scripts/readme" --block runtime)
check "... and says nothing of a first run without it" bash -c '! grep -q "first on that fresh machine" <<< "$1"' _ "$block"
summary
