#!/usr/bin/env bash
# C05 (mixed precision) and C20 (memory breakdown) beyond what
# test_experiments.sh checks for every experiment: the Transformer rows
# beside the MLP's in their --model-only --quick runs (seed 000's model and
# input, nn.Transformer(d_model=512, batch_first=True) on (32, 100, 512)):
# present and few, categories summing to the peak, fp16 below fp32, figures
# equal to build/workload's and to each other's, verdicts naming the models
# and ranges they rest on and the seed's own point, and both charts drawn.
#   tests/scripts/test_c05_c20.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
export CUDA_VISIBLE_DEVICES=""
no_model_checks
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c05=$build/c05_mixed_precision
c20=$build/c20_memory_breakdown
csvlib="$root/scripts/lib/csv.awk"
csvsrc=$(cat "$csvlib")   # csv_split(), for one-line awk programs (mawk has no -e)

# fig CSV VARIANT BATCH METRIC: the median of that row ("" when none).
fig() {
    awk -v v="$2" -v b="$3" -v m="$4" "$csvsrc"'
        FNR > 1 { csv_split($0, f); if (f[3] == v && f[5] == b && f[6] == m) print f[9] }' "$1"
}
verdict_note() {
    awk "$csvsrc"'FNR > 1 { csv_split($0, f); if (f[6] == "verdict") print f[15] }' "$1"
}
# cat_sum CSV VARIANT BATCH CATEGORIES...: the sum of peak_<category> rows.
cat_sum() {
    local csv=$1 v=$2 b=$3 sum=0 c x; shift 3
    for c in "$@"; do
        x=$(fig "$csv" "$v" "$b" "peak_$c")
        [ -n "$x" ] || { echo "missing peak_$c"; return; }
        sum=$((sum + x))
    done
    echo "$sum"
}

# ---------------------------------------------------------- C05
"$c05" --model-only --quick --out "$tmp" >/dev/null 2>"$tmp/c05.err"; rc=$?
check_eq "C05 --model-only --quick exits 0" "$rc" 0
csv=$tmp/mixed_precision.csv
# --quick keeps the Transformer to seed 000's point: one batch, three precisions.
check_eq "C05 --quick: the Transformer's peak rows are B=32 in fp32, fp16, bf16 alone" \
    "$(awk -F, '$3 ~ /^transformer_/ && $6 == "peak_allocated" { print $3 "@" $5 }' "$csv" | sort | tr '\n' ' ')" \
    "transformer_bf16@32 transformer_fp16@32 transformer_fp32@32 "
check "C05 keeps the MLP's rows beside the Transformer's" \
    grep -q '^C05,mixed_precision,activation_bound_fp16,batch,8192,memory_saving,' "$csv"
p32=$(fig "$csv" transformer_fp32 32 peak_allocated)
p16=$(fig "$csv" transformer_fp16 32 peak_allocated)
pbf=$(fig "$csv" transformer_bf16 32 peak_allocated)
check "C05 seed point: the fp16 peak ($p16 B) is below the fp32 peak ($p32 B)" test "${p16:-0}" -gt 0 -a "${p16:-0}" -lt "${p32:-0}"
check "C05 seed point: the bf16 peak ($pbf B) is below the fp32 peak" test "${pbf:-0}" -gt 0 -a "${pbf:-0}" -lt "${p32:-0}"
for p in fp32 fp16 bf16; do
    peak=$(fig "$csv" "transformer_$p" 32 peak_allocated)
    check_eq "C05 Transformer $p B=32: the seven categories sum to the peak" \
        "$(cat_sum "$csv" "transformer_$p" 32 weights casts grads optimizer activations workspace other)" "$peak"
done
check_eq "C05 Transformer fp32 has no casts at the peak" "$(fig "$csv" transformer_fp32 32 peak_casts)" 0
check "C05 Transformer fp16 holds autocast's casts at the peak" test "$(fig "$csv" transformer_fp16 32 peak_casts)" -gt 0
check "C05 Transformer fp16: activations at the peak are fewer than fp32's" \
    test "$(fig "$csv" transformer_fp16 32 peak_activations)" -lt "$(fig "$csv" transformer_fp32 32 peak_activations)"
# The same configuration through build/workload (the lead's CLI), built on the
# host as the seed builds it: its steady step's peak.
want=$("$build/workload" --arch transformer --d-model 512 --batch-first --seq 100 --batch 32 \
        --optimizer adam --precision fp16 --build host --steps 3 --model-only | awk -F, 'NR == 4 { print $2 }')
check_eq "C05 Transformer fp16 B=32 equals build/workload's step-3 peak" "$p16" "$want"
saving=$(fig "$csv" transformer_fp16 32 memory_saving)
check "C05 memory_saving at the seed point is 1 - fp16/fp32" \
    awk -v s="$saving" -v a="$p16" -v b="$p32" 'BEGIN { d = s - (1 - a / b); exit !(s != "" && d < 1e-9 && d > -1e-9) }'
pct=$(awk -v s="$saving" 'BEGIN { printf "%.1f", 100 * s }')
note=$(verdict_note "$csv")
check "C05 verdict names the models and ranges it rests on" \
    grep -q 'rests on MLP L=4, H=4096 at B=32\.\.2048; MLP L=8, H=1024 at B=512\.\.8192; nn\.Transformer(d_model=512, batch_first=True), seq 100 at B=32\.\.32:' <<<"$note"
check "C05 verdict counts the Transformer's points apart (2 at --quick)" grep -q '(MLP [0-9]* of 8, Transformer [0-9]* of 2)' <<<"$note"
check "C05 verdict gives seed 000's own point and its saving ($pct%)" \
    grep -q "seed 000's own point (Transformer, input (32, 100, 512)): .*fp16 (saving $pct%)" <<<"$note"
check "C05 finding says what seed 000's own code gives" \
    grep -q "Seed 000's own code: nn.Transformer(d_model=512, batch_first=True), Adam, input and target (32, 100, 512): .*($pct% less)" "$csv"
check "C05 --help names the Transformer and its batches" bash -c "'$c05' --help | grep -q 'nn.Transformer(d_model=512, batch_first=True)'"

# ---------------------------------------------------------- C20
"$c20" --model-only --quick --out "$tmp" >/dev/null 2>"$tmp/c20.err"; rc=$?
check_eq "C20 --model-only --quick exits 0" "$rc" 0
csv=$tmp/memory_breakdown.csv
check_eq "C20 --quick: the Transformer's batches are 8 and 32" \
    "$(awk -F, '$3 == "transformer" && $6 == "peak_allocated" { print $5 }' "$csv" | tr '\n' ' ')" "8 32 "
for b in 8 32; do
    peak=$(fig "$csv" transformer $b peak_allocated)
    check_eq "C20 Transformer B=$b: the six chart categories sum to the peak" \
        "$(cat_sum "$csv" transformer $b weights grads optimizer activations workspace other)" "$peak"
    check "C20 Transformer B=$b: activation_share = activations / peak" \
        awk -v s="$(fig "$csv" transformer $b activation_share)" -v a="$(fig "$csv" transformer $b peak_activations)" \
            -v p="$peak" 'BEGIN { d = s - a / p; exit !(s != "" && p > 0 && d < 1e-9 && d > -1e-9) }'
done
check "C20 Transformer: activations grow from B=8 to B=32" \
    test "$(fig "$csv" transformer 8 peak_activations)" -lt "$(fig "$csv" transformer 32 peak_activations)"
w8=$(fig "$csv" transformer 8 peak_weights)
check "C20 Transformer weights ($w8 B) are the same at both batches" \
    test "${w8:-0}" -gt 0 -a "$w8" = "$(fig "$csv" transformer 32 peak_weights)"
check "C20 Transformer B=32 peak equals C05's fp32 one (same model, fp32 Adam)" \
    test "${p32:-0}" -gt 0 -a "$p32" = "$(fig "$csv" transformer 32 peak_allocated)"
share=$(awk -v s="$(fig "$csv" transformer 32 activation_share)" 'BEGIN { printf "%.3f", s }')
note=$(verdict_note "$csv")
check "C20 verdict names the models and ranges it rests on" \
    grep -q 'rests on narrow (MLP L=4, H=1024, B=8\.\.16384): .*; transformer (nn\.Transformer(d_model=512, batch_first=True), seq 100, B=8\.\.32): share ' <<<"$note"
check "C20 verdict gives seed 000's own point (share $share)" \
    grep -q "seed 000's own model and input (Transformer, (32, 100, 512)): activations .* MiB, share $share" <<<"$note"
check "C20 verdict counts the Transformer's points (6 at --quick)" grep -q 'at [0-9]* of 6 points' <<<"$note"

# ---------------------------------------------------------- charts
if command -v gnuplot >/dev/null; then
    for key in mixed_precision memory_breakdown; do
        awk -f "$csvlib" -f "$root/scripts/lib/to_tsv.awk" "$tmp/$key.csv" > "$tmp/$key.tsv"
        gnuplot -e "data='$tmp/$key.tsv'; out='$tmp/$key.png'" "$root/plots/$key.gp" 2>"$tmp/$key.gp.err"
        check_eq "plots/$key.gp draws the model-only run with the Transformer without a message" "$(cat "$tmp/$key.gp.err")" ""
        check "plots/$key.gp writes a PNG" bash -c "head -c 4 '$tmp/$key.png' | grep -q PNG"
    done
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi
summary
