#!/usr/bin/env bash
# Every experiment, without a GPU: --help and --list tell the truth, bad
# input gets one line and exit 2 before anything is written, a run waives
# with exit 77 and a `waived` row (one that needs no GPU, MC_EXP_NO_GPU,
# runs instead: exit 0, a verdict row, and nothing left in $TMPDIR), and
# --model-only runs where offered.
#   tests/scripts/test_experiments.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-build/san}
# Hide any GPU so the waiver path is what runs, also on a CUDA machine.
export CUDA_VISIBLE_DEVICES=""
no_model_checks
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --help, --list and bad input stop at argument parsing: there LeakSanitizer
# has nothing to find, and its exit scan of cuBLAS's 100 MB of data costs
# about 0.4 s of CPU per start. The runs that do work keep it.
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
header="claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note"

# The median of one row of a tidy CSV (variant, param_value, metric), "" if none.
csv_value() {
    awk -F, -v v="$2" -v x="$3" -v m="$4" '$3==v && $5==x && $6==m && $14=="ok" {print $9; exit}' "$1"
}

# C07 and C08 model-only: the Transformer beside the MLP, and what each
# verdict rests on (the figures are the allocator model's; see the findings).
two_models() {
    local name=$1 csv=$2
    case $name in
    c07_*)
        check "$name: Transformer rows at seed 000's shape, k = 1 and 4"             test -n "$(csv_value "$csv" "transformer seq=64 B=100" 1 peak_allocated)" -a                  -n "$(csv_value "$csv" "transformer seq=64 B=100" 4 peak_allocated)"
        check "$name: the Transformer's peak falls with k = 4"             awk -v r="$(csv_value "$csv" "transformer seq=64 B=100" 4 ratio_to_k1)" 'BEGIN {exit !(r > 0 && r < 0.99)}'
        check "$name: the finding says seed 000's (seq, batch) split"             grep -q 'batch_first=False.*splits the sequence, not the batch' "$csv"
        check "$name: the verdict names both models"             grep -Eq "verdict,.*Transformer \(seed 000's nn.Transformer\(d_model=256\).*MLP \(L=4" "$csv" ;;
    c08_*)
        check "$name: per-pair checkpointing of the MLP saves nothing (L=8)"             awk -v s="$(csv_value "$csv" checkpoint 8 memory_saving)" 'BEGIN {exit !(s != "" && s < 0.01)}'
        check "$name: two checkpoint_sequential segments save (L=8)"             awk -v s="$(csv_value "$csv" segments=2 8 memory_saving)" 'BEGIN {exit !(s > 0.05)}'
        check "$name: the Transformer checkpointed per layer saves most (seq 64)"             awk -v s="$(csv_value "$csv" "transformer checkpoint" 64 memory_saving)" 'BEGIN {exit !(s > 0.5)}'
        check "$name: the verdict names each model's variant"             grep -Eq 'verdict,.*MLP per pair.*MLP checkpoint_sequential S=2.*Transformer per layer' "$csv" ;;
    c25_*) # eager against --fused chains; PyTorch's committed torch.compile record beside
        local e f
        for m in seed_t512_bf_adam_fp16 enc_adamw_fp32; do
            e=$(csv_value "$csv" "$m/eager" "" peak_allocated); f=$(csv_value "$csv" "$m/fused" "" peak_allocated)
            e=${e:-$(awk -F, -v v="$m/eager" '$3==v && $6=="peak_allocated" {print $9; exit}' "$csv")}
            f=${f:-$(awk -F, -v v="$m/fused" '$3==v && $6=="peak_allocated" {print $9; exit}' "$csv")}
            check "$name: $m: the fused chains lower the peak ($f < $e B)" test "${f:-0}" -gt 0 -a "${f:-0}" -lt "${e:-0}"
            check "$name: $m: PyTorch's torch.compile peak read from tests/fixtures/compile" \
                grep -q "^C25,compile_fusion,$m/pytorch_compile,batch,[0-9]*,peak_allocated" "$csv"
        done
        # Each eager peak is PyTorch's recorded one, or differs by the recording
        # GPU's segment placement alone, which PyTorch's trace of that run
        # (NAME.eager.trace, set-up and two steps) shows (placement_only, lib.sh).
        local cf=$here/../fixtures/compile why flags
        for m in seed_t512_bf_adam_fp16 enc_adamw_fp32; do
            if grep -q "$m: the suite's eager peak [0-9]* B equals PyTorch's recorded eager peak" "$csv"; then
                pass "$name: $m: the suite's eager peak equals PyTorch's recorded one"
                check "$name: $m: an eager peak PyTorch's equals keeps no trace" test ! -f "$cf/$m.eager.trace"
            elif [ -f "$cf/$m.eager.trace" ]; then
                flags=$(awk -F'\t' -v n="$m" '$1 == n { sub(/ --steps [0-9]+$/, "", $2); print $2 }' "$cf/configs.txt")
                # shellcheck disable=SC2086
                "$build/workload" --model-only $flags --steps 2 > "$tmp/$m.ours.csv" 2>/dev/null
                if why=$(placement_only "$m" "$flags" "$cf/$m.eager.trace" "$cf/$m.eager.csv" "$tmp/$m.ours.csv"); then
                    pass "$name: $m: the suite's eager peak differs from PyTorch's recorded one by the driver's placement alone"
                    check "$name: $m: ... and the finding says so" \
                        grep -q "$m: the suite's eager peak [0-9]* B differs from PyTorch's recorded eager peak [0-9]* B (.*same requests" "$csv"
                else
                    failure "$name: $m: the suite's eager peak differs from PyTorch's recorded one" "$why"
                fi
            else
                failure "$name: $m: the suite's eager peak differs from PyTorch's recorded one, and no trace names the cause"
            fi
        done
        check "$name: a finding gives PyTorch's own torch.compile figures"             grep -q "PyTorch's own torch.compile (recorded in" "$csv"
        check "$name: without a GPU the verdict rests on memory alone"             grep -Eq 'verdict,.*holds-partly,.*time not measured \(model-only\)' "$csv" ;;
    c23_*)
        check "$name: Transformer keep and offload rows at seed 000's batch"             test -n "$(csv_value "$csv" transformer_keep 100 peak_allocated)" -a                  -n "$(csv_value "$csv" transformer_offload 100 peak_allocated)"
        check "$name: offloading the Transformer's saved activations lowers its peak below half"             awk -v r="$(csv_value "$csv" transformer_offload 100 peak_ratio)" 'BEGIN {exit !(r > 0 && r < 0.5)}'
        check "$name: the verdict names the Transformer and its range, and the MLP"             grep -Eq "verdict,.*nn.Transformer\(d_model=256\) fp32 Adam, seq 64, seed 000's B=100 only: B=100 -[0-9.]+%; MLP \(L=8" "$csv" ;;
    esac
}

# One experiment's checks; PASS/FAIL lines on stdout. Run MC_TEST_JOBS at a
# time (each start of a cuBLAS-linked program under ASan costs about a CPU
# second), their output printed in order and counted after.
test_one() {
    local exe=$1 name key id help rc has_model list fields bad out err want
    name=$(basename "$exe")
    key=${name#c[0-9][0-9]_}
    id=$(printf '%s' "$name" | cut -c1-3 | tr c C)

    help=$(ASAN_OPTIONS=$noleak "$exe" --help 2>&1); rc=$?
    check_eq "$name --help exits 0" "$rc" 0
    case "$help" in *"$id"*Verdict:*--quick*--model-only*) has_model=1 ;; *) has_model=0 ;; esac
    case "$help" in *"Needs no GPU"*) no_gpu=1 ;; *) no_gpu=0 ;; esac
    case "$help" in *"$id"*Verdict:*--quick*) pass "$name --help names the claim, the verdict rule and the options" ;;
                    *) failure "$name --help names the claim, the verdict rule and the options" ;; esac

    list=$(ASAN_OPTIONS=$noleak "$exe" --list)
    fields=$(printf '%s' "$list" | awk -F'\t' '{ print NF }')
    check_eq "$name --list prints 8 tab-separated fields" "$fields" 8
    check_eq "$name --list starts with claim and key" "$(printf '%s' "$list" | cut -f1,2)" "$id	$key"
    # The mode run-all goes by agrees with what --help tells a person.
    want=gpu
    [ "$has_model" = 1 ] && want=model-only
    [ "$no_gpu" = 1 ] && want=host
    check_eq "$name --list's mode agrees with --help" "$(printf '%s' "$list" | cut -f7)" "$want"
    check "$name --help names its mode" grep -q "this one: $want)" <<<"$help"
    # What the rule reads decides whether run-all runs it beside C26: one
    # that says memory has no time or rate among its rule's figures.
    reads=$(printf '%s' "$list" | cut -f8)
    case $reads in memory|time) pass "$name --list says what its rule reads ($reads)" ;;
                   *) failure "$name --list says what its rule reads" "'$reads'" ;; esac
    check "$name --help says what its rule reads" grep -q "this one: $reads)" <<<"$help"
    if [ "$reads" = memory ]; then
        check "$name: a rule that reads memory names no time or rate" \
            bash -c '! printf "%s" "$1" | cut -f6 | grep -Eiq "speed-up|slowdown|GB/s|faster|latency|step time|overlap"' _ "$list"
    fi

    # The parser itself is unit-tested (test_options); here each program is
    # shown to use it, and to stop before writing anything.
    for bad in "--frobnicate" "--repeats 0" "--warmup x" "--device"; do
        out=$tmp/$name.bad; rm -rf "$out"; mkdir -p "$out"
        # shellcheck disable=SC2086
        err=$(ASAN_OPTIONS=$noleak "$exe" $bad --out "$out" 2>&1 >/dev/null); rc=$?
        check_eq "$name $bad: exit 2" "$rc" 2
        check_eq "$name $bad: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
        check_eq "$name $bad: nothing written" "$(ls -A "$out" | wc -l)" 0
    done

    out=$tmp/$name; mkdir -p "$out" "$tmp/$name.tmpdir"
    TMPDIR=$tmp/$name.tmpdir "$exe" --quick --out "$out" >"$tmp/$name.stdout" 2>"$tmp/$name.stderr"; rc=$?
    if [ "$no_gpu" = 1 ]; then
        check_eq "$name needs no GPU: exit 0 without one" "$rc" 0
        check "$name needs no GPU: states a verdict without one" \
            grep -Eq "^$id,$key,,,,verdict,,0,,,,,,(holds|holds-partly|does-not-hold|inconclusive),.+" "$out/$key.csv"
        check_eq "$name leaves nothing in \$TMPDIR" "$(ls -A "$tmp/$name.tmpdir" | wc -l)" 0
    else
        check_eq "$name without a GPU: exit 77" "$rc" 77
    fi
    check_eq "$name without a GPU: nothing on stdout with --out" "$(wc -c < "$tmp/$name.stdout")" 0
    check_eq "$name writes $key.csv with the tidy header" "$(head -1 "$out/$key.csv" 2>/dev/null)" "$header"
    [ "$no_gpu" = 1 ] || check "$name writes a waived verdict row with a reason" \
        grep -Eq "^$id,$key,,,,verdict,,0,,,,,,waived,.+" "$out/$key.csv"
    check_eq "$name leaves no temporary file" "$(ls -A "$out" | grep -c tmp)" 0

    if [ "$has_model" = 1 ]; then
        "$exe" --model-only --quick --out "$out" >/dev/null 2>"$tmp/$name.stderr"; rc=$?
        check_eq "$name --model-only runs without a GPU (exit 0)" "$rc" 0
        check "$name --model-only states a verdict" \
            grep -Eq "^$id,$key,,,,verdict,,0,,,,,,(holds|holds-partly|does-not-hold|inconclusive)," "$out/$key.csv"
        two_models "$name" "$out/$key.csv"
    fi
}

count=0
exes=()
for exe in "$build"/c[0-9][0-9]_*; do
    [ -x "$exe" ] || continue
    exes+=("$exe")
    count=$((count + 1))
done
jobs=${MC_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
for exe in "${exes[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    test_one "$exe" > "$tmp/$(basename "$exe").log" 2>&1 &
done
wait
for exe in "${exes[@]}"; do
    log=$tmp/$(basename "$exe").log
    cat "$log"
    passed=$((passed + $(grep -c '^PASS: ' "$log")))
    failed=$((failed + $(grep -c '^FAIL: ' "$log")))
done
check "found experiments in $build" test "$count" -gt 0
summary
