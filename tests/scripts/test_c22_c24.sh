#!/usr/bin/env bash
# C22 (peer copy) and C24 (sharded training) beyond what test_experiments.sh
# checks for every experiment: their own options' bad values, C22's matrix
# over every pair of GPUs on a 4-GPU fixture (tests/fixtures/peer_matrix/:
# every ordered pair once per method, the verdict naming the pair without
# peer access, the chart's heatmaps reading each cell where the CSV has it),
# C24's
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
for bad in "--max-bytes 1K" "--max-bytes 0" "--max-bytes 1Q" "--matrix-bytes 512K" "--matrix-bytes 1000000"; do
    # shellcheck disable=SC2086
    "$c22" $bad >/dev/null 2>&1; rc=$?
    check_eq "C22 $bad: exit 2" "$rc" 2
done

"$c22" --quick > "$tmp/c22.csv" 2>/dev/null; rc=$?
check_eq "C22 without a GPU waives (77)" "$rc" 77
check "C22 waived row gives the reason" grep -q '^C22,peer_copy,,,,verdict,,0,,,,,,waived,no CUDA device' "$tmp/c22.csv"
# ---- C22's matrix over every pair: a 4-GPU run (the sweep's rows from the
# reference H200 pair, the matrix and verdict as test_peer_matrix checks this
# code writes them: 1 <-> 3 without peer access)
fix=$here/../fixtures/peer_matrix/peer_copy.csv
# variant, param_value, metric, median, status: the fields the checks read
echo '{ csv_split($0, f); print f[3] "\t" f[5] "\t" f[6] "\t" f[9] "\t" f[14] }' > "$tmp/rows.awk"
awk -f "$here/../../scripts/lib/csv.awk" -f "$tmp/rows.awk" "$fix" > "$tmp/pm.tsv"
check_eq "C22 matrix: one gpu_count row, 4 GPUs" \
    "$(awk -F'\t' '$1 == "matrix" && $3 == "gpu_count" { print $4 }' "$tmp/pm.tsv")" 4
for v in matrix_peer_off matrix_peer_on matrix_kernel_read matrix_combine; do
    # every ordered pair i -> j (i != j) of GPUs 0..3 exactly once, and nothing else
    got=$(awk -F'\t' -v v="$v" '$1 == v && $3 ~ /^gpu[0-9]+_to_gpu[0-9]+_bandwidth$/ {
              split($3, p, /_to_gpu|_|gpu/); print p[2] "-" p[3] }' "$tmp/pm.tsv" | sort | tr '\n' ' ')
    check_eq "C22 $v: each of the 12 ordered pairs once" "$got" "0-1 0-2 0-3 1-0 1-2 1-3 2-0 2-1 2-3 3-0 3-1 3-2 "
done
check_eq "C22 matrix: 1 <-> 3 marked no_peer_access both ways for the three peer methods, nothing else" \
    "$(awk -F'\t' '$5 == "no_peer_access" { print $1, $3 }' "$tmp/pm.tsv" | sort | tr '\n' ';')" \
    "matrix_combine gpu1_to_gpu3_bandwidth;matrix_combine gpu3_to_gpu1_bandwidth;matrix_kernel_read gpu1_to_gpu3_bandwidth;matrix_kernel_read gpu3_to_gpu1_bandwidth;matrix_peer_on gpu1_to_gpu3_bandwidth;matrix_peer_on gpu3_to_gpu1_bandwidth;"
check_eq "C22 matrix: every measured a + b checked on the host, no element wrong" \
    "$(awk -F'\t' '$1 == "matrix_combine" && $3 ~ /_mismatches$/ && $4 == 0 && $5 == "ok" { n++ } END { print n + 0 }' "$tmp/pm.tsv")" 10
check "C22 matrix: the verdict is holds-partly and names the pair without peer access" \
    grep -Eq '^C22,peer_copy,,,,verdict,,0,,,,,,holds-partly,".*over the 12 ordered pairs of 4 GPUs.*between 1<->3;' "$fix"

# The chart: the sweep's panels and four heatmaps, drawn without a warning
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 "x" $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'; }
mkdir -p "$tmp/run4/logs" "$tmp/run2/logs"
cp "$fix" "$tmp/run4/peer_copy.csv"
"$here/../../scripts/plot" "$tmp/run4" peer_copy > /dev/null 2>&1; rc=$?
check_eq "C22 4-GPU chart: scripts/plot exits 0" "$rc" 0
check_eq "C22 4-GPU chart: the sweep over the matrix (1600x1080)" "$(png_size "$tmp/run4/peer_copy.png")" 1600x1080
check "C22 4-GPU chart: gnuplot said nothing (no empty series, no bad cell)" test ! -e "$tmp/run4/logs/plot-peer_copy.log"
cp "$here/../fixtures/results/peer_copy.csv" "$tmp/run2/peer_copy.csv"
"$here/../../scripts/plot" "$tmp/run2" peer_copy > /dev/null 2>&1; rc=$?
check_eq "C22 chart of a run without the matrix: as before (1260x560)" "$rc $(png_size "$tmp/run2/peer_copy.png")" "0 1260x560"
# Each heatmap's cells as gnuplot read them (verbose=1: method status src
# dst GB/s) are the CSV's, cell for cell.
awk -f "$here/../../scripts/lib/csv.awk" -f "$here/../../scripts/lib/to_tsv.awk" "$fix" > "$tmp/data.tsv"
(cd "$tmp" && gnuplot -e "data='data.tsv'; out='v.png'; verbose=1" "$here/../../plots/peer_copy.gp") 2> "$tmp/cells.txt"
awk '$1 == "cell" { printf "%s %s %d %d %.0f\n", $2, $3, $4, $5, $6 }' "$tmp/cells.txt" | sort > "$tmp/cells.got"
awk -F'\t' '$1 ~ /^matrix_/ && $3 ~ /_bandwidth$/ { split($3, p, /_to_gpu|_|gpu/)
              printf "%s %s %d %d %.0f\n", $1, $5, p[2], p[3], ($5 == "no_peer_access" ? 0 : $4 / 1e9) }' "$tmp/pm.tsv" | sort > "$tmp/cells.want"
check_eq "C22 heatmaps: gnuplot reads 48 cells" "$(wc -l < "$tmp/cells.got")" 48
check "C22 heatmaps: each cell at its source and destination with the CSV's GB/s" cmp -s "$tmp/cells.got" "$tmp/cells.want"

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
