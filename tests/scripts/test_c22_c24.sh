#!/usr/bin/env bash
# C22 (peer copy) and C24 (sharded training) beyond what test_experiments.sh
# checks for every experiment: their own options' bad values, C24's
# --model-only predictions (one row per wrapper, width and N; FSDP's peak
# falling with N; DDP's not moving; figures equal to build/sharded_model's),
# and both waiving without a GPU.
#   tests/scripts/test_c22_c24.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-build/san}
export CUDA_VISIBLE_DEVICES=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c22=$build/c22_peer_copy
c24=$build/c24_sharded_training

for bad in "--max-ranks 3" "--max-ranks 8192" "--optimizer lamb" "--gpus 1" "--gpus 17" \
           "--layers 1" "--width 70000" "--batch 0" "--max-ranks"; do
    # shellcheck disable=SC2086
    err=$("$c24" $bad --model-only 2>&1 >/dev/null); rc=$?
    check_eq "C24 $bad: exit 2" "$rc" 2
    check_eq "C24 $bad: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
done
for bad in "--max-bytes 1K" "--max-bytes 0" "--max-bytes 1Q"; do
    # shellcheck disable=SC2086
    "$c22" $bad >/dev/null 2>&1; rc=$?
    check_eq "C22 $bad: exit 2" "$rc" 2
done

"$c22" --quick > "$tmp/c22.csv" 2>/dev/null; rc=$?
check_eq "C22 without a GPU waives (77)" "$rc" 77
check "C22 waived row gives the reason" grep -q '^C22,peer_copy,,,,verdict,,0,,,,,,waived,no CUDA device' "$tmp/c22.csv"
"$c24" --quick > "$tmp/c24w.csv" 2>/dev/null; rc=$?
check_eq "C24 without a GPU waives (77)" "$rc" 77

"$c24" --model-only --quick --max-ranks 8 > "$tmp/c24.csv" 2>/dev/null; rc=$?
check_eq "C24 --model-only --quick --max-ranks 8 exits 0" "$rc" 0
# 2 widths x 3 wrappers x N in 1,2,4,8 x 2 metrics, plus one N=width row per width.
check_eq "C24 model rows: 2 widths x 3 wrappers x 4 N x 2 metrics + 2 floors" \
    "$(grep -c ',ranks,' "$tmp/c24.csv")" $((2 * 3 * 4 * 2 + 2))
check "C24 FSDP's predicted peak falls with N at each width, to N = width" \
    awk -F, '$3 ~ /^fsdp_w/ && $6 == "peak_allocated_model" { if ($3 == v && $9 + 0 >= p) bad = 1; v = $3; p = $9 + 0 }
             END { exit bad }' "$tmp/c24.csv"
check "C24 DDP's predicted peak is the same for every N" \
    awk -F, '$3 ~ /^ddp_w/ && $6 == "peak_allocated_model" { if ($3 == v && $9 != p) bad = 1; v = $3; p = $9 }
             END { exit bad }' "$tmp/c24.csv"
want=$("$build/sharded_model" --mode fsdp --world 4 --layers 8 --in 1024 --width 1024 --out 1024 \
        --batch 32 --optimizer adam --steps 3 | awk -F, 'NR > 1 && $2 > m { m = $2 } END { print m }')
got=$(awk -F, '$3 == "fsdp_w1024" && $5 == 4 && $6 == "peak_allocated_model" { print $9 }' "$tmp/c24.csv")
check_eq "C24's FSDP N=4 figure equals build/sharded_model's largest step peak" "$got" "$want"
check "C24 --model-only states a verdict from the model" \
    grep -Eq '^C24,sharded_training,,,,verdict,,0,,,,,,(holds|holds-partly|does-not-hold),"model: ' "$tmp/c24.csv"
check "C24 --model-only says per width where 10x is or is not reached" \
    grep -q 'Width 1024 .*model.*FSDP' "$tmp/c24.csv"
summary
