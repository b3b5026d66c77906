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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header="claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note"

count=0
for exe in "$build"/c[0-9][0-9]_*; do
    [ -x "$exe" ] || continue
    count=$((count + 1))
    name=$(basename "$exe")
    key=${name#c[0-9][0-9]_}
    id=$(printf '%s' "$name" | cut -c1-3 | tr c C)

    help=$("$exe" --help 2>&1); rc=$?
    check_eq "$name --help exits 0" "$rc" 0
    case "$help" in *"$id"*Verdict:*--quick*--model-only*) has_model=1 ;; *) has_model=0 ;; esac
    case "$help" in *"Needs no GPU"*) no_gpu=1 ;; *) no_gpu=0 ;; esac
    case "$help" in *"$id"*Verdict:*--quick*) pass "$name --help names the claim, the verdict rule and the options" ;;
                    *) failure "$name --help names the claim, the verdict rule and the options" ;; esac

    list=$("$exe" --list)
    fields=$(printf '%s' "$list" | awk -F'\t' '{ print NF }')
    check_eq "$name --list prints 6 tab-separated fields" "$fields" 6
    check_eq "$name --list starts with claim and key" "$(printf '%s' "$list" | cut -f1,2)" "$id	$key"

    # The parser itself is unit-tested (test_options); here each program is
    # shown to use it, and to stop before writing anything.
    for bad in "--frobnicate" "--repeats 0" "--warmup x" "--device"; do
        out=$tmp/bad; rm -rf "$out"; mkdir -p "$out"
        # shellcheck disable=SC2086
        err=$("$exe" $bad --out "$out" 2>&1 >/dev/null); rc=$?
        check_eq "$name $bad: exit 2" "$rc" 2
        check_eq "$name $bad: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
        check_eq "$name $bad: nothing written" "$(ls -A "$out" | wc -l)" 0
    done

    out=$tmp/$name; mkdir -p "$out" "$tmp/tmpdir"
    TMPDIR=$tmp/tmpdir "$exe" --quick --out "$out" >"$tmp/stdout" 2>"$tmp/stderr"; rc=$?
    if [ "$no_gpu" = 1 ]; then
        check_eq "$name needs no GPU: exit 0 without one" "$rc" 0
        check "$name needs no GPU: states a verdict without one" \
            grep -Eq "^$id,$key,,,,verdict,,0,,,,,,(holds|holds-partly|does-not-hold|inconclusive),.+" "$out/$key.csv"
        check_eq "$name leaves nothing in \$TMPDIR" "$(ls -A "$tmp/tmpdir" | wc -l)" 0
    else
        check_eq "$name without a GPU: exit 77" "$rc" 77
    fi
    check_eq "$name without a GPU: nothing on stdout with --out" "$(wc -c < "$tmp/stdout")" 0
    check_eq "$name writes $key.csv with the tidy header" "$(head -1 "$out/$key.csv" 2>/dev/null)" "$header"
    [ "$no_gpu" = 1 ] || check "$name writes a waived verdict row with a reason" \
        grep -Eq "^$id,$key,,,,verdict,,0,,,,,,waived,.+" "$out/$key.csv"
    check_eq "$name leaves no temporary file" "$(ls -A "$out" | grep -c tmp)" 0

    if [ "$has_model" = 1 ]; then
        "$exe" --model-only --quick --out "$out" >/dev/null 2>"$tmp/stderr"; rc=$?
        check_eq "$name --model-only runs without a GPU (exit 0)" "$rc" 0
        check "$name --model-only states a verdict" \
            grep -Eq "^$id,$key,,,,verdict,,0,,,,,,(holds|holds-partly|does-not-hold|inconclusive)," "$out/$key.csv"
    fi
done
check "found experiments in $build" test "$count" -gt 0
summary
