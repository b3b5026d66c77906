#!/usr/bin/env bash
# The training workload against PyTorch's own figures for the same networks
# (tests/fixtures/mlp/, written on a GPU by tests/torch/mlp_reference.py).
#
#   tests/scripts/test_mlp_fixtures.sh BUILD_DIR          model-only (make test)
#   tests/scripts/test_mlp_fixtures.sh BUILD_DIR --gpu    also on this machine's GPU:
#                                                         figures and step time
#   tests/scripts/test_mlp_fixtures.sh --diff A.trace B.trace
#                                                         first divergence of two
#                                                         request sequences
#
# For each configuration in configs.txt, BUILD_DIR/workload --model-only runs
# the same flags (with --sms from meta.txt) and every step's peak_allocated
# and allocated_end must be within 1% of PyTorch's for fp32 and 5% for
# fp16/bf16 (the goal is 0: each difference is printed). Where PyTorch's
# trace is there, the two request sequences are compared (sizes rounded to
# 512 bytes, as the allocator sees them; runs of frees as sets) and must be
# equal (the first divergence is shown otherwise), and PyTorch's trace replayed through
# BUILD_DIR/replay must give PyTorch's peak for steps 1 and 2 (a check of the
# allocator model on this workload). With --gpu: the same figures from a
# real run, and the median step time after two warm-up steps must not exceed
# PyTorch's (the fixture's) for the same configuration.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

# A trace reduced to its operations: "alloc N ROUNDED<TAB>LINE", "free N<TAB>LINE",
# "reset_peak<TAB>LINE"; ids renumbered in request order. A run of frees with
# no request between them is sorted: its order cannot change any figure (the
# same blocks merge into the same free blocks), and PyTorch's own order there
# can follow a hash map (autocast's cache).
norm() {
    awk 'function flush(   i, j, t) {
             for (i = 2; i <= nf; i++) for (j = i; j > 1 && fr[j - 1] > fr[j]; j--) { t = fr[j]; fr[j] = fr[j - 1]; fr[j - 1] = t }
             for (i = 1; i <= nf; i++) printf "free %d\t%d\n", fr[i], fl
             nf = 0 }
         /^free /{ if (!nf) fl = NR; fr[++nf] = ($2 in id) ? id[$2] : -$2; next }
         /^alloc /{ flush(); n++; id[$2] = n; printf "alloc %d %d\t%d\n", n, int(($3 + 511) / 512) * 512, NR; next }
         /^reset_peak/{ flush(); printf "reset_peak\t%d\n", NR }
         END { flush() }' "$1"
}

# first_divergence A B: "identical (N operations)" or the first differing
# operation with three lines of each trace around it (comments included).
first_divergence() {
    local t; t=$(mktemp -d)
    norm "$1" > "$t/a"; norm "$2" > "$t/b"
    cut -f1 "$t/a" > "$t/ao"; cut -f1 "$t/b" > "$t/bo"
    if cmp -s "$t/ao" "$t/bo"; then
        echo "identical ($(wc -l < "$t/ao") operations)"
        rm -rf "$t"; return 0
    fi
    local k
    k=$(awk 'NR == FNR { a[FNR] = $0; na = FNR; next }
             a[FNR] != $0 { print FNR; found = 1; exit }
             END { if (!found) print (na < FNR ? na : FNR) + 1 }' "$t/ao" "$t/bo")
    echo "first divergence at operation $k of $(wc -l < "$t/ao") / $(wc -l < "$t/bo"):"
    for side in a b; do
        local file=$1; [ "$side" = b ] && file=$2
        local line; line=$(sed -n "${k}p" "$t/$side" | cut -f2)
        [ -n "$line" ] || line=$(wc -l < "$file")
        echo "  --- $file, around line $line"
        sed -n "$((line > 6 ? line - 6 : 1)),$((line + 3))p" "$file" | sed 's/^/    /'
    done
    rm -rf "$t"; return 1
}

if [ "${1:-}" = "--diff" ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --diff A.trace B.trace" >&2; exit 2; }
    first_divergence "$2" "$3"; exit $?
fi

build=${1:-build/san}
gpu=0; [ "${2:-}" = "--gpu" ] && gpu=1
fix=${MLP_FIXTURES:-$root/tests/fixtures/mlp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the binary's contract, with or without fixtures
wl=$build/workload
# Bad input stops at argument parsing: no LeakSanitizer exit scan there (it
# costs about 0.4 s of CPU per start of a cuBLAS-linked program).
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
shape="--layers 3 --in 64 --width 32 --out 8 --batch 16"
check "workload --help exits 0" "$wl" --help
for bad in "--layers 1 --in 4 --width 4 --out 4 --batch 4" "$shape --accum 3" "$shape --optimizer rmsprop" \
           "$shape --frobnicate" "$shape --steps" "$shape --steps 0" "--in 4 --width 4 --out 4 --batch 4"; do
    # shellcheck disable=SC2086
    err=$(CUDA_VISIBLE_DEVICES= ASAN_OPTIONS=$noleak "$wl" $bad --model-only 2>&1 >"$tmp/out"); rc=$?
    check_eq "workload $bad: exit 2" "$rc" 2
    check_eq "workload $bad: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
    check_eq "workload $bad: nothing on stdout" "$(wc -c < "$tmp/out")" 0
done
if [ "$gpu" = 0 ]; then
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES= "$wl" $shape > /dev/null 2>&1; rc=$?
    check_eq "workload without a GPU and without --model-only: exit 77" "$rc" 77
    CUDA_VISIBLE_DEVICES= "$wl" --verify > /dev/null 2>&1; rc=$?
    check_eq "workload --verify without a GPU: exit 77" "$rc" 77
fi
# shellcheck disable=SC2086
"$wl" $shape --optimizer adam --precision fp16 --accum 2 --checkpoint --steps 3 --model-only \
    --trace "$tmp/t.trace" > "$tmp/t.csv" 2>/dev/null; rc=$?
check_eq "workload --model-only: exit 0" "$rc" 0
check_eq "workload --model-only: the CSV header" "$(head -1 "$tmp/t.csv")" \
    "step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,loss_scale,skipped,status,peak_weights,peak_casts,peak_grads,peak_optimizer,peak_activations,peak_workspace,peak_other"
check_eq "workload --model-only: one row per step" "$(tail -n +2 "$tmp/t.csv" | grep -c ',ok,')" 3
check "workload --trace: build/replay accepts it" "$build/replay" "$tmp/t.trace"
# shellcheck disable=SC2086
"$wl" $shape --steps 2 --model-only --limit 16M > "$tmp/oom.csv" 2>/dev/null; rc=$?
check_eq "workload --limit too small: exit 0 with oom rows" "$rc,$(grep -c ',oom,' "$tmp/oom.csv")" "0,2"

if [ ! -f "$fix/configs.txt" ]; then
    echo "SKIP: no PyTorch figures in tests/fixtures/mlp (run tests/torch/mlp_reference.py on a GPU)"
    summary; exit $?
fi
sms=$(sed -n 's/^sm_count=//p' "$fix/meta.txt" 2>/dev/null)
sms=${sms:-132}
echo "PyTorch figures: $(sed -n 's/^torch_version=//p' "$fix/meta.txt" 2>/dev/null) on $(sed -n 's/^device_name=//p' "$fix/meta.txt" 2>/dev/null), $sms SMs"


# median of column c over steps > 2
median_time() { awk -F, -v c="$2" 'NR > 1 && $1 > 2 && $c != "" { print $c }' "$1" | sort -g |
                awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# One configuration's checks (PASS/FAIL/INFO lines); MC_TEST_JOBS run at a
# time, their output printed in order and counted after.
one_config() {
    local name=$1 flags=$2 theirs tol d ot tt r msg
    theirs=$fix/$name.csv
    [ -f "$theirs" ] || { failure "$name: $theirs missing"; return; }
    tol=0.01; case "$flags" in *fp16*|*bf16*) tol=0.05 ;; esac
    # shellcheck disable=SC2086
    if ! "$build/workload" $flags --model-only --sms "$sms" --trace "$tmp/$name.trace" \
            > "$tmp/$name.csv" 2> "$tmp/$name.err"; then
        failure "$name: workload --model-only failed" "$(head -2 "$tmp/$name.err")"
        return
    fi
    compare_steps "$name model-only peak_allocated" "$tmp/$name.csv" "$theirs" 2 "$tol"
    compare_steps "$name model-only allocated_end" "$tmp/$name.csv" "$theirs" 3 "$tol"
    echo "INFO: $name peak_reserved (placement-dependent): ours $(step_col "$tmp/$name.csv" 4 | tail -1 | cut -d' ' -f2), PyTorch $(step_col "$theirs" 4 | tail -1 | cut -d' ' -f2)"
    if [ -f "$fix/$name.trace" ]; then
        if d=$(first_divergence "$tmp/$name.trace" "$fix/$name.trace"); then
            pass "$name request sequence (set-up, 2 steps) equals PyTorch's: $d"
        else
            failure "$name request sequence differs from PyTorch's" "$(printf '%s\n' "$d" | sed '2,$s/^/      /')"
        fi
        if [ -x "$build/replay" ] && "$build/replay" "$fix/$name.trace" > "$tmp/$name.replay" 2>/dev/null; then
            # the peak at the end of each reset_peak segment = that step's peak
            awk -F, 'NR > 1 { if ($2 == "reset_peak") { if (s) print s, p; s++ } p = $8 } END { print s, p }' \
                "$tmp/$name.replay" | awk 'NF == 2 && $1 >= 1 && $1 <= 2' > "$tmp/$name.rp"
            { echo step,peak_allocated; tr ' ' , < "$tmp/$name.rp"; } > "$tmp/$name.rp.csv"
            compare_steps "$name PyTorch's trace replayed through the model: peak_allocated" \
                "$tmp/$name.rp.csv" <(head -3 "$theirs") 2 0
        else
            echo "INFO: $name: $build/replay could not replay PyTorch's trace"
        fi
    fi
    if [ "$gpu" = 1 ]; then
        # shellcheck disable=SC2086
        if "$build/workload" $flags > "$tmp/$name.gpu.csv" 2> "$tmp/$name.gpu.err"; then
            compare_steps "$name GPU peak_allocated" "$tmp/$name.gpu.csv" "$theirs" 2 "$tol"
            compare_steps "$name GPU allocated_end" "$tmp/$name.gpu.csv" "$theirs" 3 "$tol"
            ot=$(median_time "$tmp/$name.gpu.csv" 6); tt=$(median_time "$theirs" 6)
            if [ -n "$ot" ] && [ -n "$tt" ]; then
                r=$(awk -v a="$ot" -v b="$tt" 'BEGIN { printf "%.3f", a / b }')
                msg="$name step time: ours $(awk -v a="$ot" 'BEGIN { printf "%.3f", a * 1e3 }') ms, PyTorch $(awk -v a="$tt" 'BEGIN { printf "%.3f", a * 1e3 }') ms (ratio $r)"
                if awk -v r="$r" 'BEGIN { exit !(r <= 1.0) }'; then pass "$msg"; else failure "$msg" "limit 1.0x"; fi
            fi
        else
            failure "$name: workload on the GPU failed" "$(tail -2 "$tmp/$name.gpu.err")"
        fi
    fi
}

names=()
jobs=${MC_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ "$gpu" = 1 ] && jobs=1 # step times on the GPU: one at a time
while IFS=$'\t' read -r name flags; do
    case "$name" in ''|'#'*) continue ;; esac
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    one_config "$name" "$flags" < /dev/null > "$tmp/$name.log" 2>&1 &
done < "$fix/configs.txt"
wait
for name in "${names[@]}"; do
    cat "$tmp/$name.log"
    passed=$((passed + $(grep -c '^PASS: ' "$tmp/$name.log")))
    failed=$((failed + $(grep -c '^FAIL: ' "$tmp/$name.log")))
done
summary
