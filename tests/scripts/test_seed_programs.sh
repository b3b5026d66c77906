#!/usr/bin/env bash
# The seeds' programs as written (issue 32 item 4) against what PyTorch
# printed running them verbatim (tests/fixtures/seed_programs/, written by
# tests/torch/seed_programs.py on a GPU): seed 000's C07 program (build/
# workload --program seed000-c07, the model of large_batch() then
# gradient_accumulation()) and its C01 program (build/c01_del_empty_cache's
# keep_all and free_each_empty_cache). Each function's returned peak and
# memory_allocated() after it must equal PyTorch's to the byte, the lines
# the program prints must be PyTorch's, character for character, and the
# C07 program's requests PyTorch's (c07.trace). The comparison is first
# shown to fail on a figure 512 B off.
#   tests/scripts/test_seed_programs.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
fix=$root/tests/fixtures/seed_programs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

# fixture_value FILE KEY: the value of KEY= in a key=value file.
fixture_value() { sed -n "s/^$2=//p" "$1"; }

# same_figure WHAT OURS THEIRS: one check, to the byte.
same_figure() {
    if [ -n "$2" ] && [ "$2" = "$3" ]; then pass "$1: $2 B, PyTorch's"; else failure "$1: $2 B, PyTorch $3 B"; fi
}

# mb BYTES: as the seed prints it, f"{x/1024**2:.2f} MB".
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1048576 }'; }

echo "PyTorch's figures: $(tr '\n' ' ' < "$fix/meta.txt")"
# self-check: a figure 512 B off fails
before=$failed
same_figure "self-check" 2689374208 2689374720 > /dev/null
check_eq "self-check: a figure 512 B off fails" "$((failed - before))" 1
failed=$before

# ---- C07: large_batch(), then gradient_accumulation(), in one process
wl=$build/workload
if "$wl" --program seed000-c07 --model-only --trace "$tmp/c07.trace" > "$tmp/c07.csv" 2> "$tmp/err"; then
    pass "workload --program seed000-c07 --model-only runs"
    row=2
    for fn in large_batch gradient_accumulation; do
        peak=$(awk -F, -v r="$row" 'NR == r { print $2 }' "$tmp/c07.csv")
        after=$(awk -F, -v r="$row" 'NR == r { print $3 }' "$tmp/c07.csv")
        same_figure "C07 $fn() returns (max_memory_allocated)" "$peak" "$(fixture_value "$fix/c07.txt" "$fn.returned")"
        same_figure "C07 memory_allocated() after $fn()" "$after" "$(fixture_value "$fix/c07.txt" "$fn.allocated_after")"
        row=$((row + 1))
    done
    check_eq "C07: two rows, both ok" "$(awk -F, 'NR > 1 && $10 == "ok"' "$tmp/c07.csv" | wc -l)" 2
    check_eq "C07: the program's prints are PyTorch's, character for character" \
        "$(printf '大批次内存: %s\n梯度累加内存: %s\n' \
            "$(mb "$(awk -F, 'NR == 2 { print $2 }' "$tmp/c07.csv")")" \
            "$(mb "$(awk -F, 'NR == 3 { print $2 }' "$tmp/c07.csv")")")" "$(cat "$fix/c07.out")"
    if d=$(bash "$here/test_mlp_fixtures.sh" --diff "$tmp/c07.trace" "$fix/c07.trace"); then
        pass "C07: the requests (set-up and both functions) are PyTorch's: $d"
    else
        failure "C07: the requests differ from PyTorch's" "$(printf '%s\n' "$d" | head -3)"
    fi
else
    failure "workload --program seed000-c07 --model-only failed" "$(head -1 "$tmp/err")"
fi
for bad in "--program seed000-c01" "--program" "--program seed000-c07 --arch transformer" \
           "--program seed000-c07 --steps 3" "--program seed000-c07 --seq 16"; do
    # shellcheck disable=SC2086
    "$wl" $bad --model-only > "$tmp/out" 2> "$tmp/err"; rc=$?
    check_eq "workload $bad: exit 2, one line, nothing on stdout" "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" "2:1:0"
done
"$wl" --help > "$tmp/help"
check "workload --help gives --program seed000-c07" grep -q -- '--program seed000-c07' "$tmp/help"

# The C07 experiment reports the program beside the seed's printed figures.
"$build/c07_grad_accumulation" --model-only > "$tmp/c07exp.csv" 2> /dev/null
for fn in large_batch gradient_accumulation; do
    exp_peak=$(awk -F, -v v="seed 000 program: $fn()" '$3 == v && $6 == "seed_program" { print $9 }' "$tmp/c07exp.csv")
    same_figure "C07 experiment: seed 000 program $fn()" "$exp_peak" "$(fixture_value "$fix/c07.txt" "$fn.returned")"
done

# ---- C01: unoptimized() keeps the 100 tensors; optimized() deletes each
# and empties the cache
"$build/c01_del_empty_cache" --model-only > "$tmp/c01.csv" 2> /dev/null
unopt=$(awk -F, '$3 == "keep_all" && $6 == "peak_allocated" { print $9 }' "$tmp/c01.csv")
opt=$(awk -F, '$3 == "free_each_empty_cache" && $6 == "peak_allocated" { print $9 }' "$tmp/c01.csv")
same_figure "C01 unoptimized() returns (max_memory_allocated)" "$unopt" "$(fixture_value "$fix/c01.txt" unoptimized.returned)"
same_figure "C01 optimized() returns (the largest memory_allocated)" "$opt" "$(fixture_value "$fix/c01.txt" optimized.returned)"
check_eq "C01: the program's prints are PyTorch's, character for character" \
    "$(printf '未优化内存: %s\n优化后内存: %s\n' "$(mb "$unopt")" "$(mb "$opt")")" "$(cat "$fix/c01.out")"
check_eq "the notebook (both programs in one process) printed the same" \
    "$(cat "$fix/c01.out" "$fix/c07.out")" "$(cat "$fix/notebook.out")"

summary
